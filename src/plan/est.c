/*
 * est.c - one training step in closed form (the planner's analytical
 * tier).
 *
 * Notation: m microbatches, p = pp ranks, v = vpp chunks per rank, S = p v
 * virtual stages; virtual stage s = c p + r (chunk c of rank r) holds n_s
 * layers (split.h). Block latencies per microbatch from est_block.c: L^f,
 * L^b a layer's forward and backward (its recomputation included), E^f,
 * E^b the embedding's, H^f, H^b the head's (final norm, LM head, loss), G
 * the all-gather rebuilding a scattered transfer (0 without). x is one
 * pipeline transfer, a send/recv of the activation between the first
 * GPUs of adjacent stages on the idle fabric.
 *
 * Stages, per microbatch:
 *
 *   f_s = n_s L^f + [s = 0] E^f + [s = S-1] H^f + [s > 0] G
 *   b_s = n_s L^b + [s = 0] E^b + [s = S-1] H^b + [s < S-1] G
 *   W_r = sum_c (f_{cp+r} + b_{cp+r})            rank r's work
 *
 * Pipeline (1F1B, interleaved 1F1B and GPipe alike):
 *
 *   T_pipe = m W* + (sum_r W_r - W*) / v + 2 (p - 1) x,   W* = max_r W_r
 *
 * The slowest rank sets the steady state (m W*); the other ranks' work
 * shows once, in the fill and the drain, divided by v because a chunk is
 * 1/v of a rank's work (equal ranks give (m + (p - 1)/v) W, the bubble
 * (p - 1)/(v m) of Narayanan et al. SC'21); the first forward and the
 * last backward each cross p - 1 transfers. Rank r's last backward ends
 * at E_r = T_pipe - sum_{q<r} (b_q + x), rank 0 last.
 *
 * Data parallelism, ZeRO 0-2 (train_dp.c): rank r's gradient buckets
 * (train_buckets) become ready as its last backwards run. In the
 * cool-down a rank runs the last backwards of its chunks in the order
 * v-1, ..., 0, p microbatches each, so chunk c's last backward ends
 * c p b_c before E_r, and a bucket ending at unit u of a chunk is ready
 * at E_r - c p b_c - (b_s - tau_s(u)), tau_s(u) the backward time
 * through unit u. Reductions run one at a time on each chain (the dense
 * buckets' dp stream; with overlap_grad_reduce the routed experts' own
 * dp_expert stream, concurrently):
 *
 *   end_k = max(ready_k, end_{k-1}) + R_k,   R_k all-reduce (ZeRO 0) or
 *                                             reduce-scatter (1-2) of P_k G,
 *                                             k-1 the chain's previous
 *
 * the reductions ending at the later chain's end, then the tied-embedding all-reduce on the first and last ranks, then
 * the optimizer (train_optimizer_s) at max(E_r, end), then, when the
 * distributed optimizer's all-gathers are not overlapped, sum_k A_k
 * (all-gathers of P_k W). Hidden reductions slow the backward they
 * overlap by their sm_share S_dp: + S_dp (sum_k R_k - exposed), or with
 * persistent GEMMs (exec.h's law) by 1 - 1/f, f = exec_owned_slowdown(
 * S_dp, h), h the layer pass's work-weighted owned share (est_dp.c
 * dp_lost; S_dp when h = 0). Every S_dp below reads so.
 * Overlapped all-gathers (overlap_param_gather) run at the start of the
 * step in forward order, one chain per kind (dense, routed experts), and
 * each unit's first forward waits for its bucket: rank r starts its
 * first forward at about r (f + x), so the step is delayed by max_r
 * max(0, max_k (sum_{i<=k, i on k's chain} A_i - F_k) - r (f + x)), F_k
 * the forward time before bucket k's first unit.
 *
 * ZeRO 3 (FSDP): every unit gathers its parameters (A_u, P_u W) before
 * each forward and backward and reduce-scatters its gradient (R_u, P_u G)
 * after each backward, on streams of their own, each gather waiting only
 * for the unit fsdp_prefetch_units before it (train_dp.c fsdp_one), so a
 * unit's compute, slowed beside its collectives, is
 *
 *   forward  c + S_dp min(c, A_u)
 *   backward c + S_dp min(c, A_u + R_u)
 *
 * (the gather and the reduce-scatter share the group's links), c the
 * unit's block latency, and in the steady state a stage's pass takes the
 * longer of its units' compute and its units' collectives, each summed
 * over the stage:
 *
 *   f_s = max(sum_u c_f,u', sum_u A_u)
 *   b_s = max(sum_u c_b,u', sum_u (A_u + R_u) - W) + W
 *
 * (before round 41 each unit took its own longer one, which charged the
 * embedding's gather and reduce-scatter, little compute beside them, in
 * full on every pass of stage 0, though the prefetched gather runs under
 * the layers' compute). Dense models where every pass gathers (neither
 * held nor no_sync, below) take f_s and b_s instead from the rank's two
 * data-parallel streams run across its actions (est_fsdp.c: the gathers
 * fsdp_prefetch_units ahead across action boundaries, the backward's
 * wait for its reduce-scatters sharing the links with the gather issued
 * beside it), in 1F1B's steady state. The first gather is exposed. The compute stream
 * waits at the end of every backward for its reduce-scatters (FSDP2's
 * root post-backward final callback; train_dp.c reduce_waited), which
 * run one after another each after its unit: W is the last unit's R_u
 * (the embedding's on stage 0, else a layer's), the step's last one
 * among them. Without reshard_after_forward (framework
 * fsdp_reshard_after_forward false) a chunk's units stay gathered from a
 * forward to the chunk's next action on the rank, which gathers nothing
 * (train_dp.c fsdp_held): that action's units take c forward and
 * c + S_dp min(c, R_u) backward, with R_u alone on the streams (est_
 * pipe.c runs each action at its own time: 1F1B's backward after its
 * forward, a warm-up's second forward).
 *
 * Under fsdp_pp_no_sync (torch pipelining, pp >= 2) a unit gathers in
 * a schedule run's first forward only and reduce-scatters after the
 * run's last backward of its chunk, the compute stream waiting for the
 * chunk's reduce-scatters: between those the units cost their blocks,
 * the run's first forward of stage s its units' max(c + S_dp min(c,
 * A_u), A_u) each (the per-unit bound, kept there), its
 * last backward b_s + sum_u R_u.
 *
 * Local batches (training.local_batch_size): the step runs g =
 * job_schedule_runs schedules of m / g microbatches back to back, each
 * filled and drained; rank 0 starts a run when it ends the one before,
 * so T = sum over runs of each run's pipeline (pipeline() below), the
 * step's first forwards in the first run and its last backwards (the
 * data-parallel tail) in the last.
 *
 * Step = max over ranks of (start delay + E_r + exposed dp tail +
 * optimizer [+ gathers]) + the framework's host overhead. The split
 * follows exec.h's parts for the rank that ends last: compute = m times
 * its kernel time per microbatch; exposed communication = TP collectives
 * beyond compute (m (W_r - K_r)), the 2 (p - 1) transfers, the start
 * delay and the dp tail; bubble = the rest of T_pipe; optimizer; other =
 * host overhead.
 *
 * Ranks 0, 1 and p - 1 are evaluated: with the even split every middle
 * rank holds the same layers and rank 1, whose last backward ends
 * latest among them, bounds the others.
 *
 * Variability (the system's, exec_jitter.c): every TP collective waits
 * for its group's slowest member (est_block.c), and the step's last
 * rendezvous for the lateness a rank gathered over the step:
 * e(N) sqrt(sigma_op^2 sum_ops t^2 + sigma_gpu^2 C^2).
 *
 * Assumptions beyond the step program's structure: collectives of
 * different streams do not slow each other (each is timed alone on the
 * idle fabric), beyond the data-parallel ones slowing the compute and a
 * cross-node TP group they overlap; the pipeline transfers' own
 * synchronization tax is left out (est_pipe.c).
 */
