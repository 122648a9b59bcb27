/*
 * The stand-in for a communication kernel that holds SMs, as a cubin a
 * PyTorch script launches with the driver API on its own stream
 * (scripts/measure-grouped-overlap-torch.py): `gridDim.x` blocks of 1024
 * threads, one per SM, each copying its own 64 MiB slice of HBM `reps`
 * times (measure-overlap.cu's copy_slices, without the shared-memory
 * variant). Not part of the build:
 *
 *   nvcc -cubin -gencode arch=compute_90,code=sm_90 -o hold-sms.cubin \
 *        scripts/hold-sms.cu
 */
#define SLICE_B (64u << 20)

extern "C" __global__ void hold_sms(const int4 *src, int4 *dst, int reps)
{
	size_t words = SLICE_B / sizeof(int4);
	const int4 *s = src + blockIdx.x * words;
	int4 *d = dst + blockIdx.x * words;
	int r;
	size_t i;

	for (r = 0; r < reps; r++)
		for (i = threadIdx.x; i < words; i += blockDim.x)
			d[i] = s[i];
}
