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
 *   attention flash:   4 b (a/t) s^2 d FLOPs (half under the causal mask,
 *                      the GPU model decides what it executes)
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
 * Recomputation: selective recomputes the attention core (a second
 * attention forward before its backward, Korthikanti et al. 2022 sec. 5);
 * full recomputes the whole layer forward, its TP collectives included,
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
 * write T h G). LM head (last stage): final norm, [SP] all-gather, logits
 * GEMM (T, V/t, h) in 16-bit, then the vocabulary-parallel cross-entropy
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
 * written.
 *
 * Backward of a residual connection: the norm's backward reads x and dy
 * and writes dx (PyTorch's runs a second kernel for dgamma, re-reading x
 * and dy: framework elementwise.norm_bwd_passes 2), and autograd sums
 * the residual branch's gradient with it in an add of its own (read 2n,
 * write n): add1_bwd, add2_bwd, in every framework.
 *
 * Eager forms (framework elementwise; fused kernels otherwise), n the
 * elements of the tensor, PyTorch's generic path for ops on views
 * (strided bytes, gpu.strided_efficiency):
 *   rotary    x cos (r n, w n), -x2 (r n/2, w n/2), cat(-x2, x1) (r n,
 *             w n), * sin (r n, w n), + (r 2n, w n) on q and on k: 10
 *             kernels, 5.5n read, 4.5n written, 7n strided; the backward
 *             runs the same chain
 *   K/V       GQA K and V repeat_interleave'd to the query heads (read
 *             2 T kv, write 2 T q, strided), summed back in backward
 *   gated act act(g) (r f', w f') then * u (r 2f', w f'), both on the
 *             halves of the fc1 output (strided 3f'); backward dy u, dy
 *             act(g), act'(g) and the cat of the halves' gradients: read
 *             8f', write 5f', 6f' strided, 4 kernels
 * (kernel by kernel in results/reference/device/h200-train-step-4layers-
 * 2026-11-29.json, scripts/classify-train-step.py).
 *
 * Vector FLOPs of memory-bound ops are nominal (a few per element); they
 * are memory-bound on every GPU llmsim knows.
 */
#include "layer.h"

#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"

/* Nominal vector FLOPs per element of the memory-bound kernels. */
enum { NORM_FLOPS = 4, ACT_FLOPS = 8, ADD_FLOPS = 1, CE_FLOPS = 6 };

/* Linear layers in a sub-16-bit dtype (fp8, MX). */
static int is_lowp(enum dtype dt)
{
	return dt == DTYPE_FP8 || dt == DTYPE_MXFP8 || dt == DTYPE_MXFP6 ||
	       dt == DTYPE_MXFP4;
}

enum dtype layer_base_dtype(enum dtype training)
{
	if (training == DTYPE_FP32 || training == DTYPE_TF32 ||
	    training == DTYPE_FP16)
		return training;
	return DTYPE_BF16;	/* bf16, and what fp8/MX training keeps */
}

static double pad_up(double v, double multiple)
{
	double n = (double)(int64_t)(v / multiple);

	return n * multiple < v ? (n + 1) * multiple : n * multiple;
}

void layer_dims_from_job(const struct job_spec *j, struct layer_dims *d)
{
	const struct model_spec *m = j->model;
	const struct parallel_spec *p = &j->parallelism;
	enum dtype dt = (enum dtype)j->training.dtype;

	memset(d, 0, sizeof(*d));
	d->batch = (double)j->training.micro_batch_size;
	d->seq = (double)(j->training.seq_len / p->cp);
	d->hidden = (double)m->hidden_size;
	d->heads = (double)m->num_attention_heads;
	d->kv_heads = (double)m->num_key_value_heads;
	d->head_dim = (double)m->head_dim;
	d->ffn = (double)m->intermediate_size;
	d->tp = (double)p->tp;
	d->vocab = pad_up((double)m->vocab_size,
			  (double)j->framework->vocab_multiple * d->tp);
	d->act_B = dtype_bytes(layer_base_dtype(dt));
	d->lowp = is_lowp(dt);
	d->lowp_B = d->lowp ? dtype_bytes(dt) : d->act_B;
	d->grad_B = dtype_bytes((enum dtype)j->framework->grad_dtype);
	d->gated = m->gated_mlp;
	d->sp = p->sequence_parallel && p->tp > 1;
	d->rope = m->position_embedding == POS_ROPE;
	d->learned_pos = m->position_embedding == POS_LEARNED;
	d->unfused_attn = j->training.attention == ATTN_UNFUSED;
	d->dropout = j->training.dropout;
	d->chunks = 1;
	d->pp_gather = !d->sp && p->tp > 1 && j->framework->pp_scatter_gather;
	d->fused_ce = j->framework->fused_cross_entropy;
	d->attn_kernel = j->framework->attention_kernel;
	d->norm_bwd_passes = j->framework->elementwise.norm_bwd_passes >= 2 ?
			     2 : 1;
	d->eager_rope = j->framework->elementwise.eager_rope == 1;
	d->eager_act = j->framework->elementwise.eager_activation == 1 &&
		       d->gated;
	d->expand_kv = j->framework->elementwise.expand_kv == 1 &&
		       layer_kv_heads_local(d) < d->heads / d->tp;
	if (p->tp_comm_overlap && d->sp)
		d->chunks = j->framework->tp_comm_overlap_chunks > 0 ?
			    (int)j->framework->tp_comm_overlap_chunks : (int)p->tp;
}

/* ---- the op list ---- */

/* The index a new op would use to wait for the current last op. */
static int16_t tail(const struct layer_ops *o)
{
	return (int16_t)(o->n == 0 ? LAYER_IN : o->n - 1);
}

/* Append an op depending on the previous one (or the list's input). */
static struct layer_op *push(struct layer_ops *o, const char *name,
			     enum layer_op_kind kind, enum layer_pass pass)
{
	struct layer_op *op;

	if (o->n >= LAYER_MAX_OPS)
		BUG("layer op list full");
	op = &o->op[o->n];
	memset(op, 0, sizeof(*op));
	op->name = name;
	op->kind = kind;
	op->pass = pass;
	op->dep[0] = tail(o);
	op->dep[1] = LAYER_NONE;
	o->n++;
	return op;
}

static struct layer_op *gemm(struct layer_ops *o, const char *name,
			     enum layer_pass pass, double m, double n,
			     double k, int lowp)
{
	struct layer_op *op = push(o, name, LOP_KERNEL, pass);

	op->k.kind = KERN_GEMM;
	op->k.m = m;
	op->k.n = n;
	op->k.k = k;
	op->k.batch = 1;
	op->k.lowp = lowp;
	return op;
}

static struct layer_op *memop(struct layer_ops *o, const char *name,
			      enum layer_pass pass, double read_B,
			      double write_B, double flops)
{
	struct layer_op *op = push(o, name, LOP_KERNEL, pass);

	op->k.kind = KERN_MEM;
	op->k.read_B = read_B;
	op->k.write_B = write_B;
	op->k.vec_flops = flops;
	return op;
}

/* A chain of k PyTorch kernels moving read_B and write_B, strided_B of
 * them through the generic elementwise path. */
static struct layer_op *eager(struct layer_ops *o, const char *name,
			      enum layer_pass pass, double read_B,
			      double write_B, double strided_B, double k,
			      double flops)
{
	struct layer_op *op = memop(o, name, pass, read_B, write_B, flops);

	op->k.launches = k;
	op->k.strided_B = strided_B;
	return op;
}

/* A TP collective; none when t = 1 (returns NULL). */
static struct layer_op *tpcoll(struct layer_ops *o, const char *name,
			       enum layer_pass pass, const struct layer_dims *d,
			       enum coll_op c, double bytes)
{
	struct layer_op *op;

	if (d->tp <= 1)
		return NULL;
	op = push(o, name, LOP_TP, pass);
	op->coll = c;
	op->coll_B = bytes;
	return op;
}

/* ---- forward pieces ---- */

static void norm_fwd(struct layer_ops *o, const char *name,
		     enum layer_pass pass, const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;

	memop(o, name, pass, n * d->act_B, n * d->act_B, NORM_FLOPS * n);
}

static void add_fwd(struct layer_ops *o, const char *name,
		    enum layer_pass pass, const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;
	double mask = d->dropout ? n : 0;

	memop(o, name, pass, 2 * n * d->act_B, n * d->act_B + mask,
	      ADD_FLOPS * n);
}

/* Quantize n elements to the low dtype, both layouts (none in 16-bit). */
static void cast(struct layer_ops *o, const char *name, enum layer_pass pass,
		 const struct layer_dims *d, int lowp, double n)
{
	if (lowp)
		memop(o, name, pass, n * d->act_B, 2 * n * d->lowp_B, n);
}

/* Input side of a column-parallel GEMM: [cast], [SP all-gather], GEMM of
 * n outputs from k = h inputs. With overlap, piece i of the all-gather
 * feeds piece i of the GEMM; the streams keep the pieces in order. */
static void column_fwd(struct layer_ops *o, const char *cast_name,
		       const char *ag_name, const char *name,
		       enum layer_pass pass, const struct layer_dims *d,
		       double n, int lowp)
{
	double t = layer_tokens(d), h = d->hidden;
	double ag_B = t * h * (lowp ? d->lowp_B : d->act_B);
	int16_t before;
	int i;

	cast(o, cast_name, pass, d, lowp, layer_sp_tokens(d) * h);
	if (!d->sp) {
		gemm(o, name, pass, t, n, h, lowp);
		return;
	}
	before = tail(o);
	for (i = 0; i < d->chunks; i++) {
		tpcoll(o, ag_name, pass, d, COLL_ALLGATHER, ag_B / d->chunks)
			->dep[0] = i == 0 ? before : LAYER_NONE;
		gemm(o, name, pass, t / d->chunks, n, h, lowp);
	}
}

/* Output side of a row-parallel GEMM: [cast], GEMM of h outputs from k
 * inputs, then the all-reduce (reduce-scatter with SP). With overlap,
 * piece i of the reduce-scatter moves while GEMM piece i+1 runs. */
static void row_fwd(struct layer_ops *o, const char *cast_name,
		    const char *name, const char *coll_name,
		    enum layer_pass pass, const struct layer_dims *d,
		    double k)
{
	double t = layer_tokens(d), h = d->hidden;
	int c = d->sp ? d->chunks : 1;
	int16_t before;
	int i;

	cast(o, cast_name, pass, d, d->lowp, t * k);
	before = tail(o);
	for (i = 0; i < c; i++) {
		gemm(o, name, pass, t / c, h, k, d->lowp)->dep[0] =
			i == 0 ? before : LAYER_NONE;
		tpcoll(o, coll_name, pass, d,
		       d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE,
		       t * h * d->act_B / c);
	}
}

static void attn_unfused_fwd(struct layer_ops *o, enum layer_pass pass,
			     const struct layer_dims *d)
{
	double heads = layer_attn_heads(d), scores = layer_scores(d);
	struct layer_op *op;

	op = gemm(o, "scores", pass, d->seq, d->seq, d->head_dim, 0);
	op->k.batch = heads;
	memop(o, "softmax", pass, scores * d->act_B,
	      scores * d->act_B * (d->dropout ? 2 : 1) +
	      (d->dropout ? scores : 0), CE_FLOPS * scores);
	op = gemm(o, "attn_v", pass, d->seq, d->head_dim, d->seq, 0);
	op->k.batch = heads;
}

static void attn_shape(const struct layer_dims *d, struct gpu_attn_shape *a)
{
	a->batch = d->batch;
	a->heads_q = d->heads / d->tp;
	a->heads_kv = layer_kv_heads_local(d);
	a->seq_q = d->seq;
	a->seq_kv = d->seq;
	a->head_dim_qk = d->head_dim;
	a->head_dim_v = d->head_dim;
	a->causal = 1;
	a->kernel = d->attn_kernel;
}

static void attn_fwd(struct layer_ops *o, enum layer_pass pass,
		     const struct layer_dims *d)
{
	struct layer_op *op;

	if (d->unfused_attn) {
		attn_unfused_fwd(o, pass, d);
		return;
	}
	op = push(o, "attn", LOP_KERNEL, pass);
	op->k.kind = KERN_ATTN_FWD;
	attn_shape(d, &op->k.attn);
}

static void rope(struct layer_ops *o, const char *name, enum layer_pass pass,
		 const struct layer_dims *d)
{
	double n = layer_tokens(d) * (layer_q_width(d) + layer_kv_width(d));
	double B = d->act_B;

	if (!d->rope)
		return;
	if (!d->eager_rope) {
		memop(o, name, pass, n * B, n * B, 4 * n);
		return;
	}
	/* x cos (r n, w n), -x2 (r n/2, w n/2), cat (r n, w n), * sin (r n,
	 * w n), + (r 2n, w n), on q and on k: 10 kernels, the first four of
	 * each on the strided views (7n); backward the same chain reversed */
	eager(o, name, pass, 5.5 * n * B, 4.5 * n * B, 7 * n * B, 10, 4 * n);
}

/* GQA keys and values copied to the query heads (repeat_interleave on
 * strided views: read T kv, write T q, each), or in backward summed back
 * (two reductions: read T q, write T kv each, contiguous). */
static void expand_kv(struct layer_ops *o, const char *name,
		      enum layer_pass pass, const struct layer_dims *d)
{
	double t = layer_tokens(d), q = layer_q_width(d);
	double kv = layer_kv_width(d), B = d->act_B;

	if (!d->expand_kv)
		return;
	if (pass == PASS_BWD)
		eager(o, name, pass, 2 * t * q * B, 2 * t * kv * B, 0, 2,
		      2 * t * q);
	else
		eager(o, name, pass, 2 * t * kv * B, 2 * t * q * B,
		      2 * t * (q + kv) * B, 2, 0);
}

/* The first MLP GEMM's output through the activation: one fused kernel
 * (read u, write f'), or act(g) (r f', w f', strided) then * u (r 2f',
 * w f', u strided) as PyTorch runs a gated MLP on the two halves. */
static void act_fwd(struct layer_ops *o, enum layer_pass pass,
		    const struct layer_dims *d)
{
	double t = layer_tokens(d), u = layer_fc1_width(d);
	double f = layer_ffn_local(d), B = d->act_B;

	if (!d->eager_act) {
		memop(o, "act", pass, t * u * B, t * f * B, ACT_FLOPS * t * f);
		return;
	}
	eager(o, "act", pass, 3 * t * f * B, 2 * t * f * B, 3 * t * f * B, 2,
	      ACT_FLOPS * t * f);
}

/* Its backward: one fused kernel (read u + f', write u), or dy * u
 * (r 2f', w f'), dy * act(g) (r 2f', w f'), act'(g) (r 2f', w f', g
 * strided) and the cat of the two halves' gradients (r 2f', w 2f'). */
static void act_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double t = layer_tokens(d), u = layer_fc1_width(d);
	double f = layer_ffn_local(d), B = d->act_B;

	if (!d->eager_act) {
		memop(o, "act_bwd", PASS_BWD, t * (u + f) * B, t * u * B,
		      ACT_FLOPS * t * f);
		return;
	}
	eager(o, "act_bwd", PASS_BWD, 8 * t * f * B, 5 * t * f * B,
	      6 * t * f * B, 4, ACT_FLOPS * t * f);
}

