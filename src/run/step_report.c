/*
 * step_report.c - a step result as JSON (`llmsim run --json`) and as a
 * readable summary with units.
 */
#include "step.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/units.h"
#include "base/version.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "jobj.h"

static struct cJSON *breakdown_json(const struct step_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int i, ok = o != NULL;

	for (i = 0; ok && i < EXEC_PART_COUNT; i++)
		ok = jobj_add_num(o, exec_part_keys[i], r->part_s[i]);
	return jobj_complete(o, ok);
}

/* One pipeline stage's memory per GPU. */
static struct cJSON *stage_json(const struct footprint *m)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "pipeline_rank", (double)m->rank) &&
		 jobj_add_num(o, "peak_bytes_per_gpu", m->peak_B) &&
		 jobj_add_num(o, "weights_bytes", m->weights_B) &&
		 jobj_add_num(o, "gradients_bytes", m->grads_B) &&
		 jobj_add_num(o, "optimizer_bytes", m->optimizer_B) &&
		 jobj_add_num(o, "activations_bytes", m->activations_B) &&
		 jobj_add_num(o, "workspace_bytes", m->workspace_B) &&
		 jobj_add(o, "fits", cJSON_CreateBool(m->fits)) &&
		 jobj_add_num(o, "params_per_gpu", m->params);

	return jobj_complete(o, ok);
}

static struct cJSON *stages_json(const struct step_result *r)
{
	struct cJSON *a = cJSON_CreateArray();
	int64_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < r->nstages; i++) {
		struct cJSON *o = stage_json(&r->stage_mem[i]);

		ok = o && cJSON_AddItemToArray(a, o);
		if (!ok)
			cJSON_Delete(o);
	}
	return jobj_complete(a, ok);
}

/* The schedule's bubble with equal stages and each stage's compute. */
static struct cJSON *pipeline_json(const struct step_result *r)
{
	struct cJSON *o = cJSON_CreateObject(), *a = cJSON_CreateArray();
	int64_t i;
	int ok = o != NULL && a != NULL;

	for (i = 0; ok && i < r->nstages; i++) {
		struct cJSON *v = cJSON_CreateNumber(r->stage_compute_s[i]);

		ok = v && cJSON_AddItemToArray(a, v);
		if (!ok)
			cJSON_Delete(v);
	}
	if (!ok) {
		cJSON_Delete(a);
		return jobj_complete(o, 0);
	}
	ok = jobj_add_num(o, "ideal_bubble", r->ideal_bubble) &&
	     jobj_add(o, "stage_compute_s", a);
	return jobj_complete(o, ok);
}

static struct cJSON *memory_json(const struct step_result *r)
{
	const struct footprint *m = &r->mem;
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "peak_bytes_per_gpu", m->peak_B) &&
		 jobj_add_num(o, "weights_bytes", m->weights_B) &&
		 jobj_add_num(o, "gradients_bytes", m->grads_B) &&
		 jobj_add_num(o, "optimizer_bytes", m->optimizer_B) &&
		 jobj_add_num(o, "activations_bytes", m->activations_B) &&
		 jobj_add_num(o, "workspace_bytes", m->workspace_B) &&
		 jobj_add_num(o, "usable_bytes", m->usable_B) &&
		 jobj_add(o, "fits", cJSON_CreateBool(m->fits)) &&
		 jobj_add_num(o, "pipeline_rank", (double)m->rank) &&
		 jobj_add_num(o, "params_per_gpu", m->params) &&
		 jobj_add(o, "stages", stages_json(r));

	return jobj_complete(o, ok);
}

/* The final rank's compute by pass, and the optimizer step. */
static struct cJSON *phases_json(const struct step_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "forward_s", r->forward_s) &&
		 jobj_add_num(o, "backward_s", r->backward_s) &&
		 jobj_add_num(o, "optimizer_s", r->part_s[EXEC_OPTIMIZER]);

	return jobj_complete(o, ok);
}

static struct cJSON *exposed_json(const struct step_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	char key[16];
	int i, ok = o != NULL;

	for (i = 0; ok && i < STEP_DIM_COUNT; i++) {
		snprintf(key, sizeof(key), "%s_s", step_dim_names[i]);
		ok = jobj_add_num(o, key, r->exposed_dim_s[i]);
	}
	return jobj_complete(o, ok);
}

