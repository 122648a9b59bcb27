/*
 * train_dp.c - data parallelism, the optimizer step's task and host
 * overhead.
 *
 * Gradient buckets (ZeRO 0-2, Megatron-Core DDP): a model chunk's
 * gradients are complete after its last backward. Walking its units in
 * backward order (head, last layer, ..., first layer, embedding), units
 * are grouped into buckets of at least max(bucket_params,
 * bucket_params_per_dp * dp) parameters of this GPU (dp without CP, the
 * same size for both kinds below; train_bucket_size), one bucket per
 * kind and chunk on pipeline ranks > 0 when the framework says so
 * (later_stages_one_bucket: Megatron-Core DDP sets bucket_size None
 * there); a bucket is reduced
 * over the DP group as soon as its last unit's backward of the last
 * microbatch is done (overlap_grad_reduce), or after the whole backward.
 * ZeRO 0 all-reduces P G bytes (P parameters, G gradient bytes each);
 * ZeRO 1-2 (distributed optimizer) reduce-scatter them, and all-gather
 * P W bytes of updated 16-bit weights per bucket: at the start of the step
 * in forward order, each chunk's first forward waiting for its buckets
 * (overlap_param_gather, the steady state of "overlapped with the next
 * forward"), or after the optimizer.
 *
 * ZeRO 3 (FSDP FULL_SHARD): every unit (embedding, layer, head) is
 * all-gathered before each forward and backward that uses it (P W bytes),
 * each all-gather waiting for the unit fsdp_prefetch_units before it in
 * compute order to finish (at most that many units gathered at once; a
 * moe.a2a_overlap pair runs its backward's and forward's units
 * interleaved, so both count), and its gradient reduce-scattered after
 * each backward (P G bytes).
 *
 * Groups: dense parameters' gradients reduce over the data-parallel group
 * with CP (dp x cp GPUs, Megatron's), routed experts' over the expert
 * data-parallel group (edp GPUs); each has its own buckets (Megatron's
 * expert-parallel gradient buffers) and, under ZeRO >= 1, its own shard
 * of the optimizer.
 *
 * Two chains: Megatron-Core's DistributedDataParallel keeps the two kinds
 * in separate buffers and bucket groups (buffers / expert_parallel_buffers,
 * bucket_groups / expert_parallel_bucket_groups, each list with its own
 * next_param_gather_bucket_group chain), and each bucket group launches
 * its reduce-scatter (or all-reduce) and its param all-gather with
 * async_op on its own process group (intra_dp_cp_group,
 * intra_expt_dp_group; megatron/core/distributed/
 * distributed_data_parallel.py and param_and_grad_buffer.py, NVIDIA/
 * Megatron-LM d98e8a64). PyTorch's ProcessGroupNCCL runs each
 * communicator's collectives on that communicator's own stream, so the
 * two chains run concurrently, each FIFO in its bucket order, sharing
 * the links (the fabric's flow model): with overlap_grad_reduce the
 * routed experts' reductions go on stream dp_expert, with
 * overlap_param_gather their all-gathers on dp_gather_expert. Without
 * overlap the calls are synchronous (async_op False: the compute stream
 * waits for each, and the next collective's stream waits for the compute
 * stream), so both kinds stay on one FIFO stream in call order. FSDP's
 * collectives (ZeRO 3) keep one stream per direction.
 *
 * Tied embeddings on pp > 1: the first and last stages all-reduce the
 * embedding gradient, V/t h G bytes (Megatron's embedding group).
 *
 * Optimizer: one task a GPU after its rank's backward, of train_opt.c's
 * time (train_optimizer_s: the framework's optimizer_step passes over
 * the local shard).
 * It waits for every gradient reduction of its rank (both chains).
 *
 * Host overhead: the framework's step_overhead, after the optimizer.
 */
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "gpu/gpu.h"
#include "footprint.h"
#include "split.h"
#include "train_impl.h"

/* The group gradients of this kind reduce over. */
static enum layout_group grad_group(int experts)
{
	return experts ? LG_EDP : LG_DP;
}

/* A data-parallel collective over the group whose members train_group
 * put in t->gpus (size of them) and t->ranks (n simulated). */
static task_id dp_coll(struct train *t, enum layout_group g, uint32_t n,
		       uint32_t size, enum coll_op op, double bytes,
		       int stream, const char *name)
{
	struct coll_desc c = { .op = op, .bytes = bytes, .gpus = t->gpus,
			       .ngpus = size, .algo = -1, .proto = -1,
			       .replicas = layout_replicas(&t->lay, g),
			       .sm_share = train_dp_sm_share(t->job, op, t->gpus,
							       size) };
	struct task_info info = { .name = name, .cat = TASK_COMM,
				  .layer = -1, .microbatch = -1 };
	task_id first = prog_coll(t->prog, t->ranks, n, (uint32_t)stream, &c,
				  &info);
	uint32_t k;

	if (first != TASK_NONE && stream == TRAIN_ST_DP)
		for (k = 0; k < n; k++)
			t->last_dp[t->ranks[k]] = first + k;
	if (first != TASK_NONE && stream == TRAIN_ST_DP_EXPERT)
		for (k = 0; k < n; k++)
			t->last_edp[t->ranks[k]] = first + k;
	return first;
}

