/*
 * exec_impl.h - private to the program (prog.c, prog_intern.c) and the
 * executor (exec_*.c): how a program is stored and what a run keeps.
 * Nothing outside src/engine/ includes it.
 *
 * Storage is sized for programs of 10^6..10^8 tasks (every GPU of a
 * 16k-GPU job), so a task costs as few bytes as the executor can use
 * without a second cache miss. What it touches for every task sits in
 * one 12-byte record:
 *
 *   kind   u32   index into the kinds table (duration, name, category,
 *                shared by every task alike: a GEMM of one shape is one
 *                kind however many microbatches, layers and ranks run it),
 *                or KIND_COLL | k for a member of collective k
 *   lane   u32   rank * nstreams + stream
 *   next   u32   next task on the same lane (the stream's FIFO order)
 *
 * A task's layer and microbatch are kept as runs (a run: consecutive
 * tasks with the same pair, as the builders add a layer's kernels one
 * after another), found by binary search when a report asks. Edges cost
 * 8 bytes each while building; for a run they become one successor per
 * task (4 bytes; most tasks have one besides their stream successor)
 * and a CSR for the few with more. A collective costs 16 bytes; its
 * descriptor is shared by every collective alike (same op, size, group,
 * overrides), and a GPU list by every descriptor over that group
 * (prog_intern.c). A run adds a 16-byte state per task (end or arrival,
 * then a pending count or the stretch that gives the start, and the
 * critical-path cause) and 32 bytes per collective (and 8 more once one
 * waits for a persistent GEMM: prog.sm_wait).
 *
 * Depends on exec.h, base/arena.h.
 */
#ifndef LLMSIM_ENGINE_EXEC_IMPL_H
#define LLMSIM_ENGINE_EXEC_IMPL_H

#include "exec.h"
#include "base/arena.h"

/* ptask.kind of a collective member: KIND_COLL | collective index. */
#define KIND_COLL 0x80000000u

/* Most tasks a program holds: ids stay below KIND_COLL (the successor
 * lists mark tasks with several by that bit). */

/* prog_intern_kind_s()'s memo: 2^KIND_MEMO_BITS entries, direct-mapped
 * (24 B each). A layer's builder cycles through a few hundred kinds (294
 * in the DeepSeek-V3 2,048-GPU step: each kernel of every layer type,
 * forward and backward): a memo of 64 missed 2.4 M of its 3.1 M
 * lookups, one of 1,024 misses 0.26 M. */
#define KIND_MEMO_BITS 10

/* What every task of one kind shares. */
struct pkind {
	int64_t dur;		/* ns >= 0 (0 for collective members) */
	const char *name;	/* interned, or a literal */
	uint32_t cat;		/* enum task_cat */
	float owned;		/* a persistent GEMM: the share of its work in
				 * the tiles each CTA owns (prog_task_owned);
				 * 0 = not one, or not modelled */
};

/* A run of consecutive tasks with the same layer and microbatch. */
struct ptag {
	task_id first;		/* first task of the run */
	int32_t layer;		/* -1 when not tied to a layer */
	int32_t microbatch;	/* -1 when not tied to a microbatch */
	int32_t phase;		/* enum task_phase */
};

/* A collective: its descriptor and its member tasks first .. first +
 * n - 1. */
struct pcoll {
	uint32_t desc;		/* index into descs */
	task_id first;		/* task id of the member on ranks[0] */
	uint32_t n;		/* simulated members */
	uint32_t kind;		/* the members' name and category */
};

/* When a collective ran, relative to the start of the run. */
struct pcoll_time {
	units_ns_t start_ns;	/* ns, rendezvous: last member arrived */
	units_ns_t end_ns;	/* ns, the backend called done (plus the work
				 * lost to compute, exec_crate.c) */
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
	uint32_t kind;		/* index into kinds, or KIND_COLL | k */
	uint32_t lane;		/* rank * nstreams + stream */
	uint32_t next;		/* next task on the lane, or TASK_NONE */
};

/* pstate.aux of a plain task whose stretch does not fit in 31 bits: its
 * start is in prog->far. */
#define STRETCH_FAR INT32_MAX

/* A task during and after a run. */
struct pstate {
	int64_t stamp;		/* ns; plain task: end; collective member:
				 * arrival; before either: when its critical-
				 * path cause ended */
	uint32_t aux;		/* until ready: unfinished predecessors;
				 * a plain task once ended: its stretch
				 * (int32), end - start - dur in ns (compute
				 * slowed by collectives, see exec.h), or
				 * STRETCH_FAR */
	uint32_t cause;		/* critical-path cause, or TASK_NONE */
};

/* The start of a task whose stretch is STRETCH_FAR. */
struct pfar {
	task_id t;
	int64_t start;		/* ns */
};

