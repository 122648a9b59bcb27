/*
 * test_moe_a2a.c - Megatron-Core's alltoall token dispatcher
 * (MoEAlltoAllTokenDispatcher): the routing probabilities' own
 * all-to-all and its backward (moe.c probs_a2a), and where the host's
 * dropless sync waits when the preprocessing is CUDA-graphed (moe.c
 * host_sync, sync_preprocess); Transformer Engine's fused permute's
 * row_id_map (moe.c row_id_map), against derived bytes and op indices.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "moe_case.h"
#include "models/layer.h"
#include "models/route.h"

Test(moe, alltoall_sends_the_probabilities_in_their_own_call)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;
	int i;

	/* fixture_moe: h 1024, T = 2 x 2048 = 4096 tokens a rank, 8 experts,
	 * top-2, ep 2, uniform routing, a bf16 router. Megatron's alltoall
	 * dispatcher (a library all-to-all, no dedup, no extra bytes in the
	 * row) sends T k = 8192 rows of 1024 bf16: 8192 x 2048 B = 16777216
	 * B, then the permuted probabilities with the same splits, one bf16
	 * each: 8192 x 2 B = 16384 B, its own all-to-all right after the
	 * tokens' on the EP stream; its backward sends their gradients back
	 * right after the tokens' gradients (the same 16384 B). Without
	 * probs_alltoall neither call exists. */
	moe_case_ep(&m, &e, "test-alltoall", 2);
	e.probs_call = 1;
	moe_case_fwd(&m);
	i = fixture_op_index(&m.o, "moe_dispatch");
	cr_assert(i >= 0);
	cr_assert_float_eq(m.o.op[i].coll_B, 16777216, 1e-6);
	c = &m.o.op[i + 1];
	cr_assert_str_eq(c->name, "moe_dispatch_probs");
	cr_assert_eq(c->kind, LOP_COLL);
	cr_assert_eq(c->coll, COLL_ALLTOALL);
	cr_assert_eq(c->group, LG_EP);
	cr_assert_eq(c->stream, LS_EP);
	cr_assert_eq(c->ep_path, 0);
	cr_assert_float_eq(c->coll_B, 16384, 1e-9);
	moe_case_bwd(&m);
	i = fixture_op_index(&m.o, "moe_dispatch_bwd");
	cr_assert(i >= 0);
	c = &m.o.op[i + 1];
	cr_assert_str_eq(c->name, "moe_dispatch_probs_bwd");
	cr_assert_eq(c->coll, COLL_ALLTOALL);
	cr_assert_float_eq(c->coll_B, 16384, 1e-9);
	/* a fp32 router: 4 B a probability, 32768 B */
	m.f.job.moe.router_dtype = DTYPE_FP32;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "moe_dispatch_probs");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->coll_B, 32768, 1e-9);
	e.probs_call = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_dispatch_probs"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_dispatch_probs_bwd"));
	moe_case_release(&m);
}

Test(moe, alltoall_sync_waits_for_a_graphed_preprocess)
{
	struct moe_case m;
	struct ep_comm_spec e;
	int64_t scope = SCOPE_MOE_PREPROCESS - 1;	/* from SCOPE_ATTN */
	int disp, counts, permute;

	/* Megatron's alltoall dispatcher (host_sync counts): eager, its
	 * copies to the host are issued before the permute, so the host
	 * waits for the count exchange (moe_counts) before it issues the
	 * dispatch; with moe_preprocess CUDA-graphed they are issued after
	 * the graph's replay, so it waits for the permute, the op right
	 * before the dispatch. A job that does not graph moe_preprocess, or
	 * a dispatcher without dtoh_after_graph, keeps the counts. */
	moe_case_ep(&m, &e, "test-alltoall", 2);
	e.host_sync = EP_SYNC_COUNTS;
	e.dtoh_after_graph = 1;
	moe_case_fwd(&m);
	disp = fixture_op_index(&m.o, "moe_dispatch");
	counts = fixture_op_index(&m.o, "moe_counts");
	permute = fixture_op_index(&m.o, "permute");
	cr_assert(counts >= 0 && permute == disp - 1 && counts < permute);
	cr_assert_eq(m.o.op[disp].host_wait, counts);
	m.f.job.training.cuda_graphs.v = &scope;
	m.f.job.training.cuda_graphs.n = 1;
	moe_case_fwd(&m);
	cr_assert_eq(m.o.op[fixture_op_index(&m.o, "moe_dispatch")].host_wait,
		     permute);
	e.dtoh_after_graph = 0;
	moe_case_fwd(&m);
	cr_assert_eq(m.o.op[fixture_op_index(&m.o, "moe_dispatch")].host_wait,
		     counts);
	moe_case_release(&m);
}

