/*
 * test_infer_engine.c - an inference engine's own step work: vLLM V0's
 * step-input broadcasts, sampler passes and graph-input copies, the host
 * time per step, sequence, TP metadata (vLLM V0), TP call and reply (vLLM
 * V1) and prompt token (TensorRT-LLM), vLLM ROCm's skinny GEMM, and the
 * range checks of those engine keys.
 *
 * Jobs are tests/data/serve's Llama 3 70B over the shipped presets (the
 * tests run from the repository root), varied by --set style overrides.
 * Split out of test_infer.c (round 17), tests unchanged.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "run/infer_run.h"

#include "fixture.h"

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

/* The step-input broadcasts of an embedding unit: their count and bytes. */
static int broadcasts(const char *const *sets, size_t n, double *bytes)
{
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_ops o;
	int i, k = 0;

	arena_init(&a);
	j = fixture_load_job(&a, L70, sets, n);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	infer_embed_ops(&d, &b, &o);
	for (i = 0; i < o.n; i++)
		if (strcmp(o.op[i].name, "input_broadcast") == 0) {
			cr_assert_eq(o.op[i].coll, COLL_BROADCAST);
			*bytes = o.op[i].coll_B;
			k++;
		}
	arena_release(&a);
	return k;
}

/*
 * vLLM V0 broadcasts a step's 9 GPU input tensors from the driver to the
 * other TP ranks (vllm-v0.yaml input_broadcasts): 9 library broadcasts
 * over the TP group before the embedding, 8 B x 4 tokens = 32 B each for
 * a decode of 4 sequences. None at tp 1, none under vLLM V1 (its workers
 * build their own inputs), and none on the decode steps of a multi-step
 * call after its first (charged none).
 */
Test(infer, v0_broadcasts_the_step_inputs)
{
	const char *v0[] = {"phase=decode", "serving.batch=4",
			    "serving.context_len=256", "serving.engine=vllm-v0"};
	const char *tp1[] = {"phase=decode", "serving.batch=4",
			     "serving.context_len=256", "serving.engine=vllm-v0",
			     "parallelism.tp=1", "system.gpus_per_node=1"};
	const char *v1[] = {"phase=decode", "serving.batch=4",
			    "serving.context_len=256", "serving.engine=vllm"};
	const char *ms[] = {"phase=decode", "serving.batch=4",
			    "serving.context_len=256", "serving.engine=vllm-v0",
			    "serving.engine.multi_step=10"};
	double bytes = 0;

	cr_assert_eq(broadcasts(v0, 4, &bytes), 9);
	cr_assert_float_eq(bytes, 32.0, 1e-12);
	cr_assert_eq(broadcasts(tp1, 6, &bytes), 0);
	cr_assert_eq(broadcasts(v1, 4, &bytes), 0);
	cr_assert_eq(broadcasts(ms, 5, &bytes), 0);
}

/* Tests' Llama 3 70B decoding 4 sequences of 256 cached tokens under
 * `engine` with one more setting `extra`, loaded into the arena a
 * (initialized here; the caller frees it), its dims and batch. */
static struct job_spec *decode4(struct arena *a, const char *engine,
				const char *extra, struct infer_dims *d,
				struct infer_batch *b)
{
	char eng[64];
	const char *sets[] = {"phase=decode", "serving.batch=4",
			      "serving.context_len=256", eng, extra};
	struct job_spec *j;

	snprintf(eng, sizeof(eng), "serving.engine=%s", engine);
	arena_init(a);
	j = fixture_load_job(a, L70, sets, 5);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, b);
	return j;
}

/* The head unit of a 4-sequence decode of tests' Llama 3 70B (TP 8,
 * vocabulary 128,256) under `engine`, its ops costed replaying a full
 * graph into *full and eagerly into *none; the graph-input copies into
 * *in; the GPU's kernel_launch - kernel_launch_graph into *launch_gap. */
static void v0_head(const char *engine, struct infer_ops *o,
		    struct infer_unit *full, struct infer_unit *none,
		    struct infer_ops *in, double *launch_gap)
{
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;

