/*
 * test_coll_final.c - a ring loop's local-only final step (pipe.c
 * "final"): each channel copies one chunk a loop at its own rate
 * (chain_channel_bandwidth) while its link share idles, S / (K p r) in
 * all, within one node; nothing without the rate or across nodes.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "coll_run.h"
#include "fixtures.h"
#include "network/algo.h"
#include "network/net.h"

#define MiB 1048576.0

/* Time a Simple ring op of bytes over the first p GPUs of f. */
static double ring_time(const struct fx *f, enum coll_op op, double bytes,
			uint32_t p)
{
	struct coll_desc c = { .op = op, .bytes = bytes, .gpus = coll_ids,
			       .ngpus = p, .algo = ALGO_RING,
			       .proto = PROTO_SIMPLE, .replicas = 1,
			       .group = 1 };

	return coll_desc_timed(&f->sys, &c).time_s;
}

/* The switch fixture (18 x 25 = 450 GB/s a GPU), 24 channels, a Simple
 * ring pipeline of 2 MiB chunks with no sync, no latency; the channel
 * rate r as given (0 = none). */
static void final_fixture(struct fx *f, int64_t nodes, double r)
{
	struct coll_pipe_spec *ps;

	fx_switch(f, nodes);
	f->lib.kernel_units.scale_up = 24;
	f->lib.algo[ALGO_RING].base.s[PROTO_SIMPLE] = 0;
	f->lib.algo[ALGO_RING].hop_scale_up.s[PROTO_SIMPLE] = 0;
	ps = &f->lib.algo[ALGO_RING].pipe[PROTO_SIMPLE];
	ps->chunk_B = 2 * MiB;
	ps->slices = 2;
	ps->sync_s = 0;
	ps->chain_channel_Bps = r;
}

Test(net_final, one_chunk_a_channel_a_loop_at_the_channels_rate)
{
	struct fx f;
	double S = 512 * MiB, link, t2, t8;

	final_fixture(&f, 1, 0);
	/* Without a channel rate: the links alone. All-gather of S over 2
	 * GPUs: each sends S / 2 at 450 GB/s = 596.52 us; over 8, 7/8 S =
	 * 1043.91 us. */
	link = ring_time(&f, COLL_ALLGATHER, S, 2);
	EQ_REL(link, 0.5 * S / 450e9, 1e-6);
	EQ_REL(ring_time(&f, COLL_ALLGATHER, S, 8), 0.875 * S / 450e9, 1e-6);

	final_fixture(&f, 1, 40e9);
	/* At r = 40 GB/s a channel: + S / (24 x p x r). p = 2: 536870912 /
	 * 1.92e12 = 279.62 us more, 876.14 us (busbw 306 against 450: the
	 * final step costs the pair 35 % of its rate) ... */
	t2 = ring_time(&f, COLL_ALLGATHER, S, 2);
	EQ_REL(t2, 0.5 * S / 450e9 + S / (24 * 2 * 40e9), 1e-6);
	/* ... p = 8: 69.90 us more on 1043.91 (6.7 %): the fewer the
	 * ranks, the larger the chunk each loop ends on. */
	t8 = ring_time(&f, COLL_ALLGATHER, S, 8);
	EQ_REL(t8, 0.875 * S / 450e9 + S / (24 * 8 * 40e9), 1e-6);
	/* Reduce-scatter alike; all-reduce ends its loop once too (its
	 * 2(p-1) link steps: S at 450 GB/s over 2 GPUs = 1193.05 us, + the
	 * same 279.62 us). */
	EQ_REL(ring_time(&f, COLL_REDUCESCATTER, S, 2), t2, 1e-6);
	EQ_REL(ring_time(&f, COLL_ALLREDUCE, S, 2),
	       S / 450e9 + S / (24 * 2 * 40e9), 1e-6);
}

Test(net_final, a_partial_loop_copies_its_share)
{
	struct fx f;
	double S = 3 * MiB;

	final_fixture(&f, 1, 40e9);
	/* 3 MiB over 4 GPUs: one loop of 24 x 4 x 2 MiB = 192 MiB, so
	 * smaller chunks (3 MiB / 96 = 32 KiB): each channel's final copy is
	 * 32 KiB at 40 GB/s = 0.819 us; the links 3/4 x 3 MiB / 450 GB/s =
	 * 5.243 us. */
	EQ_REL(ring_time(&f, COLL_ALLGATHER, S, 4),
	       0.75 * S / 450e9 + S / (96 * 40e9), 1e-6);
}

Test(net_final, not_across_nodes)
{
	struct fx one, two;
	double S = 512 * MiB;

	/* 2 nodes: the one-node rate does not apply (no final term); the
	 * time equals the same fabric's without a channel rate. */
	final_fixture(&one, 2, 0);
	final_fixture(&two, 2, 40e9);
	EQ_REL(ring_time(&two, COLL_ALLGATHER, S, 16),
	       ring_time(&one, COLL_ALLGATHER, S, 16), 1e-12);
}
