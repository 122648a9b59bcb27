/*
 * gpu.cu - the hip and cuda backends: one source, built by hipcc against
 * HIP (llmsim-backend-hip, driving RCCL and rocBLAS) and by nvcc against
 * CUDA (llmsim-backend-cuda, driving NCCL and cuBLAS); gpu_port.h maps
 * the runtime calls, coll_dl.h and blas_dl.h load the libraries at run
 * time.
 *
 * One process drives every GPU of its node (a stream each, the calls of
 * one collective inside ncclGroupStart/End, as rccl-tests' -g does).
 * Across nodes, built with MPI (BK_WITH_MPI), one process per node: rank
 * 0 makes the NCCL unique id and MPI_Bcast hands it to the others, which
 * join with ncclCommInitRank.
 *
 * Ops: the collectives (all-to-all and all-to-all-v as grouped send/recv,
 * as nccl-tests does), gemm on GPU 0 through cublasGemmEx /
 * rocblas_gemm_ex, and copy on GPU 0 (a grid-stride kernel moving 16 B
 * per thread and step: device memory bandwidth, read plus write).
 *
 * Timing: events recorded on each GPU's stream around each iteration;
 * an iteration's time is the slowest GPU's (and, across nodes, the
 * slowest process's: MPI_MAX); a barrier starts each iteration when
 * there are several processes. The result is checked once after timing,
 * as rccl-tests does (bk_data.c's values).
 *
 * Status: no GPU (or no driver) BK_NO_DEVICE; the library missing
 * BK_NO_LIBRARY; any library or runtime call failing BK_FAIL.
 */
#include "gpu_port.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bk.h"
#include "blas_dl.h"
#include "coll_dl.h"

#ifdef BK_WITH_MPI
#include <mpi.h>
#endif

#define MAX_GPUS 64

static struct {
	int ngpus;			/* GPUs this process drives */
	int nprocs, proc;		/* processes (nodes) and this one */
	int ranks;			/* members of a collective */
	int coll;			/* the op is a collective */
	struct nc_lib nc;
	nc_comm comm[MAX_GPUS];
	struct bl_lib bl;
	void *blas;			/* BLAS handle on GPU 0 */
	gpuStream_t stream[MAX_GPUS];
	gpuEvent_t start[MAX_GPUS], stop[MAX_GPUS];
} G;

/* A point's device buffers. */
struct dbufs {
	void *send[MAX_GPUS], *recv[MAX_GPUS];
	size_t send_n, recv_n;		/* elements */
	void *a, *b, *c;		/* gemm */
};

#define GPU_TRY(call, err, len) do {					\
		gpuError_t e_ = (call);					\
		if (e_ != gpuSuccess)					\
			return bk_fail(err, len, BK_FAIL, "%s: %s", #call,	\
				       gpuGetErrorString(e_));		\
	} while (0)

static int is_coll(enum bk_op op)
{
	return op != BK_GEMM && op != BK_COPY;
}

static int gpu_supports(enum bk_op op, enum bk_dtype dt, char *err,
			size_t errlen)
{
	if (op == BK_GEMM && dt != BK_FLOAT && dt != BK_HALF &&
	    dt != BK_BFLOAT16) {
		bk_fail(err, errlen, BK_USAGE, "gemm runs in float, half or "
			"bfloat16, not %s", bk_dtype_names[dt]);
		return 0;
	}
	return 1;
}

/* "CUDA 12.4" / "HIP 5.2" from the runtime's version code. */
static void runtime_text(char *out, size_t len)
{
	int rt = 0, drv = 0;

	gpuRuntimeGetVersion(&rt);
	gpuDriverGetVersion(&drv);
#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
	snprintf(out, len, "HIP %d.%d (driver %d)", rt / 10000000,
		 rt / 100000 % 100, drv);
#else
	snprintf(out, len, "CUDA %d.%d (driver %d.%d)", rt / 1000,
		 rt % 1000 / 10, drv / 1000, drv % 1000 / 10);
#endif
}

