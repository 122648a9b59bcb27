/*
 * test_attn_mx.c - MXFP8 fused attention's quantization kernels
 * (training.fp8_attention under an MXFP8 recipe: attn.c mx_attn_quant)
 * against closed forms.
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

	/* per-tensor FP8 attention (its torch.cat + quantize not costed)
	 * and an MXFP8 job without fp8_attention: no such op */
	mx_job(&f, DTYPE_FP8);
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_attn, 1);
	cr_assert_eq(d.mx_attn_quant, 0);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "attn_qkv_quant"));
	mx_job(&f, DTYPE_MXFP8);
	f.job.training.fp8_attention = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "attn_qkv_quant"));
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_null(fixture_op(&o, "attn_do_quant"));
}
