/*
 * algo.c - building a collective's plan: checks, dispatch, and the
 * one-step algorithms (direct, NVLS). Rings, trees and the hierarchical
 * all-reduce are in algo_ring.c; multi-round algorithms in algo_rounds.c;
 * the helpers they all share (flows, segments, latency constants, ring
 * orders) in algo_phase.c.
 *
 * Direct and p2p (all-to-all, send/recv: the libraries post every send
 * at once): every rank sends to every peer at once, and a rank's sends
 * progress together (NCCL and RCCL interleave peers over channels), so
 * each source is one flow over all its paths:
 *   all-reduce      two shots, as RCCL's MSCCL all-pairs algorithm runs
 *                   it (tools/msccl-algorithms/allreduce-allpairs-8n-*.xml:
 *                   each GPU sends 448 of its 512 chunks, receives and
 *                   reduces 7 x 64, then sends its reduced 64 to each
 *                   peer): a reduce-scatter phase, n/p to each peer, then
 *                   an all-gather phase, n/p to each peer; link load 2n/p;
 *                   the reduction between them at reduce_bandwidth
 *   all-gather      n/p (its shard) to each peer
 *   reduce-scatter  n/p (the peer's slice) to each peer
 *   all-to-all      v_ij to each peer j; the flow moves V = max_j v_ij
 *                   and uses path j with coefficient v_ij / V
 *   broadcast       the root's n to each peer; reduce: each peer's n to
 *                   the root; send/recv: n from rank 0 to rank 1.
 *
 * NVLS (NVLink SHARP) all-reduce within one switch domain: rank k owns
 * slice k (n/p); it asks the switch for the reduced slice (the switch
 * reads n/p from every GPU, returns n/p) and multicasts it back (writes
 * n/p, the switch delivers n/p to every GPU). Per GPU each direction of
 * its switch link carries n (serving the others) + n/p (its own):
 * n (1 + 1/p), at the switch's reduction efficiency.
 */
#include "algo.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

/* One all-pairs phase in which every rank sends `share` to every peer;
 * the first phase also pays the base latency, the second (per_byte_s,
 * s per byte of the collective) the local reduction between the shots
 * where the library runs it apart. */
static void pairs_phase(struct algo_ctx *x, struct plan *p, double share,
			int first, double per_byte_s)
{
	uint32_t P = x->g.p, i, j;

	algo_phase(x, p);
	for (i = 0; i < P; i++) {
		algo_flow(x, p, share);
		for (j = 0; j < P; j++)
			if (j != i)
				algo_p2p(x, p, i, j, 1);
	}
	algo_close_phase(x, p, (first ? algo_base(x) : 0) + algo_step(x));
	if (!p->failed && p->nphases > 0)
		p->phases[p->nphases - 1].per_byte_s = per_byte_s;
}

/* NCCL's p2p all-to-all inside one node: every channel moves its
 * peer's part in steps of the p2p chunk (NCCL_P2P_NVL_CHUNKSIZE when the
 * communicator is all NVLink) and syncs once per step (sendrecv.h:
 * ProtoSimple<1, 1>); a send to one peer takes its own channels (pipe.c
 * "p2p"): at most k0, the largest power of two with k0 P <= K of the K
 * p2p channels (p2pnChannelsPerPeer capped at p2pnChannels: K on
 * NVSwitch), and the pipeline counts the steps of the largest send. */
static void p2p_pipe(struct algo_ctx *x)
{
	const struct coll_pipe_spec *ring =
		&x->lib->algo[ALGO_RING].pipe[PROTO_SIMPLE];
	uint32_t P = x->g.p, i, j;
	double K, k0, most = 0, row_most = 0, row, b;

	algo_pipe(x, (struct pipe_shape){ 1, 1, 1, 0 }, 1);
	if (!(x->pipe.chan_chunks > 0) || P < 2)
		return;
	K = x->pipe.chunks / x->pipe.chan_chunks;
	for (k0 = K; k0 * P > K && k0 > 1; k0 /= 2)
		;
	for (i = 0; i < P; i++) {
		row = 0;
		for (j = 0; j < P; j++) {
			b = algo_a2a_bytes(x, i, j);
			row += b;
			if (j != i && b > most)
				most = b;
		}
		if (row > row_most)
			row_most = row;
	}
	if (!(row_most > 0))
		return;
	x->pipe.peer_frac = most / row_most;
	x->pipe.peer_chans = floor(k0);
	x->pipe.peer_chans_max = K;
	/* step by step where the GPU's channel send rate is known (pipe.c
	 * "p2p"): the receiver's local copy at one channel's Simple rate
	 * (NCCL's perChMaxTreeBws, as a ring's final local step), the send
	 * rate in the flows' line bytes */
	x->pipe.peer_send_Bps = x->t->p2p_channel_send_Bps * x->inflate;
	if (ring->chain_channel_Bps > 0)
		x->pipe.peer_copy_s_per_B = 1 / ring->chain_channel_Bps;
}

