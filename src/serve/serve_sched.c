/*
 * serve_sched.c - what each engine computes in its next step.
 *
 * A request holds KV pages for `computed` tokens (its prompt so far, then
 * the tokens it generated, fed back); a step gives it q new tokens and it
 * needs pages for computed + q. Pages come from the instance's pool
 * (infer_mem.h capacity / block_size). A prompt chunk that reaches the end
 * of the prompt samples a token, as does every decode step (speculative:
 * the verified draft tokens plus one). A request is done when it has
 * generated its output; its pages return to the pool.
 *
 * vLLM (v1/core/sched/scheduler.py Scheduler.schedule): one budget of
 * max_num_batched_tokens per step. Running requests first, in admission
 * order: a decode token (1 + k drafts when speculating), or the next chunk
 * of an unfinished prompt, cut to the budget. When the pool cannot hold a
 * request's new tokens the LAST running request is preempted (pages freed,
 * progress dropped: it recomputes its prompt and what it had generated,
 * and goes to the front of the waiting queue), until the request fits or
 * is itself the one preempted. Then, unless something was preempted this
 * step, waiting requests FCFS while running < max_num_seqs and budget
 * remains: its prompt less what the prefix cache holds, cut to the budget
 * (without chunked prefill a prompt that does not fit waits), if the pool
 * has its pages. Preemption therefore happens exactly when the pool is
 * full.
 *
 * SGLang (managers/scheduler.py get_next_batch_to_run, schedule_policy.py
 * PrefillAdder): a prefill batch whenever one can be formed, else a decode
 * step of all running requests. A prefill batch takes the request being
 * chunked first, then waiting requests FCFS within chunked_prefill_size
 * tokens while the pool, less the estimated remaining output of running
 * requests (new_token_ratio x their remaining tokens, each capped at
 * 4096, CLIP_MAX_NEW_TOKENS_ESTIMATION), holds the request's prompt and
 * its own estimate; a request cut by the budget becomes the chunked one.
 * The ratio starts at new_token_ratio, decays linearly to its floor over
 * new_token_ratio_decay_steps decode steps, and is reset when a decode
 * step cannot get its pages: requests are then retracted (the latest
 * admitted first, as retract_decode's sort by output length puts them)
 * back to the waiting queue until the step fits.
 *
 * vLLM V0 without chunked prefill (core/scheduler.py _schedule_default):
 * waiting requests FCFS, whole prompts within max_num_batched_tokens and
 * max_num_seqs, while their pages leave admit_watermark of the pool free,
 * make a prefill-only step; when none can be admitted, a decode step of
 * every running request, preempting the last running ones (recompute)
 * when a page is missing. With multi-step scheduling (num_scheduler_steps
 * = multi_step > 1) a decode step opens a window of multi_step decode
 * steps of the same batch: LLMEngine.step skips the scheduler while the
 * cached batch has steps left ("the scheduler is only called again when
 * the current batch has completed", _has_remaining_steps, which asserts
 * every group has the same remaining steps), so no prompt is admitted
 * inside a window, and a request that reaches max_tokens inside one keeps
 * computing to its end: the multi-step output processor truncates the
 * tokens past max_tokens (output_processor/multi_step.py
 * _process_seq_outputs), and LLMEngine.step returns the window's outputs
 * at its last step (vllm-project/vllm@1473f741 engine/llm_engine.py,
 * @0e32744b engine/output_processor/multi_step.py) [D]. Its pages are
 * reserved at the window's start (num_lookahead_slots = multi_step - 1,
 * SchedulerConfig). Such a request is a tail (tail 2) that finishes and
 * frees its pages when the window ends. The window is kept with one step
 * in flight (pp 1); vLLM's virtual engines (pp > 1) each keep their own,
 * not modelled.
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

/* SGLang's cap on one request's estimated remaining output
 * (schedule_policy.py CLIP_MAX_NEW_TOKENS_ESTIMATION). */
#define SGLANG_CLIP_NEW_TOKENS 4096

/* ---- queues and lists ---- */

