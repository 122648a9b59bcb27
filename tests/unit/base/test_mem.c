/*
 * test_mem.c - allocation: failure injection, and the large blocks
 * (4 MiB or more) that mem.c places on 2 MiB huge page boundaries under
 * Linux and glibc (their contents are what malloc, calloc and realloc
 * promise either way).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/mem.h"

#define MiB ((size_t)1 << 20)

#if defined(__linux__) && defined(__GLIBC__)
#define ON_HUGE_PAGE(p) (((uintptr_t)(p) & (2 * MiB - 1)) == 0)
#else
#define ON_HUGE_PAGE(p) 1
#endif

/* Every byte of p[0..n) is x. */
static int all(const unsigned char *p, size_t n, unsigned char x)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != x)
			return 0;
	return 1;
}

Test(mem, large_blocks_start_on_a_huge_page)
{
	unsigned char *a = mem_alloc(4 * MiB);
	unsigned char *b = mem_alloc(6 * MiB + 3);

	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert(ON_HUGE_PAGE(a), "%p", (void *)a);
	cr_assert(ON_HUGE_PAGE(b), "%p", (void *)b);
	memset(a, 0xab, 4 * MiB);
	memset(b, 0xcd, 6 * MiB + 3);
	cr_assert(all(a, 4 * MiB, 0xab));
	mem_free(a);
	mem_free(b);
}

/* realloc from NULL is an allocation: a large one on a huge page too (a
 * program's reserved arrays start as realloc(NULL, n)). */
Test(mem, large_realloc_from_null_starts_on_a_huge_page)
{
	unsigned char *a = mem_realloc(NULL, 5 * MiB + 1);

	cr_assert_not_null(a);
	cr_assert(ON_HUGE_PAGE(a), "%p", (void *)a);
	memset(a, 0x3c, 5 * MiB + 1);
	a = mem_realloc(a, 9 * MiB);
	cr_assert_not_null(a);
	cr_assert(all(a, 5 * MiB + 1, 0x3c));
	mem_free(a);
}

Test(mem, large_calloc_is_zero_even_on_reused_memory)
{
	unsigned char *a = mem_alloc(8 * MiB), *b;

	/* Dirty 8 MiB, free it, ask for 8 MiB zeroed: malloc may hand the
	 * same memory back, and it must come back cleared. */
	cr_assert_not_null(a);
	memset(a, 0x5a, 8 * MiB);
	mem_free(a);
	b = mem_calloc(MiB, 8);
	cr_assert_not_null(b);
	cr_assert(ON_HUGE_PAGE(b));
	cr_assert(all(b, 8 * MiB, 0));
	mem_free(b);
}

Test(mem, growing_past_4_MiB_keeps_the_contents)
{
	unsigned char *a = mem_alloc(MiB), *b, *c;
	size_t i;

	cr_assert_not_null(a);
	for (i = 0; i < MiB; i++)
		a[i] = (unsigned char)(i * 7);
	/* 1 -> 5 MiB: a new aligned block, the old 1 MiB copied. */
	b = mem_realloc(a, 5 * MiB);
	cr_assert_not_null(b);
	cr_assert(ON_HUGE_PAGE(b));
	for (i = 0; i < MiB; i++)
		cr_assert_eq(b[i], (unsigned char)(i * 7), "byte %zu", i);
	/* 5 -> 4 MiB: shrinking keeps the first 4 MiB. */
	memset(b + MiB, 0x11, 4 * MiB);
	c = mem_realloc(b, 4 * MiB);
	cr_assert_not_null(c);
	cr_assert_eq(c[MiB - 1], (unsigned char)((MiB - 1) * 7));
	cr_assert(all(c + MiB, 3 * MiB, 0x11));
	mem_free(c);
}

Test(mem, injected_failure_keeps_the_old_block)
{
	unsigned char *a = mem_alloc(MiB), *b;
	long calls;

	cr_assert_not_null(a);
	memset(a, 0x77, MiB);
	/* The next call fails: growing past 4 MiB returns NULL and leaves
	 * the block as it was (realloc's contract). */
	mem_fail_after(0);
	b = mem_realloc(a, 8 * MiB);
	calls = mem_fail_after(-1);
	cr_assert_null(b);
	cr_assert_eq(calls, 1, "one call counted, %ld", calls);
	cr_assert(all(a, MiB, 0x77));
	mem_free(a);
}

#if defined(__linux__) && defined(__GLIBC__)
#include <sys/wait.h>
#include <unistd.h>

/* A forked child's allocations stay out of the free space it shares with
 * its parent (mem_after_fork). The parent frees 64 blocks of 512 KiB
 * (32 MiB, under malloc's 4 MiB mmap threshold: heap chunks, and under
 * mem.c's 128 MiB trim threshold: kept) with a live block above them, so
 * the heap holds >= 32 MiB free below its end. Without mem_after_fork the
 * child's 256 KiB block comes from that free space (first fit below the
 * end); with it, from past the heap's end as it was at the fork. The
 * child reports through its exit status. */
Test(mem, a_forked_child_allocates_past_the_parents_heap)
{
	enum { N = 64 };
	void *blk[N], *top;
	int i, st;
	pid_t pid;

	for (i = 0; i < N; i++) {
		blk[i] = mem_alloc(512 * 1024);
		cr_assert_not_null(blk[i]);
	}
	top = mem_alloc(64);	/* keeps the freed space below the top */
	cr_assert_not_null(top);
	for (i = 0; i < N; i++)
		mem_free(blk[i]);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		uintptr_t end = (uintptr_t)sbrk(0);
		void *p;

		mem_after_fork();
		p = mem_alloc(256 * 1024);
		_exit(p && (uintptr_t)p >= end ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "the child's block came from the parent's free heap");
	mem_free(top);
}
#endif

#if defined(__linux__) && defined(__GLIBC__)
/* The same where the free space is in pieces: 256 blocks of 64 KiB freed
 * between live ones (256 pieces of 64 KiB + a 16 B header, 16 MiB in
 * all, none adjacent to another). mem_after_fork must claim every piece:
 * halving from the free total after each piece found, 64 tries in all,
 * claimed ~8 (each piece cost ~8 tries: 16 MiB down to 64 KiB), and the
 * child's 64 blocks of 48 KiB (each fits a piece, first fit) landed in
 * the other 248. Every one of them must come from past the heap's end as
 * it was at the fork. */
Test(mem, a_forked_child_claims_every_free_piece)
{
	enum { N = 256, M = 64 };
	void *blk[2 * N];
	int i, st;
	pid_t pid;

	for (i = 0; i < 2 * N; i++) {
		blk[i] = mem_alloc(64 * 1024);
		cr_assert_not_null(blk[i]);
	}
	for (i = 0; i < 2 * N; i += 2)	/* every other one: apart */
		mem_free(blk[i]);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		uintptr_t end = (uintptr_t)sbrk(0);
		int below = 0;

		mem_after_fork();
		for (i = 0; i < M; i++) {
			void *p = mem_alloc(48 * 1024);

			below += !p || (uintptr_t)p < end;
		}
		_exit(below == 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "a child's block came from a piece of the parent's free heap");
	for (i = 1; i < 2 * N; i += 2)
		mem_free(blk[i]);
}
#endif