static struct cJSON *coll_json(const struct step_coll_stat *s)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_str(o, "name", s->name) &&
		 jobj_add_str(o, "op", coll_op_names[s->op]) &&
		 jobj_add_num(o, "group_gpus", s->group) &&
		 jobj_add_num(o, "bytes", s->bytes) &&	/* all calls */
		 jobj_add_num(o, "calls", s->count) &&
		 jobj_add_num(o, "time_s", s->time_s) &&
		 jobj_add_num(o, "critical_path_s", s->critical_s);

	return jobj_complete(o, ok);
}

static struct cJSON *colls_json(const struct step_result *r)
{
	struct cJSON *a = cJSON_CreateArray();
	uint32_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < r->ncolls; i++) {
		struct cJSON *o = coll_json(&r->colls[i]);

		ok = o && cJSON_AddItemToArray(a, o);
		if (!ok)
			cJSON_Delete(o);
	}
	return jobj_complete(a, ok);
}

static struct cJSON *sim_json(const struct step_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	const struct layout *l = &r->plan.lay;
	int ok = o && jobj_add_num(o, "simulated_ranks", l->nranks) &&
		 jobj_add(o, "full_fidelity",
			  cJSON_CreateBool(l->sim == l->stage)) &&
		 jobj_add_num(o, "tasks", r->tasks) &&
		 jobj_add_num(o, "events", (double)r->events) &&
		 jobj_add_num(o, "collective_calls", (double)r->calls) &&
		 jobj_add_num(o, "collectives_replayed", (double)r->replayed) &&
		 jobj_add_num(o, "flows", (double)r->flows) &&
		 jobj_add_num(o, "flow_solves", (double)r->solves);

	return jobj_complete(o, ok);
}

/* Time of the collectives whose names start with prefix, summed over
 * the simulated GPUs' calls, the part of it on the critical path
 * (exposed; the rest, "hidden", is off the path: mostly the calls of the
 * GPUs the path does not pass through, e.g. the other pipeline stages',
 * whether or not their own GPU computed meanwhile), and the part during
 * which the call's own GPU computed (overlapped: what compute on the
 * same GPU hid). */
static void comm_time(const struct step_result *r, const char *prefix,
		      double *total_s, double *exposed_s, double *overlapped_s)
{
	uint32_t i;
	size_t n = strlen(prefix);

	*total_s = *exposed_s = *overlapped_s = 0;
	for (i = 0; i < r->ncolls; i++)
		if (strncmp(r->colls[i].name, prefix, n) == 0) {
			*total_s += r->colls[i].time_s;
			*exposed_s += r->colls[i].critical_s;
			*overlapped_s += r->colls[i].overlapped_s;
		}
}

/* MoE: routing and the dispatch/combine time exposed and hidden. */
static struct cJSON *moe_json(const struct job_spec *j,
			      const struct step_result *r)
{
	struct cJSON *o;
	double total, exposed, overlapped;
	int ok;

	if (!model_is_moe(j->model))
		return cJSON_CreateNull();
	comm_time(r, "moe_", &total, &exposed, &overlapped);
	o = cJSON_CreateObject();
	ok = o && jobj_add_num(o, "active_params", r->plan.active_params) &&
	     jobj_add_str(o, "dispatcher", j->moe.dispatcher ?
		     j->moe.dispatcher->name : NULL) &&
	     jobj_add_str(o, "routing",
			  routing_balance_names[job_routing_balance(j)]) &&
	     jobj_add_str(o, "routing_method", r->plan.routing) &&
	     jobj_add_num(o, "max_mean_load", r->plan.max_mean) &&
	     jobj_add_num(o, "dispatch_combine_s", total) &&
	     jobj_add_num(o, "dispatch_combine_exposed_s", exposed) &&
	     jobj_add_num(o, "dispatch_combine_hidden_s", total - exposed) &&
	     jobj_add_num(o, "dispatch_combine_overlapped_s", overlapped);
	return jobj_complete(o, ok);
}

