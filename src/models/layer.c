/*
 * layer.c - the ops of a dense transformer layer on one GPU.
 *
 * Notation (one microbatch on one GPU): b sequences of s tokens, T = b s
 * tokens; width h, a query heads and g key/value heads of dimension d, MLP
 * hidden size f, vocabulary V (padded), tensor-parallel degree t, B bytes
 * per activation element (2 for 16-bit). With sequence parallelism (SP)
 * the norms, residual adds and dropouts see T' = T/t tokens, otherwise
 * T' = T. Local widths: q = a d / t, kv = g d / t, f' = f / t and the
 * first MLP GEMM's output u = 2 f' for a gated (SwiGLU) MLP, f' otherwise.
 * When t exceeds g each TP rank holds one KV head (replicated, t/g ranks
 * sharing it), so kv = d then.
 *
 * Forward of one layer (Megatron-LM's ParallelTransformerLayer / MCore
 * TransformerLayer), GEMM C[m,n] = A[m,k] B[k,n] with FLOPs 2 m n k:
 *
 *   norm      memory  read T' h B, write T' h B
 *   [SP] all-gather T h B over TP
 *   qkv       GEMM    m = T, n = q + 2 kv, k = h
 *   rope      memory  read/write T (q + kv) B
 *   attention flash:   4 b (a/t) s^2 d FLOPs over the whole score matrix,
 *                      half under the causal mask (the GPU model decides
 *                      what it executes; model FLOPs count s^2/2 pairs)
 *             unfused: QK^T GEMM (s, s, d) x b a/t, softmax over
 *                      b (a/t) s^2 scores in memory, AV GEMM (s, d, s) x b a/t
 *   proj      GEMM    m = T, n = h, k = q
 *   all-reduce T h B over TP (reduce-scatter with SP)
 *   add       memory  read 2 T' h B, write T' h B
 *   norm, [SP] all-gather
 *   fc1       GEMM    m = T, n = u, k = h
 *   act       memory  read T u B, write T f' B
 *   fc2       GEMM    m = T, n = h, k = f'
 *   all-reduce (reduce-scatter with SP), add
 *
 * Per layer the GEMMs and attention sum to (MHA, f = 4h, ungated, t = 1)
 * 24 T h^2 + 4 b s^2 h FLOPs forward, the closed form of Narayanan et al.
 * SC'21 (eq. 3 without the logits); the backward is twice the forward
 * (a GEMM's backward is two GEMMs of its size: dX = dY W^T, dW = X^T dY).
 * The model FLOPs MFU divides count the causal half of the attention term,
 * 24 T h^2 + 2 b s^2 h, as Megatron-LM's num_floating_point_operations
 * does (layer_kern_model_flops, attn.c).
 *
 * Backward order follows autograd in Megatron: a row-parallel linear
 * (proj, fc2) computes dgrad then wgrad; with SP its output gradient is
 * first all-gathered. A column-parallel linear (qkv, fc1) computes dgrad,
 * launches the all-reduce (reduce-scatter with SP) of the input gradient
 * asynchronously and overlaps it with the wgrad GEMM; with SP its input is
 * re-gathered (saved sharded) asynchronously during the dgrad GEMM
 * (Megatron's LinearWithGradAccumulationAndAsyncCommunication). The norm
 * backward waits for both.
 *
 * TP communication overlap (Megatron --tp-comm-overlap, TransformerEngine
 * userbuffers, needs SP): an all-gather feeding a GEMM, and a GEMM feeding
 * a reduce-scatter, are split into c pieces; piece i of the GEMM runs while
 * piece i+1 of the collective moves, so only one piece of each is exposed.
 * Only the first piece waits for what came before; the others follow it
 * on their stream.
 *
 * Low precision (fp8, MX): the four linear layers run in the low dtype
 * (TransformerEngine); attention, the LM head and the loss stay in 16-bit.
 * Each low-precision GEMM input is quantized first, a memory-bound op
 * reading the 16-bit tensor and writing the row-wise and column-wise
 * low-precision copies the forward and the wgrad GEMM need (read n B,
 * write 2 n L for n elements of L bytes); the output gradient likewise in
 * backward. With SP the quantization happens before the all-gather, which
 * then moves L-byte elements.
 *
 * Weight gradients accumulate over the microbatches into the framework's
 * gradient buffers (fp32 main_grad in Megatron: gradient accumulation
 * fusion makes each wgrad GEMM compute C += A B on an fp32 C), so a wgrad
 * GEMM of k x n outputs also reads and writes 2 k n G bytes (G bytes per
 * gradient element); block.c adds them to the GEMM's memory traffic.
 *
 * The attention's projections and core (GQA or MLA, context parallelism,
 * sliding windows) are built in attn.c, a routed-expert MLP in moe.c,
 * from the pieces of layer_ops.c; this file composes a layer of a given
 * kind, the embedding, the LM head and the multi-token-prediction
 * modules, from the dimensions layer_dims.c derives from the job.
 *
 * Recomputation: selective recomputes the attention core (a second
 * attention forward before its backward, Korthikanti et al. 2022 sec. 5),
 * or the modules the job names (Megatron-Core recompute_modules: MLA's up
 * projections, the norms, a dense MLP, the experts' activation, the
 * shared experts, the whole MoE MLP), each before its own backward; full
 * recomputes the whole layer forward, its TP collectives included,
 * before the backward.
 *
 * Pipeline transfers carry the b s h B activation (or gradient) of a
 * stage, divided by t under SP (each TP rank sends its sequence shard) or
 * under Megatron-LM's scatter/gather optimization (Narayanan et al. SC'21
 * sec. 4.1: each TP rank sends 1/t, the receiving TP group all-gathers
 * the T h B tensor over the fast scale-up fabric).
 *
 * Embedding (first stage): a vocabulary-parallel lookup writing T h B,
 * then an all-reduce (reduce-scatter with SP) over TP; its backward
 * scatter-adds T rows into the gradient buffer (read T h (B + G),
 * write T h G), or, with the framework's embedding_grad_dense (Megatron
 * DDP, below ZeRO 3), builds PyTorch's dense [V/t, h] gradient and adds
 * it into main_grad (embed_bwd_dense). LM head (last stage): final norm, [SP] all-gather, logits
 * GEMM (T, V/t, h) in 16-bit (in MXFP8 with d->head_lowp: Megatron-Core's
 * fp8_output_proj runs the head as Transformer Engine's
 * ColumnParallelLinear under the MXFP8 recipe, its fprop, dgrad and wgrad
 * with their quantizations, the input's before the gather and the logits
 * gradient's in both layouts, as every MXFP8 linear; TELinearCrossEntropy
 * Module, NVIDIA/Megatron-LM @ 620cf750 megatron/core/transformer/
 * mxfp8_output_proj.py [S]), then the vocabulary-parallel cross-entropy
 * with three all-reduces of T fp32 values (max, sum of exponentials,
 * target logit) over TP. Fused (one kernel) it reads the 16-bit logits
 * and writes the fp32 softmax the backward needs, B + 4 bytes per logit,
 * and its backward reads that and writes the 16-bit gradient, 4 + B.
 * Unfused, as Megatron's _VocabParallelCrossEntropy runs it in PyTorch
 * ops, the forward is logits.float() (read B, write 4), max (read 4),
 * subtract the max in place, exp in place, sum, divide in place to the
 * softmax (read 4 and write 4 each but the sum): B + 20 read and 16
 * written per logit; the backward scales the softmax in place (read 4,
 * write 4) and casts it to 16-bit (read 4, write B): 8 read, 4 + B
 * written. Megatron-Core's --cross-entropy-loss-fusion (0.8, 0.9:
 * megatron/core/fusions/fused_cross_entropy.py, jit_fuser functions)
 * keeps the steps but fuses each function: the fp32 logits and their
 * max (read B, write 4), the shifted exponentials with their sum and the
 * target logit (read 4, write 4), the softmax in place (read 4, write 4):
 * B + 8 read and 12 written in three kernels, and two TP all-reduces
 * (the max; the target logit and the sum, concatenated); its backward
 * one kernel, reading the softmax and writing the 16-bit gradient: 4
 * read, B written.
 *
 * Vector FLOPs of memory-bound ops are nominal (a few per element); they
 * are memory-bound on every GPU llmsim knows.
 */
