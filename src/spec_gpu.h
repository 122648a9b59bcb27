/*
 * spec_gpu.h - a GPU as configured: compute, memory hierarchy, clocks.
 *
 * Loaded from configs/gpus/NAME.yaml through gpu_schema (spec_gpu.c),
 * every number with its unit in the YAML and its source in a comment
 * there. Peaks are the vendor's dense (non-sparse) figures; what is
 * achievable is derived by the GPU model (src/gpu) from clocks and
 * efficiencies held here as data.
 *
 * Depends on schema.h only.
 */
#ifndef LLMSIM_SPEC_GPU_H
#define LLMSIM_SPEC_GPU_H

#include <stdint.h>

#include "schema.h"

/* Element types a kernel can compute in. */
enum dtype {
	DTYPE_FP32,
	DTYPE_TF32,
	DTYPE_BF16,
	DTYPE_FP16,
	DTYPE_FP8,
	DTYPE_MXFP8,
	DTYPE_MXFP6,
	DTYPE_MXFP4,
	DTYPE_COUNT
};

/* "fp32", "tf32", "bf16", ...; NULL-terminated. */
extern const char *const dtype_names[DTYPE_COUNT + 1];

/* Storage bytes per element, block scales included (MX formats carry one
 * 8-bit E8M0 scale per 32 elements: mxfp4 = 4/8 + 1/32 B). */
double dtype_bytes(enum dtype t);

enum gpu_vendor {
	GPU_NVIDIA,
	GPU_AMD
};

struct gpu_mem_level {
	double capacity_B;		/* B; 0 = level absent */
	double bandwidth_Bps;		/* B/s, peak */
	double efficiency;		/* achievable fraction of bandwidth */
};

struct gpu_spec {
	const char *name;			/* preset name */
	int vendor;				/* enum gpu_vendor */
	const char *arch;			/* "sm90", "gfx942" (info) */
	int64_t compute_units;			/* CUs (AMD) or SMs (NVIDIA) */
	double max_clock_hz;			/* Hz, boost / peak engine clock */
	double matrix_clock_hz;			/* Hz, clock the matrix peaks are quoted at */
	double sustained_matrix_clock_hz;	/* Hz, median clock under GEMM load */
	double matrix_peak_flops[DTYPE_COUNT];	/* FLOP/s dense at matrix_clock; 0 = unsupported */
	double vector_fp32_flops;		/* FLOP/s, non-matrix FP32 */
	double gemm_efficiency;			/* fraction of clock-scaled peak a large, well-shaped GEMM reaches */
	struct gpu_mem_level hbm;		/* device memory */
	double hbm_usable_B;			/* B usable by the job (device-reported minus runtime reserve) */
	struct gpu_mem_level llc;		/* last-level cache (Infinity Cache / MALL); may be absent */
	struct gpu_mem_level l2;		/* L2 */
	double lds_per_cu_B;			/* B, LDS / shared memory per CU or SM */
	double kernel_launch_s;			/* s, per-kernel launch and dispatch overhead */
};

extern const struct schema gpu_schema;

#endif
