/*
 * test_gdn.c - Gated DeltaNet (linear attention) layers of the hybrid
 * Qwen models (src/models/gdn.c, infer_gdn.c, config/spec_model_gdn.c):
 * the chunk kernels' FLOPs forward and backward against the algorithm's
 * closed form, the recurrent state a sequence keeps, which layers are
 * linear, the Qwen3-Next preset's parameters against the published total,
 * and a Qwen3.5 config.json (text_config) loading.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "../config/config_testutil.h"
#include "config/config.h"
#include "fixture.h"
#include "models/footprint.h"
#include "models/layer.h"
#include "models/layer_impl.h"
#include "run/infer_run.h"

static void setup(void)
{
	fixture_cx_init(".");
}

TestSuite(gdn, .init = setup, .fini = fixture_fini);

/* The GPT fixture (h 1024, s 2048, b 1, tp 1: T = 2048 tokens) with
 * Gated DeltaNet layers of H_k 4 q/k heads and H_v 8 v heads of 128, a
 * conv of 4, every 4th layer full. */
static void gdn_fixture(struct fixture *f, struct layer_dims *d)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 1, 8, 1, 1, 1);
	f->model.linear_num_key_heads = 4;
	f->model.linear_num_value_heads = 8;
	f->model.linear_key_head_dim = 128;
	f->model.linear_value_head_dim = 128;
	f->model.linear_conv_kernel_dim = 4;
	f->model.full_attention_interval = 4;
	layer_dims_from_job(&f->job, d);
}

/* Model FLOPs of the chunk kernels (KERN_CHUNK kernels named gdn_*) of pass p. */
static double chunk_flops(const struct layer_ops *o, enum layer_pass p)
{
	double sum = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].kind == LOP_KERNEL && o->op[i].pass == p &&
		    o->op[i].k.kind == KERN_CHUNK &&
		    strncmp(o->op[i].name, "gdn_", 4) == 0)
			sum += layer_kern_model_flops(&o->op[i].k);
	return sum;
}

Test(gdn, chunk_kernel_flops_forward_and_backward)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 0, 1, 0, 0 };
	struct layer_ops fw, bw;
	const struct layer_op *in;
	/* C 64, d_k = d_v 128; G = b H_v s / C = 1 x 8 x 2048 / 64 = 256
	 * (chunk, head) pairs. Forward per pair, 2 m n k of each stage:
	 *   kkt    2 64 64 128               =  1,048,576
	 *   solve  C^3 / 3 = 64^3 / 3        =     87,381.33
	 *   w_u    2 64 (128 + 128) 64       =  2,097,152
	 *   h      2 64 128 (2 128)          =  4,194,304
	 *   o      2 64 128 (128 + 64 + 64)  =  4,194,304
	 * = 11,621,717.33 a pair (181,589.33 a token and head), x 256 =
	 * 2,975,159,637.33 FLOPs. */
	double fwd = 256 * (1048576 + 64.0 * 64 * 64 / 3 + 2097152 +
			    4194304 + 4194304);
	/* Backward per pair: w_u and h recomputed (2,097,152 + 4,194,304),
	 *   dv_local  2 64 64 (128 + 128)          =  2,097,152
	 *   dhu       2 64 128 (3 128)             =  6,291,456
	 *   dqkwg     2 64 128 (3 128 + 128 + 64)  =  9,437,184
	 *   wy_bwd    2 64 64 (4 128 + 2 128 + 128) = 7,340,032
	 * = 31,457,280 a pair, x 256 = 8,053,063,680 FLOPs. */
	double bwd = 256.0 * (2097152 + 4194304 + 2097152 + 6291456 +
			      9437184 + 7340032);

	gdn_fixture(&f, &d);
	layer_fwd(&d, &k, &fw);
	layer_bwd(&d, &k, LREC_NONE, &bw);
	fixture_assert_close(chunk_flops(&fw, PASS_FWD), fwd);
	fixture_assert_close(chunk_flops(&bw, PASS_BWD), bwd);
	/* in_proj: q k v z b a, 2 H_k d_k + 2 H_v d_v + 2 H_v = 1024 +
	 * 2048 + 16 = 3088 outputs from h 1024 over T 2048 tokens */
	in = fixture_op(&fw, "in_proj");
	cr_assert_not_null(in);
	fixture_assert_close(in->k.m, 2048);
	fixture_assert_close(in->k.n, 3088);
	fixture_assert_close(in->k.k, 1024);
	/* out_proj (layer.c's "proj") reads H_v d_v = 1024 */
	fixture_assert_close(fixture_op(&fw, "proj")->k.k, 1024);
	/* no softmax attention in a linear layer */
	cr_assert_null(fixture_op(&fw, "attn"));
	cr_assert_null(fixture_op(&bw, "attn_bwd"));
}