	/* the fixture's GPU is an H100: AMD's fork runs there only with
	 * its vendor lifted (the engines compared on one GPU) */
	j = decode4(&a, engine, "serving.engine.vendor=any", &d, &b);
	infer_head_ops(&d, &b, o);
	infer_cost(o, &d, &b, NULL, j->system->gpu, IGRAPH_FULL, full);
	infer_cost(o, &d, &b, NULL, j->system->gpu, IGRAPH_NONE, none);
	in->n = 0;
	infer_graph_input_ops(&d, &b, in);
	*launch_gap = j->system->gpu->kernel_launch_s -
		      j->system->gpu->kernel_launch_graph_s;
	arena_release(&a);
}

/*
 * A sampler of 1 "sample" kernel, `passes` sample_pass kernels each
 * reading and writing the 4 rows' fp32 logits of the padded vocabulary
 * (4 x 128,512 x 4 B = 2,056,192 B), and `copies` sampler copies of the
 * 4 rows' sampled ids (8 B x 4 = 32 B).
 */
static void check_sampler(const struct infer_ops *o, int passes, int copies)
{
	const struct infer_op *op;

	cr_assert_eq(fixture_infer_count(o, "sample"), 1);
	cr_assert_eq(fixture_infer_count(o, "sample_pass"), passes);
	cr_assert_eq(fixture_infer_count(o, "sampler_copy"), copies);
	op = fixture_infer_op(o, "sample_pass");
	cr_assert_float_eq(op->read_B, 2056192.0, 1e-6);
	cr_assert_float_eq(op->write_B, 2056192.0, 1e-6);
	op = fixture_infer_op(o, "sampler_copy");
	cr_assert_float_eq(op->write_B, 32.0, 1e-12);
}

/*
 * vLLM V0's Sampler with the benchmarks' temperature-1.0 sampling
 * (vllm-v0.yaml): after the cast, sampler_passes 7 kernels (1 "sample" +
 * 6 "sample_pass") over the 4 rows' fp32 logits of the padded vocabulary
 * (128,256 up to a multiple of 64 x tp 8: 128,512), 4 x 128,512 x 4 B =
 * 2,056,192 B read and written by each pass, and sampler_copies 8
 * launch-bound copies (8 B x 4 rows = 32 B each). Kernels of the unit:
 * final_norm, gather_sampled, lm_head, logits_fp32, sample, 6 passes, 8
 * copies = 19 (the logits gather is a collective). V0 launches them
 * after the graph but while the GPU runs it, so in a full graph they
 * cost replayed kernels (none eager) and eagerly 19 host launches: the
 * difference is 19 x (kernel_launch - kernel_launch_graph). Before each
 * replay 5 input copies (input_ids, positions, slot_mapping,
 * seq_lens_tensor, block_tables) of 8 B x 4 tokens = 32 B.
 * vLLM V1 on CUDA (vllm.yaml) runs the V1 sampler of rocm_v1_sampler
 * below (forward_cuda hands k = p = None to forward_native): 4
 * sample_pass, 1 copy, 10 kernels, no input copies. SGLang (sglang.yaml) keeps
 * the generic head too, but CudaGraphRunner.replay_prepare copies 5
 * inputs (input_ids, req_pool_indices, seq_lens, out_cache_loc,
 * positions) before each replay: 5 graph_input_copy of 32 B.
 */
Test(infer, v0_sampler_and_graph_input_copies)
{
	struct infer_ops o, in;
	struct infer_unit full, none;
	double gap;
	int i;

	v0_head("vllm-v0", &o, &full, &none, &in, &gap);
	check_sampler(&o, 6, 8);
	cr_assert_eq(full.eager, 0);
	cr_assert_eq(none.eager, 19);
	cr_assert_float_eq(none.kernel_s - full.kernel_s, 19 * gap, 1e-12);
	cr_assert_eq(in.n, 5);
	for (i = 0; i < in.n; i++) {
		cr_assert_str_eq(in.op[i].name, "graph_input_copy");
		cr_assert_float_eq(in.op[i].read_B, 32.0, 1e-12);
		cr_assert_float_eq(in.op[i].write_B, 32.0, 1e-12);
	}

	v0_head("vllm", &o, &full, &none, &in, &gap);
	check_sampler(&o, 4, 1);
	cr_assert_eq(none.eager, 10);
	cr_assert_eq(in.n, 0);

	v0_head("sglang", &o, &full, &none, &in, &gap);
	cr_assert_eq(fixture_infer_count(&o, "sample_pass"), 0);
	cr_assert_eq(fixture_infer_count(&o, "sampler_copy"), 0);
	cr_assert_eq(none.eager, 5);
	cr_assert_eq(in.n, 5);
	for (i = 0; i < in.n; i++)
		cr_assert_float_eq(in.op[i].write_B, 32.0, 1e-12);
}

