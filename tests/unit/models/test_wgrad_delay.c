/*
 * test_wgrad_delay.c - moe.delay_wgrad (Megatron-Core delay_wgrad_compute,
 * train_wgrad.c): where a MoE layer's weight gradients move in its
 * backward ops, what the ops left behind wait for, and that a paired
 * backward's pipeline send leaves before its last layer's delayed
 * attention weight gradients.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "engine/exec.h"
#include "fixture.h"
#include "mockcomm.h"
#include "moe_case.h"
#include "models/layer_impl.h"
#include "models/train_impl.h"

static int named(const struct layer_op *op, const char *name)
{
	return op->name && strcmp(op->name, name) == 0;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && strcmp(s + n - k, tail) == 0;
}

/* Whether any op up the dep[0] chain from op i (i excluded) is named
 * name. */
static int waits_for(const struct layer_ops *o, int i, const char *name)
{
	int d = o->op[i].dep[0];

	for (; d >= 0; d = o->op[d].dep[0])
		if (named(&o->op[d], name))
			return 1;
	return 0;
}

Test(wgrad_delay, moe_layer_backward_order)
{
	struct moe_case m;
	struct layer_ops before;
	int out, i, n, disp, fc1w, norm1, qkvd;

	/* a MoE layer (8 experts top-2, ep 8), no shared experts, bf16:
	 * no swizzles and fused accumulation, so each moved group is one
	 * GEMM */
	moe_case_init(&m, 8, 2, 512, 8);
	moe_case_dims(&m);
	moe_case_bwd(&m);
	before = m.o;
	n = m.o.n;
	cr_assert(waits_for(&before, fixture_op_index(&before,
			    "moe_dispatch_bwd"), "expert_fc1_wgrad"),
		  "undelayed, the dispatch's backward waits for the wgrad");
	out = train_delay_wgrad(&m.o);
	cr_assert_eq(m.o.n, n, "no op lost or added");
	/* the attention's two wgrads (proj, qkv) go last, after norm1_bwd,
	 * its gamma's and beta's main_grad adds (norm_grad_add: the DDP
	 * hook's, not delayed) and the residual's gradient add (add1_bwd),
	 * the layer's input gradient: out = n - 1 - 2 */
	cr_assert_eq(out, n - 3, "out %d of %d", out, n);
	norm1 = fixture_op_index(&m.o, "norm1_bwd");
	cr_assert_eq(norm1, out - 3);
	cr_assert(named(&m.o.op[out - 2], "norm_grad_add"));
	cr_assert(named(&m.o.op[out - 1], "norm_grad_add"));
	cr_assert(named(&m.o.op[out], "add1_bwd"));
	for (i = out + 1; i < n; i++)
		cr_assert(ends_with(m.o.op[i].name, "_wgrad") &&
			  !waits_for(&m.o, i, "norm1_bwd"),
			  "op %d %s after the output", i, m.o.op[i].name);
	cr_assert(named(&m.o.op[n - 2], "proj_wgrad") &&
		  named(&m.o.op[n - 1], "qkv_wgrad"));
	/* norm1_bwd waited for qkv_wgrad (the op before it); now for what
	 * qkv_wgrad waits for, the dgrad */
	qkvd = fixture_op_index(&m.o, "qkv_dgrad");
	cr_assert(!waits_for(&m.o, norm1, "qkv_wgrad"));
	cr_assert(waits_for(&m.o, norm1, "qkv_dgrad"));
	cr_assert_lt(qkvd, norm1);
	/* the experts' wgrads sit just before the dispatch's backward, which
	 * no longer waits for them: fc2's and fc1's, in that order */
	disp = fixture_op_index(&m.o, "moe_dispatch_bwd");
	fc1w = fixture_op_index(&m.o, "expert_fc1_wgrad");
	cr_assert_eq(fc1w, disp - 1, "fc1 wgrad %d, dispatch %d", fc1w, disp);
	cr_assert(named(&m.o.op[disp - 2], "expert_fc2_wgrad"));
	cr_assert(!waits_for(&m.o, disp, "expert_fc1_wgrad"));
	cr_assert(!waits_for(&m.o, disp, "expert_fc2_wgrad"));
	cr_assert(waits_for(&m.o, disp, "expert_fc1_dgrad"));
	/* every dependency still points back */
	for (i = 0; i < n; i++)
		cr_assert(m.o.op[i].dep[0] < i && m.o.op[i].dep[1] < i,
			  "op %d %s", i, m.o.op[i].name);
	moe_case_release(&m);
}