Test(moe, fused_permute_and_chunk_sort_build_their_maps)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;
	int i;

	/* T = 4096 tokens, E = 8 experts, top-2 (fixture_moe). TE's
	 * make_row_id_map before the fused permute: three kernels reading
	 * 9 T E = 9 x 4096 x 8 = 294912 B and writing 8 T E + T (2 k + 1)
	 * 4 = 262144 + 81920 = 344064 B, of which 13 T E = 425984 B
	 * column-wise (strided), right before the permute. Unfused (argsort
	 * and index_select, moe_permute_fusion off) there is no map. */
	moe_case_ep(&m, &e, "test-alltoall", 2);
	m.f.job.moe.permute_fusion = 1;
	moe_case_fwd(&m);
	i = fixture_op_index(&m.o, "permute_map");
	cr_assert(i >= 0);
	cr_assert_str_eq(m.o.op[i + 1].name, "permute");
	c = &m.o.op[i];
	cr_assert_float_eq(c->k.read_B, 294912, 1e-9);
	cr_assert_float_eq(c->k.write_B, 344064, 1e-9);
	cr_assert_float_eq(c->k.strided_B, 425984, 1e-9);
	cr_assert_float_eq(c->k.launches, 3, 1e-12);
	/* 4 local experts: the fused chunk sort maps its R = T k = 8192
	 * rows first, two kernels writing 8192 x (1024 x 2 + 4) B =
	 * 16809984 B (rows and map) in the forward; the backward's sort
	 * reuses the map: one kernel, 8192 x 2048 = 16777216 B. */
	c = fixture_op(&m.o, "expert_sort");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);
	cr_assert_float_eq(c->k.write_B, 16809984, 1e-6);
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "expert_sort_bwd");
	cr_assert_not_null(c);
	cr_assert(c->k.launches <= 1);
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	m.f.job.moe.permute_fusion = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "permute_map"));
	cr_assert(fixture_op(&m.o, "expert_sort")->k.launches <= 1);
	cr_assert_not_null(fixture_op(&m.o, "permute"));
	moe_case_release(&m);
}

/*
 * The alltoall dispatcher's preprocess copies its counts to the host:
 * tokens_per_expert, input_splits, output_splits, output_splits_tp (4);
 * with the unfused permute and more than one local expert also
 * num_global_tokens_per_local_expert (Megatron-LM @ d7288711ba
 * _maybe_dtoh_and_synchronize). With dispatch_ops 13 (megatron-core.yaml:
 * 9 small ops + 4 copies) and dispatch_unfused_ops 1, moe_preprocess is
 * 13 ops with the fused permute (8 experts, ep 2: 4 local), 13 + 1 = 14
 * unfused with 4 local experts, and 13 unfused at ep 8 (one local
 * expert: the fifth copy is not made).
 */
Test(moe, alltoall_preprocess_copies_follow_permute_fusion)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	moe_case_ep(&m, &e, "test-alltoall", 2);
	e.host_sync = EP_SYNC_COUNTS;
	m.f.fw.host.dispatch_ops = 13;
	m.f.fw.host.dispatch_unfused_ops = 1;
	m.f.job.moe.permute_fusion = 1;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "moe_preprocess");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 13, 1e-12);
	m.f.job.moe.permute_fusion = 0;
	moe_case_fwd(&m);
	cr_assert_float_eq(fixture_op(&m.o, "moe_preprocess")->k.launches, 14,
			   1e-12);
	m.f.job.parallelism.ep = 8;
	moe_case_fwd(&m);
	cr_assert_float_eq(fixture_op(&m.o, "moe_preprocess")->k.launches, 13,
			   1e-12);
	moe_case_release(&m);
}

/*
 * A dispatcher with its own preprocess count (configs/ep preprocess_ops,
 * Megatron-Core's flex dispatcher: Hybrid-EP's 1, the
 * tokens_per_expert.sum() after its call) replaces the framework's
 * alltoall count (13) and its unfused copy (+1), fused or not; absent
 * (0) the framework's applies. A framework that models no Megatron
 * preprocess (dispatch_ops 0: not Megatron-Core's dispatchers) pays none
 * whatever the dispatcher says.
 */
Test(moe, dispatcher_preprocess_ops_replace_the_alltoall_count)
{
	struct moe_case m;
	struct ep_comm_spec e;

	moe_case_ep(&m, &e, "test-flex", 2);
	e.host_sync = EP_SYNC_COUNTS;
	e.preprocess_ops = 1;
	m.f.fw.host.dispatch_ops = 13;
	m.f.fw.host.dispatch_unfused_ops = 1;
	m.f.job.moe.permute_fusion = 0;
	moe_case_fwd(&m);
	cr_assert_float_eq(fixture_op(&m.o, "moe_preprocess")->k.launches, 1,
			   1e-12);
	e.preprocess_ops = 0;		/* the framework's: 13 + 1 unfused */
	moe_case_fwd(&m);
	cr_assert_float_eq(fixture_op(&m.o, "moe_preprocess")->k.launches, 14,
			   1e-12);
	e.preprocess_ops = 14;
	m.f.fw.host.dispatch_ops = 0;
	m.f.fw.host.dispatch_unfused_ops = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "moe_preprocess"));
	moe_case_release(&m);
}

