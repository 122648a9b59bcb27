/*
 * test_train.c - the step program through the real builder and executor
 * with an alpha-beta comm backend: pipeline bubbles against their closed
 * form, symmetric replication against full fidelity.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/footprint.h"
#include "models/train.h"
#include "engine/sim.h"

/* What a run gives: the executor's split and the plan. */
struct run_result {
	double step_s;				/* s */
	double part_s[EXEC_PART_COUNT];		/* s */
	struct train_plan plan;
};

static void run(struct fixture *f, int full, double alpha_s, double beta_Bps,
		struct run_result *r)
{
	struct mockcomm_run mr;
	int i;

	mockcomm_train_run(&mr, &f->job, full, alpha_s, beta_Bps);
	r->plan = mr.plan;
	r->step_s = mr.er.step_s;
	for (i = 0; i < EXEC_PART_COUNT; i++)
		r->part_s[i] = mr.er.part_s[i];
	mockcomm_train_release(&mr);
}

/* A GPT of 8 layers, h 4096, 32 heads, s 2048, vocabulary 128 (so the
 * embedding and head, kernel launches included, cost about 1 % of a
 * stage and the stages are nearly equal), on one node, tp 1, pp 4 (dp 2),
 * the given global batch. */
static void pipeline_job(struct fixture *f, int64_t gbs, int schedule)
{
	fixture_gpt(f, 8, 4096, 32, 128, 2048, 1, gbs, 1, 1, 4);
	f->job.parallelism.schedule = schedule;
}

static double bubble_fraction(const struct run_result *r)
{
	return r->part_s[EXEC_BUBBLE] /
	       (r->part_s[EXEC_COMPUTE] + r->part_s[EXEC_BUBBLE]);
}

/* Runs f's job with free communication; its bubble fraction must be
 * want within tol. */
static void assert_bubble(struct fixture *f, double want, double tol)
{
	struct run_result r;

	run(f, 0, 0, 0, &r);
	cr_assert_float_eq(bubble_fraction(&r), want, tol,
			   "bubble %.4f", bubble_fraction(&r));
}

Test(train, gpipe_bubble)
{
	struct fixture f;

	/* GPipe, p = 4, m = 16 / (1 * dp 2) = 8, free communication: the
	 * last rank waits (p-1)(f+b) of (m+p-1)(f+b): 3/11 = 0.2727. */
	pipeline_job(&f, 16, SCHED_GPIPE);
	assert_bubble(&f, 3.0 / 11, 0.005);
}

Test(train, one_f_one_b_same_bubble)
{
	struct fixture f;

	/* 1F1B has GPipe's bubble: m = 32 / 2 = 16 -> 3/19 = 0.1579. */
	pipeline_job(&f, 32, SCHED_1F1B);
	assert_bubble(&f, 3.0 / 19, 0.005);
}

Test(train, local_batches_drain_the_pipeline_each)
{
	struct fixture f;

	/* 1F1B, m = 32 / 2 = 16 microbatches a replica, but a local batch
	 * of 4 (AutoModel: schedule.step once per local batch): 4 runs of
	 * m' = 4, each filled and drained; rank 0 ends every run with its
	 * last backward and starts the next at once, so the step is
	 * 4 (m' + p - 1)(f + b) and the bubble 3/7 = 0.4286 (one schedule
	 * over 16: 3/19) */
	pipeline_job(&f, 32, SCHED_1F1B);
	f.job.training.local_batch_size = 4;
	assert_bubble(&f, 3.0 / 7, 0.005);
}

Test(train, schedule_runs_only_for_an_even_local_batch)
{
	struct fixture f;

	/* gbs 32 over dp 2 = 16 sequences a replica, mbs 1, pp 4 */
	pipeline_job(&f, 32, SCHED_1F1B);
	f.job.training.local_batch_size = 4;
	cr_assert_eq(job_schedule_runs(&f.job), 4);	/* 16 / 4 */
	f.job.training.local_batch_size = 0;
	cr_assert_eq(job_schedule_runs(&f.job), 1);	/* the whole step */
	/* a planner's candidate whose local batch does not split it: one
	 * schedule (3 does not divide 16) */
	f.job.training.local_batch_size = 3;
	cr_assert_eq(job_schedule_runs(&f.job), 1);
	/* interleaved: 2 microbatches a run are not a multiple of pp 4 */
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	f.job.parallelism.vpp = 2;
	f.job.training.local_batch_size = 2;
	cr_assert_eq(job_schedule_runs(&f.job), 1);
	f.job.training.local_batch_size = 8;
	cr_assert_eq(job_schedule_runs(&f.job), 2);	/* 16 / 8, 8 % 4 = 0 */
}

Test(train, interleaving_shrinks_the_bubble)
{
	struct fixture f;

	/* vpp 2: (p-1)/v of (f+b)/... -> idle (p-1)/(v m + p - 1) of the
	 * chunk-time line = 3 / (2*8 + 3) = 0.158 (Narayanan et al. SC'21
	 * sec. 2.2: the bubble shrinks by v). */
	pipeline_job(&f, 16, SCHED_INTERLEAVED);
	f.job.parallelism.vpp = 2;
	assert_bubble(&f, 3.0 / 19, 0.01);
}

Test(train, no_pipeline_no_bubble)
{
	struct fixture f;
	struct run_result r;

	fixture_gpt(&f, 8, 1024, 16, 128, 1024, 1, 16, 1, 1, 1);
	run(&f, 0, 0, 0, &r);
	cr_assert_eq(r.part_s[EXEC_BUBBLE], 0);
	cr_assert_eq(r.plan.lay.nranks, 1);
}

