/*
 * footprint.c - memory per GPU.
 *
 * Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation
 * in Large Transformer Models", sec. 4, generalized to GQA, gated MLPs,
 * flash attention and no dropout). With the notation of layer.c (T tokens
 * of the microbatch, T' = T/t with SP, q = a d/t, kv = g d/t, f' = f/t,
 * u = 2f' gated or f', B bytes per 16-bit element, L bytes per element of
 * a low-precision GEMM input, which TransformerEngine saves instead of the
 * 16-bit tensor), one layer keeps for its backward:
 *
 *   attention: norm input T'h B, QKV input T'h L, Q and K T(q+kv) B,
 *     V T kv B, projection input T q L, dropout mask T'h (1 B)
 *     core: unfused  softmax output b(a/t)s^2 B, and with dropout its mask
 *                    b(a/t)s^2 and output b(a/t)s^2 B
 *           flash    log-sum-exp b(a/t)s 4 B
 *   MLP: norm input T'h B, fc1 input T'h L, fc1 output T u B,
 *     fc2 input T f' L, dropout mask T'h
 *   MoE MLP: norm input T'h B, routing probabilities and map, and for
 *     each of its R rows the experts' fc1 input h L, fc1 output u B,
 *     fc2 input f L, and either the fc2 output h B (unpermute weights
 *     it by the probabilities and keeps it: Megatron-Core <= 0.12) or,
 *     with the probabilities applied in the activation (framework
 *     moe_probs_in_activation: Megatron-Core >= 0.13, ADLR/megatron-lm
 *     !2668, 2659630721; NVIDIA/Megatron-LM @ 0d8e0714cd experts.py
 *     TEGroupedMLP.forward bias_act_func -> weighted_bias_swiglu_impl,
 *     whose WeightedSwiGLUFunction saves its input and the [R, 1]
 *     probabilities, and token_dispatcher.py unpermute with no probs),
 *     one fp32 probability, 4 B
 *
 * With QK norm (Qwen3) the norms' inputs, T (q + kv) B, are kept too.
 *
 * For MHA, f = 4h, dropout, unfused attention and 16-bit GEMM inputs this
 * is Korthikanti's eq. 2, s b h (10 + 24/t + 5 a s/(h t)) bytes; with SP
 * s b h (34 + 5 a s / h) / t (their eq. 5). Selective recomputation drops
 * the core term (their 34 s b h / t with SP), or what the job's
 * recompute_modules name (recomputed_B below); full recomputation keeps
 * only the layer input, T'h B (their 2 s b h / t), and needs one layer's
 * full activations while that layer's backward runs (the transient added
 * once). The first virtual stage adds the embedding dropout mask, the last
 * the final norm input and LM head input (T'h B each) and the fp32
 * softmax of the loss, T (V/t) 4 B (Megatron-Core's native fused and
 * unfused losses save exp_logits in fp32: fused_cross_entropy.py @
 * 0d8e0714cd), or, where the fused loss writes its gradient into the
 * logits in place and saves them (framework cross_entropy_in_place:
 * Transformer Engine parallel_cross_entropy, release_v2.9 @ 70f53666
 * pytorch/cross_entropy.py CrossEntropyFunction.forward
 * save_for_backward(_input) after triton cross_entropy_forward), the
 * logits in their own dtype, T (V/t) B.
 *
 * defer_embedding_wgrad_compute keeps each deferred microbatch's LM head
 * input and output gradient, T'h B + T (V/t) B, on the last rank until
 * the drain (deferred_peak).
 *
 * Activations in flight: a rank stores the activations of every
 * (chunk, microbatch) whose forward has run and backward has not; the peak
 * is found by walking its schedule (sched.h), so 1F1B's p - r microbatches
 * on rank r, GPipe's m and interleaving's (1 + (p-1)/(p v)) p microbatch-
 * stages on the first rank (Korthikanti sec. 4.2.3) all come out of the
 * same walk.
 *
 * Model states per parameter (weights W, gradients G, optimizer O, as
 * ZeRO shards them): footprint_params.c.
 *
 * ZeRO-3 also holds the gathered (unsharded, W bytes) parameters of the
 * framework's fsdp_prefetch_units units, the one computing and those
 * prefetched, each counted as the largest unit the rank gathers: the
 * embedding or the LM head where the rank holds them (V h parameters,
 * more than a layer's ~12 h^2 when V > 12 h; a head's forward is followed
 * by its backward and an embedding's backward by the next forward, so two
 * of them are gathered together), else a layer; on one stage with the
 * root unit (fsdp_root_unit: embedding and head one unit, gathered from
 * the step's first forward to the end of its backward) the root beside
 * that many layers, when more. A framework that keeps
 * a unit gathered from its forward to its backward (FSDP2's
 * reshard_after_forward False: fsdp_reshard_after_forward false), or
 * through a pipeline run (fsdp_pp_no_sync with pp >= 2: no reshard
 * after backward either), holds every FSDP unit of the rank unsharded at
 * the end of the forward, where the activations peak: the rank's dense
 * parameters at W dp cp bytes each and, when the experts are sharded
 * over their data-parallel group (edp > 1; else FSDP ignores them), its
 * experts at W edp bytes each.
 *
 * Workspace: the framework's (library workspaces, communication buffers),
 * plus a GPU-initiated dispatcher's all-to-all buffers (ep.h
 * ep_buffer_bytes: DeepEP's NVLink and RDMA receive buffers).
 */
