/*
 * infer.h - the kernels and collectives of one inference step on one GPU:
 * a forward pass of a batch of sequences over a paged KV cache (prefill
 * chunks and decode tokens together), the embedding at the first pipeline
 * stage, the LM head and sampling at the last; shapes, bytes and FLOPs,
 * and their cost through the GPU model.
 *
 * A unit (embedding, one layer, head) is a chain of ops: each waits for
 * the one before; a collective runs on the TP (or EP) stream between two
 * kernels. Nothing here knows about ranks or time beyond one kernel:
 * infer_prog.c instantiates units into a step program, src/run runs it.
 * The arithmetic is in infer.c's header.
 *
 * Depends on gpu.h, coll.h, spec_job.h.
 */
#ifndef LLMSIM_MODELS_INFER_H
#define LLMSIM_MODELS_INFER_H

#include <stdint.h>

#include "base/coll.h"
#include "gpu/gpu.h"

struct job_spec;

/* A group of sequences of a step: count sequences, each with q new tokens
 * on top of ctx cached ones. */
struct infer_seqs {
	double count;		/* sequences */
	double q;		/* tokens computed this step, per sequence */
	double ctx;		/* tokens already in the KV cache, per sequence */
	int prefill;		/* 1: a prompt chunk (flash prefill kernel);
				 * 0: decode (split-KV kernel) */
	double sampled;		/* tokens per sequence the LM head scores: 1
				 * when the step ends its prompt or decodes, q
				 * when verifying q - 1 drafts, 0 mid-prompt */
	int pad;		/* padding of a captured graph: computed by the
				 * token-wise kernels, no attention, no sample */
	double rank_count;	/* sequences of the group on the busiest
				 * attention-DP rank (read when the batch
				 * is ranked) */
};

#define INFER_MAX_GROUPS 64
/* Attention groups of a step once chunked attention splits them. */
#define INFER_MAX_ATTN_GROUPS (8 * INFER_MAX_GROUPS)

struct infer_batch {
	struct infer_seqs g[INFER_MAX_GROUPS];
	int n;			/* groups used */
	int ranked;		/* 1: the caller knows each sequence's
				 * attention-DP rank and g[].rank_count is
				 * the busiest rank's share (serving); 0:
				 * infer_adp_rank places them */
};

/* Tokens T (sum count q), sampled rows S (sum count sampled), sequences,
 * and whether every group decodes. */
double infer_batch_tokens(const struct infer_batch *b);
double infer_batch_sampled(const struct infer_batch *b);
double infer_batch_seqs(const struct infer_batch *b);
int infer_batch_decode_only(const struct infer_batch *b);

/* Append a group (merging it into an equal one). Returns 0, or -1 when
 * the batch already holds INFER_MAX_GROUPS distinct groups. */
int infer_batch_add(struct infer_batch *b, double count, double q,
		    double ctx, int prefill, double sampled);

/* The routed experts of an MoE layer as one GPU sees them
 * (infer_moe.c). */
