/*
 * train.c - the step program of a dense training step.
 *
 * A step is, on every pipeline rank, the actions of its schedule
 * (sched.h): the forward or backward of one model chunk on one
 * microbatch. An action is a chain of units (embedding, layers, head) and
 * a unit is a costed block (block.h) of kernels on the compute stream and
 * TP collectives on the tp stream, instantiated with its dependencies;
 * each unit waits for the previous one, the first unit of an action for
 * the activation or gradient received from the neighbouring stage
 * (train_pp.c), and the head's backward for its own forward. Gradient
 * reduction, parameter gathers, the optimizer and host overhead come last
 * (train_dp.c).
 *
 * The program is exact in structure; its time comes from the GPU model
 * (kernel durations) and the fabric model (every collective, through the
 * executor's comm backend).
 *
 * Simulated ranks: with symmetric replication one rank per pipeline stage
 * stands for its tp x dp identical GPUs; its collectives list every
 * member GPU and how many identical groups run alongside (layout.h).
 */
#include "train.h"

#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "gpu/gpu.h"
#include "ep.h"
#include "ep_busy.h"
#include "footprint.h"
#include "route.h"
#include "split.h"
#include "train_impl.h"

int train_check(const struct job_spec *j, struct diag *d)
{
	const struct gpu_spec *g = j->system->gpu;
	enum dtype dt = (enum dtype)j->training.dtype;

	if (gpu_check_dtype(g, dt, d) != 0) {
		diag_note(d, NULL, 0, 0, "training.dtype is '%s'", dtype_names[dt]);
		return -1;
	}
	if (gpu_check_dtype(g, layer_base_dtype(dt), d) != 0) {
		diag_note(d, NULL, 0, 0, "training.dtype '%s' keeps attention and "
			  "the LM head in %s", dtype_names[dt],
			  dtype_names[layer_base_dtype(dt)]);
		return -1;
	}
	if (model_is_moe(j->model) &&
	    gpu_check_dtype(g, (enum dtype)j->moe.router_dtype, d) != 0) {
		diag_note(d, NULL, 0, 0, "moe.router_dtype is '%s'",
			  dtype_names[j->moe.router_dtype]);
		return -1;
	}
	if (j->training.cpu_offload_layers > 0 &&
	    (j->system->host_h2d_Bps <= 0 || j->system->host_d2h_Bps <= 0)) {
		diag_error(d, NULL, 0, 0, "training.cpu_offload_layers %lld "
			   "needs the system's host copy rates: system '%s' "
			   "states no host_h2d / host_d2h",
			   (long long)j->training.cpu_offload_layers,
			   j->system->name ? j->system->name : "(inline)");
		return -1;
	}
	return 0;
}

/* ---- instantiating blocks ---- */

static void record_first(struct unit_rec *rec, task_id id)
{
	if (rec->nfirst >= sizeof(rec->first) / sizeof(rec->first[0]))
		BUG("a block has too many ops waiting for its input");
	rec->first[rec->nfirst++] = id;
}

/* The descriptor of collective op on the group whose GPUs are in
 * t->gpus (n of them). */
static struct coll_desc coll_of(struct train *t, const struct block_op *op,
				uint32_t n)
{
	struct coll_desc c = {
		.op = op->coll, .bytes = op->bytes, .gpus = t->gpus,
		.ngpus = n, .a2a_B = op->a2a_B, .algo = -1, .proto = -1,
		.replicas = layout_replicas(&t->lay, (enum layout_group)op->group),
	};

	if (op->p2p_next) {	/* ring steps: every GPU sends to the next */
		c.algo = ALGO_P2P;
		c.proto = PROTO_SIMPLE;
	}
	if (op->ep_path) {
		c.path = t->path[op->ep_path - 1];
		/* hierarchical inside one node is the plain all-to-all */
		c.algo = c.path || !ep_spans_nodes(t->gpus, n,
				t->job->system->gpus_per_node) ? -1 : t->ep_algo;
		if (t->ep_units > 0)
			c.sm_share = t->ep_units >= (double)t->gpu->compute_units ?
				     1 : t->ep_units / (double)t->gpu->compute_units;
		else
			c.sm_share = train_sm_share(t, op->coll, t->gpus, n, 0);
		ep_busy(t->job->moe.dispatcher, &c);
		return c;
	}
	c.sm_share = train_sm_share(t, op->coll, t->gpus, n,
				    op->group == LG_TP && t->dims.chunks > 1);
	/* Transformer Engine's userbuffers overlap (pipeline and bulk
	 * methods: set_sm_margin, transformer_engine/pytorch/module/base.py
	 * initialize_ub's default_cfg) launches the GEMMs it overlaps with
	 * an SM count target that leaves the comm kernel's units out
	 * (common/comm_gemm_overlap/comm_gemm_overlap.cpp: _math_sms =
	 * sm_count - num_comm_sm) */
	c.sm_margin = op->group == LG_TP && t->dims.chunks > 1;
	return c;
}

