/*
 * infer_mem.c - memory of a serving instance per GPU.
 *
 * Notation of infer.c (one GPU of a TP group of t; W, B, K bytes per
 * weight, activation and KV element). Pipeline rank r holds L_r layers.
 *
 * Weights: L_r (P_layer W + 2 h B) (the linear layers in the weights'
 * dtype, the two norms in bf16), plus the embedding V h / t B on the first
 * rank and the LM head V h / t B + h B (final norm) on the last; with tied
 * embeddings and one rank the table is held once.
 *
 * Activations: the engine sizes its buffers by a forward of its largest
 * step (vLLM profiles a dummy run of max_num_batched_tokens tokens and
 * max_num_seqs sequences; SGLang and TensorRT-LLM reserve the same
 * buffers): T_max tokens keep the residual and the hidden state (2 h B),
 * and the widest intermediate of a layer, max(q + 2 kv, u + f') B; the
 * last rank adds the logits of S_max = max_num_seqs rows, gathered over
 * TP (V B) and in fp32 for sampling (V 4). TensorRT-LLM's CUTLASS fused
 * MoE (engine moe_kernels: cutlass) instead allocates its workspace over
 * the n k rows of the n tokens the op sees: under attention DP with the
 * all-gather, every rank's T_max (the KV estimation's dummy requests of
 * max_num_tokens are repeated tp_size times, _torch/pyexecutor/_util.py
 * KvCacheCreator), so n = adp T_max (cutlass_moe_B).
 *
 * KV cache, by the engine's memory rule, C the device memory, C_u the
 * usable memory (C less the runtime context, spec_gpu), f the engine's
 * fraction, A the activations, X the workspace, M the weights:
 *
 *   total  (vLLM)     KV = f C - (C - C_u) - M - A - X
 *   static (SGLang)   KV = f C - (C - C_u) - M       (A + X from the rest)
 *   free   (TRT-LLM)  KV = f (C_u - M - A - X)
 *   snapshot (vLLM V1) KV = f C - M - A - (X - G)
 *
 * snapshot is vLLM V1's Worker.determine_available_memory (read at
 * ROCm/vllm 0909_rc3 @ 6663000a, upstream 0.10.1: v1/worker/gpu_worker.py
 * :174-177 init_device takes MemorySnapshot() once the device is set, so
 * the CUDA context is in it, and requested_memory = total x
 * gpu_memory_utilization; :240-258 KV = requested_memory -
 * non_kv_cache_memory, which utils/__init__.py:2773 sums as weights +
 * the profile run's torch peak + the non-torch growth since that
 * snapshot; :314 capture_model runs after the KV cache is allocated).
 * So C - C_u stays outside, and so does G, the workspace's graph pool
 * (engine key graph_pool). vLLM PR #30515 (2026) added an estimate of
 * the graphs to the profile (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS,
 * off by default; on by default from v0.21.0 by its log line, skipped on
 * ROCm before PR #48526): such a version's preset sets graph_pool 0.
 *
 * The logits term is the sizing run's: vLLM's sampler run takes S_max
 * rows (engine estimate_logits: max_seqs). TensorRT-LLM's KV estimation
 * (estimate_logits: dry_run) is a context-only run of dummy requests of
 * min(max_num_tokens, max_seq_len - 1) tokens filling max_num_tokens, one
 * set per attention-DP rank (_torch/pyexecutor/_util.py KvCacheCreator
 * _create_dummy_context_requests, estimate_max_tokens: the torch peak of
 * that run plus the memory outside torch, of the device's total), and its
 * LogitsProcessor keeps only each request's last token before the LM head
 * (_torch/modules/logits_processor.py, return_context_logits False): the
 * rows are ceil(T_max / min(T_max, seq - 1)) per rank, seq = max_seq_len:
 * serving.max_model_len when set (trtllm-bench --max_seq_len), else the
 * tokens of a mean sequence (trtllm-bench takes the dataset's longest,
 * the same for the fixed lengths of its published runs). CUDA graphs
 * are captured in that executor's warmup only when its small pool has a
 * free block per sequence of the graph
 * (model_engine.py warmup, "No KV cache space!"), which the trtllm-bench
 * rows do not reach: their pools come from the fraction left over.
 *
 * A multimodal model's vision encoder (not simulated) is memory held
 * before the engine sizes its cache, V = vision_params x vision_encoder_B
 * (engine keys), subtracted with the weights under every rule and
 * reported in the workspace: on every GPU when the workers hold it; on the
 * instance's first GPU only, plus a second CUDA context (C - C_u), when
 * the front-end process holds it. TensorRT-LLM 1.0's Llama 4 input
 * processor builds the vision tower and projector in fp32 and moves them
 * to cuda in the LLM process (modeling_llama.py Llama4InputProcessor
 * __init__, NVIDIA/TensorRT-LLM before PR #6844, which moved it into each
 * worker on 2025-08-28, in 1.1), and _TorchLLM._build_model creates the
 * input processor before it spawns the workers (llmapi/llm.py): GPU 0
 * has less free memory when its worker sizes its KV cache. That GPU is
 * the tightest; the instance is costed with its capacity on every rank
 * (attention DP spreads requests evenly, so the rank with the smallest
 * pool paces the run).
 *
 * Communication memory outside torch (engine keys; infer_mem_comm_B),
 * which TensorRT-LLM's sizing counts with the rest outside torch after its
 * dry run, on an instance of g > 1 GPUs (g = tp, times dp under attention
 * DP, whose mapping keeps tp_size = g):
 *   - one NCCL communicator over the g GPUs: its ops key communicators on
 *     the set of ranks (cpp/tensorrt_llm/common/opUtils.cpp getComm, a
 *     map from std::set<int>), and the TP, attention-DP all-gather /
 *     reduce-scatter and MoE EP groups of one node are the same set; the
 *     Python side talks over MPI. Under NCCL's runtime connect (2.22 on,
 *     NCCL_RUNTIME_CONNECT 1 with cuMem) only the algorithms run get
 *     buffers; the ring (broadcast, reduce, all-gather, reduce-scatter)
 *     takes on each GPU a receive and a send connection a channel holding
 *     the LL, LL128 and Simple buffers: nccl_channels x
 *     nccl_channel_buffers. NVLS (NVLink SHARP) buffers, 16 channels x 2
 *     x 1 MiB x g heads = 256 MiB at g 8 rounded up to the multicast
 *     granularity (transport/nvls.cc ncclNvlsBufferSetup), are set up
 *     only when an NVLS algorithm runs (an NCCL all-reduce): not counted;
 *   - the custom all-reduce's IPC buffers, cudaMalloc'd outside torch by
 *     every AllReduce module's workspace (one per mapping):
 *     allreduce_ipc_copies x g x the fusion workspace.
 * Pipeline-parallel communicators are not counted.
 *
 * A token takes L_r infer_kv_token_layer_B bytes on rank r; the instance
 * holds as many tokens as its tightest rank, in whole pages of block_size
 * tokens; sequences = tokens / tokens per sequence.
 *
 * Gated DeltaNet layers (Qwen3-Next, Qwen3.5: model_layer_linear) keep no
 * KV cache: L_r counts the rank's full-attention layers only, and each
 * sequence holds a fixed state in each of the rank's N_r linear layers,
 * infer_gdn_state_B (the fp32 delta-rule state H d_k d_v 4 B and the
 * conv state (W - 1) c B), taken from the same pool when the sequence
 * starts: state_pages = ceil(N_r state / (block_size L_r K)) pages of
 * the pool a sequence holds beside its KV pages (vLLM v1's hybrid KV
 * cache manager: one page a state per group of linear layers, the page
 * size of the attention layers raised to the state's; the same bytes),
 * so sequences = pages / (ceil(seq / block_size) + state_pages).
 *
 * Sliding-window layers paged apart (engine window_kv_groups: vLLM V1's
 * hybrid KV cache manager; ROCm/vllm @ f8c9a385, upstream of 2025-08-28,
 * vllm/v1/core/kv_cache_utils.py _get_kv_cache_config_uniform_page_size
 * and single_type_kv_cache_manager.py SlidingWindowManager): the
 * attention layers of each type (full, one sliding window W) are split
 * into groups of G = the fewest layers of a type (padded), G_f + G_w
 * groups in all; the pool has pages of block_size tokens of G layers,
 * pages = KV / (block_size G L_tok) (L_tok the bytes of a token in one
 * layer), and each group keeps its own block table in it. A full group
 * holds ceil(n / block_size) pages of a sequence of n tokens; a window
 * group frees, each time the request is scheduled, the pages wholly
 * before token n - W + 1 (remove_skipped_blocks), so a decoding
 * sequence holds at most ceil((W + block_size - 1) / block_size) of
 * them (W 128, block 16: 9). A sequence takes G_f ceil(n / b) + G_w
 * min(ceil(n / b), that) pages (infer_mem_seq_pages, the capacity this
 * reports); a step's new tokens take their pages in every group first,
 * the window's left-behind ones freed when the sequence is next
 * scheduled (the serving simulation, serve_impl.h kv_pages_at). vLLM turns grouping
 * off (every layer then holds the whole length) for a model with
 * chunked local attention (Llama 4, config.py VllmConfig.__post_init__
 * "latency regression"), with a KV connector or KV events, and off
 * CUDA / ROCm; llmsim groups only one pipeline rank without a draft or
 * recurrent states (the rows that run it), windows of different sizes
 * taken as one of the largest [?].
 *
 * Speculative decoding's draft (infer_mem_draft_of) sits with the LM head
 * on the last rank: its weights M_d and its layers' KV of a token K_d.
 *   total, free  the engine loads the draft with the target before it
 *                profiles, and pages the draft's attention layers in the
 *                same pool: M = M_t + M_d, a token costs K_t + K_d (vLLM
 *                v1 gpu_model_runner.py load_model loads the drafter
 *                inside the profiled load and get_kv_cache_spec takes
 *                every attention layer, the drafter's included;
 *                TensorRT-LLM's MTP layers are the model's own, in its KV
 *                cache manager's layer count)
 *   static       SGLang sizes the target's pool from the memory left after
 *                the target's weights (model_runner_kv_cache_mixin.py
 *                profile_max_num_token), then the draft worker loads its
 *                weights and a KV pool of as many tokens
 *                (draft_runner_cache_size = the target's tokens + headroom)
 *                of its own layers (num_nextn_predict_layers): tokens =
 *                KV_t / K_t, both from the memory outside the static
 *                fraction; the KV cache is tokens (K_t + K_d) and the
 *                weights M_t + M_d, in the peak
 */
