/*
 * test_coll_lib.c - collective times under the library's own data, as
 * configs/collectives states it: the protocol choice by size (LL's
 * latency against its bandwidth, its bus bandwidth cap), per-slice syncs
 * of the ring and NVLS pipelines, sustained bus bandwidth, net overhead
 * floors, the tuner's view (select_bw, select_size_pct), protocol ranges
 * and size bounds, endpoint caps, one-shot direct algorithms, the
 * dispatcher path's chunk rounds and the p2p pipeline. Formulas on ideal
 * libraries and the fabric's sanity rules are in test_coll.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "coll_run.h"
#include "fixtures.h"
#include "network/algo.h"
#include "network/net.h"

/* One switch of 8 at 450 GB/s whose ring runs LL (5 us, half the
 * bandwidth) or Simple (20 us): the two protocol-choice tests' setup. */
static struct coll_algo_spec *ll_and_simple_ring(struct fx *f)
{
	struct coll_algo_spec *ring = &f->lib.algo[ALGO_RING];

	fx_switch(f, 1);
	ring->protocols.on[PROTO_LL] = 1;
	f->lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	ring->base.s[PROTO_LL] = 5e-6;
	ring->base.s[PROTO_SIMPLE] = 20e-6;
	return ring;
}

Test(net_coll, protocol_choice_follows_size)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 1e6, NULL, 8, ALGO_RING, 1, NULL };

	ll_and_simple_ring(&f);
	/* LL: 5 us + 1.75 n * 2 / 450 GB/s; Simple: 20 us + 1.75 n / 450 GB/s.
	 * They cross at n = 15 us * 450e9 / 1.75 = 3.857 MB. At 1 MB LL wins:
	 * 5 us + 7.778 us = 12.78 us. */
	coll_expect(&f.sys, &r, "ll", 5e-6 + 1.75e6 * 2 / 450e9);
	r.bytes = 16e6;
	/* At 16 MB Simple wins: 20 us + 62.22 us = 82.22 us. */
	coll_expect(&f.sys, &r, "simple", 20e-6 + 1.75 * 16e6 / 450e9);
	/* A 100 GB/s cap on LL's bus bandwidth (NCCL's llMaxBws): at 1 MB LL
	 * needs 5 + 1.75 MB / 100 GB/s = 22.5 us, still under Simple's
	 * 20 + 3.89 = 23.89 us: LL, at the capped time. */
	f.lib.proto[PROTO_LL].max_busbw_Bps[SCALE_1NODE] = 100e9;
	r.bytes = 1e6;
	coll_expect(&f.sys, &r, "ll", 5e-6 + 1.75e6 / 100e9);
}

#define MiB 1048576.0

/* A Simple ring pipeline for the fixture's library: chunk c, 2 slices,
 * o per slice, on K channels (the kernel units a collective holds). */
static void ring_pipeline(struct fx *f, double chunk_B, double sync_s,
			  int64_t K)
{
	struct coll_pipe_spec *ps = &f->lib.algo[ALGO_RING].pipe[PROTO_SIMPLE];

	*ps = (struct coll_pipe_spec){ .chunk_B = chunk_B, .slices = 2,
				       .sync_s = sync_s, .stages = 1 };
	f->lib.kernel_units.scale_up = K;
}

Test(net_coll, ring_pays_a_sync_per_slice_per_loop)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 64 * MiB, NULL, 8, ALGO_RING, 1, NULL };

	fx_switch(&f, 1);
	ring_pipeline(&f, MiB, 1e-6, 4);
	/* A loop moves K p c = 4 x 8 x 1 MiB = 32 MiB: 64 MiB is 2 loops of
	 * 2(p-1) = 14 steps of 2 slices at 1 us: 56 us beyond the ring's
	 * 1.75 n / 450 GB/s = 260.9 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s,
	       1.75 * 64 * MiB / 450e9 + 56e-6, 1e-6);
	/* Reduce-scatter and all-gather pass a chunk in p-1 = 7 steps: 2
	 * loops x 7 x 2 x 1 us = 28 us beyond 7/8 n / 450 GB/s. */
	r.op = COLL_REDUCESCATTER;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 0.875 * 64 * MiB / 450e9 + 28e-6, 1e-6);
	r.op = COLL_ALLGATHER;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 0.875 * 64 * MiB / 450e9 + 28e-6, 1e-6);
	/* 1 MiB is one loop of smaller chunks, the same 7 x 2 stops: 14 us. */
	r.bytes = MiB;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 0.875 * MiB / 450e9 + 14e-6,
	       1e-6);
}

