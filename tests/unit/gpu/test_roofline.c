/*
 * test_roofline.c - peaks, dtype support, memory levels and memory-bound
 * kernels (src/gpu/gpu.c) on the toy GPU of fixture.h.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "fixture.h"

Test(gpu, peak_is_zero_for_an_unsupported_dtype)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	cr_assert_eq(gpu_peak_flops(&g, DTYPE_BF16), 1000e12);
	cr_assert_eq(gpu_peak_flops(&g, DTYPE_MXFP4), 0);
	cr_assert_eq(gpu_sustained_flops(&g, DTYPE_MXFP4), 0);
	/* fp8: 2000 x 1000/2000 x 0.5 = 500 TFLOP/s. */
	cr_assert(gpu_fixture_near(gpu_sustained_flops(&g, DTYPE_FP8),
				   500e12, 1e-12));
}

Test(gpu, check_dtype_names_what_the_gpu_supports)
{
	struct gpu_spec g;
	struct diag d;
	char buf[512] = "";
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	cr_assert_not_null(f);
	gpu_fixture_toy(&g);
	diag_init(&d, f);
	cr_assert_eq(gpu_check_dtype(&g, DTYPE_BF16, &d), 0);
	cr_assert_eq(d.errors, 0);
	cr_assert_eq(gpu_check_dtype(&g, DTYPE_MXFP4, &d), -1);
	fclose(f);
	cr_assert_eq(d.errors, 1);
	cr_assert_not_null(strstr(buf, "gpu 'toy' has no mxfp4 matrix rate; "
				  "it supports bf16, fp8"), "got: %s", buf);
}

Test(gpu, serving_level_follows_the_working_set)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* L2 holds 10 MB, the LLC 100 MB. */
	cr_assert_eq(gpu_serving_level(&g, 10e6), GPU_LEVEL_L2);
	cr_assert_eq(gpu_serving_level(&g, 10e6 + 1), GPU_LEVEL_LLC);
	cr_assert_eq(gpu_serving_level(&g, 100e6), GPU_LEVEL_LLC);
	cr_assert_eq(gpu_serving_level(&g, 100e6 + 1), GPU_LEVEL_HBM);
	/* Without an LLC (NVIDIA) the step from L2 is straight to HBM. */
	g.llc.capacity_B = 0;
	cr_assert_eq(gpu_serving_level(&g, 50e6), GPU_LEVEL_HBM);
}

/* gpu_memory_op(r, w, flops, ws) must take t seconds, bound and level as
 * given. */
static void expect_op(const struct gpu_spec *g, double r, double w,
		      double flops, double ws, int bound, int level, double t)
{
	struct gpu_cost c = gpu_memory_op(g, r, w, flops, ws);

	cr_assert_eq(c.bound, bound, "bound %d, expected %d", c.bound, bound);
	cr_assert_eq(c.level, level, "level %d, expected %d", c.level, level);
	cr_assert(gpu_fixture_near(c.time_s, t, 1e-12), "got %g s, expected %g",
		  c.time_s, t);
}

Test(gpu, memory_op_runs_at_the_serving_levels_bandwidth)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* 8 MB read, 8 MB working set: L2, 40 TB/s x 0.5 -> 0.4 us. */
	expect_op(&g, 8e6, 0, 0, 8e6, GPU_BOUND_MEMORY, GPU_LEVEL_L2, 0.4e-6);
	/* 40 MB read + 40 MB written, 80 MB working set: LLC at 10 TB/s ->
	 * 80e6 / 1e13 = 8 us. */
	expect_op(&g, 40e6, 40e6, 0, 80e6, GPU_BOUND_MEMORY, GPU_LEVEL_LLC,
		  8e-6);
	/* The same op over 800 MB streams from HBM at 5 TB/s -> 16 us: the
	 * same bytes take twice as long once they no longer fit the LLC. */
	expect_op(&g, 40e6, 40e6, 0, 800e6, GPU_BOUND_MEMORY, GPU_LEVEL_HBM,
		  16e-6);
}

Test(gpu, memory_op_with_many_flops_is_vector_bound)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* 1e9 FLOP at 10 TFLOP/s = 100 us; 1 GB from HBM at 5 TB/s = 200 us,
	 * so memory-bound; 1e10 FLOP = 1 ms makes it compute-bound. */
	expect_op(&g, 5e8, 5e8, 1e9, 1e9, GPU_BOUND_MEMORY, GPU_LEVEL_HBM,
		  200e-6);
	expect_op(&g, 5e8, 5e8, 1e10, 1e9, GPU_BOUND_COMPUTE, GPU_LEVEL_HBM,
		  1e-3);
}

Test(gpu, tiny_kernel_is_launch_bound)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 5e-6;
	/* 1 MB from L2 at 20 TB/s = 50 ns, under the 5 us launch:
	 * t = 5.05 us. */
	expect_op(&g, 1e6, 0, 0, 1e6, GPU_BOUND_LAUNCH, GPU_LEVEL_L2,
		  5e-6 + 1e6 / 20e12);
	/* Nothing to move: no kernel, no launch. */
	cr_assert_eq(gpu_memory_op(&g, 0, 0, 0, 0).time_s, 0);
}

Test(gpu, usable_memory_is_the_configured_figure)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	cr_assert_eq(gpu_usable_memory_B(&g), 90e9);
}

