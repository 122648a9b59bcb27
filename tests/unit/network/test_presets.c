/*
 * test_presets.c - the shipped links, fabrics, collective libraries and
 * systems (configs/, from the repository root where `make test` runs)
 * load, build, and give the figures their sources state. Accuracy
 * against measurements is `llmsim validate --kind collective`'s job.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "config/config.h"
#include "base/diag.h"
#include "base/arena.h"
#include "network/link.h"
#include "network/net.h"
#include "network/pipe.h"
#include "config/schema.h"
#include "config/spec_system.h"
#include "fixtures.h"

static const char **presets(struct arena *a, const struct schema *s)
{
	struct diag d;
	struct config_ctx cx = { a, &d, "." };
	const char **list;

	diag_init(&d, stderr);
	list = config_list_presets(&cx, s);
	cr_assert_not_null(list);
	cr_assert_not_null(list[0], "no %s presets", s->kind);
	return list;
}

Test(net_presets, schema_tables_are_well_formed)
{
	struct diag d;

	diag_init(&d, stderr);
	cr_assert_eq(schema_check_table(&link_schema, &d), 0);
	cr_assert_eq(schema_check_table(&fabric_schema, &d), 0);
	cr_assert_eq(schema_check_table(&collectives_schema, &d), 0);
	cr_assert_eq(schema_check_table(&system_schema, &d), 0);
}

Test(net_presets, every_link_fabric_and_library_loads)
{
	static const struct schema *const kinds[] = {
		&link_schema, &fabric_schema, &collectives_schema,
	};
	struct arena a;
	size_t k, i;

	arena_init(&a);
	for (k = 0; k < 3; k++) {
		const char **list = presets(&a, kinds[k]);

		for (i = 0; list[i]; i++)
			fx_load(&a, kinds[k], list[i], NULL, 0);
	}
	arena_release(&a);
}

static double payload(struct arena *a, const char *link)
{
	const struct link_spec *l = fx_load(a, &link_schema, link, NULL, 0);

	return link_payload_rate_Bps(l);
}

Test(net_presets, link_rates_match_their_sources)
{
	struct arena a;

	arena_init(&a);
	/* 400GbE: 4 x 106.25 Gb/s * (256/257)(514/544) = 50 GB/s of data,
	 * RoCEv2 at 4096/4178 -> 49.02 GB/s. */
	cr_assert_float_eq(payload(&a, "ethernet-400g"), 50e9 * 4096 / 4178, 1e3);
	/* NVLink 4: 26.5625 GB/s raw * 256/272 = 25 GB/s [S5]. */
	cr_assert_float_eq(payload(&a, "nvlink4"), 25e9, 1e3);
	/* xGMI 3: 16 x 32 Gb/s = 64 GB/s [V6]. */
	cr_assert_float_eq(payload(&a, "xgmi3"), 64e9, 1e3);
	/* UALink x4: 100 GB/s of data * 0.9294 = 92.94 GB/s ("93%" [S40]). */
	cr_assert_float_eq(payload(&a, "ualink-200g-x4"),
			   100e9 * 256 / 272 * 632 / 640, 1e3);
	/* PCIe Gen5 x16: 63.0 GB/s * 256/284 = 56.8 GB/s (measured 52-56). */
	cr_assert_float_eq(payload(&a, "pcie-gen5-x16"),
			   64e9 * 128 / 130 * 256 / 284, 1e3);
	arena_release(&a);
}

/* Every system, on 2 nodes, runs a 64 MiB all-reduce over all its GPUs
 * and an all-to-all, with busbw under each GPU's links (scale-up +
 * NIC) except NVLS. */