static void device_text(int ngpus, char *out, size_t len)
{
	gpuDeviceProp p;

	memset(&p, 0, sizeof(p));
	if (gpuGetDeviceProperties(&p, 0) != gpuSuccess)
		snprintf(p.name, sizeof(p.name), "unknown GPU");
#if defined(__HIPCC__) || defined(__HIP_PLATFORM_AMD__)
	snprintf(out, len, "%.160s (%.40s) x %d", p.name, p.gcnArchName,
		 ngpus);
#else
	snprintf(out, len, "%.200s (sm%d%d) x %d", p.name, p.major, p.minor,
		 ngpus);
#endif
}

static int start_mpi(int *argc, char ***argv)
{
#ifdef BK_WITH_MPI
	if (MPI_Init(argc, argv) != MPI_SUCCESS)
		return -1;
	MPI_Comm_size(MPI_COMM_WORLD, &G.nprocs);
	MPI_Comm_rank(MPI_COMM_WORLD, &G.proc);
#else
	(void)argc;
	(void)argv;
	G.nprocs = 1;
	G.proc = 0;
#endif
	return 0;
}

/* Count GPUs; BK_NO_DEVICE when the runtime has none to offer. */
static int find_gpus(const struct bk_opts *o, char *err, size_t errlen)
{
	int n = 0;
	gpuError_t e = gpuGetDeviceCount(&n);

	if (e != gpuSuccess)
		return bk_fail(err, errlen, BK_NO_DEVICE, "no GPU: %s reports "
			       "'%s'", BK_RUNTIME_NAME, gpuGetErrorString(e));
	if (n == 0)
		return bk_fail(err, errlen, BK_NO_DEVICE, "no GPU: %s sees 0 "
			       "devices", BK_RUNTIME_NAME);
	if (o->gpus > n || o->gpus > MAX_GPUS)
		return bk_fail(err, errlen, BK_USAGE, "--gpus %d: this node "
			       "has %d", o->gpus, n);
	G.ngpus = o->gpus ? o->gpus : n < MAX_GPUS ? n : MAX_GPUS;
	if (!is_coll(o->op))
		G.ngpus = 1;
	return BK_OK;
}

static int make_streams(char *err, size_t errlen)
{
	int i;

	for (i = 0; i < G.ngpus; i++) {
		GPU_TRY(gpuSetDevice(i), err, errlen);
		GPU_TRY(gpuStreamCreateWithFlags(&G.stream[i],
						 gpuStreamNonBlocking), err,
			errlen);
		GPU_TRY(gpuEventCreate(&G.start[i]), err, errlen);
		GPU_TRY(gpuEventCreate(&G.stop[i]), err, errlen);
	}
	return BK_OK;
}

static int nc_fail(nc_result r, const char *what, char *err, size_t errlen)
{
	return bk_fail(err, errlen, BK_FAIL, "%s: %s", what,
		       G.nc.GetErrorString ? G.nc.GetErrorString(r) : "failed");
}

/* The communicators: all local GPUs at once, or one per GPU of every
 * node with the id from rank 0. */
static int make_comms(char *err, size_t errlen)
{
	int devs[MAX_GPUS], i;
	nc_result r;

	for (i = 0; i < G.ngpus; i++)
		devs[i] = i;
	if (G.nprocs == 1) {
		r = G.nc.CommInitAll(G.comm, G.ngpus, devs);
		return r ? nc_fail(r, "ncclCommInitAll", err, errlen) : BK_OK;
	}
#ifdef BK_WITH_MPI
	{
		nc_unique_id id;

		memset(&id, 0, sizeof(id));
		if (G.proc == 0 && (r = G.nc.GetUniqueId(&id)) != 0)
			return nc_fail(r, "ncclGetUniqueId", err, errlen);
		MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
		G.nc.GroupStart();
		for (i = 0; i < G.ngpus; i++) {
			gpuSetDevice(i);
			r = G.nc.CommInitRank(&G.comm[i], G.ranks, id,
					      G.proc * G.ngpus + i);
			if (r) {
				G.nc.GroupEnd();
				return nc_fail(r, "ncclCommInitRank", err, errlen);
			}
		}
		r = G.nc.GroupEnd();
		return r ? nc_fail(r, "ncclCommInitRank", err, errlen) : BK_OK;
	}
#else
	return bk_fail(err, errlen, BK_USAGE, "built without MPI: one node "
		       "only");
#endif
}

