/*
 * topo_fattree.c - the scale-out fat tree.
 *
 * Sizing (k = switch radix, r = oversubscription, L = ports per NIC):
 *   a leaf gives d = floor(k r / (r + 1)) ports to NICs and u = k - d to
 *   the tier above, so hosts per leaf = floor(d / L) and the leaf's uplink
 *   capacity is u/d of its downlink capacity (1/r);
 *   rail-optimized: NIC i of every node goes to a rail-i leaf, leaf index
 *   = (node / hosts_per_leaf) * rails + i; otherwise NICs fill leaves in
 *   node-major order;
 *   tiers:   as configured, or (tiers = 0) the fewest that hold the
 *            NICs, at least 2 when rail-optimized;
 *   1 tier:  one switch for every NIC (at most k / L NICs);
 *   2 tiers: u spines, each with one port to every leaf (leaves <= k);
 *   3 tiers: pods of k/2 leaves and u aggregation switches; every leaf
 *            links to each of its pod's aggs, every agg has k/2 uplinks to
 *            cores; core (j, c) links to agg j of every pod (pods <= k).
 *            Non-blocking k-ary case: k^3/4 hosts (hardware-specs 3.8).
 * Under spraying the u uplinks of a leaf become one trunk of u ports to a
 * single logical spine (2 tiers) or pod switch (3 tiers), and a pod's
 * uplinks one trunk to a single logical core.
 *
 * NIC links carry the link's sustained fraction. Every scale-out link is
 * marked with its level and owner: TL_NIC (NIC <-> leaf, per NIC),
 * TL_LEAF_UP (leaf <-> spine/agg, per leaf), TL_AGG_UP (agg <-> core, per
 * pod); crun.c finds a group's NICs by the first and charges replica
 * groups' traffic on the other two.
 */
#include "topo.h"

#include "base/diag.h"

struct ft {
	struct topo *t;
	const struct fabric_spec *f;
	struct topo_tree *tr;
	double port_Bps;	/* B/s, one switch port's payload rate */
	uint32_t nics;		/* NICs in the system */
};

static const char *fname(const struct fabric_spec *f)
{
	return f->name ? f->name : "(inline)";
}

static int too_small(const struct ft *ft, struct diag *d, uint32_t have,
		     uint32_t limit, const char *what)
{
	diag_error(d, NULL, 0, 0, "scale-out fabric '%s': %u %s, a %u-tier "
		   "tree of radix %lld holds at most %u; raise 'tiers' (at most "
		   "3) or 'switch_radix'", fname(ft->f), have, what,
		   ft->tr->tiers, (long long)ft->f->switch_radix, limit);
	return -1;
}

/* Leaf shape for a tree of `tiers` tiers: hosts per leaf, uplinks,
 * rails and leaf count. */
static void shape_for(struct ft *ft, uint32_t tiers)
{
	struct topo *t = ft->t;
	struct topo_tree *tr = ft->tr;
	const struct fabric_spec *f = ft->f;
	uint32_t k = (uint32_t)f->switch_radix, L = (uint32_t)f->links_per_endpoint;
	uint32_t down = tiers == 1 ? k :
			(uint32_t)((double)k * f->oversubscription /
				   (f->oversubscription + 1));
	uint32_t groups;

	if (down >= k && tiers > 1)
		down = k - 1;
	tr->tiers = tiers;
	tr->rails = f->rail_optimized && tiers > 1 ? t->nics_per_node : 1;
	tr->hosts_per_leaf = down / L;
	tr->up_per_leaf = tiers == 1 ? 0 : k - down;
	if (tr->hosts_per_leaf == 0) {
		tr->leaves = UINT32_MAX;
		return;
	}
	groups = tr->rails > 1 ?
		 topo_ceil_div(t->sys_nodes, tr->hosts_per_leaf) : 1;
	tr->leaves = tr->rails > 1 ? groups * tr->rails :
		     topo_ceil_div(ft->nics, tr->hosts_per_leaf);
}

/* Largest leaf count a tree of `tiers` tiers of radix k holds. */
static uint32_t leaf_limit(uint32_t tiers, uint32_t k)
{
	return tiers == 1 ? 1 : tiers == 2 ? k : k * (k / 2);
}

/* Pick the tiers (configured, or the fewest that fit: at least 2 when
 * rail-optimized), then the leaf of every NIC. */
