/*
 * footprint.h - memory per GPU: weights, gradients, optimizer states (by
 * ZeRO stage), activations (by recompute mode and the microbatches the
 * pipeline schedule keeps in flight), workspace; and whether it fits.
 *
 * The arithmetic is in footprint.c's header. Depends on layer.h,
 * sched.h, spec_job.h; the usable memory comes from the caller (the GPU
 * model), so this module needs no GPU code.
 */
#ifndef LLMSIM_MODELS_FOOTPRINT_H
#define LLMSIM_MODELS_FOOTPRINT_H

#include <stdint.h>

#include "layer.h"

struct job_spec;
struct sched_live;

struct footprint {
	double weights_B;	/* B, parameters held (16-bit, sharded by ZeRO-3) */
	double grads_B;		/* B, gradient buffers */
	double optimizer_B;	/* B, master weights and optimizer states */
	double activations_B;	/* B, peak of stored activations plus the transient of one backward */
	double workspace_B;	/* B, framework workspace and gathered ZeRO-3 parameters */
	double peak_B;		/* B, sum of the above */
	double usable_B;	/* B, what the job may use on the GPU */
	int fits;		/* peak_B <= usable_B */
	int64_t rank;		/* pipeline rank with the largest peak */
	double params;		/* parameters of that rank's GPU */
};

/* Bytes one transformer layer keeps for its backward, one microbatch:
 * a dense one, or one of kind k (MoE MLP, MLA from d). */
double footprint_layer_act_B(const struct layer_dims *d,
			     enum layer_recompute rc);
double footprint_kind_act_B(const struct layer_dims *d,
			    const struct layer_kind *k,
			    enum layer_recompute rc);

/* Extra bytes kept by the first virtual stage (embedding) and by the last
 * (final norm, LM head input, fp32 softmax of the loss). */
double footprint_embed_act_B(const struct layer_dims *d);
double footprint_head_act_B(const struct layer_dims *d);

/* Model-state bytes per parameter, unsharded (ZeRO divides them). */
struct footprint_param_bytes {
	double weights_B;	/* B, working weights (layer_base_dtype) */
	double grads_B;		/* B, gradient buffer (framework grad_dtype) */
	double master_B;	/* B, fp32 master copy of sub-fp32 weights; 0 = none */
	double states_B;	/* B, optimizer states (Adam 2, SGD 1 per parameter) */
};

/* The job's model-state bytes per parameter: what the memory model holds
 * and the optimizer step reads and writes. */
void footprint_param_bytes(const struct job_spec *j,
			   struct footprint_param_bytes *out);

/* Whether the job keeps only its shard of the gradients: ZeRO 3, or
 * ZeRO 2 in a framework without a full gradient buffer (framework
 * grad_buffer_full). */
int footprint_grads_sharded(const struct job_spec *j);

/* Model-state bytes per parameter of a GPU's share (weights, gradients,
 * optimizer) for the job's dtype, framework and ZeRO stage: dense
 * parameters sharded over dp x cp, routed experts over edp. */
void footprint_per_param(const struct job_spec *j, double *w_B,
			 double *g_B, double *o_B);
void footprint_expert_per_param(const struct job_spec *j, double *w_B,
				double *g_B, double *o_B);

/* The kind of layer i of the job's model (MoE, window, chunk, linear
 * attention, block pattern, NoPE) as layer.c prices it. */
struct layer_kind footprint_kind_of(const struct job_spec *j, int64_t i);

/* Parameters of layer `layer` (whole model, not divided by any degree):
 * dense (attention, norms, router, shared experts, dense MLP) and routed
 * experts (all E). */
void footprint_layer_params(const struct job_spec *j,
			    const struct layer_dims *d, int64_t layer,
			    double *dense, double *experts);

/* The same for one multi-token-prediction module. */
void footprint_mtp_params(const struct job_spec *j,
			  const struct layer_dims *d, double *dense,
			  double *experts);

/* Parameters one token uses: every dense one and k of the E experts of
 * each MoE layer (the "active" count of MoE model cards, without MTP). */
double footprint_active_params(const struct job_spec *j);

/* Parameters one GPU of pipeline rank `rank` holds: dense and experts. */
void footprint_rank_params_split(const struct job_spec *j,
				 const struct layer_dims *d,
				 const int64_t *split, int64_t rank,
				 double *dense, double *experts);

/* The units a model chunk is made of. */
enum footprint_unit {
	UNIT_EMBED,		/* input embedding (and learned positions) */
	UNIT_LAYER,		/* one transformer layer */
	UNIT_HEAD		/* final norm and LM head */
};

/* Parameters of one unit, whole model (not divided by tp). The tie rule:
 * with tied embeddings the LM head's V h matrix is the embedding's, so
 * the head leaves it out when the embedding is counted in the same sum
 * (with_embedding: the whole model, or a GPU holding both ends, pp = 1);
 * on pp > 1 the first and last stages each hold a copy. */
double footprint_unit_params(const struct job_spec *j,
			     const struct layer_dims *d, enum footprint_unit u,
			     int with_embedding);

/* Parameters of the whole model (tied embedding counted once). */
double footprint_model_params(const struct job_spec *j);

/* Parameters of the routed experts of the whole model (no MTP module). */
double footprint_expert_params(const struct job_spec *j);

/* Parameters held by one GPU of pipeline rank `rank` (split: layers per
 * virtual stage). */
double footprint_rank_params(const struct job_spec *j,
			     const struct layer_dims *d, const int64_t *split,
			     int64_t rank);

/* Extra warm-up forwards the job's schedule runs on every rank
 * (sched_rank_ex's extra: MoE all-to-all overlap). */
int64_t footprint_extra_warmup(const struct job_spec *j);

/* Peak activation bytes of pipeline rank `rank` over its schedule, whose
 * live vectors (sched.h) are live; -1 when out of memory. */
double footprint_rank_act_B(const struct job_spec *j,
			    const struct layer_dims *d, const int64_t *split,
			    int64_t rank, const struct sched_live *live);

/* Activations one microbatch keeps on virtual stage vs from its forward
 * to its backward (the unit footprint_rank_act_B walks the schedule
 * with). */
double footprint_stage_act_B(const struct job_spec *j,
			     const struct layer_dims *d, const int64_t *split,
			     int64_t vs);

/* The footprint of the worst pipeline rank against usable_B. Returns 0,
 * or -1 when out of memory. */
int footprint_job(const struct job_spec *j, double usable_B,
		  struct footprint *out);

/* footprint_job with each pipeline rank's live vectors given (live[r]
 * for rank r = sched_live_init of the job's schedule, pp, vpp,
 * microbatches of one schedule run (job_microbatches /
 * job_schedule_runs), r and footprint_extra_warmup), so a caller costing many layouts that share a
 * schedule computes them once (the planner); NULL computes them. */
int footprint_job_live(const struct job_spec *j, double usable_B,
		       const struct sched_live *live, struct footprint *out);

/* footprint_job(), and the footprint of every pipeline rank r < nstages
 * in stages[r] (each against usable_B, its rank in .rank). */
int footprint_job_stages(const struct job_spec *j, double usable_B,
			 struct footprint *out, struct footprint *stages,
			 int64_t nstages);

#endif
