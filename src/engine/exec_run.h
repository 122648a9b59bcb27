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

#include <stddef.h>

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
	int pers;		/* ... a persistent GEMM (counted in its
				 * rank's rank_load.npers) */
};

/* A collective waiting on one rank for the persistent GEMMs that started
 * there before its member arrived (launch order, exec.h). */
struct pers_wait {
	uint32_t k;		/* collective index */
	uint32_t left;		/* those GEMMs still running */
	units_ns_t at;		/* ns, when its member arrived */
};

/* Compute share running collectives take on one rank. */
struct rank_load {
	double share;		/* sum of their sm_share */
	double held;		/* of that, the collectives' without
				 * sm_margin (the units a persistent GEMM's
				 * CTAs may wait for) */
	uint32_t n;		/* how many with a share run */
	uint32_t npers;		/* persistent GEMMs running (pkind.owned
				 * > 0): a collective that holds units
				 * waits for them (launch order, exec.h) */
	units_ns_t pers_t;	/* ns, the latest start of one */
	uint32_t nwait, capwait;	/* collectives in wait[] */
	struct pers_wait *wait;	/* collectives waiting for this rank's
				 * persistent GEMMs, in the order they
				 * became ready */
	uint64_t slow;		/* bit s: stream s runs a compute or optimizer
				 * task (streams past 63: always looked at) */
};

/* Comm-side interference (exec_crate.c): a collective whose descriptor
 * has busy_rate in (0, 1), while it runs. */
struct crate_coll {
	double lost_ns;		/* work lost to compute so far (ns at
				 * full speed), as of since; once the
				 * backend is done, the work still to do */
	units_ns_t since;	/* ns, run time lost_ns was last brought up */
	sim_id ev;		/* end event once the backend is done */
	uint32_t nbusy;		/* members whose rank runs compute now */
	uint8_t on;		/* running under the model */
	uint8_t ext;		/* the backend is done: running out
				 * lost_ns */
};

/* Per rank, for the comm-side interference: its running compute tasks
 * and the collectives under the model running on it. */
struct crate_rank {
	uint32_t nslow;		/* compute and optimizer tasks running */
	uint32_t n, cap;	/* collectives in k[] */
	uint32_t *k;
};

/* A collective during a run: 12 bytes; its run is found from its index
 * (the array sits in a struct coll_runs after the run's address). */
struct coll_run {
	uint32_t k;		/* collective index */
	uint32_t arrived;	/* members that reached it; once all have,
				 * while it waits for persistent GEMMs
				 * (launch order), the member ranks it
				 * still waits for */
	uint8_t state;		/* 0 waiting, 1 started, 2 done */
};

struct coll_runs {
	struct run *run;
	struct coll_run c[];	/* per collective */
};

/* The run collective cr belongs to (a backend's token is cr). */
static inline struct run *exec_run_of(const struct coll_run *cr)
{
	const struct coll_run *first = cr - cr->k;

	return ((const struct coll_runs *)(const void *)((const char *)first -
		offsetof(struct coll_runs, c)))->run;
}

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
	struct crate_coll *crate;	/* per collective, when some descriptor
					 * has a busy_rate (else NULL) */
	struct crate_rank *crank;	/* per rank, likewise */
	void (*coll_end)(struct run *r, uint32_t k);	/* collective k ends
					 * now on all its members (exec_run.c;
					 * a pointer, so exec_crate.c calls it
					 * without a file cycle) */
};

/* exec_setup.c: allocate the run's state and the program's result arrays
 * (0 or -1; exec_run_free releases what was allocated either way), free
 * them, and set counters and records at the start of a run. */
int exec_run_alloc(struct run *r, struct prog *p);
void exec_run_free(struct run *r);
void exec_run_init(struct run *r);

/* exec_crate.c: the comm-side interference. exec_crate_alloc sets up
 * r->crate and r->crank when a descriptor of the program has a busy_rate
 * in (0, 1) (0 or -1); exec_crate_free releases them. exec_crate_slow:
 * a compute or optimizer task starts (on = 1) or ends on rank.
 * exec_crate_start: collective k starts. exec_crate_done: the backend is
 * done with collective k: 1 if it still has lost work to run out (then
 * an event calls r->coll_end(r, k) when that is done), 0 if it ends
 * now. */
int exec_crate_alloc(struct run *r);
void exec_crate_free(struct run *r);
void exec_crate_slow(struct run *r, uint32_t rank, int on);
void exec_crate_start(struct run *r, uint32_t k);
int exec_crate_done(struct run *r, uint32_t k);


/* exec_stall.c: the name of task t for messages ("'name' (category,
 * layer L, microbatch M) on rank R, stream S") into buf, and why tasks are
 * left over after the engine ran dry (into p->why). */
void exec_describe_task(const struct prog *p, task_id t, char *buf,
			size_t len);
void exec_run_diagnose(struct run *r);

#endif
