/*
 * sweep_plan_row.c - a plan's ranking as rows of the results store
 * (plan_candidates): what a sweep with `plan:` and `llmsim plan` store.
 * In sweep, the layer that uses both the planner and the store (as
 * sweep_step_row is the step's row for `llmsim run` too).
 */
#include "sweep_run.h"

#include <string.h>

#include "plan/plan.h"
#include "store/store.h"

/* The ranking as store rows (on_front from r->front). */
void sweep_plan_row(const struct plan_result *r, int64_t i,
		    struct store_plan_row *row)
{
	const struct plan_cand *c = &r->cands[i];
	const struct plan_layout *l = &c->lay;
	int64_t k;

	memset(row, 0, sizeof(*row));
	row->rank = i + 1;
	row->gpus = c->gpus;
	row->nodes = l->nodes;
	row->tp = l->tp;
	row->pp = l->pp;
	row->vpp = l->vpp;
	row->cp = l->cp;
	row->ep = l->ep;
	row->etp = l->etp > 0 ? l->etp : l->tp;
	row->dp = l->dp;
	row->micro_batch_size = l->mbs;
	row->recompute = recompute_names[l->recompute];
	row->zero_stage = l->zero;
	row->sequence_parallel = l->sp;
	row->schedule = pp_schedule_names[l->schedule];
	row->tp_comm_overlap = l->tp_overlap;
	row->simulated = c->full;
	for (k = 0; k < r->nfront; k++)
		row->on_front |= r->front[k] == i;
	row->step_time_s = c->step_s;
	row->tokens_per_s = c->tokens_per_s;
	row->mfu = c->mfu;
	row->tflops_per_gpu = c->tflops_per_gpu;
	row->peak_bytes_per_gpu = c->mem.peak_B;
	row->fits = c->mem.fits;
	row->compute_s = c->part_s[EXEC_COMPUTE];
	row->exposed_comm_s = c->part_s[EXEC_EXPOSED_COMM];
	row->bubble_s = c->part_s[EXEC_BUBBLE];
	row->optimizer_s = c->part_s[EXEC_OPTIMIZER];
	row->other_s = c->part_s[EXEC_OTHER];
	row->bound = plan_bound_names[c->bound];
	row->est_step_time_s = c->est.step_s;
	row->est_rank = c->est_rank;
}