static uint32_t stream_of(const struct block_op *op)
{
	switch (op->stream) {
	case LS_CP: return TRAIN_ST_CP;
	case LS_EP: return TRAIN_ST_EP;
	case LS_COMPUTE: return TRAIN_ST_COMPUTE;
	default: return TRAIN_ST_TP;
	}
}

/* Collective op i of block b on the n simulated ranks t->stage_ranks:
 * one collective per group, ids[i * n + k] its task on rank k. */
static int inst_coll(struct train *t, const struct block *b, int i,
		     uint32_t n, const struct task_info *info, task_id *ids)
{
	const struct block_op *op = &b->op[i];
	uint32_t k, j, sim, size;

	memset(t->done, 0, n);
	for (k = 0; k < n; k++) {
		struct coll_desc c;
		task_id first;

		if (t->done[k])
			continue;
		sim = train_group(t, (enum layout_group)op->group,
				  t->stage_ranks[k], &size);
		c = coll_of(t, op, size);
		first = prog_coll(t->prog, t->ranks, sim, stream_of(op), &c,
				  info);
		if (first == TASK_NONE)
			return -1;
		/* the members are simulated ranks of this stage: their index
		 * among t->stage_ranks is their stage index */
		for (j = 0; j < sim; j++) {
			int64_t pp_i, si;

			layout_where(&t->lay, t->ranks[j], &pp_i, &si);
			ids[i * (int)n + (int)si] = first + j;
			t->done[si] = 1;
		}
	}
	return 0;
}

/* Op i of block b on the n simulated ranks of a stage into
 * ids[i * n + k]. */
static int inst_op(struct train *t, const struct block *b, int i, uint32_t n,
		   const struct task_info *info, task_id *ids)
{
	const struct block_op *op = &b->op[i];
	uint32_t k;

	if (op->kind != LOP_KERNEL)
		return inst_coll(t, b, i, n, info, ids);
	for (k = 0; k < n; k++) {
		double dur_s = op->time_s;

		if (t->stage_ranks[k] == t->slow_rank)
			dur_s *= t->job->straggler.compute_scale;
		ids[i * (int)n + (int)k] = prog_task_owned(t->prog,
			t->stage_ranks[k], TRAIN_ST_COMPUTE, dur_s, info,
			op->owned);
		if (ids[i * (int)n + (int)k] == TASK_NONE)
			return -1;
	}
	return 0;
}

/* Ops [lo, hi) of block b as unit u of action a on the stage's
 * simulated ranks t->stage_ranks[0..n-1], their task ids in ids (op i of
 * rank k at ids[i * n + k]), the ops taking the unit's input waiting for
 * in[k] (TASK_NONE: nothing) and recorded as the unit's first tasks when
 * `first` is set. */
static int inst_range(struct train *t, const struct block *b, uint32_t n,
		      const task_id *in, int64_t a, int64_t u,
		      const struct task_info *tmpl, int first, int lo, int hi,
		      task_id *ids)
{
	int i, e;
	uint32_t k;

	for (i = lo; i < hi; i++) {
		struct task_info info = *tmpl;

		info.name = b->op[i].name;
		info.cat = b->op[i].kind == LOP_KERNEL ? TASK_COMPUTE : TASK_COMM;
		if (inst_op(t, b, i, n, &info, ids) != 0 ||
		    train_host_issue(t, b, i, n, ids, tmpl) != 0)
			return -1;
		if (b->op[i].kind != LOP_KERNEL &&
		    stream_of(&b->op[i]) == TRAIN_ST_EP)
			for (k = 0; k < n; k++) {
				struct unit_rec *rec = train_unit(t,
					t->stage_ranks[k], a, u);

				if (rec->ep_first == TASK_NONE)
					rec->ep_first = ids[i * (int)n + (int)k];
				rec->ep_last = ids[i * (int)n + (int)k];
			}
		if (b->op[i].kind == LOP_KERNEL && b->op[i].side_stream)
			for (k = 0; k < n; k++) {
				struct unit_rec *rec = train_unit(t,
					t->stage_ranks[k], a, u);

				if (rec->xg_first == TASK_NONE)
					rec->xg_first = ids[i * (int)n + (int)k];
				rec->xg_last = ids[i * (int)n + (int)k];
			}
		for (e = 0; e < 2; e++) {
			int dep = b->op[i].dep[e];

			for (k = 0; k < n && dep != LAYER_NONE; k++) {
				task_id me = ids[i * (int)n + (int)k];
				task_id before = dep == LAYER_IN ? in[k] :
						 ids[dep * (int)n + (int)k];

				if (dep == LAYER_IN && first)
					record_first(train_unit(t, t->stage_ranks[k],
								a, u), me);
				if (train_dep(t, before, me) != 0)
					return -1;
			}
		}
	}
	return 0;
}

static void unit_begin(struct train *t, uint32_t n, int64_t a, int64_t u,
		       int first)
{
	uint32_t k;

	for (k = 0; k < n && first; k++)
		train_unit(t, t->stage_ranks[k], a, u)->nfirst = 0;
}

