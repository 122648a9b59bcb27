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

/*
 * An inference run kind: its result's size and how it is run, written
 * (JSON, summary), summarized for the store and released. Both kinds
 * take the same path (run_kind).
 */
struct kind {
	size_t size;				/* B of its result */
	int (*run)(const struct job_spec *j, FILE *trace,
		   const struct cli_run_io *io, void *r, struct diag *d);
	struct cJSON *(*to_json)(const struct job_spec *j, const void *r);
	void (*print)(FILE *out, const struct job_spec *j, const void *r);
	void (*row)(const void *r, struct store_step *out);
	void (*release)(void *r);
};

static int run_step(const struct job_spec *j, FILE *trace,
		    const struct cli_run_io *io, void *r, struct diag *d)
{
	(void)io;	/* one step's trace: a few thousand events */
	return infer_run(j, trace, r, d);
}

static struct cJSON *json_step(const struct job_spec *j, const void *r)
{
	return infer_to_json(j, r);
}

static void print_step(FILE *out, const struct job_spec *j, const void *r)
{
	infer_print(out, j, r);
}

static void row_step(const void *res, struct store_step *out)
{
	const struct infer_result *r = res;

	*out = (struct store_step){
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
}

static void release_step(void *r)
{
	infer_result_release(r);
}

static const struct kind kind_step = {
	sizeof(struct infer_result), run_step, json_step, print_step,
	row_step, release_step,
};

static int run_serving(const struct job_spec *j, FILE *trace,
		       const struct cli_run_io *io, void *r, struct diag *d)
{
	return serve_run_reqs(j, io->reqs, trace, io->max_trace_B, r, d);
}

static struct cJSON *json_serving(const struct job_spec *j, const void *r)
{
	return serve_to_json(j, r);
}

static void print_serving(FILE *out, const struct job_spec *j,
			  const void *r)
{
	serve_print(out, j, r);
}

static void row_serving(const void *res, struct store_step *out)
{
	const struct serve_result *r = res;

	*out = (struct store_step){
		.step_time_s = r->mean_step_s,
		.tokens_per_s = r->output_tokens_per_s,
		.peak_bytes_per_gpu = r->mem.peak_B, .fits = r->mem.fits,
		.compute_s = r->mean_step_s,
	};
}

static void release_serving(void *r)
{
	serve_result_release(r);
}

static const struct kind kind_serving = {
	sizeof(struct serve_result), run_serving, json_serving,
	print_serving, row_serving, release_serving,
};

/* Run j as kind k: traced on request, printed, stored unless told not. */
static int run_kind(const struct kind *k, const struct cli_run_io *io,
		    const struct job_spec *j, const char *data_root,
		    struct diag *d)
{
	void *r = mem_calloc(1, k->size);
	char *json = NULL;
	FILE *trace;
	int rc;

	if (!r) {
		diag_oom(d);
		return CLI_FAIL;
	}
	rc = CLI_OK;
	trace = io->trace ? cli_trace_open(io->trace, &rc, d) : NULL;
	if (rc == CLI_OK)
		rc = cli_trace_finish(trace, io->trace,
				      k->run(j, trace, io, r, d),
				      d);
	if (rc == CLI_OK) {
		rc = cli_json_text(k->to_json(j, r), io->json, &json, d);
		if (rc == CLI_OK && !io->json)
			k->print(stdout, j, r);
	}
	if (rc == CLI_OK) {
		struct store_step step;

		k->row(r, &step);
		if (!io->no_store)
			rc = cli_store_run(io->db, data_root, j, json, &step,
					   d);
		if (rc == CLI_OK && io->require_fit && !step.fits) {
			diag_error(d, NULL, 0, 0, "--require-fit: the job does "
				   "not fit in GPU memory (peak %.4g GB per GPU; "
				   "or its sequences' KV cache does not)",
				   step.peak_bytes_per_gpu / 1e9);
			rc = CLI_NO_FIT;
		}
	}
	cJSON_free(json);
	k->release(r);
	mem_free(r);
	return rc;
}

int cli_run_inference(const struct cli_run_io *io, const struct job_spec *j,
		      const char *data_root, struct diag *d)
{
	return run_kind(j->phase == PHASE_SERVING ? &kind_serving : &kind_step,
			io, j, data_root, d);
}
