/*
 * route.c - up-down routing by arithmetic on the topology's link tables.
 */
#include "route.h"

#include "base/diag.h"

uint32_t route_node(const struct topo *t, uint32_t gpu)
{
	return gpu / t->gpus_per_node;
}

uint32_t route_local(const struct topo *t, uint32_t gpu)
{
	return gpu % t->gpus_per_node;
}

static void push(struct route *r, uint32_t link)
{
	if (link == TOPO_NONE)
		BUG("route through a link that was not built");
	if (r->n == ROUTE_MAX_LINKS)
		BUG("route longer than ROUTE_MAX_LINKS");
	r->link[r->n++] = link;
}

/* splitmix64: a well-mixed deterministic hash for ECMP choices. */
static uint64_t mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static void intra(const struct topo *t, uint32_t a, uint32_t b,
		  struct route *r)
{
	uint32_t g = t->gpus_per_node, n = route_node(t, a);
	uint32_t la = route_local(t, a), lb = route_local(t, b);

	switch (t->up_topology) {
	case TOPO_MESH:
		if (t->mesh_out)
			push(r, t->mesh_out[a]);
		push(r, t->mesh_base[n] + la * (g - 1) + (lb < la ? lb : lb - 1));
		if (t->mesh_in)
			push(r, t->mesh_in[b]);
		return;
	case TOPO_SWITCH:
		push(r, t->gpu_up[a]);
		push(r, t->gpu_down[b]);
		return;
	case TOPO_PCIE_TREE: {
		uint32_t sa = n * t->psw_per_node + la / t->gpus_per_psw;
		uint32_t sb = n * t->psw_per_node + lb / t->gpus_per_psw;

		push(r, t->gpu_up[a]);
		if (sa != sb) {
			push(r, t->psw_up[sa]);
			push(r, t->psw_down[sb]);
		}
		push(r, t->gpu_down[b]);
		return;
	}
	default:
		BUG("unknown scale-up topology");
	}
}

/* GPU g to NIC e (0-based NIC index) over the host tree, or nothing when
 * NICs attach directly; back the other way when to_gpu. */
static void host(const struct topo *t, uint32_t g, uint32_t e, int to_gpu,
		 struct route *r)
{
	uint32_t sg, se;

	if (!t->has_host)
		return;
	sg = t->hsw_of_gpu[g];
	se = t->hsw_of_nic[e];
	push(r, to_gpu ? t->hnic_up[e] : t->hgpu_up[g]);
	if (sg != se) {
		push(r, t->hsw_up[to_gpu ? se : sg]);
		push(r, t->hsw_down[to_gpu ? sg : se]);
	}
	push(r, to_gpu ? t->hgpu_down[g] : t->hnic_down[e]);
}

static void fabric(const struct topo *t, uint32_t ea, uint32_t eb,
		   uint64_t salt, struct route *r)
{
	const struct topo_tree *tr = &t->tree;
	uint32_t la = tr->leaf_of[ea], lb = tr->leaf_of[eb];

	push(r, t->nic_up[ea]);
	if (la != lb) {
		uint64_t h = mix(((uint64_t)ea << 32 | eb) ^ mix(salt));
		uint32_t u = tr->up_per_leaf, j = (uint32_t)(h % u);

		push(r, tr->leaf_up[la * u + j]);
		if (tr->tiers == 3 &&
		    la / tr->leaves_per_pod != lb / tr->leaves_per_pod) {
			uint32_t upa = tr->up_per_agg, c = (uint32_t)((h / u) % upa);
			uint32_t pa = la / tr->leaves_per_pod;
			uint32_t pb = lb / tr->leaves_per_pod;

			push(r, tr->agg_up[(pa * u + j) * upa + c]);
			push(r, tr->agg_down[(pb * u + j) * upa + c]);
		}
		push(r, tr->leaf_down[lb * u + j]);
	}
	push(r, t->nic_down[eb]);
}

static void inter(const struct topo *t, uint32_t a, uint32_t b,
		  uint32_t rail_out, uint32_t rail_in, uint64_t salt,
		  struct route *r)
{
	uint32_t g = t->gpus_per_node, na = route_node(t, a), nb = route_node(t, b);
	uint32_t pa = na * g + topo_rail_owner(t, rail_out);
	uint32_t pb = nb * g + topo_rail_owner(t, rail_in);
	uint32_t ea = na * t->nics_per_node + rail_out;
	uint32_t eb = nb * t->nics_per_node + rail_in;

	if (pa != a)
		intra(t, a, pa, r);
	host(t, pa, ea, 0, r);
	fabric(t, ea, eb, salt, r);
	host(t, pb, eb, 1, r);
	if (pb != b)
		intra(t, pb, b, r);
	r->inter_node = 1;
}

static void finish(const struct topo *t, struct route *r)
{
	uint32_t i;

	r->latency_s = r->inter_node ? t->endpoint_latency_s : 0;
	r->transport = TT_SCALE_UP;
	for (i = 0; i < r->n; i++) {
		const struct topo_link *l = &t->links[r->link[i]];

		r->latency_s += l->latency_s;
		if (i + 1 < r->n)
			r->latency_s += t->nodes[l->dst].latency_s;
		if (l->transport > r->transport)
			r->transport = l->transport;
	}
}

void route_gpus(const struct topo *t, uint32_t a, uint32_t b,
		uint32_t rail_out, uint32_t rail_in, uint64_t salt,
		struct route *r)
{
	if (a >= t->gpus || b >= t->gpus || a == b)
		BUG("route between bad GPUs");
	r->n = 0;
	r->inter_node = 0;
	if (route_node(t, a) == route_node(t, b))
		intra(t, a, b, r);
	else
		inter(t, a, b, rail_out, rail_in, salt, r);
	finish(t, r);
}

void route_rails(const struct topo *t, uint32_t a, uint32_t b, int pxn,
		 uint32_t *rail_out, uint32_t *rail_in)
{
	*rail_in = topo_rail_of(t, route_local(t, b));
	*rail_out = pxn ? *rail_in : topo_rail_of(t, route_local(t, a));
}

void route_switch_loop(const struct topo *t, uint32_t gpu, struct route *r)
{
	if (t->up_topology != TOPO_SWITCH || !t->gpu_up)
		BUG("in-switch path without a scale-up switch");
	r->n = 0;
	r->inter_node = 0;
	push(r, t->gpu_up[gpu]);
	push(r, t->gpu_down[gpu]);
	finish(t, r);
}
