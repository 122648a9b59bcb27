/*
 * layer_dims.c - a layer's dimensions from the job (layer_dims_from_job):
 * the widths, the activation and linear dtypes, MLA and context-
 * parallel attention widths, the routed experts' dimensions (routing,
 * dispatch bytes, quantization), FSDP's gradient passes, and the
 * framework switches the op builders of layer.c, attn.c and moe.c read.
 * The notation is layer.c's.
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
		if (model_is_dsa(m)) {
			d->mla_d.idx_heads = (double)m->index_n_heads;
			d->mla_d.idx_dim = (double)m->index_head_dim;
			d->mla_d.idx_topk = (double)m->index_topk;
		}
	}
	if (m->hybrid_override_pattern && m->mamba_num_heads > 0) {
		d->mamba.heads = (double)m->mamba_num_heads;
		d->mamba.head_dim = (double)m->mamba_head_dim;
		d->mamba.state = (double)m->ssm_state_size;
		d->mamba.groups = (double)m->n_groups;
		d->mamba.conv = (double)m->conv_kernel;
		d->mamba.chunk = (double)m->chunk_size;
	}
	d->attn_gate = m->attn_output_gate == 1;
	if (model_is_gdn(m)) {
		d->gdn.k_heads = (double)m->linear_num_key_heads;
		d->gdn.v_heads = (double)m->linear_num_value_heads;
		d->gdn.dk = (double)m->linear_key_head_dim;
		d->gdn.dv = (double)m->linear_value_head_dim;
		d->gdn.conv = (double)m->linear_conv_kernel_dim;
		d->gdn.chunk = (double)j->framework->linear_attn_chunk;
	}
	d->cpd.cp = (double)p->cp;
	d->cpd.comm = p->cp_comm_type;
	d->cpd.a2a = p->cp_a2a > 0 ? (double)p->cp_a2a : 1;
	d->cpd.load_balance = p->cp_load_balance;
	d->cpd.torch = j->framework->cp_torch_sdpa == 1;
	d->cpd.compiled = d->cpd.torch &&
			  j->framework->cp_torch_compiled == 1;
}

static int scope_listed(const struct job_spec *j, int scope)
{
	const struct schema_int_list *l = &j->training.cuda_graphs;
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i] + 1 == (int64_t)scope)	/* from SCOPE_ATTN */
			return 1;
	return 0;
}

/* Megatron-Core's "moe" scope captures all of TransformerLayer.
 * _forward_mlp() for a MoE layer, its router and preprocessing included
 * (transformer_config.py cuda_graph_modules @ d98e8a64dd: "moe" and
 * "moe_router" are exclusive there). */
