/*
 * test_infer_quant.c - TensorRT-LLM's quantization kernels in an
 * inference layer (engine norm_quant, norm_quant_hidden, act_quant;
 * src/models/infer.c). Jobs are tests/data/serve's over the shipped
 * presets, varied by --set style overrides.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"
#include "run/infer_run.h"

#include "fixture.h"

#define L70 "tests/data/serve/l70-h100-tp8.yaml"

/* The layer ops of L70 with the given overrides (and a 4-sequence decode
 * step over 256 cached tokens). */
static void layer_ops(const char *const *extra, size_t n_extra,
		      struct infer_dims *d, struct infer_ops *o)
{
	static const char *const step[] = {"phase=decode", "serving.batch=4",
					   "serving.context_len=256"};
	struct arena a;
	struct job_spec *j;
	struct infer_batch b;

	arena_init(&a);
	j = fixture_load_job2(&a, L70, step, 3, extra, n_extra);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, &b);
	infer_layer_ops(d, &b, NULL, NULL, o);
	arena_release(&a);
}

static int count_quant(const struct infer_ops *o)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		n += strncmp(o->op[i].name, "quant", 5) == 0;
	return n;
}

/*
 * TensorRT-LLM's exceptions to quant_fusion all (trtllm.yaml: norm_quant
 * tp_allreduce, norm_quant_hidden 4096, act_quant per_tensor). A dense
 * Llama layer has two norms (before QKV and before gate/up), the
 * attention output (fused: the attention op writes o_proj's input) and
 * the SiLU-mul (before down):
 *   fp8,   tp 8: norms inside the all-reduce, SiLU writes FP8    -> 0
 *   fp8,   tp 1: no all-reduce: both norms apart                  -> 2
 *   nvfp4, tp 1: both norms, and the SiLU-mul (block-scaled)      -> 3
 *   nvfp4, tp 8: the SiLU-mul only                                -> 1
 *   fp8, Llama 3 8B (hidden 4096, not > 4096), tp 2: both norms   -> 2
 * Bytes at nvfp4, tp 1 (B200), 4 tokens: the norm before gate/up writes
 * 16 bits, 4 x 8192 x 2 = 65,536 B besides the 65,536 B of the residual;
 * its quantization kernel reads those 65,536 B and writes 4 x 8192 x
 * (0.5 + 1/16) = 18,432 B; the SiLU-mul writes 4 x 28,672 x 2 =
 * 229,376 B.
 */
Test(infer, trtllm_quantization_kernels_follow_the_layout)
{
	const char *fp8_tp8[] = {"serving.engine=trtllm", "serving.dtype=fp8"};
	const char *fp8_tp1[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				 "parallelism.tp=1", "system.gpus_per_node=1"};
	const char *fp4_tp1[] = {"serving.engine=trtllm",
				 "serving.dtype=nvfp4", "system=dgx-b200",
				 "parallelism.tp=1", "system.gpus_per_node=1"};
	const char *fp4_tp8[] = {"serving.engine=trtllm",
				 "serving.dtype=nvfp4", "system=dgx-b200"};
	const char *l8_tp2[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				"model=llama3-8b", "parallelism.tp=2",
				"system.gpus_per_node=2"};
	struct infer_dims d;
	struct infer_ops o;
	const struct infer_op *op;
	int i, norms = 0;

	layer_ops(fp8_tp8, 2, &d, &o);
	cr_assert_eq(count_quant(&o), 0);
	layer_ops(fp8_tp1, 4, &d, &o);
	cr_assert_eq(count_quant(&o), 2);
	layer_ops(fp4_tp8, 3, &d, &o);
	cr_assert_eq(count_quant(&o), 1);
	layer_ops(l8_tp2, 5, &d, &o);
	cr_assert_eq(count_quant(&o), 2);
	layer_ops(fp4_tp1, 5, &d, &o);
	cr_assert_eq(count_quant(&o), 3);
	for (i = 0; i < o.n; i++) {
		if (strcmp(o.op[i].name, "add_norm") != 0)
			continue;
		cr_assert_float_eq(o.op[i].write_B, 131072.0, 1e-9);
		cr_assert_str_eq(o.op[i + 1].name, "quant");
		cr_assert_float_eq(o.op[i + 1].read_B, 65536.0, 1e-9);
		cr_assert_float_eq(o.op[i + 1].write_B, 18432.0, 1e-9);
		norms++;
	}
	cr_assert_eq(norms, 2);
	op = fixture_infer_op(&o, "silu_mul");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->write_B, 229376.0, 1e-9);
}

