/*
 * test_gemm.c - the GEMM model (src/gpu/gpu_gemm.c) against derived
 * numbers on the toy GPU of fixture.h.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <signal.h>

#include "fixture.h"

Test(gpu, gemm_roofline_without_tiles_is_flops_over_sustained_rate)
{
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	g.gemm_tile_m.n = g.gemm_tile_n.n = 0;
	g.kernel_launch_s = 5e-6;
	/* R = peak x f_s/f_q x eta = 1000 x 1000/2000 x 0.8 = 400 TFLOP/s. */
	cr_assert(gpu_fixture_near(gpu_sustained_flops(&g, DTYPE_BF16),
				   400e12, 1e-12));
	/* 8192^3 bf16: F = 2 x 8192^3 = 1.0995e12 FLOP -> 2.749 ms at
	 * 400 TFLOP/s. Bytes 3 x 8192^2 x 2 B = 402.7 MB -> HBM at 5 TB/s =
	 * 80.5 us, so compute-bound: t = 2.749 ms + 5 us launch. */
	c = gpu_gemm(&g, DTYPE_BF16, 8192, 8192, 8192, 1);
	cr_assert(gpu_fixture_near(c.time_s,
				   2.0 * 8192 * 8192 * 8192 / 400e12 + 5e-6,
				   1e-12), "got %g s", c.time_s);
	cr_assert_eq(c.bound, GPU_BOUND_COMPUTE);
	cr_assert_eq(c.level, GPU_LEVEL_HBM);
	cr_assert(gpu_fixture_near(c.flops, 2.0 * 8192 * 8192 * 8192, 1e-12));
}

Test(gpu, gemm_large_square_is_waves_of_tiles)
{
	struct gpu_spec g;
	struct gpu_cost c;
	double tc, tm, te, expect;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* m = n = 12800 with 128 x 128 tiles: 100 x 100 = 10000 tiles = 100
	 * full waves of U = 100. k = 12800, bf16, R_u = 4 TFLOP/s:
	 *   t_c = 2 x 128 x 128 x 12800 / 4e12 = 104.858 us
	 * A wave is a 10 x 10 block of tiles (c = round(sqrt(100)) = 10):
	 *   D = (10 x 128 + 10 x 128) x 12800 x 2 B = 65.5 MB
	 * working set 3 x 12800^2 x 2 B = 983 MB -> HBM, 5 TB/s:
	 *   t_m = 13.1 us (under t_c), t_e = 100 x 128^2 x 2 B / 5e12 = 0.655 us
	 * t = 100 x (1 us + 104.858 + 0.655) = 10.651 ms. */
	tc = 2.0 * 128 * 128 * 12800 / 4e12;
	tm = (10.0 * 128 + 10.0 * 128) * 12800 * 2 / 5e12;
	te = 100.0 * 128 * 128 * 2 / 5e12;
	cr_assert_lt(tm, tc);
	expect = 100 * (1e-6 + tc + te);
	c = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	cr_assert(gpu_fixture_near(c.time_s, expect, 1e-9),
		  "got %g s, expected %g s", c.time_s, expect);
	/* 2 x 12800^3 / 10.651 ms = 393.8 TFLOP/s: 98.5% of R. */
	cr_assert(gpu_fixture_near(c.flops / c.time_s, 393.8e12, 1e-3));
}

Test(gpu, gemm_one_tile_more_than_units_takes_two_waves)
{
	struct gpu_spec g;
	struct gpu_cost c100, c101;
	double w1, w2;

	gpu_fixture_toy(&g);
	/* batch of 128 x 128 x 1024 bf16 GEMMs, one tile each. 100 of them:
	 * one wave. Working set 100 x (2 x 128 x 1024 x 2 + 128^2 x 2) B =
	 * 55.7 MB -> LLC, 10 TB/s.
	 *   t_c = 2 x 128^2 x 1024 / 4e12 = 8.389 us
	 *   t_m = 100 x (128 + 128) x 1024 x 2 B / 1e13 = 5.243 us (hidden)
	 *   t_e = 100 x 128^2 x 2 B / 1e13 = 0.328 us
	 * one wave = 8.717 us. */
	w1 = 2.0 * 128 * 128 * 1024 / 4e12 + 100.0 * 128 * 128 * 2 / 1e13;
	c100 = gpu_gemm(&g, DTYPE_BF16, 128, 128, 1024, 100);
	cr_assert(gpu_fixture_near(c100.time_s, w1, 1e-9), "got %g", c100.time_s);
	/* 101 GEMMs = U + 1 tiles: a second wave of one tile, as long as a
	 * full one in compute (8.389 us) plus its own store (0.0033 us):
	 * 17.109 us, 1.96 x the 100-GEMM time for 1% more work. */
	w2 = 2.0 * 128 * 128 * 1024 / 4e12 + 1.0 * 128 * 128 * 2 / 1e13;
	c101 = gpu_gemm(&g, DTYPE_BF16, 128, 128, 1024, 101);
	cr_assert(gpu_fixture_near(c101.time_s, w1 + w2, 1e-9),
		  "got %g, expected %g", c101.time_s, w1 + w2);
	cr_assert_gt(c101.time_s, 1.9 * c100.time_s);
}

