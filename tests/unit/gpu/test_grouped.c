/*
 * test_grouped.c - the grouped GEMM of MoE experts (src/gpu/gpu_grouped.c)
 * against derived numbers on the toy GPU of fixture.h (U = 100 units, one
 * 128 x 128 tile, R_u = 4 TFLOP/s bf16, HBM 5 TB/s, L2 20 TB/s).
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

Test(gpu, grouped_experts_share_waves)
{
	struct gpu_spec g;
	struct gpu_gemm_group e[8];
	struct gpu_cost c;
	double tc, tm, te, D, expect;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* 8 experts of m = 1280 tokens, n = 1280, k = 4096: 10 x 10 = 100
	 * tiles each, 800 in all = 8 full waves of 100 (one launch, not 8).
	 *   t_c = 2 x 128 x 128 x 4096 / 4e12 = 33.554 us
	 * D = 8 x (1280 x 4096 + 4096 x 1280) x 2 B = 167.8 MB; working set
	 * D + 8 x 1280^2 x 2 B = 194 MB -> HBM 5 TB/s; per wave 1/8 of D:
	 *   t_m = 20.97 MB / 5e12 = 4.19 us (under t_c)
	 *   t_e = 100 x 128^2 x 2 B / 5e12 = 0.655 us
	 * t = 8 x (1 us + 33.554 + 0.655) = 273.7 us */
	for (i = 0; i < 8; i++)
		e[i] = (struct gpu_gemm_group){1280, 1280, 4096};
	tc = 2.0 * 128 * 128 * 4096 / 4e12;
	D = 8 * (1280.0 * 4096 + 4096.0 * 1280) * 2;
	tm = D / 8 / 5e12;
	te = 100.0 * 128 * 128 * 2 / 5e12;
	cr_assert_lt(tm, tc);
	expect = 8 * (1e-6 + tc + te);
	c = gpu_grouped_gemm(&g, DTYPE_BF16, e, 8);
	cr_assert(gpu_fixture_near(c.time_s, expect, 1e-9),
		  "got %g s, expected %g s", c.time_s, expect);
	cr_assert(gpu_fixture_near(c.flops, 8 * 2.0 * 1280 * 1280 * 4096, 1e-12));
}

Test(gpu, grouped_small_experts_pay_padding_and_weights)
{
	struct gpu_spec g;
	struct gpu_gemm_group e[100];
	struct gpu_cost c;
	double D, tm, tc, te, expect;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* 100 experts of 16 tokens each (m = 16, n = 128, k = 4096): one
	 * tile each, padded from 16 to 128 rows: 100 tiles = 1 wave.
	 *   t_c = 2 x 128 x 128 x 4096 / 4e12 = 33.554 us (the padded tile)
	 * Every expert reads its 4096 x 128 weights:
	 *   D = 100 x (16 x 4096 + 4096 x 128) x 2 B = 117.96 MB -> HBM
	 *   t_m = 117.96 MB / 5e12 = 23.59 us  (under t_c)
	 *   t_e = 100 x 128 x 128 x 2 / 5e12 = 0.655 us
	 * t = 1 + 33.554 + 0.655 = 35.21 us for 2 x 1600 x 128 x 4096 =
	 * 1.68 GFLOP: 47.7 TFLOP/s, 12% of R; one 1600 x 128 GEMM would
	 * have 13 tiles, not 100. */
	for (i = 0; i < 100; i++)
		e[i] = (struct gpu_gemm_group){16, 128, 4096};
	D = 100 * (16.0 * 4096 + 4096.0 * 128) * 2;
	tm = D / 5e12;
	tc = 2.0 * 128 * 128 * 4096 / 4e12;
	te = 100.0 * 128 * 128 * 2 / 5e12;
	expect = 1e-6 + fmax(tc, tm) + te;
	c = gpu_grouped_gemm(&g, DTYPE_BF16, e, 100);
	cr_assert(gpu_fixture_near(c.time_s, expect, 1e-9),
		  "got %g s, expected %g s", c.time_s, expect);
}

Test(gpu, grouped_empty_experts_cost_nothing)
{
	struct gpu_spec g;
	struct gpu_gemm_group e[3] = {{0, 128, 128}, {256, 128, 128},
				      {0, 128, 128}};
	struct gpu_cost one, three;

	gpu_fixture_toy(&g);
	/* the two experts with no tokens add no tile and no weight read */
	one = gpu_grouped_gemm(&g, DTYPE_BF16, &e[1], 1);
	three = gpu_grouped_gemm(&g, DTYPE_BF16, e, 3);
	cr_assert(gpu_fixture_near(three.time_s, one.time_s, 1e-12));
	e[1].m = 0;
	cr_assert_eq(gpu_grouped_gemm(&g, DTYPE_BF16, e, 3).time_s, 0);
}

