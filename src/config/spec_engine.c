/*
 * spec_engine.c - the serving-engine schema.
 */
#include "spec_engine.h"

#include <stddef.h>

#include "base/diag.h"
#include "cnode.h"

const char *const engine_scheduler_names[] = {"vllm", "sglang", "trtllm",
					      "vllm-v0", NULL};
const char *const engine_memory_rule_names[] = {"total", "static", "free",
						"snapshot", NULL};
const char *const engine_graphs_names[] = {"none", "piecewise", "full", NULL};
const char *const engine_capacity_names[] = {"guaranteed_no_evict",
					     "max_utilization", NULL};
const char *const engine_adp_admit_names[] = {"pooled", "rank", NULL};

/* attention_dp_config's defaults (llmapi/llm_args.py AttentionDpConfig:
 * timeout_iters 50, batching_wait_iters 10), as the keys' .def text. */
#define ADP_TIMEOUT_ITERS_DEF 50
#define ADP_BATCHING_WAIT_ITERS_DEF 10
#define DEF_TEXT_(x) #x
#define DEF_TEXT(x) DEF_TEXT_(x)
const char *const engine_quant_fusion_names[] = {"none", "norm_act", "all",
						 NULL};
const char *const engine_moe_kernels_names[] = {"generic", "cutlass", NULL};
const char *const engine_wo_moe_names[] = {"none", "marlin", NULL};
const char *const engine_fp8_block_moe_names[] = {"none", "triton", NULL};
const char *const engine_dsa_kernel_names[] = {"auto", "flashmla_sparse",
						 NULL};
const char *const engine_mxfp4_moe_names[] = {"weight_only", "triton_mx",
					       "triton_trtllm", NULL};
const char *const engine_wo_tile_pick_names[] = {"fastest", "cover", NULL};
const char *const engine_decode_kernel_names[] = {"flash", "trtllm", NULL};
const char *const engine_prefill_kernel_names[] = {"flash", "trtllm", NULL};
const char *const engine_vendor_names[] = {"any", "nvidia", "amd", NULL};
const char *const engine_norm_quant_names[] = {"always", "tp_allreduce",
					       NULL};
const char *const engine_act_quant_names[] = {"all", "per_tensor", NULL};
const char *const engine_vision_encoder_names[] = {"none", "front_end",
						   "workers", NULL};
const char *const engine_estimate_logits_names[] = {"max_seqs", "dry_run",
						    NULL};
const char *const engine_attn_temperature_names[] = {"fused", "eager",
						     NULL};

#define AOFF(m) offsetof(struct engine_auto_size, m)

static const struct schema_field auto_fields[] = {
	{ .key = "max_seqs", .type = ST_INT, .offset = AOFF(max_seqs),
	  .min = 0, .max = 1e7, .flags = SF_OPTIONAL,
	  .help = "cap on the requests the KV cache holds (max batch size)" },
	{ .key = "max_tokens", .type = ST_INT, .offset = AOFF(max_tokens),
	  .min = 0, .max = 1e8, .flags = SF_OPTIONAL,
	  .help = "cap on max num tokens: batch size x (1 + input/output)" },
	{ .key = "min_seqs", .type = ST_INT, .offset = AOFF(min_seqs),
	  .min = 0, .max = 1e7, .flags = SF_OPTIONAL,
	  .help = "max batch size, at least" },
	{ .key = "seq_below", .type = ST_INT_LIST, .offset = AOFF(seq_below),
	  .min = 1, .max = 1e7, .flags = SF_OPTIONAL,
	  .help = "a batch size below entry i rounds up to a multiple of "
		  "seq_step entry i (one more step than bounds: the last is "
		  "for sizes above every bound)" },
	{ .key = "seq_step", .type = ST_INT_LIST, .offset = AOFF(seq_step),
	  .min = 1, .max = 1e7, .flags = SF_OPTIONAL,
	  .help = "rounding steps of the batch size" },
	{ .key = "min_tokens", .type = ST_INT, .offset = AOFF(min_tokens),
	  .min = 0, .max = 1e8, .flags = SF_OPTIONAL,
	  .help = "max num tokens, at least" },
	{ .key = "token_below", .type = ST_INT_LIST, .offset = AOFF(token_below),
	  .min = 1, .max = 1e8, .flags = SF_OPTIONAL,
	  .help = "as seq_below, for max num tokens" },
	{ .key = "token_step", .type = ST_INT_LIST, .offset = AOFF(token_step),
	  .min = 1, .max = 1e8, .flags = SF_OPTIONAL,
	  .help = "rounding steps of max num tokens" },
	/* 0 (the instance's weights), or at least one bit an element
	 * (0.125 B): a stored element has no fewer (TensorRT-LLM's
	 * BYTES_PER_ELEM: 2, 1, 0.5); 1e-9 was taken without a word and
	 * moved the sized KV cache (Qwen3-30B, H100: 192,832 -> 189,696
	 * tokens). */
	{ .key = "param_B", .type = ST_NUM, .offset = AOFF(param_B),
	  .min = 0.125, .max = 8, .flags = SF_OPTIONAL | SF_ZERO_OFF,
	  .help = "engine size: bytes per stored checkpoint element of an "
		  "unquantized model (0 = the instance's weights)" },
	{ .key = "param_B_fp8", .type = ST_NUM, .offset = AOFF(param_B_fp8),
	  .min = 0.125, .max = 8, .flags = SF_OPTIONAL | SF_ZERO_OFF,
	  .help = "as param_B, for an fp8 checkpoint" },
	{ .key = "param_B_fp4", .type = ST_NUM, .offset = AOFF(param_B_fp4),
	  .min = 0.125, .max = 8, .flags = SF_OPTIONAL | SF_ZERO_OFF,
	  .help = "as param_B, for an nvfp4 checkpoint" },
};

static const struct schema auto_schema = {
	.kind = "engine.auto_size_rule",
	.help = "trtllm-bench's sizing of max batch size and max num tokens",
	.size = sizeof(struct engine_auto_size),
	.fields = auto_fields,
	.nfields = SCHEMA_COUNT(auto_fields),
};

#define OFF(m) offsetof(struct engine_spec, m)

