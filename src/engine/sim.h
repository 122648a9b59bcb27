/*
 * sim.h - the discrete-event engine: one clock, one ordered event queue.
 *
 * Time is integer nanoseconds (units_ns_t). Events run in order of
 * (time, insertion sequence), so the same inputs give the same order and
 * byte-identical output. A callback may schedule more events at or after
 * the current time; scheduling in the past is a bug, not an error.
 * Cancellation is lazy: a cancelled event stays in the heap and is dropped
 * when it reaches the top.
 *
 * Event records come from a pool owned by the simulation; there are no
 * globals. Allocation failure while scheduling sets a sticky error
 * (sim_failed) and stops sim_run(); callers check it once at the end.
 *
 * Depends on units.h and libc only.
 */
#ifndef LLMSIM_ENGINE_SIM_H
#define LLMSIM_ENGINE_SIM_H

#include <stdint.h>

#include "base/units.h"

struct sim;

typedef void (*sim_fn)(struct sim *sim, void *arg);

/* Handle of a scheduled event; 0 is never a valid handle. */
typedef uint64_t sim_id;

/* A new simulation at time 0 with no events; NULL when out of memory. */
struct sim *sim_new(void);
void sim_free(struct sim *sim);

/* Run fn(sim, arg) at absolute time t >= sim_now(). Returns its handle, or
 * 0 when out of memory (and sim_failed() becomes true). */
sim_id sim_at(struct sim *sim, units_ns_t t, sim_fn fn, void *arg);

/* Run fn(sim, arg) dt >= 0 nanoseconds from now. */
sim_id sim_after(struct sim *sim, units_ns_t dt, sim_fn fn, void *arg);

/* Forget a scheduled event. A handle that already ran or was cancelled
 * is ignored. */
void sim_cancel(struct sim *sim, sim_id id);

/* The current time: that of the event running or last run. */
units_ns_t sim_now(const struct sim *sim);

/* Run the next live event. Returns 1 if one ran, 0 if none is left. */
int sim_step(struct sim *sim);

/* Run events until none is left, sim_stop() is called, or an allocation
 * fails. Returns 0, or -1 if sim_failed(). */
int sim_run(struct sim *sim);

/* Ask sim_run() to return after the current event. */
void sim_stop(struct sim *sim);

/* Events executed so far (cancelled ones not counted). */
uint64_t sim_events(const struct sim *sim);

/* Live events waiting in the queue. */
uint64_t sim_pending(const struct sim *sim);

/* Non-zero once an allocation has failed. */
int sim_failed(const struct sim *sim);

#endif
