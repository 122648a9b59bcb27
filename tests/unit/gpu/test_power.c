/*
 * test_power.c - the matrix clock under the power limit (gpu_power.c) on
 * the toy GPU of fixture.h (sustained 1000 MHz) given a power model:
 * burst 1500 MHz, a GEMM's power at burst p_b = 2 (of the limit), an
 * HBM-bound kernel's p_o = 0.5, the idle board's 0.25, a 100 ms window.
 */
#include <criterion/criterion.h>

#include "fixture.h"

static void toy_power(struct gpu_spec *g)
{
	gpu_fixture_toy(g);
	g->burst_matrix_clock_hz = 1500e6;
	g->burst_gemm_power = 2;
	g->stream_power = 0.5;
	g->idle_power = 0.25;
	g->power_window_s = 0.1;
}

Test(gpu, power_model_absent_keeps_the_sustained_clock)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	cr_assert_eq(gpu_power_modelled(&g), 0);
	cr_assert_eq(gpu_power_step_clock_hz(&g, 1, 1), 1000e6);
	cr_assert_eq(gpu_power_burst_hold_s(&g, 0.25), 0);
	toy_power(&g);
	cr_assert_eq(gpu_power_modelled(&g), 1);
}

Test(gpu, step_clock_holds_the_average_at_the_limit)
{
	struct gpu_spec g;
	double f;

	toy_power(&g);
	/* x = O (1 - p_o) f_s / (M f_s (p_b - 1) - O (1 - p_o) (f_b - f_s)),
	 * f = f_s + x (f_b - f_s); M = 1 s of matrix work at f_s.
	 * O = 0: x = 0, back-to-back GEMMs hold the sustained clock. */
	cr_assert(gpu_fixture_near(gpu_power_step_clock_hz(&g, 1, 0), 1000e6,
				   1e-12));
	/* O = 1 s: x = 0.5 x 1000 / (1000 - 0.5 x 500) = 2/3, f = 1333.3
	 * MHz. Check: M(f) = 1000 / 1333.3 = 0.75 s at p_g = 1 + 2/3, the
	 * other 1 s at 0.5: (1.25 + 0.5) / 1.75 = 1, the limit. */
	f = gpu_power_step_clock_hz(&g, 1, 1);
	cr_assert(gpu_fixture_near(f, 4000e6 / 3, 1e-12), "got %g", f);
	/* O = 2 s: x = 1000 / (1000 - 500) = 2 -> 1: the burst clock; O = 4
	 * s: the denominator 1000 - 1000 = 0, never binds: burst. */
	cr_assert_eq(gpu_power_step_clock_hz(&g, 1, 2), 1500e6);
	cr_assert_eq(gpu_power_step_clock_hz(&g, 1, 4), 1500e6);
	/* No matrix work: nothing to slow, burst. */
	cr_assert_eq(gpu_power_step_clock_hz(&g, 0, 1), 1500e6);
	/* Other work at the limit's power (p_o = 1) leaves no room. */
	g.stream_power = 1;
	cr_assert_eq(gpu_power_step_clock_hz(&g, 1, 1), 1000e6);
}

Test(gpu, burst_holds_until_the_window_average_reaches_the_limit)
{
	struct gpu_spec g;

	toy_power(&g);
	/* W (1 - p_0) / (p_b - p_0): from idle 0.1 x 0.75 / 1.75 = 42.857
	 * ms; from an HBM-bound load 0.1 x 0.5 / 1.5 = 33.33 ms; from the
	 * limit, none. */
	cr_assert(gpu_fixture_near(gpu_power_burst_hold_s(&g, 0.25),
				   0.075 / 1.75, 1e-12));
	cr_assert(gpu_fixture_near(gpu_power_burst_hold_s(&g, 0.5), 0.05 / 1.5,
				   1e-12));
	cr_assert_eq(gpu_power_burst_hold_s(&g, 1), 0);
}

Test(gpu, gemm_at_the_burst_clock_runs_at_its_rate)
{
	struct gpu_spec g, b;
	double ts, tb;

	toy_power(&g);
	gpu_at_matrix_clock(&g, g.burst_matrix_clock_hz, &b);
	cr_assert_eq(b.sustained_matrix_clock_hz, 1500e6);
	/* 12800^3: 4.194e12 FLOP, compute-bound (0.98 GB at 5 TB/s = 0.2 ms):
	 * 400 TFLOP/s at 1000 MHz, 1000 x 0.75 x 0.8 = 600 at 1500 MHz. */
	ts = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1).time_s;
	tb = gpu_gemm(&b, DTYPE_BF16, 12800, 12800, 12800, 1).time_s;
	cr_assert(gpu_fixture_near(ts, 2 * 12800.0 * 12800 * 12800 / 400e12,
				   1e-9), "got %g", ts);
	cr_assert(gpu_fixture_near(ts / tb, 1.5, 1e-9), "got %g", ts / tb);
}
