/*
 * infer_prog.c - the step program of an inference step.
 *
 * A stage runs, for each microbatch in turn, its units: the embedding
 * (first stage), its layers, the head (last stage); a unit is a chain of
 * kernels on the compute stream with its TP collectives on the tp stream
 * between them (inference has nothing to overlap them with: every kernel
 * needs the previous one's output). A microbatch's activation (T h B per
 * TP rank, each rank sending its own copy as vLLM's and SGLang's pipeline
 * groups do) goes to the next stage on the pp stream once the stage has
 * finished it; the next stage starts it when it has arrived.
 *
 * Host time: the scheduler, input preparation and output processing of a
 * step (engine step_overhead + seq_overhead per sequence +
 * prompt_token_overhead per prompt token computed, stated for an x86
 * host, times the system's host_loop_scale) run on the host
 * before the GPU can start, unless the engine overlaps them with the
 * previous step (overlap_scheduling), in which case the serving loop
 * takes max(GPU, host) per step and the program holds the GPU's part.
 *
 * Eager kernels (not in a captured graph) are launched one by one by the
 * host; at the framework's eager_op per kernel (x86; times the system's
 * host_dispatch_scale, a PyTorch op's CPU time) the host may issue them
 * slower than the GPU runs them (a small model's mixed prefill+decode
 * steps, TensorRT-LLM PR #9703): a step then takes the issue time
 * instead of its kernels' time (infer_issue_s; applied by src/run), or,
 * where the engine issues them from its host loop's own thread
 * (issue_serial, with overlap scheduling), the issue adds to the host
 * time.
 *
 * Graphs (engine cuda_graphs): a decode-only step of up to cuda_graph_max
 * sequences replays a fully captured graph (full), a step of up to
 * cuda_graph_max tokens a piecewise one (all but attention); captured
 * sizes are 1, 2, 4, ... up to cuda_graph_pad, then its multiples (vLLM:
 * [1, 2, 4] + range(8, 513, 8); SGLang alike), or the engine's list
 * (cuda_graph_sizes: TensorRT-LLM's batch_sizes, a listed size past the
 * engine's largest step cut to that step, listed_size), and a step runs
 * padded to the next one: the padding rows go through the token-wise
 * kernels only.
 */
#include "infer_prog.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "ep.h"
#include "footprint.h"
#include "split.h"

/* ---- the instance ---- */

/* The model's weights in all (B): every layer's on one GPU times the GPUs
 * a stage's layer spans, embedding and head once. */
static double model_weights_B(const struct infer_ctx *x)
{
	const struct infer_dims *d = &x->dims;
	double w = (infer_embed_params(d) + infer_head_params(d)) * d->tp *
		   d->act_B;
	int64_t i;

	for (i = 0; i < x->job->model->num_hidden_layers; i++)
		w += infer_kind_weight_B(d, &x->kinds[x->kind_of[i]]) *
		     (double)(x->tp * x->adp);
	return w;
}

/* The longest prompt the job can have. */
static double max_input(const struct job_spec *j)
{
	const struct len_spec *l = &j->serving.input_len;

	if (l->dist == LEN_FIXED)
		return l->mean;
	return l->max > 0 ? (double)l->max : l->mean;
}

/* Round v up by the step of the first bound it lies below (the last step
 * above them all), at least lo. */
static double round_up_by(double v, double lo,
			  const struct schema_int_list *below,
			  const struct schema_int_list *step)
{
	size_t i = 0;

	while (i < below->n && v >= (double)below->v[i])
		i++;
	return fmax(lo, (double)step->v[i] * ceil(v / (double)step->v[i]));
}

/* calc_engine_setting's engine size (B): the checkpoint's parameter
 * count, summed from its safetensors headers (bench/build/dataclasses.py
 * ModelConfig.get_param_count), times the bytes the quantization algo
 * gives an element (tuning.py BYTES_PER_ELEM), whatever each GPU holds.
 * A quantized linear weight is stored in one-byte elements (FP8 E4M3;
 * NVFP4 two values to a U8 plus an E4M3 scale per 16), so it counts
 * dtype_bytes elements; the embedding and the LM head stay bf16, one
 * element a parameter. Experts the checkpoint itself quantizes count in
 * their own format's elements whatever the job's dtype: gpt-oss's MXFP4
 * experts are U8 blocks of two values and a U8 E8M0 scale per 32, 0.5 +
 * 1/32 elements a parameter, its other weights bf16, one; the algo
 * (W4A16_MXFP4, not in BYTES_PER_ELEM) then gives 2 B an element
 * (NVIDIA/TensorRT-LLM @ 04cba882 tensorrt_llm/bench/build/tuning.py
 * BYTES_PER_ELEM.get(quant_algo, 2)). Attention projections the
 * checkpoint keeps unquantized (model quantization_config exclusions:
 * NVIDIA's DeepSeek-R1 NVFP4 checkpoints store them bf16) are bf16
 * elements, one a parameter. Without the rule's bytes: the instance's
 * own weights. */
