/*
 * spec_job.h - a job: which model on which system, what phase, with which
 * training settings and parallel layout.
 *
 * This is the contract users and later issues rely on (see DESIGN.md):
 *
 *   model: NAME | path | {preset: NAME, ...overrides}
 *   system: NAME | path | {preset: NAME, ...overrides}
 *   phase: training | prefill | decode | serving
 *   framework: NAME | path | {preset: NAME, ...overrides}  (megatron-core)
 *   training: {seq_len, global_batch_size, micro_batch_size, dtype,
 *              recompute, zero_stage, optimizer, attention, dropout}
 *   parallelism: {tp, pp, cp, ep, etp, dp, vpp, sequence_parallel,
 *                 schedule, pp_layers, tp_comm_overlap, cp_comm_type,
 *                 cp_a2a, cp_load_balance, attention_dp, rank_order}
 *   moe: {dispatcher, shared_expert_overlap, a2a_overlap, routing, ...}
 *        (spec_moe.h)
 *   serving: {engine, dtype, kv_dtype, requests, input_len, output_len,
 *             arrival_rate, ...}   (inference phases; spec_serving.h)
 *   full_fidelity: false
 *   straggler: {gpu, compute_scale}  (none: gpu -1; full fidelity only)
 *
 * A framework (workloads/frameworks/) holds what the training software
 * does that is not the model or the layout: gradient and optimizer-state
 * dtypes, bucket sizes, overlap switches, padding, workspace, host
 * overhead; each number with its source in the preset.
 *
 * dp is optional and inferred as GPUs / (tp * pp * cp). The experts of a
 * pipeline stage fold over the same tp * cp * dp GPUs as etp * ep * edp
 * (Megatron-Core parallel folding): etp defaults to tp (as Megatron's
 * expert_tensor_parallel_size), edp is inferred. The schema's check
 * enforces the layout constraints that need no performance model (world
 * size, batch divisibility, heads divisible by tp, ...), each a diagnostic
 * naming the constraint.
 *
 * Depends on schema.h, spec_model.h, spec_system.h, spec_moe.h.
 */
#ifndef LLMSIM_CONFIG_SPEC_JOB_H
#define LLMSIM_CONFIG_SPEC_JOB_H

#include <stdint.h>

#include "schema.h"
#include "spec_model.h"
#include "spec_moe.h"
#include "spec_serving.h"
#include "spec_system.h"

enum job_phase {
	PHASE_TRAINING,
	PHASE_PREFILL,		/* one engine step of prompt chunks */
	PHASE_DECODE,		/* one engine step of decoding sequences */
	PHASE_SERVING		/* a request stream through an engine */
};

enum recompute {
	RECOMPUTE_NONE,
	RECOMPUTE_SELECTIVE,		/* the modules of recompute_modules
					 * (default: the attention core) */
	RECOMPUTE_FULL			/* whole layer */
};

/* How fp8 (per-tensor e4m3/e5m2) scales are chosen (Transformer Engine
 * recipes): from an amax history (DelayedScaling), from the tensor's own
 * amax just computed (Float8CurrentScaling), or per 1x128 / 128x128 block
 * (Float8BlockScaling, DeepSeek-V3's). */
enum fp8_scaling {
	FP8_DELAYED,
	FP8_CURRENT,
	FP8_BLOCK
};

/* What selective recomputation re-runs in the backward (Megatron-Core
 * TransformerConfig.recompute_modules, with recompute_granularity
 * 'selective'): the module's forward runs again before its backward and
 * the activations it kept are dropped. */
enum recompute_module {
	RCM_CORE_ATTN,		/* the attention core */
	RCM_MOE_ACT,		/* the experts' activation (its output dropped) */
	RCM_LAYERNORM,		/* the input and pre-MLP norms (outputs dropped) */
	RCM_MLA_UP_PROJ,	/* MLA's up projections and RoPE (Q, K, V dropped) */
	RCM_MLP,		/* a dense layer's MLP (checkpointed at its input) */
	RCM_MOE,		/* an MoE layer's routed MLP, dispatch included */
	RCM_SHARED_EXPERTS,	/* the shared experts (checkpointed) */
	RCM_OPS,		/* every op of a dense layer but those
				 * torchtitan's op-level SAC policy saves */
	RCM_COUNT
};

/* "core_attn", "moe_act", "layernorm", "mla_up_proj", "mlp", "moe",
 * "shared_experts", "ops" (enum recompute_module order). */
extern const char *const recompute_module_names[];

struct job_spec;

/* Whether the job's training.recompute_modules names module m. */
int job_recomputes(const struct job_spec *j, enum recompute_module m);
/* Warn (d) when training.fp8_scaling is given on a job whose dtype is
 * not fp8, or training.fp8_attention on a 16- or 32-bit one
 * (spec_recompute.c). */
void job_fp8_scaling_check(const struct job_spec *j, struct diag *d,
			   const struct cnode *node);

struct diag;
struct cnode;

/* recompute_modules against recompute and the model (spec_recompute.c):
 * 0, or -1 after an error at the job's mapping `node`. */
int job_recompute_check(const struct job_spec *j, struct diag *d,
			const struct cnode *node);

enum optimizer {
	OPT_ADAM,
	OPT_SGD
};

enum pp_schedule {
	SCHED_GPIPE,
	SCHED_1F1B,
	SCHED_INTERLEAVED
};

