/*
 * route.c - tokens per expert, the busiest EP rank, dispatch bytes.
 *
 * One microbatch on one GPU brings T_in tokens to the MoE layer (its
 * sequence-parallel shard). The experts of an ETP group are fed by the
 * tokens of the ep x etp GPUs of its block, N = T_in ep etp tokens,
 * S = N k rows (one per token and chosen expert); expert e gets n_e of
 * them, a rank the sum over its L = E / ep local experts. All ranks meet
 * in the combine, so the busiest rank sets the pace (its rows feed the
 * grouped GEMMs of the simulated rank and the receive volume of its
 * all-to-all). By the job's moe.routing.balance:
 *
 *   uniform   n_e = S / E exactly (force-balanced benchmarks): "exact"
 *   random    each row picks an expert uniformly: n ~ Multinomial(S, 1/E)
 *   zipf      expert popularity p_e ~ 1 / rank_e^s, ranks a seeded
 *             permutation of the expert ids (Megatron places experts
 *             [r L, (r+1) L) on EP rank r): n ~ Multinomial(S, p)
 *   max_mean  a measured ratio rho of the busiest rank's rows to the mean
 *             rank's: the busiest gets rho S / ep, spread over its L
 *             experts: "measured"
 *   forced    (the default) the framework's force-balanced gate
 *             (job_routing_balance): in training random under
 *             balanced_gate random (Megatron-Core draws random logits
 *             per token), uniform under round_robin and in inference
 *   eplb      a served workload whose expert placement EPLB computed
 *             from that workload's own statistics: every one of the
 *             P slots carries the same expected load, so every rank
 *             the same share 1 / ep, and a step's rows are
 *             n ~ Multinomial(S, 1/P) over the slots. DeepSeek's EPLB
 *             balances expected loads only (deepseek-ai/EPLB README:
 *             "computes a balanced expert replication and placement
 *             plan based on the estimated expert loads"); a step is one
 *             draw of its tokens' routes, whose spread no placement
 *             removes (the SGLang team: "Larger batches reduce random
 *             fluctuations in expert usage ... Even with EPLB, some
 *             imbalance is inevitable", lm-sys/lm-sys.github.io @
 *             2db4e404 blog/2025-05-05-large-scale-ep.md, "EPLB for
 *             Real-World Serving"). The packing's granularity and any
 *             drift of the workload from EPLB's statistics are not
 *             modelled: a lower bound on the busiest rank. Unlike
 *             random under redundant slots, no replica placement runs
 *             (random's uniform popularity gives EPLB nothing to
 *             balance, and its replicas of equal experts land unevenly)
 *
 * and moe.routing.method for random, zipf and eplb:
 *
 *   closed_form  rank r's rows are close to normal, mean mu_r = S P_r and
 *                variance S P_r (1 - P_r), P_r = sum of its p_e; the
 *                expected maximum over the ep ranks is
 *                  E[max] = x_0 + int_{x_0}^{inf} (1 - prod_r Phi((x - mu_r)
 *                           / sd_r)) dx,  x_0 far below every mean,
 *                integrated numerically (Simpson); the busiest rank's
 *                experts share it in proportion to their p_e.
 *   draws        `draws` multinomial draws from a GSL generator seeded with
 *                moe.routing.seed; per draw the busiest rank's expert
 *                counts, sorted, are averaged position by position.
 *
 * Redundant experts (inference, moe.redundant_experts R): the ep ranks
 * hold P = E + R slots, L = P / ep each. Under uniform and max_mean the
 * busiest rank's rows are as above, spread over its L slots. Under
 * random and zipf, DeepSeek's EPLB places the replicas from the expected
 * loads p_e (route_eplb_slots): each replica of expert e takes p_e / r_e
 * of the rows, a row picking one of its expert's replicas at random, and
 * the closed form or the draws run over the P slots as over experts.
 * EPLB balances the expected loads only: the multinomial spread of a
 * step's draw stays (and uniform popularity gives it nothing to move).
 *
 * A capacity factor c caps each expert at c S / E rows (the rest are
 * dropped). The multinomial ignores that a token's k experts are
 * distinct (fine for k << E).
 *
 * Dispatch bytes one GPU sends (coll.h all-to-all size), a row being
 * h elements of the dispatch dtype plus the path's extra bytes b_x:
 *   dedup none (Megatron alltoall)   T_in k (h e + b_x)
 *   dedup rank/node (DeepEP)         T_in ep P_rank (h e + b_x)
 * with P_rank the probability that a token picks at least one of a
 * rank's L experts, 1 - C(E - L, k) / C(E, k) (ep_hit_prob), or with
 * group-limited routing (n_group, topk_group) the grouped form. With node
 * deduplication a token crosses the scale-out network once per
 * destination node: of the rank-level bytes to a node's m GPUs a share
 * P_node / (m P_rank) goes over the network (coll_path.node_share).
 * When the busiest rank receives more than the mean (rho > 1), the
 * all-to-all is uneven: every sender sends rho times the mean share to
 * it (group member 0, the simulated one) and the rest evenly to the
 * others.
 */
