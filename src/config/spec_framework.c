/*
 * spec_framework.c - the framework schema: what the training software
 * does (gradient dtype, buckets, overlap, optimizer step, element-wise
 * kernels, host overheads). Split from spec_job.c, whose job schema
 * refers to it as framework_schema.
 */
#include "spec_job.h"

#include <stddef.h>
#include <string.h>

#include "cnode.h"

const char *const opt_update_names[] = {"fused", "eager", "foreach", NULL};
const char *const amax_reduction_names[] = {"none", "tp_cp", "stage", NULL};
const char *const moe_lb_type_names[] = {"none", "aux_loss", "seq_aux_loss",
					 "global_aux_loss", "sinkhorn", NULL};
const char *const fp8_fast_accum_names[] = {"none", "fprop", "all", NULL};
const char *const pp_split_names[] = {"megatron", "front", NULL};
const char *const balanced_gate_names[] = {"random", "round_robin", NULL};
const char *const attn_kernel_names[] = {"vendor", "flash2", "flash_triton",
					  "ck_tile", "sdpa_flash", NULL};
const char *const attn_mla_bwd_kernel_names[] = {"same", "vendor", "flash2",
						 "flash_triton", "ck_tile",
						 "sdpa_flash", NULL};
const char *const graph_scope_names[] = {
	"attn", "mlp", "moe", "moe_router", "moe_preprocess", "mamba", NULL,
};

#define SOFF(m) offsetof(struct opt_step_spec, m)

static const struct schema_field opt_step_fields[] = {
	{ .key = "grad_unscale", .type = ST_BOOL, .offset = SOFF(grad_unscale),
	  .def = "false",
	  .help = "fp16 jobs: unscale the gradients and check them for inf/NaN "
		  "(read and write the gradient buffer)" },
	{ .key = "grad_norm", .type = ST_BOOL, .offset = SOFF(grad_norm),
	  .def = "false", .help = "gradient-norm pass of clipping (read the gradients)" },
	{ .key = "grad_clip", .type = ST_BOOL, .offset = SOFF(grad_clip),
	  .def = "false",
	  .help = "gradients multiplied by the clip coefficient every step "
		  "(read and write them)" },
	{ .key = "update", .type = ST_ENUM, .offset = SOFF(update),
	  .values = opt_update_names, .def = "fused",
	  .help = "fused: one multi_tensor_apply pass; eager: a per-tensor loop "
		  "of PyTorch ops (9 kernels with intermediates); foreach: "
		  "torch.optim.Adam's default _multi_tensor_adam, 7 "
		  "multi_tensor_apply passes (lerp, mul, addcmul, sqrt, div, "
		  "add, addcdiv; SGD as fused)" },
	{ .key = "decoupled_decay", .type = ST_BOOL,
	  .offset = SOFF(decoupled_decay), .def = "false",
	  .help = "AdamW's decoupled weight decay (weight_decay != 0): "
		  "under update foreach one more multi_tensor_apply pass "
		  "(_foreach_mul_ of the parameters by 1 - lr wd: read and "
		  "write the stepped parameters); the fused and eager updates "
		  "decay inside their own pass, so there it adds nothing" },
	{ .key = "copy_params", .type = ST_BOOL, .offset = SOFF(copy_params),
	  .def = "false",
	  .help = "with master weights, copy them to the 16-bit model weights "
		  "(read fp32, write 16-bit)" },
	{ .key = "zero_grad", .type = ST_BOOL, .offset = SOFF(zero_grad),
	  .def = "false", .help = "zero the gradient buffer (write it)" },
};

static const struct schema opt_step_schema = {
	.kind = "framework.optimizer_step",
	.help = "the passes of the optimizer step over a rank's parameters",
	.size = sizeof(struct opt_step_spec),
	.fields = opt_step_fields,
	.nfields = SCHEMA_COUNT(opt_step_fields),
};

#define EOFF(m) offsetof(struct elementwise_spec, m)

