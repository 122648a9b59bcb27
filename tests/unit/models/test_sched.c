/*
 * test_sched.c - pipeline schedules as action lists.
 */
#include <criterion/criterion.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <stdlib.h>
#include <string.h>

#include "models/sched.h"
#include "config/spec_job.h"

static void expect(const struct sched_action *a, int bwd, unsigned chunk,
		   unsigned mb)
{
	cr_assert(a->bwd == bwd && a->chunk == chunk && a->mb == mb,
		  "got %c c%u m%u, want %c c%u m%u", a->bwd ? 'B' : 'F',
		  a->chunk, a->mb, bwd ? 'B' : 'F', chunk, mb);
}

Test(sched, one_f_one_b_first_rank)
{
	struct sched_action a[16];

	/* p 4, m 8, rank 0: 3 warm-up forwards, 5 F/B pairs, 3 backwards. */
	sched_rank(SCHED_1F1B, 4, 1, 8, 0, a);
	expect(&a[0], 0, 0, 0);
	expect(&a[2], 0, 0, 2);
	expect(&a[3], 0, 0, 3);
	expect(&a[4], 1, 0, 0);
	expect(&a[5], 0, 0, 4);
	expect(&a[12], 1, 0, 4);
	expect(&a[13], 1, 0, 5);
	expect(&a[15], 1, 0, 7);
}

Test(sched, one_f_one_b_last_rank)
{
	struct sched_action a[16];
	int i;

	/* The last rank has no warm-up: F0 B0 F1 B1 ... */
	sched_rank(SCHED_1F1B, 4, 1, 8, 3, a);
	for (i = 0; i < 8; i++) {
		expect(&a[2 * i], 0, 0, (unsigned)i);
		expect(&a[2 * i + 1], 1, 0, (unsigned)i);
	}
}

Test(sched, gpipe_all_forward_then_backward)
{
	struct sched_action a[16];
	int i;

	sched_rank(SCHED_GPIPE, 4, 1, 8, 1, a);
	for (i = 0; i < 8; i++) {
		expect(&a[i], 0, 0, (unsigned)i);
		expect(&a[8 + i], 1, 0, (unsigned)i);
	}
}

Test(sched, interleaved_order)
{
	struct sched_action a[16];

	/* p 2, v 2, m 4, rank 0: warm-up 2*(2-0-1) + (2-1)*2 = 4 forwards
	 * F(c0,m0) F(c0,m1) F(c1,m0) F(c1,m1); then F(c0,m2) B(c1,m0)
	 * F(c0,m3) B(c1,m1) F(c1,m2) B(c0,m0) ... */
	cr_assert_eq(sched_warmup(SCHED_INTERLEAVED, 2, 2, 4, 0), 4);
	sched_rank(SCHED_INTERLEAVED, 2, 2, 4, 0, a);
	expect(&a[0], 0, 0, 0);
	expect(&a[1], 0, 0, 1);
	expect(&a[2], 0, 1, 0);
	expect(&a[3], 0, 1, 1);
	expect(&a[4], 0, 0, 2);
	expect(&a[5], 1, 1, 0);
	expect(&a[6], 0, 0, 3);
	expect(&a[7], 1, 1, 1);
	expect(&a[8], 0, 1, 2);
	expect(&a[9], 1, 0, 0);
	expect(&a[15], 1, 0, 3);
}

