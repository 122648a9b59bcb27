/*
 * layer.c - the ops of a dense transformer layer on one GPU.
 *
 * Notation (one microbatch on one GPU): b sequences of s tokens, T = b s
 * tokens; width h, a query heads and g key/value heads of dimension d, MLP
 * hidden size f, vocabulary V (padded), tensor-parallel degree t, B bytes
 * per activation element (2 for 16-bit). With sequence parallelism (SP)
 * the norms, residual adds and dropouts see T' = T/t tokens, otherwise
 * T' = T. Local widths: q = a d / t, kv = g d / t, f' = f / t and the
 * first MLP GEMM's output u = 2 f' for a gated (SwiGLU) MLP, f' otherwise.
 * When t exceeds g each TP rank holds one KV head (replicated, t/g ranks
 * sharing it), so kv = d then.
 *
 * Forward of one layer (Megatron-LM's ParallelTransformerLayer / MCore
 * TransformerLayer), GEMM C[m,n] = A[m,k] B[k,n] with FLOPs 2 m n k:
 *
 *   norm      memory  read T' h B, write T' h B
 *   [SP] all-gather T h B over TP
 *   qkv       GEMM    m = T, n = q + 2 kv, k = h
 *   rope      memory  read/write T (q + kv) B
 *   attention flash:   4 b (a/t) s^2 d FLOPs over the whole score matrix,
 *                      half under the causal mask (the GPU model decides
 *                      what it executes; model FLOPs count s^2/2 pairs)
 *             unfused: QK^T GEMM (s, s, d) x b a/t, softmax over
 *                      b (a/t) s^2 scores in memory, AV GEMM (s, d, s) x b a/t
 *   proj      GEMM    m = T, n = h, k = q
 *   all-reduce T h B over TP (reduce-scatter with SP)
 *   add       memory  read 2 T' h B, write T' h B
 *   norm, [SP] all-gather
 *   fc1       GEMM    m = T, n = u, k = h
 *   act       memory  read T u B, write T f' B
 *   fc2       GEMM    m = T, n = h, k = f'
 *   all-reduce (reduce-scatter with SP), add
 *
 * Per layer the GEMMs and attention sum to (MHA, f = 4h, ungated, t = 1)
 * 24 T h^2 + 4 b s^2 h FLOPs forward, the closed form of Narayanan et al.
 * SC'21 (eq. 3 without the logits); the backward is twice the forward
 * (a GEMM's backward is two GEMMs of its size: dX = dY W^T, dW = X^T dY).
 * The model FLOPs MFU divides count the causal half of the attention term,
 * 24 T h^2 + 2 b s^2 h, as Megatron-LM's num_floating_point_operations
 * does (layer_kern_model_flops, attn.c).
 *
 * Backward order follows autograd in Megatron: a row-parallel linear
 * (proj, fc2) computes dgrad then wgrad; with SP its output gradient is
 * first all-gathered. A column-parallel linear (qkv, fc1) computes dgrad,
 * launches the all-reduce (reduce-scatter with SP) of the input gradient
 * asynchronously and overlaps it with the wgrad GEMM; with SP its input is
 * re-gathered (saved sharded) asynchronously during the dgrad GEMM
 * (Megatron's LinearWithGradAccumulationAndAsyncCommunication). The norm
 * backward waits for both.
 *
 * TP communication overlap (Megatron --tp-comm-overlap, TransformerEngine
 * userbuffers, needs SP): an all-gather feeding a GEMM, and a GEMM feeding
 * a reduce-scatter, are split into c pieces; piece i of the GEMM runs while
 * piece i+1 of the collective moves, so only one piece of each is exposed.
 * Only the first piece waits for what came before; the others follow it
 * on their stream.
 *
 * Low precision (fp8, MX): the four linear layers run in the low dtype
 * (TransformerEngine); attention, the LM head and the loss stay in 16-bit.
 * Each low-precision GEMM input is quantized first, a memory-bound op
 * reading the 16-bit tensor and writing the row-wise and column-wise
 * low-precision copies the forward and the wgrad GEMM need (read n B,
 * write 2 n L for n elements of L bytes); the output gradient likewise in
 * backward. With SP the quantization happens before the all-gather, which
 * then moves L-byte elements.
 *
 * Weight gradients accumulate over the microbatches into the framework's
 * gradient buffers (fp32 main_grad in Megatron: gradient accumulation
 * fusion makes each wgrad GEMM compute C += A B on an fp32 C), so a wgrad
 * GEMM of k x n outputs also reads and writes 2 k n G bytes (G bytes per
 * gradient element); block.c adds them to the GEMM's memory traffic.
 *
 * The attention's projections and core (GQA or MLA, context parallelism,
 * sliding windows) are built in attn.c, a routed-expert MLP in moe.c,
 * from the pieces of layer_ops.c; this file composes a layer of a given
 * kind, the embedding, the LM head and the multi-token-prediction
 * modules.
 *
 * Recomputation: selective recomputes the attention core (a second
 * attention forward before its backward, Korthikanti et al. 2022 sec. 5),
 * or the modules the job names (Megatron-Core recompute_modules: MLA's up
 * projections, the norms, a dense MLP, the experts' activation, the
 * shared experts, the whole MoE MLP), each before its own backward; full
 * recomputes the whole layer forward, its TP collectives included,
 * before the backward.
 *
 * Pipeline transfers carry the b s h B activation (or gradient) of a
 * stage, divided by t under SP (each TP rank sends its sequence shard) or
 * under Megatron-LM's scatter/gather optimization (Narayanan et al. SC'21
 * sec. 4.1: each TP rank sends 1/t, the receiving TP group all-gathers
 * the T h B tensor over the fast scale-up fabric).
 *
 * Embedding (first stage): a vocabulary-parallel lookup writing T h B,
 * then an all-reduce (reduce-scatter with SP) over TP; its backward
 * scatter-adds T rows into the gradient buffer (read T h (B + G),
 * write T h G), or, with the framework's embedding_grad_dense (Megatron
 * DDP, below ZeRO 3), builds PyTorch's dense [V/t, h] gradient and adds
 * it into main_grad (embed_bwd_dense). LM head (last stage): final norm, [SP] all-gather, logits
 * GEMM (T, V/t, h) in 16-bit, then the vocabulary-parallel cross-entropy
 * with three all-reduces of T fp32 values (max, sum of exponentials,
 * target logit) over TP. Fused (one kernel) it reads the 16-bit logits
 * and writes the fp32 softmax the backward needs, B + 4 bytes per logit,
 * and its backward reads that and writes the 16-bit gradient, 4 + B.
 * Unfused, as Megatron's _VocabParallelCrossEntropy runs it in PyTorch
 * ops, the forward is logits.float() (read B, write 4), max (read 4),
 * subtract the max in place, exp in place, sum, divide in place to the
 * softmax (read 4 and write 4 each but the sum): B + 20 read and 16
 * written per logit; the backward scales the softmax in place (read 4,
 * write 4) and casts it to 16-bit (read 4, write B): 8 read, 4 + B
 * written. Megatron-Core's --cross-entropy-loss-fusion (0.8, 0.9:
 * megatron/core/fusions/fused_cross_entropy.py, jit_fuser functions)
 * keeps the steps but fuses each function: the fp32 logits and their
 * max (read B, write 4), the shifted exponentials with their sum and the
 * target logit (read 4, write 4), the softmax in place (read 4, write 4):
 * B + 8 read and 12 written in three kernels, and two TP all-reduces
 * (the max; the target logit and the sum, concatenated); its backward
 * one kernel, reading the softmax and writing the 16-bit gradient: 4
 * read, B written.
 *
 * Vector FLOPs of memory-bound ops are nominal (a few per element); they
 * are memory-bound on every GPU llmsim knows.
 */
