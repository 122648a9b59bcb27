/*
 * test_coll.c - collective times on idle fabrics against hand-derived
 * formulas, and the physical sanity rules of the fabric model. The
 * library's own data (protocol choice, pipelines, protocol ranges, tuner
 * view, size bounds, p2p chunks) is tested in test_coll_lib.c.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "coll_run.h"
#include "fixtures.h"
#include "network/algo.h"
#include "network/net.h"

#define KiB 1024.0
#define MiB 1048576.0

Test(net_coll, ring_allreduce_is_bandwidth_plus_steps)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 8, ALGO_RING, 1, NULL };
	struct net_coll_result out;

	fx_switch(&f, 1);
	f.lib.algo[ALGO_RING].hop_scale_up.s[PROTO_SIMPLE] = 2e-6;
	out = coll_timed(&f.sys, &r);
	/* p = 8, n = 1 GiB, beta = 18 * 25 GB/s = 450 GB/s per GPU,
	 * alpha = 2 us per step, base 0:
	 * 2(p-1)/p * n / beta + 2(p-1) * alpha
	 * = 1.75 * 1073741824 / 450e9 + 14 * 2e-6 = 4.17566 ms + 28 us. */
	EQ_REL(out.time_s, 1.75 * GiB / 450e9 + 14 * 2e-6, 1e-6);
	cr_assert_str_eq(out.algorithm, "ring");
	cr_assert_str_eq(out.protocol, "simple");
}

Test(net_coll, latency_formula_across_nodes)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 0, NULL, 16, ALGO_RING, 1, NULL };
	struct coll_algo_spec *ring = fx_switch_ring_latency(&f);

	/* An empty all-reduce costs its latency alone: p = 16 on N = 2 nodes,
	 * 2(p-1) = 30 steps of which 2(N-1) = 2 cross nodes:
	 * 10 + 28 * 1 + 2 * 5 = 48 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 48e-6, 1e-6);
	r.algo = ALGO_TREE;
	f.lib.algo[ALGO_TREE] = *ring;
	/* Tree: base + 2 * ((ppn-1) * h_intra + floor(log2 N) * h_net)
	 * = 10 + 2 * (7 * 1 + 1 * 5) = 34 us. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 34e-6, 1e-6);
}

Test(net_coll, two_mi300x_share_one_xgmi_link)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 2, -1, 1, NULL };
	struct net_coll_result out;

	fx_mesh(&f, 1);
	f.up_link.sustained = 0.75;
	out = coll_timed(&f.sys, &r);
	/* Two GPUs of a full mesh talk over their one link: 64 GB/s * 0.75
	 * sustained = 48 GB/s busbw (measured 47.7 [S5]), not 7 * 48 = 336. */
	EQ_REL(out.busbw_Bps, 48e9, 1e-6);
	r.n = 8;
	out = coll_timed(&f.sys, &r);
	/* Eight GPUs: 7 arc-disjoint rings use all 7 links: 7 * 48 = 336. */
	EQ_REL(out.busbw_Bps, 7 * 48e9, 1e-6);
}

Test(net_coll, nvls_goes_past_the_link_rate)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 8, -1, 1, NULL };
	struct net_coll_result out;

	fx_switch(&f, 1);
	out = coll_timed(&f.sys, &r);
	/* The switch reduces: each GPU link carries n (1 + 1/p) each way, so
	 * algbw = 450 / 1.125 = 400 GB/s and busbw = 1.75 * 400 = 700 GB/s,
	 * above the 450 GB/s link; the auto choice is NVLS. */
	cr_assert_str_eq(out.algorithm, "nvls");
	EQ_REL(out.busbw_Bps, 700e9, 1e-6);
	r.algo = ALGO_RING;
	/* A ring cannot: busbw = link rate = 450 GB/s. */
	EQ_REL(coll_timed(&f.sys, &r).busbw_Bps, 450e9, 1e-6);
}

