/*
 * gpu_grouped.c - a grouped GEMM: many independent GEMMs of different
 * sizes in one kernel (the MoE experts: CUTLASS grouped GEMM, TE
 * GroupedLinear, DeepGEMM), costed with the tile and wave model of
 * gpu_gemm.c applied to all groups at once.
 *
 * Group e is C_e[m_e, n_e] = A_e[m_e, k_e] B_e[k_e, n_e]. The kernel cuts
 * every group into BM x BN output tiles of one shape (the library picks
 * it for the whole launch) and hands them to the U compute units as one
 * list, so a small group does not get a wave of its own:
 *
 *     T = sum_e ceil(m_e/BM) ceil(n_e/BN)                       tiles
 *     floor(T/U) full waves and one of T mod U tiles
 *
 * A tile of group e runs its whole k_e (no split-K in grouped kernels);
 * a wave lasts as long as its longest tile. With equal k (the forward and
 * dgrad GEMMs of the experts, k = h or f) every tile costs
 *
 *     t_c = 2 BM BN k / R_u                  R_u = R(dt) / U
 *
 * and for the weight-gradient GEMMs, where k_e is the expert's token
 * count, the tiles are ordered by group and a wave's k is the mean k of
 * the tiles it holds, except the last wave, which waits for its longest.
 *
 * Operand traffic. Every group's A and B are read once from the serving
 * level (its tiles share them through L2, as gpu_gemm.c's grouped
 * rasterization), D = sum_e (m_e k_e + k_e n_e) b_in, spread over the
 * waves in proportion to their tiles; each tile stores BM BN b_out:
 *
 *     t_m = D a / (T B_l)    t_e = a BM BN b_out / B_l
 *     t_wave = t_0 + max(t_c, t_m) + t_e                (a tiles in it)
 *
 * or, where the epilogue overlaps the next tile's mainloop and the load
 * pipeline streams across tiles (gpu gemm_accumulator_stages 2,
 * gpu_gemm.c), max(t_c, t_m + t_e), no t_0, and the last wave's t_e
 * once.
 *
 * This is where many small experts lose against one big GEMM: each
 * expert's padding to BM rows (a tile costs the same full or not), a
 * partial last wave, and weights k n that every expert must read however
 * few tokens it has (memory-bound when m_e is small). Groups with no rows
 * cost nothing (their weights are not read).
 *
 *     t = t_launch + t_k + min over tile shapes of the sum of t_wave
 *
 * with t_k once per launch (gpu_gemm.c, gemm_kernel_overhead). A caller
 * whose kernel offers only tiles of at least min_tile_m rows
 * (gpu_gemm_dtypes; TensorRT-LLM's CUTLASS fused MoE: the GPU's
 * cutlass_moe_tile_m) picks from those, so an expert with a few rows
 * pays such a tile, not a smaller one.
 *
 * Mixed operands (gpu_grouped_gemm_q, inference): A in b_a and the
 * experts' weights in b_b bytes per element (block scales included; a
 * weight-only quantized B is dequantized in the mainloop), D = sum_e (m_e
 * k_e b_a + k_e n_e b_b); cold weights are served by HBM whatever the
 * working set, as gpu_gemm_q's.
 *
 * Per-expert kernels (gpu_grouped_kernels_s; Transformer Engine's
 * multi-stream cuBLAS path, one GEMM kernel per expert round-robin on S
 * streams): the same pooled tiles and waves, the kernels' tiles sharing
 * the SMs as the streams' kernels do, plus what L kernels cost beyond
 * one: the longest stream's chain of ceil(L / S) launches, each waiting
 * behind the one running, and every kernel's set-up and drain (t_k, paid
 * one after another: a persistent GEMM holds a CTA on every SM until its
 * tiles are done, so another stream's kernel reaches an SM only after
 * it; cuBLAS launches as many CTAs as SMs, pytorch/pytorch issue
 * #143988):
 *
 *     t_L = t + (ceil(L / S) - 1) t_launch + (L - 1) t_k
 *
 * That pooling holds where the streams' kernels overlap; a stream's own
 * kernels do not: each starts when the one before it has ended, and runs
 * its own tiles, waves and split of k on a GPU it does not fill (an
 * expert of 32 rows is 6-12 tiles on 132 SMs). So no stream finishes
 * before its own chain of whole kernels, each costed as the dense GEMM it
 * is (gpu_gemm_q, its launch included), at the serving level of the
 * chain's whole working set (the experts' weights that the chain reads
 * once each; the ones before evicted them where they exceed L2):
 *
 *     t_L = max(t + (ceil(L / S) - 1) t_launch + (L - 1) t_k,
 *               ceil(L / S) / L sum_e t_gemm(m_e, n_e, k_e))
 *
 * (gpu_grouped_chain_s: the longest stream's kernels, the experts' mean
 * times ceil(L / S)). On one stream (S = 1) the chain binds: measured on
 * an H200 inside CUDA graphs at Qwen3-30B-A3B's expert shapes, L kernels
 * on one stream take L times one kernel alone within -10..+20 %
 * (results/reference/kernels/llmsim-h200-2026-12-04-graph-experts-
 * loop1.yaml: fc1, 16 experts of 32 rows, 98.7 us against 16 x 5.8 us),
 * where the pooled tiles say 49 us. How much 4 streams' kernels overlap
 * is not modelled beyond the pooled bound: measured, 4 streams take
 * 0.48-1.04 of one stream's time (the loop4 rows there).
 *
 * Checked against TE's published H100 figures at Qwen3-30B-A3B's
 * shapes (results/reference/kernels/te-pr2045-h100-grouped-gemm-bf16.yaml).
 *
 * Constants as gpu_gemm.c (configs/gpus/: tiles, t_0, launch, R, B_l).
 * Without tile data: the roofline t = t_launch + max(F / R, W / B_l).
 * Range: grouped GEMMs with equal n within a launch (MoE experts).
 */
