/*
 * test_infer_moe_fp8.c - TensorRT-LLM's CUTLASS fused MoE under
 * attention DP with block-scaled fp8 experts (a DeepSeek checkpoint's
 * 128 x 128 scales) against per-tensor fp8 ones (src/models/infer_moe.c
 * cutlass_ops, quant_in_op), and vLLM's and SGLang's Triton fused_moe on
 * block-scaled experts (block_rate), DeepGEMM's behind DeepEP.
 *
 * CutlassFusedMoE.forward_chunk (NVIDIA/TensorRT-LLM @ 000a01de
 * _torch/modules/fused_moe/fused_moe_cutlass.py) quantizes the experts'
 * input before the all-gather for NVFP4 and per-tensor FP8 only; with
 * DeepSeek's block scales it sets use_deepseek_fp8_block_scale and
 * gathers the 16-bit rows, which the fused op quantizes itself.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "gpu/gpu.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "run/infer_run.h"

#include "fixture.h"

#define DSV3 "tests/data/serve/dsv3-h200-dep8.yaml"
#define Q30 "tests/data/serve/q30-h100.yaml"

/*
 * DeepSeek-V3 on 8 H200, attention DP 8, EP 8, fp8, a decode step of 64
 * sequences: T = 8 a rank, N = 64 gathered, h 7168, top-8, a = 1 B.
 *   moe_dispatch  N (h x 2 B + k x 8 B) = 64 x (14,336 + 64) = 921,600 B
 *                 (16-bit rows, their ids and router weights)
 *   moe_quant     once, after the gather, over the N rows: reads
 *                 64 x 7168 x 2 = 917,504 B, writes 64 x 7168 x 1 =
 *                 458,752 B of fp8 and 64 x 7168 / 128 x 4 = 14,336 B of
 *                 fp32 scales = 473,088 B
 * Qwen3-30B-A3B (a per-tensor fp8 job: no block scales) on 8 H100, the
 * same layout and step: the T = 8 local rows quantized before the
 * gather, 8 x 2048 x 2 = 32,768 B read, 8 x 2048 x 1 = 16,384 B
 * written; the gather carries 64 x (2048 x 1 + 64) = 135,168 B.
 */
Test(infer_moe_fp8, block_scaled_experts_gather_16_bit_rows)
{
	const char *adp[] = {"parallelism.tp=1", "parallelism.dp=8",
			     "parallelism.ep=8",
			     "parallelism.attention_dp=true",
			     "serving.dtype=fp8", "serving.batch=64",
			     "system.gpus_per_node=8"};
	struct infer_dims d;
	struct infer_ops o;
	const struct infer_op *op;
	int i, quants = 0;

	fixture_infer_moe_ops(DSV3, NULL, 0, 8, &d, &o);
	cr_assert(d.moe.quant_in_op);
	cr_assert_float_eq(d.moe.fp8_group, 128.0, 1e-9);
	op = fixture_infer_op(&o, "moe_dispatch");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->coll_B, 921600.0, 1e-6);
	for (i = 0; i < o.n; i++)
		quants += strcmp(o.op[i].name, "moe_quant") == 0;
	cr_assert_eq(quants, 1);
	op = fixture_infer_op(&o, "moe_quant");
	cr_assert_float_eq(op->read_B, 917504.0, 1e-6);
	cr_assert_float_eq(op->write_B, 473088.0, 1e-6);

	fixture_infer_moe_ops(Q30, adp, sizeof(adp) / sizeof(adp[0]), 8, &d,
			      &o);
	cr_assert(!d.moe.quant_in_op);
	op = fixture_infer_op(&o, "moe_quant");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->read_B, 32768.0, 1e-6);
	cr_assert_float_eq(op->write_B, 16384.0, 1e-6);
	cr_assert_float_eq(fixture_infer_op(&o, "moe_dispatch")->coll_B,
			   135168.0, 1e-6);
}

/*
 * The same DeepSeek step in NVFP4 on B200 (nvidia's FP4 checkpoint: the
 * experts NVFP4, quantized before the gather as before): no in-op
 * quantization, the gather's rows 7168 x (0.5 + 1/16) = 4,032 B each:
 * 64 x (4032 + 64) = 262,144 B.
 */
