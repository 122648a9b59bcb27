/*
 * layer_cast.c - quantization pieces of layer op lists: the low-precision
 * casts (per-tensor FP8, MXFP8, NVFP4), the step's weight cast, the FP8
 * transposes around sequence-parallel gathers and row-parallel inputs,
 * block-scale swizzles, and the TP amax all-reduce. Split from
 * layer_ops.c; shared through layer_impl.h.
 */
#include "layer_impl.h"

#include <math.h>

#include "config/spec_job.h"

/* Quantize n elements to the low dtype, both layouts (none in 16-bit);
 * per-tensor FP8 on a GPU whose FP8 GEMMs take any layout (gpu
 * fp8_gemm_any_layout: Transformer Engine's Float8Quantizer and
 * Float8CurrentScalingQuantizer::create_tensor allocate no transpose where
 * nvte_is_non_tn_fp8_gemm_supported(), pytorch/csrc/quantizer.cpp,
 * release_v2.14), one layout: n B.
 * fp8 current scaling (Transformer Engine Float8CurrentScalingQuantizer::
 * quantize_impl, pytorch/csrc/quantizer.cpp): the amax zeroed (a kernel),
 * the input's amax (a kernel reading it), the scale (a kernel), then the
 * cast: FP8_CS_QUANT_KERNELS (4), the input read twice.
 * NVFP4 (NVFP4Quantizer::quantize_impl, the same file, TE v2.10 through
 * d0067d0): the second-level scale is per tensor, so the quantizer first
 * computes the input's amax (nvte_hadamard_transform_amax for the inputs
 * and gradients, which the NVFP4BlockScaling recipe gives a random
 * Hadamard transform: the input's amax and its transform's in one read;
 * nvte_compute_amax_with_config otherwise), each of which first zeroes
 * the amax in a kernel of its own (hadamard_transform.cu
 * hadamard_transform_amax's ZeroAmaxKernel<<<1, 1>>>; current_scaling.cu
 * launch_amax_kernel's zero_amax_kernel<<<1, 1>>>; v2.10 through v2.14
 * and d0067d0), then quantizes both layouts
 * (nvte_quantize_with_hadamard_transform / nvte_quantize_v2), the global
 * scale taken from the amax inside: NVFP4_QUANT_KERNELS (3), the input
 * read twice. A
 * norm before it does not take the amax over (extensions/normalization.cpp:
 * with the post-RHT amax the norm runs UNFUSED), so no lop_cast_after_norm
 * saving. */
/* MXFP8 (Transformer Engine's quantize_mxfp8 kernel, the default
 * through TE 2.15; the specialized cast-only kernels became the default
 * with TE PR #2958, 2026-05-12): a cast writing the column-wise layout
 * (with the row-wise, or alone) runs at the GPU's mx_cast_efficiency of
 * the streaming rate, a row-wise-only cast at the streaming rate (the
 * B200 figures and their derivation are in configs/gpus/b200.yaml).
 * Per-tensor FP8 writing both layouts (delayed or current scaling on a
 * GPU whose FP8 GEMMs take only TN) runs Transformer Engine's
 * cast_transpose, which reads the input once and writes the data and its
 * transpose through shared memory; on gfx942 TE-ROCm's kernels reach
 * about half the streaming rate (gpu fp8_cast_transpose_efficiency; the
 * MI300X figures and their source are in configs/gpus/mi300x.yaml).
 * An NVFP4 quantize (the amax and the cast together) runs at the GPU's
 * nvfp4_cast_efficiency of the streaming rate (measured on B300 by
 * Transformer Engine's GEMM profiling guide: configs/gpus/b300.yaml). */
static void cast_layouts(struct layer_ops *o, const char *name,
			 enum layer_pass pass, const struct layer_dims *d,
			 int lowp, double n, int one_layout)
{
	struct layer_op *op;

	if (!lowp)
		return;
	op = lop_memop(o, name, pass, n * d->act_B,
		       (one_layout ? 1 : 2) * n * d->lowp_B, n);
	op->host = HOST_MODULE;
	/* a layout written column-wise: MXFP8's rate; both layouts of
	 * per-tensor FP8 (cast_transpose): the GPU's rate for it */
	op->k.mem_eff = d->mx_cast_eff * (one_layout ? 1 : d->fp8_ct_eff);
	if (d->fp8_current) {
		op->k.read_B += n * d->act_B;
		op->k.launches = FP8_CS_QUANT_KERNELS;
		op->amax_pass = 1;
	} else if (d->nvfp4_amax) {
		op->k.read_B += n * d->act_B;
		op->k.launches = NVFP4_QUANT_KERNELS;
	}
}

