/*
 * test_infer.c - the inference step model: KV bytes, the HBM floor of a
 * decode step, and the two builds of a step agreeing. An engine's own step
 * work (broadcasts, sampler, host time) is in test_infer_engine.c.
 *
 * Jobs are the YAML files of tests/data/serve over the shipped presets (the tests
 * run from the repository root), varied by --set style overrides.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "models/footprint.h"
#include "run/infer_run.h"

#include "fixture.h"

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

Test(infer, kv_bytes_per_token_llama3_70b)
{
	struct arena a;
	const char *tp1[] = {"parallelism.tp=1", "system.gpus_per_node=1"};
	struct job_spec *j;
	struct infer_dims d;

	arena_init(&a);
	j = fixture_load_job(&a, L70, tp1, 2);
	infer_dims_from_job(j, j->system->gpu, &d);
	/* 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B */
	cr_assert_float_eq(infer_kv_token_layer_B(&d) * d.layers, 327680.0,
			   1e-9);
	j = fixture_load_job(&a, L70, NULL, 0);
	infer_dims_from_job(j, j->system->gpu, &d);
	/* tp 8: one KV head per GPU: 2 x 80 x 1 x 128 x 2 B = 40,960 B */
	cr_assert_float_eq(infer_kv_token_layer_B(&d) * d.layers, 40960.0,
			   1e-9);
	/* fp8 cache: half */
	{
		const char *fp8[] = {"serving.kv_dtype=fp8"};

		j = fixture_load_job(&a, L70, fp8, 1);
		infer_dims_from_job(j, j->system->gpu, &d);
		cr_assert_float_eq(infer_kv_token_layer_B(&d) * d.layers,
				   20480.0, 1e-9);
	}
	arena_release(&a);
}

/*
 * Weights one GPU of tp 8 reads per step (bf16):
 *   layer: h (a + 2g) d + a d h + 3 h f = 8192 x 80 x 128 + 64 x 128 x 8192
 *          + 3 x 8192 x 28672 = 855,638,016 parameters, / 8 x 2 B x 80
 *          = 17,112,760,320 B
 *   LM head: V padded to 64 per rank, ceil(128256 / 8 / 64) x 64 = 16064
 *          rows x 8192 x 2 B = 263,192,576 B
 * KV: batch x ctx x 40,960 B (one KV head per GPU, 80 layers).
 * H100 HBM peak 3.35 TB/s.
 */
Test(infer, decode_never_beats_the_hbm_floor)
{
	static const int64_t batch[] = {1, 16, 64, 256};
	/* 8191 cached + the decoded token: the model's 8192 context (a
	 * sequence past it is refused) */
	static const int64_t ctx[] = {128, 2048, 8191};
	double w = 17112760320.0 + 263192576.0;
	struct arena a;
	size_t bi, ci;

	arena_init(&a);
	for (bi = 0; bi < 4; bi++)
		for (ci = 0; ci < 3; ci++) {
			char b[64], c[64];
			const char *sets[] = {"phase=decode", b, c};
			struct job_spec *j;
			struct infer_result r;
			struct diag d;
			double kv = (double)batch[bi] * (double)ctx[ci] * 40960;
			double floor_s = (w + kv) / 3.35e12;

			snprintf(b, sizeof(b), "serving.batch=%lld",
				 (long long)batch[bi]);
			snprintf(c, sizeof(c), "serving.context_len=%lld",
				 (long long)ctx[ci]);
			j = fixture_load_job(&a, L70, sets, 3);
			diag_init(&d, stderr);
			cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
			cr_assert_float_eq(r.hbm_floor_s, floor_s, 1e-9 * floor_s);
			cr_assert_geq(r.gpu_s, floor_s, "batch %lld ctx %lld: "
				      "%g s beats the floor %g s",
				      (long long)batch[bi], (long long)ctx[ci],
				      r.gpu_s, floor_s);
			infer_result_release(&r);
		}
	arena_release(&a);
}

/* The stepper (one unit at a time, replicated) gives the full program's
 * time: every layer ends in a TP all-reduce all members reach together. */
static void same_step(const char *const *sets, size_t n)
{
	struct arena a;
	struct job_spec *j;
	struct infer_result r;
	struct diag d;
	double lat;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L70, sets, n);
	cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
	lat = fixture_step_latency(j);
	cr_assert_float_eq(lat, r.gpu_s, 1e-6 * r.gpu_s,
			   "replicated %.9g s, full %.9g s", lat, r.gpu_s);
	infer_result_release(&r);
	arena_release(&a);
}

Test(infer, replicated_layers_equal_the_full_program)
{
	const char *dec[] = {"phase=decode", "serving.batch=64",
			     "serving.context_len=1024"};
	const char *pre[] = {"phase=prefill", "serving.batch=2",
			     "serving.input_len=2048"};
	const char *pp[] = {"phase=decode", "serving.batch=1",
			    "serving.context_len=512", "parallelism.tp=4",
			    "parallelism.pp=2"};

	same_step(dec, 3);
	same_step(pre, 3);
	same_step(pp, 5);
}

