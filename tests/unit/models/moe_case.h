/*
 * moe_case.h - one MoE layer under test: fixture_moe's job, its layer
 * dimensions and routing, and the op list the last forward or backward
 * built, so a test holds one object instead of six and rebuilds the
 * layer after changing the job in one call. Every number stays in the
 * test; this only names the steps (fixture_dims, layer_fwd, layer_bwd).
 */
#ifndef LLMSIM_TEST_MODELS_MOE_CASE_H
#define LLMSIM_TEST_MODELS_MOE_CASE_H

#include "base/arena.h"
#include "fixture.h"
#include "models/layer.h"
#include "models/route.h"

struct moe_case {
	struct fixture f;	/* the job, its model, system and framework */
	struct arena a;		/* the routing's arrays */
	struct layer_dims d;	/* the job's layer, from moe_case_dims */
	struct route_result r;	/* its routing, from moe_case_dims */
	struct layer_ops o;	/* the ops of the last fwd or bwd */
	struct layer_kind kind;	/* a MoE layer */
};

/* fixture_moe(&m->f, E, k, fe, ep) and an empty arena; release with
 * moe_case_release. */
void moe_case_init(struct moe_case *m, int64_t E, int64_t k, int64_t fe,
		   int64_t ep);

/* moe_case_init(m, 8, 2, 512, ep) (E 8 experts, top-2, expert FFN 512)
 * with the job's dispatcher e, fixture_ep_library(e, library): the
 * layer of the dispatcher tests (test_moe_a2a.c, test_moe_permute.c). */
void moe_case_ep(struct moe_case *m, struct ep_comm_spec *e,
		 const char *library, int64_t ep);

/* The job's layer dimensions and routing into m->d and m->r, asserting
 * the routing succeeds (fixture_dims). */
void moe_case_dims(struct moe_case *m);

/* moe_case_dims, then the layer's forward ops into m->o. */
void moe_case_fwd(struct moe_case *m);

/* The backward ops of the current m->d, no recomputation, into m->o
 * (the dimensions are not rebuilt). */
void moe_case_bwd(struct moe_case *m);

/* moe_case_fwd, then moe_case_bwd: m->o holds the backward ops of the
 * job as it is now. */
void moe_case_fwd_bwd(struct moe_case *m);

/* Frees the routing's arrays. */
void moe_case_release(struct moe_case *m);

#endif
