/*
 * test_serve_dpa.c - SGLang under attention DP (serve_sched.c
 * sglang_prefill_adp): a scheduler a rank, each with
 * chunked_prefill_size // dp_size prompt tokens a step and its own
 * chunked request (server_args.py _handle_data_parallelism); a request's
 * rank is its arrival index mod the ranks (round robin); a rank that
 * forms no prefill batch decodes in the same step.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/mem.h"
#include "config/spec_job.h"
#include "serve/serve_impl.h"
#include "../models/fixture.h"
#include "serve_fixture.h"

#define L8 "tests/data/serve/l8-h100-tp1.yaml"
#define DSV3 "tests/data/serve/dsv3-h200-dep8.yaml"

/* The per-rank arrays of in's in->adp ranks (serve_setup.c size_inst),
 * in a: no request chunked. */
static void adp_arrays(struct arena *a, struct serve_inst *in)
{
	int64_t i;

	in->adp_chunked = arena_alloc(a, (size_t)in->adp *
				      sizeof(*in->adp_chunked));
	in->adp_left = arena_alloc(a, (size_t)in->adp *
				   sizeof(*in->adp_left));
	in->adp_busy = arena_alloc(a, (size_t)in->adp);
	cr_assert(in->adp_chunked && in->adp_left && in->adp_busy);
	for (i = 0; i < in->adp; i++)
		in->adp_chunked[i] = -1;
}

/* Instance `in` of s (L8 under sglang; serve_fixture_adp_open), two
 * attention-DP ranks: the instance's max_tokens 2 x 2048, so SGLang's
 * share a rank is 2048 // 2 = 1024; the n requests req[] with prompts
 * prompt[] waiting at t = 0. */
static void dpa_setup(struct arena *a, struct serve *s, struct serve_inst *in,
		      struct serve_req *req, const int64_t *prompt, int64_t n)
{
	const char *sets[] = {"serving.engine=sglang"};

	serve_fixture_adp_open(a, s, in, L8, sets, 1, 1, req, prompt, n);
	adp_arrays(a, in);
}

/* Run one step at time t: schedule (n marked expected), then end it. */
static void step(struct serve *s, struct serve_inst *in, double t,
		 int64_t n, struct infer_batch *b)
{
	cr_assert_eq(serve_schedule(s, in, t, b), n, "step %lld",
		     (long long)in->tag);
	serve_step_done(s, in, in->tag, t + 1);
	in->tag++;
}

/* Group k of b: count, tokens q a sequence, context, prefill. */
static void group_is(const struct infer_batch *b, int k, double count,
		     double q, double ctx, int prefill)
{
	cr_assert_float_eq(b->g[k].count, count, 1e-12, "group %d", k);
	cr_assert_float_eq(b->g[k].q, q, 1e-12, "group %d", k);
	cr_assert_float_eq(b->g[k].ctx, ctx, 1e-12, "group %d", k);
	cr_assert_eq(b->g[k].prefill, prefill, "group %d", k);
}

/*
 * Prompts 3000, 3000, 500, 500 (ranks 0, 1, 0, 1), 1024 tokens a rank a
 * step:
 *   1: A (rank 0) 1024 and B (rank 1) 1024, both now chunked; C's rank
 *      has a chunked request: admission stops (2 marked);
 *   2: A and B 1024 more each (context 1024) (2);
 *   3: A and B their last 952 (context 2048), each sampling its first
 *      token; 72 tokens left a rank: C and D 72 each, now chunked (4);
 *   4: C and D their last 428 (context 72); A and B decode, but their
 *      ranks run prefill batches: no decode (2);
 *   5: nothing waits or is chunked: a decode step of all four (4), at
 *      their prompts' mean context (3000 + 3000 + 500 + 500) / 4.
 * (batch_of: a group a prompt chunk, the decodes one group.)
 * The pooled scheduler this replaces took 2 x 2 x 2048 = 8192 tokens a
 * step with one chunked request: A 3000, B 3000, C 500, D 500 whole in
 * step 1 (7000 tokens, A and B each 3000 on its rank).
 */
