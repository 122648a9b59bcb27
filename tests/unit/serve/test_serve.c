/*
 * test_serve.c - the serving simulation: Little's law, saturation with
 * the arrival rate, preemption exactly when the KV pool is full,
 * determinism, trace files, speculative decoding and the disaggregated
 * KV transfer.
 *
 * Jobs are the YAML files of tests/data/serve over the shipped presets
 * (the tests run from the repository root).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../config/config_testutil.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "serve/serve_impl.h"
#include "../models/fixture.h"
#include "serve_fixture.h"

#define L8 "tests/data/serve/l8-h100-tp1.yaml"
#define L70 "tests/data/serve/l70-h100-tp8.yaml"

/*
 * Little's law, L = lambda W. Over the run's span T (first arrival to last
 * completion) the time-average in-system count is the integral of N(t)
 * over T, which is the sum of the requests' times in the system, so
 * L = (n / T) W exactly (to rounding) for the realized rate n / T. Against
 * the offered rate it holds within the sampling error of a Poisson count:
 * 400 arrivals, relative standard deviation 1 / sqrt(400) = 5 %: 3 sigma,
 * 15 %.
 */
Test(serve, littles_law)
{
	const char *sets[] = {"serving.arrival_rate=4", "serving.requests=400"};
	struct serve_result r;
	double lw;

	serve_fixture_run(L8, sets, 2, &r);
	cr_assert_eq(r.completed, 400);
	lw = r.requests_per_s * r.mean_e2e_s;
	cr_assert_float_eq(r.mean_in_system, lw, 1e-9 * lw,
			   "L %g, lambda W %g", r.mean_in_system, lw);
	cr_assert_float_eq(r.offered_rate * r.mean_e2e_s, r.mean_in_system,
			   0.15 * r.mean_in_system);
}

/*
 * Throughput saturates with the arrival rate. 1000 requests of 200 prompt
 * and 100 output tokens (their KV, 300k tokens at most, fits the pool's
 * 436k: no preemption to muddy it). At 2 requests/s the engine keeps up:
 * 2 x 100 = 200 output tokens/s, within 10 % (the sampling error of 1000
 * Poisson arrivals, 3 / sqrt(1000) = 9.5 %). It grows with the rate
 * (never falling by more than 2 %), and no rate beats the offline run by
 * more than 2 %, which it approaches: at 512 requests/s within 10 %.
 */
Test(serve, throughput_saturates_with_arrival_rate)
{
	static const char *const rates[] = {"2", "8", "32", "128", "512",
					    "inf"};
	double tput[6];
	size_t i;

	for (i = 0; i < 6; i++) {
		char set[64];
		const char *sets[] = {set, "serving.requests=1000",
				      "serving.input_len=200",
				      "serving.output_len=100"};
		struct serve_result r;

		snprintf(set, sizeof(set), "serving.arrival_rate=%s", rates[i]);
		serve_fixture_run(L8, sets, 4, &r);
		cr_assert_eq(r.preemptions, 0);
		tput[i] = r.output_tokens_per_s;
	}
	cr_assert_float_eq(tput[0], 200.0, 20.0);
	for (i = 1; i < 6; i++)
		cr_assert_geq(tput[i], 0.98 * tput[i - 1], "rate %s: %g < %g",
			      rates[i], tput[i], tput[i - 1]);
	for (i = 0; i < 5; i++)
		cr_assert_leq(tput[i], 1.02 * tput[5]);
	cr_assert_float_eq(tput[4], tput[5], 0.1 * tput[5]);
	cr_assert_gt(tput[5], 20 * tput[0]);
}

/*
 * Preemption happens exactly when the KV pool is full. One vLLM instance
 * of 10 pages of 16 tokens, three requests of 48 prompt tokens (3 pages
 * each). Step 1 prefills all three: 9 pages, 1 free. Step 2 decodes:
 * request 0 needs 49 tokens = 4 pages, takes the free one (0 left);
 * request 1 needs a 4th page, none is free, so the last running request
 * (2) is preempted, freeing 3; request 1 takes one. Exactly one
 * preemption, and only at that moment.
 */
/* One vLLM-like instance of 10 pages of 16 tokens, at most 8 sequences
 * and 2,048 tokens a step, chunked prefill, one stage, step tag 1. */
static void inst_init(struct serve_inst *in)
{
	memset(in, 0, sizeof(*in));
	in->role = ROLE_BOTH;
	in->pages = in->free_pages = 10;
	in->block = 16;
	in->full_groups = 1;	/* every layer one group (serve_impl.h kv_pages_at) */
	in->max_seqs = 8;
	in->max_tokens = 2048;
	in->chunked = 1;
	in->chunked_req = -1;
	in->pp = 1;
	in->tag = 1;
}

