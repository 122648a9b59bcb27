/*
 * attn.c - the attention half of a layer: projections (GQA or multi-head
 * latent attention), rotary embedding and the attention core, with
 * context parallelism and sliding windows.
 *
 * Notation as layer.c (T tokens of the microbatch on one GPU, s = S/cp
 * tokens of each sequence on one GPU, t = tp, B bytes per element).
 *
 * Projections. GQA: one column-parallel QKV GEMM (n = q + 2 kv, k = h).
 * MLA (DeepSeek-V2/V3, Megatron-Core MLASelfAttention): the down
 * projections are not split over TP (TELinear "duplicated") and run on
 * the sequence-parallel shard T' (the whole T without SP):
 *   q_down  GEMM (T', r_q, h)          kv_down GEMM (T', r_kv + d_r, h)
 *   q_norm  over T' r_q                kv_norm over T' r_kv
 * then column-parallel up projections over the gathered T tokens:
 *   q_up    GEMM (T, a/t (d_n + d_r), r_q)   [SP: all-gather T r_q]
 *   kv_up   GEMM (T, a/t (d_n + d_v), r_kv)  [SP: all-gather T r_kv,
 *                                              and the shared k_rope T d_r]
 * and attention with Q/K heads of d_n + d_r and V heads of d_v, one K/V
 * head per query head. The output projection reads a/t d_v.
 *
 * Attention core, one flash call per block of the score matrix (the GPU
 * model, gpu_attention.c, costs each): without context parallelism one
 * causal call, q = kv = s (a window w: each query sees min(position, w)
 * keys); the context-parallel methods (Megatron --cp-comm-type p2p,
 * all_gather, a2a, a2a+p2p, and PyTorch's context_parallel): attn_cp.c.
 *
 * Model FLOPs of the core are counted as Megatron-LM counts them
 * (num_floating_point_operations: "only half of the attention matrix is
 * non-zero"): 4 b (a/t) P (d + d_v)/2 forward with P the query-key pairs
 * the causal mask leaves of the whole sequence, S^2/2 (S w - w^2/2 under a
 * window of w < S keys), the GPU's share s/S of them under CP, whatever
 * blocks the method computes and however (unfused GEMMs compute the whole
 * matrix and count the same). The GPU model executes at least that: the
 * visible pairs s(s+1)/2, the scores again in the backward (docs/mfu.md).
 *
 * Chunked attention (Llama 4's RoPE layers, model.attention_chunk_size
 * C; the NoPE layers attend globally, model_layer_chunk): query p sees
 * the keys from C floor(p/C) to p, so a sequence of s > C tokens is
 * n = floor(s/C) independent causal attentions of C tokens and one of
 * the remainder r = s - n C: the flash kernel runs b n sequences of C
 * (varlen or a block mask over the chunks computes only their tiles) and
 * b of r, backward the same; model FLOPs count P = n C^2/2 + r^2/2
 * pairs per sequence (a window w within a chunk: each term as above).
 * The core's stored tensors are per query token (the log-sum-exps), as
 * for causal attention of those lengths: unchanged. The unfused core
 * computes the whole masked s x s matrix and counts the chunked P. s <= C
 * is causal attention exactly. Context parallelism over chunked layers
 * is refused (spec_job_layout.c, rule train_chunked): Transformer Engine runs
 * a chunked ('arbitrary') mask only in its unfused backend, which it
 * disables under CP.
 */
#include "attn_impl.h"

#include <math.h>

#include "base/diag.h"
#include "config/spec_job.h"

double attn_out_width(const struct layer_dims *d)
{
	return attn_heads_q(d) * layer_v_dim(d);
}

/* ---- projections ---- */

/* Rotary embedding of q and k: one fused kernel over both, or, after
 * Megatron-Core's QKV split (qkv_split), one apply_rotary_pos_emb call
 * on the query and one on the key (attention.py SelfAttention.forward
 * @ d7288711ba: q_pos_emb, then k_pos_emb; each Transformer Engine's
 * fused RoPE, an autograd function launching one kernel): two launches
 * and two PyTorch ops of host, forward and backward [D]. */
static void rope_op(struct layer_ops *o, const char *name,
		    enum layer_pass pass, const struct layer_dims *d)
{
	double n;

