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
