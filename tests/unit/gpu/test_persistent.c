/*
 * test_persistent.c - a persistent GEMM beside kernels that hold SMs:
 * the tiles a CTA the GEMM model reports (gpu_cost.tiles_per_unit) and
 * the owned share h = min(c, n) / n (gpu_gemm_owned_share, gpu_gemm.c),
 * on the toy GPU of fixture.h (U = 100, one 128 x 128 tile).
 */
#include <criterion/criterion.h>

#include "fixture.h"

Test(gpu, gemm_reports_tiles_a_cta)
{
	struct gpu_spec g;
	struct gpu_cost c;
	struct gpu_gemm_group e[4];
	int i;

	gpu_fixture_toy(&g);
	/* 12800^2 output in 128 x 128 tiles: 100 x 100 = 10000 tiles over
	 * U = 100: n = 100 (no split: the tiles fill the units). */
	c = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	cr_assert(gpu_fixture_near(c.tiles_per_unit, 100, 1e-12),
		  "got %g", c.tiles_per_unit);
	/* 1280 x 2560: 10 x 20 = 200 tiles: n = 2. */
	c = gpu_gemm(&g, DTYPE_BF16, 1280, 2560, 4096, 1);
	cr_assert(gpu_fixture_near(c.tiles_per_unit, 2, 1e-12),
		  "got %g", c.tiles_per_unit);
	/* Grouped: 4 experts of 640 x 1280: 5 x 10 = 50 tiles each, 200 in
	 * all: n = 2. */
	for (i = 0; i < 4; i++)
		e[i] = (struct gpu_gemm_group){ 640, 1280, 1024 };
	c = gpu_grouped_gemm(&g, DTYPE_BF16, e, 4);
	cr_assert(gpu_fixture_near(c.tiles_per_unit, 2, 1e-12),
		  "got %g", c.tiles_per_unit);
	/* No tile data: the roofline, no tiles. */
	g.gemm_tile_m.n = g.gemm_tile_n.n = 0;
	c = gpu_gemm(&g, DTYPE_BF16, 12800, 12800, 12800, 1);
	cr_assert_eq(c.tiles_per_unit, 0);
	/* Not a GEMM: none. */
	c = gpu_memory_op(&g, 1e9, 1e9, 0, 2e9);
	cr_assert_eq(c.tiles_per_unit, 0);
}

Test(gpu, owned_share_is_owned_tiles_over_tiles_a_cta)
{
	struct gpu_spec g;

	gpu_fixture_toy(&g);
	/* Off by default: 0 whatever n. */
	g.gemm_persistent_owned_tiles = 0;
	cr_assert_eq(gpu_gemm_owned_share(&g, 4), 0);
	g.gemm_persistent_owned_tiles = 2;
	/* n = 100: 2/100; n = 5: 2/5 = 0.4; n = 2 and 1.5: every tile
	 * owned, 1; n = 0.5 (a grid smaller than the units): 0, the share
	 * law; n = 0: not a tiled GEMM. */
	cr_assert(gpu_fixture_near(gpu_gemm_owned_share(&g, 100), 0.02, 1e-12));
	cr_assert(gpu_fixture_near(gpu_gemm_owned_share(&g, 5), 0.4, 1e-12));
	cr_assert_eq(gpu_gemm_owned_share(&g, 2), 1);
	cr_assert_eq(gpu_gemm_owned_share(&g, 1.5), 1);
	cr_assert_eq(gpu_gemm_owned_share(&g, 0.5), 0);
	cr_assert_eq(gpu_gemm_owned_share(&g, 0), 0);
}
