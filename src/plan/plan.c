/*
 * plan.c - the planner's two tiers, the ranking and the reason.
 *
 * For each node count (the job's, or 1 .. max_gpus / gpus_per_node)
 * plan_space.c walks the layouts and the analytical tier costs every one
 * that is valid and fits. The layouts to simulate in full are then:
 *
 *   - one node count: the best top_k by the objective's estimate;
 *   - max_gpus: the analytical Pareto front of step time against GPUs
 *     (the node counts whose best estimate beats every smaller count's),
 *     each front point's best ceil(top_k / points) layouts.
 *
 * Each is simulated with step_run (the event engine on the fabric); the
 * final ranking, the front and the reason are the full runs'. A layout's
 * bound is the largest of its compute at the math rate, its compute in
 * bandwidth-bound kernels (the estimate's share of them), its exposed
 * communication and its bubble.
 */
#include "base/clock.h"
#include "plan.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/diag.h"
#include "base/mem.h"
#include "base/units.h"
#include "gpu/gpu.h"
#include "models/train.h"
#include "run/step.h"
#include "plan_impl.h"

/* ---- the analytical tier over every node count ---- */

/* What the searches of every node count found, merged. */
struct found {
	struct scored *v;		/* the kept layouts, by node count then score */
	size_t n, cap;
	struct search agg;		/* counts and misses over every node count */
};

static int merge(struct found *f, struct search *s, size_t keep)
{
	size_t i;
	int r;

	f->agg.searched += s->searched;
	for (r = 0; r < PR_COUNT; r++) {
		f->agg.pruned[r] += s->pruned[r];
		f->agg.rule_miss[r].count += s->rule_miss[r].count;
		if (!f->agg.rule_miss[r].have)
			f->agg.rule_miss[r] = s->rule_miss[r];
	}
	if (s->have_min_mem && (!f->agg.have_min_mem ||
				s->min_mem.peak_B < f->agg.min_mem.peak_B)) {
		f->agg.min_mem = s->min_mem;
		f->agg.min_mem_lay = s->min_mem_lay;
		f->agg.have_min_mem = 1;
	}
	f->agg.n += s->n;		/* ranked */
	f->agg.nest += s->nest;		/* of them estimated in full */
	if (keep > s->nest)
		keep = s->nest;
	if (f->n + keep > f->cap) {
		size_t cap = f->cap * 2 > f->n + keep ? f->cap * 2 : f->n + keep;
		struct scored *v = mem_realloc(f->v, cap * sizeof(*v));

		if (!v)
			return -1;
		f->v = v;
		f->cap = cap;
	}
	for (i = 0; i < keep; i++)
		f->v[f->n++] = s->v[i];
	return 0;
}

int64_t plan_max_gpus_searched(const struct job_spec *j,
			       const struct plan_opts *o)
{
	int64_t gpn = j->system->gpus_per_node;

	if (o->max_gpus <= 0)
		return system_gpus(j->system);
	return gpn > 0 ? o->max_gpus / gpn * gpn : o->max_gpus;
}

static int search_all(const struct job_spec *j, const struct plan_opts *o,
		      struct found *f, struct est_stats *stats, struct diag *d)
{
	int64_t gpn = j->system->gpus_per_node, lo = j->system->nodes;
	int64_t hi = lo, nodes;
	size_t keep = (size_t)o->top_k;

	if (o->max_gpus > 0) {
		lo = 1;
		hi = o->max_gpus / gpn;
	}
	for (nodes = lo; nodes <= hi; nodes++) {
		struct search s;
		struct est_stats st;
		int rc = space_init(&s, j, o, nodes, d);

		if (rc == 0)
			rc = space_search(&s);
		if (rc == 0)
			rc = space_estimate(&s, (size_t)o->top_k);
		if (rc == 0)
			rc = merge(f, &s, keep);
		if (rc == 0) {
			est_get_stats(s.est, &st);
			stats->steps += st.steps;
			stats->block_sets += st.block_sets;
			stats->colls += st.colls;
			stats->coll_lookups += st.coll_lookups;
		}
		space_release(&s);
		if (rc != 0) {
			if (!d->errors)
				diag_oom(d);
			return -1;
		}
	}
	return 0;
}

