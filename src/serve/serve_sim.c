/*
 * serve_sim.c - the serving loop: arrivals, engine steps, metrics.
 *
 * One event queue (engine/sim.h) carries the arrivals and the ends of
 * engine steps of every instance. An instance is idle or running one
 * step; when a step ends, its requests advance (serve_sched.c) and the
 * next step is formed at once; an arrival at an idle instance starts
 * one. A step starts only after every request arriving at its start
 * time is queued (all of an offline run's prompts before its first
 * step). Requests go to instances round-robin in arrival order (vLLM's
 * and SGLang's data-parallel front ends dispatch that way by default).
 *
 * A step's time is the step model's (run/infer_run.h: the batch through
 * every stage) plus the host's share: added when the engine does not
 * overlap scheduling (or when the step starts an idle engine, there being
 * no previous step to hide it under), else max(GPU, host). Speculative
 * decoding adds the draft's k steps over the decoding sequences
 * (serve_setup.c draft_head: a draft model's, or an MTP/EAGLE head's as
 * its method builds it) before the verify step; each decoding sequence then keeps
 * 1 + a tokens, a the leading accepted drafts: P(a = n) = p^n (1 - p)
 * for n < k, P(a = k) = p^k (p = acceptance_rate), drawn per sequence
 * and step from a seeded GSL generator.
 *
 * Metrics: TTFT = first token - arrival (the token the prompt's last
 * chunk samples; in a disaggregated run, the prefill's token reaching
 * the user once its step ends); TPOT = (E2E - TTFT) / (output - 1) over
 * requests with more than one output token; E2E = last token - arrival;
 * percentiles by the nearest rank over completed requests. Throughput =
 * tokens / (last completion - first arrival). The time-average number of
 * requests in the system (arrived, not done) is integrated exactly, so
 * Little's law, L = lambda W, holds up to the sampling error of lambda
 * and W.
 */
#include "base/clock.h"
#include "serve_impl.h"

#include <gsl/gsl_rng.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_job.h"
#include "engine/sim.h"
#include "run/step.h"

/* The argument of an instance's events. */
struct inst_ev {
	struct serve *s;
	int i;
	double last_end_s;		/* s, when its last step ended */
	struct step_ev *slot;		/* [pp] steps in flight */
	int arrived;			/* requests queued here, not yet woken */
};

/* A step in flight: its end's argument. */
struct step_ev {
	struct inst_ev *ev;
	int64_t tag;			/* 0: slot free */
};

static double now_s(const struct serve *s)
{
	return units_ns_to_s(sim_now(s->sim));
}

/* Schedule fn(arg) dt_s seconds after base ns (engine time); 1 when
 * scheduled. Past the engine's horizon (2^62 ns) the run fails, saying
 * what would have happened when: never a wrapped clock or an
 * assertion. 0 when it fails, as when out of memory (s->failed set). */
static int serve_at(struct serve *s, units_ns_t base, double dt_s,
		    const char *what, sim_fn fn, void *arg)
{
	units_ns_t at;

	if (units_ns_add(base, units_s_to_ns_sat(dt_s), &at) != 0) {
		if (!s->failed)
			diag_error(s->d, NULL, 0, 0, "the serving simulation is "
				   "longer than the engine represents (2^62 ns, "
				   "about 146 years): %s at %.6g s", what,
				   units_ns_to_s(base) + dt_s);
		s->failed = 1;
		return 0;
	}
	if (!sim_at(s->sim, at, fn, arg)) {
		s->failed = 1;
		return 0;
	}
	return 1;
}

static void account_system(struct serve *s, double now)
{
	if (now > s->last_area_s)
		s->area_in_system += (double)s->in_system *
				     (now - s->last_area_s);
	s->last_area_s = now;
}

void serve_finish(struct serve *s, struct serve_req *r, double now)
{
	account_system(s, now);
	r->state = REQ_DONE;
	r->done_s = now;
	s->in_system--;
	s->done++;
}

/* ---- steps ---- */

static void step_end(struct sim *sim, void *arg);
static void stage_free(struct sim *sim, void *arg);
static void admit(struct serve *s, units_ns_t now);

