/*
 * test_serve_v0.c - vLLM V0's multi-step scheduling window
 * (serve_sched.c): a decode step opens a window of multi_step steps of
 * the same batch; a request that has all its tokens inside it keeps
 * computing to its end and finishes there; no prompt is admitted inside
 * one.
 *
 * Jobs are the YAML files of tests/data/serve over the shipped presets
 * (the tests run from the repository root).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "serve/serve_impl.h"
#include "../models/fixture.h"
#include "serve_fixture.h"

#define L8 "tests/data/serve/l8-h100-tp1.yaml"

/*
 * Two requests at t = 0 of 128 prompt tokens, A with 2 output tokens and
 * B with 6, both running at once (max_num_seqs 2), on vllm-v0:
 *   multi_step 1: [prefill A B] then 5 decodes (A done after the first):
 *     6 steps;
 *   multi_step 4: [prefill A B] [window: 4 decodes] [window: 4 decodes]:
 *     B needs 5 decodes, so the second window runs 3 past B's last token
 *     and A runs 3 past its own in the first: 1 + 8 = 9 steps. A
 *     finishes at the end of the first window (P + 4 D), B at the end of
 *     the second (P + 8 D), with P the prefill step (both TTFTs) and D a
 *     two-sequence decode step (its host share is the same in every step
 *     of a window; the context grows by one token a step, so D differs
 *     by under 1e-3 between them): e2e(B) - e2e(A) = e2e(A) - TTFT to
 *     1e-3. Tokens: 8 either way (the tokens past max_tokens are
 *     dropped).
 */
Test(serve_v0, multi_step_window_runs_to_its_end)
{
	static const double at[2] = {0, 0};
	static const int in[2] = {128, 128}, out[2] = {2, 6};
	char dir[] = "/tmp/llmsim-v0-XXXXXX", path[256], trace[300];
	FILE *f;
	const char *one[] = {"serving.engine=vllm-v0", trace,
			     "serving.max_num_seqs=2",
			     "serving.engine.multi_step=1"};
	const char *four[] = {"serving.engine=vllm-v0", trace,
			      "serving.max_num_seqs=2",
			      "serving.engine.multi_step=4"};
	struct serve_result a, b;
	int i;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/t.csv", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs("arrival_s,input_len,output_len\n", f);
	for (i = 0; i < 2; i++)
		fprintf(f, "%.17g,%d,%d\n", at[i], in[i], out[i]);
	cr_assert_eq(fclose(f), 0);
	snprintf(trace, sizeof(trace), "serving.trace=%s", path);

	serve_fixture_run(L8, one, 4, &a);
	serve_fixture_run(L8, four, 4, &b);
	unlink(path);
	rmdir(dir);
	cr_assert_eq(a.steps, 6, "%lld steps", (long long)a.steps);
	cr_assert_eq(b.steps, 9, "%lld steps", (long long)b.steps);
	cr_assert_eq(b.completed, 2);
	cr_assert_float_eq(b.output_tokens, a.output_tokens, 1e-12);
	cr_assert_float_eq(b.output_tokens, 8.0, 1e-12);
	cr_assert_float_eq(b.e2e.p99 - b.e2e.p50, b.e2e.p50 - b.ttft.p50,
			   1e-3 * b.e2e.p50, "A %g s, B %g s, TTFT %g s",
			   b.e2e.p50, b.e2e.p99, b.ttft.p50);
}

/*
 * No prompt is admitted inside a window: one sequence at a time
 * (max_num_seqs 1), two requests of 128 prompt and 2 output tokens at
 * t = 0. multi_step 1: [prefill A] [decode A] [prefill B] [decode B],
 * 4 steps. multi_step 4: A's one decode opens a window of 4, and B waits
 * for its end: 2 x (1 + 4) = 10 steps.
 */
Test(serve_v0, no_prompt_inside_a_window)
{
	const char *one[] = {"serving.engine=vllm-v0", "serving.requests=2",
			     "serving.input_len=128", "serving.output_len=2",
			     "serving.max_num_seqs=1",
			     "serving.arrival_rate=inf"};
	const char *four[] = {"serving.engine=vllm-v0", "serving.requests=2",
			      "serving.input_len=128", "serving.output_len=2",
			      "serving.max_num_seqs=1",
			      "serving.arrival_rate=inf",
			      "serving.engine.multi_step=4"};
	struct serve_result a, b;

	serve_fixture_run(L8, one, 6, &a);
	serve_fixture_run(L8, four, 7, &b);
	cr_assert_eq(a.steps, 4, "%lld steps", (long long)a.steps);
	cr_assert_eq(b.steps, 10, "%lld steps", (long long)b.steps);
	cr_assert_eq(b.completed, 2);
	cr_assert_float_eq(b.output_tokens, 4.0, 1e-12);
}

/*
 * vLLM before 0.6.0 (vllm-v0.5.yaml): the same V0 scheduler and GPU work
 * as vllm-v0, its host time a sequence 95 us (RFC #6801: 20 ms between
 * steps at 200 sequences, less the 1 ms a step) against vllm-v0's 5 us,
 * in series with the GPU (no overlap: no async output processor).
 * Four requests at t = 0 of 128 prompt tokens and 3 output tokens, TP 1
 * (no tp_step_overhead): [prefill A B C D] then 2 decodes of the four,
 * 3 steps under either preset, each step's host work 1 ms + 4 x
 * seq_overhead. So v0.5 - v0 = 3 steps x 4 x (95 - 5) us = 1.08 ms of
 * duration (test_infer_engine.c checks the 200-sequence step's 20 ms).
 */
Test(serve_v0, pre_060_host_work_a_sequence_is_in_series)
{
	const char *v05[] = {"serving.engine=vllm-v0.5", "serving.requests=4",
			     "serving.input_len=128", "serving.output_len=3"};
	const char *v06[] = {"serving.engine=vllm-v0", "serving.requests=4",
			     "serving.input_len=128", "serving.output_len=3"};
	struct serve_result a, b;

	serve_fixture_run(L8, v05, 4, &a);
	serve_fixture_run(L8, v06, 4, &b);
	cr_assert_eq(a.steps, 3, "%lld steps", (long long)a.steps);
	cr_assert_eq(b.steps, 3, "%lld steps", (long long)b.steps);
	cr_assert_eq(a.completed, 4);
	cr_assert_float_eq(a.duration_s - b.duration_s, 3 * 4 * 90e-6, 1e-9,
			   "v0.5 %g s, v0 %g s", a.duration_s, b.duration_s);
}
