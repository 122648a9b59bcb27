/*
 * gdn.c - the Gated DeltaNet mixer of the linear_attention layers of
 * Qwen3-Next and Qwen3.5 (model_layer_linear), as Megatron-Core runs it
 * in training (NVIDIA/Megatron-LM@00caa53a megatron/core/ssm/
 * gated_delta_net.py GatedDeltaNet.forward) with flash-linear-attention's
 * chunked kernel (fla-org/flash-linear-attention@92396f25 fla/ops/
 * gated_delta_rule/chunk.py), the spec Megatron-Bridge's Qwen3-Next
 * bridge builds (NVIDIA-NeMo/Megatron-Bridge@7a3998f1 src/megatron/
 * bridge/models/qwen/qwen3_next_bridge.py: experimental_attention_variant
 * gated_delta_net every layer but each full_attention_interval-th, the
 * in_proj a LayerNormColumnParallel (in_proj.layer_norm_weight),
 * attention_output_gate on the full layers, the MTP layer a full one).
 *
 * Notation: T = b s tokens of the microbatch on one GPU, t = tp, H =
 * H_v / t value heads and H_k / t key heads on one GPU (both divisible:
 * spec_job_layout.c), widths qk = H_k d_k / t, v = H_v d_v / t, the
 * conv channels c = 2 qk + v, W the conv width, C the chunk (the
 * framework's linear_attn_chunk: fla's chunk_size 64, fixed in
 * chunk_gated_delta_rule_fwd), B bytes per element
 * of the activation dtype, G = b H s / C (chunk, head) pairs.
 *
 * Forward, from the input norm's output to the out-projection's input:
 *   in_proj     column-parallel GEMM (T, 2 qk + 2 v + 2 H, h) -> q k v z
 *               b a (Megatron's in_proj_dim / t; LayerNormColumnParallel
 *               as the attention's QKV)
 *   qkv copy    qkv.transpose(1, 2).contiguous(): read and write T c B
 *   conv1d      causal_conv1d_fn with SiLU: read and write T c B,
 *               2 W T c FLOPs (depthwise)
 *   l2norm      q and k .contiguous() from the strided split, then
 *               fla l2norm each: 4 kernels, read and write 2 T qk B twice
 *   repeat      q and k repeat_interleave'd to H heads (H_v > H_k):
 *               read 2 T qk B, write 2 T H d_k B
 *   copies      value, gate, beta, alpha .contiguous(): read and write
 *               T (2 v + 2 H) B, 4 kernels
 *   gates       g = -exp(A_log) softplus(alpha.float() + dt_bias), beta
 *               .sigmoid(): 6 PyTorch ops on T H elements (fp32 4 B)
 *   cumsum      chunk_local_cumsum of g: read and write T H 4 B
 *   chunk kernels, each (m, n, k) GEMMs batched over the G pairs, FLOPs
 *               2 m n k G (whole chunks: the kernels compute the masked
 *               C x C tiles whole), in the activation dtype:
 *     kkt       A = beta K K^T                    (C, C, d_k)
 *     solve     (I + A)^-1, unit lower triangular: C^3/3 FLOPs
 *                                                 (C, C, C/6)
 *     w_u       w = A (beta k e^g), u = A (beta v) (C, d_k + d_v, C)
 *     h         per chunk in order: v' = u - w S, S = e^g S + k^T v'
 *                                                 (C, d_v, 2 d_k)
 *     o         q S + (q k^T masked) v'           (C, d_v, d_k + C +
 *                                                  C d_k / d_v)
 *   gated norm  RMSNorm over d_v times SiLU(z), jit-fused: read 2 T v B,
 *               write T v B
 *   out copy    transpose back to [s, b]: read and write T v B
 * and then the row-parallel out-projection (T, h, v) of layer.c.
 * Per token and value head the chunk kernels do 2 C d_k (kkt) + C^2/3
 * (solve) + 2 C (d_k + d_v) (w_u) + 4 d_k d_v (h) + 2 (d_k d_v + C d_k +
 * C d_v) (o) FLOPs: 181,589 for d_k = d_v = 128, C = 64, against 4 s d
 * for softmax attention's core (2.1 M at s = 4096, d = 256, causal).
 *
 * Backward (chunk_gated_delta_rule_bwd), the forward's w_u and h
 * recomputed first, then:
 *     dv_local  dv = (q k^T masked)^T do          (C, C, d_k + d_v)
 *     dhu       per chunk in reverse: dh, dv += k dh (6 C d_k d_v)
 *                                                 (C, d_v, 3 d_k)
 *     dqkwg     dq, dk, dw, dg                    (C, d_k, 3 d_v + 2 C +
 *                                                  C d_v / d_k)
 *     wy_bwd    dk, dv, dbeta, dg through A and its inverse
 *                                                 (C, C, 4 d_k + 2 d_v +
 *                                                  2 C)
 *     reduce    dk += dk2, dg += dg2, reverse cumsum of dg: read and
 *               write T H (2 d_k B + 3 4 B)
 * and the mirror of every forward op (each elementwise backward reads
 * its saved input and the output gradient, writes the input gradient),
 * the conv's backward also reducing its weight gradient, in_proj's
 * dgrad and wgrad.
 *
 * Stored for the backward (footprint.c): the norm input T'h B and
 * in_proj's input T'h L (as the attention's), the conv input T c B,
 * l2norm's outputs 2 T qk B, the repeated q and k 2 T H d_k B, v T v B,
 * g, beta and l2norm's rstd T H 4 B (x 3), the solved A T H C B,
 * softplus's input T H 4 B, the gated norm's inputs 2 T v B and its
 * rstd, the out-projection's input T v L.
 *
 * Context parallelism of the Gated DeltaNet layers: all-to-alls of the
 * heads around the conv, the chunk kernels and the gated norm (cp_pre
 * and cp_post below; Megatron-Core had none at 00caa53a, "TODO: support
 * CP", and has them at e8678351). Selective recomputation (core_attn and the other
 * modules of the attention) recomputes nothing of the mixer:
 * Megatron-Core checkpoints the core inside its Attention class
 * (attention.py checkpoint_core_attention), and GatedDeltaNet.forward
 * has no checkpoint; full recomputation re-runs the layer (layer.c).
 *
 * The chunk kernels run at the rate flash-linear-attention's published
 * benchmarks measured for them (src/gpu/gpu_chunk.c: the GPU's
 * chunk_fwd_efficiency and chunk_bwd_efficiency; the GEMM model's rate
 * on a GPU without them), their results in the activation dtype except
 * A = beta K K^T (fp32 in fla, chunk_scaled_dot_kkt_fwd).
 */
