/*
 * spec_engine.h - a serving engine as configured: how it schedules, how
 * it sizes its KV cache, what it launches through CUDA/HIP graphs, how
 * it reduces across tensor-parallel GPUs, and its host overhead.
 *
 * Loaded from workloads/engines/NAME.yaml (kind "engine"; vllm, sglang,
 * trtllm) through engine_schema; every number carries its source in the
 * preset (the engines' own defaults, read from their code). The serving
 * simulation (src/serve) runs the scheduler the preset names; the
 * inference step model (src/models/infer*) reads the graph, all-reduce
 * and memory settings.
 *
 * Depends on schema.h and spec_collectives.h.
 */
#ifndef LLMSIM_CONFIG_SPEC_ENGINE_H
#define LLMSIM_CONFIG_SPEC_ENGINE_H

#include <stdint.h>

#include "schema.h"
#include "spec_collectives.h"

/* Whose scheduling policy the engine runs (src/serve/serve_sched.c). */
enum engine_scheduler {
	ENGINE_SCHED_VLLM,	/* vLLM V1: one token budget, running first,
				 * on-demand KV blocks, preempt on exhaustion */
	ENGINE_SCHED_SGLANG,	/* SGLang: prefill batches first, admission
				 * by new_token_ratio, retract on exhaustion */
	ENGINE_SCHED_TRTLLM,	/* TensorRT-LLM in-flight batching with a
				 * capacity policy */
	ENGINE_SCHED_VLLM_V0,	/* vLLM V0 without chunked prefill: prefill-only
				 * steps first, decode steps otherwise */
	ENGINE_SCHED_COUNT
};

/* How the engine sizes the memory it takes (section 5 of the design). */
enum engine_memory_rule {
	ENGINE_MEM_TOTAL,	/* fraction x total = weights + activations +
				 * KV (vLLM gpu_memory_utilization) */
	ENGINE_MEM_STATIC,	/* fraction x total = weights + KV; activations
				 * from the rest (SGLang mem_fraction_static) */
	ENGINE_MEM_FREE,	/* KV = fraction x (total - weights -
				 * activations) (TensorRT-LLM
				 * kv_cache_free_gpu_mem_fraction) */
	ENGINE_MEM_SNAPSHOT,	/* fraction x total = weights + activations +
				 * KV + the rest outside torch that grows after
				 * the worker's first memory snapshot: the CUDA
				 * context (before it) and the graph pool
				 * (captured after the KV cache) outside (vLLM
				 * V1 gpu_worker.py) */
	ENGINE_MEM_COUNT
};

/* Which kernels of a step run from a captured CUDA/HIP graph. */
enum engine_graphs {
	ENGINE_GRAPHS_NONE,	/* eager: every kernel launched by the host */
	ENGINE_GRAPHS_PIECEWISE,/* all but attention, steps of up to
				 * cuda_graph_max tokens (vLLM V1) */
	ENGINE_GRAPHS_FULL,	/* every kernel of a decode-only step of up
				 * to cuda_graph_max sequences (SGLang,
				 * TensorRT-LLM generation) */
	ENGINE_GRAPHS_COUNT
};

/* TensorRT-LLM's capacity scheduler. */
enum engine_capacity {
	ENGINE_CAP_NO_EVICT,	/* GUARANTEED_NO_EVICT: admit when prompt +
				 * max output fit; never evict */
	ENGINE_CAP_MAX_UTIL,	/* MAX_UTILIZATION: admit when the prompt
				 * fits; evict on exhaustion */
	ENGINE_CAP_COUNT
};

/* What TensorRT-LLM's attention-DP ranks admit against. */
enum engine_adp_admit {
	ENGINE_ADP_POOLED,	/* one KV pool of all ranks: the fetch waits
				 * for it (the earlier model) */
	ENGINE_ADP_RANK,	/* fetch by active counts, then each rank's
				 * capacity scheduler against its own pool */
	ENGINE_ADP_COUNT
};

