/*
 * test_moe_permute.c - Megatron-LM's unfused permute before its argsort
 * rewrite (framework elementwise.masked_select_permute; moe_permute.c):
 * two masked_selects, each a nonzero whose count the host waits for,
 * against derived bytes, kernel counts and the ops the host waits on;
 * and which permute kernels Megatron-Core's flex dispatcher runs (moe.c
 * combine_reduces, permute_in_dispatch).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "moe_case.h"
#include "models/block.h"
#include "models/layer_impl.h"
#include "models/layer.h"
#include "models/route.h"

/*
 * fixture_moe(8, 2, 512, 2): T = 4096 tokens, E = 8, k = 2, h = 1024,
 * bf16 probs (p = 2 B): T E = 32768, T k = 8192.
 * permute_mask: transposed copy of the bool map (read T E, write T E,
 *   strided 2 T E), arange (write 8 T), the count's 2 reduce kernels
 *   (read T E): 4 kernels; read 2 T E = 65536 B, write T E + 8 T =
 *   32768 + 32768 = 65536 B, strided 65536 B; host: 3 Python ops
 *   (contiguous, arange, masked_select) and 1 more kernel from C++.
 * permute_select (after the sync on permute_mask): select (2 kernels,
 *   read T E, write 8 T k), write_indices (read 8 T k, write 16 T k),
 *   the gather (read 16 T k indices and 8 T k int64, write 8 T k):
 *   4 kernels; read T E + 24 T k + 8 T k = 32768 + 262144 = 294912 B,
 *   write 32 T k = 262144 B; host: 4 kernels from C++, no Python op.
 * permute_probs_mask: transposed probs copy (read and write T E p,
 *   strided 2 T E p = 131072 B) and the count (read T E): 3 kernels;
 *   read 65536 + 32768 = 98304 B, write 65536 B; 2 Python ops.
 * permute_probs_select (after the sync on permute_probs_mask): as
 *   permute_select with p-byte elements: read T E + 24 T k + T k p =
 *   32768 + 196608 + 16384 = 245760 B, write 24 T k + T k p = 212992 B.
 * permute_probs_bwd (masked_select_backward): zeros (write T E p), the
 *   mask's exclusive sum (read T E, write 8 T E; 2 kernels), the size
 *   check, the scatter (read T E p + T E + 8 T E + T k p, write T E p),
 *   the transposed copy back (read and write T E p): 6 kernels; read
 *   10 T E + 2 T E p + T k p = 327680 + 131072 + 16384 = 475136 B,
 *   write 8 T E + 3 T E p = 262144 + 196608 = 458752 B, strided
 *   2 T E p = 131072 B.
 * With the fused permute the key changes nothing.
 */
