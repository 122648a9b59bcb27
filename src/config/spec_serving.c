/*
 * spec_serving.c - the schema of a job's `serving` section.
 */
#include "spec_serving.h"

#include <math.h>
#include <stddef.h>

#include "base/diag.h"
#include "cnode.h"
#include "spec_gpu.h"

const char *const len_dist_names[] = {"fixed", "normal", "lognormal",
				      "uniform", "exponential", NULL};
const char *const spec_method_names[] = {"none", "draft", "mtp", "eagle",
					 NULL};
const char *const kv_transfer_names[] = {"scale_out", "scale_up", NULL};

#define LOFF(m) offsetof(struct len_spec, m)

static const struct schema_field len_fields[] = {
	{ .key = "dist", .type = ST_ENUM, .offset = LOFF(dist),
	  .values = len_dist_names, .def = "fixed",
	  .help = "fixed, normal, lognormal, uniform (min..max) or exponential" },
	{ .key = "mean", .type = ST_NUM, .offset = LOFF(mean), .min = 0,
	  .max = 1e8, .def = "0", .help = "tokens (the fixed length)" },
	{ .key = "stddev", .type = ST_NUM, .offset = LOFF(stddev), .min = 0,
	  .max = 1e8, .def = "0", .help = "tokens (normal, lognormal)" },
	{ .key = "min", .type = ST_INT, .offset = LOFF(min), .min = 1,
	  .max = 1e8, .def = "1", .help = "tokens, at least 1; draws below are "
	  "raised to it" },
	{ .key = "max", .type = ST_INT, .offset = LOFF(max), .min = 0,
	  .max = 1e8, .def = "0",
	  .help = "tokens; draws above are cut to it (0 = no bound)" },
};

static int len_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct len_spec *l = obj;

	if (l->dist == LEN_UNIFORM) {
		if (l->max < l->min || l->max == 0) {
			const struct cnode *x = node ? cnode_get(node, "max") :
						NULL;

			cnode_error(d, x ? x : node, "a uniform length needs max >= "
				    "min > 0 (got min %lld, max %lld)",
				    (long long)l->min, (long long)l->max);
			return -1;
		}
		if (l->mean == 0)
			l->mean = 0.5 * (double)(l->min + l->max);
	}
	if (l->max > 0 && l->max < l->min) {
		cnode_error(d, node, "max %lld is below min %lld",
			    (long long)l->max, (long long)l->min);
		return -1;
	}
	/* ln(mean) and the exponential's rate need mean > 0 (mean 0 drew
	 * NaN, which became a 1-token length below min) */
	if ((l->dist == LEN_LOGNORMAL || l->dist == LEN_EXPONENTIAL) &&
	    !(l->mean > 0)) {
		const struct cnode *m = node ? cnode_get(node, "mean") : NULL;

		cnode_error(d, m ? m : node, "%s %s length needs mean > 0",
			    l->dist == LEN_EXPONENTIAL ? "an" : "a",
			    len_dist_names[l->dist]);
		return -1;
	}
	if ((l->dist == LEN_NORMAL || l->dist == LEN_LOGNORMAL) &&
	    !(l->stddev > 0)) {
		const struct cnode *sd = node ? cnode_get(node, "stddev") :
					 NULL;

		cnode_error(d, sd ? sd : node, "a %s length needs stddev > 0",
			    len_dist_names[l->dist]);
		return -1;
	}
	return 0;
}

static const struct schema len_schema = {
	.kind = "job.serving.length",
	.help = "tokens: a number, or {dist, mean, stddev, min, max}",
	.size = sizeof(struct len_spec),
	.fields = len_fields,
	.nfields = SCHEMA_COUNT(len_fields),
	.check = len_check,
	.scalar_key = "mean",
};

#define SOFF(m) offsetof(struct speculative_spec, m)

