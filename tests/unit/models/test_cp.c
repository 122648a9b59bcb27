/*
 * test_cp.c - context parallelism against derived numbers: the ring's
 * attention steps and K/V transfers, the transfers hidden behind
 * attention, and one simulated GPU a group against every GPU simulated
 * and the estimate against the built program for each way of passing
 * K/V (moved from test_moe.c).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/layer.h"
#include "models/route.h"

/* A step through the builder and executor (alpha-beta comm, alpha 5 us). */
static double step_full(struct fixture *f, int full, double beta_Bps,
			double *exposed)
{
	return mockcomm_train_step(&f->job, full, 5e-6, beta_Bps, exposed);
}

Test(cp, ring_splits_the_work_into_cp_steps)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d1, d4;
	struct route_result r;
	struct layer_ops o1, o4;
	int i, attn = 0, xfer = 0;
	double kv = 0;

	/* cp 4, p2p ring with load balancing: each GPU holds 2048 / 4 = 512
	 * tokens of each sequence; the forward runs 4 attention steps and 3
	 * K/V transfers of b s kv_width 2 B = 2 x 512 x 2048 x 2 = 4.19 MB;
	 * every GEMM and the attention core do a quarter of cp 1's work */
	arena_init(&a);
	fixture_moe(&f, 8, 2, 512, 1);
	f.model.n_routed_experts = 0;
	fixture_dims(&f, &a, &d1, &r);
	f.job.parallelism.cp = 4;
	f.job.parallelism.dp = 2;
	f.job.parallelism.cp_comm_type = CP_P2P;
	f.job.parallelism.cp_load_balance = 1;
	fixture_dims(&f, &a, &d4, &r);
	cr_assert(fixture_near(d4.seq, 512, 1e-12));
	layer_fwd(&d1, NULL, &o1);
	layer_fwd(&d4, NULL, &o4);
	for (i = 0; i < o4.n; i++) {
		if (o4.op[i].kind == LOP_KERNEL && o4.op[i].k.kind == KERN_ATTN_FWD)
			attn++;
		if (o4.op[i].kind == LOP_COLL && o4.op[i].p2p_next) {
			xfer++;
			kv = o4.op[i].coll_B;
		}
	}
	cr_assert_eq(attn, 4);
	cr_assert_eq(xfer, 3);
	cr_assert(fixture_near(kv, 2 * 512 * 2048 * 2.0, 1e-12), "K/V %.6g B", kv);
	cr_assert(fixture_near(layer_ops_flops(&o4, PASS_FWD),
		       layer_ops_flops(&o1, PASS_FWD) / 4, 1e-9));
	arena_release(&a);
}

Test(cp, ring_transfers_hide_behind_attention)
{
	struct fixture f;
	double tf, ts, ef, es;

	/* cp 2 at 8K tokens: a ring step's K/V (b s kv 2 B = 4096 x 2048 x 2
	 * = 16.8 MB) moves while the step before it computes (about 0.6 ms
	 * of causal attention per step here). At 1 TB/s it takes 17 us and
	 * hides (what stays exposed is the step's gradient reduction); at
	 * 1 GB/s it takes 17 ms and the steps wait for it. */
	fixture_gpt(&f, 4, 1024, 16, 128, 8192, 1, 8, 1, 1, 1);
	f.job.parallelism.cp = 2;
	f.job.parallelism.dp = 4;
	f.job.parallelism.cp_comm_type = CP_P2P;
	f.job.parallelism.cp_load_balance = 1;
	tf = step_full(&f, 0, 1e12, &ef);
	ts = step_full(&f, 0, 1e9, &es);
	cr_assert_lt(ef, 0.05 * tf, "fast: %.6g s exposed of %.6g", ef, tf);
	cr_assert_gt(es, 0.3 * ts, "slow: %.6g s exposed of %.6g", es, ts);
}

/* Step time, exposed communication and every part of the breakdown the
 * same whether one GPU stands for its stage or every GPU is simulated. */
static void assert_same_step(struct fixture *f, const char *what)
{
	double ts, tf, es, ef;

	ts = step_full(f, 0, 100e9, &es);
	tf = step_full(f, 1, 100e9, &ef);
	cr_assert_eq(ts, tf, "%s: symmetric %.9g s, full %.9g s", what, ts, tf);
	cr_assert_eq(es, ef, "%s: exposed %.9g s, full %.9g s", what, es, ef);
}