Test(net_presets, every_system_builds_and_runs)
{
	static const char *const two[] = { "nodes=2" };
	struct arena a;
	const char **list;
	size_t i;

	arena_init(&a);
	list = presets(&a, &system_schema);
	for (i = 0; list[i]; i++) {
		const struct system_spec *s =
			fx_load(&a, &system_schema, list[i], two, 1);
		uint32_t p = (uint32_t)system_gpus(s), k;
		uint32_t *gpus = arena_alloc(&a, p * sizeof(*gpus));
		struct coll_desc c = { COLL_ALLREDUCE, 64 << 20, gpus, p, NULL,
				       -1, -1, 1, 0, NULL, 0, 0, 0 };
		struct net_coll_result r;
		struct diag d;
		struct net *n;

		diag_init(&d, stderr);
		for (k = 0; k < p; k++)
			gpus[k] = k;
		n = net_new(s, NULL, &d);
		cr_assert_not_null(n, "%s", list[i]);
		cr_assert_eq(net_collective_time(n, &c, &r, &d), 0, "%s", list[i]);
		cr_assert_gt(r.busbw_Bps, 1e9, "%s: %g", list[i], r.busbw_Bps);
		c.op = COLL_ALLTOALL;
		cr_assert_eq(net_collective_time(n, &c, &r, &d), 0, "%s", list[i]);
		net_free(n);
	}
	arena_release(&a);
}