struct infer_moe {
	double experts;		/* routed experts (E) */
	double topk;		/* experts per token (k) */
	double ffn;		/* hidden size of one expert (f_e) */
	double width;		/* a latent MoE's latent size l (the experts'
				 * input and output width); 0 = none, h */
	double shared_ffn;	/* shared experts' hidden size; 0 = none */
	double ep, etp;		/* expert parallel, expert tensor parallel */
	double local;		/* expert slots on one GPU: (E + redundant) / ep
				 * (moe.redundant_experts: EPLB replicas) */
	double adp;		/* attention data-parallel ranks (1: none) */
	int dispatch;		/* 1: tokens are dispatched to and combined
				 * from the experts' GPUs over EP (attention
				 * DP: every GPU has tokens of its own); 0:
				 * every GPU holds its TP group's tokens, runs
				 * its experts on those routed to them and the
				 * outputs are all-reduced over TP */
	int allgather;		/* dispatch by all-gather + reduce-scatter */
	int sized;		/* ... as grouped per-rank broadcasts and
				 * reduces (engine adp_moe_sized) */
	enum dtype weight;	/* experts' weights */
	enum dtype compute;	/* experts' GEMM inputs */
	enum dtype weight_q;	/* ... when the checkpoint quantizes them */
	enum dtype compute_q;
	int compute_set;	/* serving.activation_dtype names compute */
	double dispatch_B;	/* B per dispatched element the job names
				 * (moe.dispatch_dtype); 0: none */
	double weight_B;	/* B per expert weight element */
	double gemm_a_B;	/* B per expert GEMM input element */
	double elem_B;		/* B per element of a dispatched token */
	int sigmoid;		/* sigmoid router scores (else softmax) */
	int weight_on_input;	/* the router weight scales the experts' input
				 * (Llama 4) */
	int cutlass;		/* TensorRT-LLM's CUTLASS fused-MoE kernels
				 * (engine moe_kernels: cutlass) */
	double fp8_group;	/* elements per scale of the checkpoint's
				 * block-scaled fp8 activations (its weight
				 * block's k side, DeepSeek-V3 128); 0 = not
				 * block-scaled */
	int quant_in_op;	/* cutlass with block-scaled fp8 experts: the
				 * fused op quantizes the gathered 16-bit rows
				 * itself (no quantization before the
				 * all-gather) */
	double block_rate;	/* block-scaled fp8 experts outside cutlass:
				 * the share of the fp8 GEMM rate their
				 * kernel reaches (engine fp8_block_moe_kernel
				 * triton: gpu triton_moe_fp8_block_rate);
				 * 1 = as per-tensor */
	double default_eff;	/* 16-bit experts on vLLM's Triton fused_moe
				 * with no tuned config for (E, N, GPU):
				 * the GPU's triton_moe_default_efficiency
				 * (get_default_config's tile); 0 = none */
	double untuned_eff;	/* ... before the precision is known: the
				 * engine, GPU and shape allow it */
	double tuned[6];	/* vLLM's Triton fused_moe on block-fp8
				 * experts with a tuned file naming a tile
				 * for small batches (gpu triton_moe_fp8_
				 * block_tuned): [0], [1] the fewest and
				 * most tokens it runs it at ([1] 0: none),
				 * [2..4] its BLOCK_SIZE_M, _N, _K, [5] its
				 * num_stages */
	double triton_rate;	/* the engine runs them with vLLM's Triton
				 * fused_moe: the GPU's
				 * triton_moe_fp8_block_rate; else 1 */
	int deepgemm;		/* a DeepEP-class dispatcher (forward or
				 * direct mode) carries the tokens: the
				 * experts run DeepGEMM, not triton_rate */
	double fused_sort_max;	/* cutlass: tokens up to which one kernel
				 * sorts the rows */
	double wo_eff[2];	/* the engine's weight-only MoE kernel's
				 * efficiency on the GPU (gpu_wo_kernel),
				 * [0] for W8A16 / W4A16 experts, [1] for
				 * MXFP4 ones; 0 = the bf16 GEMM rate */
	double wo_eff_used;	/* the one the experts' weights take when
				 * their GEMMs dequantize (weight != compute);
				 * 0 = none */
	int shared_aux;		/* cutlass with the attention-DP all-gather
				 * and the engine's moe_shared_aux_stream:
				 * the shared experts follow the all-gather,
				 * ep_free (cutlass_ops) */
	int tbo;		/* two-batch overlap applies: the engine's
				 * two_batch_overlap with an all-to-all
				 * dispatch (infer_tbo.c) */
	int tbo_delta[2];	/* stages, the first half batch's head start
				 * under the decode [0] and prefill [1]
				 * strategies (engine tbo_*_delta_stages) */
	const int64_t *wo_tile_m;	/* the engine's weight-only kernels'
					 * own tile rows (engine
					 * weight_only_moe_tile_m; NULL: none) */
	size_t wo_ntile_m;	/* entries of wo_tile_m */
	double wo_tile_n;	/* elements, those tiles' columns */
	int wo_tile_cover;	/* the kernel runs the one wo_tile_m tile that
				 * covers an expert's rows (engine
				 * weight_only_moe_tile_pick cover) */
	double wo_cover_rows;	/* the rows an expert the cover rule counts,
				 * over those it gets (gpu_gemm_dtypes
				 * cover_rows): ep under TensorRT-LLM's
				 * TritonFusedMoE, else 1 */
	double marlin_pad[2];	/* elements: MXFP4 experts under Marlin pad
				 * the per-rank ffn [0] and the hidden size [1]
				 * to multiples of these (engine
				 * mxfp4_marlin_pad_*); 0: none */
	double pad[2];		/* the multiples the experts' GEMMs take
				 * (marlin_pad where they run it), 0: none */
};

