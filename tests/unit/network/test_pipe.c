/*
 * test_pipe.c - the library's chunked pipeline (src/network/pipe.c):
 * chunk halving, loops, sync stops, fill and the sustained-bandwidth
 * bound, each against a hand derivation.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "network/pipe.h"

#define KiB 1024.0
#define MiB (1024.0 * 1024.0)
#define GiB (1024.0 * MiB)

#define EQ_REL(a, b, rel) cr_assert_float_eq((a), (b), fabs((double)(b)) * (rel) + 1e-12, \
	"%s = %.9g, expected %.9g", #a, (double)(a), (double)(b))

/* NCCL's NVLS pipeline on 8 GPUs: 16 channels x 8 heads = 128 chunks a
 * loop, 128 KiB halved below 64, 8, 2 loops (at most 1, 2, 3 halvings),
 * one 1 us sync per loop, 3 stages. */
static void nvls(struct pipe *pp)
{
	static const int64_t below[] = { 64, 8, 2 }, halvings[] = { 1, 2, 3 };
	struct coll_pipe_spec ps = {
		.chunk_B = 128 * KiB, .halve_below = { (int64_t *)below, 3 },
		.halvings = { (int64_t *)halvings, 3 }, .slices = 1,
		.sync_s = 1e-6, .stages = 3,
	};

	pipe_init(pp, &ps, &(struct pipe_shape){ 16 * 8, 1, 1, 0 });
}

Test(pipe, nvls_chunk_halves_by_nccl_rule)
{
	struct pipe pp;

	nvls(&pp);
	/* 1 GiB = 64 x 128 x 128 KiB: not below 64 loops, the chunk stays
	 * 128 KiB: 1 GiB / (128 x 128 KiB) = 64 loops. */
	EQ_REL(pipe_chunk_B(&pp, GiB), 128 * KiB, 0);
	EQ_REL(pipe_loops(&pp, GiB), 64, 0);
	/* 512 MiB < 1 GiB: 64 KiB (one halving, the first rule's cap);
	 * 512 MiB is not below 8 x 128 x 64 KiB = 64 MiB: 64 loops. */
	EQ_REL(pipe_chunk_B(&pp, 512 * MiB), 64 * KiB, 0);
	EQ_REL(pipe_loops(&pp, 512 * MiB), 64, 0);
	/* 32 MiB < 64 MiB: 32 KiB; not below 2 x 128 x 32 KiB = 8 MiB:
	 * 32 MiB / 4 MiB = 8 loops. */
	EQ_REL(pipe_chunk_B(&pp, 32 * MiB), 32 * KiB, 0);
	EQ_REL(pipe_loops(&pp, 32 * MiB), 8, 0);
	/* 4 MiB < 8 MiB: 16 KiB, a 2 MiB loop: 2 loops. */
	EQ_REL(pipe_chunk_B(&pp, 4 * MiB), 16 * KiB, 0);
	EQ_REL(pipe_loops(&pp, 4 * MiB), 2, 0);
}

/* NCCL's NVLSTree (enqueue.cc): 128 KiB, 64 KiB below 4 loops of
 * 16 channels x 8 heads (its 16 x rule needs a chunk over 128 KiB), 32 KiB below one loop of 64 KiB chunks; from 4
 * nodes capped at 64 KiB (NCCL_NVLSTREE_MAX_CHUNKSIZE), which NCCL
 * applies first and then halves only chunks above 64 KiB: the same as
 * the halvings, then the cap. */
