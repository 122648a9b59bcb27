/*
 * pcache.h - plans and algorithm choices remembered by collective.
 *
 * A step simulation starts the same collective (same op, size, members)
 * many times: per layer, per microbatch. Building its plan and choosing
 * its algorithm (which times every candidate on the idle fabric) is done
 * once; later starts reuse it. Entries are keyed by everything that
 * shapes a plan: op, size, members (compared in full, not by hash),
 * replicas, algorithm and protocol (-1 for a choice entry). Plans are
 * reference counted so a collective in flight keeps its plan when the
 * cache is cleared (it is cleared whole when half full).
 *
 * Depends on plan.h, mem.h.
 */
#ifndef LLMSIM_PCACHE_H
#define LLMSIM_PCACHE_H

#include <stdint.h>

#include "plan.h"

/* A plan shared by the cache and the collectives running it. */
struct cplan {
	struct plan plan;
	uint32_t refs;
	double idle_s;		/* s on the idle fabric; < 0 = not timed yet */
};

struct pkey {
	int op, algo, proto;	/* algo = proto = -1: the library's choice */
	uint32_t ngpus;
	uint32_t replicas;
	double bytes;		/* B */
	const uint32_t *gpus;
};

/* What the cache holds for a key. */
struct pval {
	struct cplan *plan;	/* plan entries: the plan (NULL: did not apply) */
	const char *why;	/* plan entries that did not apply: why */
	int algo, proto;	/* choice entries: the chosen pair */
};

struct pcache;

struct pcache *pcache_new(void);
void pcache_free(struct pcache *pc);

/* The value stored for k, or NULL. */
const struct pval *pcache_get(const struct pcache *pc, const struct pkey *k);

/* Store v for k (taking a reference on v->plan). Returns 0, or -1 when
 * out of memory (nothing stored; the caller keeps its own reference). */
int pcache_put(struct pcache *pc, const struct pkey *k, const struct pval *v);

/* A new plan with one reference; NULL when out of memory. */
struct cplan *cplan_new(void);
void cplan_ref(struct cplan *cp);
void cplan_unref(struct cplan *cp);

#endif
