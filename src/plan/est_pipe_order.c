/*
 * est_pipe_order.c - the orders est_pipe.c's recurrence runs along: every
 * rank's pipeline actions (models/sched.h) as steps with their operands
 * precomputed (struct pflat, packed as struct pcomp), by rounds, one
 * order per shape (schedule, p, v, m), remembered; est_pipe_run's three
 * runs as one order. The recurrence and what it computes: est_pipe.c.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "models/sched.h"
#include "est_pipe_impl.h"

struct playout est_pipe_layout(int64_t p, int64_t S, int64_t m)
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


/* Rank r's stream slot for a transfer of direction bwd (0 the forward
 * activations, 1 the gradients) with a neighbour: wrap, the interleaved
 * wrap between ranks p - 1 and 0; else lower, the pair's lower pipeline
 * rank, whose parity picks the stream when split (models/train_pp.c
 * lane_of: a pair whose lower rank is odd has streams of its own). A
 * transfer takes the same kind of slot at its two ends. */
int32_t est_pipe_slot(int64_t r, int bwd, int wrap, int64_t lower,
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
int est_pipe_split(const struct est_pipe *in)
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
			t.sin = est_pipe_slot(r, 0, r == 0, r - 1, split);
			t.xin = (int32_t)((s - 1) % p);
		}
		if (s < S - 1) {
			t.sout = est_pipe_slot(r, 0, r == p - 1, r, split);
			t.xout = (int32_t)r;
		}
		return t;
	}
	t.at = (int32_t)(S * M + s * M + i);
	t.kept = i == m - 1;
	t.d = (int32_t)(i == m - 1 ? 3 * S + s : S + s);
	if (s < S - 1) {
		t.src = (int32_t)(S * M + (s + 1) * M + i);
		t.sin = est_pipe_slot(r, 1, r == p - 1, r, split);
		t.xin = (int32_t)(s % p);
	} else {
		t.src = -2;
		t.own = (int32_t)(s * M + i);
	}
	if (s > 0) {
		t.sout = est_pipe_slot(r, 1, r == 0, r - 1, split);
		t.xout = (int32_t)((s - 1) % p);
	}
	return t;
}

