/*
 * pcache.c - an open-addressing hash table (linear probing) of plan and
 * choice entries. The table never deletes single entries: when it is
 * half full it drops every entry and starts again, which keeps probing
 * short and the code small.
 */
#include "pcache.h"

#include <string.h>

#include "base/mem.h"

struct entry {
	uint64_t hash;		/* 0 = empty slot */
	struct pkey key;	/* key.gpus owned */
	struct pval val;
};

struct pcache {
	struct entry *slots;
	uint32_t cap, used;
};

#define PCACHE_SLOTS 4096

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
		mem_free((void *)e->key.gpus);
		if (e->val.plan)
			pcache_plan_unref(e->val.plan);
		memset(e, 0, sizeof(*e));
	}
	pc->used = 0;
}

void pcache_free(struct pcache *pc)
{
	if (!pc)
		return;
	clear(pc);
	mem_free(pc->slots);
	mem_free(pc);
}

/* FNV-1a over the key's fields and members; never 0. */
static uint64_t hash_key(const struct pkey *k)
{
	uint64_t h = 1469598103934665603ull;
	uint32_t i;
	int64_t head[6] = { k->kind, k->op, k->algo, k->proto, k->ngpus,
			    k->replicas };
	const unsigned char *b;

	b = (const unsigned char *)head;
	for (i = 0; i < sizeof(head); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	b = (const unsigned char *)&k->bytes;
	for (i = 0; i < sizeof(k->bytes); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	for (i = 0; i < k->ngpus; i++)
		h = (h ^ k->gpus[i]) * 1099511628211ull;
	h = (h ^ k->tag) * 1099511628211ull;
	return h ? h : 1;
}

static int same(const struct pkey *a, const struct pkey *b)
{
	return a->kind == b->kind && a->op == b->op && a->algo == b->algo &&
	       a->proto == b->proto &&
	       a->ngpus == b->ngpus && a->replicas == b->replicas &&
	       a->bytes == b->bytes && a->tag == b->tag &&
	       memcmp(a->gpus, b->gpus, a->ngpus * sizeof(*a->gpus)) == 0;
}

static struct entry *find(const struct pcache *pc, const struct pkey *k,
			  uint64_t h)
{
	uint32_t i = (uint32_t)(h % pc->cap);

	while (pc->slots[i].hash) {
		struct entry *e = &pc->slots[i];

		if (e->hash == h && same(&e->key, k))
			return e;
		i = (i + 1) % pc->cap;
	}
	return &pc->slots[i];
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
	uint32_t *gpus;

	if (pc->used * 2 >= pc->cap)
		clear(pc);
	e = find(pc, k, h);
	if (e->hash)
		return 0;
	gpus = mem_alloc(k->ngpus * sizeof(*gpus) + 1);
	if (!gpus)
		return -1;
	memcpy(gpus, k->gpus, k->ngpus * sizeof(*gpus));
	e->hash = h;
	e->key = *k;
	e->key.gpus = gpus;
	e->val = *v;
	if (v->plan)
		pcache_plan_ref(v->plan);
	pc->used++;
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
	mem_free(cp);
}
