/*
 * infer_prog.h - the step program of one inference step of a serving
 * instance: its pipeline stages, each a chain of units (embedding,
 * layers, LM head) of costed kernels on the compute stream and TP
 * collectives on the tp stream, activations sent between stages, and the
 * host's share of the step.
 *
 * Two builds of the same step (design, section 4):
 *   infer_prog_step   every layer of every stage, the batch split in
 *                     microbatches that flow through the pipeline (phase
 *                     prefill/decode jobs, traces);
 *   infer_prog_unit   one unit (the embedding, one layer or the head) of
 *                     one stage alone: a layer ends with a collective every
 *                     member reaches together (or, at tp 1, a serial
 *                     chain), so a stage of L layers takes L times one
 *                     layer; serving runs these and replicates.
 *
 * The symmetric TP peers of a stage are simulated once (one rank per
 * stage); collectives list every member GPU. Instance GPUs are numbered
 * as layout.h numbers them: tp_i + tp * stage.
 *
 * Depends on infer.h, infer_mem.h, exec.h and the job/engine specs.
 */
#ifndef LLMSIM_MODELS_INFER_PROG_H
#define LLMSIM_MODELS_INFER_PROG_H

#include <stdint.h>

#include "base/arena.h"
#include "engine/exec.h"
#include "infer.h"
#include "infer_mem.h"

struct job_spec;
struct engine_spec;
struct diag;

enum infer_stream {
	IST_COMPUTE,
	IST_TP,
	IST_PP,
	IST_HOST,
	IST_EP,
	IST_COUNT
};

/* Everything about an instance that does not change from step to step. */
struct infer_ctx {
	const struct job_spec *job;
	const struct gpu_spec *gpu;
	const struct engine_spec *eng;
	struct infer_dims dims;		/* one GPU of a TP group */
	int64_t tp, pp;			/* instance layout */
	int64_t adp;			/* attention data-parallel ranks (1:
					 * none): a stage is tp x adp GPUs */
	int64_t *split;			/* [pp] layers per stage */
	uint32_t *gpus;			/* [pp * tp * adp] GPU ids, stage-major */
	uint32_t *ep_gpus;		/* [pp * ep] each stage's first EP group */
	int nkinds;			/* kinds of layer the model has */
	struct infer_kind kinds[INFER_MAX_KINDS];
	uint8_t *kind_of;		/* [layers] index into kinds */
	double ep_sm_share;		/* its kernels' share of the SMs */
	int64_t max_seqs;		/* sequences per step, at most */
	int64_t max_tokens;		/* tokens per step, at most */
	int chunked;			/* chunked prefill */
	struct infer_cost_memo *memo;	/* kernel costs of the step model
					 * (infer.h), or NULL; infer_ctx_init
					 * leaves it NULL, the owner sets and
					 * frees it */
};

/*
 * Set up x for job j (an inference phase), checking what llmsim cannot
 * simulate yet (reported as bad input, returns -2) and the GPU's dtypes;
 * -1 when out of memory. Release with infer_ctx_release().
 */
int infer_ctx_init(struct infer_ctx *x, const struct job_spec *j,
		   struct diag *d);
void infer_ctx_release(struct infer_ctx *x);

/* The launch mode of batch b under the engine's graphs, and b padded to
 * the captured size it replays (padding sequences have no context and are
 * not sampled) into *padded. */
enum infer_graph infer_graph_for(const struct infer_ctx *x,
				 const struct infer_batch *b,
				 struct infer_batch *padded);

/* Host time of a step of b (s): the engine's per-step, per-sequence and
 * per-prompt-token overheads (a decode step's shared by the engine's
 * multi_step steps), times the system's host_loop_scale. */
double infer_host_s(const struct infer_ctx *x, const struct infer_batch *b);

/* What a built step stands for. */
struct infer_prog_info {
	int64_t microbatches;		/* through the pipeline */
	double tokens;			/* T of the batch */
	double sampled;			/* S of the batch */
	double host_s;			/* s, host time of the step */
	int host_in_prog;		/* 1: host time is a task of the program
					 * (not overlapped with the GPU) */
	enum infer_graph graph;		/* launch mode */
	int tbo;			/* the MoE layers ran as two half
					 * batches (infer_tbo_on) */
};

/* The costed units of one step: the inputs every pipeline stage copies
 * for itself (vLLM V1's block table: infer_step_input_ops), embedding,
 * head, one layer of each kind, and the step's MoE routing. */
struct infer_step_units {
	struct infer_unit input, embed, head;
	struct infer_unit layer[INFER_MAX_KINDS];
	struct infer_route route;	/* MoE layers (its matrix in arena) */
	struct arena arena;		/* holds the route's arrays */
	enum infer_tbo tbo;		/* the half batches' strategy (two-batch
					 * overlap's units), else ITBO_NONE */
	enum infer_graph graph;		/* the step's launch mode (infer_units) */
};

/* Costed units of batch b (padded per the graph mode) into u (its arena
 * initialized by the caller, released with infer_step_units_release()).
 * route_T: tokens per rank the MoE layers' routing sees (attention DP:
 * the ranks' mean share, infer_adp_rank); 0 = b's own. 0, or -1 when out
 * of memory (reported to d). */
