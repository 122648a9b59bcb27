/*
 * test_layer_prec.c - a transformer layer's precision kernels against
 * closed forms: QK norm, FP8 and NVFP4 casts and their amaxes, gradient
 * accumulation without fusion, FP8 with sequence parallelism (moved from
 * test_layer.c, which keeps FLOPs, collectives and parameters).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fixture.h"
#include "models/block.h"
#include "models/footprint.h"
#include "models/layer.h"
#include "models/layer_impl.h"

/* Bytes of the op named `name` in the pass (read + written). */
static double op_bytes(const struct layer_ops *o, const char *name,
		       enum layer_pass pass)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].pass == pass && strcmp(o->op[i].name, name) == 0)
			return o->op[i].k.read_B + o->op[i].k.write_B;
	return -1;
}

Test(layer, qk_norm_of_qwen3_attention)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	double T = 4096, q = 1024, kv = 1024, B = 2, plain;

	/* GPT fixture (T 4096, 16 heads of 64: q = kv = 1024, no GQA) with
	 * Qwen3's per-head norms of Q and K: forward read + write T q B =
	 * 16777216 B each; backward (one fused kernel) read 2 T q B, write
	 * T q B = 25165824 B each; the layer keeps their inputs, T (q + kv)
	 * B = 16777216 B more. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	layer_dims_from_job(&f.job, &d);
	plain = footprint_layer_act_B(&d, LREC_NONE);
	cr_assert_eq(d.qk_norm, 0);
	f.model.qk_layernorm = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.qk_norm, 1);
	layer_fwd(&d, NULL, &o);
	fixture_assert_close(op_bytes(&o, "q_norm", PASS_FWD), 2 * T * q * B);
	fixture_assert_close(op_bytes(&o, "k_norm", PASS_FWD), 2 * T * kv * B);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	fixture_assert_close(op_bytes(&o, "q_norm_bwd", PASS_BWD), 3 * T * q * B);
	fixture_assert_close(op_bytes(&o, "k_norm_bwd", PASS_BWD), 3 * T * kv * B);
	fixture_assert_close(footprint_layer_act_B(&d, LREC_NONE) - plain,
		     T * (q + kv) * B);
}

/* f's layer forward, its dims in d and ops in o; the op named name,
 * which must be there. */
static const struct layer_op *fwd_op(const struct fixture *f,
				     struct layer_dims *d,
				     struct layer_ops *o, const char *name)
{
	const struct layer_op *op;

	layer_dims_from_job(&f->job, d);
	layer_fwd(d, NULL, o);
	op = fixture_op(o, name);
	cr_assert_not_null(op, "no op %s", name);
	return op;
}

Test(layer, fp8_current_scaling_casts_read_for_the_amax)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *qkv, *proj;
	/* GPT layer, tp 1: T = 4096 tokens, h 1024 (q width 1024). Delayed
	 * scaling: a cast reads its input once (n 2 B) in one kernel. Current
	 * scaling: the proj input (the attention output, n = T q = 4194304)
	 * is read for its amax and again by the cast, 4 kernels (the amax
	 * zeroed, amax, scale, cast: TE quantize_impl, launch_amax_kernel's
	 * zero_amax_kernel first): 2 n 2 B = 16777216 B; the QKV input comes
	 * out of the LayerNormLinear's norm with its amax: one read
	 * (8388608 B), the zeroing (amax.zero_() before the norm), scale and
	 * cast kernels (3). The writes (both fp8 layouts, 2 n 1 B)
	 * do not change. */
	double n = 4096.0 * 1024;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_DELAYED;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	fixture_assert_close(proj->k.read_B, n * 2);
	cr_assert(proj->k.launches <= 1);
	f.job.training.fp8_scaling = FP8_CURRENT;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	qkv = fixture_op(&o, "qkv_cast");
	cr_assert_not_null(qkv);
	fixture_assert_close(proj->k.read_B, 2 * n * 2);
	fixture_assert_close(proj->k.write_B, 2 * n);
	fixture_assert_close(proj->k.launches, 4);
	fixture_assert_close(qkv->k.read_B, n * 2);
	fixture_assert_close(qkv->k.launches, 3);
	cr_assert_eq(qkv->amax_pass, 0);
	/* Only a cast is taken for one: a memory kernel of 4 launches that
	 * is not a cast keeps its 4 launches and its read (n 2 B). */
	o.n = 0;
	lop_memop(&o, "four_kernels", PASS_FWD, n * 2, n * 2, n)->k.launches = 4;
	lop_cast_after_norm(&o, 0, &d);
	fixture_assert_close(o.op[0].k.launches, 4);
	fixture_assert_close(o.op[0].k.read_B, n * 2);
}

