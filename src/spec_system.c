/*
 * spec_system.c - the system schema.
 */
#include "spec_system.h"

#include <stddef.h>

#include "cnode.h"
#include "diag.h"

const char *const coll_library_names[] = {"rccl", "nccl", NULL};

int64_t system_gpus(const struct system_spec *s)
{
	return s->nodes * s->gpus_per_node;
}

#define OFF(m) offsetof(struct system_spec, m)

static const struct schema_field system_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "gpu", .type = ST_REF, .offset = OFF(gpu), .sub = &gpu_schema,
	  .flags = SF_REQUIRED, .help = "GPU preset, path, or mapping" },
	{ .key = "nodes", .type = ST_INT, .offset = OFF(nodes), .def = "1",
	  .min = 1, .max = 1e6, .help = "nodes in the cluster" },
	{ .key = "gpus_per_node", .type = ST_INT, .offset = OFF(gpus_per_node),
	  .def = "8", .min = 1, .max = 1024, .help = "GPUs per node (or per scale-up pod)" },
	{ .key = "scale_up", .type = ST_REF, .offset = OFF(scale_up),
	  .sub = &fabric_schema, .flags = SF_REQUIRED,
	  .help = "fabric among the GPUs of a node (xGMI, NVLink, UALink)" },
	{ .key = "scale_out", .type = ST_REF, .offset = OFF(scale_out),
	  .sub = &fabric_schema, .flags = SF_REQUIRED,
	  .help = "fabric among nodes (RoCE, InfiniBand)" },
	{ .key = "nics_per_node", .type = ST_INT, .offset = OFF(nics_per_node),
	  .flags = SF_OPTIONAL, .min = 1, .max = 1024,
	  .help = "scale-out NICs per node (default: gpus_per_node)" },
	{ .key = "collectives", .type = ST_ENUM, .offset = OFF(collectives),
	  .values = coll_library_names, .flags = SF_OPTIONAL,
	  .help = "collective library (default: rccl on AMD, nccl on NVIDIA)" },
};

static int system_check(void *obj, const struct cnode *node, struct diag *d)
{
	struct system_spec *s = obj;

	(void)node;
	(void)d;
	if (s->nics_per_node == 0)
		s->nics_per_node = s->gpus_per_node;
	/* collectives is an optional enum: the loader stores -1 when absent. */
	if (s->collectives < 0)
		s->collectives = s->gpu->vendor == GPU_AMD ? COLL_LIB_RCCL
							   : COLL_LIB_NCCL;
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
