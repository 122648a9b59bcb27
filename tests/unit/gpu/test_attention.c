/*
 * test_attention.c - fused attention (src/gpu/gpu_attention.c) on the
 * toy GPU of fixture.h: attention rate = 1000 x 0.5 x 0.5 = 250 TFLOP/s
 * forward, 1000 x 0.5 x 0.25 = 125 TFLOP/s backward, U = 100 units,
 * 128-row work units, no launch or pipeline-fill cost, masked tiles as
 * dear as unmasked ones unless a test says otherwise.
 *
 * The numbers every test uses, for 128 x 128 tiles at head dim 128 in
 * bf16, with the working set in HBM (5 TB/s, 5e10 B/s per unit):
 *
 *   tau_f = 128^2 x 2 (128 + 128) FLOP / 2.5 TFLOP/s     =  3.355 us  a forward tile
 *   tau_b = 128^2 x 2 (3 128 + 2 128) FLOP / 1.25 TFLOP/s = 16.777 us  a backward tile
 *   t_uf  = Q block 128 x 128 x 2 B / 5e10 B/s            =  0.655 us  a forward unit's load
 *   t_ub  = K and V blocks 2 x 32768 B / 5e10 B/s         =  1.311 us  a backward unit's load
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

#define TAU_F (128.0 * 128 * 2 * 256 / 2.5e12)
#define TAU_B (128.0 * 128 * 2 * 640 / 1.25e12)
#define TU_F (128.0 * 128 * 2 / 5e10)
#define TU_B (2 * 128.0 * 128 * 2 / 5e10)

/* 25 heads x 4096 / 128 = 800 work units = 8 full waves of 100. Q, K, V,
 * O = 4 x 25 x 4096 x 128 x 2 B = 105 MB (+ 0.4 MB LSE): beyond the 100 MB
 * LLC, so HBM serves it. */
static struct gpu_attn_shape shape(int causal)
{
	return gpu_fixture_attn_shape(causal);
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

Test(gpu, attention_forward_without_mask_runs_in_waves_of_units)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	/* 8 waves of units that each load their Q block and run 32 tiles:
	 * 8 (t_uf + 32 tau_f) = 8 (0.655 + 107.374) us = 864.2 us, i.e.
	 * F / 250 TFLOP/s = 859.0 us plus 8 loads. Memory: 105 MB / 5 TB/s
	 * = 21 us, so compute-bound. */
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (TU_F + 32 * TAU_F), 1e-9),
		  "got %g", c.time_s);
	cr_assert_eq(c.bound, GPU_BOUND_COMPUTE);
	cr_assert(gpu_fixture_near(c.bytes, 4.0 * 25 * 4096 * 128 * 2 +
					    25.0 * 4096 * 4, 1e-12));
}

Test(gpu, attention_backward_adds_its_pre_and_post_pass)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost c;
	double side_B = 25.0 * 4096 * (2 * 128 * 2 + 4 + 8 * 128 + 128 * 2);
	double main_B = 8.0 * 25 * 4096 * 128 * 2 + 25.0 * 4096 * 4;

	gpu_fixture_toy(&g);
	/* Main kernel: 8 waves of key-block units, each loading K and V and
	 * running 32 tiles: 8 (t_ub + 32 tau_b) = 8 (1.311 + 536.871) us =
	 * 4305.5 us. Pre-pass reads O and dO (2 x 128 x 2 B a row), writes
	 * D (4 B) and zeroes the FP32 dQ accumulator (4 x 128 B); post-pass
	 * reads it (4 x 128 B) and writes dQ (128 x 2 B): 25 x 4096 x 1796 B
	 * = 183.9 MB at 5 TB/s = 36.8 us, after the main kernel: 4342.2 us.
	 * Bytes: the main kernel's Q, K, V, O, dO, dQ, dK, dV (8 x 26.2 MB)
	 * and LSE (0.4 MB), plus the passes'. */
	c = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (TU_B + 32 * TAU_B) +
					     side_B / 5e12, 1e-9),
		  "got %g", c.time_s);
	cr_assert(gpu_fixture_near(c.bytes, main_B + side_B, 1e-12));
}