static double auto_engine_B(const struct infer_ctx *x)
{
	const struct engine_auto_size *r = &x->eng->auto_rule;
	const struct job_spec *j = x->job;
	double b = r->param_B, p, eh, pe = 0, px = 0;
	double e = fmin(1, dtype_bytes(x->dims.weight)), ee = e;
	int64_t i;

	if (x->dims.weight == DTYPE_FP8)
		b = r->param_B_fp8;
	else if (x->dims.weight == DTYPE_NVFP4)
		b = r->param_B_fp4;
	if (!(b > 0))
		return model_weights_B(x);
	p = footprint_model_params(j);
	eh = (double)j->model->vocab_size * (double)j->model->hidden_size *
	     (j->model->tie_word_embeddings ? 1 : 2);
	if (model_is_moe(j->model)) {
		pe = footprint_expert_params(j);
		ee = fmin(1, x->dims.moe.weight_B);
	}
	for (i = 0; i < j->model->num_hidden_layers; i++)
		px += infer_kind_attn_excluded_params(&x->dims,
						&x->kinds[x->kind_of[i]]);
	return ((p - eh - pe - px) * e + px + pe * ee + eh) * b;
}

/* The head size trtllm-bench's sizing reads (tensorrt_llm/bench/build/
 * dataclasses.py ModelConfig.head_size: config.json's head_size, head_dim
 * or attention_head_dim, else hidden_size // num_attention_heads), not the
 * attention's own: an MLA config (DeepSeek-V3/R1) gives no head_dim, so
 * the tool sizes its KV with 7168 / 128 = 56 per head and 128 KV heads,
 * where llmsim's attention has 192-wide Q/K heads and a 576-element latent
 * cache. */
static double trtllm_head_size(const struct model_spec *m)
{
	if (m->config_head_dim > 0)
		return (double)m->config_head_dim;
	return floor((double)m->hidden_size / (double)m->num_attention_heads);
}

/* trtllm-bench's sizing (tensorrt_llm/bench/build/tuning.py,
 * calc_engine_setting and finetune_setting): requests the KV memory holds
 * at the job's mean lengths (the KV fraction of what the engine size
 * leaves of every GPU's memory), capped and rounded up optimistically by
 * the engine's auto_size_rule. The fraction is trtllm-bench's
 * --kv_cache_free_gpu_mem_fraction (get_settings passes it to the sizing):
 * the engine's auto_size_fraction where set, else memory_fraction. The
 * two differ when the llm_options carry a kv_cache_config: RuntimeConfig.
 * get_llm_args puts the flag's fraction in trtllm-bench's own
 * KvCacheConfig, then update_llm_args_with_extra_options replaces the
 * whole kv_cache_config with the file's (llm_args | llm_args_dict, a
 * shallow merge), whose free_gpu_memory_fraction is KvCacheConfig's
 * default, 0.9 (tensorrt_llm/bench/dataclasses/configuration.py @
 * 000a01de and @ 2787769c, bench/benchmark/throughput.py @ 000a01de,
 * llmapi update_llm_args_with_extra_dict: every stored version merges
 * shallowly): the sizing reads the flag, the executor's pool the file's
 * fraction (memory_fraction). */
static void trtllm_auto_size(struct infer_ctx *x)
{
	const struct job_spec *j = x->job;
	const struct model_spec *m = j->model;
	const struct serving_spec *s = &j->serving;
	const struct engine_auto_size *r = &x->eng->auto_rule;
	double gib = 1024.0 * 1024.0 * 1024.0;
	double n = (double)(x->tp * x->adp * x->pp);
	double kv_heads = fmax((double)x->tp, (double)m->num_key_value_heads);
	double tok_gib = 2 * (double)m->num_hidden_layers * kv_heads *
			 trtllm_head_size(m) * x->dims.kv_B / gib;
	double engine_gib = auto_engine_B(x) / gib;
	double avail = x->gpu->hbm.capacity_B / gib * n - engine_gib;
	double isl = s->input_len.mean, osl = fmax(s->output_len.mean, 1);
	double frac = x->eng->auto_size_fraction > 0 ?
		      x->eng->auto_size_fraction : x->eng->memory_fraction;
	double reqs = avail * frac / (tok_gib * (isl + osl));
	double bs = fmin(reqs, (double)r->max_seqs) / (double)x->pp;
	double tok = fmin(bs * (1 + isl / osl), (double)r->max_tokens);

	bs = round_up_by(bs, (double)r->min_seqs, &r->seq_below, &r->seq_step);
	tok = round_up_by(tok, (double)r->min_tokens, &r->token_below,
			  &r->token_step);
	x->max_seqs = (int64_t)bs;
	x->max_tokens = (int64_t)tok;
	/* without chunked prefill the longest prompt must fit a step, with a
	 * token for every sequence (bench/benchmark/utils/general.py
	 * get_settings: max(max_num_tokens, max_isl + max_batch_size)) */
	if (!x->chunked)
		x->max_tokens = (int64_t)fmax(tok, max_input(j) + bs);
}