Test(sched, interleaved_warmup_when_m_equals_p)
{
	/* Megatron-Core's get_pp_rank_microbatches has no m == p special
	 * case (dropped in 4295be1a6c, Nov 2024): p 4, v 3, m 4, rank 2
	 * warms up 2 (4 - 2 - 1) + (3 - 1) 4 = 10 < m v = 12 forwards, rank
	 * 0 min(2 (4 - 0 - 1) + 8, 12) = 12, all of them. */
	cr_assert_eq(sched_warmup(SCHED_INTERLEAVED, 4, 3, 4, 2), 10);
	cr_assert_eq(sched_warmup(SCHED_INTERLEAVED, 4, 3, 4, 0), 12);
	/* one more with the all-to-all overlap, capped at m v: rank 2 11,
	 * rank 3 2 (4 - 3 - 1) + 8 + 1 = 9, rank 1 2 2 + 8 + 1 = 13 -> 12 */
	cr_assert_eq(sched_warmup_ex(SCHED_INTERLEAVED, 4, 3, 4, 2, 1), 11);
	cr_assert_eq(sched_warmup_ex(SCHED_INTERLEAVED, 4, 3, 4, 3, 1), 9);
	cr_assert_eq(sched_warmup_ex(SCHED_INTERLEAVED, 4, 3, 4, 1, 1), 12);
	/* unpipelined: no extra (combined_1f1b_schedule_for_no_pipelining
	 * pairs backward k with forward k + 1 without a warm-up step) */
	cr_assert_eq(sched_warmup_ex(SCHED_1F1B, 1, 1, 4, 0, 1), 0);
}

/* Every (chunk, mb) runs forward once and backward once, forward first. */
static void check_complete(int schedule, int64_t p, int64_t v, int64_t m)
{
	struct sched_action a[512];
	int seen[8][64];
	int64_t r, i, c, k;

	for (r = 0; r < p; r++) {
		for (c = 0; c < v; c++)
			for (k = 0; k < m; k++)
				seen[c][k] = 0;
		sched_rank(schedule, p, v, m, r, a);
		for (i = 0; i < sched_actions(m, v); i++) {
			int *s = &seen[a[i].chunk][a[i].mb];

			cr_assert_eq(*s, a[i].bwd ? 1 : 0, "rank %lld action %lld",
				     (long long)r, (long long)i);
			*s = a[i].bwd ? 2 : 1;
		}
		for (c = 0; c < v; c++)
			for (k = 0; k < m; k++)
				cr_assert_eq(seen[c][k], 2);
	}
}

Test(sched, every_pass_once)
{
	check_complete(SCHED_GPIPE, 4, 1, 7);
	check_complete(SCHED_1F1B, 4, 1, 3);
	check_complete(SCHED_1F1B, 8, 1, 64);
	check_complete(SCHED_INTERLEAVED, 4, 2, 8);
	check_complete(SCHED_INTERLEAVED, 4, 3, 4);
	check_complete(SCHED_INTERLEAVED, 8, 4, 16);
}

/* train_dp.c takes a chunk's first forward and last backward to be those
 * of microbatch 0 and m-1: every schedule runs each chunk's microbatches
 * in order, forward and backward, and runs each exactly once. */
Test(sched, chunks_run_microbatches_in_order)
{
	static const struct {
		int schedule;
		int64_t pp, vpp, m;
	} cases[] = {
		{SCHED_GPIPE, 4, 1, 8}, {SCHED_1F1B, 4, 1, 8},
		{SCHED_1F1B, 4, 1, 3}, {SCHED_INTERLEAVED, 4, 2, 8},
		{SCHED_INTERLEAVED, 2, 3, 4},
	};
	struct sched_action a[64];
	size_t k;
	int64_t r, i, c;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (r = 0; r < cases[k].pp; r++) {
			int64_t next[2][3] = {{0}};

			sched_rank(cases[k].schedule, cases[k].pp, cases[k].vpp,
				   cases[k].m, r, a);
			for (i = 0; i < sched_actions(cases[k].m, cases[k].vpp); i++)
				cr_assert_eq(a[i].mb, next[a[i].bwd][a[i].chunk]++,
					     "case %zu rank %lld action %lld", k,
					     (long long)r, (long long)i);
			for (c = 0; c < cases[k].vpp; c++)
				cr_assert(next[0][c] == cases[k].m &&
					  next[1][c] == cases[k].m);
		}
}

/* The peak of sum_c live[c] w[c] walking every action, the reference the
 * live vectors must reproduce. */
