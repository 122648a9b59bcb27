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
 * streams of its own. (The synchronization tax of the pair's rendezvous,
 * exec_jitter.c, is left out: charged per transfer it overshot 1F1B
 * pipelines by 3-5 % against the engine.)
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

/* The recurrence's state: per (virtual stage, microbatch) the end of
 * its forward and backward (fe, be) and when their outputs are ready to
 * send (fs, bs: the sender's transfer stream is free); per rank its
 * compute stream and its four transfer streams (forward, forward wrap,
 * backward, backward wrap). */
struct run {
	const struct est_pipe *in;
	int64_t m, S;
	double *fe, *be, *fs, *bs;
	double *free_s;		/* [p] compute stream */
	double *stream;		/* [4 p] transfer streams */
};

enum { ST_F, ST_FW, ST_B, ST_BW };

/* A receive on rank r's stream k of a tensor ready to send at sent over
 * pair x: when its data is there (the stream takes the transfers in the
 * rank's own order, so a receive waits for the rank's earlier send). */
static double receive(struct run *u, int64_t r, int k, double sent, double x)
{
	double *free_k = &u->stream[4 * r + k];
	double start = sent > *free_k ? sent : *free_k;

	*free_k = start + x;
	return *free_k;
}

/* A send of a tensor produced at end on rank r's stream k over pair x:
 * when the transfer may start. */
static double send(struct run *u, int64_t r, int k, double end, double x)
{
	double *free_k = &u->stream[4 * r + k];
	double start = end > *free_k ? end : *free_k;

	*free_k = start + x;
	return start;
}

static void place_fwd(struct run *u, int64_t r, int64_t s, int64_t i)
{
	const struct est_pipe *in = u->in;
	int64_t p = in->p, m = u->m;
	double ready = 0, end;

	if (s > 0)
		ready = receive(u, r, r == 0 ? ST_FW : ST_F, u->fs[(s - 1) * m + i],
				in->x[(s - 1) % p]);
	end = (ready > u->free_s[r] ? ready : u->free_s[r]) +
	      (i == 0 && in->f_first ? in->f_first[s] : in->f[s]);
	u->fe[s * m + i] = u->free_s[r] = end;
	if (s < u->S - 1)
		u->fs[s * m + i] = send(u, r, r == p - 1 ? ST_FW : ST_F, end,
					in->x[r]);
}

static void place_bwd(struct run *u, int64_t r, int64_t s, int64_t i)
{
	const struct est_pipe *in = u->in;
	int64_t p = in->p, m = u->m;
	double ready, end;

	if (s < u->S - 1)
		ready = receive(u, r, r == p - 1 ? ST_BW : ST_B,
				u->bs[(s + 1) * m + i], in->x[s % p]);
	else
		ready = u->fe[s * m + i];
	end = (ready > u->free_s[r] ? ready : u->free_s[r]) +
	      (i == m - 1 && in->b_last ? in->b_last[s] : in->b[s]);
	u->be[s * m + i] = u->free_s[r] = end;
	if (s > 0)
		u->bs[s * m + i] = send(u, r, r == 0 ? ST_BW : ST_B, end,
					in->x[(s - 1) % p]);
}

/* One action of the order below. */
struct pstep {
	int32_t s;		/* virtual stage */
	int32_t i;		/* microbatch */
	int32_t r;		/* rank */
	int32_t bwd;		/* 0 forward, 1 backward */
};

/* Every rank's actions in an order each action comes after its input's
 * producer (and after its rank's earlier actions): the ranks taken in
 * turn, each advanced as far as its next action's input is placed. It
 * depends on (schedule, p, v, m) only, so it is built once and every
 * layout of that shape runs along it. */
struct porder {
	int64_t n;
	struct pstep *v;
};

static int build_order(int schedule, int64_t p, int64_t v, int64_t m,
		       struct porder *o)
{
	int64_t S = p * v, n = sched_actions(m, v), left = p * n, r, k = 0;
	struct sched_action *a = mem_alloc((size_t)(p * n) * sizeof(*a));
	uint8_t *fp = mem_calloc((size_t)(2 * S * m), 1), *bp = fp + S * m;
	int64_t *pos = mem_calloc((size_t)p, sizeof(*pos));
	int rc = -1;

