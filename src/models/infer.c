/*
 * infer.c - the ops of an inference step on one GPU.
 *
 * Notation (one GPU of a TP group of t): a step computes T = sum count q
 * tokens of its sequence groups and scores S = sum count sampled rows in
 * the LM head; width h, a query heads and g KV heads of dimension d
 * (local: a/t, and g/t or 1 when t > g), MLP hidden f (f' = f/t), padded
 * vocabulary V. Dtypes: weights W bytes per element (block scales
 * included), GEMM inputs A bytes (the compute dtype), everything else B
 * (bf16), KV cache K bytes.
 *
 * A layer, as vLLM's LlamaDecoderLayer (SGLang's and TensorRT-LLM's
 * PyTorch models alike) runs it:
 *
 *   norm      memory  fused residual add + RMSNorm, read 2 T h B, write
 *                     T h B + T h A (the residual, the normed input); the
 *                     first layer of a model has no residual to add yet,
 *                     costed alike (T h B more than it reads, once per
 *                     stage, so that every layer is the same)
 *   qkv       GEMM    (T, (a + 2g) d / t, h), weights cold (gpu_gemm_q)
 *   temperature (a layer with attention temperature tuning, Llama 4's
 *             NoPE layers, and an engine with attn_temperature eager):
 *             ten memory-bound kernels on the positions and q, then q,
 *             k, v concatenated again (infer_ops.c)
 *   rope+cache memory read T (a + g) d/t B, write the same rotated and
 *                     the new K and V into the cache, T 2 g d/t K
 *   attention prefill groups: one varlen flash kernel over their chunks
 *                     and cached prefixes; decode groups: one split-KV
 *                     kernel (gpu_attn_infer.c); on a chunked layer
 *                     (Llama 4) each group split at the chunk edges,
 *                     its queries seeing the keys of their own chunk
 *                     (infer_chunk_groups)
 *   o_proj    GEMM    (T, h, a d / t)
 *   all-reduce T h B over TP
 *   norm      fused add + RMSNorm as above
 *   gate_up   GEMM    (T, 2 f', h)      (up only, (T, f', h), ungated)
 *   act       memory  SiLU-and-mul: read T 2 f' B, write T f' A
 *   down      GEMM    (T, h, f')
 *   all-reduce T h B over TP
 *
 * GEMM inputs narrower than 16 bits (A < B) are written by the kernel
 * before the GEMM when the engine fuses the quantization into it
 * (engine quant_fusion: norm_act, the RMSNorms and the SiLU-mul, as
 * vLLM V1's compiled graphs do; all, the attention output too, as
 * TensorRT-LLM's attention does); otherwise that kernel writes B and a
 * quantization kernel of its own (read T x B, write T x A) runs before
 * the GEMM (vLLM V0 and SGLang without torch.compile: before each of the
 * four GEMMs of a layer). The engine may narrow that fusion (TensorRT-
 * LLM): with norm_quant tp_allreduce a layer norm writes the quantized
 * QKV or gate/up input only when it runs inside the TP all-reduce (TP >
 * 1, no attention DP, hidden > norm_quant_hidden, a step's T h B within
 * norm_quant_ar_max), else 16 bits and a quantization kernel follows;
 * with act_quant per_tensor the SiLU-mul writes per-tensor FP8 itself
 * but a block-scaled (NVFP4, MX) input takes a quantization kernel.
 * The norm before an MoE layer whose fused MoE quantizes its own input
 * (moe_kernels cutlass) writes 16 bits: the router reads them, and a
 * shared expert quantizes them in a kernel of its own (infer_moe.c).
 * The last layer's residual add is fused into the final norm.
 *
 * MLA (DeepSeek V2/V3; q_lora rank r_q, kv_lora rank r, rotary width
 * d_r, per-head non-rotary width d_n and value width d_v), as vLLM's and
 * SGLang's MLA backends run it:
 *
 *   q_a    GEMM (T, r_q, h), norm; q_b GEMM (T, a/t (d_n + d_r), r_q)
 *          (or q GEMM (T, a/t (d_n + d_r), h) without r_q)
 *   kv_a   GEMM (T, r + d_r, h) (replicated over TP), norm, rope, cache
 *          write T (r + d_r) K
 *   decode (absorbed): q_nope into the latent, a/t GEMMs (T_d, r, d_n);
 *          attention with a/t query heads on one latent "head" of width
 *          r + d_r, values its first r elements; out of the latent, a/t
 *          GEMMs (T_d, d_v, r)
 *   prefill: kv_b GEMM (C, a/t (d_n + d_v), r) over the C = sum count kv
 *          keys of the prompt groups (their cached prefix decompressed
 *          again), then flash attention of head dims d_n + d_r and d_v
 *   o_proj GEMM (T, h, a/t d_v), all-reduce
 *
 * Embedding (first stage): the rows of T tokens, read T h B write T h B,
 * then an all-reduce of T h B over TP (vocabulary-parallel table).
 * Head (last stage): final norm (fused add) over T, the S sampled rows
 * gathered (read and write S h B), logits GEMM (S, V/t, h) with bf16
 * weights (engines keep the LM head unquantized), an all-gather of the S
 * V B logits over TP, then sampling: logits to fp32 (read S V B, write
 * S V 4) and engine sampler_passes kernels over them (the first reads
 * S V 4, each further one reads and writes S V 4), and sampler_copies
 * launch-bound host-device copies (parameter tensors up, sampled ids
 * down). vLLM V0 launches these after the graph replay, not in it, but
 * while the GPU still runs the graph: they wait in the stream and cost
 * what replayed kernels cost (kernel_launch_graph), not a host launch.
 *
 * Parameters per GPU: a layer holds h (a + 2g) d / t + a d h / t +
 * (2 or 3) h f / t weights in W and 2 h norm weights in B; the
 * embedding and LM head V h / t each in B (tied: one table).
 *
 * KV bytes per token per layer on one GPU: 2 (g/t) d K (Llama 3 70B bf16,
 * t = 1: 2 x 8 x 128 x 2 = 4096 B; x 80 layers = 327,680 B a token); MLA:
 * (r + d_r) K on every TP rank.
 */