/* The least power of two >= v (v >= 1). */
static double pow2_up(double v)
{
	double q = 1;

	while (q < v)
		q *= 2;
	return q;
}

/*
 * NCCL's p2p channels for a send to a rank on another node (the
 * library's net_peer; NVIDIA/nccl src/graph/paths.cc): a network peer
 * gets `channels` (NCCL_NCHANNELS_PER_NET_PEER's default 2), or from
 * 2.29 max(NICs, ceil(NIC GB/s / NCCL_P2P_PER_CHANNEL_NET_BW 14))
 * (ncclTopoGetNchannels); 2.20-2.28 halve the 2 while 2 x ranks > 4 x
 * the communicator's channels, then take at least the GPU's NICs
 * (ncclTopoGetNchannels), 2.29+ round up to a power of two and halve
 * while channels x ceil(ranks / 8) > its p2p channels
 * (ncclTopoComputeP2pChannels: "fit all the peers within a single
 * round"). The communicator's channels are its rings' (kernel_units
 * scale_out: 16 on 8-GPU nodes with a NIC each), rounded up to a power
 * of two for p2p. 0 where not modelled.
 */
static double net_peer_chans(const struct algo_ctx *x)
{
	const struct coll_net_peer_spec *np = &x->lib->net_peer;
	const struct topo *t = x->t;
	double P = x->g.p, K0, K, c, nics = 1, B = 0;
	int64_t so = x->lib->kernel_units.scale_out;

	if (!(np->channels > 0) && !(np->channel_Bps > 0))
		return 0;
	K0 = (double)(so > 0 ? so : x->lib->max_channels);
	if (!(K0 >= 1))
		return 0;
	K = pow2_up(K0);
	if (t->gpus_per_node > 0 && t->nics_per_node >= t->gpus_per_node)
		nics = floor((double)t->nics_per_node / t->gpus_per_node);
	if (t->nic_up && t->nics_per_node > 0)
		B = nics * t->links[t->nic_up[0]].cap_Bps;
	c = (double)np->channels;
	if (np->channel_Bps > 0 && B > 0)
		c = ceil(B / np->channel_Bps * (1 - 1e-12));
	if (np->halve == NET_HALVE_RANKS)
		while (c * P > 4 * K0 && c > 1)
			c = floor(c / 2);	/* NCCL's int >>= 1 */
	if (c < nics)
		c = nics;
	c = pow2_up(c);
	if (np->halve == NET_HALVE_BATCHES && np->batch > 0)
		while (c * ceil(P / (double)np->batch) > K && c > 1)
			c /= 2;
	return c < K ? c : K;
}

/*
 * The rate bound of source i's flow in an all-to-all across nodes (B/s of
 * its line bytes; 0 = none): NCCL runs every round of one node delta on
 * the same channels (src/include/channel.h ncclP2pChannelBaseForRound:
 * base = the node delta x ceil(local ranks / 8) + local delta / 8, a
 * send's parts on base + part, enqueue.cc), so a node's peers, 8 at a
 * time (NCCL_MAX_DEV_WORK_P2P_PER_BATCH), share c channels, and one
 * channel's send warps copy what they send at the GPU's channel send
 * rate r_s (p2p_channel_send; with PXN, the default, a remote send is
 * an NVLink write into the rail GPU's buffer, the same copy as a send
 * within the node). The busiest group's bytes G over c channels take
 * G / (c r_s): the flow of V line-inflated bytes runs at most V c r_s /
 * G. A send under c x 128 KiB takes fewer channels (enqueue.cc
 * addP2pToPlan): not counted here (the bound is the large sends').
 * A send/recv to a rank on another node (a pipeline stage's activation,
 * a context-parallel ring's K/V: ncclSend / ncclRecv) is the same p2p
 * send on the same c channels to its one peer (enqueue.cc
 * addP2pToPlan): its flow runs at most c r_s.
 */
