/*
 * valid.h - predicted against measured: the tables `llmsim validate`
 * prints, stores and gates, and how their rows are made.
 *
 * Sources of measurements, one kind each:
 *   kernel      results/reference/kernels/NAME.yaml: GEMM, attention,
 *               BabelStream and memory kernels (valid_kernels.c)
 *   collective  results/reference/collectives/NAME.yaml: rccl-tests /
 *               nccl-tests tables (valid_coll.c)
 *   training    results/reference/training/cases.tsv (gated) and
 *               extra-cases.tsv (shown): step times (valid_train.c)
 *   moe, cp     the same for results/reference/moe and .../cp: MoE and
 *               context-parallel training steps (valid_train.c)
 *   dispatch    results/reference/ep/cases.tsv (gated) and
 *               extra-cases.tsv: MoE dispatch/combine bandwidth, DeepEP's
 *               logical count (valid_ep.c)
 *   measured    what `llmsim measure` stored in a database
 *               (valid_meas.c)
 *   inference   results/reference/inference/cases.tsv (gated) and
 *               extra-cases.tsv (shown): serving throughput
 *               (valid_infer.c)
 *   latency     the same files' single-request latency cases
 *
 * A row's error is predicted / measured - 1 of the quantity its table
 * shows: a rate for kernels, collectives (bus bandwidth) and measured
 * points (+ = llmsim faster than measured), a time for training cases
 * (+ = llmsim slower). Rows outside what a table scores (under
 * min_time, marked `scored: false`, sizes outside 1 KiB - 8 GiB, a
 * measured 0.00) are shown and not counted.
 *
 * In-sample: a row whose case (its table's id, or for training its case
 * id) is named by some `fitted_on:` in configs/ (schema.h) measured a
 * constant the model uses, so it does not test the model; summaries
 * give independent rows apart, and the headline is theirs.
 *
 * This is the application layer's engine: it uses config, gpu, network,
 * models, run, serve and store; the CLI (cli_validate.c, cli_calibrate.c)
 * drives it.
 */
#ifndef LLMSIM_CALIB_VALID_H
#define LLMSIM_CALIB_VALID_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct cnode;
struct config_ctx;
struct job_spec;
struct diag;
struct net;
struct store;
struct store_meas_row;
struct gpu_spec;
struct store_meas_run;
struct system_spec;

enum valid_kind {
	VK_KERNEL,
	VK_COLLECTIVE,
	VK_TRAINING,
	VK_MOE,			/* MoE training steps (results/reference/moe) */
	VK_CP,			/* context-parallel steps (reference/cp) */
	VK_DISPATCH,		/* MoE dispatch/combine (reference/ep) */
	VK_MEASURED,
	VK_INFERENCE,
	VK_LATENCY,
	VK_COUNT
};

extern const char *const valid_kind_names[VK_COUNT + 1];

struct valid_row {
	char label[112];		/* what was measured */
	double measured, predicted;	/* in the table's unit */
	double error;			/* predicted / measured - 1 */
	double size_B;			/* collectives: the size (large-size
					   gate), else 0 */
	double lo, hi;			/* predicted interval; NaN: none */
	int scored;			/* counts in the statistics */
	int in_sample;			/* its case was fitted on */
	int failed;			/* no prediction (reported): a miss */
	char note[64];			/* algorithm/protocol, why not scored */
	const char *why;		/* a longer reason it misses, printed
					   under it (arena); NULL: none */
};

struct valid_table {
	enum valid_kind kind;
	char id[96];			/* case or table id ("measure run 3") */
	char title[256];		/* what and where */
	const char *unit;		/* "GB/s", "TFLOP/s", "TB/s", "s" */
	int is_time;			/* error of a time (training), not a rate */
	int gated;			/* 0: shown only (extra cases) */
	struct valid_row *rows;		/* mem_alloc'd */
	size_t n, cap;
};

/* Every table of one validation. */
struct valid_set {
	struct valid_table *t;		/* mem_alloc'd */
	size_t n, cap;
	const char **fitted;		/* case ids some fitted_on names
					   (arena) */
	size_t nfitted, fitted_cap;
};

/* Gates on a table's scored rows; NaN = none. Fractions. */
struct valid_gate {
	double median_abs;		/* median |error| */
	double median_abs_large;	/* the same at >= 64 MB (collectives) */
	double bias_abs;		/* |median signed error| */
	double max_abs;			/* largest |error| */
};

/* A table's numbers (its scored rows, all or independent only). */
struct valid_stats {
	size_t n;			/* scored rows */
	double median, median_abs, p90_abs, max_abs;	/* fractions */
	size_t nlarge;			/* of them >= 64 MB (collectives) */
	double median_abs_large;
	size_t nwith_interval, ninside;	/* rows with an interval, and in it */
};

/* A new table at the end of set (NULL after reporting OOM). */
struct valid_table *valid_table_add(struct valid_set *set,
				    enum valid_kind kind, struct diag *d);