extern const char *const engine_scheduler_names[];
extern const char *const engine_memory_rule_names[];
extern const char *const engine_graphs_names[];
extern const char *const engine_capacity_names[];
extern const char *const engine_adp_admit_names[];
extern const char *const engine_quant_fusion_names[];
extern const char *const engine_norm_quant_names[];
extern const char *const engine_act_quant_names[];
extern const char *const engine_moe_kernels_names[];
extern const char *const engine_decode_kernel_names[];
extern const char *const engine_prefill_kernel_names[];
extern const char *const engine_vendor_names[];
extern const char *const engine_vision_encoder_names[];
extern const char *const engine_estimate_logits_names[];
extern const char *const engine_attn_temperature_names[];

/* How the engine applies a model's attention temperature tuning (Llama 4:
 * the NoPE layers' queries scaled by a function of their positions). */
enum engine_attn_temperature {
	ENGINE_ATEMP_FUSED,	/* inside a kernel that runs anyway (vLLM V1's
				 * compiled graph; an attention kernel's q
				 * scale): no kernel of its own */
	ENGINE_ATEMP_EAGER,	/* PyTorch ops one by one on the positions and
				 * on q, then q, k and v concatenated again for
				 * the fused-QKV attention op (TensorRT-LLM's
				 * Llama4Attention; infer_ops.c) */
	ENGINE_ATEMP_COUNT
};

/* The rows of logits the engine's KV sizing counts in its activations. */
enum engine_estimate_logits {
	ENGINE_ELOG_MAX_SEQS,	/* a sampler run of max_num_seqs rows */
	ENGINE_ELOG_DRY_RUN,	/* a context-only dry run: each dummy request's
				 * last token */
	ENGINE_ELOG_COUNT
};

/* Where the engine holds a multimodal model's vision encoder
 * (model vision_params) in GPU memory. */
enum engine_vision_encoder {
	ENGINE_VENC_NONE,	/* nowhere (text-only use, or not loaded) */
	ENGINE_VENC_FRONT_END,	/* in the front-end process, on the first GPU
				 * of the instance, with that process's own
				 * CUDA context, before the workers size their
				 * KV caches */
	ENGINE_VENC_WORKERS,	/* in every worker, beside its weights */
	ENGINE_VENC_COUNT
};

/* How the engine runs a routed-expert layer (infer_moe.c). */
/* Experts whose weights alone are quantized (W4A16, W8A16: a GPU without
 * the weights' matrix rate): the engine's grouped GEMM (gpu_wo_kernel). */
enum engine_wo_moe {
	ENGINE_WO_MOE_NONE,	/* not modelled: the bf16 GEMM rate */
	ENGINE_WO_MOE_MARLIN	/* vLLM's fused_marlin_moe */
};

/* MXFP4 experts on a GPU without MXFP4 MMAs. */
enum engine_mxfp4_moe {
	ENGINE_MXFP4_MOE_WEIGHT_ONLY,	/* weight_only_moe_kernel's */
	ENGINE_MXFP4_MOE_TRITON_MX,	/* triton_kernels matmul_ogs where the
					 * GPU has its efficiency, else
					 * weight_only_moe_kernel's */
	ENGINE_MXFP4_MOE_TRITON_TRTLLM	/* TensorRT-LLM's TritonFusedMoE
					 * where the GPU has its efficiency,
					 * else weight_only_moe_kernel's */
};

/* Which of weight_only_moe_tile_m a weight-only MoE kernel runs. */
enum engine_wo_tile_pick {
	ENGINE_WO_TILE_FASTEST,	/* the fastest of those and the GPU's tiles
				 * (gpu_grouped.c's search) */
	ENGINE_WO_TILE_COVER	/* one, by the rows an expert gets: the
				 * smallest listed at or above them, the
				 * largest listed past all (triton_kernels'
				 * block_m rule) */
};

/* The grouped GEMM of block-scaled fp8 experts (DeepSeek's 128 x 128
 * weight scales) outside TensorRT-LLM's CUTLASS fused MoE. */
enum engine_fp8_block_moe {
	ENGINE_FP8_BLOCK_MOE_NONE,	/* not modelled: the GPU's fp8 rate */
	ENGINE_FP8_BLOCK_MOE_TRITON	/* vLLM's Triton fused_moe with block
					 * scales (the GPU's
					 * triton_moe_fp8_block_rate) */
};

/* DeepSeek Sparse Attention's prompt tokens (a model with index_topk). */
enum engine_dsa_kernel {
	ENGINE_DSA_AUTO,		/* the cheaper by FLOPs of DeepSeek's
					 * masked-MHA mode and the sparse kernel
					 * (infer.c dsa_prefill_mha) */
	ENGINE_DSA_FLASHMLA_SPARSE	/* every token through FlashMLA's sparse
					 * kernel, the query heads padded to the
					 * GPU's flashmla_sparse_heads */
};

