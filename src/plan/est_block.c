/*
 * est_block.c - layer blocks and collective times for the analytical
 * tier, each costed once.
 *
 * A block's kernels are costed by block_cost (the GPU model, as the step
 * program costs them). Its latency is then found by running its op list
 * as the executor would on one GPU with two streams, compute and tp,
 * without an event queue: in list order (every dependency points back),
 * op i starts at
 *
 *   start_i = max(free(stream_i), max_{d in deps(i)} end_d)
 *
 * and a collective ends at start_i + T_i, T_i its time on the idle fabric
 * (the TP group of the first pipeline stage, with the replicas a run
 * gives it). A kernel of work w ends when
 *
 *   integral_{start}^{end} max(0, 1 - S(t)) dt = w,
 *
 * S(t) the summed sm_share of the collectives already placed that run at
 * t (exec.h's interference rule; a collective placed later in the list
 * that overlaps an earlier kernel is not charged: in the blocks llmsim
 * builds those are copy-engine all-gathers, share 0); a persistent GEMM
 * (block_op.owned h > 0) beside collectives that hold units (no
 * sm_margin) runs at 1 / exec_owned_slowdown(S, h) instead of 1 - S, as
 * the executor runs it. Launch order as the executor's (exec.h): a
 * collective that holds units and would start while the last kernel
 * placed, a persistent GEMM, runs (started before it) starts at that
 * kernel's end. The latency is the
 * end of the block's last op, which the next unit waits for (train.c).
 *
 * A collective also waits for its group's slowest member, the engine's
 * synchronization tax (exec_jitter.c): e(N) sqrt(sigma_op^2 +
 * sigma_gpu^2) times the compute since the group last met, N its GPUs
 * with every replica; where the compute does not wait for the collective
 * the wait costs nothing, as in a run.
 *
 * Collective times are remembered by (op, group as g0 + k stride, size,
 * replicas); the GPU model's kernel costs of a block set by (tp,
 * microbatch, recompute, SP, overlap), the block passes by that with the
 * TP group's replicas (a group inside one node sees no other group's
 * traffic: 1) and tax.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "config/spec_collectives.h"
#include "engine/exec.h"
#include "models/ep.h"
#include "models/layout.h"
#include "models/route.h"
#include "models/train.h"
#include "network/net.h"
#include "est_impl.h"

/* Key k of op over n GPUs g0 + i stride (every byte set: memo.h). */
static void coll_key(struct est_ckey *k, enum coll_op op, uint32_t n,
		     uint32_t g0, uint32_t stride, uint32_t replicas,
		     double bytes)
{
	memset(k, 0, sizeof(*k));
	k->op = (int32_t)op;
	k->n = n;
	k->g0 = g0;
	k->stride = stride;
	k->replicas = replicas > 1 ? replicas : 1;
	k->bytes = bytes;
}

/* Key k's GPUs into e->gpus, for timing it (a hit needs none: a data-
 * parallel group of a 16,384-GPU job lists thousands, once per lookup
 * before). */
static void coll_gpus(struct est *e, const struct est_ckey *k)
{
	uint32_t i;

	for (i = 0; i < k->n; i++)
		e->gpus[i] = k->inner > 0 ?
			     k->g0 + i % k->inner * k->stride +
			     i / k->inner * k->outer :
			     k->g0 + i * k->stride;
}

/* The remembered time of key k, or NULL (a lookup counted). */
static const double *coll_hit(struct est *e, const struct est_ckey *k)
{
	const double *hit;
	double t_s;

	e->stats.coll_lookups++;
	if ((hit = memo_get(&e->colls, k)) || !e->share ||
	    !est_share_get(e->share, k, &t_s))
		return hit;
	/* another process timed it: remember it here too (out of memory:
	 * time it again) */
	return memo_put(&e->colls, k, &t_s);
}

/* Remember t_s for key k; t_s, or -1 out of memory. */
static double coll_keep(struct est *e, const struct est_ckey *k, double t_s,
			struct diag *d)
{
	e->stats.colls++;
	if (!memo_put(&e->colls, k, &t_s)) {
		diag_oom(d);
		return -1;
	}
	if (e->share)
		est_share_put(e->share, k, t_s);
	return t_s;
}

/* A ring step as the step program sends it (train_cost.c new_block): an
 * all-to-all in which each GPU sends bytes / n to the next, point to
 * point. 0, or -1 after reporting. */
static int ring_time(struct est *e, struct coll_desc *c,
		     struct net_coll_result *r, struct diag *d)
{
	uint32_t i, n = c->ngpus;
	double *m = mem_calloc((size_t)n * n, sizeof(*m));
	int rc;