Test(serve, preemption_exactly_when_full)
{
	struct arena a;
	struct job_spec *j;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[3];
	struct infer_batch b;
	int64_t i;

	arena_init(&a);
	j = fixture_load_job(&a, L8, NULL, 0);
	memset(&s, 0, sizeof(s));
	s.job = j;
	s.req = req;
	s.nreq = 3;
	inst_init(&in);
	for (i = 0; i < 3; i++) {
		memset(&req[i], 0, sizeof(req[i]));
		req[i].input = req[i].prompt = 48;
		req[i].output = 100;
		req[i].instance = 0;
		req[i].first_scheduled_s = req[i].first_token_s = -1;
		req[i].done_s = -1;
		req[i].state = REQ_WAITING;
		cr_assert_eq(rq_push_back(&in.waiting, i), 0);
	}
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 3);
	cr_assert_eq(in.free_pages, 1);
	cr_assert_eq(in.preemptions, 0);
	serve_step_done(&s, &in, 1, 1);
	in.tag = 2;
	cr_assert_eq(serve_schedule(&s, &in, 1, &b), 2);
	cr_assert_eq(in.preemptions, 1);
	cr_assert_eq(req[2].state, REQ_WAITING);
	cr_assert_eq(req[2].pages, 0);
	cr_assert_eq(req[0].pages, 4);
	cr_assert_eq(req[1].pages, 4);
	cr_assert_eq(in.free_pages, 2);
	/* it recomputes its prompt and the token it had generated */
	cr_assert_eq(req[2].prompt, 49);
	rq_release(&in.waiting);
	mem_free(in.running);
	arena_release(&a);
}

/*
 * vLLM V1's lookahead slots (serve_kv_slots): with an EAGLE head of k = 2
 * drafts, a decoding request of 44 computed tokens verifies 1 + 2 = 3 in
 * its step and vLLM's allocate_slots adds num_lookahead_tokens = 2: 49
 * slots, 4 pages of 16 (3 pages, 48 tokens, without the lookahead, as
 * SGLang holds). serving.max_model_len 48 caps the slots at 48: 3 pages.
 */
static int64_t pages_after_verify(const char *const *sets, size_t n)
{
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req r;
	struct infer_batch b;
	int64_t pages;

	arena_init(&a);
	memset(&s, 0, sizeof(s));
	memset(&r, 0, sizeof(r));
	s.job = fixture_load_job(&a, L8, sets, n);
	s.req = &r;
	s.nreq = 1;
	inst_init(&in);
	r.input = r.prompt = r.computed = 44;
	r.output = 100;
	r.generated = 1;
	r.first_scheduled_s = r.first_token_s = 0;
	r.done_s = -1;
	r.state = REQ_RUNNING;
	r.pages = 3;
	in.free_pages -= 3;
	cr_assert_eq(serve_running_add(&in, 0), 0);
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 1);
	cr_assert_eq(r.step_q, 3);
	pages = r.pages;
	mem_free(in.running);
	arena_release(&a);
	return pages;
}

Test(serve, vllm_lookahead_slots)
{
	const char *eagle[] = {"serving.speculative.method=eagle",
			       "serving.speculative.tokens=2",
			       "serving.speculative.acceptance_rate=0.6"};
	const char *capped[] = {"serving.speculative.method=eagle",
				"serving.speculative.tokens=2",
				"serving.speculative.acceptance_rate=0.6",
				"serving.max_model_len=48",
				"serving.input_len=16", "serving.output_len=16"};
	const char *sglang[] = {"serving.speculative.method=eagle",
				"serving.speculative.tokens=2",
				"serving.speculative.acceptance_rate=0.6",
				"serving.engine=sglang"};

	cr_assert_eq(pages_after_verify(eagle, 3), 4);
	cr_assert_eq(pages_after_verify(capped, 6), 3);
	cr_assert_eq(pages_after_verify(sglang, 4), 3);
}

/* With ample KV (436k tokens for 300 requests of ~600) no request is
 * preempted and the pool never fills; with a pool of about 18k tokens
 * (memory_fraction 0.26: 30 sequences of mean length) preemptions happen,
 * the pool fills, and every request still completes. */
Test(serve, preemptions_only_with_a_full_pool)
{
	const char *small[] = {"serving.engine.memory_fraction=0.26"};
	struct serve_result r;

	serve_fixture_run(L8, NULL, 0, &r);
	cr_assert_eq(r.preemptions, 0);
	cr_assert_lt(r.kv_peak_frac, 1.0);
	serve_fixture_run(L8, small, 1, &r);
	cr_assert_gt(r.preemptions, 0);
	cr_assert_float_eq(r.kv_peak_frac, 1.0, 1e-12);
	cr_assert_eq(r.completed, r.requests);
}

Test(serve, same_seed_same_run)
{
	const char *s2[] = {"serving.seed=2"};
	struct serve_result a, b, c;

	serve_fixture_run(L8, NULL, 0, &a);
	serve_fixture_run(L8, NULL, 0, &b);
	serve_fixture_run(L8, s2, 1, &c);
	cr_assert_eq(a.output_tokens_per_s, b.output_tokens_per_s);
	cr_assert_eq(a.ttft.p99, b.ttft.p99);
	cr_assert_neq(a.output_tokens, c.output_tokens);
}

