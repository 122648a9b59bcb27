/*
 * gpu_gemm.c - GEMM time from output tiles, waves and the memory
 * hierarchy.
 *
 * A GEMM C[m,n] = A[m,k] B[k,n] (a batch of them) runs as a library
 * kernel that cuts C into output tiles of BM x BN elements, one tile per
 * CU/SM at a time. The tile shapes the library picks from are data
 * (gemm_tile_m, gemm_tile_n); the model costs each and keeps the fastest,
 * as the library's heuristic does.
 *
 * Tiles and waves. U compute units, per-unit rate R_u = R(dt) / U with
 * R(dt) the sustained matrix rate (gpu.c):
 *
 *     T = batch * ceil(m/BM) * ceil(n/BN)                        tiles
 *     floor(T/U) full waves of U tiles, then one of T mod U if nonzero
 *
 * A tile costs the same whether full or padded, and a wave takes as long
 * as its slowest tile: that is how padding (m or n not a multiple of the
 * tile, skinny M or N) and an idle tail wave (T = U + 1 takes two waves)
 * cost efficiency.
 *
 * One wave of a tiles, the units in lock step, k_s the k each tile covers:
 *
 *     t_c = 2 BM BN k_s / R_u                       mainloop MMAs
 *     t_m = D(a) / B_l                              mainloop operand loads
 *     t_e = a BM BN b_epi / B_l                     epilogue stores
 *     t_wave = t_0 + max(t_c, t_m) + t_e
 *
 * The mainloop is a multi-stage pipeline that overlaps loads with MMAs,
 * hence max; the epilogue stores C after the mainloop ends and a
 * non-persistent kernel does not overlap them with the next tile's loads,
 * hence added. t_0 (gemm_tile_overhead) is the pipeline fill latency and
 * the epilogue synchronisation of one wave. t_0 and t_e do not shrink with
 * k, which is why a short K cannot amortise them.
 *
 * Epilogue overlap (gemm_accumulator_stages 2). A persistent kernel whose
 * accumulators have two buffers per SM (Blackwell's CUTLASS sm100 GEMMs:
 * tensor memory holds two 128 x 256 fp32 accumulators; configs/gpus/
 * b200.yaml names the source) runs a tile's epilogue while the MMAs fill
 * the other buffer with the next tile. The epilogue's traffic then shares
 * the memory system with the next mainloop's loads, and only the last
 * wave's epilogue drains after the MMAs end. Nor does such a kernel
 * refill its load pipeline between tiles: CUTLASS's sm100 warp-specialized
 * kernel (include/cutlass/gemm/kernel/sm100_gemm_tma_warpspecialized.hpp
 * @ 7107b055) runs its TMA-load warp over all its tiles in one loop
 * (load_tail only after the last), so the next tile's stages are in
 * flight while this one's MMAs finish, and the MMA warp takes the next
 * free accumulator stage without waiting on the epilogue. No wave pays
 * t_0 (the first fill is t_k's, below):
 *
 *     t_wave = max(t_c, t_m + t_e),  plus t_e of the last wave once
 *
 * (r17's form kept t_0 a wave; r43 checked both on aiconfigurator's B200
 * bf16 grid: results/reference/kernels/README.md, "Round 43 (kern43)".)
 *
 * Operand traffic. The a tiles of a wave form (close to) an r x c block
 * of the output with r BM ~ c BN (grouped rasterization); every A
 * row-panel and B column-panel the block touches is fetched once from the
 * serving level and shared through L2:
 *
 *     c = clamp(round(sqrt(a BM / BN)), 1, ceil(n/BN)),  r = min(ceil(a/c), ceil(m/BM))
 *     D(a) = (r BM + c BN) k_s b_in
 *
 * and a wave that holds whole GEMMs of the batch (a >= tiles per GEMM)
 * reads each one's A and B once. This is the arithmetic-intensity limit:
 * skinny and short GEMMs turn bandwidth-bound through t_m and t_e.
 *
 * Split-K. When the tiles cannot fill the units, libraries split k into s
 * slices (s a power of two with T s <= U), each tile writing an FP32
 * partial (b_epi = 4 B) that a reduction then sums:
 *
 *     k_s = ceil(k / s),  t_red = batch m n (s * 4 + b_out) / B_l   (s > 1)
 *
 * Tile bandwidth (gpu gemm_tile_bandwidth, per compute dtype). Where the
 * library's kernels at a dtype are persistent and run every tile over
 * its whole k (GemmUniversal in kGemm mode with CUTLASS's
 * PersistentScheduler: TensorRT-LLM's and vLLM's sm100 NVFP4 GEMMs;
 * configs/gpus/b200.yaml names the files), k is never split, and a
 * tile's CTA streams its A and B panels no faster than its own loads in
 * flight allow, beta_t. A wave of a tiles then loads at
 *
 *     B_w = min(B_l, a beta_t)
 *
 * so a skinny GEMM (few rows: ceil(n/BN) tiles, fewer than the units)
 * streams its weights at ceil(n/BN) beta_t, not at the memory's rate;
 * t_m of that wave uses B_w (the epilogue's stores, another path, keep
 * B_l). Absent: B_w = B_l and split-K as above.
 *
 * Bytes per element: b_in = dtype_bytes(dt); b_out = b_epi = the same, or
 * 2 (BF16) when dt is narrower than 16 bits. The serving level comes from
 * the working set W = batch (m k b_in + k n b_in + m n b_out) (gpu.c).
 *
 * Mixed operands (gpu_gemm_q, inference): A (activations) and B (weights)
 * may have different element sizes b_a and b_b (a weight-only quantized
 * B is dequantized in the kernel's mainloop and multiplied at the rate of
 * the compute dtype), so D(a) = (r BM b_a + c BN b_b) k_s. A cold B (a
 * weight read once per inference step, long evicted from every cache)
 * makes the kernel's serving level HBM whatever its working set: the
 * capacity rule of gpu.c assumes the operands were just produced, which
 * weights in inference never are.
 *
 *     t = t_launch + t_k + min over tiles and s of (sum of t_wave + t_red)
 *
 * Where the library sums the k slices in a second kernel (gpu
 * gemm_split_k_kernels 2: hipBLASLt's GlobalSplitU with MultipleBuffer
 * accumulation launches the GEMM, then a PostGSU conversion kernel;
 * configs/gpus/ name the source), a split plan costs that second
 * kernel's launch, which the choice of plan weighs (a split that saves
 * less than that launch is not taken); t_red is its traffic. A GEMM
 * marked one_kernel (an
 * engine's own skinny kernel that splits k across the waves of one
 * launch) keeps one launch.
 *
 * t_k (gemm_kernel_overhead) is paid once per kernel: a persistent kernel
 * (Blackwell's CUTLASS/cuBLAS GEMMs: one CTA per SM walks the tile list)
 * sets up once (tensor memory, barriers, tensor maps, the first stages'
 * loads) and drains its last epilogue once; 0 where the wave model's t_0
 * holds it all.
 *
 * Without tile data the model is the plain roofline
 *     t = t_launch + max(2 m n k batch / R, W / B_l).
 *
 * Weight-only kernels (gpu_gemm_q with efficiency e > 0: vLLM's Marlin
 * linear, FP8 or INT4 weights dequantized to bf16 in the mainloop) take
 * that roofline at R = e x the clock-scaled peak, no tiles: Marlin
 * partitions its tiles over the SMs in stripes that may span column
 * slices ("good SM utilization on most matrix shapes", IST-DASLab/marlin
 * README), and above 64 rows runs its 64-row kernel over the rows in
 * turn (the author, IST-DASLab/marlin issue #2), so its rate is flat in
 * m: the GPU's weight_only_linear_efficiency is that rate. A few rows
 * stay memory-bound on the packed weights (W / B_l).
 *
 * Constants: BM, BN, t_0, t_k, t_launch, R and B_l are per-GPU data
 * (configs/gpus/) with their sources there; 4 B is the FP32 accumulator.
 * Range: dense GEMMs with vendor-library kernels. Stream-K kernels balance
 * tails better than this, and Hopper's ping-pong kernels overlap one
 * warpgroup's epilogue with the other's mainloop (not modelled), so
 * short-K GEMMs come out a little slow there. Checked against measured TFLOP/s in
 * results/reference/kernels (llmsim validate --kind kernel).
 */