#include "gpu_impl.h"

#include <math.h>

#include "base/diag.h"

/* What one tile shape needs to know about the problem and the GPU. */
struct grouped {
	const struct gpu_gemm_group *g;
	size_t n;			/* groups */
	double b_in, b_out;		/* B per element */
	double bw_Bps;			/* B/s at the serving level */
	double unit_flops;		/* FLOP/s per CU/SM */
	double units;			/* CUs/SMs */
	double per_unit;		/* tiles a unit holds at once (>= 1) */
	double tile_Bps;		/* B/s, one tile's most loads (0: none) */
	double wave_overhead_s;		/* s, t_0 */
	double operand_B;		/* B, D */
	int overlap_epilogue;		/* see gpu_gemm.c */
};

/* Tiles of group e for a BM x BN tile. */
static double group_tiles(const struct gpu_gemm_group *e, double bm,
			  double bn)
{
	if (e->m <= 0 || e->n <= 0 || e->k <= 0)
		return 0;
	return ceil(e->m / bm) * ceil(e->n / bn);
}

/* One wave of a tiles whose k averages k_s: the tiles a unit holds at
 * once share its math (ceil(a / units) of them on the busiest unit). */
static double wave_s(const struct grouped *p, double bm, double bn,
		     double a, double k_s, double tiles)
{
	double tc = ceil(a / p->units) * 2 * bm * bn * k_s / p->unit_flops;
	double tm = p->operand_B * a / tiles /
		    gpu_wave_bandwidth_Bps(p->bw_Bps, p->tile_Bps, a);
	double te = a * bm * bn * p->b_out / p->bw_Bps;

	if (p->overlap_epilogue)
		return fmax(tc, tm + te);
	return p->wave_overhead_s + fmax(tc, tm) + te;
}

/* The epilogue of the last wave's a tiles, draining after the MMAs end
 * where the epilogues overlap (0 otherwise: inside wave_s). */
static double drain_s(const struct grouped *p, double bm, double bn,
		      double a)
{
	if (!p->overlap_epilogue)
		return 0;
	return a * bm * bn * p->b_out / p->bw_Bps;
}

