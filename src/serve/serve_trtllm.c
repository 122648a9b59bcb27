/*
 * serve_trtllm.c - TensorRT-LLM's next step (serve_sched.c has the other
 * engines and the pieces they share).
 *
 * TensorRT-LLM (batch_manager capacity and micro-batch schedulers): the
 * capacity scheduler admits waiting requests FCFS up to max_batch_size:
 * GUARANTEED_NO_EVICT only when the pages of its whole sequence (prompt +
 * output) are free beyond what the running ones have reserved for theirs,
 * so it never evicts; MAX_UTILIZATION when its prompt's pages are free,
 * evicting the latest request when the pool runs out. The micro-batch
 * scheduler then fills max_num_tokens: generation requests first, then
 * context requests, whole (or chunked with chunked context). (A prompt
 * longer than max_num_tokens without chunking is refused before the run,
 * serve_setup.c, as the engines refuse it.) Under attention DP each rank
 * runs both on the requests it holds, against its own KV pool and
 * max_num_tokens (adp_fetch, adp_admit below).
 */
#include "serve_impl.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"

static int64_t reserved_pages(const struct serve *s,
			      const struct serve_inst *in)
{
	int64_t i, p = 0;

	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *r = &s->req[in->running[i]];
		int64_t want = kv_pages_for(in, r->reserved);

		p += want > r->pages ? want : r->pages;
	}
	return p;
}

/*
 * What a waiting request's admission counts, under either policy: the
 * blocks of its whole prompt, the prefix cache's tokens included, as the
 * step then charges them (serve_kv_grow to the cached tokens plus the
 * computed ones: a request holds its cached prefix's pages while it
 * runs). TensorRT-LLM's capacity schedulers count the same:
 * KVCacheManager::getNeededBlocksOneStep (MAX_UTILIZATION) gives a first
 * context chunk the blocks of mPromptLen, and getRemainingBlocksToCompletion
 * (GUARANTEED_NO_EVICT) those of mPromptLen + mMaxNewTokens, block reuse
 * or not (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp, NVIDIA/
 * TensorRT-LLM @002ba6a7 and every stored version). Counting only the
 * uncached part admitted a request whose prompt the pool could not then
 * hold.
 */
static int trtllm_admit(struct serve *s, struct serve_inst *in, double now)
{
	int no_evict = s->job->serving.engine->capacity == ENGINE_CAP_NO_EVICT;
	int64_t held = no_evict ? reserved_pages(s, in) : 0;

	(void)now;
	while (in->waiting.n > 0 && in->nrunning < in->max_seqs) {
		int64_t id = rq_front(&in->waiting);
		struct serve_req *r = &s->req[id];
		int64_t whole = r->prompt + (r->output - r->generated);

		if (no_evict && held + kv_pages_for(in, whole) > in->pages)
			break;
		if (!no_evict && kv_pages_for(in, r->prompt) > in->free_pages)
			break;	/* the whole prompt (above) */
		if (serve_admit(s, in, id) != 0)
			return -1;
		r->reserved = no_evict ? whole : 0;
		held += no_evict ? kv_pages_for(in, whole) : 0;
	}
	return 0;
}

/* Attention DP (TensorRT-LLM 1.0, tensorrt_llm/_torch/pyexecutor/
 * executor_request_queue.py _schedule_attention_dp_requests and
 * _balance_requests_across_ranks, NVIDIA/TensorRT-LLM@007a7508): the
 * requests fetched in an iteration go, longest prompt first, each to the
 * rank with the fewest active prompt tokens (py_orig_prompt_len; ties:
 * fewer requests, then the lower rank) among the ranks holding fewer than
 * expected = max(ceil((active + fetched) / ranks), the most any rank
 * holds) requests, and stay there. adp_spread places the k requests of v
 * on ranks holding cnt requests of tok prompt tokens (both updated) and
 * leaves v in the order they were placed. */
struct adp_new {
	int64_t input, pos, id;
};

