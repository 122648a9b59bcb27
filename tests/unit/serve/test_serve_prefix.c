/*
 * test_serve_prefix.c - with prefix caching, an engine's admission counts
 * what the step then charges: the blocks of the whole prompt, its cached
 * prefix included (a request holds its cached prefix's pages while it
 * runs: serve_kv_grow to the cached tokens plus the computed ones).
 * TensorRT-LLM's capacity schedulers count mPromptLen's blocks
 * (kvCacheManager.cpp getNeededBlocksOneStep / getRemainingBlocksTo-
 * Completion); SGLang's add_one_req tests the uncached tokens again after
 * _lock_node takes the matched prefix out of the evictable tokens. The
 * admissions counted only the uncached part before.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/mem.h"
#include "config/spec_job.h"
#include "models/infer_prog.h"
#include "serve/serve_impl.h"
#include "../models/fixture.h"

#define L8 "tests/data/serve/l8-h100-tp1.yaml"

struct pfx {
	struct arena a;
	struct serve s;
	struct serve_inst in;
	struct serve_req req[4];
	struct infer_batch b;
};

/* Job L8 with sets; one instance of `pages` 16-token pages, nothing
 * running, max_tokens 2048; request i (i < n) waits with prompt[i]
 * tokens, cached[i] of them in the prefix cache, 10 output tokens. */
static void pfx_open(struct pfx *f, const char **sets, int nsets,
		     int64_t pages, const int64_t *prompt,
		     const int64_t *cached, int64_t n)
{
	int64_t i;

	memset(f, 0, sizeof(*f));
	arena_init(&f->a);
	f->s.job = fixture_load_job(&f->a, L8, sets, nsets);
	f->s.req = f->req;
	f->s.nreq = n;
	f->s.inst = &f->in;
	f->s.ninst = 1;
	f->in.role = ROLE_BOTH;
	f->in.pages = f->in.free_pages = pages;
	f->in.block = 16;
	f->in.full_groups = 1;	/* every layer one group (serve_impl.h kv_pages_at) */
	f->in.max_seqs = 8;
	f->in.max_tokens = 2048;
	f->in.chunked_req = -1;
	f->in.adp = 1;
	f->in.pp = 1;
	f->in.tag = 1;
	for (i = 0; i < n; i++) {
		struct serve_req *r = &f->req[i];

		r->input = r->prompt = prompt[i];
		r->cached = cached[i];
		r->output = 10;
		r->adp_rank = r->adp_inst = -1;
		r->first_scheduled_s = r->first_token_s = r->done_s = -1;
		r->state = REQ_WAITING;
		cr_assert_eq(rq_push_back(&f->in.waiting, i), 0);
	}
}

/* Request i runs, decoding, with `computed` tokens in `pages` pages. */
static void pfx_running(struct pfx *f, int64_t i, int64_t computed,
			int64_t pages)
{
	struct serve_req *r = &f->req[i];

	rq_pop_front(&f->in.waiting);
	r->state = REQ_RUNNING;
	r->computed = computed;
	r->generated = 1;
	r->pages = pages;
	f->in.free_pages -= pages;
	cr_assert_eq(serve_running_add(&f->in, i), 0);
}

static void pfx_close(struct pfx *f)
{
	rq_release(&f->in.waiting);
	mem_free(f->in.running);
	mem_free(f->in.pend);
	arena_release(&f->a);
}

/*
 * TensorRT-LLM, MAX_UTILIZATION, no attention DP. Request 0 (prompt 150,
 * decoding) holds ceil(151 / 16) = 10 of 20 pages: 10 free. Request 1
 * waits, 300 tokens of which 280 are cached: its prompt needs
 * ceil(300 / 16) = 19 pages. 19 > 10: it is not admitted (it waits);
 * counting the uncached 20 tokens, ceil(20 / 16) = 2 <= 10, admitted it
 * to a step that could not give it its 19 pages. The step is request 0's
 * decode alone. With request 0 at 10 tokens, ceil(11 / 16) = 1 page (19
 * free), it is admitted
 * and computes its 20 uncached tokens, holding 19 pages.
 */
Test(serve_prefix, trtllm_max_utilization_admits_the_whole_prompt)
{
	const char *sets[] = {"serving.engine=trtllm",
			      "serving.engine.capacity=max_utilization"};
	static const int64_t prompt[] = {150, 300}, cached[] = {0, 280};
	static const int64_t small[] = {10, 300};
	struct pfx f;

	pfx_open(&f, sets, 2, 20, prompt, cached, 2);
	pfx_running(&f, 0, 150, 10);
	cr_assert_eq(serve_schedule(&f.s, &f.in, 0, &f.b), 1);
	cr_assert_eq(f.req[1].state, REQ_WAITING);
	cr_assert_eq(f.in.waiting.n, 1);
	cr_assert_eq(f.in.nrunning, 1);
	cr_assert_eq(f.req[0].step_q, 1);
	pfx_close(&f);

	pfx_open(&f, sets, 2, 20, small, cached, 2);
	pfx_running(&f, 0, 10, 1);
	cr_assert_eq(serve_schedule(&f.s, &f.in, 0, &f.b), 2);
	cr_assert_eq(f.req[1].state, REQ_RUNNING);
	cr_assert_eq(f.req[1].step_q, 20);
	cr_assert_eq(f.req[1].pages, 19);
	cr_assert_eq(f.in.free_pages, 0);
	pfx_close(&f);
}