extern const char *const job_phase_names[];
extern const char *const recompute_names[];
extern const char *const optimizer_names[];
extern const char *const fp8_scaling_names[];
extern const char *const pp_schedule_names[];

/* How the GPUs are numbered over the parallel dimensions, fastest first
 * (Megatron-Core initialize_model_parallel's order): the default puts
 * the pipeline stages outermost; Megatron's use_tp_pp_dp_mapping puts
 * them inside the data-parallel replicas (models/layout.h). */
enum rank_order {
	ORDER_TP_CP_EP_DP_PP,
	ORDER_TP_CP_EP_PP_DP
};

extern const char *const rank_order_names[];
extern const char *const attention_names[];

/* How context parallelism exchanges keys and values (Megatron
 * --cp-comm-type, TransformerEngine's implementations). */
enum cp_comm {
	CP_P2P,			/* ring: KV blocks passed to the next rank */
	CP_ALLGATHER,		/* KV all-gathered, dKV reduce-scattered */
	CP_A2A,			/* Ulysses: Q, K, V, O all-to-all, heads / cp */
	CP_A2A_P2P		/* a2a inside groups of cp_a2a, ring across them */
};

extern const char *const cp_comm_names[];

enum attention_impl {
	ATTN_FLASH,		/* fused (flash) attention, scores never stored */
	ATTN_UNFUSED		/* QK^T and AV GEMMs with a materialized softmax */
};

/* How the framework runs the optimizer's parameter update. */
enum opt_update_impl {
	OPT_UPDATE_FUSED,	/* one multi_tensor_apply pass (apex/torch fused Adam) */
	OPT_UPDATE_EAGER,	/* a per-tensor loop of PyTorch ops (Composer's
				 * DecoupledAdamW): 9 kernels, intermediates */
	OPT_UPDATE_FOREACH	/* torch.optim.Adam's default on CUDA,
				 * _multi_tensor_adam: 7 foreach passes */
};

extern const char *const opt_update_names[];

/* Parts of a layer a framework can capture in CUDA graphs (Megatron-Core
 * cuda_graph_scope with cuda_graph_impl transformer_engine): replayed
 * with one host call instead of an issue per kernel. */
enum graph_scope {
	SCOPE_NONE,		/* not captured */
	SCOPE_ATTN,		/* the self-attention block */
	SCOPE_MLP,		/* a dense MLP */
	SCOPE_MOE,		/* a whole MoE MLP (static shapes only) */
	SCOPE_MOE_ROUTER,	/* the router */
	SCOPE_MOE_PREPROCESS,	/* the dispatcher's preprocessing */
	SCOPE_MAMBA,		/* a hybrid's Mamba-2 layer (Megatron-Core
				 * cuda_graph_scope "mamba") */
	SCOPE_COUNT
};

/* "attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba" (from
 * SCOPE_ATTN). */
extern const char *const graph_scope_names[];

/* "vendor", "flash2", "flash_triton", "ck_tile", "sdpa_flash": enum gpu_attn_kernel
 * (gpu.h). */
extern const char *const attn_kernel_names[];
/* "same", then attn_kernel_names: framework.attention_mla_bwd_kernel */
extern const char *const attn_mla_bwd_kernel_names[];
/* "none", "tp_cp", "stage": enum amax_reduction. */
extern const char *const amax_reduction_names[];

enum amax_reduction {
	AMAX_NONE,		/* no reduction (or not fp8) */
	AMAX_TP_CP,		/* over tensor x context parallel ranks */
	AMAX_STAGE		/* over every GPU of the pipeline stage */
};

/* "none", "aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn":
 * enum moe_lb_type, Megatron-Core's moe_router_load_balancing_type
 * (sinkhorn is named only to be refused: spec_framework.c). */
extern const char *const moe_lb_type_names[];

enum moe_lb_type {
	MOE_LB_NONE,		/* no aux loss: no aux kernels, no count reduce */
	MOE_LB_AUX,		/* aux_loss: counts all-reduced over tp x cp */
	MOE_LB_SEQ_AUX,		/* seq_aux_loss: the same group */
	MOE_LB_GLOBAL_AUX,	/* global_aux_loss: over tp x dp x cp */
	MOE_LB_SINKHORN		/* refused (not modelled) */
};

/* "none", "fprop", "all": enum fp8_fast_accum. */
extern const char *const fp8_fast_accum_names[];

/* Which fp8 GEMMs of a training step run in Hopper's fast-accumulation
 * mode (gpu.h gpu_use_fp8_fast_accum); the others promote their partial
 * sums to fp32 (split accumulator). */
enum fp8_fast_accum {
	FP8_FAST_NONE,		/* every fp8 GEMM promoted */
	FP8_FAST_FPROP,		/* the forward GEMMs (and their recomputation);
				 * dgrad and wgrad promoted */
	FP8_FAST_ALL		/* every fp8 GEMM fast */
};

/* "megatron", "front": enum pp_split. */
extern const char *const pp_split_names[];

/* How a framework splits the layers over the virtual pipeline stages
 * when the job gives no parallelism.pp_layers (split.h). */
enum pp_split {
	PP_SPLIT_MEGATRON,	/* even; else the embedding and loss as a layer
				 * each; else the recipes' layouts: ceil(L/S) a
				 * stage, the last then the first giving up the
				 * surplus */
	PP_SPLIT_FRONT		/* floor(L/S) a stage, the first L mod S
				 * stages one more (torch pipelining helpers) */
};

