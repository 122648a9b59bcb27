/*
 * train_cost.c - the costed blocks of a training step: every distinct
 * layer kind's forward and backward, the embedding, the head (and its
 * deferred weight gradients), the MTP layers, the pipeline gather and the
 * FP8 amax reductions, each a block (block.h) of kernels and collectives
 * with their durations from the GPU and fabric models. train.c
 * instantiates them into the step program; train_estimate.c and the
 * planner read them too.
 */
#include "train.h"

#include <string.h>

#include "base/diag.h"
#include "gpu/gpu.h"
#include "ep.h"
#include "ep_busy.h"
#include "footprint.h"
#include "route.h"
#include "split.h"
#include "train_impl.h"

/* The matrix of a ring step over a group of n: each GPU sends `bytes` to
 * the next. */
static double *ring_matrix(struct train *t, uint32_t n, double bytes)
{
	double *m = arena_alloc(&t->arena, (size_t)n * n * sizeof(*m));
	uint32_t i;

	if (!m)
		return NULL;
	memset(m, 0, (size_t)n * n * sizeof(*m));
	for (i = 0; i < n; i++)
		m[i * n + (i + 1) % n] = bytes;
	return m;
}

static struct block *new_block(struct train *t, const struct layer_ops *o)
{
	struct block *b = arena_alloc(&t->arena, sizeof(*b));
	int i;

	if (!b || block_cost(b, o, t->gpu, &t->dt, t->prog) != 0 ||
	    train_host_cost(t, b) != 0)
		return NULL;
	b->wcast = NULL;
	for (i = 0; i < b->n; i++) {
		struct block_op *op = &b->op[i];
		uint32_t n;

		if (op->kind != LOP_COLL || !op->p2p_next)
			continue;
		n = layout_group_size(&t->lay, (enum layout_group)op->group);
		op->coll = COLL_ALLTOALL;
		op->a2a_B = ring_matrix(t, n, op->bytes);
		op->bytes *= n;	/* all-to-all size: bytes each rank sends */
		if (!op->a2a_B)
			return NULL;
	}
	return b;
}

/* Forward block f's step weight quantization from its unit's backward
 * ops o (layer_weight_cast; none in 16-bit). Returns 0, or -1 when out
 * of memory. */
static int weight_cast(struct train *t, struct block *f,
		       const struct layer_ops *o)
{
	if (!t->wc_ops)	/* no step casts (t->dims.wcast) */
		return 0;
	layer_weight_cast(&t->dims, o, t->wc_ops);
	if (t->wc_ops->n == 0)
		return 0;
	f->wcast = new_block(t, t->wc_ops);
	return f->wcast ? 0 : -1;
}

/* The layer kinds the model has, their blocks. */
static int cost_layers(struct train *t, struct layer_ops *o,
		       enum layer_recompute rc)
{
	const struct model_spec *m = t->job->model;
	int64_t i;
	int k, out;

	for (i = 0; i < m->num_hidden_layers; i++) {
		int moe = model_layer_moe(m, i);
		int lin = model_layer_linear(m, i);
		int64_t w = lin ? 0 : model_layer_window(m, i);
		int64_t c = lin ? 0 : model_layer_chunk(m, i);
		int blk = model_layer_block(m, i);
		int nope = model_layer_nope(m, i);

		k = train_kind_index(moe, w, c, lin, blk, nope);
		if (t->lf[k])
			continue;
		t->kinds[k] = (struct layer_kind){ moe, (double)w, (double)c,
						   lin, blk, nope };
		layer_fwd(&t->dims, &t->kinds[k], o);
		t->lf[k] = new_block(t, o);
		layer_bwd(&t->dims, &t->kinds[k], rc, o);
		out = t->job->moe.delay_wgrad ? train_delay_wgrad(o) : o->n - 1;
		if (out < 0)
			return -1;
		t->lb[k] = new_block(t, o);
		if (!t->lf[k] || !t->lb[k] || weight_cast(t, t->lf[k], o) != 0)
			return -1;
		t->lb[k]->out = out;
	}
	return 0;
}