#include "layer_impl.h"

#include "base/diag.h"
#include "config/spec_job.h"

static double v_heads(const struct layer_dims *d)
{
	return d->gdn.v_heads / d->tp;
}

static double qk_width(const struct layer_dims *d)
{
	return d->gdn.k_heads * d->gdn.dk / d->tp;
}

double gdn_out_width(const struct layer_dims *d)
{
	return v_heads(d) * d->gdn.dv;
}

static double conv_width(const struct layer_dims *d)
{
	return 2 * qk_width(d) + gdn_out_width(d);
}

double gdn_in_width(const struct layer_dims *d)
{
	return conv_width(d) + gdn_out_width(d) + 2 * v_heads(d);
}

/* The framework's linear_attn_chunk (fla's chunk_gated_delta_rule_fwd:
 * chunk_size=64, fixed in its kernels). */
double gdn_chunk(const struct layer_dims *d)
{
	if (!(d->gdn.chunk > 0))
		BUG("Gated DeltaNet layer dims without a chunk");
	return d->gdn.chunk;
}

/* (chunk, head) pairs of the microbatch: G = b H s / C (a partial last
 * chunk computed whole). */
static double pairs(const struct layer_dims *d)
{
	double c = gdn_chunk(d), n = (double)(int64_t)(d->seq / c);

	if (n * c < d->seq)
		n += 1;
	return d->batch * v_heads(d) * n;
}

/* One chunk kernel: the G pairs' products of (C, n, k) (gpu_chunk.c: the
 * chunk kernels' measured rate), 16-bit operands, results of out_B bytes
 * an element (4: fla's fp32 A = beta K K^T), a backward kernel when bwd;
 * the first of an autograd function's kernels is its Python call, the
 * others launch inside it. */
static void chunk_gemm(struct layer_ops *o, const char *name,
		       enum layer_pass pass, const struct layer_dims *d,
		       double n, double k, int first, double out_B, int bwd)
{
	struct layer_op *op = lop_chunk(o, name, pass, gdn_chunk(d), n, k,
					pairs(d), d->act_B, out_B, bwd);

	op->host = first ? HOST_MODULE : HOST_FREE;
}