/* A step with host overhead not overlapped: latency = program time, and
 * the program holds the host's share before the GPU's. */
Test(infer, host_time_adds_without_overlap)
{
	const char *sets[] = {"phase=decode", "serving.batch=8",
			      "serving.context_len=256"};
	struct arena a;
	struct job_spec *j;
	struct infer_result r;
	struct diag d;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L70, sets, 3);
	cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
	/* vllm.yaml: 0.5 ms + 2 us x 8 sequences = 516 us, and at TP 8 the
	 * workers' call and reply, 15 us + 0.5 us x 8 = 19 us: 535 us */
	cr_assert_float_eq(r.host_s, 535e-6, 1e-12);
	cr_assert_float_eq(r.step_s, r.gpu_s + r.host_s, 1e-12);
	infer_result_release(&r);
	arena_release(&a);
}

/* Quantization kernels of an fp8 layer: one before each of the four
 * GEMMs with no fusion (vLLM V0, SGLang), the attention output's only
 * with norm_act (vLLM V1), none with all (TensorRT-LLM) and none in
 * bf16. */
static int quant_ops(const char *engine, const char *dtype)
{
	char e[64], t[64];
	/* the fixture's GPU is an H100: AMD's fork runs there only with
	 * its vendor lifted (the mechanisms compared on one GPU) */
	const char *sets[] = {"phase=decode", "serving.batch=4",
			      "serving.context_len=256", e, t,
			      "serving.engine.vendor=any"};
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_ops o;
	int i, n = 0;

	snprintf(e, sizeof(e), "serving.engine=%s", engine);
	snprintf(t, sizeof(t), "serving.dtype=%s", dtype);
	arena_init(&a);
	j = fixture_load_job(&a, L70, sets, 6);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	infer_layer_ops(&d, &b, NULL, NULL, &o);
	for (i = 0; i < o.n; i++)
		n += strncmp(o.op[i].name, "quant", 5) == 0;
	arena_release(&a);
	return n;
}

Test(infer, quantization_kernels_follow_the_engine)
{
	cr_assert_eq(quant_ops("vllm-v0", "fp8"), 4);
	cr_assert_eq(quant_ops("sglang", "fp8"), 4);
	cr_assert_eq(quant_ops("vllm", "fp8"), 1);
	cr_assert_eq(quant_ops("trtllm", "fp8"), 0);
	cr_assert_eq(quant_ops("vllm-v0", "bf16"), 0);
	/* vllm-rocm (AMD's fork: the RMSNorm/SiLU-mul and attention+quant
	 * fusion passes on by default, quant_fusion all): none. */
	cr_assert_eq(quant_ops("vllm-rocm", "fp8"), 0);
}

/* The op of a layer named `name`, or NULL. */
/*
 * RoPE and the KV-cache write: one kernel by default (vLLM V1 here), two
 * under vLLM V0 (rope_cache_fused false: ops.rotary_embedding in place,
 * then ops.reshape_and_cache) and under SGLang (rotary_emb in place, then
 * set_kv_buffer's index writes; sglang.yaml), with the same bytes. Llama 3 70B at tp 8, 4 decode tokens,
 * bf16 activations (2 B), fp8 cache (1 B): q = 64/8 x 128 = 1024 and
 * kv = 8/8 x 128 = 128 elements a token.
 *   rope:        reads and writes Q and K, 4 x (1024 + 128) x 2 B = 9,216 B
 *   cache_write: reads K and V 4 x 256 x 2 B = 2,048 B, writes them
 *                4 x 256 x 1 B = 1,024 B
 *   rope_cache:  reads 4 x (1024 + 256) x 2 = 10,240 B, writes Q and K
 *                back and K, V into the cache: 9,216 + 1,024 = 10,240 B
 * V0 has one kernel more a layer, and reads K twice.
 */
