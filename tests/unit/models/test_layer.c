/*
 * test_layer.c - FLOPs, collectives and parameters of a transformer layer
 * against closed forms.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fixture.h"
#include "models/footprint.h"
#include "models/layer.h"
#include "models/layer_impl.h"

/* GPT layer: h 1024, a 16 (d 64), f 4096, s 2048, b 2 -> T = 4096. */
static void gpt_dims(struct layer_dims *d, double tp, int sp)
{
	struct fixture f;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, (int64_t)tp, 1);
	f.job.parallelism.sequence_parallel = sp;
	layer_dims_from_job(&f.job, d);
}

static int count_tp(const struct layer_ops *o, enum coll_op op, double *bytes)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		if (o->op[i].kind == LOP_COLL && o->op[i].coll == op) {
			n++;
			*bytes = o->op[i].coll_B;
		}
	return n;
}

Test(layer, forward_flops_match_closed_form)
{
	struct layer_dims d;
	struct layer_ops o;
	double T = 4096, h = 1024, s = 2048, b = 2;

	/* Narayanan et al. SC'21: 24 T h^2 + 4 b s^2 h per layer forward,
	 * with the scores over the causal half as Megatron-LM counts them
	 * now (num_floating_point_operations: s / 2): 24 T h^2 + 2 b s^2 h
	 * = 24*4096*1024^2 + 2*2*2048^2*1024 = 1.203e11 FLOP. */
	gpt_dims(&d, 1, 0);
	layer_fwd(&d, NULL, &o);
	fixture_assert_close(layer_ops_flops(&o, PASS_FWD),
		     24 * T * h * h + 2 * b * s * s * h);
}

Test(layer, tensor_parallel_divides_flops)
{
	struct layer_dims d;
	struct layer_ops o;
	double T = 4096, h = 1024, s = 2048, b = 2;

	/* tp 4: each GPU does a quarter, 3.006e10 FLOP. */
	gpt_dims(&d, 4, 1);
	layer_fwd(&d, NULL, &o);
	fixture_assert_close(layer_ops_flops(&o, PASS_FWD),
		     (24 * T * h * h + 2 * b * s * s * h) / 4);
}

Test(layer, backward_is_twice_forward)
{
	struct layer_dims d;
	struct layer_ops f, bw;

	/* Every GEMM's backward is two GEMMs of its size; attention 2x. */
	gpt_dims(&d, 2, 0);
	layer_fwd(&d, NULL, &f);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	fixture_assert_close(layer_ops_flops(&bw, PASS_BWD),
		     2 * layer_ops_flops(&f, PASS_FWD));
	cr_assert_eq(layer_ops_flops(&bw, PASS_RECOMPUTE), 0);
}

Test(layer, recompute_costs)
{
	struct layer_dims d;
	struct layer_ops f, full, sel;
	double s = 2048, b = 2, h = 1024;

	gpt_dims(&d, 2, 1);
	layer_fwd(&d, NULL, &f);
	/* Full: the whole forward again. */
	layer_bwd(&d, NULL, LREC_FULL, &full);
	fixture_assert_close(layer_ops_flops(&full, PASS_RECOMPUTE),
		     layer_ops_flops(&f, PASS_FWD));
	/* Selective: only the attention core, counted causal, 2 b s^2 h / t
	 * = 2*2*2048^2*1024 / 2 = 8.59e9. */
	layer_bwd(&d, NULL, LREC_SELECTIVE, &sel);
	fixture_assert_close(layer_ops_flops(&sel, PASS_RECOMPUTE),
		     2 * b * s * s * h / 2);
}

Test(layer, unfused_attention_same_model_flops)
{
	struct layer_dims d;
	struct layer_ops fused, unfused;

	/* QK^T (s,s,d) and AV (s,d,s) per head compute 2 * 2 s^2 d * b a / t,
	 * but count, as the fused kernel does, the causal half 2 b s^2 h / t:
	 * the model count does not depend on the implementation. */
	gpt_dims(&d, 2, 0);
	layer_fwd(&d, NULL, &fused);
	d.unfused_attn = 1;
	layer_fwd(&d, NULL, &unfused);
	fixture_assert_close(layer_ops_flops(&unfused, PASS_FWD),
		     layer_ops_flops(&fused, PASS_FWD));
}

