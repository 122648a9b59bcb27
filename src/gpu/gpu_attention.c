/*
 * gpu_attention.c - fused (flash) attention forward and backward.
 *
 * Work. Per sequence and query head the kernel scores every visible
 * (query, key) pair. With s_q queries aligned to the end of s_kv keys,
 * the visible pairs are
 *
 *     P = s_q s_kv                                   no mask
 *     P = s_q (s_kv - s_q) + s_q (s_q + 1) / 2       causal, s_q <= s_kv
 *     P = s_kv (s_kv + 1) / 2                        causal, s_q > s_kv
 *
 * (causal self-attention, s_q = s_kv = s: P = s(s+1)/2, about half). A
 * sliding window of w keys (causal) lets query p (0-based among the keys)
 * see min(p + 1, w) of them:
 *
 *     P = sum over p = s_kv - s_q .. s_kv - 1 of min(p + 1, w)
 *
 * and its tiles start at key block floor((p - w + 1) / B) instead of 0;
 * the window's lower edge is a second masked diagonal (see Tiles).
 * Per
 * pair, with head dims d (Q, K) and d_v (V):
 *
 *     forward   S = Q K^T, O = P V:                  2 (d + d_v)     FLOP
 *     backward  S recomputed, dV = P^T dO, dP = dO V^T,
 *               dQ = dS K, dK = dS^T Q:              2 (3 d + 2 d_v) FLOP
 *
 * so F = b h_q P x that (backward = 2.5 x forward when d = d_v, as in the
 * FlashAttention-2 paper). Elementwise softmax work is not counted, as
 * the papers do not count it; it is inside the efficiency.
 *
 * Rate. An unmasked tile in the kernel's steady-state loop runs at a
 * fraction of the clock-scaled peak (softmax between the two matmuls,
 * exponentials):
 *
 *     R_a = P(dt) (f_s / f_q) eta_a          eta_a = attention.fwd/bwd_efficiency
 *
 * (attention.flash2_fwd/bwd_efficiency when the shape asks for the
 * FlashAttention-2 kernels rather than the vendor's: the same structure,
 * a slower steady-state loop on Hopper; attention.flash_triton_fwd/
 * bwd_efficiency for FlashAttention's pre-MLIR Triton kernel;
 * attention.sdpa_flash_fwd/bwd_efficiency for PyTorch SDPA's vendored
 * FlashAttention-2.)
 *
 * Head dim. eta_a is measured at one head dim d_c (attention.
 * calib_head_dim, d = d_v = d_c). Per score the steady-state loop does
 * the two (forward) or five (backward) matrix products, whose time grows
 * with the head dim, and the softmax, whose exponential does not: one
 * exp per score in either pass (the forward's P = exp(S - m), the
 * backward's recomputed P), issued by the special-function units at
 * x = attention.exp_per_clock per clock per SM (MUFU.EX2: 16 on sm80,
 * sm90 and sm100; doubled on Blackwell Ultra, sm103). Per pair, on the
 * whole GPU at the sustained clock f_s,
 *
 *     t_e = 1 / (x U f_s)             t_c = F_pair(d_c) / R_a
 *
 * and t_c, the measured time per pair at d_c, holds t_e (the kernels
 * overlap the softmax of one tile with the matrix products of the next
 * only as far as the SFU keeps up). Scaling only the rest with the work:
 *
 *     t(d) = (F_pair(d) / F_pair(d_c)) (t_c - t_e) + t_e
 *     R_a(d) = F_pair(d) / t(d) = R_a / ((1 - phi) + phi F_pair(d_c) / F_pair(d))
 *
 * with phi = t_e / t_c. At d_c nothing changes; a head dim of 64 pays
 * phi more per FLOP (forward at d_c = 128: 1 + phi), 192 less. Where the
 * exps alone outlast the calibrated pair (phi > 1: a rate the efficiency
 * puts above what the SFU feeds, e.g. FP8 on Blackwell, whose matrix
 * rate doubles while the SFU's does not), the pair takes t_e:
 *
 *     t(d) = max(t_e, (F_pair(d) / F_pair(d_c)) (t_c - t_e) + t_e)
 * B200 forward: eta 0.646 of 8192 FLOP per clock per SM against 16 exps
 * of 512 FLOP each: phi = 0.646 x 8192 / (16 x 512) = 0.646. Without
 * exp_per_clock, R_a(d) = R_a.
 *
 * Overlapped softmax (attention.softmax_overlap). A kernel whose softmax
 * warps run beside its asynchronous matrix products (sm100's tcgen05 MMAs
 * into tensor memory, issued by one thread while two softmax warpgroups
 * and a correction warp work on the previous tile: cuDNN's open sm100
 * forward, NVIDIA/cudnn-frontend @ 3929da2 include/cudnn_frontend/
 * generated/sdpa/sm100/prefill/full_seqlens/d128_fprop_kernel.h, which
 * also moves a share of the exps to a polynomial on the FMA pipe "to
 * better overlap EX2 MUFU and emulation"; FlashAttention-4, Dao-AILab/
 * flash-attention @ 0251105a flash_attn/cute/flash_fwd_sm100.py) does
 * not add the two: a pair takes the longer,
 *
 *     t(d) = max((F_pair(d) / F_pair(d_c)) t_c, t_e)
 *
 * so at and above d_c (t_c >= t_e) the rate per FLOP is flat in the head
 * dim, and below it the exps bound it. cuDNN 9.22 on GB200 and GB300
 * measures that flatness in bf16 (see configs/gpus/gb200.yaml). The
 * FP8/MXFP8 kernel's softmax also scales and converts P to FP8 each
 * score: attention.lowp_softmax_per_clock x scores per clock per SM, if
 * slower than the exps alone, sets t_e for those dtypes.
 *
 * FP8. The vendor kernel in FP8 (a->fp8: Transformer Engine's
 * fp8_dot_product_attention, cuDNN's FP8 SDPA) runs its matrix products
 * in FP8 (a->mx: MXFP8, block-scaled): its steady-state tile takes
 *
 *     R_a = P(fp8) (f_s / f_q) eta_8         eta_8 = attention.fp8_fwd/bwd_efficiency
 *
 * (attention.mxfp8_* for MXFP8, at the mxfp8 peak: the kernel quantizes
 * P and dS into blocks of 32 with their own scales in the loop), with the
 * head-dim law above unchanged: the exponentials still issue at
 * exp_per_clock, so at d_c they hold a larger share of the FP8 tile
 * (phi = t_e / t_c with the FP8 t_c), and a head dim of 64 gains less
 * from FP8 than one of 192. eta_8 is fitted on the GPU's measured FP8
 * (MXFP8) sets like eta_a on bf16's; a GPU without it runs FP8
 * attention at the bf16 kernel's rates. Bytes stay the bf16 kernel's
 * (the kernels are compute-bound at training lengths).
 *
 * A masked tile's extra time is the mask's work outside the loop's
 * overlap, done by the CUDA cores whatever the matrix dtype: (mu - 1)
 * tau_16, with tau_16 the bf16 kernel's tile at the same head dim, on
 * top of the FP8 tile tau_8 (for bf16 the mu tau above). A backward that
 * computes every causal tile under a sliding window
 * (attention.fp8_bwd_skips_window false) runs the window's mask on each
 * of them: every tile is masked.
 *
 * Narrower V. A kernel with attention.fwd_pads_v (bwd_pads_v for the
 * backward) computes a value head dim d_v < d as d: the pass's work,
 * rate and tiles are those of d_v = d (FlashAttention-3's Hopper backward
 * rounds both to max(d, d_v): hopper/flash_api.cpp mha_bwd), while the
 * FLOPs it reports and the bytes it moves stay the shape's. Only the
 * vendor kernel family (not flash2, flash_triton). A backward padded so
 * does 3 d + 2 d work a pair instead of 3 d + 2 d_v: 960 against 832 at
 * 192 / 128, 0.867 of the rate per reported FLOP. attention.fp8_bwd_keeps_v
 * exempts the FP8/MXFP8 backward (cuDNN 9.22's on GB200 and GB300 runs
 * 192 / 128 faster per FLOP than 128, its bf16 one slower: configs/gpus/
 * gb200.yaml).
 *
 * Tiles. The kernel computes whole B x B tiles of the score matrix (B =
 * attention.block_q, the same for query and key blocks): n_q = ceil(s_q/B)
 * query blocks, n_k = ceil(s_kv/B) key blocks, a tile of time
 * tau = B^2 (per-pair FLOP) / (R_a / U) on one of the U CUs/SMs. With a
 * causal mask (queries at the end of the keys, c_0 = ceil((s_kv - s_q)/B))
 * query block i (0-based) sees k_i = clamp(c_0 + i + 1, 0, n_k) key
 * blocks, and key block j is seen by m_j = n_q - clamp(j - c_0, 0, n_q)
 * query blocks; tiles on the diagonal are computed whole (T B^2 >= P, the
 * waste that makes short causal sequences slower per useful FLOP). The
 * diagonal tile (i, c_0 + i) is masked: masking runs outside the loop's
 * softmax/matmul overlap, and the tile takes mu = attention.
 * masked_tile_cost unmasked tiles. Under a sliding window the tiles the
 * window's lower edge crosses (partly inside the window: the mask test
 * runs on every score, as on the diagonal) are masked the same way; with
 * w = B each query block's two tiles are both masked.
 *
 * Work units. One thread block per unit: the row of tiles of one query
 * block (forward) or the column of one key block (backward), of one
 * head; N = b h_q n_q or b h_q n_k units with work. Before its first
 * tile a unit fills its pipeline (t_0 = gemm_tile_overhead, the GEMM's
 * per-wave fill and epilogue sync, here per unit: each unit is a new
 * block) and loads the block its loop keeps, Q (forward) or K and V
 * (backward), with its CU's share of the serving level's bandwidth; its
 * stores (O and the log-sum-exp, dK and dV) drain under the next unit:
 *
 *     t_u = t_0 + B d e / (B_l / U)                  forward   (e = dtype bytes)
 *     t_u = t_0 + B (d + d_v) e / (B_l / U)          backward
 *     l   = t_u + tau (tiles + (mu - 1) masked tiles)     a unit's time
 *
 * Query blocks a unit (attention.fwd_q_blocks = q, forward, vendor kernel,
 * head dims up to attention.fwd_q_blocks_max_head_dim). cuDNN's sm100
 * forward holds Tiles_Q = 2 query blocks of 128 rows in one thread block
 * (NVIDIA/cudnn-frontend @ 3929da2 include/cudnn_frontend/experimental/
 * sm100_sdpa_prefill_engine.h: ctas_in_q_dim = div_up(S_q, TILE_M *
 * Tiles_Q); the d64 and d128 kernels, generated/sdpa/sm100/prefill/
 * full_seqlens/d64_fprop_kernel.h compute_kv_loop_bounds over ROW_TILE_SIZE
 * = BMM1_TILE_M * Tiles_Q rows, the d256 kernel a 128-row CTA tile). The
 * key-block range is the one the q blocks' rows need together and each
 * query block computes every key block of it (a causal unit's first block
 * also the second's diagonal block, all masked; a 128-key window's rows
 * 256 u .. 256 u + 255 span key blocks 2u - 1 .. 2u + 1: 3 tiles a query
 * block where one block a unit computes 2). A tile is masked where the
 * diagonal or the window's edge crosses it for any of the unit's rows;
 * the unit loads its q Q blocks (t_u = t_0 + q B d e / (B_l / U)).
 *
 * Schedule. The units go to CUs as they free up (list scheduling); the
 * libraries do not publish their order, so it is taken as arbitrary.
 * Without a mask all units are equal and run in lock-step waves:
 *
 *     t_c = ceil(N/U) l
 *
 * With a causal mask they differ (1..n tiles). Up to U units all start
 * at once and t_c = L, the longest. With more, the CUs desynchronize; when
 * the last unit is handed out each CU is part-way through one, and the
 * work left there is the length-biased residual of the unit lengths,
 * rho = E[l^2] / (2 E[l]) on average, while the one that finishes last
 * still runs about L (it holds a longest unit). All CUs are busy until
 * then, so
 *
 *     t_c = max(L, W/U + L - rho)      W = sum of l over the N units
 *
 * between the perfect packing W/U and Graham's bound W/U + L: for
 * lengths 1..n, rho ~ n/3 and the tail is ~2/3 of the longest unit.
 * (Checked against list-scheduling simulations, random order: within
 * 0..+4% from 2 waves on, up to +9% between 1 and 1.5 waves.)
 *
 * Without block_q: t_c = F / R_a (no tiles, units or schedule).
 *
 * Memory. Forward reads Q, K, V and writes O (and the FP32 row
 * log-sum-exp); backward reads Q, K, V, O, dO, LSE and writes dQ, dK, dV
 * (D bytes; K and V re-read per query block from L2 are ignored). The
 * backward is three kernels, as FlashAttention-2/3, cuDNN and Composable
 * Kernel run it: a pre-pass reads O and dO, writes the FP32 row dot
 * product D_i = dO_i . O_i and zeroes the FP32 dQ accumulator the main
 * kernel adds into; a post-pass reads the accumulator and writes dQ:
 *
 *     D_side = b h_q s_q (2 d_v e + 4 + 8 d + d e)  B, at its level's B_l'
 *
 *     forward   t = t_launch + max(t_c, D / B_l)
 *     backward  t = 3 t_launch + D_side / B_l' + max(t_c, D / B_l)
 *
 * Constants: eta_a per pass and mu fitted to measured kernels; t_0, U,
 * B_l, t_launch the GPU's (configs/gpus/, README.md there).
 *
 * Range: long-enough sequences for the fused kernel (s >= ~128); d up to
 * 256. Decode-style attention (s_q = 1) is memory-bound here, correctly in
 * kind but without the split-KV kernels' details. GQA is costed per query
 * head, as the kernels that expand K/V do.
 */
