/*
 * fixtures.h - systems built in C for the fabric tests, with round
 * numbers so expected values can be derived by hand in comments.
 *
 * Every link here has line_code 1 and no framing unless a test sets it,
 * so a port's payload rate is lanes * lane_rate * sustained.
 */
#ifndef LLMSIM_TEST_NET_FIXTURES_H
#define LLMSIM_TEST_NET_FIXTURES_H

#include "config/spec_system.h"

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

#endif