/* "random", "round_robin": enum balanced_gate. */
extern const char *const balanced_gate_names[];

/* How a framework's force-balanced benchmark gate (a job's routing
 * balance uniform) picks a token's k experts. */
enum balanced_gate {
	GATE_RANDOM,		/* k distinct experts at random (Megatron-Core
				 * --moe-router-force-load-balancing: random
				 * logits, then the model's top-k) */
	GATE_ROUND_ROBIN	/* token t takes experts k t .. k t + k - 1
				 * mod E (NeMo AutoModel FakeBalancedGate) */
};

/* The passes of the optimizer step over a rank's shard, as the framework
 * runs them (train_dp.c costs each). */
struct opt_step_spec {
	int grad_unscale;	/* fp16 loss scaling: unscale + inf check (fp16 jobs only) */
	int grad_norm;		/* the gradient-norm pass of clipping */
	int grad_clip;		/* gradients scaled by the clip coefficient every step */
	int update;		/* enum opt_update_impl */
	int decoupled_decay;	/* AdamW's decoupled weight decay: a pass of its
				 * own under the foreach update only */
	int copy_params;	/* fp32 master weights copied to the 16-bit model weights */
	int zero_grad;		/* the gradient buffer zeroed for the next step */
};

/* How the framework runs the memory-bound ops of a layer (fused kernels
 * or PyTorch ops one by one); layer.c has the bytes of each form. */
struct elementwise_spec {
	int64_t norm_bwd_passes;	/* kernels of a norm backward reading x and dy:
					 * 1 (apex/TE: dx and dgamma partials at once) or
					 * 2 (PyTorch: dx, then dgamma re-reading both) */
	int eager_norm;			/* norms as PyTorch ops on an fp32 copy
					 * (torchtitan's RMSNorm) */
	int eager_rope;			/* rotary as PyTorch ops on the q/k views */
	int complex_rope;		/* rotary on complex views (torchtitan):
					 * three kernels a tensor, eager or
					 * compiled */
	int mla_concat;			/* MLA's q and k assembled by torch.cat
					 * (k's rotary part expanded to every head) */
	int eager_activation;		/* gated activation as act(g) * u, two kernels
					 * on the halves of the first MLP GEMM's output */
	int bias_kernels;		/* a biased model's linear biases as their own
					 * kernels: the QKV output's bias add, every
					 * bias gradient's sum over the tokens */
	int expand_kv;			/* GQA: K and V expanded to the query heads
					 * before attention (repeat_interleave) */
	int qkv_split;			/* GQA: Megatron-Core's split of the fused
					 * QKV output (query reshape copy, two
					 * rotary calls, the gradients' cat) */
	int expert_bias_kernels;	/* a biased MoE's second expert GEMM returns
					 * its bias, added per local expert times the
					 * routing probability by PyTorch ops */
	int expert_fc1_bias_kernels;	/* a biased MoE's first expert GEMM's bias
					 * added per local expert by PyTorch ops */
	int glu_clamp_kernels;		/* a clamped GLU's clamps as their own
					 * kernels ahead of the fused activation */
	int glu_offset_sync;		/* that GLU's linear offset made a device
					 * tensor each call: a blocking copy, the
					 * host waits for the stream */
	int glu_probs_grad_kernel;	/* a GLU weighted by the routing
					 * probabilities reduces their gradient
					 * in a kernel of its own */
	int fused_rope_mscale;		/* the fused rotary kernel applies YaRN's
					 * attention factor (else the rope runs as
					 * PyTorch ops when that factor is not 1) */
	int per_expert_quantize;	/* MX formats: a grouped GEMM's input
					 * quantized by one kernel per expert */
	int mx_generic_cast;		/* MXFP8 casts by Transformer Engine's
					 * generic quantize kernel (gpu
					 * mx_cast_efficiency applies) */
	int weight_scale_swizzle;	/* MXFP8/NVFP4: every GEMM reading a
					 * weight first swizzles its block
					 * scales, a kernel of its own */
	int no_fp8_weight_transpose_cache;	/* per-tensor FP8: the forward's
					 * weight cast keeps no transposed copy,
					 * each backward transposes the FP8
					 * weight for its dgrad */
	int fp8_sp_row_transpose;	/* per-tensor FP8 under TP sequence
					 * parallelism: a row-parallel linear
					 * casts its input row-wise only and
					 * its backward transposes the saved
					 * FP8 input for the wgrad (TE 1.x) */
	int act_scale_swizzle;		/* and its quantized inputs' and
					 * gradients' (TE before 2.12) */
	int expert_quant_padding;	/* low precision: the grouped MLP copies
					 * its rows into per-expert aligned splits
					 * and back (Megatron-Core Fp8Padding) */
	int masked_select_permute;	/* MoE, unfused permute: masked_select
					 * (two device syncs), not argsort */
	int64_t grouped_gemm_streams;	/* the experts' grouped GEMM as one GEMM
					 * kernel per local expert over this many
					 * streams; 0 = one grouped kernel */
	const char *grouped_gemm_fwd_kernel_arch;	/* on a GPU of this arch
					 * (gpu_spec.arch) the forward's grouped
					 * GEMMs are one grouped kernel all the
					 * same; NULL: none */
};

