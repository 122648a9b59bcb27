/*
 * pipe.c - the library's chunked pipeline.
 *
 * Model. A library kernel runs a collective on K channels, one thread
 * block each. One loop of the kernel moves
 *     L = K g c                                            [B]
 * of the collective's S bytes: every channel handles g chunks of c bytes
 * (a ring: g = p, one per rank; NVLS: g = p, one per head; a tree: 1).
 * So
 *     n = ceil(S / L)  loops  (n >= 1 for S > 0)
 * and the last loop, or the only one, moves proportionally smaller
 * chunks (NCCL's realChunkSize). The chunk is the library's largest,
 * c_max, halved while S is small: for each rule i in turn (threshold
 * m_i in loops per hop of the pipeline's depth D, cap h_i on the
 * halvings made so far),
 *     while S < m_i D K g c  and  halvings < h_i:   c = c / 2
 * (NCCL enqueue.cc: NVLS m = 64, 8, 2 with h = 1, 2, 3 and D = 1;
 * trees m = 8, 4, 1, h = 2, 3, 4, D = the tree's depth; rings keep
 * c_max; the constants are in configs/collectives/NAME.yaml).
 *
 * Beyond the links' bandwidth this costs, per phase:
 *   sync  every loop, each channel stops at s sync points (s = steps x
 *         slices: a ring all-reduce makes 2(p-1) steps of 2 slices per
 *         loop; NVLS one per loop) for o seconds: waiting for its peer's
 *         flag, fencing its writes, posting its own flag. The channels
 *         stop together, so the links idle meanwhile:
 *             t_sync = n s o                                  [s]
 *   final a ring loop's last step on a channel writes only local memory
 *         (all-gather's directRecv: the chunk from the recv FIFO to the
 *         output; reduce-scatter's recvReduceCopy; all-reduce's last
 *         directRecv: NVIDIA/nccl@5067397c src/device/all_gather.h
 *         "Final wait/copy", reduce_scatter.h, all_reduce.h), and a
 *         channel's thread block runs its steps one after another, so
 *         its link share idles while it copies its chunk at the
 *         channel's own rate r (one node: chain_channel_bandwidth,
 *         NCCL's per-channel Simple cap). Each loop moves K g c, so
 *         each channel copies S / (K g) in all:
 *             t_final = S / (K g r)                           [s]
 *         (direct writes into a registered output skip the copy; the
 *         benchmarks' and frameworks' default unregistered buffers do not)
 *   fill  the pipeline holds F loops in flight before the first one
 *         ends: F = stages - 1 for a chunk that passes `stages` stages
 *         inside a rank (NVLS: the scatter, reduce-multicast and gather
 *         warps), plus what the algorithm's structure adds (a tree's
 *         chunk climbs D hops and comes down D: 2D - 1); so
 *             V' = V (1 + F min(L, S) / S)                    [B]
 *         for a phase that moves V over a link; the extra bytes go at
 *         the flows' own rates, so contention slows the fill too.
 *   cap   the bus bandwidth the protocol's kernels sustain (measured,
 *         where the library's per-channel model is too kind, e.g. LL128
 *         on A100) bounds every flow as the library's own caps do:
 *             rate <= V / (f S / B_sustained)   (f: busbw factor)
 *   chans a collective of S bytes below K m runs nc = max(1, floor(S / m))
 *         of the K channels the flows stand for (m: bytes per channel,
 *         NCCL/RCCL getChannnelThreadInfo's nthreads x threadThreshold);
 *         the caps above (and the library's max_busbw bound) describe all
 *         K, so a flow's bound scales by nc / K. Without a cap the links
 *         alone pace the flows and fewer channels change nothing here.
 *         Where the protocol gives one channel's own bus bandwidth r
 *         (channel_busbw: a thread block's rate, which the aggregate caps
 *         do not divide into), the caps stay whole and the running
 *         channels bound the phase instead:
 *             rate <= V / (f S / min(B_caps, nc r))
 *         (m may grow with the ranks: NCCL's ring LL threshold is
 *         8 B x nRanks a thread, so m = m0 + p m1). Without a cut
 *         (m = 0) all K channels run (nc = K) and r still bounds them
 *         where r is the channel's own rate (algo.c ring_ll_channel,
 *         chan_all); the library's channel_busbw binds cut channels only.
 *   floor where a channel's chunks pass its stages one after another
 *         at a serial cost (the library's chunk_time t_c per chunk,
 *         all stages: NCCL NVLS's scatter and gather warps copy one
 *         peer's chunk after another), the loops take at least
 *             t_floor = t_c q (n + F) / (1 + F)
 *         with q = min(S, g c) / c the chunks the first channel has a
 *         loop (a partial one counts its share) and the n loops
 *         pipelined over the F + 1 stages; every flow is bounded so that
 *         it (fill included) lasts t_floor: V' / rate >= t_floor. That
 *         is where each loop fills the first channels first (NCCL up to
 *         2.19: channel b takes the loop's bytes from b g c on). Where
 *         the library spreads S evenly over its K channels in cells of
 *         u bytes (channel_cell; NCCL >= 2.20.3 single-node NVLS), the
 *         first channel holds s = min(S, ceil(S / (K u)) u) and runs
 *         its own n = ceil(s / (g c)) loops: S for s in q and n.
 *   p2p   NCCL's point-to-point kernel (all-to-all within a node) does
 *         not loop over all K channels: each send to one peer of b bytes
 *         takes its own channels (NVIDIA/nccl v2.29.2-1 src/enqueue.cc
 *         scheduleP2pTasksToPlan, addP2pToPlan),
 *             k = min(k0, ceil(b / m)),  doubled while b / k > M
 *                                         and k <= K / 2,
 *         k0 the largest power of two with k0 p <= K (p ranks, K the p2p
 *         channels), m, M the least and most part per channel
 *         (peer_part_min / _max: one node, p2pChunkSize / 8 and x 32).
 *         Every peer runs its parts at once on its own channels, so a
 *         channel makes ceil(b_max / k / c) steps for the largest send
 *         b_max: the loops and the fill above count them as those of a
 *         collective of K b_max / k bytes (an even all-to-all of S over
 *         p = K / k0 ranks: S itself; a context-parallel ring's one
 *         peer of b on 8 ranks: 4 channels of b / 4, not K of b / K).
 *         Step by step, where the GPU's channel send rate r_s is known
 *         (gpu p2p_channel_send; sendrecv.h runSend / runRecv, Simple
 *         over NVLink: a step is one chunk c): a channel's sender copies
 *         each step into the peer's FIFO and posts it, up to NCCL_STEPS
 *         8 ahead; the receiver copies each step out to the user buffer
 *         at the channel's local rate r_r (the ring's chain_channel_
 *         bandwidth). For a part q = b_max / k in n = ceil(q / c) steps:
 *             T = base + hop + (n - 1) o + q / min(link share, r_s)
 *                 + (q - (n - 1) c) / r_r
 *         the first step's wait, fence and post being the hop (NCCL's
 *         Simple step latency), each later step one sync o, the send at
 *         most k r_s for the largest send (a rate bound on the flows),
 *         and the last step's receive copy after it (for F = 1: no
 *         fill). All of one GPU's sends together run at most its p2p
 *         rate R_g where it is known (gpu p2p_gpu_send: measured, the
 *         Hopper all-to-all tables' plateau at 4 and 8 ranks below both
 *         24-28 x r_s and the links): the largest send at most its
 *         share b_max / B_out of it (B_out the most one GPU sends to its
 *         peers). Without r_s the loops' n syncs and the fill at the
 *         links' rate stand in for both (rounds 41-42).
 *   T = latency + t_sync + V' / rate.
 *
 * For S much larger than L, t_sync grows like S s o / L: a constant
 * fraction of bandwidth (c large keeps it small); for S below L it is
 * the constant s o, an extra latency per step. Neither the sync, the
 * fill nor the sustained cap is in the library's tuning model, which is
 * why measured bus bandwidth ramps up more slowly with size than that
 * model says; the library still chooses by its model (net.c runs the
 * candidates without these costs).
 *
 * Assumptions: the channels run in step (their sync points coincide);
 * a loop's chunks split evenly over channels; the fill is charged at the
 * phase's steady rates. The halving thresholds and caps, c_max, K,
 * slices and stages are the library's constants; o and the sustained
 * caps are calibrated once per library and system against measured
 * tables (configs/collectives/NAME.yaml, configs/systems). LL and LL128
 * carry a flag in every line and fence nothing: the presets give them
 * no pipeline (their fill is small and not modeled). Valid where the
 * library runs these kernels: NCCL/RCCL rings, trees and NVLS, and
 * NCCL's p2p all-to-all inside one node (a loop: every channel one
 * chunk, one sync); not for broadcast and reduce chains, nor p2p across
 * nodes (not described).
 */
