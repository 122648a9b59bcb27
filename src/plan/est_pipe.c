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
#include "est_impl.h"

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

/* One action of an order (below), with everything the recurrence needs
 * precomputed: where its end goes (end[at]: forwards at s m + i,
 * backwards at S m + s m + i), its input (sent[src] plus the transfer
 * x[xin] on the stream slot sin; src = -1 none, -2 its own forward's end
 * end[own]), its duration (dur[d]), its rank, and its output (a send on
 * slot sout over x[xout]; sout = -1 none). */
struct pstep {
	int32_t at, src, own, d;
	int32_t kept;		/* its end is read: the last stage's forward
				 * (own), a run's last backward (chunk_end) */
	int32_t hd;		/* its duration when its chunk is still
				 * gathered (dur[hd], in->f_held), or -1 */
	int32_t r, sin, xin;
	int32_t sout, xout;
};

/* A step as run_once() reads it: every operand an index into one array
 * of values (the layout of run_once's scratch, which the order's shape
 * fixes), the absent ones pointing at cells that make them no-ops (a
 * missing input reads 0 and adds no transfer), so the recurrence runs
 * without a branch per step. Alone that measured no faster; with the
 * order by rounds (below) a round's independent steps overlap without a
 * mispredicted kind of action cutting the overlap short.
 *
 * A missing stream (no input from another stage, or no send) is the
 * rank's dummy cell, read and written like a stream: it only ever holds
 * what the rank's own steps put there (-inf at first, then a ready time
 * max(got, dummy) with got 0 or the rank's own earlier end, or an end),
 * none later than the rank's free time when the next step reads it,
 * since with durations >= 0 a rank's ends never decrease. So where the
 * step takes max(ready, free), or max(end, slot) with end >= free, the
 * dummy changes nothing, bit for bit, as the -inf it replaces (read)
 * and the cell nothing read (written) did: one index where there were
 * two, and sent[at] is found from at. Durations that are not all >= 0
 * (none the estimator makes) take run_once's exact branchy loop.
 *
 * A step's end (end[at]) is read only where it is some step's input (the
 * last stage's backward reads its own forward's) or a chunk's end (a
 * run's last backward); every other step writes it to one junk cell
 * (ae). The values are the same; what changes is that a round of a
 * deep pipeline touched four lines a rank (both ends and both sents of
 * its forward and backward cells), two of them never read again: at pp
 * 128 that was past L1 (48 KiB) and a step cost ~3x one at pp 8; the
 * llama3.1-405b-16k search's warm estimates run 14 % faster without. */
struct pflat {
	int32_t in;		/* its input: sent[src], end[own] or ZERO */
	int32_t sin;		/* its input's stream slot, or the dummy */
	int32_t xin;		/* the input's transfer, or ZERO */
	int32_t r;		/* its rank's free time */
	int32_t d, hd;		/* its duration; held (hd = d without) */
	int32_t at;		/* sent[at] */
	int32_t ae;		/* end[at] where that is read (struct
				 * pstep kept), else the junk cell */
	int32_t sout;		/* its output's stream slot, or the dummy */
	int32_t xout;		/* the output's transfer, or ZERO */
};

/* A step of struct pflat in 24 bytes where it can be (pack()): what
 * run_steps() streams through is the order, 36-40 bytes a step of
 * 8,000 for a 128-stage 1F1B pipeline, and a search's orders (one per
 * shape) do not stay in L2 together. The cells of free times, streams,
 * durations, transfers, dummies, ZERO and the junk cell are at l.fr and
 * after, a few thousand: 16 bits from l.fr. at keeps pflat's, its top
 * bit set where ae is at (else ae is the junk cell). */
struct pcomp {
	int32_t in;
	uint32_t at;
	uint16_t sin, xin, r, d, hd, sout, xout, pad;
};

#define PCOMP_KEPT 0x80000000u

/* A rank's transfer streams: per direction (forward activations F,
 * backward gradients B) the one to its neighbours, the interleaved
 * wrap's between the last rank and the first (W), and, where the
 * schedule's transfers are point-to-point calls of their own
 * (split_pairs), the one to the neighbour whose pair's lower rank is odd
 * (O): models/train_pp.c's pp_fwd / pp_fwd_wrap / pp_fwd_odd and the
 * pp_bwd ones. */
