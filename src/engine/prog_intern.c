/*
 * prog_intern.c - one copy of each distinct thing a program repeats:
 * names (prog_intern), task descriptions, and collective member lists.
 *
 * A 10^6-task program says "gemm_fwd" and "tp group {8..15}" thousands of
 * times; each is stored once and tasks refer to it by index or pointer.
 * All three use the same open-addressing table of entry indexes (struct
 * itab): it keeps each entry's hash, so it can grow without knowing what
 * the entries are, and the entries themselves live in an array the caller
 * grows alongside.
 */
#include "exec_impl.h"
#include "base/mem.h"

#include <string.h>

#define ITAB_FIRST 64	/* entries of a new table */

void prog_itab_release(struct itab *t)
{
	mem_free(t->slot);
	mem_free(t->hash);
	memset(t, 0, sizeof(*t));
}

/* Rebuild the slots for 2 * cap positions; 0 or -1. */
static int rehash(struct itab *t, uint32_t nslots)
{
	uint64_t *slot = mem_calloc(nslots, sizeof(*slot));
	uint32_t i;

	if (!slot)
		return -1;
	for (i = 0; i < t->n; i++) {
		uint32_t j = t->hash[i] & (nslots - 1);

		while (slot[j])
			j = (j + 1) & (nslots - 1);
		slot[j] = (uint64_t)t->hash[i] << 32 | (i + 1);
	}
	mem_free(t->slot);
	t->slot = slot;
	t->nslots = nslots;
	return 0;
}

/* Room for one more entry in the table and in *entries (elements of elem
 * bytes); 0 or -1. */
static int reserve(struct itab *t, void *entries, size_t elem)
{
	void **e = entries;
	uint32_t ncap;
	void *np;

	if (t->n < t->cap)
		return 0;
	if (t->cap >= UINT32_MAX / 4)
		return -1;
	ncap = t->cap ? 2 * t->cap : ITAB_FIRST;
	np = mem_realloc(*e, (size_t)ncap * elem);
	if (!np)
		return -1;
	*e = np;
	np = mem_realloc(t->hash, (size_t)ncap * sizeof(*t->hash));
	if (!np)
		return -1;
	t->hash = np;
	if (rehash(t, 2 * ncap) != 0)
		return -1;
	t->cap = ncap;
	return 0;
}

/* The entry equal to key, or UINT32_MAX with *pos at the free slot where
 * it would go. same(entries, i, key) compares entry i with key. */
static uint32_t find(const struct itab *t, uint32_t h, const void *entries,
		     int (*same)(const void *, uint32_t, const void *),
		     const void *key, uint32_t *pos)
{
	uint32_t j = h & (t->nslots - 1);
	uint64_t e;

	for (; (e = t->slot[j]) != 0; j = (j + 1) & (t->nslots - 1))
		if ((uint32_t)(e >> 32) == h &&
		    same(entries, (uint32_t)e - 1, key))
			return (uint32_t)e - 1;
	*pos = j;
	return UINT32_MAX;
}

/* Enter the caller's new entry (already stored at index t->n). */
static uint32_t insert(struct itab *t, uint32_t pos, uint32_t h)
{
	t->hash[t->n] = h;
	t->slot[pos] = (uint64_t)h << 32 | (t->n + 1);
	return t->n++;
}

/* FNV-1a over n bytes. */
static uint32_t fnv(const void *data, size_t n)
{
	const unsigned char *b = data;
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *b++) * 16777619u;
	return h;
}

/* ---- names ---- */

static int str_same(const void *entries, uint32_t i, const void *key)
{
	return strcmp(((const char *const *)entries)[i], key) == 0;
}

const char *prog_intern(struct prog *p, const char *s)
{
	uint32_t h = fnv(s, strlen(s)), pos = 0, i;
	char *copy;

	if (p->failed)
		return NULL;
	if (reserve(&p->str_tab, &p->strs, sizeof(*p->strs)) != 0)
		goto oom;
	i = find(&p->str_tab, h, p->strs, str_same, s, &pos);
	if (i != UINT32_MAX)
		return p->strs[i];
	copy = arena_strdup(&p->arena, s);
	if (!copy)
		goto oom;
	p->strs[p->str_tab.n] = copy;
	insert(&p->str_tab, pos, h);
	return copy;
oom:
	p->failed = 1;
	return NULL;
}

/* ---- task descriptions (the name by pointer: interned or literal) ---- */

static int info_same(const void *entries, uint32_t i, const void *key)
{
	const struct task_info *a = &((const struct task_info *)entries)[i];
	const struct task_info *b = key;

	return a->name == b->name && a->cat == b->cat &&
	       a->layer == b->layer && a->microbatch == b->microbatch &&
	       a->phase == b->phase;
}

uint32_t prog_intern_info(struct prog *p, const struct task_info *in)
{
	uint64_t x = (uint64_t)(uintptr_t)in->name * 0x9e3779b97f4a7c15u;
	uint32_t h, pos = 0, i;

	x ^= (uint64_t)(uint32_t)in->layer * 0xc2b2ae3d27d4eb4fu;
	x ^= (uint64_t)(uint32_t)in->microbatch * 0x165667b19e3779f9u;
	x ^= (uint64_t)in->cat ^ (uint64_t)in->phase << 8;
	h = (uint32_t)(x ^ x >> 29 ^ x >> 47);
	if (reserve(&p->info_tab, &p->infos, sizeof(*p->infos)) != 0)
		return UINT32_MAX;
	i = find(&p->info_tab, h, p->infos, info_same, in, &pos);
	if (i != UINT32_MAX)
		return i;
	p->infos[p->info_tab.n] = *in;
	return insert(&p->info_tab, pos, h);
}

/* ---- member lists: stored as n, then the n ids ---- */

struct group_key {
	const uint32_t *ids;
	uint32_t n;
};

static int group_same(const void *entries, uint32_t i, const void *key)
{
	const uint32_t *g = ((const uint32_t *const *)entries)[i];
	const struct group_key *k = key;

	return g[0] == k->n && memcmp(g + 1, k->ids, k->n * sizeof(*g)) == 0;
}

const uint32_t *prog_intern_group(struct prog *p, const uint32_t *ids,
				  uint32_t n)
{
	struct group_key k = { ids, n };
	uint32_t h = fnv(ids, (size_t)n * sizeof(*ids)), pos = 0, i;
	uint32_t *g;

	if (reserve(&p->group_tab, &p->groups, sizeof(*p->groups)) != 0)
		return NULL;
	i = find(&p->group_tab, h, p->groups, group_same, &k, &pos);
	if (i != UINT32_MAX)
		return p->groups[i] + 1;
	g = arena_alloc(&p->arena, ((size_t)n + 1) * sizeof(*g));
	if (!g)
		return NULL;
	g[0] = n;
	memcpy(g + 1, ids, (size_t)n * sizeof(*g));
	p->groups[p->group_tab.n] = g;
	insert(&p->group_tab, pos, h);
	return g + 1;
}