	if (!m) {
		diag_oom(d);
		return -1;
	}
	for (i = 0; i < n; i++)
		m[i * n + (i + 1) % n] = c->bytes / n;
	c->a2a_B = m;
	c->algo = ALGO_P2P;
	c->proto = PROTO_SIMPLE;
	rc = net_collective_time(e->net, c, r, d);
	mem_free(m);
	return rc;
}

/* Key k's time: remembered, or timed over its GPUs (as a ring of point-
 * to-point steps when ring) and remembered; -1 after reporting. */
static double coll_solve(struct est *e, struct est_ckey *k, double bytes,
			 int ring, struct diag *d)
{
	struct coll_desc c;
	struct net_coll_result r;
	const double *hit;

	if ((hit = coll_hit(e, k)))
		return *hit;
	coll_gpus(e, k);
	c = (struct coll_desc){ .op = (enum coll_op)k->op, .bytes = bytes,
				.gpus = e->gpus, .ngpus = k->n, .algo = -1,
				.proto = -1, .replicas = k->replicas };
	if ((ring ? ring_time(e, &c, &r, d) :
		    net_collective_time(e->net, &c, &r, d)) != 0)
		return -1;
	return coll_keep(e, k, r.time_s, d);
}

double est_coll_x(struct est *e, enum coll_op op, uint32_t n, uint32_t g0,
		  uint32_t stride, uint32_t replicas, double bytes, int ring,
		  struct diag *d)
{
	struct est_ckey k;

	if (n < 2 || bytes <= 0)
		return 0;
	coll_key(&k, op, n, g0, stride, replicas, bytes);
	k.ring = (uint32_t)(ring != 0);
	return coll_solve(e, &k, bytes, ring, d);
}

double est_coll_s(struct est *e, enum coll_op op, uint32_t n, uint32_t g0,
		  uint32_t stride, uint32_t replicas, double bytes,
		  struct diag *d)
{
	return est_coll_x(e, op, n, g0, stride, replicas, bytes, 0, d);
}

double est_coll_2(struct est *e, enum coll_op op, uint32_t n, uint32_t inner,
		  uint32_t stride, uint32_t outer, uint32_t replicas,
		  double bytes, struct diag *d)
{
	struct est_ckey k;

	if (inner < 2 || inner >= n)	/* one level */
		return est_coll_s(e, op, n, 0, inner >= n ? stride : outer,
				  replicas, bytes, d);
	if (bytes <= 0)
		return 0;
	coll_key(&k, op, n, 0, stride, replicas, bytes);
	k.inner = inner;
	k.outer = outer;
	return coll_solve(e, &k, bytes, 0, d);
}

/* ---- one block on two streams ---- */

struct interval {
	double s, e;		/* s */
	double share;		/* compute units held */
	int held;		/* ... not on a margin: a persistent GEMM's
				 * CTAs wait for them (exec.h) */
};

