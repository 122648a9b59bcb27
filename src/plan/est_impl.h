/*
 * est_impl.h - what the analytical tier's files share (est.c: the step;
 * est_block.c: layer blocks and collective times, a leaf). Private to
 * src/plan.
 */
#ifndef LLMSIM_PLAN_EST_IMPL_H
#define LLMSIM_PLAN_EST_IMPL_H

#include "base/coll.h"
#include "models/block.h"
#include "models/layer.h"
#include "models/sched.h"
#include "est.h"
#include "memo.h"

struct net;
struct kset;

/* One block (a layer's forward or backward, the embedding's, the head's)
 * as the step program runs it on one GPU: kernels on the compute stream,
 * TP collectives on the tp stream, each op starting when its inputs are
 * ready and its stream is free, kernels slowed while a collective holds
 * compute units (exec.h). */
struct est_pass {
	double lat_s;		/* s, from the block's input to its last op */
	double kern_s;		/* s, kernel time (unstretched) */
	double own_s;		/* s, of that times each kernel's owned
				 * share (block_op.owned): own_s / kern_s
				 * is the work-weighted h of exec.h's law */
	double mem_s;		/* s, of that in bandwidth-bound kernels */
	double model_flops;	/* FLOP, model (no recompute) */
};

/* A hybrid model's layer kinds (Mamba-2, attention, MLP and MoE blocks of
 * a Nemotron-H pattern; Gated DeltaNet and full-attention layers with
 * their MLPs): at most this many, each costed once (est_block.c). */
enum { EST_KINDS = 8 };

/* Model m's distinct layer kinds into kinds (at most EST_KINDS; the
 * count, or -1 past that); the kind index of layer i among them. */
int est_kinds(const struct model_spec *m, struct layer_kind *kinds);
int est_kind_index(const struct model_spec *m, int64_t i,
		   const struct layer_kind *kinds, int n);

/* The blocks of one (tp, microbatch, recompute, SP, ...) setting. */
struct est_blocks {
	struct est_pass lf, lb;		/* layer forward, backward (+ recompute) */
	struct est_pass mf, mb;		/* MoE layer (routed experts) */
	struct est_pass mfo, mbo;	/* ... paired under moe.a2a_overlap: the
					 * dispatch/combine beside the other
					 * action's compute (est_block.c) */
	struct est_pass tf, tb;		/* an MTP module (moe.mtp_layers) */
	struct est_pass tbs;		/* ... its backward with its embedding
					 * gradient summed into a later
					 * lookup's (est_mtp_summed) */
	struct est_pass ef, eb;		/* embedding */
	struct est_pass hf, hb;		/* final norm, LM head, loss */
	struct est_pass hbd, hw;	/* defer_embedding_wgrad_compute: the
					 * head's backward without its weight
					 * gradient, and that gradient as the
					 * drain runs it (0: not deferred) */
	struct est_pass pg;		/* all-gather of a scattered transfer (0: none) */
	struct est_pass af, ab;		/* fp8 amax reduction after a chunk's
					 * forward, backward (0: none) */
	double amax_tax;		/* its group's synchronization tax rate
					 * (0: no amax reduction) */
	double pp_B;			/* B, one pipeline transfer per TP rank */
	int nk;				/* a hybrid's kinds (0: not hybrid) */
	struct est_pass kf[EST_KINDS], kb[EST_KINDS];	/* ... their layer
					 * forward, backward (+ recompute) */
};

/* Memo keys: what a collective's time and a block set depend on beyond
 * the plan's fixed job and system. */
struct est_ckey {
	int32_t op;		/* enum coll_op */
	uint32_t n, g0, stride, replicas;
	uint32_t ring;		/* a ring step (est_coll_x) */
	double bytes;		/* B */
	uint64_t a2a_key;	/* dispatch/combine: its matrix' hash (0: even) */
	int32_t path;		/* ... its ep_path (block_op) */
	uint32_t inner, outer;	/* a two-level group (0: none): member i at
				 * g0 + (i mod inner) stride + (i div inner)
				 * outer (est_coll_2) */
	int32_t pad;
};

