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
 * op each), timed as chunked linear-recurrence kernels (src/gpu/
 * gpu_chunk.c) at the rate flash-linear-attention's published benchmarks
 * measured for its equivalent kernels (the GPU's chunk_fwd_efficiency
 * and chunk_bwd_efficiency: chunk_retention, SSD's algorithm, on H100 and
 * A100; chunk_gdn on GB200) [?: mamba_ssm's own kernels are not in those
 * tables; fla-org/flash-linear-attention pull 50 measured them forward at
 * about twice chunk_simple_gla's time at B16 H8 D128, chunk 64, GPU not
 * stated: not applied]. Their bytes count mamba_ssm's fp32 chunk states,
 * C B^T and the gradients it accumulates in fp32 at 4 B.
 *
 * Context parallelism (cp > 1): Megatron-Core's MambaContextParallel
 * (NVIDIA/Megatron-LM@00caa53a megatron/core/ssm/mamba_context_parallel
 * .py) all-to-alls z, x, B, C and dt after in_proj ([s/cp, b, n] -> [s, b,
 * n/cp]; B and C repeated r = cp / G' times first where G' < cp), undoes
 * the attention's load balancing, runs the conv and the scan on the whole
 * sequence for H'/cp heads and max(1, G'/cp) groups, and all-to-alls y
 * back before the norm (cp_pre, cp_post). The layout check asserts what
 * it asserts (spec_job_layout.c).
 */
#include "layer_impl.h"

#include <math.h>

/* Local widths of the mixer on one GPU. */
struct mw {
	double H, P, N, G, K, Q;	/* H' and G' local (of the scan) */
	double di, c, w;		/* d_inner', conv channels, in_proj out
					 * (of the scan) */
	double T, nc;			/* the scan's tokens, chunks */
	/* context parallelism (cp > 1: mamba_context_parallel.py) */
	double cp, r;			/* degree, B/C group repeat */
	double t, H_tp, G_tp, di_tp, w_tp;	/* tokens, heads, groups,
						 * d_inner and in_proj width
						 * on a TP rank before the
						 * all-to-alls */
};

/* With cp > 1 (Megatron-Core MambaContextParallel, NVIDIA/Megatron-LM@
 * 00caa53a megatron/core/ssm/mamba_context_parallel.py) the all-to-alls
 * give each rank the whole sequence (s = cp x seq) for H'/cp heads and
 * G'/cp groups, or, where G' < cp, one group repeated r = cp / G' times
 * over the ranks that share it. */
static struct mw widths(const struct layer_dims *d)
{
	const struct mamba_dims *m = &d->mamba;
	double cp = d->cpd.cp > 1 ? d->cpd.cp : 1, s = d->seq * cp;
	struct mw x;

	x.cp = cp;
	x.H_tp = m->heads / d->tp;
	x.G_tp = m->groups / d->tp;
	x.H = x.H_tp / cp;
	x.r = x.G_tp >= cp ? 1 : cp / x.G_tp;
	x.G = x.G_tp >= cp ? x.G_tp / cp : 1;
	x.P = m->head_dim;
	x.N = m->state;
	x.K = m->conv;
	x.Q = m->chunk < s ? m->chunk : s;
	x.di = x.H * x.P;
	x.c = x.di + 2 * x.G * x.N;
	x.w = 2 * x.di + 2 * x.G * x.N + x.H;
	x.t = layer_tokens(d);
	x.T = x.t * cp;
	x.nc = d->batch * ceil(s / x.Q);
	x.di_tp = x.H_tp * x.P;
	x.w_tp = 2 * x.di_tp + 2 * x.G_tp * x.N + x.H_tp;
	return x;
}

/* pre_conv_ssm (cp > 1): z, x, B (repeated r times), C and dt each
 * all-to-all'd over the CP group ([s/cp, b, n] -> [s, b, n/cp]), the five
 * concatenated, and the attention's load balancing undone (an index
 * copy); backward the mirror: the split is views, the repeat's gradient
 * a sum over its copies. */