/* The model and its dtypes on one GPU of a TP group. */
struct infer_dims {
	double hidden;		/* h */
	double heads;		/* query heads, whole model (a) */
	double kv_heads;	/* KV heads, whole model (g) */
	double head_dim;	/* d */
	double ffn;		/* dense MLP hidden size (f) */
	double vocab;		/* padded vocabulary (V) */
	double layers;		/* transformer layers, whole model */
	double tp;		/* tensor-parallel degree (t) */
	int gated;		/* gate+up+down MLP */
	int rope;		/* rotary embedding on Q and K */
	int mla;		/* multi-head latent attention (absorbed decode) */
	double q_lora_rank;	/* MLA: query low-rank width (0: none) */
	double kv_lora_rank;	/* MLA: compressed KV width */
	double rope_dim;	/* MLA: decoupled rotary width */
	double nope_dim;	/* MLA: per-head non-rotary Q/K width */
	double v_head_dim;	/* MLA: per-head V width */
	double index_heads;	/* DSA: lightning indexer heads (H_I); 0 =
				 * dense attention (infer.c attn_mla) */
	double index_dim;	/* DSA: indexer head width (d_I) */
	double index_topk;	/* DSA: keys a query attends to (k) */
	double index_key_B;	/* DSA: B per token of a layer's indexer key
				 * cache (model_index_key_bytes) */
	double dsa_pad_heads;	/* DSA: every prompt token (and with a
				 * 16-bit cache every decode token) through
				 * FlashMLA's sparse kernel (engine
				 * dsa_kernel flashmla_sparse), all
				 * index_topk slots a query, its query heads
				 * padded up to a multiple of this (the
				 * GPU's flashmla_sparse_heads, at least 1;
				 * infer_cost.c sparse_gather_cost); 0: the
				 * cheaper mode by FLOPs */
	double sink_rows;	/* prompt attention through vLLM's Triton
				 * unified kernel (a model with attention
				 * sinks on a GPU outside the engine's
				 * sink_attn_native_cc): query rows a
				 * program holds; 0: the flash kernel */
	double mixed_rows;	/* a step with prompt and decode tokens runs
				 * them in one flash kernel that does not
				 * pack the decode tokens' query heads (the
				 * engine's mixed_attn_block_m on a GPU in
				 * its mixed_attn_unpacked_cc): query rows a
				 * program holds; 0: a decode kernel of their
				 * own */
	enum dtype base;	/* everything but the quantized GEMMs (bf16) */
	enum dtype weight;	/* weights of the linear layers */
	enum dtype compute;	/* matrix rate of the linear layers */
	enum dtype kv;		/* KV cache */
	double act_B;		/* B per activation element (base) */
	double gemm_a_B;	/* B per GEMM input element (compute dtype) */
	double weight_B;	/* B per weight element, scales included */
	double kv_B;		/* B per KV-cache element */
	unsigned qexcl;		/* enum quant_excl: the checkpoint keeps these
				 * modules' weights and GEMMs in `base`
				 * (quantization_config exclusions; 0 when
				 * the weights are not quantized) */
	int quant_fusion;	/* enum engine_quant_fusion (the engine's) */
	int norm_quant_apart;	/* the layer norms' outputs take a quantization
				 * kernel even where quant_fusion fuses it
				 * (engine norm_quant, this layout) */
	double norm_quant_max_B; /* ... and so they do in a step whose TP
				 * all-reduce (T h B) is larger than this
				 * (engine norm_quant_ar_max; 0: no limit) */
	int act_quant_apart;	/* the SiLU-mul's output likewise (engine
				 * act_quant, this GEMM-input format) */
	int rope_cache_fused;	/* RoPE and the cache write in one kernel */
	int mla_q_pe_fused;	/* engine mla_q_pe_fused (infer.c attn_mla) */
	int qk_norm;		/* RMSNorm over each Q and K head (Qwen3) */
	int qk_norm_rope_fused;	/* that norm and RoPE in one in-place kernel */
	int attn_temp_eager;	/* the engine applies a layer's attention
				 * temperature in eager ops (infer_ops.c) */
	int input_broadcasts;	/* the engine's step-input broadcasts */
	int graph_input_copies;	/* input copies before a graph replay */
	int sampler_passes;	/* sampler kernels over the fp32 logits */
	int sampler_copies;	/* sampler host-device copies */
	double block_row_B;	/* B of one request's block-table row the
				 * engine copies host to device each step
				 * (engine block_table_copy: ceil(max_model_len
				 * / block_size) x 4); 0: none */
	double h2d_Bps;		/* B/s of the host link a GPU's copies from
				 * pinned memory take (the system's host
				 * fabric port); 0: none modelled */
	int trtllm_decode;	/* decode attention splits by the GPU's
				 * TensorRT-LLM rule (engine decode_kernel) */
	int trtllm_ctx16;	/* prefill attention is TensorRT-LLM's
				 * 16-bit context FMHA (engine prefill_kernel
				 * trtllm, infer.c ctx16) */
	double decode_partition; /* keys per unit of a fixed-partition decode
				 * kernel (engine decode_partition); 0: none */
	int skinny_rows;	/* quantized GEMMs of <= rows: one kernel */
	int skinny_rows_base;	/* unquantized GEMMs of <= rows: one kernel */
	int fp8_fast_accum;	/* dense fp8 GEMMs in Hopper's fast-
				 * accumulation mode (the engine's) */
	double wo_linear_eff;	/* dense GEMMs whose weights alone are
				 * quantized: the engine's weight-only
				 * kernel's efficiency on this GPU (gpu
				 * weight_only_linear_efficiency), 0 = the
				 * bf16 GEMM (infer_cost.c) */
	int multi_step;		/* decode steps per scheduler call */
	int moe_model;		/* some layers have routed experts */
	struct infer_moe moe;	/* their experts */
	/* a speculative draft head (serve_setup.c draft_setup), 0 for a
	 * model: its input projection from draft_in x h to h, unquantized
	 * and replicated on every GPU (DeepSeek MTP's eh_proj, EAGLE's fc,
	 * 2 h), after draft_norms RMSNorms of the inputs (MTP's enorm and
	 * hnorm) */
	double draft_in;
	int draft_norms;
	/* Gated DeltaNet layers (infer_gdn.c; whole model, 0 = none) and the
	 * full attention's output gate (Qwen3-Next) */
	double gdn_k_heads, gdn_v_heads, gdn_dk, gdn_dv, gdn_conv;
	double gdn_chunk;	/* tokens a chunk of the prefill chunk kernels
				 * (engine linear_attn_chunk) */
	int attn_gate;
	/* a hybrid's Mamba-2 mixer (infer_mamba.c), whole model; heads 0:
	 * none */
	double m_heads, m_head_dim, m_state, m_groups, m_conv, m_chunk;
	double ssm_B;		/* B per SSM-state element (mamba_ssm_cache_dtype) */
};

