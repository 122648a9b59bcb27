/*
 * serve_fixture.h - a serving instance set up from a job file, as the
 * serving simulation's setup builds it, for tests that read its memory,
 * dimensions or programs without running it.
 */
#ifndef LLMSIM_TEST_SERVE_FIXTURE_H
#define LLMSIM_TEST_SERVE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "base/diag.h"
#include "base/mem.h"
#include "serve/serve_impl.h"

struct serve_fixture {
	struct arena a;
	struct diag d;
	struct serve s;
	struct serve_result r;
};

/* Load path with the --set overrides sets[0..n), draw its requests and
 * set the instance up (asserting each step succeeds). */
void serve_fixture_open(struct serve_fixture *f, const char *path,
			const char *const *sets, size_t n);
void serve_fixture_close(struct serve_fixture *f);

/* Run the job at path with the --set overrides sets[0..n) to its end
 * (asserting it succeeds) into r; r's per-request arrays are released,
 * its totals kept. */
void serve_fixture_run(const char *path, const char *const *sets, size_t n,
		       struct serve_result *r);

/* Request i of req[] (prompt tokens, 10 output, no cached prefix) waits
 * at instance in, as the arrival path leaves it. */
void serve_fixture_arrive(struct serve_inst *in, struct serve_req *req,
			  int64_t i, int64_t prompt);

/*
 * An instance of two attention-DP ranks for the tests that drive the
 * scheduler by hand (serve_schedule): a (initialized here; release with
 * serve_fixture_adp_close) holds s's job, the one at path with the --set
 * overrides sets[0..nsets); `in` is role both, a pool of 1000 pages of
 * 16 tokens (it holds everything), 8 sequences and 2 x 2048 tokens a
 * step (serve_setup.c: the engine's chunked_prefill_size a rank), one
 * stage, step tag 1, chunked prefill as `chunked`; the n requests req[]
 * with prompts prompt[] wait at t = 0 (serve_fixture_arrive). The
 * per-rank arrays a scheduler needs are the caller's.
 */
void serve_fixture_adp_open(struct arena *a, struct serve *s,
			    struct serve_inst *in, const char *path,
			    const char *const *sets, size_t nsets, int chunked,
			    struct serve_req *req, const int64_t *prompt,
			    int64_t n);
/* Free what serve_fixture_adp_open and the scheduler allocated. */
void serve_fixture_adp_close(struct arena *a, struct serve_inst *in);

#endif