struct est_bkey {
	int64_t tp, mbs, seq;
	int64_t cp, cp_a2a;	/* context parallelism (seq: per rank) */
	int32_t sp, rc, chunks, pp_gather;
	int32_t cp_type, cp_lb;	/* enum cp_comm, load balancing */
	int32_t embed_dense;	/* layer_dims embed_dense (by ZeRO stage) */
	int32_t defer_head;	/* defer_embedding_wgrad_compute at pp >= 2 */
	int64_t amax_n;		/* fp8 amax reduction: its group's GPUs (0: none) */
	double amax_layers;	/* ... and the layers of a chunk it covers */
	double fsdp_n, fsdp_accum;	/* ZeRO 3 with FSDP's passes (layer.h) */
	uint32_t tp_replicas, cp_replicas, a2a_replicas, ring_replicas;
	uint32_t amax_replicas, ep_ov;	/* ep_ov: a2a_overlap pairs MoE layers */
	double tax;		/* the TP group's synchronization tax rate */
	int64_t ep, etp;	/* expert parallelism (MoE; 0 dense) */
	uint32_t ep_replicas, etp_replicas;
};

struct est {
	const struct system_spec *sys;
	struct net *net;		/* the system's fabric, idle */
	struct memo blocks;		/* struct est_bkey -> struct est_blocks */
	struct memo kernels;		/* struct est_bkey without tax and
					 * replicas -> struct kset * (the GPU
					 * model's costs, timed once) */
	struct kset *ksets;		/* every kset, to free */
	struct memo colls;		/* struct ckey -> double (s) */
	struct memo dpplans;		/* (tp, cp, pp, vpp, dp, zero > 0, ep,
					 * etp) ->
					 * struct est_dplan * */
	struct est_dplan *dplan_list;	/* every dplan, to free */
	uint32_t *gpus;			/* scratch: a group's GPU ids (world) */
	uint32_t *tp_gpus;		/* 0, 1, ..., world - 1 */
	uint32_t *ggpus;		/* scratch: a block group's GPU ids */
	struct layer_ops *ops;		/* scratch */
	struct block *blk;		/* scratch */
	int64_t *split;			/* scratch: layers per virtual stage */
	int64_t *nmoe;			/* scratch: MoE layers per virtual stage */
	int64_t *nkind;			/* scratch: a hybrid's kinds per stage */
	size_t split_cap;
	const struct model_spec *moe_model;	/* the model moe_before is of */
	int64_t *moe_before;		/* [i], i <= its layers: MoE layers
					 * before layer i (split_of) */
	struct memo emax;		/* N -> exec_emax(N) (a quadrature) */
	struct memo amax;		/* fp8 amax reductions (est_block.c
					 * amax_of) -> struct est_pass[2] */
	struct memo pipe_lists;		/* (schedule, p, v, m, split): the
					 * EST_PIPE_KEY int64s -> the actions
					 * in dependency order (est_pipe.c) */
	double *pipe_t;			/* scratch of est_pipe_run */
	size_t pipe_t_cap;
	int pipe_flat;			/* orders not packed (est_pipe.c
					 * struct pcomp), for tests: the
					 * same bits */
	double *pipe_x;			/* scratch: three runs' ends */
	size_t pipe_x_cap;
	double *stage_t;		/* scratch: f, b per virtual stage, then
					 * rank and chunk ends */
	size_t stage_t_cap;
	struct memo xfers;		/* (p, wrap, stage GPUs, bytes, GPUs
					 * between stages) -> double *: the
					 * transfers per rank pair */
	double *fsdp_t;			/* scratch of est_fsdp_streams */
	struct memo fsdp;		/* its stages' times by their units'
					 * (est_fsdp.c struct fs_key; key_B 0
					 * before the first) */
	size_t fsdp_t_cap;
	struct est_stats stats;
	struct est_share *share;	/* collective times shared with the
					 * other processes of a walk, or NULL
					 * (est_share.c) */
};

/* ---- one candidate (est.c, est_stage.c, est_dp.c) ---- */

enum { EST_LAYER, EST_EMBED, EST_HEAD };	/* unit kinds */

