/*
 * plan_report.c - a plan as JSON (`llmsim plan --json`) and as a ranked
 * table with units.
 */
#include "plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/units.h"
#include "run/jobj.h"
#include "run/step.h"

static int add_bool(struct cJSON *o, const char *key, int v)
{
	return jobj_add(o, key, cJSON_CreateBool(v));
}

static int push(struct cJSON *a, struct cJSON *item)
{
	if (item && cJSON_AddItemToArray(a, item))
		return 1;
	cJSON_Delete(item);
	return 0;
}

static struct cJSON *parts_json(const double *part)
{
	struct cJSON *o = cJSON_CreateObject();
	int i, ok = o != NULL;

	for (i = 0; ok && i < EXEC_PART_COUNT; i++)
		ok = jobj_add_num(o, exec_part_keys[i], part[i]);
	return jobj_complete(o, ok);
}

static struct cJSON *parallelism_json(const struct plan_layout *l)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "tp", (double)l->tp) &&
		 jobj_add_num(o, "pp", (double)l->pp) &&
		 jobj_add_num(o, "vpp", (double)l->vpp) &&
		 jobj_add_num(o, "cp", (double)l->cp) &&
		 jobj_add_num(o, "ep", (double)l->ep) &&
		 jobj_add_num(o, "etp", (double)(l->etp > 0 ? l->etp : l->tp)) &&
		 jobj_add_num(o, "dp", (double)l->dp) &&
		 add_bool(o, "sequence_parallel", l->sp) &&
		 jobj_add_str(o, "schedule", pp_schedule_names[l->schedule]) &&
		 add_bool(o, "tp_comm_overlap", l->tp_overlap);

	return jobj_complete(o, ok);
}

static struct cJSON *training_json(const struct plan_layout *l)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "micro_batch_size", (double)l->mbs) &&
		 jobj_add_str(o, "recompute", recompute_names[l->recompute]) &&
		 jobj_add_num(o, "zero_stage", l->zero);

	return jobj_complete(o, ok);
}

static struct cJSON *memory_json(const struct footprint *m)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "peak_bytes_per_gpu", m->peak_B) &&
		 add_bool(o, "fits", m->fits) &&
		 jobj_add_num(o, "usable_bytes", m->usable_B) &&
		 jobj_add_num(o, "weights_bytes", m->weights_B) &&
		 jobj_add_num(o, "gradients_bytes", m->grads_B) &&
		 jobj_add_num(o, "optimizer_bytes", m->optimizer_B) &&
		 jobj_add_num(o, "activations_bytes", m->activations_B) &&
		 jobj_add_num(o, "workspace_bytes", m->workspace_B);

	return jobj_complete(o, ok);
}

static struct cJSON *estimate_json(const struct plan_cand *c)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "step_time_s", c->est.step_s) &&
		 jobj_add_num(o, "rank", (double)c->est_rank) &&
		 jobj_add(o, "breakdown", parts_json(c->est.part_s)) &&
		 jobj_add_num(o, "bandwidth_bound_compute_s", c->est.mem_bound_s);

	return jobj_complete(o, ok);
}

static struct cJSON *cand_json(const struct plan_cand *c, int64_t rank)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "rank", (double)rank) &&
		 jobj_add_num(o, "gpus", (double)c->gpus) &&
		 jobj_add_num(o, "nodes", (double)c->lay.nodes) &&
		 jobj_add(o, "parallelism", parallelism_json(&c->lay)) &&
		 jobj_add(o, "training", training_json(&c->lay)) &&
		 jobj_add_num(o, "step_time_s", c->step_s) &&
		 jobj_add_num(o, "tokens_per_s", c->tokens_per_s) &&
		 jobj_add_num(o, "mfu", c->mfu) &&
		 jobj_add_num(o, "tflops_per_gpu", c->tflops_per_gpu) &&
		 jobj_add(o, "memory", memory_json(&c->mem)) &&
		 jobj_add(o, "breakdown", parts_json(c->part_s)) &&
		 jobj_add_str(o, "bound", plan_bound_names[c->bound]) &&
		 add_bool(o, "simulated", c->full) &&
		 (!c->full_failed || add_bool(o, "full_run_failed", 1)) &&
		 jobj_add(o, "estimate", estimate_json(c));

	return jobj_complete(o, ok);
}

static struct cJSON *cands_json(const struct plan_result *r)
{
	struct cJSON *a = cJSON_CreateArray();
	int64_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < r->ncands; i++)
		ok = push(a, cand_json(&r->cands[i], i + 1));
	return jobj_complete(a, ok);
}

static struct cJSON *front_json(const struct plan_result *r)
{
	struct cJSON *a = cJSON_CreateArray();
	int64_t i;
	int ok = a != NULL;

