/*
 * gpu.h - how long one kernel takes on one GPU.
 *
 * The GPU model is a roofline over the memory hierarchy: a kernel's time
 * is the larger of its FLOPs over the achievable matrix (or vector) rate
 * for its dtype and its bytes over the bandwidth of the level that serves
 * its working set (HBM, last-level cache, L2), plus launch overhead.
 * GEMM efficiency comes from structure (tile and wave quantization over
 * the CUs/SMs, small-dimension penalties, sustained matrix clock), not
 * one fudge factor. Every constant is data in struct gpu_spec.
 *
 * All results are in SI units; nothing here knows about parallelism or
 * models (src/models composes these costs into a step). The mathematics
 * of each model is at the top of its file: gpu.c (peaks, memory levels,
 * memory-bound kernels), gpu_gemm.c (tiles, waves, split-K),
 * gpu_grouped.c (grouped GEMMs of MoE experts), gpu_attention.c (fused
 * attention).
 *
 * Unsupported dtypes: a GPU supports dt when gpu_peak_flops(g, dt) > 0.
 * Callers validate the job's dtype once with gpu_check_dtype(), which
 * reports a user error naming the dtypes the GPU has; gpu_gemm() and the
 * attention functions treat an unsupported dtype as a programming error
 * (BUG), never as a silent zero or infinite time.
 *
 * Zero-sized work (any dimension or byte count 0) costs nothing: time 0,
 * no launch. Negative or non-finite sizes are programming errors.
 *
 * Depends on the core (spec_gpu.h, diag.h) only.
 */
#ifndef LLMSIM_GPU_GPU_H
#define LLMSIM_GPU_GPU_H

#include <stddef.h>

#include "config/spec_gpu.h"

struct diag;

enum gpu_bound {
	GPU_BOUND_COMPUTE,	/* matrix or vector rate */
	GPU_BOUND_MEMORY,	/* bandwidth of the serving level */
	GPU_BOUND_LAUNCH	/* launch overhead dominates */
};

/* Levels of the memory hierarchy that can serve a kernel's bytes,
 * nearest first. */
enum gpu_level {
	GPU_LEVEL_L2,
	GPU_LEVEL_LLC,
	GPU_LEVEL_HBM
};

/* The cost of one kernel. */
struct gpu_cost {
	double time_s;		/* s, including launch overhead */
	double flops;		/* FLOP executed (useful work, no padding) */
	double bytes;		/* B moved to/from the serving level */
	int bound;		/* enum gpu_bound */
	int level;		/* enum gpu_level that served the bytes */
	double tiles_per_unit;	/* a tiled GEMM: output tiles (split slices
				 * counted) of the plan kept over the compute
				 * units, the tiles each CTA of a persistent
				 * kernel runs; 0 for any other kernel */
};

/* Shape of one attention call (flash-attention style, fused). */
struct gpu_attn_shape {
	double batch;		/* sequences */
	double heads_q;		/* query heads on this GPU */
	double heads_kv;	/* key/value heads on this GPU */
	double seq_q;		/* query tokens per sequence */
	double seq_kv;		/* key/value tokens per sequence */
	double head_dim_qk;	/* Q/K per-head dimension */
	double head_dim_v;	/* V per-head dimension */
	int causal;		/* causal mask (about half the score matrix) */
	double window;		/* causal: keys a query sees at most (sliding
				 * window); 0 = all before it */
	int kernel;		/* enum gpu_attn_kernel */
	int fp8;		/* the kernel runs in FP8 (Transformer Engine's
				 * fp8_dot_product_attention): the GPU's
				 * attention.fp8_* rates, else bf16's */
	int mx;			/* with fp8: MXFP8 (block-scaled), the
				 * attention.mxfp8_* rates */
};

/* Which fused attention kernel family runs: the vendor's (cuDNN on
 * NVIDIA, what Transformer Engine calls; CK on AMD), FlashAttention-2
 * (the flash-attn package and PyTorch SDPA's flash backend), which on
 * Hopper reaches about half of the vendor kernel (no TMA/wgmma), or
 * FlashAttention's pre-MLIR Triton kernel (flash_attn_triton.py, what
 * llm-foundry's attn_impl: triton ran in 2023), FlashAttention-1 class,
 * or, on AMD, Composable Kernel's generic CK-tile pipelines (what
 * Transformer Engine's CK backend runs when its v3 assembly kernels are
 * off), or PyTorch SDPA's flash backend (FlashAttention-2 as PyTorch
 * vendors and builds it, aten/src/ATen/native/transformers/cuda/flash_attn:
 * the same algorithm as the flash-attn package, measured apart because
 * its rate differs; configs/gpus/h100.yaml has the figures). */