static double net_send_bound(const struct algo_ctx *x, uint32_t i, double V,
			     double c, double *acc)
{
	const struct group *g = &x->g;
	double rs = x->t->p2p_channel_send_Bps, G = 0;
	uint32_t k, m, a, pos = 0, batch, nb, b;
	const uint32_t *mem;

	if (!(c > 0) || !(rs > 0) || !(V > 0))
		return 0;
	if (x->c->op == COLL_SENDRECV)	/* one peer on its own c channels */
		return x->inflate * c * rs;
	batch = x->lib->net_peer.batch > 0 ? (uint32_t)x->lib->net_peer.batch
					   : 1;
	mem = group_members(g, g->gnode[i], &m);
	for (a = 0; a < m; a++)
		if (mem[a] == i)
			pos = a;
	for (k = 0; k < g->nnodes; k++) {
		mem = group_members(g, k, &m);
		nb = (m + batch - 1) / batch;
		for (b = 0; b < nb; b++)
			acc[b] = 0;
		for (a = 0; a < m; a++) {
			/* the peer's local delta from i's place (a node
			 * of fewer ranks: i's place modulo its size) */
			uint32_t d = (a + m - pos % m) % m;

			if (mem[a] != i)
				acc[d / batch] += algo_a2a_bytes(x, i, mem[a]);
		}
		for (b = 0; b < nb; b++)
			if (acc[b] > G)
				G = acc[b];
	}
	if (!(G > 0))
		return 0;
	return V * x->inflate * c * rs / G;
}

/* A one-phase direct or p2p plan's latency: the base and one step. NCCL's
 * p2p kernel runs at the GPU's own fixed cost where it has one
 * (p2p_launch, fitted per GPU generation: configs/gpus), in place of the
 * library's p2p base; the library's choices keep its base (select
 * view). */
static double direct_lat(const struct algo_ctx *x)
{
	double base = algo_base(x);

	if (x->algo == ALGO_P2P && !x->select_view) {
		if (x->t->p2p_launch_s > 0)
			base = x->t->p2p_launch_s;
		if (x->g.p > 2)
			base += (x->g.p - 2) * x->t->p2p_peer_s;
	}
	return base + algo_step(x);
}

int algo_direct(struct algo_ctx *x, struct plan *p)
{
	const struct coll_desc *c = x->c;
	uint32_t P = x->g.p, i, j, G = c->group > 1 ? c->group : 1;
	double n = c->bytes, share = n / P, cn = 0, *acc = NULL;

	if (c->op == COLL_ALLREDUCE) {	/* reduce-scatter, then all-gather */
		/* MSCCL's all-pairs programs receive the shards into a
		 * scratch buffer and reduce them in a step of their own
		 * (type "re", on one threadblock per channel) before the
		 * second shot: each rank reads its shard from all P, n
		 * bytes, at the library's reduce_bandwidth (plans are built
		 * per byte: a time per byte of the collective) */
		double red = x->as->reduce_Bps > 0 ? 1 / x->as->reduce_Bps : 0;

		pairs_phase(x, p, share, 1, 0);
		pairs_phase(x, p, share, 0, red);
		return 0;
	}
	algo_phase(x, p);
	/* Across nodes the p2p chunk is the network's and the proxy drives
	 * the steps: not modelled (no pipeline); a node's peers share their
	 * channels' send rate, a send/recv's one peer has its own
	 * (net_send_bound, Simple: LL sends are small) */
	if (x->algo == ALGO_P2P && c->op == COLL_ALLTOALL && x->g.nnodes == 1)
		p2p_pipe(x);
	if (x->algo == ALGO_P2P && x->g.nnodes > 1 &&
	    (c->op == COLL_ALLTOALL || c->op == COLL_SENDRECV) &&
	    x->proto == PROTO_SIMPLE && !x->select_view &&
	    x->t->p2p_channel_send_Bps > 0 && (cn = net_peer_chans(x)) > 0) {
		acc = mem_alloc((x->g.ppn_max + 1) * sizeof(*acc));
		if (!acc)
			return -1;
	}
	for (i = 0; i < P; i++) {
		double V = 0;

		switch (c->op) {
		case COLL_ALLGATHER:
		case COLL_REDUCESCATTER: V = share; break;
		case COLL_ALLTOALL:
			for (j = 0; j < P; j++)
				if (j != i && algo_a2a_bytes(x, i, j) > V)
					V = algo_a2a_bytes(x, i, j);
			break;
		/* a group: root r < G sends (is sent) its n / G */
		case COLL_BROADCAST: V = i < G ? n / G : 0; break;
		case COLL_REDUCE: V = G > 1 ? n / G : i != 0 ? n : 0; break;
		case COLL_SENDRECV: V = i == 0 ? n : 0; break;
		default: break;
		}
		if (V <= 0)
			continue;
		if (acc)
			algo_flow_bound(x, p, V, net_send_bound(x, i, V, cn, acc));
		else
			algo_flow(x, p, V);
		for (j = 0; j < P; j++) {
			double coef = 1;

			if (j == i || (c->op == COLL_REDUCE && j >= G) ||
			    (c->op == COLL_SENDRECV && j != 1))
				continue;
			if (c->op == COLL_ALLTOALL)
				coef = algo_a2a_bytes(x, i, j) / V;
			if (coef > 0)
				algo_p2p(x, p, i, j, coef);
		}
	}
	mem_free(acc);
	algo_close_phase_lat(x, p, direct_lat);
	return 0;
}