Test(moe, masked_select_permute_syncs_twice)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;
	int mask, sel, pmask, psel, perm;

	moe_case_ep(&m, &e, "test-alltoall", 2);
	m.f.job.moe.permute_fusion = 0;
	m.f.fw.elementwise.masked_select_permute = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.masked_select, 1);
	cr_assert_float_eq(m.d.moe.probs_B, 2, 1e-12);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_eq(fixture_op_index(&m.o, "permute_index"), -1);
	mask = fixture_op_index(&m.o, "permute_mask");
	sel = fixture_op_index(&m.o, "permute_select");
	pmask = fixture_op_index(&m.o, "permute_probs_mask");
	psel = fixture_op_index(&m.o, "permute_probs_select");
	perm = fixture_op_index(&m.o, "permute");
	cr_assert(mask >= 0 && sel == mask + 1 && pmask == sel + 1 &&
		  psel == pmask + 1 && perm == psel + 1);

	c = &m.o.op[mask];
	cr_assert_float_eq(c->k.launches, 4, 1e-12);
	cr_assert_float_eq(c->k.read_B, 65536, 1e-9);
	cr_assert_float_eq(c->k.write_B, 65536, 1e-9);
	cr_assert_float_eq(c->k.strided_B, 65536, 1e-9);
	cr_assert_eq(c->host, HOST_OP);
	cr_assert_eq(c->host_n, 3);
	cr_assert_eq(c->host_kernels, 1);
	cr_assert_eq(c->host_wait, LAYER_NONE);

	c = &m.o.op[sel];
	cr_assert_float_eq(c->k.launches, 4, 1e-12);
	cr_assert_float_eq(c->k.read_B, 294912, 1e-9);
	cr_assert_float_eq(c->k.write_B, 262144, 1e-9);
	cr_assert_eq(c->host, HOST_FREE);
	cr_assert_eq(c->host_kernels, 3);
	cr_assert_eq(c->host_wait, mask);

	c = &m.o.op[pmask];
	cr_assert_float_eq(c->k.launches, 3, 1e-12);
	cr_assert_float_eq(c->k.read_B, 98304, 1e-9);
	cr_assert_float_eq(c->k.write_B, 65536, 1e-9);
	cr_assert_float_eq(c->k.strided_B, 131072, 1e-9);
	cr_assert_eq(c->host_n, 2);
	cr_assert_eq(c->host_wait, LAYER_NONE);

	c = &m.o.op[psel];
	cr_assert_float_eq(c->k.read_B, 245760, 1e-9);
	cr_assert_float_eq(c->k.write_B, 212992, 1e-9);
	cr_assert_eq(c->host_wait, pmask);

	/* the index_select that follows is the same as argsort's */
	cr_assert_float_eq(m.o.op[perm].k.read_B, 8454144, 1e-6);

	moe_case_bwd(&m);
	c = &m.o.op[fixture_op_index(&m.o, "permute_probs_bwd")];
	cr_assert_float_eq(c->k.launches, 6, 1e-12);
	cr_assert_float_eq(c->k.read_B, 475136, 1e-9);
	cr_assert_float_eq(c->k.write_B, 458752, 1e-9);
	cr_assert_float_eq(c->k.strided_B, 131072, 1e-9);

	m.f.job.moe.permute_fusion = 1;
	moe_case_dims(&m);
	cr_assert_eq(m.d.moe.masked_select, 0);
	layer_fwd(&m.d, &m.kind, &m.o);
	cr_assert_eq(fixture_op_index(&m.o, "permute_mask"), -1);
	cr_assert_eq(fixture_op_index(&m.o, "permute_select"), -1);
	moe_case_bwd(&m);
	cr_assert_eq(fixture_op_index(&m.o, "permute_probs_bwd"), -1);
	moe_case_release(&m);
}

/*
 * Megatron-Core's flex dispatcher (DeepEP, Hybrid-EP: GPU-initiated
 * paths) gets the combined tokens from the combine kernel, which sums a
 * token's rows itself: no "unpermute" after it, no "unpermute_bwd" before
 * the backward's combine (NVIDIA/Megatron-LM @ d98e8a64
 * token_dispatcher.py combine_postprocess: a view). The alltoall
 * dispatcher keeps its unpermute: T = 4096, k = 2, h = 1024, bf16: read
 * T k h B + T k 4 = 16777216 + 32768 = 16809984 B, write T h B =
 * 8388608 B. The flex dispatcher's local sort (expert_sort after the
 * dispatch, expert_unsort before the combine: R = T k = 8192 rows,
 * 8192 x 2048 = 16777216 B each way) stays, unless the dispatcher's
 * kernels permute (permute_in_kernel, Hybrid-EP) and the job asks
 * (moe.permute_into_dispatcher, moe_permute_fusion_into_hybridep): then
 * none of the four sort kernels runs.
 */