/*
 * vLLM V1 as AMD's ROCm fork runs it (vllm-rocm.yaml): after the cast,
 * the V1 sampler's temperature div_, softmax, exponential_, div_ and
 * argmax = sampler_passes 5 (1 "sample" + 4 "sample_pass"), each pass
 * reading and writing the 4 rows' fp32 logits of the padded vocabulary,
 * 4 x 128,512 x 4 B = 2,056,192 B, and sampler_copies 1 (the sampled ids
 * down, 8 B x 4 rows = 32 B). Kernels of the unit: final_norm,
 * gather_sampled, lm_head, logits_fp32, sample, 4 passes, 1 copy = 10;
 * in a full graph none is launched eagerly. No graph-input copies.
 */
Test(infer, rocm_v1_sampler)
{
	struct infer_ops o, in;
	struct infer_unit full, none;
	double gap;

	v0_head("vllm-rocm", &o, &full, &none, &in, &gap);
	check_sampler(&o, 4, 1);
	cr_assert_eq(full.eager, 0);
	cr_assert_eq(none.eager, 10);
	cr_assert_float_eq(none.kernel_s - full.kernel_s, 10 * gap, 1e-12);
	cr_assert_eq(in.n, 0);
}

/* The head and embedding units of a 4-sequence decode of tests' Llama 3
 * 70B under vLLM V1 (vllm.yaml), `greedy` or not, and the embedding
 * unit's ops costed replaying a full graph. */
static void v1_units(int greedy, const char *engine, struct infer_ops *head,
		     struct infer_ops *emb, struct infer_unit *emb_full,
		     double *launch_s)
{
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;

	j = decode4(&a, engine, greedy ? "serving.greedy=true" :
		    "serving.greedy=false", &d, &b);
	infer_head_ops(&d, &b, head);
	infer_embed_ops(&d, &b, emb);
	infer_step_input_ops(&d, &b, emb);
	infer_cost(emb, &d, &b, NULL, j->system->gpu, IGRAPH_FULL, emb_full);
	*launch_s = j->system->gpu->kernel_launch_s;
	arena_release(&a);
}

/*
 * Greedy requests (vllm bench serve sends temperature 0): V1's sample()
 * returns greedy_sample's argmax alone, sampler_passes_greedy 1 (the
 * "sample" kernel, no sample_pass), and still copies the ids down (1).
 */
Test(infer, v1_greedy_sampler)
{
	struct infer_ops h, e;
	struct infer_unit u;
	double l;

	v1_units(1, "vllm", &h, &e, &u, &l);
	cr_assert_eq(fixture_infer_count(&h, "sample"), 1);
	cr_assert_eq(fixture_infer_count(&h, "sample_pass"), 0);
	cr_assert_eq(fixture_infer_count(&h, "sampler_copy"), 1);
	v1_units(0, "vllm", &h, &e, &u, &l);
	cr_assert_eq(fixture_infer_count(&h, "sample_pass"), 4);
	/* vLLM V0 has no greedy count of its own: its 6 passes either way */
	v1_units(1, "vllm-v0", &h, &e, &u, &l);
	cr_assert_eq(fixture_infer_count(&h, "sample_pass"), 6);
}

/*
 * vLLM V1's block-table copy (vllm.yaml block_table_copy): a request's
 * row is cdiv(max_model_len, block_size) int32, tests' Llama 3 70B at
 * its context 8192 and block 16: 512 x 4 = 2048 B; 4 requests: 8192 B
 * host to device every step. DGX H100's host port is PCIe Gen5 x16:
 * 4 GB/s a lane x 16 x 128/130 x 256/284 (TLP framing) = 56.80 GB/s,
 * 8192 B / 56.80 GB/s = 0.14421875 us, plus the host's launch (5 us):
 * 5.14421875 us, eager even in a full graph (the host issues it before
 * the replay). SGLang (no block_table_copy): no such op.
 */