#include "gpu_impl.h"

#include <math.h>

#include "base/diag.h"

/* sum of min(P, w) for P = lo .. hi (1 <= lo <= hi). */
static double window_sum(double lo, double hi, double w)
{
	if (hi <= w)
		return (lo + hi) * (hi - lo + 1) / 2;
	if (lo >= w)
		return (hi - lo + 1) * w;
	return (lo + w) * (w - lo + 1) / 2 + (hi - w) * w;
}

static int windowed(const struct gpu_attn_shape *a)
{
	return a->causal && a->window > 0 && a->seq_q <= a->seq_kv;
}

double gpu_attn_pairs(const struct gpu_attn_shape *a)
{
	double sq = a->seq_q, skv = a->seq_kv;

	if (!a->causal)
		return sq * skv;
	if (windowed(a))
		return window_sum(skv - sq + 1, skv, a->window);
	if (sq <= skv)
		return sq * (skv - sq) + sq * (sq + 1) / 2;
	return skv * (skv + 1) / 2;
}

static void check_shape(const struct gpu_attn_shape *a)
{
	gpu_require_size(a->batch, "attention batch");
	gpu_require_size(a->heads_q, "attention query heads");
	gpu_require_size(a->heads_kv, "attention key/value heads");
	gpu_require_size(a->seq_q, "attention query length");
	gpu_require_size(a->seq_kv, "attention key length");
	gpu_require_size(a->head_dim_qk, "attention head dim");
	gpu_require_size(a->head_dim_v, "attention value head dim");
}

