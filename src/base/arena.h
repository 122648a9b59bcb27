/*
 * arena.h - an arena owns many small allocations that die together: a
 * run's parsed config, topology and task graph live in one and are freed
 * with it. Arena memory is zeroed and 16-byte aligned. Nothing here frees
 * a single arena allocation. Blocks come from mem_alloc (mem.h), so
 * failure injection reaches them.
 *
 * Depends on mem.h and libc.
 */
#ifndef LLMSIM_BASE_ARENA_H
#define LLMSIM_BASE_ARENA_H

#include <stddef.h>

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
