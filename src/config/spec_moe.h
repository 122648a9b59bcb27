/*
 * spec_moe.h - what a job does with a Mixture-of-Experts model beyond its
 * parallel degrees: how tokens travel to the experts (an expert-parallel
 * communication path, configs/ep/), how they are routed (balance), and
 * which overlaps the framework runs.
 *
 *   moe:
 *     dispatcher: alltoall | hierarchical | deepep | deepep-ll | hybridep
 *                 | allgather   (a preset of configs/ep/, or a mapping)
 *     shared_expert_overlap: false   # Megatron --moe-shared-expert-overlap
 *     a2a_overlap: false             # --overlap-moe-expert-parallel-comm
 *     delay_wgrad: false             # --delay-wgrad-compute (a2a_overlap)
 *     capacity_factor: 0             # 0: dropless
 *     router_dtype: fp32
 *     dispatch_dtype: bf16           # fp8: DeepEP-style fp8 dispatch
 *     permute_fusion: true
 *     permute_into_dispatcher: false # --moe-permute-fusion-into-hybridep
 *     paged_stash: false             # --moe-paged-stash (mxfp8/nvfp4)
 *     mtp_layers: 0                  # multi-token prediction modules run
 *     routing: {balance: uniform | random | zipf | max_mean,
 *               zipf_exponent, max_mean_ratio,
 *               method: closed_form | draws, draws, seed}
 *
 * An expert-parallel path (kind "ep_comm") is data: whether the host
 * launches a library collective (NCCL/RCCL all-to-all, its algorithm
 * chosen by the library) or the GPU initiates the transfers itself
 * (NVSHMEM/IBGDA-style: no host launch, no proxy thread), how tokens are
 * deduplicated, the SMs its kernels hold, the rate one SM copies at, and
 * its own latencies. Each number has its source in the preset.
 *
 * Depends on schema.h, spec_gpu.h.
 */
#ifndef LLMSIM_CONFIG_SPEC_MOE_H
#define LLMSIM_CONFIG_SPEC_MOE_H

#include <stdint.h>

#include "schema.h"

/* How an expert-parallel path moves tokens. */
enum ep_mode {
	EP_LIBRARY,		/* the collective library's all-to-all(v) */
	EP_HIERARCHICAL,	/* library, intra-node exchange first */
	EP_FORWARD,		/* once per node over scale-out to the same-rail
				 * GPU, then forwarded over scale-up (DeepEP
				 * normal, Hybrid-EP) */
	EP_DIRECT,		/* every GPU writes to every destination GPU
				 * (DeepEP low-latency, pplx) */
	EP_ALLGATHER		/* all-gather tokens, reduce-scatter results
				 * (Megatron allgather dispatcher) */
};

/* What a token is sent once for. */
enum ep_dedup {
	DEDUP_NONE,		/* once per (token, expert): the permuted rows */
	DEDUP_RANK,		/* once per destination GPU */
	DEDUP_NODE		/* once per destination node over scale-out,
				 * then once per GPU inside it */
};

/* What the host waits for before it can issue a dispatch (the sizes of a
 * dropless, variable-size exchange are needed on the CPU). */
enum ep_host_sync {
	EP_SYNC_NONE,		/* static sizes: the host never waits */
	EP_SYNC_COUNTS,		/* the exchange of per-expert token counts
				 * (and their copy to the host) */
	EP_SYNC_DISPATCH	/* the dispatch itself (sizes read after it) */
};

extern const char *const ep_host_sync_names[];

/* The GPUs a path runs on: any (a collective library: NCCL, RCCL) or one
 * vendor's (DeepEP and Hybrid-EP need NVSHMEM and IBGDA on NVIDIA GPUs). */
enum ep_vendor {
	EP_VENDOR_ANY,
	EP_VENDOR_NVIDIA,
	EP_VENDOR_AMD
};

extern const char *const ep_vendor_names[];
extern const char *const ep_mode_names[];
extern const char *const ep_dedup_names[];