/* Step time and breakdown equal in both fidelities. */
static void assert_same(struct fixture *f)
{
	struct run_result sym, full;
	int i;

	run(f, 0, 5e-6, 100e9, &sym);
	run(f, 1, 5e-6, 100e9, &full);
	cr_assert_eq(sym.plan.lay.nranks, (uint32_t)f->job.parallelism.pp);
	cr_assert_eq(full.plan.lay.nranks, 8);
	cr_assert_eq(sym.step_s, full.step_s, "symmetric %.9g s, full %.9g s",
		     sym.step_s, full.step_s);
	for (i = 0; i < EXEC_PART_COUNT; i++)
		cr_assert_eq(sym.part_s[i], full.part_s[i], "part %d", i);
}

Test(train, symmetric_equals_full_tp_pp_dp)
{
	struct fixture f;

	/* tp 2, pp 2 interleaved x 2, dp 2, SP, distributed optimizer,
	 * selective recompute; every collective 5 us + bytes / 100 GB/s. */
	fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 8, 1, 2, 2);
	f.job.parallelism.sequence_parallel = 1;
	f.job.parallelism.vpp = 2;
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	f.job.training.zero_stage = 1;
	f.job.training.recompute = RECOMPUTE_SELECTIVE;
	assert_same(&f);
}

Test(train, symmetric_equals_full_fsdp)
{
	struct fixture f;

	/* dp 8, ZeRO-3: per-layer all-gathers and reduce-scatters. */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 2, 32, 1, 1, 1);
	f.job.training.zero_stage = 3;
	assert_same(&f);
}

Test(train, exposed_comm_without_overlap)
{
	struct fixture f;
	struct run_result fast, slow;

	/* tp 8 on one node: the forward all-reduces are exposed, so slower
	 * communication makes the step longer and shows as exposed comm. */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 1, 8, 1, 8, 1);
	run(&f, 0, 5e-6, 400e9, &fast);
	run(&f, 0, 5e-6, 40e9, &slow);
	cr_assert_gt(slow.step_s, fast.step_s);
	cr_assert_gt(slow.part_s[EXEC_EXPOSED_COMM], fast.part_s[EXEC_EXPOSED_COMM]);
}

Test(train, model_flops)
{
	struct fixture f;
	struct run_result r;
	double T = 16 * 1024.0, h = 1024, s = 1024, L = 8, V = 128;
	double per_tok_layer = 24 * h * h + 2 * s * h;

	/* Megatron's count (training.py, num_floating_point_operations):
	 * per token and layer 24 h^2 for the GEMMs and 4 s h for QK^T and
	 * AV over the causal half of the score matrix (2 s h), times 3 for
	 * forward and backward; the LM head 2 h V. Over 16 sequences of
	 * 1024 tokens: 3 * (8 * 16384 * (24 * 1024^2 + 2 * 1024^2) + 2 *
	 * 16384 * 1024 * 128) = 1.07e13 FLOP. */
	fixture_gpt(&f, 8, 1024, 16, 128, 1024, 1, 16, 1, 1, 1);
	run(&f, 0, 0, 0, &r);
	cr_assert_float_eq(r.plan.model_flops,
			   3 * (L * T * per_tok_layer + 2 * T * h * V), 1e3);
	cr_assert_float_eq(r.plan.tokens, T, 0);
}

Test(train, mfu_at_most_one_across_sequence_lengths)
{
	/* Issue 8: at 1M tokens a sequence, MFU was 1.06 because the model
	 * count took the full score matrix while the GPU model executes
	 * the causal half. Model FLOPs (no recompute) never exceed what is
	 * executed, so MFU <= HFU <= 1, at every length from 1k to 1M
	 * (4 layers, h 4096, 32 heads, tp 8, one sequence a microbatch). */
	struct fixture f;
	struct run_result r;
	double peak = 989.4e12, mfu, hfu;
	int64_t s;

	for (s = 1024; s <= 1048576; s *= 4) {
		fixture_gpt(&f, 4, 4096, 32, 128, s, 1, 4, 1, 8, 1);
		run(&f, 0, 0, 0, &r);
		mfu = r.plan.model_flops / (r.step_s * 8 * peak);
		hfu = r.plan.exec_flops / (r.step_s * 8 * peak);
		cr_assert_leq(r.plan.model_flops, r.plan.exec_flops,
			      "s %lld: model %g > executed %g FLOP",
			      (long long)s, r.plan.model_flops,
			      r.plan.exec_flops);
		cr_assert_leq(mfu, hfu, "s %lld", (long long)s);
		cr_assert_leq(hfu, 1.0, "s %lld: HFU %g", (long long)s, hfu);
	}
}

Test(train, out_of_memory_is_clean)
{
	struct fixture f;
	struct train_plan plan;
	struct diag d;
	struct prog *p = NULL;
	long n;

	/* Fail the n-th allocation for n = 0, 1, 2, ... until the build
	 * succeeds: every failure returns NULL with one out-of-memory
	 * diagnostic and frees what it took (make check runs this under
	 * AddressSanitizer's leak checker). */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 1, 8, 1, 2, 2);
	f.job.parallelism.sequence_parallel = 1;
	f.job.training.zero_stage = 1;
	for (n = 0; !p; n++) {
		diag_init(&d, NULL);
		mem_fail_after(n);
		p = train_build(&f.job, 1, &plan, &d);
		mem_fail_after(-1);
		if (!p)
			cr_assert_eq(d.oom, 1, "n = %ld: %u oom reports", n, d.oom);
	}
	cr_assert_gt(n, 10);
	prog_free(p);
}