#include "layer_impl.h"

#include <string.h>

#include "config/spec_job.h"
#include "config/spec_model.h"

/* ---- a layer ---- */

static int is_moe(const struct layer_kind *k)
{
	return k && k->moe;
}

/* A hybrid model's layer is one block alone (enum model_block): a
 * Mamba-2 mixer, attention, a dense MLP or an MoE; else attention and
 * MLP. */
static int has_mamba(const struct layer_kind *k)
{
	return k && k->block == BLOCK_MAMBA;
}

static int has_attn(const struct layer_kind *k)
{
	return !k || k->block == BLOCK_PAIR || k->block == BLOCK_ATTN;
}

static int has_mlp(const struct layer_kind *k)
{
	return !k || k->block == BLOCK_PAIR || k->block == BLOCK_MLP ||
	       k->block == BLOCK_MOE;
}

static void act_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d)
{
	lop_act_fwd(o, "act", pass, d, layer_tokens(d), layer_fc1_width(d),
		    layer_ffn_local(d));
}

static void act_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	lop_act_bwd(o, "act_bwd", d, layer_tokens(d), layer_fc1_width(d),
		    layer_ffn_local(d));
}

/* The first MLP GEMM: one "fc1" (a gated MLP's gate and up fused), or
 * with split_linears a gated MLP's w1 and w3 (torchtitan FeedForward:
 * w2(F.silu(w1(x)) * w3(x)), attn.c qkv_parts has the account). */
static struct lin_parts fc1_parts(const struct layer_dims *d)
{
	static const char *const fwd[2] = { "w1", "w3" };
	static const char *const dg[2] = { "w1_dgrad", "w3_dgrad" };
	static const char *const wg[2] = { "w1_wgrad", "w3_wgrad" };
	static const char *const fwd1[1] = { "fc1" };
	static const char *const dg1[1] = { "fc1_dgrad" };
	static const char *const wg1[1] = { "fc1_wgrad" };
	double f = layer_ffn_local(d);
	struct lin_parts p = { 2, fwd, dg, wg, { f, f, 0 } };
	struct lin_parts one = { 1, fwd1, dg1, wg1,
				 { layer_fc1_width(d), 0, 0 } };

	return d->split_linears && d->gated ? p : one;
}

static void mlp_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d)
{
	struct lin_parts p = fc1_parts(d);
	int16_t cast = (int16_t)o->n;

	lop_column_fwd_parts(o, "fc1_cast", "fc1_allgather", &p, pass, d,
			     d->hidden, d->lowp);
	lop_cast_after_norm(o, cast, d);	/* LayerNormMLP */
	lop_norm_linear(o, cast);
	act_fwd(o, pass, d);
	lop_row_fwd(o, "fc2_cast", "fc2", "mlp_tp_reduce", pass, d,
		    layer_ffn_local(d));
}

static void mlp_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double u = layer_fc1_width(d), f = layer_ffn_local(d);
	struct lin_parts p;
	int16_t red;

	lop_row_bwd(o, "fc2_grad_allgather", "fc2_grad_cast", "fc2_dgrad",
		    "fc2_wgrad", d, f);
	lop_bias(o, "fc2_bias_grad", PASS_BWD, d, LAYER_BIAS_MLP,
		 layer_sp_tokens(d), d->hidden);
	act_bwd(o, d);
	lop_bias(o, "fc1_bias_grad", PASS_BWD, d, LAYER_BIAS_MLP,
		 layer_tokens(d), u);
	p = fc1_parts(d);
	red = lop_column_bwd_parts(o, "fc1_input_allgather", "fc1_grad_cast",
				   "fc1_grad_tp_reduce", &p, d, d->hidden,
				   d->lowp);
	lop_norm_bwd_after(o, "norm2_bwd", d, red);
}

