/*
 * test_queue.c - communicators sharing hardware queues (train_queue.c):
 * which streams land on one queue for a given queue count and first-use
 * order, and that collectives of streams on one queue never run at the
 * same time in the simulated step.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/train.h"
#include "models/train_impl.h"

/* The GPT fixture's 4 layers as MoE layers of 8 routed experts (top 2,
 * width 2048), ep 4 on one node of 8 GPUs: dp 8, edp 2, ZeRO-1, buckets
 * of at least 2e6 parameters: a layer's experts on a GPU (8 / 4 x 2 x
 * 1024 x 2048 = 8.4e6) are one, each layer's attention (4.19e6) with its
 * router another. */
static void moe_job(struct fixture *f)
{
	fixture_gpt(f, 4, 1024, 16, 128, 2048, 2, 32, 1, 1, 1);
	f->model.n_routed_experts = 8;
	f->model.num_experts_per_tok = 2;
	f->model.moe_intermediate_size = 2048;
	f->model.decoder_sparse_step = 1;
	f->model.moe_layer_freq = 1;
	f->job.parallelism.ep = 4;
	f->job.parallelism.edp = 2;
	f->job.moe.routing.balance = ROUTE_UNIFORM;
	f->job.moe.routing.method = ROUTE_CLOSED_FORM;
	f->job.moe.routing.draws = 64;
	f->job.training.zero_stage = 1;
	f->fw.bucket_params = 2000000;
	f->fw.bucket_params_per_dp = 0;
	f->fw.overlap_grad_reduce = 1;
	f->fw.overlap_param_gather = 1;
}

Test(queue, first_use_order_decides_the_sharing)
{
	struct fixture f;

	/* Communicators in first-use order: world, tp_ep (the counts), ep,
	 * [dp, the loss's], dp x cp, edp; the i-th on queue i mod q.
	 * q 2 with the loss's group: queues 0 1 0 1 0 1, so ep (2) with the
	 * dense gradients' (4), edp (5) with the loss's (3). */
	moe_job(&f);
	f.job.training.comm_hw_queues = 2;
	f.fw.loss_dp_allreduce = 1;
	cr_assert(train_queue_with_ep(&f.job, 0));
	cr_assert(!train_queue_with_ep(&f.job, 1));
	cr_assert(!train_queue_dp_edp(&f.job));
	/* without it: 0 1 0 1 0, ep (2) with edp (4), dp x cp (3) apart */
	f.fw.loss_dp_allreduce = 0;
	cr_assert(!train_queue_with_ep(&f.job, 0));
	cr_assert(train_queue_with_ep(&f.job, 1));
	cr_assert(!train_queue_dp_edp(&f.job));
	/* q 3 with it: 0 1 2 0 1 2: ep with edp again */
	f.fw.loss_dp_allreduce = 1;
	f.job.training.comm_hw_queues = 3;
	cr_assert(!train_queue_with_ep(&f.job, 0));
	cr_assert(train_queue_with_ep(&f.job, 1));
	/* q 1: everything on one queue; q 0 or 6 (>= the 6 used): none */
	f.job.training.comm_hw_queues = 1;
	cr_assert(train_queue_with_ep(&f.job, 0) && train_queue_with_ep(&f.job, 1));
	cr_assert(train_queue_dp_edp(&f.job));
	f.job.training.comm_hw_queues = 6;
	cr_assert(!train_queue_with_ep(&f.job, 0) && !train_queue_with_ep(&f.job, 1));
	cr_assert(!train_queue_dp_edp(&f.job));
	f.job.training.comm_hw_queues = 0;
	cr_assert(!train_queue_with_ep(&f.job, 0) && !train_queue_dp_edp(&f.job));
	/* no expert parallelism (ep 1): no ep stream to share with */
	f.job.training.comm_hw_queues = 1;
	f.job.parallelism.ep = 1;
	cr_assert(!train_queue_with_ep(&f.job, 0));
}

/* Rank 0's tasks whose name starts with one of the prefixes in `a` (a
 * NULL-terminated list) overlapping in time with those of `b`: how many
 * pairs. */