#include "est.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "models/footprint.h"
#include "models/layout.h"
#include "models/split.h"
#include "models/train.h"
#include "network/net.h"
#include "est_impl.h"

/* ---- lifecycle ---- */

struct est *est_new(const struct system_spec *sys, struct diag *d)
{
	struct est *e = mem_calloc(1, sizeof(*e));
	int64_t world = system_gpus(sys), i;

	if (!e)
		goto oom;
	e->sys = sys;
	memo_init(&e->blocks, sizeof(struct est_bkey), sizeof(struct est_blocks));
	memo_init(&e->kernels, sizeof(struct est_bkey), sizeof(void *));
	memo_init(&e->colls, sizeof(struct est_ckey), sizeof(double));
	memo_init(&e->dpplans, 8 * sizeof(int64_t), sizeof(void *));
	memo_init(&e->pipe_lists, EST_PIPE_KEY * sizeof(int64_t),
		  sizeof(void *));
	memo_init(&e->emax, sizeof(double), sizeof(double));
	memo_init(&e->amax, 3 * sizeof(double) + 2 * sizeof(uint32_t),
		  2 * sizeof(struct est_pass));
	memo_init(&e->xfers, 5 * sizeof(int64_t), sizeof(double *));
	e->net = net_new(sys, NULL, d);
	if (!e->net) {
		est_free(e);
		return NULL;
	}
	e->gpus = mem_alloc((size_t)world * sizeof(*e->gpus));
	e->tp_gpus = mem_alloc((size_t)world * sizeof(*e->tp_gpus));
	e->ggpus = mem_alloc((size_t)world * sizeof(*e->ggpus));
	e->ops = mem_alloc(sizeof(*e->ops));
	e->blk = mem_alloc(sizeof(*e->blk));
	if (!e->gpus || !e->tp_gpus || !e->ggpus || !e->ops || !e->blk)
		goto oom;
	for (i = 0; i < world; i++)
		e->tp_gpus[i] = (uint32_t)i;
	return e;
oom:
	diag_oom(d);
	est_free(e);
	return NULL;
}

/* Free the pipeline orders the memo points to, and the memo. */
static void free_lists(struct memo *m)
{
	size_t i = 0;
	void **v;

	while ((v = memo_next(m, &i)))
		est_pipe_order_free(*v);
	memo_release(m);
}

