/*
 * test_moe.c - MoE layers and routing against derived numbers: FLOPs per
 * token of a routed layer, the busiest EP rank's expected load (closed
 * form vs seeded draws), expert-state memory over ep x edp, the
 * all-to-all overlap's effect on a step, and the experts' gradient
 * reductions on their own chain. Context parallelism is test_cp.c's.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "moe_case.h"
#include "models/footprint.h"
#include "models/layer.h"
#include "models/route.h"
#include "models/train.h"

Test(moe, forward_flops_per_token)
{
	struct moe_case m;
	double T = 4096, h = 1024, s = 2048, b = 2, E = 8, k = 2, fe = 512;
	double want;

	/* Attention as the dense layer (8 T h^2 + 2 b s^2 h, the scores over
	 * the causal half), the router (2 T h E) and k experts per token,
	 * fc1 and fc2 (2 x 2 T k h fe): 8*4096*1024^2 + 2*2*2048^2*1024 +
	 * 2*4096*1024*8 + 4*4096*2*1024*512 = 6.87e10 FLOP. */
	moe_case_init(&m, 8, 2, 512, 1);
	moe_case_dims(&m);
	cr_assert_str_eq(m.r.method, "exact");
	layer_fwd(&m.d, &m.kind, &m.o);
	want = 8 * T * h * h + 2 * b * s * s * h + 2 * T * h * E +
	       4 * T * k * h * fe;
	cr_assert(fixture_near(layer_ops_flops(&m.o, PASS_FWD), want, 1e-9),
		  "got %.6g, want %.6g", layer_ops_flops(&m.o, PASS_FWD), want);
	moe_case_release(&m);
}

Test(moe, expert_parallel_keeps_a_gpus_work)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d1, d8;
	struct route_result r;
	struct layer_ops o1, o8;
	struct layer_kind kind = { .moe = 1 };
	double comm = 0;
	int i;

	/* Uniform routing: with ep 8 a GPU's 1 expert of 8 sees the k T rows
	 * the 8 GPUs route to it, 8 x 2 x 4096 / 8: its FLOPs are ep 1's.
	 * Dispatch and combine appear, forward and backward. */
	arena_init(&a);
	fixture_moe(&f, 8, 2, 512, 1);
	fixture_dims(&f, &a, &d1, &r);
	fixture_moe(&f, 8, 2, 512, 8);
	fixture_dims(&f, &a, &d8, &r);
	cr_assert(fixture_near(d8.moe.rows, 2 * 4096, 1e-12));
	cr_assert(fixture_near(d8.moe.local, 1, 1e-12));
	layer_fwd(&d1, &kind, &o1);
	layer_fwd(&d8, &kind, &o8);
	cr_assert(fixture_near(layer_ops_flops(&o8, PASS_FWD),
		       layer_ops_flops(&o1, PASS_FWD), 1e-9));
	for (i = 0; i < o8.n; i++)
		if (o8.op[i].kind == LOP_COLL && o8.op[i].coll == COLL_ALLTOALL)
			comm += 1;
	cr_assert_eq(comm, 2, "dispatch and combine: %g all-to-alls", comm);
	/* no dedup (library all-to-all): T k rows of h 16-bit elements */
	cr_assert(fixture_near(d8.moe.dispatch_B, 4096.0 * 2 * 1024 * 2, 1e-12));
	arena_release(&a);
}

Test(moe, expert_bias_and_clamp_as_framework_kernels)
{
	struct moe_case m;
	const struct layer_op *op;
	double n, u;

	/* 8 experts top-2, gated experts of 512 (fc1 u = 1024 wide), ep 1:
	 * R = T k = 4096 x 2 = 8192 rows, L = 8 local experts, h 1024,
	 * 16-bit activations, fp32 router (probabilities of 4 B). */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.gated_mlp = 1;
	m.f.model.mlp_bias = 1;
	m.f.model.swiglu_limit = 7;
	m.f.job.moe.router_dtype = DTYPE_FP32;
	m.f.fw.elementwise.expert_bias_kernels = 1;
	m.f.fw.elementwise.glu_clamp_kernels = 1;
	moe_case_dims(&m);
	cr_assert(m.d.moe.bias_ops && m.d.moe.clamp_ops);
	cr_assert(fixture_near(m.d.moe.probs_B, 4, 0));
	layer_fwd(&m.d, &m.kind, &m.o);
	/* Bias: n = R h = 8192 x 1024 elements; w = 4 B > B = 2 B, so the
	 * cast back runs. Forward read n (2 + 2 x 4 + 4) = 14 n, write
	 * 3 x 4 n + 2 n = 14 n B, 2 L + 1 + 1 = 18 kernels. */
	n = 8192.0 * 1024;
	op = fixture_op(&m.o, "expert_bias");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.read_B, 14 * n, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 14 * n, 1e-12));
	cr_assert(fixture_near(op->k.launches, 18, 0));
	/* b p broadcasts both operands: PyTorch's kernel without vector
	 * loads for the n w = 4 n B it writes. */
	cr_assert(fixture_near(op->k.strided_B, 4 * n, 1e-12));
	/* Clamp: R u = 8192 x 1024 elements of 2 B, read and written twice
	 * (two half clamps, the cat): 4 x 8388608 = 33554432 B each way,
	 * 3 kernels, before the activation. */
	u = 8192.0 * 1024 * 2;
	op = fixture_op(&m.o, "expert_clamp");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.read_B, 2 * u, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 2 * u, 1e-12));
	/* the two clamps read halves of torch.chunk (row stride u, not
	 * contiguous): their read and write of R u B, 2 u, are strided; the
	 * cat is not. */
	cr_assert(fixture_near(op->k.strided_B, 2 * u, 1e-12));
	cr_assert(op < fixture_op(&m.o, "expert_act"));
	moe_case_bwd(&m);
	/* Backward bias: read 4 x 4 n + 2 n + n (2 + 4) = 24 n, write 2 x 4 n
	 * + 2 n + n (4 + 2) = 16 n, 4 L + 1 + L + 1 = 42 kernels, before the
	 * fc2 dgrad; clamp: read 3 R u B, write 2 R u B after the act. */
	op = fixture_op(&m.o, "expert_bias_bwd");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.read_B, 24 * n, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 16 * n, 1e-12));
	cr_assert(fixture_near(op->k.launches, 42, 0));
	/* the gradient's multiplies by p and by b, broadcast: read and
	 * write n w each, 4 n w = 16 n B strided. */
	cr_assert(fixture_near(op->k.strided_B, 16 * n, 1e-12));
	cr_assert(op < fixture_op(&m.o, "expert_fc2_dgrad"));
	op = fixture_op(&m.o, "expert_clamp_bwd");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.read_B, 3 * u, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 2 * u, 1e-12));
	/* the clamp gradients read their halves of the input: read 2 u,
	 * write u, strided; the cat is not. */
	cr_assert(fixture_near(op->k.strided_B, 3 * u, 1e-12));
	/* fc1's bias as PyTorch ops too (AutoModel): R u = 8192 x 1024
	 * elements of 2 B (16777216 B); forward the adds and the cat read
	 * and write it twice, L + 1 = 9 kernels; backward the per-expert
	 * sums read it, the split's cat reads and writes it. */
	m.f.fw.elementwise.expert_fc1_bias_kernels = 1;
	moe_case_fwd(&m);
	op = fixture_op(&m.o, "expert_fc1_bias");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.read_B, 2 * 16777216.0, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 2 * 16777216.0, 1e-12));
	cr_assert(fixture_near(op->k.launches, 9, 0));
	/* t + b broadcasts b over the rows: the adds' read and write of
	 * R u B are strided, the cat's are not. */
	cr_assert(fixture_near(op->k.strided_B, 16777216.0 * 2, 1e-12));
	cr_assert(op < fixture_op(&m.o, "expert_act"));
	moe_case_bwd(&m);
	op = fixture_op(&m.o, "expert_fc1_bias_bwd");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.read_B, 2 * 16777216.0, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 16777216.0, 1e-12));
	cr_assert(fixture_near(op->k.strided_B, 0, 0));	/* sums and a cat */
	m.f.fw.elementwise.expert_fc1_bias_kernels = 0;
	/* 16-bit probabilities: no casts. Forward read n (2 + 4) = 6 n,
	 * write 6 n, 2 L + 1 = 17 kernels. */
	m.f.job.moe.router_dtype = DTYPE_BF16;
	moe_case_fwd(&m);
	op = fixture_op(&m.o, "expert_bias");
	cr_assert(fixture_near(op->k.read_B, 6 * n, 1e-12));
	cr_assert(fixture_near(op->k.write_B, 6 * n, 1e-12));
	cr_assert(fixture_near(op->k.launches, 17, 0));
	cr_assert(fixture_near(op->k.strided_B, 2 * n, 1e-12));	/* n w, w = 2 B */
	/* Fused (the defaults), or a model without biases or clamp: none. */
	m.f.fw.elementwise.expert_bias_kernels = 0;
	m.f.model.swiglu_limit = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_bias"));
	cr_assert_null(fixture_op(&m.o, "expert_clamp"));
	moe_case_release(&m);
}

