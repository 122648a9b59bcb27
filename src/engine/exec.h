/*
 * exec.h - a step program's execution on the event engine (the program
 * itself, and how to build one, is prog.h).
 *
 * A program is what one training (or inference) step does on every
 * simulated rank: ordered streams of tasks (at least a compute and a
 * communication stream per rank) with explicit dependencies between tasks.
 * A task starts when all its dependencies have finished and it is at the
 * head of its stream (tasks on one stream run one at a time, in the order
 * they were added). A collective is one task on each simulated member
 * rank; it starts when every member has reached it (rendezvous), its
 * duration comes from the comm backend (comm.h), and it finishes on all
 * members at once. Overlap of compute and communication, and exposed
 * communication, follow from this; nothing is bolted on.
 *
 * After a run, every task knows its start and end, and the step time is
 * split along the critical path (walked back from the task that finished
 * last, through the dependency, stream predecessor or last-arriving
 * collective member that made each task start when it did; ties prefer the
 * same rank, then the lower task id):
 *
 *   compute_s       time the final rank (that of the last task) spent
 *                   computing: its compute tasks, on the path or beside
 *                   it (overlaps counted once)
 *   exposed_comm_s  communication tasks on the critical path, while the
 *                   final rank was not computing (the part not hidden)
 *   bubble_s        compute on the path that ran on other ranks while the
 *                   final rank was not computing: time it spent waiting
 *                   for other pipeline stages
 *   optimizer_s     optimizer tasks on the path (same proviso)
 *   other_s         tasks of category OTHER, and gaps on the path (same)
 *
 * These five sum to the step time. The rule, with a worked example, is at
 * the top of src/engine/exec_path.c.
 *
 * Interference: while collectives run on a rank, compute and optimizer
 * tasks there progress at rate max(0, 1 - S), S the sum of the running
 * collectives' coll_desc.sm_share (their kernels hold those compute units;
 * a GEMM's waves spread over the rest, and wait when none is left). A task's end is rescheduled when
 * S changes, so its duration is its work at full speed stretched by the
 * communication it overlapped. With every sm_share 0 nothing changes.
 * A persistent GEMM (prog_task_owned: its CTAs, one an SM, each own a
 * share h of its work before taking tiles from a shared queue) runs at
 * 1 / f with f = 1/(1-S) + h max(0, 2 - 1/(1-S)) instead: its CTAs that
 * could not start beside the held units run their owned tiles after the
 * others (src/gpu/gpu_gemm.c derives it; h 1: two rounds, 2x), when some
 * running collective on the rank holds units without coll_desc.sm_margin
 * (with only margin ones the GEMM was launched on the rest: the share
 * law). The rate follows S as it changes, as the plain law does.
 * Launch order: such a GEMM's CTAs take a whole SM each (registers and
 * shared memory), so a collective that holds units (sm_share > 0, no
 * sm_margin) and becomes ready while a persistent GEMM runs on one of
 * its member ranks, started before that member arrived (its kernel was
 * launched while the GEMM ran), cannot get its SMs there: it starts when
 * those GEMMs have ended
 * (before the next GEMM on their stream, which then starts beside it and
 * is slowed by the law; exec_task_sm_wait_s says how long it waited, and
 * the critical path runs through the GEMM it waited for). A GEMM already
 * running when such a collective starts is one launched at or after its
 * member's arrival (the member's kernel was there first; it is slowed
 * from the collective's start, as before: before the rendezvous a
 * member holds nothing). With no persistent GEMM (owned 0 everywhere)
 * nothing changes.
 * The other way round (exec_crate.c): a collective whose descriptor has
 * busy_rate x in (0, 1) progresses at x while a compute or optimizer task
 * runs on any member rank; after the backend is done it stays running
 * until it has run out the work it lost. With every busy_rate 0 or 1
 * nothing changes.
 *
 * Programs are built by src/models; ranks here are simulated ranks (with
 * symmetric replication one simulated rank may stand for many GPUs; the
 * collective descriptors carry the real GPU ids).
 *
 * Depends on prog.h, sim.h, comm.h, base/coll.h and libc.
 */
#ifndef LLMSIM_ENGINE_EXEC_H
#define LLMSIM_ENGINE_EXEC_H

#include <stdint.h>
#include <stdio.h>

#include "base/coll.h"
#include "comm.h"
#include "prog.h"
#include "sim.h"

enum exec_part {
	EXEC_COMPUTE,
	EXEC_EXPOSED_COMM,
	EXEC_BUBBLE,
	EXEC_OPTIMIZER,
	EXEC_OTHER,
	EXEC_PART_COUNT
};

/* JSON key of each part: "compute_s", "exposed_comm_s", "bubble_s",
 * "optimizer_s", "other_s". */
extern const char *const exec_part_keys[EXEC_PART_COUNT];
/* Its label in text summaries: "compute", "exposed communication",
 * "pipeline bubble", "optimizer", "other". */
extern const char *const exec_part_labels[EXEC_PART_COUNT];

/* Streams told apart in exec_result.exposed_by_stream_s; later streams
 * count in the last slot. */
#define EXEC_MAX_STREAMS 16

