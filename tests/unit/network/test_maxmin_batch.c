/*
 * test_maxmin_batch.c - removals unlinked in a batch (mm_set_batch) against
 * removals unlinked one by one: the same lists, free slots and rates, bit
 * for bit.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "network/maxmin.h"

/* The three flows below on a new solver with local settling off,
 * solved: links in c[0..2], flows A, B, C in v[0..2]. */
static struct mm *three_flows(mm_id c[3], mm_id v[3])
{
	static const double one[2] = { 1, 1 };
	struct mm *m = mm_new();

	cr_assert(m);
	mm_set_local(m, 0);
	c[0] = mm_cons_add(m, 10);
	c[1] = mm_cons_add(m, 20);
	c[2] = mm_cons_add(m, 30);
	{
		mm_id pa[2] = { c[0], c[2] }, pb[2] = { c[1], c[2] };
		mm_id pc[1] = { c[2] };

		v[0] = mm_var_add(m, pa, one, 2, 0, NULL);
		v[1] = mm_var_add(m, pb, one, 2, 0, NULL);
		v[2] = mm_var_add(m, pc, one, 1, 0, NULL);
	}
	cr_assert_eq(mm_solve(m, NULL, NULL), 3);
	return m;
}

/*
 * c0 10 B/s, c1 20 B/s, c2 30 B/s; A crosses c0 and c2, B c1 and c2, C
 * c2 alone. The filling: c0's level 10/1 and c2's 30/3 tie at 10, c0
 * (the lower id) fixes A at 10, then c2 has 20 left for B and C: 10 each
 * (c1's 20 never binds). Without local settling every removal waits for
 * the next solve. Removing A and C together: c0 keeps no variable, so it
 * is emptied at once (mm_cleared 1); c2 keeps B, so A and C are unlinked
 * from it one by one. B alone then gets min(20, 30) = 20.
 */
Test(net_mm_batch, a_constraint_all_of_whose_variables_go_is_emptied_at_once)
{
	mm_id cs[3], v[3];
	struct mm *m = three_flows(cs, v);
	mm_id c0 = cs[0], c2 = cs[2], a = v[0], b = v[1], c = v[2];

	cr_assert_eq(mm_rate(m, a), 10.0);
	cr_assert_eq(mm_rate(m, b), 10.0);
	cr_assert_eq(mm_rate(m, c), 10.0);
	mm_var_remove(m, a);
	mm_var_remove(m, c);
	/* counted before the batch is unlinked */
	cr_assert_eq(mm_cons_vars(m, c0), 0);
	cr_assert_eq(mm_cons_vars(m, c2), 1);
	cr_assert_eq(mm_vars(m), 1);
	cr_assert_eq(mm_solve(m, NULL, NULL), 1);
	cr_assert_eq(mm_cleared(m), 1);
	cr_assert_eq(mm_rate(m, b), 20.0);
	cr_assert_eq(mm_cons_vars(m, c2), 1);
	mm_free(m);
}

/*
 * The same three flows, solved with local settling off; A and C removed
 * while it is off, then settling turned on before the solve: B must get
 * min(c1 20, c2 30) = 20, not keep its 10 (mm_local() took the dirty
 * constraints as settled and dropped them).
 */
Test(net_mm_batch, turning_local_settling_on_keeps_pending_removals)
{
	mm_id cs[3], v[3];
	struct mm *m = three_flows(cs, v);
	mm_id c2 = cs[2], a = v[0], b = v[1], c = v[2];

	cr_assert_eq(mm_rate(m, b), 10.0);
	mm_var_remove(m, a);
	mm_var_remove(m, c);
	mm_set_local(m, 1);
	cr_assert(mm_solve(m, NULL, NULL) >= 0);
	cr_assert_eq(mm_rate(m, b), 20.0);
	cr_assert_eq(mm_cons_vars(m, c2), 1);
	mm_free(m);
}

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

#define MAXLEN 80

/* nflows flows on nlinks links (capacities 1..1000 GB/s), changed 400
 * times: a flow removed and another started, or, one time in three,
 * several flows removed before the next solve (the flows of a
 * collective ending together); a path is 1-12 links or, one time in
 * four, 65-80 (past the local settling's 64, so its removal needs a
 * re-solve, like an all-to-all's flow). m[1] unlinks one by one. After
 * every solve each flow's rate and each link's count must be the same,
 * bit for bit, and so must the ids new variables get. Returns how many
 * constraints the batch emptied at once. */
