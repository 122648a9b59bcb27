/*
 * test_spec_gpu.c - the GPU schema's cross-field check (src/config/spec_gpu.c):
 * defaults it derives and the errors it reports. Loading YAML is the
 * config loader's and is tested there; these call gpu_schema.check on
 * structs built here.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_gpu.h"
#include "fixture.h"

static int64_t two[] = {128, 256};
static int64_t one[] = {128};

static void minimal(struct gpu_spec *g)
{
	memset(g, 0, sizeof(*g));
	g->compute_units = 132;
	g->max_clock_hz = 1980e6;
	g->matrix_peak_flops[DTYPE_BF16] = 989.4e12;
	g->gemm_efficiency = 0.8;
	g->hbm = (struct gpu_mem_level){80e9, 3.35e12, 0.9};
}

static int check(struct gpu_spec *g, char *buf, size_t len)
{
	return gpu_fixture_check(g, buf, len);
}

Test(spec_gpu, check_derives_defaults)
{
	struct gpu_spec g;
	char buf[256] = "";

	minimal(&g);
	g.gemm_efficiency_dtype[DTYPE_FP8] = 0.7;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	/* Clocks default down the chain max -> matrix -> sustained. */
	cr_assert_eq(g.matrix_clock_hz, 1980e6);
	cr_assert_eq(g.sustained_matrix_clock_hz, 1980e6);
	cr_assert_eq(g.hbm_usable_B, 80e9);
	/* Per-dtype efficiency: given for fp8, gemm_efficiency elsewhere. */
	cr_assert_eq(g.gemm_efficiency_dtype[DTYPE_FP8], 0.7);
	cr_assert_eq(g.gemm_efficiency_dtype[DTYPE_BF16], 0.8);
	/* Attention defaults to running like a GEMM. */
	cr_assert_eq(g.attention.fwd_efficiency, 0.8);
	cr_assert_eq(g.attention.bwd_efficiency, 0.8);
}

Test(spec_gpu, attention_families_default_down_the_chain)
{
	struct gpu_spec g;
	char buf[256] = "";

	/* vendor (0.8 from gemm_efficiency) -> flash2 (given 0.4 forward,
	 * the vendor's 0.8 backward) -> flash_triton (given 0.2 backward,
	 * flash2's 0.4 forward). */
	minimal(&g);
	g.attention.flash2_fwd_efficiency = 0.4;
	g.attention.flash_triton_bwd_efficiency = 0.2;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.flash2_bwd_efficiency, 0.8);
	cr_assert_eq(g.attention.flash_triton_fwd_efficiency, 0.4);
	cr_assert_eq(g.attention.flash_triton_bwd_efficiency, 0.2);
	/* PyTorch SDPA's flash backend: flash2's unless given. */
	cr_assert_eq(g.attention.sdpa_flash_fwd_efficiency, 0.4);
	cr_assert_eq(g.attention.sdpa_flash_bwd_efficiency, 0.8);
}

Test(spec_gpu, sdpa_flash_keeps_its_own_efficiencies)
{
	struct gpu_spec g;
	char buf[256] = "";

	minimal(&g);
	g.attention.flash2_fwd_efficiency = 0.5;
	g.attention.sdpa_flash_fwd_efficiency = 0.4;
	g.attention.sdpa_flash_bwd_efficiency = 0.3;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.flash2_fwd_efficiency, 0.5);
	cr_assert_eq(g.attention.sdpa_flash_fwd_efficiency, 0.4);
	cr_assert_eq(g.attention.sdpa_flash_bwd_efficiency, 0.3);
}