/* FLOP per visible pair (see the top). */
static double pair_work(double d, double dv, int backward)
{
	return backward ? 2 * (3 * d + 2 * dv) : 2 * (d + dv);
}

double gpu_attention_flops(const struct gpu_attn_shape *a, int backward)
{
	check_shape(a);
	return a->batch * a->heads_q * gpu_attn_pairs(a) *
	       pair_work(a->head_dim_qk, a->head_dim_v, backward);
}

/* Bytes of the main kernel: Q, K, V, O (+ LSE) and, in backward, dO, dQ,
 * dK, dV. */
static double attention_bytes(const struct gpu_attn_shape *a, double e,
			      int backward)
{
	double q = a->heads_q * a->seq_q * a->head_dim_qk * e;
	double o = a->heads_q * a->seq_q * a->head_dim_v * e;
	double kv = a->heads_kv * a->seq_kv * (a->head_dim_qk + a->head_dim_v) * e;
	double lse = a->heads_q * a->seq_q * dtype_bytes(DTYPE_FP32);

	if (backward)
		return a->batch * (2 * q + 2 * o + 2 * kv + lse);
	return a->batch * (q + kv + o + lse);
}

/* Bytes of the backward's pre- and post-pass, D_side (see the top). */
static double side_bytes(const struct gpu_attn_shape *a, double e)
{
	double f32 = dtype_bytes(DTYPE_FP32);
	double per_row = 2 * a->head_dim_v * e + f32 +
			 2 * a->head_dim_qk * f32 + a->head_dim_qk * e;

	return a->batch * a->heads_q * a->seq_q * per_row;
}

