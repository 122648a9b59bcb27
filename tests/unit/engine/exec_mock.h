/*
 * exec_mock.h - the engine tests' mock comm backend and program helpers
 * (test_exec.c, test_exec_var.c): a collective takes alpha + bytes /
 * beta, scheduled with sim_after; task and collective builders; runs that
 * assert success or return the failure. Times in the tests are in us; the
 * engine works in integer ns, so every expectation is exact.
 */
#ifndef LLMSIM_TEST_ENGINE_EXEC_MOCK_H
#define LLMSIM_TEST_ENGINE_EXEC_MOCK_H

#include "engine/exec.h"

#define US 1e-6

struct pend {
	void (*done)(void *token);
	void *token;
};

struct mock {
	struct sim *sim;
	double alpha_s;		/* s per collective */
	double beta_Bps;	/* B/s */
	int never_done;		/* start collectives, never end them */
	int started;		/* collectives started */
	struct pend pend[1024];
};

extern const struct comm_ops ex_mock_ops;

/* A sim event that does nothing. */
void ex_noop(struct sim *sim, void *arg);
/* s in integer ns, rounded. */
long long ex_ns(double s);
struct task_info ex_info(const char *name, enum task_cat cat);
/* A task of us microseconds. */
task_id ex_task(struct prog *p, uint32_t rank, uint32_t stream, double us,
		const char *name, enum task_cat cat);
/* A collective over ranks (global GPU id = rank) on stream. */
task_id ex_coll(struct prog *p, enum coll_op op, const uint32_t *ranks,
		uint32_t n, uint32_t stream, double bytes, const char *name);
/* Run p with the mock; asserts success. */
struct exec_result ex_run(struct prog *p, struct mock *m);
/* Run p expecting failure; returns the reason. */
const char *ex_run_fail(struct prog *p, struct mock *m);
/* The parts of r's step add up to the step, to the ns. */
void ex_assert_parts_sum(const struct exec_result *r);
struct mock ex_mock_new(double alpha_s, double beta_Bps);

#endif