Test(train, estimate_counts_the_built_program)
{
	struct fixture f;
	int full;

	for (full = 0; full <= 1; full++) {
		/* tp 2, pp 2 interleaved x 2, dp 2, SP, ZeRO-1, selective
		 * recompute, 64 microbatches. */
		fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 128, 1, 2, 2);
		f.job.parallelism.sequence_parallel = 1;
		f.job.parallelism.vpp = 2;
		f.job.parallelism.schedule = SCHED_INTERLEAVED;
		f.job.training.zero_stage = 1;
		f.job.training.recompute = RECOMPUTE_SELECTIVE;
		f.fw.overlap_param_gather = 1;
		fixture_assert_estimate(&f.job, full,
					"tp 2, pp 2 x vpp 2, SP, ZeRO-1");
		/* the same, gathers after the optimizer, tied embeddings */
		f.fw.overlap_param_gather = 0;
		f.model.tie_word_embeddings = 1;
		fixture_assert_estimate(&f.job, full,
					"tied embeddings, late gathers");
		/* dp 8, ZeRO-3, full recompute, 4 microbatches. */
		fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 2, 64, 1, 1, 1);
		f.job.training.zero_stage = 3;
		f.job.training.recompute = RECOMPUTE_FULL;
		fixture_assert_estimate(&f.job, full,
					"dp 8, ZeRO-3, full recompute");
		/* tp 8, pp 4 on 4 nodes, 1F1B, 32 microbatches, ZeRO-0. */
		fixture_gpt(&f, 16, 2048, 16, 1024, 1024, 1, 64, 4, 8, 4);
		fixture_assert_estimate(&f.job, full, "tp 8, pp 4 on 4 nodes");
		/* tp 2, pp 2, dp 2 with scattered transfers (no SP), host
		 * overhead */
		fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 16, 1, 2, 2);
		f.job.training.zero_stage = 2;
		f.fw.pp_scatter_gather = 1;
		f.fw.step_overhead_s = 1e-3;
		fixture_assert_estimate(&f.job, full,
					"tp 2, pp 2, scattered transfers");
		/* fp8 amax reductions over the stage after every pass */
		f.job.training.dtype = DTYPE_FP8;
		f.fw.fp8_amax_reduction = AMAX_STAGE;
		fixture_assert_estimate(&f.job, full, "fp8 amax reductions");
		/* the host thread modeled: a host task per op (gathers and
		 * amax blocks too), and with p2p syncs one before every
		 * action but the first of the non-interleaved pipeline */
		f.fw.host.op_s = f.fw.host.module_s = 5e-6;
		f.fw.host.kernel_s = f.fw.host.collective_s = 2e-6;
		f.fw.host.sync_s = 1e-5;
		f.fw.host.p2p_sync = 1;
		fixture_assert_estimate(&f.job, full, "host, p2p syncs");
		/* ... on the interleaved pipeline: no p2p syncs */
		fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 128, 1, 2, 2);
		f.job.parallelism.vpp = 2;
		f.job.parallelism.schedule = SCHED_INTERLEAVED;
		f.fw.host.op_s = f.fw.host.kernel_s = 5e-6;
		f.fw.host.p2p_sync = 1;
		fixture_assert_estimate(&f.job, full, "host, interleaved");
		/* ... with the head wgrads of the first 5 microbatches
		 * deferred to the flush (SP: a gather and a GEMM each) */
		f.job.parallelism.sequence_parallel = 1;
		f.job.parallelism.defer_embedding_wgrad = 1;
		f.job.parallelism.wgrad_deferral_limit = 5;
		fixture_assert_estimate(&f.job, full, "deferred head wgrads");
	}
}

/* The optimizer step's time on the critical path of a one-GPU-per-replica
 * job (tp 1, pp 1, dp 8, ZeRO 0: every GPU steps all P parameters). */
static double optimizer_time(struct fixture *f)
{
	struct run_result r;

	run(f, 0, 0, 1e12, &r);
	return r.part_s[EXEC_OPTIMIZER];
}

Test(train, optimizer_step_passes)
{
	struct fixture f;
	double bw = 3.35e12 * 0.88, P, fused, t;

	fixture_gpt(&f, 2, 1024, 16, 1024, 1024, 1, 8, 1, 1, 1);
	f.gpu.kernel_launch_s = 0;
	f.gpu.multi_tensor_efficiency = 0.5;
	P = footprint_model_params(&f.job);
	/* Fused update alone (fp32 grads G = 4, master M = 4, Adam states
	 * S = 8): read G + M + S = 16, write M + S = 12: 28 B per parameter
	 * at half the 2.948 TB/s stream: 28 P / 1.474e12. */
	fused = optimizer_time(&f);
	cr_assert_float_eq(fused, 28 * P / (bw * 0.5), fused * 1e-6);
	/* Megatron's passes: fp16 unscale (r G, w G: 8), norm (r G: 4),
	 * update (28), copy to 16-bit weights (r M 4, w W 2: 6) in multi-
	 * tensor kernels, and the zeroed buffer (w G: 4) at the stream rate:
	 * (8 + 4 + 28 + 6) P / 1.474e12 + 4 P / 2.948e12. */
	f.fw.optimizer_step.grad_unscale = 1;
	f.fw.optimizer_step.grad_norm = 1;
	f.fw.optimizer_step.copy_params = 1;
	f.fw.optimizer_step.zero_grad = 1;
	f.job.training.dtype = DTYPE_FP16;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 46 * P / (bw * 0.5) + 4 * P / bw, t * 1e-6);
	/* Unscaling is fp16's only: in bf16 it is gone (8 B fewer). */
	f.job.training.dtype = DTYPE_BF16;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 38 * P / (bw * 0.5) + 4 * P / bw, t * 1e-6);
	/* Composer's eager DecoupledAdamW loop instead of the fused update,
	 * nothing else: read 2M + 9s + 2G = 52, write 2M + 7s = 36 (s = 4 B
	 * a moment) at the stream rate: 88 P / 2.948e12, 1.57 x the fused. */
	memset(&f.fw.optimizer_step, 0, sizeof(f.fw.optimizer_step));
	f.fw.optimizer_step.update = OPT_UPDATE_EAGER;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 88 * P / bw, t * 1e-6);
	/* torch.optim.Adam's default foreach path (_multi_tensor_adam), 7
	 * multi-tensor passes: lerp and addcmul (r s + G = 8, w s = 4, each
	 * 12), mul, sqrt, div, add (r s, w s: 8 each, 32), addcdiv (r M +
	 * 2 s = 12, w M = 4: 16): 24 + 32 + 16 = 72 B per parameter at half
	 * the stream: 72 P / 1.474e12, 2.57 x the fused update. */
	f.fw.optimizer_step.update = OPT_UPDATE_FOREACH;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 72 * P / (bw * 0.5), t * 1e-6);
	/* torch.optim.AdamW's (weight_decay != 0) decoupled decay before
	 * them, _foreach_mul_(params, 1 - lr wd): an 8th pass reading and
	 * writing the fp32 master M (4 + 4 = 8 B): 80 P / 1.474e12. */
	f.fw.optimizer_step.decoupled_decay = 1;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 80 * P / (bw * 0.5), t * 1e-6);
	/* The same AdamW switched to the fused kernel (torchtitan's
	 * optimizer.implementation fused) decays inside its one pass: the
	 * fused update's 28 B per parameter, no 8th pass and no error. */
	f.fw.optimizer_step.update = OPT_UPDATE_FUSED;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 28 * P / (bw * 0.5), t * 1e-6);
}