Test(gdn, layer_pattern_and_state_bytes)
{
	struct model_spec *m = arena_alloc(&A, sizeof(*m));
	int64_t i;

	cr_assert_eq(config_load(&CX, &model_schema, "qwen3-next-80b-a3b",
				 NULL, 0, m), 0, "%s", capture_text(&C));
	/* full_attention_interval 4: layers 3, 7, ..., 47 full */
	for (i = 0; i < 48; i++)
		cr_assert_eq(model_layer_linear(m, i), (i + 1) % 4 != 0,
			     "layer %lld", (long long)i);
	cr_assert_eq(model_full_attn_layers(m), 12);
	cr_assert_eq(m->attn_output_gate, 1);
	/* One sequence in one layer: the fp32 state H_v d_k d_v 4 =
	 * 32 128 128 4 = 2,097,152 B and the conv's last W - 1 = 3 inputs
	 * of 2 H_k d_k + H_v d_v = 4096 + 4096 = 8192 channels in bf16,
	 * 3 8192 2 = 49,152 B: 2,146,304 B (vLLM's
	 * gated_delta_net_state_shape, the same) */
	fixture_assert_close(model_gdn_state_B(m, 2), 2146304);
	/* KV a token: 12 full layers of 2 x 2 KV heads x 256 x 2 B */
	fixture_assert_close(model_kv_bytes_per_token(m, 2), 12.0 * 2048);
}

Test(gdn, qwen3_next_parameters_are_the_published_total)
{
	struct fixture f;
	struct model_spec *m = arena_alloc(&A, sizeof(*m));
	double total, active;

	cr_assert_eq(config_load(&CX, &model_schema, "qwen3-next-80b-a3b",
				 NULL, 0, m), 0, "%s", capture_text(&C));
	fixture_gpt(&f, 8, 1024, 16, 51200, 2048, 1, 8, 1, 1, 1);
	f.model = *m;
	total = footprint_model_params(&f.job);
	active = footprint_active_params(&f.job);
	/* Qwen3-Next-80B-A3B's safetensors, MTP left out: 79,674,391,296
	 * parameters; 3,874,929,408 a token (10 routed + the shared
	 * expert). By hand: 12 full layers of q 2048 x 8192 (the gate
	 * doubling 16 x 256), k and v 2 x 2048 x 512, o 4096 x 2048
	 * (27,262,976) and 36 Gated DeltaNet layers of in_proj 2048 x
	 * (4096 + 8192 + 64), conv 8192 x 4, dt_bias and A_log 32 each,
	 * norm 128, out_proj 4096 x 2048 (33,718,464); 48 MoE layers of
	 * router 2048 x 512, 512 experts of 3 x 2048 x 512 and the shared
	 * expert of 3 x 2048 x 512 (1,614,807,040), two norms each;
	 * embedding and head 2 x 151936 x 2048, the final norm. llmsim
	 * leaves out the q/k norms' 512 a full layer: within 1e-5. */
	cr_assert(fixture_near(total, 79674391296.0, 1e-5), "total %.0f",
		  total);
	cr_assert(fixture_near(active, 3874929408.0, 1e-3), "active %.0f",
		  active);
}

