/*
 * mem.h - heap allocation with failure injection, and the arena.
 *
 * Every allocation in llmsim goes through mem_alloc()/mem_realloc() so
 * tests can make the n-th allocation fail (mem_fail_after) and check that
 * each failure becomes a clean diagnostic with nothing leaked, the way
 * SQLite's malloc tests and curl's torture tests do.
 *
 * An arena owns many small allocations that die together: a run's parsed
 * config, topology and task graph live in one and are freed with it.
 * Arena memory is zeroed and 16-byte aligned. Nothing here frees a single
 * arena allocation.
 *
 * The failure countdown is the one piece of process-wide state in llmsim;
 * it exists only for tests.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_MEM_H
#define LLMSIM_MEM_H

#include <stddef.h>

/* malloc/realloc/calloc that honour the failure countdown. NULL on failure
 * (callers report "out of memory" and unwind). */
void *mem_alloc(size_t n);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);

/* Make the allocation after the next n succeed-or-fail calls fail, and
 * every later one too; n < 0 turns injection off. Returns how many
 * allocations happened since the last call (for sweeping n). */
long mem_fail_after(long n);

struct arena_block;

struct arena {
	struct arena_block *head;	/* newest block */
	size_t total_B;			/* bytes handed out, for reports */
};

void arena_init(struct arena *a);
/* Free every block; the arena can be used again afterwards. */
void arena_release(struct arena *a);

/* n zeroed bytes, 16-aligned; NULL when out of memory. */
void *arena_alloc(struct arena *a, size_t n);
/* Grow array *p of *cap elements of size elem to hold at least need;
 * returns 0 or -1 (out of memory, *p unchanged). Old storage stays in the
 * arena until it is released. */
int arena_grow(struct arena *a, void **p, size_t *cap, size_t need,
	       size_t elem);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
