/*
 * algo_ring.c - rings, trees and the hierarchical all-reduce.
 *
 * Ring. A pipelined ring moves every byte over every ring link at the
 * same pace, so a channel is one flow over all its segments. With K
 * channels each carrying n/K, each ring link carries
 *     all-reduce  2(p-1)/p * n/K      all-gather, reduce-scatter (p-1)/p * n/K
 *     broadcast, reduce (an open chain from rank 0)   n/K
 * and busbw = K * x for a channel rate x. Channel c leaves and enters
 * nodes on rail r_c (cycling over the rails of the group's GPUs); inside
 * a node it starts at the GPU owning r_c and runs the node's members in
 * the channel's order: on a full mesh the channel's Hamiltonian cycle
 * (ham.h), so the channels of one node together use every directed link
 * once; on a switch or PCIe tree the members in order. The hop from a
 * node's last GPU to the next node uses rail r_c at both ends, with the
 * scale-up hop to the rail's GPU on the sending side (PXN) or on the
 * receiving side (without PXN): rail-local either way. A library with
 * ring_own_nics (RCCL's rome models) instead leaves each node on its last
 * GPU's own NIC and runs the odd nodes reversed, so the next node starts
 * on that rail: a node's part of the ring is an open chain of m-1
 * scale-up hops, not m.
 * K = the cycles of a node's mesh (single node), or (several nodes) the
 * least common multiple of rails and cycles, so every rail and every
 * cycle carries the same share (8 rails, 7 cycles: 56 channels); past
 * max_channels, the larger of the two. Data is split evenly over
 * channels, as the libraries do, so an unbalanced split would let the
 * most loaded link set the pace.
 *
 * Tree (all-reduce). NCCL's double binary tree across nodes, a chain
 * inside each node from the rail's GPU. Reduce goes up and broadcast
 * comes down at once (pipelined), so a channel is one flow over every
 * chain and tree edge in both directions, moving n/K; channel c uses
 * tree c mod 2 (tree 1 is tree 0 mirrored for an even node count,
 * shifted by one for an odd one) and rail r_c. A library that runs the
 * two one after the other (up_then_down: RCCL's Tree/Simple) gets two
 * phases of one-way flows instead.
 *
 * Hierarchical all-reduce (uniform ranks per node, several nodes):
 *   1. ring reduce-scatter in every node at once: (m-1)/m * n per link
 *   2. for each local position j, a ring all-reduce across nodes on j's
 *      rail over the slice n/m: 2(N-1)/N * n/m per link
 *   3. ring all-gather in every node: (m-1)/m * n per link.
 */
#include "algo.h"

#include <math.h>

#include "base/diag.h"
#include "base/mem.h"
#include "cgroup.h"

static uint32_t cap_channels(const struct algo_ctx *x, uint32_t k)
{
	if (k > x->lib->max_channels)
		k = (uint32_t)x->lib->max_channels;
	return k ? k : 1;
}

/* Every node's order for channel c on rail, into ord (g.first offsets). */
static int orders(struct algo_ctx *x, uint32_t c, uint32_t rail,
		  uint32_t *ord)
{
	uint32_t k;

	for (k = 0; k < x->g.nnodes; k++)
		if (algo_order(x, k, c, rail, ord + x->g.first[k]) != 0)
			return -1;
	return 0;
}

static void reverse(uint32_t *v, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n / 2; i++) {
		uint32_t t = v[i];

		v[i] = v[n - 1 - i];
		v[n - 1 - i] = t;
	}
}

/* Rotate node 0's order so the chain starts at rank 0 (the root). */
static void root_first(struct algo_ctx *x, uint32_t *ord)
{
	uint32_t m = x->g.first[1], at = 0;

	while (ord[at] != 0)
		at++;
	reverse(ord, at);
	reverse(ord + at, m - at);
	reverse(ord, m);
}

/* One hop a -> b leaving on rail_a and entering on rail_b, or b -> a
 * (its rails swapped) when reverse. */
