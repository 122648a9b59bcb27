/*
 * A GEMM stream beside a communication-like kernel that holds k SMs: how
 * much each slows the other on one GPU. A calibration aid for llmsim's
 * interference model (src/engine/exec_run.c: a compute task beside a
 * collective runs at 1 - S, S = the collective's SM share; exec_crate.c:
 * the collective loses busy_compute_share of its progress while compute
 * runs), not part of the build: it needs an NVIDIA GPU and cuBLAS.
 *
 *   nvcc -O2 -gencode arch=compute_90,code=sm_90 -o measure-overlap \
 *        scripts/measure-overlap.cu -lcublas
 *   ./measure-overlap OUT.jsonl
 *
 * The communication stand-in is what DeepEP's and NCCL's kernels are to
 * the SMs: k thread blocks of 1024 threads (one per SM: each also takes
 * `smem` bytes of shared memory, 0 or 160 KiB; at 160 KiB no GEMM CTA,
 * which needs ~200 KiB on Hopper, fits beside it), each copying its own
 * 64 MiB slice of HBM again and again, `reps` times, so that it outlasts
 * the GEMMs. The GEMMs: a chain of bf16 cuBLAS GEMMs on another stream,
 * issued after the copy kernel (an event orders them), of two shapes
 * (an expert's 4096 x 1536 x 2048, 64 of them; 8192^3, 4 of them).
 * With LLMSIM_OVERLAP_HELDOUT set, other shapes and k only (a check of
 * a law drawn from the default set). Each point: the chain's time alone
 * and beside the copy, the copy's time alone and beside the chain (CUDA
 * events), the copy's bytes.
 *
 * With LLMSIM_OVERLAP_ORDER set, the other launch order: the GEMM chain
 * is issued first, and the copy is launched by the host while a GEMM of
 * the chain runs (after the event that ends GEMM `at`, plus a spin of
 * `frac` of a GEMM's time alone). A one-thread stamp kernel between the
 * GEMMs and the copy's blocks read %globaltimer, and the host's launch
 * instant is mapped onto that clock (a stamp bracketed by host clock
 * reads on an idle GPU), so each point says when the copy's blocks
 * started against the running GEMM's end, and each GEMM's time alone
 * and beside ("type":"order"). LLMSIM_OVERLAP_ORDER=first: the copy is
 * launched first and the stamped chain after it (at 0), the control for
 * what the stamp kernels between GEMMs change.
 */
#include "measure-cuda.cuh"
#include <string.h>

#define SLICE_B (64u << 20)

/* Block b copies its slice src -> dst reps times (16-byte words). */
__global__ void copy_slices(const int4 *src, int4 *dst, int reps, int smem)
{
	extern __shared__ int4 pad[];
	size_t words = SLICE_B / sizeof(int4);
	const int4 *s = src + blockIdx.x * words;
	int4 *d = dst + blockIdx.x * words;
	int r;
	size_t i;

	if (threadIdx.x == 0 && smem > 0)
		pad[0] = make_int4(reps, 0, 0, 0);	/* the smem is used */
	for (r = 0; r < reps; r++)
		for (i = threadIdx.x; i < words; i += blockDim.x)
			d[i] = s[i];
}

__global__ void stamp(unsigned long long *t)
{
	*t = gtimer();
}

/* copy_slices, each block stamping its start and end (thread 0; the end
 * after the block's threads are done) */
__global__ void copy_stamped(const int4 *src, int4 *dst, int reps,
			     unsigned long long *t0, unsigned long long *t1)
{
	size_t words = SLICE_B / sizeof(int4);
	const int4 *s = src + blockIdx.x * words;
	int4 *d = dst + blockIdx.x * words;
	int r;
	size_t i;

	if (threadIdx.x == 0)
		t0[blockIdx.x] = gtimer();
	for (r = 0; r < reps; r++)
		for (i = threadIdx.x; i < words; i += blockDim.x)
			d[i] = s[i];
	__syncthreads();
	if (threadIdx.x == 0)
		t1[blockIdx.x] = gtimer();
}

struct chain {
	int m, n, k, count;
};

static cublasHandle_t h;
static __nv_bfloat16 *A, *B, *C;

