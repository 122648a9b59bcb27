/*
 * sim.c - a 4-ary heap of events keyed by (time, sequence), records pooled.
 *
 * The heap holds 16-byte keys {time, order}, order = sequence << 24 |
 * slot: comparing (time, order) is comparing (time, sequence), since
 * sequences are unique, and the key still says where the callback lives.
 * Four children of a node fill one 64-byte cache line (the array is placed
 * so that they do), so a sift down touches one line per level, and there
 * are half as many levels as in a binary heap.
 *
 * The callback and argument live in a pool slot (24 bytes). A handle is
 * (generation << 32 | slot); a slot is reused with its generation bumped,
 * so a stale handle never cancels a newer event. Cancelling clears the
 * slot's callback; the key stays in the heap until it reaches the top
 * (lazy cancellation). Ties in time are broken by the sequence number,
 * which only grows: first scheduled, first run.
 *
 * Limits, reported like an allocation failure (sim_failed): 2^24 - 1
 * events in the heap at once (about 16.7 M, live or cancelled), 2^40
 * events scheduled in one simulation (days of simulation at 10 M
 * events/s).
 */
#include "sim.h"

#include "base/diag.h"
#include "base/mem.h"

#include <stdlib.h>
#include <string.h>

#define SLOT_BITS 24
#define SLOT_MASK ((1u << SLOT_BITS) - 1)
#define NO_SLOT SLOT_MASK		/* never a valid slot */
#define SEQ_LIMIT ((uint64_t)1 << (64 - SLOT_BITS))
#define LINE 64				/* B, cache line */
#define PREFETCH_MIN 16384		/* events: smaller heaps stay cached */

struct key {
	units_ns_t time;	/* ns */
	uint64_t order;		/* sequence << SLOT_BITS | slot */
};

struct slot {
	sim_fn fn;		/* NULL when cancelled or free */
	void *arg;
	uint32_t gen;		/* bumped each time the slot is freed */
	uint32_t next_free;	/* free-list link, valid when free */
};

struct sim {
	units_ns_t now;		/* ns */
	uint64_t seq;		/* next sequence number */
	uint64_t executed;	/* events run */
	uint64_t live;		/* scheduled, not run, not cancelled */
	struct key *heap;	/* heap[1..4] share a cache line, etc. */
	void *heap_mem;		/* allocation holding heap */
	uint32_t nheap, capheap;
	struct slot *pool;
	uint32_t npool, cappool;
	uint32_t free_head;	/* NO_SLOT when empty */
	int stopped;
	int failed;
};

struct sim *sim_new(void)
{
	struct sim *s = mem_calloc(1, sizeof(*s));

	if (s)
		s->free_head = NO_SLOT;
	return s;
}

void sim_free(struct sim *s)
{
	if (!s)
		return;
	mem_free(s->heap_mem);
	mem_free(s->pool);
	mem_free(s);
}

/* (time, order) comparison without branches: random keys would
 * mispredict them half the time. */
static int key_less(const struct key *a, const struct key *b)
{
	return (a->time < b->time) |
	       ((a->time == b->time) & (a->order < b->order));
}

