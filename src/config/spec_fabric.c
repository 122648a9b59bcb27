/*
 * spec_fabric.c - the link and fabric schemas. What a link's framing
 * leaves of its signalling rate is the fabric model's (network/link.c).
 */
#include "spec_fabric.h"

#include <stddef.h>

#include "cnode.h"
#include "base/diag.h"

const char *const link_protocol_names[] = {
	"xgmi", "nvlink", "ualink", "roce", "infiniband", "pcie", "shm", NULL,
};

const char *const fabric_topology_names[] = {
	"mesh", "switch", "pcie_tree", "fat_tree", NULL,
};

const char *const load_balance_names[] = {"ecmp", "spray", NULL};

#define LOFF(m) offsetof(struct link_spec, m)

static const struct schema_field link_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = LOFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "protocol", .type = ST_ENUM, .offset = LOFF(protocol),
	  .values = link_protocol_names, .flags = SF_REQUIRED,
	  .help = "link protocol (what the library calls the transport)" },
	/* At least 1 Gbit/s, the slowest lane of any fabric (1 GbE): a
	 * slower one would make a step outlast the engine's clock. */
	{ .key = "lane_rate", .type = ST_BANDWIDTH, .offset = LOFF(lane_rate_Bps),
	  .min = 1.25e8, .max = 1e13, .flags = SF_REQUIRED,
	  .help = "signalling rate per lane per direction, e.g. '212.5 Gbit/s'" },
	{ .key = "lanes", .type = ST_INT, .offset = LOFF(lanes), .def = "1",
	  .min = 1, .max = 64, .help = "lanes per port" },
	{ .key = "line_code", .type = ST_NUM, .offset = LOFF(line_code),
	  .def = "1", .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of signalled bits that are link data (e.g. 128/130)" },
	{ .key = "packet_payload", .type = ST_BYTES,
	  .offset = LOFF(packet_payload_B), .def = "0 B", .max = 1e6,
	  .help = "largest payload per packet / TLP (MTU); 0 = no packet framing" },
	{ .key = "packet_overhead", .type = ST_BYTES,
	  .offset = LOFF(packet_overhead_B), .def = "0 B", .max = 1e4,
	  .help = "bytes per packet besides payload: headers, CRCs, gaps" },
	{ .key = "flit", .type = ST_BYTES, .offset = LOFF(flit_B), .def = "0 B",
	  .max = 1e5, .help = "data-link flit size; 0 = not flit-framed" },
	{ .key = "flit_overhead", .type = ST_BYTES,
	  .offset = LOFF(flit_overhead_B), .def = "0 B", .max = 1e5,
	  .help = "bytes per flit besides packet bytes: flit header, CRC, FEC" },
	{ .key = "latency", .type = ST_TIME, .offset = LOFF(latency_s),
	  .def = "0 ns", .max = 1e-3, .flags = SF_FIT,
	  .help = "one hop: wire, PHY, controller" },
	{ .key = "sustained", .type = ST_NUM, .offset = LOFF(sustained),
	  .def = "1", .min = SCHEMA_EFF_MIN, .max = 1, .flags = SF_FIT,
	  .help = "fraction of framed payload rate endpoints sustain (measured)" },
};

static int link_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct link_spec *l = obj;

	if (l->flit_B > 0 && l->flit_overhead_B >= l->flit_B) {
		cnode_error(d, node, "'flit_overhead': expected less than 'flit' (%g B), "
			   "got %g B", l->flit_B, l->flit_overhead_B);
		return -1;
	}
	return 0;
}

static const char *const link_dirs[] = {"configs/links", NULL};

const struct schema link_schema = {
	.kind = "link",
	.help = "a link (port) type: lanes, signalling rate, line code, framing, latency",
	.preset_dirs = link_dirs,
	.size = sizeof(struct link_spec),
	.fields = link_fields,
	.nfields = SCHEMA_COUNT(link_fields),
	.check = link_check,
};

#define OFF(m) offsetof(struct fabric_spec, m)

