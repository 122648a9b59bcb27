/*
 * test_coll_floor.c - the GPU's own ring LL costs (gpu collective_launch,
 * collective_ll_step) where the library says gpu_floor: a ring's and a
 * tree's LL phases run at them (a tree's network hops keep hop_net), the
 * library's tuner still times LL at its base and hop_scale_up, and
 * nothing else (other protocols, a library without gpu_floor, a GPU
 * without the keys) moves.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "coll_run.h"
#include "fixtures.h"
#include "network/algo.h"
#include "network/net.h"

/* One switch of 8 at 450 GB/s; ring LL (base 5 us, 0.5 us a switch
 * step, half the bandwidth) and Simple (base 20 us, no step). The GPU
 * says 3 us and 1 us a step. */
static struct coll_algo_spec *floor_ring(struct fx *f)
{
	struct coll_algo_spec *ring = &f->lib.algo[ALGO_RING];

	fx_switch(f, 1);
	ring->protocols.on[PROTO_LL] = 1;
	f->lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	ring->base.s[PROTO_LL] = 5e-6;
	ring->hop_scale_up.s[PROTO_LL] = 0.5e-6;
	ring->base.s[PROTO_SIMPLE] = 20e-6;
	f->gpu.collective_launch_s = 3e-6;
	f->gpu.collective_ll_step_s = 1e-6;
	return ring;
}

/* 8 B all-reduced: the LL line bytes 2 x 2 (7/8) x 8 = 28 B over 450
 * GB/s are 0.06 ns, below the comparisons' 1e-6. */
#define TINY 8.0

Test(net_coll_floor, ring_ll_runs_at_the_gpus_floor)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 8, ALGO_RING, 1, NULL };

	floor_ring(&f);
	/* Without gpu_floor the library's line: all-reduce 2 (8 - 1) = 14
	 * steps, 5 + 14 x 0.5 = 12 us. */
	coll_expect(&f.sys, &r, "ll", 12e-6);
	/* With it the GPU's: 3 + 14 x 1 = 17 us. */
	f.lib.gpu_floor = 1;
	coll_expect(&f.sys, &r, "ll", 17e-6);
	/* All-gather: 8 - 1 = 7 steps, 3 + 7 x 1 = 10 us. */
	r.op = COLL_ALLGATHER;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 10e-6, 1e-6);
	/* A broadcast is a chain of 7 hops: 3 + 7 x 1 = 10 us. */
	r.op = COLL_BROADCAST;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 10e-6, 1e-6);
}

Test(net_coll_floor, zero_keys_keep_the_librarys_line)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 8, ALGO_RING, 1, NULL };

	floor_ring(&f);
	f.lib.gpu_floor = 1;
	/* Only the step given: base 5 (the library's) + 14 x 1 = 19 us. */
	f.gpu.collective_launch_s = 0;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 19e-6, 1e-6);
	/* Only the launch: 3 + 14 x 0.5 = 10 us. */
	f.gpu.collective_launch_s = 3e-6;
	f.gpu.collective_ll_step_s = 0;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 10e-6, 1e-6);
	/* Neither: the library's 12 us. */
	f.gpu.collective_launch_s = 0;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 12e-6, 1e-6);
}

Test(net_coll_floor, the_tuner_keeps_the_librarys_line)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 8, ALGO_RING, 1, NULL };
	struct coll_algo_spec *ring = floor_ring(&f);

	f.lib.gpu_floor = 1;
	/* Simple at 15 us: the tuner sees LL at 12 us (its line) and takes
	 * it, though it runs at 17 us; had it seen the GPU's 17 it would
	 * have taken Simple. */
	ring->base.s[PROTO_SIMPLE] = 15e-6;
	coll_expect(&f.sys, &r, "ll", 17e-6);
	/* Simple at 11 us beats the tuner's 12 for LL: Simple, at 11 us
	 * (its latency, no step; 8 B over 450 GB/s is nothing). */
	ring->base.s[PROTO_SIMPLE] = 11e-6;
	coll_expect(&f.sys, &r, "simple", 11e-6);
}

Test(net_coll_floor, other_protocols_do_not_move)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 8, ALGO_RING, 1, NULL };
	struct coll_algo_spec *ring = floor_ring(&f);

	f.lib.gpu_floor = 1;
	/* Simple alone: its base 20 us (no step), as without the floor. */
	ring->protocols.on[PROTO_LL] = 0;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 20e-6, 1e-6);
}

/* A tree with LL (base 5, 0.5 us a switch step, 4 us a network hop)
 * beside floor_ring's ring; Simple off (the ideal library's, at 0 us). */
static void floor_tree(struct fx *f)
{
	struct coll_algo_spec *tree = &f->lib.algo[ALGO_TREE];

	tree->protocols.on[PROTO_SIMPLE] = 0;
	tree->protocols.on[PROTO_LL] = 1;
	tree->base.s[PROTO_LL] = 5e-6;
	tree->hop_scale_up.s[PROTO_LL] = 0.5e-6;
	tree->hop_net.s[PROTO_LL] = 4e-6;
}

