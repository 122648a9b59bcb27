/*
 * test_recompute.c - selective recomputation by module (Megatron-Core
 * recompute_modules): what each re-runs in the backward (its forward
 * FLOPs or bytes again) and what it drops of the layer's stored
 * activations (footprint.c), against derived numbers.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "fixture.h"
#include "models/footprint.h"
#include "models/layer.h"
#include "models/route.h"
#include "models/sched.h"

static void assert_close(double got, double want)
{
	cr_assert(fabs(got - want) <= 1e-9 * fabs(want), "got %.6g, want %.6g",
		  got, want);
}

/* The GPT fixture: h 1024, a 16, f 4096 (ungated), s 2048, b 2: T = 4096
 * tokens, tp 1, 16-bit (B = 2), flash attention, no rotary (learned
 * positions). */
static void gpt(struct fixture *f)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
}

/* Selective recomputation of the modules given (none: the default). */
static void modules(struct fixture *f, int64_t *v, size_t n)
{
	f->job.training.recompute = RECOMPUTE_SELECTIVE;
	f->job.training.recompute_modules.v = v;
	f->job.training.recompute_modules.n = n;
	f->job.training.recompute_modules.given = 1;
}

/* Bytes a recompute op named `name` reads and writes (summed). */
static double recompute_bytes(const struct layer_ops *o, const char *name)
{
	double b = 0;
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].pass == PASS_RECOMPUTE &&
		    strcmp(o->op[i].name, name) == 0)
			b += o->op[i].k.read_B + o->op[i].k.write_B;
	return b;
}

Test(recompute, default_selective_is_the_attention_core)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	int64_t core[] = { RCM_CORE_ATTN };
	double s = 2048, b = 2, h = 1024, sel, named;

	/* No modules named: the attention core, 2 b s^2 h (causal) =
	 * 2*2*2048^2*1024 = 1.718e10 FLOP again; naming core_attn is the
	 * same. */
	gpt(&f);
	f.job.training.recompute = RECOMPUTE_SELECTIVE;
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	sel = layer_ops_flops(&o, PASS_RECOMPUTE);
	assert_close(sel, 2 * b * s * s * h);
	modules(&f, core, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	named = layer_ops_flops(&o, PASS_RECOMPUTE);
	assert_close(named, sel);
}

Test(recompute, an_empty_list_recomputes_nothing)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;

	/* recompute_modules: [] (Megatron-Core: only None means
	 * ["core_attn"]): selective with nothing named re-runs nothing,
	 * 0 FLOP, and keeps what no recomputation keeps. */
	gpt(&f);
	modules(&f, NULL, 0);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	cr_assert_eq(layer_ops_flops(&o, PASS_RECOMPUTE), 0);
	assert_close(footprint_layer_act_B(&d, LREC_SELECTIVE),
		     footprint_layer_act_B(&d, LREC_NONE));
}

Test(recompute, dense_mlp_reruns_fc1_and_fc2_and_drops_their_inputs)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	int64_t mlp[] = { RCM_MLP };
	double T = 4096, h = 1024, fm = 4096, B = 2;

	/* mlp: fc1 and fc2 forward again, 2 T h f + 2 T f h = 4 * 4096 *
	 * 1024 * 4096 = 6.872e10 FLOP, and no attention core. */
	gpt(&f);
	modules(&f, mlp, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	assert_close(layer_ops_flops(&o, PASS_RECOMPUTE), 4 * T * h * fm);
	/* Stored: all but the MLP's fc1 input (T h B), fc1 output (T f B)
	 * and fc2 input (T f B): 4096 * (1024 + 2 * 4096) * 2 =
	 * 75497472 B less than without recomputation (the flash core's
	 * log-sum-exp stays). */
	assert_close(footprint_layer_act_B(&d, LREC_NONE) -
		     footprint_layer_act_B(&d, LREC_SELECTIVE),
		     T * (h + 2 * fm) * B);
}