Test(moe, yarn_factor_runs_megatrons_unfused_rope)
{
	struct moe_case m;

	/* Rotary with YaRN's factor 1.3466 (gpt-oss): a framework whose
	 * fused rope takes no scale runs it as PyTorch ops; one that scales,
	 * or a factor of 1, keeps the fused kernel. */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.position_embedding = POS_ROPE;
	m.f.model.rope_mscale = 1.3465735903;
	m.f.fw.elementwise.fused_rope_mscale = 0;
	moe_case_dims(&m);
	cr_assert_eq(m.d.eager_rope, 1);
	m.f.fw.elementwise.fused_rope_mscale = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.eager_rope, 0);
	m.f.fw.elementwise.fused_rope_mscale = 0;
	m.f.model.rope_mscale = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.eager_rope, 0);
	moe_case_release(&m);
}

Test(moe, busiest_rank_closed_form_agrees_with_draws)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result cf, dr;
	double S = 8 * 4096 * 8.0, mu = S / 8, sd;

	/* Random routing, 64 experts top-8 over ep 8: a rank's rows are
	 * Binomial(S, 1/8), S = 8 x 4096 x 8 = 262144: mean 32768, sd
	 * sqrt(S p (1-p)) = 169.3; the expected maximum of 8 nearly
	 * independent normals is mu + 1.4236 sd (Tippett's table, n = 8), so
	 * max/mean = 1 + 1.4236 x 169.3 / 32768 = 1.00736. */
	arena_init(&a);
	fixture_moe(&f, 64, 8, 256, 8);
	f.job.moe.routing.balance = ROUTE_RANDOM;
	fixture_dims(&f, &a, &d, &cf);
	cr_assert_str_eq(cf.method, "closed_form");
	sd = sqrt(S * (1.0 / 8) * (7.0 / 8));
	cr_assert(fixture_near(cf.max_mean, 1 + 1.4236 * sd / mu, 2e-4),
		  "closed form %.6f", cf.max_mean);
	f.job.moe.routing.method = ROUTE_DRAWS;
	f.job.moe.routing.draws = 400;
	fixture_dims(&f, &a, &d, &dr);
	cr_assert_str_eq(dr.method, "draws");
	cr_assert_eq(dr.draws, 400);
	/* 400 draws: the mean's sd is about 0.5 sd / sqrt(400) / mu */
	cr_assert(fabs(dr.max_mean - cf.max_mean) < 1e-3,
		  "draws %.6f vs closed form %.6f", dr.max_mean, cf.max_mean);
	/* a measured ratio is taken as given */
	f.job.moe.routing.balance = ROUTE_MAX_MEAN;
	f.job.moe.routing.max_mean_ratio = 1.3;
	fixture_dims(&f, &a, &d, &dr);
	cr_assert_str_eq(dr.method, "measured");
	cr_assert(fixture_near(dr.max_mean, 1.3, 1e-12));
	cr_assert(fixture_near(d.moe.rows, 1.3 * S / 8, 1e-12));
	arena_release(&a);
}

