/*
 * spec_collectives.h - a collective library's behaviour as data: which
 * algorithms and protocols it offers, their latency constants and
 * bandwidth factors, how they cut a collective into chunks, channels and
 * PXN forwarding.
 *
 * Loaded from configs/collectives/NAME.yaml (kind "collectives"; nccl,
 * rccl) through collectives_schema. The constants mirror the libraries'
 * own tuning models (NCCL src/graph/tuning.cc, RCCL's fork of it); each
 * carries its source in the YAML. The fabric model (src/network) uses
 * them to cost and select algorithms; the enums below are also the
 * values of coll_desc.algo / coll_desc.proto (coll.h).
 *
 * Depends on schema.h and coll.h.
 */
#ifndef LLMSIM_CONFIG_SPEC_COLLECTIVES_H
#define LLMSIM_CONFIG_SPEC_COLLECTIVES_H

#include <stdint.h>

#include "base/coll.h"
#include "schema.h"

enum coll_algo {
	ALGO_RING,		/* pipelined ring(s) */
	ALGO_TREE,		/* double binary tree across nodes, chain within */
	ALGO_DIRECT,		/* one shot: every rank to every rank at once */
	ALGO_RHD,		/* recursive halving-doubling */
	ALGO_HIER,		/* intra-node RS -> inter-node -> intra-node AG */
	ALGO_NVLS,		/* in-switch reduction and multicast */
	ALGO_PAIRWISE,		/* all-to-all in p-1 shifted rounds */
	ALGO_P2P,		/* all-to-all, send/recv: every send posted at once */
	ALGO_NVLS_TREE,		/* NVLS in each node, a tree of NICs across nodes */
	ALGO_COUNT
};

enum coll_proto {
	PROTO_LL,		/* 8 B lines: 4 B data + 4 B flag */
	PROTO_LL128,		/* 128 B lines: 120 B data + 8 B flag */
	PROTO_SIMPLE,		/* bulk copies with fences */
	PROTO_COUNT
};

/* "ring", "tree", ... and "ll", "ll128", "simple"; NULL-terminated. */
extern const char *const coll_algo_names[ALGO_COUNT + 1];
extern const char *const coll_proto_names[PROTO_COUNT + 1];

/* One latency per protocol. */
struct coll_proto_times {
	double s[PROTO_COUNT];			/* s, indexed by enum coll_proto */
};

/* Which protocols an algorithm runs with. */
struct coll_proto_flags {
	int on[PROTO_COUNT];			/* 1 = offered */
};

/* One size in bytes per protocol. */
struct coll_proto_bytes {
	double b[PROTO_COUNT];			/* B, indexed by enum coll_proto */
};

/* One dimensionless factor per protocol. */
struct coll_proto_ratios {
	double r[PROTO_COUNT];			/* indexed by enum coll_proto */
};

/* One list of integers per protocol. */
struct coll_proto_lists {
	struct schema_int_list l[PROTO_COUNT];	/* indexed by enum coll_proto */
};

/* Operations an algorithm is not used for (enum coll_op of coll.h). */
struct coll_op_flags {
	int off[COLL_OP_COUNT];			/* 1 = not for this op */
};

/* How the library cuts a collective into loops of chunks with one
 * protocol (src/network/pipe.c has the model). chunk_B 0 = not modeled. */
struct coll_pipe_spec {
	double chunk_B;				/* B, largest chunk a channel moves per step */
	double chunk_4nodes_B;			/* B, the chunk's cap once the group spans 4 or
						 * more nodes (applied after the halvings);
						 * 0 = none */
	struct schema_int_list halve_below;	/* loops per hop of depth: halve the chunk while the collective makes fewer */
	struct schema_int_list halvings;	/* halvings in all allowed up to each halve_below entry */
	int64_t channels;			/* channels (thread blocks); 0 = kernel_units for the group */
	int64_t slices;				/* sync points per chunk step */
	double sync_s;				/* s, a channel's idle time per sync point */
	int64_t stages;				/* stages a chunk passes inside a rank (fill: stages - 1 loops) */
	double chunk_time_s;			/* s, a channel's serial time per chunk it handles in a loop
						 * (scaled by the bytes of a partial one); 0 = none */
	double channel_cell_B;			/* B, unit the collective is spread over its channels in;
						 * 0 = loops fill the first channels first */
	double chain_chunk_B;			/* rings: B a broadcast or reduce chain's channel
						 * forwards per step, whole (store and forward);
						 * 0 = chains not modeled */
	double chain_channel_Bps;		/* B/s, most one channel forwards a chain's
						 * step at; 0 = the links' share only */
	double peer_part_min_B;			/* p2p: B, least part of one send a channel
						 * takes (more channels only past it);
						 * 0 = the loops of all channels */
	double peer_part_max_B;			/* p2p: B, most part of one send a channel
						 * takes before the send doubles its channels */
};

