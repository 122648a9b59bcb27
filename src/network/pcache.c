/*
 * pcache.c - an open-addressing hash table (linear probing) of plan and
 * choice entries. The table never deletes single entries; it doubles when
 * half full, so probing stays short and nothing is ever recomputed. (It
 * used to drop every entry when half of 4096 slots were used: a step with
 * 64 pipeline stages has more distinct collectives than that, and
 * re-choosing their algorithms took 90 % of the Megatron 1T job's 22 s.)
 * Its size is bounded by the distinct collectives of one simulation:
 * about 100 bytes an entry (twice that in slots, at most half full);
 * member lists are kept once per distinct group (a second table), not
 * once per entry: a 16k-GPU --full step has a million entries over
 * 36,000 groups.
 */
#include "pcache.h"

#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "base/mix.h"

struct entry {
	uint64_t hash;		/* 0 = empty slot */
	struct pkey key;	/* key.gpus in lists, key.a2a, key.path owned */
	struct pval val;
};

/* A member list kept once for every entry over that group. */
struct list_slot {
	uint64_t hash;		/* 0 = empty */
	uint32_t *ids;		/* owned */
	uint32_t n;
};

struct pcache {
	struct entry *slots;
	uint32_t cap, used;
	struct list_slot *lists;	/* distinct member lists */
	uint32_t lcap, lused;
};

#define PCACHE_SLOTS 4096	/* first size; a power of two */

struct pcache *pcache_new(void)
{
	struct pcache *pc = mem_calloc(1, sizeof(*pc));

	if (!pc)
		return NULL;
	pc->slots = mem_calloc(PCACHE_SLOTS, sizeof(*pc->slots));
	if (!pc->slots) {
		mem_free(pc);
		return NULL;
	}
	pc->cap = PCACHE_SLOTS;
	return pc;
}

static void clear(struct pcache *pc)
{
	uint32_t i;

	for (i = 0; i < pc->cap; i++) {
		struct entry *e = &pc->slots[i];

		if (!e->hash)
			continue;
		mem_free((void *)e->key.a2a);
		mem_free((void *)e->key.path);
		if (e->val.plan)
			pcache_plan_unref(e->val.plan);
		if (e->val.own)
			e->val.own_free(e->val.own);
		memset(e, 0, sizeof(*e));
	}
	pc->used = 0;
}

void pcache_free(struct pcache *pc)
{
	uint32_t i;

	if (!pc)
		return;
	clear(pc);
	for (i = 0; i < pc->lcap; i++)
		mem_free(pc->lists[i].ids);
	mem_free(pc->lists);
	mem_free(pc->slots);
	mem_free(pc);
}

/* Mix one 64-bit word into h (a multiply-rotate step). */
static uint64_t mix(uint64_t h, uint64_t w)
{
	h ^= w * 0x9e3779b97f4a7c15ull;
	return (h << 27 | h >> 37) * 0xc2b2ae3d27d4eb4full;
}

/* A hash of the key's fields and members (two members a step), finished
 * by murmur3's fmix64 so the low bits that pick a slot depend on every
 * input bit; never 0. */
static uint64_t hash_key(const struct pkey *k)
{
	uint64_t h = 0x6a09e667f3bcc909ull, b;
	uint32_t i;

	memcpy(&b, &k->bytes, sizeof(b));
	h = mix(h, (uint64_t)(uint32_t)k->kind << 32 | (uint32_t)k->op);
	h = mix(h, (uint64_t)(uint32_t)k->algo << 32 | (uint32_t)k->proto);
	h = mix(h, (uint64_t)k->ngpus << 32 | k->replicas);
	if (k->group > 1)
		h = mix(h, k->group);
	h = mix(h, b);
	for (i = 0; i + 1 < k->ngpus; i += 2)
		h = mix(h, (uint64_t)k->gpus[i] << 32 | k->gpus[i + 1]);
	if (i < k->ngpus)
		h = mix(h, k->gpus[i]);
	if (k->a2a)	/* sampled: same() compares all of it */
		h = mix(h, coll_matrix_hash(k->a2a, k->ngpus));
	if (k->path) {
		memcpy(&b, &k->path->setup_s, sizeof(b));
		h = mix(h, (uint64_t)(uint32_t)k->path->mode << 32 ^ b);
	}
	h = mix_fmix64(h);
	return h ? h : 1;
}

