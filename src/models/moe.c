/*
 * moe.c - the routed-expert MLP of a layer on one GPU (Megatron-Core
 * MoELayer with its token dispatcher), for one microbatch.
 *
 * Notation: T_in tokens enter the layer on this GPU (the SP shard), E
 * experts, top-k, L = E / ep local experts of hidden size f_e split over
 * etp (f = f_e / etp here, u = 2 f gated), R rows processed here (route.c:
 * the busiest rank's, after the ETP gather; R_e per local expert; R =
 * T_in k etp when balanced), h width, B bytes per activation, e bytes per
 * dispatched element.
 *
 * Forward (token_dispatcher.py, experts.py; Megatron's alltoall
 * dispatcher, or a flex dispatcher that deduplicates: DeepEP/Hybrid-EP):
 *   [shared experts, unless overlapped]: a dense MLP of the shared
 *            hidden size over the attention TP (column fc1, act, row fc2)
 *   router   GEMM (T_in, E, h) in the router dtype (fp32: cuBLAS runs it
 *            on the CUDA cores); scores and top-k: read T_in E 4,
 *            write T_in k 12
 *   permute  alltoall: gather T_in k rows, read T_in h B, write T_in k h e
 *            (unfused: first the index sort, 8 small kernels over the
 *            T_in x E map, permute_index, or older Megatron's two
 *            masked_selects with their host syncs, moe_permute.c); a
 *            deduplicating
 *            dispatcher sends tokens as they are and permutes after
 *   dispatch all-to-all(v) over EP on the expert-parallel path (the job's
 *            moe.dispatcher; route.c's bytes); the allgather dispatcher
 *            all-gathers the EP group's tokens instead
 *   [etp > 1: all-gather of the received rows over ETP, R h B]
 *   sort     rows by local expert (L > 1, or after a deduplicating
 *            dispatch): read and write R h B
 *   fc1      grouped GEMM, expert e: (R_e, u, h)
 *   act      SwiGLU (and the routing probabilities): read R u B, write R f B
 *   fc2      grouped GEMM, expert e: (R_e, h, f)
 *   [etp > 1: reduce-scatter over ETP]
 *   unsort, combine (the reverse all-to-all, in 16-bit), unpermute
 *            (weighted scatter-add of T_in k rows into T_in tokens);
 *            DeepEP's and Hybrid-EP's combine kernel sums a token's rows
 *            itself and Megatron-Core's flex dispatcher runs no unpermute
 *            after it, nor its gradient in the backward
 *            (combine_reduces; NVIDIA/Megatron-LM @ d98e8a64
 *            token_dispatcher.py MoEFlexTokenDispatcher.combine_postprocess:
 *            a view; _HybridEPManager.combine returns hybrid_ep_combine's
 *            [T, h] tokens, _DeepepManager.combine fused_combine's; their
 *            local unpermute is get_restored_hidden_states_by_experts
 *            before the combine: the unsort above)
 *   [shared experts when overlapped: beside dispatch and combine, on the
 *            compute stream while the EP stream moves tokens]
 *   add      routed + shared outputs, over T_in h
 * Low precision: each grouped GEMM's input is quantized first (layer.c's
 * cast). Backward mirrors it: unpermute's gather, the combine's reverse
 * all-to-all, fc2 dgrad (R_e, f, h) and wgrad (f, h, R_e), act, fc1 dgrad
 * (R_e, h, u) and wgrad (h, u, R_e), the dispatch's reverse all-to-all,
 * the permute's scatter-add and the router's dgrad (T_in, h, E) and wgrad
 * (h, E, T_in); the shared experts' backward last.
 *
 * Model FLOPs of a grouped GEMM count the mean rank's rows, T_in k etp,
 * so an imbalanced (slower) pace rank does not inflate MFU.
 *
 * Host (train.c's host model): a dropless dispatch has variable sizes the
 * host must know before it issues the exchange (the all-to-all-v splits,
 * the receive buffer, the grouped GEMM's m_splits), so the forward holds
 * one device sync. Megatron-Core's alltoall dispatcher all-gathers the
 * per-expert token counts over EP and copies them to the host
 * (token_dispatcher.py preprocess and _maybe_dtoh_and_synchronize: the
 * sync point before_ep_alltoall); DeepEP's normal dispatch exchanges them
 * in notify_dispatch and the CPU waits for the receive counter; Hybrid-EP
 * without num_permuted_tokens copies the count back (fused_a2a.py,
 * non_blocking False) after all-gathering every rank's routing map for
 * its metadata kernel (map_gather, counts_fwd). All three: an exchange
 * before the dispatch (moe_counts, an all-gather over EP: E 8-byte counts,
 * or Hybrid-EP's T x E bool map), then the host waits for it before it
 * issues the dispatch (host_sync counts). Megatron's allgather
 * dispatcher reads tokens_per_expert.cpu() after the gather (host_sync
 * dispatch). Static sizes (capacity with padding, DeepEP low-latency's
 * fixed buffers) need none. Around it the router's and the preprocess's
 * small PyTorch ops (router_ops, dispatch_ops: framework data) each cost
 * a host call and a short kernel. Transformer Engine's GroupedLinear runs
 * one cuBLAS GEMM per local expert (nvte_multi_tensor_gemm on four
 * compute streams), and in low precision quantizes each expert's input
 * separately: a module call plus L - 1 more launches each.
 */
#include "layer_impl.h"

#include <math.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* Rows of a balanced rank (model FLOPs). */
static double mean_rows(const struct moe_dims *m)
{
	return m->tokens * m->topk * m->etp;
}

static double local_ffn(const struct moe_dims *m)
{
	return m->ffn / m->etp;
}

static double fc1_width(const struct layer_dims *d)
{
	return (d->gated ? 2 : 1) * local_ffn(&d->moe);
}

/* The per-expert host counts (struct layer_op host_kernels, host_items,
 * host_hooks: uint16_t) are at most FP8_CS_QUANT_KERNELS x the local
 * experts, which the job layout bounds (JR_EP_EXPERTS), so the 65535
 * caps below are never reached. */
_Static_assert(FP8_CS_QUANT_KERNELS * JOB_LOCAL_EXPERTS_MAX <= 65535,
	       "per-expert host counts fit layer_op's uint16_t fields");

/* Kernels beyond one a GroupedLinear step launches: one per local
 * expert (Transformer Engine's per-expert cuBLAS GEMMs and quantizes). */
static uint16_t per_expert(const struct layer_dims *d)
{
	double l = d->moe.local - 1;

	return (uint16_t)(l < 0 ? 0 : l > 65535 ? 65535 : l);
}

