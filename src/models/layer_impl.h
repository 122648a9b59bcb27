/*
 * layer_impl.h - what the op-list builders of src/models share
 * (layer_ops.c and layer_cast.c define them; layer.c, attn.c and moe.c
 * use them).
 * Private to src/models.
 *
 * Every function appends to the list o; an appended op depends on the
 * op before it (or on the list's input) unless the caller rewires its
 * dep[]. Names are static strings.
 */
#ifndef LLMSIM_MODELS_LAYER_IMPL_H
#define LLMSIM_MODELS_LAYER_IMPL_H

#include "layer.h"

/* Nominal vector FLOPs per element of the memory-bound kernels. */
enum { NORM_FLOPS = 4, ACT_FLOPS = 8, ADD_FLOPS = 1, CE_FLOPS = 6 };

/* GPU kernels of one Transformer Engine fp8 per-tensor current-scaling
 * quantize (Float8CurrentScalingQuantizer::quantize_impl, pytorch/csrc/
 * quantizer.cpp, release_v2.9 .. v2.17 alike): nvte_compute_amax, whose
 * launch_amax_kernel first zeroes the amax (zero_amax_kernel<<<1, 1>>>)
 * and then reduces it (amax_kernel), nvte_compute_scale_from_amax, and
 * nvte_quantize_v2 (the cast, with its transpose on Hopper): 4. After a
 * norm that wrote the amax (normalization.cpp FUSED_NORM_AMAX_FP8:
 * create_unquantized_tensor_with_amax's amax.zero_() before the norm,
 * then quantize_with_amax, compute_amax false): zero, scale and cast, 3. */
enum { FP8_CS_QUANT_KERNELS = 4, FP8_CS_NORM_QUANT_KERNELS = 3 };

/* GPU kernels of one Transformer Engine NVFP4 quantize with its per-tensor
 * amax (NVFP4Quantizer::quantize_impl, quantizer.cpp, v2.10 through
 * d0067d0): the amax zeroed (ZeroAmaxKernel with the Hadamard transform,
 * zero_amax_kernel without), the amax, the quantize: 3. */
enum { NVFP4_QUANT_KERNELS = 3 };

/* Tensors one multi-tensor scale swizzle kernel takes (Transformer
 * Engine common/swizzle/swizzle.cu kMaxTensorsPerKernel, @ 71bbefbf). */
enum { SWIZZLE_TENSORS_PER_KERNEL = 64 };

/* The amax a current-scaling quantizer reduces across its TP group: one
 * fp32 (quantizer.cpp quantize_impl's amax tensor), 4 B. */
enum { FP8_AMAX_B = 4 };
/* torchao's per-call weight cast: the amax reduction and the cast
 * (layer_cast.c lop_weight_cast_call) [?] */
enum { FP8_WEIGHT_CALL_KERNELS = 2 };

/* The index a new op would use to wait for the current last op. */
int16_t lop_tail(const struct layer_ops *o);

/* Append an op depending on the previous one (or the list's input). */
struct layer_op *lop_push(struct layer_ops *o, const char *name,
			  enum layer_op_kind kind, enum layer_pass pass);

/* A GEMM C[m,n] = A[m,k] B[k,n], in the low dtype when lowp. */
struct layer_op *lop_gemm(struct layer_ops *o, const char *name,
			  enum layer_pass pass, double m, double n, double k,
			  int lowp);

/* A weight's gradient GEMM dW[m,n] = X^T[m,k] dY[k,n] (backward, k the
 * tokens): lop_gemm's, marked wgrad (layer_weight_cast reads the
 * weights off these). */
struct layer_op *lop_wgrad(struct layer_ops *o, const char *name, double m,
			   double n, double k, int lowp);

/* A chunked linear-recurrence kernel (KERN_CHUNK): `batch` products of
 * (m, n, k) per (chunk, head), operands of in_B and results of out_B
 * bytes an element, a backward kernel when bwd; in the base dtype. */