#include "layer_impl.h"
#include "ep.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* Linear layers in a sub-16-bit dtype (fp8, MX). */
static int is_lowp(enum dtype dt)
{
	return dtype_low_precision(dt);
}

/* The OCP microscaling formats (32-element blocks, E8M0 scales). */
static int is_mx(enum dtype dt)
{
	return dt == DTYPE_MXFP8 || dt == DTYPE_MXFP6 || dt == DTYPE_MXFP4;
}

enum dtype layer_base_dtype(enum dtype training)
{
	if (training == DTYPE_FP32 || training == DTYPE_TF32 ||
	    training == DTYPE_FP16)
		return training;
	return DTYPE_BF16;	/* bf16, and what fp8/MX training keeps */
}

enum dtype layer_job_act_dtype(const struct job_spec *j)
{
	if (job_is_inference(j))
		return DTYPE_BF16;
	return layer_base_dtype((enum dtype)j->training.dtype);
}

static double pad_up(double v, double multiple)
{
	double n = (double)(int64_t)(v / multiple);

	return n * multiple < v ? (n + 1) * multiple : n * multiple;
}

/* MLA widths and context parallelism from the model and the layout. */
static void attn_dims(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;

	d->mla = model_is_mla(m);
	if (d->mla) {
		d->mla_d.q_lora = (double)m->q_lora_rank;
		d->mla_d.kv_lora = (double)m->kv_lora_rank;
		d->mla_d.nope = (double)m->qk_nope_head_dim;
		d->mla_d.rope = (double)m->qk_rope_head_dim;
		d->mla_d.v = (double)m->v_head_dim;
	}
	d->cpd.cp = (double)p->cp;
	d->cpd.comm = p->cp_comm_type;
	d->cpd.a2a = p->cp_a2a > 0 ? (double)p->cp_a2a : 1;
	d->cpd.load_balance = p->cp_load_balance;
}

int layer_job_captures(const struct job_spec *j, int scope)
{
	const struct schema_int_list *l = &j->training.cuda_graphs;
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i] + 1 == (int64_t)scope)	/* from SCOPE_ATTN */
			return 1;
	return 0;
}

/* The router GEMMs' dtypes. Megatron-Core's RouterGatingLinearFunction
 * (moe_utils.py, core >= 0.13, @ d7288711ba) calls Transformer Engine's
 * general_gemm (framework router_gemm_te): the forward takes the bf16
 * input and weight and writes the router dtype; the backward casts both
 * operands to the router dtype, and TE runs a pure-fp32 GEMM as TF32
 * (common/gemm/cublaslt_gemm.cu @ 71bbefbf: CUBLAS_COMPUTE_32F_FAST_TF32
 * "only for pure FP32 GEMM"). Without it every router GEMM runs in the
 * router dtype. */
static void router_dtypes(const struct job_spec *j, struct moe_dims *e)
{
	enum dtype r = (enum dtype)j->moe.router_dtype;
	enum dtype base = layer_base_dtype((enum dtype)j->training.dtype);

	e->router_fwd_dt = e->router_bwd_dt = (int)r;
	if (!j->framework->router_gemm_te)
		return;
	if (dtype_bytes(r) > dtype_bytes(base))
		e->router_fwd_dt = (int)base;
	if (r == DTYPE_FP32)
		e->router_bwd_dt = DTYPE_TF32;
}

/* Whether the job's GPU is the arch on which the framework's forward
 * grouped GEMMs are one grouped kernel (elementwise.
 * grouped_gemm_fwd_kernel_arch). */
static int fwd_one_kernel(const struct job_spec *j)
{
	return j->system && gpu_arch_is(j->system->gpu, j->framework->
					elementwise.grouped_gemm_fwd_kernel_arch);
}

