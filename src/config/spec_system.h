/*
 * spec_system.h - a cluster: which GPU, how many per node, how many nodes,
 * the scale-up, scale-out and host fabrics, NICs, and the collective
 * library with optional algorithm/protocol overrides.
 *
 * Loaded from configs/systems/NAME.yaml through system_schema. gpu,
 * scale_up, scale_out, host and collectives are references (preset name,
 * path or inline mapping with `preset:` and overrides). A "node" is one
 * scale-up domain: 8 GPUs in a DGX or an MI300X box, 72 in a GB200 NVL72
 * rack, up to 1,024 in a UALink pod.
 *
 * Depends on schema.h, spec_gpu.h, spec_fabric.h, spec_collectives.h.
 */
#ifndef LLMSIM_CONFIG_SPEC_SYSTEM_H
#define LLMSIM_CONFIG_SPEC_SYSTEM_H

#include <stdint.h>

#include "schema.h"
#include "spec_collectives.h"
#include "spec_fabric.h"
#include "spec_gpu.h"

/* How the fleet's GPUs vary (src/engine/exec_jitter.c has the model). */
struct variability_spec {
	double op_jitter;	/* relative sd of a GPU's pace over one op
				 * (a microbatch's forward or backward) */
	double gpu_spread;	/* relative sd of a GPU's persistent pace */
};

struct system_spec {
	const char *name;			/* preset name */
	const struct gpu_spec *gpu;		/* the GPU every node has */
	int64_t nodes;				/* nodes (scale-up domains) in the cluster */
	int64_t gpus_per_node;			/* GPUs per node / scale-up pod */
	const struct fabric_spec *scale_up;	/* among the GPUs of a node */
	const struct fabric_spec *scale_out;	/* among nodes */
	const struct fabric_spec *host;		/* PCIe between GPUs and NICs; NULL = direct attach */
	int64_t nics_per_node;			/* scale-out NICs per node */
	int nic_via_c2c;			/* a GPU reaches its NICs through its CPU
						 * over NVLink-C2C (GB200's Grace) */
	const struct coll_lib_spec *collectives; /* the collective library */
	double collective_overhead_s;		/* s, software time per collective beyond the library's model */
	int algorithm;				/* enum coll_algo forced for every collective; -1 = auto */
	int protocol;				/* enum coll_proto forced; -1 = auto */
	const char *calibration;		/* the calibration file applied
						   (path as resolved), or NULL */
	struct variability_spec variability;	/* per-GPU variability; 0 = none */
	double host_dispatch_scale;		/* the host CPU's time per framework call over
						 * the reference CPU's (Xeon Platinum 8480C) */
	double host_h2d_Bps;			/* B/s one GPU copies from host memory
						 * (a copy engine, pinned memory);
						 * 0 = not stated */
	double host_d2h_Bps;			/* B/s one GPU copies to host memory */
	double host_loop_scale;			/* the host CPU's time for a serving engine's
						 * Python loop (its step, sequence and
						 * prompt-token overheads) over the reference
						 * x86 host's */
};

/* nodes * gpus_per_node. */
int64_t system_gpus(const struct system_spec *s);

/* Most GPUs (and NICs) a system may have: the fabric model's ids are
 * 32-bit and its fluid model is meant for about a million GPUs. */
#define SYSTEM_MAX_GPUS ((int64_t)1 << 22)

extern const struct schema system_schema;

#endif