Test(gpu, attention_backward_is_three_kernel_launches)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g, launching;
	double dfwd, dbwd;

	gpu_fixture_toy(&g);
	gpu_fixture_toy(&launching);
	launching.kernel_launch_s = 5e-6;
	/* 5 us a launch: one forward kernel, three backward (pre-pass, main,
	 * dQ conversion): +5 us and +15 us. */
	dfwd = gpu_attention_fwd(&launching, DTYPE_BF16, &a).time_s -
	       gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	dbwd = gpu_attention_bwd(&launching, DTYPE_BF16, &a).time_s -
	       gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(dfwd, 5e-6, 1e-6), "forward +%g", dfwd);
	cr_assert(gpu_fixture_near(dbwd, 15e-6, 1e-6), "backward +%g", dbwd);
}

Test(gpu, attention_causal_units_leave_a_list_scheduling_tail)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g;
	double sum, sum2, longest, rho, want, t;

	gpu_fixture_toy(&g);
	/* 32 query blocks of 1..32 tiles: l_i = t_uf + i tau_f, 25 heads =
	 * 800 units. Per head sum l = 32 t_uf + 528 tau_f = 1792.6 us,
	 * sum l^2 = 32 t_uf^2 + 2 x 528 t_uf tau_f + 11440 tau_f^2
	 * (sum of i^2 = 32 x 33 x 65 / 6) = 1.3114e-7 s^2, so
	 * rho = sum l^2 / (2 sum l) = 36.58 us; the longest L = t_uf + 32
	 * tau_f = 108.03 us. t = W/U + L - rho = 25 x 1792.6 / 100 + 108.03
	 * - 36.58 = 519.6 us: the perfect packing W/U = 448.2 us plus a tail
	 * of 0.66 L. */
	sum = 32 * TU_F + 528 * TAU_F;
	sum2 = 32 * TU_F * TU_F + 2 * 528 * TU_F * TAU_F + 11440 * TAU_F * TAU_F;
	longest = TU_F + 32 * TAU_F;
	rho = sum2 / (2 * sum);
	want = 25 * sum / 100 + longest - rho;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, want, 1e-9), "got %g want %g", t, want);
	cr_assert(gpu_fixture_near(t, 519.6e-6, 1e-4), "got %g", t);
}

Test(gpu, attention_fewer_units_than_cus_take_the_longest)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g;
	double t;

	gpu_fixture_toy(&g);
	g.gemm_tile_overhead_s = 1e-6;
	/* One head: 32 units on 100 CUs all start at once, causal or not,
	 * and the time is the longest unit's, the one that sees all 32 key
	 * blocks. Q, K, V, O of one head (4.2 MB) fit the 10 MB L2 (20 TB/s,
	 * 2e11 B/s a unit): pipeline fill 1 us + Q load 32768 B / 2e11 B/s
	 * + 32 tau_f = 1 + 0.164 + 107.374 = 108.54 us. */
	a.heads_q = a.heads_kv = 1;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, 1e-6 + 32768 / 2e11 + 32 * TAU_F, 1e-9),
		  "got %g", t);
	a.causal = 0;
	cr_assert(gpu_fixture_near(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   t, 1e-12));
}

Test(gpu, attention_masked_diagonal_tiles_cost_extra)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g, dear;
	double d;

	gpu_fixture_toy(&g);
	gpu_fixture_toy(&dear);
	dear.attention.masked_tile_cost = 2;
	/* One head in L2 (as above): the longest unit holds one masked
	 * tile, so at twice the cost it takes one tau more: +3.355 us
	 * forward, +16.777 us backward. Without a mask nothing changes. */
	a.heads_q = a.heads_kv = 1;
	d = gpu_attention_fwd(&dear, DTYPE_BF16, &a).time_s -
	    gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(d, TAU_F, 1e-9), "forward +%g", d);
	d = gpu_attention_bwd(&dear, DTYPE_BF16, &a).time_s -
	    gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(d, TAU_B, 1e-9), "backward +%g", d);
	a.causal = 0;
	cr_assert_eq(gpu_attention_fwd(&dear, DTYPE_BF16, &a).time_s,
		     gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s);
}

