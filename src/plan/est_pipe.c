/*
 * est_pipe.c - the pipeline schedule of one layout run as a recurrence,
 * without an event queue.
 *
 * Every rank runs its actions (sched.h) in order; an action (the forward
 * or backward of virtual stage s on microbatch i) starts when its rank is
 * free and its input is there:
 *
 *   F(s, i) = max(free_r, F_end(s-1, i) + x) + f_s        s > 0
 *   B(s, i) = max(free_r, B_end(s+1, i) + x) + b_s        s < S-1
 *   B(S-1, i) = max(free_r, F_end(S-1, i)) + b_{S-1}
 *
 * (the first microbatch's forward and the last one's backward may take
 * longer: the data-parallel collectives they overlap, est_dp.c). As in
 * the step program, each rank's transfers of one direction go on one
 * stream in the rank's own action order: a receive starts only when the
 * rank's previous transfer on that stream (often its send of the action
 * before) is done, and a send when the rank has produced the tensor and
 * its stream is free; the wrap between the last and the first rank has
 * streams of its own, and so, in Megatron-Core's interleaved schedule
 * (not lock step: models/train_pp.c split_pairs), have the pairs whose
 * lower rank is odd, so that a rank's transfers with its previous and
 * its next rank do not queue behind each other. There every stream of a
 * rank carries one pair's transfers of one direction, the same ones in
 * the same order as the stream at the pair's other end, so the receiver's
 * slot ends where the sender's does and the rendezvous below is the
 * step program's. (The synchronization tax of the pair's rendezvous,
 * exec_jitter.c, is left out: charged per transfer it overshot 1F1B
 * pipelines by 3-5 % against the engine. So is the rendezvous itself: in
 * the step program a transfer holds both ranks' streams from when both
 * are free until it ends, here the sender's from its start and the
 * receiver's from when the tensor is sent, which differ where a rank's
 * stream carries transfers with both neighbours (1F1B, GPipe, lock
 * step); where transfers are about as long as a stage's work, tp > 1
 * without SP or scatter/gather sending the whole activation, the
 * estimate is low, 21 % on one such layout of llama3-70b-h100-64. Doing
 * it right takes the transfers as steps of their own, ordered along both
 * ends' streams, the rendezvous' start not being an action's.)
 * x the transfer between the stages' ranks (the step program's send/
 * recv: each pair of neighbouring ranks has its own, as their GPUs sit
 * in one node or two; the interleaved schedule's wrap from the last rank
 * to the first too). Ranks are advanced in turn, each
 * as far as its next action's input allows, until every action is
 * placed; a valid schedule always advances. This is the step program's
 * pipeline with each stage's work as one block of time and every
 * transfer taking x alone: what it leaves out is the order transfers
 * keep on their streams and their sharing of links with other traffic.
 *
 * Cost O(p (2 m v)) per layout, so est_step uses it and est_bound the
 * closed form.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "models/sched.h"
#include "est_pipe_impl.h"

/* Grow the scratch to hold `times` doubles. */
static int room(struct est *e, int64_t n, int64_t times)
{
	(void)n;
	if ((size_t)times > e->pipe_t_cap) {
		double *t = mem_realloc(e->pipe_t, (size_t)times * sizeof(*t));

		if (!t)
			return -1;
		e->pipe_t = t;
		e->pipe_t_cap = (size_t)times;
	}
	return 0;
}

/* The S = p v stages' action times (s) into dur, six rows of S: the
 * forward, the backward, the first microbatch's forward (f_first, else
 * f), the last one's backward (b_last, else b), a held forward and
 * backward (f_held, b_held; unread without them). */
static void durations(const struct est_pipe *in, int64_t S, double *dur)
{
	int64_t k;

	for (k = 0; k < S; k++) {
		dur[k] = in->f[k];
		dur[S + k] = in->b[k];
		dur[2 * S + k] = in->f_first ? in->f_first[k] : in->f[k];
		dur[3 * S + k] = in->b_last ? in->b_last[k] : in->b[k];
		dur[4 * S + k] = in->f_held ? in->f_held[k] : in->f[k];
		dur[5 * S + k] = in->b_held ? in->b_held[k] : in->b[k];
	}
}

/* The duration of step t: its held one where the caller gave them (a
 * held action's first or last microbatch too: those rows differ from
 * f, b only under ZeRO 0-2 or fsdp_pp_no_sync, which give none). */
static double dur_of(const struct est_pipe *in, const struct pstep *t,
		     const double *dur)
{
	return dur[t->hd >= 0 && in->f_held ? t->hd : t->d];
}