/* The routed experts' shapes; route.c fills the routing. */
static void moe_dims(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;
	const struct moe_job_spec *mj = &j->moe;
	struct moe_dims *e = &d->moe;

	if (!model_is_moe(m))
		return;
	e->experts = (double)m->n_routed_experts;
	e->topk = (double)m->num_experts_per_tok;
	e->ffn = (double)m->moe_intermediate_size;
	e->shared_ffn = (double)model_shared_ffn(m);
	e->ep = (double)p->ep;
	e->etp = (double)(p->etp > 0 ? p->etp : p->tp);
	e->local = e->experts / e->ep;
	e->tokens = layer_sp_tokens(d);
	e->rows = e->tokens * e->topk * e->etp;
	/* unset: the rows travel in the job's activation dtype (a serving
	 * job's, not training.dtype's, which it does not set) */
	e->dispatch_dt = mj->dispatch_dtype >= 0 ? mj->dispatch_dtype :
			 (int)layer_job_act_dtype(j);
	e->elem_B = dtype_bytes((enum dtype)e->dispatch_dt);
	e->dispatch_B = e->tokens * e->topk * d->hidden * e->elem_B;
	e->node_share = 1;
	e->allgather = mj->dispatcher && mj->dispatcher->mode == EP_ALLGATHER;
	e->router_dt = mj->router_dtype;
	router_dtypes(j, e);
	e->permute_fusion = mj->permute_fusion;
	e->masked_select = !e->permute_fusion &&
		j->framework->elementwise.masked_select_permute == 1;
	/* the framework's side stream matters only with shared experts (moe.c
	 * would add an empty shared output otherwise) */
	e->shared_overlap = mj->shared_expert_overlap ||
			    (j->framework->shared_expert_stream &&
			     e->shared_ffn > 0);
	e->sigmoid = m->scoring_func == SCORE_SIGMOID;
	e->fixed_gate = job_round_robin_gate(j);
	/* static sizes (capacity with padding) need no host sync */
	e->host_sync = mj->dispatcher ? mj->dispatcher->host_sync : EP_SYNC_NONE;
	if (mj->capacity_factor > 0 && mj->pad_to_capacity)
		e->host_sync = EP_SYNC_NONE;
	e->map_gather = mj->dispatcher && mj->dispatcher->map_gather;
	e->probs_call = mj->dispatcher && mj->dispatcher->probs_call;
	e->sync_preprocess = mj->dispatcher &&
			     mj->dispatcher->dtoh_after_graph &&
			     layer_job_captures(j, SCOPE_MOE_PREPROCESS);
	e->call_host_s = mj->dispatcher ? mj->dispatcher->dispatch_call_host_s
					 : 0;
	/* the expert layout puts etp innermost, then ep: a group of ep
	 * ranks spans etp x ep consecutive GPUs */
	e->stage_row_B = mj->dispatcher && mj->dispatcher->stage_input &&
			 j->system && e->ep * e->etp >
			 (double)j->system->gpus_per_node ?
			 ep_row_bytes(mj->dispatcher, d->hidden, e->dispatch_dt,
				      0) : 0;
	e->router_ops = (double)j->framework->host.router_ops;
	/* the framework's count is Megatron-Core's alltoall dispatcher's;
	 * a dispatcher preset may give its own (configs/ep preprocess_ops) */
	e->dispatch_ops = (double)j->framework->host.dispatch_ops;
	if (e->dispatch_ops > 0 && mj->dispatcher &&
	    mj->dispatcher->preprocess_ops > 0)
		e->dispatch_ops = (double)mj->dispatcher->preprocess_ops;
	else if (!e->permute_fusion && e->local > 1)
		e->dispatch_ops +=
			(double)j->framework->host.dispatch_unfused_ops;
	e->bias_ops = m->mlp_bias == 1 &&
		      j->framework->elementwise.expert_bias_kernels == 1;
	e->fc1_bias_ops = m->mlp_bias == 1 &&
			  j->framework->elementwise.expert_fc1_bias_kernels == 1;
	e->probs_B = dtype_bytes((enum dtype)mj->router_dtype);
	if (mj->dispatcher && mj->dispatcher->fp32_probs &&
	    e->probs_B < dtype_bytes(DTYPE_FP32))
		e->probs_B = dtype_bytes(DTYPE_FP32);
	e->clamp_ops = m->swiglu_limit > 0 && d->gated &&
		       j->framework->elementwise.glu_clamp_kernels == 1;
	/* the offset's blocking copy is Megatron-Core's quick-GEGLU's
	 * (weighted_bias_quick_geglu_impl, clamped or not), not the clamp's */
	e->glu_sync = m->quick_glu == 1 && d->gated &&
		      j->framework->elementwise.glu_offset_sync == 1;
	/* Megatron-Core TEGroupedMLP pads unaligned expert splits itself
	 * unless Hybrid-EP's permute (pad_multiple) or the router
	 * (moe_router_padding_for_quantization) already aligned them */
	e->gemm_streams = (double)j->framework->elementwise.grouped_gemm_streams;
	e->gemm_streams_fwd = fwd_one_kernel(j) ? 0 : e->gemm_streams;
	e->quant_pad = d->lowp &&
		       j->framework->elementwise.expert_quant_padding == 1 &&
		       !(mj->dispatcher && mj->dispatcher->quant_pad) &&
		       !mj->router_padding;
	e->split_aligned = e->quant_pad ||
			   (mj->dispatcher && mj->dispatcher->quant_pad) ||
			   mj->router_padding;
}

/* torch FSDP's gradient division factors for a group of n
 * (torch.distributed.algorithms._comm_hooks.default_hooks DefaultState:
 * the pre-division doubles while it divides n and stays below n over
 * it; the post-division is the rest). */