/* Transformer Engine's GroupedLinear quantizes its input split by expert
 * (tex.split_quantize -> multi_tensor_quantize_impl, csrc/extensions/
 * cast.cpp; framework per_expert_quantize): one fused multi_cast_transpose
 * for all experts only under delayed-scaling FP8; any other quantizer runs
 * per expert. Per-tensor current scaling (Float8CurrentScalingQuantizer::
 * quantize_impl, quantizer.cpp) computes the expert's amax (a kernel
 * reading its rows: lop_cast's amax pass, after a kernel zeroing it), its
 * scale (a kernel), then casts (a kernel): FP8_CS_QUANT_KERNELS (4) per
 * expert; block scaling (Float8BlockQuantizer) casts in one kernel per
 * expert. Delayed scaling's fused kernel needs both layouts (the check on
 * nvte_tensor_columnwise_data there; multi_cast_transpose.cu): where a
 * cast writes one (d->fp8_one_layout) each expert's Float8Quantizer
 * casts in a kernel of its own. */
void moe_quant_dims(int fp8_scaling, struct layer_dims *d)
{
	d->moe.quant_kernels = fp8_scaling == FP8_CURRENT ?
			       FP8_CS_QUANT_KERNELS :
			       fp8_scaling == FP8_BLOCK || d->fp8_one_layout ?
			       1 : 0;
}

/* Kernels a grouped cast runs on the GPU: one, or one per local expert
 * (Transformer Engine <= 2.17 GroupedLinear: split_quantize's
 * multi_tensor_quantize_impl quantizes the experts' splits "individually"
 * for every recipe but delayed-scaling FP8, whose nvte_multi_cast_transpose
 * is one kernel; 2.14, csrc/extensions/cast.cpp; framework data
 * per_expert_quantize, taken for the MX formats), each paying the GPU's
 * kernel launch; fp8 recipes as moe_quant_dims; 0: lop_cast's count (one
 * launch, or fp8 current scaling's 4 kernels over all rows). */
static double cast_kernels(const struct layer_dims *d)
{
	if (d->moe.quant_kernels > 0)
		return d->moe.quant_kernels * d->moe.local;
	return d->expert_casts < 0 && d->moe.local > 1 ? d->moe.local : 0;
}

/* The grouped cast just pushed (if any) quantizes every expert's input:
 * it opens the module call; else the grouped GEMM that follows does.
 * Per-expert quantizers (moe_quant_dims) launch quant_kernels each.
 * NVFP4 splits are quantized together since Transformer Engine 2.11
 * (split_quantize's FUSED_NVFP4 -> split_quantize_nvfp4_impl, csrc/
 * extensions/cast.cpp, v2.14 and the Megatron-Bridge pins 71bbefbf,
 * f031cf87b): one kernel zeroes every split's amax (MultiZeroAmaxKernel)
 * and one computes them all (group_hadamard_transform_amax,
 * hadamard_transform/group_hadamard_transform.cu), then one fused cast
 * of both layouts where every split is a multiple of 128 rows
 * (nvte_group_hadamard_transform_cast_fusion; 128 is NVFP4's
 * get_align_size_for_quantization, quantization.py), else a row-wise
 * and a column-wise grouped cast: the dense cast's NVFP4_QUANT_KERNELS,
 * or one more, from the one C++ call as the dense cast's, none per
 * expert. */
static void grouped_cast(struct layer_ops *o, const char *name,
			 enum layer_pass pass, const struct layer_dims *d,
			 double n)
{
	struct layer_op *op;
	double k;

	lop_cast(o, name, pass, d, d->lowp, n);
	if (!d->lowp)
		return;
	op = &o->op[o->n - 1];
	if (d->nvfp4_amax) {
		op->k.launches = NVFP4_QUANT_KERNELS + !d->moe.split_aligned;
		return;
	}
	k = cast_kernels(d);
	if (k > 0)
		op->k.launches = k;
	op->host_kernels = per_expert(d);
	if (d->moe.quant_kernels > 1)	/* from C++: each expert's kernels */
		op->host_kernels = (uint16_t)(k - 1 > 65535 ? 65535 : k - 1);
}

/* The grouped GEMM just pushed opens its module call (no cast before). */
static void grouped_opens(struct layer_ops *o, const struct layer_dims *d)
{
	if (!d->lowp)
		o->op[o->n - 1].host = HOST_MODULE;
}

/* Kernels one stream of a per-expert grouped GEMM runs back to back
 * (framework grouped_gemm_streams S; 1 for one grouped kernel):
 * Transformer Engine's GroupedLinear calls nvte_multi_tensor_gemm, which
 * outside Hopper's opt-in CUTLASS path is multi_stream_cublas_gemm: one
 * cuBLAS GEMM per local expert, expert i on compute stream i % S, S =
 * num_compute_streams = 4 (TE @ 71bbefbf, common/gemm/cublaslt_gemm.cu,
 * common/util/multi_stream.cpp). The streams share the GPU (block.c
 * keeps the grouped tile-and-wave cost) but each stream's ceil(L / S)
 * kernels pay their launch one after the other [?: how much of a
 * kernel's launch another stream's work hides is not published]; each
 * of the L kernels pays its set-up and drain (k.kernels, block.c). */
static double stream_kernels(const struct layer_dims *d, double s)
{
	double l = d->moe.local;

	return s > 0 && l > 1 ? ceil(l / s) : 1;
}