/*
 * The fused all-reduce holds only while its message fits the fusion
 * workspace (trtllm.yaml norm_quant_ar_max 8 MB, norm_quant_ar_max_tp2
 * 16 MB): Llama 3 70B's all-reduce is T x 8192 x 2 B = 16,384 B a token.
 *   tp 8, 488 decode tokens: 7,995,392 B <= 8,000,000 -> fused, 0 kernels
 *   tp 8, 489 decode tokens: 8,011,776 B >  8,000,000 -> both norms apart
 *   tp 2, 976 tokens: 15,990,784 B <= 16,000,000 -> 0
 *   tp 2, 977 tokens: 16,007,168 B >  16,000,000 -> 2
 * Each apart norm writes 16 bits besides the residual, 2 x 489 x 16,384
 * = 16,023,552 B, and its quantization kernel writes 489 x 8192 x 1 =
 * 4,005,888 B (FP8).
 */
Test(infer, trtllm_norm_quant_fusion_falls_back_past_the_workspace)
{
	const char *tp8_488[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				 "serving.batch=488"};
	const char *tp8_489[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				 "serving.batch=489"};
	const char *tp2_976[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				 "serving.batch=976", "parallelism.tp=2",
				 "system.gpus_per_node=2"};
	const char *tp2_977[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				 "serving.batch=977", "parallelism.tp=2",
				 "system.gpus_per_node=2"};
	struct infer_dims d;
	struct infer_ops o;
	const struct infer_op *op;

	layer_ops(tp8_488, 3, &d, &o);
	cr_assert_eq(count_quant(&o), 0);
	layer_ops(tp8_489, 3, &d, &o);
	cr_assert_eq(count_quant(&o), 2);
	op = fixture_infer_op(&o, "add_norm");
	cr_assert_not_null(op);
	cr_assert_float_eq(op->write_B, 16023552.0, 1e-6);
	cr_assert_str_eq(op[1].name, "quant");
	cr_assert_float_eq(op[1].write_B, 4005888.0, 1e-6);
	layer_ops(tp2_976, 5, &d, &o);
	cr_assert_eq(count_quant(&o), 0);
	layer_ops(tp2_977, 5, &d, &o);
	cr_assert_eq(count_quant(&o), 2);
}

/*
 * A checkpoint that keeps attention unquantized (quantization_config
 * exclude_modules, as gpt-oss's modules_to_not_convert "model.layers.*.
 * self_attn"): L70 at fp8, TP 8. qkv and o_proj take base-dtype (bf16)
 * weights, the MLP stays fp8. The layer's weight bytes grow by the
 * attention parameters times (2 - 1) B: h (a + 2 g) d + a d h over t =
 * 8192 (64 + 16) 128 + 64 x 128 x 8192 = 150,994,944 / 8 = 18,874,368.
 */
