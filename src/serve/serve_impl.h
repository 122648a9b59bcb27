/*
 * serve_impl.h - the serving simulation's shared state. Private to
 * src/serve.
 */
#ifndef LLMSIM_SERVE_SERVE_IMPL_H
#define LLMSIM_SERVE_SERVE_IMPL_H

#include <stdint.h>
#include <stdio.h>

#include <gsl/gsl_rng.h>

#include "models/infer.h"
#include "run/infer_run.h"
#include "serve.h"

struct job_spec;
struct diag;
struct sim;
struct net;
struct inst_ev;

enum req_state {
	REQ_FUTURE,		/* not arrived yet */
	REQ_WAITING,		/* queued at its instance */
	REQ_RUNNING,		/* admitted: prefilling or decoding */
	REQ_TRANSFER,		/* disaggregated: KV on its way to decode */
	REQ_DONE
};

struct serve_req {
	double arrival_s;	/* s */
	int64_t input;		/* prompt tokens */
	int64_t output;		/* tokens to generate */
	int64_t cached;		/* prompt tokens the prefix cache holds */
	int64_t prompt;		/* tokens to compute before sampling: the
				 * input, plus what it had generated when it
				 * was preempted (recomputed) */
	/* state */
	int state;		/* enum req_state */
	int instance;		/* where it is (or was) served */
	int64_t computed;	/* tokens in the KV cache (prompt, then the
				 * generated ones fed back) */
	int64_t generated;	/* output tokens produced */
	int64_t pages;		/* KV pages held */
	int64_t reserved;	/* tokens reserved by admission (trtllm) */
	int64_t preempted;	/* times preempted or retracted */
	int64_t kept;		/* waiting after a preemption: the tokens
				 * whose pages its instance's prefix cache
				 * still holds (serve_inst keep_preempted),
				 * 0 otherwise */
	int64_t kept_pages;	/* ... those pages, free but not yet
				 * evicted */
	int64_t in_step;	/* tag of the step it is in (0: none) */
	int64_t step_q;		/* tokens it computes in that step */
	int step_prefill;	/* that step is a prompt chunk */
	double first_scheduled_s;	/* s, -1 before */
	double first_token_s;	/* s, -1 before */
	double done_s;		/* s, -1 before */
	int tail;		/* 1: done (done_s set), still running the
				 * engine's extra step (overlap_extra_step);
				 * 2: all generated, still running its
				 * multi-step window, done at its end */
	double transfer_s;	/* s, disaggregated KV transfer time */
	int xfer;		/* disaggregated: 0 no send, 1 sending, 2 sent */
	int prefilled;		/* disaggregated: its prefill step has ended */
	int prefill_inst;	/* disaggregated: where it was prefilled */
	int handoff_to;		/* disaggregated: its decode instance */
	int adp_rank;		/* TensorRT-LLM attention DP: the rank that
				 * holds it, -1 before one is chosen */
	int adp_inst;		/* the instance adp_rank is a rank of */
	int adp_seat;		/* sglang under attention DP: 1 + the rank
				 * its instance sent it to (its arrival there
				 * mod N, round robin), 0 before it arrives */
};

/* Attention-DP ranks of one instance llmsim tracks (more: spread evenly). */
#define ADP_MAX_BINS 256

/* A FIFO of request indices (a ring buffer that grows). */
struct req_queue {
	int64_t *v;
	int64_t cap, head, n;
};

int rq_push_back(struct req_queue *q, int64_t id);
int rq_push_front(struct req_queue *q, int64_t id);
int64_t rq_front(const struct req_queue *q);
int64_t rq_at(const struct req_queue *q, int64_t i);
void rq_pop_front(struct req_queue *q);
void rq_release(struct req_queue *q);

/* What an instance does: serve everything, prefill only, decode only. */
enum inst_role {
	ROLE_BOTH,
	ROLE_PREFILL,
	ROLE_DECODE
};

