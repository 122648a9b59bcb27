/*
 * maxmin.c - max-min fairness by progressive filling.
 *
 * The problem. Constraints i (link directions) have capacities C_i (B/s).
 * Variables j (flows, or groups of flows that progress together) have
 * rates x_j >= 0 (B/s), an optional bound b_j, and use constraint i with
 * coefficient a_ij > 0 (a flow crossing a link once has a_ij = 1; a ring
 * whose segments cross the same link twice has 2; a flow sprayed evenly
 * over u uplinks has 1/u on each). Feasibility:
 *
 *     sum_j a_ij x_j <= C_i   for every i,      x_j <= b_j.
 *
 * The allocation is max-min fair: lexicographically, the smallest rate is
 * as large as possible, then the next, and so on. Equivalently every
 * variable has a bottleneck: a saturated constraint on which its rate is
 * the largest, or its own bound.
 *
 * Progressive filling computes it. All variables start unfixed and rise
 * together at a common level L. Constraint i saturates when
 *
 *     F_i + L * U_i = C_i,   F_i = sum_{j fixed} a_ij x_j,
 *                            U_i = sum_{j unfixed} a_ij,
 *
 * i.e. at level s_i = (C_i - F_i) / U_i. Repeatedly take the smallest
 * of min_i s_i and the smallest unmet bound; fix the variables of that
 * constraint at that level (or the bounded variable at its bound), and
 * update F and U of every constraint those variables use. Fixing a
 * variable at level L <= s_k never lowers s_k (since (R - aL)/(U - a) >=
 * R/U when R/U >= L), so the levels popped never decrease. Ties are
 * broken by constraint id, and a bound equal to the smallest level is
 * met first (bounds in order of (bound, variable id)), so the result is
 * deterministic.
 *
 * The heap. Constraints and bounds share one heap of (level, key)
 * entries; key orders bounds (the variable id) before constraints (2^31
 * + constraint id) at equal levels. Since fixing only raises a
 * constraint's level, an entry's stored level is a lower bound of its
 * level now, and fixing leaves the heap alone: when a constraint reaches
 * the top, its level is recomputed; if it rose, the entry is re-keyed
 * (taken out and put back at its new level), else it is the smallest
 * (level, id) of all (every other
 * entry's level now is at least its stored one) and is taken. This is
 * the order an exact heap would pop (a re-keyed heap of levels, which is
 * what this file did until it became the cost of every re-solve: two
 * divisions per comparison on every element's fix), without touching the
 * heap per element: O(E + (C + B + R) log(C + B)) for E elements, C
 * constraints, B bounds and R re-keyings. Rounding can lower a level by
 * an ulp where exact arithmetic keeps it; the lazy heap then may take two
 * constraints tied within rounding in the other order, which moves rates
 * by ~1e-16 relative (tests/unit/network/test_maxmin_ref.c compares with
 * the exact heap: bit for bit, or within 1e-9). Since round 28 the
 * "heap" is a radix heap on the levels' bits (see "The queue" below):
 * what it takes at each step depends only on the set of entries, so the
 * order, and every rate, is the binary heap's.
 *
 * Layout. A constraint's list holds (variable, element index,
 * coefficient) entries, so the walk over a constraint's variables and
 * the sum of its coefficients read one array instead of chasing a
 * pointer per element.
 *
 * Incremental. The allocation of one connected component (variables and
 * constraints linked by elements) does not depend on any other, so a
 * change re-solves only the components it touches: a breadth-first walk
 * from the dirty constraints (and new variables) collects them. A flow
 * starting inside one node does not disturb a ring crossing the spine
 * unless they share a link.
 *
 * Constraints set aside. A variable's rate can never exceed its rate
 * alone, a_j = min(b_j, min_i C_i / a_ij) (kept from when it is added),
 * and levels only rise, so a constraint whose first level exceeds a_j of
 * every variable on it (times 1 + 1e-6) finds each of them fixed by the
 * time it could be taken: the heap would pop it with no effect. A
 * component's constraints are mostly such (a rank's all-to-all flow
 * crosses ~90 links, a few of which bind), so fill_start() keeps them out
 * of the heap, at the end of its array, remembering the least (level,
 * key) among them. Whenever that least entry would be the heap's top,
 * spill() drops the set-aside constraints that have nothing free and
 * puts the rest in the heap with their first levels, which is the heap
 * the filling would have had at that point (an entry not yet at the top
 * keeps its first level), so the order of pops, and every rate, is the
 * same bit for bit (tests/unit/network/test_maxmin_fast.c checks it
 * against the solver with everything in the heap). Only components with
 * more constraints than variables do this: where every link is shared
 * by many flows there is little to set aside. A constraint only one
 * variable uses and looser than that variable's rate alone would be set
 * aside and dropped unused every time: it is not even collected into the
 * component (reach_var).
 *
 * The system is built and changed (constraints and variables added and
 * removed, their lists, the dirty and fresh sets) in maxmin_build.c.
 *
 * Changes settled without a re-solve (maxmin_local.c). A small batch of
 * changes that provably moves no other rate (every removed variable's
 * constraints had room left or it was strictly the fastest there; every
 * new variable's constraints have room, and where what is left is least
 * no one is faster) is settled from the residuals alone: the allocation
 * stays max-min fair, which makes it the re-solve's, up to rounding
 * (1e-12 relative, asserted by the same test). A TP collective starting
 * or ending beside an expert all-to-all whose flows are bound elsewhere
 * is such a change.
 *
 * Validity: rates are exact up to floating-point rounding (relative 1e-12
 * on the benchmarks); levels of saturated constraints are clamped at the
 * last level popped so rounding cannot make them decrease. Ids stay below
 * 2^31 (the heap's key needs the top bit).
 */