Test(infer, v1_block_table_copy)
{
	struct infer_ops h, e;
	struct infer_unit u;
	const struct infer_op *op;
	double l;
	int i, k = -1;

	v1_units(0, "vllm", &h, &e, &u, &l);
	cr_assert_eq(fixture_infer_count(&e, "block_table_h2d"), 1);
	op = fixture_infer_op(&e, "block_table_h2d");
	cr_assert_float_eq(op->h2d_B, 8192.0, 1e-9);
	for (i = 0; i < u.n; i++)
		if (strcmp(u.op[i].name, "block_table_h2d") == 0)
			k = i;
	cr_assert_geq(k, 0);
	cr_assert_float_eq(l, 5e-6, 1e-15);
	cr_assert_float_eq(u.op[k].time_s, 5.14421875e-6, 1e-15);
	cr_assert_eq(u.op[k].eager, 1);
	cr_assert_eq(u.eager, 1);
	v1_units(0, "sglang", &h, &e, &u, &l);
	cr_assert_eq(fixture_infer_count(&e, "block_table_h2d"), 0);
}

/* The stepper's latency of a 4-sequence decode of tests' Llama 3 70B
 * under vLLM V1 at tp 8 / pp 1 or tp 4 / pp 2, with the block-table copy
 * (vllm.yaml) or without. */
static double v1_latency(int pp2, int copy)
{
	const char *sets[] = {"phase=decode", "serving.batch=4",
			      "serving.context_len=256",
			      pp2 ? "parallelism.tp=4" : "parallelism.tp=8",
			      pp2 ? "parallelism.pp=2" : "parallelism.pp=1",
			      copy ? "serving.engine.block_table_copy=true" :
				     "serving.engine.block_table_copy=false"};
	struct arena a;
	double lat;

	arena_init(&a);
	lat = fixture_step_latency(fixture_load_job(&a, L70, sets, 6));
	arena_release(&a);
	return lat;
}

/*
 * Every pipeline stage copies its own block table: vLLM V1's worker on a
 * later rank receives the activations, then its model runner's
 * _prepare_inputs commits the block table (infer_prog.c inst_stage). The
 * copy of v1_block_table_copy (8192 B at 56.80 GB/s plus the 5 us
 * launch: 5.14421875 us) adds once to the step at pp 1 and twice at pp
 * 2, after the receive (before: once, on the first stage only); to the
 * engine's 1 ns clock a unit.
 */
Test(infer, v1_block_table_copy_on_every_stage)
{
	double one = v1_latency(0, 1) - v1_latency(0, 0);
	double two = v1_latency(1, 1) - v1_latency(1, 0);

	cr_assert_float_eq(one, 5.14421875e-6, 1e-9, "pp 1: %.12g s", one);
	cr_assert_float_eq(two, 2 * 5.14421875e-6, 2e-9, "pp 2: %.12g s",
			   two);
}

/*
 * The block-table row follows the run's --max-model-len, not the model's
 * context: AMD's MAD harness runs the MI300X vLLM 0.10.2 rows at
 * --max-model-len 8192 (ROCm/MAD scripts/vllm/config.csv @ 2a2180ee).
 * Tests' Llama 3 70B, 4 sequences of 256 cached tokens, under vllm-rocm
 * (vendor lifted: the fixture's GPU is an H100) at serving.max_model_len
 * 1024: cdiv(1024, 16) = 64 int32 = 256 B a request, 4 requests 1024 B
 * (at the model's 8192: 8192 B, v1_block_table_copy).
 */
Test(infer, v1_block_table_row_follows_max_model_len)
{
	const char *sets[] = {"phase=decode", "serving.batch=4",
			      "serving.context_len=256",
			      "serving.engine=vllm-rocm",
			      "serving.engine.vendor=any",
			      "serving.max_model_len=1024"};
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_ops e;

	arena_init(&a);
	j = fixture_load_job(&a, L70, sets, 6);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	infer_embed_ops(&d, &b, &e);
	infer_step_input_ops(&d, &b, &e);
	cr_assert_eq(fixture_infer_count(&e, "block_table_h2d"), 1);
	cr_assert_float_eq(fixture_infer_op(&e, "block_table_h2d")->h2d_B,
			   1024.0, 1e-9);
	arena_release(&a);
}

/* The host time (s) of a decode step of the batch bs ("serving.batch=N")
 * on tests' Llama 3 70B under engine ("serving.engine=E"), TP 8 or TP 1. */
