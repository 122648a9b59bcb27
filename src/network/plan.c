/*
 * plan.c - building plans: phases, flows, elements.
 *
 * Allocation failures set p->failed and turn later calls into no-ops, so
 * algorithms build without checking every step and the caller checks
 * once.
 */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "base/mem.h"

/* Flows (and plans) of more elements than this merge their links by link
 * id (merge_long, distinct_links) rather than by a sort: the same result;
 * shorter ones (a ring step's few links) sort faster than they would
 * touch the scratch. */
#define LONG_FLOW 64

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
	mem_free(p->at);
	mem_free(p->seen);
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

/* Free plan_flow_end's scratch (a finished plan builds no more flows). */
static void scratch_free(struct plan *p)
{
	mem_free(p->at);
	mem_free(p->seen);
	p->at = NULL;
	p->seen = NULL;
	p->capat = 0;
}

/* The distinct links of elem_link[0..n), ascending, into out (room for
 * n): a bit per link id up to the largest, read back in order. The same
 * list as sorting and dropping repeats, in O(n + largest id / 64) where
 * the sort took O(n log n) (64 flows of ~340 links each: 22 k elements;
 * plan_finish's sort was 6 % of the DeepSeek-V3 2,048-GPU plan's
 * analytical tier). 0 when out of memory. */
static uint32_t distinct_links(const uint32_t *elem_link, uint32_t n,
			       uint32_t *out, int *failed)
{
	uint32_t i, hi = 0, k = 0;
	size_t w, nw;
	uint64_t *bits;

	for (i = 0; i < n; i++)
		if (elem_link[i] > hi)
			hi = elem_link[i];
	nw = (size_t)(hi >> 6) + 1;
	bits = mem_calloc(nw, sizeof(*bits));
	if (!bits) {
		*failed = 1;
		return 0;
	}
	for (i = 0; i < n; i++)
		bits[elem_link[i] >> 6] |= (uint64_t)1 << (elem_link[i] & 63);
	for (w = 0; w < nw; w++)
		for (uint64_t b = bits[w]; b; b &= b - 1)
			out[k++] = (uint32_t)(w << 6) +
				   (uint32_t)__builtin_ctzll(b);
	mem_free(bits);
	return k;
}

void plan_finish(struct plan *p)
{
	uint32_t i, k = 0, *tmp;

	scratch_free(p);
	if (p->failed || p->links)
		return;
	p->links = mem_alloc((size_t)p->nelems * sizeof(*p->links) + 1);
	if (!p->links) {
		p->failed = 1;
		return;
	}
	if (p->nelems > LONG_FLOW) {
		k = distinct_links(p->elem_link, p->nelems, p->links,
				   &p->failed);
	} else {
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
	}
	if (p->failed)
		return;
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


/* Room in p's scratch for link ids up to hi (new room zeroed); -1 out of
 * memory (p failed). */
static int scratch_room(struct plan *p, uint32_t hi)
{
	size_t need = (size_t)hi + 1, ncap, oldw, neww;
	uint32_t *at;
	uint64_t *seen;

	if (need <= p->capat)
		return 0;
	ncap = p->capat ? p->capat : 1024;
	while (ncap < need)
		ncap *= 2;
	oldw = (p->capat + 63) / 64;
	neww = (ncap + 63) / 64;
	at = mem_realloc(p->at, ncap * sizeof(*at));
	if (at)
		p->at = at;
	seen = at ? mem_realloc(p->seen, neww * sizeof(*seen)) : NULL;
	if (!at || !seen) {
		p->failed = 1;
		return -1;
	}
	p->seen = seen;
	memset(p->at + p->capat, 0, (ncap - p->capat) * sizeof(*p->at));
	memset(p->seen + oldw, 0, (neww - oldw) * sizeof(*p->seen));
	p->capat = ncap;
	return 0;
}

/*
 * A long flow's repeated links merged (plan_flow_end): each link's
 * coefficients summed in the order they were added, as the stable sort
 * merged them, into one entry, first seen first; the entries then
 * written back ascending by link, read off a bit per link id. The same
 * elements, bit for bit, as sorting all of them: a DeepEP forward plan's
 * flow has ~555 elements on ~340 links, and their merge sort was 13 % of
 * the DeepSeek-V3 2,048-GPU plan's analytical tier's instructions. The
 * scratch (by link id) is left zeroed for the next flow.
 */
static void merge_long(struct plan *p, struct plan_flow *f)
{
	uint32_t *link = p->elem_link + f->first, lo = UINT32_MAX, hi = 0;
	double *coef = p->elem_coef + f->first;
	uint32_t i, k = 0, m = 0;
	struct pair *v;
	size_t w;

	for (i = 0; i < f->n; i++) {
		lo = link[i] < lo ? link[i] : lo;
		hi = link[i] > hi ? link[i] : hi;
	}
	if (scratch_room(p, hi) != 0)
		return;
	v = mem_alloc((size_t)f->n * sizeof(*v));
	if (!v) {
		p->failed = 1;
		return;
	}
	for (i = 0; i < f->n; i++) {
		uint32_t l = link[i], j = p->at[l];

		if (j) {
			v[j - 1].coef += coef[i];
			continue;
		}
		v[k] = (struct pair){ l, coef[i] };
		p->at[l] = ++k;
		p->seen[l >> 6] |= (uint64_t)1 << (l & 63);
	}
	for (w = lo >> 6; w <= hi >> 6; w++) {
		uint64_t b = p->seen[w];

		p->seen[w] = 0;
		for (; b; b &= b - 1) {
			uint32_t l = (uint32_t)(w << 6) +
				     (uint32_t)__builtin_ctzll(b);

			link[m] = l;
			coef[m++] = v[p->at[l] - 1].coef;
			p->at[l] = 0;
		}
	}
	f->n = k;
	p->nelems = f->first + k;
	mem_free(v);
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
	if (f->n > LONG_FLOW) {
		merge_long(p, f);
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