/* A grouped GEMM over the local experts: rows in dimension gd. */
static struct layer_op *grouped(struct layer_ops *o, const char *name,
				enum layer_pass pass,
				const struct layer_dims *d, enum group_dim gd,
				double m, double n, double k)
{
	const struct moe_dims *e = &d->moe;
	struct layer_op *op = lop_push(o, name, LOP_KERNEL, pass);
	double mean = mean_rows(e);
	/* the forward's GEMMs (untransposed weights) may be one grouped
	 * kernel where the backward's are per expert (layer.h) */
	double streams = pass == PASS_BWD ? e->gemm_streams :
			 e->gemm_streams_fwd;

	op->k.kind = KERN_GROUPED;
	op->k.lowp = d->lowp;
	op->k.m = m;
	op->k.n = n;
	op->k.k = k;
	op->k.batch = 1;
	op->k.rows = e->expert_rows;
	op->k.ngroups = (int)e->local;
	op->k.group_dim = gd;
	op->k.model_flops = 2 * mean * (gd == GROUP_M ? n * k : m * n);
	op->k.launches = stream_kernels(d, streams);
	/* one cuBLAS GEMM kernel per local expert on the multi-stream
	 * path, each with its own set-up and drain (block.c) */
	op->k.kernels = streams > 0 && e->local > 1 ? e->local : 1;
	op->k.stream_bwd = pass == PASS_BWD && op->k.kernels > 1;
	op->host = HOST_FREE;	/* inside GroupedLinear's call (its cast) */
	op->host_kernels = per_expert(d);
	/* the per-expert loop of cuBLASLt GEMMs: nvte_cublas_gemm builds
	 * each GEMM's layouts, matmul descriptor and preference and asks
	 * cublasLtMatmulAlgoGetHeuristic on every call (TE @ 71bbefbf,
	 * common/gemm/cublaslt_gemm.cu cublas_gemm): host gemm each */
	if (streams == 0 && e->gemm_streams > 0)	/* one grouped kernel
		 * where the backward's are per expert: grouped_gemm's
		 * CutlassGroupedGemm; its seven small host-to-device copies
		 * of the arguments are not costed */
		op->host_kernels = 0;
	op->host_gemm = streams > 0 && d->moe.local > 1;
	op->side_stream = streams > 0;	/* even one expert's (train_queue.c) */
	/* and joins the streams with events: multi_stream_cublas_gemm
	 * records one on the caller's stream, then one on each of the
	 * min(S, L) compute streams it used (the 2 min(S, L)
	 * cudaStreamWaitEvent calls are not counted) */
	if (op->host_gemm)
		op->host_events = (uint8_t)(1 + fmin(streams,
						     fmin(d->moe.local, 254)));
	/* the call's per-expert items (host expert_item): one call a
	 * pass, so on the forward GEMM and on the backward's dgrad; the
	 * expert weights' gradient hooks (host param_hook) after the
	 * wgrad (Transformer Engine GroupedLinear: one Parameter per
	 * expert, weight0..weight{L-1}) */
	if (op->host_gemm && gd == GROUP_K && pass == PASS_BWD)
		op->host_hooks = (uint16_t)fmin(d->moe.local, 65535);
	else if (op->host_gemm)
		op->host_items = (uint16_t)fmin(d->moe.local, 65535);
	return op;
}

/* Rows one grouped GEMM sees in total (the group dimension's sum). */
static double rows(const struct layer_dims *d)
{
	return d->moe.rows;
}

/* Dispatch or combine (forward or backward) over EP. */
static void a2a(struct layer_ops *o, const char *name, enum layer_pass pass,
		const struct layer_dims *d, double bytes, enum ep_pass kind)
{
	const struct moe_dims *m = &d->moe;
	struct layer_op *op;

	if (m->ep <= 1)
		return;
	if (m->allgather) {
		op = lop_coll(o, name, pass, LG_EP, LS_EP, COLL_ALLGATHER,
			      m->tokens * m->ep * moe_row_width(d) * d->act_B);
		return;
	}
	/* Hybrid-EP across nodes (dispatch_preprocess, stage_input): the
	 * input rows, and the forward's [T, E] fp32 probabilities */
	if (m->stage_row_B > 0 && (kind == EP_PASS_DISPATCH ||
				   kind == EP_PASS_DISPATCH16)) {
		double B = kind == EP_PASS_DISPATCH ? m->tokens *
			   (m->stage_row_B + m->experts * 4) :
			   m->tokens * moe_row_width(d) * 2;

		op = lop_memop(o, "moe_dispatch_stage", pass, B, B, 0);
		if (m->call_host_s > 0)	/* issued inside the call */
			op->host = HOST_FREE;
	}
	op = lop_coll(o, name, pass, LG_EP, LS_EP, COLL_ALLTOALL, bytes);
	op->a2a_B = kind == EP_PASS_DISPATCH ? m->a2a_B :
		     m->a2a_pass_B[kind - 1];	/* its bytes, direction */
	op->ep_path = (uint8_t)kind;
	/* the dispatcher's own call (Hybrid-EP dispatch_with_permute: the
	 * forward's dispatch and the combine's backward), and its reverse,
	 * combine_with_unpermute (the forward's combine, HybridEPCombine;
	 * the dispatch's backward, HybridEPDispatch.backward): the same
	 * Python method shape as the handle path of dispatch_with_permute
	 * (an NVTX range, HandleImpl() and its 11 fields set from the handle
	 * tuple, then the C++ runtime call that allocates its outputs and
	 * launches its kernels; deepseek-ai/DeepEP @ 94a9f8f
	 * deep_ep/hybrid_ep_buffer.py; Megatron-Core fused_a2a.py @
	 * d7288711ba), so the measured call time [?: dispatch_call_host is
	 * the mean of the forward's dispatch calls, which also rebuild the
	 * template config, and the handle-path ones: for a combine it is an
	 * upper bound]. */
	op->host_call_s = m->call_host_s;
}

/* The routing probabilities cast to fp32 before a dispatcher that takes
 * only fp32 (configs/ep fp32_probs: DeepEP, Hybrid-EP): Megatron-Core's
 * _DeepepManager.dispatch and _HybridEPManager.dispatch run
 * self.token_probs.float() (and log a warning) on every call when the
 * router's dtype is 16-bit (token_dispatcher.py, NVIDIA/Megatron-LM @
 * d7288711ba), after the router and preprocess, in the "moe" scope: one
 * PyTorch op, a kernel reading T E 16-bit and writing T E fp32 [D]. Its
 * backward (ToCopyBackward) casts the probabilities' fp32 gradient back:
 * read T E 4, write T E 2 B. (r18 host18 counted it; r19 host19 landed
 * it once a captured scope no longer held the dispatch's sync.) */
static void probs_cast(struct layer_ops *o, const char *name,
		       enum layer_pass pass, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double n = m->tokens * m->experts;
	double from = dtype_bytes((enum dtype)m->router_bwd_dt);

	if (m->ep <= 1 || m->allgather || !(from < m->probs_B))
		return;
	if (pass == PASS_BWD)
		lop_memop(o, name, pass, n * m->probs_B, n * from, 0);
	else
		lop_memop(o, name, pass, n * from, n * m->probs_B, 0);
}

/* The routing probabilities' own all-to-all (probs_call): Megatron-
 * Core's alltoall dispatcher sends the permuted probabilities (one per
 * row, in the router's dtype, probs_B) in a second all_to_all with the
 * tokens' split sizes, right after the tokens' (token_dispatcher.py
 * MoEAlltoAllTokenDispatcher.token_dispatch; mappings.py _AllToAll, an
 * autograd function whose backward is the reverse all_to_all of the
 * probabilities' gradients, issued beside the tokens' gradients;
 * NVIDIA/Megatron-LM @ d7288711ba). Its bytes: the rows this GPU sends
 * (dispatch_B / row_B) times probs_B. */