static int rq_grow(struct req_queue *q)
{
	int64_t cap = q->cap ? 2 * q->cap : 64, i;
	int64_t *v = mem_alloc((size_t)cap * sizeof(*v));

	if (!v)
		return -1;
	for (i = 0; i < q->n; i++)
		v[i] = q->v[(q->head + i) % q->cap];
	mem_free(q->v);
	q->v = v;
	q->cap = cap;
	q->head = 0;
	return 0;
}

int rq_push_back(struct req_queue *q, int64_t id)
{
	if (q->n == q->cap && rq_grow(q) != 0)
		return -1;
	q->v[(q->head + q->n) % q->cap] = id;
	q->n++;
	return 0;
}

int rq_push_front(struct req_queue *q, int64_t id)
{
	if (q->n == q->cap && rq_grow(q) != 0)
		return -1;
	q->head = (q->head + q->cap - 1) % q->cap;
	q->v[q->head] = id;
	q->n++;
	return 0;
}

int64_t rq_front(const struct req_queue *q)
{
	return q->n ? q->v[q->head] : -1;
}

int64_t rq_at(const struct req_queue *q, int64_t i)
{
	return q->v[(q->head + i) % q->cap];
}

void rq_pop_front(struct req_queue *q)
{
	if (q->n) {
		q->head = (q->head + 1) % q->cap;
		q->n--;
	}
}

void rq_release(struct req_queue *q)
{
	mem_free(q->v);
	memset(q, 0, sizeof(*q));
}

