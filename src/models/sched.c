/*
 * sched.c - GPipe, 1F1B and interleaved 1F1B.
 *
 * m microbatches, p ranks, v chunks per rank; every forward F and backward
 * B of a (chunk, microbatch) is one action.
 *
 * GPipe (Huang et al. 2019): every rank runs all m forwards, then all m
 * backwards. With forward time f and backward time b per stage and free
 * communication, the step is (m + p - 1)(f + b) and the idle fraction of
 * each rank, the bubble, is (p - 1) / (m + p - 1).
 *
 * 1F1B (PipeDream-Flush, Narayanan et al. 2021): rank r runs
 * w = min(p - r - 1, m) warm-up forwards, then alternates one forward and
 * one backward for the remaining m - w microbatches, then runs the last w
 * backwards. Same bubble as GPipe, but at most w + 1 <= p microbatches in
 * flight instead of m.
 *
 * Interleaved 1F1B (Narayanan et al. SC'21, Megatron-LM
 * forward_backward_pipelining_with_interleaving): the m v chunk passes of
 * a rank are taken in groups of p microbatches per chunk. Forward number k
 * runs chunk (k mod p v) div p on microbatch (k div p v) p + k mod p;
 * backward number k the same microbatch on chunk v - 1 - (k mod p v) div p.
 * Warm-up: w = min(2 (p - r - 1) + (v - 1) p, m v) forwards, then 1F1B
 * steady state, then cool-down. (Megatron-Core before 4295be1a6c, Nov
 * 2024, ran every forward first when m == p; get_pp_rank_microbatches
 * has no such case, and the all-to-all overlap below exists only after
 * it: with m == p the last ranks have steady-state steps.)
 * The bubble shrinks by v: (p - 1) / (v m) of the ideal time.
 *
 * With MoE all-to-all overlap (Megatron-Core's combined 1F1B, schedules.py
 * get_pp_rank_microbatches) every pipelined rank runs one more warm-up
 * forward, so that the forward and the backward run together in each
 * steady-state step are independent (sched_rank_ex's extra).
 */
#include "sched.h"

#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"

int64_t sched_actions(int64_t m, int64_t vpp)
{
	return 2 * m * vpp;
}

int64_t sched_warmup(int schedule, int64_t pp, int64_t vpp, int64_t m,
		     int64_t rank)
{
	int64_t w;

	switch (schedule) {
	case SCHED_GPIPE:
		return m;
	case SCHED_1F1B:
		w = pp - rank - 1;
		return w < m ? w : m;
	case SCHED_INTERLEAVED:
		w = 2 * (pp - rank - 1) + (vpp - 1) * pp;
		return w < m * vpp ? w : m * vpp;
	default:
		break;
	}
	BUG("unknown pipeline schedule");
}

/* The k-th forward (bwd = 0) or backward (bwd = 1) of a rank. */
static struct sched_action nth(int schedule, int64_t pp, int64_t vpp,
			       int bwd, int64_t k)
{
	struct sched_action a = { .bwd = (uint8_t)bwd, .chunk = 0,
				  .mb = (uint32_t)k };
	int64_t group = pp * vpp, in_group = k % group;

	if (schedule == SCHED_INTERLEAVED) {
		int64_t chunk = in_group / pp;

		a.chunk = (uint32_t)(bwd ? vpp - 1 - chunk : chunk);
		a.mb = (uint32_t)((k / group) * pp + in_group % pp);
	}
	return a;
}

void sched_rank(int schedule, int64_t pp, int64_t vpp, int64_t m,
		int64_t rank, struct sched_action *out)
{
	sched_rank_ex(schedule, pp, vpp, m, rank, 0, out);
}

int sched_lockstep(const struct job_spec *j, int64_t mg)
{
	const struct parallel_spec *p = &j->parallelism;
	int a2a = model_is_moe(j->model) && j->moe.a2a_overlap && p->ep > 1;

	return j->framework->pp_lockstep && p->pp > 1 &&
	       p->schedule == SCHED_INTERLEAVED && !a2a && mg % p->pp == 0;
}

int64_t sched_lock_step(int64_t pp, int64_t vpp, int64_t n, int64_t w,
			int64_t rank, int64_t k)
{
	int64_t fb = n / 2 - w, steady = vpp * pp + 2 * (pp - 1 - rank);

	if (steady < rank + w || w == 0)	/* the idle steps follow the
						 * last warm-up forward */
		steady = rank + w;
	if (k < w)
		return rank + k;
	if (k < w + 2 * fb)
		return steady + (k - w);
	return steady + 2 * fb + 2 * (k - w - 2 * fb) + 1;
}

int64_t sched_warmup_ex(int schedule, int64_t pp, int64_t vpp, int64_t m,
			int64_t rank, int64_t extra)
{
	int64_t total = m * vpp;
	int64_t w = sched_warmup(schedule, pp, vpp, m, rank);

	if (pp > 1 && schedule != SCHED_GPIPE)
		w = w + extra < total ? w + extra : total;
	return w;
}

