/*
 * mockcomm.c - the alpha-beta comm backend of the models tests.
 */
#include "mockcomm.h"

#include <string.h>

#include "engine/sim.h"
#include "base/units.h"

struct pending {
	void (*done)(void *token);
	void *token;
};

double mockcomm_time(const struct mockcomm *m, const struct coll_desc *c)
{
	double n = c->ngpus, k = 1;

	if (m->beta_Bps <= 0)
		return 0;
	if (c->op == COLL_ALLREDUCE)
		k = 2 * (n - 1) / n;
	else if (c->op == COLL_ALLGATHER || c->op == COLL_REDUCESCATTER)
		k = (n - 1) / n;
	return m->alpha_s + k * c->bytes / m->beta_Bps;
}

static void fire(struct sim *sim, void *arg)
{
	struct pending *p = arg;

	(void)sim;
	p->done(p->token);
}

static void start(void *ctx, const struct coll_desc *c,
		  void (*done)(void *token), void *token)
{
	struct mockcomm *m = ctx;
	struct pending *p = arena_alloc(&m->arena, sizeof(*p));

	if (!p)
		return;	/* the run then fails: a collective never completes */
	p->done = done;
	p->token = token;
	m->calls++;
	sim_after(m->sim, units_s_to_ns(mockcomm_time(m, c)), fire, p);
}

static const struct comm_ops mock_ops = { .start = start };

static int attach(void *ctx, struct sim *sim)
{
	((struct mockcomm *)ctx)->sim = sim;
	return 0;
}

struct step_comm mockcomm_init(struct mockcomm *m, double alpha_s,
			       double beta_Bps)
{
	struct step_comm c = { .ops = &mock_ops, .ctx = m, .attach = attach };

	memset(m, 0, sizeof(*m));
	m->alpha_s = alpha_s;
	m->beta_Bps = beta_Bps;
	arena_init(&m->arena);
	return c;
}

void mockcomm_release(struct mockcomm *m)
{
	arena_release(&m->arena);
}