/* A new row at the end of t, zeroed but lo = hi = NaN, scored = 1. */
struct valid_row *valid_row_add(struct valid_table *t, struct diag *d);

/* Mark row v of case id as one that did not run (not scored, failed,
 * note "FAILED") and say why on stderr. */
void valid_row_failed(struct valid_row *v, const char *id, const char *why);

/* The first "error:" line that err (a case's diagnostics, rewound here;
 * NULL: none) holds, cut to 199 characters and without its newline, into
 * buf; buf unchanged when there is none but still cut at a newline. */
void valid_first_error(FILE *err, char *buf, size_t len);

/* Room for row n of a case array p of *capp elements of elem bytes
 * (mem_realloc'd, doubled, 64 at first): the array, moved or not, or
 * NULL after reporting that memory ran out (p stays the caller's to
 * free). A case file holds any number of rows. */
void *valid_case_room(void *p, int *capp, int n, size_t elem,
		      struct diag *d);

/* A reference table's measured value: the whole of text (blanks around
 * it allowed) a finite number above 0, into *out; else 0 (atof took
 * '9026 tok/s' as 9026 and 'inf' as a measurement: every row -100 %). */
int valid_parse_measured(const char *text, double *out);

/* Any other number of a reference table (a size, a count, a time): the
 * whole of text (blanks around it allowed), finite, >= lo and, when
 * whole is set, an integer, into *out; else 0 (atof read '8x' as 8,
 * 'nan' and '1e999' as values, and atol '1e3' as 1). */
int valid_parse_number(const char *text, double lo, int whole, double *out);

/* A reference file's mapping map (what: "collective table", "gemm row")
 * holds only the keys in keys (NULL-terminated): each other key is an
 * error at its file:line:col, with the closest known key as "did you
 * mean" (a typo such as 'weigths: cold' or 'scord: false' was read as
 * absent: the table priced warm, the row scored). 0, or -1 after
 * reporting every unknown key. */
int valid_check_keys(const struct cnode *map, const char *const *keys,
		     const char *what, struct diag *d);

/* A gemm file's power regime (valid_power.c): on, its rows' calls start
 * after an idle spell, warmup_calls before timed_calls, the row's time
 * the timed calls' mean under the GPU's power model. */
struct valid_power {
	int on;
	double warmup_calls, timed_calls;
};

/* p from root's power_before, warmup_calls and timed_calls (all absent:
 * off) for a file of kind on g. 0, or -1 after an error at a key. */
int valid_power_read(const struct cnode *root, const char *kind,
		     const struct gpu_spec *g, struct valid_power *p,
		     struct diag *d);

/* g's gemm_accumulator_stages from root's accumulator_stages (1 or 2;
 * absent: g's own), only in a file of kind gemm. 0, or -1 after an error
 * at the key (valid_power.c). */
int valid_stages_read(const struct cnode *root, const char *kind,
		      struct gpu_spec *g, struct diag *d);

/* The timed calls of row (its own timed_calls or p's) into *timed. 0, or
 * -1 after an error at its timed_calls. */
int valid_power_row_calls(const struct cnode *row,
			  const struct valid_power *p, double *timed,
			  struct diag *d);

/* A row's predicted time (s) from its time at burst_matrix_clock and at
 * sustained_matrix_clock: sustained_s when p is off. */
double valid_power_time_s(const struct gpu_spec *g,
			  const struct valid_power *p, double timed,
			  double burst_s, double sustained_s);

/* map's key, when present, a scalar true or false: 1 or 0; def when
 * absent; -1 after an error at its value ('flase' and 'True ' were read
 * as not false). */
int valid_get_bool(const struct cnode *map, const char *key, int def,
		   struct diag *d);

/* Where case i of a pool keeps its prediction: value (NaN: none) and
 * why (its error, why_len bytes). */
struct valid_slot {
	double *value;
	char *why;
	size_t why_len;
};

/* The cases of one reference file, predicted by valid_pool_run. */
struct valid_pool {
	const char *file;		/* for progress: "cases.tsv", ... */
	int n;				/* cases 0 .. n - 1 */
	void *ctx;
	int (*wanted)(void *ctx, int i);	/* NULL: every case */
	void (*run)(void *ctx, int i);		/* predict i into its slot */
	void (*slot)(void *ctx, int i, struct valid_slot *s);
};

/* Predict p's wanted cases, in jobs worker processes (fork; at most 16)
 * or, with jobs <= 1, in this one; every slot starts NaN with "its
 * worker process ended without a result", which stays where a worker
 * died. Progress lines on d every 10 s. 0, or -1 when no worker could
 * start (reported). */
int valid_pool_run(const struct valid_pool *p, int jobs, struct diag *d);

/* The job of reference case file path, loaded into cx's arena (it lives
 * as long as that arena); NULL after reporting to cx's diag. */
struct job_spec *valid_load_job(struct config_ctx *cx, const char *path);