static double host_s(const char *engine, const char *bs, int tp1)
{
	const char *sets[] = {"phase=decode", bs, "serving.context_len=256",
			      engine, "parallelism.tp=1",
			      "system.gpus_per_node=1"};
	struct arena a;
	struct diag d;
	struct infer_ctx x;
	struct infer_batch b;
	struct job_spec *j;
	double h;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L70, sets, tp1 ? 6 : 4);
	cr_assert_eq(infer_ctx_init(&x, j, &d), 0);
	infer_job_batch(j, &b);
	h = infer_host_s(&x, &b);
	infer_ctx_release(&x);
	arena_release(&a);
	return h;
}

/* The host time of a decode step of 4 sequences on tests' Llama 3 70B
 * under vLLM V0: step_overhead 1 ms + seq_overhead 5 us x 4 = 1.020 ms,
 * plus tp_step_overhead 38 us at TP 8 (the input metadata to the
 * workers): 1.058 ms; at TP 1 nothing is sent: 1.020 ms. */
static double v0_host_s(int tp1)
{
	return host_s("serving.engine=vllm-v0", "serving.batch=4", tp1);
}

Test(infer, v0_tp_metadata_host_time)
{
	cr_assert_float_eq(v0_host_s(0), 1.058e-3, 1e-12);
	cr_assert_float_eq(v0_host_s(1), 1.020e-3, 1e-12);
}

/* vLLM before 0.6.0 (vllm-v0.5.yaml) at TP 1: step_overhead 1 ms +
 * seq_overhead 95 us a sequence; at 200 sequences 1 ms + 19 ms = 20 ms,
 * RFC #6801's "when BS is 200, all this together can be 20ms" (sampling,
 * input preparation, output processing and the scheduler of V0 in
 * 2024-08), the figure the 95 us was read from; at 4 sequences 1.38 ms
 * where vllm-v0 (0.6) charges 1.020 ms. */
Test(infer, v0_before_060_host_time_a_sequence)
{
	cr_assert_float_eq(host_s("serving.engine=vllm-v0.5",
				  "serving.batch=200", 1), 20e-3, 1e-12);
	cr_assert_float_eq(host_s("serving.engine=vllm-v0.5",
				  "serving.batch=4", 1), 1.38e-3, 1e-12);
}

/* The host time of a decode step of `bs` sequences on tests' Llama 3 70B
 * under vLLM V1 (the vllm preset: step_overhead 0.5 ms, seq_overhead
 * 2 us, tp_step_overhead 15 us, tp_seq_overhead 0.5 us), TP 8 or TP 1. */
static double v1_host_s(int tp1, const char *bs)
{
	return host_s("serving.engine=vllm", bs, tp1);
}

/*
 * vLLM V1's execute_model call and the output rank's reply through the
 * MultiprocExecutor's queues (results/reference/host/vllm-v1-tp-ipc.md).
 * 4 sequences at TP 8: 0.5 ms + 4 x 2 us + 15 us + 4 x 0.5 us = 0.525 ms;
 * at TP 1 (no queues): 0.508 ms. 256 sequences at TP 8: 0.5 + 0.512 +
 * 0.015 + 0.128 = 1.155 ms; TP 1: 1.012 ms. The per-sequence part is
 * what separates 256 from 4: (1.155 - 1.012) - (0.525 - 0.508) = 0.126 ms
 * = 252 x 0.5 us.
 */
Test(infer, v1_tp_ipc_host_time)
{
	cr_assert_float_eq(v1_host_s(0, "serving.batch=4"), 0.525e-3, 1e-12);
	cr_assert_float_eq(v1_host_s(1, "serving.batch=4"), 0.508e-3, 1e-12);
	cr_assert_float_eq(v1_host_s(0, "serving.batch=256"), 1.155e-3,
			   1e-12);
	cr_assert_float_eq(v1_host_s(1, "serving.batch=256"), 1.012e-3,
			   1e-12);
}

/* The host time of one step of tests' Llama 3 70B at TP 1 under the
 * trtllm preset (step_overhead 0.5 ms, seq_overhead 20 us,
 * prompt_token_overhead 0.14 us, tp_step_overhead 0): `phase` decode or
 * prefill, 4 sequences, prompts of 512 tokens, 256 cached. */
