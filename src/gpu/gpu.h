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
 * models (src/models composes these costs into a step).
 *
 * Depends on the core (spec_gpu.h) only.
 */
#ifndef LLMSIM_GPU_H
#define LLMSIM_GPU_H

#include "../spec_gpu.h"

enum gpu_bound {
	GPU_BOUND_COMPUTE,	/* matrix or vector rate */
	GPU_BOUND_MEMORY,	/* bandwidth of the serving level */
	GPU_BOUND_LAUNCH	/* launch overhead dominates */
};

/* The cost of one kernel. */
struct gpu_cost {
	double time_s;		/* s, including launch overhead */
	double flops;		/* FLOP executed */
	double bytes;		/* B moved to/from the serving level */
	int bound;		/* enum gpu_bound */
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
};

/* Vendor dense peak for dtype (FLOP/s); 0 when unsupported. MFU is
 * measured against this. */
double gpu_peak_flops(const struct gpu_spec *g, enum dtype dt);

/* The matrix rate a large, well-shaped GEMM sustains (FLOP/s): peak
 * scaled by sustained/quoted clock and by gemm_efficiency. */
double gpu_sustained_flops(const struct gpu_spec *g, enum dtype dt);

/* C[m,n] = A[m,k] B[k,n], `batch` independent GEMMs of that shape,
 * operands and result in dt. */
struct gpu_cost gpu_gemm(const struct gpu_spec *g, enum dtype dt, double m,
			 double n, double k, double batch);

/* Fused attention forward / backward (recomputing scores in backward as
 * flash-attention does). */
struct gpu_cost gpu_attention_fwd(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a);
struct gpu_cost gpu_attention_bwd(const struct gpu_spec *g, enum dtype dt,
				  const struct gpu_attn_shape *a);

/* A memory-bound kernel (elementwise, norm, softmax, rotary, cross-
 * entropy, optimizer update): reads and writes these many bytes, does
 * `flops` vector FLOPs; working_set_B picks the level that serves it. */
struct gpu_cost gpu_memory_op(const struct gpu_spec *g, double read_B,
			      double write_B, double flops,
			      double working_set_B);

/* Bytes a job can use on one GPU. */
double gpu_usable_memory_B(const struct gpu_spec *g);

#endif
