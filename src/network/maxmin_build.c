/*
 * maxmin_build.c - the max-min system as the fabric model changes it:
 * constraints (links) and variables (flows) added and removed, their
 * element lists, the dirty and fresh sets the next solve starts from, and
 * the accessors. maxmin.c explains the representation and solves it.
 */
#include "maxmin_impl.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

int mm_vec_grow(struct vec *v)
{
	uint32_t ncap = v->cap ? v->cap * 2 : 64;
	mm_id *nv = mem_realloc(v->v, (size_t)ncap * sizeof(*nv));

	if (!nv)
		return -1;
	v->v = nv;
	v->cap = ncap;
	return 0;
}

struct mm *mm_new(void)
{
	struct mm *m = mem_calloc(1, sizeof(*m));

	if (m) {
		m->free_var = MM_NONE;
		m->prune = 1;
		m->local = 1;
		m->batch = 1;
	}
	return m;
}

void mm_free(struct mm *m)
{
	uint32_t i;

	if (!m)
		return;
	for (i = 0; i < m->nvars; i++)
		mem_free(m->vars[i].elems);
	for (i = 0; i < m->ncons; i++)
		if (m->cons[i].capn > 1)
			mem_free(m->cons[i].list);
	mem_free(m->vars_mem);
	mem_free(m->vmark);
	mem_free(m->vfixed);
	mem_free(m->vref);
	mem_free(m->vnew);
	mem_free(m->cons_mem);
	mem_free(m->busy);
	mem_free(m->cmark);
	mem_free(m->cdirty);
	mem_free(m->cdying);
	mem_free(m->dying.v);
	mem_free(m->dirty.v);
	mem_free(m->fresh.v);
	mem_free(m->cv.v);
	mem_free(m->cc.v);
	mem_free(m->cb.v);
	mem_free(m->heap);
	for (i = 0; i < RQ_BUCKETS; i++)
		mem_free(m->rb[i]);
	mem_free(m->rk);
	mem_free(m);
}

/* Grow the constraint arrays to ncap (> capcons); 0 or -1 (the
 * arrays as they were, or grown but capcons not: still consistent). */
static int cons_room(struct mm *m, uint32_t ncap)
{
	void *mem = mem_alloc((size_t)ncap * sizeof(struct cons) + CONS_ALIGN);
	struct cons *nc;
	uint32_t *nb, i;
	uint8_t *nd;
	uint32_t *ny;

	if (!mem)
		return -1;
	nc = (struct cons *)((uintptr_t)mem + CONS_ALIGN -
			     (uintptr_t)mem % CONS_ALIGN);
	if (m->ncons)
		memcpy(nc, m->cons, (size_t)m->ncons * sizeof(*nc));
	/* a list of one is the constraint's own: it moved */
	for (i = 0; i < m->ncons; i++)
		if (nc[i].capn == 1)
			nc[i].list = &nc[i].one;
	mem_free(m->cons_mem);
	m->cons_mem = mem;
	m->cons = nc;
	nb = mem_realloc(m->busy, (size_t)ncap * sizeof(*nb));
	if (!nb)
		return -1;
	m->busy = nb;
	nb = mem_realloc(m->cmark, (size_t)ncap * sizeof(*nb));
	if (!nb)
		return -1;
	m->cmark = nb;
	nd = mem_realloc(m->cdirty, (size_t)ncap * sizeof(*nd));
	if (!nd)
		return -1;
	m->cdirty = nd;
	ny = mem_realloc(m->cdying, (size_t)ncap * sizeof(*ny));
	if (!ny)
		return -1;
	m->cdying = ny;
	m->capcons = ncap;
	return 0;
}

int mm_cons_reserve(struct mm *m, uint32_t n)
{
	if (n > ID_LIMIT)
		n = ID_LIMIT;
	return n > m->capcons ? cons_room(m, n) : 0;
}

mm_id mm_cons_add(struct mm *m, double cap_Bps)
{
	struct cons *c;

	if (!(cap_Bps > 0) || !isfinite(cap_Bps))
		BUG("constraint capacity must be positive and finite");
	if (m->ncons == ID_LIMIT)
		return MM_NONE;
	if (m->ncons == m->capcons &&
	    cons_room(m, m->capcons ? m->capcons * 2 : 64) != 0)
		return MM_NONE;
	c = &m->cons[m->ncons];
	*c = (struct cons){ .cap_Bps = cap_Bps, .capn = 1 };
	c->list = &c->one;
	m->busy[m->ncons] = 0;
	m->cmark[m->ncons] = 0;
	m->cdirty[m->ncons] = 0;
	m->cdying[m->ncons] = 0;
	return m->ncons++;
}