#include "infer_impl.h"

#include <math.h>

#include "base/diag.h"
#include "config/spec_job.h"
#include "layer.h"

/* ---- batches ---- */

double infer_batch_tokens(const struct infer_batch *b)
{
	double t = 0;
	int i;

	for (i = 0; i < b->n; i++)
		t += b->g[i].count * b->g[i].q;
	return t;
}

double infer_batch_sampled(const struct infer_batch *b)
{
	double s = 0;
	int i;

	for (i = 0; i < b->n; i++)
		s += b->g[i].count * b->g[i].sampled;
	return s;
}

double infer_batch_seqs(const struct infer_batch *b)
{
	double s = 0;
	int i;

	for (i = 0; i < b->n; i++)
		s += b->g[i].count;
	return s;
}

int infer_batch_decode_only(const struct infer_batch *b)
{
	int i;

	for (i = 0; i < b->n; i++)
		if (b->g[i].prefill && b->g[i].count > 0)
			return 0;
	return 1;
}

int infer_batch_add(struct infer_batch *b, double count, double q,
		    double ctx, int prefill, double sampled)
{
	int i;

	if (count <= 0)
		return 0;
	for (i = 0; i < b->n; i++) {
		struct infer_seqs *s = &b->g[i];

		if (s->q == q && s->ctx == ctx && s->prefill == prefill &&
		    s->sampled == sampled && !s->pad) {
			s->count += count;
			return 0;
		}
	}
	if (b->n >= INFER_MAX_GROUPS)
		return -1;
	b->g[b->n++] = (struct infer_seqs){count, q, ctx, prefill, sampled, 0, 0};
	return 0;
}

/* ---- the op list ---- */

#define gemm infer_op_gemm

/* An attention input projection's GEMM (base-dtype weights when the
 * checkpoint excludes them from quantization), and the output
 * projection's, which a checkpoint can quantize apart (QX_ATTN_OUT:
 * nvidia/DeepSeek-R1-FP4-v2 "additionally quantizes the wo module in
 * attention layers" over nvidia/DeepSeek-R1-FP4, whose attention is all
 * bf16). */
#define agemm(o, d, ...) infer_op_gemm_q(o, d, QX_ATTN, __VA_ARGS__)
#define ogemm(o, d, ...) infer_op_gemm_q(o, d, QX_ATTN_OUT, __VA_ARGS__)

static void memop(struct infer_ops *o, const char *name, double read_B,
		  double write_B, double flops)
{
	infer_op_mem(o, name, read_B, write_B, flops);
}

static void tpcoll(struct infer_ops *o, const struct infer_dims *d,
		   const char *name, enum coll_op c, double bytes)
{
	infer_op_coll(o, name, IOP_TP, d->tp, c, bytes);
}

static void attention(struct infer_ops *o, const struct infer_dims *d,
		      const struct infer_batch *b)
{
	struct infer_op *op;
	int i, pre = 0, dec = 0;

	for (i = 0; i < b->n; i++) {
		if (b->g[i].count <= 0 || b->g[i].q <= 0 || b->g[i].pad)
			continue;
		if (b->g[i].prefill)
			pre = 1;
		else
			dec = 1;
	}
	if (pre) {
		op = infer_op_push(o, "attn_prefill", IOP_KERNEL);
		op->kern = IK_ATTN_PREFILL;
		op->attention = 1;
		op->mixed = dec && d->mixed_rows > 0;
	}
	if (dec && !(pre && d->mixed_rows > 0)) {
		op = infer_op_push(o, "attn_decode", IOP_KERNEL);
		op->kern = IK_ATTN_DECODE;
		op->attention = 1;
	}
}

