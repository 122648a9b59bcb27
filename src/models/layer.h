/*
 * layer.h - the kernels and tensor-parallel collectives of one dense
 * transformer layer (and of the embedding and LM-head ends) on one GPU for
 * one microbatch: shapes, FLOPs and bytes, forward, backward and
 * recomputation, as an ordered list of ops with their dependencies.
 *
 * Nothing here knows time: src/models/block.c costs each kernel through
 * the GPU model and the step program (train.c) instantiates the lists for
 * every layer and microbatch. The arithmetic is in layer.c's header.
 *
 * Layer kinds (struct layer_kind): the MLP is dense or a routed-expert
 * MoE (moe.c), the attention full or a sliding window; MLA projections
 * (mla.c) and context-parallel attention (attn_cp.c) follow the model
 * and the job. An op is a kernel on the compute stream or a collective
 * over one of the layout's groups (layout.h) on its communication
 * stream.
 *
 * Depends on coll.h, layout.h and the shape types of gpu.h (no GPU
 * calls).
 */
#ifndef LLMSIM_MODELS_LAYER_H
#define LLMSIM_MODELS_LAYER_H

#include <stdint.h>

#include "base/coll.h"
#include "gpu/gpu.h"
#include "layout.h"

struct job_spec;
struct model_spec;

/* A routed-expert MLP on one GPU for one microbatch (route.c fills it). */
/* Which kernel an EP all-to-all runs (layer_op.ep_path; 0: none). */
enum ep_pass {
	EP_PASS_DISPATCH = 1,	/* dispatch rows (fp8 with scales) */
	EP_PASS_DISPATCH16,	/* a dispatch kernel on 16-bit rows (the
				 * backward of the combine) */
	EP_PASS_COMBINE,	/* the forward combine's reduction */
	EP_PASS_COMBINE_BWD,	/* the backward of the dispatch: a combine
				 * with the probability gradients */
	EP_PASSES = EP_PASS_COMBINE_BWD
};

