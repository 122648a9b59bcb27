/*
 * Host (CPU) time to issue one GEMM, by how it is issued: an empty
 * kernel launch, cublasGemmEx, and cuBLASLt the way Transformer Engine's
 * cublas_gemm issues each GEMM of its per-expert loop (a matmul
 * descriptor and its attributes, four matrix layouts, a preference,
 * cublasLtMatmulAlgoGetHeuristic, cublasLtMatmul, then everything
 * destroyed: NVIDIA/TransformerEngine common/gemm/cublaslt_gemm.cu),
 * against cuBLASLt with all of that made once (only cublasLtMatmul per
 * call), and the heuristic call alone. The GPU is kept busy by a
 * sleeping kernel queued first, so the host never waits for it: the
 * time of a batch of calls over its count is the host's cost of one.
 * A calibration aid for llmsim's host model (src/models/train_host.c;
 * workloads/frameworks host: gemm), not part of the build.
 *
 *   nvcc -O2 -gencode arch=compute_90,code=sm_90 -o measure-gemm-host \
 *        scripts/measure-gemm-host.cu -lcublasLt -lcublas
 *   ./measure-gemm-host OUT.jsonl
 */
#include "measure-cuda.cuh"
#include <cublasLt.h>

#define BATCH 200
#define TRIES 7
#define WS_B (32u << 20)

static cublasHandle_t h;
static cublasLtHandle_t lt;
static __nv_bfloat16 *A, *B, *C;
static void *ws;
static cudaStream_t st;
static int M, N, K;

__global__ void empty(void) {}

struct lt_gemm {
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, c, d;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t res;
};

/* row-major C[M, N] = A[M, K] B[K, N] as column-major C^T = B^T A^T */
static void lt_make(struct lt_gemm *g)
{
	cublasOperation_t tn = CUBLAS_OP_N;
	size_t wsb = WS_B;
	int found = 0;

	CB(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	CB(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSA,
					  &tn, sizeof(tn)));
	CB(cublasLtMatmulDescSetAttribute(g->op, CUBLASLT_MATMUL_DESC_TRANSB,
					  &tn, sizeof(tn)));
	CB(cublasLtMatrixLayoutCreate(&g->a, CUDA_R_16BF, N, K, N));
	CB(cublasLtMatrixLayoutCreate(&g->b, CUDA_R_16BF, K, M, K));
	CB(cublasLtMatrixLayoutCreate(&g->c, CUDA_R_16BF, N, M, N));
	CB(cublasLtMatrixLayoutCreate(&g->d, CUDA_R_16BF, N, M, N));
	CB(cublasLtMatmulPreferenceCreate(&g->pref));
	CB(cublasLtMatmulPreferenceSetAttribute(g->pref,
		CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
	CB(cublasLtMatmulAlgoGetHeuristic(lt, g->op, g->a, g->b, g->c, g->d,
					  g->pref, 1, &g->res, &found));
	if (!found) {
		fprintf(stderr, "no cuBLASLt algorithm\n");
		exit(1);
	}
}

static void lt_run(struct lt_gemm *g)
{
	const float one = 1.0f, zero = 0.0f;

	CB(cublasLtMatmul(lt, g->op, &one, B, g->a, A, g->b, &zero, C, g->c,
			  C, g->d, &g->res.algo, ws, WS_B, st));
}

static void lt_free(struct lt_gemm *g)
{
	cublasLtMatmulPreferenceDestroy(g->pref);
	cublasLtMatrixLayoutDestroy(g->a);
	cublasLtMatrixLayoutDestroy(g->b);
	cublasLtMatrixLayoutDestroy(g->c);
	cublasLtMatrixLayoutDestroy(g->d);
	cublasLtMatmulDescDestroy(g->op);
}

static struct lt_gemm cached;

static void call(int how)
{
	const float one = 1.0f, zero = 0.0f;
	struct lt_gemm g;

	switch (how) {
	case 0:
		empty<<<1, 32, 0, st>>>();
		break;
	case 1:
		CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, B,
				CUDA_R_16BF, N, A, CUDA_R_16BF, K, &zero, C,
				CUDA_R_16BF, N, CUBLAS_COMPUTE_32F,
				CUBLAS_GEMM_DEFAULT));
		break;
	case 2:				/* TE's cublas_gemm */
		lt_make(&g);
		lt_run(&g);
		lt_free(&g);
		break;
	case 3:
		lt_run(&cached);
		break;
	case 4:				/* descriptors + heuristic only */
		lt_make(&g);
		lt_free(&g);
		break;
	}
}

static const char *const names[] = {"empty_launch", "cublas_gemm_ex",
				    "cublaslt_te_style", "cublaslt_cached",
				    "cublaslt_setup_heuristic_only"};

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const int shapes[][3] = {{128, 1536, 2048}, {2048, 1536, 2048},
					{4096, 4096, 4096}};
	double t[TRIES], t0;
	FILE *out;
	int s, how, r, i;

	if (argc != 2 || !(out = fopen(argv[1], "w"))) {
		fprintf(stderr, "usage: %s OUT.jsonl\n", argv[0]);
		return 2;
	}
	CK(cudaMalloc(&A, (size_t)4096 * 4096 * 2));
	CK(cudaMalloc(&B, (size_t)4096 * 4096 * 2));
	CK(cudaMalloc(&C, (size_t)4096 * 4096 * 2));
	CK(cudaMalloc(&ws, WS_B));
	CK(cudaMemset(A, 0, (size_t)4096 * 4096 * 2));
	CK(cudaMemset(B, 0, (size_t)4096 * 4096 * 2));
	CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
	CB(cublasCreate(&h));
	CB(cublasSetStream(h, st));
	CB(cublasSetWorkspace(h, ws, WS_B));
	CB(cublasLtCreate(&lt));
	fprintf(out, "{\"type\":\"hello\",\"batch\":%d,\"tries\":%d}\n",
		BATCH, TRIES);
	for (s = 0; s < 3; s++) {
		M = shapes[s][0];
		N = shapes[s][1];
		K = shapes[s][2];
		lt_make(&cached);
		for (how = 0; how < 5; how++) {
			for (i = 0; i < 3; i++)		/* warm-up */
				call(how);
			CK(cudaStreamSynchronize(st));
			for (r = 0; r < TRIES; r++) {
				/* the GPU busy well past the batch */
				sleeper<<<1, 32, 0, st>>>(100000000ull);
				t0 = mono_s();
				for (i = 0; i < BATCH; i++)
					call(how);
				t[r] = (mono_s() - t0) / BATCH;
				CK(cudaStreamSynchronize(st));
			}
			qsort(t, TRIES, sizeof(t[0]), cmp);
			fprintf(out, "{\"type\":\"point\",\"how\":\"%s\","
				"\"m\":%d,\"n\":%d,\"k\":%d,"
				"\"host_s_median\":%.9g,\"host_s_min\":%.9g,"
				"\"host_s_max\":%.9g}\n", names[how], M, N, K,
				t[TRIES / 2], t[0], t[TRIES - 1]);
			fflush(out);
		}
		lt_free(&cached);
	}
	fprintf(out, "{\"type\":\"end\"}\n");
	fclose(out);
	return 0;
}
