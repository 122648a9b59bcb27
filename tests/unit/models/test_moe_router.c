/*
 * test_moe_router.c - the router's dtype casts (moe_router.c):
 * Megatron-Core's RouterGatingLinearFunction.backward with an fp32
 * router in bf16 training widens the weight and the saved input before
 * its two GEMMs and narrows both results after them (four ToCopy
 * kernels); none without router_gemm_te or with a 16-bit router.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "moe_case.h"
#include "models/layer.h"

/*
 * fixture_moe(8, 2, 512, 2): T = 4096 tokens, E = 8, h = 1024, bf16
 * training (2 B), router fp32 (4 B), framework router_gemm_te:
 * router_weight_cast  E h = 8192 elements: read 2 x 8192 = 16384 B,
 *                     write 4 x 8192 = 32768 B;
 * router_input_cast   T h = 4194304 elements: read 8388608 B, write
 *                     16777216 B;
 * router_dgrad_cast   the fp32 input gradient back: read 16777216 B,
 *                     write 8388608 B;
 * router_wgrad_cast   the fp32 weight gradient back: read 32768 B,
 *                     write 16384 B.
 * Order (moe_utils.py): weight cast, dgrad, input cast, wgrad, then the
 * two narrowing casts; each a PyTorch op of the backward's Python code.
 */
Test(moe, fp32_router_backward_casts_around_its_gemms)
{
	static const char *const order[] = {
		"router_topk_bwd", "router_weight_cast", "router_dgrad",
		"router_input_cast", "router_wgrad", "router_dgrad_cast",
		"router_wgrad_cast",
	};
	static const double rd[] = { 16384, 8388608, 16777216, 32768 };
	static const double wr[] = { 32768, 16777216, 8388608, 16384 };
	static const char *const casts[] = {
		"router_weight_cast", "router_input_cast",
		"router_dgrad_cast", "router_wgrad_cast",
	};
	struct moe_case m;
	const struct layer_op *c;
	int i, at;

	moe_case_init(&m, 8, 2, 512, 2);
	m.f.job.training.dtype = DTYPE_BF16;
	m.f.job.moe.router_dtype = DTYPE_FP32;
	m.f.fw.router_gemm_te = 1;
	moe_case_fwd(&m);
	cr_assert_float_eq(m.d.moe.tokens, 4096, 1e-9);
	cr_assert_float_eq(m.d.hidden, 1024, 1e-9);
	for (i = 0; i < 4; i++)	/* the forward casts nothing */
		cr_assert_null(fixture_op(&m.o, casts[i]));
	moe_case_bwd(&m);
	at = fixture_op_index(&m.o, order[0]);
	cr_assert(at >= 0);
	for (i = 1; i < 7; i++)
		cr_assert_eq(fixture_op_index(&m.o, order[i]), at + i, "%s",
			     order[i]);
	for (i = 0; i < 4; i++) {
		c = fixture_op(&m.o, casts[i]);
		cr_assert_float_eq(c->k.read_B, rd[i], 1e-6, "%s", casts[i]);
		cr_assert_float_eq(c->k.write_B, wr[i], 1e-6, "%s", casts[i]);
		cr_assert_eq(c->host, HOST_OP);
	}

	/* torch.mm in the router dtype (no TE): no cast charged */
	m.f.fw.router_gemm_te = 0;
	moe_case_fwd_bwd(&m);
	for (i = 0; i < 4; i++)
		cr_assert_null(fixture_op(&m.o, casts[i]));
	/* a bf16 router: .to() is a no-op */
	m.f.fw.router_gemm_te = 1;
	m.f.job.moe.router_dtype = DTYPE_BF16;
	moe_case_fwd_bwd(&m);
	for (i = 0; i < 4; i++)
		cr_assert_null(fixture_op(&m.o, casts[i]));
	cr_assert_not_null(fixture_op(&m.o, "router_dgrad"));
	moe_case_release(&m);
}

