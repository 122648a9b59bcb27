/*
 * exec_run.c - executing a step program on the event engine.
 *
 * Every task waits on a counter: its dependencies plus one for its stream
 * predecessor (so "heads its stream" is just another dependency). When a
 * task finishes, the counters of its stream successor and its dependents
 * drop; one that reaches zero is ready:
 *
 *   plain task        ends dur ns later (one engine event; at once if 0)
 *   collective member arrives; when the last member arrives the collective
 *                     starts (comm_ops.start) and every member finishes
 *                     when the backend calls done
 *
 * Finished tasks are appended to a work queue (a ring) of tasks whose
 * successors are still to be released; releasing never recurses, however
 * long a chain of zero-time tasks.
 *
 * Causes for the critical path (rule in exec_path.c) are recorded as the
 * run goes: a task finishing now offers itself to each task it releases;
 * an earlier offer is replaced by a later one, and among offers at the
 * same time the tie rule picks. A collective's members take their causes
 * when the last one arrives.
 *
 * Engine events carry a pointer to a lane record (a lane runs one task at
 * a time, so the lane knows which task ended) or to a collective record:
 * no per-task allocation.
 *
 * Interference (exec.h): a lane running a compute or optimizer task keeps
 * the work it has left at full speed, w (ns), and its rate x. When the
 * compute share taken by running collectives on its rank changes at time
 * t, w -= (t - t_last) * x, x = max(0, 1 - S), and the end event moves
 * to t + ceil(w / x); at x = 0 (the collectives hold every unit) the task
 * makes no progress and has no end event until a collective ends. At
 * x = 1 the end is exactly start + dur. Everything is deterministic: the order of work
 * depends only on the program and the engine's (time, sequence) order.
 *
 * Variability (exec_jitter.c): with prog_set_jitter, a collective whose
 * last member arrived starts after the expected wait for its slowest
 * GPU (counted from the compute that feeds it, so a chain of buckets
 * backed up on a stream pays it once); compute tasks feed the members'
 * lateness as they end.
 */
#include "exec_run.h"

#include "base/diag.h"
#include "base/mem.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The run collective cr belongs to (the backend's token is cr). */
static struct run *run_of(const struct coll_run *cr)
{
	return exec_run_of(cr);
}


const char *const exec_part_keys[EXEC_PART_COUNT] = {
	"compute_s", "exposed_comm_s", "bubble_s", "optimizer_s", "other_s",
};

const char *const exec_part_labels[EXEC_PART_COUNT] = {
	"compute", "exposed communication", "pipeline bubble", "optimizer",
	"other",
};

/* Enter an engine event: the clock of the run. */
static void tick(struct run *r)
{
	r->now = sim_now(r->sim) - r->t0;
}

/* Queue t, finished, for release; out of memory stops the run (the
 * engine's sticky failure reports it). */
static void finish(struct run *r, task_id t)
{
	if (r->qlen == r->qcap) {
		uint32_t ncap = r->qcap * 2, i;
		uint32_t *nq = mem_alloc((size_t)ncap * sizeof(*nq));

		if (!nq) {
			r->failed = 1;
			sim_stop(r->sim);
			return;
		}
		for (i = 0; i < r->qlen; i++)
			nq[i] = r->queue[(r->qhead + i) & (r->qcap - 1)];
		mem_free(r->queue);
		r->queue = nq;
		r->qhead = 0;
		r->qcap = ncap;
	}
	r->queue[(r->qhead + r->qlen++) & (r->qcap - 1)] = t;
	/* The critical-path bitmap marks finished tasks while running (for
	 * exec_run_diagnose()); it is cleared before the path is marked. */
	r->p->critical[t / 64] |= (uint64_t)1 << (t % 64);
	if (++r->nfinished % PROG_PROGRESS_TASKS == 0 && r->p->progress)
		r->p->progress(r->p->progress_arg, r->nfinished, r->p->ntasks,
			       units_ns_to_s(r->now));
}

static void lane_end(struct sim *sim, void *arg);
static void coll_done(void *token);
static void coll_finish(struct run *r, uint32_t k);
static void release(struct run *r);