/* One layer forward, for the forward pass or a full recomputation. */
static void layer_fwd_pass(const struct layer_dims *d, enum layer_pass pass,
			   struct layer_ops *o)
{
	double u = layer_fc1_width(d), f = layer_ffn_local(d);

	norm_fwd(o, "norm1", pass, d);
	column_fwd(o, "qkv_cast", "qkv_allgather", "qkv", pass, d,
		   layer_q_width(d) + 2 * layer_kv_width(d), d->lowp);
	rope(o, "rope", pass, d);
	expand_kv(o, "kv_expand", pass, d);
	attn_fwd(o, pass, d);
	row_fwd(o, "proj_cast", "proj", "attn_tp_reduce", pass, d,
		layer_q_width(d));
	add_fwd(o, "add1", pass, d);
	norm_fwd(o, "norm2", pass, d);
	column_fwd(o, "fc1_cast", "fc1_allgather", "fc1", pass, d, u, d->lowp);
	act_fwd(o, pass, d);
	row_fwd(o, "fc2_cast", "fc2", "mlp_tp_reduce", pass, d, f);
	add_fwd(o, "add2", pass, d);
}

void layer_fwd(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	layer_fwd_pass(d, PASS_FWD, o);
}

/* ---- backward pieces ---- */

/* The wgrad GEMM just pushed adds its n elements into the gradient
 * buffer: it reads and writes them there (in its epilogue). */
