/*
 * mockcomm.c - the alpha-beta comm backend of the models tests.
 */
#include "mockcomm.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
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

void mockcomm_train_run(struct mockcomm_run *r, const struct job_spec *j,
			int full, double alpha_s, double beta_Bps)
{
	struct step_comm c = mockcomm_init(&r->m, alpha_s, beta_Bps);
	struct diag d;
	const char *why = NULL;

	diag_init(&d, stderr);
	cr_assert_eq(train_check(j, &d), 0);
	r->p = train_build(j, full, &r->plan, &d);
	cr_assert_not_null(r->p);
	r->m.sim = sim_new();
	cr_assert_not_null(r->m.sim);
	cr_assert_eq(exec_run(r->p, r->m.sim, c.ops, c.ctx, &r->er, &why), 0,
		     "exec_run: %s", why);
}

void mockcomm_train_release(struct mockcomm_run *r)
{
	sim_free(r->m.sim);
	prog_free(r->p);
	mockcomm_release(&r->m);
}

double mockcomm_train_step(const struct job_spec *j, int full, double alpha_s,
			   double beta_Bps, double *exposed_s)
{
	struct mockcomm_run run;
	double step_s;

	mockcomm_train_run(&run, j, full, alpha_s, beta_Bps);
	if (exposed_s)
		*exposed_s = run.er.part_s[EXEC_EXPOSED_COMM];
	step_s = run.er.step_s;
	mockcomm_train_release(&run);
	return step_s;
}

int mockcomm_rank_colls(const struct prog *p, uint32_t r, const char *name,
			double *bytes, uint32_t *gpus)
{
	uint32_t i, n = prog_tasks(p);
	enum task_cat cat;
	int k = 0;

	for (i = 0; i < n; i++)
		if (exec_task_rank(p, i) == r &&
		    strcmp(exec_task_name(p, i, &cat), name) == 0) {
			k++;
			if (bytes)
				*bytes = exec_task_coll(p, i)->bytes;
			if (gpus)
				*gpus = exec_task_coll(p, i)->ngpus;
		}
	return k;
}