Test(moe, flex_combine_runs_no_unpermute_and_fused_permute_no_sort)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	moe_case_ep(&m, &e, "test-alltoall", 2);
	m.f.job.moe.permute_fusion = 1;	/* no torch.zeros before it */
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "unpermute");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 16809984, 1e-6);
	cr_assert_float_eq(c->k.write_B, 8388608, 1e-6);
	moe_case_bwd(&m);
	cr_assert_not_null(fixture_op(&m.o, "unpermute_bwd"));

	fixture_ep_forward(&e, "test-flex");
	e.gpu_initiated = 1;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "unpermute"));
	c = fixture_op(&m.o, "expert_sort");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 16777216, 1e-6);
	cr_assert_not_null(fixture_op(&m.o, "expert_unsort"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "unpermute_bwd"));
	cr_assert_not_null(fixture_op(&m.o, "expert_unsort_bwd"));
	cr_assert_not_null(fixture_op(&m.o, "expert_sort_bwd"));

	/* the job asks, the dispatcher cannot: the sorts stay (the job's
	 * check refuses this in a file, spec_moe.c moe_check) */
	m.f.job.moe.permute_into_dispatcher = 1;
	moe_case_fwd(&m);
	cr_assert_not_null(fixture_op(&m.o, "expert_sort"));
	e.permute_in_kernel = 1;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_sort"));
	cr_assert_null(fixture_op(&m.o, "expert_unsort"));
	cr_assert_not_null(fixture_op(&m.o, "moe_combine"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_unsort_bwd"));
	cr_assert_null(fixture_op(&m.o, "expert_sort_bwd"));
	cr_assert_not_null(fixture_op(&m.o, "moe_dispatch_bwd"));
	moe_case_release(&m);
}

/*
 * The weighted GLU's probability gradient (moe.c experts_bwd ->
 * moe_act_probs_bwd): with the probabilities applied in the experts'
 * activation (framework moe_probs_in_activation, Megatron-Core >= 0.13),
 * Megatron-Core's fused weighted SwiGLU backward also returns
 * sum(act(g) x dy, -1), a reduction over R x f that Inductor cannot fuse
 * with the input gradient's R x u pointwise kernel: a second kernel
 * right after expert_act_bwd. The layer: E = 8 experts on one GPU,
 * T = 4096 tokens, k = 2, so R = 8192 rows; f = 512, gated u = 1024;
 * bf16 (B = 2) and a bf16 router (probs_B = 2):
 *   read  R (u + f) B = 8192 x 1536 x 2 = 25165824 B
 *   write R probs_B   = 8192 x 2        = 16384 B
 *   FLOPs ACT_FLOPS R f = 8 x 8192 x 512 = 33554432
 * An fp32 router: write 8192 x 4 = 32768 B. No such kernel without the
 * framework key, for a non-gated MLP (a squared ReLU's two results run
 * over the same R f elements: one kernel), nor for the eager activation
 * (PyTorch ops, not the fused function), nor where the framework computes
 * that gradient inside the activation's kernel (glu_probs_grad_kernel
 * false: Transformer Engine's op-fuser grouped MLP).
 */
Test(moe, weighted_glu_backward_reduces_the_probabilities_apart)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;
	int at;

	moe_case_ep(&m, &e, "test-alltoall", 1);
	m.f.model.gated_mlp = 1;
	m.f.fw.moe_probs_in_activation = 1;
	m.f.fw.elementwise.glu_probs_grad_kernel = 1;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_act_probs_bwd"));	/* bwd */
	moe_case_bwd(&m);
	at = fixture_op_index(&m.o, "expert_act_bwd");
	cr_assert(at >= 0);
	cr_assert_eq(fixture_op_index(&m.o, "expert_act_probs_bwd"), at + 1);
	c = fixture_op(&m.o, "expert_act_probs_bwd");
	cr_assert_eq(c->pass, PASS_BWD);
	cr_assert_float_eq(c->k.read_B, 25165824, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16384, 1e-6);
	cr_assert_float_eq(c->k.vec_flops, 33554432, 1e-6);
	cr_assert_eq(c->host, HOST_FREE);
	/* the input's gradient is unchanged: read R (u + f) B, write R u B */
	c = fixture_op(&m.o, "expert_act_bwd");
	cr_assert_float_eq(c->k.read_B, 25165824, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);

	m.f.job.moe.router_dtype = DTYPE_FP32;
	moe_case_fwd(&m);
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "expert_act_probs_bwd");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.write_B, 32768, 1e-6);

	m.f.fw.elementwise.eager_activation = 1;
	moe_case_fwd(&m);
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_act_probs_bwd"));
	m.f.fw.elementwise.eager_activation = 0;

	m.f.model.gated_mlp = 0;
	moe_case_fwd(&m);
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_act_probs_bwd"));

	m.f.model.gated_mlp = 1;
	m.f.fw.elementwise.glu_probs_grad_kernel = 0;	/* TE's op fuser */
	moe_case_fwd(&m);
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_act_probs_bwd"));

	m.f.fw.elementwise.glu_probs_grad_kernel = 1;
	m.f.fw.moe_probs_in_activation = 0;
	moe_case_fwd(&m);
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_act_probs_bwd"));
	moe_case_release(&m);
}

