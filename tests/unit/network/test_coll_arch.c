/*
 * test_coll_arch.c - NCCL's per-generation tuning data in the system
 * presets (round 41, bw41): the Blackwell systems carry NCCL's Blackwell
 * rows, not Hopper's or a doubled Hopper row, and the tuner's ring
 * LL128 cap turns a one-node Blackwell ring from LL128 to Simple (the
 * cap is NCCL's tuner's, so llmsim's choice sees it, not the run:
 * protocols.ll128.select_channel_busbw, nvls41).
 *
 * Derivations (NVIDIA/nccl v2.29.2-1, the held-out B200/B300/GB200/GB300
 * tables' NCCL):
 *  - ring graph on one Blackwell node: 18 NVLink5 links x SM100_NVLINK_BW
 *    40.1 GB/s = 721.8 GB/s (topo.h); the search starts at the first
 *    sm100SpeedArrayIntra speed, 90, and fits floor(721.8 / 90) = 8
 *    channels (8 x 90 = 720 <= 721.8; search.cc); ncclTopoDupChannels
 *    doubles them (bwIntra 90 >= 50) to 16 x 45; pass 2 cannot raise
 *    the speed (16 x 50 = 800 > 721.8).
 *  - tuning.cc: ring LL128 busBw = min(0.92 x 16 x 45 = 662.4,
 *    16 x perChMaxRingLL128Bws[Blackwell][1 node] 34.5 = 552) = 552 GB/s.
 *  - perChMaxTreeBws[Blackwell][1 node] = 70.0 GB/s (v2.28.3-1 to
 *    5067397c; 2 x 38.7 = 77.4 only up to v2.27.7).
 *  - llMaxBws across nodes is indexed by the host CPU (index1 = 0 for
 *    Intel and Grace, 1 for AMD): row 0 = 39 GB/s (2 nodes), 20.4 GB/s
 *    (more) on every Blackwell preset.
 *  - ring LL: NCCL drops channels while bytes < nc x 512 threads x 8 x
 *    nRanks (enqueue.cc topoGetAlgoInfo, tuning.cc threadThresholds) on
 *    every arch; one channel runs at 0.5 x bwIntra = 0.5 x 45 = 22.5
 *    GB/s on Blackwell (Hopper 0.5 x 30 = 15, nccl.yaml). A100 keeps the
 *    cut off: its in-sample Azure table reads worse with it (README).
 *  - Hopper writes no LL128 cap: 12 x 36.7 = 440.4 >= 0.92 x 12 x 30 =
 *    331.2 (6 x 60 duplicated to 12 x 30 on 18 x 20.6 GB/s): it never
 *    binds in NCCL's own model.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "coll_run.h"
#include "fixtures.h"
#include "config/config.h"
#include "config/spec_system.h"
#include "network/net.h"

/* The system preset name. */
static struct system_spec *load(struct arena *a, const char *name)
{
	return fx_load(a, &system_schema, name, NULL, 0);
}

Test(coll_arch, blackwell_presets_carry_nccls_blackwell_rows)
{
	static const char *const bw[] = { "dgx-b200", "dgx-b300",
					  "gb200-nvl72", "gb300-nvl72" };
	struct arena ar, *a = &ar;
	const struct coll_lib_spec *l;
	size_t i;

	arena_init(a);
	for (i = 0; i < sizeof(bw) / sizeof(bw[0]); i++) {
		l = load(a, bw[i])->collectives;
		cr_assert_float_eq(l->proto[PROTO_LL128]
				   .select_channel_busbw_Bps, 34.5e9, 1e3,
				   "%s", bw[i]);
		cr_assert_float_eq(l->algo[ALGO_RING].pipe[PROTO_SIMPLE]
				   .chain_channel_Bps, 70e9, 1e3,
				   "%s", bw[i]);
		cr_assert_float_eq(l->proto[PROTO_LL]
				   .max_busbw_Bps[SCALE_1NODE], 282e9, 1e3,
				   "%s", bw[i]);
		cr_assert_float_eq(l->proto[PROTO_LL].channel_busbw_Bps,
				   22.5e9, 1e3, "%s", bw[i]);
		cr_assert_float_eq(l->algo[ALGO_RING].channel_min_rank_B
				   .b[PROTO_LL], 4096, 1e-9, "%s", bw[i]);
		cr_assert_float_eq(l->proto[PROTO_LL]
				   .max_busbw_Bps[SCALE_2NODES], 39e9, 1e3,
				   "%s", bw[i]);
		cr_assert_float_eq(l->proto[PROTO_LL]
				   .max_busbw_Bps[SCALE_4NODES], 20.4e9, 1e3,
				   "%s", bw[i]);
	}
	l = load(a, "dgx-a100")->collectives;
	cr_assert_eq(l->algo[ALGO_RING].channel_min_rank_B.b[PROTO_LL], 0);
	l = load(a, "dgx-h100")->collectives;
	cr_assert_float_eq(l->proto[PROTO_LL128].select_channel_busbw_Bps,
			   36.7e9, 1e3);
	cr_assert_float_eq(l->algo[ALGO_RING].pipe[PROTO_SIMPLE]
			   .chain_channel_Bps, 38.7e9, 1e3);
	arena_release(a);
}