void lop_cast(struct layer_ops *o, const char *name, enum layer_pass pass,
	      const struct layer_dims *d, int lowp, double n)
{
	cast_layouts(o, name, pass, d, lowp, n, d->fp8_one_layout);
}

/* The step's quantization of a unit's low-precision weights (d->wcast:
 * framework weight_cast_per_step). Transformer Engine's linear modules
 * quantize their weight only when called with is_first_microbatch (or
 * None) and keep the quantized copy in a workspace for the step's other
 * microbatches (module/base.py get_weight_workspace(update_workspace=
 * is_first_microbatch), NVIDIA/TransformerEngine release_v2.14);
 * Megatron-Core's TE wrappers pass it True on the first call of a step
 * and False after (extensions/transformer_engine.py is_first_microbatch,
 * reset by set_is_first_microbatch from the schedules' forward_step at a
 * chunk's first microbatch, NVIDIA/Megatron-LM @ d98e8a64dd). With fp8
 * parameter gathers the MXFP8 cast moves to the gather (param_and_grad_
 * buffer.py _post_param_sync's copy_tensors_to_quantized_params): the
 * same bytes, still before the chunk's first forward. Per-tensor FP8
 * (delayed or current scaling) with fp8 parameters (d->fp8_params) has
 * no step cast: the weights are Float8Tensors, which the distributed
 * optimizer writes shard by shard from its fp32 master copy
 * (Megatron-Core fp8_utils.py quantize_param_shard -> Transformer
 * Engine's cast_master_weights_to_fp8: 1/dp of each weight a GPU, in
 * the optimizer step, not charged here) and gathers in one byte; TE's
 * linear modules use a Float8Tensor weight as it is (no quantize), and
 * after the gather post_all_gather_processing makes its transpose
 * (Float8Tensor._create_transpose) only where the GPU's FP8 GEMMs take
 * TN alone (not is_non_tn_fp8_gemm_supported(); TransformerEngine
 * pytorch/tensor/utils.py, v2.8 through main; Megatron-Core fp8_utils.py
 * post_all_gather_processing): one transpose kernel a weight, reading
 * and writing its FP8 bytes, at the cast-transpose rate. Each weight's cast
 * is cast_layouts' of an input of its size (the layouts its fprop and
 * dgrad GEMMs read: both, or the row-wise one where the GPU's FP8 GEMMs
 * take any layout or the transpose is made per dgrad, d->fp8_wt), one
 * kernel (or the recipe's kernel chain) per weight. The weights are
 * read off the unit's backward, bwd: every weight has one wgrad GEMM
 * whose result is its shape (m x n, per local expert for a grouped one,
 * whose rows run along k), so their low-precision wgrads (the ops
 * lop_wgrad marks, in the job's low dtype: not the router's or the LM
 * head's) give the elements n and the weights w. Into o (cleared): one
 * op, dep on the unit's input; none in 16-bit or without d->wcast. */
void layer_weight_cast(const struct layer_dims *d, const struct layer_ops *bwd,
		       struct layer_ops *o)
{
	double n = 0, w = 0, chain;
	struct layer_op *op;
	int i;

	o->n = 0;
	o->scope = SCOPE_NONE;
	if (!d->lowp || !d->wcast)
		return;
	for (i = 0; i < bwd->n; i++) {
		const struct kern *k = &bwd->op[i].k;

		if (bwd->op[i].kind != LOP_KERNEL || !bwd->op[i].wgrad ||
		    !k->lowp || k->dt >= 0)
			continue;
		if (k->kind == KERN_GEMM) {
			n += k->m * k->n * k->batch;
			w += k->batch;
		} else if (k->kind == KERN_GROUPED && k->group_dim == GROUP_K) {
			n += k->m * k->n * k->ngroups;
			w += k->ngroups;
		}
	}
	if (!(n > 0) || (d->fp8_params && d->fp8_one_layout))
		return;
	if (d->fp8_params) {	/* the gathered FP8 weights' transposes */
		op = lop_memop(o, "weight_transpose", PASS_FWD, n * d->lowp_B,
			       n * d->lowp_B, 0);
		op->k.mem_eff = d->fp8_ct_eff;
		chain = 1;
	} else {
		cast_layouts(o, "weight_cast", PASS_FWD, d, 1, n,
			     d->fp8_one_layout || d->fp8_wt);
		op = &o->op[o->n - 1];
		chain = op->k.launches > 1 ? op->k.launches : 1;
	}
	op->k.launches = w * chain;
	op->dep[0] = LAYER_IN;
	/* inside the first GEMM's module call, from C++ */
	op->host = HOST_FREE;
	op->host_kernels = (uint16_t)fmin(op->k.launches - 1, 65535);
}

