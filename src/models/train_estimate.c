/*
 * train_estimate.c - how many tasks a step program will hold, before it
 * is built: what a budget on memory and time is checked against.
 *
 * Every simulated rank of pipeline rank s runs, for each of m
 * microbatches and each of its v chunks (virtual stage vs = c pp + s),
 * the units of that stage forward and backward: one task per op of the
 * unit's costed block (a kernel, or its member of a TP collective), on
 * each of its sim_tp x sim_dp ranks:
 *
 *   compute(s) = m sum_c [ L_vs (n_lf + n_lb) + [vs = 0] (n_ef + n_eb)
 *                        + [vs = S-1] (n_hf + n_hb)
 *                        + n_pg ([vs > 0] + [vs < S-1]) ]
 *
 * (n_pg: the all-gather rebuilding a scattered transfer, when used).
 * Each forward of vs < S-1 and backward of vs > 0 sends one transfer,
 * two tasks: 2 * 2 m (S - 1) per simulated TP-and-DP position. The
 * data-parallel part (gradient buckets, optimizer, ZeRO gathers) is
 * bounded by two tasks per unit and microbatch (three under ZeRO-3) plus
 * a few per rank; it is counted as that bound, so the estimate is an
 * upper bound within a few per cent (tests/unit/models/test_train.c
 * compares with built programs).
 */
#include "base/diag.h"
#include "split.h"
#include "train_impl.h"

#include <string.h>

/* Tasks per rank outside the units: optimizer, host overhead, loss. */
#define RANK_EXTRA 16

/* Costed block ops of the job, into t (t->prog set). */
static int blocks(struct train *t)
{
	struct layer_ops *o = arena_alloc(&t->arena, sizeof(*o));
	enum layer_recompute rc = (enum layer_recompute)t->job->training.recompute;
	struct block **b[6] = { &t->lf, &t->lb, &t->ef, &t->eb, &t->hf, &t->hb };
	int i;

	if (!o)
		return -1;
	for (i = 0; i < 6; i++) {
		*b[i] = arena_alloc(&t->arena, sizeof(struct block));
		if (!*b[i])
			return -1;
	}
	layer_fwd(&t->dims, o);
	if (block_cost(t->lf, o, t->gpu, &t->dt, t->prog) != 0)
		return -1;
	layer_bwd(&t->dims, rc, o);
	if (block_cost(t->lb, o, t->gpu, &t->dt, t->prog) != 0)
		return -1;
	layer_embed_fwd(&t->dims, o);
	if (block_cost(t->ef, o, t->gpu, &t->dt, t->prog) != 0)
		return -1;
	layer_embed_bwd(&t->dims, o);
	if (block_cost(t->eb, o, t->gpu, &t->dt, t->prog) != 0)
		return -1;
	layer_head_fwd(&t->dims, o);
	if (block_cost(t->hf, o, t->gpu, &t->dt, t->prog) != 0)
		return -1;
	layer_head_bwd(&t->dims, o);
	if (block_cost(t->hb, o, t->gpu, &t->dt, t->prog) != 0)
		return -1;
	if (t->dims.pp_gather && t->stages > 1) {
		t->pg = arena_alloc(&t->arena, sizeof(struct block));
		layer_pp_gather(&t->dims, o);
		if (!t->pg || block_cost(t->pg, o, t->gpu, &t->dt, t->prog) != 0)
			return -1;
	}
	return 0;
}

/* Data-parallel tasks per unit and microbatch, at most: a gradient
 * reduction and its wait; ZeRO-3 adds the parameter all-gather before
 * the forward and again before the backward. */
static double dp_per_unit(const struct train *t)
{
	if (t->lay.dp <= 1)
		return 0;	/* no data-parallel collectives */
	return t->job->training.zero_stage >= 3 ? 3 : 2;
}