Test(net_presets, mi300x_pair_is_one_link)
{
	struct arena a;
	const struct system_spec *s;
	uint32_t g[2] = { 0, 1 };
	struct coll_desc c = { COLL_ALLREDUCE, 1 << 30, g, 2, NULL, -1, -1, 1, 0, NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;

	arena_init(&a);
	diag_init(&d, stderr);
	s = fx_load(&a, &system_schema, "mi300x-roce", NULL, 0);
	n = net_new(s, NULL, &d);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	/* Two MI300X talk over their one xGMI link: 64 GB/s * 0.75 sustained
	 * = 48 GB/s less RCCL's 17 + 2.1 us latency on 1 GiB (0.05%):
	 * between 47 and 48 GB/s, as measured (47.7 [S5]), not 336. */
	cr_assert(r.busbw_Bps > 47e9 && r.busbw_Bps <= 48e9, "%g", r.busbw_Bps);
	net_free(n);
	arena_release(&a);
}

/* NCCL's p2p kernel (an ncclSend / ncclRecv group, ncclAlltoAll) is
 * launched like any other and runs the same LL / Simple primitives; NCCL's
 * tuner gives every kernel algorithm the same base by protocol (tuning.cc
 * v2.29.2-1 baseLatencies: Ring LL 6.6, Simple 8.4 us), so the nccl preset
 * charges p2p the Ring's base. End to end: 1 KiB all-to-all on 2 H100 is
 * 512 B to the peer, LL (<= 16 KiB a peer): base 6.6 + one NVLink LL step
 * 0.6 = 7.2 us, the 512 B (1 KiB of LL lines) adding under 0.05 us at
 * 141 GB/s (llMaxBws, one node). */
Test(net_presets, nccl_p2p_pays_the_kernel_base_of_its_protocol)
{
	struct arena a;
	const struct coll_lib_spec *lib;
	const struct system_spec *s;
	uint32_t g[2] = { 0, 1 };
	struct coll_desc c = { COLL_ALLTOALL, 1024, g, 2, NULL, -1, -1, 1, 0,
			       NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;

	arena_init(&a);
	diag_init(&d, stderr);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	cr_assert_float_eq(lib->algo[ALGO_P2P].base.s[PROTO_LL], 6.6e-6, 1e-12);
	cr_assert_float_eq(lib->algo[ALGO_P2P].base.s[PROTO_SIMPLE], 8.4e-6,
			   1e-12);
	cr_assert_float_eq(lib->algo[ALGO_P2P].base.s[PROTO_LL],
			   lib->algo[ALGO_RING].base.s[PROTO_LL], 1e-12);
	cr_assert_float_eq(lib->algo[ALGO_P2P].base.s[PROTO_SIMPLE],
			   lib->algo[ALGO_RING].base.s[PROTO_SIMPLE], 1e-12);
	s = fx_load(&a, &system_schema, "dgx-h100", NULL, 0);
	n = net_new(s, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert(r.time_s >= 7.2e-6 && r.time_s < 7.25e-6, "%g", r.time_s);
	cr_assert_str_eq(r.protocol, "ll");
	net_free(n);
	arena_release(&a);
}

/* NCCL's p2p Simple send step by step on the H100's fitted channel send
 * rate (h100.yaml p2p_channel_send 20.73 GB/s; network/pipe.c "p2p").
 * 512 MiB all-to-all on 2 H100: 256 MiB to the peer on 16 channels
 * (k0 = 32 / 2; 16 MiB parts, not above the most), 32 steps of 512 KiB a
 * channel: base 8.4 + the first step's hop 3.4 + 31 syncs x 2 us = 73.8
 * us; the send at min(16 x 20.73 = 331.68 GB/s, the GPU's p2p_gpu_send
 * 313.1 GB/s, all of it to the one peer; the links' 370.8): 268435456 /
 * 313.1e9 = 857.35 us; the last step's receive copy at the ring's
 * chain_channel_bandwidth 38.7 GB/s: 524288 / 38.7e9 = 13.55 us; 944.70
 * us in all. */
Test(net_presets, nccl_p2p_simple_sends_step_by_step_at_the_channel_rate)
{
	struct arena a;
	const struct system_spec *s;
	uint32_t g[2] = { 0, 1 };
	struct coll_desc c = { COLL_ALLTOALL, 512.0 * 1024 * 1024, g, 2, NULL,
			       -1, -1, 1, 0, NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;
	double want = 8.4e-6 + 3.4e-6 + 31 * 2e-6 +
		      268435456.0 / 313.1e9 + 524288.0 / 38.7e9;

	arena_init(&a);
	diag_init(&d, stderr);
	s = fx_load(&a, &system_schema, "dgx-h100", NULL, 0);
	cr_assert_float_eq(s->gpu->p2p_channel_send_Bps, 20.73e9, 1);
	cr_assert_float_eq(s->gpu->p2p_gpu_send_Bps, 313.1e9, 1);
	n = net_new(s, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert_str_eq(r.protocol, "simple");
	cr_assert_float_eq(r.time_s, want, want * 1e-6, "%.9g vs %.9g",
			   r.time_s, want);
	net_free(n);
	arena_release(&a);
}

/* All of a GPU's p2p sends together at most its p2p_gpu_send (h100.yaml
 * 313.1 GB/s; network/pipe.c "p2p"). 512 MiB all-to-all on 8 H100: 64
 * MiB to each of 7 peers on 4 channels each (k0 = 32 / 8; 16 MiB parts),
 * 32 steps of 512 KiB a channel: base 8.4 + hop 3.4 + 31 x 2 us = 73.8
 * us; a send at min(4 x 20.73 = 82.92 GB/s, its share 1/7 of 313.1 =
 * 44.73 GB/s, the links' 370.8 / 7 = 52.97): 67108864 x 7 / 313.1e9 =
 * 1500.35 us; the last step's copy 13.55 us; 1587.70 us in all. Without
 * the key (0) the links bind: 67108864 x 7 / 370.8e9 = 1266.9 us. */
Test(net_presets, nccl_p2p_sends_share_the_gpus_p2p_rate)
{
	struct arena a;
	const struct system_spec *s;
	uint32_t g[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct coll_desc c = { COLL_ALLTOALL, 512.0 * 1024 * 1024, g, 8, NULL,
			       -1, -1, 1, 0, NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;
	double want = 8.4e-6 + 3.4e-6 + 31 * 2e-6 +
		      67108864.0 * 7 / 313.1e9 + 524288.0 / 38.7e9;

	arena_init(&a);
	diag_init(&d, stderr);
	s = fx_load(&a, &system_schema, "dgx-h100", NULL, 0);
	n = net_new(s, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert_str_eq(r.protocol, "simple");
	cr_assert_float_eq(r.time_s, want, want * 1e-6, "%.9g vs %.9g",
			   r.time_s, want);
	net_free(n);
	arena_release(&a);
}

/* NCCL's p2p kernel at the GPU's own fixed cost (b200.yaml p2p_launch
 * 9.28 us with one peer, p2p_peer 0.458 us each further one, in place of
 * NCCL's p2p base 6.6 us LL): 1 KiB all-to-all on 2 B200 is 512 B to the
 * peer, LL: 9.28 + one NVLink LL step 0.6 = 9.88 us; on 8 B200, 128 B to
 * each of 7 peers: 9.28 + 6 x 0.458 + 0.6 = 12.628 us; the bytes (LL
 * lines) add under 0.05 us. H100 has neither: NCCL's 6.6 + 0.6 = 7.2 us
 * (nccl_p2p_pays_the_kernel_base_of_its_protocol). */
Test(net_presets, nccl_p2p_runs_at_the_gpus_own_launch_and_peers)
{
	struct arena a;
	const struct system_spec *s;
	uint32_t g[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct coll_desc c = { COLL_ALLTOALL, 1024, g, 2, NULL, -1, -1, 1, 0,
			       NULL, 0, 0, 0 };
	struct net_coll_result r;
	struct diag d;
	struct net *n;

	arena_init(&a);
	diag_init(&d, stderr);
	s = fx_load(&a, &system_schema, "dgx-b200", NULL, 0);
	cr_assert_float_eq(s->gpu->p2p_launch_s, 9.28e-6, 1e-12);
	cr_assert_float_eq(s->gpu->p2p_peer_s, 0.458e-6, 1e-12);
	n = net_new(s, NULL, &d);
	cr_assert_not_null(n);
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert_str_eq(r.protocol, "ll");
	cr_assert(r.time_s >= 9.88e-6 && r.time_s < 9.93e-6, "%g", r.time_s);
	c.ngpus = 8;
	cr_assert_eq(net_collective_time(n, &c, &r, &d), 0);
	cr_assert_str_eq(r.protocol, "ll");
	cr_assert(r.time_s >= 12.628e-6 && r.time_s < 12.678e-6, "%g",
		  r.time_s);
	net_free(n);
	arena_release(&a);
}

/* Load the nccl preset with one --set override; its load's return, the
 * errors reported in *errors. */
static int nccl_with(const char *set, int *errors)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx = { &a, &d, "." };
	void *obj;
	int rc;

	arena_init(&a);
	diag_init(&d, NULL);
	obj = arena_alloc(&a, collectives_schema.size);
	cr_assert_not_null(obj);
	rc = config_load(&cx, &collectives_schema, "nccl", &set, 1, obj);
	*errors = d.errors;
	arena_release(&a);
	return rc;
}

Test(net_presets, pipeline_halvings_pair_with_thresholds)
{
	int errors;

	/* NVLS has 3 thresholds (64, 8, 2 loops): one cap on halvings is
	 * not a rule per threshold; one error, and the load fails. */
	cr_assert_eq(nccl_with("algorithms.nvls.pipeline.simple.halvings=[1]",
			       &errors), -1);
	cr_assert_eq(errors, 1);
}

Test(net_presets, nccl_nvls_chunks_follow_enqueue)
{
	struct arena a;
	const struct coll_lib_spec *lib;
	struct pipe pp;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	/* 16 NVLS channels x 8 heads on one node of 8 H100. */
	pipe_init(&pp, &lib->algo[ALGO_NVLS].pipe[PROTO_SIMPLE],
		  &(struct pipe_shape){ 8, 1, 1, 0 });
	pp.chunks *= (double)lib->algo[ALGO_NVLS].pipe[PROTO_SIMPLE].channels;
	/* NCCL's rule: 128 KiB from 64 x 128 x 128 KiB = 1 GiB up, 64 KiB
	 * from 8 x 128 x 64 KiB = 64 MiB, 32 KiB from 8 MiB, else 16 KiB
	 * (the DGX H100 table steps up between 512 MiB and 1 GiB). */
	cr_assert_float_eq(pipe_chunk_B(&pp, 1073741824.0), 131072, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 536870912.0), 65536, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 67108864.0), 65536, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 33554432.0), 32768, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 4194304.0), 16384, 0);
	arena_release(&a);
}

Test(net_presets, nccl_nvls_tree_chunks_follow_enqueue)
{
	struct arena a;
	const struct coll_lib_spec *lib;
	const struct coll_pipe_spec *ps;
	struct pipe pp;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	ps = &lib->algo[ALGO_NVLS_TREE].pipe[PROTO_SIMPLE];
	/* 16 NVLS channels x 8 heads (2 nodes of 8 H100, 8 NICs each). */
	pipe_init(&pp, ps, &(struct pipe_shape){ 8, 1, 1, 2 });
	pp.chunks *= (double)ps->channels;
	cr_assert_float_eq(pp.chunks, 128, 0);
	/* enqueue.cc (v2.26.2-1, NVLS_TREE): 128 KiB from 4 x 128 x
	 * 128 KiB = 64 MiB up (the 16 x rule needs a chunk over 128 KiB),
	 * 64 KiB down to 1 x 128 x 64 KiB = 8 MiB, 32 KiB below;
	 * pipe_init's fill: stages - 1 + the shape's 2 (the algorithm
	 * passes its own, algo.c nvls_tree_fill). */
	cr_assert_float_eq(pipe_chunk_B(&pp, 268435456.0), 131072, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 134217728.0), 131072, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 67108864.0), 131072, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 33554432.0), 65536, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 8388608.0), 65536, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 4194304.0), 32768, 0);
	cr_assert_float_eq(pp.fill, 5, 0);
	/* from 4 nodes NCCL_NVLSTREE_MAX_CHUNKSIZE's default, 64 KiB */
	cr_assert_float_eq(ps->chunk_4nodes_B, 65536, 0);
	arena_release(&a);
}

