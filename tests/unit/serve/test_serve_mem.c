/*
 * test_serve_mem.c - the serving instance's memory: draft weights and KV,
 * the vision encoder, the logits estimate, TensorRT-LLM's KV sizing and
 * its communication memory outside torch (split from test_serve.c).
 *
 * Jobs are YAML files of tests/data/serve and results/reference over the
 * shipped presets (the tests run from the repository root).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../config/config_testutil.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "serve/serve_impl.h"
#include "../models/fixture.h"
#include "serve_fixture.h"

/* The memory of the job's serving instance (the decode pool's). */
static void mem_of(const char *path, const char *const *sets, size_t n,
		   struct infer_mem *out)
{
	struct serve_fixture f;

	serve_fixture_open(&f, path, sets, n);
	*out = f.r.mem;
	serve_fixture_close(&f);
}

/*
 * The draft's weights and KV are in the instance's memory
 * (infer_mem.c's header).
 *
 * Llama 3 8B + EAGLE, tp 1, bf16 (h 4096, 32 heads, 8 KV heads of 128,
 * f 14336): one dense layer, attention 4096 (32 + 2 x 8) 128 + 32 x 128 x
 * 4096 = 41,943,040 and MLP 3 x 4096 x 14336 = 176,160,768 parameters,
 * 218,103,808 x 2 B + two norms 2 x 4096 x 2 B = 436,224,000 B; fc 2 x 4096
 * x 4096 = 33,554,432 parameters, 67,108,864 B: 503,332,864 B and
 * 251,658,240 parameters (the embedding and head the target's). KV of a
 * token: the target's 32 layers x 2 x 8 x 128 x 2 B = 131,072 B plus one
 * layer's 4,096 B = 135,168 B.
 *   SGLang (static): the target's pool as without the draft (its tokens
 *   the same), the draft's pool of as many tokens on top: KV bytes x
 *   135,168 / 131,072.
 *   vLLM (total): the draft's weights come out of the KV (activations and
 *   workspace unchanged): KV bytes 503,332,864 fewer, over 135,168 B a
 *   token, in whole pages of 16.
 *
 * DeepSeek-V3 MTP (h 7168; MLA q_lora 1536, kv_lora 512, rope 64, nope
 * 128, v 128, 128 heads; 256 experts of 2048, one shared; FP8 weights,
 * 1 B, the router and the norms and eh_proj bf16), one MoE layer:
 *   attention DP 8 (attention tp 1), ep 8: attention 7168 x 1536 + 1536 x
 *   128 x 192 + 7168 x 576 + 512 x 128 x 256 + 128 x 128 x 7168 =
 *   187,105,280; router 7168 x 256 = 1,835,008; shared expert 3 x 7168 x
 *   2048 = 44,040,192; 32 local experts x 44,040,192 = 1,409,286,144;
 *   eh_proj 2 x 7168 x 7168 = 102,760,448: 1,745,027,072 parameters;
 *   bytes 187,105,280 + 3,670,016 + 44,040,192 + 1,409,286,144 + two layer
 *   norms 28,672 + eh_proj 205,520,896 + enorm, hnorm, shared_head.norm
 *   3 x 7168 x 2 = 43,008: 1,849,694,208 B (~1.8 GB a GPU; the whole
 *   module 11.6B parameters without the shared embedding and head).
 *   tp 8, ep 8: attention (48,758,784 + 8 x 4,128,768 (kv_a replicated) +
 *   16,777,216 + 117,440,512) / 8 = 27,000,832; shared expert / 8 =
 *   5,505,024; router, experts and eh_proj as above: bytes 27,000,832 +
 *   3,670,016 + 5,505,024 + 1,409,286,144 + 28,672 + 205,520,896 + 43,008
 *   = 1,651,054,592 B.
 *   KV of a token: (512 + 64) x 1 B (FP8) for the one MTP layer.
 */
