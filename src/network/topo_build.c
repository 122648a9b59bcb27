/*
 * topo_build.c - a system's topology: endpoints, the scale-up fabric of
 * every node, the optional host PCIe tree, then the scale-out fat tree
 * (topo_fattree.c).
 *
 * Scale-up wiring and capacities (per direction, P = one port's payload
 * rate from link.c, L = links_per_endpoint, s = sustained):
 *   mesh       g GPUs, L >= g-1 ports each: every ordered pair (a, b) has
 *              one link of floor(L / (g-1)) ports: cap = floor(L/(g-1))*P*s.
 *              MI300X: L = 7, g = 8 -> one 64 GB/s xGMI link per pair, so
 *              two GPUs talk over one link, never all seven. With an
 *              endpoint_bandwidth E, every route also crosses its source
 *              GPU's "ports out" and its destination's "ports in" (cap E
 *              each): a GPU whose links are all busy moves E, not their
 *              sum (RCCL's documentation: 46-48 GB/s per MI300X xGMI
 *              link, 7 x 46 = 322 GB/s with all seven busy).
 *   switch     one logical non-blocking switch per node; each GPU has an
 *              up and a down link bundling its L ports: cap = L*P*s. The
 *              NVSwitch chips (or UALink switches) a GPU spreads its ports
 *              over behave as one crossbar in the fluid limit.
 *   pcie_tree  ceil(g / gpus_per_switch) PCIe switches under the CPU;
 *              GPU <-> switch cap = L*P*s, switch <-> CPU cap = L*P, so GPUs
 *              under one switch share its uplink.
 * Host tree: GPUs and NICs under PCIe switches (gpus_per_switch,
 * nics_per_switch of the host fabric) under the CPU, same capacities.
 */
#include "topo.h"

#include "base/diag.h"
#include "base/mem.h"

/* Every GPU's ports together, out and in: a link from the GPU to itself
 * (no hop, no latency) that every mesh route crosses. 0 or -1 (memory). */
static int mesh_ports(struct topo *t, const struct fabric_spec *f)
{
	uint32_t i;

	t->mesh_out = topo_table(t, t->gpus);
	t->mesh_in = topo_table(t, t->gpus);
	if (!t->mesh_out || !t->mesh_in)
		return -1;
	for (i = 0; i < t->gpus; i++) {
		t->mesh_out[i] = topo_add_link(t, i, i, f->endpoint_bandwidth_Bps,
					       0, TT_SCALE_UP);
		t->mesh_in[i] = topo_add_link(t, i, i, f->endpoint_bandwidth_Bps,
					      0, TT_SCALE_UP);
		if (t->mesh_out[i] == TOPO_NONE || t->mesh_in[i] == TOPO_NONE)
			return -1;
	}
	return 0;
}

static int build_mesh(struct topo *t, const struct fabric_spec *f,
		      struct diag *d)
{
	uint32_t g = t->gpus_per_node, n, a, b;
	int64_t per_pair = f->links_per_endpoint / (g - 1);
	double cap = topo_port_cap(f->link, per_pair, 1);

	if (per_pair < 1) {
		diag_error(d, NULL, 0, 0, "scale-up mesh '%s': %u GPUs need %u "
			   "links each for a full mesh, the fabric has %lld",
			   f->name ? f->name : "(inline)", g, g - 1,
			   (long long)f->links_per_endpoint);
		return -1;
	}
	t->mesh_base = topo_table(t, t->sys_nodes);
	if (!t->mesh_base)
		return topo_oom(d);
	if (f->endpoint_bandwidth_Bps > 0 && mesh_ports(t, f) != 0)
		return topo_oom(d);
	for (n = 0; n < t->sys_nodes; n++) {
		t->mesh_base[n] = t->nlinks;
		for (a = 0; a < g; a++)
			for (b = 0; b < g; b++)
				if (a != b && topo_add_link(t, n * g + a, n * g + b,
					cap, f->link->latency_s, TT_SCALE_UP) ==
					TOPO_NONE)
					return topo_oom(d);
	}
	return 0;
}

static int build_switch(struct topo *t, const struct fabric_spec *f,
			struct diag *d)
{
	uint32_t g = t->gpus_per_node, n, i;
	double cap = topo_port_cap(f->link, f->links_per_endpoint, 1);

	t->gpu_up = topo_table(t, t->gpus);
	t->gpu_down = topo_table(t, t->gpus);
	if (!t->gpu_up || !t->gpu_down)
		return topo_oom(d);
	for (n = 0; n < t->sys_nodes; n++) {
		uint32_t sw = topo_add_node(t, TN_SWITCH, f->switch_latency_s);

		if (sw == TOPO_NONE)
			return topo_oom(d);
		for (i = n * g; i < (n + 1) * g; i++)
			if (topo_add_pair(t, i, sw, cap, f->link->latency_s,
					  TT_SCALE_UP, &t->gpu_up[i],
					  &t->gpu_down[i]) != 0)
				return topo_oom(d);
	}
	return 0;
}