Test(gpu, gemm_padding_makes_skinny_n_pay_for_a_full_tile)
{
	struct gpu_spec g;
	struct gpu_cost c64, c128;

	gpu_fixture_toy(&g);
	/* n = 64 still occupies 128-wide tiles. 12800 x n x 12800 bf16:
	 * 100 x 1 tiles, one wave, t_c = 2 x 128^2 x 12800 / 4e12 =
	 * 104.858 us for n = 64 and n = 128 alike. The wave holds the whole
	 * GEMM, so its loads are A + B = (12800 + n) x 12800 x 2 B = 329 or
	 * 331 MB (HBM, 5 TB/s: 65.9 or 66.2 us, hidden under t_c), and the
	 * store is 100 full tiles either way. Same time for half the FLOPs. */
	c64 = gpu_gemm(&g, DTYPE_BF16, 12800, 64, 12800, 1);
	c128 = gpu_gemm(&g, DTYPE_BF16, 12800, 128, 12800, 1);
	cr_assert(gpu_fixture_near(c64.time_s, c128.time_s, 1e-12));
	cr_assert(gpu_fixture_near(c64.flops, c128.flops / 2, 1e-12));
}

Test(gpu, gemm_short_k_cannot_amortise_the_wave_overhead)
{
	struct gpu_spec g;
	struct gpu_cost shortk, longk;
	double e_short, e_long;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* 1280 x 1280 (100 tiles, one wave), bf16, L2/LLC resident.
	 * k = 128: t_c = 2 x 128^2 x 128 / 4e12 = 1.049 us, plus 1 us
	 * overhead and the store -> under half of R.
	 * k = 16384: t_c = 134.2 us, the 1 us is under 1%. */
	shortk = gpu_gemm(&g, DTYPE_BF16, 1280, 1280, 128, 1);
	longk = gpu_gemm(&g, DTYPE_BF16, 1280, 1280, 16384, 1);
	e_short = shortk.flops / shortk.time_s / 400e12;
	e_long = longk.flops / longk.time_s / 400e12;
	cr_assert_lt(e_short, 0.5, "short-K efficiency %g", e_short);
	cr_assert_gt(e_long, 0.98, "long-K efficiency %g", e_long);
}

Test(gpu, gemm_single_tile_long_k_splits_k_across_units)
{
	struct gpu_spec g;
	struct gpu_cost c;
	double tc, te, tred, expect;

	gpu_fixture_toy(&g);
	/* 128 x 128 x 2^20 bf16: one tile. Splitting k 64 ways (64 tiles <=
	 * 100 units; 128 would not fit) gives k_s = 16384:
	 *   t_c = 2 x 128^2 x 16384 / 4e12 = 134.2 us
	 *   t_m = A + B = 256 x 2^20 x 2 B = 536.9 MB / 5 TB/s = 107.4 us
	 *         (working set > LLC: HBM), hidden under t_c
	 *   t_e = 64 FP32 partial tiles = 64 x 128^2 x 4 B / 5e12 = 0.839 us
	 *   t_red = 128^2 x (64 x 4 + 2) B / 5e12 = 0.845 us
	 * t = 135.9 us, against 8.59 ms unsplit. */
	tc = 2.0 * 128 * 128 * 16384 / 4e12;
	te = 64.0 * 128 * 128 * 4 / 5e12;
	tred = 128.0 * 128 * (64 * 4 + 2) / 5e12;
	expect = tc + te + tred;
	c = gpu_gemm(&g, DTYPE_BF16, 128, 128, 1048576, 1);
	cr_assert(gpu_fixture_near(c.time_s, expect, 1e-9),
		  "got %g, expected %g", c.time_s, expect);
}