/* The heads of NCCL's NVLS graph over ranks GPUs of one domain: at most
 * NCCL_MAX_NVLS_ARITY (NVIDIA/nccl v2.26.2-1 src/include/device.h:181,
 * 32; src/graph/search.cc ncclTopoCompute: maxChannels = min(arity,
 * GPUs)), as the choice (select_heads_max) takes them; NVLSTree uses the
 * same graph. */
static uint32_t nvls_heads(const struct algo_ctx *x, uint32_t ranks)
{
	int64_t hmax = x->lib->algo[ALGO_NVLS].select_heads_max;

	return hmax > 0 && (int64_t)ranks > hmax ? (uint32_t)hmax : ranks;
}

/* The switches' reduction rate (fabric reduction_bandwidth, R): every
 * GPU's n bytes pass the switches' reduce once (each multimem.ld_reduce
 * reads its slice from every GPU), whichever GPU heads the slice, so the
 * collective takes at least n / R however many heads share it; the
 * links' n (1 + 1 / nh) / eff bound falls with more heads, this one does
 * not. A floor on every flow's time the tuner does not see (its NVLS
 * bandwidth is the graph search's: coll_lib_nvls_select_ratio), as
 * sustained_busbw's. */
static void nvls_reduce_bound(struct algo_ctx *x)
{
	double t;

	if (!(x->t->nvls_Bps > 0))
		return;
	t = x->c->bytes / x->t->nvls_Bps;
	if (t > x->t_real_s)
		x->t_real_s = t;
}

int algo_nvls(struct algo_ctx *x, struct plan *p)
{
	uint32_t P = x->g.p, i, nh;
	double eff = x->t->nvls_efficiency;
	struct route r;

	if (x->c->op != COLL_ALLREDUCE || x->t->up_topology != TOPO_SWITCH ||
	    !(eff > 0)) {
		x->why = "needs an all-reduce on a scale-up switch that reduces";
		return 1;
	}
	if (x->g.nnodes != 1) {
		x->why = "runs within one scale-up domain only";
		return 1;
	}
	/* The library's tuner sees NVLS through its graph search's channel
	 * speeds (coll_lib_nvls_select_ratio); where that search finds no
	 * NVLS channel, the library has no NVLS. */
	p->select_r = coll_lib_nvls_select_ratio(x->lib, x->t->nvls_links,
						 eff, P);
	if (!(p->select_r > 0)) {
		x->why = "the library's graph search finds no NVLS channel speed";
		return 1;
	}
	nh = nvls_heads(x, P);
	algo_phase(x, p);
	/* Every channel handles one chunk per head (all_reduce.h NVLS
	 * oneNode: loopCount = nvls->nHeads x chunkSize; only a head's
	 * reduce warps run, on the slice it owns) and syncs once per loop;
	 * one hop through the switch. Every GPU serves every slice's
	 * multimem.ld_reduce and takes every multicast (n each way); a head
	 * also takes its slice's reduced n / nh and stores it once more. */
	algo_pipe(x, (struct pipe_shape){ nh, 1, 1, 0 }, 1);
	nvls_reduce_bound(x);
	for (i = 0; i < P; i++) {
		route_switch_loop(x->t, group_gpu(&x->g, i), &r);
		algo_flow(x, p, x->c->bytes * (1 + 1.0 / nh) / eff);
		algo_route(x, p, &r, 1);
	}
	algo_close_phase(x, p, algo_base(x) + algo_step(x));
	return 0;
}

