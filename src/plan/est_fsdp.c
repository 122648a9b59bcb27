/*
 * est_fsdp.c - ZeRO 3 (FSDP) stages for the analytical tier as the step
 * program serialises their collectives (models/train_dp.c fsdp_one):
 *
 *  - one all-gather stream and one reduce-scatter stream a rank, each
 *    FIFO across every action of the rank, not per pass;
 *  - unit q's all-gather is issued when the unit fsdp_prefetch_units (k)
 *    before it in the rank's compute order ends, so an action's first k
 *    gathers are issued in the action before it (the previous
 *    microbatch's backward, in 1F1B's steady state);
 *  - a backward unit's reduce-scatter is issued when its backward ends,
 *    and the rank's next action waits for all of the action's
 *    (reduce_waited: FSDP2's root post-backward callback); with
 *    fsdp_reduce_one_in_flight a unit also waits for the reduce-scatter
 *    of the unit two before it in the backward (one_in_flight);
 *  - the two streams run over the same data-parallel group and share
 *    its links (the fabric's max-min flows): while both have a
 *    collective running each moves at half its rate alone, so a
 *    reduce-scatter R issued with an all-gather A ends after R + min(A,
 *    R) (on llama3-70b-h100-64 tp 4 pp 4 vpp 20 cp 2 dp 2 the run's
 *    860 MB reduce-scatter beside the 430 MB gather issued at the same
 *    backward end: 9.76 ms, alone 6.57 + 3.31 = 9.88 ms estimated);
 *  - a unit's kernels are slowed by the share dp_lost of the time a DP
 *    collective runs beside them (est_dp.c).
 *
 * The recurrence (est_pipe.c) takes one forward and one backward time a
 * virtual stage; they are read here from the steady state of 1F1B, the
 * stage's forward and backward alternating, as the rank runs them once
 * past its warm-up: two pairs from idle, the second pair's times (the
 * start of its forward to that of its backward, to that of the next
 * forward: the backward's wait for its reduce-scatters included),
 * remembered by the stage's units' times (the schedules and the stages
 * alike share them). What
 * this leaves out: the warm-up's forwards after forwards and the
 * cool-down's backwards after backwards take the alternation's times,
 * and a rank waiting for its pipeline input lets the streams catch up.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "base/mem.h"
#include "config/spec_job.h"
#include "est_impl.h"

/* The data-parallel links of one rank: the gathers' queue (g) and the
 * reduce-scatters' (r), each entry issued at i[], with w[] of work left
 * (s, alone) and done at d[]; h the head, n the entries. */
struct fq {
	double *i, *w, *d;
	int64_t h, n;
};

struct lnk {
	double now, busy;	/* s: the time, and the time some collective ran */
	struct fq q[2];
};

/* Advance the links to time T, or until queue x's entry y is done (x <
 * 0: none). Fair share: while both heads run, each at half its rate. */
static void lnk_run(struct lnk *l, double T, int x, int64_t y)
{
	while (l->now < T && !(x >= 0 && l->q[x].h > y)) {
		int act[2], k;
		double nx = T, rate;

		for (k = 0; k < 2; k++) {
			struct fq *q = &l->q[k];

			act[k] = q->h < q->n && q->i[q->h] <= l->now;
			if (!act[k] && q->h < q->n)
				nx = fmin(nx, q->i[q->h]);
		}
		if (!act[0] && !act[1]) {
			if (isinf(nx))
				return;	/* nothing queued: not reached */
			l->now = nx;
			continue;
		}
		rate = act[0] && act[1] ? 0.5 : 1;
		for (k = 0; k < 2; k++)
			if (act[k])
				nx = fmin(nx, l->now + l->q[k].w[l->q[k].h] / rate);
		for (k = 0; k < 2; k++) {
			struct fq *q = &l->q[k];

			if (!act[k])
				continue;
			if (nx >= l->now + q->w[q->h] / rate) {
				q->w[q->h] = 0;
				q->d[q->h++] = nx;
			} else {
				q->w[q->h] -= (nx - l->now) * rate;
			}
		}
		l->busy += nx - l->now;
		l->now = nx;
	}
}

/* Unit j (compute order) of stage s's forward (bwd 0) or backward: its
 * kind (EST_LAYER, EST_EMBED, EST_HEAD). */
