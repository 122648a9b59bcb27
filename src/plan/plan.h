/*
 * plan.h - the parallelism planner: the best training layouts of a job
 * on its cluster (or on any number of its nodes up to a limit), and why.
 *
 * A plan searches tp, pp, vpp, cp, ep, etp, dp, micro-batch size,
 * recompute, ZeRO stage, sequence parallelism and pipeline schedule,
 * every layout checked against the job's layout rules
 * (job_layout_check) and the memory model (footprint.h), in two tiers:
 *
 *   1. the analytical tier (est.h) estimates every valid layout that
 *      fits, in closed form from the same GPU and fabric models a run
 *      uses, and ranks them;
 *   2. the best top_k are simulated in full (step_run: the event engine
 *      on the fabric), and the final ranking is theirs.
 *
 * Dimensions can be pinned: a pinned dimension takes the job's value and
 * is not searched. With max_gpus the node count is searched too and the
 * result is the Pareto front of step time against GPUs.
 *
 * The library never prints: plan_run reports progress and errors through
 * struct diag; plan_print and plan_to_json render a result. The CLI
 * (`llmsim plan`) and sweeps (`plan: true`) both call plan_run.
 *
 * Depends on run (step_run), est.h, models, config, base.
 */
#ifndef LLMSIM_PLAN_PLAN_H
#define LLMSIM_PLAN_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "base/units.h"
#include "config/spec_job.h"
#include "engine/exec.h"
#include "models/footprint.h"
#include "est.h"

struct cJSON;
struct diag;

/* What "best" means. */
enum plan_objective {
	PLAN_THROUGHPUT,	/* shortest step */
	PLAN_MEMORY,		/* smallest peak memory per GPU, then shortest step */
	PLAN_COST,		/* fewest GPU-seconds per step (step x GPUs) */
	PLAN_OBJECTIVE_COUNT
};

/* "throughput", "memory", "cost"; NULL-terminated. */
extern const char *const plan_objective_names[PLAN_OBJECTIVE_COUNT + 1];

/* The searched dimensions; bit 1 << dim in plan_opts.pinned. */
enum plan_dim {
	PD_TP, PD_PP, PD_VPP, PD_CP, PD_EP, PD_ETP, PD_DP,
	PD_MBS, PD_RECOMPUTE, PD_ZERO, PD_SP, PD_SCHEDULE,
	PD_COUNT
};

/* The job key of each dimension ("parallelism.tp", ...,
 * "training.micro_batch_size"); NULL-terminated. */
extern const char *const plan_dim_keys[PD_COUNT + 1];

/* Why a layout was not estimated: the job's rules (enum job_rule, same
 * numbers), then the planner's own. */
enum plan_prune {
	PR_LAYER_SPLIT = JR_COUNT,	/* pp*vpp divides neither the layers nor
					 * the layers + 2 (embedding and head as
					 * one layer each): no even split */
	PR_REDUNDANT,			/* the same step as another layout:
					 * sequence_parallel with tp 1, a ZeRO
					 * stage with dp 1, ZeRO 2 with the
					 * framework's grad_buffer_full, gpipe
					 * over one microbatch (1f1b's step) */
	PR_UNSUPPORTED,			/* ZeRO 3 on an MoE model: not
					 * estimated */
	PR_TP_NODE,			/* a TP group beyond one node (scale-up
					 * domain): searched only with
					 * cross_node_tp or a pinned tp */
	PR_MEMORY,			/* peak above the usable memory less
					 * the headroom */
	PR_COUNT
};

/* Name of each reason (job_rule_names, then "layer_split", "redundant",
 * "unsupported", "tp_beyond_node", "memory"); and its group:
 * "divisibility", "schedule", "redundant", "unsupported", "topology" or
 * "memory". */
const char *plan_prune_name(int reason);
const char *plan_prune_group(int reason);

struct plan_opts {
	int top_k;		/* layouts simulated in full (default 20) */
	int objective;		/* enum plan_objective */
	int64_t max_gpus;	/* > 0: search node counts up to this many GPUs */
	double headroom;	/* fraction of usable memory kept free (0.05 = 5 %) */
	uint32_t pinned;	/* 1 << enum plan_dim: the job's value, not searched */
	int full_fidelity;	/* the full tier simulates every GPU */
	int no_full;		/* analytical tier only (tests, benchmarks) */
	int cross_node_tp;	/* search tp beyond one node too */
	int jobs;		/* processes for the full tier; 0 = one per CPU */
	int64_t cp_min_seq;	/* cp is searched where each CP rank keeps at
				 * least this many tokens of a sequence
				 * (seq_len / cp >= it; default 4096; <= 0:
				 * every divisor of the GPUs) */
};

/* Defaults: top 20, throughput, the job's GPUs, no headroom, nothing
 * pinned, cp_min_seq 4096. */
void plan_opts_init(struct plan_opts *o);

/* Pin the dimension a job key names ("parallelism.tp", "tp" within
 * "parallelism", ...). Returns 1 when key is a searched dimension, 0
 * when not (a key the planner does not search: nothing to pin). */
int plan_pin_key(struct plan_opts *o, const char *key);

/* One layout. */
struct plan_layout {
	int64_t nodes;			/* nodes of the system */
	int64_t tp, cp, pp, vpp, ep, etp, dp;
	int64_t mbs;			/* micro-batch size, sequences */
	int8_t recompute;		/* enum recompute */
	int8_t zero;			/* ZeRO stage */
	int8_t sp;			/* sequence parallelism */
	int8_t schedule;		/* enum pp_schedule */
	int8_t tp_overlap;		/* tp_comm_overlap (the job's, where valid) */
};

