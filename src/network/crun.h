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
 * Replay. A collective whose links carry nothing else runs as it would on
 * an idle fabric: its trajectory there (when each phase's flows started,
 * each flow's rate changes and end) is recorded once per plan and size
 * (crun_record) and a replay (crun_replay) costs one event instead of a
 * flow's start, solves and end per flow and phase. It holds the links of
 * its plan; when a flow is to start on one of them, it becomes real
 * flows at the state its trajectory gives at that instant (bytes left at
 * the last rate change, that rate, the same end event) and goes on as a
 * run would, sharing the links under max-min. The rule, and why the
 * result is the flow-level simulation's to the nanosecond, is at the top
 * of run.c.
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
#define CRUN_PARK_SLOTS 1024

struct ctraj;
#define CRUN_HC_LINKS 32	/* links whose host_links() answer is kept */

struct crun_set {
	struct crun *live;	/* doubly linked */
	uint64_t replays;	/* crun_replay() calls */
	uint64_t resumed;	/* replays that became flows */
	uint64_t reheld;	/* replays that took back the links the last
				 * replay on them left parked */
	uint64_t reclaimed;	/* of those, replays that first took back
				 * links another had taken meanwhile */
	uint64_t detached;	/* replays of latency-bound runs, holding
				 * no link (CRUN_DETACH_SHARE) */
	uint64_t late;		/* of the replays, late ones (crun_start_late) */
	uint64_t late_flows;	/* plan flows those did not start */
	/* replays over whose links are still held, for the next replay of
	 * a plan on the same links (crun.c), by the links' hash */
	struct crun *park[CRUN_PARK_SLOTS];
	/* A running replay's state at one instant, as its host callbacks
	 * (crun.c host_next, host_links) read it off its trajectory: for
	 * replay start hc_hid at hc_dt ns after its start, its phase and
	 * pending count, its next event (hc_has_next) and each plan flow's
	 * rate (hc_rate[i], -1 for a flow ended before hc_dt) where
	 * hc_stamp[i] == hc_gen. */
	uint64_t hid_next;	/* replay starts numbered so far */
	uint64_t hc_hid;	/* 0 = nothing kept */
	units_ns_t hc_dt, hc_next;
	units_ns_t hc_end;	/* with hc_has_next: the state is the same
				 * for every dt in [hc_dt, hc_end) */
	uint32_t hc_k, hc_pending;
	int hc_has_next;
	uint32_t hc_gen, hc_cap;
	uint32_t *hc_stamp;
	double *hc_rate;
	/* host_links()'s answers in that state, for up to CRUN_HC_LINKS
	 * links: what is left of hc_link[i], how many flows, the fastest */
	uint32_t hc_nl;
	uint64_t hc_kept;	/* links host_links() answered from them */
	uint32_t hc_link[CRUN_HC_LINKS], hc_cnt[CRUN_HC_LINKS];
	double hc_left[CRUN_HC_LINKS], hc_maxr[CRUN_HC_LINKS];
	/* Pair replays (crun_pair.c): the idle engine to record a pair on
	 * (idle(): 0 with its engine, flownet and run set, or -1; idle_lost():
	 * a failed recording left it mid-flight), NULL for none; the pairs
	 * recorded on this set's engine; how many replayed. */
	int (*idle)(void *ctx, struct sim **sim, struct flownet **fn,
		    struct crun_set **rs);
	void (*idle_lost)(void *ctx);
	void *idle_ctx;
	/* crun_pair.c's entry points, called through these (crun.c does not
	 * call crun_pair.c, which calls it): NULL with no pairs */
	int (*pair_try)(struct crun *r, const struct ctraj *tr);
	void (*pairs_free)(struct crun_set *rs);
	struct crun_pairs *pairs;
	size_t pairs_max_B;	/* bytes the pairs' trajectories may hold
				 * before no new one is recorded; 0: crun_pair.c
				 * PAIRS_MAX_B */
	uint64_t paired, pairs_recorded, pairs_evicted;
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

/* A rate change of a recorded flow. */
struct ctraj_rec {
	units_ns_t t_ns;	/* ns after the run's start */
	double left_B;		/* B left then */
	double rate_Bps;	/* B/s from then on */
};

/* How a plan ran alone on an idle fabric (times in ns after its start). */
struct ctraj {
	units_ns_t total_ns;	/* ns, start to done */
	uint32_t nphases, nflows;
	units_ns_t *start_ns;	/* per phase: when its flows started */
	units_ns_t *end_ns;	/* per plan flow: when it ended */
	uint32_t *rec_off;	/* nflows + 1: flow i's rate changes are
				 * rec[rec_off[i] .. rec_off[i + 1]), in time
				 * order */
	struct ctraj_rec *rec;
	double link_ns;		/* ns, the most any link of the plan needs
				 * to carry the bytes the run puts on it
				 * (INFINITY: not known) */
};

void ctraj_free(struct ctraj *tr);

/* Bytes a trajectory holds (for reports). */
size_t ctraj_bytes(const struct ctraj *tr);

/*
 * Run cp (CRUN_FULL, volumes times scale) on sim/fn, which must have
 * nothing else in flight, to its end, recording its trajectory into *out
 * (free with ctraj_free). Returns 0, or -1 when out of memory.
 */
int crun_record(struct crun_set *rs, struct sim *sim, struct flownet *fn,
	       struct cplan *cp, double scale, struct ctraj **out);

/* A run whose bytes take at most this share of its own time on any
 * link (ctraj.link_ns <= CRUN_DETACH_SHARE * total_ns) is latency-
 * bound: it replays its recorded time without holding or sharing links,
 * busy or not (crun.c says what this leaves out: at most link_ns of
 * each link's time per run). */
#define CRUN_DETACH_SHARE 1e-4

/*
 * Start cp (CRUN_FULL, volumes times scale) on sim as a replay of tr,
 * holding its links on fn until done(token) at now + tr->total_ns, or
 * until a flow starts on one of them, if none of them carries a flow or
 * is held (flow_try_hold); a latency-bound run (tr->link_ns <=
 * CRUN_DETACH_SHARE tr->total_ns) replays holding no link, even over busy ones. tr
 * must outlive the run. Returns 0, 1 when a
 * link is busy (nothing started: run it with crun_start), or -1 (memory;
 * done is then never called).
 */
int crun_replay(struct crun_set *rs, struct sim *sim, struct flownet *fn,
	       struct cplan *cp, double scale, const struct ctraj *tr,
	       void (*done)(void *token), void *token);

/*
 * crun_start (CRUN_FULL) of a run whose replay of tr could not start now
 * (crun_replay() returned 1: a link of its plan busy or held): when its
 * first phase's flows are due (tr->start_ns[0] from now), it replays tr
 * from its start instead if it can hold its links then (crun.c, "Late
 * replays"), else starts them. 0, or -1 (memory; done is never called).
 */
int crun_start_late(struct crun_set *rs, struct sim *sim, struct flownet *fn,
		    struct cplan *cp, double scale, const struct ctraj *tr,
		    void (*done)(void *token), void *token);

/* Replays started, and those that became flows, on this set. */
uint64_t crun_replays(const struct crun_set *rs);
uint64_t crun_reheld(const struct crun_set *rs);
uint64_t crun_detached(const struct crun_set *rs);
uint64_t crun_reclaimed(const struct crun_set *rs);
uint64_t crun_resumed(const struct crun_set *rs);
/* Links whose host_links() sums were kept from an earlier guest's in the
 * same state of its host (crun_host.c). */
uint64_t crun_host_kept(const struct crun_set *rs);
/*
 * Pair replays on rs (crun_pair.c), recorded on the idle engine idle()
 * gives (0 with its engine, flownet and run set, or -1); idle_lost(ctx)
 * when a recording failed and left it mid-flight. idle NULL: none (the
 * pairs kept so far stay until crun_set_release).
 */
void crun_set_pairs(struct crun_set *rs,
		    int (*idle)(void *ctx, struct sim **sim,
				struct flownet **fn, struct crun_set **irs),
		    void (*idle_lost)(void *ctx), void *ctx);

/* Late replays (crun_start_late), and the plan flows they did not start
 * (those of pair replays too). */
uint64_t crun_late(const struct crun_set *rs);
uint64_t crun_late_flows(const struct crun_set *rs);

/*
 * Charge R identical groups (one simulated) on the scale-out links
 * between switches of plan p, whose group has group_gpus GPUs: every
 * coefficient on a leaf or aggregation uplink is multiplied (see crun.c).
 * Returns 0 or -1 when out of memory.
 */
int crun_charge_replicas(const struct topo *t, struct plan *p, uint32_t R,
			 uint32_t group_gpus);

#endif