/* What one layer is: a routed-expert MLP or a dense one, full attention
 * or a sliding window. */
struct infer_kind {
	int moe;
	double window;		/* keys a query sees; 0 = all (causal) */
	double chunk;		/* queries attend within aligned chunks of
				 * this many tokens (Llama 4); 0 = none */
	int temperature;	/* queries scaled by position (Llama 4's
				 * attention temperature tuning, NoPE layers) */
	unsigned qexcl;		/* enum quant_excl: the classes the checkpoint
				 * keeps unquantized in this layer
				 * (quant_layer_excluded; with d->qexcl's, and
				 * only when the weights are quantized:
				 * infer_kind_dims) */
	int linear;		/* a Gated DeltaNet mixer (infer_gdn.c) */
	int block;		/* enum model_block: a hybrid's Mamba-2 mixer,
				 * attention, MLP or MoE alone; 0 both */
	int nope;		/* a NoPE layer: no q/k norm (layer.h
				 * layer_kind.nope) */
};

#define INFER_MAX_KINDS 8

/* The dims of a layer of kind k: d itself, or tmp filled from d when the
 * layer's exclusions (k->qexcl) differ from every layer's (d->qexcl):
 * the classes it keeps unquantized and its experts' dtypes. The MoE
 * routing's dispatch bytes stay d's (infer_moe_route). */