static int load_libs(const struct bk_opts *o, struct bk_info *in, char *err,
		     size_t errlen)
{
	char why[1024];
	int code = 0;

	if (o->op == BK_GEMM) {
		if (bl_load(&G.bl, BK_BLAS_KIND, o->blas_path, BK_BLAS_LIBS,
			    why, sizeof(why)) != 0)
			return bk_fail(err, errlen, BK_NO_LIBRARY, "no BLAS: %s",
				       why);
		snprintf(in->library, sizeof(in->library), "%s",
			 BK_BLAS_KIND == BL_CUBLAS ? "cuBLAS" : "rocBLAS");
		snprintf(in->library_path, sizeof(in->library_path), "%s",
			 G.bl.path);
		return BK_OK;
	}
	if (!is_coll(o->op))
		return BK_OK;
	if (nc_load(&G.nc, o->lib_path, BK_COLL_LIBS, why, sizeof(why)) != 0)
		return bk_fail(err, errlen, BK_NO_LIBRARY, "no %s: %s",
			       BK_COLL_NAME, why);
	G.nc.GetVersion(&code);
	nc_version_text(code, in->library_version, sizeof(in->library_version));
	snprintf(in->library, sizeof(in->library), "%s", BK_COLL_NAME);
	snprintf(in->library_path, sizeof(in->library_path), "%s", G.nc.path);
	return BK_OK;
}

static int gpu_init(int *argc, char ***argv, const struct bk_opts *o,
		    struct bk_info *in, char *err, size_t errlen)
{
	int rc;

	memset(&G, 0, sizeof(G));
	if (start_mpi(argc, argv) != 0)
		return bk_fail(err, errlen, BK_NO_LIBRARY, "MPI_Init failed");
	in->is_root = G.proc == 0;
	/* The library first: loading it needs no GPU, so a host without
	 * either says both in turn (status 4, then 3). */
	if ((rc = load_libs(o, in, err, errlen)) != BK_OK ||
	    (rc = find_gpus(o, err, errlen)) != BK_OK)
		return rc;
	G.coll = is_coll(o->op);
	G.ranks = G.coll ? G.nprocs * G.ngpus : 1;
	if (o->op == BK_SENDRECV && G.ranks < 2)
		return bk_fail(err, errlen, BK_USAGE, "sendrecv needs at least "
			       "2 GPUs");
	if (o->root >= G.ranks)
		return bk_fail(err, errlen, BK_USAGE, "--root %d: only %d ranks",
			       o->root, G.ranks);
	if (gethostname(in->host, sizeof(in->host) - 1) != 0)
		snprintf(in->host, sizeof(in->host), "unknown");
	device_text(G.ngpus, in->device, sizeof(in->device));
	runtime_text(in->runtime, sizeof(in->runtime));
	in->ranks = G.ranks;
	in->nodes = G.nprocs;
	in->devices = G.ngpus;
	if ((rc = make_streams(err, errlen)) != BK_OK)
		return rc;
	if (o->op == BK_GEMM) {
		gpuSetDevice(0);
		if (G.bl.create(&G.blas) != 0 ||
		    G.bl.set_stream(G.blas, (void *)G.stream[0]) != 0)
			return bk_fail(err, errlen, BK_FAIL, "cannot create a "
				       "BLAS handle on GPU 0");
	}
	return G.coll ? make_comms(err, errlen) : BK_OK;
}

/* ------------------------------------------------------------------ */
/* Issuing one iteration                                               */

static int nc_type(enum bk_dtype dt)
{
	static const int map[BK_DTYPE_COUNT] = {
		NC_INT8, NC_UINT8, NC_INT32, NC_UINT32, NC_INT64, NC_UINT64,
		NC_FLOAT16, NC_FLOAT32, NC_FLOAT64, NC_BFLOAT16,
	};

	return map[dt];
}

static char *at(void *p, size_t elems, size_t es)
{
	return (char *)p + elems * es;
}

