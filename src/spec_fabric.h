/*
 * spec_fabric.h - a fabric as configured: the links GPUs or NICs use and
 * how they are wired (full mesh, switch pod, PCIe tree, fat tree).
 *
 * A system has a scale-up fabric (xGMI, NVLink/NVSwitch, UALink) among
 * the GPUs of a node or pod and a scale-out fabric (RoCE, InfiniBand)
 * among nodes. Loaded from configs/fabrics/NAME.yaml through
 * fabric_schema; every number carries its unit and its source there.
 *
 * Depends on schema.h only.
 */
#ifndef LLMSIM_SPEC_FABRIC_H
#define LLMSIM_SPEC_FABRIC_H

#include <stdint.h>

#include "schema.h"

enum fabric_topology {
	TOPO_MESH,		/* one direct link per GPU pair (xGMI) */
	TOPO_SWITCH,		/* every GPU's links into a switch (NVSwitch, UALink) */
	TOPO_PCIE_TREE,		/* GPUs under PCIe switches and a root complex */
	TOPO_FAT_TREE		/* NICs into leaf/spine(/core) switches */
};

enum link_protocol {
	LINK_XGMI,
	LINK_NVLINK,
	LINK_UALINK,
	LINK_ROCE,
	LINK_INFINIBAND,
	LINK_PCIE
};

struct fabric_spec {
	const char *name;			/* preset name */
	int topology;				/* enum fabric_topology */
	int protocol;				/* enum link_protocol */
	double link_bandwidth_Bps;		/* B/s per direction per link, after line coding, before framing */
	int64_t links_per_endpoint;		/* links (ports) each GPU or NIC has into this fabric */
	double link_latency_s;			/* s, one hop over one link (wire + PHY + controller) */
	double switch_latency_s;		/* s, port to port through one switch */
	int64_t max_endpoints;			/* largest pod the fabric can build; 0 = unbounded */
	int in_switch_reduction;		/* switches reduce (NVLS, SHARP) */
	int64_t switch_radix;			/* ports per switch (fat tree) */
	int64_t tiers;				/* switch tiers (fat tree: 2 or 3) */
	double oversubscription;		/* leaf down:up bandwidth ratio (1 = non-blocking) */
	int rail_optimized;			/* NIC i of every node on rail-i leaves */
	double endpoint_latency_s;		/* s, NIC/software overhead per message */
};

extern const char *const fabric_topology_names[];
extern const char *const link_protocol_names[];

extern const struct schema fabric_schema;

#endif