int serve_running_add(struct serve_inst *in, int64_t id)
{
	if (in->nrunning == in->cap_running) {
		int64_t cap = in->cap_running ? 2 * in->cap_running : 64;
		int64_t *v = mem_realloc(in->running, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		in->running = v;
		in->cap_running = cap;
	}
	in->running[in->nrunning++] = id;
	return 0;
}

void serve_running_remove(struct serve_inst *in, int64_t id)
{
	int64_t i;

	for (i = 0; i < in->nrunning; i++)
		if (in->running[i] == id) {
			memmove(&in->running[i], &in->running[i + 1],
				(size_t)(in->nrunning - i - 1) *
				sizeof(*in->running));
			in->nrunning--;
			return;
		}
}

/* ---- KV pages ---- */

void serve_kv_account(struct serve_inst *in, double now)
{
	double used = (double)(in->pages - in->free_pages);

	if (now > in->last_change_s)
		in->kv_area += used * (now - in->last_change_s);
	in->last_change_s = now;
	if (in->pages > 0 && used / (double)in->pages > in->peak_frac)
		in->peak_frac = used / (double)in->pages;
}

/* Pages for r to hold `tokens`; 0 when the pool cannot give them. */
static int kv_grow(struct serve_inst *in, struct serve_req *r, int64_t tokens,
		   double now)
{
	int64_t need = kv_pages_for(in, tokens) - r->pages;

	if (need <= 0)
		return 1;
	if (need > in->free_pages)
		return 0;
	if (in->adp_used && r->adp_rank >= 0 &&	/* its rank's own pool */
	    in->adp_used[r->adp_rank] + need > in->rank_pages)
		return 0;
	serve_kv_account(in, now);
	in->free_pages -= need;
	r->pages += need;
	if (in->adp_used && r->adp_rank >= 0)
		in->adp_used[r->adp_rank] += need;
	serve_kv_account(in, now);
	return 1;
}

void serve_kv_free(struct serve_inst *in, struct serve_req *r, double now)
{
	serve_kv_account(in, now);
	in->free_pages += r->pages;
	if (in->adp_used && r->adp_rank >= 0)
		in->adp_used[r->adp_rank] -= r->pages;
	r->pages = 0;
	r->reserved = 0;
}

/* ---- common pieces ---- */

static int spec_k(const struct serve *s)
{
	const struct speculative_spec *sp = &s->job->serving.speculative;

	return sp->method == SPEC_NONE ? 0 : (int)sp->tokens;
}

/*
 * vLLM V1's lookahead slots: with an EAGLE-style or draft-model proposer
 * (use_eagle: eagle, eagle3, mtp; uses_draft_model) the scheduler sets
 * num_lookahead_tokens = num_speculative_tokens and allocate_slots gives
 * a running request num_computed + num_new + num_lookahead slots, capped
 * at max_model_len (the drafter writes the KV of the next step's k drafts
 * into them); a waiting request with nothing computed gets none
 * (effective_lookahead_tokens 0). vllm-project/vllm@00024d31
 * v1/core/sched/scheduler.py Scheduler.__init__ and schedule, and
 * @003df296 v1/core/kv_cache_manager.py allocate_slots [D]. So a
 * decoding request verifying k drafts holds computed + 1 + 2k. SGLang,
 * TensorRT-LLM and vLLM V0 reserve no lookahead here [?].
 */
int64_t serve_kv_slots(const struct serve *s, int64_t tokens)
{
	int64_t la = s->job->serving.engine->scheduler == ENGINE_SCHED_VLLM ?
		     spec_k(s) : 0, ctx = serve_context_len(s->job);

	if (la == 0)
		return tokens;
	if (ctx > 0 && tokens + la > ctx)
		return tokens > ctx ? tokens : ctx;
	return tokens + la;
}

static int decoding(const struct serve_req *r)
{
	return r->computed >= r->prompt;
}

static void mark(struct serve_inst *in, struct serve_req *r, int64_t q,
		 int prefill, double now)
{
	r->in_step = in->tag;
	r->step_q = q;
	r->step_prefill = prefill;
	if (r->first_scheduled_s < 0)
		r->first_scheduled_s = now;
}

/* Request id joins the requests fetched onto their rank and not yet
 * admitted (per-rank admission, adp_fetch): at the back, or at the
 * front (evicted). 0 or -1 (out of memory). */
static int pend_add(struct serve_inst *in, int64_t id, int front)
{
	if (in->npend == in->cap_pend) {
		int64_t cap = in->cap_pend ? 2 * in->cap_pend : 64;
		int64_t *v = mem_realloc(in->pend, (size_t)cap * sizeof(*v));

		if (!v)
			return -1;
		in->pend = v;
		in->cap_pend = cap;
	}
	if (front) {
		memmove(&in->pend[1], &in->pend[0],
			(size_t)in->npend * sizeof(*in->pend));
		in->pend[0] = id;
	} else {
		in->pend[in->npend] = id;
	}
	in->npend++;
	return 0;
}

/* Drop r's progress and put it back at the front of the waiting queue
 * (per-rank admission: of its rank's fetched requests, where
 * TensorRT-LLM keeps a paused request). */
static void preempt(struct serve *s, struct serve_inst *in, int64_t id,
		    double now)
{
	struct serve_req *r = &s->req[id];

	serve_kv_free(in, r, now);
	serve_running_remove(in, id);
	/* a multi-step tail lives inside a window, whose pages were
	 * reserved at its start: never a victim */
	assert(r->tail != 2);
	if (r->tail) {	/* done already: only its extra step goes */
		r->state = REQ_DONE;
		return;
	}
	r->prompt = r->input + r->generated;
	r->computed = 0;
	r->in_step = 0;
	r->state = REQ_WAITING;
	r->preempted++;
	in->preemptions++;
	if (in->adp_used ? pend_add(in, id, 1) != 0 :
	    rq_push_front(&in->waiting, id) != 0)
		s->failed = 1;
}

/* The request to preempt for request id: the last running one not in a
 * step still in flight (with one step in flight at a time, the last
 * running one); with per-rank pools the last such one on id's rank,
 * else id itself. */
static int64_t victim_of(const struct serve *s, const struct serve_inst *in,
			 int64_t id)
{
	int rank = in->adp_used ? s->req[id].adp_rank : -1;
	int64_t i;

	if (rank >= 0) {
		for (i = in->nrunning - 1; i >= 0; i--) {
			const struct serve_req *q = &s->req[in->running[i]];

			if (!q->in_step && q->adp_rank == rank)
				return in->running[i];
		}
		return id;
	}
	for (i = in->nrunning - 1; i > 0; i--)
		if (!s->req[in->running[i]].in_step)
			return in->running[i];
	return in->running[0];
}

/* Grow running request id's KV cache to tokens, preempting the
 * scheduler's victims from the back of the running list, id itself last:
 * how many it preempted (id still runs when its state is REQ_RUNNING). */
static int make_room(struct serve *s, struct serve_inst *in, int64_t id,
		     int64_t tokens, double now)
{
	struct serve_req *r = &s->req[id];
	int n = 0;

	while (!kv_grow(in, r, tokens, now)) {
		int64_t victim = victim_of(s, in, id);

		preempt(s, in, victim, now);
		n++;
		if (victim == id)
			break;
	}
	return n;
}

/* First admission of waiting request r: the prefix cache's tokens count
 * as computed. The tokens it starts from. */
static int64_t start_of(const struct serve_req *r)
{
	return r->computed > r->cached ? r->computed : r->cached;
}

static int admit(struct serve *s, struct serve_inst *in, int64_t id)
{
	struct serve_req *r = &s->req[id];

	rq_pop_front(&in->waiting);
	r->state = REQ_RUNNING;
	r->computed = start_of(r);
	if (serve_running_add(in, id) != 0) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

/* ---- the batch of the marked requests ---- */

/* Whether request r has a rank of instance in (TensorRT-LLM under
 * attention DP, adp_assign). */
static int has_rank(const struct serve *s, const struct serve_inst *in,
		    const struct serve_req *r)
{
	return r->adp_rank >= 0 && r->adp_inst == (int)(in - s->inst);
}

/* The busiest attention-DP rank of the step being formed, or -1 when the
 * step's requests are not all on tracked ranks. The ranks run each layer
 * in lockstep (the MoE all-gather / reduce-scatter), so the step takes
 * the time of the rank with the most work before them: the rank with the
 * most prompt tokens when any rank has a prompt chunk (as infer_adp_rank
 * places them), else the one whose decodes read the most KV tokens (the
 * ranks' token-wise layers differ by a row or two: count-balanced). */
static int busiest_rank(const struct serve *s, struct serve_inst *in)
{
	double pt[ADP_MAX_BINS], kv[ADP_MAX_BINS], tk[ADP_MAX_BINS];
	double sum = 0, most = 0;
	int64_t i, r;
	int best = 0;

	if (in->adp <= 1 || in->adp > ADP_MAX_BINS ||
	    s->job->serving.engine->scheduler != ENGINE_SCHED_TRTLLM)
		return -1;
	for (r = 0; r < in->adp; r++)
		pt[r] = kv[r] = tk[r] = 0;
	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *q = &s->req[in->running[i]];

		if (q->in_step != in->tag)
			continue;
		if (!has_rank(s, in, q))
			return -1;
		if (q->step_prefill)
			pt[q->adp_rank] += (double)q->step_q;
		else
			kv[q->adp_rank] += (double)(q->computed + q->step_q);
		tk[q->adp_rank] += (double)q->step_q;
	}
	for (r = 1; r < in->adp; r++)
		if (pt[r] > pt[best] ||
		    (pt[r] == pt[best] && kv[r] > kv[best]))
			best = (int)r;
	/* the step's balance ratio, mean / most tokens a rank (idle ranks
	 * count: they run the engine's dummy request) */
	for (r = 0; r < in->adp; r++) {
		sum += tk[r];
		most = tk[r] > most ? tk[r] : most;
	}
	if (most > 0) {
		in->adp_balance_sum += sum / (double)in->adp / most;
		in->adp_steps++;
	}
	return best;
}

static void batch_of(struct serve *s, struct serve_inst *in,
		     struct infer_batch *b)
{
	/* decodes by width (plain, speculative) and, ranked, by whether
	 * they are on the busiest rank (index 2 + width) */
	double dec_n[4] = {0, 0, 0, 0}, dec_ctx[4] = {0, 0, 0, 0}, q_spec;
	double extra_n = 0, extra_q = 0, extra_ctx = 0, extra_s = 0;
	double extra_mine = 0;
	int64_t i;
	int busiest = busiest_rank(s, in), w, keep;

	memset(b, 0, sizeof(*b));
	b->ranked = busiest >= 0;
	keep = b->ranked ? 5 : 3;	/* groups left for the extra and decodes */
	q_spec = 1 + spec_k(s);
	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *r = &s->req[in->running[i]];
		double sampled, mine;

		if (r->in_step != in->tag)
			continue;
		mine = b->ranked && r->adp_rank == busiest ? 1 : 0;
		if (!r->step_prefill) {
			int sp = (r->step_q > 1) + (mine > 0 ? 2 : 0);

			dec_n[sp] += 1;
			dec_ctx[sp] += (double)r->computed;
			continue;
		}
		sampled = r->computed + r->step_q >= r->prompt ? 1 : 0;
		if (b->n < INFER_MAX_GROUPS - keep) {
			b->g[b->n++] = (struct infer_seqs){1, (double)r->step_q,
				(double)r->computed, 1, sampled, 0, mine};
		} else {	/* many chunks: one more group of their means */
			extra_n += 1;
			extra_q += (double)r->step_q;
			extra_ctx += (double)r->computed;
			extra_s += sampled;
			extra_mine += mine;
		}
	}
	if (extra_n > 0)
		b->g[b->n++] = (struct infer_seqs){extra_n, extra_q / extra_n,
			extra_ctx / extra_n, 1, extra_s / extra_n, 0,
			extra_mine};
	/* decode: one group per width (and, ranked, per side of the busiest
	 * rank), at the mean context (the KV read, sum count ctx, is exact) */
	for (w = 0; w < 4; w++) {
		double q = w % 2 ? q_spec : 1;

		if (dec_n[w] > 0)
			b->g[b->n++] = (struct infer_seqs){dec_n[w], q,
				dec_ctx[w] / dec_n[w], 0, q, 0,
				w >= 2 ? dec_n[w] : 0};
	}
}

