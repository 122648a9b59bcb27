/*
 * topo.h - a system's topology: endpoints (GPUs, NICs, host CPUs),
 * switches, and directional links with payload capacity and latency.
 *
 * Built once per system (topo_build) from the fabric specs:
 *   scale-up   mesh (one link group per GPU pair), switch pod (one
 *              logical non-blocking switch per node, each GPU's ports
 *              bundled into one up and one down link), or PCIe tree;
 *   host       optional PCIe tree joining GPUs and NICs through PCIe
 *              switches and the CPU (absent: NICs attach directly);
 *   scale-out  fat tree of 1, 2 or 3 tiers: NICs into leaves (one leaf
 *              set per rail when rail-optimized), leaves into spines /
 *              aggregation switches, those into cores. Under ECMP every
 *              uplink is its own link and a flow takes one by hash;
 *              under spraying the uplinks of a switch are one trunk of
 *              their summed capacity (even split is the fluid limit of
 *              per-packet spraying).
 *
 * Capacities are payload rates: port data rate x framing efficiency
 * (spec_fabric.h), times the link's sustained fraction on links that end
 * at a GPU or NIC (copy engines and DMA, not switch ports, fall short).
 *
 * Alongside the graph, per-entity link tables let route.c find paths by
 * arithmetic (up-down routing is shortest-path routing in these trees);
 * topo_distance() is a plain BFS used to check that.
 *
 * Depends on config/spec_system.h, base/diag.h, base/arena.h only.
 */
#ifndef LLMSIM_NETWORK_TOPO_H
#define LLMSIM_NETWORK_TOPO_H

#include <stdint.h>

#include "base/arena.h"
#include "config/spec_system.h"

struct diag;

#define TOPO_NONE UINT32_MAX

enum topo_node_kind {
	TN_GPU,
	TN_NIC,
	TN_CPU,
	TN_SWITCH
};

/* Which library latency row a link belongs to. */
enum topo_transport {
	TT_SCALE_UP,		/* NVLink, xGMI, UALink */
	TT_PCIE,		/* PCIe (scale-up tree or host) */
	TT_NET			/* scale-out network */
};

struct topo_node {
	uint8_t kind;			/* enum topo_node_kind */
	double latency_s;		/* s, to cross it (switch port to port) */
	uint32_t first_out, nout;	/* its outgoing links in topo.out */
};

/* Where a scale-out link sits, for charging replica groups (crun.c). */
enum topo_level {
	TL_NONE,		/* scale-up, host, or anything else */
	TL_NIC,			/* NIC <-> leaf; owner = NIC index */
	TL_LEAF_UP,		/* leaf <-> spine/agg; owner = leaf */
	TL_AGG_UP		/* agg <-> core; owner = pod */
};

struct topo_link {
	uint32_t src, dst;		/* node ids */
	double cap_Bps;			/* B/s payload per direction */
	double latency_s;		/* s, wire + PHY */
	uint32_t owner;			/* NIC, leaf or pod index (see level) */
	uint8_t transport;		/* enum topo_transport */
	uint8_t level;			/* enum topo_level */
};

/* The scale-out fat tree's shape. */
struct topo_tree {
	uint32_t tiers;			/* 1, 2 or 3 */
	uint32_t rails;			/* leaf sets (nics_per_node when rail-optimized, else 1) */
	uint32_t hosts_per_leaf;	/* d: NICs under one leaf */
	uint32_t up_per_leaf;		/* u: uplinks per leaf (1 when sprayed) */
	uint32_t leaves;		/* leaf switches */
	uint32_t leaves_per_pod;	/* 3 tiers: leaves sharing aggregation switches */
	uint32_t pods;			/* 3 tiers: pods */
	uint32_t up_per_agg;		/* 3 tiers: core uplinks per aggregation switch (1 when sprayed) */
	uint32_t *leaf_of;		/* per NIC: its leaf */
	uint32_t *leaf_node;		/* per leaf: node id */
	uint32_t *leaf_up, *leaf_down;	/* per leaf * u + j: leaf->spine/agg j and back */
	uint32_t *agg_node;		/* 3 tiers: per pod * u + j */
	uint32_t *agg_up, *agg_down;	/* 3 tiers: per (pod * u + j) * up_per_agg + c */
};

struct topo {
	struct arena arena;		/* owns everything below */
	struct topo_node *nodes;
	uint32_t nnodes;
	size_t capnodes;
	struct topo_link *links;
	uint32_t nlinks;
	size_t caplinks;
	uint32_t *out;			/* CSR: outgoing link ids by node */

	uint32_t sys_nodes;		/* nodes (scale-up domains) */
	uint32_t gpus_per_node;
	uint32_t nics_per_node;
	uint32_t gpus;			/* GPU node ids are 0 .. gpus-1 */
	uint32_t nic0;			/* NIC k of node n is nic0 + n * nics_per_node + k */
	uint32_t cpu0;			/* CPU of node n is cpu0 + n */

