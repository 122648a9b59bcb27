/*
 * infer_report.c - an inference step result as JSON (`llmsim run --json`)
 * and as a readable summary with units.
 *
 * JSON keys shared with training (DESIGN.md contract): step_time_s,
 * tokens_per_s, mfu, tflops_per_gpu, memory.{peak_bytes_per_gpu, fits,
 * ...}, breakdown.{compute_s, exposed_comm_s, bubble_s, optimizer_s,
 * other_s}; the inference ones under "inference" and memory.kv_*.
 */
#include "infer_run.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>

#include "base/units.h"
#include "config/spec_job.h"
#include "jobj.h"

static const char *const graph_names[] = {"none", "piecewise", "full"};

struct cJSON *infer_mem_json(const struct infer_mem *m)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_finite(o, "peak_bytes_per_gpu", m->peak_B) &&
		 jobj_add_finite(o, "weights_bytes", m->weights_B) &&
		 /* the pool left after the rest: none when the rest does
		  * not fit (infer_mem keeps the shortfall negative) */
		 jobj_add_finite(o, "kv_cache_bytes", fmax(m->kv_cache_B, 0)) &&
		 jobj_add_finite(o, "activations_bytes", m->activations_B) &&
		 jobj_add_finite(o, "workspace_bytes", m->workspace_B) &&
		 jobj_add_finite(o, "usable_bytes", m->usable_B) &&
		 jobj_add(o, "fits", cJSON_CreateBool(m->fits)) &&
		 jobj_add_finite(o, "pipeline_rank", (double)m->rank) &&
		 jobj_add_finite(o, "params_per_gpu", m->params) &&
		 jobj_add_finite(o, "kv_bytes_per_token", m->kv_token_B) &&
		 jobj_add_finite(o, "kv_capacity_tokens", m->kv_tokens) &&
		 jobj_add_finite(o, "kv_capacity_sequences", m->kv_sequences);

	/* with a speculative draft: its part of weights_bytes and of
	 * kv_bytes_per_token */
	if (ok && (m->draft_weights_B > 0 || m->draft_kv_token_B > 0))
		ok = jobj_add_finite(o, "draft_weights_bytes",
				     m->draft_weights_B) &&
		     jobj_add_finite(o, "draft_kv_bytes_per_token",
				     m->draft_kv_token_B);
	return jobj_complete(o, ok);
}

static struct cJSON *breakdown_json(const double *part)
{
	struct cJSON *o = cJSON_CreateObject();
	int i, ok = o != NULL;

	for (i = 0; ok && i < EXEC_PART_COUNT; i++)
		ok = jobj_add_finite(o, exec_part_keys[i], part[i]);
	return jobj_complete(o, ok);
}

static struct cJSON *colls_json(const struct infer_result *r)
{
	struct cJSON *a = cJSON_CreateArray();
	uint32_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < r->ncolls; i++) {
		const struct step_coll_stat *s = &r->colls[i];
		struct cJSON *o = cJSON_CreateObject();

		ok = o && jobj_add_str(o, "name", s->name) &&
		     jobj_add_str(o, "op", coll_op_names[s->op]) &&
		     jobj_add_finite(o, "group_gpus", s->group) &&
		     jobj_add_finite(o, "bytes", s->bytes) &&
		     jobj_add_finite(o, "calls", s->count) &&
		     jobj_add_finite(o, "time_s", s->time_s) &&
		     jobj_add_finite(o, "critical_path_s", s->critical_s);
		if (ok)
			ok = cJSON_AddItemToArray(a, o);
		if (!ok)
			cJSON_Delete(o);
	}
	return jobj_complete(a, ok);
}

static struct cJSON *inference_json(const struct job_spec *j,
				    const struct infer_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_str(o, "phase", job_phase_names[j->phase]) &&
		 jobj_add_str(o, "engine", j->serving.engine->name) &&
		 jobj_add_finite(o, "batch", r->batch) &&
		 jobj_add_finite(o, "tokens", r->tokens) &&
		 jobj_add_finite(o, "context_len",
				 (double)j->serving.context_len) &&
		 jobj_add_finite(o, "microbatches",
				 (double)r->info.microbatches) &&
		 jobj_add_str(o, "cuda_graph", graph_names[r->info.graph]) &&
		 jobj_add_finite(o, "gpu_time_s", r->gpu_s) &&
		 jobj_add_finite(o, "host_time_s", r->host_s) &&
		 jobj_add(o, "host_overlapped",
			  cJSON_CreateBool(!r->info.host_in_prog)) &&
		 jobj_add_finite(o, "tokens_per_s_per_instance",
				 r->tokens_per_s) &&
		 jobj_add_finite(o, "instances", (double)r->instances) &&
		 jobj_add_finite(o, "weights_read_bytes_per_gpu",
				 r->weights_read_B) &&
		 jobj_add_finite(o, "kv_read_bytes_per_gpu", r->kv_read_B) &&
		 jobj_add_finite(o, "hbm_floor_s", r->hbm_floor_s) &&
		 jobj_add_str(o, "weights_dtype",
			      dtype_names[j->serving.dtype]) &&
		 jobj_add_str(o, "kv_dtype", dtype_names[j->serving.kv_dtype]);

	return jobj_complete(o, ok);
}

struct cJSON *infer_to_json(const struct job_spec *j,
			    const struct infer_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && step_json_job(o, j, r->gpus) &&
		 jobj_add_finite(o, "step_time_s", r->step_s) &&
		 jobj_add_finite(o, "tokens_per_s", r->tokens_per_s_total) &&
		 jobj_add_finite(o, "mfu", r->mfu) &&
		 jobj_add_finite(o, "tflops_per_gpu", r->tflops_per_gpu) &&
		 jobj_add(o, "memory", infer_mem_json(&r->mem)) &&
		 jobj_add(o, "breakdown", breakdown_json(r->part_s)) &&
		 jobj_add(o, "inference", inference_json(j, r)) &&
		 jobj_add(o, "collectives", colls_json(r)) &&
		 jobj_add_finite(o, "tasks", r->tasks) &&
		 jobj_add_finite(o, "events", (double)r->events);

	return jobj_complete(o, ok);
}

