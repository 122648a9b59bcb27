/*
 * run.h - running a plan on the engine, and charging replica groups.
 *
 * A run walks the plan's phases: wait the phase's latency, start its
 * flows together, and when the last one ends go on to the next phase;
 * after the last, call done(token) from that event.
 *
 * Depends on plan.h, pcache.h, flow.h, sim.h.
 */
#ifndef LLMSIM_RUN_H
#define LLMSIM_RUN_H

#include <stdint.h>

#include "../sim.h"
#include "flow.h"
#include "pcache.h"

/* Run cp (taking a reference for the run's life) on sim through fn.
 * Returns 0, or -1 when out of memory (done is then never called). */
int run_start(struct sim *sim, struct flownet *fn, struct cplan *cp,
	      void (*done)(void *token), void *token);

/*
 * Charge R identical groups (one simulated) on the scale-out links
 * between switches of plan p, whose group has group_gpus GPUs: every
 * coefficient on a leaf or aggregation uplink is multiplied (see run.c).
 * Returns 0 or -1 when out of memory.
 */
int run_charge_replicas(const struct topo *t, struct plan *p, uint32_t R,
			uint32_t group_gpus);

#endif