Test(infer, excluded_attention_keeps_its_weights_in_the_base_dtype)
{
	const char *q[] = {"serving.dtype=fp8"};
	const char *x[] = {"serving.dtype=fp8",
			   "model.quantization_config.exclude_modules="
			   "[model.layers.*.self_attn]"};
	struct infer_dims d0, d1;
	struct infer_ops o0, o1;
	int i, seen = 0;

	memset(&o0, 0, sizeof(o0));
	memset(&o1, 0, sizeof(o1));
	layer_ops(q, 1, &d0, &o0);
	layer_ops(x, 2, &d1, &o1);
	cr_assert_eq(d0.qexcl, 0u);
	cr_assert_eq(d1.qexcl, (unsigned)QX_ATTN_ALL);
	for (i = 0; i < o1.n; i++) {
		const struct infer_op *op = &o1.op[i];

		if (strcmp(op->name, "qkv") == 0 ||
		    strcmp(op->name, "o_proj") == 0) {
			cr_assert_eq(op->weight_B_base, 1, "%s", op->name);
			seen++;
		}
		if (strcmp(op->name, "gate_up") == 0 ||
		    strcmp(op->name, "down") == 0)
			cr_assert_eq(op->weight_B_base, 0, "%s", op->name);
	}
	cr_assert_eq(seen, 2);
	cr_assert_float_eq(infer_kind_weight_B(&d1, NULL) -
			   infer_kind_weight_B(&d0, NULL), 18874368.0, 1e-3);
}

/*
 * A layer norm whose consumer the checkpoint keeps unquantized writes 16
 * bits and takes no quantization kernel: the GEMM reads base-dtype
 * inputs (infer_cost.c: weight_B_base). TensorRT-LLM, fp8, TP 1 (see
 * trtllm_quantization_kernels_follow_the_layout: both norms apart, 2
 * kernels):
 *   attention excluded: only the norm before gate/up quantizes   -> 1
 *   dense MLP excluded: only the norm before QKV quantizes       -> 1
 *   both excluded: none                                          -> 0
 */
Test(infer, norm_before_an_excluded_gemm_takes_no_quantization)
{
	const char *attn[] = {"serving.engine=trtllm", "serving.dtype=fp8",
			      "parallelism.tp=1", "system.gpus_per_node=1",
			      "model.quantization_config.exclude_modules="
			      "[model.layers.*.self_attn]"};
	const char *mlp[] = {"serving.engine=trtllm", "serving.dtype=fp8",
			     "parallelism.tp=1", "system.gpus_per_node=1",
			     "model.quantization_config.exclude_modules="
			     "[model.layers.*.mlp]"};
	const char *both[] = {"serving.engine=trtllm", "serving.dtype=fp8",
			      "parallelism.tp=1", "system.gpus_per_node=1",
			      "model.quantization_config.exclude_modules="
			      "[model.layers.*.self_attn, model.layers.*.mlp]"};
	struct infer_dims d;
	struct infer_ops o;

	layer_ops(attn, 5, &d, &o);
	cr_assert_eq(d.qexcl, (unsigned)QX_ATTN_ALL);
	cr_assert_eq(count_quant(&o), 1);
	cr_assert_str_eq(o.op[0].name, "add_norm");
	cr_assert_str_neq(o.op[1].name, "quant");
	layer_ops(mlp, 5, &d, &o);
	cr_assert(d.qexcl & QX_MLP);	/* the whole block: ALL_FFN */
	cr_assert_eq(count_quant(&o), 1);
	cr_assert_str_eq(o.op[1].name, "quant");
	layer_ops(both, 5, &d, &o);
	cr_assert_eq(count_quant(&o), 0);
}

/* The ops and kind of layer `layer` of L70 (fp8, TP 8, 4-sequence decode
 * over 256 cached tokens) under an exclusion list. */
static void layer_kind_ops(const char *excl, int64_t layer,
			   struct infer_dims *d, struct infer_kind *k,
			   struct infer_ops *o)
{
	static const char *const step[] = {"phase=decode", "serving.batch=4",
					   "serving.context_len=256",
					   "serving.dtype=fp8"};
	struct arena a;
	struct job_spec *j;
	struct infer_batch b;

	arena_init(&a);
	j = fixture_load_job2(&a, L70, step, 4, &excl, 1);
	infer_dims_from_job(j, j->system->gpu, d);
	infer_job_batch(j, &b);
	infer_kind_of(j, layer, k);
	infer_layer_ops(d, &b, k, NULL, o);
	arena_release(&a);
}