/* training.fp8_attention is read only inside the fp8 autocast: on a
 * bf16 job the attention stays bf16 (config warns), on fp8 or MXFP8 it
 * runs in FP8. */
Test(layer, fp8_attention_needs_a_low_precision_dtype)
{
	struct fixture f;
	struct layer_dims d;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.fp8_attention = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_attn, 0);
	f.job.training.dtype = DTYPE_FP8;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_attn, 1);
	f.job.training.dtype = DTYPE_MXFP8;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_attn, 1);
}

Test(layer, nvfp4_casts_read_for_the_per_tensor_amax)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *qkv, *proj;
	/* GPT layer, tp 1: T = 4096 tokens, h 1024 (q width 1024), n = T q =
	 * 4194304 elements a cast. NVFP4 (Transformer Engine's NVFP4Quantizer:
	 * the per-tensor amax zeroed (ZeroAmaxKernel / zero_amax_kernel),
	 * the amax, a kernel reading the input, then the quantize kernel
	 * reading it again): read 2 n 2 B = 16777216 B, 3 launches,
	 * for the proj input and for the QKV input alike (the norm before
	 * the QKV cast does not compute the post-Hadamard amax). Writes: both
	 * layouts, 2 n x (0.5 + 1/16) B (E2M1 pairs, an E4M3 scale per 16)
	 * = 4718592 B. */
	double n = 4096.0 * 1024;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_NVFP4;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	cr_assert_eq(d.nvfp4_amax, 1);
	cr_assert_eq(d.fp8_current, 0);
	qkv = fixture_op(&o, "qkv_cast");
	cr_assert_not_null(qkv);
	fixture_assert_close(proj->k.read_B, 16777216.0);
	fixture_assert_close(proj->k.write_B, 4718592.0);
	fixture_assert_close(proj->k.launches, 3);
	fixture_assert_close(qkv->k.read_B, 16777216.0);
	fixture_assert_close(qkv->k.launches, 3);
	cr_assert_eq(qkv->amax_pass, 0);
	/* MXFP8's block scales need no tensor amax: one read. */
	f.job.training.dtype = DTYPE_MXFP8;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	cr_assert_eq(d.nvfp4_amax, 0);
	fixture_assert_close(proj->k.read_B, n * 2);
}

Test(layer, fp8_casts_write_one_layout_where_gemms_take_any)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *proj;
	/* GPT layer, tp 1: the proj input, n = T q = 4096 x 1024 = 4194304
	 * elements. Per-tensor FP8 (delayed or current scaling) on a GPU
	 * whose FP8 GEMMs take only TN (the fixture's H100-like one): the
	 * data and its transpose, 2 n 1 B = 8388608 B. With gpu
	 * fp8_gemm_any_layout (sm100/sm103: TE allocates no transpose where
	 * nvte_is_non_tn_fp8_gemm_supported), the data only: n 1 B =
	 * 4194304 B; the reads do not change (delayed n 2 B = 8388608 B;
	 * current 2 n 2 B = 16777216 B, 4 kernels). Block scaling and
	 * MXFP8 keep both layouts: MXFP8 2 n (1 + 1/32) B = 8650752 B. */
	double n = 4096.0 * 1024;
	int s;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	for (s = 0; s < 2; s++) {
		f.job.training.fp8_scaling = s ? FP8_CURRENT : FP8_DELAYED;
		f.gpu.fp8_gemm_any_layout = 0;
		proj = fwd_op(&f, &d, &o, "proj_cast");
		fixture_assert_close(proj->k.write_B, 2 * n);
		f.gpu.fp8_gemm_any_layout = 1;
		proj = fwd_op(&f, &d, &o, "proj_cast");
		cr_assert_eq(d.fp8_one_layout, 1);
		fixture_assert_close(proj->k.write_B, n);
		fixture_assert_close(proj->k.read_B, (s ? 2 : 1) * n * 2);
		if (s)
			fixture_assert_close(proj->k.launches, 4);
	}
	f.job.training.fp8_scaling = FP8_BLOCK;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_one_layout, 0);
	f.job.training.dtype = DTYPE_MXFP8;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	cr_assert_eq(d.fp8_one_layout, 0);
	fixture_assert_close(proj->k.write_B, 2 * n * (1 + 1.0 / 32));
}

