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
		if (r->phase == 0 && late_replay(r, tr) == 0)
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
			    NULL, 0, 0 };
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
static void replay_end(struct sim *sim, void *arg)
{
	struct crun *r = arg;
	struct crun **slot = park_slot(r->set, r->cp);
	uint32_t nlinks;
	const uint32_t *links = plan_links(&r->cp->plan, &nlinks);

	(void)sim;
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

/* The last rate change of plan flow i before dt (ns after the start). */
static const struct ctraj_rec *state_at(const struct ctraj *tr, uint32_t i,
					units_ns_t dt)
{
	uint32_t k = tr->rec_off[i + 1];

	while (k > tr->rec_off[i] && tr->rec[k - 1].t_ns >= dt)
		k--;
	if (k == tr->rec_off[i])
		BUG("run: a replayed flow with no rate before now");
	return &tr->rec[k - 1];
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

		if (tr->end_ns[i] < dt)
			continue;
		st = state_at(tr, i, dt);
		if (flow_adopt(r->fn, p->elem_link + f->first,
			       p->elem_coef + f->first, f->n,
			       pipe_bound_Bps(pp, f->volume_B, f->bound_Bps,
					      r->size_B),
			       flow_done, r, st->left_B, st->rate_Bps,
			       r->t0 + st->t_ns, r->t0 + tr->end_ns[i]) != 0) {
			r->pending--;
			rv = -1;
		}
	}
	return rv;
}

/* The phase of a replay dt after its start, and in *pending how many of
 * its flows have not ended before dt: the last phase whose flows started
 * before dt, or the next one when all of them ended before dt (pending
 * 0: the run waits for its start). */
