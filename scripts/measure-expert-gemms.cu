/*
 * Per-expert GEMM kernels issued from C++ on S streams: what Transformer
 * Engine's GroupedLinear does on its multi-stream cuBLAS path (one cuBLAS
 * GEMM per local expert, round robin on the compute streams, forked from
 * and joined to the main stream by events). A calibration aid for llmsim
 * (src/gpu/gpu_grouped.c, gpu_grouped_kernels_s), not part of the build:
 * it needs an NVIDIA GPU and cuBLAS.
 *
 *   nvcc -O2 -gencode arch=compute_90,code=sm_90 -o measure-expert-gemms \
 *        scripts/measure-expert-gemms.cu -lcublas
 *   ./measure-expert-gemms OUT.jsonl
 *
 * For each expert shape (Qwen3-30B-A3B's fc1 forward, K 2048 N 1536, and
 * fc2 forward, K 768 N 2048), L experts (1, 4, 8, 16, 32) of m rows each
 * (32 ... 2048), S streams (1, 4): L GEMMs C_g[m, N] = A_g[m, K] W_g[K, N]
 * (bf16 in and out, fp32 accumulation, row major; each expert its own
 * weights), and the same rows as one GEMM against W_0 (`merged`). One
 * JSON line a point: gpu_s, the mean GPU time of one set of L GEMMs over
 * ITERS sets issued back to back (events on the main stream around all of
 * them), and host_s, the host's mean time to issue one set: where host_s
 * >= gpu_s the GPU waited for the host (host-bound), as it would in a
 * framework issuing the same calls. First a `launch` line: 2,000 empty
 * kernels back to back on one stream (host and GPU s a kernel) and as
 * one CUDA graph (GPU s a node).
 */
#include "measure-cuda.cuh"

#define ITERS 50
#define WARMUP 5
#define MAX_STREAMS 4

static cudaStream_t side[MAX_STREAMS];
static cublasHandle_t handle[MAX_STREAMS + 1];	/* [MAX_STREAMS]: main */

/* Row-major C[m, n] = A[m, k] W[k, n] is column-major C^T = W^T A^T. */
static void gemm(cublasHandle_t h, const __nv_bfloat16 *a,
		 const __nv_bfloat16 *w, __nv_bfloat16 *c, int m, int n, int k)
{
	const float one = 1.0f, zero = 0.0f;

	CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, w,
			CUDA_R_16BF, n, a, CUDA_R_16BF, k, &zero, c,
			CUDA_R_16BF, n, CUBLAS_COMPUTE_32F,
			CUBLAS_GEMM_DEFAULT));
}

/* Values in [-1, 1) from a hash of the index: zeros would run the
 * tensor cores at less power than real data. */
__global__ void fill(__nv_bfloat16 *p, size_t n, unsigned seed)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
		unsigned x = (unsigned)i * 2654435761u ^ seed;

		x ^= x >> 13;
		x *= 0x5bd1e995u;
		x ^= x >> 15;
		p[i] = __float2bfloat16((float)(x & 0xffff) / 32768.0f - 1.0f);
	}
}

__global__ void empty(void) {}

/* Empty kernels back to back on one stream (host s a launch, GPU s a
 * kernel) and the same N as nodes of one CUDA graph (GPU s a node). */
static void launches(FILE *out)
{
	const int n = 2000;
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	cudaStream_t cs;
	cudaEvent_t e0, e1;
	double h0, host;
	float ms, gms;
	int i;

	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	for (i = 0; i < 100; i++)
		empty<<<1, 1>>>();
	CK(cudaDeviceSynchronize());
	CK(cudaEventRecord(e0, 0));
	h0 = mono_s();
	for (i = 0; i < n; i++)
		empty<<<1, 1>>>();
	host = (mono_s() - h0) / n;
	CK(cudaEventRecord(e1, 0));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&ms, e0, e1));
	CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
	CK(cudaStreamBeginCapture(cs, cudaStreamCaptureModeGlobal));
	for (i = 0; i < n; i++)
		empty<<<1, 1, 0, cs>>>();
	CK(cudaStreamEndCapture(cs, &graph));
	CK(cudaGraphInstantiate(&exec, graph, 0));
	CK(cudaGraphLaunch(exec, cs));
	CK(cudaStreamSynchronize(cs));
	CK(cudaEventRecord(e0, cs));
	CK(cudaGraphLaunch(exec, cs));
	CK(cudaEventRecord(e1, cs));
	CK(cudaEventSynchronize(e1));
	CK(cudaEventElapsedTime(&gms, e0, e1));
	fprintf(out, "{\"type\":\"launch\",\"kernels\":%d,"
		"\"stream_host_s\":%.9g,\"stream_gpu_s\":%.9g,"
		"\"graph_gpu_s\":%.9g}\n", n, host, ms * 1e-3 / n,
		gms * 1e-3 / n);
	CK(cudaGraphExecDestroy(exec));
	CK(cudaGraphDestroy(graph));
	CK(cudaStreamDestroy(cs));
}

struct set {
	const __nv_bfloat16 *a, *w;
	__nv_bfloat16 *c;
	int groups, m, n, k, streams, merged;
};