/* Accepted drafts of one verify step (see the top). */
static int64_t accepted(struct serve *s)
{
	const struct speculative_spec *sp = &s->job->serving.speculative;
	int64_t n = 0;

	while (n < sp->tokens && gsl_rng_uniform(s->rng) < sp->acceptance_rate)
		n++;
	return n;
}

void serve_step_done(struct serve *s, struct serve_inst *in, int64_t tag,
		     double now)
{
	int64_t i = 0;

	while (i < in->nrunning) {
		int64_t id = in->running[i], made;
		struct serve_req *r = &s->req[id];

		if (r->in_step != tag) {
			i++;
			continue;
		}
		r->in_step = 0;
		if (r->tail) {	/* its extra step: it frees its slot now */
			r->computed += r->step_q;
			if (in->window_left > 0) {	/* to the window's end */
				i++;
				continue;
			}
			if (r->tail == 2)
				serve_finish(s, r, now);
			serve_kv_free(in, r, now);
			serve_running_remove(in, id);
			r->state = REQ_DONE;
			continue;
		}
		if (r->step_prefill) {
			r->computed += r->step_q;
			if (r->computed < r->prompt) {
				i++;
				continue;
			}
			made = 1;
		} else {
			made = r->step_q > 1 ? 1 + accepted(s) : 1;
			if (r->step_q > 1) {
				s->spec_tokens += (double)made;
				s->spec_steps += 1;
			}
			r->computed += made;
		}
		if (made > r->output - r->generated)
			made = r->output - r->generated;
		r->generated += made;
		if (r->first_token_s < 0)
			r->first_token_s = now;
		if (r->generated >= r->output &&
		    s->job->serving.engine->overlap_scheduling &&
		    s->job->serving.engine->overlap_extra_step) {
			/* done now (its response leaves with this step's
			 * update), but the scheduler sees it one step late:
			 * it runs once more, in the running list */
			serve_finish(s, r, now);
			r->state = REQ_RUNNING;
			r->tail = 1;
			i++;
			continue;
		}
		if (r->generated >= r->output && in->window_left > 0) {
			/* vLLM V0 multi-step: it runs to its window's end,
			 * its output returned there (serve_sched.c) */
			r->tail = 2;
			i++;
			continue;
		}
		if (r->generated >= r->output) {
			serve_kv_free(in, r, now);
			serve_running_remove(in, id);
			serve_finish(s, r, now);
			continue;
		}
		if (in->role == ROLE_PREFILL) {
			serve_running_remove(in, id);
			if (serve_handoff(s, id, now) != 0)
				s->failed = 1;
			continue;
		}
		i++;
	}
}

/* Draft cost of a step whose decoding sequences verify k drafts: k
 * steps of the draft over them, one token each. */
static int draft_cost(struct serve *s, const struct infer_batch *b,
		      double *t)
{
	const struct speculative_spec *sp = &s->job->serving.speculative;
	struct infer_batch db;
	struct infer_step_cost c;
	int i;

	*t = 0;
	if (!s->draft)
		return 0;
	memset(&db, 0, sizeof(db));
	for (i = 0; i < b->n; i++)
		if (!b->g[i].prefill && b->g[i].q > 1)
			infer_batch_add(&db, b->g[i].count, 1, b->g[i].ctx, 0, 1);
	if (db.n == 0)
		return 0;
	if (infer_stepper_cost(s->draft, &db, &c, s->d) != 0)
		return -1;
	*t = (double)sp->tokens * c.latency_s;
	return 0;
}

/* Layer-wise KV transfer: the requests whose prompt this step ends
 * start sending now (serve_setup.c). */
static void xfer_layerwise(struct serve *s, struct serve_inst *in, double now)
{
	int64_t i;

	for (i = 0; i < in->nrunning; i++) {
		int64_t id = in->running[i];
		struct serve_req *r = &s->req[id];

		if (r->in_step == in->tag && r->step_prefill &&
		    r->computed + r->step_q >= r->prompt &&
		    r->output > 1 && serve_xfer_begin(s, id, now) != 0)
			s->failed = 1;
	}
}