static uint32_t phase_at(const struct crun *r, units_ns_t dt,
			 uint32_t *pending)
{
	const struct ctraj *tr = r->tr;
	const struct plan *p = &r->cp->plan;
	uint32_t k = 0, i;

	*pending = 0;
	while (k + 1 < tr->nphases && tr->start_ns[k + 1] < dt)
		k++;
	if (tr->start_ns[k] < dt)
		for (i = p->phases[k].first;
		     i < p->phases[k].first + p->phases[k].n; i++)
			*pending += tr->end_ns[i] >= dt;
	if (tr->start_ns[k] < dt && *pending == 0)
		k++;	/* between phases k and k + 1 */
	return k;
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

	k = phase_at(r, dt, &pending);
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

/* flow_set_evict() callback: a flow is to start on a replay's link. */
static void evict(void *holder)
{
	struct crun *r = holder;
	uint32_t nlinks;
	const uint32_t *links = plan_links(&r->cp->plan, &nlinks);

	if (r->parked) {
		unpark(r);
		return;
	}
	sim_cancel(r->sim, r->end_ev);
	flow_release(r->fn, links, nlinks, r);
	resume(r);
}

/*
 * Replay r's state dt ns after its start, kept in its set (struct
 * crun_set's hc_ fields) for the host callbacks: a guest's start asks
 * host_next() and its solve, at the same ns, host_links(), each
 * reading every flow's rate off the trajectory (state_at), a flow on
 * each of a guest's links once per link (a 64-GPU all-to-all's flows
 * cross most of a node's switch links); and half of the guests of the
 * DeepSeek-V3 2,048-GPU plan's runs start while the last guest's host
 * is in the same state. The state (phase, pending flows, each flow's
 * rate, the next event, host_links' sums) is a function of the
 * trajectory, its start and dt alone, the same for every dt from one
 * at which it was read up to the next event of the phase (host_next:
 * a flow's end or rate change; the next phase's start), so what is
 * kept is what would be read again, bit for bit. Keyed by the replay's
 * start number, not its address (a run freed and another allocated
 * there). The set, or NULL when out of memory (the callers read the
 * trajectory as before).
 */
static struct crun_set *host_state(const struct crun *r, units_ns_t dt)
{
	struct crun_set *rs = r->set;
	uint32_t nf = r->cp->plan.nflows;

	if (rs->hc_hid == r->hid &&
	    (rs->hc_dt == dt ||
	     (rs->hc_has_next && dt > rs->hc_dt && dt < rs->hc_end)))
		return rs;
	rs->hc_hid = 0;
	rs->hc_nl = 0;
	if (nf > rs->hc_cap) {
		uint32_t *st = mem_realloc(rs->hc_stamp, nf * sizeof(*st));
		double *rt;

		if (!st)
			return NULL;
		rs->hc_stamp = st;
		rt = mem_realloc(rs->hc_rate, nf * sizeof(*rt));
		if (!rt)
			return NULL;
		rs->hc_rate = rt;
		memset(st + rs->hc_cap, 0, (nf - rs->hc_cap) * sizeof(*st));
		rs->hc_cap = nf;
	}
	if (++rs->hc_gen == 0) {	/* wrapped: no stamp may match */
		if (rs->hc_cap)
			memset(rs->hc_stamp, 0,
			       rs->hc_cap * sizeof(*rs->hc_stamp));
		rs->hc_gen = 1;
	}
	rs->hc_hid = r->hid;
	rs->hc_dt = dt;
	rs->hc_k = phase_at(r, dt, &rs->hc_pending);
	rs->hc_has_next = 0;
	return rs;
}

/* flow_set_host() callback: the ns of replay r's next event (a flow's end
 * or rate change, its next phase's start, its end), -1 if it is not a
 * running replay. Keeps each live flow's rate now (host_state). */
static units_ns_t host_next(void *holder)
{
	const struct crun *r = holder;
	const struct ctraj *tr = r->tr;
	const struct plan *p;
	struct crun_set *rs;
	units_ns_t dt, next, at, end;
	uint32_t k, pending, i;

	if (r->parked || !tr)
		return -1;
	p = &r->cp->plan;
	dt = sim_now(r->sim) - r->t0;
	rs = host_state(r, dt);
	if (rs && rs->hc_has_next)
		return rs->hc_next;
	next = tr->total_ns;
	if (rs) {
		k = rs->hc_k;
		pending = rs->hc_pending;
	} else {
		k = phase_at(r, dt, &pending);
	}
	if (k >= tr->nphases) {
		at = -1;
		end = dt;	/* kept for this dt only */
	} else if (pending == 0) {
		end = tr->start_ns[k] < next ? tr->start_ns[k] : next;
		at = r->t0 + end;
	} else {
		for (i = p->phases[k].first;
		     i < p->phases[k].first + p->phases[k].n; i++) {
			uint32_t j = tr->rec_off[i + 1];

			if (tr->end_ns[i] < dt) {
				if (rs) {
					rs->hc_stamp[i] = rs->hc_gen;
					rs->hc_rate[i] = -1;
				}
				continue;
			}
			if (tr->end_ns[i] < next)
				next = tr->end_ns[i];
			/* its first change at or after dt (state_at's
			 * successor) */
			while (j > tr->rec_off[i] && tr->rec[j - 1].t_ns >= dt)
				j--;
			if (j < tr->rec_off[i + 1] && tr->rec[j].t_ns < next)
				next = tr->rec[j].t_ns;
			/* its rate now: state_at's record (none before dt:
			 * host_links asks state_at, which says so) */
			if (rs && j > tr->rec_off[i]) {
				rs->hc_stamp[i] = rs->hc_gen;
				rs->hc_rate[i] = tr->rec[j - 1].rate_Bps;
			}
		}
		at = r->t0 + next;
		/* the next phase starts after this one's flows end: kept
		 * up to it all the same, whatever the trajectory says */
		end = k + 1 < tr->nphases && tr->start_ns[k + 1] < next ?
		      tr->start_ns[k + 1] : next;
	}
	if (rs) {
		rs->hc_next = at;
		rs->hc_end = end;
		rs->hc_has_next = 1;
	}
	return at;
}

/* Index of link l in the ascending links[0..n-1]; n if absent. */
static uint32_t link_index(const uint32_t *links, uint32_t n, uint32_t l)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (links[mid] < l)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && links[lo] == l ? lo : n;
}

