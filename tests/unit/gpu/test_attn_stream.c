/*
 * test_attn_stream.c - prompt attention through a kernel whose programs
 * each stream their KV head's visible keys (gpu_attn_heads.stream_rows:
 * vLLM's Triton unified attention, src/gpu/gpu_attn_infer.c
 * stream_keys), on the toy GPU of fixture.h with its L2 cut to 2 TB/s x
 * 0.5 = 1 TB/s so that the stream, not the attention rate, sets the time.
 *
 * The shape: 8 query heads over 1 KV head of 64 (GQA 8), a bf16 cache
 * (K + V = 128 elements x 2 B = 256 B a key), one sequence, a 2048-token
 * chunk. stream_rows 16: T = 16 / 8 = 2 tokens a program, nb = 1024
 * programs. The keys they read (the closed form of stream_keys, checked
 * against a program-by-program sum):
 *
 *   context 14000, no window:  1024 x 14000 + 2 x 1024 x 1023 / 2 + 2048
 *                              = 15,385,600 keys = 3,938,713,600 B
 *   context 14000, window 128: 1023 x 129 + 129 = 132,096 keys
 *   context 0, window 128:     n1 = 64 programs below W = 129 keys:
 *                              2 x 64 x 65 / 2 + 959 x 129 + 129
 *                              = 128,000 keys
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

#define L2_BPS 1e12		/* 2 TB/s x 0.5 */
#define KEY_B 256.0

/* Prompt attention of the shape above: q new tokens after ctx cached,
 * window w (0: none), stream_rows rows (0: the flash kernel). */
static double prefill_s(double ctx, double w, double rows)
{
	struct gpu_spec g;
	struct gpu_attn_heads h = {
		.heads_q = 8, .heads_kv = 1, .head_dim_qk = 64,
		.head_dim_v = 64, .kv_B = 2, .window = w,
		.stream_rows = rows,
	};
	struct gpu_attn_group grp = {1, 2048, 2048 + ctx};

	gpu_fixture_toy(&g);
	g.l2.bandwidth_Bps = 2e12;
	return gpu_attention_prefill(&g, DTYPE_BF16, &h, &grp, 1).time_s;
}

static void check_stream(double ctx, double w, double keys)
{
	double flash = prefill_s(ctx, w, 0), want = keys * KEY_B / L2_BPS;
	double got = prefill_s(ctx, w, 16);

	/* the stream must be what binds, or the test proves nothing */
	cr_assert(want > 1.5 * flash, "%g vs flash %g", want, flash);
	cr_assert(gpu_fixture_near(got, want, 1e-9), "%g vs %g", got, want);
}

Test(gpu, stream_rows_read_every_visible_key_per_program)
{
	/* 15,385,600 keys x 256 B / 1 TB/s = 3.939 ms, against the flash
	 * kernel's ~252 us of compute (6.3e10 FLOP at 250 TFLOP/s) */
	check_stream(14000, 0, 15385600);
}

Test(gpu, stream_rows_start_at_the_window)
{
	/* 132,096 keys x 256 B / 1 TB/s = 33.82 us (the flash kernel's
	 * compute ~9.5 us) */
	check_stream(14000, 128, 132096);
}

Test(gpu, stream_rows_first_chunk_under_a_window)
{
	/* 128,000 keys x 256 B / 1 TB/s = 32.77 us */
	check_stream(0, 128, 128000);
}

Test(gpu, stream_rows_widen_to_the_group_past_them)
{
	/* 32 query heads a KV head, stream_rows 16: BLOCK_M is the next
	 * power of two of 32, one token a program: 2048 programs over no
	 * context read 1 + 2 + ... + 2048 = 2,098,176 keys x 256 B / 1 TB/s
	 * = 537.1 us; the flash kernel computes 32 heads x 2,098,176 pairs
	 * x 256 FLOP = 1.72e10 FLOP, ~69 us */
	struct gpu_spec g;
	struct gpu_attn_heads h = {
		.heads_q = 32, .heads_kv = 1, .head_dim_qk = 64,
		.head_dim_v = 64, .kv_B = 2, .stream_rows = 16,
	};
	struct gpu_attn_group grp = {1, 2048, 2048};
	double want = 2098176 * KEY_B / L2_BPS, got;

	gpu_fixture_toy(&g);
	g.l2.bandwidth_Bps = 2e12;
	got = gpu_attention_prefill(&g, DTYPE_BF16, &h, &grp, 1).time_s;
	cr_assert(gpu_fixture_near(got, want, 1e-9), "%g vs %g", got, want);
}