/* ---- per-tensor FP8 under TP sequence parallelism (fp8_rowwise_ag) ----
 *
 * Transformer Engine gathers a per-tensor FP8 tensor row-wise only
 * (Float8Quantizer and Float8CurrentScalingQuantizer::
 * supports_only_rowwise_all_gather() is True, and LayerNormLinear/Linear
 * set_usage(columnwise=False) on the input quantizer when
 * with_input_all_gather, NVIDIA/TransformerEngine v2.18
 * module/layernorm_linear.py, linear.py; the output gradient's quantizer
 * likewise in base.py grad_output_preprocess), so the cast before the
 * gather writes the row-wise copy of the local shard only, and the wgrad's
 * transposed copy is made afterwards from the gathered tensor
 * (update_usage(columnwise_usage=True): a transpose kernel reading and
 * writing t x n FP8 elements). Transformer Engine 1.x (v1.11, NeMo 24.09)
 * does the same by hand: cast_to_fp8 into the userbuffer, then
 * tex.fp8_transpose(ln_out_total) and tex.fp8_transpose(grad_output_c)
 * before the wgrad GEMMs (layernorm_linear.py, linear.py). */
void lop_cast_before_gather(struct layer_ops *o, const char *name,
			    enum layer_pass pass, const struct layer_dims *d,
			    int lowp, double n)
{
	cast_layouts(o, name, pass, d, lowp, n,
		     d->fp8_one_layout || (lowp && d->fp8_rowwise_ag));
}

/* The transpose of a gathered t x n FP8 tensor (see above), after the
 * op at index after; returns its index, or after when there is none. */
int16_t lop_gathered_transpose(struct layer_ops *o, const char *name,
			       const struct layer_dims *d, int lowp,
			       double t, double n, int16_t after)
{
	struct layer_op *op;

	/* torchao's float8 mm transposes a row-major operand the GEMM
	 * wants column-major on any GPU (fp8_wcall, lop_weight_cast_call) */
	if (!(lowp && (d->fp8_rowwise_ag || (d->fp8_wcall && d->sp))))
		return after;
	op = lop_memop(o, name, PASS_BWD, t * n * d->lowp_B, t * n * d->lowp_B,
		       0);
	op->host = HOST_FREE;
	op->dep[0] = after;
	return lop_tail(o);
}

/* ---- the row-parallel input under Transformer Engine 1.x (fp8_row_t) ----
 *
 * Transformer Engine 1.x's _Linear.forward quantizes its input with
 * fp8_cast_transpose_fused (the row-wise data and its transpose, saved
 * for the wgrad) only when `not sequence_parallel`; a row-parallel
 * linear under TP sequence parallelism (Megatron-Core's
 * TERowParallelLinear: the attention output and the second MLP GEMM)
 * takes cast_to_fp8, the row-wise data alone, and its backward makes
 * the transpose before the wgrad GEMM: inputmat_t_total =
 * tex.fp8_transpose(inputmat_total, ...) (NVIDIA/TransformerEngine
 * v1.10 08a85d3b transformer_engine/pytorch/module/linear.py, the same
 * in v1.13 e5edd6cc; v2.0 e5cc6c29 sets the input quantizer's
 * columnwise usage to backward_needs_input, both layouts in one cast).
 * Here: the forward cast writes one layout (lop_row_fwd) and, before
 * the wgrad, an FP8 transpose of the t x k saved input, read and
 * written once, inside the module's backward. */
/* The row-parallel input's forward cast: one layout under fp8_row_t
 * (its transpose made in the backward, above). */
void lop_cast_row_input(struct layer_ops *o, const char *name,
			enum layer_pass pass, const struct layer_dims *d,
			double n)
{
	cast_layouts(o, name, pass, d, d->lowp, n,
		     d->fp8_one_layout || (d->lowp && d->fp8_row_t));
	/* torchao: the input is a Shard(-1) DTensor (fp8_wcall) */
	lop_dtensor_amax_reduce(o, pass, d, d->lowp, 1);
}

void lop_row_input_transpose(struct layer_ops *o,
			     const struct layer_dims *d, int lowp, double t,
			     double k)
{
	if (!(lowp && d->fp8_row_t))
		return;
	lop_memop(o, "fp8_row_input_transpose", PASS_BWD, t * k * d->lowp_B,
		  t * k * d->lowp_B, 0)->host = HOST_FREE;
}

