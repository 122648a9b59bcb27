/*
 * serve_queue.c - what the engines' schedulers share (serve_sched.c,
 * serve_trtllm.c): the request queues and running lists, the KV pages a
 * request holds, preemption, and admission.
 */
#include "serve_impl.h"

#include <assert.h>
#include <string.h>

#include "base/mem.h"
#include "config/spec_job.h"

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

/* Tokens of a kept prefix that `pages` pages still hold: the most whole
 * pages t with kv_pages_at(t, t) <= pages (nondecreasing in t). */
static int64_t kept_tokens(const struct serve_inst *in, int64_t pages,
			   int64_t tokens)
{
	int64_t lo = 0, hi = tokens / in->block, mid;

	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		if (kv_pages_at(in, mid * in->block, mid * in->block) <= pages)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo * in->block;
}

/* r takes `need` free pages (keep_preempted): its own kept pages first,
 * then the pages no waiting request keeps, then it evicts kept pages,
 * the longest-waiting preempted request's first (vLLM V1's free block
 * queue hands out its head, and a preempted request's blocks were
 * appended to its tail, block_pool.py free_blocks / get_new_blocks),
 * each request's last pages first (single_type_kv_cache_manager.py
 * free: "Free blocks in reverse order so that the tail blocks are freed
 * first"); what is left of a request's prefix is its tokens before the
 * first evicted page. */
static void kv_reclaim(struct serve_inst *in, struct serve_req *r,
		       int64_t need)
{
	int64_t own = r->kept_pages, loose, evict, i;

	if (in->cached_free <= 0)
		return;
	in->cached_free -= own;
	r->kept_pages = 0;
	loose = in->free_pages - own - in->cached_free;
	evict = need - own - loose;
	for (i = in->waiting.n - 1; i >= 0 && evict > 0; i--) {
		struct serve_req *q = &in->reqs[rq_at(&in->waiting, i)];
		int64_t take;

		if (q == r || q->kept_pages <= 0)
			continue;
		take = q->kept_pages < evict ? q->kept_pages : evict;
		q->kept_pages -= take;
		in->cached_free -= take;
		evict -= take;
		q->kept = kept_tokens(in, q->kept_pages, q->kept);
	}
}

/* Pages for r to hold `tokens`; 0 when the pool cannot give them. */
int serve_kv_grow(struct serve_inst *in, struct serve_req *r, int64_t tokens,
		   double now)
{
	/* a waiting request's window starts from the tokens it is admitted
	 * with (prefix-cache hits, kept pages): vLLM skips the window's
	 * earlier blocks with num_computed_tokens counting them; for a
	 * running request serve_req_start is its computed tokens */
	int64_t need = kv_pages_at(in, serve_req_start(r), tokens) - r->pages;

	/* need < 0: pages its window left behind go back to the pool */
	if (need == 0 || (need < 0 && in->window_groups == 0))
		return 1;
	if (need > in->free_pages)
		return 0;
	if (need > 0 && in->adp_used && r->adp_rank >= 0 &&
	    in->adp_used[r->adp_rank] + need > in->rank_pages)
		return 0;	/* its rank's own pool */
	serve_kv_account(in, now);
	if (need > 0 && in->keep_preempted)
		kv_reclaim(in, r, need);
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

int serve_spec_k(const struct serve *s)
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
		     serve_spec_k(s) : 0, ctx = serve_context_len(s->job);

	if (la == 0)
		return tokens;
	if (ctx > 0 && tokens + la > ctx)
		return tokens > ctx ? tokens : ctx;
	return tokens + la;
}


void serve_mark(struct serve_inst *in, struct serve_req *r, int64_t q,
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
int serve_pend_add(struct serve_inst *in, int64_t id, int front)
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
 * TensorRT-LLM keeps a paused request). vLLM V1 with prefix caching
 * (keep_preempted) frees its blocks with their hashes: they stay in the
 * free queue, cached, until another request's allocation evicts them
 * (block_pool.py free_blocks), and its readmission finds its own whole
 * pages again, at most all its tokens but one (scheduler.py schedule:
 * preempted_req.num_computed_tokens = 0, then get_computed_blocks,
 * kv_cache_manager.py max_cache_hit_length = num_tokens - 1): r keeps
 * its computed tokens' whole pages (kv_reclaim evicts them). */
static void preempt(struct serve *s, struct serve_inst *in, int64_t id,
		    double now)
{
	struct serve_req *r = &s->req[id];
	int64_t keep = 0, keep_pages = 0;

	if (in->keep_preempted && !r->tail) {
		int64_t most = r->input + r->generated - 1;

		keep = (r->computed < most ? r->computed : most) /
		       in->block * in->block;
		keep_pages = kv_pages_at(in, keep, keep);
		if (keep_pages > r->pages)
			keep = kept_tokens(in, keep_pages = r->pages, keep);
	}
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
	r->kept = keep;
	r->kept_pages = keep_pages;
	in->cached_free += keep_pages;
	r->in_step = 0;
	r->state = REQ_WAITING;
	r->preempted++;
	in->preemptions++;
	if (in->adp_used ? serve_pend_add(in, id, 1) != 0 :
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
int serve_make_room(struct serve *s, struct serve_inst *in, int64_t id,
		     int64_t tokens, double now)
{
	struct serve_req *r = &s->req[id];
	int n = 0;

	while (!serve_kv_grow(in, r, tokens, now)) {
		int64_t victim = victim_of(s, in, id);

		preempt(s, in, victim, now);
		n++;
		if (victim == id)
			break;
	}
	return n;
}


void serve_seat(struct serve_inst *in, struct serve_req *r)
{
	r->adp_seat = in->adp > 1 ? 1 + (int)(in->adp_arrivals++ % in->adp)
				  : 0;
}

int serve_admit(struct serve *s, struct serve_inst *in, int64_t id)
{
	struct serve_req *r = &s->req[id];

	rq_pop_front(&in->waiting);
	r->state = REQ_RUNNING;
	r->computed = serve_req_start(r);
	r->kept = 0;	/* its kept pages are its own again (kv_reclaim) */
	if (serve_running_add(in, id) != 0) {
		s->failed = 1;
		return -1;
	}
	return 0;
}

/* Whether request r has a rank of instance in (TensorRT-LLM under
 * attention DP, adp_assign). */
int serve_has_rank(const struct serve *s, const struct serve_inst *in,
		    const struct serve_req *r)
{
	return r->adp_rank >= 0 && r->adp_inst == (int)(in - s->inst);
}
