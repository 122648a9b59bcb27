/*
 * attn_cp.c - the attention core under context parallelism: Transformer
 * Engine's methods (p2p ring, all_gather, a2a, a2a+p2p) with the
 * bookkeeping kernels of its p2p ring, and PyTorch's context_parallel of
 * SDPA (framework cp_torch_sdpa). attn.c's core calls attn_cp_core
 * when cp > 1; notation as attn.c (s = S/cp tokens of each sequence on
 * one GPU, B bytes per element), its model FLOPs counted there.
 *
 * The methods, one flash call per block of the score matrix (the GPU
 * model, gpu_attention.c, costs each; Transformer Engine's
 * implementations, Megatron --cp-comm-type):
 *
 *   p2p      ring of cp steps. With load balancing each sequence is cut
 *            in 2 cp chunks of c = s/2 and rank r holds chunks r and
 *            2cp-1-r: step 0 is causal over its own 2c tokens; each
 *            later step an unmasked half block (2c queries x c keys, or
 *            c x 2c), so every rank does the same work. While step i
 *            computes, the K/V block of step i+1 moves to the next rank
 *            of the CP ring (a send/recv on the cp stream, s (k + v) B),
 *            so a step's transfer hides behind the previous step's
 *            compute when it is shorter. The partial outputs are merged
 *            with their log-sum-exps after the last step (below).
 *            Backward: the same blocks, each step passing K/V and the
 *            accumulated dK/dV on (twice the bytes), and a last
 *            transfer returns dK/dV to their owner. Without load
 *            balancing the slowest rank (the last) does a causal step and
 *            cp - 1 full s x s blocks; symmetric simulation models it.
 *   all_gather  K and V all-gathered over CP (S (k + v) B), then one
 *            causal call per local chunk against the keys up to it: c x c
 *            and c x 2cp c on rank 0 (every rank the same total); the
 *            backward re-gathers K/V and reduce-scatters dK/dV.
 *   a2a      (Ulysses) Q, K, V all-to-all over CP (each rank sends its
 *            s (q + 2 kv) B), attention over the whole sequence S with
 *            a/(t cp) heads, the output all-to-all back (s q B); the
 *            backward mirrors it.
 *   a2a+p2p  a2a inside groups of cp_a2a ranks (the heads / cp_a2a, the
 *            sequence cp_a2a s), a p2p ring over the cp / cp_a2a groups.
 *
 * Transformer Engine's p2p bookkeeping around the ring's attention steps
 * (ring_start, out_correct, dq_acc, and the dK/dV adds in ring()).
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
#include "attn_impl.h"

#include "config/spec_job.h"

/* The block step i of a ring over sequences of s tokens on this GPU
 * computes (both TE's p2p ring and PyTorch's context_parallel): step 0
 * the causal diagonal block; later steps, under causal load balancing
 * (2 cp chunks of c = s/2), half the queries against the two chunks or
 * the two chunks' queries against half the keys, which cost the same
 * unmasked c x 2c block; without it, an unmasked s x s block. */
static void ring_block(const struct layer_dims *d, double heads, int i,
		       int lb, double s, struct gpu_attn_shape *a)
{
	if (i == 0)
		attn_shape(d, d->batch, heads, s, s, 1, 0, a);
	else if (lb)
		attn_shape(d, d->batch, heads, s / 2, s, 0, 0, a);
	else
		attn_shape(d, d->batch, heads, s, s, 0, 0, a);
}

static int16_t ring_start(struct layer_ops *o, enum layer_pass pass, int bwd,
			  double kv_B)
{
	lop_memop(o, bwd ? "cp_kv_copy" : "cp_kv_cat", pass, kv_B, kv_B, 0);
	return lop_tail(o);
}

