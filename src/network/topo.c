/*
 * topo.c - the topology graph: nodes, directional links, adjacency,
 * rails, and a BFS distance for checks. Builders are in topo_build.c
 * (scale-up and host) and topo_fattree.c (scale-out).
 */
#include "topo.h"

#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "link.h"

uint32_t topo_add_node(struct topo *t, enum topo_node_kind kind,
		       double latency_s)
{
	struct topo_node *n;

	if (arena_grow(&t->arena, (void **)&t->nodes, &t->capnodes,
		       (size_t)t->nnodes + 1, sizeof(*t->nodes)) != 0)
		return TOPO_NONE;
	n = &t->nodes[t->nnodes];
	n->kind = (uint8_t)kind;
	n->latency_s = latency_s;
	return t->nnodes++;
}

uint32_t topo_add_link(struct topo *t, uint32_t src, uint32_t dst,
		       double cap_Bps, double latency_s,
		       enum topo_transport transport)
{
	struct topo_link *l;

	if (src >= t->nnodes || dst >= t->nnodes || !(cap_Bps > 0))
		BUG("bad link");
	if (arena_grow(&t->arena, (void **)&t->links, &t->caplinks,
		       (size_t)t->nlinks + 1, sizeof(*t->links)) != 0)
		return TOPO_NONE;
	l = &t->links[t->nlinks];
	*l = (struct topo_link){ src, dst, cap_Bps, latency_s, 0,
				 (uint8_t)transport, TL_NONE };
	return t->nlinks++;
}

int topo_add_pair(struct topo *t, uint32_t a, uint32_t b, double cap_Bps,
		  double latency_s, enum topo_transport transport,
		  uint32_t *up, uint32_t *down)
{
	*up = topo_add_link(t, a, b, cap_Bps, latency_s, transport);
	*down = topo_add_link(t, b, a, cap_Bps, latency_s, transport);
	return *up == TOPO_NONE || *down == TOPO_NONE ? -1 : 0;
}

void topo_set_level(struct topo *t, uint32_t link, enum topo_level level,
		    uint32_t owner)
{
	t->links[link].level = (uint8_t)level;
	t->links[link].owner = owner;
}

int topo_finish(struct topo *t)
{
	uint32_t i, *fill;

	t->out = arena_alloc(&t->arena, (size_t)t->nlinks * sizeof(*t->out) + 1);
	fill = arena_alloc(&t->arena, (size_t)t->nnodes * sizeof(*fill) + 1);
	if (!t->out || !fill)
		return -1;
	for (i = 0; i < t->nnodes; i++)
		t->nodes[i].nout = 0;
	for (i = 0; i < t->nlinks; i++)
		t->nodes[t->links[i].src].nout++;
	for (i = 0; i < t->nnodes; i++)
		t->nodes[i].first_out = i ? t->nodes[i - 1].first_out +
					    t->nodes[i - 1].nout : 0;
	for (i = 0; i < t->nlinks; i++) {
		uint32_t s = t->links[i].src;

		t->out[t->nodes[s].first_out + fill[s]++] = i;
	}
	return 0;
}

uint32_t *topo_table(struct topo *t, size_t n)
{
	uint32_t *v = arena_alloc(&t->arena, n * sizeof(*v) + 1);

	if (v)
		memset(v, 0xff, n * sizeof(*v));
	return v;
}

int topo_oom(struct diag *d)
{
	diag_oom(d);
	return -1;
}

double topo_port_cap(const struct link_spec *l, int64_t n, int endpoint)
{
	return link_payload_rate_Bps(l) * (double)n *
	       (endpoint ? l->sustained : 1.0);
}

uint32_t topo_nic(const struct topo *t, uint32_t node, uint32_t k)
{
	return t->nic0 + node * t->nics_per_node + k;
}

uint32_t topo_rail_of(const struct topo *t, uint32_t local_gpu)
{
	return (uint32_t)((uint64_t)local_gpu * t->nics_per_node /
			  t->gpus_per_node);
}

uint32_t topo_rail_owner(const struct topo *t, uint32_t rail)
{
	/* Smallest i with floor(i * nics / g) == rail: ceil(rail * g / nics). */
	return (uint32_t)(((uint64_t)rail * t->gpus_per_node +
			   t->nics_per_node - 1) / t->nics_per_node);
}

int topo_distance(const struct topo *t, uint32_t a, uint32_t b)
{
	uint32_t *dist = mem_alloc((size_t)t->nnodes * sizeof(*dist) + 1);
	uint32_t *queue = mem_alloc((size_t)t->nnodes * sizeof(*queue) + 1);
	uint32_t head = 0, tail = 0, i;
	int found = -1;

	if (!dist || !queue)
		goto out;
	memset(dist, 0xff, (size_t)t->nnodes * sizeof(*dist));
	dist[a] = 0;
	queue[tail++] = a;
	while (head < tail) {
		uint32_t u = queue[head++];
		const struct topo_node *n = &t->nodes[u];

		if (u == b) {
			found = (int)dist[u];
			break;
		}
		for (i = 0; i < n->nout; i++) {
			uint32_t v = t->links[t->out[n->first_out + i]].dst;

			if (dist[v] != UINT32_MAX)
				continue;
			dist[v] = dist[u] + 1;
			queue[tail++] = v;
		}
	}
out:
	mem_free(dist);
	mem_free(queue);
	return found;
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	arena_release(&t->arena);
	mem_free(t);
}