	if (!d->rope)
		return;
	if (d->mla)	/* Q's rotary part per head, K's one shared */
		n = layer_tokens(d) * (attn_heads_q(d) + 1) * d->mla_d.rope;
	else
		n = layer_tokens(d) * (layer_q_width(d) + layer_kv_width(d));
	if (d->complex_rope) {
		/* torchtitan's apply_rotary_emb (models/llama3/model.py @
		 * 820504e2, llama/model.py @ 9dec370a), on q and on k:
		 * x.float() (r n B, w 4n), its complex view times freqs_cis
		 * (complex64: r 4n, w 4n, 3 flops a real element), then
		 * view_as_real and type_as (r 4n, w n B); the backward runs
		 * the same three on the gradient (times conj(freqs_cis)).
		 * Compiled alike: inductor generates no code for complex
		 * tensors (torch/_inductor/lowering.py unsupported_input_
		 * tensor, "does not support code generation for complex
		 * operators"; torchtitan issue #15), so the multiply is an
		 * ATen fallback and both conversions stay kernels of their
		 * own [S]. freqs_cis (T d / 2 complex) is not counted. */
		double c = 2 * dtype_bytes(DTYPE_FP32);

		lop_eager(o, name, pass, n * (d->act_B + c),
			  n * (d->act_B + c), 0, 6, 3 * n);
		return;
	}
	if (!d->eager_rope) {
		struct layer_op *op = lop_memop(o, name, pass, n * d->act_B,
						n * d->act_B, 4 * n);

		if (d->qkv_split) {	/* on query, then on key */
			op->k.launches = 2;
			op->host_n = 2;
		}
		return;
	}
	/* x cos (r n, w n), -x2 (r n/2, w n/2), cat (r n, w n), * sin (r n,
	 * w n), + (r 2n, w n), on q and on k: 10 kernels, the first four of
	 * each on the strided views (7n); backward the same chain reversed */
	lop_eager(o, name, pass, 5.5 * n * d->act_B, 4.5 * n * d->act_B,
		  7 * n * d->act_B, 10, 4 * n);
}

/* QK norm (Qwen3: Megatron-Core SelfAttention's q_layernorm and
 * k_layernorm, Transformer Engine RMSNorms over each head's d elements
 * of the QKV GEMM's output, before rotary): a norm over T q and one over
 * T kv elements; backward, like the layer's norms, reads the input and
 * the output gradient (again for dgamma when that is a second kernel)
 * and writes the input gradient. Each is a module call: the layer spec
 * builds q_layernorm and k_layernorm as TENorm (gpt_layer_specs.py
 * qk_norm) and get_query_key_value_tensors calls them one after the
 * other, apply_module(self.q_layernorm)(query) then k_layernorm (NVIDIA/
 * Megatron-LM @ d7288711ba megatron/core/transformer/attention.py), so
 * the host pays the framework's module cost for each, forward and
 * backward (a Transformer Engine module's autograd function) [D]. */
static void qk_norm(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d, const struct layer_kind *k)
{
	double t = layer_tokens(d), B = d->act_B, w[2], p;
	int i;

	/* a NoPE layer has none: Llama 4 builds its (weight-free L2)
	 * qk_norm only where use_rope (transformers modeling_llama4.py
	 * Llama4TextAttention: use_qk_norm and use_rope), the one model
	 * with both NoPE layers and a q/k norm */
	if (!d->qk_norm || d->mla || (k && k->nope))
		return;
	w[0] = layer_q_width(d);
	w[1] = layer_kv_width(d);
	p = d->norm_bwd_passes;
	for (i = 0; i < 2; i++) {
		double n = t * w[i];

		struct layer_op *op;

		if (pass == PASS_BWD) {
			op = lop_memop(o, i ? "k_norm_bwd" : "q_norm_bwd", pass,
				       2 * p * n * B, n * B, NORM_FLOPS * n);
			op->k.launches = p;
		} else {
			op = lop_memop(o, i ? "k_norm" : "q_norm", pass, n * B,
				       n * B, NORM_FLOPS * n);
		}
		op->host = HOST_MODULE;
	}
	/* q_layernorm's and k_layernorm's weights: d elements each */
	if (pass == PASS_BWD)
		lop_norm_grad_add(o, d, d->head_dim, 2);
}

