/*
 * maxmin_local.c - a batch of changes to the max-min system settled
 * without a re-solve, when it provably moves no other rate (maxmin.c
 * explains the solver; this is its shortcut for a flow that starts or
 * ends beside others bound elsewhere).
 *
 * Why it is exact. Between solves the rates of the solved variables are
 * a max-min fair allocation: each variable has a bottleneck, a saturated
 * constraint where no one is faster (or its bound). A constraint with
 * room left (more than LOCAL_SLACK of its capacity) is nobody's
 * bottleneck, nor is a saturated one where the variable leaving is
 * strictly the fastest. So
 *   - removing a variable all of whose constraints are such keeps every
 *     other variable's bottleneck: the rest is still max-min fair
 *     (checked at removal, mm_local_remove(), against the rates then);
 *   - a new variable whose constraints all have room takes the least of
 *     its bound and what they have left (r = min(b, min_i left_i/a_i)):
 *     no one loses a bottleneck (none is on its constraints), and it has
 *     one, its bound or the constraint where that least is reached,
 *     provided no one there is faster than r.
 * Max-min fair allocations are unique, so this is the re-solve's, up to
 * rounding: r comes from a residual instead of the filling's levels; the
 * residual is at least 1e-3 of the capacity, so its rounding (~1e-16 n of
 * the capacity) is ~1e-13 n of r.
 *
 * Flows adopted from a replayed collective (mm_preset_rate) count as
 * solved: their rates are those the idle fabric's solver gave them on
 * links they held alone, a max-min allocation of their own.
 */
#include "maxmin_impl.h"

#include <stddef.h>

/* The rate a variable has in the allocation being built. */
static double rate_now(const struct var *x)
{
	if (x->pending == PEND_NEW)
		return 0;
	return x->pending == PEND_LOCAL ? x->new_Bps : x->rate_Bps;
}

/* What constraint c has left under the rates now, walking its list
 * (counted into *walk). */
static double left_of(const struct mm *m, const struct cons *c,
		      uint32_t *walk)
{
	double left = c->cap_Bps;
	uint32_t k;

	*walk += c->n;
	for (k = 0; k < c->n; k++)
		left -= c->list[k].coef * rate_now(&m->vars[c->list[k].var]);
	return left;
}

/* Whether someone on c other than v is at least as fast as r (to
 * LOCAL_TIE). */
static int someone_as_fast(const struct mm *m, const struct cons *c,
			   mm_id v, double r)
{
	uint32_t k;

	for (k = 0; k < c->n; k++)
		if (c->list[k].var != v &&
		    rate_now(&m->vars[c->list[k].var]) >= r * (1 - LOCAL_TIE))
			return 1;
	return 0;
}

void mm_local_remove(struct mm *m, mm_id v)
{
	const struct var *x = &m->vars[v];
	uint32_t i, walk = 0;

	if (m->need_solve || x->pending == PEND_NEW)
		return;	/* nothing to check, or a re-solve anyway */
	if (x->nelems > LOCAL_MAX_ELEMS) {
		m->need_solve = 1;
		return;
	}
	for (i = 0; i < x->nelems; i++) {
		const struct cons *c = &m->cons[x->elems[i].cons];

		if (left_of(m, c, &walk) > LOCAL_SLACK * c->cap_Bps)
			continue;
		if (walk > LOCAL_MAX_WALK ||
		    someone_as_fast(m, c, v, x->rate_Bps)) {
			m->need_solve = 1;
			return;
		}
	}
}

/* New variable v's rate in the allocation so far, into new_Bps, when
 * that leaves every other rate as it is; 0 when not (or past the walk's
 * limit). */