/* What est_step works through for one layout. */
struct est_cand {
	const struct job_spec *j;
	const struct est_blocks *b;
	const struct layer_dims *d;
	const int64_t *split;		/* layers per virtual stage */
	const int64_t *nmoe;		/* of those MoE layers (NULL: dense) */
	const int64_t *nkind;		/* a hybrid's layers of each kind per
					 * virtual stage, [s EST_KINDS + k]
					 * (NULL: not hybrid) */
	int64_t mtp;			/* MTP modules */
	int64_t mtp_stage;		/* their virtual stage (S - 1: after
					 * the head) */
	double ov;			/* share of MoE layer passes paired
					 * (a2a_overlap; est.c setup) */
	int64_t m, p, v, S;		/* microbatches, pp, vpp, pp vpp */
	int64_t g, mg;			/* schedule runs a step (job_schedule_runs:
					 * a local batch each), m / g microbatches
					 * each */
	int no_sync;			/* fsdp_pp_no_sync with ZeRO 3 gathering
					 * over dp cp > 1 (train_fsdp_pp_no_sync) */
	const double *x;		/* s, [r]: a transfer between rank r and
					 * r + 1 (r = p-1: the wrap to rank 0) */
	double s_dp;			/* compute share a DP collective holds */
	double fsdp_f[3], fsdp_b[3];	/* s, ZeRO 3: a unit's compute, slowed by
					 * its collectives beside it */
	double fsdp_xf[3], fsdp_xb[3];	/* s, ZeRO 3: a unit's collectives on the
					 * data-parallel streams (forward: its
					 * all-gather; backward: all-gather and
					 * reduce-scatter); a stage takes the
					 * longer of the two sums (est_stage.c) */
	double fsdp_first_ag;		/* s, exposed at the start */
	double fsdp_hxb[3];		/* s, fsdp_xb of a held unit (its
					 * reduce-scatter) */
	double fsdp_hf[3], fsdp_hb[3];	/* s, a unit whose chunk is still
					 * gathered (held): no all-gather */
	double fsdp_c[2][3];		/* s, ZeRO 3: a unit's forward [0] and
					 * backward [1] block alone, ... */
	double fsdp_sl[2][3];		/* ... the share of the time its DP
					 * collectives overlap it that it is
					 * slowed by (est_dp.c dp_lost), ... */
	double fsdp_ag[3], fsdp_rsu[3];	/* ... its all-gather (a forward's)
					 * and its reduce-scatter alone
					 * (est_fsdp.c) */
	int fsdp_root;			/* one stage with framework
					 * fsdp_root_unit: the embedding unit
					 * is the root (embedding and head,
					 * gathered in its forward only), the
					 * head gathers and reduces nothing
					 * (models/train_dp.c fsdp_role) */
	int fsdp_last_held;		/* one stage with fsdp_last_layer_held
					 * (and reshard after forward): the
					 * last layer's backward gathers
					 * nothing */
	int streams;			/* ZeRO 3 stages from the DP streams
					 * (est_fsdp.c; est.c setup says when) */
	const double *fsdp_w;		/* s, [S] with streams and one stage
					 * (S == 1): the compute of a stage's
					 * backward since its rank last waited
					 * for a DP collective, -1 none
					 * (est_fsdp_streams; est_sync_tax), or
					 * NULL (no streams, or S > 1) */
	double fsdp_wait[3];		/* s, the reduce-scatter of a unit
					 * ending a backward, which the compute
					 * stream waits for (0: no_sync) */
	int held;			/* ZeRO 3 gathering over dp cp > 1
					 * without reshard after forward or
					 * no_sync: a chunk's action after its
					 * forward gathers nothing */
	double fsdp_gf[3], fsdp_rs[3];	/* s, no_sync: a unit's forward with its
					 * gather (a run's first), its
					 * reduce-scatter (after a run's last
					 * backward); fsdp_f, fsdp_b are then
					 * the blocks alone */
	const double *f_run, *b_run;	/* s, [s]: virtual stage s's first
					 * forward and last backward of a run
					 * (no_sync: with the gathers, the
					 * reduce-scatters; else f_s, b_s) */
	const double *f_held, *b_held;	/* s, [s]: a held forward, backward
					 * (c->held; else NULL) */
	double defer;			/* defer_embedding_wgrad_compute: the
					 * last stage's backwards whose head
					 * weight gradient waits for the drain
					 * (train.c t->defer; 0: none) */
	double drain_s;			/* s, the drain after the last rank's
					 * last backward */
	const double *sf, *sb;		/* s, [s]: est_stage_f_of / _b_of of
					 * every virtual stage, kept once the
					 * units are final (est.c pipeline;
					 * NULL: est_stage_f / _b compute) */
	const double *rank_end;		/* s, rank r's last action ends */
	const double *chunk_end;	/* s, [r v + c]: chunk c's last backward ends */
};

/* est_stage.c: a unit's forward / backward (ZeRO 3 folded in), a
 * virtual stage's per microbatch, the backward time of stage s through
 * unit u (backward order: head, layers, embedding) and the forward time
 * before unit u (forward order), the scattered receive's all-gather
 * first. */
double est_unit_f(const struct est_cand *c, int u);
double est_unit_b(const struct est_cand *c, int u);
double est_stage_f_of(const struct est_cand *c, int64_t s);
double est_stage_b_of(const struct est_cand *c, int64_t s);
double est_bwd_through(const struct est_cand *c, int64_t s, int64_t u);
double est_fwd_before(const struct est_cand *c, int64_t s, int64_t u);

