/*
 * test_coll_nvls.c - NCCL's tuner view of NVLS (coll_lib_nvls_select_ratio,
 * src/config/spec_collectives.c): the graph search's per-head speeds, the
 * tuner's bandwidth against the fabric model's and the ring's, and the
 * choice it makes on the shipped dgx-h100 / dgx-b200 presets (NVIDIA/nccl
 * v2.29.2-1 src/graph/search.cc, tuning.cc).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "coll_run.h"
#include "fixtures.h"
#include "config/config.h"
#include "config/spec_collectives.h"

static const int64_t sm90[] = { 60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3 };
static const int64_t sm100[] = { 90, 80, 70, 60, 50, 45, 40, 30, 24, 20,
				 19, 18 };

/* A library with only the NVLS graph-search data: a link of link_GBps,
 * the speed array v[0..n), 32 heads at most, 32 channels (the ring
 * search then keeps at most 16). */
static void lib_with(struct coll_lib_spec *lib, double link_GBps,
		     const int64_t *v, size_t n)
{
	struct coll_algo_spec *as = &lib->algo[ALGO_NVLS];

	memset(lib, 0, sizeof(*lib));
	lib->max_channels = 32;
	as->select_link_Bps = link_GBps * 1e9;
	as->select_speeds.v = (int64_t *)(uintptr_t)v;
	as->select_speeds.n = n;
	as->select_heads_max = 32;
}

Test(nvls_select, hopper_ratio_by_rank_count)
{
	struct coll_lib_spec lib;

	lib_with(&lib, 20.6, sm90, 11);
	/* L = 18 x 20.6 = 370.8 GB/s. The ring search keeps 6 x 60 = 360
	 * (50: 7 x 50 = 350; 40: 9 x 40 = 360, not more; 24 / 60 < 0.49
	 * stops it), so the fabric's ring at L is seen at 360 / 370.8.
	 * 8 GPUs: bwIntra = 40 (9 x 40 = 360 <= 370.8; 9 x 50 = 450 is
	 * not), bwInter raised 40 -> 50 -> 60 (the top); bw = min(40 x 0.85
	 * x 7/8 x 2 = 59.5, 60) = 59.5, algBw = 8 x 59.5 x 8/14 = 272. The
	 * fabric: 0.85 x 370.8 x 8/9, seen against the ring: x 360 / 370.8
	 * = 0.85 x 8/9 x 360 = 272: ratio 1. */
	EQ_REL(coll_lib_nvls_select_ratio(&lib, 18, 0.85, 8), 1.0, 1e-9);
	/* 4 GPUs: bwIntra = 60 (5 x 60 = 300 <= 370.8; the array's top),
	 * bwInter 60; bw = min(60 x 0.85 x 3/4 x 2 = 76.5, 60) = 60, algBw
	 * = 4 x 60 x 4/6 = 160; fabric vs ring 0.85 x 4/5 x 360 = 244.8:
	 * 160 / 244.8. */
	EQ_REL(coll_lib_nvls_select_ratio(&lib, 18, 0.85, 4), 160 / 244.8,
	       1e-9);
	/* 2 GPUs: 60 / 60; bw = min(60 x 0.85 x 1/2 x 2 = 51, 60) = 51,
	 * algBw = 2 x 51 x 2/2 = 102; 0.85 x 2/3 x 360 = 204: 0.5. */
	EQ_REL(coll_lib_nvls_select_ratio(&lib, 18, 0.85, 2), 0.5, 1e-9);
}

Test(nvls_select, blackwell_and_the_head_cap)
{
	struct coll_lib_spec lib;

	lib_with(&lib, 40.1, sm100, 12);
	/* L = 18 x 40.1 = 721.8; ring 90 x 8 = 720 (80 x 9, 60 x 12,
	 * 45 x 16 equal; 40 / 90 < 0.49). 8 GPUs: bwIntra 80 (9 x 80 =
	 * 720), bwInter 80 -> 90 (the top); bw = min(80 x 0.74 x 7/8 x 2
	 * = 103.6, 90) = 90, algBw = 8 x 90 x 8/14 = 411.43; fabric vs
	 * ring 0.74 x 8/9 x 720 = 473.6. */
	EQ_REL(coll_lib_nvls_select_ratio(&lib, 18, 0.74, 8),
	       (8 * 90 * 8 / 14.0) / (0.74 * 8 / 9.0 * 720), 1e-9);
	/* 72 GPUs, 32 heads (NCCL_MAX_NVLS_ARITY): 33 x bwIntra <= 721.8
	 * -> 20; bwInter 20 -> 24 -> 30 -> 40 (40 = 2 x 20 stops it); bw =
	 * min(20 x 0.74 x 31/32 x 2 = 28.675, 40), algBw = 32 x 28.675 x
	 * 72/142 = 465.26; fabric vs ring: algo.c's links carry (1 + 1 /
	 * 32) per byte (32 heads, not 72): 0.74 x 32/33 x 720 = 516.65. */
	EQ_REL(coll_lib_nvls_select_ratio(&lib, 18, 0.74, 72),
	       (32 * 28.675 * 72 / 142.0) / (0.74 * 32 / 33.0 * 720), 1e-9);
	/* 64 GPUs: the same 32 heads, bwIntra 20, bw 28.675; algBw = 32 x
	 * 28.675 x 64/126 = 466.08; fabric 0.74 x 32/33 x 720 = 516.65:
	 * 0.90211. The uncapped n/(n + 1) = 64/65 gave 524.60 (0.88845):
	 * (64/65) / (32/33) = 1.01538, 1.5 % lower. */
	EQ_REL(coll_lib_nvls_select_ratio(&lib, 18, 0.74, 64),
	       (32 * 28.675 * 64 / 126.0) / (0.74 * 32 / 33.0 * 720), 1e-9);
	cr_assert(fabs(coll_lib_nvls_select_ratio(&lib, 18, 0.74, 64) /
		       ((32 * 28.675 * 64 / 126.0) / (0.74 * 64 / 65.0 * 720)) -
		       (64 / 65.0) / (32 / 33.0)) < 1e-9);
}

