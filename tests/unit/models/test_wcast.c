/*
 * test_wcast.c - the step's low-precision weight quantization (framework
 * weight_cast_per_step, layer_weight_cast): its bytes from a layer's
 * weights, once a step before each unit's first forward, not per
 * microbatch, and its time on a one-stage step's critical path.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/layer.h"
#include "models/train.h"

/* 8 layers of h 2048 (16 heads, MHA, GELU MLP of 4h), vocabulary 1024,
 * sequence 1024, tp 1, pp 1 on one node (dp 8), gbs global batch: gbs / 8
 * microbatches a replica. Its linear weights a layer: qkv 3h^2, proj h^2,
 * fc1 4h^2, fc2 4h^2 = 12 h^2 = 12 x 4194304 = 50331648 elements in 4
 * weights. */
#define H 2048.0
#define LAYER_WEIGHTS (12.0 * H * H)

static void job(struct fixture *f, int64_t gbs, enum dtype dt, int on)
{
	fixture_gpt(f, 8, (int64_t)H, 16, 1024, 1024, 1, gbs, 1, 1, 1);
	f->job.training.dtype = dt;
	f->fw.weight_cast_per_step = on;
}

/* The layer's cast ops (layer_weight_cast from its backward) into w. */
static void cast_ops(struct fixture *f, struct layer_ops *w)
{
	struct layer_dims d;
	struct layer_ops *o = mem_alloc(sizeof(*o));

	cr_assert_not_null(o);
	layer_dims_from_job(&f->job, &d);
	layer_bwd(&d, NULL, LREC_NONE, o);
	layer_weight_cast(&d, o, w);
	mem_free(o);
}

Test(train, weight_cast_bytes_from_the_layer_weights)
{
	struct fixture f;
	struct layer_ops *w = mem_alloc(sizeof(*w));
	const struct layer_op *op;

	cr_assert_not_null(w);
	/* per-tensor FP8 (delayed) on a GPU whose FP8 GEMMs take TN only:
	 * each weight read in bf16 (2 B) and written in both layouts (data
	 * and transpose, 1 B each), one kernel per weight: read 2 n, write
	 * 2 n, 4 launches, n = 12 h^2 */
	job(&f, 16, DTYPE_FP8, 1);
	cast_ops(&f, w);
	cr_assert_eq(w->n, 1);
	op = &w->op[0];
	cr_assert_str_eq(op->name, "weight_cast");
	cr_assert_eq(op->pass, PASS_FWD);
	fixture_assert_close(op->k.read_B, 2 * LAYER_WEIGHTS);
	fixture_assert_close(op->k.write_B, 2 * LAYER_WEIGHTS);
	cr_assert_eq(op->k.launches, 4);
	cr_assert_eq(op->dep[0], LAYER_IN);
	/* a GPU whose FP8 GEMMs take any layout: the row-wise copy only */
	f.gpu.fp8_gemm_any_layout = 1;
	cast_ops(&f, w);
	fixture_assert_close(w->op[0].k.write_B, LAYER_WEIGHTS);
	f.gpu.fp8_gemm_any_layout = 0;
	/* current scaling: Transformer Engine's chain of 4 kernels a weight
	 * (amax zeroed, amax reading the weight, scale, cast): the weight
	 * read twice, 16 launches */
	f.job.training.fp8_scaling = FP8_CURRENT;
	cast_ops(&f, w);
	fixture_assert_close(w->op[0].k.read_B, 4 * LAYER_WEIGHTS);
	cr_assert_eq(w->op[0].k.launches, 16);
	/* MXFP8: both layouts of 1 B + a 1 B scale per 32 = 1.03125 B */
	job(&f, 16, DTYPE_MXFP8, 1);
	cast_ops(&f, w);
	fixture_assert_close(w->op[0].k.write_B, 2 * 1.03125 * LAYER_WEIGHTS);
	/* nothing in bf16, nor without the framework's per-step casts */
	job(&f, 16, DTYPE_BF16, 1);
	cast_ops(&f, w);
	cr_assert_eq(w->n, 0);
	job(&f, 16, DTYPE_FP8, 0);
	cast_ops(&f, w);
	cr_assert_eq(w->n, 0);
	mem_free(w);
}

