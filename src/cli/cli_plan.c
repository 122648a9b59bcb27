/*
 * cli_plan.c - `llmsim plan JOB.yaml --pd-ratio [--gpus N] [--set k=v]...
 * [--json]`: the prefill:decode ratio search of a disaggregated serving
 * job against its SLO (serve/serve_plan.h). The layout planner of issue
 * 12 will add the search over parallel layouts to this command; until
 * then `plan` without --pd-ratio says so.
 *
 * Exit status: 0 success; 1 runtime failure; 2 bad input or usage.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "run/step.h"
#include "serve/serve_plan.h"

struct plan_opts {
	const char *job;
	const char **sets;
	size_t nsets;
	int pd_ratio;
	int json;
	int64_t gpus;
};

static int parse(int argc, char **argv, struct arena *a, struct plan_opts *o,
		 struct diag *d)
{
	const char *v, *missing = NULL;
	char *end;
	int i;

	memset(o, 0, sizeof(*o));
	o->sets = arena_alloc(a, (size_t)argc * sizeof(*o->sets));
	if (!o->sets) {
		diag_oom(d);
		return CLI_FAIL;
	}
	for (i = 1; i < argc; i++) {
		if ((v = cli_option(argc, argv, &i, "--set", &missing))) {
			o->sets[o->nsets++] = v;
		} else if ((v = cli_option(argc, argv, &i, "--gpus", &missing))) {
			o->gpus = strtoll(v, &end, 10);
			if (*end || o->gpus < 1)
				return cli_usage_error("plan", "'--gpus' expects a "
						       "positive integer, got '%s'", v);
		} else if (missing) {
			return cli_usage_error("plan", "'%s' needs a value",
					       missing);
		} else if (strcmp(argv[i], "--pd-ratio") == 0) {
			o->pd_ratio = 1;
		} else if (strcmp(argv[i], "--json") == 0) {
			o->json = 1;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			return cli_usage_error("plan", "unknown option '%s'",
					       argv[i]);
		} else if (o->job) {
			return cli_usage_error("plan", "more than one job given "
					       "('%s')", argv[i]);
		} else {
			o->job = argv[i];
		}
	}
	if (!o->job)
		return cli_usage_error("plan", "%s", "no job given");
	if (!o->pd_ratio)
		return cli_usage_error("plan", "%s", "the layout planner is not "
				       "available yet (issue 12); --pd-ratio "
				       "searches prefill:decode splits of a "
				       "serving job");
	return CLI_OK;
}

static void print_table(const struct serve_plan_point *v, int n)
{
	char a[24], b[24];
	int i;

	printf("%-14s %6s %14s %14s %14s %12s %12s\n", "split", "GPUs",
	       "max rate", "per GPU", "output tok/s", "TTFT p99", "TPOT p99");
	for (i = 0; i < n; i++) {
		char split[32];

		if (v[i].prefill_instances == 0)
			snprintf(split, sizeof(split), "colocated x%lld",
				 (long long)v[i].decode_instances);
		else
			snprintf(split, sizeof(split), "P%lld:D%lld",
				 (long long)v[i].prefill_instances,
				 (long long)v[i].decode_instances);
		step_human(a, sizeof(a), v[i].ttft_p99_s, UNIT_TIME);
		step_human(b, sizeof(b), v[i].tpot_p99_s, UNIT_TIME);
		printf("%-14s %6lld %10.4g r/s %10.4g r/s %14.0f %12s %12s\n",
		       split, (long long)v[i].gpus, v[i].max_rate,
		       v[i].rate_per_gpu, v[i].output_tokens_per_s, a, b);
	}
}

static int print_json(const struct serve_plan_point *v, int n)
{
	cJSON *arr = cJSON_CreateArray();
	char *text;
	int i;

	for (i = 0; arr && i < n; i++) {
		cJSON *o = cJSON_CreateObject();

		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			cJSON_Delete(arr);
			return CLI_FAIL;
		}
		if (!cJSON_AddNumberToObject(o, "prefill_instances",
					     (double)v[i].prefill_instances) ||
		    !cJSON_AddNumberToObject(o, "decode_instances",
					     (double)v[i].decode_instances) ||
		    !cJSON_AddNumberToObject(o, "gpus", (double)v[i].gpus) ||
		    !cJSON_AddNumberToObject(o, "max_rate", v[i].max_rate) ||
		    !cJSON_AddNumberToObject(o, "rate_per_gpu", v[i].rate_per_gpu) ||
		    !cJSON_AddNumberToObject(o, "output_tokens_per_s",
					     v[i].output_tokens_per_s) ||
		    !cJSON_AddNumberToObject(o, "ttft_p99_s", v[i].ttft_p99_s) ||
		    !cJSON_AddNumberToObject(o, "tpot_p99_s", v[i].tpot_p99_s)) {
			cJSON_Delete(arr);
			return CLI_FAIL;
		}
	}
	text = arr ? cJSON_Print(arr) : NULL;
	cJSON_Delete(arr);
	if (!text)
		return CLI_FAIL;
	printf("%s\n", text);
	cJSON_free(text);
	return CLI_OK;
}

int cli_plan(int argc, char **argv, const char *argv0)
{
	struct serve_plan_opts po = {0, 0, 0, 0};
	struct serve_plan_point *v = NULL;
	struct config_ctx cx;
	struct plan_opts o;
	struct job_spec *j;
	struct arena a;
	struct diag d;
	int rc, n = 0;

	arena_init(&a);
	diag_init(&d, stderr);
	rc = parse(argc, argv, &a, &o, &d);
	if (rc != CLI_OK)
		goto out;
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv0) };
	j = arena_alloc(&a, sizeof(*j));
	rc = CLI_FAIL;
	if (!j || !cx.data_root) {
		diag_oom(&d);
		goto out;
	}
	memset(j, 0, sizeof(*j));
	if (config_load(&cx, &job_schema, o.job, o.sets, o.nsets, j) != 0) {
		rc = d.oom ? CLI_FAIL : CLI_USAGE;
		goto out;
	}
	if (!job_is_inference(j)) {
		diag_error(&d, NULL, 0, 0, "plan --pd-ratio needs a serving job "
			   "(phase serving), got phase %s",
			   job_phase_names[j->phase]);
		rc = CLI_USAGE;
		goto out;
	}
	po.gpus = o.gpus;
	rc = serve_plan_ratio(j, &po, &v, &n, &d);
	if (rc != 0) {
		rc = rc == -2 ? CLI_USAGE : CLI_FAIL;
		goto out;
	}
	if (o.json)
		rc = print_json(v, n);
	else {
		print_table(v, n);
		rc = CLI_OK;
	}
	if (rc != CLI_OK)
		diag_oom(&d);
out:
	mem_free(v);
	arena_release(&a);
	return rc;
}