Test(infer_moe_fp8, nvfp4_experts_still_quantize_before_the_gather)
{
	const char *fp4[] = {"system=dgx-b200", "serving.dtype=nvfp4"};
	struct infer_dims d;
	struct infer_ops o;

	fixture_infer_moe_ops(DSV3, fp4, 2, 8, &d, &o);
	cr_assert(!d.moe.quant_in_op);
	cr_assert_float_eq(fixture_infer_op(&o, "moe_dispatch")->coll_B,
			   262144.0, 1e-6);
}

/*
 * Block-scaled fp8 experts run the fused MoE's grouped GEMMs at
 * h200.yaml's cutlass_moe_fp8_block_rate 0.50 of the fp8 rate. A
 * prefill-sized step: 2,048 tokens a rank, N = 16,384 gathered, R =
 * N k / ep = 16,384 rows a rank over its 32 experts (512 each).
 * expert_gate_up: 2 x 16384 x 4096 x 7168 = 962.1 GFLOP, at the
 * clock-scaled fp8 peak 1978.9 x 1485 / 1830 = 1605.8 TFLOP/s x 0.858 =
 * 1377.8 TFLOP/s: 698 us at rate 1, 1,397 us at 0.50: compute-bound, so
 * the op takes about twice as long (the launch and the weights' fill do
 * not double: a little under 2).
 */
Test(infer_moe_fp8, block_scaled_grouped_gemms_run_at_the_gpu_block_rate)
{
	const char *pf[] = {"phase=prefill", "serving.batch=8",
			    "serving.input_len=2048"};
	struct infer_dims d;
	struct infer_ops o;
	struct arena a;
	struct job_spec *j;
	struct gpu_spec one;
	double t_half, t_one;

	arena_init(&a);
	j = fixture_load_job(&a, DSV3, pf, 3);
	cr_assert_float_eq(j->system->gpu->cutlass_moe_fp8_block_rate, 0.50,
			   1e-12);
	fixture_infer_moe_ops(DSV3, pf, 3, 2048, &d, &o);
	cr_assert(d.moe.quant_in_op);
	t_half = fixture_infer_op_time_s(&o, &d, j->system->gpu,
					 "expert_gate_up");
	one = *j->system->gpu;
	one.cutlass_moe_fp8_block_rate = 1;
	t_one = fixture_infer_op_time_s(&o, &d, &one,
					"expert_gate_up");
	cr_assert_gt(t_one, 650e-6, "%g", t_one);
	cr_assert_lt(t_one, 800e-6, "%g", t_one);
	cr_assert_gt(t_half / t_one, 1.9, "%g", t_half / t_one);
	cr_assert_leq(t_half / t_one, 2.0, "%g", t_half / t_one);
	arena_release(&a);
}

/*
 * vLLM's Triton fused_moe on the same block-scaled experts (engine
 * fp8_block_moe_kernel: triton) runs its grouped GEMMs at h200.yaml's
 * triton_moe_fp8_block_rate 0.326 of the fp8 rate (0.39 solved against
 * burst-clock module times, x 1485 / 1776: h200.yaml). DeepSeek-V3 on 8
 * H200 as `vllm serve -tp 8` lays it out (experts tensor-parallel: each
 * GPU holds 2048 / 8 = 256 of every expert's columns), a prefill chunk of
 * 8,192 tokens: 8192 x 8 = 65,536 routed rows over the 256 experts.
 * expert_gate_up: 2 x 65536 x (2 x 256) x 7168 = 481.0 GFLOP; at the
 * clock-scaled fp8 rate 1377.8 TFLOP/s (the test above) 349 us, at 0.326
 * of it (449.2 TFLOP/s) 1071 us, and the tiles' padding and last wave
 * on top (llmsim 1134 us): compute-bound, so the op takes close to
 * 1 / 0.326 = 3.07x as long (the launch and the weights' fill do not
 * scale: a little under). TensorRT-LLM's CUTLASS path and per-tensor
 * fp8 experts keep their rates (block_rate 1).
 */
