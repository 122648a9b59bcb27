/*
 * test_serve_adp.c - TensorRT-LLM under attention DP: each request is
 * held on one rank, chosen by the engine's balance of active prompt
 * tokens under a count cap, and a step costs the busiest rank's batch.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/mem.h"
#include "config/spec_job.h"
#include "models/infer_prog.h"
#include "serve/serve_impl.h"
#include "../models/fixture.h"
#include "serve_fixture.h"

#define L8 "tests/data/serve/l8-h100-tp1.yaml"

/* Group k of b: its count and its count on the busiest rank. */
static void group_is(const struct infer_batch *b, int k, double count,
		     double q, double ctx, int prefill, double mine)
{
	cr_assert_float_eq(b->g[k].count, count, 1e-12, "group %d", k);
	cr_assert_float_eq(b->g[k].q, q, 1e-12, "group %d", k);
	cr_assert_float_eq(b->g[k].ctx, ctx, 1e-12, "group %d", k);
	cr_assert_eq(b->g[k].prefill, prefill, "group %d", k);
	cr_assert_float_eq(b->g[k].rank_count, mine, 1e-12, "group %d", k);
}

/* Instance `in` of s (job from L8 with sets; serve_fixture_adp_open),
 * two attention-DP ranks, a pool that holds everything, and the four
 * requests req[] with prompts prompt[] waiting at t = 0, 10 output
 * tokens each. */
static void adp_setup(struct arena *a, struct serve *s, struct serve_inst *in,
		      struct serve_req *req, const int64_t *prompt,
		      const char **sets, int nsets, int chunked)
{
	serve_fixture_adp_open(a, s, in, L8, sets, (size_t)nsets, chunked, req,
			       prompt, 4);
}

/*
 * Four requests at t = 0 with prompts 300, 100, 100, 100 (FCFS order)
 * on two attention-DP ranks, 10 output tokens each, a pool that holds
 * them all. TensorRT-LLM's fetch (_schedule_attention_dp_requests):
 * expected = max(ceil((0 + 4) / 2), 0) = 2 requests a rank; longest
 * prompt first, each onto the rank with the fewest active prompt tokens
 * (ties: fewer requests, lower rank) among those holding fewer than 2:
 *   300 -> rank 0 (0 = 0 tokens, lower rank); 100 -> rank 1 (0 < 300);
 *   100 -> rank 1 (100 < 300); 100 -> rank 0 (rank 1 holds 2).
 * Rank 0 holds 300 + 100 = 400 prompt tokens, rank 1 200: the first step
 * costs rank 0's two prompts. The pooled placement this replaces put
 * the three 100s greedily on the lighter rank (300 | 300 tokens).
 * Second step: all four decode; the KV each reads (computed + 1):
 * rank 0 301 + 101 = 402, rank 1 101 + 101 = 202, so rank 0 is the
 * busiest: its two decodes at mean context (300 + 100) / 2 = 200, the
 * other two at 100 (the pooled mean, 150 for all four, is kept by the
 * two groups: 2 x 200 + 2 x 100 = 4 x 150).
 */
