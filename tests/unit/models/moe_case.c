/*
 * moe_case.c - one MoE layer under test (moe_case.h).
 */
#include "moe_case.h"

#include <string.h>

void moe_case_init(struct moe_case *m, int64_t E, int64_t k, int64_t fe,
		   int64_t ep)
{
	memset(m, 0, sizeof(*m));
	arena_init(&m->a);
	fixture_moe(&m->f, E, k, fe, ep);
	m->kind.moe = 1;
}

void moe_case_ep(struct moe_case *m, struct ep_comm_spec *e,
		 const char *library, int64_t ep)
{
	moe_case_init(m, 8, 2, 512, ep);
	fixture_ep_library(e, library);
	m->f.job.moe.dispatcher = e;
}

void moe_case_dims(struct moe_case *m)
{
	fixture_dims(&m->f, &m->a, &m->d, &m->r);
}

void moe_case_fwd(struct moe_case *m)
{
	moe_case_dims(m);
	layer_fwd(&m->d, &m->kind, &m->o);
}

void moe_case_bwd(struct moe_case *m)
{
	layer_bwd(&m->d, &m->kind, LREC_NONE, &m->o);
}

void moe_case_fwd_bwd(struct moe_case *m)
{
	moe_case_fwd(m);
	moe_case_bwd(m);
}

void moe_case_release(struct moe_case *m)
{
	arena_release(&m->a);
}
