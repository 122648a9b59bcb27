/*
 * The GPU's clock under load: how fast a cuBLAS GEMM runs from idle
 * (the ramp down from the boost clock as power rises), and at steady
 * state when GEMMs alternate with HBM-bound or idle time (a training
 * step's mix). A calibration aid for llmsim's GPU rates (configs/gpus:
 * H100/H200 GEMM rates sit at the sustained clock; short benchmarks run
 * near boost), not part of the build: it needs an NVIDIA GPU and cuBLAS.
 * Run beside `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,...
 * -lms 20` to log clocks and power; each phase prints its wall-clock
 * start (CLOCK_REALTIME, ms) to align the two.
 *
 *   nvcc -O2 -gencode arch=compute_90,code=sm_90 -o measure-clock \
 *        scripts/measure-clock.cu -lcublas
 *   ./measure-clock OUT.jsonl
 *
 * Phases (each after `idle_s` of host sleep with the GPU idle):
 * - ramp: RAMP_GEMMS bf16 GEMMs of 8192^3 back to back, an event after
 *   each: every GEMM's time;
 * - duty: for `DUTY_S` of wall time, cycles of g GEMMs then a filler of
 *   f units: an HBM copy of 2 x 1 GiB (all SMs) or an idle wait (one
 *   block sleeping for f x 0.5 ms): every GEMM's time and the cycles';
 * - a copy-only phase (the filler alone).
 * - LLMSIM_CLOCK_SIDE=1 (after the above): phases with a copy kernel of
 *   k blocks of 1024 threads on its own stream for the whole phase (a
 *   collective's channel blocks beside the GEMMs): k 20 beside copies
 *   only, beside 3 GEMMs + 0.5 ms idle, 1 GEMM + 3 copies, 3 GEMMs + 3
 *   copies; k 66 beside 1 GEMM + 3 copies (a "side" line, then the
 *   phase's "duty" line).
 * With LLMSIM_CLOCK_WINDOW set, instead, a check of a sliding-window
 * power cap: BURST GEMMs (events after each) right after a 2 s phase of
 * idle, HBM copies, or 1 GEMM + 3 copies cycles; and after 1 s of GEMMs
 * then tau of idle (tau 10-250 ms): how long each burst holds the boost
 * clock ("type":"burst").
 */
#include "measure-cuda.cuh"

#include <unistd.h>

#define DIM 8192
#define COPY_B (1ull << 30)
#define RAMP_GEMMS 4000
#define DUTY_S 3.0
#define MAXEV 8192		/* > RAMP_GEMMS */

static cublasHandle_t h;
static __nv_bfloat16 *A, *B, *C;
static int4 *src, *dst;
static cudaEvent_t ev[MAXEV];

__global__ void copy_all(const int4 *s, int4 *d, size_t words)
{
	size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;

	for (; i < words; i += (size_t)gridDim.x * blockDim.x)
		d[i] = s[i];
}

/* LLMSIM_CLOCK_SIDE=1: a communication-like kernel beside the phases
 * (as NCCL's or DeepEP's channel blocks: `blocks` blocks of 1024
 * threads copying SIDE_B on their own stream for the whole phase), to
 * read the clock and power when a GEMM's neighbour also draws power. */
#define SIDE_B (256ull << 20)
static int4 *side_src, *side_dst;
static cudaStream_t side_stream;

__global__ void side_copy(const int4 *s, int4 *d, size_t words,
			  unsigned long long ns)
{
	unsigned long long t0 = gtimer();
	size_t i;

	do {
		for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
		     i < words; i += (size_t)gridDim.x * blockDim.x)
			d[i] = s[i];
	} while (gtimer() - t0 < ns);
}

static void side(int blocks, double s)
{
	side_copy<<<blocks, 1024, 0, side_stream>>>(side_src, side_dst,
		SIDE_B / sizeof(int4), (unsigned long long)(s * 1e9));
}

static void gemm(void)
{
	const float one = 1.0f, zero = 0.0f;

	CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, DIM, DIM, DIM, &one, B,
			CUDA_R_16BF, DIM, A, CUDA_R_16BF, DIM, &zero, C,
			CUDA_R_16BF, DIM, CUBLAS_COMPUTE_32F,
			CUBLAS_GEMM_DEFAULT));
}

static double wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void list(FILE *out, const char *key, const float *v, int n)
{
	int i;

	fprintf(out, ",\"%s\":[", key);
	for (i = 0; i < n; i++)
		fprintf(out, "%s%.4f", i ? "," : "", v[i]);
	fprintf(out, "]");
}