struct moe_dims {
	double experts;		/* routed experts (E) */
	double topk;		/* experts per token (k) */
	double ffn;		/* hidden size of one expert (f_e) */
	double width;		/* a latent MoE's latent size l (the routed
				 * rows, dispatch and experts in l: moe.c
				 * latent_fwd); 0 = none, rows of h */
	double shared_ffn;	/* hidden size of the shared experts; 0 = none */
	double ep, etp;		/* expert parallel, expert tensor parallel */
	double local;		/* experts on one GPU: E / ep */
	double tokens;		/* tokens entering the layer on one GPU (T_in) */
	double rows;		/* rows the pace GPU's experts process (after
				 * dispatch and the ETP gather) */
	const double *expert_rows;	/* rows of each local expert on the pace
					 * GPU [local] */
	double elem_B;		/* B per element of a dispatched token */
	int dispatch_dt;	/* enum dtype tokens travel in */
	double dispatch_B;	/* B one GPU sends in dispatch (coll.h size) */
	double combine_B;	/* B one GPU sends in combine (16-bit rows) */
	double row_B;		/* B of a dispatched token row (ep.h) */
	double row16_B;		/* B of a 16-bit row (combine, backward) */
	double combine_bwd_B;	/* B one GPU sends in the backward of the
				 * dispatch (a combine kernel: 16-bit rows
				 * and the path's probability gradients) */
	double row_cbwd_B;	/* B of such a row (ep.h ep_row_probs_B) */
	const double *a2a_B;	/* uneven dispatch matrix [ep x ep]; NULL = even */
	const double *a2a_pass_B[EP_PASSES];	/* the same for each enum
					 * ep_pass - 1: its bytes, the pace GPU
					 * receiving (dispatch kernels) or sending
					 * (combine kernels) */
	double node_share;	/* node deduplication of the scale-out bytes
				 * (coll_path.node_share); 1 = none */
	int allgather;		/* allgather dispatcher instead of all-to-all */
	int combine_reduces;	/* the dispatcher's combine kernel sums each
				 * token's expert rows into the token: no
				 * unpermute after it (moe.c) */
	int permute_in_dispatch;	/* the dispatch and combine kernels
					 * write and read the local experts'
					 * order: no sort kernels (moe.c) */
	int router_dt;		/* enum dtype of the router GEMM */
	int quant_kernels;	/* kernels quantizing one expert's input (0:
				 * one fused launch for all, moe.c) */
	int permute_fusion;	/* fused permute / unpermute kernels */
	int permute_loop;	/* ... Transformer Engine < 2.6's, walking every
				 * expert for each token (framework
				 * te_permute_expert_loop; moe_permute.c) */
	int chunk_sort;		/* the library dispatcher sorts its received
				 * rows by local expert (framework
				 * moe_chunk_sort) */
	int masked_select;	/* the unfused permute selects its rows with
				 * masked_select (moe_permute.c) */
	int shared_overlap;	/* shared experts beside dispatch/combine */
	int sigmoid;		/* sigmoid router scores (else softmax) */
	int fixed_gate;		/* no router: fixed round-robin indices and
				 * 1/k weights (AutoModel FakeBalancedGate) */
	int host_sync;		/* enum ep_host_sync the dispatch needs (none
				 * with static sizes) */
	double stage_row_B;	/* B a token's forward dispatch input row
				 * the dispatcher copies into its RDMA buffer
				 * first (its group spans nodes; moe.c a2a);
				 * 0 = no copy */
	double call_host_s;	/* s, the dispatcher's host time per dispatch
				 * call (reference CPU; 0: a PyTorch op) */
	int sync_preprocess;	/* the host's dropless sync waits for the
				 * whole preprocessing (the permute), not
				 * the count exchange (moe.c host_sync) */
	int probs_call;		/* the routing probabilities' own all-to-all
				 * after the dispatch's, and back (moe.c) */
	int map_gather;		/* the count exchange all-gathers the bool
				 * routing map [tokens, experts] of every
				 * rank, not E counts (moe.c counts_fwd) */
	double router_ops;	/* small PyTorch ops of the router beyond its
				 * GEMM and top-k (framework host data) */
	double router_bwd_ops;	/* kernels of the aux loss's backward beyond
				 * the top-k's (framework host data) */
	int aux_group;		/* enum layout_group the aux loss's counts
				 * are all-reduced over each forward; -1:
				 * none (framework moe_router_load_balancing_type,
				 * moe_router.c) */
	double dispatch_ops;	/* small PyTorch ops of the dispatcher's
				 * preprocessing (framework host data; the
				 * unfused permute's with more than one local
				 * expert included) */
	int bias_ops;		/* the experts' output bias x probability as
				 * PyTorch ops per local expert (moe.c) */
	int fc1_bias_ops;	/* the first expert GEMM's bias as PyTorch ops */
	double probs_B;		/* B per routing probability at the experts */
	int clamp_ops;		/* a clamped GLU's clamps as their own kernels */
	int glu_offset;		/* the GLU adds an offset to its linear half
				 * (model quick_glu: glu_linear_offset) */
	int glu_sync;		/* the host waits for the stream before that
				 * GLU's activation (glu_offset_sync) */
	int probs_grad_kernel;	/* a probability-weighted GLU's backward
				 * sums the probabilities' gradient in a
				 * kernel of its own (glu_probs_grad_kernel) */
	int quant_pad;		/* the grouped MLP pads its rows for
				 * quantization by copies (moe.c) */
	double stash_B;		/* B per routed row the paged stash copies
				 * out after the experts' forward and back
				 * before their backward; 0 = no stash
				 * (moe.c stash_op) */
	int split_aligned;	/* every expert's rows a multiple of the
				 * quantization alignment (padded by the
				 * grouped MLP, the dispatcher or the router) */
	double gemm_streams;	/* grouped GEMM as per-expert kernels over
				 * this many streams; 0 = one kernel */
	double gemm_streams_fwd;	/* ... the forward's (and its
					 * recomputation's) */
	int router_fwd_dt;	/* enum dtype of the router's forward GEMM */
	int router_bwd_dt;	/* enum dtype of its backward GEMMs */
};

/* Multi-head latent attention (DeepSeek-V2/V3) widths, whole model. */
struct mla_dims {
	double q_lora;		/* query low rank; 0 = Q projected directly */
	double kv_lora;		/* key/value latent rank */
	double nope;		/* per-head Q/K dims without rotary */
	double rope;		/* per-head rotary Q/K dims (K's shared by heads) */
	double v;		/* per-head value dims */
	/* DeepSeek Sparse Attention's lightning indexer (attn_mla.c
	 * attn_indexer_fwd); heads 0 = dense attention */
	double idx_heads;	/* indexer heads H_I */
	double idx_dim;		/* indexer head width d_I */
	double idx_topk;	/* keys a query attends to */
};

/* Gated DeltaNet linear attention widths (Qwen3-Next / Qwen3.5 linear
 * layers), whole model; gdn.c. */
struct gdn_dims {
	double k_heads;		/* q/k heads (H_k) */
	double v_heads;		/* v heads (H_v, a multiple of H_k) */
	double dk, dv;		/* per-head q/k and v widths */
	double conv;		/* causal conv1d kernel width (W) */
	double chunk;		/* the chunked kernel's chunk (C) */
};

/* Context parallelism of the attention core. */
struct cp_dims {
	double cp;		/* degree (1 = none) */
	int comm;		/* enum cp_comm (spec_job.h) */
	double a2a;		/* a2a / a2a+p2p: inner all-to-all group size */
	int load_balance;	/* 2 cp chunks per sequence */
	int torch;		/* PyTorch's context_parallel of SDPA
				 * (framework cp_torch_sdpa; attn_cp.c) */
	int compiled;		/* that SDPA traced by torch.compile
				 * (framework cp_torch_compiled) */
};

