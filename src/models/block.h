/*
 * block.h - a costed template of one layer pass (or of the embedding or
 * head) on one GPU: layer.h's ops with each kernel's time from the GPU
 * model, ready to be instantiated for every layer and microbatch of a
 * step program.
 *
 * Depends on layer.h, gpu.h, exec.h (for interning task names).
 */
#ifndef LLMSIM_MODELS_BLOCK_H
#define LLMSIM_MODELS_BLOCK_H

#include "engine/exec.h"
#include "gpu/gpu.h"
#include "layer.h"

struct block_op {
	const char *name;	/* task name (static or interned in the program) */
	enum layer_op_kind kind;	/* LOP_KERNEL or LOP_COLL */
	double time_s;		/* s, kernel time on one GPU */
	double flops;		/* FLOP the GPU executes for the kernel */
	enum coll_op coll;	/* LOP_COLL: the collective */
	double bytes;		/* B, LOP_COLL size per coll.h */
	const double *a2a_B;	/* LOP_COLL: uneven all-to-all or NULL */
	uint8_t group;		/* LOP_COLL: enum layout_group */
	uint8_t stream;		/* LOP_COLL: enum layer_stream */
	uint8_t ep_path;	/* LOP_COLL: on the expert-parallel path */
	uint8_t p2p_next;	/* LOP_COLL sendrecv to the next group rank */
	uint8_t bwd;		/* in the backward pass (not a recomputation) */
	uint8_t host;		/* enum host_call (layer.h) */
	uint8_t scope;		/* enum graph_scope */
	uint16_t host_n;	/* calls of its kind (0: one) */
	uint16_t host_kernels;	/* further kernels launched from C++ */
	uint8_t host_gemm;	/* as struct layer_op's */
	uint8_t host_events;	/* as struct layer_op's */
	uint16_t host_items;	/* as struct layer_op's */
	uint16_t host_hooks;	/* as struct layer_op's */
	uint8_t side_stream;	/* as struct layer_op's */
	int16_t host_wait;	/* op the host waits for first, or LAYER_NONE */
	double host_call_s;	/* as struct layer_op's */
	int16_t dep[2];		/* as in struct layer_op */
	int mem_bound;		/* a kernel the GPU model finds bandwidth-bound */
	double owned;		/* a persistent GEMM: the share of its work
				 * in its CTAs' owned tiles
				 * (gpu_gemm_owned_share); 0 otherwise */
	double host_s;		/* s, host time to issue it (train.c fills) */
	const char *host_name;	/* name of its host task (train.c fills) */
};

struct block {
	struct block_op op[LAYER_MAX_OPS];
	int n;			/* ops used */
	int out;		/* the op producing the block's output, which
				 * the next block waits for: n - 1, or the op
				 * before delayed weight gradients
				 * (train_delay_wgrad) */
	double time_s;		/* s, sum of kernel times */
	double mem_s;		/* s, of that in bandwidth-bound kernels */
	double flops;		/* FLOP executed (recomputation included) */
	double model_flops;	/* FLOP of the forward and backward passes
				 * (model FLOPs, no recomputation) */
	const struct block *wcast;	/* a forward's step weight quantization
				 * (layer_weight_cast), run before it on its
				 * chunk's first microbatch, or NULL */
};

/* The dtypes kernels run in: low-precision GEMMs and everything else. */
struct block_dtypes {
	enum dtype gemm_lowp;	/* linear layers when the job is fp8/MX */
	enum dtype base;	/* 16-bit (or fp32) kernels */
	double lowp_rate;	/* fraction of gemm_lowp's GEMM math rate
				 * the low-precision GEMMs reach (block-
				 * scaled fp8: block_lowp_rate); 0 or 1 =
				 * all of it */
	unsigned captured;	/* bit s set: the job captures scope s
				 * (enum graph_scope) in CUDA graphs; its
				 * kernels cost the GPU's replayed-node
				 * kernel_launch_graph, not kernel_launch */
	unsigned fast_accum;	/* bit p set (enum layer_pass): that pass's
				 * fp8 GEMMs run in Hopper's fast-
				 * accumulation mode (block_fast_accum) */
};

struct job_spec;

/* The lowp_rate of j's low-precision GEMMs: the GPU's
 * fp8_block_gemm_rate under fp8 block scaling, else 1. */
double block_lowp_rate(const struct job_spec *j);

/* The fast_accum bits of j's block_dtypes: the passes whose fp8 GEMMs
 * the framework's fp8_fast_accumulation runs fast; 0 unless the job
 * trains in per-tensor fp8 (block scaling always promotes). */
unsigned block_fast_accum(const struct job_spec *j);

/* The captured bits of j's block_dtypes: bit s for each graph_scope s
 * that training.cuda_graphs captures. */
unsigned block_captured(const struct job_spec *j);

/* Cost o's kernels on g into b; recomputed ops are named
 * "recompute <name>" (interned in p; with p NULL they keep their base
 * name, for callers that only want the times). Returns 0, or -1 when out
 * of memory. */
int block_cost(struct block *b, const struct layer_ops *o,
	       const struct gpu_spec *g, const struct block_dtypes *dt,
	       struct prog *p);

#endif
