/*
 * mem.c - allocation with failure injection, and huge pages for the
 * memory of large programs (thp_setup, thp_block, thp_heap).
 */
#include "mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

/*
 * Transparent huge pages, on Linux with glibc's malloc. A step program of
 * millions of tasks (the DeepSeek-V3 2,048-GPU bench job: 3.4 M tasks,
 * ~175 MiB) touches its arrays once, as they are built and as the run
 * starts, so the cost of their first touch shows: a 4 KiB page fault
 * each, ~50k of them, and on the shared machine's hypervisor a fault
 * costs tens of microseconds (256 MiB touched 4 KiB at a time: 1.8 s;
 * with 2 MiB pages: 0.05 s). So:
 *
 *   - a block of THP_BLOCK bytes or more is its own mmap'd region (the
 *     mmap threshold, fixed there), advised MADV_HUGEPAGE as a whole;
 *   - smaller blocks come from the heap, which grows THP_PAD bytes at a
 *     time and is advised MADV_HUGEPAGE whenever it has grown;
 *   - the heap is trimmed only when 2 THP_PAD bytes are free at its top;
 *   - growing a block to THP_BLOCK bytes or more allocates, advises, then
 *     copies (realloc would copy first, into pages not yet advised).
 *
 * The advice changes what backs a mapping, never its contents: where
 * the kernel refuses it (transparent_hugepage "never"), nothing changes.
 * It is the default in THP's "madvise" mode, as glibc's own
 * glibc.malloc.hugetlb=1 tunable does for every mapping of malloc's;
 * that tunable with the same top pad, trim and mmap thresholds gave the
 * same fault count (2.7k) on the bench job.
 */
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE)
#define THP 1
#else
#define THP 0
#endif
#define THP_BLOCK ((size_t)4 << 20)
#define THP_PAD ((size_t)64 << 20)
#define THP_ALIGN ((size_t)2 << 20)	/* x86-64's huge page */

#if THP
static uintptr_t page_size;	/* 0 until thp_setup has run */
static uintptr_t heap_lo, heap_hi;	/* the heap's pages advised */

static void thp_setup(void)
{
	long pg = sysconf(_SC_PAGESIZE);

	page_size = pg > 0 ? (uintptr_t)pg : 4096;
	(void)mallopt(M_MMAP_THRESHOLD, (int)THP_BLOCK);
	(void)mallopt(M_TOP_PAD, (int)THP_PAD);
	(void)mallopt(M_TRIM_THRESHOLD, (int)(2 * THP_PAD));
	heap_lo = heap_hi = (uintptr_t)sbrk(0) & ~(page_size - 1);
}

/* Advise the heap, from where it was at setup to its end, when it has
 * grown (a few times in a large run: it grows THP_PAD at a time). */
static void thp_heap(void)
{
	uintptr_t top = (uintptr_t)sbrk(0) & ~(page_size - 1);

	if (top > heap_hi)
		(void)madvise((void *)heap_lo, top - heap_lo, MADV_HUGEPAGE);
	heap_hi = top;
}

/* Block p of n bytes: an mmap'd block as a whole (its mapping holds the
 * block's header, before p, and ends where the block's usable bytes
 * end); else the heap, if it has grown. */
static void *thp_block(void *p, size_t n)
{
	uintptr_t a, b;

	if (!p)
		return p;
	if (n < THP_BLOCK) {
		thp_heap();
		return p;
	}
	a = (uintptr_t)p & ~(page_size - 1);
	b = ((uintptr_t)p + malloc_usable_size(p) + page_size - 1) &
	    ~(page_size - 1);
	(void)madvise((void *)a, b - a, MADV_HUGEPAGE);
	return p;
}

/* A large block (n >= THP_BLOCK), starting on a huge page boundary so
 * that every 2 MiB of it can be one huge page (the kernel backs only the
 * aligned 2 MiB ranges of a region with huge pages; an unaligned block
 * has ~1 MiB at either end faulted 4 KiB at a time, ~500 faults). */
static void *thp_alloc(size_t n)
{
	void *p;

	if (posix_memalign(&p, THP_ALIGN, n) != 0)
		return NULL;
	return thp_block(p, n);
}
#else
static void *thp_block(void *p, size_t n)
{
	(void)n;
	return p;
}
#endif

static long fail_countdown = -1;	/* < 0: never fail */
static long alloc_calls;

