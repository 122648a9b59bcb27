/*
 * spec_gpu_attn.c - the `attention` section of a GPU preset: the fused
 * (flash) attention kernels' efficiencies, the decode kernels' shapes and
 * fixed costs (the keys gpu_attention.c and gpu_attn_infer.c read).
 */
#include <stddef.h>

#include "spec_gpu.h"

const char *const gpu_trtllm_decode_names[] = {"none", "xqa", "trtllm_gen",
					       NULL};

static const struct schema_field attn_fields[] = {
	{ .key = "fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "forward: fraction of the clock-scaled peak (default "
		  "gemm_efficiency)" },
	{ .key = "bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "backward: fraction of the clock-scaled peak (default "
		  "gemm_efficiency)" },
	{ .key = "block_q", .type = ST_INT,
	  .offset = offsetof(struct gpu_attention_spec, block_q),
	  .min = 1, .max = 65536, .flags = SF_OPTIONAL,
	  .help = "sequence rows per work unit; absent = no occupancy model" },
	{ .key = "fwd_q_blocks", .type = ST_INT,
	  .offset = offsetof(struct gpu_attention_spec, fwd_q_blocks),
	  .min = 1, .max = 16, .flags = SF_OPTIONAL,
	  .help = "query blocks of block_q rows one forward work unit (thread "
		  "block) of the vendor kernel holds: each computes every key "
		  "block of the unit's range (default 1)" },
	{ .key = "fwd_q_blocks_max_head_dim", .type = ST_INT,
	  .offset = offsetof(struct gpu_attention_spec, fwd_q_blocks_max_head_dim),
	  .min = 1, .max = 4096, .flags = SF_OPTIONAL,
	  .help = "the largest query/key head dim whose forward kernel holds "
		  "fwd_q_blocks query blocks (wider heads: one; default any)" },
	{ .key = "flash2_fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, flash2_fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "FlashAttention-2 kernels (the flash-attn package), forward "
		  "(default fwd_efficiency: the same kernel)" },
	{ .key = "flash2_bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, flash2_bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "FlashAttention-2 kernels, backward (default bwd_efficiency)" },
	{ .key = "flash_triton_fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, flash_triton_fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "FlashAttention's pre-MLIR Triton kernel (llm-foundry attn_impl "
		  "triton), forward (default flash2_fwd_efficiency)" },
	{ .key = "flash_triton_bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, flash_triton_bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "the same, backward (default flash2_bwd_efficiency)" },
	{ .key = "sdpa_flash_fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, sdpa_flash_fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "PyTorch SDPA's flash backend (its vendored FlashAttention-2; "
		  "framework attention_kernel sdpa_flash), forward (default "
		  "flash2_fwd_efficiency)" },
	{ .key = "sdpa_flash_bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, sdpa_flash_bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "the same, backward (default flash2_bwd_efficiency)" },
	{ .key = "ck_tile_fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, ck_tile_fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "Composable Kernel's generic CK-tile fused attention (AMD; "
		  "framework attention_kernel ck_tile), forward (default "
		  "fwd_efficiency)" },
	{ .key = "ck_tile_bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, ck_tile_bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "the same, backward (default bwd_efficiency)" },
	{ .key = "ck_tile_bwd_masked_tile_cost", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, ck_tile_bwd_masked_tile_cost),
	  .min = 1, .max = 16, .flags = SF_OPTIONAL,
	  .help = "the CK-tile backward's causal-diagonal (masked) tile in its "
		  "unmasked tiles (default masked_tile_cost)" },
	{ .key = "masked_tile_cost", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, masked_tile_cost),
	  .def = "1", .min = 1, .max = 16,
	  .help = "time of a causal-diagonal (masked) tile in unmasked tiles" },
	{ .key = "exp_per_clock", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, exp_per_clock),
	  .min = 0, .max = 4096, .flags = SF_OPTIONAL | SF_MIN_EXCL,
	  .help = "exponentials the special-function units issue per clock "
		  "per SM/CU (softmax's exp, one per score); the share of a "
		  "tile they take at calib_head_dim does not shrink with the "
		  "head dim; absent = no such term" },
	{ .key = "calib_head_dim", .type = ST_INT,
	  .offset = offsetof(struct gpu_attention_spec, calib_head_dim),
	  .def = "128", .min = 1, .max = 1024,
	  .help = "head dim the attention efficiencies were measured at" },
	{ .key = "softmax_overlap", .type = ST_BOOL,
	  .offset = offsetof(struct gpu_attention_spec, softmax_overlap),
	  .def = "false",
	  .help = "the kernel's softmax warps run beside its asynchronous "
		  "matrix products: a pair takes the longer of the two "
		  "(exponentials at exp_per_clock, products scaled from "
		  "calib_head_dim), not their sum" },
	{ .key = "lowp_softmax_per_clock", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, lowp_softmax_per_clock),
	  .min = 0, .max = 4096, .flags = SF_OPTIONAL | SF_MIN_EXCL | SF_FIT,
	  .help = "scores per clock per SM/CU the FP8/MXFP8 kernel's softmax "
		  "sustains (the exp, and P scaled and converted to FP8); "
		  "under softmax_overlap a pair takes at least the slower of "
		  "this and exp_per_clock; absent = exp_per_clock alone" },
	{ .key = "fp8_bwd_skips_window", .type = ST_BOOL,
	  .offset = offsetof(struct gpu_attention_spec, fp8_bwd_skips_window),
	  .def = "true",
	  .help = "the vendor kernel's FP8 backward skips the key tiles "
		  "outside a sliding window as its bf16 one does; false: it "
		  "computes every tile of the causal triangle" },
	{ .key = "fwd_pads_v", .type = ST_BOOL,
	  .offset = offsetof(struct gpu_attention_spec, fwd_pads_v),
	  .def = "false",
	  .help = "the vendor kernel's forward computes a value head dim "
		  "narrower than the query/key head dim (MLA: 192 / 128) as "
		  "the query/key one, the padded columns' work included" },
	{ .key = "bwd_pads_v", .type = ST_BOOL,
	  .offset = offsetof(struct gpu_attention_spec, bwd_pads_v),
	  .def = "false",
	  .help = "the same, the backward" },
	{ .key = "fp8_bwd_keeps_v", .type = ST_BOOL,
	  .offset = offsetof(struct gpu_attention_spec, fp8_bwd_keeps_v),
	  .def = "false",
	  .help = "the vendor kernel's FP8 and MXFP8 backward computes a "
		  "narrower value head dim as it is even where bwd_pads_v "
		  "pads the bf16 one" },
	{ .key = "fp8_fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, fp8_fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "the vendor kernel in per-tensor FP8 (training.fp8_attention), "
		  "forward: fraction of the clock-scaled fp8 peak (needs "
		  "matrix_peak.fp8); absent = the bf16 kernel's rates" },
	{ .key = "fp8_bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, fp8_bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "the same, backward" },
	{ .key = "mxfp8_fwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, mxfp8_fwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "the vendor kernel in MXFP8 (block-scaled), forward: "
		  "fraction of the clock-scaled mxfp8 peak (needs "
		  "matrix_peak.mxfp8; default fp8_fwd_efficiency)" },
	{ .key = "mxfp8_bwd_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, mxfp8_bwd_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "the same, backward (default fp8_bwd_efficiency)" },
	{ .key = "trtllm_decode", .type = ST_ENUM,
	  .offset = offsetof(struct gpu_attention_spec, trtllm_decode),
	  .values = gpu_trtllm_decode_names, .def = "none",
	  .help = "TensorRT-LLM's decode attention kernel on this GPU, which "
		  "splits a sequence's keys by its own rule (engine "
		  "decode_kernel: trtllm): xqa (Hopper: XQA multi-block), "
		  "trtllm_gen (Blackwell: trtllm-gen FMHA multi-CTA KV) or "
		  "none (the generic rule)" },
	{ .key = "xqa_hmma_unit_time", .type = ST_TIME,
	  .offset = offsetof(struct gpu_attention_spec, xqa_hmma_unit_s),
	  .def = "0 us", .max = 1e-3, .flags = SF_OPTIONAL,
	  .help = "XQA's mma.sync kernel (16-bit KV): a unit's least time" },
	{ .key = "trtllm_ctx16_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, trtllm_ctx16_eff),
	  .min = 0, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "TensorRT-LLM's context FMHA in 16 bits (engine "
		  "prefill_kernel trtllm, a 16-bit KV cache and an unquantized "
		  "attention output): fraction of the clock-scaled bf16 peak "
		  "(0: fwd_efficiency, the flash kernel's)" },
	{ .key = "trtllm_mla_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, trtllm_mla_eff),
	  .min = 0, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "TensorRT-LLM's MLA generation kernel (absorbed MLA "
		  "decode, engine decode_kernel trtllm), 16-bit KV cache: "
		  "fraction of the clock-scaled bf16 peak (0: the flash "
		  "kernel's rates)" },
	{ .key = "trtllm_mla_fp8_efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_attention_spec, trtllm_mla_fp8_eff),
	  .min = 0, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "the same, FP8 KV cache: fraction of the clock-scaled "
		  "fp8 peak (0: the flash kernel's rates)" },
	{ .key = "trtllm_mla_unit_time", .type = ST_TIME,
	  .offset = offsetof(struct gpu_attention_spec, trtllm_mla_unit_s),
	  .def = "0 us", .max = 1e-3, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "that kernel's fixed time a sequence on one SM (its "
		  "query heads), the SMs sharing the sequences (with either "
		  "efficiency set)" },
	{ .key = "mma_rows", .type = ST_INT,
	  .offset = offsetof(struct gpu_attention_spec, mma_rows),
	  .def = "16", .min = 1, .max = 256,
	  .help = "query rows one matrix instruction computes; a decode "
		  "kernel pads its rows per KV head up to a multiple" },
};

const struct schema gpu_attention_schema = {
	.kind = "gpu.attention",
	.help = "fused (flash) attention kernels",
	.size = sizeof(struct gpu_attention_spec),
	.fields = attn_fields,
	.nfields = SCHEMA_COUNT(attn_fields),
};
