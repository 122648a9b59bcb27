/*
 * sim.c - the event queue: a timing wheel for the near future, a 4-ary
 * heap for the far future, and the bucket being run kept sorted.
 *
 * Order. Events run in order of the key (time, order), order = sequence
 * << 24 | slot: sequences are unique, so this is (time, sequence), a
 * total order, and any correct priority queue over it pops the same
 * sequence: the structure below changes speed, never results.
 *
 * Structure (a calendar queue [Brown 1988] with a heap for the tail, as
 * in ladder queues [Tang, Goh, Thng 2005]):
 *
 *   bottom  the keys of the bucket being run, sorted; consumed from the
 *           front. An event scheduled into its time range (at or just
 *           after now) is inserted in order (binary search, a short move).
 *   wheel   nb buckets of width 2^shift ns covering [wstart, wend), each
 *           an unsorted array; bucket of t = (t >> shift) mod nb. A
 *           bitmap of non-empty buckets finds the next one a word at a
 *           time. When the bottom runs dry, the next non-empty bucket is
 *           sorted into it (insertion sort when small) and the window
 *           moves on.
 *   far     a 4-ary heap of keys at or past wend; whenever the window
 *           moves, the keys it now covers move into the wheel.
 *
 * A pending event costs one key (16 bytes) in one of the three and one
 * pool slot (24 bytes: callback, argument, generation). Scheduling is
 * O(1) into the wheel; running an event reads the bottom in order and
 * prefetches the slots of the next few, so the misses of a 10^6-event
 * queue overlap instead of queueing (about one per event, the limit for
 * a queue that does not fit in the caches).
 *
 * Width. The wheel is resized to what is pending (at most every nb
 * events run): nb = the power of two near live/2 (at least 256), and the
 * width the power of two that spreads the pending events' spread past
 * now over the buckets, so a bucket holds a few events and most pending
 * ones sit in the wheel, not the heap. A resize redistributes every key
 * (O(live)); the check that triggers it counts what buckets held when
 * taken and how many keys went to the heap.
 *
 * Handles and cancellation. A handle is (generation << 32 | slot); a slot
 * is reused with its generation bumped, so a stale handle never cancels a
 * newer event. Cancelling clears the slot's callback; its key stays in
 * the queue and is dropped when it comes up (lazy cancellation).
 *
 * Limits, reported like an allocation failure (sim_failed): 2^24 - 1
 * events queued at once (about 16.7 M, live or cancelled), 2^40 events
 * scheduled in one simulation (days of simulation at 10 M events/s).
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
#define PREFETCH_MIN 16384		/* heap keys: smaller heaps stay cached */
#define WHEEL_MIN 256			/* buckets, at least */
#define WHEEL_MAX ((uint32_t)1 << 22)	/* buckets, at most */
#define SHIFT_FIRST 10			/* ns: a first bucket width of 1 us */
#define SHIFT_MAX 40			/* ns: a bucket of ~18 min at most */
#define PER_BUCKET 256		/* keys a bucket holds, about */
#define SORT_SMALL 24			/* insertion sort up to this many keys */
#define AHEAD 32				/* bottom keys whose slots are prefetched */
#define TIME_MAX INT64_MAX		/* ns, the largest units_ns_t */

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

struct bucket {
	struct key *v;		/* unsorted */
	uint32_t n, cap;
};

struct sim {
	units_ns_t now;		/* ns */
	uint64_t seq;		/* next sequence number */
	uint64_t executed;	/* events run */
	uint64_t live;		/* scheduled, not run, not cancelled */
	uint64_t queued;	/* keys in bottom, wheel and heap */

	struct key *fifo;	/* ring of keys at time now, in order */
	uint32_t fhead, nfifo, capfifo;	/* capfifo: a power of two */

	struct key *bot;	/* sorted; bot[cur .. nbot) still to run */
	uint32_t cur, nbot, capbot;
	units_ns_t bot_end;	/* ns: a key before this goes to bot */

