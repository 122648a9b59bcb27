/*
 * moe_permute.c - Megatron-Core's unfused token permute as it was before
 * the argsort rewrite: masked_select on the routing map, whose sizes the
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
 * (moe.c costs the last, "permute"). Megatron-LM e19fbe2e1d (2026-03-06,
 * in d7288711ba) replaced both masked_selects by a stable argsort of
 * fixed size (moe.c permute_index).
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

void moe_masked_select_fwd(struct layer_ops *o, enum layer_pass pass,
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
void moe_masked_select_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, E = m->experts, p = m->probs_B;
	double TE = T * E, Tk = T * m->topk;

	lop_eager(o, "permute_probs_bwd", PASS_BWD,
		  TE + TE * p + TE + 8 * TE + Tk * p + TE * p,
		  TE * p + 8 * TE + TE * p + TE * p, 2 * TE * p, 6, 0);
}