static void unit_end(struct train *t, const struct block *b, uint32_t n,
		     int64_t a, int64_t u, const task_id *ids)
{
	uint32_t k;

	for (k = 0; k < n; k++) {
		struct unit_rec *rec = train_unit(t, t->stage_ranks[k], a, u);

		rec->last = ids[(b->n - 1) * (int)n + (int)k];
		rec->out = ids[b->out * (int)n + (int)k];
	}
}

/* Block b as unit u of action a (inst_range over all its ops). */
static int inst_block(struct train *t, const struct block *b, uint32_t n,
		      const task_id *in, int64_t a, int64_t u,
		      const struct task_info *tmpl, int first)
{
	unit_begin(t, n, a, u, first);
	if (inst_range(t, b, n, in, a, u, tmpl, first, 0, b->n,
		       t->scratch) != 0)
		return -1;
	unit_end(t, b, n, a, u, t->scratch);
	return 0;
}

/* Whether an action's input arrives from another pipeline stage. */
static int receives(const struct train *t, struct sched_action act, int64_t vs)
{
	return act.bwd ? vs < t->stages - 1 : vs > 0;
}

/* The all-gather rebuilding a scattered transfer, as the start of unit 0
 * (the transfer waits for nothing of it; unit 0 waits for it). */
static int gather_input(struct train *t, uint32_t n, task_id *in, int64_t a,
			const struct task_info *info)
{
	uint32_t k;

	if (inst_block(t, t->pg, n, in, a, 0, info, 1) != 0)
		return -1;
	for (k = 0; k < n; k++)
		in[k] = train_unit(t, t->stage_ranks[k], a, 0)->last;
	return 0;
}

/* Action a's input before its first unit (in[k] per simulated GPU): the
 * head's forward for the last stage's backward, and the gather of a
 * scattered pipeline transfer. */
static int action_begin(struct train *t, int64_t s, uint32_t n, int64_t a,
			task_id *in, struct task_info *info)
{
	const struct stage_plan *sp = &t->stage[s];
	struct sched_action act = sp->acts[a];
	int64_t vs = train_vs(t, s, act.chunk);
	uint32_t k;

	*info = (struct task_info){
		.microbatch = (int32_t)act.mb,
		.phase = act.bwd ? TASK_PHASE_BWD : TASK_PHASE_FWD,
	};
	if (train_host_p2p(t, s, n, a) != 0)
		return -1;
	for (k = 0; k < n; k++) {
		in[k] = TASK_NONE;
		if (act.bwd && vs == t->stages - 1)
			in[k] = train_action_end(t, t->stage_ranks[k],
				sp->lookup[(int64_t)act.chunk * t->m + act.mb]);
	}
	if (t->pg && receives(t, act, vs) && gather_input(t, n, in, a, info) != 0)
		return -1;
	return 0;
}

/* Action a's fp8 amax reduction after its last unit (in[] at its end),
 * on the compute stream: the next action's compute waits for it. */
static int action_end(struct train *t, int64_t s, uint32_t n, int64_t a,
		      task_id *in, const struct task_info *info)
{
	const struct block *b = t->amax[t->stage[s].acts[a].bwd];
	uint32_t k;

	if (!b)
		return 0;
	if (inst_range(t, b, n, in, a, 0, info, 0, 0, b->n, t->scratch) != 0)
		return -1;
	for (k = 0; k < n; k++)
		in[k] = t->scratch[(b->n - 1) * (int)n + (int)k];
	return 0;
}

/* The block of unit u of action act on virtual stage vs: the head's
 * backward without its weight gradient for the microbatches
 * defer_embedding_wgrad_compute defers (the first t->defer in backward
 * order, which is microbatch order), else train_unit_block's. */
static const struct block *action_block(const struct train *t,
					struct sched_action act, int64_t vs,
					int64_t u, int32_t *layer)
{
	const struct block *b = train_unit_block(t, vs, act.bwd, u, layer);

	if (b == t->hb && t->hbd && (int64_t)act.mb < t->defer)
		return t->hbd;
	return b;
}

/* The step's weight quantization before unit u of action act on virtual
 * stage vs: train_unit_wcast's on the step's first microbatch forward,
 * else NULL. */
static const struct block *unit_wcast(const struct train *t,
				      struct sched_action act, int64_t vs,
				      int64_t u)
{
	return act.bwd || act.mb != 0 ? NULL : train_unit_wcast(t, vs, u);
}

/* Unit u's weight quantization w (unit_wcast) on the compute stream:
 * after in[] (the unit's input: it runs inside the first GEMM's module
 * call), recorded as the unit's first tasks when *first is set (a
 * parameter all-gather gates it), and in[] advances to it; *first is
 * then cleared for the block. */
