/*
 * test_coll_chan.c - the channels a small collective runs
 * (channel_min_bytes, pipe.h pipe_chan_share): NCCL/RCCL drop a channel
 * while bytes < channels x threads x threadThreshold, and the protocol's
 * bus-bandwidth caps, which describe every channel, scale by the share
 * that runs; or, with channel_busbw, the caps stay whole and the running
 * channels bound the rate (channel_min_bytes_per_rank: NCCL's ring LL).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "base/diag.h"
#include "fixtures.h"
#include "network/net.h"
#include "network/pipe.h"

#define EQ_REL(a, b, rel) cr_assert_float_eq((a), (b), fabs((double)(b)) * (rel) + 2e-12, \
	"%s = %.9g, expected %.9g", #a, (double)(a), (double)(b))

static uint32_t ids[16] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
};

/* An all-reduce of bytes over the first ranks GPUs on algo with the LL
 * protocol (checked, with the algorithm's name); its time in seconds. */
static double ll_time(const struct fx *f, double bytes, uint32_t ranks,
		      enum coll_algo algo, const char *name)
{
	struct diag d;
	struct net *n;
	struct coll_desc c = { COLL_ALLREDUCE, bytes, ids, ranks, NULL, algo,
			       -1, 1, 0, NULL, 0, 0, 0 };
	struct net_coll_result out;

	diag_init(&d, NULL);
	n = net_new(&f->sys, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &out, &d), 0);
	net_free(n);
	cr_assert_str_eq(out.algorithm, name);
	cr_assert_str_eq(out.protocol, "ll");
	return out.time_s;
}

/* A 16-GPU all-reduce of bytes on tree/LL; its time in seconds. */
static double tree_ll(const struct fx *f, double bytes)
{
	return ll_time(f, bytes, 16, ALGO_TREE, "tree");
}

Test(pipe, channel_share_is_floor_of_bytes_per_channel)
{
	struct pipe pp = { .chan_K = 56, .chan_min_B = 2048 };

	/* nc = floor(S / 2048), at least 1, at most 56: 1 KiB and 2 KiB run
	 * one channel, 4 KiB two, 8191 B three, 112 KiB and more all 56. */
	EQ_REL(pipe_chan_share(&pp, 1024), 1.0 / 56, 1e-12);
	EQ_REL(pipe_chan_share(&pp, 2048), 1.0 / 56, 1e-12);
	EQ_REL(pipe_chan_share(&pp, 4096), 2.0 / 56, 1e-12);
	EQ_REL(pipe_chan_share(&pp, 8191), 3.0 / 56, 1e-12);
	EQ_REL(pipe_chan_share(&pp, 114688), 1, 0);
	EQ_REL(pipe_chan_share(&pp, 1e9), 1, 0);
	/* The bounds scale by it: a 1 GB/s library bound at 4 KiB is 2/56. */
	EQ_REL(pipe_bound_Bps(&pp, 1, 1e9, 4096), 1e9 * 2 / 56, 1e-12);
	/* No threshold, or no size: every channel. */
	pp.chan_min_B = 0;
	EQ_REL(pipe_chan_share(&pp, 1024), 1, 0);
	pp.chan_min_B = 2048;
	EQ_REL(pipe_chan_share(&pp, 0), 1, 0);
}

Test(net_coll, small_tree_ll_runs_fewer_channels_under_its_cap)
{
	struct fx f;
	struct coll_algo_spec *tree;
	double off_1k, off_8k, off_1m;

	/* 2 nodes x 8 on fx_mesh: a tree runs 56 channels (7 cycles x 8
	 * rails, already even for the two trees). LL only, half the line's
	 * bytes, capped at 22.5 GB/s busbw on 2 nodes; latencies 0. */
	fx_mesh(&f, 2);
	tree = &f.lib.algo[ALGO_TREE];
	tree->protocols.on[PROTO_SIMPLE] = 0;
	tree->protocols.on[PROTO_LL] = 1;
	f.lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	f.lib.proto[PROTO_LL].max_busbw_Bps[SCALE_2NODES] = 22.5e9;
	off_1k = tree_ll(&f, 1024);
	off_8k = tree_ll(&f, 8192);
	off_1m = tree_ll(&f, 1048576);
	/* Every channel: the cap binds, T = 1.875 n / 22.5 GB/s (8 KiB:
	 * 0.6827 us), the links (50 GB/s NICs, 64 GB/s xGMI) far from it. */
	EQ_REL(off_8k, 1.875 * 8192 / 22.5e9, 2e-3);	/* ns clock */
	/* 2 KiB per channel: 8 KiB runs 4 of the 56, so the cap is 4/56 of
	 * itself: 14 x 0.6827 = 9.557 us; 1 KiB runs one channel: 56 x
	 * 1.875 x 1024 / 22.5 GB/s = 4.779 us; 1 MiB runs all 56 (512
	 * would fit): unchanged. */
	tree->channel_min_B.b[PROTO_LL] = 2048;
	EQ_REL(tree_ll(&f, 8192), 14 * off_8k, 2e-3);
	EQ_REL(tree_ll(&f, 8192), 1.875 * 8192 * 14 / 22.5e9, 2e-3);
	EQ_REL(tree_ll(&f, 1024), 56 * 1.875 * 1024 / 22.5e9, 2e-3);
	cr_assert_gt(tree_ll(&f, 1024), 50 * off_1k);
	EQ_REL(tree_ll(&f, 1048576), off_1m, 1e-9);
}