Test(gpu, grouped_wgrad_waits_for_the_longest_k_in_the_last_wave)
{
	struct gpu_spec g;
	struct gpu_gemm_group e[2] = {{128, 128, 1024}, {128, 128, 4096}};
	struct gpu_cost c;
	double tc, D, tm, te;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 0;
	/* Weight gradients: k is each expert's token count. Two tiles, one
	 * partial wave, which waits for the k = 4096 tile:
	 *   t_c = 2 x 128 x 128 x 4096 / 4e12 = 33.554 us
	 *   D = (128 x 1024 + 1024 x 128 + 128 x 4096 + 4096 x 128) x 2 B
	 *     = 2.62 MB -> L2 (working set <= 10 MB) at 20 TB/s: t_m = 0.13 us
	 *   t_e = 2 x 128^2 x 2 / 20e12 = 3.3 ns */
	tc = 2.0 * 128 * 128 * 4096 / 4e12;
	D = (128.0 * 1024 * 2 + 128.0 * 4096 * 2) * 2;
	tm = D / 20e12;
	te = 2.0 * 128 * 128 * 2 / 20e12;
	c = gpu_grouped_gemm(&g, DTYPE_BF16, e, 2);
	cr_assert(gpu_fixture_near(c.time_s, fmax(tc, tm) + te, 1e-9),
		  "got %g s", c.time_s);
}

Test(gpu, grouped_kernel_overhead_is_paid_once_per_launch)
{
	struct gpu_spec g;
	struct gpu_gemm_group e[8];
	struct gpu_cost c0, c1;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* grouped_experts_share_waves' 8 experts in one launch (8 waves,
	 * 273.7 us): a 3 us kernel overhead adds 3 us once, not once per
	 * expert (24 us) or per wave. */
	for (i = 0; i < 8; i++)
		e[i] = (struct gpu_gemm_group){1280, 1280, 4096};
	c0 = gpu_grouped_gemm(&g, DTYPE_BF16, e, 8);
	g.gemm_kernel_overhead_s = 3e-6;
	c1 = gpu_grouped_gemm(&g, DTYPE_BF16, e, 8);
	cr_assert(gpu_fixture_near(c1.time_s - c0.time_s, 3e-6, 1e-6),
		  "got %g s more", c1.time_s - c0.time_s);
}

Test(gpu, grouped_min_tile_m_drops_smaller_tiles)
{
	static int64_t tm[] = {64, 128}, tn[] = {128, 128};
	struct gpu_spec g;
	struct gpu_gemm_group e[100];
	struct gpu_gemm_dtypes q = {.compute = DTYPE_NVFP4, .a_B = 0.5625,
				     .b_B = 0.5625, .c_B = 2, .b_cold = 1};
	struct gpu_cost c, free64;
	double D, tm_s, tc64, tc128, te64, te128, expect64, expect128;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	g.gemm_tile_m.v = tm;
	g.gemm_tile_n.v = tn;
	g.gemm_tile_m.n = g.gemm_tile_n.n = 2;
	g.matrix_peak_flops[DTYPE_NVFP4] = 4000e12;
	/* 100 experts of 16 rows (m = 16, n = 128, k = 4096), NVFP4 operands
	 * of 0.5625 B, bf16 out, cold weights (HBM, 10 TB/s x 0.5 = 5 TB/s).
	 * R_u = 4000e12 x (1000 / 2000 MHz) x 0.8 / 100 = 16 TFLOP/s.
	 * Either tile holds an expert's 16 rows: 100 tiles, one wave.
	 *   D = 100 x (16 x 4096 + 4096 x 128) x 0.5625 = 33.18 MB
	 *   t_m = D / 5e12 = 6.636 us (the whole D in the one wave)
	 * 64 x 128:  t_c = 2 x 64 x 128 x 4096 / 16e12 = 4.194 us
	 *            t_e = 100 x 64 x 128 x 2 / 5e12 = 0.328 us
	 *            t = 1 + max(4.194, 6.636) + 0.328 = 7.963 us
	 * 128 x 128: t_c = 8.389 us, t_e = 0.655 us
	 *            t = 1 + 8.389 + 0.655 = 10.044 us
	 * With min_tile_m 0 the 64-row tile wins (7.963 us); with 128 it is
	 * not offered and the expert pays 128 rows (10.044 us). */
	for (i = 0; i < 100; i++)
		e[i] = (struct gpu_gemm_group){16, 128, 4096};
	D = 100 * (16.0 * 4096 + 4096.0 * 128) * 0.5625;
	tm_s = D / 5e12;
	tc64 = 2.0 * 64 * 128 * 4096 / 16e12;
	tc128 = 2.0 * 128 * 128 * 4096 / 16e12;
	te64 = 100.0 * 64 * 128 * 2 / 5e12;
	te128 = 100.0 * 128 * 128 * 2 / 5e12;
	expect64 = 1e-6 + fmax(tc64, tm_s) + te64;
	expect128 = 1e-6 + fmax(tc128, tm_s) + te128;
	free64 = gpu_grouped_gemm_q(&g, &q, e, 100);
	cr_assert(gpu_fixture_near(free64.time_s, expect64, 1e-9),
		  "got %g s, expected %g s", free64.time_s, expect64);
	q.min_tile_m = 128;
	c = gpu_grouped_gemm_q(&g, &q, e, 100);
	cr_assert(gpu_fixture_near(c.time_s, expect128, 1e-9),
		  "got %g s, expected %g s", c.time_s, expect128);
	/* 64 removes nothing: the 64-row tile again */
	q.min_tile_m = 64;
	c = gpu_grouped_gemm_q(&g, &q, e, 100);
	cr_assert_eq(c.time_s, free64.time_s);
}