Test(nvls_select, no_speed_fits_and_no_data)
{
	struct coll_lib_spec lib;

	lib_with(&lib, 20.6, sm90, 11);
	/* One link of 20.6 GB/s for 8 heads: bwIntra <= 20.6 / 9 = 2.29,
	 * below the slowest speed (3): no NVLS graph, no NVLS. */
	cr_assert_eq(coll_lib_nvls_select_ratio(&lib, 1, 0.85, 8), 0);
	/* Without the search's data the fabric's view stands (1). */
	lib.algo[ALGO_NVLS].select_link_Bps = 0;
	cr_assert_eq(coll_lib_nvls_select_ratio(&lib, 18, 0.85, 4), 1);
	lib_with(&lib, 20.6, sm90, 0);
	cr_assert_eq(coll_lib_nvls_select_ratio(&lib, 18, 0.85, 4), 1);
}

/* The tuner's ring LL128 cap, channels x perChMaxRingLL128Bws, against
 * the fabric's ring at the protocol's bandwidth factor (0.9375). */
Test(nvls_select, ring_ll128_channel_cap)
{
	struct coll_lib_spec lib;

	lib_with(&lib, 40.1, sm100, 12);
	lib.proto[PROTO_LL128].bandwidth_factor = 0.9375;
	lib.proto[PROTO_LL128].select_channel_busbw_Bps = 34.5e9;
	/* Blackwell: ring graph 8 x 90 = 720, doubled to 16 channels; the
	 * tuner's LL128 at most 16 x 34.5 = 552 where the fabric gives
	 * 0.9375 x 720 = 675: 552 / 675. */
	EQ_REL(coll_lib_ring_select_ratio(&lib, PROTO_LL128, 18), 552 / 675.0,
	       1e-9);
	/* No cap on Simple (none given): 1. */
	lib.proto[PROTO_SIMPLE].bandwidth_factor = 1;
	cr_assert_eq(coll_lib_ring_select_ratio(&lib, PROTO_SIMPLE, 18), 1);
	/* Hopper: 6 x 60 = 360 doubled to 12 channels, 12 x 36.7 = 440.4
	 * above 0.9375 x 360 = 337.5: it does not bind (1). H800's 8
	 * links: L = 164.8, 4 x 40 = 160 (20 x 8 equal, 30 x 5 less),
	 * doubled to 8: 8 x 36.7 = 293.6 above 150: 1. */
	lib_with(&lib, 20.6, sm90, 11);
	lib.proto[PROTO_LL128].bandwidth_factor = 0.9375;
	lib.proto[PROTO_LL128].select_channel_busbw_Bps = 36.7e9;
	cr_assert_eq(coll_lib_ring_select_ratio(&lib, PROTO_LL128, 18), 1);
	cr_assert_eq(coll_lib_ring_select_ratio(&lib, PROTO_LL128, 8), 1);
	/* A cap of 20 GB/s binds on Hopper: 12 x 20 / 337.5. */
	lib.proto[PROTO_LL128].select_channel_busbw_Bps = 20e9;
	EQ_REL(coll_lib_ring_select_ratio(&lib, PROTO_LL128, 18), 240 / 337.5,
	       1e-9);
}

static const struct system_spec *preset(struct arena *a, const char *name)
{
	return fx_load(a, &system_schema, name, NULL, 0);
}