static void accumulate(struct layer_ops *o, const struct layer_dims *d,
		       double n)
{
	o->op[o->n - 1].k.accum_B = 2 * n * d->grad_B;
}

static void norm_bwd(struct layer_ops *o, const char *name,
		     const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;
	double mask = d->dropout ? n : 0;
	struct layer_op *op;

	/* x and dy in (again for dgamma when it is a second kernel), dx out */
	op = memop(o, name, PASS_BWD, 2 * d->norm_bwd_passes * n * d->act_B +
		   mask, n * d->act_B, NORM_FLOPS * n);
	op->k.launches = d->norm_bwd_passes;
}

/* Autograd sums the two gradients of a residual connection (the norm's
 * dx and the residual branch's): one add kernel, read 2n, write n. */
static void residual_grad(struct layer_ops *o, const char *name,
			  const struct layer_dims *d)
{
	double n = layer_sp_tokens(d) * d->hidden;

	memop(o, name, PASS_BWD, 2 * n * d->act_B, n * d->act_B,
	      ADD_FLOPS * n);
}

/* Row-parallel GEMM (k inputs -> h outputs) backward: [SP all-gather of
 * the output gradient, pieces pipelined with dgrad under overlap], [cast],
 * dgrad (T, k, h), wgrad (k, h, T). */