/* Start the next step of ev's instance if it has one and its first stage
 * is free. One step is in flight at a time without a pipeline; with pp
 * stages, vLLM and SGLang keep up to pp micro-batches in flight (vLLM's
 * batch queue of pipeline_parallel_size, SGLang's pp event loop), each
 * of requests not in another one. A step holds the first stage for the
 * slowest stage's time (interval_s; the pipeline accepts a batch that
 * often) and ends after every stage (latency_s); without a pipeline the
 * two are equal. */
static void start_step(struct serve *s, struct inst_ev *ev)
{
	struct serve_inst *in = &s->inst[ev->i];
	struct infer_batch b;
	struct infer_step_cost c;
	struct step_ev *se = NULL;
	double now = now_s(s), dur, hold, host, draft_s, t;
	int64_t n, pre = 0, dec = 0, k;

	admit(s, sim_now(s->sim));
	if (in->busy || in->inflight >= in->pp || s->failed)
		return;
	for (k = 0; k < in->pp && !se; k++)
		if (ev->slot[k].tag == 0)
			se = &ev->slot[k];
	if (!se)
		return;
	in->tag++;
	n = serve_schedule(s, in, now, &b);
	if (s->failed || n == 0)
		return;
	if (infer_stepper_cost(in->step, &b, &c, s->d) != 0 ||
	    draft_cost(s, &b, &draft_s) != 0) {
		s->failed = 1;
		return;
	}
	/* the host's share: hidden under the previous step when the engine
	 * overlaps scheduling and one was running, else added */
	host = s->job->serving.engine->overlap_scheduling &&
	       (ev->last_end_s >= now || in->inflight > 0) ? 0 : c.host_s;
	dur = c.latency_s + draft_s;
	hold = c.interval_s + draft_s;
	if (host == 0) {
		dur = fmax(dur, c.host_s);
		hold = fmax(hold, c.host_s);
	} else {
		dur += host;
		hold += host;
	}
	for (k = 0; k < b.n; k++) {
		t = b.g[k].count * b.g[k].q;
		if (b.g[k].prefill)
			pre += (int64_t)llround(t);
		else
			dec += (int64_t)llround(b.g[k].count);
	}
	se->ev = ev;
	se->tag = in->tag;
	in->inflight++;
	in->steps++;
	in->step_time_s += dur;
	in->batch_sum += (double)n;
	in->tokens_sum += infer_batch_tokens(&b);
	if (pre > 0) {
		in->prompt_steps++;
		in->prompt_step_time_s += dur;
	}
	if (in->role == ROLE_PREFILL &&
	    s->job->serving.disaggregated.layerwise)
		xfer_layerwise(s, in, now);
	serve_trace_step(s, ev->i, now, dur, &b, pre, dec);
	if (!serve_at(s, sim_now(s->sim), dur, "a step would end", step_end,
		      se))
		return;
	if (in->pp > 1 && hold < dur) {
		in->busy = 1;
		(void)serve_at(s, sim_now(s->sim), hold,
			       "a stage would be free", stage_free, ev);
	}
}

/* The first stage took the step: the next may start. */
static void stage_free(struct sim *sim, void *arg)
{
	struct inst_ev *ev = arg;
	struct serve *s = ev->s;

	s->inst[ev->i].busy = 0;
	start_step(s, ev);
	if (s->failed)
		sim_stop(sim);
}

static void step_end(struct sim *sim, void *arg)
{
	struct step_ev *se = arg;
	struct inst_ev *ev = se->ev;
	struct serve *s = ev->s;
	struct serve_inst *in = &s->inst[ev->i];
	double now = units_ns_to_s(sim_now(sim));
	int64_t tag = se->tag;

	se->tag = 0;
	in->inflight--;
	ev->last_end_s = now;
	serve_step_done(s, in, tag, now);
	serve_trace_counters(s, ev->i, now);
	start_step(s, ev);
	if (s->failed)
		sim_stop(sim);
}

void serve_wake(struct serve *s, int i)
{
	start_step(s, &s->evs[i]);
}

/* ---- arrivals ---- */

struct arrivals {
	struct serve *s;
	struct inst_ev *evs;
	double t0, last;	/* s, wall clock at the start, last line */
	uint64_t calls;		/* arrival events so far */
};

/* Long runs say what they do: past this many requests a line at the
 * start, then one every SERVE_PROGRESS_S of wall time at most. */
#define SERVE_PROGRESS_REQS 50000
#define SERVE_PROGRESS_S 2.0

