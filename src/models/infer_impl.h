/*
 * infer_impl.h - the op-list builders infer.c and infer_moe.c share, and
 * the local head counts infer_params.c gives infer.c and infer_cost.c.
 *
 * Depends on infer.h.
 */
#ifndef LLMSIM_MODELS_INFER_IMPL_H
#define LLMSIM_MODELS_INFER_IMPL_H

#include "infer.h"

/* Nominal vector FLOPs per element of the memory-bound kernels (as
 * layer.c: they are memory-bound on every GPU llmsim knows). */
enum { NORM_FLOPS = 4, ACT_FLOPS = 8, ROPE_FLOPS = 4, SAMPLE_FLOPS = 6 };

/* A Gated DeltaNet layer's mixer over the step's T tokens, from the
 * input norm's output to out_proj (infer_gdn.c). */
void infer_gdn_ops(const struct infer_dims *d, const struct infer_batch *b,
		   double t, struct infer_ops *o);

/* Local query heads a/t and KV heads (g/t, or 1 replicated) of one GPU
 * (infer_params.c; infer.c's and infer_cost.c's attention shapes). */
double infer_heads_local(const struct infer_dims *d);
double infer_kv_heads_local(const struct infer_dims *d);

/* Append an op of kind `kind` (zeroed but for its name and kind). */
struct infer_op *infer_op_push(struct infer_ops *o, const char *name,
			       enum iop_kind kind);

/* Append a GEMM (m, n, k) (NULL when m is 0), a memory-bound kernel, a
 * collective of kind `kind` over its group (none when the group has one
 * GPU or bytes is 0). */
struct infer_op *infer_op_gemm(struct infer_ops *o, const char *name,
			       double m, double n, double k);
/* A chunked linear-recurrence kernel (IK_CHUNK): `batch` products of
 * (m, n, k), operands of in_B and results of out_B bytes an element; part
 * of attention (per-sequence state); NULL when m, n, k or batch is 0. */
struct infer_op *infer_op_chunk(struct infer_ops *o, const char *name,
				double m, double n, double k, double batch,
				double in_B, double out_B);
struct infer_op *infer_op_mem(struct infer_ops *o, const char *name,
			      double read_B, double write_B, double flops);
struct infer_op *infer_op_coll(struct infer_ops *o, const char *name,
			       enum iop_kind kind, double members,
			       enum coll_op c, double bytes);

/* infer_op_gemm of a module of class cls (enum quant_excl): its weights
 * in the base dtype when the checkpoint excludes the class from
 * quantization (infer_dims.qexcl). */
struct infer_op *infer_op_gemm_q(struct infer_ops *o,
				 const struct infer_dims *d, unsigned cls,
				 const char *name, double m, double n,
				 double k);

/* Bytes a weight of a module of class cls (enum quant_excl) takes: the
 * base dtype's (act_B) when the checkpoint excludes the class from
 * quantization (infer_dims.qexcl), the serving weights' otherwise. */
static inline double infer_class_weight_B(const struct infer_dims *d,
					  unsigned cls)
{
	return d->qexcl & cls ? d->act_B : d->weight_B;
}

/* Whether a GEMM input produced by a kernel of fusion level `level`
 * (enum engine_quant_fusion) needs a quantization kernel of its own, and
 * that kernel over n elements. */
int infer_quant_apart(const struct infer_dims *d, int level);
/* Whether a SiLU-mul's output (a dense or shared-expert GatedMLP's down
 * input) takes a quantization kernel of its own: quant_fusion below
 * norm_act, or the engine's act_quant leaves this format apart. */
int infer_act_quant_apart(const struct infer_dims *d);
/* Whether an MoE layer's fused MoE quantizes its own input (the CUTLASS
 * list, infer_moe.c), so the norm before it writes 16 bits. */
int infer_moe_quantizes_input(const struct infer_dims *d);
void infer_op_quant(struct infer_ops *o, const struct infer_dims *d,
		    const char *name, double n);

/* A layer's attention temperature tuning as eager PyTorch ops (engine
 * attn_temperature eager, infer_ops.c): T tokens, q (kv) local query
 * (key) elements per token. */
void infer_op_attn_temperature(struct infer_ops *o, const struct infer_dims *d,
			       double t, double q, double kv);

#endif
