/*
 * algo_phase.c - what every algorithm file builds its plan with (the
 * helpers declared in algo.h): phases and their latency, flows and the
 * paths of their segments, the chunked pipeline of a phase, the library's
 * per-step latency constants, ring orders and rails, and the bus-bandwidth
 * factor.
 *
 * A leaf of the algorithm files: algo.c, algo_ring.c and algo_rounds.c
 * call it; it calls none of them.
 */
#include "algo.h"

#include <string.h>

double algo_busbw_factor(enum coll_op op, uint32_t p)
{
	double q = p;

	switch (op) {
	case COLL_ALLREDUCE:
		return p > 1 ? 2 * (q - 1) / q : 1;
	case COLL_ALLGATHER:
	case COLL_REDUCESCATTER:
	case COLL_ALLTOALL:
		return p > 1 ? (q - 1) / q : 1;
	default:
		return 1;
	}
}

double algo_a2a_bytes(const struct algo_ctx *x, uint32_t i, uint32_t j)
{
	const struct coll_desc *c = x->c;

	if (c->a2a_B)
		return c->a2a_B[(size_t)i * c->ngpus + j];
	return c->bytes / c->ngpus;
}

void algo_phase(struct algo_ctx *x, struct plan *p)
{
	memset(x->phys_s, 0, sizeof(x->phys_s));
	memset(x->seen, 0, sizeof(x->seen));
	memset(&x->pipe, 0, sizeof(x->pipe));
	plan_phase(p, 0);
}

void algo_close_phase(struct algo_ctx *x, struct plan *p, double latency_s)
{
	plan_flow_end(p);
	if (!p->failed && p->nphases > 0) {
		p->phases[p->nphases - 1].latency_s = latency_s;
		p->phases[p->nphases - 1].pipe = x->pipe;
		p->phases[p->nphases - 1].pipe.t_min_s = x->t_real_s;
	}
}

void algo_close_phase_lat(struct algo_ctx *x, struct plan *p,
			  double (*lat)(const struct algo_ctx *))
{
	double l = lat(x), sel;

	algo_close_phase(x, p, l);
	x->select_view = 1;
	sel = lat(x);
	x->select_view = 0;
	if (!p->failed && p->nphases > 0)
		p->phases[p->nphases - 1].select_extra_s = sel - l;
}

void algo_pipe(struct algo_ctx *x, struct pipe_shape sh, uint32_t fallback)
{
	const struct coll_pipe_spec *ps = &x->as->pipe[x->proto];
	const struct coll_units_spec *u = &x->lib->kernel_units;
	int64_t k = ps->channels ? ps->channels :
		    x->g.nnodes > 1 ? u->scale_out : u->scale_up;
	double per_chan = sh.chunks;

	sh.chunks *= k > 0 ? (double)k : fallback;
	pipe_init(&x->pipe, ps, &sh);
	x->pipe.chan_chunks = per_chan;
	x->pipe.plan_B = x->c->bytes;
}

void algo_flow(struct algo_ctx *x, struct plan *p, double user_B)
{
	algo_flow_bound(x, p, user_B, 0);
}

void algo_flow_bound(struct algo_ctx *x, struct plan *p, double user_B,
		     double bound_Bps)
{
	double vol = user_B * x->inflate, b = bound_Bps > 0 ? bound_Bps : 0;

	if (x->t_min_s > 0 && (!(b > 0) || vol / x->t_min_s < b))
		b = vol / x->t_min_s;
	plan_flow(p, vol, b);
}

void algo_route(struct algo_ctx *x, struct plan *p, const struct route *r,
		double coef)
{
	plan_route(p, r, coef);
	x->seen[r->transport] = 1;
	if (r->latency_s > x->phys_s[r->transport])
		x->phys_s[r->transport] = r->latency_s;
}

void algo_seg(struct algo_ctx *x, struct plan *p, uint32_t a, uint32_t b,
	      uint32_t rail_out, uint32_t rail_in, double coef)
{
	struct route r;
	uint32_t ga = group_gpu(&x->g, a), gb = group_gpu(&x->g, b);

	if (ga == gb)
		return;
	route_gpus(x->t, ga, gb, rail_out, rail_in, (uint64_t)a << 32 | b, &r);
	algo_route(x, p, &r, coef);
}

void algo_p2p(struct algo_ctx *x, struct plan *p, uint32_t a, uint32_t b,
	      double coef)
{
	uint32_t ro, ri;

	route_rails(x->t, group_gpu(&x->g, a), group_gpu(&x->g, b),
		    x->lib->pxn, &ro, &ri);
	algo_seg(x, p, a, b, ro, ri, coef);
}

uint32_t algo_rail(const struct algo_ctx *x, uint32_t r)
{
	return topo_rail_of(x->t, route_local(x->t, group_gpu(&x->g, r)));
}