/* Two accumulator buffers (gemm_accumulator_stages 2; gpu_gemm.c): the 8
 * experts of grouped_experts_share_waves run 8 waves of t_c, no t_0 a
 * wave (the load warp streams across tiles; t_m + t_e = 4.19 + 0.655 us
 * stays under t_c = 33.554 us) and drain the last wave's epilogue once:
 * 8 x 33.554 + 0.655 = 269.09 us, 8 x 1 us + 7 x t_e = 12.59 us less
 * than with one buffer (r17's form, 1 us a wave kept: 277.09 us, fails). */
Test(gpu, grouped_two_accumulator_stages_hide_the_epilogue)
{
	struct gpu_spec g;
	struct gpu_gemm_group e[8];
	struct gpu_cost one, two;
	double tc, te, expect;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	for (i = 0; i < 8; i++)
		e[i] = (struct gpu_gemm_group){1280, 1280, 4096};
	tc = 2.0 * 128 * 128 * 4096 / 4e12;
	te = 100.0 * 128 * 128 * 2 / 5e12;
	g.gemm_accumulator_stages = 1;
	one = gpu_grouped_gemm(&g, DTYPE_BF16, e, 8);
	g.gemm_accumulator_stages = 2;
	two = gpu_grouped_gemm(&g, DTYPE_BF16, e, 8);
	expect = 8 * tc + te;
	cr_assert(gpu_fixture_near(two.time_s, expect, 1e-9),
		  "got %g s, expected %g s", two.time_s, expect);
	cr_assert(gpu_fixture_near(one.time_s - two.time_s, 8e-6 + 7 * te,
				   1e-6),
		  "saved %g s", one.time_s - two.time_s);
}

Test(gpu, grouped_per_expert_kernels_pay_chain_and_setups)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 5e-6;
	g.gemm_kernel_overhead_s = 3e-6;
	/* TE's multi-stream path: 16 expert kernels round-robin on 4
	 * streams, the longest chain ceil(16 / 4) = 4 launches:
	 *   (4 - 1) x 5 us + (16 - 1) x 3 us = 15 + 45 = 60 us
	 * 8 kernels on 4 streams: (2 - 1) x 5 + 7 x 3 = 26 us */
	cr_assert(gpu_fixture_near(gpu_grouped_kernels_s(&g, 16, 4), 60e-6,
				   1e-12));
	cr_assert(gpu_fixture_near(gpu_grouped_kernels_s(&g, 8, 2), 26e-6,
				   1e-12));
	/* one kernel (a single grouped launch): nothing beyond its cost */
	cr_assert_eq(gpu_grouped_kernels_s(&g, 1, 1), 0);
	cr_assert_eq(gpu_grouped_kernels_s(&g, 0, 0), 0);
}

