/*
 * memo.h - a memo table: fixed-size keys (plain bytes, compared whole)
 * to fixed-size values, open addressing with linear probing, growing at
 * half full. The planner remembers in it what many layouts share: a
 * costed layer block per (tp, microbatch, recompute, ...), a collective's
 * time per (op, group, bytes), the live vectors of a schedule.
 *
 * Keys must be written with every byte set (memset the struct first), so
 * padding compares equal. Values are copied in and returned by pointer;
 * a pointer stays valid until the next memo_put (which may move them).
 *
 * Depends on base/mem.h.
 */
#ifndef LLMSIM_PLAN_MEMO_H
#define LLMSIM_PLAN_MEMO_H

#include <stddef.h>
#include <stdint.h>

struct memo {
	size_t key_B, val_B;	/* B, per entry */
	size_t cap, n;		/* slots (a power of 2), entries */
	unsigned char *slots;	/* cap slots: used word, key, value (8-aligned) */
	uint64_t hits, misses;	/* lookups, for reports */
};

void memo_init(struct memo *m, size_t key_B, size_t val_B);
void memo_release(struct memo *m);

/* The value stored for key, or NULL (counted as a hit or a miss). */
void *memo_get(struct memo *m, const void *key);

/* Store val for key (replacing one already there). Returns a pointer to
 * the stored value, or NULL when out of memory. */
void *memo_put(struct memo *m, const void *key, const void *val);

/* Visit the stored values: *i starts at 0; returns the next value (and
 * advances *i past it), or NULL when there is none left. */
void *memo_next(const struct memo *m, size_t *i);

#endif