Test(infer_moe_fp8, vllm_triton_block_scaled_experts_run_at_the_gpu_rate)
{
	const char *vl[] = {"phase=prefill", "serving.engine=vllm",
			    "parallelism.tp=8", "parallelism.dp=1",
			    "parallelism.ep=1",
			    "parallelism.attention_dp=false",
			    "serving.batch=1", "serving.input_len=8192"};
	const char *ptq[] = {"serving.engine=vllm", "serving.dtype=fp8"};
	size_t n = sizeof(vl) / sizeof(vl[0]);
	struct infer_dims d;
	struct infer_ops o;
	struct arena a;
	struct job_spec *j;
	struct gpu_spec one;
	double t_rate, t_one;

	arena_init(&a);
	j = fixture_load_job(&a, DSV3, vl, n);
	cr_assert_float_eq(j->system->gpu->triton_moe_fp8_block_rate, 0.326,
			   1e-12);
	fixture_infer_moe_ops(DSV3, vl, n, 8192, &d, &o);
	cr_assert(!d.moe.cutlass);
	cr_assert_float_eq(d.moe.block_rate, 0.326, 1e-12);
	t_rate = fixture_infer_op_time_s(&o, &d, j->system->gpu,
					 "expert_gate_up");
	one = *j->system->gpu;
	d.moe.block_rate = 1;
	t_one = fixture_infer_op_time_s(&o, &d, &one,
					"expert_gate_up");
	cr_assert_gt(t_one, 330e-6, "%g", t_one);
	cr_assert_lt(t_one, 420e-6, "%g", t_one);
	cr_assert_gt(t_rate, 1060e-6, "%g", t_rate);
	cr_assert_lt(t_rate, 1180e-6, "%g", t_rate);
	cr_assert_gt(t_rate / t_one, 2.6, "%g", t_rate / t_one);
	cr_assert_leq(t_rate / t_one, 3.07, "%g", t_rate / t_one);
	arena_release(&a);

	/* the CUTLASS path (the job's trtllm) and per-tensor experts */
	fixture_infer_moe_ops(DSV3, NULL, 0, 8, &d, &o);
	cr_assert_float_eq(d.moe.block_rate, 1.0, 1e-12);
	fixture_infer_moe_ops(Q30, ptq, 2, 8, &d, &o);
	cr_assert_float_eq(d.moe.block_rate, 1.0, 1e-12);
}

/*
 * The rate's clock basis. aiconfigurator's vLLM 0.14 module times (aic-
 * h200-vllm-0.14.0-moe-fp8-block.tsv) are CUDA-graph bursts from a
 * near-idle GPU: burst_matrix_clock, 1776 MHz (h200.yaml). The rate is a
 * share of the fp8 rate at the sustained clock, 1485 MHz, where a serving
 * step runs, so priced at the burst clock the op must read what the old
 * 0.39 gave at the sustained one: the same 481.0 GFLOP of expert_gate_up
 * at 0.326 x 1377.8 x 1776 / 1485 = 537.2 TFLOP/s, 895 us, with the
 * padding and last wave ~950 (the test above's 1134 us x 1485 / 1776;
 * the fill and launch do not scale, so a little over). With 0.39 it read
 * ~795 us there: 1.196x faster than the burst rows it was solved on.
 */
Test(infer_moe_fp8, triton_block_rate_is_the_sustained_clocks)
{
	const char *vl[] = {"phase=prefill", "serving.engine=vllm",
			    "parallelism.tp=8", "parallelism.dp=1",
			    "parallelism.ep=1",
			    "parallelism.attention_dp=false",
			    "serving.batch=1", "serving.input_len=8192"};
	size_t n = sizeof(vl) / sizeof(vl[0]);
	struct infer_dims d;
	struct infer_ops o;
	struct arena a;
	struct job_spec *j;
	struct gpu_spec burst;
	double t_s, t_b;

	arena_init(&a);
	j = fixture_load_job(&a, DSV3, vl, n);
	cr_assert_float_eq(j->system->gpu->burst_matrix_clock_hz, 1776e6, 1);
	cr_assert_float_eq(j->system->gpu->sustained_matrix_clock_hz, 1485e6,
			   1);
	fixture_infer_moe_ops(DSV3, vl, n, 8192, &d, &o);
	t_s = fixture_infer_op_time_s(&o, &d, j->system->gpu,
				      "expert_gate_up");
	gpu_at_matrix_clock(j->system->gpu,
			    j->system->gpu->burst_matrix_clock_hz, &burst);
	t_b = fixture_infer_op_time_s(&o, &d, &burst, "expert_gate_up");
	cr_assert_gt(t_b, 900e-6, "%g", t_b);
	cr_assert_lt(t_b, 1000e-6, "%g", t_b);
	cr_assert_gt(t_s / t_b, 1.10, "%g", t_s / t_b);
	cr_assert_leq(t_s / t_b, 1776.0 / 1485 + 1e-9, "%g", t_s / t_b);
	arena_release(&a);
}

