/*
 * test_detach.c - a latency-bound collective (its bytes take at most
 * CRUN_DETACH_SHARE of its time on any link, crun.h) replays its idle time even
 * where a flow runs on its links, holding none of them, and what that
 * leaves out is within the bound crun.c states.
 *
 * Two dgx-h100 nodes (16 GPUs, 8 NDR NICs a node). GPU 0 sends 256 MiB
 * to GPU 8 (node 0's rail-0 NIC to node 1's, ~5 ms at 50 GB/s); 100 us
 * in, all 16 GPUs all-reduce 32 B, whose rings or trees cross the nodes
 * on every rail, rail 0 too: the send's NIC links are busy, so before
 * this mechanism the all-reduce ran as flows beside it. Then a 64 MiB
 * all-reduce over the same 16 GPUs (its bytes take ~1 ms of a link:
 * never latency-bound) runs after the send.
 *
 *   bound (a): the send ends at most link_ns <= CRUN_DETACH_SHARE x the
 *   all-reduce's time alone (1e-4 x 25,202 ns = 2.5 ns) + 1 ns of
 *   rounding of its end from where it ends with the all-reduce as flows;
 *   bound (b): the all-reduce as flows ends later than alone by at most
 *   its transfer time (a few ns: 32 B at a channel's LL rate) times its
 *   slowdown beside one flow (<= 2 on a link shared with one), checked
 *   here as <= 64 ns against its ~tens of us of latency.
 */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_system.h"
#include "engine/exec.h"
#include "network/crun.h"
#include "network/net.h"

#include "fixtures.h"

enum { NGPU = 16 };
enum { S_COMPUTE, S_DP, S_PP, NSTREAMS };

static const struct system_spec *system_of(struct arena *a)
{
	static const char *const sets[] = { "nodes=2" };

	return fx_load(a, &system_schema, "dgx-h100", sets, 1);
}

/* Task ids of interest. */
struct ids {
	task_id send, tiny, big;	/* first task of each */
};

/* with_send 0: the all-reduces alone (the tiny one's time alone). */
static struct prog *build(int with_send, struct ids *id)
{
	static uint32_t all[NGPU], pair[2] = { 0, 8 };
	struct prog *p = prog_new(NGPU, NSTREAMS);
	struct task_info ci = { "wait", TASK_COMPUTE, 0, 0, TASK_PHASE_NONE };
	struct task_info ai = { "ar", TASK_COMM, 0, 0, TASK_PHASE_NONE };
	struct task_info si = { "send", TASK_COMM, 0, 0, TASK_PHASE_NONE };
	struct coll_desc tiny = { .op = COLL_ALLREDUCE, .bytes = 32,
				  .gpus = all, .ngpus = NGPU, .algo = -1,
				  .proto = -1 };
	struct coll_desc big = tiny;
	struct coll_desc s = { .op = COLL_SENDRECV, .bytes = 256.0 * 1048576,
			       .gpus = pair, .ngpus = 2, .algo = -1,
			       .proto = -1 };
	task_id w[NGPU];
	uint32_t i;

	cr_assert_not_null(p);
	big.bytes = 64.0 * 1048576;
	for (i = 0; i < NGPU; i++) {
		all[i] = i;
		w[i] = prog_task(p, i, S_COMPUTE, 100e-6, &ci);
	}
	id->send = TASK_NONE;
	if (with_send)
		id->send = prog_coll(p, pair, 2, S_PP, &s, &si);
	id->tiny = prog_coll(p, all, NGPU, S_DP, &tiny, &ai);
	for (i = 0; i < NGPU; i++)
		prog_dep(p, w[i], id->tiny + i);
	id->big = prog_coll(p, all, NGPU, S_DP, &big, &ai);
	for (i = 0; i < NGPU; i++)
		prog_dep(p, id->tiny + i, id->big + i);
	if (with_send)
		for (i = 0; i < 2; i++)
			prog_dep(p, id->send + i, id->big + pair[i]);
	return p;
}

struct outcome {
	struct net_stats st;
	units_ns_t send_end, tiny_start, tiny_end, big_end;
};

static void run(const struct system_spec *sys, int with_send, int replay,
		struct outcome *o)
{
	struct diag d;
	struct sim *sim = sim_new();
	struct net *net;
	struct exec_result r;
	struct ids id;
	struct prog *p = build(with_send, &id);
	const char *why = NULL;

	diag_init(&d, stderr);
	net = net_new(sys, sim, &d);
	cr_assert(sim && net);
	net_set_replay(net, replay);
	cr_assert_eq(exec_run(p, sim, &net_comm_ops, net, &r, &why), 0,
		     "exec_run: %s", why ? why : "?");
	cr_assert(!net_failed(net), "%s", net_error(net));
	net_get_stats(net, &o->st);
	o->send_end = with_send ? units_s_to_ns(exec_task_end_s(p, id.send))
				: 0;
	o->tiny_start = units_s_to_ns(exec_task_start_s(p, id.tiny));
	o->tiny_end = units_s_to_ns(exec_task_end_s(p, id.tiny));
	o->big_end = units_s_to_ns(exec_task_end_s(p, id.big));
	prog_free(p);
	net_free(net);
	sim_free(sim);
}

Test(net_detach, latency_bound_collective_replays_over_a_busy_link)
{
	struct arena a;
	const struct system_spec *sys;
	struct outcome alone, fl, rp;
	long long d_send, d_tiny, bound_a;

	arena_init(&a);
	sys = system_of(&a);
	run(sys, 0, 1, &alone);
	run(sys, 1, 0, &fl);
	run(sys, 1, 1, &rp);
	cr_log_info("tiny all-reduce: alone %lld ns, as flows %lld ns, "
		    "detached %lld ns; send ends %lld vs %lld ns",
		    (long long)(alone.tiny_end - alone.tiny_start),
		    (long long)(fl.tiny_end - fl.tiny_start),
		    (long long)(rp.tiny_end - rp.tiny_start),
		    (long long)fl.send_end, (long long)rp.send_end);
	/* the tiny all-reduce (one collective of 16 tasks) detached; the
	 * 64 MiB one (~1 ms of a link's time) did not */
	cr_assert_eq(rp.st.detached, 1, "detached %llu",
		     (unsigned long long)rp.st.detached);
	cr_assert_eq(fl.st.detached, 0);
	/* it starts while the send runs on its rail-0 NIC links */
	cr_assert_lt(rp.tiny_start, rp.send_end);
	/* detached: its time alone, to the ns */
	cr_assert_eq(rp.tiny_end - rp.tiny_start,
		     alone.tiny_end - alone.tiny_start);
	/* bound (a), then bound (b) */
	bound_a = (long long)(CRUN_DETACH_SHARE *
			      (double)(alone.tiny_end - alone.tiny_start)) + 1;
	d_send = llabs((long long)(rp.send_end - fl.send_end));
	cr_assert_leq(d_send, bound_a,
		      "send moved %lld ns", d_send);
	d_tiny = llabs((long long)(rp.tiny_end - fl.tiny_end));
	cr_assert_leq(d_tiny, 64, "all-reduce moved %lld ns", d_tiny);
	/* the big all-reduce waits for the send: within bound (a) too */
	cr_assert_leq(llabs((long long)(rp.big_end - fl.big_end)), bound_a);
	arena_release(&a);
}
