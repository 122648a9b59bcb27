/*
 * ep.h - expert-parallel token dispatch and combine as an all-to-all:
 * the bytes one GPU sends for T tokens with rank and node deduplication,
 * the row a token travels as, and the dispatcher's path (base/coll.h
 * struct coll_path). Used by the step builder (route.c, train.c) and by
 * `llmsim collective --op dispatch|combine`. The mathematics is at the
 * top of ep.c.
 *
 * Depends on base/coll.h and config/spec_moe.h.
 */
#ifndef LLMSIM_MODELS_EP_H
#define LLMSIM_MODELS_EP_H

#include <stdint.h>

#include "base/coll.h"
#include "config/spec_moe.h"
#include "network/net.h"

struct diag;

/* How tokens choose experts: E experts, k per token, optionally first
 * topk_group of n_group equal groups (n_group 0: no groups); or, with
 * round_robin, token t takes experts k t .. k t + k - 1 mod E (groups
 * ignored: AutoModel's FakeBalancedGate). */
struct ep_routing {
	double experts, topk, n_group, topk_group;
	int round_robin;
};

/*
 * Round-robin routing: the mean over tokens of the distinct blocks of g
 * consecutive experts (a GPU's, a node's) that a token's k consecutive
 * experts (mod E) fall in. Token t starts at k t mod E, which runs over
 * the multiples of d = gcd(k, E) equally often; a start s covers the
 * blocks of experts s .. s + k - 1 mod E, at most ceil(E / g) of them
 * (the last block short when g does not divide E).
 */
double ep_hit_round_robin(double E, double k, double g);

/*
 * Probability that a token whose k distinct experts are drawn uniformly
 * from E picks at least one of g given experts: 1 - C(E-g, k) / C(E, k).
 */
double ep_hit_prob(double E, double k, double g);

/*
 * The same when a token first picks topk_group of n_group equal groups
 * (uniformly) and then its k experts among those groups' experts, for g
 * experts inside one group (DeepSeek's node-limited routing when groups
 * are nodes): (topk_group / n_group) (1 - C(m-g, k) / C(m, k)), m =
 * topk_group E / n_group.
 */
double ep_hit_prob_grouped(double E, double k, double g, double n_group,
			      double topk_group);

/*
 * Probability that a token hits g given experts (g within one group, or
 * whole groups: g a multiple of E / n_group) when it first picks
 * topk_group of n_group equal groups; ep_hit_prob when there are no
 * groups (n_group 0) or every group may be picked (topk_group >= n_group).
 */
double ep_hit(double E, double k, double n_group, double topk_group,
		 double g);

/* One GPU's dispatch traffic for an even routing. */
struct ep_traffic {
	double ranks_hit;	/* expected distinct destination GPUs of a token
				 * (the sender's own included) */
	double nodes_hit;	/* expected distinct destination nodes */
	double send_B;		/* B one GPU sends: the coll.h all-to-all size */
	double logical_B;	/* B by DeepEP's count: tokens x nodes hit x row
				 * across nodes, tokens x ranks hit x row in
				 * one node, tokens x k x row without dedup */
	double node_share;	/* coll_path.node_share; 1 = none */
};

/*
 * B a token's row takes on path e: h elements of dtype (enum dtype; fp8
 * with e's scales, fp8_scale_size per fp8_scale_block elements, none
 * when e is NULL or has none; MX formats with their block scales) plus
 * extra_B.
 */
double ep_row_bytes(const struct ep_comm_spec *e, double hidden, int dtype,
		    double extra_B);

/*
 * B a dispatched row carries beyond its hidden vector on path e, for E
 * experts, top-k of them a token, over an EP group of `ranks` GPUs, m
 * per NVLink domain: bytes_per_token_extra, bytes_per_topk for each of
 * the k (DeepEP's int64 index and fp32 weight), and
 * probs_per_domain_expert for each of the domain's E / ranks x min(m,
 * ranks) experts (Hybrid-EP's dense fp32 probabilities). 0 when e is
 * NULL.
 */
double ep_row_extra_B(const struct ep_comm_spec *e, double experts,
		      double topk, double ranks, double m);

/* Of that, the domain's probabilities alone (probs_per_domain_expert x E
 * / ranks x min(m, ranks)): what Hybrid-EP's backward combine reduces
 * with each row. 0 when e is NULL or carries none. */