static void out_correct(struct layer_ops *o, enum layer_pass pass,
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

static void dq_acc(struct layer_ops *o, enum layer_pass pass,
		   const struct layer_dims *d, int first, double q_B)
{
	if (first)	/* dq.copy_(dq_) */
		lop_memop(o, "cp_dq_acc", pass, q_B, q_B, 0);
	else		/* dq.add_(dq_) */
		lop_memop(o, "cp_dq_acc", pass, 2 * q_B, q_B, q_B / d->act_B);
}

/* The ring of one p2p method over `ring` ranks of ring_group, each
 * holding `seq` query tokens (a2a+p2p: the inner group's gathered
 * sequence) of `heads` heads. Forward: transfer i (after the one before
 * it: a rank forwards the block it received) brings the block of step
 * i + 1; step i waits for the block of transfer i - 1. Backward: each
 * transfer also carries the dK/dV accumulated so far (the first K/V
 * only, the last dK/dV only), added (a memory-bound op) once the step's
 * own gradients are computed. Transformer Engine's copies and output
 * corrections around the steps: above. */
static void ring(struct layer_ops *o, enum layer_pass pass, int bwd,
		 const struct layer_dims *d, enum layout_group ring_group,
		 double ring, double seq, double heads, double model_flops)
{
	double kv = d->batch * seq * attn_kv_B(d) * heads / attn_heads_q(d);
	double rows = d->batch * seq * heads;
	int lb = d->cpd.load_balance, i, steps = (int)ring;
	struct gpu_attn_shape a;
	int16_t in = ring_start(o, pass, bwd, kv);
	int16_t deliver = LAYER_NONE, last = in, acc = LAYER_NONE, comm;
	const char *name = bwd ? "attn_bwd" : "attn";
	struct layer_op *op;

	for (i = 0; i < steps; i++) {
		comm = LAYER_NONE;
		if (i + 1 < steps || bwd) {
			op = lop_coll(o, bwd ? "cp_kv_dkv_sendrecv" :
				      "cp_kv_sendrecv", pass, ring_group, LS_CP,
				      COLL_SENDRECV, bwd && i > 0 &&
				      i + 1 < steps ? 2 * kv : kv);
			op->p2p_next = 1;
			op->dep[0] = deliver == LAYER_NONE ? in : deliver;
			op->dep[1] = acc;
			comm = lop_tail(o);
		}
		ring_block(d, heads, i, lb, seq, &a);
		op = attn_flash(d, o, name, pass, bwd, &a,
				i == 0 ? model_flops : -1);
		if (i > 0)	/* the ring's later steps: calls inside it */
			op->host = HOST_OP;
		op->dep[0] = last;
		op->dep[1] = deliver;
		last = lop_tail(o);
		if (bwd) {	/* dQ, then this step's dK/dV into the sum */
			dq_acc(o, pass, d, i == 0,
				       rows * attn_dim_qk(d) * d->act_B);
			op = lop_memop(o, "cp_dkv_add", pass, 2 * kv, kv,
				       kv / d->act_B);
			op->k.launches = 2;	/* dk.add_, dv.add_ */
			op->host_n = 2;
			op->dep[1] = deliver;
			acc = last = lop_tail(o);
		}
		deliver = comm;
	}
	if (bwd)	/* the last transfer brings this rank's dK/dV home */
		lop_memop(o, "cp_dkv_done", pass, kv, kv, 0)->dep[1] = deliver;
	else
		out_correct(o, pass, d, ring,
				    rows * layer_v_dim(d) * d->act_B,
				    rows * dtype_bytes(DTYPE_FP32));
}

/* All-gather of K/V, then one call per local chunk (rank 0's). */
static void all_gather(struct layer_ops *o, enum layer_pass pass, int bwd,
		       const struct layer_dims *d, double model_flops)
{
	double cp = d->cpd.cp, s = d->seq, c = s / 2, hq = attn_heads_q(d);
	double kv_total = cp * s * d->batch * attn_kv_B(d);
	const char *name = bwd ? "attn_bwd" : "attn";
	struct gpu_attn_shape a;

	lop_coll(o, "cp_kv_allgather", pass, LG_CP, LS_CP, COLL_ALLGATHER,
		 kv_total);
	if (d->cpd.load_balance) {
		attn_shape(d, d->batch, hq, c, c, 1, 0, &a);
		attn_flash(d, o, name, pass, bwd, &a, model_flops);
		attn_shape(d, d->batch, hq, c, 2 * cp * c, 1, 0, &a);
		attn_flash(d, o, name, pass, bwd, &a, -1);
	} else {	/* the last rank, the slowest: all keys */
		attn_shape(d, d->batch, hq, s, cp * s, 1, 0, &a);
		attn_flash(d, o, name, pass, bwd, &a, model_flops);
	}
	if (bwd)
		lop_coll(o, "cp_dkv_reducescatter", pass, LG_CP, LS_CP,
			 COLL_REDUCESCATTER, kv_total);
}

/* Ulysses all-to-all over `inner` ranks of group g around the core;
 * a2a+p2p runs the ring over the rest. */
static void a2a(struct layer_ops *o, enum layer_pass pass, int bwd,
		const struct layer_dims *d, double model_flops)
{
	double inner = d->cpd.a2a, heads = attn_heads_q(d) / inner;
	double tok = d->batch * d->seq;
	double qkv_B = tok * (layer_q_width(d) * (d->mla ? attn_dim_qk(d) /
			d->head_dim : 1) * d->act_B + attn_kv_B(d));
	double o_B = tok * (attn_heads_q(d) * layer_v_dim(d)) * d->act_B;
	enum layout_group g = inner == d->cpd.cp ? LG_CP : LG_CP_A2A;
	double outer = d->cpd.cp / inner;
	struct gpu_attn_shape a;

	lop_coll(o, bwd ? "cp_dout_a2a" : "cp_qkv_a2a", pass, g, LS_CP,
		 COLL_ALLTOALL, bwd ? o_B : qkv_B);
	if (outer > 1) {
		ring(o, pass, bwd, d, LG_CP_RING, outer, d->seq * inner, heads,
		     model_flops);
	} else {
		attn_shape(d, d->batch, heads, d->seq * inner, d->seq * inner,
			   1, 0, &a);
		attn_flash(d, o, bwd ? "attn_bwd" : "attn", pass, bwd, &a,
			   model_flops);
	}
	lop_coll(o, bwd ? "cp_dqkv_a2a" : "cp_out_a2a", pass, g, LS_CP,
		 COLL_ALLTOALL, bwd ? qkv_B : o_B);
}

/* PyTorch's context parallelism of SDPA (framework cp_torch_sdpa):
 * torch.distributed.tensor.experimental.context_parallel routes
 * aten._scaled_dot_product_flash_attention and its backward to
 * _templated_ring_attention(_backward) (pytorch/pytorch torch/
 * distributed/tensor/experimental/_attention.py, read @ 0123248a; the
 * same structure in the 2024-12 nightlies torchtitan's tables ran [?]).
 * It sees K and V as the model passes them to SDPA: torchtitan's
 * repeat_kv has expanded them to every query head (elementwise.
 * expand_kv), so kv below is that width. Forward: every step but the
 * last copies K and V into one buffer (torch.cat of the flattened
 * tensors); the all_gather rotater gathers it once (cp_comm_type
 * all_gather: _AllGatherRotater.exchange_buffers issues one
 * ft_c.all_gather_tensor, an asynchronous functional collective, before
 * step 0, and next_buffer waits on it at step 1, so the gather runs
 * beside step 0's SDPA on the local block), the p2p one passes it to the
 * next rank each step; step 0
 * is the causal local block, later steps one non-causal SDPA on half the
 * keys or half the queries (load balance); each later step's output and
 * log-sum-exp are merged by _SDPAMerger in fp32 (out.to(fp32), lse.to,
 * out - sigmoid(block_lse - lse) (out - block_out), lse -
 * logsigmoid(lse - block_lse): about ten kernels, on half the queries
 * then a torch.cat of the whole out and lse (_partial_update) on the
 * steps past the rank's own index, on average half), and the result is
 * cast back. Backward: dQ, dK, dV zero-filled in fp32; K/V gathered (or
 * passed) again; each step's SDPA backward gradients added into the
 * fp32 sums (a torch.cat for the partial halves), dK/dV concatenated and
 * passed to the next rank in fp32 by an all-to-all permute, the next
 * step's add waiting for it; at the end dQ and the dK/dV that arrive
 * are cast back.
 *
 * Compiled (framework cp_torch_compiled: torchtitan's apply_compile,
 * torch.compile(block, fullgraph=True) per TransformerBlock, pytorch/
 * torchtitan @ 9dec370a parallelisms/parallelize_llama.py; the CP
 * context is entered around the step, so dynamo inlines the patched
 * SDPA and AOTAutograd traces DTensor's ring handler into the block's
 * forward and backward graphs). Under tracing a functional collective
 * returns wait_tensor(result) at once (torch/distributed/
 * _functional_collectives.py _maybe_wrap_tensor: "wait_tensor() op is
 * immediately called ... Compiled tracing currently relies on the
 * compiler to perform this optimization"), and inductor moves waits only
 * with reorder_for_compute_comm_overlap, False by default (torch/
 * _inductor/config.py; torchtitan @ 9dec370a does not set it; the CP
 * graph traced in pytorch/torchtitan PR #3305 reads all_gather_into_
 * tensor, then wait_tensor on the next line): every K/V gather, p2p
 * pass and dK/dV permute holds the compute stream until it ends, the
 * next kernel waiting for it (step 0's SDPA for the gather, each later
 * backward step's for the previous permute; p2p, each step's for the
 * pass issued before it). Inductor fuses each chain of pointwise ops
 * into one kernel and computes the inputs of a torch.cat straight into its
 * output (config.py max_pointwise_cat_inputs): a merge is one kernel
 * reading the running fp32 output and the step's output (on average
 * 0.75 O of them: half the steps update half the queries) and, on those
 * partial steps, copying the other half into the new tensor, and writing
 * the whole fp32 output once (the last merge writes it in the output's
 * dtype: the cast fused); the zero-filled fp32 sums fold into the first
 * step's add; each step's dK/dV sum is written straight into the buffer
 * the permute sends (no separate cat). The all_gather rotater ignores
 * every buffer after the first (exchange_buffers gathers once), so the
 * torch.cat of K and V at later steps is dead code: one cat a call. */
static void torch_cp(struct layer_ops *o, enum layer_pass pass, int bwd,
		     const struct layer_dims *d, double model_flops)
{
	double cp = d->cpd.cp, s = d->seq, A = d->act_B;
	double hq = attn_heads_q(d);
	double hk = d->expand_kv && !d->mla ? hq : attn_heads_kv(d);
	double kv_el = d->batch * s * hk * (attn_dim_qk(d) + layer_v_dim(d));
	double Q = d->batch * s * hq * attn_dim_qk(d);
	double O = d->batch * s * hq * layer_v_dim(d);
	int lb = d->cpd.load_balance, ag = d->cpd.comm == CP_ALLGATHER;
	int cc = d->cpd.compiled, i, steps = (int)cp;
	/* compiled: one K/V cat under all_gather (the later ones dead) */
	double cats = cc && ag ? 1 : cp - 1;
	const char *name = bwd ? "attn_bwd" : "attn";
	int16_t in = lop_tail(o), last, kv_ready = in, dkv = LAYER_NONE;
	struct gpu_attn_shape a;
	struct layer_op *op;

	if (bwd && !cc) {	/* grad_query, grad_key, grad_value:
				 * zeros_like, fp32 */
		op = lop_memop(o, "cp_grad_zero", pass, 0, 4 * (Q + kv_el), 0);
		op->k.launches = 3;
		op->host_n = 3;
	}
	op = lop_memop(o, "cp_kv_cat", pass, cats * kv_el * A,
		       cats * kv_el * A, 0);
	op->k.launches = (int)cats;
	op->host_n = (uint16_t)cats;
	last = lop_tail(o);
	if (ag) {	/* asynchronous: step 0 runs on the local block */
		lop_coll(o, "cp_kv_allgather", pass, LG_CP, LS_CP,
			 COLL_ALLGATHER, cp * kv_el * A);
		kv_ready = lop_tail(o);
	}
	for (i = 0; i < steps; i++) {
		int16_t wait;	/* the collective step i's SDPA waits for */

		/* p2p: the block of the rank before; eager, the one step i
		 * uses (passed beside step i - 1); compiled, step i + 1's,
		 * issued before step i (where torch issues it) and waited at
		 * once */
		if (!ag && (cc ? i + 1 < steps : i > 0)) {
			op = lop_coll(o, "cp_kv_sendrecv", pass, LG_CP, LS_CP,
				      COLL_SENDRECV, kv_el * A);
			op->p2p_next = 1;
			op->dep[0] = kv_ready;
			kv_ready = lop_tail(o);
		}
		if (!cc)
			wait = i > 0 ? kv_ready : in;
		else	/* the CP stream's last call (a FIFO: all before
			 * it done): the gather or pass just issued, or in
			 * the backward the previous step's dK/dV permute */
			wait = bwd && i > 0 && (ag || i + 1 == steps) ?
			       dkv : kv_ready;
		ring_block(d, hq, i, lb, s, &a);
		op = attn_flash(d, o, name, pass, bwd, &a,
				i == 0 ? model_flops : -1);
		op->host = HOST_OP;
		op->dep[0] = last;
		op->dep[1] = wait;
		last = lop_tail(o);
		if (!bwd) {
			if (i == 0)
				continue;
			if (cc) {	/* one fused kernel (above) */
				op = lop_memop(o, "cp_sdpa_merge", pass,
					       0.75 * (4 + A) * O + O,
					       (i + 1 < steps ? 4 : A) * O,
					       3 * O);
				last = lop_tail(o);
				continue;
			}
			/* full merge: reads O A + 20 O, writes 16 O; a
			 * partial one half that and a cat of out (4 O) */
			op = lop_memop(o, "cp_sdpa_merge", pass,
				       0.75 * (O * A + 20 * O) + 2 * O,
				       0.75 * 16 * O + 2 * O, 3 * O);
			op->k.launches = 11;
			op->host_n = 11;
			last = lop_tail(o);
			continue;
		}
		if (cc) {
			/* fused: dQ's sum and dK/dV's, written into the
			 * buffer sent on; step 0 adds to no sum (the zeros
			 * fold), later steps read the fp32 sums and the
			 * step's gradients (0.75 of them on average: one of
			 * dQ, dK/dV is half) */
			op = lop_memop(o, "cp_grad_accum", pass,
				       (i > 0 ? 4 + 0.75 * A : A) * (Q + kv_el),
				       4 * (Q + kv_el), Q + kv_el);
			op->k.launches = 2;
			op->host_n = 2;
		} else {
			/* dK/dV and dQ into the fp32 sums (+= of the bf16
			 * step gradients; the partial half's cat on average
			 * half the steps), after the sum from the rank
			 * before arrived */
			op = lop_memop(o, "cp_grad_accum", pass,
				       (4 + A) * (Q + kv_el) +
				       (i > 0 ? 2 * (Q + kv_el) : 0),
				       4 * (Q + kv_el) +
				       (i > 0 ? 2 * (Q + kv_el) : 0),
				       Q + kv_el);
			op->k.launches = i > 0 ? 4 : 3;
			op->host_n = (uint16_t)op->k.launches;
		}
		op->dep[1] = dkv;
		last = lop_tail(o);
		/* cat(dK, dV) in fp32 (eager), then the permute to the
		 * next rank */
		if (!cc)
			lop_memop(o, "cp_dkv_cat", pass, 4 * kv_el, 4 * kv_el,
				  0);
		op = lop_coll(o, "cp_dkv_sendrecv", pass, LG_CP, LS_CP,
			      COLL_SENDRECV, 4 * kv_el);
		op->p2p_next = 1;
		dkv = lop_tail(o);
		/* the next step's SDPA does not wait for the permute
		 * (compiled: it does, above) */
	}
	if (bwd) {	/* dQ and the arriving dK/dV back to bf16 */
		op = lop_memop(o, "cp_grad_cast", pass, 4 * (Q + kv_el),
			       A * (Q + kv_el), 0);
		op->k.launches = 2;
		op->host_n = 2;
		op->dep[0] = last;
		op->dep[1] = dkv;
	} else if (!cc) {	/* compiled: fused into the last merge */
		op = lop_memop(o, "cp_out_cast", pass, 4 * O, A * O, 0);
		op->k.launches = 2;
		op->host_n = 2;
	}
}

void attn_cp_core(struct layer_ops *o, enum layer_pass pass, int bwd,
		  const struct layer_dims *d, double model_flops)
{
	if (d->cpd.torch) {
		torch_cp(o, pass, bwd, d, model_flops);
		return;
	}
	switch (d->cpd.comm) {
	case CP_P2P:
		ring(o, pass, bwd, d, LG_CP, d->cpd.cp, d->seq, attn_heads_q(d),
		     model_flops);
		return;
	case CP_ALLGATHER:
		all_gather(o, pass, bwd, d, model_flops);
		return;
	default:
		a2a(o, pass, bwd, d, model_flops);
		return;
	}
}