#include "infer_mem.h"

#include <math.h>
#include <string.h>

#include "config/spec_job.h"

/* Weights and parameters of the layers of pipeline rank r (from layer
 * first on), by each layer's kind. */
static void rank_layers(const struct job_spec *j, const struct infer_dims *d,
			int64_t first, int64_t layers, double *w_B,
			double *params)
{
	struct infer_kind k;
	int64_t i;

	*w_B = *params = 0;
	for (i = first; i < first + layers; i++) {
		infer_kind_of(j, i, &k);
		*w_B += infer_kind_weight_B(d, &k);
		*params += infer_kind_params(d, &k);
	}
}

/* Gated DeltaNet (linear) layers among [first, first + layers). */
static double linear_layers(const struct job_spec *j, int64_t first,
			    int64_t layers)
{
	int64_t i, n = 0;

	for (i = first; i < first + layers; i++)
		n += model_layer_linear(j->model, i);
	return (double)n;
}

/* Weights of pipeline rank r of pp. */
static double rank_weights_B(const struct job_spec *j,
			     const struct infer_dims *d, int64_t first,
			     int64_t layers, int64_t r, int64_t pp)
{
	double w, params;

	rank_layers(j, d, first, layers, &w, &params);
	if (r == 0)
		w += infer_embed_params(d) * d->act_B;
	if (r == pp - 1) {
		w += d->hidden * d->act_B;
		if (!(j->model->tie_word_embeddings && pp == 1))
			w += infer_head_params(d) * d->act_B;
	}
	return w;
}