Test(pipe, nvls_tree_chunk_cap_after_halvings)
{
	static const int64_t below[] = { 4, 1 }, halvings[] = { 1, 2 };
	struct coll_pipe_spec ps = {
		.chunk_B = 128 * KiB, .halve_below = { (int64_t *)below, 2 },
		.halvings = { (int64_t *)halvings, 2 }, .slices = 1,
		.sync_s = 1e-6, .stages = 4,
	};
	struct pipe pp;

	pipe_init(&pp, &ps, &(struct pipe_shape){ 16 * 8, 1, 1, 2 });
	/* 1 GiB >= 4 x 128 x 128 KiB = 64 MiB: 128 KiB, 64 loops */
	EQ_REL(pipe_chunk_B(&pp, GiB), 128 * KiB, 0);
	EQ_REL(pipe_loops(&pp, GiB), 64, 0);
	/* 16 MiB < 64 MiB: 64 KiB; not below 1 x 128 x 64 KiB = 8 MiB */
	EQ_REL(pipe_chunk_B(&pp, 16 * MiB), 64 * KiB, 0);
	/* 4 MiB < 8 MiB: 32 KiB */
	EQ_REL(pipe_chunk_B(&pp, 4 * MiB), 32 * KiB, 0);
	/* 4 stages and 2 network hops: 3 + 2 loops to fill */
	EQ_REL(pp.fill, 5, 0);
	pp.max_chunk_B = 64 * KiB;
	/* capped: 1 GiB in 64 KiB chunks, 8 MiB a loop: 128 loops; the
	 * cap does not undo a halving below it (4 MiB stays 32 KiB) */
	EQ_REL(pipe_chunk_B(&pp, GiB), 64 * KiB, 0);
	EQ_REL(pipe_loops(&pp, GiB), 128, 0);
	EQ_REL(pipe_chunk_B(&pp, 16 * MiB), 64 * KiB, 0);
	EQ_REL(pipe_chunk_B(&pp, 4 * MiB), 32 * KiB, 0);
}

Test(pipe, nvls_sync_and_fill)
{
	struct pipe pp;

	nvls(&pp);
	/* 4 MiB in 2 loops of 2 MiB: 2 x 1 us of sync; 3 stages hold
	 * 2 loops in flight: volume x (1 + 2 x 2 MiB / 4 MiB) = x 2. */
	EQ_REL(pipe_sync_s(&pp, 4 * MiB), 2e-6, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, 4 * MiB), 2, 1e-12);
	/* 1 MiB fits one 2 MiB loop: the fill is 2 x the whole size: x 3. */
	EQ_REL(pipe_volume_factor(&pp, MiB), 3, 1e-12);
	/* 1 GiB in 64 loops of 16 MiB: 64 us; fill 1 + 2 x 16 / 1024. */
	EQ_REL(pipe_sync_s(&pp, GiB), 64e-6, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, GiB), 1 + 2 * 16.0 / 1024, 1e-12);
}

Test(pipe, nvls_floor_counts_the_first_channels_chunks)
{
	struct pipe pp;

	nvls(&pp);
	pp.chunk_s = 2e-6;
	pp.chan_chunks = 8;
	pp.plan_B = 1;
	/* Below 2 MiB the chunk is 16 KiB and a channel holds 8 of them a
	 * loop (128 KiB): 1 KiB is 1/16 chunk, one loop, F = 2 stages of
	 * fill: 2 us x 1/16 x (1 + 2) / 3 = 0.125 us; 64 KiB 4 chunks: 8 us;
	 * 128 KiB and 2 MiB a full channel: 16 us. */
	EQ_REL(pipe_floor_s(&pp, KiB), 0.125e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 64 * KiB), 8e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 128 * KiB), 16e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 2 * MiB), 16e-6, 1e-12);
	/* 4 MiB: 2 loops pipelined: 16 us x (2 + 2) / 3 = 21.33 us.
	 * 32 MiB: 32 KiB chunks, 8 loops: 2 us x 8 x 10 / 3 = 53.33 us. */
	EQ_REL(pipe_floor_s(&pp, 4 * MiB), 16e-6 * 4 / 3, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 32 * MiB), 16e-6 * 10 / 3, 1e-12);
	/* The bound: a flow of 2 plan bytes a byte at 128 KiB moves
	 * 2 x 131072 x 3 (one loop's fill) bytes in 16 us: 49.152 GB/s; a
	 * lower library bound stands. */
	EQ_REL(pipe_bound_Bps(&pp, 2, 0, 128 * KiB), 2 * 131072 * 3 / 16e-6,
	       1e-12);
	EQ_REL(pipe_bound_Bps(&pp, 2, 1e9, 128 * KiB), 1e9, 1e-12);
	/* No chunk time: no floor. */
	pp.chunk_s = 0;
	EQ_REL(pipe_floor_s(&pp, 64 * KiB), 0, 0);
	EQ_REL(pipe_bound_Bps(&pp, 2, 0, 128 * KiB), 0, 0);
}