#include "pipe.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "cgroup.h"

void pipe_init(struct pipe *pp, const struct coll_pipe_spec *ps,
	       const struct pipe_shape *sh)
{
	memset(pp, 0, sizeof(*pp));
	if (!ps || !(ps->chunk_B > 0) || !(sh->chunks > 0))
		return;
	if (ps->halve_below.n != ps->halvings.n)
		BUG("halving rules not in pairs (the spec refuses that)");
	pp->chunk_B = ps->chunk_B;
	pp->halve_below = ps->halve_below.v;
	pp->halvings = ps->halvings.v;
	pp->nhalve = (uint32_t)ps->halve_below.n;
	pp->depth = sh->depth > 1 ? sh->depth : 1;
	pp->chunks = sh->chunks;
	pp->sync_s = sh->steps * (double)ps->slices * ps->sync_s;
	pp->fill = (ps->stages > 1 ? (double)(ps->stages - 1) : 0) + sh->fill;
	pp->chunk_s = ps->chunk_time_s;
	pp->cell_B = ps->channel_cell_B;
	pp->peer_part_min_B = ps->peer_part_min_B;
	pp->peer_part_max_B = ps->peer_part_max_B;
}

double pipe_peer_chans(const struct pipe *pp, double send_B)
{
	double k;

	if (!(pp->peer_frac > 0) || !(pp->peer_part_min_B > 0) ||
	    !(send_B > 0))
		return 1;
	k = ceil(send_B / pp->peer_part_min_B * (1 - 1e-12));
	if (k > pp->peer_chans)
		k = pp->peer_chans;
	if (k < 1)
		k = 1;
	while (pp->peer_part_max_B > 0 && send_B / k > pp->peer_part_max_B &&
	       k <= pp->peer_chans_max / 2)
		k *= 2;
	return k;
}

