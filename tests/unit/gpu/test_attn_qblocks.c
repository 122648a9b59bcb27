/*
 * test_attn_qblocks.c - forward units of several query blocks
 * (attention.fwd_q_blocks, src/gpu/gpu_attention.c "Work units"; cuDNN's
 * sm100 forward holds Tiles_Q = 2 blocks of 128 rows a thread block) on
 * the toy GPU of fixture.h: 100 units, 250 TFLOP/s forward, no launch or
 * pipeline-fill cost.
 *
 *   tau_f = 128^2 x 2 (128 + 128) FLOP / 2.5 TFLOP/s = 3.355 us a forward tile
 *
 * Masked tiles take masked_tile_cost (mu) unmasked tiles: raising mu by
 * one adds tau_f per masked tile of the unit that sets the time.
 */
#include <criterion/criterion.h>

#include "fixture.h"

#define TAU_F (128.0 * 128 * 2 * 256 / 2.5e12)

/* One head of 4096 rows: 32 query blocks, units fewer than the 100 CUs,
 * so the forward's time is its longest unit. */
static struct gpu_attn_shape one_head(void)
{
	struct gpu_attn_shape a = gpu_fixture_attn_shape(1);

	a.heads_q = a.heads_kv = 1;
	return a;
}

/* The extra time of mu 2 over mu 1: tau_f per masked tile of the
 * longest unit. */
static double mask_extra(struct gpu_spec *g, const struct gpu_attn_shape *a)
{
	double t1, t2;

	g->attention.masked_tile_cost = 1;
	t1 = gpu_attention_fwd(g, DTYPE_BF16, a).time_s;
	g->attention.masked_tile_cost = 2;
	t2 = gpu_attention_fwd(g, DTYPE_BF16, a).time_s;
	return t2 - t1;
}

/* Window 128. One block a unit (before): query block i sees key blocks
 * i - 1 (the edge) and i (the diagonal), both masked: +2 tau_f. Two
 * blocks a unit: unit u holds rows 256 u .. 256 u + 255; the rows' keys
 * run from 256 u - 127 (key block 2u - 1) to 256 u + 255 (block 2u + 1),
 * three key blocks that both query blocks compute: 6 tiles, every one
 * crossed by the diagonal (keys 256 u .. 256 u + 255: blocks 2u, 2u + 1)
 * or the edge (keys 256 u - 127 .. 256 u + 128: blocks 2u - 1, 2u):
 * +6 tau_f. */
Test(gpu, two_block_units_compute_three_key_blocks_under_a_128_window)
{
	struct gpu_attn_shape a = one_head();
	struct gpu_spec g;
	double d;

	gpu_fixture_toy(&g);
	a.window = 128;
	d = mask_extra(&g, &a);
	cr_assert(gpu_fixture_near(d, 2 * TAU_F, 1e-9), "one block: +%g s", d);
	g.attention.fwd_q_blocks = 2;
	d = mask_extra(&g, &a);
	cr_assert(gpu_fixture_near(d, 6 * TAU_F, 1e-9), "two blocks: +%g s", d);
}

/* Causal, no window: the last unit (rows 3840 .. 4095) computes key
 * blocks 0 .. 31 for both its query blocks, 64 tiles, of which the two
 * diagonal blocks 30 and 31 are masked in each: +4 tau_f (one block a
 * unit: +1 tau_f, the diagonal). With mu 1 it takes 64 tau_f and two
 * Q-block loads against 32 tau_f and one: the two-block unit is longer
 * by at least 32 tau_f. */
Test(gpu, two_block_units_mask_both_diagonal_blocks)
{
	struct gpu_attn_shape a = one_head();
	struct gpu_spec g;
	double t1, t2, d;

	gpu_fixture_toy(&g);
	d = mask_extra(&g, &a);
	cr_assert(gpu_fixture_near(d, TAU_F, 1e-9), "one block: +%g s", d);
	g.attention.masked_tile_cost = 1;
	t1 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	g.attention.fwd_q_blocks = 2;
	d = mask_extra(&g, &a);
	cr_assert(gpu_fixture_near(d, 4 * TAU_F, 1e-9), "two blocks: +%g s", d);
	g.attention.masked_tile_cost = 1;
	t2 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	cr_assert_geq(t2 - t1, 32 * TAU_F * (1 - 1e-9), "+%g s", t2 - t1);
}