Test(net_coll, nvls_fills_its_stages)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 4 * MiB, NULL, 8, ALGO_NVLS, 1, NULL };

	fx_switch(&f, 1);
	f.lib.algo[ALGO_NVLS].pipe[PROTO_SIMPLE] = (struct coll_pipe_spec){
		.chunk_B = 64 * 1024, .channels = 2, .slices = 1,
		.sync_s = 1e-6, .stages = 3 };
	/* A loop: 2 channels x 8 heads x 64 KiB = 1 MiB; 4 MiB is 4 loops,
	 * 4 x 1 us of sync; 3 stages hold 2 loops in flight: the volume
	 * grows by 2 x 1 MiB / 4 MiB = 1/2. NVLS alone moves n at
	 * 450 / 1.125 = 400 GB/s: 1.5 x 4 MiB / 400 GB/s + 4 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 1.5 * 4 * MiB / 400e9 + 4e-6,
	       1e-6);
}

Test(net_coll, nvls_loops_last_their_channels_serial_chunks)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 64 * 1024, NULL, 8, ALGO_NVLS, 1, NULL };
	struct coll_pipe_spec *ps = &f.lib.algo[ALGO_NVLS].pipe[PROTO_SIMPLE];

	fx_switch(&f, 1);
	*ps = (struct coll_pipe_spec){ .chunk_B = 16 * 1024, .channels = 2,
				       .slices = 1, .stages = 3,
				       .chunk_time_s = 2e-6 };
	/* A loop: 2 channels x 8 heads x 16 KiB = 256 KiB. 64 KiB is one
	 * loop, its first channel holds 4 chunks: 2 us x 4 x (1 + 2) / 3 =
	 * 8 us, above the links' 3 x 64 KiB / 400 GB/s = 0.49 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 8e-6, 1e-6);
	/* 4 MiB: 16 loops of 8 chunks a channel, pipelined over 3 stages:
	 * 2 us x 8 x (16 + 2) / 3 = 96 us (the links: 1.125 x 4 MiB /
	 * 400 GB/s = 11.8 us). */
	r.bytes = 4 * MiB;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 96e-6, 1e-6);
	/* 0.05 us a chunk: 2.4 us, below the links': they bind. */
	ps->chunk_time_s = 0.05e-6;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 1.125 * 4 * MiB / 400e9, 1e-6);
}

Test(net_coll, nvls_cells_spread_a_loop_over_channels)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 64 * 1024, NULL, 8, ALGO_NVLS, 1, NULL };
	struct coll_pipe_spec *ps = &f.lib.algo[ALGO_NVLS].pipe[PROTO_SIMPLE];

	fx_switch(&f, 1);
	*ps = (struct coll_pipe_spec){ .chunk_B = 16 * 1024, .channels = 2,
				       .slices = 1, .stages = 3,
				       .chunk_time_s = 2e-6,
				       .channel_cell_B = 16 * 1024 };
	/* 64 KiB over 2 channels in 16 KiB cells: 32 KiB each, 2 chunks:
	 * 2 us x 2 x (1 + 2) / 3 = 4 us (first fill: 4 chunks, 8 us). */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 4e-6, 1e-6);
}

Test(net_coll, the_library_chooses_without_its_loop_costs)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 64 * MiB, NULL, 8, -1, 1, NULL };
	struct net_coll_result out;

	fx_switch(&f, 1);
	/* NVLS pays 1 ms per 32 MiB loop (2 channels x 8 heads x 2 MiB):
	 * 2 ms in all, where a ring would take 260.9 us. The library's own
	 * model does not see it (64 MiB / 400 GB/s = 167.8 us against the
	 * ring's 260.9 us), so NVLS stays its choice, at its full time:
	 * 167.8 us + 2 ms. */
	f.lib.algo[ALGO_NVLS].pipe[PROTO_SIMPLE] = (struct coll_pipe_spec){
		.chunk_B = 2 * MiB, .channels = 2, .slices = 1,
		.sync_s = 1e-3, .stages = 1 };
	out = coll_timed(&f.sys, &r);
	cr_assert_str_eq(out.algorithm, "nvls");
	EQ_REL(out.time_s, 64 * MiB / 400e9 + 2e-3, 1e-6);
}

Test(net_coll, sustained_busbw_bounds_the_kernels)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 8, -1, 1, NULL };
	struct net_coll_result out;

	fx_switch(&f, 1);
	f.sys.algorithm = ALGO_RING;
	/* Simple kernels that sustain 100 GB/s of bus bandwidth: the ring's
	 * 1.75 n at most 100 GB/s instead of 450: 18.79 ms for 1 GiB. */
	f.lib.proto[PROTO_SIMPLE].sustained_busbw_Bps = 100e9;
	out = coll_timed(&f.sys, &r);
	EQ_REL(out.busbw_Bps, 100e9, 1e-6);
	/* Unseen by the choice: with LL offered at half the bytes (busbw
	 * 225 GB/s by the library's model, 450 x 0.5) Simple still wins the
	 * choice (450 GB/s by that model) and runs capped. */
	f.lib.algo[ALGO_RING].protocols.on[PROTO_LL] = 1;
	f.lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	out = coll_timed(&f.sys, &r);
	cr_assert_str_eq(out.protocol, "simple");
	EQ_REL(out.busbw_Bps, 100e9, 1e-6);
}

Test(net_coll, net_overhead_floors_ring_steps_not_tree_steps)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 0, NULL, 16, ALGO_RING, 1, NULL };
	struct coll_algo_spec *ring = fx_switch_ring_latency(&f);

	f.lib.algo[ALGO_TREE] = *ring;
	f.lib.net_overhead.s[PROTO_SIMPLE] = 3e-6;
	/* NCCL's tuning.cc floors a ring's intra-node steps at the net
	 * overhead when the ring spans nodes: p = 16, N = 2: 28 intra steps
	 * at max(1, 3) us and 2 net steps: 10 + 28 * 3 + 2 * 5 = 104 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 104e-6, 1e-6);
	/* The tree keeps its intra-node latency (RCCL's 2-node MI300X tree
	 * LL is 12 + 2 (7 x 0.9 + 10.5) = 45.6 us, the 47.2 us rccl-tests
	 * shows at 1 KiB on MI355X): 10 + 2 (7 * 1 + 1 * 5) = 34 us. */
	r.algo = ALGO_TREE;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 34e-6, 1e-6);
}

