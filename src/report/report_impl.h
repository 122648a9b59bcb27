/*
 * report_impl.h - what the report's files share: the context, the rows
 * they read from v_runs, and small formatting helpers. Private to
 * src/report; not a contract.
 */
#ifndef LLMSIM_REPORT_REPORT_IMPL_H
#define LLMSIM_REPORT_REPORT_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "report.h"
#include "store/store.h"
#include "svg.h"

struct arena;

struct rep {
	struct store *st;
	struct arena *a;		/* everything read lives here */
	struct diag *d;
	FILE *out;
	size_t plots;			/* figures written */
	size_t nid;			/* for unique figure ids */
};

/* The step breakdown parts, in v_runs' column order. */
#define REP_PARTS 5
extern const char *const rep_part_cols[REP_PARTS];	/* "compute_s", ... */
extern const char *const rep_part_names[REP_PARTS];	/* "compute", ... */

/* Memory parts per GPU: the REP_MEM_COLS of v_runs, then the rest of
 * the peak (an inference or serving run's KV cache pool: v_runs has no
 * column for it; 0 for a training step, whose parts sum to its peak). */
#define REP_MEM_COLS 5
#define REP_MEM (REP_MEM_COLS + 1)
extern const char *const rep_mem_cols[REP_MEM_COLS];	/* "weights_bytes", ... */
extern const char *const rep_mem_names[REP_MEM];

/* One step result as the report uses it (a row of v_runs). */
struct rep_run {
	int64_t run_id;
	const char *label;		/* "job: 64 x h100, tp 4 pp 4 dp 4" */
	double step_s;			/* s */
	double part_s[REP_PARTS];	/* s */
	double tokens_per_s_per_gpu;	/* tokens/s */
	double mem_B[REP_MEM];		/* B per GPU */
	double peak_B, usable_B;	/* B per GPU */
	int fits;
};

/* The column list of v_runs the report reads into a struct rep_run
 * (SELECT REP_RUN_COLS FROM v_runs ...). */
extern const char REP_RUN_COLS[];

/* Read one v_runs row selected with REP_RUN_COLS into r (strings in the
 * arena); cols[] and v[] as store_select passes them. 0 or -1 (OOM). */
int rep_run_read(struct rep *R, int n, const struct store_val *v,
		 struct rep_run *r);

/* Run a query; rows go to fn. 0 or -1 after reporting. */
int rep_select(struct rep *R, const char *sql, const char *const *params,
	       int nparams, store_row_fn fn, void *ctx);

/* Does the database have a table or view called name? */
int rep_has(struct rep *R, const char *name);

/* A value of a row as text in the arena: the text, an integer written
 * out, else ""; sets *oom when the arena is full. */
const char *rep_text(struct rep *R, const struct store_val *v, int *oom);

/* A time unit for values up to max_s: its name ("ms") and how many of
 * it make a second (1e3). */
const char *rep_time_unit(double max_s, double *per_s);

/* "12.3 ms" (4 significant digits) into buf. */
const char *rep_time(double s, char *buf, size_t len);

/* "12.3 GB" into buf. */
const char *rep_bytes(double b, char *buf, size_t len);

/* A unique figure id "fig-N-what" (in the arena). */
const char *rep_fig_id(struct rep *R, const char *what);

/* Stacked horizontal breakdown bars of n runs, one per row. */
void rep_breakdown_plot(struct rep *R, const struct rep_run *runs, size_t n,
			const char *title);

/* Memory per GPU against the usable capacity, one row per run. */
void rep_memory_plot(struct rep *R, const struct rep_run *runs, size_t n,
		     const char *title);

/* Sections. Each returns 0 or -1 after reporting. */
int rep_plans(struct rep *R);
int rep_sweeps(struct rep *R);
int rep_collectives(struct rep *R);
int rep_validation(struct rep *R);

/* <h2> and a paragraph, escaped. */
void rep_heading(struct rep *R, const char *h, const char *para);

#endif
