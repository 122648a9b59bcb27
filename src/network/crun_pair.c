/*
 * crun_pair.c - pair replays: a late run and the running replay whose
 * links it needs, replayed together.
 *
 * A run whose replay is refused when its first flows are due (crun.c
 * "Late replays": a link of its plan held by a running replay) starts
 * its flows, and the holder becomes flows beside them (evict, resume):
 * on DeepSeek-V3 on 2,048 H100s at pp 16 (workloads/jobs/deepseek-v3-
 * 2048-pp16.yaml), 3,458 pipeline send/recvs a step start while the
 * DeepEP all-to-all of the sending or the receiving stage holds the
 * NIC links they cross, each then a flow-level run of 65 flows over
 * ~88 links each, and the all-to-all's busiest link is busy 2.113 of
 * its 2.135 ms (ctraj link_ns): the send/recv moves its rates, so
 * this is a different solve, not a key the memo misses. But the
 * same pair meets at the same offset again and again (338 distinct of
 * 3,471 on that job): the run of the two, alone on their links, is a
 * function of the two trajectories and the offset, like a single
 * run's (crun.c: why replay is exact). So the pair is recorded once on
 * the idle engine, by the very steps the step's engine takes (the host
 * replayed from its start, the late run started dt later, the host
 * evicted by its flows: crun_record_pair), and replayed after: the
 * host goes on from now on its pair trajectory (its own before dt), the
 * late run replays its own, each holding the links of its plan (those
 * both use stay the host's). While both run, a flow on any of those
 * links evicts both, first the run whose current phase started first,
 * as the flow-level run made their flows variables (crun.c evict; a pair
 * with a host and a late phase starting at one ns runs as flows:
 * ordered()); when one ends, the other takes
 * its shared links and goes on alone; neither hosts guests (their
 * links carry the other's flows). A pair replays only where the
 * flow-level run would do what was recorded: no link of the late run
 * busy, one running replay (not itself a pair's, hosting no guest) the
 * only running holder, and a link of the late run that the host does
 * not hold (so the late run's flow could not have been the host's
 * guest); parked holders are taken from (their links are idle).
 */
#include "crun_impl.h"

#include "base/mem.h"
#include "base/mix.h"

/* Pairs kept per engine, at most, and the bytes their trajectories may
 * hold (ctraj_bytes), unless set otherwise (crun_set.pairs_max_B): past
 * either, a new meeting runs as flows, as before pairs, so memory stays
 * bounded like the a2a plan cache's (net.c A2A_CACHE_MAX). The 2,048-GPU
 * pp16 job (workloads/jobs/deepseek-v3-2048-pp16.yaml) keeps 361 pairs in
 * 0.9 MB; 64 MiB is some 70 times that. */
#define PAIRS_MAX 65536u
#define PAIRS_MAX_B ((size_t)64 << 20)

struct pair {
	const struct ctraj *htr, *rtr;	/* NULL htr: a free slot */
	units_ns_t dt;
	struct ctraj *host, *late;	/* NULL: could not be recorded */
};

struct crun_pairs {
	struct pair *slot;
	uint32_t cap, n;
	size_t bytes;		/* the pairs' trajectories' (ctraj_bytes) */
};

/* Free the set's pairs (crun_set_release, through rs->pairs_free). */
static void pairs_free(struct crun_set *rs)
{
	struct crun_pairs *ps = rs->pairs;
	uint32_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->cap; i++) {
		ctraj_free(ps->slot[i].host);
		ctraj_free(ps->slot[i].late);
	}
	mem_free(ps->slot);
	mem_free(ps);
	rs->pairs = NULL;
}

static uint32_t pair_hash(const struct ctraj *htr, const struct ctraj *rtr,
			  units_ns_t dt)
{
	uint64_t h = mix_fmix64((uint64_t)(uintptr_t)htr);

	h = mix_fmix64(h ^ (uint64_t)(uintptr_t)rtr);
	return (uint32_t)mix_fmix64(h ^ (uint64_t)dt);
}

/* The slot of (htr, rtr, dt) in slot[0..cap-1]: its own or a free one. */
static struct pair *find(struct pair *slot, uint32_t cap,
			 const struct ctraj *htr, const struct ctraj *rtr,
			 units_ns_t dt)
{
	uint32_t i = pair_hash(htr, rtr, dt) & (cap - 1);

	while (slot[i].htr &&
	       (slot[i].htr != htr || slot[i].rtr != rtr || slot[i].dt != dt))
		i = (i + 1) & (cap - 1);
	return &slot[i];
}

/* Room for one more pair; 0 or -1. */
static int room(struct crun_set *rs)
{
	struct crun_pairs *ps = rs->pairs;
	struct pair *ns;
	uint32_t ncap, i;

	if (!ps) {
		ps = rs->pairs = mem_calloc(1, sizeof(*ps));
		if (!ps)
			return -1;
	}
	if (ps->n >= PAIRS_MAX ||
	    ps->bytes >= (rs->pairs_max_B ? rs->pairs_max_B : PAIRS_MAX_B))
		return -1;
	if (2 * (ps->n + 1) <= ps->cap)
		return 0;
	ncap = ps->cap ? 2 * ps->cap : 64;
	ns = mem_calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	for (i = 0; i < ps->cap; i++)
		if (ps->slot[i].htr)
			*find(ns, ncap, ps->slot[i].htr, ps->slot[i].rtr,
			      ps->slot[i].dt) = ps->slot[i];
	mem_free(ps->slot);
	ps->slot = ns;
	ps->cap = ncap;
	return 0;
}