Test(layer, gradient_accumulation_unfused_is_an_add_kernel_per_weight)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *w;
	double h = 1024, ff = 4096, n = ff * h;
	int i, adds = 0;

	/* GPT layer, tp 1, fp32 gradient buffers (G = 4 B), bf16 GEMMs.
	 * Fused (the default): fc2's wgrad GEMM (f x h = 4194304 outputs)
	 * reads and writes main_grad in its epilogue, 2 n G = 33554432 B on
	 * the GEMM, and there is no separate add. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	w = fixture_op(&o, "fc2_wgrad");
	cr_assert(w);
	fixture_assert_close(w->k.accum_B, 2 * n * 4);
	cr_assert_null(fixture_op(&o, "main_grad_add"));
	/* training.gradient_accumulation_fusion false: the GEMM carries no
	 * buffer bytes; right after it one add kernel (Megatron's
	 * main_grad.add_(grad)) reads dW in bf16 and main_grad in fp32,
	 * n (2 + 4) = 25165824 B, and writes main_grad, n 4 = 16777216 B,
	 * one add per element. One such kernel follows each of the four
	 * weights' wgrad GEMMs (qkv, proj, fc1, fc2). */
	f.job.training.gradient_accumulation_fusion = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	for (i = 1; i < o.n; i++) {
		if (strcmp(o.op[i].name, "main_grad_add") != 0)
			continue;
		adds++;
		cr_assert_not_null(strstr(o.op[i - 1].name, "wgrad"));
		cr_assert_eq(o.op[i - 1].k.accum_B, 0);
		if (strcmp(o.op[i - 1].name, "fc2_wgrad") == 0) {
			fixture_assert_close(o.op[i].k.read_B, n * (2 + 4));
			fixture_assert_close(o.op[i].k.write_B, n * 4);
			fixture_assert_close(o.op[i].k.vec_flops, n);
		}
	}
	cr_assert_eq(adds, 4);
}

Test(layer, fp8_unfused_gradient_accumulation_reads_a_bf16_dw)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *add = NULL;
	double h = 1024, ff = 4096, n = ff * h;
	int i;

	/* The MI300X Llama 2 7B FP8 job (--no-gradient-accumulation-
	 * fusion): an FP8 wgrad GEMM writes dW in bf16 (Transformer Engine's
	 * output dtype is the activations', FP32 accumulation inside the
	 * GEMM), so Megatron's main_grad.add_ after fc2's wgrad reads
	 * n (2 + 4) = 25165824 B and writes n 4 = 16777216 B, as bf16: the
	 * add's traffic does not shrink with the GEMM's operand width (1 B
	 * would read 20971520 B). */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.gradient_accumulation_fusion = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	for (i = 1; i < o.n; i++)
		if (!strcmp(o.op[i].name, "main_grad_add") &&
		    !strcmp(o.op[i - 1].name, "fc2_wgrad"))
			add = &o.op[i];
	cr_assert_not_null(add);
	fixture_assert_close(add->k.read_B, n * (2 + 4));
	fixture_assert_close(add->k.write_B, n * 4);
}

static int count_named(const struct layer_ops *o, const char *name,
		       enum layer_pass pass)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		n += o->op[i].pass == pass && !strcmp(o->op[i].name, name);
	return n;
}

/* Index of the first op called name, or -1. */
static int index_named(const struct layer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (!strcmp(o->op[i].name, name))
			return i;
	return -1;
}

/* The layer's forward in fw from f's job, its SP amax all-reduces
 * forward and backward in *nf, *nb; the first forward one's index. */
static int sp_amax_reduces(struct fixture *f, struct layer_ops *fw, int *nf,
			   int *nb)
{
	struct layer_dims d;
	struct layer_ops bw;

	layer_dims_from_job(&f->job, &d);
	layer_fwd(&d, NULL, fw);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	*nf = count_named(fw, "fp8_amax_tp_allreduce", PASS_FWD);
	*nb = count_named(&bw, "fp8_amax_tp_allreduce", PASS_BWD);
	return index_named(fw, "fp8_amax_tp_allreduce");
}

