/*
 * train_impl.h - the step-program builder's shared state (train.c,
 * train_cost.c, train_pp.c, train_dp.c) and the helpers they share
 * (train_impl.c, a leaf: it calls none of them). Private to src/models.
 */
#ifndef LLMSIM_MODELS_TRAIN_IMPL_H
#define LLMSIM_MODELS_TRAIN_IMPL_H

#include "base/arena.h"
#include "block.h"
#include "sched.h"
#include "train.h"

/* One unit (embedding, layer or head) of one action on one rank. */
struct unit_rec {
	task_id first[4];	/* tasks waiting for the unit's input */
	uint32_t nfirst;	/* used entries of first */
	task_id last;		/* the unit's final task */
	task_id out;		/* the task producing its output (the
				 * block's out op): last, or before the
				 * delayed weight gradients */
	task_id ep_first;	/* its first and last task on the expert-
				 * parallel stream (issue order), or */
	task_id ep_last;	/* TASK_NONE */
	task_id xg_first;	/* its first and last expert GEMM on
				 * Transformer Engine's GEMM stream, or */
	task_id xg_last;	/* TASK_NONE */
};

/* A gradient bucket of a pipeline rank (train_dp.c plans them). */
struct bucket {
	int64_t chunk;		/* model chunk */
	int64_t bact;		/* the chunk's last backward action */
	int64_t fact;		/* the chunk's first forward action */
	int64_t u0, u1;		/* units [u0, u1] in backward order */
	double params;		/* parameters of one GPU */
	double layer_params;	/* of them, transformer layers' (train_gather_bytes) */
	int experts;		/* routed experts' (over edp) or dense (dp x cp) */
	task_id *ready;		/* [stage index] the last task of the work on
				 * the bucket before its reduction (train_grad.c),
				 * or NULL / TASK_NONE: its units' end */
};

/* The schedule of one pipeline rank, shared by its TP/DP copies. */
struct stage_plan {
	struct sched_action *acts;	/* the rank's actions in order */
	int64_t nacts;			/* 2 m vpp */
	int64_t run_acts;		/* actions of one pipeline schedule run
					 * (nacts / job_schedule_runs) */
	int64_t warmup;			/* forwards before the steady state
					 * (sched_warmup_ex) */
	int64_t *lookup;		/* [(bwd v + chunk) m + mb] -> action */
	uint32_t *unit_off;		/* per action: first unit index; [nacts] = total */
	struct bucket *buckets;		/* gradient buckets in the order they
					 * complete (train_dp.c; ZeRO 0-2, dp > 1) */
	int64_t nbuckets;		/* entries of buckets */
};

/* Layer kinds: MoE or dense MLP x full, sliding-window or chunked
 * attention (a chunk takes precedence: a window then applies within it),
 * or x a Gated DeltaNet mixer (linear: window and chunk unused); then a
 * hybrid model's layers alone (enum model_block: Mamba-2, attention, MLP,
 * MoE; no windows). */
#define TRAIN_KINDS 24

static inline int train_kind_index(int moe, int64_t window, int64_t chunk,
				   int linear, int block, int nope)
{
	int off = nope ? TRAIN_KINDS / 2 : 0;	/* a NoPE layer's twin */

	if (block > 0)
		return off + 7 + block;
	if (linear)
		return off + 6 + moe;
	return off + 3 * moe + (chunk > 0 ? 2 : window > 0 ? 1 : 0);
}

