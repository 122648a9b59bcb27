/*
 * infer_moe.c - the routed-expert MLP of an inference step on one GPU.
 *
 * The MoE layer structure, the routing and the grouped GEMMs are the
 * training model's (moe.c, route.c, gpu_grouped.c): the same router and
 * top-k, route.c's busiest GPU and dispatch bytes for the job's
 * moe.routing and moe.dispatcher, grouped expert GEMMs that share waves.
 * What inference adds is how the engines lay the experts out and which
 * experts a small batch touches.
 *
 * Layout. The MoE layers of an instance span its G GPUs of a stage (tp,
 * or tp x dp with attention_dp): ep of them hold E / ep experts each,
 * etp = G / ep shard every expert's hidden size f_e (spec_job_layout.c).
 *
 *   TP attention (no attention_dp): every GPU of the TP group holds the
 *   step's T tokens. A GPU runs its local experts on the tokens routed to
 *   them and the partial outputs are summed by the all-reduce that ends
 *   the layer, as vLLM's FusedMoE (expert_map under EP, tensor_model_
 *   parallel_all_reduce after it) and SGLang's EP/TP MoE do. No dispatch.
 *   route.c sees T / G tokens per GPU, so S = T k rows in all.
 *
 *   Attention DP: each attention group (tp GPUs) has tokens of its own;
 *   each GPU sends its share T / tp to the experts' GPUs and gets the
 *   results back over EP (dispatch and combine on the job's
 *   moe.dispatcher path: the library's all-to-all, DeepEP's, or all-gather
 *   + reduce-scatter; the engine's adp_moe_allgather turns the default
 *   library all-to-all into all-gather + reduce-scatter), as SGLang's DeepEP MoE, vLLM's DP+EP and TensorRT-LLM's
 *   attention-DP MoE (all-gather + reduce-scatter) do; with tp > 1 the group's tokens
 *   are all-gathered again after the combine.
 *
 * Ops, T tokens of the TP group, R = route rows of the busiest GPU,
 * h width, u = 2 f_e / etp (gated), f = f_e / etp:
 *   [shared experts]  GEMM (T, u_s, h), SiLU-mul, GEMM (T, h, f_s), f_s =
 *                     shared size / tp
 *   router            GEMM (T, E, h) (bf16 weights), top-k: read T E B,
 *                     write T k 8 (ids and weights)
 *   [dispatch]        all-to-all over EP (route.c's bytes), or all-gather
 *   align / sort      the fused MoE kernels' sort of rows by expert
 *                     (moe_align_block_size): ids only without dispatch;
 *                     received rows sorted with it
 *   [quantize]        the experts' input (T h, or the R received rows),
 *                     unless the engine fuses it (quant_fusion all)
 *   fc1               grouped GEMM over the experts with rows: R rows, u
 *                     outputs, k = h
 *   act               SiLU-mul over R rows, [quantize]
 *   fc2               grouped GEMM: R rows, h outputs, k = f
 *   reduce            without dispatch: sum of each token's k rows (read
 *                     T k h B, write T h B; vLLM's moe_sum), the shared
 *                     output added, all-reduce of T h B over TP; with
 *                     dispatch: combine (the dispatch's rows in 16-bit),
 *                     unpermute (weighted sum into T / tp tokens), the
 *                     shared output added, all-gather over TP when tp > 1
 *
 * TensorRT-LLM (engine moe_kernels: cutlass) runs its CUTLASS fused MoE
 * kernel by kernel (cutlass_kernels/moe_gemm/moe_kernels.cu runMoe,
 * _torch/modules/fused_moe/fused_moe_cutlass.py forward_chunk), TP or
 * attention DP with its all-gather. N = tokens the kernels see (T, or
 * N = ep x T/tp after the all-gather), a = the experts' input width:
 *   [shared experts], router, top-k   as above
 *   [router weight]   a model whose router weight scales the experts'
 *                     input (Llama 4: forward_chunk's x = x *
 *                     token_final_scales.to(x.dtype), fused_moe_cutlass.py
 *                     @ 000a01de [?]): the cast (T k 4 B read, T k B
 *                     written) and the product (T h B + T k B read, T h B
 *                     written) over the local tokens, in eager PyTorch;
 *                     the generic kernels apply it inside the first GEMM
 *                     (vLLM fused_experts mul_routed_weight [?])
 *   quantize          fp4_quantize / static FP8 of the T (or T/tp local)
 *                     tokens, when the experts' GEMMs are narrower
 *   [all-gather]      N (h a + 8 k) B: the quantized rows, their ids and
 *                     router weights; NVFP4 scale factors swizzled after
 *   [shared experts]  with the engine's moe_shared_aux_stream here, after
 *                     the all-gather is issued and not waiting for it
 *                     (ep_free): TensorRT-LLM runs them on its MoeShared
 *                     aux stream beside the routed path when the step is
 *                     a CUDA-graph replay (Deepseekv3MoE.forward,
 *                     Llama4MoE.forward: maybe_execute_in_parallel, whose
 *                     do_multi_stream() is set by with_multi_stream(True)
 *                     only around graph capture; _torch/modules/
 *                     multi_stream_utils.py, models/modeling_deepseekv3.py,
 *                     cuda_graph_runner.py); infer_prog.c inst_unit gives
 *                     the overlap in graph steps, eager ones run them in
 *                     turn. Only their overlap with the all-gather is
 *                     modelled: the aux stream also runs beside the
 *                     router and the experts, where both streams' kernels
 *                     share the SMs and HBM (not modelled) [?]
 *   [quantize]        block-scaled fp8 experts (a DeepSeek checkpoint's
 *                     128 x 128) instead: the rows gathered in 16 bits
 *                     (N (h B + 8 k) B) and quantized by the fused op,
 *                     N h B read, N h a + N h / 128 x 4 B written
 *                     (use_deepseek_fp8_block_scale: "dynamic quant +
 *                     scatter + gemm1 ...", fused_moe_cutlass.py @
 *                     000a01de)
 *   sort              one kernel for N <= moe_fused_sort_max (a single
 *                     thread block), else three: per (expert, token
 *                     block) counts (each block scans its tokens' ids:
 *                     L N k 4 B read), their prefix sum, the merge
 *                     writing the permutation maps (3 N k 4 B)
 *   strides           per-expert problem shapes and pointers
 *   expand            the R rows copied into expert order: R h a B read
 *                     and written (expandInputRowsKernel)
 *   fc1, act, fc2     as above (16-bit GEMM outputs; the gated activation
 *                     a kernel of its own writing the quantized fc2 input)
 *                     expand and act walk the R rows in a grid-stride
 *                     loop of a fixed grid (8 blocks an SM for act),
 *                     each row first searching its expert's offset
 *                     (findTotalEltsLessThanTarget, a binary search over
 *                     the experts' first rows; under NVFP4 for the block
 *                     scales' layout): at least R x the GPU's
 *                     cutlass_moe_row_time at the compute dtype (infer.c)
 *   finalize          unpermute, router scale, k-way sum: R h B read, N h
 *                     B written (every token's row, zeros for tokens no
 *                     local expert took: finalizeMoeRoutingKernel's grid
 *                     is the N tokens)
 *   [reduce-scatter]  N h B, or the TP all-reduce
 * With per-rank token counts (engine adp_moe_sized: TensorRT-LLM passes
 * all_rank_num_tokens when it does not pad, thop/allgatherOp.cpp and
 * reducescatterOp.cpp) the all-gather is one ncclBroadcast per rank and
 * the reduce-scatter one ncclReduce per rank, in one NCCL group: a
 * grouped collective of N rows' bytes (infer_prog.c sets coll_desc.group
 * = ep; network/cgroup.h): P chains rooted at every rank, (P-1)/P N on a
 * ring link as in a ring all-gather, one kernel whose channels each run
 * the parts they hold in turn, Simple chains forwarding whole steps.
 * The ids and router weights travel in the same group as tasks of their
 * own (other types, LL); they are costed inside the broadcast's bytes.
 * Its all-to-all path (MNNVL, DeepEP) takes the generic list.
 *
 * Experts touched. A grouped GEMM reads the weights of the experts that
 * have rows only (gpu_grouped.c). The busiest GPU's R rows are spread
 * evenly over A experts:
 *   uniform (moe.routing.balance: exactly balanced, route.c's n_e = S / E
 *     as training's grouped GEMMs take it) A = min(L, R): each expert
 *     gets R / L rows, and below one row an expert the rows sit on R
 *     distinct experts, one each, as a force-balanced benchmark's gate
 *     places them (aiconfigurator collector/helper.py balanced_logits @
 *     ai-dynamo/aiconfigurator 095f58a51c4c: token i's j-th expert is
 *     (i + j ceil(E / k)) mod E, so T tokens reach min(E, T k) experts,
 *     T k / E rows each) [D].
 *   random, zipf, max_mean, eplb: with route.c's expected rows n_e of local
 *     expert e, a Poisson approximation of the multinomial gives
 *     P(n_e > 0) = 1 - exp(-n_e), A = the sum of those.
 * A decode step of one token (T k / E rows per expert) touches k experts
 * (about k at random: 128 (1 - exp(-8 / 128)) = 7.76 of E 128, k 8), not
 * E: the weights it reads are k / E of the experts', which is what makes
 * small-batch MoE decode cheap.
 *
 * Weights: the experts in the checkpoint's format when it quantizes them
 * (gpt-oss: MXFP4 experts, the rest in the job's dtype), else the job's
 * dtype; the router in the base dtype.
 */
