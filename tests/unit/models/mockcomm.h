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

#endif