/* Without a mask the blocks only regroup: 25 heads x 32 query blocks =
 * 800 units of 32 tiles in 8 waves of 100, or 400 units of 64 tiles in
 * 4 waves: the same time (each unit loads its own query blocks either
 * way). The backward, and a head wider than fwd_q_blocks_max_head_dim,
 * keep one block a unit. */
Test(gpu, two_block_units_leave_unmasked_backward_and_wide_heads_alone)
{
	struct gpu_attn_shape a = gpu_fixture_attn_shape(0);
	struct gpu_attn_shape c = one_head();
	struct gpu_spec g;
	double f1, b1, c1;

	gpu_fixture_toy(&g);
	f1 = gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s;
	b1 = gpu_attention_bwd(&g, DTYPE_BF16, &c).time_s;
	c1 = gpu_attention_fwd(&g, DTYPE_BF16, &c).time_s;
	g.attention.fwd_q_blocks = 2;
	cr_assert(gpu_fixture_near(gpu_attention_fwd(&g, DTYPE_BF16, &a).time_s,
				   f1, 1e-12));
	cr_assert_eq(gpu_attention_bwd(&g, DTYPE_BF16, &c).time_s, b1);
	cr_assert_neq(gpu_attention_fwd(&g, DTYPE_BF16, &c).time_s, c1);
	g.attention.fwd_q_blocks_max_head_dim = 64;	/* head dim 128 */
	cr_assert_eq(gpu_attention_fwd(&g, DTYPE_BF16, &c).time_s, c1);
}

/* Inference prefill (gpu_attention_prefill) takes the GPU's
 * attention.fwd_efficiency, fitted under fwd_q_blocks units, so it takes
 * those units too. One causal prompt of 4096 tokens, one head of 128
 * (no mask cost in the prefill model: a masked tile is a tile): 32
 * query blocks, fewer units than the 100 CUs, so the time is the
 * longest unit's. One block a unit: the last, 32 tiles and one Q-block
 * load; two blocks: the last unit computes key blocks 0 .. 31 for both,
 * 64 tiles and two loads:
 *
 *   t2 - t1 = 32 tau_f + keep, keep = 128 x 128 x 2 B / (HBM / 100)
 *
 * A kernel with its own efficiency (h.fwd_efficiency, here the same
 * value so the rate is equal) keeps one block a unit. */
Test(gpu, inference_prefill_takes_the_fwd_q_blocks_units)
{
	struct gpu_attn_heads h = {
		.heads_q = 1, .heads_kv = 1, .head_dim_qk = 128,
		.head_dim_v = 128, .kv_B = 2,
	};
	struct gpu_attn_group grp = {1, 4096, 4096};
	struct gpu_spec g;
	double t1, t2, keep, own;

	gpu_fixture_toy(&g);
	keep = 128.0 * 128 * 2 /
	       (gpu_level_bandwidth_Bps(&g, GPU_LEVEL_HBM) / 100);
	t1 = gpu_attention_prefill(&g, DTYPE_BF16, &h, &grp, 1).time_s;
	g.attention.fwd_q_blocks = 2;
	t2 = gpu_attention_prefill(&g, DTYPE_BF16, &h, &grp, 1).time_s;
	cr_assert(gpu_fixture_near(t2 - t1, 32 * TAU_F + keep, 1e-9),
		  "+%g s against %g s", t2 - t1, 32 * TAU_F + keep);
	h.fwd_efficiency = g.attention.fwd_efficiency;
	own = gpu_attention_prefill(&g, DTYPE_BF16, &h, &grp, 1).time_s;
	cr_assert(gpu_fixture_near(own, t1, 1e-12), "%g vs %g s", own, t1);
	h.fwd_efficiency = 0;
	g.attention.fwd_q_blocks_max_head_dim = 64;	/* head dim 128 */
	cr_assert(gpu_fixture_near(gpu_attention_prefill(&g, DTYPE_BF16, &h,
							 &grp, 1).time_s,
				   t1, 1e-12));
}
