/*
 * ham.c - arc-disjoint Hamiltonian cycles by depth-first search.
 *
 * Cycle k is grown from vertex 0; at vertex u the candidates are tried in
 * the order u+1+k, u+2+k, ... (mod m), which spreads the cycles' first
 * choices and finds full decompositions quickly. When cycle k closes, the
 * search continues with cycle k+1 and backtracks into cycle k if k+1
 * cannot be completed; every cycle level has its own path and visited
 * set, since the search for k+1 runs inside the search for k. A step
 * budget bounds the work.
 */
#include "ham.h"

#include <string.h>

#include "base/mem.h"

#define BUDGET 4000000L

struct search {
	uint32_t m;
	uint8_t *used;		/* m*m arcs */
	uint8_t *inpath;	/* m per cycle level */
	uint32_t *path;		/* m per cycle level */
	uint32_t *cyc;		/* output rows */
	uint32_t want;		/* cycles to find */
	uint32_t found;		/* cycles stored */
	long steps;
	int backtrack;		/* 0: greedy, keep what each cycle finds */
};

static int cycle(struct search *s, uint32_t k);

static void set_arcs(struct search *s, const uint32_t *path, uint8_t v)
{
	uint32_t i, m = s->m;

	for (i = 0; i < m; i++)
		s->used[path[i] * m + path[(i + 1) % m]] = v;
}

/* The path is Hamiltonian; close it and go on with the next cycle. */
static int close_cycle(struct search *s, uint32_t k, const uint32_t *path)
{
	uint32_t m = s->m;

	if (s->used[path[m - 1] * m + 0])
		return 0;
	set_arcs(s, path, 1);
	memcpy(s->cyc + (size_t)k * m, path, m * sizeof(*path));
	s->found = k + 1;
	if (k + 1 == s->want || cycle(s, k + 1) || !s->backtrack)
		return 1;
	set_arcs(s, path, 0);
	s->found = k;
	return 0;
}

static int extend(struct search *s, uint32_t k, uint32_t len)
{
	uint32_t m = s->m, d;
	uint32_t *path = s->path + (size_t)k * m;
	uint8_t *inpath = s->inpath + (size_t)k * m;
	uint32_t u = path[len - 1];

	if (++s->steps > BUDGET)
		return 0;
	if (len == m)
		return close_cycle(s, k, path);
	for (d = 1; d < m; d++) {
		uint32_t v = (u + d + k) % m;

		if (v == u || inpath[v] || s->used[u * m + v])
			continue;
		inpath[v] = 1;
		path[len] = v;
		if (extend(s, k, len + 1))
			return 1;
		inpath[v] = 0;
	}
	return 0;
}

static int cycle(struct search *s, uint32_t k)
{
	uint8_t *inpath = s->inpath + (size_t)k * s->m;

	memset(inpath, 0, s->m);
	inpath[0] = 1;
	s->path[(size_t)k * s->m] = 0;
	return extend(s, k, 1);
}

static void run(struct search *s)
{
	memset(s->used, 0, (size_t)s->m * s->m);
	s->found = 0;
	s->steps = 0;
	cycle(s, 0);
}

/* Fill cyc (m-1 rows of m vertices) with arc-disjoint Hamiltonian cycles;
 * how many were found (1 .. m-1 for m >= 2), or -1 when out of memory. */
static int decompose(uint32_t m, uint32_t *cyc)
{
	struct search s = { .m = m, .cyc = cyc, .want = m - 1, .backtrack = 1 };

	if (m < 2)
		return 0;
	s.used = mem_alloc((size_t)m * m);
	s.inpath = mem_alloc((size_t)m * m);
	s.path = mem_alloc((size_t)m * m * sizeof(*s.path));
	if (!s.used || !s.inpath || !s.path) {
		mem_free(s.used);
		mem_free(s.inpath);
		mem_free(s.path);
		return -1;
	}
	run(&s);
	if (s.found < s.want) {
		/* No full decomposition (m = 4, 6) or out of budget: keep the
		 * disjoint cycles a greedy pass finds. */
		s.backtrack = 0;
		run(&s);
	}
	mem_free(s.used);
	mem_free(s.inpath);
	mem_free(s.path);
	return (int)s.found;
}

const uint32_t *ham_get(struct ham_cache *hc, uint32_t m, int *n)
{
	if (m >= HAM_CACHE)
		return NULL;
	if (!hc->cyc[m]) {
		uint32_t *c = mem_alloc((size_t)m * (m > 1 ? m - 1 : 1) *
					sizeof(*c) + sizeof(*c));

		if (!c)
			return NULL;
		hc->n[m] = decompose(m, c);
		if (hc->n[m] < 0) {
			mem_free(c);
			return NULL;
		}
		hc->cyc[m] = c;
	}
	*n = hc->n[m];
	return hc->cyc[m];
}

void ham_cache_release(struct ham_cache *hc)
{
	uint32_t m;

	for (m = 0; m < HAM_CACHE; m++) {
		mem_free(hc->cyc[m]);
		hc->cyc[m] = NULL;
	}
}