struct ep_comm_spec {
	const char *name;		/* preset name */
	int mode;			/* enum ep_mode */
	int dedup;			/* enum ep_dedup */
	int gpu_initiated;		/* transfers issued by the GPU: no host
					 * launch, no proxy thread */
	int64_t sms;			/* SMs its kernels hold; 0 = the collective
					 * library's kernel units */
	double sm_rate_Bps;		/* B/s one SM copies (a GPU's traffic is at
					 * most sms x this); 0 = no bound */
	double fp8_row_cost_s;		/* SM time per fp8 row for its scales */
	double combine_row_cost_s;	/* SM time per combined row for its
					 * reduction, beyond its bytes */
	int64_t fp8_scale_block;	/* elements of an fp8 row sharing one
					 * scale; 0 = no per-row scales */
	double fp8_scale_B;		/* B per fp8 scale (fp32: 4) */
	double scale_up_eff;		/* share of scale-up's sustained rate */
	double scale_out_eff;		/* share of scale-out's sustained rate */
	double busy_rate;		/* rate its kernels progress at while
					 * compute runs on their GPU, (0, 1] */
	double busy_compute_share;	/* with busy_rate < 1: share of their
					 * SM share that compute still loses */
	double setup_s;			/* s per call before data moves (launch,
					 * layout notify, barrier) */
	double hop_scale_up_s;		/* s, latency of a scale-up transfer */
	double hop_scale_out_s;		/* s, latency of a scale-out transfer */
	int64_t scale_up_max_ranks;	/* most GPUs of one NVLink domain its
					 * kernels span; 0 = any */
	int64_t buffer_tokens_up;	/* buffer tokens per channel, scale-up peer */
	int64_t buffer_tokens_out;	/* per channel and scale-out node, x 2 */
	double buffer_token_meta_B;	/* B per token slot beyond the hidden */
	double bytes_per_token_extra;	/* B per token beyond the hidden vector
					 * (source info, scales): fixed */
	double bytes_per_topk_B;	/* B per token and selected expert (an
					 * index and a weight: DeepEP 8 + 4) */
	double probs_per_domain_expert_B; /* B a dispatched row carries per
					 * expert of the NVLink domain (dense
					 * fp32 probabilities: 4) */
	double topk_weight_grad_B;	/* B the backward of the dispatch carries
					 * per top-k weight gradient of a row */
	int host_sync;			/* enum ep_host_sync, dropless */
	int vendor;			/* enum ep_vendor: GPUs it runs on */
	int fp32_probs;			/* the routing probabilities travel, and
					 * reach the experts, in fp32 */
	int map_gather;			/* its count exchange all-gathers every
					 * rank's [tokens, experts] bool routing
					 * map, not E per-expert counts */
	int quant_pad;			/* its permute pads each local expert's
					 * rows to the quantization alignment */
	int64_t dispatch_chunk_tokens;	/* tokens per chunk of a chunked
					 * in-order dispatch kernel (blocks
					 * take a source rank's chunks in
					 * turn); 0 = streamed */
	int64_t combine_chunk_tokens;	/* the same for its combine kernel */
	int stage_input;		/* across nodes its dispatch first copies
					 * its input into its registered RDMA
					 * buffer (a device-to-device copy) */
	int64_t preprocess_ops;		/* Megatron-Core's small PyTorch ops
					 * around this dispatcher's call; 0:
					 * the framework's host.dispatch_ops
					 * (the alltoall dispatcher's) */
	double dispatch_call_host_s;	/* s, host time of a dispatch call
					 * beyond its metadata preprocessing
					 * (reference CPU); 0: a PyTorch op */
	int dtoh_after_graph;		/* with moe_preprocess CUDA-graphed,
					 * the counts' copies to the host are
					 * issued after the graph's replay */
	int probs_call;			/* the routing probabilities travel in
					 * their own all-to-all after the
					 * tokens', and their gradients back */
	int permute_in_kernel;		/* its dispatch and combine kernels can
					 * write and read the local experts'
					 * permuted rows themselves (a job's
					 * moe.permute_into_dispatcher) */
	int rank_capacity;		/* it takes a static receive budget a
					 * rank (Megatron-Core moe_expert_rank_
					 * capacity_factor), which a job's
					 * moe.paged_stash needs */
};