static int by_time(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Rate of a kernel whose CTAs own a share h of its work at time t: 1 -
 * the shares of collectives running, or the persistent-GEMM law's
 * 1 / f (exec_owned_slowdown) when some of them hold units. */
static double rate_at(const struct interval *iv, int n, double t, double h)
{
	double s = 0;
	int i, held = 0;

	for (i = 0; i < n; i++)
		if (iv[i].s <= t && t < iv[i].e) {
			s += iv[i].share;
			held |= iv[i].held && iv[i].share > 0;
		}
	if (s >= 1)
		return 0;
	return held && h > 0 ? 1.0 / exec_owned_slowdown(s, h) : 1 - s;
}

/* When a kernel of work w (s at full rate, owned share h) started at t0
 * ends. */
static double stretched_end(const struct interval *iv, int n, double t0,
			    double w, double h, double *ev)
{
	double t = t0, rem = w;
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (iv[i].e > t0 && iv[i].share > 0) {
			if (iv[i].s > t0)
				ev[k++] = iv[i].s;
			ev[k++] = iv[i].e;
		}
	if (k == 0)
		return t0 + w;
	qsort(ev, (size_t)k, sizeof(*ev), by_time);
	for (i = 0; i < k; i++) {
		double r = rate_at(iv, n, 0.5 * (t + ev[i]), h);

		if (ev[i] <= t)
			continue;
		if (r > 0 && rem <= r * (ev[i] - t))
			return t + rem / r;
		rem -= r * (ev[i] - t);
		t = ev[i];
	}
	return t + rem;
}

/* A group a block's collectives run over (enum layout_group: TP and the
 * context-parallel ones), as the first one of its kind: GPUs 0, stride,
 * ..., (n-1) stride. */
struct bgroup {
	uint32_t n, stride;
	uint32_t replicas;	/* identical groups a run charges */
};

struct kset;

struct pass_groups {
	struct bgroup g[LG_COUNT];
	int overlap;		/* TP: GEMM pieces pipelined with the collectives */
	double tax;		/* s of wait per s computed since a group met */
	const struct kset *ks;	/* the dispatcher's paths (MoE) */
	int hide_ep;		/* dispatch/combine under another action's
				 * compute (moe.a2a_overlap) */
};

/* The group of kind g of job j (layout.c's sizes and strides; a group
 * inside one node shares no link with the others: 1 replica, else the
 * stage's GPUs / n as a run charges them). */
static struct bgroup group_of(const struct job_spec *j, enum layout_group g)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t gpn = j->system->gpus_per_node, stage = p->tp * p->cp * p->dp;
	int64_t a2a = p->cp_comm_type == CP_A2A_P2P && p->cp_a2a > 0 ?
		      p->cp_a2a : 1, n, stride;
	struct bgroup r;

	switch (g) {
	case LG_TP: n = p->tp; stride = 1; break;
	case LG_CP: n = p->cp; stride = p->tp; break;
	case LG_CP_A2A: n = a2a; stride = p->tp; break;
	case LG_CP_RING: n = p->cp / a2a; stride = p->tp * a2a; break;
	case LG_TPCP: n = p->tp * p->cp; stride = 1; break;
	case LG_STAGE: n = stage; stride = 1; break;
	case LG_DP: n = p->cp * p->dp; stride = p->tp; break;
	case LG_DP_NOCP: n = p->dp; stride = p->tp * p->cp; break;
	case LG_EP: n = p->ep; stride = p->etp > 0 ? p->etp : 1; break;
	case LG_ETP: n = p->etp > 0 ? p->etp : 1; stride = 1; break;
	case LG_EDP:
		n = p->edp > 0 ? p->edp : 1;
		stride = (p->etp > 0 ? p->etp : 1) * p->ep;
		break;
	default: n = 1; stride = 1; break;	/* not in a dense layer */
	}
	r.n = (uint32_t)n;
	r.stride = (uint32_t)stride;
	r.replicas = n * stride <= gpn && gpn % (n * stride) == 0 ? 1 :
		     (uint32_t)(stage / n);
	return r;
}

/* A block's ops as costed once by the GPU model. */
struct kblock {
	int n;
	double model_flops;	/* FLOP */
	struct block_op *op;	/* n */
};

enum { KB_COUNT = 14 };

/* Layer i's kind as train_cost.c cost_layers builds it. */
static struct layer_kind kind_at(const struct model_spec *m, int64_t i)
{
	int lin = model_layer_linear(m, i);
	struct layer_kind k = { model_layer_moe(m, i),
				lin ? 0 : (double)model_layer_window(m, i),
				lin ? 0 : (double)model_layer_chunk(m, i),
				lin, model_layer_block(m, i),
				model_layer_nope(m, i) };

	return k;
}

static int same_kind(const struct layer_kind *a, const struct layer_kind *b)
{
	return a->moe == b->moe && a->window == b->window &&
	       a->chunk == b->chunk && a->linear == b->linear &&
	       a->block == b->block && a->nope == b->nope;
}

int est_hybrid(const struct model_spec *m)
{
	int64_t i;

	if (m->hybrid_override_pattern)
		return 1;
	for (i = 1; i < m->num_hidden_layers; i++)
		if (model_layer_linear(m, i) != model_layer_linear(m, 0))
			return 1;
	return 0;
}

int est_kinds(const struct model_spec *m, struct layer_kind *kinds)
{
	int64_t i;
	int n = 0;

	for (i = 0; i < m->num_hidden_layers; i++) {
		struct layer_kind k = kind_at(m, i);

		if (est_kind_index(m, i, kinds, n) >= 0)
			continue;
		if (n == EST_KINDS)
			return -1;
		kinds[n++] = k;
	}
	return n;
}

int est_kind_count(const struct model_spec *m)
{
	struct layer_kind kinds[EST_KINDS];

	return est_kinds(m, kinds);
}

int est_kind_index(const struct model_spec *m, int64_t i,
		   const struct layer_kind *kinds, int n)
{
	struct layer_kind k = kind_at(m, i);
	int x;

	for (x = 0; x < n; x++)
		if (same_kind(&k, &kinds[x]))
			return x;
	return -1;
}