static const struct schema_field elementwise_fields[] = {
	{ .key = "norm_bwd_passes", .type = ST_INT, .offset = EOFF(norm_bwd_passes),
	  .def = "1", .min = 1, .max = 2,
	  .help = "kernels of a norm backward that read x and dy: 1 (apex, "
		  "Transformer Engine), 2 (PyTorch: dgamma re-reads them)" },
	{ .key = "eager_norm", .type = ST_BOOL, .offset = EOFF(eager_norm),
	  .def = "false",
	  .help = "RMS norms as PyTorch ops on an fp32 copy of x (x.float(), "
		  "pow, mean, + eps, rsqrt, *, type_as, * weight: eight "
		  "kernels forward, about twelve backward; torchtitan's eager "
		  "RMSNorm); overrides norm_bwd_passes (LayerNorm models keep "
		  "PyTorch's native layer_norm kernels)" },
	{ .key = "eager_rope", .type = ST_BOOL, .offset = EOFF(eager_rope),
	  .def = "false",
	  .help = "rotary embedding as PyTorch ops on the q and k views "
		  "(x cos + cat(-x2, x1) sin: five kernels each way)" },
	{ .key = "complex_rope", .type = ST_BOOL, .offset = EOFF(complex_rope),
	  .def = "false",
	  .help = "rotary embedding on complex views (torchtitan's "
		  "apply_rotary_emb: x.float() viewed as complex, times "
		  "freqs_cis, view_as_real, type_as): three kernels on q and "
		  "three on k each way with fp32 intermediates, compiled or "
		  "not (inductor falls back to ATen for complex operators); "
		  "overrides eager_rope" },
	{ .key = "mla_concat", .type = ST_BOOL, .offset = EOFF(mla_concat),
	  .def = "false",
	  .help = "MLA: q = cat(q_nope, q_rope) and k = cat(k_nope, k_rope "
		  "expanded to every head) as PyTorch copies (two kernels); "
		  "backward the splits' cats of the q and kv up-projection "
		  "gradients and the expanded k_rope's sum over the heads "
		  "(false: the fused rope writes them in place)" },
	{ .key = "eager_activation", .type = ST_BOOL,
	  .offset = EOFF(eager_activation), .def = "false",
	  .help = "gated activation as act(g) * u on the halves of the first "
		  "MLP GEMM's output (two kernels; four backward)" },
	{ .key = "bias_kernels", .type = ST_BOOL,
	  .offset = EOFF(bias_kernels), .def = "false",
	  .help = "a biased model's linear biases as their own kernels: the "
		  "QKV projection's output + bias, and each bias gradient "
		  "summed over the tokens (false: in the GEMM epilogue)" },
	{ .key = "expand_kv", .type = ST_BOOL, .offset = EOFF(expand_kv),
	  .def = "false",
	  .help = "GQA keys and values copied to the query heads before "
		  "attention (repeat_interleave), summed back in backward" },
	{ .key = "qkv_split", .type = ST_BOOL, .offset = EOFF(qkv_split),
	  .def = "false",
	  .help = "GQA's fused QKV output split as Megatron-Core does it "
		  "(SplitAlongDim, then the query reshaped: a copy when a GPU "
		  "holds more than one query group of more than one head), "
		  "the rotary applied to "
		  "q and k by two calls, and the three gradients concatenated "
		  "in backward (false: one fused QKV rotary call, no copies)" },
	{ .key = "expert_bias_kernels", .type = ST_BOOL,
	  .offset = EOFF(expert_bias_kernels), .def = "false",
	  .help = "a biased MoE (mlp_bias): the second expert GEMM returns "
		  "its bias and each local expert's rows get bias x routing "
		  "probability as PyTorch ops (mul, add per expert, cat, cast); "
		  "false: in the GEMM's epilogue" },
	{ .key = "expert_fc1_bias_kernels", .type = ST_BOOL,
	  .offset = EOFF(expert_fc1_bias_kernels), .def = "false",
	  .help = "a biased MoE (mlp_bias): the first expert GEMM takes no "
		  "bias and each local expert's rows get it as PyTorch ops "
		  "(add per expert, cat); false: in the GEMM's epilogue" },
	{ .key = "glu_clamp_kernels", .type = ST_BOOL,
	  .offset = EOFF(glu_clamp_kernels), .def = "false",
	  .help = "a clamped GLU (swiglu_limit): the two halves clamped and "
		  "concatenated as three PyTorch kernels before the fused "
		  "activation (false: inside it)" },
	{ .key = "glu_offset_sync", .type = ST_BOOL,
	  .offset = EOFF(glu_offset_sync), .def = "false",
	  .help = "a quick-GELU GLU (model quick_glu: Megatron-Core's "
		  "weighted_bias_quick_geglu_impl): each call of the activation "
		  "(forward and its recomputation) copies its linear offset "
		  "to the device with a blocking copy, so the host waits for "
		  "the stream before it issues the activation" },
	{ .key = "glu_probs_grad_kernel", .type = ST_BOOL,
	  .offset = EOFF(glu_probs_grad_kernel), .def = "false",
	  .help = "a gated MoE activation weighted by the routing "
		  "probabilities (moe_probs_in_activation; Megatron-Core's "
		  "weighted_bias_swiglu_impl under torch.compile): its backward "
		  "sums the probabilities' gradient in a second kernel that "
		  "reads the activation's input and the output gradient again "
		  "(false: inside the activation's backward kernel, as TE's "
		  "op-fuser grouped MLP)" },
	{ .key = "fused_rope_mscale", .type = ST_BOOL,
	  .offset = EOFF(fused_rope_mscale), .def = "true",
	  .help = "the fused rotary kernel scales cos and sin by YaRN's "
		  "attention factor (false: with a factor other than 1 the "
		  "rope runs as PyTorch ops, as eager_rope)" },
	{ .key = "per_expert_quantize", .type = ST_BOOL,
	  .offset = EOFF(per_expert_quantize), .def = "false",
	  .help = "the experts' grouped GEMM inputs and output gradients "
		  "quantized per local expert (Transformer Engine "
		  "GroupedLinear's split_quantize) instead of by one kernel "
		  "for all: MX formats one kernel each, fp8 current scaling "
		  "four (amax zeroed, amax, scale, cast), fp8 block scaling "
		  "one; fp8 delayed scaling keeps one fused kernel, NVFP4 "
		  "its grouped quantize (three kernels for all experts)" },
	{ .key = "mx_generic_cast", .type = ST_BOOL,
	  .offset = EOFF(mx_generic_cast), .def = "false",
	  .help = "MXFP8 casts run Transformer Engine's generic quantize "
		  "kernel (quantize_mxfp8, the default through TE 2.15), at "
		  "the GPU's mx_cast_efficiency when they write the "
		  "column-wise layout (false: the streaming rate)" },
	{ .key = "weight_scale_swizzle", .type = ST_BOOL,
	  .offset = EOFF(weight_scale_swizzle), .def = "false",
	  .help = "MXFP8/NVFP4 training: every GEMM that reads a weight "
		  "(forward, dgrad) first copies the cached weight's block "
		  "scales into the GEMM's swizzled layout, one kernel (a "
		  "grouped GEMM's experts together), issued inside the GEMM's "
		  "call (Transformer Engine before 2.18)" },
	{ .key = "no_fp8_weight_transpose_cache", .type = ST_BOOL,
	  .offset = EOFF(no_fp8_weight_transpose_cache), .def = "false",
	  .help = "per-tensor FP8 training: a linear's FP8 weight keeps no "
		  "transposed copy from the forward's cast (TE-ROCm's "
		  "keep_fp8_weight_transpose_cache False, Primus's "
		  "no_fp8_weight_transpose_cache): every backward transposes "
		  "the FP8 weight before its dgrad GEMM and frees the copy "
		  "after it, a kernel a linear" },
	{ .key = "fp8_sp_row_transpose", .type = ST_BOOL,
	  .offset = EOFF(fp8_sp_row_transpose), .def = "false",
	  .help = "fp8 delayed scaling under TP sequence parallelism on a "
		  "GPU whose FP8 GEMMs want the transposed copy: a "
		  "row-parallel linear (attention output, second MLP GEMM) "
		  "casts its input row-wise only, and its backward "
		  "transposes the saved FP8 input before the wgrad, a "
		  "kernel a linear (Transformer Engine 1.x: _Linear casts "
		  "with fp8_cast_transpose_fused only when not "
		  "sequence_parallel; 2.0 and later quantize both layouts)" },
	{ .key = "act_scale_swizzle", .type = ST_BOOL,
	  .offset = EOFF(act_scale_swizzle), .def = "false",
	  .help = "MXFP8/NVFP4 training: every GEMM also swizzles the block "
		  "scales of its quantized input or gradient (forward, "
		  "dgrad) and of both in wgrad, a kernel each (Transformer "
		  "Engine before 2.12: no quantizer writes the GEMM's layout)" },
	{ .key = "expert_quant_padding", .type = ST_BOOL,
	  .offset = EOFF(expert_quant_padding), .def = "false",
	  .help = "fp8/fp4/MX training: the grouped MLP pads each local "
		  "expert's rows (and probabilities) to the quantization "
		  "alignment by a copy before its first GEMM and unpads the "
		  "output after its second, and the reverse in backward, "
		  "unless the dispatcher or the router already aligned them "
		  "(Megatron-Core TEGroupedMLP's Fp8Padding/Fp8Unpadding)" },
	{ .key = "masked_select_permute", .type = ST_BOOL,
	  .offset = EOFF(masked_select_permute), .def = "false",
	  .help = "MoE without permute fusion: the permute finds its rows "
		  "with masked_select on the [E, T] routing map (Megatron-LM "
		  "before e19fbe2e1d), two device syncs a forward (torch."
		  "nonzero copies its count to the host); false: a stable "
		  "argsort, no sync" },
	{ .key = "grouped_gemm_streams", .type = ST_INT,
	  .offset = EOFF(grouped_gemm_streams), .def = "0", .min = 0,
	  .max = 64,
	  .help = "the experts' grouped GEMM runs as one GEMM kernel per "
		  "local expert, round robin over this many streams "
		  "(Transformer Engine's multi-stream cuBLAS path): each "
		  "stream's kernels pay their launch one after another; 0: "
		  "one grouped kernel for all experts" },
	{ .key = "grouped_gemm_fwd_kernel_arch", .type = ST_STRING,
	  .offset = EOFF(grouped_gemm_fwd_kernel_arch), .flags = SF_OPTIONAL,
	  .help = "a GPU architecture (the GPU preset's arch, e.g. sm80) on "
		  "which the experts' forward grouped GEMMs (untransposed "
		  "weights) are one grouped kernel despite "
		  "grouped_gemm_streams, the backward's keeping the streams "
		  "(grouped_gemm built for sm80 runs CUTLASS's grouped "
		  "kernel there); absent: none" },
};