static void progress(struct arrivals *a, double now)
{
	struct serve *s = a->s;
	double t;

	if (s->nreq < SERVE_PROGRESS_REQS || ++a->calls % 1024 != 0)
		return;		/* a short run; else the clock now and then */
	t = clock_mono_s();
	if (t - a->last < SERVE_PROGRESS_S)
		return;
	a->last = t;
	diag_progress(s->d, "serving: %lld of %lld requests arrived, %lld "
		      "finished, %.1f s simulated, %.0f s elapsed",
		      (long long)s->next_arrival, (long long)s->nreq,
		      (long long)s->done, now, t - a->t0);
}

/* Queue request id at its instance (round-robin over those that take
 * new requests), to be woken by the arrival event. */
static void dispatch(struct serve *s, int64_t id)
{
	int count = s->nprefill > 0 ? s->nprefill : s->ninst;
	int i = (int)(s->dispatch_rr++ % count);
	struct serve_req *r = &s->req[id];

	r->state = REQ_WAITING;
	r->instance = i;
	serve_seat(&s->inst[i], r);
	if (rq_push_back(&s->inst[i].waiting, id) != 0) {
		s->failed = 1;
		return;
	}
	s->evs[i].arrived = 1;
}

/* Queue every request that has arrived by now (ns). Every step start
 * calls it first, so a step holds the requests arriving at its start
 * time whichever event (an arrival, a step's end) comes first at that
 * instant: an offline run's first step holds every prompt the batch
 * limits let in, as the engines do: vLLM's LLM.generate adds every
 * prompt (_validate_and_add_requests) before _run_engine calls step();
 * SGLang's scheduler drains its tokenizer socket (recv_requests,
 * zmq.NOBLOCK until empty) before get_next_batch_to_run; TensorRT-LLM's
 * PyExecutor takes every queued request at the top of an iteration
 * (_get_from_request_queue empties a non-empty queue). */
static void admit(struct serve *s, units_ns_t now)
{
	double t = units_ns_to_s(now);

	while (!s->failed && s->next_arrival < s->nreq &&
	       units_s_to_ns_sat(s->req[s->next_arrival].arrival_s) <= now) {
		account_system(s, t);
		s->in_system++;
		dispatch(s, s->next_arrival++);
	}
}

static void arrive(struct sim *sim, void *arg)
{
	struct arrivals *a = arg;
	struct serve *s = a->s;
	int i;

	/* every request arriving at this instant, then wake the instances
	 * that got one (a step's end at this instant may have queued them
	 * already), then the next arrival */
	admit(s, sim_now(sim));
	progress(a, units_ns_to_s(sim_now(sim)));
	for (i = 0; i < s->ninst; i++)
		if (a->evs[i].arrived) {
			a->evs[i].arrived = 0;
			start_step(s, &a->evs[i]);
		}
	if (s->next_arrival < s->nreq)
		(void)serve_at(s, 0, s->req[s->next_arrival].arrival_s,
			       "a request would arrive", arrive, a);
	if (s->failed)
		sim_stop(sim);
}

/* ---- metrics ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Mean and nearest-rank percentiles of v[0..n-1] (sorted here). */
static void stats(double *v, int64_t n, struct serve_stats *out)
{
	double sum = 0;
	int64_t i;

	memset(out, 0, sizeof(*out));
	if (n == 0)
		return;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	out->mean = sum / (double)n;
	out->p50 = v[(int64_t)ceil(0.50 * (double)n) - 1];
	out->p90 = v[(int64_t)ceil(0.90 * (double)n) - 1];
	out->p99 = v[(int64_t)ceil(0.99 * (double)n) - 1];
}