Test(gpu, grouped_chain_runs_a_streams_kernels_one_after_another)
{
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = {
		.compute = DTYPE_BF16, .a_B = 2, .b_B = 2, .c_B = 2,
	};
	struct gpu_gemm_group e[9];
	double one, pooled;
	int i;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 2e-6;
	/* 8 experts of m = 768, n = 1280, k = 4096, each its own kernel:
	 * 6 x 10 = 60 tiles, one wave (a split of k would need 120 > 100
	 * units). A kernel's working set (768 + 1280) x 4096 x 2 B +
	 * 768 x 1280 x 2 B = 18.74 MB, the chain's 8 x 18.74 = 150 MB, over
	 * the toy's 100 MB LLC: each kernel reads from HBM (5 TB/s):
	 *   t_c = 2 x 128 x 128 x 4096 / 4e12      = 33.554 us
	 *   t_m = 16.78 MB / 5e12                  =  3.355 us (under t_c)
	 *   t_e = 60 x 128 x 128 x 2 B / 5e12      =  0.393 us
	 *   t   = 2 us launch + 33.554 + 0.393     = 35.947 us a kernel
	 * One stream: the chain is all 8, 287.58 us. Four streams: the
	 * longest chain 2 kernels, 71.89 us. A ninth group with no rows
	 * launches nothing (the chain stays 8 kernels). */
	for (i = 0; i < 8; i++)
		e[i] = (struct gpu_gemm_group){768, 1280, 4096};
	e[8] = (struct gpu_gemm_group){0, 1280, 4096};
	one = 2e-6 + 2.0 * 128 * 128 * 4096 / 4e12 + 60.0 * 128 * 128 * 2 / 5e12;
	cr_assert(gpu_fixture_near(gpu_grouped_chain_s(&g, &q, e, 9, 9),
				   8 * one, 1e-9), "got %g s, expected %g s",
		  gpu_grouped_chain_s(&g, &q, e, 9, 9), 8 * one);
	cr_assert(gpu_fixture_near(gpu_grouped_chain_s(&g, &q, e, 8, 2),
				   2 * one, 1e-9));
	/* The pooled kernel: 480 tiles = 4 waves of 100 and one of 80, each
	 * t_c = 33.554 us, t_m = 134.2 MB x a / 480 / 5e12 (5.59 us at
	 * a = 100, under t_c), t_e 0.655 (100 tiles) or 0.524 us (80):
	 * 2 + 4 x 34.209 + 34.078 = 172.9 us; with 7 further launches on one
	 * stream (gpu_grouped_kernels_s) 186.9 us, under the chain's 287.6:
	 * on one stream the chain binds; on 4 streams (pooled + 1 launch,
	 * 174.9 us, over 71.9) the pooled tiles do. */
	pooled = gpu_grouped_gemm(&g, DTYPE_BF16, e, 8).time_s;
	cr_assert(gpu_fixture_near(pooled, 2e-6 + 4 * (2.0 * 128 * 128 * 4096 /
				   4e12 + 100.0 * 128 * 128 * 2 / 5e12) +
				   2.0 * 128 * 128 * 4096 / 4e12 +
				   80.0 * 128 * 128 * 2 / 5e12, 1e-9),
		  "pooled %g s", pooled);
	cr_assert_lt(pooled + gpu_grouped_kernels_s(&g, 8, 8), 8 * one);
	cr_assert_gt(pooled + gpu_grouped_kernels_s(&g, 8, 2), 2 * one);
	/* nothing to run: no time */
	cr_assert_eq(gpu_grouped_chain_s(&g, &q, e + 8, 1, 1), 0);
}