static int overlaps(const struct prog *p, const char *const *a,
		    const char *const *b)
{
	uint32_t x, y, n = prog_tasks(p);
	int pairs = 0;

	for (x = 0; x < n; x++) {
		enum task_cat cat;
		const char *nx = exec_task_name(p, x, &cat);
		int i, in = 0;

		if (exec_task_rank(p, x) != 0)
			continue;
		for (i = 0; a[i]; i++)
			in |= strncmp(nx, a[i], strlen(a[i])) == 0;
		if (!in)
			continue;
		for (y = 0; y < n; y++) {
			const char *ny = exec_task_name(p, y, &cat);
			int j, iny = 0;

			if (exec_task_rank(p, y) != 0 || cat != TASK_COMM)
				continue;
			for (j = 0; b[j]; j++)
				iny |= strncmp(ny, b[j], strlen(b[j])) == 0;
			if (iny && exec_task_start_s(p, x) < exec_task_end_s(p, y) &&
			    exec_task_start_s(p, y) < exec_task_end_s(p, x))
				pairs++;
		}
	}
	return pairs;
}

/* Run the fixture's step (every GPU simulated when full); the
 * overlapping pairs of a's and b's tasks on rank 0, and the step time
 * into *step_s. */
static int run_full(struct fixture *f, int full, const char *const *a,
		    const char *const *b, double *step_s)
{
	struct mockcomm_run run;
	int pairs;

	mockcomm_train_run(&run, &f->job, full, 5e-6, 1e9);
	pairs = overlaps(run.p, a, b);
	*step_s = run.er.step_s;
	mockcomm_train_release(&run);
	return pairs;
}

static int run_pairs(struct fixture *f, const char *const *a,
		     const char *const *b, double *step_s)
{
	return run_full(f, 0, a, b, step_s);
}

Test(queue, symmetric_equals_full)
{
	static const char *const none[] = { NULL };
	struct fixture f;
	double ts, tf;
	int64_t q;

	/* one simulated GPU per group gives the full-fidelity step with the
	 * queue deps, on one pipeline stage and on two (pp 2, dp 4, ep 2,
	 * edp 2: the searches for the next and the previous all-to-all cross
	 * actions there) */
	moe_job(&f);
	f.fw.loss_dp_allreduce = 1;
	for (q = 1; q <= 2; q++) {
		f.job.training.comm_hw_queues = q;
		run_full(&f, 0, none, none, &ts);
		run_full(&f, 1, none, none, &tf);
		cr_assert_eq(ts, tf, "q %ld: symmetric %.9g s, full %.9g s",
			     (long)q, ts, tf);
	}
	f.job.parallelism.pp = 2;
	f.job.parallelism.dp = 4;
	f.job.parallelism.ep = 2;
	f.job.parallelism.edp = 2;
	f.job.training.global_batch_size = 16;
	for (q = 1; q <= 2; q++) {
		f.job.training.comm_hw_queues = q;
		run_full(&f, 0, none, none, &ts);
		run_full(&f, 1, none, none, &tf);
		cr_assert_eq(ts, tf, "pp 2, q %ld: symmetric %.9g s, full %.9g s",
			     (long)q, ts, tf);
	}
}

Test(queue, one_queue_runs_in_issue_order)
{
	static const char *const ep[] = { "moe_", NULL };
	static const char *const dense[] = { "dp_grad_reduce",
					     "dp_param_allgather", NULL };
	static const char *const experts[] = { "edp_grad_reduce",
					       "edp_param_allgather", NULL };
	struct fixture f;
	double t0, t1;

	/* The dense gradients' reduce-scatters (4.19e6 x 4 B over 8 GPUs:
	 * 5 us + 7/8 x 16.8 MB / 1 GB/s = 14.7 ms) outlast a layer's
	 * backward of this small model, so on streams of their own they run
	 * under the next layers' all-to-alls; on one hardware queue with
	 * the expert-parallel stream (q 2, the loss's group first used
	 * between: see first_use_order_decides_the_sharing) none of them
	 * overlaps an all-to-all, and the step is no faster. */
	moe_job(&f);
	f.fw.loss_dp_allreduce = 1;
	cr_assert_gt(run_pairs(&f, dense, ep, &t0), 0);
	f.job.training.comm_hw_queues = 2;
	cr_assert_eq(run_pairs(&f, dense, ep, &t1), 0);
	cr_assert_geq(t1, t0, "shared %.9g s, apart %.9g s", t1, t0);
	/* the experts' chain is on the other queue: it still overlaps */
	cr_assert_gt(run_pairs(&f, experts, ep, &t1), 0);
	/* without the loss's group the experts' chain shares instead */
	f.fw.loss_dp_allreduce = 0;
	cr_assert_eq(run_pairs(&f, experts, ep, &t1), 0);
	cr_assert_gt(run_pairs(&f, dense, ep, &t1), 0);
	/* one queue for all: the two kinds never overlap each other
	 * either, and nothing overlaps an all-to-all */
	f.job.training.comm_hw_queues = 1;
	cr_assert_eq(run_pairs(&f, dense, experts, &t1), 0);
	cr_assert_eq(run_pairs(&f, dense, ep, &t1), 0);
	cr_assert_eq(run_pairs(&f, experts, ep, &t1), 0);
}

