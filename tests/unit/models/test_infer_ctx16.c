/*
 * test_infer_ctx16.c - TensorRT-LLM's attention op (engine prefill_kernel
 * trtllm) runs its context FMHA in 16 bits, at the GPU's
 * attention.trtllm_ctx16_efficiency, only with a 16-bit KV cache and an
 * output it does not quantize, and never for MLA (src/models/infer.c
 * ctx16: mFP8ContextFMHA = is_fp8_out || is_fp4_out || (an FP8 cache and
 * the paged context FMHA), thop/attentionOp.cpp).
 *
 * The 16-bit kernel is the flash prefill model at that efficiency in
 * place of fwd_efficiency (src/gpu/gpu_attn_infer.c: h->fwd_efficiency),
 * so a prefill step under trtllm takes exactly the time of the same step
 * under prefill_kernel flash with attention.fwd_efficiency set to
 * trtllm_ctx16_efficiency: nothing else in the step reads either key.
 * h100.yaml: fwd_efficiency 0.885, trtllm_ctx16_efficiency 0.599 (asserted
 * below), so where the rule applies the step is strictly longer than the
 * flash one (a lower rate on a compute-bound 8192-token prompt), and
 * where it does not the two are equal.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "config/spec_system.h"

#include "fixture.h"

#define Q30 "tests/data/serve/q30-h100.yaml"
#define DSV3 "tests/data/serve/dsv3-h200-dep8.yaml"

/* One prefill step of path: a prompt of `len` tokens, serving dtype and
 * KV dtype as given, under trtllm with prefill_kernel `kern`, the GPU's
 * fwd_efficiency replaced by `fwd` when fwd > 0. */
static double step_s(const char *path, const char *dtype, const char *kv,
		     const char *kern, double fwd, int len)
{
	char dt[64], kvd[64], pk[64], fe[96], il[64];
	const char *sets[] = {"phase=prefill", "serving.batch=1", il, dt, kvd,
			      "serving.engine=trtllm", pk, fe};
	struct arena a;
	struct job_spec *j;
	double t;

	snprintf(il, sizeof(il), "serving.input_len=%d", len);
	snprintf(dt, sizeof(dt), "serving.dtype=%s", dtype);
	snprintf(kvd, sizeof(kvd), "serving.kv_dtype=%s", kv);
	snprintf(pk, sizeof(pk), "serving.engine.prefill_kernel=%s", kern);
	snprintf(fe, sizeof(fe), "serving.batch=1");
	if (fwd > 0)
		snprintf(fe, sizeof(fe),
			 "system.gpu.attention.fwd_efficiency=%g", fwd);
	arena_init(&a);
	j = fixture_load_job(&a, path, sets, 8);
	t = fixture_step_latency(j);
	arena_release(&a);
	return t;
}

Test(infer_ctx16, sixteen_bit_context_runs_at_the_ctx16_efficiency)
{
	const char *sets[] = {"serving.engine=trtllm"};
	struct arena a;
	struct job_spec *j;
	double trt, as_flash, flash;

	arena_init(&a);
	j = fixture_load_job(&a, Q30, sets, 1);
	cr_assert_float_eq(j->system->gpu->attention.trtllm_ctx16_eff, 0.599,
			   1e-12);
	cr_assert_float_eq(j->system->gpu->attention.fwd_efficiency, 0.885,
			   1e-12);
	arena_release(&a);
	trt = step_s(Q30, "bf16", "bf16", "trtllm", 0, 8192);
	as_flash = step_s(Q30, "bf16", "bf16", "flash", 0.599, 8192);
	flash = step_s(Q30, "bf16", "bf16", "flash", 0, 8192);
	cr_assert_float_eq(trt, as_flash, 1e-12 * trt, "%g vs %g", trt,
			   as_flash);
	cr_assert(trt > flash * 1.01, "%g vs flash %g", trt, flash);
}

Test(infer_ctx16, an_fp8_cache_keeps_the_fp8_fmha)
{
	/* an FP8 cache: the op's FP8 context FMHA, at the flash rate */
	double trt = step_s(Q30, "bf16", "fp8", "trtllm", 0, 8192);
	double flash = step_s(Q30, "bf16", "fp8", "flash", 0, 8192);

	cr_assert_float_eq(trt, flash, 1e-12 * trt, "%g vs %g", trt, flash);
}

Test(infer_ctx16, a_quantized_output_keeps_the_fp8_fmha)
{
	/* FP8 GEMMs: the op writes o_proj's FP8 input (is_fp8_out), so its
	 * context FMHA is FP8 even over a 16-bit cache */
	double trt = step_s(Q30, "fp8", "bf16", "trtllm", 0, 8192);
	double flash = step_s(Q30, "fp8", "bf16", "flash", 0, 8192);

	cr_assert_float_eq(trt, flash, 1e-12 * trt, "%g vs %g", trt, flash);
}

Test(infer_ctx16, mla_is_left_out)
{
	/* DeepSeek-V3 in bf16 with a bf16 cache: the rule's other terms hold,
	 * but MLA's context runs its own kernels */
	double trt = step_s(DSV3, "bf16", "bf16", "trtllm", 0, 4096);
	double flash = step_s(DSV3, "bf16", "bf16", "flash", 0, 4096);

	cr_assert_float_eq(trt, flash, 1e-12 * trt, "%g vs %g", trt, flash);
}