static const struct schema_field fabric_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "topology", .type = ST_ENUM, .offset = OFF(topology),
	  .values = fabric_topology_names, .flags = SF_REQUIRED,
	  .help = "how endpoints are wired" },
	{ .key = "link", .type = ST_REF, .offset = OFF(link), .sub = &link_schema,
	  .flags = SF_REQUIRED, .help = "link preset, path, or mapping" },
	{ .key = "links_per_endpoint", .type = ST_INT,
	  .offset = OFF(links_per_endpoint), .def = "1", .min = 1, .max = 1024,
	  .help = "ports each GPU (scale-up) or NIC (scale-out) has into the fabric" },
	/* 0, or at least 1 GB/s: below NCCL's slowest link (6 GB/s,
	 * NVIDIA/nccl src/graph/topo.h BDW_QPI_BW) a GPU's ports together
	 * are a unit slip (1 MB/s priced a 1 MiB MI300X all-reduce at
	 * 1.8 s); the shipped one is 322 GB/s. */
	{ .key = "endpoint_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(endpoint_bandwidth_Bps), .def = "0 B/s", .min = 1e9,
	  .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "mesh: what one GPU's ports carry together, per direction, "
		  "when all are busy (below the sum of their links); 0 = that "
		  "sum" },
	{ .key = "switch_latency", .type = ST_TIME, .offset = OFF(switch_latency_s),
	  .def = "0 ns", .max = 1e-3, .flags = SF_FIT,
	  .help = "port to port through one switch" },
	{ .key = "endpoint_latency", .type = ST_TIME,
	  .offset = OFF(endpoint_latency_s), .def = "0 ns", .max = 1e-3,
	  .flags = SF_FIT,
	  .help = "NIC / software overhead per message" },
	{ .key = "max_endpoints", .type = ST_INT, .offset = OFF(max_endpoints),
	  .def = "0", .min = 0, .max = 1e9, .help = "largest pod; 0 = unbounded" },
	{ .key = "in_switch_reduction", .type = ST_BOOL,
	  .offset = OFF(in_switch_reduction), .def = "false",
	  .help = "switches reduce in the network (NVLS, SHARP)" },
	{ .key = "reduction_efficiency", .type = ST_NUM,
	  .offset = OFF(reduction_efficiency), .def = "1",
	  .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "fraction of link rate in-switch reduction sustains" },
	{ .key = "reduction_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(reduction_Bps), .def = "0 B/s", .min = 1e9, .max = 1e14,
	  .flags = SF_ZERO_OFF | SF_FIT,
	  .help = "in-switch reduction (NVLS): bytes of one GPU's data the "
		  "switches reduce per second, whatever the heads; 0 = the "
		  "links alone bound it" },
	{ .key = "gpus_per_switch", .type = ST_INT, .offset = OFF(gpus_per_switch),
	  .def = "2", .min = 1, .max = 1024,
	  .help = "pcie_tree: GPUs under one PCIe switch" },
	{ .key = "nics_per_switch", .type = ST_INT, .offset = OFF(nics_per_switch),
	  .def = "2", .min = 1, .max = 1024,
	  .help = "pcie_tree as host fabric: NICs under one PCIe switch" },
	{ .key = "switch_radix", .type = ST_INT, .offset = OFF(switch_radix),
	  .def = "64", .min = 2, .max = 4096, .help = "fat_tree: ports per switch" },
	{ .key = "tiers", .type = ST_INT, .offset = OFF(tiers), .def = "0",
	  .min = 0, .max = 3,
	  .help = "fat_tree: switch tiers 1-3; 0 = the fewest that hold the NICs" },
	{ .key = "oversubscription", .type = ST_NUM, .offset = OFF(oversubscription),
	  .def = "1", .min = 1, .max = 64,
	  .help = "fat_tree: leaf downlink:uplink ratio (1 = non-blocking)" },
	{ .key = "rail_optimized", .type = ST_BOOL, .offset = OFF(rail_optimized),
	  .def = "true", .help = "fat_tree: NIC i of every node goes to a rail-i leaf" },
	{ .key = "load_balance", .type = ST_ENUM, .offset = OFF(load_balance),
	  .values = load_balance_names, .def = "ecmp",
	  .help = "fat_tree: ecmp (hash per flow) or spray (even split)" },
};

static const char *const fabric_dirs[] = {"configs/fabrics", NULL};

const struct schema fabric_schema = {
	.kind = "fabric",
	.help = "a fabric: link type, wiring, switch latency, in-switch reduction",
	.preset_dirs = fabric_dirs,
	.size = sizeof(struct fabric_spec),
	.fields = fabric_fields,
	.nfields = SCHEMA_COUNT(fabric_fields),
};
