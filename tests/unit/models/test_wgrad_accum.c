/*
 * test_wgrad_accum.c - a wgrad GEMM that adds into the gradient buffer
 * (beta 1): its epilogue's bytes through the GEMM wave model (block.c
 * accumulating_gemm), and which frameworks' wgrads accumulate at all
 * (layer_ops.c lop_accumulate_w).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "models/block.h"
#include "models/layer.h"
#include "models/layer_impl.h"

/* The time block.c gives the only op of o on g. */
static double one_op_time(const struct layer_ops *o, const struct gpu_spec *g)
{
	static struct block b;
	struct block_dtypes dt = { DTYPE_BF16, DTYPE_BF16, 1, 0, 0 };

	cr_assert_eq(block_cost(&b, o, g, &dt, NULL), 0);
	cr_assert_eq(b.n, 1);
	return b.op[0].time_s;
}

Test(block, accumulating_wgrad_pays_its_epilogue_bytes_per_wave)
{
	struct fixture f;
	struct layer_ops o;
	struct layer_op *op;
	int64_t tm[] = { 128 }, tn[] = { 256 };
	double m = 4096, n = 4096, k = 8192, plain, fused, extra;

	/* The fixture's H100-like GPU with one tile shape, 128 x 256, and no
	 * per-wave or per-kernel overhead. A bf16 wgrad of 4096 x 4096
	 * outputs over k = 8192 tokens: 32 x 16 = 512 tiles on 132 SMs, 3
	 * full waves and one of 116, no split (512 > 132). Its working set
	 * (operands 2 x 4096 x 8192 x 2 = 134 MB) is past L2, so HBM serves
	 * it: 3.35e12 x 0.88 = 2.948e12 B/s. Each wave is compute-bound
	 * (t_c = 2 x 128 x 256 x 8192 / (R / 132) about 100 us against
	 * t_m about 24 us for its 17 x 8 tile block's 69 MB of operands).
	 * Plain, the epilogue stores bf16: 2 B per output. Adding into an
	 * fp32 main_grad (accum_B = 2 m n 4), it reads C and writes D, 8 B
	 * per output, after each wave's mainloop like the store (t_e).
	 * Every tile is whole, so the extra time is
	 *     m n (8 - 2) / 2.948e12 = 100663296 / 2.948e12 = 34.15 us
	 * and the roofline floor (about 411 MB / 2.948e12 = 139 us) stays
	 * below the compute (about 380 us). */
	fixture_gpt(&f, 1, 1024, 16, 128, 2048, 1, 8, 1, 1, 1);
	f.gpu.gemm_tile_m.v = tm;
	f.gpu.gemm_tile_n.v = tn;
	f.gpu.gemm_tile_m.n = f.gpu.gemm_tile_n.n = 1;
	f.gpu.gemm_tile_overhead_s = 0;
	f.gpu.gemm_kernel_overhead_s = 0;
	memset(&o, 0, sizeof(o));
	op = lop_gemm(&o, "fc2_wgrad", PASS_BWD, m, n, k, 0);
	plain = one_op_time(&o, &f.gpu);
	op->k.accum_B = 2 * m * n * 4;
	fused = one_op_time(&o, &f.gpu);
	extra = m * n * 6 / (3.35e12 * 0.88);
	cr_assert_float_eq(extra, 34.15e-6, 0.01e-6);
	cr_assert_float_eq(fused - plain, extra, 1e-9,
			   "fused %g s, plain %g s", fused, plain);
	/* a bf16 main_grad (megatron-bridge's grad_dtype): 4 B per output,
	 * 2 B more than the plain store */
	op->k.accum_B = 2 * m * n * 2;
	cr_assert_float_eq(one_op_time(&o, &f.gpu) - plain, extra / 3, 1e-9);
}

/* fc2's wgrad in the backward pass f's job builds (no recomputation). */
static const struct layer_op *fc2_wgrad(struct fixture *f,
					struct layer_ops *o)
{
	struct layer_dims d;
	const struct layer_op *w;

	layer_dims_from_job(&f->job, &d);
	layer_bwd(&d, NULL, LREC_NONE, o);
	w = fixture_op(o, "fc2_wgrad");
	cr_assert(w);
	return w;
}