/* run_once() where a duration is not >= 0: the dummy cells could then
 * hold a time past their rank's free time (struct pflat), so a missing
 * stream reads -inf and is not written, as the layout had it before the
 * dummies. val holds the free times, streams and durations already. */
static int run_exact(const struct porder *o, const struct playout *l,
		     int held, double *val, double *rank_end,
		     double *chunk_end, int64_t p, int64_t v, int64_t m)
{
	const struct pflat *t, *last;
	double *sent = val + l->sent;
	int64_t S = p * v, r, c;
	uint32_t np = (uint32_t)p;

	val[l->zero] = 0;
	for (t = o->v, last = t + o->n; t < last; t++) {
		int no_in = (uint32_t)(t->sin - l->dummy) < np;
		int no_out = (uint32_t)(t->sout - l->dummy) < np;
		double got = val[t->in], ready, fr, done, slot;

		slot = no_in ? -INFINITY : val[t->sin];
		ready = (got > slot ? got : slot) + val[t->xin];
		if (!no_in)
			val[t->sin] = ready;
		fr = val[t->r];
		done = (ready > fr ? ready : fr) + val[held ? t->hd : t->d];
		val[t->at] = done;
		val[t->r] = done;
		slot = no_out ? -INFINITY : val[t->sout];
		slot = done > slot ? done : slot;
		sent[t->at] = slot;
		if (!no_out)
			val[t->sout] = slot + val[t->xout];
	}
	for (r = 0; r < p; r++) {
		rank_end[r] = val[l->fr + r];
		for (c = 0; c < v; c++)
			chunk_end[r * v + c] =
				val[S * m + (c * p + r) * m + m - 1];
	}
	return 0;
}

/* Steps t .. last - 1 of an order in the scratch val (sent = val +
 * its layout's sent): each reads its operands from the scratch (struct
 * pflat says where) and writes its results back. */
static inline void run_flat(double *val, double *sent, const struct pflat *t,
			     const struct pflat *last, int held)
{
	for (; t < last; t++) {
		double got = val[t->in], slot = val[t->sin], ready, fr, done;

		/* the order ahead: a search's orders (one per shape) are
		 * past L2 together, so a call often starts with its order
		 * out of L2, and the hardware's stream prefetch alone left
		 * the steps waiting on it (~7 % of the warm estimates of
		 * llama3.1-405b-16k; the step's value cells ahead too
		 * measured slower) */
		__builtin_prefetch(t + 24);

		/* the input's transfer starts when it is sent and its
		 * stream is free (none: got, at the dummy, taking 0) */
		ready = (got > slot ? got : slot) + val[t->xin];
		val[t->sin] = ready;
		fr = val[t->r];
		done = (ready > fr ? ready : fr) + val[held ? t->hd : t->d];
		val[t->ae] = done;
		val[t->r] = done;
		/* the send starts when it is produced and its stream is
		 * free (none: sent[at] is the end, at the dummy) */
		slot = val[t->sout];
		slot = done > slot ? done : slot;
		sent[t->at] = slot;
		val[t->sout] = slot + val[t->xout];
	}
}

/* Cell k of word w of a packed step (struct pcomp: 16 bits at shift k). */
#define PCELL(w, k) ((uint16_t)((w) >> (k)))

/* run_flat() along the packed steps c .. last - 1 (struct pcomp): the
 * same operations on the same cells in the same order; sm = val + l.fr,
 * junk the junk cell's index in val. held is a constant in each of
 * run_packed's two calls (always inlined), so the loop has no test of
 * it. The empty asm keeps each word in a register: without it the
 * compiler may read a 16-bit cell index straight from memory again,
 * the load per field the words are there to save. */
static inline __attribute__((always_inline)) void
run_packed_as(double *val, double *sm, int64_t junk, const struct pcomp *t,
	      const struct pcomp *last, const int held)
{
	for (; t < last; t++) {
		int32_t in = t->in;
		uint32_t at = t->at, ae = at & ~PCOMP_KEPT;
		uint64_t rd = t->rd, out = t->out;
		double got, slot, ready, fr, done;

		__asm__("" : "+r"(rd), "+r"(out));
		__builtin_prefetch(t + 40);	/* as run_flat() */
		got = val[in];
		slot = sm[PCELL(rd, PCOMP_SIN)];
		ready = (got > slot ? got : slot) + sm[PCELL(rd, PCOMP_XIN)];
		sm[PCELL(rd, PCOMP_SIN)] = ready;
		fr = sm[PCELL(rd, PCOMP_R)];
		done = (ready > fr ? ready : fr) +
		       sm[held ? PCELL(out, PCOMP_HD) : PCELL(rd, PCOMP_D)];
		val[at & PCOMP_KEPT ? (int64_t)ae : junk] = done;
		sm[PCELL(rd, PCOMP_R)] = done;
		slot = sm[PCELL(out, PCOMP_SOUT)];
		slot = done > slot ? done : slot;
		sm[PCELL(out, PCOMP_SND)] = slot;	/* sent[at] */
		sm[PCELL(out, PCOMP_SOUT)] = slot + sm[PCELL(out, PCOMP_XOUT)];
	}
}