/* Megatron-Core's split of the fused QKV output (qkv_split; NVIDIA/
 * Megatron-LM @ d7288711ba megatron/core/transformer/attention.py
 * SelfAttention.get_query_key_value_tensors, split_qkv unless
 * fused_single_qkv_rope): the GEMM's [T, g (p + 2) d] output, g query
 * groups of p query heads and one key and one value head each, is viewed
 * as [T, g, (p + 2) d] and split along the last dimension by Transformer
 * Engine's SplitAlongDim (an autograd function returning views, torch.
 * split; TransformerEngine @ 71bbefbf pytorch/utils.py), then
 * query.reshape(T, g p, d): the query view's group stride is (p + 2) d,
 * not p d, so for g > 1 and p > 1 no view can merge the groups and
 * reshape copies (read and write T q B); for g = 1 it is a view, and for
 * p = 1 (MHA: one query head a group) the target shape [T, g, d] is the
 * view's own, so reshape returns it as is (torch.reshape returns a view
 * whenever the strides allow one). Host: SplitAlongDim's Python call and
 * the reshape, two PyTorch ops (the copy's op carries both; without the
 * copy neither is counted [?]). Backward: the reshape's
 * gradient is a view, and SplitAlongDim.backward concatenates the three
 * gradients with torch.cat unless they already lie side by side in one
 * buffer; q's comes from its own allocation (the norm's or the rotary's
 * backward), so it copies: read and write T (q + 2 kv) B, one autograd
 * node. */
static void qkv_split_fwd(struct layer_ops *o, enum layer_pass pass,
			  const struct layer_dims *d)
{
	double t = layer_tokens(d), q = layer_q_width(d), B = d->act_B;

	/* g > 1 query groups of p > 1 heads: a copy (q > kv: p > 1) */
	if (!d->qkv_split || !(layer_kv_heads_local(d) > 1) ||
	    !(q > layer_kv_width(d)))
		return;
	lop_memop(o, "q_reshape", pass, t * q * B, t * q * B, 0)->host_n = 2;
}

static void qkv_split_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double t = layer_tokens(d), B = d->act_B;
	double n = t * (layer_q_width(d) + 2 * layer_kv_width(d));

	if (!d->qkv_split)
		return;
	lop_memop(o, "qkv_grad_cat", PASS_BWD, n * B, n * B, 0);
}

/* GQA keys and values copied to the query heads (repeat_interleave on
 * strided views: read T kv, write T q, each), or in backward summed back
 * (two reductions: read T q, write T kv each, contiguous). */
static void expand_kv(struct layer_ops *o, const char *name,
		      enum layer_pass pass, const struct layer_dims *d)
{
	double t = layer_tokens(d), q = layer_q_width(d);
	double kv = layer_kv_width(d), B = d->act_B;

	if (!d->expand_kv || d->mla)
		return;
	if (pass == PASS_BWD)
		lop_eager(o, name, pass, 2 * t * q * B, 2 * t * kv * B, 0, 2,
			  2 * t * q);
	else
		lop_eager(o, name, pass, 2 * t * kv * B, 2 * t * q * B,
			  2 * t * (q + kv) * B, 2, 0);
}

/* The Q, K, V projections: one fused GEMM "qkv", or with
 * split_linears the model's wq, wk and wv (torchtitan models/llama3/
 * model.py Attention: three nn.Linear on x; torch.compile keeps three
 * mms: inductor's batch_linear_lhs pass is off unless asked for, pytorch
 * PR #186632). */
static struct lin_parts qkv_parts(const struct layer_dims *d)
{
	static const char *const fwd[3] = { "wq", "wk", "wv" };
	static const char *const dg[3] = { "wq_dgrad", "wk_dgrad",
					   "wv_dgrad" };
	static const char *const wg[3] = { "wq_wgrad", "wk_wgrad",
					   "wv_wgrad" };
	static const char *const fwd1[1] = { "qkv" };
	static const char *const dg1[1] = { "qkv_dgrad" };
	static const char *const wg1[1] = { "qkv_wgrad" };
	double q = layer_q_width(d) * (d->attn_gate ? 2 : 1);
	double kv = layer_kv_width(d);
	struct lin_parts p = { 3, fwd, dg, wg, { q, kv, kv } };
	struct lin_parts one = { 1, fwd1, dg1, wg1, { q + 2 * kv, 0, 0 } };

