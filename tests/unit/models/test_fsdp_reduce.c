/*
 * test_fsdp_reduce.c - FSDP2's reduce-scatters in the step program
 * (train_dp.c, framework fsdp_reduce_one_in_flight): the routed experts'
 * own FSDP unit reduces when their backward ends, and each post_backward
 * waits on the compute stream for the reduce-scatter issued before.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"

/* The experts' reduce-scatters of rank r (fsdp_grad_reducescatter over
 * the edp group: its 2 GPUs against the dense group's 8), and of those
 * the ones starting when a backward expert_fc1_wgrad (the unit's last
 * expert GEMM) of the rank ends (within 1 ps). */
static void expert_reduces(const struct prog *p, uint32_t r, int *all,
			   int *at_wgrad)
{
	uint32_t t, w, n = prog_tasks(p);
	enum task_cat cat;

	*all = *at_wgrad = 0;
	for (t = 0; t < n; t++) {
		const struct coll_desc *c;
		double s;

		if (exec_task_rank(p, t) != r ||
		    strcmp(exec_task_name(p, t, &cat),
			   "fsdp_grad_reducescatter") != 0 ||
		    !(c = exec_task_coll(p, t)) || c->ngpus != 2)
			continue;
		(*all)++;
		s = exec_task_start_s(p, t);
		for (w = 0; w < n; w++)
			if (exec_task_rank(p, w) == r &&
			    strcmp(exec_task_name(p, w, &cat),
				   "expert_fc1_wgrad") == 0 &&
			    fabs(exec_task_end_s(p, w) - s) < 1e-12) {
				(*at_wgrad)++;
				break;
			}
	}
}

Test(fsdp_reduce, experts_reduce_when_their_backward_ends)
{
	struct fixture f;
	struct mockcomm_run r;
	int all[2], at[2], k;

	/* 8 experts top-2 of 512, ep 4 on the node's 8 GPUs (edp 2), ZeRO
	 * 3, pp 1, 4 layers, 32 sequences (4 a GPU over dp 8: 2
	 * microbatches of 2), the
	 * backward's expert GEMMs on 4 streams (grouped_gemm_streams: the
	 * multi-stream path records the unit's last expert GEMM). Fast
	 * collectives (5 us + 1 TB/s): nothing queues on the data-parallel
	 * stream. Without the key a unit's experts reduce-scatter after the
	 * whole unit (its attention's backward last): none starts at an
	 * expert_fc1_wgrad's end. With it (AutoModel's fully_shard of the
	 * experts: their post_backward first) every one of the 4 layers' x
	 * 2 microbatches' 8 does. */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.training.zero_stage = 3;
	f.job.training.global_batch_size = 32;
	f.fw.elementwise.grouped_gemm_streams = 4;
	for (k = 0; k < 2; k++) {
		f.fw.fsdp_reduce_one_in_flight = k;
		mockcomm_train_run(&r, &f.job, 0, 5e-6, 1e12);
		expert_reduces(r.p, 0, &all[k], &at[k]);
		mockcomm_train_release(&r);
	}
	cr_assert_eq(all[0], 8, "%d expert reduce-scatters", all[0]);
	cr_assert_eq(all[1], 8, "%d expert reduce-scatters", all[1]);
	cr_assert_eq(at[0], 0, "without: %d at an expert wgrad's end", at[0]);
	cr_assert_eq(at[1], 8, "with: %d at an expert wgrad's end", at[1]);
}

/* Rank r's experts' reduce-scatters still running when the rank's next
 * expert_fc1_wgrad (the next unit's last expert GEMM) starts. */
static int overrun(const struct prog *p, uint32_t r)
{
	uint32_t t, w, n = prog_tasks(p);
	enum task_cat cat;
	int k = 0;

	for (t = 0; t < n; t++) {
		const struct coll_desc *c;
		double s, e, next = INFINITY;

		if (exec_task_rank(p, t) != r ||
		    strcmp(exec_task_name(p, t, &cat),
			   "fsdp_grad_reducescatter") != 0 ||
		    !(c = exec_task_coll(p, t)) || c->ngpus != 2)
			continue;
		s = exec_task_start_s(p, t);
		e = exec_task_end_s(p, t);
		for (w = 0; w < n; w++)
			if (exec_task_rank(p, w) == r &&
			    strcmp(exec_task_name(p, w, &cat),
				   "expert_fc1_wgrad") == 0 &&
			    exec_task_start_s(p, w) > s)
				next = fmin(next, exec_task_start_s(p, w));
		k += next < e;
	}
	return k;
}

Test(fsdp_reduce, the_next_unit_waits_for_the_experts_reduce)
{
	struct fixture f;
	struct mockcomm_run r;
	int k[2], i;

	/* The job above with slow collectives (5 us + 2 GB/s): a unit's
	 * experts' reduce-scatter (8 experts / ep 4 = 2 of 2 x 1024 x 512
	 * parameters, 2.1e6 at 4 B: 8.4 MB over edp 2, ~2 ms) outlasts the
	 * rest of its unit's backward. Without the key the next unit's
	 * backward runs under it (only the action's end waits): its expert
	 * GEMMs start before it ends. With it the block's post_backward
	 * waits for it before the next unit: none does. */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.training.zero_stage = 3;
	f.job.training.global_batch_size = 32;
	f.fw.elementwise.grouped_gemm_streams = 4;
	for (i = 0; i < 2; i++) {
		f.fw.fsdp_reduce_one_in_flight = i;
		mockcomm_train_run(&r, &f.job, 0, 5e-6, 2e9);
		k[i] = overrun(r.p, 0);
		mockcomm_train_release(&r);
	}
	cr_assert_gt(k[0], 0, "without: %d overrun", k[0]);
	cr_assert_eq(k[1], 0, "with: %d overrun", k[1]);
}
