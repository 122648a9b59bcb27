/*
 * est_dp.c - data parallelism in the analytical tier: gradient buckets
 * and their collectives (ZeRO 0-2), what they slow and what they leave
 * exposed, and ZeRO 3's per-unit gathers. The formulas are in est.c's
 * header; this file applies them.
 */
#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "engine/exec.h"
#include "models/footprint.h"
#include "models/train.h"
#include "est_impl.h"

double est_dp_coll(struct est *e, const struct est_cand *c, int experts,
		   enum coll_op op, double bytes, struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;
	int64_t ex = (p->etp > 0 ? p->etp : 1) * p->ep;

	/* tp-cp-ep-pp-dp (models/layout.h): a block of M = tp cp GPUs a
	 * stage, the next data-parallel replica's M pp GPUs on (the
	 * experts fold over M: etp ep = M, the job checks it) */
	int64_t outer = p->rank_order == ORDER_TP_CP_EP_PP_DP ?
			p->tp * p->cp * c->p : 0;

	/* LG_EDP: the routed experts' group, edp GPUs, stride etp ep */
	if (experts)
		return est_coll_s(e, op, (uint32_t)(p->edp > 0 ? p->edp : 1), 0,
				  (uint32_t)(outer > 0 ? outer : ex),
				  (uint32_t)ex, bytes, d);
	/* LG_DP: the dense gradients' group, dp cp GPUs, stride tp (with
	 * the order: the cp of a block stride tp, the blocks stride outer) */
	if (outer > 0)
		return est_coll_2(e, op, (uint32_t)(p->dp * p->cp),
				  (uint32_t)p->cp, (uint32_t)p->tp,
				  (uint32_t)outer, (uint32_t)p->tp, bytes, d);
	return est_coll_s(e, op, (uint32_t)(p->dp * p->cp), 0, (uint32_t)p->tp,
			  (uint32_t)p->tp, bytes, d);
}

/* ---- buckets ---- */

/* Rank entry i's sums est_dp_stretch reads (struct est_dplan): every
 * bucket's ag_s, each chunk's red_s and first bucket, added in bucket
 * order as it added them for each virtual stage. */
static int chunk_sums(const struct est_cand *c, struct est_dplan *dp, int i,
		      struct diag *d)
{
	struct est_dchunk *ch = mem_alloc((size_t)c->v * sizeof(*ch));
	int64_t k;

	if (!ch) {
		diag_oom(d);
		return -1;
	}
	dp->ch[i] = ch;
	for (k = 0; k < c->v; k++)
		ch[k] = (struct est_dchunk){ 0, -1 };
	dp->ag_s[i] = 0;
	for (k = 0; k < dp->n[i]; k++) {
		const struct est_dbucket *bk = &dp->b[i][k];
		struct est_dchunk *x = &ch[bk->chunk];

		dp->ag_s[i] += bk->ag_s;
		x->red_s += bk->red_s;
		if (x->first < 0)
			x->first = k;
	}
	return 0;
}

/* Rank entry i's buckets, completion order (chunks v-1 .. 0; in a
 * chunk the dense ones, then the routed experts'), with the times of
 * their collectives. */
static int rank_buckets(struct est *e, const struct est_cand *c,
			struct est_dplan *dp, int i, struct diag *d)
{
	double size, params[1024], layer_params[1024];
	int64_t r = est_rank_of(c, i), total = 0, ch, k, n, vs, last[1024];
	int zero = (int)c->j->training.zero_stage;
	int kinds = model_is_moe(c->j->model) ? 2 : 1, ex;