const struct infer_dims *infer_kind_dims(const struct infer_dims *d,
					 const struct infer_kind *k,
					 struct infer_dims *tmp);

/* The kind of layer i (0-based) of the job's model. */
void infer_kind_of(const struct job_spec *j, int64_t layer,
		   struct infer_kind *k);

/* Chunked attention (Llama 4): `count` sequences whose q queries sit at
 * positions kv - q .. kv - 1 and attend within aligned chunks of `chunk`
 * tokens become one attention group per chunk they touch: the queries in
 * chunk c = [cC, cC + C) and the keys from cC up to the last of them (a
 * decode token sees (kv - 1) mod C + 1 keys). Writes at most cap groups
 * to out (the rest of the queries, if any, as one last group over its
 * chunk's keys) and returns how many. */
int infer_chunk_groups(double count, double q, double kv, double chunk,
		       struct gpu_attn_group *out, int cap);

/* Where the tokens of one step go in an MoE layer (infer_moe_route). */
struct infer_route {
	double tokens;		/* tokens entering the MoE layer on one GPU */
	double rows;		/* rows the busiest GPU's experts compute */
	double active;		/* of its experts, those with at least one
				 * row (expected) */
	double dispatch_B;	/* B one GPU sends in dispatch (coll.h) */
	const double *a2a_B;	/* uneven dispatch matrix [ep x ep]; NULL:
				 * even */
	double combine_B;	/* B one GPU sends in the combine: the
				 * dispatched rows as h act_B each */
	const double *combine_a2a_B;	/* the combine's uneven matrix, the
					 * transpose of a2a_B's pattern
					 * (route.c's a2a_pass_B of
					 * EP_PASS_COMBINE); NULL: even */
	double max_mean;	/* busiest GPU's rows over the mean GPU's */
	double node_share;	/* node deduplication of the scale-out bytes
				 * (coll_path.node_share); 1 = none */
	double row_B;		/* B of one dispatched row, extras included
				 * (route.c, as training's) */
	int row_fp8;		/* the rows are FP8 (the dispatcher's
				 * per-row quantization cost applies) */
};

/* The dtype GEMM inputs run in: the job's activation_dtype, else the
 * weights' dtype when g has a matrix rate for it, else base (weight-only
 * quantization dequantizes in the kernel). */
enum dtype infer_compute_dtype(const struct job_spec *j,
			       const struct gpu_spec *g);

/* Fill d for one GPU of the job's TP group (vocabulary padded to 64 per
 * rank, as vLLM's and SGLang's vocab-parallel embeddings pad it). */
void infer_dims_from_job(const struct job_spec *j, const struct gpu_spec *g,
			 struct infer_dims *d);

/* KV-cache bytes one token takes on one GPU, per layer: 2 (g/t, at least
 * 1) d B_kv, or (kv_lora_rank + rope_dim) B_kv with MLA (not split by
 * TP). Times the layers a GPU holds for a token's total. */