/* The calls of GPU i (global rank r) for one collective. */
static nc_result issue_one(const struct bk_case *c, struct dbufs *b, int i)
{
	int t = nc_type(c->dtype), r = G.proc * G.ngpus + i, p = G.ranks, j;
	size_t es = bk_dtype_size[c->dtype], per = c->count / (size_t)p;
	size_t n = c->count;	/* alltoallv: each rank sends n in all */
	nc_stream s = (nc_stream)G.stream[i];
	nc_comm cm = G.comm[i];
	nc_result e = 0;

	switch (c->op) {
	case BK_ALLREDUCE:
		return G.nc.AllReduce(b->send[i], b->recv[i], c->count, t,
				      NC_SUM, cm, s);
	case BK_ALLGATHER:
		return G.nc.AllGather(b->send[i], b->recv[i], per, t, cm, s);
	case BK_REDUCESCATTER:
		return G.nc.ReduceScatter(b->send[i], b->recv[i], per, t,
					  NC_SUM, cm, s);
	case BK_BROADCAST:
		return G.nc.Broadcast(b->recv[i], b->recv[i], c->count, t,
				      c->root, cm, s);
	case BK_REDUCE:
		return G.nc.Reduce(b->send[i], b->recv[i], c->count, t, NC_SUM,
				   c->root, cm, s);
	case BK_SENDRECV:
		e = G.nc.Send(b->send[i], c->count, t, (r + 1) % p, cm, s);
		return e ? e : G.nc.Recv(b->recv[i], c->count, t,
					 (r + p - 1) % p, cm, s);
	case BK_ALLTOALL:
		for (j = 0; j < p && !e; j++) {
			e = G.nc.Send(at(b->send[i], (size_t)j * per, es), per,
				      t, j, cm, s);
			if (!e)
				e = G.nc.Recv(at(b->recv[i], (size_t)j * per,
						 es), per, t, j, cm, s);
		}
		return e;
	case BK_ALLTOALLV:
		for (j = 0; j < p && !e; j++) {
			e = G.nc.Send(at(b->send[i], bk_a2av_displ(n, p, r, j, 1),
					 es), bk_a2av_count(n, p, r, j), t, j,
				      cm, s);
			if (!e)
				e = G.nc.Recv(at(b->recv[i], bk_a2av_displ(n, p,
						 r, j, 0), es),
					      bk_a2av_count(n, p, j, r), t, j,
					      cm, s);
		}
		return e;
	default:
		return 0;
	}
}

__global__ void copy_kernel(const uint4 *src, uint4 *dst, size_t n16,
			    const unsigned char *tail_src,
			    unsigned char *tail_dst, size_t tail)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	size_t stride = (size_t)gridDim.x * blockDim.x;

	for (; i < n16; i += stride)
		dst[i] = src[i];
	if (blockIdx.x == 0 && threadIdx.x < tail)
		tail_dst[threadIdx.x] = tail_src[threadIdx.x];
}

/* One iteration on every GPU; BK_* status. */
static int issue(const struct bk_case *c, struct dbufs *b, char *err,
		 size_t errlen)
{
	nc_result e = 0, g;
	int i;

	if (c->op == BK_COPY) {
		size_t n16 = c->bytes / 16, blocks = (n16 + 255) / 256;

		copy_kernel<<<(unsigned)(blocks > 65535 ? 65535 : blocks ? blocks : 1),
			256, 0, G.stream[0]>>>((const uint4 *)b->send[0],
					       (uint4 *)b->recv[0], n16,
					       (const unsigned char *)b->send[0] + n16 * 16,
					       (unsigned char *)b->recv[0] + n16 * 16,
					       c->bytes % 16);
		GPU_TRY(gpuGetLastError(), err, errlen);
		return BK_OK;
	}
	if (c->op == BK_GEMM) {
		enum bl_dtype dt = c->dtype == BK_FLOAT ? BL_F32 :
				   c->dtype == BK_HALF ? BL_F16 : BL_BF16;
		int st = bl_gemm(&G.bl, G.blas, dt, (int)c->m, (int)c->n,
				 (int)c->k, b->a, b->b, b->c);

		return st ? bk_fail(err, errlen, BK_FAIL, "GEMM %ld x %ld x %ld: "
				    "BLAS status %d", c->m, c->n, c->k, st)
			  : BK_OK;
	}
	G.nc.GroupStart();
	for (i = 0; i < G.ngpus && !e; i++)
		e = issue_one(c, b, i);
	g = G.nc.GroupEnd();
	if (e || g)
		return nc_fail(e ? e : g, bk_op_names[c->op], err, errlen);
	return BK_OK;
}