#include "maxmin_impl.h"

#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

/* Walks over variables or constraints in a list ask for the records (and
 * what they point to) this many entries ahead: each is a cache miss
 * (10,000 flows' records and elements, 2.5 MB, are past L2) that the
 * next one could not start before a data-dependent branch. */
#define SAT_AHEAD 4
#define SAT_CHUNK 64	/* saturate() picks the free variables of this
			 * many list entries at a time (a stack buffer) */

/* ---- the heap of levels and bounds ---- */

static double level(const struct cons *c)
{
	double left = c->left_Bps > 0 ? c->left_Bps : 0;

	return c->usage > 0 ? left / c->usage : INFINITY;
}

/* (level, key) order without branches: the comparisons of a sift are
 * unpredictable, and mispredicting half of them cost more than the
 * arithmetic. Levels are never negative, -0 or NaN (level() clamps what
 * is left at +0 and divides by a positive usage; bounds are positive;
 * the set-aside least starts at +inf), and such doubles order as their
 * bit patterns do as unsigned integers: the comparison is done on the
 * bits, one integer compare in a sift's chain of dependent loads where
 * a floating-point one took three or four cycles. Same order. */
static inline uint64_t level_bits(double x)
{
	uint64_t u;

	memcpy(&u, &x, sizeof(u));
	return u;
}

static inline int hent_less(const struct hent *a, const struct hent *b)
{
	uint64_t la = level_bits(a->level), lb = level_bits(b->level);

	return (la < lb) | ((la == lb) & (a->key < b->key));
}

/*
 * The queue. The filling takes entries in (level, key) order and the
 * levels it takes never decrease (see the top of the file; a re-keyed
 * constraint goes back in at a higher level, a spill puts the set-aside
 * ones in at or above the least level left): a monotone priority queue,
 * kept as a radix heap on the levels' bits. Bucket b >= 1 holds the
 * entries whose level's bits first differ from those of the level last
 * taken (rq_last) at bit b - 1; bucket 0, the keys at rq_last itself, is
 * a binary heap of keys (ties of level taken by key). When bucket 0 is
 * empty, the least non-empty bucket's least entry becomes rq_last and
 * the bucket's entries move to lower buckets: each entry moves a few
 * times over its life, in sequential passes, where a binary heap of
 * 5,000 constraints took ~8 dependent loads a re-keying.
 *
 * Which entry the filling takes, re-keys or drops at each step depends
 * only on the set of (level, key) entries, never on how a queue keeps
 * them: it always looks at the least. So the rates are those of the
 * binary heap this replaced, bit for bit. One case needs care: rounding
 * can make a constraint's level now an ulp below the level it was keyed
 * at (the file's top). The binary heap kept it on top at the lower level
 * and took it next; here it is held aside (hold), below rq_last, as the
 * least entry until it is taken (or a spill rebuilds the queue).
 */
