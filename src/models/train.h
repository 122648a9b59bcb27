/*
 * train.h - the step program of one training step: every simulated
 * rank's kernels, tensor-, context-, expert-, pipeline- and data-parallel
 * collectives and optimizer step, on ordered streams with their
 * dependencies (exec.h).
 *
 * Streams of each simulated rank: compute, tp (tensor-parallel and
 * expert tensor-parallel collectives), cp (context-parallel K/V
 * exchange), ep (expert dispatch and combine), pp_fwd and pp_bwd (activations to the next stage,
 * gradients to the previous), pp_fwd_wrap and pp_bwd_wrap (the same
 * between the last and the first rank, for the interleaved schedule's
 * next chunk), dp (gradient reduction) and dp_gather (parameter
 * all-gathers), dp_expert and dp_gather_expert (the same for the routed
 * experts' buckets over edp when they overlap compute: their own chain,
 * train_dp.c), offload (activation copies to and from host memory,
 * training.cpu_offload_layers), and host: the CPU thread that issues the rank's kernels
 * and collectives (train.c's host model, when the framework has one). Collectives carry real global GPU ids and the
 * number of identical groups they stand for (layout.h), so the fabric
 * model sees the traffic of the whole cluster.
 *
 * Depends on exec.h, gpu.h, spec_job.h and the other models modules.
 */
#ifndef LLMSIM_MODELS_TRAIN_H
#define LLMSIM_MODELS_TRAIN_H

#include <stdint.h>

#include "engine/exec.h"
#include "config/spec_job.h"
#include "layer.h"
#include "layout.h"

struct block;

struct diag;

enum train_stream {
	TRAIN_ST_COMPUTE,
	TRAIN_ST_TP,
	TRAIN_ST_PP_FWD,
	TRAIN_ST_PP_BWD,
	TRAIN_ST_PP_FWD_WRAP,
	TRAIN_ST_PP_BWD_WRAP,
	TRAIN_ST_DP,
	TRAIN_ST_DP_GATHER,
	TRAIN_ST_CP,		/* context-parallel K/V exchange */
	TRAIN_ST_EP,		/* expert dispatch and combine */
	TRAIN_ST_HOST,		/* the host thread issuing the rank's work */
	TRAIN_ST_DP_EXPERT,	/* routed experts' gradient reductions (edp) */
	TRAIN_ST_DP_GATHER_EXPERT,	/* their parameter all-gathers */
	TRAIN_ST_PP_FWD_ODD,	/* interleaved: pairs from an odd rank */
	TRAIN_ST_PP_BWD_ODD,
	TRAIN_ST_OFFLOAD,	/* activation offload and reload copies */
	TRAIN_ST_COUNT
};

/* What the program stands for, for reports. */
struct train_plan {
	struct layout lay;		/* ranks and replication */
	int64_t microbatches;		/* per pipeline per step */
	double tokens;			/* tokens per step, whole job */
	double model_flops;		/* FLOP per step, whole job, no recompute */
	double exec_flops;		/* FLOP per step, whole job, as executed */
	double params;			/* model parameters */
	double active_params;		/* parameters one token uses (MoE: top-k
					 * experts and the shared ones) */
	const char *routing;		/* MoE: how the busiest rank's load was
					 * found ("exact", "closed_form", "draws",
					 * "measured"); NULL for dense */
	double max_mean;		/* MoE: busiest EP rank's rows / mean */
};

/*
 * Whether llmsim can simulate the job's step: the GPU has its dtypes.
 * Returns 0, or -1 after reporting what is not available (a bad-input
 * error: exit 2).
 */
int train_check(const struct job_spec *j, struct diag *d);

/*
 * Build the step program of job j (checked by train_check). full = 1
 * simulates every GPU, 0 one rank per symmetric group (or as the job's
 * full_fidelity says when either is set). Returns the program (free with
 * prog_free) and fills *plan, or NULL after reporting to d (out of
 * memory).
 */
struct prog *train_build(const struct job_spec *j, int full,
			 struct train_plan *plan, struct diag *d);