/* NCCL >= 2.20.3 spreads a single-node NVLS all-reduce evenly over its
 * 16 channels (the current one in cells of 16 KiB): the first channel
 * holds its share, not the loop's first 8 chunks. */
Test(pipe, nvls_cells_spread_the_chunks_over_channels)
{
	struct pipe pp;

	nvls(&pp);
	pp.chunk_s = 2e-6;
	pp.chan_chunks = 8;
	pp.plan_B = 1;
	pp.cell_B = 16 * KiB;
	/* 1 KiB: one cell, all of it on one channel: 1/16 chunk, as
	 * without cells: 2 us x 1/16 = 0.125 us. 64 KiB and 256 KiB: at
	 * most one 16 KiB cell a channel (4 and 16 channels): one chunk,
	 * 2 us (first fill: 8 and 16 us). */
	EQ_REL(pipe_floor_s(&pp, KiB), 0.125e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 64 * KiB), 2e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 256 * KiB), 2e-6, 1e-12);
	/* 1 MiB: 64 KiB a channel, 4 chunks: 8 us. 2 MiB: 128 KiB, a full
	 * loop of 8: 16 us, as first fill. 4 MiB: 256 KiB a channel, its own
	 * 2 loops: 16 us x (2 + 2) / 3 = 21.33 us, as first fill. */
	EQ_REL(pipe_floor_s(&pp, MiB), 8e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 2 * MiB), 16e-6, 1e-12);
	EQ_REL(pipe_floor_s(&pp, 4 * MiB), 16e-6 * 4 / 3, 1e-12);
	/* 100 KiB: 6.25 KiB a channel rounds up to one cell: 2 us. */
	EQ_REL(pipe_floor_s(&pp, 100 * KiB), 2e-6, 1e-12);
}

/* NCCL's Simple ring all-reduce on 8 GPUs and 24 channels: a channel
 * handles 8 chunks of 2 MiB a loop and makes 2(p-1) = 14 steps of 2
 * slices, 3.7 us each. */
static void ring(struct pipe *pp)
{
	struct coll_pipe_spec ps = { .chunk_B = 2 * MiB, .slices = 2,
				     .sync_s = 3.7e-6, .stages = 1 };

	pipe_init(pp, &ps, &(struct pipe_shape){ 24 * 8, 14, 1, 0 });
}

Test(pipe, ring_syncs_per_loop)
{
	struct pipe pp;

	ring(&pp);
	/* A loop: 24 x 8 x 2 MiB = 384 MiB; its sync 14 x 2 x 3.7 us =
	 * 103.6 us. 1 MiB and 384 MiB are one loop; 1 GiB is 2.67, so 3. */
	EQ_REL(pipe_chunk_B(&pp, MiB), 2 * MiB, 0);
	EQ_REL(pipe_sync_s(&pp, MiB), 103.6e-6, 1e-12);
	EQ_REL(pipe_loops(&pp, 384 * MiB), 1, 0);
	EQ_REL(pipe_loops(&pp, GiB), 3, 0);
	EQ_REL(pipe_sync_s(&pp, GiB), 3 * 103.6e-6, 1e-12);
	/* One stage: no fill. */
	EQ_REL(pipe_volume_factor(&pp, GiB), 1, 0);
}