/*
 * A weight-only kernel (gpu_gemm_dtypes.efficiency > 0: its mainloop
 * converts every weight it loads) runs its compute-bound tiles at that
 * fraction of the clock-scaled peak: the toy's bf16 500 TFLOP/s (1000 at
 * 2 GHz, run at 1 GHz) x 0.2 = 100 TFLOP/s, 1 TFLOP/s a unit, against
 * 500 x 0.8 = 400 (4 a unit) for its GEMMs. Weights MXFP4, 0.53125 B.
 *   8 experts of 1280 x 1280 x 4096: the 128 x 128 tile, 800 tiles, 8
 *     waves: t_c = 2 x 128 x 128 x 4096 / 1e12 = 134.218 us, t_m =
 *     8 x (1280 x 4096 x 2 + 4096 x 1280 x 0.53125) / 8 / 5e12 = 2.654 us,
 *     t_e = 100 x 128^2 x 2 / 5e12 = 0.655 us: 8 x 135.873 = 1086.98 us
 *     (its 64- and 16-row tiles: 16 x 68.43 = 1094.9, 64 x 17.86 =
 *     1143.1 us). At the GEMM efficiency: 8 x 35.21 = 281.67 us.
 *   100 experts of 2 rows (a decode step; n 128, k 4096): one 16-row tile
 *     each (the kernel's smallest, Marlin's block_size_m), 1 wave: t_c =
 *     2 x 16 x 128 x 4096 / 1e12 = 16.777 us, t_m = 100 x (2 x 4096 x 2
 *     + 4096 x 128 x 0.53125) / 5e12 = 5.898 us, t_e = 100 x 16 x 128 x
 *     2 / 5e12 = 0.082 us: 1 + 16.777 + 0.082 = 17.859 us, where the
 *     128-row tile would take 1 + 134.218 + 0.655 = 135.87 us; at the GEMM
 *     efficiency (128-row tiles only) 1 + 33.554 + 0.655 = 35.21 us.
 *     Without the kernel's own tiles (ntile_m 0) the same kernel takes
 *     the toy's 128-row tile: 135.87 us.
 */
Test(gpu, grouped_weight_only_kernel_runs_at_its_efficiency)
{
	static const int64_t marlin_m[] = {16, 32, 48, 64};
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = {.compute = DTYPE_BF16, .a_B = 2,
				    .b_B = 0.53125, .c_B = 2, .b_cold = 1,
				    .efficiency = 0.2, .tile_m = marlin_m,
				    .ntile_m = 4, .tile_n = 128};
	struct gpu_gemm_group big[8], small[100];
	double want;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	for (i = 0; i < 8; i++)
		big[i] = (struct gpu_gemm_group){1280, 1280, 4096};
	for (i = 0; i < 100; i++)
		small[i] = (struct gpu_gemm_group){2, 128, 4096};
	want = 8 * (1e-6 + 2.0 * 128 * 128 * 4096 / 1e12 +
		    100.0 * 128 * 128 * 2 / 5e12);
	cr_assert(gpu_fixture_near(gpu_grouped_gemm_q(&g, &q, big, 8).time_s,
				   want, 1e-9), "got %g s, expected %g s",
		  gpu_grouped_gemm_q(&g, &q, big, 8).time_s, want);
	cr_assert(gpu_fixture_near(want, 1086.98e-6, 1e-5));
	want = 1e-6 + 2.0 * 16 * 128 * 4096 / 1e12 + 100.0 * 16 * 128 * 2 / 5e12;
	cr_assert(gpu_fixture_near(gpu_grouped_gemm_q(&g, &q, small, 100).time_s,
				   want, 1e-9), "got %g s, expected %g s",
		  gpu_grouped_gemm_q(&g, &q, small, 100).time_s, want);
	cr_assert(gpu_fixture_near(want, 17.859e-6, 1e-4));
	q.ntile_m = 0;
	want = 1e-6 + 2.0 * 128 * 128 * 4096 / 1e12 + 100.0 * 128 * 128 * 2 / 5e12;
	cr_assert(gpu_fixture_near(gpu_grouped_gemm_q(&g, &q, small, 100).time_s,
				   want, 1e-9), "got %g s, expected %g s",
		  gpu_grouped_gemm_q(&g, &q, small, 100).time_s, want);
	cr_assert(gpu_fixture_near(want, 135.87e-6, 1e-4));
	q.ntile_m = 4;
	q.efficiency = 0;
	want = 8 * (1e-6 + 2.0 * 128 * 128 * 4096 / 4e12 +
		    100.0 * 128 * 128 * 2 / 5e12);
	cr_assert(gpu_fixture_near(gpu_grouped_gemm_q(&g, &q, big, 8).time_s,
				   want, 1e-9));
	want = 1e-6 + 2.0 * 128 * 128 * 4096 / 4e12 + 100.0 * 128 * 128 * 2 / 5e12;
	cr_assert(gpu_fixture_near(gpu_grouped_gemm_q(&g, &q, small, 100).time_s,
				   want, 1e-9));
}

/* The toy rule kernel's operands (bf16 activations, MXFP4 weights at
 * 0.53125 B an element with their scales, at 0.2 of the peak), picking
 * its row tile from tm[0..n) by the rule (tile_cover). */