static const struct schema_field spec_fields[] = {
	{ .key = "method", .type = ST_ENUM, .offset = SOFF(method),
	  .values = spec_method_names, .def = "none",
	  .help = "none, draft (a draft model), mtp (the model's MTP layers), "
		  "eagle (an EAGLE head)" },
	{ .key = "tokens", .type = ST_INT, .offset = SOFF(tokens), .min = 1,
	  .max = 64, .def = "3", .help = "draft tokens proposed per step" },
	{ .key = "acceptance_rate", .type = ST_NUM,
	  .offset = SOFF(acceptance_rate), .min = 0, .max = 1, .def = "0",
	  .help = "probability a draft token is accepted given the earlier ones were" },
	{ .key = "acceptance_length", .type = ST_NUM,
	  .offset = SOFF(acceptance_length), .min = 0, .max = 65, .def = "0",
	  .help = "or: mean tokens per verify step, the bonus token included "
		  "(sets acceptance_rate)" },
	{ .key = "draft_model", .type = ST_REF, .offset = SOFF(draft_model),
	  .sub = &model_schema, .flags = SF_OPTIONAL,
	  .help = "method draft: the draft model (preset, path or mapping)" },
	{ .key = "draft_layers", .type = ST_INT, .offset = SOFF(draft_layers),
	  .min = 1, .max = 64, .def = "1",
	  .help = "mtp / eagle: transformer layers of the draft head" },
};

/* tau = (1 - a^(k+1)) / (1 - a), expected tokens per verify step under a
 * per-token acceptance a with k drafts (the bonus token included). */
static double tau_of(double a, double k)
{
	return a >= 1 ? k + 1 : (1 - pow(a, k + 1)) / (1 - a);
}

static int spec_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct speculative_spec *s = obj;
	double lo = 0, hi = 1, k = (double)s->tokens;
	int i;

	if (s->method == SPEC_NONE)
		return 0;
	if (s->method == SPEC_DRAFT && !s->draft_model) {
		cnode_error(d, node, "method draft needs 'draft_model'");
		return -1;
	}
	if (s->acceptance_length > 0) {
		if (s->acceptance_length < 1 || s->acceptance_length > k + 1) {
			cnode_error(d, node, "acceptance_length %g is outside "
				    "[1, tokens + 1 = %g]", s->acceptance_length,
				    k + 1);
			return -1;
		}
		for (i = 0; i < 200; i++) {	/* tau is increasing in a */
			double mid = 0.5 * (lo + hi);

			if (tau_of(mid, k) < s->acceptance_length)
				lo = mid;
			else
				hi = mid;
		}
		s->acceptance_rate = 0.5 * (lo + hi);
	}
	return 0;
}

static const struct schema spec_schema = {
	.kind = "job.serving.speculative",
	.help = "speculative decoding",
	.size = sizeof(struct speculative_spec),
	.fields = spec_fields,
	.nfields = SCHEMA_COUNT(spec_fields),
	.check = spec_check,
};

#define POFF(m) offsetof(struct pool_spec, m)

static const struct schema_field pool_fields[] = {
	{ .key = "instances", .type = ST_INT, .offset = POFF(instances),
	  .min = 1, .max = 1e6, .def = "1", .help = "engine instances in the pool" },
	{ .key = "tp", .type = ST_INT, .offset = POFF(tp), .min = 1,
	  .max = 1e5, .def = "1", .help = "GPUs per stage of an instance: tensor "
	  "parallel, or with attention_dp attention data-parallel ranks" },
	{ .key = "pp", .type = ST_INT, .offset = POFF(pp), .min = 1,
	  .max = 1e5, .def = "1", .help = "pipeline stages per instance" },
	{ .key = "ep", .type = ST_INT, .offset = POFF(ep), .min = 1,
	  .max = 1e5, .def = "1", .help = "expert parallel per instance" },
	{ .key = "attention_dp", .type = ST_BOOL, .offset = POFF(attention_dp),
	  .def = "false", .help = "attention data-parallel over the instance's GPUs" },
};

static const struct schema pool_schema = {
	.kind = "job.serving.pool",
	.help = "one pool of engine instances",
	.size = sizeof(struct pool_spec),
	.fields = pool_fields,
	.nfields = SCHEMA_COUNT(pool_fields),
};

#define DOFF(m) offsetof(struct disagg_spec, m)