/* The stream of one kind's (experts or dense) gradient reductions
 * (gather 0) or parameter all-gathers (gather 1) of buckets: the routed
 * experts' own chain when the framework launches them asynchronously
 * (overlap_grad_reduce, overlap_param_gather), else the one FIFO of
 * synchronous calls (see the top of the file). */
static int bucket_stream(const struct train *t, int experts, int gather)
{
	const struct framework_spec *fw = t->job->framework;
	int async = gather ? fw->overlap_param_gather : fw->overlap_grad_reduce;

	/* on one hardware queue the two kinds are one FIFO (train_queue.c) */
	if (experts && async && !train_queue_dp_edp(t->job))
		return gather ? TRAIN_ST_DP_GATHER_EXPERT : TRAIN_ST_DP_EXPERT;
	return gather ? TRAIN_ST_DP_GATHER : TRAIN_ST_DP;
}

/* Unit u's parameters of one kind (dense or experts) on one GPU. */
static double unit_params(const struct train *t, int64_t vs, int bwd,
			  int64_t u, int experts)
{
	double dense, ex;

	train_unit_params(t, vs, bwd, u, &dense, &ex);
	return experts ? ex : dense;
}

/* ---- buckets (ZeRO 0-2) ---- */

/* Action index of chunk c's last backward (bwd) or first forward: a
 * chunk runs its microbatches in order (sched.h), so microbatch m-1's
 * backward and microbatch 0's forward. */
static int64_t chunk_action(const struct train *t, const struct stage_plan *sp,
			    int64_t c, int bwd)
{
	int64_t mb = bwd ? t->m - 1 : 0;

	return sp->lookup[((int64_t)bwd * t->v + c) * t->m + mb];
}

/* Chunk c's units of one kind, completed by action a, into buckets of
 * at least size parameters at out (NULL: count only); returns how many. */
static int64_t chunk_buckets(const struct train *t, int64_t s, int64_t c,
			     int64_t a, double size, int experts,
			     struct bucket *out)
{
	int64_t vs = train_vs(t, s, c), u, n = 0, units = train_units(t, vs);
	struct bucket b = { .chunk = c, .bact = a, .params = 0, .layer_params = 0,
			    .fact = out ? chunk_action(t, &t->stage[s], c, 0) : 0,
			    .experts = experts };

	for (u = 0; u < units; u++) {
		double up = unit_params(t, vs, 1, u, experts);
		int32_t layer;

		if (b.params == 0)
			b.u0 = u;
		b.params += up;
		train_unit_block(t, vs, 1, u, &layer);
		if (layer >= 0)	/* a transformer layer's (train_gather_bytes) */
			b.layer_params += up;
		b.u1 = u;
		if (b.params > 0 && (b.params >= size || u == units - 1)) {
			if (out)
				out[n] = b;
			n++;
			b.params = 0;
			b.layer_params = 0;
		}
	}
	return n;
}

int64_t train_dp_buckets(const struct train *t, int64_t s, int experts)
{
	double size = train_bucket_size(t->job, s);
	int64_t c, n = 0;

	for (c = 0; c < t->v; c++)
		n += chunk_buckets(t, s, c, 0, size, experts, NULL);
	return n;
}

/* A chunk's n buckets (the dense ones, then the experts') in the order
 * the framework issues their reductions: by the unit that completes
 * them, and in one unit the experts' first (a MoE layer's backward runs
 * its experts before its attention). Insertion sort: stable, and the
 * kinds are already each in order. */
static void ready_order(struct bucket *b, int64_t n)
{
	int64_t i, j;

	for (i = 1; i < n; i++) {
		struct bucket x = b[i];

		for (j = i; j > 0 && (b[j - 1].u1 > x.u1 ||
				      (b[j - 1].u1 == x.u1 && x.experts &&
				       !b[j - 1].experts)); j--)
			b[j] = b[j - 1];
		b[j] = x;
	}
}

/* The stage's buckets in the order their gradients complete, into
 * t->stage[s]. Returns 0, or -1 when out of memory. */
static int plan_buckets(struct train *t, int64_t s)
{
	struct stage_plan *sp = &t->stage[s];
	double size = train_bucket_size(t->job, s);
	int64_t a, c, max = 0;
	int e;

	for (c = 0; c < t->v; c++)	/* at most one bucket per unit and kind */
		max += 2 * train_units(t, train_vs(t, s, c));
	sp->buckets = arena_alloc(&t->arena, (size_t)max * sizeof(*sp->buckets));
	if (!sp->buckets)
		return -1;
	sp->nbuckets = 0;
	for (a = 0; a < sp->nacts; a++) {
		int64_t lo = sp->nbuckets;

		c = sp->acts[a].chunk;
		if (!sp->acts[a].bwd || chunk_action(t, sp, c, 1) != a)
			continue;
		for (e = 0; e < 2; e++)
			sp->nbuckets += chunk_buckets(t, s, c, a, size, e,
						      sp->buckets + sp->nbuckets);
		if (train_queue_dp_edp(t->job))
			ready_order(sp->buckets + lo, sp->nbuckets - lo);
	}
	return 0;
}

/* Each data-parallel group of stage s of one kind (dense or experts),
 * its members in t->gpus (size of them) and its simulated members in
 * t->ranks (n): fn(t, n, size, arg) once per group. Groups are visited
 * per item (bucket, unit) so that the collectives of both kinds keep
 * the items' order on their streams. */