static const char *algo_proto(const struct system_spec *s, uint32_t n,
			      double bytes, char *buf, size_t len)
{
	struct run r = { COLL_ALLREDUCE, bytes, NULL, n, -1, 1, NULL };
	struct net_coll_result out = coll_timed(s, &r);

	snprintf(buf, len, "%s/%s", out.algorithm, out.protocol);
	return buf;
}

/* NCCL's tuner on 4 Hopper GPUs (tuning.cc; ring graph 12 x 30 GB/s):
 * ring LL 6.6 + 6 x 0.6 = 10.2 us at min(141, 180) x 4/6 = 94 GB/s;
 * LL128 14 + 6 x 1.9 = 25.4 us at 331.2 x 4/6 = 220.8; Simple 8.4 + 6 x
 * 3.4 = 28.8 us at 240; NVLS 25 us at 160. LL128 overtakes LL at 15.2 us
 * / (1/94 - 1/220.8) = 2.49 MB and Simple LL128 at 3.4 us / (1/220.8 -
 * 1/240) = 9.4 MB; NVLS never wins. 8 GPUs: NVLS 25 us at 272 overtakes
 * LL (15 us at 80.6) at 1.14 MB. */
Test(nvls_select, hopper_choice_is_nccls)
{
	struct arena a;
	const struct system_spec *s;
	char b[64];

	arena_init(&a);
	s = preset(&a, "dgx-h100");
	cr_assert_str_eq(algo_proto(s, 4, 2 * 1048576.0, b, 64), "ring/ll");
	cr_assert_str_eq(algo_proto(s, 4, 4 * 1048576.0, b, 64), "ring/ll128");
	cr_assert_str_eq(algo_proto(s, 4, 8 * 1048576.0, b, 64), "ring/ll128");
	cr_assert_str_eq(algo_proto(s, 4, 32 * 1048576.0, b, 64),
			 "ring/simple");
	cr_assert_str_eq(algo_proto(s, 4, GiB, b, 64), "ring/simple");
	cr_assert_str_eq(algo_proto(s, 8, 1048576.0, b, 64), "ring/ll");
	cr_assert_str_eq(algo_proto(s, 8, 2 * 1048576.0, b, 64), "nvls/simple");
	cr_assert_str_eq(algo_proto(s, 8, GiB, b, 64), "nvls/simple");
	arena_release(&a);
}

/* Blackwell, 8 GPUs: NVLS 25 us at 411.4 GB/s; ring LL 15 us at min(282,
 * 360) x 8/14 = 161.1: NVLS from 10 us / (1/161.1 - 1/411.4) = 2.65 MB
 * (ring Simple: the same 411.4 at 56 us). 4 GPUs: NVLS 240 against the
 * ring's 480: never. */
Test(nvls_select, blackwell_choice_is_nccls)
{
	struct arena a;
	const struct system_spec *s;
	char b[64];

	arena_init(&a);
	s = preset(&a, "dgx-b200");
	cr_assert_str_eq(algo_proto(s, 8, 2 * 1048576.0, b, 64), "ring/ll");
	cr_assert_str_eq(algo_proto(s, 8, 4 * 1048576.0, b, 64), "nvls/simple");
	cr_assert_str_eq(algo_proto(s, 8, GiB, b, 64), "nvls/simple");
	/* 4 GPUs: ring LL 10.2 us at 188 GB/s, LL128 25.4 us at 552 x 4/6
	 * = 368, Simple 28.8 us at 480: LL128 never wins; Simple overtakes
	 * LL at 18.6 us / (1/188 - 1/480) = 5.75 MB. */
	cr_assert_str_eq(algo_proto(s, 4, 4 * 1048576.0, b, 64), "ring/ll");
	cr_assert_str_eq(algo_proto(s, 4, 8 * 1048576.0, b, 64), "ring/simple");
	cr_assert_str_eq(algo_proto(s, 4, 16 * 1048576.0, b, 64),
			 "ring/simple");
	cr_assert_str_neq(algo_proto(s, 4, 64 * 1048576.0, b, 64),
			  "nvls/simple");
	cr_assert_str_neq(algo_proto(s, 4, GiB, b, 64), "nvls/simple");
	arena_release(&a);
}

/* The search's data belong to NVLS and list speeds fastest first: bad
 * input is refused at load, not run. */
Test(nvls_select, bad_search_data_is_refused)
{
	static const char *const unsorted[] = {
		"collectives.algorithms.nvls.select_speeds=[50,60]" };
	static const char *const misplaced[] = {
		"collectives.algorithms.ring.select_speeds=[60]" };
	struct arena a;
	struct diag d;
	struct config_ctx cx = { &a, &d, "." };
	struct system_spec *sys;

	arena_init(&a);
	diag_init(&d, NULL);
	sys = arena_alloc(&a, system_schema.size);
	cr_assert_not_null(sys);
	cr_assert_neq(config_load(&cx, &system_schema, "dgx-h100", unsorted, 1,
				  sys), 0);
	cr_assert_neq(config_load(&cx, &system_schema, "dgx-h100", misplaced,
				  1, sys), 0);
	cr_assert_eq(config_load(&cx, &system_schema, "dgx-h100", NULL, 0,
				 sys), 0);
	arena_release(&a);
}

