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

#endif