#include "gpu_impl.h"

#include <math.h>

#include "base/diag.h"

/* Everything a tile plan needs about the GEMM and the GPU. */
struct gemm_problem {
	double m, n, k, batch;		/* elements, count */
	double b_a, b_b, b_out;		/* B per element: A, B, result */
	double bw_Bps;			/* B/s, achievable at the serving level */
	double unit_flops;		/* FLOP/s per CU/SM */
	double units;			/* CUs/SMs */
	double wave_overhead_s;		/* s, t_0 */
	double tile_Bps;		/* B/s, beta_t: one tile's most (0: no
					 * bound, k may be split) */
	int overlap_epilogue;		/* the epilogue overlaps the next
					 * tile's mainloop */
	double split_s;			/* s, a split plan's second kernel's
					 * launch (0: the slices summed in the
					 * GEMM kernel) */
};

/* Time and traffic of one candidate (tile, split). */
struct gemm_plan {
	double time_s;			/* s, GPU body without launch */
	double compute_s;		/* s, sum of mainloop compute */
	double memory_s;		/* s, sum of memory phases */
	double bytes;			/* B moved at the serving level */
	double split;			/* k slices (1: not split) */
	double last_epilogue_s;		/* s, t_e of the last wave added */
	double tiles;			/* tiles (k slices counted); 0 for the
					 * roofline */
};