/* fp8 delayed scaling's amax reductions, one per chunk pass, for a
 * chunk of the stages' mean layer count (the buffer's few KB cost its
 * latency: the count hardly matters). */
static int cost_amax(struct train *t, struct layer_ops *o)
{
	double layers = (double)t->job->model->num_hidden_layers /
			(double)t->stages;
	int bwd;

	if (t->dims.amax_group < 0)
		return 0;
	for (bwd = 0; bwd < 2; bwd++) {
		layer_fp8_amax(&t->dims, bwd, layers, layout_group_size(&t->lay,
			(enum layout_group)t->dims.amax_group), o);
		if (o->n == 0)
			continue;
		if (!(t->amax[bwd] = new_block(t, o)))
			return -1;
	}
	return 0;
}

int train_cost_blocks(struct train *t)
{
	struct layer_ops *o = arena_alloc(&t->arena, sizeof(*o));
	enum layer_recompute rc = (enum layer_recompute)t->job->training.recompute;
	const struct model_spec *m = t->job->model;

	t->wc_ops = t->dims.wcast ? arena_alloc(&t->arena, sizeof(*o)) : NULL;
	if (!o || (t->dims.wcast && !t->wc_ops) || cost_layers(t, o, rc) != 0)
		return -1;
	layer_embed_fwd(&t->dims, o);
	t->ef = new_block(t, o);
	layer_embed_bwd(&t->dims, o);
	t->eb = new_block(t, o);
	layer_head_fwd(&t->dims, o);
	t->hf = new_block(t, o);
	layer_head_bwd(&t->dims, o);
	t->hb = new_block(t, o);
	/* the MXFP8 head's weight (d->head_lowp), once a step */
	if (!t->hf || weight_cast(t, t->hf, o) != 0)
		return -1;
	if (t->defer > 0) {
		layer_head_bwd_deferred(&t->dims, o);
		t->hbd = new_block(t, o);
		layer_head_wgrad(&t->dims, o);
		t->hw = new_block(t, o);
		if (!t->hbd || !t->hw)
			return -1;
	}
	if (t->mtp > 0) {	/* MTP modules: layer_mtp_kinds' layers */
		struct layer_kind mk[MODEL_MTP_BLOCKS];
		int nk = layer_mtp_kinds(m, mk);

		layer_mtp_fwd(&t->dims, mk, nk, !t->mtp_alone, o);
		t->mf = new_block(t, o);
		layer_mtp_bwd(&t->dims, mk, nk, rc, !t->mtp_alone, 0, o);
		t->mb = new_block(t, o);
		if (!t->mf || !t->mb)
			return -1;
		/* a lookup of the same embedding weight after it in the
		 * backward: the first stage's (one stage) or the first
		 * module's (train_impl.c mtp_bwd_block) */
		if (t->dims.embed_dense && (t->stages == 1 || t->mtp >= 2)) {
			layer_mtp_bwd(&t->dims, mk, nk, rc, !t->mtp_alone, 1,
				      o);
			if (!(t->mbs = new_block(t, o)))
				return -1;
		}
		/* the MTP heads share the output layer's weight, which the
		 * head's cast covers (t->hf): the module's own weights */
		if (t->dims.head_lowp) {
			struct layer_dims dn = t->dims;

			dn.head_lowp = 0;
			layer_mtp_bwd(&dn, mk, nk, rc, !t->mtp_alone, 0, o);
		}
		if (weight_cast(t, t->mf, o) != 0)
			return -1;
	}
	if (t->dims.pp_gather && t->stages > 1) {
		layer_pp_gather(&t->dims, o);
		if (!(t->pg = new_block(t, o)))
			return -1;
	}
	if (cost_amax(t, o) != 0)
		return -1;
	return t->ef && t->eb && t->hf && t->hb ? 0 : -1;
}