static int check_job(const struct infer_ctx *x, struct diag *d)
{
	const struct model_spec *m = x->job->model;

	if (model_is_moe(m) && x->dims.moe.local > INFER_MAX_EXPERT_GROUPS) {
		diag_error(d, NULL, 0, 0, "model '%s': %g experts on one GPU, "
			   "more than the %d llmsim handles: use a larger ep",
			   m->name ? m->name : "?", x->dims.moe.local,
			   INFER_MAX_EXPERT_GROUPS);
		return -1;
	}
	if (model_is_moe(m) &&
	    fmod((double)x->job->parallelism.tp * x->dims.moe.adp,
		 x->dims.moe.ep) != 0) {
		diag_error(d, NULL, 0, 0, "ep %g does not divide the %g GPUs "
			   "an instance's MoE layers span",
			   x->dims.moe.ep, (double)x->job->parallelism.tp *
			   x->dims.moe.adp);
		return -1;
	}
	if (model_is_moe(m) &&
	    gpu_check_dtype(x->gpu, x->dims.moe.compute, d) != 0)
		return -1;
	if (!model_is_moe(m) && x->job->parallelism.ep > 1) {
		diag_error(d, NULL, 0, 0, "ep %lld: expert parallelism needs a "
			   "MoE model", (long long)x->job->parallelism.ep);
		return -1;
	}
	if (gpu_check_dtype(x->gpu, x->dims.compute, d) != 0) {
		diag_note(d, NULL, 0, 0, "serving.activation_dtype (or the "
			  "weights' dtype) is '%s'", dtype_names[x->dims.compute]);
		return -1;
	}
	if (gpu_check_dtype(x->gpu, x->dims.base, d) != 0)
		return -1;
	return 0;
}

/* The kinds of layer of the model and each layer's (x->kind_of). */
static int find_kinds(struct infer_ctx *x, struct diag *d)
{
	int64_t L = x->job->model->num_hidden_layers, i;
	int k;

	for (i = 0; i < L; i++) {
		struct infer_kind kind;

		infer_kind_of(x->job, i, &kind);
		/* a per-layer exclusion changes nothing when the weights are
		 * not quantized (infer_kind_dims): not a kind of its own */
		if (x->dims.weight == x->dims.base)
			kind.qexcl = 0;
		for (k = 0; k < x->nkinds; k++)
			if (x->kinds[k].moe == kind.moe &&
			    x->kinds[k].linear == kind.linear &&
			    x->kinds[k].window == kind.window &&
			    x->kinds[k].chunk == kind.chunk &&
			    x->kinds[k].temperature == kind.temperature &&
			    x->kinds[k].qexcl == kind.qexcl &&
			    x->kinds[k].block == kind.block &&
			    x->kinds[k].nope == kind.nope)
				break;
		if (k == x->nkinds) {
			if (x->nkinds == INFER_MAX_KINDS) {
				diag_error(d, NULL, 0, 0, "model '%s' has more "
					   "than %d kinds of layer (dense or "
					   "MoE, attention windows or chunks, "
					   "per-layer quantization "
					   "exclusions)",
					   x->job->model->name ?
					   x->job->model->name : "?",
					   INFER_MAX_KINDS);
				return -2;
			}
			x->kinds[x->nkinds++] = kind;
		}
		x->kind_of[i] = (uint8_t)k;
	}
	return 0;
}

/* The dispatcher's kernels' share of the SMs. Its path is built per
 * collective by ep_coll_path from the rows the op moves (coll_of), the
 * one function training's dispatch and combine use (train.c ep_path). */
static void ep_share(struct infer_ctx *x)
{
	const struct ep_comm_spec *e = x->job->moe.dispatcher;

	x->ep_sm_share = 0;
	if (e && x->dims.moe_model && e->sms > 0)
		x->ep_sm_share = fmin((double)e->sms /
				      (double)x->gpu->compute_units, 1);
}

