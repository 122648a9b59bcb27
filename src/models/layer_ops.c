/*
 * layer_ops.c - building blocks of layer op lists: kernels, collectives,
 * norms, residual adds, and the column- and row-parallel GEMMs with their
 * tensor-parallel collectives (the arithmetic is in layer.c's header; the
 * casts and FP8 transposes are in layer_cast.c; appending an op is
 * layer_list.c's). Shared by layer.c,
 * attn.c and moe.c through layer_impl.h.
 */
#include "layer_impl.h"

#include <math.h>

#include "config/spec_job.h"

/* ---- forward pieces ---- */

/* A norm opens a module call: Megatron-Core's Transformer Engine layer
 * spec builds every standalone norm as TENorm (input_layernorm of MLA
 * layers, pre_mlp_layernorm of MoE layers, the final and MTP norms), and
 * fuses the others into the next linear's TELayerNormColumnParallelLinear
 * (input_layernorm and pre_mlp_layernorm are IdentityOp for GQA
 * attention and a dense MLP), whose call launches the norm first
 * (gpt_layer_specs.py get_gpt_layer_with_transformer_engine_submodules,
 * NVIDIA/Megatron-LM @ d7288711ba) [D]; lop_norm_linear marks that. */
void lop_norm_fwd(struct layer_ops *o, const char *name,
		     enum layer_pass pass, const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden, B = d->act_B;

	if (d->eager_norm) {	/* lop_norm_bwd has the account */
		lop_eager(o, name, pass, 2 * n * B + 16 * n, 2 * n * B + 12 * n,
			  0, 8, NORM_FLOPS * n);
		return;
	}
	lop_memop(o, name, pass, n * d->act_B, n * d->act_B, NORM_FLOPS * n)
		->host = HOST_MODULE;
}

/* The linear pushed from index `from` on is the LayerNormLinear whose
 * call the norm before it opened: the op that would open its own call
 * (its cast, or its GEMM) is launched inside the norm's. */
void lop_norm_linear(struct layer_ops *o, int16_t from)
{
	int16_t i;

	for (i = from; i < o->n; i++)
		if (o->op[i].host == HOST_MODULE) {
			o->op[i].host = HOST_FREE;
			return;
		}
}

void lop_add_fwd(struct layer_ops *o, const char *name,
		    enum layer_pass pass, const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;
	double mask = d->dropout ? n : 0;

	lop_memop(o, name, pass, 2 * n * d->act_B, n * d->act_B + mask,
	      ADD_FLOPS * n);
}

/* The GEMM just pushed runs inside the module call its cast opened
 * (lowp), or opens it. */
static void in_module(struct layer_ops *o, int lowp)
{
	o->op[o->n - 1].host = lowp ? HOST_FREE : HOST_MODULE;
}

/* A sequence-parallel all-gather that feeds GEMM piece i of c, bytes
 * the gathered tensor, before the op the first piece waits for. With
 * overlap (c > 1) it is Transformer Engine's userbuffers ring exchange
 * (Megatron-Core's default for the qkv/fc1 forward and proj/fc2 dgrad
 * all-gathers): split_overlap_ag runs GEMM piece 0 on the local shard
 * (_ubufs[send_chunk_id], send_chunk_id = _tp_id at i 0) at once, while
 * the first send/recv starts on its own streams, and GEMM piece i + 1
 * waits for step i's receive (cudaStreamWaitEvent(_stream_compute[(i +
 * 1) % ...], _stop_recv)); tp - 1 steps of one shard each, the GEMM in
 * tp pieces (NVIDIA/TransformerEngine @ 9746498e transformer_engine/
 * pytorch/csrc/comm_gemm_overlap.h UbufP2PCommOverlap::split_overlap_ag,
 * the non-aggregate path; aggregate is off in TE's default ub config).
 * torch's micro-pipelined TP (torchtitan's async TP: symm_mem
 * fused_all_gather_matmul) likewise consumes the local shard first, then
 * copies and consumes the tp - 1 remote ones (pytorch/pytorch @ 0e9ed9cf
 * torch/distributed/_symmetric_memory/__init__.py
 * _pipelined_multi_all_gather_and_consume: shard_consumer(shard, rank)
 * before the remote steps).
 * Here piece 0 has no all-gather, and pieces 1 .. c - 1 each gather
 * bytes / (c - 1): an all-gather of B bytes brings B (tp - 1) / tp to a
 * rank, so the c - 1 pieces move the tensor's (tp - 1) / tp, one shard
 * each when c = tp. Without overlap, one all-gather before the GEMM. */