/*
 * Whether an eviction of pair p can put the two runs' flows in the order
 * the flow-level run has them. That run makes a run's flows variables
 * when its phase starts, so on a link the run whose current phase
 * started first has its flows first (maxmin.h: the settle order follows
 * the link lists); evict() adopts that run first. Where a host phase and
 * a late phase start at the same ns (the host's at the meeting, dt,
 * included), the order is that of two events at one ns, which the
 * trajectories do not say: such a pair runs as flows. Starts as ns after
 * the host's start; the late run's phase 0 starts at dt.
 */
static int ordered(const struct pair *p)
{
	const struct ctraj *h = p->host, *l = p->late;
	uint32_t i = 0, j = 0;

	/* both start_ns lists ascend: merge */
	while (i < h->nphases && j < l->nphases) {
		units_ns_t lt = p->dt + (l->start_ns[j] - l->start_ns[0]);

		if (h->start_ns[i] == lt)
			return 0;
		if (h->start_ns[i] < lt)
			i++;
		else
			j++;
	}
	return 1;
}

/* The pair k's trajectories, recorded now if new; NULL where they
 * cannot be had. */
static const struct pair *pair_of(struct crun_set *rs,
				  const struct crun_pair_key *k)
{
	struct crun_pairs *ps = rs->pairs;
	struct pair *p;
	struct sim *sim;
	struct flownet *fn;
	struct crun_set *irs;

	if (ps && ps->cap) {
		p = find(ps->slot, ps->cap, k->htr, k->rtr, k->dt);
		if (p->htr)
			return p->host ? p : NULL;
	}
	if (room(rs) != 0)
		return NULL;
	ps = rs->pairs;
	p = find(ps->slot, ps->cap, k->htr, k->rtr, k->dt);
	*p = (struct pair){ k->htr, k->rtr, k->dt, NULL, NULL };
	ps->n++;
	if (rs->idle(rs->idle_ctx, &sim, &fn, &irs) != 0)
		return NULL;
	if (crun_record_pair(irs, sim, fn, k, &p->host, &p->late) != 0) {
		rs->idle_lost(rs->idle_ctx);
		return NULL;
	}
	rs->pairs_recorded++;
	if (!ordered(p)) {
		ctraj_free(p->host);
		ctraj_free(p->late);
		p->host = p->late = NULL;
		return NULL;
	}
	ps->bytes += ctraj_bytes(p->host) + ctraj_bytes(p->late);
	return p;
}

/* Late run r (start_flows, phase 0, its late replay of tr refused;
 * through rs->pair_try): replay it and the one running replay whose
 * links it needs as a pair if the set has the pair's trajectories or can
 * record them. 0, or 1 (start its flows). */
static int pair_try(struct crun *r, const struct ctraj *tr)
{
	struct crun_set *rs = r->set;
	struct crun *h = NULL;
	const struct pair *p;
	uint32_t nl, i;
	const uint32_t *links = plan_links(&r->cp->plan, &nl);
	units_ns_t now = sim_now(r->sim);
	int apart = 0;
	sim_id hev, rev;

	if (!rs->idle || !r->cp->plan.links ||
	    now - r->late_t0 != tr->start_ns[0])
		return 1;
	for (i = 0; i < nl; i++) {
		int busy;
		struct crun *x = flow_holder(r->fn, links[i], &busy);

		if (busy)
			return 1;
		if (!x || x->parked) {
			apart = 1;
			continue;
		}
		if (!x->tr || x->mate || (h && x != h))
			return 1;
		h = x;
	}
	if (!h || !apart || h->sim != r->sim ||
	    flow_hosts_guest(r->fn, h))
		return 1;
	p = pair_of(rs, &(struct crun_pair_key){ h->cp, r->cp, h->scale,
						  r->scale, h->tr, tr,
						  now - h->t0 });
	if (!p || !flow_try_hold_beside(r->fn, links, nl, r, h))
		return 1;
	hev = sim_at(r->sim, h->t0 + p->host->total_ns, crun_replay_end, h);
	rev = hev ? sim_at(r->sim, r->late_t0 + p->late->total_ns,
			   crun_replay_end, r) : 0;
	if (!rev) {
		if (hev)
			sim_cancel(r->sim, hev);
		flow_release(r->fn, links, nl, r);
		return 1;
	}
	sim_cancel(h->sim, h->end_ev);
	h->end_ev = hev;
	h->tr = p->host;
	h->hid = ++rs->hid_next;
	r->end_ev = rev;
	r->tr = p->late;
	r->t0 = r->late_t0;
	r->hid = ++rs->hid_next;
	h->mate = r;
	r->mate = h;
	rs->replays++;
	rs->paired++;
	rs->late_flows += r->cp->plan.nflows;
	return 0;
}

void crun_set_pairs(struct crun_set *rs,
		    int (*idle)(void *ctx, struct sim **sim,
				struct flownet **fn, struct crun_set **irs),
		    void (*idle_lost)(void *ctx), void *ctx)
{
	rs->idle = idle;
	rs->idle_lost = idle_lost;
	rs->idle_ctx = ctx;
	rs->pair_try = idle ? pair_try : NULL;
	rs->pairs_free = pairs_free;
}
