/*
 * test_rc_needed_only.c - a recomputation that re-runs only the forward
 * ops the backward reads (framework recompute_needed_only: torch.compile's
 * partitioner, or eager early stop over nn.Linear, whose mm packs its
 * saved inputs before its kernel), and torchtitan's op-level policy
 * counting a linear once however many async-TP pieces it is cut into
 * (layer.c layer_bwd_pass, sac_ops_filter).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "models/layer.h"

Test(rc_needed_only, a_full_recompute_stops_before_fc2)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	double full, T = 4096, h = 1024, fm = 4096;

	/* GPT fixture (T = 4096 tokens, h 1024, ungated f 4096, tp 1),
	 * recompute full. Needed only: fc2's output feeds only the
	 * residual add, whose output the backward does not read, so fc2
	 * (2 T f h = 2 * 4096 * 4096 * 1024 = 3.436e10 FLOP) and add2 go;
	 * fc1 (its output feeds the activation's backward) stays. */
	fixture_gpt(&f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f.job.training.recompute = RECOMPUTE_FULL;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc2"), 1);
	full = fixture_gemm_flops(&o, PASS_RECOMPUTE);
	f.fw.recompute_needed_only = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc2"), 0);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "add2"), 0);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc1"), 1);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "proj"), 1);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "fc2_dgrad"), 1);
	fixture_assert_close(full - fixture_gemm_flops(&o, PASS_RECOMPUTE), 2 * T * fm * h);
	/* With dropout the add's mask is saved: re-run to the end. */
	f.job.training.dropout = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc2"), 1);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "add2"), 1);
}

/* The fixture at tp 2 with SP under torchtitan's op-level policy. */
static void sac_sp(struct fixture *f, int64_t *ops)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 2, 1);
	f->job.parallelism.sequence_parallel = 1;
	f->fw.sp_seq_dim_copies = 1;
	f->fw.sp_backward_regather = 0;
	f->job.training.recompute = RECOMPUTE_SELECTIVE;
	f->job.training.recompute_modules.given = 1;
	f->job.training.recompute_modules.n = 1;
	f->job.training.recompute_modules.v = ops;
}

Test(rc_needed_only, sac_counts_a_linear_once_across_async_pieces)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	int64_t ops[] = { RCM_OPS };
	double T = 4096, h = 1024, fm = 4096, tp = 2;

	/* The policy saves every mm's output but each second one's: of
	 * wq wk wv | wo | fc1 | fc2 (one qkv op) it re-runs wk, wo and
	 * fc2, at tp 2: 2 T h (h / tp + h / tp + f / tp) = 2 * 4096 *
	 * 1024 * (512 + 512 + 2048) = 2.577e10 FLOP. Async TP (2 pieces
	 * of each linear) re-runs the same, both pieces of wo and none of
	 * fc1: counting the pieces as mms would re-run wq and wv in the
	 * second qkv piece, one piece each of wo, fc1 and fc2 (the same
	 * FLOPs by chance, other GEMMs). */
	sac_sp(&f, ops);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	fixture_assert_close(fixture_gemm_flops(&o, PASS_RECOMPUTE),
			     2 * T * h * (2 * h + fm) / tp);
	f.job.parallelism.tp_comm_overlap = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.chunks, 2);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "proj"), 2);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc2"), 2);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc1"), 0);
	fixture_assert_close(fixture_gemm_flops(&o, PASS_RECOMPUTE),
			     2 * T * h * (2 * h + fm) / tp);
	/* Needed only: wo's and fc2's outputs feed only the saved
	 * reduce-scatters: wk alone, 2 T h h / tp = 4.295e9 FLOP. */
	f.fw.recompute_needed_only = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "proj"), 0);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "fc2"), 0);
	fixture_assert_close(fixture_gemm_flops(&o, PASS_RECOMPUTE), 2 * T * h * h / tp);
}
