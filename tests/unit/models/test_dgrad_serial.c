/*
 * test_dgrad_serial.c - framework tp_dgrad_serial: a column-parallel
 * linear's input-gradient all-reduce after its wgrad, as autograd ran
 * Megatron-LM's ColumnParallelLinear before the async all-reduce of
 * cf7efd4f (2021-08-30); layer_ops.c lop_column_bwd.
 */
#include <criterion/criterion.h>

#include "fixture.h"
#include "mockcomm.h"
#include "models/layer.h"
#include "models/layer_impl.h"

/* One layer of h 4096 (32 heads, f 4h), s 2048, one microbatch of one,
 * vocabulary 51200, tp 8 on one node (dp 1: no gradient reduction). */
static void job(struct fixture *f, int serial)
{
	fixture_gpt(f, 1, 4096, 32, 51200, 2048, 1, 1, 1, 8, 1);
	f->fw.tp_dgrad_serial = serial;
}

Test(layer, serial_dgrad_reduces_after_the_wgrad_and_its_accumulation)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	int red, wgrad, norm;

	job(&f, 0);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	red = fixture_op_index(&o, "fc1_grad_tp_reduce");
	wgrad = fixture_op_index(&o, "fc1_wgrad");
	cr_assert(red >= 0 && wgrad >= 0);
	cr_assert_lt(red, wgrad, "async: the all-reduce is issued first");
	cr_assert_eq(o.op[wgrad].dep[0], o.op[red].dep[0],
		     "both follow the dgrad");

	job(&f, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	red = fixture_op_index(&o, "fc1_grad_tp_reduce");
	wgrad = fixture_op_index(&o, "fc1_wgrad");
	norm = fixture_op_index(&o, "norm2_bwd");
	cr_assert_gt(red, wgrad);
	/* the fixture accumulates into main_grad in the wgrad (fusion):
	 * the reduction comes right after the wgrad, the norm after it */
	cr_assert_eq(o.op[red].dep[0], wgrad);
	cr_assert(o.op[norm].dep[0] == red || o.op[norm].dep[1] == red);
}

Test(train, serial_dgrad_exposes_each_column_all_reduce)
{
	struct fixture f;
	double alpha = 1e-6, beta = 4e12, ar, async_s, serial_s, x;

	/* Each column-parallel backward (qkv, fc1, and the LM head's
	 * logits) all-reduces its input gradient, T h = 2048 x 4096 16-bit
	 * values = 16777216 B, over tp 8: on the mock
	 *     alpha + 2 (8 - 1) / 8 x 16777216 / 4e12 = 1 + 7.34 = 8.34 us.
	 * Async, each runs under its wgrad (qkv 4096 x 1536 x 2048 x 2 =
	 * 25.8 GFLOP, fc1 34.4 GFLOP, logits 4096 x 6400 x 2048 x 2 = 107
	 * GFLOP: tens of us each on the fixture's GPU) and is hidden. Serial
	 * (Megatron-LM before cf7efd4f), each waits for its wgrad and the
	 * next op for it: the step grows by 3 x 8.34 = 25.0 us. */
	ar = alpha + 2.0 * 7 / 8 * 16777216 / beta;
	cr_assert_float_eq(ar, 8.34e-6, 0.01e-6);
	job(&f, 0);
	async_s = mockcomm_train_step(&f.job, 0, alpha, beta, &x);
	job(&f, 1);
	serial_s = mockcomm_train_step(&f.job, 0, alpha, beta, &x);
	cr_assert_float_eq(serial_s - async_s, 3 * ar, 1e-9,
			   "serial %g s, async %g s", serial_s, async_s);
}