/* TensorRT-LLM's CUTLASS fused MoE on n tokens (the local ones, or
 * every attention-DP rank's after the all-gather): the op's workspace
 * over its M = n k permuted rows (moe_kernels.cu
 * getWorkspaceDeviceBufferSizes: the GEMM inputs' buffer max(permuted
 * data M h a, fc1 result M f a, fc2 result M h 2) and the outputs'
 * max(fc1 result, gated-activation input M 2f 2, fc2 result); the
 * unfused GEMM output is bf16), plus the gathered quantized input n h a
 * and the finalized output n h 2 (fused_moe_cutlass.py forward_chunk).
 * The KV estimation's forward of max_num_tokens a rank holds them all. */
static double cutlass_moe_B(const struct infer_dims *d, double tokens,
			    double fe)
{
	double n = tokens * (d->moe.allgather ? d->moe.adp : 1);
	double m = n * d->moe.topk, a = d->moe.gemm_a_B, h = d->hidden;
	double in = fmax(fmax(h * a, h * 2), fe * a);
	double out = fmax(fmax(fe * a, (d->gated ? 2 : 1) * fe * 2), h * 2);

	return m * (in + out) + n * h * (a + 2);
}

static double activations_B(const struct infer_dims *d, double tokens,
			    double seqs, int last)
{
	double q = d->heads / d->tp * d->head_dim;
	double kv = (d->kv_heads >= d->tp ? d->kv_heads / d->tp : 1) *
		    d->head_dim;
	double f = d->ffn / d->tp, u = (d->gated ? 2 : 1) * f;
	double widest = fmax(q + 2 * kv, u + f);

	double fe = d->moe_model ? d->moe.ffn / d->moe.etp : 0;

	if (d->moe_model && !d->moe.cutlass)
		/* fused MoE caches: every token's k rows through the local
		 * experts' widths (vLLM's intermediate_cache1..3) */
		widest = fmax(widest, d->moe.topk *
			      ((d->gated ? 2 : 1) * fe + fe + d->hidden));
	double a = tokens * (2 * d->hidden + widest) * d->act_B;

	if (d->moe_model && d->moe.cutlass)
		a = fmax(a, tokens * 2 * d->hidden * d->act_B +
			 cutlass_moe_B(d, tokens, fe));

	if (last)
		a += seqs * d->vocab * (d->act_B + 4);
	return a;
}

