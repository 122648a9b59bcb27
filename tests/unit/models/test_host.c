/*
 * test_host.c - the host thread (train_host.c) against derived numbers: a
 * host that issues faster than the GPU executes hides but for the first
 * issue; a host slower than the GPU sets the pace (the step is its issue
 * time plus the GPU work it leaves behind); an MoE dispatch that must
 * wait for the token counts costs the sync on every MoE layer forward;
 * CUDA-graph scopes replace a scope's issues by one replay, a layer's
 * captured scopes together by one.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "engine/exec.h"
#include "engine/sim.h"
#include "fixture.h"
#include "mockcomm.h"
#include "models/train.h"

struct host_run {
	double step_s;		/* s */
	uint32_t issues;	/* host tasks ("issue ...") */
	double host_s;		/* s, their summed duration */
};

static void run(struct fixture *f, struct host_run *r)
{
	struct mockcomm_run mr;
	struct prog *p;
	uint32_t t;

	mockcomm_train_run(&mr, &f->job, 0, 5e-6, 100e9);
	p = mr.p;
	memset(r, 0, sizeof(*r));
	r->step_s = mr.er.step_s;
	for (t = 0; t < prog_tasks(p); t++) {
		enum task_cat cat;
		const char *name = exec_task_name(p, t, &cat);

		if (cat == TASK_OTHER && strncmp(name, "issue", 5) == 0) {
			r->issues++;
			r->host_s += exec_task_end_s(p, t) - exec_task_start_s(p, t);
		}
	}
	mockcomm_train_release(&mr);
}

/* Every kind of host call costs c. */
static void host_costs(struct fixture *f, double c)
{
	struct host_spec *h = &f->fw.host;

	h->op_s = h->module_s = h->bwd_op_s = h->bwd_module_s = c;
	h->kernel_s = h->collective_s = h->graph_s = c;
}

/* A GPT of 2 layers, h 4096, 32 heads, s 2048 on one 8-GPU node (tp 1,
 * pp 1, dp 8), 2 microbatches of 1. */
static void gpt(struct fixture *f)
{
	fixture_gpt(f, 2, 4096, 32, 128, 2048, 1, 16, 1, 1, 1);
}

Test(host, fast_host_hides_but_its_first_issue)
{
	struct fixture f;
	struct host_run off, on;

	/* Each call costs the host 1 us; every kernel of this layer (GEMMs
	 * of 2048 x 4096 x 4096 and up, 3.3 MB elementwise ops: at least the
	 * 4 us launch) takes longer, so the host is ahead from the second op
	 * on: only the first op (the embedding) waits, 1 us, and everything
	 * after it moves by that: step(on) = step(off) + 1 us. */
	gpt(&f);
	run(&f, &off);
	cr_assert_eq(off.issues, 0, "no host model without host costs");
	host_costs(&f, 1e-6);
	run(&f, &on);
	cr_assert_gt(on.issues, 0);
	cr_assert_float_eq(on.step_s - off.step_s, 1e-6, 1e-9,
			   "on %.9f s, off %.9f s", on.step_s, off.step_s);
}

Test(host, slow_host_sets_the_pace)
{
	struct fixture f;
	struct host_run off, on;
	double issue_s;

	/* Each call costs 10 ms, far above any kernel here: the host is the
	 * bottleneck. The last layer op is issued at N x 10 ms (N host
	 * tasks), and what remains after it (that op, the data-parallel
	 * reduction and the optimizer, not host-issued) is at most the
	 * whole step without the host model:
	 *   N x 10 ms <= step(on) <= N x 10 ms + step(off). */
	gpt(&f);
	run(&f, &off);
	host_costs(&f, 10e-3);
	run(&f, &on);
	issue_s = on.issues * 10e-3;
	cr_assert_float_eq(on.host_s, issue_s, 1e-9);
	cr_assert_geq(on.step_s, issue_s, "step %.6f s, issue %.6f s",
		      on.step_s, issue_s);
	cr_assert_leq(on.step_s, issue_s + off.step_s, "step %.6f s, "
		      "issue %.6f s, GPU alone %.6f s", on.step_s, issue_s,
		      off.step_s);
}