static const struct schema_field disagg_fields[] = {
	{ .key = "enabled", .type = ST_BOOL, .offset = DOFF(enabled),
	  .def = "false", .help = "separate prefill and decode pools" },
	{ .key = "prefill", .type = ST_SECTION, .offset = DOFF(prefill),
	  .sub = &pool_schema, .help = "the prefill pool" },
	{ .key = "decode", .type = ST_SECTION, .offset = DOFF(decode),
	  .sub = &pool_schema, .help = "the decode pool" },
	{ .key = "transfer", .type = ST_ENUM, .offset = DOFF(transfer),
	  .values = kv_transfer_names, .def = "scale_out",
	  .help = "fabric the KV cache moves over: scale_out (RDMA) or scale_up" },
	{ .key = "layerwise", .type = ST_BOOL, .offset = DOFF(layerwise),
	  .def = "true",
	  .help = "KV sent layer by layer while the prefill runs (else after it)" },
};

static const struct schema disagg_schema = {
	.kind = "job.serving.disaggregated",
	.help = "prefill/decode disaggregation",
	.size = sizeof(struct disagg_spec),
	.fields = disagg_fields,
	.nfields = SCHEMA_COUNT(disagg_fields),
};

#define QOFF(m) offsetof(struct slo_spec, m)

static const struct schema_field slo_fields[] = {
	{ .key = "ttft_p99", .type = ST_TIME, .offset = QOFF(ttft_p99_s),
	  .max = 1e6, .def = "0 s", .help = "99th-percentile time to first token (0 = none)" },
	{ .key = "tpot_p99", .type = ST_TIME, .offset = QOFF(tpot_p99_s),
	  .max = 1e6, .def = "0 s", .help = "99th-percentile time per output token (0 = none)" },
};

static const struct schema slo_schema = {
	.kind = "job.serving.slo",
	.help = "service-level objective",
	.size = sizeof(struct slo_spec),
	.fields = slo_fields,
	.nfields = SCHEMA_COUNT(slo_fields),
};

#define OFF(m) offsetof(struct serving_spec, m)