Test(net_coll, select_bw_steers_the_choice_not_the_time)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 16, ALGO_TREE, 1, NULL };
	struct net_coll_result tree, ring, chosen;

	fx_mesh(&f, 2);
	f.lib.algo[ALGO_DIRECT].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_RHD].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_HIER].protocols.on[PROTO_SIMPLE] = 0;
	tree = coll_timed(&f.sys, &r);
	r.algo = ALGO_RING;
	ring = coll_timed(&f.sys, &r);
	/* With latencies 0 the fabric moves 1 GiB faster by tree than by
	 * ring here (a tree link carries n, a ring link 2(p-1)/p n), so the
	 * ideal library picks the tree. */
	cr_assert_lt(tree.time_s, ring.time_s);
	r.algo = -1;
	cr_assert_str_eq(coll_timed(&f.sys, &r).algorithm, "tree");
	/* RCCL's tuner sees trees across 2 nodes at 0.11 of their bandwidth
	 * (bwRatio, tuning_model_5): t_choice = 0 + t_tree / 0.11, far above
	 * t_ring, so it runs the ring, at the ring's own time. */
	f.lib.algo[ALGO_TREE].select_bw[SCALE_2NODES].r[PROTO_SIMPLE] = 0.11;
	chosen = coll_timed(&f.sys, &r);
	cr_assert_str_eq(chosen.algorithm, "ring");
	EQ_REL(chosen.time_s, ring.time_s, 1e-9);
	/* The ratio is per node-count class: on one node it does not apply. */
	r.n = 8;
	f.lib.algo[ALGO_TREE].select_bw[SCALE_1NODE].r[PROTO_SIMPLE] = 1;
	cr_assert_eq(algo_scale(1), SCALE_1NODE);
	cr_assert_eq(algo_scale(2), SCALE_2NODES);
	/* NCCL's index2: 3 nodes already use the "more than 2" column. */
	cr_assert_eq(algo_scale(3), SCALE_4NODES);
}

Test(net_coll, ring_plateau_steers_the_choice_across_nodes)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 16, ALGO_TREE, 1, NULL };
	struct coll_algo_spec *ring, *tree;
	struct net_coll_result out;
	double t_tree, t_ring;

	fx_mesh(&f, 2);
	f.lib.algo[ALGO_DIRECT].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_RHD].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_HIER].protocols.on[PROTO_SIMPLE] = 0;
	ring = &f.lib.algo[ALGO_RING];
	tree = &f.lib.algo[ALGO_TREE];
	t_tree = coll_timed(&f.sys, &r).time_s;
	r.algo = ALGO_RING;
	t_ring = coll_timed(&f.sys, &r).time_s;
	/* Ring base 200 us; the tree's base puts it at t_ring + 250 us:
	 * the ring wins by 50 us and runs at t_ring + 200 us. */
	ring->base.s[PROTO_SIMPLE] = 200e-6;
	tree->base.s[PROTO_SIMPLE] = t_ring - t_tree + 250e-6;
	r.algo = -1;
	out = coll_timed(&f.sys, &r);
	cr_assert_str_eq(out.algorithm, "ring");
	EQ_REL(out.time_s, t_ring + 200e-6, 1e-9);
	/* NCCL's ring plateau across nodes: the tuner sees the ring's
	 * latency x 1.4 = 280 us > 250 and takes the tree, which runs at its
	 * own t_ring + 250 us (the factor is the choice's only). */
	ring->select_lat_nodes.r[PROTO_SIMPLE] = 1.4;
	ring->select_lat_nodes_min_B = 64;
	out = coll_timed(&f.sys, &r);
	cr_assert_str_eq(out.algorithm, "tree");
	EQ_REL(out.time_s, t_ring + 250e-6, 1e-9);
	/* From 64 B per channel (64) and rank (16): 65536 B on, 65535 B
	 * off; one node, or an all-gather, never. */
	EQ_REL(coll_lib_lat_factor(&f.lib, ALGO_RING, PROTO_SIMPLE,
				   COLL_ALLREDUCE, 65536, 16, 2), 1.4, 1e-12);
	EQ_REL(coll_lib_lat_factor(&f.lib, ALGO_RING, PROTO_SIMPLE,
				   COLL_ALLREDUCE, 65535, 16, 2), 1.0, 1e-12);
	EQ_REL(coll_lib_lat_factor(&f.lib, ALGO_RING, PROTO_SIMPLE,
				   COLL_ALLREDUCE, GiB, 8, 1), 1.0, 1e-12);
	EQ_REL(coll_lib_lat_factor(&f.lib, ALGO_RING, PROTO_SIMPLE,
				   COLL_ALLGATHER, GiB, 16, 2), 1.0, 1e-12);
}

/* RCCL's gfx950 all-reduce ranges (tuning_model_6 llProtoRanges). */
static int64_t ar_ll[] = {0, 131071}, ar_ll128[] = {131071, 17660227};
static int64_t ag_ll128[] = {7, 8388608};

