/*
 * step.h - simulate one training step of a job and say where the time
 * went: build the step program (train.h), run it on the event engine with
 * the fabric model as the comm backend, account model FLOPs, memory and
 * the collectives that mattered.
 *
 * Depends on exec.h, network/net.h, gpu/gpu.h and the models modules.
 */
#ifndef LLMSIM_RUN_STEP_H
#define LLMSIM_RUN_STEP_H

#include <stdint.h>
#include <stdio.h>

#include "base/coll.h"
#include "base/units.h"
#include "engine/exec.h"
#include "models/footprint.h"
#include "models/train.h"

struct diag;
struct cJSON;
struct sim;

/* Collectives the readable summary lists (step_print); the result and
 * its JSON keep every one. */
#define STEP_TOP_COLLS 8
/* Pipeline stages whose memory a result keeps (pp up to this). */
#define STEP_MAX_STAGES 256

/* The parallel dimensions exposed communication is split by: the stream
 * a collective runs on names it (tp, cp, ep, pp_*, dp*); OTHER is any
 * other stream. */
enum step_dim {
	STEP_DIM_TP,
	STEP_DIM_CP,
	STEP_DIM_EP,
	STEP_DIM_PP,
	STEP_DIM_DP,
	STEP_DIM_OTHER,
	STEP_DIM_COUNT
};

/* "tp", "cp", "ep", "pp", "dp", "other". */
extern const char *const step_dim_names[STEP_DIM_COUNT];

/* One kind of collective over the step (one simulated group's view). */
struct step_coll_stat {
	char name[64];		/* task name ("attn_tp_reduce") */
	enum coll_op op;
	uint32_t group;		/* GPUs in the group */
	double bytes;		/* B, summed over the calls (coll.h convention) */
	uint32_t count;		/* calls simulated */
	double time_s;		/* s, summed duration of the calls */
	double critical_s;	/* s, of that on the critical path */
	double overlapped_s;	/* s, of that while the call's own GPU
				 * computed (exec_coll_overlap) */
};

struct step_result {
	double step_s;			/* s, one training step: the mean, with
					 * the synchronization tax */
	double step_sd_s;		/* s, its step-to-step standard deviation */
	double step_p50_s;		/* s, median step (normal model: the mean) */
	double step_p90_s;		/* s, 90th percentile: mean + 1.2816 sd */
	double tokens_per_s;		/* tokens/s, whole job */
	double mfu;			/* model FLOPs / (step * GPUs * dense peak) */
	double tflops_per_gpu;		/* TFLOP/s of model FLOPs per GPU */
	double hw_tflops_per_gpu;	/* TFLOP/s executed per GPU (recompute included) */
	double peak_flops;		/* FLOP/s, the dtype's dense peak per GPU */
	double matrix_clock_hz;		/* Hz, the clock the matrix work ran at:
					 * sustained_matrix_clock, or the power
					 * model's step clock (gpu_power.c) */
	double part_s[EXEC_PART_COUNT];	/* s, the step split (sums to step_s) */
	double forward_s;		/* s, the final rank's forward compute */
	double backward_s;		/* s, its backward compute (recomputation
					 * included); forward_s + backward_s =
					 * part_s[EXEC_COMPUTE] */
	double exposed_dim_s[STEP_DIM_COUNT];	/* s, exposed communication by
					 * dimension (sums to
					 * part_s[EXEC_EXPOSED_COMM]) */
	int64_t gpus;			/* GPUs of the job */
	struct train_plan plan;		/* microbatches, tokens, FLOPs, layout */
	struct footprint mem;		/* per GPU, worst pipeline rank */
	struct footprint stage_mem[STEP_MAX_STAGES];	/* per GPU, each
					 * pipeline rank (the first nstages) */
	int64_t nstages;		/* entries of stage_mem: min(pp, max) */
	double stage_compute_s[STEP_MAX_STAGES];	/* s, compute of the
					 * busiest simulated GPU of each pipeline
					 * rank (the first nstages) */
	int64_t final_stage;		/* pipeline rank of the rank that
					 * finished last (whose waits
					 * part_s splits) */
	double ideal_bubble;		/* fraction of the step the schedule
					 * idles with equal stages: (p - 1) /
					 * (v m + p - 1), 0 without pipeline */
	struct step_coll_stat *colls;	/* every kind, longest first (heap;
					 * step_result_release frees it) */
	uint32_t ncolls;		/* entries of colls */
	double host_busy_s;		/* s, the busiest simulated rank's host
					 * thread issuing work (0: no host model) */
	double host_critical_s;		/* s, host issue and syncs on the
					 * critical path while the final
					 * rank was not computing (the GPUs
					 * waited; part of other_s) */
	uint32_t tasks;			/* tasks in the program */
	uint64_t events;		/* engine events */
	uint64_t calls;			/* collective calls started */
	uint64_t replayed;		/* of those, replayed from their idle
					 * trajectory (network/crun.h) */
	uint64_t flows;			/* flows started (replays that became
					 * flows not counted) */
	uint64_t solves;		/* max-min re-solves */
};

