/*
 * train_wgrad.c - Megatron-Core's delayed weight gradients (its
 * delay_wgrad_compute, moe.delay_wgrad) in a layer's backward ops.
 *
 * Under the all-to-all overlap schedule (NVIDIA/Megatron-LM @ 01cf4fb5,
 * megatron/core/models/common/model_chunk_schedule_plan.py
 * TransformerLayerSchedulePlan.run, models/gpt/fine_grained_callables.py
 * TransformerLayerNode.backward_dw) a layer's backward is split into
 * nodes whose weight gradients Transformer Engine defers (backward_dw is
 * a no-op unless delay_wgrad_compute):
 * - mlp: the routed experts' dGrad, then (after the forward's dispatch is
 *   issued) mlp.backward_dw, the experts' weight gradients, and then the
 *   dispatch's backward on the communication stream. That waits for the
 *   chunk's event, recorded after the mlp node's backward, not after
 *   backward_dw (which records none): the all-to-all runs beside the
 *   experts' wgrad GEMMs. Here: the expert wgrads move to just before
 *   moe_dispatch_bwd, which no longer waits for them.
 * - attn: attention's dGrad, then attn.backward_dw (_BackwardDWWrapper:
 *   the shared experts' weight gradients, unless shared_expert_overlap,
 *   and the attention projections'). The next layer's combine backward
 *   waits for the event after attn.backward, so it runs beside them; for
 *   the chunk's last layer in backward order backward_dw comes after the
 *   pipeline sends (TransformerModelChunkSchedulePlan.run, "Delay the
 *   last attn_dw ... for overlapping with the p2p comm"). Here: they move
 *   to the end of the list and the op before them is the layer's output
 *   (what the next unit and the paired action's send wait for, train.c,
 *   train_pp.c).
 * A wgrad GEMM takes its scale swizzle (just before it, inside the GEMM's
 * call) and its unfused main_grad adds (just after) along. An op that
 * waited for a moved op waits for what that op waited for instead.
 */
#include <string.h>

#include "base/mem.h"
#include "train_impl.h"

enum wgrad_move { WG_KEEP, WG_END, WG_DISPATCH };

static int named(const char *name, const char *const *set, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(name, set[i]) == 0)
			return 1;
	return 0;
}

/* Where the wgrad GEMM called name goes (layer.c, attn.c, moe.c names). */
static enum wgrad_move wgrad_move(const char *name)
{
	static const char *const attn[] = {
		"proj_wgrad", "qkv_wgrad", "wq_wgrad", "wk_wgrad", "wv_wgrad",
		"q_wgrad", "q_up_wgrad",
		"q_down_wgrad", "kv_up_wgrad", "kv_down_wgrad",
		"shared_fc1_wgrad", "shared_fc2_wgrad",
	};
	static const char *const experts[] = {
		"expert_fc1_wgrad", "expert_fc2_wgrad",
	};

	if (named(name, attn, sizeof(attn) / sizeof(attn[0])))
		return WG_END;
	if (named(name, experts, sizeof(experts) / sizeof(experts[0])))
		return WG_DISPATCH;
	return WG_KEEP;
}

static int is(const struct layer_op *op, const char *name)
{
	return op->name && strcmp(op->name, name) == 0;
}

/* What dependency d of a kept op becomes: the first kept op up the
 * chain of moved ops' first dependencies. */
static int16_t resolve(const struct layer_op *ops, const uint8_t *mv,
		       int16_t d)
{
	while (d >= 0 && mv[d] != WG_KEEP)
		d = ops[d].dep[0];
	return d;
}

static int16_t renumber(const int16_t *pos, int16_t d)
{
	return d >= 0 ? pos[d] : d;
}

int train_delay_wgrad(struct layer_ops *o)
{
	uint8_t mv[LAYER_MAX_OPS];
	int16_t order[LAYER_MAX_OPS], pos[LAYER_MAX_OPS];
	struct layer_op *was;
	int i, j, n = o->n, k = 0, disp = -1, moved = 0, out;

	memset(mv, WG_KEEP, sizeof(mv));
	for (i = 0; i < n; i++)
		if (disp < 0 && o->op[i].kind == LOP_COLL &&
		    is(&o->op[i], "moe_dispatch_bwd"))
			disp = i;
	for (i = 0; i < n; i++) {
		enum wgrad_move m;

		if (o->op[i].pass != PASS_BWD || o->op[i].kind != LOP_KERNEL ||
		    !o->op[i].name || (m = wgrad_move(o->op[i].name)) == WG_KEEP)
			continue;
		if (m == WG_DISPATCH && (disp < 0 || i > disp))
			continue;	/* no dispatch after it to let go */
		mv[i] = (uint8_t)m;
		if (i > 0 && mv[i - 1] == WG_KEEP &&
		    is(&o->op[i - 1], "scale_swizzle"))
			mv[i - 1] = (uint8_t)m;
		for (j = i + 1; j < n && is(&o->op[j], "main_grad_add"); j++)
			mv[j] = (uint8_t)m;
		moved = 1;
	}
	if (!moved)
		return n - 1;
	for (i = 0; i < n; i++) {
		if (i == disp)
			for (j = 0; j < n; j++)
				if (mv[j] == WG_DISPATCH)
					order[k++] = (int16_t)j;
		if (mv[i] == WG_KEEP)
			order[k++] = (int16_t)i;
	}
	out = k - 1;
	for (j = 0; j < n; j++)
		if (mv[j] == WG_END)
			order[k++] = (int16_t)j;
	for (i = 0; i < n; i++)
		pos[order[i]] = (int16_t)i;
	was = mem_alloc((size_t)n * sizeof(*was));
	if (!was)
		return -1;
	memcpy(was, o->op, (size_t)n * sizeof(*was));
	for (i = 0; i < n; i++) {
		const struct layer_op *src = &was[order[i]];
		struct layer_op *dst = &o->op[i];

		*dst = *src;
		for (j = 0; j < 2; j++) {
			int16_t d = src->dep[j];

			if (mv[order[i]] == WG_KEEP)
				d = resolve(was, mv, d);
			dst->dep[j] = renumber(pos, d);
		}
		dst->host_wait = renumber(pos, mv[order[i]] == WG_KEEP ?
					  resolve(was, mv, src->host_wait) :
					  src->host_wait);
	}
	mem_free(was);
	return out;
}
