/*
 * serve_setup.c - the instances of a serving run and their handoffs.
 *
 * Instances: the job's dp replicas of tp x pp GPUs, all alike (one step
 * model shared); or, disaggregated, a prefill pool and a decode pool, each
 * of its own layout (a job like the original with that pool's
 * parallelism), prefill instances on the first GPUs and decode instances
 * after them, from the next node when the KV is to move over the
 * scale-out fabric.
 *
 * Each instance's KV pool: infer_mem.h's capacity for its layout (pages of
 * the engine's block_size), with the speculative draft's weights and KV
 * on the instances that run it (the decode pool's, or all). A pool that
 * cannot hold the longest request (prompt + output, plus the drafts of a
 * verify step; or serving.max_model_len tokens, kv_longest) is bad input:
 * no scheduler could ever finish it; so is a request longer than
 * max_model_len or the model's context (context_fit).
 *
 * The handoff of a prefilled request to a decode instance is
 * serve_xfer.c's.
 */
#include "serve_impl.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "engine/sim.h"
#include "network/net.h"

/* The pools' jobs and models live as long as the run. */
struct pool_jobs {
	struct job_spec job[2];		/* prefill, decode (disaggregated) */
	struct job_spec draft;		/* speculative: the draft's job */
	struct model_spec draft_model;
};

/* A pool's instances as a job: tp x pp GPUs each; with attention_dp its
 * tp GPUs are attention data-parallel ranks (attention TP 1, as SGLang's
 * --tp N --dp N --enable-dp-attention) that the MoE layers span. */
static void pool_job(const struct job_spec *j, const struct pool_spec *p,
		     struct job_spec *out)
{
	*out = *j;
	out->parallelism.tp = p->attention_dp ? 1 : p->tp;
	out->parallelism.pp = p->pp;
	out->parallelism.ep = p->ep;
	out->parallelism.etp = 0;	/* the experts' GPUs over ep */
	out->parallelism.attention_dp = p->attention_dp;
	out->parallelism.dp = p->attention_dp ? p->tp : p->instances;
	out->parallelism.pp_layers.n = 0;
	out->parallelism.pp_layout = NULL;
}

/* Report at the serving section (a problem the simulation found). */
static void serving_error(const struct job_spec *j, struct diag *d,
			  const char *msg)
{
	diag_error(d, j->serving.file, j->serving.line, j->serving.col,
		   "serving: %s", msg);
}

static int64_t longest_prompt(const struct serve *s)
{
	int64_t i, m = 0;

	for (i = 0; i < s->nreq; i++)
		if (s->req[i].input > m)
			m = s->req[i].input;
	return m;
}

static int64_t longest_request(const struct serve *s)
{
	int64_t i, m = 0;

	for (i = 0; i < s->nreq; i++)
		if (s->req[i].input + s->req[i].output > m)
			m = s->req[i].input + s->req[i].output;
	return m;
}

/*
 * The KV tokens one sequence must be able to hold, and what sets it (for
 * the message): the longest request's prompt + output, plus under
 * speculative decoding the k draft tokens of its last verify step (the
 * schedulers give a decoding request pages for computed + 1 + k tokens,
 * serve_sched.c, and at its last token computed = prompt + output - 1, as
 * vLLM V1 allocates slots for the scheduled drafts); with
 * serving.max_model_len, at least that many: vLLM V1 refuses to start
 * when its KV cache cannot hold one sequence of max_model_len tokens
 * (v1/core/kv_cache_utils.py check_enough_kv_cache_memory) [D], and
 * llmsim holds every engine to it (a length the user states the engine
 * serves).
 */
static int64_t kv_longest(const struct serve *s, const char **why)
{
	const struct speculative_spec *sp = &s->job->serving.speculative;
	int64_t k = sp->method == SPEC_NONE ? 0 : sp->tokens;
	int64_t m = serve_kv_slots(s, longest_request(s) + k);

	*why = m > longest_request(s) + k ? "the longest prompt + output + "
	       "the speculative draft tokens + vLLM's as many lookahead "
	       "slots" : k > 0 ? "the longest prompt + output + the "
	       "speculative draft tokens" : "the longest prompt + output";
	if (s->job->serving.max_model_len > m) {
		m = s->job->serving.max_model_len;
		*why = "serving.max_model_len";
	}
	return m;
}