Test(recompute, mla_up_projections_rerun_and_q_k_v_dropped)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	int64_t up[] = { RCM_MLA_UP_PROJ };
	double T = 4096, a = 16, rq = 256, rkv = 128, dn = 64, dr = 32,
	       dv = 64, B = 2;

	/* MLA with q_lora 256, kv_lora 128, nope 64, rope 32, v 64. */
	gpt(&f);
	f.model.q_lora_rank = 256;
	f.model.kv_lora_rank = 128;
	f.model.qk_nope_head_dim = 64;
	f.model.qk_rope_head_dim = 32;
	f.model.v_head_dim = 64;
	modules(&f, up, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	/* q_up 2 T r_q a (d_n + d_r) + kv_up 2 T r_kv a (d_n + d_v)
	 * = 2*4096*256*16*96 + 2*4096*128*16*128 = 5.369e9 FLOP. */
	assert_close(layer_ops_flops(&o, PASS_RECOMPUTE),
		     2 * T * rq * a * (dn + dr) + 2 * T * rkv * a * (dn + dv));
	/* Q, K (d_n + d_r per head each) and V (d_v) no longer kept:
	 * 4096 * 16 * (2 * 96 + 64) * 2 = 33554432 B. */
	assert_close(footprint_layer_act_B(&d, LREC_NONE) -
		     footprint_layer_act_B(&d, LREC_SELECTIVE),
		     T * a * (2 * (dn + dr) + dv) * B);
}

/* The fixture with every layer MoE: 8 experts of width 512, top-2,
 * shared experts of width 1024, ep 1 (R = T k = 8192 rows). */
static void moe(struct fixture *f, struct arena *a, struct layer_dims *d,
		int64_t *v, size_t n)
{
	struct route_result r;
	struct diag dg;

	fixture_moe(f, 8, 2, 512, 1);
	f->model.shared_expert_intermediate_size = 1024;
	modules(f, v, n);
	diag_init(&dg, stderr);
	layer_dims_from_job(&f->job, d);
	cr_assert_eq(route_plan(&f->job, d, a, &r, &dg), 0);
}

Test(recompute, moe_act_reruns_the_activation_and_drops_fc2_input)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct layer_ops o;
	struct layer_kind kind = { .moe = 1 };
	int64_t act[] = { RCM_MOE_ACT };
	double R = 8192, fe = 512, B = 2;

	arena_init(&a);
	moe(&f, &a, &d, act, 1);
	layer_bwd(&d, &kind, LREC_SELECTIVE, &o);
	/* The activation again: read R f B, write R f B (ungated), no
	 * GEMM: 8192 * 512 * 2 * 2 = 16777216 B, 0 FLOP. */
	assert_close(recompute_bytes(&o, "expert_act"), 2 * R * fe * B);
	cr_assert_eq(layer_ops_flops(&o, PASS_RECOMPUTE), 0);
	/* fc2's input no longer kept: R f B = 8388608 B. */
	assert_close(footprint_kind_act_B(&d, &kind, LREC_NONE) -
		     footprint_kind_act_B(&d, &kind, LREC_SELECTIVE),
		     R * fe * B);
	arena_release(&a);
}

Test(recompute, shared_experts_and_whole_moe)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct layer_ops o;
	struct layer_kind kind = { .moe = 1 };
	int64_t sh[] = { RCM_SHARED_EXPERTS }, all[] = { RCM_MOE };
	double T = 4096, h = 1024, fs = 1024, E = 8, k = 2, fe = 512, B = 2;
	double R = T * k;

	arena_init(&a);
	moe(&f, &a, &d, sh, 1);
	layer_bwd(&d, &kind, LREC_SELECTIVE, &o);
	/* shared_experts: their fc1 and fc2 again, 4 T h f_s =
	 * 4*4096*1024*1024 = 1.718e10 FLOP; dropped their fc1 input,
	 * output and fc2 input, T (h + 2 f_s) B = 25165824 B. */
	assert_close(layer_ops_flops(&o, PASS_RECOMPUTE), 4 * T * h * fs);
	assert_close(footprint_kind_act_B(&d, &kind, LREC_NONE) -
		     footprint_kind_act_B(&d, &kind, LREC_SELECTIVE),
		     T * (h + 2 * fs) * B);
	arena_release(&a);

	arena_init(&a);
	moe(&f, &a, &d, all, 1);
	layer_bwd(&d, &kind, LREC_SELECTIVE, &o);
	/* moe: the whole MoE MLP forward again: router 2 T h E, experts
	 * 4 T k h f_e, shared experts 4 T h f_s = 6.711e7 + 1.718e10 +
	 * 1.718e10 FLOP. */
	assert_close(layer_ops_flops(&o, PASS_RECOMPUTE),
		     2 * T * h * E + 4 * T * k * h * fe + 4 * T * h * fs);
	/* Dropped of the MoE MLP's (footprint.c): the routing (T E 5 B),
	 * the experts' rows R (h + f_e + f_e + h) B and the shared
	 * experts' T (h + 2 f_s) B, less the checkpoint's input (the
	 * norm's output), T h B: 163840 + 50331648 + 25165824 - 8388608 =
	 * 67272704 B. */
	assert_close(footprint_kind_act_B(&d, &kind, LREC_NONE) -
		     footprint_kind_act_B(&d, &kind, LREC_SELECTIVE),
		     T * E * 5 + R * (2 * h + 2 * fe) * B +
		     T * (h + 2 * fs) * B - T * h * B);
	arena_release(&a);
}

