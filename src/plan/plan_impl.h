/*
 * plan_impl.h - what the planner's files share (plan.c: the two tiers;
 * plan_space.c: the search space, a leaf; plan_report.c: output). Private
 * to src/plan.
 */
#ifndef LLMSIM_PLAN_PLAN_IMPL_H
#define LLMSIM_PLAN_PLAN_IMPL_H

#include <stdatomic.h>

#include "memo.h"
#include "plan.h"

/* A layout the analytical tier costed. */
struct scored {
	struct plan_layout lay;
	double est_s;		/* s, estimated step (the bound while bounded) */
	double lb_s;		/* s, est_bound's lower bound */
	double peak_B;		/* B, peak memory per GPU */
	double score;		/* the objective's value, lower is better */
	int bounded;		/* 1: ranked by its bound alone (below the best k) */
	struct est_step est;	/* the estimate (when not bounded) */
};

/* The nearest miss when nothing is feasible. */
struct miss {
	struct plan_layout lay;	/* the layout (or the partial one that broke a rule) */
	uint64_t count;		/* layouts lost to the reason */
	int have;
};

/* A walk that takes only some of the units (plan_split.c): a unit is
 * one (tp, cp, pp, etp, ep, vpp) and everything below it (the subtree
 * of level_sched_mbs), numbered in walk order. A first pass records the
 * levels above the units and counts them; then each process walks its
 * ranges of units, claimed from slots in shared memory. What a process
 * records carries its place in the walk, seq: 2 u before unit u, 2 u + 1
 * inside it, so that the records of every process merge into the serial
 * walk's (plan_split.c). */
struct split {
	int on;				/* a shared walk */
	int above;			/* the first pass: above the units only */
	int in_unit;			/* inside a unit this process took */
	int stopped;			/* its range is done (or was taken) */
	_Atomic uint64_t *slot;		/* this process's range: lo << 32 | hi,
					 * lo the next unit it takes (shared) */
	uint64_t from;			/* the range's first unit */
	uint64_t unit;			/* units the walk has passed */
	uint64_t miss_seq[PR_COUNT];	/* seq of rule_miss[r] */
	uint64_t min_seq;		/* seq of min_mem */
	uint64_t *vunit;		/* the unit of each kept layout, v[i] */
	size_t vcap;
};

/* The search over one node count (plan_space.c). */
struct search {
	const struct job_spec *base;	/* the job planned */
	const struct plan_opts *o;
	struct diag *d;
	struct system_spec sys;		/* base's system with this node count */
	struct est *est;		/* the analytical tier on sys */
	double usable_B;		/* B, usable memory less the headroom */
	struct memo lives;		/* (schedule, pp, vpp, m) -> struct sched_live * */
	struct live_set *live_list;	/* every entry of lives, to free */
	struct scored *v;		/* valid layouts that fit, of this node count */
	size_t n, cap;
	size_t nest;			/* of those, estimated in full (space_estimate):
					 * v[0 .. nest-1], best first */
	uint64_t searched;
	uint64_t pruned[PR_COUNT];
	struct miss rule_miss[PR_COUNT];	/* a layout each reason pruned */
	struct footprint min_mem;	/* the smallest peak among the valid */
	struct plan_layout min_mem_lay;
	int have_min_mem;
	struct split split;		/* a share of the walk (plan_split.c) */
	int walkers;			/* processes the last walk was shared by
					 * (1: walked alone) */
};

/* Prepare s for base's system with `nodes` nodes. Returns 0, or -1 after
 * reporting to d. */
int space_init(struct search *s, const struct job_spec *base,
	       const struct plan_opts *o, int64_t nodes, struct diag *d);
void space_release(struct search *s);

/* Search every layout of s's node count, costing the valid ones that fit
 * into s->v. Returns 0, or -1 after reporting a runtime failure. */
int space_search(struct search *s);

/* A layout the walk keeps (valid, fits), bounded by lb_s, into *out. */
void space_kept(const struct search *s, const struct plan_layout *l,
		double lb_s, double peak_B, struct scored *out);

/* The walk of space_search over s's units, with s->split as set (off:
 * every unit). Returns 0, or -1 after reporting to s->d. */
int space_walk(struct search *s);

/* Take unit u, the next of this process's range; 0 when the range has
 * ended there (done, or its end taken by another process). */
int split_claim(struct split *sp, uint64_t u);

/* space_walk shared by `procs` processes (this one and procs - 1 forked
 * helpers) and merged into s as one walk would leave it: the counts, the
 * misses and the kept layouts in walk order. Any diagnostic in any
 * process (an error, a warning) or a helper lost: the walk is done again
 * here alone, reporting to s->d. Returns 0, or -1 after reporting. */
int split_walk(struct search *s, int procs);

/* Estimate s->v best first until the best k are known: in order of
 * their bound (est_bound), stopping at the first bound no better than
 * the k-th estimate so far. Sets s->nest. Returns 0, or -1 after
 * reporting to s->d. */
int space_estimate(struct search *s, size_t k);

/* Layout l as a job of j's model on j's system with l's nodes (*sys
 * receives that system; out points at it). */
void plan_job_for(const struct job_spec *j, const struct plan_layout *l,
		  struct system_spec *sys, struct job_spec *out);

/* The bound of c from its step's split, the estimate telling how much of
 * the compute is bandwidth-bound (plan.h: enum plan_bound). */
int plan_bound_of(const struct plan_cand *c);

/* c's step, rates and bound from its estimate (c->est, c->gpus set) on
 * job j (the layout's job). */
void plan_cand_from_estimate(const struct job_spec *j, struct plan_cand *c);

/* Simulate c[0..n-1] in full (plan_full.c), in o->jobs worker processes
 * when more than one: each fills step_s, part_s, tokens_per_s, mfu,
 * tflops_per_gpu and full. Returns 0, or -1 after reporting to d. */
int full_runs(const struct job_spec *j, const struct plan_opts *o,
	      struct plan_cand *c, size_t n, struct diag *d);

/* The objective's value of a costed layout (lower is better). */
double plan_score(int objective, double step_s, double peak_B, int64_t gpus);

#endif
