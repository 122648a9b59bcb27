/*
 * test_sim.c - the event engine: order by (time, insertion), lazy
 * cancellation with generation-checked handles, stepping, stopping,
 * programming errors and allocation failure; and the queue's order
 * against a plain sorted reference over random schedules that exercise
 * its wheel, its far heap, its resizes and events due now.
 */
#include <criterion/criterion.h>
#include <signal.h>

#include "base/mem.h"
#include "engine/sim.h"

/* A log of which events ran, and when. */
struct log {
	int n;
	int id[64];
	units_ns_t at[64];
};

/* An event that records itself: arg points at a struct rec. */
struct rec {
	struct log *log;
	int id;
};

static void record(struct sim *sim, void *arg)
{
	struct rec *r = arg;

	cr_assert_lt(r->log->n, 64);
	r->log->id[r->log->n] = r->id;
	r->log->at[r->log->n++] = sim_now(sim);
}

Test(sim, runs_in_time_order)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec r[5];
	/* Scheduled out of order; they must run at 1, 2, 3, 4, 5 ns. */
	units_ns_t t[5] = { 5, 1, 3, 2, 4 };
	int i;

	for (i = 0; i < 5; i++) {
		r[i] = (struct rec){ &log, i };
		cr_assert_neq(sim_at(sim, t[i], record, &r[i]), 0);
	}
	cr_assert_eq(sim_pending(sim), 5);
	cr_assert_eq(sim_run(sim), 0);
	cr_assert_eq(log.n, 5);
	for (i = 0; i < 5; i++)
		cr_assert_eq(log.at[i], i + 1);
	/* Event i was scheduled at t[i]: the one at 1 ns is r[1], ... */
	cr_assert_eq(log.id[0], 1);
	cr_assert_eq(log.id[4], 0);
	cr_assert_eq(sim_now(sim), 5);
	cr_assert_eq(sim_events(sim), 5);
	cr_assert_eq(sim_pending(sim), 0);
	sim_free(sim);
}

Test(sim, ties_run_in_insertion_order)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec r[40];
	int i;

	/* 40 events at the same 7 ns, interleaved with later ones at 8 ns
	 * (odd ids): even ids run first, in the order they were added. */
	for (i = 0; i < 40; i++) {
		r[i] = (struct rec){ &log, i };
		sim_at(sim, i % 2 ? 8 : 7, record, &r[i]);
	}
	sim_run(sim);
	cr_assert_eq(log.n, 40);
	for (i = 0; i < 20; i++) {
		cr_assert_eq(log.id[i], 2 * i);
		cr_assert_eq(log.id[20 + i], 2 * i + 1);
	}
	sim_free(sim);
}

/* An event that schedules another at the same time, and one later. */
struct chain {
	struct log *log;
	struct rec same, later;
};

static void spawn(struct sim *sim, void *arg)
{
	struct chain *c = arg;

	sim_after(sim, 0, record, &c->same);
	sim_after(sim, 10, record, &c->later);
}

Test(sim, events_scheduled_now_run_after_those_already_due)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct chain c = { &log, { &log, 1 }, { &log, 2 } };
	struct rec other = { &log, 3 };

	/* spawn at 5 ns adds "same" at 5 ns; "other" was already due at
	 * 5 ns, so it runs first: 3 (5 ns), 1 (5 ns), 2 (5 + 10 = 15 ns). */
	sim_at(sim, 5, spawn, &c);
	sim_at(sim, 5, record, &other);
	sim_run(sim);
	cr_assert_eq(log.n, 3);
	cr_assert_eq(log.id[0], 3);
	cr_assert_eq(log.id[1], 1);
	cr_assert_eq(log.id[2], 2);
	cr_assert_eq(log.at[1], 5);
	cr_assert_eq(log.at[2], 15);
	/* 1 spawn + 3 records */
	cr_assert_eq(sim_events(sim), 4);
	sim_free(sim);
}

/* Records r (ids 1, 2, 3, into log) at t, 2t and 3t ns, the middle one
 * cancelled; its handle. */
static sim_id middle_cancelled(struct sim *sim, struct log *log,
			       struct rec r[3], units_ns_t t)
{
	sim_id mid;
	int i;