#include "infer_impl.h"

#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/spec_job.h"
#include "ep.h"
#include "layer.h"
#include "route.h"

/*
 * Weight-only experts (the weights quantized, the GEMM inputs 16-bit: a
 * GPU without the weights' matrix rate) run the engine's dequantizing
 * kernel (engine weight_only_moe_kernel, mxfp4_moe_kernel): vLLM runs
 * MXFP4 experts through triton_kernels matmul_ogs where that runs (sm90 to
 * sm100 with triton_kernels installed) and Marlin otherwise (sm80), and
 * FP8 on Ampere as Marlin W8A16 (vllm-project/vllm @ 007d5005
 * vllm/model_executor/layers/quantization/mxfp4.py get_mxfp4_backend:
 * triton_kernels_supported = (9, 0) <= capability < (11, 0); fp8.py on a
 * GPU without FP8: Marlin). Its compute-bound tiles reach the GPU's
 * weight_only_moe_efficiency of the clock-scaled bf16 peak, not the bf16
 * GEMM's: each tile converts every weight it loads to 16 bits before its
 * MMAs, Marlin on Ampere-style mma.sync. TensorRT-LLM on Hopper runs
 * gpt-oss's MXFP4 experts through its TRITON MoE backend (TritonFusedMoE,
 * the serving AUTO choice for 90 <= sm < 100: aiconfigurator's collector
 * cites resolve_moe_backend, model_config.py @ 1.3.0rc20) at a rate of its
 * own (mxfp4_moe_kernel triton_trtllm). 0 where the engine or the GPU
 * says nothing (the bf16 GEMM rate, as before).
 * Under EP, TritonFusedMoE's router (TritonEPRouter, fused_moe_triton.py,
 * NVIDIA/TensorRT-LLM @ 00131d71) takes the top-k of every token the
 * layer got (all attention-DP ranks' after the all-gather) and prunes the
 * entries of other ranks' experts in place (prune_routing_ep: the
 * bitmatrix shifted to the local slice, compaction moving the others to
 * the end as -1), then routing_from_bitmatrix(.., n_expts_local,
 * n_expts_act): the gather index keeps n_tokens x top-k entries.
 * matmul_ogs sizes its block_m from tokens_per_expt = m // n_expts_tot
 * with m that index's length and n_expts_tot the local experts
 * (triton-lang/triton python/triton_kernels matmul_ogs_details/
 * opt_flags.py make_default_opt_flags_nvidia; matmul_ogs.py: "if the
 * activations are gathered, then M is number of gather indices"), and the
 * second GEMM reads the first's n_tokens x top-k rows: under balanced
 * routing a local expert gets n_tokens x top-k / E rows, the rule counts
 * ep times that (wo_cover_rows = ep).
 */
