/*
 * flow.c - flows as max-min variables with completion events.
 *
 * Each topology link is one constraint of capacity cap_Bps (constraint id
 * = link id). A flow is one variable. Its bytes left are exact at t_last;
 * between rate changes it drains linearly, so at a re-solve
 *     left_B -= rate_Bps * (now - t_last)
 * and its completion moves to now + left_B / new_rate (rounded to the
 * engine's nanosecond). When the completion event fires, the flow is done
 * by construction; rounding never leaves it a sliver of bytes to finish.
 *
 * Guests. A flow that starts on links a running replay holds (crun.c)
 * would evict it: the replay's flows become variables (~88-176 links
 * each for a DeepEP all-to-all: 5,600-22,500 elements linked, then
 * unlinked when they end) although a short flow beside them usually
 * moves none of their rates and ends before the replay's next event.
 * Such a flow is kept as the replay's guest instead, outside the
 * solver, while the system with it in would give the same numbers:
 *   - it starts on links all held by one running replay whose next
 *     event (a flow's end or rate change, a phase's start) is after
 *     now, which has no other guest, with no solve pending yet;
 *   - at the solve event, the batch settles without a re-solve
 *     (maxmin_local.c) with the guest last on each of its lists behind
 *     the replay's flows of the phase in plan order at their recorded
 *     rates (what the adoption would have put there: crun_host_links()
 *     sums them in that order, so its rate is the same bits), and it
 *     ends before that next event;
 *   - at its end, its removal would need no re-solve either.
 * Whenever one of these fails, or another flow starts on the replay's
 * links, the replay is evicted then and the guest becomes the variable
 * it would have been (added after the adopted flows, at its rate if it
 * has one), as if it had been one all along. What it leaves out: the
 * variable ids and event order of the flow-level run differ when other
 * changes fall in the same batch (only ties between equal times can
 * tell), and the replay's events stay one event (the run's event count
 * drops).
 */
#include "flow.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "maxmin.h"

#define GUEST_MAX_LINKS 8	/* a guest crosses at most these links */
#define GUEST_MAX_BATCH 8	/* guests settled in one solve, at most
				 * (mm_local() settles 8 new variables) */

/* A guest's lists beside it (flow_set_host's links_fn), per link. */
struct guest_lists {
	double cap[GUEST_MAX_LINKS];	/* B/s */
	double left[GUEST_MAX_LINKS];	/* B/s */
	double maxr[GUEST_MAX_LINKS];	/* B/s */
	uint32_t cnt[GUEST_MAX_LINKS];
};

struct flow {
	struct flownet *net;
	mm_id var;
	double left_B;		/* B left at t_last */
	double rate_Bps;	/* B/s since t_last */
	units_ns_t t_last;	/* ns */
	sim_id ev;		/* completion event; 0 = none */
	flow_done_fn done;
	void *arg;
	struct flow *prev, *next;	/* live flows, or next = free list */
	/* a guest (var MM_NONE): its host and what its variable needs */
	void *host;		/* the replay it is the guest of, or NULL */
	const uint32_t *links;	/* the caller's, live while the flow is */
	const double *coef;
	uint32_t n;
	double bound_Bps;
	units_ns_t host_next;	/* ns, the host's next event */
	struct guest_lists gl;	/* what its lists hold beside it, from
				 * its solve (the host's flows stay as
				 * they are until it ends) */
};



struct flownet {
	const struct topo *topo;
	struct sim *sim;
	struct mm *mm;
	struct flow *free_list;
	struct flow *live;	/* flows started and not yet done */
	sim_id solve_ev;	/* pending solve event; 0 = none */
	void **holder;		/* per link: what holds it, or NULL */
	void (*evict)(void *holder);
	int (*take)(void *holder, uint32_t link);
	units_ns_t (*host_next)(void *holder);
	void (*host_links)(void *holder, const uint32_t *links, uint32_t n,
			   double *left, uint32_t *cnt, double *maxr);
	struct flow **guest;	/* guests, in start order */
	uint32_t nguest, capguest;
	int guests;		/* keep guests (the default) */
	int mixed;		/* the pending solve has a change other
				 * than a guest's start */
	uint64_t nguests;	/* flows that ended as guests */
	void (*observe)(void *arg, units_ns_t now, double left_B,
			double rate_Bps);
	uint64_t solves, resolved;
	int failed;		/* 0, FAIL_OOM or FAIL_TOO_LONG (the first) */
};

enum { FAIL_OOM = 1, FAIL_TOO_LONG = 2 };

static void set_failed(struct flownet *f, int why)
{
	if (!f->failed)
		f->failed = why;
}