Test(train, zero_grad_clears_the_whole_buffer_below_zero3)
{
	struct fixture f;
	double bw = 3.35e12 * 0.88, P, t;

	/* dp 8 (tp 1, pp 1 on one node), the fused update (fp32 G = 4,
	 * M = 4, S = 8: read 16, write 12 = 28 B per parameter at half the
	 * 2.948 TB/s stream) and zero_grad (w G = 4 B at the stream rate);
	 * the engine rounds the step to 1 ns. 8 layers of h 2048 (P ~ 400 M)
	 * so that even the shard's 4 P / 8 ~ 200 MB of gradients is far
	 * past the 50 MB L2 (a smaller buffer would be zeroed in cache). */
	fixture_gpt(&f, 8, 2048, 16, 1024, 1024, 1, 8, 1, 1, 1);
	f.gpu.kernel_launch_s = 0;
	f.gpu.multi_tensor_efficiency = 0.5;
	f.fw.optimizer_step.zero_grad = 1;
	P = footprint_model_params(&f.job);
	/* ZeRO 1: the update steps the shard P / 8, but Megatron-Core's
	 * grad buffer holds all P gradients and zero_grad_buffer zeroes all
	 * of it: 28 (P / 8) / 1.474e12 + 4 P / 2.948e12. */
	f.job.training.zero_stage = 1;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 28 * (P / 8) / (bw * 0.5) + 4 * P / bw,
			   1e-9);
	/* ZeRO 2 in Megatron-Core DDP (grad_buffer_full): the same
	 * buffer. */
	f.job.training.zero_stage = 2;
	f.fw.grad_buffer_full = 1;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 28 * (P / 8) / (bw * 0.5) + 4 * P / bw,
			   1e-9);
	/* ZeRO 2 that frees the gradients outside the shard (Megatron-FSDP
	 * optim_grads): zeroes the shard's only, 4 (P / 8) / 2.948e12. */
	f.fw.grad_buffer_full = 0;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 28 * (P / 8) / (bw * 0.5) + 4 * (P / 8) / bw,
			   1e-9);
	/* ZeRO 3 (FSDP): only the shard's gradients, 4 (P / 8) / 2.948e12. */
	f.job.training.zero_stage = 3;
	t = optimizer_time(&f);
	cr_assert_float_eq(t, 28 * (P / 8) / (bw * 0.5) + 4 * (P / 8) / bw,
			   1e-9);
}

Test(train, straggler_delays_the_step_by_its_extra_compute)
{
	struct fixture f;
	struct run_result fast, slow;
	double c, expect;
	/* 4 layers forward and backward, embedding and head, kernels only:
	 * at most 1 ns of rounding per kernel (each is rounded on its own,
	 * scaled or not). */
	double tol = 4 * LAYER_MAX_OPS * 1e-9 * 3;

	/* tp 8 on one node, dp 1; collectives take no time, so each rank's
	 * compute stream runs its kernels back to back unless it waits for
	 * a late peer at a TP rendezvous. Without a straggler no rank ever
	 * waits: T = C + the rest (optimizer, host), C one rank's kernel
	 * time (the final rank's compute_s). With GPU 5 at 1.5 x, GPU 5
	 * never waits (every peer is faster) and every peer waits for it at
	 * each rendezvous, so the step ends when GPU 5's chain does:
	 * T' = 1.5 C + the rest = T + (1.5 - 1) C. (With time-consuming
	 * collectives the backward's weight-gradient GEMMs overlap them and
	 * the difference is smaller: the critical path decides.) */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 1, 8, 1, 8, 1);
	run(&f, 1, 0, 0, &fast);
	f.job.straggler = (struct straggler_spec){ 5, 1.5 };
	run(&f, 1, 0, 0, &slow);
	c = fast.part_s[EXEC_COMPUTE];
	expect = fast.step_s + 0.5 * c;
	cr_assert_float_eq(slow.step_s, expect, tol, "step %.9f s with the "
			   "straggler, %.9f s predicted (%.9f s + 0.5 x %.9f s)",
			   slow.step_s, expect, fast.step_s, c);
	/* The slow GPU's compute is the final rank's now: 1.5 C. */
	cr_assert_float_eq(slow.part_s[EXEC_COMPUTE], 1.5 * c, tol);
	/* Without a straggler (gpu -1) nothing changes. */
	f.job.straggler = (struct straggler_spec){ -1, 1.5 };
	run(&f, 1, 0, 0, &slow);
	cr_assert_eq(slow.step_s, fast.step_s);
}