static int by_prompt_desc(const void *a, const void *b)
{
	const struct adp_new *x = a, *y = b;

	if (x->input != y->input)
		return x->input > y->input ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void adp_spread(struct serve *s, struct serve_inst *in,
		       struct adp_new *v, int64_t k, int64_t *cnt,
		       int64_t *tok)
{
	int64_t i, r, n = in->adp, total = 0, most = 0, expected;

	qsort(v, (size_t)k, sizeof(*v), by_prompt_desc);
	for (r = 0; r < n; r++) {
		total += cnt[r];
		most = cnt[r] > most ? cnt[r] : most;
	}
	expected = (total + k + n - 1) / n;
	expected = expected > most ? expected : most;
	for (i = 0; i < k; i++) {
		struct serve_req *q = &s->req[v[i].id];
		int64_t best = -1;

		for (r = 0; r < n; r++)
			if (cnt[r] < expected &&
			    (best < 0 || tok[r] < tok[best] ||
			     (tok[r] == tok[best] && cnt[r] < cnt[best])))
				best = r;
		assert(best >= 0);	/* expected x n >= total + k */
		q->adp_rank = (int)best;
		q->adp_inst = (int)(in - s->inst);
		cnt[best]++;
		tok[best] += q->input;
	}
}

/* Pooled admission (engine adp_admission: pooled): the requests
 * admitted since the last call, against one KV pool of ranks x the
 * smallest rank's, are the fetched ones. */
static int adp_assign(struct serve *s, struct serve_inst *in)
{
	int64_t cnt[ADP_MAX_BINS], tok[ADP_MAX_BINS], i, k = 0, r;
	struct adp_new *v;

	for (r = 0; r < in->adp; r++)
		cnt[r] = tok[r] = 0;
	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *q = &s->req[in->running[i]];

		if (!serve_has_rank(s, in, q)) {
			k++;
			continue;
		}
		cnt[q->adp_rank]++;
		tok[q->adp_rank] += q->input;
	}
	if (k == 0)
		return 0;
	v = mem_alloc((size_t)k * sizeof(*v));
	if (!v)
		return -1;
	for (i = 0, k = 0; i < in->nrunning; i++) {
		const struct serve_req *q = &s->req[in->running[i]];

		if (!serve_has_rank(s, in, q))
			v[k++] = (struct adp_new){q->input, i, in->running[i]};
	}
	adp_spread(s, in, v, k, cnt, tok);
	mem_free(v);
	return 0;
}

/*
 * Per-rank admission (engine adp_admission: rank), as TensorRT-LLM's
 * PyTorch executor runs attention DP: every rank is a PyExecutor with
 * its own KV cache manager and capacity scheduler. Each iteration the
 * ranks all-gather their active request counts (fetched and not
 * finished, admitted or not) and fetch from the shared queue, FCFS, up
 * to ranks x max_num_active_requests (the engine's max_batch_size) less
 * those: no KV test at the fetch (executor_request_queue.py
 * _fetch_new_requests_attention_dp, total_max_num_active_requests =
 * tp_size x max_num_active_requests, @007a7508; the same count in
 * py_executor.py _fetch_new_requests before that file existed). The
 * fetched requests are spread as above and join their rank's active
 * list. Then each rank's capacity scheduler walks its own list
 * (GuaranteedNoEvictScheduler, cpp/tensorrt_llm/batch_manager/
 * capacityScheduler.cpp @02a10fed): requests in progress first, their
 * blocks to completion reserved; then the pending ones in order, each
 * admitted when its blocks to completion fit the rank's pool beyond
 * those, the rank's walk stopping at the first that does not (or at
 * max_batch_size scheduled). MAX_UTILIZATION admits when the prompt's
 * blocks fit what the rank has free and evicts on that rank.
 */
static int adp_fetch(struct serve *s, struct serve_inst *in)
{
	int64_t cnt[ADP_MAX_BINS], tok[ADP_MAX_BINS], i, k, r, active = 0;
	struct adp_new *v;

	for (r = 0; r < in->adp; r++)
		cnt[r] = tok[r] = 0;
	for (i = 0; i < in->nrunning + in->npend; i++) {
		const struct serve_req *q = &s->req[i < in->nrunning ?
			in->running[i] : in->pend[i - in->nrunning]];

		assert(q->adp_rank >= 0 && q->adp_rank < in->adp);
		cnt[q->adp_rank]++;
		tok[q->adp_rank] += q->input;
		active++;
	}
	k = in->max_seqs - active;	/* ranks x max_batch_size less them */
	k = k < in->waiting.n ? k : in->waiting.n;
	if (k <= 0)
		return 0;
	v = mem_alloc((size_t)k * sizeof(*v));
	if (!v) {
		s->failed = 1;
		return -1;
	}
	for (i = 0; i < k; i++) {
		int64_t id = rq_front(&in->waiting);

		rq_pop_front(&in->waiting);
		v[i] = (struct adp_new){s->req[id].input, i, id};
	}
	adp_spread(s, in, v, k, cnt, tok);
	for (i = 0; i < k; i++)
		if (serve_pend_add(in, v[i].id, 0) != 0) {
			s->failed = 1;
			mem_free(v);
			return -1;
		}
	mem_free(v);
	return 0;
}