struct prog {
	uint32_t nranks;		/* simulated ranks */
	uint32_t nstreams;		/* streams per rank */
	uint32_t stream_shift;		/* log2 nstreams when a power of two,
					 * else NO_SHIFT */
	uint32_t ntasks, cap;		/* tasks, allocated task slots */
	struct ptask *task;		/* per task */
	uint32_t *lane_head;		/* per lane: first task or none */
	uint32_t *lane_tail;		/* per lane: last task or none */
	const char **stream_name;	/* per stream: name or NULL */

	struct pkind *kinds;		/* distinct task kinds */
	struct itab kind_tab;		/* ... and their table */
	struct kind_memo {		/* recent lookups, by name address */
		const char *name;
		uint64_t dur_bits;	/* the duration in s, as bits */
		uint32_t cat, index;
		float owned;		/* pkind.owned */
	} kind_memo[1u << KIND_MEMO_BITS];
	struct ptag *tags;		/* layer and microbatch runs */
	uint32_t ntags, captags;
	const char **strs;		/* interned strings (in arena) */
	struct itab str_tab;
	const uint32_t **groups;	/* member lists: n, then n GPU ids */
	struct itab group_tab;
	struct pmat {			/* all-to-all matrices (in arena) */
		const double *v;	/* n x n B */
		uint32_t n;
	} *mats;
	struct itab mat_tab;

	struct pcoll *colls;		/* collectives */
	uint32_t ncolls, capcolls;
	struct coll_desc *descs;	/* distinct descriptors (gpus, a2a_B
					 * in the arena, interned) */
	struct itab desc_tab;
	struct coll_path *path;		/* the last non-library path copied (in
					 * arena); collectives with an equal one
					 * share it */

	uint32_t *edge;			/* edges to add: before, after */
	uint32_t nedges, capedges;	/* pairs */
	uint32_t *succ1;		/* per task (ncsr of them): its one
					 * successor, TASK_NONE, or KIND_COLL |
					 * j for several: more[more_off[j] ..
					 * more_off[j + 1]) */
	uint32_t *more_off;		/* nmore + 1 */
	uint32_t *more;			/* successors of tasks with several */
	uint32_t nmore;			/* tasks with several successors */
	uint32_t ncsr;			/* tasks succ1 covers */
	void *spare;			/* the edge array of the last CSR build,
					 * kept for the run's task states (its
					 * touched pages are reused, not faulted
					 * in afresh), or NULL */
	size_t spare_cap, spare_used;	/* its bytes, and those edges filled */

	struct arena arena;		/* strings, collective arrays */

	/* results of the last successful exec_run() */
	struct pstate *state;		/* per task */
	struct pfar *far;		/* starts of far-stretched tasks, by id */
	uint32_t nfar, capfar;
	struct pcoll_time *coll_time;	/* per collective */
	units_ns_t *sm_wait;		/* per collective: ns it waited, ready,
					 * for persistent GEMMs on its members
					 * to free the SMs (launch order,
					 * exec.h; while it waits: when it
					 * became ready); NULL until one
					 * waits */
	uint64_t *critical;		/* bitmap: on the critical path */
	int ran;			/* results are valid */

	void (*progress)(void *arg, uint32_t done, uint32_t total,
			 double now_s);	/* or NULL */
	void *progress_arg;

	int failed;			/* an allocation failed (build) */
	char why[320];			/* exec_run()'s message */
	struct exec_jitter jitter;	/* per-rank variability; 0 = none */
};

#define NO_SHIFT 32u

/* The rank and stream of a lane (a shift and a mask when nstreams is a
 * power of two, as the step builder's 8 streams are: these run for every
 * task, and a division costs tens of cycles). */
static inline uint32_t lane_rank(const struct prog *p, uint32_t lane)
{
	return p->stream_shift != NO_SHIFT ? lane >> p->stream_shift
					   : lane / p->nstreams;
}

static inline uint32_t lane_stream(const struct prog *p, uint32_t lane)
{
	return p->stream_shift != NO_SHIFT ? lane & (p->nstreams - 1)
					   : lane % p->nstreams;
}
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

/* e(N), v(N) of the group sizes met so far. */
struct jit_memo {
	double e[JIT_MEMO], v[JIT_MEMO];
	unsigned char ok[JIT_MEMO];
};

