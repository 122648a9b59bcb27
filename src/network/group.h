/*
 * group.h - a collective's members seen by node: which nodes (scale-up
 * domains) the group spans, and which ranks sit on each.
 *
 * Nodes are ordered by their first rank; ranks within a node keep rank
 * order. Algorithms build rings and trees over this shape.
 *
 * Depends on topo.h, route.h, mem.h.
 */
#ifndef LLMSIM_NETWORK_GROUP_H
#define LLMSIM_NETWORK_GROUP_H

#include <stdint.h>

#include "topo.h"

struct group {
	uint32_t p;			/* ranks */
	const uint32_t *gpus;		/* global GPU id per rank (caller's) */
	uint32_t nnodes;		/* nodes spanned */
	uint32_t *sysnode;		/* per group node: system node id */
	uint32_t *first;		/* per group node, nnodes+1 offsets into members */
	uint32_t *members;		/* ranks grouped by node */
	uint32_t *gnode;		/* per rank: its group node */
	uint32_t ppn_min, ppn_max;	/* ranks per node, smallest and largest */
};

/* Analyse gpus[0..p-1]. Returns 0; -1 when out of memory; -2 when the
 * list is bad (an id past the system, a GPU twice), with *why set. */
int group_init(struct group *g, const struct topo *t, const uint32_t *gpus,
	       uint32_t p, const char **why);
void group_release(struct group *g);

/* Ranks on group node k, and how many. */
const uint32_t *group_members(const struct group *g, uint32_t k, uint32_t *n);

/* Global GPU id of rank r. */
uint32_t group_gpu(const struct group *g, uint32_t r);

#endif