static void seg_dir(struct algo_ctx *x, struct plan *p, uint32_t a,
		    uint32_t b, uint32_t rail_a, uint32_t rail_b, int reverse)
{
	if (reverse)
		algo_seg(x, p, b, a, rail_b, rail_a, 1);
	else
		algo_seg(x, p, a, b, rail_a, rail_b, 1);
}

/* RCCL's rome-model rings leave a node through the NIC of its last GPU
 * and run the next node's GPUs in the reverse order, entering on that
 * NIC's rail (parseGraph reverses ringBase, and swaps its input and
 * output NICs, on odd hosts): node k's order for odd k is reversed.
 * With every node's members alike, node k+1 then starts on the GPU of
 * node k's exit rail, and no node pays a scale-up hop to reach a NIC. */
static void alternate(struct algo_ctx *x, uint32_t *ord)
{
	uint32_t k;

	for (k = 1; k < x->g.nnodes; k += 2)
		reverse(ord + x->g.first[k], x->g.first[k + 1] - x->g.first[k]);
}

/* One ring channel: segments through every node, closed unless chain.
 * The hop between nodes uses rail at both ends (the scale-up hop to the
 * rail's GPU on the sending side with PXN, on the receiving side
 * without), or with ring_own_nics the NIC of the GPU at each end. */
static void ring_segments(struct algo_ctx *x, struct plan *p,
			  const uint32_t *ord, uint32_t rail, int chain,
			  int reverse)
{
	uint32_t N = x->g.nnodes, k, i;

	for (k = 0; k < N; k++) {
		const uint32_t *o = ord + x->g.first[k];
		uint32_t m = x->g.first[k + 1] - x->g.first[k];
		uint32_t exit = o[m - 1], next = ord[x->g.first[(k + 1) % N]];
		uint32_t ra = x->lib->pxn ? rail : algo_rail(x, exit), rb = ra;

		for (i = 0; i + 1 < m; i++)
			seg_dir(x, p, o[i], o[i + 1], rail, rail, reverse);
		if (chain && k + 1 == N)
			break;
		if (x->lib->ring_own_nics) {
			ra = algo_rail(x, exit);
			rb = algo_rail(x, next);
		}
		seg_dir(x, p, exit, next, ra, rb, reverse);
	}
}

/* Operations in c's group (1: a single one). */
static uint32_t group_ops(const struct coll_desc *c)
{
	return c->group > 1 ? c->group : 1;
}

/* The channels a group of collectives is laid over: the units the
 * library's kernel holds for the group (one thread block a channel). */
static uint32_t group_channels(const struct algo_ctx *x)
{
	int64_t k = x->g.nnodes > 1 ? x->lib->kernel_units.scale_out :
		    x->lib->kernel_units.scale_up;

	return k > 0 ? (uint32_t)k : (uint32_t)x->lib->max_channels;
}

/* A chain (broadcast, reduce): p-1 steps; in the library tuner's view
 * (select_chain_steps) NCCL's one step when its channels share one ring
 * order (tuning.cc: sameChannels), counted once per ceil(operations /
 * channels) of a group (ncclTopoGetAlgoTime's numPipeOps). A group's
 * busiest channel runs its j parts in turn, each trailing the one before
 * by a step (cgroup.h): j - 1 steps more, which depend on the size and
 * so come with the phase's pipeline (chain_pipe, pipe_sync_s). */
static double chain_latency(const struct algo_ctx *x)
{
	double S = x->g.p - 1, I = x->g.nnodes - 1, hop = algo_hop_intra(x);
	uint32_t G = group_ops(x->c), K = group_channels(x);

	if (x->select_view && x->as->select_chain_steps > 0) {
		double steps = (double)x->as->select_chain_steps;

		if (I > 0)
			hop = algo_hop(x, TT_NET);
		return (algo_base(x) + steps * hop) * ceil((double)G / K);
	}
	return algo_base(x) + (S - I) * hop +
	       I * (I > 0 ? algo_hop(x, TT_NET) : 0);
}

