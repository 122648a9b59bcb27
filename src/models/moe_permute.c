/*
 * moe_permute.c - the token permute before the dispatch and its
 * backward (moe.c calls them): Transformer Engine's fused row_id_map and
 * gather, Megatron-Core's unfused argsort index and index_select, and,
 * first below, Megatron-Core's unfused permute as it was before the
 * argsort rewrite: masked_select on the routing map, whose sizes the
 * host must read back (framework elementwise.masked_select_permute).
 *
 * Source: NVIDIA/Megatron-LM @ 5a676b36 (AMD Primus e16b27b's third_party
 * Megatron-LM), megatron/core/transformer/moe/moe_utils.py permute with
 * fused False, dropless (not drop_and_pad):
 *   routing_map = routing_map.bool().T.contiguous()         [E, T] bool
 *   token_indices = torch.arange(T).unsqueeze(0).expand(E, -1)
 *   sorted_indices = token_indices.masked_select(routing_map)
 *   permuted_probs = probs.T.contiguous().masked_select(routing_map)
 *   permuted_input = tokens.index_select(0, sorted_indices)
 * (moe_permute_fwd costs the last, "permute"). Megatron-LM e19fbe2e1d
 * (2026-03-06, in d7288711ba) replaced both masked_selects by a stable
 * argsort of fixed size (permute_index below).
 *
 * A CUDA masked_select is index(self, [mask]): the bool mask becomes its
 * nonzero() indices, then one gather kernel (aten/src/ATen/native/cuda/
 * Indexing.cu masked_select_out_cuda_impl). nonzero (ROCm/pytorch @
 * 10b22ea5 aten/src/ATen/native/cuda/Nonzero.cu nonzero_cuda_out_impl,
 * as pytorch/pytorch) counts the nonzeros with cub::DeviceReduce::Sum,
 * copies the count to pinned host memory with at::cuda::memcpy_and_sync
 * (a device sync: the host waits for the stream), sizes its output, then
 * runs cub::DeviceSelect::Flagged and, for the 2-D mask, write_indices.
 * Kernels: DeviceReduce's two passes (per-block partials, then one
 * block) and DeviceSelect's two (tile-state init, then the select sweep)
 * [?: hipCUB/rocPRIM pass counts at these sizes].
 *
 * Backward: only the probs' masked_select has a gradient (the indices
 * are integers): masked_select_backward, zeros_like(input).masked_scatter_
 * (mask, grad), whose CUDA path (IndexKernel.cu masked_scatter_cuda_impl)
 * takes an exclusive prefix sum of the mask (mask_exclusive_sum: two
 * kernels [?]), checks the count asynchronously (masked_scatter_size_check
 * <<<1, 1>>>: no host sync) and scatters; then the transposed copy's
 * backward, a transposed copy back to [T, E].
 *
 * Notation: T tokens, E experts, k top-k, p B per probability; int64
 * indices (8 B), the 2-D nonzero output [T k, 2] (16 B a row).
 */
#include "layer_impl.h"

#include <math.h>

/* One masked_select's work before its sync: the count's two reduce
 * kernels over the T E mask. */
static void count(struct layer_op *op, double TE)
{
	op->k.launches += 2;
	op->k.read_B += TE;
	op->host_kernels = 1;	/* the second reduce, from C++ */
}

/* After the sync, inside the same call: DeviceSelect's two kernels
 * (read the mask, write T k int64 indices), write_indices (read them,
 * write the [T k, 2] pair) and the gather (read the pair and T k
 * elements of el_B, write T k of them): 4 kernels launched from C++,
 * the host first waiting for the count (`wait`). */
static void select_after(struct layer_ops *o, const char *name,
			 enum layer_pass pass, int16_t wait, double TE,
			 double Tk, double el_B)
{
	struct layer_op *op = lop_eager(o, name, pass,
					TE + 8 * Tk + 16 * Tk + Tk * el_B,
					8 * Tk + 16 * Tk + Tk * el_B, 0, 4, 0);

	op->host = HOST_FREE;
	op->host_n = 0;
	op->host_kernels = 3;
	op->host_wait = wait;
}