static void gfx950_ranges(struct fx *f)
{
	int a;

	f->lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	f->lib.proto[PROTO_LL128].bandwidth_factor = 0.875;
	for (a = ALGO_RING; a <= ALGO_TREE; a++) {
		f->lib.algo[a].protocols.on[PROTO_LL] = 1;
		f->lib.algo[a].protocols.on[PROTO_LL128] = 1;
	}
	f->lib.ranges[COLL_ALLREDUCE].proto[PROTO_LL] =
		(struct schema_int_list){ ar_ll, 2, 1 };
	f->lib.ranges[COLL_ALLREDUCE].proto[PROTO_LL128] =
		(struct schema_int_list){ ar_ll128, 2, 1 };
	f->lib.ranges[COLL_ALLGATHER].proto[PROTO_LL128] =
		(struct schema_int_list){ ag_ll128, 2, 1 };
}

Test(net_coll, protocol_ranges_pick_the_size_class)
{
	struct fx f;

	fx_mesh(&f, 2);
	gfx950_ranges(&f);
	/* All-reduce: the buffer decides (rcclGetSizePerRank). 64 KiB is in
	 * LL's (0, 131071], 128 KiB = 131072 just past it and in LL128's,
	 * 17660227 the last LL128 size, 32 MiB Simple. */
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLREDUCE, 65536, 16, 2),
		     PROTO_LL);
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLREDUCE, 131072, 16, 2),
		     PROTO_LL128);
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLREDUCE, 17660227, 16, 2),
		     PROTO_LL128);
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLREDUCE, 33554432, 16, 2),
		     PROTO_SIMPLE);
	/* All-gather: a rank's share. 128 MiB over 16 ranks is 8 MiB =
	 * 8388608, LL128's last size; 256 MiB gives 16 MiB: Simple. */
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLGATHER, 134217728, 16, 2),
		     PROTO_LL128);
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLGATHER, 268435456, 16, 2),
		     PROTO_SIMPLE);
	/* One node, or an operation without ranges: the tuner decides. */
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_ALLREDUCE, 65536, 8, 1), -1);
	cr_assert_eq(coll_lib_range_proto(&f.lib, COLL_REDUCESCATTER, 65536, 16, 2),
		     -1);
}

Test(net_coll, protocol_ranges_override_the_tuner_across_nodes)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 1048576, NULL, 16, ALGO_RING, 1, NULL };
	struct net_coll_result out;

	fx_mesh(&f, 2);
	gfx950_ranges(&f);
	/* Every latency 0, so the tuner takes Simple at any size (the most
	 * bytes per line); RCCL then forces LL128 on 1 MiB across 2 nodes,
	 * keeping the ring, and the time is LL128's: its 1/0.875 line bytes
	 * over the same links, 8/7 of Simple's. */
	f.sys.algorithm = ALGO_RING;
	out = coll_timed(&f.sys, &r);
	cr_assert_str_eq(out.protocol, "ll128");
	f.sys.protocol = PROTO_SIMPLE;
	EQ_REL(out.time_s, coll_timed(&f.sys, &r).time_s / 0.875, 1e-9);
	/* A forced protocol (NCCL_PROTO) wins over the ranges. */
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "simple");
	f.sys.protocol = -1;
	/* 64 KiB: LL. */
	r.bytes = 65536;
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "ll");
	/* The same sizes on one node keep the tuner's Simple. */
	r.n = 8;
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "simple");
	/* An algorithm without LL128 keeps its protocol. */
	r.n = 16;
	r.bytes = 1048576;
	f.lib.algo[ALGO_RING].protocols.on[PROTO_LL128] = 0;
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "simple");
}

Test(net_coll, endpoint_bandwidth_caps_a_gpu_with_all_links_busy)
{
	struct fx f;
	struct run r = { COLL_ALLGATHER, GiB, NULL, 8, ALGO_DIRECT, 1, NULL };
	struct net_coll_result out;
	double one;

	fx_mesh(&f, 1);
	/* All-gather in one shot: each GPU sends its GiB/8 to each of its 7
	 * peers, one per 64 GB/s link: GiB/8 / 64 GB/s = 2.097 ms. */
	one = coll_timed(&f.sys, &r).time_s;
	EQ_REL(one, GiB / 8 / 64e9, 1e-6);
	/* With the GPU's ports together capped at 224 GB/s (half of 7 x 64)
	 * its 7 x GiB/8 out go at 224 GB/s: twice as long, 4.194 ms. */
	f.up.endpoint_bandwidth_Bps = 224e9;
	out = coll_timed(&f.sys, &r);
	EQ_REL(out.time_s, 7 * GiB / 8 / 224e9, 1e-6);
	/* A send between two GPUs uses one link, below the cap: 64 GB/s. */
	r.op = COLL_SENDRECV;
	r.n = 2;
	r.algo = -1;
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / 64e9, 1e-6);
}

Test(net_coll, direct_allreduce_is_two_all_pairs_shots)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 8, ALGO_DIRECT, 1, NULL };
	struct net_coll_result out;

	fx_mesh(&f, 1);
	f.lib.algo[ALGO_DIRECT].base.s[PROTO_SIMPLE] = 4e-6;
	f.lib.algo[ALGO_DIRECT].hop_scale_up.s[PROTO_SIMPLE] = 1e-6;
	out = coll_timed(&f.sys, &r);
	/* MSCCL's all-pairs all-reduce (RCCL allreduce-allpairs-8n-*.xml):
	 * a reduce-scatter phase sending n/p = 128 MiB over each of the 7
	 * links of 64 GB/s, then an all-gather phase doing the same:
	 * 2 * (134217728 / 64e9) = 4.194 ms, plus 4 + 1 us (first phase:
	 * base and one step) and 1 us (second phase: one step). */
	EQ_REL(out.time_s, 2 * (GiB / 8) / 64e9 + 6e-6, 1e-6);
}

