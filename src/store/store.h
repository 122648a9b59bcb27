/*
 * store.h - the results database (SQLite).
 *
 * results/llmsim.db by default (--db PATH elsewhere). The schema is
 * versioned: a `meta` table holds schema_version and store_open() applies
 * every migration newer than it, each in its own transaction, so an old
 * database upgrades in place and a newer one is refused with a clear
 * message. WAL mode; prepared statements only; one transaction per stored
 * result, so an interrupted sweep loses at most the result in flight.
 * Every row records the resolved config (JSON), its SHA-256 and the
 * llmsim version. The schema is documented in docs/results-store.md.
 *
 * Depends on SQLite, cJSON, diag.h, mem.h.
 */
#ifndef LLMSIM_STORE_STORE_H
#define LLMSIM_STORE_STORE_H

#include <stddef.h>
#include <stdint.h>

struct diag;
struct cJSON;
struct store;

/* Open (creating and migrating as needed) the database at path; creates
 * its directory if missing. NULL after reporting to d. */
struct store *store_open(const char *path, struct diag *d);

/* Open an existing database to read it (db views, db export, report):
 * read-only, so nothing is created, migrated or written and a read-only
 * file works. A missing path, a directory, an empty file, a foreign or
 * newer database are errors; an older one is read as it is (a note
 * says its newer views are missing). NULL after reporting to d. The
 * store_put*() functions must not be given it. */
struct store *store_open_readonly(const char *path, struct diag *d);

/* store_open_readonly, saying why it refused: *bad_input is 1 when the
 * file given is at fault (missing, a directory, not an SQLite or not an
 * llmsim database, empty, damaged or newer schema: the caller's input,
 * exit 2), 0 for a failure to read a good one (out of memory, an I/O or
 * lock error: exit 1). */
struct store *store_open_reader(const char *path, struct diag *d,
				int *bad_input);

/* How long store_open() waits for another process's lock (a parallel
 * sweep writing) before reporting the database as locked. */
#define STORE_BUSY_TIMEOUT_MS 10000	/* ms */

/* store_open() with another lock wait, in ms (0: fail at once if locked;
 * tests use it). */
struct store *store_open_timeout(const char *path, int busy_ms,
				 struct diag *d);
void store_close(struct store *st);

/* The schema version this build writes. */
int store_schema_version(void);

/* A stored run: what was asked and what came out. */
struct store_run {
	const char *command;		/* "run", "collective", ... */
	const char *kind;		/* config kind of config_json ("job", "system") */
	const char *config_json;	/* resolved config, canonical JSON */
	const char *config_hash;	/* its SHA-256, hex */
	const char *result_json;	/* the command's --json output */
	const char *version;		/* llmsim version (cli_version()) */
};

/* Step-simulation summary (columns for dashboards; NULL to skip). */
struct store_step {
	double step_time_s;		/* s */
	double tokens_per_s;		/* tokens/s, whole job */
	double mfu;			/* fraction */
	double tflops_per_gpu;		/* TFLOP/s */
	double peak_bytes_per_gpu;	/* B */
	int fits;			/* 1 if memory fits */
	double compute_s, exposed_comm_s, bubble_s, optimizer_s, other_s; /* s */
};

/* One row of a collective table (rccl-tests columns). */
struct store_coll_row {
	double size_B;			/* B */
	double count;			/* elements */
	const char *type;		/* "float", "bfloat16", ... */
	const char *op;			/* "allreduce", ... */
	uint32_t ranks;			/* group size */
	double time_s;			/* s */
	double algbw_Bps, busbw_Bps;	/* B/s */
	const char *algorithm;
	const char *protocol;
};

