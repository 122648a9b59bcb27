/*
 * test_infer_tbo.c - two-batch overlap of an inference step's MoE layers
 * (infer_tbo.c: SGLang's operations_strategy.py yields) and redundant
 * experts (moe.redundant_experts: EPLB's replicas, route.c).
 *
 * Base job: tests/data/serve/q30-h100.yaml over the shipped presets, on
 * 8 H100s with attention DP (tp 1, dp 8, ep 8) and SGLang, the model
 * DeepSeek-V2-Lite where shared experts matter (64 routed experts, 2
 * shared, top-6, MLA).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "models/route.h"
#include "run/infer_run.h"

#include "fixture.h"

#define Q30 "tests/data/serve/q30-h100.yaml"

static const char *const adp_sets[] = {
	"model=deepseek-v2-lite", "system.gpus_per_node=8",
	"serving.engine=sglang", "parallelism.tp=1", "parallelism.dp=8",
	"parallelism.ep=8", "parallelism.attention_dp=true",
	"moe.dispatcher=deepep-ll", "serving.batch=64",
};

/* The MoE layer's ops of the base job with TBO on or off, for a decode
 * step (phase decode) or a prefill one. */
static void moe_ops(int tbo, int prefill, struct infer_ops *o,
		    struct infer_dims *d)
{
	const char *sets[16];
	size_t n = 0, i;

	for (i = 0; i < sizeof(adp_sets) / sizeof(*adp_sets); i++)
		sets[n++] = adp_sets[i];
	sets[n++] = tbo ? "serving.engine.two_batch_overlap=true" :
			  "serving.engine.two_batch_overlap=false";
	if (prefill) {
		sets[n++] = "phase=prefill";
		sets[n++] = "serving.input_len=256";
	}
	fixture_infer_moe_ops(Q30, sets, n, -1, d, o);
}

/* The index of the op named name in o; fails the test without one. */
static int index_of(const struct infer_ops *o, const char *name)
{
	int i = fixture_infer_op_index(o, name);

	cr_assert_geq(i, 0, "no op %s", name);
	return i;
}

static int yields(const struct infer_ops *o)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		n += o->op[i].tbo_yield;
	return n;
}

/*
 * SGLang's decode strategy (_compute_moe_deepseek_blog_decode) has five
 * yields a layer: after the attention's projections (op_prepare), after
 * op_select_experts, after op_dispatch_a + op_shared_experts, after
 * op_combine_a, after op_combine_b. So the stages start at the first
 * attention kernel, the dispatch, the first op on the received rows
 * (expert_sort), the combine's wait (unpermute) and the output
 * (moe_shared_add); the shared experts run between the dispatch and its
 * wait, not waiting for it. Without TBO: no yields, the shared experts
 * first.
 */
Test(infer_tbo, decode_stages_follow_sglang)
{
	struct infer_ops o;
	struct infer_dims d;
	int i, attn = -1, disp, sort, sh;

	moe_ops(1, 0, &o, &d);
	cr_assert(d.moe.tbo);
	cr_assert_eq(yields(&o), 5);
	for (i = 0; i < o.n && attn < 0; i++)
		if (o.op[i].tbo_yield)
			attn = i;
	cr_assert_lt(attn, index_of(&o, "router"));
	disp = index_of(&o, "moe_dispatch");
	sort = index_of(&o, "expert_sort");
	sh = index_of(&o, "shared_gate_up");
	cr_assert(o.op[disp].tbo_yield);
	cr_assert(o.op[sort].tbo_yield);
	cr_assert(o.op[index_of(&o, "unpermute")].tbo_yield);
	cr_assert(o.op[index_of(&o, "moe_shared_add")].tbo_yield);
	cr_assert(disp < sh && sh < sort);
	cr_assert(o.op[sh].ep_free && o.op[index_of(&o, "shared_down")].ep_free);
	cr_assert(!o.op[sort].ep_free);
	moe_ops(0, 0, &o, &d);
	cr_assert_eq(yields(&o), 0);
	cr_assert_lt(index_of(&o, "shared_gate_up"), index_of(&o, "router"));
	cr_assert(!o.op[index_of(&o, "shared_gate_up")].ep_free);
}