static void wo_kernel(const struct engine_spec *en, const struct gpu_spec *g,
		      struct infer_moe *e)
{
	double marlin = 0, mx;

	e->wo_eff[0] = e->wo_eff[1] = 0;
	e->wo_tile_m = NULL;
	e->wo_ntile_m = 0;
	e->wo_tile_n = 0;
	e->wo_tile_cover = 0;
	e->wo_cover_rows = 1;
	if (!en)
		return;
	e->wo_tile_m = en->weight_only_moe_tile_m.v;
	e->wo_ntile_m = en->weight_only_moe_tile_m.n;
	e->wo_tile_n = (double)en->weight_only_moe_tile_n;
	e->wo_tile_cover = en->weight_only_moe_tile_pick ==
			   ENGINE_WO_TILE_COVER;
	if (en->weight_only_moe_kernel == ENGINE_WO_MOE_MARLIN)
		marlin = g->weight_only_moe_eff[GPU_WO_MARLIN];
	e->wo_eff[0] = marlin;
	/* the MXFP4 kernel's own rate where the GPU gives one */
	mx = en->mxfp4_moe_kernel == ENGINE_MXFP4_MOE_TRITON_MX ?
	     g->weight_only_moe_eff[GPU_WO_TRITON_MX] :
	     en->mxfp4_moe_kernel == ENGINE_MXFP4_MOE_TRITON_TRTLLM ?
	     g->weight_only_moe_eff[GPU_WO_TRITON_TRTLLM] : 0;
	e->wo_eff[1] = mx > 0 ? mx : marlin;
	if (en->mxfp4_moe_kernel == ENGINE_MXFP4_MOE_TRITON_TRTLLM)
		e->wo_cover_rows = e->ep;
	if (mx == 0 && marlin > 0) {
		e->marlin_pad[0] = (double)en->mxfp4_marlin_pad_ffn;
		e->marlin_pad[1] = (double)en->mxfp4_marlin_pad_hidden;
	}
}

/* vLLM's Triton fused_moe picks its tile from a tuned file named by
 * E (the experts a GPU holds: w2's first dimension), N (an expert's
 * intermediate columns a GPU holds: w2's last) and the device
 * (try_get_optimal_moe_config, vllm/model_executor/layers/fused_moe/
 * fused_moe.py), else from get_default_config (M > E: BLOCK 64 x 64 x
 * 32, GROUP_SIZE_M 8, Triton's default warps and stages). Where the
 * engine runs that kernel (triton_moe_configs) and the GPU lists the
 * shape as untuned, its default tile's efficiency; else 0. */
static double triton_untuned(const struct engine_spec *en,
			     const struct gpu_spec *g,
			     const struct infer_moe *e)
{
	const struct schema_int_list *u = &g->triton_moe_untuned;
	double n_gpu = e->etp > 0 ? e->ffn / e->etp : e->ffn;
	size_t i;

	if (!en || !en->triton_moe_configs || g->triton_moe_default_eff <= 0)
		return 0;
	for (i = 0; i + 1 < u->n; i += 2)
		if (fabs((double)u->v[i] - e->local) < 0.5 &&
		    fabs((double)u->v[i + 1] - n_gpu) < 0.5)
			return g->triton_moe_default_eff;
	return 0;
}

/* vLLM's Triton fused_moe on block-fp8 experts reads its tile from the
 * tuned file for (E, N, device) (try_get_optimal_moe_config: the entry
 * of the nearest key to M, the step's tokens), else get_default_config's
 * BLOCK_SIZE_M 64 x block_shape. Where the GPU lists the shape with a
 * small-batch tile (triton_moe_fp8_block_tuned), that tile and the
 * tokens it runs at into e->tuned; else e->tuned[1] stays 0. */
static void triton_fp8_tuned(const struct engine_spec *en,
			     const struct gpu_spec *g, struct infer_moe *e)
{
	const struct schema_int_list *u = &g->triton_moe_fp8_block_tuned;
	double n_gpu = e->etp > 0 ? e->ffn / e->etp : e->ffn;
	size_t i, k;

	memset(e->tuned, 0, sizeof(e->tuned));
	if (!en || !en->triton_moe_configs ||
	    en->fp8_block_moe_kernel != ENGINE_FP8_BLOCK_MOE_TRITON)
		return;
	for (i = 0; i + 7 < u->n; i += 8)
		if (fabs((double)u->v[i] - e->local) < 0.5 &&
		    fabs((double)u->v[i + 1] - n_gpu) < 0.5) {
			for (k = 0; k < 6; k++)
				e->tuned[k] = (double)u->v[i + 2 + k];
			return;
		}
}

