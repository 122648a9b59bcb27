/*
 * crun.h - a collective's plan running on the engine (a crun), and
 * charging replica groups.
 *
 * A run walks the plan's phases: wait the phase's latency, start its
 * flows together, and when the last one ends go on to the next phase;
 * after the last, call done(token) from that event. A full run adds
 * each phase's pipeline costs for the collective's size (pipe.h): sync
 * stops to the latency, fill to the volumes, the sustained-bandwidth
 * bound to the flows.
 *
 * Depends on plan.h, pcache.h, flow.h, sim.h.
 */
#ifndef LLMSIM_NETWORK_CRUN_H
#define LLMSIM_NETWORK_CRUN_H

#include <stdint.h>

#include "engine/sim.h"
#include "flow.h"
#include "pcache.h"

/* The runs in flight on one engine, so that an engine stopped early
 * (out of memory) frees them. Zero-initialize. */
struct crun_set {
	struct crun *live;	/* doubly linked */
};

/* Free every run still in flight (their done() is never called). */
void crun_set_release(struct crun_set *rs);

/* How a run costs a plan. */
enum crun_view {
	CRUN_FULL,	/* everything: the kernels' pipelines (pipe.h) too */
	CRUN_LIBRARY	/* as the library's tuning model sees it: no pipeline costs */
};

/* Run cp (taking a reference for the run's life) on sim through fn,
 * its flow volumes multiplied by scale (the size for a per-byte plan),
 * costed as view says, keeping it in rs while in flight. Returns 0, or
 * -1 when out of memory (done is then never called). */
int crun_start(struct crun_set *rs, struct sim *sim, struct flownet *fn,
	       struct cplan *cp, double scale, enum crun_view view,
	       void (*done)(void *token), void *token);

/*
 * Charge R identical groups (one simulated) on the scale-out links
 * between switches of plan p, whose group has group_gpus GPUs: every
 * coefficient on a leaf or aggregation uplink is multiplied (see crun.c).
 * Returns 0 or -1 when out of memory.
 */
int crun_charge_replicas(const struct topo *t, struct plan *p, uint32_t R,
			 uint32_t group_gpus);

#endif
