/*
 * spec_moe.c - the expert-parallel path kind and the job's moe section.
 */
#include "spec_moe.h"

#include <stddef.h>

#include "cnode.h"
#include "base/diag.h"
#include "spec_gpu.h"

const char *const ep_mode_names[] = {
	"library", "hierarchical", "forward", "direct", "allgather", NULL,
};
const char *const ep_dedup_names[] = {"none", "rank", "node", NULL};
const char *const ep_host_sync_names[] = {"none", "counts", "dispatch", NULL};
const char *const ep_vendor_names[] = {"any", "nvidia", "amd", NULL};
const char *const routing_balance_names[] = {
	"uniform", "random", "zipf", "max_mean", "forced", "eplb", NULL,
};
const char *const routing_method_names[] = {"closed_form", "draws", NULL};

#define EOFF(m) offsetof(struct ep_comm_spec, m)

static const struct schema_field ep_fields[] = {
	{ .key = "name", .type = ST_STRING, .offset = EOFF(name),
	  .flags = SF_OPTIONAL, .help = "preset name" },
	{ .key = "mode", .type = ST_ENUM, .offset = EOFF(mode),
	  .values = ep_mode_names, .flags = SF_REQUIRED,
	  .help = "library (the collective library's all-to-all), hierarchical, "
		  "forward (once per node, then scale-up), direct (every GPU "
		  "to every GPU), allgather" },
	{ .key = "dedup", .type = ST_ENUM, .offset = EOFF(dedup),
	  .values = ep_dedup_names, .def = "none",
	  .help = "a token is sent once per (token, expert), per GPU, or per node" },
	{ .key = "gpu_initiated", .type = ST_BOOL, .offset = EOFF(gpu_initiated),
	  .def = "false",
	  .help = "the GPU issues the transfers (NVSHMEM/IBGDA): no host launch, "
		  "no proxy thread, this path's own latencies" },
	{ .key = "sms", .type = ST_INT, .offset = EOFF(sms), .def = "0",
	  .min = 0, .max = 1024,
	  .help = "SMs/CUs its kernels hold (0: the collective library's)" },
	/* 0 (none), or at least 1 GB/s: DeepEP's SMs copy 18.5 GB/s each
	 * (deepep.yaml, measured); an SM moving one byte a clock at 1 GHz
	 * already makes 1 GB/s, so less is a unit slip (1 MB/s priced a
	 * 4096-token dispatch at 13.7 s). */
	{ .key = "sm_rate", .type = ST_BANDWIDTH, .offset = EOFF(sm_rate_Bps),
	  .def = "0 GB/s", .min = 1e9, .max = 1e13, .flags = SF_ZERO_OFF,
	  .help = "bytes one SM copies per second (bounds a GPU at sms x rate)" },
	{ .key = "fp8_row_cost", .type = ST_TIME, .offset = EOFF(fp8_row_cost_s),
	  .def = "0 us", .max = 1e-3,
	  .help = "SM time per fp8 row for its block scales beyond its bytes, "
		  "per SM: with sm_rate a GPU's kernels move fp8 rows of B "
		  "bytes at sms B / (fp8_row_cost + B / sm_rate)" },
	{ .key = "combine_row_cost", .type = ST_TIME,
	  .offset = EOFF(combine_row_cost_s), .def = "0 us", .max = 1e-3,
	  .help = "SM time per row a combine kernel reduces (reads every "
		  "source's row of a token, sums in fp32) beyond its bytes, "
		  "per SM: a combine moves rows of B bytes at sms B / "
		  "(combine_row_cost + B / sm_rate)" },
	{ .key = "fp8_scale_block", .type = ST_INT,
	  .offset = EOFF(fp8_scale_block), .def = "0", .min = 0, .max = 1e6,
	  .help = "fp8 dispatch: elements of a token's row sharing one scale "
		  "sent with it (DeepEP's 1x128 cast: 128; 0: no per-row "
		  "scales)" },
	{ .key = "fp8_scale_size", .type = ST_BYTES,
	  .offset = EOFF(fp8_scale_B), .def = "0 B", .max = 64,
	  .help = "fp8 dispatch: bytes of one such scale (fp32: 4 B)" },
	{ .key = "scale_up_efficiency", .type = ST_NUM,
	  .offset = EOFF(scale_up_eff), .def = "1", .min = SCHEMA_EFF_MIN,
	  .max = 1,
	  .help = "share of the scale-up links' sustained rate the kernels "
		  "reach" },
	{ .key = "scale_out_efficiency", .type = ST_NUM,
	  .offset = EOFF(scale_out_eff), .def = "1", .min = SCHEMA_EFF_MIN,
	  .max = 1,
	  .help = "share of the scale-out links' sustained rate the kernels "
		  "reach" },
	{ .key = "busy_rate", .type = ST_NUM, .offset = EOFF(busy_rate),
	  .def = "1", .min = SCHEMA_EFF_MIN, .max = 1,
	  .help = "rate at which its dispatch/combine kernels progress while "
		  "a compute kernel runs on their GPU (1: unaffected; the "
		  "call is stretched by the work it lost)" },
	{ .key = "busy_compute_share", .type = ST_NUM,
	  .offset = EOFF(busy_compute_share), .def = "1", .min = 0, .max = 1,
	  .help = "with busy_rate below 1: share of its kernels' SM share the "
		  "compute beside them still loses (1: all, as without "
		  "busy_rate; 0: the compute keeps full speed and the kernels "
		  "take what it leaves)" },
	{ .key = "setup", .type = ST_TIME, .offset = EOFF(setup_s), .def = "0 us",
	  .max = 1,
	  .help = "time per call before data moves (launch, notify, barrier)" },
	{ .key = "hop_scale_up", .type = ST_TIME, .offset = EOFF(hop_scale_up_s),
	  .def = "0 us", .max = 1, .help = "latency of a scale-up transfer" },
	{ .key = "hop_scale_out", .type = ST_TIME, .offset = EOFF(hop_scale_out_s),
	  .def = "0 us", .max = 1, .help = "latency of a scale-out transfer" },
	{ .key = "scale_up_max_ranks", .type = ST_INT,
	  .offset = EOFF(scale_up_max_ranks), .def = "0", .min = 0, .max = 1e6,
	  .help = "most GPUs of one scale-up (NVLink) domain its kernels span; "
		  "an EP group with more there is refused (0 = any)" },
	{ .key = "buffer_tokens_scale_up", .type = ST_INT,
	  .offset = EOFF(buffer_tokens_up), .def = "0", .min = 0, .max = 1e7,
	  .help = "receive-buffer tokens per channel (sms / 2 of them) and "
		  "scale-up peer (the all-to-all buffer; 0 = none)" },
	{ .key = "buffer_tokens_scale_out", .type = ST_INT,
	  .offset = EOFF(buffer_tokens_out), .def = "0", .min = 0, .max = 1e7,
	  .help = "receive-buffer tokens per channel and scale-out peer node, "
		  "double-buffered (send and receive)" },
	{ .key = "buffer_token_meta", .type = ST_BYTES,
	  .offset = EOFF(buffer_token_meta_B), .def = "0 B", .max = 1e6,
	  .help = "buffer bytes a token slot holds beyond its hidden vector "
		  "(room for the largest top-k and scales)" },
	{ .key = "bytes_per_token_extra", .type = ST_BYTES,
	  .offset = EOFF(bytes_per_token_extra), .def = "0 B", .max = 1e6,
	  .help = "bytes a token carries beyond its hidden vector (top-k "
		  "indices and weights, scales)" },
	{ .key = "probs_per_domain_expert", .type = ST_BYTES,
	  .offset = EOFF(probs_per_domain_expert_B), .def = "0 B", .max = 64,
	  .help = "bytes a dispatched row carries per expert of its NVLink "
		  "domain beyond bytes_per_token_extra (a dense fp32 "
		  "probability vector over the domain's experts: 4 B; 0: "
		  "none)" },
	{ .key = "topk_weight_grad", .type = ST_BYTES,
	  .offset = EOFF(topk_weight_grad_B), .def = "0 B", .max = 64,
	  .help = "bytes the backward of the dispatch (a combine) carries "
		  "with a row per top-k selection of its token: the top-k "
		  "weights' gradients (fp32: 4 B; 0: none)" },
	{ .key = "host_sync", .type = ST_ENUM, .offset = EOFF(host_sync),
	  .values = ep_host_sync_names, .def = "none",
	  .help = "dropless: what the host waits for before it issues the "
		  "dispatch (none; counts: the exchange of per-expert token "
		  "counts; dispatch: the dispatch itself)" },
	{ .key = "vendor", .type = ST_ENUM, .offset = EOFF(vendor),
	  .values = ep_vendor_names, .def = "any",
	  .help = "the GPUs it runs on: any (a collective library), nvidia "
		  "(NVSHMEM/IBGDA kernels: DeepEP, Hybrid-EP) or amd" },
	{ .key = "fp32_probs", .type = ST_BOOL, .offset = EOFF(fp32_probs),
	  .def = "false",
	  .help = "the routing probabilities travel in fp32 whatever the "
		  "router's dtype (false: as the router made them)" },
	{ .key = "routing_map_gather", .type = ST_BOOL,
	  .offset = EOFF(map_gather), .def = "false",
	  .help = "host_sync counts: the exchange before the dispatch "
		  "all-gathers every rank's routing map (tokens x experts, "
		  "1 B each: Hybrid-EP's metadata preprocessing), not E "
		  "8-byte per-expert counts" },
	{ .key = "preprocess_ops", .type = ST_INT,
	  .offset = EOFF(preprocess_ops), .min = 0, .max = 1e4,
	  .flags = SF_OPTIONAL,
	  .help = "host_sync counts or dispatch: small PyTorch ops of "
		  "Megatron-Core's code around this dispatcher's call (its "
		  "preprocess and postprocess), each a host call and a short "
		  "kernel, in a framework that counts them (host.dispatch_ops "
		  "> 0); absent: the framework's host.dispatch_ops, the "
		  "alltoall dispatcher's" },
	{ .key = "dispatch_call_host", .type = ST_TIME,
	  .offset = EOFF(dispatch_call_host_s), .def = "0 us", .max = 1e-2,
	  .help = "host time of one dispatch call (forward dispatch and the "
		  "combine's backward) beyond its metadata preprocessing, on "
		  "the framework's reference CPU (0: as a PyTorch op)" },
	{ .key = "dtoh_after_graph", .type = ST_BOOL,
	  .offset = EOFF(dtoh_after_graph), .def = "false",
	  .help = "host_sync counts: with the moe_preprocess scope "
		  "CUDA-graphed, the counts' copies to the host are issued "
		  "after the graph's replay, so the host waits for the whole "
		  "preprocessing (the permute too), not the exchange alone" },
	{ .key = "probs_alltoall", .type = ST_BOOL,
	  .offset = EOFF(probs_call), .def = "false",
	  .help = "the routing probabilities (router dtype, one per row) "
		  "travel in a second all-to-all after the tokens', and "
		  "their gradients in one after the backward's (Megatron's "
		  "alltoall dispatcher); false: none, or inside the rows" },
	{ .key = "dispatch_chunk_tokens", .type = ST_INT,
	  .offset = EOFF(dispatch_chunk_tokens), .def = "0", .min = 0,
	  .max = 1e7,
	  .help = "forward mode across nodes: tokens per chunk of a dispatch "
		  "kernel whose blocks take a source rank's chunks in turn "
		  "and forward each after it lands, so a block makes "
		  "ceil(chunks / sms) rounds and one round of the scale-up "
		  "stage follows the scale-out one (0: streamed, no such "
		  "tail)" },
	{ .key = "combine_chunk_tokens", .type = ST_INT,
	  .offset = EOFF(combine_chunk_tokens), .def = "0", .min = 0,
	  .max = 1e7,
	  .help = "the same for the combine kernel: one round of its "
		  "scale-up gather precedes the first scale-out send and "
		  "one round of its final reduce follows the last" },
	{ .key = "stage_input", .type = ST_BOOL, .offset = EOFF(stage_input),
	  .def = "false",
	  .help = "when its EP group spans nodes, each dispatch call first "
		  "copies its input rows (the forward's also its [tokens, "
		  "experts] fp32 probabilities, an fp8 dispatch its scales) "
		  "into the dispatcher's registered buffer" },
	{ .key = "quant_pad", .type = ST_BOOL, .offset = EOFF(quant_pad),
	  .def = "false",
	  .help = "its permute pads each local expert's rows to the "
		  "quantization alignment (Hybrid-EP pad_multiple), so the "
		  "grouped MLP's own padding copies do not run" },
	{ .key = "permute_in_kernel", .type = ST_BOOL,
	  .offset = EOFF(permute_in_kernel), .def = "false",
	  .help = "its dispatch kernel can write the received rows straight "
		  "into the local experts' order and its combine kernel read "
		  "them from there (Hybrid-EP fuse_permute_dispatch), when a "
		  "job sets moe.permute_into_dispatcher" },
	{ .key = "rank_capacity", .type = ST_BOOL,
	  .offset = EOFF(rank_capacity), .def = "false",
	  .help = "it takes a static receive budget a rank (Megatron-Core "
		  "moe_expert_rank_capacity_factor: Hybrid-EP, NCCL-EP), "
		  "which a job's moe.paged_stash needs" },
};