/*
 * NVLSTree (NCCL's NCCL_ALGO_NVLS_TREE, all-reduce across nodes): in each
 * node NVLS as above over the node's m ranks; between nodes, rank j of
 * every node (NVLS head j) reduces and broadcasts the slice it owns, n/m,
 * over NCCL's double binary tree of nodes, half the channels on each tree
 * (NVIDIA/nccl v2.26.2-1 src/device/all_reduce.h RunWorkColl NVLS_TREE:
 * scatter and gather warps on nvls->up, reduce warps read the NVLS reduce
 * and the tree children and send to treeUp, broadcast warps receive from
 * treeUp and multicast to the node and the children; src/transport/
 * nvls.cc connects treeUp / treeDown per channel, src/graph/trees.cc
 * ncclGetDtree). Each edge carries the half-slice both ways (reduce up,
 * broadcast down): per head n/m each way on two nodes, interior nodes
 * more. All four stages and the NICs run at once on the loops' chunks:
 * one phase. Latency as NCCL's tuner charges it (tuning.cc
 * ncclTopoTuneModel): base + one NVLS step + 2 log2(N) network steps.
 */
/* The rank of group node k that heads rail rails[h]: the member whose
 * traffic leaves on that NIC, else the h-th member (mod the node's). */
static uint32_t nvls_head(const struct algo_ctx *x, uint32_t k,
			  const uint32_t *rails, uint32_t h)
{
	uint32_t mk, i;
	const uint32_t *mem = group_members(&x->g, k, &mk);

	for (i = 0; i < mk; i++)
		if (algo_rail(x, mem[i]) == rails[h])
			return mem[i];
	return mem[h % mk];
}

/* pipe.c's fill for a kernel of st stages: st - 1 loops. */
static double kernel_fill(int64_t st)
{
	return st > 1 ? (double)(st - 1) : 0;
}

/* The loops of fill of NVLSTree's pipeline: a loop's chunks pass its
 * stages one after another, each at its own resource's time for a loop's
 * bytes (per byte of the loop, L = 1): the scatter and gather warps move
 * L over a GPU's switch link (1 / (eff U)), each NVLS reduce or multicast
 * L / nh (a head's chunk of the loop), each network hop L / nh over a
 * head's NIC (a level's traffic: a parent takes its two children's
 * halves, L / (2 nh) each, on the way up and sends them down). A child
 * head's chunk takes scatter,
 * D / 2 + 1 reduces up (its own, the interior heads', the root's reduce
 * and multicast), D network hops, D / 2 multicasts down and gather
 * (NVIDIA/nccl v2.26.2-1 all_reduce.h NVLS_TREE: separate scatter,
 * reduce, broadcast and gather warps, the tree's sends through the net
 * proxy): 2 + (D + 1) / nh switch-link loops and D NIC ones. The steady
 * loop takes the slowest of the switch links (1 + 1/nh) / (eff U), the
 * NIC (both trees: 1 / (nh E) on 2 nodes, an interior node's 2 / (nh E))
 * and the per-head cap bus / (nh hb); the first loop ends after the
 * sum, so the fill is sum / slowest - 1 loops. Without a switch link or
 * NIC in the topology: the spec's stages - 1 + D. */
static double nvls_tree_fill(const struct algo_ctx *x, uint32_t nh,
			     uint32_t rail, double D, double hb)
{
	const struct topo *t = x->t;
	double eff = t->nvls_efficiency, U, E, big, net;
	double slow, bus, F;
	uint32_t g = group_gpu(&x->g, 0), nic;
	int64_t st = x->as->pipe[x->proto].stages;

	if (!t->gpu_up || !t->nic_up || t->gpus_per_node == 0)
		return kernel_fill(st) + D;
	nic = g / t->gpus_per_node * t->nics_per_node + rail;
	U = t->links[t->gpu_up[g]].cap_Bps;
	E = t->links[t->nic_up[nic]].cap_Bps;
	if (!(U > 0) || !(E > 0) || !(eff > 0))
		return kernel_fill(st) + D;
	big = 1 / (eff * U);
	net = 1 / (nh * E);
	slow = fmax(big * (1 + 1.0 / nh), (x->g.nnodes > 2 ? 2 : 1) * net);
	bus = algo_busbw_factor(x->c->op, x->g.p);
	if (hb > 0)
		slow = fmax(slow, bus / (nh * hb));
	F = (2 * big + (D + 1) * big / nh + D * net) / slow - 1;
	return F > 0 ? F : 0;
}