/*
 * The eager gated activation with the probabilities in it (framework
 * elementwise.eager_activation, moe_probs_in_activation: Megatron-LM
 * --no-bias-swiglu-fusion, Primus's Qwen3 configs; moe_permute.c
 * moe_act_probs_eager). The fixture above: R = 8192 rows, f = 512, B = 2
 * (R (u + f) B = 25165824 with u = 2 f; R p = 16384 with p = 2).
 * bf16 probabilities (P = 2, O = max(B, P) = 2, no cast):
 *   expert_glu_offset: read and write R f B = 8388608 B, strided 8388608,
 *     one kernel, one Python op;
 *   expert_probs_mul: read R f B + R P = 8404992 B, write R f O = 8388608,
 *     one kernel;
 *   expert_probs_mul_bwd (just before expert_act_bwd): read 3 R f O + R P
 *     + R f B = 25165824 + 16384 + 8388608 = 33570816 B, write 2 R f O +
 *     R P = 16793600 B, 3 kernels.
 * fp32 probabilities (P = 4, O = 4: the product is fp32 and cast back):
 *   expert_probs_mul: read R f B + R P + R f O = 8388608 + 32768 +
 *     16777216 = 25198592 B, write R f O + R f B = 25165824 B, 2 kernels
 *     and 2 Python ops;
 *   expert_probs_mul_bwd: read (R f B + R f O) + 3 R f O + R P + R f B =
 *     25165824 + 50331648 + 32768 + 8388608 = 83918848 B, write (R f O +
 *     R f B) + 2 R f O + R P = 25165824 + 33554432 + 32768 = 58753024 B,
 *     5 kernels.
 * The fused activation's second kernel (expert_act_probs_bwd) is not run;
 * nothing is added with the fused activation or without the probabilities
 * in the activation; moe_act recomputation runs the forward's two again.
 */
Test(moe, eager_glu_multiplies_the_probabilities_apart)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;
	int at;

	moe_case_ep(&m, &e, "test-alltoall", 1);
	m.f.model.gated_mlp = 1;
	m.f.fw.moe_probs_in_activation = 1;
	m.f.fw.elementwise.glu_probs_grad_kernel = 1;
	m.f.fw.elementwise.eager_activation = 1;
	moe_case_fwd(&m);
	at = fixture_op_index(&m.o, "expert_act");
	cr_assert(at >= 0);
	cr_assert_eq(fixture_op_index(&m.o, "expert_glu_offset"), at + 1);
	cr_assert_eq(fixture_op_index(&m.o, "expert_probs_mul"), at + 2);
	c = fixture_op(&m.o, "expert_glu_offset");
	cr_assert_float_eq(c->k.read_B, 8388608, 1e-6);
	cr_assert_float_eq(c->k.write_B, 8388608, 1e-6);
	cr_assert_float_eq(c->k.strided_B, 8388608, 1e-6);
	cr_assert_float_eq(c->k.launches, 1, 1e-12);
	c = fixture_op(&m.o, "expert_probs_mul");
	cr_assert_eq(c->pass, PASS_FWD);
	cr_assert_float_eq(c->k.read_B, 8404992, 1e-6);
	cr_assert_float_eq(c->k.write_B, 8388608, 1e-6);
	cr_assert_float_eq(c->k.launches, 1, 1e-12);
	cr_assert_eq(c->host, HOST_OP);
	cr_assert_eq(c->host_n, 1);
	moe_case_bwd(&m);
	at = fixture_op_index(&m.o, "expert_act_bwd");
	cr_assert(at >= 1);
	cr_assert_eq(fixture_op_index(&m.o, "expert_probs_mul_bwd"), at - 1);
	c = fixture_op(&m.o, "expert_probs_mul_bwd");
	cr_assert_eq(c->pass, PASS_BWD);
	cr_assert_float_eq(c->k.read_B, 33570816, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16793600, 1e-6);
	cr_assert_float_eq(c->k.launches, 3, 1e-12);
	cr_assert_null(fixture_op(&m.o, "expert_act_probs_bwd"));

	m.f.job.moe.router_dtype = DTYPE_FP32;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_probs_mul");
	cr_assert_float_eq(c->k.read_B, 25198592, 1e-6);
	cr_assert_float_eq(c->k.write_B, 25165824, 1e-6);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);
	cr_assert_eq(c->host_n, 2);
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "expert_probs_mul_bwd");
	cr_assert_float_eq(c->k.read_B, 83918848, 1e-6);
	cr_assert_float_eq(c->k.write_B, 58753024, 1e-6);
	cr_assert_float_eq(c->k.launches, 5, 1e-12);

	/* moe_act recomputation: bias_act_func again, before its backward */
	moe_case_fwd(&m);
	m.d.rc_mods = 1u << RCM_MOE_ACT;
	layer_bwd(&m.d, &m.kind, LREC_SELECTIVE, &m.o);
	c = fixture_op(&m.o, "expert_probs_mul");
	cr_assert_not_null(c);
	cr_assert_eq(c->pass, PASS_RECOMPUTE);
	cr_assert_not_null(fixture_op(&m.o, "expert_glu_offset"));
	cr_assert(fixture_op_index(&m.o, "expert_probs_mul") <
		  fixture_op_index(&m.o, "expert_probs_mul_bwd"));

	m.f.fw.elementwise.eager_activation = 0;	/* the fused function */
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_probs_mul"));
	cr_assert_null(fixture_op(&m.o, "expert_glu_offset"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_probs_mul_bwd"));
	cr_assert_not_null(fixture_op(&m.o, "expert_act_probs_bwd"));

	m.f.fw.elementwise.eager_activation = 1;
	m.f.fw.moe_probs_in_activation = 0;	/* weighted at the unpermute */
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_probs_mul"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_probs_mul_bwd"));
	moe_case_release(&m);
}

