/*
 * coll_select.c - what a collective library's tuner data says at a size:
 * RCCL's size factors and protocol ranges, NCCL's graph search and tuner
 * view of NVLS and of a ring's per-channel caps, its multi-node latency
 * factor. The library's choice (src/network/algo.c) reads these; the
 * schema that loads the data is spec_collectives.c.
 */
#include "spec_collectives.h"

#include <math.h>
#include <stddef.h>

static int in_range(const struct schema_int_list *r, double size_B)
{
	return r->n == 2 && size_B > (double)r->v[0] &&
	       size_B <= (double)r->v[1];
}

/* RCCL's ncclTopoGetAlgoTime (HIP branch): logSize = log2i(nBytes >> 6),
 * the bandwidth times factor[logSize], the last one (index 26) for
 * larger sizes; rings only when nNodes > 1. */
double coll_lib_size_factor(const struct coll_lib_spec *lib, int a, int p,
			    double size_B, uint32_t nnodes)
{
	const struct schema_int_list *l;
	double q;
	size_t i = 0;

	if (a < 0 || a >= ALGO_COUNT || p < 0 || p >= PROTO_COUNT)
		return 1;
	l = &lib->algo[a].select_size_pct.l[p];
	if (l->n == 0 || (int64_t)nnodes < lib->algo[a].select_size_min_nodes)
		return 1;
	for (q = floor(size_B / 64); q >= 2 && i + 1 < l->n; q /= 2)
		i++;
	return (double)l->v[i] / 100;
}

/* NCCL's ring graph search on one switch (NVIDIA/nccl v2.29.2-1 src/graph/
 * search.cc ncclTopoCompute, ncclTopoDupChannels): at the fastest speed
 * v <= L, floor(L / v) channels (at most rch, ringGraph->maxChannels
 * MAXCHANNELS / 2), then slower speeds while above 0.49 of the kept one,
 * a graph kept when its channels x speed is larger; the kept graph's
 * channels are then doubled (at most rch) unless its speed is below 25
 * GB/s, or below 50 with more than 4 channels (sm > 80). *ring = its
 * channels x speed (GB/s), *ch = its channels after the doubling. */
static void ring_graph(const int64_t *v, size_t ns, double L, double rch,
		       double *ring, double *ch)
{
	double best = 0, bw = 0, nch = 0;
	size_t i;

	for (i = 0; i < ns; i++) {
		double s = (double)v[i], c = fmin(floor(L / s), rch);

		if (s > L)
			continue;
		if (bw > 0 && s / bw <= 0.49)
			break;
		if (s * c > best) {
			best = s * c;
			bw = s;
			nch = c;
		}
	}
	if (bw >= 25 && !(bw < 50 && nch > 4))
		nch = fmin(2 * nch, rch);
	*ring = best;
	*ch = nch;
}

/* NCCL's graph search and tuner for one node (NVIDIA/nccl v2.29.2-1
 * src/graph/search.cc ncclTopoCompute, ncclTopoSearchTryNvls; src/graph/
 * tuning.cc ncclTopoTuneModel), in its units: L = links x select_link
 * GB/s for a GPU's port to the switch, speeds v[] fastest first.
 *  - NVLS graph: C = min(n, NCCL_MAX_NVLS_ARITY) heads (channels), all
 *    required on one node; head g's channel takes every GPU's switch
 *    link at bwIntra, its own twice, so a GPU's link carries (C + 1)
 *    bwIntra: bwIntra = the fastest v <= L / (C + 1). The second pass
 *    raises bwInter one speed at a time while below 2 bwIntra (its search
 *    does not load bwInter on one node).
 *  - Tuner: busBw = C min(bwIntra eff (C - 1) / C x 2, bwInter), algBw =
 *    busBw n / (2 (n - 1)).
 *  - The fabric model (algo.c) gives NVLS algBw = eff L C / (C + 1): a
 *    GPU's link carries (1 + 1 / C) / eff per byte (C heads, capped as
 *    above).
 *  - Its rings are timed at L where NCCL's tuner sees the ring graph's
 *    nChannels x bwIntra: the fastest v's channels floor(L / v) (at most
 *    max_channels / 2, ringGraph->maxChannels), then slower speeds while
 *    above 0.49 of the best one's, a graph kept when it carries more.
 * The ratio of NVLS's tuner algBw to its fabric algBw, over the ring's
 * (tuner / L), keeps the choice between them NCCL's. Hopper (L 370.8,
 * eff 0.85): n = 8 bwIntra 40, bwInter 60, busBw 476, ratio 1.00; n =
 * 4 bwIntra = bwInter = 60 (the top speed), busBw 240, ratio 0.65. */
