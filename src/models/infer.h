/*
 * infer.h - the kernels and collectives of one inference step on one GPU:
 * a forward pass of a batch of sequences over a paged KV cache (prefill
 * chunks and decode tokens together), the embedding at the first pipeline
 * stage, the LM head and sampling at the last; shapes, bytes and FLOPs,
 * and their cost through the GPU model.
 *
 * A unit (embedding, one layer, head) is a chain of ops: each waits for
 * the one before; a collective runs on the TP (or EP) stream between two
 * kernels. Nothing here knows about ranks or time beyond one kernel:
 * infer_prog.c instantiates units into a step program, src/run runs it.
 * The arithmetic is in infer.c's header.
 *
 * Depends on gpu.h, coll.h, spec_job.h.
 */
#ifndef LLMSIM_MODELS_INFER_H
#define LLMSIM_MODELS_INFER_H

#include <stdint.h>

#include "base/coll.h"
#include "gpu/gpu.h"

struct job_spec;

/* A group of sequences of a step: count sequences, each with q new tokens
 * on top of ctx cached ones. */
struct infer_seqs {
	double count;		/* sequences */
	double q;		/* tokens computed this step, per sequence */
	double ctx;		/* tokens already in the KV cache, per sequence */
	int prefill;		/* 1: a prompt chunk (flash prefill kernel);
				 * 0: decode (split-KV kernel) */
	double sampled;		/* tokens per sequence the LM head scores: 1
				 * when the step ends its prompt or decodes, q
				 * when verifying q - 1 drafts, 0 mid-prompt */
	int pad;		/* padding of a captured graph: computed by the
				 * token-wise kernels, no attention, no sample */
};

#define INFER_MAX_GROUPS 64

struct infer_batch {
	struct infer_seqs g[INFER_MAX_GROUPS];
	int n;			/* groups used */
};

/* Tokens T (sum count q), sampled rows S (sum count sampled), sequences,
 * and whether every group decodes. */
double infer_batch_tokens(const struct infer_batch *b);
double infer_batch_sampled(const struct infer_batch *b);
double infer_batch_seqs(const struct infer_batch *b);
int infer_batch_decode_only(const struct infer_batch *b);

/* Append a group (merging it into an equal one). Returns 0, or -1 when
 * the batch already holds INFER_MAX_GROUPS distinct groups. */
int infer_batch_add(struct infer_batch *b, double count, double q,
		    double ctx, int prefill, double sampled);

/* The model and its dtypes on one GPU of a TP group. */
struct infer_dims {
	double hidden;		/* h */
	double heads;		/* query heads, whole model (a) */
	double kv_heads;	/* KV heads, whole model (g) */
	double head_dim;	/* d */
	double ffn;		/* dense MLP hidden size (f) */
	double vocab;		/* padded vocabulary (V) */
	double layers;		/* transformer layers, whole model */
	double tp;		/* tensor-parallel degree (t) */
	int gated;		/* gate+up+down MLP */
	int rope;		/* rotary embedding on Q and K */
	int mla;		/* multi-head latent attention (absorbed decode) */
	double q_lora_rank;	/* MLA: query low-rank width (0: none) */
	double kv_lora_rank;	/* MLA: compressed KV width */
	double rope_dim;	/* MLA: decoupled rotary width */
	double nope_dim;	/* MLA: per-head non-rotary Q/K width */
	double v_head_dim;	/* MLA: per-head V width */
	enum dtype base;	/* everything but the quantized GEMMs (bf16) */
	enum dtype weight;	/* weights of the linear layers */
	enum dtype compute;	/* matrix rate of the linear layers */
	enum dtype kv;		/* KV cache */
	double act_B;		/* B per activation element (base) */
	double gemm_a_B;	/* B per GEMM input element (compute dtype) */
	double weight_B;	/* B per weight element, scales included */
	double kv_B;		/* B per KV-cache element */
	int quant_fusion;	/* enum engine_quant_fusion (the engine's) */
};

/* The dtype GEMM inputs run in: the job's activation_dtype, else the
 * weights' dtype when g has a matrix rate for it, else base (weight-only
 * quantization dequantizes in the kernel). */