	return d->split_linears ? p : one;
}

static void proj_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d)
{
	double t = layer_tokens(d);

	if (!d->mla) {
		int16_t cast = (int16_t)o->n;
		struct lin_parts p = qkv_parts(d);

		lop_column_fwd_parts(o, "qkv_cast", "qkv_allgather", &p, pass,
				     d, d->hidden, d->lowp);
		lop_cast_after_norm(o, cast, d);	/* LayerNormLinear */
		lop_norm_linear(o, cast);
		lop_bias(o, "qkv_bias", pass, d, LAYER_BIAS_ATTN, t,
			 layer_q_width(d) + 2 * layer_kv_width(d));
		return;
	}
	attn_mla_down_fwd(o, pass, d);
	attn_mla_up_fwd(o, pass, d);
}

/* ---- the core ---- */

/* Causal query-key pairs of a sequence of S tokens as the model FLOPs
 * count them: S^2/2, S w - w^2/2 under a window of w < S keys. */
static double causal_pairs(double S, double window)
{
	return window > 0 && window < S ? S * window - window * window / 2
					: S * S / 2;
}

/* Model FLOPs on one GPU of `pairs` query-key pairs per sequence of the
 * whole sequence S (forward; backward twice): 4 b (a/t) P (d + d_v)/2
 * (s/S), the GPU's share s/S of them under CP (see the top). */
static double pair_model_flops(const struct layer_dims *d, double pairs,
			       int bwd)
{
	double S = d->seq * d->cpd.cp;
	double f = 4 * d->batch * attn_heads_q(d) * pairs * (d->seq / S) *
		   (attn_dim_qk(d) + layer_v_dim(d)) / 2;

	return bwd ? 2 * f : f;
}

static double core_model_flops(const struct layer_dims *d, double window,
			       int bwd)
{
	return pair_model_flops(d, causal_pairs(d->seq * d->cpd.cp, window),
				bwd);
}

/* Whether the core of layer kind k is chunked: the sequence is past one
 * chunk (within one aligned chunk, chunked attention is causal
 * attention, costed as such). Chunked layers are refused under CP
 * (spec_job_layout.c's train_chunked), so the sequence is d->seq. */
static int is_chunked(const struct layer_dims *d, const struct layer_kind *k)
{
	return k && k->chunk > 0 && d->seq > k->chunk;
}

/* Model FLOPs of a chunked core: n = floor(s/C) chunks of C and a
 * remainder r = s - n C, each causal on its own (a window within it). */
static double chunked_model_flops(const struct layer_dims *d,
				  const struct layer_kind *k, int bwd)
{
	double C = k->chunk, n = floor(d->seq / C), r = d->seq - n * C;

	return pair_model_flops(d, n * causal_pairs(C, k->window) +
				causal_pairs(r, k->window), bwd);
}

/* The chunked core as flash calls (see the top): the full chunks as b n
 * sequences of C tokens, the remainder as b sequences of r. */
static void chunked(struct layer_ops *o, enum layer_pass pass, int bwd,
		    const struct layer_dims *d, const struct layer_kind *k)
{
	double C = k->chunk, n = floor(d->seq / C), r = d->seq - n * C;
	double hq = attn_heads_q(d), w = k->window;
	const char *name = bwd ? "attn_bwd" : "attn";
	struct gpu_attn_shape a;

	attn_shape(d, d->batch * n, hq, C, C, 1, w, &a);
	attn_flash(d, o, name, pass, bwd, &a,
		   pair_model_flops(d, n * causal_pairs(C, w), bwd));
	if (r <= 0)
		return;
	attn_shape(d, d->batch, hq, r, r, 1, w, &a);
	attn_flash(d, o, name, pass, bwd, &a,
		   pair_model_flops(d, causal_pairs(r, w), bwd));
}

/* One GEMM per head over the score matrix, in 16-bit. It computes the
 * whole matrix; its model FLOPs are its share mf of the core's (the
 * causal count, core_model_flops), as the fused kernel's. */