Test(host, any_host_cost_turns_the_host_model_on)
{
	struct fixture f;
	struct host_run off, on;
	struct host_spec *h = &f.fw.host;
	double *alone[] = {&h->bwd_module_s, &h->gemm_s, &h->event_s,
			   &h->expert_item_s, &h->param_hook_s};
	size_t i;

	/* A framework that gives only the backward op's cost (the other
	 * kinds 0): the host still issues every op, the backward ones at 10
	 * ms each, far above any kernel of this 2-layer GPT, so the step
	 * grows by at least one of them. Each of the other per-call costs
	 * alone turns the model on as well (train_host_on); none, off. */
	gpt(&f);
	run(&f, &off);
	h->bwd_op_s = 10e-3;
	run(&f, &on);
	cr_assert_gt(on.issues, 0, "backward_op alone: no host model");
	cr_assert_geq(on.step_s, off.step_s + 10e-3, "on %.6f s, off %.6f s",
		      on.step_s, off.step_s);
	for (i = 0; i < sizeof(alone) / sizeof(alone[0]); i++) {
		memset(h, 0, sizeof(*h));
		*alone[i] = 1e-6;
		cr_assert(train_host_on(&f.job), "cost %zu alone: off", i);
	}
	memset(h, 0, sizeof(*h));
	cr_assert(!train_host_on(&f.job), "no cost: no host model");
}

Test(host, graph_scope_is_one_replay)
{
	struct fixture f;
	struct host_run all, graphed;
	int64_t scope = SCOPE_ATTN - 1;	/* list values are name indices */

	/* Capturing the attention scope replays each run of its ops with
	 * one host call: forward norm1, qkv, attn, proj, add1 (5 ops, 4
	 * issues saved), backward proj dgrad and wgrad, attention, qkv
	 * dgrad and wgrad, norm1's backward, its gamma's and beta's
	 * main_grad adds (counted in the scope: layer_ops.c
	 * lop_norm_grad_add), add1's residual gradient (9 ops, 8 saved): 12
	 * per layer and microbatch, 2 layers x 2 microbatches (gbs 16 / dp
	 * 8): 48 issues fewer, 48 ms of host time at 1 ms a call. */
	gpt(&f);
	host_costs(&f, 1e-3);
	run(&f, &all);
	f.job.training.cuda_graphs.v = &scope;
	f.job.training.cuda_graphs.n = 1;
	run(&f, &graphed);
	cr_assert_eq(all.issues - graphed.issues, 48, "%u -> %u issues",
		     all.issues, graphed.issues);
	cr_assert_float_eq(all.host_s - graphed.host_s, 48e-3, 1e-9);
}

/* Megatron-Core's Transformer Engine graphs capture a layer's captured
 * scopes as one callable, replayed once a microbatch forward and once
 * backward (train_host.c). Only replays cost here (graph 1 ms, every
 * other call 0, so no other issue exists): capturing attn and mlp makes
 * each dense layer's forward (norm1 .. add1 in attn, norm2 .. add2 in
 * mlp) and its backward one run of captured ops each, so 2 layers x 2
 * microbatches x 2 passes = 8 replays, 8 ms; attention alone gives the
 * same 8 (its runs only); counting a replay per scope run would give 16. */
Test(host, captured_scopes_of_a_layer_are_one_replay)
{
	struct fixture f;
	struct host_run attn, both;
	int64_t scopes[2] = { SCOPE_ATTN - 1, SCOPE_MLP - 1 };

	gpt(&f);
	host_costs(&f, 0);
	f.fw.host.graph_s = 1e-3;
	f.job.training.cuda_graphs.v = scopes;
	f.job.training.cuda_graphs.n = 1;
	run(&f, &attn);
	f.job.training.cuda_graphs.n = 2;
	run(&f, &both);
	cr_assert_eq(attn.issues, 8, "%u issues", attn.issues);
	cr_assert_eq(both.issues, 8, "%u issues", both.issues);
	cr_assert_float_eq(both.host_s, 8e-3, 1e-9, "%g s", both.host_s);
}

/* The MoE fixture of test_moe.c (4 layers of 8 experts, top-2, width
 * 512, h 1024, T 4096) with ep 8 over the library all-to-all. */