static const struct schema_field engine_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "version", .type = ST_STRING, .offset = OFF(version),
	  .flags = SF_OPTIONAL | SF_INFO,
	  .help = "engine version the defaults were read from" },
	{ .key = "scheduler", .type = ST_ENUM, .offset = OFF(scheduler),
	  .values = engine_scheduler_names, .flags = SF_REQUIRED,
	  .help = "scheduling policy: vllm (V1 token budget, preemption), "
		  "sglang (prefill first, retraction), trtllm (in-flight "
		  "batching, capacity policy), vllm-v0 (prefill-only steps "
		  "first, preemption)" },
	{ .key = "vendor", .type = ST_ENUM, .offset = OFF(vendor),
	  .values = engine_vendor_names, .def = "any",
	  .help = "whose GPUs the engine's build runs on: nvidia (CUDA only), "
		  "amd (ROCm only) or any; a serving job on the other "
		  "vendor's GPU is refused (exit 2)" },
	{ .key = "rocm_preset", .type = ST_STRING, .offset = OFF(rocm_preset),
	  .flags = SF_OPTIONAL | SF_INFO,
	  .help = "the engine preset of this engine's ROCm build (vllm: "
		  "vllm-rocm): a serving job running this one on an AMD GPU "
		  "is warned toward it" },
	{ .key = "max_num_seqs", .type = ST_INT, .offset = OFF(max_num_seqs),
	  .min = 1, .max = 1e7, .flags = SF_REQUIRED,
	  .help = "sequences in one engine step, at most" },
	{ .key = "max_num_batched_tokens", .type = ST_INT,
	  .offset = OFF(max_num_batched_tokens), .min = 1, .max = 1e8,
	  .flags = SF_REQUIRED,
	  .help = "tokens in one engine step, at most (the prefill budget)" },
	{ .key = "chunked_prefill", .type = ST_BOOL,
	  .offset = OFF(chunked_prefill), .flags = SF_REQUIRED,
	  .help = "a prompt may be prefilled over several steps" },
	{ .key = "block_size", .type = ST_INT, .offset = OFF(block_size),
	  .min = 1, .max = 1e5, .flags = SF_REQUIRED,
	  .help = "tokens per KV-cache page" },
	{ .key = "memory_fraction", .type = ST_NUM,
	  .offset = OFF(memory_fraction), .min = 0, .max = 1,
	  .flags = SF_REQUIRED | SF_MIN_EXCL,
	  .help = "fraction of GPU memory the engine takes, by memory_rule" },
	{ .key = "memory_rule", .type = ST_ENUM, .offset = OFF(memory_rule),
	  .values = engine_memory_rule_names, .flags = SF_REQUIRED,
	  .help = "total: fraction x memory holds weights, activations, KV "
		  "(vLLM); static: weights and KV (SGLang); free: KV is the "
		  "fraction of what weights and activations leave (TensorRT-LLM); "
		  "snapshot: as total, of the memory after the runtime context, "
		  "the graph pool outside (vLLM V1 determine_available_memory)" },
	{ .key = "workspace", .type = ST_BYTES, .offset = OFF(workspace_B),
	  .max = 1e13, .flags = SF_REQUIRED,
	  .help = "memory per GPU outside weights, KV and activations (graph "
		  "pool, library workspaces, communication buffers)" },
	{ .key = "graph_pool", .type = ST_BYTES, .offset = OFF(graph_pool_B),
	  .max = 1e13,
	  .help = "part of the workspace captured after the KV cache is sized "
		  "(CUDA graphs), outside memory_rule snapshot's budget" },
	{ .key = "prefix_caching", .type = ST_BOOL,
	  .offset = OFF(prefix_caching), .flags = SF_REQUIRED,
	  .help = "cached prompt prefixes are reused (serving.prefix_cache_hit_rate applies)" },
	{ .key = "window_kv_groups", .type = ST_BOOL,
	  .offset = OFF(window_kv_groups), .def = "false",
	  .help = "a model with full and sliding-window attention layers pages "
		  "its KV cache in groups of layers, a sliding-window group "
		  "holding only the pages its window still reads (vLLM V1's "
		  "hybrid KV cache manager); false: every attention layer "
		  "holds a sequence's whole length" },
	{ .key = "cuda_graphs", .type = ST_ENUM, .offset = OFF(cuda_graphs),
	  .values = engine_graphs_names, .flags = SF_REQUIRED,
	  .help = "kernels launched from a captured graph: none, piecewise "
		  "(all but attention), full (decode-only steps)" },
	{ .key = "cuda_graph_max", .type = ST_INT, .offset = OFF(cuda_graph_max),
	  .min = 0, .max = 1e7, .def = "0",
	  .help = "largest captured step: sequences (full) or tokens (piecewise)" },
	{ .key = "cuda_graph_pad", .type = ST_INT, .offset = OFF(cuda_graph_pad),
	  .min = 1, .max = 1e5, .def = "1",
	  .help = "captured sizes are multiples of this (a step is padded up "
		  "to the next captured size)" },
	{ .key = "cuda_graph_sizes", .type = ST_INT_LIST,
	  .offset = OFF(cuda_graph_sizes), .flags = SF_OPTIONAL,
	  .min = 1, .max = 1e7,
	  .help = "the captured sizes, rising (TensorRT-LLM cuda_graph_config "
		  "batch_sizes, the last one cuda_graph_max); a step is padded "
		  "up to the next, and past the engine's largest step to that "
		  "step (replaces cuda_graph_pad)" },
	{ .key = "custom_allreduce", .type = ST_BOOL,
	  .offset = OFF(custom_allreduce), .def = "false",
	  .help = "TP all-reduces up to custom_allreduce_max use the engine's "
		  "own kernels (custom_allreduce_collectives)" },
	{ .key = "custom_allreduce_max", .type = ST_BYTES,
	  .offset = OFF(custom_allreduce_max_B), .def = "0 B", .max = 1e12,
	  .help = "largest all-reduce the custom kernels take" },
	{ .key = "custom_allreduce_collectives", .type = ST_REF,
	  .offset = OFF(custom_allreduce_lib), .sub = &collectives_schema,
	  .flags = SF_OPTIONAL,
	  .help = "latency model of the custom all-reduce (a collectives preset)" },
	{ .key = "step_overhead", .type = ST_TIME, .offset = OFF(step_overhead_s),
	  .max = 10, .flags = SF_REQUIRED,
	  .help = "host time per engine step (scheduling, input preparation, "
		  "output processing)" },
	{ .key = "seq_overhead", .type = ST_TIME, .offset = OFF(seq_overhead_s),
	  .max = 1, .def = "0 us",
	  .help = "host time per sequence per engine step" },
	{ .key = "prompt_token_overhead", .type = ST_TIME,
	  .offset = OFF(prompt_token_overhead_s), .max = 1e-3, .def = "0 us",
	  .help = "host time per prompt token a step computes (the prompt "
		  "copied into the step's input lists and tensors)" },
	{ .key = "overlap_scheduling", .type = ST_BOOL,
	  .offset = OFF(overlap_scheduling), .flags = SF_REQUIRED,
	  .help = "a step's host work runs under the previous step's GPU time" },
	{ .key = "overlap_extra_step", .type = ST_BOOL,
	  .offset = OFF(overlap_extra_step), .def = "false",
	  .help = "with overlap_scheduling (ignored without it): the "
		  "scheduler sees a request's "
		  "last token one step late, so the request runs one more "
		  "decode step (its batch slot, its compute and one more KV "
		  "token) after the step that made its last token; its output "
		  "ends with that earlier step" },
	{ .key = "adp_moe_allgather", .type = ST_BOOL,
	  .offset = OFF(adp_moe_allgather), .def = "false",
	  .help = "with attention DP the MoE layers all-gather every rank's "
		  "tokens before the experts and reduce-scatter their outputs "
		  "(TensorRT-LLM without its all-to-all) in place of the library "
		  "all-to-all (moe.dispatcher alltoall, the default); other "
		  "dispatchers (deepep, ...) stay as the job names them" },
	{ .key = "adp_moe_sized", .type = ST_BOOL,
	  .offset = OFF(adp_moe_sized), .def = "false",
	  .help = "adp_moe_allgather with each rank's own token count: the "
		  "all-gather runs as one broadcast per rank and the "
		  "reduce-scatter as one reduce per rank, grouped (NCCL "
		  "ncclBroadcast / ncclReduce in a group), costed as one "
		  "broadcast (reduce) of all the ranks' rows" },
	{ .key = "moe_shared_aux_stream", .type = ST_BOOL,
	  .offset = OFF(moe_shared_aux_stream), .def = "false",
	  .help = "in a step replayed from a CUDA graph, an MoE layer's shared "
		  "experts run on a second stream beside its routed path "
		  "(TensorRT-LLM's maybe_execute_in_parallel, multi-stream "
		  "only under graph capture); modelled where the routed "
		  "tokens travel by the attention-DP all-gather "
		  "(adp_moe_allgather): the shared experts' kernels run while "
		  "it is in flight. Eager steps run them in turn" },
	{ .key = "two_batch_overlap", .type = ST_BOOL,
	  .offset = OFF(two_batch_overlap), .def = "false",
	  .help = "with attention DP and an all-to-all MoE dispatcher "
		  "(deepep, deepep-ll, alltoall, ...), a step's MoE layers run "
		  "as two half batches whose kernels interleave at the "
		  "engine's yield points, one half's dispatch and combine "
		  "beside the other's compute (SGLang "
		  "--enable-two-batch-overlap, two_batch_overlap.py); other "
		  "layouts ignore it" },
	{ .key = "tbo_decode_delta_stages", .type = ST_INT,
	  .offset = OFF(tbo_decode_delta_stages), .min = 0, .max = 64,
	  .def = "0",
	  .help = "two_batch_overlap, decode: stages the first half batch "
		  "runs before the second starts (SGLang's decode strategy's "
		  "tbo_delta_stages)" },
	{ .key = "tbo_prefill_delta_stages", .type = ST_INT,
	  .offset = OFF(tbo_prefill_delta_stages), .min = 0, .max = 64,
	  .def = "0",
	  .help = "two_batch_overlap, prefill: as tbo_decode_delta_stages, "
		  "for the prefill strategy" },
	{ .key = "moe_kernels", .type = ST_ENUM, .offset = OFF(moe_kernels),
	  .values = engine_moe_kernels_names, .def = "generic",
	  .help = "kernels of a routed-expert layer: generic (vLLM/SGLang "
		  "fused MoE: sorted ids, grouped GEMMs reading the tokens in "
		  "place, a k-way sum) or cutlass (TensorRT-LLM's CUTLASS fused "
		  "MoE: input quantization, a row sort, permuted copies of the "
		  "rows, grouped GEMMs, a finalize kernel writing every token)" },
	{ .key = "weight_only_moe_kernel", .type = ST_ENUM,
	  .offset = OFF(weight_only_moe_kernel), .values = engine_wo_moe_names,
	  .def = "none",
	  .help = "grouped GEMM of experts whose weights alone are quantized "
		  "(a GPU without the weights' matrix rate: W4A16, W8A16): "
		  "none (the bf16 GEMM rate) or marlin (vLLM's "
		  "fused_marlin_moe, at the GPU's weight_only_moe_efficiency "
		  "marlin)" },
	{ .key = "weight_only_linear_kernel", .type = ST_ENUM,
	  .offset = OFF(weight_only_linear_kernel),
	  .values = engine_wo_moe_names, .def = "none",
	  .help = "GEMM of dense linear layers whose weights alone are "
		  "quantized (FP8 weights, bf16 inputs on a GPU without FP8 "
		  "MMAs): none (the bf16 GEMM's tiles and rate) or marlin "
		  "(vLLM's Marlin linear, gptq_marlin_gemm, at the GPU's "
		  "weight_only_linear_efficiency)" },
	{ .key = "fp8_block_moe_kernel", .type = ST_ENUM,
	  .offset = OFF(fp8_block_moe_kernel),
	  .values = engine_fp8_block_moe_names, .def = "none",
	  .help = "grouped GEMM of block-scaled fp8 experts (a DeepSeek or "
		  "Qwen3 FP8 checkpoint's 128 x 128 weight scales) outside "
		  "moe_kernels cutlass: none (the GPU's fp8 GEMM rate) or "
		  "triton (vLLM's Triton fused_moe with block scales, at the "
		  "GPU's triton_moe_fp8_block_rate)" },
	{ .key = "triton_moe_configs", .type = ST_BOOL,
	  .offset = OFF(triton_moe_configs), .def = "false",
	  .help = "16-bit experts (not moe_kernels cutlass) run vLLM's "
		  "Triton fused_moe, whose tile comes from a tuned config "
		  "file for (E, N, device) or else get_default_config: the "
		  "shapes the GPU lists in triton_moe_untuned run at its "
		  "triton_moe_default_efficiency" },
	{ .key = "dsa_kernel", .type = ST_ENUM,
	  .offset = OFF(dsa_kernel), .values = engine_dsa_kernel_names,
	  .def = "auto",
	  .help = "attention of a DeepSeek Sparse Attention model's prompt "
		  "tokens: auto (the cheaper by FLOPs of DeepSeek's masked-MHA "
		  "mode and the sparse kernel) or flashmla_sparse (every "
		  "token through FlashMLA's sparse kernel, the query heads "
		  "padded up to a multiple of the GPU's "
		  "flashmla_sparse_heads)" },
	{ .key = "weight_only_moe_tile_m", .type = ST_INT_LIST,
	  .offset = OFF(weight_only_moe_tile_m), .flags = SF_OPTIONAL,
	  .min = 1, .max = 1e4,
	  .help = "output-tile rows (elements) the weight-only MoE kernels "
		  "(weight_only_moe_kernel, mxfp4_moe_kernel) offer besides "
		  "the GPU's gemm_tile_m, each weight_only_moe_tile_n columns "
		  "wide (vLLM Marlin's block_size_m); absent: the GPU's "
		  "tiles alone" },
	{ .key = "weight_only_moe_tile_n", .type = ST_INT,
	  .offset = OFF(weight_only_moe_tile_n), .min = 0, .max = 1e4,
	  .def = "0",
	  .help = "output-tile columns (elements) of each "
		  "weight_only_moe_tile_m tile; required with that list" },
	{ .key = "weight_only_moe_tile_pick", .type = ST_ENUM,
	  .offset = OFF(weight_only_moe_tile_pick),
	  .values = engine_wo_tile_pick_names, .def = "fastest",
	  .help = "which weight_only_moe_tile_m tile the weight-only MoE "
		  "kernel runs: fastest (the quickest of those and the GPU's "
		  "tiles) or cover (only the smallest listed at or above the "
		  "rows an expert gets, the largest listed past them: "
		  "triton_kernels matmul_ogs' block_m = max(16, "
		  "min(next_power_of_2(rows an expert), 128)) with the list "
		  "[16, 32, 64, 128])" },
	{ .key = "mxfp4_moe_kernel", .type = ST_ENUM,
	  .offset = OFF(mxfp4_moe_kernel), .values = engine_mxfp4_moe_names,
	  .def = "weight_only",
	  .help = "MXFP4 experts on a GPU without MXFP4 matrix units: "
		  "weight_only (weight_only_moe_kernel's), triton_mx "
		  "(triton_kernels matmul_ogs, where the GPU has a "
		  "weight_only_moe_efficiency triton_mx) or triton_trtllm "
		  "(TensorRT-LLM's TritonFusedMoE, moe_config backend TRITON, "
		  "where the GPU has a weight_only_moe_efficiency "
		  "triton_trtllm); else weight_only_moe_kernel's" },
	{ .key = "mxfp4_marlin_pad_ffn", .type = ST_INT,
	  .offset = OFF(mxfp4_marlin_pad_ffn), .min = 0, .max = 4096,
	  .def = "0",
	  .help = "elements: MXFP4 experts run by the Marlin kernel "
		  "(weight_only_moe_kernel marlin) hold each rank's expert "
		  "intermediate size padded to a multiple of this, their "
		  "GEMMs computing the padding; 0: none" },
	{ .key = "mxfp4_marlin_pad_hidden", .type = ST_INT,
	  .offset = OFF(mxfp4_marlin_pad_hidden), .min = 0, .max = 4096,
	  .def = "0",
	  .help = "elements: and their hidden size to a multiple of this; "
		  "0: none" },
	{ .key = "sink_attn_block_m", .type = ST_INT,
	  .offset = OFF(sink_attn_block_m), .min = 0, .max = 1024, .def = "0",
	  .help = "query rows (tokens x the query heads of one KV head) a "
		  "program of the Triton unified attention kernel holds; the "
		  "prompt tokens of a model with attention_sinks run it on an "
		  "NVIDIA GPU whose compute capability is not in "
		  "sink_attn_native_cc, each program streaming its KV head's "
		  "visible keys through L2; 0: never (the GPU's flash kernel)" },
	{ .key = "sink_attn_native_cc", .type = ST_INT_LIST,
	  .offset = OFF(sink_attn_native_cc), .flags = SF_OPTIONAL,
	  .min = 10, .max = 1000,
	  .help = "compute capabilities (major x 10 + minor: 90 for sm90) "
		  "whose default attention backend takes attention sinks "
		  "(with sink_attn_block_m)" },
	{ .key = "mixed_attn_block_m", .type = ST_INT,
	  .offset = OFF(mixed_attn_block_m), .min = 0, .max = 1024, .def = "0",
	  .help = "query rows a program of the engine's one variable-length "
		  "flash kernel holds when a step mixes prompt and decode "
		  "tokens on an NVIDIA GPU whose compute capability is in "
		  "mixed_attn_unpacked_cc: every decode token then takes one "
		  "program per query head (no GQA packing), each reading its "
		  "KV head's keys from HBM; 0: never (a decode kernel of its "
		  "own)" },
	{ .key = "mixed_attn_unpacked_cc", .type = ST_INT_LIST,
	  .offset = OFF(mixed_attn_unpacked_cc), .flags = SF_OPTIONAL,
	  .min = 10, .max = 1000,
	  .help = "compute capabilities (major x 10 + minor: 80 for sm80) "
		  "where that kernel runs without GQA packing (with "
		  "mixed_attn_block_m)" },
	{ .key = "decode_kernel", .type = ST_ENUM,
	  .offset = OFF(decode_kernel), .values = engine_decode_kernel_names,
	  .def = "flash",
	  .help = "decode attention kernel: flash (FlashInfer / FlashAttention "
		  "split-KV, splitting a sequence's keys only to fill the GPU) "
		  "or trtllm (TensorRT-LLM's own, splitting by the GPU's "
		  "attention.trtllm_decode rule: XQA on Hopper, trtllm-gen on "
		  "Blackwell)" },
	{ .key = "prefill_kernel", .type = ST_ENUM,
	  .offset = OFF(prefill_kernel), .values = engine_prefill_kernel_names,
	  .def = "flash",
	  .help = "prefill attention kernel: flash (FlashAttention / "
		  "FlashInfer at attention.fwd_efficiency) or trtllm "
		  "(TensorRT-LLM's attention op: FP8 context FMHA when it "
		  "quantizes its output or the KV cache is FP8, else 16-bit "
		  "at the GPU's attention.trtllm_ctx16_efficiency; not MLA)" },
	{ .key = "decode_partition", .type = ST_INT,
	  .offset = OFF(decode_partition), .min = 0, .max = 1e6, .def = "0",
	  .help = "tokens of a fixed-partition decode kernel's work unit "
		  "(AMD's ROCm custom paged attention: 256): every sequence's "
		  "keys in ceil(keys / this) units whatever the GPU's fill, "
		  "partial outputs in the step's dtype, then a reduce kernel "
		  "always; 0: decode_kernel's split rule (flash only)" },
	{ .key = "vision_encoder", .type = ST_ENUM,
	  .offset = OFF(vision_encoder), .values = engine_vision_encoder_names,
	  .def = "none",
	  .help = "where a multimodal model's vision encoder (model "
		  "vision_params) sits in GPU memory: none, front_end (the "
		  "front-end process holds it on the instance's first GPU, "
		  "with a CUDA context of its own, before the workers size "
		  "their KV caches: that GPU, the tightest, sets every rank's "
		  "capacity) or workers (every GPU holds it); reported in "
		  "workspace_bytes" },
	{ .key = "estimate_logits", .type = ST_ENUM,
	  .offset = OFF(estimate_logits),
	  .values = engine_estimate_logits_names, .def = "max_seqs",
	  .help = "rows of logits in the activations the KV sizing takes: "
		  "max_seqs (a sampler run at max_num_seqs rows) or dry_run "
		  "(TensorRT-LLM's context-only estimation run: one row per "
		  "dummy request of min(max_num_batched_tokens, sequence "
		  "length - 1) tokens, its last token's)" },
	{ .key = "vision_encoder_B", .type = ST_NUM,
	  .offset = OFF(vision_encoder_B), .min = 0, .max = 8, .def = "2",
	  .help = "bytes per vision-encoder parameter as the engine holds it "
		  "(4: fp32, 2: bf16)" },
	{ .key = "moe_fused_sort_max", .type = ST_INT,
	  .offset = OFF(moe_fused_sort_max), .min = 0, .max = 1e6, .def = "0",
	  .help = "cutlass: steps of at most this many tokens sort their rows "
		  "in one kernel (one thread block), larger ones in three" },
	{ .key = "quant_fusion", .type = ST_ENUM, .offset = OFF(quant_fusion),
	  .values = engine_quant_fusion_names, .def = "none",
	  .help = "kernels that write quantized GEMM inputs themselves: none "
		  "(a quantization kernel before every fp8/fp4 GEMM), norm_act "
		  "(RMSNorm and SiLU-mul; the attention output apart), all" },
	{ .key = "norm_quant", .type = ST_ENUM, .offset = OFF(norm_quant),
	  .values = engine_norm_quant_names, .def = "always",
	  .help = "which RMSNorms write the quantized GEMM input when "
		  "quant_fusion fuses it: always, or tp_allreduce (only one "
		  "fused into the TP all-reduce: TP > 1, no attention DP, "
		  "hidden above norm_quant_hidden, a message within "
		  "norm_quant_ar_max; else a quantization kernel; read from "
		  "TensorRT-LLM's Llama-family decoder layers, applied to "
		  "every model [?])" },
	{ .key = "norm_quant_hidden", .type = ST_INT,
	  .offset = OFF(norm_quant_hidden), .min = 0, .max = 1e7, .def = "0",
	  .help = "norm_quant tp_allreduce: the fusion only for a hidden "
		  "size above this" },
	{ .key = "norm_quant_ar_max", .type = ST_BYTES,
	  .offset = OFF(norm_quant_ar_max_B), .def = "0 B", .max = 1e12,
	  .help = "norm_quant tp_allreduce: the fusion only for a TP "
		  "all-reduce (T h, 16-bit) of at most this size at TP > 2; "
		  "a larger one falls back to the library all-reduce, then "
		  "the norm and a quantization kernel (0: no limit)" },
	{ .key = "norm_quant_ar_max_tp2", .type = ST_BYTES,
	  .offset = OFF(norm_quant_ar_max_tp2_B), .def = "0 B", .max = 1e12,
	  .help = "norm_quant_ar_max at TP 2 (0: no limit)" },
	{ .key = "nccl_channels", .type = ST_INT,
	  .offset = OFF(nccl_channels), .min = 0, .max = 1024, .def = "0",
	  .help = "memory outside torch: ring channels of the engine's NCCL "
		  "communicator over an instance of more than one GPU (0: none)" },
	{ .key = "nccl_channel_buffers", .type = ST_BYTES,
	  .offset = OFF(nccl_channel_buffers_B), .def = "0 B", .max = 1e11,
	  .help = "memory outside torch: B one ring channel's connection "
		  "buffers take on each GPU (LL + LL128 + Simple)" },
	{ .key = "allreduce_ipc_copies", .type = ST_INT,
	  .offset = OFF(allreduce_ipc_copies), .min = 0, .max = 64, .def = "0",
	  .help = "memory outside torch: custom all-reduce IPC buffers on each "
		  "GPU of an all-reduce group of g GPUs, in units of g x the "
		  "fusion workspace (norm_quant_ar_max, at g <= 2 "
		  "norm_quant_ar_max_tp2); only with custom_allreduce" },
	{ .key = "act_quant", .type = ST_ENUM, .offset = OFF(act_quant),
	  .values = engine_act_quant_names, .def = "all",
	  .help = "GEMM-input formats the SiLU-mul writes when quant_fusion "
		  "fuses it: all, or per_tensor (FP8 with one scale; NVFP4 and "
		  "MX block-scaled inputs take a quantization kernel)" },
	{ .key = "input_broadcasts", .type = ST_INT,
	  .offset = OFF(input_broadcasts), .min = 0, .max = 24, .def = "0",
	  .help = "GPU tensors of the step's inputs (tokens, positions, "
		  "attention metadata, sampled rows) the driver broadcasts to "
		  "the other TP ranks before each scheduler call's forward, "
		  "one library broadcast each (vLLM V0's broadcast_tensor_dict)" },
	{ .key = "linear_attn_chunk", .type = ST_INT,
	  .offset = OFF(linear_attn_chunk), .def = "64", .min = 1,
	  .max = 4096,
	  .help = "tokens a chunk of the Gated DeltaNet (linear_attention) "
		  "prefill chunk kernels (flash-linear-attention's "
		  "chunk_gated_delta_rule, which vLLM and SGLang call: 64)" },
	{ .key = "rope_cache_fused", .type = ST_BOOL,
	  .offset = OFF(rope_cache_fused), .def = "true",
	  .help = "RoPE and the KV-cache write are one kernel; false: a "
		  "rotary kernel on Q and K, then the cache write (vLLM V0's "
		  "rotary_embedding and reshape_and_cache)" },
	{ .key = "mla_q_pe_fused", .type = ST_BOOL,
	  .offset = OFF(mla_q_pe_fused), .def = "false",
	  .help = "MLA prefill: the rotated q_pe reaches Q inside the RoPE / "
		  "cache kernel or the attention op, and without a cached "
		  "prefix K's rotary part too (TensorRT-LLM: "
		  "mla_rope_append_paged_kv_assign_q; rope_fusion), so the "
		  "Q/K assembly copies K only; false: q_pe written back into "
		  "Q and K built whole (SGLang, vLLM)" },
	{ .key = "qk_norm_rope_fused", .type = ST_BOOL,
	  .offset = OFF(qk_norm_rope_fused), .def = "false",
	  .help = "a model's per-head RMSNorm of Q and K (Qwen3) and RoPE are "
		  "one kernel in place on Q and K (TensorRT-LLM's "
		  "fused_qk_norm_rope); false: a norm kernel for Q and one "
		  "for K before the rotary (vLLM's q_norm and k_norm modules; "
		  "under vLLM V1's torch.compile Inductor may fuse them with "
		  "the rotary, not checked [?])" },
	{ .key = "attn_temperature", .type = ST_ENUM,
	  .offset = OFF(attn_temperature),
	  .values = engine_attn_temperature_names, .def = "fused",
	  .help = "a model's attention temperature tuning (Llama 4's NoPE "
		  "layers): fused (no kernel of its own) or eager (seven "
		  "kernels on the positions, q times the scale in fp32, the "
		  "cast back, and q, k, v concatenated again: TensorRT-LLM)" },
	{ .key = "graph_input_copies", .type = ST_INT,
	  .offset = OFF(graph_input_copies), .min = 0, .max = 16, .def = "0",
	  .help = "device copies of the step's inputs into a captured "
		  "graph's static buffers before each replay (vLLM V0's "
		  "CUDAGraphRunner.forward)" },
	{ .key = "tp_step_overhead", .type = ST_TIME,
	  .offset = OFF(tp_step_overhead_s), .max = 1e-2, .def = "0 us",
	  .help = "host time per scheduler call added with TP > 1: the "
		  "driver serializes the input metadata, a worker "
		  "deserializes it and rebuilds its inputs (vLLM V0's "
		  "broadcast_tensor_dict over the shared-memory queue)" },
	{ .key = "tp_seq_overhead", .type = ST_TIME,
	  .offset = OFF(tp_seq_overhead_s), .max = 1e-4, .def = "0 us",
	  .help = "host time per scheduled sequence and scheduler call "
		  "added with TP > 1: the per-request entries of the call "
		  "the workers unpickle and of the output rank's reply "
		  "(vLLM V1's MultiprocExecutor message queues)" },
	{ .key = "sampler_passes", .type = ST_INT,
	  .offset = OFF(sampler_passes), .min = 1, .max = 16, .def = "1",
	  .help = "kernels of the sampler over the sampled rows' fp32 logits "
		  "after the cast (each reads and writes them)" },
	{ .key = "sampler_passes_greedy", .type = ST_INT,
	  .offset = OFF(sampler_passes_greedy), .min = 0, .max = 16,
	  .def = "0",
	  .help = "sampler kernels over the fp32 logits when every request "
		  "of the job samples greedily (serving.greedy): vLLM V1 "
		  "takes the argmax alone; 0: sampler_passes" },
	{ .key = "sampler_copies", .type = ST_INT,
	  .offset = OFF(sampler_copies), .min = 0, .max = 16, .def = "0",
	  .help = "host-device copies the sampler makes per step (its "
		  "parameter tensors up, the sampled ids down)" },
	{ .key = "block_table_copy", .type = ST_BOOL,
	  .offset = OFF(block_table_copy), .def = "false",
	  .help = "each step copies the block-table rows of every running "
		  "request whole (max_model_len / block_size int32 each) "
		  "from pinned host memory to the GPU over the host link, "
		  "on the compute stream before the forward (vLLM V1's "
		  "BlockTable.commit_block_table)" },
	{ .key = "skinny_gemm_rows", .type = ST_INT,
	  .offset = OFF(skinny_gemm_rows), .min = 0, .max = 16, .def = "0",
	  .help = "quantized linear layers of at most this many rows (tokens) "
		  "run the engine's own skinny GEMM kernel, which sums its k "
		  "split in the same launch (vLLM ROCm's wvSplitKQ); 0: every "
		  "GEMM goes to the library" },
	{ .key = "skinny_gemm_rows_base", .type = ST_INT,
	  .offset = OFF(skinny_gemm_rows_base), .min = 0, .max = 16,
	  .def = "0",
	  .help = "the same for unquantized linear layers (vLLM ROCm's "
		  "wvSplitK and LLMM1)" },
	{ .key = "fp8_fast_accumulation", .type = ST_BOOL,
	  .offset = OFF(fp8_fast_accum), .def = "false",
	  .help = "the dense fp8 linear layers run in Hopper's fast-"
		  "accumulation mode (partial sums never promoted to fp32: "
		  "CUTLASS FP8FastAccum kernels, cuBLASLt FAST_ACCUM 1), at "
		  "the GPU's fp8_fast_accum_efficiency; false: promoted "
		  "(gemm_efficiency_dtype fp8). Expert (grouped) GEMMs are "
		  "not split by mode" },
	{ .key = "eager_op", .type = ST_TIME, .offset = OFF(eager_op_s),
	  .max = 1e-2, .def = "0 us",
	  .help = "host time per kernel launched outside a CUDA graph (the "
		  "framework's op dispatch and launch): a step cannot run faster "
		  "than its host issues its eager kernels" },
	{ .key = "issue_serial", .type = ST_BOOL, .offset = OFF(issue_serial),
	  .def = "false",
	  .help = "the eager launches (eager_op per kernel) run on the "
		  "thread of the host loop, after its scheduling and before "
		  "its bookkeeping: with overlap_scheduling a step's host "
		  "time is its host work plus its issue time (TensorRT-LLM's "
		  "PyExecutor); false: they only bound the GPU's time" },
	{ .key = "multi_step", .type = ST_INT, .offset = OFF(multi_step),
	  .min = 1, .max = 1024, .def = "1",
	  .help = "decode steps per scheduler call (vLLM V0 num_scheduler_steps): "
		  "their host work is shared" },
	{ .key = "admit_watermark", .type = ST_NUM,
	  .offset = OFF(admit_watermark), .min = 0, .max = 1, .def = "0",
	  .help = "fraction of the KV pages an admission must leave free "
		  "(vLLM V0: 0.01)" },
	{ .key = "new_token_ratio", .type = ST_NUM, .offset = OFF(new_token_ratio),
	  .min = 0, .max = 1, .def = "0",
	  .help = "sglang: fraction of running requests' remaining output "
		  "reserved when admitting (initial value)" },
	{ .key = "min_new_token_ratio_factor", .type = ST_NUM,
	  .offset = OFF(min_new_token_ratio_factor), .min = 0, .max = 1,
	  .def = "0", .help = "sglang: floor of the ratio, as a factor of the initial" },
	{ .key = "new_token_ratio_decay_steps", .type = ST_INT,
	  .offset = OFF(new_token_ratio_decay_steps), .min = 0, .max = 1e9,
	  .def = "0", .help = "sglang: steps the ratio takes to decay to its floor" },
	{ .key = "adp_schedule_conservativeness", .type = ST_NUM,
	  .offset = OFF(adp_schedule_conservativeness), .min = 0, .max = 10,
	  .def = "1",
	  .help = "sglang under attention DP: factor on new_token_ratio (and "
		  "so its floor and decay), SGLang's schedule_conservativeness "
		  "as --enable-dp-attention sets it (x 0.3)" },
	{ .key = "capacity", .type = ST_ENUM, .offset = OFF(capacity),
	  .values = engine_capacity_names, .def = "guaranteed_no_evict",
	  .help = "trtllm: capacity scheduler policy" },
	{ .key = "adp_admission", .type = ST_ENUM, .offset = OFF(adp_admit),
	  .values = engine_adp_admit_names, .def = "pooled",
	  .help = "trtllm attention DP: requests fetched by the ranks' active "
		  "counts, each rank's capacity scheduler admitting against "
		  "its own KV pool (rank), or admitted against one pool of "
		  "all ranks before a rank is chosen (pooled)" },
	{ .key = "adp_balance", .type = ST_BOOL, .offset = OFF(adp_balance),
	  .def = "false",
	  .help = "trtllm attention DP: attention_dp_config enable_balance "
		  "(hold context requests until every rank has one, "
		  "adp_timeout_iters at most)" },
	{ .key = "adp_timeout_iters", .type = ST_INT,
	  .offset = OFF(adp_timeout_iters), .min = 0, .max = 1e9,
	  .def = DEF_TEXT(ADP_TIMEOUT_ITERS_DEF),
	  .help = "trtllm adp_balance: attention_dp_config timeout_iters" },
	{ .key = "adp_batching_wait_iters", .type = ST_INT,
	  .offset = OFF(adp_batching_wait_iters), .min = 0, .max = 1e9,
	  .def = DEF_TEXT(ADP_BATCHING_WAIT_ITERS_DEF),
	  .help = "trtllm adp_balance: attention_dp_config "
		  "batching_wait_iters" },
	{ .key = "auto_size", .type = ST_BOOL, .offset = OFF(auto_size),
	  .def = "false",
	  .help = "trtllm-bench sizing: max_num_seqs and max_num_batched_tokens "
		  "from the KV capacity and the job's lengths" },
	{ .key = "auto_size_rule", .type = ST_SECTION, .offset = OFF(auto_rule),
	  .sub = &auto_schema, .flags = SF_OPTIONAL,
	  .help = "auto_size: caps and rounding steps (the KV fraction is "
		  "auto_size_fraction, else memory_fraction)" },
	{ .key = "auto_size_fraction", .type = ST_NUM,
	  .offset = OFF(auto_size_fraction), .min = 0, .max = 1, .def = "0",
	  .help = "auto_size: the KV fraction trtllm-bench's sizing reads "
		  "(its --kv_cache_free_gpu_mem_fraction); 0: memory_fraction. "
		  "Set it apart from memory_fraction when the llm_options carry "
		  "a kv_cache_config, which replaces trtllm-bench's KvCacheConfig "
		  "(and the flag's fraction) whole" },
};