/* A layer's needed_end once its forward is pushed: where the layer's
 * last GEMM (lop_row_fwd's first piece, after its input cast) starts,
 * else (an MoE layer, a dropout mask the backward reads after it)
 * saved_end. */
static void needed_end_fix(struct layer_ops *o, const struct layer_dims *d)
{
	if (o->needed_end < 0 || d->dropout)
		o->needed_end = o->saved_end;
}

/* One layer forward, for the forward pass or a full recomputation. */
/* CUDA-graph scopes (Megatron-Core TransformerLayer): attn from the
 * input norm to the attention's residual add; the MLP's norm with the
 * dense MLP or with the MoE router; the rest of an MoE layer (moe.c). */
static void layer_fwd_pass(const struct layer_dims *d,
			   const struct layer_kind *k, enum layer_pass pass,
			   struct layer_ops *o)
{
	uint8_t mlp = is_moe(k) ? SCOPE_MOE : SCOPE_MLP;

	o->scope = SCOPE_ATTN;
	o->needed_end = -1;
	if (has_mamba(k)) {	/* Megatron-Core MambaLayer */
		o->scope = SCOPE_MAMBA;
		lop_norm_fwd(o, "norm1", pass, d);
		mamba_fwd(o, pass, d);
		o->saved_end = o->n;
		lop_add_fwd(o, "add1", pass, d);
		if (d->dropout)
			o->saved_end = o->n;
		o->needed_end = o->saved_end;
		o->scope = SCOPE_NONE;
		return;
	}
	if (has_attn(k)) {
		lop_norm_fwd(o, "norm1", pass, d);
		if (k && k->linear)
			gdn_fwd(o, pass, d);
		else
			attn_fwd(o, pass, d, k);
		lop_row_fwd(o, "proj_cast", "proj", "attn_tp_reduce", pass, d,
			    k && k->linear ? gdn_out_width(d) :
			    attn_out_width(d));
		o->saved_end = o->n;	/* an attention layer alone's */
		o->needed_end = o->row_gemm_at;
		lop_add_fwd(o, "add1", pass, d);
		if (d->dropout)
			o->saved_end = o->n;
	}
	if (!has_mlp(k)) {
		needed_end_fix(o, d);
		o->scope = SCOPE_NONE;
		return;
	}
	o->scope = is_moe(k) ? SCOPE_MOE_ROUTER : SCOPE_MLP;
	lop_norm_fwd(o, "norm2", pass, d);
	if (is_moe(k)) {
		moe_fwd(o, pass, d);	/* sets saved_end */
		o->needed_end = -1;	/* as saved_end: not traced further */
	} else {
		mlp_fwd(o, pass, d);
		o->saved_end = o->n;
		o->needed_end = o->row_gemm_at;
	}
	o->scope = mlp;
	lop_add_fwd(o, "add2", pass, d);
	if (d->dropout)		/* its mask */
		o->saved_end = o->n;
	needed_end_fix(o, d);
	o->scope = SCOPE_NONE;
}

/* FSDP2's copy passes around a layer unit's collectives (framework
 * fsdp2_copy_passes), on the compute stream (torch 2.8 torch/distributed/
 * fsdp/_fully_shard/_fsdp_param_group.py, _fsdp_collectives.py [D]).
 * Before the unit's forward, and before its backward when it reshards
 * after forward, wait_for_unshard's foreach_all_gather_copy_out copies
 * the gathered parameters out of the all-gather buffer into the
 * unsharded ones (split_with_sizes_copy, one kernel a unit): read and
 * write P W. After its backward, foreach_reduce's
 * foreach_reduce_scatter_copy_in chunk-cats the unsharded gradients
 * into the reduce-scatter input in the reduce dtype G before the
 * reduce-scatter stream waits on the compute stream (torch._chunk_cat):
 * read P W, write P G. A MoE layer's routed experts, when sharded (edp
 * > 1), are a unit of their own: Px more, in their reduce dtype. The
 * embedding and head units are not charged [?]. */
static void fsdp2_copy(struct layer_ops *o, const struct layer_dims *d,
		       const struct layer_kind *k, enum layer_pass pass,
		       int copy_in)
{
	double W = d->act_B, P = d->fsdp2_P[is_moe(k) ? 1 : 0];
	double Px = is_moe(k) ? d->fsdp2_xP : 0;
	struct layer_op *op;

	if (!(d->fsdp2_gathers > 0) || !(P + Px > 0))
		return;
	if (copy_in)
		op = lop_memop(o, "fsdp_reduce_copy_in", pass, (P + Px) * W,
			       P * d->fsdp2_G + Px * d->fsdp2_xG, 0);
	else
		op = lop_memop(o, "fsdp_gather_copy_out", pass, (P + Px) * W,
			       (P + Px) * W, 0);
	op->k.launches = Px > 0 ? 2 : 1;
}

void layer_fwd(const struct layer_dims *d, const struct layer_kind *k,
	       struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	fsdp2_copy(o, d, k, PASS_FWD, 0);
	layer_fwd_pass(d, k, PASS_FWD, o);
}