struct exec_jit {
	struct exec_jitter spec;
	int on;
	uint32_t nranks;
	struct jit_rank *rank;	/* per simulated rank */
	struct jit_memo *memo;	/* heap, only when on: every exec_run
				 * zeroes its struct run, and 69 KB of
				 * memo inside it was most of a serving
				 * unit program's run */
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

/* Group keys of recent member lists, by the list's address (the program
 * interns them: one address, one list). */
#define JIT_KEY_MEMO 64

struct jit_key_memo {
	const uint32_t *gpus;
	uint64_t key;
};

/* exec_jit_group_key of c's GPUs through memo (JIT_KEY_MEMO entries,
 * zeroed by the caller): a step's 10^5 collectives are over a few
 * hundred groups, of up to 128 GPUs each. */
uint64_t exec_jit_key_of(const struct coll_desc *c,
			 struct jit_key_memo *memo);
/* Standard deviation (s) of rank's lateness at the end of the run. */
double exec_jit_sd(struct exec_jit *j, uint32_t rank);

/* The simulated rank a task runs on. */
static inline uint32_t task_rank(const struct prog *p, task_id t)
{
	return lane_rank(p, p->task[t].lane);
}

/* Collective index of a member task, or UINT32_MAX for a plain task. */
static inline uint32_t task_coll(const struct prog *p, task_id t)
{
	uint32_t k = p->task[t].kind;

	return k & KIND_COLL ? k & ~KIND_COLL : UINT32_MAX;
}

/* The kind of a task (a member's: its collective's). */
static inline const struct pkind *task_kind(const struct prog *p, task_id t)
{
	uint32_t k = p->task[t].kind;

	return &p->kinds[k & KIND_COLL ? p->colls[k & ~KIND_COLL].kind : k];
}

static inline enum task_cat task_cat(const struct prog *p, task_id t)
{
	return (enum task_cat)task_kind(p, t)->cat;
}

/* Times of an executed task (ns from the start of the run). */
static inline units_ns_t task_end_ns(const struct prog *p, task_id t)
{
	uint32_t k = p->task[t].kind;

	return k & KIND_COLL ? p->coll_time[k & ~KIND_COLL].end_ns
			     : p->state[t].stamp;
}

/* exec_run.c: the start of a plain task whose stretch is STRETCH_FAR. */
units_ns_t exec_far_start(const struct prog *p, task_id t);

static inline units_ns_t task_start_ns(const struct prog *p, task_id t)
{
	uint32_t k = p->task[t].kind;
	int32_t stretch;

	if (k & KIND_COLL)
		return p->coll_time[k & ~KIND_COLL].start_ns;
	stretch = (int32_t)p->state[t].aux;
	if (stretch == STRETCH_FAR)
		return exec_far_start(p, t);
	return p->state[t].stamp - p->kinds[k].dur - stretch;
}

/* prog_intern.c: free a table (not its entries). */
void prog_itab_release(struct itab *t);

/* prog_intern.c: index of the kind (dur ns, name, cat, owned) in
 * p->kinds, added if new; UINT32_MAX when out of memory. */
uint32_t prog_intern_kind(struct prog *p, int64_t dur, const char *name,
			  enum task_cat cat, float owned);

/* The same for a duration in seconds (dur_s >= 0, converted to ns once
 * per distinct value), through a memo of recent lookups. */
uint32_t prog_intern_kind_s(struct prog *p, double dur_s, const char *name,
			    enum task_cat cat, float owned);

/* prog_intern.c: the index of a descriptor equal to *c (whose gpus and
 * a2a_B are already the program's copies) in p->descs, added if new;
 * UINT32_MAX when out of memory. */
uint32_t prog_intern_desc(struct prog *p, const struct coll_desc *c);

/* The descriptor of collective k. */
static inline const struct coll_desc *coll_desc_of(const struct prog *p,
						   uint32_t k)
{
	return &p->descs[p->colls[k].desc];
}

/* prog_intern.c: the program's copy of the n GPU ids, shared by every
 * collective over the same list; NULL when out of memory. */
const uint32_t *prog_intern_group(struct prog *p, const uint32_t *ids,
				  uint32_t n);

/* prog_intern.c: the program's copy of the n x n matrix m, shared by
 * every collective with an equal one; NULL when out of memory. */
const double *prog_intern_matrix(struct prog *p, const double *m,
				 uint32_t n);

/* prog.c: forget the results of the last run (the program is being
 * changed or run again). */
void prog_drop_results(struct prog *p);

/* prog.c: the spare block (zeroed) for `bytes` bytes of task states, or
 * NULL (then freed) when there is none, it is too small, or more of it
 * was filled than the states would use twice over (its pages would stay
 * resident for nothing). The caller owns what it returns. */
void *prog_take_spare(struct prog *p, size_t bytes);

/* prog.c: turn the pending edges into successor lists (merging with
 * existing ones). Returns 0 or -1 when out of memory. */
int prog_build_csr(struct prog *p);

/* The layer and microbatch run task t belongs to. */
const struct ptag *prog_task_tag(const struct prog *p, task_id t);

/* The same, searching on from run *hint (updated) when t is at or after
 * it: O(1) for a caller walking one lane's tasks in order. */
const struct ptag *prog_task_tag_near(const struct prog *p, task_id t,
				      uint32_t *hint);

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
