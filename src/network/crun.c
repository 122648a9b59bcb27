/*
 * crun.c - phases of flows on the engine (replica charging is
 * crun_charge.c).
 *
 * Replay, and why it is exact. Time is integer ns; a run alone on its
 * links meets nothing but its own flows, so its rates, its flows' ends
 * (now + round(left / rate)) and its phase waits are the same, in ns
 * after its start, whenever it starts: on the idle engine or the step's.
 * crun_record() keeps that trajectory; crun_replay() charges it as one end
 * event while the run holds every link of its plan. Nothing else can
 * touch those links meanwhile without starting a flow on one, and
 * flow_start() first evicts the holder: the run becomes, at that instant
 * t, exactly what the flow-level run would be at t - its current phase,
 * its flows not yet ended, each with its bytes left as of its last rate
 * change before t, that rate and the same end event (flow_adopt); a
 * phase not yet started gets its start_flows event at the recorded time.
 * Events at t itself are left to run after the one that evicts (every
 * re-solve they ask for happens at t, after both), so the state is the
 * one the flow-level run would re-solve at t. The key of a trajectory is
 * what determines it: the plan (op, members, algorithm, protocol,
 * replicas, an uneven all-to-all's matrix) and the size (net.c caches it
 * beside the plan's idle time); whatever else a collective's cost comes
 * to depend on (per-call jitter, a link's state) must be in that key or
 * keep the collective from replaying.
 *
 * Latency-bound runs, and what they leave out. A run whose bytes are
 * tiny (an fp8 amax all-reduce: 61-250 B over a 512- or 1,024-GPU
 * stage, 85 us of tree latency) is nearly all waiting: the most any one
 * link needs to carry what the run puts on it, link_ns = max_i sum_f
 * a_if V_f / C_i (V_f the bytes of flow f, from its recording), is 1-4
 * ns, 1/20,000 of its time or less. Run as flows
 * over busy links it costs the solver as much as a long transfer (8
 * channel flows of ~2,835 links each: 45 thousand (variable, link)
 * elements linked and unlinked per call), yet moves nothing measurable.
 * When link_ns <= CRUN_DETACH_SHARE (1e-4, crun.h) of its recorded
 * time, crun_replay() charges that time and holds no link, even where
 * flows run (a numerical tolerance, like the solver's, not a model
 * constant: nothing in a result depends on its value but within the
 * bounds below). What this
 * leaves out is the sharing of those bytes: (a) every other flow on link
 * i would have lost at most a_if V_f of its bytes' room there, so with a
 * work-conserving link it ends at most link_ns later; (b) the run's own
 * flows, slowed by sharing, would end later than alone by their
 * transfer time (<= total time - latencies) times the slowdown. On
 * DeepSeek-V3 on 2,048 H100s (workloads/jobs/deepseek-v3-2048.yaml:
 * 4,096 amax calls a step detach) the step moves by 0.85 us of 19.86 s
 * (4.3e-8) and the run takes half the CPU.
 */
#include "crun_impl.h"

#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

/* Links a parked run lets others take before it lets all go: as many
 * as it holds (a DeepEP all-to-all and an fp8 amax ring over the same
 * nodes take hundreds of each other's links), at least LOST_MIN. */
#define LOST_MIN 64

static void crun_free(struct crun *r)
{
	mem_free(r->lost);
	mem_free(r);
}

static void start_flows(struct sim *sim, void *arg);

/* The pipeline a run costs for phase i: the phase's, or none. */
static const struct pipe *phase_pipe(const struct crun *r, uint32_t i)
{
	static const struct pipe none;

	return r->full ? &r->cp->plan.phases[i].pipe : &none;
}

/* ns before phase i's flows start: its latency, its per-byte step and
 * its pipeline's sync. A wait that would end past the engine's horizon
 * fails the flownet (flow_failed) and is 0, so the collective still
 * completes. */
static units_ns_t phase_wait(const struct crun *r, uint32_t i)
{
	units_ns_t dt = units_s_to_ns_sat(r->cp->plan.phases[i].latency_s +
				r->cp->plan.phases[i].per_byte_s * r->size_B +
				pipe_sync_s(phase_pipe(r, i), r->size_B)), at;

	if (units_ns_add(sim_now(r->sim), dt, &at) == 0)
		return dt;
	flow_fail_too_long(r->fn);
	return 0;
}