struct serve_inst {
	int role;			/* enum inst_role */
	struct infer_stepper *step;	/* its step model (shared per pool) */
	int64_t pages;			/* KV pages */
	int64_t free_pages;
	int64_t block;			/* tokens per page */
	int64_t state_pages;		/* pages a sequence's fixed recurrent
					 * states take (Gated DeltaNet layers,
					 * a hybrid's Mamba-2 layers;
					 * infer_mem.h); 0: none */
	int64_t full_groups;		/* layer groups whose pages follow a
					 * sequence's whole length (1 without
					 * window_kv_groups; infer_mem.h) */
	int64_t window_groups;		/* sliding-window groups (0: none),
					 * each freeing a sequence's pages
					 * wholly before its last
					 * window_tokens tokens when the
					 * sequence is next scheduled */
	int64_t window_tokens;
	int64_t max_seqs, max_tokens;	/* the instance's (all its ranks') */
	int64_t adp;			/* attention-DP ranks, each with
					 * max_tokens / adp of the budget */
	int chunked;
	int keep_preempted;		/* vLLM V1 with prefix caching: a
					 * preempted request's pages stay
					 * cached until evicted (serve_queue.c
					 * preempt, kv_reclaim) */
	int64_t cached_free;		/* free pages still holding a waiting
					 * request's kept prefix */
	struct serve_req *reqs;		/* the simulation's requests (s->req) */
	struct req_queue waiting;
	/* TensorRT-LLM attention DP with per-rank admission (engine
	 * adp_admission: rank; serve_trtllm.c): NULL otherwise */
	int64_t *adp_used;		/* [adp] KV pages each rank's running
					 * requests hold */
	int64_t rank_pages;		/* KV pages of one rank */
	int64_t *pend;			/* fetched requests placed on a rank,
					 * not yet admitted by its capacity
					 * scheduler, in fetch order */
	int64_t npend, cap_pend;
	int64_t adp_wait_iters;		/* adp_balance: iterations the context
					 * requests were held for every rank */
	int64_t adp_batch_iters;	/* ... and for batching */
	int64_t *running;		/* admitted requests, in admission order */
	int64_t nrunning, cap_running;
	int64_t chunked_req;		/* sglang: the request being chunked, -1 */
	int64_t adp_arrivals;		/* requests queued here so far */
	int64_t *adp_chunked;		/* sglang under attention DP: [adp],
					 * each rank's request being chunked,
					 * -1 (serve_sched.c sglang_prefill_adp);
					 * NULL otherwise. Any adp: a fixed
					 * array of ADP_MAX_BINS left dp > 256
					 * on the pooled path at N times the
					 * prefill budget */
	int64_t *adp_left;		/* ... its scratch: [adp] tokens left */
	unsigned char *adp_busy;	/* ... [adp] ranks that prefill */
	int64_t window_left;		/* vLLM V0 multi-step: decode steps of
					 * the current window after the one
					 * formed last (0: none) */
	double new_token_ratio;		/* sglang admission estimate */
	double init_token_ratio;	/* ... its initial value: the engine's,
					 * x adp_schedule_conservativeness
					 * under attention DP */
	int busy;			/* stage 0 is running a step */
	int64_t pp;			/* steps in flight at most (pipeline stages) */
	int64_t inflight;		/* steps in flight */
	int64_t tag;			/* tag of the step being formed (> 0) */
	double kv_area;			/* integral of pages used dt */
	double last_change_s;		/* s, of pages used */
	double peak_frac;
	int64_t steps;
	double step_time_s, batch_sum, tokens_sum;
	int64_t prompt_steps;		/* steps that compute prompt tokens */
	double prompt_step_time_s;	/* s, their summed durations */
	int64_t preemptions;
	double adp_balance_sum;		/* sum over ranked steps of mean /
					 * most tokens an attention-DP rank */
	int64_t adp_steps;		/* steps with tracked ranks */
};