void est_free(struct est *e)
{
	struct est_dplan *dp, *next;

	if (!e)
		return;
	for (dp = e->dplan_list; dp; dp = next) {
		next = dp->next;
		mem_free(dp->b[0]);
		mem_free(dp->b[1]);
		mem_free(dp->b[2]);
		mem_free(dp->ch[0]);
		mem_free(dp->ch[1]);
		mem_free(dp->ch[2]);
		mem_free(dp);
	}
	memo_release(&e->blocks);
	memo_release(&e->kernels);
	est_ksets_free(e);
	memo_release(&e->colls);
	memo_release(&e->dpplans);
	free_lists(&e->pipe_lists);
	memo_release(&e->emax);
	memo_release(&e->amax);
	{
		size_t i = 0;
		double **x;

		while ((x = memo_next(&e->xfers, &i)))
			mem_free(*x);
		memo_release(&e->xfers);
	}
	net_free(e->net);
	mem_free(e->gpus);
	mem_free(e->tp_gpus);
	mem_free(e->ggpus);
	mem_free(e->ops);
	mem_free(e->blk);
	mem_free(e->split);
	mem_free(e->nmoe);
	mem_free(e->fsdp_t);
	if (e->fsdp.key_B)
		memo_release(&e->fsdp);
	mem_free(e->moe_before);
	mem_free(e->nkind);
	mem_free(e->pipe_t);
	mem_free(e->pipe_x);
	mem_free(e->stage_t);
	mem_free(e);
}

void est_get_stats(const struct est *e, struct est_stats *out)
{
	*out = e->stats;
}

void est_add_stats(struct est *e, const struct est_stats *add)
{
	e->stats.steps += add->steps;
	e->stats.block_sets += add->block_sets;
	e->stats.colls += add->colls;
	e->stats.coll_lookups += add->coll_lookups;
}

/* ---- the step ---- */

/* A hybrid's layers of each kind on each virtual stage into c->nkind
 * (the kinds est_blocks_of costed, in est_kinds' order). */
static void kinds_of(struct est *e, struct est_cand *c)
{
	const struct model_spec *m = c->j->model;
	struct layer_kind kinds[EST_KINDS];
	int n = est_kinds(m, kinds);
	int64_t s, i, first = 0;

	for (s = 0; s < c->S; s++) {
		for (i = 0; i < EST_KINDS; i++)
			e->nkind[s * EST_KINDS + i] = 0;
		for (i = first; i < first + e->split[s]; i++) {
			int x = est_kind_index(m, i, kinds, n);

			if (x >= 0)
				e->nkind[s * EST_KINDS + x]++;
		}
		first += e->split[s];
	}
	c->nkind = e->nkind;
}

/* e->moe_before for model m (once a model: the layers' kinds are
 * fixed; model_layer_moe takes two divisions a layer). 0, or -1 when
 * out of memory. */
static int moe_counts(struct est *e, const struct model_spec *m)
{
	int64_t n = m->num_hidden_layers, i, *v;

	if (e->moe_model == m)
		return 0;
	if (!(v = mem_realloc(e->moe_before, (size_t)(n + 1) * sizeof(*v))))
		return -1;
	e->moe_before = v;
	v[0] = 0;
	for (i = 0; i < n; i++)
		v[i + 1] = v[i] + (model_layer_moe(m, i) != 0);
	e->moe_model = m;
	return 0;
}

/* The layers of each virtual stage into c->split and, for an MoE
 * model, how many of them are MoE layers into c->nmoe; a hybrid's
 * kinds into c->nkind. */
static int split_of(struct est *e, struct est_cand *c, struct diag *d)
{
	const struct model_spec *m = c->j->model;
	int64_t S = c->S, s, i, first = 0;

	if ((size_t)S > e->split_cap) {
		int64_t *sp = mem_realloc(e->split, (size_t)S * sizeof(*sp));
		int64_t *nm = sp ? mem_realloc(e->nmoe, (size_t)S * sizeof(*nm)) :
			      NULL;
		int64_t *nk = nm ? mem_realloc(e->nkind, (size_t)S *
					       EST_KINDS * sizeof(*nk)) : NULL;

		if (sp)
			e->split = sp;
		if (nm)
			e->nmoe = nm;
		if (nk)
			e->nkind = nk;
		if (!sp || !nm || !nk) {
			diag_oom(d);
			return -1;
		}
		e->split_cap = (size_t)S;
	}
	split_layers(c->j, e->split);
	c->split = e->split;
	c->nmoe = NULL;
	c->nkind = NULL;
	if (c->b->nk > 0)
		kinds_of(e, c);
	if (!model_is_moe(m))
		return 0;
	if (moe_counts(e, m) != 0) {
		diag_oom(d);
		return -1;
	}
	for (s = 0; s < S; s++) {
		if (first + e->split[s] <= m->num_hidden_layers) {
			e->nmoe[s] = e->moe_before[first + e->split[s]] -
				     e->moe_before[first];
		} else {	/* past the model's layers: as they count */
			e->nmoe[s] = 0;
			for (i = first; i < first + e->split[s]; i++)
				e->nmoe[s] += model_layer_moe(m, i) != 0;
		}
		first += e->split[s];
	}
	c->nmoe = e->nmoe;
	return 0;
}

/* Kernel time of stage s per microbatch (forward and backward), and of
 * that in bandwidth-bound kernels. */