int infer_ctx_init(struct infer_ctx *x, const struct job_spec *j,
		   struct diag *d)
{
	const struct serving_spec *s = &j->serving;
	int64_t i, k, g, ep;
	int rc;

	memset(x, 0, sizeof(*x));
	x->job = j;
	x->gpu = j->system->gpu;
	x->eng = s->engine;
	x->tp = j->parallelism.tp;
	x->pp = j->parallelism.pp;
	x->adp = j->parallelism.attention_dp ? j->parallelism.dp : 1;
	infer_dims_from_job(j, x->gpu, &x->dims);
	if (check_job(x, d) != 0)
		return -2;
	g = x->tp * x->adp;
	ep = x->dims.moe_model ? (int64_t)x->dims.moe.ep : 1;
	x->split = mem_calloc((size_t)x->pp, sizeof(*x->split));
	x->gpus = mem_calloc((size_t)(x->pp * g), sizeof(*x->gpus));
	x->ep_gpus = mem_calloc((size_t)(x->pp * ep), sizeof(*x->ep_gpus));
	x->kind_of = mem_calloc((size_t)j->model->num_hidden_layers + 1,
				sizeof(*x->kind_of));
	if (!x->split || !x->gpus || !x->ep_gpus || !x->kind_of) {
		infer_ctx_release(x);
		diag_oom(d);
		return -1;
	}
	rc = find_kinds(x, d);
	if (rc != 0) {
		infer_ctx_release(x);
		return rc;
	}
	ep_share(x);
	infer_tbo_warn(x, NULL, d);
	split_layers(j, x->split);
	for (i = 0; i < x->pp; i++) {
		for (k = 0; k < g; k++)
			x->gpus[i * g + k] = (uint32_t)(k + g * i);
		/* EP peers are etp apart (consecutive GPUs share an expert) */
		for (k = 0; k < ep; k++)
			x->ep_gpus[i * ep + k] = (uint32_t)(g * i + k *
				(x->dims.moe_model ? (int64_t)x->dims.moe.etp : 1));
	}
	x->max_seqs = s->max_num_seqs ? s->max_num_seqs : x->eng->max_num_seqs;
	x->max_tokens = s->max_num_batched_tokens ? s->max_num_batched_tokens
						  : x->eng->max_num_batched_tokens;
	x->chunked = s->chunked_prefill >= 0 ? s->chunked_prefill
					     : x->eng->chunked_prefill;
	if (x->eng->auto_size && !s->max_num_seqs && !s->max_num_batched_tokens)
		trtllm_auto_size(x);
	return 0;
}

void infer_ctx_release(struct infer_ctx *x)
{
	mem_free(x->split);
	mem_free(x->gpus);
	mem_free(x->ep_gpus);
	mem_free(x->kind_of);
	x->split = NULL;
	x->gpus = NULL;
	x->ep_gpus = NULL;
	x->kind_of = NULL;
}

/* ---- graphs and host ---- */

/* The captured size at or above n: 1, 2, 4, ... below pad, then
 * multiples of pad. */
static double captured_size(double n, double pad)
{
	double c = 1;

	if (pad <= 1)
		return ceil(n);
	while (c < n && c < pad)
		c *= 2;
	if (c >= n)
		return c;
	return pad * ceil(n / pad);
}

/* The captured size at or above n from the engine's list
 * (cuda_graph_sizes), 0 when none holds n. A listed size past the largest
 * step the engine runs, min(max_seqs, max_tokens / q) sequences of q
 * tokens (max_tokens for a piecewise graph's tokens), is replaced by
 * that step and the list ends there: TensorRT-LLM's
 * _filter_cuda_graph_batch_sizes with padding enabled, and
 * _round_up_batch_size takes the first captured size >= the batch
 * (bisect_left), none past the last (NVIDIA/TensorRT-LLM @ 1a0dc5f7
 * tensorrt_llm/_torch/pyexecutor/model_engine.py). q >= 1 here: the
 * caller passes 1 for a piecewise graph. */
static double listed_size(const struct infer_ctx *x, double n, double q)
{
	const struct schema_int_list *l = &x->eng->cuda_graph_sizes;
	double cap = x->max_tokens > 0 ? (double)x->max_tokens : HUGE_VAL, s;
	size_t i;

	if (x->eng->cuda_graphs == ENGINE_GRAPHS_FULL && x->max_seqs > 0)
		cap = q * fmin((double)x->max_seqs, floor(cap / q));
	for (i = 0; i < l->n; i++) {
		s = fmin((double)l->v[i] * q, cap);
		if (s >= n)
			return s;
		if (s >= cap)
			break;
	}
	return 0;
}