/* Ops of b, and its collectives (each a call over the TP group). */
static double ops(const struct block *b, double *calls)
{
	int i;

	for (i = 0; i < b->n; i++)
		*calls += b->op[i].kind != LOP_KERNEL;
	return b->n;
}

/* Tasks of one simulated rank of pipeline rank s (without transfers):
 * its units forward and backward, and the data-parallel bound; *tp_calls
 * gets the TP collective calls of its TP group, *dp_calls the data-
 * parallel ones of its DP group (the bound: one a task). */
static double rank_tasks(const struct train *t, int64_t s, double *tp_calls,
			 double *dp_calls)
{
	double n = 0, units = 0, c_tp = 0, dp;
	int64_t c, last = t->stages - 1;

	for (c = 0; c < t->v; c++) {
		int64_t vs = c * t->pp + s;
		double l = (double)t->split[vs], cl = 0;

		n += l * (ops(t->lf, &cl) + ops(t->lb, &cl));
		c_tp += l * cl;
		units += l;
		if (vs == 0) {
			n += ops(t->ef, &c_tp) + ops(t->eb, &c_tp);
			units++;
		}
		if (vs == last) {
			n += ops(t->hf, &c_tp) + ops(t->hb, &c_tp);
			units++;
		}
		if (t->pg) {
			double cg = 0, ng = ops(t->pg, &cg);

			n += ng * ((vs > 0) + (vs < last));
			c_tp += cg * ((vs > 0) + (vs < last));
		}
	}
	dp = dp_per_unit(t) * units * (double)t->m + RANK_EXTRA;
	*tp_calls = (double)t->m * c_tp;
	*dp_calls = dp;
	return (double)t->m * n + dp;
}

int train_estimate(const struct job_spec *j, int full,
		   struct train_estimate *e, struct diag *d)
{
	struct train t;
	double per_pos = 0, tp_calls = 0, dp_calls = 0, ct, cd;
	int64_t s;
	int rc = -1;

	memset(&t, 0, sizeof(t));
	memset(e, 0, sizeof(*e));
	arena_init(&t.arena);
	layout_init(&t.lay, j->parallelism.tp, j->parallelism.cp,
		    j->parallelism.pp, j->parallelism.dp,
		    full || j->full_fidelity);
	t.job = j;
	t.gpu = j->system->gpu;
	t.m = job_microbatches(j);
	t.v = j->parallelism.vpp;
	t.pp = j->parallelism.pp;
	t.stages = t.pp * t.v;
	layer_dims_from_job(j, &t.dims);
	t.dt.base = layer_base_dtype((enum dtype)j->training.dtype);
	t.dt.gemm_lowp = (enum dtype)j->training.dtype;
	t.split = arena_alloc(&t.arena, (size_t)t.stages * sizeof(*t.split));
	t.prog = prog_new(1, TRAIN_ST_COUNT);	/* for the blocks' names */
	if (!t.split || !t.prog || blocks(&t) != 0) {
		diag_oom(d);
		goto out;
	}
	split_layers(j, t.split);
	for (s = 0; s < t.pp; s++) {
		per_pos += rank_tasks(&t, s, &ct, &cd);
		tp_calls += ct;
		dp_calls += cd;
	}
	/* Transfers: 2 tasks each, m (S - 1) each way per position. */
	per_pos += 4.0 * (double)t.m * (double)(t.stages - 1);
	e->ranks = (double)t.lay.nranks;
	e->tasks = per_pos * (double)t.lay.sim_tp * (double)t.lay.sim_dp;
	/* A TP group's calls once per DP replica, a DP group's once per TP
	 * position; transfers one per pair. */
	e->calls = tp_calls * (double)t.lay.sim_dp +
		   dp_calls * (double)t.lay.sim_tp +
		   2.0 * (double)t.m * (double)(t.stages - 1) *
		   (double)t.lay.sim_tp * (double)t.lay.sim_dp;
	rc = 0;
out:
	prog_free(t.prog);
	arena_release(&t.arena);
	return rc;
}