static int build_pcie(struct topo *t, const struct fabric_spec *f,
		      struct diag *d)
{
	uint32_t g = t->gpus_per_node, n, i, s;
	uint32_t per = (uint32_t)f->gpus_per_switch, nsw = topo_ceil_div(g, per);
	double cap = topo_port_cap(f->link, f->links_per_endpoint, 1);
	double up = topo_port_cap(f->link, f->links_per_endpoint, 0);

	t->psw_per_node = nsw;
	t->gpus_per_psw = per;
	t->gpu_up = topo_table(t, t->gpus);
	t->gpu_down = topo_table(t, t->gpus);
	t->psw_up = topo_table(t, (size_t)nsw * t->sys_nodes);
	t->psw_down = topo_table(t, (size_t)nsw * t->sys_nodes);
	if (!t->gpu_up || !t->gpu_down || !t->psw_up || !t->psw_down)
		return topo_oom(d);
	for (n = 0; n < t->sys_nodes; n++)
		for (s = 0; s < nsw; s++) {
			uint32_t sw = topo_add_node(t, TN_SWITCH, f->switch_latency_s);
			uint32_t k = n * nsw + s;

			if (sw == TOPO_NONE ||
			    topo_add_pair(t, sw, t->cpu0 + n, up,
					  f->link->latency_s, TT_PCIE,
					  &t->psw_up[k], &t->psw_down[k]) != 0)
				return topo_oom(d);
			for (i = s * per; i < g && i < (s + 1) * per; i++)
				if (topo_add_pair(t, n * g + i, sw, cap,
						  f->link->latency_s, TT_PCIE,
						  &t->gpu_up[n * g + i],
						  &t->gpu_down[n * g + i]) != 0)
					return topo_oom(d);
		}
	return 0;
}

static int host_tables(struct topo *t, uint32_t nsw)
{
	uint32_t nics = t->sys_nodes * t->nics_per_node;

	t->hgpu_up = topo_table(t, t->gpus);
	t->hgpu_down = topo_table(t, t->gpus);
	t->hsw_of_gpu = topo_table(t, t->gpus);
	t->hnic_up = topo_table(t, nics);
	t->hnic_down = topo_table(t, nics);
	t->hsw_of_nic = topo_table(t, nics);
	t->hsw_up = topo_table(t, (size_t)nsw * t->sys_nodes);
	t->hsw_down = topo_table(t, (size_t)nsw * t->sys_nodes);
	return t->hgpu_up && t->hgpu_down && t->hsw_of_gpu && t->hnic_up &&
	       t->hnic_down && t->hsw_of_nic && t->hsw_up && t->hsw_down ? 0 : -1;
}

/* Attach endpoints [first, first+count) of one node under host switches
 * base.. with per endpoints each. */
static int host_attach(struct topo *t, const struct fabric_spec *f,
		       uint32_t first_node, uint32_t count, uint32_t per,
		       uint32_t sw_base, uint32_t sw_index0, uint32_t *up,
		       uint32_t *down, uint32_t *of, uint32_t table0)
{
	double cap = topo_port_cap(f->link, f->links_per_endpoint, 1);
	uint32_t i;

	for (i = 0; i < count; i++) {
		uint32_t s = i / per, k = table0 + i;

		of[k] = sw_index0 + s;
		if (topo_add_pair(t, first_node + i, sw_base + s, cap,
				  f->link->latency_s, TT_PCIE, &up[k],
				  &down[k]) != 0)
			return -1;
	}
	return 0;
}

static int build_host(struct topo *t, const struct fabric_spec *f,
		      struct diag *d)
{
	uint32_t g = t->gpus_per_node, m = t->nics_per_node, n, s;
	uint32_t gps = (uint32_t)f->gpus_per_switch, nps = (uint32_t)f->nics_per_switch;
	uint32_t gsw = topo_ceil_div(g, gps), msw = topo_ceil_div(m, nps);
	uint32_t nsw = gsw > msw ? gsw : msw;
	double up = topo_port_cap(f->link, f->links_per_endpoint, 0);

	t->has_host = 1;
	if (host_tables(t, nsw) != 0)
		return topo_oom(d);
	for (n = 0; n < t->sys_nodes; n++) {
		uint32_t base = t->nnodes;

		for (s = 0; s < nsw; s++) {
			uint32_t k = n * nsw + s;

			if (topo_add_node(t, TN_SWITCH, f->switch_latency_s) ==
			    TOPO_NONE ||
			    topo_add_pair(t, base + s, t->cpu0 + n, up,
					  f->link->latency_s, TT_PCIE,
					  &t->hsw_up[k], &t->hsw_down[k]) != 0)
				return topo_oom(d);
		}
		if (host_attach(t, f, n * g, g, gps, base, n * nsw, t->hgpu_up,
				t->hgpu_down, t->hsw_of_gpu, n * g) != 0 ||
		    host_attach(t, f, topo_nic(t, n, 0), m, nps, base, n * nsw,
				t->hnic_up, t->hnic_down, t->hsw_of_nic, n * m) != 0)
			return topo_oom(d);
	}
	return 0;
}