void infer_mem_draft_of(const struct job_spec *dj,
			const struct infer_dims *dd,
			struct infer_mem_draft *out)
{
	double h = dd->hidden;

	memset(out, 0, sizeof(*out));
	rank_layers(dj, dd, 0, dj->model->num_hidden_layers, &out->weights_B,
		    &out->params);
	if (dd->draft_in > 0) {
		/* an MTP/EAGLE head: the input projection (DeepSeek MTP's
		 * eh_proj, EAGLE's fc: draft_in h x h, bf16, replicated; SGLang
		 * deepseek_nextn.py and llama_eagle.py) and the input norms
		 * (MTP's enorm and hnorm) plus MTP's shared_head.norm; the
		 * embedding and the LM head are the target's (SGLang
		 * eagle_worker set_embed_and_head, vLLM EagleProposer shares
		 * them) */
		double proj = dd->draft_in * h * h;

		out->params += proj;
		out->weights_B += proj * dd->act_B +
				  (dd->draft_norms > 0 ? dd->draft_norms + 1 : 0) *
				  h * dd->act_B;
	} else {
		/* a draft model: its own embedding, LM head and final norm
		 * (one table when tied) */
		out->weights_B += rank_weights_B(dj, dd, 0, 0, 0, 1);
		out->params += infer_embed_params(dd) + infer_head_params(dd);
	}
	out->kv_token_B = (double)dj->model->num_hidden_layers *
			  infer_kv_token_layer_B(dd);
}

/* Memory of the model's vision encoder on pipeline rank r's GPU, by where
 * the engine holds it (engine vision_encoder; the module header). */
double infer_mem_vision_B(const struct job_spec *j,
			  const struct engine_spec *e, int64_t r)
{
	const struct gpu_spec *g = j->system->gpu;
	double w = j->model->vision_params * e->vision_encoder_B;

	if (!(j->model->vision_params > 0))
		return 0;
	switch (e->vision_encoder) {
	case ENGINE_VENC_FRONT_END:
		return r == 0 ? w + (g->hbm.capacity_B -
				     gpu_usable_memory_B(g)) : 0;
	case ENGINE_VENC_WORKERS:
		return w;
	default:
		return 0;
	}
}

/* Rows of logits in the activations the KV sizing takes (engine
 * estimate_logits; the module header). */