/* The host threads: the busiest one's issue time and what of the host's
 * work the GPUs waited for. */
static struct cJSON *host_json(const struct step_result *r)
{
	struct cJSON *o;
	int ok;

	if (r->host_busy_s <= 0)
		return cJSON_CreateNull();
	o = cJSON_CreateObject();
	ok = o && jobj_add_num(o, "busy_s", r->host_busy_s) &&
	     jobj_add_num(o, "critical_s", r->host_critical_s);
	return jobj_complete(o, ok);
}

/* CP: the K/V exchange's time exposed and hidden. */
static struct cJSON *cp_json(const struct job_spec *j,
			     const struct step_result *r)
{
	struct cJSON *o;
	double total, exposed, overlapped;
	int ok;

	if (j->parallelism.cp <= 1)
		return cJSON_CreateNull();
	comm_time(r, "cp_", &total, &exposed, &overlapped);
	o = cJSON_CreateObject();
	ok = o && jobj_add_str(o, "comm_type",
			  cp_comm_names[j->parallelism.cp_comm_type]) &&
	     jobj_add_num(o, "exchange_s", total) &&
	     jobj_add_num(o, "exchange_exposed_s", exposed) &&
	     jobj_add_num(o, "exchange_hidden_s", total - exposed) &&
	     jobj_add_num(o, "exchange_overlapped_s", overlapped);
	return jobj_complete(o, ok);
}

int step_json_job(struct cJSON *o, const struct job_spec *j, int64_t gpus)
{
	return jobj_add_str(o, "job", j->name) &&
	       jobj_add_str(o, "model", j->model->name) &&
	       (!j->model->text_model_of ||
		jobj_add_str(o, "text_model_of", j->model->text_model_of)) &&
	       jobj_add_str(o, "system", j->system->name) &&
	       jobj_add_str(o, "gpu", j->system->gpu->name) &&
	       jobj_add_num(o, "gpus", (double)gpus);
}

struct cJSON *step_to_json(const struct job_spec *j,
			   const struct step_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	char hash[65];
	int ok = o && config_hash(&job_schema, j, hash) == 0 &&
		 jobj_add_num(o, "schema_version", STEP_JSON_SCHEMA) &&
		 jobj_add_str(o, "llmsim_version", LLMSIM_VERSION_STRING) &&
		 jobj_add_str(o, "config_hash", hash) &&
		 step_json_job(o, j, r->gpus) &&
		 jobj_add_num(o, "step_time_s", r->step_s) &&
		 jobj_add_num(o, "step_time_p50_s", r->step_p50_s) &&
		 jobj_add_num(o, "step_time_p90_s", r->step_p90_s) &&
		 jobj_add_num(o, "tokens_per_s", r->tokens_per_s) &&
		 jobj_add_num(o, "mfu", r->mfu) &&
		 jobj_add_num(o, "tflops_per_gpu", r->tflops_per_gpu) &&
		 jobj_add_num(o, "hardware_tflops_per_gpu",
			      r->hw_tflops_per_gpu) &&
		 jobj_add_num(o, "peak_tflops_per_gpu", r->peak_flops / 1e12) &&
		 jobj_add_num(o, "matrix_clock_mhz", r->matrix_clock_hz / 1e6) &&
		 jobj_add_num(o, "tokens_per_step", r->plan.tokens) &&
		 jobj_add_num(o, "microbatches",
			      (double)r->plan.microbatches) &&
		 jobj_add_num(o, "model_flops_per_step", r->plan.model_flops) &&
		 jobj_add_num(o, "params", r->plan.params) &&
		 jobj_add(o, "breakdown", breakdown_json(r)) &&
		 jobj_add(o, "phases", phases_json(r)) &&
		 jobj_add(o, "exposed_comm_by_dim", exposed_json(r)) &&
		 jobj_add(o, "pipeline", pipeline_json(r)) &&
		 jobj_add(o, "memory", memory_json(r)) &&
		 jobj_add(o, "moe", moe_json(j, r)) &&
		 jobj_add(o, "context_parallel", cp_json(j, r)) &&
		 jobj_add(o, "host", host_json(r)) &&
		 jobj_add(o, "collectives", colls_json(r)) &&
		 jobj_add(o, "simulation", sim_json(r));

	return jobj_complete(o, ok);
}