/*
 * Megatron-Core's unfused permute and unpermute (moe_permute_fusion
 * false; moe_utils.py @ d7288711ba) as their PyTorch kernels. T = 4096,
 * E = 8, k = 2, h = 1024, bf16 activations and probs (p = 2 B): T E =
 * 32768, T k = 8192.
 * permute_index, 8 kernels (map transpose, arange + 3 CUB radix-sort
 * kernels, %, probs transpose, probs gather):
 *   read  11 T E + T E p + 16 T k + T k p
 *         = 360448 + 65536 + 131072 + 16384 = 573440 B
 *   write 18 T E + T E p + 8 T k + T k p
 *         = 589824 + 65536 + 65536 + 16384 = 737280 B
 *   strided (the two transposed copies) 2 T E + 2 T E p = 196608 B
 * permute (index_select), 1 kernel: read T h B + 8 T k = 8388608 + 65536
 *   = 8454144 B, write T k h B = 16777216 B (was twice both).
 * unpermute: zeros + scatter_add_, 2 kernels, write 2 T h B = 16777216 B;
 *   the scatter_add_ adds T k h B = 8192 x 1024 x 2 = 16777216 B by
 *   atomics (scatter_B).
 * permute_bwd: zeros + index_add_, 2 kernels, write 16777216 B; adds
 *   the same 16777216 B by atomics.
 * unpermute_probs (rows x probabilities before the scatter, broadcast:
 *   the strided path), 1 kernel: read T k h B + T k p = 16777216 + 16384
 *   = 16793600 B, all strided; write T k h B = 16777216 B.
 * unpermute_probs_bwd (dy x p; dy x x and its sum over h), 3 kernels:
 *   read 4 T k h B + T k p = 67108864 + 16384 = 67125248 B, write
 *   2 T k h B + T k p = 33554432 + 16384 = 33570816 B.
 * permute_probs_bwd: keys over ceil(log2 32768) = 15 bits: 2 onesweep
 *   passes, 6 + 2 = 8 kernels; read (40 + 16 x 2) T k + T k p + T E p =
 *   589824 + 16384 + 65536 = 671744 B; write 2 T E p + (24 + 32) T k +
 *   T k p = 131072 + 458752 + 16384 = 606208 B.
 * Fused: none of these; permute reads T h B = 8388608 B, unpermute and
 * permute_bwd one kernel each, no atomics (scatter_B 0), no
 * unpermute_probs (the kernel weights the rows).
 */
Test(moe, unfused_permute_as_its_pytorch_kernels)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	moe_case_ep(&m, &e, "test-alltoall", 2);
	m.f.job.moe.permute_fusion = 0;
	moe_case_dims(&m);
	cr_assert_float_eq(m.d.moe.probs_B, 2, 1e-12);
	layer_fwd(&m.d, &m.kind, &m.o);
	c = fixture_op(&m.o, "permute_index");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 573440, 1e-9);
	cr_assert_float_eq(c->k.write_B, 737280, 1e-9);
	cr_assert_float_eq(c->k.strided_B, 196608, 1e-9);
	cr_assert_float_eq(c->k.launches, 8, 1e-12);
	c = fixture_op(&m.o, "permute");
	cr_assert_float_eq(c->k.read_B, 8454144, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	c = fixture_op(&m.o, "unpermute");
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);
	cr_assert_float_eq(c->k.scatter_B, 16777216, 1e-6);
	c = fixture_op(&m.o, "unpermute_probs");
	cr_assert_not_null(c);
	cr_assert_eq(c + 1, fixture_op(&m.o, "unpermute"));
	cr_assert_float_eq(c->k.launches, 1, 1e-12);
	cr_assert_float_eq(c->k.read_B, 16793600, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	cr_assert_float_eq(c->k.strided_B, 16793600, 1e-6);
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "unpermute_probs_bwd");
	cr_assert_not_null(c);
	cr_assert_eq(c - 1, fixture_op(&m.o, "unpermute_bwd"));
	cr_assert_float_eq(c->k.launches, 3, 1e-12);
	cr_assert_float_eq(c->k.read_B, 67125248, 1e-6);
	cr_assert_float_eq(c->k.write_B, 33570816, 1e-6);
	c = fixture_op(&m.o, "permute_bwd");
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);
	cr_assert_float_eq(c->k.scatter_B, 16777216, 1e-6);
	c = fixture_op(&m.o, "permute_probs_bwd");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 8, 1e-12);
	cr_assert_float_eq(c->k.read_B, 671744, 1e-9);
	cr_assert_float_eq(c->k.write_B, 606208, 1e-9);

	m.f.job.moe.permute_fusion = 1;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "permute_index"));
	cr_assert_float_eq(fixture_op(&m.o, "permute")->k.read_B, 8388608, 1e-6);
	cr_assert(fixture_op(&m.o, "unpermute")->k.launches <= 1);
	cr_assert_float_eq(fixture_op(&m.o, "unpermute")->k.scatter_B, 0, 1e-12);
	cr_assert_null(fixture_op(&m.o, "unpermute_probs"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "unpermute_probs_bwd"));
	cr_assert(fixture_op(&m.o, "permute_bwd")->k.launches <= 1);
	cr_assert_float_eq(fixture_op(&m.o, "permute_bwd")->k.scatter_B, 0,
			   1e-12);
	cr_assert_null(fixture_op(&m.o, "permute_probs_bwd"));
	moe_case_release(&m);
}

