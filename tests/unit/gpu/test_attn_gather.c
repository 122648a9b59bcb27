/*
 * test_attn_gather.c - token-level sparse attention over a fixed number
 * of gathered key slots (gpu_attention_gather: FlashMLA's sparse prefill
 * kernel, every query all top-k slots, one CTA a query token and head
 * tile), on the toy GPU of fixture.h.
 *
 * The shape: DeepSeek-V3.2's absorbed latent, 64 query heads of 576
 * (q/k) and 512 (v) over one shared bf16 latent, a 64-head CTA tile,
 * 2048 slots. A CTA computes 2048 x 64 x 2 (576 + 512) = 285,212,672 FLOP.
 * At efficiency 0.4 of the toy's clock-scaled bf16 peak (1000 TFLOP/s x
 * 1000 / 2000 MHz = 500) the rate is 200 TFLOP/s, 2 TFLOP/s a unit (100
 * units): a CTA takes 142.606336 us, and the kernel ceil(CTAs / 100) of
 * them (no launch on the toy). Bytes stay far below: 150 tokens read Q
 * 150 x 64 x 576 x 2 + write O 150 x 64 x 512 x 2 + LSE 150 x 64 x 4 +
 * keys 150 x 576 x 2 = 21.1 MB, 4.2 us at 5 TB/s.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

#define CTA_S 142.606336e-6	/* 285,212,672 FLOP / 2e12 FLOP/s */

static struct gpu_cost gather(double q, double kv, double eta)
{
	struct gpu_spec g;
	struct gpu_attn_heads h = {
		.heads_q = 64, .heads_kv = 1, .head_dim_qk = 576,
		.head_dim_v = 512, .kv_B = 2, .shared_kv = 1,
	};
	struct gpu_attn_group grp = {1, q, kv};

	gpu_fixture_toy(&g);
	return gpu_attention_gather(&g, DTYPE_BF16, &h, &grp, 1, 2048, 64,
				    eta);
}

Test(gpu, gather_costs_every_slot_whatever_the_causal_keys)
{
	/* 150 fresh tokens see 1..150 causal keys, far below 2048: the
	 * kernel still runs 150 CTAs of 2048 slots, 2 waves = 285.21 us
	 * and 150 x 285,212,672 = 4.278e10 FLOP */
	struct gpu_cost c = gather(150, 150, 0.4);

	cr_assert(gpu_fixture_near(c.time_s, 2 * CTA_S, 1e-12), "%g",
		  c.time_s);
	cr_assert(gpu_fixture_near(c.flops, 150 * 285212672.0, 1e-12));
	/* the same tokens after 30,000 cached keys: the same cost */
	cr_assert(gpu_fixture_near(gather(150, 30150, 0.4).time_s,
				   2 * CTA_S, 1e-12));
}

Test(gpu, gather_runs_in_whole_waves)
{
	/* 200 CTAs fill 2 waves of 100; 201 need a third */
	cr_assert(gpu_fixture_near(gather(200, 200, 0.4).time_s, 2 * CTA_S,
				   1e-12));
	cr_assert(gpu_fixture_near(gather(201, 201, 0.4).time_s, 3 * CTA_S,
				   1e-12));
}

Test(gpu, gather_without_an_efficiency_takes_the_flash_rate)
{
	/* eta 0: the forward efficiency 0.5 (no softmax term on the toy):
	 * 250 TFLOP/s, a CTA 285,212,672 / 2.5e12 = 114.085 us */
	cr_assert(gpu_fixture_near(gather(100, 100, 0).time_s,
				   285212672.0 / 2.5e12, 1e-12));
}
