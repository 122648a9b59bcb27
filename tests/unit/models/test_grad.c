/*
 * test_grad.c - the work on a gradient bucket before its reduction
 * (src/models/train_grad.c): Megatron-Core DDP's NaN check (a norm of the
 * bucket, two host syncs) and its pre-scaling.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "engine/sim.h"
#include "fixture.h"
#include "gpu/gpu.h"
#include "mockcomm.h"
#include "models/footprint.h"
#include "models/train.h"
#include "models/train_impl.h"

/* Builds and runs f's job with an alpha-beta comm backend; its step time
 * into *step (if not NULL), and of the tasks named `name` (if not NULL)
 * on rank 0 how many (the return) and their total time into *sum. */
static int run(struct fixture *f, double *step, const char *name,
	       double *sum)
{
	struct mockcomm_run mr;
	struct prog *p;
	enum task_cat cat;
	uint32_t t;
	int n = 0;

	mockcomm_train_run(&mr, &f->job, 0, 5e-6, 1e11);
	p = mr.p;
	if (step)
		*step = mr.er.step_s;
	if (sum)
		*sum = 0;
	for (t = 0; name && t < prog_tasks(p); t++)
		if (exec_task_rank(p, t) == 0 &&
		    strcmp(exec_task_name(p, t, &cat), name) == 0) {
			n++;
			*sum += exec_task_dur_s(p, t);
		}
	mockcomm_train_release(&mr);
	return n;
}

static double step_s(struct fixture *f)
{
	double s;

	run(f, &s, NULL, NULL);
	return s;
}

static int named(struct fixture *f, const char *name, double *sum)
{
	return run(f, NULL, name, sum);
}

/* 8 layers of h 1024, vocabulary 1024, s 1024, tp 1, pp 1: dp 8 on one
 * node, ZeRO-1, every parameter of a GPU in one bucket (bucket_params
 * 1e12), fp32 gradients (G = 4 B). */
static void one_bucket_job(struct fixture *f)
{
	fixture_gpt(f, 8, 1024, 16, 1024, 1024, 1, 16, 1, 1, 1);
	f->job.training.zero_stage = 1;
	f->fw.bucket_params = 1000000000000;
}

Test(grad, scaling_factor_as_megatron_core_ddp)
{
	struct fixture f;

	/* distributed_data_parallel.py: without average_in_collective both
	 * kinds by 1/(dp cp) = 1/16 (dp 8, cp 2); with it the dense 1 and
	 * the routed experts' edp/(dp cp) = 4/16. */
	one_bucket_job(&f);
	f.job.parallelism.dp = 8;
	f.job.parallelism.cp = 2;
	f.job.parallelism.edp = 4;
	f.fw.average_in_collective = 0;
	cr_assert_float_eq(train_grad_scale(&f.job, 0), 1.0 / 16, 1e-15);
	cr_assert_float_eq(train_grad_scale(&f.job, 1), 1.0 / 16, 1e-15);
	f.fw.average_in_collective = 1;
	cr_assert_eq(train_grad_scale(&f.job, 0), 1.0);
	cr_assert_float_eq(train_grad_scale(&f.job, 1), 0.25, 1e-15);
}

Test(grad, norm_and_scaling_read_the_bucket)
{
	struct fixture f;
	double P, G = 4, sum, norm_s, scale_s;

	one_bucket_job(&f);
	/* P: the footprint's count, about 8 x 12 h^2 + 2 V h + s h (learned
	 * positions) = 100.66e6 + 2.10e6 + 1.05e6 = 103.8e6, biases and
	 * norms the rest */
	P = footprint_model_params(&f.job);
	cr_assert(fabs(P / 103.8e6 - 1) < 0.001, "P %g", P);
	/* norm: read G P bytes, 2 FLOPs each; scaling: read and write them */
	norm_s = gpu_memory_op(&f.gpu, G * P, 0, 2 * P, G * P).time_s;
	scale_s = gpu_memory_op(&f.gpu, G * P, G * P, P, G * P).time_s;

	/* the schema defaults: neither */
	cr_assert_eq(named(&f, "grad_nan_check", &sum), 0);
	cr_assert_eq(named(&f, "grad_prescale", &sum), 0);
	/* the check: one norm per bucket, no scaling (dense, averaged) */
	f.fw.grad_nan_check = 1;
	cr_assert_eq(named(&f, "grad_nan_check", &sum), 1);
	cr_assert_float_eq(sum, norm_s, 1e-9);	/* task times are whole ns */
	cr_assert_eq(named(&f, "grad_prescale", &sum), 0);
	/* without averaging in the collective: the 1/8 scaling too */
	f.fw.average_in_collective = 0;
	cr_assert_eq(named(&f, "grad_prescale", &sum), 1);
	cr_assert_float_eq(sum, scale_s, 1e-9);
}