	for (i = 0; ok && i < r->nfront; i++)
		ok = push(a, cJSON_CreateNumber((double)(r->front[i] + 1)));
	return jobj_complete(a, ok);
}

static struct cJSON *pruned_json(const struct plan_result *r)
{
	static const char *const groups[] = {
		"memory", "divisibility", "schedule", "topology", "redundant",
		"unsupported",
	};
	struct cJSON *o = cJSON_CreateObject(), *by;
	int ok = o != NULL, g, k;

	for (g = 0; ok && g < 6; g++) {
		double sum = 0;

		for (k = 0; k < PR_COUNT; k++)
			if (strcmp(plan_prune_group(k), groups[g]) == 0)
				sum += (double)r->pruned[k];
		ok = jobj_add_num(o, groups[g], sum);
	}
	by = ok ? cJSON_CreateObject() : NULL;
	ok = ok && jobj_add(o, "by_rule", by);
	for (k = 0; ok && k < PR_COUNT; k++)
		ok = jobj_add_num(by, plan_prune_name(k), (double)r->pruned[k]);
	return jobj_complete(o, ok);
}

static struct cJSON *pinned_json(const struct plan_opts *opt)
{
	struct cJSON *a = cJSON_CreateArray();
	int i, ok = a != NULL;

	for (i = 0; ok && i < PD_COUNT; i++)
		if ((opt->pinned >> i) & 1u)
			ok = push(a, cJSON_CreateString(plan_dim_keys[i]));
	return jobj_complete(a, ok);
}

static struct cJSON *stats_json(const struct plan_result *r)
{
	struct cJSON *o = cJSON_CreateObject();
	int ok = o && jobj_add_num(o, "layer_block_sets", (double)r->stats.block_sets) &&
		 jobj_add_num(o, "collectives_timed", (double)r->stats.colls) &&
		 jobj_add_num(o, "collective_lookups", (double)r->stats.coll_lookups) &&
		 jobj_add_num(o, "candidates_per_s", r->est_wall_s > 0 ?
			 (double)r->ranked / r->est_wall_s : 0);

	return jobj_complete(o, ok);
}

struct cJSON *plan_to_json(const struct job_spec *j, const struct plan_opts *o,
			   const struct plan_result *r)
{
	struct cJSON *root = cJSON_CreateObject();
	int ok = root && jobj_add_str(root, "job", j->name) &&
		 jobj_add_str(root, "model", j->model->name) &&
		 jobj_add_str(root, "system", j->system->name) &&
		 jobj_add_str(root, "gpu", j->system->gpu->name) &&
		 jobj_add_num(root, "gpus", (double)system_gpus(j->system)) &&
		 jobj_add_str(root, "objective", plan_objective_names[o->objective]) &&
		 jobj_add_num(root, "top_k", o->top_k) &&
		 jobj_add_num(root, "max_gpus", (double)o->max_gpus) &&
		 jobj_add_num(root, "max_gpus_searched",
			      (double)plan_max_gpus_searched(j, o)) &&
		 jobj_add_num(root, "headroom", o->headroom) &&
		 jobj_add(root, "pinned", pinned_json(o)) &&
		 jobj_add(root, "candidates", cands_json(r)) &&
		 (o->max_gpus <= 0 || jobj_add(root, "front", front_json(r))) &&
		 jobj_add_num(root, "searched", (double)r->searched) &&
		 jobj_add_num(root, "ranked", (double)r->ranked) &&
		 jobj_add_num(root, "estimated", (double)r->estimated) &&
		 jobj_add_num(root, "simulated", (double)r->ncands) &&
		 jobj_add(root, "pruned", pruned_json(r)) &&
		 jobj_add_str(root, "why", r->why) &&
		 jobj_add_num(root, "wall_s", r->wall_s) &&
		 jobj_add_num(root, "analytical_wall_s", r->est_wall_s) &&
		 jobj_add_num(root, "full_wall_s", r->full_wall_s) &&
		 jobj_add(root, "analytical", stats_json(r));

	return jobj_complete(root, ok);
}

/* ---- text ---- */