/* Tiles of unit u (a query block forward, a key block backward) and
 * whether one of them is the masked diagonal tile (see the top). */
static double unit_tiles(const struct gpu_attn_shape *a, double nq,
			 double nk, double c0, double u, int backward,
			 double *masked)
{
	if (!a->causal) {
		*masked = 0;
		return backward ? nq : nk;
	}
	if (backward) {
		*masked = u - c0 >= 0 && u - c0 < nq;
		return nq - fmin(fmax(u - c0, 0), nq);
	}
	*masked = c0 + u >= 0 && c0 + u < nk;
	return fmin(fmax(c0 + u + 1, 0), nk);
}

/* The same under a sliding window (windowed(a)): query block i sees key
 * blocks first_i .. c0 + i, first_i = floor((s_kv - s_q + i b - w + 1)/b);
 * key block j is seen by the query blocks with first_i <= j <= c0 + i.
 * The window's lower edge is a second diagonal: row p of query block i
 * sees keys from e(p) = off + p - w + 1, so over the block's b rows the
 * edge runs from e_0 = off + i b - w + 1 to e_0 + b - 1, and every key
 * block j it crosses (j b < e_0 + b - 1, (j + 1) b > e_0: some keys
 * masked for some rows, some visible) is a masked tile like the causal
 * diagonal (FlashAttention-2's flash_fwd_kernel.h runs apply_mask on
 * every key block when Is_local, and masking steps ceil(B_m/B_n) + 1 at
 * the diagonal). *masked counts the unit's masked tiles, each once. */
