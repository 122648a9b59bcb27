/*
 * test_torchao_fp8.c - per-tensor fp8 as torchao's Float8Linear runs it
 * (framework fp8_weight_cast_per_call; layer_cast.c lop_weight_cast_call):
 * a weight cast on every forward call, the fp8 weight's transpose before
 * each dgrad, the saved gathered input's transpose before the wgrad, and
 * an amax all-reduce for every cast of a TP-sharded DTensor.
 */
#include <criterion/criterion.h>

#include "fixture.h"
#include "models/layer.h"

/* GPT fixture (h 1024, 16 heads of 64, ungated f 4096, s 2048, b 2: T =
 * 4096 tokens) at tp 2 with SP, fp8 current scaling, DTensor's saved
 * gathered input (no backward re-gather), as torchtitan runs it. */
static void torchao_tp2(struct fixture *f, int on)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 2, 1);
	f->job.parallelism.sequence_parallel = 1;
	f->fw.sp_backward_regather = 0;
	f->job.training.dtype = DTYPE_FP8;
	f->job.training.fp8_scaling = FP8_CURRENT;
	f->fw.fp8_weight_cast_per_call = on;
}

Test(torchao_fp8, every_forward_call_casts_its_weight)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *qkv_w;
	/* The QKV weight's local shard: 3 h h / tp = 3 * 1024 * 1024 / 2 =
	 * 1572864 elements; the cast reads it twice in bf16 (the amax pass
	 * and the cast: 2 * 2 B) = 6291456 B and writes it once in fp8
	 * (1572864 B), in 2 kernels. */
	double w = 3.0 * 1024 * 1024 / 2;

	torchao_tp2(&f, 1);
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	/* one cast a linear: qkv, proj, fc1, fc2 */
	cr_assert_eq(fixture_op_count(&o, PASS_FWD, "fp8_weight_cast"), 4);
	qkv_w = fixture_op(&o, "fp8_weight_cast");
	cr_assert_not_null(qkv_w);
	fixture_assert_close(qkv_w->k.read_B, 2 * w * 2);
	fixture_assert_close(qkv_w->k.write_B, w);
	fixture_assert_close(qkv_w->k.launches, 2);
	/* TP-sharded amaxes: the 4 weights and the 2 row-parallel inputs
	 * (proj's, fc2's: Shard(-1)); the 2 sequence-parallel input casts
	 * keep their own all-reduce (fp8_amax_tp_allreduce). */
	cr_assert_eq(fixture_op_count(&o, PASS_FWD,
				      "fp8_dtensor_amax_allreduce"), 6);
	cr_assert_eq(fixture_op_count(&o, PASS_FWD, "fp8_amax_tp_allreduce"),
		     2);
	/* off: none of them */
	torchao_tp2(&f, 0);
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_weight_cast"), 0);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_dtensor_amax_allreduce"), 0);
}

Test(torchao_fp8, the_backward_transposes_the_weight_and_the_saved_input)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *in_t;
	/* The saved gathered input of qkv (and of fc1): T x h fp8 =
	 * 4096 * 1024 = 4194304 B, read and written once by the transpose
	 * the wgrad's _scaled_mm needs (column-major b). */
	double x = 4096.0 * 1024;

	torchao_tp2(&f, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	/* a weight transpose per dgrad: qkv, proj, fc1, fc2 */
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "fp8_weight_transpose"), 4);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "fp8_input_transpose"), 2);
	in_t = fixture_op(&o, "fp8_input_transpose");
	cr_assert_not_null(in_t);
	fixture_assert_close(in_t->k.read_B, x);
	fixture_assert_close(in_t->k.write_B, x);
	/* the column-parallel output gradients' casts (qkv, fc1) */
	cr_assert_eq(fixture_op_count(&o, PASS_BWD,
				      "fp8_dtensor_amax_allreduce"), 2);
	/* off (Transformer Engine's path keeps its re-gather's transpose
	 * only; without one, none) */
	torchao_tp2(&f, 0);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_weight_transpose"), 0);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_input_transpose"), 0);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_dtensor_amax_allreduce"), 0);
}

Test(torchao_fp8, no_tp_no_all_reduce_and_bf16_no_cast)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;

	/* tp 1 (FSDP alone): the weight casts stay, no all-reduce */
	fixture_gpt(&f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_CURRENT;
	f.fw.fp8_weight_cast_per_call = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_FWD, "fp8_weight_cast"), 4);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_dtensor_amax_allreduce"), 0);
	/* bf16: nothing */
	f.job.training.dtype = DTYPE_BF16;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "fp8_weight_cast"), 0);
}