/* Tokens of the decoding (and prompt) groups, and keys of the prompts. */
static void split_tokens(const struct infer_batch *b, double *t_dec,
			 double *kv_pre)
{
	int i;

	*t_dec = *kv_pre = 0;
	for (i = 0; i < b->n; i++) {
		if (b->g[i].pad)
			continue;
		if (b->g[i].prefill)
			*kv_pre += b->g[i].count * (b->g[i].ctx + b->g[i].q);
		else
			*t_dec += b->g[i].count * b->g[i].q;
	}
}

#define quant_apart infer_quant_apart
#define quant infer_op_quant

/* B per element a GEMM-input producer of fusion level `level` writes. */
static double out_B(const struct infer_dims *d, int level)
{
	return quant_apart(d, level) ? d->act_B : d->gemm_a_B;
}

/* Whether the output of a layer norm (dense: `layer_norm`) over t
 * tokens feeding quantized GEMMs takes a kernel of its own (the
 * SiLU-mul's: infer_act_quant_apart): past the engine's fusion
 * workspace the TP all-reduce before it runs apart, and so do the norm
 * and the quantization (quant_rules). */
static int norm_apart(const struct infer_dims *d, int layer_norm, double t)
{
	int ar_apart = d->norm_quant_max_B > 0 &&
		       t * d->hidden * d->act_B > d->norm_quant_max_B;

	return quant_apart(d, ENGINE_QFUSE_NORM_ACT) ||
	       (layer_norm && (d->norm_quant_apart || ar_apart) &&
		d->gemm_a_B < d->act_B);
}

/* A fused add + RMSNorm; `layer_norm`: its output feeds the QKV or the
 * dense MLP's gate/up GEMM (not an MoE layer). `wide`: its consumers
 * quantize it themselves (an MoE layer under moe_kernels cutlass: the
 * router reads it in 16 bits, the fused MoE quantizes it, moe_quant, and
 * so does a shared expert; or they are GEMMs the checkpoint keeps in the
 * base dtype, infer_dims.qexcl), so it writes 16 bits and no kernel
 * follows. */
static void norm(struct infer_ops *o, const struct infer_dims *d,
		 const char *name, double t, int fused_add, int layer_norm,
		 int wide)
{
	int apart = !wide && norm_apart(d, layer_norm, t);
	double n = t * d->hidden;
	double w = apart || wide ? d->act_B : d->gemm_a_B;

	if (fused_add)
		memop(o, name, 2 * n * d->act_B, n * (d->act_B + w),
		      NORM_FLOPS * n);
	else
		memop(o, name, n * d->act_B, n * w, NORM_FLOPS * n);
	if (apart)
		quant(o, d, "quant", n);
}

/* Attention, the output's quantization and o_proj (GQA). */
static void attn_tail(const struct infer_dims *d, const struct infer_batch *b,
		      double t, double q, struct infer_ops *o)
{
	attention(o, d, b);
	/* the output gate, attn_output * sigmoid(gate) (vLLM qwen3_next.py
	 * Qwen3NextAttention): two elementwise kernels, the sigmoid (read
	 * and write T q B) and the product (read 2 T q B, write T q B) */
	if (d->attn_gate) {
		memop(o, "attn_gate_sigmoid", t * q * d->act_B,
		      t * q * d->act_B, ACT_FLOPS * t * q);
		memop(o, "attn_gate_mul", 2 * t * q * d->act_B,
		      t * q * d->act_B, t * q);
	}
	if (quant_apart(d, ENGINE_QFUSE_ALL) && !(d->qexcl & QX_ATTN_OUT))
		quant(o, d, "quant_attn", t * q);
	ogemm(o, d, "o_proj", t, d->hidden, q);
}

/* A model's RMSNorm over each Q and K head (Qwen3's q_norm and k_norm,
 * before the rotary): each reads and writes the T q (T kv) elements, in
 * one kernel in place on Q and K with the engine's qk_norm_rope_fused
 * (TensorRT-LLM's fused_qk_norm_rope, which also applies the rotary, so
 * its attention op does not: the cache-write kernel's bytes stay), else
 * a kernel each (vLLM's Qwen3MoeAttention self.q_norm / self.k_norm). */
