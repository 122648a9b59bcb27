/*
 * infer_comm.h - the comm backend of inference steps: the fabric model,
 * with the engine's own all-reduce kernels for small TP all-reduces.
 *
 * An engine with custom_allreduce (vLLM's custom all-reduce, SGLang's and
 * TensorRT-LLM's one-shot/two-shot kernels) reduces TP all-reduces of up
 * to custom_allreduce_max bytes with its own kernels, whose latency model
 * is a collectives preset (custom_allreduce_collectives); larger ones and
 * every other collective go through the system's library. Both are the
 * fabric model (net.h) over the system's topology.
 *
 * Two modes:
 *   live    collectives run as flows on the step's simulation (contention
 *           between concurrent ones falls out): phase prefill/decode jobs;
 *   idle    each collective takes its time alone on an idle fabric
 *           (net_collective_time), memoized by (library, op, size, group,
 *           replicas): exact when a program runs one collective at a time,
 *           as the per-unit programs of serving do.
 *
 * Depends on engine/comm.h, engine/sim.h, network/net.h and the specs.
 */
#ifndef LLMSIM_RUN_INFER_COMM_H
#define LLMSIM_RUN_INFER_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "config/spec_system.h"
#include "engine/comm.h"
#include "engine/sim.h"

struct job_spec;
struct diag;
struct net;

struct infer_comm_entry;

struct infer_comm {
	struct sim *sim;		/* the simulation collectives complete on */
	struct system_spec custom_sys;	/* the system with the engine's library */
	struct net *net;		/* the system's library */
	struct net *custom;		/* the engine's all-reduce; NULL = none */
	double custom_max_B;		/* B, largest custom all-reduce */
	int idle;			/* 1: idle-fabric times, memoized */
	struct infer_comm_entry *tab;	/* memo, open addressing */
	size_t cap, used;
	uint64_t hits, misses;		/* memo statistics */
	int failed;			/* a collective could not be timed */
	char why[160];			/* why */
};

/* Set up c for job j on sim (idle: the memoized mode). Returns 0, -1
 * when out of memory, -2 when the system cannot be built (reported). */
int infer_comm_init(struct infer_comm *c, const struct job_spec *j,
		    struct sim *sim, int idle, struct diag *d);
void infer_comm_release(struct infer_comm *c);

/* The backend: ctx is the struct infer_comm. */
extern const struct comm_ops infer_comm_ops;

/* The time of collective desc alone on the idle fabric (memoized),
 * through the library the engine would use; -1 when it cannot be timed
 * (c->failed set). */
double infer_comm_time(struct infer_comm *c, const struct coll_desc *desc);

#endif