static void gather_piece(struct layer_ops *o, const char *name,
			 enum layer_pass pass, const struct layer_dims *d,
			 double bytes, int i, int c, int16_t before)
{
	struct layer_op *op;

	if (c > 1 && i == 0)	/* the local shard */
		return;
	op = lop_tpcoll(o, name, pass, d, COLL_ALLGATHER,
			c > 1 ? bytes / (c - 1) : bytes);
	if (op)		/* the TP stream keeps the later pieces in order */
		op->dep[0] = i <= 1 ? before : LAYER_NONE;
}

/* Before a torch fused_all_gather_matmul (async TP: sp_copy, chunks >
 * 1) consumes its local shard: each rank copies the shard into its own
 * symmetric-memory buffer, where the peers read it, and all ranks
 * barrier; only then do the local consumer and the remote copies start
 * (pytorch/pytorch torch/distributed/_symmetric_memory/__init__.py
 * _pipelined_multi_all_gather_and_consume: copy_shard(dst=
 * local_p2p_bufs, src=shard); symm_mem.barrier(channel=1); then
 * shard_consumer(shard, rank). Its note: "we are giving up the chance to
 * overlap 'mv' and 'b' with the first shard_consumer for now" [?: read
 * at a later commit than the rows' 38410cf9]). A copy on the compute
 * stream, shard_B read and written; the pieces' gathers wait for it.
 * The barrier's latency is not modelled, nor the copy of the local
 * shard into the gathered output (ag_out_needed), which runs beside the
 * last remote shard's consumer. Returns the op to wait for: the copy,
 * or before when there is none. */
static int16_t symm_local_copy(struct layer_ops *o, enum layer_pass pass,
			       const struct layer_dims *d, double shard_B,
			       int16_t before)
{
	if (!d->sp_copy || d->chunks <= 1)
		return before;
	lop_memop(o, "symm_mem_local_copy", pass, shard_B, shard_B, 0);
	return lop_tail(o);
}

/* ---- sequence parallelism as PyTorch DTensor runs it (sp_copy) ----
 *
 * torchtitan's TP plan (pytorch/torchtitan @ 820504e2 torchtitan/models/
 * llama3/parallelize_llama.py apply_tp, the same @ 9dec370a) keeps the
 * residual stream sharded on dim 1 of [batch, seq, hidden]
 * (SequenceParallel norms, PrepareModuleInput Shard(1) -> Replicate
 * before the column-parallel linears, RowwiseParallel(output_layouts=
 * Shard(1))). DTensor's Shard(1) -> Replicate is funcol.all_gather_tensor
 * (gather_dim=1), which gathers on dim 0 and then copies the chunks into
 * place: torch.cat(torch.chunk(res, group_size, dim=0), dim=gather_dim);
 * Partial -> Shard(1) is funcol.reduce_scatter_tensor(scatter_dim=1),
 * which first copies its input into dim-0 order: torch.cat(torch.chunk(
 * self, group_size, dim=scatter_dim)) (torch/distributed/
 * _functional_collectives.py; the batch-1 all-gather became a view only
 * in pytorch PR #169404, 2025-12, after the rows' torch builds). The
 * plan's own note: folding batch and sequence would avoid "an extra
 * aten.cat after each collective" (torchtitan PR #437: "these two cats
 * take about 0.18 ms out of 3 ms of FFN compute (6%)", 8K tokens on
 * H100). Here: a copy of the gathered tensor (n elements of B bytes read
 * and written) after each SP all-gather and before each SP
 * reduce-scatter, forward and backward. The dgrads summed before the
 * input gradient's reduce-scatter (wq wk wv, w1 w3) are separate GEMMs
 * in torchtitan; llmsim's one fused dgrad has no sum, so the copy there
 * is the cat alone [?: inductor fuses the sum into the cat]. Async TP
 * (torch._inductor micro-pipeline TP, chunks > 1) replaces all-gather +
 * cat + mm by symm_mem.fused_all_gather_matmul, which writes each
 * shard's output in place (no copy), and mm + cat + reduce-scatter by
 * fused_matmul_reduce_scatter, whose partial products are exchanged and
 * then summed "in a single reduction kernel" (reduce_fn over the stacked
 * partials: tp x n/tp elements read, n/tp written; pytorch/pytorch
 * @ 006b161f torch/distributed/_symmetric_memory/__init__.py
 * _fused_matmul_reduce_scatter_impl [?: read at a later commit than the
 * rows' 38410cf9 / 1963fc83]). */