/* A plan's time as the library weighs it: a split plan with its second
 * kernel's launch. */
static double plan_weight(const struct gemm_problem *p,
			  const struct gemm_plan *pl)
{
	return pl->time_s + (pl->split > 1 ? p->split_s : 0);
}

struct gemm_tile {
	double bm, bn;			/* elements */
	double split;			/* k slices */
};

/* Bytes of `rows` rows of A and `cols` columns of B per unit of k (the
 * single-width form keeps the arithmetic of equal operands exact). */
static double operands_B(const struct gemm_problem *p, double rows,
			 double cols)
{
	if (p->b_a == p->b_b)
		return (rows + cols) * p->b_a;
	return rows * p->b_a + cols * p->b_b;
}

/* Operand bytes one wave of `active` tiles fetches (see the top). */
static double wave_operand_B(const struct gemm_problem *p,
			     const struct gemm_tile *t, double ks,
			     double active)
{
	double gm = ceil(p->m / t->bm), gn = ceil(p->n / t->bn);
	double r, c;

	if (active >= gm * gn)
		return active / (gm * gn) * operands_B(p, p->m, p->n) * ks;
	c = fmin(fmax(round(sqrt(active * t->bm / t->bn)), 1), gn);
	r = fmin(ceil(active / c), gm);
	c = fmin(ceil(active / r), gn);
	return operands_B(p, r * t->bm, c * t->bn) * ks;
}

/* B/s a wave of `active` tiles loads at: the level's bandwidth, or
 * less where each tile streams at most tile_Bps (0: no such bound). */
double gpu_wave_bandwidth_Bps(double level_Bps, double tile_Bps, double active)
{
	return tile_Bps > 0 ? fmin(level_Bps, active * tile_Bps) : level_Bps;
}

/* Add `count` waves of `active` tiles to plan. */
static void add_waves(const struct gemm_problem *p, const struct gemm_tile *t,
		      double count, double active, struct gemm_plan *plan)
{
	double ks = ceil(p->k / t->split);
	double b_epi = t->split > 1 ? dtype_bytes(DTYPE_FP32) : p->b_out;
	double load_B = wave_operand_B(p, t, ks, active);
	double store_B = active * t->bm * t->bn * b_epi;
	double tc = 2 * t->bm * t->bn * ks / p->unit_flops;
	double bw = gpu_wave_bandwidth_Bps(p->bw_Bps, p->tile_Bps, active);
	double tm = load_B / bw, te = store_B / p->bw_Bps;

	if (count <= 0 || active <= 0)
		return;
	if (p->overlap_epilogue)
		plan->time_s += count * fmax(tc, tm + te);
	else
		plan->time_s += count * (p->wave_overhead_s + fmax(tc, tm) + te);
	plan->last_epilogue_s = te;
	plan->compute_s += count * tc;
	plan->memory_s += count * (tm + te);
	plan->bytes += count * (load_B + store_B);
}

