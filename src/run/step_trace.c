/*
 * step_trace.c - the trace of a simulated step (step.h): the engine's
 * events plus a memory counter per simulated rank.
 *
 * Memory over time, per GPU of pipeline stage s (footprint.h):
 *   static(s)  = weights + gradients + optimizer states + workspace,
 *                constant over the step;
 *   act(s, t)  = the sum over microbatches whose forward on a virtual
 *                stage vs of s has ended by t and whose backward there
 *                has not, of footprint_stage_act_B(vs).
 * A pass (the compute tasks of one microbatch, direction and virtual
 * stage on a rank) adds its stage's bytes when its forward ends and frees
 * them when its backward ends: the same walk footprint_rank_act_B makes
 * over the schedule, put on the simulated clock. Its peak is the
 * footprint's activations less the transient of one backward.
 */
#include "step.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "models/layer.h"
#include "models/layout.h"
#include "models/split.h"

/* A run of compute tasks of one microbatch and direction on a rank. */
struct pass_run {
	uint32_t rank;
	int32_t mb;
	int bwd;
	int64_t vs;			/* its virtual stage */
	double end_s;			/* s, its last task's end */
	uint32_t seq;			/* order found */
};

struct mem_walk {
	const struct job_spec *j;
	struct layer_dims d;
	int64_t *split;			/* layers per virtual stage */
	int64_t nvs;			/* virtual stages */
	struct pass_run *runs;
	size_t nruns, caprun;
	struct exec_counter *v;
	size_t n, cap;
};

static int64_t stage_of(const struct step_result *r, uint32_t rank)
{
	int64_t pp_i, i;

	layout_where(&r->plan.lay, rank, &pp_i, &i);
	return pp_i;
}

/* The virtual stage holding `layer`; -1 when the layer says none. */
static int64_t vs_of(const struct mem_walk *w, int32_t layer)
{
	int64_t vs;

	if (layer < 0)
		return -1;
	for (vs = 0; vs < w->nvs; vs++)
		if (layer < split_first_layer(w->split, vs) + w->split[vs])
			return vs;
	return -1;
}

static int push(struct mem_walk *w, uint32_t rank, double t_s, double act,
		double stat)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 1024;
		struct exec_counter *v = mem_realloc(w->v, cap * sizeof(*v));

		if (!v)
			return -1;
		w->v = v;
		w->cap = cap;
	}
	w->v[w->n++] = (struct exec_counter){ rank, t_s, { act / 1e9,
							   stat / 1e9 } };
	return 0;
}

/* Static memory of pipeline stage `stage`. */
static double static_B(const struct step_result *r, int64_t stage)
{
	const struct footprint *f = stage < r->nstages ? &r->stage_mem[stage]
						       : &r->mem;

	return f->weights_B + f->grads_B + f->optimizer_B + f->workspace_B;
}

static int add_run(struct mem_walk *w, const struct pass_run *run)
{
	if (w->nruns == w->caprun) {
		size_t cap = w->caprun ? 2 * w->caprun : 256;
		struct pass_run *v = mem_realloc(w->runs, cap * sizeof(*v));

		if (!v)
			return -1;
		w->runs = v;
		w->caprun = cap;
	}
	w->runs[w->nruns] = *run;
	w->runs[w->nruns].seq = (uint32_t)w->nruns;
	w->nruns++;
	return 0;
}

/* Walk each rank's compute tasks in stream order (task ids grow along a
 * stream) into runs of one microbatch and direction; a run's virtual
 * stage is that of its first task with a layer (the embedding's and
 * head's tasks take their neighbours'). Paired actions (MoE all-to-all
 * overlap) interleave two passes: each becomes several runs. */