#include "route.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_sf_gamma.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "config/spec_job.h"
#include "ep.h"

/* 1 - prod_i Phi((x - mu_i) / sd_i). */
static double above(double x, const double *mu, const double *sd, size_t n)
{
	double p = 1;
	size_t i;

	for (i = 0; i < n && p > 0; i++)
		p *= sd[i] > 0 ? gsl_cdf_ugaussian_P((x - mu[i]) / sd[i]) :
		     (x >= mu[i] ? 1 : 0);
	return 1 - p;
}

double route_expected_max(const double *mu, const double *sd, size_t n)
{
	double lo = mu[0], hi = mu[0], spread = 0, h, sum;
	size_t i;
	int k, steps = 2000;

	for (i = 0; i < n; i++) {
		lo = fmin(lo, mu[i]);
		hi = fmax(hi, mu[i]);
		spread = fmax(spread, sd[i]);
	}
	if (spread == 0)
		return hi;
	/* below lo - 12 sd the product is 0 to double precision, above
	 * hi + 12 sd it is 1 */
	lo -= 12 * spread;
	hi += 12 * spread;
	h = (hi - lo) / steps;
	sum = above(lo, mu, sd, n) + above(hi, mu, sd, n);
	for (k = 1; k < steps; k++)
		sum += (k % 2 ? 4 : 2) * above(lo + k * h, mu, sd, n);
	return lo + sum * h / 3;
}

/* Popularity of each expert: uniform, or zipf over a seeded permutation
 * of the expert ids. */
static int popularity(const struct routing_spec *r, size_t E, double *p,
		      gsl_rng *rng, struct arena *a)
{
	size_t *perm, e;
	double sum = 0;

	if (r->balance != ROUTE_ZIPF) {
		for (e = 0; e < E; e++)
			p[e] = 1.0 / (double)E;
		return 0;
	}
	perm = arena_alloc(a, E * sizeof(*perm));
	if (!perm)
		return -1;
	for (e = 0; e < E; e++)
		perm[e] = e;
	gsl_ran_shuffle(rng, perm, E, sizeof(*perm));
	for (e = 0; e < E; e++)
		p[e] = 1 / pow((double)perm[e] + 1, r->zipf_exponent);
	for (e = 0; e < E; e++)
		sum += p[e];
	for (e = 0; e < E; e++)
		p[e] /= sum;
	return 0;
}

/* A replica of expert `e` carrying load w, for balanced_packing. */
struct replica {
	double w;
	size_t e;
};

/* Heaviest first; equal loads by expert id (a stable order). */
static int cmp_replica(const void *a, const void *b)
{
	const struct replica *x = a, *y = b;

	if (x->w != y->w)
		return (x->w < y->w) - (x->w > y->w);
	return (x->e > y->e) - (x->e < y->e);
}

