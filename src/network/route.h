/*
 * route.h - paths between GPUs on a topology.
 *
 * Within a node the path is the scale-up fabric's: the direct mesh link,
 * GPU -> switch -> GPU, or up and down a PCIe tree. Between nodes it is
 *
 *   GPU a -[scale-up]-> GPU owning NIC rail_out -[host PCIe]-> NIC
 *     -> leaf [-> spine/agg [-> core -> agg] -> leaf] -> NIC
 *     -[host PCIe]-> GPU owning NIC rail_in -[scale-up]-> GPU b
 *
 * where the bracketed scale-up hops exist only when a GPU does not own
 * the NIC used (PXN-style forwarding, or a ring channel entering a node
 * on another rail), and the fat tree is climbed only as high as the two
 * leaves' lowest common ancestor: up-down routing, which is shortest-path
 * routing in a fat tree. Among equal-cost uplinks (ECMP) the path takes
 * the one picked by a deterministic hash of (source NIC, destination NIC,
 * salt); with spraying the uplinks are one trunk (topo.h).
 *
 * Depends on topo.h.
 */
#ifndef LLMSIM_NETWORK_ROUTE_H
#define LLMSIM_NETWORK_ROUTE_H

#include <stdint.h>

#include "topo.h"

#define ROUTE_MAX_LINKS 40

struct route {
	uint32_t n;				/* links on the path */
	uint32_t link[ROUTE_MAX_LINKS];		/* link ids, in order */
	double latency_s;			/* s: links + switches crossed + NIC overhead */
	uint8_t transport;			/* enum topo_transport, the slowest crossed */
	uint8_t inter_node;			/* 1 if it crosses the scale-out network */
};

/*
 * The path from GPU a to GPU b (global ids, a != b). Between nodes it
 * leaves through NIC rail_out of a's node and enters through NIC rail_in
 * of b's node. salt varies the ECMP choice (a flow or channel id).
 */
void route_gpus(const struct topo *t, uint32_t a, uint32_t b,
		uint32_t rail_out, uint32_t rail_in, uint64_t salt,
		struct route *r);

/* A GPU's links into its scale-up switch and back: the path of its data
 * through an in-switch reduction (NVLS). The node must have a switch. */
void route_switch_loop(const struct topo *t, uint32_t gpu, struct route *r);

/* The rails a library picks for a point-to-point transfer a -> b: the
 * receiver's rail at both ends with PXN (pxn != 0), else each GPU's own
 * NIC. */
void route_rails(const struct topo *t, uint32_t a, uint32_t b, int pxn,
		 uint32_t *rail_out, uint32_t *rail_in);

/* Node (scale-up domain) and local index of a GPU. */
uint32_t route_node(const struct topo *t, uint32_t gpu);
uint32_t route_local(const struct topo *t, uint32_t gpu);

#endif