/*
 * Every request within the engine's context: prompt + output <=
 * serving.max_model_len, else the model's max_position_embeddings. vLLM rejects a longer one (its processor's
 * _validate_model_input: a prompt of max_model_len or more; the OpenAI
 * server: max_tokens above max_model_len - prompt, a 400 error), as
 * TensorRT-LLM does against max_seq_len; neither truncates unless asked.
 * So a drawn request over it is bad input (exit 2), not clamped: clamping
 * would pile the distribution's tail at the limit and report a benchmark
 * no engine would run. The draws are seeded, so the check is
 * reproducible; bound the distributions (input_len.max, output_len.max)
 * to keep them inside. A trace's rows are checked as they are read, at
 * their row and column (serve_req.c). -2 after reporting.
 */
static int context_fit(const struct serve *s)
{
	int64_t i, ctx = serve_context_len(s->job);
	char msg[400];

	for (i = 0; ctx > 0 && i < s->nreq; i++) {
		const struct serve_req *r = &s->req[i];

		if (r->input + r->output <= ctx)
			continue;
		snprintf(msg, sizeof(msg), "request %lld (drawn: %lld prompt + "
			 "%lld output tokens) exceeds %s of %lld tokens%s: "
			 "vLLM (max_model_len) and TensorRT-LLM (max_seq_len) "
			 "reject it; bound input_len and output_len (max) so "
			 "that their sum fits", (long long)i + 1,
			 (long long)r->input, (long long)r->output,
			 serve_context_name(s->job), (long long)ctx,
			 serve_context_note(s->job));
		serving_error(s->job, s->d, msg);
		return -2;
	}
	return 0;
}

/* The pages the longest request needs at its peak: every page of its
 * tokens, but a sliding-window group's only those of its window and the
 * largest step's new tokens (vLLM's check_enough_kv_cache_memory,
 * SlidingWindowSpec.max_memory_usage_bytes: cdiv(min(W - 1 +
 * max_num_batched_tokens, max_model_len), block_size) + 1 pages). */
static int64_t longest_pages(const struct serve_inst *in, int64_t longest)
{
	int64_t all = kv_pages_for(in, longest), w, p;

	if (in->window_groups <= 0)
		return all;
	w = in->window_tokens - 1 + in->max_tokens;
	w = w < longest ? w : longest;
	p = (longest + in->block - 1) / in->block;
	return in->full_groups * p +
	       in->window_groups * ((w + in->block - 1) / in->block + 1) +
	       in->state_pages;
}

/* Size instance in from its step model's context and memory; check that
 * it can hold the longest request. -2 after reporting bad input. */
static int size_inst(struct serve *s, struct serve_inst *in,
		     struct infer_stepper *st, const struct infer_mem_draft *dm,
		     struct infer_mem *mem, int64_t longest, const char *why)
{
	const struct infer_ctx *x = &st->ctx;
	const struct serving_spec *sv = &s->job->serving;
	char msg[512];
	int64_t k;