/* The kernel costs of one block set, before any collective is timed. */
struct kset {
	struct kset *next;	/* every kset of the estimator, to free */
	struct kblock b[KB_COUNT];	/* lf, lb, ef, eb, hf, hb, pg, then
					 * the MoE layer's mf, mb, the MTP
					 * module's tf, tb, the deferred
					 * head's hbd, hw and the MTP
					 * module's tbs (n 0: none) */
	int nk;				/* a hybrid's kinds (0: none) */
	struct kblock kx[2 * EST_KINDS];	/* ... each one's forward,
						 * backward */
	double pp_B;		/* B, one pipeline transfer */
	struct arena arena;	/* the routing's arrays the ops point to */
	struct coll_path ep_path[EP_PASSES];	/* the dispatcher's paths
						 * (route_ep_paths) */
	const struct coll_path *path[EP_PASSES];
	int ep_algo;		/* the algorithm it forces, or -1 */
	double ep_share;	/* compute share dispatch/combine hold (0:
				 * the library's) */
};

/* FNV-1a of every byte of an n x n matrix: the memo's key (a sampled
 * hash could take two matrices for one). */
static uint64_t matrix_key(const double *m, uint32_t n)
{
	const unsigned char *b = (const unsigned char *)m;
	size_t i, len = (size_t)n * n * sizeof(*m);
	uint64_t h = 1469598103934665603ull;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h ? h : 1;
}

/* Dispatch or combine op (ep_path set) over group g: the dispatcher's
 * path, its forced algorithm across nodes, the uneven matrix of the
 * routing, as train.c's coll_of describes it; remembered with the
 * matrix' hash. */
static double coll_ep(struct est *e, const struct job_spec *j,
		      const struct kset *ks, const struct block_op *op,
		      const struct bgroup *g, struct diag *d)
{
	struct est_ckey k;
	struct coll_desc c;
	struct net_coll_result r;
	const double *hit;

	if (g->n < 2 || op->bytes <= 0)
		return 0;
	coll_key(&k, op->coll, g->n, 0, g->stride, g->replicas, op->bytes);
	k.a2a_key = op->a2a_B ? matrix_key(op->a2a_B, g->n) : 0;
	k.path = op->ep_path;
	if ((hit = coll_hit(e, &k)))
		return *hit;
	coll_gpus(e, &k);
	c = (struct coll_desc){ .op = op->coll, .bytes = op->bytes,
				.gpus = e->gpus, .ngpus = g->n,
				.a2a_B = op->a2a_B, .algo = -1, .proto = -1,
				.replicas = k.replicas };
	c.path = ks->path[op->ep_path - 1];
	c.algo = c.path || !ep_spans_nodes(e->gpus, g->n,
					   j->system->gpus_per_node) ?
		 -1 : ks->ep_algo;
	if (net_collective_time(e->net, &c, &r, d) != 0)
		return -1;
	return coll_keep(e, &k, r.time_s, d);
}

/* When a collective holding share of the units that would start at t
 * starts: at pe when a persistent GEMM placed on [ps, pe) runs then and
 * started before t (launch order, exec.h), else t. */
static double launched(double t, double share, double ps, double pe)
{
	return share > 0 && ps < t && t < pe ? pe : t;
}

/*
 * Run a block on its streams (compute, tp, cp). A collective starts when
 * its stream is free and its inputs are there, plus the synchronization
 * tax of its group (exec_jitter.c: the members' lateness gathered over
 * the compute since the group last met, tax per second of it); it then
 * realigns them.
 */
static int run_pass(struct est *e, const struct job_spec *j,
		    const struct kblock *b, const struct pass_groups *pg,
		    struct est_pass *out, struct diag *d)
{
	double end[LAYER_MAX_OPS], ev[2 * LAYER_MAX_OPS];
	struct interval iv[LAYER_MAX_OPS];
	double comp_free = 0, free[3] = { 0, 0, 0 }, since[LG_COUNT] = { 0 };
	double ep_total = 0, host = -HUGE_VAL, host_sum = 0;
	double pers_s = 0, pers_e = 0;	/* the last kernel placed, when a
					 * persistent GEMM: its start, end */
	double sync_s = j->framework->host.sync_s *
			(j->system->host_dispatch_scale > 0 ?
			 j->system->host_dispatch_scale : 1);
	int i, k, niv = 0;

