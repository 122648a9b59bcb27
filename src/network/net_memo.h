/*
 * net_memo.h - comm_start's memo (net.c): a direct-mapped table, keyed
 * by a collective descriptor's member array (by address, checked against
 * its contents), its size, op, overrides and path, that answers a
 * repeated collective with its plan and trajectory without hashing its
 * members into the plan cache. It starts at MEMO_FIRST slots and
 * doubles, up to MEMO_MAX, when more than half its slots missed since it
 * last grew.
 */
#ifndef LLMSIM_NETWORK_NET_MEMO_H
#define LLMSIM_NETWORK_NET_MEMO_H

#include <stdint.h>

#include "base/coll.h"
#include "crun.h"
#include "pcache.h"

#define MEMO_FIRST 4096		/* entries of the comm_start memo (2^k) */
#define MEMO_MAX (1u << 20)	/* ... at most */
#define MEMO_INLINE 8		/* members kept in the entry itself */

/* A collective comm_start has seen: its plan and trajectory. */
struct memo {
	const uint32_t *gpus;	/* the descriptor's member array, by address */
	uint32_t *copy;		/* its contents then (inline, or owned) */
	uint32_t inline_copy[MEMO_INLINE];
	uint32_t ngpus, replicas;
	uint32_t group;		/* coll_desc.group, 1 for one operation */
	int op, algo, proto;	/* algo, proto: the descriptor's overrides */
	double bytes;		/* B */
	int has_path;		/* a non-library path, ... */
	struct coll_path path;	/* ... its numbers */
	struct cplan *cp;	/* one reference held */
	const struct ctraj *tr;	/* owned by the cache; NULL: none */
};

struct net_memo {
	struct memo *slots;	/* n slots, or NULL */
	uint32_t n;		/* a power of two */
	uint32_t misses;	/* since the table last grew */
};

/* MEMO_FIRST empty slots. 0, or -1 out of memory. */
int net_memo_init(struct net_memo *t);
/* Release every entry and the slots. */
void net_memo_free(struct net_memo *t);
/* The slot for c (which may hold another collective). */
struct memo *net_memo_slot(struct net_memo *t, const struct coll_desc *c);
/* Whether slot m holds c. */
int net_memo_same(const struct memo *m, const struct coll_desc *c);
/* Remember cp (a reference taken) and tr for c. */
void net_memo_put(struct net_memo *t, const struct coll_desc *c,
	      struct cplan *cp, const struct ctraj *tr);

#endif