Test(infer, rope_and_cache_write_follow_the_engine)
{
	const char *v0[] = {"phase=decode", "serving.batch=4",
			    "serving.context_len=256", "serving.engine=vllm-v0",
			    "serving.dtype=fp8", "serving.kv_dtype=fp8"};
	const char *v1[] = {"phase=decode", "serving.batch=4",
			    "serving.context_len=256", "serving.engine=vllm",
			    "serving.dtype=fp8", "serving.kv_dtype=fp8"};
	const char *sg[] = {"phase=decode", "serving.batch=4",
			    "serving.context_len=256", "serving.engine=sglang",
			    "serving.dtype=fp8", "serving.kv_dtype=fp8"};
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_ops o;
	const struct infer_op *op;
	int n_v0;

	arena_init(&a);
	j = fixture_load_job(&a, L70, v0, 6);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	infer_layer_ops(&d, &b, NULL, NULL, &o);
	n_v0 = o.n;
	cr_assert_null(fixture_infer_op(&o, "rope_cache"));
	op = fixture_infer_op(&o, "rope");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 9216.0, 1e-9);
	cr_assert_float_eq(op->write_B, 9216.0, 1e-9);
	op = fixture_infer_op(&o, "cache_write");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 2048.0, 1e-9);
	cr_assert_float_eq(op->write_B, 1024.0, 1e-9);
	j = fixture_load_job(&a, L70, sg, 6);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_layer_ops(&d, &b, NULL, NULL, &o);
	cr_assert_null(fixture_infer_op(&o, "rope_cache"));
	op = fixture_infer_op(&o, "rope");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 9216.0, 1e-9);
	op = fixture_infer_op(&o, "cache_write");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->write_B, 1024.0, 1e-9);
	j = fixture_load_job(&a, L70, v1, 6);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_layer_ops(&d, &b, NULL, NULL, &o);
	cr_assert_null(fixture_infer_op(&o, "rope"));
	cr_assert_null(fixture_infer_op(&o, "cache_write"));
	op = fixture_infer_op(&o, "rope_cache");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 10240.0, 1e-9);
	cr_assert_float_eq(op->write_B, 10240.0, 1e-9);
	/* vLLM V1 also quantizes one GEMM input apart, V0 all four: the
	 * op counts differ by 1 (rope) + 3 (quant) */
	cr_assert_eq(n_v0 - o.n, 4);
	arena_release(&a);
}

#define Q30 "tests/data/serve/q30-h100.yaml"

/*
 * Weights of Qwen3-30B-A3B in bf16 on one GPU (h 2048, 48 layers, 32
 * query and 4 KV heads of 128, 128 experts of 768, vocabulary 151,936 =
 * 2374 x 64, untied):
 *   attention  2048 x (32 + 8) x 128 + 32 x 128 x 2048 = 18,874,368
 *   router     2048 x 128                               =    262,144
 *   experts    128 x 3 x 2048 x 768                     = 603,979,776
 *   a layer    623,116,288 parameters, x 48 = 29,909,581,824
 *   embedding and LM head 2 x 151,936 x 2048 = 622,329,856
 *   30,531,911,680 parameters (the model's 30.5 B) x 2 B, plus the norms
 *   2 x 2048 x 2 B a layer and the final 2048 x 2 B:
 *   61,063,823,360 + 393,216 + 4,096 = 61,064,220,672 B.
 */
Test(infer, moe_weights_qwen3_30b)
{
	struct arena a;
	struct job_spec *j;
	struct infer_result r;
	struct diag d;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, Q30, NULL, 0);
	cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
	cr_assert_float_eq(r.mem.weights_B, 61064220672.0, 1.0);
	infer_result_release(&r);
	arena_release(&a);
}

/*
 * A decode step of one token touches top-k experts. Qwen3-30B-A3B (E 128,
 * k 8) at TP 1: R = 1 x 8 = 8 rows. Under moe.routing.balance uniform
 * (the default, exactly balanced) the 8 rows sit on 8 distinct experts
 * (min(E, T k) = 8, as aiconfigurator's balanced_logits: token 0's j-th
 * expert is 16 j); at random each of the 128 gets 8 / 128 rows in
 * expectation, P(used) = 1 - exp(-1/16), 128 (1 - exp(-1/16)) = 7.755
 * experts. The grouped GEMMs read that many experts' weights (3 x 2048 x
 * 768 x 2 B = 9,437,184 B each) instead of all 128. With the attention's
 * qkv (2048 x 5120) and o (4096 x 2048) and the router (2048 x 128) in
 * bf16 the layer reads
 *   20,971,520 + 16,777,216 + 524,288 + used x 9,437,184 B.
 */
static void moe_decode_reads(const char *balance, double used)
{
	struct arena a, ra;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_route r;
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};
	struct infer_ops o;
	struct infer_unit u;
	struct diag dg;
	const char *set[] = {balance};
	double expert = 9437184.0;

	arena_init(&a);
	arena_init(&ra);
	diag_init(&dg, stderr);
	j = fixture_load_job(&a, Q30, set, 1);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	cr_assert_eq(infer_moe_route(j, &d, 1, &ra, &r, &dg), 0);
	cr_assert_float_eq(r.rows, 8.0, 1e-12);
	cr_assert_float_eq(r.active, used, 1e-9, "%s: %g experts, want %g",
			   balance, r.active, used);
	infer_layer_ops(&d, &b, &k, &r, &o);
	infer_cost(&o, &d, &b, &k, j->system->gpu, IGRAPH_FULL, &u);
	cr_assert_float_eq(u.weights_B, 20971520.0 + 16777216.0 + 524288.0 +
			   used * expert, 1.0);
	cr_assert_lt(u.weights_B, 0.1 * 128 * expert);
	arena_release(&ra);
	arena_release(&a);
}

Test(infer, moe_decode_reads_the_experts_it_uses)
{
	moe_decode_reads("moe.routing.balance=uniform", 8.0);
	moe_decode_reads("moe.routing.balance=random",
			 128 * (1 - exp(-1.0 / 16)));
}