enum gpu_attn_kernel {
	GPU_ATTN_VENDOR,
	GPU_ATTN_FLASH2,
	GPU_ATTN_FLASH_TRITON,
	GPU_ATTN_CK_TILE,
	GPU_ATTN_SDPA_FLASH
};

/* Vendor dense peak for dtype (FLOP/s); 0 when unsupported. MFU is
 * measured against this. */
double gpu_peak_flops(const struct gpu_spec *g, enum dtype dt);

/* 0 when g has a matrix rate for dt; otherwise reports a user error on d
 * ("gpu 'h100' has no mxfp4 matrix rate; it supports ...") and returns
 * -1. */
int gpu_check_dtype(const struct gpu_spec *g, enum dtype dt,
		    struct diag *d);

/* The matrix rate a large, well-shaped GEMM sustains (FLOP/s): peak
 * scaled by sustained/quoted clock and by the dtype's GEMM efficiency;
 * 0 when unsupported. */
double gpu_sustained_flops(const struct gpu_spec *g, enum dtype dt);

/* Hopper fp8 GEMMs run in one of two accumulation modes: promoted (the
 * tensor core's partial sums added into fp32 registers every few k
 * blocks: cuBLASLt CUBLASLT_MATMUL_DESC_FAST_ACCUM 0, torch._scaled_mm's
 * default, Transformer Engine's dgrad and wgrad) or fast (never promoted:
 * FAST_ACCUM 1, Transformer Engine's fprop, the serving engines' CUTLASS
 * FP8FastAccum kernels). gemm_efficiency_dtype's fp8 is the promoted
 * mode's; this puts the GPU's fp8_fast_accum_efficiency in its place in
 * g, where the GPU has one (a GPU without it has one fp8 efficiency). */
void gpu_use_fp8_fast_accum(struct gpu_spec *g);

/* The power model (gpu_power.c; keys burst_matrix_clock, burst_gemm_power,
 * stream_power, idle_power, power_window): 1 when g carries it. */
int gpu_power_modelled(const struct gpu_spec *g);

/* The matrix clock (Hz) a step runs its matrix work at under the power
 * limit: matrix_s of matrix work timed at sustained_matrix_clock beside
 * other_s of other work; sustained_matrix_clock without the model. */
double gpu_power_step_clock_hz(const struct gpu_spec *g, double matrix_s,
			       double other_s);

/* How long (s) GEMMs hold burst_matrix_clock after a long time at board
 * power power_before (a fraction of the limit, below 1); 0 without the
 * model. */
double gpu_power_burst_hold_s(const struct gpu_spec *g, double power_before);

/* The time (s) of one call that starts start_s after GEMMs left a long
 * idle spell, burst_s long at burst_matrix_clock and sustained_s at
 * sustained_matrix_clock, the burst held for hold_s (gpu_power.c). */
double gpu_power_call_s(double burst_s, double sustained_s, double start_s,
			double hold_s);

/* The mean time (s) of timed_calls (>= 1) calls run back to back after
 * warmup_calls others, all of one kernel (burst_s, sustained_s as
 * above), from a long spell at board power power_before (a fraction of
 * the limit); sustained_s without the model. */
double gpu_power_calls_mean_s(const struct gpu_spec *g, double burst_s,
			      double sustained_s, double warmup_calls,
			      double timed_calls, double power_before);

/* *out = *g with its matrix work at clock_hz (> 0): every rate of g
 * that follows sustained_matrix_clock follows clock_hz. */
void gpu_at_matrix_clock(const struct gpu_spec *g, double clock_hz,
			 struct gpu_spec *out);

/* The level that serves a working set of this many bytes: the nearest
 * present level that holds it (L2, then LLC), else HBM. */
enum gpu_level gpu_serving_level(const struct gpu_spec *g,
				 double working_set_B);

/* Achievable bandwidth of a level (B/s): peak x measured efficiency.
 * An absent level is a programming error. */
double gpu_level_bandwidth_Bps(const struct gpu_spec *g, enum gpu_level l);

/* C[m,n] = A[m,k] B[k,n], `batch` independent GEMMs of that shape.
 * Operands in dt; the result in dt, or in BF16 when dt is narrower than
 * 16 bits (FP8/MX GEMMs accumulate in FP32 and write BF16, as Transformer
 * Engine and the vendor benchmarks do). The working set picks the serving
 * level (gpu_serving_level). */
struct gpu_cost gpu_gemm(const struct gpu_spec *g, enum dtype dt, double m,
			 double n, double k, double batch);