enum infer_graph infer_graph_for(const struct infer_ctx *x,
				 const struct infer_batch *b,
				 struct infer_batch *padded)
{
	const struct engine_spec *e = x->eng;
	double pad = (double)e->cuda_graph_pad, max = (double)e->cuda_graph_max;
	double n, c;
	enum infer_graph g = IGRAPH_NONE;

	*padded = *b;
	if (e->cuda_graphs == ENGINE_GRAPHS_FULL && infer_batch_decode_only(b) &&
	    infer_batch_seqs(b) <= max) {
		/* decode-only: one token per sequence unless verifying */
		g = IGRAPH_FULL;
		n = infer_batch_tokens(b);
	} else if (e->cuda_graphs == ENGINE_GRAPHS_PIECEWISE &&
		   infer_batch_tokens(b) <= max) {
		g = IGRAPH_PIECEWISE;
		n = infer_batch_tokens(b);
	} else {
		return IGRAPH_NONE;
	}
	c = e->cuda_graph_sizes.n == 0 ? captured_size(n, pad) :
	    listed_size(x, n, g == IGRAPH_FULL ?
			n / fmax(infer_batch_seqs(b), 1) : 1);
	if (!(c > 0)) {
		*padded = *b;
		return IGRAPH_NONE;
	}
	if (c > n && padded->n < INFER_MAX_GROUPS)
		padded->g[padded->n++] =
			(struct infer_seqs){c - n, 1, 0, 0, 0, 1, 0};
	return g;
}

/* The system's host CPU against the reference x86 host the engine's host
 * costs are stated for (spec_system.h): its Python serving loop
 * (host_loop_scale) and its PyTorch op dispatch (host_dispatch_scale);
 * 1 where unset. */
static double host_scale(double v)
{
	return v > 0 ? v : 1;
}

double infer_host_s(const struct infer_ctx *x, const struct infer_batch *b)
{
	double h = x->eng->step_overhead_s +
		   x->eng->seq_overhead_s * infer_batch_seqs(b) +
		   (x->tp > 1 ? x->eng->tp_step_overhead_s +
				x->eng->tp_seq_overhead_s * infer_batch_seqs(b)
			      : 0), prompt = 0;
	int i;

	/* prompt tokens computed this step (graph padding is no prompt) */
	for (i = 0; i < b->n; i++)
		if (b->g[i].prefill && !b->g[i].pad)
			prompt += b->g[i].count * b->g[i].q;
	h += x->eng->prompt_token_overhead_s * prompt;

	/* multi-step scheduling: one scheduler call per multi_step decodes */
	if (infer_batch_decode_only(b) && x->eng->multi_step > 1)
		h /= (double)x->eng->multi_step;
	/* all of it is the engine's Python loop on the host CPU */
	return h * host_scale(x->job->system->host_loop_scale);
}

/* The prompts of b in order, each sequence whole onto the least-loaded of
 * m ranks (load: prompt tokens); the share of each group that lands on
 * rank `busiest` added to got (none for busiest -1). */
static void place_prompts(const struct infer_batch *b, const int *order,
			  int64_t m, double *load, int busiest, double *got)
{
	int64_t r, c;
	int i;

	for (r = 0; r < m; r++)
		load[r] = 0;
	for (i = 0; i < b->n; i++) {
		const struct infer_seqs *g = &b->g[order[i]];

		if (!g->prefill)
			continue;
		for (c = 0; c < (int64_t)ceil(g->count - 1e-9); c++) {
			int64_t lo = 0;
			double w = fmin(1, g->count - (double)c);

			for (r = 1; r < m; r++)
				if (load[r] < load[lo])
					lo = r;
			load[lo] += g->q * w;
			if (lo == busiest)
				got[order[i]] += w;
		}
	}
}

#define ADP_MAX_RANKS 256

void infer_adp_rank(const struct infer_ctx *x, const struct infer_batch *b,
		    struct infer_batch *rank, double *route_T)
{
	double n = (double)x->adp, load[ADP_MAX_RANKS], got[INFER_MAX_GROUPS];
	double best;
	int64_t r, m = x->adp < ADP_MAX_RANKS ? x->adp : ADP_MAX_RANKS;
	int k, order[INFER_MAX_GROUPS], i, j, busiest = 0;