static void qk_norm(const struct infer_dims *d, double t, double q,
		    double kv, struct infer_ops *o)
{
	if (!d->qk_norm)
		return;
	if (d->qk_norm_rope_fused) {
		memop(o, "qk_norm_rope", t * (q + kv) * d->act_B,
		      t * (q + kv) * d->act_B,
		      (NORM_FLOPS + ROPE_FLOPS) * t * (q + kv));
		return;
	}
	memop(o, "q_norm", t * q * d->act_B, t * q * d->act_B,
	      NORM_FLOPS * t * q);
	memop(o, "k_norm", t * kv * d->act_B, t * kv * d->act_B,
	      NORM_FLOPS * t * kv);
}

/* QKV, RoPE and the cache write: one kernel (rope_cache), or with the
 * engine's rope_cache_fused off a rotary kernel in place on Q and K and
 * then the cache write, which reads K again (vLLM V0). */
static void attn_gqa(const struct infer_dims *d, const struct infer_batch *b,
		     double t, int temperature, int nope, struct infer_ops *o)
{
	double q = infer_heads_local(d) * d->head_dim;
	double kv = infer_kv_heads_local(d) * d->head_dim;

	/* Qwen3-Next's output gate: q_proj writes the gate too */
	agemm(o, d, "qkv", t, q * (d->attn_gate ? 2 : 1) + 2 * kv, d->hidden);
	if (temperature && d->attn_temp_eager)
		infer_op_attn_temperature(o, d, t, q, kv);
	if (!nope)	/* Llama 4: qk_norm only where use_rope (attn.c) */
		qk_norm(d, t, q, kv, o);
	if (d->rope && d->rope_cache_fused) {
		memop(o, "rope_cache", t * (q + 2 * kv) * d->act_B,
		      t * (q + kv) * d->act_B + t * 2 * kv * d->kv_B,
		      ROPE_FLOPS * t * (q + kv));
	} else {
		if (d->rope)
			memop(o, "rope", t * (q + kv) * d->act_B,
			      t * (q + kv) * d->act_B,
			      ROPE_FLOPS * t * (q + kv));
		memop(o, "cache_write", t * 2 * kv * d->act_B,
		      t * 2 * kv * d->kv_B, 0);
	}
	attn_tail(d, b, t, q, o);
}

/* DeepSeek Sparse Attention's lightning indexer on one GPU (d->
 * index_topk > 0), as deepseek-ai/DeepSeek-V3.2-Exp @ 6d8cb70
 * inference/model.py Indexer.forward runs it and vLLM's DSA path with
 * DeepGEMM's indexer kernels (blog.vllm.ai 2025-09-29 "DeepSeek-V3.2-Exp
 * in vLLM"): replicated over TP, over the step's T tokens, with H_I
 * heads of d_I:
 *   idx_wq   GEMM (T, H_I d_I, r_q) on MLA's normed query latent
 *   idx_wk   GEMM (T, d_I, h), idx_w GEMM (T, H_I, h) (head weights)
 *   idx_prep k's LayerNorm, rotary on q and k, the Hadamard rotation
 *            and fp8 quantization: read T (H_I + 1) d_I B, write q in
 *            fp8 (T H_I d_I) and the key into the indexer cache (T x
 *            index_key_B)
 *   idx_logits  per sequence group, each of its q new tokens against
 *            its keys (ctx + its causal share of the q new): 2 H_I d_I
 *            FLOPs a query-key pair (fp8 dot products, ReLU, the
 *            weighted sum over heads), reading the group's indexer keys
 *            (index_key_B each) and writing one fp32 logit a pair.
 *            Prefill: one GEMM over the prompt tokens (DeepGEMM
 *            fp8_mqa_logits), m = T_p, n the mean keys a query sees, k =
 *            H_I d_I: the kernel sums the heads in registers and writes
 *            one logit a pair, not one a head (its output at the GEMM's
 *            16 bits, not fp32 [?]); decode: a memory op over the cached
 *            keys (fp8_paged_mqa_logits)
 *   idx_topk read the logits, write index_topk int32 indices a query
 * The attention then runs the sparse MLA kernel on the latent for
 * every token, prefill too (absorbed, MQA over r + d_r of which the
 * first r are the values: FlashMLA's flash_mla_sparse_fwd takes q of
 * H heads x 576 and one 576-wide latent KV head): no kv_b
 * decompression, q_absorb and v_absorb over all T tokens, the core's
 * keys a causal window of index_topk (model_layer_window). */
static void indexer_ops(const struct infer_dims *d,
			const struct infer_batch *b, double t,
			struct infer_ops *o)
{
	double hi = d->index_heads, di = d->index_dim, B = d->act_B;
	double q_pre = 0, p_pre = 0, p_dec = 0, keys_dec = 0, top = 0;
	struct infer_op *op;
	int i;