/*
 * Transformer Engine 2.1-2.5's permute kernels (framework
 * te_permute_expert_loop; moe_permute.c moe_permute_loop). fixture_moe:
 * T = 4096 tokens, E = 8, k = 2, h = 1024, ep 2 (4 local experts, R =
 * T k = 8192 rows on the pace GPU). One 1024-element block (h / 1024).
 * permute (_permute_kernel): T programs, 1 x (E + 1) = 9 L2 loads each;
 * unpermute (_unpermute_kernel): 1 x (E + k) = 10. The v2.2 row map is
 * two kernels over the [E, T] int64 map: read 9 T E = 294912 B, write
 * 16 T E = 524288 B. expert_sort (_sort_chunks_by_idxs_kernel, one
 * kernel): R programs, 2 x splits = 2 x (ep 2 x etp 1 x 4 local) = 16 L1
 * loads and 1 L2 load (the row's block). Backward: unpermute_bwd is
 * _permute_kernel (9), permute_bwd _unpermute_kernel (10), the sort's
 * backward reuses its map (no chain). Without the key no op has a chain.
 */
Test(moe, te_permute_expert_loop_chains)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	moe_case_ep(&m, &e, "test-alltoall", 2);
	m.f.job.moe.permute_fusion = 1;
	m.f.fw.te_permute_loop = 1;
	moe_case_fwd(&m);
	cr_assert_eq(m.d.moe.permute_loop, 1);
	c = fixture_op(&m.o, "permute_map");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);
	cr_assert_float_eq(c->k.read_B, 294912, 1e-9);
	cr_assert_float_eq(c->k.write_B, 524288, 1e-9);
	cr_assert_float_eq(c->k.strided_B, 0, 1e-12);
	c = fixture_op(&m.o, "permute");
	cr_assert_float_eq(c->k.chain_grid, 4096, 1e-9);
	cr_assert_float_eq(c->k.chain_l2, 9, 1e-12);
	cr_assert_float_eq(c->k.chain_l1, 0, 1e-12);
	c = fixture_op(&m.o, "unpermute");
	cr_assert_float_eq(c->k.chain_grid, 4096, 1e-9);
	cr_assert_float_eq(c->k.chain_l2, 10, 1e-12);
	c = fixture_op(&m.o, "expert_sort");
	cr_assert_float_eq(c->k.launches, 1, 1e-12);
	cr_assert_float_eq(c->k.chain_grid, 8192, 1e-9);
	cr_assert_float_eq(c->k.chain_l1, 16, 1e-12);
	cr_assert_float_eq(c->k.chain_l2, 1, 1e-12);
	moe_case_bwd(&m);
	cr_assert_float_eq(fixture_op(&m.o, "unpermute_bwd")->k.chain_l2, 9,
			   1e-12);
	cr_assert_float_eq(fixture_op(&m.o, "permute_bwd")->k.chain_l2, 10,
			   1e-12);
	cr_assert_float_eq(fixture_op(&m.o, "expert_sort_bwd")->k.chain_grid,
			   0, 1e-12);
	m.f.fw.te_permute_loop = 0;
	moe_case_fwd(&m);
	cr_assert_eq(m.d.moe.permute_loop, 0);
	cr_assert_float_eq(fixture_op(&m.o, "permute")->k.chain_grid, 0, 1e-12);
	cr_assert_float_eq(fixture_op(&m.o, "unpermute")->k.chain_grid, 0,
			   1e-12);
	cr_assert_float_eq(fixture_op(&m.o, "permute_map")->k.launches, 3,
			   1e-12);
	/* the unfused permute runs no TE kernel: the key changes nothing */
	m.f.job.moe.permute_fusion = 0;
	m.f.fw.te_permute_loop = 1;
	moe_case_fwd(&m);
	cr_assert_eq(m.d.moe.permute_loop, 0);
	cr_assert_float_eq(fixture_op(&m.o, "permute")->k.chain_grid, 0, 1e-12);
	moe_case_release(&m);
}