Test(layer, fsdp_wgrads_accumulate_nothing)
{
	struct fixture f;
	struct layer_ops o;
	const struct layer_op *w;

	/* Megatron-style (the fixture's framework): fc2's wgrad adds into
	 * the fp32 buffer, 2 x 4096 x 1024 x 4 B. Under torch FSDP's passes
	 * (zero 3, fsdp_grad_passes) autograd's GEMM writes a fresh dW and
	 * fsdp_passes accumulate it: nothing on the GEMM, no add kernel. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.zero_stage = 3;
	w = fc2_wgrad(&f, &o);
	fixture_assert_close(w->k.accum_B, 2 * 4096.0 * 1024 * 4);
	f.fw.fsdp_grad_passes = 1;
	w = fc2_wgrad(&f, &o);
	cr_assert_eq(w->k.accum_B, 0);
	cr_assert_null(fixture_op(&o, "main_grad_add"));
}

Test(layer, autograd_wgrads_accumulate_nothing_fused_or_not)
{
	struct fixture f;
	struct layer_ops o;
	const struct layer_op *w;
	int fusion;

	/* framework wgrad_autograd (plain PyTorch, FSDP2: no main_grad):
	 * autograd's GEMM writes a fresh dW and AccumulateGrad takes it, so
	 * whatever training.gradient_accumulation_fusion says, fc2's wgrad
	 * carries no buffer bytes and no main_grad_add kernel follows. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.wgrad_autograd = 1;
	for (fusion = 0; fusion < 2; fusion++) {
		f.job.training.gradient_accumulation_fusion = fusion;
		w = fc2_wgrad(&f, &o);
		cr_assert_eq(w->k.accum_B, 0);
		cr_assert_null(fixture_op(&o, "main_grad_add"));
	}
}

Test(block, accumulating_grouped_wgrad_pays_its_epilogue_bytes)
{
	struct fixture f;
	struct layer_ops o;
	struct layer_op *op;
	int64_t tm[] = { 128 }, tn[] = { 256 };
	double m = 4096, n = 4096, k = 8192, plain, fused, extra;
	static const double rows[] = { 8192, 8192 };

	/* Two experts' wgrads in one grouped kernel (k = 8192 rows each), the GPU as in the dense test. Both have whole tiles,
	 * so adding into an fp32 main_grad (accum_B = 2 x 2 m n 4) moves 6 B
	 * more per output through the epilogue (gpu_grouped.c t_e):
	 *     2 m n 6 / 2.948e12 = 68.30 us more than the plain kernel. */
	fixture_gpt(&f, 1, 1024, 16, 128, 2048, 1, 8, 1, 1, 1);
	f.gpu.gemm_tile_m.v = tm;
	f.gpu.gemm_tile_n.v = tn;
	f.gpu.gemm_tile_m.n = f.gpu.gemm_tile_n.n = 1;
	f.gpu.gemm_tile_overhead_s = 0;
	f.gpu.gemm_kernel_overhead_s = 0;
	memset(&o, 0, sizeof(o));
	op = lop_gemm(&o, "experts_wgrad", PASS_BWD, m, n, k, 0);
	op->k.kind = KERN_GROUPED;
	op->k.ngroups = 2;
	op->k.group_dim = GROUP_K;
	op->k.rows = rows;
	plain = one_op_time(&o, &f.gpu);
	op->k.accum_B = 2 * 2 * m * n * 4;
	fused = one_op_time(&o, &f.gpu);
	extra = 2 * m * n * 6 / (3.35e12 * 0.88);
	cr_assert_float_eq(extra, 68.30e-6, 0.01e-6);
	cr_assert_float_eq(fused - plain, extra, 1e-9,
			   "fused %g s, plain %g s", fused, plain);
}