/* ---- vLLM ---- */

static int64_t sched_vllm(struct serve *s, struct serve_inst *in, double now)
{
	int64_t budget = in->max_tokens, n = 0, i, id, q, need;
	int preempted = 0;

	for (i = 0; i < in->nrunning && budget > 0; i++) {
		struct serve_req *r;

		id = in->running[i];
		r = &s->req[id];
		if (r->in_step)
			continue;	/* in a step still in flight (pipeline) */
		q = decoding(r) ? 1 + spec_k(s) : r->prompt - r->computed;
		if (q > budget) {
			if (decoding(r))
				continue;
			q = budget;
		}
		if (make_room(s, in, id, serve_kv_slots(s, r->computed + q),
			      now))
			preempted = 1;
		if (r->state != REQ_RUNNING)
			break;	/* it was the last one: nothing after it */
		mark(in, r, q, !decoding(r), now);
		budget -= q;
		n++;
	}
	if (preempted)
		return n;
	while (in->waiting.n > 0 && budget > 0 && in->nrunning < in->max_seqs) {
		struct serve_req *r;

		id = rq_front(&in->waiting);
		r = &s->req[id];
		need = r->prompt - start_of(r);
		if (!in->chunked && need > budget)
			break;
		q = need < budget ? need : budget;
		if (!kv_grow(in, r, start_of(r) + q, now))
			break;
		if (admit(s, in, id) != 0)
			return -1;
		mark(in, r, q, 1, now);
		budget -= q;
		n++;
	}
	return n;
}