/* ------------------------------------------------------------------ */
/* Buffers, timing, check                                              */

static void free_bufs(struct dbufs *b)
{
	int i;

	for (i = 0; i < G.ngpus; i++) {
		gpuSetDevice(i);
		if (b->send[i])
			gpuFree(b->send[i]);
		if (b->recv[i])
			gpuFree(b->recv[i]);
	}
	gpuSetDevice(0);
	if (b->a)
		gpuFree(b->a);
	if (b->b)
		gpuFree(b->b);
	if (b->c)
		gpuFree(b->c);
	memset(b, 0, sizeof(*b));
}

static int alloc_bufs(const struct bk_case *c, struct dbufs *b, char *err,
		      size_t errlen)
{
	size_t es = bk_dtype_size[c->dtype];
	int i;

	memset(b, 0, sizeof(*b));
	if (c->op == BK_GEMM) {
		GPU_TRY(gpuMalloc(&b->a, (size_t)(c->m * c->k) * es), err, errlen);
		GPU_TRY(gpuMalloc(&b->b, (size_t)(c->k * c->n) * es), err, errlen);
		GPU_TRY(gpuMalloc(&b->c, (size_t)(c->m * c->n) * es), err, errlen);
		return BK_OK;
	}
	bk_buf_counts(c, G.ranks, &b->send_n, &b->recv_n);
	if (c->op == BK_COPY)
		b->send_n = b->recv_n = c->bytes / es;
	for (i = 0; i < G.ngpus; i++) {
		GPU_TRY(gpuSetDevice(i), err, errlen);
		GPU_TRY(gpuMalloc(&b->send[i], (b->send_n + 1) * es), err, errlen);
		GPU_TRY(gpuMalloc(&b->recv[i], (b->recv_n + 1) * es), err, errlen);
		GPU_TRY(gpuMemset(b->send[i], 0, (b->send_n + 1) * es), err,
			errlen);
		GPU_TRY(gpuMemset(b->recv[i], 0, (b->recv_n + 1) * es), err,
			errlen);
		/* the memsets run on the legacy stream: done before the
		 * non-blocking streams' first call */
		GPU_TRY(gpuDeviceSynchronize(), err, errlen);
	}
	return BK_OK;
}

/* Host bytes into GPU gpu's memory, in order on that GPU's stream, done
 * when it returns. Not a plain gpuMemcpy: from pageable memory that
 * returns once the bytes are staged, before the DMA has landed, and it
 * runs on the legacy default stream, which the non-blocking streams the
 * collectives and GEMMs run on do not wait for. The first run on an H200
 * (NCCL 2.28.9, CUDA 13.0) found the checked one-GPU all-reduce of 1 MiB
 * reading 85 elements of the previous contents. */
static int to_device(int gpu, void *dev, const void *h, size_t bytes,
		     char *err, size_t errlen)
{
	GPU_TRY(gpuSetDevice(gpu), err, errlen);
	GPU_TRY(gpuMemcpyAsync(dev, h, bytes, gpuMemcpyHostToDevice,
			       G.stream[gpu]), err, errlen);
	GPU_TRY(gpuStreamSynchronize(G.stream[gpu]), err, errlen);
	return BK_OK;
}

/* Host pattern into a device buffer of GPU 0 of n elements. */
static int upload(void *dev, size_t n, enum bk_dtype dt, int one, char *err,
		  size_t errlen)
{
	size_t es = bk_dtype_size[dt], i;
	void *h = malloc(n * es + 1);
	int rc;

	if (!h)
		return bk_fail(err, errlen, BK_FAIL, "out of host memory");
	for (i = 0; i < n; i++)
		bk_store(h, dt, i, one ? 1 : bk_fill_value(0, i));
	rc = to_device(0, dev, h, n * es, err, errlen);
	free(h);
	return rc;
}