static struct layer_op *score_gemm(struct layer_ops *o, const char *name,
				   enum layer_pass pass,
				   const struct layer_dims *d, double m,
				   double n, double k, double mf)
{
	struct layer_op *op = lop_gemm(o, name, pass, m, n, k, 0);

	op->k.batch = layer_attn_heads(d);
	op->k.model_flops = mf;
	return op;
}

/* The unfused core: scores = Q K^T (baddbmm), the fused scale-mask
 * softmax (read the scores, write the probabilities), with dropout the
 * attention dropout as its own kernel on the probabilities (read them,
 * write the dropped ones and a 1-byte mask: torch.nn.Dropout after
 * FusedScaleMaskSoftmax in Megatron-LM's ParallelAttention, NVIDIA/
 * Megatron-LM @ 01fc083 megatron/model/transformer.py; the same in
 * Megatron-Core's and Transformer Engine's unfused attention), then
 * P V. Backward: the dropout's (read dP' and the mask, write dP), the
 * softmax's (read dP and P, write dS), the four GEMMs. The model FLOPs
 * mf of the core (forward; backward twice) split evenly over its GEMMs. */
static void unfused_fwd(struct layer_ops *o, enum layer_pass pass,
			const struct layer_dims *d, double mf)
{
	double scores = layer_scores(d);

	score_gemm(o, "scores", pass, d, d->seq, d->seq, attn_dim_qk(d),
		   mf / 2)->host = HOST_OP;	/* torch.baddbmm */
	lop_memop(o, "softmax", pass, scores * d->act_B, scores * d->act_B,
		  CE_FLOPS * scores);
	if (d->dropout)
		lop_memop(o, "attn_dropout", pass, scores * d->act_B,
			  scores * d->act_B + scores, ADD_FLOPS * scores);
	score_gemm(o, "attn_v", pass, d, d->seq, layer_v_dim(d), d->seq,
		   mf / 2)->host = HOST_OP;
}

static void unfused_bwd(struct layer_ops *o, const struct layer_dims *d,
			double mf)
{
	double scores = layer_scores(d);
	double s = d->seq, dq = attn_dim_qk(d), dv = layer_v_dim(d);

	score_gemm(o, "attn_v_dgrad", PASS_BWD, d, s, s, dv, mf / 4);
	score_gemm(o, "attn_v_wgrad", PASS_BWD, d, s, dv, s, mf / 4);
	if (d->dropout)
		lop_memop(o, "attn_dropout_bwd", PASS_BWD,
			  scores * d->act_B + scores, scores * d->act_B,
			  ADD_FLOPS * scores);
	lop_memop(o, "softmax_bwd", PASS_BWD, 2 * scores * d->act_B,
		  scores * d->act_B, CE_FLOPS * scores);
	score_gemm(o, "scores_dgrad_q", PASS_BWD, d, s, dq, s, mf / 4);
	score_gemm(o, "scores_dgrad_k", PASS_BWD, d, s, dq, s, mf / 4);
}

/* MXFP8 fused attention's own quantization (training.fp8_attention
 * under an MXFP8 recipe). Transformer Engine's FusedAttnFunc takes bf16
 * Q, K, V from Megatron and quantizes them before cuDNN's MXFP8 kernel:
 * combine_and_quantize -> mxfp8_quantize_fast_path, one MXFP8Quantizer
 * call a tensor, each writing the row-wise and the column-wise copy (the
 * kernel reads them along D and along S; in training neither usage is
 * dropped), then the block scales padded and permuted to BHSD
 * (tex.multi_tensor_transpose_to_bhsd, row-wise and column-wise) and
 * swizzled in place (two multi_tensor_swizzle_scales_for_gemm calls).
 * The backward quantizes dO the same way before fused_attn_bwd; the
 * output stays bf16 (bwd_requires_o_f16 for mxfp8). NVIDIA/
 * TransformerEngine v2.18 (the Megatron-Bridge 26.08 pin),
 * pytorch/attention/dot_product_attention/backends.py FusedAttnFunc,
 * utils.py combine_and_quantize, mxfp8_quantize_fast_path [D]. Per
 * quantized element: read act_B, write both layouts at lowp_B (data and
 * E8M0 scale); the scale passes read and write the scales of both
 * layouts twice. Per-tensor FP8 attention: cs_attn_quant below. */
