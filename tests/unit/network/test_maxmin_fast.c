/*
 * test_maxmin_fast.c - the max-min solver's two shortcuts against the
 * solver without them: constraints set aside (a constraint whose level
 * exceeds every rate its variables could have alone cannot bind: the
 * same rates bit for bit), and batches settled without a re-solve (a
 * change that provably moves no other rate: the same rates to rounding).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

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

static mm_id var(struct mm *m, const mm_id *c, uint32_t n)
{
	static const double ones[4] = { 1, 1, 1, 1 };

	return mm_var_add(m, c, ones, n, 0, NULL);
}

/*
 * Links c1..c4 of 1, 10, 100 and 1000 B/s; A crosses c1, c2, c4 and B
 * crosses c3, c4. Alone, A gets 1 (c1) and B 100 (c3). Only A crosses
 * c2, and its 10 is looser than A's rate alone (1): it is left out of
 * the component (reach_var). c4's level, 1000/2 = 500, exceeds B's 100: it
 * is set aside. c1 fixes A at 1, c3 fixes B at 100 (c4 carries 101 of
 * its 1000) before anything reaches c4's 500: no spill at all.
 */
Test(net_mm_spare, a_looser_link_of_one_flow_is_left_out)
{
	struct mm *m = mm_new();
	mm_id c1, c2;

	mm_set_local(m, 0);
	c1 = mm_cons_add(m, 1);
	c2 = mm_cons_add(m, 10);
	mm_id c3 = mm_cons_add(m, 100), c4 = mm_cons_add(m, 1000);
	mm_id pa[3] = { c1, c2, c4 }, pb[2] = { c3, c4 };
	mm_id a = var(m, pa, 3), b = var(m, pb, 2);

	cr_assert_eq(mm_solve(m, NULL, NULL), 2);
	cr_assert_eq(mm_rate(m, a), 1.0);
	cr_assert_eq(mm_rate(m, b), 100.0);
	cr_assert_eq(mm_spills(m), 0);
	mm_free(m);
}

/*
 * Links p1, p2 of 1 B/s, s1 of 20, q1, q2 of 100 and s2 of 1000; A1
 * crosses p1, s1, A2 crosses p2, s1, B1 crosses q1, s2 and B2 crosses
 * q2, s2. Alone, the A's get 1 and the B's 100. s1's level, 20/2 = 10,
 * exceeds 1 and s2's, 1000/2 = 500, exceeds 100: both are set aside.
 * p1 and p2 fix the A's at 1; the next level, q1's 100, is above s1's
 * 10, so the set-aside ones are looked at once (one spill): s1 has
 * nothing free left and is dropped, s2 (both B's free) goes back in at
 * 500 and never binds: q1 and q2 fix the B's at 100 (s2 carries 200).
 */
Test(net_mm_spare, set_aside_constraints_come_back_once)
{
	struct mm *m = mm_new();
	mm_id p1, p2, s1, q1, q2, s2;

	mm_set_local(m, 0);
	p1 = mm_cons_add(m, 1);
	p2 = mm_cons_add(m, 1);
	s1 = mm_cons_add(m, 20);
	q1 = mm_cons_add(m, 100);
	q2 = mm_cons_add(m, 100);
	s2 = mm_cons_add(m, 1000);
	mm_id pa1[2] = { p1, s1 }, pa2[2] = { p2, s1 };
	mm_id pb1[2] = { q1, s2 }, pb2[2] = { q2, s2 };
	mm_id a1 = var(m, pa1, 2), a2 = var(m, pa2, 2);
	mm_id b1 = var(m, pb1, 2), b2 = var(m, pb2, 2);

	cr_assert_eq(mm_solve(m, NULL, NULL), 4);
	cr_assert_eq(mm_rate(m, a1), 1.0);
	cr_assert_eq(mm_rate(m, a2), 1.0);
	cr_assert_eq(mm_rate(m, b1), 100.0);
	cr_assert_eq(mm_rate(m, b2), 100.0);
	cr_assert_eq(mm_spills(m), 1);
	mm_free(m);
}

/* The same random system in two solvers, the second without the
 * shortcut under test (SPARE: setting aside, LOCAL: settling batches);
 * flows over 1-40 links (a rank's sends to many GPUs), capacities over
 * three orders of magnitude, coefficients 1, 2, 1/3 or 1/32, every
 * fourth flow bounded; 300 changes, solved after every one or, one time
 * in four, after the next too; every rate compared: bit for bit (SPARE)
 * or within 1e-12 relative (LOCAL; *same counts the bit-identical). */
