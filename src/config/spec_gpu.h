/*
 * spec_gpu.h - a GPU as configured: compute, memory hierarchy, clocks.
 *
 * Loaded from configs/gpus/NAME.yaml through gpu_schema (spec_gpu.c),
 * every number with its unit in the YAML and its source in a comment
 * there. Peaks are the vendor's dense (non-sparse) figures; what is
 * achievable is derived by the GPU model (src/gpu) from clocks and
 * efficiencies held here as data.
 *
 * Depends on schema.h only.
 */
#ifndef LLMSIM_CONFIG_SPEC_GPU_H
#define LLMSIM_CONFIG_SPEC_GPU_H

#include <stdint.h>

#include "schema.h"

/* Element types a kernel can compute in. */
enum dtype {
	DTYPE_FP32,
	DTYPE_TF32,
	DTYPE_BF16,
	DTYPE_FP16,
	DTYPE_FP8,
	DTYPE_MXFP8,
	DTYPE_MXFP6,
	DTYPE_MXFP4,
	DTYPE_NVFP4,		/* NVIDIA FP4: E2M1 in blocks of 16, one FP8
				 * (E4M3) scale per block (and one FP32 per
				 * tensor) */
	DTYPE_COUNT
};

/* "fp32", "tf32", "bf16", ...; NULL-terminated. */
extern const char *const dtype_names[DTYPE_COUNT + 1];
/* Other spellings of dtype_names (PyTorch's, nccl-tests'), as
 * {alias, name} pairs, NULL-terminated: "bfloat16" is "bf16". */
extern const char *const dtype_aliases[];

/* Storage bytes per element, block scales included (MX formats carry one
 * 8-bit E8M0 scale per 32 elements: mxfp4 = 4/8 + 1/32 B; nvfp4 one
 * 8-bit E4M3 scale per 16: 4/8 + 1/16 B). */
double dtype_bytes(enum dtype t);

/* The one spelling of a GPU architecture (gpu arch, framework
 * elementwise.grouped_gemm_fwd_kernel_arch): "sm" and the compute
 * capability's digits for NVIDIA (sm90, sm100), "gfx" and hex digits for
 * AMD (gfx942), zen and digits for an AMD CPU core standing in for a GPU
 * (configs/cpus). The vendor the name belongs to (GPU_NVIDIA, GPU_AMD), or
 * -1 when a is not such a name. */
int gpu_arch_vendor(const char *a);

struct gpu_spec;

/* Whether g's arch is a (a name as gpu_arch_vendor takes; 0 when either
 * is absent). Every architecture test goes through it. */
int gpu_arch_is(const struct gpu_spec *g, const char *a);

/* 1 for the formats Transformer Engine trains under its fp8 autocast
 * (fp8, the MX formats, nvfp4), 0 for the 16- and 32-bit ones. */
int dtype_low_precision(enum dtype t);

enum gpu_vendor {
	GPU_NVIDIA,
	GPU_AMD
};

struct gpu_mem_level {
	double capacity_B;		/* B; 0 = level absent */
	double bandwidth_Bps;		/* B/s, peak */
	double efficiency;		/* achievable fraction of bandwidth */
};

