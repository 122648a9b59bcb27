/*
 * test_step.c - the fabric as the executor's comm backend: collectives
 * started on one engine share links, re-solve on every start and end,
 * and always call back.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "fixtures.h"
#include "network/net.h"

#define GiB 1073741824.0

struct done_rec {
	struct sim *sim;
	units_ns_t at;		/* ns, when done() ran; -1 before */
};

static void done(void *token)
{
	struct done_rec *r = token;

	r->at = sim_now(r->sim);
}

struct env {
	struct fx f;
	struct sim *sim;
	struct net *net;
};

static void env_init(struct env *e, int64_t nodes)
{
	struct diag d;

	diag_init(&d, stderr);
	fx_switch(&e->f, nodes);
	e->sim = sim_new();
	cr_assert_not_null(e->sim);
	e->net = net_new(&e->f.sys, e->sim, &d);
	cr_assert_not_null(e->net);
}

static void env_release(struct env *e)
{
	net_free(e->net);
	sim_free(e->sim);
}

static const uint32_t pair[2] = { 0, 8 };	/* node 0 GPU 0 -> node 1 GPU 0 */
static const uint32_t node0[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
static const uint32_t node1[8] = { 8, 9, 10, 11, 12, 13, 14, 15 };

static struct coll_desc send_1g(void)
{
	struct coll_desc c = { COLL_SENDRECV, GiB, pair, 2, NULL, -1, -1, 1, 0, NULL, 0, 0, 0 };

	return c;
}

static void start(struct env *e, const struct coll_desc *c,
		  struct done_rec *r)
{
	r->sim = e->sim;
	r->at = -1;
	net_comm_ops.start(e->net, c, done, r);
}

Test(net_step, shared_nic_halves_the_rate)
{
	struct env e;
	struct coll_desc c = send_1g();
	struct done_rec a, b;
	double alone;

	env_init(&e, 2);
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	/* Alone: 1 GiB over the rail-0 NIC at 50 GB/s. */
	alone = GiB / 50e9;
	cr_assert_float_eq(units_ns_to_s(a.at), alone, 1e-9);
	env_release(&e);

	env_init(&e, 2);
	start(&e, &c, &a);
	start(&e, &c, &b);
	cr_assert_eq(sim_run(e.sim), 0);
	/* Two at once on the same NIC: 25 GB/s each, both done at 2x. */
	cr_assert_float_eq(units_ns_to_s(a.at), 2 * alone, 1e-9);
	cr_assert_float_eq(units_ns_to_s(b.at), 2 * alone, 1e-9);
	cr_assert(!net_failed(e.net));
	env_release(&e);
}

struct later {
	struct env *e;
	struct coll_desc c;
	struct done_rec *r;
};

static void start_later(struct sim *sim, void *arg)
{
	struct later *l = arg;

	(void)sim;
	start(l->e, &l->c, l->r);
}

Test(net_step, a_late_start_reschedules_the_first)
{
	struct env e;
	struct done_rec a, b;
	struct later l;
	double T = GiB / 50e9;

	env_init(&e, 2);
	l = (struct later){ &e, send_1g(), &b };
	start(&e, &l.c, &a);
	sim_at(e.sim, units_s_to_ns(T / 2), start_later, &l);
	cr_assert_eq(sim_run(e.sim), 0);
	/* A runs alone for T/2 (half done), then shares at 25 GB/s: its
	 * other half takes T -> ends at 1.5 T. B has then moved half and
	 * finishes alone in T/2 -> 2 T. */
	cr_assert_float_eq(units_ns_to_s(a.at), 1.5 * T, 2e-9);
	cr_assert_float_eq(units_ns_to_s(b.at), 2 * T, 2e-9);
	env_release(&e);
}

Test(net_step, disjoint_collectives_do_not_interfere)
{
	struct env e;
	struct coll_desc c0 = { COLL_ALLREDUCE, GiB, node0, 8, NULL,
				ALGO_RING, -1, 1, 0, NULL, 0, 0, 0 };
	struct coll_desc c1 = c0;
	struct done_rec a, b;

	c1.gpus = node1;
	env_init(&e, 2);
	start(&e, &c0, &a);
	start(&e, &c1, &b);
	cr_assert_eq(sim_run(e.sim), 0);
	/* Each node's ring stays on its own switch links:
	 * 1.75 * 1 GiB / 450 GB/s each, at the same time. */
	cr_assert_float_eq(units_ns_to_s(a.at), 1.75 * GiB / 450e9, 1e-9);
	cr_assert_eq(a.at, b.at);
	env_release(&e);
}

Test(net_step, repeated_collectives_reuse_their_plan)
{
	struct env e;
	struct coll_desc c = send_1g();
	struct done_rec a;
	struct net_stats st;
	units_ns_t t0;
	int i;

	env_init(&e, 2);
	for (i = 0; i < 3; i++) {
		start(&e, &c, &a);
		cr_assert_eq(sim_run(e.sim), 0);
	}
	net_get_stats(e.net, &st);
	/* Three starts; the first builds the plan (timing the candidates to
	 * choose) and records its trajectory on the idle fabric; the later
	 * two find both in the memo. Each finds its links idle, so all three
	 * are replayed: no flow started. */
	cr_assert_eq(st.collectives, 3);
	cr_assert_eq(st.replays, 3);
	cr_assert_eq(st.flows, 0);
	/* Another size of the same collective: plans are per byte, so it
	 * reuses the plan from the cache, and moves 4 GiB alone at 50 GB/s. */
	c.bytes = 4 * GiB;
	t0 = sim_now(e.sim);
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	net_get_stats(e.net, &st);
	cr_assert_geq(st.plan_hits, 1);
	cr_assert_float_eq(units_ns_to_s(a.at - t0), 4 * GiB / 50e9, 1e-9);
	env_release(&e);
}

/* net_attach() starts the comm_start memo empty: the next engine's
 * collective asks the plan cache (plan hits counted) and takes the same
 * plan and trajectory, so the same time; a repeat on that engine finds
 * the memo again (no plan hit). Kept across engines (before round 41),
 * the second engine's start found the memo: no plan hit either. */
Test(net_step, attach_starts_an_empty_memo)
{
	struct env e;
	struct coll_desc c = send_1g();
	struct done_rec a;
	struct net_stats st;
	struct sim *second;
	uint64_t built, asked;
	units_ns_t t0;

	env_init(&e, 2);
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	net_get_stats(e.net, &st);
	built = st.plan_hits;	/* the choice's own lookups */
	/* 1 GiB over the rail-0 NIC at 50 GB/s (shared_nic_halves_the_rate) */
	cr_assert_float_eq(units_ns_to_s(a.at), GiB / 50e9, 1e-9);
	second = sim_new();
	cr_assert_not_null(second);
	cr_assert_eq(net_attach(e.net, second), 0);
	sim_free(e.sim);
	e.sim = second;
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	net_get_stats(e.net, &st);
	asked = st.plan_hits;
	cr_assert_gt(asked, built, "the memo missed, the cache answered");
	cr_assert_float_eq(units_ns_to_s(a.at), GiB / 50e9, 1e-9);
	t0 = sim_now(e.sim);
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	net_get_stats(e.net, &st);
	cr_assert_eq(st.plan_hits, asked, "the memo answered the repeat");
	cr_assert_float_eq(units_ns_to_s(a.at - t0), GiB / 50e9, 1e-9);
	env_release(&e);
}

Test(net_step, a_bad_collective_still_completes_and_is_reported)
{
	struct env e;
	uint32_t bad[2] = { 0, 1000 };
	struct coll_desc c = { COLL_ALLREDUCE, 1e6, bad, 2, NULL, -1, -1, 1, 0, NULL, 0, 0, 0 };
	struct done_rec a;

	env_init(&e, 2);
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	/* GPU 1000 does not exist: the step must not hang, and must know. */
	cr_assert_eq(a.at, 0);
	cr_assert(net_failed(e.net));
	cr_assert_not_null(strstr(net_error(e.net), "past the system"));
	env_release(&e);
}

Test(net_step, a_transfer_past_the_engine_horizon_is_reported)
{
	/* Issue 8: 1 bit/s lanes made a flow's end time wrap ("event
	 * scheduled in the past"). A send of 1e21 B between nodes over one
	 * NIC lasts at least 1e21 / 50e9 = 2e10 s, past the engine's
	 * horizon (2^62 ns = 4.6e9 s): the collective completes at once,
	 * as any failed one does, and the network says why. */
	struct env e;
	struct coll_desc c = send_1g();
	struct done_rec a;

	c.bytes = 1e21;
	env_init(&e, 2);
	start(&e, &c, &a);
	cr_assert_eq(sim_run(e.sim), 0);
	cr_assert_geq(a.at, 0);
	cr_assert(net_failed(e.net));
	cr_assert_not_null(strstr(net_error(e.net),
				  "longer than the engine represents"),
			   "%s", net_error(e.net));
	env_release(&e);
}