#include "footprint.h"
#include "footprint_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "config/spec_model.h"
#include "ep.h"
#include "sched.h"
#include "split.h"

/* Bytes the attention core keeps (dropped by selective recompute). */
static double core_act_B(const struct layer_dims *d)
{
	double scores = layer_scores(d);

	if (!d->unfused_attn)
		return layer_attn_heads(d) * d->seq * 4;
	if (d->dropout)
		return scores * (2 * d->act_B + 1);
	return scores * d->act_B;
}

/* The attention's stored tensors but the core's. GQA: norm input,
 * QKV input, Q and K (rotary output), V, projection input. MLA: norm
 * input, down projections' input, the latents (q_norm, kv_norm inputs
 * and the up projections' inputs, sharded with SP), Q (d_n + d_r), K
 * (d_n + d_r) and V (d_v) per head, projection input (d_v per head). */
static double attn_stored_B(const struct layer_dims *d)
{
	double t = layer_tokens(d), ts = layer_sp_tokens(d), h = d->hidden;
	double B = d->act_B, L = d->lowp ? d->lowp_B : B;
	double q = layer_q_width(d), kv = layer_kv_width(d);
	double mask = d->dropout ? ts * h : 0;
	const struct mla_dims *m = &d->mla_d;
	double a = d->heads / d->tp;

	/* Qwen3-Next's output gate (attn.c out_gate): the sigmoid's output
	 * and the core's output the product saves, 2 T q B */
	double gate = d->attn_gate && !d->mla ? 2 * t * q * B : 0;

	if (!d->mla)	/* (QK norm: its inputs, T (q + kv) B, too) */
		return ts * h * B + ts * h * L + t * (q + kv) * B *
		       (d->qk_norm ? 2 : 1) + t * kv * B + t * q * L + mask +
		       gate;
	return ts * h * B + ts * h * L +
	       ts * (m->q_lora + m->kv_lora + m->rope) * (B + L) +
	       t * a * ((m->nope + m->rope) * 2 + m->v) * B +
	       t * a * m->v * L + mask;
}

/* What the eager gated activation (d->eager_act: act(g) * u as PyTorch
 * ops; torchtitan's FeedForward w2(F.silu(w1(x)) * w3(x)), the
 * pytorch-eager framework's silu(g) * u on the chunk halves) keeps
 * beyond the fused kernel's saved input, over n rows of width f:
 * SiluBackward keeps its input g, part of the fc1 output (kept);
 * MulBackward0 both operands, u (the fc1 output's other part) and
 * act(g), a new tensor of n f B (pytorch tools/autograd/derivatives.yaml:
 * silu saves self, mul.Tensor self and other). The product is the fc2
 * input, counted as such. (Megatron-Core's unfused glu() adds
 * glu_linear_offset to the linear half first, another n f B, mlp.py @
 * d98e8a64dd; none of llmsim's Megatron frameworks runs the dense MLP
 * eager: its routed experts' are expert_act_kept_B's.) */
static double eager_glu_B(const struct layer_dims *d, double n, double f)
{
	return d->eager_act ? n * f * d->act_B : 0;
}