/*
 * Speculative decoding: with k = 4 drafts accepted with probability p
 * each (given the ones before), a verify step keeps 1 + a tokens, E[1 + a]
 * = (1 - p^5) / (1 - p). acceptance_length 3 sets that mean; the run's
 * mean over thousands of verify steps is within 3 % of it (requests
 * ending early cut some steps short, which can only lower it).
 */
Test(serve, speculative_tokens_per_step)
{
	const char *sets[] = {"serving.speculative.method=eagle",
			      "serving.speculative.tokens=4",
			      "serving.speculative.acceptance_length=3"};
	struct serve_result r, base;

	serve_fixture_run(L8, sets, 3, &r);
	serve_fixture_run(L8, NULL, 0, &base);
	cr_assert_float_eq(r.spec_tokens_per_step, 3.0, 0.09);
	cr_assert_leq(r.spec_tokens_per_step, 3.0 + 0.03);
	/* fewer steps, lower per-token latency */
	cr_assert_lt(r.tpot.mean, base.tpot.mean);
}

/*
 * Disaggregated: the KV sent is each prompt's tokens x the KV of one
 * token of the whole model: 2 x 80 layers x 8 KV heads x 128 x 2 B =
 * 327,680 B for Llama 3 70B bf16 (tp 4 prefill instances: 1/4 of it per
 * GPU, from all four). 200 requests of 512 tokens, all with more than
 * one output token: 200 x 512 x 327,680 B.
 */
Test(serve, disaggregated_kv_transfer)
{
	const char *sets[] = {"serving.disaggregated.enabled=true",
			      "serving.disaggregated.prefill={instances: 1, tp: 4}",
			      "serving.disaggregated.decode={instances: 1, tp: 4}",
			      "serving.disaggregated.transfer=scale_up",
			      "system.nodes=1"};
	struct serve_result r;

	serve_fixture_run(L70, sets, 5, &r);
	cr_assert_eq(r.completed, 200);
	cr_assert_float_eq(r.kv_transfer_bytes, 200.0 * 512 * 327680,
			   1e-6 * 200.0 * 512 * 327680);
	cr_assert_gt(r.kv_transfer_mean_s, 0);
	cr_assert_eq(r.instances, 2);
	cr_assert_eq(r.gpus, 8);
}

/* A trace file: rows sorted by arrival, with a note at the first out of
 * order; bad rows reported at their line and column, all of them. */
Test(serve, trace_files)
{
	char dir[] = "/tmp/llmsim-trace-XXXXXX", good[256], bad[256], set[300];
	const char *sets[] = {set};
	struct arena a;
	struct job_spec *j;
	struct serve_req *req;
	struct capture c;
	int64_t n;
	FILE *f;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.csv", dir);
	snprintf(bad, sizeof(bad), "%s/bad.csv", dir);
	f = fopen(good, "w");
	fputs("arrival_s,input_len,output_len\n# a comment\n"
	      "2.5,100,10\n0,200,20\n\n1.0, 300 , 30\n", f);
	fclose(f);
	f = fopen(bad, "w");
	fputs("0,100,10\n1,abc,10\n2,100,0\n3,100\n", f);
	fclose(f);
	arena_init(&a);
	snprintf(set, sizeof(set), "serving.trace=%s", good);
	j = fixture_load_job(&a, L8, sets, 1);
	capture_begin(&c);
	cr_assert_eq(serve_requests(j, &req, &n, &c.d), 0);
	cr_assert_eq(n, 3);
	cr_assert_eq(req[0].arrival_s, 0);
	cr_assert_eq(req[0].input, 200);
	cr_assert_eq(req[1].input, 300);
	cr_assert_eq(req[2].output, 10);
	/* line 4 (0 s) is the first after a later arrival (2.5 s, line 3) */
	cr_assert(strstr(capture_text(&c), "good.csv:4:1: note: arrival 0 s "
			 "comes after 2.5 s on an earlier row: the requests "
			 "are replayed in arrival order"), "%s",
		  capture_text(&c));
	mem_free(req);
	snprintf(set, sizeof(set), "serving.trace=%s", bad);
	j = fixture_load_job(&a, L8, sets, 1);
	cr_assert_eq(serve_requests(j, &req, &n, &c.d), -2);
	cr_assert(strstr(capture_text(&c), "bad.csv:2:3: error: 'input_len': "
			 "expected a number, got 'abc'"), "%s", capture_text(&c));
	cr_assert(strstr(capture_text(&c), "bad.csv:3:7: error: 'output_len': "
			 "expected at least 1 token"), "%s", capture_text(&c));
	cr_assert(strstr(capture_text(&c), "bad.csv:4:") &&
		  strstr(capture_text(&c), "expected 3 fields"), "%s",
		  capture_text(&c));
	capture_end(&c);
	unlink(good);
	unlink(bad);
	rmdir(dir);
	arena_release(&a);
}