static double walk_peak(int schedule, int64_t pp, int64_t vpp, int64_t m,
			int64_t rank, const double *w)
{
	struct sched_action acts[2 * 64 * 8];
	double live = 0, peak = 0;
	int64_t i;

	sched_rank(schedule, pp, vpp, m, rank, acts);
	for (i = 0; i < sched_actions(m, vpp); i++) {
		live += acts[i].bwd ? -w[acts[i].chunk] : w[acts[i].chunk];
		if (live > peak)
			peak = live;
	}
	return peak;
}

Test(sched, live_vectors_one_f_one_b)
{
	struct sched_live l;

	/* 1F1B, p 4, m 8: rank r holds p - r microbatches at its peak, one
	 * vector: rank 0 -> 4, rank 3 -> 1. */
	cr_assert_eq(sched_live_init(&l, SCHED_1F1B, 4, 1, 8, 0, 0), 0);
	cr_assert_eq(l.n, 1);
	cr_assert_eq(l.count[0], 4);
	sched_live_release(&l);
	cr_assert_eq(sched_live_init(&l, SCHED_1F1B, 4, 1, 8, 3, 0), 0);
	cr_assert_eq(l.n, 1);
	cr_assert_eq(l.count[0], 1);
	sched_live_release(&l);
	/* GPipe keeps all m = 8. */
	cr_assert_eq(sched_live_init(&l, SCHED_GPIPE, 4, 1, 8, 2, 0), 0);
	cr_assert_eq(l.count[0], 8);
	sched_live_release(&l);
}

Test(sched, live_vectors_match_the_walk)
{
	/* Uneven weights per chunk (the first and last virtual stages hold
	 * the embedding and the head): the peak from the vectors equals the
	 * peak of walking every action, on every rank of every schedule. */
	static const double w[8] = { 3.5, 1, 1.25, 1, 0.5, 1, 2, 7 };
	static const struct { int sched; int64_t pp, vpp, m; } cases[] = {
		{ SCHED_1F1B, 4, 1, 8 }, { SCHED_1F1B, 8, 1, 3 },
		{ SCHED_GPIPE, 4, 1, 6 }, { SCHED_INTERLEAVED, 4, 2, 8 },
		{ SCHED_INTERLEAVED, 4, 4, 4 }, { SCHED_INTERLEAVED, 2, 8, 16 },
		{ SCHED_INTERLEAVED, 8, 3, 64 },
	};
	size_t k;
	int64_t r;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (r = 0; r < cases[k].pp; r++) {
			struct sched_live l;
			double got, want;

			cr_assert_eq(sched_live_init(&l, cases[k].sched, cases[k].pp,
						     cases[k].vpp, cases[k].m, r, 0), 0);
			got = sched_live_peak(&l, w);
			want = walk_peak(cases[k].sched, cases[k].pp, cases[k].vpp,
					 cases[k].m, r, w);
			cr_assert_float_eq(got, want, 1e-12, "case %zu rank %lld: "
					   "%g != %g", k, (long long)r, got, want);
			sched_live_release(&l);
		}
}

Test(sched, live_vectors_kept_in_a_block_of_their_size)
{
	/* 1F1B, p 4, m 512, rank 0: one vector of one count kept (4, as
	 * above), in a block built with room for m vpp + 1 = 513 vectors,
	 * 2,052 B. The planner keeps thousands of these sets, so the block
	 * is shrunk to the vector kept: 4 B, which glibc serves from its
	 * smallest chunk (24 usable bytes on 64-bit), far below 2,052. */
	struct sched_live l;

	cr_assert_eq(sched_live_init(&l, SCHED_1F1B, 4, 1, 512, 0, 0), 0);
	cr_assert_eq(l.n, 1);
	cr_assert_eq(l.count[0], 4);
#ifdef __GLIBC__
	cr_assert_lt(malloc_usable_size(l.count), 64, "%zu usable bytes",
		     malloc_usable_size(l.count));
#endif
	sched_live_release(&l);
}

/* The pairwise reference for sched_live_init's vectors: every vector
 * after each forward a backward follows (consecutive duplicates once),
 * then kept where no other dominates it, the first of equals, in order:
 * every pair compared (what sched.c did before its one-pass set). */