/* Every way of passing K/V, and its name. */
static const int cp_types[] = { CP_P2P, CP_ALLGATHER, CP_A2A, CP_A2A_P2P };
static const char *const cp_names[] = { "p2p", "allgather", "a2a",
					"a2a+p2p" };

/* cp 4, dp 2 on 8 GPUs (the GPT fixture at 8K tokens) passing K/V the
 * way type says, in 2-GPU all-to-all groups where it has them. */
static void cp4_job(struct fixture *f, int type)
{
	fixture_gpt(f, 4, 1024, 16, 128, 8192, 1, 8, 1, 1, 1);
	f->job.parallelism.cp = 4;
	f->job.parallelism.dp = 2;
	f->job.parallelism.cp_comm_type = type;
	f->job.parallelism.cp_a2a = 2;
}

Test(cp, symmetric_equals_full)
{
	struct fixture f;
	int i;

	/* cp 4, dp 2 on 8 GPUs: every way of passing K/V */
	for (i = 0; i < 4; i++) {
		cp4_job(&f, cp_types[i]);
		f.job.parallelism.cp_load_balance = 1;
		assert_same_step(&f, cp_names[i]);
	}
}

/* train_estimate against the built program (tasks, collective calls,
 * ranks), one simulated GPU a group and every GPU simulated: context
 * parallelism, every way (moved from moe/estimate_counts_the_built_program). */
Test(cp, estimate_counts_the_built_program)
{
	struct fixture f;
	int i;

	for (i = 0; i < 4; i++) {
		cp4_job(&f, cp_types[i]);
		fixture_assert_estimate(&f.job, 0, cp_names[i]);
		fixture_assert_estimate(&f.job, 1, cp_names[i]);
	}
}

/* PyTorch's context_parallel (framework cp_torch_sdpa) on the GPT
 * fixture at 2048 tokens, cp 2 (1024 a GPU), b 2, MHA h 1024: K and V
 * as SDPA gets them, kv = b s 2h = 2 x 1024 x 2048 = 4194304 elements,
 * O = b s h = 2097152 output elements. */
static void torch_cp2(struct fixture *f, int type)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 16, 1, 1, 1);
	f->job.parallelism.cp = 2;
	f->job.parallelism.dp = 4;
	f->job.parallelism.cp_comm_type = type;
	f->job.parallelism.cp_load_balance = 1;
	f->fw.cp_torch_sdpa = 1;
}

static const struct layer_op *op_named(const struct layer_ops *o,
				       const char *name)
{
	int i = fixture_op_index(o, name);

	cr_assert_geq(i, 0, "no op %s", name);
	return &o->op[i];
}

Test(cp, torch_context_parallel_merges_in_fp32)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops o;
	const struct layer_op *op;
	double kv = 2 * 1024 * 2048.0, O = 2 * 1024 * 1024.0;
	int i, attn = 0;

	/* Forward: one torch.cat of K and V (cp - 1 = 1 of them, read and
	 * write kv 2 B = 8388608 B), their all-gather (cp kv 2 B =
	 * 16777216 B), 2 SDPA calls, one fp32 merge after the second
	 * (reads 0.75 (O 2 + 20 O) + 2 O = 18.5 O = 38797312 B, writes
	 * 0.75 16 O + 2 O = 14 O = 29360128 B) and the cast of the fp32
	 * output back (reads 4 O = 8388608, writes 2 O = 4194304 B). */
	arena_init(&a);
	torch_cp2(&f, CP_ALLGATHER);
	fixture_dims(&f, &a, &d, &r);
	layer_fwd(&d, NULL, &o);
	for (i = 0; i < o.n; i++)
		if (o.op[i].kind == LOP_KERNEL &&
		    o.op[i].k.kind == KERN_ATTN_FWD)
			attn++;
	cr_assert_eq(attn, 2);
	op = op_named(&o, "cp_kv_cat");
	fixture_assert_close(op->k.read_B, kv * 2);
	fixture_assert_close(op_named(&o, "cp_kv_allgather")->coll_B,
			     2 * kv * 2);
	op = op_named(&o, "cp_sdpa_merge");
	fixture_assert_close(op->k.read_B, 18.5 * O);
	fixture_assert_close(op->k.write_B, 14 * O);
	op = op_named(&o, "cp_out_cast");
	fixture_assert_close(op->k.read_B, 4 * O);
	fixture_assert_close(op->k.write_B, 2 * O);
	/* Backward: dK/dV passed on in fp32 each step, 4 kv = 16777216 B */
	layer_bwd(&d, NULL, LREC_NONE, &o);
	fixture_assert_close(op_named(&o, "cp_dkv_sendrecv")->coll_B, 4 * kv);
	arena_release(&a);
}