/* A GEMM whose operands differ (inference with quantized weights): the
 * matrix rate of `compute`, A (activations) of a_B bytes per element, B
 * (weights) of b_B bytes per element block scales included (a weight-only
 * quantized B is dequantized in the mainloop), C of c_B; b_cold: B is
 * read from HBM whatever the working set (weights in an inference step). */
struct gpu_gemm_dtypes {
	enum dtype compute;	/* dtype whose matrix rate the MMAs run at */
	double a_B;		/* B per element of A */
	double b_B;		/* B per element of B */
	double c_B;		/* B per element of C */
	int b_cold;		/* B streams from HBM */
	int one_kernel;		/* a split along k stays in one kernel (an
				 * engine's own skinny kernel), whatever
				 * gpu.gemm_split_k_kernels says */
	double min_tile_m;	/* grouped: fewest tile rows the kernel offers;
				 * 0 = any gemm_tile_m */
	double efficiency;	/* the kernel's fraction of the clock-scaled
				 * peak at compute (a weight-only kernel's:
				 * grouped, gpu weight_only_moe_efficiency;
				 * dense, weight_only_linear_efficiency, run
				 * as a roofline without tiles, gpu_gemm.c);
				 * 0 = the GPU's GEMM efficiency there */
	const int64_t *tile_m;	/* grouped, efficiency > 0: output-tile rows
				 * the kernel offers besides gemm_tile_m
				 * (elements; NULL with ntile_m 0: none) */
	size_t ntile_m;		/* entries of tile_m */
	double tile_n;		/* elements, columns of each tile_m tile */
	int tile_cover;		/* grouped, efficiency > 0, ntile_m > 0: run
				 * only the tile_m tile that covers the mean
				 * rows a group gets (the smallest at or above
				 * them, the largest past all; tile_m rising),
				 * not the fastest of all tiles */
	double cover_rows;	/* tile_cover: the rows a group the rule
				 * counts, as a multiple of the mean rows a
				 * group gets (a kernel that counts rows it
				 * does not run); 0 = 1 */
	double resident;	/* grouped: the kernel's tiles (CTAs) an SM
				 * holds at once, sharing its math and
				 * overlapping their fills: a wave is units x
				 * resident tiles (gpu_grouped.c); 0 = 1 */
	double tile_Bps;	/* grouped: B/s one tile loads at most (a
				 * kernel whose tiles are latency-bound: a
				 * wave of a tiles loads at min(the level,
				 * a x this)); 0 = no such bound */
};

struct gpu_cost gpu_gemm_q(const struct gpu_spec *g,
			   const struct gpu_gemm_dtypes *q, double m,
			   double n, double k, double batch);

/* One GEMM of a grouped launch: C[m,n] = A[m,k] B[k,n] (elements). */
struct gpu_gemm_group {
	double m, n, k;
};

/* A grouped GEMM (MoE experts): the ngroups GEMMs in one kernel whose
 * tiles share the waves (gpu_grouped.c). Operands in dt, the result as
 * gpu_gemm's. Groups with a zero dimension cost nothing. */
struct gpu_cost gpu_grouped_gemm(const struct gpu_spec *g, enum dtype dt,
				 const struct gpu_gemm_group *groups,
				 size_t ngroups);

/* The same with operands of different widths (gpu_gemm_q's dtypes): the
 * experts' weights in q->b_B, read from HBM when q->b_cold. */
struct gpu_cost gpu_grouped_gemm_q(const struct gpu_spec *g,
				   const struct gpu_gemm_dtypes *q,
				   const struct gpu_gemm_group *groups,
				   size_t ngroups);

/* The fraction of a persistent GEMM's work that sits in the tiles each
 * CTA owns (runs first, before taking tiles from the shared queue):
 * min(c, n) / n with c = g's gemm_persistent_owned_tiles and n the
 * kernel's tiles a CTA (gpu_cost.tiles_per_unit); 0 when c is 0 or
 * n < 1 (not modelled). The engine slows such a kernel beside a collective
 * holding a share S of the units by f = 1/(1-S) + h max(0, 2 - 1/(1-S))
 * (exec.h says why). */
double gpu_gemm_owned_share(const struct gpu_spec *g, double tiles_per_unit);

/* The per-expert path of a grouped GEMM (Transformer Engine's multi-
 * stream cuBLAS, nvte_multi_tensor_gemm: one GEMM kernel per group,
 * issued round-robin on compute streams): what the GPU adds to the pooled
 * cost of gpu_grouped_gemm (whose tiles already share the waves, as the
 * streams' kernels share the SMs) when `kernels` kernels run and the
 * longest stream's chain holds `chain` of them (s):
 *
 *     (chain - 1) t_launch + (kernels - 1) t_k
 *
 * each further launch of a chain waits behind the running one, and every
 * further kernel pays its set-up and drain (gemm_kernel_overhead) on the
 * SMs one after another (gpu_grouped.c). 0 for one kernel. Counts below 1
 * count as 1; negative or non-finite ones are programming errors. */