/* One layout of a plan's ranking (`llmsim plan`, a sweep with `plan:`). */
struct store_plan_row {
	int64_t rank;			/* 1 = the best */
	int64_t gpus, nodes;
	int64_t tp, pp, vpp, cp, ep, etp, dp;
	int64_t micro_batch_size;	/* sequences */
	const char *recompute;		/* "none", "selective", "full" */
	int64_t zero_stage;
	int sequence_parallel;		/* 0 or 1 */
	const char *schedule;		/* "1f1b", "interleaved", "gpipe" */
	int tp_comm_overlap;		/* 0 or 1 */
	int simulated;			/* 1: the numbers are a full run's */
	int on_front;			/* 1: on the plan's Pareto front */
	double step_time_s;		/* s */
	double tokens_per_s;		/* tokens/s, whole job */
	double mfu;			/* fraction */
	double tflops_per_gpu;		/* TFLOP/s */
	double peak_bytes_per_gpu;	/* B */
	int fits;			/* 0 or 1 */
	double compute_s, exposed_comm_s, bubble_s, optimizer_s, other_s; /* s */
	const char *bound;		/* "compute", "memory", "communication", "bubble" */
	double est_step_time_s;		/* s, the analytical tier's */
	int64_t est_rank;		/* the analytical tier's rank */
};

/* Store a plan (its run row, whose config is the job planned) and its
 * ranking in one transaction. The run id, or -1 after reporting. */
int64_t store_put_plan(struct store *st, const struct store_run *run,
		       const struct store_plan_row *rows, uint32_t nrows,
		       struct diag *d);

/*
 * Store one run with its optional step summary and collective rows in a
 * single transaction. Returns the new run id (> 0), or -1 after reporting
 * to d (the transaction is rolled back).
 */
int64_t store_put(struct store *st, const struct store_run *run,
		  const struct store_step *step,
		  const struct store_coll_row *rows, uint32_t nrows,
		  struct diag *d);

/* Where and how `llmsim measure` measured (the backend's hello line). */
struct store_meas_info {
	const char *backend;		/* "mpi", "hip", "cuda" */
	const char *system;		/* the system config, as given */
	const char *sets_json;		/* its --set overrides, a JSON array */
	const char *host, *device;	/* hostname; device model and count */
	const char *library, *library_version, *library_path;
	const char *runtime;		/* "CUDA 12.4 (driver 12.6)", "MPI 3.1" */
	int ranks, nodes, devices_per_node;
	int cpus;			/* online CPUs of the host (0: unknown) */
	const char *command;		/* the command line that measured */
	/* The stream stopped before its end line (the backend was killed,
	 * the file cut, or it stopped at an error line): 1; 0 = it ended.
	 * Stored as measure_runs.complete = !incomplete; read back as 1
	 * only where complete is 0 (NULL: stored before schema 9). */
	int incomplete;
	/* The backend's error line, "status N (reason): message"; NULL or
	 * "" = none (stored as NULL). */
	const char *error;
};

/* One measured point (a backend's point line). NaN = not applicable. */
struct store_meas_row {
	const char *op;			/* bk op name: "allreduce", "gemm", ... */
	const char *type;		/* dtype: "float", "bfloat16", ... */
	double size_B, count;		/* B, elements */
	uint32_t ranks;
	int root;			/* broadcast, reduce; -1 = none */
	int64_t m, n, k;		/* gemm; 0 = none */
	int iters;
	double time_s, time_min_s, time_max_s;	/* s: median, min, max */
	double algbw_Bps, busbw_Bps;	/* B/s (collectives; NaN otherwise) */
	double rate;			/* FLOP/s (gemm), B/s (copy), else NaN */
	const char *check;		/* "ok", "wrong", "skipped" */
};

/* A point in the backends' protocol 1 terms (every row stored before
 * schema 10) put in the current ones (docs/results-store.md): an
 * all-gather's, reduce-scatter's or all-to-all's count / ranks (the
 * buffer's elements -> per rank); an all-to-all-v, which sent size /
 * ranks from each rank, takes that size, count / ranks^2 and its rates
 * / ranks. Migration 10 does the same in SQL; measure --import reads
 * protocol 1 lines through it. 1 when r changed, else 0. */