/* The all_gather rotater's gather is asynchronous (torch
 * _AllGatherRotater: issued before step 0, waited at step 1's
 * next_buffer): step 0's SDPA, on the local block, does not wait for it;
 * step 1's does. Forward and backward alike. */
static void assert_gather_beside_step0(const struct layer_ops *o, int kind)
{
	int g = fixture_op_index(o, "cp_kv_allgather"), i, n = 0;

	cr_assert_geq(g, 0);
	for (i = 0; i < o->n; i++) {
		const struct layer_op *op = &o->op[i];

		if (op->kind != LOP_KERNEL || (int)op->k.kind != kind)
			continue;
		if (n == 0)
			cr_assert(op->dep[0] != g && op->dep[1] != g,
				  "step 0 waits for the gather");
		else
			cr_assert(op->dep[0] == g || op->dep[1] == g,
				  "step 1 does not wait for the gather");
		n++;
	}
	cr_assert_eq(n, 2);
}

Test(cp, torch_allgather_overlaps_the_first_step)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops o;

	arena_init(&a);
	torch_cp2(&f, CP_ALLGATHER);
	fixture_dims(&f, &a, &d, &r);
	layer_fwd(&d, NULL, &o);
	assert_gather_beside_step0(&o, KERN_ATTN_FWD);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	assert_gather_beside_step0(&o, KERN_ATTN_BWD);
	arena_release(&a);
}

/* One simulated GPU a group against every GPU simulated, and the
 * estimate against the built program, for both rotations. */
Test(cp, torch_context_parallel_symmetric_and_estimated)
{
	struct fixture f;

	torch_cp2(&f, CP_ALLGATHER);
	assert_same_step(&f, "torch allgather");
	fixture_assert_estimate(&f.job, 0, "torch allgather");
	fixture_assert_estimate(&f.job, 1, "torch allgather");
	torch_cp2(&f, CP_P2P);
	assert_same_step(&f, "torch p2p");
	fixture_assert_estimate(&f.job, 0, "torch p2p");
	fixture_assert_estimate(&f.job, 1, "torch p2p");
}

/* Compiled (framework cp_torch_compiled) on torch_cp2's job: the
 * collectives hold the compute stream (a functional collective's wait
 * follows it at once under tracing, and inductor does not move it by
 * default), the merge and the gradient sums are fused kernels. Q = O =
 * 2097152, kv = 4194304 elements, A = 2 B.
 * Forward (cp 2: one merge, the last): reads 0.75 (4 + 2) O + O = 5.5 O
 * = 11534336 B (the running fp32 output and the step's on 0.75 O, and
 * the half that the partial steps copy), writes the output once in its
 * own dtype, 2 O = 4194304 B (the cast fused: no cp_out_cast).
 * Backward: no zero fill; step 0's sum reads the bf16 gradients only,
 * 2 (Q + kv) = 12582912 B, step 1's reads (4 + 0.75 x 2)(Q + kv) = 5.5
 * x 6291456 = 34603008 B, each writes 4 (Q + kv) = 25165824 B into the
 * buffer sent on (no cp_dkv_cat). */
static int op_count(const struct layer_ops *o, const char *name)
{
	int i, n = 0;

	for (i = 0; i < o->n; i++)
		if (strcmp(o->op[i].name, name) == 0)
			n++;
	return n;
}

/* The SDPA kernels of kind in o: the collective index each waits for,
 * at most 4 steps. */
static int sdpa_waits(const struct layer_ops *o, int kind, int *wait)
{
	int i, n = 0;

	for (i = 0; i < o->n && n < 4; i++)
		if (o->op[i].kind == LOP_KERNEL && (int)o->op[i].k.kind == kind)
			wait[n++] = o->op[i].dep[1];
	return n;
}

