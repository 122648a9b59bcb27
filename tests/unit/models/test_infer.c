/*
 * test_infer.c - the inference step model: KV bytes, the HBM floor of a
 * decode step, and the two builds of a step agreeing.
 *
 * Jobs are the YAML files of tests/data/serve over the shipped presets (the tests
 * run from the repository root), varied by --set style overrides.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "run/infer_run.h"

static struct job_spec *load(struct arena *a, const char *path,
			     const char *const *sets, size_t n)
{
	struct diag d;
	struct config_ctx cx = {a, &d, "."};
	struct job_spec *j = arena_alloc(a, sizeof(*j));

	diag_init(&d, stderr);
	cr_assert_not_null(j);
	memset(j, 0, sizeof(*j));
	cr_assert_eq(config_load(&cx, &job_schema, path, sets, n, j), 0,
		     "loading %s", path);
	return j;
}

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

Test(infer, kv_bytes_per_token_llama3_70b)
{
	struct arena a;
	const char *tp1[] = {"parallelism.tp=1", "system.gpus_per_node=1"};
	struct job_spec *j;
	struct infer_dims d;

	arena_init(&a);
	j = load(&a, L70, tp1, 2);
	infer_dims_from_job(j, j->system->gpu, &d);
	/* 2 (K, V) x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B */
	cr_assert_float_eq(infer_kv_token_layer_B(&d) * d.layers, 327680.0,
			   1e-9);
	j = load(&a, L70, NULL, 0);
	infer_dims_from_job(j, j->system->gpu, &d);
	/* tp 8: one KV head per GPU: 2 x 80 x 1 x 128 x 2 B = 40,960 B */
	cr_assert_float_eq(infer_kv_token_layer_B(&d) * d.layers, 40960.0,
			   1e-9);
	/* fp8 cache: half */
	{
		const char *fp8[] = {"serving.kv_dtype=fp8"};

		j = load(&a, L70, fp8, 1);
		infer_dims_from_job(j, j->system->gpu, &d);
		cr_assert_float_eq(infer_kv_token_layer_B(&d) * d.layers,
				   20480.0, 1e-9);
	}
	arena_release(&a);
}

/*
 * Weights one GPU of tp 8 reads per step (bf16):
 *   layer: h (a + 2g) d + a d h + 3 h f = 8192 x 80 x 128 + 64 x 128 x 8192
 *          + 3 x 8192 x 28672 = 855,638,016 parameters, / 8 x 2 B x 80
 *          = 17,112,760,320 B
 *   LM head: V padded to 64 per rank, ceil(128256 / 8 / 64) x 64 = 16064
 *          rows x 8192 x 2 B = 263,192,576 B
 * KV: batch x ctx x 40,960 B (one KV head per GPU, 80 layers).
 * H100 HBM peak 3.35 TB/s.
 */
Test(infer, decode_never_beats_the_hbm_floor)
{
	static const int64_t batch[] = {1, 16, 64, 256};
	static const int64_t ctx[] = {128, 2048, 8192};
	double w = 17112760320.0 + 263192576.0;
	struct arena a;
	size_t bi, ci;

	arena_init(&a);
	for (bi = 0; bi < 4; bi++)
		for (ci = 0; ci < 3; ci++) {
			char b[64], c[64];
			const char *sets[] = {"phase=decode", b, c};
			struct job_spec *j;
			struct infer_result r;
			struct diag d;
			double kv = (double)batch[bi] * (double)ctx[ci] * 40960;
			double floor_s = (w + kv) / 3.35e12;

			snprintf(b, sizeof(b), "serving.batch=%lld",
				 (long long)batch[bi]);
			snprintf(c, sizeof(c), "serving.context_len=%lld",
				 (long long)ctx[ci]);
			j = load(&a, L70, sets, 3);
			diag_init(&d, stderr);
			cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
			cr_assert_float_eq(r.hbm_floor_s, floor_s, 1e-9 * floor_s);
			cr_assert_geq(r.gpu_s, floor_s, "batch %lld ctx %lld: "
				      "%g s beats the floor %g s",
				      (long long)batch[bi], (long long)ctx[ci],
				      r.gpu_s, floor_s);
			infer_result_release(&r);
		}
	arena_release(&a);
}