/* Node-count classes of the libraries' tuning tables (NCCL's index2 of
 * llMaxBws: 1 node, 2 nodes, more than 2; RCCL's bwRatio: up to 2 nodes,
 * more than 2). */
enum coll_scale {
	SCALE_1NODE,
	SCALE_2NODES,
	SCALE_4NODES,		/* more than 2 nodes */
	SCALE_COUNT
};

struct coll_algo_spec {
	struct coll_proto_flags protocols;	/* offered protocols; none = algorithm off */
	struct coll_op_flags excludes;		/* ops the library does not run it for */
	int64_t max_nodes;			/* largest node count it runs on; 0 = any */
	double max_bytes;			/* B, largest collective it runs for; 0 = any */
	struct coll_proto_bytes proto_max_bytes;	/* B, per protocol: largest collective
						 * the library runs it with (MSCCL's
						 * program maxBytes); 0 = any */
	struct coll_proto_flags up_then_down;	/* tree all-reduce: per protocol, the reduce
						 * reaches the root over all the data before
						 * the broadcast starts (else both at once) */
	struct coll_proto_bytes peer_max_B;	/* B, p2p, per protocol: largest send to one
						 * peer the library runs with it, by rule
						 * (NCCL_P2P_LL_THRESHOLD): at or below it this
						 * protocol, above it another; 0 = no rule */
	double reduce_Bps;			/* B/s, a direct all-reduce's separate local
						 * reduction between its two shots (of the
						 * collective's bytes); 0 = fused into the receive */
	struct coll_proto_times base;		/* s, fixed cost per collective */
	struct coll_proto_times hop_scale_up;	/* s, per step over NVLink / xGMI / UALink */
	struct coll_proto_times hop_pcie;	/* s, per step over PCIe */
	struct coll_proto_times hop_net;	/* s, per step over the scale-out network */
	struct coll_proto_times select_hop_scale_up;	/* s, hop_scale_up as the library's
						 * tuner sees it, for its choice only; 0 = hop_scale_up */
	struct coll_proto_times select_hop_net;	/* s, the same for hop_net */
	struct coll_pipe_spec pipe[PROTO_COUNT];	/* chunked pipeline per protocol */
	struct coll_proto_ratios select_bw[SCALE_COUNT];	/* factor on its bandwidth in the
						 * library's choice only (RCCL's bwRatio), by scale */
	struct coll_proto_lists select_size_pct;	/* per protocol, % on its bandwidth in
						 * the choice only, by size bucket
						 * floor(log2(bytes / 64)), the last
						 * entry beyond (RCCL's tree/ring
						 * CorrectionFactor x 100); none = 100 */
	int64_t select_size_min_nodes;		/* select_size_pct applies from this many nodes */
	struct coll_proto_ratios select_lat_nodes;	/* factor (>= 1) on its latency in the
						 * choice only, for an all-reduce spanning
						 * nodes (NCCL's ring plateau); 0 or 1 = none */
	double select_lat_nodes_min_B;		/* B per channel (max_channels) and rank
						 * from which select_lat_nodes applies */
	int64_t select_chain_steps;		/* rings: steps the library's tuner charges a
						 * broadcast or reduce chain (NCCL: 1 when its
						 * channels share one ring order); 0 = the
						 * chain's own, for its choice only */
	struct coll_proto_bytes channel_min_B;	/* B, per protocol: bytes a channel must have
						 * before the kernel runs one more (nthreads x
						 * threadThreshold); 0 = every channel always */
	struct coll_proto_bytes channel_min_rank_B;	/* B, per protocol: the same per rank of
						 * the group, added to channel_min_B (NCCL's ring
						 * LL threshold x nRanks); 0 = none */
	double select_link_Bps;			/* NVLS: B/s one scale-up link has in the
						 * library's graph search (NCCL SMxx_NVLINK_BW);
						 * 0 = no graph-search view */
	struct schema_int_list select_speeds;	/* GB/s, the graph search's channel
						 * speeds, fastest first (NCCL
						 * smXXSpeedArrayIntra) */
	int64_t select_heads_max;		/* NVLS: most heads (channels) of its graph
						 * (NCCL_MAX_NVLS_ARITY); 0 = the ranks */
	double head_busbw_Bps[SCALE_COUNT];	/* NVLSTree: B/s of bus bandwidth one NVLS
						 * head sustains, by scale (NCCL
						 * perChMaxNVLSTreeBws); the collective's
						 * is at most heads x this; 0 = none */
};