int store_meas_from_v1(struct store_meas_row *r);

/* Store one measure run with its points (one transaction). The run id,
 * or -1 after reporting. */
int64_t store_put_measure(struct store *st, const struct store_run *run,
			  const struct store_meas_info *info,
			  const struct store_meas_row *rows, uint32_t nrows,
			  struct diag *d);

/* A measure run already stored with the same points (run->result_json,
 * the points as JSON) from the same place (info's host, device, library
 * path and runtime) for the same system (run->config_hash, info's
 * system and sets_json): its id (the oldest), 0 when none, or -1 after
 * reporting. The same file imported twice would otherwise be two runs,
 * counted twice by validate and calibrate. */
int64_t store_find_measure(struct store *st, const struct store_run *run,
			   const struct store_meas_info *info,
			   struct diag *d);

/* One row of `llmsim validate`. */
struct store_valid_row {
	const char *kind;		/* kernel, collective, training, measured */
	const char *table_id;		/* reference id, or "measure run N" */
	const char *case_id;		/* the row */
	const char *unit;		/* of measured and predicted */
	double measured, predicted;
	double error;			/* predicted / measured - 1 */
	int scored, in_sample;		/* 1/0 */
	double lo, hi;			/* predicted interval; NaN = none */
};

int64_t store_put_validation(struct store *st, const struct store_run *run,
			     const struct store_valid_row *rows, uint32_t nrows,
			     struct diag *d);

/* A stored measure run as read back (strings live until the callback
 * returns). */
struct store_meas_run {
	int64_t id;
	const char *created_at;
	const char *config_json;	/* the resolved system it ran on */
	struct store_meas_info info;
	const struct store_meas_row *rows;
	uint32_t nrows;
};

/*
 * Call fn for each measure run (only run `id` when id > 0), oldest
 * first. fn returns 0 to go on, else stops the walk with its value.
 * Returns the number of runs visited, fn's nonzero value, or -1 after
 * reporting (a run id that is not a measure run: -1 with a message).
 */
int64_t store_each_measure(struct store *st, int64_t id,
			   int (*fn)(void *ctx, const struct store_meas_run *r),
			   void *ctx, struct diag *d);

/* ---- reading (store_read.c) ----------------------------------------- */

enum store_type {
	STORE_NULL,
	STORE_INT,
	STORE_REAL,
	STORE_TEXT
};

/* One value of a result row. */
struct store_val {
	enum store_type type;
	int64_t i;			/* STORE_INT */
	double num;			/* STORE_INT and STORE_REAL, as a double */
	const char *text;		/* STORE_TEXT (UTF-8); NULL otherwise */
};

/* Called for each row: its n columns' names and values (valid during
 * the call). Return 0 to go on, anything else to stop. */
typedef int (*store_row_fn)(void *ctx, int n, const char *const *names,
			    const struct store_val *v);

/*
 * Run the read-only query sql (constant text; params[0..nparams-1] bound
 * as text to ?1, ?2, ...) and call fn for each row. 0, or -1 after
 * reporting (the query failed or would write).
 */
int store_select(struct store *st, const char *sql,
		 const char *const *params, int nparams, store_row_fn fn,
		 void *ctx, struct diag *d);

/*
 * Call fn for every row of view `view` (SELECT * FROM it, in its
 * natural order). The name must be a view of the database (llmsim's or
 * a sweep's): anything else is reported, with the views there are, and
 * returns -2. 0, or -1 after reporting a failure.
 */
int store_each_view_row(struct store *st, const char *view, store_row_fn fn,
			void *ctx, struct diag *d);

/* ---- sweeps (store_sweep.c) ----------------------------------------- */