static int metrics(struct serve *s, struct serve_result *out)
{
	double *ttft = mem_alloc((size_t)s->nreq * sizeof(double) + 8);
	double *tpot = mem_alloc((size_t)s->nreq * sizeof(double) + 8);
	double *e2e = mem_alloc((size_t)s->nreq * sizeof(double) + 8);
	double *queue = mem_alloc((size_t)s->nreq * sizeof(double) + 8);
	double first = INFINITY, last = 0, e2e_sum = 0, adp_sum = 0;
	int64_t i, nt = 0, np = 0, adp_steps = 0;
	int k;

	if (!ttft || !tpot || !e2e || !queue) {
		mem_free(ttft), mem_free(tpot), mem_free(e2e), mem_free(queue);
		return -1;
	}
	for (i = 0; i < s->nreq; i++) {
		const struct serve_req *r = &s->req[i];

		first = fmin(first, r->arrival_s);
		out->input_tokens += (double)r->input;
		out->prefix_hit_tokens += (double)r->cached;
		if (r->state != REQ_DONE)
			continue;
		last = fmax(last, r->done_s);
		out->output_tokens += (double)r->output;
		ttft[nt] = r->first_token_s - r->arrival_s;
		e2e[nt] = r->done_s - r->arrival_s;
		queue[nt] = r->first_scheduled_s - r->arrival_s;
		e2e_sum += e2e[nt];
		nt++;
		if (r->output > 1)
			tpot[np++] = (r->done_s - r->first_token_s) /
				     (double)(r->output - 1);
	}
	out->completed = nt;
	out->duration_s = nt ? last - first : 0;
	out->mean_e2e_s = nt ? e2e_sum / (double)nt : 0;
	stats(ttft, nt, &out->ttft);
	stats(tpot, np, &out->tpot);
	stats(e2e, nt, &out->e2e);
	stats(queue, nt, &out->queue);
	mem_free(ttft), mem_free(tpot), mem_free(e2e), mem_free(queue);
	if (out->duration_s > 0) {
		out->output_tokens_per_s = out->output_tokens / out->duration_s;
		out->input_tokens_per_s = out->input_tokens / out->duration_s;
		out->requests_per_s = (double)nt / out->duration_s;
		out->mean_in_system = s->area_in_system / (last - first);
	}
	for (k = 0; k < s->ninst; k++) {
		const struct serve_inst *in = &s->inst[k];

		out->steps += in->steps;
		out->preemptions += in->preemptions;
		adp_sum += in->adp_balance_sum;
		adp_steps += in->adp_steps;
		out->mean_step_s += in->step_time_s;
		out->mean_batch += in->batch_sum;
		out->mean_step_tokens += in->tokens_sum;
		out->prompt_steps += in->prompt_steps;
		out->prompt_step_time_s += in->prompt_step_time_s;
		out->kv_peak_frac = fmax(out->kv_peak_frac, in->peak_frac);
		if (in->pages > 0 && last > 0)
			out->kv_mean_frac += in->kv_area / (double)in->pages /
					     last / (double)s->ninst;
	}
	if (out->steps > 0) {
		out->mean_step_s /= (double)out->steps;
		out->mean_batch /= (double)out->steps;
		out->mean_step_tokens /= (double)out->steps;
	}
	out->adp_balance = adp_steps > 0 ? adp_sum / (double)adp_steps : 0;
	for (k = 0; k < s->nsteppers; k++)
		out->cost_calls += s->steppers[k].steps;
	if (s->draft)
		out->cost_calls += s->draft->steps;
	out->spec_tokens_per_step = s->spec_steps > 0 ?
				    s->spec_tokens / s->spec_steps : 0;
	if (s->xfers > 0) {
		out->kv_transfer_mean_s = s->xfer_sum_s / (double)s->xfers;
		out->kv_transfer_bytes = s->xfer_bytes;
	}
	return 0;
}

/* ---- the run ---- */

int serve_run(const struct job_spec *j, FILE *trace, struct serve_result *out,
	      struct diag *d)
{
	return serve_run_traced(j, trace, 0, out, d);
}

/* The run stopped at the trace budget: what was written, the estimate
 * (from the run's own requests: generating them again would hold every
 * request twice just as the run stops), the flag. -2. */
static int trace_over(const struct serve *s, double done)
{
	struct serve_trace_est e;
	char est[160] = "", lo[32], hi[32], b[32];

	serve_trace_estimate_of(s->job, s->req, s->nreq, &e);
	if (s->job->serving.engine)
		snprintf(est, sizeof(est), "; before the run it was estimated "
			 "at %s to %s (%.0f to %.0f engine steps)",
			 step_human(lo, sizeof(lo), e.lo_B, UNIT_BYTES),
			 step_human(hi, sizeof(hi), e.hi_B, UNIT_BYTES),
			 e.steps_lo, e.steps_hi);
	diag_error(s->d, NULL, 0, 0, "the trace passed the %s budget after "
		   "%lld engine steps (%.0f of %lld requests done), and the "
		   "run stopped there%s; raise the budget with --max-trace, "
		   "or simulate fewer requests",
		   step_human(b, sizeof(b), s->trace_max_B, UNIT_BYTES),
		   (long long)s->trace_steps, done, (long long)s->nreq, est);
	return -2;
}