	memset(out, 0, sizeof(*out));
	for (i = 0; i < b->n; i++) {
		const struct block_op *op = &b->op[i];
		double ready = 0;

		for (k = 0; k < 2; k++)
			if (op->dep[k] >= 0 && end[op->dep[k]] > ready)
				ready = end[op->dep[k]];
		/* the host issues it (train_host.c): ahead of the GPU but
		 * where it waits for the device */
		if (op->host_wait != LAYER_NONE && op->host_wait < i)
			host = fmax(host, end[op->host_wait] + sync_s);
		if (op->host_s > 0 || op->host_wait != LAYER_NONE) {
			host += op->host_s;
			host_sum += op->host_s;
			ready = fmax(ready, host);
		}
		if (op->kind == LOP_KERNEL) {
			double t0 = fmax(comp_free, ready);

			end[i] = stretched_end(iv, niv, t0, op->time_s,
					       op->owned, ev);
			comp_free = end[i];
			pers_s = op->owned > 0 ? t0 : 0;
			pers_e = op->owned > 0 ? end[i] : 0;
			out->kern_s += op->time_s;
			out->own_s += op->time_s * op->owned;
			for (k = 0; k < LG_COUNT; k++)
				since[k] += op->time_s;
			if (op->mem_bound)
				out->mem_s += op->time_s;
		} else {
			const struct bgroup *g = &pg->g[op->group < LG_COUNT ?
							op->group : LG_TP];
			int st = op->stream < 3 ? op->stream : LS_TP;
			int on_compute = op->stream == LS_COMPUTE;
			int ep = op->ep_path && pg->ks;
			double t = ep ? coll_ep(e, j, pg->ks, op, g, d) :
				   est_coll_x(e, op->coll, g->n, 0, g->stride,
					      g->replicas, op->bytes,
					      op->p2p_next, d);
			uint32_t m;

			if (t < 0)
				return -1;
			for (m = 0; m < g->n; m++)
				e->ggpus[m] = m * g->stride;
			if (ep) {
				iv[niv].share = pg->ks->ep_share > 0 ?
					pg->ks->ep_share :
					train_coll_sm_share(j, op->coll, e->ggpus,
							    g->n, 0);
				iv[niv].held = 1;
				iv[niv].s = launched(fmax(free[st], ready),
						     iv[niv].share, pers_s,
						     pers_e);
				iv[niv].e = iv[niv].s + t;
				if (pg->hide_ep) {
					/* under the paired action's compute:
					 * what follows waits for none of it */
					end[i] = iv[niv].s;
					ep_total += t;
				} else {
					end[i] = iv[niv].e;
					free[st] = end[i];
				}
				since[op->group] = 0;
				niv++;
				continue;
			}
			iv[niv].s = fmax(on_compute ? comp_free : free[st], ready) +
				    pg->tax * since[op->group];
			iv[niv].e = end[i] = iv[niv].s + t;
			if (on_compute) {	/* compute waits for it */
				comp_free = end[i];
				since[op->group] = 0;
				continue;
			}
			iv[niv].share = train_coll_sm_share(j, op->coll, e->ggpus,
				g->n, op->group == LG_TP && pg->overlap);
			iv[niv].held = !(op->group == LG_TP && pg->overlap);
			if (iv[niv].held) {
				double s0 = launched(iv[niv].s, iv[niv].share,
						     pers_s, pers_e);

				iv[niv].e += s0 - iv[niv].s;
				end[i] = iv[niv].e;
				iv[niv].s = s0;
			}
			free[st] = end[i];
			since[op->group] = 0;
			niv++;
		}
	}
	out->lat_s = b->n > 0 ? end[b->n - 1] : 0;
	if (pg->hide_ep)	/* the pair runs at the pace of the slower */
		out->lat_s = fmax(out->lat_s, ep_total);
	/* a host slower than the GPU sets the pace of every block */
	out->lat_s = fmax(out->lat_s, host_sum);
	out->model_flops = b->model_flops;
	return 0;
}

/* Cost e->ops on the GPU model into kb. */
static int cost(struct est *e, const struct job_spec *j, struct kblock *kb,
		struct diag *d)
{
	struct block_dtypes dt = {
		.gemm_lowp = (enum dtype)j->training.dtype,
		.base = layer_base_dtype((enum dtype)j->training.dtype),
		.lowp_rate = block_lowp_rate(j),
		.fast_accum = block_fast_accum(j),
		.captured = block_captured(j),
	};
	int i;

	if (block_cost(e->blk, e->ops, j->system->gpu, &dt, NULL) != 0 ||
	    !(kb->op = mem_alloc((size_t)(e->blk->n ? e->blk->n : 1) *
				 sizeof(*kb->op)))) {
		diag_oom(d);
		return -1;
	}
	kb->n = e->blk->n;
	kb->model_flops = e->blk->model_flops;
	memcpy(kb->op, e->blk->op, (size_t)kb->n * sizeof(*kb->op));
	for (i = 0; i < kb->n; i++) {
		struct block_op *op = &kb->op[i];

		op->host_s = train_host_on(j) ? train_host_op_s(j, e->blk, i) : 0;
		if (op->kind != LOP_COLL || !op->p2p_next)
			continue;
		/* a ring step: the all-to-all train_cost.c new_block makes of it */
		op->coll = COLL_ALLTOALL;
		op->bytes *= group_of(j, (enum layout_group)op->group).n;
	}
	return 0;
}