static int inst_wcast(struct train *t, const struct block *w, uint32_t n,
		      task_id *in, int64_t a, int64_t u,
		      const struct task_info *info, int *first)
{
	uint32_t k;

	if (!w)
		return 0;
	unit_begin(t, n, a, u, *first);
	if (inst_range(t, w, n, in, a, u, info, *first, 0, w->n,
		       t->scratch) != 0)
		return -1;
	for (k = 0; k < n; k++)
		in[k] = t->scratch[(w->n - 1) * (int)n + (int)k];
	*first = 0;
	return 0;
}

/* Unit u of action a as a whole; in[] advances to its end. */
static int action_unit(struct train *t, int64_t s, uint32_t n, int64_t a,
		       int64_t u, task_id *in, struct task_info *info)
{
	struct sched_action act = t->stage[s].acts[a];
	int64_t vs = train_vs(t, s, act.chunk);
	const struct block *b = action_block(t, act, vs, u, &info->layer);
	int first = !(u == 0 && t->pg && receives(t, act, vs));
	uint32_t k;

	if (inst_wcast(t, unit_wcast(t, act, vs, u), n, in, a, u, info,
		       &first) != 0 ||
	    inst_block(t, b, n, in, a, u, info, first) != 0)
		return -1;
	for (k = 0; k < n; k++)
		in[k] = train_unit(t, t->stage_ranks[k], a, u)->out;
	return 0;
}

/* The ends of block b's segments: each runs to and includes one of its
 * dispatch/combine all-to-alls, with the EP-stream collectives issued
 * right after it in the same call (the alltoall dispatcher's
 * probabilities: token_dispatch runs both all_to_alls, and Megatron-
 * Core's overlap schedule runs token_dispatch as one node), the last to
 * the block's end. Returns the count (1: no all-to-all). */
static int segments(const struct block *b, int *ends)
{
	int i, c = 0, n = b->out + 1;

	for (i = 0; i < n; i++)
		if (b->op[i].kind != LOP_KERNEL && b->op[i].ep_path) {
			while (i + 1 < n && b->op[i + 1].kind == LOP_COLL &&
			       b->op[i + 1].stream == LS_EP &&
			       !b->op[i + 1].ep_path)
				i++;
			ends[c++] = i + 1;
		}
	if (c == 0 || ends[c - 1] < n)
		ends[c++] = n;
	return c;
}

/* Unit u of the paired actions x (backward) and y (forward), their
 * blocks' segments alternating on the compute stream, x's first: each
 * all-to-all (issued at the end of a segment, on the EP stream) runs
 * under the other action's next segment (Megatron-Core's
 * overlap_moe_expert_parallel_comm: combine backward under attention,
 * dispatch under the experts' backward, ...). */
static int pair_unit(struct train *t, int64_t s, uint32_t n, int64_t x,
		     int64_t y, int64_t u, task_id *inx, task_id *iny,
		     struct task_info *ix, struct task_info *iy)
{
	struct sched_action ax = t->stage[s].acts[x], ay = t->stage[s].acts[y];
	int64_t vx = train_vs(t, s, ax.chunk), vy = train_vs(t, s, ay.chunk);
	const struct block *bx = action_block(t, ax, vx, u, &ix->layer);
	const struct block *by = action_block(t, ay, vy, u, &iy->layer);
	int fx = !(u == 0 && t->pg && receives(t, ax, vx));
	int fy = !(u == 0 && t->pg && receives(t, ay, vy));
	int ex[LAYER_MAX_OPS + 1], ey[LAYER_MAX_OPS + 1];
	int cx = segments(bx, ex), cy = segments(by, ey), i, lx = 0, ly = 0;
	uint32_t k;

	if (inst_wcast(t, unit_wcast(t, ax, vx, u), n, inx, x, u, ix,
		       &fx) != 0 ||
	    inst_wcast(t, unit_wcast(t, ay, vy, u), n, iny, y, u, iy,
		       &fy) != 0)
		return -1;
	unit_begin(t, n, x, u, fx);
	unit_begin(t, n, y, u, fy);
	for (i = 0; i < cx || i < cy; i++) {
		if (i < cx && inst_range(t, bx, n, inx, x, u, ix, fx, lx, ex[i],
					 t->scratch) != 0)
			return -1;
		if (i < cy && inst_range(t, by, n, iny, y, u, iy, fy, ly, ey[i],
					 t->scratch2) != 0)
			return -1;
		lx = i < cx ? ex[i] : lx;
		ly = i < cy ? ey[i] : ly;
	}
	/* delayed weight gradients after both (the forward's tail, its
	 * combine node on Megatron's communication stream, comes first) */
	if (bx->out + 1 < bx->n &&
	    inst_range(t, bx, n, inx, x, u, ix, fx, bx->out + 1, bx->n,
		       t->scratch) != 0)
		return -1;
	if (by->out + 1 < by->n &&
	    inst_range(t, by, n, iny, y, u, iy, fy, by->out + 1, by->n,
		       t->scratch2) != 0)
		return -1;
	unit_end(t, bx, n, x, u, t->scratch);
	unit_end(t, by, n, y, u, t->scratch2);
	for (k = 0; k < n; k++) {
		inx[k] = train_unit(t, t->stage_ranks[k], x, u)->out;
		iny[k] = train_unit(t, t->stage_ranks[k], y, u)->out;
	}
	return 0;
}