/*
 * A pipelined instance keeps up to pp steps in flight: with pp = 2 and a
 * queue that never empties, the steps' durations add up to well over the
 * run's span (two overlap at a time), and every request still completes.
 * With pp = 1 steps never overlap: their sum is at most the span.
 */
Test(serve, pipeline_keeps_steps_in_flight)
{
	const char *pp2[] = {"parallelism.tp=4", "parallelism.pp=2",
			     "serving.arrival_rate=inf"};
	const char *pp1[] = {"serving.arrival_rate=inf"};
	struct serve_result r;

	serve_fixture_run(L70, pp2, 3, &r);
	cr_assert_eq(r.completed, r.requests);
	cr_assert_gt(r.mean_step_s * (double)r.steps, 1.5 * r.duration_s,
		     "steps %.4g s over a span of %.4g s",
		     r.mean_step_s * (double)r.steps, r.duration_s);
	serve_fixture_run(L70, pp1, 1, &r);
	cr_assert_eq(r.completed, r.requests);
	cr_assert_leq(r.mean_step_s * (double)r.steps, r.duration_s * 1.0001);
}

/*
 * Requests arriving at the same instant are all queued before a step
 * starts (an offline run: vLLM's LLM.generate adds every prompt before
 * its first step(), SGLang's scheduler drains its input queue before it
 * forms a batch, TensorRT-LLM's executor fetches every queued request
 * at the top of an iteration). Two requests at t = 0 of 128 prompt and
 * 2 output tokens, at most 2 sequences a step: step 1 prefills both
 * (256 tokens, under every engine's token budget) and samples both
 * first tokens; step 2 decodes both, which then end. 2 steps of 2
 * requests each, and the two TTFTs are the same (the end of step 1).
 * Starting a step at the first arrival would take 3 steps (prefill 0;
 * prefill 1 with decode 0; decode 1) of 4 / 3 requests on average, and
 * the second TTFT would be later.
 */
/* Two requests of 128 prompt and 2 output tokens at t = 0, 2 sequences
 * a step, on the L8 fixture under engine `engine`. */
static void run_two_at_once(const char *engine, struct serve_result *r)
{
	char eng[64];
	const char *sets[] = {eng, "serving.requests=2",
			      "serving.input_len=128", "serving.output_len=2",
			      "serving.max_num_seqs=2",
			      "serving.arrival_rate=inf"};

	snprintf(eng, sizeof(eng), "serving.engine=%s", engine);
	serve_fixture_run(L8, sets, 6, r);
}

Test(serve, same_instant_arrivals_share_the_first_step)
{
	static const char *const engines[] = {"vllm", "sglang", "trtllm"};
	size_t e;

	for (e = 0; e < 3; e++) {
		struct serve_result r;

		run_two_at_once(engines[e], &r);
		cr_assert_eq(r.completed, 2, "%s", engines[e]);
		/* trtllm runs both once more (overlap_extra_step) */
		cr_assert_eq(r.steps, e == 2 ? 3 : 2, "%s: %lld steps",
			     engines[e], (long long)r.steps);
		cr_assert_float_eq(r.mean_batch, 2.0, 1e-12, "%s", engines[e]);
		cr_assert_eq(r.ttft.p50, r.ttft.p99, "%s", engines[e]);
	}
}

/*
 * Steps that compute prompt tokens, counted apart (serving.prompt_steps,
 * prompt_step_time_s). The same two requests (128 prompt, 2 output tokens,
 * at t = 0, 2 sequences a step): step 1 prefills both, every later step
 * only decodes (2 steps; TensorRT-LLM's overlap_extra_step adds a third,
 * a decode). So exactly 1 prompt step, and its time is the first step's:
 * more than a decode-only step's (256 tokens against 2) and less than the
 * sum of all steps, steps x mean_step_s.
 */
Test(serve, prompt_steps_counted_apart)
{
	static const char *const engines[] = {"vllm", "sglang", "trtllm"};
	size_t e;

	for (e = 0; e < 3; e++) {
		struct serve_result r;
		double all, decode;

		run_two_at_once(engines[e], &r);
		all = r.mean_step_s * (double)r.steps;
		decode = all - r.prompt_step_time_s;
		cr_assert_eq(r.prompt_steps, 1, "%s: %lld prompt steps",
			     engines[e], (long long)r.prompt_steps);
		cr_assert_gt(r.prompt_step_time_s, 0, "%s", engines[e]);
		cr_assert_lt(r.prompt_step_time_s, all, "%s", engines[e]);
		/* the prefill of 256 tokens outlasts each decode step of 2 */
		cr_assert_gt(r.prompt_step_time_s,
			     decode / (double)(r.steps - 1), "%s: %.4g s vs "
			     "%.4g s a decode step", engines[e],
			     r.prompt_step_time_s,
			     decode / (double)(r.steps - 1));
	}
}

/*
 * The same with two instances (dp 2, round-robin): four requests at
 * t = 0 go 0, 2 to instance 0 and 1, 3 to instance 1; each instance's
 * first step prefills its two, its second decodes them: 4 steps of 2
 * requests, every TTFT the same. Waking an instance at its first
 * arrival would give each 3 steps (6 in all) of 4 / 3 requests.
 */