/* Whether the layer's ops include a collective named `name`. */
static int has_op(const struct infer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return 1;
	return 0;
}

/*
 * TP attention keeps every token on every GPU: the experts' partial
 * outputs are all-reduced over TP, nothing is dispatched. Attention DP
 * (tp 1, dp 8, ep 8) dispatches each GPU's tokens to the experts' GPUs
 * and combines them back: 64 tokens x top-8 x 2048 x 2 B = 2,097,152 B
 * sent per GPU (the alltoall path's rows carry nothing more: Megatron's
 * dispatcher sends its probabilities in a call of their own,
 * configs/ep/alltoall.yaml probs_alltoall, which training costs).
 */
Test(infer, moe_attention_dp_dispatches)
{
	const char *tp[] = {"system.gpus_per_node=8", "parallelism.tp=8",
			    "parallelism.ep=8"};
	const char *adp[] = {"system.gpus_per_node=8", "parallelism.tp=1",
			     "parallelism.dp=8", "parallelism.ep=8",
			     "parallelism.attention_dp=true"};
	struct arena a, ra;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_route r;
	struct infer_kind k = {1, 0, 0, 0, 0, 0, 0, 0};
	struct infer_ops o;
	struct diag dg;

	arena_init(&a);
	arena_init(&ra);
	diag_init(&dg, stderr);
	j = fixture_load_job(&a, Q30, tp, 3);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	cr_assert_eq(infer_moe_route(j, &d, 64, &ra, &r, &dg), 0);
	infer_layer_ops(&d, &b, &k, &r, &o);
	cr_assert(has_op(&o, "moe_tp_allreduce"));
	cr_assert(!has_op(&o, "moe_dispatch"));
	j = fixture_load_job(&a, Q30, adp, 5);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert_eq(infer_moe_route(j, &d, 64, &ra, &r, &dg), 0);
	cr_assert_float_eq(r.dispatch_B, 2097152.0, 1e-6);
	infer_layer_ops(&d, &b, &k, &r, &o);
	cr_assert(has_op(&o, "moe_dispatch"));
	cr_assert(has_op(&o, "moe_combine"));
	cr_assert(!has_op(&o, "moe_tp_allreduce"));
	arena_release(&ra);
	arena_release(&a);
}

/* The busiest attention-DP rank of a step: whole prompts placed longest
 * first on the rank with the fewest prompt tokens, decoding sequences
 * evenly, the experts' routing at the mean tokens per rank. */
Test(infer, attention_dp_busiest_rank)
{
	struct infer_ctx x;
	struct infer_batch b = {
		.g = {{3, 1000, 0, 1, 1, 0}, {1, 400, 0, 1, 1, 0},
		      {16, 1, 500, 0, 1, 0}},
		.n = 3,
	}, r;
	double route;
	int k;

	memset(&x, 0, sizeof(x));
	x.adp = 8;
	infer_adp_rank(&x, &b, &r, &route);
	/* prompts 1000, 1000, 1000 on ranks 0-2, 400 on rank 3: rank 0
	 * (the first of the 1000s) holds one prompt of 1000 and none of
	 * 400; 16 / 8 = 2 decoding sequences */
	cr_assert_eq(r.n, 2);
	cr_assert_float_eq(r.g[0].count, 1, 1e-12);
	cr_assert_float_eq(r.g[0].q, 1000, 1e-12);
	cr_assert_float_eq(r.g[1].count, 2, 1e-12);
	cr_assert_eq(r.g[1].prefill, 0);
	/* (3 x 1000 + 400 + 16) / 8 = 427 tokens per rank */
	cr_assert_float_eq(route, 427, 1e-9);

	/* 9 prompts of 500 over 8 ranks: one rank holds two */
	b.g[0] = (struct infer_seqs){9, 500, 0, 1, 1, 0, 0};
	b.n = 1;
	infer_adp_rank(&x, &b, &r, &route);
	cr_assert_eq(r.n, 1);
	cr_assert_float_eq(r.g[0].count, 2, 1e-12);
	cr_assert_float_eq(route, 9 * 500 / 8.0, 1e-9);

	/* a ranked batch (serving tracks each request's rank): the groups'
	 * rank_count, 1 of the 9 prompts and 3 of 16 decodes at 700 (the
	 * busiest rank's mean context); the experts still see the mean,
	 * (9 x 500 + 16) / 8 = 564.5 tokens a rank */
	b.g[0] = (struct infer_seqs){9, 500, 0, 1, 1, 0, 1};
	b.g[1] = (struct infer_seqs){3, 1, 700, 0, 1, 0, 3};
	b.g[2] = (struct infer_seqs){13, 1, 400, 0, 1, 0, 0};
	b.n = 3;
	b.ranked = 1;
	infer_adp_rank(&x, &b, &r, &route);
	cr_assert_eq(r.n, 2);
	cr_assert_eq(r.ranked, 0);
	cr_assert_float_eq(r.g[0].count, 1, 1e-12);
	cr_assert_float_eq(r.g[0].q, 500, 1e-12);
	cr_assert_float_eq(r.g[1].count, 3, 1e-12);
	cr_assert_float_eq(r.g[1].ctx, 700, 1e-12);
	cr_assert_float_eq(route, 564.5, 1e-9);
	b.ranked = 0;

	/* without attention DP the batch is the rank's */
	x.adp = 1;
	infer_adp_rank(&x, &b, &r, &route);
	for (k = 0; k < b.n; k++)
		cr_assert_float_eq(r.g[k].count, b.g[k].count, 1e-12);
	cr_assert_float_eq(route, 0, 1e-12);
}

