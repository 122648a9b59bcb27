/*
 * exec_mock.c - the engine tests' mock comm backend and helpers
 * (exec_mock.h).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "exec_mock.h"

static void mock_fire(struct sim *sim, void *arg)
{
	struct pend *pd = arg;

	(void)sim;
	pd->done(pd->token);
}

static void mock_start(void *ctx, const struct coll_desc *c,
		       void (*done)(void *token), void *token)
{
	struct mock *m = ctx;
	struct pend *pd;

	cr_assert_lt(m->started, 1024);
	pd = &m->pend[m->started++];
	pd->done = done;
	pd->token = token;
	if (!m->never_done)
		sim_after(m->sim,
			  units_s_to_ns(m->alpha_s + c->bytes / m->beta_Bps),
			  mock_fire, pd);
}

const struct comm_ops ex_mock_ops = { .start = mock_start };

/* ---- helpers ---- */

void ex_noop(struct sim *sim, void *arg)
{
	(void)sim;
	(void)arg;
}

long long ex_ns(double s)
{
	return llround(s * 1e9);
}

struct task_info ex_info(const char *name, enum task_cat cat)
{
	return (struct task_info){ name, cat, -1, -1, TASK_PHASE_NONE };
}

/* A task of us microseconds. */
task_id ex_task(struct prog *p, uint32_t rank, uint32_t stream,
		    double us, const char *name, enum task_cat cat)
{
	struct task_info in = ex_info(name, cat);

	return prog_task(p, rank, stream, us * US, &in);
}

/* A collective over ranks (global GPU id = rank) on stream. */
task_id ex_coll(struct prog *p, enum coll_op op, const uint32_t *ranks,
		    uint32_t n, uint32_t stream, double bytes, const char *name)
{
	struct coll_desc c = { .op = op, .bytes = bytes, .gpus = ranks,
			       .ngpus = n, .algo = -1, .proto = -1 };
	struct task_info in = ex_info(name, TASK_COMM);

	return prog_coll(p, ranks, n, stream, &c, &in);
}

/* Run p with the mock (alpha_us, beta B/s); asserts success. */
struct exec_result ex_run(struct prog *p, struct mock *m)
{
	struct exec_result res;
	const char *why = NULL;
	int rc;

	m->sim = sim_new();
	cr_assert_not_null(m->sim);
	rc = exec_run(p, m->sim, &ex_mock_ops, m, &res, &why);
	cr_assert_eq(rc, 0, "exec_run failed: %s", why);
	sim_free(m->sim);
	m->sim = NULL;
	return res;
}

/* Run p expecting failure; returns the reason. */
const char *ex_run_fail(struct prog *p, struct mock *m)
{
	struct exec_result res;
	const char *why = NULL;

	m->sim = sim_new();
	cr_assert_eq(exec_run(p, m->sim, &ex_mock_ops, m, &res, &why), -1);
	cr_assert_not_null(why);
	sim_free(m->sim);
	m->sim = NULL;
	return why;
}

void ex_assert_parts_sum(const struct exec_result *r)
{
	long long sum = 0;
	int i;

	for (i = 0; i < EXEC_PART_COUNT; i++)
		sum += ex_ns(r->part_s[i]);
	cr_assert_eq(sum, ex_ns(r->step_s));
}

struct mock ex_mock_new(double alpha_s, double beta_Bps)
{
	struct mock m;

	memset(&m, 0, sizeof(m));
	m.alpha_s = alpha_s;
	m.beta_Bps = beta_Bps;
	return m;
}