int algo_nvls_tree(struct algo_ctx *x, struct plan *p)
{
	uint32_t N = x->g.nnodes, m = x->g.ppn_max, i, h, k, t, nh;
	double eff = x->t->nvls_efficiency, n = x->c->bytes, D, hb, F;
	int64_t st;
	uint32_t *rails;
	struct route r;

	if (x->c->op != COLL_ALLREDUCE || x->t->up_topology != TOPO_SWITCH ||
	    !(eff > 0)) {
		x->why = "needs an all-reduce on a scale-up switch that reduces";
		return 1;
	}
	if (N < 2 || x->g.ppn_min != m || m < 2) {
		x->why = "needs several nodes with the same number (>= 2) of "
			 "ranks each";
		return 1;
	}
	rails = mem_alloc((x->t->nics_per_node + 1) * sizeof(*rails));
	if (!rails)
		return -1;
	nh = algo_rails(x, rails);
	if (nh == 0) {
		mem_free(rails);
		x->why = "needs a NIC in every node";
		return 1;
	}
	/* At most nvls_heads(): the first of the rails, as its search
	 * takes them. */
	nh = nvls_heads(x, nh);
	D = 2.0 * algo_floor_log2(N);
	/* NCCL's per-head bus bandwidth (perChMaxNVLSTreeBws): the
	 * collective's bus bandwidth is at most nh x that, the tuner's
	 * busBw = nHeads x min(intra, inter, perChMax) (tuning.cc, v2.28.3-1
	 * on); a floor on every flow's time, as max_busbw's. */
	hb = x->as->head_busbw_Bps[algo_scale(N)];
	if (hb > 0) {
		double tb = algo_busbw_factor(x->c->op, x->g.p) * n / (nh * hb);

		if (tb > x->t_min_s)
			x->t_min_s = tb;
	}
	algo_phase(x, p);
	/* A channel's loop is one chunk per head (all_reduce.h loopCount
	 * nvls->nHeads x chunkCount); its fill is the stages' own times
	 * (nvls_tree_fill), in place of pipe.c's stages - 1. */
	F = nvls_tree_fill(x, nh, rails[0], D, hb);
	st = x->as->pipe[x->proto].stages;
	algo_pipe(x, (struct pipe_shape){ nh, 1, 1,
		  F - kernel_fill(st) }, 1);
	if (N >= 4)
		x->pipe.max_chunk_B = x->as->pipe[x->proto].chunk_4nodes_B;
	nvls_reduce_bound(x);	/* the nodes' NVLS reduce every GPU's n */
	for (i = 0; i < x->g.p; i++) {
		route_switch_loop(x->t, group_gpu(&x->g, i), &r);
		algo_flow(x, p, n * (1 + 1.0 / nh) / eff);
		algo_route(x, p, &r, 1);
	}
	/* Head h of every node (one a NIC: NCCL's "NVLS Head h" log lines
	 * list one rank a node per head) owns slice h, n / nh. */
	for (h = 0; h < nh; h++) {
		algo_flow(x, p, n / nh);
		for (t = 0; t < 2; t++)
			for (k = 0; k < N; k++) {
				uint32_t up = algo_tree_parent(k, N, t), a, b;

				if (up == UINT32_MAX)
					continue;
				a = nvls_head(x, k, rails, h);
				b = nvls_head(x, up, rails, h);
				algo_seg(x, p, a, b, rails[h], rails[h], 0.5);
				algo_seg(x, p, b, a, rails[h], rails[h], 0.5);
			}
	}
	mem_free(rails);
	algo_close_phase(x, p, algo_base(x) + algo_hop(x, TT_SCALE_UP) +
			 D * algo_hop(x, TT_NET));
	return 0;
}

/* ---- dispatch ---- */

