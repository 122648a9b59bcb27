/*
 * algo_path.c - all-to-all over a path that is not the collective
 * library's: expert dispatch and combine kernels that move tokens
 * themselves, GPU-initiated (coll.h struct coll_path).
 *
 * The kernels stream tokens chunk by chunk through every hop at once
 * (sends, forwards and receives are pipelined), so the plan is one phase
 * in which each source rank a is one flow over all its paths (a rank's
 * transfers progress together, as its SMs interleave them), v_ab the
 * bytes a sends to b (coll.h; even: size / p):
 *
 *   forward (DeepEP normal, Hybrid-EP)
 *     b on a's node       a -> b over scale-up, v_ab
 *     node K != a's       a -> r_K over scale-out, r_K the GPU of node K
 *                         on a's rail: s sum_{b in K} v_ab, s the node
 *                         deduplication share (a token crosses once per
 *                         node); then r_K -> b over scale-up, v_ab, for
 *                         every b != r_K in K
 *   direct (DeepEP low-latency)
 *     every b             a -> b, across nodes from a's NIC to b's (no
 *                         forwarding, no deduplication), v_ab
 *
 * With V the largest of a's coefficients the flow moves V and each path
 * carries its share; the path's copy rate bounds the flow so that a GPU
 * moves at most gpu_Bps over all its paths (its SMs' copy rate):
 * bound = gpu_Bps V / sum of a's bytes. Kernels that reach only a share
 * eta of a link's sustained rate (eff_scale_up, eff_scale_out) load it
 * with 1/eta of the bytes they move (the coefficient divided by eta).
 *
 * Chunked in-order kernels (coll_path.rounds R >= 1, forward across
 * nodes; Hybrid-EP): a block takes a source rank's chunks in turn and a
 * chunk's scale-up stage waits for its scale-out one, so 1/R of the
 * scale-up stage is not hidden (forward_parts): a dispatch adds a phase
 * after the main one with 1/R of the forwards, a combine a phase before
 * it with 1/R of the forwards (its gather and pre-reduce for the remote
 * node) and one after it with 1/R of the own node's sends (its final
 * reduce's reads); the main phase keeps the rest. R = 0: one phase.
 *
 * Latency: the path's setup plus its hops: forward, one scale-up
 * transfer and, when the group spans nodes, one scale-out transfer before
 * it (in series); direct, the slower of the two (intra- and inter-node
 * peers are written at once). No library base, hop constants or host
 * launch (the system's collective_overhead is the host-launched
 * library's).
 */
#include "algo.h"

#include <math.h>
#include <string.h>

#include "base/mem.h"

/* Rank of group node k at position j (or NULL-safe: its first). */
static uint32_t member(const struct algo_ctx *x, uint32_t k, uint32_t j)
{
	uint32_t n;
	const uint32_t *m = group_members(&x->g, k, &n);

	return m[j < n ? j : 0];
}

/* The rank of node k on a's rail: the one whose rail is a's, else the
 * one at a's position in its node. */
static uint32_t rail_peer(const struct algo_ctx *x, uint32_t a, uint32_t k,
			  uint32_t pos)
{
	uint32_t n, j, ra = algo_rail(x, a);
	const uint32_t *m = group_members(&x->g, k, &n);

	for (j = 0; j < n; j++)
		if (algo_rail(x, m[j]) == ra)
			return m[j];
	return member(x, k, pos);
}

/* 1 / the path's efficiency on the a -> b hop (scale-up inside a node). */
static double inv_eff(const struct algo_ctx *x, const struct coll_path *path,
		      uint32_t a, uint32_t b)
{
	double e = x->g.gnode[a] == x->g.gnode[b] ? path->eff_scale_up :
						     path->eff_scale_out;

	return e > 0 ? 1 / e : 1;
}

/* Position of rank a in its node. */
static uint32_t position(const struct algo_ctx *x, uint32_t a)
{
	uint32_t n, j;
	const uint32_t *m = group_members(&x->g, x->g.gnode[a], &n);

	for (j = 0; j < n; j++)
		if (m[j] == a)
			return j;
	return 0;
}

/* Bytes a sends to node k (rank level), and the largest single send. */
static double to_node(const struct algo_ctx *x, uint32_t a, uint32_t k,
		      double *largest)
{
	uint32_t n, j;
	const uint32_t *m = group_members(&x->g, k, &n);
	double v = 0;

	for (j = 0; j < n; j++) {
		double b = m[j] == a ? 0 : algo_a2a_bytes(x, a, m[j]);

		v += b;
		if (b > *largest)
			*largest = b;
	}
	return v;
}

/* Shares of a forward-mode source's three kinds of transfer that one
 * phase carries: to its own node's GPUs, over scale-out to a node's
 * rail peer, forwarded by the peer inside that node. */
struct fwd_part {
	double local, out, fwd;
};