Test(pipe, tree_thresholds_scale_with_depth)
{
	static const int64_t below[] = { 8, 4, 1 }, halvings[] = { 2, 3, 4 };
	struct coll_pipe_spec ps = {
		.chunk_B = 512 * KiB, .halve_below = { (int64_t *)below, 3 },
		.halvings = { (int64_t *)halvings, 3 }, .slices = 1,
		.sync_s = 1e-6, .stages = 1,
	};
	struct pipe pp;

	/* A chain of 8 (depth 7) on 24 channels, one chunk each a loop:
	 * per loop 7 x 24 = 168 chunks' worth of threshold. 64 MiB:
	 * below 8 x 168 x 512 KiB -> 256 KiB, below 8 x 168 x 256 KiB ->
	 * 128 KiB (2 halvings: the first rule's cap); below 4 x 168 x 128
	 * KiB = 84 MiB -> 64 KiB; not below 1 x 168 x 64 KiB = 10.5 MiB. */
	pipe_init(&pp, &ps, &(struct pipe_shape){ 24, 1, 7, 13 });
	EQ_REL(pipe_chunk_B(&pp, 64 * MiB), 64 * KiB, 0);
	/* 64 MiB / (24 x 64 KiB) = 42.67 -> 43 loops of 1 us. */
	EQ_REL(pipe_sync_s(&pp, 64 * MiB), 43e-6, 1e-12);
	/* The chunk climbs 7 hops and comes down 7: 13 loops of fill,
	 * 13 x 1.5 MiB over 64 MiB. */
	EQ_REL(pipe_volume_factor(&pp, 64 * MiB), 1 + 13 * 1.5 / 64, 1e-12);
}

/* A group of G broadcast chains on 8 GPUs (depth 7), 24 channels, 512
 * KiB chunks (NCCL's Simple chain step), as algo_ring.c chain_pipe sets
 * it up for coll_desc.group = G. */
static void chain_group(struct pipe *pp, uint32_t G)
{
	struct coll_pipe_spec cs = {
		.chunk_B = 512 * KiB, .slices = 1, .stages = 1, .sync_s = 1e-6,
	};

	pipe_init(pp, &cs, &(struct pipe_shape){ 24, 1, 7, G > 1 ? 0 : 6 });
	pp->chain_group = G;
	pp->chain_K = 24;
	pp->chain_fill_D = G > 1 ? 7 : 0;
}

Test(pipe, chain_group_fills_unless_every_rank_is_a_root)
{
	struct pipe pp;

	/* 32 MiB over 24 channels: 1.33 MiB a channel, n = 3 chunks.
	 * One broadcast: (n + D - 1) / n loops' worth, here the ring's
	 * 1 + 6 x 12 MiB / 32 MiB = 3.25 (a loop 24 x 512 KiB). */
	chain_group(&pp, 1);
	EQ_REL(pipe_volume_factor(&pp, 32 * MiB), 3.25, 1e-12);
	/* Two (roots 0, 1; 16 MiB each on 12 channels): the busiest link
	 * carries min(2, w(t)) operations' chunks in loops t = 1 .. 9,
	 * w = 1 2 3 3 3 3 3 2 1 -> 1 2 2 2 2 2 2 2 1 = 16, over n min(G,
	 * D) = 3 x 2 = 6: 2.67, nearly the single broadcast's fill (the
	 * links between ranks 1 and 7 carry both). */
	chain_group(&pp, 2);
	EQ_REL(pipe_volume_factor(&pp, 32 * MiB), 16.0 / 6, 1e-12);
	/* Eight, one at every rank: w(t) <= 3 < 8, sum w = n D = 21, over
	 * 3 x 7: 1, no fill (each link busy with some operation). */
	chain_group(&pp, 8);
	EQ_REL(pipe_volume_factor(&pp, 32 * MiB), 1, 1e-12);
	/* Four at 1 GiB: n = ceil(1 GiB / 24 / 512 KiB) = 86; w rises
	 * 1 .. 7 and holds 7 for 80 loops: 2 (1 + 2 + 3 + 4 + 4 + 4) +
	 * 80 x 4 = 356 over 86 x 4 = 344: 1.035. */
	chain_group(&pp, 4);
	EQ_REL(pipe_volume_factor(&pp, GiB), 356.0 / 344, 1e-12);
}

