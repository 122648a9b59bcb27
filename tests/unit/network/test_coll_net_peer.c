/*
 * test_coll_net_peer.c - an all-to-all across nodes on NCCL's p2p channels
 * (src/network/algo.c net_peer_chans / net_send_bound, the library's
 * net_peer): a send to a rank on another node takes the channels
 * ncclTopoGetNchannels / ncclTopoComputeP2pChannels give a network peer
 * (NVIDIA/nccl src/graph/paths.cc), every round of one node delta runs on
 * the same base channel (src/include/channel.h), so a node's 8 peers share
 * those channels, each sending at the GPU's p2p_channel_send. On dgx-h100
 * (one 400 Gb/s NIC a GPU, 16 ring channels across nodes: kernel_units
 * scale_out):
 *   NCCL 2.20-2.28 (nccl-2.28): 2 channels, halved while 2 x ranks > 4 x
 *     16: 2 up to 32 ranks, 1 from 33;
 *   NCCL 2.29+ (nccl): max(1 NIC, ceil(50 / 14)) = 4, halved while
 *     4 x ceil(ranks / 8) > 16: 4 up to 32 ranks, 2 at 64, 1 at 128.
 * A rank's busiest group is a remote node's 8 peers (the local one has 7).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/spec_system.h"
#include "network/net.h"

static const struct system_spec *sys_load(struct arena *a,
					  const char *const *sets, size_t n)
{
	struct diag d;
	struct config_ctx cx = { a, &d, "." };
	struct system_spec *s = arena_alloc(a, system_schema.size);

	diag_init(&d, stderr);
	cr_assert_not_null(s);
	cr_assert_eq(config_load(&cx, &system_schema, "dgx-h100", sets, n, s),
		     0);
	return s;
}

/* The time of an all-to-all of `bytes` over the first `ranks` GPUs
 * (a2a: NULL = even), on dgx-h100 with sets. */