Test(gdn, qwen35_text_config_loads)
{
	struct model_spec *m = arena_alloc(&A, sizeof(*m));
	int64_t i;

	cr_assert_eq(config_load(&CX, &model_schema,
		"tests/data/workloads/models/hf-qwen3.5-moe/config.json", NULL,
		0, m), 0, "%s", capture_text(&C));
	cr_assert_eq(C.d.warnings, 0, "%s", capture_text(&C));
	cr_assert_str_eq(m->text_model_of, "qwen3_5_moe");
	cr_assert_eq(m->num_hidden_layers, 40);
	/* layer_types: 3 linear then 1 full, 10 times */
	for (i = 0; i < 40; i++)
		cr_assert_eq(model_layer_linear(m, i), i % 4 != 3,
			     "layer %lld", (long long)i);
	/* mtp_num_hidden_layers is num_nextn_predict_layers; no
	 * intermediate_size (every layer MoE) */
	cr_assert_eq(m->num_nextn_predict_layers, 1);
	cr_assert_eq(m->intermediate_size, 0);
	for (i = 0; i < 40; i++)
		cr_assert(model_layer_moe(m, i));
	cr_assert_eq(m->attn_output_gate, 1);
}

/* Decode of Qwen3-Next on 4 H100s (vLLM, bf16): the KV cache of the 12
 * full layers only, and each sequence's states in pages of the pool. */
Test(gdn, decode_kv_of_full_layers_and_state_pages)
{
	const char *sets[] = { "model=qwen3-next-80b-a3b", "phase=decode",
			       "parallelism.tp=4", "serving.dtype=bf16",
			       "serving.kv_dtype=bf16", "serving.batch=64",
			       "serving.context_len=8192" };
	struct arena a;
	struct job_spec *j;
	struct infer_result r;
	struct diag d;
	/* a token: 12 full layers x K and V x 1 KV head a GPU (2 over tp 4:
	 * replicated) x 256 x 2 B = 12,288 B */
	double tok = 12.0 * 2 * 256 * 2;
	/* a sequence's state in one linear layer on one GPU: H_v / t = 8
	 * heads of 128 x 128 fp32 = 524,288 B, and the conv's 3 inputs of
	 * (2 x 16 x 128 + 32 x 128) / 4 = 2048 channels in bf16 = 12,288 B:
	 * 536,576 B; 36 layers 19,316,736 B = 98.25 pages of 16 tokens x
	 * 12,288 B: 99 pages */
	double state = 36.0 * (8 * 128 * 128 * 4 + 3 * 2048 * 2);

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, "tests/data/serve/l70-h100-tp8.yaml", sets,
			     sizeof(sets) / sizeof(sets[0]));
	cr_assert_eq(infer_run(j, NULL, &r, &d), 0);
	fixture_assert_close(r.mem.kv_token_B, tok);
	fixture_assert_close(r.mem.state_pages, ceil(state / (16 * tok)));
	cr_assert_eq(r.mem.state_pages, 99);
	/* sequences of 8192 tokens: 512 KV pages and 99 state pages each */
	fixture_assert_close(r.mem.kv_sequences, floor(r.mem.kv_pages / 611));
	infer_result_release(&r);
	arena_release(&a);
}

/* Context parallelism (gdn.c cp_pre / cp_post, Megatron-LM@e8678351
 * tensor_a2a_cp2hp / hp2cp): the fixture at cp 2, load-balanced, holds
 * s / cp = 1024 tokens of each sequence. Its all-to-alls carry the local
 * tensors: q and k 1024 x 4 x 128 x 2 B = 1,048,576 B each, v and z 1024 x
 * 8 x 128 x 2 = 2,097,152, beta and alpha 1024 x 8 x 2 = 16,384, the
 * norm's output back 2,097,152; the chunk kernels run the whole 2048
 * tokens for 4 of the 8 heads: 128 pairs, half the FLOPs of cp 1
 * (2,975,159,637.33 / 2). */