/* NCCL's NVLS graph has at most NCCL_MAX_NVLS_ARITY = 32 heads
 * (v2.26.2-1 src/include/device.h:181; search.cc maxChannels = min(32,
 * GPUs)); a channel's loop is nHeads chunks (all_reduce.h NVLS oneNode
 * loopCount), only heads reduce, and every GPU's switch link carries n
 * (serving every slice's ld_reduce, taking every multicast) plus a head's
 * own n / nHeads. So on one NVL72 domain 64 ranks have the 32 heads 32
 * ranks have: the same link volume n (1 + 1/32), the same loops (32
 * heads x the channels x chunk: the same chunk halvings and fill), the
 * same 25 us NVLS step: the same time, not (1 + 1/64) / (1 + 1/32) =
 * 0.985 of it as one head per rank gave. */
Test(nvls_run, heads_stop_at_32)
{
	struct arena a;
	const struct system_spec *s;
	struct run r32 = { COLL_ALLREDUCE, 8 * GiB, NULL, 32, ALGO_NVLS, 1,
			   NULL };
	struct run r64 = r32;
	struct net_coll_result o32, o64;

	arena_init(&a);
	s = preset(&a, "gb200-nvl72");
	r64.n = 64;
	o32 = coll_timed(s, &r32);
	o64 = coll_timed(s, &r64);
	cr_assert_str_eq(o64.algorithm, "nvls");
	EQ_REL(o64.time_s, o32.time_s, 1e-9);
	arena_release(&a);
}

/* The switches' reduction rate R (fabric reduction_bandwidth): every
 * GPU's n bytes pass the switches' reduce once whoever heads the slice,
 * so the collective takes n / R whatever the heads (algo.c
 * nvls_reduce_bound), not the links' n (1 + 1/nh) / 0.74. With R far
 * below the links (50 or 100 GB/s) the bound sets the rate, and between
 * the two only the bandwidth term changes: n (1 + F L / S) (1/50 - 1/100)
 * GB/s with F = 2 loops of fill (3 stages) and L = K nh c a loop (gb200-
 * nvl72: K = 24 channels, c = 128 KiB at 8 GiB: 8 GiB >= 64 K nh c for
 * nh = 8 and 32). 8 GPUs (8 heads): L = 24 MiB, 8 GiB x (1 + 2 x 24 MiB
 * / 8 GiB) x 1e-11 s/B = 0.0864026 s; 64 GPUs (32 heads): L = 96 MiB,
 * 8 GiB x 1.0234375 x 1e-11 = 0.0879126 s. The link model alone would
 * make the 64 GPUs' bytes (1 + 1/32) / (1 + 1/8) = 0.917 of the 8's. */
static double nvls_time(struct arena *a, const char *R, uint32_t n)
{
	char o[64];
	const char *ov[] = { o };
	const struct system_spec *s;
	struct run r = { COLL_ALLREDUCE, 8 * GiB, NULL, n, ALGO_NVLS, 1,
			 NULL };
	struct net_coll_result out;

	snprintf(o, sizeof(o), "scale_up.reduction_bandwidth=%s", R);
	s = fx_load(a, &system_schema, "gb200-nvl72", ov, 1);
	cr_assert_not_null(s);
	out = coll_timed(s, &r);
	cr_assert_str_eq(out.algorithm, "nvls");
	return out.time_s;
}

Test(nvls_run, switch_reduce_rate_binds_whatever_the_heads)
{
	struct arena a;

	arena_init(&a);
	EQ_REL(nvls_time(&a, "50GB/s", 8) - nvls_time(&a, "100GB/s", 8),
	       0.0864026, 1e-5);
	EQ_REL(nvls_time(&a, "50GB/s", 64) - nvls_time(&a, "100GB/s", 64),
	       0.0879126, 1e-5);
	arena_release(&a);
}

/* 0 is no bound: the links alone (n (1 + 1/nh) / 0.74 at 18 x 40.1 GB/s
 * sustained) pace it, faster than the preset's 445.2 GB/s bound on 64
 * GPUs; a rate above the links' changes nothing. */
Test(nvls_run, switch_reduce_rate_zero_is_off)
{
	struct arena a;
	double t0, tp, tbig;

	arena_init(&a);
	t0 = nvls_time(&a, "0B/s", 64);
	tp = nvls_time(&a, "445.2GB/s", 64);
	tbig = nvls_time(&a, "5000GB/s", 64);
	cr_assert_lt(t0, tp * 0.95);
	EQ_REL(tbig, t0, 1e-9);
	arena_release(&a);
}
