/*
 * maxmin_ref.c - the max-min solver as it was before its rewrite for
 * speed (src/network/maxmin.c at 938d155: progressive filling with an
 * exact heap of constraint levels), kept unchanged but for its names
 * (mmref_) and allocator (libc), so that tests can check that the new
 * solver gives the same rates: bit for bit, or within 1e-9 relative
 * where ties within rounding are broken in another order.
 */
#include "maxmin_ref.h"

#include <math.h>
#include <stdlib.h>


struct elem {
	mm_id var;
	mm_id cons;
	double coef;		/* a_ij */
	uint32_t pos;		/* index in the constraint's list */
};

struct var {
	struct elem *elems;	/* owned; nelems of them */
	uint32_t nelems;
	double bound_Bps;	/* B/s; 0 = none */
	double rate_Bps;	/* B/s, last solution */
	double new_Bps;		/* B/s, being solved */
	void *data;
	uint32_t mark;		/* epoch of the last walk that reached it */
	mm_id next_free;
	uint8_t fixed;
	uint8_t live;
};

struct cons {
	double cap_Bps;		/* C_i */
	struct elem **list;	/* elements of live variables */
	uint32_t n, capn;
	double left_Bps;	/* C_i - F_i while solving */
	double usage;		/* U_i while solving */
	uint32_t nfree;		/* unfixed variables while solving */
	uint32_t mark;
	uint32_t heap_pos;	/* NO_POS when not in the heap */
	uint8_t dirty;
};

struct vec {
	mm_id *v;
	uint32_t n, cap;
};

/* A bounded variable with its bound, the sort key of the bounded list. */
struct bounded {
	double bound_Bps;	/* B/s, the variable's bound */
	mm_id var;		/* the variable */
};

struct bvec {
	struct bounded *v;
	uint32_t n, cap;
};

struct mmref {
	struct var *vars;
	uint32_t nvars, capvars, live;
	mm_id free_var;
	struct cons *cons;
	uint32_t ncons, capcons;
	struct vec dirty;	/* dirty constraints */
	struct vec fresh;	/* variables added since the last solve */
	struct vec cv, cc;	/* the component being solved */
	struct vec heap;	/* constraints by level */
	struct bvec bounded;	/* bounded variables of the component */
	uint32_t epoch;
};

#define NO_POS UINT32_MAX

static int vec_push(struct vec *v, mm_id x)
{
	if (v->n == v->cap) {
		uint32_t ncap = v->cap ? v->cap * 2 : 64;
		mm_id *nv = realloc(v->v, (size_t)ncap * sizeof(*nv));

		if (!nv)
			return -1;
		v->v = nv;
		v->cap = ncap;
	}
	v->v[v->n++] = x;
	return 0;
}

static int bvec_push(struct bvec *v, mm_id var, double bound_Bps)
{
	if (v->n == v->cap) {
		uint32_t ncap = v->cap ? v->cap * 2 : 64;
		struct bounded *nv = realloc(v->v, (size_t)ncap * sizeof(*nv));

		if (!nv)
			return -1;
		v->v = nv;
		v->cap = ncap;
	}
	v->v[v->n++] = (struct bounded){ bound_Bps, var };
	return 0;
}

struct mmref *mmref_new(void)
{
	struct mmref *m = calloc(1, sizeof(*m));

	if (m)
		m->free_var = MM_NONE;
	return m;
}

void mmref_free(struct mmref *m)
{
	uint32_t i;

	if (!m)
		return;
	for (i = 0; i < m->nvars; i++)
		free(m->vars[i].elems);
	for (i = 0; i < m->ncons; i++)
		free(m->cons[i].list);
	free(m->vars);
	free(m->cons);
	free(m->dirty.v);
	free(m->fresh.v);
	free(m->cv.v);
	free(m->cc.v);
	free(m->heap.v);
	free(m->bounded.v);
	free(m);
}

mm_id mmref_cons_add(struct mmref *m, double cap_Bps)
{
	struct cons *c;

	if (!(cap_Bps > 0) || !isfinite(cap_Bps))
		abort();
	if (m->ncons == m->capcons) {
		uint32_t ncap = m->capcons ? m->capcons * 2 : 64;
		struct cons *nc = realloc(m->cons, (size_t)ncap * sizeof(*nc));

		if (!nc)
			return MM_NONE;
		m->cons = nc;
		m->capcons = ncap;
	}
	c = &m->cons[m->ncons];
	*c = (struct cons){ .cap_Bps = cap_Bps, .heap_pos = NO_POS };
	return m->ncons++;
}