int route_eplb_slots(const double *p, size_t E, size_t P, size_t ep,
		     double *q, struct arena *a)
{
	size_t *cnt = arena_alloc(a, E * sizeof(*cnt));
	size_t *used = arena_alloc(a, ep * sizeof(*used));
	double *load = arena_alloc(a, ep * sizeof(*load));
	struct replica *rep = arena_alloc(a, P * sizeof(*rep));
	size_t L = P / ep, i, e, k, r, best;

	if (!cnt || !used || !load || !rep)
		return -1;
	for (e = 0; e < E; e++)
		cnt[e] = 1;
	for (i = E; i < P; i++) {	/* replicate_experts */
		for (best = 0, e = 1; e < E; e++)
			if (p[e] / (double)cnt[e] >
			    p[best] / (double)cnt[best])
				best = e;
		cnt[best]++;
	}
	for (i = 0, e = 0; e < E; e++)
		for (k = 0; k < cnt[e]; k++, i++)
			rep[i] = (struct replica){p[e] / (double)cnt[e], e};
	qsort(rep, P, sizeof(*rep), cmp_replica);
	for (r = 0; r < ep; r++) {
		used[r] = 0;
		load[r] = 0;
	}
	for (i = 0; i < P; i++) {	/* balanced_packing */
		for (best = ep, r = 0; r < ep; r++)
			if (used[r] < L && (best == ep || load[r] < load[best]))
				best = r;
		q[best * L + used[best]++] = rep[i].w;
		load[best] += rep[i].w;
	}
	return 0;
}

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

/* The busiest rank by the closed form: its expected rows, spread over
 * its experts in proportion to their popularity (that of the rank with
 * the largest mean). */
static double closed_form(const double *p, size_t E, size_t L, size_t ep,
			  double S, double *rows, struct arena *a)
{
	double *mu = arena_alloc(a, ep * sizeof(*mu));
	double *sd = arena_alloc(a, ep * sizeof(*sd));
	double emax, best = -1, P;
	size_t r, e, top = 0;

	if (!mu || !sd)
		return -1;
	for (r = 0; r < ep; r++) {
		for (P = 0, e = r * L; e < (r + 1) * L; e++)
			P += p[e];
		mu[r] = S * P;
		sd[r] = sqrt(S * P * (1 - P));
		if (mu[r] > best) {
			best = mu[r];
			top = r;
		}
	}
	emax = ep > 1 ? route_expected_max(mu, sd, ep) : mu[0];
	for (e = 0; e < L; e++)
		rows[e] = emax * p[top * L + e] / (best / S);
	(void)E;
	return emax;
}

/* The busiest rank by draws: mean of the max and of its sorted experts. */
static double draws(const struct routing_spec *r, const double *p, size_t E,
		    size_t L, size_t ep, double S, double *rows, gsl_rng *rng,
		    struct arena *a)
{
	unsigned int *n = arena_alloc(a, E * sizeof(*n));
	double *one = arena_alloc(a, L * sizeof(*one)), sum_max = 0;
	int64_t d;
	size_t e, k, best;

	if (!n || !one)
		return -1;
	memset(rows, 0, L * sizeof(*rows));
	for (d = 0; d < r->draws; d++) {
		double top = -1;

		gsl_ran_multinomial(rng, E, (unsigned int)S, p, n);
		for (best = 0, k = 0; k < ep; k++) {
			double tot = 0;

			for (e = k * L; e < (k + 1) * L; e++)
				tot += n[e];
			if (tot > top) {
				top = tot;
				best = k;
			}
		}
		sum_max += top;
		for (e = 0; e < L; e++)
			one[e] = n[best * L + e];
		qsort(one, L, sizeof(*one), cmp_desc);
		for (e = 0; e < L; e++)
			rows[e] += one[e] / (double)r->draws;
	}
	return sum_max / (double)r->draws;
}

/* Rows per local expert of the busiest rank into rows[L]; returns its
 * total, or -1 when out of memory. */
