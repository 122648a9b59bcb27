/*
 * test_maxmin_ref.c - the max-min solver against the solver it replaced
 * (maxmin_ref.c, the exact heap of levels): the same random systems, the
 * same sequence of changes, the same rates. Rates must agree within
 * 1e-9 relative (two constraints tied within rounding may be taken in
 * the other order), and are counted bit for bit: on these systems all
 * of them are.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "maxmin_ref.h"
#include "network/maxmin.h"

struct rng {
	uint64_t s;
};

static uint32_t rnd(struct rng *r, uint32_t n)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return (uint32_t)(r->s % n);
}

/* Both solvers fed the same system. */
struct pair {
	struct mm *m;
	struct mmref *ref;
	mm_id *var, *rvar;	/* per flow slot: ids in each, MM_NONE = none */
	uint32_t nflows, nlinks;
};

/* A flow over 1-6 distinct links, coefficients 1, 2 or 1/3 (a ring
 * crossing a link twice, a flow sprayed over three uplinks), every
 * fourth one bounded near the fair share. */
static void add(struct pair *p, struct rng *r, uint32_t slot)
{
	static const double coefs[3] = { 1.0, 2.0, 1.0 / 3.0 };
	mm_id path[6];
	double coef[6], bound = 0;
	uint32_t len = 1 + rnd(r, 6), i, k;

	if (len > p->nlinks)
		len = p->nlinks;
	for (i = 0; i < len; i++) {
		do {
			path[i] = rnd(r, p->nlinks);
			for (k = 0; k < i && path[k] != path[i]; k++)
				;
		} while (k < i);
		coef[i] = coefs[rnd(r, 3)];
	}
	if (rnd(r, 4) == 0)
		bound = 1e9 * (1 + rnd(r, 20));
	p->var[slot] = mm_var_add(p->m, path, coef, len, bound, NULL);
	p->rvar[slot] = mmref_var_add(p->ref, path, coef, len, bound, NULL);
	cr_assert_neq(p->var[slot], MM_NONE);
	cr_assert_neq(p->rvar[slot], MM_NONE);
}

/* Solve both and compare every live flow; counts bit-identical rates. */
static void compare(struct pair *p, uint64_t *same, uint64_t *total)
{
	uint32_t i;

	cr_assert_geq(mm_solve(p->m, NULL, NULL), 0);
	cr_assert_geq(mmref_solve(p->ref, NULL, NULL), 0);
	for (i = 0; i < p->nflows; i++) {
		double a, b;

		if (p->var[i] == MM_NONE)
			continue;
		a = mm_rate(p->m, p->var[i]);
		b = mmref_rate(p->ref, p->rvar[i]);
		cr_assert(fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b)),
			  "flow %u: %.17g B/s, the reference %.17g B/s", i, a, b);
		*same += memcmp(&a, &b, sizeof(a)) == 0;
		(*total)++;
	}
}

/* n flows on n/2 links (link capacities 50..99 GB/s, or all 100 GB/s
 * when tied, which makes many levels equal), then 200 changes of one
 * flow each, both solvers compared after every solve. */
static void run(uint32_t n, int tied, uint64_t seed, uint64_t *same,
		uint64_t *total)
{
	struct rng r = { seed };
	struct pair p = { mm_new(), mmref_new(), NULL, NULL, n, n / 2 };
	uint32_t i, step;

	if (p.nlinks < 4)
		p.nlinks = 4;
	p.var = calloc(n, sizeof(*p.var));
	p.rvar = calloc(n, sizeof(*p.rvar));
	cr_assert(p.m && p.ref && p.var && p.rvar);
	for (i = 0; i < p.nlinks; i++) {
		double cap = tied ? 100e9 : 50e9 + 1e9 * rnd(&r, 50);

		cr_assert_eq(mm_cons_add(p.m, cap), i);
		cr_assert_eq(mmref_cons_add(p.ref, cap), i);
	}
	for (i = 0; i < n; i++)
		add(&p, &r, i);
	compare(&p, same, total);
	for (step = 0; step < 200; step++) {
		uint32_t k = rnd(&r, n);

		if (p.var[k] == MM_NONE) {
			add(&p, &r, k);
		} else {
			mm_var_remove(p.m, p.var[k]);
			mmref_var_remove(p.ref, p.rvar[k]);
			p.var[k] = p.rvar[k] = MM_NONE;
			if (rnd(&r, 3) != 0)
				add(&p, &r, k);
		}
		compare(&p, same, total);
	}
	mm_free(p.m);
	mmref_free(p.ref);
	free(p.var);
	free(p.rvar);
}