Test(layer, fp8_current_scaling_reduces_sp_amaxes_over_tp)
{
	struct fixture f;
	struct layer_ops fw;
	int ar, nf, nb;
	/* GPT layer, tp 2 with SP, fp8 current scaling. Transformer Engine
	 * reduces (MAX) the amax of every quantizer whose fp8 output a TP
	 * all-gather carries: the column-parallel inputs forward (QKV in the
	 * LayerNormLinear, FC1 in the LayerNormMLP: 2) and the row-parallel
	 * output gradients backward (proj and FC2: 2), one fp32 each, 4 B,
	 * over the TP group, between the cast's amax and the gather. Delayed
	 * scaling, or no SP: none. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 2, 1);
	f.job.parallelism.sequence_parallel = 1;
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_CURRENT;
	ar = sp_amax_reduces(&f, &fw, &nf, &nb);
	cr_assert_eq(nf, 2);
	cr_assert_eq(nb, 2);
	cr_assert(ar > 0);
	cr_assert_eq(fw.op[ar].kind, LOP_COLL);
	cr_assert_eq(fw.op[ar].coll, COLL_ALLREDUCE);
	cr_assert_eq(fw.op[ar].group, LG_TP);
	fixture_assert_close(fw.op[ar].coll_B, 4);
	/* after the cast (its amax), before the all-gather that waits */
	cr_assert(fw.op[ar - 1].amax_pass || fw.op[ar - 1].k.launches == 3);
	cr_assert_eq(fw.op[ar + 1].coll, COLL_ALLGATHER);
	cr_assert_eq(fw.op[ar + 1].dep[0], ar);
	f.job.training.fp8_scaling = FP8_DELAYED;
	sp_amax_reduces(&f, &fw, &nf, &nb);
	cr_assert_eq(nf + nb, 0);
	f.job.training.fp8_scaling = FP8_CURRENT;
	f.job.parallelism.sequence_parallel = 0;
	sp_amax_reduces(&f, &fw, &nf, &nb);
	cr_assert_eq(nf + nb, 0);
}

Test(layer, nvfp4_reduces_sp_amaxes_over_tp)
{
	struct fixture f;
	struct layer_ops fw;
	int ar, nf, nb;
	/* The same GPT layer, tp 2 with SP, NVFP4: its per-tensor second-level
	 * scale comes from the amax, which Transformer Engine's NVFP4
	 * quantizers all-reduce (MAX) over the TP group where fp8 current
	 * scaling does (_customize_quantizers_nvfp4: the column-parallel
	 * inputs QKV and FC1 forward, the row-parallel output gradients proj
	 * and FC2 backward; NVFP4Quantizer::quantize_impl, v2.12): 2 + 2
	 * all-reduces of one fp32, 4 B, right after the cast. No SP: none. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 2, 1);
	f.job.parallelism.sequence_parallel = 1;
	f.job.training.dtype = DTYPE_NVFP4;
	ar = sp_amax_reduces(&f, &fw, &nf, &nb);
	cr_assert_eq(nf, 2);
	cr_assert_eq(nb, 2);
	cr_assert(ar > 0);
	cr_assert_eq(fw.op[ar].group, LG_TP);
	fixture_assert_close(fw.op[ar].coll_B, 4);
	cr_assert_eq(fw.op[ar - 1].k.launches, 3);	/* NVFP4_QUANT_KERNELS */
	f.job.parallelism.sequence_parallel = 0;
	sp_amax_reduces(&f, &fw, &nf, &nb);
	cr_assert_eq(nf + nb, 0);
}


