/*
 * ep.c - expert dispatch traffic and path.
 *
 * A token picks k of E experts (ep_hit: uniformly, or within
 * topk_group of n_group groups first); an EP group of p GPUs holds L =
 * E / p experts each, m GPUs per node, N = p / m nodes. The probability
 * that a token needs GPU r is P_rank = ep_hit(L experts), node K
 * P_node = ep_hit(m L experts), so a token goes to p P_rank GPUs and
 * N P_node nodes on average. One GPU's T tokens, a row being B_r bytes:
 *
 *   dedup none   T k B_r sent (one row per chosen expert; Megatron's
 *                all-to-all, DeepEP low-latency)
 *   dedup rank   T p P_rank B_r (one row per destination GPU)
 *   dedup node   the same at GPU level; across nodes a token crosses the
 *                scale-out network once per node, so of the GPU-level
 *                bytes to a node's m GPUs the share P_node / (m P_rank)
 *                goes over it (coll_path.node_share), the rest is
 *                forwarded over scale-up
 *
 * Round-robin routing (ep_routing.round_robin, AutoModel's
 * FakeBalancedGate: indices = arange(T k).view(T, k) % E) gives token t
 * the k consecutive experts from k t mod E: it reaches the blocks of L
 * (GPU) or m L (node) experts that interval covers
 * (ep_hit_round_robin), e.g. one GPU when k divides L; every GPU's tokens
 * still spread evenly over the group.
 *
 * DeepEP's benchmarks count a "logical" bandwidth: tokens x nodes hit x
 * row across nodes (RDMA), tokens x GPUs hit x row within a node (NVL),
 * tokens x selections x row for the low-latency kernels; the sender's own
 * node and GPU included (logical_B).
 *
 * A row: h elements of the dispatch dtype, fp8 with the path's scale of
 * s bytes per block of b elements (1 + s/b B per element; the presets
 * give DeepEP's and Transformer Engine's 1x128 cast, b = 128, s = 4 B
 * fp32: fp8_scale_block, fp8_scale_size), MX formats with their E8M0
 * scale per 32 (dtype_bytes), plus the path's extra bytes: DeepEP's top-k
 * indices and weights (bytes_per_topk each), or Hybrid-EP's dense fp32
 * probability vector over every expert of the destination's NVLink
 * domain, 4 B x E / p x min(m, p) (probs_per_domain_expert; its dispatch
 * kernel's S2G warps store (NUM_OF_EXPERTS_PER_RANK x
 * NUM_OF_RANKS_PER_NODE) floats with each token row, DeepEP @ 94a9f8f
 * (hybrid-ep) csrc/hybrid_ep/backend/hybrid_ep_backend.cuh): 256 B a row
 * at 8 ranks of 8 experts, 1152 B at 36, so the row grows with the
 * domain.
 *
 * A GPU-initiated path's kernels run on n SMs; each copies r bytes per
 * second (sm_rate), and an fp8 row costs it c more (fp8_row_cost: the
 * block scales, one per fp8_scale_block elements, gathered from their own,
 * token-strided tensor), so the GPU moves at most n r (16-bit rows) or
 * n B / (c + B / r) (fp8 rows of B bytes) (coll_path.gpu_Bps).
 *
 * A combine kernel is not a dispatch run backwards: its receiver reads
 * every row sent back for a token (one from each GPU that held one of its
 * experts) and sums them in fp32 before it stores the token (DeepEP
 * intranode.cu combine: ld_nc_global of each source's row, waiting for
 * all of them; Hybrid-EP's intra-node red warp group, hybrid_ep_backend.cuh,
 * accumulating each source's bf16x2 into fp32). That reduction costs the
 * SMs combine_row_cost per row beyond its bytes, so a combine moves n B /
 * (w + B / r) (EP_ROW_COMBINE). Training runs a combine kernel twice a
 * layer: the forward combine and the backward of the dispatch; the
 * backward of the combine is a dispatch kernel. Hybrid-EP's backward
 * combine (combine_impl<BACKWARD_COMBINE>) also TMA-loads each row's
 * fp32 probability gradients over the domain's experts with its hidden
 * vector (intra_node_G2S_warp_group_device_function, remote_expert_input_
 * prob) and reduces them: ep_row_probs_B more a row. DeepEP's carries
 * the top-k weights' gradients, num_topk fp32 a row (topk_weight_grad;
 * Megatron's FusedDispatch.backward passes them to Buffer.combine).
 */
#include "ep.h"

#include <math.h>

#include "config/spec_collectives.h"
#include "config/spec_gpu.h"

/* log C(n, r), 0 for r <= 0, -inf for r > n. */
static double log_choose(double n, double r)
{
	if (r <= 0)
		return 0;
	if (r > n)
		return -INFINITY;
	return lgamma(n + 1) - lgamma(r + 1) - lgamma(n - r + 1);
}