Test(spec_gpu, ck_tile_defaults_to_the_vendor_kernel)
{
	struct gpu_spec g;
	char buf[256] = "";

	/* ck_tile defaults to the vendor's efficiencies (TE's CK backend is
	 * the vendor path on AMD), not FlashAttention-2's: vendor 0.8 (from
	 * gemm_efficiency) forward, 0.6 backward; flash2 0.4 / 0.3; given a
	 * ck_tile backward of 0.284, its forward is the vendor's 0.8. */
	minimal(&g);
	g.attention.bwd_efficiency = 0.6;
	g.attention.flash2_fwd_efficiency = 0.4;
	g.attention.flash2_bwd_efficiency = 0.3;
	g.attention.ck_tile_bwd_efficiency = 0.284;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.ck_tile_fwd_efficiency, 0.8);
	cr_assert_eq(g.attention.ck_tile_bwd_efficiency, 0.284);
	/* unset, the backward is the vendor's 0.6 */
	minimal(&g);
	g.attention.bwd_efficiency = 0.6;
	g.attention.flash2_bwd_efficiency = 0.3;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.ck_tile_bwd_efficiency, 0.6);
}

Test(spec_gpu, ck_tile_masked_tile_defaults_to_the_vendor_kernel)
{
	struct gpu_spec g;
	char buf[256] = "";

	/* Unset, the CK-tile backward's masked tile costs masked_tile_cost
	 * (1.65, H200's); set, its own (1.0, mi355x.yaml's fit), and the
	 * other kernels' cost stays 1.65. */
	minimal(&g);
	g.attention.masked_tile_cost = 1.65;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.ck_tile_bwd_masked_tile_cost, 1.65);
	minimal(&g);
	g.attention.masked_tile_cost = 1.65;
	g.attention.ck_tile_bwd_masked_tile_cost = 1.0;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.ck_tile_bwd_masked_tile_cost, 1.0);
	cr_assert_eq(g.attention.masked_tile_cost, 1.65);
}

/* check() must fail on g and say each of the needles. */
static void expect_rejected(struct gpu_spec *g, const char *const *needles)
{
	char buf[1024] = "";

	cr_assert_eq(check(g, buf, sizeof(buf)), -1);
	for (; *needles; needles++)
		cr_assert_not_null(strstr(buf, *needles), "no '%s' in: %s",
				   *needles, buf);
}

Test(spec_gpu, check_rejects_unpaired_tiles)
{
	static const char *const say[] = {"as many tiles as 'gemm_tile_n'",
					  "got 2 and 1", NULL};
	struct gpu_spec g;

	minimal(&g);
	g.gemm_tile_m.v = two;
	g.gemm_tile_m.n = 2;
	g.gemm_tile_n.v = one;
	g.gemm_tile_n.n = 1;
	expect_rejected(&g, say);
}

Test(spec_gpu, check_rejects_moe_tile_above_every_tile)
{
	static const char *const say[] = {"cutlass_moe_tile_m",
					  "at most the largest gemm_tile_m (256) "
					  "at nvfp4", "got 512", NULL};
	struct gpu_spec g;
	char buf[256] = "";

	/* 128 and 256-row tiles: 256 leaves one (accepted), 512 none */
	minimal(&g);
	g.gemm_tile_m.v = two;
	g.gemm_tile_m.n = 2;
	g.gemm_tile_n.v = two;
	g.gemm_tile_n.n = 2;
	g.cutlass_moe_tile_m[DTYPE_NVFP4] = 256;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	g.cutlass_moe_tile_m[DTYPE_NVFP4] = 512;
	expect_rejected(&g, say);
}

/* One spelling of an architecture: sm and the compute capability's
 * digits (NVIDIA), gfx and hex digits (AMD); the GPU's own arch is held
 * to it and to its vendor, and gpu_arch_is compares only such names. */
