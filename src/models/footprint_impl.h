/*
 * footprint_impl.h - what footprint.c (one layer's activations) gives
 * footprint_rank.c (a rank's and the job's footprint).
 */
#ifndef LLMSIM_MODELS_FOOTPRINT_IMPL_H
#define LLMSIM_MODELS_FOOTPRINT_IMPL_H

#include "layer.h"

/* Which kinds of MLP a rank's layers hold (bits of footprint_rank.c
 * stage_act_B's kinds). */
enum { HAS_DENSE = 1, HAS_MOE = 2 };

/* Live only while one layer's backward runs: what the largest layer the
 * rank holds (kinds, HAS_ bits) remakes. */
double footprint_transient_act_B(const struct layer_dims *d,
				 enum layer_recompute rc, unsigned kinds);

#endif