	if (!(d->index_topk > 0))
		return;
	agemm(o, d, "idx_wq", t, hi * di, d->q_lora_rank);
	agemm(o, d, "idx_wk", t, di, d->hidden);
	agemm(o, d, "idx_w", t, hi, d->hidden);
	memop(o, "idx_prep", t * (hi + 1) * di * B,
	      t * hi * di + t * d->index_key_B, NORM_FLOPS * t * di +
	      ROPE_FLOPS * t * (hi + 1) * di);
	for (i = 0; i < b->n; i++) {
		const struct infer_seqs *s = &b->g[i];
		double pairs;

		if (s->count <= 0 || s->q <= 0 || s->pad)
			continue;
		/* each query sees ctx + its causal share of the q new */
		pairs = s->count * s->q * (s->ctx + (s->q + 1) / 2);
		if (s->prefill) {
			q_pre += s->count * s->q;
			p_pre += pairs;
		} else {
			p_dec += pairs;
			keys_dec += s->count * (s->ctx + s->q);
		}
		top += s->count * s->q * fmin(d->index_topk, s->ctx + s->q);
	}
	if (q_pre > 0) {	/* one GEMM: the groups' mean keys a query */
		op = gemm(o, "idx_logits", q_pre, p_pre / q_pre, hi * di);
		op->attention = 1;
	}
	if (p_dec > 0)
		memop(o, "idx_logits_decode", keys_dec * d->index_key_B,
		      p_dec * 4, 2 * hi * di * p_dec);
	memop(o, "idx_topk", (p_pre + p_dec) * 4, top * 4, 0);
}

/* Whether a DSA step's prompt tokens run DeepSeek's masked MHA mode:
 * "for short-sequence prefilling, we specially implement a masked MHA
 * mode to simulate DSA, which can achieve higher efficiency under
 * short-context conditions" (DeepSeek-AI 2025, "DeepSeek-V3.2-Exp",
 * section 3 Inference Costs). That mode is MLA's dense prefill (kv_b
 * decompression of the prompt groups' keys, causal MHA over all of them
 * with head dims d_n + d_r and d_v, the top-k as a mask), the other the
 * sparse kernel on the latent (infer.c indexer_ops). Where the
 * changeover lies is not published: the step takes the mode of fewer
 * FLOPs [?], per prompt token a
 *   sparse  2 a r (d_n + d_v) (absorbing q and v) + 2 a (2 r + d_r) k_q
 *   MHA     2 a r (d_n + d_v) C/T_p (kv_b over the C keys decompressed)
 *           + 2 a (d_n + d_r + d_v) K_q
 * with k_q the top-k keys a query attends to and K_q all its causal
 * keys, summed over the step's prompt groups (DeepSeek-V3.2, a = 128,
 * r = 512, top-k 2048: 33.6 M + 278.5 k k_q against 33.6 M + 81.9 k K_q
 * FLOPs, equal at K_q = 6,963 keys, a fresh prompt of about 13,900
 * tokens). */
static int dsa_prefill_mha(const struct infer_dims *d,
			   const struct infer_batch *b)
{
	double a = infer_heads_local(d), r = d->kv_lora_rank;
	double sparse = 0, mha = 0;
	int i;

	for (i = 0; i < b->n; i++) {
		const struct infer_seqs *s = &b->g[i];
		double keys, top;

		if (!s->prefill || s->count <= 0 || s->q <= 0 || s->pad)
			continue;
		keys = s->count * s->q * (s->ctx + (s->q + 1) / 2);
		top = s->count * s->q * fmin(d->index_topk,
					      s->ctx + (s->q + 1) / 2);
		sparse += 2 * a * r * (d->nope_dim + d->v_head_dim) *
			  s->count * s->q +
			  2 * a * (2 * r + d->rope_dim) * top;
		mha += 2 * a * r * (d->nope_dim + d->v_head_dim) *
		       s->count * (s->ctx + s->q) +
		       2 * a * (d->nope_dim + d->rope_dim + d->v_head_dim) *
		       keys;
	}
	return mha > 0 && mha <= sparse;
}