Test(net_coll, hierarchical_allreduce_phases)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 16, ALGO_HIER, 1, NULL };
	double intra, inter;

	fx_switch(&f, 2);
	/* 1. reduce-scatter in each node: (m-1)/m * n = 7/8 n at 450 GB/s;
	 * 2. per local position, a 2-node ring all-reduce of n/8:
	 *    2(N-1)/N * n/8 = n/8 over that rail's 50 GB/s NIC;
	 * 3. all-gather in each node: 7/8 n at 450 GB/s. */
	intra = 0.875 * GiB / 450e9;
	inter = GiB / 8 / 50e9;
	EQ_REL(coll_timed(&f.sys, &r).time_s, 2 * intra + inter, 1e-6);
}

Test(net_coll, uneven_alltoall_follows_the_matrix)
{
	struct fx f;
	double m[4] = { 0, 1e9, 3e9, 0 };
	struct run r = { COLL_ALLTOALL, 0, NULL, 2, ALGO_P2P, 1, m };

	fx_mesh(&f, 1);
	/* GPU 0 sends 1 GB to GPU 1 and GPU 1 sends 3 GB back, on the two
	 * directions of their 64 GB/s link: 3e9 / 64e9 = 46.875 ms. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, 3e9 / 64e9, 1e-6);
}

/* Per-GPU injection: its scale-up share plus its NIC (B/s). */
static double injection(const struct fx *f, uint32_t nodes)
{
	double up = f->up.topology == TOPO_MESH ? 7 * 64e9 : 450e9;

	return up + (nodes > 1 ? 50e9 : 0);
}

static void check_bounds(struct fx *f, uint32_t nodes)
{
	/* 1e-5: every phase ends on a whole nanosecond (up to 22 phases). */
	double cap = injection(f, nodes) * (1 + 1e-5);
	int op, a;

	for (op = 0; op < COLL_OP_COUNT; op++)
		for (a = 0; a < ALGO_COUNT; a++) {
			struct run r = { (enum coll_op)op, 256e6, NULL,
					 op == COLL_SENDRECV ? 2 : 8 * nodes, a,
					 1, NULL };
			struct net_coll_result out;

			if (a == ALGO_NVLS || a == ALGO_NVLS_TREE ||
			    coll_try_time(&f->sys, &r, &out) != 0)
				continue;
			/* Without in-switch reduction every byte a GPU's bus
			 * bandwidth counts enters or leaves through its own
			 * links: busbw <= its scale-up + NIC capacity. */
			cr_assert_leq(out.busbw_Bps, cap, "%s/%s on %u nodes: "
				      "busbw %.1f GB/s > %.1f", coll_op_names[op],
				      coll_algo_names[a], nodes,
				      out.busbw_Bps / 1e9, cap / 1e9);
		}
}

Test(net_coll, busbw_never_exceeds_the_links)
{
	struct fx f;

	fx_switch(&f, 1);
	check_bounds(&f, 1);
	fx_switch(&f, 2);
	check_bounds(&f, 2);
	fx_mesh(&f, 1);
	check_bounds(&f, 1);
	fx_mesh(&f, 2);
	check_bounds(&f, 2);
}

static void check_faster_nic(struct fx *f, uint32_t nodes)
{
	static const double sizes[] = { 64e3, 16e6, 1e9 };
	int op;
	size_t k;

	for (op = 0; op < COLL_OP_COUNT; op++)
		for (k = 0; k < 3; k++) {
			struct run r = { (enum coll_op)op, sizes[k], NULL,
					 op == COLL_SENDRECV ? 2 : 8 * nodes, -1,
					 1, NULL };
			double slow, fast;

			if (op == COLL_SENDRECV)
				r.gpus = coll_ids + 7;	/* GPU 7 -> 8 */
			f->out_link.lane_rate_Bps = 50e9;
			slow = coll_timed(&f->sys, &r).time_s;
			f->out_link.lane_rate_Bps = 100e9;
			fast = coll_timed(&f->sys, &r).time_s;
			/* Twice the NIC bandwidth: never slower (1 ns of
			 * rounding allowed). */
			cr_assert_leq(fast, slow + 1e-9, "%s of %.0f B: %.9f s "
				      "with 800G NICs vs %.9f with 400G",
				      coll_op_names[op], sizes[k], fast, slow);
		}
}

Test(net_coll, doubling_nic_bandwidth_never_slows)
{
	struct fx f;

	fx_switch(&f, 2);
	check_faster_nic(&f, 2);
	fx_mesh(&f, 4);
	check_faster_nic(&f, 4);
}

/* 12 single-GPU nodes on a sprayed radix-8 tree: 1:1 gives leaves of 4
 * NICs with 4 uplinks; 3:1 gives leaves of 6 with 2. */
static void spine_tree(struct fx *f, double oversub)
{
	fx_switch(f, 12);
	f->sys.gpus_per_node = 1;
	f->sys.nics_per_node = 1;
	f->out.switch_radix = 8;
	f->out.rail_optimized = 0;
	f->out.load_balance = LB_SPRAY;
	f->out.oversubscription = oversub;
}

Test(net_coll, oversubscription_slows_cross_spine_traffic_only)
{
	struct fx f;
	struct run local = { COLL_ALLTOALL, GiB, NULL, 4, ALGO_P2P, 1, NULL };
	struct run wide = { COLL_ALLTOALL, GiB, NULL, 12, ALGO_P2P, 1, NULL };
	double l1, l3, w1, w3;

	spine_tree(&f, 1);
	l1 = coll_timed(&f.sys, &local).time_s;
	w1 = coll_timed(&f.sys, &wide).time_s;
	spine_tree(&f, 3);
	l3 = coll_timed(&f.sys, &local).time_s;
	w3 = coll_timed(&f.sys, &wide).time_s;
	/* Nodes 0-3 share a leaf either way: same time. */
	EQ_REL(l3, l1, 1e-9);
	/* All 12: at 1:1 each NIC sends 11/12 n at 50 GB/s (the leaf trunks,
	 * 4 * 50 GB/s, carry at most 4 * 8/12 n); at 3:1 leaf 0's six NICs
	 * push 6 * 6/12 n = 3 n through a 2 * 50 GB/s trunk: 3 n / 100e9
	 * instead of 11/12 n / 50e9. */
	EQ_REL(w1, 11.0 / 12 * GiB / 50e9, 1e-6);
	EQ_REL(w3, 3 * GiB / 100e9, 1e-6);
}

Test(net_coll, replicas_load_an_oversubscribed_spine)
{
	struct fx f;
	uint32_t pair[2] = { 0, 6 };
	struct run r = { COLL_SENDRECV, GiB, pair, 2, -1, 1, NULL };

	spine_tree(&f, 3);
	/* Node 0 -> node 6 crosses from leaf 0 to leaf 1: alone, 50 GB/s. */
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / 50e9, 1e-6);
	/* Six such pairs fill the 12 GPUs (o = min(1, 6 * 2/12) = 1); leaf 0
	 * holds d = 6 busy NICs for our 1: its 100 GB/s trunk carries 6x our
	 * flow -> 100/6 GB/s each. */
	r.replicas = 6;
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / (100e9 / 6), 1e-6);
	/* Non-blocking (1:1, leaves of 4 with a 200 GB/s trunk): 4 busy NICs
	 * share it at 50 GB/s each, no slower than alone. */
	spine_tree(&f, 1);
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / 50e9, 1e-6);
}

