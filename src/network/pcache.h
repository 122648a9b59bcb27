/*
 * pcache.h - plans and algorithm choices remembered by collective.
 *
 * A step simulation starts the same collective (same op, size, members)
 * many times: per layer, per microbatch. Building its plan and choosing
 * its algorithm (which times every candidate on the idle fabric) is done
 * once; later starts reuse it. A plan's volumes are per byte of the
 * collective's size, so one plan serves every size; its idle time and
 * the choice are remembered per size. Entries are keyed by op, members
 * (compared in full, not by hash), replicas, algorithm and protocol,
 * size where it matters, and an uneven all-to-all's matrix (its plan is
 * built for that matrix, so it is part of the key, compared in full).
 * Plans are
 * reference counted so a collective in flight keeps its plan when the
 * cache is freed. Entries stay until then (the table grows), so nothing
 * is computed twice in one simulation.
 *
 * Depends on plan.h, mem.h.
 */
#ifndef LLMSIM_NETWORK_PCACHE_H
#define LLMSIM_NETWORK_PCACHE_H

#include <stdint.h>

#include "plan.h"

/* A plan shared by the cache and the collectives running it. */
struct cplan {
	struct plan plan;
	uint32_t refs;
	int per_byte;		/* volumes are per byte of the collective's size */
	double size_B;		/* the collective's size when not per byte (its
				 * pipeline's loops count it); else 0 */
	uint64_t links_hash;	/* of plan_links (crun.c); 0 = not yet */
	/* each distinct link's elements, ascending (crun.c host_links):
	 * link d of plan_links has elements link_elem[link_off[d] ..
	 * link_off[d + 1]) of flows link_flow[...]; NULL = not yet */
	uint32_t *link_off, *link_elem, *link_flow;
};

enum pkey_kind {
	PK_PLAN,		/* a plan, for any size (bytes = -1) */
	PK_TIME,		/* a plan's time on the idle fabric at one size */
	PK_LIBTIME,		/* the same as the library's tuning model sees it */
	PK_CHOICE,		/* the algorithm and protocol chosen at one size */
	PK_TRAJ,		/* a plan's trajectory on the idle fabric at one
				 * size (crun.h), for replays */
	PK_NOAPPLY		/* the (algorithm, protocol) pairs known not to
				 * apply to a group: bit a * PROTO_COUNT + p of
				 * val.algo (bytes as for plans) */
};

struct pkey {
	int kind;		/* enum pkey_kind */
	int op, algo, proto;	/* algo, proto < 0 in a choice: not forced */
	uint32_t ngpus;
	uint32_t replicas;
	uint32_t group;		/* coll_desc.group: 0 or 1 = one operation */
	double bytes;		/* B; -1 for plans that scale with it */
	const uint32_t *gpus;
	const double *a2a;	/* ngpus * ngpus B, or NULL (even) */
	const struct coll_path *path;	/* NULL: the library's; compared by
					 * value (every field but the name) */
};

/* What the cache holds for a key. */
struct pval {
	struct cplan *plan;	/* plans: the plan (NULL: did not apply) */
	const char *why;	/* plans that did not apply: why */
	int algo, proto;	/* choices: the chosen pair */
	double time_s;		/* times: s on the idle fabric */
	void *own;		/* owned by the entry (a trajectory), or NULL */
	void (*own_free)(void *own);
};

struct pcache;

struct pcache *pcache_new(void);
void pcache_free(struct pcache *pc);

/* The value stored for k, or NULL. */
const struct pval *pcache_get(const struct pcache *pc, const struct pkey *k);

/* Store v for k (taking a reference on v->plan and ownership of v->own).
 * Returns 0, or -1 when out of memory (nothing stored; the caller keeps
 * its reference and v->own). */
int pcache_put(struct pcache *pc, const struct pkey *k, const struct pval *v);

/* Store v for k, replacing what is stored (for values that own no plan
 * and nothing else). 0, or -1 when out of memory. */
int pcache_set(struct pcache *pc, const struct pkey *k, const struct pval *v);

/* A new plan with one reference; NULL when out of memory. */
struct cplan *pcache_plan_new(void);
void pcache_plan_ref(struct cplan *cp);
void pcache_plan_unref(struct cplan *cp);

/* Whether two paths shape plans alike: both the library's (NULL), or
 * equal in every number (the name only labels tables). */
int pcache_path_same(const struct coll_path *a, const struct coll_path *b);

#endif
