/*
 * infer_ops.c - building the op lists of inference units (infer_impl.h):
 * the leaf that infer.c and infer_moe.c share.
 */
#include "infer_impl.h"

#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"

struct infer_op *infer_op_push(struct infer_ops *o, const char *name,
			       enum iop_kind kind)
{
	struct infer_op *op;

	if (o->n >= INFER_MAX_OPS)
		BUG("inference op list full");
	op = &o->op[o->n++];
	memset(op, 0, sizeof(*op));
	op->name = name;
	op->kind = kind;
	return op;
}

struct infer_op *infer_op_gemm_q(struct infer_ops *o,
				 const struct infer_dims *d, unsigned cls,
				 const char *name, double m, double n,
				 double k)
{
	struct infer_op *op = infer_op_gemm(o, name, m, n, k);

	if (op && (d->qexcl & cls))
		op->weight_B_base = 1;
	return op;
}

struct infer_op *infer_op_gemm(struct infer_ops *o, const char *name,
			       double m, double n, double k)
{
	struct infer_op *op;

	if (m <= 0)
		return NULL;
	op = infer_op_push(o, name, IOP_KERNEL);
	op->kern = IK_GEMM;
	op->m = m;
	op->n = n;
	op->k = k;
	op->batch = 1;
	return op;
}

struct infer_op *infer_op_chunk(struct infer_ops *o, const char *name,
				double m, double n, double k, double batch,
				double in_B, double out_B)
{
	struct infer_op *op;

	if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
		return NULL;
	op = infer_op_push(o, name, IOP_KERNEL);
	op->kern = IK_CHUNK;
	op->m = m;
	op->n = n;
	op->k = k;
	op->batch = batch;
	op->chunk_in_B = in_B;
	op->chunk_out_B = out_B;
	op->attention = 1;
	return op;
}

struct infer_op *infer_op_mem(struct infer_ops *o, const char *name,
			      double read_B, double write_B, double flops)
{
	struct infer_op *op;

	if (read_B + write_B <= 0)
		return NULL;
	op = infer_op_push(o, name, IOP_KERNEL);
	op->kern = IK_MEM;
	op->read_B = read_B;
	op->write_B = write_B;
	op->vec_flops = flops;
	return op;
}

struct infer_op *infer_op_coll(struct infer_ops *o, const char *name,
			       enum iop_kind kind, double members,
			       enum coll_op c, double bytes)
{
	struct infer_op *op;

	if (members <= 1 || bytes <= 0)
		return NULL;
	op = infer_op_push(o, name, kind);
	op->coll = c;
	op->coll_B = bytes;
	return op;
}

/* Whether a GEMM input of this producer needs a quantization kernel of
 * its own; the producer then writes B instead of A. */
int infer_quant_apart(const struct infer_dims *d, int level)
{
	return d->gemm_a_B < d->act_B && d->quant_fusion < level;
}

int infer_act_quant_apart(const struct infer_dims *d)
{
	return infer_quant_apart(d, ENGINE_QFUSE_NORM_ACT) ||
	       (d->act_quant_apart && d->gemm_a_B < d->act_B);
}

/* The quantization of n elements of a GEMM input (infer.c's header). */
void infer_op_quant(struct infer_ops *o, const struct infer_dims *d,
		    const char *name, double n)
{
	infer_op_mem(o, name, n * d->act_B, n * d->gemm_a_B, 2 * n);
}

/*
 * Llama 4's attention temperature tuning on a NoPE layer, as TensorRT-
 * LLM's Llama4Attention runs it (tensorrt_llm/_torch/models/
 * modeling_llama.py @ 3a5901cd, _forward_nope and _attention_scaling,
 * [?]: the stored version nearest 1.0), after the QKV GEMM:
 *
 *   q, k, v = split_qkv(qkv)                       views, no kernel
 *   floor = torch.floor((positions + 1.0) / floor_scale)
 *   scale = torch.log(floor + 1.0) * attn_scale + 1.0
 *       seven elementwise kernels over the T int32 positions, each
 *       reading and writing T 4 B (the first promotes them to fp32)
 *   q = (q * scale.unsqueeze(-1)).to(q.dtype)
 *       bf16 times fp32 promotes to fp32: one kernel reads T q B + T 4
 *       and writes T q 4, the cast reads T q 4 and writes T q B
 *   convert_qkv: the TRTLLM attention op takes fused QKV
 *       (support_fused_qkv), so torch.concat([q, k, v]) reads and
 *       writes T (q + 2 kv) B
 *
 * Ten kernels, launched eagerly outside a CUDA graph like every other
 * kernel of the layer; their bytes at Maverick's q = 40 x 128, kv = 8 x
 * 128 (attention DP): 30.7 + 30.7 + 28.7 kB a token.
 */
void infer_op_attn_temperature(struct infer_ops *o, const struct infer_dims *d,
			       double t, double q, double kv)
{
	static const char *const pos_ops[] = {
		"temp_pos_add", "temp_pos_div", "temp_floor", "temp_add",
		"temp_log", "temp_mul", "temp_add",
	};
	double f32 = dtype_bytes(DTYPE_FP32), p = t * f32;
	size_t i;

	for (i = 0; i < sizeof(pos_ops) / sizeof(pos_ops[0]); i++)
		infer_op_mem(o, pos_ops[i], p, p, t);
	infer_op_mem(o, "temp_q_scale", t * q * d->act_B + p, t * q * f32,
		     t * q);
	infer_op_mem(o, "temp_q_cast", t * q * f32, t * q * d->act_B, 0);
	infer_op_mem(o, "qkv_concat", t * (q + 2 * kv) * d->act_B,
		     t * (q + 2 * kv) * d->act_B, 0);
}