Test(gpu, attention_causal_queries_at_the_end_compute_their_tiles)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g;
	double t_l2_f = 32768 / 2e11, t_l2_b = 65536 / 2e11, t;

	gpu_fixture_toy(&g);
	g.attention.masked_tile_cost = 2;
	/* 1024 queries after 3072 of 4096 keys, one head (in L2): 8 query
	 * blocks seeing 25..32 key blocks, the last of each masked. Forward:
	 * the longest unit, 32 tiles + 1 for its mask: t_uf + 33 tau_f.
	 * Backward: key blocks 0..23 are seen by all 8 query blocks without
	 * a mask, 24..31 by 8..1 with one: the longest, key block 24, takes
	 * t_ub + 9 tau_b (+ the two passes over 1024 rows). */
	a.heads_q = a.heads_kv = 1;
	a.seq_q = 1024;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, t_l2_f + 33 * TAU_F, 1e-9), "got %g", t);
	t = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, t_l2_b + 9 * TAU_B +
				      1024.0 * 1796 / 2e13, 1e-9),
		  "got %g", t);
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

Test(gpu, flash2_kernels_run_at_their_own_efficiency)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost vendor, fa2;

	gpu_fixture_toy(&g);
	g.attention.flash2_fwd_efficiency = g.attention.fwd_efficiency / 2;
	g.attention.flash2_bwd_efficiency = g.attention.bwd_efficiency;
	vendor = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	a.kernel = GPU_ATTN_FLASH2;
	fa2 = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	/* Half the steady-state rate doubles every tile: 8 (t_uf + 32 x 2
	 * tau_f); the loads of the units (t_uf, bandwidth-bound) stay. */
	cr_assert(gpu_fixture_near(fa2.time_s, 8 * (TU_F + 64 * TAU_F), 1e-9),
		  "got %g, vendor %g", fa2.time_s, vendor.time_s);
	/* The backward keeps its efficiency here: the same time. */
	fa2 = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	a.kernel = GPU_ATTN_VENDOR;
	vendor = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(fa2.time_s, vendor.time_s, 1e-12));
}

Test(gpu, triton_kernels_run_at_their_own_efficiency)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	/* FlashAttention-2 at the toy's rates, the Triton kernel at 1/1.4
	 * of its forward rate and 1/2 of its backward (FlashAttention-2
	 * paper, 4.1: FA2 is 1.3-1.5x faster forward, about 2x backward). */
	g.attention.flash2_fwd_efficiency = g.attention.fwd_efficiency;
	g.attention.flash2_bwd_efficiency = g.attention.bwd_efficiency;
	g.attention.flash_triton_fwd_efficiency = g.attention.fwd_efficiency / 1.4;
	g.attention.flash_triton_bwd_efficiency = g.attention.bwd_efficiency / 2;
	a.kernel = GPU_ATTN_FLASH_TRITON;
	/* Forward: every tile 1.4 tau_f; the unit loads stay:
	 * 8 (t_uf + 32 x 1.4 tau_f) = 8 (0.655 + 150.32) us = 1207.8 us. */
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (TU_F + 32 * 1.4 * TAU_F),
				   1e-9), "got %g", c.time_s);
	/* Backward: the same time as the vendor kernel at half its rate. */
	c = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	a.kernel = GPU_ATTN_VENDOR;
	g.attention.bwd_efficiency /= 2;
	cr_assert(gpu_fixture_near(c.time_s,
				   gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s,
				   1e-12));
}

/* PyTorch SDPA's flash backend runs at attention.sdpa_flash_*: with its
 * efficiencies half the vendor's, each pass takes what the vendor kernel
 * takes at half its rate (the tile loop's rate is the only difference),
 * and flash2 (the flash-attn package) keeps its own rate. */
Test(gpu, sdpa_flash_runs_at_its_own_efficiency)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g, half;
	double fwd, bwd;

	gpu_fixture_toy(&g);
	g.attention.flash2_fwd_efficiency = g.attention.fwd_efficiency;
	g.attention.flash2_bwd_efficiency = g.attention.bwd_efficiency;
	g.attention.sdpa_flash_fwd_efficiency = g.attention.fwd_efficiency / 2;
	g.attention.sdpa_flash_bwd_efficiency = g.attention.bwd_efficiency / 2;
	a.kernel = GPU_ATTN_SDPA_FLASH;
	fwd = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	bwd = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	half = g;
	half.attention.fwd_efficiency /= 2;
	half.attention.bwd_efficiency /= 2;
	a.kernel = GPU_ATTN_VENDOR;
	cr_assert(gpu_fixture_near(fwd,
				   gpu_attention_fwd(&half, DTYPE_BF16, &a).time_s,
				   1e-12), "got %g", fwd);
	cr_assert(gpu_fixture_near(bwd,
				   gpu_attention_bwd(&half, DTYPE_BF16, &a).time_s,
				   1e-12), "got %g", bwd);
	/* flash2 at the full rate: faster than sdpa_flash */
	a.kernel = GPU_ATTN_FLASH2;
	cr_assert_lt(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s, fwd);
}