static int for_groups(struct train *t, int64_t s, int experts,
		      int (*fn)(struct train *, uint32_t, uint32_t, void *),
		      void *arg)
{
	uint32_t k, j, n, size;

	memset(t->done, 0, (size_t)t->lay.sim);
	for (k = 0; k < (uint32_t)t->lay.sim; k++) {
		if (t->done[k])
			continue;
		n = train_group(t, grad_group(experts),
				layout_rank(&t->lay, s, k), &size);
		for (j = 0; j < n; j++) {
			int64_t pp_i, i;

			layout_where(&t->lay, t->ranks[j], &pp_i, &i);
			t->done[i] = 1;
		}
		if (size > 1 && fn(t, n, size, arg) != 0)
			return -1;
	}
	return 0;
}

/* The pipeline stage of simulated rank r. */
static int64_t rank_stage(const struct train *t, uint32_t r)
{
	int64_t pp_i, i;

	layout_where(&t->lay, r, &pp_i, &i);
	return pp_i;
}

/* The index of simulated rank r within its stage. */
static int64_t rank_index(const struct train *t, uint32_t r)
{
	int64_t pp_i, i;

	layout_where(&t->lay, r, &pp_i, &i);
	return i;
}

/* A bucket's gradient reduction on one group, after its units (or the
 * whole backward). */
static int reduce_one(struct train *t, uint32_t n, uint32_t size, void *arg)
{
	const struct bucket *b = arg;
	int zero = (int)t->job->training.zero_stage;
	int overlap = t->job->framework->overlap_grad_reduce;
	int stream = bucket_stream(t, b->experts, 0);
	int ep = overlap && train_queue_with_ep(t->job, b->experts);
	int gemm = overlap && train_queue_with_gemm(t->job, b->experts);
	task_id mark = TASK_NONE, first;
	uint32_t k;

	/* one connection: the reduction's start, launched after the
	 * bucket's last unit (train_queue.c) */
	if (overlap && train_one_connection(t->job)) {
		mark = train_launch_marks(t, n, (uint32_t)stream, b->experts ?
			"launch edp_grad_reduce" : "launch dp_grad_reduce");
		if (mark == TASK_NONE)
			return -1;
	}
	first = dp_coll(t, grad_group(b->experts), n, size,
			zero == 0 ? COLL_ALLREDUCE : COLL_REDUCESCATTER,
			b->params * t->dims.grad_B, stream,
			b->experts ? "edp_grad_reduce" : "dp_grad_reduce");
	if (first == TASK_NONE)
		return -1;
	for (k = 0; k < n; k++) {
		uint32_t r = t->ranks[k];
		task_id ready = overlap ?
			train_unit(t, r, b->bact, b->u1)->last :
			train_action_end(t, r, t->stage[0].nacts - 1);

		if (b->ready && b->ready[rank_index(t, r)] != TASK_NONE)
			ready = b->ready[rank_index(t, r)];
		/* unoverlapped, finalize_model_grads reduces after the
		 * deferred head wgrads (build_drain) */
		if (train_dep(t, ready, first + k) != 0 ||
		    (!overlap && train_dep(t, t->drain_end[r], first + k) != 0))
			return -1;
		if (mark != TASK_NONE &&
		    (train_dep(t, ready, mark + k) != 0 ||
		     train_launch_gate(t, rank_stage(t, r), r, b->bact,
				       b->u1 + 1, mark + k) != 0))
			return -1;
		/* on the expert-parallel stream's queue: the all-to-alls
		 * issued after it wait for it */
		if (ep && train_dep(t, first + k, train_ep_from(t,
				rank_stage(t, r), r, b->bact, b->u1 + 1)) != 0)
			return -1;
		/* on the experts' GEMM stream's queue: likewise the GEMMs
		 * (those before it are in its units: ready follows them) */
		if (gemm && train_dep(t, first + k, train_xg_from(t,
				rank_stage(t, r), r, b->bact, b->u1 + 1)) != 0)
			return -1;
	}
	return 0;
}

/* The distributed optimizer's all-gather of a bucket's 16-bit weights. */
static task_id param_gather(struct train *t, uint32_t n, uint32_t size,
			    const struct bucket *b)
{
	return dp_coll(t, grad_group(b->experts), n, size, COLL_ALLGATHER,
		       train_gather_bytes(t->job, &t->dims, b->params,
					  b->layer_params),
		       bucket_stream(t, b->experts, 1),
		       b->experts ? "edp_param_allgather" : "dp_param_allgather");
}

struct gather_arg {
	const struct bucket *b;
	const struct bucket *prev;	/* the bucket of its kind before it in
					 * its chunk's forward, or NULL */
	int64_t s;
};

/* Where bucket g->b's all-gather is issued: one bucket ahead, from the
 * previous bucket's first unit, or at its own first unit where dense and
 * expert collectives share one FIFO (issue order must be the FIFO's: a
 * gather anchored ahead on one queue and at its own unit on the other
 * would wait for itself). Returns the anchor bucket, *u its unit. */
static const struct bucket *gather_anchor(struct train *t,
					  const struct gather_arg *g,
					  int64_t *u)
{
	const struct bucket *prev = train_queue_dp_edp(t->job) ? NULL : g->prev;
	const struct bucket *at = prev ? prev : g->b;

	*u = train_units(t, train_vs(t, g->s, at->chunk)) - 1 - at->u1;
	return at;
}