static double stage_kern(const struct est_cand *c, int64_t s, double *mem)
{
	const struct est_blocks *b = c->b;
	double nm = c->nmoe ? (double)c->nmoe[s] : 0;
	double n = (double)c->split[s] - nm, k, m_s;
	int x;

	if (c->nkind) {	/* a hybrid: by kind */
		n = nm = 0;
		k = m_s = 0;
		for (x = 0; x < b->nk; x++) {
			double q = (double)c->nkind[s * EST_KINDS + x];

			k += q * (b->kf[x].kern_s + b->kb[x].kern_s);
			m_s += q * (b->kf[x].mem_s + b->kb[x].mem_s);
		}
	} else {
		k = n * (b->lf.kern_s + b->lb.kern_s);
		m_s = n * (b->lf.mem_s + b->lb.mem_s);
	}
	if (nm > 0) {
		k += nm * (b->mf.kern_s + b->mb.kern_s);
		m_s += nm * (b->mf.mem_s + b->mb.mem_s);
	}
	if (s == 0) {
		k += b->ef.kern_s + b->eb.kern_s;
		m_s += b->ef.mem_s + b->eb.mem_s;
	}
	if (s == c->S - 1) {
		k += b->hf.kern_s + b->hb.kern_s;
		m_s += b->hf.mem_s + b->hb.mem_s;
	}
	if (s == c->mtp_stage) {
		double ns = est_mtp_summed(c), n1 = (double)c->mtp - ns;

		k += (double)c->mtp * b->tf.kern_s + n1 * b->tb.kern_s +
		     ns * b->tbs.kern_s;
		m_s += (double)c->mtp * b->tf.mem_s + n1 * b->tb.mem_s +
		       ns * b->tbs.mem_s;
	}
	*mem = m_s;
	return k;
}

/* Rank r's work, kernel time and bandwidth-bound kernel time per
 * microbatch. */
static void rank_work(const struct est_cand *c, int64_t r, double *w,
		      double *k, double *mem)
{
	int64_t ch, s;
	double ms;

	*w = *k = *mem = 0;
	for (ch = 0; ch < c->v; ch++) {
		s = ch * c->p + r;
		*w += est_stage_f(c, s) + est_stage_b(c, s);
		*k += stage_kern(c, s, &ms);
		*mem += ms;
	}
}

/* The model FLOPs of one step (as train.c's fill_plan counts them). */
static double model_flops(const struct est_cand *c)
{
	const struct est_blocks *b = c->b;
	double per_mb = (b->ef.model_flops + b->eb.model_flops +
			 b->hf.model_flops + b->hb.model_flops) +
			(double)c->mtp * (b->tf.model_flops + b->tb.model_flops) +
			est_mtp_summed(c) * (b->tbs.model_flops -
					     b->tb.model_flops);
	int64_t s;

	for (s = 0; s < c->S; s++) {
		double nm = c->nmoe ? (double)c->nmoe[s] : 0;
		int x;

		if (c->nkind) {	/* a hybrid: by kind */
			for (x = 0; x < b->nk; x++)
				per_mb += (double)c->nkind[s * EST_KINDS + x] *
					  (b->kf[x].model_flops +
					   b->kb[x].model_flops);
			continue;
		}
		per_mb += ((double)c->split[s] - nm) * (b->lf.model_flops +
							b->lb.model_flops) +
			  nm * (b->mf.model_flops + b->mb.model_flops);
	}
	return per_mb * (double)c->m * (double)c->j->parallelism.tp *
	       (double)c->j->parallelism.cp * (double)c->j->parallelism.dp;
}

/* The send/recv of one activation between each pair of neighbouring
 * ranks (their first GPUs), and the DP collectives' compute share. */
static int transfers(struct est *e, struct est_cand *c, struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;
	uint32_t stage_gpus = (uint32_t)(p->tp * p->cp * p->dp), g[2];
	/* GPUs between neighbouring stages: a stage's, or under the
	 * tp-cp-ep-pp-dp order a block's, tp cp (models/layout.h) */
	uint32_t hop = p->rank_order == ORDER_TP_CP_EP_PP_DP ?
		       (uint32_t)(p->tp * p->cp) : stage_gpus;
	int64_t r, key[5] = { c->p, c->v > 1, stage_gpus, 0, hop };
	double *const *hit, *x;

	memcpy(&key[3], &c->b->pp_B, sizeof(double));
	if ((hit = memo_get(&e->xfers, key))) {
		x = *hit;
	} else {
		if (!(x = mem_alloc((size_t)c->p * sizeof(*x)))) {
			diag_oom(d);
			return -1;
		}
		for (r = 0; r < c->p; r++) {
			/* r -> r + 1, and the wrap p-1 -> 0 as the pair {0, p-1} */
			uint32_t g0 = r < c->p - 1 ? (uint32_t)r * hop : 0;
			uint32_t stride = r < c->p - 1 ? hop :
					  (uint32_t)(c->p - 1) * hop;

			x[r] = 0;
			if (c->p > 1 && (r < c->p - 1 || c->v > 1))
				x[r] = est_coll_s(e, COLL_SENDRECV, 2, g0, stride,
						  stage_gpus, c->b->pp_B, d);
			if (x[r] < 0) {
				mem_free(x);
				return -1;
			}
		}
		if (!memo_put(&e->xfers, key, &x)) {
			mem_free(x);
			diag_oom(d);
			return -1;
		}
	}
	c->x = x;
	g[0] = 0;
	g[1] = (uint32_t)p->tp;	/* the DP group: dp cp GPUs, stride tp */
	c->s_dp = p->dp * p->cp > 1 ? train_dp_sm_share(c->j, COLL_REDUCESCATTER, g,
						2) : 0;
	return 0;
}