static int weight_base(const struct infer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return o->op[i].weight_B_base;
	cr_assert_fail("no op %s", name);
	return -1;
}

/*
 * A checkpoint that keeps one layer's attention unquantized
 * ("model.layers.0.self_attn", ModelOpt lists name modules per layer):
 * L70 fp8 TP 8. Layer 0's qkv and o_proj read bf16 weights and its
 * weight bytes grow by the attention's 18,874,368 B (h (a + 2 g) d +
 * a d h over t, times 2 - 1 B; see
 * excluded_attention_keeps_its_weights_in_the_base_dtype); layer 1 is
 * as with no list. A whole layer ("model.layers.79.*") also keeps its
 * MLP: + 3 h f / t = 3 x 8192 x 28672 / 8 = 88,080,384 B more.
 */
Test(infer, a_layer_index_excludes_that_layer_only)
{
	const char *attn0 = "model.quantization_config.exclude_modules="
			    "[model.layers.0.self_attn]";
	const char *whole79 = "model.quantization_config.exclude_modules="
			      "[model.layers.79.*]";
	struct infer_dims d;
	struct infer_kind k0, k1, k79;
	struct infer_ops o;

	layer_kind_ops(attn0, 1, &d, &k1, &o);
	cr_assert_eq(d.qexcl, 0u);	/* no class in every layer */
	cr_assert_eq(k1.qexcl, 0u);
	cr_assert_eq(weight_base(&o, "qkv"), 0);
	layer_kind_ops(attn0, 0, &d, &k0, &o);
	cr_assert_eq(k0.qexcl, (unsigned)QX_ATTN_ALL);
	cr_assert_eq(weight_base(&o, "qkv"), 1);
	cr_assert_eq(weight_base(&o, "o_proj"), 1);
	cr_assert_eq(weight_base(&o, "gate_up"), 0);
	cr_assert_float_eq(infer_kind_weight_B(&d, &k0) -
			   infer_kind_weight_B(&d, &k1), 18874368.0, 1e-3);
	layer_kind_ops(whole79, 79, &d, &k79, &o);
	cr_assert_eq(weight_base(&o, "gate_up"), 1);
	cr_assert_eq(weight_base(&o, "down"), 1);
	cr_assert_eq(count_quant(&o), 0);
	cr_assert_float_eq(infer_kind_weight_B(&d, &k79) -
			   infer_kind_weight_B(&d, &k1),
			   18874368.0 + 88080384.0, 1e-3);
}

/*
 * Per-layer exclusions are kinds of layer only where the weights are
 * quantized. Ten layers of Llama 3 70B each exclude a different set of
 * module classes (attention, MLP, router, shared expert: 2^4 - 1 = 15
 * sets to pick ten from; a dense model's layer keeps its router and
 * shared-expert bits in its mask), so in fp8 they are ten excluded
 * kinds + the plain one = 11 > INFER_MAX_KINDS (8), a refusal (-2); in
 * bf16 the list changes nothing and the model has one kind.
 */
Test(infer, exclusions_are_kinds_only_for_quantized_weights)
{
	static const char excl[] = "model.quantization_config.exclude_modules="
		"[model.layers.0.self_attn, model.layers.1.mlp.down_proj, "
		"model.layers.2.self_attn, model.layers.2.mlp.down_proj, "
		"model.layers.3.mlp.router, model.layers.4.mlp.router, "
		"model.layers.4.self_attn, model.layers.5.mlp.router, "
		"model.layers.5.mlp.down_proj, model.layers.6.shared_expert, "
		"model.layers.7.shared_expert, model.layers.7.self_attn, "
		"model.layers.8.shared_expert, model.layers.8.mlp.down_proj, "
		"model.layers.9.shared_expert, model.layers.9.mlp.router]";
	const char *fp8[] = {"phase=decode", "serving.dtype=fp8", excl};
	const char *bf16[] = {"phase=decode", "serving.dtype=bf16", excl};
	struct arena a;
	struct diag d;
	struct infer_ctx x;
	struct job_spec *j;

	arena_init(&a);
	diag_init(&d, NULL);
	j = fixture_load_job(&a, L70, fp8, 3);
	cr_assert_eq(infer_ctx_init(&x, j, &d), -2);
	j = fixture_load_job(&a, L70, bf16, 3);
	cr_assert_eq(infer_ctx_init(&x, j, &d), 0);
	cr_assert_eq(x.nkinds, 1);
	infer_ctx_release(&x);
	arena_release(&a);
}

