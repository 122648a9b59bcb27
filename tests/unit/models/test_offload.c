/*
 * test_offload.c - activation offloading (training.cpu_offload_layers,
 * models/train_offload.c): Transformer Engine's default schedule keeps
 * K = L - N layers' sets on the GPU; the copies run on a stream of their
 * own at the system's host_d2h / host_h2d rates, hidden when they keep
 * pace and on the critical path when they do not.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/footprint.h"
#include "models/layer.h"
#include "models/train.h"

/* 8 dense layers of h 2048 (16 heads), vocabulary 1024, sequence 1024,
 * micro batch 1, tp 1, pp 1, dp 8 on one node; gbs 16: 2 microbatches a
 * replica. */
static void job(struct fixture *f, int64_t offload, double d2h, double h2d)
{
	fixture_gpt(f, 8, 2048, 16, 1024, 1024, 1, 16, 1, 1, 1);
	f->job.training.cpu_offload_layers = offload;
	f->sys.host_d2h_Bps = d2h;
	f->sys.host_h2d_Bps = h2d;
}

static double step_s(struct fixture *f)
{
	return mockcomm_train_step(&f->job, 0, 0, 0, NULL);
}

/* One layer's saved activations, one microbatch (what a copy moves). */
static double layer_B(struct fixture *f)
{
	struct layer_dims d;

	layer_dims_from_job(&f->job, &d);
	return footprint_layer_act_B(&d, LREC_NONE);
}

Test(offload, keeps_layers_minus_n_sets_on_the_gpu)
{
	struct fixture f;
	struct footprint none, three;

	/* pp 1 holds one microbatch's 8 sets at the end of its forward;
	 * offloading 3 leaves 8 - 3 = 5 of them: 3 layers' bytes less */
	job(&f, 0, 1e11, 1e11);
	cr_assert_eq(footprint_job(&f.job, 80e9, &none), 0);
	job(&f, 3, 1e11, 1e11);
	cr_assert_eq(footprint_job(&f.job, 80e9, &three), 0);
	cr_assert_float_eq(none.activations_B - three.activations_B,
			   3 * layer_B(&f), 1e-3 * layer_B(&f));
	cr_assert_gt(layer_B(&f), 0);
}

Test(offload, counted_by_the_estimate)
{
	struct fixture f;

	/* 2 copies (out, back) per offloaded layer and microbatch */
	job(&f, 3, 1e11, 1e11);
	fixture_assert_estimate(&f.job, 0, "cpu offload");
	fixture_assert_estimate(&f.job, 1, "cpu offload, full");
}

Test(offload, hidden_when_the_copies_keep_pace)
{
	struct fixture f;
	double off, on;

	/* K = 5 layers between a copy and its wait: at 1e15 B/s a copy takes
	 * under a microsecond, far less than the 4 layers computed between
	 * layer i's end and layer i + 5's start (forward) or between the
	 * backward of layer i + 5 and that of layer i: the step is the
	 * same */
	job(&f, 0, 1e15, 1e15);
	off = step_s(&f);
	job(&f, 3, 1e15, 1e15);
	on = step_s(&f);
	cr_assert_float_eq(on, off, 1e-12 * off, "%.12g vs %.12g", on, off);
}

/*
 * Copies far slower than a layer (c = B / rate, ~0.1 s against a layer's
 * ~0.1-1 ms): forward, the offloads of layers 0, 1, 2 run back to back
 * from layer 0's end E0; layers 5, 6, 7 wait for them (layer i + K after
 * the copy of i), so the forward ends at E0 + 3 c_d + t_f instead of
 * E0 + 7 t_f. Backward (layers 7 .. 0), the reload of layer 2 starts after
 * the backward of layer 7 ends (B7), those of 1 and 0 after it, and each
 * backward of layers 2, 1, 0 waits for its own: the backward ends at
 * B7 + 3 c_h + t_b instead of B7 + 7 t_b. Per microbatch the step grows by
 * 3 (c_d + c_h) - 6 (t_f + t_b), the same both microbatches (the stream
 * is idle again when the next forward starts). Between two slow rates
 * the layer times cancel: the difference is 2 microbatches x 3 x (B / r2
 * - B / r1) for each direction.
 */
