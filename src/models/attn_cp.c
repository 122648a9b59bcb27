/*
 * attn_cp.c - the bookkeeping kernels of Transformer Engine's p2p context
 * parallelism around the ring's attention steps (attn.c ring()).
 *
 * Source: NVIDIA/TransformerEngine v2.8 (the MLPerf Training v5.1 NeMo
 * image's pin; main @ d0067d0 the same) pytorch/attention/
 * dot_product_attention/context_parallel.py AttnFuncWithCPAndKVP2P, the
 * 16-bit fused-attention path in the sbhd / bshd layouts [S]:
 *
 * Forward. Before the first send the local K and V are packed into one
 * buffer, p2p_comm_buffers[0] = torch.cat((k.view(-1), v.view(-1))): a
 * copy of kv bytes. Each step's softmax log-sum-exp is merged into the
 * running one (flash_attn_fwd_softmax_lse_correction, torch.compile'd)
 * on the other of the two flash_attn_streams, beside the next step's
 * attention; the last merge (loop step cp) runs after the last attention.
 * Then, after the loop, one correction kernel a step rescales each
 * step's partial output by exp(lse_i - lse) and adds it up
 * (flash_attn_fwd_out_correction_init for step 0: read O_0, write O;
 * flash_attn_fwd_out_correction after it: read O and O_i, write O). The
 * outputs are the kernel's dtype (16-bit; the running O too). A rank's
 * later steps correct the whole output where they are lower-triangle
 * (i <= rank) and its second half otherwise: rank cp - 1 corrects the
 * whole output every step, and since the ring passes K/V from rank to
 * rank each layer, the layer waits for it: charged here.
 *
 * Backward. K and V are copied into the first of the two send buffers
 * (p2p_comm_buffers[0][0].copy_(kv)) before the first send. The kernel
 * returns each step's dQ, which is copied (first step) or added
 * (dq.copy_ / dq.add_) into the step's dQ; dK and dV are added into the
 * received dK/dV buffer as two kernels (dk.add_, dv.add_: attn.c's
 * cp_dkv_add). The first send carries K/V only (send_tensor[0]: no
 * dK/dV yet), the last the dK/dV only (send_tensor[1]).
 *
 * Not charged: per-step contiguous() copies (none in sbhd, Megatron's
 * layout: the half-sequence views are contiguous), the lse merges beside
 * the attention steps, and the tiny cu_seqlens / lse views.
 */
#include "layer_impl.h"

int16_t attn_cp_ring_start(struct layer_ops *o, enum layer_pass pass,
			   int bwd, double kv_B)
{
	lop_memop(o, bwd ? "cp_kv_copy" : "cp_kv_cat", pass, kv_B, kv_B, 0);
	return lop_tail(o);
}

void attn_cp_out_correct(struct layer_ops *o, enum layer_pass pass,
			 const struct layer_dims *d, double steps,
			 double out_B, double lse_B)
{
	/* init: read O_0 + 2 lse, write O; each later step: read O, O_i
	 * + 2 lse, write O; the last lse merge: read 2 lse, write lse */
	double read = (2 * steps - 1) * out_B + (2 * steps + 2) * lse_B;
	double write = steps * out_B + lse_B;
	struct layer_op *op = lop_memop(o, "cp_out_correct", pass, read, write,
					2 * steps * out_B / d->act_B);

	op->k.launches = steps + 1;
	op->host_n = (uint16_t)(steps + 1);
}

void attn_cp_dq_acc(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d, int first, double q_B)
{
	if (first)	/* dq.copy_(dq_) */
		lop_memop(o, "cp_dq_acc", pass, q_B, q_B, 0);
	else		/* dq.add_(dq_) */
		lop_memop(o, "cp_dq_acc", pass, 2 * q_B, q_B, q_B / d->act_B);
}
