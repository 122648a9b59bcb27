/*
 * test_replay.c - collectives replayed from their idle trajectory give
 * the flow-level simulation's result to the nanosecond: a step program
 * whose collectives contend (a pipeline transfer on the NIC a data-
 * parallel ring or an uneven all-to-all uses, started mid-ring, mid-
 * phase, after rates changed within the phase; tensor-parallel all-
 * reduces alone on their switch) runs once with replays and once
 * with every collective as flows, and every task starts and ends at the
 * same ns. The replays must happen, some must become flows (the rule at
 * the top of src/network/crun.c) and some must start on the links the
 * last replay on them left parked (some after taking back links another
 * took from them meanwhile), or the test proves nothing. Run again
 * with the all-to-alls on a GPU-initiated forwarding path (DeepEP-like:
 * a plan whose flows repeat links, held once each).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_system.h"
#include "engine/exec.h"
#include "network/net.h"

#include "fixtures.h"

enum { NODES = 4, GPN = 8, NGPU = NODES * GPN };
enum { S_COMPUTE, S_TP, S_DP, S_PP, NSTREAMS };

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

/* The dgx-h100 preset at NODES nodes (NVSwitch inside, 8 NDR NICs a
 * node on a rail-optimized fat tree). */
static const struct system_spec *system_of(struct arena *a)
{
	static const char *const sets[] = { "nodes=4" };

	return fx_load(a, &system_schema, "dgx-h100", sets, 1);
}

/* One rank per GPU. Per node, rounds of compute then a TP all-reduce
 * over the node; on each rail, a DP all-reduce over the four nodes and,
 * part way through it, a send of node 0's GPU to node 1's on the same
 * rail (sharing the NIC); sizes and compute times drawn from seed; the
 * all-to-alls on path (NULL: the library's). */
static struct prog *build(uint64_t seed, const struct coll_path *path)
{
	static const char *const names[] = { "gemm", "tp_ar", "dp_ar", "pp" };
	struct prog *p = prog_new(NGPU, NSTREAMS);
	uint32_t tp[NODES][GPN], dp[GPN][NODES];
	uint32_t node, i, round;
	task_id last[NGPU];
	double a2a[NODES * NODES];

