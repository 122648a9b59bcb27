/*
 * gpu.c - peaks, the memory hierarchy, memory-bound kernels.
 *
 * Matrix rate. P(dt) is the vendor's dense matrix peak for dtype dt,
 * quoted at the matrix clock f_q. Under sustained GEMM load the matrix
 * engines run at a lower median clock f_s (MI300X: 1207 of 2100 MHz,
 * MI325X: 1447 MHz; hardware-specs.md §1.3 [V8]), and the best kernels
 * reach a fraction eta(dt) of that clock-scaled peak (AMD measures 94% for
 * BF16). The rate a large, well-shaped GEMM sustains is
 *
 *     R(dt) = P(dt) * (f_s / f_q) * eta(dt)                     [FLOP/s]
 *
 * f_s, f_q, P and eta are data (configs/gpus/); NVIDIA quotes its tensor
 * peaks at a clock below max boost and publishes no median clock, so
 * there f_s = f_q and the clock loss is inside eta.
 *
 * Memory hierarchy. A kernel's bytes come from the nearest level whose
 * capacity C_l holds its working set W: L2 if W <= C_L2, else the
 * last-level cache (AMD Infinity Cache) if present and W <= C_LLC, else
 * HBM. A level delivers
 *
 *     B_l = B_peak,l * e_l                                       [B/s]
 *
 * with e_l its measured streaming fraction (BabelStream-like). The
 * capacity-only rule assumes the working set was touched recently (the
 * producer of a tensor ran just before its consumer); whether that holds
 * is the caller's choice of W.
 *
 * Memory-bound kernels (elementwise, norms, softmax, rotary, cross-
 * entropy, optimizer update) read r and write w bytes and do F vector
 * FLOPs:
 *
 *     t = t_launch + max(F / R_vec, (r + w) / B_l)
 *
 * max, not a sum: a streaming kernel keeps enough loads in flight that
 * its few FLOPs hide under the memory time (or the reverse). Valid for
 * coalesced streaming access; gathers and atomics run slower.
 *
 * Multi-tensor kernels (PyTorch's and apex's multi_tensor_apply: fused
 * Adam/AdamW, gradient norms, unscale, master-to-model copies) walk
 * lists of tensors in chunks of 65536 elements, at most 320 blocks per
 * launch, a block per chunk; they stream at a measured fraction e_mt of
 * the level's bandwidth:
 *
 *     t = n_launch t_launch + max(F / R_vec, (r + w) / (B_l e_mt))
 *
 * (H200: PyTorch 2.11's fused AdamW moved 14 B per parameter of 1.92e9
 * at 2.19 TB/s in a profiled training step, 0.52 of the copy rate;
 * results/reference/device/h200-train-step-4layers-2026-11-29.json.)
 *
 * Eager chains (PyTorch ops one by one on views): n kernels, S of the
 * bytes through the generic elementwise path (non-contiguous operands:
 * per-element offset arithmetic, scalar loads) at e_s of the bandwidth:
 *
 *     t = n t_launch + max(F / R_vec, (r + w - S) / B_l + S / (B_l e_s))
 *
 * (H200: the rotary multiplies on the q view of the QKV output moved
 * 134 MB in 104 us, SiLU on the gate half 470 MB in 349 us: 1.29-1.35
 * TB/s of 4.18, e_s = 0.31; results/reference/device/h200-train-step-
 * 4layers-2026-11-29.json.)
 *
 * t_launch is the per-kernel cost of a kernel in a back-to-back stream
 * (dispatch, drain, host issue), added rather than overlapped because a
 * kernel's blocks cannot start before it is dispatched nor the next kernel
 * before it drains.
 */
#include "gpu_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

double gpu_peak_flops(const struct gpu_spec *g, enum dtype dt)
{
	if ((int)dt < 0 || dt >= DTYPE_COUNT)
		BUG("dtype out of range");
	return g->matrix_peak_flops[dt];
}

