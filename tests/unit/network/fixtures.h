/*
 * fixtures.h - systems built in C for the fabric tests, with round
 * numbers so expected values can be derived by hand in comments.
 *
 * Every link here has line_code 1 and no framing unless a test sets it,
 * so a port's payload rate is lanes * lane_rate * sustained.
 */
#ifndef LLMSIM_TEST_NET_FIXTURES_H
#define LLMSIM_TEST_NET_FIXTURES_H

#include <stddef.h>

#include "config/spec_system.h"

struct arena;
struct schema;

struct fx {
	struct link_spec up_link, out_link, host_link;
	struct fabric_spec up, out, host;
	struct coll_lib_spec lib;
	struct gpu_spec gpu;
	struct system_spec sys;
};

/* A library offering ring/tree/direct/rhd/hierarchical/nvls/pairwise
 * with Simple only, bandwidth factor 1 and every latency 0. */
void fx_lib_ideal(struct coll_lib_spec *lib);

/* nodes x 8 GPUs on a full mesh of one 64 GB/s link per pair (7 ports
 * per GPU), 8 NICs of 50 GB/s per node on a rail-optimized 2-tier fat
 * tree of radix 16 (non-blocking), ideal library. */
void fx_mesh(struct fx *f, int64_t nodes);

/* nodes x 8 GPUs behind one switch, 18 ports of 25 GB/s each (450 GB/s
 * per GPU), with in-switch reduction at efficiency 1; the same scale-out
 * as fx_mesh. */
void fx_switch(struct fx *f, int64_t nodes);

/* The preset (or file) name of schema s with sets[nsets] applied,
 * loaded into a (its diagnostics to stderr), asserting that it loads:
 * the config the preset tests and the replay tests start from. */
void *fx_load(struct arena *a, const struct schema *s, const char *name,
	      const char *const *sets, size_t nsets);

/* fx_switch at 2 nodes (16 GPUs) whose ring's Simple latencies are round:
 * base 10 us, 1 us a hop inside a node, 5 us a hop across nodes (an
 * all-reduce's 2(p - 1) = 30 steps: 28 inside, 2 across). The ring. */
struct coll_algo_spec *fx_switch_ring_latency(struct fx *f);

#endif
