/*
 * test_infer_mxfp4.c - MXFP4 experts under vLLM's Marlin MoE are built
 * padded (engine mxfp4_marlin_pad_ffn 128, mxfp4_marlin_pad_hidden 256:
 * vLLM quantization/mxfp4.py Mxfp4MoEMethod.create_weights, "n % 256 == 0
 * and k % 128 == 0"), and their grouped GEMMs compute the padding
 * (src/models/infer_moe.c). Job: tests/data/serve/gptoss120b-a100.yaml,
 * gpt-oss-120b (hidden 2880, expert ffn 2880) on one A100.
 */
#include <criterion/criterion.h>

#include "models/infer.h"

#include "fixture.h"

#define OSS "tests/data/serve/gptoss120b-a100.yaml"

static void expert_nk(const char *const *sets, size_t n, double gate_up[2],
		      double down[2])
{
	struct fixture_infer_moe c;
	const struct infer_op *op;

	fixture_infer_moe(&c, OSS, sets, n, 2048);
	op = fixture_infer_op(&c.o, "expert_gate_up");
	cr_assert_not_null(op);
	gate_up[0] = op->n;
	gate_up[1] = op->k;
	op = fixture_infer_op(&c.o, "expert_down");
	cr_assert_not_null(op);
	down[0] = op->n;
	down[1] = op->k;
	fixture_infer_moe_release(&c);
}

Test(infer, mxfp4_marlin_experts_compute_their_padding)
{
	const char *tp2[] = {"parallelism.tp=2", "system.gpus_per_node=2"};
	double gu[2], dn[2];

	/* TP 1: ffn round_up(2880, 128) = 2944, hidden round_up(2880, 256)
	 * = 3072: gate_up n 2 x 2944 = 5888, k 3072; down n 3072, k 2944 */
	expert_nk(NULL, 0, gu, dn);
	cr_assert_float_eq(gu[0], 5888, 1e-9);
	cr_assert_float_eq(gu[1], 3072, 1e-9);
	cr_assert_float_eq(dn[0], 3072, 1e-9);
	cr_assert_float_eq(dn[1], 2944, 1e-9);
	/* TP 2: 1440 a rank -> 1536; gate_up n 3072 */
	expert_nk(tp2, 2, gu, dn);
	cr_assert_float_eq(gu[0], 3072, 1e-9);
	cr_assert_float_eq(dn[1], 1536, 1e-9);
}

Test(infer, mxfp4_experts_unpadded_off_marlin)
{
	/* SGLang's preset sets no padding: 2 x 2880 by 2880 */
	const char *sglang[] = {"serving.engine=sglang"};
	double gu[2], dn[2];

	expert_nk(sglang, 1, gu, dn);
	cr_assert_float_eq(gu[0], 5760, 1e-9);
	cr_assert_float_eq(gu[1], 2880, 1e-9);
	cr_assert_float_eq(dn[0], 2880, 1e-9);
	cr_assert_float_eq(dn[1], 2880, 1e-9);
}
