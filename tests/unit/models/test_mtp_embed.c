/*
 * test_mtp_embed.c - the word embedding the MTP modules' stage builds
 * (Megatron-Core GPTModel: pre_process or mtp_process) all-reduces its
 * gradient with the first stage's after the backward, as tied
 * embeddings do (finalize_model_grads _allreduce_word_embedding_grads:
 * share_embeddings_and_output_weights or mtp_num_layers; NVIDIA/
 * Megatron-LM core_v0.12.0 and d98e8a64), train_embed_peer.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/footprint.h"

/* Rank r's embedding_grad_allreduce tasks; the bytes of the last. */
static int allreduces(const struct prog *p, uint32_t r, double *bytes)
{
	return mockcomm_rank_colls(p, r, "embedding_grad_allreduce", bytes,
				   NULL);
}

static void mtp_job(struct fixture *f, int64_t mtp)
{
	/* 4 MoE layers (8 experts top-2, width 512), V 128, h 1024, s 2048,
	 * b 2, gbs 16 on 8 GPUs: tp 1, pp 2 (2 layers a stage), dp 4,
	 * ep 4; the MTP modules on the last stage */
	fixture_moe(f, 8, 2, 512, 4);
	f->job.parallelism.pp = 2;
	f->job.parallelism.dp = 4;
	f->model.num_nextn_predict_layers = 1;
	f->job.moe.mtp_layers = mtp;
}

Test(mtp_embed, mtp_stage_all_reduces_the_embedding_gradient)
{
	struct fixture f;
	struct mockcomm_run r;
	double b0 = 0, b1 = 0;

	mtp_job(&f, 1);
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	/* one all-reduce on rank 0 and one on rank 1 (the pair), of the
	 * whole V/t x h gradient in the fp32 main_grad: 128 x 1024 x 4 =
	 * 524288 bytes */
	cr_assert_eq(allreduces(r.p, 0, &b0), 1);
	cr_assert_eq(allreduces(r.p, 1, &b1), 1);
	fixture_assert_close(b0, 524288.0);
	fixture_assert_close(b1, 524288.0);
	mockcomm_train_release(&r);
	fixture_assert_estimate(&f.job, 0, "MTP on the last of pp 2");

	/* without MTP modules the last stage holds no embedding */
	mtp_job(&f, 0);
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(allreduces(r.p, 0, &b0), 0);
	cr_assert_eq(allreduces(r.p, 1, &b1), 0);
	mockcomm_train_release(&r);
}

/*
 * Repeated MTP passes (moe.mtp_repeated_layer, Megatron-Core
 * mtp_use_repeated_layer): 2 passes of the model's one module are
 * allowed (not past num_nextn_predict_layers 1, as two modules are), hold
 * the parameters of one module (the model's count as with mtp_layers 1),
 * and compute twice: the step's model FLOPs grow by one module's pass
 * over mtp_layers 1, as much as mtp_layers 1 adds over none.
 */
Test(mtp_embed, repeated_passes_compute_twice_hold_once)
{
	struct fixture f;
	struct mockcomm_run r;
	double p1, p2, f0, f1, f2;

	mtp_job(&f, 2);
	cr_assert(job_layout_check(&f.job, JOB_RULES_ALL, NULL, NULL) &
		  JR_BIT(JR_MTP), "two modules past the model's one");
	f.job.moe.mtp_repeated = 1;
	cr_assert_eq(job_layout_check(&f.job, JOB_RULES_ALL, NULL, NULL) &
		     JR_BIT(JR_MTP), 0);
	p2 = footprint_model_params(&f.job);
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	f2 = r.plan.model_flops;
	mockcomm_train_release(&r);
	mtp_job(&f, 1);
	p1 = footprint_model_params(&f.job);
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	f1 = r.plan.model_flops;
	mockcomm_train_release(&r);
	mtp_job(&f, 0);
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	f0 = r.plan.model_flops;
	mockcomm_train_release(&r);
	fixture_assert_close(p2, p1);
	fixture_assert_close(f2 - f1, f1 - f0);
	cr_assert_gt(f1, f0);
}

/* How many of rank r's tasks in p are called name. */
static int named(const struct prog *p, uint32_t r, const char *name)
{
	uint32_t i, n = prog_tasks(p);
	enum task_cat cat;
	int k = 0;

	for (i = 0; i < n; i++)
		k += exec_task_rank(p, i) == r &&
		     strcmp(exec_task_name(p, i, &cat), name) == 0;
	return k;
}

/*
 * One embedding weight looked up more than once in a rank's backward
 * (under Megatron's dense embedding gradient): autograd sums the
 * lookups' gradients in the weight's AccumulateGrad input buffer and the
 * DDP hook's main_grad.add_ runs once a microbatch, at the lookup whose
 * backward runs last (layer.c embed_bwd_dense, train_impl.c
 * mtp_bwd_block). mtp_job's 16 sequences of 2 over dp 4: 2 microbatches
 * a rank.
 * - pp 2, one module: the MTP stage's own embedding, one lookup: rank 1
 *   adds to main_grad twice (once a microbatch), sums nothing.
 * - pp 2, two repeated passes: rank 1 still adds twice, and sums the
 *   second pass's gradient into the first's twice.
 * - pp 1 (dp 8: 1 microbatch), one module: the first stage's lookup runs
 *   last: one main_grad add (embed_main_grad_add), the MTP's summed.
 */
Test(mtp_embed, one_main_grad_add_a_weight_a_backward)
{
	struct fixture f;
	struct mockcomm_run r;

	mtp_job(&f, 1);
	f.fw.embedding_grad_dense = 1;
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(named(r.p, 1, "mtp_embed_main_grad_add"), 2);
	cr_assert_eq(named(r.p, 1, "mtp_embed_grad_sum"), 0);
	mockcomm_train_release(&r);

	mtp_job(&f, 2);
	f.fw.embedding_grad_dense = 1;
	f.job.moe.mtp_repeated = 1;
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(named(r.p, 1, "mtp_embed_main_grad_add"), 2);
	cr_assert_eq(named(r.p, 1, "mtp_embed_grad_sum"), 2);
	mockcomm_train_release(&r);

	mtp_job(&f, 1);
	f.fw.embedding_grad_dense = 1;
	f.job.parallelism.pp = 1;
	f.job.parallelism.dp = 8;
	mockcomm_train_run(&r, &f.job, 0, 0, 0);
	cr_assert_eq(named(r.p, 0, "embed_main_grad_add"), 1);
	cr_assert_eq(named(r.p, 0, "mtp_embed_main_grad_add"), 0);
	cr_assert_eq(named(r.p, 0, "mtp_embed_grad_sum"), 1);
	mockcomm_train_release(&r);
	fixture_assert_estimate(&f.job, 0, "MTP on one stage");
}