/* ---- nothing feasible ---- */

#define job_for plan_job_for

static void pinned_note(const struct plan_opts *o, struct diag *d)
{
	char buf[256] = "";
	size_t n = 0;
	int i;

	for (i = 0; i < PD_COUNT; i++)
		if ((o->pinned >> i) & 1u)
			n += (size_t)snprintf(buf + n, sizeof(buf) > n ? sizeof(buf) - n : 0,
					      "%s%s", n ? ", " : "", plan_dim_keys[i]);
	if (n)
		diag_note(d, NULL, 0, 0, "pinned with --set: %s", buf);
}

static void no_fit(const struct job_spec *j, const struct plan_opts *o,
		   const struct search *a, struct diag *d)
{
	const struct footprint *m = &a->min_mem;
	char lay[160], pk[32], us[32], over[32], w[32], g[32], op[32], ac[32],
	     ws[32];

	plan_layout_str(&a->min_mem_lay, lay, sizeof(lay));
	step_human(pk, sizeof(pk), m->peak_B, UNIT_BYTES);
	step_human(us, sizeof(us), m->usable_B, UNIT_BYTES);
	step_human(over, sizeof(over), m->peak_B - m->usable_B, UNIT_BYTES);
	diag_error(d, NULL, 0, 0, "no layout fits in memory: the smallest peak "
		   "is %s per GPU (%s on %lld GPUs), %s more than the %s usable%s",
		   pk, lay, (long long)(a->min_mem_lay.nodes *
					j->system->gpus_per_node),
		   over, us, o->headroom > 0 ? " after the headroom" : "");
	step_human(w, sizeof(w), m->weights_B, UNIT_BYTES);
	step_human(g, sizeof(g), m->grads_B, UNIT_BYTES);
	step_human(op, sizeof(op), m->optimizer_B, UNIT_BYTES);
	step_human(ac, sizeof(ac), m->activations_B, UNIT_BYTES);
	step_human(ws, sizeof(ws), m->workspace_B, UNIT_BYTES);
	diag_note(d, NULL, 0, 0, "that peak: weights %s, gradients %s, optimizer "
		  "%s, activations %s, workspace %s (pipeline rank %lld)", w, g,
		  op, ac, ws, (long long)m->rank);
	diag_note(d, NULL, 0, 0, "%llu layouts were valid but too big; more GPUs "
		  "(--max-gpus, system.nodes), a smaller global batch or "
		  "sequence, or a larger GPU would help",
		  (unsigned long long)a->pruned[PR_MEMORY]);
	pinned_note(o, d);
}

/* No valid layout at all: report the rule that pruned the most. */
static void no_valid(const struct job_spec *j, const struct plan_opts *o,
		     const struct search *a, struct diag *d)
{
	int r, worst = -1;
	struct system_spec sys;
	struct job_spec jj;

	for (r = 0; r < PR_COUNT; r++)
		if (r != PR_REDUNDANT && r != PR_MEMORY && a->pruned[r] > 0 &&
		    (worst < 0 || a->pruned[r] > a->pruned[worst]))
			worst = r;
	/* rules that only a pin can break (sequence parallelism off on an
	 * MoE model, ZeRO 3 there) bind whatever else was pruned */
	if (a->pruned[JR_MOE_SP] > 0 && ((o->pinned >> PD_SP) & 1u))
		worst = JR_MOE_SP;
	if (a->pruned[PR_UNSUPPORTED] > 0 && ((o->pinned >> PD_ZERO) & 1u))
		worst = PR_UNSUPPORTED;
	/* full recompute and ep pinned with a2a_overlap: every layout */
	if (a->pruned[JR_A2A_RECOMPUTE] > 0 &&
	    ((o->pinned >> PD_RECOMPUTE) & 1u) && ((o->pinned >> PD_EP) & 1u))
		worst = JR_A2A_RECOMPUTE;
	if (worst < 0) {
		diag_error(d, NULL, 0, 0, "no layout to search (%llu searched)",
			   (unsigned long long)a->searched);
		pinned_note(o, d);
		return;
	}
	job_for(j, &a->rule_miss[worst].lay, &sys, &jj);
	if (worst < JR_COUNT)
		(void)job_layout_check(&jj, JR_BIT(worst), d, NULL);
	else if (worst == PR_UNSUPPORTED)
		diag_error(d, NULL, 0, 0, "ZeRO 3 on an MoE model is not "
			   "estimated by the planner's analytical tier; it "
			   "searches ZeRO 0-2 there");
	else
		diag_error(d, NULL, 0, 0, "layout: pp*vpp = %lld*%lld divides "
			   "neither the %lld layers nor %lld (layers with the "
			   "embedding and the head): no even split",
			   (long long)a->rule_miss[worst].lay.pp,
			   (long long)a->rule_miss[worst].lay.vpp,
			   (long long)j->model->num_hidden_layers,
			   (long long)j->model->num_hidden_layers + 2);
	diag_note(d, NULL, 0, 0, "no valid layout among the %llu searched: the "
		  "rule '%s' rules out %llu of them",
		  (unsigned long long)a->searched, plan_prune_name(worst),
		  (unsigned long long)a->pruned[worst]);
	pinned_note(o, d);
}