/* r at the head of rs's live runs, holding a reference to its plan cp. */
static void link_run(struct crun_set *rs, struct crun *r, struct cplan *cp)
{
	if (rs->live)
		rs->live->prev = r;
	rs->live = r;
	pcache_plan_ref(cp);
}

static void unlink_run(struct crun *r)
{
	if (r->prev)
		r->prev->next = r->next;
	else
		r->set->live = r->next;
	if (r->next)
		r->next->prev = r->prev;
}

static void finish(struct crun *r)
{
	void (*done)(void *) = r->done;
	void *token = r->token;

	unlink_run(r);
	pcache_plan_unref(r->cp);
	crun_free(r);
	done(token);
}

void crun_set_release(struct crun_set *rs)
{
	while (rs->live) {
		struct crun *r = rs->live;
		uint32_t nlinks;
		const uint32_t *links = plan_links(&r->cp->plan, &nlinks);

		if (r->tr || r->parked)
			flow_release(r->fn, links, nlinks, r);
		unlink_run(r);
		pcache_plan_unref(r->cp);
		crun_free(r);
	}
	memset(rs->park, 0, sizeof(rs->park));
	mem_free(rs->hc_stamp);
	mem_free(rs->hc_rate);
	rs->hc_stamp = NULL;
	rs->hc_rate = NULL;
	rs->hc_cap = rs->hc_gen = 0;
	rs->hc_hid = 0;
	if (rs->pairs_free)
		rs->pairs_free(rs);
}

static void finish_ev(struct sim *sim, void *arg)
{
	(void)sim;
	finish(arg);
}

/* The current phase is over: schedule the next or finish. */
static void advance(struct crun *r)
{
	const struct plan *p = &r->cp->plan;

	if (++r->phase >= p->nphases) {
		finish(r);
		return;
	}
	/* Out of memory here leaves the collective unfinished; the engine's
	 * sticky failure (sim_failed) reports it. */
	(void)sim_after(r->sim, phase_wait(r, r->phase), start_flows, r);
}

static void flow_done(void *arg)
{
	struct crun *r = arg;

	if (--r->pending == 0)
		advance(r);
}

/* A recorded flow ended: note when, then as flow_done. */
static void flow_done_rec(void *arg)
{
	struct rec_flow *f = arg;
	struct crun *r = f->r;

	r->rec->tr->end_ns[f->i] = sim_now(r->sim) - r->t0;
	flow_done(r);
}

static int late_replay(struct crun *r, const struct ctraj *tr);

static void start_flows(struct sim *sim, void *arg)
{
	struct crun *r = arg;
	const struct plan *p = &r->cp->plan;
	const struct plan_phase *ph = &p->phases[r->phase];
	const struct pipe *pp = phase_pipe(r, r->phase);
	double vol = r->scale * pipe_volume_factor(pp, r->size_B);
	uint32_t i;

	(void)sim;
	if (r->late) {
		const struct ctraj *tr = r->late;

		r->late = NULL;
		if (r->phase == 0 &&
		    (late_replay(r, tr) == 0 ||
		     (r->set->pair_try && r->set->pair_try(r, tr) == 0)))
			return;
	}
	r->pending = ph->n;
	if (r->rec)
		r->rec->tr->start_ns[r->phase] = sim_now(r->sim) - r->t0;
	for (i = 0; i < ph->n; i++) {
		const struct plan_flow *f = &p->flows[ph->first + i];

		/* A flow that cannot start counts as done; the flownet's
		 * failure flag reports it. */
		if (flow_start(r->fn, p->elem_link + f->first,
			       p->elem_coef + f->first, f->n,
			       f->volume_B * vol,
			       pipe_bound_Bps(pp, f->volume_B, f->bound_Bps,
					      r->size_B),
			       r->rec ? flow_done_rec : flow_done,
			       r->rec ? (void *)&r->rec->rf[ph->first + i]
				      : (void *)r) != 0)
			r->pending--;
	}
	if (r->pending == 0)
		advance(r);
}