/* ---- text ---- */

const char *step_human(char *buf, size_t len, double v, enum unit_kind k)
{
	static const char *const byte_units[] = {"B", "kB", "MB", "GB", "TB"};
	static const char *const time_units[] = {"s", "ms", "us", "ns"};
	int i = 0;

	if (k == UNIT_BYTES) {
		while (v >= 999.95 && i < 4) {
			v /= 1e3;
			i++;
		}
		snprintf(buf, len, "%.4g %s", v, byte_units[i]);
	} else if (k == UNIT_TIME) {	/* a difference may be negative */
		while (v != 0 && fabs(v) < 0.99995 && i < 3) {
			v *= 1e3;
			i++;
		}
		snprintf(buf, len, "%.4g %s", v, time_units[i]);
	} else {
		units_format(buf, len, v, k);
	}
	return buf;
}

/* " (mla_up_proj, mlp)": the modules selective recomputation re-runs. */
static void print_recompute_modules(FILE *out, const struct job_spec *j)
{
	const struct schema_int_list *l = &j->training.recompute_modules;
	size_t i;

	if (j->training.recompute != RECOMPUTE_SELECTIVE || !l->given)
		return;
	if (l->n == 0)
		fputs(" (no modules)", out);
	for (i = 0; i < l->n; i++)
		fprintf(out, "%s%s", i ? ", " : " (",
			recompute_module_names[l->v[i]]);
	fputc(')', out);
}

static void print_layout(FILE *out, const struct job_spec *j,
			 const struct step_result *r)
{
	const struct parallel_spec *p = &j->parallelism;

	fprintf(out, "  layout         tp %lld  pp %lld", (long long)p->tp,
		(long long)p->pp);
	if (p->vpp > 1)
		fprintf(out, " x vpp %lld", (long long)p->vpp);
	fprintf(out, " (%s)  dp %lld%s%s, zero %lld, recompute %s",
		pp_schedule_names[p->schedule], (long long)p->dp,
		p->sequence_parallel && p->tp > 1 ? ", sequence parallel" : "",
		p->tp_comm_overlap ? ", TP overlap" : "",
		(long long)j->training.zero_stage,
		recompute_names[j->training.recompute]);
	print_recompute_modules(out, j);
	if (p->defer_embedding_wgrad) {	/* models/train.c build_drain */
		int64_t m = job_microbatches(j), k = p->wgrad_deferral_limit;

		fprintf(out, ", head wgrads of %lld of %lld microbatches "
			"deferred", (long long)(k > 0 && k < m ? k : m),
			(long long)m);
	}
	fputc('\n', out);
	if (p->cp > 1)
		fprintf(out, "  context        cp %lld (%s%s)\n", (long long)p->cp,
			cp_comm_names[p->cp_comm_type],
			p->cp_load_balance ? ", load balanced" : "");
	if (model_is_moe(j->model))
		fprintf(out, "  experts        ep %lld  etp %lld  edp %lld, "
			"dispatcher %s, routing %s (%s, busiest rank %.3g x "
			"mean)\n", (long long)p->ep, (long long)p->etp,
			(long long)p->edp, j->moe.dispatcher->name ?
			j->moe.dispatcher->name : "inline",
			routing_balance_names[job_routing_balance(j)],
			r->plan.routing ? r->plan.routing : "?", r->plan.max_mean);
	fprintf(out, "  batch          %lld sequences of %lld tokens = %.0f tokens; "
		"%lld microbatches of %lld per pipeline\n",
		(long long)j->training.global_batch_size,
		(long long)j->training.seq_len, r->plan.tokens,
		(long long)r->plan.microbatches,
		(long long)j->training.micro_batch_size);
}