static double trtllm_host_s(const char *phase, const char *extra)
{
	const char *sets[] = {phase, "serving.batch=4",
			      "serving.context_len=256",
			      "serving.engine=trtllm", "parallelism.tp=1",
			      "system.gpus_per_node=1", extra};
	struct arena a;
	struct diag d;
	struct infer_ctx x;
	struct infer_batch b;
	struct job_spec *j;
	double h;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L70, sets, extra ? 7 : 6);
	cr_assert_eq(infer_ctx_init(&x, j, &d), 0);
	infer_job_batch(j, &b);
	h = infer_host_s(&x, &b);
	infer_ctx_release(&x);
	arena_release(&a);
	return h;
}

/*
 * TensorRT-LLM's PyExecutor copies every context request's prompt into
 * Python lists (_prepare_tp_inputs; trtllm.yaml prompt_token_overhead,
 * PR #15584: 0.14 us a token). Decode, 4 sequences: 0.5 ms + 4 x 20 us
 * = 0.580 ms, no prompt. Prefill of 4 prompts of 512 tokens: 0.580 ms
 * + 4 x 512 x 0.14 us = 0.580 + 0.28672 = 0.86672 ms. With the key at
 * 0 the prefill step is back to 0.580 ms.
 */
Test(infer, trtllm_host_time_per_prompt_token)
{
	cr_assert_float_eq(trtllm_host_s("phase=decode", NULL), 0.580e-3,
			   1e-12);
	cr_assert_float_eq(trtllm_host_s("phase=prefill", NULL), 0.86672e-3,
			   1e-12);
	cr_assert_float_eq(trtllm_host_s("phase=prefill",
			   "serving.engine.prompt_token_overhead=0 us"),
			   0.580e-3, 1e-12);
}

/*
 * The engine's host costs are an x86 host's; on a Grace host (system
 * host_loop_scale 1.45, gb200-nvl72.yaml: 29 us a request measured on
 * GB200 over trtllm.yaml's 20 us) every part of the loop takes 1.45 x:
 * decode 0.580 ms x 1.45 = 0.841 ms, prefill 0.86672 ms x 1.45 =
 * 1.256744 ms. host_dispatch_scale (a PyTorch op's dispatch) does not
 * touch the loop: at 2.75 the decode step stays 0.580 ms.
 */
Test(infer, host_loop_scale_scales_the_serving_loop)
{
	cr_assert_float_eq(trtllm_host_s("phase=decode",
			   "system.host_loop_scale=1.45"), 0.841e-3, 1e-12);
	cr_assert_float_eq(trtllm_host_s("phase=prefill",
			   "system.host_loop_scale=1.45"), 1.256744e-3, 1e-12);
	cr_assert_float_eq(trtllm_host_s("phase=decode",
			   "system.host_dispatch_scale=2.75"), 0.580e-3, 1e-12);
}

/* The shipped Grace systems carry the loop's scale and the x86 ones the
 * reference's 1 (tests' job on gb200-nvl72: 0.580 ms x 1.45 = 0.841 ms). */
Test(infer, grace_systems_scale_the_serving_loop)
{
	cr_assert_float_eq(trtllm_host_s("phase=decode", "system=gb200-nvl72"),
			   0.841e-3, 1e-12);
	cr_assert_float_eq(trtllm_host_s("phase=decode", "system=dgx-b200"),
			   0.580e-3, 1e-12);
}

/* The time of one op of a Llama-3-70B decode step under sets (n of them),
 * graphs replayed in full; d gets the step's dimensions and split_k the
 * GPU's gemm_split_k_kernels. */
static double l70_op_s(const char **sets, size_t n, const char *op,
		       struct infer_dims *d, int *split_k)
{
	struct arena a;
	struct job_spec *j;
	struct infer_batch bt;
	struct infer_ops o;
	struct infer_unit u;
	double t;

	arena_init(&a);
	j = fixture_load_job(&a, L70, sets, n);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, &bt);
	infer_layer_ops(d, &bt, NULL, NULL, &o);
	infer_cost(&o, d, &bt, NULL, j->system->gpu, IGRAPH_FULL, &u);
	t = u.op[fixture_infer_op(&o, op) - o.op].time_s;
	*split_k = j->system->gpu->gemm_split_k_kernels;
	arena_release(&a);
	return t;
}

/* The qkv GEMM of a decode step of `batch` sequences of tests' Llama 3
 * 70B in fp8 on 8 MI300X under vllm-v0-rocm with skinny_gemm_rows
 * `skinny`, costed replaying a full graph. */