/* ---- SGLang ---- */

/* Pages the running requests are estimated to still need. */
static double sglang_reserve(const struct serve *s,
			     const struct serve_inst *in)
{
	double tokens = 0;
	int64_t i;

	for (i = 0; i < in->nrunning; i++) {
		const struct serve_req *r = &s->req[in->running[i]];
		double left = (double)(r->output - r->generated);

		tokens += fmin(left, SGLANG_CLIP_NEW_TOKENS) *
			  in->new_token_ratio;
	}
	return tokens / (double)in->block;
}

static int64_t sglang_prefill(struct serve *s, struct serve_inst *in,
			      double now)
{
	int64_t budget = in->max_tokens, n = 0, id, q, need;
	double avail = (double)in->free_pages - sglang_reserve(s, in);
	struct serve_req *r;

	if (in->chunked_req >= 0 && s->req[in->chunked_req].in_step)
		return 0;	/* its previous chunk is still in flight */
	if (in->chunked_req >= 0) {
		r = &s->req[in->chunked_req];
		q = r->prompt - r->computed < budget ? r->prompt - r->computed
						     : budget;
		if (!kv_grow(in, r, r->computed + q, now))
			return 0;
		mark(in, r, q, 1, now);
		budget -= q;
		n++;
		in->chunked_req = r->computed + q < r->prompt ? in->chunked_req
							      : -1;
	}
	while (in->chunked_req < 0 && in->waiting.n > 0 && budget > 0 &&
	       in->nrunning < in->max_seqs) {
		double est;

		id = rq_front(&in->waiting);
		r = &s->req[id];
		need = r->prompt - start_of(r);
		est = (double)need + fmin((double)(r->output - r->generated),
					  SGLANG_CLIP_NEW_TOKENS) *
					  in->new_token_ratio;
		if (est / (double)in->block > avail && in->nrunning > 0)
			break;
		q = need < budget ? need : budget;
		if (q < need && !in->chunked && n > 0)
			break;
		if (!in->chunked)
			q = need;
		if (!kv_grow(in, r, start_of(r) + q, now))
			break;
		if (admit(s, in, id) != 0)
			return -1;
		mark(in, r, q, 1, now);
		avail -= est / (double)in->block;
		budget -= q;
		n++;
		if (q < need)
			in->chunked_req = id;
	}
	return n;
}

