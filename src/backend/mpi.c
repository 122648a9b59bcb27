/*
 * mpi.c - the mpi backend: MPI collectives between the processes of one
 * MPI job (CPU hosts; in one node they go through shared memory), built
 * with mpicc, launched by `llmsim measure --backend mpi` through mpirun.
 *
 * Each op is the MPI call nccl-tests' op maps to, with nccl-tests' sizes
 * (bk_main.c): all-reduce MPI_Allreduce, all-gather MPI_Allgather of
 * size/p per rank, reduce-scatter MPI_Reduce_scatter_block of size/p
 * per rank, all-to-all MPI_Alltoall of size/p per peer, all-to-all-v
 * MPI_Alltoallv with bk_a2av_count's skew, broadcast MPI_Bcast, reduce
 * MPI_Reduce, send/recv MPI_Sendrecv to the next rank from the previous
 * one (nccl-tests' pattern), copy memcpy on every rank at once (the host
 * analogue of the GPU copy kernel: per-rank memory bandwidth under load).
 *
 * Timing: every iteration starts after MPI_Barrier; a rank's time is
 * MPI_Wtime around the call; an iteration's time is the slowest rank's
 * (MPI_MAX over ranks after the loop). Out-of-place buffers, touched
 * before timing so page faults are not measured.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bk.h"

static int rank, nranks;

struct bufs {
	void *send, *recv;
	size_t send_n, recv_n;		/* elements */
	int *scounts, *sdispls, *rcounts, *rdispls;	/* alltoallv */
};

static MPI_Datatype mpi_type(enum bk_dtype dt)
{
	switch (dt) {
	case BK_INT8: return MPI_INT8_T;
	case BK_UINT8: return MPI_UINT8_T;
	case BK_INT32: return MPI_INT32_T;
	case BK_UINT32: return MPI_UINT32_T;
	case BK_INT64: return MPI_INT64_T;
	case BK_UINT64: return MPI_UINT64_T;
	case BK_FLOAT: return MPI_FLOAT;
	case BK_DOUBLE: return MPI_DOUBLE;
	default: return MPI_UINT16_T;	/* half, bfloat16: moved, not reduced */
	}
}

static int reduces(enum bk_op op)
{
	return op == BK_ALLREDUCE || op == BK_REDUCESCATTER || op == BK_REDUCE;
}

static int mpi_supports(enum bk_op op, enum bk_dtype dt, char *err,
			size_t errlen)
{
	if (op == BK_GEMM) {
		bk_fail(err, errlen, BK_USAGE, "the mpi backend does not run "
			"gemm (it measures collectives and copy on CPU hosts)");
		return 0;
	}
	if (reduces(op) && (dt == BK_HALF || dt == BK_BFLOAT16)) {
		bk_fail(err, errlen, BK_USAGE, "MPI has no %s reduction: use "
			"float, double or an integer type for %s",
			bk_dtype_names[dt], bk_op_names[op]);
		return 0;
	}
	return 1;
}

/* "model name" of /proc/cpuinfo, and the online CPU count. */
static void cpu_model(char *out, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512], *v;
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	snprintf(out, len, "CPU");
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0 ||
		    !(v = strchr(line, ':')))
			continue;
		v += 1 + (v[1] == ' ');
		v[strcspn(v, "\n")] = '\0';
		snprintf(out, len, "%s", v);
		break;
	}
	if (f)
		fclose(f);
	if (cpus > 0) {
		size_t n = strlen(out);

		snprintf(out + n, len - n, " (%ld CPUs)", cpus);
	}
}

/* Distinct processor names among the ranks. */
static int count_nodes(void)
{
	char name[MPI_MAX_PROCESSOR_NAME], *all;
	int len, i, j, nodes = 0;

	memset(name, 0, sizeof(name));
	MPI_Get_processor_name(name, &len);
	all = calloc((size_t)nranks, MPI_MAX_PROCESSOR_NAME);
	if (!all)
		return 1;
	MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
		      MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
	for (i = 0; i < nranks; i++) {
		for (j = 0; j < i; j++)
			if (strcmp(all + (size_t)i * MPI_MAX_PROCESSOR_NAME,
				   all + (size_t)j * MPI_MAX_PROCESSOR_NAME) == 0)
				break;
		nodes += j == i;
	}
	free(all);
	return nodes;
}