/* The persistent-GEMM law: how many times longer than alone a GEMM
 * runs beside kernels that hold a share s in [0, 1) of its GPU's
 * units, its CTAs owning a share h in [0, 1] of its work
 * (gpu_gemm_owned_share): f = 1/(1-S) + h max(0, 2 - 1/(1-S)), S = s
 * (h 0: the share law 1/(1-S); h 1: two rounds, 2x, while 1/(1-S) <= 2;
 * S 0: 1, nothing waits; S >= 1: +inf, no progress). The executor
 * (exec_run.c) and the planner's estimate (src/plan/est_block.c,
 * est_dp.c) both take it from here. */
double exec_owned_slowdown(double s, double h);

/* E[max] and Var[max] of n independent standard normals (e(1) = 0,
 * v(1) = 1), by quadrature (exec_jitter.c). */
double exec_emax(double n);
double exec_vmax(double n);

struct exec_result {
	double step_s;				/* s, end of the last task: the
						 * mean with variability */
	double step_sd_s;			/* s, step-to-step standard deviation
						 * from per-op variability (0 without) */
	double part_s[EXEC_PART_COUNT];		/* s, sums to step_s */
	double exposed_by_stream_s[EXEC_MAX_STREAMS];
						/* s, part_s[EXEC_EXPOSED_COMM]
						 * by the stream of the
						 * communication task on the
						 * path (sums to it) */
	double other_by_stream_s[EXEC_MAX_STREAMS];
						/* s, part_s[EXEC_OTHER] by the
						 * stream of the other-category
						 * task on the path (the gaps of
						 * the path, in none of them) */
	uint32_t final_rank;			/* rank of the last task */
	uint64_t events;			/* engine events executed */
};

/*
 * Run the program on sim from time 0 using ops/ctx to time collectives.
 * Returns 0, or -1 (with *why set) when out of memory, when the program
 * deadlocks (a dependency cycle, or a collective some member can never
 * reach), or when a collective never completes.
 */
int exec_run(struct prog *p, struct sim *sim, const struct comm_ops *ops,
	     void *ctx, struct exec_result *out, const char **why);

/* After exec_run(): when a task started and ended (s). */
double exec_task_start_s(const struct prog *p, task_id t);
double exec_task_end_s(const struct prog *p, task_id t);
/* exec_task_end_s() - exec_task_start_s(), the same double, in one call
 * (reports sum it over millions of tasks). */
double exec_task_dur_s(const struct prog *p, task_id t);
/* What task t is: its name, category, layer, microbatch and phase. */
void exec_task_info(const struct prog *p, task_id t, struct task_info *out);
/* Task t's name, and its category into *cat: exec_task_info() without
 * the layer and microbatch (no search of their runs). */
const char *exec_task_name(const struct prog *p, task_id t,
			   enum task_cat *cat);
uint32_t exec_task_rank(const struct prog *p, task_id t);
/* After exec_run(): how long the collective of member t waited, once
 * ready, for persistent GEMMs on its member ranks to end (launch order;
 * s, 0 for a plain task or one that did not wait). */
double exec_task_sm_wait_s(const struct prog *p, task_id t);
/* The collective a task belongs to, or NULL for a plain task. Calls with
 * equal descriptors share one (the program keeps one copy of each). */
const struct coll_desc *exec_task_coll(const struct prog *p, task_id t);
/* The stream a task is on, and a stream's name (NULL if unnamed). */
uint32_t exec_task_stream(const struct prog *p, task_id t);
const char *exec_stream_name(const struct prog *p, uint32_t stream);
/* Which call of a collective a task is a member of (members of one call
 * share it, and are consecutive tasks), or UINT32_MAX for a plain task. */
uint32_t exec_task_coll_id(const struct prog *p, task_id t);
/* 1 if the task lies on the critical path. */
int exec_task_critical(const struct prog *p, task_id t);
/* After exec_run(): for every collective call k (prog_colls), the part
 * of its first member's [start, end) during which that member's own rank
 * ran compute (any compute task, overlaps counted once), in s, into
 * overlap[k] (prog_colls entries): what the call's own GPU computed
 * while it moved data, unlike the critical path's view (another rank's
 * call is off the path even when its own rank sat idle). 0, or -1 when
 * out of memory. */
int exec_coll_overlap(const struct prog *p, double *overlap);

/* Series of a counter track in a trace (memory per rank over time). */
#define EXEC_COUNTER_SERIES 2

struct exec_counter {
	uint32_t rank;				/* simulated rank (pid) */
	double t_s;				/* s, when the values take effect */
	double value[EXEC_COUNTER_SERIES];	/* in the track's unit */
};

struct exec_counters {
	const char *name;			/* "memory per GPU (GB)" */
	const char *series[EXEC_COUNTER_SERIES];	/* names; NULL: unused */
	const struct exec_counter *v;		/* points, any order */
	size_t n;
};

/*
 * Write the executed program as Chrome trace-event JSON (opens in
 * Perfetto): one process per simulated rank, one thread per stream, one
 * complete event per task inside enclosing slices for each microbatch's
 * forward or backward pass and each layer, flow arrows along the
 * dependencies between streams and along the critical path, and the
 * counter points of counters (may be NULL). rank_label(rank, buf, len,
 * arg) may name ranks ("pp3 tp0 dp0"); NULL for "rank N". Returns 0 or -1
 * on a write error. (exec_trace.c documents the events.)
 */
int exec_write_trace(const struct prog *p, FILE *out,
		     void (*rank_label)(uint32_t rank, char *buf, size_t len,
					void *arg),
		     void *arg, const struct exec_counters *counters);

#endif