#define MX_ATTN_SCALE_KERNELS 4	/* 2 BHSD transposes, 2 swizzles */

static void mx_attn_quant(struct layer_ops *o, enum layer_pass pass,
			  int bwd, const struct layer_dims *d,
			  const struct gpu_attn_shape *a)
{
	double rows = a->batch * a->seq_q, n, scale_B;
	struct layer_op *op;

	if (!d->mx_attn_quant)
		return;
	n = bwd ? rows * a->heads_q * a->head_dim_v :
		  rows * (a->heads_q * a->head_dim_qk +
			  a->heads_kv * (a->head_dim_qk + a->head_dim_v));
	op = lop_memop(o, bwd ? "attn_do_quant" : "attn_qkv_quant", pass,
		       n * d->act_B, 2 * n * d->lowp_B, n);
	op->k.mem_eff = d->mx_cast_eff;
	op->k.launches = bwd ? 1 : 3;	/* dO; Q, K, V */
	op->host_n = (uint16_t)op->k.launches;
	scale_B = 2 * n * (d->lowp_B - 1);	/* both layouts' scales */
	op = lop_memop(o, bwd ? "attn_do_scales" : "attn_qkv_scales", pass,
		       2 * scale_B, 2 * scale_B, 0);
	op->k.launches = MX_ATTN_SCALE_KERNELS;
	op->host_n = MX_ATTN_SCALE_KERNELS;
}

/* Per-tensor current-scaling FP8 fused attention (d->cs_attn_quant).
 * Transformer Engine's FusedAttnFunc (NVIDIA/TransformerEngine
 * release_v2.8, the MLPerf Training v5.1 NeMo image's pin; pytorch/
 * attention/dot_product_attention/backends.py, utils.py) takes bf16 Q, K,
 * V and calls combine_and_quantize: with Q, K and V as separate tensors
 * (qkv_layout sbhd_sbhd_sbhd, the grouped-query case, whose Q, K, V are
 * no packed 3-layout) it torch.cat's their flattened data into one buffer
 * (a copy: read and write act_B an element) and quantizes that once with
 * the recipe's Float8CurrentScalingQuantizer (FP8_CS_QUANT_KERNELS: the
 * amax zeroed, the amax read, the scale, the cast; one FP8 layout: TE's
 * DPA quantizers write row-wise data). The kernel's output stays bf16
 * (NVTE_DPA_FP8CS_O_in_F16, default 1: no O quantize, the backward reads
 * the bf16 O), and the backward quantizes dO (ctx.dO_quantizer, the same
 * four kernels) before fused_attn_bwd, whose dQ, dK, dV come back bf16
 * (no dequantize). A packed Q, K, V (qkv_group 1) would skip the copy:
 * not modelled [?]. */
static void cs_attn_quant(struct layer_ops *o, enum layer_pass pass,
			  int bwd, const struct layer_dims *d,
			  const struct gpu_attn_shape *a)
{
	double rows = a->batch * a->seq_q, n;
	struct layer_op *op;

	if (!d->cs_attn_quant)
		return;
	n = bwd ? rows * a->heads_q * a->head_dim_v :
		  rows * (a->heads_q * a->head_dim_qk +
			  a->heads_kv * (a->head_dim_qk + a->head_dim_v));
	if (!bwd) {
		op = lop_memop(o, "attn_qkv_cat", pass, n * d->act_B,
			       n * d->act_B, 0);
		op->host_n = 1;
	}
	/* the amax pass reads the input once more */
	op = lop_memop(o, bwd ? "attn_do_quant" : "attn_qkv_quant", pass,
		       2 * n * d->act_B, n * dtype_bytes(DTYPE_FP8), n);
	op->k.launches = FP8_CS_QUANT_KERNELS;
	op->host_n = FP8_CS_QUANT_KERNELS;
}

