/*
 * spec_fabric.h - links and fabrics as configured.
 *
 * A link (configs/links/NAME.yaml, kind "link") is one port type: its
 * protocol, lanes and signalling rate, line code, packet/flit framing,
 * per-hop latency. Its payload rate is derived from those numbers by the
 * fabric model (network/link.h), never given as one fudge factor.
 *
 * A fabric (configs/fabrics/NAME.yaml, kind "fabric") is how endpoints are
 * wired with one link type: a full mesh (xGMI), a switch pod (NVSwitch,
 * UALink), a PCIe tree, or a fat tree (RoCE, InfiniBand). A system has a
 * scale-up fabric among the GPUs of a node or pod, a scale-out fabric
 * among nodes and optionally a host (PCIe) fabric between GPUs and NICs.
 *
 * Every number carries its unit and its source in the YAML.
 *
 * Depends on schema.h only.
 */
#ifndef LLMSIM_CONFIG_SPEC_FABRIC_H
#define LLMSIM_CONFIG_SPEC_FABRIC_H

#include <stdint.h>

#include "schema.h"

enum link_protocol {
	LINK_XGMI,
	LINK_NVLINK,
	LINK_UALINK,
	LINK_ROCE,
	LINK_INFINIBAND,
	LINK_PCIE,
	LINK_SHM,			/* shared memory between processes of one host */
	LINK_PROTOCOL_COUNT
};

struct link_spec {
	const char *name;		/* preset name */
	int protocol;			/* enum link_protocol */
	double lane_rate_Bps;		/* B/s per lane per direction, as signalled */
	int64_t lanes;			/* lanes per port */
	double line_code;		/* fraction of signalled bits carrying link data (line code, FEC) */
	double packet_payload_B;	/* B, largest payload of one packet / TLP / request */
	double packet_overhead_B;	/* B, per-packet headers, trailers, gaps on the wire */
	double flit_B;			/* B, data-link flit size; 0 = not flit-framed */
	double flit_overhead_B;		/* B, per-flit header, CRC, FEC */
	double latency_s;		/* s, one hop: wire, PHY, controller */
	double sustained;		/* fraction of the framed payload rate endpoints sustain */
};

enum fabric_topology {
	TOPO_MESH,		/* one direct link (group) per GPU pair (xGMI) */
	TOPO_SWITCH,		/* every GPU's links into a switch (NVSwitch, UALink) */
	TOPO_PCIE_TREE,		/* endpoints under PCIe switches under a root complex */
	TOPO_FAT_TREE,		/* NICs into leaf/spine(/core) switches */
	TOPO_COUNT
};

enum load_balance {
	LB_ECMP,		/* one uplink per flow, chosen by a deterministic hash */
	LB_SPRAY		/* every flow split evenly over all equal-cost uplinks */
};

struct fabric_spec {
	const char *name;			/* preset name */
	int topology;				/* enum fabric_topology */
	const struct link_spec *link;		/* the port type every link uses */
	int64_t links_per_endpoint;		/* ports each GPU (scale-up) or NIC (scale-out) has */
	double endpoint_bandwidth_Bps;		/* B/s per direction, all of a GPU's mesh ports at once; 0 = their sum */
	double switch_latency_s;		/* s, port to port through one switch */
	double endpoint_latency_s;		/* s, NIC / software overhead per message */
	int64_t max_endpoints;			/* largest pod the fabric builds; 0 = unbounded */
	int in_switch_reduction;		/* switches reduce (NVLS, SHARP) */
	double reduction_efficiency;		/* fraction of link rate in-switch reduction sustains */
	double reduction_Bps;			/* B/s, what the switches reduce of one GPU's data (NVLS); 0 = no bound */
	int64_t gpus_per_switch;		/* pcie_tree: GPUs under one PCIe switch */
	int64_t nics_per_switch;		/* pcie_tree (host fabric): NICs under one PCIe switch */
	int64_t switch_radix;			/* fat_tree: ports per switch */
	int64_t tiers;				/* fat_tree: switch tiers (1, 2 or 3); 0 = fewest that fit */
	double oversubscription;		/* fat_tree: leaf down:up ratio (1 = non-blocking) */
	int rail_optimized;			/* fat_tree: NIC i of every node on rail-i leaves */
	int load_balance;			/* fat_tree: enum load_balance */
};

extern const char *const link_protocol_names[];
extern const char *const fabric_topology_names[];
extern const char *const load_balance_names[];

extern const struct schema link_schema;
extern const struct schema fabric_schema;

#endif