static double fsdp_predivide(int64_t n)
{
	int64_t f = 1;

	while (n % f == 0 && n / f > f)
		f *= 2;
	return (double)f;
}

/* The FSDP fields of d (0 unless zero 3 with fsdp_grad_passes). Needs
 * d's widths. */
static void fsdp_dims(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	int64_t n = j->parallelism.dp * j->parallelism.cp;
	double mb = (double)job_microbatches(j);
	int layernorm = m->norm == NORM_LAYER;

	if (j->training.zero_stage < 3 || !j->framework->fsdp_grad_passes ||
	    n < 1)
		return;
	d->fsdp_n = (double)n;
	d->fsdp_pre = fsdp_predivide(n);
	d->fsdp_post = (double)n / d->fsdp_pre;
	d->fsdp_master_B = j->framework->master_weights ? 4 : d->act_B;
	d->fsdp_accum = mb > 1 ? (mb - 1) / mb : 0;
	d->fsdp_P[LU_LAYER] = layer_params(d, m->attention_bias, layernorm) /
			      d->tp;
	d->fsdp_P[LU_EMBED] = layer_embed_params(d,
		(double)m->max_position_embeddings) / d->tp;
	d->fsdp_P[LU_HEAD] = layer_head_params(d, layernorm) / d->tp;
	/* a tied head on the embedding's rank adds no parameters of its own
	 * (footprint_unit_params) */
	if (m->tie_word_embeddings && j->parallelism.pp == 1)
		d->fsdp_P[LU_HEAD] -= d->vocab / d->tp * d->hidden;
}

void layer_dims_from_job(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;
	enum dtype dt = (enum dtype)j->training.dtype;

	memset(d, 0, sizeof(*d));
	d->batch = (double)j->training.micro_batch_size;
	d->seq = (double)(j->training.seq_len / p->cp);
	d->hidden = (double)m->hidden_size;
	d->heads = (double)m->num_attention_heads;
	d->kv_heads = (double)m->num_key_value_heads;
	d->head_dim = (double)m->head_dim;
	d->ffn = (double)m->intermediate_size;
	d->tp = (double)p->tp;
	d->vocab = pad_up((double)m->vocab_size,
			  (double)j->framework->vocab_multiple * d->tp);
	d->act_B = dtype_bytes(layer_base_dtype(dt));
	d->lowp = is_lowp(dt);
	d->lowp_B = d->lowp ? dtype_bytes(dt) : d->act_B;
	d->grad_B = dtype_bytes((enum dtype)j->framework->grad_dtype);
	d->gated = m->gated_mlp;
	d->sp = p->sequence_parallel && p->tp > 1;
	d->rope = m->position_embedding == POS_ROPE;
	d->learned_pos = m->position_embedding == POS_LEARNED;
	d->unfused_attn = j->training.attention == ATTN_UNFUSED;
	/* off outside the fp8 autocast (job_fp8_scaling_check warns) */
	d->fp8_attn = j->training.fp8_attention && is_lowp(dt);
	d->dropout = j->training.dropout;
	d->unfused_grad_acc = !j->training.gradient_accumulation_fusion;
	d->chunks = 1;
	d->pp_gather = !d->sp && p->tp > 1 && j->framework->pp_scatter_gather;
	d->fused_ce = j->framework->fused_cross_entropy;
	d->jit_ce = !d->fused_ce && j->framework->cross_entropy_jit;
	d->ce_in_place = d->fused_ce && j->framework->cross_entropy_in_place;
	/* FSDP (ZeRO 3) keeps its own gradient shards: the scatter model */
	d->embed_dense = j->framework->embedding_grad_dense &&
			 j->training.zero_stage < 3;
	d->moe_probs_act = j->framework->moe_probs_in_activation;
	d->attn_kernel = j->framework->attention_kernel;
	d->norm_bwd_passes = j->framework->elementwise.norm_bwd_passes >= 2 ?
			     2 : 1;
	/* Megatron-Core (rope_utils.py apply_rotary_pos_emb): TE's fused
	 * rope takes no scale, so a YaRN factor other than 1 runs unfused */
	d->mla_concat = j->framework->elementwise.mla_concat == 1;
	d->eager_rope = j->framework->elementwise.eager_rope == 1 ||
			(m->rope_mscale > 0 && fabs(m->rope_mscale - 1) > 1e-9 &&
			 j->framework->elementwise.fused_rope_mscale == 0);
	d->eager_act = j->framework->elementwise.eager_activation == 1 &&
		       d->gated;
	d->bias_kernels = j->framework->elementwise.bias_kernels == 1 &&
			  m->attention_bias;
	d->qk_norm = m->qk_layernorm == 1 && !model_is_mla(m);
	d->expert_casts = is_mx(dt) &&
			  j->framework->elementwise.per_expert_quantize == 1 ?
			  -1 : 1;	/* -1: per local expert (moe.c) */
	d->expand_kv = j->framework->elementwise.expand_kv == 1 &&
		       layer_kv_heads_local(d) < d->heads / d->tp;
	if (p->tp_comm_overlap && d->sp)
		d->chunks = j->framework->tp_comm_overlap_chunks > 0 ?
			    (int)j->framework->tp_comm_overlap_chunks : (int)p->tp;
	attn_dims(j, d);
	moe_dims(j, d);
	fsdp_dims(j, d);
	/* Megatron-Core: recompute_modules None is ["core_attn"], [] is
	 * nothing */
	d->rc_mods = 1u << RCM_CORE_ATTN;
	if (j->training.recompute == RECOMPUTE_SELECTIVE &&
	    j->training.recompute_modules.given) {
		const struct schema_int_list *l = &j->training.recompute_modules;
		size_t i;

		d->rc_mods = 0;
		for (i = 0; i < l->n; i++)
			d->rc_mods |= 1u << l->v[i];
	}
	d->fp8_current = dt == DTYPE_FP8 &&
			 j->training.fp8_scaling == FP8_CURRENT;
	d->nvfp4_amax = dt == DTYPE_NVFP4;
	/* the scales' bytes: the format's less its data (E4M3 1 B, E2M1
	 * 0.5 B), dtype_bytes */
	d->x_swizzle_B = dt == DTYPE_MXFP8 ? dtype_bytes(dt) - 1 :
			 dt == DTYPE_NVFP4 ? dtype_bytes(dt) - 0.5 : 0;
	d->w_swizzle_B = j->framework->elementwise.weight_scale_swizzle ?
			 d->x_swizzle_B : 0;
	if (!j->framework->elementwise.act_scale_swizzle)
		d->x_swizzle_B = 0;
	d->mx_cast_eff = dt == DTYPE_MXFP8 &&
			 j->framework->elementwise.mx_generic_cast &&
			 j->system && j->system->gpu ?
			 j->system->gpu->mx_cast_efficiency : 1;
	d->fp8_one_layout = dt == DTYPE_FP8 &&
			    j->training.fp8_scaling != FP8_BLOCK &&
			    j->system && j->system->gpu &&
			    j->system->gpu->fp8_gemm_any_layout;
	d->fp8_rowwise_ag = dt == DTYPE_FP8 && d->sp && !d->fp8_one_layout &&
			    (j->training.fp8_scaling == FP8_DELAYED ||
			     j->training.fp8_scaling == FP8_CURRENT);
	if (dt == DTYPE_FP8 &&
	    j->framework->elementwise.per_expert_quantize == 1)
		moe_quant_dims(j->training.fp8_scaling, d);
	/* Only delayed scaling keeps an amax history that is reduced across
	 * the group and turned into next step's scales; current and block
	 * scaling and the MX formats scale from the tensor at hand
	 * (Transformer Engine's DelayedScaling recipe alone has
	 * reduce_amax). */
	d->amax_group = -1;
	if (dt == DTYPE_FP8 && j->training.fp8_scaling == FP8_DELAYED &&
	    j->framework->fp8_amax_reduction != AMAX_NONE)
		d->amax_group = j->framework->fp8_amax_reduction == AMAX_TP_CP ?
				LG_TPCP : LG_STAGE;
}