/* Context parallelism (cp > 1; NVIDIA/Megatron-LM@e8678351 megatron/
 * core/ssm/gated_delta_net.py GatedDeltaNet.forward, tensor_a2a_cp2hp /
 * tensor_a2a_hp2cp): in_proj's output is split into q, k, v, z, beta and
 * alpha, each all-to-all'd over the CP group ([s/cp, b, n] -> [s, b,
 * n/cp]), concatenated and the attention's load balancing undone (an
 * index copy); the conv, the chunk kernels and the gated norm then run
 * on the whole sequence for H/cp heads, the same elements and (chunk,
 * head) pairs as the local sequence for H heads (so the ops below keep
 * their widths); the norm's output goes back by the load balancing
 * redone and one all-to-all. Backward the mirror. */
static void cp_pre(struct layer_ops *o, enum layer_pass pass, int bwd,
		   const struct layer_dims *d)
{
	double t = layer_tokens(d), B = d->act_B, qk = t * qk_width(d) * B;
	double v = t * gdn_out_width(d) * B, hb = t * v_heads(d) * B;
	double all = t * gdn_in_width(d) * B;
	const char *fwd_n[6] = { "gdn_cp_q_a2a", "gdn_cp_k_a2a",
				 "gdn_cp_v_a2a", "gdn_cp_z_a2a",
				 "gdn_cp_beta_a2a", "gdn_cp_alpha_a2a" };
	const char *bwd_n[6] = { "gdn_cp_dq_a2a", "gdn_cp_dk_a2a",
				 "gdn_cp_dv_a2a", "gdn_cp_dz_a2a",
				 "gdn_cp_dbeta_a2a", "gdn_cp_dalpha_a2a" };
	const double size[6] = { qk, qk, v, v, hb, hb };
	int i;

	if (d->cpd.cp <= 1)
		return;
	if (bwd && d->cpd.load_balance)
		lop_memop(o, "gdn_cp_undo_lb_bwd", pass, all, all, 0);
	for (i = 0; i < 6; i++)
		lop_coll(o, bwd ? bwd_n[i] : fwd_n[i], pass, LG_CP, LS_CP,
			 COLL_ALLTOALL, size[i]);
	if (!bwd) {
		lop_memop(o, "gdn_cp_cat", pass, all, all, 0);
		if (d->cpd.load_balance)
			lop_memop(o, "gdn_cp_undo_lb", pass, all, all, 0);
	}
}

static void cp_post(struct layer_ops *o, enum layer_pass pass, int bwd,
		    const struct layer_dims *d)
{
	double y = layer_tokens(d) * gdn_out_width(d) * d->act_B;

	if (d->cpd.cp <= 1)
		return;
	if (!bwd && d->cpd.load_balance)
		lop_memop(o, "gdn_cp_redo_lb", pass, y, y, 0);
	lop_coll(o, bwd ? "gdn_cp_dy_a2a" : "gdn_cp_y_a2a", pass, LG_CP,
		 LS_CP, COLL_ALLTOALL, y);
	if (bwd && d->cpd.load_balance)
		lop_memop(o, "gdn_cp_redo_lb_bwd", pass, y, y, 0);
}

/* The chunked kernel's forward (chunk_gated_delta_rule_fwd). */
static void chunk_fwd(struct layer_ops *o, enum layer_pass pass,
		      const struct layer_dims *d)
{
	double c = gdn_chunk(d), dk = d->gdn.dk, dv = d->gdn.dv;
	double th = layer_tokens(d) * v_heads(d), B = d->act_B;
	struct layer_op *op;

	op = lop_memop(o, "gdn_cumsum", pass, th * 4, th * 4, th);
	op->host = HOST_MODULE;
	chunk_gemm(o, "gdn_kkt", pass, d, c, dk, 0, 4, 0);
	chunk_gemm(o, "gdn_solve_tril", pass, d, c, c / 6, 0, B, 0);
	chunk_gemm(o, "gdn_w_u", pass, d, dk + dv, c, 0, B, 0);
	chunk_gemm(o, "gdn_h", pass, d, dv, 2 * dk, 0, B, 0);
	chunk_gemm(o, "gdn_o", pass, d, dv, dk + c + c * dk / dv, 0, B, 0);
}