/* How the fused attention kernels (flash-attention style) run. */
struct gpu_attention_spec {
	double fwd_efficiency;		/* fraction of the clock-scaled peak, forward; 0 = gemm efficiency */
	double bwd_efficiency;		/* fraction of the clock-scaled peak, backward; 0 = gemm efficiency */
	int64_t block_q;		/* query rows per work unit (thread block); 0 = no occupancy model */
	int64_t fwd_q_blocks;		/* query blocks of block_q rows one forward unit of the
					 * vendor kernel holds, sharing one key-block range; 0 = 1 */
	int64_t fwd_q_blocks_max_head_dim;	/* the largest query/key head dim whose forward
						 * kernel holds fwd_q_blocks; 0 = any */
	double masked_tile_cost;	/* unmasked tiles of time a causal-diagonal (masked) tile takes; >= 1 */
	int64_t mma_rows;		/* query rows one attention MMA computes: a decode
					 * kernel pads its rows to a multiple */
	double flash2_fwd_efficiency;	/* FlashAttention-2 kernels, forward; 0 = fwd_efficiency */
	double flash2_bwd_efficiency;	/* FlashAttention-2 kernels, backward; 0 = bwd_efficiency */
	double flash_triton_fwd_efficiency;	/* FlashAttention's pre-MLIR Triton kernel, forward; 0 = flash2's */
	double flash_triton_bwd_efficiency;	/* the same, backward; 0 = flash2's */
	double sdpa_flash_fwd_efficiency;	/* PyTorch SDPA's vendored FlashAttention-2, forward; 0 = flash2's */
	double sdpa_flash_bwd_efficiency;	/* the same, backward; 0 = flash2's */
	double ck_tile_fwd_efficiency;	/* Composable Kernel's generic CK-tile kernels, forward; 0 = fwd_efficiency */
	double ck_tile_bwd_efficiency;	/* the same, backward; 0 = bwd_efficiency */
	double ck_tile_bwd_masked_tile_cost;	/* the CK-tile backward's masked tile; 0 = masked_tile_cost */
	double exp_per_clock;		/* exponentials per clock per SM/CU (the SFU's
					 * MUFU.EX2 rate); 0 = no head-dim term */
	int64_t calib_head_dim;		/* head dim the efficiencies were measured at */
	int softmax_overlap;		/* the softmax runs beside the tile's matrix
					 * products (max law), not after them */
	double lowp_softmax_per_clock;	/* scores per clock per SM/CU the FP8/MXFP8
					 * kernel's softmax sustains under softmax_overlap;
					 * 0 = exp_per_clock's */
	int fp8_bwd_skips_window;	/* the FP8 backward skips the key tiles outside a
					 * sliding window (0: it computes every causal tile) */
	int fwd_pads_v;			/* the vendor kernel's forward runs a value head dim
					 * narrower than the query/key one at the latter */
	int bwd_pads_v;			/* the same, backward */
	int fp8_bwd_keeps_v;		/* the FP8/MXFP8 vendor backward runs a narrower
					 * value head dim as it is, bwd_pads_v or not */
	double fp8_fwd_efficiency;	/* the vendor kernel in per-tensor FP8, forward: fraction of the
					 * clock-scaled fp8 peak; 0 = the bf16 kernel's rates */
	double fp8_bwd_efficiency;	/* the same, backward */
	double mxfp8_fwd_efficiency;	/* the vendor kernel in MXFP8, forward: fraction of the clock-scaled
					 * mxfp8 peak; 0 = fp8_fwd_efficiency */
	double mxfp8_bwd_efficiency;	/* the same, backward; 0 = fp8_bwd_efficiency */
	int trtllm_decode;		/* enum gpu_trtllm_decode: the decode kernel
					 * TensorRT-LLM runs on this GPU, which splits
					 * the keys by its own rule */
	double xqa_hmma_unit_s;		/* s; the least time of a work unit of XQA's
					 * mma.sync kernel (Hopper with a 16-bit KV
					 * cache); 0 = none */
	double trtllm_ctx16_eff;	/* TensorRT-LLM's context FMHA in 16 bits
					 * (engine prefill_kernel trtllm): of
					 * the clock-scaled bf16 peak; 0: the
					 * flash kernel's fwd_efficiency */
	double trtllm_mla_eff;		/* TensorRT-LLM's MLA generation kernel
					 * (absorbed MLA decode), 16-bit KV cache:
					 * fraction of the clock-scaled bf16 peak;
					 * 0 = the flash rates */
	double trtllm_mla_fp8_eff;	/* the same, FP8 KV cache: fraction of the
					 * clock-scaled fp8 peak; 0 = the flash rates */
	double trtllm_mla_unit_s;	/* s; that kernel's fixed time a sequence
					 * on one SM, the SMs sharing them */
};

/* TensorRT-LLM's decode attention kernel family on a GPU (its split of a
 * sequence's keys over CTAs, gpu_attn_infer.c). */
enum gpu_trtllm_decode {
	GPU_TRTLLM_DECODE_NONE,		/* not set: the generic fill rule */
	GPU_TRTLLM_DECODE_XQA,		/* XQA (Hopper and earlier) */
	GPU_TRTLLM_DECODE_TRTLLM_GEN,	/* trtllm-gen FMHA (Blackwell) */
	GPU_TRTLLM_DECODE_COUNT
};

extern const char *const gpu_trtllm_decode_names[];

/* Weight-only quantized MoE kernels (B in 4 or 8 bits dequantized to the
 * activations' 16-bit type in the mainloop): the engine names one
 * (spec_engine.h weight_only_moe_kernel, mxfp4_moe_kernel), the GPU says
 * what it reaches (weight_only_moe_efficiency). */