/* ---- the full tier ---- */

/* Fill c from the analytical tier (estimate and memory) for layout s. */
static int fill_estimate(const struct job_spec *j, const struct plan_opts *o,
			 const struct scored *s, int64_t rank,
			 struct plan_cand *c, struct diag *d)
{
	struct system_spec sys;
	struct job_spec jj;

	job_for(j, &s->lay, &sys, &jj);
	memset(c, 0, sizeof(*c));
	c->lay = s->lay;
	c->gpus = system_gpus(&sys);
	c->est_rank = rank;
	c->est = s->est;
	if (footprint_job(&jj, gpu_usable_memory_B(sys.gpu) * (1 - o->headroom),
			  &c->mem) != 0) {
		diag_oom(d);
		return -1;
	}
	plan_cand_from_estimate(&jj, c);
	return 0;
}

/* The end of the node count's block starting at i in f->v (blocks are
 * in node order, each sorted by score), and its best estimated step. */
static size_t block_end(const struct found *f, size_t i, double *best_s)
{
	size_t k;

	*best_s = INFINITY;
	for (k = i; k < f->n && f->v[k].lay.nodes == f->v[i].lay.nodes; k++)
		*best_s = fmin(*best_s, f->v[k].est_s);
	return k;
}

/* Which kept layouts go to the full tier: indices into f->v. */
static size_t pick(const struct found *f, const struct plan_opts *o,
		   size_t *out)
{
	size_t n = 0, i, k, j, per, points = 0;
	double front = INFINITY, best;

	if (o->max_gpus <= 0) {
		for (i = 0; i < f->n && n < (size_t)o->top_k; i++)
			out[n++] = i;
		return n;
	}
	for (i = 0; i < f->n; i = k) {
		k = block_end(f, i, &best);
		if (best < front) {
			front = best;
			points++;
		}
	}
	per = points ? ((size_t)o->top_k + points - 1) / points : 0;
	front = INFINITY;
	for (i = 0; i < f->n; i = k) {
		k = block_end(f, i, &best);
		if (!(best < front))
			continue;
		front = best;
		for (j = i; j < k && j - i < per; j++)
			out[n++] = j;
	}
	return n;
}

/* ---- ranking, front, reason ---- */

static int by_final(const void *a, const void *b)
{
	const struct plan_cand *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	if (x->est_rank != y->est_rank)
		return x->est_rank < y->est_rank ? -1 : 1;
	return x->gpus < y->gpus ? -1 : x->gpus > y->gpus;
}

static int front_of(struct plan_result *r)
{
	int64_t i, k, n = 0;

	r->front = mem_alloc((size_t)(r->ncands > 0 ? r->ncands : 1) *
			     sizeof(*r->front));
	if (!r->front)
		return -1;
	/* a layout is on the front when no layout with as few GPUs or fewer
	 * is faster (ties: the fewer GPUs, then the better ranked) */
	for (i = 0; i < r->ncands; i++) {
		const struct plan_cand *c = &r->cands[i];
		int dominated = 0;

		for (k = 0; k < r->ncands && !dominated; k++) {
			const struct plan_cand *o = &r->cands[k];

			if (k == i)
				continue;
			dominated = o->gpus <= c->gpus &&
				    (o->step_s < c->step_s ||
				     (o->step_s == c->step_s &&
				      (o->gpus < c->gpus || k < i)));
		}
		if (!dominated)
			r->front[n++] = i;
	}
	/* fewest GPUs first */
	for (i = 1; i < n; i++)
		for (k = i; k > 0 && r->cands[r->front[k]].gpus <
				     r->cands[r->front[k - 1]].gpus; k--) {
			int64_t t = r->front[k];

			r->front[k] = r->front[k - 1];
			r->front[k - 1] = t;
		}
	r->nfront = n;
	return 0;
}

