/*
 * fixture.h - a toy GPU with round numbers for the GPU model's tests.
 *
 * Every expected number in tests/unit/gpu is derived from these values:
 *
 *   units U = 100, one 128 x 128 output tile, no wave overhead, no launch
 *   bf16: peak 1000 TFLOP/s at 2000 MHz, sustained 1000 MHz, efficiency
 *         0.8 -> R = 1000 x 0.5 x 0.8 = 400 TFLOP/s, R_u = 4 TFLOP/s
 *   fp8:  peak 2000 TFLOP/s, efficiency 0.5 -> R = 500 TFLOP/s
 *   mxfp4 and the others: unsupported
 *   vector fp32 10 TFLOP/s
 *   L2  10 MB,  40 TB/s x 0.5 = 20 TB/s
 *   LLC 100 MB, 20 TB/s x 0.5 = 10 TB/s
 *   HBM 100 GB, 10 TB/s x 0.5 =  5 TB/s, 90 GB usable
 *   attention: forward 0.5, backward 0.25 of the clock-scaled peak,
 *              128-row work units, a masked tile as dear as another
 */
#ifndef LLMSIM_TEST_GPU_FIXTURE_H
#define LLMSIM_TEST_GPU_FIXTURE_H

#include <stddef.h>

#include "gpu/gpu.h"

/* Fill *g with the toy GPU (static storage for the tile lists). */
void gpu_fixture_toy(struct gpu_spec *g);

/* Relative closeness: |a - b| <= rel * |b|. */
int gpu_fixture_near(double a, double b, double rel);

/* The attention shape the attention tests share: 25 heads (q = kv) of
 * 4096 at head dim 128, batch 1: 25 x 4096 / 128 = 800 work units, 8
 * full waves of the toy's 100. */
struct gpu_attn_shape gpu_fixture_attn_shape(int causal);

/* Run the GPU schema's cross-field check on *g, its messages written into
 * buf (len bytes, NUL-terminated); asserts that a negative return comes
 * with errors and returns the check's result. */
int gpu_fixture_check(struct gpu_spec *g, char *buf, size_t len);

#endif
