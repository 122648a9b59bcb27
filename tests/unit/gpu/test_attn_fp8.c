/*
 * test_attn_fp8.c - FP8 and MXFP8 fused attention (src/gpu/gpu_attention.c,
 * "FP8"; the GPU schema's attention.fp8_* / mxfp8_* keys) on the toy GPU
 * of fixture.h: bf16 attention at 1000 x 0.5 x 0.5 = 250 TFLOP/s forward,
 * 1000 x 0.5 x 0.25 = 125 TFLOP/s backward; fp8 peak 2000 TFLOP/s, so an
 * FP8 efficiency e runs at 2000 x 0.5 x e = 1000 e TFLOP/s; no exp term.
 *
 *   tau_f = 128^2 x 2 (128 + 128) FLOP / 2.5 TFLOP/s     =  3.355 us  a bf16 forward tile
 *   tau_b = 128^2 x 2 (3 128 + 2 128) FLOP / 1.25 TFLOP/s = 16.777 us  a bf16 backward tile
 *   t_uf  = 0.655 us, t_ub = 1.311 us                       a unit's load (HBM, 5e10 B/s a CU)
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_gpu.h"
#include "fixture.h"

#define TAU_F (128.0 * 128 * 2 * 256 / 2.5e12)
#define TAU_B (128.0 * 128 * 2 * 640 / 1.25e12)
#define TU_F (128.0 * 128 * 2 / 5e10)

/* 25 heads of 4096 at head dim 128: 800 forward units, 8 full waves of
 * 100 (test_attention.c's shape). */
static struct gpu_attn_shape shape(int causal)
{
	return gpu_fixture_attn_shape(causal);
}

/* An FP8 kernel with attention.fp8_fwd_efficiency 0.5 runs its tiles at
 * 2000 x 0.5 x 0.5 = 500 TFLOP/s, twice bf16's: 8 waves of t_uf + 32
 * tau_f / 2 = 8 (0.655 + 53.687) us = 434.7 us (bf16 864.2 us). Before
 * FP8 had a rate of its own it ran at bf16's. Without the key it still
 * does; a flash2 kernel (not the vendor's) too. MXFP8 takes its own key
 * at the mxfp8 peak: 0.25 of 2000 x 0.5 is bf16's 250 TFLOP/s. */
Test(gpu, fp8_attention_runs_at_its_own_efficiency)
{
	struct gpu_attn_shape a = shape(0), f = shape(0);
	struct gpu_spec g;
	double bf16, t;

	gpu_fixture_toy(&g);
	f.fp8 = 1;
	bf16 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s, bf16);
	g.attention.fp8_fwd_efficiency = 0.5;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert(gpu_fixture_near(t, 8 * (TU_F + 32 * TAU_F / 2), 1e-9),
		  "got %g", t);
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s, bf16);
	f.kernel = a.kernel = GPU_ATTN_FLASH2;
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s,
		     gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s);
	f.kernel = GPU_ATTN_VENDOR;
	f.mx = 1;
	g.matrix_peak_flops[DTYPE_MXFP8] = 2000e12;
	g.attention.mxfp8_fwd_efficiency = 0.25;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert(gpu_fixture_near(t, bf16, 1e-12), "got %g", t);
}

/* The backward likewise: fp8_bwd_efficiency 0.25 is 250 TFLOP/s, twice
 * bf16's 125, so the main kernel's tiles take tau_b / 2; the forward key
 * does not touch it. */
Test(gpu, fp8_attention_backward_takes_its_own_key)
{
	struct gpu_attn_shape a = shape(0), f = shape(0);
	struct gpu_spec g;
	double bf16, t, tiles;

	gpu_fixture_toy(&g);
	f.fp8 = 1;
	g.attention.fp8_fwd_efficiency = 0.5;
	bf16 = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s, bf16);
	g.attention.fp8_bwd_efficiency = 0.25;
	t = gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s;
	/* 8 waves of 32 tiles: 8 x 32 x tau_b / 2 saved. */
	tiles = 8 * 32 * TAU_B / 2;
	cr_assert(gpu_fixture_near(bf16 - t, tiles, 1e-9), "saved %g s",
		  bf16 - t);
}

/* A masked tile's extra is the bf16 tile's (mu - 1) tau_16, not a
 * multiple of the shorter FP8 tile. One causal head of 4096: 32 query
 * blocks, fewer units than the 100 CUs, so the time is the longest unit,
 * query block 31 (32 tiles at tau_f / 2, the diagonal masked). masked_tile_cost 1 ->
 * 2 adds tau_f = 3.355 us at fp8_fwd_efficiency 0.5 as in bf16 (the old
 * charge, mu x tau_f / 2, added tau_f / 2). */
