/*
 * memo.h - the planner's memo tables: base/htab's byte-keyed table with
 * keys of one fixed size (plain bytes, compared whole). The planner
 * remembers in them what many layouts share: a costed layer block per
 * (tp, microbatch, recompute, ...), a collective's time per (op, group,
 * bytes), the live vectors of a schedule.
 *
 * Keys must be written with every byte set (memset the struct first), so
 * padding compares equal. Values are copied in and returned by pointer;
 * a pointer stays valid until the next memo_put. A memo never forgets
 * (the table never starts over): values may own allocations that their
 * owner frees by walking them (memo_next) before memo_release.
 *
 * Depends on base/htab.h.
 */
#ifndef LLMSIM_PLAN_MEMO_H
#define LLMSIM_PLAN_MEMO_H

#include <stddef.h>

struct htab;

struct memo {
	size_t key_B, val_B;	/* B, per entry */
	struct htab *t;		/* NULL before the first put */
};

void memo_init(struct memo *m, size_t key_B, size_t val_B);
void memo_release(struct memo *m);

/* The value stored for key, or NULL. */
void *memo_get(const struct memo *m, const void *key);

/* Store val for key (replacing one already there). Returns a pointer to
 * the stored value, or NULL when out of memory (nothing stored). */
void *memo_put(struct memo *m, const void *key, const void *val);

/* Visit the stored values: *i starts at 0; returns the next value (and
 * advances *i past it), or NULL when there is none left. */
void *memo_next(const struct memo *m, size_t *i);

#endif
