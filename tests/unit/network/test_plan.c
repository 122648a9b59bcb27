/*
 * test_plan.c - a plan's set of distinct links (plan_finish), which a
 * replayed collective holds and the idle check reads.
 */
#include <criterion/criterion.h>

#include "network/plan.h"

/*
 * Two flows: the first over links 7, 3, 9, the second over 3, 12, 7
 * (an all-to-all's sources sharing a switch port and a NIC). Elements:
 * 6; distinct links: 3, 7, 9, 12 (4, ascending). Before plan_finish,
 * plan_links gives the 6 elements.
 */
Test(net_plan, link_set_has_each_link_once)
{
	struct plan p;
	struct route a = { .n = 3, .link = { 7, 3, 9 } };
	struct route b = { .n = 3, .link = { 3, 12, 7 } };
	const uint32_t *l;
	uint32_t n;

	plan_init(&p, 0, 0);
	plan_flow(&p, 1.0, 0);
	plan_route(&p, &a, 1.0);
	plan_flow(&p, 1.0, 0);
	plan_route(&p, &b, 1.0);
	plan_flow_end(&p);
	l = plan_links(&p, &n);
	cr_assert_eq(n, 6);
	cr_assert_eq(l, p.elem_link);
	plan_finish(&p);
	cr_assert_not(p.failed);
	l = plan_links(&p, &n);
	cr_assert_eq(n, 4);
	cr_assert_eq(l[0], 3);
	cr_assert_eq(l[1], 7);
	cr_assert_eq(l[2], 9);
	cr_assert_eq(l[3], 12);
	plan_release(&p);
}

/*
 * plan_finish cuts the arrays to what they hold: 17 flows of 3 links
 * (7, 3, 9) grow the element arrays by doubling to 64 (16, 32, 64) for
 * 51 elements and the flows' to 32 for 17; after it, room for exactly
 * 51 elements and 17 flows, the same elements (flow k's at 3k: 3, 7, 9
 * sorted by plan_flow_end, coefficient 1 each), and the link set 3, 7, 9.
 * A flow added after it grows the arrays again from there (52 .. 54).
 */
Test(net_plan, finish_cuts_the_arrays_to_their_contents)
{
	struct plan p;
	struct route a = { .n = 3, .link = { 7, 3, 9 } };
	static const uint32_t sorted[3] = { 3, 7, 9 };
	const uint32_t *l;
	uint32_t n, k;

	plan_init(&p, 0, 0);
	for (k = 0; k < 17; k++) {
		plan_flow(&p, 1.0, 0);
		plan_route(&p, &a, 1.0);
	}
	plan_flow_end(&p);
	cr_assert_eq(p.capelems, 64);
	cr_assert_eq(p.capflows, 32);
	plan_finish(&p);
	cr_assert(!p.failed);
	cr_assert_eq(p.nelems, 51);
	cr_assert_eq(p.capelems, 51);
	cr_assert_eq(p.capcoef, 51);
	cr_assert_eq(p.capflows, 17);
	cr_assert_eq(p.capphases, 1);
	for (k = 0; k < 51; k++) {
		cr_assert_eq(p.elem_link[k], sorted[k % 3]);
		cr_assert_eq(p.elem_coef[k], 1.0);
	}
	l = plan_links(&p, &n);
	cr_assert_eq(n, 3);
	cr_assert(l[0] == 3 && l[1] == 7 && l[2] == 9);
	plan_flow(&p, 1.0, 0);
	plan_route(&p, &a, 1.0);
	plan_flow_end(&p);
	cr_assert(!p.failed);
	cr_assert_eq(p.nelems, 54);
	cr_assert_eq(p.nflows, 18);
	cr_assert_eq(p.elem_link[51], 3);
	cr_assert_eq(p.elem_link[53], 9);
	plan_release(&p);
}

/*
 * A long flow (more than plan.c's LONG_FLOW, 64, elements) merges its
 * links by link id instead of sorting: the same elements bit for bit.
 * 40 routes r = 0..39, each over four links: 3 (every route: a source's
 * NVLink), 64 + r % 8 (eight switch ports, each every 8th route), 5000 +
 * r (its own NIC, once) and 127 (every route, last), coefficient c_r =
 * 1 / (r + 3): 160 elements on 1 + 8 + 40 + 1 = 50 links. Each link's
 * coefficient is the sum of its c_r in the order they were added (first
 * to last, left to right, as the stable sort then the merge summed
 * them). The order shows in the low bits: c_0 + ... + c_39 left to right
 * is 2.8267428066483373, right to left 2.8267428066483387 (checked
 * below). The links come back ascending: 3, 64..71, 127, 5000..5039 (ids
 * across 79 64-bit words of the bit set). A second long flow after it
 * (the scratch reused: it must have been left zeroed) gives the same
 * again; then plan_finish's distinct links (100 elements, > 64: by bit
 * set too) are those 50, and the scratch is freed.
 */
static double long_sum(uint32_t link)
{
	double s = 0;
	int first = 1;
	uint32_t r;

	for (r = 0; r < 40; r++) {
		double c = 1.0 / (r + 3);
		int on = link == 3 || link == 127 || link == 64 + r % 8 ||
			 link == 5000 + r;

		if (!on)
			continue;
		s = first ? c : s + c;
		first = 0;
	}
	return s;
}

static void long_flow(struct plan *p)
{
	uint32_t r;

	plan_flow(p, 1.0, 0);
	for (r = 0; r < 40; r++) {
		struct route a = { .n = 4, .link = { 3, 64 + r % 8, 5000 + r,
						     127 } };

		plan_route(p, &a, 1.0 / (r + 3));
	}
	plan_flow_end(p);
}

static void check_long(const struct plan *p, uint32_t first)
{
	static uint32_t want[50];
	uint32_t i;

	want[0] = 3;
	for (i = 0; i < 8; i++)
		want[1 + i] = 64 + i;
	want[9] = 127;
	for (i = 0; i < 40; i++)
		want[10 + i] = 5000 + i;
	for (i = 0; i < 50; i++) {
		cr_assert_eq(p->elem_link[first + i], want[i], "element %u: "
			     "link %u, expected %u", i,
			     p->elem_link[first + i], want[i]);
		cr_assert(p->elem_coef[first + i] == long_sum(want[i]),
			  "link %u: %.17g, expected %.17g", want[i],
			  p->elem_coef[first + i], long_sum(want[i]));
	}
}

Test(net_plan, long_flow_merges_as_the_sort_did)
{
	struct plan p;
	const uint32_t *l;
	uint32_t n, i;
	double back = 0;

	/* the order shows in the two shared links' sums */
	for (i = 40; i-- > 0;)
		back += 1.0 / (i + 3);
	cr_assert(back != long_sum(3), "%.17g", back);
	cr_assert(long_sum(3) == long_sum(127));
	plan_init(&p, 0, 0);
	long_flow(&p);
	cr_assert(!p.failed);
	cr_assert_eq(p.nflows, 1);
	cr_assert_eq(p.flows[0].n, 50);
	cr_assert_eq(p.nelems, 50);
	check_long(&p, 0);
	long_flow(&p);
	cr_assert(!p.failed);
	cr_assert_eq(p.flows[1].first, 50);
	cr_assert_eq(p.flows[1].n, 50);
	check_long(&p, 50);
	plan_finish(&p);
	cr_assert(!p.failed);
	cr_assert_null(p.at);
	l = plan_links(&p, &n);
	cr_assert_eq(n, 50);
	for (i = 0; i < 50; i++)
		cr_assert_eq(l[i], p.elem_link[i]);
	plan_release(&p);
}