/* The dimensions of Qwen3-30B-A3B's job (tests/data/serve/q30-h100.yaml)
 * with the given overrides. */
static struct infer_dims q30_dims(const char *const *sets, size_t n)
{
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;

	arena_init(&a);
	j = fixture_load_job(&a, "tests/data/serve/q30-h100.yaml", sets, n);
	infer_dims_from_job(j, j->system->gpu, &d);
	arena_release(&a);
	return d;
}

/* The weight-only MoE efficiency the experts' GEMMs take (gpu
 * weight_only_moe_efficiency by the engine's kernel), q30_dims' job with
 * the given overrides. */
static double wo_eff(const char *const *sets, size_t n)
{
	return q30_dims(sets, n).moe.wo_eff_used;
}

/*
 * Which experts dequantize, and at what rate (the configs/gpus files'
 * weight_only_moe_efficiency; vllm.yaml weight_only_moe_kernel marlin,
 * mxfp4_moe_kernel weight_only):
 *   vLLM, FP8 experts on A100 (no FP8 MMAs): Marlin W8A16, a100's 0.457
 *   vLLM, FP8 on H100: FP8 MMAs, not weight-only               -> 0
 *   TensorRT-LLM (keys unset), FP8 on A100: the bf16 GEMM rate  -> 0
 *   vLLM, gpt-oss-20b (MXFP4 experts) on H100: Marlin, h100's 0.274
 *     ... mxfp4_moe_kernel triton_mx: matmul_ogs, h100's 0.580 (both
 *     x 1485 / 1776 of the burst-clock fits: configs/gpus/h100.yaml)
 *     ... on A100 (no triton_mx there): Marlin, 0.457
 *   vLLM, gpt-oss-20b on B200 (MXFP4 MMAs): not weight-only    -> 0
 *   TensorRT-LLM, gpt-oss-20b on H100, mxfp4_moe_kernel triton_trtllm:
 *     TritonFusedMoE, h100's 0.510 (the GEMMs' share solved from its
 *     module table, 0.61, x 1485 / 1776: configs/gpus/h100.yaml)
 *     ... on A100 (no triton_trtllm there, trtllm's weight_only_moe_kernel
 *     none): the bf16 GEMM rate                                 -> 0
 *     ... unset (weight_only, kernel none) on H100              -> 0
 */