/*
 * Balance eplb: EPLB placed from the workload's own statistics, so every
 * slot carries the same expected load and a step is one multinomial draw
 * over the slots. 9 experts in 12 slots over ep 4 (3 slots a rank, 3
 * redundant), S rows:
 *   eplb   every rank's share 1/4: the expected maximum of 4 iid normals
 *          is mu + 1.0294 sd (Tippett's table, n = 4), mu = S / 4,
 *          sd = sqrt(S 1/4 3/4); each of the busiest rank's 3 slots one
 *          third of it.
 *   random uniform popularity 1/9 replicated by EPLB (route_eplb_slots):
 *          experts 0-2 get a second replica (ties to the first id), so 6
 *          replicas of 1/9 and 6 of 1/18; packed heaviest first onto the
 *          lighter rank: r0-r3 one 1/9 each, r0 r1 a second (2/9), the
 *          halves to r2 r3 twice (2/9), the last two to r0 r1: 5/18 on
 *          r0 r1, 2/9 on r2 r3. Their means lie 1/18 S = 38 sd apart,
 *          so the expected maximum is that of the two 5/18 ranks,
 *          mu1 + sd1 / sqrt(pi), mu1 = 5 S / 18, sd1 = sqrt(S 5/18 13/18):
 *          max/mean (4 mu1 / S = 1.111) above eplb's.
 */
Test(moe, eplb_balance_draws_over_equal_slots)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct diag dg;
	double S, mu, sd, mu1, sd1;

	arena_init(&a);
	diag_init(&dg, stderr);
	fixture_moe(&f, 8, 2, 256, 4);
	f.job.moe.routing.balance = ROUTE_EPLB;
	layer_dims_from_job(&f.job, &d);
	d.moe.experts = 9;
	d.moe.local = 3;
	S = d.moe.tokens * d.moe.ep * d.moe.etp * d.moe.topk;
	mu = S / 4;
	sd = sqrt(S * 0.25 * 0.75);
	cr_assert_eq(route_plan(&f.job, &d, &a, &r, &dg), 0);
	cr_assert_str_eq(r.method, "closed_form");
	cr_assert(fixture_near(r.max_mean, 1 + 1.0294 * sd / mu, 1e-5),
		  "eplb %.6f", r.max_mean);
	cr_assert(fixture_near(r.rows[0], r.max_mean * mu / 3, 1e-9));
	cr_assert(fixture_near(r.rows[2], r.rows[0], 1e-9));
	f.job.moe.routing.balance = ROUTE_RANDOM;
	layer_dims_from_job(&f.job, &d);
	d.moe.experts = 9;
	d.moe.local = 3;
	mu1 = S * 5 / 18;
	sd1 = sqrt(S * 5 / 18 * 13 / 18);
	cr_assert_eq(route_plan(&f.job, &d, &a, &r, &dg), 0);
	cr_assert(fixture_near(r.max_mean, (mu1 + sd1 / sqrt(M_PI)) / mu,
			       1e-5), "random %.6f", r.max_mean);
	arena_release(&a);
}

Test(moe, forced_routing_follows_the_frameworks_gate)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	double S = 8 * 4096 * 8.0, mu = S / 8, sd = sqrt(S / 8 * 7 / 8);

	/* The default balance, forced: a force-balanced benchmark routes as
	 * its framework's gate. Megatron-Core's (balanced_gate random) draws
	 * random logits a token, so training takes the multinomial of the
	 * random case (64 experts top-8 over ep 8, S = 262144 rows: max/mean
	 * 1 + 1.4236 x 169.3 / 32768 = 1.00736, busiest_rank_closed_form_
	 * agrees_with_draws); AutoModel's round-robin gate and inference
	 * stay exact (1). */
	arena_init(&a);
	fixture_moe(&f, 64, 8, 256, 8);
	f.job.moe.routing.balance = ROUTE_FORCED;
	f.fw.balanced_gate = GATE_RANDOM;
	cr_assert_eq(job_routing_balance(&f.job), ROUTE_RANDOM);
	fixture_dims(&f, &a, &d, &r);
	cr_assert_str_eq(r.method, "closed_form");
	cr_assert(fixture_near(r.max_mean, 1 + 1.4236 * sd / mu, 2e-4),
		  "forced, random gate %.6f", r.max_mean);
	cr_assert_eq(job_round_robin_gate(&f.job), 0);
	f.fw.balanced_gate = GATE_ROUND_ROBIN;
	cr_assert_eq(job_routing_balance(&f.job), ROUTE_UNIFORM);
	cr_assert_eq(job_round_robin_gate(&f.job), 1);
	fixture_dims(&f, &a, &d, &r);
	cr_assert_str_eq(r.method, "exact");
	cr_assert(fixture_near(r.max_mean, 1, 1e-12));
	f.fw.balanced_gate = GATE_RANDOM;
	f.job.phase = PHASE_DECODE;
	cr_assert_eq(job_routing_balance(&f.job), ROUTE_UNIFORM);
	/* an explicit balance is kept as given */
	f.job.phase = PHASE_TRAINING;
	f.job.moe.routing.balance = ROUTE_UNIFORM;
	cr_assert_eq(job_routing_balance(&f.job), ROUTE_UNIFORM);
	arena_release(&a);
}

Test(moe, expert_parameters_shard_over_ep_and_edp)
{
	struct moe_case m;
	double dense, experts, want_e;

	/* 8 experts of h x fe x 2 (ungated fc1 and fc2) = 8 x 2 x 1024 x 512
	 * = 8.39e6 parameters in a layer, besides the router's h E. */
	moe_case_init(&m, 8, 2, 512, 4);
	moe_case_dims(&m);
	layer_kind_params(&m.d, &m.kind, 0, 1, &dense, &experts);
	want_e = 8 * 2 * 1024.0 * 512;
	cr_assert(fixture_near(experts, want_e, 1e-12), "experts %.6g", experts);
	/* ep 4 on the node's 8 GPUs: edp = 8 / 4 = 2; the ZeRO-1 optimizer
	 * state of experts is split over edp = 2, the dense over dp = 8 */
	cr_assert_eq(m.f.job.parallelism.dp, 8);
	moe_case_release(&m);
}

/* A step through the builder and executor (alpha-beta comm, alpha 5 us). */
static double step_full(struct fixture *f, int full, double beta_Bps,
			double *exposed)
{
	return mockcomm_train_step(&f->job, full, 5e-6, beta_Bps, exposed);
}

static double step(struct fixture *f, double beta_Bps, double *exposed)
{
	return step_full(f, 0, beta_Bps, exposed);
}

