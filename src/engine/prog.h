/*
 * prog.h - a step program: what one training (or inference) step does on
 * every simulated rank, as ordered streams of tasks with explicit
 * dependencies, and collectives as one task on each member rank. Built
 * by src/models, run by the executor (exec.h), which also reads each
 * task's times back after the run.
 *
 * Depends on base/coll.h and libc.
 */
#ifndef LLMSIM_ENGINE_PROG_H
#define LLMSIM_ENGINE_PROG_H

#include <stdint.h>

#include "base/coll.h"

enum task_cat {
	TASK_COMPUTE,		/* kernels: GEMMs, attention, elementwise */
	TASK_COMM,		/* collectives and point-to-point transfers */
	TASK_OPTIMIZER,		/* the optimizer step */
	TASK_OTHER,		/* anything else (host work, fixed delays) */
	TASK_CAT_COUNT
};

typedef uint32_t task_id;
#define TASK_NONE UINT32_MAX

/* What a task is, for traces and reports. name must outlive the program
 * (a string literal, or interned with prog_intern()). */
/* Which pass of a training step a task belongs to (for the forward /
 * backward split of reports); NONE for everything else. */
enum task_phase {
	TASK_PHASE_NONE,
	TASK_PHASE_FWD,		/* the forward pass */
	TASK_PHASE_BWD,		/* the backward pass, recomputation included */
	TASK_PHASE_COUNT
};

struct task_info {
	const char *name;	/* "qkv_fwd", "tp_allreduce", ... */
	enum task_cat cat;
	int32_t layer;		/* -1 when not tied to a layer */
	int32_t microbatch;	/* -1 when not tied to a microbatch */
	enum task_phase phase;	/* NONE unless the builder says */
};

struct prog;

/* A program over nranks simulated ranks with nstreams streams each.
 * NULL when out of memory. */
struct prog *prog_new(uint32_t nranks, uint32_t nstreams);
void prog_free(struct prog *p);

/* Copy a string into the program's storage; NULL when out of memory. */
const char *prog_intern(struct prog *p, const char *s);

/* Name a stream for traces ("compute", "comm"); stream < nstreams. */
void prog_name_stream(struct prog *p, uint32_t stream, const char *name);

/* Append a task of fixed duration dur_s >= 0 to (rank, stream). Returns
 * its id, or TASK_NONE when out of memory (the program is then failed and
 * exec_run() returns -1). */
task_id prog_task(struct prog *p, uint32_t rank, uint32_t stream,
		  double dur_s, const struct task_info *info);

/* The same for a persistent GEMM kernel whose CTAs each own a share
 * `owned` in [0, 1] of its work (gpu_gemm_owned_share): beside running
 * collectives it is slowed by that law (exec.h), not by the plain share
 * law; owned 0 is prog_task. */
task_id prog_task_owned(struct prog *p, uint32_t rank, uint32_t stream,
			double dur_s, const struct task_info *info,
			double owned);

/*
 * Append a collective over the simulated ranks ranks[0..n-1]: one task on
 * `stream` of each. *c is copied (with its gpus and a2a_B arrays) into
 * the program. The member task on ranks[i] is first + i. Returns the
 * first member's id, or TASK_NONE when out of memory.
 */
task_id prog_coll(struct prog *p, const uint32_t *ranks, uint32_t n,
		  uint32_t stream, const struct coll_desc *c,
		  const struct task_info *info);

/*
 * A hint: room for about `tasks` more tasks (and as many dependencies
 * again, twice that many edges) and `calls` more collective calls, so
 * that a program whose size is known before it is built (train_count)
 * is not grown and copied as it is built. Capacity nobody uses is
 * address space, never touched. Counts past PROG_MAX_TASKS, or an
 * allocation that fails, leave the program as it was: it grows as
 * before.
 */
void prog_reserve(struct prog *p, double tasks, double calls);

/* `after` may not start until `before` has finished. Returns 0, or -1
 * when out of memory. */
int prog_dep(struct prog *p, task_id before, task_id after);

uint32_t prog_ranks(const struct prog *p);
uint32_t prog_tasks(const struct prog *p);

/* The most tasks a program holds. */
#define PROG_MAX_TASKS 0x7ffffffdu

/* Collective calls in the program, in the order they were added (their
 * first members' order); call k's members are the tasks
 * prog_coll_first(p, k) .. + prog_coll_members(p, k) - 1. */
uint32_t prog_colls(const struct prog *p);
task_id prog_coll_first(const struct prog *p, uint32_t k);
uint32_t prog_coll_members(const struct prog *p, uint32_t k);

/* Call fn(arg, done, total, now_s) while exec_run() runs, every
 * PROG_PROGRESS_TASKS tasks finished (done of total, the simulated clock
 * at now_s): long runs can say how far they are. NULL for none. */
#define PROG_PROGRESS_TASKS (1u << 20)
void prog_set_progress(struct prog *p,
		       void (*fn)(void *arg, uint32_t done, uint32_t total,
				  double now_s),
		       void *arg);

/* Per-rank variability (exec_jitter.c has the model and its sources):
 * both 0 = a deterministic fleet, no synchronization tax. */
struct exec_jitter {
	double op_sigma;	/* relative sd of a GPU's pace over one op (a
				 * microbatch's compute run on one rank) */
	double gpu_sigma;	/* relative sd of a GPU's persistent pace */
};

/* Make every rendezvous of p wait for its slowest member under j. */
void prog_set_jitter(struct prog *p, const struct exec_jitter *j);

#endif