static int cost_all(struct est *e, const struct job_spec *j,
		    const struct layer_dims *dm, const struct est_bkey *k,
		    struct kset *ks, struct diag *d)
{
	enum layer_recompute rc = (enum layer_recompute)j->training.recompute;
	/* every layer is of this kind (plan_run refuses models that mix) */
	struct layer_kind kind = { 0, (double)model_layer_window(j->model, 0),
				   (double)model_layer_chunk(j->model, 0),
				   model_layer_linear(j->model, 0), 0,
				   model_layer_nope(j->model, 0) };

	layer_fwd(dm, &kind, e->ops);
	if (cost(e, j, &ks->b[0], d) != 0)
		return -1;
	layer_bwd(dm, &kind, rc, e->ops);
	if (cost(e, j, &ks->b[1], d) != 0)
		return -1;
	layer_embed_fwd(dm, e->ops);
	if (cost(e, j, &ks->b[2], d) != 0)
		return -1;
	layer_embed_bwd(dm, e->ops);
	if (cost(e, j, &ks->b[3], d) != 0)
		return -1;
	layer_head_fwd(dm, e->ops);
	if (cost(e, j, &ks->b[4], d) != 0)
		return -1;
	layer_head_bwd(dm, e->ops);
	if (cost(e, j, &ks->b[5], d) != 0)
		return -1;
	if (dm->pp_gather && j->parallelism.pp > 1) {
		layer_pp_gather(dm, e->ops);
		if (cost(e, j, &ks->b[6], d) != 0)
			return -1;
	}
	if (k->defer_head) {	/* train.c action_block, build_drain */
		layer_head_bwd_deferred(dm, e->ops);
		if (cost(e, j, &ks->b[11], d) != 0)
			return -1;
		layer_head_wgrad(dm, e->ops);
		if (cost(e, j, &ks->b[12], d) != 0)
			return -1;
	}
	ks->pp_B = layer_pp_bytes(dm);
	if (est_hybrid(j->model)) {	/* every kind its own blocks */
		struct layer_kind kinds[EST_KINDS];
		int x, n = est_kinds(j->model, kinds);

		for (x = 0; x < n; x++) {
			layer_fwd(dm, &kinds[x], e->ops);
			if (cost(e, j, &ks->kx[2 * x], d) != 0)
				return -1;
			layer_bwd(dm, &kinds[x], rc, e->ops);
			if (cost(e, j, &ks->kx[2 * x + 1], d) != 0)
				return -1;
		}
		ks->nk = n > 0 ? n : 0;
	}
	if (model_is_moe(j->model)) {
		const struct model_spec *m = j->model;
		int64_t i;
		struct layer_kind moe = { 1, (double)model_layer_window(m, 0),
					  (double)model_layer_chunk(m, 0),
					  model_layer_linear(m, 0), 0,
					  model_layer_nope(m, 0) };
		struct layer_kind lk[MODEL_MTP_BLOCKS];	/* train_cost.c's */
		int nlk = layer_mtp_kinds(m, lk);

		for (i = 0; i < m->num_hidden_layers; i++)
			if (model_layer_moe(m, i)) {
				moe.window = (double)model_layer_window(m, i);
				moe.chunk = (double)model_layer_chunk(m, i);
				moe.nope = model_layer_nope(m, i);
				break;
			}
		layer_fwd(dm, &moe, e->ops);
		if (cost(e, j, &ks->b[7], d) != 0)
			return -1;
		layer_bwd(dm, &moe, rc, e->ops);
		if (cost(e, j, &ks->b[8], d) != 0)
			return -1;
		if (j->moe.mtp_layers > 0) {	/* a layer of the last one's kind */
			layer_mtp_fwd(dm, lk, nlk, 1, e->ops);
			if (cost(e, j, &ks->b[9], d) != 0)
				return -1;
			layer_mtp_bwd(dm, lk, nlk, rc, 1, 0, e->ops);
			if (cost(e, j, &ks->b[10], d) != 0)
				return -1;
			if (dm->embed_dense) {	/* est_mtp_summed */
				layer_mtp_bwd(dm, lk, nlk, rc, 1, 1, e->ops);
				if (cost(e, j, &ks->b[13], d) != 0)
					return -1;
			}
		}
	}
	return 0;
}

/* Job j's routing into a copy of dm (route.h: the pace GPU's rows per
 * expert, the uneven dispatch matrix) and the dispatcher's paths, as
 * train.c's setup and ep_path have them; dense models: dm as it is. */
