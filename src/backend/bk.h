/*
 * bk.h - the measurement backends' one small interface.
 *
 * A backend is a program of its own (llmsim-backend-mpi, -hip, -cuda),
 * built by its own compiler (mpicc, hipcc, nvcc), that times real
 * collectives, GEMMs and copies and prints what it measured as JSON lines
 * (the protocol: docs/measure.md). `llmsim measure` spawns it and stores
 * the points; nothing here uses the simulator, and the simulator uses
 * nothing here.
 *
 * Shape: bk_main.c owns the command line, the size sweep, the statistics
 * and the protocol; a driver (struct bk_driver: mpi.c, gpu.cu) owns the
 * library. Per point the driver runs warm-up iterations, then times each
 * iteration (the slowest rank's time, as the collective ends when its
 * last member does), then checks the result once as rccl-tests does.
 *
 * Exit status, shared with `llmsim measure`:
 *   0 done, 1 runtime failure (a library call failed, a result was
 *   wrong), 2 bad input, 3 no device (no GPU, or none the runtime can
 *   use), 4 a library is missing (RCCL / NCCL / rocBLAS / cuBLAS not
 *   found, or the runtime cannot be loaded).
 */
#ifndef LLMSIM_BACKEND_BK_H
#define LLMSIM_BACKEND_BK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
	BK_OK = 0,
	BK_FAIL = 1,
	BK_USAGE = 2,
	BK_NO_DEVICE = 3,
	BK_NO_LIBRARY = 4,
};

enum bk_op {
	BK_ALLREDUCE,
	BK_ALLGATHER,
	BK_REDUCESCATTER,
	BK_ALLTOALL,
	BK_ALLTOALLV,
	BK_BROADCAST,
	BK_REDUCE,
	BK_SENDRECV,
	BK_GEMM,			/* C = A B on one device */
	BK_COPY,			/* device (or host) memory copy */
	BK_OP_COUNT
};

extern const char *const bk_op_names[BK_OP_COUNT + 1];

/* nccl-tests' data types (the names `llmsim collective --dtype` takes). */
enum bk_dtype {
	BK_INT8,
	BK_UINT8,
	BK_INT32,
	BK_UINT32,
	BK_INT64,
	BK_UINT64,
	BK_HALF,
	BK_FLOAT,
	BK_DOUBLE,
	BK_BFLOAT16,
	BK_DTYPE_COUNT
};

extern const char *const bk_dtype_names[BK_DTYPE_COUNT + 1];
extern const size_t bk_dtype_size[BK_DTYPE_COUNT];	/* B per element */

/* One point to measure. */
struct bk_case {
	enum bk_op op;
	enum bk_dtype dtype;
	size_t bytes;			/* B: the collective's size as nccl-tests
					   counts it (all-gather: the output,
					   reduce-scatter: the input); copy:
					   the bytes copied; gemm: unused */
	size_t count;			/* elements of bytes */
	long m, n, k;			/* gemm: C (m x n) = A (m x k) B (k x n) */
	int root;			/* broadcast, reduce */
	int warmup, iters;		/* untimed and timed iterations */
	double budget_s;		/* s: fewer iterations (at least 3) when
					   iters of them would take longer */
	int check;			/* verify the result once */
};

/* What the driver measured for one point. */
struct bk_result {
	double *time_s;			/* s, iters entries: each iteration's
					   slowest rank (filled by the driver) */
	int iters;			/* timed iterations actually run */
	int checked;			/* 1 when the result was verified */
	long wrong;			/* elements that did not match */
};

/* Facts about the run, for the hello line; the driver fills them. */
struct bk_info {
	char host[128];			/* hostname of rank 0 */
	char device[256];		/* device model ("AMD Instinct MI300X",
					   "AMD EPYC ...") */
	char library[128];		/* "RCCL", "NCCL", "Open MPI" */
	char library_version[256];
	char runtime[128];		/* "HIP 5.2", "CUDA 12.4", "" */
	char library_path[512];		/* the file loaded, when dlopened */
	int ranks;			/* members of a collective */
	int nodes;			/* hosts (processes that drive GPUs) */
	int devices;			/* devices (GPUs) driven per process */
	int cpus;			/* online CPUs of rank 0's host */
	int is_root;			/* this process prints */
};

struct bk_opts;

/* A backend: the library behind one interface. Each call returns a
 * BK_* status; on failure it writes a one-line reason into err. */
/* Whose sizes a backend runs (bk_param_count): the test suite of the
 * library it drives, so its rows are that suite's rows. */
