/*
 * test_chunk.c - the chunked linear-recurrence kernels (src/gpu/
 * gpu_chunk.c: Mamba-2 SSD, flash-linear-attention chunk_*) on the toy
 * GPU of fixture.h, and the GB200 preset against the flash-linear-
 * attention measurement its chunk_fwd_efficiency comes from.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_gpu.h"
#include "fixture.h"

/* The toy with the chunk kernels measured: forward 0.05, backward 0.025
 * of its clock-scaled bf16 peak 1000 x 1000/2000 = 500 TFLOP/s, i.e. 25
 * and 12.5 TFLOP/s. */
static void toy(struct gpu_spec *g)
{
	gpu_fixture_toy(g);
	g->chunk_fwd_efficiency = 0.05;
	g->chunk_bwd_efficiency = 0.025;
}

/* Gated DeltaNet's state kernel (gdn.c gdn_h) over 8192 (chunk, head)
 * pairs: products of (64, 128, 256), bf16 in and out. */
static struct gpu_chunk_shape gdn_h(int bwd)
{
	struct gpu_chunk_shape s = {64, 128, 256, 8192, 2, 2, bwd};

	return s;
}

Test(gpu_chunk, forward_runs_at_the_measured_rate)
{
	struct gpu_spec g;
	struct gpu_chunk_shape s = gdn_h(0);
	struct gpu_cost c;

	toy(&g);
	c = gpu_chunk_gemm(&g, DTYPE_BF16, &s);
	/* F = 2 x 64 x 128 x 256 x 8192 = 3.4360e10 FLOP at 25 TFLOP/s:
	 * 1.37439 ms. W = 8192 x ((64 x 256 + 256 x 128) x 2 + 64 x 128 x
	 * 2) = 8192 x 114688 = 9.3952e8 B (> the LLC's 100 MB: HBM at 5
	 * TB/s, 0.18790 ms): compute-bound; the toy has no launch cost. */
	cr_assert(gpu_fixture_near(c.flops, 3.4359738e10, 1e-6));
	cr_assert(gpu_fixture_near(c.bytes, 9.3952e8, 1e-4));
	cr_assert(gpu_fixture_near(c.time_s, 1.374390e-3, 1e-5),
		  "got %g", c.time_s);
	cr_assert_eq(c.bound, GPU_BOUND_COMPUTE);
	cr_assert_eq(c.level, GPU_LEVEL_HBM);
}

Test(gpu_chunk, backward_runs_at_its_own_rate)
{
	struct gpu_spec g;
	struct gpu_chunk_shape s = gdn_h(1);

	toy(&g);
	/* 3.4360e10 FLOP at 12.5 TFLOP/s: 2.74878 ms. */
	cr_assert(gpu_fixture_near(gpu_chunk_gemm(&g, DTYPE_BF16, &s).time_s,
				   2.748779e-3, 1e-5));
	/* Without a backward efficiency the forward's (spec_gpu.c). */
}

Test(gpu_chunk, fp32_states_make_it_memory_bound)
{
	struct gpu_spec g;
	/* a product with k = 1 and fp32 results (a state write):
	 * F = 2 x 64 x 64 x 1 x 1e6 = 8.192e9 FLOP, 0.32768 ms at 25 TFLOP/s;
	 * W = 1e6 x ((64 + 64) x 2 + 64 x 64 x 4) = 1.664e10 B, 3.328 ms at
	 * HBM's 5 TB/s. */
	struct gpu_chunk_shape s = {64, 64, 1, 1e6, 2, 4, 0};
	struct gpu_cost c;

	toy(&g);
	c = gpu_chunk_gemm(&g, DTYPE_BF16, &s);
	cr_assert(gpu_fixture_near(c.time_s, 3.328e-3, 1e-9), "got %g",
		  c.time_s);
	cr_assert_eq(c.bound, GPU_BOUND_MEMORY);
}

