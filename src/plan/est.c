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
 * through unit u. Reductions run one at a time on the dp stream:
 *
 *   end_k = max(ready_k, end_{k-1}) + R_k,   R_k all-reduce (ZeRO 0) or
 *                                             reduce-scatter (1-2) of P_k G
 *
 * then the tied-embedding all-reduce on the first and last ranks, then
 * the optimizer (train_optimizer_s) at max(E_r, end), then, when the
 * distributed optimizer's all-gathers are not overlapped, sum_k A_k
 * (all-gathers of P_k W). Hidden reductions slow the backward they
 * overlap by their sm_share S_dp: + S_dp (sum_k R_k - exposed).
 * Overlapped all-gathers (overlap_param_gather) run at the start of the
 * step in forward order and each unit's first forward waits for its
 * bucket: rank r starts its first forward at about r (f + x), so the
 * step is delayed by max_r max(0, max_k (sum_{i<=k} A_i - F_k) - r (f +
 * x)), F_k the forward time before bucket k's first unit.
 *
 * ZeRO 3 (FSDP): every unit gathers its parameters (A_u, P_u W) before
 * each forward and backward and reduce-scatters its gradient (R_u, P_u G)
 * after each backward, fsdp_prefetch_units ahead of compute, so in the
 * steady state a unit takes
 *
 *   forward  max(c + S_dp min(c, A_u), A_u)
 *   backward max(c + S_dp min(c, A_u + R_u), A_u + R_u)
 *
 * (the gather and the reduce-scatter share the group's links), c the
 * unit's block latency; these replace the blocks in f_s and b_s. The
 * first gather and the last reduce-scatter are exposed.
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
 * Assumptions beyond the step program's structure: collectives of
 * different streams do not slow each other (each is timed alone on the
 * idle fabric); the steady state has no stall from transfers (x is
 * hidden behind compute after the fill).
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
	memo_init(&e->colls, sizeof(struct est_ckey), sizeof(double));
	memo_init(&e->dpplans, 6 * sizeof(int64_t), sizeof(void *));
	e->net = net_new(sys, NULL, d);
	if (!e->net) {
		est_free(e);
		return NULL;
	}
	e->gpus = mem_alloc((size_t)world * sizeof(*e->gpus));
	e->tp_gpus = mem_alloc((size_t)world * sizeof(*e->tp_gpus));
	e->ops = mem_alloc(sizeof(*e->ops));
	e->blk = mem_alloc(sizeof(*e->blk));
	if (!e->gpus || !e->tp_gpus || !e->ops || !e->blk)
		goto oom;
	for (i = 0; i < world; i++)
		e->tp_gpus[i] = (uint32_t)i;
	return e;
oom:
	diag_oom(d);
	est_free(e);
	return NULL;
}

/* A rank's gradient buckets in the order they complete (ZeRO 0-2). */
struct dbucket {
	int64_t chunk;		/* model chunk on the rank */
	int64_t last;		/* its last unit, backward order */
	double params;		/* parameters of one GPU */
};

struct dplan {
	struct dplan *next;	/* every dplan of the estimator */
	int64_t n[3];		/* buckets of ranks 0, 1, p-1 */
	struct dbucket *b[3];
};

void est_free(struct est *e)
{
	struct dplan *dp, *next;

	if (!e)
		return;
	for (dp = e->dplan_list; dp; dp = next) {
		next = dp->next;
		mem_free(dp->b[0]);
		mem_free(dp->b[1]);
		mem_free(dp->b[2]);
		mem_free(dp);
	}
	memo_release(&e->blocks);
	memo_release(&e->colls);
	memo_release(&e->dpplans);
	net_free(e->net);
	mem_free(e->gpus);
	mem_free(e->tp_gpus);
	mem_free(e->ops);
	mem_free(e->blk);
	mem_free(e->split);
	mem_free(e);
}

void est_get_stats(const struct est *e, struct est_stats *out)
{
	*out = e->stats;
}

/* ---- what one candidate is made of ---- */

