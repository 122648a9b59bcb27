/*
 * infer_tbo.c - two-batch overlap (TBO) of an inference step's MoE layers.
 *
 * SGLang's --enable-two-batch-overlap (sgl-project/sglang
 * python/sglang/srt/two_batch_overlap.py, batch_overlap/
 * operations_strategy.py; DeepSeek's inference system, profile-data):
 * the step's batch is split in two half batches A and B (decode: by
 * sequences; prefill: by tokens), and the MoE layers (DeepSeek's layers
 * from first_k_dense_replace on; the dense layers before run the whole
 * batch) run as two op lists cut into stages at yield points. The
 * executor runs A's first `delta` stages (the strategy's
 * tbo_delta_stages: the engine's tbo_decode_delta_stages and
 * tbo_prefill_delta_stages), then A's and B's next stages in turn, then
 * B's last `delta` (_execute_two_batch_raw):
 *
 *   A_0 .. A_{delta-1}, A_delta B_0, A_{delta+1} B_1, ..., B_{N-1}
 *
 * A dispatch or combine is issued in one stage (op_dispatch_a: DeepEP's
 * kernel launched, or the low-latency send) and awaited in the next
 * (op_dispatch_b), so the other half batch's stage runs on the GPU while
 * the rows travel. The strategies (operations_strategy.py, DeepSeek and
 * Qwen3-MoE alike):
 *
 *   decode, delta 2:  [attn prepare] | [attn core, norm, gate, select] |
 *                     [dispatch_a, shared experts] | [dispatch_b, experts,
 *                     combine_a] | [combine_b] | [output, the next
 *                     layer's attn prepare] ...
 *   prefill, delta 0: [attn, norm, gate, select, dispatch_a] | [dispatch_b,
 *                     experts, combine_a] | [shared experts, combine_b,
 *                     output, the next layer's attention ...] ...
 *
 * The ops carry the yields (infer_op.tbo_yield, set by infer_layer_ops and
 * infer_moe_ops from the strategy) and which ops run beside the
 * collective issued before them (ep_free: the shared experts). Here each
 * half batch is a chain: a kernel or TP collective after the previous
 * one; an EP collective after the previous kernel, not in the chain; the
 * first later op that is not ep_free waits for it too. Tasks are added
 * in the executor's stage order, so each stream runs them in that order
 * and the engine's streams give the overlap: A's dispatch on the ep
 * stream while B's kernels run on the compute stream, the dispatcher's
 * SMs (moe.dispatcher sms) taken from them while it runs (exec_run.c),
 * and the dispatcher's kernels progressing at its busy_rate while
 * kernels run beside them (ep_busy.c, as training's overlapped calls;
 * deepep.yaml: DeepSeek's own profile).
 *
 * What the split costs comes from the half batch's own units: every
 * GEMM at half the rows (lower efficiency at small M), the weights read
 * once per half, two collectives of half the bytes (each paying the
 * path's fixed latency). Not modelled [?]: the split and merge of the
 * hidden states (views and one concatenation), DeepGEMM's SM cap in
 * prefill (deep_gemm_num_sms = SMs - DeepEP's: taken only while a
 * collective runs here), the activation memory TBO halves.
 * A job that sets the overlap where it cannot run is told so once
 * (infer_tbo_warn).
 */
#include "infer_prog.h"

#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* One half batch's progress through its run of MoE layers. */
struct half {
	const struct infer_step_units *u;
	int32_t mb;		/* its microbatch id in the trace: 2 mb + i */
	task_id prev;		/* the chain's last kernel or TP collective */
	task_id pend;		/* an EP collective not yet awaited */
	int64_t layer;		/* the layer it is in (index into the run) */
	int op;			/* its next op there */
};

/* Chain task t of half h after what it waits for: the previous task,
 * and the pending EP collective unless t runs beside it. */
static int chain(struct prog *p, struct half *h, task_id t, int ep,
		 int ep_free)
{
	if (h->prev != TASK_NONE && prog_dep(p, h->prev, t) != 0)
		return -1;
	if (h->pend != TASK_NONE && (ep || !ep_free)) {
		if (prog_dep(p, h->pend, t) != 0)
			return -1;
		h->pend = TASK_NONE;
	}
	if (ep)
		h->pend = t;
	else
		h->prev = t;
	return 0;
}