Test(spec_gpu, arch_names_have_one_spelling)
{
	static const char *const bad[] = {"arch", "expected sm and the "
					  "compute capability's digits",
					  "got 'SM100'", NULL};
	static const char *const amd[] = {"arch", "'gfx942' is an AMD "
					  "architecture, but vendor is "
					  "nvidia", NULL};
	struct gpu_spec g;
	char buf[256] = "";

	cr_assert_eq(gpu_arch_vendor("sm90"), GPU_NVIDIA);
	cr_assert_eq(gpu_arch_vendor("sm103"), GPU_NVIDIA);
	cr_assert_eq(gpu_arch_vendor("gfx90a"), GPU_AMD);
	cr_assert_eq(gpu_arch_vendor("zen5"), GPU_AMD);	/* configs/cpus */
	cr_assert_eq(gpu_arch_vendor("sm9"), -1);
	cr_assert_eq(gpu_arch_vendor("sm_90"), -1);
	cr_assert_eq(gpu_arch_vendor("blackwell"), -1);
	cr_assert_eq(gpu_arch_vendor(""), -1);
	cr_assert_eq(gpu_arch_vendor(NULL), -1);
	minimal(&g);
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);	/* none */
	g.arch = "sm100";
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert(gpu_arch_is(&g, "sm100"));
	cr_assert(!gpu_arch_is(&g, "sm103"));
	cr_assert(!gpu_arch_is(&g, NULL));
	g.arch = "SM100";
	expect_rejected(&g, bad);
	g.arch = "gfx942";
	expect_rejected(&g, amd);
	g.vendor = GPU_AMD;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert(gpu_arch_is(&g, "gfx942"));
}

Test(spec_gpu, check_requires_hbm_and_a_peak)
{
	/* Both problems are reported, not just the first. */
	static const char *const say[] = {"'matrix_peak'", "'hbm'", NULL};
	struct gpu_spec g;

	minimal(&g);
	g.hbm.bandwidth_Bps = 0;
	g.matrix_peak_flops[DTYPE_BF16] = 0;
	expect_rejected(&g, say);
}

Test(spec_gpu, check_rejects_a_cache_without_bandwidth)
{
	static const char *const say[] = {"'llc.bandwidth'", NULL};
	struct gpu_spec g;

	minimal(&g);
	g.llc.capacity_B = 256e6;
	expect_rejected(&g, say);
}

Test(spec_gpu, check_rejects_clocks_above_max)
{
	static const char *const say[] = {"at most 'max_clock'", NULL};
	struct gpu_spec g;

	minimal(&g);
	g.sustained_matrix_clock_hz = 2100e6;
	expect_rejected(&g, say);
}

Test(spec_gpu, check_rejects_usable_above_capacity)
{
	static const char *const say[] = {"'hbm_usable'", NULL};
	struct gpu_spec g;

	minimal(&g);
	g.hbm_usable_B = 81e9;
	expect_rejected(&g, say);
}

Test(spec_gpu, mx_bytes_carry_their_block_scale)
{
	/* One 8-bit E8M0 scale per 32 elements: mxfp4 = 4/8 + 1/32 B. */
	cr_assert_eq(dtype_bytes(DTYPE_MXFP4), 0.5 + 1.0 / 32);
	cr_assert_eq(dtype_bytes(DTYPE_MXFP6), 0.75 + 1.0 / 32);
	cr_assert_eq(dtype_bytes(DTYPE_BF16), 2.0);
}

/* attention.softmax_overlap weighs the products against the exps: without
 * their rate it has nothing to weigh, and says so at the key. */
Test(spec_gpu, softmax_overlap_needs_the_exponential_rate)
{
	static const char *const say[] = {"'attention.softmax_overlap'",
					  "'attention.exp_per_clock'", NULL};
	struct gpu_spec g;
	char buf[512] = "";

	minimal(&g);
	g.attention.softmax_overlap = 1;
	expect_rejected(&g, say);
	g.attention.exp_per_clock = 16;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
}

/* The power model's keys (gpu_power.c): all five or none, the burst
 * clock between the sustained clock and max_clock. */
static void power(struct gpu_spec *g)
{
	minimal(g);
	g->sustained_matrix_clock_hz = 1485e6;
	g->burst_matrix_clock_hz = 1776e6;
	g->burst_gemm_power = 1.386;
	g->stream_power = 0.617;
	g->idle_power = 0.173;
	g->power_window_s = 0.116;
}

Test(spec_gpu, check_takes_the_power_model_whole)
{
	struct gpu_spec g;
	char buf[256] = "";

	power(&g);
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
}

Test(spec_gpu, check_rejects_part_of_the_power_model)
{
	static const char *const say[] = {"'power_window'", "or none of them",
					  NULL};
	struct gpu_spec g;

	power(&g);
	g.power_window_s = 0;
	expect_rejected(&g, say);
}

