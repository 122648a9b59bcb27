/*
 * mem.h - heap allocation with failure injection.
 *
 * Every allocation in llmsim goes through mem_alloc()/mem_realloc() so
 * tests can make the n-th allocation fail (mem_fail_after) and check that
 * each failure becomes a clean diagnostic with nothing leaked, the way
 * SQLite's malloc tests and curl's torture tests do.
 *
 * The failure countdown is one piece of process-wide state in llmsim;
 * it exists only for tests. The other is the heap's advised extent
 * (mem.c: transparent huge pages for large programs, Linux and glibc
 * only): where malloc's heap started and how far it has been advised,
 * and malloc's thresholds, set once on the first call. Neither changes
 * what an allocation holds.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_BASE_MEM_H
#define LLMSIM_BASE_MEM_H

#include <stddef.h>

/* malloc/realloc/calloc that honour the failure countdown. NULL on failure
 * (callers report "out of memory" and unwind). */
void *mem_alloc(size_t n);
void *mem_calloc(size_t n, size_t size);
void *mem_realloc(void *p, size_t n);
void mem_free(void *p);
char *mem_strdup(const char *s);

/* In a child process just forked: keep its allocations out of the free
 * space of the heap it shares with its parent (copy-on-write faults);
 * mem.c says why. Changes nothing an allocation holds. */
void mem_after_fork(void);

/* Make the allocation after the next n succeed-or-fail calls fail, and
 * every later one too; n < 0 turns injection off. Returns how many
 * allocations happened since the last call (for sweeping n). */
long mem_fail_after(long n);

#endif
