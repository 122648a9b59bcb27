/*
 * cli_run.c - `llmsim run JOB.yaml [--set k=v]... [--json] [--trace FILE]
 * [--db PATH] [--no-store] [--full] [--require-fit] [--max-memory SIZE]
 * [--max-trace SIZE]`: resolve the job, simulate one training step,
 * print the result (a summary with units, or one JSON object), optionally
 * write the Chrome trace, and store the run. The inference phases
 * (prefill, decode, serving) go to cli_infer.c.
 *
 * Budget: before anything is built, the step's cost is estimated
 * (step_estimate: tasks, memory, time, trace size); a step whose
 * simulation would need more memory than --max-memory (default 80 % of
 * the machine's physical memory), or whose trace would exceed
 * --max-trace (default 2 GB), is refused with exit 2, the estimate, and
 * the flag that raises the budget (and, for --full, what the symmetric
 * mode would need instead). A serving run is held to the same memory
 * budget (serve_memory_B: its simulation keeps every request) and trace
 * budget: refused when even its fewest engine steps would pass it
 * (serve_trace_estimate, over the requests the run then takes: drawn or
 * read once), stopped with exit 2 when its trace passes it while it runs
 * (serve_run_reqs).
 *
 * JOB "-" reads the job from standard input; --trace - writes the trace
 * to standard output (the summary then goes to stderr).
 *
 * Exit status: 0 success; 1 runtime failure (out of memory, simulation
 * failure, trace or database I/O); 2 bad input (job diagnostics, a layout
 * or model llmsim cannot simulate, bad usage); 3 (CLI_NO_FIT) with
 * --require-fit, when the job does not fit in GPU memory (the result is
 * printed and stored all the same).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "run/step.h"
#include "config/schema.h"
#include "config/spec_job.h"
#include "store/store.h"
#include "calib/calib.h"
#include "config/spec_system.h"
#include "serve/serve.h"
#include "sweep/sweep_run.h"

struct run_opts {
	const char *job;		/* JOB.yaml, a job preset, or "-" */
	const char **sets;		/* "dotted.key=value" */
	size_t nsets;
	int json;			/* print JSON instead of the summary */
	const char *trace;		/* Chrome trace file, "-", or NULL */
	const char *db;			/* database, or NULL for the default */
	int no_store;
	int full;			/* simulate every GPU */
	int require_fit;		/* exit CLI_NO_FIT when it does not fit */
	double max_memory_B;		/* B, memory budget; 0 = the default */
	double max_trace_B;		/* B, trace budget; 0 = the default */
};

#define TRACE_BUDGET_B 2e9		/* B, default --max-trace */
#define MEMORY_SHARE 0.8		/* default --max-memory: of the RAM */
#define GiB 1073741824.0

enum {
	OPT_SET = 256, OPT_JSON, OPT_TRACE, OPT_DB, OPT_NO_STORE, OPT_FULL,
	OPT_REQUIRE_FIT, OPT_MAX_MEMORY, OPT_MAX_TRACE,
};

/* A size option's value ("24 GiB"), > 0; 0 or -1 after a usage error. */
static int size_opt(const char *opt, const char *v, double *out_B)
{
	const char *why = "";
	int rc = units_parse(v, UNIT_BYTES, out_B, &why);

	if (rc == 0 && !(*out_B > 0))
		why = "a budget must be more than 0 B";
	if (rc != 0 || !(*out_B > 0)) {
		cli_usage_error("run", "%s '%s': expected a size above 0 such "
				"as '24 GiB'%s%s", opt, v, *why ? ": " : "", why);
		return -1;
	}
	return 0;
}

static int parse(int argc, char **argv, struct arena *a, struct run_opts *o,
		 struct diag *d)
{
	static const struct option longopts[] = {
		{ "set", required_argument, NULL, OPT_SET },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "trace", required_argument, NULL, OPT_TRACE },
		{ "db", required_argument, NULL, OPT_DB },
		{ "no-store", no_argument, NULL, OPT_NO_STORE },
		{ "full", no_argument, NULL, OPT_FULL },
		{ "require-fit", no_argument, NULL, OPT_REQUIRE_FIT },
		{ "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
		{ "max-trace", required_argument, NULL, OPT_MAX_TRACE },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(o, 0, sizeof(*o));
	o->sets = arena_alloc(a, (size_t)argc * sizeof(*o->sets));
	if (!o->sets) {
		diag_oom(d);
		return CLI_FAIL;
	}
	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "", longopts, "run")) != -1) {
		switch (c) {
		case OPT_SET: o->sets[o->nsets++] = optarg; break;
		case OPT_JSON: o->json = 1; break;
		case OPT_TRACE: o->trace = optarg; break;
		case OPT_DB: o->db = optarg; break;
		case OPT_NO_STORE: o->no_store = 1; break;
		case OPT_FULL: o->full = 1; break;
		case OPT_REQUIRE_FIT: o->require_fit = 1; break;
		case OPT_MAX_MEMORY:
			if (size_opt("--max-memory", optarg,
				     &o->max_memory_B) != 0)
				return CLI_USAGE;
			break;
		case OPT_MAX_TRACE:
			if (size_opt("--max-trace", optarg,
				     &o->max_trace_B) != 0)
				return CLI_USAGE;
			break;
		default: return CLI_USAGE;
		}
	}
	if (optind >= argc)
		return cli_usage_error("run", "%s", "no job given (a file, a "
				       "preset, or - for standard input)");
	if (optind + 1 < argc)
		return cli_usage_error("run", "more than one job given ('%s')",
				       argv[optind + 1]);
	o->job = argv[optind];
	if (o->trace && strcmp(o->trace, "-") == 0 && o->json)
		return cli_usage_error("run", "%s", "--trace - and --json both "
				       "write to standard output; give --trace "
				       "a file");
	return CLI_OK;
}

