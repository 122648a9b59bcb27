/*
 * test_est.c - the analytical tier's pieces against references written
 * out here: the pipeline recurrence (est_pipe.c, including its linear
 * extension past the fill) against a plain list-scheduling loop, the
 * memo table.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/htab.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "models/sched.h"
#include "plan/est_impl.h"
#include "plan/est_pipe_impl.h"
#include "plan/memo.h"

/* The stream (0-5) rank r's transfers of direction bwd with the pair
 * whose lower rank is lo take: 0 forward, 3 backward; + 1 the wrap
 * between the last rank and the first; + 2 a pair whose lower rank is odd
 * when v > 1 and not lock step (Megatron-Core's interleaved schedule: a
 * stream per pair of ranks, models/train_pp.c lane_of). */
static int ref_stream(const struct est_pipe *in, int bwd, int wrap,
		      int64_t lo)
{
	int split = in->v > 1 && !in->lockstep;

	return (bwd ? 3 : 0) + (wrap ? 1 : split && lo % 2 == 1 ? 2 : 0);
}

/* The recurrence of est_pipe.c written as directly as possible: repeat
 * passes over the ranks, placing each rank's next action when its input
 * is known. Transfers: each rank has one stream per direction (and one
 * per direction for the wrap between the last and the first rank, and
 * with split pairs one for the pairs whose lower rank is odd: ref_stream)
 * that takes them in the rank's order: a receive starts at max(sent,
 * stream free) and takes x; a send may start at max(produced, stream
 * free).
 * With f_held, b_held an action whose chunk's previous action on the
 * rank was a forward (FSDP2 keeping the chunk gathered) takes those. */
static void reference(const struct est_pipe *in, double *rank_end,
		      double *chunk_end)
{
	int64_t p = in->p, v = in->v, m = in->m, S = p * v;
	int64_t n = sched_actions(m, v), r, left = p * n;
	struct sched_action *a = mem_alloc((size_t)(p * n) * sizeof(*a));
	double *fe = mem_alloc((size_t)(S * m) * sizeof(*fe));
	double *be = mem_alloc((size_t)(S * m) * sizeof(*be));
	double *fs = mem_alloc((size_t)(S * m) * sizeof(*fs));
	double *bs = mem_alloc((size_t)(S * m) * sizeof(*bs));
	double freet[64] = { 0 }, strm[64][6] = { { 0 } };
	int64_t pos[64] = { 0 }, i;
	static uint8_t held[64][64];

	memset(held, 0, sizeof(held));

	cr_assert(a && fe && be && fs && bs && p <= 64);
	for (i = 0; i < S * m; i++)
		fe[i] = be[i] = fs[i] = bs[i] = -1;
	for (r = 0; r < p; r++)
		sched_rank(in->schedule, p, v, m, r, a + r * n);
	while (left > 0)
		for (r = 0; r < p; r++) {
			struct sched_action x;
			int64_t s, mb;
			double ready = 0, dur, *st;

			if (pos[r] == n)
				continue;
			x = a[r * n + pos[r]];
			s = (int64_t)x.chunk * p + r;
			mb = x.mb;
			if (!x.bwd) {
				if (s > 0 && fs[(s - 1) * m + mb] < 0)
					continue;
				if (s > 0) {	/* receive: wrap stream on rank 0 */
					st = &strm[r][ref_stream(in, 0, r == 0,
								 r - 1)];
					*st = fmax(fs[(s - 1) * m + mb], *st) +
					      in->x[(s - 1) % p];
					ready = *st;
				}
				dur = mb == 0 && in->f_first ? in->f_first[s] : in->f[s];
				if (held[r][x.chunk] && in->f_held)
					dur = in->f_held[s];
				fe[s * m + mb] = freet[r] = fmax(ready, freet[r]) + dur;
				if (s < S - 1) {	/* send: wrap stream on rank p-1 */
					st = &strm[r][ref_stream(in, 0, r == p - 1,
								 r)];
					fs[s * m + mb] = fmax(fe[s * m + mb], *st);
					*st = fs[s * m + mb] + in->x[r];
				}
			} else {
				if (s < S - 1 && bs[(s + 1) * m + mb] < 0)
					continue;
				if (s < S - 1) {	/* wrap stream on rank p-1 */
					st = &strm[r][ref_stream(in, 1, r == p - 1,
								 r)];
					*st = fmax(bs[(s + 1) * m + mb], *st) +
					      in->x[s % p];
					ready = *st;
				} else {
					ready = fe[s * m + mb];
				}
				dur = mb == m - 1 && in->b_last ? in->b_last[s] :
								  in->b[s];
				if (held[r][x.chunk] && in->f_held)
					dur = in->b_held[s];
				be[s * m + mb] = freet[r] = fmax(ready, freet[r]) + dur;
				if (s > 0) {	/* wrap stream on rank 0 */
					st = &strm[r][ref_stream(in, 1, r == 0,
								 r - 1)];
					bs[s * m + mb] = fmax(be[s * m + mb], *st);
					*st = bs[s * m + mb] + in->x[(s - 1) % p];
				}
			}
			held[r][x.chunk] = !x.bwd;
			pos[r]++;
			left--;
		}
	for (r = 0; r < p; r++) {
		rank_end[r] = freet[r];
		for (i = 0; i < v; i++)
			chunk_end[r * v + i] = be[(i * p + r) * m + m - 1];
	}
	mem_free(a);
	mem_free(fe);
	mem_free(be);
	mem_free(fs);
	mem_free(bs);
}

/* Frees what est_pipe_run kept in a bare struct est: the memoized
 * orders, their memo, the recurrence's scratch arrays. */
static void est_free_pipe(struct est *e)
{
	size_t i = 0;
	void **lists;

	while ((lists = memo_next(&e->pipe_lists, &i)))
		est_pipe_order_free(*lists);
	memo_release(&e->pipe_lists);
	mem_free(e->pipe_t);
	mem_free(e->pipe_x);
	mem_free(e);
}

