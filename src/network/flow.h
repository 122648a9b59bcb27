/*
 * flow.h - fluid flows on a topology's links, on the event engine.
 *
 * A flow moves volume_B bytes over a set of links, using each with a
 * coefficient (1 for a link crossed once; a ring channel's single flow
 * crosses many links). Active flows share link capacity max-min fairly
 * (maxmin.h). When flows start or end, the rates are re-solved once per
 * instant (a solve event at the current time batches every change made
 * at that time) and every flow whose rate changed has its completion
 * event cancelled and rescheduled: t_end = now + left_B / rate.
 *
 * Progress is accounted lazily: a flow's bytes left are brought up to
 * date only when its rate changes.
 *
 * Depends on sim.h, maxmin.h, topo.h, mem.h.
 */
#ifndef LLMSIM_NETWORK_FLOW_H
#define LLMSIM_NETWORK_FLOW_H

#include <stddef.h>
#include <stdint.h>

#include "engine/sim.h"
#include "topo.h"

struct flownet;

typedef void (*flow_done_fn)(void *arg);

/* Flows over t's links on sim (both outlive it). NULL when out of memory. */
struct flownet *flow_new(const struct topo *t, struct sim *sim);
void flow_free(struct flownet *f);

/* Move an idle flownet (every flow done, nothing pending: the engine it
 * ran on has finished) to another engine, keeping its links and solver.
 * Returns 0, or -1 when it is not idle (the caller builds a new one). */
int flow_attach(struct flownet *f, struct sim *sim);

/*
 * Start a flow of volume_B bytes over links[0..n-1] with coefficients
 * coef[0..n-1] > 0, at most bound_Bps (0 = no bound). done(arg) runs
 * from an event when the last byte has arrived (at once, from an event,
 * for an empty flow). Returns 0, or -1 when out of memory.
 */
int flow_start(struct flownet *f, const uint32_t *links, const double *coef,
	       uint32_t n, double volume_B, double bound_Bps, flow_done_fn done,
	       void *arg);

/*
 * Start a flow that has been moving since t_last_ns (<= now) at rate_Bps
 * with left_B bytes left at that time, and that ends at t_end_ns (>= now)
 * unless its rate changes: the state flow_start would have reached had
 * it started earlier and run alone (a collective replayed from its idle
 * timing, run.h, becoming real flows). No re-solve is asked for; the
 * next one reports a change only if its component gives another rate.
 * Links held (flow_hold) are not checked. Returns 0 or -1 (memory).
 */
int flow_adopt(struct flownet *f, const uint32_t *links, const double *coef,
	       uint32_t n, double bound_Bps, flow_done_fn done, void *arg,
	       double left_B, double rate_Bps, units_ns_t t_last_ns,
	       units_ns_t t_end_ns);

/*
 * Links held by what is not a flow: a collective replayed from its idle
 * timing (run.h) holds every link its plan uses while it runs, and may
 * keep them parked after it (nothing runs on them; its plan's next
 * replay takes them back without a pass over them). A flow that starts
 * on a held link first calls evict(holder), which must release what the
 * holder holds (and may adopt its flows), so that the new flow shares
 * the links with it. take(holder, link), for a holder in another's way
 * on link, returns 1 if it only keeps its links parked, letting that one
 * go (it notes the loss; the link is then the taker's), and returns 0
 * changing nothing if it runs on them.
 *
 * flow_try_hold() holds links[0..n-1] for holder if none of them carries
 * a flow or is held by a running holder (parked ones are taken from) and
 * returns 1; otherwise it holds nothing and returns 0. One pass over the
 * links (a replay's start walks thousands: a 64-GPU DeepEP all-to-all's
 * plan uses ~5,600). flow_reclaim() is the same for a parked holder
 * taking back links it lost, except that on failure it keeps those it
 * already took back. flow_release() lets go of those of links[0..n-1]
 * that holder still holds.
 */
void flow_set_evict(struct flownet *f, void (*evict)(void *holder),
		    int (*take)(void *holder, uint32_t link));
/*
 * A running holder may host a short flow as its guest instead of being
 * evicted (flow.c says when): next(holder) gives the ns of its next
 * event (a flow's end or rate change, a phase's start), or -1 when it
 * cannot host (parked, or not a replay); links_fn(holder, links, n,
 * left, cnt, maxr) gives, for each of links[0..n-1], what the holder's
 * flows would leave of the link's capacity if they were variables (their
 * a_k r_k subtracted one by one in the order eviction would add them),
 * how many they are and the fastest rate among them (0 for none).
 * flow_set_guests(f, 0) turns guests off (tests: the same ns either
 * way); flow_guests() counts the flows that ended as guests.
 */
void flow_set_host(struct flownet *f, units_ns_t (*next)(void *holder),
		   void (*links_fn)(void *holder, const uint32_t *links,
				    uint32_t n, double *left, uint32_t *cnt,
				    double *maxr));
void flow_set_guests(struct flownet *f, int on);
uint64_t flow_guests(const struct flownet *f);
int flow_try_hold(struct flownet *f, const uint32_t *links, uint32_t n,
		  void *holder);
int flow_reclaim(struct flownet *f, const uint32_t *links, uint32_t n,
		 void *holder);
void flow_release(struct flownet *f, const uint32_t *links, uint32_t n,
		  const void *holder);

/*
 * Pair replays (crun_pair.c). flow_holder(): what holds link l (NULL:
 * nothing), and in *busy whether a flow runs on it. flow_hosts_guest():
 * whether holder hosts a guest now. flow_try_hold_beside(): as
 * flow_try_hold(), but the links mate holds are left to it (mate a
 * running holder beside which holder runs). flow_hand(): links[0..n-1]
 * that from holds are now to's.
 */
void *flow_holder(const struct flownet *f, uint32_t l, int *busy);
int flow_hosts_guest(const struct flownet *f, const void *holder);
int flow_try_hold_beside(struct flownet *f, const uint32_t *links,
			 uint32_t n, void *holder, const void *mate);
void flow_hand(struct flownet *f, const uint32_t *links, uint32_t n,
	       const void *from, void *to);

/* Capacity of link l (B/s per direction). */
double flow_link_cap(const struct flownet *f, uint32_t l);

/* Report every rate change: fn(arg, now, left_B, rate_Bps) with the
 * flow's done argument, its bytes left brought up to now, and its new
 * rate (recording an idle run, run.h). NULL to stop. */
void flow_observe(struct flownet *f,
		  void (*fn)(void *arg, units_ns_t now, double left_B,
			     double rate_Bps));

/* Bytes a live flow's own record takes (its max-min variable aside),
 * for the benches' memory per flow. */
size_t flow_record_bytes(void);

/* Re-solves done and flows re-solved in total (for reports and benches). */
uint64_t flow_solves(const struct flownet *f);
uint64_t flow_resolved(const struct flownet *f);

/* Non-zero once an allocation failed or a transfer would have ended past
 * the engine's horizon (UNITS_NS_MAX): the simulation is then wrong, and
 * flow_error() says which. A flow that would end past the horizon ends at
 * once instead, so whatever waits on it still completes. */
int flow_failed(const struct flownet *f);
const char *flow_error(const struct flownet *f);

/* Record that something timed with these flows (a phase's wait) would
 * end past the engine's horizon; flow_failed() becomes true. */
void flow_fail_too_long(struct flownet *f);

/* Why flow_failed() when a transfer outlasted the horizon. */
#define FLOW_TOO_LONG "a transfer is longer than the engine represents " \
	"(2^62 ns, about 146 years): a link or NIC rate is far too low"

#endif