Test(net_coll, max_bytes_hands_large_collectives_on)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 1e6, NULL, 8, -1, 1, NULL };

	fx_mesh(&f, 1);
	f.lib.algo[ALGO_RHD].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_HIER].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_TREE].protocols.on[PROTO_SIMPLE] = 0;
	f.lib.algo[ALGO_RING].base.s[PROTO_SIMPLE] = 20e-6;
	/* Direct moves 2n/p per link vs the ring's 2(p-1)/p n/7 per cycle
	 * link: with the ring's 20 us base, direct wins at 1 MB... */
	cr_assert_str_eq(coll_timed(&f.sys, &r).algorithm, "direct");
	/* ...unless the library runs it only up to 512 KB (MSCCL maxBytes):
	 * then the tuner's ring. */
	f.lib.algo[ALGO_DIRECT].max_bytes = 512e3;
	cr_assert_str_eq(coll_timed(&f.sys, &r).algorithm, "ring");
	r.bytes = 4096;
	cr_assert_str_eq(coll_timed(&f.sys, &r).algorithm, "direct");
}

Test(net_coll, proto_max_bytes_hands_a_protocol_on)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 524287, NULL, 8, ALGO_RING, 1, NULL };
	struct coll_algo_spec *ring;

	ring = ll_and_simple_ring(&f);
	/* As protocol_choice_follows_size: LL 5 us + 1.75 n * 2 / 450 GB/s,
	 * Simple 20 us + 1.75 n / 450 GB/s, crossing at 3.857 MB. With LL's
	 * program ending at 524287 B (MSCCL all-pairs maxBytes), 524287 B
	 * still runs LL: 5 + 4.078 = 9.078 us... */
	ring->proto_max_bytes.b[PROTO_LL] = 524287;
	coll_expect(&f.sys, &r, "ll", 5e-6 + 1.75 * 524287 * 2 / 450e9);
	/* ...and one byte more runs Simple, though LL would be 11 us faster:
	 * 20 + 1.75 x 524288 / 450e9 = 20 + 2.039 = 22.039 us. */
	r.bytes = 524288;
	coll_expect(&f.sys, &r, "simple", 20e-6 + 1.75 * 524288 / 450e9);
	/* A protocol the system forces is run as asked. */
	f.sys.protocol = PROTO_LL;
	coll_expect(&f.sys, &r, "ll", 5e-6 + 1.75 * 524288 * 2 / 450e9);
}

Test(net_coll, tuner_view_scales_the_choice_only)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 1e6, NULL, 8, ALGO_RING, 1, NULL };
	struct coll_algo_spec *ring = ll_and_simple_ring(&f);
	int64_t pct[] = { 100, 50, 10 };

	/* Bucket floor(log2(bytes / 64)): 127 B is 0, 128 - 255 B are 1;
	 * from 256 B every bucket takes the list's last entry. */
	ring->select_size_pct.l[PROTO_LL] = (struct schema_int_list){ pct, 3, 1 };
	EQ_REL(coll_lib_size_factor(&f.lib, ALGO_RING, PROTO_LL, 127, 1), 1.0, 1e-12);
	EQ_REL(coll_lib_size_factor(&f.lib, ALGO_RING, PROTO_LL, 255, 1), 0.5, 1e-12);
	EQ_REL(coll_lib_size_factor(&f.lib, ALGO_RING, PROTO_LL, 256, 1), 0.1, 1e-12);
	/* As protocol_choice_follows_size LL wins 1 MB (12.78 us against
	 * 23.89) unscaled. At 10 % the choice sees LL at 5 + 7.778 / 0.1 =
	 * 82.78 us and takes Simple, timed as it runs: 20 + 3.889 us. */
	coll_expect(&f.sys, &r, "simple", 20e-6 + 1.75e6 / 450e9);
	/* From 2 nodes only (RCCL's rings): on one node LL again. */
	ring->select_size_min_nodes = 2;
	coll_expect(&f.sys, &r, "ll", 5e-6 + 1.75e6 * 2 / 450e9);
	/* A tuner that times LL's 14 switch steps at 1 us each (cost: 0)
	 * sees 5 + 14 + 7.778 = 26.78 us > 23.89: Simple, timed as it runs. */
	ring->select_hop_scale_up.s[PROTO_LL] = 1e-6;
	coll_expect(&f.sys, &r, "simple", 20e-6 + 1.75e6 / 450e9);
}