/* On the expert-parallel stream's queue, the all-gather of bucket g->b
 * on rank r is issued where Megatron-Core issues it: one bucket ahead,
 * from the forward pre-hook of the previous bucket's first module (its
 * first unit: at the unit's start for dense parameters, after the
 * dispatch for the experts'), the chunk's first at its own first unit.
 * It waits for the all-to-alls issued before it, and those issued after
 * it wait for it. */
static int gather_on_ep_queue(struct train *t, const struct gather_arg *g,
			      uint32_t r, task_id ag)
{
	int64_t u;
	const struct bucket *at = gather_anchor(t, g, &u);
	const struct unit_rec *rec = train_unit(t, r, at->fact, u);
	task_id before, after;

	if (at != g->b && g->b->experts && rec->ep_first != rec->ep_last) {
		before = rec->ep_first;
		after = rec->ep_last;
	} else {
		before = train_ep_before(t, g->s, r, at->fact, u);
		after = train_ep_from(t, g->s, r, at->fact, u);
	}
	if (train_dep(t, before, ag) != 0 || train_dep(t, ag, after) != 0)
		return -1;
	return 0;
}

/* On the experts' GEMM stream's queue, the all-gather of bucket g->b on
 * rank r is issued as on the expert-parallel one (gather_on_ep_queue):
 * from the forward pre-hook of the previous bucket's first module,
 * before that unit's expert GEMMs (the experts' first module is their
 * fc1; a dense bucket's hook opens its unit), the chunk's first bucket
 * at its own first unit; with both kinds on one FIFO, each at its own
 * first unit, the expert-parallel queue's rule (one queue for all,
 * training.comm_hw_queues 1, holds the GEMMs, the all-to-alls and the
 * gathers: a gather anchored one bucket ahead here and at its own unit
 * there waited for itself). The GEMMs issued before it precede it,
 * those after it wait for it. */
static int gather_on_gemm_queue(struct train *t, const struct gather_arg *g,
				uint32_t r, task_id ag)
{
	int64_t u;
	const struct bucket *at = gather_anchor(t, g, &u);

	if (train_dep(t, train_xg_before(t, g->s, r, at->fact, u), ag) != 0 ||
	    train_dep(t, ag, train_xg_from(t, g->s, r, at->fact, u)) != 0)
		return -1;
	return 0;
}

/* One connection (train_queue.c): the all-gather of bucket g->b on rank
 * r, launched from the forward pre-hook of the unit that issues it (as
 * gather_on_ep_queue places it, at the bucket's own unit where dense
 * and expert collectives share one queue, so no gather waits on itself),
 * starts no earlier than the unit before it (the kernel launched before
 * it, to within that kernel), and the unit's first tasks wait for its
 * start, mark. An expert bucket's gather is marked at its unit's start,
 * not after the dispatch as gather_on_ep_queue launches it [?]. */
static int gather_launch(struct train *t, const struct gather_arg *g,
			 uint32_t r, task_id mark)
{
	int64_t u;
	const struct bucket *at = gather_anchor(t, g, &u);

	if (u > 0 && train_dep(t, train_unit(t, r, at->fact, u - 1)->last,
			       mark) != 0)
		return -1;
	return train_launch_gate(t, g->s, r, at->fact, u, mark);
}

/* A bucket's all-gather at the start of the step on one group; its
 * chunk's first forward waits for it. */
static int gather_one(struct train *t, uint32_t n, uint32_t size, void *arg)
{
	const struct gather_arg *g = arg;
	const struct bucket *b = g->b;
	int64_t u, units = train_units(t, train_vs(t, g->s, b->chunk));
	uint32_t k, f;
	int ep = train_queue_with_ep(t->job, b->experts);
	int gemm = train_queue_with_gemm(t->job, b->experts);
	task_id mark = TASK_NONE, first;

	if (train_one_connection(t->job)) {
		mark = train_launch_marks(t, n,
			(uint32_t)bucket_stream(t, b->experts, 1), b->experts ?
			"launch edp_param_allgather" :
			"launch dp_param_allgather");
		if (mark == TASK_NONE)
			return -1;
	}
	first = param_gather(t, n, size, b);
	if (first == TASK_NONE)
		return -1;
	for (k = 0; k < n && mark != TASK_NONE; k++)
		if (gather_launch(t, g, t->ranks[k], mark + k) != 0)
			return -1;
	for (k = 0; k < n; k++)
		if ((ep && gather_on_ep_queue(t, g, t->ranks[k], first + k) != 0) ||
		    (gemm && gather_on_gemm_queue(t, g, t->ranks[k],
						  first + k) != 0))
			return -1;
	for (k = 0; k < n; k++)
		for (u = b->u0; u <= b->u1; u++) {
			struct unit_rec *rec = train_unit(t, t->ranks[k], b->fact,
							  units - 1 - u);

			for (f = 0; f < rec->nfirst; f++)
				if (train_dep(t, first + k, rec->first[f]) != 0)
					return -1;
		}
	return 0;
}

/* ---- FSDP (ZeRO 3) ---- */

/* How many units back an all-gather may wait on (fsdp_prefetch_units'
 * schema maximum, spec_framework.c). */
#define FSDP_AHEAD_MAX 64