static int adp_admit(struct serve *s, struct serve_inst *in)
{
	int no_evict = s->job->serving.engine->capacity == ENGINE_CAP_NO_EVICT;
	int64_t held[ADP_MAX_BINS], run[ADP_MAX_BINS], i, w = 0, r;
	int64_t per = in->max_seqs / in->adp;
	char shut[ADP_MAX_BINS];

	for (r = 0; r < in->adp; r++) {
		held[r] = no_evict ? 0 : in->adp_used[r];
		run[r] = 0;
		shut[r] = 0;
	}
	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *q = &s->req[in->running[i]];
		int64_t want = kv_pages_for(in, q->reserved);

		run[q->adp_rank]++;
		if (no_evict)
			held[q->adp_rank] += want > q->pages ? want : q->pages;
	}
	for (i = 0; i < in->npend; i++) {
		int64_t id = in->pend[i], need;
		struct serve_req *q = &s->req[id];
		int j = q->adp_rank;

		if (!shut[j] && run[j] >= per)
			shut[j] = 1;
		need = no_evict ? kv_pages_for(in, q->prompt +
					       (q->output - q->generated)) :
				  kv_pages_for(in, q->prompt);
		if (!shut[j] && held[j] + need > in->rank_pages)
			shut[j] = 1;
		if (shut[j]) {
			in->pend[w++] = id;	/* it waits on its rank */
			continue;
		}
		q->state = REQ_RUNNING;
		q->computed = serve_req_start(q);
		q->reserved = no_evict ? q->prompt + (q->output - q->generated)
				       : 0;
		if (serve_running_add(in, id) != 0) {
			s->failed = 1;
			return -1;
		}
		held[j] += need;
		run[j]++;
	}
	in->npend = w;
	return 0;
}

/* Each rank's micro-batch scheduler fills its own token budget
 * (max_tokens / adp, less its generation tokens) with whole prompts (or
 * chunks) of the requests it holds. Without tracked ranks (more than
 * ADP_MAX_BINS) the pooled scheduler places a context on the rank with
 * the most budget left (less an even share of the generation tokens).
 * The room rank j has left, or the pooled budget without attention
 * DP. */
static int64_t rank_room(const struct serve_inst *in, const int64_t *bin,
			 int64_t budget, int64_t *j)
{
	int64_t r;

	*j = -1;
	if (in->adp <= 1 || in->adp > ADP_MAX_BINS)
		return budget;
	for (r = 0; r < in->adp; r++)
		if (*j < 0 || bin[r] > bin[*j])
			*j = r;
	return bin[*j] < budget ? bin[*j] : budget;
}

/*
 * TensorRT-LLM's attention-DP balance (attention_dp_config enable_balance;
 * PyExecutor._balance_adp_requests, tensorrt_llm/_torch/pyexecutor/
 * py_executor.py, the same in the later scheduler's balance_adp_requests;
 * defaults llmapi/llm_args.py AttentionDpConfig: off, timeout_iters 50,
 * batching_wait_iters 10). After every rank's schedulers ran, the ranks
 * all-gather their scheduled context and generation counts; all ranks
 * then drop their context requests this iteration unless (a) every rank
 * has fewer than max_batch_size generation requests and a context
 * request (the wait count is reset; with every rank generating, the
 * contexts are still held batching_wait_iters times in a row), or (b)
 * the wait count, raised on every other iteration (with or without
 * contexts anywhere), reaches timeout_iters, or some rank generates
 * nothing (both reset it). Whether rank j would schedule a context here:
 * its first prompt not in a step fits its token budget (bin[j], within
 * the pooled budget; chunked: any room). 1: hold the contexts.
 */