static void attn_mla(const struct infer_dims *d, const struct infer_batch *b,
		     double t, struct infer_ops *o)
{
	double a = infer_heads_local(d);
	double qw = a * (d->nope_dim + d->rope_dim);
	double lat = d->kv_lora_rank + d->rope_dim, t_dec, kv_pre;
	int excl = (d->qexcl & QX_ATTN) != 0;	/* q_b reads 16 bits */
	int mha, i;
	struct infer_op *op;

	split_tokens(b, &t_dec, &kv_pre);
	mha = d->index_topk > 0 && !(d->dsa_pad_heads > 0) &&
	      dsa_prefill_mha(d, b);
	if (d->index_topk > 0 && !mha) {
		/* DSA: every token absorbed (see indexer_ops) */
		t_dec = t;
		kv_pre = 0;
	}
	if (d->q_lora_rank > 0) {
		agemm(o, d, "q_a", t, d->q_lora_rank, d->hidden);
		memop(o, "q_a_norm", t * d->q_lora_rank * d->act_B,
		      t * d->q_lora_rank * (excl ? d->act_B :
					    out_B(d, ENGINE_QFUSE_NORM_ACT)),
		      NORM_FLOPS * t * d->q_lora_rank);
		if (quant_apart(d, ENGINE_QFUSE_NORM_ACT) && !excl)
			quant(o, d, "quant", t * d->q_lora_rank);
		agemm(o, d, "q_b", t, qw, d->q_lora_rank);
	} else {
		agemm(o, d, "q", t, qw, d->hidden);
	}
	agemm(o, d, "kv_a", t, lat, d->hidden);
	indexer_ops(d, b, t, o);
	memop(o, "kv_norm_rope_cache", t * lat * d->act_B + t * a *
	      d->rope_dim * d->act_B, t * lat * d->kv_B + t * a * d->rope_dim *
	      d->act_B, ROPE_FLOPS * t * lat);
	if (kv_pre > 0) {
		double t_p = t - t_dec;	/* the prompt tokens */

		op = agemm(o, d, "kv_b", kv_pre, a * (d->nope_dim + d->v_head_dim),
			  d->kv_lora_rank);
		op->attention = 1;
		/* The MHA kernel takes Q and K whole, d_n + d_r per head:
		 * the engines write the rotated q_pe back into Q and build K
		 * from kv_b's k_nope (a strided view) and the one rotated
		 * k_pe broadcast over the heads, for the T_p prompt tokens
		 * and K_p keys (the prompt's, and a cached prefix's
		 * decompressed again):
		 *   read  T_p a d_r e + K_p (a d_n + d_r) e
		 *   write T_p a d_r e + K_p a (d_n + d_r) e
		 * (SGLang forward_normal_prepare: q[..., qk_nope_head_dim:] =
		 * q_pe; k = torch.empty_like(q); k[..., :qk_nope_head_dim] =
		 * k_nope; k[..., qk_nope_head_dim:] = k_pe, the K build again
		 * in _chunked_prefix_attn_mha, sgl-project/sglang @ 00114aef
		 * python/sglang/srt/models/deepseek_v2.py, eager in prefill;
		 * vLLM: q[..., qk_nope_head_dim:], k_pe = self.rotary_emb(...)
		 * in model_executor/layers/mla.py [?: inside its compiled graph,
		 * where Inductor may fold the write-back], and k = torch.cat(
		 * (k_nope, k_pe.expand(...)), dim=-1) in MLACommonImpl's
		 * prefill, v1/attention/backends/mla/common.py). One op for
		 * the two or three copy kernels (their launches are nothing
		 * beside a prompt's bytes). A cached prefix's k_pe is read
		 * from the cache, at kv_B. TensorRT-LLM (engine
		 * mla_q_pe_fused): no write-back (mla_rope_append_paged_kv_
		 * assign_q writes q_pe into Q in the RoPE / cache kernel,
		 * kv_norm_rope_cache above; or the attention op ropes it);
		 * without a cached prefix K gets only k_nope (k_pe roped
		 * inside the attention op from latent_cache), with one the
		 * whole K (cat(k_nope, k_pe.expand)) (NVIDIA/TensorRT-LLM
		 * tensorrt_llm/_torch/modules/attention.py MLA
		 * forward_context_default, forward_context_with_cached_kv,
		 * forward_context_with_chunked_prefill). */
		double pre = kv_pre - t_p > 0 ? kv_pre - t_p : 0,
		       qpe = d->mla_q_pe_fused ? 0 : t_p * a * d->rope_dim *
		       d->act_B, kr = d->rope_dim, kpe;

		if (d->mla_q_pe_fused && pre <= 0)
			kr = 0;
		kpe = kr * ((kv_pre - pre) * d->act_B + pre * d->kv_B);
		memop(o, "qk_assemble", qpe + kv_pre * a * d->nope_dim *
		      d->act_B + kpe, qpe + kv_pre * a * (d->nope_dim + kr) *
		      d->act_B, 0);
	}
	if (t_dec > 0) {
		/* q_nope into the latent: a GEMMs (T_d, r, d_n), on kv_b's
		 * weights (base dtype where the checkpoint keeps kv_b so) */
		op = agemm(o, d, "q_absorb", t_dec, d->kv_lora_rank,
			   d->nope_dim);
		op->batch = a;
		op->attention = 1;
	}
	i = o->n;
	attention(o, d, b);
	for (; mha && i < o->n; i++)
		if (o->op[i].kern == IK_ATTN_PREFILL)
			o->op[i].dense_mha = 1;
	if (t_dec > 0) {
		/* out of the latent: a GEMMs (T_d, d_v, r), kv_b's too */
		op = agemm(o, d, "v_absorb", t_dec, d->v_head_dim,
			   d->kv_lora_rank);
		op->batch = a;
		op->attention = 1;
	}
	if (quant_apart(d, ENGINE_QFUSE_ALL) && !(d->qexcl & QX_ATTN_OUT))
		quant(o, d, "quant_attn", t * a * d->v_head_dim);
	ogemm(o, d, "o_proj", t, d->hidden, a * d->v_head_dim);
}