/*
 * SGLang's Fp8MoEMethod.create_moe_runner (0.5.x, moe_runner_backend
 * auto): DeepGEMM when the a2a backend is DeepEP, else its Triton
 * fused_moe (sglang.yaml fp8_block_moe_kernel: triton). DeepSeek-V3 on 8
 * H200: `--tp 8` (experts tensor-parallel, no dispatcher) runs the
 * grouped GEMMs at h200.yaml's triton_moe_fp8_block_rate 0.326, as vLLM's
 * test above; attention DP 8, EP 8 behind DeepEP (normal: forward mode;
 * low-latency: direct mode) keeps the fp8 rate (block_rate 1), and so
 * does vLLM behind DeepEP (DeepGEMM experts there too).
 */
Test(infer_moe_fp8, sglang_triton_experts_unless_deepep_dispatches)
{
	const char *tp[] = {"serving.engine=sglang", "parallelism.tp=8",
			    "parallelism.dp=1", "parallelism.ep=1",
			    "parallelism.attention_dp=false"};
	const char *ep[] = {"serving.engine=sglang", "moe.dispatcher=deepep"};
	const char *ll[] = {"serving.engine=sglang",
			    "moe.dispatcher=deepep-ll"};
	const char *vl[] = {"serving.engine=vllm", "moe.dispatcher=deepep"};
	const char *lib[] = {"serving.engine=sglang"};
	struct infer_dims d;
	struct infer_ops o;

	fixture_infer_moe_ops(DSV3, tp, 5, 8, &d, &o);
	cr_assert(!d.moe.deepgemm);
	cr_assert_float_eq(d.moe.block_rate, 0.326, 1e-12);
	fixture_infer_moe_ops(DSV3, ep, 2, 8, &d, &o);
	cr_assert(d.moe.deepgemm);
	cr_assert_float_eq(d.moe.block_rate, 1.0, 1e-12);
	fixture_infer_moe_ops(DSV3, ll, 2, 8, &d, &o);
	cr_assert_float_eq(d.moe.block_rate, 1.0, 1e-12);
	fixture_infer_moe_ops(DSV3, vl, 2, 8, &d, &o);
	cr_assert_float_eq(d.moe.block_rate, 1.0, 1e-12);
	/* attention DP on the library all-to-all (no DeepEP): Triton */
	fixture_infer_moe_ops(DSV3, lib, 1, 8, &d, &o);
	cr_assert(!d.moe.deepgemm);
	cr_assert_float_eq(d.moe.block_rate, 0.326, 1e-12);
}

static double tuned_gate_up_at(double tokens, int configs,
			       const char *tuned);

/* expert_gate_up of DeepSeek-V3 at TP 8 on 8 H200 (ep 1: 256 local
 * experts, N 2048 / 8 = 256 a GPU, gate_up 512 columns) in a decode step
 * of `tokens` sequences, under vLLM with or without its tuned files. */
static double tuned_gate_up_s(double tokens, int configs)
{
	return tuned_gate_up_at(tokens, configs, NULL);
}

/* The same with gpu triton_moe_fp8_block_tuned set to `tuned` (NULL:
 * h200.yaml's). */
static double tuned_gate_up_at(double tokens, int configs,
			       const char *tuned)
{
	char batch[64];
	const char *vl[] = {"serving.engine=vllm", "parallelism.tp=8",
			    "parallelism.dp=1", "parallelism.ep=1",
			    "parallelism.attention_dp=false", "phase=decode",
			    "serving.input_len=1000", batch,
			    "serving.engine.triton_moe_configs=true",
			    tuned};
	size_t n = sizeof(vl) / sizeof(vl[0]) - (tuned ? 0 : 1);
	struct infer_dims d;
	struct infer_ops o;
	struct arena a;
	struct job_spec *j;
	double t;

	snprintf(batch, sizeof(batch), "serving.batch=%g", tokens);
	if (!configs)
		vl[8] = "serving.engine.triton_moe_configs=false";
	arena_init(&a);
	j = fixture_load_job(&a, DSV3, vl, n);
	fixture_infer_moe_ops(DSV3, vl, n, tokens, &d, &o);
	cr_assert_float_eq(d.moe.tuned[1], !configs ? 0 : tuned ? 64 : 768,
			   1e-9);
	t = fixture_infer_op_time_s(&o, &d, j->system->gpu, "expert_gate_up");
	arena_release(&a);
	return t;
}