static uint64_t run(uint32_t nflows, uint32_t nlinks, uint64_t seed,
		    int local)
{
	static const double coefs[4] = { 1.0, 2.0, 1.0 / 3.0, 1.0 / 32.0 };
	struct rng r = { seed };
	struct mm *m[2] = { mm_new(), mm_new() };
	mm_id v[2][64];
	uint32_t i, k, step;
	uint64_t cleared;

	cr_assert(m[0] && m[1] && nflows <= 64 && nlinks >= MAXLEN);
	for (k = 0; k < 2; k++)
		mm_set_local(m[k], local);
	mm_set_batch(m[1], 0);
	for (i = 0; i < nlinks; i++) {
		double cap = 1e9 * (1 + rnd(&r, 1000));

		cr_assert_eq(mm_cons_add(m[0], cap), i);
		cr_assert_eq(mm_cons_add(m[1], cap), i);
	}
	for (i = 0; i < nflows; i++)
		v[0][i] = v[1][i] = MM_NONE;
	for (step = 0; step < nflows + 400; step++) {
		uint32_t f = step < nflows ? step : rnd(&r, nflows);
		uint32_t nrm = rnd(&r, 3) == 0 ? 1 + rnd(&r, nflows) : 1;

		for (i = 0; i < nrm; i++, f = rnd(&r, nflows)) {
			if (v[0][f] == MM_NONE)
				continue;
			mm_var_remove(m[0], v[0][f]);
			mm_var_remove(m[1], v[1][f]);
			v[0][f] = v[1][f] = MM_NONE;
		}
		if (nrm > 1)
			goto solve;
		{
			mm_id path[MAXLEN];
			double coef[MAXLEN], bound = 0;
			uint32_t len = rnd(&r, 4) == 0 ? 65 + rnd(&r, 16) :
							 1 + rnd(&r, 12), j;

			for (j = 0; j < len; j++) {
				do {
					path[j] = rnd(&r, nlinks);
					for (k = 0; k < j && path[k] != path[j];
					     k++)
						;
				} while (k < j);
				coef[j] = coefs[rnd(&r, 4)];
			}
			if (rnd(&r, 4) == 0)
				bound = 1e9 * (1 + rnd(&r, 500));
			if (v[0][f] != MM_NONE) {
				mm_var_remove(m[0], v[0][f]);
				mm_var_remove(m[1], v[1][f]);
			}
			for (k = 0; k < 2; k++) {
				v[k][f] = mm_var_add(m[k], path, coef, len,
						     bound, NULL);
				cr_assert_neq(v[k][f], MM_NONE);
			}
			cr_assert_eq(v[0][f], v[1][f]);
		}
solve:
		if (step + 1 < nflows || rnd(&r, 3) == 0)
			continue;
		cr_assert_geq(mm_solve(m[0], NULL, NULL), 0);
		cr_assert_geq(mm_solve(m[1], NULL, NULL), 0);
		for (i = 0; i < nflows; i++) {
			double x, y;

			if (v[0][i] == MM_NONE)
				continue;
			x = mm_rate(m[0], v[0][i]);
			y = mm_rate(m[1], v[1][i]);
			cr_assert(memcmp(&x, &y, sizeof(x)) == 0,
				  "flow %u: %.17g B/s, unlinked one by one "
				  "%.17g B/s", i, x, y);
		}
		for (i = 0; i < nlinks; i++)
			cr_assert_eq(mm_cons_vars(m[0], i),
				     mm_cons_vars(m[1], i));
		cr_assert_eq(mm_vars(m[0]), mm_vars(m[1]));
	}
	cleared = mm_cleared(m[0]);
	cr_assert_eq(mm_cleared(m[1]), 0);
	mm_free(m[0]);
	mm_free(m[1]);
	return cleared;
}

Test(net_mm_batch, batched_removals_give_the_one_by_one_rates)
{
	uint64_t seed, cleared = 0;

	for (seed = 1; seed <= 6; seed++) {
		cleared += run(24, 120, seed * 7919, 1);
		cleared += run(40, 90, seed * 104729, 0);
	}
	/* the fast path ran */
	cr_assert_gt(cleared, 100);
}