Test(cp, torch_compiled_waits_and_fuses)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops o;
	double O = 2 * 1024 * 1024.0, QKV = O + 2 * 1024 * 2048.0;
	int i, n = 0, w[4];

	arena_init(&a);
	torch_cp2(&f, CP_ALLGATHER);
	fixture_dims(&f, &a, &d, &r);
	layer_fwd(&d, NULL, &o);
	cr_assert_eq(op_count(&o, "cp_out_cast"), 1);
	f.fw.cp_torch_compiled = 1;
	fixture_dims(&f, &a, &d, &r);
	layer_fwd(&d, NULL, &o);
	/* step 0's SDPA waits for the gather (eager: beside it, as
	 * torch_allgather_overlaps_the_first_step checks) */
	cr_assert_eq(sdpa_waits(&o, KERN_ATTN_FWD, w), 2);
	cr_assert_eq(w[0], fixture_op_index(&o, "cp_kv_allgather"));
	cr_assert_eq(op_count(&o, "cp_out_cast"), 0);
	fixture_assert_close(op_named(&o, "cp_sdpa_merge")->k.read_B, 5.5 * O);
	fixture_assert_close(op_named(&o, "cp_sdpa_merge")->k.write_B, 2 * O);
	layer_bwd(&d, NULL, LREC_NONE, &o);
	/* step 0 waits for the gather, step 1 for step 0's dK/dV permute */
	cr_assert_eq(sdpa_waits(&o, KERN_ATTN_BWD, w), 2);
	cr_assert_eq(w[0], fixture_op_index(&o, "cp_kv_allgather"));
	cr_assert_eq(w[1], fixture_op_index(&o, "cp_dkv_sendrecv"));
	cr_assert_eq(op_count(&o, "cp_grad_zero"), 0);
	cr_assert_eq(op_count(&o, "cp_dkv_cat"), 0);
	for (i = 0; i < o.n; i++) {
		if (strcmp(o.op[i].name, "cp_grad_accum") != 0)
			continue;
		fixture_assert_close(o.op[i].k.read_B,
				     (n == 0 ? 2 : 5.5) * QKV);
		fixture_assert_close(o.op[i].k.write_B, 4 * QKV);
		n++;
	}
	cr_assert_eq(n, 2);
	arena_release(&a);
}

/* Compiled, the all_gather rotater's later K/V cats are dead: at cp 4
 * (cp4_job: b 1, s 2048 a GPU, MHA h 1024, kv = b s 2h = 4194304
 * elements, 2 B) one cat of 8388608 B where eager runs cp - 1 = 3
 * (25165824 B); p2p passes every cat on, 3 either way. */
Test(cp, torch_compiled_allgather_cats_once)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops o;
	double kv_B = 2048 * 2048.0 * 2;
	int type, cc;

	arena_init(&a);
	for (type = 0; type < 2; type++)
		for (cc = 0; cc < 2; cc++) {
			int ag = type == 0;
			double n = ag && cc ? 1 : 3;

			cp4_job(&f, ag ? CP_ALLGATHER : CP_P2P);
			f.fw.cp_torch_sdpa = 1;
			f.fw.cp_torch_compiled = cc;
			fixture_dims(&f, &a, &d, &r);
			layer_fwd(&d, NULL, &o);
			fixture_assert_close(op_named(&o, "cp_kv_cat")->k.read_B,
					     n * kv_B);
			cr_assert_eq(op_named(&o, "cp_kv_cat")->k.launches,
				     (int)n);
		}
	arena_release(&a);
}

/* Compiled, the ring's collectives no longer hide behind the attention
 * steps: the step's exposed communication grows (eager hides the K/V
 * gather behind step 0 and each dK/dV permute behind the next step; on
 * this fixture the fused merges save more compute than the exposure
 * adds, so the step itself is not compared), and one simulated GPU a
 * group still equals every GPU simulated, the estimate the built
 * program. */
Test(cp, torch_compiled_exposes_the_ring)
{
	static const int types[] = { CP_ALLGATHER, CP_P2P };
	struct fixture f;
	double te, tc, ee, ec;
	int k;

	for (k = 0; k < 2; k++) {
		torch_cp2(&f, types[k]);
		te = step_full(&f, 0, 100e9, &ee);
		f.fw.cp_torch_compiled = 1;
		tc = step_full(&f, 0, 100e9, &ec);
		cr_assert_gt(ec, ee, "%d exposed: compiled %.9g s (step %.9g), "
			     "eager %.9g s (step %.9g)", k, ec, tc, ee, te);
		assert_same_step(&f, "torch compiled");
		fixture_assert_estimate(&f.job, 0, "torch compiled");
		fixture_assert_estimate(&f.job, 1, "torch compiled");
	}
}