static void masked_select_fwd(struct layer_ops *o, enum layer_pass pass,
			      const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, p = m->probs_B;
	double TE = T * E, Tk = T * m->topk;
	struct layer_op *op;

	/* routing_map.bool().T.contiguous() (a strided copy of the bool
	 * map), the arange of T int64 token indices, the count */
	op = lop_eager(o, "permute_mask", pass, TE, TE + 8 * T, 2 * TE, 2, 0);
	count(op, TE);
	op->host_n = 3;		/* contiguous, arange, masked_select */
	select_after(o, "permute_select", pass, lop_tail(o), TE, Tk, 8);
	/* probs.T.contiguous() (strided), the second masked_select's count
	 * over the same mask */
	op = lop_eager(o, "permute_probs_mask", pass, TE * p, TE * p,
		       2 * TE * p, 1, 0);
	count(op, TE);
	op->host_n = 2;		/* contiguous, masked_select */
	select_after(o, "permute_probs_select", pass, lop_tail(o), TE, Tk, p);
}

/* zeros_like of the [E, T] probs (write T E p), the mask's exclusive sum
 * (read T E, write 8 T E; 2 kernels), the size check, the scatter (read
 * the zeros, the mask, the sums and T k gradients, write T E p), the
 * transposed copy back (read and write T E p, strided): 6 kernels. */
static void masked_select_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, p = m->probs_B;
	double TE = T * E, Tk = T * m->topk;

	lop_eager(o, "permute_probs_bwd", PASS_BWD,
		  TE + TE * p + TE + 8 * TE + Tk * p + TE * p,
		  TE * p + 8 * TE + TE * p + TE * p, 2 * TE * p, 6, 0);
}

int moe_dedups(const struct layer_dims *d)
{
	return d->moe.node_share < 1 || d->moe.dispatch_B <
	       d->moe.tokens * d->moe.topk * moe_row_width(d) * d->moe.elem_B;
}

/* Transformer Engine's fused permute (moe_permute_with_probs, the mask-
 * map path Megatron-Core's permute takes with moe_permute_fusion) first
 * builds its row_id_map, an int32 [T, 2E + 1], in three Triton kernels
 * (make_row_id_map, TE @ 71bbefbf transformer_engine/pytorch/triton/
 * permutation.py): pass 1 reads the [T, E] bool routing map down each
 * expert's column and writes block cumsums into the map's first E
 * columns (read T E, write 4 T E), pass 2 turns them into destination
 * rows (read and write 4 T E), both column-wise through the row-major
 * map; pass 3 sorts each token's row (read 4 T E, write T (2 k + 1) 4).
 * The column-wise accesses, 13 T E B, go through the strided path. The
 * unpermute and the backward reuse the map. */
static void row_id_map(struct layer_ops *o, enum layer_pass pass,
		       const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, k = m->topk;

	lop_eager(o, "permute_map", pass, 9 * T * E,
		  8 * T * E + T * (2 * k + 1) * 4, 13 * T * E, 3, 0);
}

/* Passes of CUB's onesweep radix sort over keys of `bits` bits (8 radix
 * bits a pass): at least one. */
static double radix_passes(double bits)
{
	return bits > 8 ? ceil(bits / 8) : 1;
}

/* Megatron-Core's unfused permute (moe_permute_fusion false, dropless;
 * moe_utils.py permute, NVIDIA/Megatron-LM @ d7288711ba) finds the rows'
 * order with PyTorch ops before its index_select: routing_map.bool().T.
 * contiguous() (a transposed copy of the [T, E] bool map), reshape(-1).
 * argsort(descending, stable) (PyTorch's stable sort of T E one-byte
 * keys: an arange of int64 values, then CUB's radix sort pairs,
 * histogram, exclusive sum and one onesweep pass, keys and values read
 * and written), `% num_tokens` over the T k kept indices, and the probs'
 * probs.T.contiguous().reshape(-1)[flat_sorted] (a transposed copy of
 * the [T, E] probs, a gather of T k): 8 kernels, the two transposed
 * copies through the strided path. */