/* A pipeline's transfer times x (p: neighbours in one node or two) and
 * its stages' durations (S): forward f, backward b (the first and last
 * stages longer), the first microbatch's forward ff, the last one's
 * backward bl, the held ones fh, bh. */
static void pipe_durations(int64_t p, int64_t S, double *x, double *f,
			   double *b, double *ff, double *bl, double *fh,
			   double *bh)
{
	int64_t i, s;

	for (i = 0; i < p; i++)
		x[i] = i % 2 ? 0.3 : 0.1;
	for (s = 0; s < S; s++) {
		f[s] = 1 + (s == 0 ? 0.5 : 0) + 0.01 * (double)(s % 3);
		b[s] = 2 + (s == S - 1 ? 0.9 : 0) + 0.02 * (double)(s % 2);
		ff[s] = f[s] * 1.05;
		bl[s] = b[s] * 1.1;
		fh[s] = f[s] * 0.8;
		bh[s] = b[s] * 0.9;
	}
}

Test(est, pipeline_recurrence_matches_the_reference)
{
	/* Uneven stages (the first and last heavier, as with the embedding
	 * and the head), transfers of a tenth and three tenths of a stage
	 * between alternate pairs of ranks, the first forward
	 * and last backward of each stage slowed: every schedule, m from
	 * the fill to far past it (extended linearly there); each case
	 * also with held forwards and backwards (ZeRO 3 without reshard
	 * after forward: no all-gathers) shorter than the others. Where
	 * est_pipe_run runs the recurrence itself (exact: m <= m0 + 3 g,
	 * m0 = p and g = 1 for 1F1B and GPipe, m0 = 2 p and g = p
	 * interleaved), every action takes the same max and sums as the
	 * reference's, in whatever order the actions are run: the same bits
	 * (1F1B 4/3: 3 <= 7; 16/19: 19 <= 19; GPipe 8/11: 11 <= 11;
	 * interleaved 4x2/8: 8 <= 20; 4x3/12: 12 <= 20). */
	static const struct { int sched; int64_t p, v, m; int exact; } cases[] = {
		{ SCHED_1F1B, 4, 1, 3, 1 }, { SCHED_1F1B, 4, 1, 64, 0 },
		{ SCHED_1F1B, 8, 1, 100, 0 }, { SCHED_GPIPE, 4, 1, 40, 0 },
		{ SCHED_INTERLEAVED, 4, 2, 8, 1 }, { SCHED_INTERLEAVED, 4, 2, 96, 0 },
		{ SCHED_INTERLEAVED, 8, 4, 128, 0 }, { SCHED_INTERLEAVED, 2, 16, 64, 0 },
		{ SCHED_1F1B, 16, 1, 19, 1 }, { SCHED_GPIPE, 8, 1, 11, 1 },
		{ SCHED_INTERLEAVED, 4, 3, 12, 1 },
	};
	struct diag d;
	struct system_spec sys;
	struct est *e;
	size_t k;

	diag_init(&d, stderr);
	memset(&sys, 0, sizeof(sys));
	/* est_pipe_run uses only the estimator's scratch and memos */
	e = mem_calloc(1, sizeof(*e));
	cr_assert_not_null(e);
	memo_init(&e->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
		  sizeof(void *));
	for (k = 0; k < 2 * sizeof(cases) / sizeof(cases[0]); k++) {
		size_t kc = k % (sizeof(cases) / sizeof(cases[0]));
		int64_t p = cases[kc].p, v = cases[kc].v, S = p * v, i;
		double f[64], b[64], ff[64], bl[64], fh[64], bh[64], x[64];
		double re[64], ce[512], rr[64], rc[512];
		int with_held = k >= sizeof(cases) / sizeof(cases[0]);
		struct est_pipe in = { cases[kc].sched, p, v, cases[kc].m, f, b,
				       ff, bl, with_held ? fh : NULL,
				       with_held ? bh : NULL, x, 0 };

		pipe_durations(p, S, x, f, b, ff, bl, fh, bh);
		cr_assert_eq(est_pipe_run(e, &in, re, ce), 0);
		reference(&in, rr, rc);
		for (i = 0; i < p; i++)
			cr_assert_float_eq(re[i], rr[i],
					   cases[kc].exact ? 0 : 1e-9 * rr[i],
					   "case %zu rank %lld: %.17g vs %.17g", k,
					   (long long)i, re[i], rr[i]);
		for (i = 0; i < p * v; i++)
			cr_assert_float_eq(ce[i], rc[i],
					   cases[kc].exact ? 0 : 1e-9 * rc[i],
					   "case %zu chunk end %lld", k, (long long)i);
	}
	est_free_pipe(e);
}

/* The recurrence along an order packed (struct pcomp: small cells as 16
 * bits from the free times, the end kept or not in at's top bit) and
 * along the order as built (pflat, where a shape's small cells pass 16
 * bits) does the same operations on the same cells: the same bits for
 * every schedule, exact or extended, with and without held durations
 * (the reference test's cases and durations). */