struct train {
	const struct job_spec *job;
	const struct gpu_spec *gpu;
	struct prog *prog;
	struct arena arena;		/* scratch, dies with the build */
	struct layout lay;
	int64_t m, v, pp, stages;	/* microbatches, vpp, pp, pp*vpp */
	int64_t *split;			/* layers per virtual stage */
	struct layer_dims dims;		/* one microbatch on one GPU */
	struct layer_kind kinds[TRAIN_KINDS];	/* what each kind index is */
	struct block *lf[TRAIN_KINDS];	/* layer forward by kind (NULL: unused) */
	struct block *lb[TRAIN_KINDS];	/* layer backward (+ recompute) */
	struct block *ef, *eb;		/* embedding */
	struct block *hf, *hb;		/* final norm, LM head, loss */
	struct block *hbd, *hw;		/* defer_embedding_wgrad_compute: the
					 * head's backward without the output
					 * layer's wgrad, and that wgrad as the
					 * flush runs it; NULL without */
	int64_t defer;			/* microbatches whose head wgrad is
					 * deferred (0: none) */
	task_id *drain_end;		/* [rank] the last deferred wgrad's
					 * task, or TASK_NONE */
	struct layer_ops *wc_ops;	/* scratch for the step weight casts
					 * (train_cost.c), or NULL */
	struct block *mf, *mb;		/* a multi-token-prediction module (with
					 * its output head and loss unless
					 * mtp_alone) */
	struct block *mbs;		/* ... its backward when its embedding
					 * gradient is summed into a later
					 * lookup's (layer_mtp_bwd embed_summed:
					 * one stage, or a second module), or
					 * NULL: mb */
	int64_t mtp;			/* MTP modules */
	int64_t mtp_stage;		/* the virtual stage holding them */
	int mtp_alone;			/* mtp_stage is not the last (Megatron's
					 * mtp_standalone): their output heads
					 * and losses run on the last stage */
	struct block *pg;		/* all-gather of a scattered transfer, or NULL */
	struct block *amax[2];		/* fp8 amax reduction after a chunk's forward
					 * [0] and backward [1], or NULL */
	struct block_dtypes dt;
	struct coll_path ep_path[EP_PASSES];	/* the dispatcher's GPU-
					 * initiated path, each enum ep_pass */
	const struct coll_path *path[EP_PASSES];	/* &ep_path[i], or
						 * NULL: the library's */
	int ep_algo;			/* the library algorithm the dispatcher
					 * forces (hierarchical), or -1 */
	double ep_units;		/* SMs dispatch/combine hold (0: the
					 * library's kernel units) */
	struct stage_plan *stage;	/* [pp] */
	struct unit_rec **units;	/* [simulated rank][unit] */
	task_id *last_dp;		/* [rank] last task on the dp stream */
	task_id *last_edp;		/* [rank] last on the dp_expert stream */
	task_id *opt;			/* [rank] the optimizer step (train_dp.c) */
	task_id *scratch;		/* LAYER_MAX_OPS * sim task ids */
	task_id *scratch2;		/* the same, for the other action of a
					 * pair (moe.a2a_overlap) */
	int a2a_overlap;		/* pair forward and backward actions,
					 * their dispatch/combine under each
					 * other's compute */
	int host_on;			/* the framework models the host thread */
	double host_scale;		/* the system CPU's time per call over the
					 * reference CPU's */
	task_id *host_last;		/* [rank] the last host task issued */
	task_id **pp_send;		/* [rank][action] the gradient or
					 * activation send after the action
					 * (zero_stage 3: FSDP's reduce-scatters
					 * are waited for before it), or NULL */
	task_id **p2p_host;		/* [rank][action] the device sync before
					 * the action (batch_p2p_sync), or NULL */
	uint32_t *stage_ranks;		/* scratch: the simulated ranks of a stage */
	uint8_t *done;			/* scratch: sim flags */
	int64_t *idx;			/* scratch: stage indices of a group */
	uint32_t *gpus;			/* scratch: GPU ids of a group */
	uint32_t *ranks;		/* scratch: simulated ranks of a group */
	uint32_t *pos;			/* scratch: group position of those */
	uint32_t slow_rank;		/* the straggler's simulated rank, or
					 * UINT32_MAX (full fidelity only) */
	int64_t offload;		/* training.cpu_offload_layers: the
					 * first this many layers offloaded
					 * (pp 1); 0: none (train_offload.c) */
	int64_t offload_keep;		/* layers' activation sets the GPU
					 * holds at most: layers - offload */
	double offload_B[TRAIN_KINDS];	/* saved activations of one layer of
					 * each kind, one microbatch, B */
	task_id *off_copy;		/* [sim x layers] this action's
					 * offload (forward) or reload
					 * (backward) per layer */
	task_id *off_bwd;		/* [sim x layers] this backward's end
					 * of each layer */
	struct group_memo *group_memo;	/* train_group's answers (in the
					 * arena), GROUP_MEMO of them; NULL
					 * before the first */
};

/* train_coll_sm_share for the program's job. */
double train_sm_share(const struct train *t, enum coll_op op,
		      const uint32_t *gpus, uint32_t n, int tp_overlap);

/* Virtual stage of (pipeline rank, chunk). */
static inline int64_t train_vs(const struct train *t, int64_t rank,
			       int64_t chunk)
{
	return chunk * t->pp + rank;
}

/* Units of an action on virtual stage vs: [embedding] layers [head]
 * [MTP modules]. */
int64_t train_units(const struct train *t, int64_t vs);

/* The unit record of simulated rank r, action a, unit u. */
struct unit_rec *train_unit(const struct train *t, uint32_t r, int64_t a,
			    int64_t u);

/* Whether actions a and a + 1 of pipeline rank s run as a pair
 * (moe.a2a_overlap): unit by unit, the backward's unit u before the
 * forward's unit u (train.c's build_pair). */