enum shortcut { SPARE, LOCAL };

static void run(uint32_t nflows, uint32_t nlinks, uint64_t seed,
		enum shortcut what, uint64_t *used, uint64_t *same,
		uint64_t *total)
{
	static const double coefs[4] = { 1.0, 2.0, 1.0 / 3.0, 1.0 / 32.0 };
	struct rng r = { seed };
	struct mm *m[2] = { mm_new(), mm_new() };
	mm_id *v[2];
	uint32_t i, k, step;

	cr_assert(m[0] && m[1]);
	if (what == SPARE) {
		mm_set_local(m[0], 0);
		mm_set_local(m[1], 0);
		mm_set_prune(m[1], 0);
	} else {
		mm_set_local(m[1], 0);
	}
	v[0] = calloc(nflows, sizeof(mm_id));
	v[1] = calloc(nflows, sizeof(mm_id));
	cr_assert(v[0] && v[1]);
	for (i = 0; i < nlinks; i++) {
		double cap = 1e9 * (1 + rnd(&r, 1000));

		cr_assert_eq(mm_cons_add(m[0], cap), i);
		cr_assert_eq(mm_cons_add(m[1], cap), i);
	}
	for (i = 0; i < nflows; i++)
		v[0][i] = v[1][i] = MM_NONE;
	for (step = 0; step < nflows + 300; step++) {
		uint32_t f = step < nflows ? step : rnd(&r, nflows);

		if (v[0][f] != MM_NONE) {
			mm_var_remove(m[0], v[0][f]);
			mm_var_remove(m[1], v[1][f]);
			v[0][f] = v[1][f] = MM_NONE;
			if (rnd(&r, 3) == 0)
				goto solve;
		}
		{
			mm_id path[40];
			double coef[40], bound = 0;
			uint32_t len = 1 + rnd(&r, 40), j;

			if (len > nlinks)
				len = nlinks;
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
			for (k = 0; k < 2; k++) {
				v[k][f] = mm_var_add(m[k], path, coef, len,
						     bound, NULL);
				cr_assert_neq(v[k][f], MM_NONE);
			}
		}
solve:
		if (step + 1 < nflows || rnd(&r, 4) == 0)
			continue;
		cr_assert_geq(mm_solve(m[0], NULL, NULL), 0);
		cr_assert_geq(mm_solve(m[1], NULL, NULL), 0);
		for (i = 0; i < nflows; i++) {
			double x, y;

			if (v[0][i] == MM_NONE)
				continue;
			x = mm_rate(m[0], v[0][i]);
			y = mm_rate(m[1], v[1][i]);
			if (what == SPARE)
				cr_assert(memcmp(&x, &y, sizeof(x)) == 0,
					  "flow %u: %.17g B/s, without setting "
					  "aside %.17g B/s", i, x, y);
			else
				cr_assert(fabs(x - y) <= 1e-12 * fmax(x, y),
					  "flow %u: %.17g B/s, re-solved "
					  "%.17g B/s", i, x, y);
			*same += memcmp(&x, &y, sizeof(x)) == 0;
			(*total)++;
		}
	}
	if (what == SPARE) {
		*used += mm_spills(m[0]);
		cr_assert_eq(mm_spills(m[1]), 0);
	} else {
		*used += mm_locals(m[0]);
		cr_assert_eq(mm_locals(m[1]), 0);
	}
	mm_free(m[0]);
	mm_free(m[1]);
	free(v[0]);
	free(v[1]);
}

static void run_all(enum shortcut what, uint64_t *used, uint64_t *same,
		    uint64_t *total)
{
	static const uint32_t flows[] = { 4, 20, 100, 400 };
	size_t i;

	for (i = 0; i < sizeof(flows) / sizeof(flows[0]); i++) {
		run(flows[i], 8, 0x2545f4914f6cdd1dull + i, what, used, same,
		    total);
		run(flows[i], flows[i] * 4, 0x9e3779b97f4a7c15ull + i, what,
		    used, same, total);
	}
}

