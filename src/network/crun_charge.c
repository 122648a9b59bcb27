/*
 * crun_charge.c - replica charging of a collective's plan (crun.h).
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