static int unit_kind(const struct est_cand *c, int64_t s, int bwd, int64_t j,
		     int64_t n)
{
	int64_t f = bwd ? n - 1 - j : j;	/* forward position */

	if (s == 0 && f == 0)
		return EST_EMBED;
	if (s == c->S - 1 && f == n - 1)
		return EST_HEAD;
	return EST_LAYER;
}

/* The all-gather work of unit j (compute order) of stage s's forward
 * (bwd 0) or backward: none for the root's backward (it stays gathered
 * from its forward: c->fsdp_root) or the held last layer's
 * (c->fsdp_last_held: forward position split[s] on the one stage). */
static double gather_w(const struct est_cand *c, int64_t s, int bwd,
		       int64_t j, int64_t n)
{
	int kind = unit_kind(c, s, bwd, j, n);

	if (bwd && kind == EST_EMBED && c->fsdp_root)
		return 0;
	if (bwd && c->fsdp_last_held && n - 1 - j == c->split[s])
		return 0;
	return c->fsdp_ag[kind];
}

/* One stage's alternation on the rank's streams from idle: two
 * forward/backward pairs and the next forward's start; the second pair's
 * forward and backward into *f, *b (the first pair starts from idle,
 * its gathers exposed), and into *w the time from the start of that
 * pair's last unit that meets the data-parallel group (its gather, or
 * reduce-scatters it waits for) to the end of its backward, -1 when none
 * does: the compute whose lateness the step's final rendezvous waits for
 * (est.c sync_tax). Each meeting starts late by the rank's lateness, so
 * the compute behind it waits and realigns (engine/exec_jitter.c) or the
 * prefetch's slack absorbs it: on one-stage FSDP the run charges only
 * the last stretch (8B FSDP8, one microbatch: 0.8 ms, against ~43 ms
 * for the whole step's). sc: scratch of 8 (4 n + k) doubles. */
static void alternate(const struct est_cand *c, int64_t s, double *sc,
		      double *f, double *b, double *w)
{
	const struct framework_spec *fw = c->j->framework;
	int64_t n = c->split[s] + (s == 0) + (s == c->S - 1);
	int64_t k = fw->fsdp_prefetch_units, N = 4 * n + k, q, a;
	double *end = sc, *rsof = sc + N, start[5] = { 0, 0, 0, 0, 0 };
	double t = 0, kern[2] = { 0, 0 }, met = -1;
	int one = fw->fsdp_reduce_one_in_flight;
	struct lnk l;
	int64_t j, u;

	memset(&l, 0, sizeof(l));
	for (j = 0; j < 2; j++) {
		l.q[j].i = sc + (2 + 3 * j) * N;
		l.q[j].w = l.q[j].i + N;
		l.q[j].d = l.q[j].w + N;
	}
	/* each pass's kernels, for its fp8 amax reduction (est_stage.c) */
	for (j = 0; j < n; j++)
		for (a = 0; a < 2; a++)
			kern[a] += c->fsdp_c[a][unit_kind(c, s, (int)a, j, n)];
	/* the first k gathers, issued at the start */
	for (q = 0; q < k && q < N; q++) {
		l.q[0].i[q] = 0;
		l.q[0].w[q] = gather_w(c, s, (int)((q / n) & 1), q % n, n);
	}
	l.q[0].n = q;
	for (q = 0; q <= 4 * n; q++) {
		int64_t act = q / n;
		int bwd = (int)(act & 1);
		int kind;
		double st = t, cu, over, b0;

		j = q % n;
		kind = unit_kind(c, s, bwd, j, n);
		cu = c->fsdp_c[bwd][kind];
		if (j == 0) {
			/* after a backward: all its reduce-scatters */
			if (!bwd && act > 0) {
				lnk_run(&l, INFINITY, 1, (int64_t)rsof[q - 1]);
				st = fmax(st, l.q[1].d[(int64_t)rsof[q - 1]]);
			}
			/* the scattered transfer's all-gather first */
			if (bwd ? s < c->S - 1 : s > 0)
				cu += c->b->pg.lat_s;
		}
		if (j == n - 1) {
			const struct est_pass *am = bwd ? &c->b->ab : &c->b->af;

			if (am->lat_s > 0)
				cu += am->lat_s + c->b->amax_tax * kern[bwd];
		}
		if (one && bwd && j >= 2) {
			lnk_run(&l, INFINITY, 1, (int64_t)rsof[q - 2]);
			st = fmax(st, l.q[1].d[(int64_t)rsof[q - 2]]);
		}
		lnk_run(&l, INFINITY, 0, q);
		st = fmax(st, l.q[0].d[q]);
		if (j == 0)
			start[act] = st;
		if (act == 4)
			break;
		/* met the group: its gather, or reduce-scatters it waits
		 * for (one in flight; a backward's, before a forward) */
		if (act >= 2 && (gather_w(c, s, bwd, j, n) > 0 ||
				 (one && bwd && j >= 2) ||
				 (!bwd && j == 0)))
			met = st;
		lnk_run(&l, st, -1, 0);
		b0 = l.busy;
		lnk_run(&l, st + c->fsdp_c[bwd][kind], -1, 0);
		over = l.busy - b0;
		t = end[q] = st + cu +
			     c->fsdp_sl[bwd][kind] * fmin(c->fsdp_c[bwd][kind], over);
		if (bwd) {
			u = l.q[1].n++;
			l.q[1].i[u] = t;
			l.q[1].w[u] = c->fsdp_rsu[kind];
			rsof[q] = (double)u;
		}
		if (q + k < N) {
			int64_t g = q + k, ga = g / n;

			l.q[0].i[g] = t;
			l.q[0].w[g] = gather_w(c, s, (int)(ga & 1), g % n, n);
			l.q[0].n = g + 1;
		}
	}
	*f = start[3] - start[2];
	*b = start[4] - start[3];
	*w = met >= 0 ? end[4 * n - 1] - met : -1;
}