/* What autograd keeps of the routed experts' activation beyond the fused
 * function's input (fc1 output) and the fc2 input, a layer; the
 * checkpointed activation (moe_act recompute) drops all of it.
 *
 * Eager with the routing probabilities in it (moe_permute.c
 * moe_act_probs_eager; Megatron-Core experts.py TEGroupedMLP
 * bias_act_func's unfused path, NVIDIA/Megatron-LM @ 2a75ac12c): y =
 * act(x_glu) * (x_linear + offset), then y * probs. SiluBackward keeps
 * its input x_glu, a view of the fc1 output already kept; the first
 * MulBackward0 keeps both operands, act(x_glu) and x_linear + offset,
 * new tensors of R f B each; the second keeps y (R f B) and the
 * probabilities (kept: the 4 B a row above); the cast back keeps
 * nothing: 3 R f B. Eager without them (act(x_glu) * x_linear): act's
 * output, R f B (eager_glu_B); with a GLU offset (glu_offset, quick-GEGLU)
 * MulBackward0's other operand x_linear + offset is a new tensor too,
 * another R f B.
 *
 * A clamped GLU (moe_dims clamp_ops; experts.py @ d98e8a64dd
 * bias_act_func, fusions/fused_bias_geglu.py weighted_bias_quick_geglu_
 * impl): each half's clamp keeps its input (derivatives.yaml clamp:
 * clamp_backward(grad, self, min, max)), views of the fc1 output, so
 * that stays; fused, the function saves the cat of the clamped halves,
 * a new R u B (u = 2 f); eager, the activation keeps the clamped gate,
 * R f B (the clamped linear half feeds the offset's add, which keeps
 * nothing). */
static double expert_act_kept_B(const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double R = m->rows, f = m->ffn / m->etp, B = d->act_B;
	double b = 0;

	if (d->eager_act)
		b += d->moe_probs_act ? 3 * R * f * B :
		     eager_glu_B(d, R, f) + (m->glu_offset ? R * f * B : 0);
	if (m->clamp_ops)
		b += d->eager_act ? R * f * B : 2 * R * f * B;
	return b;
}

/* The MLP's stored tensors. Dense: norm input, fc1 input, fc1 output,
 * fc2 input. MoE (moe.c): norm input, routing probabilities and map,
 * the experts' fc1 input, fc1 output, fc2 input and output (unpermute),
 * R rows each (of a latent MoE's width w), and the shared experts as a
 * dense MLP; a latent MoE's two projections keep their inputs, T'h and
 * T'w (Megatron-Core TELinear). */
static double mlp_stored_B(const struct layer_dims *d, int moe)
{
	double t = layer_tokens(d), ts = layer_sp_tokens(d), h = d->hidden;
	double B = d->act_B, L = d->lowp ? d->lowp_B : B;
	double f = layer_ffn_local(d), u = layer_fc1_width(d);
	double mask = d->dropout ? ts * h : 0;
	const struct moe_dims *m = &d->moe;
	double fe, ue, fs, us, rows, w;

	if (!moe)
		return ts * h * B + ts * h * L + t * u * B + t * f * L + mask +
		       eager_glu_B(d, t, f);
	fe = m->ffn / m->etp;
	ue = (d->gated ? 2 : 1) * fe;
	fs = m->shared_ffn / d->tp;
	us = (d->gated ? 2 : 1) * fs;
	rows = m->rows;
	w = moe_row_width(d);
	/* unpermute's fc2 output (w B a row), or the activation's fp32
	 * probability (4 B a row); the eager or clamped activation's
	 * saved tensors too */
	return ts * h * B + m->tokens * m->experts * 5 +
	       (m->width > 0 ? ts * (h + w) * L : 0) +
	       rows * (w * L + ue * B + fe * L +
		       (d->moe_probs_act ? 4 : w * B)) + expert_act_kept_B(d) +
	       (fs > 0 ? ts * h * L + t * us * B + t * fs * L +
			 eager_glu_B(d, t, fs) : 0) + mask;
}

static double layer_stored_B(const struct layer_dims *d, int moe)
{
	return attn_stored_B(d) + mlp_stored_B(d, moe);
}

/* What torchtitan's op-level policy (recompute_modules [ops], layer.c
 * sac_ops_filter) keeps of a dense layer's stored tensors beyond the
 * attention core's own (core_act_B, the SDPA outputs it saves): the
 * block's input, T'h B (the checkpoint's); the outputs of the saved
 * 16-bit mms, wq (T q B), wv (T kv B), w1 (T f B, gated) and w2 (T h B;
 * the MLP's only mm when not gated, then w1 T f B is recomputed and w2
 * is the second); and with sequence parallelism the two TP
 * reduce-scatters' outputs, T'h B each; fp8 GEMMs alike (their bf16
 * outputs). */
static double sac_ops_saved_B(const struct layer_dims *d)
{
	double t = layer_tokens(d), ts = layer_sp_tokens(d), h = d->hidden;
	double B = d->act_B, f = layer_ffn_local(d);
	double b = ts * h * B;

	b += t * (layer_q_width(d) + layer_kv_width(d)) * B +
	     (d->gated ? t * f * B + t * h * B : t * f * B);
	if (d->tp > 1 && d->sp)
		b += 2 * ts * h * B;
	return b;
}

