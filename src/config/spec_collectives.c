/*
 * spec_collectives.c - the collective-library schema.
 *
 * Layout of configs/collectives/NAME.yaml:
 *
 *   pxn: true
 *   ring_own_nics: true                      (optional)
 *   gpu_floor: true                          (optional)
 *   max_channels: 32
 *   net_overhead: {ll: 1 us, ll128: 1 us, simple: 3 us}
 *   protocols:
 *     ll:     {bandwidth_factor: 0.5, max_busbw: 141 GB/s,
 *              max_busbw_2nodes: 39 GB/s, max_busbw_4nodes: 20.4 GB/s}
 *     ll128:  {bandwidth_factor: 0.9375}
 *     simple: {bandwidth_factor: 1}
 *   algorithms:
 *     ring:
 *       protocols:    {ll: true, ll128: true, simple: true}
 *       excludes:     {alltoall: true}      (optional)
 *       base:         {ll: 6.6 us, ll128: 14 us, simple: 8.4 us}
 *       hop_scale_up: {ll: 0.6 us, ll128: 1.9 us, simple: 3.4 us}
 *       hop_pcie:     {...}
 *       hop_net:      {...}
 *       max_bytes: 16 MiB                    (optional)
 *       proto_max_bytes: {ll: 524287 B}      (optional, per protocol)
 *       peer_max_bytes: {ll: 16 KiB}         (optional, p2p, per protocol)
 *       channel_min_bytes: {ll: 2048 B}      (optional, per protocol)
 *       channel_min_bytes_per_rank: {ll: 4 KiB}   (optional, per protocol)
 *       pipeline:                            (optional, per protocol)
 *         simple: {chunk: 2 MiB, slices: 2, sync: 3.7 us}
 *     nvls:
 *       pipeline:
 *         simple: {chunk: 128 KiB, halve_below: [64, 8, 2],
 *                  halvings: [1, 2, 3], channels: 16, stages: 3,
 *                  sync: 1.2 us, chunk_time: 2 us}
 *     tree: ...
 *   kernel_units: {scale_up: 24, scale_out: 16, p2p: 2}
 *
 * An algorithm absent, or with no protocol switched on, is not offered.
 */
#include "spec_collectives.h"

#include <stddef.h>

/* The floor of every "0 = none" rate of a channel, a link or a cap (a
 * bus bandwidth, a forwarding or reduction rate): 1 GB/s. The slowest
 * link NCCL's graph search knows runs 6 GB/s (NVIDIA/nccl v2.29.2-1
 * src/graph/topo.h: BDW_QPI_BW, ZPI_BW, ARM_BW 6.0), its per-channel
 * tuner caps are 10-40 GB/s (tuning.cc perChMax*Bws), and one PCIe 3.0
 * lane moves 0.985 GB/s a direction; a value below it is a unit slip
 * (MB/s for GB/s), which priced a 1 GiB broadcast at 1.5 years. */
#define RATE_FLOOR_Bps 1e9

#define TIME(p, k) { .key = k, .type = ST_TIME, \
	.offset = offsetof(struct coll_proto_times, s) + (p) * sizeof(double), \
	.def = "0 us", .max = 1e-2, .flags = SF_FIT, .help = k " protocol" }

static const struct schema_field times_fields[] = {
	TIME(PROTO_LL, "ll"),
	TIME(PROTO_LL128, "ll128"),
	TIME(PROTO_SIMPLE, "simple"),
};

static const struct schema times_schema = {
	.kind = "collectives.latency",
	.help = "one latency per protocol",
	.size = sizeof(struct coll_proto_times),
	.fields = times_fields,
	.nfields = SCHEMA_COUNT(times_fields),
};

#define RATIO(p, k) { .key = k, .type = ST_NUM, \
	.offset = offsetof(struct coll_proto_ratios, r) + (p) * sizeof(double), \
	.def = "1", .min = 0, .max = 1, .flags = SF_MIN_EXCL, \
	.help = k " protocol" }

#define FACTOR(p, k) { .key = k, .type = ST_NUM, \
	.offset = offsetof(struct coll_proto_ratios, r) + (p) * sizeof(double), \
	.def = "1", .min = 1, .max = 100, .help = k " protocol" }

static const struct schema_field factors_fields[] = {
	FACTOR(PROTO_LL, "ll"),
	FACTOR(PROTO_LL128, "ll128"),
	FACTOR(PROTO_SIMPLE, "simple"),
};

static const struct schema factors_schema = {
	.kind = "collectives.algorithm.select_lat_nodes",
	.help = "one factor (>= 1) per protocol",
	.size = sizeof(struct coll_proto_ratios),
	.fields = factors_fields,
	.nfields = SCHEMA_COUNT(factors_fields),
};

static const struct schema_field ratios_fields[] = {
	RATIO(PROTO_LL, "ll"),
	RATIO(PROTO_LL128, "ll128"),
	RATIO(PROTO_SIMPLE, "simple"),
};

static const struct schema ratios_schema = {
	.kind = "collectives.algorithm.select_bw",
	.help = "one factor per protocol",
	.size = sizeof(struct coll_proto_ratios),
	.fields = ratios_fields,
	.nfields = SCHEMA_COUNT(ratios_fields),
};