enum { ST_F, ST_FW, ST_FO, ST_B, ST_BW, ST_BO, ST_N };

/* run_once's scratch, in doubles, for S stages, p ranks and m
 * microbatches: end[2 S m], sent[2 S m], free[p], stream[ST_N p],
 * dur[6 S], x[p], dummy[p] (struct pflat), then the cell ZERO (0). */
struct playout {
	int64_t sent, fr, stream, dur, x, dummy, zero, junk, n;
};

static struct playout layout_of(int64_t p, int64_t S, int64_t m)
{
	struct playout l;

	l.sent = 2 * S * m;
	l.fr = l.sent + 2 * S * m;
	l.stream = l.fr + p;
	l.dur = l.stream + ST_N * p;
	l.x = l.dur + 6 * S;
	l.dummy = l.x + p;
	l.zero = l.dummy + p;
	l.junk = l.zero + 1;
	l.n = l.junk + 1;
	return l;
}

/* Step t as run_once() reads it, in the scratch laid out as l. */
static struct pflat flat_of(const struct pstep *t, const struct playout *l)
{
	struct pflat f;

	f.in = (int32_t)l->zero;
	f.sin = (int32_t)(l->dummy + t->r);
	f.xin = (int32_t)l->zero;
	if (t->src >= 0) {
		f.in = (int32_t)(l->sent + t->src);
		f.sin = (int32_t)(l->stream + t->sin);
		f.xin = (int32_t)(l->x + t->xin);
	} else if (t->src == -2) {
		f.in = t->own;
	}
	f.r = (int32_t)(l->fr + t->r);
	f.d = (int32_t)(l->dur + t->d);
	f.hd = (int32_t)(l->dur + (t->hd >= 0 ? t->hd : t->d));
	f.at = t->at;
	f.ae = t->kept ? t->at : (int32_t)l->junk;
	f.sout = (int32_t)(l->dummy + t->r);
	f.xout = (int32_t)l->zero;
	if (t->sout >= 0) {
		f.sout = (int32_t)(l->stream + t->sout);
		f.xout = (int32_t)(l->x + t->xout);
	}
	return f;
}

/* Every rank's actions in an order each action comes after its input's
 * producer (and after its rank's earlier actions), by rounds: in each
 * round every rank in turn places its next action if that action's
 * input was placed in an earlier round. The actions of a round depend on
 * none of each other, so the processor overlaps them (placed as far as
 * each rank could advance, a rank's actions came one after another, each
 * waiting for the one before: the recurrence ran at the latency of that
 * chain). Every action reads the same values in any such order (a rank's
 * free time and streams change in its own action order), so the times
 * are the same bit for bit. It depends on (schedule, p, v, m) only, so it
 * is built once and every layout of that shape runs along it. */
struct porder {
	int64_t n;
	struct pflat *v;
	struct pcomp *c;	/* v in 24 bytes a step (pack()), or NULL */
	/* est_pipe_run's three runs (m0, m0 + g, m0 + 2g microbatches) as
	 * one order (build_three): v holds the steps the three share, then
	 * each run's own; part[] counts them, laid out with stride M (the
	 * largest m). Unused (0) in an order of one run. */
	int64_t part[4], M;
};

/* Rank r's stream slot for a transfer of direction bwd (0 the forward
 * activations, 1 the gradients) with a neighbour: wrap, the interleaved
 * wrap between ranks p - 1 and 0; else lower, the pair's lower pipeline
 * rank, whose parity picks the stream when split (models/train_pp.c
 * lane_of: a pair whose lower rank is odd has streams of its own). A
 * transfer takes the same kind of slot at its two ends. */
static int32_t slot_of(int64_t r, int bwd, int wrap, int64_t lower,
		       int split)
{
	int lane = wrap ? 1 : split && (lower & 1) ? 2 : 0;

	return (int32_t)(ST_N * r + (bwd ? ST_B : ST_F) + lane);
}

/* Megatron-Core's interleaved schedule issues each transfer as a
 * point-to-point call of its own, which ProcessGroupNCCL runs on a
 * stream per pair of ranks; 1F1B batches them, lock-step schedules keep
 * their own order (models/train_pp.c split_pairs, whose source notes
 * give the versions). */
static int split_pairs(const struct est_pipe *in)
{
	return in->v > 1 && !in->lockstep;
}

