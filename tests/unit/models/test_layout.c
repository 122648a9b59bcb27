/*
 * test_layout.c - global GPU ids, groups (attention and the experts'
 * folded ones) and symmetric replication.
 */
#include <criterion/criterion.h>

#include "models/layout.h"

Test(layout, megatron_rank_order)
{
	struct layout l;
	int64_t idx[16];

	/* tp 8, pp 4, dp 2 on 64 GPUs: gpu = tp_i + 8 (dp_i + 2 pp_i);
	 * (pp 1, dp 1, tp 3): stage index 3 + 8 = 11 -> 11 + 16 = 27. */
	layout_init(&l, 8, 1, 4, 2, 8, 1, 0);
	cr_assert_eq(layout_gpu(&l, 1, 11), 27);
	/* TP group of stage index 0: 0..7, one node of 8. */
	cr_assert_eq(layout_group(&l, LG_TP, 0, idx), 0);
	cr_assert(idx[0] == 0 && idx[7] == 7);
	/* DP group of tp index 3: 3 and 11 (stride tp). */
	cr_assert_eq(layout_group(&l, LG_DP, 11, idx), 1);
	cr_assert(idx[0] == 3 && idx[1] == 11);
}

Test(layout, context_parallel_groups)
{
	struct layout l;
	int64_t idx[16];

	/* tp 2, cp 4, dp 2: i = tp_i + 2 (cp_i + 4 dp_i). The CP group of
	 * i = 3 (tp 1, cp 1, dp 0) strides by tp: 1, 3, 5, 7; the dense
	 * gradients' group (dp x cp = 8) holds every index of tp_i = 1. */
	layout_init(&l, 2, 4, 1, 2, 2, 1, 0);
	cr_assert_eq(layout_group(&l, LG_CP, 3, idx), 1);
	cr_assert(idx[0] == 1 && idx[1] == 3 && idx[3] == 7);
	cr_assert_eq(layout_group_size(&l, LG_DP), 8);
	cr_assert_eq(layout_group(&l, LG_DP, 3, idx), 1);
	cr_assert(idx[7] == 15);
	/* a2a+p2p with groups of 2: inner {1, 3}, ring {1, 5} */
	layout_set_cp_a2a(&l, 2);
	cr_assert_eq(layout_group(&l, LG_CP_A2A, 3, idx), 1);
	cr_assert(idx[0] == 1 && idx[1] == 3);
	cr_assert_eq(layout_group(&l, LG_CP_RING, 5, idx), 1);
	cr_assert(idx[0] == 1 && idx[1] == 5);
	/* fp8 amax groups: tensor x context, tp cp = 8 consecutive indices
	 * (index 11 = tp 1, cp 1, dp 1: 8..15, at position 3); the stage,
	 * all 16. */
	cr_assert_eq(layout_group_size(&l, LG_TPCP), 8);
	cr_assert_eq(layout_group(&l, LG_TPCP, 11, idx), 3);
	cr_assert(idx[0] == 8 && idx[7] == 15);
	cr_assert_eq(layout_group_size(&l, LG_STAGE), 16);
	cr_assert_eq(layout_group(&l, LG_STAGE, 11, idx), 11);
	cr_assert(idx[0] == 0 && idx[15] == 15);
}

Test(layout, experts_fold_over_the_stage)
{
	struct layout l;
	int64_t idx[64];
	struct layout_coord c;

	/* tp 2, cp 1, dp 16 = 32 GPUs a stage; experts etp 1, ep 8 ->
	 * edp 4. EP groups are 8 consecutive GPUs (stride etp = 1) across
	 * the attention TP groups; EDP strides by etp ep = 8. */
	layout_init(&l, 2, 1, 1, 16, 1, 8, 0);
	cr_assert_eq(l.edp, 4);
	cr_assert_eq(layout_group(&l, LG_EP, 13, idx), 5);
	cr_assert(idx[0] == 8 && idx[7] == 15);
	cr_assert_eq(layout_group(&l, LG_EDP, 13, idx), 1);
	cr_assert(idx[0] == 5 && idx[1] == 13 && idx[3] == 29);
	layout_coord(&l, 13, &c);
	cr_assert(c.tp_i == 1 && c.dp_i == 6 && c.ep_i == 5 && c.edp_i == 1);
	/* etp 2: ETP pairs, EP strides by 2 */
	layout_init(&l, 2, 1, 1, 16, 2, 8, 0);
	cr_assert_eq(l.edp, 2);
	cr_assert_eq(layout_group(&l, LG_ETP, 13, idx), 1);
	cr_assert(idx[0] == 12);
	cr_assert_eq(layout_group(&l, LG_EP, 13, idx), 6);
	cr_assert(idx[0] == 1 && idx[7] == 15);
}

