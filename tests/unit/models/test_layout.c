/*
 * test_layout.c - global GPU ids, groups and symmetric replication.
 */
#include <criterion/criterion.h>

#include "models/layout.h"

Test(layout, megatron_rank_order)
{
	struct layout l;
	uint32_t g[8];

	/* tp 8, pp 4, dp 2 on 64 GPUs: gpu = tp_i + 8 (dp_i + 2 pp_i);
	 * (pp 1, dp 1, tp 3) -> 3 + 8 * 3 = 27. */
	layout_init(&l, 8, 1, 4, 2, 0);
	cr_assert_eq(layout_gpu(&l, 1, 1, 3), 27);
	/* TP group of (pp 2, dp 0): 32..39, one node of 8. */
	layout_tp_gpus(&l, 2, 0, g);
	cr_assert(g[0] == 32 && g[7] == 39);
	/* DP group of (pp 1, tp 3): 3 + 8*2 = 19 and 27. */
	layout_dp_gpus(&l, 1, 3, g);
	cr_assert(g[0] == 19 && g[1] == 27);
}

Test(layout, symmetric_simulates_one_rank_per_stage)
{
	struct layout l;

	/* One simulated rank per stage; a TP collective stands for dp = 2
	 * groups, a DP one for tp = 8, a p2p for 16. */
	layout_init(&l, 8, 1, 4, 2, 0);
	cr_assert_eq(l.nranks, 4);
	cr_assert_eq(layout_tp_replicas(&l), 2);
	cr_assert_eq(layout_dp_replicas(&l), 8);
	cr_assert_eq(layout_pp_replicas(&l), 16);
}

Test(layout, full_fidelity_simulates_every_gpu)
{
	struct layout l;
	int64_t pp, dp, tp;
	uint32_t r;

	layout_init(&l, 8, 1, 4, 2, 1);
	cr_assert_eq(l.nranks, 64);
	cr_assert_eq(layout_tp_replicas(&l), 1);
	cr_assert_eq(layout_pp_replicas(&l), 1);
	for (r = 0; r < l.nranks; r++) {
		layout_coords(&l, r, &pp, &dp, &tp);
		cr_assert_eq(layout_rank(&l, pp, dp, tp), r);
		/* with cp 1 the simulated rank is the global GPU id */
		cr_assert_eq(layout_gpu(&l, pp, dp, tp), r);
	}
}
