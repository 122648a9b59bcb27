/*
 * test_topo.c - topology builders and up-down routing on small fat trees.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/diag.h"
#include "fixtures.h"
#include "network/route.h"
#include "network/topo.h"

static struct topo *build(const struct system_spec *s)
{
	struct diag d;
	struct topo *t;

	diag_init(&d, stderr);
	t = topo_build(s, &d);
	cr_assert_not_null(t, "topology should build");
	return t;
}

static int build_fails(const struct system_spec *s)
{
	struct diag d;
	struct topo *t;

	diag_init(&d, NULL);
	t = topo_build(s, &d);
	topo_free(t);
	return t == NULL && d.errors == 1;
}

/* One GPU and one NIC per node, k = 4 fat tree: the smallest 3-tier tree
 * (k^3/4 = 16 hosts: pods of k/2 = 2 leaves of 2 hosts, 2 aggs each). */
static void tiny_tree(struct fx *f, int64_t nodes, int64_t tiers)
{
	fx_switch(f, nodes);
	f->sys.gpus_per_node = 1;
	f->sys.nics_per_node = 1;
	f->out.switch_radix = 4;
	f->out.tiers = tiers;
	f->out.rail_optimized = 0;
}

Test(net_topo, mesh_pair_is_one_link)
{
	struct fx f;
	struct topo *t;
	struct route r;

	fx_mesh(&f, 1);
	t = build(&f.sys);
	route_gpus(t, 0, 5, 0, 0, 0, &r);
	/* Full mesh: GPU 0 -> GPU 5 is one direct link of 7/7 = 1 port of
	 * 64 GB/s. */
	cr_assert_eq(r.n, 1);
	cr_assert_float_eq(t->links[r.link[0]].cap_Bps, 64e9, 1);
	cr_assert_eq(r.transport, TT_SCALE_UP);
	topo_free(t);
}

Test(net_topo, switch_bundles_ports)
{
	struct fx f;
	struct topo *t;
	struct route r;

	fx_switch(&f, 1);
	t = build(&f.sys);
	route_gpus(t, 2, 7, 0, 0, 0, &r);
	/* GPU -> switch -> GPU; each bundle is 18 ports * 25 GB/s = 450 GB/s. */
	cr_assert_eq(r.n, 2);
	cr_assert_float_eq(t->links[r.link[0]].cap_Bps, 450e9, 1);
	cr_assert_float_eq(t->links[r.link[1]].cap_Bps, 450e9, 1);
	topo_free(t);
}

Test(net_topo, leaf_sizing_with_oversubscription)
{
	struct fx f;
	struct topo *t;

	fx_switch(&f, 4);
	t = build(&f.sys);
	/* k = 16, 1:1 -> d = 8 NICs per leaf, u = 8 uplinks; rail-optimized
	 * with 4 nodes: one node group, 8 rails -> 8 leaves, 2 tiers. */
	cr_assert_eq(t->tree.hosts_per_leaf, 8);
	cr_assert_eq(t->tree.up_per_leaf, 8);
	cr_assert_eq(t->tree.leaves, 8);
	cr_assert_eq(t->tree.tiers, 2);
	topo_free(t);
	f.out.oversubscription = 3;
	t = build(&f.sys);
	/* 3:1 -> d = floor(16 * 3/4) = 12, u = 16 - 12 = 4. */
	cr_assert_eq(t->tree.hosts_per_leaf, 12);
	cr_assert_eq(t->tree.up_per_leaf, 4);
	topo_free(t);
}

Test(net_topo, tiers_grow_with_nodes)
{
	struct fx f;
	struct topo *t;

	fx_switch(&f, 16);
	f.out.tiers = 0;
	t = build(&f.sys);
	/* k = 16: 2 tiers hold at most 16 leaves = 2 node groups of 8 nodes
	 * on 8 rails: 16 nodes fit. */
	cr_assert_eq(t->tree.tiers, 2);
	topo_free(t);
	f.sys.nodes = 17;
	t = build(&f.sys);
	/* 17 nodes: 3 groups * 8 rails = 24 leaves > 16 -> 3 tiers with pods
	 * of k/2 = 8 leaves: 3 pods. */
	cr_assert_eq(t->tree.tiers, 3);
	cr_assert_eq(t->tree.pods, 3);
	topo_free(t);
}

Test(net_topo, tree_too_small_is_reported)
{
	struct fx f;

	/* k = 4, 3 tiers hold k^3/4 = 16 hosts; 17 cannot be built. */
	tiny_tree(&f, 17, 3);
	cr_assert(build_fails(&f.sys));
	/* A 3-GPU mesh needs 2 links per GPU; 1 is an error. */
	fx_mesh(&f, 1);
	f.sys.gpus_per_node = 3;
	f.up.links_per_endpoint = 1;
	cr_assert(build_fails(&f.sys));
	/* More GPUs in a node than the scale-up fabric connects. */
	fx_switch(&f, 1);
	f.up.max_endpoints = 4;
	cr_assert(build_fails(&f.sys));
}