Test(pipe, no_chunk_costs_nothing)
{
	struct coll_pipe_spec ps = { .slices = 2, .sync_s = 1e-6, .stages = 3 };
	struct pipe pp;

	/* No chunk in the spec (LL, or a library without the data): no
	 * loops, no sync, no fill. */
	pipe_init(&pp, &ps, &(struct pipe_shape){ 8, 14, 1, 0 });
	EQ_REL(pipe_loops(&pp, GiB), 0, 0);
	EQ_REL(pipe_sync_s(&pp, GiB), 0, 0);
	EQ_REL(pipe_volume_factor(&pp, GiB), 1, 0);
	/* Nor for an empty collective with one. */
	ring(&pp);
	EQ_REL(pipe_sync_s(&pp, 0), 0, 0);
	EQ_REL(pipe_volume_factor(&pp, 0), 1, 0);
}

Test(pipe, sustained_bound_is_the_smaller)
{
	struct pipe pp = { .t_min_s = 2e-9 };

	/* A flow of 1 plan byte per 2 ns: at most 0.5 GB/s; against a
	 * library bound of 0.1 GB/s the smaller holds; no bound: 0.5. */
	EQ_REL(pipe_bound_Bps(&pp, 1, 0, 1), 0.5e9, 1e-12);
	EQ_REL(pipe_bound_Bps(&pp, 1, 0.1e9, 1), 0.1e9, 1e-12);
	EQ_REL(pipe_bound_Bps(&pp, 1, 1e9, 1), 0.5e9, 1e-12);
	pp.t_min_s = 0;
	/* None: the library's bound stands. */
	EQ_REL(pipe_bound_Bps(&pp, 1, 1e9, 1), 1e9, 0);
}

/* NCCL's p2p pipeline inside one node (configs/collectives/nccl.yaml):
 * 512 KiB steps, one 2 us sync each, 32 channels, 2 stages (store, then
 * forward), a send's part per channel at least 64 KiB and at most 16 MiB;
 * p ranks: a send takes at most k0 channels, k0 the largest power of two
 * with k0 p <= 32; frac the largest send to one peer per byte of size. */
static void p2p(struct pipe *pp, uint32_t p, double frac)
{
	struct coll_pipe_spec ps = {
		.chunk_B = 512 * KiB, .slices = 1, .sync_s = 2e-6,
		.stages = 2, .peer_part_min_B = 64 * KiB,
		.peer_part_max_B = 16 * MiB,
	};
	double k0 = 32;

	pipe_init(pp, &ps, &(struct pipe_shape){ 32, 1, 1, 0 });
	pp->chan_chunks = 1;
	while (k0 * p > 32 && k0 > 1)
		k0 /= 2;
	pp->peer_frac = frac;
	pp->peer_chans = k0;
	pp->peer_chans_max = 32;
}

Test(pipe, p2p_send_takes_nccls_channels)
{
	struct pipe pp;

	/* 8 ranks: k0 = 4 (32 x 8, 16 x 8, 8 x 8 > 32; 4 x 8 = 32). */
	p2p(&pp, 8, 1.0 / 8);
	/* 32 KiB: ceil(32 / 64) = 1 channel; 200 KiB: ceil(200 / 64) = 4 */
	EQ_REL(pipe_peer_chans(&pp, 32 * KiB), 1, 0);
	EQ_REL(pipe_peer_chans(&pp, 200 * KiB), 4, 0);
	/* 64 MiB: 4 parts of 16 MiB, not above the most: 4; 128 MiB: 4
	 * parts of 32 MiB > 16 MiB double to 8 of 16 MiB: 8 */
	EQ_REL(pipe_peer_chans(&pp, 64 * MiB), 4, 0);
	EQ_REL(pipe_peer_chans(&pp, 128 * MiB), 8, 0);
	/* 2 ranks: k0 = 16; 1 MiB: ceil(1 MiB / 64 KiB) = 16 */
	p2p(&pp, 2, 1.0 / 2);
	EQ_REL(pipe_peer_chans(&pp, MiB), 16, 0);
	/* 6 ranks: k0 = 4 (8 x 6 = 48 > 32, 4 x 6 = 24) */
	p2p(&pp, 6, 1.0 / 6);
	EQ_REL(pipe_peer_chans(&pp, 64 * MiB), 4, 0);
	/* 64 ranks: k0 = 1; a 1 GiB send doubles 1 -> 2 -> ... -> 32
	 * parts of 32 MiB, and stops there (32 > 32 / 2) */
	p2p(&pp, 64, 1.0 / 64);
	EQ_REL(pipe_peer_chans(&pp, 16 * KiB), 1, 0);
	EQ_REL(pipe_peer_chans(&pp, GiB), 32, 0);
}

