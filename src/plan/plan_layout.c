/*
 * plan_layout.c - the planner's vocabulary: names of objectives,
 * dimensions, bounds and pruning reasons; options; a layout as a job and
 * as text; the objective's score. A leaf of the planner: plan.c,
 * plan_space.c and plan_report.c call it, it calls none of them.
 */
#include "config/pp_layout.h"
#include "plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpu/gpu.h"
#include "plan_impl.h"

const char *const plan_objective_names[PLAN_OBJECTIVE_COUNT + 1] = {
	"throughput", "memory", "cost", NULL,
};

const char *const plan_dim_keys[PD_COUNT + 1] = {
	"parallelism.tp", "parallelism.pp", "parallelism.vpp", "parallelism.cp",
	"parallelism.ep", "parallelism.etp", "parallelism.dp",
	"training.micro_batch_size", "training.recompute",
	"training.zero_stage", "parallelism.sequence_parallel",
	"parallelism.schedule", NULL,
};

const char *const plan_bound_names[PB_COUNT + 1] = {
	"compute", "memory", "communication", "bubble", NULL,
};

const char *plan_prune_name(int reason)
{
	static const char *const own[] = {
		"layer_split", "redundant", "unsupported", "tp_beyond_node",
		"memory",
	};

	if (reason >= 0 && reason < JR_COUNT)
		return job_rule_names[reason];
	if (reason >= JR_COUNT && reason < PR_COUNT)
		return own[reason - JR_COUNT];
	return "?";
}

const char *plan_prune_group(int reason)
{
	switch (reason) {
	case JR_SCHED_VPP:
	case JR_SCHED_PP:
	case JR_SCHED_MICRO:
		return "schedule";
	case PR_REDUNDANT:
		return "redundant";
	case PR_UNSUPPORTED:
		return "unsupported";
	case PR_TP_NODE:
		return "topology";
	case PR_MEMORY:
		return "memory";
	default:
		return "divisibility";
	}
}

void plan_opts_init(struct plan_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->top_k = 20;
	o->objective = PLAN_THROUGHPUT;
	o->cp_min_seq = 4096;
}

int plan_pin_key(struct plan_opts *o, const char *key)
{
	int i;

	for (i = 0; i < PD_COUNT; i++)
		if (strcmp(key, plan_dim_keys[i]) == 0 ||
		    strcmp(key, strchr(plan_dim_keys[i], '.') + 1) == 0) {
			o->pinned |= 1u << i;
			return 1;
		}
	return 0;
}

double plan_score(int objective, double step_s, double peak_B, int64_t gpus)
{
	switch (objective) {
	case PLAN_MEMORY:	/* bytes first; the step breaks ties */
		return peak_B * 1e6 + step_s;
	case PLAN_COST:
		return step_s * (double)gpus;
	default:
		return step_s;
	}
}

void plan_layout_job(const struct job_spec *j, const struct system_spec *sys,
		     const struct plan_layout *l, struct job_spec *out)
{
	struct parallel_spec *p = &out->parallelism;

	*out = *j;
	if (sys)
		out->system = sys;
	p->tp = l->tp;
	p->cp = l->cp;
	p->pp = l->pp;
	p->vpp = l->vpp;
	p->ep = l->ep;
	p->dp = l->dp;
	if (model_is_moe(j->model)) {
		int64_t stage = l->tp * l->cp * l->dp;

		p->etp = l->etp > 0 ? l->etp : l->tp;
		p->edp = stage % (p->etp * p->ep) == 0 ?
			 stage / (p->etp * p->ep) : 0;
	} else {
		p->edp = l->dp * l->cp;
	}
	/* the job's own split, for its own stages only */
	if ((int64_t)p->pp_layers.n != l->pp * l->vpp)
		p->pp_layers.n = 0;
	if (p->pp_layout && pp_layout_stages(p->pp_layout) != l->pp * l->vpp)
		p->pp_layout = NULL;
	p->sequence_parallel = l->sp;
	p->schedule = l->schedule;
	p->tp_comm_overlap = l->tp_overlap;
	out->training.micro_batch_size = l->mbs;
	out->training.recompute = l->recompute;
	out->training.zero_stage = l->zero;
	/* the job's defer_embedding_wgrad_compute where the layout can run
	 * it (a pipeline, no FSDP: the job rule defer_wgrad) */
	p->defer_embedding_wgrad = j->parallelism.defer_embedding_wgrad &&
				   l->pp >= 2 && l->zero < 3;
}

void plan_layout_str(const struct plan_layout *l, char *buf, size_t len)
{
	static const char *const rc[] = { "no-rc", "sel-rc", "full-rc" };
	char vpp[32] = "", cp[32] = "", ep[48] = "";

	if (l->vpp > 1)
		snprintf(vpp, sizeof(vpp), " vpp %lld", (long long)l->vpp);
	if (l->cp > 1)
		snprintf(cp, sizeof(cp), " cp %lld", (long long)l->cp);
	if (l->ep > 1 && l->etp > 1)
		snprintf(ep, sizeof(ep), " ep %lld etp %lld", (long long)l->ep,
			 (long long)l->etp);
	else if (l->ep > 1)
		snprintf(ep, sizeof(ep), " ep %lld", (long long)l->ep);
	snprintf(buf, len, "tp %lld pp %lld%s%s%s dp %lld mbs %lld%s %s zero%d %s",
		 (long long)l->tp, (long long)l->pp, vpp, cp, ep,
		 (long long)l->dp, (long long)l->mbs, l->sp ? " sp" : "",
		 rc[l->recompute], l->zero, pp_schedule_names[l->schedule]);
}


void plan_job_for(const struct job_spec *j, const struct plan_layout *l,
		  struct system_spec *sys, struct job_spec *out)
{
	*sys = *j->system;
	sys->nodes = l->nodes;
	plan_layout_job(j, sys, l, out);
}

int plan_bound_of(const struct plan_cand *c)
{
	double mem = c->est.part_s[EXEC_COMPUTE] > 0 ?
		     c->est.mem_bound_s / c->est.part_s[EXEC_COMPUTE] : 0;
	double v[PB_COUNT] = {
		c->part_s[EXEC_COMPUTE] * (1 - mem),
		c->part_s[EXEC_COMPUTE] * mem,
		c->part_s[EXEC_EXPOSED_COMM],
		c->part_s[EXEC_BUBBLE],
	};
	int i, best = 0;

	for (i = 1; i < PB_COUNT; i++)
		if (v[i] > v[best])
			best = i;
	return best;
}

void plan_cand_from_estimate(const struct job_spec *j, struct plan_cand *c)
{
	double peak = gpu_peak_flops(j->system->gpu, (enum dtype)j->training.dtype);

	c->full = 0;
	c->step_s = c->est.step_s;
	memcpy(c->part_s, c->est.part_s, sizeof(c->part_s));
	c->tokens_per_s = c->est.tokens / c->step_s;
	c->tflops_per_gpu = c->est.model_flops / (c->step_s * (double)c->gpus) /
			    1e12;
	c->mfu = c->tflops_per_gpu * 1e12 / peak;
	c->bound = plan_bound_of(c);
}