/* cp's elements by distinct link (struct cplan's link_off), made once;
 * 0 or -1 (no distinct links, or memory). Elements ascending: by flow. */
static int index_links(struct cplan *cp)
{
	const struct plan *p = &cp->plan;
	uint32_t nl, e, i, *cur = NULL;
	const uint32_t *links = plan_links(p, &nl);

	if (cp->link_off)
		return 0;
	if (!p->links)
		return -1;
	cp->link_off = mem_calloc(nl + 2, sizeof(*cp->link_off));
	cp->link_elem = mem_alloc((p->nelems + 1) * sizeof(*cp->link_elem));
	cp->link_flow = mem_alloc((p->nelems + 1) * sizeof(*cp->link_flow));
	cur = mem_alloc((nl + 1) * sizeof(*cur));
	if (!cp->link_off || !cp->link_elem || !cp->link_flow || !cur)
		goto fail;
	for (e = 0; e < p->nelems; e++) {
		uint32_t d = link_index(links, nl, p->elem_link[e]);

		if (d == nl)
			goto fail;
		cp->link_off[d + 1]++;
	}
	for (i = 0; i < nl; i++) {
		cp->link_off[i + 1] += cp->link_off[i];
		cur[i] = cp->link_off[i];
	}
	for (i = 0; i < p->nflows; i++)
		for (e = p->flows[i].first;
		     e < p->flows[i].first + p->flows[i].n; e++) {
			uint32_t d = link_index(links, nl, p->elem_link[e]);

			cp->link_elem[cur[d]] = e;
			cp->link_flow[cur[d]++] = i;
		}
	mem_free(cur);
	return 0;
fail:
	mem_free(cur);
	mem_free(cp->link_off);
	mem_free(cp->link_elem);
	mem_free(cp->link_flow);
	cp->link_off = cp->link_elem = cp->link_flow = NULL;
	return -1;
}

/* Whether rs keeps host_links()'s answer for link l in its state: then
 * into *left, *cnt, *maxr. */
static int kept_link(const struct crun_set *rs, uint32_t l, double *left,
		     uint32_t *cnt, double *maxr)
{
	uint32_t i;

	for (i = 0; i < rs->hc_nl; i++)
		if (rs->hc_link[i] == l) {
			*left = rs->hc_left[i];
			*cnt = rs->hc_cnt[i];
			*maxr = rs->hc_maxr[i];
			return 1;
		}
	return 0;
}

/* Keep host_links()'s answer for link l in rs's state (rs NULL, or its
 * room full: not kept). */
static void keep_link(struct crun_set *rs, uint32_t l, double left,
		      uint32_t cnt, double maxr)
{
	if (!rs || rs->hc_nl == CRUN_HC_LINKS)
		return;
	rs->hc_link[rs->hc_nl] = l;
	rs->hc_left[rs->hc_nl] = left;
	rs->hc_cnt[rs->hc_nl] = cnt;
	rs->hc_maxr[rs->hc_nl++] = maxr;
}

/* flow_set_host() callback: for each of links[0..n-1], what replay r's
 * live flows would leave of it as variables (adopt_phase's order: plan
 * order, each at its rate now), how many they are and the fastest. A
 * flow's elements are sorted by link and distinct (plan_flow_end). */