	cr_assert_not_null(p);
	for (node = 0; node < NODES; node++)
		for (i = 0; i < GPN; i++)
			tp[node][i] = dp[i][node] = node * GPN + i;
	for (i = 0; i < NGPU; i++)
		last[i] = TASK_NONE;
	for (round = 0; round < 6; round++) {
		double tp_B = (double)(1 + lcg(&seed) % 64) * 1048576;
		double dp_B = (double)(1 + lcg(&seed) % 512) * 1048576;
		struct task_info ci = { names[0], TASK_COMPUTE, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info ti = { names[1], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info di = { names[2], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info pi = { names[3], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };

		for (node = 0; node < NODES; node++) {
			struct coll_desc c = { .op = COLL_ALLREDUCE,
					       .bytes = tp_B, .gpus = tp[node],
					       .ngpus = GPN, .algo = -1,
					       .proto = -1 };
			task_id g[GPN], t;

			for (i = 0; i < GPN; i++) {
				double us = 20 + (double)(lcg(&seed) % 400);

				g[i] = prog_task(p, tp[node][i], S_COMPUTE,
						 us * 1e-6, &ci);
				if (last[tp[node][i]] != TASK_NONE)
					prog_dep(p, last[tp[node][i]], g[i]);
			}
			t = prog_coll(p, tp[node], GPN, S_TP, &c, &ti);
			for (i = 0; i < GPN; i++) {
				prog_dep(p, g[i], t + i);
				last[tp[node][i]] = t + i;
			}
		}
		/* Odd rounds: an uneven all-to-all over the rail instead
		 * (flows of different sizes on shared NICs: rates change
		 * within a phase when the small ones end). */
		for (node = 0; node < NODES * NODES; node++)
			a2a[node] = node % (NODES + 1) ? (double)(1 +
				    lcg(&seed) % 256) * 1048576 : 0;
		for (i = 0; i < GPN; i++) {
			struct coll_desc c = { .op = round % 2 ? COLL_ALLTOALL
							       : COLL_ALLREDUCE,
					       .bytes = dp_B, .gpus = dp[i],
					       .ngpus = NODES,
					       .a2a_B = round % 2 ? a2a : NULL,
					       .algo = -1, .proto = -1,
					       .path = round % 2 ? path : NULL };
			uint32_t pair[2] = { dp[i][0], dp[i][1] };
			struct coll_desc s = { .op = COLL_SENDRECV,
					       .bytes = dp_B / 2, .gpus = pair,
					       .ngpus = 2, .algo = -1,
					       .proto = -1 };
			struct task_info wi = { names[0], TASK_COMPUTE,
						(int32_t)round, 1, TASK_PHASE_NONE };
			task_id d, x, w;

			d = prog_coll(p, dp[i], NODES, S_DP, &c, &di);
			for (node = 0; node < NODES; node++)
				prog_dep(p, last[dp[i][node]], d + node);
			/* The send waits a drawn time after the TP all-reduce
			 * of node 0: it lands in the ring's middle, or in a
			 * phase's wait, or after it. */
			w = prog_task(p, pair[0], S_COMPUTE,
				      (double)(lcg(&seed) % 3000) * 1e-6, &wi);
			prog_dep(p, last[pair[0]], w);
			x = prog_coll(p, pair, 2, S_PP, &s, &pi);
			prog_dep(p, w, x);
			prog_dep(p, last[pair[1]], x + 1);
			last[pair[0]] = x;
			last[pair[1]] = x + 1;
		}
	}
	return p;
}

struct outcome {
	struct exec_result r;
	units_ns_t *start, *end;	/* per task, ns */
	struct net_stats st;
	uint32_t ntasks;
};

/* How run() starts collectives: the fabric model's ops (the executor
 * keeps a memo per descriptor for it), or, for the memo's test, its
 * start alone. */
static const struct comm_ops *run_ops = &net_comm_ops;

/* The fabric model's start, without the memo. */
static void comm_start_of_net(void *ctx, const struct coll_desc *c,
			      void (*done)(void *token), void *token)
{
	net_comm_ops.start(ctx, c, done, token);
}

static int run_guests = 1;	/* net_set_guests() for run() */

static void run(const struct system_spec *sys, uint64_t seed,
		const struct coll_path *path, int replay, struct outcome *o)
{
	struct diag d;
	struct sim *sim = sim_new();
	struct net *net;
	struct prog *p = build(seed, path);
	const char *why = NULL;
	uint32_t t;

	diag_init(&d, stderr);
	net = net_new(sys, sim, &d);
	cr_assert(sim && net);
	net_set_replay(net, replay);
	net_set_guests(net, run_guests);
	cr_assert_eq(exec_run(p, sim, run_ops, net, &o->r, &why), 0,
		     "exec_run: %s", why ? why : "?");
	cr_assert(!net_failed(net), "%s", net_error(net));
	net_get_stats(net, &o->st);
	o->ntasks = prog_tasks(p);
	o->start = calloc(o->ntasks, sizeof(*o->start));
	o->end = calloc(o->ntasks, sizeof(*o->end));
	cr_assert(o->start && o->end);
	for (t = 0; t < o->ntasks; t++) {
		o->start[t] = units_s_to_ns(exec_task_start_s(p, t));
		o->end[t] = units_s_to_ns(exec_task_end_s(p, t));
	}
	prog_free(p);
	net_free(net);
	sim_free(sim);
}

/* Seeds 1-8 as flows and replayed: the same ns for every task. */
static void compare(const struct coll_path *path)
{
	struct arena a;
	const struct system_spec *sys;
	uint64_t seed, replays = 0, resumed = 0, reheld = 0, reclaimed = 0;
	int k;

	arena_init(&a);
	sys = system_of(&a);
	for (seed = 1; seed <= 8; seed++) {
		struct outcome fl, rp;
		uint32_t t;

		run(sys, seed, path, 0, &fl);
		run(sys, seed, path, 1, &rp);
		cr_assert_eq(fl.st.replays, 0);
		replays += rp.st.replays;
		resumed += rp.st.resumed;
		reheld += rp.st.reheld;
		reclaimed += rp.st.reclaimed;
		cr_assert_eq(fl.ntasks, rp.ntasks);
		cr_assert_eq(fl.r.step_s, rp.r.step_s, "seed %llu: step %.9f s "
			     "as flows, %.9f s replayed",
			     (unsigned long long)seed, fl.r.step_s, rp.r.step_s);
		for (k = 0; k < EXEC_PART_COUNT; k++)
			cr_assert_eq(fl.r.part_s[k], rp.r.part_s[k]);
		for (t = 0; t < fl.ntasks; t++) {
			cr_assert_eq(fl.start[t], rp.start[t], "seed %llu task "
				     "%u: start %lld ns as flows, %lld ns "
				     "replayed", (unsigned long long)seed, t,
				     (long long)fl.start[t],
				     (long long)rp.start[t]);
			cr_assert_eq(fl.end[t], rp.end[t], "seed %llu task %u: "
				     "end %lld ns as flows, %lld ns replayed",
				     (unsigned long long)seed, t,
				     (long long)fl.end[t], (long long)rp.end[t]);
		}
		free(fl.start);
		free(fl.end);
		free(rp.start);
		free(rp.end);
	}
	cr_log_info("replays %llu, of which %llu became flows, %llu on "
		    "parked links (%llu taken back)", (unsigned long long)replays,
		    (unsigned long long)resumed, (unsigned long long)reheld,
		    (unsigned long long)reclaimed);
	/* Every TP all-reduce is alone on its switch: replayed. Its links
	 * stay parked after it unless a rail collective between needs one
	 * of its GPUs' ports: some of the next round's take them back
	 * (reheld), not all. Some sends land on a ring's NIC: those rings
	 * become flows. */
	cr_assert_gt(replays, 0);
	cr_assert_gt(resumed, 0);
	cr_assert_lt(resumed, replays);
	cr_assert_gt(reheld, 0);
	cr_assert_lt(reheld, replays);
	/* Some collective took links of a parked one and let them go
	 * before the parked one's next call: it takes them back (crun.c
	 * take()) and replays without a pass over its links. */
	cr_assert_gt(reclaimed, 0);
	arena_release(&a);
}

Test(net_replay, replays_give_the_flow_level_times)
{
	compare(NULL);
}

/* DeepEP-like forwarding (the numbers of configs' deepep path are not
 * needed: any forward path's plan has flows that share links). */
Test(net_replay, path_replays_give_the_flow_level_times)
{
	static const struct coll_path fwd = {
		.mode = COLL_PATH_FORWARD, .setup_s = 5e-6,
		.hop_scale_up_s = 1e-6, .hop_scale_out_s = 3e-6,
		.eff_scale_up = 0.8, .eff_scale_out = 0.9, .node_share = 0.5,
		.name = "forward" };

	compare(&fwd);
}

/* The executor's memo per descriptor (comm.h comm_memo; net.c keeps a
 * descriptor's plan and trajectory there) gives what looking them up on
 * every start gives, to the ns: the program repeats each TP group at
 * drawn sizes (descriptors that differ in size alone, each its own
 * memo) and the rails' all-reduces, all-to-alls (uneven: never kept)
 * and sends, replayed and as flows, on the library and on a forwarding
 * path. A memo that handed a descriptor another's plan or trajectory (a
 * size's, a group's) would move some task's end. */
Test(net_replay, descriptor_memo_gives_the_lookups_times)
{
	static const struct coll_path fwd = {
		.mode = COLL_PATH_FORWARD, .setup_s = 5e-6,
		.hop_scale_up_s = 1e-6, .hop_scale_out_s = 3e-6,
		.eff_scale_up = 0.8, .eff_scale_out = 0.9, .node_share = 0.5,
		.name = "forward" };
	static const struct comm_ops lookup = { .start = comm_start_of_net };
	const struct coll_path *paths[2] = { NULL, &fwd };
	struct arena a;
	const struct system_spec *sys;
	uint64_t seed;
	int k, replay;

	arena_init(&a);
	sys = system_of(&a);
	cr_assert_not_null(net_comm_ops.start_memo);
	for (k = 0; k < 2; k++)
		for (replay = 0; replay <= 1; replay++)
			for (seed = 1; seed <= 3; seed++) {
				struct outcome m, l;
				uint32_t t;

				run_ops = &net_comm_ops;
				run(sys, seed, paths[k], replay, &m);
				run_ops = &lookup;
				run(sys, seed, paths[k], replay, &l);
				run_ops = &net_comm_ops;
				cr_assert_eq(m.ntasks, l.ntasks);
				cr_assert_eq(m.st.replays, l.st.replays);
				cr_assert_eq(m.r.step_s, l.r.step_s);
				for (t = 0; t < m.ntasks; t++) {
					cr_assert_eq(m.start[t], l.start[t],
						     "task %u", t);
					cr_assert_eq(m.end[t], l.end[t],
						     "task %u", t);
				}
				free(m.start);
				free(m.end);
				free(l.start);
				free(l.end);
			}
	arena_release(&a);
}

/* The forwarding path of the guest and late-replay tests: 5 us of setup
 * before an all-to-all's flows start. */
static const struct coll_path fwd_path = {
	.mode = COLL_PATH_FORWARD, .setup_s = 5e-6,
	.hop_scale_up_s = 1e-6, .hop_scale_out_s = 3e-6,
	.eff_scale_up = 0.8, .eff_scale_out = 0.9, .node_share = 0.5,
	.name = "forward" };

/* Whether run_outcome()'s nets replay pairs (crun_pair.c; on in a new
 * net). */
static int pairs_on = 1;
/* And the bytes their pairs may hold (net_set_pairs_max_bytes; 0: the
 * default). */
static size_t pairs_max_B;

/* Runs p (then frees it) on a fresh engine with replay and guests as
 * given (both on in a new net) and pairs as pairs_on; o gets the result, the network's counters and every task's end
 * in ns (o->end to be freed by the caller). */
static void run_outcome(const struct system_spec *sys, struct prog *p,
			int replay, int guests, struct outcome *o)
{
	struct diag d;
	struct sim *sim = sim_new();
	struct net *net;
	const char *why = NULL;
	uint32_t t;

	diag_init(&d, stderr);
	net = net_new(sys, sim, &d);
	cr_assert(sim && net);
	net_set_replay(net, replay);
	net_set_guests(net, guests);
	net_set_pairs(net, pairs_on);
	net_set_pairs_max_bytes(net, pairs_max_B);
	cr_assert_eq(exec_run(p, sim, &net_comm_ops, net, &o->r, &why), 0,
		     "%s", why ? why : "?");
	cr_assert(!net_failed(net), "%s", net_error(net));
	net_get_stats(net, &o->st);
	o->ntasks = prog_tasks(p);
	o->end = calloc(o->ntasks, sizeof(*o->end));
	cr_assert_not_null(o->end);
	for (t = 0; t < o->ntasks; t++)
		o->end[t] = units_s_to_ns(exec_task_end_s(p, t));
	prog_free(p);
	net_free(net);
	sim_free(sim);
}

/* Run b (the run under test) ends every task at the ns run a (as flows)
 * does. */
static void assert_same_ends(const struct outcome *a, const struct outcome *b,
			     uint64_t seed, int run)
{
	uint32_t t;

	cr_assert_eq(a->ntasks, b->ntasks);
	cr_assert_eq(a->r.step_s, b->r.step_s, "seed %llu run %d",
		     (unsigned long long)seed, run);
	for (t = 0; t < a->ntasks; t++)
		cr_assert_eq(a->end[t], b->end[t],
			     "seed %llu run %d task %u: %lld ns, %lld ns as "
			     "flows", (unsigned long long)seed, run, t,
			     (long long)b->end[t], (long long)a->end[t]);
}

/* A seeded program on a collective path (NULL: the library's). */
typedef struct prog *(*build_fn)(uint64_t, const struct coll_path *);

/* One way a seeded program runs: replay, guests and pairs on or off, and
 * the pairs' byte budget (0: the default). */
struct way {
	int replay, guests, pairs;
	size_t pairs_max_B;
};

/* As flows, replayed without pairs, replayed with them */
static const struct way pairs3[3] = {
	{ 0, 1, 0, 0 }, { 1, 1, 0, 0 }, { 1, 1, 1, 0 },
};
/* As flows and replayed, pairs on both (net_new()'s defaults) */
static const struct way pairs2[2] = { { 0, 1, 1, 0 }, { 1, 1, 1, 0 } };
/* As flows, replayed, replayed with a pairs' budget of 1 byte */
static const struct way budget3[3] = {
	{ 0, 1, 1, 0 }, { 1, 1, 1, 0 }, { 1, 1, 1, 1 },
};
/* As flows, replayed without guests, replayed with them */
static const struct way guests3[3] = {
	{ 0, 0, 1, 0 }, { 1, 0, 1, 0 }, { 1, 1, 1, 0 },
};

static void stats_add(struct net_stats *sum, const struct net_stats *s)
{
	sum->flows += s->flows;
	sum->guests += s->guests;
	sum->host_kept += s->host_kept;
	sum->late += s->late;
	sum->paired += s->paired;
	sum->pairs_recorded += s->pairs_recorded;
	sum->pairs_evicted += s->pairs_evicted;
}

/* Seeds 1 to `seeds` of make_prog(seed, path), each run the n ways w (w[0]
 * as flows): every other way ends every task at w[0]'s ns; each way's
 * counters summed over the seeds into sum[n] (zeroed here); each(o, seed)
 * sees a seed's outcomes first when given. */
static void over_seeds(const struct system_spec *sys, build_fn make_prog,
		       const struct coll_path *path, const struct way *w,
		       int n, uint64_t seeds,
		       void (*each)(const struct outcome *o, uint64_t seed),
		       struct net_stats *sum)
{
	uint64_t seed;
	int k;

	memset(sum, 0, (size_t)n * sizeof(*sum));
	for (seed = 1; seed <= seeds; seed++) {
		struct outcome o[3];

		cr_assert_leq(n, 3);
		for (k = 0; k < n; k++) {
			pairs_on = w[k].pairs;
			pairs_max_B = w[k].pairs_max_B;
			run_outcome(sys, make_prog(seed, path), w[k].replay,
				    w[k].guests, &o[k]);
			stats_add(&sum[k], &o[k].st);
		}
		pairs_on = 1;
		pairs_max_B = 0;
		if (each)
			each(o, seed);
		for (k = 1; k < n; k++)
			assert_same_ends(&o[0], &o[k], seed, k);
		for (k = 0; k < n; k++)
			free(o[k].end);
	}
}

/* Rounds of an all-to-all over every GPU on a forwarding path (its flows
 * bound on the NICs, the NVLink ports it forwards through with room)
 * and, on another stream, a drawn wait then a small send between two
 * GPUs of one node: the send starts on the NVLink ports the replayed
 * all-to-all holds, mostly mid-phase, often ending before the
 * all-to-all's next event (a guest, flow.c), sometimes not. */
static struct prog *build_guests(uint64_t seed, const struct coll_path *path)
{
	static const char *const names[] = { "gemm", "a2a", "pp" };
	struct prog *p = prog_new(NGPU, NSTREAMS);
	uint32_t all[NGPU], i, round;
	task_id last[NGPU];

	cr_assert_not_null(p);
	for (i = 0; i < NGPU; i++) {
		all[i] = i;
		last[i] = TASK_NONE;
	}
	for (round = 0; round < 8; round++) {
		double a2a_B = (double)(1 + lcg(&seed) % 64) * 1048576;
		struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = a2a_B,
				       .gpus = all, .ngpus = NGPU, .algo = -1,
				       .proto = -1, .path = path };
		struct task_info ai = { names[1], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info wi = { names[0], TASK_COMPUTE, (int32_t)round,
					1, TASK_PHASE_NONE };
		struct task_info pi = { names[2], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		task_id a, w, x;
		uint32_t k;

		task_id prev[NGPU];

		a = prog_coll(p, all, NGPU, S_DP, &c, &ai);
		for (i = 0; i < NGPU; i++) {
			prev[i] = last[i];
			if (last[i] != TASK_NONE)
				prog_dep(p, last[i], a + i);
			last[i] = a + i;
		}
		/* sends between GPUs 2k and 2k + 1 of node k % NODES */
		for (k = 0; k < 4; k++) {
			uint32_t g0 = (k % NODES) * GPN + 2 * k;
			uint32_t pair[2] = { g0, g0 + 1 };
			struct coll_desc s = {
				.op = COLL_SENDRECV,
				.bytes = (double)(1 + lcg(&seed) % 256) * 16384,
				.gpus = pair, .ngpus = 2, .algo = -1,
				.proto = -1 };

			w = prog_task(p, pair[0], S_COMPUTE,
				      (double)(lcg(&seed) % 2000) * 1e-6, &wi);
			/* from the previous all-to-all's end: this one's
			 * start */
			if (prev[pair[0]] != TASK_NONE)
				prog_dep(p, prev[pair[0]], w);
			x = prog_coll(p, pair, 2, S_PP, &s, &pi);
			prog_dep(p, w, x);
			(void)x;
		}
	}
	return p;
}

/* With guests and without (and as flows), every task at the same ns; some
 * flows must have been guests. */
Test(net_replay, guests_give_the_flow_level_times)
{
	struct arena a;
	struct net_stats sum[3];

	arena_init(&a);
	over_seeds(system_of(&a), build_guests, &fwd_path, guests3, 3, 6,
		   NULL, sum);
	cr_log_info("guests %llu", (unsigned long long)sum[2].guests);
	cr_assert_eq(sum[0].guests, 0);
	cr_assert_eq(sum[1].guests, 0);
	cr_assert_gt(sum[2].guests, 0);
	arena_release(&a);
}

/* A round's end in build_late() / build_pairs(): on every GPU a compute
 * task of wait_s[i] after its last task, then the round's collective c
 * over all GPUs after those; last[] becomes the collective's members. */
static void waits_then_coll(struct prog *p, task_id last[NGPU],
			    const double wait_s[NGPU],
			    const struct task_info *wi, const uint32_t *all,
			    const struct coll_desc *c,
			    const struct task_info *ai)
{
	task_id w[NGPU], a;
	uint32_t i;

	for (i = 0; i < NGPU; i++) {
		w[i] = prog_task(p, i, S_COMPUTE, wait_s[i], wi);
		if (last[i] != TASK_NONE)
			prog_dep(p, last[i], w[i]);
	}
	a = prog_coll(p, all, NGPU, S_DP, c, ai);
	for (i = 0; i < NGPU; i++) {
		prog_dep(p, w[i], a + i);
		last[i] = a + i;
	}
}

/* Rounds of an all-to-all over every GPU on a forwarding path (5 us of
 * setup before its flows start) and, at each all-to-all's end, a send
 * between two GPUs of one node on the NVLink ports the next all-to-all
 * crosses; the next all-to-all waits a drawn 0-12 us after that end, so
 * it often starts while the send is on those ports (it cannot replay
 * then) and the send has often ended when its flows are due 5 us later
 * (a late replay, crun.c), sometimes not (its flows start). */
static struct prog *build_late(uint64_t seed, const struct coll_path *path)
{
	static const char *const names[] = { "gemm", "a2a", "pp" };
	struct prog *p = prog_new(NGPU, NSTREAMS);
	uint32_t all[NGPU], i, round;
	task_id last[NGPU];

	cr_assert_not_null(p);
	for (i = 0; i < NGPU; i++) {
		all[i] = i;
		last[i] = TASK_NONE;
	}
	for (round = 0; round < 12; round++) {
		double a2a_B = (double)(1 + lcg(&seed) % 64) * 1048576;
		struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = a2a_B,
				       .gpus = all, .ngpus = NGPU, .algo = -1,
				       .proto = -1, .path = path };
		uint32_t pair[2] = { 2 * (round % 4), 2 * (round % 4) + 1 };
		struct coll_desc s = {
			.op = COLL_SENDRECV,
			.bytes = (double)(1 + lcg(&seed) % 256) * 65536,
			.gpus = pair, .ngpus = 2, .algo = -1, .proto = -1 };
		struct task_info ai = { names[1], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info wi = { names[0], TASK_COMPUTE, (int32_t)round,
					1, TASK_PHASE_NONE };
		struct task_info pi = { names[2], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		task_id x;
		double wait_s[NGPU];

		/* the send at the last all-to-all's end, the next one a
		 * drawn wait after it */
		x = prog_coll(p, pair, 2, S_PP, &s, &pi);
		if (last[pair[0]] != TASK_NONE) {
			prog_dep(p, last[pair[0]], x);
			prog_dep(p, last[pair[1]], x + 1);
		}
		for (i = 0; i < NGPU; i++)
			wait_s[i] = (double)(lcg(&seed) % 13) * 1e-6;
		waits_then_coll(p, last, wait_s, &wi, all, &c, &ai);
	}
	return p;
}

/* Replayed (with late replays) and as flows: every task at the same ns;
 * some replays must have been late ones, some all-to-alls flows (pairs
 * off), and with pairs on some sends replayed beside the all-to-all
 * whose links they wanted (crun_pair.c). */
Test(net_replay, late_replays_give_the_flow_level_times)
{
	struct arena a;
	struct net_stats sum[3];

	arena_init(&a);
	over_seeds(system_of(&a), build_late, &fwd_path, pairs3, 3, 6, NULL,
		   sum);
	cr_log_info("late replays %llu, flows %llu, pairs %llu",
		    (unsigned long long)sum[1].late,
		    (unsigned long long)sum[1].flows,
		    (unsigned long long)sum[2].paired);
	cr_assert_eq(sum[0].late, 0);
	cr_assert_eq(sum[1].paired, 0);
	cr_assert_gt(sum[1].late, 0);
	cr_assert_gt(sum[1].flows, 0);
	cr_assert_gt(sum[2].paired, 0);
	arena_release(&a);
}

/* Rounds of an uneven all-to-all over every GPU on a forwarding path
 * (each source's row drawn: its flows end one by one, the others' rates
 * change) and, on another stream of each of two GPU pairs of one node, a
 * chain of small sends from the all-to-all's start, each after a drawn
 * 0-24 us wait: several sends on the same NVLink ports while the
 * replayed all-to-all holds them, often in one state of it (no flow of
 * it ending or changing rate in between: crun_host.c keeps what the
 * first one read), sometimes after its next event (the state read
 * again), sometimes outlasting it (the all-to-all becomes flows). */
static struct prog *build_guest_chains(uint64_t seed,
				       const struct coll_path *path)
{
	static const char *const names[] = { "gemm", "a2a", "pp" };
	static double mat[6][NGPU * NGPU];	/* outlive the program */
	struct prog *p = prog_new(NGPU, NSTREAMS);
	uint32_t all[NGPU], i, j, round;
	task_id last[NGPU];

	cr_assert_not_null(p);
	for (i = 0; i < NGPU; i++) {
		all[i] = i;
		last[i] = TASK_NONE;
	}
	for (round = 0; round < 6; round++) {
		double a2a_B = 0;
		struct coll_desc c = { .op = COLL_ALLTOALL, .gpus = all,
				       .ngpus = NGPU, .algo = -1, .proto = -1,
				       .path = path };

		for (i = 0; i < NGPU; i++) {
			double row = (double)(1 + lcg(&seed) % 16) * 65536;

			for (j = 0; j < NGPU; j++) {
				mat[round][i * NGPU + j] = i == j ? 0 : row;
				a2a_B += mat[round][i * NGPU + j];
			}
		}
		c.bytes = a2a_B;
		c.a2a_B = mat[round];
		struct task_info ai = { names[1], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info wi = { names[0], TASK_COMPUTE, (int32_t)round,
					1, TASK_PHASE_NONE };
		struct task_info pi = { names[2], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		task_id a, prev[NGPU];
		uint32_t k, m;

		a = prog_coll(p, all, NGPU, S_DP, &c, &ai);
		for (i = 0; i < NGPU; i++) {
			prev[i] = last[i];
			if (last[i] != TASK_NONE)
				prog_dep(p, last[i], a + i);
			last[i] = a + i;
		}
		for (k = 0; k < 2; k++) {
			uint32_t g0 = (round % NODES) * GPN + 2 * k;
			uint32_t pair[2] = { g0, g0 + 1 };
			task_id after = prev[g0];

			for (m = 0; m < 6; m++) {
				struct coll_desc s = {
					.op = COLL_SENDRECV,
					.bytes = (double)(1 + lcg(&seed) % 16) *
						 4096,
					.gpus = pair, .ngpus = 2, .algo = -1,
					.proto = -1 };
				task_id w = prog_task(p, pair[0], S_COMPUTE,
						      (double)(lcg(&seed) % 25) *
						      1e-6, &wi);
				task_id x;

				if (after != TASK_NONE)
					prog_dep(p, after, w);
				x = prog_coll(p, pair, 2, S_PP, &s, &pi);
				prog_dep(p, w, x);
				after = x;
			}
		}
	}
	return p;
}

/* Guests in one state of their host read the sums an earlier guest's
 * read left (crun_host.c): every task at the flow-level run's ns, with
 * guests and without; some guests must have been, and some links'
 * sums must have been kept. */
Test(net_replay, guests_in_one_host_state_give_the_flow_level_times)
{
	struct arena a;
	struct net_stats sum[3];

	arena_init(&a);
	over_seeds(system_of(&a), build_guest_chains, &fwd_path, guests3, 3, 6,
		   NULL, sum);
	cr_log_info("guests %llu, links kept %llu",
		    (unsigned long long)sum[2].guests,
		    (unsigned long long)sum[2].host_kept);
	cr_assert_eq(sum[1].host_kept, 0);
	cr_assert_gt(sum[2].guests, 0);
	cr_assert_gt(sum[2].host_kept, 0);
	arena_release(&a);
}

/* Rounds of an all-to-all over every GPU on the forwarding path, of one
 * of two sizes, and at each one's end a send of 1 MiB between two GPUs
 * of one node on the NVLink ports the next all-to-all crosses, which
 * starts 3 us after that end on every GPU: the send's flows are due
 * while the all-to-all runs, at one of a few offsets into it, so the
 * pairs meet again and again (crun_pair.c: recorded once, replayed
 * after). On odd seeds, a drawn 0-40 us after that end, a send back
 * between the same two GPUs on another stream takes one of the
 * all-to-all's ports, sometimes while both of the pair run (they become
 * flows together), sometimes after the send ended (the all-to-all goes
 * on alone holding the ports they shared). */
/* The collective of build_pairs()' rounds (the pairs' hosts), and
 * whether odd seeds add a second send back on the first's links. */
static enum coll_op pairs_op = COLL_ALLTOALL;
static int pairs_more;

static struct prog *build_pairs(uint64_t seed, const struct coll_path *path)
{
	static const char *const names[] = { "gemm", "a2a", "pp" };
	struct prog *p = prog_new(NGPU, NSTREAMS);
	uint32_t all[NGPU], i, round;
	task_id last[NGPU];
	double sizes[2] = { (double)(8 + seed % 3) * 1048576,
			    (double)(20 + seed % 5) * 1048576 };

	cr_assert_not_null(p);
	for (i = 0; i < NGPU; i++) {
		all[i] = i;
		last[i] = TASK_NONE;
	}
	for (round = 0; round < 16; round++) {
		struct coll_desc c = { .op = pairs_op,
				       .bytes = sizes[lcg(&seed) % 2],
				       .gpus = all, .ngpus = NGPU, .algo = -1,
				       .proto = -1, .path = path };
		uint32_t pair[2] = { 2 * (round % 4), 2 * (round % 4) + 1 };
		uint32_t back[2] = { pair[1], pair[0] };
		struct coll_desc s = { .op = COLL_SENDRECV, .bytes = 16777216,
				       .gpus = pair, .ngpus = 2, .algo = -1,
				       .proto = -1 };
		struct coll_desc b = s;
		struct task_info ai = { names[1], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		struct task_info wi = { names[0], TASK_COMPUTE, (int32_t)round,
					1, TASK_PHASE_NONE };
		struct task_info pi = { names[2], TASK_COMM, (int32_t)round, 0,
					TASK_PHASE_NONE };
		task_id x;
		double wait_s[NGPU];

		b.gpus = back;
		x = prog_coll(p, pair, 2, S_PP, &s, &pi);
		if (last[pair[0]] != TASK_NONE) {
			prog_dep(p, last[pair[0]], x);
			prog_dep(p, last[pair[1]], x + 1);
		}
		if (seed % 2 && last[pair[0]] != TASK_NONE) {
			task_id v = prog_task(p, back[0], S_TP,
					      (double)(lcg(&seed) % 41) * 1e-6,
					      &wi);
			task_id y = prog_coll(p, back, 2, S_TP, &b, &pi);

			prog_dep(p, last[back[0]], v);
			prog_dep(p, v, y);
			prog_dep(p, last[back[1]], y + 1);
			if (pairs_more) {
				/* another send back, a drawn 0-60 us after
				 * the first send, on the second's links */
				task_id v2 = prog_task(p, back[0], S_PP,
						       (double)(lcg(&seed) % 61) *
						       1e-6, &wi);
				task_id y2 = prog_coll(p, back, 2, S_PP, &b,
						       &pi);

				prog_dep(p, x + 1, v2);
				prog_dep(p, v2, y2);
				prog_dep(p, x, y2 + 1);
			}
		}
		for (i = 0; i < NGPU; i++)
			wait_s[i] = 3e-6;
		waits_then_coll(p, last, wait_s, &wi, all, &c, &ai);
	}
	return p;
}

/* Pair replays (crun_pair.c) end every task at the flow-level run's ns
 * (replay off), as replays without pairs do; pairs must have been
 * replayed, more of them than recorded (met again at the same offset),
 * and some must have become flows together. */
Test(net_replay, pair_replays_give_the_flow_level_times)
{
	struct arena a;
	struct net_stats sum[3];

	arena_init(&a);
	over_seeds(system_of(&a), build_pairs, &fwd_path, pairs3, 3, 6, NULL,
		   sum);
	cr_log_info("pairs replayed %llu, recorded %llu, evicted %llu",
		    (unsigned long long)sum[2].paired,
		    (unsigned long long)sum[2].pairs_recorded,
		    (unsigned long long)sum[2].pairs_evicted);
	cr_assert_eq(sum[1].paired, 0);
	cr_assert_gt(sum[2].paired, sum[2].pairs_recorded);
	cr_assert_gt(sum[2].pairs_evicted, 0);
	arena_release(&a);
}

/* Four GPUs of one node, NVLink sends (a sender's out port, the
 * receiver's in port): h 0->1 from the start, alone (a replay); r 2->1
 * 20 us later, kept from 1's in port by h (a late run whose flows start
 * beside h: a pair, crun_pair.c), with 2's out port its own; x 0->3 at
 * 40 us on h's out port (h and r become flows together); y 2->3 at 60
 * us on r's out port and x's in port. Every flow then runs at half its
 * port: when h ends, r stays at half (y shares its out port), where the
 * pair's recording had it speed up after h's end. A flow adopted at the
 * pair's recorded end would end early; the flow-level run ends it where
 * its last rate change put it (crun.c adopt_phase). */
static struct prog *build_pair_slowed(void)
{
	static const char *const names[] = { "gemm", "pp" };
	static uint32_t hp[2] = { 0, 1 }, rp[2] = { 2, 1 }, xp[2] = { 0, 3 },
			yp[2] = { 2, 3 };
	static const struct {
		uint32_t *gpus;
		double bytes, at_s;
		int stream;
	} sends[4] = { { hp, 64 * 1048576.0, 0, S_PP },
		       { rp, 64 * 1048576.0, 20e-6, S_DP },
		       { xp, 16 * 1048576.0, 40e-6, S_TP },
		       { yp, 64 * 1048576.0, 60e-6, S_PP } };
	struct prog *p = prog_new(NGPU, NSTREAMS);
	double busy[NGPU] = { 0 };	/* each GPU's compute stream, s */
	int k;

	cr_assert_not_null(p);
	for (k = 0; k < 4; k++) {
		struct coll_desc s = { .op = COLL_SENDRECV,
				       .bytes = sends[k].bytes,
				       .gpus = sends[k].gpus, .ngpus = 2,
				       .algo = -1, .proto = -1 };
		struct task_info wi = { names[0], TASK_COMPUTE, k, 1,
					TASK_PHASE_NONE };
		struct task_info pi = { names[1], TASK_COMM, k, 0,
					TASK_PHASE_NONE };
		task_id x = prog_coll(p, sends[k].gpus, 2, sends[k].stream,
				      &s, &pi);
		int m;

		for (m = 0; m < 2; m++) {
			uint32_t g = sends[k].gpus[m];
			task_id w;

			/* a wait on g's compute stream to at_s */
			w = prog_task(p, g, S_COMPUTE, sends[k].at_s - busy[g],
				      &wi);
			busy[g] = sends[k].at_s;
			prog_dep(p, w, x + (task_id)m);
		}
	}
	return p;
}

/* The pair of build_pair_slowed() replays, becomes flows, and every task
 * ends at the flow-level run's ns. */
Test(net_replay, evicted_pair_ends_where_the_flow_level_run_does)
{
	struct arena a;
	const struct system_spec *sys;
	struct outcome o[2];
	int k;

	arena_init(&a);
	sys = system_of(&a);
	for (k = 0; k < 2; k++)
		run_outcome(sys, build_pair_slowed(), k, 1, &o[k]);
	cr_log_info("pairs replayed %llu, evicted %llu",
		    (unsigned long long)o[1].st.paired,
		    (unsigned long long)o[1].st.pairs_evicted);
	cr_assert_eq(o[1].st.paired, 1);
	cr_assert_eq(o[1].st.pairs_evicted, 1);
	assert_same_ends(&o[0], &o[1], 0, 1);
	for (k = 0; k < 2; k++)
		free(o[k].end);
	arena_release(&a);
}

/* Pairs of a ring all-gather or all-reduce over the 32 GPUs (the library
 * picks the algorithm) and a send, with a second send evicting them on
 * odd seeds: every task ends at the flow-level run's ns under evict()'s
 * order (crun.c phase_start: the run whose current phase started first
 * adopts first) and crun_pair.c ordered(). Not a test that the order
 * matters: these plans, like every pair this file meets, have one phase
 * each (instrumented: all evictions host first, both pending), so the
 * host's phase always started first; the library of system_of() offers
 * none of the multi-phase algorithms (RHD, HIER, TREE, PAIRWISE), and the
 * order of adoption changed no ns in the tests (report pairfix47). */
Test(net_replay, evicted_pairs_adopt_the_earlier_phase_first)
{
	static const enum coll_op ops[2] = { COLL_ALLGATHER, COLL_ALLREDUCE };
	struct arena a;
	const struct system_spec *sys;
	struct net_stats sum[2];
	uint64_t paired = 0, evicted = 0;
	int op;

	arena_init(&a);
	sys = system_of(&a);
	pairs_more = 1;
	for (op = 0; op < 2; op++) {
		pairs_op = ops[op];
		over_seeds(sys, build_pairs, NULL, pairs2, 2, 40, NULL, sum);
		paired += sum[1].paired;
		evicted += sum[1].pairs_evicted;
	}
	pairs_op = COLL_ALLTOALL;
	pairs_more = 0;
	cr_log_info("pairs replayed %llu, evicted %llu",
		    (unsigned long long)paired, (unsigned long long)evicted);
	cr_assert_gt(paired, 0);
	cr_assert_gt(evicted, 0);
	arena_release(&a);
}

/* The pairs' byte budget (crun_pair.c PAIRS_MAX_B): with 1 byte, the
 * first pair recorded fills it (any trajectory holds more), so each run
 * records exactly one pair where it meets any (the default records
 * more: build_pairs() meets at one of a few offsets, of two sizes) and
 * runs the other meetings as flows, ending every task at the flow-level
 * run's ns. */
/* One seed of pairs_stop_at_their_byte_budget: at most the one pair the
 * byte fills, and one exactly where the default budget records any */
static void one_pair_at_most(const struct outcome *o, uint64_t seed)
{
	cr_assert_leq(o[2].st.pairs_recorded, 1, "seed %llu",
		      (unsigned long long)seed);
	cr_assert_eq(o[2].st.pairs_recorded, o[1].st.pairs_recorded ? 1 : 0,
		     "seed %llu", (unsigned long long)seed);
}

Test(net_replay, pairs_stop_at_their_byte_budget)
{
	struct arena a;
	struct net_stats sum[3];

	arena_init(&a);
	over_seeds(system_of(&a), build_pairs, &fwd_path, budget3, 3, 6,
		   one_pair_at_most, sum);
	cr_assert_gt(sum[1].pairs_recorded, 6);
	arena_release(&a);
}

/* build_pair_slowed() with a send 2->0 after h (on r's own out port)
 * under every allocation failure in turn: where
 * h's flows fail to be adopted at the eviction, h ends there and then,
 * and what that starts must not find r still a replay (crun.c evict:
 * both stop before either resumes). Each run fails cleanly or ends. */
Test(net_replay, evicted_pair_survives_every_allocation_failure)
{
	struct arena a;
	const struct system_spec *sys;
	long n, ok = 0;

	arena_init(&a);
	sys = system_of(&a);
	for (n = 0; n < 200000 && !ok; n++) {
		static uint32_t zp[2] = { 2, 0 };
		struct prog *p = build_pair_slowed();
		struct coll_desc s = { .op = COLL_SENDRECV, .bytes = 1048576,
				       .gpus = zp, .ngpus = 2, .algo = -1,
				       .proto = -1 };
		struct task_info pi = { "pp", TASK_COMM, 9, 0,
					TASK_PHASE_NONE };
		struct diag d;
		struct sim *sim;
		struct net *net;
		struct exec_result r;
		const char *why = NULL;
		task_id z;

		z = prog_coll(p, zp, 2, S_TP, &s, &pi);
		/* after h's task on GPU 1 (task 1: build order) */
		prog_dep(p, 1, z);
		prog_dep(p, 1, z + 1);
		diag_init(&d, NULL);
		sim = sim_new();
		net = sim ? net_new(sys, sim, &d) : NULL;
		cr_assert(sim && net);
		mem_fail_after(n);
		if (exec_run(p, sim, &net_comm_ops, net, &r, &why) == 0 &&
		    !net_failed(net))
			ok = 1;
		mem_fail_after(-1);
		prog_free(p);
		net_free(net);
		sim_free(sim);
	}
	cr_assert(ok);
	arena_release(&a);
}
