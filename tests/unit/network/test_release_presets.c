/*
 * test_release_presets.c - a case that ran an older NCCL on a system
 * whose collectives carry their own keys (the four Blackwell systems,
 * dgx-h800) names a release file that keeps those keys
 * (configs/collectives/nccl-2.26-blackwell.yaml, nccl-2.28-blackwell.yaml,
 * nccl-2.26-h800.yaml): `collectives: NAME` replaces the system's
 * mapping (src/config/config.c), so the plain nccl-2.26 / nccl-2.28 would
 * drop them. Every expected number is the system file's or the release
 * file's, read at the NCCL tag the file names.
 */
#include <criterion/criterion.h>

#include "base/arena.h"
#include "config/schema.h"
#include "config/spec_collectives.h"
#include "config/spec_system.h"
#include "fixtures.h"

static const char *const blackwell[] = {
	"dgx-b200", "dgx-b300", "gb200-nvl72", "gb300-nvl72",
};

static const struct coll_lib_spec *lib_of(struct arena *a, const char *sys,
					  const char *set)
{
	const char *const sets[] = { set };
	const struct system_spec *s =
		fx_load(a, &system_schema, sys, sets, set ? 1 : 0);

	cr_assert_not_null(s->collectives, "%s", sys);
	return s->collectives;
}

/* The release's own keys: hwLat NET NVLSTree Simple 14 us (v2.19.4-1 to
 * v2.28.7-1 tuning.cc) and the 2.20-2.28 net_peer rule (no per-channel
 * GB/s, halved by ranks: paths.cc ncclTopoGetNchannels). */
static void expect_release_keys(const struct coll_lib_spec *l, const char *w)
{
	cr_assert_float_eq(l->algo[ALGO_NVLS_TREE].hop_net.s[PROTO_SIMPLE],
			   14e-6, 1e-12, "%s", w);
	cr_assert_eq(l->net_peer.channels, 2, "%s", w);
	cr_assert_float_eq(l->net_peer.channel_Bps, 0, 1e-9, "%s", w);
	cr_assert_eq(l->net_peer.halve, NET_HALVE_RANKS, "%s", w);
}

/* The Blackwell keys both release files keep from the systems' block
 * (gb200-nvl72.yaml: llMaxBws' Blackwell row 282 / 39 / 20.4 GB/s, a
 * ring LL channel 22.5 GB/s, SM100_NVLINK_BW 40.1 GB/s, NVLS chunk time 0,
 * NVLSTree 32 channels, heads 96 / 80 GB/s), equal to the system's own;
 * also ring LL128's choice cap 34.5 GB/s a channel (v2.29.2-1), which the
 * releases did not have (2 x 36.7) but which stays while llmsim's LL128
 * rate on Blackwell is too fast (nccl-2.26-blackwell.yaml). */
static void expect_blackwell_kept(const struct coll_lib_spec *l,
				  const struct coll_lib_spec *sys,
				  const char *w)
{
	const struct coll_algo_spec *nv = &l->algo[ALGO_NVLS];
	const struct coll_algo_spec *nt = &l->algo[ALGO_NVLS_TREE];
	int k;

	for (k = 0; k < SCALE_COUNT; k++) {
		cr_assert_float_eq(l->proto[PROTO_LL].max_busbw_Bps[k],
				   sys->proto[PROTO_LL].max_busbw_Bps[k], 1,
				   "%s", w);
		cr_assert_float_eq(nt->head_busbw_Bps[k],
				   sys->algo[ALGO_NVLS_TREE].head_busbw_Bps[k],
				   1, "%s", w);
	}
	cr_assert_float_eq(l->proto[PROTO_LL].max_busbw_Bps[SCALE_1NODE],
			   282e9, 1, "%s", w);
	cr_assert_float_eq(l->proto[PROTO_LL].channel_busbw_Bps, 22.5e9, 1,
			   "%s", w);
	cr_assert_float_eq(nv->select_link_Bps, 40.1e9, 1, "%s", w);
	cr_assert_eq(nv->select_speeds.n, 12, "%s", w);
	cr_assert_float_eq(nv->pipe[PROTO_SIMPLE].chunk_time_s, 0, 1e-15,
			   "%s", w);
	cr_assert_eq(nt->pipe[PROTO_SIMPLE].channels, 32, "%s", w);
	cr_assert_float_eq(nt->head_busbw_Bps[SCALE_2NODES], 96e9, 1, "%s", w);
	cr_assert_float_eq(nt->head_busbw_Bps[SCALE_4NODES], 80e9, 1, "%s", w);
	cr_assert_float_eq(l->proto[PROTO_LL128].select_channel_busbw_Bps,
			   sys->proto[PROTO_LL128].select_channel_busbw_Bps, 1,
			   "%s", w);
}