static struct gpu_gemm_dtypes rule_q(const int64_t *tm, int n)
{
	struct gpu_gemm_dtypes q = {.compute = DTYPE_BF16, .a_B = 2,
				    .b_B = 0.53125, .c_B = 2, .b_cold = 1,
				    .efficiency = 0.2, .tile_m = tm,
				    .ntile_m = n, .tile_n = 128,
				    .tile_cover = 1};

	return q;
}

/*
 * A kernel that picks its tile by rule (tile_cover: triton_kernels'
 * block_m = max(16, min(next_power_of_2(rows an expert), 128))) runs the
 * listed tile that covers the mean rows of a group, not the fastest. The
 * toy at efficiency 0.2 (1 TFLOP/s a unit, 100 units), tiles 16, 32, 64,
 * 128 rows by 128 columns, 100 experts of n 128, k 4096, MXFP4 weights:
 *   80 rows each: the 128-row tile, one a group, 100 tiles = 1 wave:
 *     t_c = 2 x 128 x 128 x 4096 / 1e12 = 134.218 us, t_m = 100 x (80 x
 *     4096 x 2 + 4096 x 128 x 0.53125) / 5e12 = 18.68 us (under t_c),
 *     t_e = 100 x 128^2 x 2 / 5e12 = 0.655 us: 1 + 134.218 + 0.655 =
 *     135.87 us, where the fastest (16-row tiles, 5 a group, 5 waves of
 *     16.777 us) is under 5 x (1 + 16.777 + 18.68 / 5 + 0.082) = 108.2 us.
 *   200 rows each (past the last tile): 128 rows, 2 a group, 2 waves:
 *     2 x 135.87 = 271.7 us (t_m per wave 100 x (100 x 4096 x 2 + 4096 x
 *     128 x 0.53125) / 5e12 = 22.0 us, under t_c).
 *   2 rows each: the 16-row tile (as the fastest): 17.859 us.
 * Each also launches the rule's worst-case grid (empty_blocks_s): 80 rows
 * each, M = 8000 rows over E = 100 experts, ceil((8000 - 99) / 128) + 99
 * = 161 row blocks for the 100 that hold rows, 61 empty ones x 1 column
 * block = one wave of the 1 us overhead; 200 rows: ceil(19901 / 128) + 99
 * = 255 for 200, 55 empty, one wave; 2 rows: ceil(101 / 16) + 99 = 106
 * for 100, 6 empty, one wave: +1 us each.
 */
Test(gpu, grouped_rule_tile_covers_an_experts_rows)
{
	static const int64_t tm[] = {16, 32, 64, 128};
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = rule_q(tm, 4);
	struct gpu_gemm_group e80[100], e200[100], e2[100];
	double one = 1e-6 + 2.0 * 128 * 128 * 4096 / 1e12 +
		     100.0 * 128 * 128 * 2 / 5e12, cover, fastest;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	for (i = 0; i < 100; i++) {
		e80[i] = (struct gpu_gemm_group){80, 128, 4096};
		e200[i] = (struct gpu_gemm_group){200, 128, 4096};
		e2[i] = (struct gpu_gemm_group){2, 128, 4096};
	}
	cr_assert(gpu_fixture_near(one, 135.87e-6, 1e-4));
	cover = gpu_grouped_gemm_q(&g, &q, e80, 100).time_s;
	cr_assert(gpu_fixture_near(cover, one + 1e-6, 1e-9), "got %g s", cover);
	q.tile_cover = 0;
	fastest = gpu_grouped_gemm_q(&g, &q, e80, 100).time_s;
	cr_assert_lt(fastest, 108.2e-6, "fastest %g s", fastest);
	q.tile_cover = 1;
	cover = gpu_grouped_gemm_q(&g, &q, e200, 100).time_s;
	cr_assert(gpu_fixture_near(cover, 2 * one + 1e-6, 1e-9), "got %g s",
		  cover);
	cover = gpu_grouped_gemm_q(&g, &q, e2, 100).time_s;
	cr_assert(gpu_fixture_near(cover, 2e-6 + 2.0 * 16 * 128 * 4096 / 1e12 +
				   100.0 * 16 * 128 * 2 / 5e12, 1e-9),
		  "got %g s", cover);
}