/*
 * The prefill strategy (_compute_moe_deepseek_blog_prefill) yields twice
 * a layer: after op_dispatch_a and after op_combine_a, and runs the
 * shared experts after the combine is issued: stages start at
 * expert_sort and at shared_gate_up, which precedes the combine's wait.
 */
Test(infer_tbo, prefill_stages_follow_sglang)
{
	struct infer_ops o;
	struct infer_dims d;
	int comb, sh, unp;

	moe_ops(1, 1, &o, &d);
	cr_assert_eq(yields(&o), 2);
	comb = index_of(&o, "moe_combine");
	sh = index_of(&o, "shared_gate_up");
	unp = index_of(&o, "unpermute");
	cr_assert(o.op[index_of(&o, "expert_sort")].tbo_yield);
	cr_assert(o.op[sh].tbo_yield && o.op[sh].ep_free);
	cr_assert(comb < sh && sh < unp);
	cr_assert(!o.op[unp].ep_free);
}

/* No all-to-all, no overlap: TP attention (nothing dispatched) and the
 * all-gather exchange (TensorRT-LLM's adp_moe_allgather) leave it off. */
Test(infer_tbo, off_without_an_all_to_all)
{
	const char *tp[] = {"serving.engine=sglang",
			    "serving.engine.two_batch_overlap=true",
			    "system.gpus_per_node=8", "parallelism.tp=8",
			    "parallelism.ep=8"};
	const char *ag[] = {"serving.engine=trtllm",
			    "serving.engine.two_batch_overlap=true",
			    "system.gpus_per_node=8", "parallelism.tp=1",
			    "parallelism.dp=8", "parallelism.ep=8",
			    "parallelism.attention_dp=true"};
	struct arena a;
	struct infer_dims d;
	struct job_spec *j;

	arena_init(&a);
	j = fixture_load_job(&a, Q30, tp, 5);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert(!d.moe.tbo);
	j = fixture_load_job(&a, Q30, ag, 7);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert(!d.moe.tbo);
	arena_release(&a);
}

static struct job_spec *wide_ep_job_with(struct arena *a, int tbo,
					   int prefill, const char *extra,
					   const char *extra2)
{
	const char *sets[24];
	size_t n = 0, i;

	for (i = 0; i < sizeof(adp_sets) / sizeof(*adp_sets); i++)
		sets[n++] = adp_sets[i];
	sets[n++] = tbo ? "serving.engine.two_batch_overlap=true" :
			  "serving.engine.two_batch_overlap=false";
	sets[n++] = "model=deepseek-v3";
	sets[n++] = "serving.dtype=fp8";
	sets[n++] = "system.nodes=8";	/* the EP traffic over RDMA */
	sets[n++] = "parallelism.dp=64";
	sets[n++] = "parallelism.ep=64";
	sets[n++] = "serving.batch=16384";
	if (prefill) {		/* 2 prompts of 1024 tokens a GPU */
		sets[n++] = "phase=prefill";
		sets[n++] = "serving.batch=128";
		sets[n++] = "serving.input_len=1024";
	}
	if (extra)
		sets[n++] = extra;
	if (extra2)
		sets[n++] = extra2;
	return fixture_load_job(a, Q30, sets, n);
}

static struct job_spec *wide_ep_job(struct arena *a, int tbo, int prefill)
{
	return wide_ep_job_with(a, tbo, prefill, NULL, NULL);
}

static void run_step(int tbo, struct infer_result *r)
{
	struct arena a;
	struct diag dg;

	arena_init(&a);
	diag_init(&dg, stderr);
	cr_assert_eq(infer_run(wide_ep_job(&a, tbo, 0), NULL, r, &dg), 0);
	arena_release(&a);
}