/* Whether the phase runs at the GPU's own LL costs (algo.h algo_floor):
 * a ring (or its chain) or a tree with LL, outside the tuner's view. A
 * tree's steps inside a node are a chain of the same LL primitives
 * (NVIDIA/nccl v2.26.2-1 src/device/all_reduce.h runTreeSplit, LL:
 * directRecvReduceDirectSend up the node's chain, directRecvCopyDirectSend
 * down it; prims_ll.h), launched as the ring's kernel is; its network
 * hops keep the library's hop_net. */
static int gpu_floor(const struct algo_ctx *x)
{
	return !x->select_view && x->proto == PROTO_LL &&
	       (x->algo == ALGO_RING || x->algo == ALGO_TREE);
}

double algo_base(const struct algo_ctx *x)
{
	if (gpu_floor(x) && x->floor.base_s > 0)
		return x->floor.base_s;
	return x->as->base.s[x->proto];
}

double algo_hop(const struct algo_ctx *x, int tr)
{
	const struct coll_proto_times *h = tr == TT_NET ? &x->as->hop_net :
					   tr == TT_PCIE ? &x->as->hop_pcie :
							   &x->as->hop_scale_up;
	double v = h->s[x->proto];
	const struct coll_proto_times *sel = tr == TT_NET ?
		&x->as->select_hop_net : tr == TT_SCALE_UP ?
		&x->as->select_hop_scale_up : NULL;

	/* The library's tuner may time a hop otherwise than it runs (RCCL's
	 * Ring/Simple NET 320 us, a knob that steers it to trees). */
	if (x->select_view && sel && sel->s[x->proto] > 0)
		v = sel->s[x->proto];
	else if (tr == TT_SCALE_UP && gpu_floor(x) && x->floor.step_s > 0)
		v = x->floor.step_s;
	if (x->phys_s[tr] > v)
		v = x->phys_s[tr];
	/* NCCL and RCCL floor a ring's intra-node steps at the net overhead
	 * when the ring spans nodes ("inter-node rings still have to launch
	 * nsteps * net overhead", src/graph/tuning.cc, ncclTopoTuneModel);
	 * trees and the other algorithms keep their intra-node latency. */
	if (tr != TT_NET && x->g.nnodes > 1 && x->algo == ALGO_RING &&
	    x->lib->net_overhead.s[x->proto] > v)
		v = x->lib->net_overhead.s[x->proto];
	return v;
}

double algo_hop_intra(const struct algo_ctx *x)
{
	return algo_hop(x, x->seen[TT_PCIE] ? TT_PCIE : TT_SCALE_UP);
}

double algo_step(const struct algo_ctx *x)
{
	if (x->seen[TT_NET])
		return algo_hop(x, TT_NET);
	if (x->seen[TT_PCIE])
		return algo_hop(x, TT_PCIE);
	return x->seen[TT_SCALE_UP] ? algo_hop(x, TT_SCALE_UP) : 0;
}

uint32_t algo_node_rings(struct algo_ctx *x, uint32_t k)
{
	uint32_t m;
	int n = 1;

	group_members(&x->g, k, &m);
	if (x->t->up_topology == TOPO_MESH && m >= 2 &&
	    ham_get(x->ham, m, &n) == NULL)
		return 1;
	return (uint32_t)n;
}

int algo_order(struct algo_ctx *x, uint32_t k, uint32_t c, uint32_t rail,
	       uint32_t *out)
{
	uint32_t m, e, i, at = 0;
	const uint32_t *mem = group_members(&x->g, k, &m);
	uint32_t owner = topo_rail_owner(x->t, rail);
	const uint32_t *cyc = NULL;
	int n = 0;

	e = c % m;
	for (i = 0; i < m; i++)
		if (route_local(x->t, group_gpu(&x->g, mem[i])) == owner)
			e = i;
	if (x->t->up_topology == TOPO_MESH && m >= 2) {
		cyc = ham_get(x->ham, m, &n);
		if (!cyc)
			return -1;
		cyc += (size_t)(c % (uint32_t)n) * m;
		while (cyc[at] != e)
			at++;
	}
	for (i = 0; i < m; i++)
		out[i] = cyc ? mem[cyc[(at + i) % m]] : mem[(e + i) % m];
	return 0;
}

uint32_t algo_rails(const struct algo_ctx *x, uint32_t *rails)
{
	uint32_t m, i, r, n = 0;
	const uint32_t *mem = group_members(&x->g, 0, &m);
	uint32_t nics = x->t->nics_per_node;

	for (r = 0; r < nics; r++)
		for (i = 0; i < m; i++)
			if (algo_rail(x, mem[i]) == r) {
				rails[n++] = r;
				break;
			}
	return n;
}