static double window_tiles(const struct gpu_attn_shape *a, double b,
			   double nq, double nk, double c0, double u,
			   int backward, double *masked)
{
	double off = a->seq_kv - a->seq_q, w = a->window, lo, hi, e_lo, e_hi;
	double diag;

	if (backward) {
		lo = fmax(u - c0, 0);
		hi = fmin(ceil(((u + 1) * b + w - 1 - off) / b) - 1, nq - 1);
		/* query blocks i whose edge crosses key block u:
		 * (u - 1) b + w - off < i b < (u + 1) b + w - 1 - off */
		e_lo = fmax(floor(((u - 1) * b + w - off) / b) + 1, lo);
		e_hi = fmin(ceil(((u + 1) * b + w - 1 - off) / b) - 1, hi);
		diag = u - c0;		/* the query block on the diagonal */
	} else {
		lo = fmax(floor((off + u * b - w + 1) / b), 0);
		hi = fmin(c0 + u, nk - 1);
		e_lo = lo;		/* first_i holds the edge's first key */
		e_hi = fmin(ceil((off + u * b + b - w) / b) - 1, hi);
		diag = c0 + u;		/* the key block on the diagonal */
	}
	*masked = fmax(e_hi - e_lo + 1, 0);
	if (diag >= lo && diag <= hi && !(diag >= e_lo && diag <= e_hi))
		*masked += 1;
	return fmax(hi - lo + 1, 0);
}

/* The lengths of one head's units: unit_s fixed, tile_s per tile, a
 * masked tile (mu - 1) mask_tile_s more; all_masked: every tile masked
 * (see the top, "FP8"). */
static struct gpu_units units(const struct gpu_spec *g,
			      const struct gpu_attn_shape *a, double b,
			      double unit_s, double tile_s, double mask_tile_s,
			      int backward, int all_masked)
{
	double nq = ceil(a->seq_q / b), nk = ceil(a->seq_kv / b);
	double c0 = ceil((a->seq_kv - a->seq_q) / b), u, tiles, l;
	double mu = a->kernel == GPU_ATTN_CK_TILE && backward ?
		g->attention.ck_tile_bwd_masked_tile_cost :
		g->attention.masked_tile_cost;
	struct gpu_units r = {0, 0, 0, 0};
	double masked;

	if (!(mu >= 1))
		BUG("attention masked tile cost below 1 (the schema's minimum)");
	for (u = 0; u < (backward ? nk : nq); u++) {
		tiles = windowed(a) ?
			window_tiles(a, b, nq, nk, c0, u, backward, &masked) :
			unit_tiles(a, nq, nk, c0, u, backward, &masked);
		if (tiles <= 0)
			continue;
		if (all_masked)
			masked = tiles;
		l = unit_s + tile_s * tiles + mask_tile_s * masked * (mu - 1);
		r.n++;
		r.sum_s += l;
		r.sum2_s2 += l * l;
		r.longest_s = fmax(r.longest_s, l);
	}
	return r;
}