static void row_bwd(struct layer_ops *o, const char *ag_name,
		    const char *cast_name, const char *dgrad,
		    const char *wgrad, const struct layer_dims *d, double k)
{
	double t = layer_tokens(d), h = d->hidden;
	double el_B = d->lowp ? d->lowp_B : d->act_B;
	int c = d->sp ? d->chunks : 1;
	int16_t before;
	int i;

	/* with SP, quantize the local shard and gather low-precision */
	cast(o, cast_name, PASS_BWD, d, d->lowp, layer_sp_tokens(d) * h);
	before = tail(o);
	for (i = 0; i < c; i++) {
		if (d->sp)
			tpcoll(o, ag_name, PASS_BWD, d, COLL_ALLGATHER,
			       t * h * el_B / c)->dep[0] =
				i == 0 ? before : LAYER_NONE;
		gemm(o, dgrad, PASS_BWD, t / c, k, h, d->lowp);
	}
	gemm(o, wgrad, PASS_BWD, k, h, t, d->lowp);
	accumulate(o, d, k * h);
}

/* Column-parallel GEMM (h inputs -> n outputs) backward: [cast], [SP
 * re-gather of the input, during dgrad], dgrad (T, h, n), the input
 * gradient's all-reduce (reduce-scatter with SP) during wgrad (h, n, T),
 * then the norm backward waiting for both. */
