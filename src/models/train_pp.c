/*
 * train_pp.c - activations and gradients between pipeline stages.
 *
 * After each forward of virtual stage vs < S-1 the rank sends its output
 * activation, b s h B bytes (divided by t under SP or scatter/gather,
 * layer.c), to the rank of vs + 1; after each backward
 * of vs > 0 it sends the input gradient of the same size to vs - 1. A
 * transfer is a two-member send/recv collective on the pp_fwd (or pp_bwd)
 * stream of both ranks: it starts when the sender has produced the tensor
 * and the receiver has posted the receive, and the receiver's action
 * waits for it.
 *
 * Streams are in order, so every rank must meet its transfers in the
 * order it needs them: its own action order. Each rank's list of
 * transfers on a stream (receives before the actions that need them,
 * sends after the actions that produce them) is merged with its
 * neighbours' by taking a transfer only when it heads the lists of both
 * ends. On pp_fwd the transfers form a chain 0 -> 1 -> ... -> pp-1 in
 * which every pair of neighbours meets its common transfers in the same
 * (forward) order, so the merge completes; the interleaved schedule's
 * wrap from the last rank to the first (chunk c to c+1) would close the
 * chain into a ring in which two neighbours wait for each other (rank 0
 * sending microbatch 1 while rank pp-1 sends it microbatch 0: Megatron
 * posts both at once), so it has a stream of its own, pp_fwd_wrap. The
 * gradients likewise on pp_bwd and pp_bwd_wrap. Interleaved schedules
 * that are not lock step (split_pairs: Megatron-Core's, whose transfers
 * are lone isend / irecv calls on a stream per pair of ranks) also keep
 * the pairs whose lower rank is odd on streams of their own,
 * pp_fwd_odd and pp_bwd_odd: a rank's transfers with its previous and
 * its next rank do not queue behind each other (each pair's stream
 * still carries its transfers in one order at both ends). Before, a
 * rank's receive for its next forward waited for its send of the last
 * one and, through the neighbour's stream, for the neighbour's sends:
 * Qwen3-235B pp 32 x vpp 3 on H800 (the xtuner rows, extra-cases) took
 * 53.1 s where the same work without virtual stages took 45.6 s (91.2
 * s / 2) and the run measured 43.5 s.
 *
 * Lock step (framework pp_lockstep): torch.distributed.pipelining's
 * ScheduleInterleaved1F1B is a PipelineScheduleMulti (torch <= 2.8,
 * the version NeMo AutoModel's uv.lock pins @ 8d9bfb90e). Its
 * _step_microbatches walks a table of time steps, one action or None a
 * step (_get_1f1b_rank_ops: rank r idles r steps, runs its w warm-up
 * forwards, idles until the earliest step of its first backward,
 * v p + 2 (p - 1 - r), then alternates forward and backward, and in the
 * cool-down a None before each backward), and at every step batches
 * the action's send with the receives of what its neighbours computed
 * in the same step, then waits for the batch (_wait_batch_p2p) before
 * the next step. So a transfer a sender's action at step T makes is
 * posted by the receiver after its own actions up to step T, and both
 * ranks' next actions (after step T) wait for it, whether or not they
 * need the tensor yet. The streams then carry each rank's transfers in
 * step order (the merge still pairs them). Its grouping of microbatches
 * is Megatron's (sched.c) when a run's microbatches are a multiple of
 * pp (microbatches_per_round = pp); otherwise, with the all-to-all
 * overlap's extra warm-up, or another schedule, transfers run as
 * above.
 */
#include <stdlib.h>

#include "base/diag.h"
#include "train_impl.h"

/* A transfer, named by its sender and the sender's action. */
struct xfer {
	uint32_t from;		/* simulated rank that sends */
	uint32_t act;		/* its action producing the tensor */
	int64_t step;		/* lock step: the sender's time step */
};

struct xlist {
	struct xfer *v;		/* this rank's transfers in its order */
	uint32_t n, pos;	/* count; next to create */
};

/* Whether the pipeline runs in lock step (pp_lockstep, above). */
static int lockstep(const struct train *t)
{
	return sched_lockstep(t->job, t->m / job_schedule_runs(t->job));
}