struct coll_proto_spec {
	double bandwidth_factor;		/* fraction of line bytes that are user data */
	double max_busbw_Bps[SCALE_COUNT];	/* B/s, library cap on bus bandwidth by scale; 0 = none */
	double sustained_busbw_Bps;		/* B/s, most bus bandwidth its kernels sustain, which
						 * the library's choice does not see; 0 = none */
	double channel_busbw_Bps;		/* B/s, bus bandwidth one running channel sustains
						 * where channel_min_* cut the channels; 0 = the
						 * caps' per-channel share */
	double select_channel_busbw_Bps;	/* B/s, a one-node ring channel's bus bandwidth
						 * cap in the library's tuner (NCCL
						 * perChMaxRingLL128Bws), for its choice only;
						 * 0 = none */
};

/* Compute units (SMs / CUs) a collective's kernels hold while it runs,
 * by where its group lies: one thread block per channel, each on its own
 * unit (a GEMM's blocks fill a unit's registers, so they cannot share). */
struct coll_units_spec {
	int64_t scale_up;				/* group within one node */
	int64_t scale_out;				/* group spanning nodes */
	int64_t p2p;					/* a send/recv pair */
	int64_t p2p_scale_up;				/* a send/recv pair within
							 * one node (0: p2p) */
};

/* Sizes at which the library forces a protocol on groups spanning two or
 * more nodes (RCCL's llProtoRanges, rcclUpdateCollectiveProtocol): per
 * operation and protocol, [lo, hi] in bytes, the protocol for lo < size
 * <= hi, LL128 over LL, Simple outside both; the size is RCCL's size per
 * rank (the buffer for all-reduce, bytes / ranks otherwise). An empty
 * list: no range; no list for an operation: the tuner's own choice. */
struct coll_proto_ranges {
	struct schema_int_list proto[PROTO_COUNT];	/* B, [lo, hi] or empty; Simple unused */
};

/* How the library schedules a group of collectives launched as one
 * (coll_desc.group; NCCL ncclGroupStart/End, src/network/algo_group.c):
 * their traffic is laid over the channels one after another, each
 * channel taking about total / channels, and a channel runs the parts it
 * holds in turn. */
struct coll_group_spec {
	double channel_min_B;			/* B of traffic a channel takes at least, and
						 * the least one operation counts for; 0 =
						 * the group's total / channels */
	struct coll_proto_ratios traffic;	/* traffic per byte by protocol (>= 1) */
};

/* The p2p channels a send to a rank on another node (scale-up domain)
 * takes, and how one node's peers share them (NCCL src/graph/paths.cc
 * ncclTopoGetNchannels / ncclTopoComputeP2pChannels, src/include/
 * channel.h ncclP2pChannelBaseForRound; src/network/algo.c net_send_bound).
 * channels 0 and channel_Bps 0: not modelled. */
