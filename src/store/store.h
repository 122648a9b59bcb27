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

#include <stdint.h>

struct diag;
struct cJSON;
struct store;

/* Open (creating and migrating as needed) the database at path; creates
 * its directory if missing. NULL after reporting to d. */
struct store *store_open(const char *path, struct diag *d);

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

/* One layout of a plan's ranking (`llmsim plan`). */
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

/* Store one measure run with its points (one transaction). The run id,
 * or -1 after reporting. */
int64_t store_put_measure(struct store *st, const struct store_run *run,
			  const struct store_meas_info *info,
			  const struct store_meas_row *rows, uint32_t nrows,
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

#endif
