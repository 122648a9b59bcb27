/*
 * test_monotone.c - properties every GPU model must keep, checked over a
 * grid of shapes on the toy GPU (fixture.h) with a realistic tile list:
 * more work is never faster; more bandwidth or a higher rate is never
 * slower.
 */
#include <criterion/criterion.h>

#include "fixture.h"

static int64_t tiles_m[] = {256, 128, 128, 64, 64};
static int64_t tiles_n[] = {128, 256, 128, 128, 64};

static void realistic(struct gpu_spec *g)
{
	gpu_fixture_toy(g);
	g->gemm_tile_m.v = tiles_m;
	g->gemm_tile_n.v = tiles_n;
	g->gemm_tile_m.n = g->gemm_tile_n.n = 5;
	g->gemm_tile_overhead_s = 1e-6;
	g->kernel_launch_s = 4e-6;
}

/* Sizes that cross tile, wave, split-K and cache-level boundaries. */
static const double sizes[] = {
	1, 7, 64, 100, 127, 128, 129, 255, 256, 1000, 1024, 1280, 1300,
	2048, 3000, 4096, 6144, 12800, 12801, 30000, 65536, 802816,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static double gemm_t(const struct gpu_spec *g, double m, double n, double k,
		     double batch)
{
	return gpu_gemm(g, DTYPE_BF16, m, n, k, batch).time_s;
}

Test(gpu, gemm_more_work_is_never_faster)
{
	struct gpu_spec g;
	size_t i, j, l;

	realistic(&g);
	/* Growing any one of m, n, k, batch never shortens the time. */
	for (i = 0; i < NSIZES; i++)
		for (j = 0; j < NSIZES; j += 3)
			for (l = 1; l < NSIZES; l++) {
				double a = sizes[i], b = sizes[j];
				double lo = sizes[l - 1], hi = sizes[l];

				cr_assert_leq(gemm_t(&g, lo, a, b, 1),
					      gemm_t(&g, hi, a, b, 1),
					      "m %g -> %g (n %g k %g)", lo, hi, a, b);
				cr_assert_leq(gemm_t(&g, a, lo, b, 1),
					      gemm_t(&g, a, hi, b, 1),
					      "n %g -> %g (m %g k %g)", lo, hi, a, b);
				cr_assert_leq(gemm_t(&g, a, b, lo, 1),
					      gemm_t(&g, a, b, hi, 1),
					      "k %g -> %g (m %g n %g)", lo, hi, a, b);
			}
	for (i = 0; i + 1 < 40; i++)
		cr_assert_leq(gemm_t(&g, 512, 512, 512, (double)i + 1),
			      gemm_t(&g, 512, 512, 512, (double)i + 2),
			      "batch %zu", i + 1);
}

Test(gpu, more_bandwidth_or_rate_is_never_slower)
{
	struct gpu_spec slow, fast;
	struct gpu_attn_shape a = {
		.batch = 2, .heads_q = 8, .heads_kv = 2, .seq_q = 2048,
		.seq_kv = 2048, .head_dim_qk = 128, .head_dim_v = 128,
		.causal = 1,
	};
	size_t i, j;

	realistic(&slow);
	realistic(&fast);
	fast.hbm.bandwidth_Bps *= 1.5;
	fast.llc.bandwidth_Bps *= 1.5;
	fast.l2.bandwidth_Bps *= 1.5;
	fast.matrix_peak_flops[DTYPE_BF16] *= 1.5;
	fast.vector_fp32_flops *= 1.5;
	for (i = 0; i < NSIZES; i++)
		for (j = 0; j < NSIZES; j++) {
			cr_assert_leq(gemm_t(&fast, sizes[i], sizes[j], 4096, 1),
				      gemm_t(&slow, sizes[i], sizes[j], 4096, 1),
				      "m %g n %g", sizes[i], sizes[j]);
			cr_assert_leq(
				gpu_memory_op(&fast, sizes[i] * 1e3, sizes[j] * 1e3,
					      sizes[j], sizes[i] * 2e3).time_s,
				gpu_memory_op(&slow, sizes[i] * 1e3, sizes[j] * 1e3,
					      sizes[j], sizes[i] * 2e3).time_s);
		}
	for (i = 0; i < NSIZES; i++) {
		a.seq_q = a.seq_kv = sizes[i];
		cr_assert_leq(gpu_attention_fwd(&fast, DTYPE_BF16, &a).time_s,
			      gpu_attention_fwd(&slow, DTYPE_BF16, &a).time_s);
		cr_assert_leq(gpu_attention_bwd(&fast, DTYPE_BF16, &a).time_s,
			      gpu_attention_bwd(&slow, DTYPE_BF16, &a).time_s);
	}
}

/* Shape hi is never faster than lo, forward and backward. */
static void attn_never_faster(const struct gpu_spec *g,
			      const struct gpu_attn_shape *lo,
			      const struct gpu_attn_shape *hi, const char *what,
			      double from)
{
	cr_assert_leq(gpu_attention_fwd(g, DTYPE_BF16, lo).time_s,
		      gpu_attention_fwd(g, DTYPE_BF16, hi).time_s,
		      "forward: %s %g -> more, causal %d", what, from, lo->causal);
	cr_assert_leq(gpu_attention_bwd(g, DTYPE_BF16, lo).time_s,
		      gpu_attention_bwd(g, DTYPE_BF16, hi).time_s,
		      "backward: %s %g -> more, causal %d", what, from, lo->causal);
}

Test(gpu, attention_longer_sequences_are_never_faster)
{
	struct gpu_spec g;
	struct gpu_attn_shape a = {
		.batch = 1, .heads_q = 16, .heads_kv = 16, .head_dim_qk = 128,
		.head_dim_v = 128,
	}, b;
	size_t i;
	int causal;

	realistic(&g);
	g.attention.masked_tile_cost = 1.65;
	for (causal = 0; causal <= 1; causal++)
		for (i = 1; i < NSIZES; i++) {
			a.causal = causal;
			a.seq_q = a.seq_kv = sizes[i - 1];
			b = a;
			b.seq_q = b.seq_kv = sizes[i];
			attn_never_faster(&g, &a, &b, "seq", sizes[i - 1]);
		}
}

Test(gpu, attention_more_heads_or_batch_is_never_faster)
{
	struct gpu_spec g;
	struct gpu_attn_shape a = {
		.batch = 1, .heads_q = 1, .heads_kv = 1, .seq_q = 2048,
		.seq_kv = 2048, .head_dim_qk = 128, .head_dim_v = 128,
	};
	struct gpu_attn_shape b;
	int causal, n;

	realistic(&g);
	g.attention.masked_tile_cost = 1.65;
	/* 1..80 heads cross the 100 units at 7 heads (16 units a head),
	 * where the causal schedule leaves waves for its tail formula. */
	for (causal = 0; causal <= 1; causal++)
		for (n = 1; n < 80; n++) {
			a.causal = causal;
			a.heads_q = a.heads_kv = n;
			b = a;
			b.heads_q = b.heads_kv = n + 1;
			attn_never_faster(&g, &a, &b, "heads", n);
			a.heads_q = a.heads_kv = 8;
			a.batch = n;
			b = a;
			b.batch = n + 1;
			attn_never_faster(&g, &a, &b, "batch", n);
			a.batch = 1;
		}
}