static struct gemm_plan plan_tiles(const struct gemm_problem *p,
				   const struct gemm_tile *t)
{
	struct gemm_plan plan = {0, 0, 0, 0, 1, 0, 0};
	double tiles = p->batch * ceil(p->m / t->bm) * ceil(p->n / t->bn) *
		       t->split;
	double full = floor(tiles / p->units);
	double red_B;

	plan.tiles = tiles;

	add_waves(p, t, full, p->units, &plan);
	add_waves(p, t, 1, tiles - full * p->units, &plan);
	if (p->overlap_epilogue)	/* the last epilogue drains alone */
		plan.time_s += plan.last_epilogue_s;
	if (t->split > 1) {
		red_B = p->batch * p->m * p->n *
			(t->split * dtype_bytes(DTYPE_FP32) + p->b_out);
		plan.time_s += red_B / p->bw_Bps;
		plan.memory_s += red_B / p->bw_Bps;
		plan.bytes += red_B;
		plan.split = t->split;
	}
	return plan;
}

/* The fastest split of k for one tile shape (s = 1 always allowed). */
static struct gemm_plan plan_splits(const struct gemm_problem *p, double bm,
				    double bn)
{
	struct gemm_tile t = {bm, bn, 1};
	double tiles = p->batch * ceil(p->m / bm) * ceil(p->n / bn);
	struct gemm_plan best = plan_tiles(p, &t), cand;

	for (t.split = 2; !(p->tile_Bps > 0) &&
	     tiles * t.split <= p->units && t.split <= p->k; t.split *= 2) {
		cand = plan_tiles(p, &t);
		if (plan_weight(p, &cand) < plan_weight(p, &best))
			best = cand;
	}
	return best;
}

static struct gemm_plan plan_roofline(const struct gemm_problem *p,
				      double working_set_B)
{
	struct gemm_plan plan;

	plan.compute_s = 2 * p->m * p->n * p->k * p->batch /
			 (p->unit_flops * p->units);
	plan.memory_s = working_set_B / p->bw_Bps;
	plan.time_s = fmax(plan.compute_s, plan.memory_s);
	plan.bytes = working_set_B;
	plan.split = 1;
	plan.tiles = 0;
	return plan;
}

static double result_bytes(enum dtype dt)
{
	double b = dtype_bytes(dt);

	return b < dtype_bytes(DTYPE_BF16) ? dtype_bytes(DTYPE_BF16) : b;
}

/* The cost of p (sizes and byte widths set) at rate dt on g; cold: the
 * serving level is HBM whatever the working set; one_kernel: a split
 * along k is summed in the kernel whatever the library would do. */
static struct gpu_cost gemm_cost(const struct gpu_spec *g, enum dtype dt,
				 struct gemm_problem *p, int cold, int one_kernel,
				 double eff)
{
	struct gemm_plan best, cand;
	struct gpu_cost c;
	int launches = 1;
	double ws, m = p->m, n = p->n, k = p->k, batch = p->batch;
	enum gpu_level l;
	size_t i;

	ws = batch * (operands_B(p, m, n) * k + m * n * p->b_out);
	l = cold ? GPU_LEVEL_HBM : gpu_serving_level(g, ws);
	p->bw_Bps = gpu_level_bandwidth_Bps(g, l);
	p->units = (double)g->compute_units;
	p->unit_flops = (eff > 0 ? gpu_clock_peak_flops(g, dt) * eff :
				   gpu_sustained_flops(g, dt)) / p->units;
	p->wave_overhead_s = g->gemm_tile_overhead_s;
	p->tile_Bps = g->gemm_tile_Bps[dt];
	p->overlap_epilogue = g->gemm_accumulator_stages >= 2;
	p->split_s = !one_kernel && g->gemm_split_k_kernels > 1 ?
		     (double)(g->gemm_split_k_kernels - 1) *
		     g->kernel_launch_s : 0;
	best = plan_roofline(p, ws);
	for (i = 0; !(eff > 0) && i < g->gemm_tile_m.n; i++) {
		cand = plan_splits(p, (double)g->gemm_tile_m.v[i],
				   (double)g->gemm_tile_n.v[i]);
		if (i == 0 || plan_weight(p, &cand) < plan_weight(p, &best))
			best = cand;
	}
	if (g->gemm_tile_m.n > 0 && !(eff > 0))
		best.time_s += g->gemm_kernel_overhead_s;
	if (best.split > 1 && !one_kernel && g->gemm_split_k_kernels > 1)
		launches = (int)g->gemm_split_k_kernels;
	c = gpu_make_cost(g, 2 * m * n * k * batch, best.bytes, (int)l,
			  launches, best.time_s, best.compute_s, best.memory_s);
	c.tiles_per_unit = best.tiles / p->units;
	return c;
}