Test(net_coll, rings_on_own_nics_skip_the_hop_to_a_rail)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 16, ALGO_RING, 1, NULL };

	fx_mesh(&f, 2);
	f.out_link.lane_rate_Bps = 100e9;
	/* 2 nodes of 8 on a 64 GB/s mesh, 8 NICs of 100 GB/s; 7 cycles x 8
	 * rails = 56 channels of rate x, each link carrying 2(p-1)/p n/56.
	 * Rail-local rings (PXN): a node's part of a channel is its cycle
	 * closed (7 chain hops + the hop back to the rail's GPU), so each
	 * directed link of a cycle carries its 8 channels: 8x <= 64 GB/s;
	 * a NIC sends 7 channels: 7x <= 100. Links bind: busbw 56 x 8 =
	 * 448 GB/s, T = 1.875 GiB / 448 GB/s = 4.494 ms. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 1.875 * GiB / 448e9, 1e-6);
	/* Own NICs: each channel leaves on its last GPU's NIC, so a node
	 * runs 7 of its cycle's 8 links, a different one idle per rail:
	 * 7x <= 64 GB/s (NICs still 7x <= 100): busbw 56 x 64/7 = 512
	 * GB/s, T = 1.875 GiB / 512 GB/s = 3.932 ms. */
	f.lib.ring_own_nics = 1;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 1.875 * GiB / 512e9, 1e-6);
	/* Three nodes: node 1 runs reversed and node 2 forward again, so
	 * node 2's last GPU leaves on its own rail and node 0 takes the
	 * data in on the channel's rail (through the spine, 16-port
	 * switches, 2 tiers): the xGMI links still bind at 7x <= 64 GB/s.
	 * p = 24: T = 2 x 23/24 GiB / 512 GB/s = 4.019 ms. */
	fx_mesh(&f, 3);
	f.out_link.lane_rate_Bps = 100e9;
	f.lib.ring_own_nics = 1;
	r.n = 24;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 2.0 * 23 / 24 * GiB / 512e9,
	       1e-6);
}

Test(net_coll, tree_up_then_down_runs_two_one_way_phases)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 112 * 1048576.0, NULL, 8, ALGO_TREE,
			 1, NULL };
	struct coll_pipe_spec *ps;
	double n = r.bytes, both, seq;

	fx_mesh(&f, 1);
	ps = &f.lib.algo[ALGO_TREE].pipe[PROTO_SIMPLE];
	ps->chunk_B = 1048576;
	ps->slices = 1;
	ps->sync_s = 1e-6;
	f.lib.kernel_units.scale_up = 7;
	/* One node of 8 on a 64 GB/s mesh: 7 channels, each a chain of 7
	 * arcs of its own Hamiltonian cycle, n/7 each. At once, every arc
	 * carries one channel's broadcast and another's reduce: 32 GB/s a
	 * flow, n/7 / 32 GB/s = n / 224 GB/s. A loop moves 7 x 1 MiB, so
	 * 112 MiB is 16 loops, 1 us of sync each; the chunk climbs D = 7
	 * hops up and 7 down: fill 2D - 1 = 13 loops of the 16:
	 *   T = n/224e9 (1 + 13/16) + 16 us = 0.9663 ms. */
	both = coll_timed(&f.sys, &r).time_s;
	EQ_REL(both, n / 224e9 * (1 + 13.0 / 16) + 16e-6, 1e-6);
	/* Up, then down: each phase has every arc to one flow, n/7 at
	 * 64 GB/s = n / 448 GB/s, fills D - 1 = 6 loops of 16 and syncs
	 * 16 times: T = 2 (n/448e9 (1 + 6/16) + 16 us) = 0.7528 ms: the
	 * shorter fill outweighs the second round of syncs here. */
	f.lib.algo[ALGO_TREE].up_then_down.on[PROTO_SIMPLE] = 1;
	seq = coll_timed(&f.sys, &r).time_s;
	EQ_REL(seq, 2 * (n / 448e9 * (1 + 6.0 / 16) + 16e-6), 1e-6);
}

/* Time an all-to-all of `bytes` over GPUs 0..n-1 on a dispatcher path. */
static double path_time(struct net *n, uint32_t ngpus, double bytes,
			const struct coll_path *path)
{
	struct diag d;
	struct net_coll_result out;
	struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = bytes,
			       .gpus = coll_ids, .ngpus = ngpus, .algo = -1,
			       .proto = -1, .replicas = 1, .path = path };

	diag_init(&d, NULL);
	cr_assert_eq(net_collective_time(n, &c, &out, &d), 0);
	return out.time_s;
}

Test(net_coll, chunk_rounds_leave_a_round_of_the_forward_unhidden)
{
	struct fx f;
	struct diag d;
	struct net *n;
	struct coll_path p = { .mode = COLL_PATH_FORWARD, .node_share = 0.5,
			       .name = "x" };
	double v = GiB, t_out, t_fwd, t_local;

	fx_switch(&f, 2);
	diag_init(&d, NULL);
	n = net_new(&f.sys, NULL, &d);
	cr_assert_not_null(n);
	/* 16 ranks on 2 nodes, v = 16 GiB / 16 = 1 GiB to each peer. A
	 * source sends 7 v to its node's GPUs (450 GB/s switch link), 0.5 x
	 * 8 v = 4 v over its NIC (50 GB/s) to its rail peer, which forwards
	 * 7 v to the other 7 GPUs of its node. Each GPU's switch link
	 * carries its own 7 v and its rail peer's forward, 7 v: 14 v /
	 * 450e9 = 33.4 ms < 4 v / 50e9 = 85.9 ms: the NIC binds. */
	t_out = 4 * v / 50e9;
	t_fwd = 7 * v / 450e9;	/* all of the forward, alone */
	t_local = 7 * v / 450e9;	/* all of the own node's sends, alone */
	EQ_REL(path_time(n, 16, 16 * GiB, &p), t_out, 1e-6);
	/* dispatch, 2 rounds: the main phase keeps the NIC-bound 4 v (its
	 * switch links carry 7 v + 3.5 v), then the last round's forward,
	 * 3.5 v a switch link: + t_fwd / 2 (the same net: the plan cache
	 * keeps the two paths apart) */
	p.rounds = 2;
	EQ_REL(path_time(n, 16, 16 * GiB, &p), t_out + t_fwd / 2, 1e-6);
	/* one round: the forward waits for the whole send */
	p.rounds = 1;
	EQ_REL(path_time(n, 16, 16 * GiB, &p), t_out + t_fwd, 1e-6);
	/* combine, 2 rounds: the first round's gather (the forward's links,
	 * 3.5 v), the NIC-bound main phase, the last round's own-node reads
	 * (3.5 v) */
	p.rounds = 2;
	p.combine = 1;
	EQ_REL(path_time(n, 16, 16 * GiB, &p),
	       t_fwd / 2 + t_out + t_local / 2, 1e-6);
	/* inside one node nothing crosses: no phase of its own, 7/8 of 8 GiB
	 * over each 450 GB/s link */
	EQ_REL(path_time(n, 8, 8 * GiB, &p), 7 * v / 450e9, 1e-6);
	p.rounds = 0;
	EQ_REL(path_time(n, 16, 16 * GiB, &p), t_out, 1e-6);
	net_free(n);
}

