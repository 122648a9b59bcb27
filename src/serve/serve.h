/*
 * serve.h - the serving simulation: a stream of requests through one or
 * more engine instances, each scheduling every engine step the way its
 * engine does (continuous batching over a paged KV cache, chunked
 * prefill, preemption when the cache is full, prefix-cache hits,
 * speculative decoding, separate prefill and decode pools), every step
 * costed by the inference step model (run/infer_run.h), so serving reuses
 * the GPU and fabric models.
 *
 * The models behind it are in docs/serving.md and at the top of each
 * file: serve_req.c (requests, arrivals, trace files), serve_sched.c (the
 * engines' policies; TensorRT-LLM's in serve_trtllm.c, what they share in
 * serve_queue.c), serve_sim.c (instances, the event loop, metrics),
 * serve_setup.c and serve_xfer.c (prefill/decode pools and KV transfer).
 *
 * Depends on run/infer_run.h, engine/sim.h, network/net.h, GSL.
 */
#ifndef LLMSIM_SERVE_SERVE_H
#define LLMSIM_SERVE_SERVE_H

#include <stdint.h>
#include <stdio.h>

#include "models/infer_mem.h"

struct job_spec;
struct diag;
struct cJSON;
struct serve_reqs;

/* A latency distribution over the completed requests. */
struct serve_stats {
	double mean, p50, p90, p99;	/* s */
};

struct serve_result {
	int64_t requests;		/* simulated */
	int64_t completed;		/* finished */
	int64_t instances;		/* engine instances (all pools) */
	int64_t gpus;			/* GPUs they use */
	double duration_s;		/* s, first arrival to last completion */
	double output_tokens;		/* generated, all requests */
	double input_tokens;		/* prompt tokens, all requests */
	double output_tokens_per_s;	/* output_tokens / duration */
	double input_tokens_per_s;
	double requests_per_s;		/* completed / duration */
	double offered_rate;		/* requests/s asked for (inf: 0; a trace: its mean) */
	struct serve_stats ttft;	/* arrival to first token */
	struct serve_stats tpot;	/* (e2e - ttft) / (output - 1), output > 1 */
	struct serve_stats e2e;		/* arrival to last token */
	struct serve_stats queue;	/* arrival to first scheduled */
	double mean_in_system;		/* time-average requests present (queued
					 * or running), for Little's law */
	double mean_e2e_s;		/* s, mean of e2e over all requests */
	int64_t steps;			/* engine steps, all instances */
	double mean_step_s;		/* s, mean step time */
	double mean_batch;		/* sequences per step */
	double mean_step_tokens;	/* tokens per step */
	int64_t prompt_steps;		/* steps computing prompt tokens (a
					 * prefill or a mixed step) */
	double prompt_step_time_s;	/* s, summed durations of those steps
					 * (all instances; the rest of steps x
					 * mean_step_s is decode-only steps) */
	int64_t preemptions;		/* preempted or retracted requests */
	double adp_balance;		/* TensorRT-LLM attention DP: mean over
					 * steps of mean / most tokens a rank
					 * (TensorRT-LLM's balance ratio); 0
					 * when ranks are not tracked */
	double prefix_hit_tokens;	/* prompt tokens found in the prefix cache */
	double kv_peak_frac;		/* largest KV occupancy (pages used / pages) */
	double kv_mean_frac;		/* time-average KV occupancy */
	double spec_tokens_per_step;	/* speculative: mean tokens per verify step */
	double kv_transfer_mean_s;	/* disaggregated: mean KV transfer */
	double kv_transfer_bytes;	/* disaggregated: KV moved */
	struct infer_mem mem;		/* per GPU of a (decode) instance */
	double kv_tokens;		/* KV pool of a (decode) instance, tokens
					 * (all its attention-DP ranks) */
	double kv_sequences;		/* sequences of mean length it holds */
	struct infer_mem prefill_mem;	/* disaggregated: of a prefill instance */
	uint64_t cost_calls;		/* step-model evaluations */
	uint64_t events;		/* engine events of the serving loop */
};