Test(net_mm_ref, matches_the_exact_heap_solver)
{
	static const uint32_t sizes[] = { 3, 10, 100, 1000 };
	uint64_t same = 0, total = 0;
	size_t i;
	int tied;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (tied = 0; tied <= 1; tied++)
			run(sizes[i], tied, 0x9e3779b97f4a7c15ull + i, &same,
			    &total);
	cr_log_info("max-min vs reference: %llu of %llu rates bit for bit",
		    (unsigned long long)same, (unsigned long long)total);
	/* Within 1e-9 is the contract; nearly all should be identical (a
	 * solver that got the order of fills wrong would differ in most). */
	cr_assert_geq(same, total - total / 100);
}

/* A link more flows share than saturate() picks free ones from at a time
 * (64 list entries), some of them fixed on their own links first: the
 * hub (1,000 GB/s) carries 200 flows; flow i also crosses side link
 * i % 50, of (4 + k) GB/s for side link k (4 flows each: a share of
 * 1 + k/4 GB/s). Filling: side links 0..20 (shares 1..6 GB/s) saturate
 * below the hub's level and fix their 84 flows there; the hub then
 * saturates at (1000 - 4 (21 + 210/4)) / 116 = 706/116 = 6.0862 GB/s
 * (side link 21's share, 6.25, is above it) and fixes the other 116,
 * which lie in all four chunks of its list between fixed ones. */
Test(net_mm_ref, a_link_of_more_flows_than_a_chunk)
{
	enum { FLOWS = 200, SIDES = 50 };
	struct mm *m = mm_new();
	struct mmref *ref = mmref_new();
	mm_id var[FLOWS], rvar[FLOWS];
	uint32_t i, at_hub = 0;

	cr_assert(m && ref);
	cr_assert_eq(mm_cons_add(m, 1000e9), 0);
	cr_assert_eq(mmref_cons_add(ref, 1000e9), 0);
	for (i = 0; i < SIDES; i++) {
		cr_assert_eq(mm_cons_add(m, (4 + i) * 1e9), 1 + i);
		cr_assert_eq(mmref_cons_add(ref, (4 + i) * 1e9), 1 + i);
	}
	for (i = 0; i < FLOWS; i++) {
		const mm_id path[2] = { 0, 1 + i % SIDES };
		const double coef[2] = { 1, 1 };

		var[i] = mm_var_add(m, path, coef, 2, 0, NULL);
		rvar[i] = mmref_var_add(ref, path, coef, 2, 0, NULL);
		cr_assert(var[i] != MM_NONE && rvar[i] != MM_NONE);
	}
	cr_assert_eq(mm_solve(m, NULL, NULL), FLOWS);
	cr_assert_geq(mmref_solve(ref, NULL, NULL), 0);
	for (i = 0; i < FLOWS; i++) {
		double a = mm_rate(m, var[i]), b = mmref_rate(ref, rvar[i]);
		uint32_t k = i % SIDES;
		double want = k <= 20 ? (1 + k / 4.0) * 1e9 : 706e9 / 116;

		cr_assert(memcmp(&a, &b, sizeof(a)) == 0,
			  "flow %u: %.17g B/s, the reference %.17g B/s", i, a, b);
		cr_assert(fabs(a - want) <= 1e-12 * want,
			  "flow %u: %.17g B/s, want %.17g", i, a, want);
		at_hub += k > 20;
	}
	cr_assert_eq(at_hub, 116);
	mm_free(m);
	mmref_free(ref);
}
