/*
 * est.h - the planner's analytical tier: the step time of one training
 * layout in closed form, from the same GPU model (every kernel of a layer
 * costed by gpu.h through block.h) and the same fabric model (every
 * collective timed by net_collective_time on the system's topology) that
 * a full run uses, with no event queue.
 *
 * The structure of a step (which kernels wait for which collectives, the
 * pipeline schedule, the gradient buckets, the optimizer) is the step
 * program's (models/train*.c), reduced to formulas: est.c has them as
 * mathematics. What many layouts share is costed once and remembered:
 * the layer blocks of a (tp, microbatch, recompute, sequence parallelism)
 * and the time of a collective of a given op, group and size.
 *
 * One estimator serves one system (its topology); jobs passed to
 * est_step and est_bound must be training jobs on that system, valid
 * for their layout (job_layout_check) and their dtypes (train_check).
 * Dense and MoE models alike: tensor, pipeline (1F1B, interleaved,
 * GPipe), context, data and expert parallelism (ep, etp, edp, the
 * dispatch and a2a_overlap's paired share), MTP layers, ZeRO 0-3 with
 * fsdp_pp_no_sync, training.local_batch_size (the step as
 * job_schedule_runs pipeline runs, est.c) and framework pp_lockstep
 * (torch's lock-step table, est_pipe.c). Not estimated: ZeRO 3 on an
 * MoE model (the MoE blocks would be costed without their FSDP
 * collectives; plan_space.c prunes it as unsupported), models mixing
 * sliding-window or chunked and global attention layers (plan.c refuses
 * them: every layer is costed as layer 0).
 *
 * Depends on run-path modules below it: models (layer, block, footprint,
 * train's public costs), network (net.h), engine (exec.h part names).
 */
#ifndef LLMSIM_PLAN_EST_H
#define LLMSIM_PLAN_EST_H

#include <stdint.h>

#include "config/spec_job.h"
#include "engine/exec.h"

struct diag;
struct est;

/* What the analytical tier says about one layout. */
struct est_step {
	double step_s;				/* s, one training step */
	double part_s[EXEC_PART_COUNT];		/* s, split as exec.h splits a
						 * simulated step; sums to step_s */
	double mem_bound_s;			/* s, of compute_s in bandwidth-bound
						 * kernels (the GPU model's roofline) */
	double model_flops;			/* FLOP per step, whole job, no recompute */
	double tokens;				/* tokens per step, whole job */
};

/* Counters, for reports and tests. */
struct est_stats {
	uint64_t steps;			/* est_step calls */
	uint64_t block_sets;		/* layer-block sets costed by the GPU model */
	uint64_t colls;			/* collectives timed by the fabric model */
	uint64_t coll_lookups;		/* collective times asked for */
};

/* An estimator for system sys (its topology is built here). NULL after
 * reporting to d (a system the fabric model cannot build, out of
 * memory). */
struct est *est_new(const struct system_spec *sys, struct diag *d);

/* Whether model m mixes layer kinds the analytical tier prices apart
 * (a hybrid pattern of Mamba-2, attention, MLP and MoE blocks, or Gated
 * DeltaNet beside full attention), and how many kinds it has (-1: more
 * than the tier holds). */
int est_hybrid(const struct model_spec *m);
int est_kind_count(const struct model_spec *m);
void est_free(struct est *e);

/* Estimate job j (on e's system). Returns 0, or -1 after reporting to d
 * (out of memory, a collective the fabric model refuses). */
int est_step(struct est *e, const struct job_spec *j, struct est_step *out,
	     struct diag *d);

/*
 * A lower bound of est_step's step time for job j, without any data-
 * parallel or pipeline-transfer collective: the pipeline of the blocks
 * alone (x = 0, every ZeRO-3 unit at its block's latency), the first
 * rank's optimizer and the host overhead. est_step adds only
 * non-negative terms to these, so a layout whose bound is already
 * slower than K estimated layouts cannot be among the best K. Returns 0,
 * or -1 after reporting to d.
 */
int est_bound(struct est *e, const struct job_spec *j, double *lb_s,
	      struct diag *d);

void est_get_stats(const struct est *e, struct est_stats *out);

/* Collective times shared by the processes of a walk (est_share.c): a
 * table in shared memory, made before they fork. est_share_new: NULL
 * when it cannot be mapped. est_set_share(e, sh) has e look there before
 * timing a collective and publish what it times (sh NULL: stop). The
 * time of a collective is the same whichever process timed it. */
struct est_share;
struct est_ckey;
struct est_share *est_share_new(void);
void est_share_free(struct est_share *sh);
void est_set_share(struct est *e, struct est_share *sh);
/* 1 and *t_s when k is there, else 0. */
int est_share_get(struct est_share *sh, const struct est_ckey *k,
		  double *t_s);
void est_share_put(struct est_share *sh, const struct est_ckey *k,
		   double t_s);

/* Add another estimator's counters to e's (the processes of a shared
 * search, plan_split.c: the work of all of them). */
void est_add_stats(struct est *e, const struct est_stats *add);

#endif
