/*
 * algo_rounds.c - algorithms made of synchronous rounds: recursive
 * halving-doubling, pairwise all-to-all, hierarchical all-to-all.
 *
 * Recursive halving-doubling (p ranks, q = 2^floor(log2 p), L = log2 q):
 *   reduce-scatter by halving: round k = 0..L-1, rank r exchanges with
 *     r XOR q/2^(k+1), n/2^(k+1) bytes each way;
 *   all-gather by doubling: the same rounds in reverse, same volumes;
 *   all-reduce = both; a p that is not a power of two first folds ranks
 *     q..p-1 into 0..p-q-1 (n bytes) and unfolds them at the end.
 *   All-gather and reduce-scatter alone need p a power of two.
 * Each round is a phase of one flow per sender and costs one step.
 *
 * Pairwise all-to-all: round k = 1..p-1, rank r sends its block for
 * r+k (mod p). One phase per round.
 *
 * Hierarchical all-to-all (m ranks on each of N nodes, position j = a
 * rank's index within its node):
 *   1. inside each node, rank (k,i) sends to (k,j) everything it has for
 *      position j on any node: sum_k' v((k,i),(k',j));
 *   2. rank (k,j) sends to (k',j), k' != k, on its own rail, everything
 *      its node has for (k',j): sum_i v((k,i),(k',j)).
 *   Inter-node traffic is rail-local and in m-times fewer, larger
 *   messages. A rank's sends in a phase progress together (one flow).
 */
#include "algo.h"

#include "base/mem.h"

static uint32_t pow2_floor(uint32_t n)
{
	uint32_t q = 1;

	while (q * 2 <= n)
		q *= 2;
	return q;
}

/* One round: every rank r < limit with partner(r) sends bytes to it. */
static void round_xor(struct algo_ctx *x, struct plan *p, uint32_t limit,
		      uint32_t mask, double bytes, double *base)
{
	uint32_t r;

	algo_phase(x, p);
	for (r = 0; r < limit; r++) {
		algo_flow(x, p, bytes);
		algo_p2p(x, p, r, r ^ mask, 1);
	}
	algo_close_phase(x, p, *base + algo_step(x));
	*base = 0;
}

/* Ranks q+i send n to i (or back when unfold). */
static void fold(struct algo_ctx *x, struct plan *p, uint32_t q, int unfold,
		 double *base)
{
	uint32_t i;

	algo_phase(x, p);
	for (i = 0; q + i < x->g.p; i++) {
		algo_flow(x, p, x->c->bytes);
		if (unfold)
			algo_p2p(x, p, i, q + i, 1);
		else
			algo_p2p(x, p, q + i, i, 1);
	}
	algo_close_phase(x, p, *base + algo_step(x));
	*base = 0;
}

int algo_rhd(struct algo_ctx *x, struct plan *p)
{
	uint32_t P = x->g.p, q = pow2_floor(P), L = 0, k;
	double n = x->c->bytes, base = algo_base(x);

	while ((1u << L) < q)
		L++;
	if (x->c->op != COLL_ALLREDUCE && q != P) {
		x->why = "all-gather and reduce-scatter need a power-of-two group";
		return 1;
	}
	if (x->c->op == COLL_ALLGATHER) {
		for (k = 0; k < L; k++)
			round_xor(x, p, P, 1u << k, n / P * (1u << k), &base);
		return 0;
	}
	if (q != P)
		fold(x, p, q, 0, &base);
	for (k = 0; k < L; k++)
		round_xor(x, p, q, q >> (k + 1), n / (2u << k), &base);
	if (x->c->op == COLL_ALLREDUCE) {
		for (k = L; k-- > 0;)
			round_xor(x, p, q, q >> (k + 1), n / (2u << k), &base);
		if (q != P)
			fold(x, p, q, 1, &base);
	}
	return 0;
}