Test(layer, unfused_attention_dropout_is_its_own_kernel)
{
	struct layer_dims d;
	struct layer_ops f, bw;
	const struct layer_op *sm, *dr;
	/* tp 2: a/t = 8 heads, b 2, s 2048: 8 * 2 * 2048^2 = 67108864 scores
	 * of 2 B. Softmax reads and writes them (134217728 B each way); the
	 * dropout (Megatron-LM's torch.nn.Dropout after the fused softmax)
	 * reads P (134217728 B) and writes P' and its 1-byte mask
	 * (134217728 + 67108864 = 201326592 B). */
	double n = 8.0 * 2 * 2048 * 2048;

	gpt_dims(&d, 2, 0);
	d.unfused_attn = 1;
	d.dropout = 1;
	layer_fwd(&d, NULL, &f);
	sm = fixture_op(&f, "softmax");
	dr = fixture_op(&f, "attn_dropout");
	cr_assert(sm && dr);
	fixture_assert_close(sm->k.read_B, 2 * n);
	fixture_assert_close(sm->k.write_B, 2 * n);
	fixture_assert_close(dr->k.read_B, 2 * n);
	fixture_assert_close(dr->k.write_B, 2 * n + n);
	/* Backward: the dropout's reads dP' and the mask (3 n B), writes dP
	 * (2 n); the softmax's reads dP and P (4 n), writes dS (2 n). */
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	dr = fixture_op(&bw, "attn_dropout_bwd");
	sm = fixture_op(&bw, "softmax_bwd");
	cr_assert(sm && dr);
	fixture_assert_close(dr->k.read_B, 3 * n);
	fixture_assert_close(dr->k.write_B, 2 * n);
	fixture_assert_close(sm->k.read_B, 4 * n);
	fixture_assert_close(sm->k.write_B, 2 * n);
	/* Without dropout no dropout kernel. */
	d.dropout = 0;
	layer_fwd(&d, NULL, &f);
	cr_assert_null(fixture_op(&f, "attn_dropout"));
}

Test(layer, bias_kernels_of_a_biased_model)
{
	struct layer_dims d;
	struct layer_ops f, bw;
	const struct layer_op *op;
	/* tp 2, SP: T = 4096 tokens, T' = 2048; h 1024, f 4096. QKV bias
	 * add: T 3h/t = 4096 * 1536 elements of 2 B read and written
	 * (12582912 B each way); bias gradients read the output gradients:
	 * qkv T 3h/t, fc1 T f/t = 4096 * 2048, proj and fc2 T' h = 2048 *
	 * 1024 (after the reduce-scatter), 2 B each. */
	gpt_dims(&d, 2, 1);
	d.bias_kernels = LAYER_BIAS_ATTN | LAYER_BIAS_MLP;
	layer_fwd(&d, NULL, &f);
	op = fixture_op(&f, "qkv_bias");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 4096.0 * 1536 * 2);
	fixture_assert_close(op->k.write_B, 4096.0 * 1536 * 2);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	fixture_assert_close(fixture_op(&bw, "qkv_bias_grad")->k.read_B, 4096.0 * 1536 * 2);
	fixture_assert_close(fixture_op(&bw, "fc1_bias_grad")->k.read_B, 4096.0 * 2048 * 2);
	fixture_assert_close(fixture_op(&bw, "fc2_bias_grad")->k.read_B, 2048.0 * 1024 * 2);
	fixture_assert_close(fixture_op(&bw, "proj_bias_grad")->k.read_B, 2048.0 * 1024 * 2);
	/* Fused into the GEMMs (the default): none. */
	d.bias_kernels = 0;
	layer_fwd(&d, NULL, &f);
	cr_assert_null(fixture_op(&f, "qkv_bias"));
}

Test(layer, tp_collectives_without_sp)
{
	struct layer_dims d;
	struct layer_ops f, bw;
	double bytes = 0;

	/* Forward: 2 all-reduces of T h B = 4096*1024*2 = 8 MiB; backward:
	 * 2 (the column-parallel input gradients). */
	gpt_dims(&d, 4, 0);
	layer_fwd(&d, NULL, &f);
	cr_assert_eq(count_tp(&f, COLL_ALLREDUCE, &bytes), 2);
	fixture_assert_close(bytes, 4096.0 * 1024 * 2);
	cr_assert_eq(count_tp(&f, COLL_ALLGATHER, &bytes), 0);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_tp(&bw, COLL_ALLREDUCE, &bytes), 2);
}

Test(layer, tp_collectives_with_sp)
{
	struct layer_dims d;
	struct layer_ops f, bw;
	double bytes = 0;

	/* SP forward: all-gather before QKV and fc1, reduce-scatter after
	 * proj and fc2. Backward: all-gathers of the two output gradients
	 * and of the two re-gathered inputs, reduce-scatters of the two input
	 * gradients. Sizes are the full T h B = 8 MiB (coll.h convention). */
	gpt_dims(&d, 4, 1);
	layer_fwd(&d, NULL, &f);
	cr_assert_eq(count_tp(&f, COLL_ALLGATHER, &bytes), 2);
	cr_assert_eq(count_tp(&f, COLL_REDUCESCATTER, &bytes), 2);
	fixture_assert_close(bytes, 4096.0 * 1024 * 2);
	cr_assert_eq(count_tp(&f, COLL_ALLREDUCE, &bytes), 0);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	cr_assert_eq(count_tp(&bw, COLL_ALLGATHER, &bytes), 4);
	cr_assert_eq(count_tp(&bw, COLL_REDUCESCATTER, &bytes), 2);
}