Test(moe, symmetric_equals_full)
{
	struct fixture f;
	double ts, tf, es, ef;

	/* uniform routing: every GPU of the EP group does the same, one
	 * simulated GPU stands for all 8 (with and without the overlap) */
	fixture_moe(&f, 8, 2, 512, 8);
	f.job.training.global_batch_size = 32;
	ts = step_full(&f, 0, 100e9, &es);
	tf = step_full(&f, 1, 100e9, &ef);
	cr_assert_eq(ts, tf, "symmetric %.9g s, full %.9g s", ts, tf);
	cr_assert_eq(es, ef);
	f.job.moe.a2a_overlap = 1;
	ts = step_full(&f, 0, 100e9, &es);
	tf = step_full(&f, 1, 100e9, &ef);
	cr_assert_eq(ts, tf, "overlap: symmetric %.9g s, full %.9g s", ts, tf);
}

Test(moe, all_to_all_overlap_hides_dispatch_and_combine)
{
	struct fixture f;
	double t0, t1, e0, e1;

	/* 8 microbatches per GPU, ep 8: paired forward and backward
	 * actions run each other's all-to-alls under their compute. At 400
	 * GB/s the all-to-alls are shorter than a layer's compute: without
	 * the overlap all are exposed, with it most are hidden (the first
	 * forward and the last backward run alone, the step's other
	 * collectives stay) */
	fixture_moe(&f, 8, 2, 512, 8);
	f.job.training.global_batch_size = 64;
	t0 = step(&f, 400e9, &e0);
	f.job.moe.a2a_overlap = 1;
	t1 = step(&f, 400e9, &e1);
	cr_assert_lt(e1, 0.5 * e0, "exposed %.6g -> %.6g s", e0, e1);
	cr_assert_lt(t1, t0, "step %.6g -> %.6g s", t0, t1);
}

Test(moe, all_to_all_overlap_with_every_forward_in_warm_up)
{
	struct fixture f;
	double t0, t1, e0, e1, tf, ef;

	/* pp 2 x vpp 2 over the 4 layers (a layer per virtual stage), ep 4
	 * on the dp 4 = 8 / 2 GPUs of a stage, b 2: gbs 16 gives m = 16 /
	 * (2 x 4) = 2 = pp microbatches. With the overlap (one more warm-up
	 * forward) rank 0's warm-up is min(2 (2 - 0 - 1) + (2 - 1) 2 + 1,
	 * m vpp = 4) = 4: every forward, no steady state, so nothing pairs
	 * there; its last forward F(c1, m1) and first backward B(c1, m0)
	 * run apart (Megatron-Core's are_all_microbatches_in_warmup). Paired,
	 * B(c1, m0) would wait for rank 1's gradient, whose pair waits for
	 * F(c1, m1)'s activation: the step deadlocked. Rank 1 (warm-up
	 * min(0 + 2 + 1, 4) = 3) has one steady step, F(c1, m1) with
	 * B(c1, m0), which are independent on the last stage. */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.parallelism.pp = 2;
	f.job.parallelism.vpp = 2;
	f.job.parallelism.dp = 4;
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	f.job.training.global_batch_size = 16;
	t0 = step(&f, 400e9, &e0);
	f.job.moe.a2a_overlap = 1;
	t1 = step(&f, 400e9, &e1);
	/* the one pair hides all-to-alls: the step is no slower */
	cr_assert_leq(t1, t0, "step %.6g -> %.6g s", t0, t1);
	tf = step_full(&f, 1, 400e9, &ef);
	cr_assert_eq(t1, tf, "symmetric %.9g s, full %.9g s", t1, tf);
	/* m = 2 pp: both ranks have steady steps */
	f.job.training.global_batch_size = 32;
	t1 = step(&f, 400e9, &e1);
	cr_assert_gt(t1, 0);
}

Test(moe, all_to_all_overlap_with_zero3)
{
	struct fixture f;
	double t1, e1, tf, ef;

	/* ZeRO 3 (Megatron-FSDP optim_grads_params, which runs the 1F1B
	 * all-to-all overlap: mcore_fsdp_adapter.py's fine-grained gather
	 * hooks, NVIDIA/Megatron-LM d98e8a64) with moe.a2a_overlap: a
	 * paired backward and forward run their units interleaved (B u0,
	 * F u0, B u1, ...), so each unit's all-gather waits for the unit
	 * fsdp_prefetch_units (2) before it in that order. In action order
	 * (every unit of B, then F's), F u0's gather waited for B's unit
	 * 4 + 2 - 2 = 4 (of 6: embedding, 4 layers, head), which runs after
	 * F u0: the step deadlocked. ep 4 on 8 GPUs: dp 8 (edp 2) shards
	 * every unit. pp 1, then pp 2 x vpp 2 (m = 2 pp microbatches). */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.training.zero_stage = 3;
	f.job.training.global_batch_size = 32;
	f.job.moe.a2a_overlap = 1;
	t1 = step(&f, 400e9, &e1);
	cr_assert_gt(t1, 0);
	tf = step_full(&f, 1, 400e9, &ef);
	cr_assert_eq(t1, tf, "symmetric %.9g s, full %.9g s", t1, tf);
	f.job.parallelism.pp = 2;
	f.job.parallelism.vpp = 2;
	f.job.parallelism.dp = 4;
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	t1 = step(&f, 400e9, &e1);
	cr_assert_gt(t1, 0);
	tf = step_full(&f, 1, 400e9, &ef);
	cr_assert_eq(t1, tf, "pp 2: symmetric %.9g s, full %.9g s", t1, tf);
}

/* The bytes of rank 0's FSDP reduce-scatters over groups of n GPUs
 * (their sum over the step). */
static double fsdp_rs_bytes(const struct fixture *f, uint32_t n)
{
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	enum task_cat cat;
	double sum = 0;
	uint32_t t;

	diag_init(&d, stderr);
	p = train_build(&f->job, 0, &plan, &d);
	cr_assert_not_null(p);
	for (t = 0; t < prog_tasks(p); t++)
		if (exec_task_rank(p, t) == 0 &&
		    strcmp(exec_task_name(p, t, &cat),
			   "fsdp_grad_reducescatter") == 0 &&
		    exec_task_coll(p, t)->ngpus == n)
			sum += exec_task_coll(p, t)->bytes;
	prog_free(p);
	return sum;
}

