/*
 * prog_intern.c - one copy of each distinct thing a program repeats:
 * names (prog_intern), task kinds (duration, name, category), collective
 * member lists, all-to-all matrices and descriptors.
 *
 * A 10^6-task program says "gemm_fwd" and "tp group {8..15}" thousands of
 * times; each is stored once and tasks refer to it by index or pointer.
 * All three use the same open-addressing table of entry indexes (struct
 * itab): it keeps each entry's hash, so it can grow without knowing what
 * the entries are, and the entries themselves live in an array the caller
 * grows alongside.
 */
#include "exec_impl.h"
#include "base/coll.h"
#include "base/mix.h"
#include "base/mem.h"

#include <stdint.h>
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
	uint32_t *slot = mem_calloc(nslots, sizeof(*slot)), i;

	if (!slot)
		return -1;
	for (i = 0; i < t->n; i++) {
		uint32_t j = t->hash[i] & (nslots - 1);

		while (slot[j])
			j = (j + 1) & (nslots - 1);
		slot[j] = i + 1;
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

	for (; t->slot[j]; j = (j + 1) & (t->nslots - 1))
		if (t->hash[t->slot[j] - 1] == h &&
		    same(entries, t->slot[j] - 1, key))
			return t->slot[j] - 1;
	*pos = j;
	return UINT32_MAX;
}