/* Store the resolved job, the JSON result and the step summary. */
static int store_result(const char *db, const char *data_root,
			const struct job_spec *j, const char *result_json,
			const struct step_result *r, struct diag *d)
{
	struct store_step step;

	sweep_step_row(r, &step);
	return cli_store_run(db, data_root, j, result_json, &step, d);
}

/* The step again with extra --set overrides (calib_band's fn). */
struct band_ctx {
	const struct run_opts *o;
	struct config_ctx *cx;
};

static int band_eval(void *ctx, const char *const *extra, size_t nextra,
		     double *out)
{
	struct band_ctx *b = ctx;
	const char **sets = mem_alloc((b->o->nsets + nextra + 1) *
				      sizeof(*sets));
	struct config_ctx cx = *b->cx;
	struct step_result r;
	struct job_spec *j;
	struct arena a;
	size_t i;
	int rc = -1;

	arena_init(&a);
	cx.arena = &a;
	memset(&r, 0, sizeof(r));
	j = arena_alloc(&a, sizeof(*j));
	if (sets && j) {
		memset(j, 0, sizeof(*j));
		for (i = 0; i < b->o->nsets; i++)
			sets[i] = b->o->sets[i];
		for (i = 0; i < nextra; i++)
			sets[b->o->nsets + i] = extra[i];
		if (config_load(&cx, &job_schema, b->o->job, sets,
				b->o->nsets + nextra, j) == 0 &&
		    step_run(j, b->o->full, NULL, NULL, &r, cx.diag) == 0) {
			*out = r.step_s;
			rc = 0;
		}
	}
	step_result_release(&r);
	mem_free(sets);
	arena_release(&a);
	return rc;
}

/* With a calibrated system: step_time_stderr_s and the 95% interval
 * from the calibration's covariance (calib_band.c), added to obj. */
static int add_band(const struct run_opts *o, const struct job_spec *j,
		    const struct step_result *r, struct cJSON *obj,
		    struct config_ctx *cx)
{
	struct band_ctx b = { o, cx };
	double sigma = 0, lo, hi;
	struct cJSON *iv;

	if (!j->system->calibration)
		return 0;
	if (calib_band(cx, j->system->calibration, "system.", 0, band_eval, &b,
		       (const char *const *)o->sets, o->nsets, &r->step_s, 1,
		       &sigma) != 0)
		return -1;
	/* The fit is of ln time: the band is one there (finite: checked
	 * by calib_band). */
	calib_interval(r->step_s, sigma, &lo, &hi);
	iv = cJSON_CreateArray();
	if (!iv || !cJSON_AddItemToArray(iv, cJSON_CreateNumber(lo))
	    || !cJSON_AddItemToArray(iv, cJSON_CreateNumber(hi)) ||
	    !cJSON_AddItemToObject(obj, "step_time_interval_s", iv) ||
	    !cJSON_AddNumberToObject(obj, "step_time_stderr_s", sigma) ||
	    !cJSON_AddStringToObject(obj, "calibration",
				     j->system->calibration))
		return -1;
	return 0;
}

/* Print the result; its JSON text goes to *json_out for the store. */
static int report(const struct run_opts *o, const struct job_spec *j,
		  const struct step_result *r, char **json_out,
		  struct config_ctx *cx, struct diag *d)
{
	struct cJSON *obj = step_to_json(j, r);

	if (obj && add_band(o, j, r, obj, cx) != 0) {
		cJSON_Delete(obj);
		return d->oom ? CLI_FAIL : CLI_USAGE;
	}