/* The stepper (one unit at a time, replicated) gives the full program's
 * time: every layer ends in a TP all-reduce all members reach together. */
static void same_step(const char *const *sets, size_t n)
{
	struct arena a;
	struct job_spec *j;
	struct infer_result r;
	struct infer_stepper st;
	struct infer_step_cost c;
	struct infer_batch b;
	struct diag d;

	arena_init(&a);
	diag_init(&d, stderr);
	j = load(&a, L70, sets, n);
	cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
	cr_assert_eq(infer_stepper_init(&st, j, &d), 0);
	infer_job_batch(j, &b);
	cr_assert_eq(infer_stepper_cost(&st, &b, &c, &d), 0);
	cr_assert_float_eq(c.latency_s, r.gpu_s, 1e-6 * r.gpu_s,
			   "replicated %.9g s, full %.9g s", c.latency_s,
			   r.gpu_s);
	infer_stepper_release(&st);
	infer_result_release(&r);
	arena_release(&a);
}

Test(infer, replicated_layers_equal_the_full_program)
{
	const char *dec[] = {"phase=decode", "serving.batch=64",
			     "serving.context_len=1024"};
	const char *pre[] = {"phase=prefill", "serving.batch=2",
			     "serving.input_len=2048"};
	const char *pp[] = {"phase=decode", "serving.batch=1",
			    "serving.context_len=512", "parallelism.tp=4",
			    "parallelism.pp=2"};

	same_step(dec, 3);
	same_step(pre, 3);
	same_step(pp, 5);
}

/* A step with host overhead not overlapped: latency = program time, and
 * the program holds the host's share before the GPU's. */
Test(infer, host_time_adds_without_overlap)
{
	const char *sets[] = {"phase=decode", "serving.batch=8",
			      "serving.context_len=256"};
	struct arena a;
	struct job_spec *j;
	struct infer_result r;
	struct diag d;

	arena_init(&a);
	diag_init(&d, stderr);
	j = load(&a, L70, sets, 3);
	cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
	/* vllm.yaml: 0.5 ms + 2 us x 8 sequences = 516 us */
	cr_assert_float_eq(r.host_s, 516e-6, 1e-12);
	cr_assert_float_eq(r.step_s, r.gpu_s + r.host_s, 1e-12);
	infer_result_release(&r);
	arena_release(&a);
}

/* Quantization kernels of an fp8 layer: one before each of the four
 * GEMMs with no fusion (vLLM V0, SGLang), the attention output's only
 * with norm_act (vLLM V1), none with all (TensorRT-LLM) and none in
 * bf16. */
static int quant_ops(const char *engine, const char *dtype)
{
	char e[64], t[64];
	const char *sets[] = {"phase=decode", "serving.batch=4",
			      "serving.context_len=256", e, t};
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b;
	struct infer_ops o;
	int i, n = 0;

	snprintf(e, sizeof(e), "serving.engine=%s", engine);
	snprintf(t, sizeof(t), "serving.dtype=%s", dtype);
	arena_init(&a);
	j = load(&a, L70, sets, 5);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_job_batch(j, &b);
	infer_layer_ops(&d, &b, &o);
	for (i = 0; i < o.n; i++)
		n += strncmp(o.op[i].name, "quant", 5) == 0;
	arena_release(&a);
	return n;
}

Test(infer, quantization_kernels_follow_the_engine)
{
	cr_assert_eq(quant_ops("vllm-v0", "fp8"), 4);
	cr_assert_eq(quant_ops("sglang", "fp8"), 4);
	cr_assert_eq(quant_ops("vllm", "fp8"), 1);
	cr_assert_eq(quant_ops("trtllm", "fp8"), 0);
	cr_assert_eq(quant_ops("vllm-v0", "bf16"), 0);
}