Test(serve_dpa, sglang_rank_budget_and_chunks)
{
	static const int64_t prompt[] = {3000, 3000, 500, 500};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;

	dpa_setup(&a, &s, &in, req, prompt, 4);
	step(&s, &in, 0, 2, &b);	/* a group a prompt chunk */
	cr_assert_eq(b.n, 2);
	group_is(&b, 0, 1, 1024, 0, 1);
	group_is(&b, 1, 1, 1024, 0, 1);
	cr_assert_eq(in.adp_chunked[0], 0);
	cr_assert_eq(in.adp_chunked[1], 1);
	step(&s, &in, 1, 2, &b);
	cr_assert_eq(b.n, 2);
	group_is(&b, 0, 1, 1024, 1024, 1);
	group_is(&b, 1, 1, 1024, 1024, 1);
	step(&s, &in, 2, 4, &b);
	cr_assert_eq(b.n, 4);
	group_is(&b, 0, 1, 952, 2048, 1);
	group_is(&b, 1, 1, 952, 2048, 1);
	group_is(&b, 2, 1, 72, 0, 1);
	group_is(&b, 3, 1, 72, 0, 1);
	cr_assert_eq(in.adp_chunked[0], 2);
	cr_assert_eq(in.adp_chunked[1], 3);
	step(&s, &in, 3, 2, &b);
	cr_assert_eq(b.n, 2);
	group_is(&b, 0, 1, 428, 72, 1);
	group_is(&b, 1, 1, 428, 72, 1);
	step(&s, &in, 4, 4, &b);
	cr_assert_eq(b.n, 1);
	group_is(&b, 0, 4, 1, (3000 + 3000 + 500 + 500) / 4.0, 0);
	serve_fixture_adp_close(&a, &in);
}

/*
 * Prompts 3000 (rank 0) and 500 (rank 1): step 1 A 1024 (chunked) and B
 * whole (500, its first token); step 2 A 1024 more on rank 0 while rank
 * 1, with no prefill batch, decodes B (context 500) in the same step: a
 * prefill group and a decode group, 2 marked.
 */
Test(serve_dpa, sglang_idle_rank_decodes_beside_a_prefill)
{
	static const int64_t prompt[] = {3000, 500};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[2];
	struct infer_batch b;
	int k, pre = -1, dec = -1;

	dpa_setup(&a, &s, &in, req, prompt, 2);
	step(&s, &in, 0, 2, &b);
	cr_assert_eq(in.adp_chunked[0], 0);
	cr_assert_eq(in.adp_chunked[1], -1);
	step(&s, &in, 1, 2, &b);
	cr_assert_eq(b.n, 2);
	for (k = 0; k < 2; k++) {
		if (b.g[k].prefill)
			pre = k;
		else
			dec = k;
	}
	cr_assert(pre >= 0 && dec >= 0);
	group_is(&b, pre, 1, 1024, 1024, 1);
	group_is(&b, dec, 1, 1, 500, 0);
	serve_fixture_adp_close(&a, &in);
}

/*
 * --enable-dp-attention multiplies schedule_conservativeness by 0.3
 * (server_args.py _handle_data_parallelism) and the scheduler's initial
 * new_token_ratio is SGLANG_INIT_NEW_TOKEN_RATIO 0.7 x it, its floor that
 * x 0.14, its decay the difference over 600 steps (scheduler.py): under
 * attention DP 8 (sglang.yaml adp_schedule_conservativeness 0.3) the
 * instance starts at 0.7 x 0.3 = 0.21; at TP 8 at 0.7.
 */
Test(serve_dpa, sglang_dp_attention_admits_with_a_lower_ratio)
{
	const char *dpa[] = {"phase=serving", "serving.engine=sglang",
			     "serving.requests=4", "serving.input_len=128",
			     "serving.output_len=4"};
	const char *tp[] = {"phase=serving", "serving.engine=sglang",
			    "serving.requests=4", "serving.input_len=128",
			    "serving.output_len=4", "parallelism.tp=8",
			    "parallelism.dp=1", "parallelism.ep=1",
			    "parallelism.attention_dp=false"};
	struct serve_fixture f;

	int k;

	serve_fixture_open(&f, DSV3, dpa, 5);
	cr_assert_eq(f.s.inst[0].adp, 8);
	cr_assert_float_eq(f.s.inst[0].init_token_ratio, 0.21, 1e-12);
	cr_assert_float_eq(f.s.inst[0].new_token_ratio, 0.21, 1e-12);
	/* a scheduler a rank: each rank's chunked request, none yet */
	cr_assert_not_null(f.s.inst[0].adp_chunked);
	for (k = 0; k < 8; k++)
		cr_assert_eq(f.s.inst[0].adp_chunked[k], -1);
	serve_fixture_close(&f);
	serve_fixture_open(&f, DSV3, tp, 9);
	cr_assert_float_eq(f.s.inst[0].init_token_ratio, 0.7, 1e-12);
	cr_assert_null(f.s.inst[0].adp_chunked);	/* one scheduler */
	serve_fixture_close(&f);
}