static double ep_time(const struct infer_result *r)
{
	double t = 0;
	uint32_t i;

	for (i = 0; i < r->ncolls; i++)
		if (strcmp(r->colls[i].name, "moe_dispatch") == 0 ||
		    strcmp(r->colls[i].name, "moe_combine") == 0)
			t += r->colls[i].time_s;
	return t;
}

/*
 * DeepSeek-V3 FP8 decode on 8 DGX H100 at ep 64 (4 experts a GPU, as
 * SGLang's wide-EP runs), 256 sequences a GPU: the dispatches and
 * combines of the two halves share the ep stream one after another, so
 * the step takes at least their summed time; the kernels of one half run
 * beside the other half's collectives, so it is shorter than the step
 * without TBO, where every layer waits for its own (compute + exposed
 * collectives), and less of the collectives is exposed.
 */
Test(infer_tbo, halves_overlap_the_collectives)
{
	struct infer_result on, off;

	run_step(1, &on);
	run_step(0, &off);
	cr_assert(on.info.tbo);
	cr_assert(!off.info.tbo);
	cr_assert_lt(on.step_s, off.step_s);
	cr_assert_geq(on.gpu_s, ep_time(&on) * (1 - 1e-9));
	cr_assert_lt(on.part_s[EXEC_EXPOSED_COMM],
		     off.part_s[EXEC_EXPOSED_COMM]);
	infer_result_release(&on);
	infer_result_release(&off);
}

/* The prefill step of wide_ep_job on DeepEP's normal kernels with TBO
 * on or off, the dispatcher's busy_rate set to busy. */
static void prefill_busy(int tbo, const char *busy, struct infer_result *r)
{
	struct arena a;
	struct diag dg;
	struct job_spec *j;

	arena_init(&a);
	diag_init(&dg, stderr);
	j = wide_ep_job_with(&a, tbo, 1, "moe.dispatcher=deepep", busy);
	cr_assert_eq(infer_run(j, NULL, r, &dg), 0);
	arena_release(&a);
}

/*
 * Serving's dispatch and combine follow training's comm-side rule
 * (ep_busy.c): a call progresses at the dispatcher's busy_rate x while
 * compute runs on its GPUs, so each call lasts between its time alone
 * t and t / x. Without TBO nothing computes beside them (each layer
 * waits for its own dispatch and combine): x changes nothing. With TBO
 * the other half's kernels run beside them: at x = 0.5 the calls last
 * longer than at x = 1, and at most twice as long.
 */
Test(infer_tbo, prefill_collectives_slow_beside_compute)
{
	struct infer_result one, half;

	prefill_busy(0, "moe.dispatcher.busy_rate=1", &one);
	prefill_busy(0, "moe.dispatcher.busy_rate=0.5", &half);
	cr_assert(!one.info.tbo);
	cr_assert_float_eq(ep_time(&half), ep_time(&one),
			   1e-9 * ep_time(&one));
	infer_result_release(&one);
	infer_result_release(&half);
	prefill_busy(1, "moe.dispatcher.busy_rate=1", &one);
	prefill_busy(1, "moe.dispatcher.busy_rate=0.5", &half);
	cr_assert(one.info.tbo);
	cr_assert_gt(ep_time(&half), ep_time(&one) * 1.01,
		     "x 0.5 %.6g s, x 1 %.6g s", ep_time(&half),
		     ep_time(&one));
	cr_assert_leq(ep_time(&half), 2 * ep_time(&one) * (1 + 1e-9));
	cr_assert_gt(half.step_s, one.step_s);
	infer_result_release(&one);
	infer_result_release(&half);
}

/*
 * The serving stepper times a stage's run of n MoE layers as the first
 * layer of a run plus n - 1 times what a second layer adds: the halves'
 * stages repeat layer after layer once both are in, so it is the full
 * program's time of the step (58 MoE layers after 3 dense ones), decode
 * and prefill.
 */