Test(layer, tp_overlap_splits_into_pieces)
{
	struct layer_dims d;
	struct layer_ops plain, split;
	double bytes = 0;

	/* 4 pieces at tp 4 (T 4096, h 1024, 16-bit: a gathered input of
	 * 8 MiB): the ring exchange's GEMM piece 0 takes the local shard, so
	 * 3 all-gathers per column GEMM (qkv, fc1: 6), each of 8 MiB / 3,
	 * which bring (tp - 1) / tp of it = 2 MiB to a rank, one shard of
	 * T / tp h 2 B = 1024 x 1024 x 2; 4 reduce-scatters per row GEMM
	 * (proj, fc2: 8), each a quarter of 8 MiB; FLOPs unchanged. */
	gpt_dims(&d, 4, 1);
	layer_fwd(&d, NULL, &plain);
	d.chunks = 4;
	layer_fwd(&d, NULL, &split);
	cr_assert_eq(count_tp(&split, COLL_ALLGATHER, &bytes), 6);
	fixture_assert_close(bytes, 4096.0 * 1024 * 2 / 3);
	fixture_assert_close(bytes * 3 / 4, 1024.0 * 1024 * 2);
	cr_assert_eq(count_tp(&split, COLL_REDUCESCATTER, &bytes), 8);
	fixture_assert_close(layer_ops_flops(&split, PASS_FWD),
		     layer_ops_flops(&plain, PASS_FWD));
}

/* Transformer Engine's ring-exchange all-gather overlap (split_overlap_ag,
 * layer_ops.c gather_piece) runs GEMM piece 0 on the local shard at once:
 * the first qkv piece waits for no all-gather, piece i for all-gather
 * piece i (the one pushed just before it). Forward qkv/fc1 at tp 4, and
 * the backward's proj/fc2 dgrad pieces on the gathered output gradient
 * alike: 3 all-gathers each, none before the first dgrad piece. */
static void assert_local_first(const struct layer_ops *o, const char *gemm,
			       const char *ag)
{
	int i, seen = 0, pieces = 0;

	for (i = 0; i < o->n; i++) {
		const struct layer_op *op = &o->op[i];

		if (strcmp(op->name, ag) == 0)
			seen++;
		if (strcmp(op->name, gemm) != 0)
			continue;
		if (pieces++ == 0) {
			cr_assert_eq(seen, 0, "%s piece 0 after %d %s", gemm,
				     seen, ag);
			cr_assert(op->dep[0] < 0 ||
				  o->op[op->dep[0]].kind != LOP_COLL,
				  "%s piece 0 waits for %s", gemm,
				  o->op[op->dep[0]].name);
		} else {
			cr_assert_eq(seen, pieces - 1, "%s piece %d", gemm,
				     pieces - 1);
			cr_assert_str_eq(o->op[op->dep[0]].name, ag);
		}
	}
	cr_assert_eq(pieces, 4, "%s: %d pieces", gemm, pieces);
	cr_assert_eq(seen, 3, "%s: %d all-gathers", ag, seen);
}

Test(layer, tp_overlap_first_piece_on_the_local_shard)
{
	struct layer_dims d;
	struct layer_ops f, bw;

	gpt_dims(&d, 4, 1);
	d.chunks = 4;
	layer_fwd(&d, NULL, &f);
	assert_local_first(&f, "qkv", "qkv_allgather");
	assert_local_first(&f, "fc1", "fc1_allgather");
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	assert_local_first(&bw, "proj_dgrad", "proj_grad_allgather");
	assert_local_first(&bw, "fc2_dgrad", "fc2_grad_allgather");
}

Test(layer, dependencies_point_backwards)
{
	struct layer_dims d;
	struct layer_ops o;
	int i, k;

	gpt_dims(&d, 4, 1);
	d.chunks = 4;
	layer_bwd(&d, NULL, LREC_FULL, &o);
	cr_assert_eq(o.op[0].dep[0], LAYER_IN);
	for (i = 0; i < o.n; i++)
		for (k = 0; k < 2; k++)
			cr_assert(o.op[i].dep[k] < i, "op %d (%s) waits for %d",
				  i, o.op[i].name, o.op[i].dep[k]);
}

Test(layer, lm_head_flops)
{
	struct layer_dims d;
	struct layer_ops o;

	/* Logits GEMM 2 T h V / t = 2*4096*1024*51200/2 = 2.147e11. */
	gpt_dims(&d, 2, 0);
	layer_head_fwd(&d, &o);
	fixture_assert_close(layer_ops_flops(&o, PASS_FWD), 2 * 4096.0 * 1024 * 51200 / 2);
	layer_head_bwd(&d, &o);
	fixture_assert_close(layer_ops_flops(&o, PASS_BWD), 2 * 2 * 4096.0 * 1024 * 51200 / 2);
}