/* A Tree/Simple all-reduce keeps NCCL's step (512 KiB) at every size from
 * v2.20.3-1 on (enqueue.cc calcCollChunking: no tree.depth rule), while
 * RCCL still halves by the tree's depth (ROCm/rccl enqueue.cc). Shape as
 * algo_ring.c tree_pipe for 20 NVL72 racks: 32 channels of one chunk a
 * loop, depth 71 + floor(log2 20) = 75, fill 2 x 75 - 1 = 149. */
Test(net_presets, nccl_tree_simple_keeps_its_step_rccl_halves)
{
	struct arena a;
	const struct coll_lib_spec *lib;
	struct pipe pp;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	pipe_init(&pp, &lib->algo[ALGO_TREE].pipe[PROTO_SIMPLE],
		  &(struct pipe_shape){ 32, 1, 75, 149 });
	/* 512 MiB is 32 chunks a channel, under 8 x 75: NCCL 2.19 went to
	 * 64 KiB here; 2.20+ keeps 512 KiB. */
	cr_assert_float_eq(pipe_chunk_B(&pp, 536870912.0), 524288, 0);
	cr_assert_float_eq(pipe_chunk_B(&pp, 1048576.0), 524288, 0);
	/* its fill: 149 loops of 32 x 512 KiB = 2384 MiB over 512 MiB */
	cr_assert_float_eq(pipe_volume_factor(&pp, 536870912.0),
			   1 + 149.0 * 16 / 512, 1e-12);
	lib = fx_load(&a, &collectives_schema, "rccl", NULL, 0);
	pipe_init(&pp, &lib->algo[ALGO_TREE].pipe[PROTO_SIMPLE],
		  &(struct pipe_shape){ 32, 1, 75, 149 });
	/* RCCL: 512 MiB / (32 x 512 KiB) = 32 < 8 x 75 -> 256, 128 KiB (2
	 * halvings, the first rule's cap); 128 < 4 x 75 -> 64 KiB (3);
	 * 256 >= 75: stop. */
	cr_assert_float_eq(pipe_chunk_B(&pp, 536870912.0), 65536, 0);
	arena_release(&a);
}

