/*
 * exec_run.h - private to the executor's run (exec_run.c, exec_setup.c,
 * exec_stall.c): the state one exec_run keeps while the engine runs a
 * step program (lanes, collectives, per-rank compute load, the work
 * queue, the variability scratch), and the functions that set that state
 * up and explain a run that did not finish. Nothing outside src/engine/
 * includes it.
 *
 * Depends on exec_impl.h.
 */
#ifndef LLMSIM_ENGINE_EXEC_RUN_H
#define LLMSIM_ENGINE_EXEC_RUN_H

#include "exec_impl.h"

struct run;

struct lane_run {
	struct run *run;
	task_id cur;		/* task running on the lane, or TASK_NONE */
	sim_id ev;		/* its end event */
	units_ns_t start;	/* ns, when it started */
	int64_t dur;		/* ns, its duration at full speed */
	uint32_t tag_hint;	/* run of its last task (variability) */
	double left_ns;		/* ns of work left at full speed, as of since */
	units_ns_t since;	/* ns, run time left_ns was last brought up */
	double rate;		/* speed now (1 = full) */
	int slowable;		/* a compute or optimizer task */
};

/* Compute share running collectives take on one rank. */
struct rank_load {
	double share;		/* sum of their sm_share */
	uint32_t n;		/* how many with a share run */
	uint64_t slow;		/* bit s: stream s runs a compute or optimizer
				 * task (streams past 63: always looked at) */
};

/* A collective during a run: 12 bytes; its run is found from its index
 * (the array sits in a struct coll_runs after the run's address). */
struct coll_run {
	uint32_t k;		/* collective index */
	uint32_t arrived;	/* members that reached it */
	uint8_t state;		/* 0 waiting, 1 started, 2 done */
};

struct coll_runs {
	struct run *run;
	struct coll_run c[];	/* per collective */
};

/* A candidate cause of a collective's members. */
struct cand {
	uint32_t rank;
	task_id id;
};

struct run {
	struct prog *p;
	struct sim *sim;
	const struct comm_ops *ops;
	void *ctx;
	units_ns_t t0;			/* ns, engine time at the start */
	units_ns_t now;			/* ns since t0, current event */
	struct cand *cand;		/* scratch, one per member of the
					 * largest collective */
	uint32_t *queue;		/* ring: finished, not yet released */
	uint32_t qhead, qlen, qcap;	/* qcap a power of two */
	uint32_t nfinished;		/* tasks finished */
	struct lane_run *lanes;
	struct coll_runs *colls_mem;	/* the run's address, then colls */
	struct coll_run *colls;
	struct rank_load *load;		/* per rank */
	int draining;			/* release() is on the stack */
	int too_long;			/* a task would end past the horizon */
	int failed;			/* out of memory while running */
	struct exec_jit jit;		/* variability, when the program has it */
	uint32_t *jit_ranks;		/* scratch: a collective's member ranks */
	units_ns_t *compute_end;	/* per rank: ns, end of its last compute
					 * task so far (variability only) */
	units_ns_t *coll_late;		/* per collective: ns, its slowest member
					 * out of its feeding compute, or -1 */
	uint64_t *group_key;		/* per collective: its GPUs' group key */
	struct comm_memo *desc_memo;	/* per distinct descriptor, when the
					 * backend takes one (comm.h) */
	int jit_failed;			/* out of memory in the variability model */
};

/* exec_setup.c: allocate the run's state and the program's result arrays
 * (0 or -1; exec_run_free releases what was allocated either way), free
 * them, and set counters and records at the start of a run. */
int exec_run_alloc(struct run *r, struct prog *p);
void exec_run_free(struct run *r);
void exec_run_init(struct run *r);

/* exec_stall.c: the name of task t for messages ("'name' (category,
 * layer L, microbatch M) on rank R, stream S") into buf, and why tasks are
 * left over after the engine ran dry (into p->why). */
void exec_describe_task(const struct prog *p, task_id t, char *buf,
			size_t len);
void exec_run_diagnose(struct run *r);

#endif