struct flownet *flow_new(const struct topo *t, struct sim *sim)
{
	struct flownet *f = mem_calloc(1, sizeof(*f));
	uint32_t i;

	if (!f)
		return NULL;
	f->topo = t;
	f->sim = sim;
	f->mm = mm_new();
	f->guests = 1;
	f->holder = mem_calloc(t->nlinks + 1, sizeof(*f->holder));
	/* one allocation for every link's constraint: grown by doubling,
	 * a 16,384-GPU fabric's were copied and faulted in ~12 times */
	if (!f->mm || !f->holder || mm_cons_reserve(f->mm, t->nlinks) != 0)
		goto fail;
	for (i = 0; i < t->nlinks; i++)
		if (mm_cons_add(f->mm, t->links[i].cap_Bps) != i)
			goto fail;
	return f;
fail:
	flow_free(f);
	return NULL;
}

int flow_attach(struct flownet *f, struct sim *sim)
{
	if (f->live || f->solve_ev || f->failed)
		return -1;
	f->sim = sim;
	f->solves = f->resolved = f->nguests = 0;
	f->nguest = 0;
	return 0;
}

double flow_link_cap(const struct flownet *f, uint32_t l)
{
	return f->topo->links[l].cap_Bps;
}

static void free_chain(struct flow *fl)
{
	while (fl) {
		struct flow *next = fl->next;

		mem_free(fl);
		fl = next;
	}
}

/* Flows still live (an engine stopped early) go with the flownet; their
 * variables go with the solver. */
void flow_free(struct flownet *f)
{
	if (!f)
		return;
	free_chain(f->free_list);
	free_chain(f->live);
	mm_free(f->mm);
	mem_free(f->guest);
	mem_free(f->holder);
	mem_free(f);
}

static struct flow *flow_take(struct flownet *f)
{
	struct flow *fl = f->free_list;

	if (fl) {
		f->free_list = fl->next;
		return fl;
	}
	return mem_alloc(sizeof(*fl));
}

static void flow_put(struct flownet *f, struct flow *fl)
{
	fl->next = f->free_list;
	f->free_list = fl;
}

static void link_live(struct flownet *f, struct flow *fl)
{
	fl->prev = NULL;
	fl->next = f->live;
	if (f->live)
		f->live->prev = fl;
	f->live = fl;
}

static void unlink_live(struct flownet *f, struct flow *fl)
{
	if (fl->prev)
		fl->prev->next = fl->next;
	else
		f->live = fl->next;
	if (fl->next)
		fl->next->prev = fl->prev;
}

static void complete(struct sim *sim, void *arg);

/* The max-min solver's report: bring the flow up to date, reschedule. */
static void on_change(mm_id var, double old_Bps, double new_Bps, void *data,
		      void *arg)
{
	struct flow *fl = data;
	struct flownet *f = arg;
	units_ns_t now = sim_now(f->sim), at;
	double dt_s = units_ns_to_s(now - fl->t_last);

	(void)var;
	fl->left_B -= old_Bps * dt_s;
	if (fl->left_B < 0)
		fl->left_B = 0;
	fl->t_last = now;
	fl->rate_Bps = new_Bps;
	if (f->observe)
		f->observe(fl->arg, now, fl->left_B, new_Bps);
	sim_cancel(f->sim, fl->ev);
	fl->ev = 0;
	if (new_Bps <= 0)
		return;
	if (units_ns_add(now, units_s_to_ns_sat(fl->left_B / new_Bps),
			 &at) != 0) {
		/* Past the horizon: fail, and end the flow now so its
		 * collective completes and is reported. */
		set_failed(f, FAIL_TOO_LONG);
		at = now;
	}
	fl->ev = sim_at(f->sim, at, complete, fl);
	if (!fl->ev)
		set_failed(f, FAIL_OOM);
}

static void settle_guests(struct flownet *f, long *settled);

static void solve(struct sim *sim, void *arg)
{
	struct flownet *f = arg;
	long n, settled = 0;

	(void)sim;
	f->solve_ev = 0;
	f->mixed = 0;
	if (f->nguest)
		settle_guests(f, &settled);
	n = mm_solve(f->mm, on_change, f);
	if (n < 0) {
		set_failed(f, FAIL_OOM);
		return;
	}
	f->solves++;
	f->resolved += (uint64_t)(n + settled);
}

static void want_solve(struct flownet *f)
{
	f->mixed = 1;
	if (f->solve_ev)
		return;
	f->solve_ev = sim_after(f->sim, 0, solve, f);
	if (!f->solve_ev)
		set_failed(f, FAIL_OOM);
}