Test(pipe, channel_count_and_one_channels_rate)
{
	/* NCCL's ring LL on 8 GPUs: 4 KiB x 8 = 32 KiB a channel, 24
	 * channels at most, one channel at 15 GB/s bus bandwidth; a flow
	 * of 3.5 plan bytes (1.75 busbw bytes a user byte, 2 line bytes a
	 * data byte) with t_chan = 1.75 / 15e9 s a byte. */
	struct pipe pp = { .chan_min_B = 32768, .chan_max = 24,
			   .chan_t_s = 1.75 / 15e9 };

	/* nc = floor(S / 32 KiB), at least 1, at most 24 */
	EQ_REL(pipe_chan_count(&pp, 1024), 1, 0);
	EQ_REL(pipe_chan_count(&pp, 65535), 1, 0);
	EQ_REL(pipe_chan_count(&pp, 65536), 2, 0);
	EQ_REL(pipe_chan_count(&pp, 1048576), 24, 0);	/* 32 > 24 */
	/* 64 KiB: 2 channels: 3.5 x 2 / t_chan = 2 x 2 x 15e9 = 60 GB/s of
	 * line bytes, below the 282 GB/s library bound, which stays whole
	 * (not 2/24 of itself). */
	EQ_REL(pipe_bound_Bps(&pp, 3.5, 282e9, 65536), 60e9, 1e-12);
	/* 1 MiB: 24 channels give 720 GB/s: the bound, 282, binds. */
	EQ_REL(pipe_bound_Bps(&pp, 3.5, 282e9, 1048576), 282e9, 1e-12);
	/* No bound of its own: the channels' alone (1 KiB: 30 GB/s). */
	EQ_REL(pipe_bound_Bps(&pp, 3.5, 0, 1024), 30e9, 1e-12);
	/* Without a per-channel rate the old share rule (no chan_K: 1). */
	pp.chan_t_s = 0;
	EQ_REL(pipe_bound_Bps(&pp, 3.5, 282e9, 65536), 282e9, 1e-12);
}

/* An 8-GPU all-reduce of bytes on ring/LL; its time in seconds. */
static double ring_ll(const struct fx *f, double bytes)
{
	return ll_time(f, bytes, 8, ALGO_RING, "ring");
}

Test(net_coll, small_ring_ll_channels_run_at_their_own_rate)
{
	struct fx f;
	struct coll_algo_spec *ring;
	double t32k, t64k, t1m;

	/* 8 GPUs behind one switch (450 GB/s a GPU); LL only, half the
	 * line's bytes, capped at 141 GB/s busbw; latencies 0;
	 * kernel_units.scale_up 24. */
	fx_switch(&f, 1);
	ring = &f.lib.algo[ALGO_RING];
	ring->protocols.on[PROTO_SIMPLE] = 0;
	ring->protocols.on[PROTO_LL] = 1;
	f.lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	f.lib.proto[PROTO_LL].max_busbw_Bps[SCALE_1NODE] = 141e9;
	f.lib.kernel_units.scale_up = 24;
	t1m = ring_ll(&f, 1048576);
	/* Without the cut: the cap, T = 1.75 n / 141 GB/s (1 MiB: 13.01 us). */
	EQ_REL(t1m, 1.75 * 1048576 / 141e9, 2e-3);
	/* 4 KiB a rank: 32 KiB a channel on 8 GPUs; 15 GB/s a channel. */
	ring->channel_min_rank_B.b[PROTO_LL] = 4096;
	f.lib.proto[PROTO_LL].channel_busbw_Bps = 15e9;
	t32k = ring_ll(&f, 32768);
	t64k = ring_ll(&f, 65536);
	/* 32 KiB: one channel: 1.75 x 32768 / 15 GB/s = 3.823 us; 64 KiB
	 * two: the same; 1 MiB: 24 x 15 = 360 > 141: the cap, unchanged. */
	EQ_REL(t32k, 1.75 * 32768 / 15e9, 2e-3);
	EQ_REL(t64k, t32k, 2e-3);
	EQ_REL(ring_ll(&f, 1048576), t1m, 1e-9);
	/* 16 KiB, still one channel: half of 32 KiB's. */
	EQ_REL(ring_ll(&f, 16384), t32k / 2, 2e-3);
}
