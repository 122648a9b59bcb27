/*
 * crun_host.c - a running replay read off its trajectory: its state at a
 * time (crun_state_at, crun_phase_at; crun.c resumes it as flows from
 * there) and the callbacks flow_set_host() takes while it hosts guests
 * (flow.c). crun.c replays it; its head says why that is exact.
 */
#include "crun_impl.h"

#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

/* The last rate change of plan flow i before dt (ns after the start). */
const struct ctraj_rec *crun_state_at(const struct ctraj *tr, uint32_t i,
				      units_ns_t dt)
{
	uint32_t k = tr->rec_off[i + 1];

	while (k > tr->rec_off[i] && tr->rec[k - 1].t_ns >= dt)
		k--;
	if (k == tr->rec_off[i])
		BUG("run: a replayed flow with no rate before now");
	return &tr->rec[k - 1];
}

/* The phase of a replay dt after its start, and in *pending how many of
 * its flows have not ended before dt: the last phase whose flows started
 * before dt, or the next one when all of them ended before dt (pending
 * 0: the run waits for its start). */
uint32_t crun_phase_at(const struct crun *r, units_ns_t dt,
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
	rs->hc_k = crun_phase_at(r, dt, &rs->hc_pending);
	rs->hc_has_next = 0;
	return rs;
}

/* flow_set_host() callback: the ns of replay r's next event (a flow's end
 * or rate change, its next phase's start, its end), -1 if it is not a
 * running replay. Keeps each live flow's rate now (host_state). */
units_ns_t crun_host_next(void *holder)
{
	const struct crun *r = holder;
	const struct ctraj *tr = r->tr;
	const struct plan *p;
	struct crun_set *rs;
	units_ns_t dt, next, at, end;
	uint32_t k, pending, i;

	/* a pair replay's run shares its links with the other's flows,
	 * which host_links() would not count: no guests */
	if (r->parked || !tr || r->mate)
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
		k = crun_phase_at(r, dt, &pending);
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
static int kept_link(struct crun_set *rs, uint32_t l, double *left,
		     uint32_t *cnt, double *maxr)
{
	uint32_t i;

	for (i = 0; i < rs->hc_nl; i++)
		if (rs->hc_link[i] == l) {
			*left = rs->hc_left[i];
			*cnt = rs->hc_cnt[i];
			*maxr = rs->hc_maxr[i];
			rs->hc_kept++;
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
void crun_host_links(void *holder, const uint32_t *links, uint32_t n,
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
		k = crun_phase_at(r, dt, &pending);
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
					rate = crun_state_at(tr, i, dt)->rate_Bps;
				} else if (rs->hc_stamp[i] == rs->hc_gen) {
					rate = rs->hc_rate[i];
					if (rate < 0)	/* ended before dt */
						continue;
				} else if (tr->end_ns[i] < dt) {
					rs->hc_stamp[i] = rs->hc_gen;
					rs->hc_rate[i] = -1;
					continue;
				} else {
					rate = crun_state_at(tr, i, dt)->rate_Bps;
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
				rate = crun_state_at(tr, i, dt)->rate_Bps;
				got = 1;
			}
			left[j] -= p->elem_coef[f->first + lo] * rate;
			cnt[j]++;
			if (rate > maxr[j])
				maxr[j] = rate;
		}
	}
}

uint64_t crun_host_kept(const struct crun_set *rs)
{
	return rs->hc_kept;
}