/*
 * The routed experts' gated activation under an eager framework
 * (elementwise.eager_activation: PyTorch's silu(g) * u on the halves of
 * the grouped fc1 output, as scripts/measure-moe-torch.py runs it), as
 * the dense MLP's (layer.c lop_act_fwd / lop_act_bwd). ep 1, E = 8,
 * k = 2, T = 4096: R = T k = 8192 rows, f = 512, bf16 (B = 2):
 * R f B = 8388608 B.
 * Forward, 2 kernels: read 3 R f B = 25165824 B, write 2 R f B =
 *   16777216 B, strided 3 R f B = 25165824 B.
 * Backward, 4 kernels: read 8 R f B = 67108864 B, write 5 R f B =
 *   41943040 B, strided 6 R f B = 50331648 B.
 * Without it: one fused kernel, read R u B = 2 R f B, write R f B, no
 * strided bytes.
 */
Test(moe, eager_expert_activation_as_pytorch_ops)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	moe_case_ep(&m, &e, "test-alltoall", 1);
	m.f.model.gated_mlp = 1;
	m.f.fw.elementwise.eager_activation = 1;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_act");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);
	cr_assert_float_eq(c->k.read_B, 25165824, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	cr_assert_float_eq(c->k.strided_B, 25165824, 1e-6);
	moe_case_bwd(&m);
	c = fixture_op(&m.o, "expert_act_bwd");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 4, 1e-12);
	cr_assert_float_eq(c->k.read_B, 67108864, 1e-6);
	cr_assert_float_eq(c->k.write_B, 41943040, 1e-6);
	cr_assert_float_eq(c->k.strided_B, 50331648, 1e-6);

	m.f.fw.elementwise.eager_activation = 0;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_act");
	cr_assert_float_eq(c->k.read_B, 16777216, 1e-6);
	cr_assert_float_eq(c->k.write_B, 8388608, 1e-6);
	cr_assert_float_eq(c->k.strided_B, 0, 1e-12);
	moe_case_release(&m);
}

/*
 * The dispatcher's sort of the received rows by local expert (Megatron-
 * Core's sort_chunks_by_idxs, run at ep 1 too when a GPU holds more than
 * one expert): E = 8 experts on one GPU, T = 4096, k = 2, h = 1024,
 * bf16: expert_sort reads and writes R h B = 8192 x 1024 x 2 =
 * 16777216 B, and expert_unsort and the backward's two likewise. A
 * framework whose permute already leaves the rows in expert order
 * (moe_chunk_sort false: a single-GPU PyTorch MoE) runs none of them.
 */
Test(moe, framework_without_chunk_sort_runs_no_expert_sort)
{
	struct moe_case m;
	struct ep_comm_spec e;
	const struct layer_op *c;

	moe_case_ep(&m, &e, "test-alltoall", 1);
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "expert_sort");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 16777216, 1e-6);
	cr_assert_float_eq(c->k.write_B, 16777216, 1e-6);
	cr_assert_not_null(fixture_op(&m.o, "expert_unsort"));
	moe_case_bwd(&m);
	cr_assert_not_null(fixture_op(&m.o, "expert_sort_bwd"));
	cr_assert_not_null(fixture_op(&m.o, "expert_unsort_bwd"));

	m.f.fw.moe_chunk_sort = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_sort"));
	cr_assert_null(fixture_op(&m.o, "expert_unsort"));
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "expert_sort_bwd"));
	cr_assert_null(fixture_op(&m.o, "expert_unsort_bwd"));
	moe_case_release(&m);
}