/* Count of the integers in [lo1, hi1] and [lo2, hi2] that lie in [lo, hi]. */
static double union_count(double lo1, double hi1, double lo2, double hi2,
			  double lo, double hi)
{
	double n1, n2, both;

	lo1 = fmax(lo1, lo);
	hi1 = fmin(hi1, hi);
	lo2 = fmax(lo2, lo);
	hi2 = fmin(hi2, hi);
	n1 = fmax(hi1 - lo1 + 1, 0);
	n2 = fmax(hi2 - lo2 + 1, 0);
	both = fmax(fmin(hi1, hi2) - fmax(lo1, lo2) + 1, 0);
	return n1 + n2 - (n1 > 0 && n2 > 0 ? both : 0);
}

/* Forward units of q query blocks each (attention.fwd_q_blocks; see the
 * top, "Work units"): unit u holds query blocks u q .. u q + n - 1
 * (n <= q at the end), rows r_0 .. r_1 in key coordinates; its key-block
 * range is the one those rows need together, and every query block of it
 * computes every key block of the range. Masked are the key blocks that
 * the diagonal (keys r_0 .. r_1) or the window's lower edge (keys r_0 -
 * w + 1 .. r_1 - w + 1, as window_tiles) crosses, in each query block. */
static struct gpu_units group_units(const struct gpu_spec *g,
				    const struct gpu_attn_shape *a, double b,
				    double q, double unit_s, double keep_s,
				    double tile_s, double mask_tile_s)
{
	double nq = ceil(a->seq_q / b), nk = ceil(a->seq_kv / b);
	double off = a->seq_kv - a->seq_q, w = a->window;
	double mu = g->attention.masked_tile_cost, u, n, r0, r1, lo, hi;
	double masked, l;
	struct gpu_units r = {0, 0, 0, 0};

	for (u = 0; u * q < nq; u++) {
		n = fmin(q, nq - u * q);
		r0 = off + u * q * b;
		r1 = off + (u * q + n) * b - 1;
		lo = 0;
		hi = nk - 1;
		masked = 0;
		if (a->causal) {
			hi = fmin(floor(r1 / b), nk - 1);
			if (windowed(a))
				lo = fmax(floor((r0 - w + 1) / b), 0);
			masked = windowed(a) ?
				union_count(floor(r0 / b), floor(r1 / b),
					    floor((r0 - w + 1) / b),
					    ceil((r1 - w + 1) / b) - 1, lo, hi) :
				union_count(floor(r0 / b), floor(r1 / b), 1, 0,
					    lo, hi);
		}
		if (hi < lo)
			continue;
		l = unit_s + keep_s * n + tile_s * n * (hi - lo + 1) +
		    mask_tile_s * n * masked * (mu - 1);
		r.n++;
		r.sum_s += l;
		r.sum2_s2 += l * l;
		r.longest_s = fmax(r.longest_s, l);
	}
	return r;
}

struct gpu_units gpu_attn_units(const struct gpu_spec *g,
				 const struct gpu_attn_shape *a, double b,
				 double unit_s, double tile_s, int backward)
{
	return units(g, a, b, unit_s, tile_s, tile_s, backward, 0);
}

/* Query blocks a forward unit of the vendor kernel holds for shape a:
 * attention.fwd_q_blocks, 1 above fwd_q_blocks_max_head_dim. */
static double fwd_q_blocks(const struct gpu_spec *g,
			   const struct gpu_attn_shape *a)
{
	if (g->attention.fwd_q_blocks_max_head_dim > 0 &&
	    a->head_dim_qk > g->attention.fwd_q_blocks_max_head_dim)
		return 1;
	return (double)g->attention.fwd_q_blocks;
}

struct gpu_units gpu_attn_fwd_units(const struct gpu_spec *g,
				    const struct gpu_attn_shape *a, double b,
				    double unit_s, double keep_s,
				    double tile_s)
{
	double q = fwd_q_blocks(g, a);

	if (q > 1)
		return group_units(g, a, b, q, unit_s, keep_s, tile_s,
				   tile_s);
	return units(g, a, b, unit_s + keep_s, tile_s, tile_s, 0, 0);
}