Test(layer, six_n_per_token)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	double gemm = 0, attn, T, n, L = 32;
	int i;

	/* Llama 3 8B shapes: h 4096, 32 heads, 8 KV heads of 128, gated
	 * f 14336, V 128256. Without attention scores, fwd+bwd FLOPs per
	 * token are 6 N, N = L (h (a+2g) d + a d h + 3 h f) + V h
	 * = 32 * 218103808 + 525336576 = 7.505e9 weights in GEMMs. */
	fixture_gpt(&f, 32, 4096, 32, 128256, 2048, 1, 8, 1, 1, 1);
	f.model.num_key_value_heads = 8;
	f.model.intermediate_size = 14336;
	f.model.gated_mlp = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	for (i = 0; i < o.n; i++)
		if (o.op[i].kind == LOP_KERNEL && o.op[i].k.kind == KERN_GEMM)
			gemm += layer_kern_model_flops(&o.op[i].k);
	attn = layer_ops_flops(&o, PASS_FWD) - gemm;
	layer_head_fwd(&d, &o);
	T = 2048;
	n = L * (4096.0 * 48 * 128 + 4096.0 * 4096 + 3 * 4096.0 * 14336) +
	    128256.0 * 4096;
	fixture_assert_close(3 * (L * gemm + layer_ops_flops(&o, PASS_FWD)) / T, 6 * n);
	/* and the scores are 4 b s^2 h per layer over the causal half,
	 * 2 b s^2 h = 3.44e10 */
	fixture_assert_close(attn, 2 * 2048.0 * 2048 * 4096);
}

Test(layer, parameters)
{
	struct layer_dims d;

	/* GPT layer without biases: 12 h^2 + 2 LayerNorms (2 h each) =
	 * 12*1024^2 + 4*1024 = 12587008. */
	gpt_dims(&d, 1, 0);
	fixture_assert_close(layer_params(&d, 0, 1), 12 * 1024.0 * 1024 + 4 * 1024);
	/* with biases: + 3h (QKV) + h + 4h + h = 9 h more */
	fixture_assert_close(layer_params(&d, LAYER_BIAS_ATTN | LAYER_BIAS_MLP, 1) -
			     layer_params(&d, 0, 1), 9 * 1024.0);
	/* attention_bias alone (GLM-4.5: biased QKV, MLP without): QKV 3h
	 * and the output projection's h = 4 h; the MLP's 4h + h are
	 * mlp_bias' */
	fixture_assert_close(layer_params(&d, LAYER_BIAS_ATTN, 1) -
			     layer_params(&d, 0, 1), 4 * 1024.0);
	fixture_assert_close(layer_params(&d, LAYER_BIAS_MLP, 1) -
			     layer_params(&d, 0, 1), 5 * 1024.0);
	/* embedding: V h + 2048 learned positions * h */
	fixture_assert_close(layer_embed_params(&d, 2048), (51200.0 + 2048) * 1024);
}

Test(layer, vocab_padded_for_tp)
{
	struct fixture f;
	struct layer_dims d;

	/* GPT-2's 50257 padded to a multiple of 128 * tp 8 = 1024: 51200. */
	fixture_gpt(&f, 8, 1024, 16, 50257, 2048, 1, 8, 1, 8, 1);
	f.fw.vocab_multiple = 128;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.vocab, 51200);
}

