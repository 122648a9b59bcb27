/*
 * memo.c - the memo table (memo.h). Hash: the key's bytes mixed eight at
 * a time, 64-bit; a slot holds a used word, the key and the value, each starting
 * on an 8-byte boundary so a value may hold doubles and pointers.
 */
#include "memo.h"

#include <string.h>

#include "base/mem.h"

enum { MEMO_FIRST_CAP = 64 };

/* Eight bytes at a time: the keys are 40-160 B (struct est_bkey: 152),
 * and FNV-1a's multiply per byte made hashing one a chain of ~150
 * dependent multiplies, the bulk of a lookup. Each word is mixed in
 * with a multiply (FNV's prime on a 64-bit word), the tail's bytes as
 * one more word, and the sum finished with MurmurHash3's fmix64
 * (Appleby, public domain) so the low bits a slot index takes depend on
 * every byte. Where entries sit changes, not what a lookup finds (only
 * est_free walks the slots, to free them). */
static uint64_t hash(const void *key, size_t n)
{
	const unsigned char *p = key;
	uint64_t h = 1469598103934665603ull, w;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		h = (h ^ w) * 1099511628211ull;
		h ^= h >> 32;
	}
	if (i < n) {
		w = 0;
		memcpy(&w, p + i, n - i);
		h = (h ^ w) * 1099511628211ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Offsets in a slot: used word at 0, key at KEY, value at val_at(m). */
enum { KEY = 8 };

static size_t val_at(const struct memo *m)
{
	return KEY + round8(m->key_B);
}

static size_t slot_B(const struct memo *m)
{
	return val_at(m) + round8(m->val_B);
}

static unsigned char *slot(const struct memo *m, size_t i)
{
	return m->slots + i * slot_B(m);
}

void memo_init(struct memo *m, size_t key_B, size_t val_B)
{
	memset(m, 0, sizeof(*m));
	m->key_B = key_B;
	m->val_B = val_B;
}

void memo_release(struct memo *m)
{
	mem_free(m->slots);
	m->slots = NULL;
	m->cap = m->n = 0;
}

/* The slot of key, or the empty slot where it would go. */
static unsigned char *find(const struct memo *m, const void *key)
{
	size_t i = (size_t)hash(key, m->key_B) & (m->cap - 1);

	for (;;) {
		unsigned char *s = slot(m, i);

		if (!s[0] || memcmp(s + KEY, key, m->key_B) == 0)
			return s;
		i = (i + 1) & (m->cap - 1);
	}
}

void *memo_get(struct memo *m, const void *key)
{
	unsigned char *s;

	if (m->cap == 0) {
		m->misses++;
		return NULL;
	}
	s = find(m, key);
	if (!s[0]) {
		m->misses++;
		return NULL;
	}
	m->hits++;
	return s + val_at(m);
}

static int grow(struct memo *m)
{
	size_t old_cap = m->cap, i;
	unsigned char *old = m->slots;
	size_t cap = old_cap ? 2 * old_cap : MEMO_FIRST_CAP;

	m->slots = mem_calloc(cap, slot_B(m));
	if (!m->slots) {
		m->slots = old;
		return -1;
	}
	m->cap = cap;
	for (i = 0; i < old_cap; i++) {
		unsigned char *s = old + i * slot_B(m);

		if (s[0])
			memcpy(find(m, s + KEY), s, slot_B(m));
	}
	mem_free(old);
	return 0;
}

void *memo_put(struct memo *m, const void *key, const void *val)
{
	unsigned char *s;

	if (2 * (m->n + 1) > m->cap && grow(m) != 0)
		return NULL;
	s = find(m, key);
	if (!s[0]) {
		s[0] = 1;
		memcpy(s + KEY, key, m->key_B);
		m->n++;
	}
	memcpy(s + val_at(m), val, m->val_B);
	return s + val_at(m);
}

void *memo_next(const struct memo *m, size_t *i)
{
	while (*i < m->cap) {
		unsigned char *s = slot(m, (*i)++);

		if (s[0])
			return s + val_at(m);
	}
	return NULL;
}