struct layer_op *lop_chunk(struct layer_ops *o, const char *name,
			   enum layer_pass pass, double m, double n, double k,
			   double batch, double in_B, double out_B, int bwd);

/* A memory-bound kernel: bytes read and written, vector FLOPs. */
struct layer_op *lop_memop(struct layer_ops *o, const char *name,
			   enum layer_pass pass, double read_B, double write_B,
			   double flops);

/* A collective over a layout group on a communication stream. */
struct layer_op *lop_coll(struct layer_ops *o, const char *name,
			  enum layer_pass pass, enum layout_group group,
			  enum layer_stream stream, enum coll_op c, double bytes);

/* A TP collective; none when t = 1 (returns NULL). */
struct layer_op *lop_tpcoll(struct layer_ops *o, const char *name,
			    enum layer_pass pass, const struct layer_dims *d,
			    enum coll_op c, double bytes);

/* Norm (width h) forward over the SP shard; residual add (+ dropout). */
void lop_norm_fwd(struct layer_ops *o, const char *name, enum layer_pass pass,
		  const struct layer_dims *d);
void lop_norm_linear(struct layer_ops *o, int16_t from);
void lop_add_fwd(struct layer_ops *o, const char *name, enum layer_pass pass,
		 const struct layer_dims *d);

/* Quantize n elements to the low dtype, both layouts (none when !lowp). */
void lop_cast(struct layer_ops *o, const char *name, enum layer_pass pass,
	      const struct layer_dims *d, int lowp, double n);

/* Before a GEMM: the block scales of its weight (w elements) and of its
 * nx quantized activation operands (x elements), `tensors` tensors each,
 * swizzled where the framework's TE does it per GEMM (layer_cast.c);
 * NULL when nothing is. */
struct layer_op *lop_swizzle(struct layer_ops *o, enum layer_pass pass,
			     const struct layer_dims *d, int lowp, double w,
			     double x, int nx, double tensors);

/* The cast at index at quantizes a norm's output (lop_cast_after_norm,
 * layer_cast.c). */
void lop_cast_after_norm(struct layer_ops *o, int16_t at,
			 const struct layer_dims *d);

/* layer_cast.c's pieces for the column- and row-parallel GEMMs
 * (layer_ops.c): the cast of a shard a TP all-gather carries (one layout
 * under fp8_rowwise_ag); the FP8 transpose of a gathered t x n tensor
 * after op `after` (returns its index, or after when none); the
 * row-parallel input's cast and its FP8 transpose (fp8_row_t); a
 * weight's FP8 transpose before its dgrad (fp8_wt); the TP amax
 * all-reduce of a sequence-parallel cast (fp8 current scaling, NVFP4). */
void lop_cast_before_gather(struct layer_ops *o, const char *name,
			    enum layer_pass pass, const struct layer_dims *d,
			    int lowp, double n);
int16_t lop_gathered_transpose(struct layer_ops *o, const char *name,
			       const struct layer_dims *d, int lowp,
			       double t, double n, int16_t after);
void lop_cast_row_input(struct layer_ops *o, const char *name,
			enum layer_pass pass, const struct layer_dims *d,
			double n);
void lop_row_input_transpose(struct layer_ops *o,
			     const struct layer_dims *d, int lowp, double t,
			     double k);
void lop_weight_transpose(struct layer_ops *o, const struct layer_dims *d,
			  int lowp, double w);
void lop_sp_amax_reduce(struct layer_ops *o, enum layer_pass pass,
			const struct layer_dims *d, int lowp);
/* torchao's Float8Linear: the weight's cast on every forward call and
 * its TP amax all-reduce; n amax all-reduces of TP-sharded casts */
void lop_weight_cast_call(struct layer_ops *o, enum layer_pass pass,
			  const struct layer_dims *d, int lowp, double w);
void lop_dtensor_amax_reduce(struct layer_ops *o, enum layer_pass pass,
			     const struct layer_dims *d, int lowp, int n);