Test(gpu_chunk, without_a_measurement_the_gemm_path)
{
	struct gpu_spec g;
	struct gpu_chunk_shape s = gdn_h(0);
	struct gpu_cost a, b;

	gpu_fixture_toy(&g);	/* no chunk efficiency */
	a = gpu_chunk_gemm(&g, DTYPE_BF16, &s);
	b = gpu_gemm(&g, DTYPE_BF16, 64, 128, 256, 8192);
	cr_assert_eq(a.time_s, b.time_s);
	cr_assert_eq(a.flops, b.flops);
	/* and the measured class is far slower than the GEMM path here
	 * (0.05 of the peak against the tile model's 0.8) */
	toy(&g);
	cr_assert_gt(gpu_chunk_gemm(&g, DTYPE_BF16, &s).time_s,
		     4 * b.time_s);
}

Test(gpu_chunk, zero_work_costs_nothing)
{
	struct gpu_spec g;
	struct gpu_chunk_shape s = {64, 128, 256, 0, 2, 2, 0};

	toy(&g);
	cr_assert_eq(gpu_chunk_gemm(&g, DTYPE_BF16, &s).time_s, 0);
}

/* The GB200 preset reproduces the flash-linear-attention row its
 * chunk_fwd_efficiency was taken from (configs/gpus/gb200.yaml:
 * fla-org/flash-linear-attention @ 01c4202e README.md, chunk_gdn forward,
 * B4 T4096 H64 D128: 1.581 ms measured). gdn.c's five forward kernels at
 * C = 64, d_k = d_v = 128 over G = 4 x 4096 x 64 / 64 = 16384 pairs, at
 * 0.047 x 2500 = 117.5 TFLOP/s against HBM's 8 x 0.88 = 7.04 TB/s (every
 * kernel's bytes exceed the 126 MB L2), 5 us a launch:
 *   kkt   (64, 64, 128), fp32 A: 1.718e10 FLOP 146.21 us; 805.3 MB 114.39
 *   solve (64, 64, 64/6): 1.790e8 B, 25.42 us (products 12.18): memory
 *   w_u   (64, 256, 64): 292.42 us; 1208 MB 171.59
 *   h     (64, 128, 256): 584.85 us; 1879 MB 266.91
 *   o     (64, 128, 256): 584.85 us; the same bytes
 * = 1633.75 us + 25 us of launches = 1.65875 ms, +4.9 % on the
 * measurement (0.047 is the mean of two rows; fla's own l2norm and
 * cumsum kernels are inside the measured time, outside these five). */
Test(gpu_chunk, gb200_reproduces_its_source_row)
{
	struct arena a;
	struct diag d;
	struct gpu_spec g;
	struct config_ctx cx = {&a, &d, "."};
	const double C = 64, dk = 128, dv = 128, G = 4 * 4096 * 64 / 64;
	const double shape[5][2] = {
		{C, dk}, {C, C / 6}, {dk + dv, C}, {dv, 2 * dk},
		{dv, dk + C + C * dk / dv},
	};
	double t = 0, f = 0;
	int i;

	arena_init(&a);
	diag_init(&d, stderr);
	memset(&g, 0, sizeof(g));
	cr_assert_eq(config_load(&cx, &gpu_schema, "gb200", NULL, 0, &g), 0);
	for (i = 0; i < 5; i++) {
		struct gpu_chunk_shape s = {C, shape[i][0], shape[i][1], G, 2,
					    i == 0 ? 4 : 2, 0};
		struct gpu_cost c = gpu_chunk_gemm(&g, DTYPE_BF16, &s);

		cr_assert_eq(c.bound, i == 1 ? GPU_BOUND_MEMORY
					     : GPU_BOUND_COMPUTE, "kernel %d", i);
		t += c.time_s;
		f += c.flops;
	}
	cr_assert(gpu_fixture_near(f, 4 * 4096 * 64 * 181589.33, 1e-6));
	cr_assert(gpu_fixture_near(t, 1.65875e-3, 1e-4), "got %g s", t);
	cr_assert(gpu_fixture_near(t, 1.581e-3, 0.05), "got %g s", t);
	arena_release(&a);
}