static void sp_seq_copy(struct layer_ops *o, enum layer_pass pass,
			const struct layer_dims *d, double n, double B)
{
	if (d->sp_copy)
		lop_memop(o, "sp_seq_copy", pass, n * B, n * B, 0);
}

/* After the pieces of an async-TP forward reduce-scatter of n elements:
 * the kernel summing the tp partial shards, n read, n / tp written. */
static void sp_async_reduce(struct layer_ops *o, enum layer_pass pass,
			    const struct layer_dims *d, double n)
{
	if (d->sp_copy && d->chunks > 1)
		lop_memop(o, "sp_rs_reduce", pass, n * d->act_B,
			  n * d->act_B / d->tp, n);
}

/* Input side of a column-parallel GEMM: [cast], [SP all-gather], GEMM of
 * n outputs from k inputs (h, or a latent's width). With overlap, GEMM
 * piece 0 runs on the local shard and all-gather piece i feeds GEMM
 * piece i (gather_piece); the streams keep the pieces in order. */
void lop_column_fwd(struct layer_ops *o, const char *cast_name,
		    const char *ag_name, const char *name,
		    enum layer_pass pass, const struct layer_dims *d,
		    double n, double k, int lowp)
{
	const char *const names[1] = { name };
	struct lin_parts p = { 1, names, NULL, NULL, { n, 0, 0 } };

	lop_column_fwd_parts(o, cast_name, ag_name, &p, pass, d, k, lowp);
}

static double parts_width(const struct lin_parts *p)
{
	double n = 0;
	int i;

	for (i = 0; i < p->n; i++)
		n += p->w[i];
	return n;
}

/* The parts' GEMMs over rows t (separate modules: each opens its call,
 * but in the pieces after the first), each after its weight's cast in
 * the first piece (torchao: lop_weight_cast_call). */
static void parts_gemms(struct layer_ops *o, const struct lin_parts *p,
			enum layer_pass pass, const struct layer_dims *d,
			double t, double k, int lowp, int piece)
{
	int j;

	for (j = 0; j < p->n; j++) {
		if (piece == 0)
			lop_weight_cast_call(o, pass, d, lowp, p->w[j] * k);
		lop_gemm(o, p->fwd[j], pass, t, p->w[j], k, lowp);
		in_module(o, lowp || piece > 0);
	}
}

void lop_column_fwd_parts(struct layer_ops *o, const char *cast_name,
			  const char *ag_name, const struct lin_parts *p,
			  enum layer_pass pass, const struct layer_dims *d,
			  double k, int lowp)
{
	double t = layer_tokens(d), n = parts_width(p);
	double ag_B = t * k * (lowp ? d->lowp_B : d->act_B);
	int16_t before;
	int i;

	lop_cast_before_gather(o, cast_name, pass, d, lowp, layer_sp_tokens(d) * k);
	lop_sp_amax_reduce(o, pass, d, lowp);
	if (!d->sp) {
		lop_swizzle(o, pass, d, lowp, n * k, t * k, 1, 1);
		parts_gemms(o, p, pass, d, t, k, lowp, 0);
		return;
	}
	before = symm_local_copy(o, pass, d, ag_B / d->tp, lop_tail(o));
	for (i = 0; i < d->chunks; i++) {
		gather_piece(o, ag_name, pass, d, ag_B, i, d->chunks, before);
		if (d->chunks == 1)
			sp_seq_copy(o, pass, d, t * k,
				    lowp ? d->lowp_B : d->act_B);
		if (i == 0)	/* the gathered input's, once a call */
			lop_swizzle(o, pass, d, lowp, n * k, t * k, 1, 1);
		parts_gemms(o, p, pass, d, t / d->chunks, k, lowp, i);
	}
}