Test(block, nvfp4_gemm_launches_its_alpha_kernel)
{
	struct fixture f;
	struct layer_ops o;
	struct gpu_cost plain;
	static struct block b;
	struct block_dtypes dt = { DTYPE_NVFP4, DTYPE_BF16, 1, 0, 0 };

	/* Transformer Engine's NVFP4 GEMM launches
	 * nvte_nvfp4_compute_per_tensor_scale (alpha from the operands'
	 * amaxes) before the cuBLASLt call: the block's time is the GEMM's
	 * own (gpu_gemm at NVFP4) plus one kernel launch, the fixture's 4 us.
	 * An FP8 GEMM launches no such kernel. */
	fixture_gpt(&f, 1, 1024, 16, 128, 2048, 1, 8, 1, 1, 1);
	f.gpu.matrix_peak_flops[DTYPE_NVFP4] = 2 * 1978.9e12;
	memset(&o, 0, sizeof(o));
	lop_gemm(&o, "fc1", PASS_FWD, 4096, 4096, 4096, 1);
	plain = gpu_gemm(&f.gpu, DTYPE_NVFP4, 4096, 4096, 4096, 1);
	cr_assert_eq(block_cost(&b, &o, &f.gpu, &dt, NULL), 0);
	cr_assert_float_eq(b.op[0].time_s - plain.time_s, 4e-6, 1e-12,
			   "block %g s, gemm %g s", b.op[0].time_s, plain.time_s);
	dt.gemm_lowp = DTYPE_FP8;
	plain = gpu_gemm(&f.gpu, DTYPE_FP8, 4096, 4096, 4096, 1);
	cr_assert_eq(block_cost(&b, &o, &f.gpu, &dt, NULL), 0);
	cr_assert_float_eq(b.op[0].time_s, plain.time_s, 1e-12);
}

/* The ops of o named name: their count, and the first one's index. */
static int named(const struct layer_ops *o, const char *name, int *first)
{
	int i, n = 0;

	*first = -1;
	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0) {
			if (n++ == 0)
				*first = i;
		}
	return n;
}

Test(layer, norm_parameters_are_added_by_the_ddp_hook)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *a;
	int at, n;

	/* Megatron DDP's backward post-hook adds each norm parameter's plain
	 * gradient into main_grad (layer_ops.c lop_norm_grad_add). The
	 * fixture's GPT layer: LayerNorm (gamma and beta), h 1024, bf16
	 * activations (2 B), fp32 main_grad (4 B). Its backward has two
	 * norms, the pre-MLP one and the input one, each followed by two
	 * adds (gamma's, beta's: one hook call and one kernel a tensor) of
	 * 1024 elements: read 1024 x (2 + 4) = 6144 B, write 1024 x 4 =
	 * 4096 B, 1024 adds; 4 in the layer. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.act_B, 2);
	cr_assert_eq(d.grad_B, 4);
	cr_assert_eq(d.norm_tensors, 2);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	n = named(&o, "norm_grad_add", &at);
	cr_assert_eq(n, 4);
	a = &o.op[at];
	cr_assert_str_eq(o.op[at - 1].name, "norm2_bwd");
	cr_assert_str_eq(o.op[at + 1].name, "norm_grad_add");
	cr_assert_eq(a->pass, PASS_BWD);
	cr_assert_leq(a->k.launches, 1);	/* 0: the one launch */
	cr_assert_eq(a->host_kernels, 0);
	cr_assert_float_eq(a->k.read_B, 6144, 1e-6);
	cr_assert_float_eq(a->k.write_B, 4096, 1e-6);
	cr_assert_float_eq(a->k.vec_flops, 1024, 1e-6);

	/* Qwen3's per-head q and k norms (RMSNorm, head_dim 1024 / 16 = 64):
	 * two adds more, a weight of 64 elements each: read 64 x 6 = 384 B,
	 * write 256 B; the layer's own norms are RMSNorms too, one add each
	 * (1024 elements, 6144 B read): 4 in the layer */
	f.model.norm = NORM_RMS;
	layer_dims_from_job(&f.job, &d);
	d.qk_norm = 1;
	cr_assert_eq(d.norm_tensors, 1);
	cr_assert_float_eq(d.head_dim, 64, 1e-12);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(named(&o, "norm_grad_add", &at), 4);
	cr_assert_float_eq(o.op[at].k.read_B, 6144, 1e-6);
	cr_assert_str_neq(o.op[at + 1].name, "norm_grad_add");
	at = fixture_op_index(&o, "k_norm_bwd");
	cr_assert(at >= 0);
	for (n = 1; n <= 2; n++) {
		a = &o.op[at + n];
		cr_assert_str_eq(a->name, "norm_grad_add");
		cr_assert_float_eq(a->k.read_B, 384, 1e-6);
		cr_assert_float_eq(a->k.write_B, 256, 1e-6);
	}

	/* no main_grad buffer (wgrad_autograd): AccumulateGrad takes the
	 * gradient, no add; the same under torch FSDP's flat gradients */
	f.fw.wgrad_autograd = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(named(&o, "norm_grad_add", &at), 0);
	f.fw.wgrad_autograd = 0;
	f.job.training.zero_stage = 3;
	f.fw.fsdp_grad_passes = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(named(&o, "norm_grad_add", &n), 0);
}