static int mark_dirty(struct mmref *m, mm_id c)
{
	if (m->cons[c].dirty)
		return 0;
	if (vec_push(&m->dirty, c) != 0)
		return -1;
	m->cons[c].dirty = 1;
	return 0;
}

static int cons_append(struct cons *c, struct elem *e)
{
	if (c->n == c->capn) {
		uint32_t ncap = c->capn ? c->capn * 2 : 8;
		struct elem **nl = realloc(c->list, (size_t)ncap * sizeof(*nl));

		if (!nl)
			return -1;
		c->list = nl;
		c->capn = ncap;
	}
	e->pos = c->n;
	c->list[c->n++] = e;
	return 0;
}

static void cons_unlink(struct cons *c, struct elem *e)
{
	struct elem *last = c->list[--c->n];

	c->list[e->pos] = last;
	last->pos = e->pos;
}

static mm_id var_slot(struct mmref *m)
{
	if (m->free_var != MM_NONE) {
		mm_id v = m->free_var;

		m->free_var = m->vars[v].next_free;
		return v;
	}
	if (m->nvars == m->capvars) {
		uint32_t ncap = m->capvars ? m->capvars * 2 : 64;
		struct var *nv = realloc(m->vars, (size_t)ncap * sizeof(*nv));

		if (!nv)
			return MM_NONE;
		m->vars = nv;
		m->capvars = ncap;
	}
	m->vars[m->nvars] = (struct var){ .elems = NULL };
	return m->nvars++;
}

static void var_release(struct mmref *m, mm_id v)
{
	struct var *x = &m->vars[v];

	free(x->elems);
	*x = (struct var){ .next_free = m->free_var };
	m->free_var = v;
}

/* Link the variable's elements into its constraints; undo on failure.
 * The new variable's component is found from the fresh list, so its
 * constraints need not be marked dirty. */
static int var_link(struct mmref *m, mm_id v)
{
	struct var *x = &m->vars[v];
	uint32_t i;

	for (i = 0; i < x->nelems; i++)
		if (cons_append(&m->cons[x->elems[i].cons], &x->elems[i]) != 0)
			goto undo;
	if (vec_push(&m->fresh, v) == 0)
		return 0;
undo:
	while (i-- > 0)
		cons_unlink(&m->cons[x->elems[i].cons], &x->elems[i]);
	return -1;
}

mm_id mmref_var_add(struct mmref *m, const mm_id *cons, const double *coef,
		 uint32_t n, double bound_Bps, void *data)
{
	mm_id v;
	struct var *x;
	uint32_t i;

	if (n == 0 && !(bound_Bps > 0))
		abort();
	v = var_slot(m);
	if (v == MM_NONE)
		return MM_NONE;
	x = &m->vars[v];
	x->elems = n ? malloc((size_t)n * sizeof(*x->elems)) : NULL;
	if (n && !x->elems)
		goto fail;
	for (i = 0; i < n; i++) {
		if (cons[i] >= m->ncons || !(coef[i] > 0))
			abort();
		x->elems[i] = (struct elem){ v, cons[i], coef[i], 0 };
	}
	x->nelems = n;
	x->bound_Bps = bound_Bps;
	x->data = data;
	x->live = 1;
	if (var_link(m, v) != 0)
		goto fail;
	m->live++;
	return v;
fail:
	var_release(m, v);
	return MM_NONE;
}

void mmref_var_remove(struct mmref *m, mm_id v)
{
	struct var *x;
	uint32_t i;

	if (v >= m->nvars || !m->vars[v].live)
		abort();
	x = &m->vars[v];
	for (i = 0; i < x->nelems; i++) {
		cons_unlink(&m->cons[x->elems[i].cons], &x->elems[i]);
		/* Out of memory here leaves the constraint clean: the next
		 * mmref_touch_all() or change to it re-solves it. */
		(void)mark_dirty(m, x->elems[i].cons);
	}
	var_release(m, v);
	m->live--;
}