#define PBYTES(p, k) { .key = k, .type = ST_BYTES, \
	.offset = offsetof(struct coll_proto_bytes, b) + (p) * sizeof(double), \
	.def = "0 B", .max = 1e15, .help = k " protocol; 0 = any size" }

static const struct schema_field pbytes_fields[] = {
	PBYTES(PROTO_LL, "ll"),
	PBYTES(PROTO_LL128, "ll128"),
	PBYTES(PROTO_SIMPLE, "simple"),
};

static const struct schema pbytes_schema = {
	.kind = "collectives.algorithm.proto_max_bytes",
	.help = "one size per protocol",
	.size = sizeof(struct coll_proto_bytes),
	.fields = pbytes_fields,
	.nfields = SCHEMA_COUNT(pbytes_fields),
};

static const struct schema peer_bytes_schema = {
	.kind = "collectives.algorithm.peer_max_bytes",
	.help = "one size per protocol",
	.size = sizeof(struct coll_proto_bytes),
	.fields = pbytes_fields,
	.nfields = SCHEMA_COUNT(pbytes_fields),
};

#define CBYTES(p, k) { .key = k, .type = ST_BYTES, \
	.offset = offsetof(struct coll_proto_bytes, b) + (p) * sizeof(double), \
	.def = "0 B", .max = 1e15, .help = k " protocol; 0 = every channel" }

static const struct schema_field cbytes_fields[] = {
	CBYTES(PROTO_LL, "ll"),
	CBYTES(PROTO_LL128, "ll128"),
	CBYTES(PROTO_SIMPLE, "simple"),
};

static const struct schema cbytes_schema = {
	.kind = "collectives.algorithm.channel_min_bytes",
	.help = "one size per protocol",
	.size = sizeof(struct coll_proto_bytes),
	.fields = cbytes_fields,
	.nfields = SCHEMA_COUNT(cbytes_fields),
};

static const struct schema crbytes_schema = {
	.kind = "collectives.algorithm.channel_min_bytes_per_rank",
	.help = "one size per protocol",
	.size = sizeof(struct coll_proto_bytes),
	.fields = cbytes_fields,
	.nfields = SCHEMA_COUNT(cbytes_fields),
};

#define SIZEPCT(p, k) { .key = k, .type = ST_INT_LIST, \
	.offset = offsetof(struct coll_proto_lists, l) + \
		  (p) * sizeof(struct schema_int_list), \
	.flags = SF_OPTIONAL, .min = 1, .max = 10000, \
	.help = k " protocol: percent per size bucket, 64 B, 128 B, ..." }

static const struct schema_field sizepct_fields[] = {
	SIZEPCT(PROTO_LL, "ll"),
	SIZEPCT(PROTO_LL128, "ll128"),
	SIZEPCT(PROTO_SIMPLE, "simple"),
};

static const struct schema sizepct_schema = {
	.kind = "collectives.algorithm.select_size_pct",
	.help = "one list of percents per protocol",
	.size = sizeof(struct coll_proto_lists),
	.fields = sizepct_fields,
	.nfields = SCHEMA_COUNT(sizepct_fields),
};

#define FLAG(p, k) { .key = k, .type = ST_BOOL, \
	.offset = offsetof(struct coll_proto_flags, on) + (p) * sizeof(int), \
	.def = "false", .help = "offer the " k " protocol" }

static const struct schema_field flags_fields[] = {
	FLAG(PROTO_LL, "ll"),
	FLAG(PROTO_LL128, "ll128"),
	FLAG(PROTO_SIMPLE, "simple"),
};

static const struct schema flags_schema = {
	.kind = "collectives.algorithm.protocols",
	.help = "which protocols an algorithm runs with",
	.size = sizeof(struct coll_proto_flags),
	.fields = flags_fields,
	.nfields = SCHEMA_COUNT(flags_fields),
};

#define SEQ(p, k) { .key = k, .type = ST_BOOL, \
	.offset = offsetof(struct coll_proto_flags, on) + (p) * sizeof(int), \
	.def = "false", .help = "the " k " protocol's tree reduces all the " \
	"data before it broadcasts" }

static const struct schema_field seq_fields[] = {
	SEQ(PROTO_LL, "ll"),
	SEQ(PROTO_LL128, "ll128"),
	SEQ(PROTO_SIMPLE, "simple"),
};

static const struct schema seq_schema = {
	.kind = "collectives.algorithm.up_then_down",
	.help = "per protocol: the tree's reduce, then its broadcast",
	.size = sizeof(struct coll_proto_flags),
	.fields = seq_fields,
	.nfields = SCHEMA_COUNT(seq_fields),
};

#define OPF(op, k) { .key = k, .type = ST_BOOL, .def = "false", \
	.offset = offsetof(struct coll_op_flags, off) + (op) * sizeof(int), \
	.help = "not used for " k }

static const struct schema_field ops_fields[] = {
	OPF(COLL_ALLREDUCE, "allreduce"),
	OPF(COLL_ALLGATHER, "allgather"),
	OPF(COLL_REDUCESCATTER, "reducescatter"),
	OPF(COLL_ALLTOALL, "alltoall"),
	OPF(COLL_BROADCAST, "broadcast"),
	OPF(COLL_REDUCE, "reduce"),
	OPF(COLL_SENDRECV, "sendrecv"),
};

static const struct schema ops_schema = {
	.kind = "collectives.algorithm.excludes",
	.help = "operations the library does not use an algorithm for",
	.size = sizeof(struct coll_op_flags),
	.fields = ops_fields,
	.nfields = SCHEMA_COUNT(ops_fields),
};