/* Output side of a row-parallel GEMM: [cast], GEMM of h outputs from k
 * inputs, then the all-reduce (reduce-scatter with SP). With overlap,
 * piece i of the reduce-scatter moves while GEMM piece i+1 runs. */
void lop_row_fwd(struct layer_ops *o, const char *cast_name,
		    const char *name, const char *coll_name,
		    enum layer_pass pass, const struct layer_dims *d,
		    double k)
{
	double t = layer_tokens(d), h = d->hidden;
	int c = d->sp ? d->chunks : 1;
	int16_t before;
	int i;

	lop_cast_row_input(o, cast_name, pass, d, t * k);
	lop_swizzle(o, pass, d, d->lowp, h * k, t * k, 1, 1);
	lop_weight_cast_call(o, pass, d, d->lowp, h * k);
	before = lop_tail(o);
	o->row_gemm_at = o->n;
	for (i = 0; i < c; i++) {
		lop_gemm(o, name, pass, t / c, h, k, d->lowp)->dep[0] =
			i == 0 ? before : LAYER_NONE;
		in_module(o, d->lowp || i > 0);
		if (c == 1)
			sp_seq_copy(o, pass, d, t * h, d->act_B);
		lop_tpcoll(o, coll_name, pass, d,
		       d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE,
		       t * h * d->act_B / c);
	}
	sp_async_reduce(o, pass, d, t * h);
}

/* A bias of n elements on `tokens` rows as its own kernels (bias_kernels
 * holds `which`: LAYER_BIAS_ATTN for q/k/v and the output projection,
 * LAYER_BIAS_MLP for fc1 and fc2): forward, the output + bias (read and
 * write the output; the bias is noise); backward, its gradient summed
 * over the tokens (read the output gradient), then added into main_grad
 * (lop_param_grad_add). */
void lop_bias(struct layer_ops *o, const char *name, enum layer_pass pass,
	      const struct layer_dims *d, int which, double tokens, double n)
{
	double x = tokens * n * d->act_B;

	if (!(d->bias_kernels & which))
		return;
	if (pass == PASS_BWD) {
		lop_memop(o, name, pass, x, n * d->act_B, ADD_FLOPS * tokens * n);
		lop_param_grad_add(o, d, "bias_grad_add", n, 1);
	} else
		lop_memop(o, name, pass, x, x, ADD_FLOPS * tokens * n);
}

/* ---- backward pieces ---- */

/* The wgrad GEMM just pushed adds its n elements, of w weight tensors,
 * into the gradient buffer. Fused (Megatron's gradient accumulation
 * fusion, the default): it reads and writes them there in its epilogue,
 * 2 n G bytes on the GEMM. Unfused: the GEMM writes dW in its output
 * dtype (O bytes: the 16-bit base, or the GEMM's explicit dtype, fp32
 * for the router) and each weight's main_grad.add_(grad) is one
 * elementwise kernel reading dW and the buffer and writing the buffer,
 * n (O + G) read, n G written, one add per element, w kernels (one
 * Python call each, from the parameter's backward hook). Under torch
 * FSDP (d->fsdp_n) the wgrad is autograd's: a plain GEMM writes dW and
 * the unit's flat-gradient passes (layer.c fsdp_passes) accumulate it.
 * Without a main_grad (framework wgrad_autograd: plain PyTorch,
 * FSDP2) the same plain GEMM, and AccumulateGrad takes its dW (steals
 * it on a step's first microbatch; later ones' adds are not modelled). */