static void probs_a2a(struct layer_ops *o, const char *name,
		      enum layer_pass pass, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;

	if (!m->probs_call || m->ep <= 1 || m->allgather || !(m->row_B > 0))
		return;
	lop_coll(o, name, pass, LG_EP, LS_EP, COLL_ALLTOALL,
		 m->dispatch_B / m->row_B * m->probs_B);
}

/* Combine bytes: the dispatch's rows in 16-bit. */
static double combine_B(const struct layer_dims *d)
{
	return d->moe.combine_B;
}

static void etp_coll(struct layer_ops *o, const char *name,
		     enum layer_pass pass, const struct layer_dims *d,
		     enum coll_op c)
{
	if (d->moe.etp > 1)
		lop_coll(o, name, pass, LG_ETP, LS_TP, c,
			 rows(d) * moe_row_width(d) * d->act_B);
}

/* The shared experts as a dense MLP over the attention TP. */
static void shared_fwd(struct layer_ops *o, enum layer_pass pass,
		       const struct layer_dims *d)
{
	double t = layer_tokens(d), f = d->moe.shared_ffn / d->tp;
	double u = (d->gated ? 2 : 1) * f;

	if (d->moe.shared_ffn <= 0)
		return;
	lop_column_fwd(o, "shared_fc1_cast", "shared_fc1_allgather",
		       "shared_fc1", pass, d, u, d->hidden, d->lowp);
	lop_memop(o, "shared_act", pass, t * u * d->act_B, t * f * d->act_B,
		  ACT_FLOPS * t * f);
	lop_row_fwd(o, "shared_fc2_cast", "shared_fc2", "shared_tp_reduce",
		    pass, d, f);
}

/* The dispatcher's preprocessing on the counts (framework's small ops),
 * and the exchange of per-expert token counts the host waits for: its
 * index, or LAYER_NONE when the sizes are static. The exchange is an
 * all-gather of E 8-byte counts per rank, or, for a dispatcher that
 * plans its transfers from every rank's routing map (map_gather:
 * Hybrid-EP's dispatch_with_permute all-gathers the [T, E] torch.bool
 * routing map over the EP group before its metadata preprocessing
 * kernel, deepseek-ai/DeepEP hybrid-ep deep_ep/hybrid_ep_buffer.py), T E
 * bytes per rank. Only the forward's first dispatch of a layer does it:
 * the backward reuses the handle. */
/* A dispatcher whose measured call (call_host_s, charged on its
 * dispatch op) issues this op itself: Hybrid-EP's dispatch_with_permute
 * all-gathers the routing map and launches the permute inside the call
 * (configs/ep/hybridep.yaml dispatch_call_host), so the op's own host
 * cost would count them twice. For the op just added, if any. */
static void in_dispatch_call(struct layer_ops *o, const struct layer_dims *d)
{
	if (d->moe.call_host_s > 0 && o->n > 0)
		o->op[o->n - 1].host = HOST_FREE;
}

static int16_t counts_fwd(struct layer_ops *o, enum layer_pass pass,
			  const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double E = m->experts;

	if (m->host_sync == EP_SYNC_NONE)
		return LAYER_NONE;
	if (m->dispatch_ops > 0)
		lop_eager(o, "moe_preprocess", pass, m->tokens * E, E * 8 * m->ep,
			  0, m->dispatch_ops, m->tokens * E);
	if (m->host_sync != EP_SYNC_COUNTS || m->ep <= 1)
		return o->n > 0 ? lop_tail(o) : LAYER_NONE;
	lop_coll(o, "moe_counts", pass, LG_EP, LS_EP, COLL_ALLGATHER,
		 (m->map_gather ? m->tokens * E : E * 8) * m->ep);
	in_dispatch_call(o, d);
	return lop_tail(o);
}

/* Sort the received rows by local expert. On the alltoall path with
 * moe_permute_fusion, Megatron-Core's sort_chunks_by_idxs is Transformer
 * Engine's fused chunk sort, whose forward first maps every row to its
 * place (make_chunk_sort_map: one Triton kernel writing an int32 a row)
 * and then moves the rows (sort_chunks_by_map); its backward reuses the
 * map (TE @ 71bbefbf pytorch/permutation.py _moe_chunk_sort).
 * Hybrid-EP with moe_permute_fusion_into_hybridep runs no sort kernel:
 * its dispatch kernel writes the received chunks into the local experts'
 * order itself (DeepEP @ 94a9f8f (hybrid-ep) csrc/hybrid_ep/executor/
 * executor.cu dispatch_postprocess: "Fused permute: data already written
 * to args output tensors by fused dispatch kernel. No-op."; the combine's
 * unpermute likewise, fuse_unpermute_combine), inside the transfer the
 * dispatcher's path already times (permute_in_dispatch [?: the fused
 * kernel's extra local copy is taken as hidden under its NVLink
 * transfer]). A framework without a dispatcher (framework moe_chunk_sort
 * false: scripts/measure-moe-torch.py's single-GPU MoE sorts its T k
 * routed expert ids and index_selects the rows in that order) runs no
 * such sort. */
/* 1 when it added the op. */
static int sort_fwd(struct layer_ops *o, const char *name,
		    enum layer_pass pass, const struct layer_dims *d)
{
	double n = rows(d) * moe_row_width(d) * d->act_B;
	struct layer_op *op;

	if (!(d->moe.local > 1 || moe_dedups(d) || d->moe.allgather) ||
	    d->moe.permute_in_dispatch)
		return 0;
	if (!d->moe.chunk_sort && !moe_dedups(d) && !d->moe.allgather)
		return 0;	/* the permute left them in expert order */
	op = lop_memop(o, name, pass, n, n, 0);
	if (pass != PASS_BWD && d->moe.permute_fusion && !moe_dedups(d) &&
	    !d->moe.allgather) {
		op->k.launches = d->moe.permute_loop ? 1 : 2;	/* TE < 2.6: one */
		op->k.write_B += rows(d) * 4;
		moe_permute_loop(op, d, PLOOP_SORT);
	}
	return 1;
}

/* A clamped GLU's clamps as their own kernels (clamp_ops): Megatron-
 * Core's weighted_bias_quick_geglu_impl clamps the gate half (max) and
 * the linear half (both ways) of the fc1 output and concatenates them
 * before its fused activation (NVIDIA/Megatron-LM @ d7288711ba,
 * megatron/core/fusions/fused_bias_geglu.py): forward three kernels,
 * read and write R u B twice (R f each clamp, R u the cat); backward
 * each clamp's gradient reads the gradient and the input of its half and
 * writes its half (read 2 R u B, write R u B), then the chunk's gradient
 * is concatenated (read and write R u B): 3 kernels, read 3 R u B,
 * write 2 R u B.
 *
 * Each clamp (and each clamp's gradient) reads a half of torch.chunk, a
 * view with a row stride of u: not contiguous, so PyTorch's elementwise
 * loop takes its offset-calculator kernel without vector loads
 * (aten/src/ATen/native/cuda/CUDALoops.cuh gpu_kernel_impl_nocast:
 * launch_vectorized_kernel only when iter.is_contiguous(), else
 * launch_legacy_kernel), the strided_efficiency path, as llmsim's H200
 * step measured it on SiLU of the gate half. Strided: forward the two
 * clamps' bytes, read and write R u B (the cat is a copy kernel of its
 * own, not strided); backward the two clamp gradients', read 2 R u B,
 * write R u B. */