/* Steps one longer than their bounds, bounds rising. */
static int check_steps(const struct cnode *node, const char *what,
		       const struct schema_int_list *below,
		       const struct schema_int_list *step, struct diag *d)
{
	size_t i;

	if (step->n != below->n + 1) {
		cnode_error(d, node, "auto_size_rule: %s_step has %zu entries, "
			    "%s_below %zu: give one step more than bounds",
			    what, step->n, what, below->n);
		return -1;
	}
	for (i = 1; i < below->n; i++)
		if (below->v[i] <= below->v[i - 1]) {
			cnode_error(d, node, "auto_size_rule: %s_below must "
				    "rise", what);
			return -1;
		}
	return 0;
}

/* TensorRT-LLM's own scheduler keys: serve_trtllm.c (capacity, the
 * attention-DP admission and balance) is their only reader, so under
 * another scheduler a value other than the default would be taken and
 * never read (adp_balance: true on a vLLM engine ran as without it).
 * The defaults pass: `config show` prints every key. */
static const char *trtllm_only_set(const struct engine_spec *e)
{
	if (e->capacity != ENGINE_CAP_NO_EVICT)
		return "capacity";
	if (e->adp_admit != ENGINE_ADP_POOLED)
		return "adp_admission";
	if (e->adp_balance)
		return "adp_balance";
	if (e->adp_timeout_iters != ADP_TIMEOUT_ITERS_DEF)
		return "adp_timeout_iters";
	if (e->adp_batching_wait_iters != ADP_BATCHING_WAIT_ITERS_DEF)
		return "adp_batching_wait_iters";
	return NULL;
}