static int add_endpoints(struct topo *t, struct diag *d)
{
	uint32_t i, nics = t->sys_nodes * t->nics_per_node;

	for (i = 0; i < t->gpus; i++)
		if (topo_add_node(t, TN_GPU, 0) == TOPO_NONE)
			return topo_oom(d);
	t->nic0 = t->nnodes;
	for (i = 0; i < nics; i++)
		if (topo_add_node(t, TN_NIC, 0) == TOPO_NONE)
			return topo_oom(d);
	t->cpu0 = t->nnodes;
	for (i = 0; i < t->sys_nodes; i++)
		if (topo_add_node(t, TN_CPU, 0) == TOPO_NONE)
			return topo_oom(d);
	return 0;
}

/* Sizes the topology can hold: ids are 32-bit, the fluid model is meant
 * for up to about a million GPUs. */
static int check_sizes(const struct system_spec *sys, struct diag *d)
{
	const struct fabric_spec *up = sys->scale_up;

	if (sys->nodes * sys->gpus_per_node > SYSTEM_MAX_GPUS ||
	    sys->nodes * sys->nics_per_node > SYSTEM_MAX_GPUS) {
		diag_error(d, NULL, 0, 0, "system '%s': %lld GPUs; the fabric "
			   "model builds at most %lld", sys->name ? sys->name : "",
			   (long long)(sys->nodes * sys->gpus_per_node),
			   (long long)SYSTEM_MAX_GPUS);
		return -1;
	}
	if (up->max_endpoints > 0 && sys->gpus_per_node > up->max_endpoints) {
		diag_error(d, NULL, 0, 0, "scale-up fabric '%s': %lld GPUs per "
			   "node, the fabric connects at most %lld",
			   up->name ? up->name : "(inline)",
			   (long long)sys->gpus_per_node,
			   (long long)up->max_endpoints);
		return -1;
	}
	return 0;
}

static int build_scale_up(struct topo *t, const struct fabric_spec *f,
			  struct diag *d)
{
	t->up_topology = f->topology;
	if (t->gpus_per_node < 2)
		return 0;
	switch (f->topology) {
	case TOPO_MESH:
		return build_mesh(t, f, d);
	case TOPO_SWITCH:
		if (f->in_switch_reduction) {
			t->nvls_efficiency = f->reduction_efficiency;
			t->nvls_Bps = f->reduction_Bps;
			t->nvls_links = f->links_per_endpoint;
		}
		return build_switch(t, f, d);
	case TOPO_PCIE_TREE:
		return build_pcie(t, f, d);
	default:
		break;
	}
	diag_error(d, NULL, 0, 0, "scale-up fabric '%s': a fat tree cannot "
		   "join the GPUs of a node", f->name ? f->name : "(inline)");
	return -1;
}

struct topo *topo_build(const struct system_spec *sys, struct diag *d)
{
	struct topo *t;

	if (check_sizes(sys, d) != 0)
		return NULL;
	t = mem_calloc(1, sizeof(*t));
	if (!t) {
		topo_oom(d);
		return NULL;
	}
	arena_init(&t->arena);
	t->sys_nodes = (uint32_t)sys->nodes;
	t->gpus_per_node = (uint32_t)sys->gpus_per_node;
	t->nics_per_node = (uint32_t)sys->nics_per_node;
	t->nic_via_c2c = sys->nic_via_c2c;
	t->gpus = t->sys_nodes * t->gpus_per_node;
	t->endpoint_latency_s = sys->scale_out->endpoint_latency_s;
	t->p2p_channel_send_Bps = sys->gpu ? sys->gpu->p2p_channel_send_Bps : 0;
	t->p2p_launch_s = sys->gpu ? sys->gpu->p2p_launch_s : 0;
	t->p2p_peer_s = sys->gpu ? sys->gpu->p2p_peer_s : 0;
	if (add_endpoints(t, d) != 0 ||
	    build_scale_up(t, sys->scale_up, d) != 0 ||
	    (sys->host && build_host(t, sys->host, d) != 0) ||
	    topo_build_fat_tree(t, sys->scale_out, d) != 0)
		goto fail;
	if (topo_finish(t) != 0) {
		topo_oom(d);
		goto fail;
	}
	return t;
fail:
	topo_free(t);
	return NULL;
}