/* The waves of one tile shape: tiles in group order, a wave's k the
 * mean of its tiles' (the last wave's the largest it holds). */
static double plan_shape(const struct grouped *p, double bm, double bn)
{
	double tiles = 0, total = 0, in_wave = 0, k_sum = 0, k_max = 0;
	double last = 0;		/* tiles in the last wave */
	double cap = p->units * p->per_unit;	/* tiles a wave holds */
	size_t i;

	for (i = 0; i < p->n; i++)
		tiles += group_tiles(&p->g[i], bm, bn);
	if (tiles == 0)
		return 0;
	for (i = 0; i < p->n; i++) {
		double left = group_tiles(&p->g[i], bm, bn);

		while (left > 0) {
			double take = fmin(left, cap - in_wave);

			in_wave += take;
			left -= take;
			k_sum += take * p->g[i].k;
			k_max = fmax(k_max, p->g[i].k);
			if (in_wave == cap) {
				total += wave_s(p, bm, bn, in_wave,
						k_sum / in_wave, tiles);
				last = in_wave;
				in_wave = k_sum = k_max = 0;
			}
		}
	}
	if (in_wave > 0) {
		total += wave_s(p, bm, bn, in_wave, k_max, tiles);
		last = in_wave;
	}
	return total + drain_s(p, bm, bn, last);
}

static double result_bytes(enum dtype dt)
{
	double b = dtype_bytes(dt);

	return b < dtype_bytes(DTYPE_BF16) ? dtype_bytes(DTYPE_BF16) : b;
}

/* A weight-only kernel (eff > 0) also offers its own tiles, q->tile_m
 * rows by q->tile_n columns (engine weight_only_moe_tile_m / _n: vLLM's
 * fused Marlin MoE picks block_size_m by the rows an expert gets). A
 * kernel that picks one by rule (q->tile_cover) runs only the tile that
 * covers the mean rows a group gets: the first listed at or above them,
 * the last when none is. triton_kernels' matmul_ogs (opt_flags.py
 * make_default_opt_flags_nvidia) sets block_m = max(16,
 * min(next_power_of_2(tokens_per_expt), 128)) from the expected rows an
 * expert gets, m // n_expts_tot, without timing the others. The rows the
 * rule counts are q->cover_rows times the mean a group gets (m counts
 * routing entries the kernel skips where a caller prunes them in place:
 * infer_moe.c wo_kernel). */
static double cover_tile_m(const struct gpu_gemm_dtypes *q,
			   const struct gpu_gemm_group *groups,
			   size_t ngroups)
{
	double rows = 0;
	size_t i;

	for (i = 0; i < ngroups; i++)
		rows += groups[i].m;
	rows /= (double)ngroups;
	if (q->cover_rows > 0)
		rows *= q->cover_rows;
	for (i = 0; i + 1 < q->ntile_m; i++)
		if ((double)q->tile_m[i] >= rows)
			break;
	return (double)q->tile_m[i];
}

/* A kernel that picks its tile by rule (q->tile_cover: triton_kernels'
 * matmul_ogs) launches its worst-case grid, not the tiles the groups
 * fill: routing_data.n_blocks(M, block_m) row blocks, M itself where
 * M <= E, else ceil((M - E + 1) / block_m) + E - 1, for M routed rows
 * over E experts (M the rows the rule counts: q->cover_rows x the
 * groups' rows), each across ceil(n / block_n) column blocks; a block
 * past its expert's rows finds -1 in block_pid_map and exits (matmul_ogs
 * .py, routing.py; on Hopper with MXFP4 weights the non-persistent
 * kernel runs, "hopper w/ mxfp4 doesn't support TMA", so every block is
 * launched). vLLM's Triton fused_moe launches the same bound:
 * cdiv(EM, BLOCK_SIZE_M) row blocks, EM = M + E (BLOCK_SIZE_M - 1) from
 * moe_align_block_size, capped at M x BLOCK_SIZE_M when M < E, a block
 * at or past num_tokens_post_padded returning at once (fused_moe.py
 * fused_moe_kernel; vllm-project/vllm @ 645d18fa). The empty blocks take
 * the GPU's per-wave overhead, a wave of units x resident blocks: their
 * time. */