int layer_job_captures(const struct job_spec *j, int scope)
{
	if (scope_listed(j, scope))
		return 1;
	return (scope == SCOPE_MOE_ROUTER || scope == SCOPE_MOE_PREPROCESS) &&
	       scope_listed(j, SCOPE_MOE);
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

/* B per routed row that Megatron-Core's paged stash copies (moe_job_spec
 * paged_stash). Its saved-tensor hook (PagedStashManager.
 * on_save_for_backward, megatron/core/transformer/moe/paged_stash.py @
 * NVIDIA/Megatron-LM 2a75ac12c, the commit Megatron-Bridge @ 067f987
 * pins) takes the tensors Transformer Engine's fused grouped MLP marks
 * with mark_grouped_tensor (ops/fused/grouped_mlp.py @ TE e7c550c5, its
 * uv.lock pin): the FC1 input, the FC1 output before the activation
 * (the kernel's c_tensor, bf16: c_dtype), the routing probabilities
 * (fp32: HybridEP's) and the FC2 input; of the two quantized inputs only
 * the column-wise data and its scales are saved ("MXFP8 wgrad only needs
 * columnwise tiles": rowwise_data and scale_inv set to None). Each is
 * copied for the actual rows only (paged_stash_copy_kernel's
 * num_tokens_tensor). A quantized element's bytes (lowp_B, dtype_bytes)
 * hold its block scale's share. */
static double stash_row_B(const struct layer_dims *d)
{
	double h = moe_row_width(d), f = d->moe.ffn / d->moe.etp;
	double u = (d->gated ? 2 : 1) * f;

	return h * d->lowp_B + u * dtype_bytes(DTYPE_BF16) +
	       dtype_bytes(DTYPE_FP32) + f * d->lowp_B;
}

/* The group the router's aux loss all-reduces its token counts over
 * (framework moe_router_load_balancing_type; moe_router.c), or -1: none,
 * with no aux loss, in inference, under a fixed gate (no router), or when
 * the group is one GPU (Megatron-Core's _reduce returns a one-rank
 * group's input). aux_loss and seq_aux_loss reduce over tp x cp,
 * global_aux_loss over tp x dp x cp (router.py _apply_aux_loss,
 * _apply_seq_aux_loss, _apply_global_aux_loss @ Megatron-LM d98e8a64dd). */
static int aux_group(const struct job_spec *j, const struct moe_dims *e)
{
	const struct parallel_spec *p = &j->parallelism;
	int t = j->framework->moe_lb_type;
	int64_t n = p->tp * p->cp * (t == MOE_LB_GLOBAL_AUX ? p->dp : 1);

	if (!job_aux_loss(j) || e->fixed_gate || n < 2)
		return -1;
	return t == MOE_LB_GLOBAL_AUX ? LG_STAGE : LG_TPCP;
}

/* The routed experts' shapes; route.c fills the routing. */
static void moe_dims(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;
	const struct moe_job_spec *mj = &j->moe;
	struct moe_dims *e = &d->moe;
	int aux, forced;

	if (!model_is_moe(m))
		return;
	e->experts = (double)m->n_routed_experts;
	e->topk = (double)m->num_experts_per_tok;
	e->ffn = (double)m->moe_intermediate_size;
	e->width = (double)m->moe_latent_size;
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
	e->dispatch_B = e->tokens * e->topk * moe_row_width(d) * e->elem_B;
	e->node_share = 1;
	e->allgather = mj->dispatcher && mj->dispatcher->mode == EP_ALLGATHER;
	/* Megatron-Core's flex dispatcher (DeepEP, Hybrid-EP: the GPU-
	 * initiated paths) gets the combined [T, h] tokens from the combine
	 * kernel; combine_postprocess only reshapes them (moe.c) */
	e->combine_reduces = mj->dispatcher && mj->dispatcher->gpu_initiated;
	e->permute_in_dispatch = mj->permute_into_dispatcher &&
				 mj->dispatcher &&
				 mj->dispatcher->permute_in_kernel;
	e->router_dt = mj->router_dtype;
	router_dtypes(j, e);
	e->permute_fusion = mj->permute_fusion;
	e->chunk_sort = j->framework->moe_chunk_sort != 0;
	e->permute_loop = e->permute_fusion && j->framework->te_permute_loop;
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
			     scope_listed(j, SCOPE_MOE_PREPROCESS);
	e->call_host_s = mj->dispatcher ? mj->dispatcher->dispatch_call_host_s
					 : 0;
	/* the expert layout puts etp innermost, then ep: a group of ep
	 * ranks spans etp x ep consecutive GPUs */
	e->stage_row_B = mj->dispatcher && mj->dispatcher->stage_input &&
			 j->system && e->ep * e->etp >
			 (double)j->system->gpus_per_node ?
			 ep_row_bytes(mj->dispatcher, moe_row_width(d),
				      e->dispatch_dt,
				      0) : 0;
	/* the aux loss's ops only with one (job_aux_loss: a load-balancing
	 * type with a positive coefficient, in training) */
	aux = job_aux_loss(j);
	/* router_ops are RandomSTE's random logits, which Megatron-Core
	 * draws only under moe_router_force_load_balancing (router.py
	 * @ d98e8a64dd l. 861-863: apply_random_logits): a force-balanced
	 * training job (routing balance forced, the random-logits gate) */
	forced = !job_is_inference(j) &&
		 j->moe.routing.balance == ROUTE_FORCED &&
		 j->framework->balanced_gate == GATE_RANDOM;
	e->router_ops = (double)((forced ? j->framework->host.router_ops : 0) +
				 (aux ? j->framework->host.router_aux_ops : 0));
	e->router_bwd_ops = aux ? (double)j->framework->host.router_bwd_ops : 0;
	e->aux_group = aux_group(j, e);
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
	e->glu_offset = m->quick_glu == 1 && d->gated;
	/* the offset's blocking copy is Megatron-Core's quick-GEGLU's
	 * (weighted_bias_quick_geglu_impl, clamped or not), not the clamp's */
	e->glu_sync = m->quick_glu == 1 && d->gated &&
		      j->framework->elementwise.glu_offset_sync == 1;
	e->probs_grad_kernel =
		j->framework->elementwise.glu_probs_grad_kernel == 1;
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
	e->stash_B = mj->paged_stash ? stash_row_B(d) : 0;
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
	int layernorm = model_norm_tensors(m) == 2;

	if (j->training.zero_stage < 3 || !j->framework->fsdp_grad_passes ||
	    n < 1)
		return;
	d->fsdp_n = (double)n;
	d->fsdp_pre = fsdp_predivide(n);
	d->fsdp_post = (double)n / d->fsdp_pre;
	d->fsdp_master_B = j->framework->master_weights ? 4 : d->act_B;
	d->fsdp_accum = mb > 1 ? (mb - 1) / mb : 0;
	d->fsdp_P[LU_LAYER] = layer_params(d, layer_bias_of(m), layernorm) /
			      d->tp;
	d->fsdp_P[LU_EMBED] = layer_embed_params(d,
		(double)m->max_position_embeddings) / d->tp;
	d->fsdp_P[LU_HEAD] = layer_head_params(d, layernorm) / d->tp;
	/* a tied head on the embedding's rank adds no parameters of its own
	 * (footprint_unit_params) */
	if (m->tie_word_embeddings && j->parallelism.pp == 1)
		d->fsdp_P[LU_HEAD] -= d->vocab / d->tp * d->hidden;
}

/* FSDP2's copy passes (fsdp2_copy_passes; 0 unless zero 3 outside
 * fsdp_pp_no_sync, whose units gather once a schedule run). A layer
 * unit's parameters on this GPU: dense over tp, and a MoE layer's
 * routed experts over etp ep when FSDP shards them too (edp > 1: their
 * own unit, gathered over edp). Needs d's widths. */
static void fsdp2_dims(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;
	struct layer_kind moe = { .moe = 1 };
	int layernorm = model_norm_tensors(m) == 2, rdt;
	double dense, experts;

	if (j->training.zero_stage < 3 || !j->framework->fsdp2_copy_passes ||
	    (j->framework->fsdp_pp_no_sync && p->pp > 1))
		return;
	d->fsdp2_gathers = j->framework->fsdp_reshard_after_forward ? 2 : 1;
	d->fsdp2_G = d->grad_B;
	rdt = j->framework->fsdp_expert_reduce_dtype;
	d->fsdp2_xG = rdt >= 0 ? dtype_bytes((enum dtype)rdt) : d->grad_B;
	layer_kind_params(d, NULL, layer_bias_of(m), layernorm, &dense,
			  &experts);
	d->fsdp2_P[0] = dense / d->tp;
	if (!d->moe.experts)
		return;
	layer_kind_params(d, &moe, layer_bias_of(m), layernorm, &dense,
			  &experts);
	d->fsdp2_P[1] = dense / d->tp;
	if (p->edp > 1)
		d->fsdp2_xP = experts / (double)(p->ep * p->etp);
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
	d->mx_attn_quant = d->fp8_attn && dt == DTYPE_MXFP8;
	/* Megatron-Core's TE LM head: only with fp8 and the mxfp8 recipe
	 * (is_te_mxfp8_output_proj_active) */
	d->head_lowp = j->training.fp8_output_proj && dt == DTYPE_MXFP8;
	d->dropout = j->training.dropout;
	d->unfused_grad_acc = !j->training.gradient_accumulation_fusion;
	d->autograd_wgrad = j->framework->wgrad_autograd;
	d->dgrad_serial = j->framework->tp_dgrad_serial;
	d->chunks = 1;
	d->sp_copy = d->sp && j->framework->sp_seq_dim_copies;
	d->sp_regather = d->sp && j->framework->sp_backward_regather;
	d->split_linears = j->framework->separate_linears;
	d->pp_gather = !d->sp && p->tp > 1 && j->framework->pp_scatter_gather;
	d->fused_ce = j->framework->fused_cross_entropy;
	d->loss_dp = j->framework->loss_dp_allreduce && p->dp > 1;
	d->jit_ce = !d->fused_ce && j->framework->cross_entropy_jit;
	d->ce_in_place = d->fused_ce && j->framework->cross_entropy_in_place;
	/* FSDP (ZeRO 3) keeps its own gradient shards: the scatter model */
	d->embed_dense = j->framework->embedding_grad_dense &&
			 j->training.zero_stage < 3;
	d->moe_probs_act = j->framework->moe_probs_in_activation;
	d->attn_kernel = j->framework->attention_kernel;
	d->attn_kernel_mla_bwd = j->framework->attention_mla_bwd_kernel > 0 ?
				 j->framework->attention_mla_bwd_kernel - 1 :
				 d->attn_kernel;
	d->norm_bwd_passes = j->framework->elementwise.norm_bwd_passes >= 2 ?
			     2 : 1;
	d->norm_tensors = model_norm_tensors(m);
	/* RMSNorm models only: a LayerNorm runs PyTorch's native kernels */
	d->eager_norm = j->framework->elementwise.eager_norm == 1 &&
			m->norm != NORM_LAYER;
	/* Megatron-Core (rope_utils.py apply_rotary_pos_emb): TE's fused
	 * rope takes no scale, so a YaRN factor other than 1 runs unfused */
	d->mla_concat = j->framework->elementwise.mla_concat == 1;
	d->rc_early_stop = j->framework->recompute_early_stop == 1;
	d->rc_needed_only = j->framework->recompute_needed_only == 1;
	d->eager_rope = j->framework->elementwise.eager_rope == 1 ||
			(m->rope_mscale > 0 && fabs(m->rope_mscale - 1) > 1e-9 &&
			 j->framework->elementwise.fused_rope_mscale == 0);
	d->complex_rope = j->framework->elementwise.complex_rope == 1;
	d->eager_act = j->framework->elementwise.eager_activation == 1 &&
		       d->gated;
	/* the attention's biases follow attention_bias, fc1's and fc2's
	 * mlp_bias (Qwen2Attention: q/k/v bias=True, Qwen2MLP none) */
	d->bias_kernels = j->framework->elementwise.bias_kernels == 1 ?
			  layer_bias_of(m) : 0;
	d->qk_norm = m->qk_layernorm == 1 && !model_is_mla(m);
	d->expert_casts = is_mx(dt) &&
			  j->framework->elementwise.per_expert_quantize == 1 ?
			  -1 : 1;	/* -1: per local expert (moe.c) */
	d->qkv_split = j->framework->elementwise.qkv_split == 1 &&
		       !model_is_mla(m);
	d->expand_kv = j->framework->elementwise.expand_kv == 1 &&
		       layer_kv_heads_local(d) < d->heads / d->tp;
	if (p->tp_comm_overlap && d->sp)
		d->chunks = j->framework->tp_comm_overlap_chunks > 0 ?
			    (int)j->framework->tp_comm_overlap_chunks : (int)p->tp;
	attn_dims(j, d);
	moe_dims(j, d);
	fsdp_dims(j, d);
	fsdp2_dims(j, d);
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
	/* FP8 attention beside per-tensor current-scaling FP8 linears, or
	 * beside NVFP4 ones (Transformer Engine's NVFP4 recipe has no FP8
	 * attention of its own: NVTE_DPA_FP8_RECIPE picks one, and the
	 * MLPerf Training v5.1 NVFP4 Llama 3.1 8B configs set
	 * "Float8CurrentScaling", config_common_fp4.sh [S]; a DelayedScaling
	 * choice there is not modelled [?]) */
	d->cs_attn_quant = d->fp8_attn && !d->mx_attn_quant &&
			   (d->fp8_current || dt == DTYPE_NVFP4);
	/* the scales' bytes: the format's less its data (E4M3 1 B, E2M1
	 * 0.5 B), dtype_bytes */
	d->x_swizzle_B = dt == DTYPE_MXFP8 ? dtype_bytes(dt) - 1 :
			 dt == DTYPE_NVFP4 ? dtype_bytes(dt) - 0.5 : 0;
	d->w_swizzle_B = j->framework->elementwise.weight_scale_swizzle ?
			 d->x_swizzle_B : 0;
	if (!j->framework->elementwise.act_scale_swizzle)
		d->x_swizzle_B = 0;
	d->mx_cast_eff = !(j->system && j->system->gpu) ? 1 :
			 dt == DTYPE_MXFP8 &&
			 j->framework->elementwise.mx_generic_cast ?
			 j->system->gpu->mx_cast_efficiency :
			 dt == DTYPE_NVFP4 ?
			 j->system->gpu->nvfp4_cast_efficiency : 1;
	d->fp8_one_layout = dt == DTYPE_FP8 &&
			    j->training.fp8_scaling != FP8_BLOCK &&
			    j->system && j->system->gpu &&
			    j->system->gpu->fp8_gemm_any_layout;
	d->fp8_ct_eff = dt == DTYPE_FP8 && !d->fp8_one_layout &&
			j->training.fp8_scaling != FP8_BLOCK &&
			j->system && j->system->gpu &&
			j->system->gpu->fp8_cast_transpose_efficiency > 0 ?
			j->system->gpu->fp8_cast_transpose_efficiency : 1;
	d->fp8_wcall = dt == DTYPE_FP8 &&
		       j->training.fp8_scaling != FP8_BLOCK &&
		       j->framework->fp8_weight_cast_per_call;
	/* torchao's backward transposes the fp8 weight for its dgrad
	 * (float8_ops.py preprocess_addmm) as TE does without the cache */
	d->fp8_wt = (dt == DTYPE_FP8 && !d->fp8_one_layout &&
		     j->training.fp8_scaling != FP8_BLOCK &&
		     j->framework->elementwise.no_fp8_weight_transpose_cache) ||
		    d->fp8_wcall;
	/* FSDP (ZeRO 3) gathers the weights every microbatch: not modelled */
	d->wcast = d->lowp && j->framework->weight_cast_per_step &&
		   j->training.zero_stage < 3;
	d->fp8_params = dt == DTYPE_FP8 &&
			j->training.fp8_scaling != FP8_BLOCK &&
			j->framework->fp8_param_gather &&
			j->training.zero_stage >= 1 &&
			j->training.zero_stage < 3;
	d->fp8_row_t = dt == DTYPE_FP8 && d->sp && !d->fp8_one_layout &&
		       j->training.fp8_scaling == FP8_DELAYED &&
		       j->framework->elementwise.fp8_sp_row_transpose;
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