Test(layer, embedding_gradient_in_the_gradient_dtype)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	double T = 4096, h = 1024;
	int i;

	/* The embedding backward scatter-adds T rows of h into the gradient
	 * buffer: reads the 16-bit output gradient and the G-byte buffer,
	 * writes the buffer. fp32 gradients: T h (2 + 4) read, T h 4 written;
	 * bf16 (plain PyTorch): T h (2 + 2) read, T h 2 written. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	layer_dims_from_job(&f.job, &d);
	layer_embed_bwd(&d, &o);
	i = o.n - 1;
	cr_assert_str_eq(o.op[i].name, "embed_wgrad");
	fixture_assert_close(o.op[i].k.read_B, T * h * 6);
	fixture_assert_close(o.op[i].k.write_B, T * h * 4);
	f.fw.grad_dtype = DTYPE_BF16;
	layer_dims_from_job(&f.job, &d);
	layer_embed_bwd(&d, &o);
	fixture_assert_close(o.op[i].k.read_B, T * h * 4);
	fixture_assert_close(o.op[i].k.write_B, T * h * 2);
}

Test(layer, embedding_dense_gradient_then_main_grad_add)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	double T = 4096, h = 1024, V = 51200;
	int i;

	/* Megatron DDP (framework embedding_grad_dense): PyTorch's
	 * embedding backward zeroes a [V, h] bf16 gradient (write 2 V h),
	 * sums the T rows through fp32 partial segments and scatters them
	 * (read T h (2 + 4), write T h (4 + 2)) in 8 kernels, then the DDP
	 * hook adds all of it into the fp32 main_grad (read V h (2 + 4),
	 * write 4 V h). tp 1, T = s b = 2048 x 2. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.embedding_grad_dense = 1;
	layer_dims_from_job(&f.job, &d);
	layer_embed_bwd(&d, &o);
	cr_assert_eq(o.n, 3);
	i = 0;
	cr_assert_str_eq(o.op[i].name, "embed_grad_zero");
	fixture_assert_close(o.op[i].k.read_B, 0);
	fixture_assert_close(o.op[i].k.write_B, 2 * V * h);
	i = 1;
	cr_assert_str_eq(o.op[i].name, "embed_wgrad");
	fixture_assert_close(o.op[i].k.read_B, 6 * T * h);
	fixture_assert_close(o.op[i].k.write_B, 6 * T * h);
	cr_assert_eq(o.op[i].k.launches, 8);
	i = 2;
	cr_assert_str_eq(o.op[i].name, "embed_main_grad_add");
	fixture_assert_close(o.op[i].k.read_B, 6 * V * h);
	fixture_assert_close(o.op[i].k.write_B, 4 * V * h);
	/* tp 8: the vocabulary shard, V / 8 rows (zero 2 V h / 8). */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 8, 1);
	f.fw.embedding_grad_dense = 1;
	layer_dims_from_job(&f.job, &d);
	layer_embed_bwd(&d, &o);
	cr_assert_str_eq(o.op[0].name, "embed_grad_zero");
	fixture_assert_close(o.op[0].k.write_B, 2 * V / 8 * h);
	/* ZeRO 3 (FSDP's own gradient shards): the scatter-add model. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.embedding_grad_dense = 1;
	f.job.training.zero_stage = 3;
	layer_dims_from_job(&f.job, &d);
	layer_embed_bwd(&d, &o);
	cr_assert_str_eq(o.op[0].name, "embed_wgrad");
}


/* The op named `name` in o, or -1. */
static int op_index(const struct layer_ops *o, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			return i;
	return -1;
}

Test(layer, mtp_embedding_backward_is_dense_too)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	struct layer_kind k = { 0 };
	double T = 4096, h = 1024, V = 51200;
	int i;

	/* An MTP module's embedding lookup is Megatron-Core's own
	 * LanguageModelEmbedding on the MTP stage: under Megatron DDP
	 * (embedding_grad_dense) its backward is the main embedding's, a
	 * zeroed [V, h] bf16 gradient (write 2 V h), the T rows summed in
	 * (read and write T h (2 + 4)) and the hook's main_grad add (read V
	 * h (2 + 4), write 4 V h). tp 1, T = 2048 x 2, one dense layer in
	 * the module, no head. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.embedding_grad_dense = 1;
	layer_dims_from_job(&f.job, &d);
	layer_mtp_bwd(&d, &k, 1, LREC_NONE, 0, 0, &o);
	i = op_index(&o, "mtp_embed_grad_zero");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.write_B, 2 * V * h);
	i = op_index(&o, "mtp_embed_wgrad");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.read_B, 6 * T * h);
	fixture_assert_close(o.op[i].k.write_B, 6 * T * h);
	i = op_index(&o, "mtp_embed_main_grad_add");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.read_B, 6 * V * h);
	fixture_assert_close(o.op[i].k.write_B, 4 * V * h);
	/* Without the key: T rows scatter-added into the fp32 gradient
	 * buffer (read T h (2 + 4), write 4 T h), nothing of V. */
	f.fw.embedding_grad_dense = 0;
	layer_dims_from_job(&f.job, &d);
	layer_mtp_bwd(&d, &k, 1, LREC_NONE, 0, 0, &o);
	cr_assert_eq(op_index(&o, "mtp_embed_grad_zero"), -1);
	cr_assert_eq(op_index(&o, "mtp_embed_main_grad_add"), -1);
	i = op_index(&o, "mtp_embed_wgrad");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.read_B, 6 * T * h);
	fixture_assert_close(o.op[i].k.write_B, 4 * T * h);
}

