/*
 * attn_core.c - the attention core's flash calls, shared by attn.c (the
 * core on one GPU) and attn_cp.c (its context-parallel methods): the
 * flash shape of a block of the score matrix and the op of one call.
 * A leaf of both (declared in attn_impl.h), so neither calls the other
 * back.
 */
#include "attn_impl.h"

#include <string.h>

void attn_shape(const struct layer_dims *d, double batch, double heads,
		double sq, double skv, int causal, double window,
		struct gpu_attn_shape *a)
{
	memset(a, 0, sizeof(*a));	/* padding too: shapes are compared whole */
	a->batch = batch;
	a->heads_q = heads;
	a->heads_kv = heads * attn_heads_kv(d) / attn_heads_q(d);
	a->seq_q = sq;
	a->seq_kv = skv;
	a->head_dim_qk = attn_dim_qk(d);
	a->head_dim_v = layer_v_dim(d);
	a->causal = causal;
	a->window = window;
	a->kernel = d->attn_kernel;
	a->fp8 = d->fp8_attn;
	a->mx = d->mx_attn_quant;	/* MXFP8 fused attention */
}

/* One flash call; model_flops 0: counted from its shape. A backward with
 * unequal query/key and value head dims (MLA) runs the framework's
 * attention_mla_bwd_kernel family. */
struct layer_op *attn_flash(const struct layer_dims *d, struct layer_ops *o,
			    const char *name, enum layer_pass pass, int bwd,
			    const struct gpu_attn_shape *a,
			    double model_flops)
{
	struct layer_op *op = lop_push(o, name, LOP_KERNEL, pass);

	op->k.kind = bwd ? KERN_ATTN_BWD : KERN_ATTN_FWD;
	op->k.attn = *a;
	if (bwd && a->head_dim_qk != a->head_dim_v)
		op->k.attn.kernel = d->attn_kernel_mla_bwd;
	op->k.model_flops = model_flops;
	op->host = HOST_MODULE;	/* Transformer Engine's DotProductAttention */
	return op;
}