static int local_add(struct mm *m, mm_id v, uint32_t *walk)
{
	struct var *x = &m->vars[v];
	double r = x->bound_Bps > 0 ? x->bound_Bps : INFINITY;
	const struct cons *at = NULL;
	uint32_t i;

	if (x->nelems > LOCAL_MAX_ELEMS)
		return 0;
	for (i = 0; i < x->nelems; i++) {
		const struct elem *e = &x->elems[i];
		const struct cons *c = &m->cons[e->cons];
		double left = left_of(m, c, walk);

		if (!(left > LOCAL_SLACK * c->cap_Bps) ||
		    *walk > LOCAL_MAX_WALK)
			return 0;
		if (left / e->coef < r) {
			r = left / e->coef;
			at = c;
		}
	}
	if (!(r > 0) || !isfinite(r) || (at && someone_as_fast(m, at, v, r)))
		return 0;
	x->new_Bps = r;
	x->pending = PEND_LOCAL;
	return 1;
}

long mm_local(struct mm *m, mm_change_fn fn, void *arg)
{
	uint32_t i, last, walk = 0, added = 0;
	long n = 0;

	if (m->need_solve)
		return -1;
	for (i = 0; i < m->fresh.n; i++) {
		mm_id v = m->fresh.v[i];

		if (!m->vars[v].live || m->vars[v].pending != PEND_NEW)
			continue;
		if (++added > LOCAL_MAX_FRESH || !local_add(m, v, &walk))
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
	/* only the variables before the one that failed were settled (a
	 * batch of 10,000 new flows stops at its ninth: its other records
	 * are not read) */
	for (last = i, i = 0; i <= last && i < m->fresh.n; i++) {
		struct var *x = &m->vars[m->fresh.v[i]];

		if (x->live && x->pending == PEND_LOCAL)
			x->pending = PEND_NEW;
	}
	return -1;
}

/* Whether the batch has a new variable still to solve. */
static int has_new(const struct mm *m)
{
	uint32_t i;

	for (i = 0; i < m->fresh.n; i++)
		if (m->vars[m->fresh.v[i]].live &&
		    m->vars[m->fresh.v[i]].pending == PEND_NEW)
			return 1;
	return 0;
}

/*
 * The guest as local_add() would see it: last on each of its lists, its
 * own entry subtracting 0 (a new variable's rate) from what the others
 * leave, so left_of() is left[i] bit for bit and the walk counts it.
 */
int mm_guest_settle(const struct mm *m, uint32_t n, const double *coef,
		    const double *cap, const double *left,
		    const uint32_t *cnt, const double *maxr, double bound_Bps,
		    uint32_t *walk, uint32_t *added, double *rate_Bps)
{
	double r = bound_Bps > 0 ? bound_Bps : INFINITY;
	uint32_t i, at = UINT32_MAX;

	if (!m->local || m->need_solve || has_new(m))
		return 0;
	if (++*added > LOCAL_MAX_FRESH || n > LOCAL_MAX_ELEMS)
		return 0;
	for (i = 0; i < n; i++) {
		*walk += cnt[i] + 1;
		if (!(left[i] > LOCAL_SLACK * cap[i]) ||
		    *walk > LOCAL_MAX_WALK)
			return 0;
		if (left[i] / coef[i] < r) {
			r = left[i] / coef[i];
			at = i;
		}
	}
	if (!(r > 0) || !isfinite(r) || (at != UINT32_MAX && maxr[at] >= r))
		return 0;
	*rate_Bps = r;
	return 1;
}

/* mm_local_remove() for the guest, last on each list at rate_Bps. */
int mm_guest_leave(const struct mm *m, uint32_t n, const double *coef,
		   const double *cap, const double *left,
		   const uint32_t *cnt, const double *maxr, double rate_Bps)
{
	uint32_t i, walk = 0;

	if (!m->local || m->need_solve || n > LOCAL_MAX_ELEMS)
		return 0;
	for (i = 0; i < n; i++) {
		walk += cnt[i] + 1;
		if (left[i] - coef[i] * rate_Bps > LOCAL_SLACK * cap[i])
			continue;
		if (walk > LOCAL_MAX_WALK ||
		    maxr[i] >= rate_Bps * (1 - LOCAL_TIE))
			return 0;
	}
	return 1;
}