static const struct schema elementwise_schema = {
	.kind = "framework.elementwise",
	.help = "how the memory-bound ops of a layer run",
	.size = sizeof(struct elementwise_spec),
	.fields = elementwise_fields,
	.nfields = SCHEMA_COUNT(elementwise_fields),
};

#define HOFF(m) offsetof(struct host_spec, m)
#define HTIME(k, m, h) { .key = k, .type = ST_TIME, .offset = HOFF(m), \
	.def = "0 us", .max = 1e-2, .help = h }

static const struct schema_field host_fields[] = {
	HTIME("op", op_s, "a PyTorch op issued from Python: dispatch, autograd "
	      "record, kernel launch"),
	HTIME("module", module_s, "a fused-extension module's forward call "
	      "(Transformer Engine) with its first kernel"),
	HTIME("backward_op", bwd_op_s, "an autograd-engine node of a PyTorch op "
	      "(C++), its kernel launched"),
	HTIME("backward_module", bwd_module_s, "a module's backward (a Python "
	      "autograd.Function) with its first kernel"),
	HTIME("kernel", kernel_s, "each further kernel a call launches from C++"),
	HTIME("gemm", gemm_s, "each cuBLASLt GEMM of a per-expert GEMM loop "
	      "(descriptors and heuristic made every call); 0: as kernel"),
	HTIME("event", event_s, "a cudaEventRecord on a timing-enabled event "
	      "(the stream joins around a multi-stream GEMM loop)"),
	HTIME("expert_item", expert_item_s, "each local expert of a per-expert "
	      "GEMM loop's call, forward or backward, beyond its GEMM (the "
	      "call's per-expert Python and wrappers); 0: not counted"),
	HTIME("param_hook", param_hook_s, "each expert weight of a per-expert "
	      "GEMM loop in backward: its AccumulateGrad node and the "
	      "data-parallel post-accumulate hook; 0: not counted"),
	HTIME("collective", collective_s, "a torch.distributed collective call "
	      "(Python, c10d, the library's enqueue)"),
	HTIME("graph", graph_s, "one CUDA graph replay (a captured scope)"),
	HTIME("sync", sync_s, "the host resuming after a device sync (the "
	      "awaited copy landed, the thread woken)"),
	{ .key = "p2p_sync", .type = ST_BOOL, .offset = HOFF(p2p_sync),
	  .def = "false",
	  .help = "a device synchronize after each batched pipeline send/recv "
		  "on non-interleaved schedules (Megatron batch_p2p_sync)" },
	{ .key = "router_ops", .type = ST_INT, .offset = HOFF(router_ops),
	  .def = "0", .min = 0, .max = 1e4,
	  .help = "MoE: small PyTorch ops the router issues beyond its GEMM and "
		  "top-k under force balancing (its random logits), per "
		  "forward; charged only to a training job whose routing "
		  "balance is forced with balanced_gate random" },
	{ .key = "router_aux_ops", .type = ST_INT,
	  .offset = HOFF(router_aux_ops), .def = "0", .min = 0, .max = 1e4,
	  .help = "MoE: more small ops the router issues for its aux loss "
		  "(scores, counts, the loss, its tracker and scaler), per "
		  "forward; none when moe_router_load_balancing_type is none" },
	{ .key = "router_bwd_ops", .type = ST_INT,
	  .offset = HOFF(router_bwd_ops), .def = "0", .min = 0, .max = 1e4,
	  .help = "MoE: kernels the router's aux-loss backward runs beyond the "
		  "top-k's (the loss scaler, the fused loss and score backward, "
		  "the sum of the logits' two gradients), per backward; none "
		  "when moe_router_load_balancing_type is none" },
	{ .key = "dispatch_ops", .type = ST_INT, .offset = HOFF(dispatch_ops),
	  .def = "0", .min = 0, .max = 1e4,
	  .help = "MoE: small PyTorch ops of the dispatcher's preprocessing "
		  "(token counts, splits and their copies to the host), per forward" },
	{ .key = "dispatch_unfused_ops", .type = ST_INT,
	  .offset = HOFF(dispatch_unfused_ops), .def = "0", .min = 0, .max = 1e4,
	  .help = "MoE: small PyTorch ops the dispatcher's preprocessing adds "
		  "with the unfused permute (moe.permute_fusion false) and more "
		  "than one local expert, per forward" },
};

static const struct schema host_schema = {
	.kind = "framework.host",
	.help = "the host thread issuing a rank's GPU work: the cost of each "
		"kind of call on the reference CPU (Xeon Platinum 8480C), the "
		"device syncs",
	.size = sizeof(struct host_spec),
	.fields = host_fields,
	.nfields = SCHEMA_COUNT(host_fields),
};

#define FOFF(m) offsetof(struct framework_spec, m)

