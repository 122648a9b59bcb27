/*
 * test_coll_group.c - a group of broadcasts (reduces) launched as one
 * (coll_desc.group; NCCL ncclGroupStart/End): how the library lays the
 * group over its channels (cgroup.c), what the group costs against one
 * operation of the same bytes, and the store-and-forward chains of
 * Simple broadcasts and reduces (chain_chunk, chain_channel_bandwidth).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "coll_run.h"
#include "fixtures.h"
#include "network/algo.h"
#include "network/cgroup.h"
#include "network/net.h"

#define KiB 1024.0

/* NCCL v2.27.5's layout constants: 16 KiB least traffic a channel, LL
 * traffic x 4. */
static struct coll_group_spec nccl_group(void)
{
	struct coll_group_spec g;

	memset(&g, 0, sizeof(g));
	g.channel_min_B = 16 * KiB;
	g.traffic.r[PROTO_LL] = 4;
	return g;
}

Test(net_group, layout_counts_the_busiest_channels_parts)
{
	struct coll_group_spec g = nccl_group();

	/* 8 ops of 373 x 4096 = 1,527,808 B (one rank's FP8 rows) on 24
	 * channels, Simple: a channel's share floor(8 x 1527808 / 24) =
	 * 509,269 B; cells of 16 KiB, 94 an op (93.25 up), 32 a channel
	 * (509269 / 16384 = 31.08 up). Op 1 puts 32 + 32 + 30 on channels
	 * 0-2; op 2 starts on channel 2 (2 cells fill its 509,269 B), then
	 * 32, 32, 28 on 3-5; ...: a boundary channel holds parts of two
	 * ops, none of three. */
	cr_assert_eq(cgroup_channel_ops(&g, PROTO_SIMPLE, 8, 1527808, 24), 2);
	/* 8 ops of 12 KiB, Simple: each counts 16 KiB, a channel's share is
	 * max(16 KiB, 8 x 16 KiB / 24) = 16 KiB, one cell: each op fills a
	 * channel of its own. */
	cr_assert_eq(cgroup_channel_ops(&g, PROTO_SIMPLE, 8, 12 * KiB, 24), 1);
	/* 8 ops of 11,936 B with LL (the ids: 373 x 8 x 4 B): 47,744 B of
	 * traffic each, cells of 16384 / 4 = 4 KiB (3 an op), a share of
	 * max(16 KiB, 8 x 47744 / 24 = 15,914) = 16 KiB = one cell: each op
	 * spans 3 channels alone, 8 x 3 = 24. On 16 channels the share is
	 * 8 x 47744 / 16 = 23,872 B (2 cells): op 1 on 0-1 (2 + 1), op 2
	 * starts on 1 (1 cell) and ends on 2 (2): two parts on channel 1. */
	cr_assert_eq(cgroup_channel_ops(&g, PROTO_LL, 8, 11936, 24), 1);
	cr_assert_eq(cgroup_channel_ops(&g, PROTO_LL, 8, 11936, 16), 2);
	/* one op, no bytes: one part */
	cr_assert_eq(cgroup_channel_ops(&g, PROTO_SIMPLE, 1, 1e6, 24), 1);
	cr_assert_eq(cgroup_channel_ops(&g, PROTO_SIMPLE, 8, 0, 24), 1);
}

/* Time op over the switch fixture's 8 GPUs as a group of `group`. */
static struct net_coll_result timed(const struct fx *f, enum coll_op op,
				    double bytes, uint32_t group)
{
	struct coll_desc c = { .op = op, .bytes = bytes, .gpus = coll_ids,
			       .ngpus = 8, .algo = ALGO_RING, .proto = -1,
			       .replicas = 1, .group = group };

	return coll_desc_timed(&f->sys, &c);
}

/* The switch fixture (450 GB/s a GPU) with a Simple ring of base 10 us
 * and 2 us a step, NCCL's group layout, 24 channels. */
static void group_fixture(struct fx *f)
{
	fx_switch(f, 1);
	f->lib.algo[ALGO_RING].base.s[PROTO_SIMPLE] = 10e-6;
	f->lib.algo[ALGO_RING].hop_scale_up.s[PROTO_SIMPLE] = 2e-6;
	f->lib.group = nccl_group();
	f->lib.kernel_units.scale_up = 24;
}

#define S_B (8 * 1527808.0)	/* 12,222,464 B: 8 ranks' rows */

Test(net_group, a_group_of_broadcasts_against_one)
{
	struct fx f;
	double one, grp;

	group_fixture(&f);
	/* One broadcast of S = 12,222,464 B from rank 0: the chain's p-1 =
	 * 7 links each carry S: S / 450 GB/s = 27.161 us, plus 10 + 7 x 2 =
	 * 24 us. */
	one = timed(&f, COLL_BROADCAST, S_B, 1).time_s;
	EQ_REL(one, S_B / 450e9 + 24e-6, 1e-6);
	/* The same bytes as 8 broadcasts of S / 8, rooted at ranks 0-7, in
	 * one group: each ring link lies on 7 of the 8 chains, 7/8 S =
	 * 23.766 us; the busiest of 24 channels holds 2 parts (layout test
	 * above), the second a step behind the first: 10 + (7 + 1) x 2 =
	 * 26 us. 49.77 against one's 51.16 us. */
	grp = timed(&f, COLL_BROADCAST, S_B, 8).time_s;
	EQ_REL(grp, 0.875 * S_B / 450e9 + 26e-6, 1e-6);
	/* reduces alike, the chains toward their roots */
	EQ_REL(timed(&f, COLL_REDUCE, S_B, 1).time_s, one, 1e-9);
	EQ_REL(timed(&f, COLL_REDUCE, S_B, 8).time_s, grp, 1e-9);
}