int gpu_check_dtype(const struct gpu_spec *g, enum dtype dt, struct diag *d)
{
	char have[128] = "";
	int i;

	if (gpu_peak_flops(g, dt) > 0)
		return 0;
	for (i = 0; i < DTYPE_COUNT; i++) {
		if (g->matrix_peak_flops[i] <= 0)
			continue;
		if (have[0])
			strncat(have, ", ", sizeof(have) - strlen(have) - 1);
		strncat(have, dtype_names[i], sizeof(have) - strlen(have) - 1);
	}
	diag_error(d, NULL, 0, 0,
		   "gpu '%s' has no %s matrix rate; it supports %s",
		   g->name ? g->name : "(unnamed)", dtype_names[dt], have);
	return -1;
}

void gpu_require_dtype(const struct gpu_spec *g, enum dtype dt)
{
	if (gpu_peak_flops(g, dt) <= 0)
		BUG("dtype not supported by this GPU; call gpu_check_dtype() "
		    "when validating the job");
}

void gpu_require_size(double x, const char *what)
{
	if (!isfinite(x) || x < 0) {
		fprintf(stderr, "llmsim: bad %s: %g\n", what, x);
		BUG("negative or non-finite size passed to the GPU model");
	}
}

double gpu_clock_peak_flops(const struct gpu_spec *g, enum dtype dt)
{
	double peak = gpu_peak_flops(g, dt);

	if (peak <= 0)
		return 0;
	return peak * (g->sustained_matrix_clock_hz / g->matrix_clock_hz);
}

double gpu_fitted_time(const struct gpu_spec *g, double t_s,
		       double table_hz)
{
	if (!(table_hz > 0))
		return t_s;
	return t_s * (table_hz / g->sustained_matrix_clock_hz);
}

double gpu_sustained_flops(const struct gpu_spec *g, enum dtype dt)
{
	return gpu_clock_peak_flops(g, dt) * g->gemm_efficiency_dtype[dt];
}

void gpu_use_fp8_fast_accum(struct gpu_spec *g)
{
	if (g->fp8_fast_accum_efficiency > 0)
		g->gemm_efficiency_dtype[DTYPE_FP8] =
			g->fp8_fast_accum_efficiency;
}

static const struct gpu_mem_level *level_of(const struct gpu_spec *g,
					    enum gpu_level l)
{
	switch (l) {
	case GPU_LEVEL_L2: return &g->l2;
	case GPU_LEVEL_LLC: return &g->llc;
	case GPU_LEVEL_HBM: return &g->hbm;
	}
	BUG("unknown memory level");
}

enum gpu_level gpu_serving_level(const struct gpu_spec *g,
				 double working_set_B)
{
	gpu_require_size(working_set_B, "working set");
	if (g->l2.capacity_B > 0 && working_set_B <= g->l2.capacity_B)
		return GPU_LEVEL_L2;
	if (g->llc.capacity_B > 0 && working_set_B <= g->llc.capacity_B)
		return GPU_LEVEL_LLC;
	return GPU_LEVEL_HBM;
}

double gpu_level_bandwidth_Bps(const struct gpu_spec *g, enum gpu_level l)
{
	const struct gpu_mem_level *m = level_of(g, l);

	if (m->bandwidth_Bps <= 0 || m->efficiency <= 0)
		BUG("memory level without bandwidth");
	return m->bandwidth_Bps * m->efficiency;
}

struct gpu_cost gpu_make_cost(const struct gpu_spec *g, double flops,
			      double bytes, int level, int launches,
			      double body_s, double compute_s,
			      double memory_s)
{
	double launch_s = launches * g->kernel_launch_s;
	struct gpu_cost c;

	c.flops = flops;
	c.bytes = bytes;
	c.level = level;
	c.tiles_per_unit = 0;
	c.time_s = launch_s + body_s;
	if (launch_s > body_s)
		c.bound = GPU_BOUND_LAUNCH;
	else if (compute_s >= memory_s)
		c.bound = GPU_BOUND_COMPUTE;
	else
		c.bound = GPU_BOUND_MEMORY;
	return c;
}

