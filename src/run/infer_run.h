/*
 * infer_run.h - one inference step (phase prefill or decode) end to end,
 * and the step model the serving simulation calls once per engine step.
 *
 *   infer_run      the job's batch through the full step program (every
 *                  layer, live fabric flows): latency, tokens/s, breakdown,
 *                  memory and KV capacity, collectives, trace;
 *   infer_stepper  the same step path for any batch, one unit at a time
 *                  (infer_prog.h: a stage of L layers takes L times one
 *                  layer), collectives timed on the idle fabric and
 *                  memoized (infer_comm.h): what serving costs each
 *                  engine step with.
 *
 * Depends on the models' inference modules, engine/exec.h, network/net.h.
 */
#ifndef LLMSIM_RUN_INFER_RUN_H
#define LLMSIM_RUN_INFER_RUN_H

#include <stdint.h>
#include <stdio.h>

#include "engine/exec.h"
#include "models/infer_prog.h"
#include "infer_comm.h"
#include "step.h"

struct diag;
struct cJSON;
struct sim;

struct infer_result {
	double step_s;			/* s, the step's latency (host included, or
					 * max(GPU, host) when the engine overlaps) */
	double gpu_s;			/* s, the step program (GPU side) */
	double host_s;			/* s, the host's share */
	double tokens_per_s;		/* prefill: prompt tokens/s; decode: output
					 * tokens/s, of one instance */
	double tokens_per_s_total;	/* the same, all instances of the job */
	double part_s[EXEC_PART_COUNT];	/* s, the step split (sums to step_s) */
	double flops_per_gpu;		/* FLOP executed on the busiest GPU */
	double tflops_per_gpu;		/* TFLOP/s of it */
	double mfu;			/* of the compute dtype's dense peak */
	double hbm_floor_s;		/* s, (weights + KV read) / HBM peak, fullest stage */
	double weights_read_B;		/* B per GPU read by the GEMMs, fullest stage */
	double kv_read_B;		/* B per GPU of KV read by attention */
	int64_t gpus;			/* GPUs of the job */
	int64_t instances;		/* engine instances (dp) */
	double batch;			/* sequences */
	double tokens;			/* T */
	struct infer_prog_info info;
	struct infer_mem mem;
	struct step_coll_stat *colls;	/* heap; infer_result_release frees it */
	uint32_t ncolls;
	uint32_t tasks;
	uint64_t events;
};

/* Simulate the job's step (phase prefill or decode), trace when not NULL.
 * Returns 0; -1 after a runtime failure (a trace write error is left to
 * the caller, who names the file: trace's error flag is set and errno says
 * why); -2 after reporting bad input.
 * Release *out with infer_result_release() whatever it returned. */
int infer_run(const struct job_spec *j, FILE *trace, struct infer_result *out,
	      struct diag *d);
void infer_result_release(struct infer_result *r);

struct cJSON *infer_to_json(const struct job_spec *j,
			    const struct infer_result *r);
void infer_print(FILE *out, const struct job_spec *j,
		 const struct infer_result *r);

/* The memory of an instance as the JSON object under "memory". NULL
 * when out of memory. */
struct cJSON *infer_mem_json(const struct infer_mem *m);

/* The batch a prefill/decode job describes. */
void infer_job_batch(const struct job_spec *j, struct infer_batch *b);

/* ---- the per-engine-step model ---- */

/* What one engine step costs. */
struct infer_step_cost {
	double latency_s;		/* s, a batch through every stage (GPU) */
	double interval_s;		/* s, the slowest stage: the pipeline
					 * accepts a batch this often */
	double host_s;			/* s, the host's share (not in the above) */
	double part_s[EXEC_PART_COUNT];	/* s, split of latency_s */
	enum infer_graph graph;
};

struct infer_unit_memo;
struct infer_step_memo;

struct infer_stepper {
	struct infer_ctx ctx;
	struct sim *sim;
	struct infer_comm comm;		/* idle fabric, memoized */
	uint64_t steps;			/* costed so far */
	uint64_t events;		/* engine events of the unit programs */
	struct infer_step_units units;	/* scratch of infer_stepper_cost */
	struct infer_unit_memo *umemo;	/* unit program times (infer_run.c) */
	uint64_t unit_hits, unit_runs;	/* units the memo answered, ran */
	struct infer_step_memo *smemo;	/* whole steps by batch (infer_run.c) */
	uint64_t step_hits;		/* steps the memo answered */
};

/* Set up s for job j (an inference phase). 0, -1 (runtime), -2 (bad
 * input, reported). Release with infer_stepper_release(). */
int infer_stepper_init(struct infer_stepper *s, const struct job_spec *j,
		       struct diag *d);
void infer_stepper_release(struct infer_stepper *s);

/* Drop s's memos (kernel costs, unit programs): every later step is
 * costed from scratch. The memos change no number (infer_run.c); this is
 * how a test shows it. */
void infer_stepper_no_memo(struct infer_stepper *s);

/* Whether the unit memo keys unit ua of step units a and unit ub of b,
 * both of stage `stage`, alike (one cached time for both): 1 or 0; -1
 * out of memory. For tests of the key (infer_run.c unit_key). */
int infer_unit_keys_equal(const struct infer_ctx *x,
			  const struct infer_step_units *a,
			  const struct infer_unit *ua,
			  const struct infer_step_units *b,
			  const struct infer_unit *ub, int64_t stage);

/* Cost batch b. 0, or -1 after reporting a runtime failure. */
int infer_stepper_cost(struct infer_stepper *s, const struct infer_batch *b,
		       struct infer_step_cost *out, struct diag *d);

#endif