/* torch FSDP's passes over one unit of P parameters on this GPU, charged
 * after its backward (the post-backward hook runs them on a side stream
 * beside the next unit's backward; a memory-bound kernel beside a
 * compute-bound one takes the SM time it would take alone, so they add
 * up): the flat gradient itself (read P W, write P W: the module's
 * parameters are views of the FlatParameter made by torch.split, so
 * autograd's SplitWithSizesBackward concatenates their W-byte gradients,
 * zeros for any without one, into the gradient its AccumulateGrad and the
 * post-backward hook take; pytorch/pytorch 01caf79e torch/distributed/
 * fsdp/_flat_param.py _get_unflat_views_unaligned and the _tensors note,
 * d5913d4b torch/csrc/autograd/FunctionsManual.cpp
 * split_with_sizes_backward), the unsharded gradient cast to the reduce
 * dtype (read P W, write P G), its pre-division (read and write P G) before the reduce-scatter,
 * and on the shard of S = P / N parameters the post-division (read and
 * write S G), the addition into the saved sharded gradient on all but a
 * step's first microbatch (read 2 S G, write S G, weighted by that
 * share) and the copies of the sharded M-byte parameters to W bytes
 * before the unit's two all-gathers (forward and backward: read 2 S M,
 * write 2 S W). A MoE layer's P is that of a dense layer of its widths
 * (layer_params) [?]. */
static void fsdp_passes(struct layer_ops *o, const struct layer_dims *d,
			double P)
{
	double W = d->act_B, G = d->grad_B, M = d->fsdp_master_B;
	double S = P / (d->fsdp_n > 0 ? d->fsdp_n : 1), r = 0, w = 0, k = 0;

	if (!(d->fsdp_n > 0) || !(P > 0))
		return;
	lop_memop(o, "fsdp_grad_flatten", PASS_BWD, P * W, P * W, 0);
	if (G != W)
		lop_memop(o, "fsdp_grad_cast", PASS_BWD, P * W, P * G, 0);
	if (d->fsdp_pre > 1)
		lop_memop(o, "fsdp_grad_prediv", PASS_BWD, P * G, P * G, P);
	if (d->fsdp_post > 1) {
		r += S * G;
		w += S * G;
		k++;
	}
	if (d->fsdp_accum > 0) {
		r += d->fsdp_accum * 2 * S * G;
		w += d->fsdp_accum * S * G;
		k++;
	}
	if (M != W) {
		r += 2 * S * M;
		w += 2 * S * W;
		k += 2;
	}
	if (k > 0)
		lop_memop(o, "fsdp_shard_passes", PASS_BWD, r, w, S)->k.launches = k;
}

unsigned layer_rc_modules(const struct layer_dims *d, enum layer_recompute rc)
{
	if (rc != LREC_SELECTIVE)
		return 0;
	return d->rc_mods;
}

/* Selective recomputation before the MLP's backward (Megatron-Core
 * transformer_layer.py): the pre-MLP norm, its output discarded
 * (layernorm: CheckpointWithoutOutput, recomputed when the MLP output's
 * gradient arrives), or a dense MLP checkpointed at its input (mlp:
 * tensor_parallel.checkpoint of the MLP, whose fc1 carries the norm in
 * Transformer Engine's LayerNormLinear) re-run whole. MoE layers take
 * "mlp" as nothing (is_moe_layer); their modules are moe.c's. */
static void mlp_recompute(const struct layer_dims *d,
			  const struct layer_kind *k, unsigned mods,
			  struct layer_ops *o)
{
	int dense_mlp = !is_moe(k) && (mods & 1u << RCM_MLP);

	if (dense_mlp || (mods & 1u << RCM_LAYERNORM))
		lop_norm_fwd(o, "norm2", PASS_RECOMPUTE, d);
	if (dense_mlp)
		mlp_fwd(o, PASS_RECOMPUTE, d);
}

/* The mm outputs torchtitan's op-level policy recomputes among n mms
 * of widths w[] (one GEMM op of llmsim covering them), counting on from
 * *count: torch's per-block policy saves every mm's output but each
 * second one (mm count even), so of Llama's wq wk wv | wo | w1 w3 | w2
 * it recomputes wk, wo and w3. Returns the recomputed share of the
 * op's output width. */
static double sac_mm_share(int *count, const double *w, int n)
{
	double all = 0, re = 0;
	int i;

	for (i = 0; i < n; i++) {
		all += w[i];
		if (++*count % 2 == 0)
			re += w[i];
	}
	return all > 0 ? re / all : 0;
}

/* Distinct linears (GEMM op names) of one layer's forward. */
#define SAC_MAX_LINEARS 16

/* The copy DTensor makes before a reduce-scatter, or the async-TP
 * reduction after one (layer_ops.c sp_seq_copy): only the saved
 * reduce-scatter output needs them, so AOTAutograd's partitioner
 * recomputes neither [?: eager SAC would re-run the copy]. */
static int sp_scatter_side(const struct layer_ops *o, int i, int end)
{
	const struct layer_op *op = &o->op[i];

	if (op->kind != LOP_KERNEL)
		return 0;
	if (!strcmp(op->name, "sp_rs_reduce"))
		return 1;
	return !strcmp(op->name, "sp_seq_copy") && i + 1 < end &&
	       o->op[i + 1].kind == LOP_COLL &&
	       o->op[i + 1].coll == COLL_REDUCESCATTER;
}