/* The size whose even spread over the loop's channels gives each the
 * part of the largest p2p send it runs (p2p above); size_B otherwise. */
static double loop_size_B(const struct pipe *pp, double size_B)
{
	double b, K;

	if (!(pp->peer_frac > 0) || !(pp->peer_part_min_B > 0) ||
	    !(size_B > 0) || !(pp->chan_chunks > 0))
		return size_B;
	b = pp->peer_frac * size_B;
	K = pp->chunks / pp->chan_chunks;
	return b / pipe_peer_chans(pp, b) * K;
}

double pipe_chunk_B(const struct pipe *pp, double size_B)
{
	double c = pp->chunk_B, per_loop = pp->depth * pp->chunks;
	int64_t done = 0;
	uint32_t i;

	for (i = 0; i < pp->nhalve; i++)
		while (size_B < (double)pp->halve_below[i] * per_loop * c &&
		       done < pp->halvings[i]) {
			c /= 2;
			done++;
		}
	/* NCCL's NVLSTree caps the chunk first and halves only above
	 * fixed sizes (enqueue.cc): the same as halving, then the cap */
	return pp->max_chunk_B > 0 && c > pp->max_chunk_B ? pp->max_chunk_B : c;
}

double pipe_loops(const struct pipe *pp, double size_B)
{
	double L, n;

	if (!(pp->chunk_B > 0) || !(size_B > 0))
		return 0;
	size_B = loop_size_B(pp, size_B);
	L = pp->chunks * pipe_chunk_B(pp, size_B);
	/* A size that is a whole number of loops up to rounding is that
	 * number, not one more. */
	n = ceil(size_B / L * (1 - 1e-12));
	return n < 1 ? 1 : n;
}

/* The parts a group's busiest channel holds (cgroup.h); 1 for one op. */
static double group_parts(const struct pipe *pp, double size_B)
{
	if (!(pp->chain_group > 1) || !pp->chain_gs || !(size_B > 0))
		return 1;
	return cgroup_channel_ops(pp->chain_gs, pp->chain_proto,
				  pp->chain_group, size_B / pp->chain_group,
				  (uint32_t)pp->chain_K);
}

/* p2p step by step (the GPU's channel send rate known, p2p above). */
static int peer_steps(const struct pipe *pp)
{
	return pp->peer_frac > 0 && pp->peer_send_Bps > 0 && pp->chunk_B > 0;
}

/* p2p step by step: the receiver's local copy of the largest send's
 * last step on its channel (F of them: the stored slice's second copy)
 * at the channel's local copy rate. */
static double peer_copy_s(const struct pipe *pp, double size_B)
{
	double b, part, n;

	if (!peer_steps(pp) || !(pp->peer_copy_s_per_B > 0) ||
	    !(size_B > 0) || !(pp->fill > 0))
		return 0;
	b = pp->peer_frac * size_B;
	part = b / pipe_peer_chans(pp, b);
	n = ceil(part / pp->chunk_B * (1 - 1e-12));
	if (n < 1)
		n = 1;
	return pp->fill * (part - (n - 1) * pp->chunk_B) *
	       pp->peer_copy_s_per_B;
}