static int mpi_init(int *argc, char ***argv, const struct bk_opts *o,
		    struct bk_info *in, char *err, size_t errlen)
{
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len, major, minor;

	if (MPI_Init(argc, argv) != MPI_SUCCESS)
		return bk_fail(err, errlen, BK_NO_LIBRARY, "MPI_Init failed");
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	in->is_root = rank == 0;
	in->ranks = nranks;
	in->nodes = count_nodes();
	in->devices = (nranks + in->nodes - 1) / in->nodes;
	if (gethostname(in->host, sizeof(in->host) - 1) != 0)
		snprintf(in->host, sizeof(in->host), "unknown");
	cpu_model(in->device, sizeof(in->device));
	MPI_Get_library_version(lib, &len);
	/* "Open MPI v4.1.4, package: ..., ident: ...": the first part. */
	lib[strcspn(lib, "\n,")] = '\0';
	snprintf(in->library_version, sizeof(in->library_version), "%s", lib);
	snprintf(in->library, sizeof(in->library), "%s",
		 strncmp(lib, "Open MPI", 8) == 0 ? "Open MPI" :
		 strncmp(lib, "MPICH", 5) == 0 ? "MPICH" : "MPI");
	MPI_Get_version(&major, &minor);
	snprintf(in->runtime, sizeof(in->runtime), "MPI %d.%d", major, minor);
	if ((o->op == BK_SENDRECV) && nranks < 2)
		return bk_fail(err, errlen, BK_USAGE, "sendrecv needs at least "
			       "2 ranks");
	if (o->root >= nranks)
		return bk_fail(err, errlen, BK_USAGE, "--root %d: only %d ranks",
			       o->root, nranks);
	return BK_OK;
}

static void free_bufs(struct bufs *b)
{
	free(b->send);
	free(b->recv);
	free(b->scounts);
	free(b->sdispls);
	free(b->rcounts);
	free(b->rdispls);
	memset(b, 0, sizeof(*b));
}

/* alltoallv counts and displacements (elements). */
static int a2av_layout(struct bufs *b, size_t n)
{
	size_t p = (size_t)nranks;
	int j;

	b->scounts = calloc(p, sizeof(int));
	b->sdispls = calloc(p, sizeof(int));
	b->rcounts = calloc(p, sizeof(int));
	b->rdispls = calloc(p, sizeof(int));
	if (!b->scounts || !b->sdispls || !b->rcounts || !b->rdispls)
		return -1;
	for (j = 0; j < nranks; j++) {
		b->scounts[j] = (int)bk_a2av_count(n, nranks, rank, j);
		b->rcounts[j] = (int)bk_a2av_count(n, nranks, j, rank);
		b->sdispls[j] = (int)bk_a2av_displ(n, nranks, rank, j, 1);
		b->rdispls[j] = (int)bk_a2av_displ(n, nranks, rank, j, 0);
	}
	return 0;
}

static int alloc_bufs(const struct bk_case *c, struct bufs *b)
{
	size_t es = bk_dtype_size[c->dtype];

	memset(b, 0, sizeof(*b));
	bk_buf_counts(c, nranks, &b->send_n, &b->recv_n);
	if (c->op == BK_ALLTOALLV &&
	    a2av_layout(b, c->count) != 0)
		return -1;
	/* One element at least, so the pointers are valid at size 0. */
	b->send = malloc((b->send_n ? b->send_n : 1) * es);
	b->recv = malloc((b->recv_n ? b->recv_n : 1) * es);
	if (!b->send || !b->recv)
		return -1;
	memset(b->send, 0, b->send_n * es);
	memset(b->recv, 0, b->recv_n * es);
	return 0;
}