	o->n = p * n;
	o->v = mem_alloc((size_t)(p * n) * sizeof(*o->v));
	if (!a || !fp || !pos || !o->v)
		goto out;
	for (r = 0; r < p; r++)
		sched_rank(schedule, p, v, m, r, a + r * n);
	while (left > 0) {
		int64_t placed = 0;

		for (r = 0; r < p; r++)
			while (pos[r] < n) {
				struct sched_action x = a[r * n + pos[r]];
				int64_t s = (int64_t)x.chunk * p + r, i = x.mb;

				if (x.bwd ? (s < S - 1 && !bp[(s + 1) * m + i]) :
					    (s > 0 && !fp[(s - 1) * m + i]))
					break;
				(x.bwd ? bp : fp)[s * m + i] = 1;
				o->v[k++] = (struct pstep){ (int32_t)s, (int32_t)i,
							    (int32_t)r, x.bwd };
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
	if (rc != 0) {
		mem_free(o->v);
		o->v = NULL;
	}
	return rc;
}

/* The order of (schedule, p, v, m), remembered (est_pipe_run asks for a
 * few m per (p, v)). NULL when out of memory. */
static const struct porder *order_of(struct est *e, int schedule, int64_t p,
				     int64_t v, int64_t m)
{
	int64_t key[4] = { schedule, p, v, m };
	struct porder *const *hit = memo_get(&e->pipe_lists, key);
	struct porder *o;

	if (hit)
		return *hit;
	if (!(o = mem_calloc(1, sizeof(*o))))
		return NULL;
	if (build_order(schedule, p, v, m, o) != 0 ||
	    !memo_put(&e->pipe_lists, key, &o)) {
		est_pipe_order_free(o);
		return NULL;
	}
	return o;
}

void est_pipe_order_free(void *order)
{
	struct porder *o = order;

	if (o)
		mem_free(o->v);
	mem_free(o);
}

/* The recurrence for m microbatches. */
static int run_once(struct est *e, const struct est_pipe *in, int64_t m,
		    double *rank_end, double *chunk_end)
{
	int64_t p = in->p, v = in->v, S = p * v, r, c, k;
	const struct porder *o = order_of(e, in->schedule, p, v, m);
	struct run u = { .in = in, .m = m, .S = S };

	if (!o || room(e, 0, 4 * S * m + 5 * p) != 0)
		return -1;
	u.fe = e->pipe_t;
	u.be = u.fe + S * m;
	u.fs = u.be + S * m;
	u.bs = u.fs + S * m;
	u.free_s = u.bs + S * m;
	u.stream = u.free_s + p;
	for (k = 0; k < 5 * p; k++)
		u.free_s[k] = 0;
	for (k = 0; k < o->n; k++) {
		const struct pstep *x = &o->v[k];

		if (x->bwd)
			place_bwd(&u, x->r, x->s, x->i);
		else
			place_fwd(&u, x->r, x->s, x->i);
	}
	for (r = 0; r < p; r++) {
		rank_end[r] = u.free_s[r];
		for (c = 0; c < v; c++)
			chunk_end[r * v + c] = u.be[(c * p + r) * m + m - 1];
	}
	return 0;
}

/*
 * Past its fill the schedule repeats: every further group of g
 * microbatches (p for the interleaved schedule, whose groups are p, else
 * 1) adds the same time to every end. So for m well past the fill the
 * recurrence is run for m0, m0 + g and m0 + 2g (m0 = p, or 2p for the
 * interleaved schedule) and extended linearly, after checking that the
 * two steps agree on every end (else it runs for m itself). Exact, and
 * cheaper when m is past a few p.
 */
int est_pipe_run(struct est *e, const struct est_pipe *in, double *rank_end,
		 double *chunk_end)
{
	int64_t p = in->p, v = in->v, m = in->m, g, m0, k, ends = p + p * v;
	double *x;

	/* 1F1B and GPipe repeat once every rank is past its warm-up (p
	 * microbatches); the interleaved schedule needs m > p (m = p runs
	 * every forward first) */
	g = in->schedule == SCHED_INTERLEAVED ? p : 1;
	m0 = g == 1 ? p : 2 * p;
	if (m <= m0 + 3 * g || (in->schedule == SCHED_INTERLEAVED && m % p))
		return run_once(e, in, m, rank_end, chunk_end);
	if ((size_t)(3 * ends) > e->pipe_x_cap) {
		x = mem_realloc(e->pipe_x, (size_t)(3 * ends) * sizeof(*x));
		if (!x)
			return -1;
		e->pipe_x = x;
		e->pipe_x_cap = (size_t)(3 * ends);
	}
	x = e->pipe_x;
	for (k = 0; k < 3; k++)
		if (run_once(e, in, m0 + k * g, x + k * ends, x + k * ends + p) != 0)
			return -1;
	for (k = 0; k < ends; k++) {
		double d1 = x[ends + k] - x[k], d2 = x[2 * ends + k] - x[ends + k];

		if (fabs(d1 - d2) > 1e-9 * fabs(x[2 * ends + k]))
			return run_once(e, in, m, rank_end, chunk_end);
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