static double pace(const struct job_spec *j, const struct moe_dims *m,
		   double S, double *rows, struct route_result *out,
		   struct arena *a)
{
	const struct routing_spec *r = &j->moe.routing;
	size_t E = (size_t)m->experts, L = (size_t)m->local, ep = (size_t)m->ep;
	double *p, total = S / (double)ep;
	gsl_rng *rng;
	size_t e;
	int balance = job_routing_balance(j);

	out->method = "exact";
	if (balance == ROUTE_UNIFORM || balance == ROUTE_MAX_MEAN) {
		if (balance == ROUTE_MAX_MEAN) {
			total *= fmin(r->max_mean_ratio, (double)ep);
			out->method = "measured";
		}
		for (e = 0; e < L; e++)
			rows[e] = total / (double)L;
		return total;
	}
	if (balance == ROUTE_EPLB)	/* the slots, equally loaded */
		E = L * ep;
	p = arena_alloc(a, E * sizeof(*p));
	rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!p || !rng) {
		gsl_rng_free(rng);
		return -1;
	}
	gsl_rng_set(rng, (unsigned long)r->seed);
	if (popularity(r, E, p, rng, a) != 0) {
		gsl_rng_free(rng);
		return -1;
	}
	if (balance != ROUTE_EPLB && L * ep > E) {	/* EPLB's replicas */
		double *q = arena_alloc(a, L * ep * sizeof(*q));

		if (!q || route_eplb_slots(p, E, L * ep, ep, q, a) != 0) {
			gsl_rng_free(rng);
			return -1;
		}
		p = q;
		E = L * ep;
	}
	if (r->method == ROUTE_DRAWS) {
		out->method = "draws";
		out->draws = r->draws;
		total = draws(r, p, E, L, ep, S, rows, rng, a);
	} else {
		out->method = "closed_form";
		total = closed_form(p, E, L, ep, S, rows, a);
	}
	gsl_rng_free(rng);
	return total;
}

/* The uneven dispatch matrix when the busiest rank receives more. */
static double *uneven(double per_rank_B, double ep, double max_mean,
		      int back, struct arena *a)
{
	size_t n = (size_t)ep, i, k;
	double *m, to_pace = per_rank_B / ep * max_mean;
	double rest = (per_rank_B - to_pace) / (ep - 1);

	if (n < 2 || !(max_mean > 1 + 1e-9))
		return NULL;
	m = arena_alloc(a, n * n * sizeof(*m));
	if (!m)
		return NULL;
	for (i = 0; i < n; i++)
		for (k = 0; k < n; k++)
			m[i * n + k] = (back ? i : k) == 0 ? to_pace : rest;
	return m;
}

/* Dispatch bytes per GPU and the node share, by the path's dedup. A
 * combine row is h activations of the layer's base dtype (act_B:
 * layer_base_dtype of training.dtype for training, the serving model's
 * base dtype for inference), without the dispatch's extras. */
static void dispatch_bytes(const struct job_spec *j, struct moe_dims *m,
			   double hidden, double act_B)
{
	const struct ep_comm_spec *path = j->moe.dispatcher;
	const struct model_spec *model = j->model;
	struct ep_routing r = { (double)model->n_routed_experts,
				(double)model->num_experts_per_tok,
				(double)model->n_group, (double)model->topk_group,
				job_round_robin_gate(j) };
	struct ep_traffic t;
	double per_node = (double)j->system->gpus_per_node / m->etp;
	double row_B = ep_row_bytes(path, hidden, m->dispatch_dt,
				    ep_row_extra_B(path, r.experts, r.topk,
						   m->ep, floor(per_node)));

	double row16_B = hidden * act_B;

	ep_traffic(&r, m->ep, floor(per_node), m->tokens, row_B,
		   path ? path->dedup : DEDUP_NONE, &t);
	m->dispatch_B = t.send_B;
	double cbwd_B = row16_B + ep_row_grads_B(path, r.experts, r.topk,
						    m->ep, floor(per_node));

	m->combine_B = t.send_B * row16_B / row_B;
	m->combine_bwd_B = t.send_B * cbwd_B / row_B;
	m->row_B = row_B;
	m->row16_B = row16_B;
	m->row_cbwd_B = cbwd_B;
	m->node_share = t.node_share;
}