Test(infer, weight_only_experts_take_the_engines_kernel)
{
	const char *a100_fp8[] = {"serving.engine=vllm", "serving.dtype=fp8",
				  "system.preset=dgx-a100"};
	const char *h100_fp8[] = {"serving.engine=vllm", "serving.dtype=fp8"};
	const char *trt_fp8[] = {"serving.engine=trtllm", "serving.dtype=fp8",
				 "system.preset=dgx-a100"};
	const char *oss[] = {"serving.engine=vllm", "model=gpt-oss-20b"};
	const char *oss_tr[] = {"serving.engine=vllm", "model=gpt-oss-20b",
				"serving.engine.mxfp4_moe_kernel=triton_mx"};
	const char *oss_a[] = {"serving.engine=vllm", "model=gpt-oss-20b",
			       "serving.engine.mxfp4_moe_kernel=triton_mx",
			       "system.preset=dgx-a100"};
	const char *oss_b[] = {"serving.engine=vllm", "model=gpt-oss-20b",
			       "system.preset=dgx-b200"};
	const char *trt_oss[] = {"serving.engine=trtllm", "model=gpt-oss-20b",
				 "serving.engine.mxfp4_moe_kernel=triton_trtllm"};
	const char *trt_oss_a[] = {"serving.engine=trtllm",
				   "model=gpt-oss-20b",
				   "serving.engine.mxfp4_moe_kernel=triton_trtllm",
				   "system.preset=dgx-a100"};
	const char *trt_oss_u[] = {"serving.engine=trtllm",
				   "model=gpt-oss-20b"};

	cr_assert_float_eq(wo_eff(a100_fp8, 3), 0.457, 1e-12);
	cr_assert_float_eq(wo_eff(h100_fp8, 2), 0, 1e-12);
	cr_assert_float_eq(wo_eff(trt_fp8, 3), 0, 1e-12);
	cr_assert_float_eq(wo_eff(oss, 2), 0.274, 1e-12);
	cr_assert_float_eq(wo_eff(oss_tr, 3), 0.580, 1e-12);
	cr_assert_float_eq(wo_eff(oss_a, 4), 0.457, 1e-12);
	cr_assert_float_eq(wo_eff(oss_b, 3), 0, 1e-12);
	cr_assert_float_eq(wo_eff(trt_oss, 3), 0.510, 1e-12);
	cr_assert_float_eq(wo_eff(trt_oss_a, 4), 0, 1e-12);
	cr_assert_float_eq(wo_eff(trt_oss_u, 2), 0, 1e-12);
}

/* The rows an expert the cover rule counts over those it gets
 * (d.moe.wo_cover_rows) for gpt-oss-20b on one DGX H100 (q30-h100's job,
 * 8 GPUs) with the given overrides. */
static double cover_rows(const char *const *sets, size_t n)
{
	return q30_dims(sets, n).moe.wo_cover_rows;
}

/*
 * TensorRT-LLM's TritonFusedMoE under EP keeps every token's top-k
 * entries in its gather index, the other ranks' experts' pruned in place
 * (TritonEPRouter.prune_routing_ep), and matmul_ogs sizes block_m from
 * that index's length over the local experts: the rule counts ep times
 * the rows a local expert gets.
 *   triton_trtllm, tp 4, ep 4 (attention DP off): 4
 *   triton_trtllm, tp 4 x attention DP 2 (8 GPUs), ep 8: 8
 *   triton_trtllm, tp 1 (ep 1): 1 (every expert is local)
 *   vLLM's triton_mx (matmul_ogs without TensorRT-LLM's router), ep 4: 1
 */
Test(infer, triton_trtllm_cover_counts_every_ranks_routed_rows)
{
	const char *ep4[] = {"model=gpt-oss-20b", "system.gpus_per_node=4",
			     "parallelism.tp=4", "parallelism.ep=4",
			     "serving.engine.mxfp4_moe_kernel=triton_trtllm"};
	const char *ep8[] = {"model=gpt-oss-20b", "system.gpus_per_node=8",
			     "parallelism.tp=4", "parallelism.dp=2",
			     "parallelism.attention_dp=true",
			     "parallelism.ep=8",
			     "serving.engine.mxfp4_moe_kernel=triton_trtllm"};
	const char *ep1[] = {"model=gpt-oss-20b",
			     "serving.engine.mxfp4_moe_kernel=triton_trtllm"};
	const char *mx4[] = {"serving.engine=vllm", "model=gpt-oss-20b",
			     "system.gpus_per_node=4", "parallelism.tp=4",
			     "parallelism.ep=4",
			     "serving.engine.mxfp4_moe_kernel=triton_mx"};

	cr_assert_float_eq(cover_rows(ep4, 5), 4, 1e-12);
	cr_assert_float_eq(cover_rows(ep8, 7), 8, 1e-12);
	cr_assert_float_eq(cover_rows(ep1, 2), 1, 1e-12);
	cr_assert_float_eq(cover_rows(mx4, 6), 1, 1e-12);
}

