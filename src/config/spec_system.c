/*
 * spec_system.c - the system schema and its cross-field checks.
 */
#include "spec_system.h"

#include <stddef.h>

#include "cnode.h"
#include "base/diag.h"

int64_t system_gpus(const struct system_spec *s)
{
	return s->nodes * s->gpus_per_node;
}

#define OFF(m) offsetof(struct system_spec, m)

/* The floor of a stated host copy rate (host_h2d, host_d2h): 1 GB/s, one
 * PCIe 3.0 lane (8 GT/s x 128b/130b = 0.985 GB/s a direction, PCI-SIG
 * PCIe 3.0 base specification). A GPU's host link is 16 lanes (NCCL's
 * PCI_BW 12 GB/s for Gen3 x16, src/graph/topo.h) or NVLink-C2C (450 GB/s
 * a direction, gb200-nvl72.yaml); a rate below one lane is a unit slip
 * (MB/s for GB/s), and at 1 B/s an offloaded layer outlasts what the
 * engine represents (exit 1, naming no key). */
#define HOST_COPY_FLOOR_Bps 1e9

static const struct schema_field variability_fields[] = {
	{ .key = "op_jitter", .type = ST_NUM,
	  .offset = offsetof(struct variability_spec, op_jitter),
	  .def = "0", .min = 0, .max = 0.5,
	  .help = "relative standard deviation of a GPU's compute pace over "
		  "one op (a microbatch's forward or backward on a stage), "
		  "independent between ops and GPUs" },
	{ .key = "gpu_spread", .type = ST_NUM,
	  .offset = offsetof(struct variability_spec, gpu_spread),
	  .def = "0", .min = 0, .max = 0.5,
	  .help = "relative standard deviation of a GPU's persistent pace "
		  "over the GPUs of the fleet" },
};

static const struct schema variability_schema = {
	.kind = "system.variability",
	.help = "how the fleet's GPUs vary in pace",
	.size = sizeof(struct variability_spec),
	.fields = variability_fields,
	.nfields = SCHEMA_COUNT(variability_fields),
};

static const struct schema_field system_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "gpu", .type = ST_REF, .offset = OFF(gpu), .sub = &gpu_schema,
	  .flags = SF_REQUIRED, .help = "GPU preset, path, or mapping" },
	{ .key = "nodes", .type = ST_INT, .offset = OFF(nodes), .def = "1",
	  .min = 1, .max = 1e6, .help = "nodes (scale-up domains) in the cluster" },
	{ .key = "gpus_per_node", .type = ST_INT, .offset = OFF(gpus_per_node),
	  .def = "8", .min = 1, .max = 1024,
	  .help = "GPUs per node (or per scale-up pod)" },
	{ .key = "scale_up", .type = ST_REF, .offset = OFF(scale_up),
	  .sub = &fabric_schema, .flags = SF_REQUIRED,
	  .help = "fabric among the GPUs of a node (xGMI, NVLink, UALink, PCIe)" },
	{ .key = "scale_out", .type = ST_REF, .offset = OFF(scale_out),
	  .sub = &fabric_schema, .flags = SF_REQUIRED,
	  .help = "fabric among nodes (RoCE, InfiniBand)" },
	{ .key = "host", .type = ST_REF, .offset = OFF(host),
	  .sub = &fabric_schema, .flags = SF_OPTIONAL,
	  .help = "PCIe tree between GPUs and NICs (absent: NICs attach directly)" },
	{ .key = "nics_per_node", .type = ST_INT, .offset = OFF(nics_per_node),
	  .flags = SF_OPTIONAL, .min = 1, .max = 1024,
	  .help = "scale-out NICs per node (default: gpus_per_node)" },
	{ .key = "nic_via_c2c", .type = ST_BOOL, .offset = OFF(nic_via_c2c),
	  .def = "false",
	  .help = "a GPU reaches its scale-out NICs through its CPU over "
		  "NVLink-C2C (GB200: the NICs hang off Grace's PCIe), not "
		  "over a PCIe switch it shares with them; a library whose "
		  "ll128_c2c is false then runs no LL128 across nodes" },
	{ .key = "collectives", .type = ST_REF, .offset = OFF(collectives),
	  .sub = &collectives_schema, .flags = SF_REQUIRED,
	  .help = "collective library preset (rccl, nccl), path, or mapping" },
	{ .key = "variability", .type = ST_SECTION, .offset = OFF(variability),
	  .sub = &variability_schema, .flags = SF_OPTIONAL,
	  .help = "per-GPU pace variability: every rendezvous waits for its "
		  "slowest member (absent: none)" },
	{ .key = "host_dispatch_scale", .type = ST_NUM,
	  .offset = OFF(host_dispatch_scale), .def = "1", .min = 0.05,
	  .max = 100,
	  .help = "the host CPU's time per framework call (a PyTorch op, a "
		  "module, a launch) over the reference CPU's, an Intel Xeon "
		  "Platinum 8480C (DGX H100): 1" },
	{ .key = "host_loop_scale", .type = ST_NUM,
	  .offset = OFF(host_loop_scale), .def = "1", .min = 0.05,
	  .max = 100,
	  .help = "the host CPU's time for a serving engine's Python loop "
		  "(scheduling, inputs, sampler update, responses: the "
		  "engine's step, sequence and prompt-token overheads) over "
		  "the reference x86 host's: 1" },
	{ .key = "host_h2d", .type = ST_BANDWIDTH, .offset = OFF(host_h2d_Bps),
	  .def = "0 B/s", .min = HOST_COPY_FLOOR_Bps, .max = 1e13,
	  .flags = SF_ZERO_OFF,
	  .help = "what one GPU copies from pinned host memory per second "
		  "while its peers on the same host copy too (PCIe, "
		  "NVLink-C2C): activation offloading's reloads "
		  "(training.cpu_offload_layers); 0 = not stated" },
	{ .key = "host_d2h", .type = ST_BANDWIDTH, .offset = OFF(host_d2h_Bps),
	  .def = "0 B/s", .min = HOST_COPY_FLOOR_Bps, .max = 1e13,
	  .flags = SF_ZERO_OFF,
	  .help = "what one GPU copies to pinned host memory per second, "
		  "its host peers copying too: activation offloading's "
		  "offloads; 0 = not stated" },
	{ .key = "collective_overhead", .type = ST_TIME,
	  .offset = OFF(collective_overhead_s), .def = "0 us", .max = 1e-2,
	  .flags = SF_FIT,
	  .help = "software time every collective takes beyond the library's "
		  "model (launch path, virtualization)" },
	{ .key = "calibration", .type = ST_STRING, .offset = OFF(calibration),
	  .flags = SF_OPTIONAL | SF_OVERLAY,
	  .help = "a fit of `llmsim calibrate` (configs/calibrated/S.yaml): "
		  "its values overlay this system, its covariance gives "
		  "predictions error bars" },
	{ .key = "algorithm", .type = ST_ENUM, .offset = OFF(algorithm),
	  .values = coll_algo_names, .flags = SF_OPTIONAL,
	  .help = "force one collective algorithm (default: the library picks)" },
	{ .key = "protocol", .type = ST_ENUM, .offset = OFF(protocol),
	  .values = coll_proto_names, .flags = SF_OPTIONAL,
	  .help = "force one protocol (default: the library picks)" },
};

