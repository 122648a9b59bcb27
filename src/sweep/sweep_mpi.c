/*
 * sweep_mpi.c - a sweep split over the ranks of an MPI job (sweep_mpi.h).
 *
 * Only four MPI calls are needed: Init, Comm_rank/Comm_size, one
 * Allreduce (the worst exit status, which is also the barrier before
 * rank 0 merges) and Finalize. Each rank's database is its own file, so
 * ranks never contend for a lock and the sweep works the same on a
 * shared filesystem where SQLite's locking is unreliable.
 */
#include "sweep_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef LLMSIM_MPI
#include <mpi.h>
#endif

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "store/store.h"

/* Environment variables that MPI launchers set in every rank. */
static const char *const launch_vars[] = {
	"OMPI_COMM_WORLD_SIZE",		/* Open MPI */
	"PMI_SIZE",			/* MPICH, Intel MPI (hydra) */
	"PMIX_RANK",			/* PMIx: srun --mpi=pmix, prrte */
	"MV2_COMM_WORLD_SIZE",		/* MVAPICH2 */
};

static int launched(void)
{
	size_t i;

	for (i = 0; i < sizeof(launch_vars) / sizeof(launch_vars[0]); i++)
		if (getenv(launch_vars[i]))
			return 1;
	return 0;
}

#ifndef LLMSIM_MPI
/* The launcher's rank count when it says (1 when it does not). */
static long env_size(void)
{
	const char *v = getenv("OMPI_COMM_WORLD_SIZE");

	if (!v)
		v = getenv("PMI_SIZE");
	if (!v)
		v = getenv("MV2_COMM_WORLD_SIZE");
	return v ? atol(v) : 1;
}
#endif

int sweep_mpi_built(void)
{
#ifdef LLMSIM_MPI
	return 1;
#else
	return 0;
#endif
}

/* This rank's database: DB.rank-R. */
static const char *rank_db(struct arena *a, const char *db, int rank)
{
	return arena_printf(a, "%s.rank-%d", db, rank);
}

int sweep_mpi_begin(struct sweep_mpi *m, struct sweep_opts *o,
		    struct arena *a, struct diag *d)
{
	memset(m, 0, sizeof(*m));
	m->size = 1;
	if (!launched())
		return 0;
#ifdef LLMSIM_MPI
	if (MPI_Init(NULL, NULL) != MPI_SUCCESS) {
		diag_error(d, NULL, 0, 0, "MPI_Init failed");
		return -1;
	}
	m->initialized = 1;
	MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &m->size);
#else
	if (env_size() > 1) {
		diag_error(d, NULL, 0, 0, "started by an MPI launcher with %ld "
			   "ranks, but this llmsim was built without MPI (no "
			   "mpicc when it was built): every rank would run the "
			   "whole sweep. Rebuild with MPI installed, or run "
			   "each rank with --shard I/N and merge with 'llmsim "
			   "db merge'", env_size());
		return 1;
	}
	return 0;
#endif
	if (m->size == 1)
		return 0;
	if (o->nshards != 1) {
		diag_error(d, "--shard", 1, 1, "with mpirun every rank is a shard "
			   "already; leave --shard out");
		return 1;
	}
	m->active = 1;
	m->final_db = o->db;
	o->db = rank_db(a, o->db, m->rank);
	o->shard = (uint32_t)m->rank + 1;
	o->nshards = (uint32_t)m->size;
	o->out = NULL;		/* ranks would interleave their tables */
	o->progress = 0;
	if (!o->db) {
		diag_oom(d);
		return -1;
	}
	/* A rank database left by an interrupted run resumes too: keep it. */
	return 0;
}

#ifdef LLMSIM_MPI
static void remove_db(const char *path)
{
	static const char *const tails[] = { "", "-wal", "-shm" };
	char buf[4096];
	size_t i;

	for (i = 0; i < 3; i++) {
		snprintf(buf, sizeof(buf), "%s%s", path, tails[i]);
		(void)unlink(buf);
	}
}

/* Rank 0: merge every rank's database into the final one. 0 or 1. */
static int merge_ranks(struct sweep_mpi *m, struct diag *d)
{
	struct store_merge_stats st = { 0, 0, 0, 0 };
	struct store *out = store_open(m->final_db, d);
	struct arena a;
	int r, rc = 0;

	if (!out)
		return 1;
	arena_init(&a);
	for (r = 0; r < m->size && rc == 0; r++) {
		const char *in = rank_db(&a, m->final_db, r);

		if (!in || store_merge(out, in, &st, d) != 0)
			rc = 1;
	}
	store_close(out);
	for (r = 0; r < m->size && rc == 0; r++)
		remove_db(rank_db(&a, m->final_db, r));
	if (rc == 0)
		fprintf(stderr, "llmsim: merged %d ranks into %s: %llu runs "
			"added, %llu points added (%llu already there)\n",
			m->size, m->final_db,
			(unsigned long long)st.runs_added,
			(unsigned long long)st.points_added,
			(unsigned long long)st.points_present);
	else
		fprintf(stderr, "llmsim: the rank databases %s.rank-* are kept; "
			"merge them with 'llmsim db merge %s %s.rank-*'\n",
			m->final_db, m->final_db, m->final_db);
	arena_release(&a);
	return rc;
}
#endif

int sweep_mpi_end(struct sweep_mpi *m, int rc, struct diag *d)
{
#ifdef LLMSIM_MPI
	int worst = rc;

	if (!m->initialized)
		return rc;
	if (m->active) {
		MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
		if (m->rank == 0 && worst != 2) {
			int mr = merge_ranks(m, d);

			if (mr > worst)
				worst = mr;
		}
	}
	MPI_Finalize();
	return worst;
#else
	(void)m;
	(void)d;
	return rc;
#endif
}
