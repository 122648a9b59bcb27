/*
 * est_stage.c - a candidate's stages for the analytical tier: the time of
 * each virtual stage's forward and backward per microbatch from its
 * units' blocks (est.c has the formulas), and the time through a unit.
 * A leaf: est.c and est_dp.c call it, it calls neither.
 */
#include <math.h>

#include "est_impl.h"

double est_unit_f(const struct est_cand *c, int u)
{
	const struct est_pass *e[3] = { &c->b->lf, &c->b->ef, &c->b->hf };

	return c->j->training.zero_stage >= 3 ? c->fsdp_f[u] : e[u]->lat_s;
}

/* The head's backward under defer_embedding_wgrad_compute (no FSDP:
 * the job rule defer_wgrad): the first c->defer of the m backwards run
 * without the weight gradient (train.c action_block), the rest with it;
 * the recurrence takes one time a stage, so their mean. */
double est_unit_b(const struct est_cand *c, int u)
{
	const struct est_pass *e[3] = { &c->b->lb, &c->b->eb, &c->b->hb };

	if (c->j->training.zero_stage >= 3)
		return c->fsdp_b[u];
	if (u == EST_HEAD && c->defer > 0 && c->m > 0)
		return c->b->hb.lat_s - c->defer / (double)c->m *
		       (c->b->hb.lat_s - c->b->hbd.lat_s);
	return e[u]->lat_s;
}

/* MoE layers of stage s, and their block (paired under a2a_overlap). */
static double nmoe(const struct est_cand *c, int64_t s)
{
	return c->nmoe ? (double)c->nmoe[s] : 0;
}

/* A hybrid's layers of stage s, by kind, forward or backward. */
static double by_kind(const struct est_cand *c, int64_t s, int bwd)
{
	double t = 0;
	int x;

	for (x = 0; x < c->b->nk; x++)
		t += (double)c->nkind[s * EST_KINDS + x] *
		     (bwd ? c->b->kb[x].lat_s : c->b->kf[x].lat_s);
	return t;
}

double est_layers_f(const struct est_cand *c, int64_t s)
{
	double n = nmoe(c, s);

	if (c->nkind)
		return by_kind(c, s, 0);
	return ((double)c->split[s] - n) * est_unit_f(c, EST_LAYER) +
	       (n > 0 ? n * (c->ov * c->b->mfo.lat_s +
			     (1 - c->ov) * c->b->mf.lat_s) : 0);
}

double est_layers_b(const struct est_cand *c, int64_t s)
{
	double n = nmoe(c, s);

	if (c->nkind)
		return by_kind(c, s, 1);
	return ((double)c->split[s] - n) * est_unit_b(c, EST_LAYER) +
	       (n > 0 ? n * (c->ov * c->b->mbo.lat_s +
			     (1 - c->ov) * c->b->mb.lat_s) : 0);
}

double est_mtp_summed(const struct est_cand *c)
{
	if (c->mtp <= 0 || !c->d->embed_dense)
		return 0;
	return (double)(c->S == 1 ? c->mtp : c->mtp - 1);
}

double est_mtp_b(const struct est_cand *c)
{
	double ns = est_mtp_summed(c);

	return ((double)c->mtp - ns) * c->b->tb.lat_s + ns * c->b->tbs.lat_s;
}

/* The head of the last stage with the MTP modules after it (forward
 * order: head, MTP; backward: MTP, head) when they are there. */
static double head_f(const struct est_cand *c)
{
	return est_unit_f(c, EST_HEAD) +
	       (c->mtp_stage == c->S - 1 ? (double)c->mtp * c->b->tf.lat_s : 0);
}

static double head_b(const struct est_cand *c)
{
	return est_unit_b(c, EST_HEAD) +
	       (c->mtp_stage == c->S - 1 ? est_mtp_b(c) : 0);
}

/* MTP modules on a stage of their own before the last (the layout's
 * "...|m|L"). */
static double alone_f(const struct est_cand *c, int64_t s)
{
	return s == c->mtp_stage && s != c->S - 1 ?
	       (double)c->mtp * c->b->tf.lat_s : 0;
}

static double alone_b(const struct est_cand *c, int64_t s)
{
	return s == c->mtp_stage && s != c->S - 1 ? est_mtp_b(c) : 0;
}

/* A layer's mean forward / backward on stage s. */
static double mean_f(const struct est_cand *c, int64_t s)
{
	if (nmoe(c, s) == 0 && !c->nkind)
		return est_unit_f(c, EST_LAYER);
	return c->split[s] > 0 ? est_layers_f(c, s) / (double)c->split[s] : 0;
}

static double mean_b(const struct est_cand *c, int64_t s)
{
	if (nmoe(c, s) == 0 && !c->nkind)
		return est_unit_b(c, EST_LAYER);
	return c->split[s] > 0 ? est_layers_b(c, s) / (double)c->split[s] : 0;
}

/* A chunk pass of time t with the fp8 amax reduction at its end
 * (train.c): the reduction, and the wait for its group's slowest member
 * over the compute since the group last met, the pass (exec_jitter.c;
 * 0 without variability). */