static void print_header(FILE *out, const struct job_spec *j,
			 const struct plan_opts *o, const struct plan_result *r)
{
	char gpus[64];

	if (o->max_gpus > 0 && plan_max_gpus_searched(j, o) != o->max_gpus)
		/* whole nodes: 12 on 8-GPU nodes said "up to 12 GPUs" and
		 * searched 8 */
		snprintf(gpus, sizeof(gpus), "up to %lld GPUs: --max-gpus %lld "
			 "in whole nodes of %lld",
			 (long long)plan_max_gpus_searched(j, o),
			 (long long)o->max_gpus,
			 (long long)j->system->gpus_per_node);
	else if (o->max_gpus > 0)
		snprintf(gpus, sizeof(gpus), "up to %lld GPUs", (long long)o->max_gpus);
	else
		snprintf(gpus, sizeof(gpus), "%lld GPUs",
			 (long long)system_gpus(j->system));
	fprintf(out, "%s: %s on %s (%s, %s), %s, %lld sequences of %lld tokens "
		"a step; objective %s\n", j->name ? j->name : "job",
		j->model->name ? j->model->name : "model",
		j->system->name ? j->system->name : "system", gpus,
		j->system->gpu->name ? j->system->gpu->name : "gpu",
		dtype_names[j->training.dtype],
		(long long)j->training.global_batch_size,
		(long long)j->training.seq_len, plan_objective_names[o->objective]);
	fprintf(out, "  searched %llu layouts; %llu valid that fit ranked by the "
		"analytical tier in %.2f s (%llu estimated in full, the rest "
		"bounded below the best %d); %lld simulated in full in %.2f s\n",
		(unsigned long long)r->searched, (unsigned long long)r->ranked,
		r->est_wall_s, (unsigned long long)r->estimated, o->top_k,
		(long long)(r->ncands && r->cands[0].full ? r->ncands : 0),
		r->full_wall_s);
}

static void print_pruned(FILE *out, const struct plan_result *r)
{
	static const char *const groups[] = {
		"memory", "divisibility", "schedule", "topology", "redundant",
		"unsupported",
	};
	int g, k, first;
	const char *sep = " ";

	fprintf(out, "  pruned:");
	for (g = 0; g < 6; g++) {
		unsigned long long sum = 0;

		for (k = 0; k < PR_COUNT; k++)
			if (strcmp(plan_prune_group(k), groups[g]) == 0)
				sum += r->pruned[k];
		if (sum == 0)
			continue;
		fprintf(out, "%s%s %llu", sep, groups[g], sum);
		sep = "; ";	/* between groups, none after the last */
		if (g == 0)
			continue;
		first = 1;
		for (k = 0; k < PR_COUNT; k++)
			if (r->pruned[k] && strcmp(plan_prune_group(k), groups[g]) == 0 &&
			    k != PR_REDUNDANT && k != PR_UNSUPPORTED &&
			    k != PR_TP_NODE) {
				fprintf(out, "%s%s %llu", first ? " (" : ", ",
					plan_prune_name(k),
					(unsigned long long)r->pruned[k]);
				first = 0;
			}
		if (!first)
			fprintf(out, ")");
	}
	fprintf(out, "\n");
}

static void print_row(FILE *out, int64_t rank, const struct plan_cand *c,
		      int show_gpus)
{
	char lay[160], st[32], mem[32], est[32];

	plan_layout_str(&c->lay, lay, sizeof(lay));
	step_human(st, sizeof(st), c->step_s, UNIT_TIME);
	step_human(mem, sizeof(mem), c->mem.peak_B, UNIT_BYTES);
	step_human(est, sizeof(est), c->est.step_s, UNIT_TIME);
	fprintf(out, "  %4lld ", (long long)rank);
	if (show_gpus)
		fprintf(out, "%6lld ", (long long)c->gpus);
	fprintf(out, " %-52s %10s %10.0f %6.1f %% %9s  %-13s %9s (%lld)\n",
		lay, st, c->tokens_per_s, 100 * c->mfu, mem,
		plan_bound_names[c->bound], est, (long long)c->est_rank);
}

static void print_table_head(FILE *out, int show_gpus, int full)
{
	fprintf(out, "  %4s ", "rank");
	if (show_gpus)
		fprintf(out, "%6s ", "GPUs");
	fprintf(out, " %-52s %10s %10s %8s %9s  %-13s %s\n", "layout",
		full ? "step time" : "estimate", "tokens/s", "MFU", "mem/GPU",
		"bound", "analytical (rank)");
}

void plan_print(FILE *out, const struct job_spec *j, const struct plan_opts *o,
		const struct plan_result *r)
{
	int full = r->ncands > 0 && r->cands[0].full;
	int64_t i;

	print_header(out, j, o, r);
	print_pruned(out, r);
	if (o->max_gpus > 0) {
		fprintf(out, "  Pareto front of step time against GPUs:\n");
		print_table_head(out, 1, full);
		for (i = 0; i < r->nfront; i++)
			print_row(out, r->front[i] + 1, &r->cands[r->front[i]], 1);
		fprintf(out, "  every layout simulated, best first:\n");
	}
	print_table_head(out, o->max_gpus > 0, full);
	for (i = 0; i < r->ncands; i++)
		print_row(out, i + 1, &r->cands[i], o->max_gpus > 0);
	fprintf(out, "  layout: sp = sequence parallelism, no-rc/sel-rc/full-rc "
		"= recompute none/selective/full, zeroN = ZeRO stage\n");
	fprintf(out, "  %s\n", r->why);
}