static void clamp_op(struct layer_ops *o, const char *name,
		     enum layer_pass pass, const struct layer_dims *d)
{
	double n = rows(d) * fc1_width(d) * d->act_B;

	if (!d->moe.clamp_ops)
		return;
	if (pass == PASS_BWD)
		lop_eager(o, name, pass, 3 * n, 2 * n, 3 * n, 3,
			  n / d->act_B);
	else
		lop_eager(o, name, pass, 2 * n, 2 * n, 2 * n, 3,
			  2 * n / d->act_B);
}

/* The experts' output bias as PyTorch ops (bias_ops): Megatron-Core's
 * TEGroupedMLP builds fc2 with skip_bias_add and _apply_bias adds, per
 * local expert, t + b p on its rows (experts.py @ d7288711ba): b p
 * ([R_e, h], in the wider dtype w of the bias and the probability,
 * probs_B), the add (read R_e h B and R_e h w, write R_e h w), then one
 * cat of the L results (read and write R h w) and, when w > B, the cast
 * back (read R h w, write R h B). With n = R h: forward read n (B + 2 w)
 * [+ n w], write 3 n w [+ n B]; 2 L + 1 [+ 1] kernels. Backward: the
 * cast's gradient [read n B, write n w], per expert the rows' gradient
 * cast to B [read n w, write n B], b's and p's gradients each a multiply
 * (read n w, write n w) and a sum (read n w), and the split's gradient
 * concatenated (read and write n B): read 4 n w + n B [+ n (B + w)],
 * write 2 n w + n B [+ n (w + B)]; 4 L + 1 [+ L + 1] kernels.
 *
 * b p broadcasts both operands (b over the rows, p over h: stride-0
 * dimensions), and so do the multiplies of its backward (the gradient
 * by p, by b): TensorIterator cannot flatten them to one contiguous
 * dimension, so they run PyTorch's elementwise kernel without vector
 * loads (clamp_op above; CUDALoops.cuh): strided forward the n w bytes
 * b p writes, backward the two multiplies' 4 n w. */
static void bias_op(struct layer_ops *o, const char *name,
		    enum layer_pass pass, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double n = rows(d) * moe_row_width(d), B = d->act_B, L = m->local;
	double w = m->probs_B > B ? m->probs_B : B;
	int cast = w > B;

	if (!m->bias_ops)
		return;
	if (pass == PASS_BWD)
		lop_eager(o, name, pass, 4 * n * w + n * B +
			  (cast ? n * (B + w) : 0), 2 * n * w + n * B +
			  (cast ? n * (w + B) : 0), 4 * n * w,
			  4 * L + 1 + (cast ? L + 1 : 0), 4 * n);
	else
		lop_eager(o, name, pass, n * (B + 2 * w) + (cast ? n * w : 0),
			  3 * n * w + (cast ? n * B : 0), n * w,
			  2 * L + 1 + (cast ? 1 : 0), 2 * n);
}

/* The first expert GEMM's bias as PyTorch ops (fc1_bias_ops): NeMo
 * AutoModel's GroupedExpertsDeepEP runs grouped_gemm's gmm, which takes
 * no bias, and its _apply_bias adds each local expert's bias to its rows
 * (t + b per expert, one cat; NVIDIA-NeMo/Automodel @ 8d9bfb90e,
 * nemo_automodel/components/moe/layers.py). n = R u elements of B:
 * forward read and write 2 n B (the adds, the cat), L + 1 kernels;
 * backward each expert's bias gradient sums its rows (read n B) and the
 * split's gradient is concatenated (read and write n B): read 2 n B,
 * write n B, L + 1 kernels. The adds broadcast b over the rows, so they
 * run PyTorch's elementwise kernel without vector loads (clamp_op):
 * strided forward their read and write of n B; the backward's sums are
 * reductions. */
static void fc1_bias_op(struct layer_ops *o, const char *name,
			enum layer_pass pass, const struct layer_dims *d)
{
	double n = rows(d) * fc1_width(d) * d->act_B, L = d->moe.local;

	if (!d->moe.fc1_bias_ops)
		return;
	if (pass == PASS_BWD)
		lop_eager(o, name, pass, 2 * n, n, 0, L + 1, n / d->act_B);
	else
		lop_eager(o, name, pass, 2 * n, 2 * n, 2 * n, L + 1,
			  n / d->act_B);
}

/* Quantization padding (moe_dims quant_pad): Megatron-Core's TEGroupedMLP
 * in fp8/fp4/MX training (experts.py, NVIDIA/Megatron-LM @ d7288711ba)
 * runs Transformer Engine's Fp8Padding on its input and on the routing
 * probabilities and Fp8Unpadding on its output (TE fp8_padding.py,
 * fp8_unpadding.py @ 71bbefbf, the commit Megatron-Bridge v0.4.1 pins):
 * each a copy of the rows into splits rounded up to the quantization
 * alignment (32 rows for MXFP8, 128 for NVFP4, 16 for fp8:
 * get_align_size_for_quantization, quantization.py) or back, one kernel
 * for all splits (tex.fused_multi_row_padding / _unpadding). TE skips it
 * only when every split is already aligned, which a dropless router's
 * counts are not in general. Backward runs each in reverse: the output's
 * gradient padded, the input's and the probabilities' unpadded. A copy of
 * R rows of h: read and write R h B (the padding rows, fewer than L
 * times the alignment, are left out); with the probabilities a second
 * kernel, R p_B each way. */
static void pad_op(struct layer_ops *o, const char *name,
		   enum layer_pass pass, const struct layer_dims *d, int probs)
{
	double n = rows(d) * moe_row_width(d) * d->act_B;
	double p = probs ? rows(d) * d->moe.probs_B : 0;

	if (!d->moe.quant_pad)
		return;
	lop_eager(o, name, pass, n + p, n + p, 0, probs ? 2 : 1, 0);
}