/* The host (CPU) thread that issues a rank's GPU work: what each kind of
 * call costs it on the reference CPU (an Intel Xeon Platinum 8480C; a
 * system's host_dispatch_scale rescales), and the device syncs the
 * framework makes. All zero (section absent): the host is not modeled.
 * src/models/train.c has the model. */
struct host_spec {
	double op_s;		/* s, a PyTorch op issued from Python (dispatch,
				 * autograd record, kernel launch) */
	double module_s;	/* s, a fused-extension module's forward call
				 * (Transformer Engine), its first kernel */
	double bwd_op_s;	/* s, an autograd-engine node of a PyTorch op (C++) */
	double bwd_module_s;	/* s, a module's backward (Python autograd.Function) */
	double kernel_s;	/* s, each further kernel a call launches from C++ */
	double gemm_s;		/* s, each cuBLASLt GEMM of a per-expert loop that
				 * builds its descriptors and asks the heuristic
				 * every call (0: as kernel_s) */
	double event_s;		/* s, a cudaEventRecord on a timing-enabled event */
	double expert_item_s;	/* s, each local expert of a per-expert GEMM
				 * loop's call (forward or backward) beyond
				 * its GEMM: the per-expert Python and the
				 * C++ wrappers of the call */
	double param_hook_s;	/* s, each expert weight's gradient handed to
				 * autograd in backward: its AccumulateGrad
				 * node and the DDP post-hook */
	double collective_s;	/* s, a torch.distributed collective call */
	double graph_s;		/* s, one CUDA graph replay */
	double sync_s;		/* s, the host resuming after a device sync */
	int p2p_sync;		/* a device synchronize after each batched
				 * pipeline send/recv (non-interleaved schedules) */
	int64_t router_ops;	/* MoE: small PyTorch ops of the router beyond its
				 * GEMM and top-k, without an aux loss */
	int64_t router_aux_ops;	/* MoE: more of them for the aux loss (none
				 * when moe_lb_type is none) */
	int64_t router_bwd_ops;	/* MoE: kernels of the aux loss's backward
				 * beyond the top-k's (autograd nodes) */
	int64_t dispatch_ops;	/* MoE: small PyTorch ops of the dispatcher's
				 * preprocessing (counts, splits, their copies) */
	int64_t dispatch_unfused_ops;	/* MoE: more of them with the unfused
				 * permute and more than one local expert */
};