Test(net_coll, replicas_spread_over_ecmp_uplinks)
{
	struct fx f;
	uint32_t pair[2] = { 0, 6 };
	struct run r = { COLL_SENDRECV, GiB, pair, 2, -1, 6, NULL };

	/* The same trees with ECMP: a leaf's uplinks are separate 50 GB/s
	 * links and every busy NIC's traffic takes one of them. Non-blocking
	 * (leaves of 4 NICs with 4 uplinks): 4 busy NICs over 4 uplinks, one
	 * NIC's worth each -> no slower than alone, 1 GiB / 50 GB/s. */
	spine_tree(&f, 1);
	f.out.load_balance = LB_ECMP;
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / 50e9, 1e-6);
	/* 3:1 (leaves of 6 NICs with 2 uplinks): 6 busy NICs over 2 uplinks,
	 * 3 NICs' worth on ours -> 50/3 GB/s, as with the sprayed trunk. */
	spine_tree(&f, 3);
	f.out.load_balance = LB_ECMP;
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / (50e9 / 3), 1e-6);
	/* More replicas than the system holds change nothing more (o <= 1). */
	r.replicas = 1024;
	EQ_REL(coll_timed(&f.sys, &r).time_s, GiB / (50e9 / 3), 1e-6);
}

Test(net_coll, bad_requests_are_reported)
{
	struct fx f;
	struct net_coll_result out;
	uint32_t twice[2] = { 3, 3 };
	uint32_t far[2] = { 0, 99 };
	struct run dup = { COLL_ALLREDUCE, 1e6, twice, 2, -1, 1, NULL };
	struct run past = { COLL_ALLREDUCE, 1e6, far, 2, -1, 1, NULL };
	struct run three = { COLL_SENDRECV, 1e6, NULL, 3, -1, 1, NULL };
	struct run nvls = { COLL_ALLGATHER, 1e6, NULL, 8, ALGO_NVLS, 1, NULL };

	fx_switch(&f, 1);
	cr_assert_eq(coll_try_time(&f.sys, &dup, &out), -1);
	cr_assert_eq(coll_try_time(&f.sys, &past, &out), -1);
	cr_assert_eq(coll_try_time(&f.sys, &three, &out), -1);
	cr_assert_eq(coll_try_time(&f.sys, &nvls, &out), -1);
}