/* The tied embedding's gradient all-reduce between the first and the
 * last stage (pp > 1), on ranks 0 and p-1. */
static double tie_s(struct est *e, const struct est_cand *c, int64_t r,
		    struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;

	if (!c->j->model->tie_word_embeddings || c->p < 2 ||
	    (r != 0 && r != c->p - 1))
		return 0;
	return est_coll_s(e, COLL_ALLREDUCE, 2, 0,
			  (uint32_t)((c->p - 1) * p->tp * p->cp *
				     (p->rank_order == ORDER_TP_CP_EP_PP_DP ?
				      1 : p->dp)),
			  (uint32_t)(p->tp * p->cp * p->dp),
			  c->d->vocab / c->d->tp * c->d->hidden * c->d->grad_B, d);
}

/* What rank entry i adds after its last backward (ends at E). */
static int rank_tail(struct est *e, const struct est_cand *c,
		     const struct est_dplan *dp, int i, double E,
		     struct est_tail *t, struct diag *d)
{
	int64_t r = est_rank_of(c, i);
	double tie;

	memset(t, 0, sizeof(*t));
	if (dp)
		est_dp_tail(c, dp, i, E, t);
	/* ZeRO 3: the last reduce-scatters are in the last backward
	 * (est_stage_b's wait; no_sync: b_run) */
	if ((tie = tie_s(e, c, r, d)) < 0)
		return -1;
	t->exposed += tie;
	return 0;
}

/* A lower bound of the pipeline's makespan: rank r cannot start before
 * the first forward has crossed the ranks before it, runs m W_r, and its
 * last backward still has to cross them back:
 * max_r (sum_{q<r} (f_q + b_q) + m W_r), x = 0. With equal ranks it is
 * (m + (p - 1)/v) W, the ideal interleaved 1F1B step. */
static double pipeline_bound(const struct est_cand *c)
{
	double best = 0, chain = 0, w, k, m;
	int64_t r;

	for (r = 0; r < c->p; r++) {
		rank_work(c, r, &w, &k, &m);
		best = fmax(best, chain + (double)c->mg * w);
		chain += est_stage_f(c, r) + est_stage_b(c, r);
	}
	/* g runs: rank 0 starts a run after its last backward of the one
	 * before, and each run takes at least the bound of its mg */
	return (double)c->g * best;
}

/* Virtual stage s's forward and backward per microbatch when its chunk
 * is still gathered (c->held): its units at fsdp_hf, fsdp_hb. */
static void held_stages(struct est_cand *c, double *f, double *b)
{
	double keep[4][3];
	int64_t s;

	memcpy(keep[0], c->fsdp_f, sizeof(keep[0]));
	memcpy(keep[1], c->fsdp_b, sizeof(keep[1]));
	memcpy(keep[2], c->fsdp_xf, sizeof(keep[2]));
	memcpy(keep[3], c->fsdp_xb, sizeof(keep[3]));
	memcpy(c->fsdp_f, c->fsdp_hf, sizeof(keep[0]));
	memcpy(c->fsdp_b, c->fsdp_hb, sizeof(keep[1]));
	memset(c->fsdp_xf, 0, sizeof(keep[2]));
	memcpy(c->fsdp_xb, c->fsdp_hxb, sizeof(keep[3]));
	for (s = 0; s < c->S; s++) {
		f[s] = est_stage_f_of(c, s);
		b[s] = est_stage_b_of(c, s);
	}
	memcpy(c->fsdp_f, keep[0], sizeof(keep[0]));
	memcpy(c->fsdp_b, keep[1], sizeof(keep[1]));
	memcpy(c->fsdp_xf, keep[2], sizeof(keep[2]));
	memcpy(c->fsdp_xb, keep[3], sizeof(keep[3]));
}

/* est_pipe_run, its failures reported to d. */
static int run_pipe(struct est *e, const struct est_pipe *in, double *rank_end,
		    double *chunk_end, struct diag *d)
{
	int rc = est_pipe_run(e, in, rank_end, chunk_end);

	if (rc < 0)
		diag_oom(d);
	else if (rc > 0)
		diag_error(d, NULL, 0, 0, "plan: the interleaved schedule needs "
			   "microbatches a multiple of pp (%lld microbatches, "
			   "pp %lld)", (long long)in->m, (long long)in->p);
	return rc != 0 ? -1 : 0;
}

/* Run the pipeline recurrence (est_pipe.c) into c->rank_end and
 * c->chunk_end, the first forwards and last backwards slowed by the
 * data-parallel collectives they overlap (dp may be NULL).
 *
 * A step runs g schedules of mg microbatches one after another
 * (job_schedule_runs; train.c plan_stage), each filled and drained: a
 * run's first action is rank 0's forward, every other rank's first
 * action waits for it, and rank 0's last action, the backward of the
 * run's last microbatch, waits for every rank's last (the transfers'
 * streams are then idle too). So the next run is the same recurrence
 * shifted by rank 0's end of the one before, and the step is run A (the
 * step's first forwards, a run's last backwards), g - 2 runs B (a
 * run's both), run C (a run's first forwards, the step's last
 * backwards), each run's first forward and last backward those of
 * est_fsdp_run_ends. */