Test(layer, mtp_embedding_gradient_summed_by_autograd_adds_no_main_grad)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	struct layer_kind k = { 0 };
	double T = 4096, h = 1024, V = 51200;
	int i;

	/* The same weight looked up again later in the backward (one
	 * stage: the first stage's embedding): autograd sums the two dense
	 * [V, h] bf16 gradients in the weight's input buffer, read 2 x 2 V
	 * h, write 2 V h, and the DDP hook's main_grad add (read 6 V h,
	 * write 4 V h) runs once, at the other lookup: none here. The
	 * zeroed gradient and the T rows stay (2 V h; 6 T h each way).
	 * Setup as mtp_embedding_backward_is_dense_too. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.embedding_grad_dense = 1;
	layer_dims_from_job(&f.job, &d);
	layer_mtp_bwd(&d, &k, 1, LREC_NONE, 0, 1, &o);
	cr_assert_eq(op_index(&o, "mtp_embed_main_grad_add"), -1);
	i = op_index(&o, "mtp_embed_grad_sum");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.read_B, 4 * V * h);
	fixture_assert_close(o.op[i].k.write_B, 2 * V * h);
	i = op_index(&o, "mtp_embed_grad_zero");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.write_B, 2 * V * h);
	i = op_index(&o, "mtp_embed_wgrad");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.read_B, 6 * T * h);
	/* without the dense gradient (scatter-add into the fp32 buffer)
	 * there is nothing to sum: the flag changes nothing */
	f.fw.embedding_grad_dense = 0;
	layer_dims_from_job(&f.job, &d);
	layer_mtp_bwd(&d, &k, 1, LREC_NONE, 0, 1, &o);
	cr_assert_eq(op_index(&o, "mtp_embed_grad_sum"), -1);
	i = op_index(&o, "mtp_embed_wgrad");
	cr_assert_geq(i, 0);
	fixture_assert_close(o.op[i].k.write_B, 4 * T * h);
}
Test(layer, residual_gradients_are_summed_by_their_own_kernel)
{
	struct layer_dims d;
	struct layer_ops o;
	double n = 4096.0 * 1024;	/* T h */
	const struct layer_op *op;

	/* Autograd sums a residual connection's two gradients (the norm's dx
	 * and the residual branch's) with an add: read 2 T h B, write T h B
	 * (B = 2): 16.8 / 8.4 MB; the fused norm backward reads x and dy
	 * (2 T h B) and writes dx, in one kernel. */
	gpt_dims(&d, 1, 0);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "add1_bwd");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 2 * n * 2);
	fixture_assert_close(op->k.write_B, n * 2);
	cr_assert_not_null(fixture_op(&o, "add2_bwd"));
	op = fixture_op(&o, "norm1_bwd");
	fixture_assert_close(op->k.read_B, 2 * n * 2);
	/* PyTorch's norm backward re-reads x and dy for dgamma: 4 T h B in
	 * two kernels. */
	d.norm_bwd_passes = 2;
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "norm1_bwd");
	fixture_assert_close(op->k.read_B, 4 * n * 2);
	fixture_assert_close(op->k.launches, 2);
}

Test(layer, eager_ops_move_more_bytes_in_more_kernels)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	double T = 4096, q = 1024, kv = 256, fp = 4096, B = 2;

	/* A Llama-like layer: h 1024, 16 heads of 64, 4 KV heads (kv width
	 * 256), gated MLP f' = 4096 (u = 8192), rotary, T = 4096. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.model.num_key_value_heads = 4;
	f.model.gated_mlp = 1;
	f.model.position_embedding = POS_ROPE;
	f.fw.elementwise.eager_rope = 1;
	f.fw.elementwise.eager_activation = 1;
	f.fw.elementwise.expand_kv = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	/* Rotary on q and k (n = T (q + kv) = 5.24e6 elements): x cos, -x2,
	 * cat, * sin, + on each: read 5.5 n B, write 4.5 n B, 10 kernels,
	 * 7 n B of them on strided views. */
	op = fixture_op(&o, "rope");
	fixture_assert_close(op->k.read_B, 5.5 * T * (q + kv) * B);
	fixture_assert_close(op->k.write_B, 4.5 * T * (q + kv) * B);
	fixture_assert_close(op->k.strided_B, 7 * T * (q + kv) * B);
	fixture_assert_close(op->k.launches, 10);
	/* K and V copied to the 16 query heads: read 2 T kv B, write
	 * 2 T q B, two strided copies. */
	op = fixture_op(&o, "kv_expand");
	fixture_assert_close(op->k.read_B, 2 * T * kv * B);
	fixture_assert_close(op->k.write_B, 2 * T * q * B);
	/* silu(g) * u: read 3 T f' B, write 2 T f' B (fused: read 2 T f' B,
	 * write T f' B), two kernels. */
	op = fixture_op(&o, "act");
	fixture_assert_close(op->k.read_B, 3 * T * fp * B);
	fixture_assert_close(op->k.write_B, 2 * T * fp * B);
	fixture_assert_close(op->k.launches, 2);
	/* Without GQA there is nothing to expand. */
	f.model.num_key_value_heads = 16;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	cr_assert_null(fixture_op(&o, "kv_expand"));
}

