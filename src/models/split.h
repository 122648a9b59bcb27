/*
 * split.h - how the layers of a model are split over pipeline stages.
 *
 * There are S = pp * vpp virtual stages; virtual stage c * pp + r is model
 * chunk c of pipeline rank r. The first virtual stage also holds the input
 * embedding and the last one the final norm, LM head and loss.
 *
 * Depends on spec_job.h.
 */
#ifndef LLMSIM_MODELS_SPLIT_H
#define LLMSIM_MODELS_SPLIT_H

#include <stdint.h>

struct job_spec;

/*
 * Layers of each of `stages` virtual stages into out[0..stages-1] for a
 * model of `layers` layers (stages <= layers), Megatron's way: even when
 * stages divides layers; else, when stages divides layers + 2, the
 * embedding and the LM head count as one layer each (Megatron-Core's
 * account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split); else the Megatron-Bridge recipes'
 * layouts: ceil(layers / stages) on every stage, the last and then the
 * first giving up the surplus (split.c has the sources and the fallback).
 */
void split_even(int64_t layers, int64_t stages, int64_t *out);

/* floor(layers / stages) a stage, the first layers mod stages stages
 * one more (NeMo AutoModel's pipelining). */
void split_front(int64_t layers, int64_t stages, int64_t *out);

/* The job's split: parallelism.pp_layers when given, else its
 * framework's (framework.pp_split: split_even or split_front). */
void split_layers(const struct job_spec *j, int64_t *out);

/* The virtual stage holding the MTP modules: the stage of the m of
 * parallelism.pp_layout, else the last (pp * vpp - 1). */
int64_t split_mtp_stage(const struct job_spec *j);

/* First layer (model order) of virtual stage vs given the split. */
int64_t split_first_layer(const int64_t *split, int64_t vs);

#endif