	for (i = 0; i < 3; i++)
		r[i] = (struct rec){ log, i + 1 };
	sim_at(sim, t, record, &r[0]);
	mid = sim_at(sim, 2 * t, record, &r[1]);
	sim_at(sim, 3 * t, record, &r[2]);
	sim_cancel(sim, mid);
	return mid;
}

Test(sim, cancel_drops_an_event)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec r[3];
	sim_id ib;

	/* 1 at 1 ns, 2 at 2 ns (cancelled), 3 at 3 ns */
	ib = middle_cancelled(sim, &log, r, 1);
	/* 3 scheduled - 1 cancelled = 2 live. */
	cr_assert_eq(sim_pending(sim), 2);
	/* Cancelling twice changes nothing. */
	sim_cancel(sim, ib);
	cr_assert_eq(sim_pending(sim), 2);
	sim_run(sim);
	cr_assert_eq(log.n, 2);
	cr_assert_eq(log.id[0], 1);
	cr_assert_eq(log.id[1], 3);
	cr_assert_eq(sim_events(sim), 2);
	sim_free(sim);
}

Test(sim, cancel_of_an_event_that_ran_is_ignored)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec a = { &log, 1 }, b = { &log, 2 };
	sim_id ia;

	ia = sim_at(sim, 1, record, &a);
	cr_assert_eq(sim_step(sim), 1);
	/* a ran; its slot is free and reused by b. The old handle must not
	 * cancel b. */
	sim_at(sim, 2, record, &b);
	sim_cancel(sim, ia);
	cr_assert_eq(sim_pending(sim), 1);
	sim_run(sim);
	cr_assert_eq(log.n, 2);
	cr_assert_eq(log.id[1], 2);
	sim_free(sim);
}

Test(sim, stale_handle_after_cancel_and_reuse)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec a = { &log, 1 }, b = { &log, 2 };
	sim_id ia, ib;

	ia = sim_at(sim, 1, record, &a);
	sim_cancel(sim, ia);
	/* The cancelled record leaves the heap when it reaches the top;
	 * step past it (nothing live runs). */
	cr_assert_eq(sim_step(sim), 0);
	ib = sim_at(sim, 2, record, &b);
	cr_assert_neq(ib, ia, "a reused slot gets a new handle");
	sim_cancel(sim, ia);
	cr_assert_eq(sim_pending(sim), 1);
	sim_run(sim);
	cr_assert_eq(log.n, 1);
	cr_assert_eq(log.id[0], 2);
	sim_free(sim);
}

Test(sim, invalid_handles_are_ignored)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec a = { &log, 1 };
	sim_id ia = sim_at(sim, 1, record, &a);

	sim_cancel(sim, 0);
	sim_cancel(sim, ia + 1000);		/* slot never used */
	sim_cancel(sim, ia ^ (sim_id)1 << 40);	/* wrong generation */
	cr_assert_eq(sim_pending(sim), 1);
	sim_run(sim);
	cr_assert_eq(log.n, 1);
	sim_free(sim);
}

Test(sim, slots_are_reused)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec a = { &log, 1 };
	int i;

	/* 10000 schedule/cancel/step cycles keep at most one record alive;
	 * the last event is the only one that runs. */
	for (i = 0; i < 10000; i++) {
		sim_id id = sim_at(sim, i, record, &a);

		cr_assert_neq(id, 0);
		sim_cancel(sim, id);
		cr_assert_eq(sim_step(sim), 0);
	}
	sim_at(sim, 10000, record, &a);
	sim_run(sim);
	cr_assert_eq(log.n, 1);
	cr_assert_eq(log.at[0], 10000);
	cr_assert_eq(sim_events(sim), 1);
	sim_free(sim);
}

Test(sim, step_runs_one_event_at_a_time)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec r[3];

	/* 1 at 10 ns, 2 at 20 ns (cancelled), 3 at 30 ns */
	middle_cancelled(sim, &log, r, 10);
	cr_assert_eq(sim_now(sim), 0);
	cr_assert_eq(sim_step(sim), 1);
	cr_assert_eq(sim_now(sim), 10);
	cr_assert_eq(log.n, 1);
	/* The cancelled event at 20 ns is skipped: the next step runs 3. */
	cr_assert_eq(sim_step(sim), 1);
	cr_assert_eq(sim_now(sim), 30);
	cr_assert_eq(log.id[1], 3);
	cr_assert_eq(sim_step(sim), 0);
	cr_assert_eq(sim_now(sim), 30);
	sim_free(sim);
}

