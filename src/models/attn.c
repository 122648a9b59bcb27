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
 * model, gpu_attention.c, costs each), by context-parallel method
 * (TransformerEngine's implementations, Megatron --cp-comm-type):
 *
 *   none     one causal call, q = kv = s (a window w: each query sees
 *            min(position, w) keys)
 *   p2p      ring of cp steps. With load balancing each sequence is cut
 *            in 2 cp chunks of c = s/2 and rank r holds chunks r and
 *            2cp-1-r: step 0 is causal over its own 2c tokens; each
 *            later step an unmasked half block (2c queries x c keys, or
 *            c x 2c), so every rank does the same work. While step i
 *            computes, the K/V block of step i+1 moves to the next rank
 *            of the CP ring (a send/recv on the cp stream, s (k + v) B),
 *            so a step's transfer hides behind the previous step's
 *            compute when it is shorter. The partial outputs are merged
 *            with their log-sum-exps after the last step (attn_cp.c).
 *            Backward: the same blocks, each step passing K/V and the
 *            accumulated dK/dV on (twice the bytes), and a last
 *            transfer returns dK/dV to their owner. Without load
 *            balancing the slowest rank (the last) does a causal step and
 *            cp - 1 full s x s blocks; symmetric simulation models it.
 *   all_gather  K and V all-gathered over CP (S (k + v) B), then one
 *            causal call per local chunk against the keys up to it: c x c
 *            and c x 2cp c on rank 0 (every rank the same total); the
 *            backward re-gathers K/V and reduce-scatters dK/dV.
 *   a2a      (Ulysses) Q, K, V all-to-all over CP (each rank sends its
 *            s (q + 2 kv) B), attention over the whole sequence S with
 *            a/(t cp) heads, the output all-to-all back (s q B); the
 *            backward mirrors it.
 *   a2a+p2p  a2a inside groups of cp_a2a ranks (the heads / cp_a2a, the
 *            sequence cp_a2a s), a p2p ring over the cp / cp_a2a groups.
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
#include "layer_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* Heads of Q on one GPU, and per-head widths. */
static double heads_q(const struct layer_dims *d)
{
	return d->heads / d->tp;
}

static double dim_qk(const struct layer_dims *d)
{
	return d->mla ? d->mla_d.nope + d->mla_d.rope : d->head_dim;
}

/* K/V heads on one GPU: MLA expands one per query head. */
static double heads_kv(const struct layer_dims *d)
{
	return d->mla ? heads_q(d) : layer_kv_heads_local(d);
}

/* Bytes per token of this GPU's K and V. */
static double kv_B(const struct layer_dims *d)
{
	return heads_kv(d) * (dim_qk(d) + layer_v_dim(d)) * d->act_B;
}

double attn_out_width(const struct layer_dims *d)
{
	return heads_q(d) * layer_v_dim(d);
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
		n = layer_tokens(d) * (heads_q(d) + 1) * d->mla_d.rope;
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
		lop_bias(o, "qkv_bias", pass, d, t, layer_q_width(d) +
			 2 * layer_kv_width(d));
		return;
	}
	attn_mla_down_fwd(o, pass, d);
	attn_mla_up_fwd(o, pass, d);
}

/* ---- the core ---- */

static void shape(const struct layer_dims *d, double batch, double heads,
		  double sq, double skv, int causal, double window,
		  struct gpu_attn_shape *a)
{
	memset(a, 0, sizeof(*a));	/* padding too: shapes are compared whole */
	a->batch = batch;
	a->heads_q = heads;
	a->heads_kv = heads * heads_kv(d) / heads_q(d);
	a->seq_q = sq;
	a->seq_kv = skv;
	a->head_dim_qk = dim_qk(d);
	a->head_dim_v = layer_v_dim(d);
	a->causal = causal;
	a->window = window;
	a->kernel = d->attn_kernel;
	a->fp8 = d->fp8_attn;
	a->mx = d->mx_attn_quant;	/* MXFP8 fused attention */
}