Test(gpu, gemm_skinny_gemm_is_memory_bound)
{
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	/* 1,280,000 x 128 x 128 bf16: 10000 tiles in one column, 100 waves.
	 * A wave: 100 tiles reading one A panel each, r = 100, c = 1:
	 *   t_m = (100 x 128 + 128) x 128 x 2 B / 5e12 = 0.662 us
	 *   t_c = 2 x 128^3 / 4e12 = 1.049 us
	 * so the mainloop is still compute-bound, but the C store
	 *   t_e = 100 x 128^2 x 2 B / 5e12 = 0.655 us
	 * is added: memory time 1.317 us per wave > 1.049 us compute. */
	c = gpu_gemm(&g, DTYPE_BF16, 1280000, 128, 128, 1);
	cr_assert_eq(c.bound, GPU_BOUND_MEMORY);
	cr_assert(gpu_fixture_near(c.time_s,
				   100 * (2.0 * 128 * 128 * 128 / 4e12 +
					  100.0 * 128 * 128 * 2 / 5e12),
				   1e-9), "got %g", c.time_s);
}

Test(gpu, gemm_fp8_writes_bf16_results)
{
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	g.gemm_tile_m.n = g.gemm_tile_n.n = 0;
	/* Roofline bytes = working set: fp8 operands (1 B) and a bf16
	 * result (2 B): 1000 x 1000 x (1 + 1) + 1000 x 1000 x 2 = 4 MB. */
	c = gpu_gemm(&g, DTYPE_FP8, 1000, 1000, 1000, 1);
	cr_assert(gpu_fixture_near(c.bytes, 4e6, 1e-12), "got %g", c.bytes);
	cr_assert_eq(c.level, GPU_LEVEL_L2);
}

Test(gpu, gemm_zero_work_costs_nothing)
{
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 5e-6;
	c = gpu_gemm(&g, DTYPE_BF16, 0, 4096, 4096, 1);
	cr_assert_eq(c.time_s, 0);
	cr_assert_eq(c.flops, 0);
}

Test(gpu, gemm_unsupported_dtype_is_a_bug, .signal = SIGABRT)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* The caller must have rejected mxfp4 with gpu_check_dtype(). */
	gpu_gemm(&g, DTYPE_MXFP4, 1024, 1024, 1024, 1);
}

Test(gpu, gemm_negative_size_is_a_bug, .signal = SIGABRT)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	gpu_gemm(&g, DTYPE_BF16, -1, 1024, 1024, 1);
}

Test(gpu, gemm_kernel_overhead_is_paid_once_per_kernel)
{
	struct gpu_spec g;
	struct gpu_cost c0, c1, r0, r1;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* The large square of gemm_large_square_is_waves_of_tiles: 100 waves,
	 * t = 100 x (1 us + t_c + t_e). A 3 us kernel overhead (a persistent
	 * kernel's set-up and drain) adds 3 us once, not once per wave (that
	 * would be 300 us): t = 10.651 ms + 3 us. */
	c0 = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	g.gemm_kernel_overhead_s = 3e-6;
	c1 = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	cr_assert(gpu_fixture_near(c1.time_s - c0.time_s, 3e-6, 1e-6),
		  "got %g s more", c1.time_s - c0.time_s);
	/* Without tile data the roofline has no kernel body to set up: the
	 * overhead belongs to the tile model only. */
	g.gemm_tile_m.n = g.gemm_tile_n.n = 0;
	r1 = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	g.gemm_kernel_overhead_s = 0;
	r0 = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	cr_assert(gpu_fixture_near(r1.time_s, r0.time_s, 1e-12));
}

/*
 * A library that sums the k slices of a split GEMM in a second kernel
 * (gemm_split_k_kernels 2: hipBLASLt's GlobalSplitU with MultipleBuffer
 * accumulation, then its PostGSU conversion kernel) pays a second launch
 * for a split plan, and only for one. Toy GPU, 5 us launch.
 *
 * m = 1, n = 128, k = 65536, bf16: one 128 x 128 tile, so k may be split
 * up to s = 64 (64 tiles <= U = 100, 128 > 100). Unsplit, the tile's
 * mainloop is t_c = 2 x 128 x 128 x 65536 / 4e12 = 536.9 us; at s = 64
 * each slice's is 8.4 us and the slices run in one wave (operands 16.9 MB
 * in all, from the LLC at 10 TB/s: 1.7 us; FP32 partials 64 x 128^2 x 4 B
 * = 4.2 MB: 0.42 us; their reduction 128 x (64 x 4 + 2) B: 3 ns), so the
 * plan splits: one kernel more, 5 us more. An engine's own skinny kernel
 * (one_kernel) keeps one launch.
 *
 * m = n = 1280, k = 128: 10 x 10 = 100 tiles already fill the U = 100
 * units, so no split is allowed (200 > 100): one launch either way.
 */