Test(gpu, fp8_masked_tile_pays_the_bf16_mask)
{
	struct gpu_attn_shape f = shape(1);
	struct gpu_spec g;
	double t1, t2;

	gpu_fixture_toy(&g);
	f.heads_q = f.heads_kv = 1;
	f.fp8 = 1;
	g.attention.fp8_fwd_efficiency = 0.5;
	t1 = gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s;
	/* one head's 8.4 MB sit in the L2 (40 TB/s x 0.5, 2e11 B/s a CU):
	 * a Q block loads in 32768 B / 2e11 B/s = 0.164 us */
	cr_assert(gpu_fixture_near(t1, 32768 / 2e11 + 32 * TAU_F / 2, 1e-9),
		  "got %g", t1);
	g.attention.masked_tile_cost = 2;
	t2 = gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert(gpu_fixture_near(t2 - t1, TAU_F, 1e-9), "+%g s", t2 - t1);
}

/* An FP8 backward that does not skip the tiles outside a sliding window
 * (attention.fp8_bwd_skips_window false) runs the window's mask on every
 * causal tile. One head of 4096, window 128: key block 0 is seen by all
 * 32 query blocks; masked_tile_cost 1 -> 2 adds 32 tau_b (= 536.9 us),
 * where the diagonal alone added 1 tau_b before. Skipping them, the band
 * (query blocks 0 and 1 for key block 0, both masked) adds 2 tau_b. */
Test(gpu, fp8_window_backward_masks_every_tile_it_computes)
{
	struct gpu_attn_shape f = shape(1);
	struct gpu_spec g;
	double t1, t2;
	int skip;

	f.heads_q = f.heads_kv = 1;
	f.window = 128;
	f.fp8 = 1;
	for (skip = 0; skip <= 1; skip++) {
		gpu_fixture_toy(&g);
		g.attention.fp8_bwd_efficiency = 0.25;
		g.attention.fp8_bwd_skips_window = skip;
		t1 = gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s;
		g.attention.masked_tile_cost = 2;
		t2 = gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s;
		cr_assert(gpu_fixture_near(t2 - t1, (skip ? 2 : 32) * TAU_B,
					   1e-9),
			  "skip %d: +%g s", skip, t2 - t1);
	}
}

static int check(struct gpu_spec *g, char *buf, size_t len)
{
	return gpu_fixture_check(g, buf, len);
}

static void minimal(struct gpu_spec *g)
{
	memset(g, 0, sizeof(*g));
	g->compute_units = 132;
	g->max_clock_hz = 1980e6;
	g->matrix_peak_flops[DTYPE_BF16] = 989.4e12;
	g->gemm_efficiency = 0.8;
	g->hbm = (struct gpu_mem_level){80e9, 3.35e12, 0.9};
}

/* The MXFP8 keys default to the FP8 ones on a GPU with an mxfp8 peak;
 * an FP8 efficiency on a GPU without an fp8 peak is an error at the key
 * (a fraction of nothing). */
Test(spec_gpu, fp8_attention_keys_default_and_need_their_peak)
{
	struct gpu_spec g;
	char buf[512] = "";

	minimal(&g);
	g.matrix_peak_flops[DTYPE_FP8] = 1978.9e12;
	g.matrix_peak_flops[DTYPE_MXFP8] = 1978.9e12;
	g.attention.fp8_fwd_efficiency = 0.45;
	g.attention.fp8_bwd_efficiency = 0.4;
	g.attention.mxfp8_bwd_efficiency = 0.3;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.mxfp8_fwd_efficiency, 0.45);
	cr_assert_eq(g.attention.mxfp8_bwd_efficiency, 0.3);

	/* No mxfp8 peak: the MXFP8 keys stay absent (no error). */
	minimal(&g);
	g.matrix_peak_flops[DTYPE_FP8] = 1978.9e12;
	g.attention.fp8_fwd_efficiency = 0.45;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.mxfp8_fwd_efficiency, 0);

	minimal(&g);
	g.attention.fp8_fwd_efficiency = 0.45;
	buf[0] = '\0';
	cr_assert_lt(check(&g, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "'attention.fp8_fwd_efficiency': is a fraction "
			      "of the fp8 peak, but 'matrix_peak' gives no "
			      "fp8"), "%s", buf);
}