static int mark_dirty(struct mm *m, mm_id c)
{
	if (m->cdirty[c])
		return 0;
	if (mm_vec_push(&m->dirty, c) != 0)
		return -1;
	m->cdirty[c] = 1;
	return 0;
}

/* Room for one more entry on c's list; 0 or -1. */
static int cons_grow(struct cons *c)
{
	uint32_t ncap = c->capn > 1 ? c->capn * 2 : 8;
	struct centry *nl;

	if (c->capn > 1) {
		nl = mem_realloc(c->list, (size_t)ncap * sizeof(*nl));
	} else {	/* its own entry: copied out */
		nl = mem_alloc((size_t)ncap * sizeof(*nl));
		if (nl && c->n)
			nl[0] = c->one;
	}
	if (!nl)
		return -1;
	c->list = nl;
	c->capn = ncap;
	return 0;
}

/* Take element e off its constraint's list: the last entry moves into
 * its place (so list order is what additions and removals made it). The
 * last entry itself (a flow alone on a link: most of a long flow's
 * links) moves nothing. */
static inline struct cons *cons_unlink(struct mm *m, const struct elem *e)
{
	struct cons *c = &m->cons[e->cons];
	uint32_t n = c->n - 1;

	c->n = n;
	c->nfrac -= e->coef != 1;
	m->busy[e->cons] = n;
	if (e->pos != n) {
		struct centry last = c->list[n];

		c->list[e->pos] = last;
		m->vars[last.var].elems[last.ei].pos = e->pos;
	}
	return c;
}

static mm_id var_slot(struct mm *m)
{
	if (m->free_var != MM_NONE) {
		mm_id v = m->free_var;

		m->free_var = m->vars[v].next_free;
		return v;
	}
	if (m->nvars == ID_LIMIT)
		return MM_NONE;
	if (m->nvars == m->capvars) {
		uint32_t ncap = m->capvars ? m->capvars * 2 : 64;
		void *mem = mem_alloc((size_t)ncap * sizeof(struct var) +
				      CONS_ALIGN);
		struct var *nv;
		uint32_t *nm;
		uint8_t *nf;
		struct vref *nr;
		double *nn;

		if (!mem)
			return MM_NONE;
		nv = (struct var *)((uintptr_t)mem + CONS_ALIGN -
				    (uintptr_t)mem % CONS_ALIGN);
		if (m->nvars)
			memcpy(nv, m->vars, (size_t)m->nvars * sizeof(*nv));
		mem_free(m->vars_mem);
		m->vars_mem = mem;
		m->vars = nv;
		/* capvars moves once all three have the room */
		nm = mem_realloc(m->vmark, (size_t)ncap * sizeof(*nm));
		if (!nm)
			return MM_NONE;
		m->vmark = nm;
		nf = mem_realloc(m->vfixed, (size_t)ncap * sizeof(*nf));
		if (!nf)
			return MM_NONE;
		m->vfixed = nf;
		nr = mem_realloc(m->vref, (size_t)ncap * sizeof(*nr));
		if (!nr)
			return MM_NONE;
		m->vref = nr;
		nn = mem_realloc(m->vnew, (size_t)ncap * sizeof(*nn));
		if (!nn)
			return MM_NONE;
		m->vnew = nn;
		m->capvars = ncap;
	}
	m->vars[m->nvars] = (struct var){ .elems = NULL };
	m->vmark[m->nvars] = 0;
	m->vfixed[m->nvars] = 0;
	m->vref[m->nvars] = (struct vref){ .elems = NULL };
	m->vnew[m->nvars] = 0;
	return m->nvars++;
}

/* Free slot v, keeping its element array for the variable that takes
 * the slot next: an all-to-all's 64 flows end together and the next
 * call's take their slots back, so most additions allocate nothing. */
static void var_release(struct mm *m, mm_id v)
{
	struct var *x = &m->vars[v];

	*x = (struct var){ .elems = x->elems, .capelems = x->capelems,
			   .next_free = m->free_var };
	m->vmark[v] = 0;
	m->vfixed[v] = 0;
	m->vref[v].flags = 0;
	m->free_var = v;
}