double infer_mem_logit_rows(const struct engine_spec *e, double max_tokens,
			    double max_seqs, double seq_tokens)
{
	if (e->estimate_logits != ENGINE_ELOG_DRY_RUN || !(seq_tokens > 0))
		return max_seqs;
	return ceil(max_tokens / fmax(1, fmin(max_tokens, seq_tokens - 1)));
}

double infer_mem_comm_B(const struct job_spec *j,
			const struct engine_spec *e)
{
	int64_t g = j->parallelism.tp *
		    (j->parallelism.attention_dp ? j->parallelism.dp : 1);
	double ar;

	if (g <= 1)
		return 0;
	ar = g <= 2 ? e->norm_quant_ar_max_tp2_B : e->norm_quant_ar_max_B;
	return (double)e->nccl_channels * e->nccl_channel_buffers_B +
	       (e->custom_allreduce ?
			(double)e->allreduce_ipc_copies * (double)g * ar : 0);
}

/* Layers of [first, first + n) that keep KV (all, or a hybrid's
 * attention layers), with *state_B the recurrent state one sequence
 * keeps in its Mamba-2 layers (infer_mamba.c). */
static double rank_kv_layers(const struct job_spec *j, int64_t first,
			     int64_t n, const struct infer_dims *d,
			     double *state_B)
{
	double kv = 0;
	int64_t i;

	*state_B = 0;
	if (!j->model->hybrid_override_pattern) {	/* Gated DeltaNet */
		double lin = linear_layers(j, first, n);

		*state_B = lin > 0 ? lin * infer_gdn_state_B(d) : 0;
		return (double)n - lin;
	}
	for (i = first; i < first + n; i++) {
		int b = model_layer_block(j->model, i);

		if (b == BLOCK_ATTN)
			kv++;
		else if (b == BLOCK_MAMBA)
			*state_B += infer_mamba_state_layer_B(d);
	}
	return kv;
}

static double kv_by_rule(const struct engine_spec *e, double cap,
			 double usable, double weights, double act,
			 double work)
{
	double f = e->memory_fraction;

	switch (e->memory_rule) {
	case ENGINE_MEM_STATIC:
		return f * cap - (cap - usable) - weights;
	case ENGINE_MEM_FREE:
		return f * (usable - weights - act - work);
	case ENGINE_MEM_SNAPSHOT:	/* context and graph pool outside */
		return f * cap - weights - act - (work - e->graph_pool_B);
	default:
		return f * cap - (cap - usable) - weights - act - work;
	}
}

double infer_mem_seq_pages(const struct infer_mem *m, double block,
			   double tokens)
{
	double p = ceil(tokens / block);

	return m->full_groups * p + m->window_groups * fmin(p, m->window_pages) +
	       (tokens > 0 ? m->state_pages : 0);
}

/* Layer groups of the job's attention layers under window_kv_groups
 * (the module header): 0 when they do not group (one type only of full
 * layers, a chunked local layer, a linear or Mamba-2 mixer), else G with
 * the groups and window pages in out. */
static double window_groups(const struct job_spec *j, double block,
			    struct infer_mem *out)
{
	double nf = 0, nw = 0, w = 0, g;
	int64_t i, n = j->model->num_hidden_layers;

	/* DeepSeek Sparse Attention's layers read top-k keys of the whole
	 * cache (model_layer_window gives their compute a window): full */
	if (j->model->hybrid_override_pattern || model_is_dsa(j->model))
		return 0;
	for (i = 0; i < n; i++) {
		struct infer_kind k;

		infer_kind_of(j, i, &k);
		if (k.linear || k.chunk > 0)
			return 0;
		if (k.window > 0) {
			nw++;
			w = fmax(w, k.window);
		} else {
			nf++;
		}
	}
	if (!(nw > 0))
		return 0;
	g = nf > 0 ? fmin(nf, nw) : nw;
	out->full_groups = ceil(nf / g);
	out->window_groups = ceil(nw / g);
	out->window_pages = ceil((w + block - 1) / block);
	out->window_tokens = w;
	return g;
}

