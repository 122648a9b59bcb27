/*
 * test_exec_net.c - the fabric under the executor: collectives of a step
 * program on separate streams share the links they cross; compute
 * overlaps communication.
 */
#include <criterion/criterion.h>

#include "base/diag.h"
#include "engine/exec.h"
#include "fixtures.h"
#include "network/net.h"

#define GiB 1073741824.0

struct step {
	struct fx f;
	struct sim *sim;
	struct net *net;
	struct prog *prog;
};

static void step_init(struct step *s, uint32_t nranks, uint32_t nstreams)
{
	struct diag d;

	diag_init(&d, stderr);
	fx_switch(&s->f, 2);
	s->sim = sim_new();
	s->net = net_new(&s->f.sys, s->sim, &d);
	s->prog = prog_new(nranks, nstreams);
	cr_assert(s->sim && s->net && s->prog);
}

static double step_run(struct step *s)
{
	struct exec_result r;
	const char *why = NULL;

	cr_assert_eq(exec_run(s->prog, s->sim, &net_comm_ops, s->net, &r, &why),
		     0, "exec_run: %s", why ? why : "?");
	cr_assert(!net_failed(s->net), "%s", net_error(s->net));
	return r.step_s;
}

static void step_release(struct step *s)
{
	prog_free(s->prog);
	net_free(s->net);
	sim_free(s->sim);
}

/* Simulated rank 0 is GPU 0 (node 0), rank 1 is GPU 8 (node 1). */
static const uint32_t gpus[2] = { 0, 8 };
static const uint32_t ranks[2] = { 0, 1 };

static void add_allreduce(struct step *s, uint32_t stream)
{
	struct coll_desc c = { COLL_ALLREDUCE, GiB, gpus, 2, NULL,
			       ALGO_RING, -1, 1, 0, NULL, 0, 0, 0 };
	struct task_info info = { "dp_allreduce", TASK_COMM, -1, -1,
				  TASK_PHASE_NONE };

	cr_assert_neq(prog_coll(s->prog, ranks, 2, stream, &c, &info), TASK_NONE);
}

Test(net_exec, concurrent_collectives_share_the_nic)
{
	struct step s;
	double alone, both;

	step_init(&s, 2, 2);
	add_allreduce(&s, 0);
	alone = step_run(&s);
	/* Two GPUs on two nodes, rail 0: a ring all-reduce moves
	 * 2(p-1)/p * n = n over each NIC direction at 50 GB/s. */
	cr_assert_float_eq(alone, GiB / 50e9, 1e-9);
	step_release(&s);

	step_init(&s, 2, 2);
	add_allreduce(&s, 0);
	add_allreduce(&s, 1);
	both = step_run(&s);
	/* The same collective twice on two streams at once: they share the
	 * rail-0 NICs, 25 GB/s each, and end together at twice the time. */
	cr_assert_float_eq(both, 2 * GiB / 50e9, 1e-9);
	step_release(&s);
}

Test(net_exec, compute_overlaps_communication)
{
	struct step s;
	struct task_info info = { "gemm", TASK_COMPUTE, -1, -1,
				  TASK_PHASE_NONE };
	double t;

	step_init(&s, 2, 2);
	cr_assert_neq(prog_task(s.prog, 0, 0, 30e-3, &info), TASK_NONE);
	cr_assert_neq(prog_task(s.prog, 1, 0, 30e-3, &info), TASK_NONE);
	add_allreduce(&s, 1);
	t = step_run(&s);
	/* 30 ms of compute on stream 0 beside a 21.47 ms all-reduce on
	 * stream 1: the step is the longer of the two, 30 ms. */
	cr_assert_float_eq(t, 30e-3, 1e-9);
	step_release(&s);
}

static task_id add_allreduce_of(struct step *s, double bytes)
{
	struct coll_desc c = { COLL_ALLREDUCE, bytes, gpus, 2, NULL,
			       ALGO_RING, -1, 1, 0, NULL, 0, 0, 0 };
	struct task_info info = { "dp_allreduce", TASK_COMM, -1, -1,
				  TASK_PHASE_NONE };
	task_id t = prog_coll(s->prog, ranks, 2, 0, &c, &info);

	cr_assert_neq(t, TASK_NONE);
	return t;
}

/* The executor keeps the fabric model's plan and trajectory per distinct
 * descriptor (comm.h comm_memo), for one run. Same group, three sizes in
 * a row on one stream: each size its own (a memo by group would replay
 * the 1 GiB trajectory for 2 GiB). A second program on the same net and
 * engine whose first descriptor is another size: its own again (a memo
 * kept across runs would hand it the first program's). At 50 GB/s over
 * each rail-0 NIC direction a ring all-reduce of n over 2 GPUs takes
 * n / 50e9 s (concurrent_collectives_share_the_nic). */
Test(net_exec, descriptor_memo_is_per_descriptor_and_per_run)
{
	struct step s;
	struct exec_result r;
	const char *why = NULL;
	double t;

	step_init(&s, 2, 1);
	add_allreduce_of(&s, GiB);
	add_allreduce_of(&s, 2 * GiB);
	add_allreduce_of(&s, GiB);
	t = step_run(&s);
	/* 1 + 2 + 1 GiB in sequence: 4 GiB / 50 GB/s = 85.9 ms */
	cr_assert_float_eq(t, 4 * GiB / 50e9, 1e-9, "%.9f s", t);
	prog_free(s.prog);
	s.prog = prog_new(2, 1);
	cr_assert_not_null(s.prog);
	add_allreduce_of(&s, 3 * GiB);
	cr_assert_eq(exec_run(s.prog, s.sim, &net_comm_ops, s.net, &r, &why),
		     0, "exec_run: %s", why ? why : "?");
	/* 3 GiB / 50 GB/s = 64.4 ms */
	cr_assert_float_eq(r.step_s, 3 * GiB / 50e9, 1e-9, "%.9f s", r.step_s);
	step_release(&s);
}