/*
 * The aux loss's backward (framework router_bwd_ops, moe_router.c
 * aux_loss_bwd): with router_bwd_ops 5 (Megatron-Core's
 * MoEAuxLossAutoScaler ones_like and mul, TE's fused aux-loss and
 * aux-score backward kernels, autograd's sum of the logits' two
 * gradients) one op right after router_topk_bwd, 5 launches, 5 host
 * calls. fixture_moe(8, 2, 512, 2): T = 4096, E = 8, n = T E = 32768
 * elements.
 *   fp32 router (L = 4): read n (8 + 2 x 4) = 16 n = 524288 B,
 *                        write n (4 + 2 x 4) = 12 n = 393216 B;
 *   bf16 router (L = 2): read 12 n = 393216 B, write 8 n = 262144 B;
 *   FLOPs 5 n = 163840.
 * With router_bwd_ops 0 (the schema default) no such op: the order of
 * the test above (router_topk_bwd, then the casts) is unchanged. With
 * moe_router_load_balancing_type none (the schema default; gpt-oss's
 * bridge) none either, whatever router_bwd_ops says.
 */
Test(moe, aux_loss_backward_after_the_topk_backward)
{
	struct moe_case m;
	const struct layer_op *c;
	int at;

	moe_case_init(&m, 8, 2, 512, 2);
	m.f.job.training.dtype = DTYPE_BF16;
	m.f.job.moe.router_dtype = DTYPE_FP32;
	m.f.fw.host.router_bwd_ops = 5;
	m.f.fw.moe_lb_type = MOE_LB_NONE;	/* no aux loss: no kernels */
	moe_case_fwd_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux_bwd"));
	m.f.fw.moe_lb_type = MOE_LB_AUX;	/* Megatron's default coeff 0: */
	moe_case_fwd_bwd(&m);			/* no aux loss either */
	cr_assert_null(fixture_op(&m.o, "router_aux_bwd"));
	m.f.fw.moe_aux_loss_coeff = 1e-3;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux_bwd"));	/* bwd only */
	moe_case_bwd(&m);
	cr_assert_float_eq(m.d.moe.tokens * m.d.moe.experts, 32768, 1e-9);
	at = fixture_op_index(&m.o, "router_topk_bwd");
	cr_assert(at >= 0);
	cr_assert_eq(fixture_op_index(&m.o, "router_aux_bwd"), at + 1);
	c = fixture_op(&m.o, "router_aux_bwd");
	cr_assert_eq(c->pass, PASS_BWD);
	cr_assert_float_eq(c->k.read_B, 524288, 1e-6);
	cr_assert_float_eq(c->k.write_B, 393216, 1e-6);
	cr_assert_float_eq(c->k.vec_flops, 163840, 1e-6);
	cr_assert_float_eq(c->k.launches, 5, 1e-12);
	cr_assert_eq(c->host_n, 5);
	cr_assert_eq(c->host, HOST_OP);

	/* a bf16 router: the logits' gradients at 2 B */
	m.f.job.moe.router_dtype = DTYPE_BF16;
	moe_case_fwd_bwd(&m);
	c = fixture_op(&m.o, "router_aux_bwd");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.read_B, 393216, 1e-6);
	cr_assert_float_eq(c->k.write_B, 262144, 1e-6);

	/* not set: nothing */
	m.f.fw.host.router_bwd_ops = 0;
	moe_case_fwd_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux_bwd"));
	moe_case_release(&m);
}