static void column_bwd(struct layer_ops *o, const char *ag_name,
		       const char *cast_name, const char *dgrad,
		       const char *coll_name, const char *wgrad,
		       const char *norm_name, const struct layer_dims *d,
		       double n, int lowp)
{
	double t = layer_tokens(d), h = d->hidden;
	struct layer_op *op;
	int16_t before, ag = LAYER_NONE, dg, red = LAYER_NONE;

	cast(o, cast_name, PASS_BWD, d, lowp, t * n);
	before = tail(o);
	if (d->sp) {
		tpcoll(o, ag_name, PASS_BWD, d, COLL_ALLGATHER,
		       t * h * (lowp ? d->lowp_B : d->act_B));
		ag = tail(o);
	}
	gemm(o, dgrad, PASS_BWD, t, h, n, lowp)->dep[0] = before;
	dg = tail(o);
	if (tpcoll(o, coll_name, PASS_BWD, d,
		   d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE, t * h * d->act_B))
		red = tail(o);
	op = gemm(o, wgrad, PASS_BWD, h, n, t, lowp);
	op->dep[0] = dg;
	op->dep[1] = ag;
	accumulate(o, d, h * n);
	norm_bwd(o, norm_name, d);
	o->op[o->n - 1].dep[1] = red;
}

static void attn_unfused_bwd(struct layer_ops *o, const struct layer_dims *d)
{
	double heads = layer_attn_heads(d), scores = layer_scores(d);
	double s = d->seq, hd = d->head_dim;
	double mask = d->dropout ? scores : 0;

	gemm(o, "attn_v_dgrad", PASS_BWD, s, s, hd, 0)->k.batch = heads;
	gemm(o, "attn_v_wgrad", PASS_BWD, s, hd, s, 0)->k.batch = heads;
	memop(o, "softmax_bwd", PASS_BWD, 2 * scores * d->act_B + mask,
	      scores * d->act_B, CE_FLOPS * scores);
	gemm(o, "scores_dgrad_q", PASS_BWD, s, hd, s, 0)->k.batch = heads;
	gemm(o, "scores_dgrad_k", PASS_BWD, s, hd, s, 0)->k.batch = heads;
}