/* The per-candidate state est_step works through. */
struct cand {
	const struct job_spec *j;
	const struct est_blocks *b;
	const struct layer_dims *d;
	const int64_t *split;
	int64_t m, p, v, S;
	double x;		/* s, one pipeline transfer */
	double s_dp;		/* compute share a DP collective holds */
	/* ZeRO 3: a unit's forward/backward time with its collectives */
	double fsdp_f[3], fsdp_b[3];	/* [layer, embed, head] */
	double fsdp_first_ag, fsdp_last_rs;
};

enum { U_LAYER, U_EMBED, U_HEAD };

/* Forward / backward latency of one unit kind, ZeRO 3 folded in. */
static double unit_f(const struct cand *c, int u)
{
	const struct est_pass *e[3] = { &c->b->lf, &c->b->ef, &c->b->hf };

	return c->j->training.zero_stage >= 3 ? c->fsdp_f[u] : e[u]->lat_s;
}

static double unit_b(const struct cand *c, int u)
{
	const struct est_pass *e[3] = { &c->b->lb, &c->b->eb, &c->b->hb };

	return c->j->training.zero_stage >= 3 ? c->fsdp_b[u] : e[u]->lat_s;
}

static double stage_f(const struct cand *c, int64_t s)
{
	return (double)c->split[s] * unit_f(c, U_LAYER) +
	       (s == 0 ? unit_f(c, U_EMBED) : 0) +
	       (s == c->S - 1 ? unit_f(c, U_HEAD) : 0) +
	       (s > 0 ? c->b->pg.lat_s : 0);
}

static double stage_b(const struct cand *c, int64_t s)
{
	return (double)c->split[s] * unit_b(c, U_LAYER) +
	       (s == 0 ? unit_b(c, U_EMBED) : 0) +
	       (s == c->S - 1 ? unit_b(c, U_HEAD) : 0) +
	       (s < c->S - 1 ? c->b->pg.lat_s : 0);
}

/* Kernel time of stage s per microbatch (forward and backward). */
static double stage_kern(const struct cand *c, int64_t s, double *mem)
{
	const struct est_blocks *b = c->b;
	double n = (double)c->split[s], k, m_s;

	k = n * (b->lf.kern_s + b->lb.kern_s);
	m_s = n * (b->lf.mem_s + b->lb.mem_s);
	if (s == 0) {
		k += b->ef.kern_s + b->eb.kern_s;
		m_s += b->ef.mem_s + b->eb.mem_s;
	}
	if (s == c->S - 1) {
		k += b->hf.kern_s + b->hb.kern_s;
		m_s += b->hf.mem_s + b->hb.mem_s;
	}
	*mem = m_s;
	return k;
}

/* Backward time of stage s through unit u (backward order: head,
 * layers, embedding), the scattered receive's all-gather first. */
static double bwd_through(const struct cand *c, int64_t s, int64_t u)
{
	int has_head = s == c->S - 1, has_embed = s == 0;
	int64_t units = c->split[s] + has_head + has_embed;
	double t = s < c->S - 1 ? c->b->pg.lat_s : 0;
	int64_t layers = u + 1 - has_head;

	if (has_head)
		t += unit_b(c, U_HEAD);
	if (has_embed && u == units - 1) {
		t += unit_b(c, U_EMBED);
		layers--;
	}
	return t + (double)(layers > 0 ? layers : 0) * unit_b(c, U_LAYER);
}

/* Forward time of stage s before unit u (forward order: embedding,
 * layers, head). */
static double fwd_before(const struct cand *c, int64_t s, int64_t u)
{
	int has_embed = s == 0;
	double t = s > 0 ? c->b->pg.lat_s : 0;
	int64_t layers = u - has_embed;

	if (has_embed && u > 0)
		t += unit_f(c, U_EMBED);
	if (layers > c->split[s])
		layers = c->split[s];
	return t + (double)(layers > 0 ? layers : 0) * unit_f(c, U_LAYER);
}