static void print_speed(FILE *out, const struct job_spec *j,
			const struct step_result *r)
{
	char a[32], b[32], c[32];

	fprintf(out, "  step time      %s (p50 %s, p90 %s)\n",
		step_human(a, sizeof(a), r->step_s, UNIT_TIME),
		step_human(b, sizeof(b), r->step_p50_s, UNIT_TIME),
		step_human(c, sizeof(c), r->step_p90_s, UNIT_TIME));
	fprintf(out, "  throughput     %.0f tokens/s (%.0f tokens/s per GPU)\n",
		r->tokens_per_s, r->tokens_per_s / (double)r->gpus);
	fprintf(out, "  MFU            %.1f %% = %.1f TFLOP/s per GPU of the "
		"%.1f TFLOP/s %s dense peak\n", 100 * r->mfu, r->tflops_per_gpu,
		r->peak_flops / 1e12, dtype_names[j->training.dtype]);
	fprintf(out, "  executed       %.1f TFLOP/s per GPU (recomputation "
		"included)\n", r->hw_tflops_per_gpu);
	if (gpu_power_modelled(j->system->gpu) && r->ncolls > 0)
		fprintf(out, "  matrix clock   %.0f MHz, back to back (the power "
			"model runs steps without collectives only)\n",
			r->matrix_clock_hz / 1e6);
	else if (gpu_power_modelled(j->system->gpu))
		fprintf(out, "  matrix clock   %.0f MHz under the power limit "
			"(%.0f MHz back to back, %.0f MHz below the limit)\n",
			r->matrix_clock_hz / 1e6,
			j->system->gpu->sustained_matrix_clock_hz / 1e6,
			j->system->gpu->burst_matrix_clock_hz / 1e6);
}

/* A kind of communication's time summed over the simulated calls, how
 * much of it is on the critical path (exposed) or off it (hidden: other
 * GPUs' calls included), and how much the same GPU's compute overlapped,
 * under the breakdown. */
static void print_hidden(FILE *out, const struct step_result *r,
			 const char *prefix, const char *label)
{
	char a[32], b[32], c[32], e[32];
	double total, exposed, overlapped;

	comm_time(r, prefix, &total, &exposed, &overlapped);
	if (total <= 0)
		return;
	fprintf(out, "    %-22s %12s  (%s exposed, %s hidden; all calls of "
		"the simulated GPUs; %s under the same GPU's compute)\n", label,
		step_human(a, sizeof(a), total, UNIT_TIME),
		step_human(b, sizeof(b), exposed, UNIT_TIME),
		step_human(c, sizeof(c), total - exposed, UNIT_TIME),
		step_human(e, sizeof(e), overlapped, UNIT_TIME));
}

static void print_breakdown(FILE *out, const struct job_spec *j,
			    const struct step_result *r)
{
	char a[32], b[32];
	int i;

	fprintf(out, "  breakdown (critical path)\n");
	for (i = 0; i < EXEC_PART_COUNT; i++)
		fprintf(out, "    %-22s %12s  %5.1f %%\n", exec_part_labels[i],
			step_human(a, sizeof(a), r->part_s[i], UNIT_TIME),
			r->step_s > 0 ? 100 * r->part_s[i] / r->step_s : 0);
	if (model_is_moe(j->model))
		print_hidden(out, r, "moe_", "dispatch/combine");
	if (j->parallelism.cp > 1)
		print_hidden(out, r, "cp_", "CP K/V exchange");
	if (r->host_busy_s > 0)
		fprintf(out, "    %-22s %12s  (%s of it on the critical path: "
			"the GPUs waited; in other)\n", "host issue and syncs",
			step_human(a, sizeof(a), r->host_busy_s, UNIT_TIME),
			step_human(b, sizeof(b), r->host_critical_s, UNIT_TIME));
}

/* With a pipeline: what the breakdown's bubble is (the final stage idle
 * while other stages computed, exec_path.c), the part the schedule would
 * have if every stage took as long ((p - 1) / (v m + p - 1) of the step,
 * sched.c) and the rest, which stages of unequal time add; then the
 * compute of the lightest and busiest stages and the final stage's own
 * (a user read "pipeline bubble 14.7 %" beside "bubble with equal stages
 * 1.8 %" as two answers to one question). */