double pipe_sync_s(const struct pipe *pp, double size_B)
{
	double n = pipe_loops(pp, size_B);

	/* p2p step by step: the first step's wait, fence and post are
	 * NCCL's Simple step latency (the hop); each further step syncs
	 * once */
	if (peer_steps(pp) && n >= 1)
		n -= 1;
	return n * pp->sync_s +
	       pp->local_s_per_B * size_B + peer_copy_s(pp, size_B) +
	       (group_parts(pp, size_B) - 1) * pp->chain_hop_s;
}

/* The channels that run for size_B without a cap: floor(size_B /
 * chan_min_B), at least 1 (chan_min_B and size_B > 0). */
static double chan_floor(const struct pipe *pp, double size_B)
{
	double nc = floor(size_B / pp->chan_min_B);

	return nc < 1 ? 1 : nc;
}

double pipe_chan_share(const struct pipe *pp, double size_B)
{
	double nc;

	if (!(pp->chan_min_B > 0) || !(pp->chan_K > 1) || !(size_B > 0))
		return 1;
	nc = chan_floor(pp, size_B);
	return nc < pp->chan_K ? nc / pp->chan_K : 1;
}

double pipe_chan_count(const struct pipe *pp, double size_B)
{
	double nc;

	if (!(pp->chan_min_B > 0) || !(size_B > 0))
		return pp->chan_max > 0 ? pp->chan_max : 1;
	nc = chan_floor(pp, size_B);
	return pp->chan_max > 0 && nc > pp->chan_max ? pp->chan_max : nc;
}

/* The bytes of size_B the first channel handles: all of them, loop
 * after loop, where the loops fill the first channels first (no cell);
 * else its even share, size_B / K rounded up to whole cells, at most
 * size_B (NCCL >= 2.20.3 single-node NVLS). */
static double first_channel_B(const struct pipe *pp, double size_B)
{
	double K = pp->chunks / pp->chan_chunks, s;

	if (!(pp->cell_B > 0) || !(K > 1))
		return size_B;
	s = ceil(size_B / (K * pp->cell_B) * (1 - 1e-12)) * pp->cell_B;
	return s < size_B ? s : size_B;
}

/* A chain's floor (pipe_floor_s): its steps one after another at the
 * channel's own rate. */
static double chain_floor_s(const struct pipe *pp, double size_B)
{
	double s = size_B / (pp->chain_K > 1 ? pp->chain_K : 1), n, j = 1;

	n = ceil(s / pp->chunk_B * (1 - 1e-12));
	if (n < 1)
		n = 1;
	j = group_parts(pp, size_B);
	return (pp->chain_depth + n - 1 + j - 1) * s / n * pp->chain_s;
}

double pipe_floor_s(const struct pipe *pp, double size_B)
{
	double c, per_loop, s, n, F = pp->fill > 0 ? pp->fill : 0;

	if (pp->chain_s > 0 && pp->chunk_B > 0 && size_B > 0)
		return chain_floor_s(pp, size_B);
	if (!(pp->chunk_s > 0) || !(pp->chan_chunks > 0) || !(size_B > 0) ||
	    !(pp->chunk_B > 0))
		return 0;
	c = pipe_chunk_B(pp, size_B);
	per_loop = pp->chan_chunks * c;
	if (!(pp->cell_B > 0)) {
		n = pipe_loops(pp, size_B);
		s = size_B;
	} else {
		/* the channel's own loops over its share */
		s = first_channel_B(pp, size_B);
		n = ceil(s / per_loop * (1 - 1e-12));
		if (n < 1)
			n = 1;
	}
	if (s < per_loop)
		per_loop = s;
	return pp->chunk_s * per_loop / c * (n + F) / (1 + F);
}

/* b bounded so that a flow of volume_B plan bytes lasts at least the
 * loops' floor: its real bytes (the plan's times size_B / plan_B, the
 * fill's included) over pipe_floor_s. */
static double floor_bound(const struct pipe *pp, double volume_B, double b,
			  double size_B)
{
	double t = pipe_floor_s(pp, size_B), c;

	if (!(t > 0) || !(pp->plan_B > 0))
		return b;
	c = volume_B * size_B / pp->plan_B * pipe_volume_factor(pp, size_B) / t;
	return b > 0 && b < c ? b : c;
}

