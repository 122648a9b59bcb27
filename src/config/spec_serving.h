/*
 * spec_serving.h - the `serving` section of a job: what an inference step
 * or a serving run computes (dtypes, engine, batch, request stream,
 * speculative decoding, prefill/decode pools, SLO).
 *
 * phase prefill / decode (one engine step) read engine, dtypes, batch,
 * input_len (prefill tokens per sequence) and context_len (tokens already
 * in the KV cache); phase serving reads the request stream. See
 * docs/serving.md for the contract and the models behind it.
 *
 * Depends on schema.h, spec_engine.h, spec_model.h.
 */
#ifndef LLMSIM_CONFIG_SPEC_SERVING_H
#define LLMSIM_CONFIG_SPEC_SERVING_H

#include <stdint.h>

#include "schema.h"
#include "spec_engine.h"
#include "spec_model.h"

/* How request lengths are drawn (GSL, seeded from serving.seed). */
enum len_dist {
	LEN_FIXED,		/* always mean */
	LEN_NORMAL,		/* mean, stddev */
	LEN_LOGNORMAL,		/* of that mean and stddev (not of the log) */
	LEN_UNIFORM,		/* between min and max */
	LEN_EXPONENTIAL,	/* of that mean */
	LEN_DIST_COUNT
};

enum spec_method {
	SPEC_NONE,
	SPEC_DRAFT,		/* a separate draft model */
	SPEC_MTP,		/* multi-token-prediction layers of the model */
	SPEC_EAGLE,		/* EAGLE-style draft head (one layer) */
	SPEC_METHOD_COUNT
};

enum kv_transfer_path {
	KV_VIA_SCALE_OUT,	/* RDMA between nodes (RoCE / InfiniBand) */
	KV_VIA_SCALE_UP,	/* within one scale-up domain (NVLink, xGMI) */
	KV_VIA_COUNT
};

extern const char *const len_dist_names[];
extern const char *const spec_method_names[];
extern const char *const kv_transfer_names[];

/* A request length: fixed, or drawn and rounded, clamped to [min, max]. */
struct len_spec {
	int dist;		/* enum len_dist */
	double mean;		/* tokens */
	double stddev;		/* tokens */
	int64_t min;		/* tokens, at least 1 */
	int64_t max;		/* tokens; 0 = no bound */
};

struct speculative_spec {
	int method;			/* enum spec_method */
	int64_t tokens;			/* draft tokens proposed per step (k) */
	double acceptance_rate;		/* probability each draft token is accepted,
					 * given the ones before it were */
	double acceptance_length;	/* or: mean tokens per verify step, bonus
					 * token included (EAGLE papers' tau) */
	const struct model_spec *draft_model;	/* SPEC_DRAFT */
	int64_t draft_layers;		/* layers of an MTP/EAGLE head */
};

/* One pool of a disaggregated deployment. */
struct pool_spec {
	int64_t instances;		/* engine instances in the pool */
	int64_t tp;			/* per instance */
	int64_t pp;
	int64_t ep;
	int attention_dp;
};

struct disagg_spec {
	int enabled;
	struct pool_spec prefill;
	struct pool_spec decode;
	int transfer;			/* enum kv_transfer_path */
	int layerwise;			/* KV sent layer by layer during the prefill */
};

struct slo_spec {
	double ttft_p99_s;		/* s; 0 = none */
	double tpot_p99_s;		/* s; 0 = none */
};

struct serving_spec {
	const struct engine_spec *engine;
	int dtype;			/* enum dtype of the weights */
	int activation_dtype;		/* enum dtype of GEMM inputs; -1 = derived */
	int kv_dtype;			/* enum dtype of the KV cache */
	int64_t requests;		/* requests to simulate (no trace) */
	struct len_spec input_len;	/* prompt tokens */
	struct len_spec output_len;	/* generated tokens */
	double arrival_rate;		/* requests/s, Poisson; infinity = offline */
	const char *trace;		/* CSV of arrival_s,input_len,output_len; NULL = drawn */
	int64_t seed;			/* GSL mt19937 seed */
	int64_t max_num_seqs;		/* 0 = the engine's */
	int64_t max_num_batched_tokens;	/* 0 = the engine's */
	int64_t max_model_len;		/* tokens, prompt + output of a request
					 * at most; 0 = the model's
					 * max_position_embeddings */
	int chunked_prefill;		/* -1 = the engine's */
	double prefix_cache_hit_rate;	/* fraction of a prompt found cached */
	int greedy;			/* requests sample greedily (temperature 0) */
	int64_t batch;			/* prefill/decode step: sequences */
	int64_t context_len;		/* prefill/decode step: cached tokens per sequence */
	struct speculative_spec speculative;
	struct disagg_spec disaggregated;
	struct slo_spec slo;
	/* Where the section was written (set by its check), for errors the
	 * simulation finds later (a KV cache too small for one sequence). */
	const char *file;		/* the job file (or "--set") */
	int line, col;
	const char *trace_from;		/* the file that named the trace: a
					 * relative trace path is relative to it */
};

extern const struct schema serving_schema;

#endif