Test(serve_adp, trtllm_ranks_and_the_busiest_rank)
{
	const char *sets[] = {"serving.engine=trtllm"};
	static const int64_t prompt[] = {300, 100, 100, 100};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b, rank;
	struct infer_ctx x;
	double route;

	adp_setup(&a, &s, &in, req, prompt, sets, 1, 0);
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 4);
	cr_assert_eq(req[0].adp_rank, 0);
	cr_assert_eq(req[1].adp_rank, 1);
	cr_assert_eq(req[2].adp_rank, 1);
	cr_assert_eq(req[3].adp_rank, 0);
	cr_assert_eq(b.ranked, 1);
	cr_assert_eq(b.n, 4);
	group_is(&b, 0, 1, 300, 0, 1, 1);
	group_is(&b, 1, 1, 100, 0, 1, 0);
	group_is(&b, 2, 1, 100, 0, 1, 0);
	group_is(&b, 3, 1, 100, 0, 1, 1);
	/* the step model's rank batch: the two prompts of rank 0; the
	 * experts see (300 + 3 x 100) / 2 = 300 tokens a rank */
	memset(&x, 0, sizeof(x));
	x.adp = 2;
	infer_adp_rank(&x, &b, &rank, &route);
	cr_assert_eq(rank.n, 2);
	cr_assert_eq(rank.ranked, 0);
	cr_assert_float_eq(rank.g[0].q + rank.g[1].q, 400, 1e-12);
	cr_assert_float_eq(route, 300, 1e-12);

	serve_step_done(&s, &in, 1, 1);
	in.tag = 2;
	cr_assert_eq(serve_schedule(&s, &in, 1, &b), 4);
	cr_assert_eq(b.ranked, 1);
	cr_assert_eq(b.n, 2);
	group_is(&b, 0, 2, 1, 100, 0, 0);
	group_is(&b, 1, 2, 1, 200, 0, 2);
	/* balance ratio: step 1 (400 + 200) / 2 / 400 = 0.75, step 2 (2 + 2)
	 * / 2 / 2 = 1 */
	cr_assert_eq(in.adp_steps, 2);
	cr_assert_float_eq(in.adp_balance_sum, 1.75, 1e-12);
	infer_adp_rank(&x, &b, &rank, &route);
	cr_assert_eq(rank.n, 1);
	cr_assert_float_eq(rank.g[0].count, 2, 1e-12);
	cr_assert_float_eq(rank.g[0].ctx, 200, 1e-12);
	cr_assert_float_eq(route, 2, 1e-12);	/* 4 tokens / 2 ranks */
	serve_fixture_adp_close(&a, &in);
}

/*
 * Without tracked ranks (vLLM's scheduler here) the batch is not ranked
 * and infer_adp_rank places it as before: the same four prompts put
 * 300 | 100 + 100 + 100 (greedy, longest first onto the lighter rank).
 */
Test(serve_adp, other_engines_are_not_ranked)
{
	static const int64_t prompt[] = {300, 100, 100, 100};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;
	int64_t i;

	adp_setup(&a, &s, &in, req, prompt, NULL, 0, 1);
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 4);
	cr_assert_eq(b.ranked, 0);
	for (i = 0; i < 4; i++)
		cr_assert_eq(req[i].adp_rank, -1);
	serve_fixture_adp_close(&a, &in);
}

/*
 * Per-rank admission (engine adp_admission: rank; serve_sched.c
 * adp_fetch / adp_admit). The four requests above (prompts 300, 100,
 * 100, 100, 10 output tokens, 16-token pages) on two ranks of 21 pages
 * each, GUARANTEED_NO_EVICT. The fetch takes all four (ranks x
 * max_batch_size = 8 > 4 active) and places them as above: 300 and the
 * last 100 on rank 0, the other two on rank 1. Each rank admits against
 * its own 21 pages the blocks to completion, ceil((prompt + 10) / 16):
 *   rank 0: 300 -> 20 pages (fits 21); the 100 -> 7 more, 27 > 21: it
 *           waits on rank 0 (fetched, not admitted);
 *   rank 1: 7 + 7 = 14 <= 21: both admitted.
 * One pool of 42 pages would have admitted all four (20 + 3 x 7 = 41).
 * The first step computes the three admitted prompts; the KV each rank
 * holds after it: rank 0 ceil(300 / 16) = 19 pages, rank 1 2 x
 * ceil(100 / 16) = 14. The waiting request is admitted on rank 0 in the
 * first step after the 300-token request frees its pages: one prompt
 * step and 9 decode steps make its 10 tokens (steps 1-10), the overlap
 * scheduler's extra step (the preset's overlap_extra_step) runs it once
 * more (step 11), so step 12, as its only prompt.
 */