Test(gpu, gemm_split_k_second_kernel_costs_a_launch)
{
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = {.compute = DTYPE_BF16, .a_B = 2, .b_B = 2,
				     .c_B = 2};
	double one, two, skinny, flat1, flat2;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 5e-6;
	g.gemm_split_k_kernels = 1;
	one = gpu_gemm(&g, DTYPE_BF16, 1, 128, 65536, 1).time_s;
	flat1 = gpu_gemm(&g, DTYPE_BF16, 1280, 1280, 128, 1).time_s;
	g.gemm_split_k_kernels = 2;
	two = gpu_gemm(&g, DTYPE_BF16, 1, 128, 65536, 1).time_s;
	flat2 = gpu_gemm(&g, DTYPE_BF16, 1280, 1280, 128, 1).time_s;
	q.one_kernel = 1;
	skinny = gpu_gemm_q(&g, &q, 1, 128, 65536, 1).time_s;
	cr_assert_lt(one, 20e-6, "not split: %g s", one);
	cr_assert_float_eq(two - one, 5e-6, 1e-15);
	cr_assert_float_eq(skinny, one, 1e-15);
	cr_assert_float_eq(flat2, flat1, 1e-15);
}

/*
 * The library weighs the second kernel when it picks a plan: a split
 * that saves less than a launch is not taken. The GEMM above (m = 1,
 * n = 128, k = 65536, toy GPU) with a 1 ms launch and the slices summed
 * in a second kernel: split 64 ways it is two launches, 2 ms, plus its
 * ~12 us body; unsplit it is one launch, 1 ms, plus the tile's mainloop
 * t_c = 2 x 128 x 128 x 65536 / 4e12 = 536.87 us (its loads, 16.9 MB
 * at 10 TB/s, hide under it): 1.537 ms, so it stays unsplit (before,
 * the split plan: 2.01 ms). An engine's one-kernel skinny GEMM still
 * splits: 1 ms + its ~12 us.
 */
Test(gpu, gemm_split_k_weighs_its_second_launch)
{
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = {.compute = DTYPE_BF16, .a_B = 2, .b_B = 2,
				     .c_B = 2, .one_kernel = 1};
	double t, skinny;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 1e-3;
	g.gemm_split_k_kernels = 2;
	t = gpu_gemm(&g, DTYPE_BF16, 1, 128, 65536, 1).time_s;
	cr_assert(gpu_fixture_near(t, 1e-3 + 2.0 * 128 * 128 * 65536 / 4e12,
				   1e-3), "got %g s", t);
	skinny = gpu_gemm_q(&g, &q, 1, 128, 65536, 1).time_s;
	cr_assert(skinny > 1e-3 && skinny < 1e-3 + 20e-6, "got %g s", skinny);
}

/*
 * Two accumulator buffers per SM (gemm_accumulator_stages 2, Blackwell's
 * CUTLASS sm100 kernels): a tile's epilogue runs under the next tile's
 * mainloop, and the load warp streams the next tile's stages without a
 * fill between tiles, so no wave pays t_0 (the first fill is in
 * gemm_kernel_overhead, 0 here). Toy GPU, 1 us per wave (t_0).
 *
 * The large square of gemm_large_square_is_waves_of_tiles (100 waves,
 * t_c = 104.858 us, t_m = 13.107 us, t_e = 0.655 us): t_m + t_e stays
 * under t_c, so each wave costs t_c and only the last epilogue drains:
 * t = 100 x 104.858 us + 0.655 us, 100 x 1 us + 99 x t_e = 164.88 us
 * less than one buffer's 100 x (1 us + t_c + t_e).
 *
 * An fp32-accumulating GEMM (gpu_gemm_q, c_B 8: read C, write D) at
 * m = n = 12800, k = 1024: t_c = 2 x 128^2 x 1024 / 4e12 = 8.389 us;
 * a wave's 10 x 10 block loads (1280 + 1280) x 1024 x 2 B = 5.243 MB,
 * the working set (2 x 12800 x 1024 x 2 B + 12800^2 x 8 B = 1.36 GB)
 * is in HBM at 5 TB/s: t_m = 1.049 us, t_e = 100 x 128^2 x 8 B / 5e12 =
 * 2.621 us. One buffer: 100 x (1 + 8.389 + 2.621) us = 1201.0 us. Two:
 * 100 x max(8.389, 1.049 + 2.621) + 2.621 = 841.5 us (r17's form, which
 * kept t_0 a wave, gave 941.5 us: fails).
 */