/* Mamba-2 mixer widths (mamba.c), whole model. */
struct mamba_dims {
	double heads;		/* SSM heads H */
	double head_dim;	/* channels per head P */
	double state;		/* state size N */
	double groups;		/* B/C groups G */
	double conv;		/* conv1d taps K */
	double chunk;		/* SSD chunk Q */
};

/* What one layer of a model is, beyond the shared dims. */
struct layer_kind {
	int moe;		/* routed-expert MLP (else dense) */
	double window;		/* sliding-window keys per query; 0 = full */
	double chunk;		/* chunked attention (Llama 4's RoPE layers):
				 * queries attend within aligned chunks of
				 * this many tokens; 0 = none */
	int linear;		/* the mixer is a Gated DeltaNet (gdn.c), not
				 * softmax attention (window, chunk unused) */
	int block;		/* enum model_block (spec_model.h): 0 an
				 * attention + MLP layer; a hybrid model's
				 * Mamba-2 mixer, attention, MLP or MoE alone */
	int nope;		/* a NoPE layer (model_layer_nope): no q/k
				 * norm (Llama 4 builds its weight-free L2
				 * qk_norm only where use_rope) */
};

/* One GPU's view of one microbatch of one layer. */
struct layer_dims {
	double batch;		/* sequences in the microbatch (b) */
	double seq;		/* tokens per sequence on this GPU (s) */
	double hidden;		/* model width (h) */
	double heads;		/* query heads, whole model (a) */
	double kv_heads;	/* key/value heads, whole model (g) */
	double head_dim;	/* per-head dimension (d) */
	double ffn;		/* MLP hidden size (f) */
	double vocab;		/* vocabulary, padded for TP (V) */
	double tp;		/* tensor-parallel degree (t) */
	double act_B;		/* B per activation element, of layer_base_dtype */
	double lowp_B;		/* B per element of the low-precision dtype */
	double grad_B;		/* B per element of the gradient buffers */
	int gated;		/* 1: gate+up+down MLP (SwiGLU); 0: up+down */
	int sp;			/* sequence parallelism (norms sharded by t) */
	int rope;		/* rotary position embedding on Q and K */
	int learned_pos;	/* learned position table added at the embedding */
	int unfused_attn;	/* scores materialized (no flash attention) */
	int fp8_attn;		/* fused attention in FP8 (training.fp8_attention) */
	int head_lowp;		/* the LM head's GEMMs in MXFP8 (training.
				 * fp8_output_proj under mxfp8) */
	int mx_attn_quant;	/* MXFP8 fused attention: its Q, K, V and dO
				 * quantized around the kernel (attn.c) */
	int cs_attn_quant;	/* per-tensor current-scaling FP8 fused
				 * attention: Q, K, V concatenated and
				 * quantized, dO quantized (attn.c) */
	int dropout;		/* dropout after attention and MLP (and on scores) */
	int rc_early_stop;	/* framework recompute_early_stop: a full
				 * recompute ends with its last saved tensor */
	int rc_needed_only;	/* framework recompute_needed_only: a full
				 * recompute ends before the layer's last
				 * GEMM (layer.c layer_bwd_pass) */
	int autograd_wgrad;	/* framework wgrad_autograd: a plain
				 * wgrad GEMM, nothing accumulated */
	int dgrad_serial;	/* framework tp_dgrad_serial: the column
				 * backward's all-reduce after its wgrad */
	int unfused_grad_acc;	/* wgrad GEMMs write dW (act_B per element)
				 * and a separate kernel adds it into the
				 * gradient buffer; 0 = fused (epilogue) */
	int lowp;		/* linear layers in a sub-16-bit dtype (fp8, MX) */
	int chunks;		/* TP comm overlap: GEMMs split in this many
				 * pieces pipelined with their collective; 1 = off */
	int split_linears;	/* framework separate_linears: Q K V (gate,
				 * up) as separate GEMMs (lop_column_fwd_parts) */
	int sp_regather;	/* framework sp_backward_regather: the column
				 * backward all-gathers its input again */
	int sp_copy;		/* framework sp_seq_dim_copies under SP: each
				 * SP collective along the sequence dim pays a
				 * copy (layer_ops.c sp_seq_copy) */
	int pp_gather;		/* pipeline transfers carry 1/t of a tensor, the
				 * receiving TP group all-gathers it (no SP) */
	int fused_ce;		/* cross-entropy in one fused kernel */
	int loss_dp;		/* the loss function all-reduces each
				 * microbatch's loss over the data-parallel
				 * group, the backward after it (framework
				 * loss_dp_allreduce, dp > 1) */
	int jit_ce;		/* else in Megatron-Core's jit-fused functions */
	int embed_dense;	/* embedding backward: dense [V/t, h] gradient,
				 * then main_grad.add_ (layer_embed_bwd) */
	int ce_in_place;	/* the fused loss keeps the logits (act_B), not
				 * an fp32 softmax (footprint.c) */
	int moe_probs_act;	/* MoE: probabilities applied in the experts'
				 * activation; unpermute keeps nothing */
	int mla;		/* multi-head latent attention (d->mla) */
	struct mla_dims mla_d;
	struct gdn_dims gdn;	/* Gated DeltaNet layers' widths (gdn.c);
				 * v_heads 0 = none */
	int attn_gate;		/* softmax attention's output gate (Qwen3-Next:
				 * q projection twice as wide, sigmoid x
				 * core output; attn.c out_gate) */
	struct mamba_dims mamba;	/* Mamba-2 mixer (hybrid models); heads 0
					 * = none */
	struct cp_dims cpd;	/* context parallelism (seq is already s / cp) */
	struct moe_dims moe;	/* routed experts (MoE layers) */
	int attn_kernel;	/* enum gpu_attn_kernel of the framework */
	int attn_kernel_mla_bwd;	/* the backward's when head_dim_qk !=
					 * head_dim_v (framework
					 * attention_mla_bwd_kernel) */
	int norm_bwd_passes;	/* 1 fused, 2 PyTorch (dgamma re-reads) */
	int eager_rope;		/* rotary as PyTorch ops */
	int complex_rope;	/* rotary on complex views (attn.c rope_op) */
	int mla_concat;		/* MLA's q and k built by torch.cat (attn_mla.c) */
	int eager_act;		/* gated activation as two PyTorch ops */
	int eager_norm;		/* norms as PyTorch ops in fp32 (layer_ops.c) */
	int norm_tensors;	/* a norm's parameters: weight (RMSNorm), and
				 * bias (LayerNorm): lop_norm_grad_add */
	int expand_kv;		/* GQA K/V copied to the query heads */
	int qkv_split;		/* GQA: Megatron-Core's QKV split (attn.c
				 * qkv_split_fwd) */
	int bias_kernels;	/* linear biases as their own kernels: a mask of
				 * LAYER_BIAS_ATTN, LAYER_BIAS_MLP */
	int fp8_current;	/* fp8 current scaling: each cast first computes
				 * its input's amax (layer_cast.c lop_cast) */
	int fp8_one_layout;	/* per-tensor FP8 on a GPU whose FP8 GEMMs take
				 * any layout: a cast writes no transposed copy
				 * (gpu fp8_gemm_any_layout; layer_cast.c lop_cast) */
	int fp8_rowwise_ag;	/* per-tensor FP8 (delayed or current scaling)
				 * that TP sequence parallelism all-gathers
				 * and whose GEMMs want the transposed copy
				 * (no fp8_gemm_any_layout): the cast before
				 * the gather writes the row-wise data only,
				 * the transpose is made of the gathered
				 * tensor for the wgrad (layer_cast.c) */
	int fp8_wt;		/* per-tensor FP8 without the weight transpose
				 * cache (framework elementwise
				 * no_fp8_weight_transpose_cache) on a GPU whose
				 * FP8 GEMMs want the transposed copy: each
				 * dgrad first transposes its FP8 weight
				 * (layer_cast.c lop_weight_transpose) */
	int fp8_wcall;		/* torchao Float8Linear (framework
				 * fp8_weight_cast_per_call): each forward call
				 * casts its weight, TP-sharded casts all-reduce
				 * their amax (layer_cast.c) */
	int wcast;		/* low-precision weights quantized once a step
				 * (framework weight_cast_per_step; not under
				 * ZeRO 3): layer_weight_cast */
	int fp8_params;		/* per-tensor FP8 weights kept as FP8 tensors
				 * the optimizer writes (framework
				 * fp8_param_gather, ZeRO 1-2): no step cast,
				 * a transpose where the GPU's FP8 GEMMs want
				 * one (layer_weight_cast) */
	int fp8_row_t;		/* per-tensor FP8 delayed scaling under TP
				 * sequence parallelism with framework
				 * fp8_sp_row_transpose (TE 1.x) on a GPU whose
				 * FP8 GEMMs want the transposed copy: a
				 * row-parallel linear's input cast writes the
				 * row-wise data only and the backward
				 * transposes it for the wgrad (layer_ops.c
				 * lop_row_fwd, lop_row_bwd) */
	int nvfp4_amax;		/* NVFP4: each cast first computes its input's
				 * per-tensor amax, a kernel of its own that no
				 * norm fuses (layer_cast.c lop_cast) */
	double w_swizzle_B;	/* B of block scales a weight element carries
				 * when each GEMM swizzles them (framework
				 * weight_scale_swizzle; MXFP8, NVFP4); 0 =
				 * none (layer_cast.c lop_swizzle) */
	double x_swizzle_B;	/* the same for a GEMM's quantized inputs and
				 * gradients (framework act_scale_swizzle) */
	double mx_cast_eff;	/* MXFP8 by TE's generic kernel (framework
				 * mx_generic_cast): fraction of the streaming
				 * rate a cast writing the column-wise layout
				 * runs at (gpu mx_cast_efficiency); NVFP4:
				 * its quantize's (gpu nvfp4_cast_efficiency);
				 * else 1 */
	double fp8_ct_eff;	/* per-tensor FP8 writing both layouts (TE's
				 * cast_transpose): fraction of the streaming
				 * rate it runs at (gpu
				 * fp8_cast_transpose_efficiency); else 1 */
	int qk_norm;		/* Q and K normalized per head (GQA layers) */
	int expert_casts;	/* kernels one grouped cast is: 1, or one per
				 * local expert (MX formats, framework
				 * per_expert_quantize) */
	/* torch FSDP's per-unit passes (framework fsdp_grad_passes, zero 3;
	 * all 0 otherwise): the unit's parameters on this GPU (layer,
	 * embedding, head), the FSDP group size N, the gradient pre- and
	 * post-division factors, the bytes of a sharded parameter M and the
	 * share of microbatches that add into the sharded gradient */
	double fsdp_P[3];	/* layer_unit order: layer, embedding, head */
	double fsdp_n;		/* N; 0 = no FSDP passes */
	double fsdp_pre, fsdp_post;
	double fsdp_master_B;
	double fsdp_accum;
	/* FSDP2's copy passes (framework fsdp2_copy_passes, zero 3, not
	 * under fsdp_pp_no_sync): a layer unit's parameters on this GPU, dense
	 * and MoE layer (routed experts included when FSDP shards them, edp >
	 * 1), the all-gathers a microbatch (1, 2 resharding after forward),
	 * the reduce dtypes' bytes; fsdp2_gathers 0 = off */
	double fsdp2_P[2], fsdp2_xP;	/* [0] dense, [1] MoE layer; its experts */
	double fsdp2_gathers;
	double fsdp2_G, fsdp2_xG;	/* B per reduced gradient, dense / experts */
	/* fp8 delayed scaling's amax all-reduce (framework
	 * fp8_amax_reduction): its group (enum layout_group), -1 none */
	int amax_group;
	/* selective recomputation's modules: bit 1 << enum
	 * recompute_module (spec_job.h) for each the job names (none for
	 * an empty list); the attention core when the job names none */
	unsigned rc_mods;
};