Test(serve, draft_memory_in_the_instance)
{
	const char *eagle_sgl[] = {"serving.requests=2"};
	const char *none_sgl[] = {"serving.requests=2",
				  "serving.speculative.method=none"};
	const char *eagle_vllm[] = {"serving.requests=2",
				    "serving.engine=vllm"};
	const char *none_vllm[] = {"serving.requests=2", "serving.engine=vllm",
				   "serving.speculative.method=none"};
	const char *mtp[] = {"serving.requests=2"};
	const char *mtp_tp8[] = {"serving.requests=2", "parallelism.tp=8",
				 "parallelism.dp=1",
				 "parallelism.attention_dp=false"};
	const char *l8 = "workloads/jobs/serve-llama3-8b-eagle-h100.yaml";
	const char *v3 = "workloads/jobs/serve-deepseek-v3-h200.yaml";
	struct infer_mem m, m0;
	double tokens;

	mem_of(l8, eagle_sgl, 1, &m);
	mem_of(l8, none_sgl, 2, &m0);
	cr_assert_float_eq(m.draft_weights_B, 503332864.0, 0.5);
	cr_assert_float_eq(m.weights_B - m0.weights_B, 503332864.0, 0.5);
	cr_assert_float_eq(m.params - m0.params, 251658240.0, 0.5);
	cr_assert_float_eq(m0.kv_token_B, 131072, 0);
	cr_assert_float_eq(m.draft_kv_token_B, 4096, 0);
	cr_assert_float_eq(m.kv_token_B, 135168, 0);
	cr_assert_float_eq(m.kv_tokens, m0.kv_tokens, 0);
	cr_assert_float_eq(m.kv_cache_B, m0.kv_cache_B * 135168 / 131072,
			   1e-9 * m.kv_cache_B);
	cr_assert_float_eq(m0.draft_weights_B, 0, 0);

	mem_of(l8, eagle_vllm, 2, &m);
	mem_of(l8, none_vllm, 3, &m0);
	cr_assert_float_eq(m.activations_B, m0.activations_B, 0);
	cr_assert_float_eq(m0.kv_cache_B - m.kv_cache_B, 503332864.0, 1);
	tokens = floor(m.kv_cache_B / 135168 / 16) * 16;
	cr_assert_float_eq(m.kv_tokens, tokens, 0);
	cr_assert(m.kv_tokens < m0.kv_tokens);

	mem_of(v3, mtp, 1, &m);
	cr_assert_float_eq(m.draft_weights_B, 1849694208.0, 0.5);
	cr_assert_float_eq(m.draft_kv_token_B, 576, 0);
	cr_assert_float_eq(m.kv_token_B, 61 * 576 + 576, 0);
	mem_of(v3, mtp_tp8, 4, &m);
	cr_assert_float_eq(m.draft_weights_B, 1651054592.0, 0.5);
	cr_assert_float_eq(m.draft_kv_token_B, 576, 0);
}

/*
 * A multimodal checkpoint's vision encoder held in GPU memory (engine
 * vision_encoder; infer_mem.c's header), Llama 4 Maverick FP8 on 8 H100
 * with attention DP under TensorRT-LLM (the inference case at 1000/1000).
 * vision_params 871,932,416 (the model preset's count); the H100's
 * capacity less its usable memory, a CUDA context: 81,559 - 80,535 MiB =
 * 1,073,741,824 B; the engine's workspace 2 GiB plus its communication
 * memory at g 8, 487,211,008 B (trtllm_comm_memory_outside_torch below):
 * 2,634,694,656 B; memory rule free,
 * fraction 0.95: KV = 0.95 (C_u - M - A - X - V).
 *   front_end, 4 B (TensorRT-LLM 1.0's fp32 encoder in the LLM process):
 *   on GPU 0, V = 871,932,416 x 4 + 1,073,741,824 = 3,487,729,664 +
 *   1,073,741,824 = 4,561,471,488 B; KV 0.95 V = 4,333,397,913.6 B less
 *   than without it; workspace reported 2,634,694,656 + V =
 *   7,196,166,144 B. Rank 1 of a pipeline would hold none of it.
 *   workers, 4 B: V = 3,487,729,664 B on every GPU, KV 0.95 V =
 *   3,313,343,180.8 B less; workers, 2 B (bf16): V = 1,743,864,832 B,
 *   KV 1,656,671,590.4 B less.
 * The activations (max_num_tokens from trtllm-bench's sizing, which sees
 * the device's whole memory) do not move. Tokens: whole pages of 32 of
 * 48 x 2 x 8 x 128 x 1 B = 98,304 B.
 */
