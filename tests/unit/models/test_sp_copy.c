/*
 * test_sp_copy.c - sequence parallelism as PyTorch DTensor runs it
 * (framework sp_seq_dim_copies, layer_ops.c sp_seq_copy): a copy of the
 * gathered tensor after each SP all-gather and before each SP
 * reduce-scatter (funcol's torch.cat along the sequence dim), the
 * async-TP reduction kernel instead of the forward reduce-scatter's copy,
 * and framework sp_backward_regather (the column backward's all-gather).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "models/layer.h"

/* GPT fixture (h 1024, ungated f 4096, s 2048, b 2: T = 4096 tokens),
 * tp 2 with SP, 16-bit. */
static void gpt_sp(struct fixture *f)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 2, 1);
	f->job.parallelism.sequence_parallel = 1;
}

Test(sp_copy, a_copy_beside_every_sp_collective)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	int i, ag;
	/* every SP collective moves the gathered T x h tensor: its copy
	 * reads and writes T h B = 4096 x 1024 x 2 = 8388608 B */
	double n_B = 4096.0 * 1024 * 2;

	gpt_sp(&f);
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_seq_copy"), 0);	/* off */
	f.fw.sp_seq_dim_copies = 1;
	layer_dims_from_job(&f.job, &d);
	/* forward: after the QKV and FC1 all-gathers, before the attention
	 * and MLP reduce-scatters: 4 */
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_seq_copy"), 4);
	op = fixture_op(&o, "sp_seq_copy");
	fixture_assert_close(op->k.read_B, n_B);
	fixture_assert_close(op->k.write_B, n_B);
	ag = fixture_op_index(&o, "qkv_allgather");
	cr_assert(ag >= 0);
	cr_assert_str_eq(o.op[ag + 1].name, "sp_seq_copy");
	cr_assert_str_eq(o.op[ag + 2].name, "qkv");
	i = fixture_op_index(&o, "attn_tp_reduce");
	cr_assert_str_eq(o.op[i - 1].name, "sp_seq_copy");
	/* backward: after the proj and FC2 output-gradient all-gathers,
	 * before the FC1 and QKV input-gradient reduce-scatters: 4 */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_seq_copy"), 4);
	i = fixture_op_index(&o, "qkv_grad_tp_reduce");
	cr_assert_str_eq(o.op[i - 1].name, "sp_seq_copy");
	fixture_assert_close(o.op[i - 1].k.read_B, n_B);
	/* no SP (tp 2 all-reduces): nothing */
	f.job.parallelism.sequence_parallel = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_seq_copy"), 0);
}

Test(sp_copy, async_tp_reduces_instead_and_sac_skips_the_scatter_side)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	int64_t ops[] = { RCM_OPS };

	gpt_sp(&f);
	f.fw.sp_seq_dim_copies = 1;
	f.job.parallelism.tp_comm_overlap = 1;	/* 2 pieces (tp) */
	layer_dims_from_job(&f.job, &d);
	/* forward: the fused all-gather-matmuls copy nothing; each fused
	 * matmul-reduce-scatter sums the 2 partial shards in one kernel,
	 * reading T h B = 8388608 B and writing T h B / tp = 4194304 B */
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_seq_copy"), 0);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_rs_reduce"), 2);
	op = fixture_op(&o, "sp_rs_reduce");
	fixture_assert_close(op->k.read_B, 8388608.0);
	fixture_assert_close(op->k.write_B, 4194304.0);
	/* backward: the input gradients' reduce-scatters (summed dgrads,
	 * not one mm) keep their copies: 2 */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "sp_seq_copy"), 2);
	/* torchtitan's op-level AC: the recomputation re-gathers (async:
	 * no copy) but never re-runs the reduce-scatters or their
	 * reduction */
	f.job.training.recompute = RECOMPUTE_SELECTIVE;
	f.job.training.recompute_modules.given = 1;
	f.job.training.recompute_modules.n = 1;
	f.job.training.recompute_modules.v = ops;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "sp_rs_reduce"), 0);
	/* vanilla TP: the recomputation copies after its 2 all-gathers and
	 * drops the 2 copies before the reduce-scatters it skips */
	f.job.parallelism.tp_comm_overlap = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_RECOMPUTE, "sp_seq_copy"), 2);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "sp_seq_copy"), 4);
}

Test(sp_copy, backward_regather_is_optional)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;

	/* Megatron-style (the default): the QKV and FC1 backwards
	 * all-gather their input again for the wgrad; DTensor keeps it */
	gpt_sp(&f);
	f.fw.sp_backward_regather = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_not_null(fixture_op(&o, "qkv_input_allgather"));
	cr_assert_not_null(fixture_op(&o, "fc1_input_allgather"));
	f.fw.sp_backward_regather = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_null(fixture_op(&o, "qkv_input_allgather"));
	cr_assert_null(fixture_op(&o, "fc1_input_allgather"));
	cr_assert_not_null(fixture_op(&o, "qkv_wgrad"));
}

/* Sum of the model FLOPs of the GEMMs named in names. */
static double gemm_flops(const struct layer_ops *o, const char *const *names,
			 int n)
{
	double s = 0;
	int i, j;

	for (i = 0; i < o->n; i++)
		for (j = 0; j < n; j++)
			if (!strcmp(o->op[i].name, names[j]))
				s += layer_kern_model_flops(&o->op[i].k);
	return s;
}