Test(serve_adp, each_rank_admits_against_its_own_pool)
{
	const char *sets[] = {"serving.engine=trtllm"};
	static const int64_t prompt[] = {300, 100, 100, 100};
	int64_t used[2] = {0, 0}, tag;
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;

	adp_setup(&a, &s, &in, req, prompt, sets, 1, 0);
	in.pages = in.free_pages = 42;
	in.adp_used = used;
	in.rank_pages = 21;
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 3);
	cr_assert_eq(req[0].adp_rank, 0);
	cr_assert_eq(req[1].adp_rank, 1);
	cr_assert_eq(req[2].adp_rank, 1);
	cr_assert_eq(req[3].adp_rank, 0);
	cr_assert_eq(in.nrunning, 3);
	cr_assert_eq(in.waiting.n, 0);
	cr_assert_eq(in.npend, 1);
	cr_assert_eq(in.pend[0], 3);
	cr_assert_eq(req[3].state, REQ_WAITING);
	cr_assert_eq(used[0], 19);
	cr_assert_eq(used[1], 14);
	cr_assert_eq(in.free_pages, 42 - 33);
	for (tag = 1; tag <= 11; tag++) {
		serve_step_done(&s, &in, tag, (double)tag);
		in.tag = tag + 1;
		if (tag < 11) {
			cr_assert_eq(serve_schedule(&s, &in, (double)tag, &b),
				     3, "step %lld", (long long)tag + 1);
			cr_assert_eq(in.npend, 1);
		}
	}
	cr_assert_eq(req[0].state, REQ_DONE);
	cr_assert_eq(used[0], 0);	/* its 20 pages back on rank 0 */
	/* step 12: requests 1 and 2 are done too (same length); request 3
	 * is admitted on rank 0 and computes its prompt */
	cr_assert_eq(serve_schedule(&s, &in, 11, &b), 1);
	cr_assert_eq(in.npend, 0);
	cr_assert_eq(req[3].state, REQ_RUNNING);
	cr_assert_eq(b.n, 1);
	group_is(&b, 0, 1, 100, 0, 1, 1);
	cr_assert_eq(used[0], 7);
	serve_fixture_adp_close(&a, &in);
}

/*
 * A rank whose own pool cannot take a prompt stops that rank's prompts
 * only. Admission counts the whole prompt (test_serve_prefix.c), but a
 * rank's pool can still fill between admission and the step: decodes
 * grow first. Two ranks of 10 pages, MAX_UTILIZATION, set up mid-run:
 * on rank 0 request 0 decodes (144 tokens, 9 pages, its 145th token
 * needs ceil(145 / 16) = 10) and request 1 was admitted with its prompt
 * of 16 not yet computed (admitted against 9 + 1 = 10 pages); on rank 1
 * request 2 (prompt 100) likewise. The step: request 0 takes rank 0's
 * tenth page, so request 1's page does not fit (11 > 10) and rank 0's
 * FCFS stops; rank 1 still computes request 2's 100 tokens
 * (ceil(100 / 16) = 7 pages). 2 requests in the step; stopping every
 * rank at the first failure gave 1 (and, with nothing decoding, no step
 * again).
 */
Test(serve_adp, a_full_rank_stops_only_its_own_prompts)
{
	const char *sets[] = {"serving.engine=trtllm",
			      "serving.engine.capacity=max_utilization"};
	static const int64_t prompt[] = {144, 16, 100, 16};
	static const int rank[] = {0, 0, 1};
	int64_t used[2] = {9, 0}, i;
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;

	adp_setup(&a, &s, &in, req, prompt, sets, 2, 0);
	s.inst = &in;
	s.ninst = 1;
	s.nreq = 3;
	rq_release(&in.waiting);	/* none waits: all three hold a rank */
	in.pages = 20;
	in.free_pages = 20 - 9;
	in.adp_used = used;
	in.rank_pages = 10;
	for (i = 0; i < 3; i++) {
		req[i].state = REQ_RUNNING;
		req[i].adp_rank = rank[i];
		req[i].adp_inst = 0;
		cr_assert_eq(serve_running_add(&in, i), 0);
	}
	req[0].computed = 144;
	req[0].generated = 1;
	req[0].pages = 9;
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 2);
	cr_assert_eq(req[0].in_step, 1);
	cr_assert_eq(req[0].step_prefill, 0);
	cr_assert_eq(req[1].in_step, 0);
	cr_assert_eq(req[2].in_step, 1);
	cr_assert_eq(req[2].step_q, 100);
	cr_assert_eq(used[0], 10);
	cr_assert_eq(used[1], 7);
	cr_assert_eq(in.free_pages, 20 - 17);
	serve_fixture_adp_close(&a, &in);
}

