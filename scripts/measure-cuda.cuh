/*
 * What llmsim's CUDA measurement programs share (scripts/measure-*.cu,
 * calibration aids built with nvcc on a machine with a GPU, not part of
 * the build): error checks that exit with the failing call named, the
 * GPU's nanosecond clock, a block that sleeps on it, a host clock, and a
 * fill with non-zero data (zeros would run the tensor cores at less power
 * than real data).
 */
#ifndef LLMSIM_MEASURE_CUDA_CUH
#define LLMSIM_MEASURE_CUDA_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
	fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } \
	} while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
	fprintf(stderr, "%s: cuBLAS status %d\n", #x, (int)s_); exit(1); } \
	} while (0)

__device__ static inline unsigned long long gtimer(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* one block waiting ns on the GPU's clock, the SMs otherwise idle */
__global__ static void sleeper(unsigned long long ns)
{
	unsigned long long t0 = gtimer();

	while (gtimer() - t0 < ns)
		__nanosleep(10000);
}

/* values in [-1, 1) from a hash of the index */
__global__ static void fill(__nv_bfloat16 *p, size_t n)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2bfloat16((float)((i * 2654435761u) >> 16 & 0xff) /
					128.0f - 1.0f);
}

static inline double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#endif
