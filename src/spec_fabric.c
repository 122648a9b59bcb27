/*
 * spec_fabric.c - the fabric schema.
 */
#include "spec_fabric.h"

#include <stddef.h>

const char *const fabric_topology_names[] = {
	"mesh", "switch", "pcie_tree", "fat_tree", NULL,
};

const char *const link_protocol_names[] = {
	"xgmi", "nvlink", "ualink", "roce", "infiniband", "pcie", NULL,
};

#define OFF(m) offsetof(struct fabric_spec, m)

static const struct schema_field fabric_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "topology", .type = ST_ENUM, .offset = OFF(topology),
	  .values = fabric_topology_names, .flags = SF_REQUIRED,
	  .help = "how endpoints are wired" },
	{ .key = "protocol", .type = ST_ENUM, .offset = OFF(protocol),
	  .values = link_protocol_names, .flags = SF_REQUIRED,
	  .help = "link protocol; sets framing overheads" },
	{ .key = "link_bandwidth", .type = ST_BANDWIDTH,
	  .offset = OFF(link_bandwidth_Bps), .min = 0, .flags = SF_REQUIRED | SF_MIN_EXCL,
	  .help = "per direction per link, after line coding" },
	{ .key = "links_per_endpoint", .type = ST_INT,
	  .offset = OFF(links_per_endpoint), .def = "1", .min = 1, .max = 1024,
	  .help = "links each GPU (scale-up) or NIC (scale-out) has into the fabric" },
	{ .key = "link_latency", .type = ST_TIME, .offset = OFF(link_latency_s),
	  .def = "0 ns", .max = 1e-3, .help = "one hop over one link" },
	{ .key = "switch_latency", .type = ST_TIME, .offset = OFF(switch_latency_s),
	  .def = "0 ns", .max = 1e-3, .help = "port to port through one switch" },
	{ .key = "max_endpoints", .type = ST_INT, .offset = OFF(max_endpoints),
	  .def = "0", .min = 0, .max = 1e9, .help = "largest pod; 0 = unbounded" },
	{ .key = "in_switch_reduction", .type = ST_BOOL,
	  .offset = OFF(in_switch_reduction), .def = "false",
	  .help = "switches reduce in the network (NVLS, SHARP)" },
	{ .key = "switch_radix", .type = ST_INT, .offset = OFF(switch_radix),
	  .def = "64", .min = 2, .max = 4096, .help = "ports per switch (fat tree)" },
	{ .key = "tiers", .type = ST_INT, .offset = OFF(tiers), .def = "2",
	  .min = 1, .max = 3, .help = "switch tiers (fat tree)" },
	{ .key = "oversubscription", .type = ST_NUM, .offset = OFF(oversubscription),
	  .def = "1", .min = 1, .max = 64,
	  .help = "leaf downlink:uplink bandwidth ratio (1 = non-blocking)" },
	{ .key = "rail_optimized", .type = ST_BOOL, .offset = OFF(rail_optimized),
	  .def = "true", .help = "NIC i of every node goes to the rail-i leaf" },
	{ .key = "endpoint_latency", .type = ST_TIME,
	  .offset = OFF(endpoint_latency_s), .def = "0 ns", .max = 1e-3,
	  .help = "NIC / software overhead per message" },
};

static const char *const fabric_dirs[] = {"configs/fabrics", NULL};

const struct schema fabric_schema = {
	.kind = "fabric",
	.help = "a fabric: link type and bandwidth, latency, wiring",
	.preset_dirs = fabric_dirs,
	.size = sizeof(struct fabric_spec),
	.fields = fabric_fields,
	.nfields = SCHEMA_COUNT(fabric_fields),
};