void mmref_touch_all(struct mmref *m)
{
	uint32_t i;

	for (i = 0; i < m->ncons; i++)
		(void)mark_dirty(m, i);
}

double mmref_rate(const struct mmref *m, mm_id v)
{
	return m->vars[v].rate_Bps;
}

uint32_t mmref_vars(const struct mmref *m)
{
	return m->live;
}

/* ---- the heap of constraints keyed by saturation level ---- */

static double level(const struct cons *c)
{
	double left = c->left_Bps > 0 ? c->left_Bps : 0;

	return c->usage > 0 ? left / c->usage : INFINITY;
}

static int heap_less(const struct mmref *m, mm_id a, mm_id b)
{
	double la = level(&m->cons[a]), lb = level(&m->cons[b]);

	return la < lb || (la == lb && a < b);
}

static void heap_set(struct mmref *m, uint32_t i, mm_id c)
{
	m->heap.v[i] = c;
	m->cons[c].heap_pos = i;
}

static void heap_up(struct mmref *m, uint32_t i)
{
	mm_id c = m->heap.v[i];

	while (i > 0) {
		uint32_t p = (i - 1) / 2;

		if (!heap_less(m, c, m->heap.v[p]))
			break;
		heap_set(m, i, m->heap.v[p]);
		i = p;
	}
	heap_set(m, i, c);
}

static void heap_down(struct mmref *m, uint32_t i)
{
	mm_id c = m->heap.v[i];
	uint32_t n = m->heap.n;

	for (;;) {
		uint32_t k = 2 * i + 1;

		if (k >= n)
			break;
		if (k + 1 < n && heap_less(m, m->heap.v[k + 1], m->heap.v[k]))
			k++;
		if (!heap_less(m, m->heap.v[k], c))
			break;
		heap_set(m, i, m->heap.v[k]);
		i = k;
	}
	heap_set(m, i, c);
}

static void heap_remove(struct mmref *m, mm_id c)
{
	uint32_t i = m->cons[c].heap_pos;
	mm_id last = m->heap.v[--m->heap.n];

	m->cons[c].heap_pos = NO_POS;
	if (last == c)
		return;
	heap_set(m, i, last);
	heap_up(m, i);
	heap_down(m, m->cons[last].heap_pos);
}

/* ---- collecting the component ---- */

static int reach_cons(struct mmref *m, mm_id c)
{
	if (m->cons[c].mark == m->epoch)
		return 0;
	m->cons[c].mark = m->epoch;
	return vec_push(&m->cc, c);
}

static int reach_var(struct mmref *m, mm_id v)
{
	struct var *x = &m->vars[v];
	uint32_t i;

	if (x->mark == m->epoch)
		return 0;
	x->mark = m->epoch;
	if (vec_push(&m->cv, v) != 0)
		return -1;
	for (i = 0; i < x->nelems; i++)
		if (reach_cons(m, x->elems[i].cons) != 0)
			return -1;
	return 0;
}

static void next_epoch(struct mmref *m)
{
	uint32_t i;

	if (++m->epoch != 0)
		return;
	for (i = 0; i < m->nvars; i++)
		m->vars[i].mark = 0;
	for (i = 0; i < m->ncons; i++)
		m->cons[i].mark = 0;
	m->epoch = 1;
}

static int collect(struct mmref *m)
{
	uint32_t i, k;

	next_epoch(m);
	m->cv.n = m->cc.n = 0;
	for (i = 0; i < m->dirty.n; i++)
		if (reach_cons(m, m->dirty.v[i]) != 0)
			return -1;
	for (i = 0; i < m->fresh.n; i++)
		if (m->vars[m->fresh.v[i]].live &&
		    reach_var(m, m->fresh.v[i]) != 0)
			return -1;
	for (i = 0; i < m->cc.n; i++) {
		struct cons *c = &m->cons[m->cc.v[i]];

		for (k = 0; k < c->n; k++)
			if (reach_var(m, c->list[k]->var) != 0)
				return -1;
	}
	return 0;
}

static void clean(struct mmref *m)
{
	uint32_t i;

	for (i = 0; i < m->dirty.n; i++)
		m->cons[m->dirty.v[i]].dirty = 0;
	m->dirty.n = m->fresh.n = 0;
}