/* Enter the caller's new entry (already stored at index t->n). */
static uint32_t insert(struct itab *t, uint32_t pos, uint32_t h)
{
	t->hash[t->n] = h;
	t->slot[pos] = t->n + 1;
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

/* A hash of n ids, two a step (a multiply-rotate step per word, then
 * fmix64): a byte at a time, FNV-1a cost 256 dependent multiplies for a
 * 64-GPU group, and the step builder interns one per collective. */
static uint32_t hash_ids(const uint32_t *ids, uint32_t n)
{
	uint64_t h = 0x6a09e667f3bcc909ull ^ n;
	uint32_t i;

	for (i = 0; i + 1 < n; i += 2) {
		h ^= ((uint64_t)ids[i] << 32 | ids[i + 1]) *
		     0x9e3779b97f4a7c15ull;
		h = (h << 27 | h >> 37) * 0xc2b2ae3d27d4eb4full;
	}
	if (i < n)
		h ^= ids[i] * 0x9e3779b97f4a7c15ull;
	return (uint32_t)mix_fmix64(h);
}

/* ---- names ---- */

static int str_same(const void *entries, uint32_t i, const void *key)
{
	return strcmp(((const char *const *)entries)[i], key) == 0;
}

const char *prog_intern(struct prog *p, const char *s)
{
	uint32_t h = fnv(s, strlen(s)), pos, i;
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

/* ---- task kinds (the name by pointer: interned or literal) ---- */

struct kind_key {
	int64_t dur;
	const char *name;
	uint32_t cat;
	float owned;
};

static int kind_same(const void *entries, uint32_t i, const void *key)
{
	const struct pkind *a = &((const struct pkind *)entries)[i];
	const struct kind_key *b = key;

	return a->dur == b->dur && a->name == b->name && a->cat == b->cat &&
	       a->owned == b->owned;
}

static uint32_t intern_kind(struct prog *p, const struct kind_key *kk);

uint32_t prog_intern_kind(struct prog *p, int64_t dur, const char *name,
			  enum task_cat cat, float owned)
{
	struct kind_key k = { dur, name, (uint32_t)cat, owned };

	return intern_kind(p, &k);
}

uint32_t prog_intern_kind_s(struct prog *p, double dur_s, const char *name,
			    enum task_cat cat, float owned)
{
	uint64_t bits, x;
	struct kind_memo *m;
	uint32_t i;

	memcpy(&bits, &dur_s, sizeof(bits));
	x = ((uint64_t)(uintptr_t)name ^ bits) * 0x9e3779b97f4a7c15u;
	m = &p->kind_memo[x >> (64 - KIND_MEMO_BITS)];
	/* A builder adds the same kernel for every layer, microbatch and
	 * rank: most lookups repeat one of the last few, by the same
	 * duration in seconds (no conversion to ns, no table). */
	if (m->name == name && m->dur_bits == bits &&
	    m->cat == (uint32_t)cat && m->owned == owned)
		return m->index;
	/* Past the engine's horizon: UNITS_NS_MAX + 1, refused by exec_run
	 * when the task starts (the step is longer than it represents). */
	i = prog_intern_kind(p, units_s_to_ns_sat(dur_s), name, cat, owned);
	if (i != UINT32_MAX)
		*m = (struct kind_memo){ name, bits, (uint32_t)cat, i, owned };
	return i;
}

/* prog_intern_kind() past its memo. */
static uint32_t intern_kind(struct prog *p, const struct kind_key *kk)
{
	uint64_t x = (uint64_t)(uintptr_t)kk->name;
	int64_t dur = kk->dur;
	uint32_t cat = kk->cat, h, pos, i;

	/* Each field folded in, then murmur3's fmix64, so the low bits that
	 * pick a slot depend on every bit of every field. */
	x = (x ^ (uint64_t)dur) * 0x9e3779b97f4a7c15u;
	x ^= (uint64_t)cat << 59;
	h = (uint32_t)mix_fmix64(x);
	if (reserve(&p->kind_tab, &p->kinds, sizeof(*p->kinds)) != 0)
		return UINT32_MAX;
	i = find(&p->kind_tab, h, p->kinds, kind_same, kk, &pos);
	if (i != UINT32_MAX)
		return i;
	p->kinds[p->kind_tab.n] = (struct pkind){ dur, kk->name, cat,
						  kk->owned };
	return insert(&p->kind_tab, pos, h);
}

/* ---- collective descriptors (members and matrix already interned) ---- */

static int desc_same(const void *entries, uint32_t i, const void *key)
{
	const struct coll_desc *a = &((const struct coll_desc *)entries)[i];
	const struct coll_desc *b = key;

	return a->op == b->op && a->bytes == b->bytes && a->gpus == b->gpus &&
	       a->ngpus == b->ngpus && a->a2a_B == b->a2a_B &&
	       a->algo == b->algo && a->proto == b->proto &&
	       a->replicas == b->replicas && a->sm_share == b->sm_share &&
	       a->busy_rate == b->busy_rate && a->path == b->path &&
	       a->sm_margin == b->sm_margin &&
	       (a->group > 1 ? a->group : 1) == (b->group > 1 ? b->group : 1);
}

/* A word for the hash from a double's bits. */
static uint64_t dbits(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof(b));
	return b;
}

uint32_t prog_intern_desc(struct prog *p, const struct coll_desc *c)
{
	uint64_t x = (uint64_t)(uintptr_t)c->gpus;
	uint32_t h, pos, i;

	x = (x ^ dbits(c->bytes)) * 0x9e3779b97f4a7c15u;
	x = (x ^ (uint64_t)(uintptr_t)c->a2a_B ^ dbits(c->sm_share) >> 3) *
	    0xc2b2ae3d27d4eb4fu;
	x ^= (uint64_t)c->op << 56 ^ (uint64_t)(uint32_t)c->algo << 40 ^
	     (uint64_t)(uint32_t)c->proto << 24 ^ c->replicas ^
	     (uint64_t)c->ngpus << 8 ^
	     (uint64_t)(uintptr_t)c->path ^ dbits(c->busy_rate) >> 5;
	h = (uint32_t)mix_fmix64(x);
	if (reserve(&p->desc_tab, &p->descs, sizeof(*p->descs)) != 0)
		return UINT32_MAX;
	i = find(&p->desc_tab, h, p->descs, desc_same, c, &pos);
	if (i != UINT32_MAX)
		return i;
	p->descs[p->desc_tab.n] = *c;
	return insert(&p->desc_tab, pos, h);
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
	uint32_t h = hash_ids(ids, n), pos, i;
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

/* ---- all-to-all matrices ---- */

static int mat_same(const void *entries, uint32_t i, const void *key)
{
	const struct pmat *a = &((const struct pmat *)entries)[i];
	const struct pmat *b = key;

	return a->n == b->n && memcmp(a->v, b->v, (size_t)a->n * a->n *
				      sizeof(*a->v)) == 0;
}

const double *prog_intern_matrix(struct prog *p, const double *m,
				 uint32_t n)
{
	struct pmat k = { m, n };
	uint32_t h = (uint32_t)coll_matrix_hash(m, n), pos, i;
	size_t bytes;
	double *v;

	if ((size_t)n > SIZE_MAX / sizeof(*v) / (n ? n : 1))
		return NULL;
	bytes = (size_t)n * n * sizeof(*v);
	if (reserve(&p->mat_tab, &p->mats, sizeof(*p->mats)) != 0)
		return NULL;
	i = find(&p->mat_tab, h, p->mats, mat_same, &k, &pos);
	if (i != UINT32_MAX)
		return p->mats[i].v;
	v = arena_alloc(&p->arena, bytes);
	if (!v)
		return NULL;
	memcpy(v, m, bytes);
	p->mats[p->mat_tab.n] = (struct pmat){ v, n };
	insert(&p->mat_tab, pos, h);
	return v;
}