	infer_mem_job(x->job, x->eng, &x->dims, x->split,
		      (double)x->max_tokens, (double)x->max_seqs,
		      sv->input_len.mean + sv->output_len.mean, dm, mem);
	in->step = st;
	in->pp = x->pp > 0 ? x->pp : 1;
	in->block = x->eng->block_size;
	in->state_pages = (int64_t)mem->state_pages;
	in->full_groups = (int64_t)mem->full_groups;
	in->window_groups = (int64_t)mem->window_groups;
	in->window_tokens = (int64_t)mem->window_tokens;
	/* attention DP: adp engine ranks, each with its pool and budgets,
	 * scheduled here as one (requests spread evenly over them) */
	in->pages = in->free_pages = (int64_t)mem->kv_pages * x->adp;
	in->max_seqs = x->max_seqs * x->adp;
	in->max_tokens = x->max_tokens * x->adp;
	in->adp = x->adp > 0 ? x->adp : 1;
	in->chunked = x->chunked;
	in->chunked_req = -1;
	in->reqs = s->req;
	in->keep_preempted = x->eng->scheduler == ENGINE_SCHED_VLLM &&
			     x->eng->prefix_caching && in->adp == 1;
	if (x->eng->scheduler == ENGINE_SCHED_SGLANG && in->adp > 1) {
		in->adp_chunked = mem_alloc((size_t)in->adp *
					    sizeof(*in->adp_chunked));
		in->adp_left = mem_alloc((size_t)in->adp *
					 sizeof(*in->adp_left));
		in->adp_busy = mem_alloc((size_t)in->adp);
		if (!in->adp_chunked || !in->adp_left || !in->adp_busy) {
			diag_oom(s->d);
			return -1;
		}
		for (k = 0; k < in->adp; k++)
			in->adp_chunked[k] = -1;
	}
	/* SGLang under attention DP: server_args.py _handle_data_parallelism
	 * multiplies schedule_conservativeness by 0.3, and the scheduler's
	 * initial ratio, floor and decay all scale with it */
	in->init_token_ratio = fmin(x->eng->new_token_ratio *
				    (x->adp > 1 ? x->eng->
				     adp_schedule_conservativeness : 1), 1);
	in->new_token_ratio = in->init_token_ratio;
	if (mem->weights_B + mem->activations_B + mem->workspace_B >
	    mem->usable_B) {
		snprintf(msg, sizeof(msg), "the weights (%.3g GB per GPU), "
			 "activations and workspace do not fit in the %.3g GB "
			 "a GPU has: use more GPUs (tp/pp) or a smaller dtype",
			 mem->weights_B / 1e9, mem->usable_B / 1e9);
		serving_error(s->job, s->d, msg);
		return -2;
	}
	/* within the GPU but not within the engine's share of it
	 * (memory_fraction of the capacity, infer_mem.c kv_by_rule): no
	 * KV cache at all. It used to read "the KV cache of an instance
	 * holds 0 tokens (0 GB per GPU ...)" (grok1-314b bf16 on 8 H100s
	 * under vLLM: 81.8 of 84.4 GB used, 5.9 GB over vLLM's 0.9). The
	 * workspace named is the part the budget counts: under memory_rule
	 * snapshot the graph pool is captured after the KV cache is sized
	 * (infer_mem.c kv_by_rule), so it is not part of the excess. */
	if (mem->kv_cache_B < 0) {
		double counted_B = mem->workspace_B -
			(x->eng->memory_rule == ENGINE_MEM_SNAPSHOT ?
			 x->eng->graph_pool_B : 0);
		snprintf(msg, sizeof(msg), "the weights (%.3g GB per GPU), "
			 "activations (%.3g GB) and workspace (%.3g GB) leave "
			 "no KV cache: they exceed the engine's share of the "
			 "GPU (memory_fraction %.2f of %.3g GB) by %.3g GB: use "
			 "more GPUs (tp/pp) or a smaller dtype",
			 mem->weights_B / 1e9, mem->activations_B / 1e9,
			 counted_B / 1e9, x->eng->memory_fraction,
			 x->job->system->gpu->hbm.capacity_B / 1e9,
			 -mem->kv_cache_B / 1e9);
		serving_error(s->job, s->d, msg);
		return -2;
	}
	/* vLLM refuses a token budget below its sequence budget: every
	 * running sequence takes at least one token a step
	 * (SchedulerConfig._verify_args, vllm-project/vllm@f0de1a60
	 * vllm/config/scheduler.py; V0's the same); llmsim ran it, one
	 * sequence's token a step */
	if ((x->eng->scheduler == ENGINE_SCHED_VLLM ||
	     x->eng->scheduler == ENGINE_SCHED_VLLM_V0) &&
	    x->max_tokens < x->max_seqs) {
		snprintf(msg, sizeof(msg), "max_num_batched_tokens %lld is "
			 "below max_num_seqs %lld (vLLM refuses it: every "
			 "running sequence takes a token a step): raise "
			 "max_num_batched_tokens or lower max_num_seqs",
			 (long long)x->max_tokens, (long long)x->max_seqs);
		serving_error(s->job, s->d, msg);
		return -2;
	}
	if (!in->chunked && longest_prompt(s) > in->max_tokens) {
		snprintf(msg, sizeof(msg), "a prompt of %lld tokens exceeds "
			 "max_num_batched_tokens %lld and chunked prefill is off "
			 "(the engine would reject it): set chunked_prefill: true "
			 "or a larger max_num_batched_tokens",
			 (long long)longest_prompt(s), (long long)in->max_tokens);
		serving_error(s->job, s->d, msg);
		return -2;
	}
	/* no layer keeps a token's keys or a sequence's recurrent state (a
	 * hybrid of MLP '-' and MoE 'E' layers alone): nothing bounds the
	 * pool, and no engine sizes one (vLLM's KV cache config has no
	 * group to page) */
	if (!(mem->kv_token_B > 0) && !(mem->state_seq_B > 0)) {
		const struct model_spec *m = s->job->model;

		snprintf(msg, sizeof(msg), "model '%s' has no attention, "
			 "Gated DeltaNet or Mamba layer%s%s%s: no layer holds "
			 "a KV cache or a recurrent state, so no token sees "
			 "another and the engine has no cache to size; give "
			 "the model a mixer layer ('*' or 'M')",
			 m->name ? m->name : "?",
			 m->hybrid_override_pattern ?
			 " (hybrid_override_pattern '" : "",
			 m->hybrid_override_pattern ?
			 m->hybrid_override_pattern : "",
			 m->hybrid_override_pattern ? "')" : "");
		serving_error(s->job, s->d, msg);
		return -2;
	}
	if ((int64_t)mem->kv_pages < longest_pages(in, longest)) {
		snprintf(msg, sizeof(msg), "the KV cache of an instance holds "
			 "%lld tokens (%.3g GB per GPU, %.0f B a token), fewer "
			 "than one sequence of %lld tokens (%s): use more GPUs, "
			 "a smaller kv_dtype or %s",
			 (long long)mem->kv_tokens,
			 fmax(mem->kv_cache_B, 0) / 1e9, mem->kv_token_B,
			 (long long)longest, why,
			 strcmp(why, "serving.max_model_len") == 0 ?
			 "a lower serving.max_model_len" : "shorter requests");
		serving_error(s->job, s->d, msg);
		return -2;
	}
	/* TensorRT-LLM attention DP: each rank its own pool, fetched
	 * requests held on their rank until its capacity scheduler admits
	 * them (serve_sched.c adp_fetch). Aggregated instances only: a
	 * decode instance's requests arrive with their KV (pooled). */
	if (x->eng->scheduler == ENGINE_SCHED_TRTLLM &&
	    x->eng->adp_admit == ENGINE_ADP_RANK && in->role == ROLE_BOTH &&
	    in->adp > 1 && in->adp <= ADP_MAX_BINS) {
		in->adp_used = mem_calloc((size_t)in->adp,
					  sizeof(*in->adp_used));
		if (!in->adp_used) {
			diag_oom(s->d);
			return -1;
		}
		in->rank_pages = (int64_t)mem->kv_pages;
	}
	return 0;
}

