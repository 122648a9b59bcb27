/*
 * spec_job.h - a job: which model on which system, what phase, with which
 * training settings and parallel layout.
 *
 * This is the contract users and later issues rely on (see DESIGN.md):
 *
 *   model: NAME | path | {preset: NAME, ...overrides}
 *   system: NAME | path | {preset: NAME, ...overrides}
 *   phase: training
 *   training: {seq_len, global_batch_size, micro_batch_size, dtype,
 *              recompute, zero_stage, optimizer}
 *   parallelism: {tp, pp, cp, ep, dp, vpp, sequence_parallel, schedule}
 *
 * dp is optional and inferred as GPUs / (tp * pp * cp). The schema's check
 * enforces the layout constraints that need no performance model (world
 * size, batch divisibility, heads divisible by tp, ...), each a diagnostic
 * naming the constraint.
 *
 * Depends on schema.h, spec_model.h, spec_system.h.
 */
#ifndef LLMSIM_SPEC_JOB_H
#define LLMSIM_SPEC_JOB_H

#include <stdint.h>

#include "schema.h"
#include "spec_model.h"
#include "spec_system.h"

enum job_phase {
	PHASE_TRAINING
};

enum recompute {
	RECOMPUTE_NONE,
	RECOMPUTE_SELECTIVE,		/* attention core only */
	RECOMPUTE_FULL			/* whole layer */
};

enum optimizer {
	OPT_ADAM,
	OPT_SGD
};

enum pp_schedule {
	SCHED_GPIPE,
	SCHED_1F1B,
	SCHED_INTERLEAVED
};

extern const char *const job_phase_names[];
extern const char *const recompute_names[];
extern const char *const optimizer_names[];
extern const char *const pp_schedule_names[];

struct training_spec {
	int64_t seq_len;		/* tokens per sequence */
	int64_t global_batch_size;	/* sequences per step, all replicas */
	int64_t micro_batch_size;	/* sequences per microbatch per replica */
	int dtype;			/* enum dtype (spec_gpu.h) */
	int recompute;			/* enum recompute */
	int64_t zero_stage;		/* 0-3; 3 = FSDP full sharding */
	int optimizer;			/* enum optimizer */
};

struct parallel_spec {
	int64_t tp;			/* tensor parallel */
	int64_t pp;			/* pipeline stages */
	int64_t cp;			/* context parallel */
	int64_t ep;			/* expert parallel */
	int64_t dp;			/* data parallel (inferred when absent) */
	int64_t vpp;			/* virtual stages per pipeline rank */
	int sequence_parallel;		/* shard norms/dropout along sequence with TP */
	int schedule;			/* enum pp_schedule */
};

struct job_spec {
	const char *name;			/* job name */
	const struct model_spec *model;
	const struct system_spec *system;
	int phase;				/* enum job_phase */
	struct training_spec training;
	struct parallel_spec parallelism;
};

extern const struct schema job_schema;

#endif