static int shape(struct ft *ft, struct diag *d)
{
	struct topo_tree *tr = ft->tr;
	const struct fabric_spec *f = ft->f;
	uint32_t k = (uint32_t)f->switch_radix, tiers, e;

	tiers = f->tiers ? (uint32_t)f->tiers : f->rail_optimized ? 2 : 1;
	for (;;) {
		shape_for(ft, tiers);
		if (tr->leaves <= leaf_limit(tiers, k) || f->tiers || tiers == 3)
			break;
		tiers++;
	}
	if (tr->hosts_per_leaf == 0)
		return too_small(ft, d, (uint32_t)f->links_per_endpoint, k,
				 "ports per NIC");
	if (tr->leaves > leaf_limit(tiers, k))
		return too_small(ft, d, tr->leaves, leaf_limit(tiers, k),
				 "leaves");
	tr->leaf_of = topo_table(ft->t, ft->nics);
	if (!tr->leaf_of)
		return topo_oom(d);
	for (e = 0; e < ft->nics; e++) {
		uint32_t node = e / ft->t->nics_per_node;
		uint32_t rail = e % ft->t->nics_per_node;

		tr->leaf_of[e] = tr->rails > 1 ?
			(node / tr->hosts_per_leaf) * tr->rails + rail :
			e / tr->hosts_per_leaf;
	}
	return 0;
}

/* A scale-out link each way between node a (NIC or lower switch) and
 * switch b above it, of cap_Bps, at level lv of the tree under owner
 * (NIC, leaf or pod). */
static int link_pair(struct ft *ft, uint32_t a, uint32_t b, double cap_Bps,
		    enum topo_level lv, uint32_t owner, uint32_t *up,
		    uint32_t *down)
{
	if (topo_add_pair(ft->t, a, b, cap_Bps, ft->f->link->latency_s, TT_NET,
			  up, down) != 0)
		return -1;
	topo_set_level(ft->t, *up, lv, owner);
	topo_set_level(ft->t, *down, lv, owner);
	return 0;
}

static int add_leaves(struct ft *ft, struct diag *d)
{
	struct topo *t = ft->t;
	struct topo_tree *tr = ft->tr;
	double cap = topo_port_cap(ft->f->link, ft->f->links_per_endpoint, 1);
	uint32_t i;

	tr->leaf_node = topo_table(t, tr->leaves);
	t->nic_up = topo_table(t, ft->nics);
	t->nic_down = topo_table(t, ft->nics);
	if (!tr->leaf_node || !t->nic_up || !t->nic_down)
		return topo_oom(d);
	for (i = 0; i < tr->leaves; i++)
		if ((tr->leaf_node[i] = topo_add_node(t, TN_SWITCH,
				ft->f->switch_latency_s)) == TOPO_NONE)
			return topo_oom(d);
	for (i = 0; i < ft->nics; i++)
		if (link_pair(ft, t->nic0 + i, tr->leaf_node[tr->leaf_of[i]],
			      cap, TL_NIC, i, &t->nic_up[i],
			      &t->nic_down[i]) != 0)
			return topo_oom(d);
	return 0;
}

/* n upper switches; returns the first node id. */
static uint32_t add_switches(struct ft *ft, uint32_t n)
{
	uint32_t first = ft->t->nnodes, i;

	for (i = 0; i < n; i++)
		if (topo_add_node(ft->t, TN_SWITCH, ft->f->switch_latency_s) ==
		    TOPO_NONE)
			return TOPO_NONE;
	return first;
}

/* Leaves to spines (2 tiers) or to their pod's aggregation switches. */
static int add_leaf_uplinks(struct ft *ft, uint32_t group_leaves,
			    uint32_t first_upper, uint32_t trunk)
{
	struct topo_tree *tr = ft->tr;
	uint32_t u = tr->up_per_leaf, i, j;

	for (i = 0; i < tr->leaves; i++)
		for (j = 0; j < u; j++) {
			uint32_t upper = first_upper + (i / group_leaves) * u + j;

			if (link_pair(ft, tr->leaf_node[i], upper,
				      ft->port_Bps * trunk, TL_LEAF_UP, i,
				      &tr->leaf_up[i * u + j],
				      &tr->leaf_down[i * u + j]) != 0)
				return -1;
		}
	return 0;
}