static int engine_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct engine_spec *e = obj;
	const struct cnode *sizes;
	size_t i;

	if (e->scheduler != ENGINE_SCHED_TRTLLM && trtllm_only_set(e)) {
		const char *k = trtllm_only_set(e);

		sizes = cnode_get(node, k);
		cnode_error(d, sizes ? sizes : node, "'%s' is TensorRT-LLM's "
			    "(scheduler trtllm), but the scheduler is %s, "
			    "which never reads it: drop the key", k,
			    engine_scheduler_names[e->scheduler]);
		return -1;
	}

	if (e->custom_allreduce && !e->custom_allreduce_lib) {
		cnode_error(d, node, "'custom_allreduce' is true but "
			    "'custom_allreduce_collectives' names no latency "
			    "model (a collectives preset)");
		return -1;
	}
	if (e->decode_partition > 0 && e->decode_kernel != ENGINE_DECODE_FLASH) {
		const struct cnode *pn = cnode_get(node, "decode_partition");

		cnode_error(d, pn ? pn : node,
			    "'decode_partition' is %lld but 'decode_kernel' is "
			    "%s: a fixed partition is the flash kernel's "
			    "(AMD's paged attention); set one of the two",
			    (long long)e->decode_partition,
			    engine_decode_kernel_names[e->decode_kernel]);
		return -1;
	}
	if (e->graph_pool_B > e->workspace_B) {
		const struct cnode *gn = cnode_get(node, "graph_pool");

		cnode_error(d, gn ? gn : node, "'graph_pool' (%.4g GB) is part "
			    "of 'workspace' (%.4g GB) and cannot exceed it",
			    e->graph_pool_B / 1e9, e->workspace_B / 1e9);
		return -1;
	}
	if (e->graph_pool_B > 0 && e->memory_rule != ENGINE_MEM_SNAPSHOT) {
		const struct cnode *gn = cnode_get(node, "graph_pool");

		cnode_error(d, gn ? gn : node, "'graph_pool' is read only by "
			    "memory_rule snapshot, but the rule is %s: drop the "
			    "key", engine_memory_rule_names[e->memory_rule]);
		return -1;
	}
	if (e->cuda_graphs != ENGINE_GRAPHS_NONE && e->cuda_graph_max < 1) {
		cnode_error(d, node, "'cuda_graphs' is %s but 'cuda_graph_max' "
			    "is %lld: give the largest captured size",
			    engine_graphs_names[e->cuda_graphs],
			    (long long)e->cuda_graph_max);
		return -1;
	}
	sizes = cnode_get(node, "cuda_graph_sizes");
	if (sizes && e->cuda_graph_sizes.n == 0) {
		cnode_error(d, sizes, "'cuda_graph_sizes' is empty: list the "
			    "captured batch sizes, or leave the key out to pad "
			    "by 'cuda_graph_pad'");
		return -1;
	}
	if (e->cuda_graph_sizes.n > 0 && e->cuda_graphs != ENGINE_GRAPHS_NONE &&
	    e->cuda_graph_sizes.v[e->cuda_graph_sizes.n - 1] !=
	    e->cuda_graph_max) {
		/* TensorRT-LLM's CudaGraphConfig: the largest listed size is
		 * the graphs' max_batch_size; a list ending elsewhere would
		 * run sizes between the two eagerly or never reach its tail */
		cnode_error(d, sizes ? sizes : node, "'cuda_graph_sizes' ends at %lld but "
			    "'cuda_graph_max' is %lld: the largest captured "
			    "size is both",
			    (long long)e->cuda_graph_sizes.v[e->cuda_graph_sizes.n - 1],
			    (long long)e->cuda_graph_max);
		return -1;
	}
	for (i = 1; i < e->cuda_graph_sizes.n; i++)
		if (e->cuda_graph_sizes.v[i] <= e->cuda_graph_sizes.v[i - 1]) {
			cnode_error(d, cnode_get(node, "cuda_graph_sizes") ?
				    cnode_get(node, "cuda_graph_sizes") : node,
				    "'cuda_graph_sizes' must rise: %lld after "
				    "%lld", (long long)e->cuda_graph_sizes.v[i],
				    (long long)e->cuda_graph_sizes.v[i - 1]);
			return -1;
		}
	if (e->weight_only_moe_tile_m.n > 0 && e->weight_only_moe_tile_n < 1) {
		const struct cnode *tn = cnode_get(node, "weight_only_moe_tile_m");

		cnode_error(d, tn ? tn : node, "'weight_only_moe_tile_m' lists "
			    "%zu tiles but 'weight_only_moe_tile_n' is %lld: "
			    "give the tiles' columns (vLLM Marlin: 128)",
			    e->weight_only_moe_tile_m.n,
			    (long long)e->weight_only_moe_tile_n);
		return -1;
	}
	if (e->weight_only_moe_tile_pick == ENGINE_WO_TILE_COVER) {
		const struct cnode *tp = cnode_get(node,
						   "weight_only_moe_tile_pick");

		if (e->weight_only_moe_tile_m.n == 0) {
			cnode_error(d, tp ? tp : node, "'weight_only_moe_tile_pick' "
				    "is cover but 'weight_only_moe_tile_m' lists "
				    "no tiles to pick from");
			return -1;
		}
		for (i = 1; i < e->weight_only_moe_tile_m.n; i++)
			if (e->weight_only_moe_tile_m.v[i] <=
			    e->weight_only_moe_tile_m.v[i - 1]) {
				cnode_error(d, tp ? tp : node,
					    "'weight_only_moe_tile_pick' cover "
					    "needs 'weight_only_moe_tile_m' to "
					    "rise: %lld after %lld",
					    (long long)e->weight_only_moe_tile_m.v[i],
					    (long long)e->weight_only_moe_tile_m.v[i - 1]);
				return -1;
			}
	}
	if (e->auto_size && (e->auto_rule.max_seqs < 1 ||
			     e->auto_rule.max_tokens < 1)) {
		cnode_error(d, node, "'auto_size' is true but 'auto_size_rule' "
			    "gives no max_seqs and max_tokens");
		return -1;
	}
	if (e->auto_size && cnode_get(node, "auto_size_rule"))
		node = cnode_get(node, "auto_size_rule");
	if (e->auto_size &&
	    (check_steps(node, "seq", &e->auto_rule.seq_below,
			 &e->auto_rule.seq_step, d) ||
	     check_steps(node, "token", &e->auto_rule.token_below,
			 &e->auto_rule.token_step, d)))
		return -1;
	return 0;
}

static const char *const engine_dirs[] = {"workloads/engines", NULL};

const struct schema engine_schema = {
	.kind = "engine",
	.help = "a serving engine: scheduler, KV sizing, graphs, all-reduce, host overhead",
	.preset_dirs = engine_dirs,
	.size = sizeof(struct engine_spec),
	.fields = engine_fields,
	.nfields = SCHEMA_COUNT(engine_fields),
	.check = engine_check,
};
