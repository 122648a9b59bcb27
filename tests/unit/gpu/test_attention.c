/*
 * test_attention.c - fused attention (src/gpu/gpu_attention.c) on the
 * toy GPU of fixture.h: attention rate = 1000 x 0.5 x 0.5 = 250 TFLOP/s
 * forward, 1000 x 0.5 x 0.25 = 125 TFLOP/s backward, 100 units, 128-row
 * work units.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

/* 25 heads x 4096 / 128 = 800 work units = 8 full waves of 100. */
static struct gpu_attn_shape shape(int causal)
{
	struct gpu_attn_shape a = {
		.batch = 1, .heads_q = 25, .heads_kv = 25, .seq_q = 4096,
		.seq_kv = 4096, .head_dim_qk = 128, .head_dim_v = 128,
		.causal = causal,
	};
	return a;
}

Test(gpu, attention_flops_forward_and_backward)
{
	struct gpu_attn_shape a = shape(0);
	double fwd = 4.0 * 25 * 4096 * 4096 * 128;

	/* forward 4 b h s^2 d = 4 x 25 x 4096^2 x 128 = 2.147e11 FLOP;
	 * backward 2 (3d + 2d) per pair = 2.5 x forward. */
	cr_assert(gpu_fixture_near(gpu_attention_flops(&a, 0), fwd, 1e-12));
	cr_assert(gpu_fixture_near(gpu_attention_flops(&a, 1), 2.5 * fwd,
				   1e-12));
	/* causal: s(s+1)/2 of s^2 pairs = 4097 / 8192 = 0.500122. */
	a = shape(1);
	cr_assert(gpu_fixture_near(gpu_attention_flops(&a, 0),
				   fwd * 4097 / 8192, 1e-12));
}

Test(gpu, attention_forward_time_is_flops_over_attention_rate)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	/* 8 full waves, no overhead: t = F / 250 TFLOP/s = 2.147e11 /
	 * 2.5e14 = 859 us. Bytes: Q, K, V, O = 4 x 25 x 4096 x 128 x 2 B =
	 * 105 MB (+ 0.4 MB LSE) -> HBM at 5 TB/s = 21 us: compute-bound. */
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 4.0 * 25 * 4096 * 4096 * 128 /
					     250e12, 1e-12), "got %g", c.time_s);
	cr_assert_eq(c.bound, GPU_BOUND_COMPUTE);
	cr_assert(gpu_fixture_near(c.bytes, 4.0 * 25 * 4096 * 128 * 2 +
					    25.0 * 4096 * 4, 1e-12));
}

Test(gpu, attention_causal_is_about_half)
{
	struct gpu_attn_shape nc = shape(0), ca = shape(1);
	struct gpu_spec g;
	double r;

	gpu_fixture_toy(&g);
	/* 4096 / 128 = 32 blocks: the causal kernel computes the 32 x 33 / 2
	 * = 528 tiles on or below the diagonal of 32 x 32 = 1024, and both
	 * fill 8 waves exactly, so causal / non-causal = 528 / 1024 =
	 * 0.515625 (the useful FLOPs are 0.500122), forward and backward. */
	r = gpu_attention_fwd(&g, DTYPE_BF16, &ca).time_s /
	    gpu_attention_fwd(&g, DTYPE_BF16, &nc).time_s;
	cr_assert(gpu_fixture_near(r, 528.0 / 1024, 1e-9), "ratio %g", r);
	r = gpu_attention_bwd(&g, DTYPE_BF16, &ca).time_s /
	    gpu_attention_bwd(&g, DTYPE_BF16, &nc).time_s;
	cr_assert(gpu_fixture_near(r, 528.0 / 1024, 1e-9), "ratio %g", r);
}

Test(gpu, attention_causal_queries_at_the_end_compute_their_tiles)
{
	struct gpu_attn_shape nc = shape(0), ca = shape(1);
	struct gpu_spec g;
	double r;

	gpu_fixture_toy(&g);
	/* 1024 queries after 3072 of 4096 keys: 8 query blocks seeing 25..32
	 * of the 32 key blocks, 8 x 24 + 36 = 228 tiles against 256 without
	 * a mask. 25 heads x 8 blocks = 200 units, two waves of 100: the
	 * mean unit (228 x 25 / 200 = 28.5 tiles) x 2 waves = 57 tiles of
	 * time beats the longest unit (32), so causal / non-causal =
	 * 57 / 64 = 228 / 256. */
	nc.seq_q = ca.seq_q = 1024;
	r = gpu_attention_fwd(&g, DTYPE_BF16, &ca).time_s /
	    gpu_attention_fwd(&g, DTYPE_BF16, &nc).time_s;
	cr_assert(gpu_fixture_near(r, 228.0 / 256, 1e-9), "ratio %g", r);
}

Test(gpu, attention_backward_costs_five_forwards_at_half_the_efficiency)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g;
	double r;

	gpu_fixture_toy(&g);
	/* 2.5 x the FLOPs at 125 instead of 250 TFLOP/s: 5 x the time. */
	r = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s /
	    gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(r, 5.0, 1e-9), "ratio %g", r);
}

Test(gpu, attention_few_heads_leave_units_idle)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost c;
	double per_unit;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* 1 head x 4096 / 128 = 32 units on 100 units: one wave at 32%
	 * occupancy. A unit does F / 32 = 4 x 4096^2 x 128 / 32 = 268.4
	 * MFLOP at 250e12 / 100 = 2.5 TFLOP/s per unit = 107.4 us, plus the
	 * 1 us wave overhead: 108.4 us for F = 8.59 GFLOP (79 TFLOP/s). */
	a.heads_q = a.heads_kv = 1;
	per_unit = 4.0 * 4096 * 4096 * 128 / 32 / 2.5e12;
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, per_unit + 1e-6, 1e-9),
		  "got %g", c.time_s);
}

Test(gpu, attention_unaligned_causal_queries_see_the_tail)
{
	struct gpu_attn_shape a = shape(1);

	/* 1024 queries at the end of 4096 keys: 1024 x 3072 + 1024 x 1025 / 2
	 * = 3,670,016 pairs per head; x 25 heads x 2 (128 + 128). */
	a.seq_q = 1024;
	cr_assert(gpu_fixture_near(gpu_attention_flops(&a, 0),
				   25.0 * (1024.0 * 3072 + 1024.0 * 1025 / 2) *
				   512, 1e-12));
}
