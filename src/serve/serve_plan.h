/*
 * serve_plan.h - prefill:decode ratios for a latency target: the search
 * the planner (issue 12) calls for disaggregated serving, and `llmsim
 * plan --pd-ratio` until the planner lands.
 *
 * For every split of the GPUs into prefill and decode instances (each of
 * the layout the job's serving.disaggregated pools give), the largest
 * Poisson arrival rate at which the serving simulation meets the SLO
 * (serving.slo: p99 TTFT and p99 TPOT), found by bisection; the split
 * that serves the most requests per GPU wins (goodput). The colocated
 * deployment (every GPU in instances of the job's own layout) is
 * searched too, as the baseline a split must beat.
 *
 * Depends on serve.h.
 */
#ifndef LLMSIM_SERVE_SERVE_PLAN_H
#define LLMSIM_SERVE_SERVE_PLAN_H

#include <stdint.h>

struct job_spec;
struct diag;

struct serve_plan_opts {
	int64_t gpus;			/* GPUs to split; 0 = the system's */
	double rate_lo, rate_hi;	/* requests/s bracket; 0 = derived */
	int iterations;			/* bisection steps; 0 = 12 */
};

struct serve_plan_point {
	int64_t prefill_instances;	/* 0: colocated (the baseline) */
	int64_t decode_instances;	/* colocated: its instances */
	int64_t gpus;			/* GPUs it uses */
	double max_rate;		/* requests/s meeting the SLO; 0 = none */
	double rate_per_gpu;		/* max_rate / gpus */
	double output_tokens_per_s;	/* at max_rate */
	double ttft_p99_s;		/* at max_rate */
	double tpot_p99_s;		/* at max_rate */
};

/*
 * Search job j (phase serving, with serving.slo and the pools' layouts in
 * serving.disaggregated) over the splits. *out (mem_alloc'd, caller
 * frees) gets one point per split, the colocated baseline first (left
 * out, with a note on d, when one instance of the job's layout does not
 * fit in the GPUs), the rest by rate_per_gpu, best first. Returns 0, -1
 * (runtime), -2 (bad input, reported: no SLO, no deployment fits).
 */
int serve_plan_ratio(const struct job_spec *j, const struct serve_plan_opts *o,
		     struct serve_plan_point **out, int *n, struct diag *d);

#endif