struct fsdp_arg {
	int64_t a, u, q;	/* action, unit, units before it on the rank
				 * in compute order */
	int64_t ra[FSDP_AHEAD_MAX], ru[FSDP_AHEAD_MAX];	/* ring: the
				 * action and unit at compute position
				 * q % FSDP_AHEAD_MAX */
	double params;		/* of this kind, one GPU */
	int bwd, experts;
	int gather, reduce;	/* this unit all-gathers / reduce-scatters */
	int no_sync;		/* train_fsdp_pp_no_sync */
	int held;		/* the action's chunk is still gathered
				 * (fsdp_held) */
};

/* A backward's reduce-scatter rs of simulated rank r, action a: FSDP's
 * root post-backward final callback, at the end of every backward with
 * is_last_backward (its default; _finalize_backward: the current stream
 * waits for each unit's post-reduce event, torch/distributed/fsdp/
 * _fully_shard/_fsdp_state.py, torch 2.6-2.8), makes the compute stream
 * wait for it before anything issued after the backward: the action's
 * gradient send and the rank's next action (after the pair, for a
 * paired one). */
static int reduce_waited(struct train *t, uint32_t r, int64_t a, task_id rs)
{
	int64_t pp_i, i;
	const struct stage_plan *sp;
	struct unit_rec *next;
	uint32_t f;

	layout_where(&t->lay, r, &pp_i, &i);
	sp = &t->stage[pp_i];
	if (t->pp_send && t->pp_send[r][a] != TASK_NONE &&
	    train_dep(t, rs, t->pp_send[r][a]) != 0)
		return -1;
	/* a paired backward (moe.a2a_overlap) ends with its pair */
	if (train_pairs(t, pp_i, a))
		a++;
	if (a + 1 >= sp->nacts)
		return 0;
	next = train_unit(t, r, a + 1, 0);
	for (f = 0; f < next->nfirst; f++)
		if (train_dep(t, rs, next->first[f]) != 0)
			return -1;
	return 0;
}

/* FSDP2's one reduce-scatter in flight (framework
 * fsdp_reduce_one_in_flight, outside fsdp_pp_no_sync): a unit's
 * post_backward makes the current stream wait for the reduce-scatter
 * issued before its own (FSDPParamGroup.post_backward:
 * current_stream().wait_event(comm_ctx.reduce_scatter_state.event),
 * torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, torch
 * 2.6-2.8). A block's routed experts sharded as their own FSDP unit
 * (AutoModel's fully_shard(block.mlp.experts)) run their post_backward
 * when their backward ends, at the unit's last expert GEMM on the
 * multi-stream path (rec->xg_last; else the unit's end), before the
 * block's own at the unit's end. So the experts' reduce-scatter of unit
 * u is issued at xg_last and waited for at u's end (before unit u + 1),
 * the block's, issued at u's end, at the next post_backward: unit u +
 * 1's experts' (a point inside it the step program has no task for:
 * taken as u + 1's end, before unit u + 2). The last units' are the
 * action's end's (reduce_waited). rs is unit (a, u)'s reduce-scatter
 * on rank r; 0 or -1. */
static int one_in_flight(struct train *t, uint32_t r, const struct fsdp_arg *x,
			 task_id rs)
{
	int64_t pp_i, i, nu, next = x->u + (x->experts ? 1 : 2);
	const struct unit_rec *nx;
	uint32_t f;

	layout_where(&t->lay, r, &pp_i, &i);
	nu = train_units(t, train_vs(t, pp_i,
				     t->stage[pp_i].acts[x->a].chunk));
	if (next >= nu || train_pairs(t, pp_i, x->a))
		return 0;	/* the action's end (reduce_waited) */
	nx = train_unit(t, r, x->a, next);
	for (f = 0; f < nx->nfirst; f++)
		if (train_dep(t, rs, nx->first[f]) != 0)
			return -1;
	return 0;
}

/* Where unit (a, u)'s reduce-scatter of this kind becomes ready on rank
 * r: under fsdp_pp_no_sync after the chunk's whole last backward of the
 * run (the manual post_backward), else after the unit's backward (its
 * post-backward hook), the routed experts' under
 * fsdp_reduce_one_in_flight after their own (one_in_flight). */
static task_id reduce_ready(struct train *t, uint32_t r,
			    const struct fsdp_arg *x, const struct unit_rec *rec)
{
	if (x->no_sync)
		return train_action_end(t, r, x->a);
	if (x->experts && t->job->framework->fsdp_reduce_one_in_flight &&
	    rec->xg_last != TASK_NONE)
		return rec->xg_last;
	return rec->last;
}

/* One unit's parameter all-gather (and after a backward its gradients'
 * reduce-scatter) on one group; under fsdp_pp_no_sync only a chunk's
 * first forward of a schedule run gathers and its last backward
 * reduces. */