/* The step of action x of rank r, its ends laid out with stride M (m
 * the run's microbatches, M >= m: run_three lays its three runs out
 * alike). Durations: f[s], b[s], the first
 * microbatch's forward f_first[s] at 2S + s, the last one's backward
 * b_last[s] at 3S + s, a forward and a backward whose chunk is still
 * gathered (f_held, b_held) at 4S + s and 5S + s. held[c]: whether the
 * rank's previous action on chunk c was a forward (all 0 before its
 * first action; updated here): FSDP2 without reshard_after_forward
 * keeps a chunk's units gathered from a forward to the chunk's next
 * action (models/train_dp.c fsdp_held). */
static struct pstep step_at(struct sched_action x, int64_t r, int64_t p,
			    int64_t S, int64_t m, int64_t M, int split,
			    uint8_t *held)
{
	int64_t s = (int64_t)x.chunk * p + r, i = x.mb;
	struct pstep t = { .r = (int32_t)r, .src = -1, .sout = -1, .hd = -1 };

	if (held[x.chunk])
		t.hd = (int32_t)((x.bwd ? 5 : 4) * S + s);
	held[x.chunk] = !x.bwd;

	if (!x.bwd) {
		t.at = (int32_t)(s * M + i);
		t.kept = s == S - 1;
		t.d = (int32_t)(i == 0 ? 2 * S + s : s);
		if (s > 0) {
			t.src = (int32_t)((s - 1) * M + i);
			t.sin = slot_of(r, 0, r == 0, r - 1, split);
			t.xin = (int32_t)((s - 1) % p);
		}
		if (s < S - 1) {
			t.sout = slot_of(r, 0, r == p - 1, r, split);
			t.xout = (int32_t)r;
		}
		return t;
	}
	t.at = (int32_t)(S * M + s * M + i);
	t.kept = i == m - 1;
	t.d = (int32_t)(i == m - 1 ? 3 * S + s : S + s);
	if (s < S - 1) {
		t.src = (int32_t)(S * M + (s + 1) * M + i);
		t.sin = slot_of(r, 1, r == p - 1, r, split);
		t.xin = (int32_t)(s % p);
	} else {
		t.src = -2;
		t.own = (int32_t)(s * M + i);
	}
	if (s > 0) {
		t.sout = slot_of(r, 1, r == 0, r - 1, split);
		t.xout = (int32_t)((s - 1) % p);
	}
	return t;
}

/* step_at with the stride m: one run's own layout. */
static struct pstep step_of(struct sched_action x, int64_t r, int64_t p,
			    int64_t S, int64_t m, int split, uint8_t *held)
{
	return step_at(x, r, p, S, m, m, split, held);
}

static int build_order(int schedule, int64_t p, int64_t v, int64_t m,
		       int split, struct porder *o)
{
	int64_t S = p * v, n = sched_actions(m, v), left = p * n, r, k = 0;
	struct sched_action *a = mem_alloc((size_t)(p * n) * sizeof(*a));
	/* the round each action was placed in, from 1; 0 not yet */
	int64_t *fp = mem_calloc((size_t)(2 * S * m), sizeof(*fp)),
		*bp = fp + S * m;
	int64_t *pos = mem_calloc((size_t)p, sizeof(*pos)), round;
	uint8_t *held = mem_calloc((size_t)S, 1);	/* [r v + c] */
	struct playout l = layout_of(p, S, m);
	int rc = -1;

	o->n = p * n;
	o->v = mem_alloc((size_t)(p * n) * sizeof(*o->v));
	if (!a || !fp || !pos || !held || !o->v || l.n > INT32_MAX)
		goto out;
	for (r = 0; r < p; r++)
		sched_rank(schedule, p, v, m, r, a + r * n);
	for (round = 1; left > 0; round++) {
		int64_t placed = 0;

		for (r = 0; r < p; r++) {
			struct sched_action x;
			struct pstep t;
			int64_t s, i, got;

			if (pos[r] == n)
				continue;
			x = a[r * n + pos[r]];
			s = (int64_t)x.chunk * p + r;
			i = x.mb;
			/* its input's round (-1: none from another stage) */
			got = x.bwd ? (s < S - 1 ? bp[(s + 1) * m + i] : -1) :
				      (s > 0 ? fp[(s - 1) * m + i] : -1);
			if (got == 0 || got == round)
				continue;	/* not placed in an earlier round */
			(x.bwd ? bp : fp)[s * m + i] = round;
			t = step_of(x, r, p, S, m, split, held + r * v);
			o->v[k++] = flat_of(&t, &l);
			pos[r]++;
			placed++;
		}
		if (placed == 0)
			BUG("a pipeline schedule that cannot advance");
		left -= placed;
	}
	rc = 0;
out:
	mem_free(a);
	mem_free(fp);
	mem_free(pos);
	mem_free(held);
	if (rc != 0) {
		mem_free(o->v);
		o->v = NULL;
	}
	return rc;
}