Test(serve, same_instant_arrivals_on_every_instance)
{
	const char *sets[] = {"parallelism.dp=2", "system.nodes=2",
			      "serving.requests=4", "serving.input_len=128",
			      "serving.output_len=2", "serving.max_num_seqs=2",
			      "serving.arrival_rate=inf"};
	struct serve_result r;

	serve_fixture_run(L8, sets, 7, &r);
	cr_assert_eq(r.instances, 2);
	cr_assert_eq(r.completed, 4);
	cr_assert_eq(r.steps, 4, "%lld steps", (long long)r.steps);
	cr_assert_float_eq(r.mean_batch, 2.0, 1e-12);
	cr_assert_eq(r.ttft.p50, r.ttft.p99);
}

/*
 * TensorRT-LLM's overlap loop sees a request's last token one step late
 * (engine overlap_extra_step): the request runs one more decode step,
 * holding its batch slot and KV, while its output ends with the step that
 * made its last token. One sequence at a time (max_num_seqs 1), two
 * requests of 128 prompt and 2 output tokens at t = 0:
 *   off: [prefill A] [decode A] [prefill B] [decode B]: 4 steps;
 *   on:  [prefill A] [decode A] [extra A] [prefill B] [decode B]
 *        [extra B]: 6 steps, and B ends one step later, after A's extra
 *        step (B's own extra step is after its last token: not counted).
 * So the duration grows by one one-sequence decode step, D. D is read
 * from two one-request runs with the flag off: output 2 (prefill + one
 * decode) less output 1 (prefill alone). A's extra step attends 130
 * tokens where that decode attends 129: equal to 1e-3 of D. Tokens and
 * completions are the same; A's e2e (p50 of two) is the same, B's (p99)
 * is D later. Without the overlap loop (overlap_scheduling false, as
 * TensorRT-LLM's disable_overlap_scheduler) the key is ignored: 4 steps.
 */
Test(serve, overlap_extra_step_runs_one_more_decode)
{
	const char *on[] = {"serving.engine=trtllm", "serving.requests=2",
			    "serving.input_len=128", "serving.output_len=2",
			    "serving.max_num_seqs=1",
			    "serving.arrival_rate=inf"};
	const char *off[] = {"serving.engine=trtllm", "serving.requests=2",
			     "serving.input_len=128", "serving.output_len=2",
			     "serving.max_num_seqs=1",
			     "serving.arrival_rate=inf",
			     "serving.engine.overlap_extra_step=false"};
	const char *one2[] = {"serving.engine=trtllm", "serving.requests=1",
			      "serving.input_len=128", "serving.output_len=2",
			      "serving.engine.overlap_extra_step=false"};
	const char *one1[] = {"serving.engine=trtllm", "serving.requests=1",
			      "serving.input_len=128", "serving.output_len=1",
			      "serving.engine.overlap_extra_step=false"};
	const char *sync[] = {"serving.engine=trtllm", "serving.requests=2",
			      "serving.input_len=128", "serving.output_len=2",
			      "serving.max_num_seqs=1",
			      "serving.arrival_rate=inf",
			      "serving.engine.overlap_scheduling=false"};
	struct serve_result a, b, r2, r1, c;
	double dstep;

	serve_fixture_run(L8, sync, 7, &c);
	cr_assert_eq(c.steps, 4, "%lld steps", (long long)c.steps);
	serve_fixture_run(L8, on, 6, &a);
	serve_fixture_run(L8, off, 7, &b);
	serve_fixture_run(L8, one2, 5, &r2);
	serve_fixture_run(L8, one1, 5, &r1);
	dstep = r2.duration_s - r1.duration_s;
	cr_assert_gt(dstep, 0);
	cr_assert_eq(b.steps, 4, "%lld steps", (long long)b.steps);
	cr_assert_eq(a.steps, 6, "%lld steps", (long long)a.steps);
	cr_assert_eq(a.completed, 2);
	cr_assert_float_eq(a.output_tokens, b.output_tokens, 1e-12);
	cr_assert_float_eq(a.duration_s - b.duration_s, dstep, 1e-3 * dstep,
			   "grew %g s, a decode step %g s",
			   a.duration_s - b.duration_s, dstep);
	cr_assert_float_eq(a.e2e.p50, b.e2e.p50, 1e-9);
}

/* Write a trace of n rows (arrival_s, input_len, output_len) to path. */
static void write_trace(const char *path, const double *at, const int *in,
			const int *out, int n)
{
	FILE *f = fopen(path, "w");
	int i;

	cr_assert_not_null(f);
	fputs("arrival_s,input_len,output_len\n", f);
	for (i = 0; i < n; i++)
		fprintf(f, "%.17g,%d,%d\n", at[i], in[i], out[i]);
	cr_assert_eq(fclose(f), 0);
}

