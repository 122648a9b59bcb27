/*
 * mamba.c - the Mamba-2 mixer of a hybrid model's 'M' layer on one GPU
 * (Nemotron-H, Nemotron 3), forward and backward, as Megatron-Core runs
 * it in training: ssm/mamba_mixer.py MambaMixer with use_mem_eff_path
 * (NVIDIA/Megatron-LM@d98e8a64), whose _ssm_training calls mamba_ssm's
 * mamba_split_conv1d_scan_combined (state-spaces/mamba@e9594ce1
 * mamba_ssm/ops/triton/ssd_combined.py MambaSplitConv1dScanCombinedFn).
 *
 * Notation (layer.c's, plus): H SSM heads, P channels per head, N state
 * size, G groups of B and C, K conv taps, Q chunk, t the TP degree (heads
 * and groups are split over it: MambaMixer asserts nheads % tp == 0 and
 * ngroups % tp == 0). Local: H' = H/t, G' = G/t, d_inner' = H' P, the
 * conv channels c = d_inner' + 2 G' N, the in-projection's outputs
 * w = 2 d_inner' + 2 G' N + H' ([z, x, B, C, dt]). T = b s tokens, nc =
 * b ceil(s/Q) chunks of Q tokens (s the tokens of a sequence on this
 * GPU; a sequence shorter than Q is one chunk of s).
 *
 * Forward:
 *   in_proj   GEMM  m = T, n = w, k = h (TE LayerNormColumnParallelLinear:
 *                   the layer's norm runs inside its call; SP all-gather)
 *   [b > 1]   rearrange(l b d -> b l d).contiguous(): read/write T w B
 *   conv1d    memory  causal_conv1d_fwd over [x, B, C]: read T c B,
 *                   write T c B, 2 K T c FLOPs (SiLU fused)
 *   SSD (_mamba_chunk_scan_combined_fwd):
 *     cumsum        memory  dt softplus and dA cumsum: read T H' B,
 *                           write 2 T H' fp32
 *     chunk_state   batched GEMM (m = P, n = N, k = Q) x nc H': each
 *                   chunk's final state B^T (decay dt x)
 *     state_passing memory  the recurrence over chunks: read and write
 *                           nc H' P N fp32
 *     bmm_chunk     batched GEMM (m = Q, n = Q, k = N) x nc G': C B^T
 *     chunk_scan    batched GEMM (m = Q, n = P, k = Q + N) x nc H': the
 *                   intra-chunk (C B^T masked) x plus the inter-chunk C
 *                   states in one accumulator; z's gate y silu(z) fused,
 *                   reading z and writing y and the gated output (a
 *                   memory op beside it: read T d_inner' B, write T
 *                   d_inner' B)
 *   [b > 1]   rearrange(b l d -> l b d).contiguous(): read/write T d_inner' B
 *   norm      memory  the grouped RMSNorm (ExtendedRMSNorm over
 *                   d_inner'/G' channels): read and write T d_inner' B
 *   out_proj  GEMM  m = T, n = h, k = d_inner', its TP all-reduce
 *                   (reduce-scatter with SP)
 *
 * FLOPs of the scan, forward: 2 T H' P N (states) + 2 T Q G' N (C B^T)
 * + 2 T H' P (Q + N) (outputs) = 4 T H' P N + 2 T Q G' N + 2 T Q H' P,
 * the SSD cost of Dao and Gu 2024 (arXiv 2405.21060 sec. 6) with the
 * intra-chunk matrices computed whole (the kernels' tiles cover the
 * causal block triangle; counted whole as an upper bound).
 *
 * Backward (MambaSplitConv1dScanCombinedFn.backward, then
 * _mamba_chunk_scan_combined_bwd): the out_proj and norm backward, the
 * conv1d forward recomputed, the scan's forward recomputed up to its
 * states (cumsum, bmm_chunk, chunk_state, state_passing), then
 * _chunk_scan_bwd_dz (memory: read z, y, dout; write dz, dout'),
 * _chunk_scan_bwd_dstates (P, N, Q) x nc H', _state_passing_bwd (memory,
 * fp32 states), _chunk_scan_chunk_state_bwd_dx (Q, P, Q + N) x nc H',
 * _chunk_state_bwd_db and _chunk_scan_bwd_dC (Q, N, P) x nc H' each,
 * _chunk_scan_bwd_dcb (Q, Q, P) x nc H', two _bmm_chunk_bwd (Q, N, Q) x
 * nc G', _chunk_scan_bwd_ddAcs_stable (Q, Q, P) x nc H', _chunk_cumsum_
 * bwd (memory), causal_conv1d_bwd (memory: read x and dout, write dx;
 * 4 K T c FLOPs), then the in_proj backward and the norm's. The scan's
 * backward is 10 T H' P N + 6 T Q H' P + 6 T Q G' N FLOPs with the
 * recomputation, about 2.5 times its forward.
 *
 * The scan's kernels are Triton kernels launched from Python (host: one
 * op each). They run on the GPU model's 16-bit GEMM path at their batched
 * chunk shapes [?: Triton's tiles with fp32 accumulation, no measured
 * efficiency of their own].
 */