Test(net_coll, hierarchical_alltoall_phases)
{
	struct fx f;
	struct run r = { COLL_ALLTOALL, GiB, NULL, 16, ALGO_HIER, 1, NULL };
	double t1, t2;

	fx_switch(&f, 2);
	/* 16 ranks on 2 nodes, n/16 to each peer.
	 * 1. (k,i) sends (k,j) what it has for position j on both nodes:
	 *    2 * n/16 = n/8 to each of 7 peers: 7/8 n through its 450 GB/s
	 *    switch link;
	 * 2. (k,j) sends (k',j) what its node has for it: 8 * n/16 = n/2
	 *    over rail j at 50 GB/s. */
	t1 = 7.0 / 8 * GiB / 450e9;
	t2 = GiB / 2 / 50e9;
	EQ_REL(coll_timed(&f.sys, &r).time_s, t1 + t2, 1e-6);
}

Test(net_coll, nvls_tree_node_switch_and_nic_tree)
{
	struct fx f;
	struct run r2 = { COLL_ALLREDUCE, GiB, NULL, 16, ALGO_NVLS_TREE, 1,
			  NULL };
	struct run r4 = { COLL_ALLREDUCE, GiB, NULL, 32, ALGO_NVLS_TREE, 1,
			  NULL };
	struct run r1 = { COLL_ALLREDUCE, GiB, NULL, 8, ALGO_NVLS_TREE, 1,
			  NULL };
	struct run ag = { COLL_ALLGATHER, GiB, NULL, 16, ALGO_NVLS_TREE, 1,
			  NULL };
	struct net_coll_result out;

	/* In each node NVLS: every GPU's switch link carries n (1 + 1/8)
	 * each way (efficiency 1): 1.125 GiB / 450 GB/s. Between nodes
	 * head h (rank h of each node, NIC h) owns n/8; on 2 nodes tree 0
	 * sends its half up 1 -> 0 and down 0 -> 1, tree 1 the reverse:
	 * n/8 each way on every NIC. With 25 GB/s NICs the NICs bound it:
	 * GiB / 8 / 25 GB/s = GiB / 200 GB/s (the switch: GiB / 400). */
	fx_switch(&f, 2);
	f.out_link.lane_rate_Bps = 25e9;
	EQ_REL(coll_timed(&f.sys, &r2).time_s, GiB / 200e9, 1e-6);
	cr_assert_str_eq(coll_timed(&f.sys, &r2).algorithm, "nvls_tree");
	/* NCCL's NVLS graph has at most NCCL_MAX_NVLS_ARITY heads (the
	 * nvls select_heads_max): with 4, heads 0-3 own n/4 each, n/4 on
	 * each of their NICs at 25 GB/s = GiB / 100 GB/s */
	f.lib.algo[ALGO_NVLS].select_heads_max = 4;
	EQ_REL(coll_timed(&f.sys, &r2).time_s, GiB / 100e9, 1e-6);
	f.lib.algo[ALGO_NVLS].select_heads_max = 0;
	/* 50 GB/s NICs: n/8 at 50 GB/s = GiB / 400 GB/s, as the switch */
	f.out_link.lane_rate_Bps = 50e9;
	EQ_REL(coll_timed(&f.sys, &r2).time_s, GiB / 400e9, 1e-6);
	/* 4 nodes: tree 0 is 0 <- 2 <- {1, 3}, tree 1 is 3 <- 1 <- {0, 2};
	 * node 2 has 3 edges in tree 0 and 1 in tree 1, each carrying a
	 * half of n/8 each way: 2 x n/8 = n/4 on its NICs at 50 GB/s:
	 * GiB / 200 GB/s (twice the 2-node time). */
	fx_switch(&f, 4);
	EQ_REL(coll_timed(&f.sys, &r4).time_s, GiB / 200e9, 1e-6);
	/* one node: NCCL disables it (tuning.cc), and all-reduce only */
	fx_switch(&f, 2);
	cr_assert_eq(coll_try_time(&f.sys, &r1, &out), -1);
	cr_assert_eq(coll_try_time(&f.sys, &ag, &out), -1);
}