/* ---- guests ---- */

static void drop_guest(struct flownet *f, struct flow *fl)
{
	uint32_t i;

	for (i = 0; i < f->nguest && f->guest[i] != fl; i++)
		;
	if (i == f->nguest)
		BUG("flow: a guest not in the list");
	memmove(&f->guest[i], &f->guest[i + 1],
		(f->nguest - i - 1) * sizeof(*f->guest));
	f->nguest--;
	fl->host = NULL;
}

/* What guest fl's lists hold beside it: the host's flows (crun.c). */
static void guest_lists(struct flownet *f, const struct flow *fl,
			struct guest_lists *gl)
{
	uint32_t i;

	for (i = 0; i < fl->n; i++)
		gl->cap[i] = f->topo->links[fl->links[i]].cap_Bps;
	f->host_links(fl->host, fl->links, fl->n, gl->left, gl->cnt,
		      gl->maxr);
}

/* Evict host: its flows become variables (the evict callback), then its
 * guests, in start order, the variables they would have been, after them
 * on every list (a host's guests share no link). */
static void materialize(struct flownet *f, void *host)
{
	uint32_t i = 0;

	f->evict(host);
	while (i < f->nguest) {
		struct flow *fl = f->guest[i];

		if (fl->host != host) {
			i++;
			continue;
		}
		drop_guest(f, fl);
		fl->var = mm_var_add(f->mm, fl->links, fl->coef, fl->n,
				     fl->bound_Bps, fl);
		if (fl->var == MM_NONE) {
			set_failed(f, FAIL_OOM);
			continue;
		}
		if (fl->rate_Bps > 0)	/* settled: as the solve left it */
			mm_preset_rate(f->mm, fl->var, fl->rate_Bps);
	}
}

/* Whether guest fl may leave now without its variable ever existing:
 * its lists hold what they held at its solve (no event of its host
 * since). */
static int guest_leaves(struct flownet *f, const struct flow *fl)
{
	const struct guest_lists *gl = &fl->gl;

	if (sim_now(f->sim) >= fl->host_next)
		BUG("flow: a guest past its host's next event");
	return mm_guest_leave(f->mm, fl->n, fl->coef, gl->cap, gl->left,
			      gl->cnt, gl->maxr, fl->rate_Bps);
}

/* The solve event with guests not yet settled (rate 0): settle them all
 * as mm_local() would, each ending before its host's next event, or
 * make them all variables (the batch then is what it would have been). */
static void settle_guests(struct flownet *f, long *settled)
{
	uint32_t walk = 0, added = 0, i, k = 0;
	units_ns_t now = sim_now(f->sim);
	struct flow *todo[GUEST_MAX_BATCH];
	double rate[GUEST_MAX_BATCH];
	int ok = 1;

	for (i = 0; i < f->nguest; i++) {
		struct flow *fl = f->guest[i];
		units_ns_t at;

		if (fl->rate_Bps > 0)
			continue;
		if (k == GUEST_MAX_BATCH) {
			ok = 0;
			break;
		}
		todo[k] = fl;
		guest_lists(f, fl, &fl->gl);
		if (!mm_guest_settle(f->mm, fl->n, fl->coef, fl->gl.cap,
				     fl->gl.left, fl->gl.cnt, fl->gl.maxr,
				     fl->bound_Bps, &walk, &added,
				     &rate[k]) ||
		    units_ns_add(now, units_s_to_ns_sat(fl->left_B / rate[k]),
				 &at) != 0 || at >= fl->host_next) {
			ok = 0;
			break;
		}
		k++;
	}
	if (!ok) {
		for (i = 0; i < f->nguest;)
			if (f->guest[i]->rate_Bps > 0)
				i++;
			else
				materialize(f, f->guest[i]->host);
		return;
	}
	/* mm_local() reports them in the same order, alone in the batch */
	for (i = 0; i < k; i++)
		on_change(MM_NONE, 0, rate[i], todo[i], f);
	*settled = k;
}

/* Whether guest fl crosses one of links[0..n-1]. */
static int shares_link(const struct flow *fl, const uint32_t *links,
		       uint32_t n)
{
	uint32_t i, j;

	for (i = 0; i < fl->n; i++)
		for (j = 0; j < n; j++)
			if (fl->links[i] == links[j])
				return 1;
	return 0;
}