int crun_start(struct crun_set *rs, struct sim *sim, struct flownet *fn,
	       struct cplan *cp, double scale, enum crun_view view,
	       void (*done)(void *token), void *token)
{
	struct crun *r = mem_calloc(1, sizeof(*r));
	const struct plan *p = &cp->plan;
	sim_id ev;

	if (!r)
		return -1;
	*r = (struct crun){ rs, NULL, rs->live, sim, fn, cp, scale,
			    cp->per_byte ? scale : cp->size_B, view == CRUN_FULL, 0, 0,
			    done, token, NULL, NULL, 0, 0, 0, NULL, 0, 0,
			    NULL, 0, 0, NULL };
	if (p->nphases == 0)
		ev = sim_after(sim, 0, finish_ev, r);
	else
		ev = sim_after(sim, phase_wait(r, 0), start_flows, r);
	if (!ev) {
		mem_free(r);
		return -1;
	}
	link_run(rs, r, cp);
	return 0;
}

/* ---- replaying (recording: crun_record.c) ---- */
/* The park slot of cp's links (a hash of them, kept on cp). */
static struct crun **park_slot(struct crun_set *rs, struct cplan *cp)
{
	if (!cp->links_hash) {
		uint32_t i, n;
		const uint32_t *l = plan_links(&cp->plan, &n);
		uint64_t h = 14695981039346656037ull ^ n;

		for (i = 0; i < n; i++)
			h = (h ^ l[i]) * 1099511628211ull;
		/* FNV-1a's low bits see only the ids' low bits: mix
		 * (splitmix64's finalizer) before the slot takes them */
		h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
		h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
		cp->links_hash = (h ^ (h >> 31)) | 1;
	}
	return &rs->park[cp->links_hash % CRUN_PARK_SLOTS];
}

static int same_links(const struct cplan *a, const struct cplan *b)
{
	uint32_t na, nb;
	const uint32_t *la = plan_links(&a->plan, &na);
	const uint32_t *lb = plan_links(&b->plan, &nb);

	return a == b || (a->links_hash == b->links_hash && na == nb &&
			  memcmp(la, lb, na * sizeof(*la)) == 0);
}

/* A replay is over: it keeps its links parked, as idle as they were,
 * for the next replay of a plan with the same links (a DeepEP
 * all-to-all's next call: thousands of links not walked twice), unless
 * its park slot is taken. A flow or another replay that wants one of
 * them takes them all back first (evict, drop). */
void crun_replay_end(struct sim *sim, void *arg)
{
	struct crun *r = arg;
	struct crun **slot = park_slot(r->set, r->cp);
	uint32_t nlinks;
	const uint32_t *links = plan_links(&r->cp->plan, &nlinks);

	(void)sim;
	if (r->mate) {
		/* the other goes on alone, on the links of its own plan (the
		 * shared ones r held now its), as it did in the recording */
		struct crun *m = r->mate;
		uint32_t nm;
		const uint32_t *ml = plan_links(&m->cp->plan, &nm);

		r->mate = m->mate = NULL;
		flow_hand(r->fn, ml, nm, r, m);
		flow_release(r->fn, links, nlinks, r);
		finish(r);
		return;
	}
	if (*slot) {
		flow_release(r->fn, links, nlinks, r);
		finish(r);
		return;
	}
	r->parked = 1;
	r->tr = NULL;
	r->end_ev = 0;
	*slot = r;
	r->done(r->token);
}

/* A parked run lets its links go and ends. */
static void unpark(struct crun *r)
{
	uint32_t nlinks;
	const uint32_t *links = plan_links(&r->cp->plan, &nlinks);

	flow_release(r->fn, links, nlinks, r);
	*park_slot(r->set, r->cp) = NULL;
	unlink_run(r);
	pcache_plan_unref(r->cp);
	crun_free(r);
}


/* Adopt the flows of the current phase that end at or after dt; 0 or
 * -1 (memory: the flownet's failure flag reports it). */