void infer_moe_dims(const struct job_spec *j, const struct gpu_spec *g,
		    struct infer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;
	const struct serving_spec *s = &j->serving;
	struct infer_moe *e = &d->moe;
	double group;

	memset(e, 0, sizeof(*e));
	e->experts = (double)m->n_routed_experts;
	e->topk = (double)(m->num_experts_per_tok > 0 ? m->num_experts_per_tok
						       : m->experts_per_token);
	e->ffn = (double)m->moe_intermediate_size;
	e->width = (double)m->moe_latent_size;
	e->shared_ffn = (double)model_shared_ffn(m);
	e->adp = p->attention_dp ? (double)p->dp : 1;
	e->ep = (double)p->ep;
	group = (double)p->tp * e->adp;
	e->etp = p->etp > 0 ? (double)p->etp : group / e->ep;
	/* the slots an EP rank holds: routed experts and EPLB replicas */
	e->local = (double)job_expert_slots(j) / e->ep;
	e->dispatch = p->attention_dp && group > 1;
	/* the engine's own exchange replaces the library all-to-all (the
	 * default dispatcher); a job naming DeepEP and the like keeps it */
	e->allgather = j->moe.dispatcher &&
		       (j->moe.dispatcher->mode == EP_ALLGATHER ||
			(j->moe.dispatcher->mode == EP_LIBRARY &&
			 j->serving.engine &&
			 j->serving.engine->adp_moe_allgather));
	e->sized = e->allgather && j->serving.engine &&
		   j->serving.engine->adp_moe_sized;
	e->weight_q = m->quantization.method == QUANT_MXFP4 &&
		      dtype_bytes(d->weight) > dtype_bytes(DTYPE_MXFP4) ?
		      DTYPE_MXFP4 : d->weight;
	e->compute_set = s->activation_dtype >= 0;
	if (e->compute_set)
		e->compute_q = (enum dtype)s->activation_dtype;
	else
		e->compute_q = gpu_peak_flops(g, e->weight_q) > 0 ? e->weight_q
								  : d->base;
	e->dispatch_B = j->moe.dispatch_dtype >= 0 ?
			dtype_bytes((enum dtype)j->moe.dispatch_dtype) : 0;
	e->cutlass = s->engine && s->engine->moe_kernels == ENGINE_MOE_CUTLASS;
	e->fp8_group = m->quantization.method == QUANT_FP8 &&
		       m->quantization.weight_block_size.n == 2 ?
		       (double)m->quantization.weight_block_size.v[1] : 0;
	e->triton_rate = s->engine && s->engine->fp8_block_moe_kernel ==
					      ENGINE_FP8_BLOCK_MOE_TRITON ?
			 g->triton_moe_fp8_block_rate : 1;
	e->deepgemm = e->dispatch && j->moe.dispatcher &&
		      (j->moe.dispatcher->mode == EP_FORWARD ||
		       j->moe.dispatcher->mode == EP_DIRECT);
	e->untuned_eff = triton_untuned(s->engine, g, e);
	triton_fp8_tuned(s->engine, g, e);
	e->fused_sort_max = s->engine ? (double)s->engine->moe_fused_sort_max
				      : 0;
	e->shared_aux = e->cutlass && e->dispatch && e->allgather &&
			s->engine->moe_shared_aux_stream;
	e->tbo = s->engine && s->engine->two_batch_overlap && e->dispatch &&
		 !e->allgather;
	if (e->tbo) {
		e->tbo_delta[0] = (int)s->engine->tbo_decode_delta_stages;
		e->tbo_delta[1] = (int)s->engine->tbo_prefill_delta_stages;
	}
	e->sigmoid = m->scoring_func == SCORE_SIGMOID;
	e->weight_on_input = m->router_weight_on_input == 1;
	wo_kernel(s->engine, g, e);
	infer_moe_precision(d);
}

void infer_moe_precision(struct infer_dims *d)
{
	struct infer_moe *e = &d->moe;

	e->weight = e->weight_q;
	e->compute = e->compute_q;
	/* experts the checkpoint keeps unquantized run in the base dtype */
	if (d->qexcl & QX_EXPERTS) {
		e->weight = d->base;
		if (!e->compute_set)
			e->compute = d->base;
	}
	e->weight_B = dtype_bytes(e->weight);
	e->gemm_a_B = fmin(dtype_bytes(e->compute), d->act_B);
	/* the GEMMs dequantize when the weights are narrower than the
	 * inputs they meet (weight-only quantization) */
	e->wo_eff_used = e->weight_B < dtype_bytes(e->compute) ?
			 e->wo_eff[e->weight == DTYPE_MXFP4] : 0;
	/* vllm-project/vllm quantization/mxfp4.py Mxfp4MoEMethod.
	 * create_weights under Marlin ("The moe marlin kernel requires that
	 * for each linear n % 256 == 0 and k % 128 == 0"): the experts are
	 * built padded, intermediate_size_per_partition to round_up(.., 128)
	 * and hidden_size to round_up(.., 256), and the GEMMs run at that
	 * size */
	e->pad[0] = e->pad[1] = 0;
	if (e->weight == DTYPE_MXFP4 && e->wo_eff_used > 0) {
		e->pad[0] = e->marlin_pad[0];
		e->pad[1] = e->marlin_pad[1];
	}
	/* A block-scaled fp8 checkpoint's experts (DeepSeek's 128 x 128):
	 * CutlassFusedMoE hands its 16-bit input to the fused op
	 * (use_deepseek_fp8_block_scale), which quantizes it per 1 x group
	 * itself ("dynamic quant + scatter + gemm1 ...": fused_moe_cutlass.py
	 * forward_chunk and the class comment, NVIDIA/TensorRT-LLM @
	 * 000a01de). */
	e->quant_in_op = e->cutlass && e->fp8_group > 0 &&
			 e->compute == DTYPE_FP8;
	/* The same experts elsewhere: vLLM's Triton fused_moe with block
	 * scales (fused_moe_kernel's use_fp8_w8a8 with block_shape, each
	 * 128-deep k block's partial sums rescaled by the A group and B
	 * block scales) at the GPU's measured share of the fp8 rate; SGLang
	 * runs its copy of that kernel too unless DeepEP carries the tokens
	 * (Fp8MoEMethod.create_moe_runner, 0.5.x: moe_runner_backend auto is
	 * DEEP_GEMM when ENABLE_JIT_DEEPGEMM and the a2a backend is deepep,
	 * else TRITON). Behind a DeepEP-class dispatcher (forward or direct
	 * mode: DeepEP normal / low-latency, Hybrid-EP, MORI) the experts are
	 * DeepGEMM's grouped GEMMs (contiguous or masked), at the GPU's fp8
	 * rate, as before (results/reference/inference/README.md ep39). */
	/* 16-bit experts (not weight-only, not fp8) off the CUTLASS path:
	 * the default tile's rate where the shape is untuned */
	e->default_eff = !e->cutlass && e->weight == e->compute &&
			 dtype_bytes(e->compute) == 2 ? e->untuned_eff : 0;
	e->block_rate = !e->cutlass && e->fp8_group > 0 &&
			e->compute == DTYPE_FP8 && e->weight == DTYPE_FP8 &&
			!e->deepgemm ? e->triton_rate : 1;
	/* TensorRT-LLM quantizes the experts' input before its all-gather
	 * (NVFP4, per-tensor FP8; not the in-op block-scaled case above);
	 * on an all-to-all path (the generic list) the rows travel as
	 * route.c sizes them (moe.dispatch_dtype, else 16-bit), and the
	 * combine's bytes scale by act_B / elem_B from those */
	e->elem_B = e->dispatch_B > 0 ? e->dispatch_B :
		    e->cutlass && e->allgather && !e->quant_in_op ?
		    e->gemm_a_B : d->act_B;
}

