/*
 * pipe.h - the library's chunked pipeline: how NCCL/RCCL cut a
 * collective into loops of chunks, and the time that costs beyond the
 * links' bandwidth (pipe.c has the model as mathematics).
 *
 * An algorithm describes a phase's pipeline once, per byte of nothing
 * (plans are built for every size at once); a run costs it for the
 * collective's size: extra latency, a volume factor and a rate bound for
 * the phase's flows. These are the kernel's costs the library's own
 * tuning model does not see: it chooses without them (net.c).
 *
 * Depends on spec_collectives.h only.
 */
#ifndef LLMSIM_NETWORK_PIPE_H
#define LLMSIM_NETWORK_PIPE_H

#include <stdint.h>

#include "config/spec_collectives.h"

/* What an algorithm's structure says about a phase's pipeline. */
struct pipe_shape {
	double chunks;		/* chunks one loop moves, all channels together */
	double steps;		/* steps a channel makes per loop (each of the spec's slices syncs) */
	double depth;		/* hops a chunk travels one way; halving thresholds scale with it */
	double fill;		/* loops the structure takes to fill, beyond the spec's stages */
};

/* One phase's pipeline. All zero (chunk_B 0) = no pipeline cost. */
struct pipe {
	double chunk_B;			/* B, largest chunk a channel moves per step */
	double max_chunk_B;		/* B, cap on the chunk after the halvings; 0 = none */
	const int64_t *halve_below;	/* loops per hop of depth (the spec's list) */
	const int64_t *halvings;	/* halvings allowed up to each entry (the spec's list) */
	uint32_t nhalve;		/* entries in both */
	double depth;			/* hops: scales halve_below */
	double chunks;			/* chunks one loop moves, all channels together */
	double sync_s;			/* s, a channel's idle time per loop */
	double fill;			/* loops of data the pipeline takes to fill */
	double t_min_s;			/* s per plan byte: the kernels' sustained-bandwidth floor; 0 = none */
	double chan_K;			/* channels the phase's flows stand for */
	double chan_min_B;		/* B of the collective per channel before one more runs; 0 = all run */
	double chan_t_s;		/* s per plan byte for one running channel alone; 0 = the caps' share */
	double chan_max;		/* the library's channels (with chan_t_s); 0 = no limit */
	int chan_all;			/* chan_t_s bounds the channels without a cut too (a ring LL channel's own rate) */
	double chunk_s;			/* s, a channel's serial time per chunk in a loop; 0 = none */
	double chan_chunks;		/* chunks one channel handles per loop (with chunk_s) */
	double plan_B;			/* B of the collective the plan's volumes are for (with chunk_s) */
	double cell_B;			/* B, unit of an even spread over the channels (with chunk_s); 0 = first fill */
	double chain_s;			/* s per byte a channel forwards a chain's step at; 0 = no chain floor */
	double chain_depth;		/* hops of the chain (with chain_s) */
	double chain_K;			/* channels the chain's bytes are spread over (with chain_s) */
	uint32_t chain_group;		/* operations of a group (coll_desc.group), 1 = one */
	int chain_proto;		/* the protocol (for the group's layout) */
	const struct coll_group_spec *chain_gs;	/* the library's group layout, or NULL */
	double chain_hop_s;		/* s a group's next part on a channel trails the last by */
	double local_s_per_B;		/* s per byte of the collective: the loops' local-only
					 * final steps (a ring: each channel's last step of a
					 * loop, one chunk at its own rate); 0 = none */
	double chain_fill_D;		/* hops of a group's chains (chain_group > 1), for
					 * their fill (pipe_volume_factor); 0 = none */
	double peer_frac;		/* p2p: the largest send to one peer per byte of
					 * size_B; 0 = the loops of all channels */
	double peer_chans;		/* p2p: channels one send takes at most before doubling */
	double peer_chans_max;		/* p2p: channels one send may double to */
	double peer_part_min_B;		/* p2p: B, least part of a send per channel */
	double peer_part_max_B;		/* p2p: B, a part past it doubles the channels; 0 = never */
	double peer_copy_s_per_B;	/* p2p step by step: s per byte one channel copies its
					 * last stored step locally at; 0 = free */
	double peer_send_Bps;		/* p2p: B/s one channel's send warps copy a send's
					 * steps into the peer's FIFO at (the GPU's
					 * p2p_channel_send): > 0 runs a send step by step
					 * (pipe.c "p2p"); 0 = the loops and the fill */
	double peer_out_frac;		/* p2p: the largest send to one peer over the
					 * most one GPU sends to all its peers; 0 = none */
	double peer_gpu_Bps;		/* p2p step by step: B/s all of one GPU's sends
					 * together (the GPU's p2p_gpu_send); 0 = none */
};