/* Job Q30 with sets (trtllm auto_size): size its engine and check the
 * budgets it gets, max_num_seqs seqs and max_num_tokens tokens (< 0: not
 * checked); the job is returned for more checks. The body the auto-size
 * tests shared. */
static const struct job_spec *check_auto_size(struct arena *a,
					      const char *const *sets,
					      size_t n, int64_t seqs,
					      int64_t tokens)
{
	struct diag d;
	struct infer_ctx x;
	struct job_spec *j;

	diag_init(&d, stderr);
	j = fixture_load_job(a, Q30, sets, n);
	cr_assert_eq(infer_ctx_init(&x, j, &d), 0);
	cr_assert_eq(x.max_seqs, seqs, "%s: max_num_seqs %lld, expected %lld",
		     sets[n - 1], (long long)x.max_seqs, (long long)seqs);
	if (tokens >= 0)
		cr_assert_eq(x.max_tokens, tokens, "%s: max_num_tokens %lld, "
			     "expected %lld", sets[n - 1],
			     (long long)x.max_tokens, (long long)tokens);
	infer_ctx_release(&x);
	return j;
}

/*
 * trtllm-bench's auto sizing with the trtllm preset's auto_size_rule
 * (tuning.py finetune_setting). Qwen3-30B-A3B in bf16 on one H100:
 * memory 81,559 MiB = 79.647 GiB, engine size 30.53 e9 parameters
 * (moe_weights_qwen3_30b) x 2 B (BYTES_PER_ELEM, unquantized) = 56.87
 * GiB, so 22.777 GiB left, of which the preset's KV
 * fraction 0.9 is 20.4995 GiB. KV per token 2 x 48 layers x 4 heads x
 * 128 x B_kv = 98,304 B in bf16 (9.155e-5 GiB), half in fp8.
 *   1000/1000 bf16: 20.4995 / (9.155e-5 x 2000) = 111.95 requests:
 *     batch max(64, 32 x ceil(3.50)) = 128; tokens 223.9 -> 2048 (the
 *     floor); unchunked: max(2048, 1000 + 128) = 2048
 *   128/128 fp8: 1749.3 requests -> 256 x ceil(6.83) = 1792; tokens
 *     3498.5 -> 256 x ceil(13.67) = 3584
 *   1000/100 fp8: 407.1 -> 128 x ceil(3.18) = 512; tokens 4478.1 ->
 *     512 x ceil(8.75) = 4608
 *   128/16 fp8: 3109.8 -> 256 x ceil(12.15) = 3328; tokens 27988 ->
 *     1024 x ceil(27.33) = 28672
 *   16/16 fp8: 13994 requests, capped at 4096 (a multiple of 256);
 *     tokens 4096 x 2 = 8192
 */
Test(infer, trtllm_auto_size_rounds_by_the_rule)
{
	static const struct {
		const char *isl, *osl, *kv;
		int64_t seqs, tokens;
	} c[] = {
		{"serving.input_len=1000", "serving.output_len=1000",
		 "serving.kv_dtype=bf16", 128, 2048},
		{"serving.input_len=128", "serving.output_len=128",
		 "serving.kv_dtype=fp8", 1792, 3584},
		{"serving.input_len=1000", "serving.output_len=100",
		 "serving.kv_dtype=fp8", 512, 4608},
		{"serving.input_len=128", "serving.output_len=16",
		 "serving.kv_dtype=fp8", 3328, 28672},
		{"serving.input_len=16", "serving.output_len=16",
		 "serving.kv_dtype=fp8", 4096, 8192},
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *sets[] = {"phase=serving", "serving.requests=10",
				      "serving.engine.auto_size=true",
				      c[i].kv, c[i].isl, c[i].osl};
		struct arena a;

		arena_init(&a);
		check_auto_size(&a, sets, 6, c[i].seqs, c[i].tokens);
		arena_release(&a);
	}
}