/* One flash call; model_flops 0: counted from its shape. A backward with
 * unequal query/key and value head dims (MLA) runs the framework's
 * attention_mla_bwd_kernel family. */
static struct layer_op *flash(const struct layer_dims *d,
			      struct layer_ops *o, const char *name,
			      enum layer_pass pass, int bwd,
			      const struct gpu_attn_shape *a, double model_flops)
{
	struct layer_op *op = lop_push(o, name, LOP_KERNEL, pass);

	op->k.kind = bwd ? KERN_ATTN_BWD : KERN_ATTN_FWD;
	op->k.attn = *a;
	if (bwd && a->head_dim_qk != a->head_dim_v)
		op->k.attn.kernel = d->attn_kernel_mla_bwd;
	op->k.model_flops = model_flops;
	op->host = HOST_MODULE;	/* Transformer Engine's DotProductAttention */
	return op;
}

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
	double f = 4 * d->batch * heads_q(d) * pairs * (d->seq / S) *
		   (dim_qk(d) + layer_v_dim(d)) / 2;

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
	const char *name = bwd ? "attn_bwd" : "attn";
	struct gpu_attn_shape a;

	shape(d, d->batch * n, heads_q(d), C, C, 1, k->window, &a);
	flash(d, o, name, pass, bwd, &a, pair_model_flops(d, n * causal_pairs(C,
	      k->window), bwd));
	if (r <= 0)
		return;
	shape(d, d->batch, heads_q(d), r, r, 1, k->window, &a);
	flash(d, o, name, pass, bwd, &a, pair_model_flops(d, causal_pairs(r,
	      k->window), bwd));
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

	score_gemm(o, "scores", pass, d, d->seq, d->seq, dim_qk(d),
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
	double s = d->seq, dq = dim_qk(d), dv = layer_v_dim(d);

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

/* The ring of one p2p method over `ring` ranks of ring_group, each
 * holding `seq` query tokens (a2a+p2p: the inner group's gathered
 * sequence) of `heads` heads. Forward: transfer i (after the one before
 * it: a rank forwards the block it received) brings the block of step
 * i + 1; step i waits for the block of transfer i - 1. Backward: each
 * transfer also carries the dK/dV accumulated so far (the first K/V
 * only, the last dK/dV only), added (a memory-bound op) once the step's
 * own gradients are computed. Transformer Engine's copies and output
 * corrections around the steps: attn_cp.c. */
static void ring(struct layer_ops *o, enum layer_pass pass, int bwd,
		 const struct layer_dims *d, enum layout_group ring_group,
		 double ring, double seq, double heads, double model_flops)
{
	double c = seq / 2, kv = d->batch * seq * kv_B(d) * heads / heads_q(d);
	double rows = d->batch * seq * heads;
	int lb = d->cpd.load_balance, i, steps = (int)ring;
	struct gpu_attn_shape a;
	int16_t in = attn_cp_ring_start(o, pass, bwd, kv);
	int16_t deliver = LAYER_NONE, last = in, acc = LAYER_NONE, comm;
	const char *name = bwd ? "attn_bwd" : "attn";
	struct layer_op *op;

	for (i = 0; i < steps; i++) {
		comm = LAYER_NONE;
		if (i + 1 < steps || bwd) {
			op = lop_coll(o, bwd ? "cp_kv_dkv_sendrecv" :
				      "cp_kv_sendrecv", pass, ring_group, LS_CP,
				      COLL_SENDRECV, bwd && i > 0 &&
				      i + 1 < steps ? 2 * kv : kv);
			op->p2p_next = 1;
			op->dep[0] = deliver == LAYER_NONE ? in : deliver;
			op->dep[1] = acc;
			comm = lop_tail(o);
		}
		if (i == 0)
			shape(d, d->batch, heads, seq, seq, 1, 0, &a);
		else if (lb)
			shape(d, d->batch, heads, c, 2 * c, 0, 0, &a);
		else
			shape(d, d->batch, heads, seq, seq, 0, 0, &a);
		op = flash(d, o, name, pass, bwd, &a, i == 0 ? model_flops : -1);
		if (i > 0)	/* the ring's later steps: calls inside it */
			op->host = HOST_OP;
		op->dep[0] = last;
		op->dep[1] = deliver;
		last = lop_tail(o);
		if (bwd) {	/* dQ, then this step's dK/dV into the sum */
			attn_cp_dq_acc(o, pass, d, i == 0,
				       rows * dim_qk(d) * d->act_B);
			op = lop_memop(o, "cp_dkv_add", pass, 2 * kv, kv,
				       kv / d->act_B);
			op->k.launches = 2;	/* dk.add_, dv.add_ */
			op->host_n = 2;
			op->dep[1] = deliver;
			acc = last = lop_tail(o);
		}
		deliver = comm;
	}
	if (bwd)	/* the last transfer brings this rank's dK/dV home */
		lop_memop(o, "cp_dkv_done", pass, kv, kv, 0)->dep[1] = deliver;
	else
		attn_cp_out_correct(o, pass, d, ring,
				    rows * layer_v_dim(d) * d->act_B,
				    rows * dtype_bytes(DTYPE_FP32));
}

/* All-gather of K/V, then one call per local chunk (rank 0's). */
static void all_gather(struct layer_ops *o, enum layer_pass pass, int bwd,
		       const struct layer_dims *d, double model_flops)
{
	double cp = d->cpd.cp, s = d->seq, c = s / 2;
	double kv_total = cp * s * d->batch * kv_B(d);
	struct gpu_attn_shape a;

	lop_coll(o, "cp_kv_allgather", pass, LG_CP, LS_CP, COLL_ALLGATHER,
		 kv_total);
	if (d->cpd.load_balance) {
		shape(d, d->batch, heads_q(d), c, c, 1, 0, &a);
		flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a, model_flops);
		shape(d, d->batch, heads_q(d), c, 2 * cp * c, 1, 0, &a);
		flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a, -1);
	} else {	/* the last rank, the slowest: all keys */
		shape(d, d->batch, heads_q(d), s, cp * s, 1, 0, &a);
		flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a, model_flops);
	}
	if (bwd)
		lop_coll(o, "cp_dkv_reducescatter", pass, LG_CP, LS_CP,
			 COLL_REDUCESCATTER, kv_total);
}