/* What a stage's alternation depends on: its units (layers, first,
 * last), the framework's two rules and every unit's times. */
struct fs_key {
	int64_t n, k, one, first, last, root, held;
	double u[3][6];
	double pg, af, ab, tax;
};

int est_fsdp_streams(struct est *e, const struct est_cand *c, double *f,
		     double *b, double *w)
{
	int64_t s, t, n = 0;
	size_t need;

	for (s = 0; s < c->S; s++)
		if (c->split[s] + 2 > n)
			n = c->split[s] + 2;
	need = (size_t)(8 * (4 * n + c->j->framework->fsdp_prefetch_units));
	if (need > e->fsdp_t_cap) {
		double *x = mem_realloc(e->fsdp_t, need * sizeof(*x));

		if (!x)
			return -1;
		e->fsdp_t = x;
		e->fsdp_t_cap = need;
	}
	for (s = 0; s < c->S; s++) {
		struct fs_key key;
		const double *hit;
		double v[3];
		int u;

		/* a stage like an earlier one (its layers, first or last)
		 * takes its times */
		for (t = 0; t < s; t++)
			if (c->split[t] == c->split[s] && t != 0 &&
			    t != c->S - 1 && s != c->S - 1)
				break;
		if (t < s) {
			f[s] = f[t];
			b[s] = b[t];
			w[s] = w[t];
			continue;
		}
		memset(&key, 0, sizeof(key));
		key.n = c->split[s];
		key.k = c->j->framework->fsdp_prefetch_units;
		key.one = c->j->framework->fsdp_reduce_one_in_flight;
		key.first = s == 0;
		key.last = s == c->S - 1;
		key.root = c->fsdp_root;
		key.held = c->fsdp_last_held;
		for (u = 0; u < 3; u++) {
			key.u[u][0] = c->fsdp_c[0][u];
			key.u[u][1] = c->fsdp_c[1][u];
			key.u[u][2] = c->fsdp_sl[0][u];
			key.u[u][3] = c->fsdp_sl[1][u];
			key.u[u][4] = c->fsdp_ag[u];
			key.u[u][5] = c->fsdp_rsu[u];
		}
		key.pg = c->b->pg.lat_s;
		key.af = c->b->af.lat_s;
		key.ab = c->b->ab.lat_s;
		key.tax = c->b->amax_tax;
		if (!e->fsdp.key_B)
			memo_init(&e->fsdp, sizeof(key), sizeof(v));
		if ((hit = memo_get(&e->fsdp, &key))) {
			f[s] = hit[0];
			b[s] = hit[1];
			w[s] = hit[2];
			continue;
		}
		alternate(c, s, e->fsdp_t, &f[s], &b[s], &w[s]);
		v[0] = f[s];
		v[1] = b[s];
		v[2] = w[s];
		if (!memo_put(&e->fsdp, &key, v))
			return -1;
	}
	return 0;
}