/* Bytes a Gated DeltaNet mixer's forward keeps for the backward on one
 * GPU, its norm's input included (gdn.c; footprint.c). */
double gdn_stored_B(const struct layer_dims *d);

/* The units of a stage, as fsdp_P indexes them. */
enum layer_unit { LU_LAYER, LU_EMBED, LU_HEAD };

/* Shapes of one microbatch on one GPU (layer.c's notation). */

/* Tokens of the microbatch: T = b s. */
static inline double layer_tokens(const struct layer_dims *d)
{
	return d->batch * d->seq;
}

/* Tokens the norms, residual adds and dropouts see: T' = T/t with SP. */
static inline double layer_sp_tokens(const struct layer_dims *d)
{
	return d->sp ? layer_tokens(d) / d->tp : layer_tokens(d);
}

/* Query width: q = a d / t. */
static inline double layer_q_width(const struct layer_dims *d)
{
	return d->heads * d->head_dim / d->tp;
}

/* Key/value heads on one GPU: g/t, or 1 (replicated) when t > g. */
static inline double layer_kv_heads_local(const struct layer_dims *d)
{
	return d->kv_heads >= d->tp ? d->kv_heads / d->tp : 1;
}

/* Key (or value) width: kv = d times the local KV heads (MLA: the
 * per-head K is nope + rope, V v_head_dim; K and V are per query head). */
