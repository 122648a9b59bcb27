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