Test(serve, vision_encoder_memory)
{
	const char *job = "results/reference/inference/"
			  "I-TRTLLM-H100-TP8-LLAMA4-MAVERICK-FP8-1000-1000.yaml";
	const char *none[] = {"serving.requests=2",
			      "serving.engine.vision_encoder=none"};
	const char *front[] = {"serving.requests=2"};
	const char *work4[] = {"serving.requests=2",
			       "serving.engine.vision_encoder=workers"};
	const char *work2[] = {"serving.requests=2",
			       "serving.engine.vision_encoder=workers",
			       "serving.engine.vision_encoder_B=2"};
	struct infer_mem m0, m;
	struct arena a;
	struct job_spec *j;

	mem_of(job, none, 2, &m0);

	mem_of(job, front, 1, &m);
	cr_assert_float_eq(m0.kv_cache_B - m.kv_cache_B, 4333397913.6, 1);
	cr_assert_float_eq(m.workspace_B, 7196166144.0, 0.5);
	cr_assert_float_eq(m.activations_B, m0.activations_B, 0);
	cr_assert_float_eq(m.weights_B, m0.weights_B, 0);
	cr_assert_float_eq(m.kv_token_B, 98304, 0);
	cr_assert_float_eq(m.kv_tokens,
			   floor(m.kv_cache_B / 98304 / 32) * 32, 0);
	cr_assert(m.kv_tokens < m0.kv_tokens);

	mem_of(job, work4, 2, &m);
	cr_assert_float_eq(m0.kv_cache_B - m.kv_cache_B, 3313343180.8, 1);
	/* 2,634,694,656 + 3,487,729,664 */
	cr_assert_float_eq(m.workspace_B, 6122424320.0, 0.5);
	mem_of(job, work2, 3, &m);
	cr_assert_float_eq(m0.kv_cache_B - m.kv_cache_B, 1656671590.4, 1);

	/* by rank: the front end's GPU is the instance's first */
	arena_init(&a);
	j = fixture_load_job(&a, job, front, 1);
	cr_assert_float_eq(infer_mem_vision_B(j, j->serving.engine, 0),
			   4561471488.0, 0.5);
	cr_assert_float_eq(infer_mem_vision_B(j, j->serving.engine, 1), 0, 0);
	arena_release(&a);
	/* a text-only model holds none, whatever the engine says */
	arena_init(&a);
	j = fixture_load_job(&a, "workloads/jobs/serve-llama3-8b-eagle-h100.yaml", NULL,
		 0);
	cr_assert_float_eq(infer_mem_vision_B(j, j->serving.engine, 0), 0, 0);
	arena_release(&a);
}

/*
 * The logits rows of the KV sizing (engine estimate_logits; infer_mem.c's
 * header). TensorRT-LLM's estimation runs dummy context requests of
 * min(T, seq - 1) tokens filling T = max_num_tokens and keeps each one's
 * last token before the LM head. Maverick FP8, 8 H100, 1000/1000:
 * trtllm-bench's sizing gives max_batch_size 1536, max_num_tokens 2816
 * (infer_prog.c trtllm_auto_size); seq = 2000: ceil(2816 / 1999) = 2
 * rows, against 1536 under max_seqs. A row of logits is V (2 + 4) =
 * 202,048 x 6 = 1,212,288 B: the activations 1534 x 1,212,288 =
 * 1,859,649,792 B lower, the KV cache 0.95 of it, 1,766,667,302.4 B,
 * larger (rule free).
 */
Test(serve, estimate_logits_dry_run)
{
	const char *job = "results/reference/inference/"
			  "I-TRTLLM-H100-TP8-LLAMA4-MAVERICK-FP8-1000-1000.yaml";
	const char *dry[] = {"serving.requests=2"};
	const char *maxs[] = {"serving.requests=2",
			      "serving.engine.estimate_logits=max_seqs"};
	const char *mml[] = {"serving.requests=2",
			     "serving.max_model_len=4096"};
	struct infer_mem m0, m, m1;
	struct arena a;
	struct job_spec *j;
	const struct engine_spec *e;

	mem_of(job, maxs, 2, &m0);
	mem_of(job, dry, 1, &m);
	cr_assert_float_eq(m0.activations_B - m.activations_B,
			   1859649792.0, 1);
	cr_assert_float_eq(m.kv_cache_B - m0.kv_cache_B, 1766667302.4, 1);
	cr_assert_float_eq(m.weights_B, m0.weights_B, 0);
	/* serving.max_model_len 4096 is the dry run's max_seq_len: requests
	 * of min(2816, 4095) = 2816 tokens, ceil(2816 / 2816) = 1 row of
	 * logits, one row (1,212,288 B) below the 2 of 2000-token ones, the
	 * KV cache 0.95 of it larger (1,151,673.6 B) */
	mem_of(job, mml, 2, &m1);
	cr_assert_float_eq(m.activations_B - m1.activations_B, 1212288.0, 1);
	cr_assert_float_eq(m1.kv_cache_B - m.kv_cache_B, 1151673.6, 1);

	arena_init(&a);
	j = fixture_load_job(&a, job, dry, 1);
	e = j->serving.engine;
	cr_assert_eq(e->estimate_logits, ENGINE_ELOG_DRY_RUN);
	cr_assert_float_eq(infer_mem_logit_rows(e, 2816, 1536, 2000), 2, 0);
	/* a prompt longer than T: one request of T tokens */
	cr_assert_float_eq(infer_mem_logit_rows(e, 2816, 1536, 5500), 1, 0);
	/* sequences of 1 token: T requests of one */
	cr_assert_float_eq(infer_mem_logit_rows(e, 8, 1536, 1), 8, 0);
	/* length not known: max_seqs */
	cr_assert_float_eq(infer_mem_logit_rows(e, 2816, 1536, 0), 1536, 0);
	arena_release(&a);
}

