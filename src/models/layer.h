/*
 * layer.h - the kernels and tensor-parallel collectives of one dense
 * transformer layer (and of the embedding and LM-head ends) on one GPU for
 * one microbatch: shapes, FLOPs and bytes, forward, backward and
 * recomputation, as an ordered list of ops with their dependencies.
 *
 * Nothing here knows time: src/models/block.c costs each kernel through
 * the GPU model and the step program (train.c) instantiates the lists for
 * every layer and microbatch. The arithmetic is in layer.c's header.
 *
 * Depends on coll.h and the shape types of gpu.h (no GPU calls).
 */
#ifndef LLMSIM_MODELS_LAYER_H
#define LLMSIM_MODELS_LAYER_H

#include <stdint.h>

#include "base/coll.h"
#include "gpu/gpu.h"

struct job_spec;

/* One GPU's view of one microbatch of one layer. */
struct layer_dims {
	double batch;		/* sequences in the microbatch (b) */
	double seq;		/* tokens per sequence on this GPU (s) */
	double hidden;		/* model width (h) */
	double heads;		/* query heads, whole model (a) */
	double kv_heads;	/* key/value heads, whole model (g) */
	double head_dim;	/* per-head dimension (d) */
	double ffn;		/* MLP hidden size (f) */
	double vocab;		/* vocabulary, padded for TP (V) */
	double tp;		/* tensor-parallel degree (t) */
	double act_B;		/* B per activation element, of layer_base_dtype */
	double lowp_B;		/* B per element of the low-precision dtype */
	double grad_B;		/* B per element of the gradient buffers */
	int gated;		/* 1: gate+up+down MLP (SwiGLU); 0: up+down */
	int sp;			/* sequence parallelism (norms sharded by t) */
	int rope;		/* rotary position embedding on Q and K */
	int learned_pos;	/* learned position table added at the embedding */
	int unfused_attn;	/* scores materialized (no flash attention) */
	int dropout;		/* dropout after attention and MLP (and on scores) */
	int lowp;		/* linear layers in a sub-16-bit dtype (fp8, MX) */
	int chunks;		/* TP comm overlap: GEMMs split in this many
				 * pieces pipelined with their collective; 1 = off */
	int pp_gather;		/* pipeline transfers carry 1/t of a tensor, the
				 * receiving TP group all-gathers it (no SP) */
	int fused_ce;		/* cross-entropy in one fused kernel */
	int attn_kernel;	/* enum gpu_attn_kernel of the framework */
	int norm_bwd_passes;	/* 1 fused, 2 PyTorch (dgamma re-reads) */
	int eager_rope;		/* rotary as PyTorch ops */
	int eager_act;		/* gated activation as two PyTorch ops */
	int expand_kv;		/* GQA K/V copied to the query heads */
};

/* Shapes of one microbatch on one GPU (layer.c's notation). */

/* Tokens of the microbatch: T = b s. */
static inline double layer_tokens(const struct layer_dims *d)
{
	return d->batch * d->seq;
}

/* Tokens the norms, residual adds and dropouts see: T' = T/t with SP. */
static inline double layer_sp_tokens(const struct layer_dims *d)
{
	return d->sp ? layer_tokens(d) / d->tp : layer_tokens(d);
}

/* Query width: q = a d / t. */
static inline double layer_q_width(const struct layer_dims *d)
{
	return d->heads * d->head_dim / d->tp;
}

/* Key/value heads on one GPU: g/t, or 1 (replicated) when t > g. */
static inline double layer_kv_heads_local(const struct layer_dims *d)
{
	return d->kv_heads >= d->tp ? d->kv_heads / d->tp : 1;
}

/* Key (or value) width: kv = d times the local KV heads. */
static inline double layer_kv_width(const struct layer_dims *d)
{
	return layer_kv_heads_local(d) * d->head_dim;
}

/* MLP hidden size on one GPU: f' = f / t. */
static inline double layer_ffn_local(const struct layer_dims *d)
{
	return d->ffn / d->tp;
}

/* The first MLP GEMM's outputs: u = 2 f' gated, f' otherwise. */
static inline double layer_fc1_width(const struct layer_dims *d)
{
	return (d->gated ? 2.0 : 1.0) * layer_ffn_local(d);
}

/* Attention heads of the microbatch on one GPU: b a / t. */
static inline double layer_attn_heads(const struct layer_dims *d)
{
	return d->batch * d->heads / d->tp;
}

/* Attention scores of the microbatch on one GPU: b (a/t) s^2. */
static inline double layer_scores(const struct layer_dims *d)
{
	return layer_attn_heads(d) * d->seq * d->seq;
}

