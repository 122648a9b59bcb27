/*
 * test_attn.c - the training attention core of chunked attention
 * (Llama 4's RoPE layers) against closed forms.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fixture.h"
#include "models/layer.h"
#include "models/layer_impl.h"

/* GPT layer: h 1024, a 16 (d 64), s 2560, b 2, tp 1. */
static void dims_2560(struct layer_dims *d, struct fixture *f)
{
	fixture_gpt(f, 8, 1024, 16, 51200, 2560, 2, 64, 1, 1, 1);
	layer_dims_from_job(&f->job, d);
}

static void assert_close(double got, double want)
{
	cr_assert(fabs(got - want) <= 1e-9 * fabs(want), "got %.6g, want %.6g",
		  got, want);
}

/* Model FLOPs of the core's flash calls named name in o, and how many. */
static double core_flops(const struct layer_ops *o, const char *name, int *n)
{
	double sum = 0;
	int i;

	*n = 0;
	for (i = 0; i < o->n; i++)
		if (o->op[i].kind == LOP_KERNEL &&
		    strcmp(o->op[i].name, name) == 0) {
			sum += layer_kern_model_flops(&o->op[i].k);
			(*n)++;
		}
	return sum;
}

static const struct kern *nth_core(const struct layer_ops *o,
				   const char *name, int nth)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0 && nth-- == 0)
			return &o->op[i].k;
	return NULL;
}

Test(attn, chunked_two_and_a_half_chunks)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 1024, 0, 0, 0 };
	struct layer_ops fw, bw;
	const struct kern *full, *rem;
	double b = 2, h = 1024;
	int n;

	/* s = 2560 = 2.5 C with C = 1024: two full chunks and a remainder
	 * of 512, each causal on its own. Pairs per sequence P = 2 C^2/2 +
	 * 512^2/2 = 1048576 + 131072 = 1179648; the core's forward model
	 * FLOPs 4 b a P (d + d)/2 = 4 b h P = 4*2*1024*1179648 = 9.664e9
	 * (global causal: 4 b h s^2/2 = 2.684e10). */
	dims_2560(&d, &f);
	layer_fwd(&d, &k, &fw);
	assert_close(core_flops(&fw, "attn", &n), 4 * b * h * 1179648.0);
	cr_assert_eq(n, 2);
	/* flash calls: b * 2 = 4 sequences of 1024, b = 2 of 512 */
	full = nth_core(&fw, "attn", 0);
	rem = nth_core(&fw, "attn", 1);
	cr_assert_eq(full->attn.batch, 4);
	cr_assert_eq(full->attn.seq_q, 1024);
	cr_assert_eq(full->attn.seq_kv, 1024);
	cr_assert(full->attn.causal);
	cr_assert_eq(rem->attn.batch, 2);
	cr_assert_eq(rem->attn.seq_q, 512);
	cr_assert_eq(rem->attn.seq_kv, 512);
	/* backward: the same calls, twice the FLOPs, 1.933e10 */
	layer_bwd(&d, &k, LREC_NONE, &bw);
	assert_close(core_flops(&bw, "attn_bwd", &n), 2 * 4 * b * h * 1179648.0);
	cr_assert_eq(n, 2);
	/* each call's count is what its own shape counts (causal s^2/2) */
	assert_close(core_flops(&fw, "attn", &n),
		     4 * b * h * (2 * 1024.0 * 1024 / 2 + 512.0 * 512 / 2));
}

Test(attn, chunked_full_chunks_only)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 640, 0, 0, 0 };
	struct layer_ops fw;
	int n;

	/* s = 2560 = 4 C with C = 640: one call of b 4 = 8 sequences of 640,
	 * no remainder; P = 4 * 640^2/2 = 819200, 4 b h P = 6.711e9. */
	dims_2560(&d, &f);
	layer_fwd(&d, &k, &fw);
	assert_close(core_flops(&fw, "attn", &n), 4 * 2 * 1024.0 * 819200);
	cr_assert_eq(n, 1);
	cr_assert_eq(nth_core(&fw, "attn", 0)->attn.batch, 8);
}

Test(attn, nope_layer_stays_global)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind nope;
	struct layer_ops g, o;
	int n;

	/* Llama 4: attention_chunk_size 1024, every 4th layer NoPE: layer 3
	 * attends globally (chunk 0), its core the causal s^2/2 pairs,
	 * 4 b h s^2/2 = 4*2*1024*2560^2/2 = 2.684e10, as a layer of no
	 * chunked model; layer 0 is chunked. */
	dims_2560(&d, &f);
	f.model.attention_chunk_size = 1024;
	f.model.nope_layer_interval = 4;
	cr_assert_eq(model_layer_chunk(&f.model, 0), 1024);
	cr_assert_eq(model_layer_chunk(&f.model, 3), 0);
	nope = (struct layer_kind){ 0, 0,
		(double)model_layer_chunk(&f.model, 3), 0, 0, 0 };
	layer_fwd(&d, &nope, &o);
	layer_fwd(&d, NULL, &g);
	assert_close(core_flops(&o, "attn", &n), 4 * 2 * 1024.0 * 2560 * 2560 / 2);
	cr_assert_eq(n, 1);
	cr_assert_eq(layer_ops_flops(&o, PASS_FWD), layer_ops_flops(&g, PASS_FWD));
}