static void permute_index(struct layer_ops *o, enum layer_pass pass,
			  const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, k = m->topk, p = m->probs_B;
	double TE = T * E, Tk = T * k;

	lop_eager(o, "permute_index", pass,
		  TE + TE + 9 * TE + 8 * Tk + TE * p + Tk * (8 + p),
		  TE + 8 * TE + 9 * TE + 8 * Tk + TE * p + Tk * p,
		  2 * TE + 2 * TE * p, 8, 0);
}

/* The unfused permute's backward of its probs gather (IndexBackward:
 * zeros of T E, then index_put_ with accumulate, PyTorch's aten/src/
 * ATen/native/cuda/Indexing.cu index_put_with_sort_kernel: the linear
 * index, its divide_, an arange, CUB's radix sort pairs of T k int64
 * keys over the bits of T E - 1 (histogram, exclusive sum, a onesweep
 * pass per 8 bits), indexing_backward_kernel) and the transposed copy's
 * backward: 9 + passes kernels [?: PyTorch version of the runs]. */
static void permute_probs_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, k = m->topk, p = m->probs_B;
	double TE = T * E, Tk = T * k;
	double n = radix_passes(ceil(log2(fmax(TE, 2))));

	lop_eager(o, "permute_probs_bwd", PASS_BWD,
		  (40 + 16 * n) * Tk + Tk * p + TE * p,
		  2 * TE * p + (24 + 16 * n) * Tk + Tk * p, 2 * TE * p,
		  6 + n, 0);
}

/* Transformer Engine 2.1-2.5's fused permute (the mask-map Triton
 * kernels Megatron-Core's moe_permute_fusion runs; NVIDIA/
 * TransformerEngine v2.2 transformer_engine/pytorch/triton/
 * permutation.py, the same in v2.1-v2.5; replaced by PR #1927, dc97cc9e,
 * first in v2.6) launches one program a token. _permute_kernel walks
 * the token's hidden size in blocks of BLOCK_SIZE (autotuned over 64 ..
 * 1024: the largest block has the fewest steps) and, for each block,
 * every expert in turn: `for expert_idx in range(num_experts): dst_row =
 * tl.load(row_id_map_ptr + expert_idx * num_tokens + pid); if dst_row !=
 * -1: store`, a scalar load of the [E, T] int64 map (4 MB at E 256, T
 * 2048: in L2; consecutive programs sit on different SMs, so L1 holds no
 * neighbour's line) that the branch waits for: ceil(h / 1024) (E + 1)
 * dependent L2 loads a program, the block's input load included.
 * _unpermute_kernel (the unpermute, and the permute's backward) walks
 * the same loop and, for each of the token's k experts, loads that row's
 * block after its map entry: ceil(h / 1024) (E + k). The permute's
 * backward without merging probabilities (the unpermute's backward) is
 * _permute_kernel again. _sort_chunks_by_idxs_kernel (the chunk sort
 * after the dispatch; its backward reuses the rows' map) runs one program
 * a row, each walking the split sizes twice (`while cursor < num_splits:
 * tl.load(split_sizes_ptr + cursor)`, then the sorted indices), 2 x
 * splits loads of a 1-2 KB array every program on the SM reads: L1 hits;
 * then one L2 load a block. The GPU's hit latencies price the chain
 * (block.c chain_s). TE >= 2.6 (what the fused path above prices) loops
 * over a token's k experts only. "up to a 10x unit speedup" at 256
 * experts, top 8 (NVIDIA/Megatron-LM @ 1d9edcf8 docs/discussions/
 * deepseek-v3-gb200-optimization/deepseek-v3-gb200-optimization.md,
 * 2.1.1: "The length of the Permute kernel is clearly abnormal"). */
#define TE_PERMUTE_BLOCK 1024.0

void moe_permute_loop(struct layer_op *op, const struct layer_dims *d,
		      enum permute_loop kind)
{
	const struct moe_dims *m = &d->moe;
	double blocks = ceil(moe_row_width(d) / TE_PERMUTE_BLOCK);
	double splits = m->ep * m->etp * m->local;