Test(gpu, ck_tile_kernels_run_at_their_own_efficiency)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g;
	struct gpu_cost c, vendor;

	gpu_fixture_toy(&g);
	/* Composable Kernel's generic CK-tile pipelines (TE's CK backend,
	 * v3 off): the vendor forward, a backward at 0.284 / 0.479 of the
	 * vendor's (mi355x.yaml: HipKittens' tile_example_fmha_bwd rows vs
	 * the vendor guess). FlashAttention-2's efficiencies, set apart, must
	 * not be used. */
	g.attention.ck_tile_fwd_efficiency = g.attention.fwd_efficiency;
	g.attention.ck_tile_bwd_efficiency = g.attention.bwd_efficiency *
					     0.284 / 0.479;
	g.attention.flash2_fwd_efficiency = g.attention.fwd_efficiency / 3;
	g.attention.flash2_bwd_efficiency = g.attention.bwd_efficiency / 3;
	vendor = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	a.kernel = GPU_ATTN_CK_TILE;
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	/* Forward as the vendor's: 8 (t_uf + 32 tau_f) = 8 (0.655 + 107.37)
	 * us = 864.2 us. */
	cr_assert(gpu_fixture_near(c.time_s, 8 * (TU_F + 32 * TAU_F), 1e-9),
		  "got %g", c.time_s);
	cr_assert(gpu_fixture_near(c.time_s, vendor.time_s, 1e-12));
	/* Backward: every tile tau_b x 0.479 / 0.284 = 1.6866 tau_b = 28.297
	 * us; the main kernel still compute-bound, its 8 waves take
	 * 8 (t_ub + 32 x 28.297) = 8 (1.311 + 905.497) us = 7254.5 us, and
	 * the pre/post passes, memory-bound, the same 25 x 4096 x 1796 B /
	 * 5 TB/s = 36.8 us as the vendor's
	 * (attention_backward_adds_its_pre_and_post_pass): 7291.2 us. The
	 * same time as the vendor kernel with its backward efficiency
	 * scaled by 0.284 / 0.479. */
	c = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (TU_B + 32 * TAU_B * 0.479 /
						  0.284) + 25.0 * 4096 *
				   (2 * 128 * 2 + 4 + 8 * 128 + 128 * 2) / 5e12,
				   1e-9), "got %g", c.time_s);
	a.kernel = GPU_ATTN_VENDOR;
	vendor = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	g.attention.bwd_efficiency *= 0.284 / 0.479;
	cr_assert(gpu_fixture_near(c.time_s,
				   gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s,
				   1e-12));
	/* and slower than the vendor's by at most the rate ratio (the unit
	 * loads and pre/post passes do not scale): 1 < t / t_v <= 1.6866. */
	cr_assert(c.time_s > vendor.time_s &&
		  c.time_s <= vendor.time_s * 0.479 / 0.284 * (1 + 1e-12),
		  "ck %g vendor %g", c.time_s, vendor.time_s);
}

