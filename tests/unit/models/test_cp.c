/*
 * test_cp.c - context parallelism against derived numbers: the ring's
 * attention steps and K/V transfers, the transfers hidden behind
 * attention, and one simulated GPU a group against every GPU simulated
 * and the estimate against the built program for each way of passing
 * K/V (moved from test_moe.c).
 */
#include <criterion/criterion.h>

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