/* Transformer Engine before 2.18 keeps a weight's quantized copy with
 * its block scales (MXFP8 1 B a 32, NVFP4 1 B a 16) in the plain layout,
 * so every GEMM that reads the weight (forward with the row-wise scales,
 * dgrad with the column-wise) first swizzles them into a scratch buffer
 * in the layout the GEMM wants, and drops it: swizzle_scales_for_gemm
 * (pytorch/csrc/extensions/gemm.cpp @ 71bbefbf, f031cf87b, the
 * Megatron-Bridge 26.04 pins) runs nvte_swizzle_scaling_factors, a
 * grouped GEMM's experts' weights together in
 * nvte_multi_tensor_swizzle_scaling_factors (SWIZZLE_TENSORS_PER_KERNEL
 * a launch), from inside the GEMM's C++ call. TE PR #3093 (42cb81b14,
 * 2026-06-24, first in v2.18) swizzles the cached weight once at
 * quantize time instead: "the weight scale swizzle ran 2*N times per
 * step" (framework weight_scale_swizzle). Before TE 2.12 (PR #2486,
 * 99df88106: quantizers write the GEMM's layout, optimize_for_gemm) the
 * GEMM swizzled its other operands the same way, the input or gradient
 * (forward, dgrad) and both in wgrad: gemm.cpp @ 70f53666 (2.9.0, the
 * Megatron-Bridge 25.11 pin) swizzle_scaling_factors(A), (B) on every
 * call (framework act_scale_swizzle). Here, before a GEMM: w weight
 * elements and x elements of nx quantized activation operands, held as
 * `tensors` tensors each (1, or the local experts); the scale bytes are
 * read and written, one kernel an operand swizzled. */
struct layer_op *lop_swizzle(struct layer_ops *o, enum layer_pass pass,
			     const struct layer_dims *d, int lowp, double w,
			     double x, int nx, double tensors)
{
	struct layer_op *op;
	double s = w * d->w_swizzle_B + x * d->x_swizzle_B;
	int kernels = (w > 0 && d->w_swizzle_B > 0) +
		      (x > 0 && d->x_swizzle_B > 0 ? nx : 0);

	if (!lowp || kernels == 0 || !(s > 0))
		return NULL;
	op = lop_memop(o, "scale_swizzle", pass, s, s, 0);
	op->k.launches = kernels * ceil(tensors / SWIZZLE_TENSORS_PER_KERNEL);
	op->host = HOST_FREE;	/* inside the GEMM's call */
	op->host_kernels = (uint16_t)(op->k.launches - 1);
	return op;
}

/* A per-tensor FP8 linear's weight without its transpose cache (framework
 * no_fp8_weight_transpose_cache; d->fp8_wt): Transformer Engine's
 * forward casts the weight on a step's first microbatch and keeps only
 * the row-wise FP8 data, so before every dgrad GEMM the backward makes
 * the transposed copy the GEMM reads and frees it after (ROCm/
 * TransformerEngine @ 024085c5 transformer_engine/pytorch/module/
 * linear.py _Linear.backward: create_fp8_weight_transpose_cache(
 * weight_fp8) before the dgrad general_gemm, clear_fp8_weight_transpose_
 * cache after; forward get_weight_workspace(create_transpose_cache=
 * keep_fp8_weight_transpose_cache)) [D]. Here, before the dgrad: an FP8
 * transpose of the w weight elements, read w and written w times the
 * element's bytes, at the GPU's cast_transpose rate (the same tiled
 * transpose through shared memory [?]; d->fp8_ct_eff). */
void lop_weight_transpose(struct layer_ops *o, const struct layer_dims *d,
			  int lowp, double w)
{
	struct layer_op *op;

	if (!lowp || !d->fp8_wt || !(w > 0))
		return;
	op = lop_memop(o, "fp8_weight_transpose", PASS_BWD, w * d->lowp_B,
		       w * d->lowp_B, 0);
	op->k.mem_eff = d->fp8_ct_eff;
}

/* The cast at index at (if it is one) quantizes a norm's output inside a
 * LayerNormLinear: under fp8 current scaling the norm kernel computes the
 * amax as it writes (normalization.cpp FUSED_NORM_AMAX_FP8, then
 * quantize_with_amax): no amax pass; the amax's zeroing, the scale and
 * the cast kernels left (FP8_CS_NORM_QUANT_KERNELS, 3). */
void lop_cast_after_norm(struct layer_ops *o, int16_t at,
			 const struct layer_dims *d)
{
	struct layer_op *op = &o->op[at];

	if (at >= o->n || op->kind != LOP_KERNEL || !op->amax_pass)
		return;
	op->k.read_B -= op->k.vec_flops * d->act_B;	/* vec_flops = n */
	op->k.launches = FP8_CS_NORM_QUANT_KERNELS;
	op->amax_pass = 0;
}