	struct bucket *wheel;	/* nb buckets */
	uint64_t *full;		/* nb bits: bucket non-empty */
	uint32_t nb, shift;	/* buckets (power of two), log2 width */
	units_ns_t wstart;	/* ns: the wheel covers [wstart, wend) */
	units_ns_t wend;
	uint64_t nwheel;	/* keys in the wheel */

	struct key *heap;	/* heap[1..4] share a cache line, etc. */
	void *heap_mem;		/* allocation holding heap */
	uint32_t nheap, capheap;

	uint64_t taken, taken_keys, to_heap;	/* since the last resize */

	struct slot *pool;
	uint32_t npool, cappool;
	uint32_t free_head;	/* NO_SLOT when empty */
	int stopped;
	int failed;
};

struct sim *sim_new(void)
{
	struct sim *s = mem_calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->free_head = NO_SLOT;
	s->shift = SHIFT_FIRST;
	return s;
}

void sim_free(struct sim *s)
{
	uint32_t i;

	if (!s)
		return;
	for (i = 0; i < s->nb; i++)
		mem_free(s->wheel[i].v);
	mem_free(s->wheel);
	mem_free(s->full);
	mem_free(s->bot);
	mem_free(s->fifo);
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

/* ---- the far heap ---- */

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

static int heap_push(struct sim *s, struct key k)
{
	if (s->nheap == s->capheap && grow_heap(s) != 0)
		return -1;
	s->heap[s->nheap] = k;
	sift_up(s->heap, s->nheap);
	s->nheap++;
	return 0;
}

static struct key heap_pop(struct sim *s)
{
	struct key top = s->heap[0];

	if (--s->nheap > 0) {
		s->heap[0] = s->heap[s->nheap];
		sift_down(s->heap, s->nheap, 0);
	}
	return top;
}

/* ---- the wheel ---- */

static uint32_t bucket_of(const struct sim *s, units_ns_t t)
{
	return (uint32_t)((uint64_t)t >> s->shift) & (s->nb - 1);
}

/* The end of the window that starts at wstart: nb whole buckets from
 * the one wstart falls in. */
static units_ns_t window_end(const struct sim *s)
{
	units_ns_t first = s->wstart >> s->shift << s->shift;
	uint64_t span = (uint64_t)s->nb << s->shift;

	return (uint64_t)first + span > (uint64_t)TIME_MAX
		       ? TIME_MAX : first + (units_ns_t)span;
}

static int bucket_push(struct sim *s, struct key k)
{
	uint32_t b = bucket_of(s, k.time);
	struct bucket *bk = &s->wheel[b];

	if (bk->n == bk->cap) {
		uint32_t ncap = bk->cap ? bk->cap * 2 : 8;
		struct key *nv = mem_realloc(bk->v, (size_t)ncap * sizeof(*nv));

		if (!nv)
			return -1;
		bk->v = nv;
		bk->cap = ncap;
	}
	bk->v[bk->n++] = k;
	s->full[b / 64] |= (uint64_t)1 << (b % 64);
	s->nwheel++;
	return 0;
}

/* Room for n keys in the bottom; 0 or -1. */
static int bot_reserve(struct sim *s, uint32_t n)
{
	uint32_t ncap = s->capbot ? s->capbot : 64;
	struct key *nb;

	if (n <= s->capbot)
		return 0;
	while (ncap < n)
		ncap *= 2;
	nb = mem_realloc(s->bot, (size_t)ncap * sizeof(*nb));
	if (!nb)
		return -1;
	s->bot = nb;
	s->capbot = ncap;
	return 0;
}

/* Insert k into the unrun part of the bottom, in order; 0 or -1. */
static int bot_insert(struct sim *s, struct key k)
{
	uint32_t lo = s->cur, hi = s->nbot;

	if (s->cur > 0 && s->cur == s->nbot)
		s->cur = s->nbot = lo = hi = 0;
	if (bot_reserve(s, s->nbot + 1) != 0)
		return -1;
	/* The first key after k (k's sequence is the largest yet, so it
	 * goes after every key at its time). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (key_less(&k, &s->bot[mid]))
			hi = mid;
		else
			lo = mid + 1;
	}
	memmove(&s->bot[lo + 1], &s->bot[lo],
		(s->nbot - lo) * sizeof(*s->bot));
	s->bot[lo] = k;
	s->nbot++;
	return 0;
}

/* Append k (at time now) to the ring; 0 or -1. */
static int fifo_push(struct sim *s, struct key k)
{
	if (s->nfifo == s->capfifo) {
		uint32_t ncap = s->capfifo ? s->capfifo * 2 : 64, i;
		struct key *nf = mem_alloc((size_t)ncap * sizeof(*nf));

		if (!nf)
			return -1;
		for (i = 0; i < s->nfifo; i++)
			nf[i] = s->fifo[(s->fhead + i) & (s->capfifo - 1)];
		mem_free(s->fifo);
		s->fifo = nf;
		s->fhead = 0;
		s->capfifo = ncap;
	}
	s->fifo[(s->fhead + s->nfifo++) & (s->capfifo - 1)] = k;
	return 0;
}

/* File key k where its time says; 0 or -1. A key at time now has the
 * largest sequence yet, so it runs after every key already due now and
 * before any later one: the ring keeps it in order without a search. */
static int enqueue(struct sim *s, struct key k)
{
	int rc;

	if (k.time == s->now)
		rc = fifo_push(s, k);
	else if (k.time < s->bot_end)
		rc = bot_insert(s, k);
	else if (k.time < s->wend)
		rc = bucket_push(s, k);
	else if ((rc = heap_push(s, k)) == 0)
		s->to_heap++;
	if (rc == 0)
		s->queued++;
	return rc;
}

/* Move the heap's keys that the window now covers into the wheel. */
static int pull_far(struct sim *s)
{
	while (s->nheap > 0 && s->heap[0].time < s->wend)
		if (bucket_push(s, heap_pop(s)) != 0)
			return -1;
	return 0;
}

static void sort_keys(struct key *v, uint32_t n)
{
	uint32_t i;

	for (i = 1; i < n; i++) {
		struct key k = v[i];
		uint32_t j = i;

		while (j > 0 && key_less(&k, &v[j - 1])) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = k;
	}
}

/* Sort v[0..n) by (time, order), with tmp room for n keys: insertion
 * sort of runs of SORT_SMALL, then bottom-up merges (no callbacks). */
static void sort_bucket(struct key *v, struct key *tmp, uint32_t n)
{
	struct key *src = v, *dst = tmp;
	uint32_t w, i;

	for (i = 0; i < n; i += SORT_SMALL)
		sort_keys(v + i, n - i < SORT_SMALL ? n - i : SORT_SMALL);
	for (w = SORT_SMALL; w < n; w *= 2) {
		struct key *t;

		for (i = 0; i < n; i += 2 * w) {
			uint32_t a = i, am = i + w < n ? i + w : n;
			uint32_t b = am, bm = i + 2 * w < n ? i + 2 * w : n;
			uint32_t o = i;

			while (a < am && b < bm)
				dst[o++] = key_less(&src[b], &src[a]) ? src[b++]
								      : src[a++];
			while (a < am)
				dst[o++] = src[a++];
			while (b < bm)
				dst[o++] = src[b++];
		}
		t = src;
		src = dst;
		dst = t;
	}
	if (src != v)
		memcpy(v, src, n * sizeof(*v));
}

/* The first non-empty bucket at or after b, circularly; the wheel is not
 * empty. */
static uint32_t next_full(const struct sim *s, uint32_t b)
{
	uint32_t words = (s->nb + 63) / 64, w = b / 64, i;
	uint64_t bits = s->full[w] & (~(uint64_t)0 << (b % 64));

	for (i = 0; i <= words; i++) {
		if (bits)
			return w * 64 + (uint32_t)__builtin_ctzll(bits);
		w = w + 1 == words ? 0 : w + 1;
		bits = s->full[w];
	}
	BUG("sim: wheel counted keys but no bucket holds one");
	return 0;
}

/* Take the next non-empty bucket of the wheel into the (empty) bottom
 * and move the window past it; 0 or -1. */
static int take_bucket(struct sim *s)
{
	uint32_t b = next_full(s, bucket_of(s, s->wstart)), ahead;
	struct bucket *bk = &s->wheel[b];
	units_ns_t start;

	ahead = (b - bucket_of(s, s->wstart)) & (s->nb - 1);
	start = (s->wstart >> s->shift << s->shift) +
		((units_ns_t)ahead << s->shift);
	if (bot_reserve(s, bk->n) != 0)
		return -1;
	memcpy(s->bot, bk->v, bk->n * sizeof(*s->bot));
	s->cur = 0;
	s->nbot = bk->n;
	if (bk->n <= SORT_SMALL)
		sort_keys(s->bot, bk->n);
	else
		sort_bucket(s->bot, bk->v, bk->n);	/* its array as scratch */
	s->taken++;
	s->taken_keys += bk->n;
	s->nwheel -= bk->n;
	bk->n = 0;
	s->full[b / 64] &= ~((uint64_t)1 << (b % 64));
	s->bot_end = start + ((units_ns_t)1 << s->shift);
	s->wstart = s->bot_end;
	s->wend = window_end(s);
	return pull_far(s);
}

/* ---- resizing the wheel ---- */

static int cmp_time(const void *a, const void *b)
{
	units_ns_t x = *(const units_ns_t *)a, y = *(const units_ns_t *)b;

	return (x > y) - (x < y);
}

/* log2 of the width that spreads the pending keys (wheel and heap)
 * over nb buckets: the spread of their times past wstart, the largest of
 * a sample of 255 (the heap holds what lies further). */
static uint32_t pick_shift(const struct sim *s, uint32_t nb)
{
	enum { SAMPLE = 255 };
	units_ns_t t[SAMPLE];
	uint32_t n = 0, i, b, shift = 0;
	uint64_t step = (s->nwheel + s->nheap) / SAMPLE + 1, seen = 0;
	units_ns_t spread;

	for (b = 0; b < s->nb && n < SAMPLE; b++)
		for (i = 0; i < s->wheel[b].n && n < SAMPLE; i++)
			if (seen++ % step == 0)
				t[n++] = s->wheel[b].v[i].time - s->wstart;
	for (i = 0; i < s->nheap && n < SAMPLE; i++)
		if (seen++ % step == 0)
			t[n++] = s->heap[i].time - s->wstart;
	if (n == 0)
		return s->shift;
	qsort(t, n, sizeof(*t), cmp_time);
	spread = t[n - 1];
	while (shift < SHIFT_MAX && ((units_ns_t)nb << shift) < spread)
		shift++;
	return shift;
}

/* Rebuild the wheel with nb buckets of width 2^shift from wstart,
 * moving every key of the wheel and the heap; 0 or -1 (the queue is
 * then unchanged). */
static int rebuild(struct sim *s, uint32_t nb, uint32_t shift)
{
	struct bucket *old = s->wheel, *nw;
	uint32_t oldnb = s->nb, b, i;
	uint64_t *full;

	nw = mem_calloc(nb, sizeof(*nw));
	full = mem_calloc((nb + 63) / 64, sizeof(*full));
	if (!nw || !full) {
		mem_free(nw);
		mem_free(full);
		return -1;
	}
	mem_free(s->full);
	s->wheel = nw;
	s->full = full;
	s->nb = nb;
	s->shift = shift;
	s->wend = window_end(s);
	s->nwheel = 0;
	for (b = 0; b < oldnb; b++) {
		for (i = 0; i < old[b].n; i++) {
			struct key k = old[b].v[i];

			if (k.time < s->wend ? bucket_push(s, k)
					     : heap_push(s, k))
				goto oom;
		}
		mem_free(old[b].v);
		old[b].v = NULL;
		old[b].n = 0;
	}
	mem_free(old);
	s->taken = s->taken_keys = s->to_heap = 0;
	return pull_far(s);
oom:
	/* The keys not yet moved are lost: the simulation has failed (the
	 * caller makes it sticky) and only has to free cleanly. */
	for (; b < oldnb; b++)
		mem_free(old[b].v);
	mem_free(old);
	return -1;
}

/* The number of buckets for what is pending. */
static uint32_t pick_nb(const struct sim *s)
{
	uint64_t pending = s->nwheel + s->nheap;
	uint32_t nb = WHEEL_MIN;

	while (nb < WHEEL_MAX && (uint64_t)nb * PER_BUCKET < pending)
		nb *= 2;
	return nb;
}

/* Rebuild for what is pending now; 0 or -1. */
static int resize(struct sim *s)
{
	uint32_t nb = pick_nb(s);

	return rebuild(s, nb, pick_shift(s, nb));
}

/* After a bucket is taken: resize when the wheel is too small or too
 * large for what is pending, or its width spreads them badly. Checked
 * once every nb / 4 buckets taken; 0 or -1. */
static int maybe_resize(struct sim *s)
{
	uint32_t nb, shift;
	double per;

	if (s->taken < s->nb / 4 + 16)
		return 0;
	nb = pick_nb(s);
	per = s->taken ? (double)s->taken_keys / (double)s->taken : 0;
	if (s->wheel && nb == s->nb && per <= 2 * PER_BUCKET &&
	    s->to_heap <= s->taken_keys / 4 + 64) {
		s->taken = s->taken_keys = s->to_heap = 0;
		return 0;
	}
	shift = pick_shift(s, nb);
	if (s->wheel && nb == s->nb && shift == s->shift) {
		s->taken = s->taken_keys = s->to_heap = 0;
		return 0;
	}
	return rebuild(s, nb, shift);
}

/* ---- the pool ---- */

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

/* ---- the interface ---- */

sim_id sim_at(struct sim *s, units_ns_t t, sim_fn fn, void *arg)
{
	uint32_t i;

	if (t < s->now)
		BUG("event scheduled in the past");
	if (!fn)
		BUG("event without a callback");
	if (s->failed)
		return 0;
	if (s->seq >= SEQ_LIMIT || s->queued >= SLOT_MASK)
		goto fail;
	if (!s->wheel && rebuild(s, WHEEL_MIN, s->shift) != 0)
		goto fail;
	if (s->queued > (uint64_t)s->nb * PER_BUCKET * 4 && s->nb < WHEEL_MAX &&
	    resize(s) != 0)
		goto fail;
	i = slot_take(s);
	if (i == NO_SLOT)
		goto fail;
	if (enqueue(s, (struct key){ t, s->seq << SLOT_BITS | i }) != 0) {
		slot_put(s, i);
		goto fail;
	}
	s->seq++;
	s->pool[i].fn = fn;
	s->pool[i].arg = arg;
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

/* The next key, or 0 when none is left (or out of memory, failed): the
 * bottom's keys due now (scheduled earlier), then the ring's, then the
 * bottom's later ones (the ring is empty by then). */
static int next_key(struct sim *s, struct key *k)
{
	if (s->nfifo > 0 && (s->cur == s->nbot || s->bot[s->cur].time > s->now)) {
		*k = s->fifo[s->fhead];
		s->fhead = (s->fhead + 1) & (s->capfifo - 1);
		s->nfifo--;
		s->queued--;
		return 1;
	}
	while (s->cur == s->nbot) {
		if (s->nwheel == 0) {
			if (s->nheap == 0)
				return 0;
			/* Jump the window to the heap's first key. */
			s->wstart = s->heap[0].time;
			s->wend = window_end(s);
			if (pull_far(s) != 0)
				goto fail;
		}
		if (take_bucket(s) != 0 || maybe_resize(s) != 0)
			goto fail;
	}
	*k = s->bot[s->cur++];
	if (s->cur + AHEAD < s->nbot)
		__builtin_prefetch(&s->pool[s->bot[s->cur + AHEAD].order &
					    SLOT_MASK]);
	s->queued--;
	return 1;
fail:
	s->failed = 1;
	s->stopped = 1;
	return 0;
}

int sim_step(struct sim *s)
{
	struct key k;

	while (next_key(s, &k)) {
		uint32_t i = (uint32_t)(k.order & SLOT_MASK);
		sim_fn fn = s->pool[i].fn;
		void *arg = s->pool[i].arg;

		slot_put(s, i);
		if (!fn)
			continue;
		s->live--;
		s->now = k.time;
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