static int adopt_phase(struct crun *r, const struct ctraj *tr, units_ns_t dt)
{
	const struct plan *p = &r->cp->plan;
	const struct plan_phase *ph = &p->phases[r->phase];
	const struct pipe *pp = phase_pipe(r, r->phase);
	uint32_t i;
	int rv = 0;

	for (i = ph->first; i < ph->first + ph->n; i++) {
		const struct plan_flow *f = &p->flows[i];
		const struct ctraj_rec *st;
		units_ns_t end;

		if (tr->end_ns[i] < dt)
			continue;
		st = crun_state_at(tr, i, dt);
		/* its end as the flow-level run has it scheduled now: where
		 * its last rate change before dt put it (flow.c on_change),
		 * not the recorded end, which later rate changes of the
		 * recording (a pair's other run ending, a sibling flow's end)
		 * may have moved and which the flows beside it now may not
		 * make (a rate change reschedules it, as there) */
		end = r->t0 + st->t_ns;
		if (units_ns_add(end, units_s_to_ns_sat(st->left_B /
							st->rate_Bps), &end) != 0)
			end = r->t0 + tr->end_ns[i];
		if (flow_adopt(r->fn, p->elem_link + f->first,
			       p->elem_coef + f->first, f->n,
			       pipe_bound_Bps(pp, f->volume_B, f->bound_Bps,
					      r->size_B),
			       r->rec ? flow_done_rec : flow_done,
			       r->rec ? (void *)&r->rec->rf[i] : (void *)r,
			       st->left_B, st->rate_Bps,
			       r->t0 + st->t_ns, end) != 0) {
			r->pending--;
			rv = -1;
		}
	}
	return rv;
}


/*
 * Replay r becomes the run it stands for, at its state now (dt after its
 * start): events before dt have happened, those at dt and later have not.
 * The phase is the last whose flows started before dt; if all of them
 * ended before dt, the run waits for the next phase's start.
 */
static void resume(struct crun *r)
{
	const struct ctraj *tr = r->tr;
	units_ns_t dt = sim_now(r->sim) - r->t0;
	uint32_t k, pending;

	k = crun_phase_at(r, dt, &pending);
	r->tr = NULL;
	r->set->resumed++;
	r->phase = k;
	if (k >= tr->nphases)
		BUG("run: a replay resumed after its end");
	if (pending == 0) {
		/* Out of memory leaves the collective unfinished; the
		 * engine's sticky failure (sim_failed) reports it. */
		(void)sim_at(r->sim, r->t0 + tr->start_ns[k], start_flows, r);
		return;
	}
	r->pending = pending;
	(void)adopt_phase(r, tr, dt);
	if (r->pending == 0)
		advance(r);
}

/* A running replay lets its links go, its end cancelled (resume() makes
 * it flows). */
static void stop_replay(struct crun *r)
{
	uint32_t nlinks;
	const uint32_t *links = plan_links(&r->cp->plan, &nlinks);

	sim_cancel(r->sim, r->end_ev);
	flow_release(r->fn, links, nlinks, r);
}

/* When replay r's current phase started, in absolute ns (its flows became
 * variables then in the flow-level run); one between phases: its next
 * phase's start, later than now. */
static units_ns_t phase_start(const struct crun *r)
{
	uint32_t pending, k = crun_phase_at(r, sim_now(r->sim) - r->t0,
					    &pending);

	return r->t0 + r->tr->start_ns[k < r->tr->nphases ? k : 0];
}

/* flow_set_evict() callback: a flow is to start on a replay's link. A
 * pair replay's runs become flows together, first the one whose current
 * phase started first, as the flow-level run made their flows variables
 * (crun_pair.c ordered(): no two of their phases start at one ns, and one
 * between phases adopts nothing). Both stop before either resumes: a
 * resume can end its run at once (every flow_adopt out of memory), and
 * what that run's end starts must not find the other still a replay. */
static void evict(void *holder)
{
	struct crun *r = holder, *m = r->mate;

	if (r->parked) {
		unpark(r);
		return;
	}
	if (m) {
		struct crun *first = phase_start(m) < phase_start(r) ? m : r;
		struct crun *second = first == r ? m : r;

		r->mate = m->mate = NULL;
		r->set->pairs_evicted++;
		stop_replay(first);
		stop_replay(second);
		resume(first);
		resume(second);
		return;
	}
	stop_replay(r);
	resume(r);
}