static inline double layer_kv_width(const struct layer_dims *d)
{
	return layer_kv_heads_local(d) * d->head_dim;
}

/* Value head dimension: head_dim, or MLA's v_head_dim. */
static inline double layer_v_dim(const struct layer_dims *d)
{
	return d->mla ? d->mla_d.v : d->head_dim;
}

/* MLP hidden size on one GPU: f' = f / t. */
static inline double layer_ffn_local(const struct layer_dims *d)
{
	return d->ffn / d->tp;
}

/* The first MLP GEMM's outputs: u = 2 f' gated, f' otherwise. */
static inline double layer_fc1_width(const struct layer_dims *d)
{
	return (d->gated ? 2.0 : 1.0) * layer_ffn_local(d);
}

/* Attention heads of the microbatch on one GPU: b a / t. */
static inline double layer_attn_heads(const struct layer_dims *d)
{
	return d->batch * d->heads / d->tp;
}

/* Attention scores of the microbatch on one GPU: b (a/t) s^2. */
static inline double layer_scores(const struct layer_dims *d)
{
	return layer_attn_heads(d) * d->seq * d->seq;
}

/* A kernel: a GEMM, a fused attention call, or a memory-bound op. */
enum kern_kind {
	KERN_GEMM,
	KERN_GROUPED,		/* one GEMM per local expert in one kernel */
	KERN_ATTN_FWD,
	KERN_ATTN_BWD,
	KERN_MEM,
	KERN_CHUNK		/* a chunked linear-recurrence kernel (Mamba-2
				 * SSD, fla chunk_*): m, n, k, batch as its
				 * per-chunk products (gpu_chunk_gemm) */
};

