/*
 * cli_run.c - `llmsim run JOB.yaml [--set k=v]... [--json] [--trace FILE]
 * [--db PATH] [--no-store] [--full]`: resolve the job, simulate one
 * training step, print the result (a summary with units, or one JSON
 * object), optionally write the Chrome trace, and store the run. The
 * inference phases (prefill, decode, serving) go to cli_infer.c.
 *
 * Exit status: 0 success; 1 runtime failure (out of memory, simulation
 * failure, trace or database I/O); 2 bad input (job diagnostics, a layout
 * or model llmsim cannot simulate, bad usage).
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

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

struct run_opts {
	const char *job;		/* JOB.yaml or a job preset */
	const char **sets;		/* "dotted.key=value" */
	size_t nsets;
	int json;			/* print JSON instead of the summary */
	const char *trace;		/* Chrome trace file, or NULL */
	const char *db;			/* database, or NULL for the default */
	int no_store;
	int full;			/* simulate every GPU */
};

static int flag(const char *arg, const char *name, int *out)
{
	if (strcmp(arg, name) != 0)
		return 0;
	*out = 1;
	return 1;
}

static int parse(int argc, char **argv, struct arena *a, struct run_opts *o,
		 struct diag *d)
{
	const char *v, *missing = NULL;
	int i;

	memset(o, 0, sizeof(*o));
	o->sets = arena_alloc(a, (size_t)argc * sizeof(*o->sets));
	if (!o->sets) {
		diag_oom(d);
		return CLI_FAIL;
	}
	for (i = 1; i < argc; i++) {
		if ((v = cli_option(argc, argv, &i, "--set", &missing)))
			o->sets[o->nsets++] = v;
		else if ((v = cli_option(argc, argv, &i, "--trace", &missing)))
			o->trace = v;
		else if ((v = cli_option(argc, argv, &i, "--db", &missing)))
			o->db = v;
		else if (missing)
			return cli_usage_error("run", "'%s' needs a value",
					       missing);
		else if (flag(argv[i], "--json", &o->json) ||
			 flag(argv[i], "--no-store", &o->no_store) ||
			 flag(argv[i], "--full", &o->full))
			continue;
		else if (argv[i][0] == '-' && argv[i][1] != '\0')
			return cli_usage_error("run", "unknown option '%s'",
					       argv[i]);
		else if (o->job)
			return cli_usage_error("run", "more than one job given "
					       "('%s')", argv[i]);
		else
			o->job = argv[i];
	}
	if (!o->job)
		return cli_usage_error("run", "%s", "no job given");
	return CLI_OK;
}

/* Store the resolved job, the JSON result and the step summary. */
static int store_result(const char *db, const char *data_root,
			const struct job_spec *j, const char *result_json,
			const struct step_result *r, struct diag *d)
{
	struct store_step step = {
		.step_time_s = r->step_s, .tokens_per_s = r->tokens_per_s,
		.mfu = r->mfu, .tflops_per_gpu = r->tflops_per_gpu,
		.peak_bytes_per_gpu = r->mem.peak_B, .fits = r->mem.fits,
		.compute_s = r->part_s[EXEC_COMPUTE],
		.exposed_comm_s = r->part_s[EXEC_EXPOSED_COMM],
		.bubble_s = r->part_s[EXEC_BUBBLE],
		.optimizer_s = r->part_s[EXEC_OPTIMIZER],
		.other_s = r->part_s[EXEC_OTHER],
	};
	struct cli_result res = { .command = "run", .schema = &job_schema,
				  .config = j, .json = result_json,
				  .step = &step };

	return cli_store(db, data_root, &res, d);
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
		       &r->step_s, 1, &sigma) != 0)
		return -1;
	/* The fit is of ln time: the band is one there. */
	lo = r->step_s * exp(-1.96 * sigma / r->step_s);
	hi = r->step_s * exp(1.96 * sigma / r->step_s);
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

	*json_out = obj ? cJSON_Print(obj) : NULL;
	cJSON_Delete(obj);
	if (!*json_out) {
		diag_oom(d);
		return CLI_FAIL;
	}
	if (o->json)
		printf("%s\n", *json_out);
	else
		step_print(stdout, j, r);
	return CLI_OK;
}

static int simulate(const struct run_opts *o, struct job_spec *j,
		    struct step_result *r, struct diag *d)
{
	FILE *trace = NULL;
	int rc;

	if (o->trace && !(trace = fopen(o->trace, "w"))) {
		diag_error(d, NULL, 0, 0, "cannot write the trace '%s'", o->trace);
		return CLI_FAIL;
	}
	rc = step_run(j, o->full, NULL, trace, r, d);
	if (trace && fclose(trace) != 0 && rc == 0) {
		diag_error(d, NULL, 0, 0, "cannot write the trace '%s'", o->trace);
		rc = -1;
	}
	if (rc == -2)
		return CLI_USAGE;
	return rc == 0 ? CLI_OK : CLI_FAIL;
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
		struct cli_run_io io = {o.json, o.trace, o.db, o.no_store};

		rc = cli_run_inference(&io, j, cx.data_root, &d);
		goto out;
	}
	rc = simulate(&o, j, r, &d);
	if (rc == CLI_OK)
		rc = report(&o, j, r, &json, &cx, &d);
	if (rc == CLI_OK && !o.no_store)
		rc = store_result(o.db, cx.data_root, j, json, r, &d);
out:
	cJSON_free(json);
	if (r)
		step_result_release(r);
	mem_free(r);
	arena_release(&a);
	return rc;
}