/* FP8 parameters (framework fp8_param_gather under the distributed
 * optimizer): per-tensor FP8 weights are Float8Tensors the optimizer
 * writes, so no step cast; after the gather Transformer Engine's
 * post_all_gather_processing makes each weight's transpose where the
 * GPU's FP8 GEMMs take TN only: one kernel a weight reading and writing
 * its 1 B elements, read n, write n, 4 launches (n = 12 h^2), under
 * delayed or current scaling alike (no amax chain); none where the GEMMs
 * take any layout. Without the distributed optimizer (ZeRO 0: no
 * gather), under MXFP8 or block scaling, the step cast as before. */
Test(train, fp8_params_replace_the_weight_cast_by_a_transpose)
{
	struct fixture f;
	struct layer_ops *w = mem_alloc(sizeof(*w));
	const struct layer_op *op;

	cr_assert_not_null(w);
	job(&f, 16, DTYPE_FP8, 1);
	f.job.training.zero_stage = 1;
	f.fw.fp8_param_gather = 1;
	cast_ops(&f, w);
	cr_assert_eq(w->n, 1);
	op = &w->op[0];
	cr_assert_str_eq(op->name, "weight_transpose");
	cr_assert_eq(op->pass, PASS_FWD);
	fixture_assert_close(op->k.read_B, LAYER_WEIGHTS);
	fixture_assert_close(op->k.write_B, LAYER_WEIGHTS);
	cr_assert_eq(op->k.launches, 4);
	cr_assert_eq(op->dep[0], LAYER_IN);
	f.job.training.fp8_scaling = FP8_CURRENT;
	cast_ops(&f, w);
	cr_assert_str_eq(w->op[0].name, "weight_transpose");
	fixture_assert_close(w->op[0].k.read_B, LAYER_WEIGHTS);
	cr_assert_eq(w->op[0].k.launches, 4);
	/* any layout: nothing */
	f.gpu.fp8_gemm_any_layout = 1;
	cast_ops(&f, w);
	cr_assert_eq(w->n, 0);
	f.gpu.fp8_gemm_any_layout = 0;
	/* ZeRO 0: the current-scaling cast (read 2 n twice, 16 launches) */
	f.job.training.zero_stage = 0;
	cast_ops(&f, w);
	cr_assert_str_eq(w->op[0].name, "weight_cast");
	fixture_assert_close(w->op[0].k.read_B, 4 * LAYER_WEIGHTS);
	/* block scaling: the cast */
	f.job.training.zero_stage = 1;
	f.job.training.fp8_scaling = FP8_BLOCK;
	cast_ops(&f, w);
	cr_assert_str_eq(w->op[0].name, "weight_cast");
	/* MXFP8: the cast, both layouts of 1.03125 B */
	job(&f, 16, DTYPE_MXFP8, 1);
	f.job.training.zero_stage = 1;
	f.fw.fp8_param_gather = 1;
	cast_ops(&f, w);
	cr_assert_str_eq(w->op[0].name, "weight_cast");
	fixture_assert_close(w->op[0].k.write_B, 2 * 1.03125 * LAYER_WEIGHTS);
	mem_free(w);
}

/* The weights are the ops lop_wgrad marks, whatever their names: the
 * layer's backward has four marked low-precision GEMMs (qkv, proj, fc1,
 * fc2); renamed, the cast is the same 2 n read (n = 12 h^2, as above);
 * unmarked, with "wgrad" still in their names, there is none. */