static void gemms(const struct chain *c, cudaStream_t s)
{
	const float one = 1.0f, zero = 0.0f;
	int i;

	CB(cublasSetStream(h, s));
	for (i = 0; i < c->count; i++)
		CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, c->n, c->m, c->k,
				&one, B, CUDA_R_16BF, c->n, A, CUDA_R_16BF,
				c->k, &zero, C, CUDA_R_16BF, c->n,
				CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

static float span(cudaEvent_t a, cudaEvent_t b)
{
	float ms;

	CK(cudaEventSynchronize(b));
	CK(cudaEventElapsedTime(&ms, a, b));
	return ms * 1e-3f;
}

static void point(FILE *out, const struct chain *c, int k, int smem,
		  cudaStream_t sg, cudaStream_t sc, cudaEvent_t *ev,
		  const int4 *src, int4 *dst)
{
	float alone, tg = 0, tc = 0, tca;
	int rep, reps;

	gemms(c, sg);				/* warm-up */
	CK(cudaEventRecord(ev[2], sg));
	gemms(c, sg);
	CK(cudaEventRecord(ev[3], sg));
	alone = span(ev[2], ev[3]);
	/* the copy alone, 1 rep: its time per rep */
	CK(cudaEventRecord(ev[0], sc));
	copy_slices<<<k, 1024, smem, sc>>>(src, dst, 1, smem);
	CK(cudaEventRecord(ev[1], sc));
	tca = span(ev[0], ev[1]);
	/* enough reps to outlast the chain 2x */
	reps = (int)(2 * alone / tca) + 1;
	for (rep = 0; rep < 2; rep++) {		/* the 2nd is timed */
		CK(cudaEventRecord(ev[0], sc));
		copy_slices<<<k, 1024, smem, sc>>>(src, dst, reps, smem);
		CK(cudaEventRecord(ev[1], sc));
		CK(cudaStreamWaitEvent(sg, ev[0], 0));
		CK(cudaEventRecord(ev[2], sg));
		gemms(c, sg);
		CK(cudaEventRecord(ev[3], sg));
		tg = span(ev[2], ev[3]);
		tc = span(ev[0], ev[1]);
		CK(cudaDeviceSynchronize());
	}
	fprintf(out, "{\"type\":\"point\",\"m\":%d,\"n\":%d,"
		"\"k\":%d,\"gemms\":%d,\"copy_blocks\":%d,"
		"\"copy_smem_B\":%d,\"gemm_alone_s\":%.9g,"
		"\"gemm_beside_s\":%.9g,\"copy_rep_alone_s\":%.9g,"
		"\"copy_reps\":%d,\"copy_beside_s\":%.9g,"
		"\"copy_B_per_rep\":%.0f}\n", c->m, c->n, c->k, c->count, k,
		smem, alone, tg, tca, reps, tc, 2.0 * k * (double)SLICE_B);
	fflush(out);
}

static double host_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

#define MAXG 128

/* The chain on sg with a stamp before each GEMM and after the last; the
 * event ev_at recorded after GEMM `at` (0 = none). */
static void stamped_chain(const struct chain *c, cudaStream_t sg,
			  unsigned long long *ts, int at, cudaEvent_t ev_at)
{
	const float one = 1.0f, zero = 0.0f;
	int i;

	CB(cublasSetStream(h, sg));
	for (i = 0; i < c->count; i++) {
		stamp<<<1, 1, 0, sg>>>(ts + i);
		CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, c->n, c->m, c->k,
				&one, B, CUDA_R_16BF, c->n, A, CUDA_R_16BF,
				c->k, &zero, C, CUDA_R_16BF, c->n,
				CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
		if (i + 1 == at)
			CK(cudaEventRecord(ev_at, sg));
	}
	stamp<<<1, 1, 0, sg>>>(ts + c->count);
}

static void print_list(FILE *out, const char *key,
		       const unsigned long long *v, int n,
		       unsigned long long base)
{
	int i;

	fprintf(out, ",\"%s\":[", key);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%.3f", i ? "," : "",
			((double)v[i] - (double)base) * 1e-3);
	fprintf(out, "]");
}

/* One launch-order point: the chain alone (stamped), then the chain
 * again with the copy of k blocks launched by the host after GEMM `at`
 * ended plus frac of a GEMM's time alone. Times in the output are us
 * from the chain's first stamp. */