static double rocm_qkv_s(int batch, int skinny)
{
	char b[48], s[48];
	const char *sets[] = {"phase=decode", b, "serving.context_len=256",
			      "system=mi300x-roce", "serving.engine=vllm-v0-rocm",
			      "serving.dtype=fp8", "serving.kv_dtype=fp8", s};
	struct infer_dims d;
	int split_k;
	double t;

	snprintf(b, sizeof(b), "serving.batch=%d", batch);
	snprintf(s, sizeof(s), "serving.engine.skinny_gemm_rows=%d", skinny);
	t = l70_op_s(sets, 8, "qkv", &d, &split_k);
	cr_assert_eq(split_k, 2);
	return t;
}

/*
 * vLLM ROCm (v0.8.5+rocm) sends a one-row fp8 GEMM to its own wvSplitKQ
 * kernel and two rows to hipBLASLt (vllm-v0-rocm.yaml skinny_gemm_rows 1),
 * which sums a split-K GEMM's slices in a second kernel (mi300x.yaml
 * gemm_split_k_kernels 2). The qkv GEMM, (a + 2g) d / t = (64 + 16) x 128
 * / 8 = 1280 columns over k = 8192, splits: its 64 x 64 tiles are 20 of
 * U = 304 units, and one unsplit tile's mainloop, 2 x 64 x 64 x 8192 /
 * (R / 304) with R = 2614.9 x 1207/2100 x 0.802 = 1205.4 TFLOP/s, is
 * 16.9 us while its 10.5 MB of fp8 weights stream in 2.5 us at 4.13 TB/s.
 * So at one row the skinny kernel saves one replayed node, 1.535 us
 * (kernel_launch_graph); at two rows the key changes nothing.
 */
Test(infer, rocm_skinny_gemm_keeps_one_kernel)
{
	cr_assert_float_eq(rocm_qkv_s(1, 0) - rocm_qkv_s(1, 1), 1.535e-6,
			   1e-12);
	cr_assert_float_eq(rocm_qkv_s(2, 0), rocm_qkv_s(2, 1), 1e-15);
}

/* The sampler and graph-copy keys refuse out-of-range counts with the
 * option's location and range (sampler_passes counts the first pass: at
 * least 1; each key at most 16, which keeps a unit within INFER_MAX_OPS);
 * so do the skinny-GEMM row counts (0 to 16) and a GPU's split-K kernel
 * count (1 or 2). */
Test(infer, sampler_keys_refuse_bad_counts)
{
	static const char *const bad[][2] = {
		{"serving.engine.sampler_passes=0", "from 1 to 16, got '0'"},
		{"serving.engine.sampler_copies=17", "from 0 to 16, got '17'"},
		{"serving.engine.graph_input_copies=-1", "from 0 to 16, got '-1'"},
		{"serving.engine.tp_step_overhead=1 s", "'serving.engine.tp_step_overhead'"},
		{"serving.engine.tp_seq_overhead=1 ms", "'serving.engine.tp_seq_overhead'"},
		{"serving.engine.tp_seq_overhead=-1 us", "'serving.engine.tp_seq_overhead'"},
		{"serving.engine.prompt_token_overhead=2 ms", "'serving.engine.prompt_token_overhead'"},
		{"serving.engine.prompt_token_overhead=-1 us", "'serving.engine.prompt_token_overhead'"},
		{"serving.engine.prompt_token_overhead=nan", "'serving.engine.prompt_token_overhead'"},
		{"serving.engine.prompt_token_overhead=fast", "'serving.engine.prompt_token_overhead'"},
		{"serving.engine.prompt_token_overhed=1 us", "'serving.engine.prompt_token_overhed'"},
		{"serving.engine.skinny_gemm_rows=17", "from 0 to 16, got '17'"},
		{"serving.engine.skinny_gemm_rows_base=-1", "from 0 to 16, got '-1'"},
		{"system.gpu.gemm_split_k_kernels=3", "from 1 to 2, got '3'"},
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct arena a;
		struct diag d;
		struct config_ctx cx = {&a, &d, "."};
		struct job_spec j;
		char buf[512] = {0};
		FILE *f = tmpfile();

		cr_assert_not_null(f);
		arena_init(&a);
		diag_init(&d, f);
		memset(&j, 0, sizeof(j));
		cr_assert_eq(config_load(&cx, &job_schema, L70, &bad[i][0], 1,
					 &j), -1, "%s loaded", bad[i][0]);
		rewind(f);
		cr_assert_gt(fread(buf, 1, sizeof(buf) - 1, f), 0);
		cr_assert_not_null(strstr(buf, bad[i][1]), "%s", buf);
		fclose(f);
		arena_release(&a);
	}
}