void valid_set_release(struct valid_set *set);

/* Whether case id was fitted on (set->fitted). */
int valid_is_fitted(const struct valid_set *set, const char *id);

/* Every case id that a `fitted_on:` names in the YAML files under
 * DATA_ROOT/configs (recursively), into set->fitted. 0 or -1. */
int valid_load_fitted(struct valid_set *set, struct config_ctx *cx);

/* The same for one file (a calibration overlay given by path). */
int valid_load_fitted_file(struct valid_set *set, struct config_ctx *cx,
			   const char *path);

/* Sources. Each adds its tables to set; 0, or -1 after reporting (a
 * bad reference file is bad input: d->errors says so). */
/* sets: --set overrides applied to every kernel file's GPU preset
 * (what-ifs while fitting a GPU's efficiencies). */
int valid_kernels(struct valid_set *set, struct config_ctx *cx,
		  const char *dir, const char *const *sets, size_t nsets);
int valid_collectives(struct valid_set *set, struct config_ctx *cx,
		      const char *dir);
/* jobs: worker processes for the cases (1 = in this one);
 * kind: VK_TRAINING, VK_MOE or VK_CP (the tables' kind). */
int valid_training(struct valid_set *set, struct config_ctx *cx,
		   const char *dir, int jobs, enum valid_kind kind);
int valid_dispatch(struct valid_set *set, struct config_ctx *cx,
		   const char *dir);

/* The inference cases of dir/cases.tsv (gated tables) and
 * dir/extra-cases.tsv (tables shown, not gated; an absent file has no
 * cases): the throughput tables, the latency tables, or both; jobs:
 * worker processes (1 = in this one). */
int valid_inference(struct valid_set *set, struct config_ctx *cx,
		    const char *dir, int jobs, int throughput, int latency);

/* Options of the measured source. */
struct valid_meas_opts {
	int64_t run;			/* only this measure run; 0 = all */
	const char *system;		/* predict on this system instead of
					   the one each run names */
	int use_min;			/* compare the fastest iteration, not
					   the median (noisy shared hosts) */
	const char *db;			/* the database, as calibrations name
					   their runs ("measure run N in DB") */
};

/* The measure runs predicted (0: the database holds none), or -1. */
int valid_measured(struct valid_set *set, struct config_ctx *cx,
		   struct store *st, const struct valid_meas_opts *o);

/* A system loaded for predicting measured points (valid_meas.c). */
struct valid_pred {
	struct system_spec *sys;	/* in the config_ctx's arena */
	struct net *net;		/* its idle fabric */
	uint32_t *gpus;			/* 0 .. ngpus - 1 */
	uint32_t ngpus;
};

/* Load system with sets; 0, or -1 after reporting. */
int valid_pred_open(struct valid_pred *p, struct config_ctx *cx,
		    const char *system, const char *const *sets, size_t nsets);
void valid_pred_close(struct valid_pred *p);

/* The predicted time (s) of measured point r; note gets the algorithm
 * and protocol of a collective. 0, or -1 after reporting. */
int valid_predict_point(struct valid_pred *p, const struct store_meas_row *r,
			double *time_s, char *note, size_t len, struct diag *d);

/* The time (s) the backend measured for GEMM point r on g (dtype dt):
 * (an enum dtype) the kernel's, or under g's power model the median of its timed calls
 * after the warm-ups from an idle GPU (valid_meas.c). */
double valid_gemm_point_s(const struct gpu_spec *g, int dt,
			  const struct store_meas_row *r);

/* r's rate (B/s of bus bandwidth or copy traffic, FLOP/s) had it taken
 * time_s; its unit as printed and the scale from SI to it. */
/* 1 for a collective point of count 0 (the testers print such sizes;
 * the library moves nothing): neither scored nor fitted. */
int valid_point_empty(const struct store_meas_row *r);
double valid_point_rate(const struct store_meas_row *r, double time_s);
const char *valid_point_unit(const struct store_meas_row *r);
double valid_point_scale(const struct store_meas_row *r);

/* The --set list predictions of a run use: all its own, then its rank
 * layout (nodes, devices per node), in the arena (*sets). Count, or -1
 * after reporting (sets_json not an array of strings). */
int valid_run_sets(struct config_ctx *cx, const struct store_meas_run *run,
		   const char ***sets);

/* The *.yaml files of dir, sorted, as paths (arena). 0 or -1. */
int valid_list_yaml(struct config_ctx *cx, const char *dir,
		    const char ***out, size_t *n);

/* Statistics of t's scored rows (independent only when indep). */
void valid_stats(const struct valid_table *t, int indep,
		 struct valid_stats *out);

/* Print one table with its summary and gate verdict; returns 1 when a
 * gate is missed, else 0. */
int valid_print_table(FILE *out, const struct valid_table *t,
		      const struct valid_gate *g);

/* Print the summary over every table, per kind and overall. */
void valid_print_summary(FILE *out, const struct valid_set *set);

#endif