void infer_mem_job(const struct job_spec *j, const struct engine_spec *e,
		   const struct infer_dims *d, const int64_t *split,
		   double max_tokens, double max_seqs, double seq_tokens,
		   const struct infer_mem_draft *draft, struct infer_mem *out)
{
	const struct gpu_spec *g = j->system->gpu;
	int64_t pp = j->parallelism.pp, r;
	double cap = g->hbm.capacity_B, usable = gpu_usable_memory_B(g);
	double best = INFINITY, per_layer = infer_kv_token_layer_B(d), w_unused;
	double work = e->workspace_B + infer_mem_comm_B(j, e);
	/* the dry run's sequence: max_seq_len, which serving.max_model_len
	 * sets (trtllm-bench --max_seq_len), else the requests' */
	double dry_seq = j->serving.max_model_len > 0 ?
			 (double)j->serving.max_model_len : seq_tokens;

	memset(out, 0, sizeof(*out));
	out->usable_B = usable;
	out->workspace_B = work;
	int64_t first = 0;

	for (r = 0; r < pp; r++, first += split[r - 1]) {
		int last = r == pp - 1;
		double dw = draft && last ? draft->weights_B : 0;
		double dk = draft && last ? draft->kv_token_B : 0;
		double w = rank_weights_B(j, d, first, split[r], r, pp);
		double a = activations_B(d, max_tokens,
					 infer_mem_logit_rows(e, max_tokens,
							      max_seqs,
							      dry_seq),
					 last);
		double v = infer_mem_vision_B(j, e, r);
		int apart = e->memory_rule == ENGINE_MEM_STATIC;
		double kv = kv_by_rule(e, cap, usable,
				       (apart ? w : w + dw) + v, a, work);
		double st = 0, tok_t = rank_kv_layers(j, first, split[r], d,
						       &st) * per_layer;
		double tok_B = tok_t + dk;
		double tokens;

		if (apart && tok_t > 0)	/* the draft's pool as large */
			kv *= tok_B / tok_t;
		if (!(tok_B > 0) && st > 0)	/* state only: pages of a layer's */
			tok_B = per_layer;
		tokens = tok_B > 0 ? fmax(kv, 0) / tok_B : INFINITY;
		if (tokens < best || r == 0) {
			best = tokens;
			out->rank = r;
			out->weights_B = w + dw;
			out->draft_weights_B = dw;
			out->draft_kv_token_B = dk;
			out->activations_B = a;
			out->workspace_B = work + v;
			out->kv_cache_B = kv;
			out->kv_token_B = tok_B;
			out->state_seq_B = st;
			/* a sequence's recurrent states, in pages */
			out->state_pages = st > 0 && tok_B > 0 ?
				ceil(st / ((double)e->block_size * tok_B)) : 0;
		}
	}
	for (first = 0, r = 0; r < out->rank; r++)
		first += split[r];
	rank_layers(j, d, first, split[out->rank], &w_unused, &out->params);
	out->params += (out->rank == 0 ? infer_embed_params(d) : 0) +
		      (out->rank == pp - 1 ? infer_head_params(d) +
		       (draft ? draft->params : 0) : 0);
	out->kv_pages = isfinite(best) ?
			floor(best / (double)e->block_size) : 0;
	out->kv_tokens = out->kv_pages * (double)e->block_size;
	out->full_groups = 1;
	if (e->window_kv_groups && pp == 1 && !draft && !(out->state_seq_B > 0) &&
	    out->state_pages == 0 && out->kv_token_B > 0) {
		double b = (double)e->block_size;
		double gl = window_groups(j, b, out);

		if (gl > 0) {	/* pages of gl layers; vLLM's logged tokens */
			out->kv_pages = floor(fmax(out->kv_cache_B, 0) /
					      (b * gl * per_layer));
			out->kv_tokens = floor(out->kv_pages /
					       (out->full_groups +
						out->window_groups)) * b;
		}
	}
	/* whole pages a sequence: ceil(seq / block) of them (vLLM's
	 * allocate_slots, TensorRT-LLM's tokens_per_block) in each group; the
	 * tokens over the length, floor(tokens / seq), counted the pages'
	 * slack too */
	out->kv_sequences = seq_tokens > 0 ?
		floor(out->kv_pages / infer_mem_seq_pages(out,
				(double)e->block_size, seq_tokens)) : 0;
	out->peak_B = out->weights_B + out->activations_B + out->workspace_B +
		      fmax(out->kv_cache_B, 0);
	out->fits = out->kv_pages >= 1 && out->peak_B <= usable;
}
