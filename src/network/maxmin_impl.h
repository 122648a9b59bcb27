/*
 * maxmin_impl.h - the max-min solver's state, shared by maxmin.c (changes,
 * components, progressive filling) and maxmin_local.c (changes settled
 * without a re-solve). Not for other files: maxmin.h is the interface.
 */
#ifndef LLMSIM_NETWORK_MAXMIN_IMPL_H
#define LLMSIM_NETWORK_MAXMIN_IMPL_H

#include <math.h>
#include <stdint.h>

#include "maxmin.h"

#define ID_LIMIT 0x7fffffffu	/* ids below this: the heap key's top bit */
#define CONS_KEY 0x80000000u	/* heap key of constraint c: CONS_KEY | c */
#define PEND_NEW 1
#define PEND_LOCAL 2
#define LOCAL_MAX_FRESH 8	/* mm_local(): at most these new variables, */
#define LOCAL_MAX_ELEMS 64	/* ... each (and each removed one) on at
				 * most these constraints, */
#define LOCAL_MAX_WALK 4096	/* ... and these list entries walked */
#define LOCAL_SLACK 1e-3	/* a constraint with less than this share of
				 * its capacity left counts as saturated (and
				 * the residual's rounding, ~1e-16 n of the
				 * capacity, stays ~1e-13 n of the rate) */
#define LOCAL_TIE 1e-9	/* a rate within this share below another's
				 * ties it: a locally settled rate is a
				 * residual, an ulp or two off the rate a
				 * solve gives its equals (a solve keeps a
				 * change under 1e-12), so the exact test
				 * could take a tied sharer for a slower one
				 * and settle its departure without it */
#define SPARE_MARGIN (1 + 1e-6)	/* set aside past this times a rate alone */

/* One constraint a variable uses (owned by the variable). */
struct elem {
	mm_id cons;
	uint32_t pos;		/* index in the constraint's list */
	double coef;		/* a_ij */
};

/* One variable on a constraint's list. */
struct centry {
	mm_id var;
	uint32_t ei;		/* index in the variable's elems */
	double coef;		/* a_ij, a copy */
};

#define VREF_LIVE 1u	/* vref.flags: the record's live */
#define VREF_BOUND 2u	/* vref.flags: bound_Bps > 0 */

/* Per variable, dense: what collect() and fix() read of it, so that
 * they do not load the variable's record, a line of its own, read or
 * written again only where the solve ends (mm_solve()) and where a
 * constraint's test needs its rate alone or bound. A copy of the
 * record's elems and nelems and of whether it is live and bounded; set
 * by mm_var_add(), flags cleared with live. */
struct vref {
	const struct elem *elems;
	uint32_t nelems;
	uint32_t flags;		/* VREF_LIVE | VREF_BOUND */
};

struct var {
	struct elem *elems;	/* owned; nelems of them, room for capelems
				 * (kept with a free slot for its next
				 * variable) */
	uint32_t nelems, capelems;
	double bound_Bps;	/* B/s; 0 = none */
	double alone_Bps;	/* B/s, its rate alone: min(bound, C_i/a_ij) */
	double rate_Bps;	/* B/s, last solution */
	double new_Bps;		/* B/s, being solved */
	void *data;
	mm_id next_free;
	uint8_t live;
	uint8_t pending;	/* PEND_NEW until solved (or preset);
				 * PEND_LOCAL while mm_local() holds its
				 * rate in new_Bps */
};

/* A constraint: one cache line (the array is aligned to CONS_ALIGN). A
 * list of one entry is the constraint's own (one): a flow alone on a
 * link, most of a long flow's links, is added and removed without
 * touching another line. */
struct cons {
	double cap_Bps;		/* C_i */
	struct centry *list;	/* live variables using it: &one while
				 * capn is 1, else owned */
	uint32_t n, capn;
	struct centry one;	/* the list while capn is 1 */
	double left_Bps;	/* C_i - F_i while solving */
	double usage;		/* U_i while solving */
	uint32_t nfree;		/* unfixed variables while solving */
	uint32_t nfrac;		/* entries of its list whose coefficient
				 * is not 1 (none: the list's coefficients
				 * sum to n exactly, in any order) */
};

#define CONS_ALIGN 64		/* B, a cache line */
_Static_assert(sizeof(struct cons) == CONS_ALIGN, "a constraint a line");
_Static_assert(sizeof(struct var) == CONS_ALIGN, "a variable a line");

#define RQ_BUCKETS 65	/* the queue's buckets: one per bit of a level */

struct vec {
	mm_id *v;
	uint32_t n, cap;
};

/* A heap entry: a constraint at a level no higher than its level now,
 * or a bounded variable at its bound. */
struct hent {
	double level;		/* B/s */
	uint32_t key;		/* variable id, or CONS_KEY | constraint id */
};