	if (!m->permute_loop || moe_dedups(d) || m->allgather)
		return;
	switch (kind) {
	case PLOOP_PERMUTE:
		op->k.chain_grid = m->tokens;
		op->k.chain_l2 = blocks * (m->experts + 1);
		break;
	case PLOOP_UNPERMUTE:
		op->k.chain_grid = m->tokens;
		op->k.chain_l2 = blocks * (m->experts + m->topk);
		break;
	case PLOOP_SORT:
		op->k.chain_grid = m->rows;
		op->k.chain_l1 = 2 * splits;
		op->k.chain_l2 = blocks;
		break;
	}
}

/* Fused: TE's row_id_map, then one kernel gathering T_in k rows. Unfused:
 * the index build above, then tokens.index_select(0, sorted_indices),
 * one kernel reading each token (as the fused gather is costed) and the
 * T k indices, writing T k rows. */
void moe_permute_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, k = m->topk, h = moe_row_width(d);

	if (moe_dedups(d) || m->allgather)
		return;	/* tokens travel as they are; sorted on arrival */
	if (m->permute_fusion) {
		if (!m->permute_loop)
			row_id_map(o, pass, d);
		else	/* v2.2 make_row_id_map: two Triton passes over
			 * the [E, T] int64 map (pass 1 reads the bool
			 * routing map, writes 8 T E; pass 2 reads and
			 * writes it) */
			lop_eager(o, "permute_map", pass, 9 * T * m->experts,
				  16 * T * m->experts, 0, 2, 0);
		moe_permute_loop(lop_memop(o, "permute", pass, T * h * d->act_B,
					   T * k * h * m->elem_B, 0),
				 d, PLOOP_PERMUTE);
		return;
	}
	if (m->masked_select)
		masked_select_fwd(o, pass, d);
	else
		permute_index(o, pass, d);
	lop_memop(o, "permute", pass, T * h * d->act_B + T * k * 8,
		  T * k * h * m->elem_B, 0);
}

/* The unfused unpermute (forward: torch.zeros of the [T, h] output, then
 * scatter_add_ of the T k rows) and the index_select's backward (zeros,
 * then index_add_) each write their zeroed output first: one more kernel
 * writing T h B (moe_utils.py unpermute @ d7288711ba; the fused TE
 * kernels write each output row once). The library paths only.
 *
 * Both then add the T k rows into the T output rows by one atomic add an
 * element (PyTorch aten/src/ATen/native/cuda/ScatterGatherKernel.cu and
 * Indexing.cu index_add: fastAtomicAdd; k rows hit each output row):
 * T k h B bytes at the GPU's scatter_add_bandwidth, not streamed
 * (scatter_B; the fused TE kernels gather a token's k rows and sum them
 * in registers, no atomics). */
void moe_unfused_scatter(struct layer_op *op, const struct layer_dims *d)
{
	if (d->moe.permute_fusion || moe_dedups(d) || d->moe.allgather)
		return;
	op->k.launches = 2;
	op->host_n = 2;
	op->k.write_B += d->moe.tokens * moe_row_width(d) * d->act_B;
	op->k.scatter_B = d->moe.tokens * d->moe.topk * moe_row_width(d) * d->act_B;
}

/* The unfused unpermute weights the rows by their probabilities as a
 * PyTorch op of its own before the scatter-add (moe_utils.py unpermute
 * @ d7288711ba: permuted_tokens * permuted_probs.unsqueeze(-1); the
 * fused TE kernel and a framework applying the probabilities in the
 * activation, moe_probs_act, do not). The [T k, 1] operand broadcasts,
 * so TensorIterator takes the non-vectorized elementwise_kernel<128, 4>
 * (the strided path: 170 us for 268 MB in llmsim's H200 MoE step,
 * results/reference/device/h200-moe-2026-12-04.json): read T k h B and
 * T k p, write T k h B, all strided. Its backward, after unpermute's
 * gather: the rows' gradient dy * p (read T k h B + T k p, write T k h
 * B), the probabilities' (dy * x, read 2 T k h B, write T k h B; then
 * its sum over h, read T k h B, write T k p): 3 kernels, streaming
 * (94.5, 170 and 43 us in that step). */