static void attn_bwd(struct layer_ops *o, enum layer_recompute rc,
		     const struct layer_dims *d)
{
	struct layer_op *op;

	if (rc == LREC_SELECTIVE)
		attn_fwd(o, PASS_RECOMPUTE, d);
	if (d->unfused_attn) {
		attn_unfused_bwd(o, d);
		return;
	}
	op = push(o, "attn_bwd", LOP_KERNEL, PASS_BWD);
	op->k.kind = KERN_ATTN_BWD;
	attn_shape(d, &op->k.attn);
}

void layer_bwd(const struct layer_dims *d, enum layer_recompute rc,
	       struct layer_ops *o)
{
	double u = layer_fc1_width(d), f = layer_ffn_local(d);

	o->n = 0;
	if (rc == LREC_FULL)
		layer_fwd_pass(d, PASS_RECOMPUTE, o);
	row_bwd(o, "fc2_grad_allgather", "fc2_grad_cast", "fc2_dgrad",
		"fc2_wgrad", d, f);
	act_bwd(o, d);
	column_bwd(o, "fc1_input_allgather", "fc1_grad_cast", "fc1_dgrad",
		   "fc1_grad_tp_reduce", "fc1_wgrad", "norm2_bwd", d, u,
		   d->lowp);
	residual_grad(o, "add2_bwd", d);
	row_bwd(o, "proj_grad_allgather", "proj_grad_cast", "proj_dgrad",
		"proj_wgrad", d, layer_q_width(d));
	attn_bwd(o, rc, d);
	expand_kv(o, "kv_expand_bwd", PASS_BWD, d);
	rope(o, "rope_bwd", PASS_BWD, d);
	column_bwd(o, "qkv_input_allgather", "qkv_grad_cast", "qkv_dgrad",
		   "qkv_grad_tp_reduce", "qkv_wgrad", "norm1_bwd", d,
		   layer_q_width(d) + 2 * layer_kv_width(d), d->lowp);
	residual_grad(o, "add1_bwd", d);
}

/* ---- pipeline transfers ---- */