/* Count ops of o named name. */
static int count_named(const struct layer_ops *o, const char *name)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		n += strcmp(o->op[i].name, name) == 0;
	return n;
}

Test(attn, nope_layer_has_no_qk_norm)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops rope, nope;
	struct layer_kind kr = { 0, 0, 1024, 0, 0, 0 }, kn = { 0, 0, 0, 0, 0, 1 };

	/* Llama 4 builds its L2 qk_norm only where use_rope
	 * (Llama4TextAttention): with use_qk_norm a RoPE layer runs q_norm
	 * and k_norm once each forward (and their backwards), a NoPE
	 * layer none of the four. */
	dims_2560(&d, &f);
	d.qk_norm = 1;
	layer_fwd(&d, &kr, &rope);
	layer_fwd(&d, &kn, &nope);
	cr_assert_eq(count_named(&rope, "q_norm"), 1);
	cr_assert_eq(count_named(&rope, "k_norm"), 1);
	cr_assert_eq(count_named(&nope, "q_norm"), 0);
	cr_assert_eq(count_named(&nope, "k_norm"), 0);
	layer_bwd(&d, &kn, LREC_NONE, &nope);
	cr_assert_eq(count_named(&nope, "q_norm_bwd"), 0);
	layer_bwd(&d, &kr, LREC_NONE, &rope);
	cr_assert_eq(count_named(&rope, "q_norm_bwd"), 1);
}

Test(attn, within_one_chunk_is_causal_exactly)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind eq = { 0, 0, 2560, 0, 0, 0 }, past = { 0, 0, 8192, 0, 0, 0 };
	struct layer_ops g, a, b;
	int i;

	/* s <= C: the one chunk is the causal sequence; every op, its
	 * shape and its count equal the unchunked layer's, forward and
	 * backward. */
	dims_2560(&d, &f);
	layer_fwd(&d, NULL, &g);
	layer_fwd(&d, &eq, &a);
	layer_fwd(&d, &past, &b);
	cr_assert_eq(a.n, g.n);
	cr_assert_eq(b.n, g.n);
	for (i = 0; i < g.n; i++) {
		cr_assert_str_eq(a.op[i].name, g.op[i].name);
		cr_assert_eq(memcmp(&a.op[i].k.attn, &g.op[i].k.attn,
				    sizeof(g.op[i].k.attn)), 0);
		cr_assert_eq(memcmp(&b.op[i].k.attn, &g.op[i].k.attn,
				    sizeof(g.op[i].k.attn)), 0);
		cr_assert_eq(a.op[i].k.model_flops, g.op[i].k.model_flops);
	}
	layer_bwd(&d, NULL, LREC_SELECTIVE, &g);
	layer_bwd(&d, &eq, LREC_SELECTIVE, &a);
	cr_assert_eq(a.n, g.n);
	cr_assert_eq(layer_ops_flops(&a, PASS_BWD), layer_ops_flops(&g, PASS_BWD));
	cr_assert_eq(layer_ops_flops(&a, PASS_RECOMPUTE),
		     layer_ops_flops(&g, PASS_RECOMPUTE));
}

Test(attn, unfused_chunked_counts_the_chunks)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 1024, 0, 0, 0 };
	struct layer_ops fused, unfused;

	/* The unfused core computes the whole masked s x s matrix but counts
	 * the chunked pairs, as the fused kernel: the same model FLOPs. */
	dims_2560(&d, &f);
	layer_fwd(&d, &k, &fused);
	d.unfused_attn = 1;
	layer_fwd(&d, &k, &unfused);
	assert_close(layer_ops_flops(&unfused, PASS_FWD),
		     layer_ops_flops(&fused, PASS_FWD));
}

/* Megatron-Core's QKV split (framework qkv_split): a Llama-like layer, h
 * 1024, 16 heads of 64, 4 KV heads (q 1024, kv 256 wide), rotary and a
 * per-head QK norm, T = 2048 x 2 = 4096 tokens, B = 2, tp 1. */