/* Actions a and a + 1 paired (train_pairs()): unit by unit, the backward's
 * segments first. */
static int build_pair(struct train *t, int64_t s, uint32_t n, int64_t a,
		      task_id *in, task_id *in2)
{
	const struct stage_plan *sp = &t->stage[s];
	int64_t x = sp->acts[a].bwd ? a : a + 1, y = x == a ? a + 1 : a, u;
	int64_t nx = train_units(t, train_vs(t, s, sp->acts[x].chunk));
	int64_t ny = train_units(t, train_vs(t, s, sp->acts[y].chunk));
	struct task_info ix, iy;

	if (action_begin(t, s, n, x, in, &ix) != 0 ||
	    action_begin(t, s, n, y, in2, &iy) != 0)
		return -1;
	for (u = 0; u < nx || u < ny; u++) {
		if (u < nx && u < ny) {
			if (pair_unit(t, s, n, x, y, u, in, in2, &ix, &iy) != 0 ||
			    train_grad_prep(t, s, n, x, u, in) != 0)
				return -1;
			continue;
		}
		if (u < nx && (action_unit(t, s, n, x, u, in, &ix) != 0 ||
			       train_grad_prep(t, s, n, x, u, in) != 0))
			return -1;
		if (u < ny && action_unit(t, s, n, y, u, in2, &iy) != 0)
			return -1;
	}
	if (action_end(t, s, n, x, in, &ix) != 0 ||
	    action_end(t, s, n, y, in2, &iy) != 0 ||
	    train_grad_prep(t, s, n, x, -1, in) != 0 ||
	    train_grad_prep(t, s, n, y, -1, in2) != 0)
		return -1;
	return 0;
}

/* Under the all-to-all overlap, action a's first ops (its combine
 * backward on the EP stream, for a MoE backward) wait for the end of
 * action p, the rank's previous one (a pair's both wait for the one
 * before the pair): Megatron-Core's schedule plan records the
 * chunk's event on the compute stream when it starts
 * (TransformerModelChunkSchedulePlan.run record_current_stream @
 * 01cf4fb5) and its first node's stream waits for that event
 * (pipeline_parallel/utils.py ScheduleNode stream_acquire_context), so
 * it starts after everything issued before, the previous pair's delayed
 * attention wgrads included. */
static int after_previous(struct train *t, uint32_t n, int64_t a, int64_t p)
{
	uint32_t k, i;

	if (!t->a2a_overlap || p < 0)
		return 0;
	for (k = 0; k < n; k++) {
		uint32_t r = t->stage_ranks[k];
		const struct unit_rec *rec = train_unit(t, r, a, 0);

		for (i = 0; i < rec->nfirst; i++)
			if (train_dep(t, train_action_end(t, r, p),
				      rec->first[i]) != 0)
				return -1;
	}
	return 0;
}

/* defer_embedding_wgrad_compute's drain on the last pipeline rank
 * (finish_embedding_wgrad_compute, after the schedule's last backward
 * and before finalize_model_grads: NVIDIA/Megatron-LM core_v0.12.0:
 * megatron/core/pipeline_parallel/schedules.py): the t->defer deferred
 * weight gradients, each instance's all-gather into one of two buffers
 * (drain_embedding_wgrad_compute's double buffer) after the GEMM that
 * last read it, two instances back, so it runs under the previous
 * instance's GEMM. t->drain_end[rank] is the last one's end. */
static int build_drain(struct train *t, int64_t s, uint32_t n)
{
	const struct stage_plan *sp = &t->stage[s];
	int64_t a = sp->nacts - 1, i;
	struct task_info info = { .microbatch = -1,
				  .phase = TASK_PHASE_BWD, .layer = -1 };
	task_id *prev[2];
	uint32_t k;

	if (t->defer <= 0 || s != t->pp - 1)
		return 0;
	prev[0] = arena_alloc(&t->arena, 2 * (size_t)n * sizeof(**prev));
	if (!prev[0])
		return -1;
	prev[1] = prev[0] + n;
	for (k = 0; k < n; k++)
		prev[0][k] = prev[1][k] = train_action_end(t,
						t->stage_ranks[k], a);
	for (i = 0; i < t->defer; i++) {
		task_id *in = prev[i % 2];

		info.microbatch = (int32_t)i;
		if (inst_range(t, t->hw, n, in, a, 0, &info, 0, 0, t->hw->n,
			       t->scratch) != 0)
			return -1;
		for (k = 0; k < n; k++)
			in[k] = t->scratch[(t->hw->n - 1) * (int)n + (int)k];
	}
	for (k = 0; k < n; k++)
		t->drain_end[t->stage_ranks[k]] =
			prev[(t->defer - 1) % 2][k];
	return 0;
}