/* est_fsdp.c: ZeRO 3 stages as the step program serialises their
 * collectives (c->streams): virtual stage s's forward and backward per
 * microbatch into f[s], b[s], and into w[s] the compute of its backward
 * since the rank's compute last waited for a data-parallel collective
 * (-1: none in a steady-state pair; est_cand fsdp_w). 0, or -1 out of
 * memory. */
int est_fsdp_streams(struct est *e, const struct est_cand *c, double *f,
		     double *b, double *w);

/* Virtual stage s's forward / backward per microbatch: est_stage_f_of /
 * _b_of as kept (c->sf, c->sb), else computed. A stage's time is read
 * ~100 times an estimate (the recurrence's durations, the data-parallel
 * stretch and tails, the synchronization tax, the parts), each a walk
 * over its units' blocks; the code that swaps a candidate's units to
 * time them otherwise (held chunks, no_sync's gathering forward) calls
 * the _of ones. */
static inline double est_stage_f(const struct est_cand *c, int64_t s)
{
	return c->sf ? c->sf[s] : est_stage_f_of(c, s);
}

static inline double est_stage_b(const struct est_cand *c, int64_t s)
{
	return c->sb ? c->sb[s] : est_stage_b_of(c, s);
}

/* The ranks evaluated one by one: 0, 1 and p-1 (entry i); whether entry
 * i is a rank of its own (p = 1 has only rank 0, p = 2 no middle one);
 * the entry standing for rank r (a middle rank is like rank 1). */
int64_t est_rank_of(const struct est_cand *c, int i);
int est_rank_used(const struct est_cand *c, int i);
int est_rank_index(const struct est_cand *c, int64_t r);

/* est_dp.c: data parallelism. A rank's gradient buckets (ZeRO 0-2) in
 * the order they complete, with their collectives' times. */
struct est_dbucket {
	int64_t chunk;		/* model chunk on the rank */
	int64_t experts;	/* routed experts' (over edp), else dense */
	int64_t last;		/* its last unit, backward order */
	double params;		/* parameters of one GPU */
	double red_s;		/* s, its all-reduce (ZeRO 0) or reduce-scatter */
	double ag_s;		/* s, its parameters' all-gather (ZeRO 1-2) */
};

/* A chunk's buckets on a rank (contiguous: rank_buckets lays them out
 * chunk by chunk): the sum of their red_s in completion order, and the
 * index of the first (-1: none). */
struct est_dchunk {
	double red_s;
	int64_t first;
};

struct est_dplan {
	struct est_dplan *next;	/* every plan of the estimator, to free */
	int64_t n[3];		/* buckets of ranks 0, 1, p-1 */
	struct est_dbucket *b[3];
	/* what est_dp_stretch reads of them for each of a rank's virtual
	 * stages, summed once here in the order it summed them there */
	double ag_s[3];		/* s, the sum of every bucket's ag_s */
	struct est_dchunk *ch[3];	/* [chunk] */
};

/* The buckets of candidate c, remembered per (tp, cp, pp, vpp, dp, ZeRO
 * 0 or not). NULL after reporting to d. */
const struct est_dplan *est_dplan_of(struct est *e, const struct est_cand *c,
				     struct diag *d);

/* The first microbatch's forward and the last one's backward of each
 * virtual stage, slowed by the data-parallel collectives they overlap
 * (f_first[s], b_last[s]; est.c has the rule). */
void est_dp_stretch(const struct est_cand *c, const struct est_dplan *dp,
		    double *f_first, double *b_last);

/* What data parallelism adds to rank entry i after its last backward
 * ends at E. */
struct est_tail {
	double exposed;		/* s, reductions after the rank's backward */
	double after;		/* s, non-overlapped gathers after the optimizer */
	double delay;		/* s, start delay from overlapped gathers */
	double tax;		/* s, the final rendezvous' wait (variability) */
};

void est_dp_tail(const struct est_cand *c, const struct est_dplan *dp, int i,
		 double E, struct est_tail *t);

/* A collective over the data-parallel group of the first stage (dense
 * gradients: dp cp GPUs, stride tp; experts 1: the expert data-parallel
 * group, edp GPUs, stride etp ep). */
double est_dp_coll(struct est *e, const struct est_cand *c, int experts,
		   enum coll_op op, double bytes, struct diag *d);

/* A stage's layers forward / backward per microbatch: dense and MoE
 * layers each at their block's time (est_stage.c). */
double est_layers_f(const struct est_cand *c, int64_t s);
double est_layers_b(const struct est_cand *c, int64_t s);
/* The MTP modules a microbatch's backward runs with the summed embedding
 * gradient (tbs; train_impl.c mtp_bwd_block: all of them on one stage,
 * else all but the first), and the backward of all c->mtp modules. */