/* A cast of a sequence-parallel shard that a TP all-gather will carry in
 * fp8 (a column-parallel input forward, a row-parallel output gradient
 * backward): under fp8 current scaling every TP rank must use one scale,
 * so Transformer Engine sets the quantizer's with_amax_reduction over the
 * TP group (Linear, LayerNormLinear, LayerNormMLP
 * _customize_quantizers_float8_current_scaling when sequence_parallel,
 * release_v2.14) and quantize_impl all-reduces (MAX) the fp32 amax between
 * the amax and the scale kernels, the stream waiting for it
 * (amax_reduction_group->allreduce(...)->wait()): a 4 B all-reduce after
 * the cast's amax, before the gather. Here after the cast op, which holds
 * all four kernels; the chain's time is the same. NVFP4 likewise: its
 * per-tensor second-level scale comes from the amax, which the same
 * quantizers (_customize_quantizers_nvfp4 of Linear, LayerNormLinear,
 * LayerNormMLP since the NVFP4 recipe, 3f5b4754, v2.10 through v2.12)
 * all-reduce over the TP group (NVFP4Quantizer::quantize_impl
 * allreduce_coalesced(...)->wait(), rowwise and columnwise amaxes in one
 * call), between the amax kernel and the quantize. */
void lop_sp_amax_reduce(struct layer_ops *o, enum layer_pass pass,
			const struct layer_dims *d, int lowp)
{
	if (lowp && (d->fp8_current || d->nvfp4_amax) && d->sp)
		lop_tpcoll(o, "fp8_amax_tp_allreduce", pass, d, COLL_ALLREDUCE,
			   FP8_AMAX_B);
}

/* ---- torchao's Float8Linear (framework fp8_weight_cast_per_call) ----
 *
 * torchao's Float8Linear.forward casts its 16-bit weight on every call:
 * _get_weight_scale (tensor_to_scale: torch.max(torch.abs(w)), a pass
 * reading the weight) then _cast_weight_to_float8_t (a cast reading it
 * again and writing the fp8 data), both outside any step cache, and
 * matmul_with_hp_or_float8_args saves that fp8 weight for the backward,
 * whose dgrad mm gets it row-major: float8_ops.py preprocess_addmm makes
 * the column-major copy (b_data.t().contiguous().t()) before every
 * _scaled_mm, as it does for the saved row-major input of the wgrad mm
 * (pytorch/ao @ 62430408 torchao/float8/float8_linear.py, float8_ops.py,
 * torchtitan's 2025-06 benchmark; @ eab345c2, its 2024-12 one, the same
 * per-call cast and preprocess_addmm) [S]: d->fp8_wt and
 * lop_gathered_transpose. Under tensor parallelism the weight is a
 * TP-sharded DTensor, so its amax (a full reduction of a Shard
 * placement) is a Partial(max) that the scale's pointwise ops
 * redistribute to Replicate: a 4 B all-reduce over the TP group between
 * the amax and the cast [?: DTensor's reduction and pointwise strategies
 * read from memory]; the same for every other cast of a TP-sharded
 * tensor (the row-parallel input, the column-parallel output's
 * gradient: lop_dtensor_amax_reduce). Here, before the linear's GEMM:
 * one op of the two kernels (2 w 16-bit bytes read, w fp8 bytes
 * written), then the all-reduce. Two kernels: inductor generates the
 * full-tensor amax as a reduction of its own and the scale's arithmetic
 * inside the cast [?]. */
void lop_weight_cast_call(struct layer_ops *o, enum layer_pass pass,
			  const struct layer_dims *d, int lowp, double w)
{
	struct layer_op *op;

	if (!lowp || !d->fp8_wcall || !(w > 0))
		return;
	op = lop_memop(o, "fp8_weight_cast", pass, 2 * w * d->act_B,
		       w * d->lowp_B, w);
	op->k.launches = FP8_WEIGHT_CALL_KERNELS;
	op->host = HOST_FREE;	/* inside the linear's module call */
	lop_dtensor_amax_reduce(o, pass, d, lowp, 1);
}

/* n amax all-reduces of casts of TP-sharded DTensors (see above). */
void lop_dtensor_amax_reduce(struct layer_ops *o, enum layer_pass pass,
			     const struct layer_dims *d, int lowp, int n)
{
	int i;

	if (!lowp || !d->fp8_wcall)
		return;
	for (i = 0; i < n; i++)
		lop_tpcoll(o, "fp8_dtensor_amax_allreduce", pass, d,
			   COLL_ALLREDUCE, FP8_AMAX_B);
}