Test(gpu, ck_tile_backward_masks_at_its_own_tile_cost)
{
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g;
	double t_l2_f = 32768 / 2e11, t_l2_b = 65536 / 2e11;
	double side = 1024.0 * 1796 / 2e13, t;

	gpu_fixture_toy(&g);
	/* The shape of attention_causal_queries_at_the_end_compute_their_
	 * tiles (1024 queries after 3072 of 4096 keys, one head, in L2), the
	 * CK-tile kernel at the vendor's efficiencies, masked_tile_cost 2,
	 * ck_tile_bwd_masked_tile_cost 3 (mi355x.yaml fits 1.0; 3 tells the
	 * two apart). Backward: key block 24, 8 tiles, 1 masked, is the
	 * longest unit: t_ub(L2) + (8 + 1 x (3 - 1)) tau_b = 10 tau_b, + the
	 * two passes; the vendor kernel's 8 + 1 x (2 - 1) = 9 tau_b. */
	g.attention.masked_tile_cost = 2;
	g.attention.ck_tile_bwd_masked_tile_cost = 3;
	g.attention.ck_tile_fwd_efficiency = g.attention.fwd_efficiency;
	g.attention.ck_tile_bwd_efficiency = g.attention.bwd_efficiency;
	a.heads_q = a.heads_kv = 1;
	a.seq_q = 1024;
	a.kernel = GPU_ATTN_CK_TILE;
	t = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, t_l2_b + 10 * TAU_B + side, 1e-9),
		  "got %g", t);
	/* At 1 (a masked tile as dear as an unmasked one, mi355x's fit): the
	 * longest unit 8 tau_b, key blocks 0..24 alike. */
	g.attention.ck_tile_bwd_masked_tile_cost = 1;
	t = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, t_l2_b + 8 * TAU_B + side, 1e-9),
		  "got %g", t);
	/* The forward keeps masked_tile_cost: the longest query block, 32
	 * tiles + 1 x (2 - 1), t_uf(L2) + 33 tau_f. */
	t = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, t_l2_f + 33 * TAU_F, 1e-9), "got %g", t);
	/* The vendor backward keeps it too: 9 tau_b. */
	a.kernel = GPU_ATTN_VENDOR;
	t = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(t, t_l2_b + 9 * TAU_B + side, 1e-9),
		  "got %g", t);
}

/*
 * Head dim (gpu_attention.c, "Head dim"): the softmax's exponentials at
 * x per clock per unit take t_e = 1 / (x U f_s) per pair on the whole
 * toy GPU (U = 100, f_s = 1 GHz). With x = 10000 / 1024 = 9.765625,
 * t_e = 1.024 ps. The forward's measured time per pair at d_c = 128 is
 * t_c = 512 FLOP / 250 TFLOP/s = 2.048 ps: phi = 0.5. The backward's,
 * 1280 / 125 TFLOP/s = 10.24 ps: phi = 0.1.
 */
static void exp_gpu(struct gpu_spec *g)
{
	gpu_fixture_toy(g);
	g->attention.exp_per_clock = 10000.0 / 1024;
	g->attention.calib_head_dim = 128;
}

/* 50 heads at head dim 64: 1600 units = 16 waves, and the same 105 MB as
 * shape() (4 x 50 x 4096 x 64 x 2 B), so HBM still serves it. */
static struct gpu_attn_shape shape64(void)
{
	struct gpu_attn_shape a = shape(0);

	a.heads_q = a.heads_kv = 50;
	a.head_dim_qk = a.head_dim_v = 64;
	return a;
}

/* Forward and backward bf16 attention of shape a take the same time on
 * g as on plain (to 1e-12 relative). */
static void assert_same_bf16_attention(const struct gpu_spec *g,
				       const struct gpu_spec *plain,
				       const struct gpu_attn_shape *a)
{
	cr_assert(gpu_fixture_near(gpu_attention_fwd(g, DTYPE_BF16, a).time_s,
				   gpu_attention_fwd(plain, DTYPE_BF16, a).time_s,
				   1e-12));
	cr_assert(gpu_fixture_near(gpu_attention_bwd(g, DTYPE_BF16, a).time_s,
				   gpu_attention_bwd(plain, DTYPE_BF16, a).time_s,
				   1e-12));
}

Test(gpu, attention_exponentials_leave_the_calibrated_head_dim_alone)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g, plain;

	exp_gpu(&g);
	gpu_fixture_toy(&plain);
	/* At d = d_c: (1 - phi) + phi x 1 = 1, the measured rate. */
	assert_same_bf16_attention(&g, &plain, &a);
}

Test(gpu, attention_exponentials_slow_a_small_head_dim)
{
	struct gpu_attn_shape a = shape64();
	struct gpu_spec g;
	struct gpu_cost c;

	exp_gpu(&g);
	/* Forward at d = 64: half the FLOP per pair, rate 250 / ((1 - 0.5) +
	 * 0.5 x 512 / 256) = 250 / 1.5 TFLOP/s, so a tile takes
	 * tau_f / 2 x 1.5 = 0.75 tau_f; a unit loads a Q block of half the
	 * bytes, t_uf / 2: 16 waves of (t_uf / 2 + 32 x 0.75 tau_f) =
	 * 16 (0.328 + 80.53) us = 1293.7 us (without the term: 16 (0.328 +
	 * 53.69) us = 864.2 us, 1.5 x less in the tiles). */
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 16 * (TU_F / 2 + 32 * 0.75 * TAU_F),
				   1e-9), "got %g", c.time_s);
	/* Backward: rate 125 / (0.9 + 0.1 x 1280 / 640) = 125 / 1.1
	 * TFLOP/s: the time of the toy without the term at bwd_efficiency
	 * 0.25 / 1.1 (the rate enters only through the tiles). */
	c = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	g.attention.exp_per_clock = 0;
	g.attention.bwd_efficiency = 0.25 / 1.1;
	cr_assert(gpu_fixture_near(c.time_s,
				   gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s,
				   1e-12), "got %g", c.time_s);
}

