/*
 * moe_router.c - the MoE router's ops (moe.c calls them): the gating
 * GEMM, the top-k, the aux-loss ops, and their backward, with the dtype
 * casts Megatron-Core's router_gating_linear runs around its GEMMs.
 *
 * Forward: the gating GEMM (T x E from h), the fused top-k on [T, E]
 * fp32 scores, the aux-loss and bookkeeping ops (framework router_ops).
 * Backward: the top-k's, the aux loss's (framework router_bwd_ops), then
 * the two gating GEMMs.
 *
 * Casts (framework router_gemm_te with a router dtype wider than the
 * activations', e.g. fp32 under bf16): Megatron-Core's
 * RouterGatingLinearFunction.backward (megatron/core/transformer/moe/
 * moe_utils.py, the same lines at NVIDIA/Megatron-LM 0d8e0714cd,
 * b0cc2706, d7288711ba and d98e8a64dd) runs, in order,
 *   grad_input  = te_general_gemm(weight.to(router_dtype), grad_output,
 *                                 router_dtype, layout="NN", grad=True)
 *   grad_weight = te_general_gemm(inp.to(router_dtype), grad_output,
 *                                 router_dtype, layout="NT", grad=True)
 *   grad_input  = grad_input[0].to(ctx.input_dtype)
 *   grad_weight = grad_weight[0].to(ctx.weight_dtype)
 * Each .to() to another dtype is a PyTorch copy kernel (ToCopy) that
 * reads the tensor at its bytes and writes it at the other's: the
 * weight [E, h] and the saved input [T, h] widened before their GEMM,
 * the two fp32 results narrowed after. The forward casts nothing (the
 * GEMM takes the 16-bit operands and writes the router dtype). Without
 * router_gemm_te (torch.mm in the router dtype) no cast is charged [?:
 * other frameworks' routers differ]. Per layer and microbatch, bf16
 * training with an fp32 router: 2 T h (2 + 4) + 2 E h (2 + 4) bytes; for
 * Qwen3-30B-A3B (h 2048, E 128) at T 4096, 101 MB + 3.1 MB.
 */
#include "layer_impl.h"

#include "config/spec_gpu.h"

/* The aux loss's token counts, summed over the ranks that share the
 * layer's tokens (framework moe_router_load_balancing_type; the group is
 * m->aux_group, -1: none). Megatron-Core's get_tokens_per_expert_and_
 * token_count (moe_utils.py @ NVIDIA/Megatron-LM d98e8a64dd, l. 269-288)
 * sums routing_map over the tokens (E int64 counts: 8 B each) and calls
 * reduce_from_tensor_model_parallel_region over reduce_group: the
 * tp_cp group for aux_loss and seq_aux_loss, tp_dp_cp for
 * global_aux_loss (router.py _apply_aux_loss, _apply_seq_aux_loss,
 * _apply_global_aux_loss); core_r0.8-0.10 call torch.distributed.
 * all_reduce on get_tensor_and_context_parallel_group() inside
 * switch_load_balancing_loss_func. A synchronous all_reduce: the compute
 * stream waits for it (LS_COMPUTE), so every member waits for the
 * slowest to route its tokens, once a forward of every MoE layer (and
 * again in a recomputed router: the aux loss runs whenever grad is
 * enabled). */
static void aux_reduce(struct layer_ops *o, enum layer_pass pass,
		       const struct moe_dims *m)
{
	if (m->aux_group < 0)
		return;
	lop_coll(o, "router_aux_reduce", pass, (enum layout_group)m->aux_group,
		 LS_COMPUTE, COLL_ALLREDUCE, m->experts * 8);
}

void moe_router_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, k = m->topk;
	struct layer_op *op;

	/* AutoModel's FakeBalancedGate: no weight, no scores, nothing flows
	 * back (constants). Its forward is six PyTorch ops on T k
	 * selections (NVIDIA-NeMo/Automodel @ 8d9bfb90e, moe/layers.py
	 * FakeBalancedGate.forward): torch.ones fp32 (write 4 B), / k (read
	 * 4, write 4), torch.arange int64 (write 8), % E (read 8, write 8),
	 * + skip_first_n_experts (0, still a kernel: read 8, write 8) and
	 * type_as(x) (read 4, write act_B): read 24 B, write 32 + act_B B a
	 * selection, 6 kernels, all contiguous; a FLOP for each of the
	 * divide, remainder and add */
	if (m->fixed_gate) {
		lop_eager(o, "router_fixed", pass, 24 * T * k,
			  T * k * (32 + d->act_B), 0, 6, 3 * T * k);
		return;
	}
	op = lop_gemm(o, "router", pass, T, E, d->hidden, 0);
	op->k.dt = m->router_fwd_dt;	/* framework router_gemm_16bit */
	op->host = HOST_OP;	/* router_gating_linear, a Python autograd op */
	lop_memop(o, "router_topk", pass, T * E * 4, T * k * 12 + T * E,
		  (m->sigmoid ? 4 : 6) * T * E);
	if (m->router_ops > 0)	/* aux losses and bookkeeping on [T, E] */
		lop_eager(o, "router_aux", pass, T * E * 4, E * 4, 0,
			  m->router_ops, T * E);
	aux_reduce(o, pass, m);
}

/* Bytes per element of the router's 16-bit operands and of its own
 * dtype when the backward casts between them (see the top), else 0. */
