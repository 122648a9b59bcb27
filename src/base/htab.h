/*
 * htab.h - a byte-keyed memo table: values of one fixed size kept under
 * keys of any length. Keys are kept whole and compared byte for byte
 * (the hash only picks the slot), so a hit returns exactly the bytes a
 * put stored: a memo can forget, never answer wrong.
 *
 * Open addressing with linear probing over a power-of-two slot array
 * kept at most half full. A put that would pass half grows the array to
 * twice the slots (rehashing from the stored hashes), from min_slots at
 * the first put; once at max_slots it empties the table instead (starts
 * over). Each entry is one allocation holding its value, then its key.
 * Everything is allocated through mem.h and owned by the table; out of
 * memory, a put keeps nothing and the table stays as it was.
 *
 * A key that is a struct must be zeroed before its fields are set, so
 * that its padding compares equal.
 *
 * Depends on mem.h, diag.h (BUG) and libc only.
 */
#ifndef LLMSIM_BASE_HTAB_H
#define LLMSIM_BASE_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab;

/* An empty table of values of val_size bytes (> 0); min_slots and
 * max_slots powers of two, 2 <= min_slots <= max_slots (else BUG). No
 * slots are allocated before the first put. NULL when out of memory. */
struct htab *htab_new(size_t val_size, size_t min_slots, size_t max_slots);

/* Free m, its entries and slots. NULL is fine. */
void htab_free(struct htab *m);

/* Forget every entry (the slot array is kept). */
void htab_clear(struct htab *m);

/* The value stored under key[0..len), or NULL. The pointer stays valid
 * until the next htab_put, htab_clear or htab_free on m. */
void *htab_get(const struct htab *m, const void *key, size_t len);

/* Store val (val_size bytes) under key[0..len), replacing the value of
 * an equal key. The stored value, or NULL when out of memory (nothing
 * kept, m unchanged). */
void *htab_put(struct htab *m, const void *key, size_t len, const void *val);

/* Visit the stored values: *i starts at 0; returns the next value (and
 * advances *i past it), or NULL when there is none left. Slot order:
 * no put, clear or free on m between the calls. */
void *htab_next(const struct htab *m, size_t *i);

/* Entries stored; slots allocated (0 before the first put). */
size_t htab_count(const struct htab *m);
size_t htab_slots(const struct htab *m);

/* The hash that picks a key's slot (its low bits, masked to the slots):
 * FNV-1a over the key's 64-bit words, each step folded by h ^= h >> 32,
 * then over its remaining bytes. */
uint64_t htab_hash(const void *key, size_t len);

#endif