/* A Blackwell release file (set: "collectives=NAME") on each of the four
 * systems: the release's keys, the systems' kept, and the release's own
 * ring chain channel (GB/s), NVLS channels in one NVLink domain and
 * LL128 over a C2C NIC path. */
static void expect_blackwell_release(const char *set, double chain_Bps,
				     int nvls_channels, int ll128_c2c)
{
	struct arena a;
	size_t i;

	arena_init(&a);
	for (i = 0; i < 4; i++) {
		const struct coll_lib_spec *sys = lib_of(&a, blackwell[i], NULL);
		const struct coll_lib_spec *l = lib_of(&a, blackwell[i], set);

		expect_release_keys(l, blackwell[i]);
		expect_blackwell_kept(l, sys, blackwell[i]);
		cr_assert_float_eq(l->algo[ALGO_RING].pipe[PROTO_SIMPLE]
				   .chain_channel_Bps, chain_Bps, 1, "%s %s",
				   set, blackwell[i]);
		cr_assert_eq(l->algo[ALGO_NVLS].pipe[PROTO_SIMPLE].channels,
			     nvls_channels, "%s %s", set, blackwell[i]);
		cr_assert_eq(l->ll128_c2c != 0, ll128_c2c, "%s %s", set,
			     blackwell[i]);
		/* the system itself runs the current release */
		cr_assert_float_eq(sys->algo[ALGO_NVLS_TREE].hop_net
				   .s[PROTO_SIMPLE], 20.9e-6, 1e-12);
		cr_assert_float_eq(sys->proto[PROTO_LL128]
				   .select_channel_busbw_Bps, 34.5e9, 1);
	}
	arena_release(&a);
}

/* NCCL 2.27.3 - 2.28.7 (v2.28.3-1): the chain channel 70 GB/s and 24
 * NVLS channels in one NVLink domain as now; LL128 over C2C on (2.27.3+). */
Test(net_release_presets, nccl_2_28_on_blackwell_keeps_the_systems_keys)
{
	expect_blackwell_release("collectives=nccl-2.28-blackwell", 70e9, 24,
				 1);
}

/* NCCL 2.25.1 - 2.26.x (v2.26.3-1): the chain channel 2 x 38.7 = 77.4
 * GB/s (perChMaxTreeBws one node), 32 NVLS channels on one NVLink domain
 * too (NVLS_NCHANNELS_SM100_NVL came with v2.27.3-1), no LL128 over a
 * C2C NIC path. */
Test(net_release_presets, nccl_2_26_on_blackwell_keeps_the_systems_keys)
{
	expect_blackwell_release("collectives=nccl-2.26-blackwell", 77.4e9,
				 32, 0);
}

/* Why the files exist: the plain release preset replaces a Blackwell
 * system's collectives with nccl.yaml's Hopper values (llMaxBws one node
 * 141 GB/s, 16 NVLS channels, NVLSTree heads 57.7 GB/s on 2 nodes). */
Test(net_release_presets, a_plain_release_drops_the_systems_keys)
{
	struct arena a;
	const struct coll_lib_spec *l;

	arena_init(&a);
	l = lib_of(&a, "gb200-nvl72", "collectives=nccl-2.28");
	cr_assert_float_eq(l->proto[PROTO_LL].max_busbw_Bps[SCALE_1NODE],
			   141e9, 1);
	cr_assert_eq(l->algo[ALGO_NVLS].pipe[PROTO_SIMPLE].channels, 16);
	cr_assert_float_eq(l->algo[ALGO_NVLS_TREE]
			   .head_busbw_Bps[SCALE_2NODES], 57.7e9, 1);
	arena_release(&a);
}

/* dgx-h800's one key (a ring LL channel 0.5 x 20 = 10 GB/s) stays under
 * nccl-2.26-h800, with the release's keys; Hopper's 15 GB/s under the
 * plain nccl-2.26. */
Test(net_release_presets, nccl_2_26_on_h800_keeps_its_ll_channel)
{
	struct arena a;
	const struct coll_lib_spec *l;

	arena_init(&a);
	l = lib_of(&a, "dgx-h800", "collectives=nccl-2.26-h800");
	expect_release_keys(l, "dgx-h800");
	cr_assert_float_eq(l->proto[PROTO_LL].channel_busbw_Bps, 10e9, 1);
	l = lib_of(&a, "dgx-h800", NULL);
	cr_assert_float_eq(l->proto[PROTO_LL].channel_busbw_Bps, 10e9, 1);
	l = lib_of(&a, "dgx-h800", "collectives=nccl-2.26");
	cr_assert_float_eq(l->proto[PROTO_LL].channel_busbw_Bps, 15e9, 1);
	arena_release(&a);
}
