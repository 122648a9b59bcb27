/*
 * net_memo.c - comm_start's memo (net_memo.h), split out of net.c.
 */
#include "net_memo.h"

#include <string.h>

#include "base/mem.h"
#include "base/mix.h"

static void memo_clear(struct memo *m)
{
	if (m->copy != m->inline_copy)
		mem_free(m->copy);
	if (m->cp)
		pcache_plan_unref(m->cp);
	memset(m, 0, sizeof(*m));
}

int net_memo_init(struct net_memo *t)
{
	t->slots = mem_calloc(MEMO_FIRST, sizeof(*t->slots));
	t->n = t->slots ? MEMO_FIRST : 0;
	t->misses = 0;
	return t->slots ? 0 : -1;
}

void net_memo_free(struct net_memo *t)
{
	uint32_t i;

	for (i = 0; t->slots && i < t->n; i++)
		memo_clear(&t->slots[i]);
	mem_free(t->slots);
	t->slots = NULL;
	t->n = 0;
}

/* The memo slot for c (which may hold another collective) in a memo of
 * nmemo slots. */
static struct memo *memo_slot_in(struct memo *memo, uint32_t nmemo,
				 const struct coll_desc *c)
{
	uint64_t h, b;

	/* The size's bits that differ between a group's calls (a double's
	 * exponent and leading mantissa bits) are the high ones: each word
	 * goes through fmix64, whose every output bit depends on every
	 * input bit, before the low bits pick the slot. (A multiply alone
	 * carries bits only upwards: every size of a group fell in one slot,
	 * and a TP all-gather of four sizes missed 2 calls in 3.) */
	memcpy(&b, &c->bytes, sizeof(b));
	h = mix_fmix64(b ^ ((uint64_t)(uint32_t)c->op << 40) ^
		       ((uint64_t)(uint32_t)c->algo << 20) ^
		       (uint32_t)c->proto);
	h = mix_fmix64(h ^ (uint64_t)(uintptr_t)c->gpus);
	if (c->path) {	/* by its numbers: memo_grow() passes a copy */
		memcpy(&b, &c->path->setup_s, sizeof(b));
		h = mix_fmix64(h ^ b ^ (uint32_t)c->path->mode);
	}
	return &memo[h & (nmemo - 1)];
}

struct memo *net_memo_slot(struct net_memo *t, const struct coll_desc *c)
{
	return memo_slot_in(t->slots, t->n, c);
}

/* Twice the slots, the entries moved over (colliding ones dropped): the
 * memo grows to the number of distinct collectives a step repeats (a
 * direct-mapped memo smaller than that misses on most calls). Out of
 * memory keeps the old one. */
static void memo_grow(struct net_memo *t)
{
	uint32_t nn = t->n * 2, i;
	struct memo *nm;

	t->misses = 0;
	if (nn > MEMO_MAX || !(nm = mem_calloc(nn, sizeof(*nm))))
		return;
	for (i = 0; i < t->n; i++) {
		struct memo *m = &t->slots[i], *to;

		if (!m->cp)
			continue;
		to = memo_slot_in(nm, nn, &(struct coll_desc){
			.op = (enum coll_op)m->op, .bytes = m->bytes,
			.gpus = m->gpus, .algo = m->algo, .proto = m->proto,
			.path = m->has_path ? &m->path : NULL });
		if (to->cp) {
			memo_clear(m);
			continue;
		}
		*to = *m;
		if (m->copy == m->inline_copy)
			to->copy = to->inline_copy;
	}
	mem_free(t->slots);
	t->slots = nm;
	t->n = nn;
}

int net_memo_same(const struct memo *m, const struct coll_desc *c)
{
	uint32_t i;

	if (!m->cp || m->gpus != c->gpus || m->ngpus != c->ngpus ||
	    m->op != (int)c->op || m->bytes != c->bytes ||
	    m->algo != c->algo || m->proto != c->proto ||
	    m->replicas != c->replicas ||
	    m->group != (c->group > 1 ? c->group : 1) ||
	    m->has_path != (c->path != NULL) ||
	    (c->path && !pcache_path_same(&m->path, c->path)))
		return 0;
	/* The same address may hold another group now (a caller's reused
	 * buffer): compare the members too. */
	for (i = 0; i < c->ngpus; i++)
		if (m->copy[i] != c->gpus[i])
			return 0;
	return 1;
}

/* Remember cp and tr for c (not for uneven all-to-alls: the memo keys on
 * the members, sizes and a path's numbers, the cache on the matrix too;
 * a DeepEP path's 60k all-to-alls of the DSV3 2,048-GPU step hashed 64
 * members and the path into the cache three times a call). A failed
 * copy only costs a lookup later. */
void net_memo_put(struct net_memo *t, const struct coll_desc *c,
	      struct cplan *cp, const struct ctraj *tr)
{
	struct memo *m = net_memo_slot(t, c);
	uint32_t *copy;

	if (c->a2a_B)
		return;
	if (++t->misses > t->n / 2) {
		memo_grow(t);
		m = net_memo_slot(t, c);
	}
	if (c->ngpus <= MEMO_INLINE) {
		copy = NULL;
	} else {
		copy = mem_alloc(c->ngpus * sizeof(*copy) + 1);
		if (!copy)
			return;
		memcpy(copy, c->gpus, c->ngpus * sizeof(*copy));
	}
	memo_clear(m);
	*m = (struct memo){ c->gpus, copy, { 0 }, c->ngpus, c->replicas,
			    c->group > 1 ? c->group : 1, (int)c->op, c->algo, c->proto, c->bytes,
			    c->path != NULL, c->path ? *c->path
						     : (struct coll_path){ 0 },
			    cp, tr };
	if (!copy) {
		m->copy = m->inline_copy;
		memcpy(m->copy, c->gpus, c->ngpus * sizeof(*copy));
	}
	pcache_plan_ref(cp);
}