Test(gpu, attention_exponentials_bound_a_pair_from_below)
{
	struct gpu_attn_shape a = shape64();
	struct gpu_spec g;
	double t;

	/* One exp per clock per unit: t_e = 1 / (1 x 100 x 1 GHz) = 10 ps,
	 * above t_c = 2.048 ps (phi = 4.883): the SFU cannot feed the rate
	 * the efficiency claims, and a pair takes t_e at any head dim. At
	 * d = 64 that is 256 FLOP / 10 ps = 25.6 TFLOP/s: forward efficiency
	 * 25.6 / 500 = 0.0512 without the term. */
	exp_gpu(&g);
	g.attention.exp_per_clock = 1;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	g.attention.exp_per_clock = 0;
	g.attention.fwd_efficiency = 0.0512;
	cr_assert(gpu_fixture_near(t, gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   1e-12), "got %g", t);
	/* The same at d = 128 (256 + 256 FLOP per pair in 10 ps: 51.2
	 * TFLOP/s, efficiency 0.1024). */
	a = shape(0);
	exp_gpu(&g);
	g.attention.exp_per_clock = 1;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	g.attention.exp_per_clock = 0;
	g.attention.fwd_efficiency = 0.1024;
	cr_assert(gpu_fixture_near(t, gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   1e-12), "got %g", t);
}

/*
 * Overlapped softmax (attention.softmax_overlap): a pair takes
 * max((F(d) / F(d_c)) t_c, t_e), not the sum's share. With x = 10000 /
 * 1536, t_e = 1.536 ps: at d_c = 128 the forward's t_c = 2.048 ps still
 * bounds the pair (phi = 0.75), so nothing moves there; the tests below
 * move only off d_c.
 */
Test(gpu, overlapped_softmax_keeps_the_rate_flat_above_the_calibration)
{
	struct gpu_attn_shape a = shape(0);
	struct gpu_spec g, plain;

	exp_gpu(&g);
	g.attention.exp_per_clock = 10000.0 / 1536;
	g.attention.softmax_overlap = 1;
	gpu_fixture_toy(&plain);
	/* d_c: max(2.048, 1.536) ps = t_c, the measured rate. */
	cr_assert(gpu_fixture_near(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   gpu_attention_fwd(&plain, DTYPE_BF16, &a).time_s,
				   1e-12));
	/* d = 256: the products take 2 x 2.048 = 4.096 ps > t_e, the
	 * calibrated rate per FLOP (the toy without the term). The sum would
	 * give 250 / (0.25 + 0.75 x 0.5) = 400 TFLOP/s, 1.6x faster. Both
	 * passes (backward: t_c 10.24 ps, t_e far below). */
	a.head_dim_qk = a.head_dim_v = 256;
	assert_same_bf16_attention(&g, &plain, &a);
}

Test(gpu, overlapped_softmax_lets_the_exponentials_bound_a_small_head_dim)
{
	struct gpu_attn_shape a = shape64();
	struct gpu_spec g;
	struct gpu_cost c;

	exp_gpu(&g);
	g.attention.exp_per_clock = 10000.0 / 1536;
	g.attention.softmax_overlap = 1;
	/* d = 64: the products take 2.048 / 2 = 1.024 ps < t_e = 1.536 ps:
	 * the pair takes t_e, 256 FLOP / 1.536 ps = 250 / 1.5 TFLOP/s, a
	 * tile 0.75 tau_f (the sum: 250 / (0.25 + 0.75 x 2) = 250 / 1.75,
	 * 0.875 tau_f). 16 waves of (t_uf / 2 + 32 x 0.75 tau_f), as in
	 * attention_exponentials_slow_a_small_head_dim. */
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 16 * (TU_F / 2 + 32 * 0.75 * TAU_F),
				   1e-9), "got %g", c.time_s);
}