void sched_rank_ex(int schedule, int64_t pp, int64_t vpp, int64_t m,
		   int64_t rank, int64_t extra, struct sched_action *out)
{
	int64_t total = m * vpp;
	int64_t w = sched_warmup_ex(schedule, pp, vpp, m, rank, extra);
	int64_t i, n = 0, f = 0, b = 0;

	if (schedule != SCHED_INTERLEAVED && vpp != 1)
		BUG("vpp > 1 needs the interleaved schedule");
	for (i = 0; i < w; i++)
		out[n++] = nth(schedule, pp, vpp, 0, f++);
	for (i = 0; i < total - w; i++) {
		out[n++] = nth(schedule, pp, vpp, 0, f++);
		out[n++] = nth(schedule, pp, vpp, 1, b++);
	}
	while (b < total)
		out[n++] = nth(schedule, pp, vpp, 1, b++);
}

/* Whether a >= b in every chunk. */
static int dominates(const int32_t *a, const int32_t *b, int64_t v)
{
	int64_t c;

	for (c = 0; c < v; c++)
		if (a[c] < b[c])
			return 0;
	return 1;
}

/* Keep the vectors of l that no other dominates (the first of equals),
 * in their order. One pass with the set of those not dominated so far
 * (kept, indices in order; room for l->n): a vector some kept one
 * dominates (or equals: that one came first) is dropped; else it drops
 * the kept ones it dominates and joins them. Dominance is a partial
 * order, so every vector dropped is dominated by one still kept when
 * it comes, or was, and what is left at the end is the vectors no other
 * dominates, the first of equals: the set and order the comparison of
 * every pair gave, in O(n K v) for K kept (a few) where that was
 * O(n^2 v) (the interleaved schedule's m vpp vectors; the planner
 * builds them for every (pp, vpp, m) it meets). */
static void keep_maximal(struct sched_live *l, int64_t *kept)
{
	int64_t i, k, j, n = 0, v = l->vpp;

	for (i = 0; i < l->n; i++) {
		const int32_t *x = l->count + i * v;

		for (k = 0; k < n; k++)
			if (dominates(l->count + kept[k] * v, x, v))
				break;
		if (k < n)
			continue;
		for (k = j = 0; k < n; k++)
			if (!dominates(x, l->count + kept[k] * v, v))
				kept[j++] = kept[k];
		n = j;
		kept[n++] = i;
	}
	for (k = 0; k < n; k++)	/* kept[k] >= k: moves down */
		memmove(l->count + k * v, l->count + kept[k] * v,
			(size_t)v * sizeof(*l->count));
	l->n = n;
}

int sched_live_init(struct sched_live *l, int schedule, int64_t pp,
		    int64_t vpp, int64_t m, int64_t rank, int64_t extra)
{
	int64_t n = sched_actions(m, vpp), i;
	struct sched_action *acts = mem_alloc((size_t)n * sizeof(*acts));
	int32_t *live = mem_calloc((size_t)vpp, sizeof(*live)), *shrunk;
	/* at most one vector per backward (it ends a run of forwards) */
	int64_t *kept = mem_alloc((size_t)(m * vpp + 1) * sizeof(*kept));

	memset(l, 0, sizeof(*l));
	l->vpp = vpp;
	l->count = mem_alloc((size_t)(m * vpp + 1) * (size_t)vpp *
			     sizeof(*l->count));
	if (!acts || !live || !kept || !l->count) {
		mem_free(acts);
		mem_free(live);
		mem_free(kept);
		sched_live_release(l);
		return -1;
	}
	sched_rank_ex(schedule, pp, vpp, m, rank, extra, acts);
	for (i = 0; i < n; i++) {
		live[acts[i].chunk] += acts[i].bwd ? -1 : 1;
		if (acts[i].bwd || (i + 1 < n && !acts[i + 1].bwd))
			continue;
		if (l->n > 0 && memcmp(l->count + (l->n - 1) * vpp, live,
				       (size_t)vpp * sizeof(*live)) == 0)
			continue;
		memcpy(l->count + l->n * vpp, live, (size_t)vpp * sizeof(*live));
		l->n++;
	}
	mem_free(acts);
	mem_free(live);
	keep_maximal(l, kept);
	mem_free(kept);
	/* The block shrunk to the vectors kept (a few of the m vpp + 1 it
	 * had room for): the planner keeps every (schedule, pp, vpp, m)'s
	 * vectors, and the freed tail is where the next block is built,
	 * on pages already touched. Shrinking cannot fail to keep them. */
	if ((shrunk = mem_realloc(l->count, (size_t)(l->n > 0 ? l->n : 1) *
					    (size_t)vpp * sizeof(*l->count))))
		l->count = shrunk;
	return 0;
}

void sched_live_release(struct sched_live *l)
{
	mem_free(l->count);
	l->count = NULL;
	l->n = 0;
}

double sched_live_peak(const struct sched_live *l, const double *w)
{
	double peak = 0;
	int64_t i, c;

	for (i = 0; i < l->n; i++) {
		const int32_t *x = l->count + i * l->vpp;
		double sum = 0;

		for (c = 0; c < l->vpp; c++)
			sum += x[c] * w[c];
		if (sum > peak)
			peak = sum;
	}
	return peak;
}
