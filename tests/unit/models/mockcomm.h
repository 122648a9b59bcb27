/*
 * mockcomm.h - an alpha-beta comm backend for the models tests: every
 * collective takes alpha + k(op, n) * bytes / beta, k = 2(n-1)/n for
 * all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 otherwise,
 * whatever else runs (no contention, replicas ignored). beta = 0 makes
 * every collective free.
 */
#ifndef LLMSIM_TEST_MODELS_MOCKCOMM_H
#define LLMSIM_TEST_MODELS_MOCKCOMM_H

#include "base/coll.h"
#include "base/arena.h"
#include "engine/exec.h"
#include "models/train.h"
#include "run/step.h"

struct mockcomm {
	double alpha_s;		/* s per collective */
	double beta_Bps;	/* B/s; 0 = infinitely fast, alpha ignored */
	struct sim *sim;
	struct arena arena;	/* pending completions */
	unsigned calls;		/* collectives started */
};

/* A step_comm over m (initialized here; release with mockcomm_release). */
struct step_comm mockcomm_init(struct mockcomm *m, double alpha_s,
			       double beta_Bps);
void mockcomm_release(struct mockcomm *m);

/* The time the mock gives a collective. */
double mockcomm_time(const struct mockcomm *m, const struct coll_desc *c);

/* One step of job j through the real checker, builder (full: every
 * replica simulated) and executor, with collectives on this mock:
 * train_check and train_build must succeed and the run complete. */
struct mockcomm_run {
	struct mockcomm m;
	struct train_plan plan;
	struct exec_result er;	/* the executor's result */
	struct prog *p;		/* the program, for its tasks */
};

void mockcomm_train_run(struct mockcomm_run *r, const struct job_spec *j,
			int full, double alpha_s, double beta_Bps);
/* Frees r's program, simulation and mock. */
void mockcomm_train_release(struct mockcomm_run *r);

/* The step time (s) of job j through mockcomm_train_run, its exposed
 * communication (s) into *exposed_s (unless NULL); everything freed. */
double mockcomm_train_step(const struct job_spec *j, int full, double alpha_s,
			   double beta_Bps, double *exposed_s);

/* How many of rank r's tasks in p are the collective called name; the
 * bytes and GPUs of the last into *bytes and *gpus (either may be NULL). */
int mockcomm_rank_colls(const struct prog *p, uint32_t r, const char *name,
			double *bytes, uint32_t *gpus);

#endif
