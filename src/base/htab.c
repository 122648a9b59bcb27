/*
 * htab.c - the byte-keyed memo table (htab.h).
 *
 * Slots hold (entry, length, hash); an entry is one block: the value in
 * its first vstride bytes (val_size rounded up to max_align_t, so the
 * value is aligned for any type), then the key. A probe compares the
 * hash and length before the key's bytes. At most half full, linear
 * probing takes (1 + 1/(1 - a)) / 2 = 1.5 probes for a hit and
 * (1 + 1/(1 - a)^2) / 2 = 2.5 for a miss on average at load a = 1/2
 * under uniform hashing (Knuth, TAOCP vol. 3, 6.4, algorithm L).
 */
#include "htab.h"

#include <string.h>

#include "diag.h"
#include "mem.h"

struct slot {
	unsigned char *e;	/* value, then key; NULL: free */
	size_t len;		/* B of key */
	uint64_t hash;		/* htab_hash of the key */
};

struct htab {
	struct slot *v;		/* cap slots, NULL before the first put */
	size_t cap, n;		/* slots (a power of two), entries */
	size_t val_size;	/* B of a value */
	size_t vstride;		/* B before the key in an entry */
	size_t min_slots, max_slots;
};

static int pow2(size_t x)
{
	return x > 0 && (x & (x - 1)) == 0;
}

struct htab *htab_new(size_t val_size, size_t min_slots, size_t max_slots)
{
	size_t al = _Alignof(max_align_t);
	struct htab *m;

	if (val_size == 0 || !pow2(min_slots) || !pow2(max_slots) ||
	    min_slots < 2 || min_slots > max_slots)
		BUG("htab_new: a value size of 0, or slots that are not "
		    "powers of two with 2 <= min <= max");
	m = mem_calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->val_size = val_size;
	m->vstride = (val_size + al - 1) / al * al;
	m->min_slots = min_slots;
	m->max_slots = max_slots;
	return m;
}

void htab_clear(struct htab *m)
{
	size_t i;

	if (!m || !m->v)
		return;
	for (i = 0; i < m->cap; i++) {
		mem_free(m->v[i].e);
		m->v[i].e = NULL;
	}
	m->n = 0;
}

void htab_free(struct htab *m)
{
	if (!m)
		return;
	htab_clear(m);
	mem_free(m->v);
	mem_free(m);
}

size_t htab_count(const struct htab *m)
{
	return m->n;
}

size_t htab_slots(const struct htab *m)
{
	return m->cap;
}

void *htab_next(const struct htab *m, size_t *i)
{
	while (*i < m->cap) {
		unsigned char *e = m->v[(*i)++].e;

		if (e)
			return e;
	}
	return NULL;
}

uint64_t htab_hash(const void *key, size_t len)
{
	const unsigned char *p = key;
	uint64_t h = 14695981039346656037ULL, w;	/* FNV-1a offset basis */
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 1099511628211ULL;	/* FNV-1a prime */
		h ^= h >> 32;
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 1099511628211ULL;
	return h;
}

/* The slot holding key (len B, hash h), or the free slot where it would
 * go. m->v is allocated and has a free slot. */
static struct slot *find(const struct htab *m, const void *key, size_t len,
			 uint64_t h)
{
	size_t i = (size_t)h & (m->cap - 1);

	while (m->v[i].e && !(m->v[i].hash == h && m->v[i].len == len &&
	       (len == 0 || memcmp(m->v[i].e + m->vstride, key, len) == 0)))
		i = (i + 1) & (m->cap - 1);
	return &m->v[i];
}

void *htab_get(const struct htab *m, const void *key, size_t len)
{
	struct slot *s;

	if (!m->v)
		return NULL;
	s = find(m, key, len, htab_hash(key, len));
	return s->e;
}

/* Room for one more entry: the first slots, twice the slots, or (at
 * max_slots) an empty table. 0, or -1 when out of memory (m unchanged). */
static int room(struct htab *m)
{
	struct slot *old = m->v, *nv;
	size_t oldcap = m->cap, cap, i;

	if (m->v && 2 * (m->n + 1) <= m->cap)
		return 0;
	if (m->v && m->cap >= m->max_slots) {
		htab_clear(m);
		return 0;
	}
	cap = m->v ? 2 * m->cap : m->min_slots;
	nv = mem_calloc(cap, sizeof(*nv));
	if (!nv)
		return -1;
	m->v = nv;
	m->cap = cap;
	for (i = 0; i < oldcap; i++)
		if (old[i].e)
			*find(m, old[i].e + m->vstride, old[i].len,
			      old[i].hash) = old[i];
	mem_free(old);
	return 0;
}

void *htab_put(struct htab *m, const void *key, size_t len, const void *val)
{
	uint64_t h = htab_hash(key, len);
	unsigned char *e;
	struct slot *s;

	if (m->v) {
		s = find(m, key, len, h);
		if (s->e) {
			memcpy(s->e, val, m->val_size);
			return s->e;
		}
	}
	e = mem_alloc(m->vstride + (len > 0 ? len : 1));
	if (!e)
		return NULL;
	if (room(m) != 0) {
		mem_free(e);
		return NULL;
	}
	memcpy(e, val, m->val_size);
	if (len > 0)
		memcpy(e + m->vstride, key, len);
	s = find(m, key, len, h);
	s->e = e;
	s->len = len;
	s->hash = h;
	m->n++;
	return e;
}