/* An 8-GPU all-gather of bytes on sys (algo / proto -1: the choice). */
static struct net_coll_result allgather(const struct system_spec *sys,
					double bytes, int algo, int proto)
{
	struct coll_desc c = { .op = COLL_ALLGATHER, .bytes = bytes,
			       .gpus = coll_ids, .ngpus = 8, .algo = algo,
			       .proto = proto };

	return coll_desc_timed(sys, &c);
}

Test(coll_arch, blackwell_ring_ll128_loses_to_simple_by_nccls_cap)
{
	struct arena ar, *a = &ar;
	struct system_spec *sys;
	struct coll_lib_spec lib;
	struct net_coll_result r, open;
	double S = 32.0 * 1048576;

	arena_init(a);
	sys = load(a, "dgx-b200");
	/* 32 MiB over 8 B200, the library's choice: the tuner's ring LL128
	 * at most 16 x 34.5 = 552 GB/s against Simple's 16 x 45 = 720, the
	 * same latency order (LL128's per step above Simple's only by
	 * microseconds), so at 7/8 x 32 MiB = 29.4 MB Simple is the faster
	 * by ~11 us of bandwidth time: NCCL runs Simple (bw41's table
	 * reading: the 16 MiB jump is LL -> Simple). */
	r = allgather(sys, S, -1, -1);
	cr_assert_str_eq(r.protocol, "simple");
	/* Without the cap llmsim's fabric rates LL128 at 0.9375 x the
	 * links and picks it (this fails if the preset loses the cap). */
	lib = *sys->collectives;
	lib.proto[PROTO_LL128].select_channel_busbw_Bps = 0;
	sys->collectives = &lib;
	open = allgather(sys, S, -1, -1);
	cr_assert_str_eq(open.protocol, "ll128");
	arena_release(a);
}

Test(coll_arch, blackwell_small_ring_ll_runs_fewer_channels)
{
	struct arena ar, *a = &ar;
	struct system_spec *sys;
	struct coll_lib_spec lib;
	struct net_coll_result cut, all;
	double S = 256.0 * 1024;

	arena_init(a);
	sys = load(a, "dgx-b200");
	/* 256 KiB over 8 B200 on ring/LL: floor(256 KiB / (4 KiB x 8)) = 8
	 * channels, each at the GPU's LL channel rate (b200.yaml
	 * collective_ll_channel 12.6052 GB/s, round 50) x 7 / 8 (7 link
	 * steps in 8 calls) = 11.02955 GB/s: 88.2364 GB/s of bus bandwidth.
	 * With every channel running, the 24 (kernel_units) give 264.709
	 * GB/s, under the 282 GB/s cap. The difference is the bus bytes (7/8
	 * S = 229,376 B) over the two rates: 2.59956 - 0.86652 = 1.73304 us
	 * (the latency, the same in both). */
	cut = allgather(sys, S, ALGO_RING, PROTO_LL);
	lib = *sys->collectives;
	lib.algo[ALGO_RING].channel_min_rank_B.b[PROTO_LL] = 0;
	sys->collectives = &lib;
	all = allgather(sys, S, ALGO_RING, PROTO_LL);
	cr_assert_str_eq(cut.protocol, "ll");
	cr_assert_float_eq(cut.time_s - all.time_s,
			   229376 / (8 * 12.6052e9 * 7 / 8) -
			   229376 / (24 * 12.6052e9 * 7 / 8), 0.01e-6,
			   "cut %g s vs every channel %g s", cut.time_s,
			   all.time_s);
	arena_release(a);
}