/* One set of GEMMs, issued on the main (default) stream's work order. */
static void issue(const struct set *s, cudaEvent_t fork,
		  cudaEvent_t *join)
{
	int g;

	if (s->merged) {
		gemm(handle[MAX_STREAMS], s->a, s->w, s->c, s->m * s->groups,
		     s->n, s->k);
		return;
	}
	if (s->streams == 1) {
		for (g = 0; g < s->groups; g++)
			gemm(handle[MAX_STREAMS], s->a + (size_t)g * s->m * s->k,
			     s->w + (size_t)g * s->k * s->n,
			     s->c + (size_t)g * s->m * s->n, s->m, s->n, s->k);
		return;
	}
	CK(cudaEventRecord(fork, 0));
	for (g = 0; g < s->streams; g++)
		CK(cudaStreamWaitEvent(side[g], fork, 0));
	for (g = 0; g < s->groups; g++)
		gemm(handle[g % s->streams], s->a + (size_t)g * s->m * s->k,
		     s->w + (size_t)g * s->k * s->n,
		     s->c + (size_t)g * s->m * s->n, s->m, s->n, s->k);
	for (g = 0; g < s->streams; g++) {
		CK(cudaEventRecord(join[g], side[g]));
		CK(cudaStreamWaitEvent(0, join[g], 0));
	}
}

int main(int argc, char **argv)
{
	static const int shapes[][2] = {{2048, 1536}, {768, 2048}};
	static const char *const names[] = {"fc1/fwd", "fc2/fwd"};
	static const int groups[] = {1, 4, 8, 16, 32};
	static const int rows[] = {32, 128, 512, 2048};
	const size_t maxg = 32, maxm = 2048, maxk = 2048, maxn = 2048;
	__nv_bfloat16 *a, *w, *c;
	cudaEvent_t t0, t1, fork, join[MAX_STREAMS];
	cudaDeviceProp prop;
	FILE *out;
	int i, si, gi, ri, it, st;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUT.jsonl\n", argv[0]);
		return 2;
	}
	if (!(out = fopen(argv[1], "w"))) {
		perror(argv[1]);
		return 1;
	}
	CK(cudaGetDeviceProperties(&prop, 0));
	CK(cudaMalloc(&a, maxg * maxm * maxk * sizeof(*a)));
	CK(cudaMalloc(&w, maxg * maxk * maxn * sizeof(*w)));
	CK(cudaMalloc(&c, maxg * maxm * maxn * sizeof(*c)));
	fill<<<1024, 256>>>(a, maxg * maxm * maxk, 1u);
	fill<<<1024, 256>>>(w, maxg * maxk * maxn, 2u);
	CK(cudaGetLastError());
	CK(cudaDeviceSynchronize());
	for (i = 0; i < MAX_STREAMS; i++) {
		CK(cudaStreamCreateWithFlags(&side[i], cudaStreamNonBlocking));
		CB(cublasCreate(&handle[i]));
		CB(cublasSetStream(handle[i], side[i]));
		CK(cudaEventCreateWithFlags(&join[i], cudaEventDisableTiming));
	}
	CB(cublasCreate(&handle[MAX_STREAMS]));
	CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
	CK(cudaEventCreate(&t0));
	CK(cudaEventCreate(&t1));
	fprintf(out, "{\"type\":\"hello\",\"device\":\"%s\",\"sms\":%d,"
		"\"iters\":%d,\"warmup\":%d}\n", prop.name,
		prop.multiProcessorCount, ITERS, WARMUP);
	launches(out);
	for (si = 0; si < 2; si++)
	for (gi = 0; gi < 5; gi++)
	for (ri = 0; ri < 4; ri++)
	for (st = 0; st < 3; st++) {
		/* st 0: one stream, 1: MAX_STREAMS streams, 2: merged */
		struct set s = {a, w, c, groups[gi], rows[ri], shapes[si][1],
				shapes[si][0], st == 1 ? MAX_STREAMS : 1,
				st == 2};
		double h0, host;
		float ms;

		if ((groups[gi] == 1 && st != 0))
			continue;
		for (it = 0; it < WARMUP; it++)
			issue(&s, fork, join);
		CK(cudaDeviceSynchronize());
		CK(cudaEventRecord(t0, 0));
		h0 = mono_s();
		for (it = 0; it < ITERS; it++)
			issue(&s, fork, join);
		host = (mono_s() - h0) / ITERS;
		CK(cudaEventRecord(t1, 0));
		CK(cudaEventSynchronize(t1));
		CK(cudaEventElapsedTime(&ms, t0, t1));
		fprintf(out, "{\"type\":\"point\",\"op\":\"%s\",\"K\":%d,"
			"\"N\":%d,\"groups\":%d,\"m\":%d,\"method\":\"%s\","
			"\"streams\":%d,\"gpu_s\":%.9g,\"host_s\":%.9g}\n",
			names[si], s.k, s.n, s.groups, s.m,
			st == 2 ? "merged" : "per_expert", s.streams,
			ms * 1e-3 / ITERS, host);
		fflush(out);
	}
	fprintf(out, "{\"type\":\"end\"}\n");
	fclose(out);
	return 0;
}