/* What the training framework does beyond the model and the layout. */
struct framework_spec {
	const char *name;			/* preset name */
	int grad_dtype;				/* enum dtype: gradient buffers and their reduction */
	int grad_buffer_full;			/* ZeRO 2 keeps every gradient of the rank in one
						 * buffer (Megatron-Core DDP): only ZeRO 3 shards it */
	int master_weights;			/* fp32 master copy of 16-bit weights */
	int optimizer_state_dtype;		/* enum dtype: Adam's moments, SGD's momentum */
	int64_t bucket_params;			/* parameters per gradient bucket (at least) */
	int64_t bucket_params_per_dp;		/* parameters per bucket per data-parallel rank (at least) */
	int later_stages_one_bucket;		/* pipeline ranks > 0 keep each gradient buffer in one bucket */
	int loss_dp_allreduce;			/* every microbatch's loss is all-reduced over the
						 * data-parallel group (without CP) in its forward */
	int overlap_grad_reduce;		/* bucket reductions start during the backward */
	int grad_nan_check;			/* each bucket's gradient norm is checked for
						 * NaN/Inf (two host syncs) before its reduction */
	int average_in_collective;		/* the reduction averages; else each bucket is
						 * scaled by 1/(dp cp) before it */
	int per_token_loss;			/* the loss is a token sum: no bucket pre-scaling,
						 * the whole gradient buffer scaled by 1/tokens
						 * before the optimizer step */
	int overlap_param_gather;		/* distributed optimizer's all-gather overlaps the next forward */
	int64_t device_max_connections;		/* CUDA_DEVICE_MAX_CONNECTIONS: hardware work
						 * queues from the host to the GPU; 1 starts
						 * kernels in launch order (train_queue.c);
						 * -1 = Megatron's launcher rule (train_queue.c
						 * train_one_connection) */
	int64_t dp_comm_max_units;		/* SMs a data-parallel collective holds at most
						 * (NCCL per-communicator max_ctas); 0 = the
						 * library's kernel_units */
	int fp8_param_gather;			/* fp8 jobs: the distributed optimizer gathers the
						 * layers' parameters in one byte each
						 * (train_gather_bytes), and per-tensor FP8
						 * weights need no step cast (layer_weight_cast) */
	int64_t tp_comm_overlap_chunks;		/* pieces a GEMM is split in with tp_comm_overlap; 0 = tp */
	int64_t linear_attn_chunk;		/* tokens a chunk of the Gated DeltaNet chunk
						 * kernels (flash-linear-attention: 64) */
	int64_t tp_comm_overlap_units;		/* compute units an overlapped TP reduce-scatter holds
						 * (its all-gathers run on copy engines) */
	int64_t fsdp_prefetch_units;		/* ZeRO-3: units whose parameters are gathered at
						 * once (the one computing and those prefetched) */
	int fsdp_grad_passes;			/* ZeRO-3: torch FSDP's per-unit memory passes around
						 * its all-gathers and reduce-scatters (layer.c) */
	int fsdp_reshard_after_forward;		/* ZeRO-3: a unit frees its gathered
						 * parameters after its forward (else
						 * they stay until its backward: every
						 * unit of the rank at once, footprint.c) */
	int fsdp_root_unit;			/* ZeRO-3, pp 1: embedding and head are one
						 * FSDP unit, the root (train_dp.c) */
	int fsdp_last_layer_held;		/* ZeRO-3, pp 1: the last layer is not
						 * resharded after its forward */
	int cp_torch_sdpa;			/* CP as torch.distributed.tensor.
						 * experimental.context_parallel runs
						 * SDPA (attn_cp.c torch_cp) */
	int cp_torch_compiled;			/* that SDPA inside a torch.compile'd
						 * region: its collectives waited at
						 * once, its merges fused (attn_cp.c) */
	int pp_lockstep;			/* interleaved 1F1B as torch.distributed.
						 * pipelining's PipelineScheduleMulti runs
						 * it: one action a time step, each step's
						 * sends and receives waited for before the
						 * next (train_pp.c) */
	int fsdp_expert_reduce_dtype;		/* ZeRO-3: enum dtype of the routed experts'
						 * reduce-scatters, or -1: grad_dtype */
	int fsdp_reduce_one_in_flight;		/* ZeRO-3: FSDP2's post-backward waits on the
						 * compute stream for the reduce-scatter issued
						 * before its own, and the routed experts' own
						 * FSDP unit reduces after their backward
						 * (train_dp.c) */
	int sp_seq_dim_copies;		/* TP sequence parallelism as DTensor Shard(1):
						 * every SP all-gather and reduce-scatter
						 * along the sequence dim of [batch, seq,
						 * hidden] costs a copy (layer_ops.c) */
	int separate_linears;		/* the model code runs Q, K, V (and a
						 * gated MLP's gate and up) as separate
						 * linears on one input (layer_ops.c
						 * lop_column_fwd_parts) */
	int sp_backward_regather;	/* SP: a column-parallel linear's backward
						 * all-gathers its input again for the wgrad
						 * (else the forward's gathered input, or its
						 * recomputation, serves) */
	int fsdp2_copy_passes;		/* ZeRO-3: FSDP2's all-gather copy-out and
						 * reduce-scatter copy-in on the compute stream
						 * (layer.c) */
	int recompute_early_stop;		/* full recompute under torch's non-reentrant
						 * checkpoint: the recomputation stops once the
						 * layer's last saved tensor is recomputed
						 * (layer.c) */
	int recompute_needed_only;		/* full recompute re-runs only the forward ops
						 * the backward reads: not the layer's last
						 * GEMM and what follows it (layer.c) */
	int fsdp_pp_no_sync;			/* ZeRO-3 with pp >= 2: torch pipelining's stages keep
						 * their units gathered through a schedule run and
						 * reduce-scatter after a chunk's last backward (train_dp.c) */
	int pp_split;				/* enum pp_split: the default layer split */
	int balanced_gate;			/* enum balanced_gate: routing balance uniform */
	int pp_scatter_gather;			/* without SP, each TP rank sends 1/tp of a stage's
						 * activation and the receivers all-gather it */
	int fused_cross_entropy;		/* the loss is one fused kernel (else PyTorch ops) */
	int shared_expert_stream;		/* MoE: the shared experts run on a side
					 * stream beside the routed experts' dispatch */
	int te_permute_loop;			/* MoE: Transformer Engine < 2.6's fused
						 * permute kernels, each token's program
						 * walking every expert (moe_permute.c) */
	int moe_chunk_sort;			/* MoE: the dispatcher sorts the received rows
						 * by local expert (more than one a GPU) */
	int router_gemm_te;			/* MoE: the router's GEMMs in Transformer
						 * Engine: forward on the 16-bit inputs (the
						 * router dtype only as output), backward in
						 * the router dtype, fp32 as TF32 */
	int cross_entropy_jit;			/* else Megatron-Core's jit-fused loss functions */
	int wgrad_autograd;			/* no main_grad: autograd's fresh dW,
						 * nothing accumulated by the wgrad */
	int tp_dgrad_serial;			/* a column-parallel linear's input-gradient
						 * TP all-reduce waits for its wgrad GEMM
						 * (Megatron-LM before cf7efd4f, 2021-08) */
	int embedding_grad_dense;		/* the embedding backward is PyTorch's dense
						 * gradient (zeroed [V/t, h], 16-bit), added
						 * into main_grad by the DDP hook */
	int cross_entropy_in_place;		/* the fused loss writes its gradient into the
						 * logits (TE parallel_cross_entropy) and keeps
						 * them in their dtype, not an fp32 softmax */
	int moe_probs_in_activation;		/* MoE: the routing probabilities are applied in
						 * the experts' activation, unpermute keeps
						 * nothing of the fc2 output */
	int weight_cast_per_step;		/* low-precision training: each linear weight is
						 * quantized once a step, on its chunk's first
						 * microbatch (Transformer Engine's cached
						 * weight workspace), not per microbatch */
	int fp8_weight_cast_per_call;		/* per-tensor fp8 (torchao Float8Linear):
						 * every forward call casts the weight, every
						 * backward transposes the fp8 weight, and
						 * DTensor all-reduces each TP-sharded amax */
	int64_t vocab_multiple;			/* vocabulary padded to a multiple of this times tp */
	double workspace_B;			/* B per GPU outside weights, grads, states, activations */
	double step_overhead_s;			/* s per step of host work the GPUs wait for */
	struct opt_step_spec optimizer_step;	/* passes of the optimizer step */
	int attention_kernel;			/* enum gpu_attn_kernel: fused attention family */
	int attention_mla_bwd_kernel;		/* attn_mla_bwd_kernel_names: 0 as
						 * attention_kernel, else enum
						 * gpu_attn_kernel + 1: the backward's
						 * family when head_dim_qk != head_dim_v */
	int fp8_amax_reduction;			/* enum amax_reduction: fp8 delayed scaling's
						 * blocking amax all-reduce per chunk pass */
	int moe_lb_type;			/* enum moe_lb_type: the MoE router's load
						 * balancing (Megatron moe_router_load_
						 * balancing_type): its aux kernels and the
						 * group its token counts are all-reduced over */
	double moe_aux_loss_coeff;		/* Megatron moe_aux_loss_coeff: the aux loss
						 * runs only when it is > 0 (job_aux_loss) */
	int fp8_fast_accum;			/* enum fp8_fast_accum: the fp8 GEMMs run in
						 * Hopper's fast-accumulation mode */
	struct elementwise_spec elementwise;	/* how the memory-bound ops run */
	struct host_spec host;			/* the host thread's costs; 0 = not modeled */
};