Test(layer, fp8_sp_gathers_rowwise_and_transposes_the_gathered)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops fw, bw;
	const struct layer_op *op;
	int i, qkv_w, t_in, proj_w;
	/* GPT layer (h 1024, 16 heads), T = 2048 x 2 = 4096 tokens, tp 2
	 * with SP, per-tensor FP8 (delayed scaling) on the fixture's
	 * TN-only GPU. Transformer Engine gathers Float8 tensors row-wise
	 * only: the cast of the local shard before the gather (QKV input,
	 * proj output gradient: T/tp x h = 2048 x 1024 = 2097152 elements)
	 * writes n 1 B = 2097152 B, not 2 n = 4194304 B; each wgrad's
	 * transposed copy is made from the gathered T x h = 4194304
	 * elements: a kernel reading 4194304 B and writing 4194304 B, two
	 * for the column-parallel inputs (QKV, FC1), two for the
	 * row-parallel output gradients (proj, FC2). The proj input (row-
	 * parallel, not gathered: T x h/tp = 4096 x 512) keeps both layouts,
	 * 2 x 2097152 = 4194304 B. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 2, 1);
	f.job.parallelism.sequence_parallel = 1;
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.gpu.fp8_gemm_any_layout = 0;
	op = fwd_op(&f, &d, &fw, "qkv_cast");
	cr_assert_eq(d.fp8_rowwise_ag, 1);
	fixture_assert_close(op->k.write_B, 2097152);
	fixture_assert_close(op->k.read_B, 2097152.0 * 2);
	fixture_assert_close(fixture_op(&fw, "proj_cast")->k.write_B, 4194304);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_named(&bw, "fp8_input_transpose", PASS_BWD), 2);
	cr_assert_eq(count_named(&bw, "fp8_grad_transpose", PASS_BWD), 2);
	fixture_assert_close(fixture_op(&bw, "proj_grad_cast")->k.write_B, 2097152);
	for (i = 0; i < bw.n; i++)
		if (!strcmp(bw.op[i].name, "fp8_input_transpose") ||
		    !strcmp(bw.op[i].name, "fp8_grad_transpose")) {
			fixture_assert_close(bw.op[i].k.read_B, 4194304);
			fixture_assert_close(bw.op[i].k.write_B, 4194304);
		}
	/* the QKV wgrad waits for the transpose, which waits for the
	 * input's re-gather; the proj transpose runs right before its
	 * wgrad */
	qkv_w = index_named(&bw, "qkv_wgrad");
	t_in = bw.op[qkv_w].dep[1];
	cr_assert(t_in >= 0);
	cr_assert_str_eq(bw.op[t_in].name, "fp8_input_transpose");
	cr_assert_str_eq(bw.op[bw.op[t_in].dep[0]].name, "qkv_input_allgather");
	proj_w = index_named(&bw, "proj_wgrad");
	cr_assert_str_eq(bw.op[proj_w - 1].name, "fp8_grad_transpose");
	/* current scaling: the same */
	f.job.training.fp8_scaling = FP8_CURRENT;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_rowwise_ag, 1);
	/* none without SP (the QKV cast then writes both layouts of all
	 * 4096 x 1024 elements: 8388608 B), none where the GEMMs take any
	 * layout, none for block scaling or MXFP8 */
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.job.parallelism.sequence_parallel = 0;
	op = fwd_op(&f, &d, &fw, "qkv_cast");
	fixture_assert_close(op->k.write_B, 8388608);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_named(&bw, "fp8_input_transpose", PASS_BWD), 0);
	cr_assert_eq(count_named(&bw, "fp8_grad_transpose", PASS_BWD), 0);
	f.job.parallelism.sequence_parallel = 1;
	f.gpu.fp8_gemm_any_layout = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_rowwise_ag, 0);
	f.gpu.fp8_gemm_any_layout = 0;
	f.job.training.fp8_scaling = FP8_BLOCK;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_rowwise_ag, 0);
	f.job.training.dtype = DTYPE_MXFP8;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_rowwise_ag, 0);
}

Test(layer, fp8_te1_row_parallel_input_transposed_in_backward)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops fw, bw;
	int i, n = 0;
	double bytes = 0;
	/* GPT layer (h 1024, f 4h = 4096), T = 2048 x 2 = 4096 tokens, tp 2
	 * with SP, per-tensor FP8 delayed scaling on the fixture's TN-only
	 * GPU, framework fp8_sp_row_transpose (Transformer Engine 1.x).
	 * The row-parallel linears' inputs are T x h/tp = 4096 x 512 =
	 * 2097152 (proj) and T x f/tp = 4096 x 2048 = 8388608 (fc2)
	 * elements: each forward cast writes the row-wise data only, n 1 B
	 * (2097152 and 8388608 B, not 2 n); each backward transposes the
	 * saved input, a kernel reading and writing n 1 B, right before its
	 * wgrad: 2 kernels, 2 (2097152 + 8388608) = 20971520 B moved. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 2, 1);
	f.job.parallelism.sequence_parallel = 1;
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.gpu.fp8_gemm_any_layout = 0;
	f.fw.elementwise.fp8_sp_row_transpose = 1;
	fwd_op(&f, &d, &fw, "proj_cast");
	cr_assert_eq(d.fp8_row_t, 1);
	fixture_assert_close(fixture_op(&fw, "proj_cast")->k.write_B, 2097152);
	fixture_assert_close(fixture_op(&fw, "fc2_cast")->k.write_B, 8388608);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	for (i = 0; i < bw.n; i++) {
		if (strcmp(bw.op[i].name, "fp8_row_input_transpose"))
			continue;
		n++;
		fixture_assert_close(bw.op[i].k.read_B, bw.op[i].k.write_B);
		bytes += bw.op[i].k.read_B + bw.op[i].k.write_B;
	}
	cr_assert_eq(n, 2);
	fixture_assert_close(bytes, 20971520.0);
	cr_assert_str_eq(bw.op[index_named(&bw, "proj_wgrad") - 1].name,
			 "fp8_row_input_transpose");
	cr_assert_str_eq(bw.op[index_named(&bw, "fc2_wgrad") - 1].name,
			 "fp8_row_input_transpose");
	/* Transformer Engine 2.x (the key off): both layouts in the forward
	 * cast, 2 x 2097152 = 4194304 B, no transpose */
	f.fw.elementwise.fp8_sp_row_transpose = 0;
	fwd_op(&f, &d, &fw, "proj_cast");
	fixture_assert_close(fixture_op(&fw, "proj_cast")->k.write_B, 4194304);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_named(&bw, "fp8_row_input_transpose", PASS_BWD), 0);
	/* none without SP, for current scaling (TE 2.2 and later), or where
	 * the FP8 GEMMs take any layout */
	f.fw.elementwise.fp8_sp_row_transpose = 1;
	f.job.parallelism.sequence_parallel = 0;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_row_t, 0);
	f.job.parallelism.sequence_parallel = 1;
	f.job.training.fp8_scaling = FP8_CURRENT;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_row_t, 0);
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.gpu.fp8_gemm_any_layout = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_row_t, 0);
	f.gpu.fp8_gemm_any_layout = 0;
	f.job.training.dtype = DTYPE_BF16;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_row_t, 0);
}