/*
 * vLLM's tuned file for these experts on H200 (E=256,N=256,NVIDIA_H200,
 * fp8_w8a8, block [128,128]: h200.yaml triton_moe_fp8_block_tuned) runs a
 * 16 x 128 x 128 tile, 3 stages, up to 768 tokens (nearest key 512),
 * 64-row tiles from 1024; without the file (triton_moe_configs false, as
 * get_default_config) the GPU's own tiles at every M.
 *   256 tokens: 2048 rows, 8 an expert. The 16-row tile streams the
 *     weights: 256 x 512 x 7168 x (1 + 4 / 128^2) B = 939.8 MB and the
 *     rows 2048 x 7168 x (1 + 4 / 128) B = 15.1 MB at 4.8 TB/s x 0.87 =
 *     4.176 TB/s: 228.7 us; 1024 tiles in 2 waves of 132 x 4 (54 KiB a
 *     CTA: four in 228 KiB), 448 empty blocks (ceil(1793 / 16) + 255 = 368
 *     row blocks, 112 empty x 4 columns) in one: 3 us of t_0, plus the
 *     eager launch (5 us) and the kernel's overhead: under 240 us. On
 *     64-row tiles (8 rows padded to 64: compute at the block rate) it
 *     read 289 us: the tuned tile is more than 15 % cheaper.
 *   768 tokens: still the tuned tile (cheaper than the GPU's own).
 *   1024 tokens: the file's 64-row entry: exactly the GPU's tiles.
 *   1 token: 8 experts, 32 CTAs in one wave, each loading at most
 *     triton_moe_tile_bandwidth 22.8 GB/s: 8 x 512 x 7168 x 1.000244 B =
 *     29.37 MB at 32 x 22.8 = 729.6 GB/s = 40.25 us (the memory's 4.176
 *     TB/s would take 7.0 us), plus t_0, launch, overhead: 40.25-47.5 us.
 */
Test(infer_moe_fp8, vllm_tuned_file_runs_16_row_tiles_up_to_768_tokens)
{
	double t256 = tuned_gate_up_s(256, 1), u256 = tuned_gate_up_s(256, 0);
	double t768 = tuned_gate_up_s(768, 1), u768 = tuned_gate_up_s(768, 0);
	double t1024 = tuned_gate_up_s(1024, 1);
	double u1024 = tuned_gate_up_s(1024, 0), t1 = tuned_gate_up_s(1, 1);

	cr_assert_geq(t256, 228.7e-6, "%g", t256);
	cr_assert_lt(t256, 240e-6, "%g", t256);
	cr_assert_lt(t256, 0.85 * u256, "%g %g", t256, u256);
	cr_assert_lt(t768, u768, "%g %g", t768, u768);
	cr_assert_float_eq(t1024, u1024, 1e-12);
	cr_assert_geq(t1, 40.25e-6, "%g", t1);
	cr_assert_lt(t1, 47.5e-6, "%g", t1);
}

/*
 * A file whose small-batch tile starts above one token (vLLM's E=128,
 * N=768 H200 file: BLOCK_SIZE_M 64 at keys 1 and 2, 16 from 4): the
 * 8-tuple's M_lo. The DeepSeek-V3 job with the tuple set to run 16 x 128
 * x 128 only from 8 to 64 tokens: at 4 tokens (below M_lo) and at 128
 * (above M_hi) the experts run the GPU's own tiles, exactly as without
 * the file; at 8 and 64 the tuned tile (cheaper: 8 tokens are 64 rows on
 * at most 64 experts, one row each, which the 64-row tiles pad 64-fold).
 */
Test(infer_moe_fp8, vllm_tuned_tile_only_between_its_token_bounds)
{
	const char *t = "system.gpu.triton_moe_fp8_block_tuned="
			"[256, 256, 8, 64, 16, 128, 128, 3]";

	cr_assert_float_eq(tuned_gate_up_at(4, 1, t), tuned_gate_up_s(4, 0),
			   1e-12);
	cr_assert_float_eq(tuned_gate_up_at(128, 1, t),
			   tuned_gate_up_s(128, 0), 1e-12);
	cr_assert_lt(tuned_gate_up_at(8, 1, t), tuned_gate_up_s(8, 0));
	cr_assert_lt(tuned_gate_up_at(64, 1, t), tuned_gate_up_s(64, 0));
}