/* ---- progressive filling ---- */

static void fix(struct mmref *m, mm_id v, double rate)
{
	struct var *x = &m->vars[v];
	uint32_t i;

	x->fixed = 1;
	x->new_Bps = rate;
	for (i = 0; i < x->nelems; i++) {
		struct elem *e = &x->elems[i];
		struct cons *c = &m->cons[e->cons];

		c->left_Bps -= e->coef * rate;
		c->usage -= e->coef;
		c->nfree--;
		if (c->heap_pos == NO_POS)
			continue;
		if (c->nfree == 0)
			heap_remove(m, e->cons);
		else
			heap_down(m, c->heap_pos);
	}
}

/* Order bounded variables by (bound, id): ids are unique, so the order is
 * total and qsort's instability cannot show. */
static int by_bound(const void *pa, const void *pb)
{
	const struct bounded *a = pa, *b = pb;

	if (a->bound_Bps != b->bound_Bps)
		return a->bound_Bps < b->bound_Bps ? -1 : 1;
	return a->var < b->var ? -1 : a->var > b->var;
}

static int fill_start(struct mmref *m)
{
	uint32_t i, k;

	m->heap.n = m->bounded.n = 0;
	for (i = 0; i < m->cv.n; i++) {
		struct var *x = &m->vars[m->cv.v[i]];

		x->fixed = 0;
		x->new_Bps = 0;
		if (x->bound_Bps > 0 &&
		    bvec_push(&m->bounded, m->cv.v[i], x->bound_Bps) != 0)
			return -1;
	}
	if (m->bounded.n > 1)	/* qsort's base may not be NULL */
		qsort(m->bounded.v, m->bounded.n, sizeof(*m->bounded.v),
		      by_bound);
	for (i = 0; i < m->cc.n; i++) {
		struct cons *c = &m->cons[m->cc.v[i]];

		c->left_Bps = c->cap_Bps;
		c->usage = 0;
		c->nfree = c->n;
		c->heap_pos = NO_POS;
		for (k = 0; k < c->n; k++)
			c->usage += c->list[k]->coef;
		if (c->n == 0)
			continue;
		if (vec_push(&m->heap, m->cc.v[i]) != 0)
			return -1;
		heap_up(m, m->heap.n - 1);
	}
	return 0;
}

static void fill(struct mmref *m)
{
	uint32_t bi = 0, k;
	double lvl = 0;

	for (;;) {
		mm_id c, b;
		double lc;

		while (bi < m->bounded.n && m->vars[m->bounded.v[bi].var].fixed)
			bi++;
		if (m->heap.n == 0 && bi == m->bounded.n)
			break;
		c = m->heap.n ? m->heap.v[0] : MM_NONE;
		lc = c != MM_NONE ? level(&m->cons[c]) : INFINITY;
		b = bi < m->bounded.n ? m->bounded.v[bi].var : MM_NONE;
		if (b != MM_NONE && m->vars[b].bound_Bps <= lc) {
			fix(m, b, m->vars[b].bound_Bps);
			continue;
		}
		heap_remove(m, c);
		if (lc > lvl)
			lvl = lc;
		for (k = 0; k < m->cons[c].n; k++) {
			mm_id v = m->cons[c].list[k]->var;

			if (!m->vars[v].fixed)
				fix(m, v, lvl);
		}
	}
}

static int changed(double a, double b)
{
	return fabs(a - b) > 1e-12 * fmax(fabs(a), fabs(b));
}

long mmref_solve(struct mmref *m, mm_change_fn fn, void *arg)
{
	uint32_t i;

	/* On failure the dirty and fresh lists stay, so a later solve
	 * redoes this one. */
	if (collect(m) != 0 || fill_start(m) != 0)
		return -1;
	clean(m);
	fill(m);
	for (i = 0; i < m->cv.n; i++) {
		struct var *x = &m->vars[m->cv.v[i]];

		if (!changed(x->rate_Bps, x->new_Bps))
			continue;
		if (fn)
			fn(m->cv.v[i], x->rate_Bps, x->new_Bps, x->data, arg);
		x->rate_Bps = x->new_Bps;
	}
	return (long)m->cv.n;
}