/* NCCL's p2p pipeline as configs/collectives/nccl.yaml states it: 512 KiB
 * steps (NCCL_P2P_NVL_CHUNKSIZE), one sync each, 32 channels. */
static void p2p_pipeline(struct fx *f, double sync_s)
{
	f->lib.algo[ALGO_P2P].pipe[PROTO_SIMPLE] = (struct coll_pipe_spec){
		.chunk_B = 512 * 1024, .channels = 32, .slices = 1,
		.sync_s = sync_s, .stages = 1 };
}

Test(net_coll, alltoall_in_one_node_syncs_per_p2p_chunk)
{
	struct fx f;
	static double m[64];
	struct run r = { COLL_ALLTOALL, 256 * MiB, NULL, 8, ALGO_P2P, 1, NULL };
	double bare, even, uneven, uneven_bare;
	uint32_t i, j;

	fx_switch(&f, 1);
	p2p_pipeline(&f, 0);
	bare = coll_timed(&f.sys, &r).time_s;
	/* Each rank sends 7/8 of 256 MiB through its 450 GB/s switch
	 * link: 7/8 x 256 MiB / 450e9 = 521.9 us, whatever the sync. */
	EQ_REL(bare, 0.875 * 256 * MiB / 450e9, 1e-6);
	/* A loop of the 32 channels moves 32 x 512 KiB = 16 MiB: 256 MiB
	 * is 16 loops of one step, 2 us each: 32 us more. */
	p2p_pipeline(&f, 2e-6);
	even = coll_timed(&f.sys, &r).time_s;
	EQ_REL(even - bare, 32e-6, 1e-4);
	/* The same traffic as a matrix (32 MiB to each rank, itself
	 * included), as a MoE layer's routing gives it: its plan steps
	 * through its heaviest row, 8 x 32 = 256 MiB, the same 16 loops (it
	 * paid none before). */
	for (i = 0; i < 8; i++)
		for (j = 0; j < 8; j++)
			m[i * 8 + j] = 32 * MiB;
	r.a2a = m;
	uneven = coll_timed(&f.sys, &r).time_s;
	p2p_pipeline(&f, 0);
	uneven_bare = coll_timed(&f.sys, &r).time_s;
	EQ_REL(uneven - uneven_bare, 32e-6, 1e-4);
	/* A context-parallel ring step as train.c gives it: 32 MiB to the
	 * next rank only, nominal size 8 x 32 = 256 MiB. A rank sends 32 MiB
	 * to one peer: 32 MiB / 16 MiB = 2 loops, 4 us, not the nominal
	 * size's 16. */
	for (i = 0; i < 8; i++)
		for (j = 0; j < 8; j++)
			m[i * 8 + j] = j == (i + 1) % 8 ? 32 * MiB : 0;
	uneven_bare = coll_timed(&f.sys, &r).time_s;
	p2p_pipeline(&f, 2e-6);
	uneven = coll_timed(&f.sys, &r).time_s;
	EQ_REL(uneven - uneven_bare, 4e-6, 1e-3);
}

/* The same as nccl.yaml sets it since round 41: 2 stages (a slice is
 * stored in the peer's FIFO, then copied out), a send's channels by its
 * bytes (64 KiB least part, 16 MiB most). */
static void p2p_pipeline_nccl(struct fx *f)
{
	p2p_pipeline(f, 2e-6);
	f->lib.algo[ALGO_P2P].pipe[PROTO_SIMPLE].stages = 2;
	f->lib.algo[ALGO_P2P].pipe[PROTO_SIMPLE].peer_part_min_B = 64 * 1024;
	f->lib.algo[ALGO_P2P].pipe[PROTO_SIMPLE].peer_part_max_B = 16 * MiB;
}