Test(net_topo, up_down_routes_are_shortest_paths)
{
	struct fx f;
	struct topo *t;
	uint32_t a, b;

	tiny_tree(&f, 16, 3);
	t = build(&f.sys);
	cr_assert_eq(t->tree.tiers, 3);
	for (a = 0; a < 16; a++)
		for (b = 0; b < 16; b++) {
			struct route r;

			if (a == b)
				continue;
			route_gpus(t, a, b, 0, 0, a * 16 + b, &r);
			/* Up-down routing through the lowest common ancestor is
			 * what BFS finds between the two NICs (GPUs attach to
			 * their NIC directly, no link): same leaf 2 links
			 * (NIC-leaf-NIC), same pod 4, across pods 6. */
			cr_assert_eq((int)r.n, topo_distance(t, topo_nic(t, a, 0),
							     topo_nic(t, b, 0)),
				     "GPU %u -> %u", a, b);
			cr_assert_eq(r.n, a / 2 == b / 2 ? 2u :
					  a / 4 == b / 4 ? 4u : 6u);
		}
	topo_free(t);
}

Test(net_topo, ecmp_spreads_over_every_core_path)
{
	struct fx f;
	struct topo *t;
	uint32_t seen[64] = {0}, nseen = 0, salt, i;

	tiny_tree(&f, 16, 3);
	t = build(&f.sys);
	for (salt = 0; salt < 256; salt++) {
		struct route r;

		route_gpus(t, 0, 15, 0, 0, salt, &r);
		/* r.link[2] is the agg -> core link: u = 2 aggs per pod times
		 * k/2 = 2 cores per agg = 4 distinct core paths. */
		for (i = 0; i < nseen && seen[i] != r.link[2]; i++)
			;
		if (i == nseen)
			seen[nseen++] = r.link[2];
	}
	cr_assert_eq(nseen, 4);
	topo_free(t);
}

Test(net_topo, spraying_makes_trunks)
{
	struct fx f;
	struct topo *t;
	struct route r;

	fx_switch(&f, 4);
	f.sys.nics_per_node = 1;
	f.out.rail_optimized = 0;
	f.out.load_balance = LB_SPRAY;
	f.out.switch_radix = 4;
	t = build(&f.sys);
	/* k = 4, 2 tiers: 2 NICs per leaf, 2 uplinks sprayed as one trunk of
	 * 2 * 50 GB/s to one logical spine. Node 0 and node 3 sit on leaves
	 * 0 and 1: NIC up, trunk up, trunk down, NIC down. */
	route_gpus(t, 0, 24, 0, 0, 0, &r);
	cr_assert_eq(r.n, 4);
	cr_assert_eq(t->tree.up_per_leaf, 1);
	cr_assert_float_eq(t->links[r.link[1]].cap_Bps, 100e9, 1);
	topo_free(t);
}

Test(net_topo, pxn_moves_cross_rail_traffic_over_scale_up)
{
	struct fx f;
	struct topo *t;
	struct route r;
	uint32_t ro, ri;

	fx_switch(&f, 2);
	t = build(&f.sys);
	/* GPU 0 (node 0, rail 0) -> GPU 9 (node 1, local 1, rail 1). With PXN
	 * both ends use rail 1: GPU 0 -> switch -> GPU 1 (2 links), NIC 1 up
	 * and down through the rail-1 leaf (2 links): 4 links, no spine. */
	route_rails(t, 0, 9, 1, &ro, &ri);
	cr_assert_eq(ro, 1);
	cr_assert_eq(ri, 1);
	route_gpus(t, 0, 9, ro, ri, 0, &r);
	cr_assert_eq(r.n, 4);
	cr_assert_eq(r.transport, TT_NET);
	/* Without PXN: NIC 0 -> rail-0 leaf -> spine -> rail-1 leaf -> NIC 1
	 * of node 1: also 4 links, but two of them cross the spine. */
	route_rails(t, 0, 9, 0, &ro, &ri);
	cr_assert_eq(ro, 0);
	route_gpus(t, 0, 9, ro, ri, 0, &r);
	cr_assert_eq(r.n, 4);
	cr_assert_eq(t->links[r.link[1]].level, TL_LEAF_UP);
	topo_free(t);
}

Test(net_topo, host_pcie_tree_joins_gpu_and_nic)
{
	struct fx f;
	struct topo *t;
	struct route r;

	fx_switch(&f, 2);
	memset(&f.host_link, 0, sizeof(f.host_link));
	f.host_link.lane_rate_Bps = 4e9;
	f.host_link.lanes = 16;
	f.host_link.line_code = 1;
	f.host_link.sustained = 1;
	memset(&f.host, 0, sizeof(f.host));
	f.host.topology = TOPO_PCIE_TREE;
	f.host.link = &f.host_link;
	f.host.links_per_endpoint = 1;
	f.host.gpus_per_switch = 2;
	f.host.nics_per_switch = 2;
	f.sys.host = &f.host;
	t = build(&f.sys);
	/* GPU 0 -> GPU 8 on rail 0: GPU0 -> PCIe switch -> NIC0 (2), fabric
	 * (2), NIC0 -> PCIe switch -> GPU8 (2): 6 links; the PCIe ones carry
	 * 16 * 4 GB/s = 64 GB/s. */
	route_gpus(t, 0, 8, 0, 0, 0, &r);
	cr_assert_eq(r.n, 6);
	cr_assert_float_eq(t->links[r.link[0]].cap_Bps, 64e9, 1);
	cr_assert_eq((int)r.n, topo_distance(t, 0, 8));
	topo_free(t);
}