/* Which algorithms implement which op. */
static int applies(int algo, enum coll_op op)
{
	static const unsigned mask[ALGO_COUNT] = {
		[ALGO_RING] = 1u << COLL_ALLREDUCE | 1u << COLL_ALLGATHER |
			      1u << COLL_REDUCESCATTER | 1u << COLL_BROADCAST |
			      1u << COLL_REDUCE,
		[ALGO_TREE] = 1u << COLL_ALLREDUCE,
		[ALGO_DIRECT] = 1u << COLL_ALLREDUCE | 1u << COLL_ALLGATHER |
				1u << COLL_REDUCESCATTER | 1u << COLL_BROADCAST |
				1u << COLL_REDUCE,
		[ALGO_RHD] = 1u << COLL_ALLREDUCE | 1u << COLL_ALLGATHER |
			     1u << COLL_REDUCESCATTER,
		[ALGO_HIER] = 1u << COLL_ALLREDUCE | 1u << COLL_ALLTOALL,
		[ALGO_NVLS] = 1u << COLL_ALLREDUCE,
		[ALGO_PAIRWISE] = 1u << COLL_ALLTOALL,
		[ALGO_P2P] = 1u << COLL_ALLTOALL | 1u << COLL_SENDRECV,
		[ALGO_NVLS_TREE] = 1u << COLL_ALLREDUCE,
	};

	return (mask[algo] >> op) & 1u;
}

static int check_desc(const struct coll_desc *c, const char **why)
{
	uint64_t i, n = (uint64_t)c->ngpus * c->ngpus;

	if ((unsigned)c->op >= COLL_OP_COUNT)
		*why = "unknown collective operation";
	else if (c->ngpus == 0 || !c->gpus)
		*why = "a collective needs at least one member";
	else if (c->op == COLL_SENDRECV && c->ngpus != 2)
		*why = "send/recv needs exactly two members (sender, receiver)";
	else if (!(c->bytes >= 0) || !isfinite(c->bytes))
		*why = "the size must be a finite number of bytes >= 0";
	else if (c->group > 1 && c->op != COLL_BROADCAST &&
		 c->op != COLL_REDUCE)
		*why = "a group of operations is modelled for broadcast and "
		       "reduce only";
	else if (c->group > c->ngpus)
		*why = "a group has at most one operation per rank (its root)";
	else
		*why = NULL;
	if (!*why && c->op == COLL_ALLTOALL && c->a2a_B)
		for (i = 0; i < n; i++)
			if (!(c->a2a_B[i] >= 0) || !isfinite(c->a2a_B[i]))
				*why = "uneven all-to-all sizes must be finite and >= 0";
	return *why ? -2 : 0;
}

int algo_offered(const struct coll_lib_spec *lib, int algo, int proto,
		 enum coll_op op, const char **why)
{
	if (lib->algo[algo].excludes.off[op]) {
		*why = "the library does not use this algorithm for this operation";
		return 0;
	}
	if (!lib->algo[algo].protocols.on[proto] ||
	    !(lib->proto[proto].bandwidth_factor > 0)) {
		*why = "the library does not offer this algorithm/protocol";
		return 0;
	}
	return 1;
}

enum coll_scale algo_scale(uint32_t nnodes)
{
	/* NCCL's index2 (tuning.cc): nNodes <= 2 ? nNodes - 1 : 2 */
	return nnodes > 2 ? SCALE_4NODES : nnodes == 2 ? SCALE_2NODES :
	       SCALE_1NODE;
}

typedef int (*builder)(struct algo_ctx *, struct plan *);

static const builder builders[ALGO_COUNT] = {
	[ALGO_RING] = algo_ring, [ALGO_TREE] = algo_tree,
	[ALGO_DIRECT] = algo_direct, [ALGO_RHD] = algo_rhd,
	[ALGO_HIER] = algo_hier, [ALGO_NVLS] = algo_nvls,
	[ALGO_PAIRWISE] = algo_pairwise, [ALGO_P2P] = algo_direct,
	[ALGO_NVLS_TREE] = algo_nvls_tree,
};