static void cp_pre(struct layer_ops *o, enum layer_pass pass, int bwd,
		   const struct layer_dims *d, const struct mw *x)
{
	double B = d->act_B, t = x->t, bc = t * x->G_tp * x->r * x->N * B;
	double all = t * (2 * x->di_tp + 2 * x->G_tp * x->r * x->N +
			  x->H_tp) * B;
	enum coll_op a2a = COLL_ALLTOALL;

	if (x->cp <= 1)
		return;
	if (bwd && d->cpd.load_balance)
		lop_memop(o, "mamba_cp_undo_lb_bwd", pass, all, all, 0);
	lop_coll(o, bwd ? "mamba_cp_dz_a2a" : "mamba_cp_z_a2a", pass, LG_CP,
		 LS_CP, a2a, t * x->di_tp * B);
	lop_coll(o, bwd ? "mamba_cp_dx_a2a" : "mamba_cp_x_a2a", pass, LG_CP,
		 LS_CP, a2a, t * x->di_tp * B);
	if (x->r > 1 && !bwd)
		lop_memop(o, "mamba_cp_bc_repeat", pass, 2 * bc / x->r, 2 * bc,
			  0);
	lop_coll(o, bwd ? "mamba_cp_db_a2a" : "mamba_cp_b_a2a", pass, LG_CP,
		 LS_CP, a2a, bc);
	lop_coll(o, bwd ? "mamba_cp_dc_a2a" : "mamba_cp_c_a2a", pass, LG_CP,
		 LS_CP, a2a, bc);
	lop_coll(o, bwd ? "mamba_cp_ddt_a2a" : "mamba_cp_dt_a2a", pass, LG_CP,
		 LS_CP, a2a, t * x->H_tp * B);
	if (x->r > 1 && bwd)
		lop_memop(o, "mamba_cp_bc_repeat_bwd", pass, 2 * bc,
			  2 * bc / x->r, 2 * bc);
	if (!bwd) {
		lop_memop(o, "mamba_cp_cat", pass, all, all, 0);
		if (d->cpd.load_balance)
			lop_memop(o, "mamba_cp_undo_lb", pass, all, all, 0);
	}
}

/* post_conv_ssm (cp > 1): the load balancing redone (an index copy) and
 * y all-to-all'd back ([s, b, d_inner'/cp] -> [s/cp, b, d_inner']);
 * backward the reverse. */
static void cp_post(struct layer_ops *o, enum layer_pass pass, int bwd,
		    const struct layer_dims *d, const struct mw *x)
{
	double y = x->t * x->di_tp * d->act_B;

	if (x->cp <= 1)
		return;
	if (!bwd && d->cpd.load_balance)
		lop_memop(o, "mamba_cp_redo_lb", pass, y, y, 0);
	lop_coll(o, bwd ? "mamba_cp_dy_a2a" : "mamba_cp_y_a2a", pass, LG_CP,
		 LS_CP, COLL_ALLTOALL, y);
	if (bwd && d->cpd.load_balance)
		lop_memop(o, "mamba_cp_redo_lb_bwd", pass, y, y, 0);
}

/* One of the scan's Triton kernels, a Python launch: `batch` products of
 * (m, n, k) over 16-bit operands, results of out_B bytes an element (4:
 * mamba_ssm's fp32 chunk states, C B^T and gradients), a backward kernel
 * when bwd (gpu_chunk.c: the chunk kernels' measured rate). */
static void chunk_gemm(struct layer_ops *o, const char *name,
		       enum layer_pass pass, const struct layer_dims *d,
		       double m, double n, double k, double batch,
		       double out_B, int bwd)
{
	lop_chunk(o, name, pass, m, n, k, batch, d->act_B, out_B,
		  bwd)->host = HOST_OP;
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
	chunk_gemm(o, "ssd_bmm_chunk", pass, d, x->Q, x->Q, x->N,
		   x->nc * x->G, 4, 0);
	chunk_gemm(o, "ssd_chunk_state", pass, d, x->P, x->N, x->Q,
		   x->nc * x->H, 4, 0);
	lop_memop(o, "ssd_state_passing", pass, S, S, x->nc * x->H * x->P *
		  x->N);
}

/* A [b, l] <-> [l, b] contiguous copy of n elements a token of the
 * scan's T tokens (b > 1). */
static void transpose(struct layer_ops *o, const char *name,
		      enum layer_pass pass, const struct layer_dims *d,
		      const struct mw *x, double n)
{
	if (d->batch > 1)
		lop_memop(o, name, pass, x->T * n * d->act_B,
			  x->T * n * d->act_B, 0);
}

void mamba_fwd(struct layer_ops *o, enum layer_pass pass,
	       const struct layer_dims *d)
{
	struct mw x = widths(d);
	double B = d->act_B;
	int16_t cast = (int16_t)o->n;

	lop_column_fwd(o, "in_proj_cast", "in_proj_allgather", "in_proj",
		       pass, d, x.w_tp, d->hidden, d->lowp);
	lop_cast_after_norm(o, cast, d);
	lop_norm_linear(o, cast);
	cp_pre(o, pass, 0, d, &x);
	transpose(o, "mamba_in_copy", pass, d, &x, x.w);
	conv_fwd(o, pass, d, &x);
	scan_states(o, pass, d, &x);
	chunk_gemm(o, "ssd_chunk_scan", pass, d, x.Q, x.P, x.Q + x.N,
		   x.nc * x.H, B, 0);
	lop_memop(o, "ssd_gate", pass, x.T * x.di * B, x.T * x.di * B,
		  ACT_FLOPS * x.T * x.di);
	transpose(o, "mamba_out_copy", pass, d, &x, x.di);
	cp_post(o, pass, 0, d, &x);
	lop_memop(o, "mamba_norm", pass, x.t * x.di_tp * B,
		  x.t * x.di_tp * B, NORM_FLOPS * x.t * x.di_tp)->host =
		HOST_MODULE;
	lop_row_fwd(o, "out_proj_cast", "out_proj", "mamba_tp_reduce", pass,
		    d, x.di_tp);
}