static void order_point(FILE *out, const struct chain *c, int k, int at,
			double frac, cudaStream_t sg, cudaStream_t sc,
			cudaEvent_t ev_at, const int4 *src, int4 *dst,
			unsigned long long *d_ts)
{
	unsigned long long ts[MAXG + 1], cb0[132], cb1[132], gnow;
	unsigned long long *d_c0 = d_ts + MAXG + 1, *d_c1 = d_c0 + 132;
	unsigned long long *d_now = d_c1 + 132;
	double h0, h1, hl, off, per, spin_until;
	int reps, i;
	float tca;
	cudaEvent_t e0, e1;

	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	stamped_chain(c, sg, d_ts, 0, ev_at);		/* warm-up */
	CK(cudaStreamSynchronize(sg));
	stamped_chain(c, sg, d_ts, 0, ev_at);
	CK(cudaStreamSynchronize(sg));
	CK(cudaMemcpy(ts, d_ts, sizeof(ts[0]) * (c->count + 1),
		      cudaMemcpyDeviceToHost));
	fprintf(out, "{\"type\":\"order\",\"m\":%d,\"n\":%d,"
		"\"k\":%d,\"gemms\":%d,\"copy_blocks\":%d,\"at\":%d,"
		"\"frac\":%.2f", c->m, c->n, c->k, c->count, k, at, frac);
	print_list(out, "alone_stamps_us", ts, c->count + 1, ts[0]);
	per = ((double)ts[c->count] - (double)ts[0]) / c->count;
	/* the copy alone, one rep, and enough reps to last ~2.5 GEMMs */
	CK(cudaEventRecord(e0, sc));
	copy_slices<<<k, 1024, 0, sc>>>(src, dst, 1, 0);
	CK(cudaEventRecord(e1, sc));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&tca, e0, e1));
	reps = (int)(2.5 * per * 1e-6 / tca) + 1;
	/* host clock -> globaltimer, on the idle GPU */
	h0 = host_ns();
	stamp<<<1, 1, 0, sc>>>(d_now);
	CK(cudaStreamSynchronize(sc));
	h1 = host_ns();
	CK(cudaMemcpy(&gnow, d_now, sizeof(gnow), cudaMemcpyDeviceToHost));
	off = (double)gnow - 0.5 * (h0 + h1);
	/* the point; at 0: the copy first, the chain after it (an event
	 * orders them, as point() does), the control for the stamps */
	if (at == 0) {
		CK(cudaEventRecord(e0, sc));
		hl = host_ns();
		copy_stamped<<<k, 1024, 0, sc>>>(src, dst, reps, d_c0, d_c1);
		CK(cudaStreamWaitEvent(sg, e0, 0));
		stamped_chain(c, sg, d_ts, 0, ev_at);
	} else {
		stamped_chain(c, sg, d_ts, at, ev_at);
		while (cudaEventQuery(ev_at) == cudaErrorNotReady)
			;
		spin_until = host_ns() + frac * per;
		while (host_ns() < spin_until)
			;
		hl = host_ns();
		copy_stamped<<<k, 1024, 0, sc>>>(src, dst, reps, d_c0, d_c1);
	}
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(ts, d_ts, sizeof(ts[0]) * (c->count + 1),
		      cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(cb0, d_c0, sizeof(cb0[0]) * k, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(cb1, d_c1, sizeof(cb1[0]) * k, cudaMemcpyDeviceToHost));
	print_list(out, "beside_stamps_us", ts, c->count + 1, ts[0]);
	fprintf(out, ",\"host_launch_us\":%.3f,\"clock_map_err_us\":%.3f",
		(hl + off - (double)ts[0]) * 1e-3, 0.5 * (h1 - h0) * 1e-3);
	print_list(out, "copy_block_start_us", cb0, k, ts[0]);
	print_list(out, "copy_block_end_us", cb1, k, ts[0]);
	fprintf(out, ",\"copy_reps\":%d,\"copy_rep_alone_s\":%.9g}\n",
		reps, tca * 1e-3);
	fflush(out);
	for (i = 0; i < 2; i++)
		CK(cudaEventDestroy(i ? e1 : e0));
}