/* The clamped GLU's blocking offset copy (moe_dims glu_sync):
 * Megatron-Core's weighted_bias_quick_geglu_impl builds its linear
 * offset with torch.tensor(linear_offset, dtype=..., device=input.device)
 * each call (megatron/core/fusions/fused_bias_geglu.py @ d7288711ba and
 * @ 0d8e0714cd), a copy from a host tensor with non_blocking false, which
 * PyTorch runs as cudaMemcpyAsync then cudaStreamSynchronize (torch/csrc/
 * utils/tensor_new.cpp internal_new_from_data, aten/src/ATen/native/cuda/
 * Copy.cu copy_kernel_cuda, memcpy_and_sync): the host waits for the
 * stream's last op (`before`) before it issues the activation's first
 * kernel (`first`), in the forward and in moe_act's recomputation. */
static void glu_sync(struct layer_ops *o, const struct layer_dims *d,
		     int16_t before, int16_t first)
{
	if (d->moe.glu_sync && before != LAYER_IN && first < o->n)
		o->op[first].host_wait = before;
}

/* Megatron-Core's paged stash (moe_dims stash_B): with the full-
 * iteration CUDA graphs' static expert buffers, the fused grouped MLP's
 * saved tensors are copied for their actual rows into a shared paged
 * buffer after the MLP's forward (PagedTensor.offload_to_stash,
 * paged_stash_copy_kernel) and back into a fresh tensor before its
 * backward (reload_from_stash, paged_stash_pop_kernel): one Triton copy
 * kernel a saved tensor (STASH_TENSORS), read and write R stash_B each
 * way (megatron/core/transformer/moe/paged_stash.py and ops/paged_stash.py
 * @ NVIDIA/Megatron-LM 2a75ac12c). They run on the manager's pack stream
 * beside the compute and the next expert MLP waits for them
 * (PipelinePreScheduleFunction); llmsim charges their bytes at the
 * streaming rate on the compute stream [?]: the bytes share the memory
 * with the compute, the Triton kernel's own rate does not bind (alone it
 * copies 896 MiB in 468 us on GB300, NVIDIA/Megatron-LM PR #6414: a
 * quarter of the streaming rate, latency-bound, which the overlap
 * hides). */
#define STASH_TENSORS 6	/* FC1 and FC2 inputs' column-wise data and
			 * scales, FC1's output, the probabilities */

static void stash_op(struct layer_ops *o, const char *name,
		     enum layer_pass pass, const struct layer_dims *d)
{
	double n = rows(d) * d->moe.stash_B;

	if (!(n > 0))
		return;
	lop_eager(o, name, pass, n, n, 0, STASH_TENSORS, 0);
}

static void experts_fwd(struct layer_ops *o, enum layer_pass pass,
			const struct layer_dims *d)
{
	int16_t before, first;
	double R = rows(d), h = moe_row_width(d), f = local_ffn(&d->moe);
	double u = fc1_width(d);

	pad_op(o, "expert_pad", pass, d, 1);
	grouped_cast(o, "expert_fc1_cast", pass, d, R * h);
	lop_swizzle(o, pass, d, d->lowp, d->moe.local * u * h, R * h, 1,
		    d->moe.local);
	grouped(o, "expert_fc1", pass, d, GROUP_M, 0, u, h);
	grouped_opens(o, d);
	fc1_bias_op(o, "expert_fc1_bias", pass, d);
	before = lop_tail(o);
	first = (int16_t)o->n;
	clamp_op(o, "expert_clamp", pass, d);
	lop_act_fwd(o, "expert_act", pass, d, R, u, f);
	moe_act_probs_eager(o, pass, d);
	glu_sync(o, d, before, first);
	grouped_cast(o, "expert_fc2_cast", pass, d, R * f);
	if (d->lowp && (d->rc_mods & 1u << RCM_MOE_ACT)) {
		o->op[o->n - 1].k.write_B = R * f * d->lowp_B;	/* row-wise */
		o->op[o->n - 1].k.mem_eff = 0;	/* at the streaming rate */
	}
	lop_swizzle(o, pass, d, d->lowp, d->moe.local * h * f, R * f, 1,
		    d->moe.local);
	grouped(o, "expert_fc2", pass, d, GROUP_M, 0, h, f);
	grouped_opens(o, d);
	bias_op(o, "expert_bias", pass, d);
	pad_op(o, "expert_unpad", pass, d, 0);
	if (pass == PASS_FWD)
		stash_op(o, "expert_stash", pass, d);
}

/* The host waits before it issues op `at`: for the counts exchange
 * (the dispatch waits), or for the dispatch itself / the preprocessing
 * without EP (the first op after the dispatch waits). */
/* Megatron-Core's alltoall dispatcher copies the counts and splits to
 * the host on a side stream that first waits for the compute stream, at
 * its cuda_dtoh_point: before the permute (before_permutation_1), or,
 * with the moe_preprocess scope CUDA-graphed, at the sync itself
 * (before_ep_alltoall), after the graph's replay, so the host then waits
 * for the whole preprocessing, the permute included (sync_preprocess;
 * token_dispatcher.py MoEAlltoAllTokenDispatcher.__init__ and
 * _maybe_dtoh_and_synchronize, NVIDIA/Megatron-LM @ d7288711ba): for op
 * `dispatched` - 1, the last before the dispatch. */
static void host_sync(struct layer_ops *o, const struct layer_dims *d,
		      int16_t counts, int16_t dispatched, int16_t after)
{
	const struct moe_dims *m = &d->moe;

	if (counts == LAYER_NONE && m->host_sync != EP_SYNC_DISPATCH)
		return;
	if (m->host_sync == EP_SYNC_COUNTS && m->ep > 1) {
		o->op[dispatched].host_wait = m->sync_preprocess &&
			dispatched - 1 > counts ? (int16_t)(dispatched - 1) :
			counts;
		return;
	}
	if (after < o->n)
		o->op[after].host_wait = m->host_sync == EP_SYNC_DISPATCH &&
					 m->ep > 1 ? dispatched : counts;
}

/* A latent MoE's projections (Megatron-Core moe_layer.py, NVIDIA/
 * Megatron-LM @ 00119989 megatron/core/transformer/moe/moe_layer.py:
 * fc1_latent_proj, a TELinear in parallel_mode "duplicated", takes the
 * router's input [T, h] down to the latent [T, l] before the dispatcher's
 * preprocess, and fc2_latent_proj takes the combined [T, l] back to h
 * before the shared experts' output is added; every TP rank holds both
 * whole and runs them on its own sequence-parallel tokens, so neither has
 * a TP collective): each a GEMM of its T rows (and its input's cast in
 * low precision), backward the output gradient's cast, dgrad and wgrad
 * and the weight gradient's accumulation. */