/* What selective recomputation of the modules mods drops of a layer's
 * stored tensors (the terms above; the recomputed forward remakes them in
 * the backward):
 *   core_attn       the core's own (core_act_B)
 *   mla_up_proj     Q, K and V, T a/t ((d_n + d_r) 2 + d_v) B
 *   layernorm       the norm outputs the next GEMMs keep, T'h L each:
 *                   the QKV (MLA down) input, and the dense fc1 input
 *                   (the shared experts' in an MoE layer); Transformer
 *                   Engine keeps the 16-bit original, whose storage the
 *                   checkpoint frees
 *   mlp (dense)     all of the MLP's but its input: fc1 input, fc1
 *                   output, fc2 input
 *   moe (MoE)       all of the routed MLP's and the shared experts' but
 *                   the norm input; the checkpoint keeps the norm output
 *                   it starts from instead, T'h B
 *   moe_act (MoE)   the experts' fc2 input, R f L
 *   shared_experts  the shared experts' fc1 input, fc1 output, fc2 input
 * Each is at most what it covers: layernorm's fc1 input is not dropped
 * twice under mlp, moe takes moe_act's and shared_experts' with it. */
static double recomputed_B(const struct layer_dims *d, int moe, unsigned mods)
{
	double t = layer_tokens(d), ts = layer_sp_tokens(d), h = d->hidden;
	double B = d->act_B, L = d->lowp ? d->lowp_B : B;
	const struct moe_dims *m = &d->moe;
	double fs = m->shared_ffn / d->tp, us = (d->gated ? 2 : 1) * fs;
	double shared = fs > 0 ? ts * h * L + t * us * B + t * fs * L +
			eager_glu_B(d, t, fs) : 0;
	double mask = d->dropout ? ts * h : 0, b = 0;

#define HAS(x) (mods & 1u << (x))
	if (HAS(RCM_OPS))	/* everything but what the policy saves */
		return fmax(0, layer_stored_B(d, 0) - sac_ops_saved_B(d));
	if (HAS(RCM_CORE_ATTN))
		b += core_act_B(d);
	if (HAS(RCM_MLA_UP_PROJ) && d->mla)
		b += t * d->heads / d->tp * ((d->mla_d.nope + d->mla_d.rope) * 2 +
					    d->mla_d.v) * B;
	if (HAS(RCM_LAYERNORM))
		b += ts * h * L;	/* the attention's input */
	if (!moe) {
		if (HAS(RCM_MLP))
			b += mlp_stored_B(d, 0) - ts * h * B - mask;
		else if (HAS(RCM_LAYERNORM))
			b += ts * h * L;
		return b;
	}
	if (HAS(RCM_MOE))
		return b + mlp_stored_B(d, 1) - ts * h * B - mask - ts * h * B;
	if (HAS(RCM_MOE_ACT))
		b += m->rows * m->ffn / m->etp * L + expert_act_kept_B(d);
	if (HAS(RCM_SHARED_EXPERTS))
		b += shared;
	else if (HAS(RCM_LAYERNORM) && fs > 0)
		b += ts * h * L;
#undef HAS
	return b;
}

/* A Mamba-2 mixer layer's stored tensors (mamba.c): the norm input
 * (T'h B), the in-projection's input (T'h L, TE's LayerNormLinear), what
 * MambaSplitConv1dScanCombinedFn saves (ctx.save_for_backward: the
 * projected zxBCdt, T w B, and the scan output out_x, T d_inner' B;
 * state-spaces/mamba@e9594ce1 ssd_combined.py), the gated norm's input
 * (T d_inner' B) and the out-projection's input (T d_inner' L). */
static double mamba_stored_B(const struct layer_dims *d)
{
	const struct mamba_dims *m = &d->mamba;
	double t = layer_tokens(d), ts = layer_sp_tokens(d), h = d->hidden;
	double B = d->act_B, L = d->lowp ? d->lowp_B : B;
	double di = m->heads * m->head_dim / d->tp;
	double w = 2 * di + 2 * m->groups / d->tp * m->state + m->heads / d->tp;
	double mask = d->dropout ? ts * h : 0;

	return ts * h * B + ts * h * L + t * w * B + 2 * t * di * B +
	       t * di * L + mask;
}

/* The attention's share of recomputed_B: the core, MLA's up
 * projections and the input norm's output. */