Test(net_coll_floor, a_trees_chain_runs_at_the_gpus_floor)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 8, ALGO_TREE, 1, NULL };

	floor_ring(&f);
	floor_tree(&f);
	/* One node of 8: a chain of depth 7 each way; the library's line
	 * 5 + 2 x 7 x 0.5 = 12 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 12e-6, 1e-6);
	/* With gpu_floor the GPU's launch and step: 3 + 2 x 7 x 1 = 17 us
	 * (the same LL primitives as the ring's chain: all_reduce.h
	 * runTreeSplit, prims_ll.h). */
	f.lib.gpu_floor = 1;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 17e-6, 1e-6);
}

Test(net_coll_floor, a_trees_network_hops_keep_the_librarys)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 16, ALGO_TREE, 1, NULL };

	fx_switch(&f, 2);
	f.lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	f.gpu.collective_launch_s = 3e-6;
	f.gpu.collective_ll_step_s = 1e-6;
	floor_tree(&f);
	/* 2 nodes of 8: each way 7 switch steps and log2(2) = 1 network
	 * hop; the library's 5 + 2 (7 x 0.5 + 4) = 20 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 20e-6, 1e-6);
	/* The GPU's launch and switch steps, the library's network hop:
	 * 3 + 2 (7 x 1 + 4) = 25 us. */
	f.lib.gpu_floor = 1;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 25e-6, 1e-6);
}

/* The GPU's ring LL channel rate (gpu collective_ll_channel, round 50):
 * floor_ring with 4 channels (kernel_units, no cut) at 1 GB/s a call,
 * far below the 450 GB/s links, so the channels pace the ring. */
static void floor_chan(struct fx *f)
{
	floor_ring(f);
	/* LL only: the tuner, which does not see the channels, would take
	 * Simple at these sizes. */
	f->lib.algo[ALGO_RING].protocols.on[PROTO_SIMPLE] = 0;
	f->lib.gpu_floor = 1;
	f->lib.kernel_units.scale_up = 4;
	f->gpu.collective_ll_channel_Bps = 1e9;
}

#define MIB8 (8.0 * 1048576)

Test(net_coll_floor, ring_ll_channels_run_s_of_s_plus_1_calls)
{
	struct fx f;
	uint32_t two[2] = { 0, 1 };
	struct run r = { COLL_ALLGATHER, MIB8, two, 2, ALGO_RING, 1, NULL };

	floor_chan(&f);
	/* 2 ranks: 1 step, 2 calls a loop (send, final recv): a channel
	 * carries 1/2 GB/s of bus bandwidth, 4 of them 2 GB/s; the bus bytes
	 * 8 MiB x 1/2 = 4 MiB take 2.097152 ms, after 3 + 1 x 1 us. */
	coll_expect(&f.sys, &r, "ll", 4e-6 + 4.0 * 1048576 / 2e9);
	/* 8 ranks: 7 steps in 8 calls, 4 x 7/8 = 3.5 GB/s; 7/8 x 8 MiB =
	 * 7 MiB take the same 2.097152 ms, after 3 + 7 x 1 us. */
	r.gpus = NULL;
	r.n = 8;
	coll_expect(&f.sys, &r, "ll", 10e-6 + 7.0 * 1048576 / 3.5e9);
	/* All-reduce on 2 ranks: 2 steps in 3 calls (send, recvReduceCopy-
	 * Send, recv), 4 x 2/3 GB/s; bus bytes 2 x 1/2 x 8 MiB = 8 MiB,
	 * after 3 + 2 x 1 us. */
	r.op = COLL_ALLREDUCE;
	r.gpus = two;
	r.n = 2;
	coll_expect(&f.sys, &r, "ll", 5e-6 + 8.0 * 1048576 / (4 * 2e9 / 3));
}

Test(net_coll_floor, ring_ll_channel_rate_needs_the_key_and_the_floor)
{
	struct fx f;
	uint32_t two[2] = { 0, 1 };
	struct run r = { COLL_ALLGATHER, MIB8, two, 2, ALGO_RING, 1, NULL };
	double t;

	floor_chan(&f);
	/* Without the key the links pace it: LL's 2 x 4 MiB line bytes over
	 * 450 GB/s are ~19 us, far below the 2.1 ms above. */
	f.gpu.collective_ll_channel_Bps = 0;
	t = coll_timed(&f.sys, &r).time_s;
	cr_assert(t < 100e-6, "t = %g", t);
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "ll");
	/* Nor without gpu_floor (the library's own costs). */
	f.gpu.collective_ll_channel_Bps = 1e9;
	f.lib.gpu_floor = 0;
	t = coll_timed(&f.sys, &r).time_s;
	cr_assert(t < 100e-6, "t = %g", t);
}