Test(moe, fsdp_expert_reduce_dtype_sizes_the_experts_reduce_scatters)
{
	struct fixture f;
	double dense, experts;

	/* ep 4 on 8 GPUs, ZeRO 3: the dense units reduce-scatter over dp 8,
	 * the routed experts over edp 2, both in grad_dtype fp32 (4 B a
	 * parameter). AutoModel's experts, sharded without a mixed-precision
	 * policy, reduce in bf16: their bytes halve (2 / 4), the dense
	 * units' stay. */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.training.zero_stage = 3;
	f.job.training.global_batch_size = 32;
	dense = fsdp_rs_bytes(&f, 8);
	experts = fsdp_rs_bytes(&f, 2);
	cr_assert_gt(dense, 0);
	cr_assert_gt(experts, 0);
	f.fw.fsdp_expert_reduce_dtype = DTYPE_BF16;
	fixture_assert_close(fsdp_rs_bytes(&f, 8), dense);
	fixture_assert_close(fsdp_rs_bytes(&f, 2), experts / 2);
}

/* Rank 0's gradient reductions of one kind ("dp_grad_reduce",
 * "edp_grad_reduce") in program order: how many, the first one's start,
 * the last one's end and their durations' sum (s). */
static int reductions(const struct prog *p, const char *name, double *first_s,
		      double *last_s, double *busy_s)
{
	uint32_t t, n = prog_tasks(p);
	int k = 0;
	enum task_cat cat;

	for (t = 0; t < n; t++) {
		if (exec_task_rank(p, t) != 0 ||
		    strcmp(exec_task_name(p, t, &cat), name) != 0)
			continue;
		if (k++ == 0)
			*first_s = exec_task_start_s(p, t);
		*last_s = exec_task_end_s(p, t);
		*busy_s += *last_s - exec_task_start_s(p, t);
	}
	return k;
}

Test(moe, expert_buckets_reduce_on_their_own_chain)
{
	struct fixture f;
	struct mockcomm_run run;
	double d0 = 0, d1 = 0, db = 0, e0 = 0, e1 = 0, eb = 0, want;

	/* 4 MoE layers, 8 experts of 2 x 1024 x 512 parameters, ep 4 on the
	 * node's 8 GPUs: dense gradients reduce over dp 8, the experts' over
	 * edp 2, ZeRO-1 (reduce-scatters), fp32 gradients. Buckets of at
	 * least 2e6 parameters for both kinds (bucket_params_per_dp 0;
	 * Megatron-Core sizes both buffers' buckets alike): a layer's experts
	 * on a GPU, 8 / 4 x 2 x 1024 x 512 = 2,097,152, are a bucket, ready
	 * when the layer's last backward ends; the dense ones are the head,
	 * then each layer's attention (4 h^2 = 4.19e6) with its router. */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.parallelism.edp = 2;
	f.job.training.zero_stage = 1;
	f.job.training.global_batch_size = 32;
	f.fw.bucket_params = 2000000;
	f.fw.bucket_params_per_dp = 0;
	mockcomm_train_run(&run, &f.job, 0, 5e-6, 1e9);
	cr_assert_eq(reductions(run.p, "edp_grad_reduce", &e0, &e1, &eb), 4);
	cr_assert_geq(reductions(run.p, "dp_grad_reduce", &d0, &d1, &db), 2);
	/* Megatron-Core's expert-parallel bucket groups reduce on their own
	 * process group, concurrently with the dense ones: the experts'
	 * chain starts as soon as its bucket is ready, while the dense chain
	 * still runs (one FIFO with the dense buckets ahead started it after
	 * every dense one, at d1) */
	cr_assert_lt(e0, d1, "experts' chain at %.9g s, dense ends %.9g s", e0, d1);
	/* the experts' reductions: 4 reduce-scatters of 2,097,152 x 4 B =
	 * 8,388,608 B over 2 GPUs, each 5 us + (1/2) 8,388,608 B / 1e9 B/s
	 * = 4.199304 ms (no wait behind a dense one: each starts when its
	 * layer's backward ends), 16.797216 ms in all, done before the
	 * dense chain ends */
	want = 4 * (5e-6 + 0.5 * 2097152.0 * 4 / 1e9);
	cr_assert(fixture_near(eb, want, 1e-6), "experts' reductions %.9g s, want %.9g s",
		  eb, want);
	cr_assert_lt(e1, d1, "experts end %.9g s, dense %.9g s", e1, d1);
	mockcomm_train_release(&run);
	/* both chains under the interleaved schedule with paired actions
	 * (pp 2 x vpp 2, ep 2 on the dp 4 GPUs of a stage: edp 2; m = 16 /
	 * (2 x 4) = 2), reductions and all-gathers: the step completes (no
	 * deadlock) and one simulated GPU per group gives the full-fidelity
	 * step */
	fixture_moe(&f, 8, 2, 512, 2);
	f.job.parallelism.pp = 2;
	f.job.parallelism.vpp = 2;
	f.job.parallelism.dp = 4;
	f.job.parallelism.edp = 2;
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	f.job.training.global_batch_size = 16;
	f.job.training.zero_stage = 1;
	f.job.moe.a2a_overlap = 1;
	f.fw.bucket_params = 2000000;
	e0 = step_full(&f, 0, 400e9, &eb);
	e1 = step_full(&f, 1, 400e9, &db);
	cr_assert_eq(e0, e1, "symmetric %.9g s, full %.9g s", e0, e1);
}

Test(moe, expert_state_over_ep_and_edp)
{
	struct moe_case m;
	struct footprint fp;
	int64_t split[1] = { 4 };
	double dense, experts;

	/* 4 MoE layers of 8 experts (2 x 1024 x 512 each) over ep 4 on the
	 * node's 8 GPUs: a GPU holds 2 experts of each layer, 4 x 2 x
	 * 1.049e6 = 8.39e6 expert parameters; edp = 8 / 4 = 2. ZeRO-1: the
	 * fp32 master and two moments (12 B a parameter) of the dense part
	 * split over dp = 8, of the experts over edp = 2; 16-bit weights and
	 * fp32 gradients of everything held */
	moe_case_init(&m, 8, 2, 512, 4);
	m.f.job.training.zero_stage = 1;
	m.f.job.parallelism.edp = 2;	/* what the job check infers */
	moe_case_dims(&m);
	footprint_rank_params_split(&m.f.job, &m.d, split, 0, &dense, &experts);
	cr_assert(fixture_near(experts, 4 * 2 * 2 * 1024.0 * 512, 1e-12),
		  "experts %.6g", experts);
	cr_assert_eq(footprint_job(&m.f.job, 79e9, &fp), 0);
	cr_assert(fixture_near(fp.optimizer_B, 12 * (dense / 8 + experts / 2), 1e-9),
		  "optimizer %.6g B", fp.optimizer_B);
	cr_assert(fixture_near(fp.weights_B, 2 * (dense + experts), 1e-9));
	cr_assert(fixture_near(fp.grads_B, 4 * (dense + experts), 1e-9));
	moe_case_release(&m);
}