void lop_accumulate_w(struct layer_ops *o, const struct layer_dims *d,
		      double n, double w)
{
	struct kern *k = &o->op[o->n - 1].k;
	struct layer_op *op;
	double out_B;

	/* FSDP's units (fsdp_passes) take the fresh dW: the GEMM stores it
	 * like any GEMM, beta 0, and accumulates nothing */
	if (d->autograd_wgrad || (!d->unfused_grad_acc && d->fsdp_n > 0))
		return;
	if (!d->unfused_grad_acc) {
		k->accum_B = 2 * n * d->grad_B;
		return;
	}
	out_B = k->dt >= 0 ? dtype_bytes((enum dtype)k->dt) : d->act_B;
	op = lop_memop(o, "main_grad_add", PASS_BWD, n * (out_B + d->grad_B),
		       n * d->grad_B, n);
	op->k.launches = w;
	op->host_kernels = (uint16_t)(w - 1);
}

void lop_accumulate(struct layer_ops *o, const struct layer_dims *d,
		       double n)
{
	lop_accumulate_w(o, d, n, 1);
}

/* An RMS norm as PyTorch ops (elementwise.eager_norm): torchtitan's
 * RMSNorm, output = (x32 * rsqrt(x32.pow(2).mean(-1) + eps)).type_as(x)
 * * weight with x32 = x.float() (pytorch/torchtitan @ 9dec370a
 * torchtitan/models/norms.py RMSNorm), n elements of B bytes. Forward,
 * eight kernels: x.float() (r nB, w 4n), pow (r 4n, w 4n), mean (r 4n),
 * + eps and rsqrt (a row each), x32 * r (r 4n, w 4n), type_as (r 4n, w
 * nB), * weight (r nB, w nB): r 2nB + 16n, w 2nB + 12n. Backward as
 * autograd derives it, about twelve: * weight's dx (r nB, w nB) and
 * dweight (g * out, r 2nB, w nB, then its sum, r nB), type_as's (r nB,
 * w 4n), x32 * r's dx part (r 4n, w 4n) and dr (g x32, r 8n, w 4n, sum
 * r 4n), pow's 2 x dy (r 4n, w 4n), the two dx parts added (r 8n, w 4n),
 * x.float()'s (r 4n, w nB): r 5nB + 32n, w 3nB + 20n [D]. The fp32 copy
 * autograd keeps is not in the footprint [?]. */
void lop_norm_bwd(struct layer_ops *o, const char *name,
		     const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;
	double mask = d->dropout ? n : 0;

	struct layer_op *op;

	if (d->eager_norm) {
		lop_eager(o, name, PASS_BWD, 5 * n * d->act_B + 32 * n + mask,
			  3 * n * d->act_B + 20 * n, 0, 12, NORM_FLOPS * n);
		return;
	}

	/* x and dy in (again for dgamma when it is a second kernel), dx out */
	op = lop_memop(o, name, PASS_BWD, 2 * d->norm_bwd_passes * n *
		       d->act_B + mask, n * d->act_B, NORM_FLOPS * n);
	op->k.launches = d->norm_bwd_passes;
}

void lop_residual_grad(struct layer_ops *o, const char *name,
		       const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;

	lop_memop(o, name, PASS_BWD, 2 * n * d->act_B, n * d->act_B,
		  ADD_FLOPS * n);
}

struct layer_op *lop_eager(struct layer_ops *o, const char *name,
			   enum layer_pass pass, double read_B, double write_B,
			   double strided_B, double k, double flops)
{
	struct layer_op *op = lop_memop(o, name, pass, read_B, write_B, flops);

	op->k.launches = k;
	op->k.strided_B = strided_B;
	op->host_n = (uint16_t)(k > 1 ? k : 1);
	return op;
}

/* Row-parallel GEMM (k inputs -> h outputs) backward: [SP all-gather of
 * the output gradient, pieces pipelined with dgrad under overlap, the
 * first dgrad piece on the local shard: gather_piece], [cast],
 * dgrad (T, k, h), wgrad (k, h, T). */