/* Count a call; 1 if it should fail. */
static int should_fail(void)
{
#if THP
	if (!page_size)
		thp_setup();
#endif
	alloc_calls++;
	if (fail_countdown < 0)
		return 0;
	if (fail_countdown == 0)
		return 1;
	fail_countdown--;
	return 0;
}

long mem_fail_after(long n)
{
	long calls = alloc_calls;

	fail_countdown = n;
	alloc_calls = 0;
	return calls;
}

void *mem_alloc(size_t n)
{
	if (should_fail())
		return NULL;
#if THP
	if (n >= THP_BLOCK)
		return thp_alloc(n);
#endif
	return thp_block(malloc(n ? n : 1), n);
}

void *mem_calloc(size_t n, size_t size)
{
#if THP
	void *p;
#endif

	if (should_fail())
		return NULL;
	if (!n)
		n = 1;
	if (!size)
		size = 1;
#if THP
	/* Aligned, then cleared (posix_memalign does not clear; the pages
	 * are faulted in as they are cleared, as they would be when used). */
	if (n <= SIZE_MAX / size && n * size >= THP_BLOCK) {
		p = thp_alloc(n * size);
		if (p)
			memset(p, 0, n * size);
		return p;
	}
#endif
	return thp_block(calloc(n, size), n <= SIZE_MAX / size ? n * size : 0);
}

void *mem_realloc(void *p, size_t n)
{
#if THP
	size_t old;
	void *q;
#endif

	if (should_fail())
		return NULL;
#if THP
	/* A large block from nothing is a large allocation (on a huge page
	 * boundary, as mem_alloc's: a program's reserved task and edge
	 * arrays start so). */
	if (!p && n >= THP_BLOCK)
		return thp_alloc(n);
	/* Growing to a large block: the new block is advised before the
	 * old one is copied into it (realloc would copy into fresh pages
	 * first, 4 KiB at a time, and advise them too late). */
	if (p && n >= THP_BLOCK && (old = malloc_usable_size(p)) < n) {
		q = thp_alloc(n);
		if (!q)
			return NULL;
		memcpy(q, p, old);
		free(p);
		return q;
	}
#endif
	return thp_block(realloc(p, n ? n : 1), n);
}

void mem_free(void *p)
{
	free(p);
}

/*
 * In a child just forked: the parent's heap is shared copy-on-write, and
 * its free space is where the child's allocations would go. A plan's
 * full-tier workers are forked after the analytical tier, which leaves
 * ~130 MiB of the heap free and 0.4 MiB in use (DeepSeek-V3 2048): each
 * 4 KiB page a worker then wrote there was a copy-on-write fault (the
 * parent's 2 MiB page split first), each copy a 4 KiB page where the
 * heap had 2 MiB ones. So that free space is allocated and never touched
 * (malloc writes the chunks' headers only: a fault each), and what the
 * child allocates comes from past the heap's end, fresh memory advised
 * for huge pages as the heap grows. Nothing is given back (the child
 * exits); nothing an allocation holds changes.
 *
 * The free space is in pieces (chunks left by the tier's frees), so the
 * sizes go down by halves from the free total to CLAIM_MIN, and each
 * size is taken again for as long as it lands below the heap's end (the
 * next piece of that size); one that lands past the end (or is mmap'd)
 * is freed untouched and the size halves. Halving from the free total
 * after each piece, 64 tries in all, left 83 of the 135 MB free on that
 * job: a worker's allocations landed there, ~18 k faults a worker where
 * one process ran the whole tier with ~500. Pieces under CLAIM_MIN cost
 * a fault each to claim, as much as they would save: left.
 */
#define CLAIM_MIN ((size_t)4 << 10)
#define CLAIM_TRIES 100000	/* a bound on the pieces: a heap's free
				 * list is far shorter */

void mem_after_fork(void)
{
#if THP
	uintptr_t end = (uintptr_t)sbrk(0);
	size_t sz = (size_t)1 << 62;
	size_t free_B = mallinfo2().fordblks;
	long tries;

	while (sz > free_B)
		sz /= 2;
	for (tries = 0; tries < CLAIM_TRIES && sz >= CLAIM_MIN; tries++) {
		/* less a chunk header's room, so a piece of exactly sz
		 * bytes fits */
		void *p = malloc(sz - 4 * sizeof(size_t));

		if (p && (uintptr_t)p < end)	/* the parent's: kept */
			continue;
		free(p);	/* past the end (or mmap'd): untouched */
		sz /= 2;
	}
#endif
}

char *mem_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mem_alloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}