/* torchtitan's op-level selective activation checkpointing (training.
 * recompute_modules [ops]; pytorch/torchtitan @ 9dec370a torchtitan/
 * parallelisms/parallelize_llama.py _apply_ac_to_transformer_block,
 * the same policy @ e7c0cae9): each block runs under a non-reentrant
 * checkpoint whose policy (torch.utils.checkpoint.create_selective_
 * checkpoint_contexts) saves the outputs of the ops on its _save_list
 * -- aten.mm (except every second one), the SDPA flash/efficient
 * kernels, _c10d_functional.reduce_scatter_tensor, abs/max -- and
 * recomputes every other op before the block's backward. So the
 * recomputed forward (ops b.. of o, just pushed) keeps the norms, the
 * rotary, the K/V expansion, the activation, the casts and the TP
 * all-gathers, drops the attention core and the TP reduce-scatters,
 * and keeps of each 16-bit GEMM the recomputed mms' share (sac_mm_
 * share). fp8 GEMMs count as mms too: torchao's Float8Linear calls
 * torch.mm on its Float8Tensor operands (float8_linear.py
 * matmul_with_hp_or_float8_args), and a dispatch mode -- the policy's
 * -- sees aten.mm.default before the subclass's __torch_dispatch__
 * turns it into torch._scaled_mm (modes take precedence over tensor
 * subclasses in PyTorch's dispatch) [?: eager semantics; under
 * torch.compile the policy tags the traced graph the same way]. The
 * casts to fp8 (but their saved amax) are recomputed. torch's early stop
 * (non-reentrant checkpoint's default) ends the recomputation with the
 * last op that saves a tensor (saved_end: the MLP's). A dropped op's
 * dependants wait for what it waited for.
 * The policy counts the mms of the traced graph, before inductor's
 * micro-pipeline TP pass (a post-grad pass) cuts a linear into async
 * TP's pieces: the pieces of one linear (one name) take its first
 * piece's share. Under recompute_needed_only (torch.compile's
 * partitioner recomputes only what the backward reads) a row-parallel
 * GEMM under sequence parallelism (proj, fc2), whose output only the
 * saved reduce-scatter reads, is not re-run either. */
static double sac_gemm_share(const struct layer_dims *d, const char *name,
			     int *count)
{
	double q = layer_q_width(d), kv = layer_kv_width(d);
	double qkv[3] = { q, kv, kv }, fc1[2] = { 1, 1 }, one = 1;

	if (!strcmp(name, "qkv"))
		return sac_mm_share(count, qkv, 3);
	if (!strcmp(name, "fc1"))
		return sac_mm_share(count, fc1, d->gated ? 2 : 1);
	return sac_mm_share(count, &one, 1);
}

static void sac_ops_filter(const struct layer_dims *d, struct layer_ops *o,
			   int b)
{
	const char *seen[SAC_MAX_LINEARS];
	double seen_share[SAC_MAX_LINEARS];
	int16_t map[LAYER_MAX_OPS];
	int i, n = b, count = 0, end = o->saved_end, nseen = 0;

	for (i = b; i < end; i++) {
		struct layer_op op = o->op[i];
		double share = 1;
		int drop = 0, j;

		if (op.kind == LOP_KERNEL && (op.k.kind == KERN_ATTN_FWD))
			drop = 1;
		else if (op.kind == LOP_COLL && op.coll == COLL_REDUCESCATTER)
			drop = 1;
		else if (sp_scatter_side(o, i, end))
			drop = 1;
		else if (op.kind == LOP_KERNEL && op.k.kind == KERN_GEMM) {
			for (j = 0; j < nseen; j++)
				if (!strcmp(seen[j], op.name))
					break;
			if (j < nseen) {
				share = seen_share[j];
			} else {
				share = sac_gemm_share(d, op.name, &count);
				if (nseen < SAC_MAX_LINEARS) {
					seen[nseen] = op.name;
					seen_share[nseen++] = share;
				}
			}
			if (d->rc_needed_only && d->sp &&
			    (!strcmp(op.name, "proj") ||
			     !strcmp(op.name, "fc2")))
				share = 0;
			drop = share <= 0;
		}
		for (j = 0; j < 2; j++)
			if (op.dep[j] >= b)
				op.dep[j] = map[op.dep[j]];
		if (op.host_wait >= b)
			op.host_wait = map[op.host_wait];
		if (drop) {
			map[i] = op.dep[0];
			continue;
		}
		op.k.n *= share;
		op.k.model_flops *= share;
		map[i] = (int16_t)n;
		o->op[n++] = op;
	}
	o->n = n;
}

/* A full recomputation under torch.utils.checkpoint's non-reentrant
 * checkpoint (framework recompute_early_stop): its recomputation hook
 * counts the tensors the recomputed ops save and, with early stop (the
 * default: _enable_checkpoint_early_stop, set_checkpoint_early_stop),
 * raises _StopRecomputationError once it has them all (pytorch/pytorch
 * torch/utils/checkpoint.py _recomputation_hook, torch 2.6-2.8). The
 * backward runs the original graph, so the ops after the layer's last
 * saving one are never re-run: the residual add (no dropout mask) and,
 * after the MoE unpermute that saves its row map, a combining
 * dispatcher's combine (DeepEP's FusedCombine keeps only its handle)
 * and the shared experts' add (layer_fwd_pass's saved_end). */
static void layer_bwd_pass(const struct layer_dims *d,
			   const struct layer_kind *k, enum layer_recompute rc,
			   struct layer_ops *o)
{
	unsigned mods = layer_rc_modules(d, rc);

	if (rc == LREC_FULL) {
		layer_fwd_pass(d, k, PASS_RECOMPUTE, o);
		if (d->rc_needed_only)
			o->n = o->needed_end;
		else if (d->rc_early_stop)
			o->n = o->saved_end;
	}
	if (mods & 1u << RCM_OPS) {
		int b = o->n;

		layer_fwd_pass(d, k, PASS_RECOMPUTE, o);
		sac_ops_filter(d, o, b);
		mods = 0;
	}
	if (has_mamba(k)) {
		o->scope = SCOPE_MAMBA;
		if (mods & 1u << RCM_LAYERNORM)
			lop_norm_fwd(o, "norm1", PASS_RECOMPUTE, d);
		mamba_bwd(o, d);
		lop_residual_grad(o, "add1_bwd", d);
		o->scope = SCOPE_NONE;
		return;
	}
	if (has_mlp(k)) {
		o->scope = is_moe(k) ? SCOPE_MOE : SCOPE_MLP;
		mlp_recompute(d, k, mods, o);
		if (is_moe(k))
			moe_bwd(o, mods, d);
		else
			mlp_bwd(o, d);
		lop_residual_grad(o, "add2_bwd", d);
	}
	if (!has_attn(k)) {
		o->scope = SCOPE_NONE;
		return;
	}
	o->scope = SCOPE_ATTN;
	/* layernorm: the input norm's output again, when the attention
	 * output's gradient arrives */
	if (mods & 1u << RCM_LAYERNORM)
		lop_norm_fwd(o, "norm1", PASS_RECOMPUTE, d);
	lop_row_bwd(o, "proj_grad_allgather", "proj_grad_cast", "proj_dgrad",
		    "proj_wgrad", d, k && k->linear ? gdn_out_width(d) :
		    attn_out_width(d));
	lop_bias(o, "proj_bias_grad", PASS_BWD, d, LAYER_BIAS_ATTN,
		 layer_sp_tokens(d), d->hidden);
	if (k && k->linear)
		gdn_bwd(o, mods, d);
	else
		attn_bwd(o, mods, d, k);
	lop_residual_grad(o, "add1_bwd", d);
	o->scope = SCOPE_NONE;
}