/* flow_set_evict() callback: another wants link l, which r holds. A
 * parked run lets it go and notes the loss: a DeepEP all-to-all's 512
 * links and the TP collective that takes 4 of them between its calls
 * each take back what the other took (flow_reclaim) instead of a pass
 * over all of them (letting all go, then holding all again). Past
 * about twice its links' count of losses (a link lost again after a
 * failed reclaim is noted twice), or out of memory, it lets all go. */
static int take(void *holder, uint32_t l)
{
	struct crun *r = holder;

	if (!r->parked)
		return 0;
	if (r->nlost == r->caplost) {
		uint32_t nlinks, ncap = r->caplost ? 2 * r->caplost : 8;
		uint32_t *nl;

		(void)plan_links(&r->cp->plan, &nlinks);
		nl = ncap <= LOST_MIN || ncap <= 2 * nlinks ?
		     mem_realloc(r->lost, ncap * sizeof(*nl)) : NULL;

		if (!nl) {
			unpark(r);
			return 1;
		}
		r->lost = nl;
		r->caplost = ncap;
	}
	r->lost[r->nlost++] = l;
	return 1;
}

/* A latency-bound run (crun.h CRUN_DETACH_SHARE): its recorded
 * time, holding no link (crun.h). */
static int replay_detached(struct crun_set *rs, struct sim *sim,
			   struct flownet *fn, struct cplan *cp, double scale,
			   const struct ctraj *tr, void (*done)(void *token),
			   void *token)
{
	struct crun *r = mem_calloc(1, sizeof(*r));

	if (!r)
		return -1;
	*r = (struct crun){ rs, NULL, rs->live, sim, fn, cp, scale,
			    cp->per_byte ? scale : cp->size_B, 1, 0, 0, done,
			    token, NULL, NULL, sim_now(sim), 0, 0, NULL, 0,
			    0, NULL, 0, 0, NULL };
	r->end_ev = sim_after(sim, tr->total_ns, finish_ev, r);
	if (!r->end_ev) {
		mem_free(r);
		return -1;
	}
	link_run(rs, r, cp);
	rs->replays++;
	rs->detached++;
	return 0;
}

/*
 * Replay tr for cp from t0 (ns; now, or for a late replay the run's
 * start, tr->start_ns[0] before now), holding its links: the run parked
 * on the same links if there is one, else own (a late replay's run,
 * already in rs) or a new run. 0; 1 when a link is busy or held (own is
 * left as it was); -1 out of memory (a new run's done is never called).
 */
static int hold_replay(struct crun_set *rs, struct sim *sim,
		       struct flownet *fn, struct cplan *cp, double scale,
		       const struct ctraj *tr, void (*done)(void *token),
		       void *token, units_ns_t t0, struct crun *own)
{
	struct crun **slot = park_slot(rs, cp);
	struct crun *r = *slot;
	uint32_t nlinks;
	const uint32_t *links = plan_links(&cp->plan, &nlinks);

	if (r && r->fn == fn && same_links(r->cp, cp)) {
		/* the links held since the last replay on them: idle, but
		 * for those another took since (held by what runs there:
		 * as flow_try_hold would find them) */
		if (r->nlost > 0) {
			if (!flow_reclaim(fn, r->lost, r->nlost, r))
				return 1;
			r->nlost = 0;
			rs->reclaimed++;
		}
		if (r->cp != cp) {
			pcache_plan_ref(cp);
			pcache_plan_unref(r->cp);
			r->cp = cp;
		}
		r->sim = sim;
		r->scale = scale;
		r->size_B = cp->per_byte ? scale : cp->size_B;
		r->done = done;
		r->token = token;
		r->tr = tr;
		r->t0 = t0;
		r->hid = ++rs->hid_next;
		r->end_ev = sim_at(sim, t0 + tr->total_ns, crun_replay_end, r);
		if (!r->end_ev) {
			unpark(r);
			return -1;
		}
		r->parked = 0;
		*slot = NULL;
		rs->replays++;
		rs->reheld++;
		if (own) {	/* the parked run goes on for it */
			unlink_run(own);
			pcache_plan_unref(own->cp);
			crun_free(own);
		}
		return 0;
	}
	r = own ? own : mem_calloc(1, sizeof(*r));
	if (!r)
		return -1;
	flow_set_evict(fn, evict, take);
	flow_set_host(fn, crun_host_next, crun_host_links);
	if (!flow_try_hold(fn, links, nlinks, r)) {
		if (!own)
			mem_free(r);
		return 1;
	}
	if (!own)
		*r = (struct crun){ rs, NULL, rs->live, sim, fn, cp, scale,
				    cp->per_byte ? scale : cp->size_B, 1, 0, 0,
				    done, token, NULL, tr, t0, 0, 0, NULL, 0,
				    0, NULL, 0, 0, NULL };
	r->tr = tr;
	r->t0 = t0;
	r->hid = ++rs->hid_next;
	r->end_ev = sim_at(sim, t0 + tr->total_ns, crun_replay_end, r);
	if (!r->end_ev) {
		flow_release(fn, links, nlinks, r);
		r->tr = NULL;
		if (!own)
			mem_free(r);
		return -1;
	}
	if (!own)
		link_run(rs, r, cp);
	rs->replays++;
	return 0;
}

