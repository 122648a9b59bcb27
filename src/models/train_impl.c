/*
 * train_impl.c - what the step-program builder's files share (declared in
 * train_impl.h): dependencies, the units of an action and their records,
 * the parameters a unit holds, and the compute share a collective holds.
 *
 * A leaf of the builder: train.c, train_pp.c and train_dp.c call it; it
 * calls none of them.
 */
#include "train_impl.h"

#include "footprint.h"
#include "split.h"

int train_dep(struct train *t, task_id before, task_id after)
{
	if (before == TASK_NONE)
		return 0;
	return prog_dep(t->prog, before, after);
}

int64_t train_units(const struct train *t, int64_t vs)
{
	return t->split[vs] + (vs == 0) + (vs == t->stages - 1);
}

struct unit_rec *train_unit(const struct train *t, uint32_t r, int64_t a,
			    int64_t u)
{
	int64_t pp_i, dp_i, tp_i;

	layout_coords(&t->lay, r, &pp_i, &dp_i, &tp_i);
	return &t->units[r][t->stage[pp_i].unit_off[a] + u];
}

task_id train_action_end(const struct train *t, uint32_t r, int64_t a)
{
	int64_t pp_i, dp_i, tp_i;
	const struct stage_plan *sp;

	layout_coords(&t->lay, r, &pp_i, &dp_i, &tp_i);
	sp = &t->stage[pp_i];
	return t->units[r][sp->unit_off[a + 1] - 1].last;
}

/* What unit u of an action on vs is: its block, its global layer index
 * (-1 for the embedding and head) and, for backward, the reverse order. */
const struct block *train_unit_block(const struct train *t, int64_t vs,
				     int bwd, int64_t u, int32_t *layer)
{
	int64_t n = train_units(t, vs), first = split_first_layer(t->split, vs);
	int64_t k = bwd ? n - 1 - u : u;	/* position in forward order */
	int has_embed = vs == 0, has_head = vs == t->stages - 1;

	*layer = -1;
	if (has_embed && k == 0)
		return bwd ? t->eb : t->ef;
	if (has_head && k == n - 1)
		return bwd ? t->hb : t->hf;
	*layer = (int32_t)(first + k - has_embed);
	return bwd ? t->lb : t->lf;
}

double train_unit_params(const struct train *t, int64_t vs, int bwd,
			 int64_t u)
{
	const struct block *b;
	enum footprint_unit kind = UNIT_LAYER;
	int32_t layer;

	b = train_unit_block(t, vs, bwd, u, &layer);
	if (b == t->ef || b == t->eb)
		kind = UNIT_EMBED;
	else if (b == t->hf || b == t->hb)
		kind = UNIT_HEAD;
	/* pp = 1: the one rank holds the embedding with the head */
	return footprint_unit_params(t->job, &t->dims, kind, t->pp == 1) /
	       t->dims.tp;
}

double train_sm_share(const struct train *t, enum coll_op op,
		      const uint32_t *gpus, uint32_t n, int tp_overlap)
{
	return train_coll_sm_share(t->job, op, gpus, n, tp_overlap);
}

double train_coll_sm_share(const struct job_spec *j, enum coll_op op,
			   const uint32_t *gpus, uint32_t n, int tp_overlap)
{
	const struct system_spec *sys = j->system;
	const struct coll_units_spec *u;
	int64_t units;
	uint32_t i;

	if (!sys->collectives)
		return 0;	/* a program built without a library (tests) */
	u = &sys->collectives->kernel_units;
	units = u->scale_up;
	if (tp_overlap)
		units = op == COLL_REDUCESCATTER ?
			j->framework->tp_comm_overlap_units : 0;
	else if (op == COLL_SENDRECV)
		units = u->p2p;
	else
		for (i = 1; i < n; i++)
			if (gpus[i] / (uint32_t)sys->gpus_per_node !=
			    gpus[0] / (uint32_t)sys->gpus_per_node) {
				units = u->scale_out;
				break;
			}
	if (units >= sys->gpu->compute_units)
		return 1.0;
	return (double)units / (double)sys->gpu->compute_units;
}