/*
 * TensorRT-LLM's KV sizing on one H100 against a published run
 * (results/heldout/trtllm-kv-capacity, NVIDIA/TensorRT-LLM issue #6294:
 * trtllm-bench 0.20.0, Llama 3.1 8B FP8, FP8 KV cache, fraction 0.8,
 * max_num_tokens 23552, max_seq_len 157: 860,320 KV tokens). Rule free:
 * KV = 0.8 (C_u - M - A - X).
 *   C_u = 80,535 MiB = 84,447,068,160 B (h100.yaml hbm_usable);
 *   M = 32 x 218,103,808 linear parameters in FP8 (q 4096^2, k and v
 *     4096 x 1024, o 4096^2, gate/up/down 3 x 4096 x 14,336) =
 *     6,979,321,856 B + the norms in bf16, 32 x 2 x 4096 x 2 + 4096 x 2 =
 *     532,480 B + the embedding and LM head in bf16, 2 x 128,256 x 4096 x
 *     2 = 2,101,346,304 B: 9,081,200,640 B (the log's "8.46 GB", GiB);
 *   A = 23,552 x (2 x 4096 + max(4096 + 2 x 1024, 2 x 14,336 + 14,336))
 *     x 2 = 2,411,724,800 B + logits of ceil(23,552 / 156) = 151 rows x
 *     128,256 x (2 + 4) = 116,199,936 B: 2,527,924,736 B;
 *   X = the trtllm preset's workspace, 2 GiB = 2,147,483,648 B (one GPU:
 *     no communication memory).
 * KV = 0.8 x 70,690,459,136 = 56,552,367,308.8 B; a token 32 x 2 x 8 x
 * 128 x 1 = 65,536 B: floor(862,920.28 / 32) x 32 = 862,912 tokens,
 * 0.30 % above the measured 860,320 (the 1 GiB workspace assumed before
 * gave 876,000, 1.82 % above).
 */
Test(serve, trtllm_kv_sizing_issue6294)
{
	const char *job = "results/heldout/trtllm-kv-capacity/"
			  "K-H100-TP1-L8B-FP8-ISSUE6294.yaml";
	struct infer_mem m;

	mem_of(job, NULL, 0, &m);
	cr_assert_float_eq(m.usable_B, 84447068160.0, 0.5);
	cr_assert_float_eq(m.weights_B, 9081200640.0, 0.5);
	cr_assert_float_eq(m.activations_B, 2527924736.0, 0.5);
	cr_assert_float_eq(m.workspace_B, 2147483648.0, 0.5);
	cr_assert_float_eq(m.kv_cache_B, 56552367308.8, 1);
	cr_assert_float_eq(m.kv_token_B, 65536, 0);
	cr_assert_float_eq(m.kv_tokens, 862912, 0);
	cr_assert(fabs(m.kv_tokens / 860320.0 - 1) < 0.005);
}

/*
 * Communication memory outside torch (infer_mem_comm_B; trtllm.yaml's
 * derivation). Maverick FP8 on 8 H100 under attention DP, g = tp 1 x dp 8
 * = 8: NCCL ring 24 channels x 9,633,792 B = 231,211,008 B, where
 * 9,633,792 = LL 8 x 512 x 8 x 16 (524,288) + LL128 120 x 640 x 8 x 8
 * (4,915,200) + Simple 4 MiB (4,194,304); the custom all-reduce's IPC
 * buffers 4 x 8 x 8,000,000 = 256,000,000 B; 487,211,008 B in all. The
 * free rule's KV cache is 0.95 of it smaller than without them:
 * 0.95 x 487,211,008 = 462,850,457.6 B, and the workspace that much
 * larger (1 GiB + 487,211,008 = 1,560,952,832 B). Without custom
 * all-reduce the ring alone; at g 2 (tp 2 x dp 4, no attention DP: four
 * instances of 2) the fusion workspace is 16,000,000 B: 231,211,008 +
 * 4 x 2 x 16,000,000 = 359,211,008 B; instances of one GPU (tp 1 x dp 8,
 * no attention DP) nothing.
 */