Test(train, weight_cast_reads_the_marked_wgrad_ops_not_names)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops *o = mem_alloc(sizeof(*o));
	struct layer_ops *w = mem_alloc(sizeof(*w));
	int i, marked = 0;

	cr_assert_not_null(o);
	cr_assert_not_null(w);
	job(&f, 16, DTYPE_FP8, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, o);
	for (i = 0; i < o->n; i++) {
		if (!o->op[i].wgrad)
			continue;
		cr_assert(strstr(o->op[i].name, "wgrad") != NULL);
		marked += o->op[i].k.lowp != 0;
		o->op[i].name = "renamed";
	}
	cr_assert_eq(marked, 4);
	layer_weight_cast(&d, o, w);
	cr_assert_eq(w->n, 1);
	fixture_assert_close(w->op[0].k.read_B, 2 * LAYER_WEIGHTS);
	for (i = 0; i < o->n; i++) {
		if (o->op[i].wgrad)
			o->op[i].name = "fc1_wgrad";
		o->op[i].wgrad = 0;
	}
	layer_weight_cast(&d, o, w);
	cr_assert_eq(w->n, 0);
	mem_free(o);
	mem_free(w);
}

/* Tasks named weight_cast in f's built program, per simulated GPU (one
 * GPU stands for its stage: every GPU runs the same program). */
static uint32_t casts(struct fixture *f)
{
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	enum task_cat cat;
	uint32_t t, n = 0;

	diag_init(&d, stderr);
	cr_assert_eq(train_check(&f->job, &d), 0);
	p = train_build(&f->job, 0, &plan, &d);
	cr_assert_not_null(p);
	for (t = 0; t < prog_tasks(p); t++)
		n += strcmp(exec_task_name(p, t, &cat), "weight_cast") == 0;
	n /= prog_ranks(p);
	prog_free(p);
	return n;
}

static double step_s(struct fixture *f)
{
	return mockcomm_train_step(&f->job, 0, 0, 0, NULL);
}

Test(train, weight_cast_once_a_step_before_the_first_microbatch)
{
	struct fixture f;
	double off, on, cast;

	/* one cast per layer unit a step, whatever the microbatches (2 or
	 * 4 a replica); none for the embedding and head (bf16) */
	job(&f, 16, DTYPE_FP8, 1);
	cr_assert_eq(casts(&f), 8);
	job(&f, 32, DTYPE_FP8, 1);
	cr_assert_eq(casts(&f), 8);
	job(&f, 32, DTYPE_FP8, 0);
	cr_assert_eq(casts(&f), 0);
	/* The estimate counts them (train_count). */
	job(&f, 16, DTYPE_FP8, 1);
	fixture_assert_estimate(&f.job, 0, "fp8 weight casts");
	fixture_assert_estimate(&f.job, 1, "fp8 weight casts, full");

	/* Free communication, one stage: the compute stream is the critical
	 * path, so the step grows by the 8 casts. Each: 4 launches of 4 us
	 * plus 201326592 B (read 2 n + write 2 n) at the HBM's 3.35e12 x
	 * 0.88 = 2.948e12 B/s (a working set past the 50 MB L2) = 16 us +
	 * 68.293 us = 84.293 us; 8 of them 674.35 us. */
	job(&f, 16, DTYPE_FP8, 0);
	off = step_s(&f);
	f.fw.weight_cast_per_step = 1;
	on = step_s(&f);
	cast = 4 * 4e-6 + 4 * LAYER_WEIGHTS / (3.35e12 * 0.88);
	cr_assert_float_eq(on - off, 8 * cast, 1e-8,
			   "step %.9g s without, %.9g s with", off, on);
}

/* training.fp8_output_proj (Megatron-Core's MXFP8 LM head, mxfp8_output_
 * proj.py): under MXFP8 the head's three GEMMs run in low precision and
 * its weight, V x h = 1024 x 2048 = 2097152 elements (tp 1; 1024 is a
 * multiple of the vocabulary padding), is quantized once a step like a
 * layer's: read 2 n, both layouts of 1 B + a 1 B scale per 32 written,
 * 2 x 1.03125 n, one kernel. Not under per-tensor FP8 or bf16 (Megatron
 * needs the mxfp8 recipe), nor with the key off. */