/*
 * The sizing reads auto_size_fraction (trtllm-bench's
 * --kv_cache_free_gpu_mem_fraction) where it is set, else memory_fraction
 * (infer_prog.c trtllm_auto_size): the pool's fraction (memory_fraction)
 * leaves it alone. Qwen3-30B-A3B bf16 on one H100, 1000/1000, as in
 * trtllm_auto_size_rounds_by_the_rule: 22.777 GiB left, 9.155e-5 GiB of
 * KV a token, 0.1831 GiB a request.
 *   fraction 0.9: 111.95 requests -> 128 (that test)
 *   fraction 0.5: 22.777 x 0.5 / 0.1831 = 62.19 -> max(64, 32 x
 *     ceil(1.94)) = 64; tokens 124.4 -> 2048 (unchunked max(2048, 1064))
 * So (memory 0.9, sizing 0.5) and (memory 0.5, unset) give 64, (memory
 * 0.5, sizing 0.9) 128.
 */
Test(infer, trtllm_auto_size_reads_its_own_fraction)
{
	static const struct {
		const char *mem, *size;
		int64_t seqs;
	} c[] = {
		{"serving.engine.memory_fraction=0.9",
		 "serving.engine.auto_size_fraction=0.5", 64},
		{"serving.engine.memory_fraction=0.5",
		 "serving.engine.auto_size_fraction=0", 64},
		{"serving.engine.memory_fraction=0.5",
		 "serving.engine.auto_size_fraction=0.9", 128},
	};
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *sets[] = {"phase=serving", "serving.requests=10",
				      "serving.engine.auto_size=true",
				      "serving.kv_dtype=bf16",
				      "serving.input_len=1000",
				      "serving.output_len=1000", c[i].mem,
				      c[i].size};
		struct arena a;

		arena_init(&a);
		check_auto_size(&a, sets, 8, c[i].seqs, 2048);
		arena_release(&a);
	}
}

/*
 * calc_engine_setting's engine size is the checkpoint's parameter count
 * times BYTES_PER_ELEM of its quantization (trtllm.yaml param_B*), not
 * the weights the GPUs hold.
 * Llama 4 Maverick in fp8 on 8 H100s, attention DP 8, EP 8, 1000/1000,
 * FP8 KV, the job's fraction 0.95:
 *   a layer's attention 5120 x (40 + 16) x 128 + 40 x 128 x 5120 =
 *   62,914,560 and norms 10,240; 24 dense layers add 3 x 5120 x 16384 =
 *   251,658,240 (314,583,040 a layer); 24 MoE layers 129 x 3 x 5120 x
 *   8192 = 16,231,956,480 (128 experts and the shared one) and the router
 *   655,360 (16,295,536,640 a layer); embedding and LM head 2 x 202,048 x
 *   5120 = 2,068,971,520 and the final norm 5120: 400,711,848,960;
 *   footprint_model_params pads the vocabulary to 202,112 rows (+655,360):
 *   400,712,504,320 parameters, every stored element an fp8 byte (1.0 B)
 *   = 373.19 GiB of 8 x 79.647 = 637.18 GiB: 263.99 GiB left
 *   KV per token 2 x 48 x 8 x 128 x 1 B = 98,304 B = 9.155e-5 GiB
 *   requests 0.95 x 263.99 / (9.155e-5 x 2000) = 1369.7: batch 256 x
 *   ceil(5.35) = 1536; tokens 2739.5 -> 256 x ceil(10.70) = 2816 >
 *   1000 + 1536
 * The weights the 8 GPUs hold (attention and dense layers on every rank,
 * 8 x 64.57 GB = 481 GiB) would leave 156 GiB: 809 requests, batch 896,
 * 2048 tokens.
 * Qwen3-30B-A3B in nvfp4 on one B200 (183,359 MiB = 179.06 GiB),
 * 1250/1000: the 29.91 e9 parameters outside the embedding and head
 * (0.622 e9) are stored as 0.5625 elements each (two values to a U8 and
 * an E4M3 scale per 16): (29.91 e9 x 0.5625 + 0.622 e9) x 0.5 B = 8.72 e9
 * B = 8.12 GiB, 170.94 GiB left; KV per token 2 x 48 x 4 x 128 x 1 B =
 * 4.578e-5 GiB; 0.95 x 170.94 / (4.578e-5 x 2250) = 1576.6 requests:
 * batch 256 x ceil(6.16) = 1792, tokens 3547 -> 3584. The instance's own
 * weights (29.91 e9 x 0.5625 + 0.622 e9 x 2 B = 16.83 GiB) would give
 * 1496.3 requests: batch 1536.
 */
Test(infer, trtllm_auto_size_takes_the_checkpoint_size)
{
	const char *mav[] = {"phase=serving", "serving.requests=10",
			     "serving.engine.auto_size=true",
			     "serving.engine.memory_fraction=0.95",
			     "model=llama4-maverick", "system.gpus_per_node=8",
			     "parallelism.dp=8", "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "serving.dtype=fp8", "serving.kv_dtype=fp8",
			     "serving.input_len=1000",
			     "serving.output_len=1000"};
	const char *q30[] = {"phase=serving", "serving.requests=10",
			     "serving.engine.auto_size=true",
			     "serving.engine.memory_fraction=0.95",
			     "system.preset=dgx-b200",
			     "serving.dtype=nvfp4", "serving.kv_dtype=fp8",
			     "serving.input_len=1250",
			     "serving.output_len=1000"};
	struct arena a;
	const struct job_spec *j;

	arena_init(&a);
	j = check_auto_size(&a, mav, sizeof(mav) / sizeof(mav[0]), 1536, 2816);
	cr_assert_float_eq(footprint_model_params(j), 400712504320.0, 0.5);
	check_auto_size(&a, q30, sizeof(q30) / sizeof(q30[0]), 1792, 3584);
	arena_release(&a);
}