Test(net_coll, nvls_tree_head_busbw_caps_the_bus)
{
	struct fx f;
	struct run r2 = { COLL_ALLREDUCE, GiB, NULL, 16, ALGO_NVLS_TREE, 1,
			  NULL };
	struct run r4 = { COLL_ALLREDUCE, GiB, NULL, 32, ALGO_NVLS_TREE, 1,
			  NULL };
	struct coll_algo_spec *nt;

	/* As above, 2 nodes with 50 GB/s NICs run at GiB / 400 GB/s. NCCL's
	 * perChMaxNVLSTreeBws bounds the bus bandwidth at 8 heads x 20 GB/s
	 * = 160 GB/s: 2 (p-1)/p n = 1.875 GiB over 160 GB/s (11.8 ms,
	 * above the links' 2.7 ms). */
	fx_switch(&f, 2);
	f.out_link.lane_rate_Bps = 50e9;
	nt = &f.lib.algo[ALGO_NVLS_TREE];
	nt->head_busbw_Bps[SCALE_2NODES] = 20e9;
	EQ_REL(coll_timed(&f.sys, &r2).time_s, 1.875 * GiB / 160e9, 1e-6);
	/* a cap above the links' bus bandwidth (1.875 x 400 = 750 GB/s,
	 * 8 x 100 = 800) leaves the links' time */
	nt->head_busbw_Bps[SCALE_2NODES] = 100e9;
	EQ_REL(coll_timed(&f.sys, &r2).time_s, GiB / 400e9, 1e-6);
	/* 4 nodes take the "more than 2 nodes" entry: 2 (31/32) n =
	 * 1.9375 GiB over 8 x 10 GB/s; the 2-node entry does not apply */
	fx_switch(&f, 4);
	nt = &f.lib.algo[ALGO_NVLS_TREE];
	nt->head_busbw_Bps[SCALE_2NODES] = 1e9;
	nt->head_busbw_Bps[SCALE_4NODES] = 10e9;
	EQ_REL(coll_timed(&f.sys, &r4).time_s, 1.9375 * GiB / 80e9, 1e-6);
}

