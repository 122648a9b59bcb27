/*
 * crun.c - phases of flows on the engine, and replica charging.
 *
 * Replica charging. A step program may simulate one of R identical
 * groups (coll_desc.replicas). The others are assumed to sit on other
 * endpoints, so links that end at a GPU or NIC are theirs alone; the
 * R groups together occupy a fraction
 *     o = min(1, R * G / G_sys)
 * of the system's GPUs (G in one group), spread evenly. A leaf whose
 * uplinks our group's flows cross hosts d NICs (d = hosts per leaf), of
 * which b = o*d are busy with some group's traffic, n_L with ours. Each
 * busy NIC sends what ours send, and the leaf spreads that traffic over
 * its U separate uplinks (U = u under ECMP; one trunk of u ports, U = 1,
 * when sprayed). An uplink that carries one of our NICs' traffic then
 * carries b / max(n_L, U) NICs' worth, so
 *     coefficient on leaf L's uplinks  *= clamp(b / max(n_L, U), 1, R)
 * and likewise a pod's core uplinks with b = o*d*leaves_per_pod, n_P our
 * NICs under the pod and U = u * up_per_agg. In a non-blocking tree
 * (U = d) this never slows anyone; with oversubscription r (U = d/r) a
 * full leaf gives each NIC 1/r of its rate across the spine, which is
 * what this reproduces. A group that already fills its leaves (a data-
 * parallel ring on one rail) is charged nothing more. (The spreading is
 * the even one adaptive routing or spraying achieves; hash collisions
 * of static ECMP are not charged.)
 */
#include "crun.h"

#include <stdlib.h>

#include "base/mem.h"

struct crun {
	struct crun_set *set;
	struct crun *prev, *next;	/* in set->live */
	struct sim *sim;
	struct flownet *fn;
	struct cplan *cp;
	double scale;		/* flow volumes times this */
	double size_B;		/* B, the collective's size (phases' pipelines); 0 = unknown */
	int full;		/* cost the phases' pipelines (CRUN_FULL) */
	uint32_t phase;		/* current phase */
	uint32_t pending;	/* its flows not yet done */
	void (*done)(void *token);
	void *token;
};

static void start_flows(struct sim *sim, void *arg);

/* The pipeline a run costs for phase i: the phase's, or none. */
static const struct pipe *phase_pipe(const struct crun *r, uint32_t i)
{
	static const struct pipe none;

	return r->full ? &r->cp->plan.phases[i].pipe : &none;
}

/* ns before phase i's flows start: its latency and its pipeline's sync. */
static units_ns_t phase_wait(const struct crun *r, uint32_t i)
{
	return units_s_to_ns(r->cp->plan.phases[i].latency_s +
			     pipe_sync_s(phase_pipe(r, i), r->size_B));
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
	mem_free(r);
	done(token);
}

void crun_set_release(struct crun_set *rs)
{
	while (rs->live) {
		struct crun *r = rs->live;

		unlink_run(r);
		pcache_plan_unref(r->cp);
		mem_free(r);
	}
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

static void start_flows(struct sim *sim, void *arg)
{
	struct crun *r = arg;
	const struct plan *p = &r->cp->plan;
	const struct plan_phase *ph = &p->phases[r->phase];
	const struct pipe *pp = phase_pipe(r, r->phase);
	double vol = r->scale * pipe_volume_factor(pp, r->size_B);
	uint32_t i;

	(void)sim;
	r->pending = ph->n;
	for (i = 0; i < ph->n; i++) {
		const struct plan_flow *f = &p->flows[ph->first + i];

		/* A flow that cannot start counts as done; the flownet's
		 * failure flag reports it. */
		if (flow_start(r->fn, p->elem_link + f->first,
			       p->elem_coef + f->first, f->n,
			       f->volume_B * vol,
			       pipe_bound_Bps(pp, f->volume_B, f->bound_Bps),
			       flow_done,
			       r) != 0)
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
			    cp->per_byte ? scale : 0, view == CRUN_FULL, 0, 0,
			    done, token };
	if (p->nphases == 0)
		ev = sim_after(sim, 0, finish_ev, r);
	else
		ev = sim_after(sim, phase_wait(r, 0), start_flows, r);
	if (!ev) {
		mem_free(r);
		return -1;
	}
	if (rs->live)
		rs->live->prev = r;
	rs->live = r;
	pcache_plan_ref(cp);
	return 0;
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Our NICs per leaf and per pod (arrays of tree.leaves and pods). */
static int count_nics(const struct topo *t, const struct plan *p,
		      uint32_t *per_leaf, uint32_t *per_pod)
{
	const struct topo_tree *tr = &t->tree;
	uint32_t *nics = mem_alloc((size_t)p->nelems * sizeof(*nics) + 1);
	uint32_t i, n = 0;

	if (!nics)
		return -1;
	for (i = 0; i < p->nelems; i++)
		if (t->links[p->elem_link[i]].level == TL_NIC)
			nics[n++] = t->links[p->elem_link[i]].owner;
	qsort(nics, n, sizeof(*nics), by_u32);
	for (i = 0; i < n; i++) {
		uint32_t leaf;

		if (i > 0 && nics[i] == nics[i - 1])
			continue;
		leaf = tr->leaf_of[nics[i]];
		per_leaf[leaf]++;
		if (tr->leaves_per_pod)
			per_pod[leaf / tr->leaves_per_pod]++;
	}
	mem_free(nics);
	return 0;
}

static double clamp(double v, double lo, double hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int crun_charge_replicas(const struct topo *t, struct plan *p, uint32_t R,
			 uint32_t group_gpus)
{
	const struct topo_tree *tr = &t->tree;
	double o = (double)R * group_gpus / t->gpus, d = tr->hosts_per_leaf;
	uint32_t *per_leaf, *per_pod, i;
	int rc = -1;

	if (R <= 1 || tr->tiers < 2)
		return 0;
	if (o > 1)
		o = 1;
	per_leaf = mem_calloc(tr->leaves + 1, sizeof(*per_leaf));
	per_pod = mem_calloc(tr->pods + 1, sizeof(*per_pod));
	if (!per_leaf || !per_pod || count_nics(t, p, per_leaf, per_pod) != 0)
		goto out;
	for (i = 0; i < p->nelems; i++) {
		const struct topo_link *l = &t->links[p->elem_link[i]];
		double ours = 0, busy = 0, uplinks = 1;

		if (l->level == TL_LEAF_UP) {
			ours = per_leaf[l->owner];
			busy = o * d;
			uplinks = tr->up_per_leaf;
		} else if (l->level == TL_AGG_UP) {
			ours = per_pod[l->owner];
			busy = o * d * tr->leaves_per_pod;
			uplinks = (double)tr->up_per_leaf * tr->up_per_agg;
		}
		if (ours > 0)
			p->elem_coef[i] *= clamp(busy / (ours > uplinks ? ours : uplinks),
						 1, R);
	}
	rc = 0;
out:
	mem_free(per_leaf);
	mem_free(per_pod);
	return rc;
}