enum dtype infer_compute_dtype(const struct job_spec *j,
			       const struct gpu_spec *g);

/* Fill d for one GPU of the job's TP group (vocabulary padded to 64 per
 * rank, as vLLM's and SGLang's vocab-parallel embeddings pad it). */
void infer_dims_from_job(const struct job_spec *j, const struct gpu_spec *g,
			 struct infer_dims *d);

/* KV-cache bytes one token takes on one GPU, per layer: 2 (g/t, at least
 * 1) d B_kv, or (kv_lora_rank + rope_dim) B_kv with MLA (not split by
 * TP). Times the layers a GPU holds for a token's total. */
double infer_kv_token_layer_B(const struct infer_dims *d);

/* Weight parameters of one layer on one GPU (/t), of the embedding and of
 * the LM head with the final norm. */
double infer_layer_params(const struct infer_dims *d);
double infer_embed_params(const struct infer_dims *d);
double infer_head_params(const struct infer_dims *d);

enum iop_kind {
	IOP_KERNEL,		/* on the compute stream */
	IOP_TP			/* a collective over the TP group */
};

/* What a kernel is, for costing. */
enum iop_kern {
	IK_GEMM,		/* linear layer: C[m,n] = A[m,k] W[k,n] */
	IK_ATTN_PREFILL,	/* flash attention of the batch's prompt chunks */
	IK_ATTN_DECODE,		/* split-KV attention of the decoding sequences */
	IK_MEM			/* memory-bound */
};

struct infer_op {
	const char *name;	/* static */
	enum iop_kind kind;
	enum iop_kern kern;	/* IOP_KERNEL */
	int attention;		/* part of attention (not captured piecewise) */
	double m, n, k;		/* IK_GEMM */
	double batch;		/* IK_GEMM: independent GEMMs of that shape */
	int weight_B_base;	/* IK_GEMM: weights in the base dtype (LM head) */
	double read_B;		/* IK_MEM: bytes read */
	double write_B;		/* IK_MEM: bytes written */
	double vec_flops;	/* IK_MEM: vector FLOPs */
	enum coll_op coll;	/* IOP_TP */
	double coll_B;		/* IOP_TP: size per coll.h */
};

#define INFER_MAX_OPS 64

struct infer_ops {
	struct infer_op op[INFER_MAX_OPS];
	int n;
};

/* The ops of one transformer layer (every layer alike), of the embedding
 * (first stage) and of the final norm, LM head and sampling (last stage),
 * for batch b. */
void infer_layer_ops(const struct infer_dims *d, const struct infer_batch *b,
		     struct infer_ops *o);
void infer_embed_ops(const struct infer_dims *d, const struct infer_batch *b,
		     struct infer_ops *o);
void infer_head_ops(const struct infer_dims *d, const struct infer_batch *b,
		    struct infer_ops *o);

/* A costed op. */
struct infer_cost_op {
	const char *name;
	enum iop_kind kind;
	double time_s;		/* s, kernel time (IOP_KERNEL) */
	double flops;		/* FLOP executed */
	double bytes;		/* B moved at the serving level (kernels) or
				 * the collective's size (IOP_TP) */
	enum coll_op coll;
};

/* A costed unit, ready to instantiate. */
struct infer_unit {
	struct infer_cost_op op[INFER_MAX_OPS];
	int n;
	double kernel_s;	/* s, sum of kernel times */
	double flops;		/* FLOP executed */
	double bytes;		/* B moved by the kernels */
};

/* Launch cost: kernels of a step captured in a graph pay
 * gpu.kernel_launch_graph instead of gpu.kernel_launch. */
enum infer_graph {
	IGRAPH_NONE,		/* every kernel eager */
	IGRAPH_PIECEWISE,	/* all but attention captured */
	IGRAPH_FULL		/* every kernel captured */
};

/* Cost o for batch b on g (launch cost by graph) into u. Attention is
 * costed over b's groups with the model's heads on one GPU. */
void infer_cost(const struct infer_ops *o, const struct infer_dims *d,
		const struct infer_batch *b, const struct gpu_spec *g,
		enum infer_graph graph, struct infer_unit *u);

#endif