static int route_of(const struct job_spec *j, const struct layer_dims *dm,
		    struct kset *ks, struct layer_dims *out, struct diag *d)
{
	const struct ep_comm_spec *ep = j->moe.dispatcher;
	const struct moe_dims *m = &out->moe;
	struct route_result rr;

	*out = *dm;
	ks->ep_algo = -1;
	if (!model_is_moe(j->model))
		return 0;
	if (route_plan(j, out, &ks->arena, &rr, d) != 0)
		return -1;
	if (!ep)
		return 0;
	ks->ep_share = ep->sms > 0 ? fmin(1, (double)ep->sms /
				 (double)j->system->gpu->compute_units) : 0;
	route_ep_paths(ep, m, ks->ep_path, ks->path, &ks->ep_algo);
	return 0;
}

void est_ksets_free(struct est *e)
{
	struct kset *ks = e->ksets, *next;
	int i;

	for (; ks; ks = next) {
		next = ks->next;
		for (i = 0; i < KB_COUNT; i++)
			mem_free(ks->b[i].op);
		for (i = 0; i < 2 * EST_KINDS; i++)
			mem_free(ks->kx[i].op);
		arena_release(&ks->arena);
		mem_free(ks);
	}
	e->ksets = NULL;
}

/* The kernels of key k (its tax and replicas ignored), costed on first
 * use. */
static const struct kset *kset_of(struct est *e, const struct job_spec *j,
				  const struct layer_dims *dm,
				  const struct est_bkey *k, struct diag *d)
{
	struct est_bkey kk = *k;
	struct kset *const *hit, *ks;
	struct layer_dims rd;

	kk.tax = 0;
	kk.tp_replicas = 0;
	kk.cp_replicas = kk.a2a_replicas = kk.ring_replicas = 0;
	kk.amax_replicas = 0;
	kk.ep_ov = 0;
	kk.ep_replicas = kk.etp_replicas = 0;
	kk.amax_n = 0;		/* the amax blocks are costed apart (amax_of) */
	kk.amax_layers = 0;
	if ((hit = memo_get(&e->kernels, &kk)))
		return *hit;
	if (!(ks = mem_calloc(1, sizeof(*ks)))) {
		diag_oom(d);
		return NULL;
	}
	arena_init(&ks->arena);
	ks->next = e->ksets;
	e->ksets = ks;
	if (route_of(j, dm, ks, &rd, d) != 0 ||
	    cost_all(e, j, &rd, &kk, ks, d) != 0)
		return NULL;
	if (!memo_put(&e->kernels, &kk, &ks)) {
		diag_oom(d);
		return NULL;
	}
	e->stats.block_sets++;
	return ks;
}

double est_emax(struct est *e, double n)
{
	const double *hit = memo_get(&e->emax, &n);
	double v;

	if (hit)
		return *hit;
	v = exec_emax(n);
	(void)memo_put(&e->emax, &n, &v);	/* full: computed again */
	return v;
}

double est_tax_rate(struct est *e, const struct job_spec *j, double n)
{
	const struct variability_spec *v = &j->system->variability;

	if (n < 2 || (v->op_jitter <= 0 && v->gpu_spread <= 0))
		return 0;
	return est_emax(e, n) * sqrt(v->op_jitter * v->op_jitter +
				 v->gpu_spread * v->gpu_spread);
}

/* The fp8 amax reductions after a chunk's forward and backward (train_cost.c
 * cost_amax: one per chunk pass over key k's group, for its layers),
 * remembered apart from the layer blocks: they depend on the group and
 * the layers of a chunk, the layers' kernels on neither. */
static int amax_of(struct est *e, const struct job_spec *j,
		   const struct layer_dims *dm, const struct est_bkey *k,
		   const struct pass_groups *pg, struct est_blocks *b,
		   struct diag *d)
{
	struct { int64_t n; double layers, tax; uint32_t replicas, group; } key;
	const struct est_pass *hit;
	struct est_pass two[2];
	int bwd;

	memset(&key, 0, sizeof(key));
	key.n = k->amax_n;
	key.layers = k->amax_layers;
	key.tax = pg->tax;
	key.replicas = k->amax_replicas;
	key.group = (uint32_t)dm->amax_group;
	if (!(hit = memo_get(&e->amax, &key))) {
		memset(two, 0, sizeof(two));
		for (bwd = 0; bwd < 2; bwd++) {
			struct kblock kb = { 0, 0, NULL };
			int rc;

			layer_fp8_amax(dm, bwd, k->amax_layers, k->amax_n, e->ops);
			if (e->ops->n == 0)
				continue;
			rc = cost(e, j, &kb, d) != 0 ||
			     run_pass(e, j, &kb, pg, &two[bwd], d) != 0;
			mem_free(kb.op);
			if (rc)
				return -1;
		}
		if (!(hit = memo_put(&e->amax, &key, two))) {
			diag_oom(d);
			return -1;
		}
	}
	b->af = hit[0];
	b->ab = hit[1];
	b->amax_tax = pg->tax;
	return 0;
}