static int ep_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct cnode *node = at->map;
	const struct ep_comm_spec *e = obj;

	if (e->mode == EP_FORWARD && e->dedup != DEDUP_NODE) {
		cnode_error(d, node, "%s", "mode 'forward' sends each token once "
			    "per node: it needs dedup 'node'");
		return -1;
	}
	if (e->gpu_initiated && (e->mode == EP_LIBRARY ||
				 e->mode == EP_HIERARCHICAL)) {
		cnode_error(d, node, "%s", "a library mode is host-launched: "
			    "gpu_initiated needs mode 'forward' or 'direct'");
		return -1;
	}
	if ((e->fp8_scale_block > 0) != (e->fp8_scale_B > 0)) {
		cnode_error(d, node, "%s", "fp8_scale_block and fp8_scale_size "
			    "go together: both set (a block of elements and "
			    "its scale's bytes, e.g. 128 and '4 B') or neither");
		return -1;
	}
	return 0;
}

static const char *const ep_dirs[] = {"configs/ep", NULL};

int64_t ep_comm_domain_ranks(int64_t ranks, int64_t per_domain)
{
	if (per_domain < 1)
		per_domain = 1;
	return ranks < per_domain ? ranks : per_domain;
}

int ep_comm_spans_domain(const struct ep_comm_spec *e, int64_t ranks,
			 int64_t per_domain)
{
	return !e || e->scale_up_max_ranks <= 0 ||
	       ep_comm_domain_ranks(ranks, per_domain) <= e->scale_up_max_ranks;
}