#include "layer_impl.h"

#include <math.h>

/* Local widths of the mixer on one GPU. */
struct mw {
	double H, P, N, G, K, Q;	/* H' and G' local */
	double di, c, w;		/* d_inner', conv channels, in_proj out */
	double T, nc;			/* tokens, chunks */
};

static struct mw widths(const struct layer_dims *d)
{
	const struct mamba_dims *m = &d->mamba;
	struct mw x;

	x.H = m->heads / d->tp;
	x.G = m->groups / d->tp;
	x.P = m->head_dim;
	x.N = m->state;
	x.K = m->conv;
	x.Q = m->chunk < d->seq ? m->chunk : d->seq;
	x.di = x.H * x.P;
	x.c = x.di + 2 * x.G * x.N;
	x.w = 2 * x.di + 2 * x.G * x.N + x.H;
	x.T = layer_tokens(d);
	x.nc = d->batch * ceil(d->seq / x.Q);
	return x;
}

/* A batched chunk GEMM of the scan (16-bit operands), a Python-launched
 * Triton kernel. */
static void chunk_gemm(struct layer_ops *o, const char *name,
		       enum layer_pass pass, double m, double n, double k,
		       double batch)
{
	struct layer_op *op = lop_gemm(o, name, pass, m, n, k, 0);

	op->k.batch = batch;
	op->host = HOST_OP;
}

static void conv_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d, const struct mw *x)
{
	double n = x->T * x->c;

	lop_memop(o, "mamba_conv1d", pass, n * d->act_B, n * d->act_B,
		  2 * x->K * n);
}

/* The scan's forward up to the chunk states (recomputed in backward). */
static void scan_states(struct layer_ops *o, enum layer_pass pass,
			const struct layer_dims *d, const struct mw *x)
{
	double S = x->nc * x->H * x->P * x->N * 4;	/* fp32 states */

	lop_memop(o, "ssd_cumsum", pass, x->T * x->H * d->act_B,
		  2 * x->T * x->H * 4, 4 * x->T * x->H);
	chunk_gemm(o, "ssd_bmm_chunk", pass, x->Q, x->Q, x->N, x->nc * x->G);
	chunk_gemm(o, "ssd_chunk_state", pass, x->P, x->N, x->Q,
		   x->nc * x->H);
	lop_memop(o, "ssd_state_passing", pass, S, S, x->nc * x->H * x->P *
		  x->N);
}

/* A [b, l] <-> [l, b] contiguous copy of n elements a token (b > 1). */
static void transpose(struct layer_ops *o, const char *name,
		      enum layer_pass pass, const struct layer_dims *d,
		      double n)
{
	if (d->batch > 1)
		lop_memop(o, name, pass, n * d->act_B, n * d->act_B, 0);
}

void mamba_fwd(struct layer_ops *o, enum layer_pass pass,
	       const struct layer_dims *d)
{
	struct mw x = widths(d);
	double B = d->act_B;
	int16_t cast = (int16_t)o->n;

	lop_column_fwd(o, "in_proj_cast", "in_proj_allgather", "in_proj",
		       pass, d, x.w, d->hidden, d->lowp);
	lop_cast_after_norm(o, cast, d);
	lop_norm_linear(o, cast);
	transpose(o, "mamba_in_copy", pass, d, x.w);
	conv_fwd(o, pass, d, &x);
	scan_states(o, pass, d, &x);
	chunk_gemm(o, "ssd_chunk_scan", pass, x.Q, x.P, x.Q + x.N,
		   x.nc * x.H);
	lop_memop(o, "ssd_gate", pass, x.T * x.di * B, x.T * x.di * B,
		  ACT_FLOPS * x.T * x.di);
	transpose(o, "mamba_out_copy", pass, d, x.di);
	lop_memop(o, "mamba_norm", pass, x.T * x.di * B, x.T * x.di * B,
		  NORM_FLOPS * x.T * x.di)->host = HOST_MODULE;
	lop_row_fwd(o, "out_proj_cast", "out_proj", "mamba_tp_reduce", pass,
		    d, x.di);
}

