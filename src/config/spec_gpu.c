/*
 * spec_gpu.c - the GPU schema: keys, units, defaults, bounds, help.
 */
#include "spec_gpu.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "cnode.h"
#include "base/units.h"

static const char *const vendor_names[] = {"nvidia", "amd", NULL};

/* Every dtype with its key, for the per-dtype sections (X-macro). */
#define EACH_DTYPE(X)							\
	X(DTYPE_FP32, "fp32") X(DTYPE_TF32, "tf32")			\
	X(DTYPE_BF16, "bf16") X(DTYPE_FP16, "fp16")			\
	X(DTYPE_FP8, "fp8") X(DTYPE_MXFP8, "mxfp8")			\
	X(DTYPE_MXFP6, "mxfp6") X(DTYPE_MXFP4, "mxfp4")			\
	X(DTYPE_NVFP4, "nvfp4")

/* Rates have a floor far below any GPU's (a thousandth of a 2010 GPU's
 * FLOP rate, of an HBM stack's bandwidth): a step timed at a slower
 * one would outlast the engine's clock (units.h), and the value is a
 * typo anyway. */
#define MIN_FLOPS 1e9		/* 1 GFLOP/s */
#define MIN_MEM_BPS 1e9		/* 1 GB/s */

#define PEAK(dt, k) {						\
	.key = k, .type = ST_FLOPS,					\
	.offset = (dt) * sizeof(double),	/* within the section */	\
	.min = MIN_FLOPS, .flags = SF_OPTIONAL,				\
	.help = "dense " k " matrix peak; absent = not supported" },

static const struct schema_field peak_fields[] = { EACH_DTYPE(PEAK) };

static const struct schema peak_schema = {
	.kind = "gpu.matrix_peak",
	.help = "dense matrix peak per dtype, at matrix_clock",
	.size = sizeof(double) * DTYPE_COUNT,
	.fields = peak_fields,
	.nfields = SCHEMA_COUNT(peak_fields),
};

#define EFF(dt, k) {						\
	.key = k, .type = ST_NUM,					\
	.offset = (dt) * sizeof(double),	/* within the section */	\
	.min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,	\
	.help = "GEMM efficiency for " k "; absent = gemm_efficiency" },

static const struct schema_field eff_fields[] = { EACH_DTYPE(EFF) };

static const struct schema eff_schema = {
	.kind = "gpu.gemm_efficiency_dtype",
	.help = "fraction of the clock-scaled peak a large, well-shaped GEMM "
		"reaches, per dtype",
	.size = sizeof(double) * DTYPE_COUNT,
	.fields = eff_fields,
	.nfields = SCHEMA_COUNT(eff_fields),
};

#define MOETILE(dt, k) {						\
	.key = k, .type = ST_NUM,					\
	.offset = (dt) * sizeof(double),	/* within the section */	\
	.min = 1, .max = 65536, .flags = SF_OPTIONAL | SF_WHOLE,	\
	.help = "fewest tile rows at " k "; absent = any gemm_tile_m" },

static const struct schema_field moetile_fields[] = { EACH_DTYPE(MOETILE) };

static const struct schema moetile_schema = {
	.kind = "gpu.cutlass_moe_tile_m",
	.help = "fewest output-tile rows the CUTLASS fused-MoE grouped GEMM "
		"offers, per compute dtype",
	.size = sizeof(double) * DTYPE_COUNT,
	.fields = moetile_fields,
	.nfields = SCHEMA_COUNT(moetile_fields),
};

#define MOEROW(dt, k) {						\
	.key = k, .type = ST_TIME,					\
	.offset = (dt) * sizeof(double),	/* within the section */	\
	.def = "0 ns", .max = 1e-6, .flags = SF_FIT,			\
	.help = "time per row at " k " (the whole GPU); absent = 0" },

static const struct schema_field moerow_fields[] = { EACH_DTYPE(MOEROW) };

static const struct schema moerow_schema = {
	.kind = "gpu.cutlass_moe_row_time",
	.help = "per compute dtype, the whole GPU's time per row of the "
		"CUTLASS fused-MoE expand and activation kernels",
	.size = sizeof(double) * DTYPE_COUNT,
	.fields = moerow_fields,
	.nfields = SCHEMA_COUNT(moerow_fields),
};

const char *const gpu_wo_kernel_names[] = {"marlin", "triton_mx",
					   "triton_trtllm", NULL};

static const struct schema_field woeff_fields[] = {
	{ .key = "marlin", .type = ST_NUM,
	  .offset = GPU_WO_MARLIN * sizeof(double),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "vLLM's fused Marlin MoE (W4A16 / W8A16, mma.sync); absent "
		  "= not known: the bf16 GEMM rate" },
	{ .key = "triton_mx", .type = ST_NUM,
	  .offset = GPU_WO_TRITON_MX * sizeof(double),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "triton_kernels matmul_ogs with MXFP4 weights and bf16 "
		  "activations; absent = the GPU does not run it" },
	{ .key = "triton_trtllm", .type = ST_NUM,
	  .offset = GPU_WO_TRITON_TRTLLM * sizeof(double),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "TensorRT-LLM's TritonFusedMoE, MXFP4 x bf16; absent: none" },
};

static const struct schema woeff_schema = {
	.kind = "gpu.weight_only_moe_efficiency",
	.help = "per weight-only MoE kernel, the fraction of the clock-scaled "
		"bf16 peak its dequantizing mainloop reaches at large token "
		"counts",
	.size = sizeof(double) * GPU_WO_KERNELS,
	.fields = woeff_fields,
	.nfields = SCHEMA_COUNT(woeff_fields),
};

#define TILEBW(dt, k) {						\
	.key = k, .type = ST_BANDWIDTH,					\
	.offset = (dt) * sizeof(double),	/* within the section */	\
	.min = MIN_MEM_BPS, .flags = SF_OPTIONAL,			\
	.help = "B/s one output tile streams at " k "; absent = none" },

static const struct schema_field tilebw_fields[] = { EACH_DTYPE(TILEBW) };