/*
 * Simulate job j (phase serving); write the Chrome trace (engine steps,
 * batch composition, KV occupancy) to trace when not NULL. Returns 0, -1
 * after a runtime failure, -2 after reporting bad input (a trace file's
 * bad rows, output length 0, a KV cache that cannot hold one sequence,
 * what llmsim cannot simulate). A write error on trace is not checked
 * here: its error flag tells the caller (cli_trace_close). Release with
 * serve_result_release().
 */
int serve_run(const struct job_spec *j, FILE *trace, struct serve_result *out,
	      struct diag *d);

/* serve_run with a budget on the trace (`run --max-trace`): once what
 * it wrote passes trace_max_B (> 0) the run stops, says so with the
 * flag that raises it, and returns -2; the file then holds the events
 * up to there (a JSON array without its closing bracket, which trace
 * viewers read). */
int serve_run_traced(const struct job_spec *j, FILE *trace,
		     double trace_max_B, struct serve_result *out,
		     struct diag *d);
/* serve_run_traced over requests made by serve_reqs_new (NULL: made
 * here), which the run takes over (r keeps none). */
int serve_run_reqs(const struct job_spec *j, struct serve_reqs *r,
		   FILE *trace, double trace_max_B, struct serve_result *out,
		   struct diag *d);

/*
 * The trace of job j's serving run, before it runs (`run --max-trace`).
 * Each engine step writes one complete event and two counter events
 * (serve_report.c), step_B bytes (their formats printed with a step
 * at the middle of the arrivals plus 1 s, 20 ms long, a full batch).
 * How many steps the engines take depends on
 * how requests share them, which only the run finds out; it lies
 * between
 *   steps_hi  no two requests share a step: each takes ceil(p / c)
 *             prompt steps (c the chunk: max_num_batched_tokens with
 *             chunked prefill, else the prompt) and (o - 1) / tau
 *             decode steps (tau the mean tokens a verify step keeps
 *             under speculative decoding, else 1)
 *   steps_lo  every step full: the most of sum(tokens) /
 *             max_num_batched_tokens, sum(prompt and decode steps of
 *             every request) / max_num_seqs and one request's steps
 *             (a request's steps follow each other)
 * (preemption recomputes prompts: more steps than steps_hi when the KV
 * pool overflows). 0, -1 out of memory, -2 bad input (reported, as
 * serve_run would).
 */
struct serve_trace_est {
	int64_t requests;
	double steps_lo, steps_hi;
	double step_B;		/* B one step's three events take */
	double lo_B, hi_B;	/* B, the trace at steps_lo, steps_hi */
};
/* The requests of job j's serving run, made once (drawn, or read from
 * serving.trace, as serve_run would) so that the trace estimate and the
 * run share them: 0, -1 out of memory, -2 bad input (reported). Free with
 * serve_reqs_free (after serve_run_reqs took its requests, or not). */
int serve_reqs_new(const struct job_spec *j, struct serve_reqs **out,
		   struct diag *d);
void serve_reqs_free(struct serve_reqs *r);
/* The trace estimate of job j over requests r. */
void serve_trace_estimate(const struct job_spec *j, const struct serve_reqs *r,
			  struct serve_trace_est *e);
void serve_result_release(struct serve_result *r);

/*
 * The memory the serving simulation of job j holds, in B, before it runs
 * (`run --max-memory`): each request's state (struct serve_req), its four
 * latency samples (8 B each) and its slots in an instance's waiting
 * queue (a ring buffer that doubles: up to 2 x 8 B), for the
 * serving.requests drawn or the lines of serving.trace (counted, an upper
 * bound on its rows; the array doubles while it is read, so the state
 * counts twice). Measured: 230 B of RSS a request (200,000 offline
 * requests of serve-llama3-70b-h100 over 1,000), estimate 208 B. *n gets
 * the requests counted; 0 B when the trace cannot be read (serve_run
 * reports that).
 */
double serve_memory_B(const struct job_spec *j, int64_t *n);

/* The result as the JSON object `llmsim run --json` prints (serving.*,
 * memory.*, and the training contract's keys). NULL when out of memory. */
struct cJSON *serve_to_json(const struct job_spec *j,
			    const struct serve_result *r);

/* A readable summary with units. */
void serve_print(FILE *out, const struct job_spec *j,
		 const struct serve_result *r);

#endif