void mamba_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	struct mw x = widths(d);
	double B = d->act_B, n = x.T * x.di, n_tp = x.t * x.di_tp;
	double S = x.nc * x.H * x.P * x.N * 4;
	int16_t red;

	lop_row_bwd(o, "out_proj_grad_allgather", "out_proj_grad_cast",
		    "out_proj_dgrad", "out_proj_wgrad", d, x.di_tp);
	lop_memop(o, "mamba_norm_bwd", PASS_BWD, 2 * n_tp * B, n_tp * B,
		  NORM_FLOPS * n_tp)->host = HOST_MODULE;
	/* its gated norm's weight (RMSNorm: one tensor whatever m->norm) */
	lop_param_grad_add(o, d, "norm_grad_add", x.di_tp, 1);
	cp_post(o, PASS_BWD, 1, d, &x);
	transpose(o, "mamba_out_copy_bwd", PASS_BWD, d, &x, x.di);
	/* MambaSplitConv1dScanCombinedFn.backward: the conv and the scan's
	 * states again */
	conv_fwd(o, PASS_BWD, d, &x);
	scan_states(o, PASS_BWD, d, &x);
	lop_memop(o, "ssd_bwd_dz", PASS_BWD, 3 * n * B, 2 * n * B,
		  ACT_FLOPS * n);
	chunk_gemm(o, "ssd_bwd_dstates", PASS_BWD, d, x.P, x.N, x.Q,
		   x.nc * x.H, 4, 1);
	lop_memop(o, "ssd_state_passing_bwd", PASS_BWD, 2 * S, 2 * S,
		  2 * x.nc * x.H * x.P * x.N);
	chunk_gemm(o, "ssd_bwd_dx", PASS_BWD, d, x.Q, x.P, x.Q + x.N,
		   x.nc * x.H, B, 1);
	chunk_gemm(o, "ssd_bwd_db", PASS_BWD, d, x.Q, x.N, x.P, x.nc * x.H,
		   4, 1);
	chunk_gemm(o, "ssd_bwd_dc", PASS_BWD, d, x.Q, x.N, x.P, x.nc * x.H,
		   4, 1);
	chunk_gemm(o, "ssd_bwd_dcb", PASS_BWD, d, x.Q, x.Q, x.P, x.nc * x.H,
		   4, 1);
	chunk_gemm(o, "ssd_bmm_chunk_bwd_b", PASS_BWD, d, x.Q, x.N, x.Q,
		   x.nc * x.G, 4, 1);
	chunk_gemm(o, "ssd_bmm_chunk_bwd_c", PASS_BWD, d, x.Q, x.N, x.Q,
		   x.nc * x.G, 4, 1);
	chunk_gemm(o, "ssd_bwd_ddacs", PASS_BWD, d, x.Q, x.Q, x.P,
		   x.nc * x.H, 4, 1);
	lop_memop(o, "ssd_cumsum_bwd", PASS_BWD, 3 * x.T * x.H * 4,
		  x.T * x.H * B, 4 * x.T * x.H);
	lop_memop(o, "mamba_conv1d_bwd", PASS_BWD, 2 * x.T * x.c * B,
		  x.T * x.c * B, 4 * x.K * x.T * x.c);
	{	/* the small parameters' hook adds (lop_param_grad_add), each
		 * sharded by TP only: conv1d weight (c' K) and bias (c'),
		 * then A_log, D and dt_bias (H' each). Here, after the conv's
		 * backward, not after the scan's: Megatron-LM's mixer
		 * (megatron/core/ssm/mamba_mixer.py _ssm_training) passes all
		 * five into the one autograd Function
		 * mamba_split_conv1d_scan_combined, which returns their
		 * gradients together when its backward ends (the conv's
		 * backward last: state-spaces/mamba mamba_ssm/ops/triton/
		 * ssd_combined.py MambaSplitConv1dScanCombinedFn.backward),
		 * and DDP's hook fires on each parameter's
		 * AccumulateGrad (distributed_data_parallel.py
		 * grad_acc.register_hook) only then. */
		double c_tp = x.di_tp + 2 * x.G_tp * x.N;

		lop_param_grad_add(o, d, "conv1d_grad_add", c_tp * x.K, 1);
		lop_param_grad_add(o, d, "conv1d_grad_add", c_tp, 1);
		lop_param_grad_add(o, d, "ssm_param_grad_add", x.H_tp, 3);
	}
	transpose(o, "mamba_in_copy_bwd", PASS_BWD, d, &x, x.w);
	cp_pre(o, PASS_BWD, 1, d, &x);
	red = lop_column_bwd(o, "in_proj_input_allgather", "in_proj_grad_cast",
			     "in_proj_dgrad", "in_proj_grad_tp_reduce",
			     "in_proj_wgrad", d, x.w_tp, d->hidden, d->lowp);
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
