/*
 * fixture.c - the toy GPU of fixture.h.
 */
#include "fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_gpu.h"

static int64_t tile_m[] = {128};
static int64_t tile_n[] = {128};

void gpu_fixture_toy(struct gpu_spec *g)
{
	int dt;

	memset(g, 0, sizeof(*g));
	g->name = "toy";
	g->vendor = GPU_AMD;
	g->compute_units = 100;
	g->max_clock_hz = 2000e6;
	g->matrix_clock_hz = 2000e6;
	g->sustained_matrix_clock_hz = 1000e6;
	g->matrix_peak_flops[DTYPE_BF16] = 1000e12;
	g->matrix_peak_flops[DTYPE_FP8] = 2000e12;
	g->vector_fp32_flops = 10e12;
	g->gemm_efficiency = 0.8;
	for (dt = 0; dt < DTYPE_COUNT; dt++)
		g->gemm_efficiency_dtype[dt] = 0.8;
	g->gemm_efficiency_dtype[DTYPE_FP8] = 0.5;
	g->gemm_tile_m.v = tile_m;
	g->gemm_tile_m.n = 1;
	g->gemm_tile_n.v = tile_n;
	g->gemm_tile_n.n = 1;
	g->attention.fwd_efficiency = 0.5;
	g->attention.bwd_efficiency = 0.25;
	g->attention.block_q = 128;
	g->attention.masked_tile_cost = 1;
	g->attention.ck_tile_bwd_masked_tile_cost = 1;
	g->l2 = (struct gpu_mem_level){10e6, 40e12, 0.5};
	g->llc = (struct gpu_mem_level){100e6, 20e12, 0.5};
	g->hbm = (struct gpu_mem_level){100e9, 10e12, 0.5};
	g->hbm_usable_B = 90e9;
}

int gpu_fixture_near(double a, double b, double rel)
{
	return fabs(a - b) <= rel * fabs(b);
}

int gpu_fixture_check(struct gpu_spec *g, char *buf, size_t len)
{
	struct diag d;
	FILE *f = fmemopen(buf, len - 1, "w");
	int rc;

	cr_assert_not_null(f);
	diag_init(&d, f);
	rc = gpu_schema.check(g, &(struct schema_at){ NULL, NULL }, &d);
	fclose(f);
	cr_assert_eq(rc < 0, d.errors > 0);
	return rc;
}

struct gpu_attn_shape gpu_fixture_attn_shape(int causal)
{
	struct gpu_attn_shape a = {
		.batch = 1, .heads_q = 25, .heads_kv = 25, .seq_q = 4096,
		.seq_kv = 4096, .head_dim_qk = 128, .head_dim_v = 128,
		.causal = causal,
	};
	return a;
}