static void ramp(FILE *out, double idle_s)
{
	static float t[RAMP_GEMMS];
	double w;
	int i;

	usleep((useconds_t)(idle_s * 1e6));
	w = wall_ms();
	CK(cudaEventRecord(ev[0], 0));
	for (i = 0; i < RAMP_GEMMS; i++) {
		gemm();
		CK(cudaEventRecord(ev[i + 1], 0));
		if ((i + 1) % 256 == 0 && i + 1 >= 512)	/* queue <= 512 */
			CK(cudaEventSynchronize(ev[i + 1 - 256]));
	}
	CK(cudaDeviceSynchronize());
	for (i = 0; i < RAMP_GEMMS; i++)
		CK(cudaEventElapsedTime(&t[i], ev[i], ev[i + 1]));
	fprintf(out, "{\"type\":\"ramp\",\"m\":%d,\"n\":%d,\"k\":%d,"
		"\"idle_s\":%.1f,\"wall_start_ms\":%.1f", DIM, DIM, DIM,
		idle_s, w);
	list(out, "gemm_ms", t, i);
	fprintf(out, "}\n");
	fflush(out);
}

/* filler: "hbm" = f copies of COPY_B; "idle" = one block sleeping
 * f x 0.5 ms; g = 0: the filler alone */
static void duty(FILE *out, const char *filler, int g, int f, double idle_s)
{
	static float tg[MAXEV / 2], tc[MAXEV / 2];
	int nev = 0, ng = 0, nc = 0, i, j, cycles = 0;
	double w, t_end;
	int cyc_ev[MAXEV / 2];
	int gemm_ev[MAXEV / 2];

	usleep((useconds_t)(idle_s * 1e6));
	w = wall_ms();
	t_end = mono_s() + DUTY_S;
	CK(cudaEventRecord(ev[nev++], 0));
	while (mono_s() < t_end && nev + 2 * g + 2 < MAXEV &&
	       cycles < MAXEV / 2 - 1) {
		cyc_ev[cycles++] = nev - 1;
		for (i = 0; i < g; i++) {
			if (i > 0)
				CK(cudaEventRecord(ev[nev++], 0));
			gemm_ev[ng++] = nev - 1;
			gemm();
			CK(cudaEventRecord(ev[nev++], 0));
		}
		if (filler[0] == 'h')
			for (j = 0; j < f; j++)
				copy_all<<<264, 1024>>>(src, dst,
							COPY_B / sizeof(int4));
		else
			sleeper<<<1, 32>>>((unsigned long long)f * 500000ull);
		CK(cudaEventRecord(ev[nev++], 0));
		/* stay within ~20 ms of the GPU so the wall time means it */
		CK(cudaEventSynchronize(ev[nev > 8 ? nev - 8 : 0]));
	}
	cyc_ev[cycles] = nev - 1;
	CK(cudaDeviceSynchronize());
	for (i = 0; i < ng; i++)
		CK(cudaEventElapsedTime(&tg[i], ev[gemm_ev[i]],
					ev[gemm_ev[i] + 1]));
	for (i = 0; i < cycles; i++, nc++)
		CK(cudaEventElapsedTime(&tc[i], ev[cyc_ev[i]],
					ev[cyc_ev[i + 1]]));
	fprintf(out, "{\"type\":\"duty\",\"filler\":\"%s\",\"gemms\":%d,"
		"\"filler_units\":%d,\"idle_s\":%.1f,\"wall_start_ms\":%.1f",
		filler, g, f, idle_s, w);
	list(out, "gemm_ms", tg, ng);
	list(out, "cycle_ms", tc, nc);
	fprintf(out, "}\n");
	fflush(out);
}

#define BURST 150

/* the pre-phase, for secs of wall time, the host staying ~10 ms ahead:
 * 'i' idle, 'c' HBM copies, 'm' 1 GEMM + 3 copies, 'g' GEMMs */
static void phase(char kind, double secs)
{
	double t_end = mono_s() + secs;
	int n = 0, j;

	if (kind == 'i') {
		usleep((useconds_t)(secs * 1e6));
		return;
	}
	while (mono_s() < t_end) {
		if (kind == 'g' || kind == 'm')
			gemm();
		if (kind == 'c' || kind == 'm')
			for (j = 0; j < 3; j++)
				copy_all<<<264, 1024>>>(src, dst,
							COPY_B / sizeof(int4));
		CK(cudaEventRecord(ev[n % 16], 0));
		if (n >= 8)
			CK(cudaEventSynchronize(ev[(n - 8) % 16]));
		n++;
	}
}