void est_pipe_order_free(void *order)
{
	struct porder *o = order;

	if (o) {
		mem_free(o->v);
		mem_free(o->c);
	}
	mem_free(o);
}

/*
 * est_pipe_run's three runs (m0, m0 + g, m0 + 2g microbatches) as one
 * order. Every rank's actions of the three runs agree on a first part
 * (the warm-up and the steady state of the shortest run: what differs is
 * the longer runs' further microbatches and the cool-down after them),
 * and a step computes the same value from the same operands in any order
 * that keeps each rank's own order and puts each input's producer first
 * (a rank's free time and streams change in its own action order only;
 * struct porder). So the steps the three share run once, and each run
 * goes on from a copy of the ranks' state (free times, streams, dummies)
 * at that point: every end is the separate run's, bit for bit.
 *
 * A step is shared when it is the same step (struct pflat, the three
 * laid out with the largest run's stride M, so an action has one cell in
 * all three) at the same place of its rank's list in all three runs, and
 * so are the steps before it on its rank and its input's producer.
 */

/* Every rank's steps lo[r] .. hi[r] - 1 (of its list f + r n) into out
 * from *k, by rounds as build_order: placed[] holds, per end cell, the
 * round its step was placed in (from 1), -1 for a step placed before
 * (the shared ones), 0 not yet. pos: p int64s of scratch. */
static void by_rounds(const struct pflat *f, int64_t n, int64_t p,
		      const struct playout *l, const int64_t *lo,
		      const int64_t *hi, int64_t *placed, int64_t *pos,
		      struct pflat *out, int64_t *k)
{
	int64_t left = 0, r, round;

	for (r = 0; r < p; r++) {
		pos[r] = lo[r];
		left += hi[r] - lo[r];
	}
	for (round = 1; left > 0; round++) {
		int64_t placed_now = 0;

		for (r = 0; r < p; r++) {
			const struct pflat *t;
			int64_t got = -1;

			if (pos[r] == hi[r])
				continue;
			t = &f[r * n + pos[r]];
			/* its input's round, when it comes from another
			 * stage (sent[src]) */
			if (t->in >= l->sent && t->in < l->fr)
				got = placed[t->in - l->sent];
			if (got == 0 || got == round)
				continue;
			placed[t->at] = round;
			out[(*k)++] = *t;
			pos[r]++;
			placed_now++;
		}
		if (placed_now == 0)
			BUG("a pipeline schedule that cannot advance");
		left -= placed_now;
	}
}