static void moe(struct fixture *f, struct ep_comm_spec *e, int sync)
{
	fixture_moe(f, 8, 2, 512, 8);
	f->job.moe.permute_fusion = 1;
	memset(e, 0, sizeof(*e));
	e->name = "test-alltoall";
	e->mode = EP_LIBRARY;
	e->dedup = DEDUP_NONE;
	e->host_sync = sync ? EP_SYNC_COUNTS : EP_SYNC_NONE;
	f->job.moe.dispatcher = e;
}

Test(host, dropless_dispatch_waits_for_the_counts)
{
	struct fixture f;
	struct ep_comm_spec e;
	struct host_run none, sync;
	double n = 4 * 1;	/* MoE layer forwards per rank: 4 layers, 1
				 * microbatch (gbs 16 / (mbs 2 x dp 8)) */

	/* No issue costs, a 1 ms resume after each sync: the host waits for
	 * the count exchange (moe_counts, an 8 x 8 B all-gather: alpha 5 us),
	 * then 1 ms, before it issues the dispatch; the GPU meanwhile only
	 * runs the permute (4096 x 1024 x 2 B read, x 2 written: under
	 * 10 us on 3 TB/s), so each MoE forward waits about 1 ms more:
	 * step(sync) - step(none) = n x (1 ms - the permute) in
	 * [n x 0.98 ms, n x 1 ms]. */
	moe(&f, &e, 0);
	f.fw.host.sync_s = 1e-3;
	run(&f, &none);
	moe(&f, &e, 1);
	f.fw.host.sync_s = 1e-3;
	run(&f, &sync);
	cr_assert_geq(sync.step_s - none.step_s, n * 0.98e-3,
		      "sync %.6f s, none %.6f s", sync.step_s, none.step_s);
	cr_assert_leq(sync.step_s - none.step_s, n * 1e-3 + 1e-9,
		      "sync %.6f s, none %.6f s", sync.step_s, none.step_s);
}

Test(host, dispatch_call_after_the_sync_idles_the_gpu)
{
	struct fixture f;
	struct ep_comm_spec e;
	struct host_run op, call;
	double n = 4 * 1;	/* MoE layer forwards per rank, as above */

	/* Every other call free, a 1 us resume after each sync (so the host
	 * model is on), and the dispatcher's own call costing 1 ms
	 * (dispatch_call_host): in the forward the host issues the dispatch
	 * right after its sync on the counts, when the GPU's queue holds
	 * only the permute (under 10 us), so each MoE forward waits about
	 * 1 ms more: at least n x 0.98 ms. The combine's backward is the
	 * same call, and the forward's combine and the dispatch's backward
	 * (combine_with_unpermute) cost it too: the host may fall behind
	 * there as well, so at most all the added host time, 4n calls x
	 * 1 ms:
	 *   n x 0.98 ms <= step(call) - step(op) <= 4n x 1 ms. */
	moe(&f, &e, 1);
	f.fw.host.sync_s = 1e-6;
	run(&f, &op);
	moe(&f, &e, 1);
	f.fw.host.sync_s = 1e-6;
	e.dispatch_call_host_s = 1e-3;
	run(&f, &call);
	cr_assert_geq(call.step_s - op.step_s, n * 0.98e-3,
		      "call %.6f s, op %.6f s", call.step_s, op.step_s);
	cr_assert_leq(call.step_s - op.step_s, 4 * n * 1e-3 + 1e-9,
		      "call %.6f s, op %.6f s", call.step_s, op.step_s);
}

Test(host, capacity_padding_needs_no_sync)
{
	struct fixture f;
	struct ep_comm_spec e;
	struct host_run none, padded;

	/* Capacity with padding has static sizes: a dispatcher that would
	 * sync does not, the step is the one without a sync. */
	moe(&f, &e, 0);
	f.fw.host.sync_s = 1e-3;
	run(&f, &none);
	moe(&f, &e, 1);
	f.fw.host.sync_s = 1e-3;
	f.job.moe.capacity_factor = 1;
	f.job.moe.pad_to_capacity = 1;
	run(&f, &padded);
	cr_assert_eq(padded.step_s, none.step_s);
}