/* The time block.c gives the forward op named name of f's layer, its
 * low-precision GEMMs at lowp_rate of the fp8 rate. */
static double costed_fwd(struct fixture *f, const char *name,
			 double lowp_rate)
{
	static struct block b;
	struct block_dtypes dt = { DTYPE_FP8, DTYPE_BF16, lowp_rate, 0, 0 };
	struct layer_dims d;
	struct layer_ops o;
	int i;

	layer_dims_from_job(&f->job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(block_cost(&b, &o, &f->gpu, &dt, NULL), 0);
	i = fixture_op_index(&o, name);
	cr_assert_geq(i, 0, "no op %s", name);
	return b.op[i].time_s;
}

Test(layer, nvfp4_casts_run_at_the_gpus_quantize_rate)
{
	struct fixture f;
	struct layer_dims d;
	/* GPT layer, tp 1: the proj input, n = T q = 4096 x 1024 elements,
	 * NVFP4: read 2 n 2 B = 16777216 B (the amax, then the cast), write
	 * 2 n (0.5 + 1/16) B = 4718592 B, 21495808 B in 3 kernels. 21.5 MB
	 * fit the fixture's 50 MB L2 (10 TB/s x 0.8 = 8e12 B/s): at the
	 * streaming rate 3 x 4 us launch + 21495808 / 8e12 = 2.687 us =
	 * 14.687 us. At nvfp4_cast_efficiency 0.718 (b300.yaml: Transformer
	 * Engine's GEMM profiling guide, autocast less pre-quantized) the
	 * body takes 2.687 / 0.718 = 3.742 us: 15.742 us. */
	double body = 21495808.0 / 8e12;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_NVFP4;
	f.gpu.nvfp4_cast_efficiency = 1;
	fixture_assert_close(costed_fwd(&f, "proj_cast", 1), 12e-6 + body);
	f.gpu.nvfp4_cast_efficiency = 0.718;
	layer_dims_from_job(&f.job, &d);
	fixture_assert_close(d.mx_cast_eff, 0.718);
	fixture_assert_close(costed_fwd(&f, "proj_cast", 1),
			     12e-6 + body / 0.718);
	/* MXFP8 casts keep their own rate (mx_cast_efficiency, with TE's
	 * generic kernel), per-tensor FP8 casts stream: the key is NVFP4's */
	f.job.training.dtype = DTYPE_MXFP8;
	f.fw.elementwise.mx_generic_cast = 1;
	f.gpu.mx_cast_efficiency = 0.85;
	layer_dims_from_job(&f.job, &d);
	fixture_assert_close(d.mx_cast_eff, 0.85);
	f.job.training.dtype = DTYPE_FP8;
	layer_dims_from_job(&f.job, &d);
	fixture_assert_close(d.mx_cast_eff, 1);
}

Test(layer, fp8_block_scaled_gemms_run_at_the_gpus_block_rate)
{
	struct fixture f;
	/* GPT layer, tp 1: T = 4096 tokens, h 1024, f 4096 (ungated). fc1
	 * is F = 2 T f h = 34359738368 FLOP; the fixture GPU has no tiles,
	 * so a GEMM is the roofline t_launch + max(F / R, W / B). fp8: R =
	 * 1978.9 TFLOP/s x 0.8 = 1583.12 TFLOP/s, F / R = 21.70 us, against
	 * W = T h + h f (fp8) + T f 2 (bf16 out) = 41943040 B at 3.35 TB/s x
	 * 0.88, 14.2 us: compute-bound, t = 4 us + 21.70 us. At a block rate
	 * of 0.5 the math takes twice as long, 4 us + 43.41 us. The
	 * attention runs in bf16 and does not move. */
	double F = 2.0 * 4096 * 4096 * 1024, R = 1978.9e12 * 0.8;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_BLOCK;
	f.gpu.fp8_block_gemm_rate = 0.5;
	fixture_assert_close(costed_fwd(&f, "fc1", 1), 4e-6 + F / R);
	fixture_assert_close(costed_fwd(&f, "fc1", 0.5), 4e-6 + F / (R / 2));
	fixture_assert_close(costed_fwd(&f, "attn", 0.5),
			     costed_fwd(&f, "attn", 1));
	/* the job's rate: the GPU's under block scaling, else all of it */
	fixture_assert_close(block_lowp_rate(&f.job), 0.5);
	f.job.training.fp8_scaling = FP8_CURRENT;
	fixture_assert_close(block_lowp_rate(&f.job), 1);
	f.job.training.fp8_scaling = FP8_BLOCK;
	f.job.training.dtype = DTYPE_BF16;
	fixture_assert_close(block_lowp_rate(&f.job), 1);
}

/* The time block.c gives op `name` of f's layer forward (bwd 0) or
 * backward (bwd 1) under dt. */
static double costed_op(struct fixture *f, const char *name, int bwd,
			const struct block_dtypes *dt)
{
	static struct block b;
	struct layer_dims d;
	struct layer_ops o;
	int i;

	layer_dims_from_job(&f->job, &d);
	if (bwd)
		layer_bwd(&d, NULL, LREC_NONE, &o);
	else
		layer_fwd(&d, NULL, &o);
	cr_assert_eq(block_cost(&b, &o, &f->gpu, dt, NULL), 0);
	i = fixture_op_index(&o, name);
	cr_assert_geq(i, 0, "no op %s", name);
	return b.op[i].time_s;
}

Test(layer, fp8_fast_accumulation_runs_the_forward_gemms_at_its_efficiency)
{
	struct fixture f;
	/* GPT layer, tp 1, fp8 delayed scaling, the fixture's roofline GPU
	 * (no tiles): fc1 is F = 2 T f h = 2 x 4096 x 4096 x 1024 FLOP,
	 * compute-bound (fp8_block_gpu test above: W / B = 14.2 us). At the
	 * promoted efficiency 0.8, t = 4 us + F / (1978.9 TFLOP/s x 0.8) =
	 * 4 + 21.70 us; with fp8_fast_accum_efficiency 0.9 and the forward
	 * pass fast, 4 us + F / (1978.9 x 0.9) = 4 + 19.29 us (still above
	 * 14.2 us). The backward's fc1 dgrad (same F) stays at 0.8 when only
	 * the forward is fast; the attention (bf16) never moves. A GPU
	 * without the key has one fp8 efficiency: nothing moves. */
	double F = 2.0 * 4096 * 4096 * 1024, R = 1978.9e12;
	struct block_dtypes split = { DTYPE_FP8, DTYPE_BF16, 1, 0, 0 };
	struct block_dtypes fwd = split, all = split;

	fwd.fast_accum = 1u << PASS_FWD | 1u << PASS_RECOMPUTE;
	all.fast_accum = fwd.fast_accum | 1u << PASS_BWD;
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.gpu.fp8_fast_accum_efficiency = 0.9;
	fixture_assert_close(costed_op(&f, "fc1", 0, &split), 4e-6 + F / (R * 0.8));
	fixture_assert_close(costed_op(&f, "fc1", 0, &fwd), 4e-6 + F / (R * 0.9));
	fixture_assert_close(costed_op(&f, "fc1_dgrad", 1, &fwd),
			     4e-6 + F / (R * 0.8));
	fixture_assert_close(costed_op(&f, "fc1_dgrad", 1, &all),
			     4e-6 + F / (R * 0.9));
	fixture_assert_close(costed_op(&f, "attn", 0, &fwd),
			     costed_op(&f, "attn", 0, &split));
	f.gpu.fp8_fast_accum_efficiency = 0;
	fixture_assert_close(costed_op(&f, "fc1", 0, &all), 4e-6 + F / (R * 0.8));
}

Test(layer, fp8_fast_accumulation_passes_from_the_framework)
{
	struct fixture f;
	unsigned fwd = 1u << PASS_FWD | 1u << PASS_RECOMPUTE;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_CURRENT;
	f.fw.fp8_fast_accum = FP8_FAST_NONE;
	cr_assert_eq(block_fast_accum(&f.job), 0u);
	/* Transformer Engine: fprop fast (and its recomputation), dgrad and
	 * wgrad promoted */
	f.fw.fp8_fast_accum = FP8_FAST_FPROP;
	cr_assert_eq(block_fast_accum(&f.job), fwd);
	f.fw.fp8_fast_accum = FP8_FAST_ALL;
	cr_assert_eq(block_fast_accum(&f.job), fwd | 1u << PASS_BWD);
	/* block scaling always promotes; bf16 and MXFP8 have no such mode */
	f.job.training.fp8_scaling = FP8_BLOCK;
	cr_assert_eq(block_fast_accum(&f.job), 0u);
	f.job.training.fp8_scaling = FP8_CURRENT;
	f.job.training.dtype = DTYPE_MXFP8;
	cr_assert_eq(block_fast_accum(&f.job), 0u);
	f.job.training.dtype = DTYPE_BF16;
	cr_assert_eq(block_fast_accum(&f.job), 0u);
}

Test(layer, fp8_cast_transposes_run_at_the_gpus_rate)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *proj;
	/* GPT layer, tp 1: the proj input, n = T q = 4096 x 1024 elements.
	 * Per-tensor FP8 (delayed scaling) on a GPU whose FP8 GEMMs take
	 * only TN writes the data and its transpose (TE's cast_transpose):
	 * at gpu fp8_cast_transpose_efficiency 0.5 the cast's bytes (n 2 B
	 * read, 2 n 1 B written) move at half the streaming rate, so its time
	 * less the fixture's 4 us launch doubles. A cast writing one layout
	 * (fp8_gemm_any_layout), fp8 block scaling and MXFP8 keep their
	 * rates (mem_eff 1: streaming). */
	double t1, t2;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.gpu.fp8_gemm_any_layout = 0;
	f.gpu.fp8_cast_transpose_efficiency = 1;
	t1 = costed_fwd(&f, "proj_cast", 1);
	f.gpu.fp8_cast_transpose_efficiency = 0.5;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	fixture_assert_close(proj->k.mem_eff, 0.5);
	t2 = costed_fwd(&f, "proj_cast", 1);
	fixture_assert_close(t2 - 4e-6, 2 * (t1 - 4e-6));
	f.gpu.fp8_gemm_any_layout = 1;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	fixture_assert_close(proj->k.mem_eff, 1);
	f.gpu.fp8_gemm_any_layout = 0;
	f.job.training.fp8_scaling = FP8_BLOCK;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	fixture_assert_close(proj->k.mem_eff, 1);
	f.job.training.dtype = DTYPE_MXFP8;
	proj = fwd_op(&f, &d, &o, "proj_cast");
	fixture_assert_close(proj->k.mem_eff, 1);
}

