/*
 * crun_record.c - recording a run's trajectory on the idle engine
 * (crun_record): its phases' starts, its flows' rate changes and ends,
 * in ns after its start, for crun.c to replay (crun.c's head says why
 * replay is exact).
 */
#include "crun_impl.h"

#include <math.h>
#include <stdlib.h>

#include "base/mem.h"


void ctraj_free(struct ctraj *tr)
{
	if (!tr)
		return;
	mem_free(tr->start_ns);
	mem_free(tr->end_ns);
	mem_free(tr->rec_off);
	mem_free(tr->rec);
	mem_free(tr);
}

size_t ctraj_bytes(const struct ctraj *tr)
{
	return sizeof(*tr) + tr->nphases * sizeof(*tr->start_ns) +
	       tr->nflows * (sizeof(*tr->end_ns) + sizeof(*tr->rec_off)) +
	       tr->rec_off[tr->nflows] * sizeof(*tr->rec);
}

static struct ctraj *ctraj_new(const struct plan *p)
{
	struct ctraj *tr = mem_calloc(1, sizeof(*tr));

	if (!tr)
		return NULL;
	tr->nphases = p->nphases;
	tr->nflows = p->nflows;
	tr->link_ns = INFINITY;
	tr->start_ns = mem_calloc(p->nphases + 1, sizeof(*tr->start_ns));
	tr->end_ns = mem_calloc(p->nflows + 1, sizeof(*tr->end_ns));
	tr->rec_off = mem_calloc(p->nflows + 1, sizeof(*tr->rec_off));
	if (!tr->start_ns || !tr->end_ns || !tr->rec_off) {
		ctraj_free(tr);
		return NULL;
	}
	return tr;
}

/* flow_observe() callback while recording: keep the change. */
static void observe(void *arg, units_ns_t now, double left_B, double rate_Bps)
{
	struct rec_flow *f = arg;
	struct recorder *rc = f->r->rec;

	if (rc->nraw == rc->capraw) {
		uint32_t ncap = rc->capraw ? 2 * rc->capraw : 64;
		struct raw_rec *nr = mem_realloc(rc->raw, ncap * sizeof(*nr));

		if (!nr) {
			rc->failed = 1;
			return;
		}
		rc->raw = nr;
		rc->capraw = ncap;
	}
	rc->raw[rc->nraw++] = (struct raw_rec){
		f->i, { now - f->r->t0, left_B, rate_Bps } };
}

static void record_done(void *token)
{
	struct recorder *rc = token;

	rc->done_ns = sim_now(rc->sim) - rc->t0;
}

/* The recorded changes by flow (a stable counting sort: each flow's stay
 * in time order); 0 or -1. */
static int sort_records(struct recorder *rc)
{
	struct ctraj *tr = rc->tr;
	uint32_t i, *cur;

	tr->rec = mem_alloc((rc->nraw + 1) * sizeof(*tr->rec));
	cur = mem_calloc(tr->nflows + 1, sizeof(*cur));
	if (!tr->rec || !cur) {
		mem_free(cur);
		return -1;
	}
	for (i = 0; i < rc->nraw; i++)
		tr->rec_off[rc->raw[i].i + 1]++;
	for (i = 0; i < tr->nflows; i++)
		tr->rec_off[i + 1] += tr->rec_off[i];
	for (i = 0; i < tr->nflows; i++)
		cur[i] = tr->rec_off[i];
	for (i = 0; i < rc->nraw; i++)
		tr->rec[cur[rc->raw[i].i]++] = rc->raw[i].rec;
	mem_free(cur);
	return 0;
}

/* The most ns any link of p needs to carry the bytes the recorded run
 * puts on it: sum over flows f of a_if times f's bytes (its first
 * record's bytes left), over the link's capacity. INFINITY when the
 * plan's distinct links were not made or out of memory. */
