/*
 * test_defer_wgrad.c - parallelism.defer_embedding_wgrad_compute
 * (Megatron-Core's defer_embedding_wgrad_compute / wgrad_deferral_limit,
 * models/train.c build_drain): the head's backward without its weight
 * gradient, that gradient alone as the flush runs it, and the last
 * pipeline stage's backward shortened by exactly the deferred GEMMs.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/layer.h"

Test(defer_wgrad, head_ops_split_the_weight_gradient_out)
{
	struct fixture f;
	struct arena a;
	struct layer_dims d;
	struct route_result r;
	struct layer_ops full, kept, drain;
	const struct layer_op *w, *ag;

	/* h 1024, V 65536, s 2048, b 1: T = 2048 tokens; tp 2 with SP */
	fixture_gpt(&f, 4, 1024, 16, 65536, 2048, 1, 32, 1, 2, 2);
	f.job.parallelism.sequence_parallel = 1;
	arena_init(&a);
	fixture_dims(&f, &a, &d, &r);
	layer_head_bwd(&d, &full);
	layer_head_bwd_deferred(&d, &kept);
	layer_head_wgrad(&d, &drain);
	cr_assert_not_null(fixture_op(&full, "logits_wgrad"));
	cr_assert_not_null(fixture_op(&full, "logits_input_allgather"));
	cr_assert_null(fixture_op(&kept, "logits_wgrad"));
	cr_assert_null(fixture_op(&kept, "logits_input_allgather"),
		       "no gather for a wgrad that is not computed");
	/* the rest of the backward is kept: the loss gradient, the dgrad,
	 * its reduce-scatter and the final norm */
	cr_assert_eq(kept.n + 2, full.n, "kept %d of %d ops", kept.n, full.n);
	cr_assert_not_null(fixture_op(&kept, "logits_dgrad"));
	cr_assert_not_null(fixture_op(&kept, "final_norm_bwd"));
	/* the drain: the SP all-gather of the saved input, T h B =
	 * 2048 x 1024 x 2 = 4194304 bytes, then the wgrad GEMM of the
	 * backward's shape: h x V/t over T, 1024 x 32768 x 2048 */
	cr_assert_eq(drain.n, 2);
	ag = fixture_op(&drain, "logits_input_allgather");
	w = fixture_op(&drain, "logits_wgrad");
	cr_assert_not_null(ag);
	cr_assert_not_null(w);
	fixture_assert_close(ag->coll_B, 4194304.0);
	fixture_assert_close(w->k.m, 1024.0);
	fixture_assert_close(w->k.n, 32768.0);
	fixture_assert_close(w->k.k, 2048.0);
	cr_assert_eq(w->dep[1], 0, "the GEMM waits for the gather");
	arena_release(&a);
}

/* The start of rank 1's last gradient send (the end of its last
 * backward: communication is free), the duration of one logits_wgrad
 * on rank 1, and how many of those start at or after that send. */
struct tail {
	double send_s, wgrad_s;
	int after;
};

static void tail_of(struct fixture *f, struct tail *t)
{
	struct mockcomm_run r;
	uint32_t i, n;
	enum task_cat cat;

	mockcomm_train_run(&r, &f->job, 0, 0, 0);
	n = prog_tasks(r.p);
	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++)
		if (exec_task_rank(r.p, i) == 1 &&
		    strcmp(exec_task_name(r.p, i, &cat),
			   "pp_send_gradient") == 0 &&
		    exec_task_start_s(r.p, i) > t->send_s)
			t->send_s = exec_task_start_s(r.p, i);
	for (i = 0; i < n; i++) {
		if (exec_task_rank(r.p, i) != 1 ||
		    strcmp(exec_task_name(r.p, i, &cat), "logits_wgrad") != 0)
			continue;
		t->wgrad_s = exec_task_dur_s(r.p, i);
		t->after += exec_task_start_s(r.p, i) >= t->send_s;
	}
	mockcomm_train_release(&r);
}

Test(defer_wgrad, last_stage_backward_shrinks_by_the_deferred_gemms)
{
	struct fixture f;
	struct tail base, all, three;

	/* 4 layers (2 a stage), h 1024, V 65536, s 2048, b 1, gbs 32 on 8
	 * GPUs, tp 1, pp 2: dp 4, m = 32 / 4 = 8 microbatches, 1F1B. The
	 * head (logits 2 T h V = 275 GFLOP forward, three GEMMs a
	 * microbatch) outweighs the two layers of a stage (about 70 GFLOP
	 * forward each), so rank 1 runs its forward and backward back to
	 * back, at its own pace, with or without its head wgrads (one
	 * GEMM of three). Its last backward (its last gradient send) then
	 * ends at f0 + m (f1 + b1), f0 rank 0's first forward: deferring
	 * the head wgrad of k microbatches moves it earlier by k w, w one
	 * wgrad GEMM, and those k GEMMs run after it (the flush). */
	fixture_gpt(&f, 4, 1024, 16, 65536, 2048, 1, 32, 1, 1, 2);
	tail_of(&f, &base);
	f.job.parallelism.defer_embedding_wgrad = 1;
	f.job.parallelism.wgrad_deferral_limit = 0;	/* all 8 */
	tail_of(&f, &all);
	f.job.parallelism.wgrad_deferral_limit = 3;
	tail_of(&f, &three);
	cr_assert_gt(base.wgrad_s, 0);
	fixture_assert_close(all.wgrad_s, base.wgrad_s);
	cr_assert_eq(base.after, 0, "undeferred: every wgrad in its backward");
	cr_assert_eq(all.after, 8, "all 8 deferred to the flush");
	cr_assert_eq(three.after, 3, "the first 3 deferred");
	cr_assert(fixture_near(base.send_s - all.send_s, 8 * base.wgrad_s,
			       1e-9), "%g s earlier, 8 w = %g s",
		  base.send_s - all.send_s, 8 * base.wgrad_s);
	cr_assert(fixture_near(base.send_s - three.send_s, 3 * base.wgrad_s,
			       1e-9), "%g s earlier, 3 w = %g s",
		  base.send_s - three.send_s, 3 * base.wgrad_s);
}