/* Weight matrices of an expert MLP: gate, up, down (or up, down). */
static double mats(const struct infer_dims *d)
{
	return d->gated ? 3 : 2;
}

/* Elements of an expert's input row: a latent MoE's l, else h. */
static double row_width(const struct infer_dims *d)
{
	return d->moe.width > 0 ? d->moe.width : d->hidden;
}

/* A latent MoE's two projections, h l each, replicated on every GPU
 * (TensorRT-LLM modeling_nemotron_h.py NemotronHMOE: "should NOT be
 * TP-sharded", Linear without a mapping; vLLM nemotron_h.py
 * ReplicatedLinear): 0 without. */
static double latent_params(const struct infer_dims *d)
{
	return d->moe.width > 0 ? 2 * d->hidden * d->moe.width : 0;
}

double infer_moe_params(const struct infer_dims *d)
{
	const struct infer_moe *e = &d->moe;

	return d->hidden * e->experts + latent_params(d) +
	       mats(d) * d->hidden * e->shared_ffn / d->tp +
	       e->local * mats(d) * row_width(d) * e->ffn / e->etp;
}

/* The projections' weights as the shared experts' class (both are the
 * layer's dense linears beside the experts, quantized alike [?]). */
/* x up to a multiple of m (0: x). */
static double pad_to(double x, double m)
{
	return m > 0 ? ceil(x / m) * m : x;
}

/* The experts are held at the size their GEMMs run (pad: Marlin's
 * MXFP4 experts are created padded, Mxfp4MoEMethod.create_weights,
 * infer_moe_precision): a GPU's w13 and w2 take pad_to(h) x pad_to(f)
 * elements each of the mats(d). */
double infer_moe_weight_B(const struct infer_dims *d)
{
	const struct infer_moe *e = &d->moe;

	return d->hidden * e->experts * d->act_B +
	       (mats(d) * d->hidden * e->shared_ffn / d->tp +
		latent_params(d)) * infer_class_weight_B(d, QX_SHARED) +
	       e->local * mats(d) * pad_to(row_width(d), e->pad[1]) *
	       pad_to(e->ffn / e->etp, e->pad[0]) * e->weight_B;
}

/* A latent MoE's projection of the T tokens a GPU holds, down (h -> l,
 * after the router, which reads h) or up (l -> h, before the shared
 * output is added and the TP all-reduce: TensorRT-LLM's NemotronHMOE
 * forward, fc1_latent_proj, experts, fc2_latent_proj, then shared +
 * routed and one all-reduce); the 16-bit input quantized first when the
 * class' GEMMs take a lower dtype (as the shared experts'). */
static void latent(struct infer_ops *o, const struct infer_dims *d, double T,
		   int up)
{
	double l = d->moe.width, h = d->hidden;

	if (!(l > 0))
		return;
	infer_op_gemm_q(o, d, QX_SHARED, up ? "moe_latent_up" :
			"moe_latent_down", T, up ? h : l, up ? l : h);
}

int infer_moe_route(const struct job_spec *j, const struct infer_dims *d,
		    double tokens, struct arena *a, struct infer_route *out,
		    struct diag *dg)
{
	const struct infer_moe *e = &d->moe;
	struct layer_dims ld;
	struct route_result rr;
	double group = e->ep * e->etp, active = 0, rows = 0;
	int64_t i;