/* Megatron-Core's interleaved schedule overlaps its transfers
 * (overlap_p2p_comm, on by default with virtual stages: megatron/
 * training/arguments.py; batch_p2p_comm = not overlap_p2p_comm) and
 * issues each as its own torch.distributed isend / irecv
 * (p2p_communication.py _p2p_ops). ProcessGroupNCCL runs a lone
 * point-to-point call on a two-rank communicator and stream of its own
 * per pair of ranks (pointToPoint: key getKeySendRecv(rank, peer), the
 * lazy default; Megatron-LM initializes without device_id,
 * megatron/training/initialize.py @ 6a6cd478): the send to the next
 * rank and the receive from the previous one do not queue behind each
 * other. Non-interleaved schedules batch them (batch_isend_irecv: one
 * communicator) and lock-step ones keep their own order. */
static int split_pairs(const struct train *t)
{
	return t->v > 1 && !lockstep(t);
}

/* The time step of pipeline rank s's action a in torch's table
 * (_get_1f1b_rank_ops), each schedule run after the last: w warm-up
 * forwards from step s; the steady state from step
 * max(s + w, v p + 2 (p - 1 - s)) (s when w is 0), a step an action;
 * in the cool-down
 * (its last w actions, backwards) a None before each. */
static int64_t torch_step(const struct train *t, int64_t s, int64_t a)
{
	const struct stage_plan *sp = &t->stage[s];
	int64_t p = t->pp, v = t->v, n = sp->run_acts;

	/* a run's last step is below steady + 2 n <= v p + 2 p + 2 n */
	return a / n * (v * p + 2 * p + 2 * n) +
	       sched_lock_step(p, v, n, sp->warmup, s, a % n);
}

