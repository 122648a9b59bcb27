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
 * model of `layers` layers (stages <= layers): even when stages divides
 * layers; otherwise the embedding and the LM head count as one layer each
 * and the layers + 2 units are spread evenly, the remainder going to the
 * middle stages first, so the first and last stages get fewer layers
 * (Megatron-Core's account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split).
 */
void split_even(int64_t layers, int64_t stages, int64_t *out);

/* The job's split: parallelism.pp_layers when given, else split_even. */
void split_layers(const struct job_spec *j, int64_t *out);

/* First layer (model order) of virtual stage vs given the split. */
int64_t split_first_layer(const int64_t *split, int64_t vs);

#endif