static void host_links(void *holder, const uint32_t *links, uint32_t n,
		       double *left, uint32_t *cnt, double *maxr)
{
	const struct crun *r = holder;
	const struct ctraj *tr = r->tr;
	const struct plan *p = &r->cp->plan;
	units_ns_t dt = sim_now(r->sim) - r->t0;
	struct crun_set *rs = host_state(r, dt);
	uint32_t k, pending, i, j;

	for (j = 0; j < n; j++) {
		left[j] = flow_link_cap(r->fn, links[j]);
		cnt[j] = 0;
		maxr[j] = 0;
	}
	if (rs) {
		k = rs->hc_k;
		pending = rs->hc_pending;
	} else {
		k = phase_at(r, dt, &pending);
	}
	if (pending == 0)
		return;
	if (index_links(r->cp) == 0) {
		const struct cplan *cp = r->cp;
		uint32_t nl, first = p->phases[k].first,
			 end = first + p->phases[k].n;
		const uint32_t *all = plan_links(p, &nl);

		for (j = 0; j < n; j++) {
			uint32_t d, x, hi;

			if (rs && kept_link(rs, links[j], &left[j], &cnt[j],
					    &maxr[j]))
				continue;
			d = link_index(all, nl, links[j]);
			if (d == nl) {
				keep_link(rs, links[j], left[j], cnt[j],
					  maxr[j]);
				continue;
			}
			/* A link's entries are in flow order (index_links):
			 * phase k's are one run of them, found by bisection
			 * (a NIC's list holds the flows of every phase). */
			x = cp->link_off[d];
			hi = cp->link_off[d + 1];
			while (x < hi) {
				uint32_t mid = x + (hi - x) / 2;

				if (cp->link_flow[mid] < first)
					x = mid + 1;
				else
					hi = mid;
			}
			for (; x < cp->link_off[d + 1] &&
			       cp->link_flow[x] < end; x++) {
				double rate;

				i = cp->link_flow[x];
				if (!rs) {
					if (tr->end_ns[i] < dt)
						continue;
					rate = state_at(tr, i, dt)->rate_Bps;
				} else if (rs->hc_stamp[i] == rs->hc_gen) {
					rate = rs->hc_rate[i];
					if (rate < 0)	/* ended before dt */
						continue;
				} else if (tr->end_ns[i] < dt) {
					rs->hc_stamp[i] = rs->hc_gen;
					rs->hc_rate[i] = -1;
					continue;
				} else {
					rate = state_at(tr, i, dt)->rate_Bps;
					rs->hc_stamp[i] = rs->hc_gen;
					rs->hc_rate[i] = rate;
				}
				left[j] -= p->elem_coef[cp->link_elem[x]] * rate;
				cnt[j]++;
				if (rate > maxr[j])
					maxr[j] = rate;
			}
			keep_link(rs, links[j], left[j], cnt[j], maxr[j]);
		}
		return;
	}
	for (i = p->phases[k].first; i < p->phases[k].first + p->phases[k].n;
	     i++) {
		const struct plan_flow *f = &p->flows[i];
		const uint32_t *el = p->elem_link + f->first;
		double rate;
		int got = 0;

		if (tr->end_ns[i] < dt)
			continue;
		for (j = 0; j < n; j++) {
			uint32_t lo = 0, hi = f->n;

			while (lo < hi) {
				uint32_t mid = lo + (hi - lo) / 2;

				if (el[mid] < links[j])
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo == f->n || el[lo] != links[j])
				continue;
			if (!got) {
				rate = state_at(tr, i, dt)->rate_Bps;
				got = 1;
			}
			left[j] -= p->elem_coef[f->first + lo] * rate;
			cnt[j]++;
			if (rate > maxr[j])
				maxr[j] = rate;
		}
	}
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
			    0, NULL, 0, 0 };
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
		r->end_ev = sim_at(sim, t0 + tr->total_ns, replay_end, r);
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
	flow_set_host(fn, host_next, host_links);
	if (!flow_try_hold(fn, links, nlinks, r)) {
		if (!own)
			mem_free(r);
		return 1;
	}
	if (!own)
		*r = (struct crun){ rs, NULL, rs->live, sim, fn, cp, scale,
				    cp->per_byte ? scale : cp->size_B, 1, 0, 0,
				    done, token, NULL, tr, t0, 0, 0, NULL, 0,
				    0, NULL, 0, 0 };
	r->tr = tr;
	r->t0 = t0;
	r->hid = ++rs->hid_next;
	r->end_ev = sim_at(sim, t0 + tr->total_ns, replay_end, r);
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
