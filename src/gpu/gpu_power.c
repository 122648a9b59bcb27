/*
 * gpu_power.c - the matrix clock under the board's power limit.
 *
 * A GPU's firmware keeps the board's power, averaged over a window W,
 * at or under its limit (NVML's clocks event reason SwPowerCap: "the
 * clocks have been optimized to ensure not to exceed currently set power
 * limits"). Back-to-back GEMMs draw more than the limit at the top clock,
 * so they settle at a lower one: sustained_matrix_clock f_s, the clock
 * the GEMM rates of configs/gpus are fitted at. Where GEMMs share the
 * time with kernels that draw less (HBM-bound elementwise work,
 * optimizer, communication), the average leaves room and the GEMMs run
 * faster, up to burst_matrix_clock f_b, their clock below the limit.
 * Measured on an H200 (results/reference/device/h200-clock-2026-12-04
 * .jsonl, scripts/measure-clock.cu): bf16 8192^3 GEMMs take 1.31 ms for
 * their first 58-79 ms, then 1.55-1.58 ms at the limit; one GEMM in
 * three copy kernels (45 % of the time) keeps 1.32 ms at 1980 MHz.
 *
 * Powers are fractions of the limit: p_b a GEMM's at f_b, p_o an
 * HBM-bound kernel's, p_i the idle board's. A GEMM's power is taken
 * linear in its clock between (f_s, 1) (f_s is where back-to-back GEMMs
 * hold the limit) and (f_b, p_b):
 *
 *     p_g(f) = 1 + x (p_b - 1),   f = f_s + x (f_b - f_s),  x in [0, 1]
 *
 * Step clock. A step with matrix time M_s at f_s (GEMMs and attention:
 * the work whose time follows the matrix clock) and other time O at p_o
 * (everything else of the step, the HBM-bound power taken for all of it)
 * runs its matrix work in M(f) = M_s f_s / f. The limiter allows the
 * highest f whose step average is at most the limit,
 *
 *     M(f) p_g(f) + O p_o <= M(f) + O
 *     <=> M_s f_s x (p_b - 1) <= O (1 - p_o) (f_s + x (f_b - f_s))
 *
 *     x = min(1, O (1 - p_o) f_s / (M_s f_s (p_b - 1) - O (1 - p_o) (f_b - f_s)))
 *
 * (x = 1 where the denominator is not positive: the limit never binds).
 * The window (~0.1 s) is longer than a kernel, so the average over the
 * step is what the limiter sees.
 *
 * Burst from idle. After a long time at power p_0, GEMMs at f_b raise the
 * window's average (p_0 (W - t) + p_b t) / W to the limit after
 *
 *     t_hold = W (1 - p_0) / (p_b - p_0)
 *
 * and run at f_s from then on: what a benchmark that times a few calls
 * after an idle host pause measures (llmsim validate --kind measured).
 *
 * Calls back to back from that start, each t_b long at f_b and t_s at
 * f_s: a call that starts at s runs at f_b while s + t_b <= t_hold, at
 * f_s once s >= t_hold, and the call across t_hold does its first
 * (t_hold - s) / t_b of the work at t_b's rate, the rest at t_s's:
 *
 *     t(s) = (t_hold - s) + (1 - (t_hold - s) / t_b) t_s
 *
 * (gpu_power_call_s; the mean of calls w .. w + n - 1, the timed calls
 * after w warm-ups: gpu_power_calls_mean_s).
 */
#include "gpu_impl.h"

#include <math.h>

#include "base/diag.h"

int gpu_power_modelled(const struct gpu_spec *g)
{
	return g->burst_matrix_clock_hz > g->sustained_matrix_clock_hz &&
	       g->burst_gemm_power > 1 && g->power_window_s > 0;
}

double gpu_power_step_clock_hz(const struct gpu_spec *g, double matrix_s,
			       double other_s)
{
	double fs = g->sustained_matrix_clock_hz, df, room, den, x;

	if (!gpu_power_modelled(g))
		return fs;
	gpu_require_size(matrix_s, "matrix time");
	gpu_require_size(other_s, "other time");
	if (matrix_s <= 0)
		return g->burst_matrix_clock_hz;
	df = g->burst_matrix_clock_hz - fs;
	room = other_s * (1 - g->stream_power);
	den = matrix_s * fs * (g->burst_gemm_power - 1) - room * df;
	x = den > 0 ? fmin(1, room * fs / den) : 1;
	return fs + fmax(0, x) * df;
}

double gpu_power_burst_hold_s(const struct gpu_spec *g, double power_before)
{
	double pb = g->burst_gemm_power;

	if (!gpu_power_modelled(g))
		return 0;
	if (!(power_before >= 0) || power_before >= 1)
		return 0;
	return g->power_window_s * (1 - power_before) / (pb - power_before);
}

void gpu_at_matrix_clock(const struct gpu_spec *g, double clock_hz,
			 struct gpu_spec *out)
{
	if (!(clock_hz > 0) || !isfinite(clock_hz))
		BUG("gpu_at_matrix_clock: clock not positive");
	*out = *g;
	out->sustained_matrix_clock_hz = clock_hz;
}

double gpu_power_call_s(double burst_s, double sustained_s, double start_s,
			double hold_s)
{
	if (start_s >= hold_s)
		return sustained_s;
	if (start_s + burst_s <= hold_s)
		return burst_s;
	return (hold_s - start_s) +
	       (1 - (hold_s - start_s) / burst_s) * sustained_s;
}

double gpu_power_calls_mean_s(const struct gpu_spec *g, double burst_s,
			      double sustained_s, double warmup_calls,
			      double timed_calls, double power_before)
{
	double hold = gpu_power_burst_hold_s(g, power_before), start = 0;
	double sum = 0, c;

	gpu_require_size(burst_s, "call time at the burst clock");
	gpu_require_size(sustained_s, "call time at the sustained clock");
	gpu_require_size(warmup_calls, "warm-up calls");
	if (!(timed_calls >= 1) || !isfinite(timed_calls))
		BUG("gpu_power_calls_mean_s: no timed call");
	if (!gpu_power_modelled(g))
		return sustained_s;
	for (c = 0; c < warmup_calls + timed_calls; c++) {
		double t = gpu_power_call_s(burst_s, sustained_s, start, hold);

		if (start >= hold) {	/* every call left is t_s */
			sum += (warmup_calls + timed_calls -
				fmax(c, warmup_calls)) * sustained_s;
			break;
		}
		if (c >= warmup_calls)
			sum += t;
		start += t;
	}
	return sum / timed_calls;
}
