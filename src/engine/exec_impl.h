/*
 * exec_impl.h - private to the program (prog.c, prog_intern.c) and the
 * executor (exec_*.c): how a program is stored and what a run keeps.
 * Nothing outside src/engine/ includes it.
 *
 * Storage is sized for programs of 10^5..10^6 tasks. What the executor
 * touches for every task sits in one 16-byte record (one cache miss, not
 * one per field):
 *
 *   dur    i64   duration in ns (>= 0), or -(k + 1) for a member of
 *                collective k
 *   lane   u32   rank * nstreams + stream
 *   next   u32   next task on the same lane (the stream's FIFO order)
 *
 * and the task's description is an index (u32) into the deduplicated
 * task_info table: 20 bytes a task, plus 8 bytes a dependency edge while
 * building (4 once the edges are turned into CSR at run time), plus 64
 * bytes a collective. Names are interned once per distinct string;
 * task_info records are shared by every task with the same (name,
 * category, layer, microbatch), which is most of them when peer ranks run
 * the same layers; a collective's GPU list is shared by every collective
 * over that group (prog_intern.c).
 *
 * A run adds a 24-byte state per task (start and end or arrival, pending
 * count, cause; kept for the accessors) and, while it runs, a work-queue entry per task.
 *
 * Depends on exec.h, base/arena.h.
 */
#ifndef LLMSIM_ENGINE_EXEC_IMPL_H
#define LLMSIM_ENGINE_EXEC_IMPL_H

#include "exec.h"
#include "base/arena.h"

/* A collective: its descriptor (arrays copied into the program's arena)
 * and its member tasks first .. first + n - 1. */
struct pcoll {
	struct coll_desc desc;	/* gpus, a2a_B point into prog->arena */
	task_id first;		/* task id of the member on ranks[0] */
	uint32_t n;		/* simulated members */
};

/* When a collective ran, relative to the start of the run. */
struct pcoll_time {
	units_ns_t start_ns;	/* ns, rendezvous: last member arrived */
	units_ns_t end_ns;	/* ns, the backend called done */
};

/* An open-addressing table of entry indexes, for interning (entries live
 * in a parallel array of cap elements that the table grows). */
struct itab {
	uint32_t *slot;		/* nslots: entry index + 1, 0 = free */
	uint32_t *hash;		/* cap: each entry's hash */
	uint32_t nslots;	/* power of two, 2 * cap */
	uint32_t n, cap;	/* entries, room for entries */
};

/* A task as the executor sees it. */
struct ptask {
	int64_t dur;		/* ns, or -(collective + 1) for a member */
	uint32_t lane;		/* rank * nstreams + stream */
	uint32_t next;		/* next task on the lane, or TASK_NONE */
};

/* A task during and after a run. */
struct pstate {
	int64_t stamp;		/* ns; plain task: end; collective member:
				 * arrival */
	int64_t start;		/* ns; plain task: start (compute may stretch
				 * past dur, see exec.h) */
	uint32_t pending;	/* unfinished predecessors (run only) */
	uint32_t cause;		/* critical-path cause, or TASK_NONE */
};

struct prog {
	uint32_t nranks;		/* simulated ranks */
	uint32_t nstreams;		/* streams per rank */
	uint32_t ntasks, cap;		/* tasks, allocated task slots */
	struct ptask *task;		/* per task */
	uint32_t *info;			/* per task: index into infos */
	uint32_t *lane_head;		/* per lane: first task or none */
	uint32_t *lane_tail;		/* per lane: last task or none */
	const char **stream_name;	/* per stream: name or NULL */

	struct task_info *infos;	/* distinct task descriptions */
	struct itab info_tab;		/* ... and their table */
	const char **strs;		/* interned strings (in arena) */
	struct itab str_tab;
	const uint32_t **groups;	/* member lists: n, then n GPU ids */
	struct itab group_tab;

	struct pcoll *colls;		/* collectives */
	uint32_t ncolls, capcolls;
	struct coll_path *path;		/* the last non-library path copied (in
					 * arena); collectives with an equal one
					 * share it */

	uint32_t *edge;			/* edges to add: before, after */
	uint32_t nedges, capedges;	/* pairs */
	uint32_t *succ_off;		/* CSR: ncsr + 1 offsets into succ */
	uint32_t *succ;			/* CSR: successors by task */
	uint32_t ncsr;			/* tasks the CSR covers */

	struct arena arena;		/* strings, collective arrays */

	/* results of the last successful exec_run() */
	struct pstate *state;		/* per task */
	struct pcoll_time *coll_time;	/* per collective */
	uint64_t *critical;		/* bitmap: on the critical path */
	int ran;			/* results are valid */

	int failed;			/* an allocation failed (build) */
	char why[320];			/* exec_run()'s message */
	struct exec_jitter jitter;	/* per-rank variability; 0 = none */
};