/* ---- a layer ---- */

static int is_moe(const struct layer_kind *k)
{
	return k && k->moe;
}

/* The first MLP GEMM's output through the activation: one fused kernel
 * (read u, write f'), or act(g) (r f', w f', strided) then * u (r 2f',
 * w f', u strided) as PyTorch runs a gated MLP on the two halves. */
static void act_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d)
{
	double t = layer_tokens(d), u = layer_fc1_width(d);
	double f = layer_ffn_local(d), B = d->act_B;

	if (!d->eager_act) {
		lop_memop(o, "act", pass, t * u * B, t * f * B,
			  ACT_FLOPS * t * f);
		return;
	}
	lop_eager(o, "act", pass, 3 * t * f * B, 2 * t * f * B, 3 * t * f * B,
		  2, ACT_FLOPS * t * f);
}

/* Its backward: one fused kernel (read u + f', write u), or dy * u
 * (r 2f', w f'), dy * act(g) (r 2f', w f'), act'(g) (r 2f', w f', g
 * strided) and the cat of the two halves' gradients (r 2f', w 2f'). */
static void act_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double t = layer_tokens(d), u = layer_fc1_width(d);
	double f = layer_ffn_local(d), B = d->act_B;

	if (!d->eager_act) {
		lop_memop(o, "act_bwd", PASS_BWD, t * (u + f) * B, t * u * B,
			  ACT_FLOPS * t * f);
		return;
	}
	lop_eager(o, "act_bwd", PASS_BWD, 8 * t * f * B, 5 * t * f * B,
		  6 * t * f * B, 4, ACT_FLOPS * t * f);
}

static void mlp_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d)
{
	double u = layer_fc1_width(d), f = layer_ffn_local(d);
	int16_t cast = (int16_t)o->n;

	lop_column_fwd(o, "fc1_cast", "fc1_allgather", "fc1", pass, d, u,
		       d->hidden, d->lowp);
	lop_cast_after_norm(o, cast, d);	/* LayerNormMLP */
	act_fwd(o, pass, d);
	lop_row_fwd(o, "fc2_cast", "fc2", "mlp_tp_reduce", pass, d, f);
}

static void mlp_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double u = layer_fc1_width(d), f = layer_ffn_local(d);
	int16_t red;

	lop_row_bwd(o, "fc2_grad_allgather", "fc2_grad_cast", "fc2_dgrad",
		    "fc2_wgrad", d, f);
	lop_bias(o, "fc2_bias_grad", PASS_BWD, d, layer_sp_tokens(d),
		 d->hidden);
	act_bwd(o, d);
	lop_bias(o, "fc1_bias_grad", PASS_BWD, d, layer_tokens(d), u);
	red = lop_column_bwd(o, "fc1_input_allgather", "fc1_grad_cast",
			     "fc1_dgrad", "fc1_grad_tp_reduce", "fc1_wgrad", d,
			     u, d->hidden, d->lowp);
	lop_norm_bwd_after(o, "norm2_bwd", d, red);
}

/* One layer forward, for the forward pass or a full recomputation. */
/* CUDA-graph scopes (Megatron-Core TransformerLayer): attn from the
 * input norm to the attention's residual add; the MLP's norm with the
 * dense MLP or with the MoE router; the rest of an MoE layer (moe.c). */