/* The first of rank r's actions after time step T (nacts if none). */
static int64_t after_step(const struct train *t, uint32_t r, int64_t T)
{
	int64_t pp_i, i, lo = 0, hi;

	layout_where(&t->lay, r, &pp_i, &i);
	hi = t->stage[pp_i].nacts;
	while (lo < hi) {
		int64_t mid = lo + (hi - lo) / 2;

		if (torch_step(t, pp_i, mid) > T)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Task `before` ahead of rank r's action a (none past the last). */
static int before_action(struct train *t, task_id before, uint32_t r,
			 int64_t a)
{
	int64_t pp_i, i;
	struct unit_rec *rec;
	uint32_t k;

	layout_where(&t->lay, r, &pp_i, &i);
	if (a >= t->stage[pp_i].nacts)
		return 0;
	rec = train_unit(t, r, (uint32_t)a, 0);
	for (k = 0; k < rec->nfirst; k++)
		if (train_dep(t, before, rec->first[k]) != 0)
			return -1;
	return 0;
}

/* The virtual stage a transfer of direction dir goes to from vs. */
static int64_t target_vs(int dir, int64_t vs)
{
	return dir == 0 ? vs + 1 : vs - 1;
}

/* (rank, action) of the peer of rank r's action act on stage vs. */
static void peer(const struct train *t, uint32_t r, int bwd, uint32_t mb,
		 int64_t peer_vs, uint32_t *pr, uint32_t *pa)
{
	int64_t pp_i, i, ps = peer_vs % t->pp, pc = peer_vs / t->pp;

	layout_where(&t->lay, r, &pp_i, &i);
	*pr = layout_rank(&t->lay, ps, i);
	*pa = (uint32_t)t->stage[ps].lookup[((int64_t)bwd * t->v + pc) * t->m + mb];
}

/* Whether the transfer of direction dir from virtual stage vs goes
 * between the last and the first rank (the interleaved wrap). */
static int is_wrap(const struct train *t, int dir, int64_t from_vs)
{
	int64_t from = from_vs % t->pp;

	return dir == 0 ? from == t->pp - 1 : from == 0;
}

/* The stream lane of a transfer of direction dir from virtual stage
 * from_vs: 1 the interleaved wrap; 2 a pair of neighbours whose lower
 * pipeline rank is odd, when the schedule's transfers are point-to-point
 * calls of their own (split_pairs); 0 the others. */
static int split_pairs(const struct train *t);

static int lane_of(const struct train *t, int dir, int64_t from_vs)
{
	int64_t from = from_vs % t->pp, lower = dir == 0 ? from : from - 1;

	if (is_wrap(t, dir, from_vs))
		return 1;
	return split_pairs(t) && (lower & 1) ? 2 : 0;
}

static int in_range(const struct train *t, int64_t vs)
{
	return vs >= 0 && vs < t->stages;
}

/* Rank r's transfers of direction dir (0: activations forward, 1:
 * gradients backward) on the wrap stream or not, into l (NULL: count
 * only). */
static uint32_t list_rank(const struct train *t, uint32_t r, int dir,
			  int wrap, struct xfer *l)
{
	int64_t pp_i, i, a;
	uint32_t n = 0;
	const struct stage_plan *sp;

	layout_where(&t->lay, r, &pp_i, &i);
	sp = &t->stage[pp_i];
	for (a = 0; a < sp->nacts; a++) {
		struct sched_action act = sp->acts[a];
		int64_t vs = train_vs(t, pp_i, act.chunk);
		int64_t from_vs = dir == 0 ? vs - 1 : vs + 1;

		if (act.bwd != dir)
			continue;
		if (in_range(t, from_vs) && lane_of(t, dir, from_vs) == wrap) {
			if (l) {	/* receive */
				peer(t, r, dir, act.mb, from_vs, &l[n].from,
				     &l[n].act);
				l[n].step = torch_step(t, from_vs % t->pp,
						       l[n].act);
			}
			n++;
		}
		if (in_range(t, target_vs(dir, vs)) && lane_of(t, dir, vs) == wrap) {
			if (l)
				l[n] = (struct xfer){ r, (uint32_t)a,
						      torch_step(t, pp_i, a) };
			n++;
		}
	}
	return n;
}

static uint32_t stream(int dir, int wrap)
{
	if (wrap == 2)
		return dir == 0 ? TRAIN_ST_PP_FWD_ODD : TRAIN_ST_PP_BWD_ODD;
	if (wrap)
		return dir == 0 ? TRAIN_ST_PP_FWD_WRAP : TRAIN_ST_PP_BWD_WRAP;
	return dir == 0 ? TRAIN_ST_PP_FWD : TRAIN_ST_PP_BWD;
}

/* Create transfer x (direction dir): its task on both ranks, after the
 * sender's action, before the receiver's. */
static int make_xfer(struct train *t, int dir, int wrap, struct xfer x,
		     uint32_t to, uint32_t to_act)
{
	double bytes = layer_pp_bytes(&t->dims);
	int64_t pp_i, si, vs;
	struct unit_rec *rec = train_unit(t, to, to_act, 0);
	uint32_t ranks[2] = { x.from, to }, gpus[2], i;
	struct coll_desc c = { .op = COLL_SENDRECV, .bytes = bytes, .gpus = gpus,
			       .ngpus = 2, .algo = -1, .proto = -1,
			       .replicas = layout_pp_replicas(&t->lay) };
	struct task_info info = {
		.name = dir == 0 ? "pp_send_activation" : "pp_send_gradient",
		.cat = TASK_COMM, .layer = -1,
	};
	task_id first;

	for (i = 0; i < 2; i++) {
		layout_where(&t->lay, ranks[i], &pp_i, &si);
		gpus[i] = layout_gpu(&t->lay, pp_i, si);
	}
	/* From an MTP stage of its own on, the activation (and its
	 * gradient) is the main hidden state with each MTP module's
	 * concatenated along the sequence (Megatron MultiTokenPredictionBlock
	 * torch.cat; process_mtp_loss chunks it into 1 + mtp) */
	layout_where(&t->lay, x.from, &pp_i, &si);
	vs = train_vs(t, pp_i, t->stage[pp_i].acts[x.act].chunk);
	if (t->mtp_alone && (dir == 0 ? vs : vs - 1) >= t->mtp_stage)
		c.bytes = bytes * (double)(1 + t->mtp);
	layout_where(&t->lay, to, &pp_i, &si);
	info.microbatch = (int32_t)t->stage[pp_i].acts[to_act].mb;
	c.sm_share = train_sm_share(t, COLL_SENDRECV, gpus, 2, 0);
	first = prog_coll(t->prog, ranks, 2, stream(dir, wrap), &c, &info);
	if (first == TASK_NONE ||
	    train_dep(t, train_send_after(t, x.from, x.act), first) != 0)
		return -1;
	if (t->pp_send)		/* the sender's end (train_dp.c) */
		t->pp_send[x.from][x.act] = first;
	/* a device sync after the batched send/recv: the sender's host
	 * before its next action, the receiver's before this one */
	if (train_dep(t, first, train_p2p_sync(t, x.from, (int64_t)x.act + 1)) != 0 ||
	    train_dep(t, first + 1, train_p2p_sync(t, to, to_act)) != 0)
		return -1;
	for (i = 0; i < rec->nfirst; i++)
		if (train_dep(t, first + 1, rec->first[i]) != 0)
			return -1;
	if (lockstep(t)) {	/* the receiver posts it after its actions
				 * up to the sender's step; both ranks' next
				 * actions wait for it */
		int64_t b = after_step(t, to, x.step);

		if (b > 0 && train_dep(t, train_action_end(t, to, b - 1),
				       first + 1) != 0)
			return -1;
		if (before_action(t, first + 1, to, b) != 0 ||
		    before_action(t, first, x.from, (int64_t)x.act + 1) != 0)
			return -1;
	}
	return 0;
}

/* Where transfer x of direction dir goes. */
static void destination(const struct train *t, int dir, struct xfer x,
			uint32_t *to, uint32_t *to_act)
{
	int64_t pp_i, i;
	struct sched_action act;

	layout_where(&t->lay, x.from, &pp_i, &i);
	act = t->stage[pp_i].acts[x.act];
	peer(t, x.from, dir, act.mb,
	     target_vs(dir, train_vs(t, pp_i, act.chunk)), to, to_act);
}

static int same(struct xfer a, struct xfer b)
{
	return a.from == b.from && a.act == b.act;
}

/* Create every transfer heading rank r's list whose other end is ready;
 * push the other ends that advanced onto the stack. */
static int advance(struct train *t, int dir, int wrap, struct xlist *lists,
		   uint32_t r, uint32_t *stack, uint32_t *top, uint8_t *queued)
{
	struct xlist *me = &lists[r];

	while (me->pos < me->n) {
		struct xfer x = me->v[me->pos];
		uint32_t to, to_act, other;

		destination(t, dir, x, &to, &to_act);
		other = x.from == r ? to : x.from;
		if (lists[other].pos >= lists[other].n ||
		    !same(lists[other].v[lists[other].pos], x))
			return 0;
		if (make_xfer(t, dir, wrap, x, to, to_act) != 0)
			return -1;
		me->pos++;
		lists[other].pos++;
		if (!queued[other]) {
			queued[other] = 1;
			stack[(*top)++] = other;
		}
	}
	return 0;
}

static int merge(struct train *t, int dir, int wrap, struct xlist *lists)
{
	uint32_t n = t->lay.nranks, top = 0, r;
	uint32_t *stack = arena_alloc(&t->arena, n * sizeof(*stack));
	uint8_t *queued = arena_alloc(&t->arena, n);

	if (!stack || !queued)
		return -1;
	for (r = 0; r < n; r++) {
		stack[top++] = n - 1 - r;
		queued[n - 1 - r] = 1;
	}
	while (top > 0) {
		r = stack[--top];
		queued[r] = 0;
		if (advance(t, dir, wrap, lists, r, stack, &top, queued) != 0)
			return -1;
	}
	for (r = 0; r < n; r++)
		if (lists[r].pos != lists[r].n)
			BUG("pipeline transfers admit no stream order");
	return 0;
}

/* Lock step: a rank's transfers in time-step order (ties by sender and
 * action, the same order at both ends). */
static int by_step(const void *pa, const void *pb)
{
	const struct xfer *a = pa, *b = pb;

	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	if (a->from != b->from)
		return a->from < b->from ? -1 : 1;
	return a->act < b->act ? -1 : a->act > b->act;
}

/* The transfers of one direction on one stream. */
static int build_stream(struct train *t, int dir, int wrap)
{
	uint32_t r, n = t->lay.nranks;
	struct xlist *lists = arena_alloc(&t->arena, n * sizeof(*lists));

	if (!lists)
		return -1;
	for (r = 0; r < n; r++) {
		lists[r].n = list_rank(t, r, dir, wrap, NULL);
		lists[r].v = arena_alloc(&t->arena,
					 (lists[r].n + 1) * sizeof(*lists[r].v));
		if (!lists[r].v)
			return -1;
		list_rank(t, r, dir, wrap, lists[r].v);
		if (lockstep(t))
			qsort(lists[r].v, lists[r].n, sizeof(*lists[r].v),
			      by_step);
	}
	return merge(t, dir, wrap, lists);
}

int train_build_pp(struct train *t)
{
	int dir, wrap;

	if (t->stages < 2)
		return 0;
	if (t->job->training.zero_stage >= 3 &&
	    train_alloc_actions(t, &t->pp_send) != 0)
		return -1;
	for (dir = 0; dir < 2; dir++)
		for (wrap = 0; wrap < 3; wrap++)
			if (build_stream(t, dir, wrap) != 0)
				return -1;
	return 0;
}