/* The bound of a layout: what most of its step is. */
enum plan_bound {
	PB_COMPUTE,		/* kernels at their math rate */
	PB_MEMORY,		/* bandwidth-bound kernels (roofline) */
	PB_COMM,		/* exposed communication */
	PB_BUBBLE,		/* pipeline bubble */
	PB_COUNT
};

extern const char *const plan_bound_names[PB_COUNT + 1];

/* A layout of the final ranking: both tiers' view. */
struct plan_cand {
	struct plan_layout lay;
	int64_t gpus;			/* GPUs of the layout */
	struct est_step est;		/* the analytical tier */
	int64_t est_rank;		/* 1 = the analytical best */
	struct footprint mem;		/* per GPU, worst pipeline rank */
	int full;			/* 1: simulated in full (below is set) */
	int full_failed;		/* 1: its full simulation failed (the
					 * step program's error, warned); it
					 * keeps its estimate and ranks last */
	double step_s;			/* s, one step (full run; else the estimate) */
	double part_s[EXEC_PART_COUNT];	/* s, the step's split */
	double tokens_per_s;		/* tokens/s, whole job */
	double mfu;			/* model FLOPs / (step GPUs peak) */
	double tflops_per_gpu;		/* TFLOP/s of model FLOPs per GPU */
	int bound;			/* enum plan_bound */
	double score;			/* the objective's value (lower is better) */
};

struct plan_result {
	struct plan_cand *cands;	/* the final ranking, best first */
	int64_t ncands;
	int64_t *front;			/* with max_gpus: indices into cands of the
					 * Pareto front, fewest GPUs first */
	int64_t nfront;
	uint64_t searched;		/* layouts in the search space */
	uint64_t ranked;		/* valid layouts that fit: ranked by the
					 * analytical tier */
	uint64_t estimated;		/* of them estimated in full; the others
					 * rank below the best top_k by their
					 * lower bound alone (est_bound) */
	uint64_t pruned[PR_COUNT];	/* layouts not estimated, by reason */
	double est_wall_s;		/* s, the analytical tier */
	double full_wall_s;		/* s, the full runs */
	double wall_s;			/* s, the whole plan */
	struct est_stats stats;		/* the analytical tier's counters */
	char why[1280];			/* why the best beats the runner-up */
};

/*
 * Plan job j (loaded with job_plan_schema; its layout fields are where
 * pinned dimensions come from). Returns 0; 2 after reporting bad input
 * to d (an impossible pin, no layout that fits: the message names the
 * binding rule and, for memory, by how much the smallest peak misses);
 * -1 after reporting a runtime failure (out of memory, a simulation that
 * failed). Release r with plan_result_release whatever it returned.
 */
int plan_run(const struct job_spec *j, const struct plan_opts *o,
	     struct plan_result *r, struct diag *d);

void plan_result_release(struct plan_result *r);

/*
 * The analytical tier of one job on one node count (nodes; 0 = the
 * job's), for callers that estimate layouts of their own one at a time
 * (benchmarks, the ranking test, serving's searches): its memo tables
 * stay warm across calls.
 */
struct plan_ctx;

struct plan_ctx *plan_ctx_new(const struct job_spec *j,
			      const struct plan_opts *o, int64_t nodes,
			      struct diag *d);
void plan_ctx_free(struct plan_ctx *x);

/*
 * Estimate layout l (its nodes are the context's): c gets the estimate,
 * the memory and the rates from the estimate (c->full 0). Returns 0; 1
 * when the layout breaks a rule (*why = the enum plan_prune reason; for
 * PR_MEMORY c is filled, for the others not); -1 after reporting a
 * runtime failure to d.
 */
int plan_ctx_estimate(struct plan_ctx *x, const struct plan_layout *l,
		      struct plan_cand *c, int *why, struct diag *d);

/* Simulate c[0..n-1] (each with its layout, gpus and estimate set, as
 * plan_ctx_estimate fills them) in full as plan_run's full tier does (in
 * o->jobs processes), replacing their step, rates, split and bound with
 * the run's. Returns 0, or -1 after reporting to d. */
int plan_simulate(const struct job_spec *j, const struct plan_opts *o,
		  struct plan_cand *c, size_t n, struct diag *d);

/* The job of layout l on job j's model and system (sys: j's system with
 * l's nodes, or NULL for j's own). */
void plan_layout_job(const struct job_spec *j, const struct system_spec *sys,
		     const struct plan_layout *l, struct job_spec *out);

/* "tp 8 pp 16 vpp 2 dp 128 mbs 1 sp full zero1 1f1b" into buf. */
void plan_layout_str(const struct plan_layout *l, char *buf, size_t len);

/* The result as `llmsim plan --json` prints it. NULL when out of memory. */
struct cJSON *plan_to_json(const struct job_spec *j, const struct plan_opts *o,
			   const struct plan_result *r);

/* The ranked table, the reason, the pruned counts, with units. */
void plan_print(FILE *out, const struct job_spec *j, const struct plan_opts *o,
		const struct plan_result *r);

/* The GPUs the search reaches: --max-gpus in whole nodes (12 on 8-GPU
 * nodes: 8), else the system's. */
int64_t plan_max_gpus_searched(const struct job_spec *j,
			       const struct plan_opts *o);

#endif
