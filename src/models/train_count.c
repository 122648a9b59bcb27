/*
 * train_count.c - how many tasks and collective calls a step program
 * will hold, before it is built: what a budget on memory and time is
 * checked against (train_estimate.c, src/run/step.c), and the room
 * train_build reserves (train.c). A file of its own, which calls neither:
 * train.c calls it and train_estimate.c calls train.c.
 *
 * The builder makes, on every simulated GPU of pipeline rank s, for each
 * of m microbatches and each chunk c (virtual stage vs = c pp + s), the
 * units of vs forward and backward: one task per op of each unit's costed
 * block (a kernel, or the GPU's member of a collective). A collective op
 * over a group of kind g is one call per group, so 1 / k of a call per
 * simulated GPU, k the group's simulated members (its size in full
 * fidelity, 1 where one rank stands for its stage). Beside the units:
 *   - the all-gather rebuilding a scattered pipeline transfer, before
 *     each action that receives one (pp_gather);
 *   - fp8 delayed scaling's amax reduction after each action;
 *   - the step's weight quantization before each unit's first forward
 *     (train_unit_wcast: once a step, not per microbatch);
 *   - transfers: after each forward of vs < S-1 and each backward of
 *     vs > 0 a two-member send/recv (two tasks, one call);
 *   - data parallelism, when a stage has more GPUs than its TP group and
 *     only over groups of more than one GPU: per gradient bucket its
 *     reduction and, under ZeRO 1-2, its all-gather; under ZeRO-3 per
 *     unit, kind (dense, experts) and microbatch an all-gather before the
 *     forward and the backward and a reduce-scatter after the backward;
 *   - the tied embedding's all-reduce on the first and the last stage;
 *     and per bucket the work before its reduction (train_grad.c:
 *     the NaN check's norm and host tasks, the scaling);
 *   - the optimizer step and the host overhead, a task each per GPU;
 *   - activation offloading (pp 1): per microbatch and offloaded layer
 *     its copy to the host and its reload (train_offload.c);
 *   - when the framework models the host thread (train_host.c): a host
 *     task per op of a unit, gather or amax block that costs the host
 *     time or waits for the device, and with p2p syncs one before every
 *     action but the first.
 * Every simulated GPU of a stage runs the same program, so a stage counts
 * sim times one GPU's. This is the builder's count, not a model of it;
 * tests/unit/models/test_train.c compares it with built programs.
 *
 * Walks the stages, chunks and units of the costed blocks: no schedule,
 * no per-rank state, so any job can be counted.
 */
#include "train_impl.h"

#include <string.h>

/* Per simulated GPU of a stage. */
struct count {
	double tasks;
	double calls;
};

/* Simulated members of a group of kind g. */
static double group_sim(const struct train *t, int g)
{
	if (t->lay.sim != t->lay.stage)
		return 1;
	return (double)layout_group_size(&t->lay, (enum layout_group)g);
}

/* Block b, times times. */
static void add_block(const struct train *t, const struct block *b,
		      double times, struct count *c)
{
	int i;

	c->tasks += times * b->n;
	for (i = 0; i < b->n; i++) {
		if (b->op[i].kind != LOP_KERNEL)
			c->calls += times / group_sim(t, b->op[i].group);
		if (t->host_on && (b->op[i].host_s > 0 ||
				   b->op[i].host_wait != LAYER_NONE))
			c->tasks += times;	/* its host task */
	}
}