/* train_estimate against the built program, one simulated GPU a group
 * and every GPU simulated. */
static void assert_counts(struct fixture *f, const char *what)
{
	fixture_assert_estimate(&f->job, 0, what);
	fixture_assert_estimate(&f->job, 1, what);
}

Test(moe, estimate_counts_the_built_program)
{
	struct fixture f;

	/* ep 8 (edp 1), ZeRO-1 with expert buckets over edp 2 (ep 4) */
	fixture_moe(&f, 8, 2, 512, 8);
	f.job.training.global_batch_size = 32;
	assert_counts(&f, "ep 8");
	f.job.moe.a2a_overlap = 1;
	assert_counts(&f, "ep 8, paired actions");
	/* the host thread modeled (an issue task per op that costs it),
	 * and a dropless dispatch over a library all-to-all whose host
	 * waits for the exchanged counts (a sync task per MoE layer) */
	{
		struct ep_comm_spec e;

		fixture_moe(&f, 8, 2, 512, 8);
		f.job.training.global_batch_size = 32;
		fixture_ep_library(&e, "test-alltoall");
		e.host_sync = EP_SYNC_COUNTS;
		f.job.moe.dispatcher = &e;
		f.fw.host.op_s = f.fw.host.module_s = 5e-6;
		f.fw.host.kernel_s = f.fw.host.collective_s = 2e-6;
		f.fw.host.sync_s = 1e-5;
		assert_counts(&f, "ep 8, host and count sync");
	}
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.training.zero_stage = 1;
	assert_counts(&f, "ep 4, edp 2, ZeRO-1");
	f.job.training.zero_stage = 3;
	assert_counts(&f, "ep 4, edp 2, ZeRO-3");
}

/* Kernels of the op named `name` in a forward op list (0: absent). */
static double op_kernels(const struct layer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return o->op[i].k.launches < 1 ? 1 : o->op[i].k.launches;
	return 0;
}

Test(moe, mx_casts_one_kernel_per_expert)
{
	struct moe_case m;

	/* 8 experts on ep 1: 8 local experts. Transformer Engine 2.14's
	 * split_quantize quantizes each expert's rows by its own kernel in
	 * MXFP8 (per_expert_quantize): the grouped cast is 8 kernels; with
	 * the framework's flag off, or in (tensor-scaled) fp8, one. */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.job.training.dtype = DTYPE_MXFP8;
	m.f.fw.elementwise.per_expert_quantize = 1;
	moe_case_fwd(&m);
	cr_assert_eq(op_kernels(&m.o, "expert_fc1_cast"), 8);
	cr_assert_eq(op_kernels(&m.o, "expert_fc2_cast"), 8);
	moe_case_bwd(&m);
	cr_assert_eq(op_kernels(&m.o, "expert_fc2_grad_cast"), 8);
	m.f.fw.elementwise.per_expert_quantize = 0;
	moe_case_fwd(&m);
	cr_assert_eq(op_kernels(&m.o, "expert_fc1_cast"), 1);
	m.f.fw.elementwise.per_expert_quantize = 1;
	m.f.job.training.dtype = DTYPE_FP8;
	moe_case_fwd(&m);
	cr_assert_eq(op_kernels(&m.o, "expert_fc1_cast"), 1);
	moe_case_release(&m);
}

Test(moe, nvfp4_grouped_cast_is_one_split_quantize)
{
	struct moe_case m;
	const struct layer_op *c;
	/* 8 experts of 512, top-2, ep 2: 4 local experts, R = k T = 8192
	 * rows of h 1024: the fc1 input cast quantizes n = R h = 8388608
	 * elements. Transformer Engine >= 2.11 (the 2.14 Megatron-Bridge
	 * pins) quantizes NVFP4 splits together (split_quantize
	 * FUSED_NVFP4): the amaxes zeroed by one kernel, one grouped amax
	 * reading the input, then, every split a multiple of 128 rows (the
	 * grouped MLP's padding), one fused cast of both layouts: 3 kernels
	 * as the dense cast, none of them per expert (host_kernels 0), read
	 * 2 n 2 B = 33554432 B, written 2 n (0.5 + 1/16) B = 9437184 B.
	 * Unpadded splits: a row-wise and a column-wise grouped cast, 4. */
	double n = 2.0 * 4096 * 1024;

	moe_case_init(&m, 8, 2, 512, 2);
	m.f.job.training.dtype = DTYPE_NVFP4;
	m.f.fw.elementwise.per_expert_quantize = 1;	/* Megatron-Bridge's */
	m.f.fw.elementwise.expert_quant_padding = 1;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert_not_null(c);
	cr_assert(fixture_near(c->k.launches, 3, 1e-12));
	cr_assert_eq(c->host_kernels, 0);
	cr_assert(fixture_near(c->k.read_B, 4 * n, 1e-12));
	cr_assert(fixture_near(c->k.write_B, 2 * n * (0.5 + 1.0 / 16),
			       1e-12));
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "expert_fc1_grad_cast");
	cr_assert_not_null(c);
	cr_assert(fixture_near(c->k.launches, 3, 1e-12));
	cr_assert_eq(c->host_kernels, 0);
	m.f.fw.elementwise.expert_quant_padding = 0;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert(fixture_near(c->k.launches, 4, 1e-12));
	cr_assert_eq(c->host_kernels, 0);
	moe_case_release(&m);
}