static int pipeline(struct est *e, struct est_cand *c,
		    const struct est_dplan *dp, struct diag *d)
{
	int64_t S = c->S, ends = c->p + c->p * c->v, k;
	size_t need = (size_t)(9 * S + 3 * ends);
	double *t, *f_first, *b_last, *f_run, *b_run, *out, off, *held;
	struct est_pipe in;
	int64_t s;

	if (need > e->stage_t_cap) {
		t = mem_realloc(e->stage_t, need * sizeof(*t));
		if (!t) {
			diag_oom(d);
			return -1;
		}
		e->stage_t = t;
		e->stage_t_cap = need;
	}
	t = e->stage_t;
	f_first = t + 2 * S;
	b_last = t + 3 * S;
	f_run = t + 4 * S;
	b_run = t + 5 * S;
	held = t + 6 * S;	/* f_held, b_held */
	out = t + 9 * S;	/* runs A, B, C: rank ends, then chunk ends */
	c->fsdp_w = NULL;
	if (c->streams) {
		if (est_fsdp_streams(e, c, t, t + S, t + 8 * S) != 0) {
			diag_oom(d);
			return -1;
		}
		c->fsdp_w = t + 8 * S;
	} else {
		for (s = 0; s < S; s++) {
			t[s] = est_stage_f_of(c, s);
			t[S + s] = est_stage_b_of(c, s);
		}
	}
	/* the units are final: every later read of a stage's time (here,
	 * est_dp.c, the tails, the tax, the parts) takes these */
	c->sf = t;
	c->sb = t + S;
	est_fsdp_run_ends(c, f_run, b_run);
	c->f_run = f_run;
	c->b_run = b_run;
	memcpy(f_first, f_run, (size_t)S * sizeof(*t));
	memcpy(b_last, b_run, (size_t)S * sizeof(*t));
	if (dp)
		est_dp_stretch(c, dp, f_first, b_last);
	in = (struct est_pipe){ c->j->parallelism.schedule, c->p, c->v, c->mg,
				t, t + S, f_first, c->g == 1 ? b_last : b_run,
				NULL, NULL, c->x, sched_lockstep(c->j, c->mg) };
	if (c->held) {
		held_stages(c, held, held + S);
		in.f_held = c->f_held = held;
		in.b_held = c->b_held = held + S;
		/* a held backward gathers nothing: the rank last met its
		 * group at its forward's last gather, or under
		 * fsdp_reduce_one_in_flight at its last unit's wait for the
		 * reduce-scatters before it (est_sync_tax) */
		for (s = 0; s < S; s++)
			t[8 * S + s] = c->j->framework->fsdp_reduce_one_in_flight ?
				       c->fsdp_hb[s == 0 ? EST_EMBED : EST_LAYER] :
				       held[S + s];
		c->fsdp_w = t + 8 * S;
	}
	/* est_sync_tax reads fsdp_w for one stage only (a pipelined ZeRO 3
	 * layout keeps its sum over the ops): with S > 1 the values stay
	 * in t, unread, and the candidate says none */
	if (S > 1)
		c->fsdp_w = NULL;
	if (run_pipe(e, &in, out, out + c->p, d) != 0)
		return -1;
	c->rank_end = out;
	c->chunk_end = out + c->p;
	if (c->g == 1)
		return 0;
	off = out[0];
	in.f_first = f_run;
	if (c->g > 2) {
		if (run_pipe(e, &in, out + ends, out + ends + c->p, d) != 0)
			return -1;
		off += (double)(c->g - 2) * out[ends];
	}
	in.b_last = b_last;
	if (run_pipe(e, &in, out + 2 * ends, out + 2 * ends + c->p, d) != 0)
		return -1;
	for (k = 0; k < ends; k++)
		out[k] = off + out[2 * ends + k];
	return 0;
}

/* ZeRO 3 without data parallelism shards nothing: units as blocks. */
static void fsdp_alone(struct est_cand *c)
{
	c->fsdp_f[EST_LAYER] = c->b->lf.lat_s;
	c->fsdp_f[EST_EMBED] = c->b->ef.lat_s;
	c->fsdp_f[EST_HEAD] = c->b->hf.lat_s;
	c->fsdp_b[EST_LAYER] = c->b->lb.lat_s;
	c->fsdp_b[EST_EMBED] = c->b->eb.lat_s;
	c->fsdp_b[EST_HEAD] = c->b->hb.lat_s;
	memset(c->fsdp_xf, 0, sizeof(c->fsdp_xf));
	memset(c->fsdp_xb, 0, sizeof(c->fsdp_xb));
}

/* defer_embedding_wgrad_compute (train.c: t->defer, build_drain): the
 * first wgrad_deferral_limit backwards of the last stage (all m with 0)
 * leave the head's weight gradient for the drain after the last
 * backward, where instance i's all-gather runs under GEMM i - 1 (a
 * double buffer): the first instance whole (hw: all-gather, GEMM), then
 * each later one the longer of its GEMM (hw's kernel) and its
 * all-gather (the rest), so
 *
 *   drain = hw + (n - 1) max(GEMM, hw - GEMM),  n the deferred. */