static void print_pipeline(FILE *out, const struct job_spec *j,
			   const struct step_result *r)
{
	char a[32], b[32], c[32];
	double bubble = r->part_s[EXEC_BUBBLE], ideal, rest;
	int64_t i, lo = 0, hi = 0;

	if (r->nstages < 2)
		return;
	for (i = 1; i < r->nstages; i++) {
		if (r->stage_compute_s[i] < r->stage_compute_s[lo])
			lo = i;
		if (r->stage_compute_s[i] > r->stage_compute_s[hi])
			hi = i;
	}
	ideal = r->ideal_bubble * r->step_s;
	rest = bubble - ideal;
	fprintf(out, "  pipeline       %s, pp %lld, vpp %lld, %lld "
		"microbatches\n", pp_schedule_names[j->parallelism.schedule],
		(long long)j->parallelism.pp, (long long)j->parallelism.vpp,
		(long long)r->plan.microbatches);
	fprintf(out, "    bubble %s (%.1f %% of the step): stage %lld, which "
		"finished last, idle while other stages computed\n",
		step_human(a, sizeof(a), bubble, UNIT_TIME),
		r->step_s > 0 ? 100 * bubble / r->step_s : 0,
		(long long)r->final_stage);
	fprintf(out, "      %s of it the schedule's if stages took equal "
		"time (%.1f %% of the step: (p - 1) / (v m + p - 1))\n",
		step_human(a, sizeof(a), ideal, UNIT_TIME),
		100 * r->ideal_bubble);
	if (rest > 0)
		fprintf(out, "      %s beyond that: stages take unequal time "
			"(their compute below, their communication), so "
			"each waits on slower ones\n",
			step_human(a, sizeof(a), rest, UNIT_TIME));
	fprintf(out, "    compute per GPU by stage %s (stage %lld) to %s "
		"(stage %lld); stage %lld's %s\n",
		step_human(a, sizeof(a), r->stage_compute_s[lo], UNIT_TIME),
		(long long)lo,
		step_human(b, sizeof(b), r->stage_compute_s[hi], UNIT_TIME),
		(long long)hi, (long long)r->final_stage,
		step_human(c, sizeof(c), r->part_s[EXEC_COMPUTE], UNIT_TIME));
}

static void print_memory(FILE *out, const struct footprint *m)
{
	char a[32], b[32];

	fprintf(out, "  memory per GPU %s of %s usable: %s (pipeline rank %lld)\n",
		step_human(a, sizeof(a), m->peak_B, UNIT_BYTES),
		step_human(b, sizeof(b), m->usable_B, UNIT_BYTES),
		m->fits ? "fits" : "DOES NOT FIT", (long long)m->rank);
	fprintf(out, "    weights %s", step_human(a, sizeof(a), m->weights_B, UNIT_BYTES));
	fprintf(out, ", gradients %s", step_human(a, sizeof(a), m->grads_B, UNIT_BYTES));
	fprintf(out, ", optimizer %s\n", step_human(a, sizeof(a), m->optimizer_B, UNIT_BYTES));
	fprintf(out, "    activations %s", step_human(a, sizeof(a), m->activations_B, UNIT_BYTES));
	fprintf(out, ", workspace %s\n", step_human(a, sizeof(a), m->workspace_B, UNIT_BYTES));
}

/* Every pipeline stage's memory per GPU, when there is more than one. */
static void print_stages(FILE *out, const struct step_result *r)
{
	char c[6][32];
	int64_t i;

	if (r->nstages < 2)
		return;
	fprintf(out, "  memory per GPU by pipeline stage\n");
	fprintf(out, "    %5s %11s %11s %11s %11s %11s %11s  %s\n", "stage",
		"weights", "gradients", "optimizer", "activations",
		"workspace", "peak", "fits");
	for (i = 0; i < r->nstages; i++) {
		const struct footprint *m = &r->stage_mem[i];

		fprintf(out, "    %5lld %11s %11s %11s %11s %11s %11s  %s\n",
			(long long)m->rank,
			step_human(c[0], sizeof(c[0]), m->weights_B, UNIT_BYTES),
			step_human(c[1], sizeof(c[1]), m->grads_B, UNIT_BYTES),
			step_human(c[2], sizeof(c[2]), m->optimizer_B, UNIT_BYTES),
			step_human(c[3], sizeof(c[3]), m->activations_B, UNIT_BYTES),
			step_human(c[4], sizeof(c[4]), m->workspace_B, UNIT_BYTES),
			step_human(c[5], sizeof(c[5]), m->peak_B, UNIT_BYTES),
			m->fits ? "yes" : "NO");
	}
	if (r->nstages < r->plan.lay.pp)
		fprintf(out, "    (the first %lld of %lld stages)\n",
			(long long)r->nstages, (long long)r->plan.lay.pp);
}

