/*
 * algo.h - collective algorithms as plans of flows (plan.h), with the
 * library's latency model.
 *
 * An algorithm turns (op, group, size, protocol) into phases of flows on
 * the topology. Bandwidth comes from the flows sharing links (max-min);
 * latency comes from the library's constants (spec_collectives.h), the
 * way NCCL's tuning model charges it (hardware-specs 4.1):
 *
 *   ring     base + (S - I) * h_intra + I * h_inter,
 *            S = 2(p-1), I = 2(N-1) for all-reduce; S = p-1, I = N-1 for
 *            all-gather, reduce-scatter, broadcast, reduce
 *   tree     base + 2 * ((ppn-1) * h_intra + floor(log2 N) * h_inter)
 *   direct, p2p   base + one step; nvls: base + one scale-up step
 *   rhd      base + one step per exchange round
 *   pairwise base + one step per round (p-1 rounds)
 *   hierarchical (all-reduce) ring latencies of its three phases
 *
 * with p ranks on N nodes and ppn ranks per node. A step's latency h is
 * the library's per-hop constant for the transport it crosses (scale-up,
 * PCIe, network) and protocol, never less than the physical path
 * (links + switches + NIC overhead); steps inside a node of a group that
 * spans nodes are floored at the library's net_overhead.
 *
 * The protocol's bandwidth factor inflates every flow's bytes (LL moves
 * 8 B lines carrying 4 B of data: twice the bytes); the library's
 * max_busbw becomes a per-flow bound so the bus bandwidth cannot exceed
 * it. Rings (all-reduce, all-gather, reduce-scatter) and NVLS describe
 * the library's loops of chunks on their phase (pipe.h): sync stops per
 * loop and pipeline fill, costed per size when the plan runs.
 *
 * Depends on plan.h, pipe.h, group.h, ham.h, route.h, topo.h, coll.h,
 * spec_collectives.h.
 */
#ifndef LLMSIM_NETWORK_ALGO_H
#define LLMSIM_NETWORK_ALGO_H

#include <stdint.h>

#include "base/coll.h"
#include "config/spec_collectives.h"
#include "group.h"
#include "ham.h"
#include "plan.h"

/* The GPU's own cost of a ring / tree LL collective kernel (its gpu.yaml
 * collective_launch and collective_ll_step), where the library runs at
 * them (its gpu_floor): the ring's and the tree's LL phases run at
 * base_s + steps x step_s over the scale-up fabric (a tree's network
 * hops at the library's hop_net), in place of the library's base and
 * hop_scale_up, which its tuner keeps. 0 = the library's value. */
struct algo_floor {
	double base_s, step_s;
	double chan_Bps;	/* B/s, a ring LL channel's rate a call (gpu
				 * collective_ll_channel); 0 = none */
};

struct algo_ctx {
	const struct topo *t;
	const struct coll_lib_spec *lib;
	const struct coll_algo_spec *as;	/* lib->algo[algo] */
	const struct coll_desc *c;
	struct ham_cache *ham;
	int algo, proto;
	struct group g;
	double inflate;			/* line bytes per user byte: 1 / bandwidth_factor */
	double t_min_s;			/* s, bandwidth-time floor from max_busbw; 0 = none */
	double t_real_s;		/* s, the same from sustained_busbw (unseen by the choice) */
	double t_chan_s;		/* s, the same for one channel at channel_busbw; 0 = none */
	int t_chan_all;			/* t_chan_s bounds every running channel, cut or not (ring_ll_channel) */
	double phys_s[3];		/* s, longest path latency per transport, this phase */
	int seen[3];			/* transports crossed in this phase */
	int select_view;		/* hops as the library's tuner sees them (select_hop_*) */
	struct algo_floor floor;	/* the GPU's ring / tree LL costs; zeros = none */
	struct pipe pipe;		/* this phase's chunked pipeline (algo_pipe) */
	const char *why;		/* why the algorithm does not apply */
};

/*
 * Build the plan of algorithm algo with protocol proto for collective c
 * (floor: the GPU's ring LL costs, or NULL for the library's).
 * Returns 0; 1 when the algorithm does not apply to this op, group or
 * topology (*why says why); -1 when out of memory; -2 when c itself is
 * bad (*why says why).
 */
int algo_build(const struct topo *t, const struct coll_lib_spec *lib,
	       const struct algo_floor *floor, struct ham_cache *ham,
	       const struct coll_desc *c, int algo, int proto,
	       struct plan *out, const char **why);

/*
 * The plan of an all-to-all on a non-library path (c->path: GPU-initiated
 * dispatch/combine, algo_path.c): one phase, the path's latencies.
 * Returns 0; 1 when the op is not an all-to-all (*why); -1 when out of
 * memory; -2 when c is bad.
 */
int algo_path_build(const struct topo *t, const struct coll_lib_spec *lib,
		    struct ham_cache *ham, const struct coll_desc *c,
		    struct plan *out, const char **why);

/* nccl-tests bus-bandwidth factor of an op over p ranks, busbw = algbw *
 * factor: all-reduce 2(p-1)/p; all-gather, reduce-scatter, all-to-all
 * (p-1)/p; broadcast, reduce, send/recv (and p = 1) 1. It is also the
 * bytes a ring moves over each of its links per user byte. */