/* The gate_up GEMM of a 2048-sequence fp8 decode step of tests' Llama 3
 * 70B (TP 8, H100) under `engine`, and whether its dense fp8 GEMMs run
 * in fast accumulation (*fast); extra: one more override or NULL. */
static double fp8_gate_up_s(const char *engine, const char *extra, int *fast)
{
	char eng[64];
	const char *sets[] = {"phase=decode", "serving.batch=2048",
			      "serving.context_len=256", "serving.dtype=fp8",
			      eng, extra};
	struct infer_dims d;
	int split_k;
	double t;

	snprintf(eng, sizeof(eng), "serving.engine=%s", engine);
	t = l70_op_s(sets, extra ? 6 : 5, "gate_up", &d, &split_k);
	*fast = d.fp8_fast_accum;
	return t;
}

/*
 * vLLM's per-tensor fp8 GEMMs on Hopper are CUTLASS FP8FastAccum kernels
 * (vllm.yaml fp8_fast_accumulation true); the same engine with the key
 * off prices them promoted. gate_up at 2048 rows: n = 2 x 28672 / 8 =
 * 7168, k = 8192, compute-bound (F = 2 x 2048 x 7168 x 8192 = 240.5
 * GFLOP, ~185 us, against 58.7 MB of weights, ~18 us at 3.35 TB/s).
 * 128 x 256 tiles: 16 x 28 = 448 tiles, 4 waves of 132; a tile's
 * mainloop 2 x 128 x 256 x 8192 / (1978.9e12 x 1485/1830 x eff / 132) =
 * 51.4 us promoted (0.858), 48.7 us fast (0.906), each wave also ~4 us of
 * t_0 and epilogue: ratio (4 x 55.3) / (4 x 52.6) = 1.051, under 0.906 /
 * 0.858 = 1.056. A block-scaled checkpoint (quant_method fp8, DeepSeek-
 * V3's 128 x 128 scales) runs promoted whatever the engine.
 */
Test(infer, vllm_fp8_gemms_run_in_fast_accumulation)
{
	int fast_on, fast_off, fast_blk;
	double on = fp8_gate_up_s("vllm", NULL, &fast_on);
	double off = fp8_gate_up_s("vllm",
				   "serving.engine.fp8_fast_accumulation=false",
				   &fast_off);

	cr_assert_eq(fast_on, 1);
	cr_assert_eq(fast_off, 0);
	cr_assert(off / on >= 1.045 && off / on <= 1.056,
		  "promoted / fast gate_up time %g", off / on);
	fp8_gate_up_s("vllm", "model.quantization_config.quant_method=fp8",
		      &fast_blk);
	cr_assert_eq(fast_blk, 0);
}

/*
 * TensorRT-LLM's PyTorch backend (FP8QDQLinearMethod -> cublas_scaled_mm,
 * cuBLASLt FAST_ACCUM 1) and SGLang (per-tensor scales made channelwise,
 * sgl-kernel fp8_scaled_mm: FP8FastAccum mainloops at every m) run their
 * per-tensor fp8 linears in fast accumulation too (trtllm.yaml,
 * sglang.yaml). The same gate_up as above: promoted / fast within 1.045 to
 * 1.056 (4 waves of 55.3 against 52.6 us: 1.051; the efficiencies' ratio
 * 0.906 / 0.858 = 1.056 bounds it).
 */
Test(infer, trtllm_and_sglang_fp8_gemms_run_in_fast_accumulation)
{
	const char *engines[] = {"trtllm", "sglang"};
	int i;

	for (i = 0; i < 2; i++) {
		int fast_on, fast_off;
		double on = fp8_gate_up_s(engines[i], NULL, &fast_on);
		double off = fp8_gate_up_s(
			engines[i], "serving.engine.fp8_fast_accumulation=false",
			&fast_off);

		cr_assert_eq(fast_on, 1, "%s", engines[i]);
		cr_assert_eq(fast_off, 0, "%s", engines[i]);
		cr_assert(off / on >= 1.045 && off / on <= 1.056,
			  "%s: promoted / fast gate_up time %g", engines[i],
			  off / on);
	}
}