double infer_kv_token_layer_B(const struct infer_dims *d);

/* Weight parameters of one dense layer on one GPU (/t), of the embedding
 * and of the LM head with the final norm. */
double infer_layer_params(const struct infer_dims *d);

/* Parameters and bytes of the weights of one layer of kind k on one GPU
 * (the experts' in their own dtype; norms in the base dtype). */
double infer_kind_params(const struct infer_dims *d,
			 const struct infer_kind *k);
double infer_kind_weight_B(const struct infer_dims *d,
			   const struct infer_kind *k);
double infer_embed_params(const struct infer_dims *d);
double infer_head_params(const struct infer_dims *d);
/* The checkpoint's (all TP ranks', once) attention parameters of a layer
 * of kind k that it keeps unquantized (QX_ATTN input projections,
 * QX_ATTN_OUT output projection); 0 for a linear-attention, Mamba or
 * MLP-only block. */
double infer_kind_attn_excluded_params(const struct infer_dims *d,
				       const struct infer_kind *k);

enum iop_kind {
	IOP_KERNEL,		/* on the compute stream */
	IOP_TP,			/* a collective over the (attention) TP group */
	IOP_EP,			/* dispatch or combine over the EP group, on
				 * the job's expert-parallel path */
	IOP_ETP			/* a collective over the expert TP group */
};

/* What a kernel is, for costing. */
enum iop_kern {
	IK_GEMM,		/* linear layer: C[m,n] = A[m,k] W[k,n] */
	IK_GROUPED,		/* the local experts' GEMMs in one kernel */
	IK_ATTN_PREFILL,	/* flash attention of the batch's prompt chunks */
	IK_ATTN_DECODE,		/* split-KV attention of the decoding sequences */
	IK_MEM,			/* memory-bound */
	IK_CHUNK		/* a chunked linear-recurrence kernel (Mamba-2
				 * SSD, fla chunk_*): m, n, k, batch its
				 * per-chunk products (gpu_chunk_gemm) */
};

struct infer_op {
	const char *name;	/* static */
	enum iop_kind kind;
	enum iop_kern kern;	/* IOP_KERNEL */
	int attention;		/* part of attention (not captured piecewise) */
	int mixed;		/* IK_ATTN_PREFILL: the decode groups run in
				 * it too, unpacked (infer_dims mixed_rows) */
	int dense_mha;		/* DSA prefill in DeepSeek's masked MHA mode:
				 * decompressed heads over every causal key
				 * (infer.c dsa_prefill_mha) */
	double m, n, k;		/* IK_GEMM */
	double batch;		/* IK_GEMM: independent GEMMs of that shape */
	int weight_B_base;	/* IK_GEMM: weights in the base dtype (LM head) */
	double groups;		/* IK_GROUPED: experts with rows (m: all rows) */
	double chunk_in_B;	/* IK_CHUNK: B per operand element */
	double chunk_out_B;	/* IK_CHUNK: B per result element */
	double read_B;		/* IK_MEM: bytes read */
	double write_B;		/* IK_MEM: bytes written */
	double vec_flops;	/* IK_MEM: vector FLOPs */
	double h2d_B;		/* IK_MEM: a host-to-device copy of this many
				 * bytes over the host link instead of a
				 * kernel (issued by the host, never in a
				 * graph) */
	double search_rows;	/* IK_MEM: rows whose expert the kernel
				 * searches for, one by one (the CUTLASS
				 * fused MoE's expand and activation; gpu
				 * cutlass_moe_row_time); 0: none */
	double ssm_state_B;	/* IK_MEM: bytes of these that are Mamba-2
				 * recurrent state a decode state update
				 * reads and writes, at the GPU's
				 * ssm_update_bandwidth (infer_mamba.c);
				 * 0: none */
	enum coll_op coll;	/* collectives */
	double coll_B;		/* collectives: size per coll.h */
	const double *a2a_B;	/* IOP_EP: uneven matrix or NULL */
	double ep_row_B;	/* IOP_EP: B of a row the dispatcher moves */
	int ep_kind;		/* IOP_EP: EP_ROW_* bits (ep_coll_path) */
	int tbo_yield;		/* two-batch overlap: a stage of the half
				 * batch ends before this op (infer_tbo.c) */
	int ep_free;		/* runs without waiting for the EP
				 * collective issued before it: two-batch
				 * overlap, and a CUDA-graph step's
				 * aux-stream shared experts (shared_aux;
				 * infer_prog.c inst_unit) */
};

