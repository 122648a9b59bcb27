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

/*
 * Hybrid-EP's metadata kernels (moe_permute.c moe_dispatch_meta): after
 * the routing map's all-gather (map_gather) and before the host's sync,
 * one op the dispatch's host wait points at. fixture_moe(8, 2, 512, 2):
 * T = 4096 tokens a rank, ep 2, E = 8, L = 4 local experts; n = T ep =
 * 8192 rows of the gathered map.
 *   standalone permute: read n (E + 2 L) = 8192 x 16 = 131072 B, write
 *     n (4 + 5 L) = 8192 x 24 = 196608 B, 3 kernels (preprocessing,
 *     permute_preprocessing, pad_tokens_per_expert);
 *   permute fused into the dispatch: read n E = 65536 B, write n (4 + L)
 *     = 65536 B, 2 kernels.
 * With a measured dispatch call its host cost is that call's (free);
 * the backward reuses the handle: no such op; E counts (no map gather):
 * none.
 */
Test(moe, hybridep_metadata_kernels_before_the_sync)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;
	int at, disp;

	moe_case_init(&m, 8, 2, 512, 2);
	fixture_ep_forward(&e, "test-meta");
	e.host_sync = EP_SYNC_COUNTS;
	e.map_gather = 1;
	e.dispatch_call_host_s = 182e-6;
	m.f.job.moe.dispatcher = &e;
	moe_case_fwd(&m);
	cr_assert_float_eq(m.d.moe.local, 4, 1e-12);
	at = fixture_op_index(&m.o, "moe_dispatch_meta");
	cr_assert(at >= 1);
	cr_assert_str_eq(m.o.op[at - 1].name, "moe_counts");
	c = &m.o.op[at];
	cr_assert_float_eq(c->k.read_B, 131072, 1e-6);
	cr_assert_float_eq(c->k.write_B, 196608, 1e-6);
	cr_assert_float_eq(c->k.launches, 3, 1e-12);
	cr_assert_eq(c->host, HOST_FREE);
	disp = fixture_op_index(&m.o, "moe_dispatch");
	cr_assert(disp > at);
	cr_assert_eq(m.o.op[disp].host_wait, at);

	m.f.job.moe.permute_into_dispatcher = 1;
	e.permute_in_kernel = 1;
	moe_case_fwd(&m);
	cr_assert(m.d.moe.permute_in_dispatch);
	c = fixture_op(&m.o, "moe_dispatch_meta");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 65536, 1e-6);
	cr_assert_float_eq(c->k.write_B, 65536, 1e-6);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);

	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_dispatch_meta"));
	e.map_gather = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_dispatch_meta"));
	moe_case_release(&m);
}