static int unfused_probs(const struct layer_dims *d)
{
	return !d->moe.permute_fusion && !moe_dedups(d) && !d->moe.allgather &&
	       !d->moe.combine_reduces && !d->moe_probs_act;
}

void moe_unpermute_probs(struct layer_ops *o, enum layer_pass pass,
			 const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double Tk = m->tokens * m->topk, n = Tk * moe_row_width(d) * d->act_B;
	double p = Tk * m->probs_B;

	if (!unfused_probs(d))
		return;
	if (pass == PASS_BWD) {
		lop_eager(o, "unpermute_probs_bwd", pass, 4 * n + p, 2 * n + p,
			  0, 3, 2 * Tk * moe_row_width(d));
		return;
	}
	lop_eager(o, "unpermute_probs", pass, n + p, n, n + p, 1,
		  Tk * moe_row_width(d));
}

/* The routing probabilities' gradient where the experts' activation
 * applies them (moe_probs_act): Megatron-Core's TEGroupedMLP with
 * bias_activation_fusion runs a gated GLU as weighted_bias_swiglu_impl
 * (or weighted_bias_quick_geglu_impl), whose backward,
 * weighted_swiglu_back, returns the input's gradient, cat(dy p act'(g)
 * x, dy p act(g)) over [R, u], and the probabilities' gradient,
 * sum(act(g) x dy, -1) over [R, f] (NVIDIA/Megatron-LM @ 2a75ac12c
 * megatron/core/fusions/fused_bias_swiglu.py and fused_bias_geglu.py,
 * WeightedSwiGLUFunction; experts.py bias_act_func; the Megatron-Bridge
 * Qwen3 MoE recipes set bias_activation_fusion, recipes/qwen/h100/
 * qwen3_moe.py @ 067f987). Both are one function under jit_fuser,
 * torch.compile since PyTorch 2.2 (megatron/core/jit.py), whose Triton
 * code generator fuses a pointwise node into a reduction only over the
 * same element count: the input's gradient runs over R u elements (its
 * cat of the two halves is one pointwise node), the reduction over R f,
 * so the reduction is a kernel of its own that reads the activation's
 * input (R u B) and the output's gradient (R f B) again and writes R
 * probabilities (probs_B) [?: the fusion rule is Inductor's
 * (SIMDScheduling.can_fuse), not a profile of this function]. A squared
 * ReLU's (non-gated: both over R f) fuse into one kernel; without the
 * probabilities in the activation (Megatron-Core < 0.13 weights the rows
 * at the unpermute: moe_unpermute_probs) there is no such kernel; and
 * framework glu_probs_grad_kernel false says the function does not run
 * (Transformer Engine's op-fuser grouped MLP, whose FC2 dgrad kernel
 * writes the probabilities' gradient, ops/fused/grouped_mlp.py).
 * expert_act_bwd (the input's gradient) stays as lop_act_bwd costs it. */
void moe_act_probs_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double R = m->rows, f = m->ffn / m->etp, u = 2 * f;
	struct layer_op *op;

	if (!d->moe_probs_act || !d->gated || d->eager_act ||
	    !d->moe.probs_grad_kernel || !(R > 0))
		return;
	op = lop_memop(o, "expert_act_probs_bwd", PASS_BWD,
		       R * (u + f) * d->act_B, R * m->probs_B,
		       ACT_FLOPS * R * f);
	op->host = HOST_FREE;	/* inside the activation's backward call */
}