/*
 * The draft of speculative decoding, as its method makes it:
 *   draft  its own model (draft_model), on the target's layout
 *   mtp    draft_layers of the target's multi-token-prediction modules
 *          (the job check bounds them by num_nextn_predict_layers), each
 *          a decoder layer of the type the target's layer rule gives
 *          index num_hidden_layers + i (DeepSeek-V3 layer 61: MoE; SGLang
 *          deepseek_nextn.py builds DeepseekV2DecoderLayer with
 *          is_nextn, sparse), after enorm, hnorm and eh_proj (2 h -> h),
 *          with the target's embedding and LM head (shared)
 *   eagle  draft_layers dense decoder layers of the target's width and
 *          intermediate_size (EAGLE's LlamaDecoderLayer, whatever the
 *          target's MLP or window), after fc (2 h -> h), with the target's
 *          embedding and LM head
 * Copying the target's layer set (before) gave an all-dense target a
 * dense MTP layer it does not have and an MoE target an MoE EAGLE layer,
 * and left out the input projection.
 */
static void draft_head(const struct speculative_spec *sp,
		       const struct model_spec *t, struct model_spec *m)
{
	*m = *t;
	m->num_hidden_layers = sp->draft_layers;
	m->num_nextn_predict_layers = 0;
	if (sp->method == SPEC_MTP &&
	    model_layer_moe(t, t->num_hidden_layers)) {
		m->first_k_dense_replace = 0;
		m->decoder_sparse_step = 1;
		m->moe_layer_freq = 1;
		m->mlp_only_layers.n = 0;
		m->moe_layers.n = 0;
	} else {
		m->n_routed_experts = 0;	/* a dense MLP */
	}
	if (sp->method == SPEC_EAGLE) {	/* full causal attention */
		m->layer_types.n = 0;
		m->sliding_window = 0;
		m->attention_chunk_size = 0;
	}
}