/*
 * Biases as their own kernels (bias_kernels) also have plain gradients
 * (TE returns grad_bias; the accumulation fusion reaches only the weight),
 * so DDP's hook adds each into main_grad right after its gradient
 * (layer_ops.c lop_bias, lop_param_grad_add). The fixture's GPT layer (h
 * 1024, 16 heads of 64, MHA, ungated MLP f = 4h, tp 1): fc2's (h = 1024
 * elements), fc1's (f = 4096), proj's (h = 1024) and qkv's (q + k + v =
 * 3 x 1024 = 3072): 4 adds of 6 n B read, 4 n B written. The attention's
 * follow attention_bias, fc1's and fc2's mlp_bias (Megatron's
 * add_bias_linear sets both; a Qwen2-style attention bias alone has no
 * MLP bias: Qwen2MLP's linears are bias=False).
 */
Test(layer, bias_parameters_are_added_by_the_ddp_hook)
{
	static const struct {
		const char *grad;
		double n;
	} want[] = {
		{ "fc2_bias_grad", 1024 }, { "fc1_bias_grad", 4096 },
		{ "proj_bias_grad", 1024 }, { "qkv_bias_grad", 3072 },
	};
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	size_t i;
	int at;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.model.attention_bias = 1;
	f.model.mlp_bias = 1;
	f.fw.elementwise.bias_kernels = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.bias_kernels, LAYER_BIAS_ATTN | LAYER_BIAS_MLP);
	cr_assert_eq(d.act_B, 2);
	cr_assert_eq(d.grad_B, 4);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "bias_grad_add"), 4);
	cr_assert_eq(fixture_small_grad_adds(&o), 4);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		at = fixture_op_index(&o, want[i].grad);
		cr_assert(at >= 0, "no %s", want[i].grad);
		fixture_assert_grad_add(&o, at + 1, "bias_grad_add",
					want[i].n);
	}

	/* attention biases alone: proj's and qkv's adds, no MLP bias op */
	f.model.mlp_bias = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "bias_grad_add"), 2);
	cr_assert_eq(fixture_op_index(&o, "fc1_bias_grad"), -1);
	cr_assert_eq(fixture_op_index(&o, "fc2_bias_grad"), -1);
	cr_assert(fixture_op_index(&o, "qkv_bias_grad") >= 0);
	/* MLP biases alone: fc1's and fc2's, none of the attention's */
	f.model.attention_bias = 0;
	f.model.mlp_bias = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "bias_grad_add"), 2);
	cr_assert(fixture_op_index(&o, "fc1_bias_grad") >= 0);
	cr_assert_eq(fixture_op_index(&o, "proj_bias_grad"), -1);
	cr_assert_eq(fixture_op_index(&o, "qkv_bias_grad"), -1);
	f.model.attention_bias = 1;

	/* biases in the GEMM epilogue (no bias kernels): no bias add */
	f.fw.elementwise.bias_kernels = 0;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_eq(fixture_op_count(&o, -1, "bias_grad_add"), 0);

	/* no main_grad buffer (wgrad_autograd): none either */
	f.fw.elementwise.bias_kernels = 1;
	f.fw.wgrad_autograd = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert(fixture_op_index(&o, "qkv_bias_grad") >= 0);
	cr_assert_eq(fixture_small_grad_adds(&o), 0);
}