Test(pipe, p2p_even_alltoall_steps_its_parts_and_stores_one)
{
	struct pipe pp;

	p2p(&pp, 8, 1.0 / 8);
	/* 256 MiB over 8 ranks: 32 MiB a peer on 4 channels, 8 MiB = 16
	 * steps a channel: 16 x 2 us of sync; the first chunk is stored
	 * before it is forwarded: 1 loop of fill, 512 KiB of the channel's
	 * 8 MiB: volume x (1 + 1/16). */
	EQ_REL(pipe_loops(&pp, 256 * MiB), 16, 0);
	EQ_REL(pipe_sync_s(&pp, 256 * MiB), 32e-6, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, 256 * MiB), 1 + 1.0 / 16, 1e-12);
	/* 8 MiB: 1 MiB a peer, 4 channels of 256 KiB: one step, stored
	 * whole before it is forwarded: volume x 2. */
	EQ_REL(pipe_loops(&pp, 8 * MiB), 1, 0);
	EQ_REL(pipe_volume_factor(&pp, 8 * MiB), 2, 1e-12);
	/* the same without the peers' channels (peer_frac 0): 32 channels
	 * of 256 KiB, the same one loop and factor; at 256 MiB 32 x 8 MiB,
	 * 16 loops: an even all-to-all over 8 = 32 / 4 ranks is the same */
	pp.peer_frac = 0;
	EQ_REL(pipe_loops(&pp, 256 * MiB), 16, 0);
	EQ_REL(pipe_volume_factor(&pp, 8 * MiB), 2, 1e-12);
}

Test(pipe, p2p_one_peer_runs_on_its_own_channels)
{
	struct pipe pp;

	/* A context-parallel ring step: 32 MiB to one peer, its row 32 MiB
	 * (frac 1), 8 ranks: 4 channels of 8 MiB, 16 steps: 32 us of sync
	 * and a fill of 512 KiB of 8 MiB; counted over all 32 channels it
	 * would be 2 loops of 16 MiB, 4 us and a fill of 1/2. */
	p2p(&pp, 8, 1);
	EQ_REL(pipe_loops(&pp, 32 * MiB), 16, 0);
	EQ_REL(pipe_sync_s(&pp, 32 * MiB), 32e-6, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, 32 * MiB), 1 + 1.0 / 16, 1e-12);
	pp.peer_frac = 0;
	EQ_REL(pipe_loops(&pp, 32 * MiB), 2, 0);
	EQ_REL(pipe_volume_factor(&pp, 32 * MiB), 1.5, 1e-12);
}

/* p2p step by step (the GPU's channel send rate known): r_s 20 GB/s a
 * channel, the receiver's local copy at 40 GB/s (pipe.c "p2p"). */
static void p2p_steps(struct pipe *pp, uint32_t p, double frac)
{
	p2p(pp, p, frac);
	pp->peer_send_Bps = 20e9;
	pp->peer_copy_s_per_B = 1 / 40e9;
}