/* A sweep as the database records it. */
struct store_sweep {
	const char *name;		/* unique in a database */
	const char *file;		/* the sweep file as given */
	const char *base;		/* the base job as written */
	uint64_t npoints;		/* points of the latest expansion */
	const char *version;		/* llmsim version of the latest run */
	size_t naxes;
	const char *const *axis_keys;	/* [naxes] dotted keys */
	const char *const *axis_columns;	/* [naxes] their view columns */
	const char *const *axis_kinds;	/* [naxes] "cases", "grid", "zip" */
};

/*
 * Record sweep sw, or find the one of the same name, and (re)create its
 * view v_sweep_NAME (one column per axis). Returns the sweep's id (> 0);
 * -2 after reporting that the database's sweep of that name has other
 * axes (rename the sweep, or use another database); -1 after reporting
 * a failure.
 */
int64_t store_sweep_begin(struct store *st, const struct store_sweep *sw,
			  struct diag *d);

enum store_point_status {
	STORE_POINT_OK,			/* ran: has a run */
	STORE_POINT_INVALID		/* bad input: has a reason */
};

/* One point of a sweep. */
struct store_point {
	int64_t sweep_id;
	uint64_t idx;			/* position in the sweep's expansion */
	const char *hash;		/* resolved-config SHA-256 (hex); for a
					 * point that did not resolve, that of
					 * its overrides */
	enum store_point_status status;
	const char *reason;		/* INVALID: the diagnostics */
	const char *axes_json;		/* {"system.nodes": 16, ...} */
};

/* 1 when sweep sweep_id has a point that ran with config hash `hash`, 0
 * when not, -1 after reporting. */
int store_point_done(struct store *st, int64_t sweep_id, const char *hash,
		     struct diag *d);

/*
 * Store point p in one transaction: for STORE_POINT_OK with its run and
 * step summary (run and step NULL otherwise). An earlier invalid row of
 * the same point (same axes values) is replaced. When the sweep already
 * has a point that ran with this hash (another point of the sweep that
 * resolves to the same job), nothing is stored and *dup is set. Returns
 * the run id (OK), 0 (INVALID or duplicate), or -1 after reporting.
 */
int64_t store_put_point(struct store *st, const struct store_point *p,
			const struct store_run *run,
			const struct store_step *step, int *dup,
			struct diag *d);

/* store_put_point() for a point of a sweep with `plan: true`: run is the
 * plan's winner (its job and step), step its summary, and rows[nrows]
 * the plan's ranking (plan_candidates of the same run), all in the one
 * transaction. */
int64_t store_put_plan_point(struct store *st, const struct store_point *p,
			     const struct store_run *run,
			     const struct store_step *step,
			     const struct store_plan_row *rows, uint32_t nrows,
			     int *dup, struct diag *d);

/* ---- merging (store_merge.c) ---------------------------------------- */

struct store_merge_stats {
	uint64_t runs_added;		/* runs copied */
	uint64_t runs_present;		/* runs the output already had */
	uint64_t points_added;		/* sweep points copied */
	uint64_t points_present;	/* sweep points already there */
};

/*
 * Merge the database at in_path into st in one transaction: runs with
 * every row that belongs to them (step summaries, collective rows and
 * any table with a run_id column), sweeps (matched by name; their axes
 * must agree) and their points. A run the output already has (same
 * command, config hash, llmsim version and result) is not copied again,
 * so merging twice, or merging overlapping shards, adds nothing twice.
 * The input is opened read-only and must be an llmsim database of the
 * same schema version (open it once with this llmsim to upgrade it).
 * 0, or -1 after reporting (nothing of this input is merged).
 */
int store_merge(struct store *st, const char *in_path,
		struct store_merge_stats *stats, struct diag *d);

/* Whether in_path is a results database store_merge can take (a regular
 * file, an llmsim database, not empty, not newer), opened read-only:
 * 0, or -1 after reporting. `db merge` checks every input before it
 * creates OUT. */
int store_merge_check(const char *in_path, struct diag *d);

#endif
