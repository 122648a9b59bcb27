/*
 * test_infer_mla.c - a serving step of DeepSeek-V3 under TensorRT-LLM
 * runs its absorbed-MLA decode on TensorRT-LLM's MLA generation kernel
 * where the GPU gives its keys (attention.trtllm_mla_*; src/gpu/
 * gpu_attn_infer.c trtllm_mla_decode), and only then.
 *
 * tests/data/serve/dsv3-h200-dep8.yaml at 1024 sequences of 4096 cached
 * keys: 128 a rank (attention DP 8) on an H200 (132 SMs), 61 layers, each
 * with one decode attention over the 576-wide latent. A rank's kernel:
 * 128 x 128 heads x 4097 keys x 2 x (576 + 512) = 146.1 GFLOP, at h200's
 * fp8 rate for an FP8 cache (0.380 x 1978.9 x 1485 / 1830 = 610.2
 * TFLOP/s) 239 us, against 128 x (128 x 1088 x 2 + 4097 x 576 + 128 x 4)
 * = 337.7 MB of reads (~70 us): compute-bound, so h200's
 * trtllm_mla_unit_time (27.9 us a sequence at its tables' clock, h200
 * fitted_clock 1776 MHz: 27.9 x 1776 / 1485 = 33.368 us at the step's
 * sustained 1485 MHz, the 132 SMs sharing them) adds 128 x 33.368 / 132
 * = 32.36 us a layer, 61 x 32.36 = 1.974 ms a step, whatever else the
 * step holds.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "config/spec_system.h"

#include "fixture.h"

#define DSV3 "tests/data/serve/dsv3-h200-dep8.yaml"

static double step_s(const char *engine, double unit_us)
{
	char eng[64], unit[96];
	const char *sets[] = {"serving.batch=1024", "serving.context_len=4096",
			      "serving.kv_dtype=fp8", eng, unit};
	struct arena a;
	struct job_spec *j;
	double t;

	snprintf(eng, sizeof(eng), "serving.engine=%s", engine);
	snprintf(unit, sizeof(unit),
		 "system.gpu.attention.trtllm_mla_unit_time=%g us", unit_us);
	arena_init(&a);
	j = fixture_load_job(&a, DSV3, sets, 5);
	cr_assert_float_eq(j->system->gpu->attention.trtllm_mla_fp8_eff, 0.380,
			   1e-12);
	t = fixture_step_latency(j);
	arena_release(&a);
	return t;
}

Test(infer_mla, trtllm_decode_charges_the_mla_kernel_time_a_sequence)
{
	double with = step_s("trtllm", 27.9), without = step_s("trtllm", 0);
	double want = 61 * 128 * 27.9e-6 * (1776.0 / 1485) / 132;

	cr_assert(fixture_near(with - without, want, 0.01), "%g vs %g",
		  with - without, want);
}

Test(infer_mla, other_engines_keep_the_flash_decode)
{
	/* vLLM's decode kernel (decode_kernel flash) is not TensorRT-LLM's:
	 * the keys change nothing */
	double with = step_s("vllm", 27.9), without = step_s("vllm", 0);

	cr_assert_float_eq(with, without, 1e-12 * with);
}
