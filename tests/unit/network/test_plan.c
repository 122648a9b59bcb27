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