/*
 * The router weight's gradient is added into main_grad by Megatron DDP's
 * post-hook, not by its GEMM (moe_router.c router_grad_add): with
 * training.gradient_accumulation_fusion on, one main_grad_add op right
 * after the last router op. fixture_moe(8, 2, 512, 2): E h = 8 x 1024 =
 * 8192 elements, bf16 training (the weight's gradient, 2 B after the fp32
 * router's narrowing cast), fp32 main_grad (grad_dtype, 4 B):
 *   read 8192 x (2 + 4) = 49152 B, write 8192 x 4 = 32768 B,
 *   8192 FLOPs (one add an element); the cast before it adds nothing
 *   into the gradient buffer (accum_B 0).
 * A bf16 router (no cast; its wgrad GEMM writes bf16): the same bytes.
 * wgrad_autograd (no main_grad buffer): neither the op nor an accum_B.
 */
Test(moe, router_weight_gradient_is_added_by_the_ddp_hook)
{
	struct moe_case m;
	int at;

	moe_case_init(&m, 8, 2, 512, 2);
	m.f.job.training.dtype = DTYPE_BF16;
	m.f.job.moe.router_dtype = DTYPE_FP32;
	m.f.fw.router_gemm_te = 1;
	cr_assert(m.f.job.training.gradient_accumulation_fusion);
	moe_case_fwd_bwd(&m);
	at = fixture_op_index(&m.o, "router_wgrad_cast");
	cr_assert(at >= 0);
	fixture_assert_grad_add(&m.o, at + 1, "main_grad_add", 8192);
	cr_assert_float_eq(m.o.op[at].k.accum_B, 0, 1e-12);

	/* an fp32 router without TE's router GEMM (no cast op; its wgrad
	 * GEMM's dtype is fp32): the gradient is still the bf16 weight's,
	 * 8192 x (2 + 4) = 49152 B read, not 8192 x (4 + 4) = 65536 B */
	m.f.fw.router_gemm_te = 0;
	moe_case_fwd_bwd(&m);
	fixture_assert_grad_add(&m.o, fixture_op_index(&m.o,
				"main_grad_add"), "main_grad_add", 8192);
	m.f.fw.router_gemm_te = 1;

	m.f.job.moe.router_dtype = DTYPE_BF16;
	moe_case_fwd_bwd(&m);
	at = fixture_op_index(&m.o, "router_wgrad");
	cr_assert(at >= 0);
	fixture_assert_grad_add(&m.o, at + 1, "main_grad_add", 8192);
	cr_assert_float_eq(m.o.op[at].k.accum_B, 0, 1e-12);

	m.f.fw.wgrad_autograd = 1;
	moe_case_fwd_bwd(&m);
	at = fixture_op_index(&m.o, "router_wgrad");
	cr_assert(at >= 0);
	cr_assert(at + 1 >= m.o.n ||
		  strcmp(m.o.op[at + 1].name, "main_grad_add") != 0);
	cr_assert_float_eq(m.o.op[at].k.accum_B, 0, 1e-12);
	moe_case_release(&m);
}

/*
 * The load-balancing type (framework moe_router_load_balancing_type,
 * Megatron-Core's moe_router_load_balancing_type) decides the aux loss's
 * forward ops and the count all-reduce (moe_router.c aux_reduce,
 * layer_dims.c aux_group). Megatron-Core's get_tokens_per_expert_and_
 * token_count reduces E int64 counts, here E = 8: 8 x 8 = 64 B, a
 * blocking all-reduce on the compute stream right after the router's aux
 * ops, forward only (its backward is the loss's, not a collective).
 * With host router_ops 2 and router_aux_ops 6 (the Megatron presets'),
 * force-balanced (routing balance forced, the random-logits gate: RandomSTE
 * runs) and a positive moe_aux_loss_coeff:
 *   aux_loss, seq_aux_loss: router_aux has 2 + 6 = 8 launches; counts
 *     over tp x cp (LG_TPCP), none when that group is one GPU;
 *   global_aux_loss: 8 launches; over tp x cp x dp (LG_STAGE);
 *   none: router_aux has 2 launches (RandomSTE's), no all-reduce;
 *   aux_loss with coefficient 0 (Megatron-Core's default,
 *     is_aux_loss_enabled): as none;
 *   a learned router (balance random, no RandomSTE) with no aux loss: no
 *     router_aux op at all; with one: 6 launches.
 */