int infer_units(const struct infer_ctx *x, const struct infer_batch *b,
		enum infer_graph graph, double route_T,
		struct infer_step_units *u, struct diag *d);

/*
 * The batch of the busiest attention-DP rank of a step of batch b over
 * x->adp ranks (b itself without attention DP), into *rank, and the mean
 * tokens per rank into *route_T (0 without attention DP). The engines
 * keep each request on one rank (TensorRT-LLM's _fetch_new_requests and
 * SGLang's DP controller assign whole requests) and the ranks run each
 * layer in lockstep (the MoE collectives): decoding sequences spread
 * evenly (the engines balance them by count), but a prompt (or its chunk)
 * is not split, so the busiest rank holds ceil(n / adp) of a group of n
 * prompts and the step takes its time; the experts still see the ranks'
 * tokens as a whole (route_T). A ranked batch (b->ranked: the serving
 * simulation tracks each request's rank) gives the busiest rank's share
 * of every group itself (g[].rank_count).
 */
void infer_adp_rank(const struct infer_ctx *x, const struct infer_batch *b,
		    struct infer_batch *rank, double *route_T);

void infer_step_units_release(struct infer_step_units *u);

/* The host's time to issue the eager kernels of the fullest stage of a
 * step of units u (engine eager_op per kernel, times the system's
 * host_dispatch_scale): the GPU cannot finish the
 * step before it (infer_prog.c's header). */
double infer_issue_s(const struct infer_ctx *x,
		     const struct infer_step_units *u);

/* Layers of kind k on stage s. */
int64_t infer_stage_kind_layers(const struct infer_ctx *x, int64_t s, int k);

/*
 * The full program of one step of batch b over every stage and layer, the
 * batch split into `micro` microbatches (1..: counts divided evenly);
 * route_T as infer_units'. NULL when out of memory (reported to d).
 */
struct prog *infer_prog_step(const struct infer_ctx *x,
			     const struct infer_batch *b, int64_t micro,
			     double route_T, struct infer_prog_info *info,
			     struct diag *d);

/* b with every group's count divided by m, into *out. */
void infer_micro_batch(const struct infer_batch *b, int64_t m,
		       struct infer_batch *out);

/* A program of x's ranks and streams with no task yet. NULL when out of
 * memory. */
struct prog *infer_prog_empty(const struct infer_ctx *x);

/* The program of one costed unit u of step units su on stage s. NULL
 * when out of memory. */
struct prog *infer_prog_unit(const struct infer_ctx *x,
			     const struct infer_step_units *su,
			     const struct infer_unit *u, int64_t stage);

/* The program of the activation transfer of T tokens from stage s to
 * s + 1 (one send per TP rank). NULL when out of memory. */
struct prog *infer_prog_send(const struct infer_ctx *x, double tokens,
			     int64_t stage);

/* Op op of step units su on `rank` (stage s) as a task of p, with no
 * dependency yet: a kernel on the compute stream, a collective on its
 * group's stream. TASK_NONE when out of memory. */
task_id infer_prog_op(struct prog *p, const struct infer_ctx *x,
		      const struct infer_step_units *su,
		      const struct infer_cost_op *op, uint32_t rank, int64_t s,
		      int32_t layer, int32_t mb);

/*
 * Two-batch overlap (infer_tbo.c). infer_tbo_on: whether a step of
 * (padded) batch b runs its MoE layers as two half batches: the engine's
 * two_batch_overlap with an all-to-all dispatch (infer_moe.tbo) and at
 * least two sequences, or two prompt tokens, to split.
 * infer_tbo_layers: the n MoE layers from `first` of stage s as the two
 * half batches of units `half` (the batch halved), after task `after`;
 * the task both halves have finished by into *last. 0, or -1 when out
 * of memory.
 */
int infer_tbo_on(const struct infer_ctx *x, const struct infer_batch *b);

/* The engine sets two_batch_overlap but no step of x can run it (no MoE
 * layer, no attention DP across GPUs, the engine's all-gather exchange
 * in place of an all-to-all), or, with b not NULL, this step cannot (one
 * sequence, or one prompt token, a rank): one warning on d saying why.
 * Nothing when the overlap runs or is not asked for. */
void infer_tbo_warn(const struct infer_ctx *x, const struct infer_batch *b,
		    struct diag *d);
int infer_tbo_layers(struct prog *p, const struct infer_ctx *x,
		     const struct infer_step_units *half, int64_t s,
		     int64_t first, int64_t n, int32_t mb, task_id after,
		     task_id *last);

/* The program of the n MoE layers from `first` as two half batches of
 * units `half` (infer_tbo_layers on stage 0 of x, alone): what the
 * serving stepper times a run of layers by. NULL when out of memory. */
struct prog *infer_tbo_prog(const struct infer_ctx *x,
			    const struct infer_step_units *half,
			    int64_t first, int64_t n);

/* Name a simulated rank for traces: "stage 2". */
void infer_rank_label(uint32_t rank, char *buf, size_t len, void *arg);

#endif