struct gpu_cost gpu_memory_op(const struct gpu_spec *g, double read_B,
			      double write_B, double flops,
			      double working_set_B)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_MEMORY, GPU_LEVEL_HBM, 0};
	enum gpu_level l;
	double bytes, mem_s, comp_s = 0;

	gpu_require_size(read_B, "bytes read");
	gpu_require_size(write_B, "bytes written");
	gpu_require_size(flops, "FLOPs");
	bytes = read_B + write_B;
	if (bytes == 0 && flops == 0)
		return zero;
	l = gpu_serving_level(g, working_set_B);
	mem_s = bytes / gpu_level_bandwidth_Bps(g, l);
	if (g->vector_fp32_flops > 0)
		comp_s = flops / g->vector_fp32_flops;
	return gpu_make_cost(g, flops, bytes, (int)l, 1, fmax(comp_s, mem_s),
			     comp_s, mem_s);
}

struct gpu_cost gpu_memory_ops(const struct gpu_spec *g, double read_B,
			       double write_B, double strided_B,
			       double flops, double working_set_B,
			       double launches)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_MEMORY, GPU_LEVEL_HBM, 0};
	double bytes, bw, sbw, mem_s, comp_s = 0, es = g->strided_efficiency;
	enum gpu_level l;

	gpu_require_size(read_B, "bytes read");
	gpu_require_size(write_B, "bytes written");
	gpu_require_size(strided_B, "strided bytes");
	gpu_require_size(flops, "FLOPs");
	gpu_require_size(launches, "launches");
	bytes = read_B + write_B;
	if (bytes == 0 && flops == 0)
		return zero;
	if (strided_B > bytes)
		BUG("more strided bytes than bytes moved");
	if (!(es > 0) || es > 1)
		es = 1;
	l = gpu_serving_level(g, working_set_B);
	bw = gpu_level_bandwidth_Bps(g, l);
	sbw = bw * es;
	if (g->strided_sm_Bps > 0 && g->compute_units > 0)
		sbw = fmin(bw, g->strided_sm_Bps * (double)g->compute_units);
	mem_s = (bytes - strided_B) / bw + strided_B / sbw;
	if (g->vector_fp32_flops > 0)
		comp_s = flops / g->vector_fp32_flops;
	return gpu_make_cost(g, flops, bytes, (int)l,
			     launches < 1 ? 1 : (int)launches,
			     fmax(comp_s, mem_s), comp_s, mem_s);
}

double gpu_scatter_add_extra_s(const struct gpu_spec *g, double added_B)
{
	double stream_Bps = gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM);

	gpu_require_size(added_B, "bytes scatter-added");
	if (!(g->scatter_add_Bps > 0) || !(stream_Bps > 0) ||
	    g->scatter_add_Bps >= stream_Bps)
		return 0;
	return added_B / g->scatter_add_Bps - added_B / stream_Bps;
}

double gpu_ssm_update_extra_s(const struct gpu_spec *g, double state_B)
{
	double stream_Bps = gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM);

	gpu_require_size(state_B, "state bytes updated");
	if (!(g->ssm_update_Bps > 0) || !(stream_Bps > 0) ||
	    g->ssm_update_Bps >= stream_Bps)
		return 0;
	return state_B / g->ssm_update_Bps - state_B / stream_Bps;
}

struct gpu_cost gpu_multi_tensor_op(const struct gpu_spec *g, double read_B,
				    double write_B, double flops,
				    double launches)
{
	struct gpu_cost zero = {0, 0, 0, GPU_BOUND_MEMORY, GPU_LEVEL_HBM, 0};
	double bytes, mem_s, comp_s = 0, eff = g->multi_tensor_efficiency;

	gpu_require_size(read_B, "bytes read");
	gpu_require_size(write_B, "bytes written");
	gpu_require_size(flops, "FLOPs");
	gpu_require_size(launches, "launches");
	bytes = read_B + write_B;
	if (bytes == 0 && flops == 0)
		return zero;
	if (!(eff > 0) || eff > 1)
		eff = 1;
	/* optimizer states are far larger than any cache: HBM */
	mem_s = bytes / (gpu_level_bandwidth_Bps(g, GPU_LEVEL_HBM) * eff);
	if (g->vector_fp32_flops > 0)
		comp_s = flops / g->vector_fp32_flops;
	return gpu_make_cost(g, flops, bytes, GPU_LEVEL_HBM,
			     launches < 1 ? 1 : (int)launches,
			     fmax(comp_s, mem_s), comp_s, mem_s);
}

double gpu_usable_memory_B(const struct gpu_spec *g)
{
	return g->hbm_usable_B;
}