Test(train, fp8_amax_reductions_block_every_chunk_pass)
{
	struct fixture f;
	struct run_result off, on, full;
	double fwd, bwd;

	/* 8 layers, one node of 8 GPUs, tp 1, pp 1, dp 8, gbs 16 of b 1: 2
	 * microbatches a replica, so 2 forward and 2 backward chunk passes.
	 * fp8 with Transformer Engine's delayed scaling reduced over the
	 * stage (all 8 GPUs): after each pass an all-reduce of the chunk's
	 * amaxes on the compute stream, alpha 5 us + 2 (7/8) bytes / 100
	 * GB/s, then the scale update kernel (launch 4 us, a few KB: under
	 * 2 ns): forward 3 x 4 x 8 = 96 amaxes = 384 B, backward 2 x 4 x 8
	 * = 64 = 256 B. Every pass but the last waits for its reduction;
	 * the last backward's runs beside the gradient all-reduce (8 layers
	 * of 12.6 M parameters in fp32 on the dp stream, milliseconds) the
	 * optimizer waits for. The step grows by 2 (5 + 4) us + (5 + 4) us
	 * plus the bytes: 27.018 us. */
	fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 16, 1, 1, 1);
	f.job.training.dtype = DTYPE_FP8;
	run(&f, 0, 5e-6, 100e9, &off);
	f.fw.fp8_amax_reduction = AMAX_STAGE;
	run(&f, 0, 5e-6, 100e9, &on);
	fwd = 5e-6 + 1.75 * 384 / 100e9 + 4e-6;
	bwd = 5e-6 + 1.75 * 256 / 100e9 + 4e-6;
	cr_assert_float_eq(on.step_s - off.step_s, 2 * fwd + bwd, 5e-9,
			   "step %.9g s without, %.9g s with", off.step_s,
			   on.step_s);
	/* Simulating every GPU gives the same step. */
	run(&f, 1, 5e-6, 100e9, &full);
	cr_assert_float_eq(full.step_s, on.step_s, 1e-12);
	/* tp_cp (Megatron-Core 0.8) at tp 1, cp 1: a group of one GPU, no
	 * reduction; nor in bf16. */
	f.fw.fp8_amax_reduction = AMAX_TP_CP;
	run(&f, 0, 5e-6, 100e9, &on);
	cr_assert_eq(on.step_s, off.step_s);
}

/* The units a pipeline send/recv holds (the share of the GPU's 132 SMs
 * its compute loses while it runs): NCCL's p2p channels per peer, 32
 * between GPUs of one node (NVLink: 2 x links), 2 to a network peer. */
static double pp_p2p_share(int64_t gpus_per_node)
{
	static struct coll_lib_spec lib;
	struct fixture f;
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	double share = -1;
	uint32_t i;

	lib.kernel_units = (struct coll_units_spec){ .scale_up = 24,
		.scale_out = 16, .p2p = 2, .p2p_scale_up = 32 };
	pipeline_job(&f, 16, SCHED_1F1B);
	f.sys.collectives = &lib;
	f.sys.gpus_per_node = gpus_per_node;
	diag_init(&d, stderr);
	cr_assert_eq(train_check(&f.job, &d), 0);
	p = train_build(&f.job, 0, &plan, &d);
	cr_assert_not_null(p);
	for (i = 0; i < p->ncolls; i++)
		if (coll_desc_of(p, i)->op == COLL_SENDRECV)
			share = coll_desc_of(p, i)->sm_share;
	prog_free(p);
	return share;
}

Test(train, pipeline_p2p_units_by_where_the_peer_is)
{
	/* 8 GPUs a node: stages 0-3 and their peers in one node, 32 / 132
	 * = 0.2424; one GPU a node: every peer over the network, 2 / 132
	 * = 0.01515. */
	cr_assert_float_eq(pp_p2p_share(8), 32.0 / 132, 1e-12);
	cr_assert_float_eq(pp_p2p_share(1), 2.0 / 132, 1e-12);
}

/* Gradient reductions ("dp_grad_reduce") on each simulated rank of p
 * into n[rank] (at most 8 ranks). */
static void reductions_per_rank(const struct prog *p, int n[8])
{
	uint32_t t;
	enum task_cat cat;

	memset(n, 0, 8 * sizeof(*n));
	for (t = 0; t < prog_tasks(p); t++)
		if (strcmp(exec_task_name(p, t, &cat), "dp_grad_reduce") == 0) {
			cr_assert_lt(exec_task_rank(p, t), 8);
			n[exec_task_rank(p, t)]++;
		}
}

/* The sorted distinct non-zero counts of n[0..7] into d; how many. */
static int distinct(const int n[8], int d[8])
{
	int i, j, k = 0;

	for (i = 0; i < 8; i++) {
		if (n[i] == 0)
			continue;
		for (j = 0; j < k && d[j] != n[i]; j++)
			;
		if (j == k)
			d[k++] = n[i];
	}
	if (k == 2 && d[0] > d[1]) {
		j = d[0];
		d[0] = d[1];
		d[1] = j;
	}
	return k;
}

