/*
 * serve_fixture.c - see serve_fixture.h.
 */
#include "serve_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "../models/fixture.h"

void serve_fixture_open(struct serve_fixture *f, const char *path,
			const char *const *sets, size_t n)
{
	memset(f, 0, sizeof(*f));
	arena_init(&f->a);
	diag_init(&f->d, stderr);
	f->s.job = fixture_load_job(&f->a, path, sets, n);
	f->s.d = &f->d;
	f->s.wake = serve_wake;
	cr_assert_eq(serve_requests(f->s.job, &f->s.req, &f->s.nreq, &f->d), 0);
	cr_assert_eq(serve_setup(&f->s, &f->r), 0);
}

void serve_fixture_arrive(struct serve_inst *in, struct serve_req *req,
			  int64_t i, int64_t prompt)
{
	memset(&req[i], 0, sizeof(req[i]));
	req[i].input = req[i].prompt = prompt;
	req[i].output = 10;
	req[i].adp_rank = req[i].adp_inst = -1;
	req[i].first_scheduled_s = req[i].first_token_s = -1;
	req[i].done_s = -1;
	req[i].state = REQ_WAITING;
	cr_assert_eq(rq_push_back(&in->waiting, i), 0);
}

void serve_fixture_adp_open(struct arena *a, struct serve *s,
			    struct serve_inst *in, const char *path,
			    const char *const *sets, size_t nsets, int chunked,
			    struct serve_req *req, const int64_t *prompt,
			    int64_t n)
{
	int64_t i;

	arena_init(a);
	memset(s, 0, sizeof(*s));
	s->job = fixture_load_job(a, path, sets, nsets);
	s->req = req;
	s->nreq = n;
	memset(in, 0, sizeof(*in));
	in->role = ROLE_BOTH;
	in->pages = in->free_pages = 1000;
	in->block = 16;
	in->full_groups = 1;	/* every layer one group (serve_impl.h kv_pages_at) */
	in->max_seqs = 8;
	in->max_tokens = 2 * 2048;
	in->adp = 2;
	in->chunked = chunked;
	in->chunked_req = -1;
	in->pp = 1;
	in->tag = 1;
	for (i = 0; i < n; i++)
		serve_fixture_arrive(in, req, i, prompt[i]);
}

void serve_fixture_adp_close(struct arena *a, struct serve_inst *in)
{
	rq_release(&in->waiting);
	mem_free(in->running);
	mem_free(in->pend);
	arena_release(a);
}

void serve_fixture_close(struct serve_fixture *f)
{
	serve_teardown(&f->s);
	arena_release(&f->a);
}

void serve_fixture_run(const char *path, const char *const *sets, size_t n,
		       struct serve_result *r)
{
	struct arena a;
	struct diag d;
	struct job_spec *j;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, path, sets, n);
	cr_assert_eq(serve_run(j, NULL, r, &d), 0);
	serve_result_release(r);
	arena_release(&a);
}