/* A member list's hash (never 0). */
static uint64_t hash_list(const uint32_t *ids, uint32_t n)
{
	uint64_t h = 0x243f6a8885a308d3ull ^ n;
	uint32_t i;

	for (i = 0; i < n; i++)
		h = mix(h, ids[i]);
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h ? h : 1;
}

/* The slot of list ids[0..n-1] in lists (lcap slots), or the free one
 * where it would go. */
static struct list_slot *find_list(struct list_slot *lists, uint32_t lcap,
				   const uint32_t *ids, uint32_t n,
				   uint64_t h)
{
	uint32_t i = (uint32_t)h & (lcap - 1);

	while (lists[i].hash &&
	       !(lists[i].hash == h && lists[i].n == n &&
		 memcmp(lists[i].ids, ids, n * sizeof(*ids)) == 0))
		i = (i + 1) & (lcap - 1);
	return &lists[i];
}

/* The cache's copy of ids[0..n-1], made if new; NULL when out of
 * memory. */
static const uint32_t *intern_list(struct pcache *pc, const uint32_t *ids,
				   uint32_t n)
{
	uint64_t h = hash_list(ids, n);
	struct list_slot *sl;

	if (pc->lused * 2 >= pc->lcap) {
		uint32_t nc = pc->lcap ? 2 * pc->lcap : 256, i;
		struct list_slot *nl = mem_calloc(nc, sizeof(*nl));

		if (!nl)
			return NULL;
		for (i = 0; i < pc->lcap; i++)
			if (pc->lists[i].hash)
				*find_list(nl, nc, pc->lists[i].ids,
					   pc->lists[i].n,
					   pc->lists[i].hash) = pc->lists[i];
		mem_free(pc->lists);
		pc->lists = nl;
		pc->lcap = nc;
	}
	sl = find_list(pc->lists, pc->lcap, ids, n, h);
	if (sl->hash)
		return sl->ids;
	sl->ids = mem_alloc(n * sizeof(*ids) + 1);
	if (!sl->ids)
		return NULL;
	memcpy(sl->ids, ids, n * sizeof(*ids));
	sl->n = n;
	sl->hash = h;
	pc->lused++;
	return sl->ids;
}

/* Whether two paths shape plans alike: both the library's, or equal in
 * every number (the name only labels tables). */
int pcache_path_same(const struct coll_path *a, const struct coll_path *b)
{
	if (!a || !b)
		return a == b;
	return a->mode == b->mode && a->setup_s == b->setup_s &&
	       a->hop_scale_up_s == b->hop_scale_up_s &&
	       a->hop_scale_out_s == b->hop_scale_out_s &&
	       a->gpu_Bps == b->gpu_Bps && a->eff_scale_up == b->eff_scale_up &&
	       a->eff_scale_out == b->eff_scale_out &&
	       a->node_share == b->node_share && a->rounds == b->rounds &&
	       a->combine == b->combine;
}

static int same(const struct pkey *a, const struct pkey *b)
{
	return a->kind == b->kind && a->op == b->op && a->algo == b->algo &&
	       a->proto == b->proto &&
	       a->ngpus == b->ngpus && a->replicas == b->replicas &&
	       (a->group > 1 ? a->group : 1) == (b->group > 1 ? b->group : 1) &&
	       a->bytes == b->bytes &&
	       memcmp(a->gpus, b->gpus, a->ngpus * sizeof(*a->gpus)) == 0 &&
	       !a->a2a == !b->a2a &&
	       (!a->a2a || memcmp(a->a2a, b->a2a, (size_t)a->ngpus * a->ngpus *
				  sizeof(*a->a2a)) == 0) &&
	       pcache_path_same(a->path, b->path);
}