/* p2p step by step (Simple: LL has no pipeline): the rate of the
 * largest send to one peer on its k channels, each sending at most
 * peer_send_Bps, and at most its share of the GPU's p2p rate
 * peer_gpu_Bps (p2p above); 0 = no bound. */
static double peer_send_bound(const struct pipe *pp, double size_B)
{
	double b, r, g;

	if (!peer_steps(pp) || !(size_B > 0))
		return 0;
	b = pp->peer_frac * size_B;
	r = pipe_peer_chans(pp, b) * pp->peer_send_Bps;
	g = pp->peer_out_frac * pp->peer_gpu_Bps;
	return g > 0 && g < r ? g : r;
}

double pipe_bound_Bps(const struct pipe *pp, double volume_B,
		      double bound_Bps, double size_B)
{
	double b = bound_Bps, c, share = pipe_chan_share(pp, size_B);

	if (pp->t_min_s > 0) {
		c = volume_B / pp->t_min_s;
		b = b > 0 && b < c ? b : c;
	}
	if ((c = peer_send_bound(pp, size_B)) > 0)
		b = b > 0 && b < c ? b : c;
	/* no channel rate, or no cut and not a rate of its own for every
	 * channel (the library's channel_busbw binds only cut channels) */
	if (!(pp->chan_t_s > 0) ||
	    (!(pp->chan_min_B > 0) && !(pp->chan_all && pp->chan_max > 0)))
		return floor_bound(pp, volume_B, b * share, size_B);
	/* the flow's part of nc channels, each at most 1 / chan_t_s */
	c = volume_B * pipe_chan_count(pp, size_B) / pp->chan_t_s;
	return floor_bound(pp, volume_B, b > 0 && b < c ? b : c, size_B);
}

/* sum_{x=1}^{m} min(G, x). */
static double capped_sum(double G, double m)
{
	if (m <= 0)
		return 0;
	return m <= G ? m * (m + 1) / 2 : G * (G + 1) / 2 + (m - G) * G;
}

/* The fill of a group of G chains of D hops (chain_fill_D), one rooted
 * at each of the ranks 0 .. G-1 in ring order, each on K / G of the K
 * channels (cgroup.h), a channel moving n = ceil(size / K / chunk)
 * chunks. Channel by channel the chain is a pipeline: in loop t (1 ..
 * n + D - 1) an operation's chunks sit on the w(t) = min(D, t) - max(1,
 * t - n + 1) + 1 consecutive links of its hops, and the operations,
 * rooted one rank apart, on the same links shifted by one: the busiest
 * link carries min(G, w(t)) operations' chunks that loop. Every link
 * carries min(G, D) operations' bytes in all (all but the one rooted
 * after it when G = D + 1, the ring's every rank), so the loops take
 *
 *   f = sum_t min(G, w(t)) / (n min(G, D))
 *
 * times what the links' bytes alone would: w rises 1 .. a, holds a for
 * b - a + 1 loops and falls a - 1 .. 1 (a = min(n, D), b = max(n, D)).
 * One operation (G 1): (n + D - 1) / n, the pipeline's D - 1 loops of
 * fill; one at every rank (G = D + 1): 1, some operation's chunks on
 * every link each loop, the fill hidden (what TensorRT-LLM's per-rank
 * broadcasts get); two of 8 GPUs: nearly one operation's. */
static double group_fill(const struct pipe *pp, double size_B)
{
	double G = pp->chain_group, D = pp->chain_fill_D;
	double K = pp->chain_K > 1 ? pp->chain_K : 1, n, a, b;

	n = ceil(size_B / K / pp->chunk_B * (1 - 1e-12));
	if (n < 1)
		n = 1;
	a = fmin(n, D);
	b = fmax(n, D);
	return (2 * capped_sum(G, a - 1) + (b - a + 1) * fmin(G, a)) /
	       (n * fmin(G, D));
}

double pipe_volume_factor(const struct pipe *pp, double size_B)
{
	double L;

	if (pp->chain_group > 1 && pp->chain_fill_D > 0 && pp->chunk_B > 0 &&
	    size_B > 0)
		return group_fill(pp, size_B);
	if (!(pp->chunk_B > 0) || !(size_B > 0) || !(pp->fill > 0) ||
	    peer_steps(pp))
		return 1;
	size_B = loop_size_B(pp, size_B);
	L = pp->chunks * pipe_chunk_B(pp, size_B);
	return 1 + pp->fill * (L < size_B ? L : size_B) / size_B;
}