/* nodes x gpus_per_node (and x nics_per_node) within SYSTEM_MAX_GPUS,
 * reported at whichever of the keys the user changed. */
static int check_size(const struct system_spec *s, const struct schema_at *at,
		      struct diag *d)
{
	static const char *const keys[] = {"nodes", "gpus_per_node",
					   "nics_per_node"};
	int64_t per = s->gpus_per_node > s->nics_per_node ? s->gpus_per_node
							  : s->nics_per_node;
	const char *what = per == s->gpus_per_node ? "GPUs" : "NICs";

	if (s->nodes * per <= SYSTEM_MAX_GPUS)
		return 0;
	if (schema_check_blame(at, keys, 3) == 0)
		schema_check_error(d, at, "nodes", "expected at most %lld nodes "
				   "of %lld %s (%lld GPUs, the most the fabric "
				   "model builds), got %lld",
				   (long long)(SYSTEM_MAX_GPUS / per),
				   (long long)per, what,
				   (long long)SYSTEM_MAX_GPUS,
				   (long long)s->nodes);
	else
		schema_check_error(d, at, per == s->gpus_per_node ?
				   "gpus_per_node" : "nics_per_node",
				   "expected at most %lld on %lld nodes (%lld "
				   "GPUs, the most the fabric model builds), "
				   "got %lld", (long long)(SYSTEM_MAX_GPUS /
				   s->nodes), (long long)s->nodes,
				   (long long)SYSTEM_MAX_GPUS, (long long)per);
	return -1;
}

static int system_check(void *obj, const struct schema_at *at,
			struct diag *d)
{
	struct system_spec *s = obj;

	if (s->nics_per_node == 0)
		s->nics_per_node = s->gpus_per_node;
	if (check_size(s, at, d) != 0)
		return -1;
	if (s->scale_up && s->scale_up->max_endpoints > 0 &&
	    s->gpus_per_node > s->scale_up->max_endpoints) {
		schema_check_error(d, at, "gpus_per_node", "expected at most "
				   "%lld, the GPUs scale-up fabric '%s' "
				   "connects, got %lld",
				   (long long)s->scale_up->max_endpoints,
				   s->scale_up->name ? s->scale_up->name
						     : "(inline)",
				   (long long)s->gpus_per_node);
		return -1;
	}
	if (s->scale_up && s->scale_up->topology == TOPO_FAT_TREE) {
		schema_check_error(d, at, "scale_up.topology", "expected "
				   "mesh, switch or pcie_tree, got fat_tree");
		return -1;
	}
	if (s->host && s->host->topology != TOPO_PCIE_TREE) {
		schema_check_error(d, at, "host.topology", "expected "
				   "pcie_tree, got %s",
				   fabric_topology_names[s->host->topology]);
		return -1;
	}
	return 0;
}

static const char *const system_dirs[] = {"configs/systems", NULL};

const struct schema system_schema = {
	.kind = "system",
	.help = "a cluster: GPU, nodes, GPUs per node, fabrics, NICs, collective library",
	.preset_dirs = system_dirs,
	.size = sizeof(struct system_spec),
	.fields = system_fields,
	.nfields = SCHEMA_COUNT(system_fields),
	.check = system_check,
};