void lop_bias(struct layer_ops *o, const char *name, enum layer_pass pass,
	      const struct layer_dims *d, int which, double tokens, double n);

/* Column-parallel GEMM forward: n outputs from k inputs over T tokens,
 * with its SP all-gather of the input. */
void lop_column_fwd(struct layer_ops *o, const char *cast_name,
		    const char *ag_name, const char *name,
		    enum layer_pass pass, const struct layer_dims *d,
		    double n, double k, int lowp);

/* Linears that read one input as separate modules (layer_dims
 * split_linears): the parts' GEMM names forward, dgrad and wgrad, and
 * their output widths, in the model code's call order. */
struct lin_parts {
	int n;
	const char *const *fwd, *const *dgrad, *const *wgrad;
	double w[3];
};

/* lop_column_fwd over parts: one cast, one SP all-gather (and its copy),
 * then each part's GEMM. */
void lop_column_fwd_parts(struct layer_ops *o, const char *cast_name,
			  const char *ag_name, const struct lin_parts *p,
			  enum layer_pass pass, const struct layer_dims *d,
			  double k, int lowp);

/* Row-parallel GEMM forward: h outputs from k inputs, then its all-reduce
 * (reduce-scatter with SP). */
void lop_row_fwd(struct layer_ops *o, const char *cast_name,
		 const char *name, const char *coll_name, enum layer_pass pass,
		 const struct layer_dims *d, double k);

/* The wgrad GEMM just pushed adds its n elements (of w weight tensors;
 * lop_accumulate: one) into the gradient buffer: in its epilogue, or a
 * separate add kernel per weight without gradient accumulation fusion. */
void lop_accumulate_w(struct layer_ops *o, const struct layer_dims *d,
		      double n, double w);
void lop_accumulate(struct layer_ops *o, const struct layer_dims *d, double n);

/* A gated activation over t rows (fc1 output u wide, f wide after it)
 * and its backward: one fused kernel, or PyTorch's act(g) * u on the
 * halves where d->eager_act (layer_ops.c). */
struct layer_op *lop_act_fwd(struct layer_ops *o, const char *name,
			     enum layer_pass pass, const struct layer_dims *d,
			     double t, double u, double f);
struct layer_op *lop_act_bwd(struct layer_ops *o, const char *name,
			     const struct layer_dims *d, double t, double u,
			     double f);

/* A chain of k PyTorch kernels moving read_B and write_B, strided_B of
 * them through the generic elementwise path. */
struct layer_op *lop_eager(struct layer_ops *o, const char *name,
			   enum layer_pass pass, double read_B, double write_B,
			   double strided_B, double k, double flops);

/* Autograd sums the two gradients of a residual connection (the norm's
 * dx and the residual branch's): one add kernel, read 2n, write n. */
void lop_residual_grad(struct layer_ops *o, const char *name,
		       const struct layer_dims *d);

void lop_norm_bwd(struct layer_ops *o, const char *name,
		  const struct layer_dims *d);

/* Row-parallel GEMM (k inputs -> h outputs) backward. */
void lop_row_bwd(struct layer_ops *o, const char *ag_name,
		 const char *cast_name, const char *dgrad, const char *wgrad,
		 const struct layer_dims *d, double k);

/* Column-parallel GEMM (k inputs -> n outputs) backward; returns the
 * index of its input-gradient reduction (LAYER_NONE without TP). wgrad
 * NULL: the input gradient only, no weight gradient (nor the input's
 * all-gather it needs under SP): a deferred one (layer_head_wgrad). */
int16_t lop_column_bwd(struct layer_ops *o, const char *ag_name,
		       const char *cast_name, const char *dgrad,
		       const char *coll_name, const char *wgrad,
		       const struct layer_dims *d, double n, double k, int lowp);

/* lop_column_bwd over parts: each part's dgrad, their sum, the
 * reduction, each part's wgrad. */