static const struct schema_field framework_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = FOFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "grad_dtype", .type = ST_ENUM, .offset = FOFF(grad_dtype),
	  .values = dtype_names, .value_aliases = dtype_aliases,
	  .flags = SF_REQUIRED,
	  .help = "dtype of gradient buffers and of their data-parallel reduction" },
	{ .key = "grad_buffer_full", .type = ST_BOOL,
	  .offset = FOFF(grad_buffer_full), .def = "false",
	  .help = "the gradients of all the rank's parameters stay in one "
		  "persistent buffer under ZeRO 1 and 2 (Megatron-Core DDP's "
		  "grad_data; the distributed optimizer reads its shard of "
		  "it): ZeRO 2 shards no gradient memory and is ZeRO 1; "
		  "false: ZeRO 2 frees the gradients outside the shard" },
	{ .key = "master_weights", .type = ST_BOOL, .offset = FOFF(master_weights),
	  .flags = SF_REQUIRED,
	  .help = "the optimizer keeps an fp32 master copy of 16-bit weights" },
	{ .key = "optimizer_state_dtype", .type = ST_ENUM,
	  .offset = FOFF(optimizer_state_dtype), .values = dtype_names,
	  .value_aliases = dtype_aliases,
	  .def = "fp32",
	  .help = "dtype of the optimizer states (Adam's two moments, SGD's "
		  "momentum): that of the parameters the optimizer steps" },
	{ .key = "bucket_params", .type = ST_INT, .offset = FOFF(bucket_params),
	  .min = 1, .max = 1e12, .flags = SF_REQUIRED,
	  .help = "parameters per gradient-reduction bucket (at least)" },
	{ .key = "bucket_params_per_dp", .type = ST_INT,
	  .offset = FOFF(bucket_params_per_dp), .min = 0, .max = 1e12,
	  .flags = SF_REQUIRED,
	  .help = "bucket parameters per data-parallel rank (bucket = max of the two)" },
	{ .key = "later_stages_one_bucket", .type = ST_BOOL,
	  .offset = FOFF(later_stages_one_bucket), .def = "false",
	  .help = "pipeline ranks after the first put each gradient buffer "
		  "in one bucket (Megatron-Core DDP: bucket_size None when "
		  "pp_rank > 0): its reduction waits for the rank's whole "
		  "backward, its all-gather is one call" },
	{ .key = "device_max_connections", .type = ST_INT,
	  .offset = FOFF(device_max_connections), .def = "8", .min = -1,
	  .max = 32,
	  .help = "CUDA_DEVICE_MAX_CONNECTIONS, the hardware work queues "
		  "(connections) from the host to each GPU (CUDA: 1 to 32, "
		  "default 8): at 1 every stream's kernels start in the "
		  "order they were launched (a kernel waiting for its own "
		  "stream holds those launched after it, train_queue.c); -1: "
		  "Megatron's launcher rule, 1 on NVIDIA GPUs before "
		  "Blackwell with tp or cp > 1 and no moe.a2a_overlap, else "
		  "more than 1. No effect on AMD GPUs" },
	{ .key = "loss_dp_allreduce", .type = ST_BOOL,
	  .offset = FOFF(loss_dp_allreduce), .def = "false",
	  .help = "the loss function all-reduces each microbatch's loss over "
		  "the data-parallel group (without CP) in the forward, and "
		  "the loss's backward waits for it: a rendezvous of the "
		  "last stages every microbatch (and a communicator first "
		  "used before the gradients')" },
	{ .key = "grad_nan_check", .type = ST_BOOL,
	  .offset = FOFF(grad_nan_check), .def = "false",
	  .help = "before each bucket's reduction the framework takes the "
		  "norm of its gradients and checks it for NaN and Inf on "
		  "the host (Megatron-Core DDP check_for_nan_in_grad: a read "
		  "of the bucket, two host syncs)" },
	{ .key = "average_in_collective", .type = ST_BOOL,
	  .offset = FOFF(average_in_collective), .def = "true",
	  .help = "the gradient reduction averages (ReduceOp.AVG); false: "
		  "each bucket is first scaled by 1/(dp cp) in a pass of its "
		  "own (Megatron-Core DDP gradient_scaling_factor); true "
		  "still scales the routed experts' buckets by edp/(dp cp) "
		  "when that is not 1" },
	{ .key = "per_token_loss", .type = ST_BOOL,
	  .offset = FOFF(per_token_loss), .def = "false",
	  .help = "the loss sums over tokens (Megatron-Core "
		  "calculate_per_token_loss): no bucket is scaled before its "
		  "reduction, and after the reduction the whole gradient "
		  "buffer is scaled by 1/tokens in a pass of its own "
		  "(finalize_model_grads scale_gradients); needs "
		  "average_in_collective false" },
	{ .key = "overlap_grad_reduce", .type = ST_BOOL,
	  .offset = FOFF(overlap_grad_reduce), .flags = SF_REQUIRED,
	  .help = "gradient buckets are reduced while the backward runs" },
	{ .key = "dp_comm_max_units", .type = ST_INT,
	  .offset = FOFF(dp_comm_max_units), .def = "0", .min = 0, .max = 1024,
	  .help = "compute units (NCCL CTAs) a data-parallel gradient "
		  "reduction or parameter all-gather holds at most, beside the "
		  "GPU's other kernels (NCCL's per-communicator max_ctas, as "
		  "NeMo's nccl_communicator_config_path sets for the dp "
		  "groups); 0: the collective library's kernel_units" },
	{ .key = "fp8_param_gather", .type = ST_BOOL,
	  .offset = FOFF(fp8_param_gather), .def = "false",
	  .help = "fp8 (per-tensor) training with fp8 parameters: the "
		  "distributed optimizer's parameter all-gather carries the "
		  "transformer layers' parameters in one byte each (NeMo's "
		  "MegatronDistributedFusedAdam gathers Float8Tensor "
		  "parameters as uint8; Megatron-Core --fp8-param-gather); "
		  "the embedding and the output layer stay 16-bit; the "
		  "per-tensor FP8 weights need no step cast (a transpose "
		  "after the gather where the GPU's FP8 GEMMs take TN "
		  "only); no effect on other dtypes or under ZeRO 3" },
	{ .key = "overlap_param_gather", .type = ST_BOOL,
	  .offset = FOFF(overlap_param_gather), .flags = SF_REQUIRED,
	  .help = "the distributed optimizer's parameter all-gather overlaps the next forward" },
	{ .key = "tp_comm_overlap_chunks", .type = ST_INT,
	  .offset = FOFF(tp_comm_overlap_chunks), .min = 0, .max = 1024,
	  .flags = SF_REQUIRED,
	  .help = "pieces a GEMM is split into with tp_comm_overlap (0 = tp)" },
	{ .key = "linear_attn_chunk", .type = ST_INT,
	  .offset = FOFF(linear_attn_chunk), .def = "64", .min = 1,
	  .max = 4096,
	  .help = "tokens a chunk of the Gated DeltaNet (linear_attention) "
		  "chunk kernels the framework calls (flash-linear-attention's "
		  "chunk_gated_delta_rule: 64, fixed in its kernels)" },
	{ .key = "tp_comm_overlap_units", .type = ST_INT,
	  .offset = FOFF(tp_comm_overlap_units), .def = "0", .min = 0, .max = 1024,
	  .help = "compute units (SMs/CUs) an overlapped TP reduce-scatter holds; "
		  "its all-gathers use copy engines and hold none" },
	{ .key = "fsdp_prefetch_units", .type = ST_INT,
	  .offset = FOFF(fsdp_prefetch_units), .def = "2", .min = 1, .max = 64,
	  .help = "with zero_stage 3, units (embedding, layer, head) whose "
		  "parameters may be gathered at once: the one computing and "
		  "those prefetched (PyTorch FSDP limit_all_gathers: 2)" },
	{ .key = "fsdp_grad_passes", .type = ST_BOOL,
	  .offset = FOFF(fsdp_grad_passes), .def = "false",
	  .help = "ZeRO-3: torch FSDP's per-unit memory passes (the gradient cast "
		  "to the reduce dtype and its pre-division before every "
		  "reduce-scatter; on the shard the post-division, the "
		  "accumulation, the low-precision copies before all-gathers)" },
	{ .key = "fsdp_reshard_after_forward", .type = ST_BOOL,
	  .offset = FOFF(fsdp_reshard_after_forward), .def = "true",
	  .help = "ZeRO-3: FSDP frees a unit's gathered parameters after "
		  "its forward (false: they stay until its backward, so at "
		  "the end of the forward every unit of the rank is held "
		  "unsharded; with fsdp_pp_no_sync they stay through the "
		  "schedule run)" },
	{ .key = "fsdp_root_unit", .type = ST_BOOL,
	  .offset = FOFF(fsdp_root_unit), .def = "false",
	  .help = "ZeRO-3 with pp 1: the embedding and the head (final norm, "
		  "output layer) are one FSDP unit, the root's "
		  "fully_shard(model): gathered together before the "
		  "embedding's forward, kept gathered through the forward and "
		  "the head's backward (FSDP2 never reshards the root after "
		  "forward), reduce-scattered together after the embedding's "
		  "backward" },
	{ .key = "fsdp_last_layer_held", .type = ST_BOOL,
	  .offset = FOFF(fsdp_last_layer_held), .def = "false",
	  .help = "ZeRO-3 with pp 1 and fsdp_reshard_after_forward: the last "
		  "decoder layer's unit keeps its parameters gathered from its "
		  "forward to its backward (reshard_after_forward False for "
		  "it alone), so its backward gathers nothing" },
	{ .key = "cp_torch_sdpa", .type = ST_BOOL,
	  .offset = FOFF(cp_torch_sdpa), .def = "false",
	  .help = "context parallelism as PyTorch's context_parallel runs "
		  "SDPA (torch.distributed.tensor.experimental): one SDPA call "
		  "a ring step on the K/V as the model passes them (expanded "
		  "to every query head when elementwise.expand_kv), the K/V "
		  "all-gathered once (cp_comm_type all_gather) or passed "
		  "ring-wise (p2p), each step's output merged in fp32 by "
		  "PyTorch ops, the backward's dQ, dK and dV accumulated in "
		  "fp32 and dK/dV passed ring-wise in fp32 (all-to-all)" },
	{ .key = "cp_torch_compiled", .type = ST_BOOL,
	  .offset = FOFF(cp_torch_compiled), .def = "false",
	  .help = "with cp_torch_sdpa: the SDPA runs inside a torch.compile'd "
		  "region (torchtitan compiles each block, fullgraph), so "
		  "AOTAutograd traces the ring: a functional collective's "
		  "wait follows it at once and inductor does not move it "
		  "(reorder_for_compute_comm_overlap off by default), so every "
		  "K/V gather and dK/dV pass waits on the compute stream; the "
		  "fp32 merges and gradient sums are each one fused kernel and "
		  "the all_gather rotater's unused K/V concatenations are "
		  "dropped (ignored without cp_torch_sdpa)" },
	{ .key = "pp_lockstep", .type = ST_BOOL,
	  .offset = FOFF(pp_lockstep), .def = "false",
	  .help = "interleaved 1F1B in lock step (torch.distributed."
		  "pipelining's PipelineScheduleMulti, torch <= 2.8): every "
		  "rank runs one action a time step of the schedule's table, "
		  "then the step's sends and the receives of what its "
		  "neighbours computed in that step, and waits for them "
		  "before the next step's action" },
	{ .key = "fsdp_expert_reduce_dtype", .type = ST_ENUM,
	  .offset = FOFF(fsdp_expert_reduce_dtype), .values = dtype_names,
	  .value_aliases = dtype_aliases, .flags = SF_OPTIONAL,
	  .help = "ZeRO-3: dtype the routed experts' FSDP units reduce-"
		  "scatter their gradients in (default: grad_dtype; FSDP2 "
		  "without a mixed-precision policy reduces in the "
		  "parameters' dtype)" },
	{ .key = "fsdp_reduce_one_in_flight", .type = ST_BOOL,
	  .offset = FOFF(fsdp_reduce_one_in_flight), .def = "false",
	  .help = "ZeRO-3: FSDP2's post_backward makes the current stream "
		  "wait for the previous FSDP unit's reduce-scatter before "
		  "issuing its own (one reduce-scatter in flight beside the "
		  "compute), and a block's routed experts sharded as their own "
		  "unit (edp > 1) reduce as soon as their backward ends" },
	{ .key = "sp_seq_dim_copies", .type = ST_BOOL,
	  .offset = FOFF(sp_seq_dim_copies), .def = "false",
	  .help = "TP sequence parallelism as PyTorch DTensor runs it "
		  "(SequenceParallel, Shard(1)): the all-gathers and "
		  "reduce-scatters work along the sequence dim of a [batch, "
		  "seq, hidden] tensor, so each pays a copy of the gathered "
		  "tensor (torch.cat of the chunks after an all-gather, "
		  "before a reduce-scatter); under async TP the forward "
		  "reduce-scatter's partial sums are reduced by a kernel "
		  "instead" },
	{ .key = "separate_linears", .type = ST_BOOL,
	  .offset = FOFF(separate_linears), .def = "false",
	  .help = "the model code runs the query, key and value projections "
		  "(and a gated MLP's gate and up projections) as separate "
		  "linear modules on one input (torchtitan's wq wk wv, w1 w3): "
		  "a GEMM each, forward, dgrad and wgrad, and their input "
		  "gradients summed; false: one fused GEMM (Megatron-Core's "
		  "linear_qkv, linear_fc1)" },
	{ .key = "sp_backward_regather", .type = ST_BOOL,
	  .offset = FOFF(sp_backward_regather), .def = "true",
	  .help = "sequence parallelism: a column-parallel linear saves only "
		  "its input's shard and all-gathers it again in its backward "
		  "for the weight gradient (Megatron-LM's "
		  "LinearWithGradAccumulationAndAsyncCommunication, "
		  "Transformer Engine); false: autograd keeps the gathered "
		  "input (DTensor), or a recomputation gathers it" },
	{ .key = "fsdp2_copy_passes", .type = ST_BOOL,
	  .offset = FOFF(fsdp2_copy_passes), .def = "false",
	  .help = "ZeRO-3 under FSDP2 (fully_shard): a layer unit's gathered "
		  "parameters copied out of the all-gather buffer before its "
		  "forward (and its backward when it reshards after forward), "
		  "its gradients copied into the reduce-scatter buffer in the "
		  "reduce dtype after its backward, on the compute stream" },
	{ .key = "recompute_early_stop", .type = ST_BOOL,
	  .offset = FOFF(recompute_early_stop), .def = "false",
	  .help = "recompute full under torch.utils.checkpoint's non-reentrant "
		  "checkpoint (early stop, its default): a layer's recomputation "
		  "ends with the last op whose tensors autograd saved, so the "
		  "ops after it (a DeepEP combine, the residual add) are not run "
		  "again" },
	{ .key = "recompute_needed_only", .type = ST_BOOL,
	  .offset = FOFF(recompute_needed_only), .def = "false",
	  .help = "recompute full re-runs only the forward ops whose outputs "
		  "the backward reads (torch.compile'd blocks: AOTAutograd's "
		  "partitioner; eager torch checkpoint with early stop over "
		  "nn.Linear, whose mm packs its saved inputs before its "
		  "kernel): a dense layer's last GEMM (fc2; an attention "
		  "layer's proj), its TP reduction and the residual add are "
		  "not run again (dropout keeps them: its mask is saved)" },
	{ .key = "fsdp_pp_no_sync", .type = ST_BOOL,
	  .offset = FOFF(fsdp_pp_no_sync), .def = "false",
	  .help = "ZeRO-3 with pp >= 2: torch.distributed.pipelining's "
		  "backward_maybe_with_nosync (no reshard, no gradient sync "
		  "until a chunk's last backward of the schedule run, then "
		  "every unit's reduce-scatter, waited for before the chunk's "
		  "gradient send and the next action)" },
	{ .key = "pp_split", .type = ST_ENUM, .offset = FOFF(pp_split),
	  .values = pp_split_names, .def = "megatron",
	  .help = "how the layers are split over the pipeline stages when the "
		  "job gives no pp_layers: megatron (even; else the embedding "
		  "and the loss counted as a layer each, Megatron-Core's "
		  "account_for_*_in_pipeline_split; else the Megatron-Bridge "
		  "recipes' layouts: ceil(layers / stages) a stage, the last "
		  "and then the first stage giving up the surplus) or front "
		  "(floor(layers / stages) a stage, the first layers mod stages "
		  "stages one more: NeMo AutoModel's "
		  "generate_hf_model_fqn_per_model_part)" },
	{ .key = "balanced_gate", .type = ST_ENUM,
	  .offset = FOFF(balanced_gate), .values = balanced_gate_names,
	  .def = "random",
	  .help = "MoE, routing balance uniform (a force-balanced benchmark): "
		  "how the framework's balanced gate picks a token's k experts: "
		  "random (k distinct experts at random, Megatron-Core's "
		  "--moe-router-force-load-balancing) or round_robin (token t "
		  "takes experts k t .. k t + k - 1 mod E, so a token reaches "
		  "ceil(k / experts per GPU) GPUs: NeMo AutoModel's "
		  "FakeBalancedGate)" },
	{ .key = "pp_scatter_gather", .type = ST_BOOL,
	  .offset = FOFF(pp_scatter_gather), .def = "false",
	  .help = "without sequence parallelism, pipeline transfers carry 1/tp of the "
		  "activation per TP rank and the receiving TP group all-gathers it" },
	{ .key = "shared_expert_stream", .type = ST_BOOL,
	  .offset = FOFF(shared_expert_stream), .def = "false",
	  .help = "MoE: the model code runs the shared experts on a side "
		  "stream while the routed experts' tokens are dispatched "
		  "(as moe.shared_expert_overlap does), whatever the job's "
		  "moe.shared_expert_overlap" },
	{ .key = "te_permute_expert_loop", .type = ST_BOOL,
	  .offset = FOFF(te_permute_loop), .def = "false",
	  .help = "MoE with moe.permute_fusion: Transformer Engine 2.1-2.5's "
		  "Triton permute kernels (before TE PR #1927), whose program "
		  "for each token loads the row map of every expert, one after "
		  "the other, for each 1024-element block of the hidden size, "
		  "and whose chunk sort walks every split for each row: "
		  "latency-bound at the GPU's l1_hit_latency / l2_hit_latency; "
		  "false: TE >= 2.6's kernels (bandwidth only)" },
	{ .key = "moe_chunk_sort", .type = ST_BOOL,
	  .offset = FOFF(moe_chunk_sort), .def = "true",
	  .help = "MoE with more than one local expert: the token dispatcher "
		  "sorts the rows it received by local expert, a copy of "
		  "them (Megatron-Core's sort_chunks_by_idxs, at ep 1 too); "
		  "false: the permute already leaves them in expert order "
		  "and nothing sorts them again (a single-GPU PyTorch MoE "
		  "that sorts its routed expert ids)" },
	{ .key = "router_gemm_te", .type = ST_BOOL,
	  .offset = FOFF(router_gemm_te), .def = "false",
	  .help = "MoE: the router's GEMMs run through Transformer Engine's "
		  "general_gemm (Megatron-Core >= 0.13 RouterGatingLinear"
		  "Function): the forward on the 16-bit activations and weight "
		  "with the router dtype (fp32) as its output only, the "
		  "backward in the router dtype with fp32 as TF32; false: "
		  "every router GEMM in the router dtype" },
	{ .key = "fused_cross_entropy", .type = ST_BOOL,
	  .offset = FOFF(fused_cross_entropy), .def = "false",
	  .help = "the cross-entropy loss is one fused kernel (else a chain of "
		  "PyTorch ops on fp32 logits)" },
	{ .key = "cross_entropy_jit", .type = ST_BOOL,
	  .offset = FOFF(cross_entropy_jit), .def = "false",
	  .help = "without fused_cross_entropy: Megatron-Core's "
		  "--cross-entropy-loss-fusion (its jit-fused functions: three "
		  "kernels forward, one backward, two TP all-reduces)" },
	{ .key = "wgrad_autograd", .type = ST_BOOL,
	  .offset = FOFF(wgrad_autograd), .def = "false",
	  .help = "no main_grad buffer: autograd's plain wgrad GEMM writes "
		  "a fresh dW (beta 0) that AccumulateGrad or FSDP take, "
		  "whatever training.gradient_accumulation_fusion says; "
		  "false: Megatron DDP's main_grad, which the wgrad GEMM adds "
		  "into (fusion) or an add kernel follows" },
	{ .key = "tp_dgrad_serial", .type = ST_BOOL,
	  .offset = FOFF(tp_dgrad_serial), .def = "false",
	  .help = "a column-parallel linear's backward as autograd ran it "
		  "before Megatron-LM's async TP all-reduce (cf7efd4f, "
		  "2021-08-30): dgrad and wgrad in one node, then the input "
		  "gradient's all-reduce, exposed; false: the all-reduce "
		  "runs while the wgrad GEMM computes" },
	{ .key = "embedding_grad_dense", .type = ST_BOOL,
	  .offset = FOFF(embedding_grad_dense), .def = "false",
	  .help = "the embedding's backward is PyTorch's embedding_dense_"
		  "backward (a zeroed [V/t, h] gradient in the weights' dtype, "
		  "T rows summed into it through fp32 partials), then the "
		  "DDP hook's main_grad.add_ over all of it (Megatron DDP); "
		  "false: T rows scatter-added into the gradient buffer" },
	{ .key = "cross_entropy_in_place", .type = ST_BOOL,
	  .offset = FOFF(cross_entropy_in_place), .def = "false",
	  .help = "with fused_cross_entropy: the loss writes its gradient "
		  "into the logits and keeps them for the backward in their "
		  "own (16-bit) dtype (Transformer Engine "
		  "parallel_cross_entropy); false: it keeps an fp32 softmax "
		  "of the logits (Megatron-Core's native fused and unfused "
		  "losses)" },
	{ .key = "moe_probs_in_activation", .type = ST_BOOL,
	  .offset = FOFF(moe_probs_in_activation), .def = "false",
	  .help = "MoE: the experts multiply their rows by the routing "
		  "probabilities in the activation (Megatron-Core >= 0.13 "
		  "weighted SwiGLU), which keeps one fp32 probability a row, "
		  "and unpermute takes no probabilities, so nothing of the "
		  "fc2 output is kept; false: unpermute weights the fc2 "
		  "output and keeps it for the backward" },
	{ .key = "weight_cast_per_step", .type = ST_BOOL,
	  .offset = FOFF(weight_cast_per_step), .def = "false",
	  .help = "fp8/MX/NVFP4 training: every low-precision linear weight "
		  "is quantized (all the layouts its GEMMs read) once a "
		  "step, before its chunk's first microbatch uses it, and "
		  "the quantized copy serves the step's other microbatches "
		  "(Transformer Engine's is_first_microbatch weight cache, "
		  "or the cast after an fp8 parameter all-gather); false: "
		  "the weight casts are not modelled" },
	{ .key = "fp8_weight_cast_per_call", .type = ST_BOOL,
	  .offset = FOFF(fp8_weight_cast_per_call), .def = "false",
	  .help = "per-tensor fp8 training as torchao's Float8Linear runs "
		  "it: every forward call (and recomputation) casts the "
		  "linear's 16-bit weight (an amax pass, then the cast), "
		  "every backward makes the fp8 weight's transposed copy "
		  "for the dgrad GEMM and the saved gathered input's for "
		  "the wgrad, and under tensor parallelism each cast of a "
		  "TP-sharded tensor (weight, row-parallel input, "
		  "column-parallel output gradient) all-reduces its amax "
		  "over the TP group; false: not modelled" },
	{ .key = "vocab_multiple", .type = ST_INT, .offset = FOFF(vocab_multiple),
	  .min = 1, .max = 1e6, .flags = SF_REQUIRED,
	  .help = "vocabulary padded to a multiple of this times tp" },
	{ .key = "workspace", .type = ST_BYTES, .offset = FOFF(workspace_B),
	  .max = 1e13, .flags = SF_REQUIRED,
	  .help = "memory per GPU for library workspaces, communication buffers, fragmentation" },
	{ .key = "step_overhead", .type = ST_TIME, .offset = FOFF(step_overhead_s),
	  .max = 1e3, .flags = SF_REQUIRED,
	  .help = "host work per step that the GPUs wait for" },
	{ .key = "fp8_amax_reduction", .type = ST_ENUM,
	  .offset = FOFF(fp8_amax_reduction), .values = amax_reduction_names,
	  .def = "none",
	  .help = "fp8 delayed scaling: the group Transformer Engine reduces "
		  "its amaxes over, blocking, at the end of every model chunk's "
		  "forward and backward of a microbatch: none, tp_cp "
		  "(Megatron-Core 0.8) or stage (tp x cp x dp: Megatron-Core "
		  "<= 0.7 and >= 0.9)" },
	{ .key = "moe_router_load_balancing_type", .type = ST_ENUM,
	  .offset = FOFF(moe_lb_type), .values = moe_lb_type_names,
	  .def = "none",
	  .help = "MoE training: Megatron-Core's router load balancing. none: "
		  "no aux loss (no aux kernels, no count all-reduce); aux_loss "
		  "and seq_aux_loss: the aux loss's kernels (host router_aux_ops, "
		  "router_bwd_ops) and its tokens-per-expert counts all-reduced "
		  "over tp x cp every forward; global_aux_loss: over tp x dp x "
		  "cp; sinkhorn is not modelled (exit 2); none of it unless "
		  "moe_aux_loss_coeff > 0" },
	{ .key = "moe_aux_loss_coeff", .type = ST_NUM,
	  .offset = FOFF(moe_aux_loss_coeff), .def = "0", .min = 0,
	  .max = 1e3,
	  .help = "MoE training: Megatron-Core's moe_aux_loss_coeff (its "
		  "default 0: no aux loss whatever the load-balancing type); "
		  "llmsim uses only whether it is > 0" },
	{ .key = "fp8_fast_accumulation", .type = ST_ENUM,
	  .offset = FOFF(fp8_fast_accum), .values = fp8_fast_accum_names,
	  .def = "none",
	  .help = "per-tensor fp8 training: the GEMMs that run in Hopper's "
		  "fast-accumulation mode (partial sums never promoted to "
		  "fp32; cuBLASLt FAST_ACCUM 1; the GPU's "
		  "fp8_fast_accum_efficiency): none, fprop (the forward GEMMs "
		  "and their recomputation; dgrad and wgrad promoted: "
		  "Transformer Engine's _2X_ACC_FPROP False, _2X_ACC_DGRAD and "
		  "_2X_ACC_WGRAD True, torchao's Float8LinearConfig) or all; "
		  "block-scaled fp8 always promotes" },
	{ .key = "attention_kernel", .type = ST_ENUM,
	  .offset = FOFF(attention_kernel), .values = attn_kernel_names,
	  .def = "vendor",
	  .help = "fused attention family: vendor (cuDNN, as Transformer Engine "
		  "calls it; CK on AMD), flash2 (FlashAttention-2: the "
		  "flash-attn package), sdpa_flash (PyTorch SDPA's flash "
		  "backend, its vendored FlashAttention-2), flash_triton "
		  "(FlashAttention's pre-MLIR Triton kernel) or ck_tile (AMD: "
		  "Composable Kernel's generic CK-tile pipelines, Transformer "
		  "Engine's CK backend with its v3 assembly kernels off)" },
	{ .key = "attention_mla_bwd_kernel", .type = ST_ENUM,
	  .offset = FOFF(attention_mla_bwd_kernel),
	  .values = attn_mla_bwd_kernel_names, .def = "same",
	  .help = "the attention backward's family when the query/key and "
		  "value head dims differ (MLA's 192 / 128): same (as "
		  "attention_kernel) or one of its values; ck_tile where the "
		  "image's Transformer Engine ROCm has no AITER v3 backward for "
		  "that shape (before ROCm/TransformerEngine PR #364, "
		  "2025-11: hd192_hd128)" },
	{ .key = "elementwise", .type = ST_SECTION,
	  .offset = FOFF(elementwise), .sub = &elementwise_schema,
	  .flags = SF_OPTIONAL,
	  .help = "how the memory-bound ops of a layer run (absent: fused)" },
	{ .key = "optimizer_step", .type = ST_SECTION,
	  .offset = FOFF(optimizer_step), .sub = &opt_step_schema,
	  .flags = SF_OPTIONAL,
	  .help = "passes of the optimizer step (absent: one fused update)" },
	{ .key = "host", .type = ST_SECTION, .offset = FOFF(host),
	  .sub = &host_schema, .flags = SF_OPTIONAL,
	  .help = "the host thread's cost per call and its device syncs "
		  "(absent: the host is not modeled, kernels start when ready)" },
};