double ep_hit_prob(double E, double k, double g)
{
	if (g <= 0)
		return 0;
	if (g >= E)
		return 1;
	return 1 - exp(log_choose(E - g, k) - log_choose(E, k));
}

double ep_hit_prob_grouped(double E, double k, double g, double n_group,
			      double topk_group)
{
	double m = topk_group * E / n_group;

	return topk_group / n_group * ep_hit_prob(m, k, g);
}

double ep_hit(double E, double k, double ng, double tg, double g)
{
	double ge = ng > 0 ? E / ng : 0, q, miss = 0, j, mm;

	if (ng <= 0 || tg <= 0 || tg >= ng)
		return ep_hit_prob(E, k, g);
	if (g <= ge)
		return ep_hit_prob_grouped(E, k, g, ng, tg);
	q = floor(g / ge);	/* whole groups on the node */
	mm = tg * ge;
	for (j = 0; j <= q && j <= tg; j++) {
		double pj = exp(log_choose(q, j) + log_choose(ng - q, tg - j) -
				log_choose(ng, tg));

		if (isfinite(pj))
			miss += pj * (1 - ep_hit_prob(mm, k, j * ge));
	}
	return 1 - miss;
}

double ep_hit_round_robin(double E, double k, double g)
{
	int64_t e = (int64_t)E, kk = (int64_t)k, gg = (int64_t)g;
	int64_t d = e, b = kk, s, blocks, sum = 0, n = 0;

	if (e < 1 || kk < 1 || gg < 1)
		return 0;
	blocks = (e + gg - 1) / gg;
	if (kk >= e)
		return (double)blocks;
	while (b) {		/* d = gcd(k, E) */
		int64_t t = d % b;

		d = b;
		b = t;
	}
	/* start s covers s .. s + k - 1 (mod E): the blocks from s's to
	 * the last one's, or, wrapping, from s's to the last block and
	 * from block 0 to the end's (one run fewer when there is one
	 * block); runs that meet or pass block s / g have covered every
	 * block. O(E / d), not O(E k / d): k is at most E (10^6). */
	for (s = 0; s < e; s += d, n++) {
		int64_t end = s + kk - 1, c;

		if (end < e)
			c = end / gg - s / gg + 1;
		else
			c = (e - 1) / gg - s / gg + 1 + (end - e) / gg + 1 -
			    (blocks == 1);
		sum += c < blocks ? c : blocks;
	}
	return (double)sum / (double)n;
}

double ep_row_bytes(const struct ep_comm_spec *e, double hidden, int dtype,
		    double extra_B)
{
	double elem_B = dtype_bytes((enum dtype)dtype);

	if (dtype == DTYPE_FP8 && e && e->fp8_scale_block > 0)
		elem_B += e->fp8_scale_B / (double)e->fp8_scale_block;
	return hidden * elem_B + extra_B;
}

double ep_row_probs_B(const struct ep_comm_spec *e, double experts,
		      double ranks, double m)
{
	if (!e || !(ranks > 0) || !(e->probs_per_domain_expert_B > 0))
		return 0;
	return e->probs_per_domain_expert_B * experts / ranks *
	       fmin(fmax(m, 1), ranks);
}

double ep_row_grads_B(const struct ep_comm_spec *e, double experts,
		      double topk, double ranks, double m)
{
	if (!e)
		return 0;
	return e->topk_weight_grad_B * topk +
	       ep_row_probs_B(e, experts, ranks, m);
}

double ep_row_extra_B(const struct ep_comm_spec *e, double experts,
		      double topk, double ranks, double m)
{
	if (!e)
		return 0;
	return e->bytes_per_token_extra + e->bytes_per_topk_B * topk +
	       ep_row_probs_B(e, experts, ranks, m);
}

void ep_traffic(const struct ep_routing *r, double ranks, double m,
		double tokens, double row_B, int dedup, struct ep_traffic *out)
{
	double L = r->experts / ranks, nodes, p_rank, p_node;

	m = fmin(fmax(m, 1), ranks);
	nodes = ceil(ranks / m);
	if (r->round_robin) {
		p_rank = ep_hit_round_robin(r->experts, r->topk, L) / ranks;
		p_node = ep_hit_round_robin(r->experts, r->topk, L * m) /
			 nodes;
	} else {
		p_rank = ep_hit(r->experts, r->topk, r->n_group,
				r->topk_group, L);
		p_node = ep_hit(r->experts, r->topk, r->n_group,
				r->topk_group, L * m);
	}
	out->ranks_hit = ranks * p_rank;
	out->nodes_hit = nodes * p_node;
	out->node_share = 1;
	if (dedup == DEDUP_NONE) {
		out->send_B = tokens * r->topk * row_B;
		out->logical_B = out->send_B;
		return;
	}
	out->send_B = tokens * out->ranks_hit * row_B;
	out->logical_B = nodes > 1 ? tokens * out->nodes_hit * row_B :
				     out->send_B;
	if (dedup == DEDUP_NODE && m > 1 && p_rank > 0)
		out->node_share = fmin(p_node / (m * p_rank), 1);
}