Test(net_presets, chunk_4nodes_refuses_bad_values)
{
	static const char *const bad[] = {
		"algorithms.nvls_tree.pipeline.simple.chunk_4nodes=-64KiB",
		"algorithms.nvls_tree.pipeline.simple.chunk_4nodes=[1,2]",
		"algorithms.nvls_tree.pipeline.simple.chunk_4nodes=nan",
	};
	size_t i;
	int errors;

	for (i = 0; i < 3; i++) {
		cr_assert_eq(nccl_with(bad[i], &errors), -1, "%s", bad[i]);
		cr_assert_geq(errors, 1);
	}
}

Test(net_presets, nccl_nvls_tree_head_busbw_is_hoppers)
{
	struct arena a;
	const struct coll_lib_spec *lib;
	const struct coll_algo_spec *nt;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	nt = &lib->algo[ALGO_NVLS_TREE];
	/* perChMaxNVLSTreeBws, Hopper row {0, 57.7, 45.5} (NVIDIA/nccl
	 * v2.28.3-1 tuning.cc): 8 heads x 57.7 = 461.6 GB/s bus on 2 nodes
	 * of 8 H100 (nccl-tests #309 reads 466-469 at 4-16 GiB), 364 on 4 */
	cr_assert_float_eq(nt->head_busbw_Bps[SCALE_1NODE], 0, 0);
	cr_assert_float_eq(nt->head_busbw_Bps[SCALE_2NODES], 57.7e9, 1);
	cr_assert_float_eq(nt->head_busbw_Bps[SCALE_4NODES], 45.5e9, 1);
	/* no other algorithm carries it */
	cr_assert_float_eq(lib->algo[ALGO_NVLS].head_busbw_Bps[SCALE_2NODES],
			   0, 0);
	arena_release(&a);
}