static int sync_all(char *err, size_t errlen)
{
	int i;

	for (i = 0; i < G.ngpus; i++)
		GPU_TRY(gpuStreamSynchronize(G.stream[i]), err, errlen);
	return BK_OK;
}

/* One timed iteration: the slowest GPU's time into *t. */
static int timed(const struct bk_case *c, struct dbufs *b, double *t,
		 char *err, size_t errlen)
{
	float ms, worst = 0;
	int i, rc;

#ifdef BK_WITH_MPI
	if (G.nprocs > 1)
		MPI_Barrier(MPI_COMM_WORLD);
#endif
	for (i = 0; i < G.ngpus; i++)
		GPU_TRY(gpuEventRecord(G.start[i], G.stream[i]), err, errlen);
	if ((rc = issue(c, b, err, errlen)) != BK_OK)
		return rc;
	for (i = 0; i < G.ngpus; i++)
		GPU_TRY(gpuEventRecord(G.stop[i], G.stream[i]), err, errlen);
	for (i = 0; i < G.ngpus; i++) {
		GPU_TRY(gpuEventSynchronize(G.stop[i]), err, errlen);
		GPU_TRY(gpuEventElapsedTime(&ms, G.start[i], G.stop[i]), err,
			errlen);
		if (ms > worst)
			worst = ms;
	}
	*t = worst * 1e-3;
	return BK_OK;
}

/* The slowest process's value of each of n entries (in place). */
static void max_over_procs(double *v, int n)
{
#ifdef BK_WITH_MPI
	if (G.nprocs > 1)
		MPI_Allreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX,
			      MPI_COMM_WORLD);
#else
	(void)v;
	(void)n;
#endif
}

static int time_iters(const struct bk_case *c, struct dbufs *b,
		      struct bk_result *r, char *err, size_t errlen)
{
	double first;
	int i, n, rc;

	for (i = 0; i < c->warmup; i++)
		if ((rc = issue(c, b, err, errlen)) != BK_OK)
			return rc;
	if ((rc = sync_all(err, errlen)) != BK_OK ||
	    (rc = timed(c, b, &r->time_s[0], err, errlen)) != BK_OK)
		return rc;
	first = r->time_s[0];
	max_over_procs(&first, 1);
	n = bk_iters_for(c, first);
	for (i = 1; i < n; i++)
		if ((rc = timed(c, b, &r->time_s[i], err, errlen)) != BK_OK)
			return rc;
	max_over_procs(r->time_s, n);
	r->iters = n;
	return BK_OK;
}

/* GEMM with A = B = ones: every element of C is k, to the output
 * dtype's rounding (bfloat16 keeps 8 bits: 2^-7 relative covers it). */
static int check_gemm(const struct bk_case *c, struct dbufs *b,
		      struct bk_result *r, char *err, size_t errlen)
{
	size_t n = (size_t)(c->m * c->n), i, es = bk_dtype_size[c->dtype];
	double k = (double)c->k, tol = k / 128;
	void *h;
	int rc;

	if ((rc = upload(b->a, (size_t)(c->m * c->k), c->dtype, 1, err,
			 errlen)) != BK_OK ||
	    (rc = upload(b->b, (size_t)(c->k * c->n), c->dtype, 1, err,
			 errlen)) != BK_OK ||
	    (rc = issue(c, b, err, errlen)) != BK_OK ||
	    (rc = sync_all(err, errlen)) != BK_OK)
		return rc;
	if (!(h = malloc(n * es)))
		return bk_fail(err, errlen, BK_FAIL, "out of host memory");
	GPU_TRY(gpuMemcpy(h, b->c, n * es, gpuMemcpyDeviceToHost), err, errlen);
	for (i = 0; i < n; i++) {
		double d = bk_load(h, c->dtype, i) - k;

		r->wrong += d > tol || d < -tol;
	}
	free(h);
	r->checked = 1;
	return BK_OK;
}