/* The eager gated activation where it applies the routing probabilities
 * (d->eager_act with moe_probs_act): bias_activation_fusion off (Megatron-
 * LM --no-bias-swiglu-fusion; AMD Primus's Qwen3-30B-A3B and 235B model
 * configs set bias_swiglu_fusion false, primus/configs/models/megatron/
 * qwen3_30B_A3B.yaml @ 3aaf2d5f through fd1eeabb), where TEGroupedMLP's
 * bias_act_func runs (NVIDIA/Megatron-LM @ 2a75ac12c experts.py; Primus's
 * PrimusGroupedMLP.bias_act_func the same):
 *
 *     x_glu, x_linear = torch.chunk(x, 2, dim=-1)
 *     y = act(x_glu) * (x_linear + glu_linear_offset)  # lop_act_fwd's two
 *     y = (y * permuted_probs).to(y.dtype)             # + these
 *
 * Forward, each a PyTorch op: the offset's add on the linear half (read
 * the strided half R f B, write R f B; since Megatron-LM 2e29a5e1e3,
 * 2025-09, "quick geglu for gpt-oss": an add of 0.0 still launches), the
 * product with the probabilities (read R f B + R P, write R f O, O the
 * promoted type: max(B, P), fp32 when the probabilities are fp32), and,
 * when O is wider than B, the cast back (read R f O, write R f B). The
 * checkpointed bias_act_func recomputes all of it (moe_act recompute). */
void moe_act_probs_eager(struct layer_ops *o, enum layer_pass pass,
			 const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double R = m->rows, f = m->ffn / m->etp, B = d->act_B;
	double P = m->probs_B, O = fmax(B, P);
	int cast = O > B;

	if (!d->moe_probs_act || !d->eager_act || !(R > 0))
		return;
	lop_eager(o, "expert_glu_offset", pass, R * f * B, R * f * B,
		  R * f * B, 1, R * f);
	lop_eager(o, "expert_probs_mul", pass,
		  R * f * B + R * P + (cast ? R * f * O : 0),
		  R * f * O + (cast ? R * f * B : 0), 0, cast ? 2 : 1, R * f);
}

/* Its backward, autograd's nodes in reverse (the offset's AddBackward
 * passes the gradient through, no kernel): with the cast, ToCopyBackward
 * widens the output's gradient g (read R f B, write R f O); MulBackward0
 * takes the product's input gradient g p (read R f O + R P, write R f O;
 * the engine then casts it to the input's type, read R f O, write R f B,
 * when O is wider) and the probabilities' gradient g y (read R f O + R f
 * B, write R f O) summed over the broadcast row (read R f O, write R P):
 * 5 kernels with the cast, 3 without (pytorch tools/autograd/
 * derivatives.yaml mul.Tensor: mul_tensor_backward, sum_to for the
 * broadcast operand; torch/csrc/autograd/engine.cpp validate_outputs
 * casts a gradient to its input's dtype). Before expert_act_bwd: the
 * activation's backward takes this input gradient. */
void moe_act_probs_eager_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double R = m->rows, f = m->ffn / m->etp, B = d->act_B;
	double P = m->probs_B, O = fmax(B, P);
	int cast = O > B;

	if (!d->moe_probs_act || !d->eager_act || !(R > 0))
		return;
	lop_eager(o, "expert_probs_mul_bwd", PASS_BWD,
		  (cast ? R * f * B + R * f * O : 0) + 3 * R * f * O +
		  R * P + R * f * B,
		  (cast ? R * f * O + R * f * B : 0) + 2 * R * f * O + R * P,
		  0, cast ? 5 : 3, 3 * R * f);
}

/* The permute's backward (moe_bwd, after the dispatch's reverse
 * all-to-all): the scatter-add of the T k row gradients into T tokens
 * (with the unfused path's zeroed output) and the unfused index build's
 * probs backward. */
void moe_permute_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, h = moe_row_width(d), k = m->topk;
	struct layer_op *op;

	if (moe_dedups(d) || m->allgather)
		return;
	op = lop_memop(o, "permute_bwd", PASS_BWD, T * k * h * d->act_B,
		       T * h * d->act_B, T * k * h);
	moe_unfused_scatter(op, d);
	moe_permute_loop(op, d, PLOOP_UNPERMUTE);
	if (m->masked_select)
		masked_select_bwd(o, d);
	else if (!m->permute_fusion)
		permute_probs_bwd(o, d);
}