/*
 * A step starts only after the arrivals at its start time are queued,
 * also when a step ends at that instant. Run 1: request A alone (t = 0,
 * 128 prompt tokens, 1 output token) is one step ending at T1 = its
 * TTFT. Run 2: A with 2 output tokens, and B (128, 1) arriving at
 * exactly T1, the end of A's prefill step (the trace's %.17g reads back
 * to the same nanosecond). Step 2 starts at T1 and holds A's decode and
 * B's prefill, after which both are done: 2 steps. Forming step 2
 * before B is queued would take 3 (decode A; prefill B).
 */
Test(serve, arrival_at_a_step_end_joins_the_next_step)
{
	char dir[] = "/tmp/llmsim-inst-XXXXXX", path[256], set[300];
	const char *sets[] = {set, "serving.max_num_seqs=2"};
	double at[2] = {0, 0};
	int in[2] = {128, 128}, out[2] = {1, 1};
	struct serve_result r;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.csv", dir);
	snprintf(set, sizeof(set), "serving.trace=%s", path);
	write_trace(path, at, in, out, 1);
	serve_fixture_run(L8, sets, 2, &r);
	cr_assert_eq(r.steps, 1);
	at[1] = r.ttft.p50;
	cr_assert_gt(at[1], 0);
	out[0] = 2;
	write_trace(path, at, in, out, 2);
	serve_fixture_run(L8, sets, 2, &r);
	cr_assert_eq(r.completed, 2);
	cr_assert_eq(r.steps, 2, "%lld steps", (long long)r.steps);
	unlink(path);
	rmdir(dir);
}

/* The draft stepper's dims of job `path` with `sets` (serve_setup's
 * draft_setup), and its embedding unit's ops for a decode batch of 4
 * sequences. */
static void draft_of(const char *path, const char *const *sets, size_t n,
		     struct infer_dims *out, struct infer_ops *ops)
{
	struct serve_fixture f;
	struct infer_batch b;

	serve_fixture_open(&f, path, sets, n);
	cr_assert_not_null(f.s.draft);
	*out = f.s.draft->ctx.dims;
	memset(&b, 0, sizeof(b));
	infer_batch_add(&b, 4, 1, 512, 0, 1);
	infer_embed_ops(out, &b, ops);
	serve_fixture_close(&f);
}

static const struct infer_op *op_named(const struct infer_ops *o,
				       const char *name, int *count)
{
	const struct infer_op *found = NULL;
	int i;

	*count = 0;
	for (i = 0; i < o->n; i++)
		if (!strcmp(o->op[i].name, name)) {
			found = found ? found : &o->op[i];
			(*count)++;
		}
	return found;
}

/*
 * A draft is what its method makes it (serve_setup.c draft_head):
 *   DeepSeek-V3 MTP: its one MTP module (num_nextn_predict_layers 1),
 *     an MoE layer (index 61 >= first_k_dense_replace 3) with MLA, after
 *     enorm and hnorm and eh_proj, a bf16 GEMM of 4 tokens x 7168 from
 *     2 x 7168 = 14336 inputs
 *   EAGLE on Qwen3-30B-A3B (every layer MoE; SGLang attention DP 8,
 *     EP 8): one dense decoder layer of the model's intermediate_size
 *     6144, fc a GEMM 4 x 2048 from 4096, no norms before it; the dense
 *     draft drops the target's ep (before: "ep 8: expert parallelism
 *     needs a MoE model" for any dense draft of an EP target)
 *   EAGLE on Llama 3 8B: one dense layer, f 14336, fc 4 x 4096 from 8192
 * Before, the draft was the target's first draft_layers layers: Qwen3's
 * EAGLE head an MoE layer, and no input projection for any.
 */
Test(serve, draft_heads_follow_their_method)
{
	const char *mtp[] = {"serving.requests=4"};
	const char *q30[] = {"phase=serving", "serving.requests=4",
			     "serving.input_len=128", "serving.output_len=16",
			     "serving.arrival_rate=1",
			     "serving.speculative.method=eagle",
			     "serving.engine=sglang", "system.gpus_per_node=8",
			     "parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true"};
	const char *l8[] = {"serving.speculative.method=eagle"};
	struct infer_dims dm;
	struct infer_ops o;
	const struct infer_op *op;
	int n;

	draft_of("workloads/jobs/serve-deepseek-v3-h200.yaml", mtp, 1, &dm, &o);
	cr_assert_eq(dm.moe_model, 1);
	cr_assert(dm.mla);
	cr_assert_float_eq(dm.layers, 1, 0);
	cr_assert_float_eq(dm.draft_in, 2, 0);
	op = op_named(&o, "draft_norm", &n);
	cr_assert_eq(n, 2);
	op = op_named(&o, "draft_proj", &n);
	cr_assert(op && n == 1);
	cr_assert_float_eq(op->m, 4, 0);
	cr_assert_float_eq(op->n, 7168, 0);
	cr_assert_float_eq(op->k, 14336, 0);
	cr_assert(op->weight_B_base);

	draft_of("tests/data/serve/q30-h100.yaml", q30, 12, &dm, &o);
	cr_assert_eq(dm.moe_model, 0);
	cr_assert_float_eq(dm.ffn, 6144, 0);
	cr_assert_float_eq(dm.layers, 1, 0);
	cr_assert_null(op_named(&o, "draft_norm", &n));
	op = op_named(&o, "draft_proj", &n);
	cr_assert(op && n == 1);
	cr_assert_float_eq(op->n, 2048, 0);
	cr_assert_float_eq(op->k, 4096, 0);

	draft_of(L8, l8, 1, &dm, &o);
	cr_assert_eq(dm.moe_model, 0);
	cr_assert_float_eq(dm.ffn, 14336, 0);
	op = op_named(&o, "draft_proj", &n);
	cr_assert(op && n == 1);
	cr_assert_float_eq(op->k, 8192, 0);
}