/* Every action of pipeline rank s on all its simulated GPUs: its units
 * chained, the head's backward after its forward; with moe.a2a_overlap
 * neighbouring forward and backward actions paired (build_pair). */
static int build_stage(struct train *t, int64_t s, task_id *in, task_id *in2)
{
	const struct stage_plan *sp = &t->stage[s];
	uint32_t n = (uint32_t)t->lay.sim, k;
	int64_t a, u;

	for (k = 0; k < n; k++)
		t->stage_ranks[k] = layout_rank(&t->lay, s, (int64_t)k);
	for (a = 0; a < sp->nacts; a++) {
		struct task_info info;

		if (train_pairs(t, s, a)) {
			if (build_pair(t, s, n, a, in, in2) != 0 ||
			    after_previous(t, n, a, a - 1) != 0 ||
			    after_previous(t, n, a + 1, a - 1) != 0)
				return -1;
			a++;
			continue;
		}
		if (action_begin(t, s, n, a, in, &info) != 0)
			return -1;
		for (u = 0; u < train_units(t, train_vs(t, s, sp->acts[a].chunk));
		     u++)
			if (action_unit(t, s, n, a, u, in, &info) != 0 ||
			    train_offload_unit(t, s, n, a, u) != 0 ||
			    train_grad_prep(t, s, n, a, u, in) != 0)
				return -1;
		if (action_end(t, s, n, a, in, &info) != 0 ||
		    train_grad_prep(t, s, n, a, -1, in) != 0 ||
		    after_previous(t, n, a, a - 1) != 0)
			return -1;
	}
	return build_drain(t, s, n);
}

/* ---- setup ---- */

static int plan_stage(struct train *t, int64_t s)
{
	struct stage_plan *sp = &t->stage[s];
	int64_t a, r, g, mg, n = sched_actions(t->m, t->v);

	sp->nacts = n;
	sp->acts = arena_alloc(&t->arena, (size_t)n * sizeof(*sp->acts));
	sp->lookup = arena_alloc(&t->arena, (size_t)n * sizeof(*sp->lookup));
	sp->unit_off = arena_alloc(&t->arena,
				   (size_t)(n + 1) * sizeof(*sp->unit_off));
	if (!sp->acts || !sp->lookup || !sp->unit_off)
		return -1;
	/* a local batch at a time (job_schedule_runs): the schedule of m / g
	 * microbatches, g times, each run's microbatches after the last's */
	g = job_schedule_runs(t->job);
	mg = t->m / g;
	sp->run_acts = n / g;
	for (r = 0; r < g; r++) {
		struct sched_action *run = sp->acts + r * sp->run_acts;

		sched_rank_ex(t->job->parallelism.schedule, t->pp, t->v, mg, s,
			      t->a2a_overlap, run);
		for (a = 0; a < sp->run_acts; a++)
			run[a].mb += (uint32_t)(r * mg);
	}
	sp->warmup = sched_warmup_ex(t->job->parallelism.schedule, t->pp, t->v,
				     mg, s, t->a2a_overlap);
	sp->unit_off[0] = 0;
	for (a = 0; a < n; a++) {
		struct sched_action act = sp->acts[a];

		sp->lookup[((int64_t)act.bwd * t->v + act.chunk) * t->m + act.mb] = a;
		sp->unit_off[a + 1] = sp->unit_off[a] +
			(uint32_t)train_units(t, train_vs(t, s, act.chunk));
	}
	return 0;
}

static int alloc_ranks(struct train *t)
{
	uint32_t r, nu, u;
	int64_t pp_i, i;
	size_t width = (size_t)t->lay.stage + 2;

	t->units = arena_alloc(&t->arena, t->lay.nranks * sizeof(*t->units));
	t->last_dp = arena_alloc(&t->arena, t->lay.nranks * sizeof(*t->last_dp));
	t->last_edp = arena_alloc(&t->arena, t->lay.nranks * sizeof(*t->last_edp));
	t->drain_end = arena_alloc(&t->arena, t->lay.nranks *
				   sizeof(*t->drain_end));
	t->scratch = arena_alloc(&t->arena, (size_t)LAYER_MAX_OPS *
				 (size_t)t->lay.sim * sizeof(*t->scratch));
	t->scratch2 = arena_alloc(&t->arena, (size_t)LAYER_MAX_OPS *
				  (size_t)t->lay.sim * sizeof(*t->scratch2));
	t->stage_ranks = arena_alloc(&t->arena, (size_t)t->lay.sim *
				     sizeof(*t->stage_ranks));
	t->done = arena_alloc(&t->arena, (size_t)t->lay.sim);
	t->idx = arena_alloc(&t->arena, width * sizeof(*t->idx));
	t->gpus = arena_alloc(&t->arena, width * sizeof(*t->gpus));
	t->ranks = arena_alloc(&t->arena, width * sizeof(*t->ranks));
	t->pos = arena_alloc(&t->arena, width * sizeof(*t->pos));
	if (!t->units || !t->last_dp || !t->last_edp || !t->drain_end ||
	    !t->scratch || !t->scratch2 ||
	    !t->gpus || !t->ranks ||
	    !t->stage_ranks || !t->done || !t->idx || !t->pos)
		return -1;
	for (r = 0; r < t->lay.nranks; r++) {
		layout_where(&t->lay, r, &pp_i, &i);
		nu = t->stage[pp_i].unit_off[t->stage[pp_i].nacts];
		t->units[r] = arena_alloc(&t->arena, nu * sizeof(struct unit_rec));
		t->last_dp[r] = TASK_NONE;
		t->last_edp[r] = TASK_NONE;
		t->drain_end[r] = TASK_NONE;
		if (!t->units[r])
			return -1;
		for (u = 0; u < nu; u++)
			t->units[r][u].ep_first = t->units[r][u].ep_last =
				t->units[r][u].xg_first =
				t->units[r][u].xg_last = TASK_NONE;
	}
	return 0;
}