/*
 * The rule counting more rows than a group gets (cover_rows: TensorRT-
 * LLM's TritonEPRouter keeps the other EP ranks' entries in the gather
 * index matmul_ogs sizes block_m from). The toy above, 100 experts of 20
 * rows each:
 *   cover_rows 0 (as 1): the 32-row tile, one a group, 100 tiles = 1
 *     wave: t_c = 2 x 32 x 128 x 4096 / 1e12 = 33.554 us, t_m = 100 x
 *     (20 x 4096 x 2 + 4096 x 128 x 0.53125) / 5e12 = 8.847 us (under
 *     t_c), t_e = 100 x 32 x 128 x 2 / 5e12 = 0.164 us: 1 + 33.554 +
 *     0.164 = 34.718 us
 *   cover_rows 4 (ep 4: the rule sees 80): the 128-row tile, one a group,
 *     the same 135.87 us as 80 rows (t_m 8.847 us, under t_c)
 *   cover_rows 1: as 0
 * Each launches the rule's grid too: 2000 rows (8000 counted at
 * cover_rows 4) over 100 experts, ceil((2000 - 99) / 32) + 99 = 159 row
 * blocks of 32 (ceil((8000 - 99) / 128) + 99 = 161 of 128) for the 100
 * holding rows: one wave of empty blocks, +1 us on each.
 */
Test(gpu, grouped_rule_tile_counts_the_rows_it_is_told)
{
	static const int64_t tm[] = {16, 32, 64, 128};
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = rule_q(tm, 4);
	struct gpu_gemm_group e20[100];
	double t32 = 1e-6 + 2.0 * 32 * 128 * 4096 / 1e12 +
		     100.0 * 32 * 128 * 2 / 5e12;
	double t128 = 1e-6 + 2.0 * 128 * 128 * 4096 / 1e12 +
		      100.0 * 128 * 128 * 2 / 5e12, t;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	for (i = 0; i < 100; i++)
		e20[i] = (struct gpu_gemm_group){20, 128, 4096};
	cr_assert(gpu_fixture_near(t32, 34.718e-6, 1e-4));
	t = gpu_grouped_gemm_q(&g, &q, e20, 100).time_s;
	cr_assert(gpu_fixture_near(t, t32 + 1e-6, 1e-9), "got %g s", t);
	q.cover_rows = 4;
	t = gpu_grouped_gemm_q(&g, &q, e20, 100).time_s;
	cr_assert(gpu_fixture_near(t, t128 + 1e-6, 1e-9), "got %g s", t);
	q.cover_rows = 1;
	t = gpu_grouped_gemm_q(&g, &q, e20, 100).time_s;
	cr_assert(gpu_fixture_near(t, t32 + 1e-6, 1e-9), "got %g s", t);
}

/*
 * The rule kernel's empty row blocks (matmul_ogs' non-persistent grid of
 * routing_data.n_blocks(M, block_m) x ceil(n / block_n) blocks): the toy
 * (100 units, 1 us a wave), one tile of 64 x 128 offered, 4 experts of 8
 * rows, n 12800 (100 column blocks), k 4096:
 *   cover_rows 1: M = 32 rows, ceil((32 - 3) / 64) + 3 = 4 row blocks,
 *     the 4 that hold rows: none empty (the base time t)
 *   cover_rows 5 (M = 160 counted): ceil((160 - 3) / 64) + 3 = 6, 2
 *     empty x 100 column blocks = 200 CTAs = 2 waves: t + 2 us
 *   cover_rows 8 (M = 256): ceil((256 - 3) / 64) + 3 = 7, 3 x 100 = 300
 *     CTAs = 3 waves: t + 3 us
 * The tile and the real tiles are the same in all three (64 rows).
 */
Test(gpu, grouped_rule_kernel_launches_its_worst_case_grid)
{
	static const int64_t tm[] = {64};
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = rule_q(tm, 1);
	struct gpu_gemm_group e8[4];
	double t, t5, t8;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	q.cover_rows = 1;
	for (i = 0; i < 4; i++)
		e8[i] = (struct gpu_gemm_group){8, 12800, 4096};
	t = gpu_grouped_gemm_q(&g, &q, e8, 4).time_s;
	q.cover_rows = 5;
	t5 = gpu_grouped_gemm_q(&g, &q, e8, 4).time_s;
	q.cover_rows = 8;
	t8 = gpu_grouped_gemm_q(&g, &q, e8, 4).time_s;
	cr_assert(gpu_fixture_near(t5 - t, 2e-6, 1e-6), "t %g t5 %g", t, t5);
	cr_assert(gpu_fixture_near(t8 - t, 3e-6, 1e-6), "t %g t8 %g", t, t8);
}