/*
 * TensorRT-LLM under attention DP with per-rank admission,
 * MAX_UTILIZATION: prompts 300 (280 cached), 100, 100, 100 on two ranks
 * of 10 pages. The fetch places them as test_serve_adp.c's first test:
 * 300 and the last 100 on rank 0, the other two on rank 1. Rank 0's
 * capacity scheduler needs ceil(300 / 16) = 19 > 10 pages for the first:
 * it waits and, FCFS, so does the 100 behind it (counting the uncached
 * 20 tokens admitted both, 2 + 7 = 9 <= 10, and the step then failed to
 * give the first its 19 pages). Rank 1 admits the first 100
 * (ceil(100 / 16) = 7) and holds the second (7 + 7 > 10). The step
 * computes that one prompt; three requests stay fetched on their ranks.
 */
Test(serve_prefix, trtllm_rank_admission_counts_the_whole_prompt)
{
	const char *sets[] = {"serving.engine=trtllm",
			      "serving.engine.capacity=max_utilization"};
	static const int64_t prompt[] = {300, 100, 100, 100};
	static const int64_t cached[] = {280, 0, 0, 0};
	int64_t used[2] = {0, 0};
	struct pfx f;

	pfx_open(&f, sets, 2, 20, prompt, cached, 4);
	f.in.adp = 2;
	f.in.max_tokens = 2 * 2048;
	f.in.adp_used = used;
	f.in.rank_pages = 10;
	cr_assert_eq(serve_schedule(&f.s, &f.in, 0, &f.b), 1);
	cr_assert_eq(f.req[0].adp_rank, 0);
	cr_assert_eq(f.req[1].adp_rank, 1);
	cr_assert_eq(f.req[3].adp_rank, 0);
	cr_assert_eq(f.in.nrunning, 1);
	cr_assert_eq(f.in.npend, 3);
	cr_assert_eq(f.req[0].state, REQ_WAITING);
	cr_assert_eq(f.req[1].in_step, 1);
	cr_assert_eq(used[0], 0);
	cr_assert_eq(used[1], 7);
	pfx_close(&f);
}

/*
 * SGLang's PrefillAdder. Request 0 decodes (150 tokens, 10 pages) with
 * 10 - 1 = 9 output tokens left; at new_token_ratio 0.5 the running
 * requests' estimate is 4.5 tokens, 4.5 / 16 = 0.28125 pages. Request 1
 * (300 tokens, 280 cached, 10 output) is estimated at 300 + 0.5 x 10 =
 * 305 tokens, 19.0625 pages. With 24 free pages (23.71875 left) it is
 * admitted: a prefill batch of its 20 uncached tokens, 19 pages held.
 * With 19 free (18.71875 left) it waits and the step is request 0's
 * decode. Counting the uncached 20 tokens, (20 + 5) / 16 = 1.5625 pages,
 * admitted it there too and left request 0's estimated decode no room.
 */
Test(serve_prefix, sglang_estimates_the_whole_prompt)
{
	const char *sets[] = {"serving.engine=sglang"};
	static const int64_t prompt[] = {150, 300}, cached[] = {0, 280};
	struct pfx f;

	pfx_open(&f, sets, 1, 34, prompt, cached, 2);
	f.in.chunked = 1;
	f.in.new_token_ratio = 0.5;
	pfx_running(&f, 0, 150, 10);
	cr_assert_eq(f.in.free_pages, 24);
	cr_assert_eq(serve_schedule(&f.s, &f.in, 0, &f.b), 1);
	cr_assert_eq(f.req[1].state, REQ_RUNNING);
	cr_assert_eq(f.req[1].step_q, 20);
	cr_assert_eq(f.req[1].pages, 19);
	pfx_close(&f);

	pfx_open(&f, sets, 1, 29, prompt, cached, 2);
	f.in.chunked = 1;
	f.in.new_token_ratio = 0.5;
	pfx_running(&f, 0, 150, 10);
	cr_assert_eq(f.in.free_pages, 19);
	cr_assert_eq(serve_schedule(&f.s, &f.in, 0, &f.b), 1);
	cr_assert_eq(f.req[1].state, REQ_WAITING);
	cr_assert_eq(f.req[0].step_q, 1);
	cr_assert_eq(f.req[0].step_prefill, 0);
	pfx_close(&f);
}
