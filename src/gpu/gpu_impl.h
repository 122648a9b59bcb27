/*
 * gpu_impl.h - helpers shared by the GPU model's files (gpu.c,
 * gpu_gemm.c, gpu_attention.c). Not a contract: nothing outside src/gpu
 * includes it.
 *
 * Depends on gpu.h only.
 */
#ifndef LLMSIM_GPU_GPU_IMPL_H
#define LLMSIM_GPU_GPU_IMPL_H

#include "gpu.h"

/* BUG unless dt is supported by g (see gpu.h on unsupported dtypes). */
void gpu_require_dtype(const struct gpu_spec *g, enum dtype dt);

/* BUG unless x is finite and >= 0 (a size, a count, bytes). */
void gpu_require_size(double x, const char *what);

/* The clock-scaled matrix peak P(dt) (f_s / f_q) (FLOP/s), before any
 * kernel's efficiency (gpu.c); 0 when dt is unsupported. */
double gpu_clock_peak_flops(const struct gpu_spec *g, enum dtype dt);
/* A fixed time fitted on tables timed at table_hz (gpu fitted_clock; 0 =
 * not stated) at the step's matrix clock: t_s x table_hz /
 * sustained_matrix_clock, a work unit's cycles (configs/gpus/README.md
 * "Clock basis"). */
double gpu_fitted_time(const struct gpu_spec *g, double t_s,
		       double table_hz);

/*
 * A kernel's cost from its parts: body_s is the time on the GPU without
 * launches (already composed from compute and memory by the caller, of
 * all `launches` kernels the call runs: 1, or 3 for attention backward);
 * compute_s and memory_s are the two bounds the main kernel's body came
 * from, and say which one binds. Adds g's launch overhead per launch;
 * launch-bound when the launches cost more than the body.
 */
struct gpu_cost gpu_make_cost(const struct gpu_spec *g, double flops,
			      double bytes, int level, int launches,
			      double body_s, double compute_s,
			      double memory_s);

/* The work units of one head of attention shape a (gpu_attention.c):
 * how many, the sum and sum of squares of their times and the longest,
 * for tiles of b x b pairs taking tile_s each and unit_s fixed per unit;
 * a unit is a query block (forward) or a key block (backward). */
struct gpu_units {
	double n;		/* units with work */
	double sum_s;		/* s, sum of their times */
	double sum2_s2;		/* s^2, sum of their squared times */
	double longest_s;	/* s, the longest */
};

struct gpu_units gpu_attn_units(const struct gpu_spec *g,
				const struct gpu_attn_shape *a, double b,
				double unit_s, double tile_s, int backward);

/* The vendor forward kernel's units (gpu_attention.c, "Work units"):
 * attention.fwd_q_blocks query blocks a unit where the head dim allows,
 * as the training forward; unit_s a unit's fixed time, keep_s a query
 * block's kept-operand load, tile_s a tile's (masked tiles alike). */
struct gpu_units gpu_attn_fwd_units(const struct gpu_spec *g,
				    const struct gpu_attn_shape *a, double b,
				    double unit_s, double keep_s,
				    double tile_s);

/* Time of heads x u->n units list-scheduled on cus compute units
 * (gpu_attention.c): whole waves of equal units without a mask, else
 * max(L, W/U + L - rho). */
double gpu_attn_schedule_s(const struct gpu_units *u, double heads,
			   double cus, int causal);

/* Visible (query, key) pairs of one sequence and head of shape a. */
double gpu_attn_pairs(const struct gpu_attn_shape *a);

/* The steady-state rate (FLOP/s) of an attention kernel family of
 * efficiency eta at head dims d_qk, d_v, forward or backward, with the
 * softmax's exponentials as a share that does not scale with the head
 * dim (gpu_attention.c, "Head dim"). */
double gpu_attn_rate(const struct gpu_spec *g, enum dtype dt, double eta,
		     double d_qk, double d_v, int backward);

/* B/s a GEMM wave of `active` output tiles loads at (gpu_gemm.c, "Tile
 * bandwidth"): level_Bps, or active x tile_Bps where that is less
 * (tile_Bps 0: no per-tile bound). */
double gpu_wave_bandwidth_Bps(double level_Bps, double tile_Bps,
			      double active);

#endif
