/*
 * test_coll_c2c.c - LL128 across nodes on a system whose GPUs reach their
 * NICs over C2C (system nic_via_c2c): a library with ll128_c2c false
 * (NCCL before 2.27.3: tuning.cc enables LL128 only up to PATH_PXB /
 * PATH_PXN, and such a GPU's NIC path is PATH_PHB) runs no LL128 on a
 * collective that spans nodes; within one node, or with ll128_c2c, or on
 * a system with PCIe-attached NICs, LL128 stays; a forced LL128 runs.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "coll_run.h"
#include "fixtures.h"
#include "network/algo.h"
#include "network/net.h"

/* nodes x 8 GPUs behind one switch; the ideal library's ring with LL128
 * at base 5 us and Simple at base 20 us, both at full bandwidth. */
static void c2c_ring(struct fx *f, int64_t nodes)
{
	struct coll_algo_spec *ring;

	fx_switch(f, nodes);
	ring = &f->lib.algo[ALGO_RING];
	ring->protocols.on[PROTO_LL128] = 1;
	f->lib.proto[PROTO_LL128].bandwidth_factor = 1;
	ring->base.s[PROTO_LL128] = 5e-6;
	ring->base.s[PROTO_SIMPLE] = 20e-6;
}

/* 8 B all-reduced: nothing next to the bases (below 1e-6 relative). */
#define TINY 8.0

Test(net_coll_c2c, no_ll128_across_nodes_over_c2c)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 16, ALGO_RING, 1, NULL };

	c2c_ring(&f, 2);
	/* PCIe-attached NICs: LL128 at its 5 us, whatever the library. */
	f.lib.ll128_c2c = 0;
	coll_expect(&f.sys, &r, "ll128", 5e-6);
	/* NICs over C2C and a library without LL128 there: Simple, 20 us. */
	f.sys.nic_via_c2c = 1;
	coll_expect(&f.sys, &r, "simple", 20e-6);
	/* A library that runs LL128 over C2C (NCCL from 2.27.3): 5 us. */
	f.lib.ll128_c2c = 1;
	coll_expect(&f.sys, &r, "ll128", 5e-6);
}

Test(net_coll_c2c, one_node_keeps_ll128)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 8, ALGO_RING, 1, NULL };

	c2c_ring(&f, 1);
	f.sys.nic_via_c2c = 1;
	f.lib.ll128_c2c = 0;
	/* No NIC on the way: LL128 at 5 us. */
	coll_expect(&f.sys, &r, "ll128", 5e-6);
}

/* The rule is the tuner's (tuning.cc applies it where LL128 is left to
 * the default, pEnable 2): a protocol the user forces runs, as
 * NCCL_PROTO=LL128 does (pEnable 1), at its 5 us. */
Test(net_coll_c2c, a_forced_ll128_across_c2c_runs)
{
	struct fx f;
	struct run r = { COLL_ALLREDUCE, TINY, NULL, 16, ALGO_RING, 1, NULL };
	struct net_coll_result out;

	c2c_ring(&f, 2);
	f.sys.nic_via_c2c = 1;
	f.lib.ll128_c2c = 0;
	f.sys.protocol = PROTO_LL128;
	cr_assert_eq(coll_try_time(&f.sys, &r, &out), 0);
	cr_assert_str_eq(out.protocol, "ll128");
	EQ_REL(out.time_s, 5e-6, 1e-6);
}
