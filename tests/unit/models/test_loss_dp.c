/*
 * test_loss_dp.c - framework loss_dp_allreduce: the loss function
 * all-reduces each microbatch's [loss sum, token count] (2 fp32, 8 B)
 * over the data-parallel group in the last stage's forward, and the
 * loss's backward waits for it (Pai-Megatron-Patch @ 2b201af0
 * megatron_patch/template/helper.py loss_func ->
 * average_losses_across_data_parallel_group; AMD Primus @ e16b27b
 * pre_trainer.py loss_func; src/models/layer.c loss_dp_allreduce).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"

/* Rank r's loss_dp_allreduce tasks; the bytes and GPUs of the last. */
static int loss_allreduces(const struct prog *p, uint32_t r, double *bytes,
			   uint32_t *gpus)
{
	return mockcomm_rank_colls(p, r, "loss_dp_allreduce", bytes, gpus);
}

/* 2 layers, h 1024, 8 heads, V 128, s 2048, mbs 1, gbs 8 on 8 GPUs:
 * tp 4, pp pp, dp 8 / (4 pp); loss_dp_allreduce on or off */
static void loss_job(struct fixture *f, int64_t pp, int on)
{
	fixture_gpt(f, 2, 1024, 8, 128, 2048, 1, 8, 1, 4 / pp, pp);
	f->fw.loss_dp_allreduce = on;
}

/* pp 1, tp 4, dp 2: m = gbs / (mbs dp) = 8 / 2 = 4 microbatches, each
 * forward ending in one 8 B all-reduce of the 2 data-parallel GPUs that
 * the backward waits for. The mock gives it alpha + 2 (n - 1) / n x B /
 * beta = 1 ms + 2 x 1/2 x 8 / 8e8 s = 1.00000008 ms, on the critical
 * path every microbatch: the step grows by exactly 4 x 1.00000008 ms =
 * 4.00000032 ms. Off, no such task. */
Test(loss_dp, each_microbatch_waits_for_the_loss_all_reduce)
{
	struct fixture f;
	struct mockcomm_run r;
	double on_s, off_s, exp_s, bytes = 0;
	uint32_t gpus = 0;

	loss_job(&f, 1, 1);
	mockcomm_train_run(&r, &f.job, 0, 1e-3, 8e8);
	cr_assert_eq(loss_allreduces(r.p, 0, &bytes, &gpus), 4);
	fixture_assert_close(bytes, 8.0);
	cr_assert_eq(gpus, 2);
	mockcomm_train_release(&r);
	fixture_assert_estimate(&f.job, 0, "loss all-reduce, pp 1");
	on_s = mockcomm_train_step(&f.job, 0, 1e-3, 8e8, &exp_s);

	loss_job(&f, 1, 0);
	mockcomm_train_run(&r, &f.job, 0, 1e-3, 8e8);
	cr_assert_eq(loss_allreduces(r.p, 0, &bytes, &gpus), 0);
	mockcomm_train_release(&r);
	off_s = mockcomm_train_step(&f.job, 0, 1e-3, 8e8, &exp_s);
	cr_assert_float_eq(on_s - off_s, 4.00004e-3, 1e-12,
			   "on %.12f s, off %.12f s", on_s, off_s);
}

/* pp 2, tp 2, dp 2: only the last stage computes the loss, so rank 1
 * (stage 1) has the 4 all-reduces and rank 0 none; under CP the group
 * leaves the CP peers out; dp 1 has no group to reduce over (none). */
Test(loss_dp, only_the_last_stage_with_a_data_parallel_group)
{
	struct fixture f;
	struct mockcomm_run r;
	double bytes = 0;
	uint32_t gpus = 0;

	loss_job(&f, 2, 1);
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(loss_allreduces(r.p, 0, &bytes, &gpus), 0);
	cr_assert_eq(loss_allreduces(r.p, 1, &bytes, &gpus), 4);
	cr_assert_eq(gpus, 2);
	mockcomm_train_release(&r);
	fixture_assert_estimate(&f.job, 0, "loss all-reduce, pp 2");

	/* tp 2 cp 2 pp 1 on 8 GPUs: dp 2; the group is the data-parallel
	 * group without CP: 2 GPUs, not the 4 of dp x cp */
	fixture_gpt(&f, 2, 1024, 8, 128, 2048, 1, 8, 1, 2, 1);
	f.job.parallelism.cp = 2;
	f.job.parallelism.dp = 2;
	f.fw.loss_dp_allreduce = 1;
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(loss_allreduces(r.p, 0, &bytes, &gpus), 4);
	cr_assert_eq(gpus, 2);
	mockcomm_train_release(&r);

	/* 8 GPUs as tp 4 pp 2: dp 1 */
	fixture_gpt(&f, 2, 1024, 8, 128, 2048, 1, 8, 1, 4, 2);
	f.fw.loss_dp_allreduce = 1;
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(loss_allreduces(r.p, 1, &bytes, &gpus), 0);
	mockcomm_train_release(&r);
}