void layer_bwd(const struct layer_dims *d, const struct layer_kind *k,
	       enum layer_recompute rc, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	if (d->fsdp2_gathers > 1)	/* regathered for the backward */
		fsdp2_copy(o, d, k, PASS_BWD, 0);
	layer_bwd_pass(d, k, rc, o);
	fsdp_passes(o, d, d->fsdp_P[LU_LAYER]);
	fsdp2_copy(o, d, k, PASS_BWD, 1);
}

/* ---- pipeline transfers ---- */

void layer_pp_gather(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	lop_tpcoll(o, "pp_recv_allgather", PASS_FWD, d, COLL_ALLGATHER,
		   layer_tokens(d) * d->hidden * d->act_B);
}

double layer_pp_bytes(const struct layer_dims *d)
{
	double full = layer_tokens(d) * d->hidden * d->act_B;

	return d->sp || d->pp_gather ? full / d->tp : full;
}

/* ---- embedding and LM head ---- */

void layer_embed_fwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;
	double pos = d->learned_pos ? d->seq * h * d->act_B + t * h * d->act_B : 0;

	o->n = 0;
	o->scope = SCOPE_NONE;
	lop_memop(o, "embed", PASS_FWD, t * h * d->act_B + pos,
		  t * h * d->act_B, d->learned_pos ? t * h : 0);
	lop_tpcoll(o, "embed_tp_reduce", PASS_FWD, d,
		   d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE, t * h * d->act_B);
	if (d->dropout)
		lop_add_fwd(o, "embed_dropout", PASS_FWD, d);
}

/* Kernels of PyTorch's embedding_dense_backward_cuda on its sort path
 * (more than 3072 indices): the index sort, then in
 * embedding_backward_cuda_kernel unique_by_key, krn_partials_per_segment,
 * exclusive_sum, compute_num_of_partial_segments,
 * krn_partial_segment_offset, compute_grad_weight and sum_and_scatter
 * (pytorch/pytorch aten/src/ATen/native/cuda/EmbeddingBackwardKernel.cu
 * @ 01b9dc56) [?: cub's sort and scan may launch more than one each]. */
#define EMBED_BWD_KERNELS 8
/* the loss function's [masked loss sum, token count]: 2 x fp32 */
#define LOSS_DP_B 8.0

/* Megatron's embedding backward (framework embedding_grad_dense).
 * VocabParallelEmbedding runs F.embedding (megatron/core/tensor_parallel/
 * layers.py), whose autograd backward materializes the weight's gradient:
 * at::zeros({V/t, h}) in the weights' dtype (write V/t h B), then
 * compute_grad_weight sums the T output-gradient rows into fp32 partial
 * segments (read T h B, write T h 4) and sum_and_scatter writes each
 * token's row (read T h 4, write at most T h B). Megatron's DDP backward
 * post-hook then runs param.main_grad.add_(param.grad) for every
 * parameter its GEMMs did not accumulate themselves: the embedding, every
 * microbatch (read V/t h (B + G), write V/t h G; megatron/core/
 * distributed/distributed_data_parallel.py _make_backward_post_hook,
 * NVIDIA/Megatron-LM 0e9fcc1d). */
static void embed_bwd_dense(const struct layer_dims *d, struct layer_ops *o,
			    int mtp, int summed)
{
	double t = layer_tokens(d), h = d->hidden, n = d->vocab / d->tp * h;
	struct layer_op *op;

	lop_memop(o, mtp ? "mtp_embed_grad_zero" : "embed_grad_zero",
		  PASS_BWD, 0, n * d->act_B, 0);
	op = lop_memop(o, mtp ? "mtp_embed_wgrad" : "embed_wgrad", PASS_BWD,
		       t * h * (d->act_B + 4), t * h * (4 + d->act_B), t * h);
	op->k.launches = EMBED_BWD_KERNELS;
	op->host_kernels = EMBED_BWD_KERNELS - 1;
	if (summed)	/* autograd's InputBuffer add: read 2 n B, write n B */
		lop_memop(o, "mtp_embed_grad_sum", PASS_BWD,
			  2 * n * d->act_B, n * d->act_B, n);
	else
		lop_memop(o, mtp ? "mtp_embed_main_grad_add" :
			  "embed_main_grad_add", PASS_BWD,
			  n * (d->act_B + d->grad_B), n * d->grad_B, n);
}

void layer_embed_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;

	o->n = 0;
	o->scope = SCOPE_NONE;
	if (d->sp)
		lop_tpcoll(o, "embed_grad_allgather", PASS_BWD, d,
			   COLL_ALLGATHER, t * h * d->act_B);
	if (d->embed_dense) {
		embed_bwd_dense(d, o, 0, 0);
	} else {
		/* scatter-add of T rows into the gradient buffer (G bytes
		 * each) */
		lop_memop(o, "embed_wgrad", PASS_BWD,
			  t * h * (d->act_B + d->grad_B), t * h * d->grad_B,
			  t * h);
	}
	fsdp_passes(o, d, d->fsdp_P[LU_EMBED]);
}