Test(net_group, simple_chains_store_and_forward)
{
	struct fx f;
	struct coll_pipe_spec *ps;

	group_fixture(&f);
	f.lib.algo[ALGO_RING].base.s[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_RING].hop_scale_up.s[PROTO_SIMPLE] = 0;
	ps = &f.lib.algo[ALGO_RING].pipe[PROTO_SIMPLE];
	ps->chain_chunk_B = 512 * KiB;
	/* One broadcast from rank 0: its 24 channels each hold S / 24 =
	 * 509,269 B < 512 KiB, one step, received whole at every hop before
	 * it goes on, all channels on the same link at a time: 7 steps of
	 * S at 450 GB/s = 7 x 27.161 = 190.13 us (the pipeline's fill: a
	 * loop of 24 x 512 KiB >= S, F = p - 2 = 6 loops). */
	EQ_REL(timed(&f, COLL_BROADCAST, S_B, 1).time_s, 7 * S_B / 450e9,
	       1e-6);
	/* A group: the 8 roots' channels cross different links at a time,
	 * so no link idles for the fill: 7/8 S / 450 GB/s = 23.77 us ... */
	EQ_REL(timed(&f, COLL_BROADCAST, S_B, 8).time_s,
	       0.875 * S_B / 450e9, 1e-6);
	/* Two (roots 0 and 1, S / 2 each on 12 channels) fill as one does:
	 * one chunk a channel, so a loop puts each operation's chunks on one
	 * link, the two on neighbouring links, 7 loops of S / 2: 3.5 S /
	 * 450 GB/s = 95.07 us (pipe.c group_fill: sum_t min(2, w(t) = 1) =
	 * 7 loops over n min(G, D) = 2, times the S the middle links carry;
	 * before, 27.16 us: S with no fill, under a third of what one
	 * broadcast of S / 2 takes, 7 loops of S / 2, the same 95.07 us). */
	EQ_REL(timed(&f, COLL_BROADCAST, S_B, 2).time_s, 3.5 * S_B / 450e9,
	       1e-6);
	EQ_REL(timed(&f, COLL_BROADCAST, S_B / 2, 1).time_s,
	       7 * S_B / 2 / 450e9, 1e-6);
	/* ... unless one channel forwards slower than its links' share: at
	 * 40 GB/s a channel, its 509,269 B part crosses 7 hops one step
	 * after another, and the busiest channel's second part trails by a
	 * step: (7 + 1) x 509269.33 / 40 GB/s = 101.85 us. */
	ps->chain_channel_Bps = 40e9;
	EQ_REL(timed(&f, COLL_BROADCAST, S_B, 8).time_s,
	       8 * (S_B / 24) / 40e9, 1e-6);
	/* The single broadcast stays link-bound: its 7 x 509269 / 40 GB/s
	 * = 89.1 us floor is under the 190.13 us of its fill. */
	EQ_REL(timed(&f, COLL_BROADCAST, S_B, 1).time_s, 7 * S_B / 450e9,
	       1e-6);
}

Test(net_group, groups_are_broadcasts_or_reduces_one_per_rank)
{
	struct fx f;
	struct coll_desc c = { .op = COLL_ALLREDUCE, .bytes = 1e6,
			       .gpus = coll_ids, .ngpus = 8, .algo = -1,
			       .proto = -1, .replicas = 1, .group = 8 };
	struct net_coll_result out;
	struct diag d;
	struct net *n;

	group_fixture(&f);
	diag_init(&d, NULL);
	n = net_new(&f.sys, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_neq(net_collective_time(n, &c, &out, &d), 0);
	c.op = COLL_BROADCAST;
	c.group = 9;	/* more roots than ranks */
	cr_assert_neq(net_collective_time(n, &c, &out, &d), 0);
	c.group = 8;
	cr_assert_eq(net_collective_time(n, &c, &out, &d), 0);
	net_free(n);
}

Test(net_group, the_tuner_charges_a_chain_one_step)
{
	struct fx f;
	struct coll_algo_spec *ring = &f.lib.algo[ALGO_RING];
	struct run r = { COLL_BROADCAST, 16e6, NULL, 8, ALGO_RING, 1, NULL };

	fx_switch(&f, 1);
	ring->protocols.on[PROTO_LL128] = 1;
	f.lib.proto[PROTO_LL128].bandwidth_factor = 0.9375;
	ring->base.s[PROTO_LL128] = 14e-6;
	ring->hop_scale_up.s[PROTO_LL128] = 1.9e-6;
	ring->base.s[PROTO_SIMPLE] = 8.4e-6;
	ring->hop_scale_up.s[PROTO_SIMPLE] = 3.4e-6;
	/* A 16 MB broadcast, its chain's 7 steps charged in full: LL128
	 * 14 + 7 x 1.9 + 16e6 / (0.9375 x 450 GB/s) = 27.3 + 37.93 = 65.23
	 * us, Simple 8.4 + 7 x 3.4 + 16e6 / 450 GB/s = 32.2 + 35.56 = 67.76
	 * us: LL128. */
	coll_expect(&f.sys, &r, "ll128", 27.3e-6 + 16e6 / (0.9375 * 450e9));
	/* NCCL's tuner charges one step (sameChannels): LL128 14 + 1.9 +
	 * 37.93 = 53.83 us against Simple's 8.4 + 3.4 + 35.56 = 47.36 us:
	 * it runs Simple, which takes its full 67.76 us. */
	ring->select_chain_steps = 1;
	coll_expect(&f.sys, &r, "simple", 32.2e-6 + 16e6 / 450e9);
}