/* A kernel: a GEMM, a fused attention call, or a memory-bound op. */
enum kern_kind {
	KERN_GEMM,
	KERN_ATTN_FWD,
	KERN_ATTN_BWD,
	KERN_MEM
};

struct kern {
	enum kern_kind kind;
	int lowp;		/* GEMM in the job's low-precision dtype */
	double m, n, k;		/* GEMM C[m,n] = A[m,k] B[k,n] (elements) */
	double batch;		/* independent GEMMs of that shape */
	double accum_B;		/* B, GEMM: read and written in the gradient
				 * buffer the result is added to; 0 = none */
	struct gpu_attn_shape attn;	/* attention */
	double read_B;		/* B read (memory-bound op) */
	double write_B;		/* B written (memory-bound op) */
	double vec_flops;	/* FLOP, vector work of a memory-bound op */
	double launches;	/* kernels a memory-bound op is (0 or 1: one) */
	double strided_B;	/* B of it on PyTorch's generic (non-contiguous)
				 * elementwise path */
};

enum layer_op_kind {
	LOP_KERNEL,		/* runs on the compute stream */
	LOP_TP			/* a collective over the tensor-parallel group */
};

/* Which pass an op belongs to (names and accounting). */
enum layer_pass {
	PASS_FWD,
	PASS_BWD,
	PASS_RECOMPUTE
};

#define LAYER_IN (-2)		/* dependency on the list's input */
#define LAYER_NONE (-1)
#define LAYER_MAX_OPS 256

struct layer_op {
	const char *name;	/* base name, static ("qkv", "fc1_dgrad") */
	enum layer_op_kind kind;
	enum layer_pass pass;
	struct kern k;		/* LOP_KERNEL */
	enum coll_op coll;	/* LOP_TP */
	double coll_B;		/* B, LOP_TP size per coll.h's convention */
	int16_t dep[2];		/* earlier ops (index), LAYER_IN or LAYER_NONE */
};

struct layer_ops {
	struct layer_op op[LAYER_MAX_OPS];
	int n;			/* ops used */
};

enum layer_recompute {
	LREC_NONE,
	LREC_SELECTIVE,		/* attention core recomputed before its backward */
	LREC_FULL		/* whole layer forward recomputed before backward */
};

/* The dtype of everything but the low-precision GEMMs for a training
 * dtype: activations, weights, attention, the LM head and the loss. fp32,
 * tf32 and fp16 as given; bf16 for bf16 and for fp8/MX training
 * (TransformerEngine keeps the rest in bf16). */
enum dtype layer_base_dtype(enum dtype training);

/* Fill d from the job for one microbatch on one GPU (vocabulary padded to
 * vocab_multiple * tp, as Megatron pads it). */
void layer_dims_from_job(const struct job_spec *j, struct layer_dims *d);

/* Transformer layer forward / backward (backward preceded by the
 * recomputation the mode asks for). */
void layer_fwd(const struct layer_dims *d, struct layer_ops *o);
void layer_bwd(const struct layer_dims *d, enum layer_recompute rc,
	       struct layer_ops *o);

/* Embedding lookup (first pipeline stage) forward / backward. */
void layer_embed_fwd(const struct layer_dims *d, struct layer_ops *o);
void layer_embed_bwd(const struct layer_dims *d, struct layer_ops *o);

/* The all-gather that rebuilds a received activation or gradient when
 * pipeline transfers are scattered over the TP ranks (pp_gather). */
void layer_pp_gather(const struct layer_dims *d, struct layer_ops *o);

/* Bytes one pipeline transfer carries per TP rank. */
double layer_pp_bytes(const struct layer_dims *d);

/* Final norm, LM head and cross-entropy loss (last pipeline stage). */
void layer_head_fwd(const struct layer_dims *d, struct layer_ops *o);
void layer_head_bwd(const struct layer_dims *d, struct layer_ops *o);

/* Model FLOPs of a kernel: GEMMs 2mnk per batch, attention counted in full
 * (no causal saving: 4 b a s^2 d forward, twice that backward, as
 * Megatron's and PaLM's MFU formulas count it); memory-bound ops 0. */
double layer_kern_model_flops(const struct kern *k);

/* Sum of model FLOPs of the ops of one pass. */
double layer_ops_flops(const struct layer_ops *o, enum layer_pass pass);

/* Parameters of one transformer layer, of the input embedding (with a
 * learned position table), and of the LM head plus final norm. Whole
 * model, not divided by tp. vocab is the padded vocabulary. */
double layer_params(const struct layer_dims *d, int bias, int layernorm);
double layer_embed_params(const struct layer_dims *d, double max_positions);
double layer_head_params(const struct layer_dims *d, int layernorm);

#endif