static const struct schema tilebw_schema = {
	.kind = "gpu.gemm_tile_bandwidth",
	.help = "per compute dtype, the most B/s one output tile's CTA "
		"streams its operands at in the library's GEMM, which runs "
		"every tile over its whole k (no split-K)",
	.size = sizeof(double) * DTYPE_COUNT,
	.fields = tilebw_fields,
	.nfields = SCHEMA_COUNT(tilebw_fields),
};

static const struct schema_field mem_fields[] = {
	{ .key = "capacity", .type = ST_BYTES,
	  .offset = offsetof(struct gpu_mem_level, capacity_B),
	  .flags = SF_OPTIONAL, .help = "capacity; absent = level not present" },
	{ .key = "bandwidth", .type = ST_BANDWIDTH,
	  .offset = offsetof(struct gpu_mem_level, bandwidth_Bps),
	  .min = MIN_MEM_BPS, .flags = SF_OPTIONAL, .help = "peak bandwidth" },
	{ .key = "efficiency", .type = ST_NUM,
	  .offset = offsetof(struct gpu_mem_level, efficiency),
	  .def = "1", .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_FIT,
	  .help = "achievable fraction of peak bandwidth (measured streaming)" },
};

static const struct schema mem_schema = {
	.kind = "gpu.memory_level",
	.help = "one level of the memory hierarchy",
	.size = sizeof(struct gpu_mem_level),
	.fields = mem_fields,
	.nfields = SCHEMA_COUNT(mem_fields),
};

#define OFF(m) offsetof(struct gpu_spec, m)