Test(est, packed_order_gives_the_same_bits)
{
	static const struct { int sched; int64_t p, v, m; } cases[] = {
		{ SCHED_1F1B, 4, 1, 3 }, { SCHED_1F1B, 8, 1, 100 },
		{ SCHED_GPIPE, 8, 1, 11 }, { SCHED_INTERLEAVED, 4, 2, 8 },
		{ SCHED_INTERLEAVED, 8, 4, 128 }, { SCHED_INTERLEAVED, 2, 16, 64 },
		{ SCHED_1F1B, 16, 1, 19 }, { SCHED_INTERLEAVED, 4, 3, 12 },
	};
	size_t n = sizeof(cases) / sizeof(cases[0]), k;
	struct est *e[2];
	int w;

	for (w = 0; w < 2; w++) {
		e[w] = mem_calloc(1, sizeof(*e[w]));
		cr_assert_not_null(e[w]);
		memo_init(&e[w]->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
			  sizeof(void *));
	}
	e[1]->pipe_flat = 1;
	for (k = 0; k < 2 * n; k++) {
		int64_t p = cases[k % n].p, v = cases[k % n].v, S = p * v, i;
		double f[64], b[64], ff[64], bl[64], fh[64], bh[64], x[64];
		double re[2][64], ce[2][512];
		int with_held = k >= n;
		struct est_pipe in = { cases[k % n].sched, p, v, cases[k % n].m,
				       f, b, ff, bl, with_held ? fh : NULL,
				       with_held ? bh : NULL, x, 0 };

		pipe_durations(p, S, x, f, b, ff, bl, fh, bh);
		for (w = 0; w < 2; w++)
			cr_assert_eq(est_pipe_run(e[w], &in, re[w], ce[w]), 0);
		for (i = 0; i < p; i++)
			cr_assert(!memcmp(&re[0][i], &re[1][i], sizeof(double)),
				  "case %zu rank %lld: %.17g vs %.17g", k,
				  (long long)i, re[0][i], re[1][i]);
		for (i = 0; i < S; i++)
			cr_assert(!memcmp(&ce[0][i], &ce[1][i], sizeof(double)),
				  "case %zu chunk end %lld", k, (long long)i);
	}
	for (w = 0; w < 2; w++)
		est_free_pipe(e[w]);
}

/* A packed order's sent values live in a pool of cells (est_pipe_order.c
 * pool_cells): a value is read at most once a run, within a round or two
 * of its step (each rank places one action a round), so about one value
 * a rank is waiting at any time: 1F1B at pp 128 with 128 microbatches
 * (32,768 steps, as many sent cells in the layout) needs p + 1 = 129
 * cells. The bound 2 p + v below fails if cells are not given back
 * after their last read (then every read value keeps one: ~2 S m); the
 * interleaved schedule's wrap and chunk changes hold a few more (pp 8,
 * vpp 4: 17 of 20). The three runs' order (g > 0) keeps the shared
 * steps' values to the last run's read: 1F1B pp 64 from m0 64 uses 124
 * of 129. */
Test(est, packed_order_pools_its_sent_values)
{
	static const struct { int sched; int64_t p, v, m, g; } cases[] = {
		{ SCHED_1F1B, 128, 1, 128, 0 }, { SCHED_1F1B, 16, 1, 19, 0 },
		{ SCHED_INTERLEAVED, 8, 4, 128, 0 }, { SCHED_GPIPE, 8, 1, 11, 0 },
		{ SCHED_1F1B, 64, 1, 64, 1 },
	};
	size_t k;
	struct est *e = mem_calloc(1, sizeof(*e));

	cr_assert_not_null(e);
	memo_init(&e->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
		  sizeof(void *));
	for (k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct porder *o = est_pipe_order(e, cases[k].sched,
			cases[k].p, cases[k].v, cases[k].m, cases[k].g, 0);

		cr_assert_not_null(o);
		cr_assert_not_null(o->c, "case %zu packed", k);
		cr_assert(o->pool > 0 &&
			  o->pool <= 2 * cases[k].p + cases[k].v,
			  "case %zu: %lld cells for pp %lld", k,
			  (long long)o->pool, (long long)cases[k].p);
	}
	cr_assert_eq(est_pipe_order(e, SCHED_1F1B, 128, 1, 128, 0, 0)->pool, 129);
	est_free_pipe(e);
}

/* run_once keeps a missing stream (stage 0's input and backward send,
 * the last stage's forward send and backward input) in a per-rank dummy
 * cell it reads and writes, which equals the -inf / unread cells it
 * replaced only while a rank's ends never decrease, i.e. with every
 * duration >= 0 (est_pipe.c, struct pflat). Durations the estimator
 * never makes, the last stage's backward -50 s, take its exact loop:
 * still the reference's bits. There the last stage's first forward
 * (100 s) ends at a + 100 (a: microbatch 0's arrival) and each later
 * forward ~47 s before the one before it (its input comes ~3 s after
 * the previous backward, which ended 50 s before that forward): a dummy
 * holding F0's end would start every later backward at a + 100 instead
 * of at its forward's end, the last one included (the rank's end). The
 * same shapes with every duration >= 0 (the dummy path) match the
 * reference too. */
Test(est, negative_durations_take_the_exact_recurrence)
{
	static const struct { int sched; int64_t p, v, m; } cases[] = {
		{ SCHED_1F1B, 4, 1, 7 }, { SCHED_GPIPE, 4, 1, 7 },
		{ SCHED_INTERLEAVED, 4, 2, 8 }, { SCHED_1F1B, 8, 1, 11 },
	};
	struct est *e = mem_calloc(1, sizeof(*e));
	size_t k;

	cr_assert_not_null(e);
	memo_init(&e->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
		  sizeof(void *));
	for (k = 0; k < 2 * sizeof(cases) / sizeof(cases[0]); k++) {
		size_t kc = k % (sizeof(cases) / sizeof(cases[0]));
		int negative = k < sizeof(cases) / sizeof(cases[0]);
		int64_t p = cases[kc].p, v = cases[kc].v, S = p * v, s, i;
		double f[16], b[16], ff[16], x[8], re[8], ce[16], rr[8], rc[16];
		struct est_pipe in = { cases[kc].sched, p, v, cases[kc].m, f, b,
				       ff, NULL, NULL, NULL, x, 0 };

		for (i = 0; i < p; i++)
			x[i] = i % 2 ? 0.3 : 0.1;
		for (s = 0; s < S; s++) {
			f[s] = 1 + 0.01 * (double)(s % 3);
			b[s] = 2 + 0.02 * (double)(s % 2);
			ff[s] = f[s];
		}
		f[S - 1] = 0.1;
		ff[S - 1] = 100;
		b[S - 1] = negative ? -50 : 0.5;
		cr_assert_eq(est_pipe_run(e, &in, re, ce), 0);
		reference(&in, rr, rc);
		for (i = 0; i < p; i++)
			cr_assert(memcmp(&re[i], &rr[i], sizeof(re[i])) == 0,
				  "case %zu rank %lld: %.17g vs %.17g", k,
				  (long long)i, re[i], rr[i]);
		for (i = 0; i < S; i++)
			cr_assert(memcmp(&ce[i], &rc[i], sizeof(ce[i])) == 0,
				  "case %zu chunk end %lld: %.17g vs %.17g", k,
				  (long long)i, ce[i], rc[i]);
	}
	est_free_pipe(e);
}