static double empty_blocks_s(const struct grouped *p,
			     const struct gpu_gemm_dtypes *q, double bm,
			     double bn)
{
	double rows = 0, real = 0, e = (double)p->n, m, launched, empty;
	size_t i;

	for (i = 0; i < p->n; i++) {
		rows += p->g[i].m;
		real += ceil(p->g[i].m / bm);
	}
	m = rows * (q->cover_rows > 0 ? q->cover_rows : 1);
	launched = m <= e ? ceil(m) : ceil((m - e + 1) / bm) + e - 1;
	empty = fmax(0, launched - real) * ceil(p->g[0].n / bn);
	return ceil(empty / (p->units * p->per_unit)) * p->wave_overhead_s;
}

/* The grouped GEMM at compute dtype dt with operand widths a_B (A), b_B
 * (B, the experts' weights) and out_B; cold: B streams from HBM (see
 * gpu_gemm_q); eff > 0: the kernel's efficiency at dt (a weight-only
 * kernel's), else the GPU's GEMM efficiency. */
static struct gpu_cost grouped_cost(const struct gpu_spec *g, enum dtype dt,
				    double a_B, double b_B, double out_B_el,
				    int cold, double min_tile_m, double eff,
				    const struct gpu_gemm_dtypes *q,
				    const struct gpu_gemm_group *groups,
				    size_t ngroups)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	struct grouped p = {groups, ngroups, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
	double flops = 0, out_B = 0, best = -1, ws, comp_s, mem_s, cover;
	double best_tiles = 0;	/* the kept shape's tiles (persistent
				 * kernels beside held SMs: gpu_gemm.c) */
	struct gpu_cost c;
	enum gpu_level l;
	size_t i;

	gpu_require_dtype(g, dt);
	p.b_in = a_B;
	p.b_out = out_B_el;
	for (i = 0; i < ngroups; i++) {
		const struct gpu_gemm_group *e = &groups[i];

		gpu_require_size(e->m, "grouped GEMM m");
		gpu_require_size(e->n, "grouped GEMM n");
		gpu_require_size(e->k, "grouped GEMM k");
		if (e->m == 0 || e->n == 0 || e->k == 0)
			continue;
		flops += 2 * e->m * e->n * e->k;
		p.operand_B += e->m * e->k * a_B + e->k * e->n * b_B;
		out_B += e->m * e->n * p.b_out;
	}
	if (flops == 0)
		return zero;
	ws = p.operand_B + out_B;
	l = cold ? GPU_LEVEL_HBM : gpu_serving_level(g, ws);
	p.bw_Bps = gpu_level_bandwidth_Bps(g, l);
	p.units = (double)g->compute_units;
	p.per_unit = q && q->resident > 1 ? floor(q->resident) : 1;
	p.tile_Bps = q && q->tile_Bps > 0 ? q->tile_Bps : 0;
	p.unit_flops = (eff > 0 ? gpu_clock_peak_flops(g, dt) * eff :
				  gpu_sustained_flops(g, dt)) / p.units;
	p.wave_overhead_s = g->gemm_tile_overhead_s;
	p.overlap_epilogue = g->gemm_accumulator_stages >= 2;
	comp_s = flops / (p.unit_flops * p.units);
	mem_s = ws / p.bw_Bps;
	cover = eff > 0 && q && q->tile_cover && q->ntile_m > 0 ?
		cover_tile_m(q, groups, ngroups) : 0;
	for (i = 0; i < g->gemm_tile_m.n + (eff > 0 && q ? q->ntile_m : 0);
	     i++) {
		double t, bm, bn;

		if (cover > 0 && (i < g->gemm_tile_m.n ||
				  (double)q->tile_m[i - g->gemm_tile_m.n] !=
				  cover))
			continue;	/* the rule's tile alone */
		if (i < g->gemm_tile_m.n) {
			bm = (double)g->gemm_tile_m.v[i];
			bn = (double)g->gemm_tile_n.v[i];
		} else {
			if (g->gemm_tile_m.n == 0)
				break;	/* no tile data: the roofline */
			bm = (double)q->tile_m[i - g->gemm_tile_m.n];
			bn = q->tile_n;
		}
		if (bm < min_tile_m)
			continue;
		t = plan_shape(&p, bm, bn);
		if (best < 0 || t < best) {
			size_t e;

			best = t;
			best_tiles = 0;
			for (e = 0; e < ngroups; e++)
				best_tiles += group_tiles(&groups[e], bm, bn);
		}
	}
	if (best < 0)	/* no tile data: the roofline */
		best = fmax(comp_s, mem_s);
	else
		best += g->gemm_kernel_overhead_s +
			(cover > 0 ? empty_blocks_s(&p, q, cover, q->tile_n)
				   : 0);
	c = gpu_make_cost(g, flops, ws, (int)l, 1, best, comp_s, mem_s);
	c.tiles_per_unit = best_tiles / p.units;
	return c;
}