static int fsdp_one(struct train *t, uint32_t n, uint32_t size, void *arg)
{
	const struct fsdp_arg *x = arg;
	int64_t ahead = t->job->framework->fsdp_prefetch_units;
	int64_t w = (x->q - ahead) % FSDP_AHEAD_MAX;
	enum layout_group g = grad_group(x->experts);
	task_id ag = TASK_NONE, rs = TASK_NONE;
	uint32_t k, f;

	if (x->gather) {
		ag = dp_coll(t, g, n, size, COLL_ALLGATHER,
			     x->params * t->dims.act_B, TRAIN_ST_DP_GATHER,
			     "fsdp_param_allgather");
		if (ag == TASK_NONE)
			return -1;
	}
	if (x->reduce) {
		int rdt = t->job->framework->fsdp_expert_reduce_dtype;
		double grad_B = x->experts && rdt >= 0 ?
				dtype_bytes((enum dtype)rdt) : t->dims.grad_B;

		rs = dp_coll(t, g, n, size, COLL_REDUCESCATTER,
			     x->params * grad_B, TRAIN_ST_DP,
			     "fsdp_grad_reducescatter");
		if (rs == TASK_NONE)
			return -1;
	}
	for (k = 0; k < n; k++) {
		uint32_t r = t->ranks[k];
		struct unit_rec *rec = train_unit(t, r, x->a, x->u);

		if (ag != TASK_NONE) {
			if (x->q >= ahead &&
			    train_dep(t, train_unit(t, r, x->ra[w],
						    x->ru[w])->last, ag + k) != 0)
				return -1;
			for (f = 0; f < rec->nfirst; f++)
				if (train_dep(t, ag + k, rec->first[f]) != 0)
					return -1;
		}
		if (rs == TASK_NONE)
			continue;
		if (train_dep(t, reduce_ready(t, r, x, rec), rs + k) != 0 ||
		    reduce_waited(t, r, x->a, rs + k) != 0)
			return -1;
		if (t->job->framework->fsdp_reduce_one_in_flight &&
		    !x->no_sync && one_in_flight(t, r, x, rs + k) != 0)
			return -1;
	}
	return 0;
}

/* What unit u of a one-stage model's forward (bwd 0) or backward is
 * under torchtitan's apply_fsdp (parallelize_llama.py, pytorch/torchtitan
 * 1ea476e9, 9dec370a, 820504e2: each TransformerBlock fully_shard'ed
 * with reshard_after_forward = layer_id < n_layers - 1 when pp is off,
 * then fully_shard(model)). The root unit (fsdp_root_unit) holds what no
 * block holds: the embedding, the final norm and the output layer. FSDP2
 * never reshards the root after its forward (FSDPState._lazy_init sets
 * the root group's post_forward_mesh_info None: "the parameters would
 * be freed and all-gathered immediately", torch/distributed/_composable/
 * fsdp/_fsdp_state.py, torch 2.4-2.8), and the root's inputs are token
 * ids, which need no gradient, so no post-backward hook is registered
 * (FSDPParamGroup._register_post_backward_hook) and the root reduce-
 * scatters in the final callback (finalize_backward), after the
 * embedding's backward. So the root is gathered once before the
 * embedding's forward and reduced once after the embedding's backward;
 * the head gathers and reduces nothing. The last block
 * (fsdp_last_layer_held, with fsdp_reshard_after_forward) stays gathered
 * from its forward into its backward. Pipelined stages (each a root of
 * its own part) are left as they are. */
enum fsdp_role { FSDP_PLAIN, FSDP_ROOT_EMBED, FSDP_ROOT_HEAD, FSDP_LAST_LAYER };

static enum fsdp_role fsdp_role(const struct train *t, int64_t vs, int bwd,
				int64_t u)
{
	const struct framework_spec *fw = t->job->framework;
	int64_t n, k;

	if (t->stages != 1)
		return FSDP_PLAIN;
	n = train_units(t, vs);
	k = bwd ? n - 1 - u : u;	/* forward order: embedding, layers,
					 * head, MTP modules */
	if (fw->fsdp_root_unit && k == 0)
		return FSDP_ROOT_EMBED;
	if (fw->fsdp_root_unit && k == n - 1 - t->mtp)
		return FSDP_ROOT_HEAD;
	if (fw->fsdp_last_layer_held && fw->fsdp_reshard_after_forward &&
	    t->split[vs] > 0 && k == t->split[vs])
		return FSDP_LAST_LAYER;
	return FSDP_PLAIN;
}

/* The head's dense parameters on one GPU (train_unit_params' head). */
static double head_params(const struct train *t)
{
	return footprint_unit_params(t->job, &t->dims, UNIT_HEAD,
				     t->pp == 1) / t->dims.tp;
}

/* Unit u of action a, the next in compute order: its collectives of
 * each kind, then its place in the ring. */
static int fsdp_unit(struct train *t, int64_t s, int kinds, int64_t a,
		     int64_t u, struct fsdp_arg *x)
{
	struct sched_action act = t->stage[s].acts[a];
	int64_t vs = train_vs(t, s, act.chunk);
	int64_t mg = t->m / job_schedule_runs(t->job);
	enum fsdp_role role = fsdp_role(t, vs, act.bwd, u);
	int k;

	x->a = a;
	x->u = u;
	x->bwd = act.bwd;
	x->no_sync = train_fsdp_pp_no_sync(t);
	x->gather = x->no_sync ? !act.bwd && act.mb % mg == 0 : !x->held;
	x->reduce = act.bwd && (!x->no_sync || act.mb % mg == mg - 1);
	if (role == FSDP_ROOT_HEAD || (act.bwd && role != FSDP_PLAIN))
		x->gather = 0;	/* gathered since the root's (or this
				 * layer's) forward */
	if (role == FSDP_ROOT_HEAD)
		x->reduce = 0;	/* with the embedding's */
	/* in a backward the experts' unit first (its post_backward comes
	 * first: reduce_ready) under fsdp_reduce_one_in_flight */
	for (k = 0; k < kinds; k++) {
		x->experts = act.bwd && kinds == 2 &&
			     t->job->framework->fsdp_reduce_one_in_flight ? 1 - k : k;
		x->params = unit_params(t, vs, x->bwd, u, x->experts);
		if (role == FSDP_ROOT_EMBED && !x->experts)
			x->params += head_params(t);
		if (x->params > 0 && (x->gather || x->reduce) &&
		    for_groups(t, s, x->experts, fsdp_one, x) != 0)
			return -1;
	}
	x->ra[x->q % FSDP_AHEAD_MAX] = a;
	x->ru[x->q % FSDP_AHEAD_MAX] = u;
	x->q++;
	return 0;
}

