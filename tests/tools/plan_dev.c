/*
 * plan_dev.c - where the layout practitioners used ranks in the plan,
 * for scripts/validate-plan.sh.
 *
 *   plan_dev [--top K] JOB
 *
 * JOB is a reference case (results/reference/training): its own layout
 * (parallelism and training settings) is what was measured. The plan of
 * the same job on the same GPUs (nothing pinned; tp_comm_overlap as the
 * job has it) is run with its K best simulated in full; the practitioners'
 * layout is estimated and simulated the same way. Printed, one line: the
 * case, GPUs, the practitioners' layout and step, the plan's best and its
 * step, the practitioners' rank among the simulated (1 + the plan's
 * layouts faster than it), its analytical rank among every layout the
 * plan ranked, and, when the plan's best is faster, the part of the step
 * that differs most between the two. Exit 0 (a report, not a gate); 2 on
 * bad input; 1 when something failed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "plan/plan.h"

static const char *const part_names[EXEC_PART_COUNT] = {
	"compute", "exposed comm", "bubble", "optimizer", "other",
};

/* The job's own layout (dp and schedule as the schema infers them). */
static void own_layout(const struct job_spec *j, struct plan_layout *l)
{
	const struct parallel_spec *p = &j->parallelism;

	memset(l, 0, sizeof(*l));
	l->nodes = j->system->nodes;
	l->tp = p->tp;
	l->cp = p->cp;
	l->pp = p->pp;
	l->vpp = p->vpp;
	l->ep = p->ep;
	l->dp = p->dp ? p->dp : system_gpus(j->system) / (p->tp * p->pp * p->cp);
	l->mbs = j->training.micro_batch_size;
	l->recompute = (int8_t)j->training.recompute;
	l->zero = (int8_t)j->training.zero_stage;
	l->sp = (int8_t)(p->sequence_parallel && p->tp > 1);
	l->schedule = (int8_t)(p->schedule >= 0 ? p->schedule :
			       p->vpp > 1 ? SCHED_INTERLEAVED : SCHED_1F1B);
	l->tp_overlap = (int8_t)p->tp_comm_overlap;
}

int main(int argc, char **argv)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	struct job_spec j;
	struct plan_opts o;
	struct plan_result r, all;
	struct plan_ctx *x;
	struct plan_cand own;
	const char *job = NULL;
	char lay_own[160], lay_best[160], why[96] = "", ar[24];
	int64_t i, rank = 1, arank = 1;
	int top = 20, argi, pruned = -1, rc, estimated = 1;

	for (argi = 1; argi < argc; argi++) {
		if (strcmp(argv[argi], "--top") == 0 && argi + 1 < argc)
			top = atoi(argv[++argi]);
		else
			job = argv[argi];
	}
	if (!job)
		return 2;
	arena_init(&a);
	diag_init(&d, stderr);
	cx = (struct config_ctx){ &a, &d, config_data_root(&a, argv[0]) };
	memset(&j, 0, sizeof(j));
	if (config_load(&cx, &job_plan_schema, job, NULL, 0, &j) != 0)
		return 2;
	own_layout(&j, &own.lay);
	plan_opts_init(&o);
	o.top_k = top;
	if ((rc = plan_run(&j, &o, &r, &d)) != 0)
		return rc == 2 ? 2 : 1;
	/* the practitioners' layout through both tiers */
	if (!(x = plan_ctx_new(&j, &o, 0, &d)))
		return 1;
	rc = plan_ctx_estimate(x, &own.lay, &own, &pruned, &d);
	plan_ctx_free(x);
	if (rc < 0)
		return 1;
	/* a layout the memory model refuses is still simulated: how fast it
	 * would be is part of the answer */
	if (rc == 1 && pruned == PR_MEMORY)
		rc = 0;
	else if (rc == 1 && pruned == PR_UNSUPPORTED) {
		/* not estimated (ZeRO 3 on an MoE model): simulated all the same */
		own.gpus = system_gpus(j.system);
		estimated = 0;
		rc = 0;
	} else {
		pruned = -1;
	}
	if (rc == 0 && plan_simulate(&j, &o, &own, 1, &d) != 0)
		return 1;
	/* its analytical rank among every layout ranked */
	o.no_full = 1;
	o.top_k = 1000000;
	if (plan_run(&j, &o, &all, &d) != 0)
		return 1;
	for (i = 0; rc == 0 && estimated && i < all.ncands; i++)
		if (all.cands[i].est.step_s < own.est.step_s &&
		    memcmp(&all.cands[i].lay, &own.lay, sizeof(own.lay)) != 0)
			arank++;
	for (i = 0; rc == 0 && i < r.ncands; i++)
		if (r.cands[i].step_s < own.step_s &&
		    memcmp(&r.cands[i].lay, &own.lay, sizeof(own.lay)) != 0)
			rank++;
	plan_layout_str(&own.lay, lay_own, sizeof(lay_own));
	plan_layout_str(&r.cands[0].lay, lay_best, sizeof(lay_best));
	if (rc == 0 && rank > 1) {
		int k, most = 0;

		for (k = 0; k < EXEC_PART_COUNT; k++)
			if (own.part_s[k] - r.cands[0].part_s[k] >
			    own.part_s[most] - r.cands[0].part_s[most])
				most = k;
		snprintf(why, sizeof(why), "%s %+.3g s", part_names[most],
			 r.cands[0].part_s[most] - own.part_s[most]);
	}
	if (rc != 0)
		printf("%-34s %6lld | %-52s invalid for the planner | %-52s %8.3f s\n",
		       j.name ? j.name : job, (long long)system_gpus(j.system),
		       lay_own, lay_best, r.cands[0].step_s);
	else
		printf("%-34s %6lld | %-52s %8.3f s | %-52s %8.3f s | %4lld %6s | %s%s%s\n",
		       j.name ? j.name : job, (long long)system_gpus(j.system),
		       lay_own, own.step_s, lay_best, r.cands[0].step_s,
		       (long long)rank, estimated ? (snprintf(ar, sizeof(ar), "%lld",
				(long long)arank), ar) : "-", why,
		       pruned == PR_MEMORY ? " | does not fit the memory model" : "",
		       estimated ? "" : " | ZeRO 3 MoE: not estimated, simulated");
	if (pruned == PR_MEMORY)
		printf("%-34s        peak %.4g GB per GPU > %.4g GB usable\n", "",
		       own.mem.peak_B / 1e9, own.mem.usable_B / 1e9);
	plan_result_release(&r);
	plan_result_release(&all);
	arena_release(&a);
	return 0;
}