/* Another comm backend than a fresh fabric model (tests; a fabric model
 * shared by many steps, net_attach): its ops, its context, a hook told
 * the simulation before the run (may be NULL; -1 = out of memory) and
 * one asked after it whether the backend failed (may be NULL; the
 * reason, or NULL when it did not). */
struct step_comm {
	const struct comm_ops *ops;	/* NULL: the fabric model (net.h) */
	void *ctx;			/* the backend's context */
	int (*attach)(void *ctx, struct sim *sim);
	const char *(*failed)(void *ctx);
};

/*
 * Simulate one step of job j (full = 1 forces every GPU to be simulated),
 * writing a Chrome trace to trace when not NULL. comm may be NULL (the
 * fabric model). Returns 0; -1 after reporting a runtime failure to d (out
 * of memory, simulation failure) or on a trace write error, which the
 * caller reports (step_write_trace); -2 after reporting something the job
 * asks for that llmsim cannot simulate or build (bad input). Progress on
 * long runs goes to d (diag_progress). Release *out with
 * step_result_release() whatever it returned.
 */
int step_run(const struct job_spec *j, int full, const struct step_comm *comm,
	     FILE *trace, struct step_result *out, struct diag *d);

/* step_run() without a trace and without what the planner's full tier
 * does not read: the per-collective table (colls, which times every
 * call's overlap with each rank's compute), the per-rank busy and host
 * stats, and the memory per stage (mem, stage_mem) stay zero. The step
 * time, its parts, tokens/s, MFU and TFLOP/s per GPU are step_run()'s
 * bit for bit (the same simulation; those come before the rest). */
int step_run_time(const struct job_spec *j, int full,
		  const struct step_comm *comm, struct step_result *out,
		  struct diag *d);

/* Sum every collective call of an executed program (counted once, at its
 * first member task) by (task name, op, group) into *colls (grown with
 * mem_realloc, *ncolls entries), longest first. -1 when out of memory. */
int step_coll_stats(const struct prog *p, struct step_coll_stat **colls,
		    uint32_t *ncolls);

/* Free what step_run() allocated in r (its collective stats). r is
 * step_run()'s output, or zeroed if step_run() was never called. */
void step_result_release(struct step_result *r);

/* The version of the --json object's layout, printed as its
 * schema_version (docs/cli-output.md documents every field). */
#define STEP_JSON_SCHEMA 2

/* What simulating a step costs, before it is built (step.c has the
 * rates; an estimate, not a promise). */
struct step_estimate {
	double tasks;		/* tasks of the step program */
	double calls;		/* collective calls */
	double ranks;		/* simulated ranks */
	double memory_B;	/* B, llmsim's peak memory, about */
	double time_s;		/* s of CPU, about */
	double trace_B;		/* B, a --trace file, about */
	int buildable;		/* 0: more tasks than a program holds */
};

/*
 * Estimate what step_run(j, full) would cost. Returns 0; -2 after
 * reporting what the job asks that llmsim cannot simulate (as step_run);
 * -1 after reporting a runtime failure (out of memory).
 */
int step_estimate(const struct job_spec *j, int full,
		  struct step_estimate *e, struct diag *d);

/* The result as the JSON object `llmsim run --json` prints. NULL when out
 * of memory. */
struct cJSON *step_to_json(const struct job_spec *j,
			   const struct step_result *r);

/* Add the keys that name a result's job to o (every run's JSON has them):
 * job, model, system, gpu, and gpus (the job's GPUs). 1, or 0 when out
 * of memory (o partly filled; the caller frees it). */
int step_json_job(struct cJSON *o, const struct job_spec *j, int64_t gpus);

/*
 * Write the trace of program p, which step_run() built and ran for job j
 * with result r: the engine's events (exec_write_trace) and a counter
 * track per simulated rank of its memory per GPU over the step (weights,
 * gradients, optimizer states and workspace, and the activations each
 * microbatch keeps from the end of its forward to the end of its
 * backward, as the footprint model counts them). 0; -1 after reporting
 * out of memory; -1 unreported on a write error (out's error flag is set
 * and errno says why: the caller names the file, cli_trace_close).
 */
struct prog;
int step_write_trace(const struct job_spec *j, const struct prog *p,
		     const struct step_result *r, FILE *out, struct diag *d);

/* A quantity for people: 4 significant digits, decimal prefixes (bytes
 * in GB, MB, kB; time in s, ms, us, ns; other kinds as units_format).
 * Returns buf. */
const char *step_human(char *buf, size_t len, double v, enum unit_kind k);

/* A readable summary with units. */
void step_print(FILE *out, const struct job_spec *j,
		const struct step_result *r);

#endif