int serve_run_traced(const struct job_spec *j, FILE *trace,
		     double trace_max_B, struct serve_result *out,
		     struct diag *d)
{
	return serve_run_reqs(j, NULL, trace, trace_max_B, out, d);
}

int serve_run_reqs(const struct job_spec *j, struct serve_reqs *r,
		   FILE *trace, double trace_max_B, struct serve_result *out,
		   struct diag *d)
{
	struct serve s;
	struct inst_ev *evs = NULL;
	struct arrivals arr;
	int rc, i;

	memset(out, 0, sizeof(*out));
	memset(&s, 0, sizeof(s));
	s.job = j;
	s.d = d;
	s.wake = serve_wake;
	s.trace = trace;
	s.trace_first = 1;
	s.trace_max_B = trace ? trace_max_B : 0;
	if (r) {	/* taken over: serve_teardown frees them */
		s.req = r->v;
		s.nreq = r->n;
		r->v = NULL;
		r->n = 0;
	} else {
		rc = serve_requests(j, &s.req, &s.nreq, d);
		if (rc != 0)
			return rc;
	}
	out->requests = s.nreq;
	rc = serve_setup(&s, out);
	if (rc != 0)
		goto out;
	rc = -1;
	evs = mem_calloc((size_t)s.ninst, sizeof(*evs));
	if (!evs) {
		diag_oom(d);
		goto out;
	}
	s.evs = evs;
	for (i = 0; i < s.ninst; i++) {
		evs[i].s = &s;
		evs[i].i = i;
		evs[i].last_end_s = -1;
		evs[i].slot = mem_calloc((size_t)s.inst[i].pp,
					 sizeof(*evs[i].slot));
		if (!evs[i].slot) {
			diag_oom(d);
			goto out;
		}
	}
	arr.s = &s;
	arr.evs = evs;
	arr.t0 = arr.last = clock_mono_s();
	arr.calls = 0;
	if (s.nreq >= SERVE_PROGRESS_REQS)
		diag_progress(d, "serving: simulating %lld requests on %d "
			      "instance%s (a line every %.0f s)",
			      (long long)s.nreq, s.ninst, s.ninst == 1 ? "" : "s",
			      SERVE_PROGRESS_S);
	if (trace && fputs("[\n", trace) >= 0)
		s.trace_B = 2;
	if (s.nreq > 0 && !serve_at(&s, 0, s.req[0].arrival_s,
				    "the first request would arrive", arrive,
				    &arr)) {
		if (!d->errors)
			diag_oom(d);
		goto out;
	}
	if (sim_run(s.sim) != 0 || s.failed) {
		if (s.trace_over) {
			rc = trace_over(&s, (double)s.done);
			goto out;
		}
		if (!d->errors)
			diag_error(d, NULL, 0, 0, "the serving simulation "
				   "failed (out of memory)");
		goto out;
	}
	if (trace)
		fputs("\n]\n", trace);
	if (s.done < s.nreq) {
		diag_error(d, NULL, 0, 0, "the serving simulation stopped with "
			   "%lld of %lld requests unfinished (a request the "
			   "engine can never schedule)",
			   (long long)(s.nreq - s.done), (long long)s.nreq);
		goto out;
	}
	for (i = 0; i < s.ninst; i++)
		serve_kv_account(&s.inst[i], now_s(&s));
	if (metrics(&s, out) != 0) {
		diag_oom(d);
		goto out;
	}
	out->events = sim_events(s.sim);
	rc = 0;
out:
	for (i = 0; evs && i < s.ninst; i++)
		mem_free(evs[i].slot);
	mem_free(evs);
	serve_teardown(&s);
	return rc;
}

void serve_result_release(struct serve_result *r)
{
	(void)r;
}
