/*
 * test_maxmin_adopt.c - variables added as one batch, list by list
 * (mm_var_add_batch, maxmin_batch.c), against the same variables added
 * one by one (mm_var_add): the same ids, list lengths and rates bit for
 * bit after every solve, through removals and later additions that
 * read the lists' order (removal moves a list's last entry into the
 * hole, so a list in another order would give other positions, and the
 * solver's sums another rounding).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
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

#define NLINKS 40
#define NFLOWS 24
#define MAXLEN 12

/* A plan: NFLOWS flows, each over ascending distinct links with
 * fractional coefficients, and its transposed index (per link, its
 * (flow, element) pairs in flow order). */
struct tplan {
	mm_id cons[NFLOWS][MAXLEN];
	double coef[NFLOWS][MAXLEN];
	uint32_t n[NFLOWS];
	mm_id tcons[NLINKS];
	uint32_t toff[NLINKS + 1], nt;
	struct mm_tpair tp[NFLOWS * MAXLEN];
};

static void make_plan(struct tplan *p, struct rng *r)
{
	static const double coefs[4] = { 1.0, 0.3, 1.0 / 3.0, 0.7 };
	uint32_t f, i, l, t = 0;

	for (f = 0; f < NFLOWS; f++) {
		p->n[f] = 0;
		for (l = 0; l < NLINKS; l++)
			if (rnd(r, 4) == 0 && p->n[f] < MAXLEN) {
				p->cons[f][p->n[f]] = l;
				p->coef[f][p->n[f]++] = coefs[rnd(r, 4)];
			}
		if (p->n[f] == 0) {
			p->cons[f][0] = rnd(r, NLINKS);
			p->coef[f][p->n[f]++] = 1.0;
		}
	}
	p->nt = 0;
	for (l = 0; l < NLINKS; l++) {
		uint32_t start = t;

		for (f = 0; f < NFLOWS; f++)
			for (i = 0; i < p->n[f]; i++)
				if (p->cons[f][i] == l)
					p->tp[t++] = (struct mm_tpair){ f, i };
		if (t > start) {
			p->tcons[p->nt] = l;
			p->toff[p->nt++] = start;
		}
	}
	p->toff[p->nt] = t;
}

static void same(struct mm *a, struct mm *b, const mm_id *va,
		 const mm_id *vb, const int *live)
{
	uint32_t f, l;

	cr_assert(mm_solve(a, NULL, NULL) >= 0);
	cr_assert(mm_solve(b, NULL, NULL) >= 0);
	for (f = 0; f < NFLOWS; f++)
		if (live[f]) {
			double ra = mm_rate(a, va[f]), rb = mm_rate(b, vb[f]);

			cr_assert(memcmp(&ra, &rb, sizeof(ra)) == 0,
				  "flow %u: %.17g vs %.17g", f, ra, rb);
		}
	for (l = 0; l < NLINKS; l++)
		cr_assert_eq(mm_cons_vars(a, l), mm_cons_vars(b, l));
}

/*
 * Links of 10-400 B/s with a background flow on some; the plan's flows
 * adopted three times over (all of them, then the odd ones, then those
 * a seed picks), in between removed in an order the seed picks and
 * solved. The batch and the one-by-one adds give the same ids and the
 * same rates bit for bit every time.
 */
Test(net_mm_adopt, a_batch_is_the_same_as_adding_one_by_one)
{
	struct rng r = { 0x9e3779b97f4a7c15u };
	static struct tplan p;
	struct mm *m[2] = { mm_new(), mm_new() };
	mm_id v[2][NFLOWS], bg[2][4];
	uint32_t map[NFLOWS], round, f, l, j;
	int live[NFLOWS];

	make_plan(&p, &r);
	for (j = 0; j < 2; j++) {
		struct rng rc = { 12345 };

		for (l = 0; l < NLINKS; l++)
			cr_assert_eq(mm_cons_add(m[j], 10.0 + rnd(&rc, 391)), l);
		for (f = 0; f < 4; f++) {
			mm_id c[2] = { 3 * f, 3 * f + 7 };
			double co[2] = { 1.0, 0.5 };

			bg[j][f] = mm_var_add(m[j], c, co, 2, 0, NULL);
		}
	}
	for (round = 0; round < 3; round++) {
		struct mm_new_var nv[NFLOWS];
		mm_id id[NFLOWS];
		uint32_t k = 0;

		for (f = 0; f < NFLOWS; f++) {
			live[f] = round == 0 || (round == 1 ? f % 2 == 1
							     : rnd(&r, 3) != 0);
			map[f] = UINT32_MAX;
			if (!live[f])
				continue;
			v[1][f] = mm_var_add(m[1], p.cons[f], p.coef[f], p.n[f],
					     f % 5 == 0 ? 35.0 : 0, NULL);
			nv[k] = (struct mm_new_var){ p.cons[f], p.coef[f],
				p.n[f], f % 5 == 0 ? 35.0 : 0,
				mm_links_alone(m[0], p.cons[f], p.coef[f],
					       p.n[f]), NULL };
			map[f] = k++;
		}
		cr_assert_eq(mm_var_add_batch(m[0], nv, k, p.tcons, p.toff,
					      p.nt, p.tp, map, id), 0);
		for (f = 0; f < NFLOWS; f++)
			if (live[f]) {
				v[0][f] = id[map[f]];
				cr_assert_eq(v[0][f], v[1][f]);
			}
		same(m[0], m[1], v[0], v[1], live);
		/* a removal order the seed picks, a solve every few */
		for (j = 0; j < NFLOWS; j++) {
			f = (j * 7 + round * 5) % NFLOWS;
			if (!live[f])
				continue;
			mm_var_remove(m[0], v[0][f]);
			mm_var_remove(m[1], v[1][f]);
			live[f] = 0;
			if (j % 4 == 3)
				same(m[0], m[1], v[0], v[1], live);
		}
	}
	for (j = 0; j < 2; j++) {
		for (f = 0; f < 4; f++)
			mm_var_remove(m[j], bg[j][f]);
		mm_free(m[j]);
	}
}

/* The rate alone: min over the links of capacity / coefficient. Links
 * of 10, 30 and 40 B/s at coefficients 0.5, 2 and 1: 20, 15 and 40;
 * 15. None: INFINITY. */
Test(net_mm_adopt, links_alone_is_the_tightest_link)
{
	struct mm *m = mm_new();
	mm_id c[3];
	double coef[3] = { 0.5, 2.0, 1.0 };

	c[0] = mm_cons_add(m, 10);
	c[1] = mm_cons_add(m, 30);
	c[2] = mm_cons_add(m, 40);
	cr_assert_eq(mm_links_alone(m, c, coef, 3), 15.0);
	cr_assert(isinf(mm_links_alone(m, c, coef, 0)));
	mm_free(m);
}