Test(queue, te_gemm_streams_take_places_in_the_order)
{
	struct fixture f;

	/* Transformer Engine's GroupedLinear creates its S multi-stream GEMM
	 * streams (priority -1: HIP's high-priority pool) together at the
	 * first expert GEMM, after the first all-to-all: world, tp_ep, ep,
	 * S GEMM streams (the experts' GEMMs on the first), [dp, the
	 * loss's], dp x cp, edp. q 2, S 4, with the loss's group: 0 1 0,
	 * GEMM 1 (0 1 0 for the other three), then 1 0 1: the experts'
	 * GEMMs share queue 1 with edp (the loss's 1 too, not modelled),
	 * ep still with dp x cp. */
	moe_job(&f);
	f.job.training.comm_hw_queues = 2;
	f.fw.loss_dp_allreduce = 1;
	f.fw.elementwise.grouped_gemm_streams = 4;
	cr_assert(train_queue_with_gemm(&f.job, 1));
	cr_assert(!train_queue_with_gemm(&f.job, 0));
	cr_assert(train_queue_with_ep(&f.job, 0));
	cr_assert(!train_queue_dp_edp(&f.job));
	/* S 3: GEMM 1 (then 0 1), dp 0, dp x cp 1, edp 0: the GEMMs with
	 * the dense gradients', ep (0) with edp */
	f.fw.elementwise.grouped_gemm_streams = 3;
	cr_assert(!train_queue_with_gemm(&f.job, 1));
	cr_assert(train_queue_with_gemm(&f.job, 0));
	cr_assert(train_queue_with_ep(&f.job, 1));
	/* S 0 (one grouped kernel on the compute stream): no GEMM stream,
	 * the communicators' order as before (ep with dp x cp) */
	f.fw.elementwise.grouped_gemm_streams = 0;
	cr_assert(!train_queue_with_gemm(&f.job, 0) &&
		  !train_queue_with_gemm(&f.job, 1));
	cr_assert(train_queue_with_ep(&f.job, 0));
	/* q 0: every stream its own queue */
	f.fw.elementwise.grouped_gemm_streams = 4;
	f.job.training.comm_hw_queues = 0;
	cr_assert(!train_queue_with_gemm(&f.job, 0) &&
		  !train_queue_with_gemm(&f.job, 1));
}

/* Rank 0's first `max` tasks named `name` (in task order: the first
 * microbatch's forward first), their start and end times; how many. */
static int times_of(const struct prog *p, const char *name, double *start,
		    double *end, int max)
{
	uint32_t x, n = prog_tasks(p);
	int c = 0;

	for (x = 0; x < n && c < max; x++) {
		enum task_cat cat;

		if (exec_task_rank(p, x) != 0 ||
		    strcmp(exec_task_name(p, x, &cat), name) != 0)
			continue;
		start[c] = exec_task_start_s(p, x);
		end[c++] = exec_task_end_s(p, x);
	}
	return c;
}

/* The step of the fixture on a GPU 100 x slower at bf16 GEMMs (an expert
 * GEMM 4.3 ms, longer than a bucket's all-gather), with collectives at
 * 10 GB/s; the experts' all-gathers and forward GEMMs of rank 0. */
static double gemm_step(struct fixture *f, double ag_s[4], double ag_e[4],
			double fc1_s[4], double fc2_e[4])
{
	struct mockcomm_run run;
	double x[4], step;

	f->gpu.matrix_peak_flops[DTYPE_BF16] = 989.4e10;
	mockcomm_train_run(&run, &f->job, 0, 5e-6, 1e10);
	cr_assert_eq(times_of(run.p, "edp_param_allgather", ag_s, ag_e, 4), 4);
	cr_assert_eq(times_of(run.p, "expert_fc1", fc1_s, x, 4), 4);
	cr_assert_eq(times_of(run.p, "expert_fc2", x, fc2_e, 4), 4);
	step = run.er.step_s;
	mockcomm_train_release(&run);
	return step;
}