double gpu_attn_schedule_s(const struct gpu_units *u, double heads,
			   double cus, int causal)
{
	double n = heads * u->n, rho;

	if (u->n == 0)
		return 0;
	if (!causal)
		return ceil(n / cus) * u->longest_s;
	if (n <= cus)
		return u->longest_s;
	rho = u->sum2_s2 / (2 * u->sum_s);
	return fmax(u->longest_s,
		    heads * u->sum_s / cus + u->longest_s - rho);
}

double gpu_attn_rate(const struct gpu_spec *g, enum dtype dt, double eta,
		     double d_qk, double d_v, int backward)
{
	const struct gpu_attention_spec *s = &g->attention;
	double rate = gpu_clock_peak_flops(g, dt) * eta, dc, t_e, t_c, phi;

	if (!(s->exp_per_clock > 0) || !(rate > 0))
		return rate;
	if (s->calib_head_dim < 1)
		BUG("attention.calib_head_dim below 1 (the schema's minimum)");
	dc = (double)s->calib_head_dim;
	t_e = 1 / (s->exp_per_clock * (double)g->compute_units *
		   g->sustained_matrix_clock_hz);
	t_c = pair_work(dc, dc, backward) / rate;
	if (s->softmax_overlap && s->lowp_softmax_per_clock > 0 &&
	    (dt == DTYPE_FP8 || dt == DTYPE_MXFP8))
		t_e = fmax(t_e, 1 / (s->lowp_softmax_per_clock *
				     (double)g->compute_units *
				     g->sustained_matrix_clock_hz));
	if (s->softmax_overlap) {	/* the longer of the two (see the top) */
		double w = pair_work(d_qk, d_v, backward);

		return w / fmax(t_c * w / pair_work(dc, dc, backward), t_e);
	}
	phi = t_e / t_c;
	return rate / ((1 - fmin(phi, 1)) + phi * pair_work(dc, dc, backward) /
		       pair_work(d_qk, d_v, backward));
}

/* Compute time with the tile, unit and schedule model (see the top);
 * bw_Bps is the serving level's bandwidth; rate the tiles', mask_rate
 * the bf16 kernel's whose tile sets a masked tile's extra time;
 * all_masked: every tile masked. */
static double attention_compute_s(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a,
				  double flops, double rate, double mask_rate,
				  double bw_Bps, int backward, int all_masked)
{
	double cus = (double)g->compute_units;
	double b = (double)g->attention.block_q, heads, tile_F, kept_B, q;
	struct gpu_units u;

	if (b <= 0)
		return flops / rate;
	heads = a->batch * a->heads_q;
	tile_F = b * b * flops / (heads * gpu_attn_pairs(a));
	kept_B = b * (a->head_dim_qk + (backward ? a->head_dim_v : 0)) *
		 dtype_bytes(dt);
	q = fwd_q_blocks(g, a);
	if (!backward && q > 1 && a->kernel == GPU_ATTN_VENDOR && !all_masked)
		u = group_units(g, a, b, q, g->gemm_tile_overhead_s,
				kept_B / (bw_Bps / cus), tile_F / (rate / cus),
				tile_F / (mask_rate / cus));
	else
		u = units(g, a, b,
			  g->gemm_tile_overhead_s + kept_B / (bw_Bps / cus),
			  tile_F / (rate / cus), tile_F / (mask_rate / cus),
			  backward, all_masked);
	return gpu_attn_schedule_s(&u, heads, cus, a->causal);
}

/* The backward's pre- and post-pass: their bytes' time, without their
 * two launches (gpu_make_cost adds those). */
static double side_s(const struct gpu_spec *g, const struct gpu_attn_shape *a,
		     double e, double *bytes)
{
	double sb = side_bytes(a, e);

	*bytes += sb;
	return sb / gpu_level_bandwidth_Bps(g, gpu_serving_level(g, sb));
}

/* The steady-state efficiency of the kernel family's unmasked tiles. */
static double kernel_efficiency(const struct gpu_attention_spec *s,
				int kernel, int backward)
{
	switch (kernel) {
	case GPU_ATTN_FLASH2:
		return backward ? s->flash2_bwd_efficiency
				: s->flash2_fwd_efficiency;
	case GPU_ATTN_FLASH_TRITON:
		return backward ? s->flash_triton_bwd_efficiency
				: s->flash_triton_fwd_efficiency;
	case GPU_ATTN_CK_TILE:
		return backward ? s->ck_tile_bwd_efficiency
				: s->ck_tile_fwd_efficiency;
	case GPU_ATTN_SDPA_FLASH:
		return backward ? s->sdpa_flash_bwd_efficiency
				: s->sdpa_flash_fwd_efficiency;
	default:
		return backward ? s->bwd_efficiency : s->fwd_efficiency;
	}
}