/* "vpp 2 vs 1, mbs 1 vs 2": the dimensions a and b differ in. */
static void differences(const struct plan_layout *a, const struct plan_layout *b,
			char *buf, size_t len)
{
	static const char *const rc[] = { "none", "selective", "full" };
	size_t n = 0;

	buf[0] = '\0';
#define DIFF(cond, ...)							\
	do {								\
		if ((cond) && n < len)					\
			n += (size_t)snprintf(buf + n, len - n, "%s", n ? ", " : ""); \
		if ((cond) && n < len)					\
			n += (size_t)snprintf(buf + n, len - n, __VA_ARGS__); \
	} while (0)
	DIFF(a->nodes != b->nodes, "nodes %lld vs %lld", (long long)a->nodes,
	     (long long)b->nodes);
	DIFF(a->tp != b->tp, "tp %lld vs %lld", (long long)a->tp, (long long)b->tp);
	DIFF(a->pp != b->pp, "pp %lld vs %lld", (long long)a->pp, (long long)b->pp);
	DIFF(a->vpp != b->vpp, "vpp %lld vs %lld", (long long)a->vpp,
	     (long long)b->vpp);
	DIFF(a->cp != b->cp, "cp %lld vs %lld", (long long)a->cp, (long long)b->cp);
	DIFF(a->ep != b->ep, "ep %lld vs %lld", (long long)a->ep, (long long)b->ep);
	DIFF(a->etp != b->etp, "etp %lld vs %lld", (long long)a->etp,
	     (long long)b->etp);
	DIFF(a->dp != b->dp, "dp %lld vs %lld", (long long)a->dp, (long long)b->dp);
	DIFF(a->mbs != b->mbs, "micro-batch %lld vs %lld", (long long)a->mbs,
	     (long long)b->mbs);
	DIFF(a->sp != b->sp, "sequence parallelism %s vs %s",
	     a->sp ? "on" : "off", b->sp ? "on" : "off");
	DIFF(a->recompute != b->recompute, "recompute %s vs %s",
	     rc[a->recompute], rc[b->recompute]);
	DIFF(a->zero != b->zero, "ZeRO %d vs %d", a->zero, b->zero);
	DIFF(a->schedule != b->schedule, "schedule %s vs %s",
	     pp_schedule_names[a->schedule], pp_schedule_names[b->schedule]);
#undef DIFF
}

/* A duration with 3 significant digits in s, ms or us. */
static const char *seconds(char *buf, size_t len, double s)
{
	if (fabs(s) >= 1)
		snprintf(buf, len, "%.3g s", s);
	else if (fabs(s) >= 1e-3)
		snprintf(buf, len, "%.3g ms", s * 1e3);
	else
		snprintf(buf, len, "%.3g us", s * 1e6);
	return buf;
}