Test(net_coll, nvls_tree_fill_is_the_stages_own_times)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, 16 * MiB, NULL, 16, ALGO_NVLS_TREE,
			 1, NULL };
	struct coll_pipe_spec *ps;
	double loop, F;

	/* 2 nodes of 8, switch links U = 450 GB/s (efficiency 1), NICs
	 * E = 50 GB/s, 8 heads; 16 channels x 8 heads x 128 KiB chunks:
	 * a loop L = 16 MiB. Steady, a loop takes the slowest of the switch
	 * link (1 + 1/8) L / U = L / 400 GB/s and the NIC L / (8 E) =
	 * L / 400 GB/s. The first loop passes scatter and gather (L / U
	 * each), 3 NVLS reduces / multicasts (L / (8 U) each: the child's
	 * reduce, the root's, the child's multicast) and 2 network hops
	 * (L / (8 E) each) one after another:
	 *   F = (2 x 400/450 + 3 x 400/3600 + 2) - 1 = 28/9 = 3.111 loops
	 * of fill (the spec's stages - 1 = 3 does not apply). */
	fx_switch(&f, 2);
	f.out_link.lane_rate_Bps = 50e9;
	ps = &f.lib.algo[ALGO_NVLS_TREE].pipe[PROTO_SIMPLE];
	ps->chunk_B = 128 * KiB;
	ps->channels = 16;
	ps->slices = 1;
	ps->stages = 4;
	loop = 16 * MiB / 400e9;
	F = 28.0 / 9;
	/* one loop: (1 + F) loops' time */
	EQ_REL(coll_timed(&f.sys, &r).time_s, (1 + F) * loop, 1e-6);
	/* four loops: (4 + F) */
	r.bytes = 64 * MiB;
	EQ_REL(coll_timed(&f.sys, &r).time_s, (4 + F) * loop, 1e-6);
	/* a per-head cap of 8 x 40 = 320 GB/s bus (algbw 320 / 1.875 =
	 * 170.7 GB/s) makes the steady loop 1.875 L / 320 GB/s and the
	 * same stages a smaller part of it:
	 *   F = (2/450 + 3/3600 + 2/400) / (1.875/320) - 1
	 *     = 0.0102778 / 0.00585938 - 1 = 0.75407 */
	f.lib.algo[ALGO_NVLS_TREE].head_busbw_Bps[SCALE_2NODES] = 40e9;
	loop = 1.875 * 16 * MiB / 320e9;
	F = (2 / 450e9 + 3 / 3600e9 + 2 / 400e9) / (1.875 / 320e9) - 1;
	cr_assert_float_eq(F, 0.75407, 1e-4);
	EQ_REL(coll_timed(&f.sys, &r).time_s, (4 + F) * loop, 1e-6);
}

Test(net_coll, overrides_per_system_and_per_call)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 8, -1, 1, NULL };

	fx_switch(&f, 1);
	/* Left alone the library picks NVLS (700 vs 450 GB/s above). A job's
	 * system may force an algorithm for every collective... */
	f.sys.algorithm = ALGO_TREE;
	cr_assert_str_eq(coll_timed(&f.sys, &r).algorithm, "tree");
	/* ...and a collective's own descriptor wins over the system. */
	r.algo = ALGO_RING;
	cr_assert_str_eq(coll_timed(&f.sys, &r).algorithm, "ring");
}

Test(net_coll, one_rank_moves_nothing)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, GiB, NULL, 1, -1, 1, NULL };
	struct net_coll_result out;

	fx_switch(&f, 1);
	f.lib.algo[ALGO_RING].base.s[PROTO_SIMPLE] = 5e-6;
	out = coll_timed(&f.sys, &r);
	/* A group of one has nothing to send: no latency, no time; every
	 * algorithm ties and the first (ring) is reported. */
	cr_assert_eq(out.time_s, 0);
	cr_assert_str_eq(out.algorithm, "ring");
}