/* The whole simulation. */
struct serve {
	const struct job_spec *job;
	struct serve_req *req;
	int64_t nreq;
	struct serve_inst *inst;
	int ninst;			/* all instances */
	int nprefill;			/* disaggregated: the first nprefill are prefill */
	struct infer_stepper *steppers;	/* one per pool (1 or 2) */
	int nsteppers;
	struct infer_stepper *draft;	/* speculative: the draft's step model */
	struct sim *sim;
	gsl_rng *rng;			/* speculative acceptance draws */
	FILE *trace;			/* Chrome trace, or NULL */
	int trace_first;		/* no event written yet */
	double trace_B;			/* B written to it */
	double trace_max_B;		/* B, its budget; 0 = none */
	int trace_over;			/* the budget is spent: stopped */
	int64_t trace_steps;		/* engine steps written */
	int64_t next_arrival;		/* index of the next request to arrive */
	int64_t dispatch_rr;		/* round-robin cursor */
	int64_t in_system;		/* arrived and not done */
	double area_in_system;		/* integral of in_system dt */
	double last_area_s;
	int64_t done;
	double spec_tokens, spec_steps;	/* verify steps and their tokens */
	struct diag *d;
	int failed;			/* a step could not be costed */
	struct net *xfer_net;		/* disaggregated: KV transfer fabric */
	double xfer_sum_s, xfer_bytes;
	int64_t xfers;
	int64_t handoff_rr;		/* decode-instance round-robin cursor */
	int64_t *first_gpu;		/* [ninst] first GPU of each instance */
	void *pools_mem;		/* the pools' jobs (serve_setup.c) */
	struct inst_ev *evs;		/* [ninst] events of each instance */
	void (*wake)(struct serve *s, int i);	/* serve_wake, for the
						 * files the loop calls */
};

/* ---- requests (serve_req.c) ---- */

/* serve.h's requests made once: the array (mem_alloc'd), its length. */
struct serve_reqs {
	struct serve_req *v;
	int64_t n;
};

/* The most tokens (prompt + output) a request of job j may have:
 * serving.max_model_len, else the model's max_position_embeddings; 0 = no
 * bound. */
int64_t serve_context_len(const struct job_spec *j);
/* What that bound is, for messages: "'serving.max_model_len'" or "the
 * model's context"; and what follows its token count there: "" or
 * " (max_position_embeddings)". */
const char *serve_context_name(const struct job_spec *j);
const char *serve_context_note(const struct job_spec *j);

/* The KV slots a running request computing up to `tokens` holds: vLLM V1
 * adds the speculative lookahead (serve_queue.c serve_kv_slots). */
int64_t serve_kv_slots(const struct serve *s, int64_t tokens);

/* The job's requests, arrivals ascending: drawn (serving.requests,
 * input_len, output_len, arrival_rate, seed) or read from serving.trace.
 * Returns 0, -1 out of memory, -2 bad input (reported with
 * file:line:col). The array is mem_alloc'd. */
int serve_requests(const struct job_spec *j, struct serve_req **out,
		   int64_t *n, struct diag *d);

/* serve_trace_estimate (serve.h) from requests already generated (v[0..n-1],
 * as serve_requests made them): a stopped run reuses its own instead of
 * generating every request a second time. */
void serve_trace_estimate_of(const struct job_spec *j,
			     const struct serve_req *v, int64_t n,
			     struct serve_trace_est *e);

/* ---- scheduling (serve_sched.c) ---- */

/* Form the next step of instance in at time now (tagged in->tag): set
 * in_step/step_q of the requests it computes (requests already in a step
 * in flight are left out) and fill b. Returns the sequences scheduled (0:
 * nothing to do). */
int64_t serve_schedule(struct serve *s, struct serve_inst *in, double now,
		       struct infer_batch *b);

/* After the step tagged `tag` ended at now: advance its requests
 * (tokens, first tokens, completions, KV). */
void serve_step_done(struct serve *s, struct serve_inst *in, int64_t tag,
		     double now);

/* KV pages a sequence holds for `tokens` tokens when it has computed
 * `computed` of them (the pool's pieces below: serve_queue.c): every
 * group's pages of the tokens, less a sliding-window group's pages its
 * window no longer reads. */
static inline int64_t kv_pages_at(const struct serve_inst *in,
				  int64_t computed, int64_t tokens)
{
	int64_t p = (tokens + in->block - 1) / in->block;
	/* a window group's pages wholly before token computed - W + 1 are
	 * freed (vLLM SlidingWindowManager.remove_skipped_blocks, called
	 * with the computed tokens before the step's slots are allocated) */
	int64_t first = computed - in->window_tokens + 1;
	int64_t skip = in->window_groups > 0 && first > 0 ? first / in->block : 0;

	return in->full_groups * p + in->window_groups * (p - skip) +
	       (tokens > 0 ? in->state_pages : 0);
}

/* KV pages a sequence of `tokens` tokens takes from scratch. */
static inline int64_t kv_pages_for(const struct serve_inst *in, int64_t tokens)
{
	return kv_pages_at(in, 0, tokens);
}

/* Pages in use changed at now: accumulate the occupancy integral. */
void serve_kv_account(struct serve_inst *in, double now);