	if (cli_json_text(obj, o->json, json_out, d) != CLI_OK)
		return CLI_FAIL;
	/* With --trace - the trace has standard output to itself. */
	if (!o->json)
		step_print(o->trace && strcmp(o->trace, "-") == 0 ? stderr
								   : stdout, j, r);
	if (!r->mem.fits && o->json)
		fprintf(stderr, "llmsim: the job does not fit in GPU memory "
			"(memory.fits is false)\n");
	return CLI_OK;
}

/* The default memory budget: MEMORY_SHARE of the physical memory (or
 * none when the system does not say). */
static double default_memory_B(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || size <= 0)
		return 0;
	return MEMORY_SHARE * (double)pages * (double)size;
}

/* What the symmetric mode needs, for a --full run's refusal: "; without
 * --full ... about X GiB", or "" when it cannot be had. */
static void symmetric_note(const struct job_spec *j, char *buf, size_t len,
			   struct diag *d)
{
	struct job_spec sym = *j;
	struct step_estimate e;

	buf[0] = '\0';
	sym.full_fidelity = 0;
	if (step_estimate(&sym, 0, &e, d) == 0)
		snprintf(buf, len, "; without --full (one rank per group of "
			 "identical peers) it needs about %.2f GiB for %.2f M "
			 "tasks", e.memory_B / GiB, e.tasks / 1e6);
}

/* Bytes v in a budget message: "%.1f NAME" of unit_B from a tenth of
 * it, else with its own prefix (not "0.0 GB"): an estimate rounded
 * ("17.68 MB"), a budget the user gave as written ("1 KiB"). len >= 48. */
static const char *size_text(char *buf, size_t len, double v, double unit_B,
			     const char *name, int budget)
{
	if (v >= unit_B / 10)
		snprintf(buf, len, "%.1f %s", v / unit_B, name);
	else if (budget)
		units_format(buf, len, v, UNIT_BYTES);
	else
		step_human(buf, len, v, UNIT_BYTES);
	return buf;
}

/* Refuse, before building anything, a step past the memory or trace
 * budget: CLI_OK, CLI_USAGE (reported) or CLI_FAIL. */
static int check_budget(const struct run_opts *o, const struct job_spec *j,
			struct diag *d)
{
	struct step_estimate e;
	double mem = o->max_memory_B > 0 ? o->max_memory_B : default_memory_B();
	double trace = o->max_trace_B > 0 ? o->max_trace_B : TRACE_BUDGET_B;
	int full = o->full || j->full_fidelity, rc;
	char note[160], a[48], b[48];