	memset(out, 0, sizeof(*out));
	out->node_share = 1;
	layer_dims_from_job(j, &ld);
	ld.hidden = d->hidden;
	ld.act_B = d->act_B;
	ld.moe.ep = e->ep;
	ld.moe.etp = e->etp;
	ld.moe.local = e->local;
	ld.moe.tokens = e->dispatch ? tokens / d->tp : tokens / group;
	ld.moe.rows = ld.moe.tokens * e->topk * e->etp;
	ld.moe.elem_B = e->elem_B;
	if (tokens <= 0)
		return 0;
	if (route_plan(j, &ld, a, &rr, dg) != 0)
		return -1;
	for (i = 0; i < (int64_t)e->local; i++) {
		active += 1 - exp(-rr.rows[i]);
		rows += rr.rows[i];
	}
	if (job_routing_balance(j) == ROUTE_UNIFORM)	/* exact balance */
		active = fmin(e->local, rows);
	out->tokens = ld.moe.tokens;
	out->rows = ld.moe.rows;
	out->active = active;
	out->dispatch_B = ld.moe.dispatch_B;
	out->a2a_B = ld.moe.a2a_B;
	out->max_mean = rr.max_mean;
	out->node_share = ld.moe.node_share;
	/* the all-to-all's bytes: route.c sizes rows in moe.dispatch_dtype,
	 * else the 16-bit activations. The all-gather path (e->allgather)
	 * reads none of them: its ops carry their own N h elem_B bytes
	 * (TensorRT-LLM's rows quantized first), and ep_coll_path ignores
	 * row_B and EP_ROW_FP8 for its EP_ALLGATHER or EP_LIBRARY modes */
	out->row_B = ld.moe.row_B;
	out->row_fp8 = ld.moe.dispatch_dt == DTYPE_FP8;
	/* the combine is training's forward combine (route.c): the same
	 * rows back as h act_B bytes each, the pace GPU sending its
	 * surplus back (the dispatch's matrix transposed) */
	out->combine_B = ld.moe.combine_B;
	out->combine_a2a_B = ld.moe.a2a_pass_B[EP_PASS_COMBINE - 1];
	return 0;
}

/* op (an IOP_EP collective, or NULL) moves rows of row_B bytes of kind
 * EP_ROW_* (FP8 rows, a combine's reduction): what the dispatcher's path
 * costs per row (ep_coll_path), as training's passes (moe.c). */
static struct infer_op *ep_row(struct infer_op *op, double row_B, int kind)
{
	if (op) {
		op->ep_row_B = row_B;
		op->ep_kind = kind;
	}
	return op;
}

/* x rounded up to a multiple of m (m 0: x). */
/* A grouped GEMM of the experts with rows. */
static void grouped(struct infer_ops *o, const char *name,
		    const struct infer_route *r, double n, double k)
{
	struct infer_op *op = infer_op_gemm(o, name, r->rows, n, k);

	if (op) {
		op->kern = IK_GROUPED;
		op->groups = fmax(1, r->active);
	}
}

/* Whether the layer's fused MoE quantizes its own input (the CUTLASS
 * list: fp4_quantize / static FP8 in the module), so the norm before it
 * writes 16 bits (infer.c's infer_layer_ops). */
int infer_moe_quantizes_input(const struct infer_dims *d)
{
	const struct infer_moe *e = &d->moe;

	return e->cutlass && (!e->dispatch || e->allgather);
}

/* The shared experts over the TP group's T tokens. With `in_16bit` the
 * norm wrote their input in 16 bits (infer_moe_quantizes_input): a
 * GatedMLP's quantized Linear quantizes it in a kernel of its own
 * (TensorRT-LLM's Llama4MoE shared_expert: linear.py fp4_quantize /
 * static_quantize_e4m3_per_tensor on the 16-bit tensor). */
static void shared(struct infer_ops *o, const struct infer_dims *d, double T,
		   int in_16bit)
{
	double f = d->moe.shared_ffn / d->tp, u = (d->gated ? 2 : 1) * f;
	int excl = (d->qexcl & QX_SHARED) != 0;
	int apart = infer_act_quant_apart(d) && !excl;
	double w = apart || excl ? d->act_B : d->gemm_a_B;

	if (f <= 0)
		return;
	if (in_16bit && d->gemm_a_B < d->act_B && !excl)
		infer_op_quant(o, d, "quant", T * d->hidden);
	infer_op_gemm_q(o, d, QX_SHARED, "shared_gate_up", T, u, d->hidden);
	infer_op_mem(o, "shared_act", T * u * d->act_B, T * f * w,
		     ACT_FLOPS * T * f);
	if (apart)	/* a GatedMLP: engine act_quant as the dense MLP's */
		infer_op_quant(o, d, "quant", T * f);
	infer_op_gemm_q(o, d, QX_SHARED, "shared_down", T, d->hidden, f);
}

/* Quantization of n expert-input elements, unless fused. */
static void expert_quant(struct infer_ops *o, const struct infer_dims *d,
			 double n)
{
	const struct infer_moe *e = &d->moe;

	if (e->gemm_a_B < d->act_B && d->quant_fusion < ENGINE_QFUSE_ALL)
		infer_op_mem(o, "expert_quant", n * d->act_B, n * e->gemm_a_B,
			     2 * n);
}

/* The router GEMM over the TP group's T tokens (bf16 weights) and its
 * top-k: scores read, ids and weights written. */
static void router(struct infer_ops *o, const struct infer_dims *d, double T)
{
	const struct infer_moe *e = &d->moe;
	struct infer_op *op = infer_op_gemm(o, "router", T, e->experts,
					    d->hidden);

	if (op)
		op->weight_B_base = 1;
	infer_op_mem(o, "router_topk", T * e->experts * d->act_B,
		     T * e->topk * 8, (e->sigmoid ? 4 : 6) * T * e->experts);
}

/* Two-batch overlap: a half batch's stage ends before op `at`, called
 * once the ops from `at` are in o (none when the layer added none
 * there). */
static void tbo_yield(struct infer_ops *o, int at)
{
	if (at < o->n)
		o->op[at].tbo_yield = 1;
}