static void core(struct layer_ops *o, enum layer_pass pass, int bwd,
		 const struct layer_dims *d, const struct layer_kind *k)
{
	double window = k ? k->window : 0;
	double mf = is_chunked(d, k) ? chunked_model_flops(d, k, bwd) :
				       core_model_flops(d, window, bwd);
	struct gpu_attn_shape a;

	if (d->cpd.cp <= 1) {
		if (d->unfused_attn) {	/* the whole masked matrix */
			if (bwd)
				unfused_bwd(o, d, mf);
			else
				unfused_fwd(o, pass, d, mf);
			return;
		}
		if (is_chunked(d, k)) {
			chunked(o, pass, bwd, d, k);
			return;
		}
		attn_shape(d, d->batch, attn_heads_q(d), d->seq, d->seq, 1,
			   window, &a);
		mx_attn_quant(o, pass, bwd, d, &a);
		cs_attn_quant(o, pass, bwd, d, &a);
		attn_flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a, mf);
		return;
	}
	attn_cp_core(o, pass, bwd, d, mf);
}

/* Qwen3-Next's attention output gate (model attn_output_gate;
 * transformers Qwen3NextAttention.forward @ 008e5743: q_proj writes the
 * query and a gate per head, attn_output * torch.sigmoid(gate) before
 * o_proj; Megatron-Core's attention_output_gate the same two PyTorch
 * ops): sigmoid (read and write T q B) and the product (read 2 T q B,
 * write T q B). Backward: the product's two gradients (read 2 T q B,
 * write T q B each) and the sigmoid's (read 2 T q B, write T q B). */
static void out_gate(struct layer_ops *o, enum layer_pass pass, int bwd,
		     const struct layer_dims *d)
{
	double n = layer_tokens(d) * attn_out_width(d), B = d->act_B;

	if (!d->attn_gate || d->mla)
		return;
	if (bwd)
		lop_eager(o, "attn_gate_bwd", pass, 6 * n * B, 3 * n * B, 0, 3,
			  4 * n);
	else
		lop_eager(o, "attn_gate", pass, 3 * n * B, 2 * n * B, n * B, 2,
			  ACT_FLOPS * n);
}

void attn_fwd(struct layer_ops *o, enum layer_pass pass,
	      const struct layer_dims *d, const struct layer_kind *k)
{
	proj_fwd(o, pass, d);
	attn_indexer_fwd(o, pass, d);
	qkv_split_fwd(o, pass, d);
	qk_norm(o, pass, d, k);
	rope_op(o, "rope", pass, d);
	attn_mla_concat(o, pass, d);
	expand_kv(o, "kv_expand", pass, d);
	core(o, pass, 0, d, k);
	out_gate(o, pass, 0, d);
}

/* ---- backward ---- */

