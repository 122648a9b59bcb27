/*
 * sweep_mpi.h - a sweep as an MPI job: `mpirun -n R llmsim sweep ...`.
 *
 * Under an MPI launcher (Open MPI's mpirun, MPICH's or Intel's hydra,
 * srun with PMIx) with more than one rank, rank r runs shard r+1 of R
 * into a database of its own (DB.rank-r), and at the end rank 0 waits
 * for every rank, merges their databases into DB (store_merge: no
 * duplicates) and removes them. Every rank exits with the worst status
 * of all ranks. A single rank, or no launcher, is a plain sweep.
 *
 * MPI support is compiled in when the build finds mpicc (LLMSIM_MPI);
 * without it, a sweep started by a launcher with several ranks is
 * refused with a message rather than run R times over.
 *
 * Depends on sweep_run.h, store.h; MPI when LLMSIM_MPI.
 */
#ifndef LLMSIM_SWEEP_SWEEP_MPI_H
#define LLMSIM_SWEEP_SWEEP_MPI_H

#include "sweep_run.h"

struct arena;
struct diag;

struct sweep_mpi {
	int active;			/* ranks > 1 under MPI */
	int rank, size;
	const char *final_db;		/* what rank 0 merges into */
	int initialized;		/* MPI_Init was called */
};

/* 1 when this build has MPI. */
int sweep_mpi_built(void);

/*
 * Detect an MPI launch and, with several ranks, turn o into this rank's
 * shard writing its own database (strings in a). Returns 0; 1 after
 * reporting bad usage (--shard under mpirun, or a launch with several
 * ranks of a build without MPI); -1 after reporting a failure.
 */
int sweep_mpi_begin(struct sweep_mpi *m, struct sweep_opts *o,
		    struct arena *a, struct diag *d);

/* Finish: with MPI active, agree on the worst status, rank 0 merges.
 * Returns this process's exit status (rc is the sweep's). */
int sweep_mpi_end(struct sweep_mpi *m, int rc, struct diag *d);

#endif