/* Whether a flow over links[0..n-1] can start as a guest: the host. */
static void *guest_host(struct flownet *f, const uint32_t *links,
			uint32_t n, units_ns_t *next)
{
	void *h = f->holder[links[0]];
	uint32_t i;

	if (!f->guests || !f->host_next || f->observe ||
	    (f->solve_ev && f->mixed) || n > GUEST_MAX_LINKS || !h)
		return NULL;
	for (i = 1; i < n; i++)
		if (f->holder[links[i]] != h)
			return NULL;
	for (i = 0; i < f->nguest; i++)
		if (f->guest[i]->host == h &&
		    shares_link(f->guest[i], links, n))
			return NULL;
	*next = f->host_next(h);
	if (*next <= sim_now(f->sim))
		return NULL;
	if (f->nguest == f->capguest) {
		uint32_t ncap = f->capguest ? 2 * f->capguest : 8;
		struct flow **ng = mem_realloc(f->guest, ncap * sizeof(*ng));

		if (!ng)
			return NULL;
		f->guest = ng;
		f->capguest = ncap;
	}
	return h;
}

static void complete(struct sim *sim, void *arg)
{
	struct flow *fl = arg;
	struct flownet *f = fl->net;
	flow_done_fn done = fl->done;
	void *darg = fl->arg;

	(void)sim;
	if (fl->host && !guest_leaves(f, fl))
		materialize(f, fl->host);
	if (fl->host) {
		drop_guest(f, fl);
		f->nguests++;
		want_solve(f);	/* as the variable's removal would */
	}
	if (fl->var != MM_NONE) {
		mm_var_remove(f->mm, fl->var);
		want_solve(f);
	}
	unlink_live(f, fl);
	flow_put(f, fl);
	done(darg);
}

/* Turn whatever holds links[0..n-1] into flows first, with its guest. */
static void evict_holders(struct flownet *f, const uint32_t *links,
			  uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (f->holder[links[i]])
			materialize(f, f->holder[links[i]]);
}

int flow_start(struct flownet *f, const uint32_t *links, const double *coef,
	       uint32_t n, double volume_B, double bound_Bps, flow_done_fn done,
	       void *arg)
{
	struct flow *fl;
	void *host = NULL;
	units_ns_t next = 0;

	if (n > 0 && !coef)
		BUG("a flow over links needs their coefficients");
	if (volume_B > 0 && n > 0)
		host = guest_host(f, links, n, &next);
	if (volume_B > 0 && !host)
		evict_holders(f, links, n);
	fl = flow_take(f);
	if (!fl)
		goto oom;
	*fl = (struct flow){ .net = f, .var = MM_NONE, .left_B = volume_B,
			     .t_last = sim_now(f->sim), .done = done, .arg = arg };
	if (host) {
		*fl = (struct flow){ .net = f, .var = MM_NONE,
				     .left_B = volume_B,
				     .t_last = sim_now(f->sim), .done = done,
				     .arg = arg, .host = host, .links = links,
				     .coef = coef, .n = n,
				     .bound_Bps = bound_Bps,
				     .host_next = next };
		f->guest[f->nguest++] = fl;
		if (!f->solve_ev) {
			want_solve(f);
			f->mixed = 0;
		}
	} else if (volume_B > 0 && (n > 0 || bound_Bps > 0)) {
		/* Constraint id = link id (flow_new). */
		fl->var = mm_var_add(f->mm, links, coef, n, bound_Bps, fl);
		if (fl->var == MM_NONE)
			goto oom;
		want_solve(f);
	} else {
		/* Nothing to move, or nothing limits it: done now. */
		fl->ev = sim_after(f->sim, 0, complete, fl);
		if (!fl->ev)
			goto oom;
	}
	link_live(f, fl);
	return 0;
oom:
	if (fl)
		flow_put(f, fl);
	set_failed(f, FAIL_OOM);
	return -1;
}

int flow_adopt(struct flownet *f, const uint32_t *links, const double *coef,
	       uint32_t n, double bound_Bps, flow_done_fn done, void *arg,
	       double left_B, double rate_Bps, units_ns_t t_last_ns,
	       units_ns_t t_end_ns)
{
	struct flow *fl;

	if (!(rate_Bps > 0) || (n == 0 && !(bound_Bps > 0)) ||
	    t_last_ns > sim_now(f->sim) || t_end_ns < sim_now(f->sim))
		BUG("flow_adopt: not a flow in progress");
	fl = flow_take(f);
	if (!fl)
		goto oom;
	*fl = (struct flow){ .net = f, .left_B = left_B, .rate_Bps = rate_Bps,
			     .t_last = t_last_ns, .done = done, .arg = arg };
	fl->var = mm_var_add(f->mm, links, coef, n, bound_Bps, fl);
	if (fl->var == MM_NONE)
		goto oom;
	mm_preset_rate(f->mm, fl->var, rate_Bps);
	fl->ev = sim_at(f->sim, t_end_ns, complete, fl);
	if (!fl->ev) {
		mm_var_remove(f->mm, fl->var);
		goto oom;
	}
	link_live(f, fl);
	return 0;
oom:
	if (fl)
		flow_put(f, fl);
	f->failed = 1;
	return -1;
}