/*
 * gpt-oss's MXFP4 experts under auto sizing with serving dtype bf16 (the
 * checkpoint's other weights): trtllm-bench's param_count sums the
 * safetensors elements, the experts' U8 blocks (two values each) and U8
 * scales (one per 32): 0.5 + 1/32 = 0.53125 elements a parameter, and
 * W4A16_MXFP4 is not in BYTES_PER_ELEM: 2 B an element.
 * gpt-oss-120b on 4 H100s (tp 4), 1024/1024, bf16 KV, fraction 0.95:
 *   parameters 116,829,891,648 (the vocabulary padded to 201,216 rows),
 *   routed experts 36 x 128 x (3 x 2880^2 + 3 x 2880 biases) =
 *   114,701,598,720, embedding and head 2 x 201,088 x 2880 =
 *   1,158,266,880, the rest 970,026,048:
 *   (970,026,048 + 114,701,598,720 x 0.53125 + 1,158,266,880) x 2 B =
 *   126,127,034,496 B = 117.465 GiB of 4 x 79.647 = 318.590: 201.125 left
 *   KV per token 2 x 36 x 8 x 64 x 2 B = 73,728 B = 6.866e-5 GiB
 *   requests 0.95 x 201.125 / (6.866e-5 x 2048) = 1358.7: batch 256 x
 *   ceil(5.31) = 1536; tokens 2717.5 -> 256 x ceil(10.6) = 2816
 * Every parameter at 2 B (217.63 GiB, as before) left 100.96 GiB: 682
 * requests, batch 768, 2048 tokens.
 */
Test(infer, trtllm_auto_size_counts_packed_mxfp4_experts)
{
	const char *sets[] = {"phase=serving", "serving.requests=10",
			      "serving.engine.auto_size=true",
			      "serving.engine.memory_fraction=0.95",
			      "model=gpt-oss-120b", "parallelism.tp=4",
			      "system.gpus_per_node=4", "serving.dtype=bf16",
			      "serving.kv_dtype=bf16", "serving.input_len=1024",
			      "serving.output_len=1024"};
	struct arena a;
	struct diag d;
	struct infer_ctx x;
	struct job_spec *j;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, Q30, sets, sizeof(sets) / sizeof(sets[0]));
	cr_assert_float_eq(footprint_model_params(j), 116829891648.0, 0.5);
	cr_assert_float_eq(footprint_expert_params(j), 114701598720.0, 0.5);
	cr_assert_eq(infer_ctx_init(&x, j, &d), 0);
	cr_assert_eq(x.dims.moe.weight, DTYPE_MXFP4);
	cr_assert_eq(x.max_seqs, 1536);
	cr_assert_eq(x.max_tokens, 2816);
	infer_ctx_release(&x);
	arena_release(&a);
}

/*
 * Chunked attention (Llama 4): a prompt of 20,000 tokens with chunks of
 * 8192 is three causal attentions within chunks [0, 8192), [8192, 16384)
 * and [16384, 20000): queries 8192, 8192, 3616 over keys 8192, 8192,
 * 3616. A second chunk of a prompt (1000 tokens after 8000 cached)
 * crosses the boundary at 8192: 192 queries over keys 0..8191 (8192
 * keys), then 808 queries over keys 8192..8999 (808 keys). A decode
 * token at position 20,999 (kv = 21,000) sees its chunk's keys from
 * 16,384: 21,000 - 16,384 = 4616 = (21,000 - 1) mod 8192 + 1. Without a
 * chunk the group passes unchanged. With room for two groups the rest
 * of the queries are one last group over its chunk's keys.
 */