/*
 * The fetch is bounded by active counts alone: with max_batch_size 1 a
 * rank (in.max_seqs = 2 for the instance) and a pool that holds
 * everything, the first fetch takes the first two requests in FCFS
 * order (300, 100), longest first onto the ranks (300 -> rank 0, 100 ->
 * rank 1); the other two stay in the shared queue, unplaced, until a
 * rank's count falls.
 */
Test(serve_adp, the_fetch_is_bounded_by_active_counts)
{
	const char *sets[] = {"serving.engine=trtllm"};
	static const int64_t prompt[] = {300, 100, 100, 100};
	int64_t used[2] = {0, 0};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;

	adp_setup(&a, &s, &in, req, prompt, sets, 1, 0);
	in.max_seqs = 2;
	in.adp_used = used;
	in.rank_pages = 500;
	cr_assert_eq(serve_schedule(&s, &in, 0, &b), 2);
	cr_assert_eq(req[0].adp_rank, 0);
	cr_assert_eq(req[1].adp_rank, 1);
	cr_assert_eq(req[2].adp_rank, -1);
	cr_assert_eq(req[3].adp_rank, -1);
	cr_assert_eq(in.waiting.n, 2);
	cr_assert_eq(in.npend, 0);
	serve_fixture_adp_close(&a, &in);
}

/*
 * attention_dp_config enable_balance (engine adp_balance; serve_sched.c
 * adp_hold), timeout_iters 3, batching_wait_iters 1, the pooled
 * admission of the first test (4 requests a rank at most). Step 1: the
 * four prompts run (no rank generates yet: contexts go). A fifth request
 * (100) arrives: ranks hold 2 | 2 requests of 400 | 200 prompt tokens,
 * so it goes to rank 1. Rank 0 has no context: steps 2 and 3 hold it
 * (wait count 1, 2 < 3), step 4 runs it (count 3 = timeout). Then two
 * more (100, 100): expected = max(ceil(7 / 2), 3) = 4; the first onto
 * rank 1 (300 < 400 tokens), the second onto rank 0 (400 = 400, fewer
 * requests). Both ranks now have a context and generate: step 5 holds
 * them once for batching (count 0 < 1), step 6 runs both. Sequences a
 * step: 4 prompts; 4 decodes (twice); 4 decodes + 1 prompt; 5 decodes;
 * 5 decodes + 2 prompts. Without the balance the fifth request's prompt
 * would run in step 2 and the last two in step 5.
 */
Test(serve_adp, balance_holds_contexts_until_every_rank_has_one)
{
	const char *sets[] = {"serving.engine=trtllm",
			      "serving.engine.adp_balance=true",
			      "serving.engine.adp_timeout_iters=3",
			      "serving.engine.adp_batching_wait_iters=1"};
	static const int64_t prompt[] = {300, 100, 100, 100};
	static const int64_t want[] = {4, 4, 4, 5, 5, 7};
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[7];
	struct infer_batch b;
	int64_t tag;

	adp_setup(&a, &s, &in, req, prompt, sets, 4, 0);
	s.nreq = 7;
	for (tag = 1; tag <= 6; tag++) {
		if (tag == 2)
			serve_fixture_arrive(&in, req, 4, 100);
		if (tag == 5) {
			serve_fixture_arrive(&in, req, 5, 100);
			serve_fixture_arrive(&in, req, 6, 100);
		}
		in.tag = tag;
		cr_assert_eq(serve_schedule(&s, &in, (double)tag, &b),
			     want[tag - 1],
			     "step %lld", (long long)tag);
		serve_step_done(&s, &in, tag, (double)tag + 1);
	}
	cr_assert_eq(req[4].adp_rank, 1);
	cr_assert_eq(req[5].adp_rank, 1);
	cr_assert_eq(req[6].adp_rank, 0);
	cr_assert_float_eq(req[4].first_scheduled_s, 4, 1e-12);
	cr_assert_float_eq(req[5].first_scheduled_s, 6, 1e-12);
	cr_assert_float_eq(req[6].first_scheduled_s, 6, 1e-12);
	serve_fixture_adp_close(&a, &in);
}