int16_t lop_column_bwd_parts(struct layer_ops *o, const char *ag_name,
			     const char *cast_name, const char *coll_name,
			     const struct lin_parts *p,
			     const struct layer_dims *d, double k, int lowp);

/* Norm backward waiting also for the reduction red; then its
 * parameters' gradient add (lop_norm_grad_add). */
void lop_norm_bwd_after(struct layer_ops *o, const char *name,
			const struct layer_dims *d, int16_t red);

/* k norms' parameter gradients (n elements a tensor, d->norm_tensors
 * tensors a norm) added into main_grad by Megatron DDP's backward
 * post-hook: one kernel a tensor (layer_ops.c). */
void lop_norm_grad_add(struct layer_ops *o, const struct layer_dims *d,
		       double n, double k);

/* k other plain-gradient tensors of n elements (biases, a gated RMSNorm's
 * weight, Mamba's and GDN's small parameters), the same add, one op
 * `name` a tensor (layer_ops.c). */
void lop_param_grad_add(struct layer_ops *o, const struct layer_dims *d,
			const char *name, double n, double k);

/* ---- attention (attn.c) ---- */

/* From the first norm's output to the input of the output projection:
 * Q/K/V projections (or MLA's down and up projections), rotary, the
 * attention core (context-parallel as the job says, over kind's window),
 * for a forward or a full recomputation. */
void attn_fwd(struct layer_ops *o, enum layer_pass pass,
	      const struct layer_dims *d, const struct layer_kind *k);

/* The attention core's backward (after the recomputation of the modules
 * mods names: bits 1 << enum recompute_module, layer_rc_modules),
 * rotary and the projections' backward down to the norm1 backward
 * (included). */
void attn_bwd(struct layer_ops *o, unsigned mods, const struct layer_dims *d,
	      const struct layer_kind *k);

/* Width of the attention output the projection reads: a/t v. */
double attn_out_width(const struct layer_dims *d);

/* ---- DeepSeek's attention ops (attn_mla.c) ---- */

/* MLA's down projections on the SP shard, its up projections over the
 * gathered tokens, and the torch.cat assembly of q and k (forward, or
 * the splits' and expand's gradients for PASS_BWD; nothing unless
 * d->mla_concat). */
void attn_mla_down_fwd(struct layer_ops *o, enum layer_pass pass,
		       const struct layer_dims *d);
void attn_mla_up_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d);
void attn_mla_concat(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d);

/* DeepSeek Sparse Attention's lightning indexer: its forward and
 * backward on one GPU (nothing without DSA), and its parameters (0
 * without DSA). */
void attn_indexer_fwd(struct layer_ops *o, enum layer_pass pass,
		      const struct layer_dims *d);
void attn_indexer_bwd(struct layer_ops *o, const struct layer_dims *d);
double attn_indexer_params(const struct mla_dims *m, double h);

/* ---- Gated DeltaNet (gdn.c) ---- */

/* From the first norm's output to the out-projection's input of a
 * linear_attention layer, and its backward down to the norm1 backward
 * (included); mods as attn_bwd's (none applies to the mixer: gdn.c). */
void gdn_fwd(struct layer_ops *o, enum layer_pass pass,
	     const struct layer_dims *d);
void gdn_bwd(struct layer_ops *o, unsigned mods, const struct layer_dims *d);

/* Widths on one GPU: the out-projection's input H_v d_v / t, the
 * in-projection's output (2 qk + 2 v + 2 H_v) / t. */
double gdn_out_width(const struct layer_dims *d);
double gdn_in_width(const struct layer_dims *d);

/* The chunked kernel's chunk, C (64). */
double gdn_chunk(const struct layer_dims *d);

/* Parameters of one Gated DeltaNet mixer, whole model (its norm1
 * excluded). */
double gdn_params(const struct layer_dims *d, int bias);

/* Parameters of the attention (projections, biases, MLA norms), whole
 * model. */
double attn_params(const struct layer_dims *d, int bias);