/* ---- data-parallel plans (ZeRO 0-2): buckets of ranks 0, 1, p-1 ---- */

static int64_t rank_of(const struct cand *c, int i)
{
	return i == 0 ? 0 : i == 1 ? 1 : c->p - 1;
}

/* Whether entry i stands for a rank of its own (p = 1 has only rank 0,
 * p = 2 no middle rank). */
static int rank_used(const struct cand *c, int i)
{
	int64_t r = rank_of(c, i);

	return r < c->p && !(i == 2 && (r == 0 || r == 1));
}

static int build_dplan(const struct cand *c, struct dplan *dp)
{
	double size = train_bucket_size(c->j);
	int64_t last[1024], ch, k, n, vs;
	double params[1024];
	int i;

	for (i = 0; i < 3; i++) {
		int64_t r = rank_of(c, i), total = 0;

		if (!rank_used(c, i))
			continue;
		for (ch = 0; ch < c->v; ch++)
			total += c->split[ch * c->p + r] + 2;
		dp->b[i] = mem_alloc((size_t)total * sizeof(*dp->b[i]));
		if (!dp->b[i])
			return -1;
		dp->n[i] = 0;
		for (ch = c->v - 1; ch >= 0; ch--) {	/* completion order */
			vs = ch * c->p + r;
			if (c->split[vs] + 2 > 1024)
				BUG("more than 1022 layers on a virtual stage");
			n = train_buckets(c->j, c->d, c->split, vs, size, last,
					  params);
			for (k = 0; k < n; k++)
				dp->b[i][dp->n[i]++] = (struct dbucket){
					ch, last[k], params[k] };
		}
	}
	return 0;
}

static const struct dplan *dplan_of(struct est *e, const struct cand *c,
				    struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;
	int64_t key[6] = { p->tp, p->cp, p->pp, p->vpp, p->dp,
			   c->j->model->num_hidden_layers };
	struct dplan *const *hit = memo_get(&e->dpplans, key);
	struct dplan *dp;

	if (hit)
		return *hit;
	dp = mem_calloc(1, sizeof(*dp));
	if (!dp)
		goto oom;
	dp->next = e->dplan_list;
	e->dplan_list = dp;
	if (build_dplan(c, dp) != 0 || !memo_put(&e->dpplans, key, &dp))
		goto oom;
	return dp;
oom:
	diag_oom(d);
	return NULL;
}

/* ---- collectives of one candidate ---- */

/* Over rank r's data-parallel group (first stage's, tp index 0). */
static double dp_coll(struct est *e, const struct cand *c, enum coll_op op,
		      double bytes, struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;

	return est_coll_s(e, op, (uint32_t)p->dp, 0, (uint32_t)(p->tp * p->cp),
			  (uint32_t)p->tp, bytes, d);
}

static int fsdp_units(struct est *e, struct cand *c, struct diag *d)
{
	const struct job_spec *j = c->j;
	int both = c->p == 1, u;
	static const enum footprint_unit kinds[3] = { UNIT_LAYER, UNIT_EMBED,
						      UNIT_HEAD };
	const struct est_pass *f[3] = { &c->b->lf, &c->b->ef, &c->b->hf };
	const struct est_pass *b[3] = { &c->b->lb, &c->b->eb, &c->b->hb };

	for (u = 0; u < 3; u++) {
		double pu = footprint_unit_params(j, c->d, kinds[u], both) / c->d->tp;
		double ag = dp_coll(e, c, COLL_ALLGATHER, pu * c->d->act_B, d);
		double rs = dp_coll(e, c, COLL_REDUCESCATTER, pu * c->d->grad_B, d);
		double cf = f[u]->lat_s, cb = b[u]->lat_s;

		if (ag < 0 || rs < 0)
			return -1;
		c->fsdp_f[u] = fmax(cf + c->s_dp * fmin(cf, ag), ag);
		c->fsdp_b[u] = fmax(cb + c->s_dp * fmin(cb, ag + rs), ag + rs);
		if (u == U_EMBED) {
			c->fsdp_first_ag = ag;
			c->fsdp_last_rs = rs;
		}
	}
	return 0;
}