	for (ch = 0; ch < c->v; ch++)
		total += kinds * (c->split[ch * c->p + r] + 2);
	dp->b[i] = mem_alloc((size_t)total * sizeof(*dp->b[i]));
	if (!dp->b[i]) {
		diag_oom(d);
		return -1;
	}
	for (ch = c->v - 1; ch >= 0; ch--) {
		vs = ch * c->p + r;
		if (c->split[vs] + 2 > 1024)
			BUG("more than 1022 layers on a virtual stage");
		for (ex = 0; ex < kinds; ex++) {
			size = train_bucket_size(c->j, r);
			n = train_buckets(c->j, c->d, c->split, vs, size, ex, last,
					  params, layer_params);
			for (k = 0; k < n; k++) {
				struct est_dbucket *b = &dp->b[i][dp->n[i]++];

				*b = (struct est_dbucket){ ch, ex, last[k], params[k], 0, 0 };
				b->red_s = est_dp_coll(e, c, ex, zero == 0 ?
						       COLL_ALLREDUCE : COLL_REDUCESCATTER,
						       params[k] * c->d->grad_B, d);
				b->ag_s = zero == 0 ? 0 :
					  est_dp_coll(e, c, ex, COLL_ALLGATHER,
						      train_gather_bytes(c->j, c->d,
							params[k],
							layer_params[k]), d);
				if (b->red_s < 0 || b->ag_s < 0)
					return -1;
			}
		}
	}
	return chunk_sums(c, dp, i, d);
}

const struct est_dplan *est_dplan_of(struct est *e, const struct est_cand *c,
				     struct diag *d)
{
	const struct parallel_spec *p = &c->j->parallelism;
	int64_t key[8] = { p->tp, p->cp, p->pp, p->vpp, p->dp,
			   c->j->training.zero_stage > 0, p->ep,
			   model_is_moe(c->j->model) ? p->etp : 0 };
	struct est_dplan *const *hit = memo_get(&e->dpplans, key);
	struct est_dplan *dp;
	int i;

	if (hit)
		return *hit;
	dp = mem_calloc(1, sizeof(*dp));
	if (!dp) {
		diag_oom(d);
		return NULL;
	}
	dp->next = e->dplan_list;
	e->dplan_list = dp;
	for (i = 0; i < 3; i++)
		if (est_rank_used(c, i) && rank_buckets(e, c, dp, i, d) != 0)
			return NULL;
	if (!memo_put(&e->dpplans, key, &dp)) {
		diag_oom(d);
		return NULL;
	}
	return dp;
}

/* ---- what the collectives slow ---- */

/* The TP collectives' share of stage s's forward (or backward) when the
 * TP group leaves the node: the part a data-parallel collective on the
 * same NICs would share (0 inside a node). */
static double tp_wire_s(const struct est_cand *c, int64_t s, int bwd)
{
	int64_t gpn = c->j->system->gpus_per_node, tp = c->j->parallelism.tp;
	const struct est_blocks *b = c->b;
	const struct est_pass *l = bwd ? &b->lb : &b->lf;

	if (tp <= gpn && gpn % tp == 0)
		return 0;
	return (double)c->split[s] * fmax(0, l->lat_s - l->kern_s);
}

/* The share of its time compute of pass l loses beside a DP collective
 * holding c->s_dp of the units: 1 - 1/f, f = exec_owned_slowdown(S_dp, h)
 * with h its kernels' work-weighted owned share (the law is linear in h,
 * so this is the time-average over its kernels); S_dp itself when h = 0
 * (the share law). */
static double dp_lost(const struct est_cand *c, const struct est_pass *l)
{
	double h = l->kern_s > 0 ? l->own_s / l->kern_s : 0;

	if (!(h > 0) || !(c->s_dp > 0))
		return c->s_dp;
	return 1.0 - 1.0 / exec_owned_slowdown(c->s_dp, h);
}