/* The shared experts as two-batch overlap places them: beside the
 * dispatch (decode) or the combine (prefill) issued just before, not
 * waiting for it (SGLang operations_strategy.py: op_shared_experts
 * between op_dispatch_a and op_dispatch_b, or op_combine_a and
 * op_combine_b). */
static void shared_beside(struct infer_ops *o, const struct infer_dims *d,
			  double T)
{
	int at = o->n, i;

	shared(o, d, T, 0);
	for (i = at; i < o->n; i++)
		o->op[i].ep_free = 1;
}

/* What follows the experts in both pipelines: with dispatch the
 * combine (reduce-scatter of N rows, or the all-to-all back and the
 * unpermute), the shared output and the TP all-gather; without, the
 * shared output added and the TP all-reduce. Under two-batch overlap
 * (tbo) the decode strategy yields after the combine is issued and
 * after its wait (op_combine_b), the prefill one after the combine is
 * issued, then runs the shared experts. */
static void moe_tail(struct infer_ops *o, const struct infer_dims *d,
		     double T, const struct infer_route *r, enum infer_tbo tbo)
{
	const struct infer_moe *e = &d->moe;
	double h = d->hidden, k = e->topk, B = d->act_B, Tin = r->tokens;
	double w = row_width(d);	/* the experts' rows: h, or the latent */
	struct infer_op *op;
	int at, out = INFER_MAX_OPS;

	if (!e->dispatch) {
		latent(o, d, T, 1);
		if (e->shared_ffn > 0)
			infer_op_mem(o, "moe_shared_add", 2 * T * h * B,
				     T * h * B, T * h);
		infer_op_coll(o, "moe_tp_allreduce", IOP_TP, d->tp,
			      COLL_ALLREDUCE, T * h * B);
		return;
	}
	if (e->allgather) {
		ep_row(infer_op_coll(o, "moe_combine", IOP_EP, e->ep,
				     e->sized ? COLL_REDUCE : COLL_REDUCESCATTER,
				     Tin * e->ep * w * B), w * B,
		       EP_ROW_COMBINE);
	} else {
		/* the dispatched rows come back as w activations, without
		 * the dispatch's extras (route.c's combine_B) */
		op = ep_row(infer_op_coll(o, "moe_combine", IOP_EP, e->ep,
					  COLL_ALLTOALL, r->combine_B),
			    w * B, EP_ROW_COMBINE);
		if (op)
			op->a2a_B = r->combine_a2a_B;
		at = o->n;	/* after op_combine_a */
		if (tbo == ITBO_PREFILL)
			shared_beside(o, d, T);
		infer_op_mem(o, "unpermute", Tin * k * w * B + Tin * k * 4,
			     Tin * w * B, 2 * Tin * k * w);
		if (tbo != ITBO_NONE)
			tbo_yield(o, at);
		out = o->n;	/* op_output */
	}
	latent(o, d, Tin, 1);
	if (e->shared_ffn > 0) {
		infer_op_coll(o, "shared_tp_allreduce", IOP_TP, d->tp,
			      COLL_ALLREDUCE, T * h * B);
		infer_op_mem(o, "moe_shared_add", 2 * Tin * h * B,
			     Tin * h * B, Tin * h);
	}
	infer_op_coll(o, "moe_tp_allgather", IOP_TP, d->tp, COLL_ALLGATHER,
		      T * h * B);
	if (tbo == ITBO_DECODE)
		tbo_yield(o, out);
}

/* Thread blocks of TensorRT-LLM's three-kernel row sort over n tokens
 * and `local` experts (moe_kernels.cu computeNumTokensPerBlock: the
 * smallest power of two b from 32 to 1024 tokens a block with
 * ceil(n / b) x local <= b). */
static double sort_blocks(double n, double local)
{
	double b;

	for (b = 32; b < 1024; b *= 2)
		if (ceil(n / b) * local <= b)
			break;
	return ceil(n / b) * local;
}

/* TensorRT-LLM's CUTLASS fused MoE (cutlass_kernels/moe_gemm/
 * moe_kernels.cu runMoe, _torch/modules/fused_moe/fused_moe_cutlass.py),
 * the header's "cutlass" list. N: the tokens the kernels see (T, or
 * every rank's after the all-gather), R: the local experts' rows. */