/* The send/recv of one activation between stage 0 and 1, and the DP
 * collectives' compute share. */
static int transfers(struct est *e, struct cand *c, struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;
	uint32_t stage_gpus = (uint32_t)(p->tp * p->cp * p->dp), g[2];

	c->x = 0;
	if (c->p > 1) {
		c->x = est_coll_s(e, COLL_SENDRECV, 2, 0, stage_gpus,
				  (uint32_t)(p->tp * p->dp), c->b->pp_B, d);
		if (c->x < 0)
			return -1;
	}
	g[0] = 0;
	g[1] = (uint32_t)(p->tp * p->cp);
	c->s_dp = p->dp > 1 ? train_coll_sm_share(c->j, COLL_REDUCESCATTER, g,
						  2, 0) : 0;
	return 0;
}

/* ---- the data-parallel tail of one rank ---- */

struct tail {
	double exposed;		/* s, reductions after the rank's backward */
	double after;		/* s, non-overlapped gathers after the optimizer */
	double delay;		/* s, start delay from overlapped gathers */
};

static int zero12_tail(struct est *e, const struct cand *c,
		       const struct dplan *dp, int i, double E, struct tail *t,
		       struct diag *d)
{
	const struct job_spec *j = c->j;
	int64_t r = rank_of(c, i), k;
	enum coll_op op = j->training.zero_stage == 0 ? COLL_ALLREDUCE :
			  COLL_REDUCESCATTER;
	double end = 0, total = 0, gathered = 0, need = 0;
	double lead = (double)r * (stage_f(c, r) + c->x);

	for (k = 0; k < dp->n[i]; k++) {
		const struct dbucket *bk = &dp->b[i][k];
		int64_t vs = bk->chunk * c->p + r;
		double gap = (double)(bk->chunk * c->p) * stage_b(c, vs);
		double ready = E - gap - (stage_b(c, vs) - bwd_through(c, vs, bk->last));
		double red = dp_coll(e, c, op, bk->params * c->d->grad_B, d);

		if (red < 0)
			return -1;
		if (!j->framework->overlap_grad_reduce)
			ready = E;
		end = fmax(end, ready) + red;
		total += red;
	}
	t->exposed = fmax(0, end - E);
	t->exposed += c->s_dp * fmax(0, total - t->exposed);
	t->after = t->delay = 0;
	if (j->training.zero_stage == 0)
		return 0;
	/* the all-gathers, forward order: the reverse of completion */
	for (k = dp->n[i] - 1; k >= 0; k--) {
		const struct dbucket *bk = &dp->b[i][k];
		int64_t vs = bk->chunk * c->p + r;
		int64_t units = c->split[vs] + (vs == 0) + (vs == c->S - 1);
		double ag = dp_coll(e, c, COLL_ALLGATHER,
				    bk->params * c->d->act_B, d);

		if (ag < 0)
			return -1;
		gathered += ag;
		if (!j->framework->overlap_param_gather) {
			t->after += ag;
			continue;
		}
		if (bk->chunk == 0) {	/* the first forward waits for these */
			double before = fwd_before(c, vs, units - 1 - bk->last);

			need = fmax(need, gathered - before);
		}
	}
	t->delay = fmax(0, need - lead);
	return 0;
}

/* ---- the step ---- */

static int64_t *split_of(struct est *e, const struct job_spec *j, int64_t S,
			 struct diag *d)
{
	if ((size_t)S > e->split_cap) {
		int64_t *s = mem_realloc(e->split, (size_t)S * sizeof(*s));

		if (!s) {
			diag_oom(d);
			return NULL;
		}
		e->split = s;
		e->split_cap = (size_t)S;
	}
	split_layers(j, e->split);
	return e->split;
}

