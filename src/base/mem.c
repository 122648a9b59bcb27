/*
 * mem.c - allocation with failure injection.
 */
#include "mem.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void *mem_alloc(size_t n)
{
	return should_fail() ? NULL : malloc(n ? n : 1);
}

void *mem_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *mem_realloc(void *p, size_t n)
{
	return should_fail() ? NULL : realloc(p, n ? n : 1);
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