static void layer_fwd_pass(const struct layer_dims *d,
			   const struct layer_kind *k, enum layer_pass pass,
			   struct layer_ops *o)
{
	uint8_t mlp = is_moe(k) ? SCOPE_MOE : SCOPE_MLP;

	o->scope = SCOPE_ATTN;
	lop_norm_fwd(o, "norm1", pass, d);
	attn_fwd(o, pass, d, k);
	lop_row_fwd(o, "proj_cast", "proj", "attn_tp_reduce", pass, d,
		    attn_out_width(d));
	lop_add_fwd(o, "add1", pass, d);
	o->scope = is_moe(k) ? SCOPE_MOE_ROUTER : SCOPE_MLP;
	lop_norm_fwd(o, "norm2", pass, d);
	if (is_moe(k))
		moe_fwd(o, pass, d);
	else
		mlp_fwd(o, pass, d);
	o->scope = mlp;
	lop_add_fwd(o, "add2", pass, d);
	o->scope = SCOPE_NONE;
}

void layer_fwd(const struct layer_dims *d, const struct layer_kind *k,
	       struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	layer_fwd_pass(d, k, PASS_FWD, o);
}

/* torch FSDP's passes over one unit of P parameters on this GPU, charged
 * after its backward (the post-backward hook runs them on a side stream
 * beside the next unit's backward; a memory-bound kernel beside a
 * compute-bound one takes the SM time it would take alone, so they add
 * up): the flat gradient itself (read P W, write P W: the module's
 * parameters are views of the FlatParameter made by torch.split, so
 * autograd's SplitWithSizesBackward concatenates their W-byte gradients,
 * zeros for any without one, into the gradient its AccumulateGrad and the
 * post-backward hook take; pytorch/pytorch 01caf79e torch/distributed/
 * fsdp/_flat_param.py _get_unflat_views_unaligned and the _tensors note,
 * d5913d4b torch/csrc/autograd/FunctionsManual.cpp
 * split_with_sizes_backward), the unsharded gradient cast to the reduce dtype (read P W, write
 * P G), its pre-division (read and write P G) before the reduce-scatter,
 * and on the shard of S = P / N parameters the post-division (read and
 * write S G), the addition into the saved sharded gradient on all but a
 * step's first microbatch (read 2 S G, write S G, weighted by that
 * share) and the copies of the sharded M-byte parameters to W bytes
 * before the unit's two all-gathers (forward and backward: read 2 S M,
 * write 2 S W). A MoE layer's P is that of a dense layer of its widths
 * (layer_params) [?]. */
static void fsdp_passes(struct layer_ops *o, const struct layer_dims *d,
			double P)
{
	double W = d->act_B, G = d->grad_B, M = d->fsdp_master_B;
	double S = P / (d->fsdp_n > 0 ? d->fsdp_n : 1), r = 0, w = 0, k = 0;

	if (!(d->fsdp_n > 0) || !(P > 0))
		return;
	lop_memop(o, "fsdp_grad_flatten", PASS_BWD, P * W, P * W, 0);
	if (G != W)
		lop_memop(o, "fsdp_grad_cast", PASS_BWD, P * W, P * G, 0);
	if (d->fsdp_pre > 1)
		lop_memop(o, "fsdp_grad_prediv", PASS_BWD, P * G, P * G, P);
	if (d->fsdp_post > 1) {
		r += S * G;
		w += S * G;
		k++;
	}
	if (d->fsdp_accum > 0) {
		r += d->fsdp_accum * 2 * S * G;
		w += d->fsdp_accum * S * G;
		k++;
	}
	if (M != W) {
		r += 2 * S * M;
		w += 2 * S * W;
		k += 2;
	}
	if (k > 0)
		lop_memop(o, "fsdp_shard_passes", PASS_BWD, r, w, S)->k.launches = k;
}

unsigned layer_rc_modules(const struct layer_dims *d, enum layer_recompute rc)
{
	if (rc != LREC_SELECTIVE)
		return 0;
	return d->rc_mods;
}

/* Selective recomputation before the MLP's backward (Megatron-Core
 * transformer_layer.py): the pre-MLP norm, its output discarded
 * (layernorm: CheckpointWithoutOutput, recomputed when the MLP output's
 * gradient arrives), or a dense MLP checkpointed at its input (mlp:
 * tensor_parallel.checkpoint of the MLP, whose fc1 carries the norm in
 * Transformer Engine's LayerNormLinear) re-run whole. MoE layers take
 * "mlp" as nothing (is_moe_layer); their modules are moe.c's. */
static void mlp_recompute(const struct layer_dims *d,
			  const struct layer_kind *k, unsigned mods,
			  struct layer_ops *o)
{
	int dense_mlp = !is_moe(k) && (mods & 1u << RCM_MLP);

	if (dense_mlp || (mods & 1u << RCM_LAYERNORM))
		lop_norm_fwd(o, "norm2", PASS_RECOMPUTE, d);
	if (dense_mlp)
		mlp_fwd(o, PASS_RECOMPUTE, d);
}

static void layer_bwd_pass(const struct layer_dims *d,
			   const struct layer_kind *k, enum layer_recompute rc,
			   struct layer_ops *o)
{
	unsigned mods = layer_rc_modules(d, rc);