static int adp_hold(const struct serve *s, struct serve_inst *in,
		    const int64_t *gen_r, const int64_t *bin, int64_t budget,
		    int64_t k)
{
	const struct engine_spec *e = s->job->serving.engine;
	int64_t per = in->max_seqs / in->adp, i, j;
	char ctx[ADP_MAX_BINS], seen[ADP_MAX_BINS];
	int all_free = 1, all_ctx = 1, all_gen = 1;

	for (j = 0; j < in->adp; j++)
		ctx[j] = seen[j] = 0;
	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *r = &s->req[in->running[i]];
		int64_t room, need = r->prompt - r->computed;

		if (serve_req_decoding(r) || r->in_step || seen[r->adp_rank])
			continue;
		j = r->adp_rank;
		seen[j] = 1;
		room = bin[j] < budget ? bin[j] : budget;
		ctx[j] = need <= room || (in->chunked && room > 0);
	}
	for (j = 0; j < in->adp; j++) {
		all_free &= gen_r[j] / k < per;
		all_ctx &= ctx[j];
		all_gen &= gen_r[j] > 0;
	}
	if (all_free && all_ctx) {
		in->adp_wait_iters = 0;
		if (!all_gen)
			return 0;
		if (in->adp_batch_iters < e->adp_batching_wait_iters) {
			in->adp_batch_iters++;
			return 1;
		}
		in->adp_batch_iters = 0;
		return 0;
	}
	in->adp_wait_iters++;
	if (in->adp_wait_iters >= e->adp_timeout_iters || !all_gen) {
		in->adp_wait_iters = 0;
		return 0;
	}
	return 1;
}

int64_t serve_sched_trtllm(struct serve *s, struct serve_inst *in,
			    double now)
{
	int64_t budget = in->max_tokens, n = 0, i, k = 1 + serve_spec_k(s), q;
	int64_t bin[ADP_MAX_BINS], gen_r[ADP_MAX_BINS], gen = 0, j, room;
	char shut[ADP_MAX_BINS];
	int ranked = in->adp > 1 && in->adp <= ADP_MAX_BINS;

	if (in->adp_used) {	/* per-rank admission */
		if (adp_fetch(s, in) != 0 || adp_admit(s, in) != 0)
			return -1;
	} else {
		if (trtllm_admit(s, in, now) != 0)
			return -1;
		if (ranked && adp_assign(s, in) != 0)
			return -1;
	}
	for (j = 0; ranked && j < in->adp; j++) {
		gen_r[j] = 0;
		shut[j] = 0;
	}
	for (i = 0; i < in->nrunning && budget > 0; i++) {	/* generation */
		int64_t id = in->running[i];
		struct serve_req *r = &s->req[id];

		if (!serve_req_decoding(r) || k > budget || r->in_step)
			continue;
		serve_make_room(s, in, id, r->computed + k, now);
		if (r->state != REQ_RUNNING)
			break;
		serve_mark(in, r, k, 0, now);
		budget -= k;
		gen += k;
		if (ranked)
			gen_r[r->adp_rank] += k;
		n++;
	}
	for (j = 0; in->adp > 1 && j < in->adp && j < ADP_MAX_BINS; j++)
		bin[j] = ranked ? in->max_tokens / in->adp - gen_r[j]
				: (in->max_tokens - gen) / in->adp;
	if (ranked && s->job->serving.engine->adp_balance &&
	    adp_hold(s, in, gen_r, bin, budget, k))
		return n;	/* every rank's contexts wait */
	for (i = 0; i < in->nrunning && budget > 0; i++) {
		int64_t id = in->running[i];
		struct serve_req *r = &s->req[id];
		int64_t need = r->prompt - r->computed;

		if (serve_req_decoding(r) || r->in_step)
			continue;
		if (ranked) {	/* its own rank's budget */
			j = r->adp_rank;
			if (shut[j])
				continue;
			room = bin[j] < budget ? bin[j] : budget;
		} else {
			room = rank_room(in, bin, budget, &j);
		}
		q = need;
		if (need > room) {
			if (ranked && (!in->chunked || room <= 0)) {
				shut[j] = 1;	/* that rank's FCFS stops */
				continue;
			}
			if (!in->chunked || room <= 0)
				break;
			q = room;
		}
		if (!serve_kv_grow(in, r, r->computed + q, now)) {
			if (ranked) {	/* its rank's pool is full: that
					 * rank's FCFS stops, not the others' */
				shut[j] = 1;
				continue;
			}
			break;
		}
		serve_mark(in, r, q, 1, now);
		budget -= q;
		if (j >= 0)
			bin[j] -= q;
		n++;
	}
	return n;
}