/* sched.h's interleaved order takes microbatches in groups of p: with m
 * not a multiple of p (job_layout_check refuses it) the last group names
 * microbatches past m, whose ends would be written past the arrays sized
 * by m (valgrind / ASan: invalid writes in build_order before). Such a
 * pipeline is refused (1), nothing written, lock step or not; the same
 * shape with m a multiple of p runs (0). */
Test(est, interleaved_m_not_a_multiple_of_p_refused)
{
	static const int64_t ms[] = { 6, 5, 9 };
	double f[8], b[8], x[4], re[4], ce[8];
	struct est_pipe in = { SCHED_INTERLEAVED, 4, 2, 0, f, b, NULL, NULL,
			       NULL, NULL, x, 0 };
	struct est *e = mem_calloc(1, sizeof(*e));
	size_t k;
	int lock;

	cr_assert_not_null(e);
	memo_init(&e->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
		  sizeof(void *));
	for (k = 0; k < 8; k++) {
		f[k] = 1;
		b[k] = 2;
	}
	for (k = 0; k < 4; k++)
		x[k] = 0.1;
	for (lock = 0; lock < 2; lock++) {
		in.lockstep = lock;
		for (k = 0; k < sizeof(ms) / sizeof(ms[0]); k++) {
			size_t j;

			in.m = ms[k];
			for (j = 0; j < 4; j++)
				re[j] = -7;
			cr_assert_eq(est_pipe_run(e, &in, re, ce), 1, "m %lld",
				     (long long)in.m);
			for (j = 0; j < 4; j++)
				cr_assert_eq(re[j], -7);
		}
		in.m = 8;
		cr_assert_eq(est_pipe_run(e, &in, re, ce), 0);
		cr_assert_gt(re[0], 0);
	}
	est_free_pipe(e);
}

/* Past the fill est_pipe_run extends three runs (m0, m0 + g, m0 + 2g
 * microbatches; m0 = p, g = 1 for 1F1B and GPipe, m0 = 2 p, g = p
 * interleaved; from 4 m0, then 16 m0 when the steps differ) and runs the
 * steps the three share once (est_pipe.c build_three): every end must be
 * the bits of the three runs made apart. Each run apart is the
 * reference's (the same bits as the recurrence's: the first test's
 * exact cases), and the extension is recomputed here as est_pipe_run makes it: e2 + (m -
 * m0 - 2g) / g (e2 - e1) where the two steps agree within 1e-9, else
 * the next m0 (the same rule). The stages are uneven as in the first
 * test, with held durations or not, so some cases settle only from 4 m0
 * (a test that finds no case past the first try would prove less: the
 * count of cases per try is checked > 0 for the first). */
Test(est, shared_steps_give_the_three_runs_bits)
{
	static const struct { int sched; int64_t p, v, m; } cases[] = {
		{ SCHED_1F1B, 4, 1, 64 }, { SCHED_1F1B, 8, 1, 100 },
		{ SCHED_GPIPE, 4, 1, 40 }, { SCHED_INTERLEAVED, 4, 2, 96 },
		{ SCHED_INTERLEAVED, 8, 4, 128 }, { SCHED_INTERLEAVED, 2, 16, 64 },
		{ SCHED_1F1B, 16, 1, 200 }, { SCHED_INTERLEAVED, 4, 3, 120 },
	};
	enum { NC = sizeof(cases) / sizeof(cases[0]) };
	struct est *e = mem_calloc(1, sizeof(*e));
	size_t k;
	int first = 0;

	cr_assert_not_null(e);
	memo_init(&e->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
		  sizeof(void *));
	for (k = 0; k < 2 * NC; k++) {
		size_t kc = k % NC;
		int64_t p = cases[kc].p, v = cases[kc].v, S = p * v, i, q;
		int64_t m = cases[kc].m, ends = p + p * v, m0, g, tries;
		double f[64], b[64], ff[64], bl[64], fh[64], bh[64], x[64];
		double re[64], ce[512], at[3][64 + 512], want[64 + 512];
		int with_held = k >= NC;
		struct est_pipe in = { cases[kc].sched, p, v, m, f, b, ff, bl,
				       with_held ? fh : NULL,
				       with_held ? bh : NULL, x, 0 };

		pipe_durations(p, S, x, f, b, ff, bl, fh, bh);
		g = cases[kc].sched == SCHED_INTERLEAVED ? p : 1;
		m0 = g == 1 ? p : 2 * p;
		for (tries = 0;; tries++, m0 *= 4) {
			cr_assert(tries < 3 && m > m0 + 3 * g,
				  "case %zu: no extension (a case to change)", k);
			for (q = 0; q < 3; q++) {
				in.m = m0 + q * g;
				reference(&in, at[q], at[q] + p);
			}
			for (i = 0; i < ends; i++) {
				double d1 = at[1][i] - at[0][i];
				double d2 = at[2][i] - at[1][i];

				if (fabs(d1 - d2) > 1e-9 * fabs(at[2][i]))
					break;
			}
			if (i == ends)
				break;
		}
		first += tries == 0;
		for (i = 0; i < ends; i++)
			want[i] = at[2][i] + (double)(m - m0 - 2 * g) /
				  (double)g * (at[2][i] - at[1][i]);
		in.m = m;
		cr_assert_eq(est_pipe_run(e, &in, re, ce), 0);
		for (i = 0; i < p; i++)
			cr_assert(memcmp(&re[i], &want[i], sizeof(re[i])) == 0,
				  "case %zu rank %lld: %a vs %a", k,
				  (long long)i, re[i], want[i]);
		for (i = 0; i < p * v; i++)
			cr_assert(memcmp(&ce[i], &want[p + i], sizeof(ce[i])) == 0,
				  "case %zu chunk end %lld: %a vs %a", k,
				  (long long)i, ce[i], want[p + i]);
	}
	cr_assert_gt(first, 0);
	est_free_pipe(e);
}