void layer_pp_gather(const struct layer_dims *d, struct layer_ops *o)
{
	o->n = 0;
	tpcoll(o, "pp_recv_allgather", PASS_FWD, d, COLL_ALLGATHER,
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
	memop(o, "embed", PASS_FWD, t * h * d->act_B + pos, t * h * d->act_B,
	      d->learned_pos ? t * h : 0);
	tpcoll(o, "embed_tp_reduce", PASS_FWD, d,
	       d->sp ? COLL_REDUCESCATTER : COLL_ALLREDUCE, t * h * d->act_B);
	if (d->dropout)
		add_fwd(o, "embed_dropout", PASS_FWD, d);
}

void layer_embed_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), h = d->hidden;

	o->n = 0;
	if (d->sp)
		tpcoll(o, "embed_grad_allgather", PASS_BWD, d, COLL_ALLGATHER,
		       t * h * d->act_B);
	/* scatter-add of T rows into the gradient buffer (G bytes each) */
	memop(o, "embed_wgrad", PASS_BWD, t * h * (d->act_B + d->grad_B),
	      t * h * d->grad_B, t * h);
}

void layer_head_fwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp;
	int i;

	o->n = 0;
	norm_fwd(o, "final_norm", PASS_FWD, d);
	column_fwd(o, "logits_cast", "logits_allgather", "logits", PASS_FWD,
		   d, v, 0);
	if (d->fused_ce)
		memop(o, "cross_entropy", PASS_FWD, t * v * d->act_B, t * v * 4,
		      CE_FLOPS * t * v);
	else
		memop(o, "cross_entropy", PASS_FWD, t * v * (d->act_B + 20),
		      t * v * 16, CE_FLOPS * t * v);
	for (i = 0; i < 3; i++)	/* max, sum of exp, target logit */
		tpcoll(o, "loss_tp_allreduce", PASS_FWD, d, COLL_ALLREDUCE,
		       t * 4);
}

void layer_head_bwd(const struct layer_dims *d, struct layer_ops *o)
{
	double t = layer_tokens(d), v = d->vocab / d->tp;

	o->n = 0;
	if (d->fused_ce)
		memop(o, "cross_entropy_bwd", PASS_BWD, t * v * 4,
		      t * v * d->act_B, CE_FLOPS * t * v);
	else
		memop(o, "cross_entropy_bwd", PASS_BWD, t * v * 8,
		      t * v * (4 + d->act_B), CE_FLOPS * t * v);
	column_bwd(o, "logits_input_allgather", "logits_grad_cast",
		   "logits_dgrad", "logits_grad_tp_reduce", "logits_wgrad",
		   "final_norm_bwd", d, v, 0);
}

/* ---- FLOPs and parameters ---- */

double layer_kern_model_flops(const struct kern *k)
{
	const struct gpu_attn_shape *a = &k->attn;
	double fwd = 4 * a->batch * a->heads_q * a->seq_q * a->seq_kv *
		     (a->head_dim_qk + a->head_dim_v) / 2;

	switch (k->kind) {
	case KERN_GEMM:
		return 2 * k->m * k->n * k->k * k->batch;
	case KERN_ATTN_FWD:
		return fwd;
	case KERN_ATTN_BWD:
		return 2 * fwd;
	case KERN_MEM:
		return 0;
	}
	BUG("unknown kernel kind");
}

double layer_ops_flops(const struct layer_ops *o, enum layer_pass pass)
{
	double sum = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].kind == LOP_KERNEL && o->op[i].pass == pass)
			sum += layer_kern_model_flops(&o->op[i].k);
	return sum;
}

double layer_params(const struct layer_dims *d, int bias, int layernorm)
{
	double h = d->hidden, qkv = (d->heads + 2 * d->kv_heads) * d->head_dim;
	double q = d->heads * d->head_dim;
	double w = h * qkv + q * h + (d->gated ? 3 : 2) * h * d->ffn;
	double b = bias ? qkv + h + (d->gated ? 2 : 1) * d->ffn + h : 0;
	double norms = 2 * h * (layernorm ? 2 : 1);

	return w + b + norms;
}

double layer_embed_params(const struct layer_dims *d, double max_positions)
{
	return d->vocab * d->hidden +
	       (d->learned_pos ? max_positions * d->hidden : 0);
}

double layer_head_params(const struct layer_dims *d, int layernorm)
{
	return d->vocab * d->hidden + d->hidden * (layernorm ? 2 : 1);
}