Test(grad, per_token_loss_scales_the_buffer_not_the_buckets)
{
	struct fixture f;
	struct parallel_spec par;
	double P, G = 4, sum, base_opt, scale_s;

	/* Megatron-Core calculate_per_token_loss (distributed_data_parallel.py,
	 * finalize_model_grads.py @ d98e8a64dd): gradient_scaling_factor 1
	 * for both kinds, whatever dp, cp and edp (here 1/16 and 4/16 without
	 * it), and one scale_gradients pass over the whole buffer before the
	 * optimizer step: the unsharded P (ZeRO-1 keeps grad_data for every
	 * parameter), read and written in fp32: 2 x 4 x 103.8e6 = 0.83 GB,
	 * where the distributed optimizer's own passes read only P / 8. */
	one_bucket_job(&f);
	f.fw.average_in_collective = 0;
	base_opt = 0;
	cr_assert_eq(named(&f, "optimizer", &base_opt), 1);
	cr_assert_eq(named(&f, "grad_prescale", &sum), 1);	/* 1/8 */
	f.fw.per_token_loss = 1;
	par = f.job.parallelism;
	f.job.parallelism.cp = 2;
	f.job.parallelism.edp = 4;
	cr_assert_eq(train_grad_scale(&f.job, 0), 1.0);
	cr_assert_eq(train_grad_scale(&f.job, 1), 1.0);
	f.job.parallelism = par;
	cr_assert_eq(named(&f, "grad_prescale", &sum), 0);
	P = footprint_model_params(&f.job);
	scale_s = gpu_memory_op(&f.gpu, G * P, G * P, P, G * P).time_s;
	cr_assert(scale_s > 0.8e9 / f.gpu.hbm.bandwidth_Bps,
		  "scale %g s for %g params", scale_s, P);
	cr_assert_eq(named(&f, "optimizer", &sum), 1);
	cr_assert_float_eq(sum - base_opt, scale_s, 1e-9,
			   "optimizer %g -> %g, scaling %g", base_opt, sum,
			   scale_s);
}

Test(grad, host_syncs_stall_the_step)
{
	struct fixture f;
	double base, with, norm_s, P, G = 4, op = 5e-6, sync = 1e-5;

	/* The bucket is complete at the end of the backward; the host is
	 * ahead of the GPU there (its ops cost 5 us, the layers' kernels far
	 * more), so the norm runs right after the backward: + norm_s. The
	 * host waits for it, issues isinf, waits again (op + 2 sync) and
	 * only then issues the reduction, which the optimizer waits for:
	 * the step grows by norm_s + op + 2 sync. */
	one_bucket_job(&f);
	f.fw.host.op_s = f.fw.host.bwd_op_s = op;
	f.fw.host.kernel_s = f.fw.host.collective_s = 2e-6;
	f.fw.host.sync_s = sync;
	P = footprint_model_params(&f.job);
	norm_s = gpu_memory_op(&f.gpu, G * P, 0, 2 * P, G * P).time_s;
	base = step_s(&f);
	f.fw.grad_nan_check = 1;
	with = step_s(&f);
	cr_assert_float_eq(with - base, norm_s + op + 2 * sync, 1e-9,
			   "delta %g, expected %g", with - base,
			   norm_s + op + 2 * sync);
}

Test(grad, estimate_counts_the_bucket_work)
{
	struct fixture f;
	struct train_estimate e;
	struct train_plan plan;
	struct diag d;
	struct prog *p;

	/* the check (a norm and two host tasks a bucket with the host
	 * model), the scaling (a kernel and a host task) */
	one_bucket_job(&f);
	f.fw.host.op_s = 5e-6;
	f.fw.host.sync_s = 1e-5;
	f.fw.grad_nan_check = 1;
	f.fw.average_in_collective = 0;
	f.fw.bucket_params = 4000000;	/* several buckets */
	diag_init(&d, stderr);
	cr_assert_eq(train_check(&f.job, &d), 0);
	cr_assert_eq(train_estimate(&f.job, 0, &e, &d), 0);
	p = train_build(&f.job, 0, &plan, &d);
	cr_assert_not_null(p);
	cr_assert_eq(e.tasks, (double)prog_tasks(p), "estimate %g, built %u",
		     e.tasks, prog_tasks(p));
	prog_free(p);
}