/* Whether op `name` of o reads base-dtype weights (-1: not in o). */
static int base_weights(const struct infer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return o->op[i].weight_B_base;
	return -1;
}

/*
 * The attention's output projection is a class of its own (QX_ATTN_OUT):
 * a checkpoint that keeps q, k, v in bf16 but quantizes o_proj (as
 * nvidia/DeepSeek-R1-FP4-v2 does over nvidia/DeepSeek-R1-FP4, "additionally
 * quantizes the wo module in attention layers") reads bf16 qkv weights and
 * quantized o_proj ones. L70 fp8, TP 8 (h 8192, a 64, g 8, d 128): the
 * layer's bytes grow by the qkv parameters x (2 - 1) B, h (a + 2 g) d / t
 * = 8192 x 80 x 128 / 8 = 10,485,760; excluding the whole attention
 * (18,874,368, excluded_attention_keeps_its_weights_in_the_base_dtype)
 * adds o_proj's a d h / t = 64 x 128 x 8192 / 8 = 8,388,608 more.
 */
Test(infer, attention_output_projection_is_quantized_apart)
{
	const char *q[] = {"serving.dtype=fp8"};
	const char *in[] = {"serving.dtype=fp8",
			    "model.quantization_config.exclude_modules="
			    "[model.layers.*.self_attn.q_proj, "
			    "model.layers.*.self_attn.k_proj, "
			    "model.layers.*.self_attn.v_proj]"};
	const char *out[] = {"serving.dtype=fp8",
			     "model.quantization_config.exclude_modules="
			     "[model.layers.*.self_attn.o_proj]"};
	struct infer_dims d0, d1, d2;
	struct infer_ops o0, o1, o2;

	memset(&o0, 0, sizeof(o0));
	memset(&o1, 0, sizeof(o1));
	memset(&o2, 0, sizeof(o2));
	layer_ops(q, 1, &d0, &o0);
	layer_ops(in, 2, &d1, &o1);
	layer_ops(out, 2, &d2, &o2);
	cr_assert_eq(d1.qexcl, (unsigned)QX_ATTN);
	cr_assert_eq(base_weights(&o1, "qkv"), 1);
	cr_assert_eq(base_weights(&o1, "o_proj"), 0);
	cr_assert_float_eq(infer_kind_weight_B(&d1, NULL) -
			   infer_kind_weight_B(&d0, NULL), 10485760.0, 1e-3);
	cr_assert_eq(d2.qexcl, (unsigned)QX_ATTN_OUT);
	cr_assert_eq(base_weights(&o2, "qkv"), 0);
	cr_assert_eq(base_weights(&o2, "o_proj"), 1);
	cr_assert_float_eq(infer_kind_weight_B(&d2, NULL) -
			   infer_kind_weight_B(&d0, NULL), 8388608.0, 1e-3);
}

#define DSV3 "tests/data/serve/dsv3-h200-dep8.yaml"

/*
 * MLA with nvidia/DeepSeek-R1-FP4-v2's split (q_a, q_b, kv_a, kv_b bf16;
 * o_proj and the MLP quantized): the absorbed batched GEMMs read kv_b's
 * weights (q_absorb: q_nope into the latent, v_absorb: out of it), so they
 * run in bf16 too; o_proj keeps the quantized weights. DeepSeek-V3 at
 * attention DP 8 (tp 1): the layer's bytes grow by (q_a + q_b + kv_a +
 * kv_b) x (2 - 1) B = 7168 x 1536 + 1536 x 128 x 192 + 7168 x 576 + 512 x
 * 128 x 256 = 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 =
 * 69,664,768 B over the fp8 layer.
 */