/*
 * The share of a GPU's compute units collective op over gpus[0..n-1]
 * holds while it runs (coll_desc.sm_share): the library's kernel units
 * for the group's scope (within a node, across nodes, send/recv) or, for
 * a TP collective overlapped with GEMM pieces (tp_overlap), the
 * framework's: reduce-scatters hold tp_comm_overlap_units, all-gathers
 * run on copy engines. A fraction of the GPU's compute units.
 */
/* train_coll_sm_share (tp_overlap 0) of a data-parallel collective, at
 * most the framework's dp_comm_max_units of the GPU's compute units:
 * NCCL's per-communicator max_ctas caps the channels, one CTA an SM. */
double train_dp_sm_share(const struct job_spec *j, enum coll_op op,
			 const uint32_t *gpus, uint32_t n);
double train_coll_sm_share(const struct job_spec *j, enum coll_op op,
			   const uint32_t *gpus, uint32_t n, int tp_overlap);

/* Parameters per gradient bucket of one GPU (ZeRO 0-2) on pipeline rank
 * pp_rank: at least max(bucket_params, bucket_params_per_dp x dp), dp
 * the data-parallel size without CP, for the dense and the routed
 * experts' buffers alike (Megatron-Core DDP sizes both from its dp_group);
 * INFINITY (one bucket per buffer) on pipeline ranks > 0 when the
 * framework's later_stages_one_bucket is set. */
double train_bucket_size(const struct job_spec *j, int64_t pp_rank);

/*
 * The gradient buckets of virtual stage vs (split: layers per virtual
 * stage) of one kind (experts 0: dense parameters, over dp x cp; 1: the
 * routed experts', over edp): its units (head with the MTP modules,
 * layers, embedding: backward order) grouped in order into buckets of at
 * least `size` parameters of one GPU, the last taking what is left, as
 * the builder groups them (train_dp.c). Bucket i ends at unit last[i] (backward order) and holds
 * params[i] parameters. Returns the count, at most the units of vs
 * (split[vs] + 2); last or params may be NULL.
 */
int64_t train_buckets(const struct job_spec *j, const struct layer_dims *d,
		      const int64_t *split, int64_t vs, double size, int experts,
		      int64_t *last, double *params, double *layer_params);

/* Bytes the distributed optimizer's all-gather of a bucket of `params`
 * parameters of one GPU moves, layer_params of them a transformer
 * layer's: 16-bit (d->act_B) each, or, with the framework's
 * fp8_param_gather on an fp8 job, the layers' in one byte (NeMo's
 * MegatronDistributedFusedAdam.init_params_bucket gathers Float8Tensor
 * parameters with param_sync_dtype torch.uint8, NVIDIA/NeMo nemo/core/
 * optim/distributed_adam.py; the embedding and output layer are not
 * Transformer Engine fp8 modules). A layer's norms and biases (13 h of
 * GPT-3's 12 h^2 + 13 h) go with its weights [D]. */
double train_gather_bytes(const struct job_spec *j, const struct layer_dims *d,
			  double params, double layer_params);

/* The optimizer step's time on a GPU of pipeline rank `stage`: its
 * memory traffic over the rank's parameters (sharded by dp under ZeRO
 * >= 1), as train_build costs it. */
double train_optimizer_s(const struct job_spec *j, const struct layer_dims *d,
			 const int64_t *split, int64_t stage);

/* Whether the job's framework models the host thread (train_host.c),
 * and the host seconds to issue op i of costed block b. */
int train_host_on(const struct job_spec *j);
double train_host_op_s(const struct job_spec *j, const struct block *b, int i);

/* What a step program will hold, before it is built. */
struct train_estimate {
	double tasks;		/* tasks */
	double calls;		/* collective calls */
	double ranks;		/* simulated ranks */
};

/*
 * Count the tasks train_build(j, full) would make, from the costed
 * blocks and the schedule's shape (train_count.c has the formula),
 * without building: cheap at any size, so a budget can be checked
 * first. Returns 0, or -1 after reporting to d (out of memory).
 */
int train_estimate(const struct job_spec *j, int full,
		   struct train_estimate *e, struct diag *d);

/* Name a simulated rank for traces: "pp3 dp0 tp0". arg is the struct
 * layout. */
void train_rank_label(uint32_t rank, char *buf, size_t len, void *arg);

#endif