void flow_set_evict(struct flownet *f, void (*evict)(void *holder),
		    int (*take)(void *holder, uint32_t link))
{
	f->evict = evict;
	f->take = take;
}

void flow_set_host(struct flownet *f, units_ns_t (*next)(void *holder),
		   void (*links_fn)(void *holder, const uint32_t *links,
				    uint32_t n, double *left, uint32_t *cnt,
				    double *maxr))
{
	f->host_next = next;
	f->host_links = links_fn;
}

void flow_set_guests(struct flownet *f, int on)
{
	f->guests = on;
}

uint64_t flow_guests(const struct flownet *f)
{
	return f->nguests;
}

/* Hold links[0..n-1] for holder up to the first that carries a flow or
 * that a running holder holds; the count held. */
static uint32_t hold(struct flownet *f, const uint32_t *links, uint32_t n,
		     void *holder)
{
	const uint32_t *busy = mm_cons_busy(f->mm);
	void **held = f->holder;
	uint32_t i;

	if (!f->evict || !f->take)
		BUG("flow_try_hold: no evict or take callback");
	for (i = 0; i < n; i++) {
		uint32_t l = links[i];

		/* links may repeat one (a plan's element list) */
		if (held[l] && held[l] != holder && !f->take(held[l], l))
			break;
		if (busy[l])
			break;
		held[l] = holder;
	}
	return i;
}

int flow_try_hold(struct flownet *f, const uint32_t *links, uint32_t n,
		  void *holder)
{
	uint32_t i = hold(f, links, n, holder);

	if (i == n)
		return 1;
	/* A link taken from a parked holder stays in its list of losses:
	 * flow_reclaim() finds it free. */
	while (i-- > 0)
		f->holder[links[i]] = NULL;
	return 0;
}

int flow_reclaim(struct flownet *f, const uint32_t *links, uint32_t n,
		 void *holder)
{
	return hold(f, links, n, holder) == n;
}

void flow_release(struct flownet *f, const uint32_t *links, uint32_t n,
		  const void *holder)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (f->holder[links[i]] == holder)
			f->holder[links[i]] = NULL;
}

void *flow_holder(const struct flownet *f, uint32_t l, int *busy)
{
	*busy = mm_cons_busy(f->mm)[l] != 0;
	return f->holder[l];
}

int flow_hosts_guest(const struct flownet *f, const void *holder)
{
	uint32_t i;

	for (i = 0; i < f->nguest; i++)
		if (f->guest[i]->host == holder)
			return 1;
	return 0;
}

int flow_try_hold_beside(struct flownet *f, const uint32_t *links,
			 uint32_t n, void *holder, const void *mate)
{
	const uint32_t *busy = mm_cons_busy(f->mm);
	void **held = f->holder;
	uint32_t i;

	if (!f->evict || !f->take)
		BUG("flow_try_hold_beside: no evict or take callback");
	for (i = 0; i < n; i++) {
		uint32_t l = links[i];

		if (held[l] == mate)
			continue;
		if (held[l] && held[l] != holder && !f->take(held[l], l))
			break;
		if (busy[l])
			break;
		held[l] = holder;
	}
	if (i == n)
		return 1;
	while (i-- > 0)
		if (held[links[i]] == holder)
			held[links[i]] = NULL;
	return 0;
}

void flow_hand(struct flownet *f, const uint32_t *links, uint32_t n,
	       const void *from, void *to)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (f->holder[links[i]] == from)
			f->holder[links[i]] = to;
}

void flow_observe(struct flownet *f,
		  void (*fn)(void *arg, units_ns_t now, double left_B,
			     double rate_Bps))
{
	f->observe = fn;
}

size_t flow_record_bytes(void)
{
	return sizeof(struct flow);
}

uint64_t flow_solves(const struct flownet *f)
{
	return f->solves;
}

uint64_t flow_resolved(const struct flownet *f)
{
	return f->resolved;
}

int flow_failed(const struct flownet *f)
{
	return f->failed;
}

const char *flow_error(const struct flownet *f)
{
	switch (f->failed) {
	case 0: return "";
	case FAIL_TOO_LONG: return FLOW_TOO_LONG;
	default: return "out of memory in the flow model";
	}
}

void flow_fail_too_long(struct flownet *f)
{
	set_failed(f, FAIL_TOO_LONG);
}