const struct coll_path *ep_coll_path(const struct ep_comm_spec *e,
				     double node_share, double row_B, int kind,
				     int64_t sms, struct coll_path *path,
				     int *algo)
{
	double n = (double)(sms > 0 ? sms : e ? e->sms : 0), per_sm = 0;
	double row_s;

	*algo = -1;
	if (!e)
		return NULL;
	if (e->mode == EP_HIERARCHICAL)
		*algo = ALGO_HIER;
	if (e->mode != EP_FORWARD && e->mode != EP_DIRECT)
		return NULL;
	row_s = (kind & EP_ROW_FP8 ? e->fp8_row_cost_s : 0) +
		(kind & EP_ROW_COMBINE ? e->combine_row_cost_s : 0);
	if (e->sm_rate_Bps > 0 && row_B > 0)
		per_sm = row_B / (row_s + row_B / e->sm_rate_Bps);
	*path = (struct coll_path){
		.mode = e->mode == EP_FORWARD ? COLL_PATH_FORWARD :
						COLL_PATH_DIRECT,
		.setup_s = e->setup_s, .hop_scale_up_s = e->hop_scale_up_s,
		.hop_scale_out_s = e->hop_scale_out_s,
		.gpu_Bps = n * per_sm, .eff_scale_up = e->scale_up_eff,
		.eff_scale_out = e->scale_out_eff,
		.node_share = node_share, .name = e->name,
		.combine = (kind & EP_ROW_COMBINE) != 0,
	};
	return path;
}

double ep_chunk_rounds(const struct ep_comm_spec *e, double tokens,
		       int64_t sms, int combine)
{
	double chunk, n;

	if (!e)
		return 0;
	chunk = (double)(combine ? e->combine_chunk_tokens :
				   e->dispatch_chunk_tokens);
	n = (double)(sms > 0 ? sms : e->sms);
	if (!(chunk > 0) || !(n > 0) || !(tokens > 0))
		return 0;
	return ceil(ceil(tokens / chunk) / n);
}

int ep_spans_nodes(const uint32_t *gpus, uint32_t n, int64_t gpn)
{
	uint32_t i;

	for (i = 1; i < n && gpn > 0; i++)
		if (gpus[i] / (uint64_t)gpn != gpus[0] / (uint64_t)gpn)
			return 1;
	return 0;
}

double ep_buffer_bytes(const struct ep_comm_spec *e, double hidden_B,
		       double ep, double m)
{
	double ch, up, nodes, slot;

	if (!e || (e->mode != EP_FORWARD && e->mode != EP_DIRECT))
		return 0;
	ch = (double)e->sms / 2;
	up = fmin(ep, fmax(m, 1));
	nodes = ep > m ? ceil(ep / m) : 0;
	slot = hidden_B + e->buffer_token_meta_B;
	return ch * slot * (up * (double)e->buffer_tokens_up +
			    2 * nodes * (double)e->buffer_tokens_out);
}

int ep_call_time(struct net *n, const struct ep_comm_spec *e,
		 const struct ep_call *c, struct ep_call_result *out,
		 struct diag *d)
{
	double p = (double)c->ranks, m = c->gpus_per_node;
	struct ep_routing r = c->routing;
	double extra = c->combine ? 0 : ep_row_extra_B(e, c->routing.experts,
							 c->routing.topk, p, m);
	double row_B = ep_row_bytes(e, c->hidden, c->dtype, extra);
	struct coll_path path;
	struct coll_desc cd = { .op = COLL_ALLTOALL, .gpus = c->gpus,
				.ngpus = c->ranks, .proto = c->proto,
				.replicas = 1 };
	int algo;

	if (r.n_group < 0)
		r.n_group = ceil(p / fmin(m, p));
	ep_traffic(&r, p, m, c->tokens, row_B, e->dedup, &out->traffic);
	cd.bytes = out->traffic.send_B;
	cd.path = ep_coll_path(e, out->traffic.node_share, row_B,
			       (c->dtype == DTYPE_FP8 ? EP_ROW_FP8 : 0) |
			       (c->combine ? EP_ROW_COMBINE : 0), c->sms,
			       &path, &algo);
	if (cd.path)
		path.rounds = ep_chunk_rounds(e, c->tokens, c->sms, c->combine);
	if (!ep_spans_nodes(c->gpus, c->ranks, (int64_t)m))
		algo = -1;	/* hierarchical inside a node: plain */
	cd.algo = c->algo >= 0 ? c->algo : algo;
	if (net_collective_time(n, &cd, &out->r, d) != 0)
		return -1;
	out->logical_B = out->traffic.logical_B * (row_B - extra) / row_B;
	out->r.algbw_Bps = out->logical_B / out->r.time_s;
	out->r.busbw_Bps = out->traffic.send_B * (p - 1) / p / out->r.time_s;
	if (cd.path)
		out->r.algorithm = e->name;
	return 0;
}