static double cast_bytes(const struct moe_dims *m, double *wide_B)
{
	double narrow_B = dtype_bytes((enum dtype)m->router_fwd_dt);

	*wide_B = dtype_bytes((enum dtype)m->router_dt);
	return m->router_fwd_dt != m->router_dt && *wide_B > narrow_B ?
		narrow_B : 0;
}

/* One ToCopy of n elements from from_B to to_B bytes each, issued by
 * the backward's Python code (an op: the framework's backward_op). */
static void cast_op(struct layer_ops *o, const char *name, double n,
		    double from_B, double to_B)
{
	lop_memop(o, name, PASS_BWD, n * from_B, n * to_B, 0)->host = HOST_OP;
}

/* The aux loss's backward (framework router_bwd_ops kernels, each an
 * autograd node). Megatron-Core attaches the loss to the probabilities
 * with MoEAuxLossAutoScaler (moe_utils.py @ NVIDIA/Megatron-LM 256f6065,
 * router.py attach_and_log_load_balancing_loss), so when their gradient
 * arrives autograd runs, on top of the top-k's backward:
 *   MoEAuxLossAutoScaler.backward  torch.ones_like(aux_loss) * scale:
 *                                  two one-value kernels;
 *   FusedAuxLoss.backward          tex.fused_moe_aux_loss_bwd writes the
 *                                  probabilities' gradient [T, E] in the
 *                                  scores' fp32 (4 B; nothing read but
 *                                  scalars and E counts);
 *   FusedComputeScoresForMoEAuxLoss.backward  tex.fused_score_for_moe_
 *                                  aux_loss_bwd reads the saved fp32
 *                                  scores and their gradient (4 + 4 B) and
 *                                  writes the logits' gradient in the
 *                                  logits' dtype (L B);
 *   the logits feed both the routing and the aux scores, so autograd sums
 *                                  their two gradients: read 2 L, write L.
 * (Transformer Engine v2.14 pytorch/router.py and csrc/extensions/
 * router.cpp: the scores and the intermediate are at::kFloat; the
 * logits' gradient takes ctx.logits_dtype.) Five kernels, per [T, E]
 * element read 8 + 2 L B and write 4 + 2 L B; ~5 FLOPs an element (the
 * softmax backward's product and sum, the add) [?: a count, not read
 * from the kernels]. */
static void aux_loss_bwd(struct layer_ops *o, const struct moe_dims *m)
{
	double n = m->tokens * m->experts;
	double L = dtype_bytes((enum dtype)m->router_dt);

	lop_eager(o, "router_aux_bwd", PASS_BWD, n * (8 + 2 * L),
		  n * (4 + 2 * L), 0, m->router_bwd_ops, 5 * n);
}

/* The router weight's gradient into Megatron DDP's main_grad. Megatron-
 * Core's RouterGatingLinearFunction.backward returns grad_weight, cast to
 * the weight's dtype, as an ordinary gradient (moe_utils.py @ NVIDIA/
 * Megatron-LM 256f6065, l. 1377-1381): no GEMM epilogue adds it into
 * main_grad, whatever --gradient-accumulation-fusion says (that reaches
 * only Transformer Engine's and Megatron's linear layers, which set
 * grad_added_to_main_grad). So the DDP post-hook on the weight's
 * AccumulateGrad node runs param.main_grad.add_(param.grad.data) every
 * microbatch (core/distributed/distributed_data_parallel.py @ 256f6065,
 * _make_backward_post_hook l. 448-451): one add kernel over E h, read the
 * gradient and main_grad (grad_B), write main_grad. The gradient is in
 * the parameter's dtype (layer_base_dtype, act_B: router.py creates the
 * weight in params_dtype), not the last router kernel's (an fp32 router
 * GEMM without Transformer Engine's cast op is still cast back by
 * autograd). Without a main_grad buffer (wgrad_autograd), with the
 * framework's unfused accumulation or under FSDP, as every weight. */
static void router_grad_add(struct layer_ops *o, const struct layer_dims *d,
			    double n)
{
	double out_B = d->act_B;

	if (d->autograd_wgrad || d->unfused_grad_acc || d->fsdp_n > 0) {
		lop_accumulate(o, d, n);
		return;
	}
	lop_memop(o, "main_grad_add", PASS_BWD, n * (out_B + d->grad_B),
		  n * d->grad_B, n);
}

void moe_router_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, h = d->hidden;
	double wide_B, narrow_B = cast_bytes(m, &wide_B);
	struct layer_op *op;

	if (m->fixed_gate)	/* constants: no gradient */
		return;
	lop_memop(o, "router_topk_bwd", PASS_BWD, T * E * 4 + T * m->topk * 12,
		  T * E * 4, 6 * T * E);
	if (m->router_bwd_ops > 0)
		aux_loss_bwd(o, m);
	if (narrow_B > 0)
		cast_op(o, "router_weight_cast", E * h, narrow_B, wide_B);
	op = lop_gemm(o, "router_dgrad", PASS_BWD, T, h, E, 0);
	op->k.dt = m->router_bwd_dt;
	op->host = HOST_OP;	/* router_gating_linear's backward */
	if (narrow_B > 0)
		cast_op(o, "router_input_cast", T * h, narrow_B, wide_B);
	op = lop_wgrad(o, "router_wgrad", h, E, T, 0);
	op->k.dt = m->router_bwd_dt;
	op->host = HOST_FREE;
	if (narrow_B > 0) {
		cast_op(o, "router_dgrad_cast", T * h, wide_B, narrow_B);
		cast_op(o, "router_wgrad_cast", E * h, wide_B, narrow_B);
	}
	router_grad_add(o, d, h * E);
}
