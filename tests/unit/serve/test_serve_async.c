/*
 * test_serve_async.c - vLLM V1's async scheduling by release
 * (workloads/engines/vllm.yaml): the vllm preset keeps the host's step
 * work in series with the GPU's (0.9-0.13, async scheduling off by
 * default), and the rows of releases that run it (vLLM 0.14.0 turned it
 * on by default, PR #27614; the Nemotron recipe passes
 * --async-scheduling) set overlap_scheduling, so the host work of every
 * step after the first hides under the previous step's GPU time
 * (serve_sim.c).
 *
 * Jobs are reference rows over the shipped presets (the tests run from
 * the repository root).
 */
#include <criterion/criterion.h>

#include "serve/serve_impl.h"
#include "serve_fixture.h"

#define QWEN35 "results/reference/inference/" \
	"I-GPUSTACK-H200-TP1-QWEN35-35B-VLLM017-1024-128.yaml"
#define NANO "results/reference/inference/" \
	"I-VLLMRECIPE-H200-TP1-NEMOTRON3-NANO-FP8-1024-1024.yaml"

/*
 * One request of 128 prompt tokens and 3 output tokens at t = 0, TP 1:
 * three steps (the prompt, which makes the first token, then two
 * one-sequence decodes). vllm.yaml's host work a step: step_overhead
 * 0.5 ms + seq_overhead 2 us x 1 sequence = 0.502 ms (no
 * prompt_token_overhead, no tp_step_overhead at TP 1; dgx-h200 sets no
 * host_loop_scale).
 *   sync (the preset, or the row with overlap_scheduling false): every
 *     step is GPU + 0.502 ms: sum(GPU) + 3 x 0.502 ms;
 *   async (the row): the first step has no step before it and pays its
 *     host work; the two decodes hide theirs under the step before
 *     (a one-sequence decode of these ~3B-active-parameter models reads
 *     ~6 GB at a few TB/s, > 1 ms, above 0.502 ms): sum(GPU) + 0.502 ms.
 * So sync - async = 2 x 0.502 ms = 1.004 ms, for both rows, and the
 * plain vllm preset runs the sync loop.
 */
static void async_hides_two_steps(const char *row)
{
	const char *async[] = {"serving.requests=1", "serving.input_len=128",
			       "serving.output_len=3"};
	const char *sync[] = {"serving.requests=1", "serving.input_len=128",
			      "serving.output_len=3",
			      "serving.engine.overlap_scheduling=false"};
	const char *preset[] = {"serving.requests=1", "serving.input_len=128",
				"serving.output_len=3",
				"serving.engine=vllm"};
	struct serve_result a, s, p;
	double host = 0.5e-3 + 2e-6;

	serve_fixture_run(row, async, 3, &a);
	serve_fixture_run(row, sync, 4, &s);
	serve_fixture_run(row, preset, 4, &p);
	cr_assert_eq(a.steps, 3, "%lld steps", (long long)a.steps);
	cr_assert_eq(s.steps, 3, "%lld steps", (long long)s.steps);
	cr_assert_eq(a.completed, 1);
	cr_assert_float_eq(s.duration_s - a.duration_s, 2 * host, 1e-9,
			   "sync %g s, async %g s", s.duration_s,
			   a.duration_s);
	cr_assert_float_eq(p.duration_s, s.duration_s, 1e-12,
			   "preset %g s, sync row %g s", p.duration_s,
			   s.duration_s);
}

Test(serve_async, vllm_017_row_hides_host_work)
{
	async_hides_two_steps(QWEN35);
}

Test(serve_async, async_scheduling_recipe_row_hides_host_work)
{
	async_hides_two_steps(NANO);
}