Test(net_coll, alltoall_p2p_sends_take_their_own_channels_and_store_a_chunk)
{
	struct fx f;
	static double m[64];
	struct run r = { COLL_ALLTOALL, 256 * MiB, NULL, 8, ALGO_P2P, 1, NULL };
	double t;
	uint32_t i, j;

	fx_switch(&f, 1);
	p2p_pipeline_nccl(&f);
	/* Even, 256 MiB on 8 ranks: 32 MiB a peer on 4 of the 32 channels
	 * (4 x 8 = 32), 8 MiB = 16 steps of 512 KiB a channel: 16 x 2 us;
	 * the first chunk is stored, then forwarded: the volume x (1 +
	 * 1/16). 7/8 x 256 MiB over the 450 GB/s link:
	 *   T = 7/8 x 256 MiB / 450e9 x 17/16 + 32 us = 586.5 us. */
	t = coll_timed(&f.sys, &r).time_s;
	EQ_REL(t, 0.875 * 256 * MiB / 450e9 * 17 / 16 + 32e-6, 1e-4);
	/* 8 MiB: 1 MiB a peer, 4 channels of 256 KiB, one step stored whole
	 * then forwarded: T = 2 x 7/8 x 8 MiB / 450e9 + 2 us = 34.6 us. */
	r.bytes = 8 * MiB;
	t = coll_timed(&f.sys, &r).time_s;
	EQ_REL(t, 2 * 0.875 * 8 * MiB / 450e9 + 2e-6, 1e-4);
	/* A context-parallel ring step (matrix: 32 MiB to the next rank
	 * only): its one send takes 4 channels of 8 MiB, 16 steps: 32 us of
	 * sync, a fill of 1/16:
	 *   T = 32 MiB / 450e9 x 17/16 + 32 us = 111.2 us
	 * (over all 32 channels it would read 2 loops: 4 us, fill 1/2). */
	for (i = 0; i < 8; i++)
		for (j = 0; j < 8; j++)
			m[i * 8 + j] = j == (i + 1) % 8 ? 32 * MiB : 0;
	r.bytes = 256 * MiB;
	r.a2a = m;
	t = coll_timed(&f.sys, &r).time_s;
	EQ_REL(t, 32 * MiB / 450e9 * 17 / 16 + 32e-6, 1e-4);
}

Test(net_coll, alltoall_across_nodes_has_no_p2p_pipeline)
{
	struct fx f;
	struct run r = { COLL_ALLTOALL, 256 * MiB, NULL, 16, ALGO_P2P, 1,
			 NULL };
	double bare;

	/* Across nodes NCCL's p2p chunk is the network's and its proxy
	 * drives the steps: llmsim charges no per-step sync there. */
	fx_switch(&f, 2);
	p2p_pipeline(&f, 0);
	bare = coll_timed(&f.sys, &r).time_s;
	p2p_pipeline(&f, 2e-6);
	EQ_REL(coll_timed(&f.sys, &r).time_s, bare, 1e-9);
}

Test(net_coll, p2p_protocol_is_the_librarys_rule_by_peer_bytes)
{
	struct fx f;
	static double m[64];
	struct run r = { COLL_ALLTOALL, 256 * 1024, NULL, 8, ALGO_P2P, 1,
			 NULL };
	struct coll_algo_spec *p2p = &f.lib.algo[ALGO_P2P];
	struct net_coll_result out;
	uint32_t i;

	fx_switch(&f, 1);
	p2p->protocols.on[PROTO_LL] = 1;
	f.lib.proto[PROTO_LL].bandwidth_factor = 0.5;
	p2p->base.s[PROTO_LL] = 5e-6;
	p2p->base.s[PROTO_SIMPLE] = 20e-6;
	/* No rule: timed, LL wins 256 KiB on 8 ranks (7/8 of it leaves a
	 * rank through its 450 GB/s link): LL 5 + 0.875 x 262144 x 2 /
	 * 450e9 = 5 + 1.019 = 6.019 us against Simple 20 + 0.510 us. */
	coll_expect(&f.sys, &r, "ll", 5e-6 + 0.875 * 262144 * 2 / 450e9);
	/* NCCL's rule, LL up to 16 KiB a peer: 256 KiB / 8 = 32 KiB a peer
	 * runs Simple, 20 + 0.875 x 262144 / 450e9 = 20.510 us. */
	p2p->peer_max_B.b[PROTO_LL] = 16384;
	coll_expect(&f.sys, &r, "simple", 20e-6 + 0.875 * 262144 / 450e9);
	/* 128 KiB is 16 KiB a peer: LL, 5 + 0.875 x 131072 x 2 / 450e9 =
	 * 5.510 us... */
	r.bytes = 131072;
	coll_expect(&f.sys, &r, "ll", 5e-6 + 0.875 * 131072 * 2 / 450e9);
	/* ...even where Simple would time faster (bases swapped: LL 20 +
	 * 0.510 us against Simple 5 + 0.255 us): a rule, not a choice. */
	p2p->base.s[PROTO_LL] = 20e-6;
	p2p->base.s[PROTO_SIMPLE] = 5e-6;
	coll_expect(&f.sys, &r, "ll", 20e-6 + 0.875 * 131072 * 2 / 450e9);
	/* An uneven all-to-all goes by its largest send: 16 KiB to every
	 * peer but rank 0's 16 KiB + 1 B to rank 1 makes it Simple. Its
	 * plan moves the heaviest row, 7 x 16384 + 1 B off its rank:
	 * 5 + 114689 / 450e9 = 5.255 us. */
	for (i = 0; i < 64; i++)
		m[i] = 16384;
	m[1] = 16385;
	r.a2a = m;
	out = coll_timed(&f.sys, &r);
	cr_assert_str_eq(out.protocol, "simple");
	EQ_REL(out.time_s, 5e-6 + 114689 / 450e9, 1e-4);
	/* A send/recv goes by its bytes: 16 KiB LL, 16 KiB + 1 B Simple. */
	r = (struct run){ COLL_SENDRECV, 16384, NULL, 2, ALGO_P2P, 1, NULL };
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "ll");
	r.bytes = 16385;
	cr_assert_str_eq(coll_timed(&f.sys, &r).protocol, "simple");
}
