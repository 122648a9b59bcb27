/*
 * comm.h - the interface through which the engine starts a collective: a
 * comm backend (the fabric model's net_comm_ops, or a test's mock) is a
 * struct comm_ops and its context. The executor (exec.h) calls start()
 * when every simulated member rank has reached the collective.
 *
 * Depends on base/coll.h only.
 */
#ifndef LLMSIM_ENGINE_COMM_H
#define LLMSIM_ENGINE_COMM_H

#include "base/coll.h"

/*
 * How the executor starts a collective. start() is called at the current
 * simulated time once every simulated member has reached it; the backend
 * must eventually call done(token) from an event of the same simulation.
 * The descriptor stays valid until then.
 */
struct comm_ops {
	void (*start)(void *ctx, const struct coll_desc *c,
		      void (*done)(void *token), void *token);
};

#endif