static struct entry *find(const struct pcache *pc, const struct pkey *k,
			  uint64_t h)
{
	uint32_t i = (uint32_t)h & (pc->cap - 1);

	while (pc->slots[i].hash) {
		struct entry *e = &pc->slots[i];

		if (e->hash == h && same(&e->key, k))
			return e;
		i = (i + 1) & (pc->cap - 1);
	}
	return &pc->slots[i];
}

/* Twice the slots, every entry moved over; 0 or -1 (nothing changed). */
static int grow(struct pcache *pc)
{
	uint32_t ncap = pc->cap * 2, i;
	struct entry *old = pc->slots, *ns;

	if (pc->cap > UINT32_MAX / 4)
		return -1;
	ns = mem_calloc(ncap, sizeof(*ns));
	if (!ns)
		return -1;
	pc->slots = ns;
	pc->cap = ncap;
	for (i = 0; i < ncap / 2; i++)
		if (old[i].hash)
			*find(pc, &old[i].key, old[i].hash) = old[i];
	mem_free(old);
	return 0;
}

const struct pval *pcache_get(const struct pcache *pc, const struct pkey *k)
{
	struct entry *e = find(pc, k, hash_key(k));

	return e->hash ? &e->val : NULL;
}

int pcache_put(struct pcache *pc, const struct pkey *k, const struct pval *v)
{
	uint64_t h = hash_key(k);
	struct entry *e;
	const uint32_t *gpus;
	double *a2a = NULL;
	struct coll_path *path = NULL;

	if (pc->used * 2 >= pc->cap && grow(pc) != 0)
		return -1;
	e = find(pc, k, h);
	if (e->hash) {
		if (v->own)
			v->own_free(v->own);
		return 0;
	}
	gpus = intern_list(pc, k->gpus, k->ngpus);
	if (k->a2a)
		a2a = mem_alloc((size_t)k->ngpus * k->ngpus * sizeof(*a2a) + 1);
	if (k->path)
		path = mem_alloc(sizeof(*path));
	if (!gpus || (k->a2a && !a2a) || (k->path && !path)) {
		mem_free(a2a);
		mem_free(path);
		return -1;
	}
	if (path)
		*path = *k->path;
	if (a2a)
		memcpy(a2a, k->a2a, (size_t)k->ngpus * k->ngpus * sizeof(*a2a));
	e->hash = h;
	e->key = *k;
	e->key.gpus = gpus;
	e->key.a2a = a2a;
	e->key.path = path;
	e->val = *v;
	if (v->plan)
		pcache_plan_ref(v->plan);
	pc->used++;
	return 0;
}

int pcache_set(struct pcache *pc, const struct pkey *k, const struct pval *v)
{
	struct entry *e = find(pc, k, hash_key(k));

	if (v->plan || v->own)
		BUG("pcache_set: only for values that own nothing");
	if (!e->hash)
		return pcache_put(pc, k, v);
	if (e->val.plan || e->val.own)
		BUG("pcache_set: the entry owns something");
	e->val = *v;
	return 0;
}

struct cplan *pcache_plan_new(void)
{
	struct cplan *cp = mem_calloc(1, sizeof(*cp));

	if (cp)
		cp->refs = 1;
	return cp;
}

void pcache_plan_ref(struct cplan *cp)
{
	cp->refs++;
}

void pcache_plan_unref(struct cplan *cp)
{
	if (--cp->refs > 0)
		return;
	plan_release(&cp->plan);
	mem_free(cp->link_off);
	mem_free(cp->link_elem);
	mem_free(cp->link_flow);
	mem_free(cp);
}