Test(layer, complex_rope_is_three_kernels_a_tensor_eager_or_compiled)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	double T = 4096, q = 1024, kv = 256, B = 2;
	/* torchtitan's apply_rotary_emb on q and k, n = T (q + kv) =
	 * 5.24e6 elements: x.float() (r n B, w 4n), the complex64 multiply
	 * (r 4n, w 4n), type_as (r 4n, w n B): read and write n (B + 8)
	 * each, six kernels, nothing strided; 3 flops a real element. */
	double n = T * (q + kv), io = n * (B + 8);

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.model.num_key_value_heads = 4;
	f.model.position_embedding = POS_ROPE;
	f.fw.elementwise.complex_rope = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	op = fixture_op(&o, "rope");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, io);
	fixture_assert_close(op->k.write_B, io);
	fixture_assert_close(op->k.strided_B, 0);
	fixture_assert_close(op->k.launches, 6);
	fixture_assert_close(op->k.vec_flops, 3 * n);
	/* the backward runs the same chain on the gradient */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	op = fixture_op(&o, "rope_bwd");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, io);
	fixture_assert_close(op->k.launches, 6);
	/* eager_rope (the rotate-half chain) does not replace it: the
	 * complex views are what the model code runs */
	f.fw.elementwise.eager_rope = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	op = fixture_op(&o, "rope");
	fixture_assert_close(op->k.read_B, io);
	fixture_assert_close(op->k.launches, 6);
	/* without it, the fused rope: one kernel reading and writing n B */
	f.fw.elementwise.complex_rope = 0;
	f.fw.elementwise.eager_rope = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	op = fixture_op(&o, "rope");
	fixture_assert_close(op->k.read_B, n * B);
	cr_assert_leq(op->k.launches, 1);	/* 0 or 1: one kernel */
}

Test(layer, fsdp_passes_follow_torch_fsdp)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	/* GPT layer of 12 h^2 + 4 h = 12587008 parameters (test
	 * "parameters"), 8 GPUs, tp 1: N = dp = 8, a shard S = P / 8 =
	 * 1573376. gbs 64 over 8 replicas of b 2: 4 microbatches, so the
	 * shard is added into on 3 of 4. bf16 parameters (W 2), fp32
	 * gradients and master copies (G = M = 4). */
	double P = 12 * 1024.0 * 1024 + 4 * 1024, S = P / 8;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.job.training.zero_stage = 3;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	/* Off unless the framework runs torch FSDP's passes. */
	cr_assert_null(fixture_op(&o, "fsdp_grad_cast"));
	f.fw.fsdp_grad_passes = 1;
	layer_dims_from_job(&f.job, &d);
	/* torch's DefaultState for 8 ranks: pre-division 4 (2 and 4 divide
	 * 8 while 8 / f > f), post-division 8 / 4 = 2. */
	cr_assert_eq(d.fsdp_pre, 4);
	cr_assert_eq(d.fsdp_post, 2);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	/* The flat gradient: autograd concatenates the views' bf16
	 * gradients (SplitWithSizesBackward): read P x 2, write P x 2. */
	op = fixture_op(&o, "fsdp_grad_flatten");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, P * 2);
	fixture_assert_close(op->k.write_B, P * 2);
	/* The cast: read P x 2, write P x 4, after the layer's backward. */
	op = fixture_op(&o, "fsdp_grad_cast");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, P * 2);
	fixture_assert_close(op->k.write_B, P * 4);
	/* The pre-division of the fp32 gradient: read and write P x 4. */
	op = fixture_op(&o, "fsdp_grad_prediv");
	fixture_assert_close(op->k.read_B, P * 4);
	fixture_assert_close(op->k.write_B, P * 4);
	/* On the shard: post-division (r 4 S, w 4 S), the addition on 3/4 of
	 * the microbatches (r 8 S, w 4 S, x 0.75), two bf16 copies of the
	 * fp32 shard (r 8 S, w 4 S): read 4 S + 6 S + 8 S = 18 S, written
	 * 4 S + 3 S + 4 S = 11 S, 4 kernels. */
	op = fixture_op(&o, "fsdp_shard_passes");
	fixture_assert_close(op->k.read_B, 18 * S);
	fixture_assert_close(op->k.write_B, 11 * S);
	fixture_assert_close(op->k.launches, 4);
	cr_assert_str_eq(o.op[o.n - 1].name, "fsdp_shard_passes");
	/* Two ranks: pre-division 2 (2 / 2 = 1 is not > 2), no post-
	 * division. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 4, 1);
	f.job.parallelism.tp = 4;
	f.job.parallelism.dp = 2;
	f.job.training.zero_stage = 3;
	f.fw.fsdp_grad_passes = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.fsdp_pre, 2);
	cr_assert_eq(d.fsdp_post, 1);
}

Test(layer, fp8_amax_reduction_per_chunk_pass)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;

	/* bf16: no amax reduction whatever the framework says. */
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.fp8_amax_reduction = AMAX_STAGE;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.amax_group, -1);
	/* fp8: over the stage; a forward pass of 8 layers reduces 3 amaxes
	 * of 4 linear layers each, 96 x 4 B = 384 B, a backward 2 x 4 x 8 x
	 * 4 B = 256 B, each followed by the scale update kernel. */
	f.job.training.dtype = DTYPE_FP8;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.amax_group, LG_STAGE);
	layer_fp8_amax(&d, 0, 8, 8, &o);
	cr_assert_eq(o.n, 2);
	cr_assert_eq(o.op[0].kind, LOP_COLL);
	cr_assert_eq(o.op[0].coll, COLL_ALLREDUCE);
	cr_assert_eq(o.op[0].stream, LS_COMPUTE);
	fixture_assert_close(o.op[0].coll_B, 384);
	cr_assert_str_eq(o.op[1].name, "fp8_scale_update");
	layer_fp8_amax(&d, 1, 8, 8, &o);
	fixture_assert_close(o.op[0].coll_B, 256);
	/* A group of one GPU: nothing. */
	layer_fp8_amax(&d, 0, 8, 1, &o);
	cr_assert_eq(o.n, 0);
	f.fw.fp8_amax_reduction = AMAX_TP_CP;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.amax_group, LG_TPCP);
	/* Current and block scaling keep no amax history (Transformer
	 * Engine's DelayedScaling alone reduces amaxes): no reduction, no
	 * scale update. Nor MXFP8, whose scales are per 32-element block. */
	f.job.training.fp8_scaling = FP8_CURRENT;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.amax_group, -1);
	f.job.training.fp8_scaling = FP8_BLOCK;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.amax_group, -1);
	f.job.training.fp8_scaling = FP8_DELAYED;
	f.job.training.dtype = DTYPE_MXFP8;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.amax_group, -1);
}