Test(est, memo_keeps_every_entry)
{
	struct memo m;
	int64_t k, v;
	size_t i = 0, seen = 0;

	memo_init(&m, sizeof(k), sizeof(v));
	/* 10,000 keys through several doublings: every one found with its
	 * value, one miss, and the walk visits each once */
	for (k = 0; k < 10000; k++) {
		v = 3 * k + 1;
		cr_assert_not_null(memo_put(&m, &k, &v));
	}
	for (k = 0; k < 10000; k++) {
		int64_t *got = memo_get(&m, &k);

		cr_assert_not_null(got);
		cr_assert_eq(*got, 3 * k + 1);
	}
	k = -5;
	cr_assert_null(memo_get(&m, &k));
	while (memo_next(&m, &i))
		seen++;
	cr_assert_eq(seen, 10000);
	memo_release(&m);
}

/* Keys of a size not a multiple of 8 (the hash reads them 8 bytes at a
 * time, then the tail): 13-byte keys that differ only in their last byte
 * or only in their first are told apart, every one found with its value
 * (and, under ASan, no read past a key). */
Test(est, memo_odd_key_size)
{
	struct memo m;
	unsigned char key[13];
	int64_t v;
	int a, b;

	memo_init(&m, sizeof(key), sizeof(v));
	memset(key, 7, sizeof(key));
	for (a = 0; a < 40; a++)
		for (b = 0; b < 40; b++) {
			key[0] = (unsigned char)a;
			key[12] = (unsigned char)b;
			v = 100 * a + b;
			cr_assert_not_null(memo_put(&m, key, &v));
		}
	cr_assert_eq(htab_count(m.t), 1600);
	for (a = 0; a < 40; a++)
		for (b = 0; b < 40; b++) {
			int64_t *got;

			key[0] = (unsigned char)a;
			key[12] = (unsigned char)b;
			got = memo_get(&m, key);
			cr_assert_not_null(got);
			cr_assert_eq(*got, 100 * a + b);
		}
	key[12] = 41;
	cr_assert_null(memo_get(&m, key));
	memo_release(&m);
}

/* The collective times shared by a walk's processes (est_share.c): a
 * time published is read back bit for bit, by another process too (a
 * fork: the table is shared memory), and a key not published (another
 * byte count) is a miss. */
