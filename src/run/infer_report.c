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

static int add(struct cJSON *o, const char *key, struct cJSON *item)
{
	if (item && cJSON_AddItemToObject(o, key, item))
		return 1;
	cJSON_Delete(item);
	return 0;
}

static int add_num(struct cJSON *o, const char *key, double v)
{
	return add(o, key, cJSON_CreateNumber(isfinite(v) ? v : 0));
}

static int add_str(struct cJSON *o, const char *key, const char *v)
{
	return add(o, key, v ? cJSON_CreateString(v) : cJSON_CreateNull());
}

static struct cJSON *complete(struct cJSON *o, int ok)
{
	if (ok)
		return o;
	cJSON_Delete(o);
	return NULL;
}

static const char *const graph_names[] = {"none", "piecewise", "full"};

struct cJSON *infer_mem_json(const struct infer_mem *m)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && add_num(o, "peak_bytes_per_gpu", m->peak_B) &&
		 add_num(o, "weights_bytes", m->weights_B) &&
		 add_num(o, "kv_cache_bytes", m->kv_cache_B) &&
		 add_num(o, "activations_bytes", m->activations_B) &&
		 add_num(o, "workspace_bytes", m->workspace_B) &&
		 add_num(o, "usable_bytes", m->usable_B) &&
		 add(o, "fits", cJSON_CreateBool(m->fits)) &&
		 add_num(o, "pipeline_rank", (double)m->rank) &&
		 add_num(o, "params_per_gpu", m->params) &&
		 add_num(o, "kv_bytes_per_token", m->kv_token_B) &&
		 add_num(o, "kv_capacity_tokens", m->kv_tokens) &&
		 add_num(o, "kv_capacity_sequences", m->kv_sequences);

	return complete(o, ok);
}

static struct cJSON *breakdown_json(const double *part)
{
	struct cJSON *o = cJSON_CreateObject();
	int i, ok = o != NULL;

	for (i = 0; ok && i < EXEC_PART_COUNT; i++)
		ok = add_num(o, exec_part_keys[i], part[i]);
	return complete(o, ok);
}

static struct cJSON *colls_json(const struct infer_result *r)
{
	struct cJSON *a = cJSON_CreateArray();
	uint32_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < r->ncolls; i++) {
		const struct step_coll_stat *s = &r->colls[i];
		struct cJSON *o = cJSON_CreateObject();

		ok = o && add_str(o, "name", s->name) &&
		     add_str(o, "op", coll_op_names[s->op]) &&
		     add_num(o, "group_gpus", s->group) &&
		     add_num(o, "bytes", s->bytes) &&
		     add_num(o, "calls", s->count) &&
		     add_num(o, "time_s", s->time_s) &&
		     add_num(o, "critical_path_s", s->critical_s);
		if (ok)
			ok = cJSON_AddItemToArray(a, o);
		if (!ok)
			cJSON_Delete(o);
	}
	return complete(a, ok);
}

static struct cJSON *inference_json(const struct job_spec *j,
				    const struct infer_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && add_str(o, "phase", job_phase_names[j->phase]) &&
		 add_str(o, "engine", j->serving.engine->name) &&
		 add_num(o, "batch", r->batch) &&
		 add_num(o, "tokens", r->tokens) &&
		 add_num(o, "context_len", (double)j->serving.context_len) &&
		 add_num(o, "microbatches", (double)r->info.microbatches) &&
		 add_str(o, "cuda_graph", graph_names[r->info.graph]) &&
		 add_num(o, "gpu_time_s", r->gpu_s) &&
		 add_num(o, "host_time_s", r->host_s) &&
		 add(o, "host_overlapped", cJSON_CreateBool(!r->info.host_in_prog)) &&
		 add_num(o, "tokens_per_s_per_instance", r->tokens_per_s) &&
		 add_num(o, "instances", (double)r->instances) &&
		 add_num(o, "weights_read_bytes_per_gpu", r->weights_read_B) &&
		 add_num(o, "kv_read_bytes_per_gpu", r->kv_read_B) &&
		 add_num(o, "hbm_floor_s", r->hbm_floor_s) &&
		 add_str(o, "weights_dtype", dtype_names[j->serving.dtype]) &&
		 add_str(o, "kv_dtype", dtype_names[j->serving.kv_dtype]);

	return complete(o, ok);
}

struct cJSON *infer_to_json(const struct job_spec *j,
			    const struct infer_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && add_str(o, "job", j->name) &&
		 add_str(o, "model", j->model->name) &&
		 add_str(o, "system", j->system->name) &&
		 add_str(o, "gpu", j->system->gpu->name) &&
		 add_num(o, "gpus", (double)r->gpus) &&
		 add_num(o, "step_time_s", r->step_s) &&
		 add_num(o, "tokens_per_s", r->tokens_per_s_total) &&
		 add_num(o, "mfu", r->mfu) &&
		 add_num(o, "tflops_per_gpu", r->tflops_per_gpu) &&
		 add(o, "memory", infer_mem_json(&r->mem)) &&
		 add(o, "breakdown", breakdown_json(r->part_s)) &&
		 add(o, "inference", inference_json(j, r)) &&
		 add(o, "collectives", colls_json(r)) &&
		 add_num(o, "tasks", r->tasks) &&
		 add_num(o, "events", (double)r->events);

	return complete(o, ok);
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
	char a[32], b[32], c[32];
	int i;

	fprintf(out, "%s: %s %s on %s (%lld GPUs, %s), engine %s\n",
		j->name ? j->name : "job", job_phase_names[j->phase],
		j->model->name, j->system->name, (long long)r->gpus,
		j->system->gpu->name, j->serving.engine->name);
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
	fprintf(out, "  throughput     %.0f tokens/s per instance, %.0f for "
		"the job\n", r->tokens_per_s, r->tokens_per_s_total);
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
		fprintf(out, "    %-24s %10s %6.1f %%\n", exec_part_keys[i], a,
			r->step_s > 0 ? 100 * r->part_s[i] / r->step_s : 0);
	}
	step_human(a, sizeof(a), m->peak_B, UNIT_BYTES);
	step_human(b, sizeof(b), m->usable_B, UNIT_BYTES);
	fprintf(out, "  memory per GPU %s of %s usable: %s (pipeline rank %lld)\n",
		a, b, m->fits ? "fits" : "DOES NOT FIT", (long long)m->rank);
	step_human(a, sizeof(a), m->weights_B, UNIT_BYTES);
	step_human(b, sizeof(b), m->kv_cache_B, UNIT_BYTES);
	step_human(c, sizeof(c), m->activations_B, UNIT_BYTES);
	fprintf(out, "    weights %s, KV cache %s, activations %s\n", a, b, c);
	step_human(a, sizeof(a), m->kv_token_B, UNIT_BYTES);
	fprintf(out, "    KV %s per token: %.0f tokens, %.0f sequences of "
		"this length\n", a, m->kv_tokens, m->kv_sequences);
	for (i = 0; i < (int)r->ncolls && i < STEP_TOP_COLLS; i++) {
		const struct step_coll_stat *s = &r->colls[i];

		step_human(a, sizeof(a), s->bytes / fmax(s->count, 1),
			     UNIT_BYTES);
		step_human(b, sizeof(b), s->time_s, UNIT_TIME);
		fprintf(out, "    %-22s %-10s %4u GPUs %6u calls %10s each %10s\n",
			s->name, coll_op_names[s->op], s->group, s->count, a, b);
	}
}