Test(infer_tbo, stepper_times_the_run_as_the_full_program)
{
	struct arena a;
	struct infer_result r;
	struct job_spec *j;
	struct diag dg;
	double lat;
	int prefill;

	diag_init(&dg, stderr);
	for (prefill = 0; prefill < 2; prefill++) {
		arena_init(&a);
		j = wide_ep_job(&a, 1, prefill);
		cr_assert_eq(infer_run(j, NULL, &r, &dg), 0);
		cr_assert(r.info.tbo);
		lat = fixture_step_latency(j);
		cr_assert_float_eq(lat, r.gpu_s, 1e-6 * r.gpu_s,
				   "stepper %.6g s, full %.6g s", lat,
				   r.gpu_s);
		infer_result_release(&r);
		arena_release(&a);
	}
}

/*
 * The first half batch's head start is the engine file's: SGLang's
 * decode strategy tbo_delta_stages 2, its prefill one 0
 * (workloads/engines/sglang.yaml). Set to 0 for decode, the halves'
 * stages pair differently (A_k with B_k, not A_{k+2} with B_k: each
 * dispatch issued beside the other half's, not beside its attention),
 * so the step's program and its time change.
 */
Test(infer_tbo, head_start_is_the_engine_files)
{
	struct arena a;
	struct infer_result two, none;
	struct infer_dims d;
	struct job_spec *j;
	struct diag dg;

	arena_init(&a);
	diag_init(&dg, stderr);
	j = wide_ep_job(&a, 1, 0);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert_eq(d.moe.tbo_delta[0], 2);
	cr_assert_eq(d.moe.tbo_delta[1], 0);
	cr_assert_eq(infer_run(j, NULL, &two, &dg), 0);
	j = wide_ep_job_with(&a, 1, 0,
			     "serving.engine.tbo_decode_delta_stages=0", NULL);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert_eq(d.moe.tbo_delta[0], 0);
	cr_assert_eq(infer_run(j, NULL, &none, &dg), 0);
	cr_assert(two.info.tbo && none.info.tbo);
	cr_assert_neq(two.gpu_s, none.gpu_s);
	infer_result_release(&two);
	infer_result_release(&none);
	arena_release(&a);
}

/*
 * EPLB's global policy on 4 experts of loads 0.4, 0.3, 0.2, 0.1, 6 slots
 * on 2 ranks (2 redundant). replicate_experts: the largest load a replica
 * first takes one, 0.4 -> 2 x 0.2; then 0.3 (against 0.2, 0.2, 0.1) ->
 * 2 x 0.15. The replicas 0.2 (e0), 0.2 (e0), 0.2 (e2), 0.15, 0.15 (e1),
 * 0.1 (e3), heaviest first onto the lighter rank with a free slot: r0
 * 0.2; r1 0.2; r0 0.4 (tie: the first); r1 0.35; r1 0.5 (full, 3
 * slots); r0 0.5. Rank 0: 0.2, 0.2, 0.1; rank 1: 0.2, 0.15, 0.15; both
 * 0.5 (without replicas the best two-and-two split is 0.5 / 0.5 too, but
 * 0.4 + 0.3 on one rank is what a contiguous placement gives).
 */
Test(infer_tbo, eplb_replicates_and_packs)
{
	const double p[4] = {0.4, 0.3, 0.2, 0.1};
	const double want[6] = {0.2, 0.2, 0.1, 0.2, 0.15, 0.15};
	double q[6];
	struct arena a;
	int i;

	arena_init(&a);
	cr_assert_eq(route_eplb_slots(p, 4, 6, 2, q, &a), 0);
	for (i = 0; i < 6; i++)
		cr_assert_float_eq(q[i], want[i], 1e-12, "slot %d: %g", i,
				   q[i]);
	arena_release(&a);
}

/*
 * Redundant experts hold slots: Qwen3-30B-A3B (128 experts, h 2048,
 * expert width 768, gated) with 64 redundant on ep 12 (attention DP over
 * 12 GPUs; 128 alone does not divide by 12): 192 / 12 = 16 slots a GPU.
 * The MoE layer's parameters on a GPU: the router h E = 2048 x 128 =
 * 262,144 plus 16 x 3 x 2048 x 768 = 75,497,472 = 75,759,616.
 */
