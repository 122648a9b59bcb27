/*
 * test_infer_issue.c - where a step's eager launches go (engine eager_op,
 * issue_serial; src/run/infer_run.c): on a launch thread of their own they
 * only bound the GPU's time (a step cannot end before its kernels are
 * issued); on the host loop's own thread (TensorRT-LLM's PyExecutor runs
 * _forward_step, then _process_previous_batch, on one Python thread) they
 * add to the step's host time under overlap scheduling.
 *
 * Job: tests' Llama 3 70B on one DGX H100, TP 8, under the shipped trtllm
 * preset, a decode of 4 sequences of 256 cached tokens, no CUDA graph (so
 * every kernel is launched eagerly).
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "run/infer_run.h"

#include "fixture.h"

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

/* The stepper's cost of the job's decode step with the engine's eager_op
 * `op`, issue_serial `serial` and overlap_scheduling `overlap`. */
static void step_on(const char *op, const char *serial, const char *overlap,
		    const char *dispatch, struct infer_step_cost *c)
{
	char o[64], s[64], v[64], h[64];
	const char *sets[] = {"phase=decode", "serving.batch=4",
			      "serving.context_len=256",
			      "serving.engine=trtllm",
			      "serving.engine.cuda_graphs=none", o, s, v, h};
	struct arena a;
	struct job_spec *j;
	struct infer_stepper st;
	struct infer_batch b;
	struct diag d;

	snprintf(o, sizeof(o), "serving.engine.eager_op=%s", op);
	snprintf(s, sizeof(s), "serving.engine.issue_serial=%s", serial);
	snprintf(v, sizeof(v), "serving.engine.overlap_scheduling=%s",
		 overlap);
	snprintf(h, sizeof(h), "system.host_dispatch_scale=%s", dispatch);
	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, L70, sets, 9);
	cr_assert_eq(infer_stepper_init(&st, j, &d), 0);
	infer_job_batch(j, &b);
	cr_assert_eq(infer_stepper_cost(&st, &b, c, &d), 0);
	infer_stepper_release(&st);
	arena_release(&a);
}

/* The same on the reference x86 host (host_dispatch_scale 1). */
static void step(const char *op, const char *serial, const char *overlap,
		 struct infer_step_cost *c)
{
	step_on(op, serial, overlap, "1", c);
}

/*
 * Host work (trtllm.yaml): step_overhead 0.5 ms + seq_overhead 20 us x 4
 * sequences = 0.58 ms; no prompt tokens, no tp_step_overhead.
 * N, the eager kernels of the step (models/infer.c's op lists; the TP
 * all-reduces are collectives, not counted): bf16 weights and
 * activations, so no quantization kernel anywhere; Llama has RoPE, no
 * QK norm, and trtllm.yaml leaves rope_cache_fused true, sampler_passes
 * 1, sampler_copies 0, input_broadcasts 0.
 * - embedding (infer_embed_ops): embed = 1;
 * - a decoder layer (infer_layer_ops, dense GQA, decode only): add_norm,
 *   qkv, rope_cache, attn_decode, o_proj, add_norm, gate_up, silu_mul,
 *   down = 9, x 80 layers = 720;
 * - head (infer_head_ops, 4 sampled tokens): final_norm,
 *   gather_sampled, lm_head, logits_fp32, sample = 5;
 * N = 1 + 720 + 5 = 726.
 * At eager_op 1 ms a kernel the issue (726 ms) far exceeds the GPU's
 * ~12 ms, so:
 * - on its own thread (issue_serial false) the step's interval is the
 *   issue, N ms, and the host keeps its 0.58 ms;
 * - on the loop's thread (true) the interval stays the GPU's (as at
 *   eager_op 0) and the host is 0.58 ms + N ms;
 * - without overlap scheduling the key does nothing (the issue bounds
 *   the GPU as before; the host is added to the step by the serving loop).
 */
Test(infer_issue, eager_launches_on_the_loop_thread_add_to_the_host)
{
	struct infer_step_cost c0, c1, c2, c3;
	double host = 0.5e-3 + 4 * 20e-6, n;

	step("0 us", "true", "true", &c0);
	step("1 ms", "false", "true", &c1);
	step("1 ms", "true", "true", &c2);
	step("1 ms", "true", "false", &c3);

	cr_assert_float_eq(c0.host_s, host, 1e-12);
	cr_assert_float_eq(c1.host_s, host, 1e-12);
	n = c1.interval_s / 1e-3;
	cr_assert_float_eq(n, 1 + 80 * 9 + 5, 1e-6, "%g eager kernels", n);
	cr_assert_gt(c1.interval_s, 10 * c0.interval_s);

	cr_assert_float_eq(c2.interval_s, c0.interval_s,
			   1e-9 * c0.interval_s);
	cr_assert_float_eq(c2.latency_s, c0.latency_s, 1e-9 * c0.latency_s);
	cr_assert_float_eq(c2.host_s, host + n * 1e-3, 1e-9);

	cr_assert_float_eq(c3.interval_s, c1.interval_s,
			   1e-9 * c1.interval_s);
	cr_assert_float_eq(c3.host_s, host, 1e-12);
}

/*
 * eager_op is a PyTorch op's dispatch and launch on the reference x86
 * host; a host whose op calls take host_dispatch_scale x as long
 * (Grace: 2.75, TransformerEngine #2053) issues each kernel in 2.75 x
 * the time: at 1 ms a kernel on the loop's thread the host is 0.58 ms +
 * 726 x 2.75 ms = 1997.08 ms, while the loop's own 0.58 ms follows
 * host_loop_scale (1 here), not the op's scale.
 */
Test(infer_issue, eager_launches_follow_the_host_dispatch_scale)
{
	struct infer_step_cost c;
	double host = 0.5e-3 + 4 * 20e-6;

	step_on("1 ms", "true", "true", "2.75", &c);
	cr_assert_float_eq(c.host_s, host + 726 * 2.75e-3, 1e-9);
	step_on("0 us", "true", "true", "2.75", &c);
	cr_assert_float_eq(c.host_s, host, 1e-12);
}