Test(infer, chunked_attention_groups)
{
	struct gpu_attn_group g[8];
	int n;

	n = infer_chunk_groups(2, 20000, 20000, 8192, g, 8);
	cr_assert_eq(n, 3);
	cr_assert_float_eq(g[0].q, 8192, 1e-9);
	cr_assert_float_eq(g[0].kv, 8192, 1e-9);
	cr_assert_float_eq(g[1].q, 8192, 1e-9);
	cr_assert_float_eq(g[1].kv, 8192, 1e-9);
	cr_assert_float_eq(g[2].q, 3616, 1e-9);
	cr_assert_float_eq(g[2].kv, 3616, 1e-9);
	cr_assert_float_eq(g[2].count, 2, 1e-12);

	n = infer_chunk_groups(1, 1000, 9000, 8192, g, 8);
	cr_assert_eq(n, 2);
	cr_assert_float_eq(g[0].q, 192, 1e-9);
	cr_assert_float_eq(g[0].kv, 8192, 1e-9);
	cr_assert_float_eq(g[1].q, 808, 1e-9);
	cr_assert_float_eq(g[1].kv, 808, 1e-9);

	n = infer_chunk_groups(64, 1, 21000, 8192, g, 8);
	cr_assert_eq(n, 1);
	cr_assert_float_eq(g[0].q, 1, 1e-12);
	cr_assert_float_eq(g[0].kv, 4616, 1e-9);

	n = infer_chunk_groups(3, 10, 500, 0, g, 8);
	cr_assert_eq(n, 1);
	cr_assert_float_eq(g[0].q, 10, 1e-12);
	cr_assert_float_eq(g[0].kv, 500, 1e-12);

	n = infer_chunk_groups(1, 20000, 20000, 8192, g, 2);
	cr_assert_eq(n, 2);
	cr_assert_float_eq(g[1].q, 20000 - 8192, 1e-9);
	cr_assert_float_eq(g[1].kv, 20000 - 8192, 1e-9);
}

/*
 * Llama 4 Maverick's layers (workloads/models/llama4-maverick.yaml):
 * attention_chunk_size 8192, nope_layer_interval 4, so layers 3, 7, ...
 * ((i + 1) % 4 == 0) are NoPE and global, the others chunked.
 */
Test(infer, llama4_chunked_layers)
{
	const char *mav[] = {"model=llama4-maverick",
			     "system.gpus_per_node=8", "parallelism.tp=8"};
	struct arena a;
	struct job_spec *j;
	struct infer_kind k;

	arena_init(&a);
	j = fixture_load_job(&a, L70, mav, 3);
	infer_kind_of(j, 0, &k);
	cr_assert_float_eq(k.chunk, 8192, 0);
	infer_kind_of(j, 2, &k);
	cr_assert_float_eq(k.chunk, 8192, 0);
	infer_kind_of(j, 3, &k);
	cr_assert_float_eq(k.chunk, 0, 0);
	infer_kind_of(j, 47, &k);
	cr_assert_float_eq(k.chunk, 0, 0);
	arena_release(&a);
}

/*
 * trtllm-bench sizes the KV cache with config.json's head_dim, else
 * hidden_size / num_attention_heads (bench/build/dataclasses.py
 * ModelConfig.head_size), not the attention's own head: DeepSeek-V3's
 * config has no head_dim, so 7168 / 128 = 56, while llmsim's MLA has
 * 192-wide Q/K heads (128 + 64). DeepSeek-V3 in nvfp4 on 4 B200s, DEP4
 * (attention DP 4, EP 4), FP8 KV, 1024/1024, fraction 0.95:
 *   memory 4 x 183,359 MiB = 716.246 GiB; engine: 671,026,404,352
 *   parameters (footprint_model_params), of which the embedding and LM
 *   head 2 x 129,280 x 7168 = 1,853,358,080 count one element each and
 *   the rest 0.5625 (nvfp4: two values to a U8, an E4M3 scale per 16):
 *   378,263,196,608 elements x 0.5 B (param_B_fp4) = 176.143 GiB; left
 *   540.104 GiB, x 0.95 = 513.099 GiB
 *   KV per token 2 x 61 layers x max(tp 1, 128 KV heads) x 56 x 1 B =
 *   874,496 B: 513.099 GiB / (874,496 B x 2048) = 307.6 requests: batch
 *   128 x ceil(2.40) = 384; tokens 615.2 -> 2048 (the floor) >= 1024 +
 *   384
 *   with head_dim 192 given in the file: 2,998,272 B a token, 89.7
 *   requests: batch max(64, 32 x ceil(2.80)) = 96 (what llmsim sized
 *   before it read the file's head_dim)
 */
Test(infer, trtllm_auto_size_reads_the_files_head_dim)
{
	const char *s[] = {"phase=serving", "serving.requests=10",
			   "serving.engine.auto_size=true",
			   "serving.engine.memory_fraction=0.95",
			   "model=deepseek-v3", "system.preset=dgx-b200",
			   "system.gpus_per_node=4",
			   "parallelism.dp=4", "parallelism.ep=4",
			   "parallelism.attention_dp=true",
			   "serving.dtype=nvfp4", "serving.kv_dtype=fp8",
			   "serving.input_len=1024", "serving.output_len=1024",
			   "model.head_dim=192"};
	size_t n = sizeof(s) / sizeof(s[0]);
	struct arena a;
	const struct job_spec *j;

	arena_init(&a);
	j = check_auto_size(&a, s, n - 1, 384, 2048);
	cr_assert_float_eq(footprint_model_params(j), 671026404352.0, 0.5);
	cr_assert_eq(j->model->head_dim, 192);
	j = check_auto_size(&a, s, n, 96, -1);
	cr_assert_eq(j->model->head_dim, 192);
	arena_release(&a);
}
