/*
 * group.c - grouping ranks by node with one sort: (node, rank) pairs
 * sorted give each node's ranks in rank order; nodes are then ordered by
 * their smallest rank.
 */
#include "group.h"

#include <stdlib.h>

#include "base/mem.h"
#include "route.h"

struct nr {
	uint32_t node, rank;
};

static int by_node_rank(const void *a, const void *b)
{
	const struct nr *x = a, *y = b;

	if (x->node != y->node)
		return x->node < y->node ? -1 : 1;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Node blocks of the sorted pairs, as (first index, smallest rank). */
struct block {
	uint32_t start, len, min_rank;
};

static int by_min_rank(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	return x->min_rank < y->min_rank ? -1 : x->min_rank > y->min_rank;
}

static int alloc_tables(struct group *g, uint32_t p)
{
	g->sysnode = mem_alloc((size_t)p * sizeof(uint32_t));
	g->first = mem_alloc(((size_t)p + 1) * sizeof(uint32_t));
	g->members = mem_alloc((size_t)p * sizeof(uint32_t));
	g->gnode = mem_alloc((size_t)p * sizeof(uint32_t));
	return g->sysnode && g->first && g->members && g->gnode ? 0 : -1;
}

static uint32_t blocks_of(const struct nr *v, uint32_t p, struct block *b)
{
	uint32_t i, nb = 0;

	for (i = 0; i < p; i++) {
		if (i == 0 || v[i].node != v[i - 1].node)
			b[nb++] = (struct block){ i, 0, v[i].rank };
		b[nb - 1].len++;
	}
	return nb;
}

static void fill(struct group *g, const struct nr *v, struct block *b,
		 uint32_t nb)
{
	uint32_t k, i, at = 0;

	qsort(b, nb, sizeof(*b), by_min_rank);
	g->nnodes = nb;
	g->ppn_min = UINT32_MAX;
	g->ppn_max = 0;
	for (k = 0; k < nb; k++) {
		g->sysnode[k] = v[b[k].start].node;
		g->first[k] = at;
		for (i = 0; i < b[k].len; i++) {
			uint32_t r = v[b[k].start + i].rank;

			g->members[at++] = r;
			g->gnode[r] = k;
		}
		if (b[k].len < g->ppn_min)
			g->ppn_min = b[k].len;
		if (b[k].len > g->ppn_max)
			g->ppn_max = b[k].len;
	}
	g->first[nb] = at;
}

static int by_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts a copy of the ids into scratch (p entries). */
static int has_duplicate(const uint32_t *gpus, uint32_t p, uint32_t *scratch)
{
	uint32_t i;

	for (i = 0; i < p; i++)
		scratch[i] = gpus[i];
	qsort(scratch, p, sizeof(*scratch), by_u32);
	for (i = 1; i < p; i++)
		if (scratch[i] == scratch[i - 1])
			return 1;
	return 0;
}

int group_init(struct group *g, const struct topo *t, const uint32_t *gpus,
	       uint32_t p, const char **why)
{
	struct nr *v = NULL;
	struct block *b = NULL;
	uint32_t i;
	int rc = -1;

	*g = (struct group){ .p = p, .gpus = gpus };
	v = mem_alloc((size_t)p * sizeof(*v) + 1);
	b = mem_alloc((size_t)p * sizeof(*b) + 1);
	if (!v || !b || alloc_tables(g, p) != 0)
		goto out;
	for (i = 0; i < p; i++) {
		if (gpus[i] >= t->gpus) {
			*why = "a member's GPU id is past the system's GPUs";
			rc = -2;
			goto out;
		}
		v[i] = (struct nr){ route_node(t, gpus[i]), i };
	}
	if (has_duplicate(gpus, p, g->members)) {
		*why = "a GPU appears twice in the group";
		rc = -2;
		goto out;
	}
	qsort(v, p, sizeof(*v), by_node_rank);
	fill(g, v, b, blocks_of(v, p, b));
	rc = 0;
out:
	mem_free(v);
	mem_free(b);
	if (rc != 0)
		group_release(g);
	return rc;
}

void group_release(struct group *g)
{
	mem_free(g->sysnode);
	mem_free(g->first);
	mem_free(g->members);
	mem_free(g->gnode);
	g->sysnode = g->first = g->members = g->gnode = NULL;
}

const uint32_t *group_members(const struct group *g, uint32_t k, uint32_t *n)
{
	*n = g->first[k + 1] - g->first[k];
	return g->members + g->first[k];
}

uint32_t group_gpu(const struct group *g, uint32_t r)
{
	return g->gpus[r];
}