Test(train, later_pipeline_ranks_reduce_one_bucket)
{
	struct fixture f;
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	int n[8], c[8], flag;

	/* Megatron-Core DDP (distributed_data_parallel.py): bucket_size =
	 * max(40e6, 1e6 x dp), dp without CP, for the dense and the expert
	 * buffers alike; None (one bucket) on pipeline ranks > 0. dp 64 and
	 * cp 2: max(40e6, 64e6) = 64e6 on rank 0 (not 128e6); INFINITY on
	 * rank 1 with the switch, 64e6 without; dp 16: 40e6. */
	fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 16, 1, 1, 2);
	f.fw.bucket_params_per_dp = 1000000;
	f.fw.later_stages_one_bucket = 1;
	f.job.parallelism.dp = 64;
	f.job.parallelism.cp = 2;
	cr_assert_eq(train_bucket_size(&f.job, 0), 64e6);
	cr_assert(isinf(train_bucket_size(&f.job, 1)));
	f.fw.later_stages_one_bucket = 0;
	cr_assert_eq(train_bucket_size(&f.job, 1), 64e6);
	f.job.parallelism.dp = 16;
	cr_assert_eq(train_bucket_size(&f.job, 1), 40e6);

	/* 8 layers of h 1024 (12 h^2 = 12.6e6 parameters each), vocab 1024
	 * (1.05e6 for the embedding and for the head), pp 2 on one node (dp
	 * 4), ZeRO-1, buckets of at least 4e6: pipeline rank 0 (layers 3, 2,
	 * 1, 0 and the embedding, backward order) has a bucket per layer and
	 * the embedding's, 5; rank 1 (head, layers 7 .. 4) has the head with
	 * layer 7, then 6, 5, 4: 4, or 1 when later ranks keep one bucket. */
	fixture_gpt(&f, 8, 1024, 16, 1024, 1024, 1, 16, 1, 1, 2);
	f.job.training.zero_stage = 1;
	f.fw.bucket_params = 4000000;
	f.fw.bucket_params_per_dp = 0;
	diag_init(&d, stderr);
	for (flag = 0; flag < 2; flag++) {
		f.fw.later_stages_one_bucket = flag;
		cr_assert_eq(train_check(&f.job, &d), 0);
		p = train_build(&f.job, 0, &plan, &d);
		cr_assert_not_null(p);
		reductions_per_rank(p, n);
		cr_assert_eq(distinct(n, c), 2);
		cr_assert_eq(c[0], flag ? 1 : 4, "rank 1: %d buckets", c[0]);
		cr_assert_eq(c[1], 5, "rank 0: %d buckets", c[1]);
		prog_free(p);
	}
}

/* Tasks named `name` on each simulated rank of p into n[rank] (at most
 * 8 ranks). */
static void named_per_rank(const struct prog *p, const char *name, int n[8])
{
	uint32_t t;
	enum task_cat cat;

	memset(n, 0, 8 * sizeof(*n));
	for (t = 0; t < prog_tasks(p); t++)
		if (strcmp(exec_task_name(p, t, &cat), name) == 0) {
			cr_assert_lt(exec_task_rank(p, t), 8);
			n[exec_task_rank(p, t)]++;
		}
}

/* The smallest and largest non-zero counts of n[0..7]. */
static void count_range(const int n[8], int *lo, int *hi)
{
	int i;

	*lo = 1 << 30;
	*hi = 0;
	for (i = 0; i < 8; i++)
		if (n[i] > 0) {
			*lo = n[i] < *lo ? n[i] : *lo;
			*hi = n[i] > *hi ? n[i] : *hi;
		}
}

static void fsdp_counts(struct fixture *f, int ag[2], int rs[2])
{
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	int n[8];

	diag_init(&d, stderr);
	p = train_build(&f->job, 0, &plan, &d);
	cr_assert_not_null(p);
	named_per_rank(p, "fsdp_param_allgather", n);
	count_range(n, &ag[0], &ag[1]);
	named_per_rank(p, "fsdp_grad_reducescatter", n);
	count_range(n, &rs[0], &rs[1]);
	prog_free(p);
}

/* The FSDP pipeline of the two tests below: 8 layers over pp 4 (1F1B),
 * ZeRO-3, 16 microbatches a replica in 4 runs of 4 (local batch 4). */
static void fsdp_pipeline_job(struct fixture *f)
{
	pipeline_job(f, 32, SCHED_1F1B);
	f->job.training.zero_stage = 3;
	f->job.training.local_batch_size = 4;
}

Test(train, fsdp_pp_no_sync_gathers_and_reduces_once_a_run)
{
	struct fixture f;
	int ag[2], rs[2];

	/* 8 layers over pp 4: 2 a stage, plus the embedding on the first
	 * and the head on the last: 2 or 3 FSDP units a rank; 16
	 * microbatches a replica in 4 runs of 4 (local batch 4). Per-
	 * microbatch FSDP: every unit gathered before each forward and
	 * backward, 2 x 16 = 32 times (64 or 96 a rank), reduced after each
	 * backward, 16 times (32 or 48). torch pipelining's no-sync: once a
	 * run each, 4 times (8 or 12 a rank for both). */
	fsdp_pipeline_job(&f);
	fsdp_counts(&f, ag, rs);
	cr_assert(ag[0] == 64 && ag[1] == 96, "gathers %d..%d", ag[0], ag[1]);
	cr_assert(rs[0] == 32 && rs[1] == 48, "reduces %d..%d", rs[0], rs[1]);
	f.fw.fsdp_pp_no_sync = 1;
	fsdp_counts(&f, ag, rs);
	cr_assert(ag[0] == 8 && ag[1] == 12, "gathers %d..%d", ag[0], ag[1]);
	cr_assert(rs[0] == 8 && rs[1] == 12, "reduces %d..%d", rs[0], rs[1]);
}