int crun_replay(struct crun_set *rs, struct sim *sim, struct flownet *fn,
	       struct cplan *cp, double scale, const struct ctraj *tr,
	       void (*done)(void *token), void *token)
{
	if (tr->link_ns <= CRUN_DETACH_SHARE * (double)tr->total_ns)
		return replay_detached(rs, sim, fn, cp, scale, tr, done,
				       token);
	return hold_replay(rs, sim, fn, cp, scale, tr, done, token,
			   sim_now(sim), NULL);
}

/*
 * Late replays. A run that could not replay when it started (a link of
 * its plan busy or held: crun_replay() returned 1) puts nothing on its
 * links before its first phase's flows start, tr->start_ns[0] later
 * (the phase's latency: phase_wait() is the same on the step's engine
 * as where tr was recorded). If at that instant its links can be held
 * (what kept it from replaying has ended: a pipeline send on one NIC
 * link, a few microseconds of a DeepEP all-to-all's ~1 ms), the run is
 * from there on the one tr recorded, alone on its links: it replays tr
 * from its own start, as if it had held them all along. Nothing has
 * changed meanwhile that a replay could see: the flow-level run would
 * start the same flows on the same idle links at the same instant.
 * Otherwise its flows start, as without. 0, or 1 (start them).
 */
static int late_replay(struct crun *r, const struct ctraj *tr)
{
	struct crun_set *rs = r->set;	/* r may go (hold_replay) */
	units_ns_t now = sim_now(r->sim), end;

	if (now - r->late_t0 != tr->start_ns[0] ||
	    units_ns_add(r->late_t0, tr->total_ns, &end) != 0)
		return 1;
	if (hold_replay(rs, r->sim, r->fn, r->cp, r->scale, tr, r->done,
			r->token, r->late_t0, r) != 0)
		return 1;
	rs->late++;
	rs->late_flows += tr->nflows;
	return 0;
}

int crun_start_late(struct crun_set *rs, struct sim *sim, struct flownet *fn,
		    struct cplan *cp, double scale, const struct ctraj *tr,
		    void (*done)(void *token), void *token)
{
	if (crun_start(rs, sim, fn, cp, scale, CRUN_FULL, done, token) != 0)
		return -1;
	/* crun_start put the new run first in rs */
	if (cp->plan.nphases > 0 && tr->nphases == cp->plan.nphases) {
		rs->live->late = tr;
		rs->live->late_t0 = sim_now(sim);
	}
	return 0;
}

uint64_t crun_late(const struct crun_set *rs)
{
	return rs->late;
}

uint64_t crun_late_flows(const struct crun_set *rs)
{
	return rs->late_flows;
}

uint64_t crun_replays(const struct crun_set *rs)
{
	return rs->replays;
}

uint64_t crun_detached(const struct crun_set *rs)
{
	return rs->detached;
}

uint64_t crun_reheld(const struct crun_set *rs)
{
	return rs->reheld;
}

uint64_t crun_reclaimed(const struct crun_set *rs)
{
	return rs->reclaimed;
}

uint64_t crun_resumed(const struct crun_set *rs)
{
	return rs->resumed;
}
