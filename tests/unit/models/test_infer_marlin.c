/*
 * test_infer_marlin.c - dense linear layers whose weights alone are
 * quantized (engine weight_only_linear_kernel, gpu
 * weight_only_linear_efficiency; src/models/infer.c wo_linear_eff,
 * infer_cost.c): vLLM runs an FP8 checkpoint's linear layers on Ampere
 * through Marlin (quantization/fp8.py Fp8LinearMethod: use_marlin below
 * capability 8.9; apply_fp8_marlin_linear).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "run/infer_run.h"

#include "fixture.h"

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

/* The qkv GEMM's time (eager) in a 2048-token prompt step of Llama 3 70B
 * at TP 8 with the given overrides; *eff: the dims' wo_linear_eff. */
static double qkv_s(const char *const *extra, size_t n_extra, double *eff)
{
	static const char *const step[] = {"phase=prefill", "serving.batch=1",
					   "serving.input_len=2048"};
	static struct infer_ops o;
	static struct infer_unit u;
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	double t = -1;
	size_t i;

	arena_init(&a);
	j = fixture_load_job2(&a, L70, step, 3, extra, n_extra);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	infer_layer_ops(&d, &b, NULL, NULL, &o);
	infer_cost(&o, &d, &b, NULL, j->system->gpu, IGRAPH_NONE, &u);
	for (i = 0; i < (size_t)u.n; i++)
		if (strcmp(u.op[i].name, "qkv") == 0)
			t = u.op[i].time_s;
	*eff = d.wo_linear_eff;
	arena_release(&a);
	cr_assert_gt(t, 0, "no qkv op");
	return t;
}

/*
 * Llama 3 70B, TP 8, a 2048-token prompt: qkv is m 2048, n (64 + 2 x 8)
 * x 128 / 8 = 1280, k 8192.
 *   vLLM, FP8 weights on A100 (Marlin, a100's weight_only_linear_
 *   efficiency 0.453 of 312 TFLOP/s = 141.336 TFLOP/s):
 *     2 x 2048 x 1280 x 8192 = 42.950 GFLOP / 141.336e12 = 303.88 us;
 *     bytes 2048 x 8192 x 2 + 1280 x 8192 x 1 + 2048 x 1280 x 2 =
 *     49,283,072 at 2.039 TB/s x 0.83 = 29.12 us under it; + the eager
 *     launch, 5 us: 308.88 us
 *   TensorRT-LLM (no weight-only linear kernel), the same job: cuBLAS's
 *     bf16 tiles at 0.83 of 312 TFLOP/s, 165.8 us of MMAs and the
 *     waves' padding: well under 250 us
 *   vLLM, bf16 weights on A100: not weight-only (efficiency there, 0.453,
 *     but the weights are as wide as the inputs): the tiles, < 250 us
 *   vLLM, FP8 on H100 (FP8 MMAs; h100 has no such efficiency): 0
 */
Test(infer, marlin_runs_fp8_linear_layers_on_ampere)
{
	const char *a100[] = {"system.preset=dgx-a100", "serving.dtype=fp8"};
	const char *trt[] = {"system.preset=dgx-a100", "serving.dtype=fp8",
			     "serving.engine=trtllm"};
	const char *bf16[] = {"system.preset=dgx-a100", "serving.dtype=bf16"};
	const char *h100[] = {"serving.dtype=fp8"};
	double eff, t;

	t = qkv_s(a100, 2, &eff);
	cr_assert_float_eq(eff, 0.453, 1e-12);
	cr_assert(fixture_near(t, 308.88e-6, 1e-4), "got %g s", t);
	t = qkv_s(trt, 3, &eff);
	cr_assert_float_eq(eff, 0, 1e-12);
	cr_assert_lt(t, 250e-6, "got %g s", t);
	t = qkv_s(bf16, 2, &eff);
	cr_assert_float_eq(eff, 0.453, 1e-12);
	cr_assert_lt(t, 250e-6, "got %g s", t);
	qkv_s(h100, 1, &eff);
	cr_assert_float_eq(eff, 0, 1e-12);
}