static void stopper(struct sim *sim, void *arg)
{
	record(sim, arg);
	sim_stop(sim);
}

Test(sim, stop_returns_after_the_current_event)
{
	struct sim *sim = sim_new();
	struct log log = { 0 };
	struct rec a = { &log, 1 }, b = { &log, 2 };

	sim_at(sim, 1, stopper, &a);
	sim_at(sim, 2, record, &b);
	cr_assert_eq(sim_run(sim), 0);
	cr_assert_eq(log.n, 1);
	cr_assert_eq(sim_pending(sim), 1);
	/* Running again carries on. */
	cr_assert_eq(sim_run(sim), 0);
	cr_assert_eq(log.n, 2);
	sim_free(sim);
}

static void nothing(struct sim *sim, void *arg)
{
	(void)sim;
	(void)arg;
}

static void schedule_in_past(struct sim *sim, void *arg)
{
	(void)arg;
	sim_at(sim, sim_now(sim) - 1, nothing, NULL);
}

Test(sim, scheduling_in_the_past_is_a_bug, .signal = SIGABRT)
{
	struct sim *sim = sim_new();

	sim_at(sim, 5, schedule_in_past, NULL);
	sim_run(sim);
}

Test(sim, negative_delay_is_a_bug, .signal = SIGABRT)
{
	struct sim *sim = sim_new();

	sim_after(sim, -1, nothing, NULL);
}

Test(sim, allocation_failure_is_sticky)
{
	struct sim *sim = sim_new();

	/* No allocation may succeed: the first sim_at must grow the heap. */
	mem_fail_after(0);
	cr_assert_eq(sim_at(sim, 1, nothing, NULL), 0);
	mem_fail_after(-1);
	cr_assert(sim_failed(sim));
	/* Once failed, scheduling keeps failing and run reports it. */
	cr_assert_eq(sim_at(sim, 1, nothing, NULL), 0);
	cr_assert_eq(sim_run(sim), -1);
	sim_free(sim);
}

Test(sim, allocation_failure_sweep)
{
	long n;

	/* Fail the n-th allocation for every n a 2000-event run makes: each
	 * run either completes all 2000 events or reports failure; nothing
	 * leaks (checked under make check). */
	for (n = 0;; n++) {
		struct sim *sim;
		int i, failed = 0;

		mem_fail_after(n);
		sim = sim_new();
		if (!sim)
			continue;
		for (i = 0; i < 2000; i++)
			if (sim_at(sim, 2000 - i, nothing, NULL) == 0)
				failed = 1;
		/* The queue also allocates as it runs (a bucket sorted into
		 * the run order, a resize): a failure there is reported the
		 * same way. A failure while scheduling always is. */
		if (failed)
			cr_assert_eq(sim_run(sim), -1);
		else if (sim_run(sim) != 0)
			failed = 1;
		cr_assert_eq(sim_failed(sim), failed);
		if (!failed)
			cr_assert_eq(sim_events(sim), 2000);
		sim_free(sim);
		if (!failed)
			break;
	}
	mem_fail_after(-1);
	/* Heap and pool double from 256 to 2048: at least one failure
	 * point was swept. */
	cr_assert_gt(n, 1);
}

/* ---- the queue against a reference ---- */

/* An event of the random workload: when it runs it logs itself and may
 * schedule more (at now, in the near future, far ahead) or cancel one. */
struct rw {
	struct sim *sim;
	uint64_t rng;
	uint32_t left;		/* events still to schedule */
	uint32_t nlog;
	uint32_t *log;		/* ids in the order they ran */
	units_ns_t *at;		/* their times */
	sim_id *ids;		/* handle of each id */
	units_ns_t *due;	/* time each id was scheduled for */
	uint8_t *cancelled;
	uint8_t *ran;
	uint32_t next_id;
	uint32_t cap;
};

struct rw_ev {
	struct rw *w;
	uint32_t id;
};