/*
 * Tiles an SM holds at once (resident: vLLM's Triton fused_moe at BLOCK
 * 16 x 128 x 128, num_stages 3, 54 KiB a CTA, four to an H200 SM): a wave
 * is units x resident tiles, which share the unit's math and pay one t_0.
 * The toy (100 units at 1 TFLOP/s, 5e12 B/s, 1 us a wave), the 16 x 128
 * tile alone (tile_cover), 100 experts of 16 rows, n 1280 (10 column
 * blocks), k 4096: 1000 tiles; operands D = 100 x (16 x 4096 x 2 + 4096 x
 * 1280 x 0.53125) = 291.6352 MB.
 *   resident 0 (one a unit): 10 waves of 100: t_c = 2 x 16 x 128 x 4096 /
 *     1e12 = 16.777 us, t_m = D / 10 / 5e12 = 5.833 us (under t_c), t_e =
 *     100 x 16 x 128 x 2 / 5e12 = 0.082 us: 10 x 17.859 = 178.59 us; the
 *     grid's empty blocks (M = 1600 over 100 experts: ceil(1501 / 16) + 99
 *     = 193 row blocks, 93 empty x 10 columns = 930) take 10 waves: 188.59
 *   resident 4: waves of 400, 400, 200: t_c 4 and 2 x 16.777, t_m D x 0.4
 *     / 5e12 = 23.33 and 11.665 us (under), t_e 0.328 and 0.164: 2 x
 *     (1 + 67.109 + 0.328) + (1 + 33.554 + 0.164) = 171.59 us, the 930
 *     empty blocks 3 waves: 174.59 us, 14 us (7 + 7 waves of t_0) less.
 */
Test(gpu, grouped_resident_tiles_share_a_wave)
{
	static const int64_t tm[] = {16};
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = rule_q(tm, 1);
	struct gpu_gemm_group e[100];
	double t1, t4;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	for (i = 0; i < 100; i++)
		e[i] = (struct gpu_gemm_group){16, 1280, 4096};
	t1 = gpu_grouped_gemm_q(&g, &q, e, 100).time_s;
	cr_assert(gpu_fixture_near(t1, 188.59e-6, 1e-4), "got %g s", t1);
	q.resident = 4;
	t4 = gpu_grouped_gemm_q(&g, &q, e, 100).time_s;
	cr_assert(gpu_fixture_near(t4, 174.59e-6, 1e-4), "got %g s", t4);
	cr_assert(gpu_fixture_near(t1 - t4, 14e-6, 1e-6), "%g", t1 - t4);
}

/*
 * One tile's most bandwidth (tile_Bps): a wave of a tiles loads at
 * min(the level, a x tile_Bps). The toy, the 16 x 128 tile, 4 experts of
 * 16 rows, n 128, k 4096: 4 tiles, one wave; D = 4 x (16 x 4096 x 2 + 4096
 * x 128 x 0.53125) = 1,638,400 B.
 *   no bound: t_m = D / 5e12 = 0.328 us (under t_c 16.777), t_e = 4 x 16 x
 *     128 x 2 / 5e12 = 0.0033 us: 1 + 16.777 + 0.0033 = 17.780 us
 *   tile_Bps 1 GB/s: the wave loads at 4 GB/s, t_m = 409.6 us: 1 + 409.6
 *     + 0.0033 = 410.603 us
 * Both launch M = 64 rows over 4 experts: ceil(61 / 16) + 3 = 7 row
 * blocks, 3 empty: one more wave, +1 us.
 */
Test(gpu, grouped_tile_bandwidth_bounds_a_thin_wave)
{
	static const int64_t tm[] = {16};
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = rule_q(tm, 1);
	struct gpu_gemm_group e[4];
	double t;
	int i;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	for (i = 0; i < 4; i++)
		e[i] = (struct gpu_gemm_group){16, 128, 4096};
	t = gpu_grouped_gemm_q(&g, &q, e, 4).time_s;
	cr_assert(gpu_fixture_near(t, 18.780e-6, 1e-4), "got %g s", t);
	q.tile_Bps = 1e9;
	t = gpu_grouped_gemm_q(&g, &q, e, 4).time_s;
	cr_assert(gpu_fixture_near(t, 411.603e-6, 1e-4), "got %g s", t);
}
