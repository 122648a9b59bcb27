/*
 * sweep_impl.h - what sweep_run.c (the worker pool) and sweep_exec.c
 * (one point) share. Private to src/sweep; not a contract.
 */
#ifndef LLMSIM_SWEEP_SWEEP_IMPL_H
#define LLMSIM_SWEEP_SWEEP_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "sweep.h"
#include "sweep_run.h"

struct arena;
struct cnode;
struct store;

struct sweep_ctx {
	const struct sweep *sw;
	const struct sweep_opts *o;
	const struct cnode *base;	/* the base job, references resolved */
	int64_t sweep_id;		/* sweeps.id in the database */
	struct store *st;		/* this process's connection */
};

/*
 * Run point idx: resolve, skip when stored, simulate, store. The
 * point's hash goes to hash (its resolved config's, or for an invalid
 * point the hash of its overrides). A failure is reported to d (stderr)
 * with the point's number; the diagnostics of an invalid point are its
 * stored reason, not printed.
 */
enum sweep_outcome sweep_point_run(struct sweep_ctx *c, uint64_t idx,
				   char hash[65], struct diag *d);

/*
 * Block SIGINT and SIGTERM (sweep_hold_stops) or restore the mask from
 * before the hold (sweep_free_stops). sweep_point_run returns with them
 * held (it holds them whenever it may store); the caller frees them
 * once the outcome is reported, so a stored point is never lost from
 * the report to a stop between its commit and its record.
 */
void sweep_hold_stops(void);
void sweep_free_stops(void);

/* Create or find the sweep's row (and its view) in c->st: c->sweep_id.
 * 0; -1 after reporting a database failure; -2 after reporting that the
 * database's sweep of this name has other axes (bad input). */
int sweep_store_begin(struct sweep_ctx *c, struct diag *d);

/*
 * Print the table of the count points idx[] (their outcomes and hashes
 * as the workers reported them; outcome SWEEP_OUTCOMES: not reached) to
 * c->o->out: the point, each axis's value, the outcome, and the stored
 * results (step time, throughput per GPU, MFU, memory per GPU) or the
 * first line of the reason it did not run. 0, or -1 after reporting.
 */
int sweep_summary(struct sweep_ctx *c, const uint64_t *idx,
		  const unsigned char *outcome, char (*hash)[65],
		  uint64_t count, struct diag *d);

/*
 * The first line of a table cell: s[0..len) (UTF-8) whole when it has at
 * most max characters (max >= 4), else its first max - 3 characters and
 * "...", cut between characters, never inside one. In a; NULL when out
 * of memory.
 */
const char *sweep_cut_text(struct arena *a, const char *s, size_t len,
			   size_t max);

#endif