Test(pipe, p2p_steps_sync_after_the_first_and_copy_the_last_step)
{
	struct pipe pp;

	p2p_steps(&pp, 8, 1.0 / 8);
	/* 256 MiB over 8 ranks: 32 MiB a peer on 4 channels of 8 MiB = 16
	 * steps: the first step's sync is the hop (not here), 15 x 2 us =
	 * 30 us, and the last 512 KiB step's receive copy at 40 GB/s:
	 * 524288 / 40e9 = 13.1072 us; no fill: volume x 1. */
	EQ_REL(pipe_sync_s(&pp, 256 * MiB), 30e-6 + 524288 / 40e9, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, 256 * MiB), 1, 0);
	/* 8 MiB: 1 MiB a peer, 4 channels of 256 KiB, one step: no sync
	 * beyond the hop; its copy 262144 / 40e9 = 6.5536 us. */
	EQ_REL(pipe_sync_s(&pp, 8 * MiB), 262144 / 40e9, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, 8 * MiB), 1, 0);
	/* 12 MiB: 1.5 MiB a peer on 4 channels of 384 KiB: one step
	 * whose copy is all 384 KiB: 393216 / 40e9 */
	EQ_REL(pipe_sync_s(&pp, 12 * MiB), 393216 / 40e9, 1e-12);
	/* 40 MiB: 5 MiB a peer, 4 channels of 1.25 MiB = 3 steps (512,
	 * 512, 256 KiB): 2 syncs (4 us) and the last 256 KiB's copy */
	EQ_REL(pipe_sync_s(&pp, 40 * MiB), 4e-6 + 262144 / 40e9, 1e-12);
}

Test(pipe, p2p_steps_bound_the_largest_send_by_its_channels)
{
	struct pipe pp;

	p2p_steps(&pp, 8, 1.0 / 8);
	/* 256 MiB over 8 ranks: 32 MiB a peer on 4 channels: at most
	 * 4 x 20 GB/s = 80 GB/s, under a looser bound or none */
	EQ_REL(pipe_bound_Bps(&pp, 1, 0, 256 * MiB), 80e9, 1e-12);
	EQ_REL(pipe_bound_Bps(&pp, 1, 1e12, 256 * MiB), 80e9, 1e-12);
	/* a tighter bound stands */
	EQ_REL(pipe_bound_Bps(&pp, 1, 50e9, 256 * MiB), 50e9, 1e-12);
	/* 8 KiB: 1 KiB a peer on 1 channel: 20 GB/s */
	EQ_REL(pipe_bound_Bps(&pp, 1, 0, 8 * KiB), 20e9, 1e-12);
	/* 2 ranks, 512 MiB: 256 MiB a peer on 16 channels (16 MiB parts,
	 * not above the most): 320 GB/s */
	p2p_steps(&pp, 2, 1.0 / 2);
	EQ_REL(pipe_bound_Bps(&pp, 1, 0, 512 * MiB), 320e9, 1e-12);
}

Test(pipe, p2p_without_a_send_rate_keeps_the_loops_and_the_fill)
{
	struct pipe pp;

	/* the copy rate alone does not switch the mode: as
	 * p2p_even_alltoall_steps_its_parts_and_stores_one */
	p2p(&pp, 8, 1.0 / 8);
	pp.peer_copy_s_per_B = 1 / 40e9;
	EQ_REL(pipe_sync_s(&pp, 256 * MiB), 32e-6, 1e-12);
	EQ_REL(pipe_volume_factor(&pp, 256 * MiB), 1 + 1.0 / 16, 1e-12);
	EQ_REL(pipe_bound_Bps(&pp, 1, 0, 256 * MiB), 0, 0);
	/* LL (no chunk: no pipeline) never steps, whatever the rate */
	memset(&pp, 0, sizeof(pp));
	pp.peer_frac = 1.0 / 8;
	pp.peer_send_Bps = 20e9;
	EQ_REL(pipe_sync_s(&pp, 256 * MiB), 0, 0);
	EQ_REL(pipe_bound_Bps(&pp, 1, 0, 256 * MiB), 0, 0);
}