static double with_amax(const struct est_cand *c, const struct est_pass *a,
			double t)
{
	return a->lat_s > 0 ? t + a->lat_s + c->b->amax_tax * t : t;
}

/* ZeRO 3: the collectives of stage s's units on the data-parallel
 * streams, forward (xf) or backward (xb): the dense layers', the
 * embedding's on the first stage, the head's on the last (those est_
 * unit_f/_b carry; MoE layers and hybrids' kinds carry none). */
static inline double stage_coll(const struct est_cand *c, int64_t s,
				const double *x)
{
	double n;

	if (c->j->training.zero_stage < 3)
		return 0;
	n = c->nkind ? (double)c->split[s] : nmoe(c, s);
	return ((double)c->split[s] - n) * x[EST_LAYER] +
	       (s == 0 ? x[EST_EMBED] : 0) + (s == c->S - 1 ? x[EST_HEAD] : 0);
}

/* fmax(a, b), bit for bit: a when a > b (fmax's answer then), else
 * fmax itself (NaN, equal values and signed zeros as it takes them).
 * The stage times are read ~100 times an estimate (the recurrence's
 * durations, the data-parallel stretch and tails, the parts), and
 * without -ffinite-math-only each fmax is a call into libm: with this
 * the usual case (no ZeRO 3: the collectives' 0 below a positive
 * stage) makes none. */
static inline double max_of(double a, double b)
{
	return a > b ? a : fmax(a, b);
}

double est_stage_f_of(const struct est_cand *c, int64_t s)
{
	return max_of(with_amax(c, &c->b->af,
				est_layers_f(c, s) +
				(s == 0 ? est_unit_f(c, EST_EMBED) : 0) +
				(s == c->S - 1 ? head_f(c) : 0) +
				alone_f(c, s) + (s > 0 ? c->b->pg.lat_s : 0)),
		      stage_coll(c, s, c->fsdp_xf));
}

/* ZeRO 3 outside no_sync: the compute stream waits at the end of every
 * backward for its reduce-scatters (FSDP2's root post-backward final
 * callback; models/train_dp.c reduce_waited). They run one after
 * another on the data-parallel stream, each after its unit's backward,
 * the units costing at least their collectives (est_fsdp_units): the
 * last unit's, in backward order the embedding's on stage 0, else a
 * layer's (the head's on a last stage of none), is what is left after
 * the backward. 0 without FSDP's collectives (fsdp_wait 0). */
static double backward_wait(const struct est_cand *c, int64_t s)
{
	if (c->j->training.zero_stage < 3)
		return 0;
	if (s == 0)
		return c->fsdp_wait[EST_EMBED];
	if (c->split[s] > 0)
		return c->fsdp_wait[EST_LAYER];
	return s == c->S - 1 ? c->fsdp_wait[EST_HEAD] : 0;
}

double est_stage_b_of(const struct est_cand *c, int64_t s)
{
	double w = backward_wait(c, s);

	return max_of(with_amax(c, &c->b->ab,
				est_layers_b(c, s) +
				(s == 0 ? est_unit_b(c, EST_EMBED) : 0) +
				(s == c->S - 1 ? head_b(c) : 0) +
				alone_b(c, s) +
				(s < c->S - 1 ? c->b->pg.lat_s : 0)),
		      stage_coll(c, s, c->fsdp_xb) - w) + w;
}

double est_bwd_through(const struct est_cand *c, int64_t s, int64_t u)
{
	int has_head = s == c->S - 1, has_embed = s == 0;
	int64_t units = c->split[s] + has_head + has_embed;
	double t = s < c->S - 1 ? c->b->pg.lat_s : 0;
	int64_t layers = u + 1 - has_head;

	if (has_head)
		t += head_b(c);
	if (has_embed && u == units - 1) {
		t += est_unit_b(c, EST_EMBED);
		layers--;
	}
	return t + (double)(layers > 0 ? layers : 0) * mean_b(c, s);
}

double est_fwd_before(const struct est_cand *c, int64_t s, int64_t u)
{
	int has_embed = s == 0;
	double t = s > 0 ? c->b->pg.lat_s : 0;
	int64_t layers = u - has_embed;

	if (has_embed && u > 0)
		t += est_unit_f(c, EST_EMBED);
	if (layers > c->split[s])
		layers = c->split[s];
	return t + (double)(layers > 0 ? layers : 0) * mean_f(c, s);
}

int64_t est_rank_of(const struct est_cand *c, int i)
{
	return i == 0 ? 0 : i == 1 ? 1 : c->p - 1;
}

int est_rank_used(const struct est_cand *c, int i)
{
	int64_t r = est_rank_of(c, i);

	return r < c->p && !(i == 2 && (r == 0 || r == 1));
}

/* The entry (est_rank_of) that stands for rank r: the first, the
 * second, the last, and the second for the ranks between. At pp 2 the
 * last rank is the second (entry 2 is no rank of its own there:
 * est_rank_used). */
int est_rank_index(const struct est_cand *c, int64_t r)
{
	return r == 0 ? 0 : r == 1 || r != c->p - 1 ? 1 : 2;
}