static double a2a_time(const char *const *sets, size_t nsets, uint32_t ranks,
		       double bytes, const double *a2a)
{
	struct arena a;
	uint32_t g[128], k;
	struct coll_desc c = { COLL_ALLTOALL, bytes, g, ranks, a2a, -1, -1, 1,
			       0, NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;
	double t;

	cr_assert(ranks <= 128);
	for (k = 0; k < ranks; k++)
		g[k] = k;
	arena_init(&a);
	diag_init(&d, stderr);
	n = net_new(sys_load(&a, sets, nsets), NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert_str_eq(r.algorithm, "p2p");
	cr_assert_str_eq(r.protocol, "simple");
	t = r.time_s;
	net_free(n);
	arena_release(&a);
	return t;
}

#define GIB4 4294967296.0

/* The bandwidth part want plus the kernel's fixed part: NCCL's p2p base
 * 8.4 us and one network step 14 us (nccl.yaml), under 30 us. */
static void expect_bw(double t, double want)
{
	cr_assert(t >= want && t <= want + 30e-6, "%.9g s vs %.9g s + <30 us",
		  t, want);
}

/* NCCL 2.28 on two nodes (nccl-tests #355's run, 2.28.7): node 1's 8
 * peers share 2 channels at 20.73 GB/s: each rank's 4 GiB / 16 x 8 = 2 GiB
 * take 2 GiB / 41.46 GB/s = 51.80 ms (algbw 82.9, busbw 77.7 GB/s), where
 * its rail NICs alone would take 2 GiB / 49.66 GB/s = 43.2 ms. */
Test(net_coll_net_peer, two_nodes_share_two_channels_before_2_29)
{
	static const char *const sets[] = { "nodes=2",
					    "collectives=nccl-2.28" };

	expect_bw(a2a_time(sets, 2, 16, GIB4, NULL), GIB4 / 2 / (2 * 20.73e9));
}

/* The current release gives the 400 Gb/s peer 4 channels on two nodes
 * (83 GB/s for a node's 8 peers): the NICs bind, as without net_peer. */
Test(net_coll_net_peer, the_current_release_leaves_two_nodes_to_the_nics)
{
	static const char *const on[] = { "nodes=2" };
	static const char *const off[] = {
		"nodes=2", "collectives.net_peer.channels=0",
		"collectives.net_peer.channel_bandwidth=0 B/s" };
	double t = a2a_time(on, 1, 16, GIB4, NULL);
	double t0 = a2a_time(off, 3, 16, GIB4, NULL);

	cr_assert_float_eq(t, t0, t0 * 1e-9, "%.9g vs %.9g", t, t0);
	cr_assert(t < 0.85 * (GIB4 / 2 / (2 * 20.73e9)), "%.9g", t);
}

/* With a 2 GB/s channel every count binds (a remote node's share of 4 GiB
 * over R ranks is 8 x 4 GiB / R on c channels, T = 32 GiB / (R c 2 GB/s)):
 *   2.29+: 16 ranks c 4 -> 4 GiB / 16 GB/s; 64: c 2 -> / 32; 128: c 1 -> / 32
 *   2.28:  16 ranks c 2 -> 4 GiB / 8 GB/s;  64: c 1 -> / 16; 128: c 1 -> / 32
 * (the NICs: 4 GiB x (R - 8) / R / 49.66 GB/s, at most 86.5 ms, less). */
Test(net_coll_net_peer, channels_by_release_and_ranks)
{
	static const char *const base[] = { "gpu.p2p_channel_send=2 GB/s",
					    "collectives=nccl-2.28" };
	static const struct {
		uint32_t ranks;
		const char *nodes;
		double now, old;	/* GB/s of 4 GiB */
	} cases[] = {
		{ 16, "nodes=2", 16e9, 8e9 },
		{ 64, "nodes=8", 32e9, 16e9 },
		{ 128, "nodes=16", 32e9, 32e9 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *sets[3] = { cases[i].nodes, base[0], base[1] };

		expect_bw(a2a_time(sets, 2, cases[i].ranks, GIB4, NULL),
			  GIB4 / cases[i].now);
		expect_bw(a2a_time(sets, 3, cases[i].ranks, GIB4, NULL),
			  GIB4 / cases[i].old);
	}
}

/* Uneven (an MoE exchange): on 2.28's two nodes each rank sends u = 16 MiB
 * to every peer but 9u to the remote one at its own local place + 1: its
 * busiest group is node 1's 7u + 9u = 16u on 2 channels, 256 MiB /
 * 41.46 GB/s = 6.474 ms (even, 8u: half). Each rail NIC carries 9u + 7u
 * = 16u too, at 49.66 GB/s: 5.40 ms, less. */
Test(net_coll_net_peer, the_busiest_node_group_binds)
{
	static const char *const sets[] = { "nodes=2",
					    "collectives=nccl-2.28" };
	double u = 16.0 * 1024 * 1024, m[16 * 16], S = 0;
	uint32_t i, j;

	for (i = 0; i < 16; i++)
		for (j = 0; j < 16; j++) {
			int remote = (i < 8) != (j < 8);

			m[i * 16 + j] = i == j ? 0 :
					remote && j % 8 == (i + 1) % 8 ? 9 * u :
					u;
			S += m[i * 16 + j];
		}
	expect_bw(a2a_time(sets, 2, 16, S / 16, m), 16 * u / (2 * 20.73e9));
}

/* The time of a send/recv of `bytes` from GPU 0 to GPU `to` (dgx-h100,
 * 8 GPUs a node: 8 is node 1's first) with sets. */
static double sendrecv_time(const char *const *sets, size_t nsets,
			    uint32_t to, double bytes)
{
	struct arena a;
	uint32_t g[2] = { 0, to };
	struct coll_desc c = { COLL_SENDRECV, bytes, g, 2, NULL, -1, -1, 1,
			       0, NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;
	double t;

	arena_init(&a);
	diag_init(&d, stderr);
	n = net_new(sys_load(&a, sets, nsets), NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert_str_eq(r.algorithm, "p2p");
	cr_assert_str_eq(r.protocol, "simple");
	t = r.time_s;
	net_free(n);
	arena_release(&a);
	return t;
}

#define GIB1 1073741824.0

/* A pipeline send to the next node on NCCL 2.20-2.28: the one peer gets
 * NCCL_NCHANNELS_PER_NET_PEER's 2 channels (2 x 2 ranks <= 4 x 16: no
 * halving), 2 x 20.73 = 41.46 GB/s under the rail NIC's 49.66: 1 GiB in
 * 1 GiB / 41.46 GB/s = 25.90 ms (the NIC alone: 21.62 ms). */
Test(net_coll_net_peer, a_send_across_nodes_on_two_channels_before_2_29)
{
	static const char *const sets[] = { "nodes=2",
					    "collectives=nccl-2.28" };

	expect_bw(sendrecv_time(sets, 2, 8, GIB1), GIB1 / (2 * 20.73e9));
}

/* The current release gives it max(1 NIC, ceil(50 / 14)) = 4 channels
 * (82.9 GB/s): the NIC binds, as without net_peer; and within a node
 * net_peer plays no part (GPU 1: NVLink). */
Test(net_coll_net_peer, a_send_across_nodes_now_runs_at_the_nic)
{
	static const char *const on[] = { "nodes=2" };
	static const char *const off[] = {
		"nodes=2", "collectives.net_peer.channels=0",
		"collectives.net_peer.channel_bandwidth=0 B/s" };
	static const char *const old[] = { "nodes=2",
					   "collectives=nccl-2.28" };
	double t = sendrecv_time(on, 1, 8, GIB1);
	double t0 = sendrecv_time(off, 3, 8, GIB1);

	cr_assert_float_eq(t, t0, t0 * 1e-9, "%.9g vs %.9g", t, t0);
	cr_assert(t < 0.85 * (GIB1 / (2 * 20.73e9)), "%.9g", t);
	t = sendrecv_time(old, 2, 1, GIB1);
	t0 = sendrecv_time(off, 3, 1, GIB1);
	cr_assert_float_eq(t, t0, t0 * 1e-9, "%.9g vs %.9g", t, t0);
}

/* With a 2 GB/s channel both rules bind, on their own counts (two
 * ranks: neither halves): 2.29+ 4 channels, 1 GiB / 8 GB/s = 134.2 ms;
 * 2.20-2.28 2 channels, 1 GiB / 4 GB/s = 268.4 ms. */
Test(net_coll_net_peer, a_send_across_nodes_takes_its_release_channels)
{
	static const char *const now[] = { "nodes=2",
					   "gpu.p2p_channel_send=2 GB/s" };
	static const char *const old[] = { "nodes=2",
					   "gpu.p2p_channel_send=2 GB/s",
					   "collectives=nccl-2.28" };

	expect_bw(sendrecv_time(now, 2, 8, GIB1), GIB1 / 8e9);
	expect_bw(sendrecv_time(old, 3, 8, GIB1), GIB1 / 4e9);
}