static inline void run_packed(double *val, double *sm, int64_t junk,
			      const struct pcomp *t, const struct pcomp *last,
			      int held)
{
	if (held)
		run_packed_as(val, sm, junk, t, last, 1);
	else
		run_packed_as(val, sm, junk, t, last, 0);
}

/* Steps k .. k + n - 1 of order o in the scratch val laid out as l:
 * packed where o has them, else as they are. */
static inline void run_steps(const struct porder *o, const struct playout *l,
			     double *val, int64_t k, int64_t n, int held)
{
	if (o->c)
		run_packed(val, val + l->fr, l->junk, o->c + k, o->c + k + n,
			   held);
	else
		run_flat(val, val + l->sent, o->v + k, o->v + k + n, held);
}

/* The recurrence for m microbatches along its order: each step reads
 * its operands from the scratch (struct pflat says where) and writes its
 * results back, the same operations in the same order whatever kind of
 * action it is (a no-op operand leaves the value as it was: max with
 * -inf, plus 0). */
static int run_once(struct est *e, const struct est_pipe *in, int64_t m,
		    double *rank_end, double *chunk_end)
{
	int64_t p = in->p, v = in->v, S = p * v, r, c, k;
	const struct porder *o = est_pipe_order(e, in->schedule, p, v, m, 0,
						est_pipe_split(in));
	struct playout l = est_pipe_layout(p, S, m);
	double *val;
	int held = in->f_held != NULL;	/* the held durations apply */

	if (!o || room(e, 0, l.n + o->pool) != 0)
		return -1;
	val = e->pipe_t;
	for (k = 0; k < (1 + ST_N) * p; k++)
		val[l.fr + k] = 0;	/* free times and streams */
	durations(in, S, val + l.dur);
	for (k = 0; k < p; k++) {
		val[l.x + k] = in->x[k];
		val[l.dummy + k] = -INFINITY;
	}
	val[l.zero] = 0;
	for (k = 0; k < 6 * S; k++)
		if (!(val[l.dur + k] >= 0))	/* NaN too */
			return run_exact(o, &l, held, val, rank_end, chunk_end,
					 p, v, m);
	run_steps(o, &l, val, 0, o->n, held);
	for (r = 0; r < p; r++) {
		rank_end[r] = val[l.fr + r];
		for (c = 0; c < v; c++)
			chunk_end[r * v + c] =
				val[S * m + (c * p + r) * m + m - 1];
	}
	return 0;
}

/* Lock step (in->lockstep; models/train_pp.c, sched_lock_step): the
 * actions taken time step by time step of torch's table; after a step's
 * actions, each transfer one of them made starts once its sender and its
 * receiver are done with their actions up to that step (and its streams
 * are free: the sender's and the receiver's slot, as run_once), and
 * every later action of both ranks waits for it. The step's transfers
 * are batched: each starts from the ranks' state before any of them.
 * 1 when an input was not there (a table the recurrence cannot follow;
 * the caller falls back), -1 out of memory. */
