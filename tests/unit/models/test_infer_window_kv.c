/*
 * test_infer_window_kv.c - vLLM V1's hybrid KV cache manager (engine
 * window_kv_groups; src/models/infer_mem.c, src/serve/serve_impl.h
 * kv_pages_at) and the Marlin MXFP4 experts' padded memory
 * (src/models/infer_moe.c infer_moe_weight_B).
 *
 * The job is tests/data/serve/gptoss120b-a100.yaml (gpt-oss-120b on one
 * A100 under vLLM) as a decode step: 36 layers, 18 full and 18 of a
 * 128-token sliding window, 8 KV heads of 64 in bf16, so a token of one
 * layer is 8 x 64 x 2 (K, V) x 2 B = 2048 B; pages of 16 tokens.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/spec_job.h"
#include "run/infer_run.h"
#include "serve/serve_impl.h"

#include "fixture.h"

#define OSS "tests/data/serve/gptoss120b-a100.yaml"

static void run_oss(const char *const *extra, size_t n, struct infer_result *r)
{
	const char *base[] = { "phase=decode", "serving.batch=1",
			       "serving.context_len=4000" };

	fixture_infer_run(OSS, base, sizeof(base) / sizeof(base[0]), extra, n,
			  r);
}

Test(infer, vllm_pages_sliding_window_layers_apart)
{
	const char *off[] = { "serving.engine.window_kv_groups=false" };
	struct infer_result on, all;

	run_oss(NULL, 0, &on);
	run_oss(off, 1, &all);
	/* the same KV bytes either way (the pool's memory does not move) */
	fixture_assert_close(on.mem.kv_cache_B, all.mem.kv_cache_B);
	/* grouped: 18 + 18 layers -> groups of G = 18, one full and one
	 * window group; a page is 16 tokens x 18 layers x 2048 B */
	fixture_assert_close(on.mem.full_groups, 1);
	fixture_assert_close(on.mem.window_groups, 1);
	fixture_assert_close(on.mem.kv_pages,
			     floor(on.mem.kv_cache_B / (16.0 * 18 * 2048)));
	/* every layer whole: pages of 16 tokens x 36 layers */
	fixture_assert_close(all.mem.window_groups, 0);
	fixture_assert_close(all.mem.kv_pages,
			     floor(all.mem.kv_cache_B / (16.0 * 36 * 2048)));
	/* a decoding window group holds at most ceil((128 + 15) / 16) = 9
	 * pages; a sequence of 4001 tokens (4000 cached + this step's)
	 * then takes ceil(4001 / 16) = 251 full pages + 9 = 260 pages of
	 * twice as many as the ungrouped pool's, where it takes 251: the
	 * grouped cache holds 2 x 251 / 260 = 1.93x the sequences */
	fixture_assert_close(on.mem.window_pages, 9);
	fixture_assert_close(on.mem.kv_sequences, floor(on.mem.kv_pages / 260));
	fixture_assert_close(all.mem.kv_sequences,
			     floor(all.mem.kv_pages / 251));
	cr_assert_gt(on.mem.kv_sequences, 1.9 * all.mem.kv_sequences - 2);
	/* vLLM's logged tokens: pages over the 2 groups, x 16 */
	fixture_assert_close(on.mem.kv_tokens,
			     floor(on.mem.kv_pages / 2) * 16);
}

Test(infer, chunked_local_attention_keeps_every_layer_whole)
{
	/* vLLM turns the hybrid manager off for chunked local attention
	 * (Llama 4): a model with such layers is paged as one group */
	const char *chunk[] = { "model.attention_chunk_size=8192",
				"model.no_rope_layer_interval=4" };
	struct infer_result r;

	run_oss(chunk, 2, &r);
	fixture_assert_close(r.mem.window_groups, 0);
	fixture_assert_close(r.mem.full_groups, 1);
}

Test(infer, marlin_mxfp4_experts_are_held_padded)
{
	const char *nopad[] = { "serving.engine.mxfp4_marlin_pad_ffn=0",
				"serving.engine.mxfp4_marlin_pad_hidden=0" };
	struct infer_result pad, raw;
	/* per expert matrix: 2880 x 2880 -> ffn round_up(2880, 128) = 2944,
	 * hidden round_up(2880, 256) = 3072: 3072 x 2944 - 2880 x 2880 =
	 * 749,568 elements; 3 matrices (w1, w3, w2) x 128 experts x 36
	 * layers, MXFP4 at 0.5 + 1 / 32 B an element (a U8 scale per 32) */
	double extra = 749568.0 * 3 * 128 * 36 * (0.5 + 1.0 / 32);

	run_oss(NULL, 0, &pad);
	run_oss(nopad, 2, &raw);
	fixture_assert_close(pad.mem.weights_B - raw.mem.weights_B, extra);
}

/* The serving simulation's pages (serve_impl.h): a window group's pages
 * of a step's new tokens are taken whole, those before the window freed
 * when the sequence is next scheduled. */
Test(infer, window_group_pages_follow_the_window)
{
	struct serve_inst in = { 0 };

	in.block = 16;
	in.full_groups = 1;
	in.window_groups = 1;
	in.window_tokens = 128;
	/* a first 8192-token chunk: 512 pages in each group */
	cr_assert_eq(kv_pages_at(&in, 0, 8192), 1024);
	cr_assert_eq(kv_pages_for(&in, 8192), 1024);
	/* its next decode token: 513 full pages; the window group keeps
	 * pages from floor((8192 - 128 + 1) / 16) = 504 on: 513 - 504 = 9 */
	cr_assert_eq(kv_pages_at(&in, 8192, 8193), 513 + 9);
	/* a short sequence keeps all its pages in both groups */
	cr_assert_eq(kv_pages_at(&in, 99, 100), 7 + 7);
	/* without groups: one group of every layer, as before */
	in.window_groups = 0;
	cr_assert_eq(kv_pages_at(&in, 8192, 8193), 513);
}