Test(gpu, gemm_two_accumulator_stages_hide_the_epilogue)
{
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = {.compute = DTYPE_BF16, .a_B = 2, .b_B = 2, .c_B = 8};
	struct gpu_cost one, two;
	double tc, te, expect;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	g.gemm_accumulator_stages = 1;
	one = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	g.gemm_accumulator_stages = 2;
	two = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	tc = 2.0 * 128 * 128 * 12800 / 4e12;
	te = 100.0 * 128 * 128 * 2 / 5e12;
	expect = 100 * tc + te;
	cr_assert(gpu_fixture_near(two.time_s, expect, 1e-9),
		  "got %g s, expected %g s", two.time_s, expect);
	cr_assert(gpu_fixture_near(one.time_s - two.time_s, 100e-6 + 99 * te,
				   1e-6),
		  "saved %g s", one.time_s - two.time_s);

	g.gemm_accumulator_stages = 1;
	one = gpu_gemm_q(&g, &q, 12800, 12800, 1024, 1);
	cr_assert(gpu_fixture_near(one.time_s, 1201.0e-6, 1e-4),
		  "got %g s", one.time_s);
	g.gemm_accumulator_stages = 2;
	two = gpu_gemm_q(&g, &q, 12800, 12800, 1024, 1);
	cr_assert(gpu_fixture_near(two.time_s, 841.5e-6, 1e-4),
		  "got %g s", two.time_s);
}

/*
 * Tile bandwidth (gemm_tile_bandwidth; b200's NVFP4: CUTLASS's persistent
 * kGemm kernels). Toy GPU, bf16, beta_t = 10 GB/s a tile.
 * m = 1, n = 1280, k = 65536: ceil(1280 / 128) = 10 tiles, one wave.
 * Working set (1 + 1280) x 65536 x 2 B + 1280 x 2 B = 167.9 MB > the
 * 100 MB LLC: HBM, 10 TB/s x 0.5 = 5 TB/s. Without the bound k is split
 * 8 ways (80 tiles <= 100 units; 16 ways, 160, would not fit) and the
 * weights stream at 5 TB/s: t_m = 167.9 MB / 5 TB/s = 33.6 us under
 * t_c = 2 x 128^2 x 8192 / 4 TFLOP/s = 67.1 us a slice, ~68 us in all.
 * With it k is not split and the wave's 10 tiles load at
 * min(5 TB/s, 10 x 10 GB/s) = 100 GB/s:
 *   t_m = (1 + 1280) x 65536 x 2 B / 100 GB/s = 1.679 ms
 *   t_c = 2 x 128^2 x 65536 / 4 TFLOP/s = 0.537 ms (hidden)
 *   t_e = 10 x 128^2 x 2 B / 5 TB/s = 65.5 ns (stores at the level's rate)
 * t = 1.679 ms + 65.5 ns, memory-bound.
 */
Test(gpu, gemm_tile_bandwidth_bounds_a_few_tiles_and_forbids_split_k)
{
	struct gpu_spec g;
	struct gpu_cost c;
	double expect = 1281.0 * 65536 * 2 / 100e9 + 10.0 * 128 * 128 * 2 / 5e12;

	gpu_fixture_toy(&g);
	c = gpu_gemm(&g, DTYPE_BF16, 1, 1280, 65536, 1);
	cr_assert_lt(c.time_s, 100e-6, "split, at 5 TB/s: %g s", c.time_s);
	g.gemm_tile_Bps[DTYPE_BF16] = 10e9;
	c = gpu_gemm(&g, DTYPE_BF16, 1, 1280, 65536, 1);
	cr_assert(gpu_fixture_near(c.time_s, expect, 1e-9),
		  "got %g, expected %g", c.time_s, expect);
	cr_assert_eq(c.bound, GPU_BOUND_MEMORY);
	/* Another dtype keeps its split: the bound is per compute dtype. */
	c = gpu_gemm(&g, DTYPE_FP8, 1, 1280, 65536, 1);
	cr_assert_lt(c.time_s, 100e-6, "fp8 split: %g s", c.time_s);
}