Test(train, fsdp_without_reshard_after_forward_gathers_after_backwards)
{
	struct fixture f;
	int ag[2], rs[2];

	/* The job of fsdp_pp_no_sync_gathers_and_reduces_once_a_run (1F1B,
	 * one chunk a rank, 16 microbatches) without reshard after forward
	 * (AutoModel's MoE parallelizer) and without no-sync: a unit is
	 * resharded only after a backward, so an action gathers only when
	 * it is the step's first on the rank or follows a backward. Every
	 * backward but the step's last is followed by an action: 1 + 15 =
	 * 16 gathers a unit (32 or 48 a rank, was 2 x 16 = 32 a unit:
	 * 64 or 96); reductions unchanged, one a backward (32 or 48). */
	fsdp_pipeline_job(&f);
	f.fw.fsdp_reshard_after_forward = 0;
	fsdp_counts(&f, ag, rs);
	cr_assert(ag[0] == 32 && ag[1] == 48, "gathers %d..%d", ag[0], ag[1]);
	cr_assert(rs[0] == 32 && rs[1] == 48, "reduces %d..%d", rs[0], rs[1]);
}

Test(train, fsdp_next_action_waits_for_the_backwards_reductions)
{
	struct fixture f;
	struct mockcomm_run mr;
	struct task_info info;
	enum task_cat cat;
	double rs_end = 0, bwd_end = 0, fwd_start = 1e30, rs_start[64];
	uint32_t t, n = 0, k;

	/* dp 8, ZeRO-3, pp 1, 2 microbatches (gbs 32 / dp 8 / mbs 2): F0
	 * B0 F1 B1. FSDP's root post-backward callback makes the compute
	 * stream wait for every reduce-scatter of B0 (6 units: 4 layers,
	 * embedding, head) before F1: F1's first compute starts at or
	 * after the last of them ends. At 1 GB/s the layers' reductions
	 * (12 h^2 = 12.6e6 parameters at 4 B: 50 MB, 7/8 of it sent, ~44 ms
	 * each) queue on the dp stream and end well after B0's compute
	 * (checked: > 1 ms after); without
	 * the wait F1 (its embedding gathered on its own stream) starts
	 * under them. */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 2, 32, 1, 1, 1);
	f.job.training.zero_stage = 3;
	mockcomm_train_run(&mr, &f.job, 0, 5e-6, 1e9);
	for (t = 0; t < prog_tasks(mr.p) && n < 64; t++)
		if (exec_task_rank(mr.p, t) == 0 &&
		    strcmp(exec_task_name(mr.p, t, &cat),
			   "fsdp_grad_reducescatter") == 0)
			rs_start[n++] = exec_task_start_s(mr.p, t);
	cr_assert_eq(n, 12);
	for (t = 0; t < prog_tasks(mr.p); t++) {
		if (exec_task_rank(mr.p, t) != 0)
			continue;
		exec_task_info(mr.p, t, &info);
		if (strcmp(exec_task_name(mr.p, t, &cat),
			   "fsdp_grad_reducescatter") == 0) {
			/* B0's: the 6 earliest of the 12 */
			int before = 0;

			for (k = 0; k < n; k++)
				before += rs_start[k] < exec_task_start_s(mr.p, t);
			if (before < 6 && exec_task_end_s(mr.p, t) > rs_end)
				rs_end = exec_task_end_s(mr.p, t);
			continue;
		}
		if (cat != TASK_COMPUTE)
			continue;
		if (info.microbatch == 0 && info.phase == TASK_PHASE_BWD &&
		    exec_task_end_s(mr.p, t) > bwd_end)
			bwd_end = exec_task_end_s(mr.p, t);
		if (info.microbatch == 1 && info.phase == TASK_PHASE_FWD &&
		    exec_task_start_s(mr.p, t) < fwd_start)
			fwd_start = exec_task_start_s(mr.p, t);
	}
	cr_assert_gt(rs_end, bwd_end + 1e-3, "B0 ends %g s, its reductions %g s",
		     bwd_end, rs_end);
	cr_assert_geq(fwd_start, rs_end - 1e-12, "F1 starts %g s, B0's "
		      "reductions end %g s", fwd_start, rs_end);
	mockcomm_train_release(&mr);
}

Test(train, fsdp_pp_no_sync_needs_a_pipeline)
{
	struct fixture f;
	struct run_result off, on;
	int ag[2], rs[2];

	/* dp 8, ZeRO-3, no pipeline (AutoModel's pp 1 path runs no
	 * schedule): the flag changes nothing, 4 layers + embedding + head
	 * = 6 units, 2 x 2 microbatches (gbs 32 / dp 8 / mbs 2) = 4
	 * gathers each, 24 a rank, and 2 reductions each, 12. */
	fixture_gpt(&f, 4, 1024, 16, 1024, 1024, 2, 32, 1, 1, 1);
	f.job.training.zero_stage = 3;
	run(&f, 0, 5e-6, 100e9, &off);
	f.fw.fsdp_pp_no_sync = 1;
	run(&f, 0, 5e-6, 100e9, &on);
	cr_assert_float_eq(on.step_s, off.step_s, 1e-12);
	fsdp_counts(&f, ag, rs);
	cr_assert(ag[0] == 24 && ag[1] == 24, "gathers %d..%d", ag[0], ag[1]);
	cr_assert(rs[0] == 12 && rs[1] == 12, "reduces %d..%d", rs[0], rs[1]);
}

/* The step of f's job with free communication, and the forward compute
 * of simulated rank 0 (pipeline rank 0), both in s. */