void lop_row_bwd(struct layer_ops *o, const char *ag_name,
		    const char *cast_name, const char *dgrad,
		    const char *wgrad, const struct layer_dims *d, double k)
{
	double t = layer_tokens(d), h = d->hidden;
	double el_B = d->lowp ? d->lowp_B : d->act_B;
	int c = d->sp ? d->chunks : 1;
	int16_t before;
	int i;

	/* with SP, quantize the local shard and gather low-precision */
	lop_cast_before_gather(o, cast_name, PASS_BWD, d, d->lowp,
			   layer_sp_tokens(d) * h);
	lop_sp_amax_reduce(o, PASS_BWD, d, d->lowp);
	before = lop_tail(o);	/* the gather need not wait for the swizzle */
	if (d->sp)
		before = symm_local_copy(o, PASS_BWD, d, t * h * el_B / d->tp,
					 before);
	lop_weight_transpose(o, d, d->lowp, k * h);
	lop_swizzle(o, PASS_BWD, d, d->lowp, k * h, t * h, 1, 1);
	for (i = 0; i < c; i++) {
		if (d->sp)
			gather_piece(o, ag_name, PASS_BWD, d, t * h * el_B, i,
				     c, before);
		if (c == 1)
			sp_seq_copy(o, PASS_BWD, d, t * h, el_B);
		lop_gemm(o, dgrad, PASS_BWD, t / c, k, h, d->lowp);
		in_module(o, d->lowp || i > 0);
	}
	lop_gathered_transpose(o, "fp8_grad_transpose", d, d->lowp, t, h,
			   lop_tail(o));
	lop_row_input_transpose(o, d, d->lowp, t, k);
	lop_swizzle(o, PASS_BWD, d, d->lowp, 0, t * (k + h), 2, 1);
	lop_wgrad(o, wgrad, k, h, t, d->lowp);
	in_module(o, 1);
	lop_accumulate(o, d, k * h);
}

/* The input gradient's all-reduce (reduce-scatter with SP) of n
 * elements: its index, or LAYER_NONE without TP. */
static int16_t grad_reduce(struct layer_ops *o, const char *name,
			   const struct layer_dims *d, double n, int summed)
{
	/* before DTensor's reduce-scatter (sp_seq_copy); the parts' sum
	 * writes in its order */
	if (d->tp > 1 && !summed)
		sp_seq_copy(o, PASS_BWD, d, n, d->act_B);
	if (!lop_tpcoll(o, name, PASS_BWD, d,
			d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE,
			n * d->act_B))
		return LAYER_NONE;
	return lop_tail(o);
}

/* Column-parallel GEMM (k inputs -> n outputs) backward: [cast], [SP
 * re-gather of the input, during dgrad (framework sp_backward_regather;
 * DTensor's autograd saves the gathered input, or torchtitan's selective
 * recomputation gathers it again before the backward)], dgrad (T, k, n),
 * the input
 * gradient's all-reduce (reduce-scatter with SP) during wgrad (k, n, T),
 * or after it and the accumulation (framework tp_dgrad_serial: autograd
 * ran the linear's node, dgrad and wgrad, before the all-reduce's; NVIDIA/
 * Megatron-LM @ 50a4b5fa megatron/mpu/layers.py ColumnParallelLinear,
 * F.linear after copy_to_tensor_model_parallel_region). Returns the
 * reduction's index (LAYER_NONE without TP): what comes next (the norm
 * backward) waits for it besides the wgrad. */
int16_t lop_column_bwd(struct layer_ops *o, const char *ag_name,
		       const char *cast_name, const char *dgrad,
		       const char *coll_name, const char *wgrad,
		       const struct layer_dims *d, double n, double k, int lowp)
{
	const char *const dg[1] = { dgrad }, *const wg[1] = { wgrad };
	struct lin_parts p = { 1, NULL, dg, wg, { n, 0, 0 } };

	return lop_column_bwd_parts(o, ag_name, cast_name, coll_name, &p, d,
				    k, lowp);
}

/* Separate linears on one input (split_linears): autograd sums their
 * input gradients, t x k each. torch.compile's backward graph adds them
 * in one kernel, and under DTensor SP the same kernel writes the sum in
 * the reduce-scatter's order (the copy, sp_seq_copy): p->n of them read,
 * one written [?: inductor fuses the adds with the cat; eager autograd
 * would add them pairwise, p->n - 1 kernels]. */