	*rank = *b;
	rank->ranked = 0;
	*route_T = 0;
	if (x->adp <= 1)
		return;
	*route_T = infer_batch_tokens(b) / n;
	if (b->ranked) {	/* the caller's busiest rank */
		rank->n = 0;
		for (k = 0; k < b->n; k++) {
			struct infer_seqs g = b->g[k];

			g.count = g.pad ? g.count / n : g.rank_count;
			if (g.count > 0)
				rank->g[rank->n++] = g;
		}
		return;
	}
	/* prompts, longest first, each whole onto the rank with the fewest
	 * prompt tokens (TensorRT-LLM balances new requests by their tokens
	 * on a heap); keep the prompts of the rank that ends with most */
	for (k = 0; k < b->n; k++)
		order[k] = k;
	for (i = 1; i < b->n; i++)
		for (j = i; j > 0 && b->g[order[j]].q > b->g[order[j - 1]].q;
		     j--) {
			k = order[j];
			order[j] = order[j - 1];
			order[j - 1] = k;
		}
	for (k = 0; k < b->n; k++)
		got[k] = 0;
	/* placed twice: first to find the busiest rank, then its share of
	 * each group (the placement is deterministic) */
	place_prompts(b, order, m, load, -1, got);
	for (r = 1, best = load[0]; r < m; r++)
		if (load[r] > best) {
			best = load[r];
			busiest = (int)r;
		}
	place_prompts(b, order, m, load, busiest, got);
	rank->n = 0;
	for (k = 0; k < b->n; k++) {
		struct infer_seqs g = b->g[k];

		/* decoding sequences spread evenly (balanced by count) */
		g.count = g.prefill ? got[k] : g.count / n;
		if (g.count > 0)
			rank->g[rank->n++] = g;
	}
}

int infer_units(const struct infer_ctx *x, const struct infer_batch *b,
		enum infer_graph graph, double route_T,
		struct infer_step_units *u, struct diag *d)
{
	struct infer_ops o;
	int k;

	memset(&u->route, 0, sizeof(u->route));
	u->route.node_share = 1;
	u->graph = graph;
	/* a captured graph's padding rows go through the experts too */
	for (k = 0; route_T > 0 && k < b->n; k++)
		if (b->g[k].pad)
			route_T += b->g[k].count * b->g[k].q;
	if (x->dims.moe_model &&
	    infer_moe_route(x->job, &x->dims,
			    route_T > 0 ? route_T : infer_batch_tokens(b),
			    &u->arena, &u->route, d) != 0)
		return -1;
	o.n = 0;
	infer_step_input_ops(&x->dims, b, &o);
	infer_cost_memo(&o, &x->dims, b, NULL, x->gpu, graph, x->memo,
			&u->input);
	infer_embed_ops(&x->dims, b, &o);
	if (graph != IGRAPH_NONE)
		infer_graph_input_ops(&x->dims, b, &o);
	infer_cost_memo(&o, &x->dims, b, NULL, x->gpu, graph, x->memo,
			&u->embed);
	for (k = 0; k < x->nkinds; k++) {
		infer_layer_ops(&x->dims, b, &x->kinds[k], &u->route, &o);
		infer_cost_memo(&o, &x->dims, b, &x->kinds[k], x->gpu, graph,
				x->memo, &u->layer[k]);
	}
	infer_head_ops(&x->dims, b, &o);
	infer_cost_memo(&o, &x->dims, b, NULL, x->gpu, graph, x->memo,
			&u->head);
	return 0;
}

void infer_step_units_release(struct infer_step_units *u)
{
	arena_release(&u->arena);
}

double infer_issue_s(const struct infer_ctx *x,
		     const struct infer_step_units *u)
{
	double best = 0, n;
	int64_t s;
	int k;

	if (x->eng->eager_op_s <= 0)
		return 0;
	for (s = 0; s < x->pp; s++) {
		n = u->input.eager + (s == 0 ? u->embed.eager : 0) +
		    (s == x->pp - 1 ? u->head.eager : 0);
		for (k = 0; k < x->nkinds; k++)
			n += (double)infer_stage_kind_layers(x, s, k) *
			     u->layer[k].eager;
		best = fmax(best, n);
	}
	/* a PyTorch op's dispatch and launch from Python, per kernel */
	return best * x->eng->eager_op_s *
	       host_scale(x->job->system->host_dispatch_scale);
}

int64_t infer_stage_kind_layers(const struct infer_ctx *x, int64_t s, int k)
{
	int64_t first = split_first_layer(x->split, s), i, n = 0;

	for (i = first; i < first + x->split[s]; i++)
		n += x->kind_of[i] == k;
	return n;
}

/* ---- instantiating units ---- */

