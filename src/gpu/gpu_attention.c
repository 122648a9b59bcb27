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
 * (causal self-attention, s_q = s_kv = s: P = s(s+1)/2, about half). Per
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
 * Rate. Attention kernels reach a lower fraction of the clock-scaled peak
 * than GEMMs (softmax between the two matmuls, exponentials, masking):
 *
 *     R_a = P(dt) (f_s / f_q) eta_a          eta_a = attention.fwd/bwd_efficiency
 *
 * data per GPU from published kernel measurements (FlashAttention-2/3/4,
 * HipKittens; sources in configs/gpus/).
 *
 * Tiles. The kernel computes whole B x B tiles of the score matrix (B =
 * attention.block_q, the same for query and key blocks): n_q = ceil(s_q/B)
 * query blocks, n_k = ceil(s_kv/B) key blocks. Without a mask it computes
 * all n_q n_k tiles; with a causal mask, query block i (0-based, queries
 * at the end of the keys, c_0 = ceil((s_kv - s_q)/B)) computes
 *
 *     k_i = clamp(c_0 + i + 1, 0, n_k)  key blocks,   T = sum of k_i
 *
 * so the tiles on the diagonal are computed whole: T B^2 >= P, the waste
 * that makes short causal sequences slower per useful FLOP. A tile costs
 * f = B^2 x the per-pair FLOPs above.
 *
 * Occupancy. One work unit per CU/SM: the row of tiles of one query block
 * (forward) or the column of one key block (backward), of one head:
 *
 *     N = b h_q n_q (forward) or b h_q n_k (backward)      units
 *     L = the most tiles in one unit (n_k / n_q without a mask)
 *
 * Without a mask all units are equal and run in waves; with a causal mask
 * they differ in length and the kernels schedule longest first, so the
 * tail wave packs, but no schedule beats the longest unit. Each wave adds
 * t_0 (gemm_tile_overhead: pipeline fill and epilogue). With R_u = R_a/U:
 *
 *     no mask: t_c = ceil(N/U) (t_0 + L f / R_u)
 *     causal:  t_c = max(max(1, N/U) (t_0 + b h_q T f / (N R_u)),  t_0 + L f / R_u)
 *
 * Without block_q: t_c = F / R_a (no tiles, no occupancy).
 *
 * Memory. Forward reads Q, K, V and writes O (and the FP32 row
 * log-sum-exp); backward reads Q, K, V, O, dO, LSE and writes dQ, dK, dV.
 * K and V are re-read per query block from L2, which this ignores:
 *
 *     t = t_launch + max(t_c, D / B_l),   B_l from the working set D
 *
 * Range: long-enough sequences for the fused kernel (s >= ~128); d up to
 * 256. Decode-style attention (s_q = 1) is memory-bound here, correctly in
 * kind but without the split-KV kernels' details.
 */
#include "gpu_impl.h"

#include <math.h>

#include "../diag.h"

static double visible_pairs(const struct gpu_attn_shape *a)
{
	double sq = a->seq_q, skv = a->seq_kv;

	if (!a->causal)
		return sq * skv;
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

double gpu_attention_flops(const struct gpu_attn_shape *a, int backward)
{
	double d = a->head_dim_qk, dv = a->head_dim_v;
	double per_pair = backward ? 2 * (3 * d + 2 * dv) : 2 * (d + dv);

	check_shape(a);
	return a->batch * a->heads_q * visible_pairs(a) * per_pair;
}

/* Bytes of Q, K, V, O (+ LSE) and, in backward, dO, dQ, dK, dV. */
static double attention_bytes(const struct gpu_attn_shape *a, double b,
			      int backward)
{
	double q = a->heads_q * a->seq_q * a->head_dim_qk * b;
	double o = a->heads_q * a->seq_q * a->head_dim_v * b;
	double kv = a->heads_kv * a->seq_kv * (a->head_dim_qk + a->head_dim_v) * b;
	double lse = a->heads_q * a->seq_q * dtype_bytes(DTYPE_FP32);

	if (backward)
		return a->batch * (2 * q + 2 * o + 2 * kv + lse);
	return a->batch * (q + kv + o + lse);
}

/* Sum over query blocks i < nq of clamp(c0 + i + 1, 0, nk): the tiles a
 * causal kernel computes per head (see the top). */
static double causal_tiles(double nq, double nk, double c0)
{
	double i0 = fmax(0, -c0);			/* first block with a key */
	double i1 = fmax(i0, fmin(nq, nk - c0 - 1));	/* first one seeing all */

	return (i1 - i0) * (c0 + 1) + (i0 + i1 - 1) * (i1 - i0) / 2 +
	       (nq - i1) * nk;
}

/* Compute time with the tile and occupancy model (see the top). */
static double attention_compute_s(const struct gpu_spec *g,
				  const struct gpu_attn_shape *a,
				  double flops, double rate, int backward)
{
	double units = (double)g->compute_units, t0 = g->gemm_tile_overhead_s;
	double b = (double)g->attention.block_q, unit_rate = rate / units;
	double nq, nk, c0, heads, tile, n, longest, tiles;

	if (b <= 0)
		return flops / rate;
	nq = ceil(a->seq_q / b);
	nk = ceil(a->seq_kv / b);
	heads = a->batch * a->heads_q;
	tile = b * b * flops / (heads * visible_pairs(a));
	n = heads * (backward ? nk : nq);
	if (!a->causal)
		return ceil(n / units) * (t0 + (backward ? nq : nk) * tile /
					  unit_rate);
	c0 = ceil((a->seq_kv - a->seq_q) / b);
	tiles = heads * causal_tiles(nq, nk, c0);
	longest = backward ? nq - fmax(0, -c0) : fmin(nk, fmax(0, c0 + nq));
	return fmax(fmax(1, n / units) * (t0 + tiles * tile / n / unit_rate),
		    t0 + longest * tile / unit_rate);
}

static struct gpu_cost attention(const struct gpu_spec *g, enum dtype dt,
				 const struct gpu_attn_shape *a, int backward)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM};
	double eta = backward ? g->attention.bwd_efficiency
			      : g->attention.fwd_efficiency;
	double flops, bytes, rate, comp_s, mem_s;
	enum gpu_level l;

	gpu_require_dtype(g, dt);
	flops = gpu_attention_flops(a, backward);
	if (flops == 0)
		return zero;
	rate = gpu_peak_flops(g, dt) *
	       (g->sustained_matrix_clock_hz / g->matrix_clock_hz) * eta;
	bytes = attention_bytes(a, dtype_bytes(dt), backward);
	l = gpu_serving_level(g, bytes);
	comp_s = attention_compute_s(g, a, flops, rate, backward);
	mem_s = bytes / gpu_level_bandwidth_Bps(g, l);
	return gpu_make_cost(g, flops, bytes, (int)l, fmax(comp_s, mem_s),
			     comp_s, mem_s);
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