const struct schema ep_comm_schema = {
	.kind = "ep_comm",
	.help = "how MoE dispatch and combine move tokens (an expert-parallel "
		"communication path)",
	.preset_dirs = ep_dirs,
	.size = sizeof(struct ep_comm_spec),
	.fields = ep_fields,
	.nfields = SCHEMA_COUNT(ep_fields),
	.check = ep_check,
};

#define ROFF(m) offsetof(struct routing_spec, m)

static const struct schema_field routing_fields[] = {
	{ .key = "balance", .type = ST_ENUM, .offset = ROFF(balance),
	  .values = routing_balance_names, .def = "forced",
	  .help = "forced (the default: the framework's force-balanced "
		  "benchmark gate, framework.balanced_gate; in training random "
		  "routes as random, Megatron-Core's random logits, round_robin "
		  "as uniform; inference as uniform), uniform (exactly "
		  "balanced), random (multinomial), zipf (popularity ~ "
		  "1/rank^s), max_mean (a measured busiest-rank / mean ratio), "
		  "eplb (inference only: EPLB placed from the served "
		  "workload's own statistics, every slot's expected load "
		  "equal, the step's rows multinomial over the slots)" },
	{ .key = "zipf_exponent", .type = ST_NUM, .offset = ROFF(zipf_exponent),
	  .def = "1", .min = 0, .max = 10, .help = "s of zipf" },
	{ .key = "max_mean_ratio", .type = ST_NUM, .offset = ROFF(max_mean_ratio),
	  .def = "1", .min = 1, .max = 1e4,
	  .help = "max_mean: tokens of the busiest EP rank over the mean "
		  "(serving: rows land on experts at random, so 1 is not "
		  "forced's exact spread; docs/serving.md)" },
	{ .key = "method", .type = ST_ENUM, .offset = ROFF(method),
	  .values = routing_method_names, .def = "closed_form",
	  .help = "expected maximum load: closed_form (Gaussian) or draws (seeded)" },
	{ .key = "draws", .type = ST_INT, .offset = ROFF(draws), .def = "256",
	  .min = 1, .max = 1e6, .help = "multinomial draws for method draws" },
	{ .key = "seed", .type = ST_INT, .offset = ROFF(seed), .def = "1",
	  .min = 0, .max = 4294967295.0,
	  .help = "GSL seed of the draws and of zipf's expert placement" },
};