Test(sp_copy, separate_linears_split_the_gemms_and_sum_the_dgrads)
{
	static const char *const qkv[] = { "wq", "wk", "wv" };
	static const char *const fc1[] = { "w1", "w3" };
	static const char *const qkv_dg[] = { "wq_dgrad", "wk_dgrad",
					      "wv_dgrad" };
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	int i;
	/* Llama-like: h 1024, 16 heads of 64, 4 KV heads, gated f 4096;
	 * tp 2 with SP, T = 4096 tokens. Per TP rank: q 512, k = v 128,
	 * w1 = w3 2048 wide. */
	double T = 4096, h = 1024, B = 2;

	gpt_sp(&f);
	f.model.num_key_value_heads = 4;
	f.model.gated_mlp = 1;
	f.fw.sp_seq_dim_copies = 1;
	f.fw.separate_linears = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "qkv"));
	cr_assert_null(fixture_op(&o, "fc1"));
	op = fixture_op(&o, "wk");
	fixture_assert_close(op->k.m, T);
	fixture_assert_close(op->k.n, 128);
	fixture_assert_close(op->k.k, h);
	fixture_assert_close(fixture_op(&o, "wq")->k.n, 512);
	fixture_assert_close(fixture_op(&o, "w3")->k.n, 2048);
	/* the same FLOPs as the fused GEMMs: 2 T h (512 + 2 x 128) =
	 * 6.442e9, and 2 T h (2 x 2048) = 3.436e10 */
	fixture_assert_close(gemm_flops(&o, qkv, 3), 2 * T * h * 768);
	fixture_assert_close(gemm_flops(&o, fc1, 2), 2 * T * h * 4096);
	/* one all-gather and one copy for the three */
	i = fixture_op_index(&o, "qkv_allgather");
	cr_assert_str_eq(o.op[i + 1].name, "sp_seq_copy");
	cr_assert_str_eq(o.op[i + 2].name, "wq");
	cr_assert_str_eq(o.op[i + 3].name, "wk");
	cr_assert_str_eq(o.op[i + 4].name, "wv");
	/* backward: three dgrads (T x h each), then one kernel summing
	 * them in the reduce-scatter's order: reads 3 T h B = 25165824 B,
	 * writes T h B = 8388608 B, and no separate copy */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	fixture_assert_close(gemm_flops(&o, qkv_dg, 3), 2 * T * h * 768);
	i = fixture_op_index(&o, "qkv_grad_tp_reduce");
	cr_assert_str_eq(o.op[i - 1].name, "dgrad_sum");
	fixture_assert_close(o.op[i - 1].k.read_B, 3 * T * h * B);
	fixture_assert_close(o.op[i - 1].k.write_B, T * h * B);
	cr_assert_str_eq(o.op[i - 2].name, "wv_dgrad");
	i = fixture_op_index(&o, "fc1_grad_tp_reduce");
	fixture_assert_close(o.op[i - 1].k.read_B, 2 * T * h * B);
	/* the copies left: after the 2 output-gradient all-gathers */
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "sp_seq_copy"), 2);
	cr_assert_not_null(fixture_op(&o, "wv_wgrad"));
	cr_assert_not_null(fixture_op(&o, "w3_wgrad"));
}

Test(sp_copy, async_tp_gathers_wait_for_the_local_shard_copy)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	int c, ag;
	/* the gathered T x h input is 4096 x 1024 x 2 = 8388608 B; a rank's
	 * shard, copied into its symmetric buffer, 8388608 / tp 2 =
	 * 4194304 B read and written */
	double shard_B = 4096.0 * 1024 * 2 / 2;

	gpt_sp(&f);
	f.fw.sp_seq_dim_copies = 1;
	f.job.parallelism.tp_comm_overlap = 1;	/* 2 pieces (tp) */
	layer_dims_from_job(&f.job, &d);
	/* forward: one before each fused all-gather-matmul (QKV, FC1) */
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "symm_mem_local_copy"), 2);
	c = fixture_op_index(&o, "symm_mem_local_copy");
	op = &o.op[c];
	fixture_assert_close(op->k.read_B, shard_B);
	fixture_assert_close(op->k.write_B, shard_B);
	/* then the local piece's GEMM, then the remote piece's gather,
	 * which waits for the copy (and the barrier after it) */
	cr_assert_str_eq(o.op[c + 1].name, "qkv");
	ag = fixture_op_index(&o, "qkv_allgather");
	cr_assert_eq(ag, c + 2);
	cr_assert_eq(o.op[ag].dep[0], c);
	/* backward: before the proj and FC2 output-gradient gathers (T x h
	 * too: the same shard) */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "symm_mem_local_copy"), 2);
	fixture_assert_close(fixture_op(&o, "symm_mem_local_copy")->k.read_B,
			     shard_B);
	/* vanilla TP, and Transformer Engine's userbuffers (no DTensor
	 * copies): none */
	f.job.parallelism.tp_comm_overlap = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "symm_mem_local_copy"), 0);
	f.job.parallelism.tp_comm_overlap = 1;
	f.fw.sp_seq_dim_copies = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "symm_mem_local_copy"), 0);
}