/* Ulysses all-to-all over `inner` ranks of group g around the core;
 * a2a+p2p runs the ring over the rest. */
static void a2a(struct layer_ops *o, enum layer_pass pass, int bwd,
		const struct layer_dims *d, double model_flops)
{
	double inner = d->cpd.a2a, heads = heads_q(d) / inner;
	double tok = d->batch * d->seq;
	double qkv_B = tok * (layer_q_width(d) * (d->mla ? dim_qk(d) /
			d->head_dim : 1) * d->act_B + kv_B(d));
	double o_B = tok * attn_out_width(d) * d->act_B;
	enum layout_group g = inner == d->cpd.cp ? LG_CP : LG_CP_A2A;
	double outer = d->cpd.cp / inner;
	struct gpu_attn_shape a;

	lop_coll(o, bwd ? "cp_dout_a2a" : "cp_qkv_a2a", pass, g, LS_CP,
		 COLL_ALLTOALL, bwd ? o_B : qkv_B);
	if (outer > 1) {
		ring(o, pass, bwd, d, LG_CP_RING, outer, d->seq * inner, heads,
		     model_flops);
	} else {
		shape(d, d->batch, heads, d->seq * inner, d->seq * inner, 1, 0,
		      &a);
		flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a, model_flops);
	}
	lop_coll(o, bwd ? "cp_dqkv_a2a" : "cp_out_a2a", pass, g, LS_CP,
		 COLL_ALLTOALL, bwd ? qkv_B : o_B);
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

