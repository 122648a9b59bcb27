/*
 * blas_dl.h - the one GEMM entry point the GPU backend needs, from
 * cuBLAS (cublasGemmEx) or rocBLAS (rocblas_gemm_ex), loaded at run time
 * like the collective library (coll_dl.h): declared here, checked
 * against cublas_api.h by tests/backend/abi_nccl.c where CUDA is
 * installed; rocBLAS's values are its published enums (rocblas-types.h:
 * rocblas_operation_none 111, rocblas_datatype_f16_r 150, f32_r 151,
 * bf16_r 168, rocblas_gemm_algo_standard 0).
 *
 * Column-major C (m x n) = A (m x k) B (k x n), no transposes, inputs and
 * output in one dtype, fp32 accumulation.
 */
#ifndef LLMSIM_BACKEND_BLAS_DL_H
#define LLMSIM_BACKEND_BLAS_DL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum bl_kind { BL_CUBLAS, BL_ROCBLAS };

/* cuBLAS values (cublas_api.h, library_types.h). */
enum {
	CB_OP_N = 0,
	CB_R_32F = 0, CB_R_16F = 2, CB_R_16BF = 14,
	CB_COMPUTE_32F = 68,
	CB_GEMM_DEFAULT = -1,
};

/* rocBLAS values (rocblas-types.h). */
enum {
	RB_OP_N = 111,
	RB_R_16F = 150, RB_R_32F = 151, RB_R_16BF = 168,
	RB_GEMM_STANDARD = 0,
};

/* The dtypes a GEMM runs in. */
enum bl_dtype { BL_F32, BL_F16, BL_BF16 };

struct bl_lib {
	enum bl_kind kind;
	void *handle;
	char path[512];
	int (*create)(void **h);
	int (*destroy)(void *h);
	int (*set_stream)(void *h, void *stream);
	int (*cublas_gemm_ex)(void *h, int ta, int tb, int m, int n, int k,
			      const void *alpha, const void *a, int at, int lda,
			      const void *b, int bt, int ldb, const void *beta,
			      void *c, int ct, int ldc, int compute, int algo);
	int (*rocblas_gemm_ex)(void *h, int ta, int tb, int m, int n, int k,
			       const void *alpha, const void *a, int at,
			       int lda, const void *b, int bt, int ldb,
			       const void *beta, const void *c, int ct,
			       int ldc, void *d, int dt, int ldd, int compute,
			       int algo, int32_t solution, uint32_t flags);
};

/* Load cuBLAS or rocBLAS: path, else $LLMSIM_BLAS_LIB, else names.
 * 0, or -1 with the reason in err. */
int bl_load(struct bl_lib *l, enum bl_kind kind, const char *path,
	    const char *names, char *err, size_t errlen);

void bl_unload(struct bl_lib *l);

/* C = A B on handle h's stream; the library's status (0 = success). */
int bl_gemm(const struct bl_lib *l, void *h, enum bl_dtype dt, int m, int n,
	    int k, const void *a, const void *b, void *c);

#ifdef __cplusplus
}
#endif

#endif