int algo_pairwise(struct algo_ctx *x, struct plan *p)
{
	uint32_t P = x->g.p, k, r;
	double base = algo_base(x);

	for (k = 1; k < P; k++) {
		algo_phase(x, p);
		for (r = 0; r < P; r++) {
			uint32_t d = (r + k) % P;
			double v = algo_a2a_bytes(x, r, d);

			if (v <= 0)
				continue;
			algo_flow(x, p, v);
			algo_p2p(x, p, r, d, 1);
		}
		algo_close_phase(x, p, base + algo_step(x));
		base = 0;
	}
	return 0;
}

static uint32_t member(const struct algo_ctx *x, uint32_t k, uint32_t j)
{
	return x->g.members[x->g.first[k] + j];
}

/* Phase 1 volume: what (k,i) holds for position j on any node. */
static double to_position(const struct algo_ctx *x, uint32_t a, uint32_t j)
{
	double v = 0;
	uint32_t k;

	for (k = 0; k < x->g.nnodes; k++)
		v += algo_a2a_bytes(x, a, member(x, k, j));
	return v;
}

/* Phase 2 volume: what node k holds for (k2, j). */
static double to_rank(const struct algo_ctx *x, uint32_t k, uint32_t b)
{
	double v = 0;
	uint32_t i;

	for (i = 0; i < x->g.ppn_max; i++)
		v += algo_a2a_bytes(x, member(x, k, i), b);
	return v;
}

/* Phase 1, rank by rank: v[j] = what the rank sends to position j. */
static void hier_a2a_intra(struct algo_ctx *x, struct plan *p, double *v)
{
	uint32_t m = x->g.ppn_max, k, i, j;

	algo_phase(x, p);
	for (k = 0; k < x->g.nnodes; k++)
		for (i = 0; i < m; i++) {
			uint32_t a = member(x, k, i);
			double V = 0;

			for (j = 0; j < m; j++) {
				v[j] = j != i ? to_position(x, a, j) : 0;
				if (v[j] > V)
					V = v[j];
			}
			if (V <= 0)
				continue;
			algo_flow(x, p, V);
			for (j = 0; j < m; j++)
				if (v[j] > 0)
					algo_p2p(x, p, a, member(x, k, j),
						 v[j] / V);
		}
	algo_close_phase(x, p, algo_base(x) + algo_step(x));
}

/* Phase 2, rank by rank: v[k2] = what the rank sends to its peer on node
 * k2. */
static void hier_a2a_inter(struct algo_ctx *x, struct plan *p, double *v)
{
	uint32_t N = x->g.nnodes, m = x->g.ppn_max, k, k2, j;

	algo_phase(x, p);
	for (k = 0; k < N; k++)
		for (j = 0; j < m; j++) {
			uint32_t a = member(x, k, j), r = algo_rail(x, a);
			double V = 0;

			for (k2 = 0; k2 < N; k2++) {
				v[k2] = k2 == k ? 0 :
					to_rank(x, k, member(x, k2, j));
				if (v[k2] > V)
					V = v[k2];
			}
			if (V <= 0)
				continue;
			algo_flow(x, p, V);
			for (k2 = 0; k2 < N; k2++)
				if (v[k2] > 0)
					algo_seg(x, p, a, member(x, k2, j), r, r,
						 v[k2] / V);
		}
	algo_close_phase(x, p, algo_step(x));
}

int algo_hier_a2a(struct algo_ctx *x, struct plan *p)
{
	uint32_t N = x->g.nnodes, m = x->g.ppn_max;
	double *v;

	if (N < 2 || x->g.ppn_min != m) {
		x->why = "needs several nodes with the same number of ranks each";
		return 1;
	}
	v = mem_alloc((size_t)(m > N ? m : N) * sizeof(*v));
	if (!v)
		return -1;
	hier_a2a_intra(x, p, v);
	hier_a2a_inter(x, p, v);
	mem_free(v);
	return 0;
}
