/*
 * cli_infer.c - `llmsim run` for the inference phases: a prefill or
 * decode step (run/infer_run.h) or a serving run (serve/serve.h), printed
 * as a summary or one JSON object, traced on request, and stored.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "run/infer_run.h"
#include "serve/serve.h"
#include "store/store.h"

/* Close the trace; a write error fails a run that had succeeded (and
 * names the file whatever the run returned: a simulator leaves a trace
 * write error to it). */
static int close_trace(const struct cli_run_io *io, FILE *f, int rc,
		       struct diag *d)
{
	if (f && cli_trace_close(f, io->trace, d) != CLI_OK && rc == 0)
		return -1;
	return rc;
}

static int code_of(int rc)
{
	return rc == 0 ? CLI_OK : rc == -2 ? CLI_USAGE : CLI_FAIL;
}

/* Print obj (freed here) or the summary; its text into *json. */
static int emit(const struct cli_run_io *io, struct cJSON *obj, char **json,
		void (*print)(FILE *, const struct job_spec *, const void *),
		const struct job_spec *j, const void *r, struct diag *d)
{
	*json = obj ? cJSON_Print(obj) : NULL;
	cJSON_Delete(obj);
	if (!*json) {
		diag_oom(d);
		return CLI_FAIL;
	}
	if (io->json)
		printf("%s\n", *json);
	else
		print(stdout, j, r);
	return CLI_OK;
}

static void print_step(FILE *out, const struct job_spec *j, const void *r)
{
	infer_print(out, j, r);
}

static void print_serving(FILE *out, const struct job_spec *j, const void *r)
{
	serve_print(out, j, r);
}

static int run_step(const struct cli_run_io *io, const struct job_spec *j,
		    const char *data_root, struct diag *d)
{
	struct infer_result *r = mem_calloc(1, sizeof(*r));
	char *json = NULL;
	FILE *trace;
	int rc;

	if (!r) {
		diag_oom(d);
		return CLI_FAIL;
	}
	trace = io->trace ? cli_trace_open(io->trace, d) : NULL;
	rc = io->trace && !trace ? CLI_FAIL : CLI_OK;
	if (rc == CLI_OK) {
		rc = code_of(close_trace(io, trace, infer_run(j, trace, r, d),
					 d));
		if (rc == CLI_OK)
			rc = emit(io, infer_to_json(j, r), &json, print_step, j,
				  r, d);
	}
	if (rc == CLI_OK && !io->no_store) {
		struct store_step step = {
			.step_time_s = r->step_s,
			.tokens_per_s = r->tokens_per_s_total, .mfu = r->mfu,
			.tflops_per_gpu = r->tflops_per_gpu,
			.peak_bytes_per_gpu = r->mem.peak_B, .fits = r->mem.fits,
			.compute_s = r->part_s[EXEC_COMPUTE],
			.exposed_comm_s = r->part_s[EXEC_EXPOSED_COMM],
			.bubble_s = r->part_s[EXEC_BUBBLE],
			.optimizer_s = r->part_s[EXEC_OPTIMIZER],
			.other_s = r->part_s[EXEC_OTHER],
		};
		rc = cli_store_run(io->db, data_root, j, json, &step, d);
	}
	cJSON_free(json);
	infer_result_release(r);
	mem_free(r);
	return rc;
}

static int run_serving(const struct cli_run_io *io, const struct job_spec *j,
		       const char *data_root, struct diag *d)
{
	struct serve_result *r = mem_calloc(1, sizeof(*r));
	char *json = NULL;
	FILE *trace;
	int rc;

	if (!r) {
		diag_oom(d);
		return CLI_FAIL;
	}
	trace = io->trace ? cli_trace_open(io->trace, d) : NULL;
	rc = io->trace && !trace ? CLI_FAIL : CLI_OK;
	if (rc == CLI_OK) {
		rc = code_of(close_trace(io, trace, serve_run(j, trace, r, d),
					 d));
		if (rc == CLI_OK)
			rc = emit(io, serve_to_json(j, r), &json,
				  print_serving, j, r, d);
	}
	if (rc == CLI_OK && !io->no_store) {
		struct store_step step = {
			.step_time_s = r->mean_step_s,
			.tokens_per_s = r->output_tokens_per_s,
			.peak_bytes_per_gpu = r->mem.peak_B, .fits = r->mem.fits,
			.compute_s = r->mean_step_s,
		};
		rc = cli_store_run(io->db, data_root, j, json, &step, d);
	}
	cJSON_free(json);
	serve_result_release(r);
	mem_free(r);
	return rc;
}

int cli_run_inference(const struct cli_run_io *io, const struct job_spec *j,
		      const char *data_root, struct diag *d)
{
	if (j->phase == PHASE_SERVING)
		return run_serving(io, j, data_root, d);
	return run_step(io, j, data_root, d);
}