/* The draft's job for speculative decoding (or none). */
static int draft_setup(struct serve *s, struct pool_jobs *pj,
		       const struct job_spec *target)
{
	const struct speculative_spec *sp = &s->job->serving.speculative;
	int rc;

	if (sp->method == SPEC_NONE)
		return 0;
	pj->draft = *target;
	pj->draft.serving.speculative.method = SPEC_NONE;
	pj->draft.parallelism.pp = 1;
	pj->draft.parallelism.pp_layers.n = 0;
	pj->draft.parallelism.pp_layout = NULL;
	if (sp->method == SPEC_DRAFT) {
		pj->draft.model = sp->draft_model;
	} else {
		draft_head(sp, target->model, &pj->draft_model);
		pj->draft.model = &pj->draft_model;
	}
	if (!model_is_moe(pj->draft.model)) {	/* no experts to spread */
		pj->draft.parallelism.ep = 1;
		pj->draft.parallelism.etp = 0;
	}
	s->draft = mem_calloc(1, sizeof(*s->draft));
	if (!s->draft)
		return -1;
	rc = infer_stepper_init(s->draft, &pj->draft, s->d);
	if (rc != 0) {
		mem_free(s->draft);
		s->draft = NULL;
		return rc;
	}
	if (sp->method != SPEC_DRAFT) {
		s->draft->ctx.dims.draft_in = 2;
		s->draft->ctx.dims.draft_norms = sp->method == SPEC_MTP ? 2 : 0;
	}
	return 0;
}

static int pools(struct serve *s, struct pool_jobs *pj, int64_t *sizes,
		 int64_t *counts, int *npools)
{
	const struct job_spec *j = s->job;
	const struct disagg_spec *dg = &j->serving.disaggregated;

	if (!dg->enabled) {
		pj->job[0] = *j;
		sizes[0] = j->parallelism.tp * j->parallelism.pp;
		counts[0] = j->parallelism.dp;
		if (j->parallelism.attention_dp) {	/* one instance */
			sizes[0] *= j->parallelism.dp;
			counts[0] = 1;
		}
		*npools = 1;
		return 0;
	}
	pool_job(j, &dg->prefill, &pj->job[0]);
	pool_job(j, &dg->decode, &pj->job[1]);
	sizes[0] = dg->prefill.tp * dg->prefill.pp;
	sizes[1] = dg->decode.tp * dg->decode.pp;
	counts[0] = dg->prefill.instances;
	counts[1] = dg->decode.instances;
	*npools = 2;
	return 0;
}

/* GPUs of instance k: where its first GPU is. */
static int64_t place(const struct serve *s, int pool, int64_t k,
		     const int64_t *sizes, const int64_t *counts)
{
	const struct job_spec *j = s->job;
	int64_t per_node = j->system->gpus_per_node, base;

	if (pool == 0)
		return k * sizes[0];
	base = counts[0] * sizes[0];
	if (j->serving.disaggregated.transfer == KV_VIA_SCALE_OUT)
		base = (base + per_node - 1) / per_node * per_node;
	return base + k * sizes[1];
}

/* vLLM V1's FlashAttention backend takes no fp8 KV cache on FlashAttention
 * 2: FlashAttentionImpl.__init__ raises "FlashAttention does not support
 * fp8 kv-cache on this device" unless flash_attn_supports_fp8() (FA3 on
 * capability 9.x; vllm v1/attention/backends/flash_attn.py,
 * attention/utils/fa_utils.py). The GPUs where that backend runs FA2 are
 * those where a step's tokens share its unpacked varlen kernel (infer_dims
 * mixed_rows > 0: engine mixed_attn_unpacked_cc, not under the sink rule's
 * Triton backend, not MLA): refuse a KV cache under 2 B an element there. */
static int fa2_kv_check(const struct serve *s)
{
	struct infer_dims d;
	char msg[256];

	if (!s->job->system || !s->job->system->gpu)
		return 0;
	infer_dims_from_job(s->job, s->job->system->gpu, &d);
	if (!(d.mixed_rows > 0) || dtype_bytes(d.kv) >= 2)
		return 0;
	snprintf(msg, sizeof(msg), "kv_dtype %s needs FlashAttention 3: "
		 "vLLM's FlashAttention 2 backend on %s has no fp8 KV cache "
		 "(\"FlashAttention does not support fp8 kv-cache on this "
		 "device\"); use kv_dtype bf16 or fp16",
		 dtype_names[d.kv], s->job->system->gpu->arch);
	serving_error(s->job, s->d, msg);
	return -2;
}