static inline uint32_t rq_bucket(uint64_t bits, uint64_t last)
{
	uint64_t x = bits ^ last;

	return x ? 64 - (uint32_t)__builtin_clzll(x) : 0;
}

static void rk_push(struct mm *m, uint32_t key)
{
	uint32_t *h = m->rk, i = m->nrk++;

	while (i > 0 && key < h[(i - 1) / 2]) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = key;
}

static void rk_pop(struct mm *m)
{
	uint32_t *h = m->rk, n = --m->nrk, i = 0, x;

	if (n == 0)
		return;
	x = h[n];
	for (;;) {
		uint32_t k = 2 * i + 1;

		if (k >= n)
			break;
		if (k + 1 < n && h[k + 1] < h[k])
			k++;
		if (x < h[k])
			break;
		h[i] = h[k];
		i = k;
	}
	h[i] = x;
}

/* Append e (its level's bits: x) to bucket b (b >= 1); 0 or -1 (out of
 * memory). */
static inline int rb_append(struct mm *m, uint32_t b, struct hent e,
			    uint64_t x)
{
	if (m->rbn[b] == m->rbcap[b]) {
		uint32_t ncap = m->rbcap[b] ? m->rbcap[b] * 2 : 64;
		struct hent *nb = mem_realloc(m->rb[b],
					      (size_t)ncap * sizeof(*nb));

		if (!nb)
			return -1;
		m->rb[b] = nb;
		m->rbcap[b] = ncap;
	}
	if (m->rbn[b] == 0 || x < m->rbmin[b])
		m->rbmin[b] = x;
	m->rb[b][m->rbn[b]++] = e;
	m->rq_mask |= 1ull << (b - 1);
	return 0;
}

/* Put (level, key) in the queue (level at or above the level last
 * taken); 0 or -1 (out of memory: the filling fails, and the next one
 * starts the queue afresh). Bucket 0's room is reserved by rq_start(). */
static int rq_push(struct mm *m, double lvl, uint32_t key)
{
	uint64_t x = level_bits(lvl);
	uint32_t b = rq_bucket(x, m->rq_last);

	if (b == 0)
		rk_push(m, key);
	else if (rb_append(m, b, (struct hent){ lvl, key }, x) != 0)
		return -1;
	m->nq++;
	return 0;
}

/* Empty the queue, with `last` the level below all it will get; room for
 * n keys in bucket 0; 0 or -1. */
static int rq_start(struct mm *m, uint64_t last, uint32_t n)
{
	while (m->rq_mask) {
		uint32_t b = (uint32_t)__builtin_ctzll(m->rq_mask) + 1;

		m->rbn[b] = 0;
		m->rq_mask &= m->rq_mask - 1;
	}
	m->nrk = 0;
	m->nq = 0;
	m->has_hold = 0;
	m->rq_last = last;
	if (n > m->caprk) {
		uint32_t *nk = mem_realloc(m->rk, (size_t)n * sizeof(*nk));

		if (!nk)
			return -1;
		m->rk = nk;
		m->caprk = n;
	}
	return 0;
}

/* The least entry (the queue not empty) in *top; 0 or -1 (out of
 * memory moving a bucket: the filling fails). */
static int rq_top(struct mm *m, struct hent *top)
{
	uint32_t b, i, n;
	const struct hent *e;
	uint64_t lb;

	if (m->has_hold) {
		*top = m->hold;
		return 0;
	}
	if (m->nrk == 0) {
		b = (uint32_t)__builtin_ctzll(m->rq_mask) + 1;
		e = m->rb[b];
		n = m->rbn[b];
		lb = m->rbmin[b];
		/* Every entry of bucket b moves below b (their bits above
		 * b - 1 are rq_last's, and so lb's): e stays put. */
		m->rq_last = lb;
		m->rbn[b] = 0;
		m->rq_mask &= ~(1ull << (b - 1));
		for (i = 0; i < n; i++) {
			uint64_t x = level_bits(e[i].level);
			uint32_t to = rq_bucket(x, lb);

			/* an entry at the new least level is the next top:
			 * ask for its constraint's line (fill() reads it)
			 * while the rest of the bucket moves */
			if (to == 0 && (e[i].key & CONS_KEY))
				__builtin_prefetch(
					&m->cons[e[i].key & ~CONS_KEY]);
			if (to == 0)
				rk_push(m, e[i].key);
			else if (rb_append(m, to, e[i], x) != 0)
				return -1;
		}
	}
	memcpy(&top->level, &m->rq_last, sizeof(top->level));
	top->key = m->rk[0];
	return 0;
}