/*
 * A full wave whose tiles together could stream faster than the level
 * (100 tiles x 1 TB/s = 100 TB/s > 5 TB/s) costs the same with the bound
 * as without: 12,800 x 128 x 4096 bf16 is 100 tiles, one wave, never
 * split (100 tiles already fill the 100 units), so B_w = min(5 TB/s,
 * 100 TB/s) = 5 TB/s either way.
 */
Test(gpu, gemm_tile_bandwidth_above_the_level_changes_nothing)
{
	struct gpu_spec g;
	struct gpu_cost a, b;

	gpu_fixture_toy(&g);
	a = gpu_gemm(&g, DTYPE_BF16, 12800, 128, 4096, 1);
	g.gemm_tile_Bps[DTYPE_BF16] = 1e12;
	b = gpu_gemm(&g, DTYPE_BF16, 12800, 128, 4096, 1);
	cr_assert(gpu_fixture_near(b.time_s, a.time_s, 1e-12),
		  "%g vs %g s", b.time_s, a.time_s);
}

/*
 * A weight-only kernel (gpu_gemm_q efficiency > 0: vLLM's Marlin linear,
 * gpu weight_only_linear_efficiency) is the roofline at that share of the
 * clock-scaled peak, without tiles (Marlin's striped partition; its rate
 * is flat in m past 64 rows, gpu_gemm.c). Toy GPU: clock-scaled bf16 peak
 * 1000 x 1000 / 2000 = 500 TFLOP/s, x 0.2 = 100 TFLOP/s; HBM 5 TB/s (the
 * weights are cold). Weights 1 B, inputs and outputs 2 B; n = k = 4096:
 *   m = 4096: 2 x 4096^3 = 137.439 GFLOP / 1e14 = 1374.39 us; bytes
 *     33,554,432 + 16,777,216 + 33,554,432 = 83.9 MB / 5e12 = 16.8 us
 *     -> 1374.39 us
 *   m = 100: 2 x 100 x 4096^2 = 3.3554 GFLOP -> 33.554 us (bytes 18.4 MB,
 *     3.68 us): 4096 / 100 = 40.96 times less, no 128-row tile padding
 *   m = 1: 33.55 MFLOP -> 0.34 us; bytes 8192 + 16,777,216 + 8192 =
 *     16,793,600 / 5e12 = 3.3587 us: memory-bound on the weights
 * The same GEMM at efficiency 0 keeps the tile model (m = 4096: 1024
 * tiles, 11 waves of t_c = 2 x 128^2 x 4096 / 4e12 = 33.554 us, their
 * loads under it, the epilogues 10 x 0.6554 + 0.1573 us): 375.81 us.
 */
Test(gpu, gemm_weight_only_kernel_is_a_roofline_at_its_efficiency)
{
	struct gpu_spec g;
	struct gpu_gemm_dtypes q = {.compute = DTYPE_BF16, .a_B = 2, .b_B = 1,
				     .c_B = 2, .b_cold = 1, .efficiency = 0.2};
	double big, mid, one, tiles;

	gpu_fixture_toy(&g);
	big = gpu_gemm_q(&g, &q, 4096, 4096, 4096, 1).time_s;
	mid = gpu_gemm_q(&g, &q, 100, 4096, 4096, 1).time_s;
	one = gpu_gemm_q(&g, &q, 1, 4096, 4096, 1).time_s;
	cr_assert(gpu_fixture_near(big, 1374.39e-6, 1e-5), "got %g s", big);
	cr_assert(gpu_fixture_near(mid, 33.554e-6, 1e-4), "got %g s", mid);
	cr_assert(gpu_fixture_near(big / mid, 40.96, 1e-9), "ratio %g",
		  big / mid);
	cr_assert(gpu_fixture_near(one, 3.3587e-6, 1e-4), "got %g s", one);
	q.efficiency = 0;
	tiles = gpu_gemm_q(&g, &q, 4096, 4096, 4096, 1).time_s;
	cr_assert(gpu_fixture_near(tiles, 375.81e-6, 1e-4), "got %g s", tiles);
}