extern const struct schema framework_schema;

struct training_spec {
	int64_t seq_len;		/* tokens per sequence */
	int64_t global_batch_size;	/* sequences per step, all replicas */
	int64_t micro_batch_size;	/* sequences per microbatch per replica */
	int64_t local_batch_size;	/* sequences per replica one pipeline
					 * schedule runs (it drains after each);
					 * 0 = the whole step */
	int dtype;			/* enum dtype (spec_gpu.h) */
	int recompute;			/* enum recompute */
	int fp8_scaling;		/* enum fp8_scaling (dtype fp8) */
	struct schema_int_list recompute_modules;	/* enum recompute_module
					 * values selective recomputes; empty:
					 * core_attn */
	int64_t zero_stage;		/* 0-3; 3 = FSDP full sharding */
	int optimizer;			/* enum optimizer */
	int attention;			/* enum attention_impl */
	int dropout;			/* dropout layers present (masks, elementwise cost) */
	int fp8_attention;		/* attention in FP8 (TE fp8_dot_product_attention) */
	int fp8_output_proj;		/* the LM head's GEMMs in MXFP8
					 * (Megatron-Core fp8_output_proj) */
	int64_t cpu_offload_layers;	/* the first this many layers' saved
					 * activations go to host memory and
					 * back (Megatron-Core cpu_offloading_
					 * num_layers); 0: none */
	int64_t comm_hw_queues;			/* hardware queues the collective
					 * library's streams share (HIP
					 * GPU_MAX_HW_QUEUES); 0: one each */
	int gradient_accumulation_fusion;	/* 1: wgrad GEMMs add into the
					 * fp32 main_grad in their epilogue
					 * (Megatron's default); 0: a separate
					 * add kernel per weight per microbatch */
	struct schema_int_list cuda_graphs;	/* enum graph_scope values captured in
					 * CUDA graphs (Megatron cuda_graph_scope) */
};

struct parallel_spec {
	int64_t tp;			/* tensor parallel */
	int64_t pp;			/* pipeline stages */
	int64_t cp;			/* context parallel */
	int64_t ep;			/* expert parallel */
	int64_t etp;			/* expert tensor parallel (default tp) */
	int64_t edp;			/* expert data parallel, inferred:
					 * tp cp dp / (etp ep) */
	int64_t dp;			/* data parallel (inferred when absent) */
	int64_t vpp;			/* virtual stages per pipeline rank */
	int sequence_parallel;		/* shard norms/dropout along sequence with TP */
	int schedule;			/* enum pp_schedule */
	struct schema_int_list pp_layers;	/* layers per virtual stage (pp*vpp, in
					 * stage order chunk*pp + rank); empty = even */
	const char *pp_layout;		/* Megatron's pipeline_model_parallel_layout
					 * (config/pp_layout.h), or NULL */
	int tp_comm_overlap;		/* GEMMs pipelined with their TP collectives */
	int defer_embedding_wgrad;	/* the last stage's output-layer weight
					 * gradients deferred to the pipeline
					 * flush (Megatron-Core's
					 * defer_embedding_wgrad_compute) */
	int64_t wgrad_deferral_limit;	/* microbatches deferred, 0 = all */
	int cp_comm_type;		/* enum cp_comm */
	int64_t cp_a2a;			/* a2a+p2p: inner all-to-all group size */
	int cp_load_balance;		/* 2 cp chunks per sequence (causal) */
	int attention_dp;		/* inference: attention data-parallel over the
					 * dp ranks of one engine (MoE layers expert-
					 * parallel over all its GPUs) */
	int rank_order;			/* enum rank_order */
};

/* One GPU whose kernels run slower than its peers' (a thermally throttled
 * or degraded part): every compute kernel of that GPU takes compute_scale
 * times as long. It makes the GPUs unlike, so it needs full fidelity. */
struct straggler_spec {
	int64_t gpu;			/* global GPU id, or -1 for none */
	double compute_scale;		/* kernel time factor, >= 1 */
};

struct job_spec {
	const char *name;			/* job name */
	const struct model_spec *model;
	const struct system_spec *system;
	const struct framework_spec *framework;
	int phase;				/* enum job_phase */
	struct training_spec training;
	struct parallel_spec parallelism;
	struct moe_job_spec moe;		/* MoE models only */
	struct serving_spec serving;		/* phases prefill, decode, serving */
	int full_fidelity;			/* simulate every GPU, not one per symmetric group */
	struct straggler_spec straggler;	/* a slow GPU, or gpu -1 */
};