static void drain(struct est_cand *c)
{
	const struct parallel_spec *p = &c->j->parallelism;
	double w, g;

	c->defer = 0;
	c->drain_s = 0;
	if (!p->defer_embedding_wgrad || p->pp < 2)
		return;
	c->defer = (double)(p->wgrad_deferral_limit > 0 &&
			    p->wgrad_deferral_limit < c->m ?
			    p->wgrad_deferral_limit : c->m);
	w = c->b->hw.lat_s;
	g = c->b->hw.kern_s;
	c->drain_s = w + (c->defer - 1) * fmax(g, w - g);
}

/* Blocks and split of c (and, unless bound_only, its collectives). */
static int setup(struct est *e, struct est_cand *c, int bound_only,
		 struct diag *d)
{
	const struct job_spec *j = c->j;
	const struct parallel_spec *p = &j->parallelism;

	c->m = job_microbatches(j);
	c->g = job_schedule_runs(j);
	c->mg = c->m / c->g;
	c->p = p->pp;
	c->v = p->vpp;
	c->S = c->p * c->v;
	c->mtp = model_is_moe(j->model) ? j->moe.mtp_layers : 0;
	c->mtp_stage = split_mtp_stage(j);
	/* a2a_overlap pairs a forward with a backward of another
	 * microbatch (sched.h; 1F1B orders): all but a rank's warm-up, about (v - 1) p +
	 * p - 1 actions of its m v forwards, and the first (pp 1: F0, then
	 * B0 F1, ...) */
	c->ov = 0;
	if (model_is_moe(j->model) && j->moe.a2a_overlap && p->ep > 1 &&
	    p->schedule != SCHED_GPIPE)	/* GPipe: forwards, then backwards */
		c->ov = fmax(0, (double)(c->mg * c->v - (c->v - 1) * c->p -
					 (c->p - 1) - 1) /
			     (double)(c->mg * c->v));	/* a run's */
	if (!(c->b = est_blocks_of(e, j, c->d, d)) || split_of(e, c, d) != 0)
		return -1;
	drain(c);
	if (j->training.zero_stage >= 3)
		fsdp_alone(c);	/* at least the blocks (the bound) */
	if (bound_only)
		return 0;
	if (transfers(e, c, d) != 0)
		return -1;
	c->no_sync = j->framework->fsdp_pp_no_sync &&
		     j->training.zero_stage >= 3 && p->pp >= 2 &&
		     p->dp * p->cp > 1;
	c->held = j->training.zero_stage >= 3 && p->dp * p->cp > 1 &&
		  !c->no_sync && !j->framework->fsdp_reshard_after_forward;
	if (j->training.zero_stage >= 3 && p->dp * p->cp > 1 &&
	    est_fsdp_units(e, c, d) != 0)
		return -1;
	/* the DP streams across actions (est_fsdp.c): dense models, each
	 * unit gathered before every pass */
	c->streams = j->training.zero_stage >= 3 && p->dp * p->cp > 1 &&
		     !c->no_sync && !c->held && !c->nmoe && !c->nkind &&
		     c->mtp == 0;
	return 0;
}

/* The synchronization tax at the end of the step (exec_jitter.c): the
 * step's last rendezvous, the final gradient reduction over the stage's
 * dp x tp GPUs (every one of them, replicas counted), waits for the
 * lateness rank r gathered over the whole step,
 *
 *   e(N) sqrt(sigma_op^2 sum_ops t_op^2 + sigma_gpu^2 C^2),
 *
 * its ops the forward and backward of each (chunk, microbatch), C its
 * compute. ZeRO 3 from the DP streams (c->fsdp_w): the rank meets its
 * data-parallel group at every unit's gather and reduce-scatter, and a
 * meeting its compute waited for realigns it (the run's rule), so the
 * last rendezvous waits only for the compute since then, one op of w =
 * fsdp_w[r] (its last backward's, chunk 0's): t_op = C = w; one stage
 * only (c->S == 1, where it was checked against the runs): a pipelined
 * ZeRO 3 layout keeps the sum over its ops (pytorch-fsdp llama3-8b
 * mi300x tp1 pp2: run 834.6 ms, 823.6 with the sum, 818.0 with w). The
 * rendezvous inside the step (TP collectives, transfers) add their own
 * smaller waits, left out. */
double est_sync_tax(struct est *e, const struct est_cand *c, int64_t r)
{
	const struct variability_spec *v = &c->j->system->variability;
	double sq = 0, sum = 0, f, b, n;
	int64_t ch;

	if (v->op_jitter <= 0 && v->gpu_spread <= 0)
		return 0;
	n = (double)(c->j->parallelism.dp * c->j->parallelism.tp *
		     c->j->parallelism.cp);
	if (n < 2)
		return 0;
	if (c->S == 1 && c->fsdp_w && c->fsdp_w[r] >= 0) {
		sq = c->fsdp_w[r] * c->fsdp_w[r];
		sum = c->fsdp_w[r];
		return est_emax(e, n) * sqrt(v->op_jitter * v->op_jitter * sq +
					   v->gpu_spread * v->gpu_spread *
					   sum * sum);
	}
	for (ch = 0; ch < c->v; ch++) {
		f = est_stage_f(c, ch * c->p + r);
		b = est_stage_b(c, ch * c->p + r);
		sq += (double)c->m * (f * f + b * b);
		sum += (double)c->m * (f + b);
	}
	return est_emax(e, n) * sqrt(v->op_jitter * v->op_jitter * sq +
				   v->gpu_spread * v->gpu_spread * sum * sum);
}

