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
 * TensorRT-LLM: serve_trtllm.c.
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

/* ---- the batch of the marked requests ---- */

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
		if (!serve_has_rank(s, in, q))
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
	q_spec = 1 + serve_spec_k(s);
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
		q = serve_req_decoding(r) ? 1 + serve_spec_k(s) : r->prompt - r->computed;
		if (q > budget) {
			if (serve_req_decoding(r))
				continue;
			q = budget;
		}
		if (serve_make_room(s, in, id, serve_kv_slots(s, r->computed + q),
			      now))
			preempted = 1;
		if (r->state != REQ_RUNNING)
			break;	/* it was the last one: nothing after it */
		serve_mark(in, r, q, !serve_req_decoding(r), now);
		budget -= q;
		n++;
	}
	if (preempted)
		return n;
	while (in->waiting.n > 0 && budget > 0 && in->nrunning < in->max_seqs) {
		struct serve_req *r;

		id = rq_front(&in->waiting);
		r = &s->req[id];
		need = r->prompt - serve_req_start(r);
		if (!in->chunked && need > budget)
			break;
		q = need < budget ? need : budget;
		if (!serve_kv_grow(in, r, serve_req_start(r) + q, now))
			break;
		if (serve_admit(s, in, id) != 0)
			return -1;
		serve_mark(in, r, q, 1, now);
		budget -= q;
		n++;
	}
	return n;
}

/* ---- SGLang ---- */

/* Tokens SGLang's PrefillAdder holds for request r: its whole prompt
 * and its output left, clipped, at the new-token ratio (see
 * sglang_prefill). */
static double sglang_est(const struct serve_inst *in,
			 const struct serve_req *r)
{
	return (double)r->prompt + fmin((double)(r->output - r->generated),
					SGLANG_CLIP_NEW_TOKENS) *
				   in->new_token_ratio;
}

/* Admit waiting request id for a prompt chunk of at most budget of its
 * need tokens left, if the pool's estimate (avail pages, sglang_est) and
 * the KV cache take it; without chunked prefill it takes its whole need,
 * and a need over the budget only as the first of a batch (lead). 0 with
 * *took set, 1 when admission stops here, -1 out of memory. */
static int sglang_take(struct serve *s, struct serve_inst *in, int64_t id,
		       int64_t need, int64_t budget, int lead, double *avail,
		       double now, int64_t *took)
{
	struct serve_req *r = &s->req[id];
	double est = sglang_est(in, r);
	int64_t q;

	if (est / (double)in->block > *avail && in->nrunning > 0)
		return 1;
	q = need < budget ? need : budget;
	if (q < need && !in->chunked && !lead)
		return 1;
	if (!in->chunked)
		q = need;
	if (!serve_kv_grow(in, r, serve_req_start(r) + q, now))
		return 1;
	if (serve_admit(s, in, id) != 0)
		return -1;
	serve_mark(in, r, q, 1, now);
	*avail -= est / (double)in->block;
	*took = q;
	return 0;
}

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
		if (!serve_kv_grow(in, r, r->computed + q, now))
			return 0;
		serve_mark(in, r, q, 1, now);
		budget -= q;
		n++;
		in->chunked_req = r->computed + q < r->prompt ? in->chunked_req
							      : -1;
	}
	while (in->chunked_req < 0 && in->waiting.n > 0 && budget > 0 &&
	       in->nrunning < in->max_seqs) {
		int rc;

		id = rq_front(&in->waiting);
		r = &s->req[id];
		need = r->prompt - serve_req_start(r);
		/* the whole prompt: SGLang's add_one_req tests the uncached
		 * tokens plus the output estimate against rem_total_tokens
		 * again after _lock_node takes the matched prefix out of the
		 * evictable tokens, and a request here holds its cached
		 * prefix's pages (serve_kv_grow in sglang_take) */
		rc = sglang_take(s, in, id, need, budget, n == 0, &avail, now,
				 &q);
		if (rc < 0)
			return -1;
		if (rc > 0)
			break;
		budget -= q;
		n++;
		if (q < need)
			in->chunked_req = id;
	}
	return n;
}

/*
 * SGLang under attention DP (--enable-dp-attention with --dp-size N > 1;
 * without --dp-size, dp_size stays 1 and server_args.py
 * _handle_data_parallelism turns attention DP off): a scheduler a rank,
 * each with its own waiting requests (DataParallelController sends each
 * new request to a rank, round_robin by default), its own chunked request
 * and chunked_prefill_size // dp_size prompt tokens a step ("DP attention
 * is enabled. The chunked prefill size is adjusted to ..."; server_args.py
 * _handle_data_parallelism, sgl-project/sglang 0.4.x - 0.5.x). So the
 * instance computes at most the engine's chunked_prefill_size prompt
 * tokens a step, spread over the ranks, and a long prompt runs in
 * chunks of chunked_prefill_size / N on its rank beside the other ranks'
 * (in->max_tokens holds N budgets of the engine's value: N x N per-rank
 * shares). Here a request's rank is its arrival index at the instance
 * mod N (round robin: adp_seat); each rank first continues its chunked request, then requests
 * are admitted first come first served over the instance's queue while
 * the front request's rank has budget left and no chunked request (the
 * ranks' own queues are not kept apart: with requests alike every rank
 * fills the same way), each whole or cut to its rank's budget left.
 */
static int64_t sglang_decode(struct serve *s, struct serve_inst *in,
			     double now, const unsigned char *prefilling);

