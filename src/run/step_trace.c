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
 * A pass (a run of compute tasks of one microbatch and direction on the
 * rank's stream) adds its stage's bytes when its forward ends and frees
 * them when its backward ends: the same walk footprint_rank_act_B makes
 * over the schedule, put on the simulated clock. Its peak is the
 * footprint's activations less the transient of one backward.
 * The virtual stage of a pass is that of its first layer.
 */
#include "step.h"

#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "models/layer.h"
#include "models/layout.h"
#include "models/split.h"

struct mem_walk {
	const struct job_spec *j;
	struct layer_dims d;
	int64_t *split;			/* layers per virtual stage */
	int64_t nvs;			/* virtual stages */
	double *live;			/* per simulated rank: B of activations */
	task_id *prev;			/* per rank: last compute task seen */
	task_id *first;			/* per rank: first task of its pass */
	struct exec_counter *v;
	size_t n, cap;
};

/* The virtual stage holding `layer` (-1: the embedding, stage 0). */
static int64_t vs_of(const struct mem_walk *w, int32_t layer, int64_t fallback)
{
	int64_t vs;

	if (layer < 0)
		return fallback;
	for (vs = 0; vs < w->nvs; vs++)
		if (layer < split_first_layer(w->split, vs) + w->split[vs])
			return vs;
	return fallback;
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

/* Static memory of the stage of simulated rank r. */
static double static_B(const struct step_result *r, int64_t stage)
{
	const struct footprint *f = stage < r->nstages ? &r->stage_mem[stage]
						       : &r->mem;

	return f->weights_B + f->grads_B + f->optimizer_B + f->workspace_B;
}

/* The pass that ends at task t (its first task: w->first) on rank. */
static int pass_end(struct mem_walk *w, const struct prog *p,
		    const struct step_result *r, uint32_t rank, task_id t)
{
	const struct task_info *in = exec_task_info(p, w->first[rank]);
	int64_t pp_i, dp_i, tp_i, vs;
	double b;

	layout_coords(&r->plan.lay, rank, &pp_i, &dp_i, &tp_i);
	vs = vs_of(w, in->layer, pp_i);
	b = footprint_stage_act_B(w->j, &w->d, w->split, vs);
	w->live[rank] += in->phase == TASK_PHASE_FWD ? b : -b;
	if (w->live[rank] < 0)
		w->live[rank] = 0;
	return push(w, rank, exec_task_end_s(p, t), w->live[rank],
		    static_B(r, pp_i));
}

static int same_pass(const struct task_info *a, const struct task_info *b)
{
	return a->phase == b->phase && a->microbatch == b->microbatch;
}

/* Walk every rank's compute tasks in stream order (task ids grow along a
 * stream) and close each pass when the next task starts another. */
static int walk(struct mem_walk *w, const struct prog *p,
		const struct step_result *r)
{
	uint32_t n = prog_tasks(p), nr = prog_ranks(p), rank;
	task_id t;
	int64_t pp_i, dp_i, tp_i;

	for (rank = 0; rank < nr; rank++) {
		w->prev[rank] = w->first[rank] = TASK_NONE;
		layout_coords(&r->plan.lay, rank, &pp_i, &dp_i, &tp_i);
		if (push(w, rank, 0, 0, static_B(r, pp_i)) != 0)
			return -1;
	}
	for (t = 0; t < n; t++) {
		const struct task_info *in = exec_task_info(p, t);

		if (in->cat != TASK_COMPUTE || in->phase == TASK_PHASE_NONE)
			continue;
		rank = exec_task_rank(p, t);
		if (w->prev[rank] != TASK_NONE &&
		    !same_pass(exec_task_info(p, w->prev[rank]), in)) {
			if (pass_end(w, p, r, rank, w->prev[rank]) != 0)
				return -1;
			w->first[rank] = TASK_NONE;
		}
		if (w->first[rank] == TASK_NONE)
			w->first[rank] = t;
		w->prev[rank] = t;
	}
	for (rank = 0; rank < nr; rank++)
		if (w->prev[rank] != TASK_NONE &&
		    pass_end(w, p, r, rank, w->prev[rank]) != 0)
			return -1;
	return 0;
}

int step_write_trace(const struct job_spec *j, const struct prog *p,
		     const struct step_result *r, FILE *out, struct diag *d)
{
	struct mem_walk w;
	uint32_t nr = prog_ranks(p);
	struct exec_counters cs = {
		"memory per GPU (GB)",
		{ "activations", "weights, gradients, optimizer, workspace" },
		NULL, 0
	};
	int rc = -1;

	memset(&w, 0, sizeof(w));
	w.j = j;
	w.nvs = j->parallelism.pp * j->parallelism.vpp;
	layer_dims_from_job(j, &w.d);
	w.split = mem_alloc((size_t)w.nvs * sizeof(*w.split));
	w.live = mem_calloc(nr, sizeof(*w.live));
	w.prev = mem_alloc(nr * sizeof(*w.prev));
	w.first = mem_alloc(nr * sizeof(*w.first));
	if (!w.split || !w.live || !w.prev || !w.first)
		goto oom;
	split_layers(j, w.split);
	if (walk(&w, p, r) != 0)
		goto oom;
	cs.v = w.v;
	cs.n = w.n;
	if (exec_write_trace(p, out, train_rank_label,
			     (void *)&r->plan.lay, &cs) != 0) {
		diag_error(d, NULL, 0, 0, "could not write the trace");
		goto out;
	}
	rc = 0;
	goto out;
oom:
	diag_oom(d);
out:
	mem_free(w.split);
	mem_free(w.live);
	mem_free(w.prev);
	mem_free(w.first);
	mem_free(w.v);
	return rc;
}
