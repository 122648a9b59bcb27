/*
 * test_rc_early_stop.c - full recomputation under torch's non-reentrant
 * checkpoint with early stop (framework recompute_early_stop): the
 * recomputed forward ends with the layer's last op that saves a tensor
 * for the backward (layer.c layer_bwd_pass), so a DeepEP-like combine
 * and the residual add after it are not run again; the backward itself
 * is unchanged.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "models/layer.h"
#include "moe_case.h"

/* Bytes the ops of pass `pass` read and write. */
static double pass_bytes(const struct layer_ops *o, enum layer_pass pass)
{
	double b = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].pass == pass)
			b += o->op[i].k.read_B + o->op[i].k.write_B;
	return b;
}

Test(rc_early_stop, a_dense_layer_skips_its_residual_add)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	double full, early, T = 4096, h = 1024, B = 2;

	/* GPT fixture (T = 4096 tokens, h 1024, 16-bit), recompute full.
	 * Without early stop the recomputation re-runs the whole forward,
	 * add2 included; with it, the MLP's fc2 (which saves its input) is
	 * the last op: add2 (read 2 T h B, write T h B = 3 * 4096 * 1024 *
	 * 2 = 25165824 B, no dropout mask) is not run again. */
	fixture_gpt(&f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f.job.training.recompute = RECOMPUTE_FULL;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "add2"), 1);
	full = pass_bytes(&o, PASS_RECOMPUTE);
	f.fw.recompute_early_stop = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "add2"), 0);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc2"), 1);
	early = pass_bytes(&o, PASS_RECOMPUTE);
	cr_assert_float_eq(full - early, 3 * T * h * B, 1e-3);
	/* With dropout the add saves its mask: recomputed to the end. */
	f.job.training.dropout = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "add2"), 1);
}

Test(rc_early_stop, a_deepep_layer_skips_its_combine)
{
	struct moe_case m;
	struct ep_comm_spec e;
	int full_n;

	/* fixture_moe: 8 experts, top-2, ep 2, a DeepEP-like dispatcher
	 * (GPU-initiated: its combine sums the experts' rows itself, no
	 * unpermute after it). Recompute full, no early stop: the
	 * recomputation runs the dispatch, the experts, the unsort, the
	 * combine and add2. With early stop the unsort (TE's moe_unpermute
	 * saves its row map) is the last: the combine (FusedCombine keeps
	 * only its handle) and add2 go, two recomputed ops fewer, and the
	 * backward's own ops stay as they were. */
	moe_case_init(&m, 8, 2, 512, 2);
	fixture_ep_forward(&e, "test-deepep");
	e.gpu_initiated = 1;
	m.f.job.moe.dispatcher = &e;
	m.f.job.training.recompute = RECOMPUTE_FULL;
	moe_case_dims(&m);
	cr_assert(m.d.moe.combine_reduces);
	layer_bwd(&m.d, &m.kind, LREC_FULL, &m.o);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "moe_dispatch"), 1);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "moe_combine"), 1);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "add2"), 1);
	full_n = m.o.n;
	m.f.fw.recompute_early_stop = 1;
	moe_case_dims(&m);
	layer_bwd(&m.d, &m.kind, LREC_FULL, &m.o);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "moe_dispatch"), 1);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "expert_unsort"), 1);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "moe_combine"), 0);
	cr_assert_eq(fixture_op_count(&m.o, PASS_RECOMPUTE, "add2"), 0);
	cr_assert_eq(m.o.n, full_n - 2);
	cr_assert_eq(fixture_op_count(&m.o, PASS_BWD, "moe_combine_bwd"), 1);
	moe_case_release(&m);
}
