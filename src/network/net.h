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
 * Algorithm and protocol: coll_desc.algo / .proto (enum coll_algo /
 * coll_proto of spec_collectives.h) when >= 0, else the system's
 * `algorithm` / `protocol` when set, else the library's choice: every
 * algorithm and protocol the library offers for the op is timed on the
 * idle fabric as the library's own cost model sees it (latency constants
 * and bandwidth, without the kernels' loop costs of pipe.h) and the
 * fastest wins, as NCCL and RCCL pick by their tuning model. The chosen
 * one is then timed in full.
 *
 * Replicas (coll_desc.replicas = R > 1: R identical groups run at once,
 * one simulated): the others are taken to sit on other endpoints (other
 * rails or nodes), so they share no link that ends at a GPU or NIC; on
 * scale-out links between switches their traffic is charged, assuming
 * the R groups spread evenly over the system (crun.c has the formula).
 *
 * Depends on engine/sim.h and engine/comm.h (it is a comm backend),
 * base/coll.h, config/spec_system.h, base/diag.h, base/mem.h.
 */
#ifndef LLMSIM_NETWORK_NET_H
#define LLMSIM_NETWORK_NET_H

#include <stddef.h>
#include <stdint.h>

#include "base/coll.h"
#include "engine/comm.h"
#include "engine/sim.h"
#include "config/spec_system.h"

struct diag;
struct net;

/* Build the topology for a system. sim may be NULL when the net is only
 * used through net_collective_time(). Returns NULL after reporting to d
 * (a system that cannot be built, e.g. more GPUs than the fabric allows)
 * or when out of memory. */
struct net *net_new(const struct system_spec *sys, struct sim *sim,
		    struct diag *d);
void net_free(struct net *n);

/*
 * Bind n to another step's engine, keeping its topology and everything
 * it has remembered (plans, choices, idle times), so many steps on one
 * system build them once (the planner's full tier). The engine it was
 * bound to must have finished (every collective done). Returns 0, or -1
 * when out of memory (n is then bound to no engine).
 */
int net_attach(struct net *n, struct sim *sim);

/* The executor's comm backend; ctx is the struct net (bound to its sim).
 * A collective that cannot be run (bad descriptor, no algorithm applies,
 * out of memory) completes at once and makes net_failed() true, with the
 * reason in net_error(). */
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

/* Counters of the fabric model inside a step simulation. */
struct net_stats {
	uint64_t collectives;	/* started through net_comm_ops */
	uint64_t flows;		/* flows started */
	uint64_t solves;	/* max-min re-solves */
	uint64_t resolved;	/* flows re-solved, summed over re-solves */
	uint64_t plan_hits;	/* plans reused from the cache */
	uint64_t replays;	/* collectives replayed from their idle
				 * trajectory (links found idle) */
	uint64_t resumed;	/* of those, turned into flows when another
				 * flow needed one of their links */
	uint64_t reheld;	/* of those, started on links the last replay
				 * on the same links left parked (no pass over
				 * them) */
	uint64_t reclaimed;	/* of those, after taking back the few links
				 * another replay had taken meanwhile */
	uint64_t detached;	/* of the replays, latency-bound ones that
				 * held no link (crun.h CRUN_DETACH_SHARE) */
	uint64_t guests;	/* flows that ran and ended as a replay's
				 * guest, outside the solver (flow.c) */
	uint64_t host_kept;	/* guests' links whose sums of a replay's
				 * flows were kept from an earlier guest's in
				 * the same state of the replay (crun_host.c) */
	uint64_t late;		/* of the replays, late ones: links busy
				 * at the start, free when its first flows
				 * were due (crun.c "Late replays") */
	uint64_t paired;	/* of the replays, late runs replayed with
				 * the replay that held their links
				 * (crun_pair.c) */
	uint64_t pairs_recorded;	/* pairs recorded on the idle engine */
	uint64_t pairs_evicted;	/* pairs that became flows together */
};

void net_get_stats(const struct net *n, struct net_stats *out);

/* Replay collectives whose links are idle from their idle trajectory
 * (1, the default) or always run them as flows (0: tests compare). The
 * results are the same; only the work differs; except that a latency-
 * bound collective (its bytes take at most CRUN_DETACH_SHARE of its
 * time on any link, crun.h) replays over busy links too, ignoring that little
 * sharing. */
void net_set_replay(struct net *n, int on);
/* Pair replays (network/crun_pair.c; on in a new net): a late run kept
 * from its links by a running replay replays with it as a pair. */
void net_set_pairs(struct net *n, int on);
/* The bytes the recorded pairs' trajectories may hold before no new pair
 * is recorded (its late run then runs as flows); 0: the default,
 * crun_pair.c PAIRS_MAX_B (tests set a small one). */
void net_set_pairs_max_bytes(struct net *n, size_t bytes);

/* Let a short flow on a running replay's links be its guest instead of
 * evicting it (1, the default; flow.c says when) or never (0: tests
 * compare). The same ns either way. */
void net_set_guests(struct net *n, int on);

/* Non-zero once a collective started through net_comm_ops failed; the
 * step's result is then not to be trusted. net_error() says why. */
int net_failed(const struct net *n);
const char *net_error(const struct net *n);

#endif