Test(est, shared_collective_times)
{
	struct est_share *sh = est_share_new();
	struct est_ckey k, k2;
	double t = 0;
	pid_t pid;
	int st;

	cr_assert_not_null(sh);
	memset(&k, 0, sizeof(k));
	k.op = 1;
	k.n = 64;
	k.stride = 8;
	k.bytes = 7.0e6;
	k2 = k;
	k2.bytes = 7.0e6 + 1;
	cr_assert_eq(est_share_get(sh, &k, &t), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {		/* publishes, as a helper would */
		est_share_put(sh, &k, 1.0 / 3.0);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert_eq(est_share_get(sh, &k, &t), 1);
	cr_assert_eq(t, 1.0 / 3.0);
	cr_assert_eq(est_share_get(sh, &k2, &t), 0);
	est_share_put(sh, &k, 1.0 / 3.0);	/* there already: no second */
	est_share_put(sh, &k2, 2.5e-3);
	cr_assert_eq(est_share_get(sh, &k2, &t), 1);
	cr_assert_eq(t, 2.5e-3);
	est_share_free(sh);
}

/* Which of est_rank_of's three entries stands for a pipeline rank. At pp
 * 4 the entries are ranks 0, 1 and 3, so rank 2 takes entry 1 (the
 * second stands for the ranks between) and rank 3 entry 2. At pp 2 the
 * entries are ranks 0 and 1 only (entry 2 would be rank 1 again and is
 * no rank of its own: est_rank_used), so rank 1 must take entry 1, the
 * one est_dp builds buckets for; it took entry 2 before, which left pp 2's
 * last rank without the DP reductions its backwards overlap. */
Test(est, rank_index_names_a_built_entry)
{
	struct est_cand c;

	memset(&c, 0, sizeof(c));
	c.p = 4;
	cr_assert_eq(est_rank_index(&c, 0), 0);
	cr_assert_eq(est_rank_index(&c, 1), 1);
	cr_assert_eq(est_rank_index(&c, 2), 1);
	cr_assert_eq(est_rank_index(&c, 3), 2);
	c.p = 2;
	cr_assert_eq(est_rank_index(&c, 1), 1);
	cr_assert(est_rank_used(&c, est_rank_index(&c, 1)));
	cr_assert(!est_rank_used(&c, 2));
	c.p = 1;
	cr_assert_eq(est_rank_index(&c, 0), 0);
}

/*
 * A ZeRO 3 candidate of two pipeline stages (no interleave, S = 2, the
 * MTP stage last) on empty blocks: the setup of the stage-time tests.
 */
static void zero3_pp2(struct est_cand *c, struct est_blocks *b,
		      struct job_spec *j, int64_t *split)
{
	memset(b, 0, sizeof(*b));
	memset(c, 0, sizeof(*c));
	j->training.zero_stage = 3;
	c->j = j;
	c->b = b;
	c->split = split;
	c->p = 2;
	c->v = 1;
	c->S = 2;
	c->mtp_stage = 1;
}

/*
 * ZeRO 3: a stage takes the longer of its units' compute and its units'
 * collectives, summed over the stage (est_stage.c stage_coll), not the
 * sum of each unit's longer one: FSDP prefetches its all-gathers
 * fsdp_prefetch_units ahead on their own streams (models/train_dp.c
 * fsdp_one), so the embedding's gather (little compute, big
 * collectives) runs beside the layers' compute. Made-up unit times
 * (ms), pp 2, 4 layers a stage, no amax, no transfers:
 *
 *   unit    f   b    xf  xb  wait
 *   layer   3   9    1   2.5 (stage 0), 5 12 2 (stage 1's case)
 *   embed   0.01 0.02 2   6   4   (the embedding's R_u = 4)
 *   head    7   14   2   6
 *
 * Stage 0 forward: compute 4 x 3 + 0.01 = 12.01, collectives 4 x 1 + 2
 * = 6: 12.01 ms (each unit's longer: 4 x 3 + 2 = 14). Backward: compute
 * 4 x 9 + 0.02 = 36.02, collectives 4 x 2.5 + 6 = 16, the wait the
 * embedding's reduce-scatter 4: max(36.02, 16 - 4) + 4 = 40.02 ms (each
 * unit's longer: 36 + 6 + 4 = 46). Stage 1 with layers whose
 * collectives are longer (xf 5, xb 12, wait 2): forward compute 4 x 3 +
 * 7 = 19, collectives 4 x 5 + 2 = 22: 22 ms; backward compute 4 x 9 +
 * 14 = 50, collectives 4 x 12 + 6 = 54: max(50, 54 - 2) + 2 = 54 ms, the
 * data-parallel stream's own time.
 */
Test(est, fsdp_stage_takes_the_longer_sum)
{
	static struct job_spec j;
	struct est_blocks b;
	struct est_cand c;
	int64_t split[2] = { 4, 4 };

	zero3_pp2(&c, &b, &j, split);
	c.fsdp_f[EST_LAYER] = 3e-3;
	c.fsdp_b[EST_LAYER] = 9e-3;
	c.fsdp_xf[EST_LAYER] = 1e-3;
	c.fsdp_xb[EST_LAYER] = 2.5e-3;
	c.fsdp_f[EST_EMBED] = 0.01e-3;
	c.fsdp_b[EST_EMBED] = 0.02e-3;
	c.fsdp_xf[EST_EMBED] = 2e-3;
	c.fsdp_xb[EST_EMBED] = 6e-3;
	c.fsdp_wait[EST_EMBED] = 4e-3;
	c.fsdp_f[EST_HEAD] = 7e-3;
	c.fsdp_b[EST_HEAD] = 14e-3;
	c.fsdp_xf[EST_HEAD] = 2e-3;
	c.fsdp_xb[EST_HEAD] = 6e-3;
	cr_assert_float_eq(est_stage_f(&c, 0), 12.01e-3, 1e-12);
	cr_assert_float_eq(est_stage_b(&c, 0), 40.02e-3, 1e-12);
	c.fsdp_xf[EST_LAYER] = 5e-3;
	c.fsdp_xb[EST_LAYER] = 12e-3;
	c.fsdp_wait[EST_LAYER] = 2e-3;
	cr_assert_float_eq(est_stage_f(&c, 1), 22e-3, 1e-12);
	cr_assert_float_eq(est_stage_b(&c, 1), 54e-3, 1e-12);
	/* without ZeRO 3 no unit carries collectives: the blocks' sums
	 * (all 0 here) */
	j.training.zero_stage = 1;
	cr_assert_float_eq(est_stage_f(&c, 1), 0, 1e-12);
}

/*
 * A candidate's stage times are computed once its units are final and
 * read back after (est_cand sf / sb, est.c pipeline); the code that
 * swaps a candidate's units to time them otherwise computes them. Here
 * fsdp_pp_no_sync's run ends (est_fsdp_run_ends): a run's first forward
 * gathers, so its units take fsdp_gf, not the kept f_s. Made-up unit
 * times (ms), ZeRO 3 under no_sync (units as blocks, no collectives on
 * the streams, no wait), pp 2, 4 layers a stage, no amax, no transfers:
 *
 *   unit    f     b     gf  rs
 *   layer   3     9     4   1
 *   embed   0.01  0.02  2   3
 *   head    7     14    9   2
 *
 * Kept: f_0 = 4 x 3 + 0.01 = 12.01, f_1 = 4 x 3 + 7 = 19, b_0 = 4 x 9 +
 * 0.02 = 36.02, b_1 = 4 x 9 + 14 = 50. Run ends: f_run_0 = 4 x 4 + 2 =
 * 18, f_run_1 = 4 x 4 + 9 = 25 (the kept 12.01 and 19 if the swap were
 * not seen); b_run_0 = 36.02 + 4 x 1 + 3 = 43.02, b_run_1 = 50 + 4 x 1 +
 * 2 = 56. After it the kept times are read again, and a kept value is
 * what est_stage_f / _b return (0.5 / 0.25 ms put in its place), while
 * est_stage_f_of / _b_of compute.
 */
Test(est, kept_stage_times_and_swapped_units_computed)
{
	static struct job_spec j;
	struct est_blocks b;
	struct est_cand c;
	int64_t split[2] = { 4, 4 };
	double t[4], f_run[2], b_run[2];
	int64_t s;

	zero3_pp2(&c, &b, &j, split);
	c.no_sync = 1;
	c.fsdp_f[EST_LAYER] = 3e-3;
	c.fsdp_b[EST_LAYER] = 9e-3;
	c.fsdp_gf[EST_LAYER] = 4e-3;
	c.fsdp_rs[EST_LAYER] = 1e-3;
	c.fsdp_f[EST_EMBED] = 0.01e-3;
	c.fsdp_b[EST_EMBED] = 0.02e-3;
	c.fsdp_gf[EST_EMBED] = 2e-3;
	c.fsdp_rs[EST_EMBED] = 3e-3;
	c.fsdp_f[EST_HEAD] = 7e-3;
	c.fsdp_b[EST_HEAD] = 14e-3;
	c.fsdp_gf[EST_HEAD] = 9e-3;
	c.fsdp_rs[EST_HEAD] = 2e-3;
	for (s = 0; s < 2; s++) {	/* as pipeline() keeps them */
		t[s] = est_stage_f_of(&c, s);
		t[2 + s] = est_stage_b_of(&c, s);
	}
	cr_assert_float_eq(t[0], 12.01e-3, 1e-12);
	cr_assert_float_eq(t[1], 19e-3, 1e-12);
	cr_assert_float_eq(t[2], 36.02e-3, 1e-12);
	cr_assert_float_eq(t[3], 50e-3, 1e-12);
	c.sf = t;
	c.sb = t + 2;
	est_fsdp_run_ends(&c, f_run, b_run);
	cr_assert_float_eq(f_run[0], 18e-3, 1e-12);
	cr_assert_float_eq(f_run[1], 25e-3, 1e-12);
	cr_assert_float_eq(b_run[0], 43.02e-3, 1e-12);
	cr_assert_float_eq(b_run[1], 56e-3, 1e-12);
	cr_assert_float_eq(est_stage_f_of(&c, 0), 12.01e-3, 1e-12);
	t[0] = 0.5e-3;
	t[3] = 0.25e-3;
	cr_assert_eq(est_stage_f(&c, 0), 0.5e-3);
	cr_assert_eq(est_stage_b(&c, 1), 0.25e-3);
	cr_assert_float_eq(est_stage_f_of(&c, 0), 12.01e-3, 1e-12);
	cr_assert_float_eq(est_stage_b_of(&c, 1), 50e-3, 1e-12);
}

/*
 * ZeRO 3 stages from the data-parallel streams (est_fsdp.c): one gather
 * stream and one reduce-scatter stream a rank across its actions, unit
 * q's gather issued when unit q - k ends (k = fsdp_prefetch_units 2), a
 * backward unit's reduce-scatter at its end, the next action waiting
 * for the backward's, the two sharing the links (each at half rate while
 * both run). The middle stage of pp 3 (one layer, no embedding or head,
 * no transfers' gather, no amax), made-up times (ms): forward 2, backward
 * 5, all-gather 3, reduce-scatter 6; units not slowed (sl 0). Units q0 F,
 * q1 B, q2 F, ... (pairs of 1F1B's steady state):
 *
 *   G0 0-3, G1 3-6 (issued at the start); q0 F 3-5, issues G2 (6-9);
 *   q1 B 6-11, issues R1 and G3 at 11: both at half rate, G3 done 17,
 *   R1's last 3 alone, done 20; q2 F waits for R1: 20-22, G4 22-25;
 *   q3 B 22-27, R3 and G5 at 27: G5 33, R3 36; q4 F 36-38 (G6 38-41);
 *   q5 B 38-43, R5 and G7 at 43: R5 52; q6 F starts 52.
 *
 * The second pair (the first starts from idle): forward 22 - 20 = 2 (its
 * gather ran under the backward's wait before it), backward 36 - 22 =
 * 14 = 5 + 6 + 3 (its reduce-scatter slowed by the gather issued beside
 * it); the third pair the same (36, 38, 52). The stage
 * formula (est_stage.c) says max(2, 3) = 3 and max(5, 3 + 6 - 6) + 6 =
 * 11. With the backward slowed by half the time a collective runs beside
 * it (sl 0.5): q1 B runs beside G2 (6-9, 3 of its 5 ms): 6-12.5, R1
 * and G3 from 12.5 (R1 done 21.5); q2 F 21.5-23.5 (G4 23.5-26.5); q3 B
 * 23.5-30 beside G4; R3 done 39: the pair reads 2 and 15.5. A second
 * call takes both from the memo. The second pair's last unit that meets
 * the group (its gather; est.c sync_tax) is its backward, q3 (at 22; at
 * 23.5 slowed): 27 - 22 = 5 and 30 - 23.5 = 6.5 ms of compute since, to
 * its end (w).
 */
Test(est, fsdp_streams_serialise_across_actions)
{
	static struct job_spec j;
	static struct framework_spec fw;
	static struct est e;
	struct est_blocks b;
	struct est_cand c;
	int64_t split[3] = { 1, 1, 1 };
	double f[3], bw[3], w[3];
	int u;

	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	j.training.zero_stage = 3;
	j.framework = &fw;
	fw.fsdp_prefetch_units = 2;
	c.j = &j;
	c.b = &b;
	c.split = split;
	c.p = 3;
	c.v = 1;
	c.S = 3;
	for (u = 0; u < 3; u++) {
		c.fsdp_c[0][u] = 2e-3;
		c.fsdp_c[1][u] = 5e-3;
		c.fsdp_ag[u] = 3e-3;
		c.fsdp_rsu[u] = 6e-3;
	}
	cr_assert_eq(est_fsdp_streams(&e, &c, f, bw, w), 0);
	cr_assert_float_eq(f[1], 2e-3, 1e-12);
	cr_assert_float_eq(bw[1], 14e-3, 1e-12);
	cr_assert_float_eq(w[1], 5e-3, 1e-12);
	for (u = 0; u < 3; u++)
		c.fsdp_sl[1][u] = 0.5;
	cr_assert_eq(est_fsdp_streams(&e, &c, f, bw, w), 0);
	cr_assert_float_eq(f[1], 2e-3, 1e-12);
	cr_assert_float_eq(bw[1], 15.5e-3, 1e-12);
	cr_assert_float_eq(w[1], 6.5e-3, 1e-12);
	f[1] = bw[1] = w[1] = 0;
	cr_assert_eq(est_fsdp_streams(&e, &c, f, bw, w), 0);
	cr_assert_float_eq(bw[1], 15.5e-3, 1e-12);
	cr_assert_float_eq(w[1], 6.5e-3, 1e-12);
	mem_free(e.fsdp_t);
	memo_release(&e.fsdp);
}

/*
 * torchtitan's root unit and held last block on one stage in the plan's
 * streams (est_fsdp.c gather_w; the run's models/train_dp.c fsdp_role):
 * the root (the embedding unit, with the head's parameters) gathers in
 * its forward only, the head never, the last layer not in its backward.
 * pp 1, one layer (units embed, layer, head), fsdp_prefetch_units 1, no
 * reduce-scatter work, units not slowed; made-up times (ms): forward /
 * backward embed 1 / 1, layer 2 / 4, head 1 / 1; a forward's gathers:
 * root 3, layer 2, head 0 (est_fsdp_units gives the head none under the
 * root). Unit q's gather is issued when unit q - 1 ends:
 *
 *   G0 0-3; E 3-4, G1 4-6; L 6-8; H 8-9 | B: H 9-10, L 10-14 (no
 *   gather), E 14-15 (none) | G6 15-18; E 18-19 (second pair's forward
 *   starts 18), G7 19-21; L 21-23; H 23-24 | H 24-25 (backward starts
 *   24), L 25-29, E 29-30, G12 30-33: the next forward starts 33.
 *
 * Forward 24 - 18 = 6, backward 33 - 24 = 9. With the layer held only
 * (no root: the embedding's backward gathers its 3): H 9-10, L 10-14,
 * G5 14-17, E 17-18, G6 18-21; E 21-22, G7 22-24, L 24-26, H 26-27 |
 * 27: H 27-28, L 28-32, G11 32-35, E 35-36, G12 36-39: forward 27 - 21
 * = 6, backward 39 - 27 = 12. With neither (the backward's layer gathers
 * 2 too): forward 6, backward 14 (H 29-30, G 30-32, L 32-36, G 36-39,
 * E 39-40, G 40-43).
 * The compute since the start of the second pair's last unit that
 * gathers (w; no reduce-scatter work here): with both, the forward's
 * layer at 21, the backward gathering nothing: 30 - 21 = 9; held only,
 * the embedding's backward at 35: 36 - 35 = 1; neither, at 39: 40 - 39
 * = 1.
 */
Test(est, fsdp_streams_root_unit_and_held_last_layer)
{
	static struct job_spec j;
	static struct framework_spec fw;
	static struct est e;
	struct est_blocks b;
	struct est_cand c;
	int64_t split[1] = { 1 };
	double f, bw, w;

	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	j.training.zero_stage = 3;
	j.framework = &fw;
	fw.fsdp_prefetch_units = 1;
	c.j = &j;
	c.b = &b;
	c.split = split;
	c.p = 1;
	c.v = 1;
	c.S = 1;
	c.fsdp_c[0][EST_EMBED] = 1e-3;
	c.fsdp_c[1][EST_EMBED] = 1e-3;
	c.fsdp_c[0][EST_LAYER] = 2e-3;
	c.fsdp_c[1][EST_LAYER] = 4e-3;
	c.fsdp_c[0][EST_HEAD] = 1e-3;
	c.fsdp_c[1][EST_HEAD] = 1e-3;
	c.fsdp_ag[EST_EMBED] = 3e-3;
	c.fsdp_ag[EST_LAYER] = 2e-3;
	c.fsdp_root = 1;
	c.fsdp_last_held = 1;
	cr_assert_eq(est_fsdp_streams(&e, &c, &f, &bw, &w), 0);
	cr_assert_float_eq(f, 6e-3, 1e-12);
	cr_assert_float_eq(bw, 9e-3, 1e-12);
	cr_assert_float_eq(w, 9e-3, 1e-12);
	c.fsdp_root = 0;
	cr_assert_eq(est_fsdp_streams(&e, &c, &f, &bw, &w), 0);
	cr_assert_float_eq(f, 6e-3, 1e-12);
	cr_assert_float_eq(bw, 12e-3, 1e-12);
	cr_assert_float_eq(w, 1e-3, 1e-12);
	c.fsdp_last_held = 0;
	cr_assert_eq(est_fsdp_streams(&e, &c, &f, &bw, &w), 0);
	cr_assert_float_eq(f, 6e-3, 1e-12);
	cr_assert_float_eq(bw, 14e-3, 1e-12);
	cr_assert_float_eq(w, 1e-3, 1e-12);
	mem_free(e.fsdp_t);
	memo_release(&e.fsdp);
}

/* The synchronization tax (est.c est_sync_tax) of a ZeRO 3 layout: one
 * stage from the DP streams' w, a pipelined one from the sum over its
 * ops. dp 8 (n = 8), sigma_op 0.1, sigma_gpu 0.2, w 1 ms: one stage pays
 * e(8) sqrt(0.1^2 1e-6 + 0.2^2 1e-6) = e(8) 0.2236 ms. pp 2, 4
 * microbatches, rank 0's forward 2 and backward 4 ms: sum_ops t^2 = 4
 * (4 + 16) = 80 ms^2, C = 4 * 6 = 24 ms: e(8) sqrt(0.01 * 80 + 0.04 *
 * 576) = e(8) sqrt(23.84) = e(8) 4.8826 ms, w not taken. */
Test(est, sync_tax_from_w_on_one_stage_only)
{
	static struct job_spec j;
	static struct system_spec sys;
	static struct est e;
	struct est_cand c;
	double sf[2] = { 2e-3, 3e-3 }, sb[2] = { 4e-3, 6e-3 };
	double w[2] = { 1e-3, 1e-3 }, E;

	memset(&c, 0, sizeof(c));
	memo_init(&e.emax, sizeof(double), sizeof(double));
	sys.variability.op_jitter = 0.1;
	sys.variability.gpu_spread = 0.2;
	j.system = &sys;
	j.parallelism.dp = 8;
	j.parallelism.tp = 1;
	j.parallelism.cp = 1;
	c.j = &j;
	c.sf = sf;
	c.sb = sb;
	c.fsdp_w = w;
	c.m = 4;
	c.p = c.v = c.S = 1;
	E = est_emax(&e, 8);
	cr_assert(E > 1);
	cr_assert_float_eq(est_sync_tax(&e, &c, 0) / E, sqrt(0.05) * 1e-3,
			   1e-12);
	c.p = c.S = 2;
	cr_assert_float_eq(est_sync_tax(&e, &c, 0) / E, sqrt(23.84) * 1e-3,
			   1e-12);
	memo_release(&e.emax);
}