/* A pp 1 rank's activations less its layers' stored ones (one
 * microbatch in flight under 1F1B at pp 1), the embedding's and the
 * head's: the one-layer transient of the backward. */
static double rank_transient(struct fixture *f, const struct layer_dims *d,
			     const struct layer_kind *k)
{
	struct sched_live live;
	int64_t split[1] = { f->model.num_hidden_layers };
	double act;

	cr_assert_eq(sched_live_init(&live, f->job.parallelism.schedule, 1, 1,
				     job_microbatches(&f->job), 0, 0), 0);
	act = footprint_rank_act_B(&f->job, d, split, 0, &live);
	sched_live_release(&live);
	return act - (double)split[0] * footprint_kind_act_B(d, k,
							     LREC_SELECTIVE) -
	       footprint_embed_act_B(d) - footprint_head_act_B(d);
}

Test(recompute, transient_is_the_largest_layer_the_rank_holds)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct layer_kind kind = { .moe = 1 };
	int64_t mlp[] = { RCM_MLP }, mlp_act[] = { RCM_MLP, RCM_MOE_ACT };
	double R = 8192, fe = 512, B = 2;

	/* Every layer MoE, recompute_modules [mlp]: mlp remakes the dense
	 * MLP only, which no layer has, so nothing is remade in the
	 * backward: 0 B (not the dense MLP's T (h + 2 f) B = 4096 * (1024
	 * + 2 * 4096) * 2 = 75497472 B). */
	arena_init(&a);
	moe(&f, &a, &d, mlp, 1);
	assert_close(rank_transient(&f, &d, &kind) + 1, 1);
	arena_release(&a);
	/* [mlp, moe_act]: the experts' activation output, R f_e B = 8192 *
	 * 512 * 2 = 8388608 B, the largest a real layer remakes. */
	arena_init(&a);
	moe(&f, &a, &d, mlp_act, 2);
	assert_close(rank_transient(&f, &d, &kind), R * fe * B);
	arena_release(&a);
}

/* The op named `name` of pass `pass` in o (the test fails without it). */
static const struct layer_op *find_op(const struct layer_ops *o,
				      enum layer_pass pass, const char *name)
{
	int i;

	for (i = 0; i < o->n; i++)
		if (o->op[i].pass == pass && strcmp(o->op[i].name, name) == 0)
			return &o->op[i];
	cr_assert_fail("no op %s", name);
	return NULL;
}

Test(recompute, moe_act_backward_cast_is_a_current_scaling_cast)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct layer_ops fw, bw;
	struct layer_kind kind = { .moe = 1 };
	int64_t act[] = { RCM_MOE_ACT };
	struct route_result r;
	struct diag dg;
	const struct layer_op *c;
	double R = 8192, fe = 512, B = 2, L = 1;

	arena_init(&a);
	moe(&f, &a, &d, act, 1);
	f.job.training.dtype = DTYPE_FP8;
	f.job.training.fp8_scaling = FP8_CURRENT;
	f.fw.elementwise.per_expert_quantize = 0;	/* one cast, all rows */
	diag_init(&dg, stderr);
	layer_dims_from_job(&f.job, &d);
	cr_assert_eq(route_plan(&f.job, &d, &a, &r, &dg), 0);
	layer_fwd(&d, &kind, &fw);
	layer_bwd(&d, &kind, LREC_SELECTIVE, &bw);
	/* fp8 current scaling over fc2's input, R f_e = 8192 * 512
	 * elements: the amax pass and the cast each read it, 2 R f_e B =
	 * 16777216 B, in 4 kernels (amax zeroed, amax, scale, cast), as the
	 * forward's expert_fc2_cast; the backward writes the column-wise copy only,
	 * R f_e L = 4194304 B. */
	c = find_op(&bw, PASS_BWD, "expert_fc2_input_cast");
	assert_close(c->k.read_B, 2 * R * fe * B);
	assert_close(c->k.launches, 4);
	assert_close(c->k.write_B, R * fe * L);
	assert_close(find_op(&fw, PASS_FWD, "expert_fc2_cast")->k.launches,
		     c->k.launches);
	arena_release(&a);
}