double algo_busbw_factor(enum coll_op op, uint32_t p);

/* Bytes each rank i sends to rank j in an all-to-all. */
double algo_a2a_bytes(const struct algo_ctx *x, uint32_t i, uint32_t j);

/* ---- helpers shared by the algorithm files (algo_phase.c) ---- */

/* Open a phase (latency set by algo_close_phase). */
void algo_phase(struct algo_ctx *x, struct plan *p);
/* Set the current phase's latency to base (if first) + steps * step. */
void algo_close_phase(struct algo_ctx *x, struct plan *p, double latency_s);
/* Close the phase at lat(x), and record what lat(x) is in the library's
 * tuner's view (select_hop_*) as the phase's select_extra_s. */
void algo_close_phase_lat(struct algo_ctx *x, struct plan *p,
			  double (*lat)(const struct algo_ctx *));
/* Open a flow moving user_B user bytes per unit coefficient. */
void algo_flow(struct algo_ctx *x, struct plan *p, double user_B);
/* The same with a rate bound of its own (B/s of line bytes; 0 = none) as
 * well as the kernels' floor (t_min_s). */
void algo_flow_bound(struct algo_ctx *x, struct plan *p, double user_B,
		     double bound_Bps);
/* Add the path from rank a to rank b to the current flow, leaving and
 * entering nodes through the given rails. */
void algo_seg(struct algo_ctx *x, struct plan *p, uint32_t a, uint32_t b,
	      uint32_t rail_out, uint32_t rail_in, double coef);
/* Add route r to the current flow; the phase has now crossed its
 * transport, at least as slowly as r's latency. */
void algo_route(struct algo_ctx *x, struct plan *p, const struct route *r,
		double coef);
/* algo_seg with the library's rail choice for a point-to-point send. */
void algo_p2p(struct algo_ctx *x, struct plan *p, uint32_t a, uint32_t b,
	      double coef);
/* The rail (NIC of its node) rank r's traffic uses by default. */
uint32_t algo_rail(const struct algo_ctx *x, uint32_t r);

/* Describe the current phase's chunked pipeline from the library's spec
 * for the protocol and the algorithm's shape, whose chunks are per
 * channel here; the kernel runs the spec's channels, else the kernel
 * units the group's collective holds, else fallback. */
void algo_pipe(struct algo_ctx *x, struct pipe_shape sh, uint32_t fallback);

/* Whether lib runs algo with proto for op; when not, 0 and *why says
 * why. */
int algo_offered(const struct coll_lib_spec *lib, int algo, int proto,
		 enum coll_op op, const char **why);

/* The node-count class of the libraries' tuning tables for a group
 * spanning nnodes nodes (1, 2, more than 2). */
enum coll_scale algo_scale(uint32_t nnodes);

/* Latency constants (s) for the current protocol. */
double algo_base(const struct algo_ctx *x);
/* One step over transport tr, floored at the physical latency seen (and,
 * for a ring's intra-node steps when it spans nodes, at the library's
 * net_overhead, as NCCL's and RCCL's tuning models charge it). */
double algo_hop(const struct algo_ctx *x, int tr);
/* One step of the current phase: the slowest transport it crossed. */
double algo_step(const struct algo_ctx *x);
/* The intra-node step (scale-up or PCIe, whichever the phase crossed). */
double algo_hop_intra(const struct algo_ctx *x);

/* Parent of node k in tree t (0 or 1) of NCCL's double binary tree over
 * n nodes (algo_ring.c); UINT32_MAX at a root. */
uint32_t algo_tree_parent(uint32_t k, uint32_t n, uint32_t t);
/* floor(log2(n)), 0 for n <= 1. */
uint32_t algo_floor_log2(uint32_t n);

/* Ranks of group node k in channel c's order, starting at its entry
 * rank (the owner of rail, else the (c mod m)-th member): on a mesh the
 * channel's Hamiltonian cycle, elsewhere the members rotated. out has
 * room for ppn_max ranks; returns 0 or -1 when out of memory. */
int algo_order(struct algo_ctx *x, uint32_t k, uint32_t c, uint32_t rail,
	       uint32_t *out);
/* Disjoint rings a node's members can form: Hamiltonian cycles on a mesh,
 * else 1. */
uint32_t algo_node_rings(struct algo_ctx *x, uint32_t k);
/* Distinct rails of group node 0's members, ascending, into rails (room
 * for nics_per_node); returns how many. */
uint32_t algo_rails(const struct algo_ctx *x, uint32_t *rails);

/* Algorithm files. Each returns 0, 1 (does not apply, x->why set) or -1. */
int algo_ring(struct algo_ctx *x, struct plan *p);
int algo_tree(struct algo_ctx *x, struct plan *p);
int algo_hier(struct algo_ctx *x, struct plan *p);
int algo_direct(struct algo_ctx *x, struct plan *p);
int algo_nvls(struct algo_ctx *x, struct plan *p);
int algo_nvls_tree(struct algo_ctx *x, struct plan *p);
int algo_rhd(struct algo_ctx *x, struct plan *p);
int algo_pairwise(struct algo_ctx *x, struct plan *p);
int algo_hier_a2a(struct algo_ctx *x, struct plan *p);

#endif