/* Source a's flow in forward mode, the shares w of its transfers. */
static void forward_source(struct algo_ctx *x, struct plan *p, uint32_t a,
			   const struct coll_path *path, struct fwd_part w)
{
	uint32_t K, ka = x->g.gnode[a], pos = position(x, a), n, j;
	double V = 0, total = 0, share = path->node_share;

	for (K = 0; K < x->g.nnodes; K++) {
		double big = 0, v = to_node(x, a, K, &big);

		if (K == ka) {
			if (w.local * big > V)
				V = w.local * big;
			total += w.local * v;
			continue;
		}
		if (w.out * share * v > V)
			V = w.out * share * v;
		if (w.fwd * big > V)
			V = w.fwd * big;
		total += w.out * share * v + w.fwd * v;
	}
	if (V <= 0)
		return;
	plan_flow(p, V, path->gpu_Bps > 0 ? path->gpu_Bps * V / total : 0);
	for (K = 0; K < x->g.nnodes; K++) {
		const uint32_t *m = group_members(&x->g, K, &n);
		double tmp = 0, v = to_node(x, a, K, &tmp);
		uint32_t r;

		if (K == ka) {
			for (j = 0; j < n && w.local > 0; j++)
				if (m[j] != a)
					algo_seg(x, p, a, m[j], algo_rail(x, a),
						 algo_rail(x, m[j]),
						 w.local *
						 algo_a2a_bytes(x, a, m[j]) / V *
						 inv_eff(x, path, a, m[j]));
			continue;
		}
		r = rail_peer(x, a, K, pos);
		if (w.out > 0)
			algo_seg(x, p, a, r, algo_rail(x, a), algo_rail(x, r),
				 w.out * share * v / V *
				 inv_eff(x, path, a, r));
		for (j = 0; j < n && w.fwd > 0; j++)
			if (m[j] != r)
				algo_seg(x, p, r, m[j], algo_rail(x, r),
					 algo_rail(x, m[j]),
					 w.fwd * algo_a2a_bytes(x, a, m[j]) /
					 V * inv_eff(x, path, r, m[j]));
	}
}

/* The phases of a forward-mode plan, in order, and their count. A
 * chunked in-order kernel across nodes (rounds R >= 1) cannot overlap
 * one round's worth (1/R) of its scale-up stage with the scale-out one:
 * a dispatch forwards its last received chunks after the last of them
 * lands (drain), a combine gathers and pre-reduces its first chunks
 * before the first scale-out send (fill) and reduces the last ones after
 * they land (drain: its own node's rows of them). */
static int forward_parts(const struct algo_ctx *x,
			 const struct coll_path *path, struct fwd_part *w)
{
	double q;

	if (x->g.nnodes < 2 || !(path->rounds >= 1)) {
		w[0] = (struct fwd_part){ 1, 1, 1 };
		return 1;
	}
	q = 1 / path->rounds;
	if (!path->combine) {
		w[0] = (struct fwd_part){ 1, 1, 1 - q };
		w[1] = (struct fwd_part){ 0, 0, q };
		return 2;
	}
	w[0] = (struct fwd_part){ 0, 0, q };
	w[1] = (struct fwd_part){ 1 - q, 1, 1 - q };
	w[2] = (struct fwd_part){ q, 0, 0 };
	return 3;
}

/* Source a's flow in direct mode. */
static void direct_source(struct algo_ctx *x, struct plan *p, uint32_t a,
			  const struct coll_path *path)
{
	double V = 0, total = 0;
	uint32_t b;

	for (b = 0; b < x->g.p; b++)
		if (b != a) {
			double v = algo_a2a_bytes(x, a, b);

			total += v;
			if (v > V)
				V = v;
		}
	if (V <= 0)
		return;
	plan_flow(p, V, path->gpu_Bps > 0 ? path->gpu_Bps * V / total : 0);
	for (b = 0; b < x->g.p; b++)
		if (b != a)
			algo_seg(x, p, a, b, algo_rail(x, a), algo_rail(x, b),
				 algo_a2a_bytes(x, a, b) / V *
				 inv_eff(x, path, a, b));
}

int algo_path_build(const struct topo *t, const struct coll_lib_spec *lib,
		    struct ham_cache *ham, const struct coll_desc *c,
		    struct plan *out, const char **why)
{
	struct algo_ctx x = { .t = t, .lib = lib, .c = c, .ham = ham,
			      .algo = ALGO_P2P, .proto = PROTO_SIMPLE,
			      .inflate = 1 };
	const struct coll_path *path = c->path;
	double latency;
	uint32_t a;
	int rc;

	plan_init(out, ALGO_P2P, PROTO_SIMPLE);
	if (c->op != COLL_ALLTOALL) {
		*why = "a dispatch/combine path moves all-to-all traffic only";
		return 1;
	}
	x.as = &lib->algo[ALGO_P2P];
	rc = group_init(&x.g, t, c->gpus, c->ngpus, why);
	if (rc != 0)
		return rc;
	if (x.g.p > 1) {
		struct fwd_part w[3];
		int k, nparts = path->mode == COLL_PATH_FORWARD ?
				forward_parts(&x, path, w) : 1;

		for (k = 0; k < nparts; k++) {
			algo_phase(&x, out);
			for (a = 0; a < x.g.p; a++) {
				if (path->mode == COLL_PATH_FORWARD)
					forward_source(&x, out, a, path, w[k]);
				else
					direct_source(&x, out, a, path);
			}
		}
		if (path->mode == COLL_PATH_FORWARD)
			latency = path->setup_s + path->hop_scale_up_s +
				  (x.g.nnodes > 1 ? path->hop_scale_out_s : 0);
		else
			latency = path->setup_s +
				  (x.g.nnodes > 1 ? fmax(path->hop_scale_up_s,
							 path->hop_scale_out_s) :
						    path->hop_scale_up_s);
		plan_flow_end(out);
		if (!out->failed && out->nphases > 0)
			out->phases[0].latency_s = latency;
		/* the distinct links a replay holds: a rank's sends to its
		 * 63 peers share its NVLink and NIC links, so 64 flows of ~88
		 * links each are ~5,600 elements over far fewer links */
		plan_finish(out);
	}
	group_release(&x.g);
	return out->failed ? -1 : 0;
}
