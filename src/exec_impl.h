/*
 * exec_impl.h - private to the exec module (exec_*.c): how a program is
 * stored and what a run keeps. Nothing outside src/exec_*.c includes it.
 *
 * Storage is sized for programs of 10^5..10^6 tasks. A task is five
 * parallel array entries (structure of arrays, no padding):
 *
 *   lane   u32   rank * nstreams + stream
 *   info   u32   index into the deduplicated task_info table
 *   dur    i64   duration in ns (>= 0), or -(k + 1) for a member of
 *                collective k
 *   next   u32   next task on the same lane (the stream's FIFO order)
 *
 * i.e. 20 bytes a task, plus 8 bytes a dependency edge while building
 * (4 once the edges are turned into CSR at run time). Names are interned
 * once per distinct string; task_info records are shared by every task
 * with the same (name, category, layer, microbatch), which is most of them
 * when peer ranks run the same layers.
 *
 * A run adds stamp (i64) per task, and for the run itself a pending
 * counter, a cause and a work-queue entry per task, freed before
 * exec_run() returns.
 *
 * Depends on exec.h, mem.h.
 */
#ifndef LLMSIM_EXEC_IMPL_H
#define LLMSIM_EXEC_IMPL_H

#include "exec.h"
#include "mem.h"

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

struct prog {
	uint32_t nranks;		/* simulated ranks */
	uint32_t nstreams;		/* streams per rank */
	uint32_t ntasks, cap;		/* tasks, allocated task slots */
	uint32_t *lane;			/* per task: rank * nstreams + stream */
	uint32_t *info;			/* per task: index into infos */
	int64_t *dur;			/* per task: ns, or -(coll + 1) */
	uint32_t *next;			/* per task: next on lane or TASK_NONE */
	uint32_t *lane_head;		/* per lane: first task or TASK_NONE */
	uint32_t *lane_tail;		/* per lane: last task or TASK_NONE */
	const char **stream_name;	/* per stream: name or NULL */

	struct task_info *infos;	/* distinct task descriptions */
	uint32_t ninfos, capinfos;
	uint32_t *info_slot;		/* hash of infos: index + 1, 0 = free */
	uint32_t info_slots;		/* power of two */

	const char **str_slot;		/* hash of interned strings */
	uint32_t nstr, str_slots;	/* power of two */

	struct pcoll *colls;		/* collectives */
	uint32_t ncolls, capcolls;

	uint32_t *edge;			/* pending edges: before, after pairs */
	uint32_t nedges, capedges;	/* pairs */
	uint32_t *succ_off;		/* CSR: ncsr + 1 offsets into succ */
	uint32_t *succ;			/* CSR: successors of each task */
	uint32_t ncsr;			/* tasks the CSR covers */

	struct arena arena;		/* strings, collective arrays */

	/* results of the last successful exec_run() */
	int64_t *stamp;			/* per task: ns, plain task: end;
					 * collective member: arrival */
	struct pcoll_time *coll_time;	/* per collective */
	uint64_t *critical;		/* bitmap: task on the critical path */
	int ran;			/* results are valid */

	int failed;			/* an allocation failed while building */
	char why[320];			/* exec_run()'s message */
};

/* Lane of a task, its rank and stream. */
static inline uint32_t task_rank(const struct prog *p, task_id t)
{
	return p->lane[t] / p->nstreams;
}

/* Collective index of a member task, or UINT32_MAX for a plain task. */
static inline uint32_t task_coll(const struct prog *p, task_id t)
{
	return p->dur[t] < 0 ? (uint32_t)(-(p->dur[t] + 1)) : UINT32_MAX;
}

/* Times of an executed task (ns from the start of the run). */
static inline units_ns_t task_end_ns(const struct prog *p, task_id t)
{
	return p->dur[t] >= 0 ? p->stamp[t]
			      : p->coll_time[task_coll(p, t)].end_ns;
}

static inline units_ns_t task_start_ns(const struct prog *p, task_id t)
{
	return p->dur[t] >= 0 ? p->stamp[t] - p->dur[t]
			      : p->coll_time[task_coll(p, t)].start_ns;
}

/* When the task was free to start: its start for a plain task, its
 * arrival at the rendezvous for a collective member. */
static inline units_ns_t task_ready_ns(const struct prog *p, task_id t)
{
	return p->dur[t] >= 0 ? p->stamp[t] - p->dur[t] : p->stamp[t];
}

/* exec_build.c: forget the results of the last run (the program is being
 * changed or run again). */
void exec_drop_results(struct prog *p);

/* exec_build.c: turn the pending edges into CSR (merging with an existing
 * one). Returns 0 or -1 when out of memory. */
int exec_build_csr(struct prog *p);

/* exec_run.c: "compute", "comm", "optimizer", "other". */
const char *exec_cat_name(enum task_cat cat);

/*
 * exec_path.c: the critical path of a finished run, given each task's
 * cause (exec_path.c's header has the rule). Fills out->step_s,
 * out->part_s, out->final_rank and p->critical. Returns 0 or -1 when out
 * of memory.
 */
int exec_path(struct prog *p, const uint32_t *cause, struct exec_result *out);

#endif