Test(moe, load_balancing_type_sets_aux_ops_and_count_group)
{
	struct moe_case m;
	const struct layer_op *c;
	int at;

	moe_case_init(&m, 8, 2, 512, 2);
	m.f.fw.host.router_ops = 2;
	m.f.fw.host.router_aux_ops = 6;
	m.f.fw.moe_lb_type = MOE_LB_AUX;
	m.f.fw.moe_aux_loss_coeff = 1e-3;
	m.f.fw.balanced_gate = GATE_RANDOM;
	m.f.job.moe.routing.balance = ROUTE_FORCED;
	m.f.job.parallelism.tp = 1;
	m.f.job.parallelism.cp = 1;
	m.f.job.parallelism.dp = 4;
	moe_case_fwd(&m);	/* tp x cp = 1 GPU: Megatron returns early */
	cr_assert_null(fixture_op(&m.o, "router_aux_reduce"));
	c = fixture_op(&m.o, "router_aux");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 8, 1e-12);

	m.f.job.parallelism.tp = 2;
	moe_case_fwd(&m);
	at = fixture_op_index(&m.o, "router_aux");
	cr_assert(at >= 0);
	cr_assert_eq(fixture_op_index(&m.o, "router_aux_reduce"), at + 1);
	c = fixture_op(&m.o, "router_aux_reduce");
	cr_assert_eq(c->kind, LOP_COLL);
	cr_assert_eq(c->coll, COLL_ALLREDUCE);
	cr_assert_float_eq(c->coll_B, 64, 1e-12);
	cr_assert_eq(c->group, LG_TPCP);
	cr_assert_eq(c->stream, LS_COMPUTE);
	cr_assert_eq(c->pass, PASS_FWD);
	moe_case_bwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux_reduce"));

	/* seq_aux_loss: the same group */
	m.f.fw.moe_lb_type = MOE_LB_SEQ_AUX;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "router_aux_reduce");
	cr_assert_not_null(c);
	cr_assert_eq(c->group, LG_TPCP);

	/* global_aux_loss: the whole stage, even at tp 1 (dp 4) */
	m.f.job.parallelism.tp = 1;
	m.f.fw.moe_lb_type = MOE_LB_GLOBAL_AUX;
	moe_case_fwd(&m);
	c = fixture_op(&m.o, "router_aux_reduce");
	cr_assert_not_null(c);
	cr_assert_eq(c->group, LG_STAGE);

	/* no aux loss (gpt-oss: load balancing "none"): 2 ops, no reduce */
	m.f.job.parallelism.tp = 2;
	m.f.fw.moe_lb_type = MOE_LB_NONE;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux_reduce"));
	c = fixture_op(&m.o, "router_aux");
	cr_assert_not_null(c);
	cr_assert_float_eq(c->k.launches, 2, 1e-12);

	/* aux_loss with Megatron-Core's default coefficient 0: as none */
	m.f.fw.moe_lb_type = MOE_LB_AUX;
	m.f.fw.moe_aux_loss_coeff = 0;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux_reduce"));
	cr_assert_float_eq(fixture_op(&m.o, "router_aux")->k.launches, 2,
			   1e-12);

	/* a learned router: no RandomSTE */
	m.f.job.moe.routing.balance = ROUTE_RANDOM;
	moe_case_fwd(&m);
	cr_assert_null(fixture_op(&m.o, "router_aux"));
	m.f.fw.moe_aux_loss_coeff = 1e-3;
	moe_case_fwd(&m);
	cr_assert_float_eq(fixture_op(&m.o, "router_aux")->k.launches, 6,
			   1e-12);
	cr_assert_not_null(fixture_op(&m.o, "router_aux_reduce"));
	moe_case_release(&m);
}