Test(layer, cross_entropy_jit_moves_fewer_bytes_in_three_kernels)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	/* T = 4096 tokens over V = 51200 logits, B = 2. Megatron-Core's
	 * jit-fused loss: forward read (B + 8) = 10, written 12 bytes a
	 * logit in 3 kernels (unfused: 22 and 16); backward read 4, written
	 * B = 2 (unfused: 8 and 6), as the one-kernel fused loss. */
	double n = 4096.0 * 51200;

	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 2, 64, 1, 1, 1);
	f.fw.cross_entropy_jit = 1;
	layer_dims_from_job(&f.job, &d);
	layer_head_fwd(&d, &o);
	op = fixture_op(&o, "cross_entropy");
	fixture_assert_close(op->k.read_B, n * 10);
	fixture_assert_close(op->k.write_B, n * 12);
	fixture_assert_close(op->k.launches, 3);
	layer_head_bwd(&d, &o);
	op = fixture_op(&o, "cross_entropy_bwd");
	fixture_assert_close(op->k.read_B, n * 4);
	fixture_assert_close(op->k.write_B, n * 2);
	/* The one-kernel fused loss wins when both are set. */
	f.fw.fused_cross_entropy = 1;
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(d.jit_ce, 0);
	layer_head_fwd(&d, &o);
	fixture_assert_close(fixture_op(&o, "cross_entropy")->k.read_B, n * 2);
}

Test(layer, eager_norm_runs_the_fp32_op_chain)
{
	struct layer_dims d;
	struct layer_ops f, bw;
	const struct layer_op *op;
	double n = 4096.0 * 1024;	/* T h elements, tp 1 */

	/* torchtitan's eager RMSNorm (layer_ops.c lop_norm_bwd's account):
	 * forward 8 kernels reading 2 n B + 16 n = 20 n and writing 2 n B
	 * + 12 n = 16 n bytes (B = 2): 83886080 and 67108864 B for n =
	 * 4096 x 1024; backward 12 kernels, 5 n B + 32 n = 42 n and 3 n B +
	 * 20 n = 26 n: 176160768 and 109051904 B. Fused: 2 n each way. */
	gpt_dims(&d, 1, 0);
	d.eager_norm = 1;
	layer_fwd(&d, NULL, &f);
	op = fixture_op(&f, "norm1");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 20 * n);
	fixture_assert_close(op->k.write_B, 16 * n);
	cr_assert_eq(op->k.launches, 8);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	op = fixture_op(&bw, "norm1_bwd");
	cr_assert_not_null(op);
	fixture_assert_close(op->k.read_B, 42 * n);
	fixture_assert_close(op->k.write_B, 26 * n);
	cr_assert_eq(op->k.launches, 12);
	d.eager_norm = 0;
	layer_fwd(&d, NULL, &f);
	fixture_assert_close(fixture_op(&f, "norm1")->k.read_B, 2 * n);
}