static void explain(const struct plan_result *r, int objective, char *buf,
		    size_t len)
{
	static const char *const part[EXEC_PART_COUNT] = {
		"compute", "exposed communication", "pipeline bubble",
		"optimizer step", "other time",
	};
	const struct plan_cand *a = &r->cands[0], *b = &r->cands[1];
	char la[160], lb[160], dif[256], t1[32], t2[32], t3[32], off[160] = "";
	int i, up = 0, down = 0;
	double dv[EXEC_PART_COUNT];

	if (r->ncands < 2) {
		snprintf(buf, len, "Only one layout was simulated in full.");
		return;
	}
	plan_layout_str(&a->lay, la, sizeof(la));
	plan_layout_str(&b->lay, lb, sizeof(lb));
	differences(&a->lay, &b->lay, dif, sizeof(dif));
	for (i = 0; i < EXEC_PART_COUNT; i++) {
		dv[i] = b->part_s[i] - a->part_s[i];
		if (dv[i] > dv[up])
			up = i;
		if (dv[i] < dv[down])
			down = i;
	}
	if (objective == PLAN_MEMORY) {
		snprintf(buf, len, "The best layout (%s) needs %.3g GB less memory "
			 "per GPU than the runner-up (%s); they differ in %s.", la,
			 (b->mem.peak_B - a->mem.peak_B) / 1e9, lb,
			 dif[0] ? dif : "nothing but rank");
		return;
	}
	if (objective == PLAN_COST) {
		snprintf(buf, len, "The best layout (%s on %lld GPUs) costs %.4g "
			 "GPU-s a step, %.1f %% less than the runner-up (%s on "
			 "%lld GPUs, %.4g GPU-s); they differ in %s.", la,
			 (long long)a->gpus, a->score,
			 100 * (b->score - a->score) / b->score, lb,
			 (long long)b->gpus, b->score,
			 dif[0] ? dif : "nothing but rank");
		return;
	}
	/* the engine's clock counts whole ns: less is rounding (it said
	 * "offset by 3.19e-10 us more pipeline bubble") */
	if (dv[down] <= -1e-9)
		snprintf(off, sizeof(off), ", partly offset by %s more %s",
			 seconds(t3, sizeof(t3), -dv[down]), part[down]);
	seconds(t1, sizeof(t1), b->step_s - a->step_s);
	seconds(t2, sizeof(t2), dv[up]);
	snprintf(buf, len, "The best layout (%s) beats the runner-up (%s) by %s "
		 "(%.1f %%): its %s is %s shorter%s; they differ in %s.",
		 la, lb, t1, 100 * (b->step_s - a->step_s) / b->step_s,
		 part[up], t2, off, dif[0] ? dif : "nothing but rank");
}

/* ---- the plan ---- */

/* Refuse what the planner cannot estimate yet. 0 or 2. */
static int supported(const struct job_spec *j, const struct plan_opts *o,
		     struct diag *d)
{
	struct job_spec jj = *j;

	int64_t i;

	if (est_hybrid(j->model)) {	/* each layer kind priced apart */
		const char *why = est_kind_count(j->model) < 0 ?
			"more layer kinds than the analytical tier prices "
			"apart (8)" :
			j->training.zero_stage >= 3 &&
			((o->pinned >> PD_ZERO) & 1u) ? "ZeRO 3, whose units the "
			"analytical tier takes as one layer kind" :
			j->moe.a2a_overlap ? "moe.a2a_overlap, whose paired "
			"MoE layers the analytical tier takes as one kind" :
			NULL;

		if (why) {
			diag_error(d, NULL, 0, 0, "model '%s' mixes layer "
				   "kinds (a hybrid: Mamba-2, Gated DeltaNet, "
				   "attention, MLP or MoE layers) under %s; "
				   "simulate a layout with 'llmsim run'",
				   j->model->name ? j->model->name : "?", why);
			return 2;
		}
	}
	for (i = 1; i < j->model->num_hidden_layers; i++)
		if (model_layer_window(j->model, i) !=
		    model_layer_window(j->model, 0)) {
			diag_error(d, NULL, 0, 0, "model '%s' mixes layers with "
				   "and without a sliding window (layer %lld): the "
				   "planner's analytical tier takes every layer "
				   "alike", j->model->name ? j->model->name : "?",
				   (long long)i);
			return 2;
		}
	for (i = 1; i < j->model->num_hidden_layers; i++)
		if (j->training.seq_len > j->model->attention_chunk_size &&
		    model_layer_chunk(j->model, i) !=
		    model_layer_chunk(j->model, 0)) {
			diag_error(d, NULL, 0, 0, "model '%s' mixes chunked "
				   "and global attention layers (layer %lld) "
				   "over a sequence past one chunk: the "
				   "planner's analytical tier takes every layer "
				   "alike", j->model->name ? j->model->name : "?",
				   (long long)i);
			return 2;
		}
	if (!((o->pinned >> PD_CP) & 1u))
		jj.parallelism.cp = 1;
	if (train_check(&jj, d) != 0)
		return 2;
	if (o->max_gpus > 0 && o->max_gpus < j->system->gpus_per_node) {
		diag_error(d, NULL, 0, 0, "--max-gpus %lld is less than one node "
			   "(%lld GPUs)", (long long)o->max_gpus,
			   (long long)j->system->gpus_per_node);
		return 2;
	}
	return 0;
}