/* Whether a chunk's units stay gathered after action act on it, outside
 * fsdp_pp_no_sync: FSDP2 reshards a unit after its backward
 * (reshard_after_backward, default True) and after its forward only with
 * reshard_after_forward; a unit still gathered is not gathered again
 * (FSDPParamGroup.unshard returns when already unsharded; torch/
 * distributed/fsdp/_fully_shard/_fsdp_param_group.py, torch 2.8). With
 * reshard after forward every forward and backward gathers; without it
 * a chunk's action gathers only after a backward of that chunk or at
 * the start of the step (held[] all 0): 1F1B's forward after each
 * backward, a warm-up forward once, a cool-down backward after a
 * backward. */
static void fsdp_held(const struct train *t, uint8_t *held,
		      struct sched_action act)
{
	held[act.chunk] = !act.bwd && !t->job->framework->fsdp_reshard_after_forward;
}

/* The units of rank s in the order its compute stream runs them: an
 * action's units in turn, a pair's (moe.a2a_overlap, train_pairs)
 * interleaved, the backward's unit u, then the forward's, so that each
 * all-gather waits for the unit fsdp_prefetch_units before it there
 * (action order would make a pair's forward unit wait for a later unit
 * of its backward: a cycle). */
static int fsdp_stage(struct train *t, int64_t s, int kinds)
{
	const struct stage_plan *sp = &t->stage[s];
	struct fsdp_arg x;
	int64_t a, u;
	uint8_t *held = arena_alloc(&t->arena, (size_t)t->v);
	int hb, hc;

	if (!held)
		return -1;
	memset(held, 0, (size_t)t->v);
	memset(&x, 0, sizeof(x));
	for (a = 0; a < sp->nacts; a++) {
		int64_t b = a, c = -1, nb, nc = 0;

		if (train_pairs(t, s, a)) {
			b = sp->acts[a].bwd ? a : a + 1;
			c = b == a ? a + 1 : a;
			nc = train_units(t, train_vs(t, s, sp->acts[c].chunk));
			a++;
		}
		nb = train_units(t, train_vs(t, s, sp->acts[b].chunk));
		hb = held[sp->acts[b].chunk];
		hc = c >= 0 ? held[sp->acts[c].chunk] : 0;
		for (u = 0; u < nb || u < nc; u++) {
			x.held = hb;
			if (u < nb && fsdp_unit(t, s, kinds, b, u, &x) != 0)
				return -1;
			x.held = hc;
			if (u < nc && fsdp_unit(t, s, kinds, c, u, &x) != 0)
				return -1;
		}
		fsdp_held(t, held, sp->acts[b]);
		if (c >= 0)
			fsdp_held(t, held, sp->acts[c]);
	}
	return 0;
}

/* ---- per stage ---- */

static int stage_dp(struct train *t, int64_t s)
{
	const struct bucket *bk = t->stage[s].buckets;
	int64_t i, nb = t->stage[s].nbuckets;
	int kinds = model_is_moe(t->job->model) ? 2 : 1;

	if (t->job->training.zero_stage >= 3)
		return fsdp_stage(t, s, kinds);
	if (t->job->training.zero_stage >= 1 &&
	    t->job->framework->overlap_param_gather) {
		const struct bucket *prev[2] = { NULL, NULL };

		for (i = nb - 1; i >= 0; i--) {
			struct gather_arg g = { &bk[i], NULL, s };

			if (i == nb - 1 || bk[i].chunk != bk[i + 1].chunk)
				prev[0] = prev[1] = NULL;
			g.prev = prev[bk[i].experts];
			prev[bk[i].experts] = &bk[i];
			if (for_groups(t, s, bk[i].experts, gather_one, &g) != 0)
				return -1;
		}
	}
	for (i = 0; i < nb; i++)
		if (for_groups(t, s, bk[i].experts, reduce_one,
			       (void *)&bk[i]) != 0)
			return -1;
	return 0;
}

/* Tied embedding and LM head on different stages: all-reduce their
 * gradient between the first and the last stage; likewise the word
 * embedding the MTP modules' stage holds (train_embed_peer). */