/* FP8 attention (training.fp8_attention) under a sliding window of 128
 * keys, one head of 4096 (32 key blocks, fewer units than the 100 CUs:
 * the step is the longest unit). With attention.fp8_bwd_skips_window
 * the backward's key block j is seen by query blocks j and j + 1 (the
 * band): longest unit t_ub + 2 tau_b. Without it (cuDNN 9.22 on sm100:
 * the FP8 backward grows with s^2) key block 0 is seen by all 32 query
 * blocks: t_ub + 32 tau_b, 30 tau_b = 503.3 us more; the work counted
 * stays the window's pairs, and the forward does not change. */
Test(gpu, fp8_backward_without_window_skip_computes_the_triangle)
{
	struct gpu_attn_shape a = shape(1), fp8;
	struct gpu_spec g;
	struct gpu_cost skip, full;
	double d;

	gpu_fixture_toy(&g);
	a.heads_q = a.heads_kv = 1;
	a.window = 128;
	fp8 = a;
	fp8.fp8 = 1;
	g.attention.fp8_bwd_skips_window = 1;
	skip = gpu_attention_bwd(&g, DTYPE_BF16, &fp8);
	cr_assert_eq(skip.time_s, gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s);
	g.attention.fp8_bwd_skips_window = 0;
	full = gpu_attention_bwd(&g, DTYPE_BF16, &fp8);
	d = full.time_s - skip.time_s;
	cr_assert(gpu_fixture_near(d, 30 * TAU_B, 1e-9), "backward +%g s", d);
	cr_assert_eq(full.flops, skip.flops);
	/* bf16 (fp8 0) keeps skipping; the forward is the same kernel. */
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s, skip.time_s);
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &fp8).time_s,
		     gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s);
}

/* The window's lower edge masks tiles too. One head of 4096 (32 blocks
 * of 128, fewer units than the 100 CUs: the time is the longest unit),
 * masked_tile_cost 1 -> 2 adds one tau per masked tile of that unit.
 * Window 128 (= B): query block i sees key blocks i - 1 (the edge runs
 * from key 128 i - 127 to 128 i: it crosses block i - 1 only) and i (the
 * diagonal): 2 masked tiles, +2 tau_f; backward key block j is seen by
 * query blocks j (diagonal) and j + 1 (whose edge crosses block j): +2
 * tau_b. Window 192: query block i's edge runs from 128 i - 191 to
 * 128 i - 64, across blocks i - 2 and i - 1; with the diagonal all three
 * tiles are masked: +3 tau_f. Backward: key block j is seen by query
 * blocks j .. j + 2, the edges of j + 1 (from 128 j - 63) and j + 2 (from
 * 128 j + 65) cross it: +3 tau_b. Before the edge was counted, each
 * case paid +1 tau. */
Test(gpu, window_edge_tiles_are_masked)
{
	static const struct { double w, fwd, bwd; } c[] = {
		{128, 2 * TAU_F, 2 * TAU_B}, {192, 3 * TAU_F, 3 * TAU_B},
	};
	struct gpu_attn_shape a = shape(1);
	struct gpu_spec g;
	double f1, b1, f2, b2;
	size_t i;

	gpu_fixture_toy(&g);
	a.heads_q = a.heads_kv = 1;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		a.window = c[i].w;
		g.attention.masked_tile_cost = 1;
		f1 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
		b1 = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
		g.attention.masked_tile_cost = 2;
		f2 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
		b2 = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
		cr_assert(gpu_fixture_near(f2 - f1, c[i].fwd, 1e-9),
			  "w %g forward +%g s", c[i].w, f2 - f1);
		cr_assert(gpu_fixture_near(b2 - b1, c[i].bwd, 1e-9),
			  "w %g backward +%g s", c[i].w, b2 - b1);
	}
	/* Without a window only the diagonal is masked: +1 tau. */
	a.window = 0;
	g.attention.masked_tile_cost = 1;
	f1 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	g.attention.masked_tile_cost = 2;
	f2 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert(gpu_fixture_near(f2 - f1, TAU_F, 1e-9), "+%g s", f2 - f1);
}