extern const struct schema ep_comm_schema;

/* GPUs of one scale-up domain an EP group of `ranks` GPUs puts there,
 * `per_domain` of them filling a domain in order: min(ranks, per_domain).
 * Whether e's kernels span that many (scale_up_max_ranks 0: any): 1 yes,
 * 0 no. */
int64_t ep_comm_domain_ranks(int64_t ranks, int64_t per_domain);
int ep_comm_spans_domain(const struct ep_comm_spec *e, int64_t ranks,
			 int64_t per_domain);

enum routing_balance {
	ROUTE_UNIFORM,		/* every expert gets exactly T k / E tokens */
	ROUTE_RANDOM,		/* multinomial, every expert equally likely */
	ROUTE_ZIPF,		/* expert popularity ~ 1 / rank^s */
	ROUTE_MAX_MEAN,		/* a measured busiest-rank / mean load ratio */
	ROUTE_FORCED,		/* the framework's force-balanced gate: training
				 * under balanced_gate random routes as
				 * ROUTE_RANDOM, else as ROUTE_UNIFORM
				 * (job_routing_balance) */
	ROUTE_EPLB		/* multinomial over the slots, every slot (and
				 * so every EP rank) equally likely: EPLB
				 * placed from the served workload's own
				 * statistics (route.c) */
};

enum routing_method {
	ROUTE_CLOSED_FORM,	/* expected maximum from a Gaussian approximation */
	ROUTE_DRAWS		/* mean over seeded multinomial draws */
};

extern const char *const routing_balance_names[];
extern const char *const routing_method_names[];

struct routing_spec {
	int balance;			/* enum routing_balance */
	double zipf_exponent;		/* s of zipf */
	double max_mean_ratio;		/* max_mean: busiest EP rank / mean */
	int method;			/* enum routing_method */
	int64_t draws;			/* draws for method draws */
	int64_t seed;			/* GSL seed for draws and placement */
};

struct moe_job_spec {
	const struct ep_comm_spec *dispatcher;	/* token dispatch/combine path */
	int shared_expert_overlap;	/* shared experts beside dispatch/combine */
	int a2a_overlap;		/* 1F1B: another microbatch's compute hides
					 * dispatch and combine */
	int delay_wgrad;		/* a2a_overlap's weight gradients after the
					 * input gradients (train_wgrad.c) */
	double capacity_factor;		/* tokens per expert capped at this x
					 * mean (dropped beyond); 0 = dropless */
	int pad_to_capacity;		/* every expert padded to its capacity:
					 * static sizes, no host sync */
	int router_dtype;		/* enum dtype of the router GEMM */
	int dispatch_dtype;		/* enum dtype tokens travel in; -1 = the
					 * activations' */
	int permute_fusion;		/* permute/unpermute as fused kernels */
	int permute_into_dispatcher;	/* the dispatcher's kernels permute
					 * and unpermute (needs its
					 * permute_in_kernel) */
	int router_padding;		/* the routing map padded so every expert's
					 * count is aligned for quantization */
	int paged_stash;		/* the fused grouped MLP's saved tensors
					 * copied to a paged buffer after its
					 * forward and back before its backward
					 * (moe.c stash_op) */
	int64_t redundant_experts;	/* inference: expert slots beyond the
					 * routed experts, replicas EPLB places
					 * (route.c); ep divides the slots */
	int64_t mtp_layers;		/* multi-token-prediction modules run */
	int mtp_repeated;		/* ... passes of one module's weights
					 * (Megatron-Core mtp_use_repeated_layer) */
	struct routing_spec routing;
};

extern const struct schema moe_job_schema;

#endif