/* The simulated rank of the job's straggler GPU (gpu = i + stage pp_i,
 * layout.h), or UINT32_MAX when there is none or ranks are not GPUs (the
 * symmetric mode, which step_run refuses for a straggler). */
static uint32_t straggler_rank(const struct train *t)
{
	const struct layout *l = &t->lay;
	int64_t g = t->job->straggler.gpu;

	if (g < 0 || !(t->job->straggler.compute_scale > 1) ||
	    l->sim != l->stage || g >= l->stage * l->pp)
		return UINT32_MAX;
	return layout_rank(l, g / l->stage, g % l->stage);
}

/* The dispatcher's path: a GPU-initiated one, or the library's with the
 * algorithm it forces (hierarchical). */
static void ep_path(struct train *t)
{
	const struct ep_comm_spec *e = t->job->moe.dispatcher;

	const struct moe_dims *m = &t->dims.moe;

	memset(t->path, 0, sizeof(t->path));
	t->ep_algo = -1;
	t->ep_units = e ? (double)e->sms : 0;
	if (!e || !model_is_moe(t->job->model))
		return;
	route_ep_paths(e, m, t->ep_path, t->path, &t->ep_algo);
}

void train_layout(struct layout *l, const struct job_spec *j, int full)
{
	const struct parallel_spec *p = &j->parallelism;

	layout_init(l, p->tp, p->cp, p->pp, p->dp, p->etp > 0 ? p->etp : p->tp,
		    p->ep, full || j->full_fidelity);
	if (p->cp_comm_type == CP_A2A_P2P && p->cp_a2a > 0)
		layout_set_cp_a2a(l, p->cp_a2a);
	if (p->rank_order == ORDER_TP_CP_EP_PP_DP)
		layout_set_pp_inner(l);
}

int train_shape(struct train *t, const struct job_spec *j,
		struct train_plan *plan, struct diag *d)
{
	const struct parallel_spec *p = &j->parallelism;
	struct route_result route;

	t->job = j;
	t->gpu = j->system->gpu;
	t->m = job_microbatches(j);
	t->v = p->vpp;
	t->pp = p->pp;
	t->stages = p->pp * p->vpp;
	t->mtp = model_is_moe(j->model) ? j->moe.mtp_layers : 0;
	t->mtp_stage = split_mtp_stage(j);
	t->mtp_alone = t->mtp > 0 && t->mtp_stage != t->stages - 1;
	/* the first wgrad_deferral_limit backwards (all with 0) append to
	 * the buffers (NVIDIA/Megatron-LM core_v0.12.0:megatron/core/
	 * tensor_parallel/layers.py, LinearWithGradAccumulationAndAsync-
	 * Communication.backward); the job check keeps it to pp >= 2 */
	t->defer = 0;
	if (p->defer_embedding_wgrad && p->pp >= 2)
		t->defer = p->wgrad_deferral_limit > 0 &&
			   p->wgrad_deferral_limit < t->m ?
			   p->wgrad_deferral_limit : t->m;
	t->a2a_overlap = model_is_moe(j->model) && j->moe.a2a_overlap &&
			 j->parallelism.ep > 1;
	layer_dims_from_job(j, &t->dims);
	if (model_is_moe(j->model)) {
		if (route_plan(j, &t->dims, &t->arena, &route, d) != 0)
			return -1;
		plan->routing = route.method;
		plan->max_mean = route.max_mean;
	}
	ep_path(t);
	t->dt.base = layer_base_dtype((enum dtype)j->training.dtype);
	t->dt.gemm_lowp = (enum dtype)j->training.dtype;
	t->dt.lowp_rate = block_lowp_rate(j);
	t->dt.fast_accum = block_fast_accum(j);
	t->dt.captured = block_captured(j);
	t->split = arena_alloc(&t->arena, (size_t)t->stages * sizeof(*t->split));
	if (!t->split)
		return -1;
	split_layers(j, t->split);
	return 0;
}

/* Everything but the program; t->lay is set. */
static int setup(struct train *t, const struct job_spec *j,
		 struct train_plan *plan, struct diag *d)
{
	int64_t s;