static const char *const framework_dirs[] = {"workloads/frameworks", NULL};

/* per_token_loss with average_in_collective: Megatron-Core's DDP asserts
 * "Cannot average in collective when calculating per-token loss!"
 * (megatron/core/distributed/distributed_data_parallel.py @ d98e8a64dd).
 * Reported at per_token_loss, else at the framework. -1 after an error. */
static int per_token_loss_check(const struct framework_spec *f,
				const struct schema_at *at, struct diag *d)
{
	const struct cnode *v = at->map ? cnode_get(at->map, "per_token_loss") :
				NULL;

	if (!f->per_token_loss || !f->average_in_collective)
		return 0;
	cnode_error(d, v ? v : at->map, "'%s%sper_token_loss' needs "
		    "average_in_collective false (Megatron-Core DDP cannot "
		    "average in the collective when the loss is a token sum)",
		    at->path ? at->path : "", at->path ? "." : "");
	return -1;
}

static int framework_check(void *obj, const struct schema_at *at,
			   struct diag *d)
{
	const struct framework_spec *f = obj;
	const char *a = f->elementwise.grouped_gemm_fwd_kernel_arch;
	const struct cnode *e = at->map ? cnode_get(at->map, "elementwise") : NULL;
	const struct cnode *v = e ? cnode_get(e, "grouped_gemm_fwd_kernel_arch") :
			       NULL;