void est_dp_stretch(const struct est_cand *c, const struct est_dplan *dp,
		    double *f_first, double *b_last)
{
	const struct framework_spec *fw = c->j->framework;
	int zero = (int)c->j->training.zero_stage;
	int64_t s;
	/* s, while s < p (chunk 0): sum_{q<s} (f_q + x_q), when rank s's
	 * first forward starts, added up in that order as the stages come
	 * (summing it again for every rank was O(p^2) stage times: 8,000
	 * at pp 128) */
	double lead = 0;

	for (s = 0; s < c->S; s++) {
		int64_t r = s % c->p, ch = s / c->p;
		int i = est_rank_index(c, r);
		double f = est_stage_f(c, s), b = est_stage_b(c, s);
		double tpf = tp_wire_s(c, s, 0), tpb = tp_wire_s(c, s, 1);
		const struct est_dchunk *x = dp->ch[i] ? &dp->ch[i][ch] : NULL;
		double red = x ? x->red_s : 0, gathers = x ? dp->ag_s[i] : 0;
		double first = -1;

		/* reductions start with its first bucket */
		if (x && x->first >= 0)
			first = est_bwd_through(c, s, dp->b[i][x->first].last);
		b_last[s] = b;
		if (fw->overlap_grad_reduce && first >= 0) {
			double over = fmin(b - first, red);

			/* compute units held; a cross-node TP collective
			 * shares the NIC with the reductions it meets */
			b_last[s] = b + dp_lost(c, &c->b->lb) * over +
				    fmin(tpb * over / b, red);
		}
		f_first[s] = f;
		if (zero >= 1 && fw->overlap_param_gather && ch == 0) {
			double over = fmin(f, fmax(0, gathers - lead));

			f_first[s] = f + dp_lost(c, &c->b->lf) * over +
				     tpf * over / f;
		}
		if (ch == 0)
			lead += f + c->x[r];
	}
}

void est_dp_tail(const struct est_cand *c, const struct est_dplan *dp, int i,
		 double E, struct est_tail *t)
{
	const struct framework_spec *fw = c->j->framework;
	int64_t r = est_rank_of(c, i), k, q;
	double end[2] = { 0, 0 }, gathered[2] = { 0, 0 }, need = 0, lead = 0;
	int ch;

	memset(t, 0, sizeof(*t));
	for (q = 0; q < r; q++)	/* rank r's first forward starts after these */
		lead += est_stage_f(c, q) + c->x[q];
	for (k = 0; k < dp->n[i]; k++) {
		const struct est_dbucket *bk = &dp->b[i][k];
		int64_t vs = bk->chunk * c->p + r;
		double done = c->chunk_end[r * c->v + bk->chunk];
		double ready = done - (est_stage_b(c, vs) -
				       est_bwd_through(c, vs, bk->last));

		if (!fw->overlap_grad_reduce)
			ready = E;
		/* the routed experts' own chain when asynchronous (train_dp.c) */
		ch = bk->experts && fw->overlap_grad_reduce;
		end[ch] = fmax(end[ch], ready) + bk->red_s;
	}
	t->exposed = fmax(0, fmax(end[0], end[1]) - E);
	if (c->j->training.zero_stage == 0)
		return;
	/* the all-gathers, forward order: the reverse of completion */
	for (k = dp->n[i] - 1; k >= 0; k--) {
		const struct est_dbucket *bk = &dp->b[i][k];
		int64_t vs = bk->chunk * c->p + r;
		int64_t units = c->split[vs] + (vs == 0) + (vs == c->S - 1);

		ch = bk->experts && fw->overlap_param_gather;
		gathered[ch] += bk->ag_s;
		if (!fw->overlap_param_gather)
			t->after += bk->ag_s;
		else if (bk->chunk == 0)	/* the first forward waits for these */
			need = fmax(need, gathered[ch] -
				    est_fwd_before(c, vs, units - 1 - bk->last));
	}
	t->delay = fmax(0, need - lead);
}

/* ---- ZeRO 3 ---- */