/* A ring LL channel's rate inside one node, where the GPU gives it (gpu
 * collective_ll_channel, with the library's gpu_floor). One channel is
 * one thread block, and each loop it runs the ring's primitive calls one
 * after another on its chunk (NVIDIA/nccl v2.29.2-1 src/device/
 * all_gather.h runRing: send, p - 2 x recvCopySend, the final recv;
 * reduce_scatter.h: send, p - 2 x recvReduceSend, recvReduceCopy;
 * all_reduce.h: send, p - 2 x recvReduceSend, recvReduceCopySend, p - 2
 * x recvCopySend, the final recv): s + 1 calls for the s = p - 1
 * (2 (p - 1)) steps that cross a link, the last call local only. LL
 * calls move each 16 B line (8 B data + flags) by one thread's load,
 * flag check and store (prims_ll.h LLGenericOp: one line a thread a
 * trip), so a call runs at the block's rate r whether it sends,
 * forwards or only receives, and a channel carries r s / (s + 1) of bus
 * bandwidth: half of r on 2 ranks, 7/8 on 8 (all-gather). The bound
 * replaces channel_busbw (pipe.c "chans": running channels x this);
 * the library's choice does not see it. */
static void ring_ll_channel(struct algo_ctx *x, double bus_B)
{
	double s = x->c->op == COLL_ALLREDUCE ? 2.0 * (x->g.p - 1) :
		   x->c->op == COLL_ALLGATHER ||
		   x->c->op == COLL_REDUCESCATTER ? x->g.p - 1.0 : 0;

	if (x->algo != ALGO_RING || x->proto != PROTO_LL ||
	    x->g.nnodes != 1 || !(x->floor.chan_Bps > 0) || !(s > 0))
		return;
	x->t_chan_s = bus_B / (x->floor.chan_Bps * s / (s + 1));
	x->t_chan_all = 1;
}

static void setup(struct algo_ctx *x)
{
	const struct coll_proto_spec *ps = &x->lib->proto[x->proto];
	int one_phase = x->algo == ALGO_RING || x->algo == ALGO_TREE ||
			x->algo == ALGO_DIRECT || x->algo == ALGO_P2P ||
			x->algo == ALGO_NVLS || x->algo == ALGO_NVLS_TREE;

	double cap = ps->max_busbw_Bps[algo_scale(x->g.nnodes)];
	double bus_B = algo_busbw_factor(x->c->op, x->g.p) * x->c->bytes;

	x->inflate = 1 / ps->bandwidth_factor;
	if (one_phase && cap > 0)
		x->t_min_s = bus_B / cap;
	if (one_phase && ps->sustained_busbw_Bps > 0)
		x->t_real_s = bus_B / ps->sustained_busbw_Bps;
	if (one_phase && ps->channel_busbw_Bps > 0)
		x->t_chan_s = bus_B / ps->channel_busbw_Bps;
	ring_ll_channel(x, bus_B);
}

int algo_build(const struct topo *t, const struct coll_lib_spec *lib,
	       const struct algo_floor *floor, struct ham_cache *ham,
	       const struct coll_desc *c, int algo, int proto,
	       struct plan *out, const char **why)
{
	struct algo_ctx x = { .t = t, .lib = lib, .c = c, .ham = ham,
			      .algo = algo, .proto = proto };
	int rc;

	if (floor)
		x.floor = *floor;
	plan_init(out, algo, proto);
	if (check_desc(c, why) != 0)
		return -2;
	if (algo < 0 || algo >= ALGO_COUNT || proto < 0 || proto >= PROTO_COUNT)
		BUG("algorithm or protocol out of range");
	if (!applies(algo, c->op)) {
		*why = "the algorithm does not implement this operation";
		return 1;
	}
	if (!algo_offered(lib, algo, proto, c->op, why))
		return 1;
	x.as = &lib->algo[algo];
	rc = group_init(&x.g, t, c->gpus, c->ngpus, why);
	if (rc != 0)
		return rc;
	if (x.as->max_nodes > 0 && x.g.nnodes > x.as->max_nodes) {
		group_release(&x.g);
		*why = "the library runs this algorithm on fewer nodes";
		return 1;
	}
	setup(&x);
	/* One rank moves nothing: an empty plan, done at once (libraries
	 * return without a kernel). */
	rc = x.g.p == 1 ? 0 : builders[algo](&x, out);
	plan_flow_end(out);
	if (rc == 0)
		plan_finish(out);
	group_release(&x.g);
	if (rc == 1)
		*why = x.why;
	if (rc == 0 && out->failed)
		rc = -1;
	return rc;
}