	if (per_token_loss_check(f, at, d) != 0)
		return -1;
	if (f->moe_lb_type == MOE_LB_SINKHORN) {
		const struct cnode *c = at->map ? cnode_get(at->map,
			"moe_router_load_balancing_type") : NULL;

		cnode_error(d, c ? c : at->map, "'%s%smoe_router_load_"
			    "balancing_type' sinkhorn is not modelled (its "
			    "iterations' kernels have no price in llmsim): use "
			    "none, aux_loss, seq_aux_loss or global_aux_loss",
			    at->path ? at->path : "", at->path ? "." : "");
		return -1;
	}
	if (f->device_max_connections == 0) {
		const struct cnode *c = at->map ?
			cnode_get(at->map, "device_max_connections") : NULL;

		cnode_error(d, c ? c : at->map, "'%s%sdevice_max_connections' "
			    "0 is not a CUDA value (CUDA_DEVICE_MAX_CONNECTIONS "
			    "takes 1 to 32; -1 = Megatron's launcher rule)",
			    at->path ? at->path : "", at->path ? "." : "");
		return -1;
	}
	if (!a || gpu_arch_vendor(a) >= 0)
		return 0;
	cnode_error(d, v ? v : e ? e : at->map, "'%s%selementwise."
		    "grouped_gemm_fwd_kernel_arch': expected a GPU "
		    "architecture as the GPU presets' arch writes it (sm80, "
		    "sm90, gfx942), got '%s'", at->path ? at->path : "",
		    at->path ? "." : "", a);
	return -1;
}

const struct schema framework_schema = {
	.kind = "framework",
	.help = "what the training software does: gradient dtype, buckets, overlap, padding, overheads",
	.preset_dirs = framework_dirs,
	.size = sizeof(struct framework_spec),
	.fields = framework_fields,
	.nfields = SCHEMA_COUNT(framework_fields),
	.check = framework_check,
};