/* The loss function's per-microbatch reduction for logging (framework
 * loss_dp_allreduce): Pai-Megatron-Patch's loss_func (alibaba/
 * Pai-Megatron-Patch @ 2b201af0 megatron_patch/template/helper.py, the
 * forward_step of examples/qwen3/pretrain_qwen.py) stacks [sum of the
 * masked losses, token count], 2 fp32 = 8 B, and calls Megatron's
 * average_losses_across_data_parallel_group (megatron/training/utils.py
 * @ 6a6cd478: torch.distributed.all_reduce over
 * mpu.get_data_parallel_group()); AMD Primus's pre_trainer.py loss_func
 * (AMD-AGI/Primus @ e16b27b) all-reduces its [loss, count] pair the same
 * way (Megatron-LM's 2021-24 and NeMo's loss functions reduce one fp32,
 * 4 B: latency either way). A synchronous all_reduce: ProcessGroupNCCL makes the current
 * stream wait for it (work.wait()), so the loss's backward, queued
 * after it, waits for every data-parallel replica's last stage to reach
 * its loss: a rendezvous every microbatch (LS_COMPUTE). The group is
 * the data-parallel group without CP (LG_DP_NOCP: dp GPUs; under CP the
 * frameworks first all-reduce the loss over CP, not modelled). The recompute's
 * forward (full recompute of the head: none in these frameworks) would
 * not repeat it: PASS_FWD only. */
static void loss_dp_allreduce(struct layer_ops *o)
{
	lop_coll(o, "loss_dp_allreduce", PASS_FWD, LG_DP_NOCP, LS_COMPUTE,
		 COLL_ALLREDUCE, LOSS_DP_B);
}

static void head_fwd(const struct layer_dims *d, enum layer_pass pass,
		     struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp;
	int i;

	lop_norm_fwd(o, "final_norm", pass, d);
	lop_column_fwd(o, "logits_cast", "logits_allgather", "logits", pass,
		       d, v, d->hidden, d->head_lowp);
	if (d->fused_ce)
		lop_memop(o, "cross_entropy", pass, t * v * d->act_B, t * v * 4,
			  CE_FLOPS * t * v);
	else if (d->jit_ce)
		lop_memop(o, "cross_entropy", pass, t * v * (d->act_B + 8),
			  t * v * 12, CE_FLOPS * t * v)->k.launches = 3;
	else
		lop_memop(o, "cross_entropy", pass, t * v * (d->act_B + 20),
			  t * v * 16, CE_FLOPS * t * v);
	/* max, sum of exp, target logit (the jit path sends the last two in
	 * one) */
	for (i = 0; i < (d->jit_ce ? 2 : 3); i++)
		lop_tpcoll(o, "loss_tp_allreduce", pass, d, COLL_ALLREDUCE,
			   (d->jit_ce && i == 1 ? 2 : 1) * t * 4);
	if (d->loss_dp && pass == PASS_FWD)
		loss_dp_allreduce(o);
}

/* The LM head's backward; wgrad 0 leaves the output layer's weight
 * gradient (and its input's all-gather under SP) out: deferred
 * (layer_head_wgrad). */
static void head_bwd(const struct layer_dims *d, int wgrad,
		     struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp;
	int16_t red;

	if (d->fused_ce || d->jit_ce)
		lop_memop(o, "cross_entropy_bwd", PASS_BWD, t * v * 4,
			  t * v * d->act_B, CE_FLOPS * t * v);
	else
		lop_memop(o, "cross_entropy_bwd", PASS_BWD, t * v * 8,
			  t * v * (4 + d->act_B), CE_FLOPS * t * v);
	red = lop_column_bwd(o, "logits_input_allgather", "logits_grad_cast",
			     "logits_dgrad", "logits_grad_tp_reduce",
			     wgrad ? "logits_wgrad" : NULL, d, v, d->hidden,
			     d->head_lowp);
	lop_norm_bwd_after(o, "final_norm_bwd", d, red);
}

void layer_head_fwd(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	head_fwd(d, PASS_FWD, o);
}

void layer_head_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	head_bwd(d, 1, o);
	fsdp_passes(o, d, d->fsdp_P[LU_HEAD]);
}

void layer_head_bwd_deferred(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	o->scope = SCOPE_NONE;
	head_bwd(d, 0, o);
}

/* Megatron-Core's drain_embedding_wgrad_compute (NVIDIA/Megatron-LM
 * core_v0.12.0:megatron/core/utils.py) for one deferred microbatch:
 * under SP the all-gather of the output layer's saved input over the TP
 * group (T h B), then wgrad_gemm_accum_fp32 / _fp16 into main_grad, the
 * same GEMM the backward would have run (V/t x h over T tokens). The
 * drain double-buffers: the next microbatch's all-gather runs under
 * this one's GEMM (models/train.c chains the instances). */
void layer_head_wgrad(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp, h = d->hidden;
	int16_t ag = LAYER_NONE;
	struct layer_op *op;

	o->n = 0;
	o->scope = SCOPE_NONE;
	if (d->sp) {
		lop_tpcoll(o, "logits_input_allgather", PASS_BWD, d,
			   COLL_ALLGATHER, t * h * d->act_B);
		ag = lop_tail(o);
	}
	op = lop_wgrad(o, "logits_wgrad", h, v, t, 0);
	op->dep[0] = LAYER_IN;
	op->dep[1] = ag;
	lop_accumulate(o, d, h * v);
}