/* The call itself. */
static void op_call(const struct bk_case *c, struct bufs *b)
{
	MPI_Datatype t = mpi_type(c->dtype);
	int n = (int)c->count, per = n / nranks;

	switch (c->op) {
	case BK_ALLREDUCE:
		MPI_Allreduce(b->send, b->recv, n, t, MPI_SUM, MPI_COMM_WORLD);
		break;
	case BK_ALLGATHER:
		MPI_Allgather(b->send, per, t, b->recv, per, t, MPI_COMM_WORLD);
		break;
	case BK_REDUCESCATTER:
		MPI_Reduce_scatter_block(b->send, b->recv, per, t, MPI_SUM,
					 MPI_COMM_WORLD);
		break;
	case BK_ALLTOALL:
		MPI_Alltoall(b->send, per, t, b->recv, per, t, MPI_COMM_WORLD);
		break;
	case BK_ALLTOALLV:
		MPI_Alltoallv(b->send, b->scounts, b->sdispls, t, b->recv,
			      b->rcounts, b->rdispls, t, MPI_COMM_WORLD);
		break;
	case BK_BROADCAST:
		/* In place on every rank; the root's data in recv. */
		MPI_Bcast(b->recv, n, t, c->root, MPI_COMM_WORLD);
		break;
	case BK_REDUCE:
		MPI_Reduce(b->send, b->recv, n, t, MPI_SUM, c->root,
			   MPI_COMM_WORLD);
		break;
	case BK_SENDRECV:
		MPI_Sendrecv(b->send, n, t, (rank + 1) % nranks, 0, b->recv, n,
			     t, (rank + nranks - 1) % nranks, 0, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
		break;
	case BK_COPY:
		memcpy(b->recv, b->send, c->bytes);
		break;
	default:
		break;
	}
}

/* Each iteration's time on this rank, into t; the slowest rank's after
 * the reduction. Returns the iterations run. */
static int time_iters(const struct bk_case *c, struct bufs *b, double *t)
{
	double t0, first;
	int i, n;

	for (i = 0; i < c->warmup; i++)
		op_call(c, b);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	op_call(c, b);
	t[0] = MPI_Wtime() - t0;
	MPI_Allreduce(&t[0], &first, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	n = bk_iters_for(c, first);
	for (i = 1; i < n; i++) {
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = MPI_Wtime();
		op_call(c, b);
		t[i] = MPI_Wtime() - t0;
	}
	MPI_Allreduce(MPI_IN_PLACE, t, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return n;
}

/* Elements wrong on all ranks together. */
static long check(const struct bk_case *c, struct bufs *b)
{
	long wrong, all = 0;

	bk_fill(c, rank, nranks, b->send, b->send_n, b->recv, b->recv_n);
	MPI_Barrier(MPI_COMM_WORLD);
	op_call(c, b);
	wrong = bk_count_wrong(c, rank, nranks, b->recv, b->recv_n);
	MPI_Allreduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	return all;
}

static int mpi_run(const struct bk_case *c, struct bk_result *r, char *err,
		   size_t errlen)
{
	struct bufs b;
	int ok = 1, all;

	if (c->count > INT32_MAX)
		return bk_fail(err, errlen, BK_USAGE, "%zu elements: more than "
			       "MPI's int count", c->count);
	ok = alloc_bufs(c, &b) == 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all) {
		free_bufs(&b);
		return bk_fail(err, errlen, BK_FAIL, "out of memory for %zu B "
			       "buffers", c->bytes);
	}
	r->iters = time_iters(c, &b, r->time_s);
	if (c->check && bk_checkable(c, nranks)) {
		r->checked = 1;
		r->wrong = check(c, &b);
	}
	free_bufs(&b);
	return BK_OK;
}

static int mpi_agree(int status)
{
	int worst = status;

	MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return worst;
}

static void mpi_finalize(void)
{
	int started = 0, ended = 0;

	MPI_Initialized(&started);
	MPI_Finalized(&ended);
	if (started && !ended)
		MPI_Finalize();
}

static const struct bk_driver mpi_driver = {
	.name = "mpi",
	.tester = BK_RCCL_TESTS,	/* docs/measure.md: rccl-tests' sizes */
	.init = mpi_init,
	.supports = mpi_supports,
	.run = mpi_run,
	.agree = mpi_agree,
	.finalize = mpi_finalize,
};

int main(int argc, char **argv)
{
	return bk_main(&mpi_driver, argc, argv);
}
