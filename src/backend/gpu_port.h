/*
 * gpu_port.h - one source, two GPU stacks: the few runtime calls gpu.cu
 * makes, named gpuX, mapped to HIP (hipcc) or CUDA (nvcc). RCCL's API is
 * NCCL's and both are loaded at run time (coll_dl.h); the BLAS differs
 * (rocBLAS / cuBLAS, blas_dl.h), and so do the library names searched.
 */
#ifndef LLMSIM_BACKEND_GPU_PORT_H
#define LLMSIM_BACKEND_GPU_PORT_H

#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>

#define BK_FLAVOUR "hip"
#define BK_TESTER BK_RCCL_TESTS	/* RCCL's own test suite */
#define BK_RUNTIME_NAME "HIP"
#define BK_COLL_NAME "RCCL"
/* librccl from ROCm (/opt/rocm/lib) or a distribution package. */
#define BK_COLL_LIBS "librccl.so.1:librccl.so:/opt/rocm/lib/librccl.so.1:" \
	"/opt/rocm/lib/librccl.so:/opt/rocm-*/lib/librccl.so.1"
#define BK_BLAS_KIND BL_ROCBLAS
#define BK_BLAS_LIBS "librocblas.so.4:librocblas.so.3:librocblas.so:" \
	"/opt/rocm/lib/librocblas.so.4:/opt/rocm/lib/librocblas.so:" \
	"/opt/rocm-*/lib/librocblas.so.4"

#define gpuError_t hipError_t
#define gpuSuccess hipSuccess
#define gpuErrorNoDevice hipErrorNoDevice
#define gpuErrorInsufficientDriver hipErrorInsufficientDriver
#define gpuGetErrorString hipGetErrorString
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuSetDevice hipSetDevice
#define gpuDeviceProp hipDeviceProp_t
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuRuntimeGetVersion hipRuntimeGetVersion
#define gpuDriverGetVersion hipDriverGetVersion
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemset hipMemset
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuStream_t hipStream_t
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamDestroy hipStreamDestroy
#define gpuEvent_t hipEvent_t
#define gpuEventCreate hipEventCreate
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuEventDestroy hipEventDestroy
#define gpuGetLastError hipGetLastError

#else
#include <cuda_runtime.h>

#define BK_FLAVOUR "cuda"
#define BK_TESTER BK_NCCL_TESTS	/* NCCL's own test suite */
#define BK_RUNTIME_NAME "CUDA"
#define BK_COLL_NAME "NCCL"
/* libnccl from a system package, the CUDA toolkit, or pip's
 * nvidia-nccl-cu* wheel (PyTorch installs it). */
#define BK_COLL_LIBS "libnccl.so.2:libnccl.so:/usr/local/cuda/lib/libnccl.so.2:" \
	"/usr/local/cuda/lib64/libnccl.so.2:" \
	"/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2:" \
	"/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2:" \
	"/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2"
#define BK_BLAS_KIND BL_CUBLAS
#define BK_BLAS_LIBS "libcublas.so.13:libcublas.so.12:libcublas.so.11:" \
	"libcublas.so:/usr/local/cuda/lib64/libcublas.so"

#define gpuError_t cudaError_t
#define gpuSuccess cudaSuccess
#define gpuErrorNoDevice cudaErrorNoDevice
#define gpuErrorInsufficientDriver cudaErrorInsufficientDriver
#define gpuGetErrorString cudaGetErrorString
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuSetDevice cudaSetDevice
#define gpuDeviceProp cudaDeviceProp
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuRuntimeGetVersion cudaRuntimeGetVersion
#define gpuDriverGetVersion cudaDriverGetVersion
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemset cudaMemset
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuStream_t cudaStream_t
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamDestroy cudaStreamDestroy
#define gpuEvent_t cudaEvent_t
#define gpuEventCreate cudaEventCreate
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuEventDestroy cudaEventDestroy
#define gpuGetLastError cudaGetLastError

#endif

#endif
