/*
 * maxmin_local.c - a batch of changes to the max-min system settled
 * without a re-solve, when it provably moves no other rate (maxmin.c
 * explains the solver; this is its shortcut for a flow that starts or
 * ends beside others bound elsewhere).
 */
#include "maxmin_impl.h"

/* The rate a variable has in the allocation local() is building. */
static double rate_now(const struct var *x)
{
	if (x->pending == PEND_NEW)
		return 0;
	return x->pending == PEND_LOCAL ? x->new_Bps : x->rate_Bps;
}

/* Whether no variable on constraint ci has it as its bottleneck, within
 * *walk list entries; walks ci's list. */
static int nobody_bound_at(const struct mm *m, mm_id ci, uint32_t *walk)
{
	const struct cons *c = &m->cons[ci];
	uint32_t k;

	if ((*walk += c->n) > LOCAL_MAX_WALK)
		return 0;
	for (k = 0; k < c->n; k++) {
		const struct var *y = &m->vars[c->list[k].var];

		if (y->pending != PEND_NEW && y->bneck == ci)
			return 0;
	}
	return 1;
}

/* New variable v's rate in the allocation so far, into new_Bps (and its
 * bottleneck), when that leaves every other rate as it is; 0 when not
 * (or past the walk's limit). */
static int local_add(struct mm *m, mm_id v, uint32_t *walk)
{
	struct var *x = &m->vars[v];
	double r = x->bound_Bps > 0 ? x->bound_Bps : INFINITY;
	mm_id at = MM_NONE;
	uint32_t i, k;

	if (x->nelems > LOCAL_MAX_ELEMS)
		return 0;
	for (i = 0; i < x->nelems; i++) {
		const struct elem *e = &x->elems[i];
		const struct cons *c = &m->cons[e->cons];
		double left = c->cap_Bps;

		if (!nobody_bound_at(m, e->cons, walk))
			return 0;
		for (k = 0; k < c->n; k++)
			left -= c->list[k].coef *
				rate_now(&m->vars[c->list[k].var]);
		if (!(left > LOCAL_SLACK * c->cap_Bps))
			return 0;
		if (left / e->coef < r) {
			r = left / e->coef;
			at = e->cons;
		}
	}
	if (!(r > 0) || !isfinite(r))
		return 0;
	if (at != MM_NONE) {
		/* Its bottleneck: nobody there may be faster. */
		const struct cons *c = &m->cons[at];

		for (k = 0; k < c->n; k++)
			if (rate_now(&m->vars[c->list[k].var]) > r &&
			    c->list[k].var != v)
				return 0;
	}
	x->new_Bps = r;
	x->bneck = at;
	x->pending = PEND_LOCAL;
	return 1;
}

/*
 * The batch of changes since the last solve, without a re-solve, when it
 * provably moves no other rate: every removed variable's constraints
 * (the dirty ones) are nobody's bottleneck, so every remaining variable
 * keeps a saturated constraint where it is fastest (or its bound); then
 * each new variable, in turn, takes the least of its bound and what its
 * constraints have left, which must be positive on every one of them (no
 * one is bound there) and where that least is reached, no one may be
 * faster than it. The result is again max-min fair, and max-min
 * allocations are unique: it is the re-solve's, to rounding (the rates
 * come from the constraints' residuals instead of the filling's levels).
 * Returns the variables solved, or -1 when the batch needs a re-solve
 * (nothing changed then).
 */
long mm_local(struct mm *m, mm_change_fn fn, void *arg)
{
	uint32_t i, walk = 0;
	long n = 0;

	if (m->fresh.n > LOCAL_MAX_FRESH || m->dirty.n > LOCAL_MAX_DIRTY)
		return -1;
	for (i = 0; i < m->dirty.n; i++)
		if (!nobody_bound_at(m, m->dirty.v[i], &walk))
			return -1;
	for (i = 0; i < m->fresh.n; i++) {
		mm_id v = m->fresh.v[i];

		if (!m->vars[v].live || m->vars[v].pending != PEND_NEW)
			continue;
		if (!local_add(m, v, &walk))
			goto undo;
	}
	for (i = 0; i < m->fresh.n; i++) {
		struct var *x = &m->vars[m->fresh.v[i]];

		if (!x->live || x->pending != PEND_LOCAL)
			continue;
		x->pending = 0;
		n++;
		if (!mm_changed(x->rate_Bps, x->new_Bps))
			continue;
		if (fn)
			fn(m->fresh.v[i], x->rate_Bps, x->new_Bps, x->data,
			   arg);
		x->rate_Bps = x->new_Bps;
	}
	mm_clean(m);
	m->locals++;
	return n;
undo:
	for (i = 0; i < m->fresh.n; i++) {
		struct var *x = &m->vars[m->fresh.v[i]];

		if (x->live && x->pending == PEND_LOCAL)
			x->pending = PEND_NEW;
	}
	return -1;
}