	rc = step_estimate(j, o->full, &e, d);
	if (rc != 0)
		return rc == -2 ? CLI_USAGE : CLI_FAIL;
	if (!e.buildable || (mem > 0 && e.memory_B > mem)) {
		note[0] = '\0';
		if (full)
			symmetric_note(j, note, sizeof(note), d);
		if (!e.buildable)
			diag_error(d, NULL, 0, 0, "this step would simulate "
				   "%.1f M tasks (%.0f simulated ranks), more "
				   "than the %.1f M a step program holds (about "
				   "%.0f GiB)%s", e.tasks / 1e6, e.ranks,
				   PROG_MAX_TASKS / 1e6, e.memory_B / GiB, note);
		else
			diag_error(d, NULL, 0, 0, "simulating this step needs "
				   "about %s of memory and %.0f s (%.1f M "
				   "tasks, %.0f simulated ranks), more than the "
				   "%s budget; raise it with --max-memory%s",
				   size_text(a, sizeof(a), e.memory_B, GiB,
					     "GiB", 0), e.time_s, e.tasks / 1e6,
				   e.ranks, size_text(b, sizeof(b), mem, GiB,
						      "GiB", 1), note);
		return CLI_USAGE;
	}
	/* sizes in readable units (--max-trace 1B read "about 0.0 GB ...
	 * more than the 0.0 GB budget") */
	if (o->trace && e.trace_B > trace) {
		diag_error(d, NULL, 0, 0, "the trace would be about %s (%.1f M "
			   "tasks), more than the %s budget; raise it with "
			   "--max-trace",
			   size_text(a, sizeof(a), e.trace_B, 1e9, "GB", 0),
			   e.tasks / 1e6,
			   size_text(b, sizeof(b), trace, 1e9, "GB", 1));
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* A serving trace: refused when even its fewest steps pass the budget
 * (serve_trace_estimate over the requests made here, *reqs, which the run
 * then takes over instead of drawing or reading them again;
 * serve_run_reqs stops a run whose trace does not fit after all). CLI_OK,
 * CLI_USAGE (reported) or CLI_FAIL. */
static int check_serving_trace(const struct run_opts *o,
			       const struct job_spec *j,
			       struct serve_reqs **reqs, struct diag *d)
{
	double trace = o->max_trace_B > 0 ? o->max_trace_B : TRACE_BUDGET_B;
	struct serve_trace_est e;
	char lo[32], hi[32], b[32];
	int rc;

	if (!o->trace)
		return CLI_OK;
	rc = serve_reqs_new(j, reqs, d);
	if (rc != 0)
		return rc == -2 ? CLI_USAGE : CLI_FAIL;
	serve_trace_estimate(j, *reqs, &e);
	if (e.lo_B > trace) {
		diag_error(d, NULL, 0, 0, "the trace of these %lld requests "
			   "would be at least %s (%.0f engine steps at the "
			   "fewest, %.0f B each; %s if no two requests shared "
			   "a step), more than the %s budget; raise it with "
			   "--max-trace, or simulate fewer requests",
			   (long long)e.requests,
			   step_human(lo, sizeof(lo), e.lo_B, UNIT_BYTES),
			   e.steps_lo, e.step_B,
			   step_human(hi, sizeof(hi), e.hi_B, UNIT_BYTES),
			   step_human(b, sizeof(b), trace, UNIT_BYTES));
		return CLI_USAGE;
	}
	return CLI_OK;
}

/* The same budget for a serving run, whose simulation holds every
 * request (serve_memory_B), and its trace: CLI_OK, CLI_USAGE (reported)
 * or CLI_FAIL. */
static int check_serving_budget(const struct run_opts *o,
				const struct job_spec *j,
				struct serve_reqs **reqs, struct diag *d)
{
	double mem = o->max_memory_B > 0 ? o->max_memory_B : default_memory_B();
	int64_t n;
	double need = serve_memory_B(j, &n);
	char a[32], b[32];

	if (mem > 0 && need > mem) {
		diag_error(d, NULL, 0, 0, "simulating these %lld requests needs "
			   "about %s of memory (%.0f B a request), more than the "
			   "%s budget; raise it with --max-memory or simulate "
			   "fewer requests", (long long)n,
			   step_human(a, sizeof(a), need, UNIT_BYTES),
			   need / (double)n,
			   step_human(b, sizeof(b), mem, UNIT_BYTES));
		return CLI_USAGE;
	}
	return check_serving_trace(o, j, reqs, d);
}

static int simulate(const struct run_opts *o, struct job_spec *j,
		    struct step_result *r, struct diag *d)
{
	FILE *trace = NULL;
	int rc;

	rc = check_budget(o, j, d);
	if (rc != CLI_OK)
		return rc;
	if (o->trace && !(trace = cli_trace_open(o->trace, d)))
		return CLI_FAIL;
	rc = step_run(j, o->full, NULL, trace, r, d);
	return cli_trace_finish(trace, o->trace, rc, d);
}

int cli_run(int argc, char **argv, const char *argv0)
{
	struct arena a;
	struct diag d;
	struct run_opts o;
	struct config_ctx cx;
	struct job_spec *j;
	struct step_result *r = NULL;
	char *json = NULL;
	int rc;

	arena_init(&a);
	diag_init(&d, stderr);
	rc = parse(argc, argv, &a, &o, &d);
	if (rc != CLI_OK)
		goto out;
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	j = arena_alloc(&a, sizeof(*j));
	r = mem_calloc(1, sizeof(*r));
	rc = CLI_FAIL;
	if (!j || !r || !cx.data_root) {
		diag_oom(&d);
		goto out;
	}
	if (config_load(&cx, &job_schema, o.job, o.sets, o.nsets, j) != 0) {
		rc = d.oom ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	j->full_fidelity |= o.full;
	if (job_is_inference(j)) {
		struct cli_run_io io = {o.json, o.trace, o.db, o.no_store,
					o.max_trace_B > 0 ? o.max_trace_B :
							    TRACE_BUDGET_B, NULL,
					o.require_fit};

		rc = j->phase == PHASE_SERVING ?
		     check_serving_budget(&o, j, &io.reqs, &d) : CLI_OK;
		if (rc == CLI_OK)
			rc = cli_run_inference(&io, j, cx.data_root, &d);
		serve_reqs_free(io.reqs);
		goto out;
	}
	rc = simulate(&o, j, r, &d);
	if (rc == CLI_OK)
		rc = report(&o, j, r, &json, &cx, &d);
	if (rc == CLI_OK && !o.no_store)
		rc = store_result(o.db, cx.data_root, j, json, r, &d);
	if (rc == CLI_OK && o.require_fit && !r->mem.fits) {
		diag_error(&d, NULL, 0, 0, "--require-fit: the job does not fit "
			   "in GPU memory (peak %.4g GB per GPU, %.4g GB usable)",
			   r->mem.peak_B / 1e9, r->mem.usable_B / 1e9);
		rc = CLI_NO_FIT;
	}
out:
	cJSON_free(json);
	if (r)
		step_result_release(r);
	mem_free(r);
	arena_release(&a);
	return rc;
}
