/*
 * est_impl.h - what the analytical tier's files share (est.c: the step;
 * est_block.c: layer blocks and collective times, a leaf). Private to
 * src/plan.
 */
#ifndef LLMSIM_PLAN_EST_IMPL_H
#define LLMSIM_PLAN_EST_IMPL_H

#include "base/coll.h"
#include "models/block.h"
#include "models/layer.h"
#include "est.h"
#include "memo.h"

struct net;

/* One block (a layer's forward or backward, the embedding's, the head's)
 * as the step program runs it on one GPU: kernels on the compute stream,
 * TP collectives on the tp stream, each op starting when its inputs are
 * ready and its stream is free, kernels slowed while a collective holds
 * compute units (exec.h). */
struct est_pass {
	double lat_s;		/* s, from the block's input to its last op */
	double kern_s;		/* s, kernel time (unstretched) */
	double mem_s;		/* s, of that in bandwidth-bound kernels */
	double model_flops;	/* FLOP, model (no recompute) */
};

/* The blocks of one (tp, microbatch, recompute, SP, ...) setting. */
struct est_blocks {
	struct est_pass lf, lb;		/* layer forward, backward (+ recompute) */
	struct est_pass ef, eb;		/* embedding */
	struct est_pass hf, hb;		/* final norm, LM head, loss */
	struct est_pass pg;		/* all-gather of a scattered transfer (0: none) */
	double pp_B;			/* B, one pipeline transfer per TP rank */
};

/* Memo keys: what a collective's time and a block set depend on beyond
 * the plan's fixed job and system. */
struct est_ckey {
	int32_t op;		/* enum coll_op */
	uint32_t n, g0, stride, replicas;
	uint32_t pad;
	double bytes;		/* B */
};

struct est_bkey {
	int64_t tp, mbs, seq;
	int32_t sp, rc, chunks, pp_gather;
	uint32_t tp_replicas;
	uint32_t pad;
};

struct est {
	const struct system_spec *sys;
	struct net *net;		/* the system's fabric, idle */
	struct memo blocks;		/* struct bkey -> struct est_blocks */
	struct memo colls;		/* struct ckey -> double (s) */
	struct memo dpplans;		/* struct dkey -> struct dplan * */
	struct dplan *dplan_list;	/* every dplan, to free */
	uint32_t *gpus;			/* scratch: a group's GPU ids (world) */
	uint32_t *tp_gpus;		/* 0, 1, ..., world - 1 */
	struct layer_ops *ops;		/* scratch */
	struct block *blk;		/* scratch */
	int64_t *split;			/* scratch: layers per virtual stage */
	size_t split_cap;
	struct est_stats stats;
};

/*
 * The time (s) of collective op of `bytes` over the n GPUs g0, g0 +
 * stride, ..., standing for `replicas` identical groups, on the idle
 * fabric (net_collective_time), remembered. Negative after reporting to
 * d.
 */
double est_coll_s(struct est *e, enum coll_op op, uint32_t n, uint32_t g0,
		  uint32_t stride, uint32_t replicas, double bytes,
		  struct diag *d);

/* The blocks of job j (dims d: one microbatch on one GPU), costed on
 * first use. NULL after reporting to d. */
const struct est_blocks *est_blocks_of(struct est *e, const struct job_spec *j,
				       const struct layer_dims *d,
				       struct diag *dg);

#endif
