/*
 * sim.c - binary heap of events keyed by (time, sequence), records pooled.
 *
 * The heap holds small keys {time, seq, slot}; the callback and argument
 * live in a pool slot, so sifting moves 24 bytes and never touches the
 * callbacks. A handle is (generation << 32 | slot): a slot is reused with
 * its generation bumped, so a stale handle never cancels a newer event.
 * Ties in time are broken by the sequence number, which only grows:
 * first scheduled, first run.
 */
#include "sim.h"

#include "diag.h"
#include "mem.h"

#include <stdlib.h>

struct heap_key {
	units_ns_t time;	/* ns */
	uint64_t seq;		/* insertion order */
	uint32_t slot;		/* index into the pool */
};

struct slot {
	sim_fn fn;
	void *arg;
	uint32_t gen;		/* bumped each time the slot is freed */
	uint32_t next_free;	/* free-list link, valid when free */
	int live;		/* scheduled and not cancelled */
};

struct sim {
	units_ns_t now;		/* ns */
	uint64_t seq;
	uint64_t executed;
	uint64_t live;
	struct heap_key *heap;
	uint32_t nheap, capheap;
	struct slot *pool;
	uint32_t npool, cappool;
	uint32_t free_head;	/* UINT32_MAX when empty */
	int stopped;
	int failed;
};

#define NO_SLOT UINT32_MAX

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
	mem_free(s->heap);
	mem_free(s->pool);
	mem_free(s);
}

static int key_less(const struct heap_key *a, const struct heap_key *b)
{
	return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static void sift_up(struct heap_key *h, uint32_t i)
{
	struct heap_key k = h[i];

	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!key_less(&k, &h[parent]))
			break;
		h[i] = h[parent];
		i = parent;
	}
	h[i] = k;
}

static void sift_down(struct heap_key *h, uint32_t n, uint32_t i)
{
	struct heap_key k = h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && key_less(&h[c + 1], &h[c]))
			c++;
		if (!key_less(&h[c], &k))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = k;
}

static int grow(void **p, uint32_t *cap, size_t elem)
{
	uint32_t ncap = *cap ? *cap * 2 : 256;
	void *np;

	if (*cap >= UINT32_MAX / 2)
		return -1;
	np = mem_realloc(*p, (size_t)ncap * elem);
	if (!np)
		return -1;
	*p = np;
	*cap = ncap;
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
	if (s->npool == s->cappool &&
	    grow((void **)&s->pool, &s->cappool, sizeof(*s->pool)) != 0)
		return NO_SLOT;
	i = s->npool++;
	s->pool[i].gen = 1;
	return i;
}

static void slot_put(struct sim *s, uint32_t i)
{
	s->pool[i].gen++;
	if (s->pool[i].gen == 0)
		s->pool[i].gen = 1;
	s->pool[i].live = 0;
	s->pool[i].next_free = s->free_head;
	s->free_head = i;
}

sim_id sim_at(struct sim *s, units_ns_t t, sim_fn fn, void *arg)
{
	uint32_t i;

	if (t < s->now)
		BUG("event scheduled in the past");
	if (s->failed)
		return 0;
	if (s->nheap == s->capheap &&
	    grow((void **)&s->heap, &s->capheap, sizeof(*s->heap)) != 0)
		goto oom;
	i = slot_take(s);
	if (i == NO_SLOT)
		goto oom;
	s->pool[i].fn = fn;
	s->pool[i].arg = arg;
	s->pool[i].live = 1;
	s->heap[s->nheap].time = t;
	s->heap[s->nheap].seq = s->seq++;
	s->heap[s->nheap].slot = i;
	sift_up(s->heap, s->nheap);
	s->nheap++;
	s->live++;
	return (uint64_t)s->pool[i].gen << 32 | i;
oom:
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
	if (s->pool[i].gen != gen || !s->pool[i].live)
		return;
	s->pool[i].live = 0;
	s->live--;
}

units_ns_t sim_now(const struct sim *s)
{
	return s->now;
}

int sim_step(struct sim *s)
{
	while (s->nheap > 0) {
		struct heap_key top = s->heap[0];
		struct slot *sl = &s->pool[top.slot];
		sim_fn fn = sl->fn;
		void *arg = sl->arg;
		int live = sl->live;

		s->nheap--;
		if (s->nheap > 0) {
			s->heap[0] = s->heap[s->nheap];
			sift_down(s->heap, s->nheap, 0);
		}
		slot_put(s, top.slot);
		if (!live)
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
