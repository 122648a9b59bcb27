/*
 * serve_report.c - a serving run's result as JSON and as a summary, and
 * its Chrome trace.
 *
 * JSON (`llmsim run --json`, the contract of issue 15): serving.{
 * output_tokens_per_s, requests_per_s, ttft_s, tpot_s, e2e_s (each
 * {mean, p50, p90, p99}), ...}, memory.* as training's (per GPU of a
 * (decode) instance, with the KV cache and its capacity), and the
 * training contract's step_time_s (the mean engine step), tokens_per_s
 * (output tokens/s), mfu and tflops_per_gpu (0: not computed for a run),
 * breakdown (the mean step as "compute").
 *
 * Trace (Chrome trace events, ui.perfetto.dev): one process per engine
 * instance; each engine step a complete event with its batch (sequences,
 * prompt tokens, decoding sequences); counters of KV occupancy (fraction
 * of pages), running and waiting requests after each step.
 */
#include "serve_impl.h"

#include <cjson/cJSON.h>
#include <stdio.h>

#include "base/units.h"
#include "config/spec_job.h"
#include "run/infer_run.h"
#include "run/jobj.h"

/* ---- trace ---- */

/* The events' formats (serve_trace_step_B sizes them). */
#define STEP_FMT "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0," \
	"\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"sequences\":%.0f," \
	"\"tokens\":%.0f,\"prompt_tokens\":%lld,\"decode_seqs\":%lld}}"
#define KV_FMT "{\"name\":\"kv_occupancy\",\"ph\":\"C\",\"pid\":%d," \
	"\"ts\":%.3f,\"args\":{\"used\":%.4f}}"
#define REQS_FMT "{\"name\":\"requests\",\"ph\":\"C\",\"pid\":%d," \
	"\"ts\":%.3f,\"args\":{\"running\":%lld,\"waiting\":%lld}}"
#define SEP ",\n"

/* What the trace took: n more bytes; past the budget the run stops
 * (serve_run_reqs reports it). */
static void wrote(struct serve *s, int n)
{
	if (n > 0)
		s->trace_B += (double)n;
	if (s->trace_max_B > 0 && s->trace_B > s->trace_max_B &&
	    !s->trace_over) {
		s->trace_over = 1;
		s->failed = 1;
	}
}

static void sep(struct serve *s)
{
	if (!s->trace_first)
		wrote(s, fputs(SEP, s->trace) >= 0 ? 2 : 0);
	s->trace_first = 0;
}

double serve_trace_step_B(int inst, double t_s, double dur_s, double seqs,
			  double tokens, int64_t waiting)
{
	return (double)(snprintf(NULL, 0, STEP_FMT, "decode", inst, t_s * 1e6,
				 dur_s * 1e6, seqs, tokens, 0LL,
				 (long long)seqs) +
			snprintf(NULL, 0, KV_FMT, inst, t_s * 1e6, 0.5) +
			snprintf(NULL, 0, REQS_FMT, inst, t_s * 1e6,
				 (long long)seqs, (long long)waiting) +
			3 * (int)(sizeof(SEP) - 1));
}

void serve_trace_step(struct serve *s, int inst, double start_s, double dur_s,
		      const struct infer_batch *b, int64_t prefill_tokens,
		      int64_t decode_seqs)
{
	if (!s->trace || s->trace_over)
		return;
	sep(s);
	wrote(s, fprintf(s->trace, STEP_FMT,
			 prefill_tokens > 0 ? (decode_seqs > 0 ? "mixed" :
					       "prefill") : "decode",
			 inst, start_s * 1e6, dur_s * 1e6,
			 infer_batch_seqs(b), infer_batch_tokens(b),
			 (long long)prefill_tokens, (long long)decode_seqs));
	s->trace_steps++;
}

void serve_trace_counters(struct serve *s, int inst, double now)
{
	const struct serve_inst *in = &s->inst[inst];

	if (!s->trace || s->trace_over)
		return;
	sep(s);
	wrote(s, fprintf(s->trace, KV_FMT, inst, now * 1e6,
			 in->pages ? (double)(in->pages - in->free_pages) /
				     (double)in->pages : 0));
	sep(s);
	wrote(s, fprintf(s->trace, REQS_FMT, inst, now * 1e6,
			 (long long)in->nrunning,
			 (long long)(in->waiting.n + in->npend)));
}

/* ---- JSON ---- */