Test(gpu, multi_tensor_op_streams_at_its_efficiency)
{
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	g.kernel_launch_s = 5e-6;
	g.multi_tensor_efficiency = 0.52;
	/* 14 B x 1.923e9 parameters (fused AdamW on bf16: read p, g, m, v,
	 * write p, m, v) from HBM at 5 TB/s x 0.52 = 2.6 TB/s, with 92
	 * launches of 5 us: 26.92e9 / 2.6e12 + 460 us = 10.354 + 0.46 ms. */
	c = gpu_multi_tensor_op(&g, 8 * 1.923e9, 6 * 1.923e9, 0, 92);
	cr_assert(gpu_fixture_near(c.time_s, 14 * 1.923e9 / 2.6e12 + 92 * 5e-6,
				   1e-9), "got %g s", c.time_s);
	cr_assert_eq(c.level, GPU_LEVEL_HBM);
	/* A small list still streams from HBM (states are never cached). */
	c = gpu_multi_tensor_op(&g, 1e6, 0, 0, 1);
	cr_assert_eq(c.level, GPU_LEVEL_HBM);
}

Test(gpu, strided_bytes_move_at_the_per_sm_rate)
{
	struct gpu_spec g;
	struct gpu_cost c;
	double ws = 1e9; /* past the toy's 100 MB caches: HBM, 5 TB/s */

	gpu_fixture_toy(&g);
	/* Without a per-SM rate: strided bytes at strided_efficiency of the
	 * level. 4 GB moved, 2 GB strided at 0.25: 2e9 / 5e12 + 2e9 /
	 * 1.25e12 = 0.4 + 1.6 = 2.0 ms. */
	g.strided_efficiency = 0.25;
	c = gpu_memory_ops(&g, 3e9, 1e9, 2e9, 0, ws, 1);
	cr_assert(gpu_fixture_near(c.time_s, 2.0e-3, 1e-9), "got %g s",
		  c.time_s);
	/* 10 GB/s a SM x 100 SMs = 1 TB/s for the strided bytes, whatever
	 * the memory (strided_efficiency no longer used): 2e9 / 5e12 + 2e9
	 * / 1e12 = 0.4 + 2 = 2.4 ms. */
	g.strided_sm_Bps = 10e9;
	c = gpu_memory_ops(&g, 3e9, 1e9, 2e9, 0, ws, 1);
	cr_assert(gpu_fixture_near(c.time_s, 2.4e-3, 1e-9), "got %g s",
		  c.time_s);
	/* 148 SMs instead of 100 (B200 against a 100-SM part): the strided
	 * part 1.48x faster, 2e9 / 1.48e12 = 1.3514 ms, + 0.4 ms. */
	g.compute_units = 148;
	c = gpu_memory_ops(&g, 3e9, 1e9, 2e9, 0, ws, 1);
	cr_assert(gpu_fixture_near(c.time_s, 0.4e-3 + 2e9 / 1.48e12, 1e-9),
		  "got %g s", c.time_s);
	/* 100 GB/s a SM x 148 = 14.8 TB/s, past the 5 TB/s the HBM
	 * streams: capped there, all 4 GB at 5 TB/s = 0.8 ms. */
	g.strided_sm_Bps = 100e9;
	c = gpu_memory_ops(&g, 3e9, 1e9, 2e9, 0, ws, 1);
	cr_assert(gpu_fixture_near(c.time_s, 0.8e-3, 1e-9), "got %g s",
		  c.time_s);
}

Test(gpu, scatter_add_bytes_move_at_the_atomic_rate)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* No scatter_add_bandwidth: the added bytes stream, nothing extra. */
	cr_assert_eq(gpu_scatter_add_extra_s(&g, 134217728), 0);
	/* H200's 0.248 TB/s against the toy's 5 TB/s HBM: 134,217,728 B
	 * (T 4096 x k 8 x h 2048 bf16) take 134217728 / 0.248e12 =
	 * 541.2 us instead of 134217728 / 5e12 = 26.8 us: 514.4 us more. */
	g.scatter_add_Bps = 0.248e12;
	cr_assert(gpu_fixture_near(gpu_scatter_add_extra_s(&g, 134217728),
				   134217728 / 0.248e12 - 134217728 / 5e12,
				   1e-9));
	/* A rate at or past the stream's is never a speed-up: 0. */
	g.scatter_add_Bps = 6e12;
	cr_assert_eq(gpu_scatter_add_extra_s(&g, 134217728), 0);
}

Test(gpu, ssm_state_bytes_move_at_the_update_rate)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* No ssm_update_bandwidth: the state streams, nothing extra. */
	cr_assert_eq(gpu_ssm_update_extra_s(&g, 4294967296.0), 0);
	/* H200's 2.84 TB/s against the toy's 5 TB/s HBM: the 4,294,967,296
	 * B of state of 1024 Nano sequences (read and written) take
	 * 4294967296 / 2.84e12 = 1.5123 ms instead of 4294967296 / 5e12 =
	 * 0.8590 ms: 0.6533 ms more. */
	g.ssm_update_Bps = 2.84e12;
	cr_assert(gpu_fixture_near(gpu_ssm_update_extra_s(&g, 4294967296.0),
				   6.5333e-4, 1e-4));
	/* A rate at or past the stream's is never a speed-up: 0. */
	g.ssm_update_Bps = 5e12;
	cr_assert_eq(gpu_ssm_update_extra_s(&g, 4294967296.0), 0);
}