/* MTP drafts need the model's MTP layers: Llama 3 8B has none, and
 * DeepSeek-V3 has one; both refused at the key, exit 2's path. */
Test(serve, mtp_without_mtp_layers_is_refused)
{
	const char *l8[] = {"serving.speculative.method=mtp"};
	const char *two[] = {"serving.speculative.draft_layers=2"};
	struct capture c;
	struct arena a;
	struct job_spec j;
	struct config_ctx cx;

	arena_init(&a);
	capture_begin(&c);
	cx = (struct config_ctx){&a, &c.d, "."};
	memset(&j, 0, sizeof(j));
	cr_assert_neq(config_load(&cx, &job_schema, L8, l8, 1, &j), 0);
	cr_assert(strstr(capture_text(&c), "--set:1:") &&
		  strstr(capture_text(&c), "has none "
			 "(num_nextn_predict_layers 0)"),
		  "%s", capture_text(&c));
	memset(&j, 0, sizeof(j));
	cr_assert_neq(config_load(&cx, &job_schema,
				  "workloads/jobs/serve-deepseek-v3-h200.yaml",
				  two, 1, &j), 0);
	cr_assert(strstr(capture_text(&c), "draft_layers 2: model "
			 "'deepseek-v3' has 1 MTP layer(s)"),
		  "%s", capture_text(&c));
	capture_end(&c);
	arena_release(&a);
}

/* The trace estimate of job j over its requests, made once as the CLI
 * makes them (serve_reqs_new, serve_trace_estimate). 0, or as
 * serve_reqs_new. */
static int estimate(const struct job_spec *j, struct serve_trace_est *e,
		    struct diag *d)
{
	struct serve_reqs *r;
	int rc = serve_reqs_new(j, &r, d);

	if (rc != 0)
		return rc;
	serve_trace_estimate(j, r, e);
	serve_reqs_free(r);
	return 0;
}

/*
 * The trace estimate before a run (serve_trace_estimate). Ten requests
 * of 100 prompt and 51 output tokens on one vLLM instance of at most 4
 * sequences and 2048 tokens a step, chunked: a request takes ceil(100 /
 * 2048) = 1 prompt step and 50 decode steps, 51 steps alone, 510 for
 * all ten if no two shared a step (steps_hi). Packed: 10 x (100 + 50) =
 * 1500 tokens fit one step of 2048, 510 sequence-steps need ceil(510 /
 * 4) = 128 steps of 4, and one request's 51 follow each other: steps_lo
 * 128. With EAGLE proposing 3 tokens accepted with p = 0.5 a verify step
 * keeps (1 - 0.5^4) / (1 - 0.5) = 1.875 tokens: ceil(50 / 1.875) = 27
 * decode steps, 28 a request, 280 alone, ceil(280 / 4) = 70 packed.
 */
Test(serve, trace_estimate_bounds)
{
	const char *sets[] = {"serving.requests=10", "serving.input_len=100",
			      "serving.output_len=51",
			      "serving.max_num_seqs=4",
			      "serving.max_num_batched_tokens=2048",
			      "serving.chunked_prefill=true",
			      "serving.speculative.method=eagle",
			      "serving.speculative.tokens=3",
			      "serving.speculative.acceptance_rate=0.5"};
	struct serve_trace_est e;
	struct arena a;
	struct diag d;
	struct job_spec *j;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L8, sets, 6);
	cr_assert_eq(estimate(j, &e, &d), 0);
	cr_assert_eq(e.requests, 10);
	cr_assert_float_eq(e.steps_hi, 510, 0);
	cr_assert_float_eq(e.steps_lo, 128, 0);
	j = fixture_load_job(&a, L8, sets, 9);
	cr_assert_eq(estimate(j, &e, &d), 0);
	cr_assert_float_eq(e.steps_hi, 280, 0);
	cr_assert_float_eq(e.steps_lo, 70, 0);
	arena_release(&a);
}

/* Bytes and engine steps a trace stream holds. */
static void trace_size(FILE *f, double *bytes, double *steps)
{
	char line[512];

	*bytes = (double)ftell(f);
	*steps = 0;
	rewind(f);
	while (fgets(line, sizeof(line), f))
		*steps += strstr(line, "\"ph\":\"X\"") != NULL;
}