static const struct schema routing_schema = {
	.kind = "job.moe.routing",
	.help = "how tokens spread over experts",
	.size = sizeof(struct routing_spec),
	.fields = routing_fields,
	.nfields = SCHEMA_COUNT(routing_fields),
};

#define MOFF(m) offsetof(struct moe_job_spec, m)

static const struct schema_field moe_fields[] = {
	{ .key = "dispatcher", .type = ST_REF, .offset = MOFF(dispatcher),
	  .sub = &ep_comm_schema, .def = "alltoall",
	  .help = "token dispatch/combine path (configs/ep): alltoall, "
		  "hierarchical, deepep, deepep-ll, hybridep, allgather" },
	{ .key = "shared_expert_overlap", .type = ST_BOOL,
	  .offset = MOFF(shared_expert_overlap), .def = "false",
	  .help = "shared experts run beside dispatch/combine (Megatron "
		  "--moe-shared-expert-overlap)" },
	{ .key = "a2a_overlap", .type = ST_BOOL, .offset = MOFF(a2a_overlap),
	  .def = "false",
	  .help = "1F1B all-to-all overlap: another microbatch's forward or "
		  "backward hides dispatch/combine (Megatron "
		  "--overlap-moe-expert-parallel-comm, DualPipe-style)" },
	{ .key = "delay_wgrad", .type = ST_BOOL, .offset = MOFF(delay_wgrad),
	  .def = "false",
	  .help = "with a2a_overlap: weight gradients after the input "
		  "gradients (Megatron --delay-wgrad-compute): the experts' "
		  "under the dispatch's backward, attention's and the shared "
		  "experts' after the layer's, the last layer's after the "
		  "pipeline sends" },
	{ .key = "capacity_factor", .type = ST_NUM, .offset = MOFF(capacity_factor),
	  .def = "0", .min = 0, .max = 1e3,
	  .help = "tokens per expert capped at this times the mean, the rest "
		  "dropped (0: dropless)" },
	{ .key = "pad_to_capacity", .type = ST_BOOL,
	  .offset = MOFF(pad_to_capacity), .def = "false",
	  .help = "with capacity_factor, every expert's input padded to its "
		  "capacity: static sizes, the host never waits for token "
		  "counts (--moe-pad-expert-input-to-capacity)" },
	{ .key = "router_dtype", .type = ST_ENUM, .offset = MOFF(router_dtype),
	  .values = dtype_names, .def = "fp32",
	  .help = "dtype of the router GEMM (--moe-router-dtype)" },
	{ .key = "dispatch_dtype", .type = ST_ENUM, .offset = MOFF(dispatch_dtype),
	  .values = dtype_names, .flags = SF_OPTIONAL,
	  .help = "dtype tokens travel in (default: the activations')" },
	{ .key = "permute_fusion", .type = ST_BOOL, .offset = MOFF(permute_fusion),
	  .def = "true", .help = "fused permute/unpermute kernels (--moe-permute-fusion)" },
	{ .key = "permute_into_dispatcher", .type = ST_BOOL,
	  .offset = MOFF(permute_into_dispatcher), .def = "false",
	  .help = "the dispatcher's own kernels permute the received rows "
		  "and unpermute them before the combine: no separate "
		  "kernels (Megatron-Core moe_permute_fusion_into_hybridep; "
		  "needs a dispatcher with permute_in_kernel)" },
	{ .key = "router_padding", .type = ST_BOOL, .offset = MOFF(router_padding),
	  .def = "false",
	  .help = "low precision: the routing map padded so every expert's "
		  "token count is a multiple of the quantization alignment "
		  "(--moe-router-padding-for-quantization); false: the grouped "
		  "MLP pads and unpads its rows by copies" },
	{ .key = "paged_stash", .type = ST_BOOL, .offset = MOFF(paged_stash),
	  .def = "false",
	  .help = "mxfp8/nvfp4: the fused grouped MLP's saved tensors are "
		  "copied into a paged stash buffer after its forward and "
		  "back before its backward (Megatron-Core --moe-paged-stash, "
		  "with the full-iteration CUDA graphs' static expert "
		  "buffers)" },
	{ .key = "redundant_experts", .type = ST_INT,
	  .offset = MOFF(redundant_experts), .def = "0", .min = 0,
	  .max = 65536,
	  .help = "inference: expert slots beyond the model's routed experts, "
		  "filled with replicas of the busiest ones by DeepSeek's EPLB "
		  "(SGLang --ep-num-redundant-experts; DeepSeek-V3 serving: 32, "
		  "256 + 32 = 288 slots): ep divides the slots, each GPU "
		  "holds slots / ep of them" },
	{ .key = "mtp_layers", .type = ST_INT, .offset = MOFF(mtp_layers),
	  .def = "0", .min = 0, .max = 64,
	  .help = "multi-token-prediction modules trained with the model" },
	{ .key = "mtp_repeated_layer", .type = ST_BOOL,
	  .offset = MOFF(mtp_repeated), .def = "false",
	  .help = "the mtp_layers passes reuse one MTP module's weights "
		  "(Megatron-Core mtp_use_repeated_layer; Megatron-Bridge's "
		  "Nemotron 3 Super recipe: 2 passes of its one module): "
		  "compute per pass, parameters once" },
	{ .key = "routing", .type = ST_SECTION, .offset = MOFF(routing),
	  .sub = &routing_schema, .flags = SF_OPTIONAL,
	  .help = "how tokens spread over experts" },
};

