/*
 * plan.c - building plans: phases, flows, elements.
 *
 * Allocation failures set p->failed and turn later calls into no-ops, so
 * algorithms build without checking every step and the caller checks
 * once.
 */
#include "plan.h"

#include <stdlib.h>

#include "base/mem.h"

void plan_init(struct plan *p, int algo, int proto)
{
	*p = (struct plan){ .algo = algo, .proto = proto };
}

void plan_release(struct plan *p)
{
	mem_free(p->phases);
	mem_free(p->flows);
	mem_free(p->elem_link);
	mem_free(p->elem_coef);
	mem_free(p->links);
	*p = (struct plan){ .algo = 0 };
}

static int grow(struct plan *p, void **v, size_t *cap, size_t need,
		size_t elem)
{
	size_t ncap;
	void *nv;

	if (p->failed)
		return -1;
	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 16;
	while (ncap < need)
		ncap *= 2;
	nv = mem_realloc(*v, ncap * elem);
	if (!nv) {
		p->failed = 1;
		return -1;
	}
	*v = nv;
	*cap = ncap;
	return 0;
}

void plan_phase(struct plan *p, double latency_s)
{
	plan_flow_end(p);
	if (grow(p, (void **)&p->phases, &p->capphases, p->nphases + 1u,
		 sizeof(*p->phases)) != 0)
		return;
	p->phases[p->nphases++] = (struct plan_phase){ .latency_s = latency_s,
							 .first = p->nflows };
}

void plan_flow(struct plan *p, double volume_B, double bound_Bps)
{
	plan_flow_end(p);
	if (p->nphases == 0)
		plan_phase(p, 0);
	if (grow(p, (void **)&p->flows, &p->capflows, p->nflows + 1u,
		 sizeof(*p->flows)) != 0)
		return;
	p->flows[p->nflows++] = (struct plan_flow){ p->nelems, 0, volume_B,
						    bound_Bps };
	p->phases[p->nphases - 1].n++;
	p->open = 1;
}

void plan_route(struct plan *p, const struct route *r, double coef)
{
	uint32_t i;
	size_t need = (size_t)p->nelems + r->n;

	if (!p->open ||
	    grow(p, (void **)&p->elem_link, &p->capelems, need,
		 sizeof(*p->elem_link)) != 0 ||
	    grow(p, (void **)&p->elem_coef, &p->capcoef, need,
		 sizeof(*p->elem_coef)) != 0)
		return;
	for (i = 0; i < r->n; i++) {
		p->elem_link[p->nelems] = r->link[i];
		p->elem_coef[p->nelems++] = coef;
	}
	p->flows[p->nflows - 1].n += r->n;
}

struct pair {
	uint32_t link;
	double coef;
};

/* Sort v[0..n-1] by key, stably (links repeated in a flow merge their
 * coefficients in the order they were added), with tmp[0..n-1] as
 * scratch: a merge sort on the key itself. qsort's comparison through a
 * function pointer was 3 % of the DSV3 2,048-GPU step's instructions
 * (every candidate plan of every group the library chooses for). One
 * definition, two element types: the flows' (link, coefficient) pairs
 * and the plan's link ids. */
#define PLAN_MERGE_SORT(name, type, KEY)				\
static void name(type *v, type *tmp, uint32_t n)			\
{									\
	uint32_t i, j, k, mid;						\
									\
	if (n <= 16) {							\
		for (i = 1; i < n; i++) {				\
			type x = v[i];					\
									\
			for (j = i; j > 0 && KEY(v[j - 1]) > KEY(x); j--) \
				v[j] = v[j - 1];			\
			v[j] = x;					\
		}							\
		return;							\
	}								\
	mid = n / 2;							\
	name(v, tmp, mid);						\
	name(v + mid, tmp, n - mid);					\
	if (KEY(v[mid - 1]) <= KEY(v[mid]))				\
		return;							\
	for (i = 0; i < mid; i++)					\
		tmp[i] = v[i];						\
	for (i = 0, j = mid, k = 0; i < mid && j < n;)			\
		v[k++] = KEY(v[j]) < KEY(tmp[i]) ? v[j++] : tmp[i++];	\
	while (i < mid)							\
		v[k++] = tmp[i++];					\
}

