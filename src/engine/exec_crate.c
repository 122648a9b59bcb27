/*
 * exec_crate.c - comm-side interference: a collective whose kernels lose
 * progress while compute runs on their GPUs.
 *
 * A collective whose descriptor has busy_rate x in (0, 1) has a duration
 * D from the comm backend (the fabric model's, contention included): that
 * is its work at full speed. While a compute or optimizer task runs on
 * any of its member ranks it progresses at rate x, else at 1. The work it
 * lost, w = sum over its busy spans of (1 - x) dt, is brought up to date
 * whenever a member rank starts or stops computing. When the backend is
 * done, the collective has done D - w of its work: it stays running
 * (holding its compute share and its stream) until it has done the rest,
 * w at the rate of the moment (x or 1, still moving as compute starts and
 * ends), and ends then. With no compute beside it nothing changes: w = 0
 * and it ends when the backend is done, at exactly the same time.
 *
 * Worked example: D = 10 us, x = 0.5, a GEMM runs on one member from
 * 2 us to 6 us after the start. w = 4 us x 0.5 = 2 us at the backend's
 * 10 us; no compute then, so it ends at 12 us. (A GEMM from 2 to 12 us
 * instead: 4 us lost at 10 us, then 2 us at 0.5 do 1 us of it and the
 * other 3 us run at full speed: ends at 15 us.)
 *
 * The fabric does not see the stretch (the flows finished at the
 * backend's time): a slower collective does not hold its links longer
 * for the collectives that share them. Any member computing slows the
 * whole collective (it ends on all members at once, with the slowest).
 *
 * Depends on exec_run.h.
 */
#include "exec_run.h"

#include "base/diag.h"
#include "base/mem.h"

#include <math.h>
#include <stddef.h>

static int modelled(double x)
{
	return x > 0 && x < 1;
}

int exec_crate_alloc(struct run *r)
{
	const struct prog *p = r->p;
	uint32_t i;
	int any = 0;

	r->crate = NULL;
	r->crank = NULL;
	for (i = 0; i < p->desc_tab.n && !any; i++)
		any = modelled(p->descs[i].busy_rate);
	if (!any)
		return 0;
	r->crate = mem_calloc((size_t)p->ncolls + 1, sizeof(*r->crate));
	r->crank = mem_calloc(p->nranks, sizeof(*r->crank));
	return r->crate && r->crank ? 0 : -1;
}

void exec_crate_free(struct run *r)
{
	uint32_t i;

	if (r->crank)
		for (i = 0; i < r->p->nranks; i++)
			mem_free(r->crank[i].k);
	mem_free(r->crank);
	mem_free(r->crate);
	r->crank = NULL;
	r->crate = NULL;
}

static void leave(struct run *r, uint32_t k);

/* Collective k's rate now. */
static double rate_of(const struct run *r, uint32_t k)
{
	return r->crate[k].nbusy > 0 ? coll_desc_of(r->p, k)->busy_rate : 1.0;
}

static void crate_end(struct sim *sim, void *arg)
{
	struct coll_run *cr = arg;
	struct run *r = exec_run_of(cr);

	(void)sim;
	r->now = sim_now(r->sim) - r->t0;
	r->crate[cr->k].ev = 0;
	leave(r, cr->k);
	r->coll_end(r, cr->k);
}

/* Schedule the end of collective k, done by the backend, when the work
 * it has left is done at its rate now. */
static void schedule_end(struct run *r, uint32_t k)
{
	struct crate_coll *c = &r->crate[k];
	double d = ceil(c->lost_ns / rate_of(r, k));
	units_ns_t at, dt;

	dt = d > 0 ? (d < (double)UNITS_NS_MAX ? (units_ns_t)d :
		      UNITS_NS_MAX) : 0;
	if (units_ns_add(sim_now(r->sim), dt, &at) != 0) {
		/* past the horizon: end it there (the step is absurd anyway) */
		at = UNITS_NS_MAX;
	}
	c->ev = sim_at(r->sim, at, crate_end, &r->colls[k]);
}

/* Bring collective k's lost work (or, once the backend is done, its work
 * left) up to now, at the rate it had since. */
static void bring_up(struct run *r, uint32_t k)
{
	struct crate_coll *c = &r->crate[k];
	double dt = (double)(r->now - c->since), x = rate_of(r, k);

	if (c->ext) {
		c->lost_ns -= dt * x;
		if (c->lost_ns < 0)
			c->lost_ns = 0;
	} else {
		c->lost_ns += dt * (1.0 - x);
	}
	c->since = r->now;
}

void exec_crate_slow(struct run *r, uint32_t rank, int on)
{
	struct crate_rank *cr;
	uint32_t i;

	if (!r->crank)
		return;
	cr = &r->crank[rank];
	if (on ? cr->nslow++ > 0 : --cr->nslow > 0)
		return;		/* its busy state did not change */
	for (i = 0; i < cr->n; i++) {
		uint32_t k = cr->k[i];
		struct crate_coll *c = &r->crate[k];
		double before = rate_of(r, k);

		bring_up(r, k);
		if (on)
			c->nbusy++;
		else
			c->nbusy--;
		if (c->ext && rate_of(r, k) != before) {
			sim_cancel(r->sim, c->ev);
			schedule_end(r, k);
		}
	}
}

void exec_crate_start(struct run *r, uint32_t k)
{
	const struct pcoll *pc = &r->p->colls[k];
	struct crate_coll *c;
	uint32_t i;

	if (!r->crate || !modelled(coll_desc_of(r->p, k)->busy_rate))
		return;
	c = &r->crate[k];
	*c = (struct crate_coll){ .since = r->now, .on = 1 };
	for (i = 0; i < pc->n; i++) {
		uint32_t rank = task_rank(r->p, pc->first + i);
		struct crate_rank *cr = &r->crank[rank];

		if (cr->n == cr->cap) {
			uint32_t ncap = cr->cap ? 2 * cr->cap : 4;
			uint32_t *nk = mem_realloc(cr->k, ncap * sizeof(*nk));

			if (!nk) {
				r->failed = 1;
				sim_stop(r->sim);
				return;
			}
			cr->k = nk;
			cr->cap = ncap;
		}
		cr->k[cr->n++] = k;
		if (cr->nslow > 0)
			c->nbusy++;
	}
}

/* Collective k leaves its members' lists. */
static void leave(struct run *r, uint32_t k)
{
	const struct pcoll *pc = &r->p->colls[k];
	uint32_t i, j;

	for (i = 0; i < pc->n; i++) {
		struct crate_rank *cr =
			&r->crank[task_rank(r->p, pc->first + i)];

		for (j = 0; j < cr->n; j++)
			if (cr->k[j] == k) {
				cr->k[j] = cr->k[--cr->n];
				break;
			}
	}
	r->crate[k].on = 0;
}

int exec_crate_done(struct run *r, uint32_t k)
{
	struct crate_coll *c;

	if (!r->crate || !r->crate[k].on)
		return 0;
	c = &r->crate[k];
	if (c->ext)
		BUG("comm backend: done called twice for a collective");
	bring_up(r, k);
	if (!(c->lost_ns >= 0.5)) {
		leave(r, k);
		return 0;
	}
	c->ext = 1;
	schedule_end(r, k);
	return 1;
}