static double attn_recomputed_B(const struct layer_dims *d, unsigned mods)
{
	double t = layer_tokens(d), ts = layer_sp_tokens(d);
	double L = d->lowp ? d->lowp_B : d->act_B, b = 0;

	if (mods & 1u << RCM_CORE_ATTN)
		b += core_act_B(d);
	if ((mods & 1u << RCM_MLA_UP_PROJ) && d->mla)
		b += t * d->heads / d->tp * ((d->mla_d.nope + d->mla_d.rope) *
					    2 + d->mla_d.v) * d->act_B;
	if (mods & 1u << RCM_LAYERNORM)
		b += ts * d->hidden * L;
	return b;
}

/* A hybrid model's block alone (enum model_block): its part of a
 * layer's stored tensors, less what selective recomputation drops of
 * that part; a full recompute keeps the block's input. */
static double block_act_B(const struct layer_dims *d,
			  const struct layer_kind *k, enum layer_recompute rc)
{
	unsigned mods = layer_rc_modules(d, rc);
	double ts = layer_sp_tokens(d), L = d->lowp ? d->lowp_B : d->act_B;
	double b;

	if (rc == LREC_FULL)
		return ts * d->hidden * d->act_B;
	switch (k->block) {
	case BLOCK_MAMBA:
		b = mamba_stored_B(d);
		if (mods & 1u << RCM_LAYERNORM)
			b -= ts * d->hidden * L;
		return b;
	case BLOCK_ATTN:
		return attn_stored_B(d) + core_act_B(d) -
		       attn_recomputed_B(d, mods);
	default:	/* an MLP or MoE alone */
		return mlp_stored_B(d, k->moe) -
		       (recomputed_B(d, k->moe, mods) -
			attn_recomputed_B(d, mods));
	}
}

double footprint_kind_act_B(const struct layer_dims *d,
			    const struct layer_kind *k,
			    enum layer_recompute rc)
{
	int moe = k && k->moe;
	/* a Gated DeltaNet layer: its mixer's tensors (gdn.c) in place of
	 * the attention's and the core's; selective recomputation drops
	 * nothing of the mixer (gdn.c): what the modules drop of the MLP
	 * and norms only */
	int lin = k && k->linear;
	unsigned mods = layer_rc_modules(d, rc);
	double mixer = lin ? gdn_stored_B(d) + (d->dropout ?
		       layer_sp_tokens(d) * d->hidden : 0) :
		       attn_stored_B(d) + core_act_B(d);
	/* recomputed_B counts the softmax core's tensors under core_attn */
	double no_core = lin && (mods & 1u << RCM_CORE_ATTN) ?
			 core_act_B(d) : 0;

	if (k && k->block != BLOCK_PAIR)
		return block_act_B(d, k, rc);
	switch (rc) {
	case LREC_NONE:
		return mixer + mlp_stored_B(d, moe);
	case LREC_SELECTIVE:
		return fmax(0, mixer + mlp_stored_B(d, moe) -
			       recomputed_B(d, moe, mods) + no_core);
	case LREC_FULL:
		return layer_sp_tokens(d) * d->hidden * d->act_B;
	}
	return 0;
}

double footprint_layer_act_B(const struct layer_dims *d,
			     enum layer_recompute rc)
{
	return footprint_kind_act_B(d, NULL, rc);
}

/* footprint_impl.h */
double footprint_transient_act_B(const struct layer_dims *d,
				 enum layer_recompute rc, unsigned kinds)
{
	struct layer_kind dense = { 0, 0, 0, 0, 0, 0 }, moe = { 1, 0, 0, 0, 0, 0 };
	double b = 0;

	switch (rc) {
	case LREC_NONE:
		return 0;
	case LREC_SELECTIVE:
		if (kinds & HAS_DENSE)
			b = recomputed_B(d, 0, layer_rc_modules(d, rc));
		if (kinds & HAS_MOE)
			b = fmax(b, recomputed_B(d, 1,
						 layer_rc_modules(d, rc)));
		return b;
	case LREC_FULL:	/* the largest layer, recomputed whole */
		if (kinds & HAS_DENSE)
			b = footprint_kind_act_B(d, &dense, LREC_NONE);
		if (kinds & HAS_MOE)
			b = fmax(b, footprint_kind_act_B(d, &moe, LREC_NONE));
		return b;
	}
	return 0;
}

double footprint_embed_act_B(const struct layer_dims *d)
{
	return d->dropout ? layer_sp_tokens(d) * d->hidden : 0;
}

double footprint_head_act_B(const struct layer_dims *d)
{
	return 2 * layer_sp_tokens(d) * d->hidden * d->act_B +
	       layer_tokens(d) * d->vocab / d->tp *
	       (d->ce_in_place ? d->act_B : 4);
}