Test(net_presets, head_busbw_refuses_bad_values)
{
	static const char *const bad[] = {
		"algorithms.nvls_tree.head_busbw_2nodes=-1GB/s",
		"algorithms.nvls_tree.head_busbw_4nodes=nan",
		"algorithms.nvls_tree.head_busbw_2nodes=[1,2]",
		"algorithms.nvls_tree.head_busbw_4nodes=fast",
		/* read by nvls_tree only: elsewhere it would do nothing */
		"algorithms.ring.head_busbw_2nodes=50GB/s",
		"algorithms.nvls.head_busbw_4nodes=50GB/s",
		/* a rate is 0 (none) or >= 1 GB/s (RATE_FLOOR_Bps) */
		"algorithms.nvls_tree.head_busbw_2nodes=1MB/s",
	};
	size_t i;
	int errors;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(nccl_with(bad[i], &errors), -1, "%s", bad[i]);
		cr_assert_geq(errors, 1);
	}
}

/* The factor NCCL's tuner puts on a tree all-reduce of `bytes` (one
 * node; NCCL applies it at every node count). */
#define EQ_TREE(lib, p, bytes, want) \
	cr_assert_float_eq(coll_lib_size_factor((lib), ALGO_TREE, (p), \
						(bytes), 1), (want), 1e-12)

Test(net_presets, nccl_trees_carry_the_tuners_correction)
{
	struct arena a;
	const struct coll_lib_spec *lib;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	/* NCCL's ncclTopoGetAlgoTime times a tree all-reduce at its
	 * bandwidth x treeCorrectionFactor[log2i(bytes >> 6)]: 2 MiB is
	 * bucket log2(2^21 / 2^6) = 15, LL128 0.6; 512 KiB bucket 13, LL
	 * 0.4; 256 MiB bucket 22, Simple 0.9; 512 MiB bucket 23 is past
	 * the table (1.0). Rings keep their bandwidth (1.0). */
	EQ_TREE(lib, PROTO_LL128, 2097152.0, 0.6);
	EQ_TREE(lib, PROTO_LL, 524288.0, 0.4);
	EQ_TREE(lib, PROTO_SIMPLE, 268435456.0, 0.9);
	EQ_TREE(lib, PROTO_SIMPLE, 536870912.0, 1.0);
	cr_assert_float_eq(coll_lib_size_factor(lib, ALGO_RING, PROTO_LL128,
						2097152.0, 1), 1.0, 1e-12);
	arena_release(&a);
}

/* The sync tax's per-op sigma (system.variability.op_jitter) is one GPU's
 * own sd. Trace ST (ByteDance-Seed/StragglerAnalysis) measures a worker's
 * deviation from the median of its stage's 2 dp ranks, itself included:
 * half a pair's difference, sd sigma / sqrt 2 = 1.07 %, so sigma =
 * sqrt(2 x 1.07^2 - 2 x 0.31^2) = 1.45 % (0.99 % without the 1 % tails:
 * 1.33 %), taken as 1.4 %: every system that models variability says so. */
Test(net_presets, op_jitter_is_one_gpus_sd_not_the_peer_deviation)
{
	struct arena a;
	const char **list;
	size_t i, n = 0;
	double lo = sqrt(2 * 0.0099 * 0.0099 - 2 * 0.0031 * 0.0031);
	double hi = sqrt(2 * 0.0107 * 0.0107 - 2 * 0.0031 * 0.0031);

	arena_init(&a);
	list = presets(&a, &system_schema);
	for (i = 0; list[i]; i++) {
		const struct system_spec *s =
			fx_load(&a, &system_schema, list[i], NULL, 0);

		if (!(s->variability.op_jitter > 0))
			continue;
		n++;
		cr_assert(s->variability.op_jitter >= lo - 1e-4 &&
			  s->variability.op_jitter <= hi + 1e-4,
			  "%s: op_jitter %g outside [%g, %g]", list[i],
			  s->variability.op_jitter, lo, hi);
	}
	cr_assert_gt(n, 0);
	arena_release(&a);
}