Test(spec_gpu, check_rejects_burst_clock_out_of_order)
{
	static const char *const below[] = {"'sustained_matrix_clock'",
					    "at most 'burst_matrix_clock'",
					    NULL};
	static const char *const above[] = {"at most 'max_clock'", NULL};
	struct gpu_spec g;

	power(&g);
	g.burst_matrix_clock_hz = 1400e6;	/* under the sustained 1485 */
	expect_rejected(&g, below);
	power(&g);
	g.burst_matrix_clock_hz = 2000e6;	/* over max_clock 1980 */
	expect_rejected(&g, above);
}

Test(spec_gpu, check_rejects_idle_power_over_stream_power)
{
	static const char *const say[] = {"'idle_power'",
					  "at most 'stream_power' (0.617)",
					  "got 0.7", NULL};
	struct gpu_spec g;
	char buf[256] = "";

	/* An idle board draws less than one running HBM-bound kernels
	 * (H200: 121 W idle, 431 W copying, h200.yaml). */
	power(&g);
	g.idle_power = 0.7;
	expect_rejected(&g, say);
	power(&g);
	g.idle_power = g.stream_power;	/* equal: allowed */
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
}

/* triton_moe_untuned holds (E, N) pairs: three integers are not pairs. */
Test(spec_gpu, check_rejects_unpaired_untuned_moe_shapes)
{
	static const char *const say[] = {"triton_moe_untuned",
					  "(E, N) pairs", "got 3", NULL};
	static int64_t odd[] = {160, 192, 256};
	struct gpu_spec g;
	char buf[1024] = "";

	minimal(&g);
	g.triton_moe_untuned.v = odd;
	g.triton_moe_untuned.n = 2;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	g.triton_moe_untuned.n = 3;
	expect_rejected(&g, say);
}

/* triton_moe_fp8_block_tuned holds (E, N, M_lo, M_hi, BLOCK_SIZE_M, _N,
 * _K, num_stages) 8-tuples: nine integers are not. */
Test(spec_gpu, check_rejects_partial_tuned_moe_tiles)
{
	static const char *const say[] = {"triton_moe_fp8_block_tuned",
					  "8-tuples", "got 9", NULL};
	static int64_t v[] = {256, 256, 1, 768, 16, 128, 128, 3, 256};
	struct gpu_spec g;
	char buf[1024] = "";

	minimal(&g);
	g.triton_moe_fp8_block_tuned.v = v;
	g.triton_moe_fp8_block_tuned.n = 8;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	g.triton_moe_fp8_block_tuned.n = 9;
	expect_rejected(&g, say);
}

/* fitted_clock (spec_gpu_clock.c): the clock of the tables a key was
 * fitted on. It changes no value at load (an efficiency fitted at its
 * tables' clock holds at any; a fixed time is scaled at use), it lies at
 * or under max_clock (1980 MHz here). */
Test(spec_gpu, fitted_clock_changes_no_value_at_load)
{
	struct gpu_spec g;
	char buf[256] = "";

	minimal(&g);
	g.sustained_matrix_clock_hz = 1485e6;
	g.attention.trtllm_mla_eff = 0.687;
	g.attention.trtllm_mla_unit_s = 27.9e-6;
	g.fitted_clock.trtllm_mla_eff_hz = 1776e6;
	g.fitted_clock.trtllm_mla_unit_hz = 1776e6;
	cr_assert_eq(check(&g, buf, sizeof(buf)), 0, "%s", buf);
	cr_assert_eq(g.attention.trtllm_mla_eff, 0.687);
	cr_assert_eq(g.attention.trtllm_mla_unit_s, 27.9e-6);
}

Test(spec_gpu, fitted_clock_rejects_a_clock_over_max_clock)
{
	static const char *const say[] = {"'fitted_clock.xqa_hmma_unit_time'",
					  "at most 'max_clock'", NULL};
	struct gpu_spec g;

	minimal(&g);
	g.attention.xqa_hmma_unit_s = 4.8e-6;
	g.fitted_clock.xqa_hmma_unit_hz = 2000e6;
	expect_rejected(&g, say);
}