/* Take the least entry away (rq_top() found it). */
static void rq_pop(struct mm *m)
{
	m->nq--;
	if (m->has_hold)
		m->has_hold = 0;
	else
		rk_pop(m);
}

/* Room for n entries; 0 or -1. */
static int heap_reserve(struct mm *m, uint32_t n)
{
	struct hent *nh;

	if (n <= m->capheap)
		return 0;
	nh = mem_realloc(m->heap, (size_t)n * sizeof(*nh));
	if (!nh)
		return -1;
	m->heap = nh;
	m->capheap = n;
	return 0;
}

/* ---- collecting the component ---- */

static int reach_cons(struct mm *m, mm_id c)
{
	if (m->cmark[c] == m->epoch)
		return 0;
	m->cmark[c] = m->epoch;
	return mm_vec_push(&m->cc, c);
}

static int reach_var(struct mm *m, mm_id v)
{
	const struct vref *x = &m->vref[v];
	const struct elem *el;
	const struct cons *cons;
	const uint32_t *busy;
	uint32_t *cmark, epoch = m->epoch, n, i, nc;
	double most = -1;	/* B/s; < 0: not read yet */
	mm_id *cc;
	int prune;

	if (m->vmark[v] == epoch)
		return 0;
	m->vmark[v] = epoch;
	n = x->nelems;
	/* Room for all its constraints first, so that the walk below holds
	 * the list's end, the marks, the epoch and the flag in registers
	 * (reach_cons()'s push, a store that may grow the list, made the
	 * compiler load them again for every element: a DeepEP source's
	 * flow has ~108), and the pushes that may call come after it (the
	 * values the walk holds would otherwise be kept across those calls,
	 * on the stack). The same constraints, variables and bounds, in the
	 * same order. */
	while (m->cc.cap - m->cc.n < n)
		if (mm_vec_grow(&m->cc) != 0)
			return -1;
	el = x->elems;
	cons = m->cons;
	busy = m->busy;
	cmark = m->cmark;
	prune = m->prune;
	cc = m->cc.v;
	nc = m->cc.n;
	for (i = 0; i < n; i++) {
		mm_id c = el[i].cons;

		/* A link only this variable uses, looser than its rate
		 * alone: fill_start() would set it aside, and it would be
		 * dropped unused (the variable is fixed by the time its
		 * level comes up: its tightest constraint's level never
		 * exceeds its rate alone). Left out of the component. (A
		 * 128-GPU ring's flow crosses ~350 links, a quarter of
		 * them its own.) The dense counts and marks (busy is the
		 * list's length here: removals are unlinked) spare the
		 * walk the constraint's line, read once in fill_start(). */
		if (prune && busy[c] == 1) {
			/* its rate alone from its record, read only here
			 * (where every link is shared, never) */
			if (most < 0)
				most = m->vars[v].alone_Bps * SPARE_MARGIN;
			if (cons[c].cap_Bps / el[i].coef > most)
				continue;
		}
		/* reach_cons(), inline */
		if (cmark[c] == epoch)
			continue;
		cmark[c] = epoch;
		cc[nc++] = c;
	}
	m->cc.n = nc;
	if (mm_vec_push(&m->cv, v) != 0)
		return -1;
	/* fill_start()'s reset of the variable, done while its record is
	 * at hand (it is read again only when the variable is fixed) */
	m->vfixed[v] = 0;
	if ((x->flags & VREF_BOUND) && mm_vec_push(&m->cb, v) != 0)
		return -1;
	return 0;
}

static void next_epoch(struct mm *m)
{
	uint32_t i;

	if (++m->epoch != 0)
		return;
	for (i = 0; i < m->nvars; i++)
		m->vmark[i] = 0;
	for (i = 0; i < m->ncons; i++)
		m->cmark[i] = 0;
	m->epoch = 1;
}