Test(net_mm_spare, rates_equal_the_full_heap_bit_for_bit)
{
	uint64_t spills = 0, same = 0, total = 0;

	run_all(SPARE, &spills, &same, &total);
	cr_assert_eq(same, total);
	/* The spill path ran too, not only the heap of kept ones. */
	cr_assert_gt(spills, 0);
}

/*
 * One link c1 of 10 B/s, one c2 of 1 B/s, one c3 of 100 B/s.
 *   A on c1, bound 4: alone it gets its bound (settled: 1).
 *   B on c1: c1 has 10 - 4 = 6 left and A, the only one there, is not
 *     faster than 6: B = 6 (settled: 2).
 *   E on c1 and c2: c1 has nothing left, so a re-solve: c2 fixes E at
 *     1, A's bound 4 comes next (c1 then at (10-1)/2 = 4.5), then c1
 *     gives B 10 - 1 - 4 = 5.
 *   F on c3 alone: 100 (settled: 3); F removed: c3 is saturated but F
 *     was the fastest there (the only one), nothing moves (settled: 4).
 *   A removed: c1 is saturated and B (5) is faster than A (4): B may be
 *     bound there, a re-solve: E stays 1 (c2), B gets 10 - 1 = 9.
 */
Test(net_mm_local, settled_batches_and_the_ones_that_are_not)
{
	struct mm *m = mm_new();
	mm_id c1 = mm_cons_add(m, 10), c2 = mm_cons_add(m, 1);
	mm_id c3 = mm_cons_add(m, 100), pe[2] = { c1, c2 };
	double one[2] = { 1, 1 };
	mm_id a, b, e, f;

	a = mm_var_add(m, &c1, one, 1, 4, NULL);
	mm_solve(m, NULL, NULL);
	b = var(m, &c1, 1);
	mm_solve(m, NULL, NULL);
	cr_assert_eq(mm_rate(m, a), 4.0);
	cr_assert_eq(mm_rate(m, b), 6.0);
	cr_assert_eq(mm_locals(m), 2);
	e = mm_var_add(m, pe, one, 2, 0, NULL);
	mm_solve(m, NULL, NULL);
	cr_assert_eq(mm_locals(m), 2);
	cr_assert_eq(mm_rate(m, e), 1.0);
	cr_assert_eq(mm_rate(m, a), 4.0);
	cr_assert_eq(mm_rate(m, b), 5.0);
	f = var(m, &c3, 1);
	mm_solve(m, NULL, NULL);
	cr_assert_eq(mm_rate(m, f), 100.0);
	mm_var_remove(m, f);
	cr_assert_eq(mm_solve(m, NULL, NULL), 0);
	cr_assert_eq(mm_locals(m), 4);
	cr_assert_eq(mm_rate(m, b), 5.0);
	mm_var_remove(m, a);
	mm_solve(m, NULL, NULL);
	cr_assert_eq(mm_locals(m), 4);
	cr_assert_eq(mm_rate(m, e), 1.0);
	cr_assert_eq(mm_rate(m, b), 9.0);
	mm_free(m);
}

Test(net_mm_local, rates_equal_the_re_solve_to_rounding)
{
	uint64_t locals = 0, same = 0, total = 0;

	run_all(LOCAL, &locals, &same, &total);
	cr_log_info("settled locally: %llu solves; %llu of %llu rates bit "
		    "for bit", (unsigned long long)locals,
		    (unsigned long long)same, (unsigned long long)total);
	cr_assert_gt(locals, 0);
}

/* The dense idle check a replay's start reads: one variable on c1 makes
 * c1 busy and leaves c2 idle; removing it frees c1 again (the count
 * follows additions and removals, including a list's last entry moving
 * into a removed one's place). */
Test(net_mm_local, idle_check_follows_the_lists)
{
	struct mm *m = mm_new();
	mm_id c1 = mm_cons_add(m, 1), c2 = mm_cons_add(m, 1);
	mm_id both[2] = { c1, c2 };
	mm_id a = var(m, &c1, 1), b = var(m, &c1, 1);

	cr_assert(mm_cons_idle(m, &c2, 1));
	cr_assert_not(mm_cons_idle(m, both, 2));
	mm_var_remove(m, a);
	cr_assert_not(mm_cons_idle(m, &c1, 1));
	cr_assert_eq(mm_cons_vars(m, c1), 1);
	mm_var_remove(m, b);
	cr_assert(mm_cons_idle(m, both, 2));
	mm_free(m);
}