static void latent_fwd(struct layer_ops *o, enum layer_pass pass,
		       const struct layer_dims *d, int up)
{
	double T = d->moe.tokens, l = d->moe.width, h = d->hidden;
	double k = up ? l : h, n = up ? h : l;

	if (!(l > 0))
		return;
	lop_cast(o, up ? "moe_latent_fc2_cast" : "moe_latent_fc1_cast", pass,
		 d, d->lowp, T * k);
	lop_gemm(o, up ? "moe_latent_fc2" : "moe_latent_fc1", pass, T, n, k,
		 d->lowp);
}

static void latent_bwd(struct layer_ops *o, const struct layer_dims *d,
		       int up)
{
	double T = d->moe.tokens, l = d->moe.width, h = d->hidden;
	double k = up ? l : h, n = up ? h : l;

	if (!(l > 0))
		return;
	lop_cast(o, up ? "moe_latent_fc2_grad_cast" :
		 "moe_latent_fc1_grad_cast", PASS_BWD, d, d->lowp, T * n);
	lop_gemm(o, up ? "moe_latent_fc2_dgrad" : "moe_latent_fc1_dgrad",
		 PASS_BWD, T, k, n, d->lowp);
	lop_wgrad(o, up ? "moe_latent_fc2_wgrad" : "moe_latent_fc1_wgrad",
		  k, n, T, d->lowp);
	lop_accumulate_w(o, d, k * n, 1);
}

void moe_fwd(struct layer_ops *o, enum layer_pass pass,
	     const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, h = d->hidden, k = m->topk;
	double w = moe_row_width(d);	/* a routed row: h, or the latent */
	int16_t in = lop_tail(o), shared_end = LAYER_NONE, dispatched, after;
	int16_t arrived;
	int16_t router, counts;
	int overlap = m->shared_overlap && m->ep > 1;
	uint8_t scope = o->scope;
	struct layer_op *op;

	o->scope = SCOPE_MOE_ROUTER;
	if (!overlap)
		shared_fwd(o, pass, d);
	shared_end = d->moe.shared_ffn > 0 ? lop_tail(o) : LAYER_NONE;
	router = (int16_t)o->n;
	moe_router_fwd(o, pass, d);
	o->op[router].dep[0] = in;	/* the router reads the norm's output */
	latent_fwd(o, pass, d, 0);
	o->scope = SCOPE_MOE_PREPROCESS;
	counts = counts_fwd(o, pass, d);
	moe_permute_fwd(o, pass, d);
	o->scope = SCOPE_MOE;
	probs_cast(o, "moe_probs_cast", pass, d);
	a2a(o, "moe_dispatch", pass, d, m->dispatch_B, EP_PASS_DISPATCH);
	dispatched = lop_tail(o);
	probs_a2a(o, "moe_dispatch_probs", pass, d);
	arrived = lop_tail(o);
	if (overlap) {	/* on the compute stream while dispatch moves */
		int16_t first = (int16_t)o->n;

		shared_fwd(o, pass, d);
		if (o->n > first)
			o->op[first].dep[0] = in;
		shared_end = lop_tail(o);
	}
	after = (int16_t)o->n;
	etp_coll(o, "expert_tp_allgather", pass, d, COLL_ALLGATHER);
	if (sort_fwd(o, "expert_sort", pass, d))
		in_dispatch_call(o, d);
	experts_fwd(o, pass, d);
	if (overlap)	/* the experts wait for the dispatch, not the shared MLP */
		o->op[after].dep[0] = arrived;
	host_sync(o, d, counts, dispatched, after);
	etp_coll(o, "expert_tp_reducescatter", pass, d, COLL_REDUCESCATTER);
	sort_fwd(o, "expert_unsort", pass, d);
	o->saved_end = o->n;	/* a combining dispatch saves no tensor */
	a2a(o, "moe_combine", pass, d, combine_B(d), EP_PASS_COMBINE);
	if (!m->combine_reduces) {
		moe_unpermute_probs(o, pass, d);
		op = lop_memop(o, "unpermute", pass, T * k * w * d->act_B +
			       T * k * 4, T * w * d->act_B, 2 * T * k * w);
		moe_unfused_scatter(op, d);
		moe_permute_loop(op, d, PLOOP_UNPERMUTE);
		o->saved_end = o->n;	/* its indices and probabilities */
	}
	latent_fwd(o, pass, d, 1);
	if (shared_end != LAYER_NONE) {
		op = lop_memop(o, "moe_shared_add", pass, 2 * T * h * d->act_B,
			       T * h * d->act_B, T * h);
		op->dep[1] = shared_end;
	}
	o->scope = scope;
}

/* ---- backward ---- */

/* moe_act recomputation (Megatron-Core experts.py: the activation under
 * CheckpointWithoutOutput, its output discarded once fc2 has run and
 * recomputed when fc2's output gradient arrives; in low precision fc2
 * saves its original 16-bit input, set_save_original_input, so Transformer
 * Engine quantizes the forward's row-wise copy only and the column-wise
 * copy the wgrad GEMM reads in the backward, from the recomputed input):
 * the activation again, read R u B, write R f B (with a clamped GLU its
 * clamp kernels first: they are inside the checkpointed bias_act_func),
 * and the column-wise cast, read R f B, write R f L (as the forward
 * casts: under fp8 current scaling the amax pass reads it again). */
static void act_recompute(struct layer_ops *o, const struct layer_dims *d)
{
	double R = rows(d), f = local_ffn(&d->moe), u = fc1_width(d);
	struct layer_op *op;
	int16_t before = lop_tail(o), first = (int16_t)o->n;

	clamp_op(o, "expert_clamp", PASS_RECOMPUTE, d);	/* inside bias_act_func */
	lop_act_fwd(o, "expert_act", PASS_RECOMPUTE, d, R, u, f);
	moe_act_probs_eager(o, PASS_RECOMPUTE, d);
	glu_sync(o, d, before, first);
	if (!d->lowp)
		return;
	/* the cast path of the forward's casts (fp8 current scaling's amax
	 * pass and kernels, per-expert quantizers), one layout written */
	grouped_cast(o, "expert_fc2_input_cast", PASS_BWD, d, R * f);
	op = &o->op[o->n - 1];
	op->k.write_B = R * f * d->lowp_B;
	op->host = HOST_FREE;	/* inside fc2's backward call */
}

/* A grouped linear's backward over the local experts, in width k, out
 * width n: the output gradient's cast, the dgrad (R_e, k, n) and the
 * wgrad (k, n, R_e) with their scale swizzles, the wgrad accumulated. */