/* Unit u on `rank` (stage s) after task `after`; its last task into
 * *last. Returns 0, or -1 when out of memory.
 *
 * Each op follows the one before. In a step replayed from a CUDA graph
 * (su->graph full) without two-batch overlap, an EP collective is
 * awaited by the first later op that is not ep_free rather than by the
 * next one, so ep_free kernels (a TensorRT-LLM MoE layer's aux-stream
 * shared experts, infer_moe.c cutlass_ops) run while it is in flight;
 * with no ep_free op in the unit that is the same chain. Two-batch
 * overlap's units mark ep_free for their half batches (infer_tbo.c),
 * which the whole-batch steps here do not follow. */
static int inst_unit(struct prog *p, const struct infer_ctx *x,
		     const struct infer_step_units *su,
		     const struct infer_unit *u, uint32_t rank, int64_t s,
		     int32_t layer, int32_t mb, task_id after, task_id *last)
{
	task_id prev = after, pend = TASK_NONE, t;
	int beside = su->graph == IGRAPH_FULL && !x->dims.moe.tbo, ep, i;

	for (i = 0; i < u->n; i++) {
		t = infer_prog_op(p, x, su, &u->op[i], rank, s, layer, mb);
		if (t == TASK_NONE || (prev != TASK_NONE &&
				       prog_dep(p, prev, t) != 0))
			return -1;
		ep = beside && u->op[i].kind == IOP_EP;
		if (pend != TASK_NONE && (ep || !u->op[i].ep_free)) {
			if (prog_dep(p, pend, t) != 0)
				return -1;
			pend = TASK_NONE;
		}
		if (ep)
			pend = t;
		else
			prev = t;
	}
	/* a unit ending on an EP collective: the next unit waits for it
	 * (the kernel before it came first) */
	*last = pend != TASK_NONE ? pend : prev;
	return 0;
}

/* The send of a microbatch's activation from stage s to s + 1, after
 * task `after` on s; the receiver's member task into *recv. */
static int inst_send(struct prog *p, const struct infer_ctx *x, double tokens,
		     int64_t s, uint32_t from, uint32_t to, int32_t mb,
		     task_id after, task_id *recv)
{
	uint32_t ranks[2] = {from, to};
	int64_t g = x->tp * x->adp;
	uint32_t gpus[2] = {x->gpus[s * g], x->gpus[(s + 1) * g]};
	struct coll_desc c = {
		.op = COLL_SENDRECV,
		.bytes = tokens * x->dims.hidden * x->dims.act_B,
		.gpus = gpus, .ngpus = 2, .algo = -1, .proto = -1,
		.replicas = (uint32_t)g, .sm_share = 0,
	};
	struct task_info info = {"pp_send", TASK_COMM, -1, mb,
				 TASK_PHASE_NONE};
	task_id first = prog_coll(p, ranks, 2, IST_PP, &c, &info);

	if (first == TASK_NONE ||
	    (after != TASK_NONE && prog_dep(p, after, first) != 0))
		return -1;
	*recv = first + 1;
	return 0;
}

/* One microbatch mb of b on stage s, after `after` (on s > 0 the
 * receive of its activation). Every stage first copies its own step
 * inputs (u->input): vLLM V1's worker on a later pipeline rank receives
 * the intermediate tensors, then runs the model runner's execute_model,
 * whose _prepare_inputs commits the block table (vllm-project/vllm @
 * 0012cf69 vllm/v1/worker/gpu_worker.py Worker.execute_model:
 * recv_tensor_dict before model_runner.execute_model), so the copy runs
 * on every stage, after the receive. */
static int inst_stage(struct prog *p, const struct infer_ctx *x,
		      const struct infer_step_units *u,
		      const struct infer_step_units *half, int64_t s,
		      int32_t mb, task_id after, task_id *last)
{
	int64_t first = split_first_layer(x->split, s), k, n;
	uint32_t rank = (uint32_t)s;
	task_id t = after;

	if (u->input.n > 0 &&
	    inst_unit(p, x, u, &u->input, rank, s, -1, mb, t, &t))
		return -1;
	if (s == 0 && inst_unit(p, x, u, &u->embed, rank, s, -1, mb, t, &t))
		return -1;
	for (k = first; k < first + x->split[s]; k += n) {
		/* a run of MoE layers as two half batches (infer_tbo.c) */
		for (n = 0; half && k + n < first + x->split[s] &&
		     x->kinds[x->kind_of[k + n]].moe; n++)
			;
		if (n > 0) {
			if (infer_tbo_layers(p, x, half, s, k, n, mb, t, &t))
				return -1;
			continue;
		}
		n = 1;
		if (inst_unit(p, x, u, &u->layer[x->kind_of[k]], rank, s,
			      (int32_t)k, mb, t, &t))
			return -1;
	}
	if (s == x->pp - 1 &&
	    inst_unit(p, x, u, &u->head, rank, s, -1, mb, t, &t))
		return -1;
	*last = t;
	return 0;
}