double coll_lib_nvls_select_ratio(const struct coll_lib_spec *lib,
				  int64_t links, double eff, uint32_t n)
{
	const struct coll_algo_spec *as = &lib->algo[ALGO_NVLS];
	const int64_t *v = as->select_speeds.v;
	size_t i, k = 0, ns = as->select_speeds.n;
	double L, C, intra = 0, inter, bw, tuner, fabric, ring = 0, ring_ch = 0;
	double rch = lib->max_channels >= 2 ? (double)(lib->max_channels / 2) : 1;

	if (!(as->select_link_Bps > 0) || ns == 0 || links <= 0 || n < 2 ||
	    !(eff > 0))
		return 1;
	L = (double)links * as->select_link_Bps / 1e9;
	C = as->select_heads_max > 0 && as->select_heads_max < (int64_t)n ?
	    (double)as->select_heads_max : (double)n;
	for (i = 0; i < ns; i++)
		if ((C + 1) * (double)v[i] <= L) {
			intra = (double)v[i];
			k = i;
			break;
		}
	if (!(intra > 0))
		return 0;
	for (inter = intra; k > 0 && inter < 2 * intra;)
		inter = (double)v[--k];
	bw = fmin(intra * eff * (C - 1) / C * 2, inter);
	tuner = C * bw * n / (2.0 * (n - 1));
	/* algo.c algo_nvls: a GPU's link carries (1 + 1 / C) / eff per
	 * byte with C the heads (nvls_heads, the same cap) */
	fabric = eff * L * C / (C + 1);
	ring_graph(v, ns, L, rch, &ring, &ring_ch);
	if (!(ring > 0))
		ring = L;
	return tuner / (fabric * ring / L);
}

double coll_lib_ring_select_ratio(const struct coll_lib_spec *lib, int p,
				  int64_t links)
{
	const struct coll_algo_spec *as = &lib->algo[ALGO_NVLS];
	double cap = p >= 0 && p < PROTO_COUNT ?
		     lib->proto[p].select_channel_busbw_Bps / 1e9 : 0;
	double bf = p >= 0 && p < PROTO_COUNT ? lib->proto[p].bandwidth_factor : 0;
	double rch = lib->max_channels >= 2 ? (double)(lib->max_channels / 2) : 1;
	double L, ring = 0, ch = 0;

	if (!(cap > 0) || !(bf > 0) || !(as->select_link_Bps > 0) ||
	    as->select_speeds.n == 0 || links <= 0)
		return 1;
	L = (double)links * as->select_link_Bps / 1e9;
	ring_graph(as->select_speeds.v, as->select_speeds.n, L, rch, &ring,
		   &ch);
	if (!(ring > 0) || !(ch > 0))
		return 1;
	/* the tuner: min(ring, channels x cap); the fabric: bf x L, seen
	 * against the ring's ring / L */
	return fmin(1, ch * cap / (bf * ring));
}

/* NCCL's ncclTopoGetAlgoTime: a ring Simple all-reduce spanning nodes
 * with at least 64 B per channel and rank has its latency x 1.4 (x 1.9
 * before sm80), "plateau effect of ring"; the data says which algorithm
 * and protocol, the factor and the bytes. */
double coll_lib_lat_factor(const struct coll_lib_spec *lib, int a, int p,
			   enum coll_op op, double size_B, uint32_t nranks,
			   uint32_t nnodes)
{
	const struct coll_algo_spec *as;
	double f, k;

	if (a < 0 || a >= ALGO_COUNT || p < 0 || p >= PROTO_COUNT)
		return 1;
	as = &lib->algo[a];
	f = as->select_lat_nodes.r[p];
	if (!(f > 1) || nnodes < 2 || op != COLL_ALLREDUCE || nranks == 0)
		return 1;
	k = lib->max_channels > 0 ? (double)lib->max_channels : 1;
	return size_B / (k * nranks) >= as->select_lat_nodes_min_B ? f : 1;
}

int coll_lib_range_proto(const struct coll_lib_spec *lib, enum coll_op op,
			 double size_B, uint32_t nranks, uint32_t nnodes)
{
	const struct coll_proto_ranges *r;
	double per_rank;

	if (nnodes < 2 || (unsigned)op >= COLL_OP_COUNT)
		return -1;
	r = &lib->ranges[op];
	if (r->proto[PROTO_LL].n == 0 && r->proto[PROTO_LL128].n == 0)
		return -1;
	/* rcclGetSizePerRank: the buffer for all-reduce, a rank's share of
	 * the gathered or scattered buffer otherwise (size / ranks; for
	 * broadcast and reduce, whose size is the buffer, RCCL divides the
	 * same way). */
	per_rank = op == COLL_ALLREDUCE || nranks == 0 ? size_B :
		   size_B / nranks;
	if (in_range(&r->proto[PROTO_LL128], per_rank))
		return PROTO_LL128;
	if (in_range(&r->proto[PROTO_LL], per_rank))
		return PROTO_LL;
	return PROTO_SIMPLE;
}