int train_pairs(const struct train *t, int64_t s, int64_t a);

/* The task that ends action a of rank r. */
task_id train_action_end(const struct train *t, uint32_t r, int64_t a);

/* The task action a's pipeline send waits for: its end, or, when it runs
 * paired (train_pairs), its last unit's output: Megatron-Core's
 * post_forward / post_backward (the pp sends) come before the delayed
 * attention weight gradients of the backward's last layer
 * (model_chunk_schedule_plan.py TransformerModelChunkSchedulePlan.run @
 * 01cf4fb5; train_wgrad.c). */
task_id train_send_after(const struct train *t, uint32_t r, int64_t a);

/* The pipeline rank whose copy of the word embedding all-reduces its
 * gradient with rank 0's after the backward (train_dp.c), or -1: the
 * last rank's with tied embeddings, else the MTP modules' rank (they
 * build the embedding too: Megatron-Core's finalize_model_grads
 * _allreduce_word_embedding_grads reduces when
 * share_embeddings_and_output_weights or mtp_num_layers). */
int64_t train_embed_peer(const struct train *t);

/* Whether FSDP runs under torch pipelining's no-sync (framework
 * fsdp_pp_no_sync, zero_stage 3, pp >= 2; train_dp.c). */
int train_fsdp_pp_no_sync(const struct train *t);

/* A [rank][action] table of TASK_NONE in the build's arena into *out. */
int train_alloc_actions(struct train *t, task_id ***out);

/* What unit u of an action on vs is: its block, its global layer index
 * (-1 for the embedding and head) and, for backward, the reverse order. */
const struct block *train_unit_block(const struct train *t, int64_t vs,
				     int bwd, int64_t u, int32_t *layer);

/* The step weight quantization (struct block wcast) run before unit u of
 * vs on the step's first microbatch forward, or NULL: none in 16-bit,
 * and once for MTP modules that repeat the first one's weights. */
const struct block *train_unit_wcast(const struct train *t, int64_t vs,
				     int64_t u);

/* Parameters per GPU of unit u of an action on vs (bwd order if bwd):
 * dense ones (over tp; gradients over dp x cp) and routed experts' (over
 * etp x ep; gradients over edp). */
void train_unit_params(const struct train *t, int64_t vs, int bwd,
		       int64_t u, double *dense, double *experts);

/* The members of the kind-g group of simulated rank r: GPU ids into
 * t->gpus, the simulated members into t->ranks (their group positions
 * in t->pos); returns how many are simulated; *size gets the group's
 * size. */
uint32_t train_group(struct train *t, enum layout_group g, uint32_t r,
		     uint32_t *size);

/* The job's layout (full: every GPU simulated). */
void train_layout(struct layout *l, const struct job_spec *j, int full);

/* t's shape from job j (t->lay set): counts, dimensions, routing, the
 * dispatcher's path, the layer split; not the schedule nor any per-rank
 * state, so it is cheap at any size (train_estimate.c). 0, or -1 (out of
 * memory, or routing failed after reporting to d). */
int train_shape(struct train *t, const struct job_spec *j,
		struct train_plan *plan, struct diag *d);

/* The costed blocks of every unit kind, into t (t->prog names them;
 * train_cost.c). */
int train_cost_blocks(struct train *t);

/* The tasks and collective calls of the program t (costed, p2p:
 * train_host_init()'s answer) makes: train_estimate's count, which the
 * builder also reserves room for (train_count.c). */
void train_count(struct train *t, int p2p, struct train_estimate *e);

/* Megatron-Core's delay_wgrad_compute on a layer's backward ops o
 * (train_wgrad.c): the routed experts' weight gradients just before the
 * dispatch's backward, attention's and the shared experts' at the end.
 * Returns the index of the op producing the layer's input gradient
 * (o->n - 1 when nothing moved), or -1 when out of memory. */
int train_delay_wgrad(struct layer_ops *o);

/* Gradient buckets of pipeline rank s of one kind (experts or dense),
 * as train_build_dp makes them (ZeRO 0-2). */
int64_t train_dp_buckets(const struct train *t, int64_t s, int experts);

/* The host model (train_host.c). Setup after the stages are planned;
 * the host cost of each op of a costed block; the host tasks issuing op
 * i of b on the stage's n simulated ranks (ids as inst_range's); the
 * device sync before action a of stage s. Each returns 0, or -1 when out
 * of memory; all do nothing when the framework has no host model. */
int train_host_setup(struct train *t);

