/*
 * net.h - the fabric model: a system's topology of links and switches,
 * flows sharing links by max-min fairness on the event engine, and
 * collective algorithms decomposed into flows.
 *
 * Two ways in:
 *   - inside a step simulation, as the executor's comm backend
 *     (net_comm_ops): collectives from every simulated rank share the
 *     links they actually cross, so contention between concurrent
 *     collectives falls out;
 *   - standalone (net_collective_time), for `llmsim collective`, the
 *     planner's estimates and validation against rccl-tests/nccl-tests.
 *
 * Depends on the core (sim.h, coll.h, spec_system.h, diag.h, mem.h).
 */
#ifndef LLMSIM_NET_H
#define LLMSIM_NET_H

#include <stdint.h>

#include "../coll.h"
#include "../sim.h"
#include "../spec_system.h"

struct diag;
struct net;

/* Build the topology for a system. sim may be NULL when the net is only
 * used through net_collective_time(). Returns NULL after reporting to d
 * (a system that cannot be built, e.g. more GPUs than the fabric allows)
 * or when out of memory. */
struct net *net_new(const struct system_spec *sys, struct sim *sim,
		    struct diag *d);
void net_free(struct net *n);

/* The executor's comm backend; ctx is the struct net (bound to its sim). */
extern const struct comm_ops net_comm_ops;

/* What one collective did. */
struct net_coll_result {
	double time_s;		/* s, from start to last byte */
	double algbw_Bps;	/* B/s, size / time */
	double busbw_Bps;	/* B/s, nccl-tests bus bandwidth for the op */
	const char *algorithm;	/* "ring", "tree", "nvls", ... (static) */
	const char *protocol;	/* "simple", "ll", "ll128" (static) */
};

/* Time one collective alone on an idle fabric. Returns 0, or -1 after
 * reporting to d (bad group, unsupported algorithm for the op, ...). */
int net_collective_time(struct net *n, const struct coll_desc *c,
			struct net_coll_result *out, struct diag *d);

#endif