Test(infer_tbo, redundant_experts_hold_slots)
{
	const char *sets[] = {"system.gpus_per_node=12", "parallelism.tp=1",
			      "parallelism.dp=12", "parallelism.ep=12",
			      "parallelism.attention_dp=true",
			      "serving.engine=sglang",
			      "moe.redundant_experts=64"};
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;

	arena_init(&a);
	j = fixture_load_job(&a, Q30, sets, 7);
	cr_assert_eq(job_expert_slots(j), 192);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert_float_eq(d.moe.local, 16.0, 1e-12);
	cr_assert_float_eq(infer_moe_params(&d), 75759616.0, 1e-3);
	arena_release(&a);
}

/* ep 12 divides neither 128 experts nor, without redundant experts, the
 * slots; a training job takes no replicas: both bad input. */
Test(infer_tbo, redundant_experts_bad_input)
{
	const char *noslots[] = {"system.gpus_per_node=12",
				 "parallelism.tp=1", "parallelism.dp=12",
				 "parallelism.ep=12",
				 "parallelism.attention_dp=true",
				 "serving.engine=sglang",
				 "moe.redundant_experts=8"};
	const char *train[] = {"moe.redundant_experts=32"};
	struct arena a;
	struct diag dg;
	struct config_ctx cx;
	struct job_spec *j;

	arena_init(&a);
	diag_init(&dg, NULL);
	cx = (struct config_ctx){&a, &dg, "."};
	j = arena_alloc(&a, sizeof(*j));
	memset(j, 0, sizeof(*j));
	cr_assert_neq(config_load(&cx, &job_schema, Q30, noslots, 7, j), 0);
	memset(j, 0, sizeof(*j));
	cr_assert_neq(config_load(&cx, &job_schema,
				  "workloads/jobs/deepseek-v3-2048.yaml",
				  train, 1, j), 0);
	arena_release(&a);
}

/* Warnings infer_run reports for the base job with TBO set and the
 * given extra settings. */
static unsigned tbo_warnings(const char *const *extra, size_t nx)
{
	const char *sets[24];
	size_t n = 0, i;
	struct arena a;
	struct diag dg;
	struct infer_result r;

	for (i = 0; i < sizeof(adp_sets) / sizeof(*adp_sets); i++)
		sets[n++] = adp_sets[i];
	sets[n++] = "serving.engine.two_batch_overlap=true";
	for (i = 0; i < nx; i++)
		sets[n++] = extra[i];
	arena_init(&a);
	diag_init(&dg, NULL);
	cr_assert_eq(infer_run(fixture_load_job(&a, Q30, sets, n), NULL, &r,
			       &dg), 0);
	infer_result_release(&r);
	arena_release(&a);
	return dg.warnings;
}

/*
 * Two-batch overlap asked for but not run says so, once: the base job
 * (8 attention-DP ranks, DeepEP low-latency, 64 sequences) runs it and
 * warns of nothing; one sequence a rank (batch 8 over 8 ranks) leaves
 * nothing to split; attention TP 8 (no attention DP) and the engine's
 * all-gather exchange have no all-to-all to overlap.
 */
Test(infer_tbo, set_but_not_run_warns_once)
{
	const char *one_seq[] = {"serving.batch=8"};
	const char *no_adp[] = {"parallelism.tp=8", "parallelism.dp=1",
				"parallelism.attention_dp=false"};
	const char *gather[] = {"moe.dispatcher=allgather"};

	cr_assert_eq(tbo_warnings(NULL, 0), 0);
	cr_assert_eq(tbo_warnings(one_seq, 1), 1);
	cr_assert_eq(tbo_warnings(no_adp, 3), 1);
	cr_assert_eq(tbo_warnings(gather, 1), 1);
}