static int collect(struct mm *m)
{
	uint32_t i, k;

	next_epoch(m);
	m->cv.n = m->cc.n = m->cb.n = 0;
	/* A dirty constraint left with no variable links nothing and fills
	 * nothing: the 1,024 links a 128-GPU ring's flows leave behind
	 * would otherwise be walked again by the re-solve of the one flow
	 * that shared a link with them. */
	for (i = 0; i < m->dirty.n; i++)
		if (m->cons[m->dirty.v[i]].n > 0 &&
		    reach_cons(m, m->dirty.v[i]) != 0)
			return -1;
	for (i = 0; i < m->fresh.n; i++) {
		/* vrefs and element arrays ahead (saturate()) */
		if (i + SAT_AHEAD < m->fresh.n)
			__builtin_prefetch(&m->vref[m->fresh.v[i + SAT_AHEAD]]);
		if (i + SAT_AHEAD / 2 < m->fresh.n)
			__builtin_prefetch(
				m->vref[m->fresh.v[i + SAT_AHEAD / 2]].elems);
		if ((m->vref[m->fresh.v[i]].flags & VREF_LIVE) &&
		    reach_var(m, m->fresh.v[i]) != 0)
			return -1;
	}
	/* Once every live variable is reached (a re-solve of everything:
	 * every flow restarted, or one component holding them all) the
	 * rest of the walk would reach nothing more: the lists hold live
	 * variables only (unlinked above), each reached, and the
	 * constraints of each are in cc already. */
	for (i = 0; i < m->cc.n && m->cv.n < m->live; i++) {
		const struct cons *c = &m->cons[m->cc.v[i]];
		/* in locals: reach_var() changes none of them, but the
		 * compiler would load them again after each call */
		const struct centry *l = c->list;
		const uint32_t *vmark = m->vmark;
		uint32_t nl = c->n, epoch = m->epoch;

		/* most entries lead to a variable already reached */
		for (k = 0; k < nl; k++)
			if (vmark[l[k].var] != epoch &&
			    reach_var(m, l[k].var) != 0)
				return -1;
	}
	return 0;
}


/* ---- progressive filling ---- */

/* Fix variable v at rate. Its record is not read (the dense vref and
 * vnew): mm_solve() copies the rate into it once the filling is done. */
static void fix(struct mm *m, mm_id v, double rate)
{
	const struct vref x = m->vref[v];
	uint32_t i;

	m->vfixed[v] = 1;
	m->vnew[v] = rate;
	m->unfixed--;
	for (i = 0; i < x.nelems; i++) {
		const struct elem *e = &x.elems[i];
		struct cons *c = &m->cons[e->cons];

		c->left_Bps -= e->coef * rate;
		c->usage -= e->coef;
		c->nfree--;
	}
}

/* Reset the component and fill the queue with its constraints' levels and
 * its variables' bounds; 0 or -1. A constraint whose level exceeds every
 * rate its variables could have (each one's rate alone, times
 * SPARE_MARGIN) is set aside at the heap array's end instead (see
 * spill()). */