/* Each kernel's uneven matrix (moe_dims.a2a_pass_B): its own bytes; a
 * combine kernel runs the dispatch backwards, so the pace GPU, which
 * received the surplus rows, sends them back (the transpose). 0, or -1
 * out of memory. */
static int pass_matrices(struct moe_dims *m, double max_mean, struct arena *a)
{
	double bytes[EP_PASSES] = { m->dispatch_B, m->combine_B, m->combine_B,
				    m->combine_bwd_B };
	int i;

	memset(m->a2a_pass_B, 0, sizeof(m->a2a_pass_B));
	if (!m->a2a_B)
		return 0;
	m->a2a_pass_B[0] = m->a2a_B;
	for (i = 1; i < EP_PASSES; i++) {
		m->a2a_pass_B[i] = uneven(bytes[i], m->ep, max_mean,
					  i + 1 >= EP_PASS_COMBINE, a);
		if (!m->a2a_pass_B[i])
			return -1;
	}
	return 0;
}

int route_plan(const struct job_spec *j, struct layer_dims *d,
	       struct arena *a, struct route_result *out, struct diag *dg)
{
	struct moe_dims *m = &d->moe;
	double S = m->tokens * m->ep * m->etp * m->topk, total, cap;
	size_t L = (size_t)m->local, e;
	gsl_error_handler_t *old = gsl_set_error_handler_off();

	memset(out, 0, sizeof(*out));
	out->rows = arena_alloc(a, (L ? L : 1) * sizeof(*out->rows));
	if (!out->rows)
		goto oom;
	total = pace(j, m, S, out->rows, out, a);
	if (total < 0)
		goto oom;
	cap = j->moe.capacity_factor > 0 ?
	      j->moe.capacity_factor * S / m->experts : 0;
	for (total = 0, e = 0; e < L; e++) {
		if (cap > 0 && out->rows[e] > cap)
			out->rows[e] = cap;
		total += out->rows[e];
	}
	out->max_mean = total / (S / m->ep);
	m->rows = total;
	m->expert_rows = out->rows;
	dispatch_bytes(j, m, moe_row_width(d), d->act_B);
	out->a2a_B = uneven(m->dispatch_B, m->ep, out->max_mean, 0, a);
	if (out->max_mean > 1 + 1e-9 && m->ep > 1 && !out->a2a_B)
		goto oom;
	m->a2a_B = out->a2a_B;
	if (pass_matrices(m, out->max_mean, a) != 0)
		goto oom;
	gsl_set_error_handler(old);
	return 0;
oom:
	gsl_set_error_handler(old);
	diag_oom(dg);
	return -1;
}

void route_ep_paths(const struct ep_comm_spec *e, const struct moe_dims *m,
		    struct coll_path *store, const struct coll_path **path,
		    int *algo)
{
	static const int kind[EP_PASSES] = {
		0, 0, EP_ROW_COMBINE, EP_ROW_COMBINE,
	};
	double row[EP_PASSES] = { m->row_B, m->row16_B, m->row16_B,
				  m->row_cbwd_B };
	int i;

	*algo = -1;
	for (i = 0; i < EP_PASSES; i++)
		path[i] = ep_coll_path(e, m->node_share, row[i],
				       kind[i] | (i == 0 && m->dispatch_dt ==
						  DTYPE_FP8 ? EP_ROW_FP8 : 0),
				       0, &store[i], algo);
	for (i = 0; i < EP_PASSES; i++)
		if (path[i])
			store[i].rounds = ep_chunk_rounds(
				e, m->tokens, 0, kind[i] & EP_ROW_COMBINE);
}