static void cutlass_ops(const struct infer_dims *d, double T,
			const struct infer_route *r, struct infer_ops *o)
{
	const struct infer_moe *e = &d->moe;
	double h = row_width(d), k = e->topk, R = r->rows, L = e->local;
	double f = e->ffn / e->etp, u = (d->gated ? 2 : 1) * f;
	double B = d->act_B, a = e->gemm_a_B;
	double Tq = e->dispatch ? r->tokens : T;
	double N = e->dispatch ? r->tokens * e->ep : T, blocks;
	struct infer_op *op;
	int at, i;

	if (!e->shared_aux)
		shared(o, d, T, 1);
	router(o, d, T);
	latent(o, d, T, 0);
	if (e->weight_on_input) {
		/* x = x * token_final_scales.to(x.dtype): a cast of the fp32
		 * weights, then the product over the 16-bit input */
		infer_op_mem(o, "moe_weight_cast", Tq * k * 4, Tq * k * B, 0);
		infer_op_mem(o, "moe_weight_input", Tq * h * B + Tq * k * B,
			     Tq * h * B, Tq * h);
	}
	if (a < B && !e->quant_in_op)
		infer_op_mem(o, "moe_quant", Tq * h * B, Tq * h * a, 2 * Tq * h);
	if (e->dispatch) {
		ep_row(infer_op_coll(o, "moe_dispatch", IOP_EP, e->ep,
				     e->sized ? COLL_BROADCAST : COLL_ALLGATHER,
				     N * (h * e->elem_B + k * 8)),
		       h * e->elem_B + k * 8, 0);
		/* the shared experts on the aux stream: in a graph step
		 * beside the all-gather (inst_unit), else after it */
		at = o->n;
		if (e->shared_aux)
			shared(o, d, T, 1);
		for (i = at; i < o->n; i++)
			o->op[i].ep_free = 1;
		if (e->compute == DTYPE_NVFP4)	/* swizzle_sf: 128 x 4 tiles */
			infer_op_mem(o, "moe_sf_swizzle", N * h / 16,
				     N * h / 16, 0);
		infer_op_coll(o, "expert_tp_allgather", IOP_ETP, e->etp,
			      COLL_ALLGATHER, R * h * B);
	}
	/* the fused op's own quantization of the N rows it received: fp8
	 * values and one fp32 scale a group */
	if (e->quant_in_op && a < B)
		infer_op_mem(o, "moe_quant", N * h * B, N * h * a +
			     N * h / e->fp8_group * dtype_bytes(DTYPE_FP32),
			     2 * N * h);
	if (N <= e->fused_sort_max) {
		infer_op_mem(o, "moe_sort", N * k * 4, 2 * N * k * 4 +
			     (L + 1) * 8, 0);
	} else {
		blocks = sort_blocks(N, L);
		infer_op_mem(o, "moe_sort_count", L * N * k * 4,
			     N * k * 4 + blocks * 4, 0);
		infer_op_mem(o, "moe_sort_scan", blocks * 4,
			     blocks * 4 + (L + 1) * 8, 0);
		infer_op_mem(o, "moe_sort_merge", blocks * 8 + N * k * 4,
			     3 * N * k * 4, 0);
	}
	infer_op_mem(o, "moe_strides", (L + 1) * 8, 0, 0);
	op = infer_op_mem(o, "moe_expand", R * h * a + R * 8,
			  R * h * a + R * 4, 0);
	if (op)
		op->search_rows = R;
	grouped(o, "expert_gate_up", r, u, h);
	op = infer_op_mem(o, "expert_act", R * u * B, R * f * a,
			  ACT_FLOPS * R * f);
	if (op)
		op->search_rows = R;
	grouped(o, "expert_down", r, h, f);
	if (e->dispatch)
		infer_op_coll(o, "expert_tp_reducescatter", IOP_ETP, e->etp,
			      COLL_REDUCESCATTER, R * h * B);
	infer_op_mem(o, "moe_finalize", R * h * B + N * k * 12, N * h * B,
		     2 * R * h);
	moe_tail(o, d, T, r, ITBO_NONE);
}

void infer_moe_ops(const struct infer_dims *d, double T,
		   const struct infer_route *r, enum infer_tbo tbo,
		   struct infer_ops *o)
{
	const struct infer_moe *e = &d->moe;
	double h = row_width(d), k = e->topk, R = r->rows;
	double f = e->ffn / e->etp, u = (d->gated ? 2 : 1) * f;
	double Tin = r->tokens, B = d->act_B, in_rows;
	struct infer_op *op;
	int at;

	if (e->cutlass && (!e->dispatch || e->allgather)) {
		cutlass_ops(d, T, r, o);
		return;
	}
	if (!e->tbo)	/* infer_moe_dims: an all-to-all dispatch */
		tbo = ITBO_NONE;
	if (tbo == ITBO_NONE)
		shared(o, d, T, 0);
	router(o, d, T);
	latent(o, d, T, 0);
	if (e->dispatch) {
		if (e->allgather) {
			ep_row(infer_op_coll(o, "moe_dispatch", IOP_EP, e->ep,
					     e->sized ? COLL_BROADCAST :
							COLL_ALLGATHER,
					     Tin * e->ep * h * e->elem_B),
			       h * e->elem_B, 0);
		} else {
			at = o->n;	/* after op_select_experts */
			op = ep_row(infer_op_coll(o, "moe_dispatch", IOP_EP,
						  e->ep, COLL_ALLTOALL,
						  r->dispatch_B),
				    r->row_B, r->row_fp8 ? EP_ROW_FP8 : 0);
			if (op)
				op->a2a_B = r->a2a_B;
			if (tbo == ITBO_DECODE) {
				tbo_yield(o, at);
				shared_beside(o, d, T);
			}
		}
		at = o->n;	/* op_dispatch_b: the rows are awaited */
		infer_op_coll(o, "expert_tp_allgather", IOP_ETP, e->etp,
			      COLL_ALLGATHER, R * h * B);
		infer_op_mem(o, "expert_sort", R * h * B, R * h * B, 0);
		if (tbo != ITBO_NONE)
			tbo_yield(o, at);
		in_rows = R;
	} else {
		infer_op_mem(o, "moe_align", T * k * 4, (R + e->local) * 4, 0);
		in_rows = T;
	}
	expert_quant(o, d, in_rows * h);
	grouped(o, "expert_gate_up", r, u / f * pad_to(f, e->pad[0]),
		pad_to(h, e->pad[1]));
	infer_op_mem(o, "expert_act", R * u * B, R * f * e->gemm_a_B,
		     ACT_FLOPS * R * f);
	grouped(o, "expert_down", r, pad_to(h, e->pad[1]),
		pad_to(f, e->pad[0]));
	if (!e->dispatch) {
		infer_op_mem(o, "moe_sum", T * k * h * B, T * h * B, T * k * h);
		moe_tail(o, d, T, r, ITBO_NONE);
		return;
	}
	infer_op_coll(o, "expert_tp_reducescatter", IOP_ETP, e->etp,
		      COLL_REDUCESCATTER, R * h * B);
	infer_op_mem(o, "expert_unsort", R * h * B, R * h * B, 0);
	moe_tail(o, d, T, r, tbo);
}