static int parts_sum(struct layer_ops *o, const struct lin_parts *p,
		     const struct layer_dims *d, double t, double k)
{
	if (p->n < 2)
		return 0;
	lop_memop(o, "dgrad_sum", PASS_BWD, p->n * t * k * d->act_B,
		  t * k * d->act_B, (p->n - 1) * t * k);
	return 1;
}

int16_t lop_column_bwd_parts(struct layer_ops *o, const char *ag_name,
			     const char *cast_name, const char *coll_name,
			     const struct lin_parts *p,
			     const struct layer_dims *d, double k, int lowp)
{
	double t = layer_tokens(d), n = parts_width(p);
	const char *wgrad = p->wgrad[0];
	struct layer_op *op;
	int16_t before, ag = LAYER_NONE, dg, red = LAYER_NONE;
	int j, summed;

	lop_cast(o, cast_name, PASS_BWD, d, lowp, t * n);
	/* torchao: each part's output gradient a Shard(-1) DTensor */
	lop_dtensor_amax_reduce(o, PASS_BWD, d, lowp, p->n);
	lop_weight_transpose(o, d, lowp, n * k);
	lop_swizzle(o, PASS_BWD, d, lowp, n * k, t * n, 1, 1);
	before = lop_tail(o);
	if (d->sp_regather && wgrad) {
		lop_tpcoll(o, ag_name, PASS_BWD, d, COLL_ALLGATHER,
			   t * k * (lowp ? d->lowp_B : d->act_B));
		ag = lop_tail(o);
	}
	for (j = 0; j < p->n; j++) {
		op = lop_gemm(o, p->dgrad[j], PASS_BWD, t, k, p->w[j], lowp);
		if (j == 0)
			op->dep[0] = before;
		in_module(o, lowp);
	}
	summed = parts_sum(o, p, d, t, k);
	dg = lop_tail(o);
	if (!d->dgrad_serial || !wgrad)
		red = grad_reduce(o, coll_name, d, t * k, summed);
	if (!wgrad)
		return red;
	if (d->sp_regather)	/* the gathered input's transpose, after the gather */
		ag = lop_gathered_transpose(o, "fp8_input_transpose", d, lowp, t,
					k, ag);
	else if (d->sp && d->fp8_wcall) { /* torchao: of the saved gathered input */
		int16_t x = lop_gathered_transpose(o, "fp8_input_transpose", d,
						   lowp, t, k, dg);
		if (x != dg)
			ag = x;
	}
	op = lop_swizzle(o, PASS_BWD, d, lowp, 0, t * (k + n), 2, 1);
	if (op)		/* after the dgrad, not the reduction */
		op->dep[0] = dg;
	for (j = 0; j < p->n; j++) {
		op = lop_wgrad(o, p->wgrad[j], k, p->w[j], t, lowp);
		op->host = HOST_FREE;
		if (j == 0) {
			op->dep[0] = dg;
			op->dep[1] = ag;
		}
		lop_accumulate(o, d, k * p->w[j]);
	}
	if (d->dgrad_serial)	/* autograd: after the linear's whole node */
		red = grad_reduce(o, coll_name, d, t * k, summed);
	return red;
}

/* The norm backward (width h) after a column-parallel GEMM's backward,
 * waiting for its input-gradient reduction red as well. */
void lop_norm_bwd_after(struct layer_ops *o, const char *name,
			const struct layer_dims *d, int16_t red)
{
	lop_norm_bwd(o, name, d);
	o->op[o->n - 1].dep[1] = red;
	lop_norm_grad_add(o, d, d->hidden, 1);
}