static int moe_check(void *obj, const struct schema_at *at, struct diag *d)
{
	const struct moe_job_spec *m = obj;

	if (m->permute_into_dispatcher && m->dispatcher &&
	    !m->dispatcher->permute_in_kernel) {
		schema_check_error(d, at, "permute_into_dispatcher",
				   "dispatcher '%s' cannot permute in its "
				   "own kernels (its preset has no "
				   "permute_in_kernel: true; hybridep has)",
				   m->dispatcher->name ? m->dispatcher->name
						       : "inline");
		return -1;
	}
	/* NVIDIA/Megatron-LM @ 2a75ac12c transformer_config.py: "moe_paged_
	 * stash requires moe_expert_rank_capacity_factor to be set", which
	 * "requires moe_flex_dispatcher_backend to be 'hybridep' or
	 * 'ncclep'" */
	if (m->paged_stash && !(m->dispatcher && m->dispatcher->rank_capacity)) {
		schema_check_error(d, at, "paged_stash",
				   "paged_stash needs a dispatcher with a "
				   "static receive budget a rank (its preset's "
				   "rank_capacity: true; hybridep has): "
				   "Megatron-Core requires "
				   "moe_expert_rank_capacity_factor, which "
				   "only Hybrid-EP and NCCL-EP take");
		return -1;
	}
	/* NVIDIA/Megatron-LM @ 01cf4fb5 transformer_config.py: "overlap_moe_
	 * expert_parallel_comm must be enabled when enabling
	 * delay_wgrad_compute" */
	if (m->delay_wgrad && !m->a2a_overlap) {
		schema_check_error(d, at, "delay_wgrad",
				   "delay_wgrad needs a2a_overlap: true "
				   "(Megatron-Core delays weight gradients "
				   "only in its all-to-all overlap schedule)");
		return -1;
	}
	return 0;
}

const struct schema moe_job_schema = {
	.kind = "job.moe",
	.help = "MoE dispatch, routing and overlap",
	.size = sizeof(struct moe_job_spec),
	.fields = moe_fields,
	.nfields = SCHEMA_COUNT(moe_fields),
	.check = moe_check,
};