static int find_runs(struct mem_walk *w, const struct prog *p)
{
	uint32_t n = prog_tasks(p), t;
	struct pass_run cur = { 0, 0, 0, -1, 0, 0 };
	uint32_t cur_rank = UINT32_MAX;

	for (t = 0; t < n; t++) {
		struct task_info in;
		enum task_cat cat;
		uint32_t rank;

		exec_task_name(p, t, &cat);
		if (cat != TASK_COMPUTE)
			continue;
		exec_task_info(p, t, &in);
		if (in.phase == TASK_PHASE_NONE)
			continue;
		rank = exec_task_rank(p, t);
		if (cur_rank != UINT32_MAX && (rank != cur_rank ||
		    in.microbatch != cur.mb ||
		    (in.phase == TASK_PHASE_BWD) != cur.bwd)) {
			if (add_run(w, &cur) != 0)
				return -1;
			cur_rank = UINT32_MAX;
		}
		if (cur_rank == UINT32_MAX) {
			cur = (struct pass_run){ rank, in.microbatch,
				in.phase == TASK_PHASE_BWD, -1, 0, 0 };
			cur_rank = rank;
		}
		if (cur.vs < 0)
			cur.vs = vs_of(w, in.layer);
		cur.end_s = exec_task_end_s(p, t);
	}
	return cur_rank != UINT32_MAX ? add_run(w, &cur) : 0;
}

static int by_pass(const void *a, const void *b)
{
	const struct pass_run *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->mb != y->mb)
		return x->mb < y->mb ? -1 : 1;
	if (x->bwd != y->bwd)
		return x->bwd - y->bwd;
	if (x->vs != y->vs)
		return x->vs < y->vs ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int by_time(const void *a, const void *b)
{
	const struct pass_run *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->end_s != y->end_s)
		return x->end_s < y->end_s ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Keep the last run of each pass (rank, microbatch, direction, virtual
 * stage): its end is when the pass ends. */
static void last_of_each(struct mem_walk *w)
{
	size_t i, k = 0;

	qsort(w->runs, w->nruns, sizeof(*w->runs), by_pass);
	for (i = 0; i < w->nruns; i++) {
		const struct pass_run *a = &w->runs[i], *b = &w->runs[i + 1];

		if (i + 1 < w->nruns && a->rank == b->rank && a->mb == b->mb &&
		    a->bwd == b->bwd && a->vs == b->vs)
			continue;
		w->runs[k++] = *a;
	}
	w->nruns = k;
	qsort(w->runs, w->nruns, sizeof(*w->runs), by_time);
}

/* The counter points: static memory from 0, activations up at each
 * forward's end and down at each backward's end. */
static int points(struct mem_walk *w, const struct prog *p,
		  const struct step_result *r)
{
	uint32_t nr = prog_ranks(p), rank;
	double live = 0;
	size_t i;

	for (rank = 0; rank < nr; rank++)
		if (push(w, rank, 0, 0, static_B(r, stage_of(r, rank))) != 0)
			return -1;
	for (i = 0; i < w->nruns; i++) {
		const struct pass_run *u = &w->runs[i];
		int64_t stage = stage_of(r, u->rank);
		int64_t vs = u->vs >= 0 ? u->vs : stage;
		double b = footprint_stage_act_B(w->j, &w->d, w->split, vs);

		if (i == 0 || w->runs[i - 1].rank != u->rank)
			live = 0;
		live += u->bwd ? -b : b;
		if (live < 0)
			live = 0;
		if (push(w, u->rank, u->end_s, live, static_B(r, stage)) != 0)
			return -1;
	}
	return 0;
}

int step_write_trace(const struct job_spec *j, const struct prog *p,
		     const struct step_result *r, FILE *out, struct diag *d)
{
	struct mem_walk w;
	struct exec_counters cs = {
		"memory per GPU (GB)",
		{ "activations", "weights, gradients, optimizer, workspace" },
		NULL, 0
	};
	int rc = -1, werr = 0;

	memset(&w, 0, sizeof(w));
	w.j = j;
	w.nvs = j->parallelism.pp * j->parallelism.vpp;
	layer_dims_from_job(j, &w.d);
	w.split = mem_alloc((size_t)w.nvs * sizeof(*w.split));
	if (!w.split)
		goto oom;
	split_layers(j, w.split);
	if (find_runs(&w, p) != 0)
		goto oom;
	last_of_each(&w);
	if (points(&w, p, r) != 0)
		goto oom;
	cs.v = w.v;
	cs.n = w.n;
	if (exec_write_trace(p, out, train_rank_label,
			     (void *)&r->plan.lay, &cs) != 0) {
		/* A write error: out's error flag and errno say so to the
		 * caller, who names the file (cli_trace_close). */
		werr = errno;
		goto out;
	}
	rc = 0;
	goto out;
oom:
	diag_oom(d);
out:
	mem_free(w.split);
	mem_free(w.runs);
	mem_free(w.v);
	if (werr)
		errno = werr;
	return rc;
}