/* Compiled p2p (cp 2): the pass of step 1's block is issued before step
 * 0 and waited at once, so step 0's SDPA waits for it (eager: step 0
 * runs on the local block, step 1 waits). */
Test(cp, torch_compiled_p2p_waits_before_step0)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops o;
	int w[4], cc;

	arena_init(&a);
	for (cc = 0; cc < 2; cc++) {
		torch_cp2(&f, CP_P2P);
		f.fw.cp_torch_compiled = cc;
		fixture_dims(&f, &a, &d, &r);
		layer_fwd(&d, NULL, &o);
		cr_assert_eq(sdpa_waits(&o, KERN_ATTN_FWD, w), 2);
		cr_assert_eq(w[cc ? 0 : 1],
			     fixture_op_index(&o, "cp_kv_sendrecv"));
		if (!cc)
			cr_assert_neq(w[0],
				      fixture_op_index(&o, "cp_kv_sendrecv"));
	}
	arena_release(&a);
}

/* Transformer Engine's p2p bookkeeping (attn_cp.c) on the cp 4 ring of
 * ring_splits_the_work_into_cp_steps: b 2, s 512 a GPU, 16 heads of 64,
 * bf16. kv = b s 2 h 2 B = 4194304 B; the output O_B = b s h 2 B =
 * 2097152 B, its log-sum-exp lse_B = b s 16 x 4 B = 65536 B; dQ the
 * same 2097152 B as O. */
Test(cp, ring_charges_te_copies_and_corrections)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops fw, bw;
	const struct layer_op *op;
	double kv = 4194304, O = 2097152, lse = 65536;
	double want[4] = { kv, 2 * kv, 2 * kv, kv };
	int i, x = 0, dq = 0;

	arena_init(&a);
	fixture_moe(&f, 8, 2, 512, 1);
	f.model.n_routed_experts = 0;
	f.job.parallelism.cp = 4;
	f.job.parallelism.dp = 2;
	f.job.parallelism.cp_comm_type = CP_P2P;
	f.job.parallelism.cp_load_balance = 1;
	fixture_dims(&f, &a, &d, &r);
	layer_fwd(&d, NULL, &fw);
	layer_bwd(&d, NULL, LREC_NONE, &bw);
	/* forward: the K/V torch.cat (read and write kv) before the first
	 * send; after the 4 steps one init + 3 corrections and the last lse
	 * merge, 5 kernels reading O + 3 x 2 O + (2 x 4 + 2) lse = 7 O +
	 * 10 lse = 15335424 B, writing 4 O + lse = 8454144 B */
	op = op_named(&fw, "cp_kv_cat");
	fixture_assert_close(op->k.read_B, kv);
	fixture_assert_close(op->k.write_B, kv);
	cr_assert_lt(fixture_op_index(&fw, "cp_kv_cat"),
		     fixture_op_index(&fw, "cp_kv_sendrecv"));
	op = op_named(&fw, "cp_out_correct");
	fixture_assert_close(op->k.read_B, 7 * O + 10 * lse);
	fixture_assert_close(op->k.write_B, 4 * O + lse);
	cr_assert_eq(op->k.launches, 5);
	/* backward: the K/V copy into the send buffer, transfers of K/V
	 * alone, K/V + dK/dV twice, dK/dV alone; dQ copied once (read and
	 * write O) and added three times (read 2 O, write O) */
	op = op_named(&bw, "cp_kv_copy");
	fixture_assert_close(op->k.read_B, kv);
	for (i = 0; i < bw.n; i++) {
		op = &bw.op[i];
		if (op->kind == LOP_COLL && op->p2p_next) {
			cr_assert_lt(x, 4);
			fixture_assert_close(op->coll_B, want[x]);
			x++;
		}
		if (op->kind == LOP_KERNEL && !strcmp(op->name, "cp_dq_acc")) {
			fixture_assert_close(op->k.read_B, dq ? 2 * O : O);
			fixture_assert_close(op->k.write_B, O);
			dq++;
		}
	}
	cr_assert_eq(x, 4);
	cr_assert_eq(dq, 4);
	arena_release(&a);
}