static int64_t sglang_decode(struct serve *s, struct serve_inst *in,
			     double now)
{
	const struct engine_spec *e = s->job->serving.engine;
	double floor_ratio = e->new_token_ratio * e->min_new_token_ratio_factor;
	double decay = e->new_token_ratio_decay_steps > 0 ?
		       (e->new_token_ratio - floor_ratio) /
		       (double)e->new_token_ratio_decay_steps : 0;
	int64_t i, n = 0, k = 1 + spec_k(s);

	for (i = 0; i < in->nrunning; i++) {
		int64_t id = in->running[i];
		struct serve_req *r = &s->req[id];

		if (!decoding(r) || id == in->chunked_req || r->in_step)
			continue;
		if (make_room(s, in, id, r->computed + k, now))
			in->new_token_ratio = e->new_token_ratio;
		if (r->state != REQ_RUNNING)
			break;
		mark(in, r, k, 0, now);
		n++;
	}
	in->new_token_ratio = fmax(floor_ratio, in->new_token_ratio - decay);
	return n;
}

static int64_t sched_sglang(struct serve *s, struct serve_inst *in,
			    double now)
{
	int64_t n = 0;

	if (in->waiting.n > 0 || in->chunked_req >= 0)
		n = sglang_prefill(s, in, now);
	if (n != 0)
		return n;
	return sglang_decode(s, in, now);
}

/* ---- vLLM V0 ---- */

static int64_t v0_prefill(struct serve *s, struct serve_inst *in, double now)
{
	double keep = s->job->serving.engine->admit_watermark *
		      (double)in->pages;
	int64_t budget = in->max_tokens, n = 0;

	while (in->waiting.n > 0 && in->nrunning < in->max_seqs) {
		int64_t id = rq_front(&in->waiting);
		struct serve_req *r = &s->req[id];
		int64_t need = r->prompt - start_of(r);

		if (need > budget && n > 0)
			break;
		if ((double)(in->free_pages -
			     kv_pages_for(in, start_of(r) + need)) < keep)
			break;
		if (!kv_grow(in, r, start_of(r) + need, now))
			break;
		if (admit(s, in, id) != 0)
			return -1;
		mark(in, r, need, 1, now);
		budget -= need;
		n++;
	}
	return n;
}

/* Decode steps in a V0 multi-step window (see the top): 1 without one. */
static int64_t v0_window(const struct serve *s, const struct serve_inst *in)
{
	int64_t ms = s->job->serving.engine->multi_step;

	return in->pp == 1 && ms > 1 ? ms : 1;
}