static int tie_embeddings(struct train *t)
{
	const struct layer_dims *d = &t->dims;
	int64_t i;
	uint32_t gpus[2];
	struct coll_desc c = { .op = COLL_ALLREDUCE, .gpus = gpus, .ngpus = 2,
			       .algo = -1, .proto = -1,
			       .replicas = layout_pp_replicas(&t->lay) };
	struct task_info info = { .name = "embedding_grad_allreduce",
				  .cat = TASK_COMM, .layer = -1,
				  .microbatch = -1 };
	int64_t peer = train_embed_peer(t);

	if (peer < 0)
		return 0;
	c.bytes = d->vocab / d->tp * d->hidden * d->grad_B;
	for (i = 0; i < t->lay.sim; i++) {
			uint32_t ranks[2] = {
				layout_rank(&t->lay, 0, i),
				layout_rank(&t->lay, peer, i),
			};
			task_id first;
			uint32_t k;

			gpus[0] = layout_gpu(&t->lay, 0, i);
			gpus[1] = layout_gpu(&t->lay, peer, i);
			c.sm_share = train_sm_share(t, COLL_ALLREDUCE, gpus, 2, 0);
			first = prog_coll(t->prog, ranks, 2, TRAIN_ST_DP, &c, &info);
			if (first == TASK_NONE)
				return -1;
			for (k = 0; k < 2; k++) {
				/* after finish_grad_sync: both chains done */
				if (train_dep(t, train_action_end(t, ranks[k],
					t->stage[0].nacts - 1), first + k) != 0 ||
				    train_dep(t, t->drain_end[ranks[k]],
					      first + k) != 0 ||
				    train_dep(t, t->last_edp[ranks[k]],
					      first + k) != 0)
					return -1;
				t->last_dp[ranks[k]] = first + k;
			}
		}
	return 0;
}

/* The optimizer step of rank r; stage_s[pp] is its time on each
 * pipeline stage. */
static task_id optimizer(struct train *t, uint32_t r, const double *stage_s)
{
	int64_t pp_i, i;
	struct task_info info = { .name = "optimizer", .cat = TASK_OPTIMIZER,
				  .layer = -1, .microbatch = -1 };
	task_id id;

	layout_where(&t->lay, r, &pp_i, &i);
	id = prog_task(t->prog, r, TRAIN_ST_COMPUTE, stage_s[pp_i], &info);
	/* and after the deferred head wgrads (build_drain): the optimizer
	 * runs after forward_backward_func returns */
	if (id == TASK_NONE || train_dep(t, t->last_dp[r], id) != 0 ||
	    train_dep(t, t->last_edp[r], id) != 0 ||
	    train_dep(t, t->drain_end[r], id) != 0)
		return TASK_NONE;
	return id;
}

/* A bucket's all-gather after the optimizer on one group, when it is
 * not overlapped with the next forward. */
static int gather_after_one(struct train *t, uint32_t n, uint32_t size,
			    void *arg)
{
	task_id first = param_gather(t, n, size, arg);
	uint32_t k;

	if (first == TASK_NONE)
		return -1;
	for (k = 0; k < n; k++)
		if (train_dep(t, t->opt[t->ranks[k]], first + k) != 0)
			return -1;
	return 0;
}

static int gather_after(struct train *t)
{
	int64_t s, i;

	for (s = 0; s < t->pp; s++) {
		const struct bucket *bk = t->stage[s].buckets;

		for (i = t->stage[s].nbuckets - 1; i >= 0; i--)
			if (for_groups(t, s, bk[i].experts, gather_after_one,
				       (void *)&bk[i]) != 0)
				return -1;
	}
	return 0;
}

static int overhead(struct train *t, const task_id *opt)
{
	struct task_info info = { .name = "host_overhead", .cat = TASK_OTHER,
				  .layer = -1, .microbatch = -1 };
	double dur = t->job->framework->step_overhead_s;
	uint32_t r;

	if (dur <= 0)
		return 0;
	for (r = 0; r < t->lay.nranks; r++) {
		task_id id = prog_task(t->prog, r, TRAIN_ST_COMPUTE, dur, &info);

		if (id == TASK_NONE || train_dep(t, opt[r], id) != 0)
			return -1;
	}
	return 0;
}

int train_plan_dp(struct train *t)
{
	int64_t s;

	for (s = 0; t->lay.stage > t->lay.tp && s < t->pp; s++)
		if (t->job->training.zero_stage < 3 && plan_buckets(t, s) != 0)
			return -1;
	return 0;
}

int train_build_dp(struct train *t)
{
	const struct job_spec *j = t->job;
	task_id *opt = arena_alloc(&t->arena, t->lay.nranks * sizeof(*opt));
	double *opt_s = arena_alloc(&t->arena, (size_t)t->pp * sizeof(*opt_s));
	int64_t s;
	uint32_t r;

	if (!opt || !opt_s)
		return -1;
	t->opt = opt;
	for (s = 0; t->lay.stage > t->lay.tp && s < t->pp; s++)
		if (stage_dp(t, s) != 0)
			return -1;
	if (tie_embeddings(t) != 0)
		return -1;
	for (s = 0; s < t->pp; s++)	/* the same on every GPU of a stage */
		opt_s[s] = train_optimizer_s(j, &t->dims, t->split, s);
	for (r = 0; r < t->lay.nranks; r++)
		if ((opt[r] = optimizer(t, r, opt_s)) == TASK_NONE)
			return -1;
	if (t->lay.stage > t->lay.tp && j->training.zero_stage >= 1 &&
	    j->training.zero_stage < 3 && !j->framework->overlap_param_gather &&
	    gather_after(t) != 0)
		return -1;
	return overhead(t, opt);
}