static int run_lockstep(struct est *e, const struct est_pipe *in,
			double *rank_end, double *chunk_end)
{
	int64_t p = in->p, v = in->v, m = in->m, S = p * v, n = 2 * m * v;
	int64_t r, c, k, T, left = p * n;
	struct sched_action *a = mem_alloc((size_t)(p * n) * sizeof(*a));
	int64_t *pos = mem_calloc((size_t)(2 * p), sizeof(*pos)), *w = pos + p;
	uint8_t *held = mem_calloc((size_t)S, 1);	/* [r v + c] */
	double *end, *sent, *fr, *stream, *dur, *wait;
	int rc = -1;

	if (!a || !pos || !held ||
	    room(e, 0, 4 * S * m + (2 + ST_N) * p + 6 * S) != 0)
		goto out;
	end = e->pipe_t;
	sent = end + 2 * S * m;
	fr = sent + 2 * S * m;
	stream = fr + p;
	dur = stream + ST_N * p;
	wait = dur + 6 * S;
	for (k = 0; k < 2 * S * m; k++)
		sent[k] = -1;
	for (k = 0; k < (1 + ST_N) * p; k++)
		fr[k] = 0;
	durations(in, S, dur);
	for (r = 0; r < p; r++) {
		sched_rank(in->schedule, p, v, m, r, a + r * n);
		w[r] = sched_warmup(in->schedule, p, v, m, r);
	}
	for (T = 0; left > 0; T++) {
		for (r = 0; r < p; r++) {	/* the step's actions */
			struct pstep t;
			double ready = 0;

			if (pos[r] == n ||
			    sched_lock_step(p, v, n, w[r], r, pos[r]) != T)
				continue;
			t = est_pipe_step(a[r * n + pos[r]], r, p, S, m, 0,
					  held + r * v);
			if (t.src >= 0) {
				if (sent[t.src] < 0) {
					rc = 1;
					goto out;
				}
				ready = sent[t.src];	/* the transfer's end */
			} else if (t.src == -2) {
				ready = end[t.own];
			}
			end[t.at] = fr[r] = (ready > fr[r] ? ready : fr[r]) +
					    dur_of(in, &t, dur);
		}
		for (r = 0; r < p; r++)
			wait[r] = fr[r];
		for (r = 0; r < p; r++) {	/* the step's transfers */
			struct pstep t;
			int64_t q;
			int32_t sin;
			double start;

			if (pos[r] == n ||
			    sched_lock_step(p, v, n, w[r], r, pos[r]) != T)
				continue;
			/* held[] as the loop above left it: setting a
			 * chunk's flag again changes nothing */
			t = est_pipe_step(a[r * n + pos[r]], r, p, S, m, 0,
					  held + r * v);
			pos[r]++;
			left--;
			if (t.sout < 0)
				continue;
			q = a[r * n + pos[r] - 1].bwd ? (r + p - 1) % p :
							(r + 1) % p;
			/* the receiver's slot: as est_pipe_step gives its input's
			 * (lock step never splits the pairs) */
			sin = a[r * n + pos[r] - 1].bwd ?
				      est_pipe_slot(q, 1, q == p - 1, q, 0) :
				      est_pipe_slot(q, 0, q == 0, q - 1, 0);
			start = fmax(fmax(end[t.at], fr[q]),
				     fmax(stream[t.sout], stream[sin]));
			sent[t.at] = stream[t.sout] = stream[sin] =
				start + in->x[t.xout];
			wait[r] = fmax(wait[r], sent[t.at]);
			wait[q] = fmax(wait[q], sent[t.at]);
		}
		for (r = 0; r < p; r++)
			fr[r] = wait[r];
	}
	for (r = 0; r < p; r++) {
		rank_end[r] = fr[r];
		for (c = 0; c < v; c++)
			chunk_end[r * v + c] = end[S * m + (c * p + r) * m + m - 1];
	}
	rc = 0;
out:
	mem_free(a);
	mem_free(pos);
	mem_free(held);
	return rc;
}

/* est_pipe_run's three runs (m0 + k g microbatches, k = 0, 1, 2) along
 * their order (build_three), each one's rank ends then chunk ends into
 * x + k (p + p v): the steps they share run once, and each run goes on
 * from a copy of the ranks' state after them. 1 when a duration is not
 * >= 0 (the caller runs them apart: run_exact), -1 out of memory. */