/* What rank r's held actions (c->held) save a schedule run against
 * its work at the gathering forward and backward times: sum over its
 * forwards and backwards whose chunk is still gathered (est_pipe_order.c
 * step_at has the rule) of f_s - f_held[s], b_s - b_held[s]. -1 when
 * out of memory. */
static double held_saving(const struct est_cand *c, int64_t r)
{
	int64_t n = sched_actions(c->mg, c->v), k, s;
	struct sched_action *a;
	uint8_t held[256] = { 0 };
	double save = 0;

	if (!c->held || c->v > 256)
		return 0;
	if (!(a = mem_alloc((size_t)n * sizeof(*a))))
		return -1;
	sched_rank(c->j->parallelism.schedule, c->p, c->v, c->mg, r, a);
	for (k = 0; k < n; k++) {
		s = (int64_t)a[k].chunk * c->p + r;
		if (held[a[k].chunk])
			save += a[k].bwd ? est_stage_b(c, s) - c->b_held[s] :
					   est_stage_f(c, s) - c->f_held[s];
		held[a[k].chunk] = !a[k].bwd;
	}
	mem_free(a);
	return save;
}

/* Split the step of the rank that ends last (entry i) into exec.h's
 * parts. */
static void parts(const struct est_cand *c, int i, double step, double delay,
		  double opt, const struct est_tail *t, struct est_step *out)
{
	double w, k, mem, over = c->j->framework->step_overhead_s, runs = 0;
	double *ps = out->part_s;
	int64_t r = est_rank_of(c, i), ch, s;

	rank_work(c, r, &w, &k, &mem);
	/* held actions: the gathers they do not make */
	runs = -(double)c->g * fmax(0, held_saving(c, r));
	/* no_sync: each run's gathers and reduce-scatters beyond the blocks */
	for (ch = 0; c->no_sync && ch < c->v; ch++) {
		s = ch * c->p + r;
		runs += (double)c->g * (c->f_run[s] - est_stage_f(c, s) +
					c->b_run[s] - est_stage_b(c, s));
	}
	ps[EXEC_COMPUTE] = (double)c->m * k;
	out->mem_bound_s = (double)c->m * mem;
	ps[EXEC_OPTIMIZER] = opt;
	ps[EXEC_OTHER] = over + t->tax;
	ps[EXEC_EXPOSED_COMM] = (double)c->m * (w - k) + runs + delay +
				t->exposed + t->after;
	ps[EXEC_BUBBLE] = fmax(0, step - ps[EXEC_COMPUTE] - opt - over - t->tax -
			       ps[EXEC_EXPOSED_COMM]);
}

int est_bound(struct est *e, const struct job_spec *j, double *lb_s,
	      struct diag *d)
{
	struct layer_dims dims;
	struct est_cand c = { .j = j, .d = &dims };

	layer_dims_from_job(j, &dims);
	if (setup(e, &c, 1, d) != 0)
		return -1;
	*lb_s = pipeline_bound(&c) + train_optimizer_s(j, &dims, c.split, 0) +
		j->framework->step_overhead_s;
	return 0;
}

int est_step(struct est *e, const struct job_spec *j, struct est_step *out,
	     struct diag *d)
{
	const struct parallel_spec *p = &j->parallelism;
	struct layer_dims dims;
	struct est_cand c = { .j = j, .d = &dims };
	const struct est_dplan *dp = NULL;
	double best = -1, delay = 0, opt[3] = { 0 };
	struct est_tail tl[3];
	int i, last = 0;

	e->stats.steps++;
	memset(out, 0, sizeof(*out));
	memset(tl, 0, sizeof(tl));
	layer_dims_from_job(j, &dims);
	if (setup(e, &c, 0, d) != 0)
		return -1;
	if ((p->dp * p->cp > 1 || (model_is_moe(j->model) && p->edp > 1)) &&
	    j->training.zero_stage < 3 && !(dp = est_dplan_of(e, &c, d)))
		return -1;
	if (pipeline(e, &c, dp, d) != 0)
		return -1;
	for (i = 0; i < 3; i++) {
		int64_t r = est_rank_of(&c, i);
		double E, fin;

		if (!est_rank_used(&c, i))
			continue;
		E = c.rank_end[r] + (r == c.p - 1 ? c.drain_s : 0);
		if (rank_tail(e, &c, dp, i, E, &tl[i], d) != 0)
			return -1;
		opt[i] = train_optimizer_s(j, &dims, c.split, r);
		tl[i].tax = est_sync_tax(e, &c, r);
		fin = E + tl[i].exposed + opt[i] + tl[i].after + tl[i].tax;
		delay = fmax(delay, tl[i].delay);
		if (fin > best) {
			best = fin;
			last = i;
		}
	}
	if (j->training.zero_stage >= 3 && p->dp * p->cp > 1)
		delay += c.fsdp_first_ag;
	out->step_s = best + delay + j->framework->step_overhead_s;
	parts(&c, last, out->step_s, delay, opt[last], &tl[last], out);
	out->model_flops = model_flops(&c);
	out->tokens = (double)j->training.global_batch_size *
		      (double)j->training.seq_len;
	return 0;
}