void gdn_fwd(struct layer_ops *o, enum layer_pass pass,
	     const struct layer_dims *d)
{
	double t = layer_tokens(d), B = d->act_B, H = v_heads(d);
	double qk = qk_width(d), v = gdn_out_width(d), c = conv_width(d);
	double rep = d->gdn.v_heads > d->gdn.k_heads ? 1 : 0;
	int16_t cast = (int16_t)o->n;

	lop_column_fwd(o, "in_proj_cast", "in_proj_allgather", "in_proj",
		       pass, d, gdn_in_width(d), d->hidden, d->lowp);
	lop_cast_after_norm(o, cast, d);	/* LayerNormColumnParallel */
	lop_norm_linear(o, cast);
	cp_pre(o, pass, 0, d);
	lop_memop(o, "gdn_qkv_copy", pass, t * c * B, t * c * B, 0);
	lop_memop(o, "gdn_conv1d", pass, t * c * B, t * c * B,
		  2 * d->gdn.conv * t * c + ACT_FLOPS * t * c);
	lop_eager(o, "gdn_qk_l2norm", pass, 4 * t * qk * B,
		  4 * t * qk * B + 2 * t * d->gdn.k_heads / d->tp * 4,
		  2 * t * qk * B, 4, NORM_FLOPS * 2 * t * qk);
	if (rep)
		lop_eager(o, "gdn_qk_repeat", pass, 2 * t * qk * B,
			  2 * t * H * d->gdn.dk * B, 0, 2, 0);
	lop_eager(o, "gdn_copies", pass, t * (2 * v + 2 * H) * B,
		  t * (2 * v + 2 * H) * B, t * (2 * v + 2 * H) * B, 4, 0);
	lop_eager(o, "gdn_gates", pass, t * H * (2 * B + 4 * 4),
		  t * H * (B + 5 * 4), 0, 6, 8 * t * H);
	chunk_fwd(o, pass, d);
	lop_memop(o, "gdn_gated_norm", pass, 2 * t * v * B, t * v * B,
		  (NORM_FLOPS + ACT_FLOPS) * t * v);
	lop_memop(o, "gdn_out_copy", pass, t * v * B, t * v * B, 0);
	cp_post(o, pass, 0, d);
}

/* The chunked kernel's backward (chunk_gated_delta_rule_bwd). */
static void chunk_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double c = gdn_chunk(d), dk = d->gdn.dk, dv = d->gdn.dv;
	double th = layer_tokens(d) * v_heads(d), B = d->act_B;

	chunk_gemm(o, "gdn_w_u", PASS_BWD, d, dk + dv, c, 1, B, 0);
	chunk_gemm(o, "gdn_h", PASS_BWD, d, dv, 2 * dk, 0, B, 0);
	chunk_gemm(o, "gdn_dv_local", PASS_BWD, d, c, dk + dv, 0, B, 1);
	chunk_gemm(o, "gdn_dhu", PASS_BWD, d, dv, 3 * dk, 0, B, 1);
	chunk_gemm(o, "gdn_dqkwg", PASS_BWD, d, dk,
		   3 * dv + 2 * c + c * dv / dk, 0, B, 1);
	chunk_gemm(o, "gdn_wy_bwd", PASS_BWD, d, c, 4 * dk + 2 * dv + 2 * c,
		   0, B, 1);
	lop_memop(o, "gdn_grad_reduce", PASS_BWD, th * (2 * dk * B + 3 * 4),
		  th * (dk * B + 2 * 4), th * (dk + 2))->k.launches = 3;
}