static int build_three(int schedule, int64_t p, int64_t v, int64_t m0,
		       int64_t g, int split, struct porder *o)
{
	int64_t S = p * v, M = m0 + 2 * g, SM = S * M, n[3], k, r, x, c;
	int64_t *lo, *hi, *pos, *zero, *placed, *who, cnt = 0;
	struct playout l = layout_of(p, S, M);
	struct sched_action *a;
	struct pflat *f[3] = { NULL, NULL, NULL };
	uint8_t *held = mem_alloc((size_t)S);	/* [r v + c] */
	int again, rc = -1;

	for (k = 0; k < 3; k++)
		n[k] = sched_actions(m0 + k * g, v);
	a = mem_alloc((size_t)(p * n[2]) * sizeof(*a));
	lo = mem_alloc((size_t)(4 * p) * sizeof(*lo));
	placed = mem_calloc((size_t)(2 * SM), sizeof(*placed));
	who = mem_alloc((size_t)(2 * SM) * sizeof(*who));
	o->v = mem_alloc((size_t)(p * (n[0] + n[1] + n[2])) * sizeof(*o->v));
	if (!held || !a || !lo || !placed || !who || !o->v ||
	    l.n > INT32_MAX)
		goto out;
	hi = lo + p;
	pos = hi + p;
	zero = pos + p;
	for (k = 0; k < 3; k++) {
		int64_t mk = m0 + k * g;

		if (!(f[k] = mem_alloc((size_t)(p * n[k]) * sizeof(*f[k]))))
			goto out;
		memset(held, 0, (size_t)S);
		for (r = 0; r < p; r++) {
			sched_rank(schedule, p, v, mk, r, a + r * n[k]);
			for (x = 0; x < n[k]; x++) {
				struct pstep t = step_at(a[r * n[k] + x], r, p,
							 S, mk, M, split,
							 held + r * v);

				f[k][r * n[k] + x] = flat_of(&t, &l);
			}
		}
	}
	/* each rank's steps the same in all three (n[0] is the least) */
	for (r = 0; r < p; r++) {
		const struct pflat *f0 = f[0] + r * n[0];

		for (x = 0; x < n[0] &&
			    !memcmp(&f0[x], &f[1][r * n[1] + x], sizeof(*f0)) &&
			    !memcmp(&f0[x], &f[2][r * n[2] + x], sizeof(*f0));
		     x++)
			;
		lo[r] = x;
	}
	/* ... whose inputs' producers are shared too: who[c], the place in
	 * its rank's list of the step that writes end cell c (stage s =
	 * c mod SM / M, rank s mod p) */
	for (c = 0; c < 2 * SM; c++)
		who[c] = -1;
	for (r = 0; r < p; r++)
		for (x = 0; x < n[0]; x++)
			who[f[0][r * n[0] + x].at] = x;
	do {
		again = 0;
		for (r = 0; r < p; r++)
			for (x = 0; x < lo[r]; x++) {
				const struct pflat *t = &f[0][r * n[0] + x];

				if (t->in < l.sent || t->in >= l.fr)
					continue;
				c = t->in - l.sent;
				if (who[c] >= 0 && who[c] < lo[c % SM / M % p])
					continue;
				lo[r] = x;
				again = 1;
				break;
			}
	} while (again);
	for (r = 0; r < p; r++)
		zero[r] = 0;
	by_rounds(f[0], n[0], p, &l, zero, lo, placed, pos, o->v, &cnt);
	o->part[0] = cnt;
	for (r = 0; r < p; r++)
		for (x = 0; x < lo[r]; x++)
			placed[f[0][r * n[0] + x].at] = -1;
	for (k = 0; k < 3; k++) {	/* each run's own steps */
		int64_t before = cnt;

		for (r = 0; r < p; r++)
			hi[r] = n[k];
		by_rounds(f[k], n[k], p, &l, lo, hi, placed, pos, o->v, &cnt);
		o->part[k + 1] = cnt - before;
		for (r = 0; r < p; r++)
			for (x = lo[r]; x < n[k]; x++)
				placed[f[k][r * n[k] + x].at] = 0;
	}
	o->n = cnt;
	o->M = M;
	rc = 0;
out:
	for (k = 0; k < 3; k++)
		mem_free(f[k]);
	mem_free(a);
	mem_free(lo);
	mem_free(placed);
	mem_free(who);
	mem_free(held);
	if (rc != 0) {
		mem_free(o->v);
		o->v = NULL;
	}
	return rc;
}

/* o->c from o->v in the scratch laid out as l, when every small cell is
 * within 16 bits of l.fr (else o->c stays NULL: run_steps() takes v);
 * -1 out of memory. */
static int pack(struct porder *o, const struct playout *l)
{
	int64_t k, top = l->n - l->fr;
	struct pcomp *c;

	if (top > UINT16_MAX || o->n == 0)
		return 0;
	c = mem_alloc((size_t)o->n * sizeof(*c));
	if (!c)
		return -1;
	for (k = 0; k < o->n; k++) {
		const struct pflat *f = &o->v[k];

		c[k] = (struct pcomp){
			.in = f->in,
			.at = (uint32_t)f->at |
			      (f->ae == f->at ? PCOMP_KEPT : 0),
			.sin = (uint16_t)(f->sin - l->fr),
			.xin = (uint16_t)(f->xin - l->fr),
			.r = (uint16_t)(f->r - l->fr),
			.d = (uint16_t)(f->d - l->fr),
			.hd = (uint16_t)(f->hd - l->fr),
			.sout = (uint16_t)(f->sout - l->fr),
			.xout = (uint16_t)(f->xout - l->fr),
		};
	}
	o->c = c;
	return 0;
}