/* MLA's narrower value head dim (192 / 128) with attention.fwd_pads_v /
 * bwd_pads_v: the kernel computes V at 192 (see the top of
 * gpu_attention.c). The toy, 25 heads x 4096 unmasked, 8 waves of units:
 *
 *   forward  tile 128^2 x 2 (192 + 192) FLOP / 2.5 TFLOP/s = 5.033 us
 *            (unpadded 2 (192 + 128): 4.194 us); a unit loads its Q block,
 *            128 x 192 x 2 B / 5e10 B/s = 0.983 us (Q, K, V, O and LSE
 *            = 131.5 MB, past the 100 MB LLC: HBM at 5 TB/s):
 *            8 (0.983 + 32 x 5.033) = 1296.4 us, unpadded 1081.6 us;
 *   backward tile 128^2 x 2 (3 x 192 + 2 x 192) FLOP / 1.25 TFLOP/s
 *            = 25.166 us; a unit loads K and V at 192,
 *            128 x 384 x 2 B / 5e10 = 1.966 us: 8 (1.966 + 32 x 25.166)
 *            = 6458.2 us, plus the pre- and post-pass over the unpadded
 *            tensors, 25 x 4096 x (2 x 128 x 2 + 4 + 8 x 192 + 192 x 2) B
 *            = 249.4 MB / 5 TB/s = 49.9 us.
 *
 * The FLOPs reported stay the shape's, 2 (192 + 128) per pair forward. */
static struct gpu_attn_shape mla_shape(void)
{
	struct gpu_attn_shape a = shape(0);

	a.head_dim_qk = 192;
	a.head_dim_v = 128;
	return a;
}

#define MLA_TU_F (128.0 * 192 * 2 / 5e10)
#define MLA_TU_B (128.0 * 384 * 2 / 5e10)
#define MLA_TAU_F(dv) (128.0 * 128 * 2 * (192 + (dv)) / 2.5e12)
#define MLA_TAU_B (128.0 * 128 * 2 * (3 * 192 + 2 * 192) / 1.25e12)
#define MLA_SIDE_S (25.0 * 4096 * (2 * 128 * 2 + 4 + 8 * 192 + 192 * 2) / 5e12)

Test(gpu, attention_pads_a_narrower_value_head_dim)
{
	struct gpu_attn_shape a = mla_shape();
	struct gpu_spec g;
	struct gpu_cost c;

	gpu_fixture_toy(&g);
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (MLA_TU_F + 32 * MLA_TAU_F(128)),
				   1e-9), "unpadded forward %g", c.time_s);
	g.attention.fwd_pads_v = 1;
	c = gpu_attention_fwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (MLA_TU_F + 32 * MLA_TAU_F(192)),
				   1e-9), "padded forward %g", c.time_s);
	cr_assert(gpu_fixture_near(c.flops, 2.0 * 320 * 25 * 4096 * 4096,
				   1e-12));
	/* the forward's flag leaves the backward alone, and vice versa */
	g.attention.fwd_pads_v = 0;
	g.attention.bwd_pads_v = 1;
	cr_assert(gpu_fixture_near(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   8 * (MLA_TU_F + 32 * MLA_TAU_F(128)), 1e-9));
	c = gpu_attention_bwd(&g, DTYPE_BF16, &a);
	cr_assert(gpu_fixture_near(c.time_s, 8 * (MLA_TU_B + 32 * MLA_TAU_B) +
					     MLA_SIDE_S, 1e-9),
		  "padded backward %g", c.time_s);
	cr_assert(gpu_fixture_near(c.flops, 2.0 * (3 * 192 + 2 * 128) * 25 *
					    4096 * 4096, 1e-12));
}

Test(gpu, attention_padding_spares_equal_dims_and_flash_kernels)
{
	struct gpu_attn_shape a = shape(0), m = mla_shape();
	struct gpu_spec g, plain;

	gpu_fixture_toy(&plain);
	gpu_fixture_toy(&g);
	g.attention.fwd_pads_v = g.attention.bwd_pads_v = 1;
	/* d = d_v: nothing to pad */
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
		     gpu_attention_fwd(&plain, DTYPE_BF16, &a).time_s);
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s,
		     gpu_attention_bwd(&plain, DTYPE_BF16, &a).time_s);
	/* the flags describe the vendor kernel: FlashAttention-2 keeps d_v */
	m.kernel = GPU_ATTN_FLASH2;
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &m).time_s,
		     gpu_attention_fwd(&plain, DTYPE_BF16, &m).time_s);
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &m).time_s,
		     gpu_attention_bwd(&plain, DTYPE_BF16, &m).time_s);
}