#define PIOFF(m) offsetof(struct coll_pipe_spec, m)

static const struct schema_field pipe_fields[] = {
	{ .key = "chunk", .type = ST_BYTES, .offset = PIOFF(chunk_B),
	  .def = "0 B", .max = 1e12,
	  .help = "largest chunk a channel moves per step; 0 = no pipeline model" },
	{ .key = "chunk_4nodes", .type = ST_BYTES, .offset = PIOFF(chunk_4nodes_B),
	  .def = "0 B", .max = 1e12,
	  .help = "the chunk's cap once the group spans 4 or more nodes, after "
		  "the halvings (NCCL's NVLSTree NCCL_NVLSTREE_MAX_CHUNKSIZE "
		  "default); 0 = none" },
	{ .key = "halve_below", .type = ST_INT_LIST, .offset = PIOFF(halve_below),
	  .flags = SF_OPTIONAL, .min = 1, .max = 1e9,
	  .help = "loops per hop of pipeline depth: in turn, halve the chunk "
		  "while the collective would make fewer" },
	{ .key = "halvings", .type = ST_INT_LIST, .offset = PIOFF(halvings),
	  .flags = SF_OPTIONAL, .min = 0, .max = 30,
	  .help = "halvings in all allowed up to each halve_below entry" },
	{ .key = "channels", .type = ST_INT, .offset = PIOFF(channels),
	  .def = "0", .min = 0, .max = 1024,
	  .help = "channels the kernel runs; 0 = the kernel units it holds" },
	{ .key = "slices", .type = ST_INT, .offset = PIOFF(slices),
	  .def = "1", .min = 1, .max = 1024,
	  .help = "sync points per chunk step" },
	{ .key = "sync", .type = ST_TIME, .offset = PIOFF(sync_s),
	  .def = "0 us", .max = 1e-3,
	  .flags = SF_FIT,
	  .help = "a channel's idle time per sync point" },
	{ .key = "stages", .type = ST_INT, .offset = PIOFF(stages),
	  .def = "1", .min = 1, .max = 64,
	  .help = "stages a chunk passes inside a rank; the pipeline fills "
		  "in stages - 1 loops" },
	{ .key = "chunk_time", .type = ST_TIME, .offset = PIOFF(chunk_time_s),
	  .def = "0 us", .max = 1e-3,
	  .flags = SF_FIT,
	  .help = "a channel's serial time per chunk it handles in a loop "
		  "(a partial chunk: its share); a loop takes at least that "
		  "times the chunks of the channel with the most; 0 = none" },
	{ .key = "channel_cell", .type = ST_BYTES, .offset = PIOFF(channel_cell_B),
	  .def = "0 B", .max = 1e12,
	  .help = "the library spreads the collective evenly over its "
		  "channels in units of this size (chunk_time then counts "
		  "the first channel's share); 0 = each loop fills the "
		  "first channels' chunks first" },
	{ .key = "chain_chunk", .type = ST_BYTES, .offset = PIOFF(chain_chunk_B),
	  .def = "0 B", .max = 1e12,
	  .help = "rings: bytes a broadcast or reduce chain's channel "
		  "receives whole before it forwards them (one step, one sync); "
		  "a chain of p-1 hops then fills in p-2 steps; 0 = chains "
		  "not modeled" },
	{ .key = "chain_channel_bandwidth", .type = ST_BANDWIDTH,
	  .offset = PIOFF(chain_channel_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "with chain_chunk: the most one channel forwards a step "
		  "at, whatever the links leave it (one thread block); also "
		  "the rate a one-node ring channel copies each loop's final, "
		  "local-only step at; 0 = the links' share only, no final "
		  "step" },
	{ .key = "peer_part_min", .type = ST_BYTES,
	  .offset = PIOFF(peer_part_min_B), .def = "0 B", .max = 1e12,
	  .help = "p2p: a send to one peer takes one more channel per this "
		  "many bytes, up to the channels a peer gets of the group's "
		  "(channels halved while peers x channels exceed them); a "
		  "channel's steps are then its part of the largest send; 0 = "
		  "the loops of all channels" },
	{ .key = "peer_part_max", .type = ST_BYTES,
	  .offset = PIOFF(peer_part_max_B), .def = "0 B", .max = 1e12,
	  .help = "p2p, with peer_part_min: a send whose part per channel "
		  "exceeds this doubles its channels, up to all of them; 0 = "
		  "never" },
};

static const struct schema pipe_schema = {
	.kind = "collectives.algorithm.pipeline.protocol",
	.help = "how the library cuts a collective into loops of chunks",
	.size = sizeof(struct coll_pipe_spec),
	.fields = pipe_fields,
	.nfields = SCHEMA_COUNT(pipe_fields),
};

#define PIPE(p, k) { .key = k, .type = ST_SECTION, \
	.offset = (p) * sizeof(struct coll_pipe_spec), .sub = &pipe_schema, \
	.flags = SF_OPTIONAL, .help = "the " k " protocol's pipeline" }

static const struct schema_field pipes_fields[] = {
	PIPE(PROTO_LL, "ll"),
	PIPE(PROTO_LL128, "ll128"),
	PIPE(PROTO_SIMPLE, "simple"),
};