	if (rc == LREC_FULL)
		layer_fwd_pass(d, k, PASS_RECOMPUTE, o);
	o->scope = is_moe(k) ? SCOPE_MOE : SCOPE_MLP;
	mlp_recompute(d, k, mods, o);
	if (is_moe(k))
		moe_bwd(o, mods, d);
	else
		mlp_bwd(o, d);
	lop_residual_grad(o, "add2_bwd", d);
	o->scope = SCOPE_ATTN;
	/* layernorm: the input norm's output again, when the attention
	 * output's gradient arrives */
	if (mods & 1u << RCM_LAYERNORM)
		lop_norm_fwd(o, "norm1", PASS_RECOMPUTE, d);
	lop_row_bwd(o, "proj_grad_allgather", "proj_grad_cast", "proj_dgrad",
		    "proj_wgrad", d, attn_out_width(d));
	lop_bias(o, "proj_bias_grad", PASS_BWD, d, layer_sp_tokens(d),
		 d->hidden);
	attn_bwd(o, mods, d, k);
	lop_residual_grad(o, "add1_bwd", d);
	o->scope = SCOPE_NONE;
}

void layer_bwd(const struct layer_dims *d, const struct layer_kind *k,
	       enum layer_recompute rc, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	layer_bwd_pass(d, k, rc, o);
	fsdp_passes(o, d, d->fsdp_P[LU_LAYER]);
}

/* ---- pipeline transfers ---- */

void layer_pp_gather(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	lop_tpcoll(o, "pp_recv_allgather", PASS_FWD, d, COLL_ALLGATHER,
		   layer_tokens(d) * d->hidden * d->act_B);
}

double layer_pp_bytes(const struct layer_dims *d)
{
	double full = layer_tokens(d) * d->hidden * d->act_B;

	return d->sp || d->pp_gather ? full / d->tp : full;
}

/* ---- embedding and LM head ---- */

void layer_embed_fwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;
	double pos = d->learned_pos ? d->seq * h * d->act_B + t * h * d->act_B : 0;

	o->n = 0;
	o->scope = SCOPE_NONE;
	lop_memop(o, "embed", PASS_FWD, t * h * d->act_B + pos,
		  t * h * d->act_B, d->learned_pos ? t * h : 0);
	lop_tpcoll(o, "embed_tp_reduce", PASS_FWD, d,
		   d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE, t * h * d->act_B);
	if (d->dropout)
		lop_add_fwd(o, "embed_dropout", PASS_FWD, d);
}

/* Kernels of PyTorch's embedding_dense_backward_cuda on its sort path
 * (more than 3072 indices): the index sort, then in
 * embedding_backward_cuda_kernel unique_by_key, krn_partials_per_segment,
 * exclusive_sum, compute_num_of_partial_segments,
 * krn_partial_segment_offset, compute_grad_weight and sum_and_scatter
 * (pytorch/pytorch aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu
 * @ 01b9dc56) [?: cub's sort and scan may launch more than one each]. */
#define EMBED_BWD_KERNELS 8

/* Megatron's embedding backward (framework embedding_grad_dense).
 * VocabParallelEmbedding runs F.embedding (megatron/core/tensor_parallel/
 * layers.py), whose autograd backward materializes the weight's gradient:
 * at::zeros({V/t, h}) in the weights' dtype (write V/t h B), then
 * compute_grad_weight sums the T output-gradient rows into fp32 partial
 * segments (read T h B, write T h 4) and sum_and_scatter writes each
 * token's row (read T h 4, write at most T h B). Megatron's DDP backward
 * post-hook then runs param.main_grad.add_(param.grad) for every
 * parameter its GEMMs did not accumulate themselves: the embedding, every
 * microbatch (read V/t h (B + G), write V/t h G; megatron/core/
 * distributed/distributed_data_parallel.py _make_backward_post_hook,
 * NVIDIA/Megatron-LM 0e9fcc1d). */
static void embed_bwd_dense(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden, n = d->vocab / d->tp * h;
	struct layer_op *op;

	lop_memop(o, "embed_grad_zero", PASS_BWD, 0, n * d->act_B, 0);
	op = lop_memop(o, "embed_wgrad", PASS_BWD, t * h * (d->act_B + 4),
		       t * h * (4 + d->act_B), t * h);
	op->k.launches = EMBED_BWD_KERNELS;
	op->host_kernels = EMBED_BWD_KERNELS - 1;
	lop_memop(o, "embed_main_grad_add", PASS_BWD, n * (d->act_B + d->grad_B),
		  n * d->grad_B, n);
}

void layer_embed_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;

	o->n = 0;
	o->scope = SCOPE_NONE;
	if (d->sp)
		lop_tpcoll(o, "embed_grad_allgather", PASS_BWD, d,
			   COLL_ALLGATHER, t * h * d->act_B);
	if (d->embed_dense) {
		embed_bwd_dense(d, o);
	} else {
		/* scatter-add of T rows into the gradient buffer (G bytes
		 * each) */
		lop_memop(o, "embed_wgrad", PASS_BWD,
			  t * h * (d->act_B + d->grad_B), t * h * d->grad_B,
			  t * h);
	}
	fsdp_passes(o, d, d->fsdp_P[LU_EMBED]);
}

static void head_fwd(const struct layer_dims *d, enum layer_pass pass,
		     struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp;
	int i;

	lop_norm_fwd(o, "final_norm", pass, d);
	lop_column_fwd(o, "logits_cast", "logits_allgather", "logits", pass,
		       d, v, d->hidden, 0);
	if (d->fused_ce)
		lop_memop(o, "cross_entropy", pass, t * v * d->act_B, t * v * 4,
			  CE_FLOPS * t * v);
	else if (d->jit_ce)
		lop_memop(o, "cross_entropy", pass, t * v * (d->act_B + 8),
			  t * v * 12, CE_FLOPS * t * v)->k.launches = 3;
	else
		lop_memop(o, "cross_entropy", pass, t * v * (d->act_B + 20),
			  t * v * 16, CE_FLOPS * t * v);
	/* max, sum of exp, target logit (the jit path sends the last two in
	 * one) */
	for (i = 0; i < (d->jit_ce ? 2 : 3); i++)
		lop_tpcoll(o, "loss_tp_allreduce", pass, d, COLL_ALLREDUCE,
			   (d->jit_ce && i == 1 ? 2 : 1) * t * 4);
}