Test(grad, fp8_param_gather_gathers_the_layers_in_one_byte)
{
	struct fixture f;
	struct layer_dims d;
	struct mockcomm_run mr;
	double P, L, h = 1024, with_B, without_B, got[16], lay[16];
	int64_t split[1] = { 8 }, n;

	/* NeMo's MegatronDistributedFusedAdam gathers Float8Tensor (fp8)
	 * parameters as uint8, the rest in 16 bits. The fixture's layers:
	 * 12 h^2 linear weights and two LayerNorms (weight and bias, 4 h),
	 * no biases: L = 8 (12 h^2 + 4 h) = 100,696,064 of the P = 103.8e6
	 * (the embedding, learned positions, head and final norm keep 2 B).
	 * One bucket: 2 P bytes without, 2 (P - L) + L with the key. */
	one_bucket_job(&f);
	f.job.training.dtype = DTYPE_FP8;
	P = footprint_model_params(&f.job);
	L = 8 * (12 * h * h + 4 * h);
	layer_dims_from_job(&f.job, &d);
	n = train_buckets(&f.job, &d, split, 0, 1e12, 0, NULL, got, lay);
	cr_assert_eq(n, 1);
	cr_assert_float_eq(got[0], P, 1e-6 * P, "params %g of %g", got[0], P);
	cr_assert_float_eq(lay[0], L, 1e-6 * L, "layers' %g, want %g", lay[0], L);
	cr_assert_float_eq(train_gather_bytes(&f.job, &d, P, L), 2 * P, 1e-6);
	f.fw.fp8_param_gather = 1;
	cr_assert_float_eq(train_gather_bytes(&f.job, &d, P, L), 2 * P - L,
			   1e-6);
	/* the step's all-gather: its bytes scale by (2 P - L) / 2 P */
	mockcomm_train_run(&mr, &f.job, 0, 5e-6, 1e11);
	cr_assert_eq(mockcomm_rank_colls(mr.p, 0, "dp_param_allgather",
					 &with_B, NULL), 1);
	mockcomm_train_release(&mr);
	f.fw.fp8_param_gather = 0;
	mockcomm_train_run(&mr, &f.job, 0, 5e-6, 1e11);
	cr_assert_eq(mockcomm_rank_colls(mr.p, 0, "dp_param_allgather",
					 &without_B, NULL), 1);
	mockcomm_train_release(&mr);
	cr_assert_float_eq(with_B / without_B, (2 * P - L) / (2 * P), 1e-9,
			   "gather %g -> %g B", without_B, with_B);
	/* 16-bit jobs keep 2 B a parameter whatever the key says */
	f.fw.fp8_param_gather = 1;
	f.job.training.dtype = DTYPE_BF16;
	layer_dims_from_job(&f.job, &d);
	cr_assert_float_eq(train_gather_bytes(&f.job, &d, P, L), 2 * P, 1e-6);
}

/* The SM share of f's first data-parallel gradient reduction in the
 * program train_build makes of it. */
static double dp_reduce_share(struct fixture *f)
{
	struct train_plan plan;
	struct diag d;
	struct prog *p;
	double share = -1;
	uint32_t i;

	diag_init(&d, stderr);
	cr_assert_eq(train_check(&f->job, &d), 0);
	p = train_build(&f->job, 0, &plan, &d);
	cr_assert_not_null(p);
	for (i = 0; i < p->ncolls && share < 0; i++)
		if (coll_desc_of(p, i)->op == COLL_REDUCESCATTER)
			share = coll_desc_of(p, i)->sm_share;
	prog_free(p);
	return share;
}

Test(grad, dp_comm_max_units_caps_the_reductions_sms)
{
	static struct coll_lib_spec lib;
	struct fixture f;

	/* dp 8 in one node: NCCL's kernel_units scale_up 24 of 132 SMs;
	 * NeMo's nccl_communicator_config_path max_ctas 8 for the dp
	 * groups: 8 / 132; a cap above the library's (32) leaves 24. */
	lib.kernel_units = (struct coll_units_spec){ .scale_up = 24,
		.scale_out = 16, .p2p = 2, .p2p_scale_up = 32 };
	one_bucket_job(&f);
	f.sys.collectives = &lib;
	cr_assert_float_eq(dp_reduce_share(&f), 24.0 / 132, 1e-12);
	f.fw.dp_comm_max_units = 8;
	cr_assert_float_eq(dp_reduce_share(&f), 8.0 / 132, 1e-12);
	f.fw.dp_comm_max_units = 32;
	cr_assert_float_eq(dp_reduce_share(&f), 24.0 / 132, 1e-12);
}
