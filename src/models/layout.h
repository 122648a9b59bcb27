/*
 * layout.h - where each rank of a TP x CP x DP x PP layout sits, with the
 * experts folded over the same GPUs as ETP x EP x EDP (Megatron-Core
 * parallel folding): its global GPU id, its groups, and which ranks the
 * step program simulates.
 *
 * A pipeline stage holds G = tp cp dp GPUs. A GPU's index in its stage
 * orders attention ranks as Megatron's default (tp fastest, then cp, dp)
 * and expert ranks as its expert order (etp fastest, then ep, edp):
 *
 *   i = tp_i + tp (cp_i + cp dp_i) = etp_i + etp (ep_i + ep edp_i)
 *   gpu = i + G pp_i
 *
 * so a TP group is tp consecutive GPUs (one node when tp <= GPUs per
 * node), a CP group strides by tp, the dense gradients' data-parallel
 * group (dp x cp GPUs of one tp index, Megatron's data-parallel group
 * with CP) strides by tp, an EP group strides by etp and the expert
 * gradients' group (EDP) by etp ep. Global GPU id = node * gpus_per_node
 * + local index (coll.h).
 *
 * Megatron's other rank order, tp-cp-ep-pp-dp (use_tp_pp_dp_mapping,
 * layout_set_pp_inner), puts the pipeline inside the data-parallel
 * replicas: with M = tp cp GPUs of one model-parallel block,
 *
 *   gpu = i mod M + M (pp_i + pp (i div M))
 *
 * so neighbouring pipeline stages are M GPUs apart and a DP group strides
 * by M pp. The stage indices, groups and replicas stay as above; only
 * the GPUs they land on move. (The experts fold over the same GPUs when
 * etp ep = M: Megatron's expert order etp-ep-pp-edp then gives each GPU
 * the expert coordinates of its stage index; the job checks it.)
 *
 * Symmetric replication: the GPUs of a stage run identical programs, so
 * by default one rank per pipeline stage is simulated (sim = 1) and
 * every collective says how many identical groups it stands for
 * (coll_desc.replicas = G / group size). Full fidelity simulates every
 * GPU (sim = G); a collective then has all its members simulated.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_MODELS_LAYOUT_H
#define LLMSIM_MODELS_LAYOUT_H

#include <stdint.h>

enum layout_group {
	LG_TP,		/* attention tensor parallel: tp consecutive GPUs */
	LG_CP,		/* context parallel: cp GPUs, stride tp */
	LG_DP,		/* dense gradients: cp dp GPUs, stride tp */
	LG_EP,		/* expert parallel: ep GPUs, stride etp */
	LG_ETP,		/* expert tensor parallel: etp consecutive GPUs */
	LG_EDP,		/* expert gradients: edp GPUs, stride etp ep */
	LG_CP_A2A,	/* a2a+p2p context parallelism: the inner all-to-all
			 * group, cp_a2a GPUs of a CP group, stride tp */
	LG_CP_RING,	/* ... and the ring across those groups, cp / cp_a2a
			 * GPUs, stride tp cp_a2a */
	LG_TPCP,	/* tensor x context parallel: tp cp consecutive GPUs */
	LG_STAGE,	/* every GPU of the stage: tp cp dp */
	LG_DP_NOCP,	/* data parallel without CP (Megatron's
			 * get_data_parallel_group()): dp GPUs, stride tp cp */
	LG_COUNT
};

struct layout {
	int64_t tp, cp, pp, dp;		/* attention degrees */
	int64_t etp, ep, edp;		/* expert degrees: etp ep edp = tp cp dp */
	int64_t cp_a2a;			/* inner all-to-all group of a2a+p2p CP */
	int64_t stage;			/* GPUs per pipeline stage: tp cp dp */
	int64_t sim;			/* simulated GPUs per stage: 1 or stage */
	int64_t pp_inner;		/* 0: order tp-cp-dp-pp; else M = tp cp
					 * GPUs of a block, order tp-cp-pp-dp */
	uint32_t nranks;		/* simulated ranks: pp sim */
};

/* A GPU's coordinates from its index in the stage. */
struct layout_coord {
	int64_t tp_i, cp_i, dp_i;	/* attention */
	int64_t etp_i, ep_i, edp_i;	/* experts */
};

/* full = 0: one simulated rank per stage; 1: every GPU. etp ep must
 * divide tp cp dp (the job schema checks it). cp_a2a is 1 unless the
 * job uses a2a+p2p context parallelism (layout_set_cp_a2a). */
void layout_init(struct layout *l, int64_t tp, int64_t cp, int64_t pp,
		 int64_t dp, int64_t etp, int64_t ep, int full);

/* The inner all-to-all group size of a2a+p2p CP (divides cp). */
void layout_set_cp_a2a(struct layout *l, int64_t cp_a2a);

/* Order the ranks tp-cp-pp-dp (Megatron's use_tp_pp_dp_mapping): the
 * pipeline stages of one tp x cp block are neighbours. */
void layout_set_pp_inner(struct layout *l);

/* Global GPU id of stage index i on pipeline rank pp_i. */
uint32_t layout_gpu(const struct layout *l, int64_t pp_i, int64_t i);

/* Simulated rank of (pp_i, stage index i < sim). */
uint32_t layout_rank(const struct layout *l, int64_t pp_i, int64_t i);

/* Inverse of layout_rank. */
void layout_where(const struct layout *l, uint32_t rank, int64_t *pp_i,
		  int64_t *i);

void layout_coord(const struct layout *l, int64_t i, struct layout_coord *c);

/* Members of a group of kind g. */
uint32_t layout_group_size(const struct layout *l, enum layout_group g);

/* The stage indices of the kind-g group holding stage index i, in the
 * group's rank order, into out[layout_group_size]. Returns i's position
 * in it. */
uint32_t layout_group(const struct layout *l, enum layout_group g,
		      int64_t i, int64_t *out);

/* Identical groups of kind g that one simulated group stands for:
 * G / size symmetric, 1 in full fidelity. */
uint32_t layout_replicas(const struct layout *l, enum layout_group g);

/* The same for a point-to-point transfer between pipeline stages. */
uint32_t layout_pp_replicas(const struct layout *l);

#endif
