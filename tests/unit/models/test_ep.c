/*
 * test_ep.c - expert dispatch traffic and path (src/models/ep.c) against
 * derived numbers: hit probabilities from binomial coefficients, bytes
 * per GPU with and without rank and node deduplication, the fp8 row, the
 * GPU-initiated path's copy bound.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_gpu.h"
#include "config/spec_moe.h"
#include "config/spec_system.h"
#include "network/net.h"
#include "models/ep.h"
#include "models/route.h"

#include "../quick.h"
#include "fixture.h"

/* C(224, 8) / C(256, 8) as a product: prod_{i<8} (224 - i) / (256 - i). */
static double miss(double E, double g, int k)
{
	double p = 1;
	int i;

	for (i = 0; i < k; i++)
		p *= (E - g - i) / (E - i);
	return p;
}

Test(ep, hit_probability_is_one_minus_the_binomial_ratio)
{
	/* a GPU of 8 holding 32 of 256 experts, top-8: 1 - C(224,8)/C(256,8)
	 * = 0.66183 */
	cr_assert(fixture_near(ep_hit_prob(256, 8, 32), 1 - miss(256, 32, 8), 1e-12));
	cr_assert(fixture_near(ep_hit_prob(256, 8, 32), 0.6618315, 1e-6));
	cr_assert_eq(ep_hit_prob(256, 8, 0), 0);
	cr_assert_eq(ep_hit_prob(256, 8, 256), 1);
	/* topk_group >= n_group: no limit */
	cr_assert(fixture_near(ep_hit(256, 8, 2, 2, 16), ep_hit_prob(256, 8, 16), 1e-12));
	/* 8 groups of 32, top-4 groups: a group is picked with 1/2 and then
	 * hit among the 128 experts of the picked: 0.5 (1 - C(96,8)/C(128,8)) */
	cr_assert(fixture_near(ep_hit(256, 8, 8, 4, 32), 0.5 * (1 - miss(128, 32, 8)),
		       1e-12));
	cr_assert(fixture_near(ep_hit(256, 8, 8, 4, 32), 0.4536264, 1e-6));
}

Test(ep, grouped_hit_over_whole_groups_sums_the_groups_picked)
{
	/* 8 groups of 32 of 256 experts, top-4 groups, top-8: a node
	 * holding 2 whole groups (64 experts). The token's 4 groups include
	 * j of the node's 2 with C(2,j) C(6,4-j) / C(8,4) = 15, 40, 15 / 70
	 * (j = 0, 1, 2); its 8 experts, drawn from the 128 of its groups,
	 * miss the node's 32 j with C(128-32j,8) / C(128,8) = 1, 0.0927473,
	 * 0.0030959; hit = 1 - (15 + 40 x 0.0927473 + 15 x 0.0030959) / 70
	 * = 0.7320524 */
	double want = 1 - (15.0 / 70 + 40.0 / 70 * miss(128, 32, 8) +
			   15.0 / 70 * miss(128, 64, 8));

	cr_assert(fixture_near(ep_hit(256, 8, 8, 4, 64), want, 1e-12));
	cr_assert(fixture_near(ep_hit(256, 8, 8, 4, 64), 0.7320524, 1e-6));
	/* inside one group (16 of a group's 32): the group is picked with
	 * 4/8, then 1 - C(112,8)/C(128,8): 0.5 x 0.6674196 = 0.3337098 */
	cr_assert(fixture_near(ep_hit_prob_grouped(256, 8, 16, 8, 4),
			       0.5 * (1 - miss(128, 16, 8)), 1e-12));
	cr_assert(fixture_near(ep_hit(256, 8, 8, 4, 16), 0.3337098, 1e-6));
	/* every group on the node (8 of 8): a token always hits it */
	cr_assert(fixture_near(ep_hit(256, 8, 8, 4, 256), 1, 1e-12));
}

