/*
 * route.h - how a microbatch's tokens spread over the experts of an
 * expert-parallel group, what the busiest GPU (which sets the pace of the
 * all-to-all and of the expert GEMMs) receives, and the bytes dispatch
 * moves per GPU with and without deduplication. The mathematics is at the
 * top of route.c.
 *
 * Depends on spec_job.h, layer.h, mem.h, diag.h and GSL.
 */
#ifndef LLMSIM_MODELS_ROUTE_H
#define LLMSIM_MODELS_ROUTE_H

#include <stddef.h>

#include "base/arena.h"
#include "base/mem.h"
#include "layer.h"

struct job_spec;
struct ep_comm_spec;
struct coll_path;
struct diag;

struct route_result {
	const char *method;	/* "exact", "closed_form", "draws", "measured" */
	double max_mean;	/* rows of the busiest EP rank / the mean rank's */
	double *rows;		/* the busiest rank's rows per local expert,
				 * largest first [local] (arena) */
	double *a2a_B;		/* uneven dispatch matrix [ep x ep] (arena), or
				 * NULL when every rank receives the same */
	int64_t draws;		/* draws taken (method draws) */
};

/*
 * Expected maximum of n independent normal variables of means mu[i] and
 * standard deviations sd[i] (sd may be 0), by numerical integration of
 * 1 - prod_i Phi((x - mu_i) / sd_i).
 */
double route_expected_max(const double *mu, const double *sd, size_t n);

/*
 * DeepSeek's EPLB placement of E experts of expected loads p[E] (shares
 * of the rows, summing to 1) on P >= E slots, P / ep a rank
 * (deepseek-ai/EPLB eplb.py, the global policy): replicate_experts gives
 * each of the P - E redundant slots, one at a time, to the expert with
 * the largest load per replica p_e / r_e (the lowest id on a tie);
 * balanced_packing then takes the P replicas, each carrying p_e / r_e,
 * heaviest first, onto the rank with the least load among those with a
 * free slot. The slots' loads into q[P], rank-major (rank r's slots are
 * q[r P/ep .. (r+1) P/ep)). Returns 0, or -1 when out of memory (a's).
 */
int route_eplb_slots(const double *p, size_t E, size_t P, size_t ep,
		     double *q, struct arena *a);

/*
 * Fill d->moe's routing fields (rows of the pace GPU, its per-expert
 * rows, dispatch bytes, node deduplication) for job j, whose layout and
 * moe section are already in d (layer_dims_from_job), and describe the
 * routing in *out. Arrays live in a. Returns 0, or -1 when out of memory
 * (reported to dg).
 */
int route_plan(const struct job_spec *j, struct layer_dims *d,
	       struct arena *a, struct route_result *out, struct diag *dg);

/*
 * Dispatcher e's path for each kernel of enum ep_pass (layer.h), rows of
 * m (route_plan): store[i] filled and path[i] = &store[i] for pass i + 1,
 * or NULL (the library's all-to-all); *algo the algorithm it forces.
 */
void route_ep_paths(const struct ep_comm_spec *e, const struct moe_dims *m,
		    struct coll_path *store, const struct coll_path **path,
		    int *algo);

#endif