/* Under attention.softmax_overlap the FP8 kernel's softmax sustains
 * attention.lowp_softmax_per_clock x scores per clock per SM: with x =
 * 10000 / 2048 on the toy's 100 CUs at 1 GHz a score takes 2.048 ps,
 * above the FP8 products' 512 FLOP / 500 TFLOP/s = 1.024 ps (efficiency
 * 0.5) and above the exps' 1 / (100 x 100 x 1 GHz) = 0.1 ps: the pair
 * takes 2.048 ps, 250 TFLOP/s, bf16's rate, so the FP8 forward takes
 * bf16's time (8 (t_uf + 32 tau_f) = 864.2 us). Without the key: 434.7
 * us, as above. bf16 (2.048 ps of products) does not move. */
Test(gpu, fp8_softmax_bounds_an_overlapped_pair)
{
	struct gpu_attn_shape a = shape(0), f = shape(0);
	struct gpu_spec g;
	double bf16, t;

	gpu_fixture_toy(&g);
	bf16 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	f.fp8 = 1;
	g.attention.fp8_fwd_efficiency = 0.5;
	g.attention.exp_per_clock = 100;
	g.attention.calib_head_dim = 128;
	g.attention.softmax_overlap = 1;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert(gpu_fixture_near(t, 8 * (TU_F + 32 * TAU_F / 2), 1e-9),
		  "got %g", t);
	g.attention.lowp_softmax_per_clock = 10000.0 / 2048;
	t = gpu_attention_fwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert(gpu_fixture_near(t, bf16, 1e-12), "got %g", t);
	cr_assert(gpu_fixture_near(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   bf16, 1e-12));
}

/* The bound acts only under softmax_overlap: without it the key is an
 * error at the key, not silently ignored. */
Test(spec_gpu, lowp_softmax_needs_the_overlap)
{
	struct gpu_spec g;
	char buf[512] = "";

	minimal(&g);
	g.attention.exp_per_clock = 16;
	g.attention.lowp_softmax_per_clock = 14.5;
	cr_assert_lt(check(&g, buf, sizeof(buf)), 0);
	cr_assert(strstr(buf, "'attention.lowp_softmax_per_clock': is a bound "
			      "under softmax_overlap"), "%s", buf);
	g.attention.softmax_overlap = 1;
	buf[0] = '\0';
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
}

/* MLA's 192 / 128 heads where the bf16 backward pads V to 192
 * (attention.bwd_pads_v: 3 x 192 + 2 x 192 = 960 work a pair) and the
 * FP8 one does not (attention.fp8_bwd_keeps_v: 3 x 192 + 2 x 128 = 832),
 * as cuDNN 9.22 measures on GB200 and GB300 (configs/gpus/gb200.yaml).
 * The FP8 backward then takes what it takes with no padding at all, the
 * bf16 one what it takes padded; without fp8_bwd_keeps_v the FP8 one is
 * padded too, and slower (960 / 832 of its tiles' work). The flag needs
 * an FP8 kernel: with no fp8_bwd_efficiency the "FP8" backward is the
 * bf16 kernel and pads. */
Test(gpu, fp8_backward_keeps_a_narrower_value_head_dim)
{
	struct gpu_attn_shape a = shape(0), f;
	struct gpu_spec g, plain;
	double keep, pad, bf16_pad, bf16_plain;

	a.head_dim_qk = 192;
	a.head_dim_v = 128;
	f = a;
	f.fp8 = 1;
	gpu_fixture_toy(&g);
	g.attention.bwd_pads_v = 1;
	/* no FP8 kernel: the flag changes nothing, both pad */
	g.attention.fp8_bwd_keeps_v = 1;
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s,
		     gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s);
	g.attention.fp8_fwd_efficiency = 0.5;
	g.attention.fp8_bwd_efficiency = 0.25;
	plain = g;
	plain.attention.bwd_pads_v = 0;
	keep = gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert_eq(keep, gpu_attention_bwd(&plain, DTYPE_BF16, &f).time_s);
	g.attention.fp8_bwd_keeps_v = 0;
	pad = gpu_attention_bwd(&g, DTYPE_BF16, &f).time_s;
	cr_assert(pad > keep * 1.05, "padded FP8 %g s, kept %g s", pad, keep);
	/* the bf16 backward pads either way */
	bf16_pad = gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s;
	g.attention.fp8_bwd_keeps_v = 1;
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &a).time_s, bf16_pad);
	bf16_plain = gpu_attention_bwd(&plain, DTYPE_BF16, &a).time_s;
	cr_assert(bf16_pad > bf16_plain * 1.05, "bf16 %g s padded, %g s not",
		  bf16_pad, bf16_plain);
}