void mamba_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	struct mw x = widths(d);
	double B = d->act_B, n = x.T * x.di;
	double S = x.nc * x.H * x.P * x.N * 4;
	int16_t red;

	lop_row_bwd(o, "out_proj_grad_allgather", "out_proj_grad_cast",
		    "out_proj_dgrad", "out_proj_wgrad", d, x.di);
	lop_memop(o, "mamba_norm_bwd", PASS_BWD, 2 * n * B, n * B,
		  NORM_FLOPS * n)->host = HOST_MODULE;
	transpose(o, "mamba_out_copy_bwd", PASS_BWD, d, x.di);
	/* MambaSplitConv1dScanCombinedFn.backward: the conv and the scan's
	 * states again */
	conv_fwd(o, PASS_BWD, d, &x);
	scan_states(o, PASS_BWD, d, &x);
	lop_memop(o, "ssd_bwd_dz", PASS_BWD, 3 * n * B, 2 * n * B,
		  ACT_FLOPS * n);
	chunk_gemm(o, "ssd_bwd_dstates", PASS_BWD, x.P, x.N, x.Q,
		   x.nc * x.H);
	lop_memop(o, "ssd_state_passing_bwd", PASS_BWD, 2 * S, 2 * S,
		  2 * x.nc * x.H * x.P * x.N);
	chunk_gemm(o, "ssd_bwd_dx", PASS_BWD, x.Q, x.P, x.Q + x.N,
		   x.nc * x.H);
	chunk_gemm(o, "ssd_bwd_db", PASS_BWD, x.Q, x.N, x.P, x.nc * x.H);
	chunk_gemm(o, "ssd_bwd_dc", PASS_BWD, x.Q, x.N, x.P, x.nc * x.H);
	chunk_gemm(o, "ssd_bwd_dcb", PASS_BWD, x.Q, x.Q, x.P, x.nc * x.H);
	chunk_gemm(o, "ssd_bmm_chunk_bwd_b", PASS_BWD, x.Q, x.N, x.Q,
		   x.nc * x.G);
	chunk_gemm(o, "ssd_bmm_chunk_bwd_c", PASS_BWD, x.Q, x.N, x.Q,
		   x.nc * x.G);
	chunk_gemm(o, "ssd_bwd_ddacs", PASS_BWD, x.Q, x.Q, x.P, x.nc * x.H);
	lop_memop(o, "ssd_cumsum_bwd", PASS_BWD, 3 * x.T * x.H * 4,
		  x.T * x.H * B, 4 * x.T * x.H);
	lop_memop(o, "mamba_conv1d_bwd", PASS_BWD, 2 * x.T * x.c * B,
		  x.T * x.c * B, 4 * x.K * x.T * x.c);
	transpose(o, "mamba_in_copy_bwd", PASS_BWD, d, x.w);
	red = lop_column_bwd(o, "in_proj_input_allgather", "in_proj_grad_cast",
			     "in_proj_dgrad", "in_proj_grad_tp_reduce",
			     "in_proj_wgrad", d, x.w, d->hidden, d->lowp);
	lop_norm_bwd_after(o, "norm1_bwd", d, red);
}

/* in_proj h w_full, out_proj d_inner h, conv1d (d_inner + 2 G N) K
 * weights and as many biases, A_log, D and dt_bias (H each), the gated
 * norm's d_inner weights (MambaMixer's parameters). */
double mamba_params(const struct layer_dims *d)
{
	const struct mamba_dims *m = &d->mamba;
	double di = m->heads * m->head_dim, c = di + 2 * m->groups * m->state;
	double w = 2 * di + 2 * m->groups * m->state + m->heads;

	return d->hidden * w + di * d->hidden + c * (m->conv + 1) +
	       3 * m->heads + di;
}