static double link_ns(const struct flownet *fn, const struct plan *p,
		      const struct ctraj *tr)
{
	uint32_t nl, i, k;
	const uint32_t *links = plan_links(p, &nl);
	double *B, most = 0;

	if (!p->links || nl == 0)
		return p->nflows ? INFINITY : 0;
	B = mem_calloc(nl, sizeof(*B));
	if (!B)
		return INFINITY;
	for (i = 0; i < p->nflows; i++) {
		const struct plan_flow *f = &p->flows[i];
		double vol;

		if (tr->rec_off[i] == tr->rec_off[i + 1])
			continue;	/* empty: ended at once */
		vol = tr->rec[tr->rec_off[i]].left_B;
		for (k = 0; k < f->n; k++) {
			uint32_t l = p->elem_link[f->first + k], lo = 0,
				 hi = nl;

			while (lo < hi) {	/* links are ascending */
				uint32_t mid = lo + (hi - lo) / 2;

				if (links[mid] < l)
					lo = mid + 1;
				else
					hi = mid;
			}
			if (lo == nl || links[lo] != l) {
				mem_free(B);
				return INFINITY;
			}
			B[lo] += p->elem_coef[f->first + k] * vol;
		}
	}
	for (i = 0; i < nl; i++) {
		double t = B[i] / flow_link_cap(fn, links[i]) * 1e9;

		if (t > most)
			most = t;
	}
	mem_free(B);
	return most;
}

int crun_record(struct crun_set *rs, struct sim *sim, struct flownet *fn,
	       struct cplan *cp, double scale, struct ctraj **out)
{
	struct recorder rc = { .done_ns = -1 };
	struct crun *r;
	uint32_t i;
	int rv = -1;

	*out = NULL;
	rc.tr = ctraj_new(&cp->plan);
	rc.rf = mem_calloc(cp->plan.nflows + 1, sizeof(*rc.rf));
	rc.sim = sim;
	rc.t0 = sim_now(sim);
	if (!rc.tr || !rc.rf || crun_start(rs, sim, fn, cp, scale, CRUN_FULL,
					    record_done, &rc) != 0)
		goto out;
	/* crun_start put the new run first in rs: point it at the
	 * recorder. */
	r = rs->live;
	r->rec = &rc;
	r->t0 = rc.t0;
	for (i = 0; i < cp->plan.nflows; i++)
		rc.rf[i] = (struct rec_flow){ r, i };
	flow_observe(fn, observe);
	if (sim_run(sim) == 0 && !flow_failed(fn) && !rc.failed &&
	    rc.done_ns >= 0 && sort_records(&rc) == 0) {
		rc.tr->total_ns = rc.done_ns;
		rc.tr->link_ns = link_ns(fn, &cp->plan, rc.tr);
		*out = rc.tr;
		rc.tr = NULL;
		rv = 0;
	}
	flow_observe(fn, NULL);
	crun_set_release(rs);	/* what a failed run left */
out:
	ctraj_free(rc.tr);
	mem_free(rc.rf);
	mem_free(rc.raw);
	return rv;
}

/* ---- pairs (crun_pair.c) ---- */

/* A pair's recording: the two runs' recorders, started by events. */
struct pair_rec {
	struct crun_set *rs;
	struct sim *sim;
	struct flownet *fn;
	const struct crun_pair_key *k;
	struct recorder rh, rr;
	int failed;
};

/* The recorder's run: rs's newest (crun_start / crun_replay put it
 * first), recorded from now. */
static void point_at(struct crun_set *rs, struct recorder *rc)
{
	struct crun *r = rs->live;
	uint32_t i;

	r->rec = rc;
	r->t0 = rc->t0 = sim_now(rc->sim);
	for (i = 0; i < r->cp->plan.nflows; i++)
		rc->rf[i] = (struct rec_flow){ r, i };
}

static void start_host(struct sim *sim, void *arg)
{
	struct pair_rec *pr = arg;
	const struct crun_pair_key *k = pr->k;

	if (crun_replay(pr->rs, sim, pr->fn, k->hcp, k->hscale, k->htr,
			record_done, &pr->rh) != 0 || !pr->rs->live->tr) {
		pr->failed = 1;
		return;
	}
	point_at(pr->rs, &pr->rh);
}

static void start_late(struct sim *sim, void *arg)
{
	struct pair_rec *pr = arg;
	const struct crun_pair_key *k = pr->k;

	if (crun_start_late(pr->rs, sim, pr->fn, k->rcp, k->rscale, k->rtr,
			    record_done, &pr->rr) != 0) {
		pr->failed = 1;
		return;
	}
	point_at(pr->rs, &pr->rr);
}

static int recorder_init(struct recorder *rc, struct sim *sim,
			 const struct plan *p)
{
	uint32_t i;

	*rc = (struct recorder){ .done_ns = -1, .sim = sim };
	rc->tr = ctraj_new(p);
	rc->rf = mem_calloc(p->nflows + 1, sizeof(*rc->rf));
	if (!rc->tr || !rc->rf)
		return -1;
	/* -1: not recorded (the host's, before it became flows) */
	for (i = 0; i < p->nphases; i++)
		rc->tr->start_ns[i] = -1;
	for (i = 0; i < p->nflows; i++)
		rc->tr->end_ns[i] = -1;
	return 0;
}