Test(wgrad_delay, nothing_to_move_keeps_the_list)
{
	struct layer_ops o;

	memset(&o, 0, sizeof(o));
	lop_memop(&o, "a", PASS_BWD, 1, 1, 0);
	lop_memop(&o, "b", PASS_BWD, 1, 1, 0);
	cr_assert_eq(train_delay_wgrad(&o), 1);
	cr_assert(named(&o.op[0], "a") && named(&o.op[1], "b"));
}

/* Rank r's pp_send_gradient tasks that start before the end of a
 * proj_wgrad (the delayed attention wgrad of the backward's last layer)
 * already running on that rank. */
static int sends_under_wgrad(const struct prog *p, uint32_t r)
{
	uint32_t t, w, n = prog_tasks(p);
	enum task_cat cat;
	int k = 0;

	for (t = 0; t < n; t++) {
		double s;

		if (exec_task_rank(p, t) != r ||
		    strcmp(exec_task_name(p, t, &cat), "pp_send_gradient") != 0)
			continue;
		s = exec_task_start_s(p, t);
		for (w = 0; w < n; w++)
			if (exec_task_rank(p, w) == r &&
			    strcmp(exec_task_name(p, w, &cat), "proj_wgrad") == 0 &&
			    exec_task_start_s(p, w) <= s &&
			    s < exec_task_end_s(p, w)) {
				k++;
				break;
			}
	}
	return k;
}

Test(wgrad_delay, paired_send_leaves_before_the_attention_wgrad)
{
	struct fixture f;
	struct mockcomm_run r;
	int k0, k1;

	/* pp 2 x vpp 2, a layer per virtual stage, ep 4, m = 4 = 2 pp
	 * microbatches: both ranks have paired steady steps. Transfers are
	 * cheap (alpha 5 us, 1 TB/s). Undelayed, a send starts after its
	 * action's last op, the last layer's qkv wgrad and norm: never
	 * under a proj_wgrad of its own action (the next action's come
	 * after its first layer's dgrad chain). Delayed, a paired
	 * backward's gradient send waits for norm1_bwd only, and the
	 * deferred qkv and proj wgrads follow it on the compute stream:
	 * when the receiver is ready (rank 1 receives on its own stream
	 * before it needs the gradient) the send starts while they run. */
	fixture_moe(&f, 8, 2, 512, 4);
	f.job.parallelism.pp = 2;
	f.job.parallelism.vpp = 2;
	f.job.parallelism.dp = 4;
	f.job.parallelism.schedule = SCHED_INTERLEAVED;
	f.job.training.global_batch_size = 32;
	f.job.moe.a2a_overlap = 1;
	mockcomm_train_run(&r, &f.job, 0, 5e-6, 1e12);
	k0 = sends_under_wgrad(r.p, 0) + sends_under_wgrad(r.p, 1);
	mockcomm_train_release(&r);
	f.job.moe.delay_wgrad = 1;
	mockcomm_train_run(&r, &f.job, 0, 5e-6, 1e12);
	k1 = sends_under_wgrad(r.p, 0) + sends_under_wgrad(r.p, 1);
	mockcomm_train_release(&r);
	cr_assert_eq(k0, 0, "undelayed: %d sends under a proj wgrad", k0);
	cr_assert_gt(k1, 0, "delayed: %d sends under a proj wgrad", k1);
}