Test(queue, expert_gemms_and_the_experts_gathers_keep_issue_order)
{
	double ag_s[4], ag_e[4], fc1_s[4], fc2_e[4];
	struct fixture f;
	int i;

	/* Megatron issues layer i's experts' all-gather (i >= 1) from the
	 * pre-hook of layer i-1's fc1, so on the GEMM stream's queue (q 2,
	 * S 4: te_gemm_streams_take_places_in_the_order) it starts after
	 * layer i-2's expert GEMMs and layer i-1's fc1 waits for it. On a
	 * queue of its own (q 0), or with one grouped kernel on the compute
	 * stream (S 0: edp's queue holds no GEMM), the chain runs from the
	 * step's start (4 x 0.84 ms: 8.4e6 x 2 B over edp 2 at 10 GB/s),
	 * layer 2's before layer 0's fc2 ends (20.8 ms). */
	moe_job(&f);
	f.fw.loss_dp_allreduce = 1;
	f.fw.elementwise.grouped_gemm_streams = 4;
	gemm_step(&f, ag_s, ag_e, fc1_s, fc2_e);
	cr_assert_lt(ag_s[2], fc2_e[0]);
	f.job.training.comm_hw_queues = 2;
	gemm_step(&f, ag_s, ag_e, fc1_s, fc2_e);
	for (i = 1; i < 4; i++)
		cr_assert_geq(fc1_s[i - 1], ag_e[i], "layer %d", i);
	for (i = 2; i < 4; i++)
		cr_assert_geq(ag_s[i], fc2_e[i - 2], "layer %d", i);
	f.fw.elementwise.grouped_gemm_streams = 0;
	gemm_step(&f, ag_s, ag_e, fc1_s, fc2_e);
	cr_assert_lt(ag_s[2], fc2_e[0]);
}

Test(queue, one_queue_for_all_with_te_gemm_streams)
{
	static const char *const none[] = { NULL };
	double ag_s[4], ag_e[4], fc1_s[4], fc2_e[4], ts, tf;
	struct fixture f;
	int i, loss;

	/* q 1 (ROCm's GPU_MAX_HW_QUEUES=1): the all-to-alls, Transformer
	 * Engine's 4 GEMM streams and both kinds of gradient collectives
	 * share one FIFO, so dp and edp share it too and each bucket's
	 * all-gather is issued at its own first unit on the expert-parallel
	 * queue (gather_on_ep_queue). Before, the GEMM queue anchored the
	 * experts' gather one bucket ahead, before layer i-1's fc1, while
	 * the expert-parallel queue put it after layer i-1's combine (which
	 * follows that fc1): the step deadlocked (exec_run failed). Now both
	 * anchor it at layer i: after layer i-1's expert GEMMs (its fc2
	 * ends) and before layer i's fc1, with or without the loss's group. */
	for (loss = 0; loss <= 1; loss++) {
		moe_job(&f);
		f.fw.loss_dp_allreduce = loss;
		f.fw.elementwise.grouped_gemm_streams = 4;
		f.job.training.comm_hw_queues = 1;
		cr_assert(train_queue_dp_edp(&f.job));
		cr_assert(train_queue_with_gemm(&f.job, 1));
		cr_assert(train_queue_with_ep(&f.job, 1));
		cr_assert_gt(gemm_step(&f, ag_s, ag_e, fc1_s, fc2_e), 0);
		for (i = 1; i < 4; i++) {
			cr_assert_geq(fc1_s[i], ag_e[i], "loss %d layer %d",
				      loss, i);
			cr_assert_geq(ag_s[i], fc2_e[i - 1], "loss %d layer %d",
				      loss, i);
		}
		/* and one simulated GPU per group gives the full step */
		run_full(&f, 0, none, none, &ts);
		run_full(&f, 1, none, none, &tf);
		cr_assert_eq(ts, tf, "loss %d: symmetric %.9g s, full %.9g s",
			     loss, ts, tf);
	}
}

Test(queue, one_connection_rule)
{
	struct fixture f;

	/* CUDA_DEVICE_MAX_CONNECTIONS (framework device_max_connections):
	 * one hardware queue only at 1, on NVIDIA GPUs; -1 is Megatron's
	 * launcher rule, 1 with tp or cp > 1 before Blackwell (sm < 100)
	 * unless moe.a2a_overlap (train_queue.c) */
	moe_job(&f);
	f.gpu.arch = "sm90";
	f.fw.device_max_connections = 8;
	cr_assert(!train_one_connection(&f.job));
	f.fw.device_max_connections = 1;
	cr_assert(train_one_connection(&f.job));
	f.fw.device_max_connections = -1;
	cr_assert(!train_one_connection(&f.job));	/* tp 1, cp 1 */
	f.job.parallelism.tp = 2;
	cr_assert(train_one_connection(&f.job));
	f.job.parallelism.tp = 1;
	f.job.parallelism.cp = 2;
	cr_assert(train_one_connection(&f.job));
	f.job.moe.a2a_overlap = 1;
	cr_assert(!train_one_connection(&f.job));
	f.job.moe.a2a_overlap = 0;
	f.gpu.arch = "sm100";
	cr_assert(!train_one_connection(&f.job));
	f.gpu.arch = NULL;				/* unknown: not assumed */
	cr_assert(!train_one_connection(&f.job));
	/* HIP has no such variable */
	f.gpu.arch = "gfx942";
	f.gpu.vendor = GPU_AMD;
	f.fw.device_max_connections = 1;
	cr_assert(!train_one_connection(&f.job));
}