static void proj_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct mla_dims *m = &d->mla_d;
	double hq = attn_heads_q(d), ts = layer_sp_tokens(d), h = d->hidden;
	int16_t red;

	if (!d->mla) {
		struct lin_parts p = qkv_parts(d);

		red = lop_column_bwd_parts(o, "qkv_input_allgather",
					   "qkv_grad_cast",
					   "qkv_grad_tp_reduce", &p, d, h,
					   d->lowp);
		lop_bias(o, "qkv_bias_grad", PASS_BWD, d, LAYER_BIAS_ATTN,
			 layer_tokens(d), layer_q_width(d) +
			 2 * layer_kv_width(d));
		lop_norm_bwd_after(o, "norm1_bwd", d, red);
		return;
	}
	lop_tpcoll(o, "k_rope_grad_reduce", PASS_BWD, d,
		   COLL_REDUCESCATTER, d->sp ? layer_tokens(d) * m->rope *
		   d->act_B : 0);
	lop_column_bwd(o, "kv_up_input_allgather", "kv_up_grad_cast",
		       "kv_up_dgrad", "kv_up_grad_tp_reduce", "kv_up_wgrad", d,
		       hq * (m->nope + m->v), m->kv_lora, d->lowp);
	lop_memop(o, "kv_norm_bwd", PASS_BWD, 3 * ts * m->kv_lora * d->act_B,
		  ts * m->kv_lora * d->act_B, NORM_FLOPS * ts * m->kv_lora);
	lop_norm_grad_add(o, d, m->kv_lora, 1);
	if (m->q_lora > 0) {
		lop_column_bwd(o, "q_up_input_allgather", "q_up_grad_cast",
			       "q_up_dgrad", "q_up_grad_tp_reduce", "q_up_wgrad",
			       d, hq * (m->nope + m->rope), m->q_lora, d->lowp);
		lop_memop(o, "q_norm_bwd", PASS_BWD,
			  3 * ts * m->q_lora * d->act_B,
			  ts * m->q_lora * d->act_B, NORM_FLOPS * ts * m->q_lora);
		lop_norm_grad_add(o, d, m->q_lora, 1);
		lop_swizzle(o, PASS_BWD, d, d->lowp, h * m->q_lora,
			    ts * m->q_lora, 1, 1);
		lop_gemm(o, "q_down_dgrad", PASS_BWD, ts, h, m->q_lora, d->lowp);
		lop_swizzle(o, PASS_BWD, d, d->lowp, 0, ts * (h + m->q_lora), 2,
			    1);
		lop_wgrad(o, "q_down_wgrad", h, m->q_lora, ts, d->lowp);
		lop_accumulate(o, d, h * m->q_lora);
	} else {
		lop_column_bwd(o, "q_input_allgather", "q_grad_cast", "q_dgrad",
			       "q_grad_tp_reduce", "q_wgrad", d,
			       hq * (m->nope + m->rope), h, d->lowp);
	}
	lop_swizzle(o, PASS_BWD, d, d->lowp, h * (m->kv_lora + m->rope),
		    ts * (m->kv_lora + m->rope), 1, 1);
	lop_gemm(o, "kv_down_dgrad", PASS_BWD, ts, h, m->kv_lora + m->rope,
		 d->lowp);
	lop_swizzle(o, PASS_BWD, d, d->lowp, 0,
		    ts * (h + m->kv_lora + m->rope), 2, 1);
	lop_wgrad(o, "kv_down_wgrad", h, m->kv_lora + m->rope, ts, d->lowp);
	lop_accumulate(o, d, h * (m->kv_lora + m->rope));
	lop_norm_bwd(o, "norm1_bwd", d);
	lop_norm_grad_add(o, d, d->hidden, 1);
}

/* Megatron-Core recomputes MLA's up projections and RoPE
 * (CheckpointWithoutOutput, multi_latent_attention.py) when the core's
 * output gradient arrives, so before the core's own recomputation and
 * backward; a checkpointed core re-runs its forward after them. */
void attn_bwd(struct layer_ops *o, unsigned mods, const struct layer_dims *d,
	      const struct layer_kind *k)
{
	if (d->mla && (mods & 1u << RCM_MLA_UP_PROJ)) {
		attn_mla_up_fwd(o, PASS_RECOMPUTE, d);
		rope_op(o, "rope", PASS_RECOMPUTE, d);
	}
	out_gate(o, PASS_BWD, 1, d);
	if (mods & 1u << RCM_CORE_ATTN)
		core(o, PASS_RECOMPUTE, 0, d, k);
	core(o, PASS_BWD, 1, d, k);
	expand_kv(o, "kv_expand_bwd", PASS_BWD, d);
	rope_op(o, "rope_bwd", PASS_BWD, d);
	attn_mla_concat(o, PASS_BWD, d);
	qk_norm(o, PASS_BWD, d, k);
	qkv_split_bwd(o, d);
	attn_indexer_bwd(o, d);
	proj_bwd(o, d);
}

double attn_params(const struct layer_dims *d, int bias)
{
	const struct mla_dims *m = &d->mla_d;
	double h = d->hidden, a = d->heads;
	double qkv, out;

	if (!d->mla) {	/* the output gate: a second query-sized output */
		qkv = ((d->attn_gate ? 2 : 1) * d->heads + 2 * d->kv_heads) *
		      d->head_dim;
		out = d->heads * d->head_dim;
		return h * qkv + out * h + (bias ? qkv + h : 0);
	}
	qkv = (m->q_lora > 0 ? h * m->q_lora + m->q_lora +
	       m->q_lora * a * (m->nope + m->rope) :
	       h * a * (m->nope + m->rope)) +
	      h * (m->kv_lora + m->rope) + m->kv_lora +
	      m->kv_lora * a * (m->nope + m->v) + attn_indexer_params(m, h);
	return qkv + a * m->v * h + (bias ? h : 0);
}