Test(moe, fp8_current_scaling_quantizes_each_expert)
{
	struct moe_case m;
	const struct layer_op *c;
	/* 8 experts of 512, top-2, ep 2: 4 local experts; uniform routing
	 * gives the GPU R = k T = 2 x 4096 rows of h 1024 (the ep ranks'
	 * tokens to its half of the experts): the fc1 input cast quantizes
	 * n = R h = 8388608 elements. Delayed scaling: one fused kernel
	 * (multi_cast_transpose) reading n 2 B = 16777216 B. Current
	 * scaling: per expert the amax's zeroing, the amax, the scale and
	 * the cast (TE quantize_impl, launch_amax_kernel's zero_amax_kernel
	 * first), 4 x 4 = 16 kernels, 15 of them launched by the host after
	 * the module's first, reading the rows twice (33554432 B); the writes (rowwise and
	 * columnwise fp8, 2 n 1 B) are the same. Block scaling: one kernel
	 * per expert (4), one read. */
	double n = 2.0 * 4096 * 1024;

	moe_case_init(&m, 8, 2, 512, 2);
	m.f.job.training.dtype = DTYPE_FP8;
	m.f.job.training.fp8_scaling = FP8_DELAYED;
	/* Transformer Engine's */
	m.f.fw.elementwise.per_expert_quantize = 1;
	moe_case_dims(&m);
	cr_assert(fixture_near(m.d.moe.rows, n / 1024, 1e-12));
	layer_fwd(&m.d, &m.kind, &m.o);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert_not_null(c);
	cr_assert(c->k.launches <= 1);
	cr_assert(fixture_near(c->k.read_B, 2 * n, 1e-12));
	cr_assert(fixture_near(c->k.write_B, 2 * n, 1e-12));
	m.f.job.training.fp8_scaling = FP8_CURRENT;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert(fixture_near(c->k.launches, 16, 1e-12));
	cr_assert(fixture_near(c->k.read_B, 4 * n, 1e-12));
	cr_assert(fixture_near(c->k.write_B, 2 * n, 1e-12));
	cr_assert_eq(c->host_kernels, 15);
	m.f.job.training.fp8_scaling = FP8_BLOCK;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert(fixture_near(c->k.launches, 4, 1e-12));
	cr_assert(fixture_near(c->k.read_B, 2 * n, 1e-12));
	/* A GPU whose FP8 GEMMs take any layout (fp8_gemm_any_layout:
	 * sm100/sm103): TE allocates no transposes, so delayed scaling's
	 * fused multi_cast_transpose (which needs both layouts) is not taken
	 * and each expert's Float8Quantizer casts alone: 4 kernels, 3 from
	 * the host after the first, reading n 2 B, writing the rowwise
	 * copy only, n 1 B = 8388608 B. Current scaling: 16 kernels, 4 n B
	 * read, n 1 B written. */
	m.f.gpu.fp8_gemm_any_layout = 1;
	m.f.job.training.fp8_scaling = FP8_DELAYED;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert(fixture_near(c->k.launches, 4, 1e-12));
	cr_assert_eq(c->host_kernels, 3);
	cr_assert(fixture_near(c->k.read_B, 2 * n, 1e-12));
	cr_assert(fixture_near(c->k.write_B, n, 1e-12));
	m.f.job.training.fp8_scaling = FP8_CURRENT;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_fc1_cast");
	cr_assert(fixture_near(c->k.launches, 16, 1e-12));
	cr_assert(fixture_near(c->k.read_B, 4 * n, 1e-12));
	cr_assert(fixture_near(c->k.write_B, n, 1e-12));
	m.f.gpu.fp8_gemm_any_layout = 0;
	/* bf16 jobs have no cast whatever the setting. */
	m.f.job.training.dtype = DTYPE_BF16;
	m.f.job.training.fp8_scaling = FP8_CURRENT;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_fc1_cast"));
	moe_case_release(&m);
}

Test(moe, hybridep_gathers_the_routing_map)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	/* fixture_moe: 8 experts, top-2, ep 2; mbs 2 x seq 2048 = T 4096
	 * tokens a rank. The count exchange before a dropless dispatch is an
	 * all-gather over the 2 EP ranks (coll.h: total bytes of all ranks).
	 * E counts of 8 B: 8 x 8 x 2 = 128 B. Hybrid-EP all-gathers every
	 * rank's [T, E] torch.bool routing map instead (map_gather): 4096 x
	 * 8 x 1 B x 2 = 65536 B. Only the forward exchanges: the backward
	 * reuses the dispatch handle, so no moe_counts there. */
	moe_case_init(&m, 8, 2, 512, 2);
	fixture_ep_forward(&e, "test-counts");
	e.host_sync = EP_SYNC_COUNTS;
	m.f.job.moe.dispatcher = &e;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "moe_counts");
	cr_assert_not_null(c);
	cr_assert_eq(c->coll, COLL_ALLGATHER);
	cr_assert_float_eq(c->coll_B, 128, 1e-9);
	e.map_gather = 1;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "moe_counts");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->coll_B, 65536, 1e-9);
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_counts"));
	moe_case_release(&m);
}