Test(layer, fp8_weights_without_transpose_cache_transpose_every_backward)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops bw;
	int i, n = 0, prev;
	double bytes = 0;
	/* GPT layer, tp 1, h 1024, f 4096 (ungated), MHA: its linears hold
	 * qkv 3 h h = 3145728, proj h h = 1048576, fc1 and fc2 f h =
	 * 4194304 weight elements each, 12582912 in all. Per-tensor FP8
	 * (delayed scaling) with framework no_fp8_weight_transpose_cache on a
	 * GPU whose FP8 GEMMs take only TN: each backward transposes each
	 * FP8 weight before its dgrad, read and written at 1 B an element:
	 * 4 kernels, 2 x 12582912 B = 25165824 B, at the GPU's
	 * fp8_cast_transpose_efficiency (0.5 here). The dgrad comes after
	 * its transpose. With the cache (the default), a GPU whose FP8 GEMMs
	 * take any layout, block scaling or bf16: none. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.gpu.fp8_gemm_any_layout = 0;
	f.gpu.fp8_cast_transpose_efficiency = 0.5;
	f.fw.elementwise.no_fp8_weight_transpose_cache = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	for (i = 0; i < bw.n; i++) {
		if (strcmp(bw.op[i].name, "fp8_weight_transpose"))
			continue;
		n++;
		bytes += bw.op[i].k.read_B + bw.op[i].k.write_B;
		fixture_assert_close(bw.op[i].k.read_B, bw.op[i].k.write_B);
		fixture_assert_close(bw.op[i].k.mem_eff, 0.5);
	}
	cr_assert_eq(n, 4);
	fixture_assert_close(bytes, 25165824.0);
	prev = index_named(&bw, "fp8_weight_transpose");
	cr_assert_lt(prev, index_named(&bw, "fc2_dgrad"));
	f.fw.elementwise.no_fp8_weight_transpose_cache = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_named(&bw, "fp8_weight_transpose", PASS_BWD), 0);
	f.fw.elementwise.no_fp8_weight_transpose_cache = 1;
	f.gpu.fp8_gemm_any_layout = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_wt, 0);
	f.gpu.fp8_gemm_any_layout = 0;
	f.job.training.fp8_scaling = FP8_BLOCK;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fp8_wt, 0);
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.job.training.dtype = DTYPE_BF16;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_named(&bw, "fp8_weight_transpose", PASS_BWD), 0);
}