Test(attn, megatron_qkv_split_copies_the_query_and_cats_the_gradients)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	double T = 4096, q = 1024, kv = 256, B = 2;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.model.num_key_value_heads = 4;
	f.model.position_embedding = POS_ROPE;
	f.model.qk_layernorm = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	/* Without it: no copy, one rotary kernel and call. */
	cr_assert_null(fixture_op(&o, "q_reshape"));
	op = fixture_op(&o, "rope");
	cr_assert_leq(op->k.launches, 1);
	cr_assert_leq(op->host_n, 1);
	/* The norm opens the LayerNormLinear's call, the QKV GEMM runs
	 * inside it; each QK norm is a module call of its own. */
	cr_assert_eq(fixture_op(&o, "norm1")->host, HOST_MODULE);
	cr_assert_eq(fixture_op(&o, "qkv")->host, HOST_FREE);
	cr_assert_eq(fixture_op(&o, "q_norm")->host, HOST_MODULE);
	cr_assert_eq(fixture_op(&o, "k_norm")->host, HOST_MODULE);

	f.fw.elementwise.qkv_split = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	/* 4 query groups of 4 heads: the query view's group stride is
	 * (4 + 2) 64, not 4 x 64, so reshape copies T q: read and write
	 * 4096 x 1024 x 2 = 8.39 MB; SplitAlongDim and the reshape are two
	 * PyTorch ops. It sits between the QKV GEMM and the QK norm. */
	op = fixture_op(&o, "q_reshape");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, T * q * B);
	fixture_assert_close(op->k.write_B, T * q * B);
	cr_assert_eq(op->host, HOST_OP);
	cr_assert_eq(op->host_n, 2);
	cr_assert_eq(fixture_op_index(&o, "q_reshape"),
		     fixture_op_index(&o, "qkv") + 1);
	cr_assert_eq(fixture_op_index(&o, "q_norm"),
		     fixture_op_index(&o, "q_reshape") + 1);
	/* Rotary on q, then on k: two kernels, two calls, the same bytes. */
	op = fixture_op(&o, "rope");
	fixture_assert_close(op->k.launches, 2);
	cr_assert_eq(op->host_n, 2);
	fixture_assert_close(op->k.read_B, T * (q + kv) * B);

	/* Backward: torch.cat of dq, dk, dv: read and write T (q + 2 kv) B =
	 * 4096 x 1536 x 2 = 12.6 MB, after the QK norms' backward, before
	 * the QKV GEMM's. */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "qkv_grad_cat");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, T * (q + 2 * kv) * B);
	fixture_assert_close(op->k.write_B, T * (q + 2 * kv) * B);
	cr_assert_lt(fixture_op_index(&o, "k_norm_bwd"),
		     fixture_op_index(&o, "qkv_grad_cat"));
	cr_assert_lt(fixture_op_index(&o, "qkv_grad_cat"),
		     fixture_op_index(&o, "qkv_dgrad"));

	/* One KV head (one query group): the query is a view, no copy; the
	 * gradients still come apart, the cat stays. */
	f.model.num_key_value_heads = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "q_reshape"));
	layer_bwd(&d, NULL, LREC_NONE, &o);
	cr_assert_not_null(fixture_op(&o, "qkv_grad_cat"));

	/* MHA, 16 KV heads: 16 groups of p = 1 query head. The query view
	 * is [T, 16, 64] with group stride (1 + 2) 64 and reshape's target
	 * is that same shape, so it returns the view: no copy. The cat
	 * stays: T (1024 + 2 x 1024) B read and written. */
	f.model.num_key_value_heads = 16;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "q_reshape"));
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "qkv_grad_cat");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, T * (q + 2 * q) * B);
}

/* MLA (q/k 64 + 32 = 96, v 64: the dims differ) with framework
 * attention_mla_bwd_kernel ck_tile (value 4 = enum GPU_ATTN_CK_TILE + 1;
 * an image whose Transformer Engine ROCm has no AITER v3 backward for
 * MLA's dims): the backward's flash call runs CK-tile's kernel, the
 * forward keeps attention_kernel's (vendor); "same" (0) keeps the vendor
 * backward; a layer with equal dims (the plain GPT fixture) ignores the
 * key. */
static void mla_dims(struct fixture *f, struct layer_dims *d, int mla_bwd)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f->model.q_lora_rank = 256;
	f->model.kv_lora_rank = 128;
	f->model.qk_nope_head_dim = 64;
	f->model.qk_rope_head_dim = 32;
	f->model.v_head_dim = 64;
	f->fw.attention_mla_bwd_kernel = mla_bwd;
	layer_dims_from_job(&f->job, d);
}

Test(attn, mla_backward_runs_the_mla_bwd_kernel)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { 0 };
	struct layer_ops fw, bw;
	const struct kern *a;

	mla_dims(&f, &d, GPU_ATTN_CK_TILE + 1);
	layer_fwd(&d, &k, &fw);
	layer_bwd(&d, &k, LREC_NONE, &bw);
	a = nth_core(&fw, "attn", 0);
	cr_assert_not_null(a);
	cr_assert_eq(a->attn.head_dim_qk, 96);
	cr_assert_eq(a->attn.head_dim_v, 64);
	cr_assert_eq(a->attn.kernel, GPU_ATTN_VENDOR);
	a = nth_core(&bw, "attn_bwd", 0);
	cr_assert_not_null(a);
	cr_assert_eq(a->attn.kernel, GPU_ATTN_CK_TILE);
	mla_dims(&f, &d, 0);
	layer_bwd(&d, &k, LREC_NONE, &bw);
	cr_assert_eq(nth_core(&bw, "attn_bwd", 0)->attn.kernel,
		     GPU_ATTN_VENDOR);
	fixture_gpt(&f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f.fw.attention_mla_bwd_kernel = GPU_ATTN_CK_TILE + 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, &k, LREC_NONE, &bw);
	cr_assert_eq(nth_core(&bw, "attn_bwd", 0)->attn.kernel,
		     GPU_ATTN_VENDOR);
}