void infer_micro_batch(const struct infer_batch *b, int64_t m,
		       struct infer_batch *out)
{
	int i;

	*out = *b;
	for (i = 0; i < out->n; i++)
		out->g[i].count /= (double)m;
}

struct prog *infer_prog_step(const struct infer_ctx *x,
			     const struct infer_batch *b, int64_t micro,
			     double route_T, struct infer_prog_info *info,
			     struct diag *d)
{
	struct infer_step_units *u = mem_calloc(2, sizeof(*u)), *half = NULL;
	struct infer_batch mbat, padded, hb;
	struct prog *p = infer_prog_empty(x);
	task_id host = TASK_NONE, t, recv;
	int64_t mb, s;

	memset(info, 0, sizeof(*info));
	if (!u || !p)
		goto oom;
	arena_init(&u[0].arena);
	arena_init(&u[1].arena);
	if (micro < 1)
		micro = 1;
	infer_micro_batch(b, micro, &mbat);
	info->graph = infer_graph_for(x, &mbat, &padded);
	if (infer_tbo_on(x, &padded)) {
		/* two-batch overlap: the MoE layers' half batches */
		infer_micro_batch(&padded, 2, &hb);
		half = &u[1];
		half->tbo = infer_batch_decode_only(&padded) ? ITBO_DECODE :
							       ITBO_PREFILL;
		info->tbo = 1;
	}
	if (infer_units(x, &padded, info->graph, route_T / (double)micro, u,
			d) != 0 ||
	    (half && infer_units(x, &hb, info->graph,
				 route_T / (double)micro / 2, half, d) != 0)) {
		infer_step_units_release(&u[0]);
		infer_step_units_release(&u[1]);
		mem_free(u);
		prog_free(p);
		return NULL;
	}
	info->microbatches = micro;
	info->tokens = infer_batch_tokens(b);
	info->sampled = infer_batch_sampled(b);
	info->host_s = infer_host_s(x, b);
	info->host_in_prog = !x->eng->overlap_scheduling;
	if (info->host_in_prog) {
		struct task_info hi = {"host_step", TASK_OTHER, -1, -1,
				       TASK_PHASE_NONE};

		host = prog_task(p, 0, IST_HOST, info->host_s, &hi);
		if (host == TASK_NONE)
			goto oom;
	}
	for (mb = 0; mb < micro; mb++) {
		t = host;
		for (s = 0; s < x->pp; s++) {
			if (inst_stage(p, x, u, half, s, (int32_t)mb, t, &t))
				goto oom;
			if (s + 1 < x->pp &&
			    inst_send(p, x, infer_batch_tokens(&mbat), s,
				      (uint32_t)s, (uint32_t)(s + 1),
				      (int32_t)mb, t, &recv))
				goto oom;
			if (s + 1 < x->pp)
				t = recv;
		}
	}
	infer_step_units_release(&u[0]);
	infer_step_units_release(&u[1]);
	mem_free(u);
	return p;
oom:
	if (u) {
		infer_step_units_release(&u[0]);
		infer_step_units_release(&u[1]);
	}
	mem_free(u);
	prog_free(p);
	diag_oom(d);
	return NULL;
}

struct prog *infer_prog_unit(const struct infer_ctx *x,
			     const struct infer_step_units *su,
			     const struct infer_unit *u, int64_t stage)
{
	struct prog *p = infer_prog_empty(x);
	task_id last;

	if (!p)
		return NULL;
	if (inst_unit(p, x, su, u, (uint32_t)stage, stage, -1, 0, TASK_NONE,
		      &last) != 0) {
		prog_free(p);
		return NULL;
	}
	return p;
}

struct prog *infer_prog_send(const struct infer_ctx *x, double tokens,
			     int64_t stage)
{
	struct prog *p = infer_prog_empty(x);
	task_id recv;

	if (!p)
		return NULL;
	if (inst_send(p, x, tokens, stage, (uint32_t)stage,
		      (uint32_t)(stage + 1), 0, TASK_NONE, &recv) != 0) {
		prog_free(p);
		return NULL;
	}
	return p;
}

void infer_rank_label(uint32_t rank, char *buf, size_t len, void *arg)
{
	(void)arg;
	snprintf(buf, len, "stage %u", rank);
}
