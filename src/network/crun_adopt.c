/*
 * crun_adopt.c - the index a replayed collective's flows are adopted
 * with as one batch (crun.c adopt_batch, flow_adopt_batch).
 *
 * Per distinct link of the plan (plan_links, ascending), the plan's
 * elements on it in flow order: a counting sort of the elements by
 * link, flows taken in order, so a link's entries list its flows
 * ascending, as mm_var_add_batch() needs. Beside it each flow's rate
 * alone (flow_links_alone: the net's links' capacities never change)
 * and the batch map, all UINT32_MAX between batches. Made once per plan
 * (the plan cache keeps plans for the net's life), on the first
 * eviction that adopts the plan's flows.
 */
#include "crun.h"

#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "maxmin.h"
#include "pcache.h"

/* The entry of x in the ascending v[0..n), or NULL. */
static const uint32_t *bsearch_u32(const uint32_t *v, uint32_t n, uint32_t x)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (v[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[lo] == x ? &v[lo] : NULL;
}

int crun_adoption_index(struct cplan *cp, const struct flownet *fn)
{
	const struct plan *p = &cp->plan;
	uint32_t nl, f, e, d, *fill = NULL;
	const uint32_t *links = plan_links(p, &nl);

	if (cp->tmap)
		return 0;
	if (!p->links || p->nflows == 0)
		return -1;
	cp->alone_Bps = mem_alloc((size_t)p->nflows * sizeof(*cp->alone_Bps));
	cp->toff = mem_calloc((size_t)nl + 1, sizeof(*cp->toff));
	cp->tp = mem_alloc(((size_t)p->nelems + 1) * sizeof(*cp->tp));
	fill = mem_alloc(((size_t)nl + 1) * sizeof(*fill));
	if (!cp->alone_Bps || !cp->toff || !cp->tp || !fill)
		goto fail;
	for (e = 0; e < p->nelems; e++) {
		const uint32_t *at = bsearch_u32(links, nl, p->elem_link[e]);

		if (!at)
			BUG("run: a plan element off its plan's links");
		cp->toff[at - links + 1]++;
	}
	for (d = 0; d < nl; d++)
		cp->toff[d + 1] += cp->toff[d];
	memcpy(fill, cp->toff, ((size_t)nl + 1) * sizeof(*fill));
	for (f = 0; f < p->nflows; f++) {
		const struct plan_flow *pf = &p->flows[f];

		cp->alone_Bps[f] = flow_links_alone(fn,
			p->elem_link + pf->first, p->elem_coef + pf->first,
			pf->n);
		for (e = 0; e < pf->n; e++) {
			d = (uint32_t)(bsearch_u32(links, nl,
				p->elem_link[pf->first + e]) - links);
			cp->tp[fill[d]++] = (struct mm_tpair){ f, e };
		}
	}
	mem_free(fill);
	cp->tmap = mem_alloc((size_t)p->nflows * sizeof(*cp->tmap));
	if (!cp->tmap)
		goto fail;
	for (f = 0; f < p->nflows; f++)
		cp->tmap[f] = UINT32_MAX;
	return 0;
fail:
	mem_free(fill);
	mem_free(cp->alone_Bps);
	mem_free(cp->toff);
	mem_free(cp->tp);
	cp->alone_Bps = NULL;
	cp->toff = NULL;
	cp->tp = NULL;
	return -1;
}