/* Room for n elements in x's array; 0 or -1 (x as it was). */
static int var_room(struct var *x, uint32_t n)
{
	struct elem *ne;

	if (n <= x->capelems)
		return 0;
	/* not realloc: the old elements need not be copied */
	ne = mem_alloc((size_t)n * sizeof(*ne));
	if (!ne)
		return -1;
	mem_free(x->elems);
	x->elems = ne;
	x->capelems = n;
	return 0;
}

/* Give variable v its n elements (cons[i], coef[i]), each at the end of
 * its constraint's list, and its rate alone; undo on failure. One pass:
 * a constraint is read once for its capacity and its list (a 128-GPU
 * ring's flow crosses ~350 of them). The new variable's component is
 * found from the fresh list, so its constraints need not be marked
 * dirty. */
static int var_link(struct mm *m, mm_id v, const mm_id *cons,
		    const double *coef, uint32_t n)
{
	struct var *x = &m->vars[v];
	struct elem *el = x->elems;
	struct cons *all = m->cons;
	uint32_t *busy = m->busy, ncons = m->ncons;
	double alone_Bps = x->alone_Bps;
	uint32_t i;

	/* Values held in locals (the count of constraints and each
	 * coefficient too): the stores would make the compiler load them
	 * again. */
	for (i = 0; i < n; i++) {
		mm_id ci = cons[i];
		double a = coef[i];
		struct cons *c;
		double alone;
		uint32_t k;

		if (ci >= ncons || !(a > 0))
			BUG("bad constraint or coefficient");
		c = &all[ci];
		alone = c->cap_Bps / a;
		if (alone < alone_Bps)
			alone_Bps = alone;
		k = c->n;
		if (k == c->capn && cons_grow(c) != 0)
			goto undo;
		el[i] = (struct elem){ ci, k, a };
		c->list[k] = (struct centry){ v, i, a };
		c->n = k + 1;
		c->nfrac += a != 1;
		busy[ci] = k + 1;
	}
	x->alone_Bps = alone_Bps;
	if (mm_vec_push(&m->fresh, v) == 0)
		return 0;
undo:
	while (i-- > 0)
		cons_unlink(m, &el[i]);
	return -1;
}

mm_id mm_var_add(struct mm *m, const mm_id *cons, const double *coef,
		 uint32_t n, double bound_Bps, void *data)
{
	mm_id v;
	struct var *x;

	if (n == 0 && !(bound_Bps > 0))
		BUG("a variable needs a constraint or a bound");
	if (m->dying.n)
		mm_unlink_dying(m);
	v = var_slot(m);
	if (v == MM_NONE)
		return MM_NONE;
	x = &m->vars[v];
	if (var_room(x, n) != 0)
		goto fail;
	x->alone_Bps = bound_Bps > 0 ? bound_Bps : INFINITY;
	x->nelems = n;
	x->bound_Bps = bound_Bps;
	x->data = data;
	x->live = 1;
	x->pending = PEND_NEW;
	if (var_link(m, v, cons, coef, n) != 0)
		goto fail;
	m->vref[v] = (struct vref){ x->elems, n,
				    VREF_LIVE | (bound_Bps > 0 ? VREF_BOUND : 0) };
	m->live++;
	return v;
fail:
	var_release(m, v);
	return MM_NONE;
}

/*
 * Removals in a batch. The flows of an expert all-to-all end together
 * (64 variables of ~88 constraints each, removed before one re-solve),
 * and unlinking them one by one moves entries of the others about on
 * lists that are about to empty. Once the batch needs a re-solve (which
 * reads the lists only after mm_unlink_dying()), mm_var_remove() only
 * counts: each constraint's live count (busy, what cons.n will be: the
 * idle checks read it meanwhile) and its entries still to go (cdying),
 * and marks it dirty exactly where the one-by-one removal would (its
 * count left above 0), in the same order. mm_unlink_dying() then takes the
 * variables in removal order, as the one-by-one removal would, except
 * that a constraint whose remaining entries are all going is emptied at
 * once: what is left of it (n = 0) is the same. Lists with survivors
 * see the same unlinks in the same order, so every list, every
 * variable's element positions, the dirty list and the free variable
 * slots are as the one-by-one removal leaves them. Anything else that
 * reads or changes the lists (mm_var_add(), mm_solve()) unlinks first.
 */