extern const char *const engine_fp8_block_moe_names[];
extern const char *const engine_dsa_kernel_names[];
extern const char *const engine_wo_moe_names[];
extern const char *const engine_mxfp4_moe_names[];
extern const char *const engine_wo_tile_pick_names[];

enum engine_moe_kernels {
	ENGINE_MOE_GENERIC,	/* the fused-MoE kernels of vLLM and SGLang:
				 * sort ids, grouped GEMMs reading the tokens
				 * in place, a k-way sum */
	ENGINE_MOE_CUTLASS,	/* TensorRT-LLM's CUTLASS fused MoE: quantize,
				 * sort, permute the rows, grouped GEMMs,
				 * finalize (unpermute, scale, k-way sum) */
	ENGINE_MOE_COUNT
};

/* Whose GPUs the engine's build runs on. */
enum engine_vendor {
	ENGINE_VENDOR_ANY,
	ENGINE_VENDOR_NVIDIA,	/* CUDA only (TensorRT-LLM) */
	ENGINE_VENDOR_AMD,	/* ROCm only (AMD's vLLM fork) */
	ENGINE_VENDOR_COUNT
};

/* Whose decode attention kernel the engine runs (its split of a
 * sequence's keys over CTAs, gpu_attn_infer.c). */
enum engine_decode_kernel {
	ENGINE_DECODE_FLASH,	/* FlashInfer / FlashAttention split-KV: split
				 * only to fill the GPU */
	ENGINE_DECODE_TRTLLM,	/* TensorRT-LLM's own: the GPU's
				 * attention.trtllm_decode rule (XQA, trtllm-gen) */
	ENGINE_DECODE_COUNT
};

/* Whose prefill (context) attention kernel the engine runs. */
enum engine_prefill_kernel {
	ENGINE_PREFILL_FLASH,	/* FlashAttention / FlashInfer at the GPU's
				 * attention.fwd_efficiency */
	ENGINE_PREFILL_TRTLLM,	/* TensorRT-LLM's attention op: its context
				 * FMHA in FP8 when the op quantizes its output
				 * or the KV cache is FP8, else in 16 bits at
				 * the GPU's attention.trtllm_ctx16_efficiency */
	ENGINE_PREFILL_COUNT
};

/* Which kernels write a quantized GEMM input themselves (when the GEMMs
 * run in a dtype narrower than 16 bits); the others' outputs take a
 * separate quantization kernel. */
enum engine_quant_fusion {
	ENGINE_QFUSE_NONE,	/* every quantized GEMM quantizes its input in
				 * a kernel of its own */
	ENGINE_QFUSE_NORM_ACT,	/* RMSNorm and SiLU-mul write it; the
				 * attention output is quantized apart */
	ENGINE_QFUSE_ALL,	/* the attention output too */
	ENGINE_QFUSE_COUNT
};

/* Which RMSNorms write the quantized input of the GEMM after them when
 * quant_fusion has them do so (norm_act or all). */
enum engine_norm_quant {
	ENGINE_NORMQ_ALWAYS,	/* every one */
	ENGINE_NORMQ_TP_ALLREDUCE, /* only one fused into the TP all-reduce
				 * (TP > 1, no attention DP, hidden larger
				 * than norm_quant_hidden, a message within
				 * norm_quant_ar_max); else the norm
				 * writes 16 bits and a quantization kernel
				 * runs (TensorRT-LLM's AllReduce fusion) */
	ENGINE_NORMQ_COUNT
};

/* Which GEMM-input formats the SiLU-mul writes itself when quant_fusion
 * has it do so. */
enum engine_act_quant {
	ENGINE_ACTQ_ALL,	/* every one */
	ENGINE_ACTQ_PER_TENSOR,	/* per-tensor-scaled FP8 only; block-scaled
				 * inputs (NVFP4, MX) take a kernel of their
				 * own */
	ENGINE_ACTQ_COUNT
};

/* trtllm-bench's sizing rule (tensorrt_llm/bench/build/tuning.py
 * finetune_setting): the requests the KV cache holds at the dataset's mean
 * lengths are capped, then rounded up, in steps that grow with the size. */