#define PAIR_KEY(x) ((x).link)
#define U32_KEY(x) (x)
PLAN_MERGE_SORT(sort_pairs, struct pair, PAIR_KEY)
PLAN_MERGE_SORT(sort_u32, uint32_t, U32_KEY)

/* *v (room for *cap elements of elem bytes) cut to n: the memory past n
 * goes back to the allocator. Best effort: where the allocator fails,
 * *v stays as it was. */
static void fit(void **v, size_t *cap, size_t n, size_t elem)
{
	void *nv;

	if (!*v || n >= *cap)
		return;
	nv = mem_realloc(*v, (n ? n : 1) * elem);
	if (!nv)
		return;
	*v = nv;
	*cap = n ? n : 1;
}

/* A finished plan is kept (the collective's plan cache) and read, rarely
 * grown: its arrays cut to what they hold. Growth doubled them (up to
 * half of each unused), and plan_finish's link array has an entry per
 * element where the distinct links are far fewer (64 flows of ~88 links
 * each over a few hundred). The memory they left unused was touched
 * anyway (the heap's huge pages are zeroed whole: 16 % of the DSV3
 * 2,048-GPU plan's analytical tier was clear_page); cut, that tier's
 * peak memory went from ~172 to ~130 MiB and its page faults from
 * ~4.7k to ~2.7k. Contents and counts unchanged. */
static void shrink(struct plan *p)
{
	size_t caplinks = p->nelems + 1u;

	fit((void **)&p->phases, &p->capphases, p->nphases,
	    sizeof(*p->phases));
	fit((void **)&p->flows, &p->capflows, p->nflows, sizeof(*p->flows));
	fit((void **)&p->elem_link, &p->capelems, p->nelems,
	    sizeof(*p->elem_link));
	fit((void **)&p->elem_coef, &p->capcoef, p->nelems,
	    sizeof(*p->elem_coef));
	fit((void **)&p->links, &caplinks, p->nlinks, sizeof(*p->links));
}

void plan_finish(struct plan *p)
{
	uint32_t i, k = 0, *tmp;

	if (p->failed || p->links)
		return;
	p->links = mem_alloc((size_t)p->nelems * sizeof(*p->links) + 1);
	if (!p->links) {
		p->failed = 1;
		return;
	}
	tmp = mem_alloc((size_t)p->nelems * sizeof(*tmp) + 1);
	if (!tmp) {
		p->failed = 1;
		return;
	}
	for (i = 0; i < p->nelems; i++)
		p->links[i] = p->elem_link[i];
	sort_u32(p->links, tmp, p->nelems);
	mem_free(tmp);
	for (i = 0; i < p->nelems; i++)
		if (k == 0 || p->links[k - 1] != p->links[i])
			p->links[k++] = p->links[i];
	p->nlinks = k;
	shrink(p);
}

const uint32_t *plan_links(const struct plan *p, uint32_t *n)
{
	if (p->links) {
		*n = p->nlinks;
		return p->links;
	}
	*n = p->nelems;
	return p->elem_link;
}


void plan_flow_end(struct plan *p)
{
	struct plan_flow *f;
	struct pair *v;
	uint32_t i, k = 0;

	if (p->failed || !p->open)
		return;
	p->open = 0;
	f = &p->flows[p->nflows - 1];
	if (f->n == 0 || f->volume_B <= 0) {
		p->nelems = f->first;
		p->nflows--;
		p->phases[p->nphases - 1].n--;
		return;
	}
	v = mem_alloc((size_t)f->n * 2 * sizeof(*v));
	if (!v) {
		p->failed = 1;
		return;
	}
	for (i = 0; i < f->n; i++)
		v[i] = (struct pair){ p->elem_link[f->first + i],
				      p->elem_coef[f->first + i] };
	sort_pairs(v, v + f->n, f->n);
	for (i = 0; i < f->n; i++) {
		if (k > 0 && v[k - 1].link == v[i].link)
			v[k - 1].coef += v[i].coef;
		else
			v[k++] = v[i];
	}
	for (i = 0; i < k; i++) {
		p->elem_link[f->first + i] = v[i].link;
		p->elem_coef[f->first + i] = v[i].coef;
	}
	f->n = k;
	p->nelems = f->first + k;
	mem_free(v);
}