Test(infer, mla_input_projections_and_absorbed_bmms_follow_kv_b)
{
	const char *q[] = {"serving.dtype=fp8"};
	const char *v2[] = {"serving.dtype=fp8",
			    "model.quantization_config.exclude_modules="
			    "[model.layers.*.self_attn.q_a_proj, "
			    "model.layers.*.self_attn.q_b_proj, "
			    "model.layers.*.self_attn.kv_a_proj_with_mqa, "
			    "model.layers.*.self_attn.kv_b_proj]"};
	struct arena a;
	struct job_spec *j;
	struct infer_batch b;
	struct infer_dims d0, d1;
	struct infer_ops o;
	const char *names[] = {"q_a", "q_b", "kv_a", "q_absorb", "v_absorb"};
	size_t i;

	arena_init(&a);
	j = fixture_load_job(&a, DSV3, q, 1);
	infer_dims_from_job(j, j->system->gpu, &d0);
	j = fixture_load_job(&a, DSV3, v2, 2);
	infer_dims_from_job(j, j->system->gpu, &d1);
	infer_job_batch(j, &b);
	infer_layer_ops(&d1, &b, NULL, NULL, &o);
	cr_assert_eq(d1.qexcl, (unsigned)QX_ATTN);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		cr_assert_eq(base_weights(&o, names[i]), 1, "%s", names[i]);
	cr_assert_eq(base_weights(&o, "o_proj"), 0);
	cr_assert_float_eq(infer_kind_weight_B(&d1, NULL) -
			   infer_kind_weight_B(&d0, NULL), 69664768.0, 1e-3);
	arena_release(&a);
}

/*
 * trtllm-bench's engine size counts the checkpoint's stored elements
 * (infer_prog.c auto_engine_B): attention the checkpoint keeps bf16 is one
 * element a parameter, not a packed NVFP4 one. The count is the stored
 * matrices once, whatever the layout. DeepSeek-V3 (h 7168, 128 heads,
 * q_lora 1536, kv_lora 512, rope 64, nope 128, v 128):
 *   q_a + q_b + kv_a + kv_b = 7168 x 1536 + 1536 x 128 x 192 + 7168 x 576
 *     + 512 x 128 x 256 = 69,664,768 (the v2 checkpoints' bf16 part)
 *   + o_proj 128 x 128 x 7168 = 117,440,512 -> 187,105,280 (all of it)
 * at attention DP 8 (tp 1) and at TP 8 alike (kv_a, replicated on every
 * TP rank, counted once); nothing when nothing is excluded.
 */
Test(infer, excluded_attention_parameters_count_the_stored_matrices_once)
{
	const char *v2[] = {"serving.dtype=nvfp4",
			    "model.quantization_config.exclude_modules="
			    "[model.layers.*.self_attn.q_a_proj, "
			    "model.layers.*.self_attn.q_b_proj, "
			    "model.layers.*.self_attn.kv_a_proj_with_mqa, "
			    "model.layers.*.self_attn.kv_b_proj]"};
	const char *v1[] = {"serving.dtype=nvfp4",
			    "model.quantization_config.exclude_modules="
			    "[model.layers.*.self_attn]",
			    "parallelism.attention_dp=false",
			    "parallelism.tp=8", "parallelism.dp=1"};
	const char *none[] = {"serving.dtype=nvfp4"};
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_kind k;

	arena_init(&a);
	j = fixture_load_job(&a, DSV3, v2, 2);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_kind_of(j, 5, &k);
	cr_assert_float_eq(infer_kind_attn_excluded_params(&d, &k),
			   69664768.0, 1e-3);
	j = fixture_load_job(&a, DSV3, v1, 5);
	infer_dims_from_job(j, j->system->gpu, &d);
	cr_assert_float_eq(d.tp, 8, 0);
	infer_kind_of(j, 5, &k);
	cr_assert_float_eq(infer_kind_attn_excluded_params(&d, &k),
			   187105280.0, 1e-3);
	j = fixture_load_job(&a, DSV3, none, 1);
	infer_dims_from_job(j, j->system->gpu, &d);
	infer_kind_of(j, 5, &k);
	cr_assert_float_eq(infer_kind_attn_excluded_params(&d, &k), 0, 0);
	arena_release(&a);
}
