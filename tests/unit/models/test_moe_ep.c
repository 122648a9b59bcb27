/*
 * test_moe_ep.c - a MoE layer's four expert-parallel all-to-alls against
 * derived numbers: which kernel each runs (dispatch or combine, ep.c),
 * the bytes of each (Hybrid-EP's probability gradients on the backward of
 * the dispatch), and each one's uneven matrix (its bytes, its direction).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "fixture.h"
#include "moe_case.h"
#include "models/layer.h"
#include "models/route.h"

Test(moe, combine_kernels_run_on_their_own_path)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	/* fixture_moe: 8 experts, top-2, hidden 1024 in bf16, ep 2 in one
	 * node. A Hybrid-EP-like path carries 4 B of fp32 probability per
	 * expert of the domain, 4 x 8 / 2 x 2 = 32 B a row: dispatch rows
	 * 2048 + 32 B. Of the four all-to-alls a layer runs, two are combine
	 * kernels: the forward combine (16-bit rows, 2048 B: combine_B =
	 * dispatch_B x 2048 / 2080) and the backward of the dispatch, which
	 * carries the probability gradients back, 2048 + 32 B a row:
	 * dispatch_B again. The backward of the combine is a dispatch kernel
	 * on 16-bit rows. */
	moe_case_init(&m, 8, 2, 512, 2);
	fixture_ep_forward(&e, "test-combine");
	e.probs_per_domain_expert_B = 4;
	m.f.job.moe.dispatcher = &e;
	moe_case_dims(&m);
	cr_assert_float_eq(m.d.moe.row_B, 2080, 1e-9);
	cr_assert_float_eq(m.d.moe.row_cbwd_B, 2080, 1e-9);
	cr_assert(fixture_near(m.d.moe.combine_B,
			       m.d.moe.dispatch_B * 2048 / 2080, 1e-12));
	cr_assert(fixture_near(m.d.moe.combine_bwd_B, m.d.moe.dispatch_B,
			       1e-12));
	layer_fwd(&m.d, &m.kind, &m.o);
	c = fixture_op(&m.o, "moe_dispatch");
	cr_assert_eq(c->ep_path, EP_PASS_DISPATCH);
	c = fixture_op(&m.o, "moe_combine");
	cr_assert_eq(c->ep_path, EP_PASS_COMBINE);
	cr_assert(fixture_near(c->coll_B, m.d.moe.combine_B, 1e-12));
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "moe_combine_bwd");
	cr_assert_eq(c->ep_path, EP_PASS_DISPATCH16);
	cr_assert(fixture_near(c->coll_B, m.d.moe.combine_B, 1e-12));
	c = fixture_op(&m.o, "moe_dispatch_bwd");
	cr_assert_eq(c->ep_path, EP_PASS_COMBINE_BWD);
	cr_assert(fixture_near(c->coll_B, m.d.moe.dispatch_B, 1e-12));
	/* DeepEP-like (96 B of indices and weights, no probabilities): the
	 * backward of the dispatch moves 16-bit rows, as the combine */
	e.probs_per_domain_expert_B = 0;
	e.bytes_per_token_extra = 96;
	moe_case_dims(&m);
	cr_assert_float_eq(m.d.moe.row_cbwd_B, 2048, 1e-9);
	cr_assert(fixture_near(m.d.moe.combine_bwd_B, m.d.moe.combine_B, 1e-12));
	/* with the top-k weights' gradients, 4 B a selection, top-2: the
	 * backward of the dispatch moves rows of 2048 + 8 B */
	e.topk_weight_grad_B = 4;
	moe_case_dims(&m);
	cr_assert_float_eq(m.d.moe.row_cbwd_B, 2056, 1e-9);
	cr_assert(fixture_near(m.d.moe.combine_bwd_B,
			       m.d.moe.combine_B * 2056 / 2048, 1e-12));
	moe_case_release(&m);
}

/* Sum of row i (dir 0) or column i (dir 1) of an n x n matrix. */
static double line(const double *m, int n, int i, int dir)
{
	double s = 0;
	int k;

	for (k = 0; k < n; k++)
		s += dir ? m[k * n + i] : m[i * n + k];
	return s;
}

Test(moe, uneven_combine_sends_its_own_bytes_back)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	/* Random routing over ep 2: the pace GPU (rank 0) receives more
	 * than the mean (max_mean > 1), so the dispatch matrix has every GPU
	 * send it to_pace = dispatch_B / 2 x max_mean. Each other pass sends
	 * its own bytes through the same shape: the forward combine 2048 B
	 * rows of the 2080 B dispatched (combine_B), and being a combine it
	 * runs backwards: the pace GPU sends to_pace to every GPU, its row
	 * of the matrix 2 to_pace and column 0 to_pace + rest = combine_B. */
	moe_case_init(&m, 8, 2, 512, 2);
	m.f.job.moe.routing.balance = ROUTE_RANDOM;
	fixture_ep_forward(&e, "test-uneven");
	e.probs_per_domain_expert_B = 4;
	m.f.job.moe.dispatcher = &e;
	moe_case_dims(&m);
	cr_assert_gt(m.r.max_mean, 1);
	cr_assert_not_null(m.d.moe.a2a_B);
	/* dispatch: every GPU sends dispatch_B, rank 0 receives to_pace x 2 */
	cr_assert(fixture_near(line(m.d.moe.a2a_B, 2, 1, 0), m.d.moe.dispatch_B,
			       1e-12));
	cr_assert(fixture_near(line(m.d.moe.a2a_B, 2, 0, 1),
		       m.d.moe.dispatch_B * m.r.max_mean, 1e-12));
	layer_fwd(&m.d, &m.kind, &m.o);
	c = fixture_op(&m.o, "moe_dispatch");
	cr_assert_eq(c->a2a_B, m.d.moe.a2a_B);
	c = fixture_op(&m.o, "moe_combine");
	cr_assert(fixture_near(line(c->a2a_B, 2, 0, 0),
			       m.d.moe.combine_B * m.r.max_mean, 1e-12));
	cr_assert(fixture_near(line(c->a2a_B, 2, 1, 1), m.d.moe.combine_B,
			       1e-12));
	moe_case_bwd(&m);
	/* the backward of the combine is a dispatch: rank 0 receives */
	c = fixture_op(&m.o, "moe_combine_bwd");
	cr_assert(fixture_near(line(c->a2a_B, 2, 0, 1),
			       m.d.moe.combine_B * m.r.max_mean, 1e-12));
	/* the backward of the dispatch, a combine with the gradients */
	c = fixture_op(&m.o, "moe_dispatch_bwd");
	cr_assert(fixture_near(line(c->a2a_B, 2, 0, 0),
		       m.d.moe.combine_bwd_B * m.r.max_mean, 1e-12));
	moe_case_release(&m);
}