/* Half h's next stage: its ops up to the next yield (the op that starts
 * this stage excepted) or the end of the run. 0, or -1 out of memory. */
static int next_stage(struct prog *p, const struct infer_ctx *x,
		      struct half *h, int64_t s, int64_t first, int64_t n)
{
	int start = 1;

	for (; h->layer < n; h->layer++, h->op = 0) {
		int64_t layer = first + h->layer;
		const struct infer_unit *un = &h->u->layer[x->kind_of[layer]];

		for (; h->op < un->n; h->op++) {
			const struct infer_cost_op *op = &un->op[h->op];
			task_id t;

			if (op->tbo_yield && !start)
				return 0;
			start = 0;
			t = infer_prog_op(p, x, h->u, op, (uint32_t)s, s,
					  (int32_t)layer, h->mb);
			if (t == TASK_NONE ||
			    chain(p, h, t, op->kind == IOP_EP, op->ep_free))
				return -1;
		}
	}
	return 0;
}

static int done(const struct half *h, int64_t n)
{
	return h->layer >= n;
}

int infer_tbo_on(const struct infer_ctx *x, const struct infer_batch *b)
{
	if (!x->dims.moe_model || !x->dims.moe.tbo)
		return 0;
	/* SGLang splits a decode batch by sequences and a prefill one by
	 * tokens: nothing to split below two of them */
	if (infer_batch_decode_only(b))
		return infer_batch_seqs(b) >= 2;
	return infer_batch_tokens(b) >= 2;
}

void infer_tbo_warn(const struct infer_ctx *x, const struct infer_batch *b,
		    struct diag *d)
{
	const struct job_spec *j = x->job;
	const char *why = NULL;

	if (!x->eng || !x->eng->two_batch_overlap)
		return;
	/* infer_moe_dims sets moe.tbo only with the MoE layers' tokens
	 * exchanged by an all-to-all between attention-DP ranks */
	if (!x->dims.moe_model)
		why = "the model has no MoE layers";
	else if (!j->parallelism.attention_dp || x->tp * x->adp < 2)
		why = "no attention data parallelism across GPUs (SGLang "
		      "overlaps the two halves' expert all-to-all)";
	else if (x->dims.moe.allgather)
		why = "the MoE tokens travel by the engine's all-gather, not "
		      "an all-to-all dispatcher (moe.dispatcher)";
	else if (b && !infer_tbo_on(x, b))
		why = infer_batch_decode_only(b) ?
		      "fewer than two sequences a rank to split" :
		      "fewer than two prompt tokens a rank to split";
	if (why)
		diag_warn(d, NULL, 0, 0, "serving.engine.two_batch_overlap "
			  "is set but not run: %s", why);
}

int infer_tbo_layers(struct prog *p, const struct infer_ctx *x,
		     const struct infer_step_units *half, int64_t s,
		     int64_t first, int64_t n, int32_t mb, task_id after,
		     task_id *last)
{
	struct half a = {half, 2 * mb, after, TASK_NONE, 0, 0};
	struct half b = {half, 2 * mb + 1, after, TASK_NONE, 0, 0};
	/* A's head start: the strategy's tbo_delta_stages (engine file) */
	int delta = x->dims.moe.tbo_delta[half->tbo == ITBO_DECODE ? 0 : 1];
	int k;

	for (k = 0; k < delta && !done(&a, n); k++)
		if (next_stage(p, x, &a, s, first, n))
			return -1;
	while (!done(&a, n) || !done(&b, n)) {
		if (!done(&a, n) && next_stage(p, x, &a, s, first, n))
			return -1;
		if (!done(&b, n) && next_stage(p, x, &b, s, first, n))
			return -1;
	}
	/* every collective was awaited (a combine's wait ends each layer);
	 * the layer after the run starts when both halves are through */
	if (a.prev != TASK_NONE && b.prev != TASK_NONE && a.prev != b.prev &&
	    prog_dep(p, a.prev, b.prev) != 0)
		return -1;
	*last = b.prev;
	return 0;
}

struct prog *infer_tbo_prog(const struct infer_ctx *x,
			    const struct infer_step_units *half,
			    int64_t first, int64_t n)
{
	struct prog *p = infer_prog_empty(x);
	task_id last;

	if (p && infer_tbo_layers(p, x, half, 0, first, n, 0, TASK_NONE,
				  &last) != 0) {
		prog_free(p);
		return NULL;
	}
	return p;
}