Test(serve, trtllm_comm_memory_outside_torch)
{
	const char *job = "results/reference/inference/"
			  "I-TRTLLM-H100-TP8-LLAMA4-MAVERICK-FP8-1000-1000.yaml";
	const char *with[] = {"serving.requests=2"};
	const char *none[] = {"serving.requests=2",
			      "serving.engine.nccl_channels=0",
			      "serving.engine.allreduce_ipc_copies=0"};
	const char *noar[] = {"serving.engine.custom_allreduce=false"};
	const char *tp2[] = {"parallelism.tp=2", "parallelism.dp=4",
			     "parallelism.ep=1",
			     "parallelism.attention_dp=false"};
	const char *one[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=1",
			     "parallelism.attention_dp=false"};
	struct infer_mem m0, m;
	struct arena a;
	struct job_spec *j;

	arena_init(&a);
	j = fixture_load_job(&a, job, NULL, 0);
	cr_assert_float_eq(infer_mem_comm_B(j, j->serving.engine),
			   487211008.0, 0.5);
	arena_release(&a);
	arena_init(&a);
	j = fixture_load_job(&a, job, noar, 1);
	cr_assert_float_eq(infer_mem_comm_B(j, j->serving.engine),
			   231211008.0, 0.5);
	arena_release(&a);
	arena_init(&a);
	j = fixture_load_job(&a, job, tp2, 4);
	cr_assert_float_eq(infer_mem_comm_B(j, j->serving.engine),
			   359211008.0, 0.5);
	arena_release(&a);
	arena_init(&a);
	j = fixture_load_job(&a, job, one, 4);
	cr_assert_float_eq(infer_mem_comm_B(j, j->serving.engine), 0, 0);
	arena_release(&a);

	mem_of(job, none, 3, &m0);
	mem_of(job, with, 1, &m);
	cr_assert_float_eq(m0.kv_cache_B - m.kv_cache_B, 462850457.6, 1);
	cr_assert_float_eq(m.workspace_B - m0.workspace_B, 487211008.0, 0.5);
	cr_assert_float_eq(m.weights_B, m0.weights_B, 0);
}

/*
 * The pool's fraction is memory_fraction, the sizing's auto_size_fraction
 * (infer_prog.c trtllm_auto_size): the developer-guide DeepSeek-R1 job on
 * 8 H200 (pool 0.9, sizing 0.95: its llm_options' kv_cache_config replaces
 * trtllm-bench's). TensorRT-LLM's rule (memory_rule free) gives the KV
 * the fraction of what the weights and the dry run's activations leave;
 * with the sizing held at 0.95 the activations (max_num_tokens) do not
 * move, so the pool at 0.95 is the pool at 0.9 times 0.95 / 0.9, and its
 * tokens whole pages of 32 of 61 x 576 x 1 B = 35,136 B (FP8 latent).
 */
Test(serve, trtllm_pool_fraction_is_not_the_sizing_fraction)
{
	const char *job = "results/reference/inference/"
			  "I-TRTLLMDG-H200-DEP8-DSR1-FP8-1024-1024.yaml";
	const char *as_run[] = {"serving.requests=2"};
	const char *pool95[] = {"serving.requests=2",
				"serving.engine.memory_fraction=0.95"};
	struct infer_mem m90, m95;

	mem_of(job, as_run, 1, &m90);
	mem_of(job, pool95, 2, &m95);
	cr_assert_float_eq(m95.activations_B, m90.activations_B, 0);
	cr_assert_float_eq(m95.weights_B, m90.weights_B, 0);
	cr_assert_float_eq(m95.kv_cache_B, m90.kv_cache_B * 0.95 / 0.9,
			   1e-9 * m95.kv_cache_B);
	cr_assert_float_eq(m90.kv_token_B, 35136, 0);
	cr_assert_float_eq(m90.kv_tokens,
			   floor(m90.kv_cache_B / 35136 / 32) * 32, 0);
}