Test(layout, symmetric_simulates_one_rank_per_stage)
{
	struct layout l;

	/* One simulated rank per stage of 16 GPUs; a TP collective stands
	 * for dp = 2 groups, a DP one for tp = 8, a p2p for 16. */
	layout_init(&l, 8, 1, 4, 2, 8, 1, 0);
	cr_assert_eq(l.nranks, 4);
	cr_assert_eq(layout_replicas(&l, LG_TP), 2);
	cr_assert_eq(layout_replicas(&l, LG_DP), 8);
	cr_assert_eq(layout_pp_replicas(&l), 16);
}

Test(layout, full_fidelity_simulates_every_gpu)
{
	struct layout l;
	int64_t pp, i;
	uint32_t r;

	layout_init(&l, 8, 2, 4, 2, 8, 1, 1);
	cr_assert_eq(l.nranks, 128);
	cr_assert_eq(layout_replicas(&l, LG_TP), 1);
	cr_assert_eq(layout_pp_replicas(&l), 1);
	for (r = 0; r < l.nranks; r++) {
		layout_where(&l, r, &pp, &i);
		cr_assert_eq(layout_rank(&l, pp, i), r);
		/* every GPU simulated: the rank is the global GPU id */
		cr_assert_eq(layout_gpu(&l, pp, i), r);
	}
}

Test(layout, tp_pp_dp_rank_order)
{
	struct layout l;
	int64_t idx[64];

	/* tp 4, cp 2, pp 8, dp 32 (the CoreWeave GB200 405B x2048 job) in
	 * Megatron's tp-cp-ep-pp-dp order: M = tp cp = 8 and
	 * gpu = i mod 8 + 8 (pp_i + 8 (i div 8)). Stage index 5 (tp 1,
	 * cp 1, dp 0) on pipeline rank 3: 5 + 8 * 3 = 29; index 13 (dp 1)
	 * on rank 0: 5 + 8 * (0 + 8) = 69. */
	layout_init(&l, 4, 2, 8, 32, 4, 1, 0);
	cr_assert_eq(layout_gpu(&l, 0, 13), 13);	/* default: 13 + 0 */
	cr_assert_eq(layout_gpu(&l, 3, 5), 5 + 256 * 3);
	layout_set_pp_inner(&l);
	cr_assert_eq(layout_gpu(&l, 3, 5), 29);
	cr_assert_eq(layout_gpu(&l, 0, 13), 69);
	/* neighbouring stages 8 GPUs apart (one 64-GPU NVLink domain holds
	 * the whole pipeline of a block), not 256 */
	cr_assert_eq(layout_gpu(&l, 7, 0) - layout_gpu(&l, 6, 0), 8);
	cr_assert_eq(layout_gpu(&l, 7, 0), 56);
	/* the groups are the stage's as before, on other GPUs: the dense
	 * gradients' group of index 5 (tp 1) is 1, 5, 9, 13, ... (stride
	 * tp); index 1 (cp 0, dp 0) is GPU 1 on rank 0, index 9 (cp 0,
	 * dp 1) GPU 9 mod 8 + 8 (0 + 8 * 1) = 65: the cp pair of a block,
	 * then the next block 64 GPUs on */
	cr_assert_eq(layout_group(&l, LG_DP, 5, idx), 1);
	cr_assert_eq(idx[0], 1);
	cr_assert_eq(layout_gpu(&l, 0, idx[0]), 1);
	cr_assert_eq(layout_gpu(&l, 0, idx[2]), 65);	/* index 9 */
	/* every GPU once: the 2048 ids are a permutation */
	{
		static unsigned char seen[2048];
		int64_t pp_i, i;

		for (pp_i = 0; pp_i < 8; pp_i++)
			for (i = 0; i < 256; i++) {
				uint32_t g = layout_gpu(&l, pp_i, i);

				cr_assert_lt(g, 2048);
				cr_assert_eq(seen[g], 0);
				seen[g] = 1;
			}
	}
}
