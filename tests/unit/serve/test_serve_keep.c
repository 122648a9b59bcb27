/*
 * test_serve_keep.c - vLLM V1 with prefix caching frees a preempted
 * request's blocks with their hashes: they stay in the free queue, cached,
 * until another allocation evicts them (block_pool.py free_blocks), tail
 * blocks first (single_type_kv_cache_manager.py free), and the request's
 * readmission finds its whole pages again, at most all its tokens but one
 * (kv_cache_manager.py get_computed_blocks, max_cache_hit_length =
 * num_tokens - 1). serve_queue.c preempt / kv_reclaim; serve_impl.h
 * serve_req_start.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/mem.h"
#include "serve/serve_impl.h"

struct keep {
	struct serve s;
	struct serve_inst in;
	struct serve_req req[2];
};

/* One instance of 20 pages of 16 tokens, every layer one group.
 * Request 0 decodes with 150 tokens in ceil(150 / 16) = 10 pages,
 * request 1 (input 111, 1 generated) with 112 tokens in
 * ceil(112 / 16) = 7 pages, admitted after it: 3 pages free. */
static void keep_open(struct keep *f, int keep_preempted)
{
	static const int64_t input[2] = {149, 111}, computed[2] = {150, 112},
			     pages[2] = {10, 7};
	int64_t i;

	memset(f, 0, sizeof(*f));
	f->s.req = f->req;
	f->s.nreq = 2;
	f->s.inst = &f->in;
	f->s.ninst = 1;
	f->in.role = ROLE_BOTH;
	f->in.pages = f->in.free_pages = 20;
	f->in.block = 16;
	f->in.full_groups = 1;
	f->in.max_seqs = 8;
	f->in.max_tokens = 2048;
	f->in.chunked = 1;
	f->in.chunked_req = -1;
	f->in.adp = 1;
	f->in.pp = 1;
	f->in.tag = 1;
	f->in.reqs = f->req;
	f->in.keep_preempted = keep_preempted;
	for (i = 0; i < 2; i++) {
		struct serve_req *r = &f->req[i];

		r->input = input[i];
		r->prompt = input[i];
		r->output = 100;
		r->generated = 1;
		r->computed = computed[i];
		r->pages = pages[i];
		r->adp_rank = r->adp_inst = -1;
		r->first_scheduled_s = r->first_token_s = r->done_s = -1;
		r->state = REQ_RUNNING;
		f->in.free_pages -= pages[i];
		cr_assert_eq(serve_running_add(&f->in, i), 0);
	}
	cr_assert_eq(f->in.free_pages, 3);
}

static void keep_close(struct keep *f)
{
	rq_release(&f->in.waiting);
	mem_free(f->in.running);
}

/*
 * Request 0 grows to 214 tokens: ceil(214 / 16) = 14 pages, 4 more, 3
 * free: request 1 (the last running) is preempted. Its kept prefix: its
 * tokens but one, min(112, 111 + 1 - 1) = 111, in whole pages:
 * floor(111 / 16) x 16 = 96 tokens, 96 / 16 = 6 pages (its 7th page, 16
 * tokens, is not whole). Free: 3 + 7 = 10, of which 6 cached; request 0
 * takes its 4 from the 10 - 6 = 4 uncached: nothing evicted, 6 free.
 * Request 0 grows to 262 tokens: ceil(262 / 16) = 17 pages, 3 more, none
 * uncached: 3 of request 1's pages are evicted, its last ones: 3 pages,
 * 48 tokens kept, 3 free. Request 1 (prompt now 111 + 1 = 112) restarts
 * from 48: it needs ceil(112 / 16) = 7 pages, 7 > 3: not yet. Request 0
 * finishes: 3 + 17 = 20 free; request 1 takes its 7 (3 of them its own
 * kept ones) and is admitted at 48 computed tokens, not 0.
 */
Test(serve_keep, preempted_pages_stay_cached_until_evicted)
{
	struct keep f;
	struct serve_req *r1 = &f.req[1];

	keep_open(&f, 1);
	cr_assert_eq(serve_make_room(&f.s, &f.in, 0, 214, 0), 1);
	cr_assert_eq(r1->state, REQ_WAITING);
	cr_assert_eq(r1->kept, 96);
	cr_assert_eq(r1->kept_pages, 6);
	cr_assert_eq(f.in.cached_free, 6);
	cr_assert_eq(f.in.free_pages, 6);
	cr_assert_eq(f.req[0].pages, 14);

	cr_assert_eq(serve_make_room(&f.s, &f.in, 0, 262, 0), 0);
	cr_assert_eq(r1->kept, 48);
	cr_assert_eq(r1->kept_pages, 3);
	cr_assert_eq(f.in.cached_free, 3);
	cr_assert_eq(f.in.free_pages, 3);

	cr_assert_eq(r1->prompt, 112);
	cr_assert_eq(serve_req_start(r1), 48);
	cr_assert_eq(serve_kv_grow(&f.in, r1, 112, 0), 0);
	cr_assert_eq(r1->kept_pages, 3, "a failed grow keeps its pages");

	serve_kv_free(&f.in, &f.req[0], 0);
	serve_running_remove(&f.in, 0);
	cr_assert_eq(f.in.free_pages, 20);
	cr_assert_eq(serve_kv_grow(&f.in, r1, 112, 0), 1);
	cr_assert_eq(f.in.cached_free, 0);
	cr_assert_eq(r1->pages, 7);
	cr_assert_eq(f.in.free_pages, 13);
	cr_assert_eq(serve_admit(&f.s, &f.in, 1), 0);
	cr_assert_eq(r1->computed, 48);
	cr_assert_eq(r1->kept, 0);
	keep_close(&f);
}

/* Without the prefix cache's keeping (SGLang, TensorRT-LLM, vLLM without
 * prefix caching) the preempted request keeps nothing and restarts from
 * 0: 10 free after it, 6 after request 0's 4. */
Test(serve_keep, without_keeping_a_preempted_request_restarts)
{
	struct keep f;
	struct serve_req *r1 = &f.req[1];

	keep_open(&f, 0);
	cr_assert_eq(serve_make_room(&f.s, &f.in, 0, 214, 0), 1);
	cr_assert_eq(r1->kept, 0);
	cr_assert_eq(r1->kept_pages, 0);
	cr_assert_eq(f.in.cached_free, 0);
	cr_assert_eq(f.in.free_pages, 6);
	cr_assert_eq(serve_req_start(r1), 0);
	keep_close(&f);
}
