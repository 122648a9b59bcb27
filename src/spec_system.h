/*
 * spec_system.h - a cluster: which GPU, how many per node, how many nodes,
 * the scale-up and scale-out fabrics, NICs, and the collective library.
 *
 * Loaded from configs/systems/NAME.yaml through system_schema. gpu,
 * scale_up and scale_out are references (preset name, path or inline
 * mapping with `preset:` and overrides).
 *
 * Depends on schema.h, spec_gpu.h, spec_fabric.h.
 */
#ifndef LLMSIM_SPEC_SYSTEM_H
#define LLMSIM_SPEC_SYSTEM_H

#include <stdint.h>

#include "schema.h"
#include "spec_fabric.h"
#include "spec_gpu.h"

enum coll_library {
	COLL_LIB_RCCL,
	COLL_LIB_NCCL
};

extern const char *const coll_library_names[];

struct system_spec {
	const char *name;			/* preset name */
	const struct gpu_spec *gpu;		/* the GPU every node has */
	int64_t nodes;				/* nodes in the cluster */
	int64_t gpus_per_node;			/* GPUs per node */
	const struct fabric_spec *scale_up;	/* among the GPUs of a node / pod */
	const struct fabric_spec *scale_out;	/* among nodes */
	int64_t nics_per_node;			/* scale-out NICs per node */
	int collectives;			/* enum coll_library */
};

/* nodes * gpus_per_node. */
int64_t system_gpus(const struct system_spec *s);

extern const struct schema system_schema;

#endif