static void mlp(const struct infer_dims *d, double t, struct infer_ops *o)
{
	double f = d->ffn / d->tp, u = (d->gated ? 2 : 1) * f;
	int excl = (d->qexcl & QX_MLP) != 0;
	int apart = infer_act_quant_apart(d) && !excl;

	infer_op_gemm_q(o, d, QX_MLP, d->gated ? "gate_up" : "up", t, u,
			d->hidden);
	memop(o, d->gated ? "silu_mul" : "act", t * u * d->act_B,
	      t * f * (apart || excl ? d->act_B : d->gemm_a_B),
	      ACT_FLOPS * t * f);
	if (apart)
		quant(o, d, "quant", t * f);
	infer_op_gemm_q(o, d, QX_MLP, "down", t, d->hidden, f);
}

/* Whether the norm before an MoE layer writes 16 bits: the fused MoE
 * quantizes its own input (infer_moe_quantizes_input), or the one
 * quantized GEMM reading the norm's output on the other paths, the
 * shared expert's gate/up (the router reads 16 bits, the experts'
 * input is quantized by expert_quant from 16 bits), is one the
 * checkpoint keeps unquantized. */
static int moe_norm_wide(const struct infer_dims *d)
{
	return infer_moe_quantizes_input(d) ||
	       ((d->qexcl & QX_SHARED) && d->moe.shared_ffn > 0);
}

void infer_layer_ops(const struct infer_dims *d0, const struct infer_batch *b,
		     const struct infer_kind *k, const struct infer_route *r,
		     struct infer_ops *o)
{
	struct infer_dims tmp;
	const struct infer_dims *d = infer_kind_dims(d0, k, &tmp);
	double t = infer_batch_tokens(b);
	int moe = k && k->moe, blk = k ? k->block : BLOCK_PAIR, i;
	enum infer_tbo tbo = !moe || !d->moe.tbo ? ITBO_NONE :
			     infer_batch_decode_only(b) ? ITBO_DECODE :
							  ITBO_PREFILL;

	o->n = 0;
	if (blk == BLOCK_MAMBA) {
		infer_mamba_ops(d, b, o);
		return;
	}
	if (blk != BLOCK_MLP && blk != BLOCK_MOE) {	/* attention */
		norm(o, d, "add_norm", t, 1, !d->mla,
		     (d->qexcl & QX_ATTN) != 0);
		if (k && k->linear)
			infer_gdn_ops(d, b, t, o);
		else if (d->mla)
			attn_mla(d, b, t, o);
		else
			attn_gqa(d, b, t, k && k->temperature, k && k->nope,
				 o);
		tpcoll(o, d, "attn_tp_allreduce", COLL_ALLREDUCE,
		       t * d->hidden * d->act_B);
		if (blk == BLOCK_ATTN)
			return;
		/* two-batch overlap, decode: the half batch yields between
		 * the attention's projections and its core (op_prepare,
		 * op_core) */
		for (i = 0; tbo == ITBO_DECODE && i < o->n; i++)
			if (o->op[i].attention) {
				o->op[i].tbo_yield = 1;
				break;
			}
	}
	norm(o, d, "add_norm", t, 1, !moe, moe ? moe_norm_wide(d) :
					 (d->qexcl & QX_MLP) != 0);
	if (moe) {
		if (!r)
			BUG("an MoE layer without its routing");
		infer_moe_ops(d, t, r, tbo, o);
		return;
	}
	mlp(d, t, o);
	tpcoll(o, d, "mlp_tp_allreduce", COLL_ALLREDUCE, t * d->hidden * d->act_B);
}

/* Step inputs the driver broadcasts to the other TP ranks before the
 * forward (engine input_broadcasts; vLLM V0's broadcast_tensor_dict sends
 * each GPU tensor of the model input with its own library broadcast over
 * the device group). Each tensor is taken as one int64 per token: they
 * are latency-bound. A multi-step scheduler broadcasts on the first step
 * of a call only; its later decode steps advance the inputs on the GPU
 * (charged none here). */