int main(int argc, char **argv)
{
	static const int ks[] = {8, 20, 32, 66};
	static const int smems[] = {0, 160 << 10};
	static const struct chain chains[] = {{4096, 1536, 2048, 64},
					      {8192, 8192, 8192, 4}};
	/* second part: the expert shape's rows and squares, beside 8 and
	 * 20 blocks: which kernels double and which slow by k / U */
	static const struct chain sweep[] = {
		{1024, 1536, 2048, 128}, {2048, 1536, 2048, 96},
		{8192, 1536, 2048, 32}, {16384, 1536, 2048, 16},
		{2048, 2048, 2048, 128}, {4096, 4096, 4096, 24},
		{16384, 8192, 8192, 2}};
	/* third part (LLMSIM_OVERLAP_HELDOUT set): other shapes and k, a
	 * check of a law drawn from the first two */
	static const struct chain heldout[] = {
		{3072, 1536, 2048, 64}, {6144, 1536, 2048, 40},
		{12288, 1536, 2048, 20}, {24576, 1536, 2048, 10},
		{3072, 3072, 3072, 40}, {6144, 6144, 6144, 8},
		{12288, 12288, 12288, 2}, {4096, 7168, 2048, 24},
		{4096, 2048, 7168, 24}};
	static const int hks[] = {4, 12, 16, 24, 48};
	cudaStream_t sg, sc;
	cudaEvent_t ev[4];
	int4 *src, *dst;
	FILE *out;
	int ki, si, ci, i;

	if (argc != 2 || !(out = fopen(argv[1], "w"))) {
		fprintf(stderr, "usage: %s OUT.jsonl\n", argv[0]);
		return 2;
	}
	CK(cudaMalloc(&src, (size_t)66 * SLICE_B));
	CK(cudaMalloc(&dst, (size_t)66 * SLICE_B));
	CK(cudaMemset(src, 1, (size_t)66 * SLICE_B));
	/* each operand: up to 12288^2 elements (the largest shape) */
	CK(cudaMalloc(&A, (size_t)12288 * 12288 * 2));
	CK(cudaMalloc(&B, (size_t)12288 * 12288 * 2));
	CK(cudaMalloc(&C, (size_t)12288 * 12288 * 2));
	fill<<<1024, 256>>>(A, (size_t)12288 * 12288);
	fill<<<1024, 256>>>(B, (size_t)12288 * 12288);
	CK(cudaFuncSetAttribute(copy_slices,
				cudaFuncAttributeMaxDynamicSharedMemorySize,
				160 << 10));
	CB(cublasCreate(&h));
	CK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking));
	CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
	for (i = 0; i < 4; i++)
		CK(cudaEventCreate(&ev[i]));
	CK(cudaDeviceSynchronize());
	fprintf(out, "{\"type\":\"hello\",\"slice_B\":%u}\n", SLICE_B);
	if (getenv("LLMSIM_OVERLAP_ORDER")) {
		/* GEMMs of ~1.5 ms, ~3 ms and ~30 us (1-2 tiles a CTA) */
		static const struct chain oc[] = {{8192, 8192, 8192, 8},
						  {16384, 8192, 8192, 6},
						  {4096, 1536, 2048, 64}};
		static const int oks[] = {8, 20, 32};
		static const double fracs[] = {0.3, 0.7};
		unsigned long long *d_ts;
		cudaEvent_t ev_at;
		int fi;

		CK(cudaMalloc(&d_ts, sizeof(*d_ts) * (MAXG + 1 + 2 * 132 + 1)));
		CK(cudaEventCreateWithFlags(&ev_at, cudaEventDisableTiming));
		int first = !strcmp(getenv("LLMSIM_OVERLAP_ORDER"), "first");

		for (ci = 0; ci < 3; ci++)
			for (ki = 0; ki < 3; ki++)
				for (fi = 0; fi < (first ? 1 : 2); fi++)
					order_point(out, &oc[ci], oks[ki],
						    first ? 0 : ci == 2 ? 16 : 2,
						    fracs[fi], sg, sc, ev_at,
						    src, dst, d_ts);
		fprintf(out, "{\"type\":\"end\"}\n");
		fclose(out);
		return 0;
	}
	if (getenv("LLMSIM_OVERLAP_HELDOUT")) {
		for (ci = 0; ci < (int)(sizeof(heldout) / sizeof(heldout[0]));
		     ci++)
			for (ki = 0; ki < 5; ki++)
				point(out, &heldout[ci], hks[ki], 0, sg, sc,
				      ev, src, dst);
		fprintf(out, "{\"type\":\"end\"}\n");
		fclose(out);
		return 0;
	}
	for (ci = 0; ci < 2; ci++)
		for (ki = 0; ki < 4; ki++)
			for (si = 0; si < 2; si++)
				point(out, &chains[ci], ks[ki], smems[si], sg,
				      sc, ev, src, dst);
	for (ci = 0; ci < (int)(sizeof(sweep) / sizeof(sweep[0])); ci++)
		for (ki = 0; ki < 2; ki++)
			point(out, &sweep[ci], ks[ki], 0, sg, sc, ev, src,
			      dst);
	fprintf(out, "{\"type\":\"end\"}\n");
	fclose(out);
	return 0;
}