/* 1 for the inference phases (prefill, decode, serving). */
static inline int job_is_inference(const struct job_spec *j)
{
	return j->phase != PHASE_TRAINING;
}

/* Expert slots of an MoE layer the ep ranks share: the routed experts,
 * and for inference the job's redundant_experts (EPLB replicas). */
static inline int64_t job_expert_slots(const struct job_spec *j)
{
	return j->model->n_routed_experts +
	       (job_is_inference(j) ? j->moe.redundant_experts : 0);
}

/* Microbatches per step on one pipeline: gbs / (mbs * dp). */
static inline int64_t job_microbatches(const struct job_spec *j)
{
	return j->training.global_batch_size /
	       (j->training.micro_batch_size * j->parallelism.dp);
}

/* Whether a training step runs the MoE router's aux loss: Megatron-Core
 * runs it only for a load-balancing type with an aux loss and a positive
 * coefficient (router.py is_aux_loss_enabled @ d98e8a64dd l. 403-408:
 * get_aux_loss_coeff(type) > 0); inference computes no loss. */
static inline int job_aux_loss(const struct job_spec *j)
{
	return j->framework->moe_lb_type != MOE_LB_NONE &&
	       j->framework->moe_aux_loss_coeff > 0 && !job_is_inference(j);
}

/* Whether the job's routing is the framework's round-robin balanced gate
 * (routing balance uniform or forced with framework.balanced_gate
 * round_robin). */
static inline int job_round_robin_gate(const struct job_spec *j)
{
	return (j->moe.routing.balance == ROUTE_UNIFORM ||
		j->moe.routing.balance == ROUTE_FORCED) &&
	       j->framework->balanced_gate == GATE_ROUND_ROBIN;
}

/* The job's routing balance with forced resolved (enum routing_balance,
 * never ROUTE_FORCED). A force-balanced benchmark routes as its
 * framework's gate does: Megatron-Core's --moe-router-force-load-
 * balancing draws random logits for every token (moe_utils.py RandomSTE;
 * one seed a rank, so ranks route independently: results/reference/moe/
 * README.md r17), so the experts' loads are multinomial (ROUTE_RANDOM);
 * NeMo AutoModel's FakeBalancedGate is exact (round_robin). Inference
 * keeps the exact balance of aiconfigurator's balanced logits. */
static inline int job_routing_balance(const struct job_spec *j)
{
	if (j->moe.routing.balance != ROUTE_FORCED)
		return j->moe.routing.balance;
	return !job_is_inference(j) && j->framework &&
	       j->framework->balanced_gate == GATE_RANDOM ?
	       ROUTE_RANDOM : ROUTE_UNIFORM;
}

/* Pipeline schedules a step runs one after another (training.
 * local_batch_size): 1 unless a local batch is given that splits this
 * layout's microbatches evenly (the layout check refuses a job whose
 * local batch does not; a planner's candidate layout falls back to one
 * schedule). */
/* The MTP modules holding weights: mtp_layers, or 1 when the passes
 * repeat one module (moe.mtp_repeated_layer). */
static inline int64_t job_mtp_modules(const struct job_spec *j)
{
	return j->moe.mtp_repeated && j->moe.mtp_layers > 1 ? 1 :
	       j->moe.mtp_layers;
}

static inline int64_t job_schedule_runs(const struct job_spec *j)
{
	const struct training_spec *t = &j->training;
	int64_t lbs = t->local_batch_size, dp = j->parallelism.dp, per, g;

	if (lbs <= 0 || dp <= 0 || t->micro_batch_size <= 0 ||
	    lbs % t->micro_batch_size != 0)
		return 1;
	per = t->global_batch_size / dp;
	if (per <= 0 || per % lbs != 0)
		return 1;
	g = per / lbs;
	if (j->parallelism.schedule == SCHED_INTERLEAVED &&
	    (lbs / t->micro_batch_size) % j->parallelism.pp != 0)
		return 1;
	return g > 0 && job_microbatches(j) % g == 0 ? g : 1;
}

extern const struct schema job_schema;

/* job_schema without its layout check, for `llmsim plan`: a job's
 * parallelism (dp and schedule left 0 and -1 when not given) is a
 * starting point the planner searches from, not a layout to refuse. */
extern const struct schema job_plan_schema;

/* The layout rules of a job (Megatron's own asserts and what llmsim's
 * step program needs), one bit each in job_layout_check()'s result. */