int est_fsdp_units(struct est *e, struct est_cand *c, struct diag *d)
{
	static const enum footprint_unit kinds[3] = { UNIT_LAYER, UNIT_EMBED,
						      UNIT_HEAD };
	const struct est_pass *f[3] = { &c->b->lf, &c->b->ef, &c->b->hf };
	const struct est_pass *b[3] = { &c->b->lb, &c->b->eb, &c->b->hb };
	const struct framework_spec *fw = c->j->framework;
	int both = c->p == 1, u;

	/* torchtitan's root unit and held last block on one stage, as the
	 * step program gathers and reduces them (models/train_dp.c
	 * fsdp_role) */
	c->fsdp_root = c->S == 1 && fw->fsdp_root_unit;
	c->fsdp_last_held = c->S == 1 && fw->fsdp_last_layer_held &&
			    fw->fsdp_reshard_after_forward && c->split[0] > 0;
	for (u = 0; u < 3; u++) {
		double pu = footprint_unit_params(c->j, c->d, kinds[u], both) /
			    c->d->tp;
		double ag, rs, agb, cf = f[u]->lat_s, cb = b[u]->lat_s;
		double sf = dp_lost(c, f[u]), sb = dp_lost(c, b[u]);

		if (c->fsdp_root && u == EST_HEAD)
			pu = 0;	/* the root's, with the embedding */
		else if (c->fsdp_root && u == EST_EMBED)
			pu += footprint_unit_params(c->j, c->d, UNIT_HEAD, 1) /
			      c->d->tp;
		ag = pu > 0 ? est_dp_coll(e, c, 0, COLL_ALLGATHER,
					  pu * c->d->act_B, d) : 0;
		rs = pu > 0 ? est_dp_coll(e, c, 0, COLL_REDUCESCATTER,
					  pu * c->d->grad_B, d) : 0;
		if (ag < 0 || rs < 0)
			return -1;
		/* the root stays gathered from its forward to its backward */
		agb = c->fsdp_root && u == EST_EMBED ? 0 : ag;
		c->fsdp_c[0][u] = cf;
		c->fsdp_c[1][u] = cb;
		c->fsdp_sl[0][u] = sf;
		c->fsdp_sl[1][u] = sb;
		c->fsdp_ag[u] = ag;
		c->fsdp_rsu[u] = rs;
		c->fsdp_f[u] = cf + sf * fmin(cf, ag);
		c->fsdp_b[u] = cb + sb * fmin(cb, agb + rs);
		c->fsdp_xf[u] = ag;
		c->fsdp_xb[u] = agb + rs;
		if (u == EST_EMBED)
			c->fsdp_first_ag = ag;
		if (c->no_sync) {	/* gathered once a run, reduced once */
			c->fsdp_gf[u] = fmax(c->fsdp_f[u], ag);
			c->fsdp_rs[u] = rs;
			c->fsdp_f[u] = cf;
			c->fsdp_b[u] = cb;
			c->fsdp_xf[u] = c->fsdp_xb[u] = 0;
			continue;
		}
		/* still gathered: the backward's reduce-scatter alone */
		c->fsdp_hf[u] = cf;
		c->fsdp_hb[u] = cb + sb * fmin(cb, rs);
		c->fsdp_hxb[u] = rs;
		c->fsdp_wait[u] = rs;
	}
	return 0;
}

void est_fsdp_run_ends(struct est_cand *c, double *f_run, double *b_run)
{
	double keep[3];
	int64_t s;

	for (s = 0; s < c->S; s++) {
		f_run[s] = est_stage_f(c, s);
		b_run[s] = est_stage_b(c, s);
	}
	if (!c->no_sync)
		return;
	memcpy(keep, c->fsdp_f, sizeof(keep));
	memcpy(c->fsdp_f, c->fsdp_gf, sizeof(keep));
	for (s = 0; s < c->S; s++) {
		f_run[s] = est_stage_f_of(c, s);	/* not the kept f_s */
		/* the stage's units' reduce-scatters one after another on
		 * the data-parallel stream */
		b_run[s] += (double)c->split[s] * c->fsdp_rs[EST_LAYER] +
			    (s == 0 ? c->fsdp_rs[EST_EMBED] : 0) +
			    (s == c->S - 1 ? c->fsdp_rs[EST_HEAD] : 0);
	}
	memcpy(c->fsdp_f, keep, sizeof(keep));
}