/* NCCL's NVLS CTAs by architecture (NVIDIA/nccl src/transport/nvls.cc):
 * Hopper NVLS_NCHANNELS_SM90 16 (nccl.yaml), Blackwell within one NVLink
 * domain NVLS_NCHANNELS_SM100_NVL 24 (v2.27.3-1 on), across nodes
 * NVLS_NCHANNELS_SM100 32 (NVLSTree, v2.25.1-1 to v2.29.7-1): every
 * Blackwell system states the two; the 2.26 release preset changes none.
 * A 72-GPU NVL72 loop of NVLS is then 24 channels x 72 heads x 128 KiB
 * = 216 MiB (nvls: one head a GPU in llmsim's model). */
Test(net_presets, blackwell_systems_run_nccls_nvls_channels)
{
	static const char *const bw[] = {
		"dgx-b200", "dgx-b300", "gb200-nvl72", "gb300-nvl72",
	};
	struct arena a;
	const struct coll_lib_spec *lib;
	size_t i;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	cr_assert_eq(lib->algo[ALGO_NVLS].pipe[PROTO_SIMPLE].channels, 16);
	cr_assert_eq(lib->algo[ALGO_NVLS_TREE].pipe[PROTO_SIMPLE].channels, 16);
	lib = fx_load(&a, &collectives_schema, "nccl-2.26", NULL, 0);
	cr_assert_eq(lib->algo[ALGO_NVLS].pipe[PROTO_SIMPLE].channels, 16);
	cr_assert_float_eq(lib->algo[ALGO_NVLS_TREE].hop_net.s[PROTO_SIMPLE],
			   14e-6, 1e-12);
	for (i = 0; i < 4; i++) {
		const struct system_spec *s =
			fx_load(&a, &system_schema, bw[i], NULL, 0);

		cr_assert_eq(s->collectives->algo[ALGO_NVLS]
			     .pipe[PROTO_SIMPLE].channels, 24, "%s", bw[i]);
		cr_assert_eq(s->collectives->algo[ALGO_NVLS_TREE]
			     .pipe[PROTO_SIMPLE].channels, 32, "%s", bw[i]);
	}
	arena_release(&a);
}

/* LL128 across nodes over a C2C NIC path (test_coll_c2c.c): NCCL 2.26's
 * tuner enables LL128 only up to PATH_PXB / PXN and a GB200's NIC sits
 * behind its Grace (C2C + PCI = PATH_PHB); v2.27.3-1 added P2C and
 * NCCL_LL128_C2C (default 1). So the current release runs it, the 2.26
 * preset does not, and of the Blackwell systems only GB200 reaches its
 * NICs over C2C (the HGX boards' NICs share a PCIe switch with their GPU;
 * GB300's ConnectX-8 carries the PCIe switch its GPU hangs off [?]). */
Test(net_presets, ll128_over_c2c_by_release_and_system)
{
	static const char *const pcie[] = {
		"dgx-h100", "dgx-b200", "dgx-b300", "gb300-nvl72",
	};
	struct arena a;
	const struct coll_lib_spec *lib;
	const struct system_spec *s;
	size_t i;

	arena_init(&a);
	lib = fx_load(&a, &collectives_schema, "nccl", NULL, 0);
	cr_assert(lib->ll128_c2c);
	lib = fx_load(&a, &collectives_schema, "nccl-2.26", NULL, 0);
	cr_assert(!lib->ll128_c2c);
	s = fx_load(&a, &system_schema, "gb200-nvl72", NULL, 0);
	cr_assert(s->nic_via_c2c);
	cr_assert(s->collectives->ll128_c2c);
	for (i = 0; i < 4; i++) {
		s = fx_load(&a, &system_schema, pcie[i], NULL, 0);
		cr_assert(!s->nic_via_c2c, "%s", pcie[i]);
	}
	arena_release(&a);
}