	if (train_shape(t, j, plan, d) != 0)
		return -1;
	t->stage = arena_alloc(&t->arena, (size_t)t->pp * sizeof(*t->stage));
	if (!t->stage)
		return -1;
	for (s = 0; s < t->pp; s++)
		if (plan_stage(t, s) != 0)
			return -1;
	t->slow_rank = straggler_rank(t);
	return alloc_ranks(t) != 0 ? -1 : train_host_setup(t);
}

static void name_streams(struct prog *p)
{
	static const char *const names[TRAIN_ST_COUNT] = {
		"compute", "tp", "pp_fwd", "pp_bwd", "pp_fwd_wrap",
		"pp_bwd_wrap", "dp", "dp_gather", "cp", "ep", "host",
		"dp_expert", "dp_gather_expert", "pp_fwd_odd", "pp_bwd_odd",
		"offload",
	};
	uint32_t s;

	for (s = 0; s < TRAIN_ST_COUNT; s++)
		prog_name_stream(p, s, names[s]);
}

/* FLOPs per step of the whole job from the costed blocks. */
static void fill_plan(const struct train *t, struct train_plan *plan)
{
	const struct job_spec *j = t->job;
	double model = 0, exec = 0, scale;
	int64_t vs, u, n;

	for (vs = 0; vs < t->stages; vs++) {
		n = train_units(t, vs);
		for (u = 0; u < n; u++) {
			int32_t layer;
			const struct block *f = train_unit_block(t, vs, 0, u, &layer);
			const struct block *b = train_unit_block(t, vs, 1, n - 1 - u,
								 &layer);

			model += f->model_flops + b->model_flops;
			exec += f->flops + b->flops;
		}
	}
	scale = (double)t->m * (double)t->lay.stage;
	plan->lay = t->lay;
	plan->microbatches = t->m;
	plan->tokens = (double)j->training.global_batch_size *
		       (double)j->training.seq_len;
	/* every GPU of a stage computes the same share of its microbatch
	 * (tp splits it; cp, dp and ep each hold other tokens) */
	plan->model_flops = model * scale;
	plan->exec_flops = exec * scale;
	plan->params = footprint_model_params(j);
	plan->active_params = footprint_active_params(j);
}

static int build_all(struct train *t)
{
	task_id *in = arena_alloc(&t->arena, (size_t)t->lay.sim * sizeof(*in));
	task_id *in2 = arena_alloc(&t->arena, (size_t)t->lay.sim * sizeof(*in2));
	struct train_estimate e;
	int64_t s;

	name_streams(t->prog);
	if (!in || !in2 || train_cost_blocks(t) != 0 || train_plan_dp(t) != 0 ||
	    train_offload_setup(t) != 0)
		return -1;
	/* Room for the tasks and calls the estimate counts (it equals the
	 * build), so the program's arrays are not grown and copied. */
	train_count(t, train_host_init(t), &e);
	prog_reserve(t->prog, e.tasks, e.calls);
	for (s = 0; s < t->pp; s++)
		if (build_stage(t, s, in, in2) != 0)
			return -1;
	if (train_build_pp(t) != 0 || train_build_dp(t) != 0)
		return -1;
	return 0;
}

/* Every rendezvous of the step waits for its slowest GPU, under the
 * system's variability (src/engine/exec_jitter.c). */
static void set_jitter(struct prog *p, const struct job_spec *j)
{
	struct exec_jitter jit = {
		j->system->variability.op_jitter,
		j->system->variability.gpu_spread,
	};

	prog_set_jitter(p, &jit);
}

struct prog *train_build(const struct job_spec *j, int full,
			 struct train_plan *plan, struct diag *d)
{
	struct train t;
	struct prog *prog = NULL;

	memset(&t, 0, sizeof(t));
	memset(plan, 0, sizeof(*plan));
	arena_init(&t.arena);
	train_layout(&t.lay, j, full);
	t.prog = prog_new(t.lay.nranks, TRAIN_ST_COUNT);
	if (!t.prog || setup(&t, j, plan, d) != 0 || build_all(&t) != 0) {
		if (!d->oom)
			diag_oom(d);
		prog_free(t.prog);
		goto out;
	}
	fill_plan(&t, plan);
	prog = t.prog;
	set_jitter(prog, j);
out:
	arena_release(&t.arena);
	return prog;
}

void train_rank_label(uint32_t rank, char *buf, size_t len, void *arg)
{
	const struct layout *l = arg;
	struct layout_coord c;
	int64_t pp_i, i;

	layout_where(l, rank, &pp_i, &i);
	layout_coord(l, i, &c);
	if (l->sim == l->stage)
		snprintf(buf, len, "pp%lld dp%lld cp%lld tp%lld",
			 (long long)pp_i, (long long)c.dp_i, (long long)c.cp_i,
			 (long long)c.tp_i);
	else
		snprintf(buf, len, "pp%lld (stands for its %lld GPUs)",
			 (long long)pp_i, (long long)l->stage);
}