/* The model FLOPs of one step (as train.c's fill_plan counts them). */
static double model_flops(const struct cand *c)
{
	const struct est_blocks *b = c->b;
	double per_mb = (b->ef.model_flops + b->eb.model_flops +
			 b->hf.model_flops + b->hb.model_flops);
	int64_t s;

	for (s = 0; s < c->S; s++)
		per_mb += (double)c->split[s] * (b->lf.model_flops +
						 b->lb.model_flops);
	return per_mb * (double)c->m * (double)c->j->parallelism.tp *
	       (double)c->j->parallelism.dp;
}

/* Per-rank work and kernel time per microbatch into w[] and k[]. */
static void rank_work(const struct cand *c, int64_t r, double *w, double *k,
		      double *mem)
{
	int64_t ch, s;
	double ms;

	*w = *k = *mem = 0;
	for (ch = 0; ch < c->v; ch++) {
		s = ch * c->p + r;
		*w += stage_f(c, s) + stage_b(c, s);
		*k += stage_kern(c, s, &ms);
		*mem += ms;
	}
}

/* Rank r's last backward end (E_r), ranks 0, 1 and p-1. */
static double last_backward(const struct cand *c, double t_pipe, int i)
{
	double hop0 = stage_b(c, 0) + c->x;

	if (i == 0)
		return t_pipe;
	if (i == 1)
		return t_pipe - hop0;
	return t_pipe - hop0 - (double)(c->p - 2) * (stage_b(c, 1) + c->x);
}

/* The tied embedding's gradient all-reduce between the first and the
 * last stage (pp > 1), on ranks 0 and p-1. */
static double tie_s(struct est *e, const struct cand *c, int64_t r,
		    struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;

	if (!c->j->model->tie_word_embeddings || c->p < 2 ||
	    (r != 0 && r != c->p - 1))
		return 0;
	return est_coll_s(e, COLL_ALLREDUCE, 2, 0,
			  (uint32_t)((c->p - 1) * p->tp * p->cp * p->dp),
			  (uint32_t)(p->tp * p->dp),
			  c->d->vocab / c->d->tp * c->d->hidden * c->d->grad_B, d);
}

/* What rank i (0, 1, p-1) adds after its last backward. */
static int rank_tail(struct est *e, const struct cand *c,
		     const struct dplan *dp, int i, double E, struct tail *t,
		     struct diag *d)
{
	int64_t r = rank_of(c, i);
	double tie;

	memset(t, 0, sizeof(*t));
	if (dp && zero12_tail(e, c, dp, i, E, t, d) != 0)
		return -1;
	if (c->j->training.zero_stage >= 3 && c->j->parallelism.dp > 1 && r == 0)
		t->exposed = c->fsdp_last_rs;
	if ((tie = tie_s(e, c, r, d)) < 0)
		return -1;
	t->exposed += tie;
	return 0;
}

/* The pipeline: T_pipe from every rank's work. */
static double pipeline(const struct cand *c)
{
	double wmax = 0, wsum = 0, w, k, m;
	int64_t r;

	for (r = 0; r < c->p; r++) {
		rank_work(c, r, &w, &k, &m);
		wsum += w;
		wmax = fmax(wmax, w);
	}
	return (double)c->m * wmax + (wsum - wmax) / (double)c->v +
	       2.0 * (double)(c->p - 1) * c->x;
}

/* ZeRO 3 without data parallelism shards nothing: units as blocks. */
static void fsdp_alone(struct cand *c)
{
	c->fsdp_f[U_LAYER] = c->b->lf.lat_s;
	c->fsdp_f[U_EMBED] = c->b->ef.lat_s;
	c->fsdp_f[U_HEAD] = c->b->hf.lat_s;
	c->fsdp_b[U_LAYER] = c->b->lb.lat_s;
	c->fsdp_b[U_EMBED] = c->b->eb.lat_s;
	c->fsdp_b[U_HEAD] = c->b->hb.lat_s;
}