double gpu_grouped_kernels_s(const struct gpu_spec *g, double kernels,
			     double chain);

/* The same path's other bound (s): a stream's kernels run one after
 * another, each with its own tiles and waves and launch (gpu_gemm_q with
 * q's widths; B from HBM where the groups' whole working set exceeds
 * L2), so the longest stream takes `chain` kernels of the groups' mean
 * time. The per-expert path costs max(gpu_grouped_gemm_q +
 * gpu_grouped_kernels_s, gpu_grouped_chain_s); on one stream (chain =
 * the kernels) the chain binds (gpu_grouped.c). Groups with a zero
 * dimension launch nothing. */
double gpu_grouped_chain_s(const struct gpu_spec *g,
			   const struct gpu_gemm_dtypes *q,
			   const struct gpu_gemm_group *groups,
			   size_t ngroups, double chain);

/* A chunked linear-recurrence kernel (Mamba-2 SSD, flash-linear-
 * attention chunk_*: Triton kernels over chunks of a sequence), written
 * as `batch` products C[m,n] = A[m,k] B[k,n] (elements). */
struct gpu_chunk_shape {
	double m, n, k;		/* the per-(chunk, head) product */
	double batch;		/* (chunk, head) pairs */
	double in_B;		/* B per element of A and B */
	double out_B;		/* B per element of C (4: fp32 states) */
	int backward;		/* a backward kernel (chunk_bwd_efficiency) */
};

/* Its time at the GPU's chunk_fwd/bwd_efficiency of the clock-scaled dt
 * peak against its bytes (gpu_chunk.c); where the GPU has no such
 * efficiency, gpu_gemm of the shape. */
struct gpu_cost gpu_chunk_gemm(const struct gpu_spec *g, enum dtype dt,
			       const struct gpu_chunk_shape *s);

/* Fused attention forward / backward (recomputing scores in backward as
 * flash-attention does). Q, K, V, O and their gradients in dt. The
 * backward's cost is its three kernels' (pre-pass, main, dQ conversion),
 * with three launches. */
struct gpu_cost gpu_attention_fwd(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a);
struct gpu_cost gpu_attention_bwd(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a);

/* Attention in an inference step over a paged KV cache: `count`
 * sequences with q new query tokens each attending (causally) to kv keys,
 * the q new ones last (kv = cached context + q). */
struct gpu_attn_group {
	double count;		/* sequences */
	double q;		/* query tokens per sequence this step */
	double kv;		/* keys per sequence (context + q) */
};

/* The heads of an inference attention call on one GPU. */
struct gpu_attn_heads {
	double heads_q;		/* query heads */
	double heads_kv;	/* key/value heads (1 for absorbed MLA) */
	double head_dim_qk;	/* Q/K per-head dimension */
	double head_dim_v;	/* V per-head dimension */
	double kv_B;		/* B per element of the K/V cache */
	int shared_kv;		/* K and V are one cached vector (absorbed MLA:
				 * the latent, head_dim_qk wide, V its first
				 * head_dim_v elements) */
	double window;		/* sliding window: keys a query sees at most;
				 * 0 = every earlier one */
	int split;		/* decode: how the kernel splits a sequence's
				 * keys over CTAs (enum gpu_trtllm_decode:
				 * NONE the generic fill rule, XQA or
				 * TRTLLM_GEN TensorRT-LLM's kernels') */
	double partition;	/* decode: keys per unit of a fixed-partition
				 * kernel (AMD's ROCm paged attention: 256),
				 * which replaces split's rule; 0: none */
	double stream_rows;	/* prefill: query rows of one KV head a
				 * program holds while it streams every key
				 * it may see (vLLM's Triton unified
				 * attention, BLOCK_M), its K/V read through
				 * L2 once a program; 0: flash tiling */
	double fwd_efficiency;	/* prefill: the kernel's fraction of the
				 * clock-scaled peak; 0: the GPU's
				 * attention.fwd_efficiency */
};

/* Prefill (chunks of q >= 1 tokens, flash attention over the cached
 * prefix and the chunk, one variable-length kernel for all groups) and
 * decode (paged split-KV kernel, for q of one or a few verified draft
 * tokens). Q and O in dt, K/V read at kv_B from HBM. */