static uint64_t rw_rand(struct rw *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static struct rw_ev *rw_evs;

static void rw_run(struct sim *sim, void *arg);

/* Schedule one more event dt ahead (delays from 0 to seconds, with bursts
 * at the same instant), unless the budget is spent. */
static void rw_schedule(struct rw *w, units_ns_t dt)
{
	uint32_t id;

	if (w->left == 0 || w->next_id == w->cap)
		return;
	w->left--;
	id = w->next_id++;
	rw_evs[id] = (struct rw_ev){ w, id };
	w->due[id] = sim_now(w->sim) + dt;
	w->ids[id] = sim_at(w->sim, w->due[id], rw_run, &rw_evs[id]);
	cr_assert_neq(w->ids[id], 0);
}

static units_ns_t rw_delay(struct rw *w)
{
	switch (rw_rand(w) % 8) {
	case 0: return 0;				/* due now */
	case 1: return (units_ns_t)(rw_rand(w) % 4);	/* same bucket */
	case 2: return (units_ns_t)(rw_rand(w) % 5000000000u); /* far */
	default: return (units_ns_t)(rw_rand(w) % 100000);
	}
}

static void rw_run(struct sim *sim, void *arg)
{
	struct rw_ev *e = arg;
	struct rw *w = e->w;
	uint32_t k, n = (uint32_t)(rw_rand(w) % 3);

	w->log[w->nlog] = e->id;
	w->at[w->nlog++] = sim_now(sim);
	w->ran[e->id] = 1;
	for (k = 0; k < n; k++)
		rw_schedule(w, rw_delay(w));
	if (w->next_id > 0 && rw_rand(w) % 5 == 0) {
		uint32_t victim = (uint32_t)(rw_rand(w) % w->next_id);

		sim_cancel(sim, w->ids[victim]);
		if (!w->ran[victim])
			w->cancelled[victim] = 1;
	}
}

/* The reference order: every scheduled, uncancelled id, by (due, id);
 * ids are handed out in scheduling order, so id order is sequence
 * order. */
static const struct rw *rw_sorting;

static int by_due(const void *a, const void *b)
{
	const struct rw *w = rw_sorting;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	if (w->due[x] != w->due[y])
		return w->due[x] < w->due[y] ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* Run a first wave of `wave` events, then up to n in all, and compare the
 * order with the reference. */
static void rw_check(uint32_t wave, uint32_t N)
{
	struct rw w = { 0 };
	uint32_t *ref, nref = 0, i;

	w.sim = sim_new();
	w.rng = 0x9e3779b97f4a7c15ull;
	w.left = N;
	w.cap = N;
	w.log = calloc(N, sizeof(*w.log));
	w.at = calloc(N, sizeof(*w.at));
	w.ids = calloc(N, sizeof(*w.ids));
	w.due = calloc(N, sizeof(*w.due));
	w.cancelled = calloc(N, 1);
	w.ran = calloc(N, 1);
	rw_evs = calloc(N, sizeof(*rw_evs));
	ref = calloc(N, sizeof(*ref));
	cr_assert(w.sim && w.log && w.at && w.ids && w.due && w.cancelled &&
		  w.ran && rw_evs && ref);
	for (i = 0; i < wave; i++)
		rw_schedule(&w, rw_delay(&w));
	cr_assert_eq(sim_run(w.sim), 0);
	/* A cancel may hit an event that already ran (ignored): only those
	 * cancelled before they ran count. */
	for (i = 0; i < w.next_id; i++)
		if (!w.cancelled[i])
			ref[nref++] = i;
	rw_sorting = &w;
	qsort(ref, nref, sizeof(*ref), by_due);
	cr_assert_eq(w.nlog, nref, "%u events ran, the reference has %u",
		     w.nlog, nref);
	for (i = 0; i < nref; i++) {
		cr_assert_eq(w.log[i], ref[i], "event %u: ran id %u, the "
			     "reference runs id %u", i, w.log[i], ref[i]);
		cr_assert_eq(w.at[i], w.due[ref[i]]);
	}
	sim_free(w.sim);
	free(w.log);
	free(w.at);
	free(w.ids);
	free(w.due);
	free(w.cancelled);
	free(w.ran);
	free(rw_evs);
	free(ref);
}

Test(sim, order_matches_a_sorted_reference)
{
	/* 20,000 at random times, then what they schedule as they run: the
	 * wheel at its smallest, the far heap, events due now. */
	rw_check(20000, 200000);
	/* 1,200,000 at once: past 4 x 256 x 256 pending keys the wheel grows
	 * (twice) while they are scheduled, and shrinks as they run out. */
	rw_check(1200000, 1300000);
}
