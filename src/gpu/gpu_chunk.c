/*
 * gpu_chunk.c - the chunked linear-recurrence kernels: Mamba-2's SSD
 * (state-spaces/mamba mamba_ssm/ops/triton/ssd_*.py) and flash-linear-
 * attention's chunk_* ops (fla/ops/gated_delta_rule, simple_gla,
 * retention), Triton kernels that cut a sequence into chunks of C tokens
 * and run, per (chunk, head), small matrix products of C x C and C x d
 * tiles (d the head and state widths, 64-256), with cumulative sums,
 * exponentials of the decays and fp32 states between them; the state
 * kernels walk the chunks of a sequence in order.
 *
 * Such a kernel is costed as `batch` products C[m, n] = A[m, k] B[k, n]
 * (the per-chunk shape its work is written in, models/mamba.c and gdn.c),
 * with F = 2 m n k batch FLOPs, operands of in_B and results of out_B
 * bytes a element (fp32 states, decays and score blocks are 4 B):
 *
 *     W = batch ((m k + k n) in_B + m n out_B)                     [B]
 *     t = t_launch + max(F / R_c, W / B_l)
 *     R_c = P(bf16) (f_s / f_q) eta_c                          [FLOP/s]
 *
 * with eta_c the GPU's chunk_fwd_efficiency or chunk_bwd_efficiency:
 * what the kernels were measured to reach, in these FLOPs, at large
 * shapes (configs/gpus/: flash-linear-attention's published benchmark
 * tables, chunk_gdn on GB200 and chunk_retention on H100 and A100, the
 * FLOPs of their per-chunk products over the measured times). Those are
 * a few percent (Blackwell) to a quarter (Hopper forward) of the matrix
 * peak, far below a GEMM of the same FLOPs: per (chunk, head) the tiles
 * are small (64-row MMAs from Triton), each chunk's work goes through
 * exponentials and masks on the vector units between its products, and
 * the state kernels are serial over the chunks of a sequence, so only
 * batch x heads x (d / block) CTAs run at once. Not modelled: how the
 * rate falls with fewer (sequence, head) pairs than the measured shapes
 * had (96-256 pairs: flash-linear-attention's GB200 table shows 0.8 of
 * the rate at 32 pairs), nor the chunk size (64 in the measurements;
 * Megatron's Mamba-2 runs 128).
 *
 * A GPU without eta_c (no measurement for it) runs the products on the
 * GEMM path (gpu_gemm at their shape: tiles, waves; what llmsim did
 * before this class), an upper bound on the kernels' rate.
 */
#include "gpu_impl.h"

#include <math.h>

struct gpu_cost gpu_chunk_gemm(const struct gpu_spec *g, enum dtype dt,
			       const struct gpu_chunk_shape *s)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM, 0};
	double eta = s->backward ? g->chunk_bwd_efficiency
				 : g->chunk_fwd_efficiency;
	double flops, bytes, comp_s, mem_s, rate;
	enum gpu_level l;

	gpu_require_dtype(g, dt);
	gpu_require_size(s->m, "chunk kernel m");
	gpu_require_size(s->n, "chunk kernel n");
	gpu_require_size(s->k, "chunk kernel k");
	gpu_require_size(s->batch, "chunk kernel batch");
	gpu_require_size(s->in_B, "chunk kernel operand bytes");
	gpu_require_size(s->out_B, "chunk kernel result bytes");
	if (s->m == 0 || s->n == 0 || s->k == 0 || s->batch == 0)
		return zero;
	if (!(eta > 0))
		return gpu_gemm(g, dt, s->m, s->n, s->k, s->batch);
	flops = 2 * s->m * s->n * s->k * s->batch;
	bytes = s->batch * ((s->m * s->k + s->k * s->n) * s->in_B +
			    s->m * s->n * s->out_B);
	rate = gpu_clock_peak_flops(g, dt) * eta;
	l = gpu_serving_level(g, bytes);
	comp_s = flops / rate;
	mem_s = bytes / gpu_level_bandwidth_Bps(g, l);
	return gpu_make_cost(g, flops, bytes, (int)l, 1, fmax(comp_s, mem_s),
			     comp_s, mem_s);
}