static int64_t ref_live(int sched, int64_t pp, int64_t vpp, int64_t m,
			int64_t r, int64_t extra, int32_t *out)
{
	int64_t n = sched_actions(m, vpp), i, k, c, nv = 0, kept = 0;
	struct sched_action *a = malloc((size_t)n * sizeof(*a));
	int32_t *all = calloc((size_t)(n + 1) * (size_t)vpp, sizeof(*all));
	int32_t *live = calloc((size_t)vpp, sizeof(*live));

	cr_assert(a && all && live);
	sched_rank_ex(sched, pp, vpp, m, r, extra, a);
	for (i = 0; i < n; i++) {
		live[a[i].chunk] += a[i].bwd ? -1 : 1;
		if (a[i].bwd || (i + 1 < n && !a[i + 1].bwd))
			continue;
		if (nv > 0 && memcmp(all + (nv - 1) * vpp, live,
				     (size_t)vpp * sizeof(*live)) == 0)
			continue;
		memcpy(all + nv * vpp, live, (size_t)vpp * sizeof(*live));
		nv++;
	}
	for (i = 0; i < nv; i++) {
		int beaten = 0;

		for (k = 0; k < nv && !beaten; k++) {
			int ge = 1, eq = 1;

			if (k == i)
				continue;
			for (c = 0; c < vpp; c++) {
				ge &= all[k * vpp + c] >= all[i * vpp + c];
				eq &= all[k * vpp + c] == all[i * vpp + c];
			}
			beaten = ge && (!eq || k < i);
		}
		if (!beaten)
			memcpy(out + kept++ * vpp, all + i * vpp,
			       (size_t)vpp * sizeof(*out));
	}
	free(a);
	free(all);
	free(live);
	return kept;
}

Test(sched, live_vectors_are_the_pairwise_maximal_ones)
{
	/* The one-pass maximal set equals the pairwise reference, vector for
	 * vector and in order, on every rank of schedules whose ranks hold
	 * several vectors (interleaved, with and without extra warm-up). */
	static const struct { int sched; int64_t pp, vpp, m, extra; } cases[] = {
		{ SCHED_1F1B, 4, 1, 8, 0 }, { SCHED_GPIPE, 4, 1, 6, 0 },
		{ SCHED_INTERLEAVED, 4, 2, 8, 0 }, { SCHED_INTERLEAVED, 4, 4, 12, 0 },
		{ SCHED_INTERLEAVED, 2, 8, 16, 0 }, { SCHED_INTERLEAVED, 8, 3, 64, 0 },
		{ SCHED_INTERLEAVED, 4, 3, 16, 1 }, { SCHED_INTERLEAVED, 8, 2, 24, 2 },
		{ SCHED_INTERLEAVED, 16, 4, 32, 0 },
	};
	size_t k;
	int64_t r;
	long several = 0;

	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (r = 0; r < cases[k].pp; r++) {
			int64_t v = cases[k].vpp, cap = cases[k].m * v + 1, n;
			int32_t *want = calloc((size_t)(cap * v), sizeof(*want));
			struct sched_live l;

			cr_assert(want);
			n = ref_live(cases[k].sched, cases[k].pp, v, cases[k].m, r,
				     cases[k].extra, want);
			cr_assert_eq(sched_live_init(&l, cases[k].sched, cases[k].pp,
						     v, cases[k].m, r,
						     cases[k].extra), 0);
			cr_assert_eq(l.n, n, "case %zu rank %lld: %lld vectors, "
				     "want %lld", k, (long long)r, (long long)l.n,
				     (long long)n);
			cr_assert(memcmp(l.count, want, (size_t)(n * v) *
					 sizeof(*want)) == 0,
				  "case %zu rank %lld: vectors differ", k,
				  (long long)r);
			several += n > 1;
			sched_live_release(&l);
			free(want);
		}
	cr_assert_gt(several, 0);	/* the cases exercise the set */
}
