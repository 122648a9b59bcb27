/*
 * crun_impl.h - a run of a plan's phases on the engine, as crun.c (flows,
 * replay) and crun_record.c (recording a trajectory) share it. Not for
 * other files: crun.h is the interface.
 */
#ifndef LLMSIM_NETWORK_CRUN_IMPL_H
#define LLMSIM_NETWORK_CRUN_IMPL_H

#include "crun.h"

struct crun {
	struct crun_set *set;
	struct crun *prev, *next;	/* in set->live */
	struct sim *sim;
	struct flownet *fn;
	struct cplan *cp;
	double scale;		/* flow volumes times this */
	double size_B;		/* B, the collective's size (phases' pipelines); 0 = unknown */
	int full;		/* cost the phases' pipelines (CRUN_FULL) */
	uint32_t phase;		/* current phase */
	uint32_t pending;	/* its flows not yet done */
	void (*done)(void *token);
	void *token;
	struct recorder *rec;	/* recording its trajectory, or NULL */
	const struct ctraj *tr;	/* replaying it (links held), or NULL */
	units_ns_t t0;		/* ns, when a replay or recording started */
	sim_id end_ev;		/* a replay's end event */
	int parked;		/* a replay over, its links still held: in
				 * set->park */
	uint32_t *lost;		/* parked: links another took (take()),
				 * taken back before the next replay */
	uint32_t nlost, caplost;
	const struct ctraj *late;	/* a late replay's trajectory, tried
					 * when phase 0's flows are due */
	units_ns_t late_t0;	/* ns, when that run started */
	uint64_t hid;		/* a replay: its start's number (set->
				 * hid_next), the key of set's hc_ state */
	struct crun *mate;	/* a pair replay's other run while both run
				 * (crun_pair.c), or NULL */
};

/* A flow of a recorded run: its done argument. */
struct rec_flow {
	struct crun *r;
	uint32_t i;		/* plan flow index */
};

/* A rate change as it is recorded, before sorting by flow. */
struct raw_rec {
	uint32_t i;
	struct ctraj_rec rec;
};

struct recorder {
	struct sim *sim;
	units_ns_t t0;		/* ns, when the recorded run started */
	struct ctraj *tr;
	struct rec_flow *rf;	/* per plan flow */
	struct raw_rec *raw;
	uint32_t nraw, capraw;
	units_ns_t done_ns;	/* ns when done was called; -1 before */
	int failed;
};

/* A replay's end event (crun.c). */
void crun_replay_end(struct sim *sim, void *arg);

/* A pair of runs as the flow-level run has them: host, replaying htr
 * alone on its links from its start, and the late run of rcp (replay
 * rtr kept from its links by host's) whose first flows start dt ns
 * after host's start, evicting it (crun_pair.c). */
struct crun_pair_key {
	struct cplan *hcp, *rcp;
	double hscale, rscale;
	const struct ctraj *htr, *rtr;
	units_ns_t dt;
};

/* Run the pair k on sim / fn (idle: nothing in flight) to its end,
 * recording both runs' trajectories (host's: htr's before dt, then what
 * it did beside the late run). 0, or -1 (memory, or the run was not
 * what k says). crun_record.c. */
int crun_record_pair(struct crun_set *rs, struct sim *sim,
		     struct flownet *fn, const struct crun_pair_key *k,
		     struct ctraj **host, struct ctraj **late);


/* The last rate change of plan flow i before dt (ns after the start). */
const struct ctraj_rec *crun_state_at(const struct ctraj *tr, uint32_t i,
				      units_ns_t dt);

/* The phase of replay r dt ns after its start, and in *pending how many
 * of its flows have not ended before dt (crun_host.c). */
uint32_t crun_phase_at(const struct crun *r, units_ns_t dt,
		       uint32_t *pending);

/* flow_set_host()'s callbacks for a running replay (crun_host.c): its
 * next event, and what its flows leave of links[0..n-1]. */
units_ns_t crun_host_next(void *holder);
void crun_host_links(void *holder, const uint32_t *links, uint32_t n,
		     double *left, uint32_t *cnt, double *maxr);

#endif