/* step_at with the stride m: one run's own layout. */
struct pstep est_pipe_step(struct sched_action x, int64_t r, int64_t p,
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
	struct playout l = est_pipe_layout(p, S, m);
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
			t = est_pipe_step(x, r, p, S, m, split, held + r * v);
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
	struct playout l = est_pipe_layout(p, S, M);
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

/* Cell i (at l.fr or after, below l.fr + 2^16) as struct pcomp holds
 * it: 16 bits from l.fr. */
static uint64_t small(int64_t i, const struct playout *l)
{
	return (uint64_t)(uint16_t)(i - l->fr);
}

/*
 * The sent cells of a packed order, pooled (struct pcomp, snd): each
 * step's sent value is read by one step at most (the next stage's
 * forward, the previous stage's backward; est_pipe_run's three runs read
 * a value their shared steps sent once each), a round or two later, so
 * a few hundred cells hold every value that is still to be read, where
 * the layout's sent array has 2 S m (for p 128, m 128: 256 KiB written
 * once and read once, far apart: past L1, and with the order past L2).
 * A value's cell is taken from the free ones at its step and given back
 * after its last read: pool[k] is step k's cell (from l.n; -1: its value
 * is never read, the junk cell takes it), rd[k] the cell step k reads
 * its input from (-1: not a sent value). Values and operations are the
 * same, in the same order, as along the sent array (a read finds the
 * value of the last write to its cell there, and the cell is held from
 * that write to its last read here). 0 with *npool the cells used; 1
 * when a step reads a sent cell no step before it wrote (none of the
 * orders built here: the order is left unpacked); -1 out of memory.
 */
static int pool_cells(const struct porder *o, const struct playout *l,
		      int32_t *pool, int32_t *rd, int64_t *npool)
{
	int64_t nsent = l->fr - l->sent, k, top = 0, nfree = 0;
	/* per sent cell: the step that last wrote it (-1 none) */
	int64_t *writer = mem_alloc((size_t)nsent * sizeof(*writer));
	/* per step: the last step that reads its value (-1 none) */
	int64_t *last = mem_alloc((size_t)o->n * sizeof(*last));
	int32_t *free_c = mem_alloc((size_t)o->n * sizeof(*free_c));
	int rc = -1;

	if (!writer || !last || !free_c)
		goto out;
	for (k = 0; k < nsent; k++)
		writer[k] = -1;
	for (k = 0; k < o->n; k++) {
		const struct pflat *f = &o->v[k];

		last[k] = -1;
		rd[k] = -1;
		if (f->in >= l->sent && f->in < l->fr) {
			int64_t w = writer[f->in - l->sent];

			if (w < 0) {
				rc = 1;
				goto out;
			}
			last[w] = k;
			rd[k] = (int32_t)w;	/* the writer, for now */
		}
		writer[f->at] = k;
	}
	for (k = 0; k < o->n; k++) {
		int32_t freed = -1;

		if (rd[k] >= 0) {
			int64_t w = rd[k];

			rd[k] = pool[w];
			if (last[w] == k)
				freed = pool[w];
		}
		pool[k] = -1;
		if (last[k] >= 0)
			pool[k] = nfree > 0 ? free_c[--nfree] : (int32_t)top++;
		if (freed >= 0)	/* after this step's own: not its cell */
			free_c[nfree++] = freed;
	}
	*npool = top;
	rc = 0;
out:
	mem_free(writer);
	mem_free(last);
	mem_free(free_c);
	return rc;
}

/* o->c from o->v in the scratch laid out as l, the sent values in the
 * pool after l.n (pool_cells), when every small cell, the pool's too, is
 * within 16 bits of l.fr (else o->c stays NULL: run_steps() takes v);
 * -1 out of memory. */
static int pack(struct porder *o, const struct playout *l)
{
	int64_t k, npool = 0;
	int32_t *pool, *rd;
	struct pcomp *c;
	int rc;

	if (l->n - l->fr > UINT16_MAX || o->n == 0)
		return 0;
	pool = mem_alloc((size_t)(2 * o->n) * sizeof(*pool));
	if (!pool)
		return -1;
	rd = pool + o->n;
	rc = pool_cells(o, l, pool, rd, &npool);
	if (rc != 0 || l->n + npool - l->fr > UINT16_MAX) {
		mem_free(pool);
		return rc < 0 ? -1 : 0;
	}
	c = mem_alloc((size_t)o->n * sizeof(*c));
	if (!c) {
		mem_free(pool);
		return -1;
	}
	for (k = 0; k < o->n; k++) {
		const struct pflat *f = &o->v[k];
		int64_t snd = pool[k] >= 0 ? l->n + pool[k] : l->junk;

		c[k] = (struct pcomp){
			.in = rd[k] >= 0 ? (int32_t)(l->n + rd[k]) : f->in,
			.at = (uint32_t)f->at |
			      (f->ae == f->at ? PCOMP_KEPT : 0),
			.rd = small(f->sin, l) << PCOMP_SIN |
			      small(f->xin, l) << PCOMP_XIN |
			      small(f->r, l) << PCOMP_R |
			      small(f->d, l) << PCOMP_D,
			.out = small(f->hd, l) << PCOMP_HD |
			       small(f->sout, l) << PCOMP_SOUT |
			       small(f->xout, l) << PCOMP_XOUT |
			       small(snd, l) << PCOMP_SND,
		};
	}
	mem_free(pool);
	o->c = c;
	o->pool = npool;
	return 0;
}

/* The order of (schedule, p, v, m) with its transfers' streams split
 * per pair of neighbours or not (est_pipe_split), remembered (est_pipe_run
 * asks for a few m per (p, v)); with g > 0, the order of est_pipe_run's
 * three runs from m0 = m (build_three), remembered under m: -m0, which no
 * single run has. NULL when out of memory. */
const struct porder *est_pipe_order(struct est *e, int schedule, int64_t p,
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
		struct playout l = est_pipe_layout(p, S, g > 0 ? o->M : m);

		rc = pack(o, &l);
	}
	if (rc != 0 || !memo_put(&e->pipe_lists, key, &o)) {
		est_pipe_order_free(o);
		return NULL;
	}
	return o;
}