static const struct schema_field gpu_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "vendor", .type = ST_ENUM, .offset = OFF(vendor),
	  .values = vendor_names, .flags = SF_REQUIRED,
	  .help = "who makes it; picks the default collective library" },
	{ .key = "arch", .type = ST_STRING, .offset = OFF(arch),
	  .flags = SF_OPTIONAL, .help = "architecture (sm90, gfx942): what "
	  "a framework's library choice may depend on "
	  "(elementwise.grouped_gemm_fwd_kernel_arch)" },
	{ .key = "compute_units", .type = ST_INT, .offset = OFF(compute_units),
	  .min = 1, .max = 100000, .flags = SF_REQUIRED,
	  .help = "compute units (AMD CUs) or streaming multiprocessors (NVIDIA SMs)" },
	{ .key = "max_clock", .type = ST_FREQ, .offset = OFF(max_clock_hz),
	  .min = 1e6, .max = 1e11, .flags = SF_REQUIRED,
	  .help = "boost / peak engine clock" },
	{ .key = "matrix_clock", .type = ST_FREQ, .offset = OFF(matrix_clock_hz),
	  .min = 1e6, .max = 1e11, .flags = SF_OPTIONAL,
	  .help = "clock the matrix peaks are quoted at (default max_clock)" },
	{ .key = "sustained_matrix_clock", .type = ST_FREQ,
	  .offset = OFF(sustained_matrix_clock_hz),
	  .min = 1e6, .max = 1e11, .flags = SF_OPTIONAL,
	  .help = "median clock under sustained GEMM load (default matrix_clock)" },
	{ .key = "burst_matrix_clock", .type = ST_FREQ,
	  .offset = OFF(burst_matrix_clock_hz),
	  .min = 1e6, .max = 1e11, .flags = SF_OPTIONAL,
	  .help = "the matrix clock while the board is below its power "
		  "limit, in sustained_matrix_clock's terms (a large GEMM's "
		  "time at the limit over its time below it, times "
		  "sustained_matrix_clock); with burst_gemm_power, "
		  "stream_power, idle_power and power_window it turns on the "
		  "power model (gpu_power.c); absent = GEMMs always run at "
		  "sustained_matrix_clock" },
	{ .key = "burst_gemm_power", .type = ST_NUM,
	  .offset = OFF(burst_gemm_power), .min = 1, .max = 10,
	  .flags = SF_OPTIONAL | SF_MIN_EXCL,
	  .help = "board power of back-to-back GEMMs at burst_matrix_clock, "
		  "as a fraction of the board's power limit" },
	{ .key = "stream_power", .type = ST_NUM, .offset = OFF(stream_power),
	  .min = 0, .max = 1, .flags = SF_OPTIONAL | SF_MIN_EXCL,
	  .help = "board power of HBM-bound kernels (copies, elementwise), "
		  "as a fraction of the board's power limit" },
	{ .key = "idle_power", .type = ST_NUM, .offset = OFF(idle_power),
	  .min = 0, .max = 1, .flags = SF_OPTIONAL | SF_MIN_EXCL,
	  .help = "board power of the idle GPU, as a fraction of its power "
		  "limit (at most stream_power)" },
	{ .key = "power_window", .type = ST_TIME, .offset = OFF(power_window_s),
	  .min = 1e-3, .max = 100, .flags = SF_OPTIONAL,
	  .help = "the window over which the power limiter averages the "
		  "board's power" },
	{ .key = "matrix_peak", .type = ST_SECTION, .offset = OFF(matrix_peak_flops),
	  .sub = &peak_schema, .flags = SF_REQUIRED,
	  .help = "dense matrix peak per dtype" },
	{ .key = "vector_fp32", .type = ST_FLOPS, .offset = OFF(vector_fp32_flops),
	  .min = MIN_FLOPS, .flags = SF_OPTIONAL,
	  .help = "vector (non-matrix) FP32 peak; absent = memory-bound "
		  "kernels ignore their FLOPs" },
	{ .key = "gemm_efficiency", .type = ST_NUM, .offset = OFF(gemm_efficiency),
	  .def = "1", .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_FIT,
	  .help = "fraction of the clock-scaled peak a large well-shaped GEMM reaches" },
	{ .key = "gemm_efficiency_dtype", .type = ST_SECTION,
	  .offset = OFF(gemm_efficiency_dtype), .sub = &eff_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per-dtype GEMM efficiency (overrides gemm_efficiency)" },
	{ .key = "gemm_tile_m", .type = ST_INT_LIST, .offset = OFF(gemm_tile_m),
	  .min = 1, .max = 65536, .flags = SF_OPTIONAL,
	  .help = "output-tile rows of the GEMM kernels, paired with "
		  "gemm_tile_n; absent = no tile or wave model" },
	{ .key = "gemm_tile_n", .type = ST_INT_LIST, .offset = OFF(gemm_tile_n),
	  .min = 1, .max = 65536, .flags = SF_OPTIONAL,
	  .help = "output-tile columns of the GEMM kernels, one per "
		  "gemm_tile_m entry" },
	{ .key = "gemm_tile_overhead", .type = ST_TIME,
	  .offset = OFF(gemm_tile_overhead_s), .def = "0 us", .max = 1e-3,
	  .flags = SF_FIT,
	  .help = "per wave of tiles: pipeline fill and epilogue sync" },
	{ .key = "gemm_kernel_overhead", .type = ST_TIME,
	  .offset = OFF(gemm_kernel_overhead_s), .def = "0 us", .max = 1e-3,
	  .flags = SF_FIT,
	  .help = "per GEMM kernel, once: a persistent kernel's set-up "
		  "and drain (tile data only)" },
	{ .key = "gemm_accumulator_stages", .type = ST_INT,
	  .offset = OFF(gemm_accumulator_stages), .def = "1", .min = 1,
	  .max = 2,
	  .help = "accumulator buffers per SM of the persistent GEMM "
		  "kernels: 1 (each tile's epilogue after its mainloop) or 2 "
		  "(a tile's epilogue overlaps the next tile's mainloop; "
		  "tile data only)" },
	{ .key = "gemm_split_k_kernels", .type = ST_INT,
	  .offset = OFF(gemm_split_k_kernels), .def = "1", .min = 1, .max = 2,
	  .help = "kernels a GEMM the tile model splits along k launches: 1 "
		  "(the slices are summed in the kernel) or 2 (the library "
		  "sums them in a second kernel; tile data only)" },
	{ .key = "gemm_persistent_owned_tiles", .type = ST_NUM,
	  .offset = OFF(gemm_persistent_owned_tiles), .def = "0", .min = 0,
	  .max = 64,
	  .help = "output tiles each CTA of the persistent GEMM kernels runs "
		  "before taking tiles from a shared queue: beside a "
		  "collective holding a share S of the units a GEMM of n "
		  "tiles a CTA takes 1/(1-S) + min(c,n)/n (2 - 1/(1-S)) of "
		  "its time; 0 = not modelled (1/(1-S)); tile data only" },
	{ .key = "fp8_gemm_any_layout", .type = ST_BOOL,
	  .offset = OFF(fp8_gemm_any_layout), .def = "false",
	  .help = "per-tensor scaled FP8 GEMMs take non-TN operand layouts "
		  "(Transformer Engine's nvte_is_non_tn_fp8_gemm_supported): "
		  "a delayed- or current-scaling FP8 cast writes one layout, "
		  "no transposed copy; false: both" },
	{ .key = "gemm_tile_bandwidth", .type = ST_SECTION,
	  .offset = OFF(gemm_tile_Bps), .sub = &tilebw_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per compute dtype, the most B/s one output tile's CTA "
		  "streams its A and B panels at in the library's dense and "
		  "grouped GEMMs at that dtype, which run every tile over its "
		  "whole k (a persistent kernel, no split-K): a wave of a "
		  "tiles loads at min(bandwidth, a x this); absent: k may be "
		  "split, no per-tile bound" },
	{ .key = "cutlass_moe_tile_m", .type = ST_SECTION,
	  .offset = OFF(cutlass_moe_tile_m), .sub = &moetile_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per compute dtype, the fewest output-tile rows of the "
		  "CUTLASS fused-MoE grouped GEMM (engine moe_kernels: "
		  "cutlass): smaller gemm_tile_m entries are not used there" },
	{ .key = "cutlass_moe_row_time", .type = ST_SECTION,
	  .offset = OFF(cutlass_moe_row_time_s), .sub = &moerow_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per compute dtype, the least time per row (the whole "
		  "GPU) of the CUTLASS fused MoE's expand and activation "
		  "kernels (engine moe_kernels: cutlass), which search each "
		  "row's expert: time = max(bytes / bandwidth, rows x this)" },
	{ .key = "weight_only_moe_efficiency", .type = ST_SECTION,
	  .offset = OFF(weight_only_moe_eff), .sub = &woeff_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per weight-only quantized MoE kernel (engine "
		  "weight_only_moe_kernel, mxfp4_moe_kernel), the fraction of "
		  "the clock-scaled bf16 matrix peak its grouped GEMMs reach "
		  "in compute-bound tiles: the mainloop dequantizes every "
		  "weight it loads (absent: the bf16 GEMM efficiency)" },
	{ .key = "weight_only_linear_efficiency", .type = ST_NUM,
	  .offset = OFF(weight_only_linear_eff),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL,
	  .help = "the fraction of the clock-scaled bf16 matrix peak that "
		  "the engine's weight-only dense GEMM kernel (engine "
		  "weight_only_linear_kernel marlin: vLLM's Marlin linear, "
		  "FP8 weights on a GPU without FP8 MMAs) reaches past a few "
		  "rows; its striped partition fills the SMs, so no tile "
		  "waves (absent: the bf16 GEMM's tiles and efficiency)" },
	{ .key = "attention", .type = ST_SECTION, .offset = OFF(attention),
	  .sub = &gpu_attention_schema, .flags = SF_OPTIONAL,
	  .help = "fused attention efficiency and work-unit size" },
	{ .key = "hbm", .type = ST_SECTION, .offset = OFF(hbm), .sub = &mem_schema,
	  .flags = SF_REQUIRED, .help = "device memory (HBM)" },
	{ .key = "hbm_usable", .type = ST_BYTES, .offset = OFF(hbm_usable_B),
	  .flags = SF_OPTIONAL,
	  .help = "memory usable by a job (default: hbm.capacity)" },
	{ .key = "llc", .type = ST_SECTION, .offset = OFF(llc), .sub = &mem_schema,
	  .flags = SF_OPTIONAL, .help = "last-level cache (AMD Infinity Cache)" },
	{ .key = "l2", .type = ST_SECTION, .offset = OFF(l2), .sub = &mem_schema,
	  .flags = SF_OPTIONAL,
	  .help = "L2 cache (the capacity one kernel can reuse: per XCD on AMD)" },
	{ .key = "lds_per_cu", .type = ST_BYTES, .offset = OFF(lds_per_cu_B),
	  .flags = SF_OPTIONAL, .help = "LDS / shared memory per CU or SM" },
	{ .key = "chunk_fwd_efficiency", .type = ST_NUM,
	  .offset = OFF(chunk_fwd_efficiency), .min = SCHEMA_EFF_MIN, .max = 1,
	  .flags = SF_OPTIONAL,
	  .help = "fraction of the clock-scaled bf16 peak the Triton chunked "
		  "linear-recurrence kernels (Mamba-2 SSD, flash-linear-"
		  "attention chunk_*) reach in forward, counted in the FLOPs "
		  "of their per-chunk products (default: not measured, the "
		  "GEMM model's rate)" },
	{ .key = "chunk_bwd_efficiency", .type = ST_NUM,
	  .offset = OFF(chunk_bwd_efficiency), .min = SCHEMA_EFF_MIN, .max = 1,
	  .flags = SF_OPTIONAL,
	  .help = "the same for their backward kernels (default "
		  "chunk_fwd_efficiency)" },
	{ .key = "multi_tensor_efficiency", .type = ST_NUM,
	  .offset = OFF(multi_tensor_efficiency), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the streaming bandwidth the multi_tensor_apply "
		  "kernels of fused optimizers reach (chunks of 65536 elements, "
		  "at most 320 blocks a launch)" },
	{ .key = "expert_bwd_efficiency", .type = ST_NUM,
	  .offset = OFF(expert_bwd_efficiency), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the modelled time's rate the per-expert BLAS "
		  "kernels of a multi-stream grouped GEMM's backward (dgrad "
		  "and wgrad; framework grouped_gemm_streams > 0) reach" },
	{ .key = "mx_cast_efficiency", .type = ST_NUM,
	  .offset = OFF(mx_cast_efficiency), .def = "1", .min = SCHEMA_EFF_MIN,
	  .max = 1,
	  .help = "fraction of the streaming bandwidth an MXFP8 quantize "
		  "kernel reaches when it writes the column-wise layout "
		  "(both layouts, or that one alone; a row-wise-only cast "
		  "streams)" },
	{ .key = "nvfp4_cast_efficiency", .type = ST_NUM,
	  .offset = OFF(nvfp4_cast_efficiency), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the streaming bandwidth Transformer "
		  "Engine's NVFP4 quantization of a training GEMM operand "
		  "reaches (its amax and its cast writing both layouts, "
		  "taken together)" },
	{ .key = "fp8_cast_transpose_efficiency", .type = ST_NUM,
	  .offset = OFF(fp8_cast_transpose_efficiency), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the streaming bandwidth a per-tensor FP8 "
		  "cast writing both layouts (Transformer Engine's "
		  "cast_transpose: the data and its transpose) reaches; a "
		  "cast writing one layout streams" },
	{ .key = "fp8_fast_accum_efficiency", .type = ST_NUM,
	  .offset = OFF(fp8_fast_accum_efficiency),
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "fraction of the clock-scaled fp8 peak a large, well-shaped "
		  "fp8 GEMM reaches in Hopper's fast-accumulation mode (partial "
		  "sums kept in the tensor core's accumulator, never promoted "
		  "to fp32: cuBLASLt CUBLASLT_MATMUL_DESC_FAST_ACCUM 1, CUTLASS "
		  "FP8FastAccum kernels); gemm_efficiency_dtype's fp8 is then "
		  "the promoted (split-accumulator) mode's; absent = one mode" },
	{ .key = "fp8_block_gemm_rate", .type = ST_NUM,
	  .offset = OFF(fp8_block_gemm_rate), .def = "1", .min = SCHEMA_EFF_MIN,
	  .max = 1,
	  .help = "fraction of the fp8 GEMM math rate a GEMM on block-scaled "
		  "fp8 operands (training.fp8_scaling block: 1x128 and "
		  "128x128 scales, each 128-deep k block's partial sums "
		  "rescaled in fp32) reaches" },
	{ .key = "cutlass_moe_fp8_block_rate", .type = ST_NUM,
	  .offset = OFF(cutlass_moe_fp8_block_rate), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the fp8 GEMM math rate the CUTLASS fused "
		  "MoE's grouped GEMMs (engine moe_kernels: cutlass) reach on "
		  "block-scaled fp8 experts (a DeepSeek checkpoint's 128 x "
		  "128 scales) against per-tensor fp8 ones" },
	{ .key = "triton_moe_fp8_block_rate", .type = ST_NUM,
	  .offset = OFF(triton_moe_fp8_block_rate), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the fp8 GEMM math rate vLLM's Triton fused "
		  "MoE (engine fp8_block_moe_kernel: triton) reaches on "
		  "block-scaled fp8 experts (128 x 128 weight scales, 1 x 128 "
		  "activation groups)" },
	{ .key = "triton_moe_default_efficiency", .type = ST_NUM,
	  .offset = OFF(triton_moe_default_eff), .def = "0",
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_ZERO_OFF,
	  .help = "fraction of the clock-scaled 16-bit peak vLLM's Triton "
		  "fused MoE (engine triton_moe_configs) reaches on 16-bit "
		  "experts whose (E, N) this GPU lists in triton_moe_untuned "
		  "(no tuned config file: get_default_config's tile); 0 = "
		  "the GPU's GEMM rate" },
	{ .key = "triton_moe_untuned", .type = ST_INT_LIST,
	  .offset = OFF(triton_moe_untuned), .min = 1, .max = 1e7,
	  .flags = SF_OPTIONAL,
	  .help = "(E, N) pairs, flat [E1, N1, E2, N2, ...]: 16-bit expert "
		  "shapes (E local experts, N intermediate size a GPU) for "
		  "which vLLM ships no fused_moe config file "
		  "(E=..,N=..,device_name=...json) for this GPU" },
	{ .key = "triton_moe_fp8_block_tuned", .type = ST_INT_LIST,
	  .offset = OFF(triton_moe_fp8_block_tuned), .min = 1, .max = 1e7,
	  .flags = SF_OPTIONAL,
	  .help = "8-tuples, flat [E, N, M_lo, M_hi, BLOCK_SIZE_M, "
		  "BLOCK_SIZE_N, BLOCK_SIZE_K, num_stages, ...]: vLLM's tuned "
		  "fused_moe config file for block-scaled fp8 experts of that "
		  "shape (E local experts, N intermediate size a GPU) on this "
		  "GPU runs that tile from M_lo to M_hi tokens a step (by the "
		  "file's nearest key); the engine's Triton kernel "
		  "(fp8_block_moe_kernel triton, triton_moe_configs) then runs "
		  "it with as many CTAs an SM as lds_per_cu holds of its "
		  "stages" },
	{ .key = "triton_moe_tile_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(triton_moe_tile_Bps), .min = MIN_MEM_BPS,
	  .flags = SF_OPTIONAL,
	  .help = "bytes per second one CTA of a triton_moe_fp8_block_tuned "
		  "tile loads at most (its K loop latency-bound); a wave of a "
		  "CTAs loads at min(the memory's bandwidth, a x this)" },
	{ .key = "flashmla_sparse_heads", .type = ST_NUM,
	  .offset = OFF(flashmla_sparse_heads), .def = "0", .min = 0,
	  .max = 1024, .flags = SF_WHOLE,
	  .help = "query heads FlashMLA's sparse prefill kernel computes a "
		  "multiple of (engine dsa_kernel: flashmla_sparse pads a "
		  "rank's heads up to it); 0: the heads as they are" },
	{ .key = "flashmla_sparse_efficiency", .type = ST_NUM,
	  .offset = OFF(flashmla_sparse_efficiency), .def = "0",
	  .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_ZERO_OFF,
	  .help = "fraction of the bf16 matrix rate FlashMLA's sparse "
		  "prefill kernel reaches over the key slots it computes "
		  "(every query all index_topk of them); 0: the flash "
		  "forward's rate (attention.fwd_efficiency)" },
	{ .key = "strided_efficiency", .type = ST_NUM,
	  .offset = OFF(strided_efficiency), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of the streaming bandwidth PyTorch's generic "
		  "elementwise path (non-contiguous views: per-element offset "
		  "arithmetic, no vector loads) reaches" },
	{ .key = "strided_sm_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(strided_sm_Bps), .min = MIN_MEM_BPS,
	  .flags = SF_OPTIONAL,
	  .help = "bytes per second per SM (CU) that the same generic path "
		  "reaches when its loads in flight, not the memory, bound "
		  "it; times compute_units, capped at the level's bandwidth "
		  "(replaces strided_efficiency when set)" },
	{ .key = "l1_hit_latency", .type = ST_NUM,
	  .offset = OFF(l1_hit_cycles), .min = 1, .max = 1e4,
	  .flags = SF_OPTIONAL,
	  .help = "SM clock cycles of a global load that hits L1 when the "
		  "next load waits for it (a pointer chase; at max_clock): "
		  "the step of latency-bound loops (absent: not modelled)" },
	{ .key = "l2_hit_latency", .type = ST_NUM,
	  .offset = OFF(l2_hit_cycles), .min = 1, .max = 1e4,
	  .flags = SF_OPTIONAL,
	  .help = "SM clock cycles of such a load that misses L1 and hits "
		  "L2 (absent: not modelled)" },
	{ .key = "scatter_add_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(scatter_add_Bps), .min = MIN_MEM_BPS,
	  .flags = SF_OPTIONAL,
	  .help = "bytes per second of source elements an atomic scatter-add "
		  "(PyTorch's index_add_ and scatter_add_: one atomic add an "
		  "element, several source rows into each output row) adds "
		  "into its output (absent: those bytes stream)" },
	{ .key = "ssm_update_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(ssm_update_Bps), .min = MIN_MEM_BPS,
	  .flags = SF_OPTIONAL,
	  .help = "bytes per second of recurrent state that Mamba-2's decode "
		  "state update (mamba_ssm's Triton selective_state_update at "
		  "its default launch configuration) reads and writes "
		  "(absent: those bytes stream)" },
	{ .key = "kernel_launch", .type = ST_TIME, .offset = OFF(kernel_launch_s),
	  .def = "0 us", .max = 1e-3, .flags = SF_FIT,
	  .help = "per-kernel launch overhead" },
	{ .key = "p2p_channel_send", .type = ST_BANDWIDTH,
	  .offset = OFF(p2p_channel_send_Bps), .min = MIN_MEM_BPS,
	  .max = 1e12, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "bytes per second one channel (thread block) of the "
		  "collective library's point-to-point kernel sends at: its "
		  "send warps copying each step into the peer's FIFO over "
		  "the GPU's links (NCCL's p2p Simple all-to-all within a "
		  "node); absent = the links alone bound a send" },
	{ .key = "p2p_launch", .type = ST_TIME, .offset = OFF(p2p_launch_s),
	  .max = 1e-3, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "the fixed cost of the collective library's point-to-point "
		  "kernel on this GPU (a group of sends and receives, an "
		  "all-to-all: its launch and set-up before the first step), "
		  "in place of the library's p2p base as it runs; the "
		  "library's own choices keep its base; absent = the "
		  "library's base" },
	{ .key = "p2p_peer", .type = ST_TIME, .offset = OFF(p2p_peer_s),
	  .max = 1e-4, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "what each peer beyond the first adds to the fixed cost "
		  "of the collective library's point-to-point kernel on this "
		  "GPU (an all-to-all over p ranks: p - 2 more); absent = "
		  "nothing" },
	{ .key = "p2p_gpu_send", .type = ST_BANDWIDTH,
	  .offset = OFF(p2p_gpu_send_Bps), .min = MIN_MEM_BPS,
	  .max = 1e13, .flags = SF_OPTIONAL | SF_FIT,
	  .help = "bytes per second all of one GPU's point-to-point "
		  "channels send together to the other GPUs of its node "
		  "(NCCL's p2p Simple all-to-all: every peer's sends at "
		  "once); a send to one peer runs at most its share of it; "
		  "absent = the channels and links alone bound the sends" },
	{ .key = "kernel_launch_graph", .type = ST_TIME,
	  .offset = OFF(kernel_launch_graph_s), .flags = SF_OPTIONAL, .max = 1e-3,
	  .help = "per-kernel overhead when replayed from a captured CUDA/HIP "
		  "graph (default: kernel_launch)" },
	{ .key = "collective_launch", .type = ST_TIME,
	  .offset = OFF(collective_launch_s), .def = "0 us", .min = 1e-7,
	  .max = 1e-4, .flags = SF_FIT | SF_ZERO_OFF,
	  .help = "fixed time a collective library's ring or tree LL kernel "
		  "takes on this GPU before its first step (launch, first "
		  "flag exchange): what it runs at where the library's "
		  "gpu_floor is on, in place of its base (its tuner keeps "
		  "the base); 0 = the library's base" },
	{ .key = "fitted_clock", .type = ST_SECTION,
	  .offset = OFF(fitted_clock), .sub = &gpu_fitted_clock_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per key fitted on op tables, the clock they ran at "
		  "(spec_gpu_clock.c)" },
	{ .key = "collective_ll_step", .type = ST_TIME,
	  .offset = OFF(collective_ll_step_s), .def = "0 us", .min = 1e-8,
	  .max = 1e-4, .flags = SF_FIT | SF_ZERO_OFF,
	  .help = "time of one ring (or tree chain) LL step between two GPUs "
		  "of the scale-up fabric (an 8 B data+flag store to the peer "
		  "and the peer's poll), in place of the library's "
		  "hop_scale_up where its gpu_floor is on; 0 = the library's "
		  "hop" },
	{ .key = "collective_ll_channel", .type = ST_BANDWIDTH,
	  .offset = OFF(collective_ll_channel_Bps), .def = "0 B/s",
	  .min = 1e8, .max = 1e12, .flags = SF_FIT | SF_ZERO_OFF,
	  .help = "data rate one ring LL channel (thread block) of a "
		  "collective library moves in each of its primitive calls "
		  "(send, receive-and-forward, final receive) on this GPU, "
		  "inside one node: the ring's bus bandwidth is then at most "
		  "channels x this x steps / (steps + 1), in place of the "
		  "library's channel_busbw and LL caps, where its gpu_floor "
		  "is on; 0 = those" },
};

static void fill_defaults(struct gpu_spec *g)
{
	int dt;

	if (g->matrix_clock_hz == 0)
		g->matrix_clock_hz = g->max_clock_hz;
	if (g->sustained_matrix_clock_hz == 0)
		g->sustained_matrix_clock_hz = g->matrix_clock_hz;
	if (g->hbm_usable_B == 0)
		g->hbm_usable_B = g->hbm.capacity_B;
	for (dt = 0; dt < DTYPE_COUNT; dt++)
		if (g->gemm_efficiency_dtype[dt] == 0)
			g->gemm_efficiency_dtype[dt] = g->gemm_efficiency;
	if (g->attention.fwd_efficiency == 0)
		g->attention.fwd_efficiency = g->gemm_efficiency;
	if (g->attention.bwd_efficiency == 0)
		g->attention.bwd_efficiency = g->gemm_efficiency;
	if (g->kernel_launch_graph_s == 0)
		g->kernel_launch_graph_s = g->kernel_launch_s;
	if (g->chunk_bwd_efficiency == 0)
		g->chunk_bwd_efficiency = g->chunk_fwd_efficiency;
	if (g->attention.flash2_fwd_efficiency == 0)
		g->attention.flash2_fwd_efficiency = g->attention.fwd_efficiency;
	if (g->attention.flash2_bwd_efficiency == 0)
		g->attention.flash2_bwd_efficiency = g->attention.bwd_efficiency;
	if (g->attention.flash_triton_fwd_efficiency == 0)
		g->attention.flash_triton_fwd_efficiency =
			g->attention.flash2_fwd_efficiency;
	if (g->attention.flash_triton_bwd_efficiency == 0)
		g->attention.flash_triton_bwd_efficiency =
			g->attention.flash2_bwd_efficiency;
	if (g->attention.sdpa_flash_fwd_efficiency == 0)
		g->attention.sdpa_flash_fwd_efficiency =
			g->attention.flash2_fwd_efficiency;
	if (g->attention.sdpa_flash_bwd_efficiency == 0)
		g->attention.sdpa_flash_bwd_efficiency =
			g->attention.flash2_bwd_efficiency;
	if (g->attention.ck_tile_fwd_efficiency == 0)
		g->attention.ck_tile_fwd_efficiency = g->attention.fwd_efficiency;
	if (g->attention.ck_tile_bwd_efficiency == 0)
		g->attention.ck_tile_bwd_efficiency = g->attention.bwd_efficiency;
	if (g->attention.ck_tile_bwd_masked_tile_cost == 0)
		g->attention.ck_tile_bwd_masked_tile_cost =
			g->attention.masked_tile_cost;
	if (g->matrix_peak_flops[DTYPE_MXFP8] > 0 &&
	    g->attention.mxfp8_fwd_efficiency == 0)
		g->attention.mxfp8_fwd_efficiency =
			g->attention.fp8_fwd_efficiency;
	if (g->matrix_peak_flops[DTYPE_MXFP8] > 0 &&
	    g->attention.mxfp8_bwd_efficiency == 0)
		g->attention.mxfp8_bwd_efficiency =
			g->attention.fp8_bwd_efficiency;
}

/* An FP8/MXFP8 attention efficiency is a fraction of that dtype's peak:
 * the GPU gives the peak. */
static int check_lowp_attention(const struct gpu_spec *g,
				const struct schema_at *at, struct diag *d)
{
	static const struct {
		const char *key;
		size_t off;
		int dt;
	} tab[] = {
		{"attention.fp8_fwd_efficiency",
		 offsetof(struct gpu_attention_spec, fp8_fwd_efficiency), DTYPE_FP8},
		{"attention.fp8_bwd_efficiency",
		 offsetof(struct gpu_attention_spec, fp8_bwd_efficiency), DTYPE_FP8},
		{"attention.mxfp8_fwd_efficiency",
		 offsetof(struct gpu_attention_spec, mxfp8_fwd_efficiency), DTYPE_MXFP8},
		{"attention.mxfp8_bwd_efficiency",
		 offsetof(struct gpu_attention_spec, mxfp8_bwd_efficiency), DTYPE_MXFP8},
	};
	const char *base = (const char *)&g->attention;
	size_t i;
	int rc = 0;
	double v;

	for (i = 0; i < sizeof(tab) / sizeof(tab[0]); i++) {
		memcpy(&v, base + tab[i].off, sizeof(v));
		if (v > 0 && !(g->matrix_peak_flops[tab[i].dt] > 0)) {
			schema_check_error(d, at, tab[i].key, "is a fraction "
					   "of the %s peak, but 'matrix_peak' "
					   "gives no %s", dtype_names[tab[i].dt],
					   dtype_names[tab[i].dt]);
			rc = -1;
		}
	}
	return rc;
}

/* attention.softmax_overlap compares the products with the exponentials:
 * it needs their rate. */
static int check_softmax_overlap(const struct gpu_spec *g,
				 const struct schema_at *at, struct diag *d)
{
	if (g->attention.lowp_softmax_per_clock > 0 &&
	    !g->attention.softmax_overlap) {
		schema_check_error(d, at, "attention.lowp_softmax_per_clock",
				   "is a bound under softmax_overlap, but "
				   "'attention.softmax_overlap' is false; "
				   "expected softmax_overlap true or no "
				   "lowp_softmax_per_clock");
		return -1;
	}
	if (!g->attention.softmax_overlap || g->attention.exp_per_clock > 0)
		return 0;
	schema_check_error(d, at, "attention.softmax_overlap", "compares the "
			   "matrix products with the softmax's exponentials, "
			   "but 'attention.exp_per_clock' gives no rate; "
			   "expected it such as 'exp_per_clock: 16' or "
			   "softmax_overlap false");
	return -1;
}

/* fwd_q_blocks groups query blocks of block_q rows: without block_q there
 * are no units and the key would be silently ignored. */
static int check_q_blocks(const struct gpu_spec *g,
			  const struct schema_at *at, struct diag *d)
{
	if (g->attention.fwd_q_blocks <= 1 || g->attention.block_q > 0)
		return 0;
	schema_check_error(d, at, "attention.fwd_q_blocks", "groups query "
			   "blocks of 'attention.block_q' rows, but block_q is "
			   "absent (no unit model); expected block_q such as "
			   "'block_q: 128' or no fwd_q_blocks");
	return -1;
}

static int check_peaks(const struct gpu_spec *g, const struct schema_at *at,
		       struct diag *d)
{
	int dt;

	for (dt = 0; dt < DTYPE_COUNT; dt++)
		if (g->matrix_peak_flops[dt] > 0)
			return 0;
	schema_check_error(d, at, "matrix_peak", "expected at least one dtype "
			   "such as 'bf16: 989 TFLOP/s', got none");
	return -1;
}

/* cutlass_moe_tile_m leaves at least one tile of the list. */
static int check_moe_tiles(const struct gpu_spec *g,
			   const struct schema_at *at, struct diag *d)
{
	double most = 0;
	size_t i;
	int dt;

	for (i = 0; i < g->gemm_tile_m.n; i++)
		if ((double)g->gemm_tile_m.v[i] > most)
			most = (double)g->gemm_tile_m.v[i];
	for (dt = 0; dt < DTYPE_COUNT; dt++) {
		if (g->cutlass_moe_tile_m[dt] <= most)
			continue;
		if (g->gemm_tile_m.n == 0)	/* nothing to pick from */
			schema_check_error(d, at, "cutlass_moe_tile_m",
					   "needs the tile list gemm_tile_m/"
					   "gemm_tile_n (it picks among its "
					   "tiles), which this GPU does not "
					   "give");
		else
			schema_check_error(d, at, "cutlass_moe_tile_m",
					   "expected at most the largest "
					   "gemm_tile_m (%g) at %s, got %g",
					   most, dtype_names[dt],
					   g->cutlass_moe_tile_m[dt]);
		return -1;
	}
	return 0;
}

/* arch spelled as gpu_arch_vendor takes it, of the GPU's vendor. */
static int check_arch(const struct gpu_spec *g, const struct schema_at *at,
		      struct diag *d)
{
	int v = gpu_arch_vendor(g->arch);

	if (!g->arch || v == (int)g->vendor)
		return 0;
	if (v < 0)
		schema_check_error(d, at, "arch", "expected sm and the compute "
				   "capability's digits (NVIDIA: sm90, sm100) "
				   "or gfx and hex digits (AMD: gfx942; an AMD "
				   "CPU core: zen5), got '%s'", g->arch);
	else
		schema_check_error(d, at, "arch", "'%s' is an %s architecture, "
				   "but vendor is %s", g->arch,
				   v == GPU_AMD ? "AMD" : "NVIDIA",
				   vendor_names[g->vendor]);
	return -1;
}

static int check_tiles(const struct gpu_spec *g, const struct schema_at *at,
		       struct diag *d)
{
	static const char *const keys[] = {"gemm_tile_m", "gemm_tile_n"};
	int k;

	/* Each size's bounds are the list fields' own (schema.c checks every
	 * item where it is written); here only the pairing. */
	if (g->gemm_tile_m.n == g->gemm_tile_n.n)
		return check_moe_tiles(g, at, d);
	k = schema_check_blame(at, keys, 2);
	schema_check_error(d, at, keys[k], "expected as many tiles as '%s' "
			   "(one tile per pair), got %zu and %zu",
			   keys[1 - k], k ? g->gemm_tile_n.n : g->gemm_tile_m.n,
			   k ? g->gemm_tile_m.n : g->gemm_tile_n.n);
	return -1;
}

/* "'a' (V)" for messages: the full path of key and the value v. */
static const char *other(const struct schema_at *at, const char *key,
			 double v, enum unit_kind u, char *buf, size_t len)
{
	char path[200], val[64];

	schema_check_path(at, key, path, sizeof(path));
	units_format(val, sizeof(val), v, u);
	snprintf(buf, len, "'%s' (%s)", path, val);
	return buf;
}

/* lo <= hi, keys lo_key and hi_key: report at the one the user changed. */
static int check_order(const struct schema_at *at, struct diag *d,
		       const char *lo_key, double lo, const char *hi_key,
		       double hi, enum unit_kind u)
{
	const char *const keys[] = {lo_key, hi_key};
	char ref[300], got[64];

	if (lo <= hi)
		return 0;
	if (schema_check_blame(at, keys, 2) == 0) {
		other(at, hi_key, hi, u, ref, sizeof(ref));
		schema_check_error(d, at, lo_key, "expected at most %s, got %s",
				   ref, units_format(got, sizeof(got), lo, u));
	} else {
		other(at, lo_key, lo, u, ref, sizeof(ref));
		schema_check_error(d, at, hi_key, "expected at least %s, got %s",
				   ref, units_format(got, sizeof(got), hi, u));
	}
	return -1;
}

static int check_levels(const struct gpu_spec *g, const struct schema_at *at,
			struct diag *d)
{
	int rc = 0;

	/* A present bandwidth is at least MIN_MEM_BPS (the field's bound):
	 * 0 here means absent. */
	if (g->hbm.capacity_B <= 0 || g->hbm.bandwidth_Bps <= 0) {
		schema_check_error(d, at, "hbm", "expected both 'capacity' "
				   "(such as '80 GB') and 'bandwidth' (such as "
				   "'3.35 TB/s')");
		rc = -1;
	}
	if (g->llc.capacity_B > 0 && g->llc.bandwidth_Bps <= 0) {
		schema_check_error(d, at, "llc.bandwidth", "expected a "
				   "bandwidth such as '17.2 TB/s' when "
				   "'llc.capacity' is given");
		rc = -1;
	}
	if (g->l2.capacity_B > 0 && g->l2.bandwidth_Bps <= 0) {
		schema_check_error(d, at, "l2.bandwidth", "expected a "
				   "bandwidth such as '7 TB/s' when "
				   "'l2.capacity' is given");
		rc = -1;
	}
	if (check_order(at, d, "hbm_usable", g->hbm_usable_B, "hbm.capacity",
			g->hbm.capacity_B, UNIT_BYTES) != 0)
		rc = -1;
	return rc;
}

/* The power model's keys (gpu_power.c) come together (the two powers
 * are above 0: 0 is absent), the burst clock lies between the sustained
 * clock and max_clock, and the idle board draws at most what HBM-bound
 * kernels draw. */
static int check_power(const struct gpu_spec *g, const struct schema_at *at,
		       struct diag *d)
{
	static const char *const keys[] = {"burst_matrix_clock",
		"burst_gemm_power", "stream_power", "idle_power",
		"power_window"};
	int have = (g->burst_matrix_clock_hz > 0) + (g->burst_gemm_power > 0) +
		   (g->stream_power > 0) + (g->idle_power > 0) +
		   (g->power_window_s > 0);

	if (have == 0)
		return 0;
	if (have < 5) {
		schema_check_error(d, at, keys[schema_check_blame(at, keys, 5)],
				   "expected all of 'burst_matrix_clock', "
				   "'burst_gemm_power', 'stream_power', "
				   "'idle_power' and 'power_window' (the power "
				   "model) or none of them");
		return -1;
	}
	if (g->idle_power > g->stream_power) {
		schema_check_error(d, at, "idle_power", "expected at most "
				   "'stream_power' (%g), got %g (the idle "
				   "board draws less than HBM-bound kernels)",
				   g->stream_power, g->idle_power);
		return -1;
	}
	if (check_order(at, d, "sustained_matrix_clock",
			g->sustained_matrix_clock_hz, "burst_matrix_clock",
			g->burst_matrix_clock_hz, UNIT_FREQ) != 0)
		return -1;
	return check_order(at, d, "burst_matrix_clock",
			   g->burst_matrix_clock_hz, "max_clock",
			   g->max_clock_hz, UNIT_FREQ);
}

/* matrix_clock and sustained_matrix_clock at most max_clock (each is
 * absent or derived from the one above it in fill_defaults). */
static int check_clocks(const struct gpu_spec *g, const struct schema_at *at,
			struct diag *d)
{
	if (check_order(at, d, "matrix_clock", g->matrix_clock_hz,
			"max_clock", g->max_clock_hz, UNIT_FREQ) != 0)
		return -1;
	if (check_order(at, d, "sustained_matrix_clock",
			g->sustained_matrix_clock_hz, "max_clock",
			g->max_clock_hz, UNIT_FREQ) != 0)
		return -1;
	return check_power(g, at, d);
}

static int gpu_check(void *obj, const struct schema_at *at, struct diag *d)
{
	struct gpu_spec *g = obj;
	int rc = 0;

	fill_defaults(g);
	if (check_peaks(g, at, d) < 0)
		rc = -1;
	if (check_tiles(g, at, d) < 0)
		rc = -1;
	if (check_levels(g, at, d) < 0)
		rc = -1;
	if (check_clocks(g, at, d) < 0)
		rc = -1;
	if (check_arch(g, at, d) < 0)
		rc = -1;
	if (check_lowp_attention(g, at, d) < 0)
		rc = -1;
	if (check_softmax_overlap(g, at, d) < 0)
		rc = -1;
	if (check_q_blocks(g, at, d) < 0)
		rc = -1;
	if (g->triton_moe_fp8_block_tuned.n % 8) {
		schema_check_error(d, at, "triton_moe_fp8_block_tuned",
				   "expected (E, N, M_lo, M_hi, BLOCK_SIZE_M, "
				   "BLOCK_SIZE_N, BLOCK_SIZE_K, num_stages) "
				   "8-tuples, a multiple of 8 integers, got "
				   "%zu", g->triton_moe_fp8_block_tuned.n);
		rc = -1;
	}
	if (gpu_fitted_clock_check(g, at, d) < 0)
		rc = -1;
	if (g->triton_moe_untuned.n % 2) {
		schema_check_error(d, at, "triton_moe_untuned",
				   "expected (E, N) pairs, an even count of "
				   "integers, got %zu",
				   g->triton_moe_untuned.n);
		rc = -1;
	}
	return rc;
}

static const char *const gpu_dirs[] = {"configs/gpus", NULL};

const struct schema gpu_schema = {
	.kind = "gpu",
	.help = "a GPU: compute units, clocks, dense peaks per dtype, memory hierarchy",
	.preset_dirs = gpu_dirs,
	.size = sizeof(struct gpu_spec),
	.fields = gpu_fields,
	.nfields = SCHEMA_COUNT(gpu_fields),
	.check = gpu_check,
};