/* Which GEMM dimension a grouped GEMM takes from the experts' rows. */
enum group_dim {
	GROUP_M,		/* forward and data gradient: rows are m */
	GROUP_K			/* weight gradient: rows are k */
};

struct kern {
	enum kern_kind kind;
	int lowp;		/* GEMM in the job's low-precision dtype */
	int dt;			/* GEMM in this dtype (enum dtype); -1 = by lowp */
	double m, n, k;		/* GEMM C[m,n] = A[m,k] B[k,n] (elements) */
	double batch;		/* independent GEMMs of that shape */
	const double *rows;	/* KERN_GROUPED: rows of each group */
	int ngroups;		/* KERN_GROUPED: groups */
	int group_dim;		/* KERN_GROUPED: enum group_dim */
	double kernels;		/* KERN_GROUPED: GEMM kernels it runs (one
				 * per local expert on Transformer Engine's
				 * multi-stream path); 0: as launches */
	int stream_bwd;		/* KERN_GROUPED: a backward GEMM on that path
				 * (gpu expert_bwd_efficiency) */
	double model_flops;	/* attention: model FLOPs to count instead of
				 * the shape's (context parallelism splits
				 * the core into blocks, unfused GEMMs hold a
				 * share); 0 = from the shape, < 0 = none */
	double accum_B;		/* B, GEMM: read and written in the gradient
				 * buffer the result is added to; 0 = none */
	struct gpu_attn_shape attn;	/* attention */
	double read_B;		/* B read (memory-bound op) */
	double write_B;		/* B written (memory-bound op) */
	double vec_flops;	/* FLOP, vector work of a memory-bound op */
	double launches;	/* kernels a memory-bound op is (0 or 1: one) */
	double strided_B;	/* B of it on PyTorch's generic (non-contiguous)
				 * elementwise path */
	double mem_eff;		/* fraction of the streaming rate this
				 * memory-bound kernel reaches (0: all of it;
				 * an MXFP8 cast: lop_cast) */
	double chunk_in_B;	/* KERN_CHUNK: B per operand element */
	double chunk_out_B;	/* KERN_CHUNK: B per result element */
	int chunk_bwd;		/* KERN_CHUNK: a backward kernel (its rate) */
	double chain_grid;	/* programs (thread blocks of CHAIN_THREADS) of
				 * a latency-bound kernel; 0 = not one */
	double chain_l1;	/* dependent loads one program issues one
				 * after the other that hit L1 ... */
	double chain_l2;	/* ... and that hit L2 (block.c chain_s) */
	double scatter_B;	/* B of its reads an atomic scatter-add adds
				 * into the output (gpu_scatter_add_extra_s);
				 * 0 = none */
};

enum layer_op_kind {
	LOP_KERNEL,		/* runs on the compute stream */
	LOP_COLL		/* a collective over one of the layout's groups */
};

/* The communication stream a collective runs on. */
enum layer_stream {
	LS_TP,			/* tensor parallel (and expert TP) */
	LS_CP,			/* context parallel */
	LS_EP,			/* expert dispatch and combine */
	LS_COMPUTE		/* the compute stream: compute waits for it */
};

/* How the host issues an op (the framework's cost of each kind is in
 * struct host_spec; train.c has the host model). */
enum host_call {
	HOST_OP,		/* a PyTorch op from Python (in backward: an
				 * autograd-engine node) */
	HOST_MODULE,		/* a module call (Transformer Engine), its
				 * first kernel (in backward: the module's
				 * Python backward) */
	HOST_FREE,		/* launched inside the call of an earlier op
				 * (one more kernel from C++) */
	HOST_COLL		/* a torch.distributed collective call */
};

/* Which pass an op belongs to (names and accounting). */
enum layer_pass {
	PASS_FWD,
	PASS_BWD,
	PASS_RECOMPUTE
};

#define LAYER_IN (-2)		/* dependency on the list's input */
#define LAYER_NONE (-1)
#define LAYER_MAX_OPS 512

