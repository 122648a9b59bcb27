/*
 * arena.c - a bump arena on top of mem_alloc.
 *
 * The arena hands out memory from blocks of at least 64 KiB; a request
 * larger than that gets a block of its own. Blocks are chained and freed
 * together.
 */
#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"

#define ARENA_BLOCK_MIN ((size_t)64 * 1024)
#define ARENA_ALIGN ((size_t)16)

struct arena_block {
	struct arena_block *next;
	size_t size;		/* usable bytes in data[] */
	size_t used;		/* bytes handed out */
	_Alignas(16) unsigned char data[];
};

void arena_init(struct arena *a)
{
	a->head = NULL;
	a->total_B = 0;
}

void arena_release(struct arena *a)
{
	struct arena_block *b = a->head;

	while (b) {
		struct arena_block *next = b->next;
		mem_free(b);
		b = next;
	}
	arena_init(a);
}

void *arena_alloc(struct arena *a, size_t n)
{
	struct arena_block *b = a->head;
	size_t need = (n + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1);
	void *p;

	if (need < n)
		return NULL;	/* overflow */
	if (!b || b->size - b->used < need) {
		size_t size = need > ARENA_BLOCK_MIN ? need : ARENA_BLOCK_MIN;

		if (size > SIZE_MAX - sizeof(*b))
			return NULL;
		b = mem_alloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		/* A big one-off block goes behind the current one so the
		 * current block's free space is not wasted. */
		if (a->head && need > ARENA_BLOCK_MIN) {
			b->next = a->head->next;
			a->head->next = b;
		} else {
			b->next = a->head;
			a->head = b;
		}
	}
	p = b->data + b->used;
	b->used += need;
	a->total_B += need;
	memset(p, 0, need);
	return p;
}

int arena_grow(struct arena *a, void **p, size_t *cap, size_t need,
	       size_t elem)
{
	size_t ncap = *cap ? *cap : 8;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -1;
		ncap *= 2;
	}
	np = arena_alloc(a, ncap * elem);
	if (!np)
		return -1;
	if (*cap)
		memcpy(np, *p, *cap * elem);
	*p = np;
	*cap = ncap;
	return 0;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *d = arena_alloc(a, n + 1);

	if (d)
		memcpy(d, s, n);	/* arena memory is zeroed: terminated */
	return d;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return arena_strndup(a, s, strlen(s));
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *d;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	d = arena_alloc(a, (size_t)n + 1);
	if (!d)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(d, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return d;
}