static int64_t sched_vllm_v0(struct serve *s, struct serve_inst *in,
			     double now)
{
	int64_t i, n = 0, k = 1 + spec_k(s), w = v0_window(s, in);
	/* a window's first step reserves its lookahead slots */
	int64_t ahead = in->window_left > 0 ? k : k + w - 1;

	if (in->window_left == 0)
		n = v0_prefill(s, in, now);
	if (n != 0)
		return n;
	for (i = 0; i < in->nrunning; i++) {
		int64_t id = in->running[i];
		struct serve_req *r = &s->req[id];

		if (r->in_step)
			continue;
		make_room(s, in, id, r->computed + ahead, now);
		if (r->state != REQ_RUNNING)
			break;
		mark(in, r, k, 0, now);
		n++;
	}
	if (n == 0)
		in->window_left = 0;
	else
		in->window_left = in->window_left > 0 ? in->window_left - 1
						      : w - 1;
	return n;
}

/* ---- TensorRT-LLM ---- */

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
		if (!no_evict &&
		    kv_pages_for(in, r->prompt - start_of(r)) > in->free_pages)
			break;
		if (admit(s, in, id) != 0)
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

		if (!has_rank(s, in, q)) {
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

		if (!has_rank(s, in, q))
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
		if (pend_add(in, v[i].id, 0) != 0) {
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
				  kv_pages_for(in, q->prompt - start_of(q));
		if (!shut[j] && held[j] + need > in->rank_pages)
			shut[j] = 1;
		if (shut[j]) {
			in->pend[w++] = id;	/* it waits on its rank */
			continue;
		}
		q->state = REQ_RUNNING;
		q->computed = start_of(q);
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

		if (decoding(r) || r->in_step || seen[r->adp_rank])
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

static int64_t sched_trtllm(struct serve *s, struct serve_inst *in,
			    double now)
{
	int64_t budget = in->max_tokens, n = 0, i, k = 1 + spec_k(s), q;
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

		if (!decoding(r) || k > budget || r->in_step)
			continue;
		make_room(s, in, id, r->computed + k, now);
		if (r->state != REQ_RUNNING)
			break;
		mark(in, r, k, 0, now);
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

		if (decoding(r) || r->in_step)
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
		if (!kv_grow(in, r, r->computed + q, now))
			break;
		mark(in, r, q, 1, now);
		budget -= q;
		if (j >= 0)
			bin[j] -= q;
		n++;
	}
	return n;
}

/* A decode instance (disaggregated): requests whose KV has arrived join
 * the running ones while the pool has their pages and room is left. */
static void admit_transferred(struct serve *s, struct serve_inst *in,
			      double now)
{
	while (in->waiting.n > 0 && in->nrunning < in->max_seqs) {
		int64_t id = rq_front(&in->waiting);
		struct serve_req *r = &s->req[id];

		if (r->computed < r->prompt)	/* preempted: recompute */
			return;
		if (!kv_grow(in, r, r->computed + 1 + spec_k(s), now))
			return;
		rq_pop_front(&in->waiting);
		r->state = REQ_RUNNING;
		if (serve_running_add(in, id) != 0) {
			s->failed = 1;
			return;
		}
	}
}

int64_t serve_schedule(struct serve *s, struct serve_inst *in, double now,
		       struct infer_batch *b)
{
	int64_t n;

	if (in->role == ROLE_DECODE)
		admit_transferred(s, in, now);
	switch (s->job->serving.engine->scheduler) {
	case ENGINE_SCHED_SGLANG:
		n = sched_sglang(s, in, now);
		break;
	case ENGINE_SCHED_TRTLLM:
		n = sched_trtllm(s, in, now);
		break;
	case ENGINE_SCHED_VLLM_V0:
		n = sched_vllm_v0(s, in, now);
		break;
	default:
		n = sched_vllm(s, in, now);
		break;
	}
	if (n > 0)
		batch_of(s, in, b);
	return n < 0 ? 0 : n;
}