/* Rank 0's compute tasks that start exactly at t (s). */
static int compute_starting_at(const struct prog *p, double t)
{
	uint32_t x, n = prog_tasks(p);
	int c = 0;

	for (x = 0; x < n; x++) {
		enum task_cat cat;

		exec_task_name(p, x, &cat);
		if (exec_task_rank(p, x) == 0 && cat == TASK_COMPUTE &&
		    exec_task_start_s(p, x) == t)
			c++;
	}
	return c;
}

Test(queue, one_connection_starts_in_launch_order)
{
	static const char *const compute[] = { "qkv", "attn", "proj",
						"fc1", "fc2", NULL };
	static const char *const dense[] = { "dp_grad_reduce", NULL };
	double ms[16], me[16], rs[16], re[16], t8, t1;
	struct mockcomm_run run;
	struct fixture f;
	int i, n, gated = 0;

	/* A dense GPT of 4 layers (h 1024: 12 h^2 = 12.6e6 parameters a
	 * layer) on 8 GPUs, dp 8, ZeRO-1, a bucket per layer (at least 2e6
	 * parameters): a layer's reduce-scatter (12.6e6 x 4 B = 50.3 MB,
	 * 5 us + 7/8 x 50.3 MB / 1 GB/s = 44 ms) outlasts its backward
	 * (4096 tokens: ~0.3 TFLOP, well under 1 ms), so they back up on
	 * their stream. 8 connections: no launch marks, the backward runs on
	 * under the queued ones. */
	fixture_gpt(&f, 4, 1024, 16, 128, 2048, 2, 32, 1, 1, 1);
	f.job.training.zero_stage = 1;
	f.fw.bucket_params = 2000000;
	f.fw.bucket_params_per_dp = 0;
	f.fw.overlap_grad_reduce = 1;
	f.fw.overlap_param_gather = 1;
	f.gpu.arch = "sm90";
	f.fw.device_max_connections = 8;
	mockcomm_train_run(&run, &f.job, 0, 5e-6, 1e9);
	cr_assert_eq(times_of(run.p, "launch dp_grad_reduce", ms, me, 16), 0);
	t8 = run.er.step_s;
	mockcomm_train_release(&run);
	/* One: each reduction's launch mark ends when the reduction starts
	 * (the mark is its stream predecessor with the same input, and every
	 * member arrives at once in the symmetric run), after the previous
	 * one ends (the stream's order); where the stream had backed up
	 * (the mark ends at the previous reduction's end, not at the
	 * bucket's input) the layer launched after it starts exactly then:
	 * it waited for the reduction to start, not to end. */
	f.fw.device_max_connections = 1;
	mockcomm_train_run(&run, &f.job, 0, 5e-6, 1e9);
	n = times_of(run.p, "launch dp_grad_reduce", ms, me, 16);
	cr_assert_eq(times_of(run.p, "dp_grad_reduce", rs, re, 16), n);
	cr_assert_geq(n, 2);
	for (i = 0; i < n; i++) {
		cr_assert_eq(me[i], rs[i], "bucket %d: mark %.9g s, start %.9g s",
			     i, me[i], rs[i]);
		if (i > 0)
			cr_assert_geq(me[i], re[i - 1], "bucket %d", i);
		if (i > 0 && me[i] == re[i - 1] &&
		    compute_starting_at(run.p, me[i]) > 0)
			gated++;
	}
	cr_assert_gt(gated, 0);
	t1 = run.er.step_s;
	/* a started reduction does not hold the queue (not ROCm's barrier
	 * bit): the compute launched after it still runs under it */
	cr_assert_gt(overlaps(run.p, compute, dense), 0);
	mockcomm_train_release(&run);
	/* the step ends with the reductions' chain either way (4 x 44 ms,
	 * far past the backward): holding the backward's layers back moves
	 * compute, not the chain's end */
	cr_assert_eq(t1, t8, "one %.9g s, eight %.9g s", t1, t8);
}