int serve_setup(struct serve *s, struct serve_result *out)
{
	struct pool_jobs *pj = mem_calloc(1, sizeof(*pj));
	int64_t sizes[2] = {0, 0}, counts[2] = {0, 0}, k;
	const char *why = NULL;
	int64_t longest = kv_longest(s, &why);
	int npools, p, rc = -1, i = 0, ninst;
	struct infer_mem_draft dm;
	char msg[256];

	s->sim = sim_new();
	s->rng = gsl_rng_alloc(gsl_rng_mt19937);
	s->pools_mem = pj;
	if (!pj || !s->sim || !s->rng) {
		diag_oom(s->d);
		return -1;
	}
	gsl_rng_set(s->rng, (unsigned long)s->job->serving.seed + 1);
	if (context_fit(s) != 0 || fa2_kv_check(s) != 0)
		return -2;
	pools(s, pj, sizes, counts, &npools);
	if (place(s, npools - 1, counts[npools - 1], sizes, counts) >
	    system_gpus(s->job->system)) {
		snprintf(msg, sizeof(msg), "the pools need %lld GPUs, the "
			 "system has %lld", (long long)place(s, npools - 1,
			 counts[npools - 1], sizes, counts),
			 (long long)system_gpus(s->job->system));
		serving_error(s->job, s->d, msg);
		return -2;
	}
	/* the draft first: the instances that run it hold it */
	rc = draft_setup(s, pj, &pj->job[npools - 1]);
	if (rc != 0)
		return rc == -1 ? (diag_oom(s->d), -1) : rc;
	if (s->draft)
		infer_mem_draft_of(s->draft->ctx.job, &s->draft->ctx.dims, &dm);
	s->steppers = mem_calloc((size_t)npools, sizeof(*s->steppers));
	ninst = (int)(counts[0] + (npools > 1 ? counts[1] : 0));
	s->inst = mem_calloc((size_t)ninst, sizeof(*s->inst));
	s->first_gpu = mem_calloc((size_t)ninst, sizeof(*s->first_gpu));
	if (!s->steppers || !s->inst || !s->first_gpu) {
		diag_oom(s->d);
		return -1;
	}
	s->ninst = ninst;	/* after the allocation: serve_teardown walks them */
	for (p = 0; p < npools; p++) {
		rc = infer_stepper_init(&s->steppers[p], &pj->job[p], s->d);
		if (rc != 0)
			return rc;
		s->nsteppers = p + 1;
		for (k = 0; k < counts[p]; k++, i++) {
			struct infer_mem *mem = p == npools - 1 ? &out->mem
							      : &out->prefill_mem;

			s->inst[i].role = npools == 1 ? ROLE_BOTH :
					  p == 0 ? ROLE_PREFILL : ROLE_DECODE;
			s->first_gpu[i] = place(s, p, k, sizes, counts);
			rc = size_inst(s, &s->inst[i], &s->steppers[p],
				       s->draft && p == npools - 1 ? &dm : NULL,
				       mem, longest, why);
			if (rc != 0)
				return rc;
			if (p == npools - 1) {
				double adp = (double)s->steppers[p].ctx.adp;

				out->kv_tokens = mem->kv_tokens * adp;
				out->kv_sequences = mem->kv_sequences * adp;
			}
		}
	}
	s->nprefill = npools > 1 ? (int)counts[0] : 0;
	out->instances = s->ninst;
	out->gpus = counts[0] * sizes[0] + (npools > 1 ? counts[1] * sizes[1] : 0);
	out->offered_rate = isfinite(s->job->serving.arrival_rate) ?
			    s->job->serving.arrival_rate : 0;
	if (s->job->serving.trace) {
		/* the trace's mean rate (requests are sorted by arrival) */
		double span = s->nreq > 1 ? s->req[s->nreq - 1].arrival_s -
					    s->req[0].arrival_s : 0;

		out->offered_rate = span > 0 ? (double)(s->nreq - 1) / span : 0;
	}
	if (npools > 1) {
		s->xfer_net = net_new(s->job->system, s->sim, s->d);
		if (!s->xfer_net)
			return s->d->oom ? -1 : -2;
	}
	return 0;
}

void serve_teardown(struct serve *s)
{
	int i;

	for (i = 0; i < s->ninst; i++) {
		rq_release(&s->inst[i].waiting);
		mem_free(s->inst[i].running);
		mem_free(s->inst[i].adp_used);
		mem_free(s->inst[i].adp_chunked);
		mem_free(s->inst[i].adp_left);
		mem_free(s->inst[i].adp_busy);
		mem_free(s->inst[i].pend);
	}
	for (i = 0; i < s->nsteppers; i++)
		infer_stepper_release(&s->steppers[i]);
	if (s->draft)
		infer_stepper_release(s->draft);
	net_free(s->xfer_net);
	mem_free(s->draft);
	mem_free(s->steppers);
	mem_free(s->inst);
	mem_free(s->first_gpu);
	mem_free(s->pools_mem);
	mem_free(s->req);
	if (s->rng)
		gsl_rng_free(s->rng);
	sim_free(s->sim);
}