double est_mtp_summed(const struct est_cand *c);
double est_mtp_b(const struct est_cand *c);

/* ZeRO 3: every unit's time with its gathers and reduce-scatters into
 * c->fsdp_*. 0, or -1 after reporting to d. */
int est_fsdp_units(struct est *e, struct est_cand *c, struct diag *d);

/* Each virtual stage's first forward and last backward of a schedule
 * run (f_run[s], b_run[s]): under no_sync the forward with its units'
 * gathers, the backward followed by its units' reduce-scatters, which
 * the compute stream waits for (train_dp.c reduce_waited); else f_s
 * and b_s. */
void est_fsdp_run_ends(struct est_cand *c, double *f_run, double *b_run);

/* A pipeline to run (est_pipe.c). */
struct est_pipe {
	int schedule;		/* enum pp_schedule */
	int64_t p, v, m;	/* ranks, chunks per rank, microbatches */
	const double *f, *b;	/* s, per virtual stage and microbatch */
	const double *f_first;	/* s, per virtual stage: microbatch 0's forward */
	const double *b_last;	/* s, per virtual stage: the last one's backward */
	const double *f_held, *b_held;	/* s, per virtual stage: a forward,
				 * a backward whose chunk is still gathered
				 * (ZeRO 3 without reshard after forward:
				 * the chunk's previous action on the rank
				 * was a forward; est.c), or NULL: f, b */
	const double *x;	/* s, [r]: a transfer between ranks r and r + 1
				 * (r = p-1: the wrap to rank 0) */
	int lockstep;		/* torch's lock step (sched_lockstep): a
				 * transfer made at time step T starts once
				 * the receiver's actions up to T are done,
				 * and both ranks' later actions wait for it */
};

/* int64s in a pipe_lists key. */
#define EST_PIPE_KEY 5

/* Free one entry of pipe_lists. */
void est_pipe_order_free(void *order);

/* Run pipeline in: rank_end[r] = when rank r's last action ends,
 * chunk_end[r v + c] = when chunk c's last backward on rank r ends.
 * Returns 0; 1, writing nothing, for the interleaved schedule with m not
 * a multiple of p (sched.h's groups of p microbatches would name
 * microbatches past m; job_layout_check refuses such layouts); -1 when
 * out of memory. */
int est_pipe_run(struct est *e, const struct est_pipe *in, double *rank_end,
		 double *chunk_end);

/*
 * The time (s) of collective op of `bytes` over the n GPUs g0, g0 +
 * stride, ..., standing for `replicas` identical groups, on the idle
 * fabric (net_collective_time), remembered. Negative after reporting to
 * d.
 */
/* est_coll_s of a group whose members step by stride within runs of
 * inner and by outer between runs (a data-parallel group with CP under
 * the tp-cp-ep-pp-dp rank order). */
double est_coll_2(struct est *e, enum coll_op op, uint32_t n, uint32_t inner,
		  uint32_t stride, uint32_t outer, uint32_t replicas,
		  double bytes, struct diag *d);
double est_coll_s(struct est *e, enum coll_op op, uint32_t n, uint32_t g0,
		  uint32_t stride, uint32_t replicas, double bytes,
		  struct diag *d);

/* est_coll_s of a ring step (ring != 0: the all-to-all of `bytes` in
 * which each GPU sends bytes / n to the next, point to point, as
 * train.c sends a context-parallel ring's transfers). */
double est_coll_x(struct est *e, enum coll_op op, uint32_t n, uint32_t g0,
		  uint32_t stride, uint32_t replicas, double bytes, int ring,
		  struct diag *d);

/* exec_emax(n), remembered (each is a quadrature of 3601 points). */
double est_emax(struct est *e, double n);

/* The synchronization tax rate of a group of n GPUs (replicas counted):
 * the wait per second its members computed since it last met,
 * e(n) sqrt(sigma_op^2 + sigma_gpu^2) (exec_jitter.c); 0 without
 * variability. */
double est_tax_rate(struct est *e, const struct job_spec *j, double n);

/* est.c: the synchronization tax rank r of candidate c pays at the
 * end of the step (its lateness at the last rendezvous). */
double est_sync_tax(struct est *e, const struct est_cand *c, int64_t r);

/* Free the kernel sets (est_free). */
void est_ksets_free(struct est *e);

/* The blocks of job j (dims d: one microbatch on one GPU), costed on
 * first use. NULL after reporting to d. */
const struct est_blocks *est_blocks_of(struct est *e, const struct job_spec *j,
				       const struct layer_dims *d,
				       struct diag *dg);

#endif