/* The units of every action of pipeline rank s, and its transfers. */
static void count_units(const struct train *t, int64_t s, struct count *c)
{
	double m = (double)t->m;
	int64_t ch, u, n;

	for (ch = 0; ch < t->v; ch++) {
		int64_t vs = train_vs(t, s, ch);
		int first = vs == 0, last = vs == t->stages - 1;
		int32_t layer;

		n = train_units(t, vs);
		for (u = 0; u < n; u++) {
			const struct block *b = train_unit_block(t, vs, 1, u,
								 &layer);
			const struct block *w = train_unit_wcast(t, vs, u);

			add_block(t, train_unit_block(t, vs, 0, u, &layer), m, c);
			if (w)	/* the step's weight casts, once */
				add_block(t, w, 1, c);
			if (b == t->hb && t->hbd) {	/* deferred wgrads */
				double d = (double)t->defer;

				add_block(t, b, m - d, c);
				add_block(t, t->hbd, d, c);
				add_block(t, t->hw, d, c);
				continue;
			}
			add_block(t, b, m, c);
		}
		if (t->pg)	/* forward receives unless first, backward
				 * unless last */
			add_block(t, t->pg, m * (!first + !last), c);
		if (t->amax[0])	/* fp8 amax reductions after each pass */
			add_block(t, t->amax[0], m, c);
		if (t->amax[1])
			add_block(t, t->amax[1], m, c);
		/* sends: the forward unless last, the backward unless first;
		 * a task at each end, one call */
		c->tasks += 2 * m * (!first + !last);
		c->calls += m * (!first + !last);
	}
}

/* Data-parallel collectives of one GPU of pipeline rank s. */
static void count_dp(struct train *t, int64_t s, struct count *c)
{
	int zero = (int)t->job->training.zero_stage;
	int kinds = model_is_moe(t->job->model) ? 2 : 1, e;
	int64_t ch, u;

	if (t->lay.stage <= t->lay.tp)
		return;
	for (e = 0; e < kinds; e++) {
		enum layout_group g = e ? LG_EDP : LG_DP;
		double per = 1 / group_sim(t, g), n = 0;

		/* the work on each bucket before its reduction */
		if (zero < 3)
			c->tasks += (double)train_dp_buckets(t, s, e) *
				    train_grad_tasks(t, e);
		if (layout_group_size(&t->lay, g) <= 1)
			continue;
		if (zero < 3) {	/* reduction (+ all-gather) per bucket */
			n = (double)train_dp_buckets(t, s, e) * (1 + (zero >= 1));
		} else {	/* all-gather per use, reduce-scatter per bwd */
			for (ch = 0; ch < t->v; ch++) {
				int64_t vs = train_vs(t, s, ch);

				for (u = 0; u < train_units(t, vs); u++) {
					double d, x;

					train_unit_params(t, vs, 0, u, &d, &x);
					n += (e ? x : d) > 0;
					train_unit_params(t, vs, 1, u, &d, &x);
					n += 2 * ((e ? x : d) > 0);
				}
			}
			n *= (double)t->m;
		}
		c->tasks += n;
		c->calls += n * per;
	}
}

/* Per GPU of pipeline rank s: tied embedding, optimizer, overhead, the
 * host's p2p syncs (p2p: train_host_init()'s answer). */
static void count_rest(const struct train *t, int64_t s, int p2p,
		       struct count *c)
{
	if (p2p)
		c->tasks += (double)(sched_actions(t->m, t->v) - 1);
	if (train_embed_peer(t) >= 0 && (s == 0 || s == train_embed_peer(t))) {
		c->tasks += 1;
		c->calls += s == 0;	/* one call a pair */
	}
	c->tasks += 1 + (t->job->framework->step_overhead_s > 0);
	/* activation offloading (pp 1): each offloaded layer's copy out in
	 * the forward and back in the backward, per microbatch */
	if (t->pp == 1)
		c->tasks += 2 * (double)t->m *
			    (double)t->job->training.cpu_offload_layers;
}

void train_count(struct train *t, int p2p, struct train_estimate *e)
{
	int64_t s;

	memset(e, 0, sizeof(*e));
	for (s = 0; s < t->pp; s++) {
		struct count c = { 0, 0 };

		count_units(t, s, &c);
		count_dp(t, s, &c);
		count_rest(t, s, p2p, &c);
		e->tasks += c.tasks * (double)t->lay.sim;
		e->calls += c.calls * (double)t->lay.sim;
	}
	e->ranks = (double)t->lay.nranks;
}