const struct est_blocks *est_blocks_of(struct est *e, const struct job_spec *j,
				       const struct layer_dims *dm,
				       struct diag *d)
{
	const struct parallel_spec *p = &j->parallelism;
	struct pass_groups pg;
	struct est_bkey k;
	struct est_blocks b;
	const struct est_blocks *hit;
	const struct kset *ks;
	int i;

	memset(&pg, 0, sizeof(pg));
	for (i = 0; i < LG_COUNT; i++)
		pg.g[i] = group_of(j, (enum layout_group)i);
	pg.overlap = dm->chunks > 1;
	/* a group's GPUs for the tax: every replica (the stage's) */
	pg.tax = est_tax_rate(e, j, (double)(p->tp * p->dp * p->cp));
	memset(&k, 0, sizeof(k));
	k.tp = p->tp;
	k.mbs = j->training.micro_batch_size;
	k.seq = j->training.seq_len / p->cp;
	k.cp = p->cp;
	if (p->cp > 1) {
		k.cp_a2a = pg.g[LG_CP_A2A].n;
		k.cp_type = p->cp_comm_type;
		k.cp_lb = p->cp_load_balance;
	}
	k.sp = dm->sp;
	k.rc = j->training.recompute;
	k.chunks = dm->chunks;
	k.pp_gather = dm->pp_gather && p->pp > 1;
	k.embed_dense = dm->embed_dense;
	k.defer_head = p->defer_embedding_wgrad && p->pp >= 2;
	k.tp_replicas = pg.g[LG_TP].replicas;
	if (dm->amax_group >= 0) {
		const struct bgroup *g = &pg.g[dm->amax_group];

		if (g->n >= 2) {
			k.amax_n = g->n;
			k.amax_layers = (double)j->model->num_hidden_layers /
					(double)(p->pp * p->vpp);
			k.amax_replicas = g->replicas;
		}
	}
	k.fsdp_n = dm->fsdp_n;
	k.fsdp_accum = dm->fsdp_accum;
	if (p->cp > 1) {
		k.cp_replicas = pg.g[LG_CP].replicas;
		k.a2a_replicas = pg.g[LG_CP_A2A].replicas;
		k.ring_replicas = pg.g[LG_CP_RING].replicas;
	}
	k.tax = pg.tax;
	if (model_is_moe(j->model)) {
		k.ep = p->ep;
		k.etp = p->etp;
		k.ep_replicas = pg.g[LG_EP].replicas;
		k.etp_replicas = pg.g[LG_ETP].replicas;
		k.ep_ov = j->moe.a2a_overlap && p->ep > 1;
	}
	if ((hit = memo_get(&e->blocks, &k)))
		return hit;
	if (!(ks = kset_of(e, j, dm, &k, d)))
		return NULL;
	pg.ks = ks;
	memset(&b, 0, sizeof(b));
	{
		struct est_pass *out[KB_COUNT] = { &b.lf, &b.lb, &b.ef, &b.eb,
						   &b.hf, &b.hb, &b.pg, &b.mf,
						   &b.mb, &b.tf, &b.tb, &b.hbd,
						   &b.hw, &b.tbs };

		for (i = 0; i < KB_COUNT; i++)
			if (ks->b[i].n > 0 &&
			    run_pass(e, j, &ks->b[i], &pg, out[i], d) != 0)
				return NULL;
		if (k.ep_ov) {	/* a2a overlap: the MoE layers paired */
			pg.hide_ep = 1;
			if (run_pass(e, j, &ks->b[7], &pg, &b.mfo, d) != 0 ||
			    run_pass(e, j, &ks->b[8], &pg, &b.mbo, d) != 0)
				return NULL;
		}
	}
	b.pp_B = ks->pp_B;
	b.nk = ks->nk;
	for (i = 0; i < ks->nk; i++)
		if (run_pass(e, j, &ks->kx[2 * i], &pg, &b.kf[i], d) != 0 ||
		    run_pass(e, j, &ks->kx[2 * i + 1], &pg, &b.kb[i], d) != 0)
			return NULL;
	if (k.amax_n > 0 && amax_of(e, j, dm, &k, &pg, &b, d) != 0)
		return NULL;
	if (!(hit = memo_put(&e->blocks, &k, &b)))
		diag_oom(d);
	return hit;
}
