/*
 * layout.h - where each rank of a TP x PP x DP layout sits: its global GPU
 * id, its groups, and which ranks the step program simulates.
 *
 * Global rank order is Megatron's default (tp fastest, then cp, dp, pp):
 *
 *   gpu = tp_i + tp * (cp_i + cp * (dp_i + dp * pp_i))
 *
 * so a TP group is tp consecutive GPUs (one node when tp <= GPUs per
 * node) and a DP group strides by tp * cp. Global GPU id = node *
 * gpus_per_node + local index (coll.h).
 *
 * Symmetric replication: the TP peers of a stage and the DP replicas run
 * identical programs, so by default one rank per pipeline stage is
 * simulated (sim_tp = sim_dp = 1) and every collective says how many
 * identical groups it stands for (coll_desc.replicas). Full fidelity
 * simulates every GPU (sim_tp = tp, sim_dp = dp).
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_MODELS_LAYOUT_H
#define LLMSIM_MODELS_LAYOUT_H

#include <stdint.h>

struct layout {
	int64_t tp, cp, pp, dp;		/* degrees */
	int64_t sim_tp, sim_dp;		/* simulated TP peers / DP replicas per stage */
	uint32_t nranks;		/* simulated ranks: pp * sim_dp * sim_tp */
};

/* full = 0: one simulated rank per stage; 1: every GPU. */
void layout_init(struct layout *l, int64_t tp, int64_t cp, int64_t pp,
		 int64_t dp, int full);

/* Global GPU id of (pp_i, dp_i, tp_i) with cp_i = 0. */
uint32_t layout_gpu(const struct layout *l, int64_t pp_i, int64_t dp_i,
		    int64_t tp_i);

/* Simulated rank of (pp_i, dp_i < sim_dp, tp_i < sim_tp). */
uint32_t layout_rank(const struct layout *l, int64_t pp_i, int64_t dp_i,
		     int64_t tp_i);

/* Inverse of layout_rank. */
void layout_coords(const struct layout *l, uint32_t rank, int64_t *pp_i,
		   int64_t *dp_i, int64_t *tp_i);

/* GPU ids of the TP group of (pp_i, dp_i): tp entries. */
void layout_tp_gpus(const struct layout *l, int64_t pp_i, int64_t dp_i,
		    uint32_t *gpus);

/* GPU ids of the DP group of (pp_i, tp_i): dp entries. */
void layout_dp_gpus(const struct layout *l, int64_t pp_i, int64_t tp_i,
		    uint32_t *gpus);

/* Identical unsimulated groups per simulated TP, DP or pipeline (p2p)
 * group. */
uint32_t layout_tp_replicas(const struct layout *l);
uint32_t layout_dp_replicas(const struct layout *l);
uint32_t layout_pp_replicas(const struct layout *l);

#endif
