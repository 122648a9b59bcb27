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
 * longer: the data-parallel collectives they overlap, est_dp.c)
 * x the transfer between stages (the step program's send/recv; across
 * the interleaved schedule's wrap too). Ranks are advanced in turn, each
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

/* Grow the scratch to hold 2 S m times. */
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

/* Place rank r's actions from pos[r] on while their inputs are known;
 * returns how many it placed. */
static int64_t advance(const struct est_pipe *in, int64_t r,
		       const struct sched_action *acts, int64_t n,
		       int64_t *pos, double *free_s, double *fe, double *be)
{
	int64_t p = in->p, m = in->m, S = p * in->v, placed = 0;

	while (pos[r] < n) {
		struct sched_action a = acts[pos[r]];
		int64_t s = (int64_t)a.chunk * p + r, i = a.mb;
		double ready = 0, t;

		if (!a.bwd) {
			if (s > 0) {
				if ((t = fe[(s - 1) * m + i]) < 0)
					break;
				ready = t + in->x;
			}
			fe[s * m + i] = (ready > free_s[r] ? ready : free_s[r]) +
					(i == 0 && in->f_first ? in->f_first[s] : in->f[s]);
			free_s[r] = fe[s * m + i];
		} else {
			if (s < S - 1) {
				if ((t = be[(s + 1) * m + i]) < 0)
					break;
				ready = t + in->x;
			} else {
				ready = fe[s * m + i];
			}
			be[s * m + i] = (ready > free_s[r] ? ready : free_s[r]) +
					(i == m - 1 && in->b_last ? in->b_last[s] : in->b[s]);
			free_s[r] = be[s * m + i];
		}
		pos[r]++;
		placed++;
	}
	return placed;
}

/* The action lists of every rank of (schedule, p, v, m), remembered
 * (est_pipe_run asks for a few m per (p, v): its lists are small). NULL
 * when out of memory. */
static const struct sched_action *actions(struct est *e, int schedule,
					  int64_t p, int64_t v, int64_t m)
{
	int64_t key[4] = { schedule, p, v, m }, n = sched_actions(m, v), r;
	struct sched_action *const *hit = memo_get(&e->pipe_lists, key);
	struct sched_action *a;

	if (hit)
		return *hit;
	a = mem_alloc((size_t)(p * n) * sizeof(*a));
	if (!a)
		return NULL;
	for (r = 0; r < p; r++)
		sched_rank(schedule, p, v, m, r, a + r * n);
	if (!memo_put(&e->pipe_lists, key, &a)) {
		mem_free(a);
		return NULL;
	}
	return a;
}

/* The recurrence for m microbatches. */
static int run_once(struct est *e, const struct est_pipe *in, int64_t m,
		    double *rank_end, double *chunk_end)
{
	int64_t p = in->p, v = in->v, S = p * v;
	int64_t n = sched_actions(m, v), r, c, left = p * n, i;
	int64_t pos_small[64], *pos = pos_small;
	double free_small[64], *free_s = free_small, *fe, *be;
	const struct sched_action *acts = actions(e, in->schedule, p, v, m);
	struct est_pipe at = *in;
	int rc = -1;

	at.m = m;
	if (!acts || room(e, 0, 2 * S * m) != 0)
		return -1;
	if (p > 64) {
		pos = mem_alloc((size_t)p * sizeof(*pos));
		free_s = mem_alloc((size_t)p * sizeof(*free_s));
		if (!pos || !free_s)
			goto out;
	}
	fe = e->pipe_t;
	be = e->pipe_t + S * m;
	for (i = 0; i < 2 * S * m; i++)
		e->pipe_t[i] = -1;
	for (r = 0; r < p; r++) {
		pos[r] = 0;
		free_s[r] = 0;
	}
	while (left > 0) {
		int64_t placed = 0;

		for (r = 0; r < p; r++)
			placed += advance(&at, r, acts + r * n, n, pos, free_s,
					  fe, be);
		if (placed == 0)
			BUG("a pipeline schedule that cannot advance");
		left -= placed;
	}
	for (r = 0; r < p; r++) {
		rank_end[r] = free_s[r];
		for (c = 0; c < v; c++)
			chunk_end[r * v + c] = be[(c * p + r) * m + m - 1];
	}
	rc = 0;
out:
	if (pos != pos_small)
		mem_free(pos);
	if (free_s != free_small)
		mem_free(free_s);
	return rc;
}

/*
 * Past its fill the schedule repeats: every further group of g
 * microbatches (p for the interleaved schedule, whose groups are p, else
 * 1) adds the same time to every end. So for m well past the fill the
 * recurrence is run for m0, m0 + g and m0 + 2g (m0 the first multiple of
 * g at or above 2p) and extended linearly, after checking that the two
 * steps agree on every end (else it runs for m itself). Exact, cheaper
 * by m / 9p.
 */
int est_pipe_run(struct est *e, const struct est_pipe *in, double *rank_end,
		 double *chunk_end)
{
	int64_t p = in->p, v = in->v, m = in->m, g, m0, k, ends = p + p * v;
	double *x;

	g = in->schedule == SCHED_INTERLEAVED ? p : 1;
	m0 = (2 * p + g - 1) / g * g;
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