	int up_topology;		/* enum fabric_topology of the scale-up fabric */
	uint32_t *mesh_base;		/* mesh: per node, first of its g(g-1) pair links */
	uint32_t *mesh_out, *mesh_in;	/* mesh with an endpoint bandwidth: per GPU, its ports
					 * together out and in; NULL = none */
	uint32_t *gpu_up, *gpu_down;	/* switch / pcie_tree: per GPU, to and from its switch */
	uint32_t *psw_up, *psw_down;	/* pcie_tree: per PCIe switch, to and from the CPU */
	uint32_t psw_per_node;		/* pcie_tree: PCIe switches per node */
	uint32_t gpus_per_psw;		/* pcie_tree: GPUs under one */

	int has_host;			/* a host PCIe tree joins GPUs and NICs */
	int nic_via_c2c;		/* GPUs reach their NICs over C2C (system key) */
	uint32_t *hgpu_up, *hgpu_down;	/* per GPU, to and from its host switch */
	uint32_t *hnic_up, *hnic_down;	/* per NIC, to and from its host switch */
	uint32_t *hsw_up, *hsw_down;	/* per host switch, to and from the CPU */
	uint32_t *hsw_of_gpu, *hsw_of_nic;	/* global host switch index */

	uint32_t *nic_up, *nic_down;	/* per NIC (0-based), to and from its leaf */
	struct topo_tree tree;
	double endpoint_latency_s;	/* s, NIC / software per message */
	double nvls_efficiency;		/* in-switch reduction efficiency; 0 = none */
	double nvls_Bps;		/* B/s, a GPU's data the switches reduce; 0 = no bound */
	int64_t nvls_links;		/* with it: links from each GPU to the switch */
	double p2p_channel_send_Bps;	/* B/s, one p2p channel's send rate (the GPU's
					 * p2p_channel_send); 0 = none */
	double p2p_launch_s;		/* s, the p2p kernel's fixed cost (the GPU's
					 * p2p_launch); 0 = the library's base */
	double p2p_peer_s;		/* s, each further peer's share of it (the
					 * GPU's p2p_peer); 0 = none */
};

/* Build the topology of a system, everything in one heap object.
 * NULL after reporting to d (e.g. a fat tree too small for the nodes),
 * or when out of memory (reported too). */
struct topo *topo_build(const struct system_spec *sys, struct diag *d);
void topo_free(struct topo *t);

/* Graph building blocks (topo.c). Return the new id, or TOPO_NONE when
 * out of memory. */
uint32_t topo_add_node(struct topo *t, enum topo_node_kind kind,
		       double latency_s);
uint32_t topo_add_link(struct topo *t, uint32_t src, uint32_t dst,
		       double cap_Bps, double latency_s,
		       enum topo_transport transport);
/* An up link a -> b and a down link b -> a, alike; their ids go to *up
 * and *down. Returns 0, or -1 when out of memory. */
int topo_add_pair(struct topo *t, uint32_t a, uint32_t b, double cap_Bps,
		  double latency_s, enum topo_transport transport,
		  uint32_t *up, uint32_t *down);
/* Mark a scale-out link's level and owner. */
void topo_set_level(struct topo *t, uint32_t link, enum topo_level level,
		    uint32_t owner);
/* Fill the CSR adjacency once every link is added. Returns 0 or -1. */
int topo_finish(struct topo *t);

/* Node id of NIC k (0-based within the node) of node n. */
uint32_t topo_nic(const struct topo *t, uint32_t node, uint32_t k);
/* The rail (NIC index within its node) a GPU's traffic uses by default,
 * and the first GPU (local index) on a rail. */
uint32_t topo_rail_of(const struct topo *t, uint32_t local_gpu);
uint32_t topo_rail_owner(const struct topo *t, uint32_t rail);

/* Hops (links) on a shortest path from node a to node b, by BFS; -1 if
 * unreachable. For tests and checks, O(nodes + links). */
int topo_distance(const struct topo *t, uint32_t a, uint32_t b);

/* Internal to the builders (topo_build.c, topo_fattree.c). */
int topo_build_fat_tree(struct topo *t, const struct fabric_spec *f,
			struct diag *d);
/* n uint32_t from the topology's arena, every one TOPO_NONE; NULL when
 * out of memory. */
uint32_t *topo_table(struct topo *t, size_t n);
/* Payload capacity of n ports of link type l; endpoint: apply sustained. */
double topo_port_cap(const struct link_spec *l, int64_t n, int endpoint);
/* Report running out of memory while building to d; returns -1. */
int topo_oom(struct diag *d);

/* ceil(a / b) for b > 0, as a count the topology's ids can hold. */
static inline uint32_t topo_ceil_div(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

#endif