static double ring_latency(const struct algo_ctx *x)
{
	double S = x->g.p - 1, I = x->g.nnodes - 1;

	if (x->c->op == COLL_BROADCAST || x->c->op == COLL_REDUCE)
		return chain_latency(x);
	if (x->c->op == COLL_ALLREDUCE) {
		S *= 2;
		I *= 2;
	}
	return algo_base(x) + (S - I) * algo_hop_intra(x) +
	       I * (I > 0 ? algo_hop(x, TT_NET) : 0);
}

struct chans {
	uint32_t *rails, nrails, K;
	uint32_t *ord;		/* p ranks: every node's order */
};

static uint32_t gcd(uint32_t a, uint32_t b)
{
	while (b) {
		uint32_t r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/* Channels: enough that every rail and every ring order carries the same
 * number of channels (their least common multiple, with 2 for the two
 * trees), when the library allows that many; else the larger count. */
static uint32_t balanced(const struct algo_ctx *x, uint32_t a, uint32_t b)
{
	uint32_t l = a / gcd(a, b) * b;

	if (l <= x->lib->max_channels)
		return l;
	return cap_channels(x, a > b ? a : b);
}

static int chans_init(struct algo_ctx *x, struct chans *ch, int tree)
{
	uint32_t rings = algo_node_rings(x, 0);

	ch->rails = mem_alloc(x->t->nics_per_node * sizeof(uint32_t));
	ch->ord = mem_alloc(x->g.p * sizeof(uint32_t));
	if (!ch->rails || !ch->ord)
		return -1;
	ch->nrails = algo_rails(x, ch->rails);
	if (x->g.nnodes == 1)
		ch->K = cap_channels(x, rings);
	else
		ch->K = balanced(x, balanced(x, ch->nrails, rings), tree ? 2 : 1);
	return 0;
}

static void chans_release(struct chans *ch)
{
	mem_free(ch->rails);
	mem_free(ch->ord);
}

/* One channel's flow: c's number, its rail, every node's order. */
typedef void (*emit_fn)(struct algo_ctx *x, struct plan *p,
			const struct chans *ch, uint32_t c, uint32_t rail);

/* The phase's chunked pipeline, given the flow channels ch.K. */
typedef void (*pipe_fn)(struct algo_ctx *x, uint32_t K);

/* One phase of ch.K channel flows, each built by emit; the phase costs
 * lat(x) once its routes are known, and pipe (if any) describes the
 * library's loops. 0 or -1 (out of memory). */
static int channels(struct algo_ctx *x, struct plan *p, int tree,
		    emit_fn emit, double (*lat)(const struct algo_ctx *),
		    pipe_fn pipe)
{
	struct chans ch;
	uint32_t c;
	int rc = -1;

	if (chans_init(x, &ch, tree) != 0)
		goto out;
	algo_phase(x, p);
	for (c = 0; c < ch.K; c++) {
		uint32_t rail = ch.rails[c % ch.nrails];

		if (orders(x, c, rail, ch.ord) != 0)
			goto out;
		emit(x, p, &ch, c, rail);
	}
	if (pipe)
		pipe(x, ch.K);
	/* A small collective runs fewer channels than the plan's flows
	 * (pipe.h: pipe_chan_share); the run scales the caps by that. */
	x->pipe.chan_K = ch.K;
	x->pipe.chan_min_B = x->as->channel_min_B.b[x->proto] +
			     x->g.p * x->as->channel_min_rank_B.b[x->proto];
	x->pipe.chan_t_s = x->t_chan_s;
	x->pipe.chan_all = x->t_chan_all;
	x->pipe.chan_max = ch.K > 1 ? ch.K : (double)(x->g.nnodes > 1 ?
			   x->lib->kernel_units.scale_out :
			   x->lib->kernel_units.scale_up);
	algo_close_phase_lat(x, p, lat);
	rc = 0;
out:
	chans_release(&ch);
	return rc;
}

/* The chain of ring order ord (every node's order in turn, closing
 * back to the first) from rank root around to the rank before it: the
 * hops as ring_segments makes them (reverse: toward the root, a
 * reduce). */
static void chain_from(struct algo_ctx *x, struct plan *p,
		       const uint32_t *ord, uint32_t rail, uint32_t root,
		       int reverse)
{
	uint32_t N = x->g.nnodes, k = 0, i = 0, s;

	for (k = 0; k < N; k++) {
		uint32_t m = x->g.first[k + 1] - x->g.first[k];

		for (i = 0; i < m; i++)
			if (ord[x->g.first[k] + i] == root)
				goto found;
	}
	BUG("a group's root is not in the ring order");
found:
	for (s = 0; s + 1 < x->g.p; s++) {
		uint32_t m = x->g.first[k + 1] - x->g.first[k];
		uint32_t a = ord[x->g.first[k] + i], k2 = k, i2 = i + 1, b;

		if (i2 == m) {
			k2 = (k + 1) % N;
			i2 = 0;
		}
		b = ord[x->g.first[k2] + i2];
		if (k2 == k) {
			seg_dir(x, p, a, b, rail, rail, reverse);
		} else {
			uint32_t ra = x->lib->pxn ? rail : algo_rail(x, a);
			uint32_t rb = ra;

			if (x->lib->ring_own_nics) {
				ra = algo_rail(x, a);
				rb = algo_rail(x, b);
			}
			seg_dir(x, p, a, b, ra, rb, reverse);
		}
		k = k2;
		i = i2;
	}
}

/* A group of G broadcasts (reduces) rooted at ranks 0 .. G-1: on every
 * channel one chain from each root, over the same ring order, carrying
 * its bytes / G. With G = p every ring link carries (p-1)/p of the
 * bytes, as a ring all-gather (reduce-scatter) of them. */
static void group_chains(struct algo_ctx *x, struct plan *p,
			 const struct chans *ch, uint32_t rail)
{
	uint32_t G = group_ops(x->c), r;

	for (r = 0; r < G; r++) {
		algo_flow(x, p, x->c->bytes / ((double)G * ch->K));
		chain_from(x, p, ch->ord, rail, r, x->c->op == COLL_REDUCE);
	}
}

static void ring_channel(struct algo_ctx *x, struct plan *p,
			 const struct chans *ch, uint32_t c, uint32_t rail)
{
	int chain = x->c->op == COLL_BROADCAST || x->c->op == COLL_REDUCE;

	(void)c;
	if (x->lib->ring_own_nics)
		alternate(x, ch->ord);
	if (chain && group_ops(x->c) > 1) {
		group_chains(x, p, ch, rail);
		return;
	}
	if (chain)
		root_first(x, ch->ord);
	/* Each ring link carries the bus-bandwidth share of n/K. */
	algo_flow(x, p, algo_busbw_factor(x->c->op, x->g.p) * x->c->bytes /
		  ch->K);
	ring_segments(x, p, ch->ord, rail, chain, x->c->op == COLL_REDUCE);
}

/* A broadcast or reduce chain with the protocol's chain_chunk: NCCL's
 * ring broadcast and reduce move one step (stepSize x BROADCAST_ and
 * REDUCE_CHUNKSTEPS 1, one slice: ProtoSimple<1, 1>) of each channel's
 * part a loop, and prims_simple.h waits for a whole slice before it
 * forwards it (waitPeer / postPeer per slice; NVIDIA/nccl v2.27.5-1
 * src/device/broadcast.h, reduce.h, prims_simple.h): a channel's loop
 * is one chunk, passed on in p-1 steps. One operation's
 * channels all start at the root and run the same order, so they cross
 * one link at a time: the chain fills in p-2 loops at the links' rate
 * (the pipeline's fill). A group's operations start at roots 0 .. G-1
 * (cgroup.h), one rank apart, so while one operation's chunks fill its
 * chain the others' use the links ahead: the fill pipe.c group_fill
 * counts, none when every rank is a root, nearly one operation's for
 * two of 8; and one channel's own rate (chain_channel_bandwidth) bounds
 * them too: pipe_floor_s. */
static void chain_pipe(struct algo_ctx *x)
{
	const struct coll_pipe_spec *ps = &x->as->pipe[x->proto];
	struct coll_pipe_spec cs = { 0 };
	double D = x->g.p - 1;
	uint32_t G = group_ops(x->c), K = group_channels(x);
	/* one sync a loop on the critical path: the loops overlap along
	 * the chain, and the hops' own syncs are the latency's p-1 steps */
	struct pipe_shape sh = { K, 1, D, G > 1 ? 0 : D - 1 };

	if (G > 1) {	/* the busiest channel's parts: pipe_sync_s */
		x->pipe.chain_group = G;
		x->pipe.chain_K = K;
		x->pipe.chain_proto = x->proto;
		x->pipe.chain_gs = &x->lib->group;
		x->pipe.chain_hop_s = algo_hop_intra(x);
	}
	if (!(ps->chain_chunk_B > 0) || !(D > 0))
		return;
	cs.chunk_B = ps->chain_chunk_B;
	cs.slices = 1;
	cs.stages = 1;
	cs.sync_s = ps->sync_s;
	{
		struct pipe keep = x->pipe;

		pipe_init(&x->pipe, &cs, &sh);
		x->pipe.chain_group = keep.chain_group;
		x->pipe.chain_K = keep.chain_K;
		x->pipe.chain_proto = keep.chain_proto;
		x->pipe.chain_gs = keep.chain_gs;
		x->pipe.chain_hop_s = keep.chain_hop_s;
	}
	if (G > 1)	/* the group's chains fill as pipe.c group_fill */
		x->pipe.chain_fill_D = D;
	x->pipe.chan_chunks = 1;
	x->pipe.plan_B = x->c->bytes;
	if (ps->chain_channel_Bps > 0) {
		x->pipe.chain_s = 1 / ps->chain_channel_Bps;
		x->pipe.chain_depth = D;
		x->pipe.chain_K = K;
	}
}

/* A ring loop ends on a step that writes only local memory (pipe.c
 * "final"): one chunk a channel, copied at the channel's own rate,
 * the one-node chain_channel_bandwidth (NCCL's perChMaxTreeBws one-node
 * row, the rate NCCL's own tuner gives one Simple channel); S / (K p r)
 * in all. Within one node only: across nodes the rate is not known. */
static void ring_final_step(struct algo_ctx *x)
{
	const struct coll_pipe_spec *ps = &x->as->pipe[x->proto];

	if (x->g.nnodes == 1 && ps->chain_channel_Bps > 0 &&
	    x->pipe.chunks > 0)
		x->pipe.local_s_per_B = 1 / (x->pipe.chunks * ps->chain_channel_Bps);
}

/* A ring channel handles one chunk per rank each loop and passes it in
 * 2(p-1) steps (all-reduce) or p-1 (all-gather, reduce-scatter); a
 * broadcast or reduce chain as chain_pipe says. */
static void ring_pipe(struct algo_ctx *x, uint32_t K)
{
	double P = x->g.p;

	if (x->c->op == COLL_BROADCAST || x->c->op == COLL_REDUCE) {
		chain_pipe(x);
		return;
	}
	if (x->c->op == COLL_ALLREDUCE)
		algo_pipe(x, (struct pipe_shape){ P, 2 * (P - 1), 1, 0 }, K);
	else if (x->c->op == COLL_ALLGATHER || x->c->op == COLL_REDUCESCATTER)
		algo_pipe(x, (struct pipe_shape){ P, P - 1, 1, 0 }, K);
	else
		return;
	ring_final_step(x);
}

int algo_ring(struct algo_ctx *x, struct plan *p)
{
	int rc = channels(x, p, 0, ring_channel, ring_latency, ring_pipe);

	/* One node on a switch: NCCL's tuner caps a ring channel's bus
	 * bandwidth per protocol (perChMaxRingLL128Bws; binds on Blackwell,
	 * where LL128 then loses to Simple), for its choice only. */
	if (rc == 0 && x->g.nnodes == 1 && x->t->nvls_links > 0) {
		double r = coll_lib_ring_select_ratio(x->lib, x->proto,
						      x->t->nvls_links);

		if (r < 1)
			p->select_r = r;
	}
	return rc;
}

/* In-order binary tree over 0..n-1 rooted at 0: the parent of r > 0 is r
 * with its lowest set bit moved up one place, or cleared when that falls
 * outside the tree. */
static uint32_t btree_parent(uint32_t r, uint32_t n)
{
	uint32_t bit = r & (~r + 1), up = (r ^ bit) | (bit << 1);

	return up < n ? up : r ^ bit;
}

uint32_t algo_tree_parent(uint32_t k, uint32_t n, uint32_t t)
{
	uint32_t v = k, up;

	if (t == 1)
		v = n % 2 ? (k + 1) % n : n - 1 - k;
	if (v == 0)
		return UINT32_MAX;
	up = btree_parent(v, n);
	if (t == 1)
		up = n % 2 ? (up + n - 1) % n : n - 1 - up;
	return up;
}

uint32_t algo_floor_log2(uint32_t n)
{
	uint32_t l = 0;

	while (n >>= 1)
		l++;
	return l;
}

enum { TREE_UP = 1, TREE_DOWN = 2 };

/* Tree t's edges in the directions dirs: toward the root (the reduce)
 * and away from it (the broadcast). */
static void tree_segments(struct algo_ctx *x, struct plan *p,
			  const uint32_t *ord, uint32_t rail, uint32_t t,
			  unsigned dirs)
{
	uint32_t N = x->g.nnodes, k, i;

	for (k = 0; k < N; k++) {
		const uint32_t *o = ord + x->g.first[k];
		uint32_t m = x->g.first[k + 1] - x->g.first[k];
		uint32_t up = N > 1 ? algo_tree_parent(k, N, t) : UINT32_MAX;

		for (i = 0; i + 1 < m; i++) {
			if (dirs & TREE_UP)
				algo_seg(x, p, o[i + 1], o[i], rail, rail, 1);
			if (dirs & TREE_DOWN)
				algo_seg(x, p, o[i], o[i + 1], rail, rail, 1);
		}
		if (up == UINT32_MAX)
			continue;
		if (dirs & TREE_UP)
			algo_seg(x, p, o[0], ord[x->g.first[up]], rail, rail, 1);
		if (dirs & TREE_DOWN)
			algo_seg(x, p, ord[x->g.first[up]], o[0], rail, rail, 1);
	}
}

static void tree_channel(struct algo_ctx *x, struct plan *p,
			 const struct chans *ch, uint32_t c, uint32_t rail)
{
	algo_flow(x, p, x->c->bytes / ch->K);
	tree_segments(x, p, ch->ord, rail, c % 2, TREE_UP | TREE_DOWN);
}

static void tree_channel_up(struct algo_ctx *x, struct plan *p,
			    const struct chans *ch, uint32_t c, uint32_t rail)
{
	algo_flow(x, p, x->c->bytes / ch->K);
	tree_segments(x, p, ch->ord, rail, c % 2, TREE_UP);
}

static void tree_channel_down(struct algo_ctx *x, struct plan *p,
			      const struct chans *ch, uint32_t c,
			      uint32_t rail)
{
	algo_flow(x, p, x->c->bytes / ch->K);
	tree_segments(x, p, ch->ord, rail, c % 2, TREE_DOWN);
}

/* Hops from a leaf to the root: the chain inside a node, then the
 * binary tree's levels. */
static double tree_depth(const struct algo_ctx *x)
{
	uint32_t N = x->g.nnodes;

	return (x->g.ppn_max - 1) + algo_floor_log2(N);
}

/* A tree channel moves one chunk per loop up the depth D (reducing) and
 * down again (broadcasting) on split warps, one sync per loop; the last
 * chunk leaves 2D - 1 loops after it entered. */
static void tree_pipe(struct algo_ctx *x, uint32_t K)
{
	double D = tree_depth(x);

	algo_pipe(x, (struct pipe_shape){ 1, 1, D, 2 * D - 1 }, K);
}

/* One way from a leaf to the root (or back): D steps. */
static double tree_way(const struct algo_ctx *x)
{
	uint32_t N = x->g.nnodes;

	return (x->g.ppn_max - 1) * algo_hop_intra(x) +
	       algo_floor_log2(N) * (N > 1 ? algo_hop(x, TT_NET) : 0);
}

static double tree_latency(const struct algo_ctx *x)
{
	return algo_base(x) + 2 * tree_way(x);
}

/* Up then down: each way is a phase of its own, which a chunk crosses
 * in D hops (fill D - 1 loops); the base is paid once, with the reduce. */
static void tree_pipe_way(struct algo_ctx *x, uint32_t K)
{
	double D = tree_depth(x);

	algo_pipe(x, (struct pipe_shape){ 1, 1, D, D - 1 }, K);
}

static double tree_latency_up(const struct algo_ctx *x)
{
	return algo_base(x) + tree_way(x);
}

/* The tree all-reduce: the reduce and the broadcast at once (each
 * channel's flow runs every edge both ways), or, where the library runs
 * them one after the other (RCCL's Tree/Simple: all_reduce.h
 * runTreeUpDown, where NCCL runs runTreeSplit), two phases of one-way
 * flows, each moving the channel's n/K; the latency constants are the
 * same in sum. */
int algo_tree(struct algo_ctx *x, struct plan *p)
{
	if (!x->as->up_then_down.on[x->proto])
		return channels(x, p, 1, tree_channel, tree_latency, tree_pipe);
	if (channels(x, p, 1, tree_channel_up, tree_latency_up,
		     tree_pipe_way) != 0)
		return -1;
	return channels(x, p, 1, tree_channel_down, tree_way, tree_pipe_way);
}

/* Phase 1 or 3 of the hierarchical all-reduce: a ring in every node. */
static int hier_intra(struct algo_ctx *x, struct plan *p, uint32_t *ord,
		      double latency_s)
{
	uint32_t k, c, m = x->g.ppn_max;
	double n = x->c->bytes;

	algo_phase(x, p);
	for (k = 0; k < x->g.nnodes; k++) {
		uint32_t K = cap_channels(x, algo_node_rings(x, k));

		for (c = 0; c < K; c++) {
			uint32_t i;

			if (algo_order(x, k, c, 0, ord) != 0)
				return -1;
			/* (m-1)/m * n/K, reduce-scatter or all-gather */
			algo_flow(x, p, algo_busbw_factor(COLL_ALLGATHER, m) *
				  n / K);
			for (i = 0; i < m; i++)
				algo_seg(x, p, ord[i], ord[(i + 1) % m], 0, 0, 1);
		}
	}
	algo_close_phase(x, p, latency_s + (m - 1) * algo_hop_intra(x));
	return 0;
}

static void hier_inter(struct algo_ctx *x, struct plan *p)
{
	uint32_t N = x->g.nnodes, m = x->g.ppn_max, j, k;
	double n = x->c->bytes;

	algo_phase(x, p);
	for (j = 0; j < m; j++) {
		algo_flow(x, p, algo_busbw_factor(COLL_ALLREDUCE, N) * n / m);
		for (k = 0; k < N; k++) {
			uint32_t a = x->g.members[x->g.first[k] + j];
			uint32_t b = x->g.members[x->g.first[(k + 1) % N] + j];
			uint32_t r = algo_rail(x, a);

			algo_seg(x, p, a, b, r, r, 1);
		}
	}
	algo_close_phase(x, p, 2.0 * (N - 1) * algo_hop(x, TT_NET));
}

int algo_hier(struct algo_ctx *x, struct plan *p)
{
	uint32_t *ord;
	int rc = -1;

	if (x->c->op == COLL_ALLTOALL)
		return algo_hier_a2a(x, p);
	if (x->g.nnodes < 2 || x->g.ppn_min != x->g.ppn_max ||
	    x->g.ppn_max < 2) {
		x->why = "needs several nodes with the same number (>= 2) of ranks each";
		return 1;
	}
	ord = mem_alloc(x->g.ppn_max * sizeof(*ord));
	if (!ord)
		return -1;
	if (hier_intra(x, p, ord, algo_base(x)) != 0)
		goto out;
	hier_inter(x, p);
	if (hier_intra(x, p, ord, 0) != 0)
		goto out;
	rc = 0;
out:
	mem_free(ord);
	return rc;
}