/* PyTorch's context parallelism of SDPA (framework cp_torch_sdpa):
 * torch.distributed.tensor.experimental.context_parallel routes
 * aten._scaled_dot_product_flash_attention and its backward to
 * _templated_ring_attention(_backward) (pytorch/pytorch torch/
 * distributed/tensor/experimental/_attention.py, read @ 0123248a; the
 * same structure in the 2024-12 nightlies torchtitan's tables ran [?]).
 * It sees K and V as the model passes them to SDPA: torchtitan's
 * repeat_kv has expanded them to every query head (elementwise.
 * expand_kv), so kv below is that width. Forward: every step but the
 * last copies K and V into one buffer (torch.cat of the flattened
 * tensors); the all_gather rotater gathers it once (cp_comm_type
 * all_gather), the p2p one passes it to the next rank each step; step 0
 * is the causal local block, later steps one non-causal SDPA on half the
 * keys or half the queries (load balance); each later step's output and
 * log-sum-exp are merged by _SDPAMerger in fp32 (out.to(fp32), lse.to,
 * out - sigmoid(block_lse - lse) (out - block_out), lse -
 * logsigmoid(lse - block_lse): about ten kernels, on half the queries
 * then a torch.cat of the whole out and lse (_partial_update) on the
 * steps past the rank's own index, on average half), and the result is
 * cast back. Backward: dQ, dK, dV zero-filled in fp32; K/V gathered (or
 * passed) again; each step's SDPA backward gradients added into the
 * fp32 sums (a torch.cat for the partial halves), dK/dV concatenated and
 * passed to the next rank in fp32 by an all-to-all permute, the next
 * step's add waiting for it; at the end dQ and the dK/dV that arrive
 * are cast back. */
