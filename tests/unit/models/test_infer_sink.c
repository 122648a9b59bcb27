/*
 * test_infer_sink.c - prompt attention of a model with attention sinks
 * under vLLM (engine sink_attn_block_m, sink_attn_native_cc; src/models/
 * infer.c sink_rows): vLLM's CUDA platform runs FlashAttention 3 on
 * capability 9.0, FlashInfer on 10.0 and its Triton unified attention
 * (16-row programs) on every other NVIDIA GPU. The job is
 * tests/data/serve/gptoss120b-a100.yaml: gpt-oss-120b on one A100, a
 * 2048-token chunk over 14,000 cached tokens.
 */
#include <criterion/criterion.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "models/infer.h"

#include "fixture.h"

#define OSS "tests/data/serve/gptoss120b-a100.yaml"

static double rows_of(const char *const *sets, size_t n)
{
	struct infer_dims d;

	fixture_infer_dims(OSS, sets, n, NULL, 0, &d);
	return d.sink_rows;
}

Test(infer, triton_rows_only_where_vllm_picks_triton)
{
	const char *h100[] = {"system=dgx-h100", "system.gpus_per_node=1"};
	const char *b200[] = {"system=dgx-b200", "system.gpus_per_node=1"};
	const char *nosink[] = {"model.attention_sinks=false"};
	const char *sglang[] = {"serving.engine=sglang"};

	/* A100 (sm80) under vllm.yaml: sink_attn_block_m 16 */
	cr_assert_float_eq(rows_of(NULL, 0), 16, 1e-12);
	/* capabilities 90 and 100 keep their own kernels */
	cr_assert_float_eq(rows_of(h100, 2), 0, 1e-12);
	cr_assert_float_eq(rows_of(b200, 2), 0, 1e-12);
	/* no sinks, or an engine without the rule */
	cr_assert_float_eq(rows_of(nosink, 1), 0, 1e-12);
	cr_assert_float_eq(rows_of(sglang, 1), 0, 1e-12);
}

/*
 * The step: 18 full-attention layers, each program of T = 16 / 8 = 2
 * tokens of one of the 8 KV heads reads its visible keys, 1024 programs
 * x 14000 + 2 x 1024 x 1023 / 2 + 2048 = 15,385,600 keys (test_attn_
 * stream.c's sum) x 8 KV heads x (64 + 64) x 2 B = 31.51 GB a layer
 * through A100's L2 (7.2 TB/s x 0.7 = 5.04 TB/s): 6.252 ms a layer,
 * 112.5 ms for 18. The flash kernel it replaces computes 30,770,176
 * pairs x 64 heads x 256 FLOP = 5.04e11 FLOP a layer, well under the
 * stream's time; the 18 windowed layers read 132,096 x 8 x 256 B =
 * 270.5 MB, 53.7 us each. So the step grows by less than 112.5 +
 * 18 x 0.0537 = 113.5 ms and by more than half of 112.5 ms (at HBM
 * instead of L2 it would grow by ~18 x 18.6 ms, outside the bound).
 */
Test(infer, triton_prompt_attention_streams_through_l2)
{
	const char *nosink[] = {"model.attention_sinks=false"};
	struct arena a;
	double with, without;

	arena_init(&a);
	with = fixture_step_latency(fixture_load_job(&a, OSS, NULL, 0));
	without = fixture_step_latency(fixture_load_job(&a, OSS, nosink, 1));
	arena_release(&a);
	cr_assert_lt(with - without, 113.5e-3, "%g", with - without);
	cr_assert_gt(with - without, 112.5e-3 / 2, "%g", with - without);
}
