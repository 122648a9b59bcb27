/*
 * test_power.c - the matrix clock under the power limit (gpu_power.c) on
 * the toy GPU of fixture.h (sustained 1000 MHz) given a power model:
 * burst 1500 MHz, a GEMM's power at burst p_b = 2 (of the limit), an
 * HBM-bound kernel's p_o = 0.5, the idle board's 0.25, a 100 ms window.
 */
#include <criterion/criterion.h>

#include "calib/valid.h"
#include "fixture.h"
#include "../quick.h"
#include "store/store.h"

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
	/* 12800^3 (test_gemm.c's derivation): 100 waves, each a tile's
	 * compute 2 x 128^2 x 12800 / R_u plus its epilogue, 100 x 128^2 x
	 * 2 B / 5 TB/s = 0.655 us, which no clock speeds up. R_u = 4
	 * TFLOP/s at 1000 MHz: 104.858 us; 1000 x 0.75 x 0.8 / 100 = 6
	 * TFLOP/s at 1500 MHz: 69.905 us. t = 10.551 ms and 7.056 ms. */
	ts = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1).time_s;
	tb = gpu_gemm(&b, DTYPE_BF16, 12800, 12800, 12800, 1).time_s;
	cr_assert(gpu_fixture_near(ts, 100 * (2.0 * 128 * 128 * 12800 / 4e12 +
					     100.0 * 128 * 128 * 2 / 5e12),
				   1e-9), "got %g", ts);
	cr_assert(gpu_fixture_near(tb, 100 * (2.0 * 128 * 128 * 12800 / 6e12 +
					     100.0 * 128 * 128 * 2 / 5e12),
				   1e-9), "got %g", tb);
}

Test(gpu, backend_gemm_point_is_the_median_timed_call_from_idle)
{
	struct store_meas_row r = { .op = "gemm", .type = "bfloat16",
				    .m = 12800, .n = 12800, .k = 12800 };
	struct gpu_spec g;
	double ts = 10.551e-3, tb = 7.056e-3, hold, cross, want;

	toy_power(&g);
	/* The 12800^3 GEMM above: t_s 10.551 ms, t_b 7.056 ms (near to
	 * 1e-4). From idle (0.25) the burst holds 42.857 ms: calls 0-5 end by
	 * 6 x 7.056 = 42.34 ms (5 warm-ups, then the first timed call),
	 * call 6 starts at 42.34 and runs 0.521 ms at t_b's rate, the rest
	 * of its work (1 - 0.521 / 7.056) at t_s's: 10.293 ms; then t_s. */
	hold = 0.075 / 1.75;
	cross = (hold - 6 * tb) + (1 - (hold - 6 * tb) / tb) * ts;
	r.iters = 1;		/* the one timed call: burst */
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r), tb,
				   1e-4));
	r.iters = 3;		/* t_b, the crossing, t_s: the crossing */
	want = cross;
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r),
				   want, 1e-4), "got %g, want %g",
		  valid_gemm_point_s(&g, DTYPE_BF16, &r), want);
	r.iters = 2;		/* the mean of t_b and the crossing */
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r),
				   (tb + cross) / 2, 1e-4));
	r.iters = 20;		/* the backend's default: sustained */
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r), ts,
				   1e-4));
	/* Without the power model: the kernel at the sustained clock. */
	gpu_fixture_toy(&g);
	r.iters = 1;
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r), ts,
				   1e-4));
}

/* The median of INT_MAX timed calls (measure --import takes iters up to
 * INT_MAX) is the sustained time, reached without timing every call: the
 * calls past the hold all take t_s, so only those up to it are walked
 * (before: 2^31 calls walked, seconds a point). */
Test(gpu, backend_gemm_point_of_many_calls_is_sustained,
     .timeout = QUICK_TIMEOUT(1))
{
	struct store_meas_row r = { .op = "gemm", .type = "bfloat16",
				    .m = 12800, .n = 12800, .k = 12800,
				    .iters = 2147483647 };
	struct gpu_spec g;

	toy_power(&g);
	/* t_s of 12800^3: 10.551 ms (the test above) */
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r),
				   10.551e-3, 1e-4));
	r.iters = 2147483646;	/* even: the mean of two t_s */
	cr_assert(gpu_fixture_near(valid_gemm_point_s(&g, DTYPE_BF16, &r),
				   10.551e-3, 1e-4));
}

/* A kernel table's timed calls after its warm-ups, from idle
 * (gpu_power_calls_mean_s, valid_power.c): the mean of the timed calls. */
Test(gpu, timed_calls_mean_from_idle_crosses_the_hold)
{
	struct gpu_spec g;
	double hold = 0.075 / 1.75, tb = 10e-3, ts = 15e-3, c4, got;

	toy_power(&g);
	/* hold 42.857 ms from idle (the test above). Calls of t_b 10 ms
	 * start at 0, 10, 20, 30, 40 ms; call 4 crosses the hold: 2.857 ms
	 * at t_b's rate, then (1 - 0.2857) of its work at t_s's, 13.571 ms;
	 * call 5 starts at 53.571 ms, past the hold: t_s. */
	c4 = (hold - 0.04) + (1 - (hold - 0.04) / tb) * ts;
	cr_assert(gpu_fixture_near(gpu_power_call_s(tb, ts, 0.04, hold), c4,
				   1e-12));
	/* 2 warm-ups, 4 timed (calls 2-5): (10 + 10 + 13.571 + 15) / 4 =
	 * 12.143 ms */
	got = gpu_power_calls_mean_s(&g, tb, ts, 2, 4, 0.25);
	cr_assert(gpu_fixture_near(got, (2 * tb + c4 + ts) / 4, 1e-12),
		  "got %g", got);
	/* one timed call and no warm-up: the burst time */
	cr_assert(gpu_fixture_near(gpu_power_calls_mean_s(&g, tb, ts, 0, 1,
							  0.25), tb, 1e-12));
	/* every timed call past the hold (10 warm-ups end at 10 x ~10-15
	 * ms > 42.9 ms): t_s, counted without walking them */
	cr_assert(gpu_fixture_near(gpu_power_calls_mean_s(&g, tb, ts, 10, 1e6,
							  0.25), ts, 1e-12));
	/* from the limit itself no burst at all */
	cr_assert(gpu_fixture_near(gpu_power_calls_mean_s(&g, tb, ts, 0, 3, 1),
				   ts, 1e-12));
	/* without the power model: t_s */
	gpu_fixture_toy(&g);
	cr_assert_eq(gpu_power_calls_mean_s(&g, tb, ts, 0, 1, 0.25), ts);
}
