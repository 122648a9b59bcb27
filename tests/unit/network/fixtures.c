/*
 * fixtures.c - see fixtures.h.
 */
#include "fixtures.h"

#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/schema.h"

void fx_lib_ideal(struct coll_lib_spec *lib)
{
	int a;

	memset(lib, 0, sizeof(*lib));
	lib->name = "ideal";
	lib->pxn = 1;
	lib->max_channels = 64;
	lib->proto[PROTO_SIMPLE].bandwidth_factor = 1;
	for (a = 0; a < ALGO_COUNT; a++)
		lib->algo[a].protocols.on[PROTO_SIMPLE] = 1;
}

static void fixture_link(struct link_spec *l, const char *name, int proto,
		 double lane_Bps, int64_t lanes)
{
	memset(l, 0, sizeof(*l));
	l->name = name;
	l->protocol = proto;
	l->lane_rate_Bps = lane_Bps;
	l->lanes = lanes;
	l->line_code = 1;
	l->sustained = 1;
}

static void scale_out(struct fx *f)
{
	fixture_link(&f->out_link, "net50", LINK_ROCE, 50e9, 1);
	memset(&f->out, 0, sizeof(f->out));
	f->out.name = "fat16";
	f->out.topology = TOPO_FAT_TREE;
	f->out.link = &f->out_link;
	f->out.links_per_endpoint = 1;
	f->out.switch_radix = 16;
	f->out.tiers = 2;
	f->out.oversubscription = 1;
	f->out.rail_optimized = 1;
	f->out.load_balance = LB_ECMP;
}

static void fixture_system(struct fx *f, int64_t nodes)
{
	memset(&f->gpu, 0, sizeof(f->gpu));
	f->gpu.name = "gpu";
	memset(&f->sys, 0, sizeof(f->sys));
	f->sys.name = "fixture";
	f->sys.gpu = &f->gpu;
	f->sys.nodes = nodes;
	f->sys.gpus_per_node = 8;
	f->sys.scale_up = &f->up;
	f->sys.scale_out = &f->out;
	f->sys.nics_per_node = 8;
	f->sys.collectives = &f->lib;
	f->sys.algorithm = -1;
	f->sys.protocol = -1;
}

void fx_mesh(struct fx *f, int64_t nodes)
{
	fixture_link(&f->up_link, "mesh64", LINK_XGMI, 64e9, 1);
	memset(&f->up, 0, sizeof(f->up));
	f->up.name = "mesh";
	f->up.topology = TOPO_MESH;
	f->up.link = &f->up_link;
	f->up.links_per_endpoint = 7;
	scale_out(f);
	fx_lib_ideal(&f->lib);
	fixture_system(f, nodes);
}

void fx_switch(struct fx *f, int64_t nodes)
{
	fixture_link(&f->up_link, "sw25", LINK_NVLINK, 25e9, 1);
	memset(&f->up, 0, sizeof(f->up));
	f->up.name = "switch";
	f->up.topology = TOPO_SWITCH;
	f->up.link = &f->up_link;
	f->up.links_per_endpoint = 18;
	f->up.in_switch_reduction = 1;
	f->up.reduction_efficiency = 1;
	scale_out(f);
	fx_lib_ideal(&f->lib);
	fixture_system(f, nodes);
}

void *fx_load(struct arena *a, const struct schema *s, const char *name,
	      const char *const *sets, size_t nsets)
{
	struct diag d;
	struct config_ctx cx = { a, &d, "." };
	void *obj = arena_alloc(a, s->size);

	diag_init(&d, stderr);
	cr_assert_not_null(obj);
	cr_assert_eq(config_load(&cx, s, name, sets, nsets, obj), 0, "%s '%s'",
		     s->kind, name);
	return obj;
}

struct coll_algo_spec *fx_switch_ring_latency(struct fx *f)
{
	struct coll_algo_spec *ring = &f->lib.algo[ALGO_RING];

	fx_switch(f, 2);
	ring->base.s[PROTO_SIMPLE] = 10e-6;
	ring->hop_scale_up.s[PROTO_SIMPLE] = 1e-6;
	ring->hop_net.s[PROTO_SIMPLE] = 5e-6;
	return ring;
}