static void torch_cp(struct layer_ops *o, enum layer_pass pass, int bwd,
		     const struct layer_dims *d, double model_flops)
{
	double cp = d->cpd.cp, s = d->seq, c = s / 2, A = d->act_B;
	double hk = d->expand_kv && !d->mla ? heads_q(d) : heads_kv(d);
	double kv_el = d->batch * s * hk * (dim_qk(d) + layer_v_dim(d));
	double Q = d->batch * s * heads_q(d) * dim_qk(d);
	double O = d->batch * s * heads_q(d) * layer_v_dim(d);
	int lb = d->cpd.load_balance, ag = d->cpd.comm == CP_ALLGATHER;
	int i, steps = (int)cp;
	const char *name = bwd ? "attn_bwd" : "attn";
	int16_t in = lop_tail(o), last, kv_ready = in, dkv = LAYER_NONE;
	struct gpu_attn_shape a;
	struct layer_op *op;

	if (bwd) {	/* grad_query, grad_key, grad_value: zeros_like, fp32 */
		op = lop_memop(o, "cp_grad_zero", pass, 0, 4 * (Q + kv_el), 0);
		op->k.launches = 3;
		op->host_n = 3;
	}
	op = lop_memop(o, "cp_kv_cat", pass, (cp - 1) * kv_el * A,
		       (cp - 1) * kv_el * A, 0);
	op->k.launches = (int)(cp - 1);
	op->host_n = (uint16_t)(cp - 1);
	if (ag) {
		lop_coll(o, "cp_kv_allgather", pass, LG_CP, LS_CP,
			 COLL_ALLGATHER, cp * kv_el * A);
		kv_ready = lop_tail(o);
	}
	last = lop_tail(o);
	for (i = 0; i < steps; i++) {
		if (!ag && i > 0) {	/* the block of the rank before */
			op = lop_coll(o, "cp_kv_sendrecv", pass, LG_CP, LS_CP,
				      COLL_SENDRECV, kv_el * A);
			op->p2p_next = 1;
			op->dep[0] = kv_ready;
			kv_ready = lop_tail(o);
		}
		if (i == 0)
			shape(d, d->batch, heads_q(d), s, s, 1, 0, &a);
		else if (lb)
			shape(d, d->batch, heads_q(d), c, 2 * c, 0, 0, &a);
		else
			shape(d, d->batch, heads_q(d), s, s, 0, 0, &a);
		op = flash(d, o, name, pass, bwd, &a, i == 0 ? model_flops : -1);
		op->host = HOST_OP;
		op->dep[0] = last;
		op->dep[1] = kv_ready;
		last = lop_tail(o);
		if (!bwd) {
			if (i == 0)
				continue;
			/* full merge: reads O A + 20 O, writes 16 O; a
			 * partial one half that and a cat of out (4 O) */
			op = lop_memop(o, "cp_sdpa_merge", pass,
				       0.75 * (O * A + 20 * O) + 2 * O,
				       0.75 * 16 * O + 2 * O, 3 * O);
			op->k.launches = 11;
			op->host_n = 11;
			last = lop_tail(o);
			continue;
		}
		/* dK/dV and dQ into the fp32 sums (+= of the bf16 step
		 * gradients; the partial half's cat on average half the
		 * steps), after the sum from the rank before arrived */
		op = lop_memop(o, "cp_grad_accum", pass,
			       (4 + A) * (Q + kv_el) + (i > 0 ? 2 * (Q + kv_el) : 0),
			       4 * (Q + kv_el) + (i > 0 ? 2 * (Q + kv_el) : 0),
			       Q + kv_el);
		op->k.launches = i > 0 ? 4 : 3;
		op->host_n = (uint16_t)op->k.launches;
		op->dep[1] = dkv;
		last = lop_tail(o);
		/* cat(dK, dV) in fp32, then the permute to the next rank */
		lop_memop(o, "cp_dkv_cat", pass, 4 * kv_el, 4 * kv_el, 0);
		op = lop_coll(o, "cp_dkv_sendrecv", pass, LG_CP, LS_CP,
			      COLL_SENDRECV, 4 * kv_el);
		op->p2p_next = 1;
		dkv = lop_tail(o);
		/* the next step's SDPA does not wait for the permute */
	}
	if (bwd) {	/* dQ and the arriving dK/dV back to bf16 */
		op = lop_memop(o, "cp_grad_cast", pass, 4 * (Q + kv_el),
			       A * (Q + kv_el), 0);
		op->k.launches = 2;
		op->host_n = 2;
		op->dep[0] = last;
		op->dep[1] = dkv;
	} else {
		op = lop_memop(o, "cp_out_cast", pass, 4 * O, A * O, 0);
		op->k.launches = 2;
		op->host_n = 2;
	}
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
		shape(d, d->batch, heads_q(d), d->seq, d->seq, 1, window, &a);
		mx_attn_quant(o, pass, bwd, d, &a);
		cs_attn_quant(o, pass, bwd, d, &a);
		flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a, mf);
		return;
	}
	if (d->cpd.torch) {
		torch_cp(o, pass, bwd, d, mf);
		return;
	}
	switch (d->cpd.comm) {
	case CP_P2P:
		ring(o, pass, bwd, d, LG_CP, d->cpd.cp, d->seq, heads_q(d), mf);
		return;
	case CP_ALLGATHER:
		all_gather(o, pass, bwd, d, mf);
		return;
	default:
		a2a(o, pass, bwd, d, mf);
		return;
	}
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
	double hq = heads_q(d), ts = layer_sp_tokens(d), h = d->hidden;
	int16_t red;

	if (!d->mla) {
		struct lin_parts p = qkv_parts(d);

		red = lop_column_bwd_parts(o, "qkv_input_allgather",
					   "qkv_grad_cast",
					   "qkv_grad_tp_reduce", &p, d, h,
					   d->lowp);
		lop_bias(o, "qkv_bias_grad", PASS_BWD, d, layer_tokens(d),
			 layer_q_width(d) + 2 * layer_kv_width(d));
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
	if (m->q_lora > 0) {
		lop_column_bwd(o, "q_up_input_allgather", "q_up_grad_cast",
			       "q_up_dgrad", "q_up_grad_tp_reduce", "q_up_wgrad",
			       d, hq * (m->nope + m->rope), m->q_lora, d->lowp);
		lop_memop(o, "q_norm_bwd", PASS_BWD,
			  3 * ts * m->q_lora * d->act_B,
			  ts * m->q_lora * d->act_B, NORM_FLOPS * ts * m->q_lora);
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
