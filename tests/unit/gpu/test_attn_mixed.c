/*
 * test_attn_mixed.c - a step's decode tokens inside the prompt tokens'
 * varlen flash kernel without GQA packing (gpu_attention_mixed: vLLM V1's
 * FlashAttention backend on FlashAttention 2, src/gpu/gpu_attn_infer.c),
 * on the toy GPU of fixture.h with its HBM cut to 2 TB/s x 0.5 = 1 TB/s
 * so that the decode rows' key reads, not the attention rate, set the
 * time.
 *
 * The shape: 8 query heads over 1 KV head, head dims 128 / 128, a bf16
 * cache (K + V = 256 elements x 2 B = 512 B a key and KV head), 100
 * decoding sequences with 4,095 cached keys each (kv 4096 with the new
 * token), 64-row programs. Bytes, per the formula D_dec (each query head
 * reads its KV head's keys):
 *
 *   Q and O: 100 x 1 x 8 x 256 x 2 B      =       409,600 B
 *   keys:    100 x 4096 x 8 x 256 x 2 B   = 1,677,721,600 B
 *   LSE:     100 x 1 x 8 x 4 B            =         3,200 B
 *   D_dec                                 = 1,678,134,400 B -> 1.678 ms
 *
 * Compute, for the bound: 800 programs of 64 tiles of 64 x 64 rows x keys
 * at 512 FLOP a pair on 100 CUs at 250 TFLOP/s (1000 x 0.5 x 1000 / 2000
 * MHz): a tile 2,097,152 FLOP / 2.5 TFLOP/s = 0.839 us, a program 53.7 us
 * plus its Q tile's 16 kB at 10 GB/s a CU (1.6 us), scheduled 8.5
 * programs deep: 470 us, under the 1.678 ms of the bytes.
 *
 * The packed decode kernel (gpu_attention_decode) reads the same keys
 * once for the KV head: 100 x 4096 x 512 B = 209.7 MB, 1/8 of them.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

static const struct gpu_attn_heads HEADS = {
	.heads_q = 8, .heads_kv = 1, .head_dim_qk = 128, .head_dim_v = 128,
	.kv_B = 2,
};

static void slow_hbm(struct gpu_spec *g)
{
	gpu_fixture_toy(g);
	g->hbm.bandwidth_Bps = 2e12;
}

Test(gpu, mixed_decode_rows_read_their_keys_per_query_head)
{
	struct gpu_spec g;
	struct gpu_attn_group dec = {100, 1, 4096};
	struct gpu_cost c;

	slow_hbm(&g);
	c = gpu_attention_mixed(&g, DTYPE_BF16, &HEADS, NULL, 0, &dec, 1, 64);
	cr_assert(gpu_fixture_near(c.bytes, 1678134400.0, 1e-12), "%g",
		  c.bytes);
	/* memory-bound: 1,678,134,400 B / 1 TB/s */
	cr_assert(gpu_fixture_near(c.time_s, 1.6781344e-3, 1e-9), "%g",
		  c.time_s);
}

Test(gpu, mixed_decode_rows_cost_more_than_the_packed_kernel)
{
	struct gpu_spec g;
	struct gpu_attn_group dec = {100, 1, 4096};
	struct gpu_cost mixed, packed;

	slow_hbm(&g);
	mixed = gpu_attention_mixed(&g, DTYPE_BF16, &HEADS, NULL, 0, &dec, 1,
				    64);
	packed = gpu_attention_decode(&g, DTYPE_BF16, &HEADS, &dec, 1);
	/* the packed kernel's keys are 209,715,200 B of its bytes; the
	 * unpacked ones 8 times that */
	cr_assert_gt(packed.bytes, 209715200.0);
	cr_assert_lt(packed.bytes, 1.01 * 209715200.0 + 409600 + 3200);
	cr_assert_gt(mixed.time_s, 7 * packed.time_s, "%g vs %g",
		     mixed.time_s, packed.time_s);
}

/*
 * With a 2048-token prompt (no cache) in the same launch: the prompt's
 * bytes are its Q, O and LSE, 2048 x 8 x (256 x 2 + 4) = 8,454,144 B,
 * and its keys once, 2048 x 512 B = 1,048,576 B: D = 1,678,134,400 +
 * 9,502,720 = 1,687,637,120 B; one launch, so the time is that at
 * 1 TB/s as long as the union's compute (the decode rows' 470 us plus
 * the prompt's 8 heads x 2.1 M pairs x 512 FLOP / 250 TFLOP/s = 34 us
 * spread over the CUs) stays under it.
 */
Test(gpu, mixed_prompt_and_decode_rows_share_one_launch)
{
	struct gpu_spec g;
	struct gpu_attn_group pre = {1, 2048, 2048}, dec = {100, 1, 4096};
	struct gpu_cost c;

	slow_hbm(&g);
	c = gpu_attention_mixed(&g, DTYPE_BF16, &HEADS, &pre, 1, &dec, 1, 64);
	cr_assert(gpu_fixture_near(c.bytes, 1687637120.0, 1e-12), "%g",
		  c.bytes);
	cr_assert(gpu_fixture_near(c.time_s, 1.68763712e-3, 1e-9), "%g",
		  c.time_s);
}

/*
 * A GPU config without attention.block_q (optional in the schema) used to
 * reach BUG("mixed attention without tiles") (abort, rc 134): the prompt
 * groups tile at the split-KV kernel's rows_m, not at block_q, so the
 * same step as above costs the same 1,687,637,120 B and 1.68763712 ms
 * with block_q 0 as with the fixture's 128.
 */
Test(gpu, mixed_prompt_rows_need_no_gpu_prefill_tile)
{
	struct gpu_spec g;
	struct gpu_attn_group pre = {1, 2048, 2048}, dec = {100, 1, 4096};
	struct gpu_cost c;

	slow_hbm(&g);
	g.attention.block_q = 0;
	c = gpu_attention_mixed(&g, DTYPE_BF16, &HEADS, &pre, 1, &dec, 1, 64);
	cr_assert(gpu_fixture_near(c.bytes, 1687637120.0, 1e-12), "%g",
		  c.bytes);
	cr_assert(gpu_fixture_near(c.time_s, 1.68763712e-3, 1e-9), "%g",
		  c.time_s);
}