Test(offload, exposed_when_the_copies_are_slow)
{
	struct fixture f;
	double none, r1, r2, b, want;

	job(&f, 0, 1e9, 1e9);
	none = step_s(&f);
	job(&f, 3, 1e9, 1e9);
	r1 = step_s(&f);
	job(&f, 3, 5e8, 5e8);
	r2 = step_s(&f);
	b = layer_B(&f);
	want = 2 * 3 * (2 * b / 5e8 - 2 * b / 1e9);
	cr_assert_float_eq(r2 - r1, want, 1e-6 * want,
			   "%.9g s at 1 GB/s, %.9g s at 0.5 GB/s, want +%.9g",
			   r1, r2, want);
	/* and at 1 GB/s the step pays nearly all 12 copies' time (less the
	 * layers they replace: 2 x 6 (t_f + t_b), a few ms) */
	cr_assert_gt(r1 - none, 0.98 * 2 * 3 * 2 * b / 1e9);
	cr_assert_lt(r1 - none, 2 * 3 * 2 * b / 1e9);
	/* the d2h rate alone moves the forward's share only */
	job(&f, 3, 5e8, 1e9);
	want = 2 * 3 * (b / 5e8 - b / 1e9);
	cr_assert_float_eq(step_s(&f) - r1, want, 1e-6 * want);
}

/* The first and last start and end of rank 0's tasks of microbatch 0,
 * layer `layer`, phase ph on stream st (named `name` when not NULL). */
struct span {
	double start, end;
	int n;
};

static struct span span_of(const struct prog *p, uint32_t st, int32_t layer,
			   enum task_phase ph, const char *name)
{
	struct span sp = { INFINITY, -INFINITY, 0 };
	uint32_t t, n = prog_tasks(p);
	struct task_info i;

	for (t = 0; t < n; t++) {
		if (exec_task_rank(p, t) != 0 || exec_task_stream(p, t) != st)
			continue;
		exec_task_info(p, t, &i);
		if (i.layer != layer || i.microbatch != 0 || i.phase != ph ||
		    (name && strcmp(i.name, name) != 0))
			continue;
		sp.start = fmin(sp.start, exec_task_start_s(p, t));
		sp.end = fmax(sp.end, exec_task_end_s(p, t));
		sp.n++;
	}
	return sp;
}

/* Transformer Engine's DefaultOffloadSynchronizer with N = 3 of L = 8
 * (K = 5): the forward of layer 5 waits for layer 0's offload, that of
 * layer 4 does not; layer 2's reload starts when the backward of layer
 * 2 + K = 7 ends, before that of layer 6 ends, and the backward of layer
 * 2 starts after it. Copies of ~0.1 s (1 GB/s) against ~ms layers; the
 * reload part with offloads at 1e15 B/s, so the stream is idle when the
 * backward of layer 7 ends. */
Test(offload, waits_follow_the_default_schedule)
{
	struct fixture f;
	struct mockcomm_run mr;
	struct span d0, f4, f5, r2, b7, b6, b2;

	job(&f, 3, 1e9, 1e9);
	mockcomm_train_run(&mr, &f.job, 0, 0, 0);
	d0 = span_of(mr.p, TRAIN_ST_OFFLOAD, 0, TASK_PHASE_FWD, "offload_d2h");
	f4 = span_of(mr.p, TRAIN_ST_COMPUTE, 4, TASK_PHASE_FWD, NULL);
	f5 = span_of(mr.p, TRAIN_ST_COMPUTE, 5, TASK_PHASE_FWD, NULL);
	cr_assert_eq(d0.n, 1);
	cr_assert_gt(f4.n, 0);
	cr_assert_lt(f4.start, d0.end);
	cr_assert_geq(f5.start, d0.end);
	mockcomm_train_release(&mr);

	job(&f, 3, 1e15, 1e9);
	mockcomm_train_run(&mr, &f.job, 0, 0, 0);
	r2 = span_of(mr.p, TRAIN_ST_OFFLOAD, 2, TASK_PHASE_BWD,
		     "offload_reload_h2d");
	b7 = span_of(mr.p, TRAIN_ST_COMPUTE, 7, TASK_PHASE_BWD, NULL);
	b6 = span_of(mr.p, TRAIN_ST_COMPUTE, 6, TASK_PHASE_BWD, NULL);
	b2 = span_of(mr.p, TRAIN_ST_COMPUTE, 2, TASK_PHASE_BWD, NULL);
	cr_assert_eq(r2.n, 1);
	cr_assert_float_eq(r2.start, b7.end, 1e-12);
	cr_assert_lt(r2.start, b6.end);
	cr_assert_geq(b2.start, r2.end);
	mockcomm_train_release(&mr);
}

/* train_check: the system must state both rates (exit 2 at the CLI). */
Test(offload, needs_the_host_rates)
{
	struct fixture f;
	struct diag d;

	diag_init(&d, NULL);
	job(&f, 3, 0, 1e9);
	cr_assert_eq(train_check(&f.job, &d), -1);
	job(&f, 3, 1e9, 0);
	cr_assert_eq(train_check(&f.job, &d), -1);
	job(&f, 3, 1e9, 1e9);
	cr_assert_eq(train_check(&f.job, &d), 0);
	job(&f, 0, 0, 0);
	cr_assert_eq(train_check(&f.job, &d), 0);
}