static void input_broadcasts(const struct infer_dims *d,
			     const struct infer_batch *b, struct infer_ops *o)
{
	int i;

	if (d->tp <= 1 || (d->multi_step > 1 && infer_batch_decode_only(b)))
		return;
	for (i = 0; i < d->input_broadcasts; i++)
		tpcoll(o, d, "input_broadcast", COLL_BROADCAST,
		       8 * infer_batch_tokens(b));
}

/* A draft head's input (infer_dims.draft_in): the token's embedding and
 * the target's hidden state, each RMS-normed (MTP), concatenated and
 * projected back to h by one bf16 GEMM (SGLang deepseek_nextn.py: enorm,
 * hnorm, eh_proj = nn.Linear(2 h, h), not sharded over TP). */
static void draft_input_ops(const struct infer_dims *d,
			   const struct infer_batch *b, struct infer_ops *o)
{
	double t = infer_batch_tokens(b), n = t * d->hidden;
	struct infer_op *op;
	int i;

	if (!(d->draft_in > 0))
		return;
	for (i = 0; i < d->draft_norms; i++)
		memop(o, "draft_norm", 2 * n * d->act_B, n * d->act_B,
		      NORM_FLOPS * n);
	op = gemm(o, "draft_proj", t, d->hidden, d->draft_in * d->hidden);
	if (op)
		op->weight_B_base = 1;
}

void infer_embed_ops(const struct infer_dims *d, const struct infer_batch *b,
		     struct infer_ops *o)
{
	double n = infer_batch_tokens(b) * d->hidden;

	o->n = 0;
	input_broadcasts(d, b, o);
	memop(o, "embed", n * d->act_B, n * d->act_B, 0);
	tpcoll(o, d, "embed_tp_allreduce", COLL_ALLREDUCE, n * d->act_B);
	draft_input_ops(d, b, o);
}

/* The block-table rows of the step's requests (padding rows are none),
 * host to device (block_table_dims). */
void infer_step_input_ops(const struct infer_dims *d,
			  const struct infer_batch *b, struct infer_ops *o)
{
	double reqs = 0;
	struct infer_op *op;
	int i;

	if (!(d->block_row_B > 0) || !(d->h2d_Bps > 0))
		return;
	for (i = 0; i < b->n; i++)
		if (!b->g[i].pad)
			reqs += b->g[i].count;
	op = infer_op_mem(o, "block_table_h2d", 0, reqs * d->block_row_B, 0);
	if (op)
		op->h2d_B = reqs * d->block_row_B;
}

/* Copies of the step's inputs into a captured graph's static buffers,
 * launched before each replay (engine graph_input_copies; vLLM V0's
 * CUDAGraphRunner.forward copies input_ids, positions and slot_mapping,
 * and CommonAttentionState.prepare_graph_input_buffers seq_lens_tensor
 * and block_tables): one int64 per token each, launch-bound. The host
 * issues them while the GPU runs the input broadcasts, so they wait in
 * the stream and cost what the graph's kernels cost. */
void infer_graph_input_ops(const struct infer_dims *d,
			   const struct infer_batch *b, struct infer_ops *o)
{
	double bytes = 8 * infer_batch_tokens(b);
	int i;

	for (i = 0; i < d->graph_input_copies; i++)
		infer_op_mem(o, "graph_input_copy", bytes, bytes, 0);
}

void infer_head_ops(const struct infer_dims *d, const struct infer_batch *b,
		    struct infer_ops *o)
{
	double t = infer_batch_tokens(b), s = infer_batch_sampled(b);
	double v = d->vocab / d->tp, f32 = dtype_bytes(DTYPE_FP32);
	double row = s * d->vocab * f32;
	struct infer_op *op;
	int i;

	o->n = 0;
	memop(o, "final_norm", 2 * t * d->hidden * d->act_B,
	      t * d->hidden * d->act_B, NORM_FLOPS * t * d->hidden);
	if (s <= 0)
		return;
	memop(o, "gather_sampled", s * d->hidden * d->act_B,
	      s * d->hidden * d->act_B, 0);
	op = gemm(o, "lm_head", s, v, d->hidden);
	op->weight_B_base = 1;
	tpcoll(o, d, "logits_allgather", COLL_ALLGATHER,
	       s * d->vocab * d->act_B);
	memop(o, "logits_fp32", s * d->vocab * d->act_B, row, s * d->vocab);
	memop(o, "sample", row, s * f32, SAMPLE_FLOPS * s * d->vocab);
	for (i = 1; i < d->sampler_passes; i++)
		memop(o, "sample_pass", row, row, s * d->vocab);
	for (i = 0; i < d->sampler_copies; i++)
		memop(o, "sampler_copy", 0, 8 * s, 0);
}