enum gpu_wo_kernel {
	GPU_WO_MARLIN,		/* vLLM's fused_marlin_moe (IST-DASLab Marlin,
				 * mma.sync): W4A16, W8A16 (FP8 on Ampere) */
	GPU_WO_TRITON_MX,	/* triton_kernels matmul_ogs (OpenAI's MXFP4
				 * MoE kernels, vLLM's TRITON mxfp4 backend) */
	GPU_WO_TRITON_TRTLLM,	/* TensorRT-LLM's TritonFusedMoE (moe_config
				 * backend TRITON: the same matmul_ogs under
				 * TensorRT-LLM's MoE module) */
	GPU_WO_KERNELS
};

extern const char *const gpu_wo_kernel_names[];

/* The clock (Hz, in sustained_matrix_clock's terms) of the op tables a
 * fitted key was fitted on; 0 = not stated (a fixed time is then taken at
 * the step's clock). configs/gpus/README.md "Clock basis". */
struct gpu_fitted_clock {
	double flashmla_sparse_eff_hz;
	double triton_moe_fp8_block_rate_hz;
	double triton_moe_default_eff_hz;
	double weight_only_moe_eff_hz;		/* every kernel of the section */
	double trtllm_ctx16_eff_hz;
	double trtllm_mla_eff_hz;
	double trtllm_mla_fp8_eff_hz;
	double trtllm_mla_unit_hz;
	double xqa_hmma_unit_hz;
};