static void recorder_free(struct recorder *rc)
{
	ctraj_free(rc->tr);
	mem_free(rc->rf);
	mem_free(rc->raw);
}

/* The host's trajectory: solo's up to dt (its phases' starts and flows'
 * ends from before it became flows, each flow's rate changes before dt),
 * then what rc recorded (from dt on). NULL out of memory. */
static struct ctraj *merge_host(const struct ctraj *solo, struct recorder *rc,
				units_ns_t dt)
{
	struct ctraj *tr = rc->tr;
	struct ctraj_rec *rec;
	uint32_t i, k, n = 0, *off;

	if (sort_records(rc) != 0)
		return NULL;
	for (i = 0; i < tr->nflows; i++)
		for (k = solo->rec_off[i]; k < solo->rec_off[i + 1] &&
					   solo->rec[k].t_ns < dt; k++)
			n++;
	rec = mem_alloc((n + rc->nraw + 1) * sizeof(*rec));
	off = mem_calloc(tr->nflows + 1, sizeof(*off));
	if (!rec || !off) {
		mem_free(rec);
		mem_free(off);
		return NULL;
	}
	n = 0;
	for (i = 0; i < tr->nflows; i++) {
		off[i] = n;
		for (k = solo->rec_off[i]; k < solo->rec_off[i + 1] &&
					   solo->rec[k].t_ns < dt; k++)
			rec[n++] = solo->rec[k];
		for (k = tr->rec_off[i]; k < tr->rec_off[i + 1]; k++)
			rec[n++] = tr->rec[k];
		if (tr->end_ns[i] < 0)
			tr->end_ns[i] = solo->end_ns[i];
	}
	off[tr->nflows] = n;
	for (i = 0; i < tr->nphases; i++)
		if (tr->start_ns[i] < 0)
			tr->start_ns[i] = solo->start_ns[i];
	mem_free(tr->rec);
	mem_free(tr->rec_off);
	tr->rec = rec;
	tr->rec_off = off;
	return tr;
}

int crun_record_pair(struct crun_set *rs, struct sim *sim,
		     struct flownet *fn, const struct crun_pair_key *k,
		     struct ctraj **host, struct ctraj **late)
{
	struct pair_rec pr = { rs, sim, fn, k, { 0 }, { 0 }, 0 };
	/* the late run starts its first flows rtr->start_ns[0] after its
	 * own start, which is dt after the host's */
	units_ns_t off = k->dt - k->rtr->start_ns[0], t0 = sim_now(sim);
	uint64_t resumed = rs->resumed;
	int rv = -1;

	*host = *late = NULL;
	if (recorder_init(&pr.rh, sim, &k->hcp->plan) != 0 ||
	    recorder_init(&pr.rr, sim, &k->rcp->plan) != 0 ||
	    !sim_at(sim, t0 + (off < 0 ? -off : 0), start_host, &pr) ||
	    !sim_at(sim, t0 + (off < 0 ? 0 : off), start_late, &pr))
		goto out;
	flow_observe(fn, observe);
	/* what it must have been: the host evicted once, by the late run's
	 * flows, dt after its start; both done */
	if (sim_run(sim) == 0 && !flow_failed(fn) && !pr.failed &&
	    !pr.rh.failed && !pr.rr.failed && pr.rh.done_ns >= 0 &&
	    pr.rr.done_ns >= 0 && rs->resumed == resumed + 1 &&
	    pr.rr.tr->start_ns[0] == k->rtr->start_ns[0] &&
	    pr.rr.t0 - pr.rh.t0 == off && sort_records(&pr.rr) == 0 &&
	    merge_host(k->htr, &pr.rh, k->dt)) {
		pr.rh.tr->total_ns = pr.rh.done_ns;
		pr.rr.tr->total_ns = pr.rr.done_ns;
		*host = pr.rh.tr;
		*late = pr.rr.tr;
		pr.rh.tr = pr.rr.tr = NULL;
		rv = 0;
	}
	flow_observe(fn, NULL);
	crun_set_release(rs);
out:
	recorder_free(&pr.rh);
	recorder_free(&pr.rr);
	return rv;
}