enum job_rule {
	JR_WORLD,		/* tp*pp*cp*dp = the system's GPUs */
	JR_TP_HEADS,		/* tp divides the attention heads */
	JR_TP_KV_HEADS,		/* tp and the KV heads: one divides the other */
	JR_TP_FFN,		/* tp divides intermediate_size */
	JR_TP_OVERLAP,		/* tp_comm_overlap needs tp >= 2 and SP */
	JR_CP_SEQ,		/* cp divides seq_len (2 cp chunks when balanced) */
	JR_EP_DENSE,		/* ep > 1 needs routed experts */
	JR_PP_LAYERS,		/* pp*vpp <= layers */
	JR_PP_SPLIT,		/* pp_layers: pp*vpp entries summing to the layers */
	JR_BATCH,		/* micro_batch_size * dp divides global_batch_size */
	JR_SCHED_VPP,		/* vpp > 1 <=> the interleaved schedule */
	JR_SCHED_PP,		/* the interleaved schedule needs pp >= 2 */
	JR_SCHED_MICRO,		/* interleaved: microbatches a multiple of pp */
	JR_EP_EXPERTS,		/* ep divides the expert slots (routed +
				 * inference redundant_experts) */
	JR_EP_FOLD,		/* etp*ep divides a stage's tp*cp*dp GPUs */
	JR_ETP_FFN,		/* etp divides moe_intermediate_size */
	JR_TP_SHARED,		/* tp divides the shared experts' hidden size */
	JR_MOE_SP,		/* an MoE model with tp > 1 needs SP */
	JR_MTP,			/* mtp_layers within the model's */
	JR_EP_VENDOR,		/* the dispatcher runs on the system's GPUs
				 * and spans its EP group's NVLink domain */
	JR_A2A_VPP,		/* a2a_overlap with pp > 1 needs vpp > 1 */
	JR_A2A_RECOMPUTE,	/* a2a_overlap refuses full recompute */
	JR_CP_A2A,		/* cp_a2a divides cp */
	JR_CP_HEADS,		/* a2a CP: heads per TP rank divisible */
	JR_CP_TORCH,		/* framework cp_torch_sdpa: p2p or all_gather */
	JR_TRAINING_KEYS,	/* phase training: seq_len, global_batch_size given */
	JR_INF_CP,		/* inference: cp 1 */
	JR_INF_VPP,		/* inference: vpp 1 */
	JR_INF_ATTN_DP,		/* attention_dp needs an MoE model */
	JR_INF_EP,		/* inference: ep (x etp) spans an instance's GPUs */
	JR_SERVING_ENGINE,	/* inference phases: serving.engine given */
	JR_TRAIN_CHUNKED,	/* training: cp 1 over chunks < seq_len */
	JR_SP_SEQ,		/* sequence_parallel: cp*tp divides seq_len */
	JR_SPEC_MTP,		/* speculative mtp: the model has MTP layers,
				 * draft_layers of them at most */
	JR_MAX_MODEL_LEN,	/* serving.max_model_len within the model's
				 * max_position_embeddings */
	JR_POOL_EP,		/* a disaggregated pool's ep divides its
				 * instance's GPUs and the routed experts;
				 * its attention_dp needs an MoE model */
	JR_POOL_TP,		/* a disaggregated pool's tp against the
				 * model's heads and hidden sizes */
	JR_DEFER_WGRAD,		/* defer_embedding_wgrad_compute needs pp >= 2,
				 * no FSDP, no MTP modules */
	JR_TP_LINEAR_HEADS,	/* tp divides the Gated DeltaNet key heads
				 * (and so the value heads) */
	JR_LINEAR_CP,		/* training: cp 1 with Gated DeltaNet layers */
	JR_TRAIN_DSA_CP,	/* training: cp 1 under DeepSeek Sparse
				 * Attention */
	JR_RANK_ORDER,		/* rank_order tp-cp-ep-pp-dp: training, and
				 * experts fold over tp cp (etp ep = tp cp) */
	JR_CPU_OFFLOAD,		/* cpu_offload_layers: pp 1, no recompute,
				 * no CUDA graphs, fewer than the layers */
	JR_LEARNED_POS,		/* training: learned positions cover
				 * seq_len (max_position_embeddings) */
	JR_COUNT
};

/* "world", "tp_heads", ...: one name per rule; NULL-terminated. */
extern const char *const job_rule_names[JR_COUNT + 1];

/* A rule is a bit of a uint64_t mask (job_layout_check's, the planner's). */
#define JR_BIT(r) ((uint64_t)1 << (r))
#define JOB_RULES_ALL (JR_BIT(JR_COUNT) - 1)
/* 1 << 64 is undefined: past 63 rules the masks need another type. */
_Static_assert(JR_COUNT < 64, "enum job_rule has outgrown uint64_t masks");

/* The most pieces tp_comm_overlap may split a TP GEMM into (framework
 * tp_comm_overlap_chunks, else tp): a layer's ops live in a fixed list
 * (models/layer.h LAYER_MAX_OPS, 512), and DeepSeek-V3's MLA + MoE layer
 * fits 32 pieces but not 40 (checked with llmsim run, round 34); past it
 * the list overflowed and llmsim aborted. */
#define JOB_TP_OVERLAP_CHUNKS_MAX 32

/* The most local experts (experts / ep) a GPU may hold: the grouped
 * GEMM model's group table (models/block.c) has this many entries. */
#define JOB_LOCAL_EXPERTS_MAX 1024

/*
 * Check job j's layout against the rules in `rules` (JR_BIT(enum
 * job_rule) each; JOB_RULES_ALL for every one): infers parallelism.dp when it is 0
 * and the schedule when it is negative (as the schema's check does),
 * then tests each rule asked for. With d, each broken rule is reported as
 * an error at node's `parallelism` or `training` key (node may be NULL);
 * with d NULL nothing is formatted, so the planner can call it per
 * candidate. Returns the broken rules among those asked (0: valid). When
 * dp cannot be inferred nothing else is checked.
 */
uint64_t job_layout_check(struct job_spec *j, uint64_t rules, struct diag *d,
			  const struct cnode *node);

#endif
