/*
 * memo.c - the planner's memo tables (memo.h) over base/htab: the key's
 * size is fixed at memo_init, the table made at the first put, and its
 * cap is the largest power of two a size_t holds, so it grows until an
 * allocation fails and never starts over (its values may own memory).
 */
#include "memo.h"

#include <stdint.h>
#include <string.h>

#include "base/htab.h"

/* Slots at the first put (it doubles past 32 entries: at most half
 * full), and the cap no table reaches. */
#define MEMO_MIN_SLOTS ((size_t)64)
#define MEMO_MAX_SLOTS ((SIZE_MAX >> 1) + 1)

void memo_init(struct memo *m, size_t key_B, size_t val_B)
{
	memset(m, 0, sizeof(*m));
	m->key_B = key_B;
	m->val_B = val_B;
}

void memo_release(struct memo *m)
{
	htab_free(m->t);
	m->t = NULL;
}

void *memo_get(const struct memo *m, const void *key)
{
	return m->t ? htab_get(m->t, key, m->key_B) : NULL;
}

void *memo_put(struct memo *m, const void *key, const void *val)
{
	if (!m->t && !(m->t = htab_new(m->val_B, MEMO_MIN_SLOTS,
				       MEMO_MAX_SLOTS)))
		return NULL;
	return htab_put(m->t, key, m->key_B, val);
}

void *memo_next(const struct memo *m, size_t *i)
{
	return m->t ? htab_next(m->t, i) : NULL;
}