static double chain_op_time(const struct layer_ops *o,
			    const struct gpu_spec *g)
{
	static struct block b;
	struct block_dtypes dt = { DTYPE_BF16, DTYPE_BF16, 1, 0, 0 };

	cr_assert_eq(block_cost(&b, o, g, &dt, NULL), 0);
	cr_assert_eq(b.n, 1);
	return b.op[0].time_s;
}

/*
 * block.c chain_s: 128-thread programs, 2048 threads an SM: 16 an SM, on
 * 132 SMs 2112 side by side. DeepSeek-V3's permute at T 4096: 4096
 * programs = 2 waves, each program ceil(7168 / 1024) (256 + 1) = 1799 L2
 * loads of 291 cycles at 1.98 GHz: 2 x 1799 x 291 / 1.98e9 = 528.79 us,
 * far above the op's 1-byte stream (launch only). A chunk sort of 16384
 * rows = 8 waves, 512 L1 loads of 40 cycles and 7 L2 loads each: 8 x
 * (20480 + 2037) / 1.98e9 = 90.978 us. A GPU without the latencies
 * leaves the op its stream time.
 */
Test(moe, latency_chain_prices_waves_of_dependent_loads)
{
	struct fixture f;
	struct layer_ops o;
	struct layer_op *op;
	double plain, t;

	fixture_gpt(&f, 1, 1024, 16, 128, 2048, 1, 8, 1, 1, 1);
	f.gpu.compute_units = 132;
	f.gpu.max_clock_hz = 1.98e9;
	memset(&o, 0, sizeof(o));
	op = lop_memop(&o, "permute", PASS_FWD, 1, 0, 0);
	plain = chain_op_time(&o, &f.gpu);
	op->k.chain_grid = 4096;
	op->k.chain_l2 = 1799;
	cr_assert_float_eq(chain_op_time(&o, &f.gpu), plain, 1e-15);
	f.gpu.l1_hit_cycles = 40;
	f.gpu.l2_hit_cycles = 291;
	t = chain_op_time(&o, &f.gpu);
	cr_assert_float_eq(t, 2 * 1799 * 291 / 1.98e9, 1e-12, "%g s", t);
	op->k.chain_grid = 16384;
	op->k.chain_l1 = 512;
	op->k.chain_l2 = 7;
	t = chain_op_time(&o, &f.gpu);
	cr_assert_float_eq(t, 8 * (512 * 40 + 7 * 291) / 1.98e9, 1e-12,
			   "%g s", t);
}