static int run_three(struct est *e, const struct est_pipe *in, int64_t m0,
		     int64_t g, double *x)
{
	int64_t p = in->p, v = in->v, S = p * v, M = m0 + 2 * g, k, r, c;
	int64_t ends = p + p * v, nst = (1 + ST_N) * p;
	const struct porder *o = est_pipe_order(e, in->schedule, p, v, m0, g,
						est_pipe_split(in));
	struct playout l = est_pipe_layout(p, S, M);
	int64_t t;
	double *val, *keep;
	int held = in->f_held != NULL;

	if (!o || room(e, 0, l.n + o->pool + nst + p) != 0)
		return -1;
	val = e->pipe_t;
	/* the ranks' free times, streams, dummies (past the sent values'
	 * pool: the three runs read the shared steps' values there) */
	keep = val + l.n + o->pool;
	for (k = 0; k < nst; k++)
		val[l.fr + k] = 0;
	durations(in, S, val + l.dur);
	for (k = 0; k < p; k++) {
		val[l.x + k] = in->x[k];
		val[l.dummy + k] = -INFINITY;
	}
	val[l.zero] = 0;
	for (k = 0; k < 6 * S; k++)
		if (!(val[l.dur + k] >= 0))	/* NaN too */
			return 1;
	run_steps(o, &l, val, 0, o->part[0], held);
	t = o->part[0];
	memcpy(keep, val + l.fr, (size_t)nst * sizeof(*keep));
	memcpy(keep + nst, val + l.dummy, (size_t)p * sizeof(*keep));
	for (k = 0; k < 3; k++) {
		int64_t m = m0 + k * g;
		double *xe = x + k * ends;

		if (k > 0) {
			memcpy(val + l.fr, keep, (size_t)nst * sizeof(*keep));
			memcpy(val + l.dummy, keep + nst,
			       (size_t)p * sizeof(*keep));
		}
		run_steps(o, &l, val, t, o->part[k + 1], held);
		t += o->part[k + 1];
		for (r = 0; r < p; r++) {
			xe[r] = val[l.fr + r];
			for (c = 0; c < v; c++)
				xe[p + r * v + c] =
					val[S * M + (c * p + r) * M + m - 1];
		}
	}
	return 0;
}

/*
 * Past its fill the schedule repeats: every further group of g
 * microbatches (p for the interleaved schedule, whose groups are p, else
 * 1) adds the same time to every end. So for m well past the fill the
 * recurrence is run for m0, m0 + g and m0 + 2g (m0 = p, or 2p for the
 * interleaved schedule) and extended linearly, after checking that the
 * two steps agree on every end (else it tries again from 4 m0 and 16
 * m0: stages of unequal time, an MoE model's dense-first layers or an
 * uneven split, settle into the slowest stage's pace later; then it
 * runs for m itself). Exact, and cheaper when m is past a few p.
 */
int est_pipe_run(struct est *e, const struct est_pipe *in, double *rank_end,
		 double *chunk_end)
{
	int64_t p = in->p, v = in->v, m = in->m, g, m0, k, ends = p + p * v;
	int tries;
	double *x;

	/* sched.h's interleaved order takes microbatches in groups of p: with
	 * m not a multiple of p its last group names microbatches m .. and
	 * every index below would run past the arrays sized by m */
	if (in->schedule == SCHED_INTERLEAVED && m % p != 0)
		return 1;
	if (in->lockstep) {	/* no linear extension: its steps do not
				 * repeat by groups as the schedule does */
		int rc = run_lockstep(e, in, rank_end, chunk_end);

		if (rc <= 0)
			return rc;
	}
	/* 1F1B and GPipe repeat once every rank is past its warm-up (p
	 * microbatches); the interleaved schedule needs m > p (at m = p
	 * rank 0's warm-up holds every forward) */
	g = in->schedule == SCHED_INTERLEAVED ? p : 1;
	m0 = g == 1 ? p : 2 * p;
	if (m <= m0 + 3 * g)
		return run_once(e, in, m, rank_end, chunk_end);
	if ((size_t)(3 * ends) > e->pipe_x_cap) {
		x = mem_realloc(e->pipe_x, (size_t)(3 * ends) * sizeof(*x));
		if (!x)
			return -1;
		e->pipe_x = x;
		e->pipe_x_cap = (size_t)(3 * ends);
	}
	x = e->pipe_x;
	for (tries = 0;; tries++, m0 *= 4) {
		int rc;

		if (tries == 3 || m <= m0 + 3 * g)
			return run_once(e, in, m, rank_end, chunk_end);
		if ((rc = run_three(e, in, m0, g, x)) < 0)
			return -1;
		for (k = 0; rc > 0 && k < 3; k++)
			if (run_once(e, in, m0 + k * g, x + k * ends,
				     x + k * ends + p) != 0)
				return -1;
		for (k = 0; k < ends; k++) {
			double d1 = x[ends + k] - x[k];
			double d2 = x[2 * ends + k] - x[ends + k];

			if (fabs(d1 - d2) > 1e-9 * fabs(x[2 * ends + k]))
				break;
		}
		if (k == ends)
			break;
	}
	for (k = 0; k < ends; k++) {
		double d = x[2 * ends + k] - x[ends + k];
		double at = x[2 * ends + k] + (double)(m - m0 - 2 * g) / (double)g * d;

		if (k < p)
			rank_end[k] = at;
		else
			chunk_end[k - p] = at;
	}
	return 0;
}