static int setup(struct est *e, struct cand *c, struct diag *d)
{
	const struct job_spec *j = c->j;
	const struct parallel_spec *p = &j->parallelism;

	c->m = job_microbatches(j);
	c->p = p->pp;
	c->v = p->vpp;
	c->S = c->p * c->v;
	if (!(c->b = est_blocks_of(e, j, c->d, d)) ||
	    !(c->split = split_of(e, j, c->S, d)) || transfers(e, c, d) != 0)
		return -1;
	if (j->training.zero_stage >= 3) {
		if (p->dp == 1)
			fsdp_alone(c);
		else if (fsdp_units(e, c, d) != 0)
			return -1;
	}
	return 0;
}

/* Split the step of the rank that ends last (i) into exec.h's parts. */
static void parts(const struct cand *c, int i, double step, double delay,
		  double opt, const struct tail *t, struct est_step *out)
{
	double w, k, mem, over = c->j->framework->step_overhead_s;
	double *ps = out->part_s;

	rank_work(c, rank_of(c, i), &w, &k, &mem);
	ps[EXEC_COMPUTE] = (double)c->m * k;
	out->mem_bound_s = (double)c->m * mem;
	ps[EXEC_OPTIMIZER] = opt;
	ps[EXEC_OTHER] = over;
	ps[EXEC_EXPOSED_COMM] = (double)c->m * (w - k) +
		2.0 * (double)(c->p - 1) * c->x + delay + t->exposed + t->after;
	ps[EXEC_BUBBLE] = fmax(0, step - ps[EXEC_COMPUTE] - opt - over -
			       ps[EXEC_EXPOSED_COMM]);
}

int est_bound(struct est *e, const struct job_spec *j, double *lb_s,
	      struct diag *d)
{
	struct layer_dims dims;
	struct cand c = { .j = j, .d = &dims };
	const struct parallel_spec *p = &j->parallelism;

	layer_dims_from_job(j, &dims);
	c.m = job_microbatches(j);
	c.p = p->pp;
	c.v = p->vpp;
	c.S = c.p * c.v;
	if (!(c.b = est_blocks_of(e, j, &dims, d)) ||
	    !(c.split = split_of(e, j, c.S, d)))
		return -1;
	if (j->training.zero_stage >= 3)
		fsdp_alone(&c);	/* a unit takes at least its block */
	*lb_s = pipeline(&c) + train_optimizer_s(j, &dims, c.split, 0) +
		j->framework->step_overhead_s;
	return 0;
}

int est_step(struct est *e, const struct job_spec *j, struct est_step *out,
	     struct diag *d)
{
	const struct parallel_spec *p = &j->parallelism;
	struct layer_dims dims;
	struct cand c = { .j = j, .d = &dims };
	const struct dplan *dp = NULL;
	double t_pipe, best = -1, delay = 0, opt[3] = { 0 };
	struct tail tl[3];
	int i, last = 0;

	e->stats.steps++;
	memset(out, 0, sizeof(*out));
	layer_dims_from_job(j, &dims);
	if (setup(e, &c, d) != 0)
		return -1;
	t_pipe = pipeline(&c);
	if (p->dp > 1 && j->training.zero_stage < 3 && !(dp = dplan_of(e, &c, d)))
		return -1;
	for (i = 0; i < 3; i++) {
		int64_t r = rank_of(&c, i);
		double E = last_backward(&c, t_pipe, i), fin;

		if (!rank_used(&c, i))
			continue;
		if (rank_tail(e, &c, dp, i, E, &tl[i], d) != 0)
			return -1;
		opt[i] = train_optimizer_s(j, &dims, c.split, r);
		fin = E + tl[i].exposed + opt[i] + tl[i].after;
		delay = fmax(delay, tl[i].delay);
		if (fin > best) {
			best = fin;
			last = i;
		}
	}
	if (j->training.zero_stage >= 3 && p->dp > 1)
		delay += c.fsdp_first_ag;
	out->step_s = best + delay + j->framework->step_overhead_s;
	parts(&c, last, out->step_s, delay, opt[last], &tl[last], out);
	out->model_flops = model_flops(&c);
	out->tokens = (double)j->training.global_batch_size *
		      (double)j->training.seq_len;
	return 0;
}