/* ---- variability during a run (exec_jitter.c) ---- */

#define JIT_MEMO 4096		/* group sizes whose e(N), v(N) are kept */

/* Variance terms a rank gathered since it last met a group. */
struct jit_acc {
	double closed;		/* s^2, sum of closed ops' parts squared */
	double since;		/* s, the open op's part */
	double comp;		/* s, compute (for the persistent pace) */
};

struct jit_group {
	uint64_t key;		/* exec_jit_group_key of its GPUs */
	struct jit_acc acc;
};

struct jit_rank {
	uint32_t op_mb;		/* microbatch of the open op, or UINT32_MAX */
	double op_len;		/* s of compute in the open op */
	double var;		/* s^2, spread of its lateness (closed ops) */
	struct jit_acc total;	/* since the step began */
	struct jit_group *g;	/* per group it met */
	uint32_t n, cap;
};

struct exec_jit {
	struct exec_jitter spec;
	int on;
	uint32_t nranks;
	struct jit_rank *rank;	/* per simulated rank */
	double memo_e[JIT_MEMO], memo_v[JIT_MEMO];
	unsigned char memo_ok[JIT_MEMO];
};

/* 0, or -1 when out of memory (release anyway). */
int exec_jit_init(struct exec_jit *j, const struct exec_jitter *spec,
		  uint32_t nranks);
void exec_jit_release(struct exec_jit *j);
/* A compute task of dur_s for microbatch mb (-1: none) ran on rank. */
void exec_jit_compute(struct exec_jit *j, uint32_t rank, int32_t mb,
		      double dur_s);
/* The members ranks[0..n-1] (simulated) of a collective of group key
 * over gpus GPUs all arrived: *wait_s = the expected lateness of the
 * slowest. 0, or -1 out of memory. */
int exec_jit_rendezvous(struct exec_jit *j, const uint32_t *ranks,
			uint32_t n, uint64_t key, uint32_t gpus,
			double *wait_s);
/* rank's compute waited for a collective of group key (gpus GPUs): its
 * lateness is the group's now. 0, or -1 out of memory. */
int exec_jit_realign(struct exec_jit *j, uint32_t rank, uint64_t key,
		     uint32_t gpus);
/* The group key of a set of GPU ids (order-independent). */
uint64_t exec_jit_group_key(const uint32_t *gpus, uint32_t n);
/* Standard deviation (s) of rank's lateness at the end of the run. */
double exec_jit_sd(struct exec_jit *j, uint32_t rank);

/* The simulated rank a task runs on. */
static inline uint32_t task_rank(const struct prog *p, task_id t)
{
	return p->task[t].lane / p->nstreams;
}

/* Collective index of a member task, or UINT32_MAX for a plain task. */
static inline uint32_t task_coll(const struct prog *p, task_id t)
{
	int64_t d = p->task[t].dur;

	return d < 0 ? (uint32_t)(-(d + 1)) : UINT32_MAX;
}

/* Times of an executed task (ns from the start of the run). */
static inline units_ns_t task_end_ns(const struct prog *p, task_id t)
{
	int64_t d = p->task[t].dur;

	return d >= 0 ? p->state[t].stamp
		      : p->coll_time[task_coll(p, t)].end_ns;
}

static inline units_ns_t task_start_ns(const struct prog *p, task_id t)
{
	int64_t d = p->task[t].dur;

	return d >= 0 ? p->state[t].start
		      : p->coll_time[task_coll(p, t)].start_ns;
}

/* prog_intern.c: free a table (not its entries). */
void prog_itab_release(struct itab *t);

/* prog_intern.c: index of *in in p->infos, added if new; UINT32_MAX when
 * out of memory. */
uint32_t prog_intern_info(struct prog *p, const struct task_info *in);

/* prog_intern.c: the program's copy of the n GPU ids, shared by every
 * collective over the same list; NULL when out of memory. */
const uint32_t *prog_intern_group(struct prog *p, const uint32_t *ids,
				  uint32_t n);

/* prog.c: forget the results of the last run (the program is being
 * changed or run again). */
void prog_drop_results(struct prog *p);

/* prog.c: turn the pending edges into CSR (merging with an existing
 * one). Returns 0 or -1 when out of memory. */
int prog_build_csr(struct prog *p);

/* exec_run.c: "compute", "comm", "optimizer", "other". */
const char *exec_cat_name(enum task_cat cat);

/*
 * exec_path.c: the critical path of a finished run, given each task's
 * cause in p->state (exec_path.c's header has the rule). Fills out->step_s,
 * out->part_s, out->final_rank and p->critical. Returns 0 or -1 when out
 * of memory.
 */
int exec_path(struct prog *p, struct exec_result *out);

#endif