static void line(FILE *out, const char *label, double v, enum unit_kind k)
{
	char buf[32];

	step_human(buf, sizeof(buf), v, k);
	fprintf(out, "  %-14s %s\n", label, buf);
}

void infer_print(FILE *out, const struct job_spec *j,
		 const struct infer_result *r)
{
	const struct infer_mem *m = &r->mem;
	char a[32], b[32], c[32], d[32];
	int i;

	fprintf(out, "%s: %s %s on %s (%lld GPU%s, %s), engine %s\n",
		j->name ? j->name : "job", job_phase_names[j->phase],
		j->model->name, j->system->name, (long long)r->gpus,
		r->gpus == 1 ? "" : "s",
		j->system->gpu->name, j->serving.engine->name);
	model_print_text_of(out, j->model);
	fprintf(out, "  layout         tp %lld  pp %lld  x %lld instances; "
		"weights %s, KV %s, GEMMs at %s\n",
		(long long)j->parallelism.tp, (long long)j->parallelism.pp,
		(long long)r->instances, dtype_names[j->serving.dtype],
		dtype_names[j->serving.kv_dtype],
		dtype_names[infer_compute_dtype(j, j->system->gpu)]);
	fprintf(out, "  batch          %.0f sequences, %.0f tokens this step, "
		"%lld cached each; graph %s\n", r->batch, r->tokens,
		(long long)j->serving.context_len, graph_names[r->info.graph]);
	line(out, "step time", r->step_s, UNIT_TIME);
	step_human(a, sizeof(a), r->gpu_s, UNIT_TIME);
	step_human(b, sizeof(b), r->host_s, UNIT_TIME);
	fprintf(out, "  %-14s GPU %s, host %s (%s)\n", "", a, b,
		r->info.host_in_prog ? "before the GPU" : "overlapped");
	fprintf(out, "  throughput     %.0f tokens/s per instance, %.0f tokens/s "
		"for the job\n", r->tokens_per_s, r->tokens_per_s_total);
	step_human(a, sizeof(a), r->hbm_floor_s, UNIT_TIME);
	step_human(b, sizeof(b), r->weights_read_B, UNIT_BYTES);
	step_human(c, sizeof(c), r->kv_read_B, UNIT_BYTES);
	fprintf(out, "  HBM floor      %s (weights %s + KV %s per GPU at peak "
		"bandwidth)\n", a, b, c);
	fprintf(out, "  MFU            %.1f %% (%.1f TFLOP/s per GPU)\n",
		100 * r->mfu, r->tflops_per_gpu);
	fprintf(out, "  breakdown (critical path)\n");
	for (i = 0; i < EXEC_PART_COUNT; i++) {
		step_human(a, sizeof(a), r->part_s[i], UNIT_TIME);
		fprintf(out, "    %-24s %10s %6.1f %%\n", exec_part_labels[i], a,
			r->step_s > 0 ? 100 * r->part_s[i] / r->step_s : 0);
	}
	step_human(a, sizeof(a), m->peak_B, UNIT_BYTES);
	step_human(b, sizeof(b), m->usable_B, UNIT_BYTES);
	fprintf(out, "  memory per GPU %s of %s usable: %s (pipeline rank %lld%s)\n",
		a, b, m->fits ? "fits" : "DOES NOT FIT", (long long)m->rank,
		/* within the memory, short of KV pages (infer_run.c): the
		 * total alone read as if it fitted */
		!m->fits && m->peak_B <= m->usable_B && m->kv_pages >= 1 ?
		": the step's sequences need more KV pages than the cache "
		"holds" : "");
	step_human(a, sizeof(a), m->weights_B, UNIT_BYTES);
	step_human(b, sizeof(b), fmax(m->kv_cache_B, 0), UNIT_BYTES);
	step_human(c, sizeof(c), m->activations_B, UNIT_BYTES);
	step_human(d, sizeof(d), m->workspace_B, UNIT_BYTES);
	/* the parts of the total above (infer_mem.c's peak_B); a negative
	 * pool (the rest over the usable memory) printed as
	 * "KV cache -1.848e+11 B" (kimi-k2 bf16 on 8 H100s) */
	fprintf(out, "    weights %s, KV cache %s%s, activations %s, "
		"workspace %s\n", a, b, m->kv_cache_B < 0 ? " (none left)" :
		"", c, d);
	step_human(a, sizeof(a), m->kv_token_B, UNIT_BYTES);
	fprintf(out, "    KV %s per token: %.0f tokens, %.0f sequences of "
		"this length\n", a, m->kv_tokens, m->kv_sequences);
	if (r->ncolls)
		fprintf(out, "  top collectives (per simulated group; time: all "
			"calls)\n");
	for (i = 0; i < (int)r->ncolls && i < STEP_TOP_COLLS; i++) {
		const struct step_coll_stat *s = &r->colls[i];

		step_human(a, sizeof(a), s->bytes / fmax(s->count, 1),
			     UNIT_BYTES);
		step_human(b, sizeof(b), s->time_s, UNIT_TIME);
		fprintf(out, "    %-22s %-10s %4u GPU%s %6u call%s %10s each "
			"%10s\n", s->name, coll_op_names[s->op], s->group,
			s->group == 1 ? " " : "s", s->count,
			s->count == 1 ? " " : "s", a, b);
	}
}