/* The efficiency and matrix dtype of a vendor kernel in FP8 or MXFP8
 * (see the top, "FP8"): 0 when the GPU gives none (the bf16 kernel's
 * rates). */
static double lowp_efficiency(const struct gpu_attention_spec *s,
			      const struct gpu_attn_shape *a, int backward,
			      enum dtype *kdt)
{
	double eta;

	if (!a->fp8 || a->kernel != GPU_ATTN_VENDOR)
		return 0;
	if (a->mx)
		eta = backward ? s->mxfp8_bwd_efficiency :
				 s->mxfp8_fwd_efficiency;
	else
		eta = backward ? s->fp8_bwd_efficiency : s->fp8_fwd_efficiency;
	*kdt = a->mx ? DTYPE_MXFP8 : DTYPE_FP8;
	return eta;
}

/* The shape the kernel computes: with the pass's pads_v a value head dim
 * narrower than the query/key one runs at the latter (see the top). */
static struct gpu_attn_shape computed_shape(const struct gpu_spec *g,
					    const struct gpu_attn_shape *a,
					    int backward)
{
	const struct gpu_attention_spec *s = &g->attention;
	struct gpu_attn_shape w = *a;
	enum dtype kdt;
	int lowp = lowp_efficiency(s, a, backward, &kdt) > 0;	/* FP8 kernel */
	int pads = backward ? s->bwd_pads_v && !(lowp && s->fp8_bwd_keeps_v)
			    : s->fwd_pads_v;

	if (pads && a->kernel == GPU_ATTN_VENDOR &&
	    a->head_dim_v < a->head_dim_qk)
		w.head_dim_v = a->head_dim_qk;
	return w;
}

static struct gpu_cost attention(const struct gpu_spec *g, enum dtype dt,
				 const struct gpu_attn_shape *in, int backward)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	const struct gpu_attention_spec *s = &g->attention;
	double eta = kernel_efficiency(s, in->kernel, backward), eta8;
	double flops, bytes, rate, rate16, bw, comp_s, mem_s, body_s;
	struct gpu_attn_shape pad;
	const struct gpu_attn_shape *a = &pad;
	enum dtype kdt = dt;	/* the matrix products' dtype */
	enum gpu_level l;

	gpu_require_dtype(g, dt);
	if (gpu_attention_flops(in, backward) == 0)
		return zero;
	pad = computed_shape(g, in, backward);
	flops = gpu_attention_flops(a, backward);
	rate16 = gpu_attn_rate(g, dt, eta, a->head_dim_qk, a->head_dim_v,
			       backward);
	eta8 = lowp_efficiency(s, a, backward, &kdt);
	if (eta8 > 0) {
		gpu_require_dtype(g, kdt);
		rate = gpu_attn_rate(g, kdt, eta8, a->head_dim_qk,
				     a->head_dim_v, backward);
	} else {
		rate = rate16;
	}
	bytes = attention_bytes(in, dtype_bytes(dt), backward);
	l = gpu_serving_level(g, bytes);
	bw = gpu_level_bandwidth_Bps(g, l);
	if (backward && a->fp8 && windowed(a) && !s->fp8_bwd_skips_window) {
		/* every causal tile, each under the window's mask; the
		 * window's pairs still the work */
		struct gpu_attn_shape full = *a;

		full.window = 0;
		comp_s = attention_compute_s(g, dt, &full,
					     gpu_attention_flops(&full, 1),
					     rate, rate16, bw, 1, 1);
	} else {
		comp_s = attention_compute_s(g, dt, a, flops, rate, rate16, bw,
					     backward, 0);
	}
	mem_s = bytes / bw;
	body_s = fmax(comp_s, mem_s);
	if (backward)
		body_s += side_s(g, in, dtype_bytes(dt), &bytes);
	return gpu_make_cost(g, gpu_attention_flops(in, backward), bytes,
			     (int)l, backward ? 3 : 1, body_s, comp_s, mem_s);
}

struct gpu_cost gpu_attention_fwd(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a)
{
	return attention(g, dt, a, 0);
}

struct gpu_cost gpu_attention_bwd(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a)
{
	return attention(g, dt, a, 1);
}