Test(train, fp8_output_proj_runs_the_head_in_mxfp8)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops *o = mem_alloc(sizeof(*o));
	struct layer_ops *w = mem_alloc(sizeof(*w));
	double n = 1024.0 * H;
	int i;

	cr_assert_not_null(o);
	cr_assert_not_null(w);
	job(&f, 16, DTYPE_MXFP8, 1);
	f.job.training.fp8_output_proj = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.head_lowp, 1);
	cr_assert_float_eq(d.vocab, 1024.0, 1e-9);
	layer_head_fwd(&d, o);
	i = fixture_op_index(o, "logits");
	cr_assert_geq(i, 0);
	cr_assert_eq(o->op[i].k.lowp, 1);
	layer_head_bwd(&d, o);
	cr_assert_eq(o->op[fixture_op_index(o, "logits_dgrad")].k.lowp, 1);
	cr_assert_eq(o->op[fixture_op_index(o, "logits_wgrad")].k.lowp, 1);
	layer_weight_cast(&d, o, w);
	cr_assert_eq(w->n, 1);
	fixture_assert_close(w->op[0].k.read_B, 2 * n);
	fixture_assert_close(w->op[0].k.write_B, 2 * 1.03125 * n);
	cr_assert_eq(w->op[0].k.launches, 1);
	/* off: the head in bf16, no cast */
	f.job.training.fp8_output_proj = 0;
	layer_dims_from_job(&f.job, &d);
	layer_head_bwd(&d, o);
	cr_assert_eq(o->op[fixture_op_index(o, "logits_wgrad")].k.lowp, 0);
	layer_weight_cast(&d, o, w);
	cr_assert_eq(w->n, 0);
	/* per-tensor FP8 and bf16: no effect */
	job(&f, 16, DTYPE_FP8, 1);
	f.job.training.fp8_output_proj = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.head_lowp, 0);
	job(&f, 16, DTYPE_BF16, 1);
	f.job.training.fp8_output_proj = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.head_lowp, 0);
	mem_free(o);
	mem_free(w);
}

/* In the step: the head's cast is one more a step (8 layer units + the
 * head), whatever the microbatches. With a DeepSeek-sized vocabulary
 * (131072: the head's three GEMMs 3 x 2 x 1024 x 2048 x 131072 = 1.65
 * TFLOP a microbatch, ~1.7 ms at the bf16 rate, about half at the MXFP8
 * one, against ~0.2 ms of logits-gradient quantization, 1024 x 131072 x
 * 2 B read) the MXFP8 head shortens the step; with the fixture's 1024
 * (a 13 GFLOP head) the quantizations cost more than the GEMMs save. */
Test(train, fp8_output_proj_casts_the_head_once_a_step)
{
	struct fixture f;
	double bf16_head, mx_head;

	job(&f, 16, DTYPE_MXFP8, 1);
	/* the test GPU's MXFP8 rate: its FP8 one (Blackwell's, equal) */
	f.gpu.matrix_peak_flops[DTYPE_MXFP8] =
		f.gpu.matrix_peak_flops[DTYPE_FP8];
	cr_assert_eq(casts(&f), 8);
	bf16_head = step_s(&f);
	f.job.training.fp8_output_proj = 1;
	cr_assert_eq(casts(&f), 9);
	mx_head = step_s(&f);
	cr_assert_gt(mx_head, bf16_head, "vocabulary 1024: step %.9g s with "
		     "the MXFP8 head, %.9g s with the bf16 one", mx_head,
		     bf16_head);
	f.model.vocab_size = 131072;
	mx_head = step_s(&f);
	f.job.training.fp8_output_proj = 0;
	bf16_head = step_s(&f);
	cr_assert_lt(mx_head, bf16_head, "vocabulary 131072: step %.9g s "
		     "with the MXFP8 head, %.9g s with the bf16 one", mx_head,
		     bf16_head);
	job(&f, 32, DTYPE_MXFP8, 1);
	f.gpu.matrix_peak_flops[DTYPE_MXFP8] =
		f.gpu.matrix_peak_flops[DTYPE_FP8];
	f.job.training.fp8_output_proj = 1;
	cr_assert_eq(casts(&f), 9);
}
