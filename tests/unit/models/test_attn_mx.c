/*
 * test_attn_mx.c - FP8 fused attention's quantization kernels
 * (training.fp8_attention under an MXFP8 recipe: attn.c mx_attn_quant;
 * under per-tensor current scaling or NVFP4: cs_attn_quant) against
 * closed forms.
 */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"
#include "models/layer.h"
#include "models/layer_impl.h"

/* The GPT fixture (T = 2 x 2048 = 4096 tokens a microbatch, 16 heads of
 * 64: q = kv = 1024 wide, no GQA) with fp8_attention in dtype dt. */
static void mx_job(struct fixture *f, enum dtype dt)
{
	fixture_gpt(f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f->job.training.dtype = dt;
	f->job.training.fp8_attention = 1;
}

Test(attn, mxfp8_attention_quantizes_qkv_and_do)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	/* Forward: Q, K, V quantized one tensor a kernel, n = T (q + 2 kv)
	 * = 4096 x 3072 = 12582912 elements; read n x 2 B (bf16) =
	 * 25165824 B, write both layouts at 1 + 1/32 B (E4M3 and an E8M0
	 * scale a 32) = 2 n x 1.03125 = 25952256 B; 3 kernels. Scales:
	 * both layouts' n / 32 B each, 2 n / 32 = 786432 B, read and
	 * written twice (BHSD transpose, swizzle) = 1572864 B each way, 4
	 * kernels. Backward: dO, n = T x 1024 = 4194304 elements: read
	 * 8388608 B, write 2 n x 1.03125 = 8650752 B, one kernel; its
	 * scales 2 x 2 n / 32 = 524288 B each way, 4 kernels. */
	double n = 4096.0 * 3072, ndo = 4096.0 * 1024;

	mx_job(&f, DTYPE_MXFP8);
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.mx_attn_quant, 1);
	layer_fwd(&d, NULL, &o);
	op = fixture_op(&o, "attn_qkv_quant");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, n * 2);
	fixture_assert_close(op->k.write_B, 2 * n * 1.03125);
	cr_assert_eq(op->k.launches, 3);
	cr_assert_eq(o.op[fixture_op_index(&o, "attn_qkv_quant") + 2].name,
		     fixture_op(&o, "attn")->name, "the quantize precedes attn");
	op = fixture_op(&o, "attn_qkv_scales");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 2 * 2 * n / 32);
	fixture_assert_close(op->k.write_B, 2 * 2 * n / 32);
	cr_assert_eq(op->k.launches, 4);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "attn_do_quant");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, ndo * 2);
	fixture_assert_close(op->k.write_B, 2 * ndo * 1.03125);
	cr_assert_eq(op->k.launches, 1);
	op = fixture_op(&o, "attn_do_scales");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 2 * 2 * ndo / 32);
}

Test(attn, only_mxfp8_attention_quantizes_around_the_kernel)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;

	/* delayed-scaling FP8 attention (its quantize not costed) and an
	 * MXFP8 job without fp8_attention: no such op */
	mx_job(&f, DTYPE_FP8);
	f.job.training.fp8_scaling = FP8_DELAYED;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_attn, 1);
	cr_assert_eq(d.mx_attn_quant, 0);
	cr_assert_eq(d.cs_attn_quant, 0);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "attn_qkv_quant"));
	cr_assert_null(fixture_op(&o, "attn_qkv_cat"));
	mx_job(&f, DTYPE_MXFP8);
	f.job.training.fp8_attention = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "attn_qkv_quant"));
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_null(fixture_op(&o, "attn_do_quant"));
}

/* Per-tensor current-scaling FP8 attention: Transformer Engine 2.8's
 * combine_and_quantize (Q, K, V torch.cat'ed, then one
 * Float8CurrentScalingQuantizer call) and the backward's dO quantize. */
static void cs_attn_check(enum dtype dt)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	/* Forward: n = T (q + 2 kv) = 4096 x 3072 = 12582912 elements.
	 * The cat reads and writes n x 2 B = 25165824 B. The quantize reads
	 * them twice (the amax pass, then the cast) = 50331648 B and writes
	 * one E4M3 layout, n x 1 B = 12582912 B; FP8_CS_QUANT_KERNELS (4)
	 * kernels. Backward: dO, n = T x 1024 = 4194304: read 2 x 2 n =
	 * 16777216 B, write 4194304 B, 4 kernels; no cat there. */
	double n = 4096.0 * 3072, ndo = 4096.0 * 1024;

	mx_job(&f, dt);
	f.job.training.fp8_scaling = FP8_CURRENT;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.cs_attn_quant, 1);
	cr_assert_eq(d.mx_attn_quant, 0);
	layer_fwd(&d, NULL, &o);
	op = fixture_op(&o, "attn_qkv_cat");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, n * 2);
	fixture_assert_close(op->k.write_B, n * 2);
	op = fixture_op(&o, "attn_qkv_quant");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 2 * n * 2);
	fixture_assert_close(op->k.write_B, n);
	cr_assert_eq(op->k.launches, 4);
	cr_assert_eq(o.op[fixture_op_index(&o, "attn_qkv_quant") + 1].name,
		     fixture_op(&o, "attn")->name, "the quantize precedes attn");
	cr_assert_null(fixture_op(&o, "attn_qkv_scales"));
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "attn_do_quant");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 2 * ndo * 2);
	fixture_assert_close(op->k.write_B, ndo);
	cr_assert_eq(op->k.launches, 4);
	cr_assert_null(fixture_op(&o, "attn_qkv_cat"));
}

Test(attn, fp8_current_scaling_attention_quantizes_qkv_and_do)
{
	cs_attn_check(DTYPE_FP8);
}

/* NVFP4 linears with FP8 attention (NVTE_DPA_FP8_RECIPE
 * "Float8CurrentScaling"): the same kernels, in E4M3 whatever the
 * linears' format; fp8_scaling does not apply to an NVFP4 job. */
Test(attn, nvfp4_job_quantizes_attention_in_fp8_current_scaling)
{
	cs_attn_check(DTYPE_NVFP4);
}
