/*
 * mem.c - allocation with failure injection; a block of 4 MiB or more
 * asks the kernel for transparent huge pages (huge_block).
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

/* Blocks at least this large are backed by huge pages where the kernel
 * allows it (transparent_hugepage "madvise" or "always"). */
#define HUGE_BLOCK ((size_t)4 << 20)

static long fail_countdown = -1;	/* < 0: never fail */
static long alloc_calls;

/* Count a call; 1 if it should fail. */
static int should_fail(void)
{
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

/*
 * Advise huge pages for the whole of the pages that hold block p (n bytes
 * asked for): a block this large is its own mmap'd region in glibc's
 * malloc (or a piece of its heap once the dynamic mmap threshold has
 * risen), and its pages are otherwise faulted in 4 KiB at a time. The
 * program's task, state and successor arrays of a large step are such
 * blocks: on the DeepSeek-V3 2,048-GPU bench job ~50k minor faults, ~15 %
 * of its CPU time under the shared machine's hypervisor. Only the
 * mapping's attributes change, never the contents, so the advice is
 * harmless where it is refused (returns -1; ignored).
 */
static void *huge_block(void *p, size_t n)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	static long page;
	uintptr_t a, b;

	if (!p || n < HUGE_BLOCK)
		return p;
	if (!page)
		page = sysconf(_SC_PAGESIZE);
	if (page <= 0)
		return p;
	a = (uintptr_t)p & ~((uintptr_t)page - 1);
	b = ((uintptr_t)p + malloc_usable_size(p) + (uintptr_t)page - 1) &
	    ~((uintptr_t)page - 1);
	(void)madvise((void *)a, b - a, MADV_HUGEPAGE);
#else
	(void)n;
#endif
	return p;
}

void *mem_alloc(size_t n)
{
	return should_fail() ? NULL : huge_block(malloc(n ? n : 1), n);
}

void *mem_calloc(size_t n, size_t size)
{
	if (should_fail())
		return NULL;
	if (!n)
		n = 1;
	if (!size)
		size = 1;
	return huge_block(calloc(n, size),
			  n > SIZE_MAX / size ? 0 : n * size);
}

void *mem_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : huge_block(realloc(p, n ? n : 1), n);
}

void mem_free(void *p)
{
	free(p);
}

char *mem_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = mem_alloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}