static void head_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp;
	int16_t red;

	if (d->fused_ce || d->jit_ce)
		lop_memop(o, "cross_entropy_bwd", PASS_BWD, t * v * 4,
			  t * v * d->act_B, CE_FLOPS * t * v);
	else
		lop_memop(o, "cross_entropy_bwd", PASS_BWD, t * v * 8,
			  t * v * (4 + d->act_B), CE_FLOPS * t * v);
	red = lop_column_bwd(o, "logits_input_allgather", "logits_grad_cast",
			     "logits_dgrad", "logits_grad_tp_reduce",
			     "logits_wgrad", d, v, d->hidden, 0);
	lop_norm_bwd_after(o, "final_norm_bwd", d, red);
}

void layer_head_fwd(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	head_fwd(d, PASS_FWD, o);
}

void layer_head_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	head_bwd(d, o);
	fsdp_passes(o, d, d->fsdp_P[LU_HEAD]);
}

/* ---- fp8 delayed scaling ----
 *
 * Transformer Engine (transformer_engine/pytorch/fp8.py, v1.8 and on:
 * FP8GlobalStateManager.reduce_and_update_fp8_tensors) concatenates the
 * amaxes its modules recorded and all-reduces them (MAX, async_op
 * False, on the compute stream) over the autocast's fp8_group when its
 * fp8_autocast region exits, i.e. after every forward of a model chunk
 * (Megatron-Core wraps a TransformerBlock's forward in it), and again
 * when the backward reaches the region's first fp8 module (its
 * reduce_and_update_bwd_fp8_tensors). The buffer holds one fp32 amax per
 * tensor: per linear layer input, weight and output forward (3),
 * output and input gradients backward (2); four linear layers per
 * transformer layer. Megatron-Core passes fp8_group = get_amax_reduction_
 * group(with_context_parallel=True): tensor x context parallel in 0.8,
 * tensor x data x context (the whole stage) in <= 0.7 and >= 0.9 (unless
 * --tp-only-amax-red). A rendezvous of that group: every member waits
 * for the slowest (src/engine/exec_jitter.c). */

void layer_fp8_amax(const struct layer_dims *d, int bwd, double layers,
		    int64_t group_size, struct layer_ops *o)
{
	double tensors = (bwd ? 2 : 3) * 4 * layers;

	o->n = 0;
	if (d->amax_group < 0 || group_size < 2 || !(layers > 0))
		return;
	lop_coll(o, bwd ? "fp8_amax_reduce_bwd" : "fp8_amax_reduce",
		 bwd ? PASS_BWD : PASS_FWD, (enum layout_group)d->amax_group,
		 LS_COMPUTE, COLL_ALLREDUCE, tensors * 4);
	/* then tex.fused_amax_and_scale_update_after_reduction: one kernel
	 * reading the reduced amaxes and the scales, writing each tensor's
	 * history slot, scale and inverse scale (its read of the amax
	 * history, 4 KB a tensor at TE's default length 1024, is left out:
	 * about a microsecond) */
	lop_memop(o, "fp8_scale_update", bwd ? PASS_BWD : PASS_FWD,
		  tensors * 4 * 2, tensors * 4 * 3, tensors);
}

/* ---- multi-token prediction (DeepSeek-V3 MTP, Megatron-Core
 * MultiTokenPredictionLayer): the next token's embedding (a lookup) and
 * the hidden state are normed, concatenated and projected 2h -> h
 * (column-parallel over TP), then one transformer layer and the shared
 * output head with its own loss (with_head 0: without the head, which
 * runs on the loss's stage, Megatron's process_mtp_loss, when the MTP
 * has a stage of its own). ---- */

void layer_mtp_fwd(const struct layer_dims *d, const struct layer_kind *k,
		   int with_head, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;

	o->n = 0;
	o->scope = SCOPE_NONE;
	lop_memop(o, "mtp_embed", PASS_FWD, t * h * d->act_B, t * h * d->act_B, 0);
	lop_norm_fwd(o, "mtp_enorm", PASS_FWD, d);
	lop_norm_fwd(o, "mtp_hnorm", PASS_FWD, d);
	lop_column_fwd(o, "mtp_proj_cast", "mtp_proj_allgather", "mtp_proj",
		       PASS_FWD, d, h / d->tp, 2 * h, d->lowp);
	lop_tpcoll(o, "mtp_proj_gather", PASS_FWD, d,
		   d->sp ? COLL_REDUCESCATTER : COLL_ALLGATHER, t * h * d->act_B);
	layer_fwd_pass(d, k, PASS_FWD, o);
	if (with_head)
		head_fwd(d, PASS_FWD, o);
}

void layer_mtp_bwd(const struct layer_dims *d, const struct layer_kind *k,
		   enum layer_recompute rc, int with_head, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;
	int16_t red;

	o->n = 0;
	o->scope = SCOPE_NONE;
	if (with_head)
		head_bwd(d, o);
	layer_bwd_pass(d, k, rc, o);
	lop_tpcoll(o, "mtp_proj_grad_gather", PASS_BWD, d, COLL_ALLGATHER,
		   t * h * d->act_B);
	red = lop_column_bwd(o, "mtp_proj_input_allgather", "mtp_proj_grad_cast",
			     "mtp_proj_dgrad", "mtp_proj_grad_tp_reduce",
			     "mtp_proj_wgrad", d, h / d->tp, 2 * h, d->lowp);
	lop_norm_bwd_after(o, "mtp_norms_bwd", d, red);
	lop_memop(o, "mtp_embed_wgrad", PASS_BWD, t * h * (d->act_B + d->grad_B),
		  t * h * d->grad_B, t * h);
}