static void sift_up(struct key *h, uint32_t i)
{
	struct key k = h[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 4;

		if (!key_less(&k, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = k;
}

/* The smallest of the children c .. c + 3 that exist (c < n). */
static uint32_t min_child(const struct key *h, uint32_t n, uint32_t c)
{
	uint32_t best = c, end = c + 4 < n ? c + 4 : n, j;

	for (j = c + 1; j < end; j++)
		best = key_less(&h[j], &h[best]) ? j : best;
	return best;
}

static void sift_down(struct key *h, uint32_t n, uint32_t i)
{
	struct key k = h[i];

	for (;;) {
		uint32_t c = 4 * i + 1, j;

		if (c >= n)
			break;
		/* Ask for the next level's lines now: whichever child wins,
		 * its children are on the way. (A heap that fits in the
		 * caches has no use for it.) */
		for (j = 0; n > PREFETCH_MIN && j < 4 &&
			    4 * (c + j) + 1 < n; j++)
			__builtin_prefetch(&h[4 * (c + j) + 1]);
		c = min_child(h, n, c);
		if (!key_less(&h[c], &k))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = k;
}

/* Double the heap, keeping &heap[1] on a cache-line boundary; 0 or -1. */
static int grow_heap(struct sim *s)
{
	uint32_t ncap = s->capheap ? s->capheap * 2 : 256;
	unsigned char *mem;
	uintptr_t at;

	if (s->capheap > SLOT_MASK)
		return -1;
	mem = mem_alloc((size_t)ncap * sizeof(struct key) + LINE);
	if (!mem)
		return -1;
	at = ((uintptr_t)mem + sizeof(struct key) + LINE - 1) &
	     ~(uintptr_t)(LINE - 1);
	at -= sizeof(struct key);
	if (s->nheap)
		memcpy((void *)at, s->heap, s->nheap * sizeof(struct key));
	mem_free(s->heap_mem);
	s->heap_mem = mem;
	s->heap = (struct key *)at;
	s->capheap = ncap;
	return 0;
}

static int grow_pool(struct sim *s)
{
	uint32_t ncap = s->cappool ? s->cappool * 2 : 256;
	struct slot *np;

	if (s->cappool >= SLOT_MASK / 2 + 1)
		ncap = SLOT_MASK;	/* NO_SLOT stays unused */
	if (ncap <= s->cappool)
		return -1;
	np = mem_realloc(s->pool, (size_t)ncap * sizeof(*np));
	if (!np)
		return -1;
	s->pool = np;
	s->cappool = ncap;
	return 0;
}

static uint32_t slot_take(struct sim *s)
{
	uint32_t i;

	if (s->free_head != NO_SLOT) {
		i = s->free_head;
		s->free_head = s->pool[i].next_free;
		return i;
	}
	if (s->npool == s->cappool && grow_pool(s) != 0)
		return NO_SLOT;
	i = s->npool++;
	s->pool[i].gen = 1;
	return i;
}

static void slot_put(struct sim *s, uint32_t i)
{
	struct slot *sl = &s->pool[i];

	if (++sl->gen == 0)
		sl->gen = 1;
	sl->fn = NULL;
	sl->next_free = s->free_head;
	s->free_head = i;
}

sim_id sim_at(struct sim *s, units_ns_t t, sim_fn fn, void *arg)
{
	uint32_t i;

	if (t < s->now)
		BUG("event scheduled in the past");
	if (!fn)
		BUG("event without a callback");
	if (s->failed)
		return 0;
	if (s->seq >= SEQ_LIMIT)
		goto fail;
	if (s->nheap == s->capheap && grow_heap(s) != 0)
		goto fail;
	i = slot_take(s);
	if (i == NO_SLOT)
		goto fail;
	s->pool[i].fn = fn;
	s->pool[i].arg = arg;
	s->heap[s->nheap].time = t;
	s->heap[s->nheap].order = s->seq++ << SLOT_BITS | i;
	sift_up(s->heap, s->nheap);
	s->nheap++;
	s->live++;
	return (uint64_t)s->pool[i].gen << 32 | i;
fail:
	s->failed = 1;
	s->stopped = 1;
	return 0;
}

sim_id sim_after(struct sim *s, units_ns_t dt, sim_fn fn, void *arg)
{
	if (dt < 0)
		BUG("negative delay");
	return sim_at(s, s->now + dt, fn, arg);
}

void sim_cancel(struct sim *s, sim_id id)
{
	uint32_t i = (uint32_t)(id & 0xffffffffu);
	uint32_t gen = (uint32_t)(id >> 32);

	if (id == 0 || i >= s->npool)
		return;
	if (s->pool[i].gen != gen || !s->pool[i].fn)
		return;
	s->pool[i].fn = NULL;
	s->live--;
}

units_ns_t sim_now(const struct sim *s)
{
	return s->now;
}

int sim_step(struct sim *s)
{
	while (s->nheap > 0) {
		struct key top = s->heap[0];
		uint32_t i = (uint32_t)(top.order & SLOT_MASK);
		sim_fn fn = s->pool[i].fn;
		void *arg = s->pool[i].arg;

		s->nheap--;
		if (s->nheap > 0) {
			/* The next event is almost surely the smallest child
			 * of this one: start loading its record now, so it
			 * arrives during the sift and this callback. */
			if (s->nheap > PREFETCH_MIN) {
				uint32_t c = min_child(s->heap, s->nheap, 1);

				__builtin_prefetch(&s->pool[s->heap[c].order &
							    SLOT_MASK]);
			}
			s->heap[0] = s->heap[s->nheap];
			sift_down(s->heap, s->nheap, 0);
		}
		slot_put(s, i);
		if (!fn)
			continue;
		s->live--;
		s->now = top.time;
		s->executed++;
		fn(s, arg);
		return 1;
	}
	return 0;
}

int sim_run(struct sim *s)
{
	s->stopped = s->failed;
	while (!s->stopped && sim_step(s))
		;
	return s->failed ? -1 : 0;
}

void sim_stop(struct sim *s)
{
	s->stopped = 1;
}

uint64_t sim_events(const struct sim *s)
{
	return s->executed;
}

uint64_t sim_pending(const struct sim *s)
{
	return s->live;
}

int sim_failed(const struct sim *s)
{
	return s->failed;
}