struct layer_op {
	const char *name;	/* base name, static ("qkv", "fc1_dgrad") */
	enum layer_op_kind kind;
	enum layer_pass pass;
	struct kern k;		/* LOP_KERNEL */
	enum coll_op coll;	/* LOP_COLL */
	double coll_B;		/* B, LOP_COLL size per coll.h's convention */
	const double *a2a_B;	/* LOP_COLL all-to-all: uneven matrix or NULL */
	uint8_t group;		/* LOP_COLL: enum layout_group */
	uint8_t stream;		/* LOP_COLL: enum layer_stream */
	uint8_t ep_path;	/* LOP_COLL: dispatch/combine on the job's
				 * expert-parallel path: enum ep_pass */
	uint8_t p2p_next;	/* LOP_COLL sendrecv: to the next rank of
				 * the group (a ring step); else group order */
	uint8_t host;		/* enum host_call */
	uint8_t amax_pass;	/* LOP_KERNEL cast (lop_cast): it includes fp8
				 * current scaling's amax pass over its input */
	uint8_t scope;		/* enum graph_scope (spec_job.h) it is part of */
	uint16_t host_n;	/* calls of its kind it stands for (0: one) */
	uint16_t host_kernels;	/* further kernels its call launches from C++ */
	uint8_t host_gemm;	/* its kernels are cuBLASLt GEMMs set up per
				 * call (host gemm cost, not kernel) */
	uint8_t host_events;	/* cudaEventRecord calls its call makes */
	uint16_t host_items;	/* per-expert items of its call (host
				 * expert_item each) */
	uint16_t host_hooks;	/* expert weights whose gradient hooks run
				 * after it (host param_hook each) */
	uint8_t wgrad;		/* LOP_KERNEL: a weight's gradient GEMM, its
				 * result the weight's shape (lop_wgrad;
				 * layer_weight_cast) */
	uint8_t side_stream;	/* LOP_KERNEL: issued on Transformer Engine's
				 * multi-stream GEMM streams (a high-priority
				 * stream: train_queue.c) */
	int16_t host_wait;	/* the op the host waits for (a device sync)
				 * before it issues this one, or LAYER_NONE */
	double host_call_s;	/* s, its call's host time on the reference
				 * CPU in place of its kind's (0: the kind's) */
	int16_t dep[2];		/* earlier ops (index), LAYER_IN or LAYER_NONE */
};

struct layer_ops {
	struct layer_op op[LAYER_MAX_OPS];
	int n;			/* ops used */
	int saved_end;		/* after layer_fwd_pass: ops past this index
				 * save no tensor for the backward */
	int needed_end;		/* after layer_fwd_pass: ops from this index
				 * on make nothing the backward reads */
	int row_gemm_at;	/* index of the first GEMM piece of the last
				 * lop_row_fwd (after its input cast) */
	uint8_t scope;		/* enum graph_scope of the ops pushed next */
};

enum layer_recompute {
	LREC_NONE,
	LREC_SELECTIVE,		/* d->rc_mods' modules (default: the attention
				 * core) recomputed before their backward */
	LREC_FULL		/* whole layer forward recomputed before backward */
};

/* The modules (bits 1 << enum recompute_module) recomputation rc re-runs
 * on its own: none unless selective, the attention core when d names
 * none. */
unsigned layer_rc_modules(const struct layer_dims *d, enum layer_recompute rc);

/* The dtype of everything but the low-precision GEMMs for a training
 * dtype: activations, weights, attention, the LM head and the loss. fp32,
 * tf32 and fp16 as given; bf16 for bf16 and for fp8/MX training
 * (TransformerEngine keeps the rest in bf16). */
enum dtype layer_base_dtype(enum dtype training);

/* The job's activation dtype: layer_base_dtype of training.dtype for a
 * training job; for an inference job (prefill, decode, serving: no
 * training.dtype) the serving engines' bf16 activations, infer.c's base
 * (infer_dims_from_job). */
enum dtype layer_job_act_dtype(const struct job_spec *j);

/* The job captures `scope` in CUDA graphs (training.cuda_graphs); never
 * SCOPE_NONE (scope: enum graph_scope, spec_job.h). */
int layer_job_captures(const struct job_spec *j, int scope);

/* Fill d from the job for one microbatch on one GPU (vocabulary padded to
 * vocab_multiple * tp, as Megatron pads it). */
void layer_dims_from_job(const struct job_spec *j, struct layer_dims *d);

/* Transformer layer forward / backward (backward preceded by the
 * recomputation the mode asks for) of kind k (NULL: dense, full
 * attention). */
void layer_fwd(const struct layer_dims *d, const struct layer_kind *k,
	       struct layer_ops *o);

/* The step's quantization of the low-precision weights of the unit whose
 * backward ops are bwd, into o (cleared): one cast op of their elements,
 * a kernel per weight, before the unit's first forward of a step; empty
 * in 16-bit or without the framework's weight_cast_per_step (d->wcast).
 * layer_cast.c has the model. */
void layer_weight_cast(const struct layer_dims *d, const struct layer_ops *bwd,
		       struct layer_ops *o);
void layer_bwd(const struct layer_dims *d, const struct layer_kind *k,
	       enum layer_recompute rc, struct layer_ops *o);

/* A multi-token-prediction module (DeepSeek-V3): norms of the hidden
 * state and of the next token's embedding, their concatenation projected
 * 2h -> h, its nk layers of kinds k (one transformer layer; a hybrid's
 * blocks, Nemotron 3 Super's attention and MoE: layer_mtp_kinds), and
 * (with_head) the shared LM head and loss; without, the head runs as a
 * unit of its own on the loss's stage (the MTP in a stage of its own).
 * embed_summed: the module's embedding lookup is not the last in the
 * backward of its weight on this rank (one stage, or a later MTP
 * module), so its gradient is summed into the weight's by autograd
 * instead of added to main_grad (layer.c embed_bwd_dense). */
