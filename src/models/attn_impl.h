/*
 * attn_impl.h - what attn.c (projections, rotary, the attention core on
 * one GPU) and attn_cp.c (the core's context-parallel methods) share:
 * the per-GPU head shapes of the attention and its flash calls.
 * Private to src/models (attn.c and attn_cp.c).
 */
#ifndef LLMSIM_MODELS_ATTN_IMPL_H
#define LLMSIM_MODELS_ATTN_IMPL_H

#include "layer_impl.h"

/* Heads of Q on one GPU. */
static inline double attn_heads_q(const struct layer_dims *d)
{
	return d->heads / d->tp;
}

/* Width of a Q/K head (elements): MLA's nope + rope part. */
static inline double attn_dim_qk(const struct layer_dims *d)
{
	return d->mla ? d->mla_d.nope + d->mla_d.rope : d->head_dim;
}

/* K/V heads on one GPU: MLA expands one per query head. */
static inline double attn_heads_kv(const struct layer_dims *d)
{
	return d->mla ? attn_heads_q(d) : layer_kv_heads_local(d);
}

/* Bytes per token of this GPU's K and V. */
static inline double attn_kv_B(const struct layer_dims *d)
{
	return attn_heads_kv(d) * (attn_dim_qk(d) + layer_v_dim(d)) * d->act_B;
}

/* The flash shape of batch sequences of `heads` query heads (K/V heads
 * in the layer's proportion), sq queries against skv keys, causal or
 * not, under a window of `window` keys (0: none). */
void attn_shape(const struct layer_dims *d, double batch, double heads,
		double sq, double skv, int causal, double window,
		struct gpu_attn_shape *a);

/* Appends one flash call of shape a (backward if bwd); model_flops 0:
 * counted from its shape, -1: none (a later block of a counted core). */
struct layer_op *attn_flash(const struct layer_dims *d, struct layer_ops *o,
			    const char *name, enum layer_pass pass, int bwd,
			    const struct gpu_attn_shape *a,
			    double model_flops);

/* The attention core under context parallelism (d->cpd.cp > 1) by the
 * job's method (attn_cp.c): Transformer Engine's p2p ring, all_gather,
 * a2a or a2a+p2p, or PyTorch's context_parallel of SDPA; model_flops the
 * core's model FLOPs on one GPU (forward, or backward if bwd). */
void attn_cp_core(struct layer_ops *o, enum layer_pass pass, int bwd,
		  const struct layer_dims *d, double model_flops);

#endif