struct engine_auto_size {
	int64_t max_seqs;			/* cap on the requests (decoder buffers) */
	int64_t max_tokens;			/* cap on the tokens of a step (activations) */
	int64_t min_seqs;			/* max batch size, at least */
	struct schema_int_list seq_below;	/* a raw batch size below entry i ... */
	struct schema_int_list seq_step;	/* ... rounds up to a multiple of step i;
						 * at or above the last, the last step */
	int64_t min_tokens;			/* max num tokens, at least */
	struct schema_int_list token_below;	/* as seq_below, for max num tokens */
	struct schema_int_list token_step;
	/* calc_engine_setting's engine size: the checkpoint's stored
	 * elements times bytes per element by quantization (BYTES_PER_ELEM);
	 * 0 = the instance's own weights instead */
	double param_B;				/* unquantized checkpoints */
	double param_B_fp8;			/* FP8 (per-tensor, block scales) */
	double param_B_fp4;			/* NVFP4 */
};

struct engine_spec {
	const char *name;			/* preset name */
	const char *version;			/* engine version the defaults come from (info) */
	const char *rocm_preset;		/* the preset of its ROCm build (warned toward
						 * on an AMD GPU); NULL: none */
	int scheduler;				/* enum engine_scheduler */
	int vendor;				/* enum engine_vendor: whose GPUs it runs on */
	int64_t max_num_seqs;			/* sequences in one step, at most */
	int64_t max_num_batched_tokens;		/* tokens in one step, at most (the prefill budget) */
	int chunked_prefill;			/* prompts may be split over steps */
	int64_t block_size;			/* tokens per KV-cache page */
	double memory_fraction;			/* fraction of GPU memory, by memory_rule */
	int memory_rule;			/* enum engine_memory_rule */
	double workspace_B;			/* B per GPU outside weights, KV and activations
						 * (graph pool, library workspaces, runtime) */
	double graph_pool_B;			/* B of the workspace captured after the
						 * KV cache is sized (memory_rule snapshot) */
	int prefix_caching;			/* reuses cached prompt prefixes */
	int window_kv_groups;			/* full and sliding-window attention
						 * layers paged in groups, a window
						 * group holding the window's pages
						 * only (infer_mem.c) */
	int cuda_graphs;			/* enum engine_graphs */
	int64_t cuda_graph_max;			/* largest captured step: sequences (full) or
						 * tokens (piecewise) */
	int64_t cuda_graph_pad;			/* captured sizes are multiples of this above it:
						 * a step is padded up to the next */
	struct schema_int_list cuda_graph_sizes; /* the captured sizes, rising (given:
						 * replaces cuda_graph_pad's rule) */
	int custom_allreduce;			/* TP all-reduces below custom_allreduce_max use
						 * the engine's own kernels */
	double custom_allreduce_max_B;		/* B, largest custom all-reduce */
	const struct coll_lib_spec *custom_allreduce_lib; /* its latency model */
	double step_overhead_s;			/* s of host work per step (schedule, inputs, outputs) */
	double seq_overhead_s;			/* s of host work per sequence per step */
	double prompt_token_overhead_s;		/* s of host work per prompt token a step
						 * computes (input lists, prompt copies) */
	int overlap_scheduling;			/* host work of a step runs under the previous
						 * step's GPU time */
	int overlap_extra_step;			/* with overlap_scheduling: a request that
						 * made its last token runs one more decode
						 * step (its finish is seen one step late) */
	int quant_fusion;			/* enum engine_quant_fusion */
	int norm_quant;				/* enum engine_norm_quant */
	int64_t norm_quant_hidden;		/* tp_allreduce: fused only above this
						 * hidden size */
	double norm_quant_ar_max_B;		/* tp_allreduce: ... and only for an
						 * all-reduce of at most this many B
						 * (TP > 2; 0: no limit) */
	double norm_quant_ar_max_tp2_B;		/* the same at TP 2 */
	int64_t nccl_channels;			/* ring channels of the engine's one NCCL
						 * communicator over the instance's GPUs */
	double nccl_channel_buffers_B;		/* B a ring channel's connection buffers
						 * take on each GPU (LL + LL128 + Simple) */
	int64_t allreduce_ipc_copies;		/* custom all-reduce IPC buffers on each
						 * GPU, in units of g x the fusion
						 * workspace (norm_quant_ar_max[_tp2]) */
	int act_quant;				/* enum engine_act_quant */
	int64_t input_broadcasts;		/* GPU tensors of step inputs the driver
						 * broadcasts over the TP group before a
						 * scheduler call's forward (vLLM V0) */
	int64_t linear_attn_chunk;		/* tokens a chunk of the Gated DeltaNet
						 * prefill chunk kernels (fla: 64) */
	int rope_cache_fused;			/* RoPE and the KV-cache write are one
						 * kernel (else a rotary kernel, then the
						 * cache write) */
	int mla_q_pe_fused;			/* MLA prefill: no q_pe write-back;
						 * K's rotary part built only with a
						 * cached prefix (TensorRT-LLM) */
	int qk_norm_rope_fused;			/* a model's per-head Q/K RMSNorm and
						 * RoPE are one in-place kernel (else a
						 * norm kernel each for Q and K) */
	int attn_temperature;			/* enum engine_attn_temperature */
	int64_t graph_input_copies;		/* copies of the step inputs into a
						 * graph's buffers before each replay */
	double tp_step_overhead_s;		/* s of host work per scheduler call with
						 * TP > 1 (input metadata to the workers) */
	double tp_seq_overhead_s;		/* s of it per scheduled sequence (the
						 * per-request lists and dicts of the step's
						 * call and reply) */
	int64_t sampler_passes;			/* fp32 passes over the sampled rows'
						 * logits after the cast (sampler kernels) */
	int64_t sampler_passes_greedy;		/* ... when every request samples greedily
						 * (0: sampler_passes) */
	int64_t sampler_copies;			/* host<->device copies of the sampler's
						 * tensors and sampled ids per step */
	int block_table_copy;			/* each step copies the running requests'
						 * whole block-table rows (max_model_len /
						 * block_size int32 each) host to device */
	int64_t skinny_gemm_rows;		/* quantized GEMMs of at most this many
						 * rows run the engine's own skinny kernel
						 * (one launch; 0: none) */
	int64_t skinny_gemm_rows_base;		/* the same for unquantized GEMMs */
	int fp8_fast_accum;			/* the dense fp8 linear layers run in Hopper's
						 * fast-accumulation mode (gpu.h
						 * gpu_use_fp8_fast_accum) */
	int adp_moe_allgather;			/* attention DP: the MoE layers gather every
						 * rank's tokens and reduce-scatter the outputs
						 * (in place of the library all-to-all) */
	int adp_moe_sized;			/* that all-gather and reduce-scatter take
						 * each rank's token count: grouped
						 * broadcasts and reduces, one per rank */
	int moe_shared_aux_stream;		/* in a CUDA-graph step the MoE layer's
						 * shared experts run on a second stream
						 * beside the routed path (TensorRT-LLM
						 * maybe_execute_in_parallel) */
	int two_batch_overlap;			/* attention DP with an EP all-to-all:
						 * a step's MoE layers run as two half
						 * batches, one's dispatch and combine
						 * beside the other's compute (SGLang
						 * --enable-two-batch-overlap) */
	int64_t tbo_decode_delta_stages;	/* stages, the first half batch's
						 * head start under the decode
						 * strategy */
	int64_t tbo_prefill_delta_stages;	/* stages, the same under the
						 * prefill strategy */
	int moe_kernels;			/* enum engine_moe_kernels */
	int weight_only_moe_kernel;		/* enum engine_wo_moe: the kernel of experts
						 * whose weights alone are quantized */
	int weight_only_linear_kernel;		/* enum engine_wo_moe: the kernel of dense
						 * linear layers whose weights alone are
						 * quantized (marlin: vLLM's Marlin linear) */
	int fp8_block_moe_kernel;		/* enum engine_fp8_block_moe: block-scaled
						 * fp8 experts' kernel (not cutlass) */
	int triton_moe_configs;			/* 16-bit experts run vLLM's Triton
						 * fused_moe: a tuned tile where vLLM
						 * ships a config file for (E, N, GPU),
						 * else get_default_config's (the GPU's
						 * triton_moe_untuned and
						 * triton_moe_default_efficiency) */
	int dsa_kernel;				/* enum engine_dsa_kernel: DSA prompt
						 * tokens' attention */
	int mxfp4_moe_kernel;			/* enum engine_mxfp4_moe: MXFP4 experts'
						 * kernel where the GPU runs it */
	struct schema_int_list weight_only_moe_tile_m; /* elements, output-tile rows the
						 * weight-only MoE kernels add to the
						 * GPU's gemm_tile_m (empty: none) */
	int64_t weight_only_moe_tile_n;		/* elements, those tiles' columns */
	int weight_only_moe_tile_pick;		/* enum engine_wo_tile_pick: which of
						 * those tiles the kernel runs */
	int64_t sink_attn_block_m;		/* rows (query tokens x heads of one KV
						 * head) a program of the Triton unified
						 * attention kernel holds, which prompt
						 * tokens of a model with attention sinks
						 * run on an NVIDIA GPU outside
						 * sink_attn_native_cc; 0: never */
	struct schema_int_list sink_attn_native_cc; /* compute capabilities (major x
						 * 10 + minor) whose default attention
						 * backend takes sinks */
	int64_t mixed_attn_block_m;		/* query rows of one query head a
						 * program of the single varlen flash
						 * kernel holds when a step mixes prompt
						 * and decode tokens on a GPU in
						 * mixed_attn_unpacked_cc: each decode
						 * token's query heads then take a program
						 * each, reading their KV head's keys
						 * apiece; 0: never */
	struct schema_int_list mixed_attn_unpacked_cc; /* compute capabilities
						 * (major x 10 + minor) where that kernel
						 * does not pack a KV head's query heads */
	int64_t mxfp4_marlin_pad_ffn;		/* elements: MXFP4 experts under Marlin
						 * hold their per-rank intermediate size
						 * padded to a multiple of this; 0: none */
	int64_t mxfp4_marlin_pad_hidden;	/* elements: and their hidden size to a
						 * multiple of this; 0: none */
	int decode_kernel;			/* enum engine_decode_kernel */
	int prefill_kernel;			/* enum engine_prefill_kernel */
	int64_t decode_partition;		/* flash: keys per work unit of a fixed-
						 * partition decode kernel (every sequence
						 * in ceil(kv / this) units, a reduce
						 * kernel always); 0: split to fill */
	int vision_encoder;			/* enum engine_vision_encoder */
	double vision_encoder_B;		/* B per vision parameter as held */
	int estimate_logits;			/* enum engine_estimate_logits */
	int64_t moe_fused_sort_max;		/* cutlass: steps of at most this many tokens
						 * sort the rows in one kernel, larger ones
						 * in three */
	double eager_op_s;			/* s of host time per kernel launched outside a
						 * graph (the framework's op dispatch and launch) */
	int issue_serial;			/* the eager launches run on the thread of the
						 * host loop: under overlap scheduling they add
						 * to the step's host time (else they only bound
						 * the GPU's) */
	int64_t multi_step;			/* decode steps per scheduler call (vLLM V0
						 * num_scheduler_steps): their host work shared */
	double admit_watermark;			/* fraction of KV pages an admission must leave
						 * free (vLLM V0 watermark) */
	/* SGLang's admission estimate of the tokens running requests will still add */
	double new_token_ratio;			/* initial fraction of remaining output reserved */
	double min_new_token_ratio_factor;	/* floor = new_token_ratio x this */
	int64_t new_token_ratio_decay_steps;	/* steps from the initial ratio to the floor */
	double adp_schedule_conservativeness;	/* factor on new_token_ratio under
						 * attention DP (sglang) */
	/* TensorRT-LLM */
	int capacity;				/* enum engine_capacity */
	int adp_admit;				/* enum engine_adp_admit */
	int adp_balance;			/* attention_dp_config enable_balance: hold
						 * context requests until every rank has one */
	int64_t adp_timeout_iters;		/* ... for at most this many iterations */
	int64_t adp_batching_wait_iters;	/* then, with every rank generating, hold
						 * them this many more */
	int auto_size;				/* trtllm-bench: max seqs and tokens from KV
						 * capacity and the job's lengths */
	struct engine_auto_size auto_rule;	/* how auto_size rounds */
	double auto_size_fraction;		/* the KV fraction auto_size reads
						 * (trtllm-bench's CLI flag); 0:
						 * memory_fraction */
};

extern const struct schema engine_schema;

#endif