enum bk_tester {
	BK_RCCL_TESTS,			/* rccl-tests (hip; mpi, as documented) */
	BK_NCCL_TESTS,			/* nccl-tests (cuda) */
};

struct bk_driver {
	const char *name;		/* "mpi", "hip", "cuda" */
	enum bk_tester tester;		/* whose size rounding */
	/* Start the runtime and library; fill info. argc/argv for MPI. */
	int (*init)(int *argc, char ***argv, const struct bk_opts *o,
		    struct bk_info *info, char *err, size_t errlen);
	/* Whether the driver runs op with dtype (0: say why in err). */
	int (*supports)(enum bk_op op, enum bk_dtype dt, char *err,
			size_t errlen);
	/* Measure one point: warm-up, timed iterations, check. */
	int (*run)(const struct bk_case *c, struct bk_result *r, char *err,
		   size_t errlen);
	/* Whether every rank agrees the sweep may go on (rank 0 decides). */
	int (*agree)(int status);
	void (*finalize)(void);
};

/* Command-line options every backend shares (bk_main.c parses them). */
struct bk_opts {
	enum bk_op op;
	enum bk_dtype dtype;
	double min_B, max_B;		/* B, the sweep */
	double factor;			/* size multiplier per step */
	int warmup, iters;
	int check;
	double budget_s;		/* s per point: fewer iterations when
					   one takes longer than budget/iters */
	int gpus;			/* devices per process; 0 = all */
	int root;
	long m, n, k;			/* gemm: one shape (0: squares from
					   --min to --max as the dimension) */
	const char *lib_path;		/* --lib: the collective library */
	const char *blas_path;		/* --blas: the BLAS library */
};

/* The one entry point: parse argv, run the sweep, print JSON lines. */
int bk_main(const struct bk_driver *drv, int argc, char **argv);

/* Helpers for drivers. */

/* The value element i of rank r holds before a collective: small
 * integers, so every sum the check forms is exact in every dtype. */
double bk_fill_value(int rank, size_t i);

/* Timed iterations for a point whose first timed iteration took
 * first_s: c->iters, or fewer (at least 3) to stay within c->budget_s. */
int bk_iters_for(const struct bk_case *c, double first_s);

/* The busbw factor of op over p ranks, as nccl-tests (PERFORMANCE.md). */
double bk_busbw_factor(enum bk_op op, int p);

/* Whether op splits its buffer over the ranks (all-gather,
 * reduce-scatter, the all-to-alls): its count is per rank. */
int bk_split_op(enum bk_op op);

/* The elements per rank tester t runs op with for a size of n elements
 * over p ranks: its getCollByteCount's paramcount (the count column it
 * prints). A split op moves that times p; another op n. */
size_t bk_param_count(enum bk_tester t, enum bk_op op, enum bk_dtype dt,
		      size_t n, int p);

/* Write x as dtype into element i of buf. */
void bk_store(void *buf, enum bk_dtype dt, size_t i, double x);

/* Element i of buf, as a double. */
double bk_load(const void *buf, enum bk_dtype dt, size_t i);

/* The alltoallv pattern: elements rank src sends to dst, for ranks p and
 * a total of n elements per rank (the case's count: every rank sends and
 * receives the size, as in rccl-tests' and nccl-tests' alltoallv; sum
 * over dst = n for every src, and sum over src = n for every dst: a
 * Latin-square skew 1..p). */
size_t bk_a2av_count(size_t n, int p, int src, int dst);

/* Buffer sizes (elements) of c's op over p ranks (bk_data.c). */
void bk_buf_counts(const struct bk_case *c, int p, size_t *send_n,
		   size_t *recv_n);

/* Offset (elements) of rank's block for peer in its alltoallv send
 * buffer (sending) or receive buffer (!sending); n = count. */
size_t bk_a2av_displ(size_t n, int p, int rank, int peer, int sending);

/* Fill rank's buffers with the check's input (bk_data.c). */
void bk_fill(const struct bk_case *c, int rank, int p, void *send,
	     size_t send_n, void *recv, size_t recv_n);

/* Whether the check's sums fit c's dtype over p ranks. */
int bk_checkable(const struct bk_case *c, int p);

/* Elements of rank's recv that differ from what the call must give. */
long bk_count_wrong(const struct bk_case *c, int rank, int p,
		    const void *recv, size_t recv_n);

/* A "why" message in err; returns status. */
int bk_fail(char *err, size_t errlen, int status, const char *fmt, ...)
#ifdef __GNUC__
	__attribute__((format(printf, 4, 5)))
#endif
	;

#ifdef __cplusplus
}
#endif

#endif