/* BURST GEMMs right after whatever is queued, an event after each */
static void burst(FILE *out, const char *after, double tau_ms)
{
	static float t[BURST];
	double w = wall_ms();
	int i;

	CK(cudaEventRecord(ev[100], 0));
	for (i = 0; i < BURST; i++) {
		gemm();
		CK(cudaEventRecord(ev[101 + i], 0));
	}
	CK(cudaDeviceSynchronize());
	for (i = 0; i < BURST; i++)
		CK(cudaEventElapsedTime(&t[i], ev[100 + i], ev[101 + i]));
	fprintf(out, "{\"type\":\"burst\",\"after\":\"%s\","
		"\"tau_ms\":%.0f,\"wall_start_ms\":%.1f", after, tau_ms, w);
	list(out, "gemm_ms", t, BURST);
	fprintf(out, "}\n");
	fflush(out);
}

static void window_checks(FILE *out)
{
	static const double taus[] = {10, 30, 60, 120, 250};
	int i;

	phase('i', 2.0);
	burst(out, "idle", 0);
	phase('i', 2.0);
	phase('c', 2.0);
	burst(out, "copies", 0);
	phase('i', 2.0);
	phase('m', 2.0);
	burst(out, "1 gemm + 3 copies", 0);
	for (i = 0; i < 5; i++) {
		phase('g', 1.0);
		CK(cudaDeviceSynchronize());
		phase('i', taus[i] * 1e-3);
		burst(out, "gemms then idle", taus[i]);
	}
}

int main(int argc, char **argv)
{
	FILE *out;
	int i;

	if (argc != 2 || !(out = fopen(argv[1], "w"))) {
		fprintf(stderr, "usage: %s OUT.jsonl\n", argv[0]);
		return 2;
	}
	CK(cudaMalloc(&A, (size_t)DIM * DIM * 2));
	CK(cudaMalloc(&B, (size_t)DIM * DIM * 2));
	CK(cudaMalloc(&C, (size_t)DIM * DIM * 2));
	CK(cudaMalloc(&src, COPY_B));
	CK(cudaMalloc(&dst, COPY_B));
	CK(cudaMemset(src, 1, COPY_B));
	fill<<<1024, 256>>>(A, (size_t)DIM * DIM);
	fill<<<1024, 256>>>(B, (size_t)DIM * DIM);
	CB(cublasCreate(&h));
	for (i = 0; i < MAXEV; i++)
		CK(cudaEventCreate(&ev[i]));
	gemm();				/* cuBLAS's first-call setup */
	CK(cudaDeviceSynchronize());
	fprintf(out, "{\"type\":\"hello\",\"wall_ms\":%.1f}\n", wall_ms());
	if (getenv("LLMSIM_CLOCK_WINDOW")) {
		window_checks(out);
		fprintf(out, "{\"type\":\"end\",\"wall_ms\":%.1f}\n",
			wall_ms());
		fclose(out);
		return 0;
	}
	ramp(out, 3.0);
	duty(out, "hbm", 3, 3, 2.0);
	duty(out, "hbm", 1, 3, 2.0);
	duty(out, "hbm", 1, 10, 2.0);
	duty(out, "idle", 1, 3, 2.0);
	duty(out, "idle", 1, 9, 2.0);
	duty(out, "hbm", 0, 4, 2.0);
	ramp(out, 0.0);			/* back to back after the duty */
	if (getenv("LLMSIM_CLOCK_SIDE")) {
		static const int k[] = {20, 20, 20, 20, 66};
		static const int g[] = {0, 3, 1, 3, 1};
		static const int f[] = {4, 0, 3, 3, 3};

		CK(cudaMalloc(&side_src, SIDE_B));
		CK(cudaMalloc(&side_dst, SIDE_B));
		CK(cudaMemset(side_src, 1, SIDE_B));
		CK(cudaStreamCreateWithFlags(&side_stream,
					     cudaStreamNonBlocking));
		CK(cudaDeviceSynchronize());
		for (i = 0; i < 5; i++) {
			usleep(2000000);
			fprintf(out, "{\"type\":\"side\",\"blocks\":%d,"
				"\"wall_ms\":%.1f}\n", k[i], wall_ms());
			side(k[i], DUTY_S + 0.3);
			/* f = 0: GEMMs with a 0.5 ms idle wait a cycle */
			duty(out, f[i] ? "hbm" : "idle", g[i], f[i] ? f[i] : 1,
			     0.0);
			CK(cudaStreamSynchronize(side_stream));
		}
	}
	fprintf(out, "{\"type\":\"end\",\"wall_ms\":%.1f}\n", wall_ms());
	fclose(out);
	return 0;
}
