/*
 * plan.h - a collective as phases of flows, ready to run.
 *
 * A plan is what an algorithm makes of a collective on a topology: a
 * sequence of phases; each phase waits its latency, then starts its flows
 * at once and ends when the last one has finished. A flow is a set of
 * (link, coefficient) elements and a volume: a pipelined ring channel is
 * one flow over every link of the ring (its segments move the same bytes
 * at the same pace), a point-to-point send is one flow over its path.
 *
 * Plans are data: built once per (group, op, algorithm, protocol), with
 * volumes per byte of the collective's size (runs scale them), and run
 * any number of times (net.c caches them). What does not scale with the
 * size (the library's loops of chunks: sync stops and pipeline fill) is
 * described per phase (pipe.h) and costed by the run.
 *
 * Depends on pipe.h, route.h, mem.h.
 */
#ifndef LLMSIM_NETWORK_PLAN_H
#define LLMSIM_NETWORK_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "pipe.h"
#include "route.h"

struct plan_flow {
	uint32_t first, n;	/* its elements: elem_link/elem_coef[first .. first+n) */
	double volume_B;	/* B the flow moves (per unit coefficient) */
	double bound_Bps;	/* B/s cap; 0 = none */
};

struct plan_phase {
	double latency_s;	/* s before its flows start */
	double select_extra_s;	/* s the library's tuner adds to latency_s, for
				 * its choice only (select_hop_*); 0 = none */
	double per_byte_s;	/* s per byte of the collective before them (a
				 * library step that is not a transfer) */
	uint32_t first, n;	/* its flows: flows[first .. first+n) */
	struct pipe pipe;	/* the library's chunked pipeline; costed per size by runs */
};

struct plan {
	int algo;			/* enum coll_algo */
	int proto;			/* enum coll_proto */
	double select_r;		/* factor on its bandwidth in the library's
					 * choice only (NVLS: its tuner's view,
					 * coll_lib_nvls_select_ratio); 0 = none */
	struct plan_phase *phases;
	uint32_t nphases;
	size_t capphases;
	struct plan_flow *flows;
	uint32_t nflows;
	size_t capflows;
	uint32_t *elem_link;
	double *elem_coef;
	uint32_t nelems;
	size_t capelems, capcoef;
	uint32_t *links;		/* the distinct links of every flow,
					 * ascending (plan_finish); NULL:
					 * not made */
	uint32_t nlinks;
	/* plan_flow_end's scratch for long flows, by link id (room for
	 * capat ids; freed by plan_finish): 1 + the link's merged entry
	 * while its flow ends, else 0; and a bit per id, set meanwhile */
	uint32_t *at;
	uint64_t *seen;
	size_t capat;
	int open;			/* a flow is being built */
	int failed;			/* an allocation failed while building */
};

void plan_init(struct plan *p, int algo, int proto);
void plan_release(struct plan *p);

/* Open a phase that starts latency_s after the previous one ends
 * (closing any open flow). */
void plan_phase(struct plan *p, double latency_s);

/* Open a flow of volume_B in the current phase, at most bound_Bps
 * (closing any open flow). */
void plan_flow(struct plan *p, double volume_B, double bound_Bps);

/* Add a route's links to the current flow, each with coefficient coef
 * (a link already in the flow adds to its coefficient). */
void plan_route(struct plan *p, const struct route *r, double coef);

/* Close the open flow, if any: merge repeated links. Empty flows are
 * dropped. */
void plan_flow_end(struct plan *p);

/* Make the plan's set of distinct links (a replay holds them; most
 * links of an all-to-all's plan are in several of its flows). */
void plan_finish(struct plan *p);

/* The links the plan's flows use, each once if plan_finish() made the
 * set, else every element's (repeats do not change who holds a link or
 * whether it is idle). */
const uint32_t *plan_links(const struct plan *p, uint32_t *n);

#endif
