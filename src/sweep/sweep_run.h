/*
 * sweep_run.h - run a sweep's points into the results database: local
 * worker processes, a shard of a batch array, or one rank of an MPI job.
 *
 * Each worker is a process of its own (a fork of the caller: one
 * simulation context each, nothing shared but a point counter), takes
 * the next point, resolves its job, and
 *   - skips it when the sweep already holds a point with the same
 *     resolved-config hash (a resumed sweep);
 *   - stores it as invalid, with the diagnostics as its reason, when the
 *     job does not load or llmsim cannot simulate it;
 *   - else simulates one step and stores the run, its step summary and
 *     the sweep point in one transaction (with `plan:`, plans the job,
 *     and stores the winner's run and step, the plan's ranking and the
 *     point in one transaction: sweep_exec.c).
 * A killed sweep (kill -9 included) therefore loses only the points in
 * flight, and running it again completes the rest. Workers die with the
 * process that started them.
 *
 * Sharding. Shard I of N (1 <= I <= N) takes the points whose index is
 * I-1 modulo N, so N shards (or ranks) together run every point once;
 * each writes its own database and `llmsim db merge` joins them.
 *
 * Depends on sweep.h, config, run (step), store.
 */
#ifndef LLMSIM_SWEEP_SWEEP_RUN_H
#define LLMSIM_SWEEP_SWEEP_RUN_H

#include <stdint.h>
#include <stdio.h>

struct diag;
struct sweep;

/* What happened to a point. */
enum sweep_outcome {
	SWEEP_RAN,		/* simulated and stored */
	SWEEP_INVALID,		/* the job is bad input; stored with its reason */
	SWEEP_FAILED,		/* a runtime failure (I/O, memory); not stored */
	SWEEP_RESUMED,		/* already in the database */
	SWEEP_DUPLICATE,	/* same resolved job as another point */
	SWEEP_OUTCOMES
};

extern const char *const sweep_outcome_names[SWEEP_OUTCOMES];

struct sweep_opts {
	const char *db;			/* results database path */
	const char *data_root;		/* configs/ and workloads/ */
	const char *version;		/* llmsim's, stored with every run */
	int jobs;			/* worker processes, >= 1 */
	uint32_t shard, nshards;	/* shard `shard` (1-based) of nshards */
	int progress;			/* live progress line on stderr */
	FILE *out;			/* the summary table (NULL: none) */
	int throwaway;			/* db is removed after (--no-store) */
};

struct sweep_tally {
	uint64_t points;		/* points of this shard */
	uint64_t n[SWEEP_OUTCOMES];	/* by outcome */
	double seconds;			/* wall time */
	int stopped;			/* SIGINT or SIGTERM stopped it, or 0 */
};

/*
 * Run the points of sweep sw (loaded with sweep_load) that belong to
 * the shard, print the summary table to o->out and one line of totals
 * on stderr. Returns 0 when every point ran, was resumed or is stored
 * as invalid; 1 when some point failed at run time or a worker died
 * (the rest is stored: run again to finish); 2 after reporting bad
 * input that concerns the whole sweep (the base job does not load, the
 * database holds a sweep of this name with other axes). SIGINT and
 * SIGTERM stop it between points (workers at once while they simulate,
 * after reporting a point they were storing): it prints the
 * table and totals of what it did, says so, sets t->stopped and
 * returns 1; the caller dies of that signal (cli_sweep).
 */
int sweep_run(const struct sweep *sw, const struct sweep_opts *o,
	      struct sweep_tally *t, struct diag *d);

/* The results store's row (step_results) of a simulated step: what a
 * sweep point and `llmsim run` store. */
struct step_result;
struct store_step;
void sweep_step_row(const struct step_result *r, struct store_step *out);

/* Layout i of plan r's ranking as a row of the store's plan_candidates
 * (rank i + 1; on_front from r->front): what a sweep point with `plan:`
 * and `llmsim plan` store (sweep_plan_row.c). */
struct plan_result;
struct store_plan_row;
void sweep_plan_row(const struct plan_result *r, int64_t i,
		    struct store_plan_row *row);

#endif