/*
 * Persistent GEMMs beside kernels that hold SMs. Every bf16 cuBLAS GEMM on
 * H200 is a persistent nvjet_sm90 kernel, one CTA per SM (grid 128-132
 * of 384 threads, 188-221 KiB of shared memory: none fits on an SM
 * beside a communication kernel's block; results/reference/device/
 * h200-gemm-kernels-grids-2026-12-04.json). Beside a kernel holding k of
 * the U SMs, U - k CTAs start and k wait for an SM to free. If each CTA
 * owns its first c of its n tiles and takes the rest from a shared
 * queue, the running CTAs run their c, then the queue's (n - c) U tiles
 * at U - k wide; once the queue is empty they exit and the k held-back
 * CTAs (k <= U - k) run their c owned tiles:
 *
 *     t / t_alone = [c + (n - c) U/(U-k) + c] / n
 *                 = 1/(1-S) + (c/n) (2 - 1/(1-S)),   S = k/U, c <= n
 *
 * (c >= n: every tile owned, two rounds, 2x). nvjet's scheduler is closed;
 * c = 2 [M] reads the 18 chains of h200-overlap-2026-12-04.jsonl (k 8 and
 * 20, n 1-28) with a median +2.0 %, max |error| 9.3 % (the share law
 * 1/(1-S): -32 % median, 46 % max), and the 36 held-out points of
 * h200-overlap-heldout-2026-12-04.jsonl at k 4-24, taken after the law
 * was written, with a median +1.7 %, max 10.4 % (share law -25 %, 48 %;
 * at k 48 the copy's HBM traffic adds to the rounds: max 18.5 %).
 * h = min(c, n)/n is what this returns.
 * Below one tile a CTA (n < 1) the grid is smaller than the units, every
 * CTA may start beside the held ones: not measured, 0 (the share law).
 */
double gpu_gemm_owned_share(const struct gpu_spec *g, double tiles_per_unit)
{
	double c = g->gemm_persistent_owned_tiles;

	if (!(c > 0) || !(tiles_per_unit >= 1))
		return 0;
	return fmin(c, tiles_per_unit) / tiles_per_unit;
}

static int check_gemm(double m, double n, double k, double batch)
{
	gpu_require_size(m, "GEMM m");
	gpu_require_size(n, "GEMM n");
	gpu_require_size(k, "GEMM k");
	gpu_require_size(batch, "GEMM batch");
	return m == 0 || n == 0 || k == 0 || batch == 0;
}

struct gpu_cost gpu_gemm(const struct gpu_spec *g, enum dtype dt, double m,
			 double n, double k, double batch)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	struct gemm_problem p;

	gpu_require_dtype(g, dt);
	if (check_gemm(m, n, k, batch))
		return zero;
	p.m = m, p.n = n, p.k = k, p.batch = batch;
	p.b_a = p.b_b = dtype_bytes(dt);
	p.b_out = result_bytes(dt);
	return gemm_cost(g, dt, &p, 0, 0, 0);
}

struct gpu_cost gpu_gemm_q(const struct gpu_spec *g,
			   const struct gpu_gemm_dtypes *q, double m,
			   double n, double k, double batch)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	struct gemm_problem p;

	gpu_require_dtype(g, q->compute);
	if (check_gemm(m, n, k, batch))
		return zero;
	if (!(q->a_B > 0) || !(q->b_B > 0) || !(q->c_B > 0))
		BUG("GEMM operand without a byte width");
	if (!(q->efficiency >= 0 && q->efficiency <= 1))
		BUG("GEMM efficiency outside [0, 1]");
	p.m = m, p.n = n, p.k = k, p.batch = batch;
	p.b_a = q->a_B;
	p.b_b = q->b_B;
	p.b_out = q->c_B;
	return gemm_cost(g, q->compute, &p, q->b_cold, q->one_kernel,
			 q->efficiency);
}