/*
 * Chunked prefill off: a prompt over a rank's 1024-token share is taken
 * whole as the first of its rank's batch, each rank on its own (SGLang's
 * schedulers a rank): prompts 3000, 3000 on ranks 0, 1 both run whole in
 * step 1 (2 marked, 3000 tokens each at context 0). Counting the
 * instance's admissions instead (the rule of the pooled scheduler) let
 * only the first in: 1 marked.
 */
Test(serve_dpa, sglang_unchunked_prompts_lead_each_ranks_batch)
{
	static const int64_t prompt[] = {3000, 3000};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[2];
	struct infer_batch b;

	dpa_setup(&a, &s, &in, req, prompt, 2);
	in.chunked = 0;
	step(&s, &in, 0, 2, &b);
	cr_assert_eq(b.n, 2);
	group_is(&b, 0, 1, 3000, 0, 1);
	group_is(&b, 1, 1, 3000, 0, 1);
	serve_fixture_adp_close(&a, &in);
}

/*
 * A request's rank is its arrival order at its instance, not its id:
 * with two prefill instances the round robin of dispatch sends this one
 * requests 0 and 2, which its controller seats on ranks 0 and 1
 * (serve_seat), so step 1 prefills a 1024-token chunk of each (2 marked,
 * each rank chunking its own). By id mod 2 both sat on rank 0: the second
 * waited behind the first's chunk (1 marked).
 */
Test(serve_dpa, sglang_ranks_follow_arrival_at_the_instance)
{
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;

	memset(req, 0, sizeof(req));
	dpa_setup(&a, &s, &in, req, NULL, 0);
	s.nreq = 4;
	serve_fixture_arrive(&in, req, 0, 3000);
	serve_seat(&in, &req[0]);
	serve_fixture_arrive(&in, req, 2, 3000);
	serve_seat(&in, &req[2]);
	cr_assert_eq(req[0].adp_seat, 1);
	cr_assert_eq(req[2].adp_seat, 2);
	step(&s, &in, 0, 2, &b);
	cr_assert_eq(b.n, 2);
	group_is(&b, 0, 1, 1024, 0, 1);
	group_is(&b, 1, 1, 1024, 0, 1);
	cr_assert_eq(in.adp_chunked[0], 0);
	cr_assert_eq(in.adp_chunked[1], 2);
	serve_fixture_adp_close(&a, &in);
}

/*
 * Any number of ranks runs a scheduler a rank, not only up to
 * ADP_MAX_BINS (256): at dp 300 with chunked_prefill_size 3000 a rank
 * (max_tokens 300 x 3000) SGLang's share is 3000 // 300 = 10 tokens, so
 * a 25-token prompt on rank 0 runs 10, 10, then its last 5 (context 20).
 * With a fixed array of 256 ranks, dp 300 fell back to the pooled
 * scheduler with the instance's 300 x 3000 = 900000 tokens a step: the
 * prompt whole in step 1 (a DSV3 H200 run at dp 512 had a TTFT of 75 ms
 * against 961 ms at dp 256).
 */
Test(serve_dpa, sglang_ranks_past_256_keep_their_share)
{
	static const int64_t prompt[] = {25};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[1];
	struct infer_batch b;

	dpa_setup(&a, &s, &in, req, prompt, 1);
	in.adp = 300;
	in.max_tokens = 300 * 3000;
	in.max_seqs = 300;
	adp_arrays(&a, &in);
	step(&s, &in, 0, 1, &b);
	cr_assert_eq(b.n, 1);
	group_is(&b, 0, 1, 10, 0, 1);
	cr_assert_eq(in.adp_chunked[0], 0);
	step(&s, &in, 1, 1, &b);
	group_is(&b, 0, 1, 10, 10, 1);
	step(&s, &in, 2, 1, &b);
	group_is(&b, 0, 1, 5, 20, 1);
	cr_assert_eq(in.adp_chunked[0], -1);
	serve_fixture_adp_close(&a, &in);
}