/* A norm's parameter gradients into the gradient buffer: k norms of n
 * elements each, d->norm_tensors tensors a norm (RMSNorm: gamma;
 * LayerNorm: gamma and beta). Transformer Engine's norms (the
 * LayerNormLinear's layer_norm_weight, TENorm's RMSNorm and LayerNorm)
 * and apex's return dgamma (dbeta) from their autograd function as the
 * parameter's plain gradient: Megatron's gradient accumulation fusion
 * reaches only the linears' weights (their wgrad GEMM's epilogue), so
 * Megatron DDP's backward post-hook adds it into main_grad every
 * microbatch, param.main_grad.add_(param.grad.data), then param.grad =
 * None (megatron/core/distributed/distributed_data_parallel.py
 * _make_backward_post_hook, NVIDIA/Megatron-LM @ 256f6065 l. 448-451;
 * the router weight's, moe_router.c, is the same add): one elementwise
 * kernel a tensor, its 16-bit gradient and the fp32 buffer read, the
 * buffer written; each tensor its own hook call, so its own op. The
 * adds are launch-bound (a Qwen3 layer's are 2048- and 128-element
 * tensors). Without a main_grad buffer (wgrad_autograd: AccumulateGrad
 * steals the gradient on a step's first microbatch) and under torch
 * FSDP's flat gradients, none, as lop_accumulate_w. In a captured scope
 * the adds are counted as captured [?]: the hook returns while a graph
 * is being captured (is_graph_capturing) and runs eagerly after the
 * graphed callable's backward, one host call a tensor not charged. */
void lop_norm_grad_add(struct layer_ops *o, const struct layer_dims *d,
		       double n, double k)
{
	lop_param_grad_add(o, d, "norm_grad_add", n, k * d->norm_tensors);
}

/* The same hook add for k other plain-gradient tensors of n elements:
 * the linears' biases (TE returns grad_bias as the bias's plain
 * gradient; the fusion reaches only the weight), an RMSNorm's single
 * weight whatever d->norm_tensors says (Mamba's and GDN's gated norms),
 * and Mamba's and GDN's conv1d weight and bias, A_log, D and dt_bias;
 * the hook is registered on every parameter that requires a gradient
 * (distributed_data_parallel.py, as above). Same exit conditions. */
void lop_param_grad_add(struct layer_ops *o, const struct layer_dims *d,
			const char *name, double n, double k)
{
	double i;

	if (d->autograd_wgrad || (!d->unfused_grad_acc && d->fsdp_n > 0) ||
	    n <= 0)
		return;
	for (i = 0; i < k; i++)
		lop_memop(o, name, PASS_BWD, n * (d->act_B + d->grad_B),
			  n * d->grad_B, n);
}

/* The first MLP GEMM's output (t rows of u) through the activation
 * (f' wide): one fused kernel (read u, write f'), or act(g) (r f', w
 * f', strided) then * u (r 2f', w f', u strided) as PyTorch runs a gated
 * MLP on the two halves (d->eager_act). The routed experts' activation
 * (moe.c) is the same over their rows; used by layer.c and moe.c. */
struct layer_op *lop_act_fwd(struct layer_ops *o, const char *name,
			     enum layer_pass pass, const struct layer_dims *d,
			     double t, double u, double f)
{
	double B = d->act_B;

	if (!d->eager_act)
		return lop_memop(o, name, pass, t * u * B, t * f * B,
				 ACT_FLOPS * t * f);
	return lop_eager(o, name, pass, 3 * t * f * B, 2 * t * f * B,
			 3 * t * f * B, 2, ACT_FLOPS * t * f);
}

/* Its backward: one fused kernel (read u + f', write u), or dy * u
 * (r 2f', w f'), dy * act(g) (r 2f', w f'), act'(g) (r 2f', w f', g
 * strided) and the cat of the two halves' gradients (r 2f', w 2f'). */
struct layer_op *lop_act_bwd(struct layer_ops *o, const char *name,
			     const struct layer_dims *d, double t, double u,
			     double f)
{
	double B = d->act_B;

	if (!d->eager_act)
		return lop_memop(o, name, PASS_BWD, t * (u + f) * B,
				 t * u * B, ACT_FLOPS * t * f);
	return lop_eager(o, name, PASS_BWD, 8 * t * f * B, 5 * t * f * B,
			 6 * t * f * B, 4, ACT_FLOPS * t * f);
}