static int full_tier(const struct job_spec *j, const struct plan_opts *o,
		     const struct found *f, struct plan_result *r,
		     struct diag *d)
{
	size_t *idx = mem_alloc((f->n ? f->n : 1) * sizeof(*idx)), n, i;
	int rc = -1;

	if (!idx) {
		diag_oom(d);
		return -1;
	}
	n = pick(f, o, idx);
	r->cands = mem_calloc(n ? n : 1, sizeof(*r->cands));
	if (!r->cands) {
		diag_oom(d);
		goto out;
	}
	if (!o->no_full && n > 0)
		diag_progress(d, "plan: %llu layouts searched, %llu ranked in "
			      "%.2f s; simulating the best %zu in full",
			      (unsigned long long)r->searched,
			      (unsigned long long)r->ranked, r->est_wall_s, n);
	for (i = 0; i < n; i++) {
		const struct scored *s = &f->v[idx[i]];
		size_t first = idx[i];

		/* its analytical rank within its node count */
		while (first > 0 && f->v[first - 1].lay.nodes == s->lay.nodes)
			first--;
		if (fill_estimate(j, o, s, (int64_t)(idx[i] - first) + 1,
				  &r->cands[i], d) != 0)
			goto out;
		r->ncands = (int64_t)i + 1;
	}
	if (!o->no_full && full_runs(j, o, r->cands, n, d) != 0)
		goto out;
	for (i = 0; i < n; i++) {
		struct plan_cand *c = &r->cands[i];

		c->bound = plan_bound_of(c);
		c->score = plan_score(o->objective, c->step_s, c->mem.peak_B,
				      c->gpus);
		if (c->full_failed)	/* not simulated: after every one that was */
			c->score = HUGE_VAL;
	}
	rc = 0;
out:
	mem_free(idx);
	return rc;
}

int plan_run(const struct job_spec *j, const struct plan_opts *o,
	     struct plan_result *r, struct diag *d)
{
	double t0 = clock_mono_s(), t1;
	struct found f;
	int rc;

	memset(r, 0, sizeof(*r));
	memset(&f, 0, sizeof(f));
	if ((rc = supported(j, o, d)) != 0)
		return rc;
	rc = -1;
	if (search_all(j, o, &f, &r->stats, d) != 0)
		goto out;
	r->searched = f.agg.searched;
	r->ranked = f.agg.n;
	r->estimated = f.agg.nest;
	memcpy(r->pruned, f.agg.pruned, sizeof(r->pruned));
	t1 = clock_mono_s();
	r->est_wall_s = t1 - t0;
	if (f.n == 0) {
		if (f.agg.pruned[PR_MEMORY] > 0 && f.agg.have_min_mem)
			no_fit(j, o, &f.agg, d);
		else
			no_valid(j, o, &f.agg, d);
		rc = 2;
		goto out;
	}
	if (full_tier(j, o, &f, r, d) != 0)
		goto out;
	r->full_wall_s = clock_mono_s() - t1;
	qsort(r->cands, (size_t)r->ncands, sizeof(*r->cands), by_final);
	if (o->max_gpus > 0 && front_of(r) != 0) {
		diag_oom(d);
		goto out;
	}
	explain(r, o->objective, r->why, sizeof(r->why));
	rc = 0;
out:
	mem_free(f.v);
	r->wall_s = clock_mono_s() - t0;
	return rc;
}

void plan_result_release(struct plan_result *r)
{
	mem_free(r->cands);
	mem_free(r->front);
	r->cands = NULL;
	r->front = NULL;
	r->ncands = r->nfront = 0;
}

int plan_simulate(const struct job_spec *j, const struct plan_opts *o,
		  struct plan_cand *c, size_t n, struct diag *d)
{
	size_t i;

	if (full_runs(j, o, c, n, d) != 0)
		return -1;
	for (i = 0; i < n; i++)
		c[i].bound = plan_bound_of(&c[i]);
	return 0;
}