Test(moe, fixed_round_robin_gate_has_no_router)
{
	struct moe_case m;
	const struct layer_op *op;
	double dense, experts, dense_fixed, experts_fixed;

	/* AutoModel's FakeBalancedGate (balance uniform, framework
	 * balanced_gate round_robin): no router GEMM or top-k; six PyTorch
	 * ops on T k = 4096 x 2 = 8192 selections: ones (write 4 B), / k
	 * (read 4, write 4), arange (write 8), % E (read 8, write 8), + 0
	 * (read 8, write 8), type_as bf16 (read 4, write 2): read 8192 x 24
	 * = 196608 B, write 8192 x 34 = 278528 B, 6 kernels; the backward
	 * has no router ops, and the gate has no parameters: the layer's
	 * dense MoE parameters lose the router's h E = 1024 x 8 = 8192
	 * (the fixture has no biases). */
	moe_case_init(&m, 8, 2, 512, 1);
	m.f.job.moe.routing.balance = ROUTE_UNIFORM;
	m.f.fw.balanced_gate = GATE_ROUND_ROBIN;
	moe_case_dims(&m);
	cr_assert(m.d.moe.fixed_gate);
	layer_fwd(&m.d, &m.kind, &m.o);
	op = fixture_op(&m.o, "router_fixed");
	cr_assert_not_null(op);
	cr_assert(fixture_near(op->k.write_B, 278528, 1e-12));
	cr_assert(fixture_near(op->k.read_B, 196608, 1e-12));
	cr_assert(fixture_near(op->k.launches, 6, 0));
	cr_assert(fixture_near(op->k.strided_B, 0, 0));
	footprint_layer_params(&m.f.job, &m.d, 0, &dense_fixed, &experts_fixed);
	cr_assert_null(fixture_op(&m.o, "router"));
	cr_assert_null(fixture_op(&m.o, "router_topk"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_dgrad"));
	cr_assert_null(fixture_op(&m.o, "router_wgrad"));
	cr_assert_null(fixture_op(&m.o, "router_topk_bwd"));
	/* Megatron's random balanced gate keeps its router */
	m.f.fw.balanced_gate = GATE_RANDOM;
	moe_case_fwd(&m);
	cr_assert_not_null(fixture_op(&m.o, "router"));
	cr_assert_null(fixture_op(&m.o, "router_fixed"));
	footprint_layer_params(&m.f.job, &m.d, 0, &dense, &experts);
	cr_assert(fixture_near(dense - dense_fixed, 1024.0 * 8, 1e-12));
	cr_assert(fixture_near(experts, experts_fixed, 1e-12));
	moe_case_release(&m);
}

/* Megatron-Core's weighted_bias_quick_geglu_impl copies its linear
 * offset to the device with a blocking copy each call (glu_offset_sync):
 * the host waits for the stream's last op before it issues the
 * activation's first kernel, the clamp, in the forward (after fc1) and
 * in moe_act's recomputation (after the bias gradient's ops, the ops
 * before it on the stream). Without the key nothing waits there. */
Test(moe, clamped_glu_offset_copy_syncs_the_host)
{
	struct moe_case m;
	const struct layer_op *op;

	moe_case_init(&m, 8, 2, 512, 1);
	m.f.model.gated_mlp = 1;
	m.f.model.mlp_bias = 1;
	m.f.model.swiglu_limit = 7;
	m.f.model.quick_glu = 1;
	m.f.fw.elementwise.expert_bias_kernels = 1;
	m.f.fw.elementwise.glu_clamp_kernels = 1;
	moe_case_dims(&m);
	cr_assert(!m.d.moe.glu_sync);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_eq(fixture_op(&m.o, "expert_clamp")->host_wait, LAYER_NONE);
	m.f.fw.elementwise.glu_offset_sync = 1;
	moe_case_dims(&m);
	cr_assert(m.d.moe.glu_sync);
	layer_fwd(&m.d, &m.kind, &m.o);
	op = fixture_op(&m.o, "expert_clamp");
	cr_assert_eq(op->host_wait, fixture_op(&m.o, "expert_fc1") - m.o.op);
	cr_assert_eq(op - m.o.op, op->host_wait + 1);
	m.d.rc_mods = 1u << RCM_MOE_ACT;
	layer_bwd(&m.d, &m.kind, LREC_SELECTIVE, &m.o);
	op = fixture_op(&m.o, "expert_clamp");
	cr_assert_not_null(op);
	cr_assert_eq(op->pass, PASS_RECOMPUTE);
	cr_assert_eq(op->host_wait,
		     fixture_op(&m.o, "expert_bias_bwd") - m.o.op);
	/* The copy is the quick-GEGLU's (weighted_bias_quick_geglu_impl,
	 * with or without a clamp value), not the clamp's: a clamped SwiGLU
	 * (weighted_bias_swiglu_impl) does not wait; an unclamped quick GEGLU
	 * waits before its activation, its first kernel. */
	m.f.model.quick_glu = 0;
	moe_case_dims(&m);
	cr_assert(!m.d.moe.glu_sync);
	m.f.model.quick_glu = 1;
	m.f.model.swiglu_limit = 0;
	moe_case_dims(&m);
	cr_assert(m.d.moe.glu_sync);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_null(fixture_op(&m.o, "expert_clamp"));
	op = fixture_op(&m.o, "expert_act");
	cr_assert_eq(op->host_wait, op - m.o.op - 1);
	moe_case_release(&m);
}

/* NeMo AutoModel's MoE.forward runs the shared experts on a side stream
 * (framework shared_expert_stream): the same layer as the job's
 * moe.shared_expert_overlap, the shared MLP after the dispatch is issued
 * instead of before the router. A model without shared experts gets
 * nothing from it: no overlap and no shared output to add. */
Test(moe, framework_shared_expert_stream_overlaps_the_dispatch)
{
	struct moe_case m;
	struct layer_ops job_overlap;
	int i;

	moe_case_init(&m, 8, 2, 512, 8);
	m.f.model.n_shared_experts = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.shared_overlap, 0);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_lt(fixture_op_index(&m.o, "shared_fc1"),
		     fixture_op_index(&m.o, "moe_dispatch"));
	m.f.job.moe.shared_expert_overlap = 1;
	moe_case_dims(&m);
	layer_fwd(&m.d, &m.kind, &job_overlap);
	m.f.job.moe.shared_expert_overlap = 0;
	m.f.fw.shared_expert_stream = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.shared_overlap, 1);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_gt(fixture_op_index(&m.o, "shared_fc1"),
		     fixture_op_index(&m.o, "moe_dispatch"));
	cr_assert_eq(m.o.n, job_overlap.n);
	for (i = 0; i < m.o.n; i++)
		cr_assert_str_eq(m.o.op[i].name, job_overlap.op[i].name);
	/* no shared experts: the flag changes nothing */
	m.f.model.n_shared_experts = 0;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.shared_overlap, 0);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_eq(fixture_op_index(&m.o, "moe_shared_add"), -1);
	moe_case_release(&m);
}

Test(moe, hybridep_stages_its_input_across_nodes)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	/* fixture_moe: 8 experts, top-2, ep 2, h 1024, bf16; T = mbs 2 x seq
	 * 2048 = 4096 tokens a rank. Hybrid-EP's dispatch_preprocess copies
	 * its input into the RDMA buffer only when there is more than one
	 * NVLink domain (stage_input): with 8 GPUs a node the 2 ranks share
	 * one, no copy. */
	moe_case_init(&m, 8, 2, 512, 2);
	fixture_ep_forward(&e, "test-stage");
	e.stage_input = 1;
	m.f.job.moe.dispatcher = &e;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_dispatch_stage"));
	/* one GPU a node: the group spans 2 nodes. The forward copies the
	 * bf16 rows and the [T, E] fp32 probabilities, read and written:
	 * 4096 x (1024 x 2 + 8 x 4) = 8,519,680 B */
	m.f.sys.gpus_per_node = 1;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "moe_dispatch_stage");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 4096.0 * (1024 * 2 + 8 * 4), 1e-6);
	cr_assert_float_eq(c->k.write_B, c->k.read_B, 1e-6);
	/* the backward's dispatch (the combine's backward) copies the bf16
	 * gradient rows only: 4096 x 2048 = 8,388,608 B */
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "moe_dispatch_stage");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 4096.0 * 1024 * 2, 1e-6);
	/* without the key: none */
	e.stage_input = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_dispatch_stage"));
	moe_case_release(&m);
}