void layer_mtp_fwd(const struct layer_dims *d, const struct layer_kind *k,
		   int nk, int with_head, struct layer_ops *o);
void layer_mtp_bwd(const struct layer_dims *d, const struct layer_kind *k,
		   int nk, enum layer_recompute rc, int with_head,
		   int embed_summed, struct layer_ops *o);

/* The kinds of model m's MTP module into k (at most MODEL_MTP_BLOCKS):
 * its mtp_hybrid_override_pattern's blocks (Megatron-Core builds the
 * module's layers from that pattern; Megatron-Bridge's Nemotron 3 Super
 * recipe: "*E"), else one layer of the last layer's kind, as
 * train_cost.c builds it. Returns how many. */
int layer_mtp_kinds(const struct model_spec *m, struct layer_kind *k);

/* Embedding lookup (first pipeline stage) forward / backward. */
void layer_embed_fwd(const struct layer_dims *d, struct layer_ops *o);
void layer_embed_bwd(const struct layer_dims *d, struct layer_ops *o);

/* The all-gather that rebuilds a received activation or gradient when
 * pipeline transfers are scattered over the TP ranks (pp_gather). */
void layer_pp_gather(const struct layer_dims *d, struct layer_ops *o);

/* Bytes one pipeline transfer carries per TP rank. */
double layer_pp_bytes(const struct layer_dims *d);

/* Final norm, LM head and cross-entropy loss (last pipeline stage). */
void layer_head_fwd(const struct layer_dims *d, struct layer_ops *o);
void layer_head_bwd(const struct layer_dims *d, struct layer_ops *o);

/* Under defer_embedding_wgrad_compute: the head's backward without the
 * output layer's weight gradient, and that gradient alone as the
 * pipeline flush runs it for one deferred microbatch (its input's TP
 * all-gather under SP, then the GEMM into main_grad). */
void layer_head_bwd_deferred(const struct layer_dims *d, struct layer_ops *o);
void layer_head_wgrad(const struct layer_dims *d, struct layer_ops *o);

/* Transformer Engine's fp8 delayed scaling at the end of one model
 * chunk's forward (bwd 0) or backward (bwd 1) of a microbatch over
 * `layers` layers: the blocking all-reduce (MAX) of the chunk's amaxes
 * over d->amax_group. o->n = 0 when there is none (not fp8, no reduction,
 * a group of one GPU). */
void layer_fp8_amax(const struct layer_dims *d, int bwd, double layers,
		    int64_t group_size, struct layer_ops *o);

/* Model FLOPs of a kernel, the count MFU divides (Megatron-LM's
 * num_floating_point_operations): k->model_flops when the builder set it
 * (the attention core: attn.c counts the causal half of the whole
 * sequence's score matrix, however it is split or computed); else GEMMs
 * 2mnk per batch, attention 4 b a P (d + d_v)/2 forward and twice that
 * backward with P the pairs the causal mask leaves, s^2/2 for causal
 * self-attention (s_q s_kv unmasked); memory-bound ops 0. Never more than
 * the GPU model executes for the same kernel (docs/mfu.md). */
double layer_kern_model_flops(const struct kern *k);

/* Sum of model FLOPs of the ops of one pass. */
double layer_ops_flops(const struct layer_ops *o, enum layer_pass pass);

/* Elements of a routed token row (dispatch, experts, combine): a latent
 * MoE's latent size (moe_dims.width), else h. Inline: moe.c,
 * moe_permute.c, route.c, layer_dims.c and footprint.c read it (a
 * function in any of them would make a file cycle). */
static inline double moe_row_width(const struct layer_dims *d)
{
	return d->moe.width > 0 ? d->moe.width : d->hidden;
}

/* Which linears carry biases (the bias argument below): the attention's
 * (attention_bias) and the MLP's, experts' and router's (mlp_bias), as
 * transformers and Megatron-Bridge read the two keys apart (e.g.
 * GLM-4.5: attention_bias true, its MLP and experts without bias). */
enum { LAYER_BIAS_ATTN = 1, LAYER_BIAS_MLP = 2 };

int layer_bias_of(const struct model_spec *m);

/* Parameters of one transformer layer, of the input embedding (with a
 * learned position table), and of the LM head plus final norm. Whole
 * model, not divided by tp. vocab is the padded vocabulary; bias the
 * LAYER_BIAS_* bits. */
double layer_params(const struct layer_dims *d, int bias, int layernorm);

/* Parameters of one layer split by how they are sharded: dense (the
 * attention, norms, router, shared experts and a dense MLP: over tp,
 * gradients over dp x cp) and routed experts (over etp x ep, gradients
 * over edp). Whole model, not divided by any degree. */
void layer_kind_params(const struct layer_dims *d, const struct layer_kind *k,
		       int bias, int layernorm, double *dense,
		       double *experts);
double layer_embed_params(const struct layer_dims *d, double max_positions);
double layer_head_params(const struct layer_dims *d, int layernorm);

#endif