#define INFER_MAX_OPS 64
#define INFER_MAX_EXPERT_GROUPS 512	/* experts one GPU holds, at most */

struct infer_ops {
	struct infer_op op[INFER_MAX_OPS];
	int n;
};

/* A Gated DeltaNet mixer on one GPU (infer_gdn.c): its parameters, and
 * the fixed state one sequence keeps in one such layer (the fp32
 * delta-rule state and the conv state), in place of a KV cache. */
double infer_gdn_params(const struct infer_dims *d);
double infer_gdn_state_B(const struct infer_dims *d);

/* The ops of one transformer layer of kind k (NULL: dense, full
 * attention; an MoE layer needs the step's routing r), of the embedding
 * (first stage) and of the final norm, LM head and sampling (last stage),
 * for batch b. */
void infer_layer_ops(const struct infer_dims *d, const struct infer_batch *b,
		     const struct infer_kind *k, const struct infer_route *r,
		     struct infer_ops *o);
void infer_embed_ops(const struct infer_dims *d, const struct infer_batch *b,
		     struct infer_ops *o);
void infer_head_ops(const struct infer_dims *d, const struct infer_batch *b,
		    struct infer_ops *o);
/* Append to o the host-to-device copy of the block-table rows of b's
 * requests (engine block_table_copy), every step. */
void infer_step_input_ops(const struct infer_dims *d,
			  const struct infer_batch *b, struct infer_ops *o);
/* Append to o the copies of b's inputs into a graph's buffers before
 * its replay (engine graph_input_copies). */
void infer_graph_input_ops(const struct infer_dims *d,
			   const struct infer_batch *b, struct infer_ops *o);

/* A costed op. */
struct infer_cost_op {
	const char *name;
	enum iop_kind kind;
	double time_s;		/* s, kernel time (IOP_KERNEL) */
	double flops;		/* FLOP executed */
	double bytes;		/* B moved at the serving level (kernels) or
				 * the collective's size (collectives) */
	enum coll_op coll;
	const double *a2a_B;	/* IOP_EP: uneven matrix or NULL */
	double ep_row_B;	/* IOP_EP: as infer_op's */
	int ep_kind;		/* EP_ROW_* bits of the op's rows */
	int eager;		/* a kernel launched by the host (not replayed
				 * from a captured graph) */
	int tbo_yield;		/* as infer_op's */
	int ep_free;		/* as infer_op's */
};

/* A costed unit, ready to instantiate. */
struct infer_unit {
	struct infer_cost_op op[INFER_MAX_OPS];
	int n;
	double kernel_s;	/* s, sum of kernel times */
	double flops;		/* FLOP executed */
	double bytes;		/* B moved by the kernels */
	double weights_B;	/* B of weights the GEMMs read */
	int eager;		/* kernels the host launches one by one */
};

/* Launch cost: kernels of a step captured in a graph pay
 * gpu.kernel_launch_graph instead of gpu.kernel_launch. */
enum infer_graph {
	IGRAPH_NONE,		/* every kernel eager */
	IGRAPH_PIECEWISE,	/* all but attention captured */
	IGRAPH_FULL		/* every kernel captured */
};

/* Cost o for batch b on g (launch cost by graph) into u. Attention is
 * costed over b's groups with the model's heads on one GPU. */
void infer_cost(const struct infer_ops *o, const struct infer_dims *d,
		const struct infer_batch *b, const struct infer_kind *k,
		const struct gpu_spec *g, enum infer_graph graph,
		struct infer_unit *u);

