/*
 * est_share.c - the collective times of the analytical tier shared by the
 * processes of one walk (plan_split.c), in shared memory.
 *
 * A collective's time on the idle fabric is a pure function of its key
 * (struct est_ckey: the op, the group, the bytes, the traffic matrix'
 * hash): the same bits whichever process times it. The processes of a
 * shared walk each keep their own memo (est.c colls) and, before timing
 * a collective, look here; after timing one, they publish it. Open
 * addressing over a fixed table: a slot is empty (0), being written (1)
 * or ready (2); a writer takes an empty slot by compare-and-swap, writes
 * the key and the time, then marks it ready (release); a reader takes
 * only ready slots (acquire). A slot being written reads as a miss (that
 * process times it itself: the same bits), a full table as a miss and
 * is not written. No lock, so a process that dies holds nothing up.
 *
 * Why: DeepSeek-V3 2048's walk split in two timed 1,135 collectives
 * instead of the 972 of one walk, the expert all-to-alls among them
 * (each a flow-level run over up to 256 GPUs).
 */
#include "est_impl.h"

#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "base/mix.h"

enum { SLOTS = 1 << 13, PROBES = 64, EMPTY = 0, WRITING = 1, READY = 2 };

struct slot {
	_Atomic uint32_t state;
	struct est_ckey key;
	double t_s;			/* s */
};

struct est_share {
	struct slot slot[SLOTS];
};

static uint64_t hash_key(const struct est_ckey *k)
{
	const unsigned char *p = (const unsigned char *)k;
	uint64_t h = 0xcbf29ce484222325ull;	/* FNV-1a, then fmix64 */
	size_t i;

	for (i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return mix_fmix64(h);
}

struct est_share *est_share_new(void)
{
	void *p = mmap(NULL, sizeof(struct est_share), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;	/* zero: every slot empty */
}

void est_share_free(struct est_share *sh)
{
	if (sh)
		munmap(sh, sizeof(*sh));
}

int est_share_get(struct est_share *sh, const struct est_ckey *k,
		  double *t_s)
{
	uint64_t h = hash_key(k);
	uint32_t i;

	for (i = 0; i < PROBES; i++) {
		struct slot *s = &sh->slot[(h + i) & (SLOTS - 1)];
		uint32_t st = atomic_load_explicit(&s->state,
						   memory_order_acquire);

		if (st == EMPTY)
			return 0;
		if (st == READY && memcmp(&s->key, k, sizeof(*k)) == 0) {
			*t_s = s->t_s;
			return 1;
		}
	}
	return 0;
}

void est_share_put(struct est_share *sh, const struct est_ckey *k,
		   double t_s)
{
	uint64_t h = hash_key(k);
	uint32_t i;

	for (i = 0; i < PROBES; i++) {
		struct slot *s = &sh->slot[(h + i) & (SLOTS - 1)];
		uint32_t st = EMPTY;

		if (atomic_compare_exchange_strong(&s->state, &st, WRITING)) {
			s->key = *k;
			s->t_s = t_s;
			atomic_store_explicit(&s->state, READY,
					      memory_order_release);
			return;
		}
		if (st == READY && memcmp(&s->key, k, sizeof(*k)) == 0)
			return;		/* another process's, the same bits */
	}
}

void est_set_share(struct est *e, struct est_share *sh)
{
	e->share = sh;
}