void mm_unlink_dying(struct mm *m)
{
	/* Arrays and counts in locals: the stores to the lists and
	 * positions would make the compiler load them again for every
	 * element (a DeepEP source's flow has ~108). Same steps. */
	struct var *vars = m->vars;
	struct cons *cons = m->cons;
	uint32_t *cdying = m->cdying, i, j, nd = m->dying.n;
	const uint32_t *busy = m->busy;
	const mm_id *dying = m->dying.v;
	uint64_t cleared = 0;

	for (i = 0; i < nd; i++) {
		mm_id v = dying[i];
		const struct elem *el = vars[v].elems;
		uint32_t ne = vars[v].nelems;

		for (j = 0; j < ne; j++) {
			const struct elem *e = &el[j];
			mm_id ci = e->cons;
			struct cons *c;
			uint32_t n;

			/* Every entry still to go counts itself: none left
			 * means the constraint was emptied at once. */
			if (cdying[ci] == 0)
				continue;
			c = &cons[ci];
			if (busy[ci] == 0) {
				/* busy is already what n will be: no
				 * survivor, all that is left goes */
				c->n = 0;
				c->nfrac = 0;
				cdying[ci] = 0;
				cleared++;
				continue;
			}
			/* cons_unlink(), but busy already has its end value */
			n = --c->n;
			c->nfrac -= e->coef != 1;
			if (e->pos != n) {
				struct centry last = c->list[n];

				c->list[e->pos] = last;
				vars[last.var].elems[last.ei].pos = e->pos;
			}
			cdying[ci]--;
		}
		var_release(m, v);
	}
	m->cleared += cleared;
	m->dying.n = 0;
}

void mm_var_remove(struct mm *m, mm_id v)
{
	struct var *x;
	uint32_t i;

	if (v >= m->nvars || !m->vars[v].live)
		BUG("removing a variable that does not exist");
	if (m->local)
		mm_local_remove(m, v);
	x = &m->vars[v];
	if (m->batch && (m->need_solve || !m->local) &&
	    mm_vec_push(&m->dying, v) == 0) {
		/* in locals: mark_dirty()'s byte store would make the
		 * compiler load them again for every element */
		const struct elem *el = x->elems;
		uint32_t *cdying = m->cdying, *busy = m->busy, n = x->nelems;

		for (i = 0; i < n; i++) {
			mm_id c = el[i].cons;

			cdying[c]++;
			if (--busy[c] > 0)
				(void)mark_dirty(m, c);
		}
		x->live = 0;
		m->vref[v].flags = 0;
		m->live--;
		return;
	}
	if (m->dying.n)
		mm_unlink_dying(m);
	for (i = 0; i < x->nelems; i++) {
		/* Out of memory here leaves the constraint clean: the next
		 * change to it re-solves it. One left with no variable
		 * changes no rate (and collect() would skip it). */
		if (cons_unlink(m, &x->elems[i])->n > 0)
			(void)mark_dirty(m, x->elems[i].cons);
	}
	var_release(m, v);
	m->live--;
}

void mm_set_prune(struct mm *m, int on)
{
	m->prune = on;
}

uint64_t mm_spills(const struct mm *m)
{
	return m->spills;
}

void mm_set_local(struct mm *m, int on)
{
	/* Changes made with local settling off marked constraints dirty
	 * but left need_solve clear (their solve was a full one anyway):
	 * mm_local() would take them as settled and mm_clean() drop them. */
	if (m->dying.n)
		mm_unlink_dying(m);
	if (on && !m->local && m->dirty.n)
		m->need_solve = 1;
	m->local = on;
}

void mm_set_batch(struct mm *m, int on)
{
	if (m->dying.n)
		mm_unlink_dying(m);
	m->batch = on;
}

uint64_t mm_cleared(const struct mm *m)
{
	return m->cleared;
}

uint64_t mm_locals(const struct mm *m)
{
	return m->locals;
}

double mm_rate(const struct mm *m, mm_id v)
{
	return m->vars[v].rate_Bps;
}

void mm_preset_rate(struct mm *m, mm_id v, double rate_Bps)
{
	m->vars[v].rate_Bps = rate_Bps;
	m->vars[v].pending = 0;
}

int mm_cons_idle(const struct mm *m, const mm_id *c, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (m->busy[c[i]])
			return 0;
	return 1;
}

const uint32_t *mm_cons_busy(const struct mm *m)
{
	return m->busy;
}

uint32_t mm_cons_vars(const struct mm *m, mm_id c)
{
	return m->busy[c];	/* cons.n once removals are unlinked */
}

uint32_t mm_vars(const struct mm *m)
{
	return m->live;
}
