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
 * A descriptor's memo: two words the caller keeps for each distinct
 * descriptor it starts during one run, all zero at the run's start,
 * holding what the backend stored in them the last time that descriptor
 * started. The caller promises the descriptor (and what it points to)
 * does not change during the run; the backend stores only what stays
 * valid for the descriptor while it lives (nothing the caller frees).
 */
struct comm_memo {
	const void *a, *b;
};

/*
 * How the executor starts a collective. start() is called at the current
 * simulated time once every simulated member has reached it; the backend
 * must eventually call done(token) from an event of the same simulation.
 * The descriptor stays valid until then.
 */
struct comm_ops {
	void (*start)(void *ctx, const struct coll_desc *c,
		      void (*done)(void *token), void *token);
	/* Optional (NULL: start): start() given the descriptor's memo. The
	 * results are start()'s, bit for bit; the memo only spares finding
	 * again what the backend found for it (the fabric model's plan and
	 * trajectory, net.c). */
	void (*start_memo)(void *ctx, const struct coll_desc *c,
			   struct comm_memo *memo,
			   void (*done)(void *token), void *token);
};

#endif