static const struct schema_field serving_fields[] = {
	{ .key = "engine", .type = ST_REF, .offset = OFF(engine),
	  .sub = &engine_schema, .flags = SF_OPTIONAL,
	  .help = "serving engine preset (vllm, sglang, trtllm), path or "
		  "mapping (required for the inference phases)" },
	{ .key = "dtype", .type = ST_ENUM, .offset = OFF(dtype),
	  .values = dtype_names, .def = "bf16",
	  .help = "weights' dtype (fp8, nvfp4, mxfp4: quantized, block scales included)" },
	{ .key = "activation_dtype", .type = ST_ENUM,
	  .offset = OFF(activation_dtype), .values = dtype_names,
	  .flags = SF_OPTIONAL,
	  .help = "GEMM inputs' dtype (default: dtype where the GPU has its "
		  "matrix rate, else bf16: weight-only quantization)" },
	{ .key = "kv_dtype", .type = ST_ENUM, .offset = OFF(kv_dtype),
	  .values = dtype_names, .def = "bf16", .help = "KV cache dtype" },
	{ .key = "requests", .type = ST_INT, .offset = OFF(requests), .min = 1,
	  .max = 1e8, .def = "1000", .help = "requests to simulate (without a trace)" },
	{ .key = "input_len", .type = ST_SECTION, .offset = OFF(input_len),
	  .sub = &len_schema, .def = "1024",
	  .help = "prompt tokens: a number or {dist, mean, stddev, min, max}" },
	{ .key = "output_len", .type = ST_SECTION, .offset = OFF(output_len),
	  .sub = &len_schema, .def = "128",
	  .help = "generated tokens: a number or {dist, mean, stddev, min, max}" },
	{ .key = "arrival_rate", .type = ST_NUM, .offset = OFF(arrival_rate),
	  .min = 0, .max = 1e9, .def = "inf",
	  .flags = SF_MIN_EXCL | SF_INF,
	  .help = "requests/s of a Poisson arrival process; inf: all at time 0 (offline)" },
	{ .key = "trace", .type = ST_STRING, .offset = OFF(trace),
	  .flags = SF_OPTIONAL,
	  .help = "CSV of requests (arrival_s,input_len,output_len), relative to the job file" },
	{ .key = "seed", .type = ST_INT, .offset = OFF(seed), .min = 0,
	  .max = 4294967295.0, .def = "1", .help = "random seed of the draws" },
	{ .key = "max_num_seqs", .type = ST_INT, .offset = OFF(max_num_seqs),
	  .min = 0, .max = 1e7, .def = "0",
	  .help = "sequences per engine step, at most (0 = the engine's)" },
	{ .key = "max_num_batched_tokens", .type = ST_INT,
	  .offset = OFF(max_num_batched_tokens), .min = 0, .max = 1e8,
	  .def = "0", .help = "tokens per engine step, at most (0 = the engine's)" },
	{ .key = "max_model_len", .type = ST_INT, .offset = OFF(max_model_len),
	  .min = 0, .max = 1e8, .def = "0",
	  .help = "tokens of a request's prompt + output, at most (vLLM "
		  "--max-model-len, TensorRT-LLM max_seq_len); the KV cache "
		  "must hold one such sequence (0 = the model's "
		  "max_position_embeddings)" },
	{ .key = "chunked_prefill", .type = ST_BOOL,
	  .offset = OFF(chunked_prefill), .flags = SF_OPTIONAL,
	  .help = "split prompts over steps (default: the engine's)" },
	{ .key = "prefix_cache_hit_rate", .type = ST_NUM,
	  .offset = OFF(prefix_cache_hit_rate), .min = 0, .max = 1, .def = "0",
	  .help = "fraction of each prompt found in the prefix cache" },
	{ .key = "greedy", .type = ST_BOOL, .offset = OFF(greedy),
	  .def = "false",
	  .help = "the requests sample greedily, temperature 0 (vllm bench "
		  "serve, MLPerf); false: temperature 1, top-p 1 (vllm bench "
		  "throughput and latency): the engine's "
		  "sampler_passes_greedy or sampler_passes" },
	{ .key = "batch", .type = ST_INT, .offset = OFF(batch), .min = 1,
	  .max = 1e7, .def = "1",
	  .help = "phase prefill/decode: sequences in the step" },
	{ .key = "context_len", .type = ST_INT, .offset = OFF(context_len),
	  .min = 0, .max = 1e8, .def = "0",
	  .help = "phase decode: tokens each sequence has in the KV cache; "
		  "prefill: cached prefix before the prompt" },
	{ .key = "speculative", .type = ST_SECTION, .offset = OFF(speculative),
	  .sub = &spec_schema, .help = "speculative decoding" },
	{ .key = "disaggregated", .type = ST_SECTION,
	  .offset = OFF(disaggregated), .sub = &disagg_schema,
	  .help = "separate prefill and decode pools" },
	{ .key = "slo", .type = ST_SECTION, .offset = OFF(slo),
	  .sub = &slo_schema, .help = "latency targets (plan)" },
};

/* At least one token of `what` (an error at the key, or the section). */
static int at_least_one(const struct len_spec *l, const char *key,
			const struct cnode *node, struct diag *d)
{
	const struct cnode *at = node ? cnode_get(node, key) : NULL;

	if (l->dist == LEN_FIXED ? l->mean >= 1 : (l->max == 0 || l->max >= 1))
		return 0;
	cnode_error(d, at ? at : node, "'serving.%s': expected at least 1 "
		    "token, got %g", key, l->dist == LEN_FIXED ? l->mean :
		    (double)l->max);
	return -1;
}

static int serving_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	struct serving_spec *s = obj;
	const struct cnode *t = node ? cnode_get(node, "trace") : NULL;
	int rc = 0;

	if (node) {
		s->file = node->file;
		s->line = node->line;
		s->col = node->col;
	}
	s->trace_from = t ? t->file : NULL;
	if (at_least_one(&s->input_len, "input_len", node, d) ||
	    at_least_one(&s->output_len, "output_len", node, d))
		rc = -1;
	return rc;
}

const struct schema serving_schema = {
	.kind = "job.serving",
	.help = "inference and serving settings",
	.size = sizeof(struct serving_spec),
	.fields = serving_fields,
	.nfields = SCHEMA_COUNT(serving_fields),
	.check = serving_check,
};