static int two_tiers(struct ft *ft, struct diag *d, int spray)
{
	struct topo_tree *tr = ft->tr;
	uint32_t trunk = 1, first;

	if (spray) {
		trunk = tr->up_per_leaf;
		tr->up_per_leaf = 1;
	}
	tr->leaf_up = topo_table(ft->t, (size_t)tr->leaves * tr->up_per_leaf);
	tr->leaf_down = topo_table(ft->t, (size_t)tr->leaves * tr->up_per_leaf);
	first = add_switches(ft, tr->up_per_leaf);
	if (!tr->leaf_up || !tr->leaf_down || first == TOPO_NONE ||
	    add_leaf_uplinks(ft, tr->leaves, first, trunk) != 0)
		return topo_oom(d);
	return 0;
}

static int add_core(struct ft *ft, uint32_t pods, uint32_t trunk)
{
	struct topo_tree *tr = ft->tr;
	uint32_t u = tr->up_per_leaf, upa = tr->up_per_agg, p, j, c;
	uint32_t core0 = add_switches(ft, u * upa);

	if (core0 == TOPO_NONE)
		return -1;
	for (p = 0; p < pods; p++)
		for (j = 0; j < u; j++)
			for (c = 0; c < upa; c++) {
				uint32_t k = (p * u + j) * upa + c;

				if (link_pair(ft, tr->agg_node[p * u + j],
					      core0 + j * upa + c,
					      ft->port_Bps * trunk, TL_AGG_UP,
					      p, &tr->agg_up[k],
					      &tr->agg_down[k]) != 0)
					return -1;
			}
	return 0;
}

static int three_tiers(struct ft *ft, struct diag *d, int spray)
{
	struct topo *t = ft->t;
	struct topo_tree *tr = ft->tr;
	uint32_t k = (uint32_t)ft->f->switch_radix, pods, i;
	uint32_t leaf_trunk = 1, agg_trunk = 1;

	tr->leaves_per_pod = k / 2;
	tr->up_per_agg = k - k / 2;
	pods = topo_ceil_div(tr->leaves, tr->leaves_per_pod);
	tr->pods = pods;
	if (spray) {
		leaf_trunk = tr->up_per_leaf;
		agg_trunk = tr->up_per_leaf * tr->up_per_agg;
		tr->up_per_leaf = tr->up_per_agg = 1;
	}
	tr->leaf_up = topo_table(t, (size_t)tr->leaves * tr->up_per_leaf);
	tr->leaf_down = topo_table(t, (size_t)tr->leaves * tr->up_per_leaf);
	tr->agg_node = topo_table(t, (size_t)pods * tr->up_per_leaf);
	tr->agg_up = topo_table(t, (size_t)pods * tr->up_per_leaf * tr->up_per_agg);
	tr->agg_down = topo_table(t, (size_t)pods * tr->up_per_leaf * tr->up_per_agg);
	if (!tr->leaf_up || !tr->leaf_down || !tr->agg_node || !tr->agg_up ||
	    !tr->agg_down)
		return topo_oom(d);
	for (i = 0; i < pods * tr->up_per_leaf; i++)
		if ((tr->agg_node[i] = add_switches(ft, 1)) == TOPO_NONE)
			return topo_oom(d);
	if (add_leaf_uplinks(ft, tr->leaves_per_pod, tr->agg_node[0],
			     leaf_trunk) != 0 ||
	    add_core(ft, pods, agg_trunk) != 0)
		return topo_oom(d);
	return 0;
}

int topo_build_fat_tree(struct topo *t, const struct fabric_spec *f,
			struct diag *d)
{
	struct ft ft = { t, f, &t->tree, topo_port_cap(f->link, 1, 0),
			 t->sys_nodes * t->nics_per_node };
	int spray = f->load_balance == LB_SPRAY;

	if (f->topology != TOPO_FAT_TREE) {
		diag_error(d, NULL, 0, 0, "scale-out fabric '%s': expected "
			   "topology fat_tree, got %s", fname(f),
			   fabric_topology_names[f->topology]);
		return -1;
	}
	if (shape(&ft, d) != 0 || add_leaves(&ft, d) != 0)
		return -1;
	if (t->tree.tiers == 2)
		return two_tiers(&ft, d, spray);
	if (t->tree.tiers == 3)
		return three_tiers(&ft, d, spray);
	return 0;
}