enum { NET_HALVE_NONE, NET_HALVE_RANKS, NET_HALVE_BATCHES };
struct coll_net_peer_spec {
	int64_t channels;		/* a network peer's channels before halving
					 * (NCCL_NCHANNELS_PER_NET_PEER's default) */
	double channel_Bps;		/* B/s a channel is counted to carry: a peer
					 * then gets max(NICs, ceil(NIC B/s / this));
					 * 0 = channels */
	int halve;			/* NET_HALVE_*: how the channels shrink with ranks */
	int64_t batch;			/* peers of one node a channel group holds */
};

struct coll_lib_spec {
	const char *name;				/* preset name */
	int pxn;					/* forward cross-rail sends through the scale-up peer on the receiver's rail */
	int ring_own_nics;				/* a ring leaves a node on its last GPU's own NIC and
							 * the next node runs reversed from that rail */
	int ll128_c2c;					/* runs LL128 across nodes where the system's
							 * GPUs reach their NICs over C2C
							 * (system nic_via_c2c) */
	int gpu_floor;					/* its ring and tree LL kernels run at the GPU's own
							 * collective_launch / collective_ll_step
							 * (the tuner keeps base / hop_scale_up) */
	int64_t max_channels;				/* parallel rings/trees per collective */
	struct coll_proto_times net_overhead;		/* s, floor of a step when the group spans nodes */
	struct coll_proto_spec proto[PROTO_COUNT];	/* per protocol */
	struct coll_algo_spec algo[ALGO_COUNT];		/* per algorithm */
	struct coll_units_spec kernel_units;		/* compute units held while running */
	struct coll_proto_ranges ranges[COLL_OP_COUNT];	/* forced protocols across nodes */
	struct coll_group_spec group;			/* grouped collectives' schedule */
	struct coll_net_peer_spec net_peer;		/* p2p channels across nodes */
};

/* The factor (select_size_pct / 100) the library's choice puts on
 * algorithm a with protocol p for a collective of size_B bytes over
 * nnodes nodes; 1 where none is given. */
double coll_lib_size_factor(const struct coll_lib_spec *lib, int a, int p,
			    double size_B, uint32_t nnodes);

/* NCCL's tuner view of an NVLS all-reduce over n GPUs of one scale-up
 * domain, each with `links` links at NVLS efficiency eff, against the
 * ring it competes with, as a factor on the bandwidth the fabric model
 * gives NVLS (spec_collectives.c): 1 without select_link_Bps or
 * select_speeds (of lib's nvls algorithm); 0 when the library's graph
 * search finds no NVLS channel (the library then has no NVLS). */
double coll_lib_nvls_select_ratio(const struct coll_lib_spec *lib,
				  int64_t links, double eff, uint32_t n);

/* NCCL's tuner caps a one-node ring's bus bandwidth with protocol p at
 * its ring graph's channels x select_channel_busbw (perChMaxRingLL128Bws);
 * the factor that puts on the fabric's ring bandwidth (links per GPU to
 * the switch), for the choice only: 1 where the cap does not bind or the
 * graph search's data are not given (spec_collectives.c). */
double coll_lib_ring_select_ratio(const struct coll_lib_spec *lib, int p,
				  int64_t links);

/* The factor (select_lat_nodes, >= 1) the library's choice puts on
 * algorithm a's latency with protocol p for an op of size_B over nranks
 * spanning nnodes: all-reduces across nodes with at least
 * select_lat_nodes_min_bytes per channel (max_channels) and rank; 1
 * otherwise. */
double coll_lib_lat_factor(const struct coll_lib_spec *lib, int a, int p,
			   enum coll_op op, double size_B, uint32_t nranks,
			   uint32_t nnodes);
/* The protocol lib forces on a collective of op and size_B (coll.h's
 * convention) over nranks GPUs spanning nnodes nodes, or -1 when it
 * leaves the choice to its tuner. */
int coll_lib_range_proto(const struct coll_lib_spec *lib, enum coll_op op,
			 double size_B, uint32_t nranks, uint32_t nnodes);

/* collectives_schema's check (spec_collectives_check.c): keys that only
 * together are wrong, such as a key under an algorithm that never reads
 * it; 0, or -1 after an error at the key. */
int coll_lib_check(void *obj, const struct schema_at *at, struct diag *d);

extern const struct schema collectives_schema;

#endif