Test(ep, spans_nodes_only_when_a_gpu_sits_on_another_node)
{
	uint32_t one[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	uint32_t second[8] = {8, 9, 10, 11, 12, 13, 14, 15};
	uint32_t two[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
	uint32_t rails[2] = {3, 11};

	/* 8 GPUs a node: GPUs 0-7 are node 0, 8-15 node 1 */
	cr_assert_eq(ep_spans_nodes(one, 8, 8), 0);
	cr_assert_eq(ep_spans_nodes(second, 8, 8), 0);
	cr_assert_eq(ep_spans_nodes(two, 16, 8), 1);
	cr_assert_eq(ep_spans_nodes(rails, 2, 8), 1);
	/* 16 a node (an NVL16 domain): the same 16 GPUs are one node */
	cr_assert_eq(ep_spans_nodes(two, 16, 16), 0);
	/* one GPU, or no node size: nothing to span */
	cr_assert_eq(ep_spans_nodes(rails, 1, 8), 0);
	cr_assert_eq(ep_spans_nodes(rails, 2, 0), 0);
}

Test(ep, rows_bytes_fp8_carries_the_paths_scales)
{
	struct ep_comm_spec e = { .fp8_scale_block = 128, .fp8_scale_B = 4 };
	struct ep_comm_spec none = { .fp8_scale_block = 0 };

	/* 7168 fp8 elements + one fp32 scale per 128 (7168 / 128 x 4 = 224
	 * B) + 96 B of indices and weights */
	cr_assert(fixture_near(ep_row_bytes(&e, 7168, DTYPE_FP8, 96), 7168 + 224 + 96,
		       1e-12));
	/* a path without per-row scales (or none): the fp8 bytes alone */
	cr_assert(fixture_near(ep_row_bytes(&none, 7168, DTYPE_FP8, 96), 7168 + 96,
		       1e-12));
	cr_assert(fixture_near(ep_row_bytes(NULL, 7168, DTYPE_FP8, 0), 7168, 1e-12));
	/* 16-bit rows carry no scales: 7168 x 2 */
	cr_assert(fixture_near(ep_row_bytes(&e, 7168, DTYPE_BF16, 0), 14336, 1e-12));
	/* MX: one E8M0 byte per 32 from the dtype (4096 / 32 = 128 B), the
	 * path's fp8 scales not added */
	cr_assert(fixture_near(ep_row_bytes(&e, 4096, DTYPE_MXFP8, 0), 4096 + 128,
		       1e-12));
}

Test(ep, row_extra_carries_the_domains_probabilities)
{
	struct ep_comm_spec deepep = { .bytes_per_topk_B = 12 };
	struct ep_comm_spec hybrid = { .probs_per_domain_expert_B = 4 };

	/* DeepEP: top-k int64 indices and fp32 weights, 12 B each: top-8
	 * 8 x 12 = 96 B whatever the group; top-6 (DeepSeek-V2) 72 B,
	 * top-2 (Mixtral) 24 B */
	cr_assert(fixture_near(ep_row_extra_B(&deepep, 64, 8, 8, 8), 96, 1e-12));
	cr_assert(fixture_near(ep_row_extra_B(&deepep, 288, 8, 36, 72), 96,
			       1e-12));
	cr_assert(fixture_near(ep_row_extra_B(&deepep, 160, 6, 8, 8), 72, 1e-12));
	cr_assert(fixture_near(ep_row_extra_B(&deepep, 8, 2, 8, 8), 24, 1e-12));
	/* Hybrid-EP in one NVL72 (m = 72), 8 experts a GPU: the fp32
	 * probabilities of the domain's 8 x min(72, p) experts: EP 8: 4 x 64
	 * = 256 B; EP 36: 4 x 288 = 1152 B */
	cr_assert(fixture_near(ep_row_extra_B(&hybrid, 64, 8, 8, 72), 256,
			       1e-12));
	cr_assert(fixture_near(ep_row_extra_B(&hybrid, 288, 8, 36, 72), 1152,
			       1e-12));
	/* EP 64 over 8-GPU nodes: the domain is a node's 8 GPUs, 4 x 8 x 8 =
	 * 256 B, not the group's 512 experts */
	cr_assert(fixture_near(ep_row_extra_B(&hybrid, 512, 8, 64, 8), 256,
			       1e-12));
	/* both: added */
	hybrid.bytes_per_token_extra = 16;
	cr_assert(fixture_near(ep_row_extra_B(&hybrid, 64, 8, 8, 8), 16 + 256,
			       1e-12));
	cr_assert_eq(ep_row_extra_B(NULL, 64, 8, 8, 8), 0);
	/* the fp8 row at EP 36: 7168 + 224 B of scales + 1152 B */
	cr_assert(fixture_near(ep_row_bytes(&(struct ep_comm_spec){
				.fp8_scale_block = 128, .fp8_scale_B = 4 },
			7168, DTYPE_FP8, 1152), 7168 + 224 + 1152, 1e-12));
}

Test(ep, each_pass_runs_its_kernel)
{
	/* Hybrid-EP-like: 16 SMs x 40.9 GB/s, fp8 39 ns, combine 61 ns a
	 * row; EP 8 of 8 experts each: 256 B of probabilities a row */
	struct ep_comm_spec e = {
		.name = "x", .mode = EP_FORWARD, .dedup = DEDUP_NODE,
		.sms = 16, .sm_rate_Bps = 40.9e9, .fp8_row_cost_s = 39e-9,
		.combine_row_cost_s = 61e-9, .probs_per_domain_expert_B = 4,
	};
	struct moe_dims m = { .dispatch_dt = DTYPE_FP8, .node_share = 1,
			      .row_B = 7168 + 224 + 256, .row16_B = 14336,
			      .row_cbwd_B = 14336 + 256 };
	struct coll_path store[EP_PASSES];
	const struct coll_path *path[EP_PASSES];
	int algo;

	cr_assert(fixture_near(ep_row_probs_B(&e, 64, 8, 8), 256, 1e-12));
	/* gradients of the backward dispatch: the probabilities, plus 4 B a
	 * top-k weight where the path sends them (DeepEP, top-8: 32 B) */
	cr_assert(fixture_near(ep_row_grads_B(&e, 64, 8, 8, 8), 256, 1e-12));
	cr_assert(fixture_near(ep_row_grads_B(&(struct ep_comm_spec){
				.topk_weight_grad_B = 4 }, 256, 8, 8, 8), 32,
		       1e-12));
	cr_assert_eq(ep_row_grads_B(NULL, 64, 8, 8, 8), 0);
	/* DeepEP's indices and weights are the dispatch's, not gradients */
	cr_assert_eq(ep_row_probs_B(&(struct ep_comm_spec){
				.bytes_per_topk_B = 12 }, 64, 8, 8), 0);
	route_ep_paths(&e, &m, store, path, &algo);
	/* forward dispatch: fp8 rows of 7648 B, 7648 / (39 ns + 7648 / r) */
	cr_assert(fixture_near(path[EP_PASS_DISPATCH - 1]->gpu_Bps,
		       16 * 7648 / (39e-9 + 7648 / 40.9e9), 1e-12));
	/* backward of the combine: a dispatch kernel, 16-bit rows: n r */
	cr_assert(fixture_near(path[EP_PASS_DISPATCH16 - 1]->gpu_Bps, 16 * 40.9e9,
		       1e-12));
	/* forward combine: 16 x 14336 / (61 ns + 350.5 ns) = 557.4 GB/s */
	cr_assert(fixture_near(path[EP_PASS_COMBINE - 1]->gpu_Bps,
		       16 * 14336 / (61e-9 + 14336 / 40.9e9), 1e-12));
	cr_assert(fixture_near(path[EP_PASS_COMBINE - 1]->gpu_Bps, 557.4e9, 1e-3));
	/* backward of the dispatch: a combine of rows with their 256 B of
	 * probability gradients, 16 x 14592 / (61 ns + 14592 / r) */
	cr_assert(fixture_near(path[EP_PASS_COMBINE_BWD - 1]->gpu_Bps,
		       16 * 14592 / (61e-9 + 14592 / 40.9e9), 1e-12));
	cr_assert_eq(algo, -1);
	/* no dispatcher: the library's, every pass */
	route_ep_paths(NULL, &m, store, path, &algo);
	cr_assert_null(path[0]);
	cr_assert_null(path[EP_PASS_COMBINE_BWD - 1]);
}

Test(ep, traffic_deduplicates_by_rank_and_node)
{
	struct ep_routing r = { 256, 8, 0, 0, 0 };
	struct ep_traffic t;
	double p_rank = 1 - miss(256, 16, 8), p_node = 1 - miss(256, 128, 8);

	/* no dedup: one row per (token, expert) */
	ep_traffic(&r, 16, 8, 4096, 7488, DEDUP_NONE, &t);
	cr_assert(fixture_near(t.send_B, 4096.0 * 8 * 7488, 1e-12));
	cr_assert(fixture_near(t.logical_B, t.send_B, 1e-12));
	cr_assert_eq(t.node_share, 1);

	/* 16 GPUs on 2 nodes, 16 experts each: a token reaches 16 P_rank =
	 * 6.523 GPUs and 2 P_node = 1.993 nodes */
	ep_traffic(&r, 16, 8, 4096, 7488, DEDUP_NODE, &t);
	cr_assert(fixture_near(t.ranks_hit, 16 * p_rank, 1e-12));
	cr_assert(fixture_near(t.ranks_hit, 6.5232795, 1e-6));
	cr_assert(fixture_near(t.nodes_hit, 2 * p_node, 1e-12));
	cr_assert(fixture_near(t.send_B, 4096 * 16 * p_rank * 7488, 1e-12));
	/* DeepEP's count across nodes: tokens x nodes reached x row */
	cr_assert(fixture_near(t.logical_B, 4096 * 2 * p_node * 7488, 1e-12));
	/* a token crosses to a node once for its 8 p_rank GPU rows there */
	cr_assert(fixture_near(t.node_share, p_node / (8 * p_rank), 1e-12));
	cr_assert(fixture_near(t.node_share, 0.3055243, 1e-6));

	/* rank dedup inside one node: logical = GPU-level bytes */
	ep_traffic(&r, 8, 8, 4096, 7392, DEDUP_RANK, &t);
	cr_assert(fixture_near(t.ranks_hit, 8 * (1 - miss(256, 32, 8)), 1e-12));
	cr_assert(fixture_near(t.logical_B, t.send_B, 1e-12));
	cr_assert_eq(t.node_share, 1);
}

Test(ep, gpu_initiated_path_copy_bound)
{
	struct ep_comm_spec e = {
		.name = "x", .mode = EP_FORWARD, .dedup = DEDUP_NODE,
		.gpu_initiated = 1, .sms = 24, .sm_rate_Bps = 18.5e9,
		.fp8_row_cost_s = 165e-9, .scale_up_eff = 0.8,
		.scale_out_eff = 0.89, .setup_s = 15e-6,
	};
	struct coll_path p;
	int algo;
	const struct coll_path *got;

	/* 16-bit rows: 24 SMs x 18.5 GB/s */
	got = ep_coll_path(&e, 0.3, 14336, 0, 0, &p, &algo);
	cr_assert_eq(got, &p);
	cr_assert_eq(algo, -1);
	cr_assert_eq(p.mode, COLL_PATH_FORWARD);
	cr_assert(fixture_near(p.gpu_Bps, 24 * 18.5e9, 1e-12));
	cr_assert(fixture_near(p.node_share, 0.3, 1e-12));
	cr_assert(fixture_near(p.eff_scale_up, 0.8, 1e-12));
	/* fp8 rows of 7488 B: 24 x 7488 / (165 ns + 7488 / 18.5e9) */
	ep_coll_path(&e, 0.3, 7488, 1, 0, &p, &algo);
	cr_assert(fixture_near(p.gpu_Bps, 24 * 7488 / (165e-9 + 7488 / 18.5e9), 1e-12));
	/* a combine kernel (DeepEP's 155 ns a row for its fp32 reduction):
	 * 24 x 14336 / (155 ns + 14336 / 18.5e9) = 370.0 GB/s, 16.7 % below
	 * the 444 GB/s of a dispatch of the same rows */
	e.combine_row_cost_s = 155e-9;
	ep_coll_path(&e, 0.3, 14336, EP_ROW_COMBINE, 0, &p, &algo);
	cr_assert(fixture_near(p.gpu_Bps, 24 * 14336 / (155e-9 + 14336 / 18.5e9),
		       1e-12));
	cr_assert(fixture_near(p.gpu_Bps, 370.0e9, 1e-3));
	cr_assert_eq(p.combine, 1);	/* its fill and drain (algo_path.c) */
	/* a dispatch does not pay it; fp8 and combine together add both */
	ep_coll_path(&e, 0.3, 14336, 0, 0, &p, &algo);
	cr_assert(fixture_near(p.gpu_Bps, 24 * 18.5e9, 1e-12));
	cr_assert_eq(p.combine, 0);
	ep_coll_path(&e, 0.3, 7488, EP_ROW_FP8 | EP_ROW_COMBINE, 0, &p, &algo);
	cr_assert(fixture_near(p.gpu_Bps, 24 * 7488 / (320e-9 + 7488 / 18.5e9), 1e-12));
	e.combine_row_cost_s = 0;
	/* --sms overrides */
	ep_coll_path(&e, 0.3, 14336, 0, 12, &p, &algo);
	cr_assert(fixture_near(p.gpu_Bps, 12 * 18.5e9, 1e-12));
	/* a library mode has no path; hierarchical forces its algorithm */
	e.mode = EP_LIBRARY;
	cr_assert_null(ep_coll_path(&e, 1, 14336, 0, 0, &p, &algo));
	cr_assert_eq(algo, -1);
	e.mode = EP_HIERARCHICAL;
	cr_assert_null(ep_coll_path(&e, 1, 14336, 0, 0, &p, &algo));
	cr_assert_geq(algo, 0);
}

Test(ep, all_to_all_buffers)
{
	struct ep_comm_spec e = {
		.name = "x", .mode = EP_FORWARD, .dedup = DEDUP_NODE, .sms = 20,
		.buffer_tokens_up = 288, .buffer_tokens_out = 128,
		.buffer_token_meta_B = 2048,
	};

	/* DeepSeek-V3 (hidden 7168 bf16) at EP 64 on 8-GPU nodes, 20 SMs:
	 * 10 channels x (14336 + 2048) B x (8 x 288 + 2 x 8 x 128) = 713 MB */
	cr_assert(fixture_near(ep_buffer_bytes(&e, 14336, 64, 8),
		       10 * 16384.0 * (8 * 288 + 2 * 8 * 128), 1e-12));
	/* inside one node: the NVLink buffers only, for the 8 peers */
	cr_assert(fixture_near(ep_buffer_bytes(&e, 14336, 8, 8), 10 * 16384.0 * 8 * 288,
		       1e-12));
	e.mode = EP_LIBRARY;
	cr_assert_eq(ep_buffer_bytes(&e, 14336, 64, 8), 0);
}

Test(ep, round_robin_routing_reaches_consecutive_blocks)
{
	/* AutoModel's FakeBalancedGate: token t takes experts k t .. k t +
	 * k - 1 mod E. Qwen3-30B (128 experts, top 8) at ep 8: 16 experts a
	 * GPU; every start is a multiple of 8, so a token's 8 experts sit on
	 * one GPU */
	struct ep_routing r = { 128, 8, 0, 0, 1 };
	struct ep_routing dsv3 = { 256, 8, 8, 4, 1 };
	struct ep_traffic t;

	cr_assert_float_eq(ep_hit_round_robin(128, 8, 16), 1, 1e-12);
	ep_traffic(&r, 8, 8, 16384, 4096, DEDUP_RANK, &t);
	cr_assert_float_eq(t.ranks_hit, 1, 1e-12);
	cr_assert_float_eq(t.nodes_hit, 1, 1e-12);
	/* one row a token: 16384 x 4096 B (random routing: 5.3 rows) */
	cr_assert(fixture_near(t.send_B, 16384.0 * 4096, 1e-12));

	/* DeepSeek-V3 (256 experts, top 8, groups ignored) at ep 64 on
	 * nodes of 8: 4 experts a GPU, 32 a node; a token's 8 experts are two
	 * whole GPUs of one node: 2 GPUs, 1 node, and half of the GPU-level
	 * bytes cross the scale-out network (1 / (2 rows)) */
	ep_traffic(&dsv3, 64, 8, 4096, 7168, DEDUP_NODE, &t);
	cr_assert_float_eq(t.ranks_hit, 2, 1e-12);
	cr_assert_float_eq(t.nodes_hit, 1, 1e-12);
	cr_assert_float_eq(t.node_share, 0.5, 1e-12);
	cr_assert(fixture_near(t.logical_B, 4096.0 * 1 * 7168, 1e-12));

	/* unaligned: E 10, k 3, blocks of 4 (0-3, 4-7, 8-9); gcd 1, so every
	 * start 0..9: blocks touched 1 1 2 2 1 1 2 2, then [8 9 0] 2 and
	 * [9 0 1] 2 (wrapping into block 0): 16 / 10 */
	cr_assert_float_eq(ep_hit_round_robin(10, 3, 4), 1.6, 1e-12);
	/* k >= E: every block */
	cr_assert_float_eq(ep_hit_round_robin(8, 8, 3), 3, 1e-12);
	/* bad sizes: nothing */
	cr_assert_float_eq(ep_hit_round_robin(0, 8, 4), 0, 1e-12);
}

/* The mean over the starts s (the multiples of gcd(k, E), which token
 * t's k t mod E visits equally often) of the blocks of g experts (the
 * last short when g does not divide E) that the k consecutive experts
 * from s (mod E) touch, one expert at a time: the definition
 * ep_hit_round_robin computes in closed form. */
static double rr_blocks_by_walk(int64_t e, int64_t k, int64_t g)
{
	int64_t blocks = (e + g - 1) / g, s, j, sum = 0, n = 0, d = 1;

	for (j = 1; j <= k; j++)	/* d = gcd(k, E), by trial */
		if (k % j == 0 && e % j == 0)
			d = j;
	for (s = 0; s < e; s += d, n++) {
		char seen[64] = {0};
		int64_t c = 0;

		for (j = 0; j < k && j < e; j++) {
			int64_t blk = (s + j) % e / g;

			c += !seen[blk];
			seen[blk] = 1;
		}
		sum += c < blocks ? c : blocks;
	}
	return (double)sum / (double)n;
}

Test(ep, round_robin_blocks_match_the_walk)
{
	int64_t e, k, g;

	/* every E <= 24, k <= E, g <= E: the closed form equals the walk */
	for (e = 1; e <= 24; e++)
		for (k = 1; k <= e; k++)
			for (g = 1; g <= e; g++)
				cr_assert_float_eq(ep_hit_round_robin(
						   (double)e, (double)k,
						   (double)g),
						   rr_blocks_by_walk(e, k, g),
						   1e-12, "E %lld k %lld g %lld",
						   (long long)e, (long long)k,
						   (long long)g);
}

/* A hostile model (65536 experts, top 65535, 64 a GPU) took the walk
 * 65536 x 65535 steps (minutes in a run); the closed form takes 65536.
 * Start 0 covers experts 0 .. 65534, blocks 0 .. 1023: all 1024; a
 * wrapping start s covers 1024 - s / 64 blocks up to the end and
 * (s - 2) / 64 + 1 from block 0, at least 1024 together: every start
 * touches all 1024 blocks. */
Test(ep, round_robin_blocks_of_a_huge_model_are_quick,
     .timeout = QUICK_TIMEOUT(2))
{
	cr_assert_float_eq(ep_hit_round_robin(65536, 65535, 64), 1024,
			   1e-12);
}

Test(ep, chunk_rounds_deal_chunks_to_blocks)
{
	struct ep_comm_spec e = {
		.name = "x", .mode = EP_FORWARD, .dedup = DEDUP_NODE, .sms = 32,
		.dispatch_chunk_tokens = 64, .combine_chunk_tokens = 128,
	};

	/* 4096 tokens: 64 chunks of 64 over 32 blocks, 2 rounds each; the
	 * combine's 32 chunks of 128, 1 round */
	cr_assert_float_eq(ep_chunk_rounds(&e, 4096, 0, 0), 2, 1e-12);
	cr_assert_float_eq(ep_chunk_rounds(&e, 4096, 0, 1), 1, 1e-12);
	/* --sms 16: the combine's 32 chunks make 2 rounds, 8 SMs 4 */
	cr_assert_float_eq(ep_chunk_rounds(&e, 4096, 16, 1), 2, 1e-12);
	cr_assert_float_eq(ep_chunk_rounds(&e, 4096, 8, 1), 4, 1e-12);
	/* a partial chunk is a chunk: 4000 / 128 = 31.25 -> 32 chunks;
	 * 4100 -> 33 chunks, over 16 blocks 3 rounds (one block's third) */
	cr_assert_float_eq(ep_chunk_rounds(&e, 4000, 16, 1), 2, 1e-12);
	cr_assert_float_eq(ep_chunk_rounds(&e, 4100, 16, 1), 3, 1e-12);
	/* fewer chunks than blocks: one round */
	cr_assert_float_eq(ep_chunk_rounds(&e, 100, 0, 0), 1, 1e-12);
	/* streamed (chunk 0), no tokens, no path: 0 */
	e.dispatch_chunk_tokens = 0;
	cr_assert_float_eq(ep_chunk_rounds(&e, 4096, 0, 0), 0, 1e-12);
	cr_assert_float_eq(ep_chunk_rounds(&e, 0, 0, 1), 0, 1e-12);
	cr_assert_float_eq(ep_chunk_rounds(NULL, 4096, 0, 1), 0, 1e-12);
}

Test(ep, dispatcher_domain_reach_counts_the_groups_gpus_in_one_domain)
{
	struct ep_comm_spec e = {.scale_up_max_ranks = 8};

	/* An EP group fills a domain in order: min(ranks, per domain). */
	cr_assert_eq(ep_comm_domain_ranks(64, 8), 8);	/* DGX H100, ep 64 */
	cr_assert_eq(ep_comm_domain_ranks(16, 72), 16);	/* NVL72, ep 16 */
	cr_assert_eq(ep_comm_domain_ranks(4, 72), 4);
	cr_assert_eq(ep_comm_domain_ranks(4, 0), 1);	/* no domain: 1 GPU */
	/* DeepEP V1's normal kernels reach 8 GPUs of a domain: ep 64 over
	 * 8-GPU nodes (8 a domain) runs, ep 16 inside an NVL72 does not,
	 * ep 8 inside it does. */
	cr_assert(ep_comm_spans_domain(&e, 64, 8));
	cr_assert(!ep_comm_spans_domain(&e, 16, 72));
	cr_assert(ep_comm_spans_domain(&e, 8, 72));
	/* NVIDIA's NVL72 build (24) runs the page's 24-rank rows, not 32. */
	e.scale_up_max_ranks = 24;
	cr_assert(ep_comm_spans_domain(&e, 24, 72));
	cr_assert(!ep_comm_spans_domain(&e, 32, 72));
	/* 0: any reach (Hybrid-EP, the low-latency kernels, NCCL). */
	e.scale_up_max_ranks = 0;
	cr_assert(ep_comm_spans_domain(&e, 72, 72));
	cr_assert(ep_comm_spans_domain(NULL, 72, 72));
}

/* MORI-EP (configs/ep/mori.yaml) on one MI300X node, EP 8, 4096 tokens a
 * GPU, hidden 7168, top-8 of 256, as ROCm/mori's README bench. A token
 * reaches 8 (1 - C(224,8) / C(256,8)) = 5.29465 ranks; an fp8 row without
 * scales plus 64 B of int32 indices and fp32 weights is 7232 B, of which
 * 7/8 leave the GPU: 4096 x 5.29465 x 7232 x 7/8 = 137.23 MB over the
 * mesh's 322 GB/s a GPU at eta 0.89, plus the 19 us setup: 497.87 us;
 * the logical bandwidth (7168 B rows) 4096 x 5.29465 x 7168 / 497.87 us
 * = 312.2 GB/s (measured 307). A BF16 combine (14336 B rows, no extras):
 * 272.04 MB, 968.27 us, 321.1 GB/s (measured 330). */
Test(ep, mori_on_mi300x_is_link_bound_plus_setup)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	struct system_spec *s;
	struct ep_comm_spec *e;
	struct ep_call c;
	struct ep_call_result r;
	struct net *n;
	uint32_t gpus[8], i;
	double rh = 8 * (1 - miss(256, 32, 8)), t;

	arena_init(&a);
	diag_init(&d, stderr);
	cx = (struct config_ctx){&a, &d, "."};
	s = arena_alloc(&a, system_schema.size);
	e = arena_alloc(&a, ep_comm_schema.size);
	cr_assert(s && e);
	memset(s, 0, system_schema.size);
	memset(e, 0, ep_comm_schema.size);
	cr_assert_eq(config_load(&cx, &system_schema, "mi300x-roce", NULL, 0,
				 s), 0);
	cr_assert_eq(config_load(&cx, &ep_comm_schema, "mori", NULL, 0, e), 0);
	cr_assert_eq(e->vendor, EP_VENDOR_AMD);
	for (i = 0; i < 8; i++)
		gpus[i] = i;
	memset(&c, 0, sizeof(c));
	c.gpus = gpus;
	c.ranks = 8;
	c.gpus_per_node = 8;
	c.tokens = 4096;
	c.hidden = 7168;
	c.routing.topk = 8;
	c.routing.experts = 256;
	c.dtype = DTYPE_FP8;
	c.algo = c.proto = -1;
	n = net_new(s, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(ep_call_time(n, e, &c, &r, &d), 0);
	t = 19e-6 + 4096 * rh * 7232 * 7.0 / 8 / (0.89 * 322e9);
	cr_assert(fixture_near(r.r.time_s, t, 1e-6), "%g s, want %g",
		  r.r.time_s, t);
	cr_assert(fixture_near(t, 497.87e-6, 1e-5));
	cr_assert(fixture_near(r.r.algbw_Bps, 312.2e9, 1e-3));
	c.dtype = DTYPE_BF16;
	c.combine = 1;
	cr_assert_eq(ep_call_time(n, e, &c, &r, &d), 0);
	t = 19e-6 + 4096 * rh * 14336 * 7.0 / 8 / (0.89 * 322e9);
	cr_assert(fixture_near(r.r.time_s, t, 1e-6), "%g s, want %g",
		  r.r.time_s, t);
	cr_assert(fixture_near(r.r.algbw_Bps, 321.1e9, 1e-3));
	net_free(n);
	arena_release(&a);
}