/* The part of train_host_setup() that allocates nothing (t->host_on,
 * t->host_scale; train_estimate.c calls it alone): 1 when the host syncs
 * before every action but the first (a p2p sync task a simulated GPU and
 * action), else 0. */
int train_host_init(struct train *t);
int train_host_cost(const struct train *t, struct block *b);
int train_host_issue(struct train *t, const struct block *b, int i,
		     uint32_t n, const task_id *ids,
		     const struct task_info *tmpl);
int train_host_p2p(struct train *t, int64_t s, uint32_t n, int64_t a);

/* The device sync simulated rank r's host makes before its action a
 * (after a batched pipeline send/recv), or TASK_NONE. */
task_id train_p2p_sync(const struct train *t, uint32_t r, int64_t a);

/* Pipeline transfers between stages (train_pp.c). */
int train_build_pp(struct train *t);

/* Data-parallel collectives, optimizer, host overhead (train_dp.c):
 * the gradient buckets first (before the stages are built: the work on
 * a bucket before its reduction sits among the backward's units), then
 * the rest. */
int train_plan_dp(struct train *t);
int train_build_dp(struct train *t);

/* The work on each gradient bucket before its reduction (train_grad.c):
 * with overlap_grad_reduce after unit u of backward action a (the
 * bucket's last unit), else after the stage's last action (u = -1), on
 * the stage's n simulated ranks; in[] advances to its end. 0, or -1 when
 * out of memory. */
int train_grad_prep(struct train *t, int64_t s, uint32_t n, int64_t a,
		    int64_t u, task_id *in);

/* The scaling factor Megatron-Core DDP applies to a bucket of this kind
 * (experts 0 dense, 1 routed experts') before its reduction; 1: none. */
double train_grad_scale(const struct job_spec *j, int experts);

/* Tasks of that work per bucket of this kind and simulated GPU
 * (train_estimate.c). */
double train_grad_tasks(const struct train *t, int experts);

/* Shared hardware queues (train_queue.c): whether the gradient
 * collectives of one kind (experts 0: dense, over dp x cp; 1: routed
 * experts', over edp) share a hardware queue with the expert-parallel
 * stream, and whether the two kinds share one. */
int train_queue_with_ep(const struct job_spec *j, int experts);
int train_queue_dp_edp(const struct job_spec *j);
/* One hardware work queue (CUDA_DEVICE_MAX_CONNECTIONS=1, framework
 * device_max_connections): kernels start in launch order (train_queue.c). */
int train_one_connection(const struct job_spec *j);
/* n zero-time launch tasks, one on `stream` of each t->ranks[k], to be
 * followed there by the collective they mark (its start): the first id
 * (the others follow it), TASK_NONE when out of memory. */
task_id train_launch_marks(struct train *t, uint32_t n, uint32_t stream,
			   const char *name);
/* The tasks launched after mark on rank r of stage s, the first tasks of
 * the first unit at or after unit u of action a, wait for it. */
int train_launch_gate(struct train *t, int64_t s, uint32_t r, int64_t a,
		      int64_t u, task_id mark);
/* Whether the experts' GEMM stream (Transformer Engine's first
 * multi-stream GEMM stream) shares a hardware queue with the gradient
 * collectives of one kind. */
int train_queue_with_gemm(const struct job_spec *j, int experts);

/* Rank r (of pipeline stage s): its first task on the expert-parallel
 * stream issued at or after unit u of action a (later units, then later
 * actions), and its last one issued before unit u of action a; TASK_NONE
 * when there is none. */
task_id train_ep_from(const struct train *t, int64_t s, uint32_t r,
		      int64_t a, int64_t u);
task_id train_ep_before(const struct train *t, int64_t s, uint32_t r,
			int64_t a, int64_t u);
/* The same for the expert GEMMs on Transformer Engine's GEMM stream. */
task_id train_xg_from(const struct train *t, int64_t s, uint32_t r,
		      int64_t a, int64_t u);
task_id train_xg_before(const struct train *t, int64_t s, uint32_t r,
			int64_t a, int64_t u);


/* The kind index (t->kinds, t->lf, t->lb) of layer i. */
int train_layer_kind(const struct train *t, int64_t i);

/* Activation offloading (train_offload.c). train_offload_setup sizes
 * its state (0, or -1 when out of memory); train_offload_unit adds, after
 * unit u of action a of pipeline rank s is built on its n simulated GPUs,
 * the unit's copies on the offload stream and the waits on them. */
int train_offload_setup(struct train *t);
int train_offload_unit(struct train *t, int64_t s, uint32_t n, int64_t a,
		       int64_t u);

/* Add dependency before -> after unless either is TASK_NONE. */
int train_dep(struct train *t, task_id before, task_id after);

#endif