struct gpu_cost gpu_grouped_gemm(const struct gpu_spec *g, enum dtype dt,
				 const struct gpu_gemm_group *groups,
				 size_t ngroups)
{
	return grouped_cost(g, dt, dtype_bytes(dt), dtype_bytes(dt),
			    result_bytes(dt), 0, 0, 0, NULL, groups, ngroups);
}

struct gpu_cost gpu_grouped_gemm_q(const struct gpu_spec *g,
				   const struct gpu_gemm_dtypes *q,
				   const struct gpu_gemm_group *groups,
				   size_t ngroups)
{
	if (!(q->a_B > 0) || !(q->b_B > 0) || !(q->c_B > 0))
		BUG("grouped GEMM operand without a byte width");
	if (!(q->efficiency >= 0 && q->efficiency <= 1))
		BUG("grouped GEMM efficiency outside [0, 1]");
	return grouped_cost(g, q->compute, q->a_B, q->b_B, q->c_B, q->b_cold,
			    q->min_tile_m, q->efficiency, q, groups, ngroups);
}

double gpu_grouped_kernels_s(const struct gpu_spec *g, double kernels,
			     double chain)
{
	gpu_require_size(kernels, "grouped GEMM kernels");
	gpu_require_size(chain, "grouped GEMM stream chain");
	return fmax(chain - 1, 0) * g->kernel_launch_s +
	       fmax(kernels - 1, 0) * g->gemm_kernel_overhead_s;
}

double gpu_grouped_chain_s(const struct gpu_spec *g,
			   const struct gpu_gemm_dtypes *q,
			   const struct gpu_gemm_group *groups,
			   size_t ngroups, double chain)
{
	struct gpu_gemm_dtypes one = *q;
	double ws = 0, sum = 0, kernels = 0;
	size_t i;

	gpu_require_size(chain, "grouped GEMM stream chain");
	for (i = 0; i < ngroups; i++) {
		const struct gpu_gemm_group *e = &groups[i];

		if (e->m > 0 && e->n > 0 && e->k > 0)
			ws += e->m * e->k * q->a_B + e->k * e->n * q->b_B +
			      e->m * e->n * q->c_B;
	}
	if (ws == 0)
		return 0;
	/* the chain's working set decides the level each kernel reads at */
	if (gpu_serving_level(g, ws) == GPU_LEVEL_HBM)
		one.b_cold = 1;
	for (i = 0; i < ngroups; i++) {
		const struct gpu_gemm_group *e = &groups[i];

		if (!(e->m > 0 && e->n > 0 && e->k > 0))
			continue;	/* no rows: no kernel */
		sum += gpu_gemm_q(g, &one, e->m, e->n, e->k, 1).time_s;
		kernels++;
	}
	return sum * fmin(fmax(chain, 1), kernels) / kernels;
}
