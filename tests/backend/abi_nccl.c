/*
 * abi_nccl.c - src/backend's own declarations of NCCL (coll_dl.h) and
 * cuBLAS (blas_dl.h) against the real headers, where CUDA is installed:
 * every enum value and struct size the backend passes across the dlopen
 * boundary. Compile-time only (make backends builds it; a mismatch fails
 * the build). RCCL shares NCCL's API and values.
 */
#include <cublas_api.h>
#include <library_types.h>
#include <nccl.h>

#include "blas_dl.h"
#include "coll_dl.h"

_Static_assert(sizeof(nc_unique_id) == sizeof(ncclUniqueId), "ncclUniqueId");
_Static_assert(NC_UNIQUE_ID_BYTES == NCCL_UNIQUE_ID_BYTES, "id bytes");
_Static_assert(sizeof(nc_result) == sizeof(ncclResult_t), "ncclResult_t");
_Static_assert(sizeof(nc_comm) == sizeof(ncclComm_t), "ncclComm_t");
_Static_assert(sizeof(nc_stream) == sizeof(cudaStream_t), "cudaStream_t");
_Static_assert((int)NC_INT8 == (int)ncclInt8 && (int)NC_UINT8 == (int)ncclUint8, "int8");
_Static_assert((int)NC_INT32 == (int)ncclInt32 && (int)NC_UINT32 == (int)ncclUint32, "int32");
_Static_assert((int)NC_INT64 == (int)ncclInt64 && (int)NC_UINT64 == (int)ncclUint64, "int64");
_Static_assert((int)NC_FLOAT16 == (int)ncclFloat16 && (int)NC_FLOAT32 == (int)ncclFloat32,
	       "float");
_Static_assert((int)NC_FLOAT64 == (int)ncclFloat64 && (int)NC_BFLOAT16 == (int)ncclBfloat16,
	       "double, bfloat16");
_Static_assert((int)NC_SUM == (int)ncclSum, "ncclSum");
_Static_assert(sizeof(int) == sizeof(ncclDataType_t), "enums are int");

_Static_assert((int)CB_OP_N == (int)CUBLAS_OP_N, "CUBLAS_OP_N");
_Static_assert((int)CB_R_32F == (int)CUDA_R_32F && (int)CB_R_16F == (int)CUDA_R_16F &&
	       (int)CB_R_16BF == (int)CUDA_R_16BF, "cudaDataType");
_Static_assert((int)CB_COMPUTE_32F == (int)CUBLAS_COMPUTE_32F, "compute type");
_Static_assert((int)CB_GEMM_DEFAULT == (int)CUBLAS_GEMM_DEFAULT, "gemm algo");
_Static_assert(sizeof(int) == sizeof(cublasStatus_t), "status is int");

/* The entry points as the header declares them, assigned to our
 * pointer types through the same parameter list (a mismatch in count or
 * in a pointer's type is a compile error). */
static void check_calls(struct nc_lib *l)
{
	ncclResult_t (*ar)(const void *, void *, size_t, ncclDataType_t,
			   ncclRedOp_t, ncclComm_t, cudaStream_t) = ncclAllReduce;
	ncclResult_t (*ag)(const void *, void *, size_t, ncclDataType_t,
			   ncclComm_t, cudaStream_t) = ncclAllGather;
	ncclResult_t (*snd)(const void *, size_t, ncclDataType_t, int,
			    ncclComm_t, cudaStream_t) = ncclSend;
	ncclResult_t (*init)(ncclComm_t *, int, ncclUniqueId, int) =
		ncclCommInitRank;

	(void)ar;
	(void)ag;
	(void)snd;
	(void)init;
	(void)l;
}

void abi_nccl_checked(struct nc_lib *l);
void abi_nccl_checked(struct nc_lib *l)
{
	check_calls(l);
}