static void grouped_bwd(struct layer_ops *o, const struct layer_dims *d,
			const char *cast, const char *dgrad,
			const char *wgrad, double k, double n)
{
	double R = rows(d), L = d->moe.local;

	grouped_cast(o, cast, PASS_BWD, d, R * n);
	lop_swizzle(o, PASS_BWD, d, d->lowp, L * k * n, R * n, 1, L);
	grouped(o, dgrad, PASS_BWD, d, GROUP_M, 0, k, n);
	grouped_opens(o, d);
	lop_swizzle(o, PASS_BWD, d, d->lowp, 0, R * (k + n), 2, L);
	grouped(o, wgrad, PASS_BWD, d, GROUP_K, k, n, 0)->wgrad = 1;
	lop_accumulate_w(o, d, L * k * n, L);
}

static void experts_bwd(struct layer_ops *o, unsigned mods,
			const struct layer_dims *d)
{
	double R = rows(d), h = moe_row_width(d), f = local_ffn(&d->moe);
	double u = fc1_width(d);

	if (!(mods & 1u << RCM_MOE))	/* else the recompute's own tensors */
		stash_op(o, "expert_stash_reload", PASS_BWD, d);
	pad_op(o, "expert_unpad_bwd", PASS_BWD, d, 0);
	bias_op(o, "expert_bias_bwd", PASS_BWD, d);
	if (mods & 1u << RCM_MOE_ACT)
		act_recompute(o, d);
	grouped_bwd(o, d, "expert_fc2_grad_cast", "expert_fc2_dgrad",
		    "expert_fc2_wgrad", f, h);
	moe_act_probs_eager_bwd(o, d);
	lop_act_bwd(o, "expert_act_bwd", d, R, u, f);
	moe_act_probs_bwd(o, d);
	clamp_op(o, "expert_clamp_bwd", PASS_BWD, d);
	fc1_bias_op(o, "expert_fc1_bias_bwd", PASS_BWD, d);
	grouped_bwd(o, d, "expert_fc1_grad_cast", "expert_fc1_dgrad",
		    "expert_fc1_wgrad", h, u);
	pad_op(o, "expert_pad_bwd", PASS_BWD, d, 1);
}

static int16_t shared_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double t = layer_tokens(d), f = d->moe.shared_ffn / d->tp;
	double u = (d->gated ? 2 : 1) * f;

	lop_row_bwd(o, "shared_fc2_grad_allgather", "shared_fc2_grad_cast",
		    "shared_fc2_dgrad", "shared_fc2_wgrad", d, f);
	lop_memop(o, "shared_act_bwd", PASS_BWD, t * (u + f) * d->act_B,
		  t * u * d->act_B, ACT_FLOPS * t * f);
	return lop_column_bwd(o, "shared_fc1_input_allgather",
			      "shared_fc1_grad_cast", "shared_fc1_dgrad",
			      "shared_fc1_grad_tp_reduce", "shared_fc1_wgrad",
			      d, u, d->hidden, d->lowp);
}

/* With moe recomputed (Megatron-Core moe_layer.py: the routed MLP under
 * tensor_parallel.checkpoint from the pre-MLP norm's output), the whole
 * forward, dispatch and combine included, runs again first. */
void moe_bwd(struct layer_ops *o, unsigned mods, const struct layer_dims *d)
{
	const struct moe_dims *m = &d->moe;
	double T = m->tokens, h = moe_row_width(d), k = m->topk;
	int16_t in = lop_tail(o), red = LAYER_NONE, routed;

	if (mods & 1u << RCM_MOE) {
		moe_fwd(o, PASS_RECOMPUTE, d);
		in = lop_tail(o);
	}
	o->scope = SCOPE_MOE;
	latent_bwd(o, d, 1);
	if (!m->combine_reduces) {
		moe_permute_loop(lop_memop(o, "unpermute_bwd", PASS_BWD,
					   T * h * d->act_B + T * k * 4,
					   T * k * h * d->act_B, T * k * h),
				 d, PLOOP_PERMUTE);
		moe_unpermute_probs(o, PASS_BWD, d);
	}
	a2a(o, "moe_combine_bwd", PASS_BWD, d, combine_B(d), EP_PASS_DISPATCH16);
	if (sort_fwd(o, "expert_unsort_bwd", PASS_BWD, d))
		in_dispatch_call(o, d);
	etp_coll(o, "expert_tp_grad_allgather", PASS_BWD, d, COLL_ALLGATHER);
	experts_bwd(o, mods, d);
	etp_coll(o, "expert_tp_grad_reducescatter", PASS_BWD, d,
		 COLL_REDUCESCATTER);
	sort_fwd(o, "expert_sort_bwd", PASS_BWD, d);
	/* a combine kernel (ep.c), with Hybrid-EP's probability gradients */
	a2a(o, "moe_dispatch_bwd", PASS_BWD, d, d->moe.combine_bwd_B,
	    EP_PASS_COMBINE_BWD);
	probs_a2a(o, "moe_dispatch_probs_bwd", PASS_BWD, d);
	probs_cast(o, "moe_probs_cast_bwd", PASS_BWD, d);
	o->scope = SCOPE_MOE_PREPROCESS;
	moe_permute_bwd(o, d);
	latent_bwd(o, d, 0);
	o->scope = SCOPE_MOE_ROUTER;
	moe_router_bwd(o, d);
	routed = lop_tail(o);
	if (m->shared_ffn > 0) {
		int16_t first = (int16_t)o->n;

		if (mods & 1u << RCM_SHARED_EXPERTS)	/* checkpointed */
			shared_fwd(o, PASS_RECOMPUTE, d);
		red = shared_bwd(o, d);
		o->op[first].dep[0] = in;	/* from the output's gradient */
	}
	lop_norm_bwd_after(o, "norm2_bwd", d, red);
	o->op[o->n - 1].dep[0] = routed;
	if (red == LAYER_NONE && m->shared_ffn > 0)
		o->op[o->n - 1].dep[1] = (int16_t)(o->n - 2);
}

void moe_params(const struct layer_dims *d, int bias, double *dense,
		double *experts)
{
	const struct moe_dims *m = &d->moe;
	double h = d->hidden, mats = d->gated ? 3 : 2;
	double fs = m->shared_ffn, w = moe_row_width(d);

	/* the experts in the row width (a latent MoE's l), and its two
	 * projections, h l each, dense */
	*experts = m->experts * (mats * w * m->ffn +
				 (bias ? (d->gated ? 2 : 1) * m->ffn + w : 0));
	/* the router's weight (and bias); AutoModel's FakeBalancedGate
	 * (fixed_gate) is a module without parameters (moe/layers.py) */
	*dense = (m->width > 0 ? 2 * h * m->width : 0) +
		 (m->fixed_gate ? 0 : h * m->experts + (bias ? m->experts : 0)) +
		 (fs > 0 ? mats * h * fs + (bias ? (d->gated ? 2 : 1) * fs + h : 0) : 0);
}