Test(recompute, mla_concat_copies_q_and_k)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	const struct layer_op *op;
	double T = 4096, a = 16, dn = 64, dr = 32, dv = 64, B = 2;
	double nq = T * a * (dn + dr), nkv = T * a * (dn + dv);
	int i;

	/* MLA (q_lora 256, kv_lora 128, nope 64, rope 32, v 64) assembled by
	 * torch.cat (AutoModel): forward read n_q + T a d_n + T d_r, write
	 * 2 n_q with n_q = 4096 x 16 x 96 = 6291456 elements: read
	 * (6291456 + 4194304 + 131072) x 2 = 21233664 B, write 25165824 B */
	gpt(&f);
	f.model.q_lora_rank = 256;
	f.model.kv_lora_rank = 128;
	f.model.qk_nope_head_dim = 64;
	f.model.qk_rope_head_dim = 32;
	f.model.v_head_dim = 64;
	f.fw.elementwise.mla_concat = 1;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	for (op = NULL, i = 0; i < o.n; i++)
		if (strcmp(o.op[i].name, "mla_concat") == 0)
			op = &o.op[i];
	cr_assert_not_null(op);
	assert_close(op->k.read_B, 21233664);
	assert_close(op->k.write_B, 2 * nq * B);
	/* backward: the splits' cats (n_q, n_kv = 4096 x 16 x 128) and the
	 * expand's sum: read (n_q + n_kv + T a d_r) B = (6291456 + 8388608 +
	 * 2097152) x 2 = 33554432 B, write
	 * (n_q + n_kv + T d_r) B = 29622272 B */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	for (op = NULL, i = 0; i < o.n; i++)
		if (strcmp(o.op[i].name, "mla_concat_bwd") == 0)
			op = &o.op[i];
	cr_assert_not_null(op);
	assert_close(op->k.read_B, (nq + nkv + T * a * dr) * B);
	assert_close(op->k.read_B, 33554432);
	assert_close(op->k.write_B, 29622272);
	/* off (the default): none */
	f.fw.elementwise.mla_concat = 0;
	layer_dims_from_job(&f.job, &d);
	layer_fwd(&d, NULL, &o);
	for (i = 0; i < o.n; i++)
		cr_assert_str_neq(o.op[i].name, "mla_concat");
}

Test(recompute, torchtitan_ops_rerun_every_second_mm_and_no_core)
{
	struct fixture f;
	struct layer_dims d;
	struct layer_ops o;
	int64_t ops[] = { RCM_OPS };
	double T = 4096, h = 1024, fm = 4096, B = 2;

	/* torchtitan's op-level policy saves every mm's output but every
	 * second one's: of the fixture's mms wq wk wv | wo | fc1 | fc2
	 * (ungated) it re-runs wk (2 T h h), wo (2 T h h) and fc2 (2 T f h):
	 * 2 * 4096 * 1024 * (1024 + 1024 + 4096) = 5.154e10 FLOP; the
	 * attention core is saved, so nothing else is model FLOPs. */
	gpt(&f);
	modules(&f, ops, 1);
	layer_dims_from_job(&f.job, &d);
	layer_bwd(&d, NULL, LREC_SELECTIVE, &o);
	assert_close(fixture_gemm_flops(&o, PASS_RECOMPUTE), 2 * T * h * (h + h + fm));
	assert_close(layer_ops_flops(&o, PASS_RECOMPUTE),
		     2 * T * h * (h + h + fm));
	/* Stored: the block's input (T h B), the saved mms' outputs wq
	 * (T h B), wv (T h B) and fc1 (T f B), and the core's own. Without
	 * recomputation footprint.c's attn_stored_B + mlp_stored_B keep
	 * (MHA: q = kv = h, all 16-bit) the norm input, QKV input, Q and K
	 * (2), V and proj input, 6 T h B, and the MLP's norm input, fc1
	 * input (2 T h B), fc1 output and fc2 input (2 T f B): 8 T h B +
	 * 2 T f B. The policy drops 5 T h B + T f B = 4096 * (5 * 1024 +
	 * 4096) * 2 = 75497472 B. */
	assert_close(footprint_layer_act_B(&d, LREC_NONE) -
		     footprint_layer_act_B(&d, LREC_SELECTIVE),
		     T * (5 * h + fm) * B);
}