/*
 * Describe a phase's pipeline from the library's spec for one protocol
 * and the algorithm's shape. A spec without a chunk, or a shape without
 * chunks, leaves *pp without cost.
 */
void pipe_init(struct pipe *pp, const struct coll_pipe_spec *ps,
	       const struct pipe_shape *sh);

/* p2p (peer_frac > 0): the channels NCCL gives a send of send_B bytes
 * to one peer (pipe.c); else 1. */
double pipe_peer_chans(const struct pipe *pp, double send_B);

/* The chunk (B) the library uses for a collective of size_B. */
double pipe_chunk_B(const struct pipe *pp, double size_B);

/* Loops the kernel makes for size_B (at least 1; 0 without a pipeline). */
double pipe_loops(const struct pipe *pp, double size_B);

/* Idle time (s) the pipeline adds for size_B: loops x sync, the loops'
 * local-only final steps (local_s_per_B x size_B), and for a group of
 * chains (chain_group > 1) the busiest channel's j parts'
 * (j - 1) x chain_hop_s (cgroup.h). */
double pipe_sync_s(const struct pipe *pp, double size_B);

/* The factor (>= 1) on the phase's volumes: the fill's extra bytes. */
double pipe_volume_factor(const struct pipe *pp, double size_B);

/* The least time (s) the kernel's loops take for size_B (0 without
 * chunk_s): the first channel handles q = min(s, chan_chunks x chunk) /
 * chunk chunks a loop, each through the F + 1 stages in chunk_s all
 * told, the loops pipelined over the stages: chunk_s q (n + F) / (1 + F)
 * for its n loops. s is size_B where the loops fill the first channels
 * first (no cell_B), else the first channel's even share: size_B / K
 * rounded up to cell_B, at most size_B (K channels).
 * A broadcast or reduce chain (chain_s) instead: each channel's share
 * s = size_B / chain_K goes in n = ceil(s / chunk) steps of s / n, every
 * step received whole before it is forwarded, and a group's busiest
 * channel runs its j parts in turn, each a step behind the last
 * (cgroup.h): (depth + n - 1 + j - 1) steps of s / n at chain_s. */
double pipe_floor_s(const struct pipe *pp, double size_B);

/* The share (0, 1] of the phase's channels the kernel runs for size_B:
 * floor(size_B / chan_min_B) of chan_K, at least one (1 without data). */
double pipe_chan_share(const struct pipe *pp, double size_B);

/* The channels (>= 1) the kernel runs for size_B: floor(size_B /
 * chan_min_B), at least 1, at most chan_max (when set). */
double pipe_chan_count(const struct pipe *pp, double size_B);

/* The rate (B/s) a flow of volume_B plan bytes may reach under the
 * kernels' sustained bandwidth (min with bound_Bps; 0 = no bound), both
 * scaled by the share of channels that run for size_B; with chan_t_s,
 * not scaled but bounded by the running channels' own rate instead;
 * with chunk_s, also so that the flow (its fill included) lasts at
 * least pipe_floor_s. */
double pipe_bound_Bps(const struct pipe *pp, double volume_B,
		      double bound_Bps, double size_B);

#endif