void gdn_bwd(struct layer_ops *o, unsigned mods, const struct layer_dims *d)
{
	double t = layer_tokens(d), B = d->act_B, H = v_heads(d);
	double qk = qk_width(d), v = gdn_out_width(d), c = conv_width(d);
	double rep = d->gdn.v_heads > d->gdn.k_heads ? 1 : 0;
	int16_t red;

	cp_post(o, PASS_BWD, 1, d);
	lop_memop(o, "gdn_out_copy_bwd", PASS_BWD, t * v * B, t * v * B, 0);
	/* the gated norm's backward: read x, z, dy; write dx, dz */
	lop_memop(o, "gdn_gated_norm_bwd", PASS_BWD, 3 * t * v * B,
		  2 * t * v * B, 2 * (NORM_FLOPS + ACT_FLOPS) * t * v);
	/* its weight (d_v, RMSNorm) into main_grad, as mamba.c's */
	lop_param_grad_add(o, d, "norm_grad_add", d->gdn.dv, 1);
	(void)mods;	/* nothing of the mixer is checkpointed (header) */
	chunk_bwd(o, d);
	lop_eager(o, "gdn_gates_bwd", PASS_BWD, t * H * (B + 6 * 4),
		  t * H * (B + 4 * 4), 0, 5, 8 * t * H);
	/* dt_bias's and A_log's gradients are final here: they enter the
	 * layer only through the eager gate g = -exp(A_log) softplus(a +
	 * dt_bias) (Megatron-LM megatron/core/ssm/gated_delta_net/gdn.py
	 * _compute_gates), so their AccumulateGrad nodes run, and DDP's
	 * hook on them (distributed_data_parallel.py: grad_acc.register_hook)
	 * fires, before the l2norm's and the conv's backward: H_v' each */
	lop_param_grad_add(o, d, "ssm_param_grad_add", H, 2);
	if (rep)	/* repeat_interleave's backward: a sum over the copies */
		lop_eager(o, "gdn_qk_repeat_bwd", PASS_BWD,
			  2 * t * H * d->gdn.dk * B, 2 * t * qk * B, 0, 2,
			  2 * t * H * d->gdn.dk);
	lop_eager(o, "gdn_qk_l2norm_bwd", PASS_BWD, 6 * t * qk * B,
		  2 * t * qk * B, 0, 2, 2 * NORM_FLOPS * 2 * t * qk);
	/* the split's and the copies' gradients assembled into one [T, c]
	 * and the z, b, a parts into in_proj's output gradient (cat) */
	lop_eager(o, "gdn_grad_cat", PASS_BWD, t * gdn_in_width(d) * B,
		  t * gdn_in_width(d) * B, 0, 2, 0);
	/* causal_conv1d_bwd: read x, dy, write dx; its weight gradient */
	lop_memop(o, "gdn_conv1d_bwd", PASS_BWD, 2 * t * c * B, t * c * B,
		  4 * d->gdn.conv * t * c + ACT_FLOPS * t * c);
	/* the conv1d weight's hook add (c W, no bias, as gdn_params): its
	 * gradient is final once causal_conv1d's backward returns */
	lop_param_grad_add(o, d, "conv1d_grad_add", c * d->gdn.conv, 1);
	lop_memop(o, "gdn_qkv_copy_bwd", PASS_BWD, t * c * B, t * c * B, 0);
	cp_pre(o, PASS_BWD, 1, d);
	red = lop_column_bwd(o, "in_proj_input_allgather", "in_proj_grad_cast",
			     "in_proj_dgrad", "in_proj_grad_tp_reduce",
			     "in_proj_wgrad", d, gdn_in_width(d), d->hidden,
			     d->lowp);
	lop_norm_bwd_after(o, "norm1_bwd", d, red);
}

double gdn_params(const struct layer_dims *d, int bias)
{
	double h = d->hidden, hk = d->gdn.k_heads, hv = d->gdn.v_heads;
	double qk = hk * d->gdn.dk, v = hv * d->gdn.dv;
	double in = 2 * qk + 2 * v + 2 * hv;

	/* in_proj, conv1d weight [2 qk + v, W], dt_bias and A_log [H_v],
	 * the gated norm's weight [d_v], out_proj */
	return h * in + (2 * qk + v) * d->gdn.conv + 2 * hv + d->gdn.dv +
	       v * h + (bias & LAYER_BIAS_ATTN ? in : 0) +
	       (bias & LAYER_BIAS_OUT ? h : 0);
}

double gdn_stored_B(const struct layer_dims *d)
{
	double t = layer_tokens(d), ts = layer_sp_tokens(d), h = d->hidden;
	double B = d->act_B, L = d->lowp ? d->lowp_B : B, H = v_heads(d);
	double qk = qk_width(d), v = gdn_out_width(d);

	return ts * h * B + ts * h * L + t * conv_width(d) * B +
	       2 * t * qk * B + 2 * t * H * d->gdn.dk * B + t * v * B +
	       3 * t * H * 4 + t * H * gdn_chunk(d) * B + t * H * 4 +
	       2 * t * v * B + t * H * 4 + t * v * L;
}