Test(host, captured_scope_has_no_sync)
{
	struct fixture f;
	struct ep_comm_spec e;
	struct host_run a, b;
	int64_t scope = SCOPE_MOE - 1;	/* list values are name indices */

	/* The dispatch sits in the "moe" scope; captured, it cannot hold a
	 * host sync (nor can the software: cudaStreamSynchronize fails in
	 * capture, Megatron-Core runs that scope with static sizes). A
	 * dropless dispatcher whose host would resume 1 ms, or 2 ms, after
	 * each wait for the counts (4 MoE forwards: 4 ms apart uncaptured,
	 * test dropless_dispatch_waits_for_the_counts) gives one step either
	 * way: no wait is left (graph replays 1 us keep the host on). */
	moe(&f, &e, 1);
	f.fw.host.graph_s = 1e-6;
	f.fw.host.sync_s = 1e-3;
	f.job.training.cuda_graphs.v = &scope;
	f.job.training.cuda_graphs.n = 1;
	run(&f, &a);
	f.fw.host.sync_s = 2e-3;
	run(&f, &b);
	cr_assert_eq(a.step_s, b.step_s, "sync 1 ms %.6f s, 2 ms %.6f s",
		     a.step_s, b.step_s);
	/* Uncaptured, the waits are there: 4 x 1 ms more, less the GPU
	 * work the host had queued (under 0.1 ms here). */
	f.job.training.cuda_graphs.n = 0;
	run(&f, &a);
	f.fw.host.sync_s = 1e-3;
	run(&f, &b);
	cr_assert_geq(a.step_s - b.step_s, 4 * 0.98e-3, "2 ms %.6f s, 1 ms "
		      "%.6f s", a.step_s, b.step_s);
}

Test(host, p2p_sync_delays_every_action)
{
	struct fixture f;
	struct host_run off, on;

	/* pp 2, 1F1B, 4 microbatches (gbs 16 / dp 4, mbs 1): each rank runs
	 * 8 actions. With p2p_sync the host waits, before every action but
	 * its first, for the previous action and the transfers around it,
	 * then 1 ms to resume, before it can issue the action (issues cost
	 * nothing here): every action boundary on a rank gains 1 ms after
	 * whatever it waited for. The path crosses at least one such
	 * boundary and at most the 7 of each rank:
	 *   step(off) + 1 ms <= step(on) <= step(off) + 14 ms. */
	fixture_gpt(&f, 4, 4096, 32, 128, 2048, 1, 16, 1, 1, 2);
	f.fw.host.sync_s = 1e-3;
	run(&f, &off);
	f.fw.host.p2p_sync = 1;
	run(&f, &on);
	cr_assert_geq(on.step_s - off.step_s, 1e-3 - 1e-9, "on %.6f, off %.6f",
		      on.step_s, off.step_s);
	cr_assert_leq(on.step_s - off.step_s, 14e-3 + 1e-9, "on %.6f, off %.6f",
		      on.step_s, off.step_s);
}

/* Megatron-Core's "moe" graph scope captures all of _forward_mlp() for a
 * MoE layer, its norm, router and preprocessing included
 * (transformer_config.py cuda_graph_modules @ d98e8a64dd), so [attn, moe]
 * runs as [attn, moe_router, moe_preprocess, moe]: the MoE fixture (4
 * layers, 1 microbatch, static sizes: no count sync) with every cost 0
 * but a 1 ms replay issues the same replays both ways; were the router
 * left eager, [attn, moe] would split each pass at it and issue more. */
Test(host, the_moe_scope_captures_the_router_and_preprocess)
{
	struct fixture f;
	struct ep_comm_spec e;
	struct host_run moe_only, listed;
	int64_t a[2] = { SCOPE_ATTN - 1, SCOPE_MOE - 1 };
	int64_t b[4] = { SCOPE_ATTN - 1, SCOPE_MOE_ROUTER - 1,
			 SCOPE_MOE_PREPROCESS - 1, SCOPE_MOE - 1 };

	moe(&f, &e, 0);
	host_costs(&f, 0);
	f.fw.host.graph_s = 1e-3;
	f.job.training.cuda_graphs.v = a;
	f.job.training.cuda_graphs.n = 2;
	run(&f, &moe_only);
	f.job.training.cuda_graphs.v = b;
	f.job.training.cuda_graphs.n = 4;
	run(&f, &listed);
	cr_assert_eq(moe_only.issues, listed.issues, "%u vs %u issues",
		     moe_only.issues, listed.issues);
	cr_assert_float_eq(moe_only.host_s, listed.host_s, 1e-12, "%g vs %g s",
			   moe_only.host_s, listed.host_s);
}