struct mm {
	struct var *vars;	/* aligned to CONS_ALIGN in vars_mem */
	void *vars_mem;
	/* Per variable, dense beside vars (the walks over a constraint's
	 * list test them for every entry; a variable's record is a line of
	 * its own, read once per solve where they are set): */
	uint32_t *vmark;	/* epoch of the last walk that reached it */
	uint8_t *vfixed;	/* fixed in the filling under way */
	struct vref *vref;	/* a live variable's elements (fix()) */
	double *vnew;		/* B/s, its rate in the filling under
				 * way (new_Bps once it is done) */
	uint32_t nvars, capvars, live;
	mm_id free_var;
	struct cons *cons;	/* aligned to CONS_ALIGN in cons_mem */
	void *cons_mem;
	uint32_t *busy;		/* per constraint: its cons.n, kept dense
				 * for mm_cons_idle() */
	uint32_t *cmark;	/* per constraint: epoch of the last walk
				 * that reached it (dense, as vmark) */
	uint8_t *cdirty;	/* per constraint: in the dirty list */
	uint32_t *cdying;	/* per constraint: entries of variables in
				 * the dying list still on its list */
	uint32_t ncons, capcons;
	struct vec dirty;	/* dirty constraints */
	struct vec fresh;	/* variables added since the last solve */
	struct vec dying;	/* variables removed but not yet unlinked
				 * (mm_var_remove, maxmin.c), in order */
	struct vec cv, cc;	/* the component being solved */
	struct vec cb;		/* its variables with a bound, in cv order */
	struct hent *heap;	/* fill_start()'s entries (and the ones set
				 * aside at its end) */
	uint32_t capheap;
	uint32_t spare0, nspare;	/* set aside: heap[spare0..+nspare) */
	struct hent spare_min;	/* the least of them */
	/* The queue of levels and bounds (a radix heap, maxmin.c): */
	struct hent *rb[RQ_BUCKETS];	/* bucket b >= 1: entries whose
					 * level's bits first differ from
					 * rq_last's at bit b - 1 */
	uint32_t rbn[RQ_BUCKETS], rbcap[RQ_BUCKETS];
	uint64_t rbmin[RQ_BUCKETS];	/* bits of the least level in each
					 * bucket not empty */
	uint64_t rq_mask;	/* bit b - 1 set: bucket b is not empty */
	uint64_t rq_last;	/* bits of the level last taken */
	uint32_t *rk;		/* bucket 0: keys at level rq_last, a
				 * binary heap */
	uint32_t nrk, caprk;
	struct hent hold;	/* the least entry, below rq_last (a level
				 * rounding lowered); valid when has_hold */
	int has_hold;
	uint32_t nq;		/* entries in the queue, hold included */
	int prune;		/* set constraints aside (the default) */
	int local;		/* settle small batches (the default) */
	int need_solve;		/* the batch needs a re-solve */
	int batch;		/* unlink removed variables in batches (the
				 * default) */
	uint64_t spills, locals, cleared;
	uint32_t unfixed;	/* variables of the component not fixed yet */
	uint32_t epoch;
};

/* Double a list's room (maxmin_build.c); -1 when out of memory. */
int mm_vec_grow(struct vec *v);

/* Inline: the walks push an id per element they reach. */
static inline int mm_vec_push(struct vec *v, mm_id x)
{
	if (v->n == v->cap && mm_vec_grow(v) != 0)
		return -1;
	v->v[v->n++] = x;
	return 0;
}

/* Unlink the variables removed since the last call from their
 * constraints' lists (maxmin_build.c). */
void mm_unlink_dying(struct mm *m);

/* fmax(x, y) where neither is -0: the larger, or the one that is not
 * NaN. libm's fmax is a call at -O2 (it must order -0 below +0, which
 * no single instruction does); mm_changed() gives it fabs() values,
 * never -0, for every variable of every re-solve. Same value. */
static inline double mm_fmax_nz(double x, double y)
{
	return x > y || y != y ? x : y;
}

/* Whether a rate moved enough to report (relative 1e-12). */
static inline int mm_changed(double a, double b)
{
	return fabs(a - b) > 1e-12 * mm_fmax_nz(fabs(a), fabs(b));
}

/* Forget the batch of changes (dirty constraints, new variables). */
static inline void mm_clean(struct mm *m)
{
	uint32_t i;

	for (i = 0; i < m->dirty.n; i++)
		m->cdirty[m->dirty.v[i]] = 0;
	m->dirty.n = m->fresh.n = 0;
	m->need_solve = 0;
}

/* Settle the batch of changes without a re-solve when it provably moves
 * no other rate (maxmin_local.c); the variables solved, or -1 when it
 * needs a re-solve (nothing changed then). */
long mm_local(struct mm *m, mm_change_fn fn, void *arg);

/* Before variable v is removed: whether the batch still needs no
 * re-solve (else m->need_solve is set). */
void mm_local_remove(struct mm *m, mm_id v);

#endif