static const struct schema pipes_schema = {
	.kind = "collectives.algorithm.pipeline",
	.help = "chunked pipeline per protocol",
	.size = sizeof(struct coll_pipe_spec) * PROTO_COUNT,
	.fields = pipes_fields,
	.nfields = SCHEMA_COUNT(pipes_fields),
};

#define AOFF(m) offsetof(struct coll_algo_spec, m)
#define LAT(k, m, h) { .key = k, .type = ST_SECTION, .offset = AOFF(m), \
	.sub = &times_schema, .flags = SF_OPTIONAL, .help = h }

static const struct schema_field algo_fields[] = {
	{ .key = "protocols", .type = ST_SECTION, .offset = AOFF(protocols),
	  .sub = &flags_schema, .flags = SF_OPTIONAL,
	  .help = "protocols this algorithm runs with (none: not offered)" },
	{ .key = "excludes", .type = ST_SECTION, .offset = AOFF(excludes),
	  .sub = &ops_schema, .flags = SF_OPTIONAL,
	  .help = "operations the library does not use it for" },
	{ .key = "up_then_down", .type = ST_SECTION, .offset = AOFF(up_then_down),
	  .sub = &seq_schema, .flags = SF_OPTIONAL,
	  .help = "tree all-reduce, per protocol: the reduce runs to the root "
		  "over all the data, then the broadcast (RCCL's runTreeUpDown); "
		  "false: both at once on split warps (runTreeSplit)" },
	{ .key = "max_nodes", .type = ST_INT, .offset = AOFF(max_nodes),
	  .def = "0", .min = 0, .max = 1e7,
	  .help = "largest number of nodes it runs across; 0 = any" },
	{ .key = "max_bytes", .type = ST_BYTES, .offset = AOFF(max_bytes),
	  .def = "0 B", .max = 1e15,
	  .help = "largest collective (bytes) the library runs it for, as "
		  "MSCCL's maxBytes; 0 = any" },
	{ .key = "proto_max_bytes", .type = ST_SECTION,
	  .offset = AOFF(proto_max_bytes), .sub = &pbytes_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per protocol: largest collective (bytes) the library runs "
		  "this algorithm with that protocol, as the maxBytes of "
		  "MSCCL's per-protocol programs; larger ones take another "
		  "protocol (0 = any)" },
	{ .key = "peer_max_bytes", .type = ST_SECTION,
	  .offset = AOFF(peer_max_B), .sub = &peer_bytes_schema,
	  .flags = SF_OPTIONAL,
	  .help = "p2p (all-to-all, send/recv), per protocol: largest send to "
		  "one peer the library runs with that protocol, a rule rather "
		  "than a tuned choice (NCCL: LL while the bytes fit "
		  "NCCL_P2P_LL_THRESHOLD 16 KiB a channel); larger sends take "
		  "a protocol without one (0 = no rule)" },
	{ .key = "reduce_bandwidth", .type = ST_BANDWIDTH,
	  .offset = AOFF(reduce_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "direct all-reduce: rate of the separate local reduction "
		  "between its two shots, in bytes of the collective per second "
		  "(MSCCL all-pairs reduces the received shards from a scratch "
		  "buffer in a step of its own); 0 = none" },
	LAT("base", base, "fixed latency per collective"),
	LAT("hop_scale_up", hop_scale_up, "latency per step over NVLink/xGMI/UALink"),
	LAT("hop_pcie", hop_pcie, "latency per step over PCIe"),
	LAT("hop_net", hop_net, "latency per step over the scale-out network"),
	LAT("select_hop_scale_up", select_hop_scale_up,
	    "rings and trees: hop_scale_up as the library's tuning model "
	    "sees it, for its choice only (0 = hop_scale_up)"),
	LAT("select_hop_net", select_hop_net,
	    "rings and trees: hop_net as the library's tuning model sees it, "
	    "for its choice only (0 = hop_net)"),
	{ .key = "select_bw", .type = ST_SECTION,
	  .offset = AOFF(select_bw) + SCALE_1NODE * sizeof(struct coll_proto_ratios),
	  .sub = &ratios_schema, .flags = SF_OPTIONAL,
	  .help = "one node: factor on this algorithm's bandwidth as the "
		  "library's tuning model sees it (RCCL bwRatio), for its choice "
		  "only; the chosen plan runs at the fabric's rate" },
	{ .key = "select_bw_2nodes", .type = ST_SECTION,
	  .offset = AOFF(select_bw) + SCALE_2NODES * sizeof(struct coll_proto_ratios),
	  .sub = &ratios_schema, .flags = SF_OPTIONAL,
	  .help = "the same across 2 nodes" },
	{ .key = "select_bw_4nodes", .type = ST_SECTION,
	  .offset = AOFF(select_bw) + SCALE_4NODES * sizeof(struct coll_proto_ratios),
	  .sub = &ratios_schema, .flags = SF_OPTIONAL,
	  .help = "the same across more than 2 nodes" },
	{ .key = "select_size_pct", .type = ST_SECTION,
	  .offset = AOFF(select_size_pct), .sub = &sizepct_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per protocol: percent on this algorithm's bandwidth as the "
		  "library's tuning model sees it, by size bucket floor(log2("
		  "bytes / 64)), the last entry for every larger bucket (RCCL's "
		  "tree/ringCorrectionFactor x 100); for its choice only" },
	{ .key = "select_size_min_nodes", .type = ST_INT,
	  .offset = AOFF(select_size_min_nodes), .def = "1", .min = 1,
	  .max = 1e7,
	  .help = "fewest nodes a group spans for select_size_pct to apply "
		  "(RCCL: 2 for rings, 1 for trees)" },
	{ .key = "select_lat_nodes", .type = ST_SECTION,
	  .offset = AOFF(select_lat_nodes), .sub = &factors_schema,
	  .flags = SF_OPTIONAL,
	  .help = "per protocol: factor on this algorithm's latency as the "
		  "library's tuning model sees an all-reduce spanning nodes "
		  "(NCCL's ring plateau: Simple x 1.4 from sm80, x 1.9 "
		  "before); for its choice only" },
	{ .key = "select_lat_nodes_min_bytes", .type = ST_BYTES,
	  .offset = AOFF(select_lat_nodes_min_B), .def = "0 B", .max = 1e15,
	  .help = "bytes per channel (max_channels) and rank from which "
		  "select_lat_nodes applies (NCCL: nBytes / (nChannels x "
		  "nRanks) >= 64)" },
	{ .key = "select_chain_steps", .type = ST_INT,
	  .offset = AOFF(select_chain_steps), .def = "0", .min = 0,
	  .max = 1e6,
	  .help = "rings: steps the library's tuning model charges a broadcast "
		  "or reduce chain, for its choice only (NCCL: one step when "
		  "its channels share one ring order, tuning.cc sameChannels); "
		  "0 = the chain's own p-1" },
	{ .key = "channel_min_bytes", .type = ST_SECTION,
	  .offset = AOFF(channel_min_B), .sub = &cbytes_schema,
	  .flags = SF_OPTIONAL,
	  .help = "rings and trees, per protocol: bytes of the collective per "
		  "channel below which the kernel runs one channel fewer "
		  "(NCCL/RCCL getChannnelThreadInfo: nthreads x threadThreshold), "
		  "so a small collective runs floor(bytes / this) channels (at "
		  "least 1) and the protocol's bus-bandwidth caps, which describe "
		  "every channel, scale by that share; not in the library's "
		  "choice (0 = every channel)" },
	{ .key = "channel_min_bytes_per_rank", .type = ST_SECTION,
	  .offset = AOFF(channel_min_rank_B), .sub = &crbytes_schema,
	  .flags = SF_OPTIONAL,
	  .help = "as channel_min_bytes, per rank of the group: added to it "
		  "times the ranks (NCCL's ring LL threadThreshold is 8 B x "
		  "nRanks a thread); 0 = none" },
	{ .key = "select_link_bandwidth", .type = ST_BANDWIDTH,
	  .offset = AOFF(select_link_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "nvls: one scale-up link's bandwidth in the library's graph "
		  "search (NCCL SM90_NVLINK_BW 20.6 GB/s, SM100 40.1), times the "
		  "fabric's links_per_endpoint; with select_speeds, NVLS's "
		  "bandwidth in the library's choice is its tuner's (heads x "
		  "min(bwIntra x efficiency x 2 (heads-1)/heads, bwInter)), "
		  "for its choice only; 0 = the fabric's" },
	{ .key = "select_speeds", .type = ST_INT_LIST,
	  .offset = AOFF(select_speeds), .flags = SF_OPTIONAL, .min = 1,
	  .max = 100000,
	  .help = "nvls: the graph search's channel speeds in GB/s, fastest "
		  "first (NCCL sm90SpeedArrayIntra / sm100SpeedArrayIntra)" },
	{ .key = "select_heads_max", .type = ST_INT,
	  .offset = AOFF(select_heads_max), .def = "0", .min = 2, .max = 1e6,
	  .flags = SF_ZERO_OFF,
	  .help = "nvls: most heads (channels) of the library's NVLS graph "
		  "(NCCL_MAX_NVLS_ARITY 32), at least 2: the tuner's busBw "
		  "is heads x bwIntra x 2 (heads-1)/heads, none with one; 0 = "
		  "one per rank" },
	{ .key = "head_busbw_2nodes", .type = ST_BANDWIDTH,
	  .offset = AOFF(head_busbw_Bps) + SCALE_2NODES * sizeof(double),
	  .def = "0 B/s", .min = RATE_FLOOR_Bps, .max = 1e14,
	  .flags = SF_ZERO_OFF,
	  .help = "nvls_tree across 2 nodes: bus bandwidth one NVLS head (one "
		  "NIC's GPU a node) sustains; the all-reduce's bus bandwidth "
		  "is at most heads x this, in the run and the library's choice "
		  "(NCCL perChMaxNVLSTreeBws, tuning.cc from v2.28.3-1); "
		  "0 = none" },
	{ .key = "head_busbw_4nodes", .type = ST_BANDWIDTH,
	  .offset = AOFF(head_busbw_Bps) + SCALE_4NODES * sizeof(double),
	  .def = "0 B/s", .min = RATE_FLOOR_Bps, .max = 1e14,
	  .flags = SF_ZERO_OFF,
	  .help = "nvls_tree across more than 2 nodes: the same" },
	{ .key = "pipeline", .type = ST_SECTION, .offset = AOFF(pipe),
	  .sub = &pipes_schema, .flags = SF_OPTIONAL,
	  .help = "how it cuts a collective into loops of chunks, per protocol" },
};

static const struct schema algo_schema = {
	.kind = "collectives.algorithm",
	.help = "an algorithm's protocols and latency constants",
	.size = sizeof(struct coll_algo_spec),
	.fields = algo_fields,
	.nfields = SCHEMA_COUNT(algo_fields),
};

#define ALGO(a, k, h) { .key = k, .type = ST_SECTION, \
	.offset = (a) * sizeof(struct coll_algo_spec), .sub = &algo_schema, \
	.flags = SF_OPTIONAL, .help = h }

static const struct schema_field algos_fields[] = {
	ALGO(ALGO_RING, "ring", "pipelined rings"),
	ALGO(ALGO_TREE, "tree", "double binary tree across nodes, chain within"),
	ALGO(ALGO_DIRECT, "direct", "one shot: every rank to every peer at once"),
	ALGO(ALGO_RHD, "rhd", "recursive halving-doubling"),
	ALGO(ALGO_HIER, "hierarchical", "intra RS, inter-node, intra AG"),
	ALGO(ALGO_NVLS, "nvls", "in-switch reduction (NVLink SHARP)"),
	ALGO(ALGO_PAIRWISE, "pairwise", "all-to-all in p-1 rounds"),
	ALGO(ALGO_P2P, "p2p", "all-to-all and send/recv, every send at once"),
	ALGO(ALGO_NVLS_TREE, "nvls_tree", "all-reduce across nodes: NVLS in "
	     "each node, a double binary tree of NICs between them"),
};

static const struct schema algos_schema = {
	.kind = "collectives.algorithms",
	.help = "the algorithms the library offers",
	.size = sizeof(struct coll_algo_spec) * ALGO_COUNT,
	.fields = algos_fields,
	.nfields = SCHEMA_COUNT(algos_fields),
};

#define POFF(m) offsetof(struct coll_proto_spec, m)

static const struct schema_field proto_fields[] = {
	{ .key = "bandwidth_factor", .type = ST_NUM, .offset = POFF(bandwidth_factor),
	  .min = 0, .max = 1, .flags = SF_OPTIONAL | SF_MIN_EXCL,
	  .help = "fraction of line bytes that are user data; required for "
		  "every protocol an algorithm offers" },
	{ .key = "max_busbw", .type = ST_BANDWIDTH,
	  .offset = POFF(max_busbw_Bps) + SCALE_1NODE * sizeof(double),
	  .def = "0 B/s", .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "library cap on bus bandwidth within one node; 0 = none" },
	{ .key = "max_busbw_2nodes", .type = ST_BANDWIDTH,
	  .offset = POFF(max_busbw_Bps) + SCALE_2NODES * sizeof(double),
	  .def = "0 B/s", .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "the cap when the group spans 2 nodes; 0 = none" },
	{ .key = "max_busbw_4nodes", .type = ST_BANDWIDTH,
	  .offset = POFF(max_busbw_Bps) + SCALE_4NODES * sizeof(double),
	  .def = "0 B/s", .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "the cap when the group spans more than 2 nodes (NCCL's "
		  "third llMaxBws column); 0 = none" },
	{ .key = "sustained_busbw", .type = ST_BANDWIDTH,
	  .offset = POFF(sustained_busbw_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "most bus bandwidth the protocol's kernels sustain (measured); "
		  "the library's own choice does not see it; 0 = none" },
	{ .key = "select_channel_busbw", .type = ST_BANDWIDTH,
	  .offset = POFF(select_channel_busbw_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "one-node rings: a channel's bus bandwidth cap in the "
		  "library's tuner (NCCL perChMaxRingLL128Bws: Hopper 36.7, "
		  "Blackwell 34.5 GB/s), times its ring graph's channels (from "
		  "nvls.select_speeds / select_link_bandwidth); for its choice "
		  "only; 0 = none" },
	{ .key = "channel_busbw", .type = ST_BANDWIDTH,
	  .offset = POFF(channel_busbw_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "bus bandwidth one running channel of the protocol's kernels "
		  "sustains where an algorithm's channel_min_bytes(_per_rank) "
		  "runs fewer channels: the bound is then min(caps, channels x "
		  "this) instead of the caps' per-channel share; not in the "
		  "library's choice; 0 = the share" },
};

static const struct schema proto_schema = {
	.kind = "collectives.protocol",
	.help = "a protocol's bandwidth factor and cap",
	.size = sizeof(struct coll_proto_spec),
	.fields = proto_fields,
	.nfields = SCHEMA_COUNT(proto_fields),
};

#define PROTO(p, k) { .key = k, .type = ST_SECTION, \
	.offset = (p) * sizeof(struct coll_proto_spec), .sub = &proto_schema, \
	.flags = SF_OPTIONAL, .help = "the " k " protocol" }

static const struct schema_field protos_fields[] = {
	PROTO(PROTO_LL, "ll"),
	PROTO(PROTO_LL128, "ll128"),
	PROTO(PROTO_SIMPLE, "simple"),
};

static const struct schema protos_schema = {
	.kind = "collectives.protocols",
	.help = "bandwidth factors and caps per protocol",
	.size = sizeof(struct coll_proto_spec) * PROTO_COUNT,
	.fields = protos_fields,
	.nfields = SCHEMA_COUNT(protos_fields),
};

#define UOFF(m) offsetof(struct coll_units_spec, m)

static const struct schema_field units_fields[] = {
	{ .key = "scale_up", .type = ST_INT, .offset = UOFF(scale_up),
	  .def = "0", .min = 0, .max = 1024,
	  .help = "units a collective within one node holds" },
	{ .key = "scale_out", .type = ST_INT, .offset = UOFF(scale_out),
	  .def = "0", .min = 0, .max = 1024,
	  .help = "units a collective spanning nodes holds" },
	{ .key = "p2p", .type = ST_INT, .offset = UOFF(p2p),
	  .def = "0", .min = 0, .max = 1024,
	  .help = "units a send/recv holds" },
	{ .key = "p2p_scale_up", .type = ST_INT, .offset = UOFF(p2p_scale_up),
	  .def = "0", .min = 0, .max = 1024,
	  .help = "units a send/recv between GPUs of one node holds "
		  "(0: as p2p)" },
};

static const struct schema units_schema = {
	.kind = "collectives.kernel_units",
	.help = "compute units (SMs/CUs) the library's kernels hold while a collective runs",
	.size = sizeof(struct coll_units_spec),
	.fields = units_fields,
	.nfields = SCHEMA_COUNT(units_fields),
};

#define RGOFF(p) (offsetof(struct coll_proto_ranges, proto) + \
	(p) * sizeof(struct schema_int_list))

static const struct schema_field range_fields[] = {
	{ .key = "ll", .type = ST_INT_LIST, .offset = RGOFF(PROTO_LL),
	  .help = "[lo, hi] bytes: LL for lo < size <= hi" },
	{ .key = "ll128", .type = ST_INT_LIST, .offset = RGOFF(PROTO_LL128),
	  .help = "[lo, hi] bytes: LL128 for lo < size <= hi (over LL)" },
};

static const struct schema range_schema = {
	.kind = "collectives.protocol_ranges.op",
	.help = "the sizes at which the library forces LL and LL128",
	.size = sizeof(struct coll_proto_ranges),
	.fields = range_fields,
	.nfields = SCHEMA_COUNT(range_fields),
};

#define RANGE(op, k) { .key = k, .type = ST_SECTION, \
	.offset = (op) * sizeof(struct coll_proto_ranges), .sub = &range_schema, \
	.flags = SF_OPTIONAL, .help = "the " k " ranges" }

static const struct schema_field ranges_fields[] = {
	RANGE(COLL_ALLREDUCE, "allreduce"),
	RANGE(COLL_ALLGATHER, "allgather"),
	RANGE(COLL_REDUCESCATTER, "reducescatter"),
	RANGE(COLL_BROADCAST, "broadcast"),
	RANGE(COLL_REDUCE, "reduce"),
};

static const struct schema ranges_schema = {
	.kind = "collectives.protocol_ranges",
	.help = "protocols the library forces by size on groups over >= 2 "
		"nodes (RCCL llProtoRanges)",
	.size = sizeof(struct coll_proto_ranges) * COLL_OP_COUNT,
	.fields = ranges_fields,
	.nfields = SCHEMA_COUNT(ranges_fields),
};

static const struct schema traffic_schema = {
	.kind = "collectives.group.traffic_factor",
	.help = "traffic per byte by protocol (>= 1)",
	.size = sizeof(struct coll_proto_ratios),
	.fields = factors_fields,
	.nfields = SCHEMA_COUNT(factors_fields),
};

#define GOFF(m) offsetof(struct coll_group_spec, m)

static const struct schema_field group_fields[] = {
	{ .key = "channel_min_traffic", .type = ST_BYTES,
	  .offset = GOFF(channel_min_B), .def = "0 B", .max = 1e12,
	  .help = "traffic a channel takes at least, and the least one "
		  "operation of a group counts for (NCCL "
		  "MinTrafficPerChannel); 0 = the group's total / channels" },
	{ .key = "traffic_factor", .type = ST_SECTION, .offset = GOFF(traffic),
	  .sub = &traffic_schema, .flags = SF_OPTIONAL,
	  .help = "traffic per byte of an operation by protocol, as the "
		  "library weighs it when it lays a group over its channels "
		  "(NCCL: x4 for LL)" },
};

static const struct schema group_schema = {
	.kind = "collectives.group",
	.help = "how the library lays a group of collectives launched as one "
		"over its channels",
	.size = sizeof(struct coll_group_spec),
	.fields = group_fields,
	.nfields = SCHEMA_COUNT(group_fields),
};

static const char *const net_halve_names[] = {"none", "ranks", "batches",
					       NULL};

#define NPOFF(m) offsetof(struct coll_net_peer_spec, m)

static const struct schema_field net_peer_fields[] = {
	{ .key = "channels", .type = ST_INT, .offset = NPOFF(channels),
	  .def = "0", .min = 0, .max = 64,
	  .help = "p2p channels a send to a rank on another node starts from "
		  "(NCCL_NCHANNELS_PER_NET_PEER's default), at least the "
		  "GPU's NICs; 0 with channel_bandwidth 0: not modelled" },
	{ .key = "channel_bandwidth", .type = ST_BANDWIDTH,
	  .offset = NPOFF(channel_Bps), .def = "0 B/s",
	  .min = RATE_FLOOR_Bps, .max = 1e14, .flags = SF_ZERO_OFF,
	  .help = "the rate the library counts one p2p channel to carry "
		  "over the network (NCCL_P2P_PER_CHANNEL_NET_BW): a peer on "
		  "another node gets max(the GPU's NICs, ceil(their bandwidth "
		  "/ this)) channels; 0 = channels" },
	{ .key = "halve", .type = ST_ENUM, .offset = NPOFF(halve),
	  .values = net_halve_names, .def = "none",
	  .help = "how the channels shrink with the ranks: ranks (halved "
		  "while channels x ranks > 4 x the p2p channels, NCCL "
		  "2.20-2.28), batches (rounded up to a power of two, then "
		  "halved while channels x ceil(ranks / batch) > the p2p "
		  "channels, NCCL 2.29+), none" },
	{ .key = "batch", .type = ST_INT, .offset = NPOFF(batch),
	  .def = "8", .min = 1, .max = 1024,
	  .help = "peers of one node that share a channel group "
		  "(NCCL_MAX_DEV_WORK_P2P_PER_BATCH); also the batch of "
		  "halve: batches" },
};

static const struct schema net_peer_schema = {
	.kind = "collectives.net_peer",
	.help = "the p2p channels a send to another node takes and how one "
		"node's peers share them",
	.size = sizeof(struct coll_net_peer_spec),
	.fields = net_peer_fields,
	.nfields = SCHEMA_COUNT(net_peer_fields),
};

#define OFF(m) offsetof(struct coll_lib_spec, m)

static const struct schema_field lib_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = OFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "pxn", .type = ST_BOOL, .offset = OFF(pxn), .def = "false",
	  .help = "send cross-rail data through the scale-up peer on the receiver's rail" },
	{ .key = "ll128_c2c", .type = ST_BOOL, .offset = OFF(ll128_c2c),
	  .def = "true",
	  .help = "runs LL128 across nodes where the GPUs reach their NICs "
		  "over C2C (the system's nic_via_c2c); false: the tuner "
		  "keeps LL128 within a node there (NCCL before 2.27.3), a "
		  "forced protocol still runs it" },
	{ .key = "ring_own_nics", .type = ST_BOOL, .offset = OFF(ring_own_nics),
	  .def = "false",
	  .help = "rings across nodes leave a node through its last GPU's own "
		  "NIC and the next node runs its order reversed from that "
		  "rail (RCCL's rome-model rings); false: they enter and leave "
		  "on one rail" },
	{ .key = "gpu_floor", .type = ST_BOOL, .offset = OFF(gpu_floor),
	  .def = "false",
	  .help = "its ring and tree LL kernels run at the GPU's own fixed "
		  "cost and step (the GPU's collective_launch, "
		  "collective_ll_step, where set) in place of the algorithm's "
		  "base and hop_scale_up for LL (a tree's network hops keep "
		  "hop_net); its tuner still times them at base and "
		  "hop_scale_up" },
	{ .key = "max_channels", .type = ST_INT, .offset = OFF(max_channels),
	  .def = "32", .min = 1, .max = 1024,
	  .help = "most parallel rings/trees one collective uses" },
	{ .key = "net_overhead", .type = ST_SECTION, .offset = OFF(net_overhead),
	  .sub = &times_schema, .flags = SF_OPTIONAL,
	  .help = "floor of a ring's intra-node step latency when the ring "
		  "spans nodes (NCCL's getNetOverhead)" },
	{ .key = "protocols", .type = ST_SECTION, .offset = OFF(proto),
	  .sub = &protos_schema, .flags = SF_REQUIRED,
	  .help = "bandwidth factor and cap per protocol" },
	{ .key = "algorithms", .type = ST_SECTION, .offset = OFF(algo),
	  .sub = &algos_schema, .flags = SF_REQUIRED,
	  .help = "algorithms offered, with latency constants" },
	{ .key = "kernel_units", .type = ST_SECTION, .offset = OFF(kernel_units),
	  .sub = &units_schema, .flags = SF_OPTIONAL,
	  .help = "compute units (SMs/CUs) a running collective holds; compute "
		  "beside it slows by that share" },
	{ .key = "group", .type = ST_SECTION, .offset = OFF(group),
	  .sub = &group_schema, .flags = SF_OPTIONAL,
	  .help = "how a group of collectives launched as one "
		  "(ncclGroupStart/End) is laid over the channels" },
	{ .key = "net_peer", .type = ST_SECTION, .offset = OFF(net_peer),
	  .sub = &net_peer_schema, .flags = SF_OPTIONAL,
	  .help = "p2p across nodes: the channels a send to a rank on "
		  "another node takes and how that node's peers share them; "
		  "each channel sends at most the GPU's p2p_channel_send" },
	{ .key = "protocol_ranges", .type = ST_SECTION, .offset = OFF(ranges),
	  .sub = &ranges_schema, .flags = SF_OPTIONAL,
	  .help = "sizes at which the library forces LL / LL128 on groups "
		  "spanning nodes (RCCL llProtoRanges); absent = its tuner's "
		  "choice" },
};

static const char *const lib_dirs[] = {"configs/collectives", NULL};

const struct schema collectives_schema = {
	.kind = "collectives",
	.help = "a collective library: algorithms, protocols, latency constants",
	.preset_dirs = lib_dirs,
	.size = sizeof(struct coll_lib_spec),
	.fields = lib_fields,
	.nfields = SCHEMA_COUNT(lib_fields),
	.check = coll_lib_check,
};