/* Forward and backward compute, the optimizer; exposed communication by
 * parallel dimension. */
static void print_splits(FILE *out, const struct step_result *r)
{
	char a[32], b[32], c[32];
	int i, any = 0;

	fprintf(out, "  compute by pass  forward %s, backward %s (recomputation "
		"included), optimizer %s\n",
		step_human(a, sizeof(a), r->forward_s, UNIT_TIME),
		step_human(b, sizeof(b), r->backward_s, UNIT_TIME),
		step_human(c, sizeof(c), r->part_s[EXEC_OPTIMIZER], UNIT_TIME));
	fprintf(out, "  exposed comm by dimension ");
	for (i = 0; i < STEP_DIM_COUNT; i++) {
		if (r->exposed_dim_s[i] <= 0)
			continue;
		fprintf(out, "%s%s %s", any ? ", " : " ", step_dim_names[i],
			step_human(a, sizeof(a), r->exposed_dim_s[i], UNIT_TIME));
		any = 1;
	}
	fprintf(out, "%s\n", any ? "" : " none");
}

static void print_colls(FILE *out, const struct step_result *r)
{
	char a[32], b[32], c[32];
	uint32_t i, shown = r->ncolls < STEP_TOP_COLLS ? r->ncolls :
			    STEP_TOP_COLLS;

	if (r->ncolls == 0)
		return;
	fprintf(out, "  top collectives (per simulated group)\n");
	fprintf(out, "    %-26s %-14s %5s %7s %11s %11s %11s\n", "name", "op",
		"GPUs", "calls", "size/call", "time", "critical");
	for (i = 0; i < shown; i++) {
		const struct step_coll_stat *s = &r->colls[i];

		fprintf(out, "    %-26s %-14s %5u %7u %11s %11s %11s\n", s->name,
			coll_op_names[s->op], s->group, s->count,
			step_human(a, sizeof(a), s->bytes / s->count, UNIT_BYTES),
			step_human(b, sizeof(b), s->time_s, UNIT_TIME),
			step_human(c, sizeof(c), s->critical_s, UNIT_TIME));
	}
	if (r->ncolls > shown)
		fprintf(out, "    ... and %u more (--json lists every one)\n",
			r->ncolls - shown);
}

void step_print(FILE *out, const struct job_spec *j,
		const struct step_result *r)
{
	char a[32], b[32];

	/* A job that does not fit leads with it: its step time is what it
	 * would be with enough memory, not something that can run. */
	if (!r->mem.fits)
		fprintf(out, "DOES NOT FIT: peak memory %s per GPU on pipeline "
			"stage %lld is more than the %s usable; the step time "
			"below assumes it fit\n",
			step_human(a, sizeof(a), r->mem.peak_B, UNIT_BYTES),
			(long long)r->mem.rank,
			step_human(b, sizeof(b), r->mem.usable_B, UNIT_BYTES));
	fprintf(out, "%s: %s on %s (%lld GPU%s, %s), %s\n",
		j->name ? j->name : "job", j->model->name ? j->model->name : "model",
		j->system->name ? j->system->name : "system", (long long)r->gpus,
		r->gpus == 1 ? "" : "s",
		j->system->gpu->name ? j->system->gpu->name : "gpu",
		dtype_names[j->training.dtype]);
	model_print_text_of(out, j->model);
	print_layout(out, j, r);
	print_speed(out, j, r);
	print_breakdown(out, j, r);
	print_pipeline(out, j, r);
	print_splits(out, r);
	print_memory(out, &r->mem);
	print_stages(out, r);
	print_colls(out, r);
}
