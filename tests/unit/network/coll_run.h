/*
 * coll_run.h - what the collective tests (test_coll*.c)
 * share: one collective described in a line (struct run), timed on a
 * fresh fabric built from a system, and a relative float comparison
 * that prints both values.
 */
#ifndef LLMSIM_TEST_NET_COLL_RUN_H
#define LLMSIM_TEST_NET_COLL_RUN_H

#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>

#include "config/spec_system.h"
#include "network/algo.h"
#include "network/net.h"

#define GiB 1073741824.0

/* GPU ids 0..63: a group of n GPUs is the first n. */
extern const uint32_t coll_ids[64];

struct run {
	enum coll_op op;
	double bytes;
	const uint32_t *gpus;	/* NULL: coll_ids */
	uint32_t n;
	int algo;		/* -1 = auto */
	uint32_t replicas;
	const double *a2a;
};

/* Time the collective c on a new fabric of s into *out; -1 when it does
 * not apply (net_collective_time's return). */
int coll_desc_try(const struct system_spec *s, const struct coll_desc *c,
		  struct net_coll_result *out);

/* coll_desc_try, asserting that the collective runs. */
struct net_coll_result coll_desc_timed(const struct system_spec *s,
				       const struct coll_desc *c);

/* Time one collective on a new fabric of s into *out; -1 when it does
 * not apply (net_collective_time's return). */
int coll_try_time(const struct system_spec *s, const struct run *r,
		  struct net_coll_result *out);

/* coll_try_time, asserting that the collective runs. */
struct net_coll_result coll_timed(const struct system_spec *s,
				  const struct run *r);

/* coll_timed, asserting its protocol and its time (within 1e-6 of it). */
void coll_expect(const struct system_spec *s, const struct run *r,
		 const char *proto, double time_s);

#define EQ_REL(a, b, rel) cr_assert_float_eq((a), (b), fabs(b) * (rel) + 2e-9, \
	"%s = %.9g, expected %.9g", #a, (double)(a), (double)(b))

#endif
