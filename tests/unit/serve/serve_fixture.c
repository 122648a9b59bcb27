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