/*
 * A memo of kernel costs for one step model (the serving simulation
 * costs the same GEMMs, grouped GEMMs and memory ops step after step:
 * only attention follows the batch's contexts). An op's cost is a pure
 * function of its shape fields, the layer kind's dims and the GPU (and
 * which of its launch / fp8-accumulation variants applies), so a hit
 * returns the very numbers a miss computes: results are bit-identical
 * with and without it. Attention kernels (they read the batch) are never
 * memoized. Bound to one (d, g) pair: another pair empties it.
 */
struct infer_cost_memo;

struct infer_cost_memo *infer_cost_memo_new(void);
void infer_cost_memo_free(struct infer_cost_memo *m);
/* Lookups that hit and missed so far. */
void infer_cost_memo_stats(const struct infer_cost_memo *m, uint64_t *hits,
			   uint64_t *misses);

/* infer_cost through memo m (NULL: none). */
void infer_cost_memo(const struct infer_ops *o, const struct infer_dims *d,
		     const struct infer_batch *b, const struct infer_kind *k,
		     const struct gpu_spec *g, enum infer_graph graph,
		     struct infer_cost_memo *m, struct infer_unit *u);

/* ---- Mamba-2 (infer_mamba.c) ---- */

/* The Mamba-2 mixer of a hybrid's 'M' layer for batch b into o: norm,
 * in-projection, conv1d, the SSD scan of the prompt chunks and the state
 * update of the decoding sequences, gated norm, out-projection and its TP
 * all-reduce. */
void infer_mamba_ops(const struct infer_dims *d, const struct infer_batch *b,
		     struct infer_ops *o);

/* Parameters of one Mamba-2 mixer on one GPU (/t), its norms included. */
double infer_mamba_params(const struct infer_dims *d);

/* Bytes of the recurrent state one sequence keeps in one Mamba layer on
 * one GPU: SSM H/t P N at ssm_B, conv (d_inner + 2 G N)/t (K - 1) at the
 * activations' B. */
double infer_mamba_state_layer_B(const struct infer_dims *d);

/* ---- MoE (infer_moe.c) ---- */

/* Fill d->moe for job j (d->moe_model set). */
void infer_moe_dims(const struct job_spec *j, const struct gpu_spec *g,
		    struct infer_dims *d);
/* The experts' dtypes (d->moe weight, compute and their bytes, elem_B)
 * for the exclusions d->qexcl. */
void infer_moe_precision(struct infer_dims *d);

/* The routing of a step of `tokens` tokens per attention group (TP
 * group) through an MoE layer: route.c's busiest GPU and dispatch bytes
 * for the job's moe.routing and moe.dispatcher, and the experts that
 * get rows. Arrays in a. 0, or -1 when out of memory (reported). */
struct arena;
struct diag;
int infer_moe_route(const struct job_spec *j, const struct infer_dims *d,
		    double tokens, struct arena *a, struct infer_route *out,
		    struct diag *dg);

/* Two-batch overlap's layer strategy (SGLang operations_strategy.py,
 * infer_tbo.c): where a half batch yields to the other, and where its
 * shared experts run. */
enum infer_tbo {
	ITBO_NONE,
	ITBO_DECODE,		/* _compute_moe_deepseek_blog_decode */
	ITBO_PREFILL		/* _compute_moe_deepseek_blog_prefill */
};

/* The MoE MLP of a layer (after its second norm) into o; with a two-batch
 * overlap strategy `tbo` its ops carry the strategy's yields and the
 * shared experts move beside the dispatch (decode) or the combine
 * (prefill). */
void infer_moe_ops(const struct infer_dims *d, double tokens,
		   const struct infer_route *r, enum infer_tbo tbo,
		   struct infer_ops *o);

/* Weight parameters and bytes of an MoE MLP (router, shared experts,
 * local experts) on one GPU. */
double infer_moe_params(const struct infer_dims *d);
double infer_moe_weight_B(const struct infer_dims *d);

#endif