/* The order of (schedule, p, v, m) with its transfers' streams split
 * per pair of neighbours or not (split_pairs), remembered (est_pipe_run
 * asks for a few m per (p, v)); with g > 0, the order of est_pipe_run's
 * three runs from m0 = m (build_three), remembered under m: -m0, which no
 * single run has. NULL when out of memory. */
static const struct porder *order_of(struct est *e, int schedule, int64_t p,
				     int64_t v, int64_t m, int64_t g,
				     int split)
{
	int64_t key[EST_PIPE_KEY] = { schedule, p, v, g > 0 ? -m : m, split };
	struct porder *const *hit = memo_get(&e->pipe_lists, key);
	struct porder *o;
	int rc;

	if (hit)
		return *hit;
	if (!(o = mem_calloc(1, sizeof(*o))))
		return NULL;
	rc = g > 0 ? build_three(schedule, p, v, m, g, split, o)
		   : build_order(schedule, p, v, m, split, o);
	if (rc == 0 && !e->pipe_flat) {
		int64_t S = p * v;
		struct playout l = layout_of(p, S, g > 0 ? o->M : m);

		rc = pack(o, &l);
	}
	if (rc != 0 || !memo_put(&e->pipe_lists, key, &o)) {
		est_pipe_order_free(o);
		return NULL;
	}
	return o;
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

/* run_flat() along the packed steps c .. last - 1 (struct pcomp): the
 * same operations on the same cells in the same order; sm = val + l.fr,
 * junk the junk cell's index in val. */
static inline void run_packed(double *val, double *sent, double *sm,
			      int64_t junk, const struct pcomp *t,
			      const struct pcomp *last, int held)
{
	for (; t < last; t++) {
		double got = val[t->in], slot = sm[t->sin], ready, fr, done;
		uint32_t at = t->at & ~PCOMP_KEPT;

		__builtin_prefetch(t + 40);	/* as run_flat() */
		ready = (got > slot ? got : slot) + sm[t->xin];
		sm[t->sin] = ready;
		fr = sm[t->r];
		done = (ready > fr ? ready : fr) + sm[held ? t->hd : t->d];
		val[t->at & PCOMP_KEPT ? (int64_t)at : junk] = done;
		sm[t->r] = done;
		slot = sm[t->sout];
		slot = done > slot ? done : slot;
		sent[at] = slot;
		sm[t->sout] = slot + sm[t->xout];
	}
}

/* Steps k .. k + n - 1 of order o in the scratch val laid out as l:
 * packed where o has them, else as they are. */
static inline void run_steps(const struct porder *o, const struct playout *l,
			     double *val, int64_t k, int64_t n, int held)
{
	if (o->c)
		run_packed(val, val + l->sent, val + l->fr, l->junk, o->c + k,
			   o->c + k + n, held);
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
	const struct porder *o = order_of(e, in->schedule, p, v, m, 0,
					  split_pairs(in));
	struct playout l = layout_of(p, S, m);
	double *val;
	int held = in->f_held != NULL;	/* the held durations apply */

	if (!o || room(e, 0, l.n) != 0)
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
			t = step_of(a[r * n + pos[r]], r, p, S, m, 0,
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
			t = step_of(a[r * n + pos[r]], r, p, S, m, 0,
				    held + r * v);
			pos[r]++;
			left--;
			if (t.sout < 0)
				continue;
			q = a[r * n + pos[r] - 1].bwd ? (r + p - 1) % p :
							(r + 1) % p;
			/* the receiver's slot: as step_of gives its input's
			 * (lock step never splits the pairs) */
			sin = a[r * n + pos[r] - 1].bwd ?
				      slot_of(q, 1, q == p - 1, q, 0) :
				      slot_of(q, 0, q == 0, q - 1, 0);
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
	const struct porder *o = order_of(e, in->schedule, p, v, m0, g,
					  split_pairs(in));
	struct playout l = layout_of(p, S, M);
	int64_t t;
	double *val, *keep;
	int held = in->f_held != NULL;

	if (!o || room(e, 0, l.n + nst + p) != 0)
		return -1;
	val = e->pipe_t;
	keep = val + l.n;	/* the ranks' free times, streams, dummies */
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