/*
 * The 300 requests of tests/data/serve/l8-h100-tp1.yaml: the trace the
 * run writes has between steps_lo and steps_hi steps (measured 852 in
 * [843, 62154]: the longest request's 843 steps bound it; most requests
 * overlap it), each within 5 % of step_B's bytes (measured 318 B a step,
 * estimated 325 B). Under a budget of 40 % of that trace the run stops
 * with -2 once it has written past the budget, by less than one step's
 * events.
 */
Test(serve, trace_estimate_against_the_run)
{
	struct serve_trace_est e;
	struct serve_result r;
	struct arena a;
	struct diag d;
	struct job_spec *j;
	double bytes, steps, cut_B, cut_steps;
	FILE *f = tmpfile(), *g = tmpfile(), *null = fopen("/dev/null", "w");

	cr_assert(f && g && null);
	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L8, NULL, 0);
	cr_assert_eq(estimate(j, &e, &d), 0);
	cr_assert_eq(serve_run_traced(j, f, 0, &r, &d), 0);
	trace_size(f, &bytes, &steps);
	cr_assert(steps >= e.steps_lo && steps <= e.steps_hi,
		  "%g steps, estimated %g to %g", steps, e.steps_lo,
		  e.steps_hi);
	cr_assert_float_eq(bytes / steps, e.step_B, 0.05 * e.step_B,
			   "%g B a step, estimated %g", bytes / steps,
			   e.step_B);
	diag_init(&d, null);
	cr_assert_eq(serve_run_traced(j, g, 0.4 * bytes, &r, &d), -2);
	trace_size(g, &cut_B, &cut_steps);
	cr_assert(cut_B > 0.4 * bytes && cut_B < 0.4 * bytes + 2 * e.step_B,
		  "%g B written under a %g B budget", cut_B, 0.4 * bytes);
	cr_assert_lt(cut_steps, steps);
	fclose(f);
	fclose(g);
	fclose(null);
	arena_release(&a);
}

/* Whether the run of j under a trace budget of max_B with allocations
 * after the first n failing reached the stop (-2); *oom whether an
 * allocation failed on the way, *est whether the message gives the
 * estimate. */
static int stops_within(const struct job_spec *j, double max_B, long n,
			int *oom, int *est)
{
	struct serve_result r;
	struct diag d;
	char msg[1024] = "";
	FILE *g = tmpfile(), *err = tmpfile();
	int rc;
	size_t got;

	cr_assert(g && err);
	diag_init(&d, err);
	mem_fail_after(n);
	rc = serve_run_traced(j, g, max_B, &r, &d);
	mem_fail_after(-1);
	if (rc == 0)
		serve_result_release(&r);
	rewind(err);
	got = fread(msg, 1, sizeof(msg) - 1, err);
	msg[got] = 0;
	*oom = d.oom > 0;
	*est = strstr(msg, "estimated at") != NULL;
	fclose(g);
	fclose(err);
	return rc == -2;
}

/*
 * A run stopped at the trace budget reports the estimate from its own
 * requests; it allocates nothing more (review8 finding 9: it generated
 * every request again, briefly holding them twice). With n the fewest
 * allocations the run needs to reach the stop (a binary search: a run
 * that reaches it with n reaches it with more), every allocation after
 * the n-th failing, the stop is still reported whole: no out-of-memory
 * error and the estimate in the message. Before the fix the estimate's
 * own request vector was allocation n + 1: "out of memory" and no
 * estimate.
 */
Test(serve, trace_stop_allocates_nothing)
{
	struct serve_result r;
	struct arena a;
	struct diag d;
	struct job_spec *j;
	FILE *f = tmpfile(), *null = fopen("/dev/null", "w");
	double bytes, steps;
	long lo = 0, hi, mid;
	int oom, est;

	cr_assert(f && null);
	arena_init(&a);
	diag_init(&d, null);
	j = fixture_load_job(&a, L8, NULL, 0);
	cr_assert_eq(serve_run_traced(j, f, 0, &r, &d), 0);
	serve_result_release(&r);
	trace_size(f, &bytes, &steps);
	cr_assert(stops_within(j, 0.4 * bytes, -1, &oom, &est));
	cr_assert(!oom && est);
	for (hi = 1; !stops_within(j, 0.4 * bytes, hi, &oom, &est); hi *= 2)
		lo = hi;
	while (lo + 1 < hi) {	/* lo does not reach the stop, hi does */
		mid = lo + (hi - lo) / 2;
		if (stops_within(j, 0.4 * bytes, mid, &oom, &est))
			hi = mid;
		else
			lo = mid;
	}
	cr_assert(stops_within(j, 0.4 * bytes, hi, &oom, &est));
	cr_assert(!oom && est, "the stop after %ld allocations: %s%s", hi,
		  oom ? "out of memory" : "", est ? "" : ", no estimate");
	fclose(f);
	fclose(null);
	arena_release(&a);
}