/* 1 if a is a better cause than b (both finished at the same time) for a
 * task on rank: the same rank first, then the lower id. */
static int better(const struct prog *p, task_id a, task_id b, uint32_t rank)
{
	int a_same = task_rank(p, a) == rank, b_same = task_rank(p, b) == rank;

	if (a_same != b_same)
		return a_same;
	return a < b;
}

/* c finished now and releases s. Until s is ready its stamp holds when
 * its cause ended (every task released in one event ended at that
 * event's time), so the choice reads s's record only. */
static void offer(struct run *r, task_id c, task_id s)
{
	struct pstate *st = &r->p->state[s];

	if (st->cause == TASK_NONE || st->stamp < r->now ||
	    better(r->p, c, st->cause, task_rank(r->p, s))) {
		st->cause = c;
		st->stamp = r->now;
	}
}

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Candidates short enough to scan rather than sort. */
#define CAND_SCAN 8

/* The lowest-id candidate on rank in cand[0..n-1] (sorted by rank, id
 * when n > CAND_SCAN), or dflt. */
static task_id pick_for_rank(const struct cand *cand, uint32_t n,
			     uint32_t rank, task_id dflt)
{
	uint32_t lo = 0, hi = n;
	task_id best = TASK_NONE;

	if (n <= CAND_SCAN) {
		for (lo = 0; lo < n; lo++)
			if (cand[lo].rank == rank && cand[lo].id < best)
				best = cand[lo].id;
		return best != TASK_NONE ? best : dflt;
	}

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (cand[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && cand[lo].rank == rank ? cand[lo].id : dflt;
}

/* The last member of collective pc arrived now: each member's cause
 * becomes the cause of a member that arrived now - one on the member's
 * own rank if there is one, else the lowest id. */
static void coll_causes(struct run *r, const struct pcoll *pc)
{
	const struct prog *p = r->p;
	task_id dflt = TASK_NONE;
	uint32_t n = 0, i;

	for (i = 0; i < pc->n; i++) {
		task_id c = p->state[pc->first + i].cause;

		if (p->state[pc->first + i].stamp != r->now || c == TASK_NONE)
			continue;
		r->cand[n].rank = task_rank(p, c);
		r->cand[n++].id = c;
		if (c < dflt)
			dflt = c;
	}
	if (n > CAND_SCAN)
		qsort(r->cand, n, sizeof(*r->cand), cand_cmp);
	for (i = 0; i < pc->n; i++)
		p->state[pc->first + i].cause = pick_for_rank(r->cand, n,
			task_rank(p, pc->first + i), dflt);
}

/* Speed of compute on rank now. */
static double rank_rate(const struct run *r, uint32_t rank)
{
	const struct rank_load *l = &r->load[rank];

	if (l->n == 0)
		return 1.0;
	return l->share < 1.0 ? 1.0 - l->share : 0.0;
}

double exec_owned_slowdown(double s, double h)
{
	double f;

	if (!(s > 0))
		return 1.0;	/* nothing held: every CTA starts */
	if (!(s < 1.0))
		return INFINITY;
	f = 1.0 / (1.0 - s);
	return h > 0 ? f + h * fmax(0.0, 2.0 - f) : f;
}

/* The rate of task t on its rank now: rank_rate's 1 - S, or for a
 * persistent GEMM whose CTAs own a share h of its work (pkind.owned)
 * 1 / f with f = exec_owned_slowdown(S, h) (exec.h). */
static double task_rate(const struct run *r, task_id t)
{
	const struct prog *p = r->p;
	double x = rank_rate(r, task_rank(p, t));
	double h = p->kinds[p->task[t].kind].owned;

	if (!(h > 0) || x >= 1.0 || !(x > 0) ||
	    !(r->load[task_rank(p, t)].held > 0))
		return x;
	return 1.0 / exec_owned_slowdown(r->load[task_rank(p, t)].share, h);
}

/* Task t would end dt ns from now, past the engine's horizon: stop the
 * run with the reason (exec_run returns -1). */
static void too_long(struct run *r, task_id t)
{
	char what[200];

	if (r->too_long)
		return;
	r->too_long = 1;
	exec_describe_task(r->p, t, what, sizeof(what));
	snprintf(r->p->why, sizeof(r->p->why), "the step is longer than the "
		 "engine represents (2^62 ns, about 146 years): task %s would "
		 "end past it", what);
	sim_stop(r->sim);
}

/* Schedule the end of the task on lane l dt ns from now, at most the
 * horizon. */
static void lane_end_after(struct run *r, struct lane_run *l, units_ns_t dt)
{
	units_ns_t at;

	if (units_ns_add(sim_now(r->sim), dt, &at) != 0) {
		l->ev = 0;
		too_long(r, l->cur);
		return;
	}
	l->ev = sim_at(r->sim, at, lane_end, l);
}

/* (Re)schedule the end of the task running on lane l at its rate; none
 * while the rate is 0 (rank_rerate() schedules it when the rate rises). */
static void lane_schedule(struct run *r, struct lane_run *l)
{
	double d;
	units_ns_t dt;

	if (l->rate <= 0) {
		l->ev = 0;
		return;
	}
	d = ceil(l->left_ns / l->rate);
	if (!(d <= (double)UNITS_NS_MAX))
		dt = UNITS_NS_MAX + 1;	/* refused by lane_end_after */
	else
		dt = d > 0 ? (units_ns_t)d : 0;
	lane_end_after(r, l, dt);
}

/* Set (on) or clear the bit of lane l's stream in its rank's slowable
 * set. */
static void slow_bit(struct run *r, const struct lane_run *l, int on)
{
	uint32_t lane = (uint32_t)(l - r->lanes);
	uint32_t s = lane_stream(r->p, lane);
	uint64_t *bits = &r->load[lane_rank(r->p, lane)].slow;

	exec_crate_slow(r, lane_rank(r->p, lane), on);
	if (s >= 64)
		return;
	if (on)
		*bits |= (uint64_t)1 << s;
	else
		*bits &= ~((uint64_t)1 << s);
}

/* Compute task t ended: its work (at full speed) adds lateness. Counted
 * when done, so a rendezvous sees exactly the work finished before it,
 * however same-time events are ordered. */
static void jit_compute(struct run *r, struct lane_run *l, task_id t)
{
	const struct prog *p = r->p;

	exec_jit_compute(&r->jit, task_rank(p, t),
			 prog_task_tag_near(p, t, &l->tag_hint)->microbatch,
			 units_ns_to_s(p->kinds[p->task[t].kind].dur));
}

/* Whether successor s of member m (on rank) goes on from the member's
 * result on its rank: a compute or optimizer task, or a collective on
 * another stream (that compute then waits for). */
static int gates(const struct prog *p, task_id m, task_id s, uint32_t rank)
{
	enum task_cat cat = task_cat(p, s);

	if (task_rank(p, s) != rank)
		return 0;
	return !(p->task[s].kind & KIND_COLL) ?
	       cat == TASK_COMPUTE || cat == TASK_OPTIMIZER :
	       p->task[s].lane != p->task[m].lane;
}

/* Whether a successor of task x goes on from member m's result on its
 * rank (gates). */
static int succ_gates(const struct prog *p, task_id m, task_id x,
		      uint32_t rank)
{
	task_id s1 = p->succ1[x];
	uint32_t e, lo = 0, hi = 0;

	if (s1 != TASK_NONE && (s1 & KIND_COLL)) {
		lo = p->more_off[s1 & ~KIND_COLL];
		hi = p->more_off[(s1 & ~KIND_COLL) + 1];
		s1 = TASK_NONE;
	}
	if (s1 != TASK_NONE && gates(p, m, s1, rank))
		return 1;
	for (e = lo; e < hi; e++)
		if (gates(p, m, p->more[e], rank))
			return 1;
	return 0;
}

/* Collective pc ended: a member whose rank goes on from its result (a
 * compute or optimizer task depends on the member, or another collective
 * on another stream that compute then waits for: a received activation
 * all-gathered over TP) waited for the group and carries its lateness
 * from now on. So does one whose stream successor is a zero-time task
 * that such work waits for: a launch mark (the next collective's start
 * with one hardware queue, src/models/train_queue.c), which the member's
 * end releases. */
static void jit_realign(struct run *r, const struct pcoll *pc)
{
	const struct prog *p = r->p;
	uint32_t i, k = (uint32_t)(pc - p->colls);

	for (i = 0; i < pc->n; i++) {
		task_id m = pc->first + i, nx = p->task[m].next;
		uint32_t rank = task_rank(p, m);
		int hit = succ_gates(p, m, m, rank);

		if (!hit && nx != TASK_NONE && !(p->task[nx].kind & KIND_COLL) &&
		    p->kinds[p->task[nx].kind].dur == 0)
			hit = succ_gates(p, m, nx, rank);
		if (hit && exec_jit_realign(&r->jit, rank, r->group_key[k],
					    coll_desc_of(p, k)->ngpus) != 0)
			r->jit_failed = 1;
	}
}

/* Task t of dur ns starts on lane l. */
static void lane_start(struct run *r, struct lane_run *l, task_id t,
		       int64_t dur)
{
	enum task_cat cat = task_cat(r->p, t);

	l->cur = t;
	l->start = r->now;
	l->dur = dur;
	l->left_ns = (double)dur;
	l->since = r->now;
	l->slowable = cat == TASK_COMPUTE || cat == TASK_OPTIMIZER;
	if (l->slowable)
		slow_bit(r, l, 1);
	l->pers = l->slowable && r->p->kinds[r->p->task[t].kind].owned > 0;
	if (l->pers) {
		struct rank_load *ld = &r->load[task_rank(r->p, t)];

		ld->npers++;
		ld->pers_t = r->now;
	}
	l->rate = l->slowable ? task_rate(r, t) : 1.0;
	if (l->rate == 1.0) {
		/* Exactly dur: no rounding through the rate. */
		lane_end_after(r, l, dur);
		return;
	}
	lane_schedule(r, l);
}

/* The compute share on rank changed: move the ends of its running
 * compute tasks. */
/* Lane l's task now runs at rate x: bring its work left up to date and
 * move its end. */
static void rerate_lane(struct run *r, struct lane_run *l)
{
	double x;

	if (l->cur == TASK_NONE || !l->slowable)
		return;
	x = task_rate(r, l->cur);
	if (l->rate == x)
		return;
	l->left_ns -= (double)(r->now - l->since) * l->rate;
	if (l->left_ns < 0)
		l->left_ns = 0;
	l->since = r->now;
	l->rate = x;
	sim_cancel(r->sim, l->ev);
	lane_schedule(r, l);
}

static void rank_rerate(struct run *r, uint32_t rank)
{
	const struct prog *p = r->p;
	struct lane_run *lanes = &r->lanes[rank * p->nstreams];
	uint64_t bits;
	uint32_t s;

	/* The streams running a slowable task, a bit each (streams past 63
	 * are looked at every time). */
	for (bits = r->load[rank].slow; bits; bits &= bits - 1)
		rerate_lane(r, &lanes[__builtin_ctzll(bits)]);
	for (s = 64; s < p->nstreams; s++)
		rerate_lane(r, &lanes[s]);
}

/* Collective pc starts (on = 1) or ends (on = 0): its compute share is
 * taken from, or given back to, each member rank. */
static void coll_load(struct run *r, const struct pcoll *pc, int on)
{
	const struct coll_desc *desc = &r->p->descs[pc->desc];
	uint32_t i;

	if (!(desc->sm_share > 0))
		return;
	for (i = 0; i < pc->n; i++) {
		uint32_t rank = task_rank(r->p, pc->first + i);
		struct rank_load *l = &r->load[rank];

		double held = desc->sm_margin ? 0 : desc->sm_share;

		if (on) {
			l->share += desc->sm_share;
			l->held += held;
			l->n++;
		} else if (--l->n == 0) {
			l->share = 0;	/* no drift once all have ended */
			l->held = 0;
		} else {
			l->share -= desc->sm_share;
			l->held -= held;
			if (l->held < 1e-12)
				l->held = 0;
		}
		rank_rerate(r, rank);
	}
}

/* The expected wait (ns) of collective pc for its slowest GPU. The
 * lateness is in the members' compute: it delays the collective past the
 * end of the compute that feeds it (jit_feed), and a member that arrived
 * later than that (its stream was still busy with earlier collectives)
 * has already absorbed that much of it. One no compute feeds waits from
 * its members' last compute. */
static units_ns_t coll_wait_ns(struct run *r, const struct pcoll *pc)
{
	units_ns_t ready_ns = 0, wait;
	uint32_t i;
	double s;

	if (!r->jit.on)
		return 0;
	if (r->coll_late[pc - r->p->colls] >= 0) {
		wait = r->coll_late[pc - r->p->colls] - r->now;
		return wait > 0 ? wait : 0;
	}
	for (i = 0; i < pc->n; i++) {
		r->jit_ranks[i] = task_rank(r->p, pc->first + i);
		if (r->compute_end[r->jit_ranks[i]] > ready_ns)
			ready_ns = r->compute_end[r->jit_ranks[i]];
	}
	if (exec_jit_rendezvous(&r->jit, r->jit_ranks, pc->n,
				r->group_key[pc - r->p->colls],
				coll_desc_of(r->p, (uint32_t)(pc - r->p->colls))->ngpus,
				&s) != 0) {
		r->jit_failed = 1;
		return 0;
	}
	/* Past the engine's horizon: stop the run (too_long), start now. */
	if (units_ns_add(ready_ns, units_s_to_ns_sat(s), &wait) != 0) {
		too_long(r, pc->first);
		return 0;
	}
	wait -= r->now;
	return wait > 0 ? wait : 0;
}

/* Collective cr starts now. */
static void coll_go(struct run *r, struct coll_run *cr)
{
	struct prog *p = r->p;

	cr->state = 1;
	p->coll_time[cr->k].start_ns = r->now;
	coll_load(r, &p->colls[cr->k], 1);
	exec_crate_start(r, cr->k);
	if (r->desc_memo)
		r->ops->start_memo(r->ctx, coll_desc_of(p, cr->k),
				   &r->desc_memo[p->colls[cr->k].desc],
				   coll_done, cr);
	else
		r->ops->start(r->ctx, coll_desc_of(p, cr->k), coll_done, cr);
}

/* Persistent GEMMs running on rank that started before at. */
static uint32_t pers_before(const struct run *r, uint32_t rank, units_ns_t at)
{
	const struct lane_run *l = &r->lanes[(size_t)rank * r->p->nstreams];
	uint32_t s, n = 0;

	for (s = 0; s < r->p->nstreams; s++)
		n += l[s].pers && l[s].start < at;
	return n;
}

/* Launch order (exec.h): whether collective cr, ready now, must wait
 * for persistent GEMMs running on its member ranks (it holds units and
 * their CTAs hold every SM): on a member's rank, those that started
 * before the member arrived (its kernel was launched while they ran;
 * one launched later, or the same instant, started beside it). If so it
 * joins each such rank's wait list with the count of those GEMMs
 * (unblock() counts them down: one launched after the member, on
 * another stream, is not waited for), cr->arrived counts the ranks (all
 * members have arrived: it is free) and p->sm_wait keeps when it became
 * ready. */
static int coll_blocked(struct run *r, struct coll_run *cr)
{
	struct prog *p = r->p;
	const struct pcoll *pc = &p->colls[cr->k];
	const struct coll_desc *d = &p->descs[pc->desc];
	uint32_t i;

	if (!(d->sm_share > 0) || d->sm_margin)
		return 0;
	cr->arrived = 0;	/* from here: the ranks it waits for */
	for (i = 0; i < pc->n; i++) {
		struct rank_load *l = &r->load[task_rank(p, pc->first + i)];

		/* a GEMM launched at or after the member's arrival found
		 * its kernel there (or raced it, the same instant): the
		 * kernel holds its SMs, the GEMM started beside it */
		if (l->npers == 0 || l->pers_t >= p->state[pc->first + i].stamp)
			continue;
		if (l->nwait == l->capwait) {
			uint32_t ncap = l->capwait ? 2 * l->capwait : 4;
			struct pers_wait *nw = mem_realloc(l->wait,
							   ncap * sizeof(*nw));

			if (!nw) {
				r->failed = 1;
				sim_stop(r->sim);
				return 0;
			}
			l->wait = nw;
			l->capwait = ncap;
		}
		l->wait[l->nwait].k = cr->k;
		l->wait[l->nwait].at = p->state[pc->first + i].stamp;
		l->wait[l->nwait++].left = pers_before(r,
			task_rank(p, pc->first + i),
			p->state[pc->first + i].stamp);
		cr->arrived++;
	}
	if (cr->arrived == 0) {
		cr->arrived = pc->n;
		return 0;
	}
	if (!p->sm_wait &&
	    !(p->sm_wait = mem_calloc(p->ncolls, sizeof(*p->sm_wait)))) {
		r->failed = 1;
		sim_stop(r->sim);
		return 0;
	}
	p->sm_wait[cr->k] = r->now;
	return 1;
}

/* Persistent GEMM t, started at start on rank, ended now: the
 * collectives whose member there arrived after start count it off; those
 * it was the last of on every rank they wait on start, in the order they
 * became ready, before anything t releases (the next GEMM on its stream
 * then starts beside them). Their members' critical-path cause is t. */
static void unblock(struct run *r, uint32_t rank, task_id t, units_ns_t start)
{
	struct prog *p = r->p;
	struct rank_load *l = &r->load[rank];
	uint32_t i, j, n = l->nwait, kept = 0;
	int was = r->draining;

	r->draining = 1;	/* a backend done at once releases later */
	for (i = 0; i < n; i++) {
		struct pers_wait w = l->wait[i];
		struct coll_run *cr = &r->colls[w.k];
		const struct pcoll *pc = &p->colls[cr->k];

		if (w.at <= start || --w.left > 0) {
			l->wait[kept++] = w;
			continue;
		}
		if (--cr->arrived > 0)
			continue;
		cr->arrived = pc->n;
		p->sm_wait[cr->k] = r->now - p->sm_wait[cr->k];
		for (j = 0; j < pc->n; j++)
			p->state[pc->first + j].cause = t;
		coll_go(r, cr);
	}
	/* coll_go adds nothing to the list (draining: nothing becomes
	 * ready, so nothing joins it, until this returns) */
	if (l->nwait != n)
		BUG("exec: a wait list grew while it was counted down");
	l->nwait = kept;
	r->draining = was;
}

/* Collective cr is ready now: it starts, unless it must wait for a
 * persistent GEMM (then unblock() starts it). */
static void coll_try(struct run *r, struct coll_run *cr)
{
	if (!coll_blocked(r, cr))
		coll_go(r, cr);
}

static void coll_go_event(struct sim *sim, void *arg)
{
	struct coll_run *cr = arg;

	(void)sim;
	tick(run_of(cr));
	coll_try(run_of(cr), cr);
	release(run_of(cr));
}

/* Task t has no unfinished predecessor. */
static void ready(struct run *r, task_id t)
{
	struct prog *p = r->p;
	uint32_t kind = p->task[t].kind;
	struct coll_run *cr;
	units_ns_t wait;

	if (!(kind & KIND_COLL)) {
		int64_t dur = p->kinds[kind].dur;

		if (dur == 0) {
			p->state[t].stamp = r->now;
			p->state[t].aux = 0;	/* no stretch */
			finish(r, t);
			return;
		}
		lane_start(r, &r->lanes[p->task[t].lane], t, dur);
		return;
	}
	p->state[t].stamp = r->now;
	cr = &r->colls[kind & ~KIND_COLL];
	if (++cr->arrived < p->colls[cr->k].n)
		return;
	coll_causes(r, &p->colls[cr->k]);
	wait = coll_wait_ns(r, &p->colls[cr->k]);
	if (wait > 0) {		/* the slowest GPU is not here yet */
		units_ns_t at;

		if (units_ns_add(sim_now(r->sim), wait, &at) != 0) {
			too_long(r, r->p->colls[cr->k].first);
			return;
		}
		sim_at(r->sim, at, coll_go_event, cr);
		return;
	}
	coll_try(r, cr);
}

/* Compute task c fed collective member s on its rank: when the group's
 * slowest GPU is expected out of that compute (its end on the schedule
 * plus the expected maximum lateness of the members then). */
static void jit_feed(struct run *r, task_id c, task_id s)
{
	const struct prog *p = r->p;
	uint32_t rank = task_rank(p, s), k = p->task[s].kind & ~KIND_COLL;
	enum task_cat cat;
	units_ns_t late;
	double sec;

	if (p->task[c].kind & KIND_COLL || task_rank(p, c) != rank)
		return;
	cat = task_cat(p, c);
	if (cat != TASK_COMPUTE && cat != TASK_OPTIMIZER)
		return;
	if (exec_jit_rendezvous(&r->jit, &rank, 1, r->group_key[k],
				coll_desc_of(p, k)->ngpus, &sec) != 0) {
		r->jit_failed = 1;
		return;
	}
	/* Past the engine's horizon: stop the run (too_long). */
	if (units_ns_add(r->compute_end[rank], units_s_to_ns_sat(sec),
			 &late) != 0) {
		too_long(r, s);
		return;
	}
	if (late > r->coll_late[k])
		r->coll_late[k] = late;
}

static void release_one(struct run *r, task_id c, task_id s)
{
	__builtin_prefetch(&r->p->task[s]);
	offer(r, c, s);
	if (r->jit.on && (r->p->task[s].kind & KIND_COLL))
		jit_feed(r, c, s);
	if (--r->p->state[s].aux == 0)
		ready(r, s);
}

/* Release the successors of every finished task not yet released. Safe to
 * call from inside itself (a backend that calls done from start): the
 * outer call does the work. */
static void release(struct run *r)
{
	const struct prog *p = r->p;

	if (r->draining)
		return;
	r->draining = 1;
	while (r->qlen > 0) {
		task_id t = r->queue[r->qhead], s1;
		uint32_t e, lo = 0, hi = 0;

		r->qhead = (r->qhead + 1) & (r->qcap - 1);
		r->qlen--;
		s1 = p->succ1[t];
		if (s1 != TASK_NONE && (s1 & KIND_COLL)) {
			lo = p->more_off[s1 & ~KIND_COLL];
			hi = p->more_off[(s1 & ~KIND_COLL) + 1];
			s1 = TASK_NONE;
		}
		/* Start loading the successors' records: the misses overlap
		 * instead of queueing one behind the other. */
		if (s1 != TASK_NONE) {
			__builtin_prefetch(&p->state[s1]);
			__builtin_prefetch(&p->task[s1]);
		}
		for (e = lo; e < hi; e++) {
			__builtin_prefetch(&p->state[p->more[e]]);
			__builtin_prefetch(&p->task[p->more[e]]);
		}
		if (p->task[t].next != TASK_NONE)
			release_one(r, t, p->task[t].next);
		if (s1 != TASK_NONE)
			release_one(r, t, s1);
		for (e = lo; e < hi; e++)
			release_one(r, t, p->more[e]);
	}
	r->draining = 0;
}

/* Record the start of a task stretched beyond what pstate.aux holds
 * (tasks end in time order, so far[] is sorted by end, not id: sorted
 * by id after the run). */
static void far_start(struct run *r, task_id t, units_ns_t start)
{
	struct prog *p = r->p;

	if (p->nfar == p->capfar) {
		uint32_t ncap = p->capfar ? 2 * p->capfar : 16;
		struct pfar *nf = mem_realloc(p->far, ncap * sizeof(*nf));

		if (!nf) {
			r->failed = 1;
			sim_stop(r->sim);
			return;
		}
		p->far = nf;
		p->capfar = ncap;
	}
	p->far[p->nfar++] = (struct pfar){ t, start };
}

static int far_cmp(const void *a, const void *b)
{
	const struct pfar *x = a, *y = b;

	return (x->t > y->t) - (x->t < y->t);
}

static void lane_end(struct sim *sim, void *arg)
{
	struct lane_run *l = arg;
	struct run *r = l->run;
	task_id t = l->cur;
	int64_t stretch;

	(void)sim;
	tick(r);
	if (l->slowable)
		slow_bit(r, l, 0);
	if (r->jit.on && l->slowable) {
		r->compute_end[task_rank(r->p, t)] = r->now;
		jit_compute(r, l, t);
	}
	l->cur = TASK_NONE;
	r->p->state[t].stamp = r->now;
	/* The start, kept as how much longer than dur the task took. */
	stretch = r->now - l->start - l->dur;
	if (stretch > INT32_MIN && stretch < STRETCH_FAR) {
		r->p->state[t].aux = (uint32_t)(int32_t)stretch;
	} else {
		r->p->state[t].aux = (uint32_t)STRETCH_FAR;
		far_start(r, t, l->start);
	}
	if (l->pers) {
		struct rank_load *ld = &r->load[task_rank(r->p, t)];

		l->pers = 0;
		ld->npers--;
		if (ld->nwait > 0)
			unblock(r, task_rank(r->p, t), t, l->start);
	}
	finish(r, t);
	release(r);
}

static void coll_done(void *token)
{
	struct coll_run *cr = token;
	struct run *r = run_of(cr);

	if (cr->state != 1)
		BUG("comm backend: done called for a collective not running");
	tick(r);
	if (exec_crate_done(r, cr->k))
		return;		/* lost work to run out (exec_crate.c) */
	coll_finish(r, cr->k);
}

/* Collective k ends now on all its members. */
static void coll_finish(struct run *r, uint32_t k)
{
	struct coll_run *cr = &r->colls[k];
	const struct pcoll *pc = &r->p->colls[k];
	uint32_t i;

	cr->state = 2;
	r->p->coll_time[cr->k].end_ns = r->now;
	coll_load(r, pc, 0);
	if (r->jit.on)
		jit_realign(r, pc);
	for (i = 0; i < pc->n; i++)
		finish(r, pc->first + i);
	release(r);
}

/* Start every task without predecessors, in id order. */
static void run_start(struct run *r)
{
	task_id t;

	tick(r);
	r->draining = 1;	/* collect zero-time finishes first */
	for (t = 0; t < r->p->ntasks; t++)
		if (r->p->state[t].aux == 0)
			ready(r, t);
	r->draining = 0;
	release(r);
}

/* Run the engine until the program is done; 0 or -1 with p->why. */
static int run_engine(struct run *r)
{
	struct prog *p = r->p;

	run_start(r);
	if (sim_run(r->sim) != 0 || r->failed) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		return -1;
	}
	if (r->too_long)
		return -1;	/* why set by too_long() */
	if (p->nfar > 1)
		qsort(p->far, p->nfar, sizeof(*p->far), far_cmp);
	if (r->nfinished == p->ntasks)
		return 0;
	if (sim_pending(r->sim) > 0) {
		snprintf(p->why, sizeof(p->why), "the simulation was stopped "
			 "before the program finished (%u of %u tasks done)",
			 r->nfinished, p->ntasks);
		return -1;
	}
	exec_run_diagnose(r);
	return -1;
}

int exec_run(struct prog *p, struct sim *sim, const struct comm_ops *ops,
	     void *ctx, struct exec_result *out, const char **why)
{
	struct run r = { .p = p, .sim = sim, .ops = ops, .ctx = ctx,
			 .coll_end = coll_finish };
	uint64_t events0 = sim_events(sim);
	int rc = -1;

	if (!ops && p->ncolls > 0)
		BUG("exec_run: collectives need a comm backend");
	memset(out, 0, sizeof(*out));
	*why = p->why;
	snprintf(p->why, sizeof(p->why), "out of memory");
	if (p->failed)
		goto out_nofree;
	if (prog_build_csr(p) != 0)
		goto out_nofree;
	prog_drop_results(p);
	if (exec_run_alloc(&r, p) != 0)
		goto out;
	exec_run_init(&r);
	r.t0 = sim_now(sim);
	if (run_engine(&r) != 0)
		goto out;
	if (r.jit_failed) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		goto out;
	}
	out->events = sim_events(sim) - events0;
	memset(p->critical, 0, (p->ntasks / 64 + 1) * sizeof(*p->critical));
	if (exec_path(p, out) != 0) {
		snprintf(p->why, sizeof(p->why), "out of memory");
		goto out;
	}
	out->step_sd_s = exec_jit_sd(&r.jit, out->final_rank);
	p->ran = 1;
	p->why[0] = '\0';
	rc = 0;
out:
	exec_run_free(&r);
out_nofree:
	return rc;
}