/* Request id's rank at in: where its instance's round robin sent it
 * (dispatch, serve_sim.c), or its index mod N where none did. */
static int64_t sglang_rank(const struct serve *s,
			   const struct serve_inst *in, int64_t id)
{
	int seat = s->req[id].adp_seat;

	return seat > 0 ? seat - 1 : id % in->adp;
}

static int64_t sglang_prefill_adp(struct serve *s, struct serve_inst *in,
				  double now)
{
	int64_t adp = in->adp, share = in->max_tokens / (adp * adp);
	int64_t *left = in->adp_left, n = 0, id, q, need, k, d;
	unsigned char *busy = in->adp_busy;
	double avail = (double)in->free_pages - sglang_reserve(s, in);
	struct serve_req *r;

	if (share < 1)
		share = 1;
	memset(busy, 0, (size_t)adp);
	for (k = 0; k < adp; k++) {
		left[k] = share;
		id = in->adp_chunked[k];
		if (id < 0)
			continue;
		r = &s->req[id];
		if (r->state != REQ_RUNNING) {	/* retracted */
			in->adp_chunked[k] = -1;
			continue;
		}
		if (r->in_step) {	/* its previous chunk is in flight */
			left[k] = 0;
			continue;
		}
		q = r->prompt - r->computed < share ? r->prompt - r->computed
						    : share;
		if (!serve_kv_grow(in, r, r->computed + q, now)) {
			left[k] = 0;
			continue;
		}
		serve_mark(in, r, q, 1, now);
		left[k] -= q;
		busy[k] = 1;
		n++;
		if (r->computed + q >= r->prompt)
			in->adp_chunked[k] = -1;
	}
	while (in->waiting.n > 0 && in->nrunning < in->max_seqs) {
		int rc;

		id = rq_front(&in->waiting);
		r = &s->req[id];
		k = sglang_rank(s, in, id);
		if (in->adp_chunked[k] >= 0 || left[k] <= 0)
			break;
		need = r->prompt - serve_req_start(r);
		/* a prompt over the share leads its own rank's batch */
		rc = sglang_take(s, in, id, need, left[k], !busy[k], &avail,
				 now, &q);
		if (rc < 0)
			return -1;
		if (rc > 0)
			break;
		left[k] -= q;
		busy[k] = 1;
		n++;
		if (q < need)
			in->adp_chunked[k] = id;
	}
	if (n <= 0)
		return n;	/* no rank prefills: a decode step of all */
	/* the ranks that form no prefill batch decode in the same step
	 * (each rank's scheduler picks its own batch; the ranks meet in the
	 * MoE layers' gathers) */
	d = sglang_decode(s, in, now, busy);
	return d < 0 ? d : n + d;
}

static int64_t sglang_decode(struct serve *s, struct serve_inst *in,
			     double now, const unsigned char *prefilling)
{
	const struct engine_spec *e = s->job->serving.engine;
	double floor_ratio = in->init_token_ratio *
			     e->min_new_token_ratio_factor;
	double decay = e->new_token_ratio_decay_steps > 0 ?
		       (in->init_token_ratio - floor_ratio) /
		       (double)e->new_token_ratio_decay_steps : 0;
	int64_t i, n = 0, k = 1 + serve_spec_k(s);

	for (i = 0; i < in->nrunning; i++) {
		int64_t id = in->running[i];
		struct serve_req *r = &s->req[id];

		if (prefilling && prefilling[sglang_rank(s, in, id)])
			continue;	/* its rank runs a prefill batch */
		if (!serve_req_decoding(r) || id == in->chunked_req ||
		    (in->adp_chunked &&
		     in->adp_chunked[sglang_rank(s, in, id)] == id) ||
		    r->in_step)
			continue;
		if (serve_make_room(s, in, id, r->computed + k, now))
			in->new_token_ratio = in->init_token_ratio;
		if (r->state != REQ_RUNNING)
			break;
		serve_mark(in, r, k, 0, now);
		n++;
	}
	in->new_token_ratio = fmax(floor_ratio, in->new_token_ratio - decay);
	return n;
}

static int64_t sched_sglang(struct serve *s, struct serve_inst *in,
			    double now)
{
	int64_t n = 0;

	if (in->adp_chunked)	/* attention DP (serve_setup.c) */
		n = sglang_prefill_adp(s, in, now);
	else if (in->waiting.n > 0 || in->chunked_req >= 0)
		n = sglang_prefill(s, in, now);
	if (n != 0)
		return n;
	return sglang_decode(s, in, now, NULL);
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
		int64_t need = r->prompt - serve_req_start(r);

		if (need > budget && n > 0)
			break;
		if ((double)(in->free_pages -
			     kv_pages_for(in, serve_req_start(r) + need)) < keep)
			break;
		if (!serve_kv_grow(in, r, serve_req_start(r) + need, now))
			break;
		if (serve_admit(s, in, id) != 0)
			return -1;
		serve_mark(in, r, need, 1, now);
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
	int64_t i, n = 0, k = 1 + serve_spec_k(s), w = v0_window(s, in);
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
		serve_make_room(s, in, id, r->computed + ahead, now);
		if (r->state != REQ_RUNNING)
			break;
		serve_mark(in, r, k, 0, now);
		n++;
	}
	if (n == 0)
		in->window_left = 0;
	else
		in->window_left = in->window_left > 0 ? in->window_left - 1
						      : w - 1;
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
		if (!serve_kv_grow(in, r, r->computed + 1 + serve_spec_k(s), now))
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
		n = serve_sched_trtllm(s, in, now);
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