static struct cJSON *stats_json(const struct serve_stats *st)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_finite(o, "mean", st->mean) &&
		 jobj_add_finite(o, "p50", st->p50) &&
		 jobj_add_finite(o, "p90", st->p90) &&
		 jobj_add_finite(o, "p99", st->p99);

	return jobj_complete(o, ok);
}

static struct cJSON *serving_json(const struct job_spec *j,
				  const struct serve_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_str(o, "engine", j->serving.engine->name) &&
		 jobj_add_finite(o, "requests", (double)r->requests) &&
		 jobj_add_finite(o, "completed", (double)r->completed) &&
		 jobj_add_finite(o, "instances", (double)r->instances) &&
		 jobj_add_finite(o, "arrival_rate", r->offered_rate) &&
		 jobj_add_finite(o, "duration_s", r->duration_s) &&
		 jobj_add_finite(o, "output_tokens", r->output_tokens) &&
		 jobj_add_finite(o, "input_tokens", r->input_tokens) &&
		 jobj_add_finite(o, "output_tokens_per_s",
				 r->output_tokens_per_s) &&
		 jobj_add_finite(o, "input_tokens_per_s",
				 r->input_tokens_per_s) &&
		 jobj_add_finite(o, "requests_per_s", r->requests_per_s) &&
		 jobj_add(o, "ttft_s", stats_json(&r->ttft)) &&
		 jobj_add(o, "tpot_s", stats_json(&r->tpot)) &&
		 jobj_add(o, "e2e_s", stats_json(&r->e2e)) &&
		 jobj_add(o, "queue_s", stats_json(&r->queue)) &&
		 jobj_add_finite(o, "mean_in_system", r->mean_in_system) &&
		 jobj_add_finite(o, "steps", (double)r->steps) &&
		 jobj_add_finite(o, "mean_step_s", r->mean_step_s) &&
		 jobj_add_finite(o, "mean_batch", r->mean_batch) &&
		 jobj_add_finite(o, "mean_step_tokens", r->mean_step_tokens) &&
		 jobj_add_finite(o, "prompt_steps", (double)r->prompt_steps) &&
		 jobj_add_finite(o, "prompt_step_time_s",
				 r->prompt_step_time_s) &&
		 jobj_add_finite(o, "preemptions", (double)r->preemptions) &&
		 (r->adp_balance <= 0 ||
		  jobj_add_finite(o, "adp_balance", r->adp_balance)) &&
		 jobj_add_finite(o, "prefix_hit_tokens",
				 r->prefix_hit_tokens) &&
		 jobj_add_finite(o, "kv_capacity_tokens", r->kv_tokens) &&
		 jobj_add_finite(o, "kv_capacity_sequences", r->kv_sequences) &&
		 jobj_add_finite(o, "kv_peak_occupancy", r->kv_peak_frac) &&
		 jobj_add_finite(o, "kv_mean_occupancy", r->kv_mean_frac) &&
		 jobj_add_finite(o, "spec_tokens_per_step",
				 r->spec_tokens_per_step) &&
		 jobj_add_finite(o, "kv_transfer_mean_s",
				 r->kv_transfer_mean_s) &&
		 jobj_add_finite(o, "kv_transfer_bytes",
				 r->kv_transfer_bytes) &&
		 jobj_add_finite(o, "step_model_calls", (double)r->cost_calls);

	return jobj_complete(o, ok);
}

static struct cJSON *breakdown_json(const struct serve_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int i, ok = o != NULL;

	for (i = 0; ok && i < EXEC_PART_COUNT; i++)
		ok = jobj_add_finite(o, exec_part_keys[i],
			     i == EXEC_COMPUTE ? r->mean_step_s : 0);
	return jobj_complete(o, ok);
}

struct cJSON *serve_to_json(const struct job_spec *j,
			    const struct serve_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && step_json_job(o, j, r->gpus) &&
		 jobj_add_finite(o, "step_time_s", r->mean_step_s) &&
		 jobj_add_finite(o, "tokens_per_s", r->output_tokens_per_s) &&
		 jobj_add_finite(o, "mfu", 0) &&
		 jobj_add_finite(o, "tflops_per_gpu", 0) &&
		 jobj_add(o, "memory", infer_mem_json(&r->mem)) &&
		 jobj_add(o, "breakdown", breakdown_json(r)) &&
		 jobj_add(o, "serving", serving_json(j, r)) &&
		 jobj_add_finite(o, "events", (double)r->events);

	if (ok && j->serving.disaggregated.enabled)
		ok = jobj_add(o, "prefill_memory",
			      infer_mem_json(&r->prefill_mem));
	return jobj_complete(o, ok);
}

/* ---- summary ---- */