/* Free request r's KV pages. */
void serve_kv_free(struct serve_inst *in, struct serve_req *r, double now);

/* Remove request id from in's running list. */
void serve_running_remove(struct serve_inst *in, int64_t id);
int serve_running_add(struct serve_inst *in, int64_t id);

/* ---- what the engines' schedulers share (serve_queue.c) ---- */

/* Whether r's prompt is computed (it decodes). */
static inline int serve_req_decoding(const struct serve_req *r)
{
	return r->computed >= r->prompt;
}

/* First admission of waiting request r: the prefix cache's tokens count
 * as computed, and after a preemption the tokens its kept pages still
 * hold (serve_queue.c preempt). The tokens it starts from. */
static inline int64_t serve_req_start(const struct serve_req *r)
{
	int64_t t = r->computed > r->cached ? r->computed : r->cached;

	return t > r->kept ? t : r->kept;
}

/* Draft tokens a decode step verifies (0 without speculation). */
int serve_spec_k(const struct serve *s);

/* Pages for r to hold `tokens`; 0 when the pool (or under per-rank
 * admission its rank's pool) cannot give them. */
int serve_kv_grow(struct serve_inst *in, struct serve_req *r, int64_t tokens,
		  double now);

/* Request r takes q tokens (a prompt chunk when prefill) in the step
 * being formed. */
void serve_mark(struct serve_inst *in, struct serve_req *r, int64_t q,
		int prefill, double now);

/* Request id joins its rank's fetched, not yet admitted requests (per-rank
 * admission): at the back, or at the front (evicted). 0 or -1 (out of
 * memory). */
int serve_pend_add(struct serve_inst *in, int64_t id, int front);

/* Grow running request id's KV cache to tokens, preempting the
 * scheduler's victims: how many it preempted. */
int serve_make_room(struct serve *s, struct serve_inst *in, int64_t id,
		    int64_t tokens, double now);

/* Request r arrives at instance in: under attention DP its seat there,
 * the next rank round robin (SGLang's DataParallelController). */
void serve_seat(struct serve_inst *in, struct serve_req *r);

/* Admit the waiting queue's front request id: 0, or -1 (out of memory,
 * s->failed set). */
int serve_admit(struct serve *s, struct serve_inst *in, int64_t id);

/* Whether request r has an attention-DP rank of instance in. */
int serve_has_rank(const struct serve *s, const struct serve_inst *in,
		   const struct serve_req *r);

/* TensorRT-LLM's next step on instance in (serve_trtllm.c): the requests
 * it marked, or -1 (out of memory). */
int64_t serve_sched_trtllm(struct serve *s, struct serve_inst *in, double now);

/* ---- the loop (serve_sim.c) ---- */

/* Request r finished at now (metrics, in-system count). */
void serve_finish(struct serve *s, struct serve_req *r, double now);

/* Disaggregated (serve_setup.c): start sending request id's KV to a
 * decode instance (at the start of its last prefill step when layer-wise,
 * else from serve_handoff); and the prefill instance finished its prompt
 * at now: once the KV has arrived the request waits at the decode
 * instance. Return 0 or -1 (out of memory). */
int serve_xfer_begin(struct serve *s, int64_t id, double now);
int serve_handoff(struct serve *s, int64_t id, double now);

/* Instance i may have work: start a step if it is idle (serve_sim.c's,
 * reached through struct serve's wake). */
void serve_wake(struct serve *s, int i);

/* Set up the instances, step models and fabric of s (serve_setup.c);
 * tear them down. serve_setup returns 0, -1 (runtime) or -2 (bad input,
 * reported). */
int serve_setup(struct serve *s, struct serve_result *out);
void serve_teardown(struct serve *s);

/* Write one Chrome trace event (a complete event or a counter). */
void serve_trace_step(struct serve *s, int inst, double start_s, double dur_s,
		      const struct infer_batch *b, int64_t prefill_tokens,
		      int64_t decode_seqs);
void serve_trace_counters(struct serve *s, int inst, double now);

/* B of one step's events in the trace (a step and its two counters) of
 * instance inst at time t_s, dur_s long, seqs sequences of tokens
 * tokens, waiting requests queued. */
double serve_trace_step_B(int inst, double t_s, double dur_s, double seqs,
			  double tokens, int64_t waiting);

#endif