static void step_and_forward(struct fixture *f, double *step_s,
			     double *fwd_s)
{
	struct mockcomm_run mr;
	struct task_info ti;
	struct prog *p;
	uint32_t t;

	mockcomm_train_run(&mr, &f->job, 0, 0, 0);
	p = mr.p;
	*step_s = mr.er.step_s;
	*fwd_s = 0;
	for (t = 0; t < prog_tasks(p); t++) {
		exec_task_info(p, t, &ti);
		if (exec_task_rank(p, t) == 0 && ti.cat == TASK_COMPUTE &&
		    ti.phase == TASK_PHASE_FWD)
			*fwd_s += exec_task_dur_s(p, t);
	}
	mockcomm_train_release(&mr);
}

Test(train, lockstep_interleaved_waits_for_each_time_step)
{
	struct fixture f;
	double flow, lock, fwd, f1;

	/* pp 2, vpp 2 (4 virtual stages of 2 layers, the tiny embedding
	 * and head: nearly equal chunks, forward f, backward b), m = 8 /
	 * (mbs 1 x dp 4) = 2, free communication. torch's table
	 * (_get_1f1b_rank_ops): rank 0 F00 F01 F20 F21 at steps 0-3, B20
	 * 7, B21 9, B00 11, B01 13; rank 1 F10 1, F11 2, F30 4, B30 5, F31
	 * 6, B31 7, B10 9, B11 11 (Fsm: stage s, microbatch m). Dataflow:
	 * rank 1 runs F30 at 3f, when F20's output arrives, and the step
	 * ends with rank 0's B01 at 5f + 5b. Lock step: F30 at step 4
	 * waits for step 3's batch, rank 0's F21 send, so it starts at 4f;
	 * everything after it shifts by f (B31's and B20's grads meet in
	 * step 7's batch at 6f + 2b, then two backwards a rank at 6f + 3b,
	 * 6f + 4b, and B01 ends at 6f + 5b): the step is longer by one
	 * chunk forward, f = rank 0's forward compute / (v m = 4). */
	fixture_gpt(&f, 8, 4096, 32, 128, 2048, 1, 8, 1, 1, 2);
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	f.job.parallelism.vpp = 2;
	step_and_forward(&f, &flow, &fwd);
	f.fw.pp_lockstep = 1;
	step_and_forward(&f, &lock, &f1);
	cr_assert_float_eq(f1, fwd, 1e-12 * fwd);
	cr_assert(fabs((lock - flow) - fwd / 4) < 0.02 * fwd / 4,
		  "lock step %.6f s, dataflow %.6f s, f %.6f s", lock, flow,
		  fwd / 4);
	/* 1F1B without interleaving is torch's PipelineScheduleSingle:
	 * the flag changes nothing */
	f.job.parallelism.schedule = SCHED_1F1B;
	f.job.parallelism.vpp = 1;
	f.fw.pp_lockstep = 0;
	step_and_forward(&f, &flow, &fwd);
	f.fw.pp_lockstep = 1;
	step_and_forward(&f, &lock, &f1);
	cr_assert_float_eq(lock, flow, 1e-12 * flow);
}

/* For each rank of the pipeline job f (pp 4, so ranks 0-3), into
 * next[r] / prev[r] a bit per stream its non-wrap transfers with rank
 * r + 1 / r - 1 use; fails if a transfer's two ends are on different
 * streams. */
static void pp_streams_by_peer(struct fixture *f, uint32_t next[4],
			       uint32_t prev[4])
{
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	uint32_t t, u, n = 0;
	enum task_cat cat;

	memset(next, 0, 4 * sizeof(*next));
	memset(prev, 0, 4 * sizeof(*prev));
	diag_init(&d, stderr);
	cr_assert_eq(train_check(&f->job, &d), 0);
	p = train_build(&f->job, 0, &plan, &d);
	cr_assert_not_null(p);
	cr_assert_eq(plan.lay.nranks, 4);
	for (t = 0; t + 1 < prog_tasks(p); t++) {
		const char *name = exec_task_name(p, t, &cat);
		uint32_t a, b, s;

		if (strncmp(name, "pp_send_", 8) != 0)
			continue;
		/* the sender's end, then the receiver's (prog_coll) */
		u = t + 1;
		cr_assert_eq(exec_task_coll_id(p, t), exec_task_coll_id(p, u));
		a = exec_task_rank(p, t);
		b = exec_task_rank(p, u);
		s = exec_task_stream(p, t);
		cr_assert_eq(exec_task_stream(p, u), s, "%s: two streams", name);
		t = u;
		n++;
		if (a + 1 == b || b + 1 == a) {
			uint32_t lo = a < b ? a : b;

			next[lo] |= 1u << s;
			prev[lo + 1] |= 1u << s;
		}
	}
	cr_assert_gt(n, 0);
	prog_free(p);
}

Test(train, interleaved_transfers_queue_per_neighbour)
{
	struct fixture f;
	uint32_t next[4], prev[4], r;

	/* Megatron-Core's interleaved schedule issues each transfer as its
	 * own isend / irecv (overlap_p2p_comm), which ProcessGroupNCCL runs
	 * on a stream per pair of ranks: rank r's transfers with r - 1 and
	 * with r + 1 never share a stream (the ranks with both: 1 and 2). */
	pipeline_job(&f, 16, SCHED_INTERLEAVED);
	f.job.parallelism.vpp = 2;
	pp_streams_by_peer(&f, next, prev);
	for (r = 1; r < 3; r++) {
		cr_assert_neq(next[r], 0);
		cr_assert_neq(prev[r], 0);
		cr_assert_eq(next[r] & prev[r], 0, "rank %u: %#x %#x", r,
			     next[r], prev[r]);
	}
	/* 1F1B batches them (batch_isend_irecv, one communicator): one
	 * stream per direction, shared by both neighbours */
	pipeline_job(&f, 16, SCHED_1F1B);
	pp_streams_by_peer(&f, next, prev);
	for (r = 1; r < 3; r++)
		cr_assert_neq(next[r] & prev[r], 0, "rank %u", r);
}