/* Collectives and copy: bk_data.c's values in, the expected ones out. */
static int check_data(const struct bk_case *c, struct dbufs *b,
		      struct bk_result *r, char *err, size_t errlen)
{
	size_t es = bk_dtype_size[c->dtype];
	void *hs = malloc(b->send_n * es + 1), *hr = malloc(b->recv_n * es + 1);
	int i, rank, rc = BK_OK;

	if (!hs || !hr) {
		free(hs);
		free(hr);
		return bk_fail(err, errlen, BK_FAIL, "out of host memory");
	}
	for (i = 0; i < G.ngpus && rc == BK_OK; i++) {
		rank = G.proc * G.ngpus + i;
		bk_fill(c, rank, G.ranks, hs, b->send_n, hr, b->recv_n);
		rc = to_device(i, b->send[i], hs, b->send_n * es, err,
			       errlen);
		if (rc == BK_OK)
			rc = to_device(i, b->recv[i], hr, b->recv_n * es, err,
				       errlen);
	}
	if (rc == BK_OK)
		rc = issue(c, b, err, errlen);
	if (rc == BK_OK)
		rc = sync_all(err, errlen);
	for (i = 0; i < G.ngpus && rc == BK_OK; i++) {
		gpuSetDevice(i);
		if (gpuMemcpy(hr, b->recv[i], b->recv_n * es,
			      gpuMemcpyDeviceToHost) != gpuSuccess)
			rc = bk_fail(err, errlen, BK_FAIL, "gpuMemcpy failed");
		else
			r->wrong += bk_count_wrong(c, G.proc * G.ngpus + i,
						   G.ranks, hr, b->recv_n);
	}
	free(hs);
	free(hr);
	r->checked = 1;
	return rc;
}

static int gpu_run(const struct bk_case *c, struct bk_result *r, char *err,
		   size_t errlen)
{
	struct dbufs b;
	int rc = alloc_bufs(c, &b, err, errlen);

	if (rc == BK_OK && c->op == BK_GEMM) {
		rc = upload(b.a, (size_t)(c->m * c->k), c->dtype, 0, err, errlen);
		if (rc == BK_OK)
			rc = upload(b.b, (size_t)(c->k * c->n), c->dtype, 0, err,
				    errlen);
	}
	if (rc == BK_OK)
		rc = time_iters(c, &b, r, err, errlen);
	if (rc == BK_OK && c->check && bk_checkable(c, G.ranks))
		rc = c->op == BK_GEMM ? check_gemm(c, &b, r, err, errlen)
				      : check_data(c, &b, r, err, errlen);
#ifdef BK_WITH_MPI
	if (G.nprocs > 1)
		MPI_Allreduce(MPI_IN_PLACE, &r->wrong, 1, MPI_LONG, MPI_SUM,
			      MPI_COMM_WORLD);
#endif
	free_bufs(&b);
	return rc;
}

static int gpu_agree(int status)
{
#ifdef BK_WITH_MPI
	int worst = status;

	if (G.nprocs > 1)
		MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX,
			      MPI_COMM_WORLD);
	return worst;
#else
	return status;
#endif
}

static void gpu_finalize(void)
{
	int i;

	for (i = 0; i < G.ngpus; i++) {
		if (G.comm[i])
			G.nc.CommDestroy(G.comm[i]);
		if (G.stream[i]) {
			gpuSetDevice(i);
			gpuStreamDestroy(G.stream[i]);
			gpuEventDestroy(G.start[i]);
			gpuEventDestroy(G.stop[i]);
		}
	}
	if (G.blas)
		G.bl.destroy(G.blas);
	nc_unload(&G.nc);
	bl_unload(&G.bl);
#ifdef BK_WITH_MPI
	{
		int started = 0, ended = 0;

		MPI_Initialized(&started);
		MPI_Finalized(&ended);
		if (started && !ended)
			MPI_Finalize();
	}
#endif
	memset(&G, 0, sizeof(G));
}

static const struct bk_driver gpu_driver = {
	BK_FLAVOUR, BK_TESTER, gpu_init, gpu_supports, gpu_run, gpu_agree, gpu_finalize,
};

int main(int argc, char **argv)
{
	return bk_main(&gpu_driver, argc, argv);
}
