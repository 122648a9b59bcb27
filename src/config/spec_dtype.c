/*
 * spec_dtype.c - the data types' names and bytes (with their MX / NVFP4
 * block scales) and the GPU architecture names (sm*, gfx*, zen*): what the
 * GPU schema (spec_gpu.c) and the rest of the configuration share.
 */
#include "spec_gpu.h"

#include <stddef.h>
#include <string.h>

#include "base/diag.h"
const char *const dtype_names[DTYPE_COUNT + 1] = {
	"fp32", "tf32", "bf16", "fp16", "fp8", "mxfp8", "mxfp6", "mxfp4",
	"nvfp4", NULL,
};

const char *const dtype_aliases[] = {
	"float32", "fp32", "float", "fp32", "tensorfloat32", "tf32",
	"bfloat16", "bf16", "float16", "fp16", "half", "fp16",
	"float8", "fp8", "fp8_e4m3", "fp8", "float8_e4m3fn", "fp8",
	"fp8_e5m2", "fp8", "float8_e5m2", "fp8",
	NULL,
};

double dtype_bytes(enum dtype t)
{
	/* OCP MX spec: one E8M0 (1 B) scale shared by a block of 32.
	 * NVFP4 (NVIDIA, Blackwell): one E4M3 (1 B) scale per 16. */
	static const double scale_per_elem = 1.0 / 32.0;
	static const double nv_scale_per_elem = 1.0 / 16.0;

	switch (t) {
	case DTYPE_FP32: case DTYPE_TF32: return 4.0;
	case DTYPE_BF16: case DTYPE_FP16: return 2.0;
	case DTYPE_FP8: return 1.0;
	case DTYPE_MXFP8: return 1.0 + scale_per_elem;
	case DTYPE_MXFP6: return 0.75 + scale_per_elem;
	case DTYPE_MXFP4: return 0.5 + scale_per_elem;
	case DTYPE_NVFP4: return 0.5 + nv_scale_per_elem;
	default: break;
	}
	BUG("unknown dtype");
}

int gpu_arch_vendor(const char *a)
{
	size_t k;

	if (!a)
		return -1;
	if (strncmp(a, "sm", 2) == 0) {
		k = 2 + strspn(a + 2, "0123456789");
		return k > 3 && a[k] == '\0' ? GPU_NVIDIA : -1;
	}
	if (strncmp(a, "gfx", 3) == 0) {
		k = 3 + strspn(a + 3, "0123456789abcdef");
		return k > 3 && a[k] == '\0' ? GPU_AMD : -1;
	}
	if (strncmp(a, "zen", 3) == 0) {	/* a CPU core (configs/cpus) */
		k = 3 + strspn(a + 3, "0123456789");
		return k > 3 && a[k] == '\0' ? GPU_AMD : -1;
	}
	return -1;
}

int gpu_arch_is(const struct gpu_spec *g, const char *a)
{
	return g && g->arch && a && gpu_arch_vendor(a) >= 0 &&
	       strcmp(g->arch, a) == 0;
}

int dtype_low_precision(enum dtype t)
{
	return t >= DTYPE_FP8 && t < DTYPE_COUNT;
}
