/*
 * layer_prim.c - the primitives of layer op lists: an op appended after
 * the last (lop_push, lop_tail), a GEMM, a weight-gradient GEMM, a
 * chunked kernel, a memory-bound kernel, a collective (the TP group's
 * too). A leaf: layer_ops.c and layer_cast.c build on it (split from
 * layer_ops.c so that those two do not call each other).
 */
#include "layer_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* The index a new op would use to wait for the current last op. */
int16_t lop_tail(const struct layer_ops *o)
{
	return (int16_t)(o->n == 0 ? LAYER_IN : o->n - 1);
}

/* Append an op depending on the previous one (or the list's input). */
struct layer_op *lop_push(struct layer_ops *o, const char *name,
			     enum layer_op_kind kind, enum layer_pass pass)
{
	struct layer_op *op;

	if (o->n >= LAYER_MAX_OPS)
		BUG("layer op list full");
	op = &o->op[o->n];
	memset(op, 0, sizeof(*op));
	op->name = name;
	op->kind = kind;
	op->pass = pass;
	op->k.dt = -1;
	op->host = kind == LOP_COLL ? HOST_COLL : HOST_OP;
	op->scope = o->scope;
	op->host_wait = LAYER_NONE;
	op->dep[0] = lop_tail(o);
	op->dep[1] = LAYER_NONE;
	o->n++;
	return op;
}

struct layer_op *lop_gemm(struct layer_ops *o, const char *name,
			     enum layer_pass pass, double m, double n,
			     double k, int lowp)
{
	struct layer_op *op = lop_push(o, name, LOP_KERNEL, pass);

	op->k.kind = KERN_GEMM;
	op->k.m = m;
	op->k.n = n;
	op->k.k = k;
	op->k.batch = 1;
	op->k.lowp = lowp;
	op->host = HOST_MODULE;
	return op;
}

struct layer_op *lop_wgrad(struct layer_ops *o, const char *name, double m,
			   double n, double k, int lowp)
{
	struct layer_op *op = lop_gemm(o, name, PASS_BWD, m, n, k, lowp);

	op->wgrad = 1;
	return op;
}

struct layer_op *lop_chunk(struct layer_ops *o, const char *name,
			   enum layer_pass pass, double m, double n, double k,
			   double batch, double in_B, double out_B, int bwd)
{
	struct layer_op *op = lop_push(o, name, LOP_KERNEL, pass);

	op->k.kind = KERN_CHUNK;
	op->k.m = m;
	op->k.n = n;
	op->k.k = k;
	op->k.batch = batch;
	op->k.chunk_in_B = in_B;
	op->k.chunk_out_B = out_B;
	op->k.chunk_bwd = bwd;
	op->host = HOST_MODULE;
	return op;
}

struct layer_op *lop_memop(struct layer_ops *o, const char *name,
			      enum layer_pass pass, double read_B,
			      double write_B, double flops)
{
	struct layer_op *op = lop_push(o, name, LOP_KERNEL, pass);

	op->k.kind = KERN_MEM;
	op->k.read_B = read_B;
	op->k.write_B = write_B;
	op->k.vec_flops = flops;
	return op;
}

struct layer_op *lop_coll(struct layer_ops *o, const char *name,
			  enum layer_pass pass, enum layout_group group,
			  enum layer_stream stream, enum coll_op c, double bytes)
{
	struct layer_op *op = lop_push(o, name, LOP_COLL, pass);

	op->coll = c;
	op->coll_B = bytes;
	op->group = (uint8_t)group;
	op->stream = (uint8_t)stream;
	return op;
}

struct layer_op *lop_tpcoll(struct layer_ops *o, const char *name,
			    enum layer_pass pass, const struct layer_dims *d,
			    enum coll_op c, double bytes)
{
	if (d->tp <= 1)
		return NULL;
	return lop_coll(o, name, pass, LG_TP, LS_TP, c, bytes);
}
