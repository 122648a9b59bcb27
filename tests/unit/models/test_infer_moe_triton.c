/*
 * test_infer_moe_triton.c - vLLM's Triton fused_moe on 16-bit experts
 * whose (E, N) vLLM ships no tuned config file for on the GPU: the
 * default tile (get_default_config) at the GPU's
 * triton_moe_default_efficiency (src/models/infer_moe.c triton_untuned,
 * infer_cost.c grouped_cost).
 *
 * try_get_optimal_moe_config (vllm/model_executor/layers/fused_moe/
 * fused_moe.py) names the file by E, N = w2's first and last dimensions:
 * the experts a GPU holds and an expert's intermediate columns a GPU
 * holds. configs/gpus/h200.yaml lists 160,192 (GLM-4.5/4.6 at TP 8: no
 * E=160,N=192,device_name=NVIDIA_H200.json) and not 128,192 (Qwen3-235B
 * at TP 8: that file ships).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "run/infer_run.h"

#include "fixture.h"

#define GLM "tests/data/serve/glm46-h200-tp8.yaml"

/*
 * GLM-4.6 at TP 8 on H200, a prefill chunk of 8,192 tokens: 8192 x 8 =
 * 65,536 routed rows over the 160 local experts (409.6 each).
 * expert_gate_up: 2 x 65536 x (2 x 192) x 5120 = 257.7 GFLOP. At the
 * default tile's 0.255 of the clock-scaled bf16 peak (989.4 x 1485 /
 * 1830 = 802.9 TFLOP/s: 204.7 TFLOP/s; 0.305 solved on burst-clock module
 * times, x 1485 / 1776: h200.yaml) 1.259 ms; its bytes (rows 65536 x
 * 5120 x 2 = 671 MB, weights 160 x 384 x 5120 x 2 = 629 MB, out 65536 x
 * 384 x 2 = 50 MB: 1.35 GB) take 0.28 ms at 4.8 TB/s: compute-bound, so
 * 1.259 ms plus padded tile rows (409.6 -> 448 of a 64-row tile: +9 %;
 * 512 of a 128-row one: +25 %), the last wave's idle SMs and the launch:
 * 1.26-1.62 ms (llmsim reads 1.46). With the tuned rate (the GPU's GEMM
 * efficiency 0.888 of the sustained peak) the same op reads ~0.5 ms: at
 * least 2x faster. M = 8192 tokens > E = 160: the 64 x 64 x 32 tile.
 * A decode step of 128 tokens (M <= E: get_default_config's 16 x 32 x
 * 64 tile, which streams the weights at the GEMM's own rate) keeps the
 * tuned cost.
 */
Test(infer_moe_triton, untuned_shape_runs_the_default_tile)
{
	const char *none[] = {"serving.engine=vllm"};
	struct infer_dims d;
	struct infer_ops o;
	struct arena a;
	struct job_spec *j;
	struct gpu_spec tuned;
	double t_def, t_tuned;

	arena_init(&a);
	j = fixture_load_job(&a, GLM, none, 1);
	cr_assert_float_eq(j->system->gpu->triton_moe_default_eff, 0.255,
			   1e-12);
	fixture_infer_moe_ops(GLM, none, 1, 8192, &d, &o);
	cr_assert_float_eq(d.moe.local, 160, 1e-12);
	cr_assert_float_eq(d.moe.ffn / d.moe.etp, 192, 1e-12);
	cr_assert_float_eq(d.moe.default_eff, 0.255, 1e-12);
	t_def = fixture_infer_op_time_s(&o, &d, j->system->gpu,
					"expert_gate_up");
	cr_assert_gt(t_def, 1.26e-3, "%g", t_def);
	cr_assert_lt(t_def, 1.62e-3, "%g", t_def);
	tuned = *j->system->gpu;
	d.moe.default_eff = 0;
	t_tuned = fixture_infer_op_time_s(&o, &d, &tuned,
					  "expert_gate_up");
	cr_assert_gt(t_def / t_tuned, 2.0, "%g", t_def / t_tuned);
	/* decode, M = 128 <= E = 160: the same cost with or without */
	fixture_infer_moe_ops(GLM, none, 1, 128, &d, &o);
	cr_assert_float_eq(d.moe.default_eff, 0.255, 1e-12);
	t_def = fixture_infer_op_time_s(&o, &d, j->system->gpu,
					"expert_gate_up");
	d.moe.default_eff = 0;
	t_tuned = fixture_infer_op_time_s(&o, &d, &tuned,
					  "expert_gate_up");
	cr_assert_float_eq(t_def, t_tuned, 1e-12 * t_tuned);
	arena_release(&a);
}

/*
 * What keeps the tuned rate: Qwen3-235B-A22B at TP 8 (E=128, N = 1536 /
 * 8 = 192: its H200 file ships), GLM-4.6 under SGLang (its own config
 * files, not vLLM's: engine triton_moe_configs false), GLM-4.6 at TP 4
 * (160, 384: not looked up, so not listed) and fp8 experts (dtype
 * fp8_w8a8 files, a list of their own).
 */
Test(infer_moe_triton, tuned_or_unlisted_shapes_keep_the_gemm_rate)
{
	const char *qwen[] = {"model=qwen3-235b-a22b"};
	const char *sgl[] = {"serving.engine=sglang"};
	const char *tp4[] = {"parallelism.tp=4"};
	const char *fp8[] = {"serving.dtype=fp8"};
	const char *vl[] = {"serving.engine=vllm"};
	struct infer_dims d;
	struct infer_ops o;

	fixture_infer_moe_ops(GLM, vl, 1, 8192, &d, &o);
	cr_assert_gt(d.moe.default_eff, 0);
	fixture_infer_moe_ops(GLM, qwen, 1, 8192, &d, &o);
	cr_assert_float_eq(d.moe.local, 128, 1e-12);
	cr_assert_float_eq(d.moe.ffn / d.moe.etp, 192, 1e-12);
	cr_assert_float_eq(d.moe.default_eff, 0, 1e-12);
	fixture_infer_moe_ops(GLM, sgl, 1, 8192, &d, &o);
	cr_assert_float_eq(d.moe.default_eff, 0, 1e-12);
	fixture_infer_moe_ops(GLM, tp4, 1, 8192, &d, &o);
	cr_assert_float_eq(d.moe.ffn / d.moe.etp, 384, 1e-12);
	cr_assert_float_eq(d.moe.default_eff, 0, 1e-12);
	fixture_infer_moe_ops(GLM, fp8, 1, 8192, &d, &o);
	cr_assert_float_eq(d.moe.default_eff, 0, 1e-12);
}