static int fill_start(struct mm *m)
{
	uint32_t i, k, n = 0, total = m->cv.n + m->cc.n, spare = total;
	/* Setting aside pays where constraints outnumber the variables
	 * (long flows: an all-to-all's); where they do not (every link
	 * shared by many flows), reading each one's rate alone is all it
	 * would do. Either way the rates are the same. */
	int prune = m->prune && m->cc.n > m->cv.n;
	const struct var *vars = m->vars;
	uint64_t least;

	if (heap_reserve(m, total) != 0)
		return -1;
	m->spare_min = (struct hent){ INFINITY, UINT32_MAX };
	/* the variables were reset as collect() reached them */
	for (i = 0; i < m->cb.n; i++)
		m->heap[n++] = (struct hent){ m->vars[m->cb.v[i]].bound_Bps,
					      m->cb.v[i] };
	for (i = 0; i < m->cc.n; i++) {
		struct cons *c = &m->cons[m->cc.v[i]];

		struct hent e;

		/* constraints and their lists ahead (saturate()) */
		if (i + SAT_AHEAD < m->cc.n)
			__builtin_prefetch(&m->cons[m->cc.v[i + SAT_AHEAD]]);
		if (i + SAT_AHEAD / 2 < m->cc.n) {
			const struct cons *a =
				&m->cons[m->cc.v[i + SAT_AHEAD / 2]];

			/* only a list the walk below reads */
			if (prune || a->nfrac)
				__builtin_prefetch(a->list);
		}
		double most = 0;	/* B/s, the largest rate alone */
		double usage = 0;
		const struct centry *l = c->list;
		uint32_t nl = c->n;

		/* One walk of the list for both sums (usage adds up in
		 * list order as before); a loop for each case, so that the
		 * walk tests no flag. */
		if (prune) {
			for (k = 0; k < nl; k++) {
				double alone = vars[l[k].var].alone_Bps;

				usage += l[k].coef;
				if (alone > most)
					most = alone;
			}
		} else if (c->nfrac == 0) {
			/* every coefficient 1: the walk's sum is nl, and
			 * the list is not read (saturate() reads it if
			 * the constraint is taken) */
			usage = nl;
		} else {
			for (k = 0; k < nl; k++)
				usage += l[k].coef;
		}
		c->left_Bps = c->cap_Bps;
		c->usage = usage;
		c->nfree = c->n;
		if (c->n == 0)
			continue;
		e = (struct hent){ level(c), CONS_KEY | m->cc.v[i] };
		if (prune && e.level > most * SPARE_MARGIN) {
			m->heap[--spare] = e;
			if (hent_less(&e, &m->spare_min))
				m->spare_min = e;
		} else {
			m->heap[n++] = e;
		}
	}
	m->spare0 = spare;
	m->nspare = total - spare;
	m->unfixed = m->cv.n;
	/* the least level first: every entry is at or above it */
	least = n ? level_bits(m->heap[0].level) : 0;
	for (i = 1; i < n; i++)
		if (level_bits(m->heap[i].level) < least)
			least = level_bits(m->heap[i].level);
	if (rq_start(m, least, total) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (rq_push(m, m->heap[i].level, m->heap[i].key) != 0)
			return -1;
	return 0;
}

/* The queue's least entry may now be a constraint set aside: drop those
 * with no variable left free (the queue would take them with no effect)
 * and put the others in the queue, as they would have been there all
 * along (an entry never taken keeps its first level). The least of them
 * is below everything queued: the queue starts again from its level,
 * with what it held. 0 or -1. */
static int spill(struct mm *m)
{
	uint32_t i, n = 0, b;
	struct hent *t = m->heap;	/* [0, spare0): free now */
	double last;

	/* what the queue holds, into t (at most spare0 entries: the
	 * constraints and bounds fill_start() queued, each once) */
	memcpy(&last, &m->rq_last, sizeof(last));
	if (m->has_hold)
		t[n++] = m->hold;
	for (i = 0; i < m->nrk; i++)
		t[n++] = (struct hent){ last, m->rk[i] };
	for (b = 1; b < RQ_BUCKETS; b++) {
		if (m->rbn[b] == 0)
			continue;
		memcpy(&t[n], m->rb[b], (size_t)m->rbn[b] * sizeof(*t));
		n += m->rbn[b];
	}
	if (rq_start(m, level_bits(m->spare_min.level), m->capheap) != 0)
		return -1;
	for (i = 0; i < n; i++)
		if (rq_push(m, t[i].level, t[i].key) != 0)
			return -1;
	for (i = m->spare0; i < m->spare0 + m->nspare; i++) {
		struct hent e = m->heap[i];

		if (m->cons[e.key & ~CONS_KEY].nfree > 0 &&
		    rq_push(m, e.level, e.key) != 0)
			return -1;
	}
	m->nspare = 0;
	m->spills++;
	return 0;
}

/* Take constraint c at level lvl: fix its unfixed variables there. */
static void saturate(struct mm *m, mm_id ci, double lvl)
{
	const struct cons *c = &m->cons[ci];
	const struct centry *l = c->list;
	uint32_t k, j, n = c->n;

	/* Each fix is three dependent misses (the variable's record, its
	 * elements, their constraints) that the next one cannot start
	 * before the fixed-flag branch: ask for the records and the
	 * element arrays a few entries ahead. Only for the variables
	 * still free: most of a list is fixed by the time its constraint
	 * saturates, and asking for a fixed one's elements loads its
	 * record for nothing (a miss the loop waits on). So the free ones
	 * are picked out first (the dense flags), a chunk at a time, and
	 * fixed in list order as before (one listed twice is fixed once:
	 * the flag is read again). */
	for (k = 0; k < n; k += SAT_CHUNK) {
		mm_id todo[SAT_CHUNK];
		uint32_t nt = 0, end = n - k < SAT_CHUNK ? n : k + SAT_CHUNK;

		for (j = k; j < end; j++) {
			todo[nt] = l[j].var;
			nt += !m->vfixed[l[j].var];
		}
		for (j = 0; j < nt && j < SAT_AHEAD; j++)
			__builtin_prefetch(&m->vref[todo[j]]);
		for (j = 0; j < nt; j++) {
			if (j + SAT_AHEAD < nt)
				__builtin_prefetch(&m->vref[todo[j + SAT_AHEAD]]);
			if (j + SAT_AHEAD / 2 < nt)
				__builtin_prefetch(
					m->vref[todo[j + SAT_AHEAD / 2]].elems);
			if (!m->vfixed[todo[j]])
				fix(m, todo[j], lvl);
		}
	}
}

/* 0 or -1 (out of memory). */
static int fill(struct mm *m)
{
	double lvl = 0;

	/* Once every variable is fixed the rest of the queue (constraints
	 * with nothing free, bounds of fixed variables) changes nothing:
	 * stop there. A component's flows often cross far more links than
	 * there are flows (a rank's sends to many GPUs), so this skips most
	 * of its entries. */
	while (m->unfixed > 0) {
		struct hent top;
		const struct cons *c;
		double now;

		if (m->nq > 0 && rq_top(m, &top) != 0)
			return -1;
		if (m->nspare > 0 &&
		    (m->nq == 0 || hent_less(&m->spare_min, &top))) {
			if (spill(m) != 0)
				return -1;
			continue;
		}
		if (m->nq == 0)
			break;
		if (!(top.key & CONS_KEY)) {
			/* A bound no higher than any level: it binds. */
			rq_pop(m);
			if (!m->vfixed[top.key])
				fix(m, top.key, top.level);
			continue;
		}
		c = &m->cons[top.key & ~CONS_KEY];
		if (c->nfree == 0) {
			rq_pop(m);
			continue;
		}
		/* its list, which saturate() reads if it is taken (a
		 * miss otherwise waited on there) */
		__builtin_prefetch(c->list);
		now = level(c);
		if (now != top.level) {
			/* Raised by fixes since it was keyed: re-key. (An
			 * ulp lower by rounding: the least still, held.) */
			rq_pop(m);
			if (level_bits(now) < level_bits(top.level)) {
				m->hold = (struct hent){ now, top.key };
				m->has_hold = 1;
				m->nq++;
			} else if (rq_push(m, now, top.key) != 0) {
				return -1;
			}
			continue;
		}
		rq_pop(m);
		if (now > lvl)
			lvl = now;
		saturate(m, top.key & ~CONS_KEY, lvl);
	}
	return 0;
}

long mm_solve(struct mm *m, mm_change_fn fn, void *arg)
{
	uint32_t i;
	long n;

	if (m->dying.n)
		mm_unlink_dying(m);
	if (m->local && (n = mm_local(m, fn, arg)) >= 0)
		return n;
	/* On failure the dirty and fresh lists stay, so a later solve
	 * redoes this one. */
	if (collect(m) != 0 || fill_start(m) != 0 || fill(m) != 0)
		return -1;
	mm_clean(m);
	for (i = 0; i < m->cv.n; i++) {
		struct var *x = &m->vars[m->cv.v[i]];

		x->pending = 0;
		/* fix()'s rate; 0 for one left unfixed (never, as every
		 * variable has a bound or a constraint in the queue, but the
		 * reset was 0) */
		x->new_Bps = m->vfixed[m->cv.v[i]] ? m->vnew[m->cv.v[i]] : 0;
		if (!mm_changed(x->rate_Bps, x->new_Bps))
			continue;
		if (fn)
			fn(m->cv.v[i], x->rate_Bps, x->new_Bps, x->data, arg);
		x->rate_Bps = x->new_Bps;
	}
	return (long)m->cv.n;
}