Test(gdn, context_parallel_all_to_alls)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { .linear = 1 };
	struct layer_ops fw, bw;
	static const char *const names[7] = {
		"gdn_cp_q_a2a", "gdn_cp_k_a2a", "gdn_cp_v_a2a", "gdn_cp_z_a2a",
		"gdn_cp_beta_a2a", "gdn_cp_alpha_a2a", "gdn_cp_y_a2a",
	};
	static const double bytes[7] = {
		1048576, 1048576, 2097152, 2097152, 16384, 16384, 2097152,
	};
	int i;

	gdn_fixture(&f, &d);
	d.cpd.cp = 2;
	d.cpd.load_balance = 1;
	d.seq = 1024;
	layer_fwd(&d, &k, &fw);
	layer_bwd(&d, &k, LREC_NONE, &bw);
	for (i = 0; i < 7; i++) {
		const struct layer_op *op = fixture_op(&fw, names[i]);

		cr_assert_not_null(op, "%s", names[i]);
		cr_assert_eq(op->kind, LOP_COLL);
		cr_assert_eq(op->coll, COLL_ALLTOALL);
		cr_assert_eq(op->group, LG_CP);
		fixture_assert_close(op->coll_B, bytes[i]);
	}
	cr_assert_not_null(fixture_op(&fw, "gdn_cp_undo_lb"));
	cr_assert_not_null(fixture_op(&bw, "gdn_cp_dq_a2a"));
	cr_assert_not_null(fixture_op(&bw, "gdn_cp_dy_a2a"));
	fixture_assert_close(chunk_flops(&fw, PASS_FWD),
			     128 * (1048576 + 64.0 * 64 * 64 / 3 + 2097152 +
				    4194304 + 4194304));
	/* cp 1 has none of them */
	d.cpd.cp = 1;
	d.seq = 2048;
	layer_fwd(&d, &k, &fw);
	cr_assert_null(fixture_op(&fw, "gdn_cp_q_a2a"));
}

/*
 * DDP's hook adds of the mixer's small parameters (gdn_params), each
 * where its gradient is final: the gated norm's weight (d_v = 128) after
 * the norm's backward; dt_bias and A_log (H_v = 8 each) after the gate's
 * backward, their only use (g = -exp(A_log) softplus(a + dt_bias):
 * Megatron-LM gated_delta_net/gdn.py _compute_gates), before the
 * l2norm's and the conv's; the conv1d weight (c W, c = 2 H_k d_k + H_v
 * d_v = 1024 + 1024 = 2048, W 4: 8192) after the conv's backward. Each
 * reads 6 n B and writes 4 n B (bf16 gradient, fp32 main_grad).
 */
Test(gdn, small_parameters_are_added_by_the_ddp_hook)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_kind k = { 0, 0, 0, 1, 0, 0 };
	struct layer_ops o;
	int at, conv;

	gdn_fixture(&f, &d);
	layer_bwd(&d, &k, LREC_NONE, &o);
	cr_assert_eq(fixture_small_grad_adds(&o), 3);
	at = fixture_op_index(&o, "gdn_gated_norm_bwd");
	cr_assert(at >= 0);
	fixture_assert_grad_add(&o, at + 1, "norm_grad_add", 128);
	at = fixture_op_index(&o, "gdn_gates_bwd");
	cr_assert(at >= 0);
	fixture_assert_grad_add(&o, at + 1, "ssm_param_grad_add", 8);
	fixture_assert_grad_add(&o, at + 2, "ssm_param_grad_add", 8);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "ssm_param_grad_add"), 2);
	conv = fixture_op_index(&o, "gdn_conv1d_bwd");
	cr_assert_gt(conv, fixture_op_index(&o, "gdn_qk_l2norm_bwd"));
	cr_assert_gt(fixture_op_index(&o, "gdn_qk_l2norm_bwd"), at + 2);
	fixture_assert_grad_add(&o, conv + 1, "conv1d_grad_add", 8192);
	cr_assert_eq(fixture_op_count(&o, PASS_BWD, "conv1d_grad_add"), 1);

	/* no main_grad buffer (wgrad_autograd): no add of any kind */
	f.fw.wgrad_autograd = 1;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, &k, LREC_NONE, &o);
	cr_assert_eq(fixture_small_grad_adds(&o), 0);
	cr_assert_eq(fixture_op_count(&o, -1, "norm_grad_add"), 0);
}