struct gpu_cost gpu_attention_prefill(const struct gpu_spec *g, enum dtype dt,
				      const struct gpu_attn_heads *h,
				      const struct gpu_attn_group *grp,
				      int ngroups);
struct gpu_cost gpu_attention_decode(const struct gpu_spec *g, enum dtype dt,
				     const struct gpu_attn_heads *h,
				     const struct gpu_attn_group *grp,
				     int ngroups);

/* A step's prompt groups (pre) and decode groups (dec) in the prefill
 * kernel's one variable-length launch where that kernel does not pack a
 * KV head's query heads (FlashAttention 2's varlen path unless every
 * query is a single token): each decode token and query head is a
 * program of rows_m query rows (the kernel's tile, all but one row
 * empty) reading its KV head's keys from HBM itself. */
struct gpu_cost gpu_attention_mixed(const struct gpu_spec *g, enum dtype dt,
				    const struct gpu_attn_heads *h,
				    const struct gpu_attn_group *pre, int npre,
				    const struct gpu_attn_group *dec, int ndec,
				    double rows_m);

/* A token-level sparse attention kernel that gathers a fixed `slots` keys
 * for every query, whatever its causal length (FlashMLA's sparse prefill:
 * one CTA per query token and tile of `cta_heads` query heads, looping
 * over all top-k index blocks, invalid indices masked, not skipped), at
 * efficiency eta of the dt matrix rate (0: the flash forward's rate).
 * h->heads_q a multiple of cta_heads. */
struct gpu_cost gpu_attention_gather(const struct gpu_spec *g, enum dtype dt,
				     const struct gpu_attn_heads *h,
				     const struct gpu_attn_group *grp,
				     int ngroups, double slots,
				     double cta_heads, double eta);

/* A memory-bound kernel (elementwise, norm, softmax, rotary, cross-
 * entropy, optimizer update): reads and writes these many bytes, does
 * `flops` vector FLOPs; working_set_B picks the level that serves it. */
struct gpu_cost gpu_memory_op(const struct gpu_spec *g, double read_B,
			      double write_B, double flops,
			      double working_set_B);

/* Memory-bound work of `launches` kernels (PyTorch ops run one by one),
 * strided_B of whose bytes go through the generic non-vectorized path
 * (non-contiguous inputs); the rest streams as gpu_memory_op. The
 * strided bytes move at strided_sm_Bps x compute_units (capped at the
 * level's bandwidth) where the GPU sets strided_sm_bandwidth, else at
 * strided_efficiency of the level's bandwidth. PyTorch's
 * elementwise_kernel<128, 4> (CUDALoops.cuh launch_legacy_kernel) runs
 * its four elements a thread one after the other (load, compute, store:
 * the store may alias the next load), so each thread has one element's
 * loads in flight and a GPU moves (threads a SM x bytes an element x
 * SMs) / memory latency: the rate follows the SM count, not the
 * memory's bandwidth. */
struct gpu_cost gpu_memory_ops(const struct gpu_spec *g, double read_B,
			       double write_B, double strided_B,
			       double flops, double working_set_B,
			       double launches);

/* A pass of multi_tensor_apply kernels (PyTorch/apex fused optimizers,
 * gradient norms, unscaling, casts over lists of tensors): a memory-bound
 * op at multi_tensor_efficiency of the serving level's bandwidth, with
 * `launches` kernel launches. */
struct gpu_cost gpu_multi_tensor_op(const struct gpu_spec *g, double read_B,
				    double write_B, double flops,
				    double launches);

/* Seconds an atomic scatter-add kernel (PyTorch index_add_ /
 * scatter_add_, fastAtomicAdd an element) takes beyond streaming the
 * added_B bytes of its source elements: those bytes move at the GPU's
 * scatter_add_bandwidth instead of HBM's streaming rate (0 where the GPU
 * sets none, or where it would be faster). */
double gpu_scatter_add_extra_s(const struct gpu_spec *g, double added_B);

/* Seconds Mamba-2's decode state update (selective_state_update) takes
 * beyond streaming the state_B bytes of recurrent state it reads and
 * writes: those bytes move at the GPU's ssm_update_bandwidth instead of
 * HBM's streaming rate (0 where the GPU sets none, or where it would be
 * faster). */
double gpu_ssm_update_extra_s(const struct gpu_spec *g, double state_B);

/* FLOPs of attention forward (backward = 0) or backward (= 1), causal
 * masking included. */
double gpu_attention_flops(const struct gpu_attn_shape *a, int backward);

/* Bytes a job can use on one GPU. */
double gpu_usable_memory_B(const struct gpu_spec *g);

#endif