static void stat_line(FILE *out, const char *name,
		      const struct serve_stats *st)
{
	char a[24], b[24], c[24], d[24];

	step_human(a, sizeof(a), st->mean, UNIT_TIME);
	step_human(b, sizeof(b), st->p50, UNIT_TIME);
	step_human(c, sizeof(c), st->p90, UNIT_TIME);
	step_human(d, sizeof(d), st->p99, UNIT_TIME);
	fprintf(out, "  %-6s mean %10s  p50 %10s  p90 %10s  p99 %10s\n", name,
		a, b, c, d);
}

void serve_print(FILE *out, const struct job_spec *j,
		 const struct serve_result *r)
{
	const struct infer_mem *m = &r->mem;
	char a[24], b[24], c[24], e[24], f[24];

	fprintf(out, "%s: serving %s on %s (%lld GPU%s, %s), engine %s\n",
		j->name ? j->name : "job", j->model->name, j->system->name,
		(long long)r->gpus, r->gpus == 1 ? "" : "s", j->system->gpu->name,
		j->serving.engine->name);
	fprintf(out, "  requests     %lld (%lld completed); arrivals %s\n",
		(long long)r->requests, (long long)r->completed,
		j->serving.trace ? "from the trace" : r->offered_rate > 0 ?
		"Poisson" : "all at t = 0 (offline)");
	if (r->offered_rate > 0)
		fprintf(out, "               %.4g requests/s offered%s\n",
			r->offered_rate, j->serving.trace ? " (its mean)" : "");
	step_human(a, sizeof(a), r->duration_s, UNIT_TIME);
	fprintf(out, "  duration     %s\n", a);
	fprintf(out, "  throughput   %.1f output tokens/s, %.1f input tokens/s, "
		"%.3f requests/s\n", r->output_tokens_per_s,
		r->input_tokens_per_s, r->requests_per_s);
	stat_line(out, "TTFT", &r->ttft);
	stat_line(out, "TPOT", &r->tpot);
	stat_line(out, "E2E", &r->e2e);
	step_human(a, sizeof(a), r->mean_step_s, UNIT_TIME);
	fprintf(out, "  engine       %lld steps, mean %s, %.1f sequences and "
		"%.0f tokens a step\n", (long long)r->steps, a, r->mean_batch,
		r->mean_step_tokens);
	if (r->steps > 0) {
		step_human(a, sizeof(a), r->prompt_step_time_s, UNIT_TIME);
		step_human(b, sizeof(b), r->mean_step_s * (double)r->steps -
			   r->prompt_step_time_s, UNIT_TIME);
		fprintf(out, "               %lld with prompt tokens (%s), %lld "
			"decode-only (%s)\n", (long long)r->prompt_steps, a,
			(long long)(r->steps - r->prompt_steps), b);
	}
	fprintf(out, "  KV cache     peak %.1f %%, mean %.1f %% of %.0f tokens "
		"per instance; %lld preemptions\n", 100 * r->kv_peak_frac,
		100 * r->kv_mean_frac, r->kv_tokens, (long long)r->preemptions);
	if (r->adp_balance > 0)
		fprintf(out, "  attention DP balance %.1f %% (mean / busiest "
			"rank's tokens, mean over steps)\n",
			100 * r->adp_balance);
	if (r->spec_tokens_per_step > 0)
		fprintf(out, "  speculative  %.2f tokens per verify step\n",
			r->spec_tokens_per_step);
	if (r->kv_transfer_bytes > 0) {
		step_human(a, sizeof(a), r->kv_transfer_mean_s, UNIT_TIME);
		step_human(b, sizeof(b), r->kv_transfer_bytes, UNIT_BYTES);
		fprintf(out, "  KV transfer  mean %s, %s in all\n", a, b);
	}
	step_human(a, sizeof(a), m->weights_B, UNIT_BYTES);
	step_human(b, sizeof(b), m->kv_cache_B, UNIT_BYTES);
	step_human(c, sizeof(c), m->usable_B, UNIT_BYTES);
	step_human(e, sizeof(e), m->activations_B, UNIT_BYTES);
	step_human(f, sizeof(f), m->workspace_B, UNIT_BYTES);
	fprintf(out, "  memory/GPU   weights %s, activations %s, workspace %s\n"
		"               KV cache %s of %s usable; %.0f sequences of "
		"mean length fit an instance\n", a, e, f, b, c,
		r->kv_sequences);
	fprintf(out, "  Little       %.2f requests in system (time average)\n",
		r->mean_in_system);
}