struct gpu_spec {
	const char *name;			/* preset name */
	int vendor;				/* enum gpu_vendor */
	const char *arch;			/* "sm90", "gfx942"; compare
						 * with gpu_arch_is */
	int64_t compute_units;			/* CUs (AMD) or SMs (NVIDIA) */
	double max_clock_hz;			/* Hz, boost / peak engine clock */
	double matrix_clock_hz;			/* Hz, clock the matrix peaks are quoted at */
	double sustained_matrix_clock_hz;	/* Hz, median clock under GEMM load */
	/* Board power (gpu_power.c): 0 = not modelled. */
	double burst_matrix_clock_hz;		/* Hz, sustained_matrix_clock's counterpart while
						 * the board is under its power limit: the same
						 * large GEMM's time at the limit over its time
						 * below it, times sustained_matrix_clock */
	double burst_gemm_power;		/* a GEMM's board power at burst_matrix_clock,
						 * fraction of the power limit (> 1) */
	double stream_power;			/* an HBM-bound kernel's board power, fraction
						 * of the power limit (< 1) */
	double idle_power;			/* the idle board's power, fraction of the
						 * power limit (< 1) */
	double power_window_s;			/* s, the window the limiter averages power
						 * over */
	double matrix_peak_flops[DTYPE_COUNT];	/* FLOP/s dense at matrix_clock; 0 = unsupported */
	double vector_fp32_flops;		/* FLOP/s, non-matrix FP32; 0 = not modelled */
	double gemm_efficiency;			/* fraction of clock-scaled peak a large, well-shaped GEMM reaches */
	double gemm_efficiency_dtype[DTYPE_COUNT]; /* fraction, per dtype; after loading every entry is set
						    * (an absent one takes gemm_efficiency) */
	struct schema_int_list gemm_tile_m;	/* elements, output-tile rows the GEMM library picks from */
	struct schema_int_list gemm_tile_n;	/* elements, output-tile columns, paired with gemm_tile_m;
						 * empty = no tile model */
	double gemm_tile_overhead_s;		/* s per wave of tiles: pipeline fill and epilogue sync */
	double gemm_kernel_overhead_s;		/* s per GEMM kernel: a persistent kernel's set-up and drain */
	int64_t gemm_accumulator_stages;	/* accumulator buffers per SM of the persistent GEMM kernels:
						 * 1, or 2 (one tile's epilogue runs while the next tile's
						 * mainloop fills the other buffer) */
	double gemm_persistent_owned_tiles;	/* tiles each CTA of the persistent GEMM kernels owns
						 * before taking from a shared queue (slowdown beside
						 * kernels holding SMs: gpu_gemm.c); 0 = not modelled */
	int fp8_gemm_any_layout;		/* per-tensor FP8 GEMMs take any operand layout
						 * (not only TN): an FP8 cast writes no
						 * transposed copy */
	int64_t gemm_split_k_kernels;		/* kernels a split-K GEMM launches: 1 (the slices are summed
						 * in the GEMM kernel) or 2 (the library sums them in a
						 * second kernel) */
	double gemm_tile_Bps[DTYPE_COUNT];	/* B/s, per compute dtype: the most one output tile's CTA
						 * streams its operands at in the library's GEMMs, which
						 * then never split k; 0 = no such bound, split-K allowed */
	double cutlass_moe_tile_m[DTYPE_COUNT];	/* elements, fewest output-tile rows of the CUTLASS
						 * fused-MoE grouped GEMM per compute dtype;
						 * 0 = any gemm_tile_m */
	double cutlass_moe_row_time_s[DTYPE_COUNT]; /* s per row, the whole GPU: the CUTLASS fused MoE's
						     * expand and activation kernels at the experts'
						     * compute dtype take at least rows x this
						     * (a per-row expert search); 0 = bytes only */
	double weight_only_moe_eff[GPU_WO_KERNELS]; /* per weight-only MoE kernel (enum
						     * gpu_wo_kernel): the fraction of the clock-
						     * scaled bf16 peak its dequantizing mainloop
						     * reaches; 0 = not known (the bf16 GEMM rate) */
	double weight_only_linear_eff;		/* the engine's weight-only dense GEMM kernel
						 * (spec_engine.h weight_only_linear_kernel:
						 * vLLM's Marlin linear): the fraction of the
						 * clock-scaled bf16 peak it reaches past a
						 * few rows; 0 = not known (the bf16 GEMM) */
	struct gpu_attention_spec attention;	/* fused attention kernels */
	double chunk_fwd_efficiency;		/* fraction of the clock-scaled bf16 peak that the
						 * Triton chunked linear-recurrence kernels (Mamba-2
						 * SSD, flash-linear-attention chunk_*) reach in
						 * forward, in the FLOPs of their per-chunk products
						 * (gpu_chunk.c); 0 = not measured: the GEMM path */
	double chunk_bwd_efficiency;		/* the same for their backward kernels; 0 = the
						 * forward's */
	struct gpu_mem_level hbm;		/* device memory */
	double hbm_usable_B;			/* B usable by the job (device-reported minus runtime reserve) */
	struct gpu_mem_level llc;		/* last-level cache (Infinity Cache / MALL); may be absent */
	struct gpu_mem_level l2;		/* L2 a kernel can count on for reuse; may be absent */
	double lds_per_cu_B;			/* B, LDS / shared memory per CU or SM */
	double kernel_launch_s;			/* s, per-kernel launch and dispatch overhead */
	double kernel_launch_graph_s;		/* s, the same for a kernel replayed from a
						 * captured CUDA/HIP graph */
	double p2p_channel_send_Bps;		/* B/s, one p2p channel's send warps copying a
						 * send's steps into the peer's FIFO over the
						 * GPU's links (network/pipe.c "p2p"); 0 = not
						 * modelled (the links alone bound a send) */
	double p2p_launch_s;			/* s, the collective library's point-to-point
						 * kernel's fixed cost on this GPU, before its first
						 * step (network/algo.c "p2p"); 0 = the library's
						 * p2p base */
	double p2p_peer_s;			/* s, what each peer beyond the first adds to that
						 * kernel's fixed cost (its send and receive
						 * tasks); 0 = nothing */
	double collective_launch_s;		/* s, fixed cost of a collective library's LL
						 * ring kernel on this GPU before its first step
						 * (launch, first flag exchange); 0 = the
						 * library's base */
	double collective_ll_step_s;		/* s, one LL ring step between two GPUs of its
						 * scale-up fabric (data+flag store, the peer's
						 * poll); 0 = the library's hop_scale_up */
	double collective_ll_channel_Bps;	/* B/s of data one ring LL channel (thread
						 * block) moves in each of its primitive calls
						 * (send, receive, forward) inside one node; 0 =
						 * the library's channel_busbw and caps */
	double multi_tensor_efficiency;		/* fraction of streaming bandwidth multi_tensor_apply
						 * kernels (fused optimizers, norms, casts) reach */
	double expert_bwd_efficiency;		/* fraction of the modelled rate the per-expert
						 * BLAS kernels of a multi-stream grouped GEMM's
						 * backward (dgrad, wgrad) reach */
	double mx_cast_efficiency;		/* fraction of streaming bandwidth an MXFP8 cast
						 * writing the column-wise layout reaches */
	double nvfp4_cast_efficiency;		/* fraction of streaming bandwidth an NVFP4
						 * quantize (amax and cast, both layouts)
						 * reaches */
	double fp8_cast_transpose_efficiency;	/* fraction of streaming bandwidth a
						 * per-tensor FP8 cast writing the data
						 * and its transpose reaches */
	double fp8_fast_accum_efficiency;	/* fraction of clock-scaled fp8 peak a large GEMM
						 * reaches with Hopper's fast accumulation (no
						 * fp32 promotion, cuBLASLt FAST_ACCUM 1); 0 = the
						 * fp8 gemm_efficiency_dtype (one mode) */
	double fp8_block_gemm_rate;		/* fraction of the fp8 GEMM math rate a GEMM on
						 * block-scaled fp8 operands (1x128 and 128x128
						 * scales) reaches; 1 = as per-tensor fp8 */
	double cutlass_moe_fp8_block_rate;	/* fraction of the fp8 GEMM math rate the CUTLASS
						 * fused MoE's grouped GEMMs reach on block-scaled
						 * fp8 experts (DeepSeek's 128 x 128); 1 = as
						 * per-tensor fp8 */
	double triton_moe_fp8_block_rate;	/* the same for vLLM's Triton fused MoE
						 * (engine fp8_block_moe_kernel: triton); 1 =
						 * as per-tensor fp8 */
	double triton_moe_default_eff;		/* fraction of the clock-scaled 16-bit peak
						 * vLLM's Triton fused_moe reaches on 16-bit
						 * experts when no tuned config file names
						 * their (E, N) for this GPU (get_default_
						 * config's tile; engine triton_moe_configs);
						 * 0 = the GPU's GEMM rate */
	struct schema_int_list triton_moe_untuned;	/* (E, N) pairs, flat: the
						 * 16-bit expert shapes (local experts,
						 * intermediate size a GPU) vLLM ships no
						 * tuned fused_moe config file for on this
						 * GPU; others are taken to be tuned */
	struct schema_int_list triton_moe_fp8_block_tuned; /* 8-tuples, flat:
						 * (E, N, M_lo, M_hi, BLOCK_SIZE_M, _N,
						 * _K, num_stages): vLLM's tuned fused_moe
						 * file for block-fp8 experts of that
						 * (E, N) on this GPU runs that tile from
						 * M_lo to M_hi tokens (nearest key);
						 * outside, and
						 * for shapes not listed, the GPU's own
						 * tiles */
	double triton_moe_tile_Bps;		/* B/s, the most one CTA of that tuned
						 * tile loads (latency-bound: the few
						 * CTAs of a step of a few tokens); 0 =
						 * no such bound */
	double flashmla_sparse_heads;		/* query heads FlashMLA's sparse prefill kernel
						 * computes a multiple of (engine dsa_kernel:
						 * flashmla_sparse); 0 = the heads as they are */
	double flashmla_sparse_efficiency;	/* fraction of the bf16 matrix rate that
						 * kernel reaches over its key slots; 0 = the
						 * flash forward's rate */
	double strided_efficiency;		/* fraction of streaming bandwidth PyTorch's generic
						 * (non-contiguous, non-vectorized) elementwise path reaches */
	double strided_sm_Bps;			/* B/s per SM the same path reaches where it is
						 * bound by loads in flight per SM, not by the
						 * memory; 0 = use strided_efficiency */
	double l1_hit_cycles;			/* SM clock cycles of a dependent global
						 * load hitting L1; 0 = not modelled */
	double l2_hit_cycles;			/* the same hitting L2; 0 = not modelled */
	double scatter_add_Bps;			/* B/s of elements an atomic scatter-add
						 * (PyTorch index_add_ / scatter_add_) adds
						 * into its output; 0 = they stream */
	double ssm_update_Bps;			/* B/s of state Mamba-2's decode state
						 * update (selective_state_update) reads
						 * and writes; 0 = it streams */
	struct gpu_fitted_clock fitted_clock;	/* the clock of the tables some keys
						 * were fitted on (spec_gpu_clock.c) */
};

extern const struct schema gpu_schema;
/* Its `fitted_clock` section and its checks (spec_gpu_clock.c): 0, or -1
 * after reporting. */
extern const struct schema gpu_fitted_clock_schema;
int gpu_fitted_clock_check(const struct gpu_spec *g,
			   const struct schema_at *at, struct diag *d);
/* Its `attention` section (spec_gpu_attn.c). */
extern const struct schema gpu_attention_schema;

#endif