/* ---- Mamba-2 mixer (mamba.c) ---- */

/* From the input norm's output to the input of the residual add: the
 * in-projection, conv1d, SSD chunked scan, gated RMSNorm and
 * out-projection (with its TP reduction), forward or recomputed. */
void mamba_fwd(struct layer_ops *o, enum layer_pass pass,
	       const struct layer_dims *d);

/* Its backward, from the out-projection down to the input norm's
 * backward (included). */
void mamba_bwd(struct layer_ops *o, const struct layer_dims *d);

/* Parameters of one Mamba-2 mixer, its input norm excluded, whole model. */
double mamba_params(const struct layer_dims *d);

/* ---- routed experts (moe.c) ---- */

/* The MoE MLP from the second norm's output to the residual add
 * (excluded): router, permute, dispatch, experts, combine, unpermute,
 * shared experts. */
/* How an fp8 recipe (enum fp8_scaling) quantizes the experts' inputs
 * (moe.c: quant_kernels). */
void moe_quant_dims(int fp8_scaling, struct layer_dims *d);
/* Whether the dispatcher deduplicates (sends each token once a node or
 * a rank; DeepEP, Hybrid-EP): the tokens travel unpermuted and are
 * sorted on arrival (moe_permute.c, a leaf of moe.c: no file cycle). */
int moe_dedups(const struct layer_dims *d);
/* The token permute (moe_permute.c): forward, before the dispatch
 * (TE's fused map and gather, Megatron's unfused argsort index or its
 * older masked_selects, then index_select); the unfused unpermute's and
 * index_select backward's zeroed output and atomic scatter-add on op;
 * the permute's backward. */
void moe_permute_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d);
void moe_unfused_scatter(struct layer_op *op, const struct layer_dims *d);
/* Transformer Engine < 2.6's permute kernels (d->moe.permute_loop): the
 * chain of dependent loads each program of op walks (moe_permute.c). */
enum permute_loop {
	PLOOP_PERMUTE,		/* _permute_kernel: permute, unpermute_bwd */
	PLOOP_UNPERMUTE,	/* _unpermute_kernel: unpermute, permute_bwd */
	PLOOP_SORT		/* _sort_chunks_by_idxs_kernel (forward) */
};
void moe_permute_loop(struct layer_op *op, const struct layer_dims *d,
		      enum permute_loop kind);
/* The unfused unpermute's probability multiply (forward, before the
 * unpermute) or its backward (pass PASS_BWD, after unpermute_bwd). */
void moe_unpermute_probs(struct layer_ops *o, enum layer_pass pass,
			 const struct layer_dims *d);
void moe_permute_bwd(struct layer_ops *o, const struct layer_dims *d);
/* The weighted GLU's probability gradient, its second kernel (after
 * expert_act_bwd; moe_permute.c). */
void moe_act_probs_bwd(struct layer_ops *o, const struct layer_dims *d);
void moe_act_probs_eager(struct layer_ops *o, enum layer_pass pass,
			 const struct layer_dims *d);
void moe_act_probs_eager_bwd(struct layer_ops *o, const struct layer_dims *d);
/* The router (moe_router.c, a leaf of moe.c): gating GEMM, top-k and
 * aux-loss ops; their backward with Megatron-Core's router_gating_linear
 * dtype casts around its GEMMs. */
void moe_router_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d);
void moe_router_bwd(struct layer_ops *o, const struct layer_dims *d);
void moe_fwd(struct layer_ops *o, enum layer_pass pass,
	     const struct layer_dims *d);

/* Its backward, down to the norm2 backward (included), with the
 * recomputation of the modules mods names (moe, moe_act,
 * shared_experts). */
void moe_bwd(struct layer_ops *o, unsigned mods, const struct layer_dims *d);

/* Parameters: routed experts (all E) and the rest (router, shared
 * experts, a latent MoE's projections), whole model. */
void moe_params(const struct layer_dims *d, int bias, double *dense,
		double *experts);

#endif