/* ---- fp8 delayed scaling ----
 *
 * Transformer Engine (transformer_engine/pytorch/fp8.py, v1.8 and on:
 * FP8GlobalStateManager.reduce_and_update_fp8_tensors) concatenates the
 * amaxes its modules recorded and all-reduces them (MAX, async_op
 * False, on the compute stream) over the autocast's fp8_group when its
 * fp8_autocast region exits, i.e. after every forward of a model chunk
 * (Megatron-Core wraps a TransformerBlock's forward in it), and again
 * when the backward reaches the region's first fp8 module (its
 * reduce_and_update_bwd_fp8_tensors). The buffer holds one fp32 amax per
 * tensor: per linear layer input, weight and output forward (3),
 * output and input gradients backward (2); four linear layers per
 * transformer layer. Megatron-Core passes fp8_group = get_amax_reduction_
 * group(with_context_parallel=True): tensor x context parallel in 0.8,
 * tensor x data x context (the whole stage) in <= 0.7 and >= 0.9 (unless
 * --tp-only-amax-red). A rendezvous of that group: every member waits
 * for the slowest (src/engine/exec_jitter.c). */

void layer_fp8_amax(const struct layer_dims *d, int bwd, double layers,
		    int64_t group_size, struct layer_ops *o)
{
	double tensors = (bwd ? 2 : 3) * 4 * layers;

	o->n = 0;
	if (d->amax_group < 0 || group_size < 2 || !(layers > 0))
		return;
	lop_coll(o, bwd ? "fp8_amax_reduce_bwd" : "fp8_amax_reduce",
		 bwd ? PASS_BWD : PASS_FWD, (enum layout_group)d->amax_group,
		 LS_COMPUTE, COLL_ALLREDUCE, tensors * 4);
	/* then tex.fused_amax_and_scale_update_after_reduction: one kernel
	 * reading the reduced amaxes and the scales, writing each tensor's
	 * history slot, scale and inverse scale (its read of the amax
	 * history, 4 KB a tensor at TE's default length 1024, is left out:
	 * about a microsecond) */
	lop_memop(o, "fp8_scale_update", bwd ? PASS_BWD : PASS_FWD,
		  tensors * 4 * 2, tensors * 4 * 3, tensors);
}

/* ---- multi-token prediction (DeepSeek-V3 MTP, Megatron-Core
 * MultiTokenPredictionLayer): the next token's embedding (a lookup) and
 * the hidden state are normed, concatenated and projected 2h -> h
 * (column-parallel over TP), then one transformer layer and the shared
 * output head with its own loss (with_head 0: without the head, which
 * runs on the loss's stage, Megatron's process_mtp_loss, when the MTP
 * has a stage of its own). ---- */

void layer_mtp_fwd(const struct layer_dims *d, const struct layer_kind *k,
		   int nk, int with_head, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;
	int i;

	o->n = 0;
	o->scope = SCOPE_NONE;
	lop_memop(o, "mtp_embed", PASS_FWD, t * h * d->act_B, t * h * d->act_B, 0);
	lop_norm_fwd(o, "mtp_enorm", PASS_FWD, d);
	lop_norm_fwd(o, "mtp_hnorm", PASS_FWD, d);
	lop_column_fwd(o, "mtp_proj_cast", "mtp_proj_allgather", "mtp_proj",
		       PASS_FWD, d, h / d->tp, 2 * h, d->lowp);
	lop_tpcoll(o, "mtp_proj_gather", PASS_FWD, d,
		   d->sp ? COLL_REDUCESCATTER : COLL_ALLGATHER, t * h * d->act_B);
	for (i = 0; i < nk; i++)
		layer_fwd_pass(d, &k[i], PASS_FWD, o);
	if (with_head)
		head_fwd(d, PASS_FWD, o);
}

void layer_mtp_bwd(const struct layer_dims *d, const struct layer_kind *k,
		   int nk, enum layer_recompute rc, int with_head,
		   int embed_summed, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;
	int16_t red;
	int i;

	o->n = 0;
	o->scope = SCOPE_NONE;
	if (with_head)
		head_bwd(d, 1, o);
	for (i = nk - 1; i >= 0; i--)
		layer_bwd_pass(d, &k[i], rc, o);
	lop_tpcoll(o, "mtp_proj_grad_gather", PASS_BWD, d, COLL_ALLGATHER,
		   t * h * d->act_B);
	red = lop_column_bwd(o, "mtp_proj_input_allgather", "mtp_proj_grad_cast",
			     "mtp_proj_dgrad", "mtp_proj_grad_tp_reduce",
			     "mtp_proj_wgrad", d, h / d->tp, 2 * h, d->lowp);
	lop_norm_bwd_after(o, "mtp_norms_bwd", d, red);
	lop_norm_grad_add(o, d, h, 1);	/* the second of the two norms */
	/* The module's embedding lookup is Megatron-Core's own
	 * LanguageModelEmbedding, built on the MTP stage (GPTModel: pre_process
	 * or mtp_process; the first stage's shared weight on one stage): the
	 * same F.embedding, so under embedding_grad_dense the same dense
	 * gradient and main_grad.add_ every microbatch (the DDP hook runs
	 * after each AccumulateGrad), not T rows. With embed_summed the same
	 * weight has another lookup in this backward (one stage: the first
	 * stage's embedding; a second MTP module): autograd sums the lookups'
	 * dense gradients in the weight's AccumulateGrad input buffer
	 * (torch/csrc/autograd/input_buffer.cpp: an add, read 2 n B, write
	 * n B) and the node, and Megatron's hook on it (distributed_data_
	 * parallel.py: grad_acc.register_hook, NVIDIA/Megatron-LM d98e8a64),
	 * run once: one main_grad.add_ a backward, charged at the lookup
	 * whose backward runs last. */
	if (d->embed_dense)
		embed_bwd_dense(d, o, 1, embed_summed);
	else
		lop_memop(o, "mtp_embed_wgrad", PASS_BWD,
			  t * h * (d->act_B + d->grad_B), t * h * d->grad_B,
			  t * h);
}