double ep_row_probs_B(const struct ep_comm_spec *e, double experts,
		      double ranks, double m);

/* B a row of the backward of the dispatch (a combine) carries beyond
 * its 16-bit hidden vector: topk_weight_grad per top-k selection
 * (DeepEP: Megatron's FusedDispatch.backward passes the weights'
 * gradients to Buffer.combine as topk_weights, num_topk fp32 a row) and
 * the domain's probability gradients (Hybrid-EP, ep_row_probs_B). */
double ep_row_grads_B(const struct ep_comm_spec *e, double experts,
		      double topk, double ranks, double m);

/* The rows a path's kernel moves (ep_coll_path's kind, bits). */
enum {
	EP_ROW_FP8 = 1,		/* fp8 rows: fp8_row_cost more a row */
	EP_ROW_COMBINE = 2,	/* a combine kernel: combine_row_cost more */
};

/*
 * Traffic of T tokens per GPU over an EP group of `ranks` GPUs, m of
 * them per node (ranks fill nodes in order), a row being row_B, with
 * deduplication dedup (enum ep_dedup).
 */
void ep_traffic(const struct ep_routing *r, double ranks, double m,
		double tokens, double row_B, int dedup, struct ep_traffic *out);

/*
 * The dispatcher's path for rows of row_B bytes, kind EP_ROW_* bits (fp8:
 * with block scales; combine: with its reduction): fills *path and returns
 * it for a GPU-initiated dispatcher (forward, direct), else NULL (the
 * library's all-to-all); *algo is the algorithm to force (hierarchical)
 * or -1. sms overrides the preset's SM count when > 0.
 */
const struct coll_path *ep_coll_path(const struct ep_comm_spec *e,
				     double node_share, double row_B, int kind,
				     int64_t sms, struct coll_path *path,
				     int *algo);

/*
 * Chunk rounds of a chunked in-order kernel (coll_path.rounds): a source
 * rank's ceil(tokens / chunk) chunks dealt to its n blocks in turn, so
 * each block makes ceil(chunks / n) rounds; n = sms when > 0, else the
 * preset's. The chunk is dispatch_chunk_tokens, or combine_chunk_tokens
 * for a combine kernel; 0 when it is 0 (streamed) or nothing is known.
 */
double ep_chunk_rounds(const struct ep_comm_spec *e, double tokens,
		       int64_t sms, int combine);

/*
 * Bytes of the dispatcher's all-to-all buffers on one GPU (DeepEP's
 * Config::get_nvl/rdma_buffer_size_hint): sms/2 channels, each holding
 * buffer_tokens_scale_up token slots per scale-up peer (min(ep, m) of
 * them) and, when the group spans nodes, 2 x buffer_tokens_scale_out per
 * peer node (ep / m of them); a slot is hidden_B + buffer_token_meta.
 * 0 for a library dispatcher.
 */
double ep_buffer_bytes(const struct ep_comm_spec *e, double hidden_B,
		       double ep, double m);

/* Whether the n GPUs (global ids, gpn a node) span more than one node:
 * the hierarchical all-to-all has an inter-node step only then. */
int ep_spans_nodes(const uint32_t *gpus, uint32_t n, int64_t gpn);

/* One dispatch or combine on its own (`llmsim collective --op dispatch`,
 * validation against DeepEP's tables). */
struct ep_call {
	const uint32_t *gpus;		/* global GPU ids of the EP group */
	uint32_t ranks;			/* its size */
	double gpus_per_node;		/* the system's */
	double tokens;			/* per GPU */
	double hidden;
	struct ep_routing routing;	/* n_group < 0: one group per node */
	int dtype;			/* enum dtype of the rows */
	int combine;			/* combine: rows without the extras */
	int64_t sms;			/* 0: the dispatcher's */
	int algo, proto;		/* overrides; -1: the dispatcher's */
};

struct ep_call_result {
	struct ep_traffic traffic;
	double logical_B;		/* DeepEP's count, rows without extras */
	struct net_coll_result r;	/* time; algbw = logical_B / time,
					 * busbw = what leaves a GPU / time */
};

/* Time c over dispatcher e on n's idle fabric. 0, or -1 after reporting. */
int ep_call_time(struct net *n, const struct ep_comm_spec *e,
		 const struct ep_call *c, struct ep_call_result *out,
		 struct diag *d);

#endif
