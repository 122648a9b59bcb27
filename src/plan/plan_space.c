/*
 * plan_space.c - the search space of one node count, walked with every
 * rule, costing the layouts that are valid and fit.
 *
 * The space is the product of the dimensions' value lists (a pinned
 * dimension lists only the job's value):
 *
 *   tp        divisors of the GPUs
 *   cp        divisors of the GPUs leaving each CP rank at least
 *             plan_opts.cp_min_seq tokens of a sequence (1 always)
 *   pp        divisors of GPUs / (tp cp); dp = GPUs / (tp cp pp)
 *   vpp       1 .. layers / pp
 *   schedule  gpipe, 1f1b, interleaved
 *   mbs       divisors of the global batch
 *   sp        off, on
 *   recompute none, selective, full
 *   zero      0, 1, 2, 3
 *
 * and, on an MoE model, between pp and vpp,
 *
 *   etp       divisors of tp (the expert tensor-parallel group inside
 *             the attention's TP group)
 *   ep        divisors of the routed experts; edp = tp cp dp / (etp ep)
 *
 * (ep is 1 and etp the job's on a dense model.) It is walked in that
 * order; each
 * rule is tested as soon as the dimensions it reads are set, through the
 * job's own checks (job_layout_check with the rules decidable there), and
 * a broken rule prunes the whole subtree, counted by its size. The
 * planner's own rules: pp vpp must divide the layers or the layers + 2
 * (Megatron's even split, or the embedding and head counted as a layer
 * each: split.h), otherwise no split is balanced (MoE models take
 * their framework's split, Megatron's that of the Megatron-Bridge
 * recipes for DeepSeek-V3's 61 layers; a job's own pp_layers is kept for
 * its own pp vpp only); sequence parallelism with tp 1 and a ZeRO stage with dp 1
 * repeat another layout's step; ZeRO 3 on an MoE model or a hybrid is
 * not estimated (unsupported). A
 * layout left is checked against every rule once more, its memory by
 * footprint_job_live (the live vectors of its schedule remembered per
 * (schedule, pp, vpp, microbatches)), and costed by est_step.
 *
 * A unit is one (tp, cp, pp, etp, ep, vpp) and its subtree (unit()):
 * several processes may share the walk by units (plan_split.c), each
 * walking the levels above every unit and the units it takes; a unit
 * puts back the dimensions it set, so each starts from the same values.
 */
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "config/pp_layout.h"
#include "base/mem.h"
#include "gpu/gpu.h"
#include "models/sched.h"
#include "plan_impl.h"

/* Rules decidable once each dimension is set. */
#define RULES_TP (JR_BIT(JR_TP_HEADS) | JR_BIT(JR_TP_KV_HEADS) | \
		  JR_BIT(JR_TP_FFN) | JR_BIT(JR_TP_SHARED))
#define RULES_CP (JR_BIT(JR_CP_SEQ) | JR_BIT(JR_CP_A2A) | JR_BIT(JR_CP_HEADS) | \
		  JR_BIT(JR_CP_TORCH))
#define RULES_PP JR_BIT(JR_WORLD)
#define RULES_EP (JR_BIT(JR_EP_DENSE) | JR_BIT(JR_EP_EXPERTS) | \
		  JR_BIT(JR_EP_FOLD) | JR_BIT(JR_ETP_FFN) | JR_BIT(JR_EP_VENDOR) | \
		  JR_BIT(JR_MTP))
#define RULES_VPP (JR_BIT(JR_PP_LAYERS) | JR_BIT(JR_PP_SPLIT) | \
		   JR_BIT(JR_A2A_VPP))
#define RULES_SCHED (JR_BIT(JR_SCHED_VPP) | JR_BIT(JR_SCHED_PP))
#define RULES_MBS (JR_BIT(JR_BATCH) | JR_BIT(JR_SCHED_MICRO))

enum { MAX_DIV = 512 };

/* The value lists below a level. */
struct lists {
	int64_t tp[MAX_DIV], ntp;
	int64_t mbs[MAX_DIV], nmbs;
	int64_t sched[3], nsched;
	int64_t sp[2], nsp;
	int64_t rc[3], nrc;
	int64_t zero[4], nzero;
	int64_t cp[MAX_DIV], ncp;
	int64_t ep[MAX_DIV], nep;	/* MoE: divisors of the experts */
};

struct walk {
	struct search *s;
	struct job_spec j;		/* the layout being built */
	struct plan_layout l;
	struct lists li;
	int64_t world, layers;
	int moe;			/* an MoE model: ep, etp searched */
	int hybrid;			/* layer kinds priced apart (est.h) */
};

struct live_set {
	struct live_set *next;
	int64_t pp;
	struct sched_live *live;	/* [pp] */
};

static int pinned(const struct search *s, enum plan_dim d)
{
	return (s->o->pinned >> d) & 1u;
}

static int64_t divisors(int64_t n, int64_t *out)
{
	int64_t k, m = 0;

	for (k = 1; k <= n && m < MAX_DIV; k++)
		if (n % k == 0)
			out[m++] = k;
	return m;
}

/* One value, or the given list. */
static int64_t one_or(int pin, int64_t value, const int64_t *all, int64_t n,
		      int64_t *out)
{
	int64_t i;

	if (pin) {
		out[0] = value;
		return 1;
	}
	for (i = 0; i < n; i++)
		out[i] = all[i];
	return n;
}

static void make_lists(struct walk *w)
{
	const struct search *s = w->s;
	const struct job_spec *b = s->base;
	static const int64_t sched[3] = { SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED };
	static const int64_t onoff[2] = { 0, 1 };
	static const int64_t rc[3] = { RECOMPUTE_NONE, RECOMPUTE_SELECTIVE,
				       RECOMPUTE_FULL };
	static const int64_t zero[4] = { 0, 1, 2, 3 };
	int64_t all[MAX_DIV], n;
	struct lists *li = &w->li;

	n = divisors(w->world, all);
	li->ntp = one_or(pinned(s, PD_TP), b->parallelism.tp, all, n, li->tp);
	n = divisors(b->training.global_batch_size, all);
	li->nmbs = one_or(pinned(s, PD_MBS), b->training.micro_batch_size, all,
			  n, li->mbs);
	li->nsched = one_or(pinned(s, PD_SCHEDULE), b->parallelism.schedule,
			    sched, 3, li->sched);
	li->nsp = one_or(pinned(s, PD_SP), b->parallelism.sequence_parallel,
			 onoff, 2, li->sp);
	li->nrc = one_or(pinned(s, PD_RECOMPUTE), b->training.recompute, rc, 3,
			 li->rc);
	li->nzero = one_or(pinned(s, PD_ZERO), b->training.zero_stage, zero, 4,
			   li->zero);
	li->nep = 1;
	li->ep[0] = 1;
	if (w->moe && pinned(s, PD_EP))
		li->ep[0] = b->parallelism.ep;
	else if (w->moe)
		li->nep = divisors(b->model->n_routed_experts, li->ep);
	li->ncp = 0;
	if (pinned(s, PD_CP)) {
		li->cp[li->ncp++] = b->parallelism.cp;
	} else {
		int64_t i, seq = b->training.seq_len, min = s->o->cp_min_seq;

		n = divisors(w->world, all);
		for (i = 0; i < n; i++)
			if (all[i] == 1 || min <= 0 || seq / all[i] >= min)
				li->cp[li->ncp++] = all[i];
	}
}

/* ---- counting subtrees ---- */

static uint64_t below_mbs(const struct lists *li)
{
	return (uint64_t)(li->nsp * li->nrc * li->nzero);
}

static uint64_t below_vpp(const struct lists *li)
{
	return (uint64_t)(li->nsched * li->nmbs) * below_mbs(li);
}

static int64_t nvpp(const struct walk *w, int64_t pp)
{
	if (pinned(w->s, PD_VPP))
		return 1;
	return w->layers / pp > 1 ? w->layers / pp : 1;
}

static int64_t pp_list(const struct walk *w, int64_t tp, int64_t cp,
		       int64_t *out)
{
	const struct job_spec *b = w->s->base;
	int64_t tc = tp * cp;

	if (pinned(w->s, PD_PP)) {
		out[0] = b->parallelism.pp;
		return 1;
	}
	if (w->world % tc != 0)
		return 0;
	return divisors(w->world / tc, out);
}

/* The etp values of a TP group of tp (MoE: its divisors, or the pin;
 * dense: the job's). */
static int64_t etp_list(const struct walk *w, int64_t tp, int64_t *out)
{
	const struct job_spec *b = w->s->base;

	if (!w->moe) {
		out[0] = b->parallelism.etp;	/* not searched */
		return 1;
	}
	if (pinned(w->s, PD_ETP)) {
		out[0] = b->parallelism.etp > 0 ? b->parallelism.etp : tp;
		return 1;
	}
	return divisors(tp, out);
}

static uint64_t below_ep(const struct walk *w, int64_t pp)
{
	return (uint64_t)nvpp(w, pp) * below_vpp(&w->li);
}

static uint64_t below_pp(const struct walk *w, int64_t tp, int64_t pp)
{
	int64_t etps[MAX_DIV];

	return (uint64_t)(etp_list(w, tp, etps) * w->li.nep) * below_ep(w, pp);
}

static uint64_t below_tc(const struct walk *w, int64_t tp, int64_t cp)
{
	int64_t pps[MAX_DIV], n = pp_list(w, tp, cp, pps), i;
	uint64_t sum = 0;

	for (i = 0; i < n; i++)
		sum += below_pp(w, tp, pps[i]);
	return n ? sum : 1;
}

/* ---- pruning ---- */

/* The layout of the walk's job: the dimensions set so far, the neutral
 * values (pp 1, vpp 1, 1f1b, mbs 1, ...) for the others. */
static struct plan_layout so_far(const struct walk *w)
{
	const struct parallel_spec *p = &w->j.parallelism;
	struct plan_layout l = w->l;

	l.tp = p->tp;
	l.cp = p->cp;
	l.pp = p->pp;
	l.vpp = p->vpp;
	l.dp = p->dp;
	l.ep = p->ep;
	l.etp = w->moe ? p->etp : 0;
	l.schedule = (int8_t)p->schedule;
	l.sp = (int8_t)p->sequence_parallel;
	l.mbs = w->j.training.micro_batch_size;
	l.recompute = (int8_t)w->j.training.recompute;
	l.zero = (int8_t)w->j.training.zero_stage;
	return l;
}

/* Where a shared walk is (struct split): 2 u before unit u, 2 u + 1
 * inside it. */
static uint64_t seq_of(const struct split *sp)
{
	return sp->in_unit ? 2 * sp->unit - 1 : 2 * sp->unit;
}

static void prune(struct walk *w, int reason, uint64_t count)
{
	struct search *s = w->s;

	if (s->split.on && !s->split.above && !s->split.in_unit)
		return;		/* the first pass counted it */
	s->pruned[reason] += count;
	s->rule_miss[reason].count += count;
	/* the first in walk order: a shared walk's ranges are not taken in
	 * walk order (without one, seq is 0) */
	if (!s->rule_miss[reason].have ||
	    seq_of(&s->split) < s->split.miss_seq[reason]) {
		s->rule_miss[reason].lay = so_far(w);
		s->rule_miss[reason].have = 1;
		s->split.miss_seq[reason] = seq_of(&s->split);
	}
}

/* The first rule of `rules` the layout so far breaks, or -1. */
static int broken(struct walk *w, uint64_t rules)
{
	uint64_t b = job_layout_check(&w->j, rules, NULL, NULL);
	int r;

	for (r = 0; b && r < JR_COUNT; r++)
		if (b & JR_BIT(r))
			return r;
	return -1;
}

/* Whether the split of the layers over pp vpp stages is balanced. */
static int even_split(const struct walk *w)
{
	int64_t stages = w->l.pp * w->l.vpp;

	if (w->j.parallelism.pp_layers.n > 0 || w->j.parallelism.pp_layout)
		return 1;	/* the job's own split; JR_PP_SPLIT checks it */
	if (w->moe)
		return 1;	/* the framework's split (the header) */
	return w->layers % stages == 0 || (w->layers + 2) % stages == 0;
}

/* ---- the leaf ---- */

static const struct sched_live *lives_of(struct search *s,
					 const struct job_spec *j)
{
	const struct parallel_spec *p = &j->parallelism;
	/* one local batch's schedule (job_schedule_runs), as footprint.c */
	int64_t key[5] = { p->schedule, p->pp, p->vpp,
			   job_microbatches(j) / job_schedule_runs(j),
			   footprint_extra_warmup(j) };
	struct live_set *const *hit = memo_get(&s->lives, key);
	struct live_set *ls;
	int64_t r;

	if (hit)
		return (*hit)->live;
	ls = mem_calloc(1, sizeof(*ls));
	if (!ls)
		return NULL;
	ls->next = s->live_list;
	s->live_list = ls;
	ls->pp = p->pp;
	ls->live = mem_calloc((size_t)p->pp, sizeof(*ls->live));
	if (!ls->live)
		return NULL;
	for (r = 0; r < p->pp; r++)
		if (sched_live_init(&ls->live[r], p->schedule, p->pp, p->vpp,
				    key[3], r, key[4]) != 0)
			return NULL;
	if (!memo_put(&s->lives, key, &ls))
		return NULL;
	return ls->live;
}

void space_kept(const struct search *s, const struct plan_layout *l,
		double lb_s, double peak_B, struct scored *out)
{
	out->lay = *l;
	out->est_s = lb_s;
	out->lb_s = lb_s;
	out->peak_B = peak_B;
	out->score = plan_score(s->o->objective, lb_s, peak_B,
				system_gpus(&s->sys));
	out->bounded = 1;
}

static int keep(struct search *s, const struct plan_layout *l, double lb_s,
		double peak_B)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		struct scored *v = mem_realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -1;
		s->v = v;
		s->cap = cap;
	}
	if (s->split.on && s->n == s->split.vcap) {
		size_t cap = s->split.vcap ? 2 * s->split.vcap : 1024;
		uint64_t *u = mem_realloc(s->split.vunit, cap * sizeof(*u));

		if (!u)
			return -1;
		s->split.vunit = u;
		s->split.vcap = cap;
	}
	if (s->split.on)
		s->split.vunit[s->n] = s->split.unit - 1;
	space_kept(s, l, lb_s, peak_B, &s->v[s->n]);
	s->n++;
	return 0;
}

static int leaf(struct walk *w)
{
	struct search *s = w->s;
	const struct sched_live *live;
	struct footprint fp;
	double lb;
	int r = broken(w, JOB_RULES_ALL);

	if (r >= 0) {	/* the rules decided above already passed */
		prune(w, r, 1);
		return 0;
	}
	if (!(live = lives_of(s, &w->j)) ||
	    footprint_job_live(&w->j, s->usable_B, live, &fp) != 0) {
		diag_oom(s->d);
		return -1;
	}
	if (!fp.fits) {
		prune(w, PR_MEMORY, 1);
		if (!s->have_min_mem || fp.peak_B < s->min_mem.peak_B ||
		    (fp.peak_B == s->min_mem.peak_B &&
		     seq_of(&s->split) < s->split.min_seq)) {
			s->min_mem = fp;
			s->min_mem_lay = w->l;
			s->have_min_mem = 1;
			s->split.min_seq = seq_of(&s->split);
		}
		return 0;
	}
	if (est_bound(s->est, &w->j, &lb, s->d) != 0)
		return -1;
	return keep(s, &w->l, lb, fp.peak_B) == 0 ? 0 : (diag_oom(s->d), -1);
}

/* ---- the levels, outermost first ---- */

/* The job's tp_comm_overlap where a layout can have it: sequence
 * parallelism on a TP group inside one node (TransformerEngine's
 * userbuffers exchange over the scale-up fabric). */
static void set_tp_overlap(struct walk *w)
{
	int on = w->s->base->parallelism.tp_comm_overlap && w->l.tp >= 2 &&
		 w->l.sp && w->l.tp <= w->s->sys.gpus_per_node;

	w->j.parallelism.tp_comm_overlap = on;
	w->l.tp_overlap = (int8_t)on;
}

static int level_zero(struct walk *w)
{
	const struct lists *li = &w->li;
	int64_t i;

	for (i = 0; i < li->nzero; i++) {
		w->l.zero = (int8_t)li->zero[i];
		w->j.training.zero_stage = li->zero[i];
		/* the job's defer_embedding_wgrad_compute where the layout
		 * can run it (plan_layout.c does the same) */
		w->j.parallelism.defer_embedding_wgrad =
			w->s->base->parallelism.defer_embedding_wgrad &&
			w->l.pp >= 2 && li->zero[i] < 3;
		if (w->l.dp == 1 && li->zero[i] > 0 && !pinned(w->s, PD_ZERO) &&
		    !(w->moe && w->j.parallelism.edp > 1)) {
			prune(w, PR_REDUNDANT, 1);
			continue;
		}
		/* a framework with a full gradient buffer has no ZeRO 2 of
		 * its own: the step and the memory of ZeRO 1 (footprint.c) */
		if (li->zero[i] == 2 && w->j.framework->grad_buffer_full &&
		    !pinned(w->s, PD_ZERO)) {
			prune(w, PR_REDUNDANT, 1);
			continue;
		}
		if ((w->moe || w->hybrid) && li->zero[i] >= 3) {
			prune(w, PR_UNSUPPORTED, 1);
			continue;
		}
		if (leaf(w) != 0)
			return -1;
	}
	return 0;
}

static int level_sp_rc(struct walk *w)
{
	const struct lists *li = &w->li;
	int64_t i, k;
	int r;

	for (i = 0; i < li->nsp; i++) {
		w->l.sp = (int8_t)li->sp[i];
		w->j.parallelism.sequence_parallel = (int)li->sp[i];
		set_tp_overlap(w);
		if (w->l.tp == 1 && li->sp[i] && !pinned(w->s, PD_SP)) {
			prune(w, PR_REDUNDANT, (uint64_t)(li->nrc * li->nzero));
			continue;
		}
		r = broken(w, JR_BIT(JR_MOE_SP) | JR_BIT(JR_SP_SEQ));
		if (r >= 0) {
			prune(w, r, (uint64_t)(li->nrc * li->nzero));
			continue;
		}
		for (k = 0; k < li->nrc; k++) {
			w->l.recompute = (int8_t)li->rc[k];
			w->j.training.recompute = (int)li->rc[k];
			if ((r = broken(w, JR_BIT(JR_A2A_RECOMPUTE))) >= 0) {
				prune(w, r, (uint64_t)li->nzero);
				continue;
			}
			if (level_zero(w) != 0)
				return -1;
		}
	}
	return 0;
}

/* GPipe over one microbatch a schedule is 1F1B's step: every stage runs
 * the one forward, then the one backward, in both (the step, its
 * program and its memory are the same; the run --json of a pp 1, 2 and 4
 * layout differ in the schedule's name only). Searched as 1F1B, the
 * next schedule in the list, unless the schedule is pinned. */
static int gpipe_is_1f1b(const struct walk *w)
{
	return w->j.parallelism.schedule == SCHED_GPIPE &&
	       !pinned(w->s, PD_SCHEDULE) &&
	       job_microbatches(&w->j) / job_schedule_runs(&w->j) == 1;
}

static int level_sched_mbs(struct walk *w)
{
	const struct lists *li = &w->li;
	int64_t i, k;
	int r;

	for (i = 0; i < li->nsched; i++) {
		w->l.schedule = (int8_t)li->sched[i];
		w->j.parallelism.schedule = (int)li->sched[i];
		w->l.mbs = w->j.training.micro_batch_size = 1;
		if ((r = broken(w, RULES_SCHED)) >= 0) {
			prune(w, r, (uint64_t)li->nmbs * below_mbs(li));
			continue;
		}
		for (k = 0; k < li->nmbs; k++) {
			w->l.mbs = w->j.training.micro_batch_size = li->mbs[k];
			if ((r = broken(w, RULES_MBS)) >= 0) {
				prune(w, r, below_mbs(li));
				continue;
			}
			if (gpipe_is_1f1b(w)) {
				prune(w, PR_REDUNDANT, below_mbs(li));
				continue;
			}
			if (level_sp_rc(w) != 0)
				return -1;
		}
	}
	return 0;
}

/* The dimensions set below vpp, kept across a unit (below). */
struct below {
	struct plan_layout l;
	int64_t schedule, mbs, sp, tp_overlap, recompute, zero;
};

static void below_save(const struct walk *w, struct below *b)
{
	b->l = w->l;
	b->schedule = w->j.parallelism.schedule;
	b->mbs = w->j.training.micro_batch_size;
	b->sp = w->j.parallelism.sequence_parallel;
	b->tp_overlap = w->j.parallelism.tp_comm_overlap;
	b->recompute = w->j.training.recompute;
	b->zero = w->j.training.zero_stage;
}

static void below_restore(struct walk *w, const struct below *b)
{
	w->l = b->l;
	w->j.parallelism.schedule = (int)b->schedule;
	w->j.training.micro_batch_size = b->mbs;
	w->j.parallelism.sequence_parallel = (int)b->sp;
	w->j.parallelism.tp_comm_overlap = (int)b->tp_overlap;
	w->j.training.recompute = (int)b->recompute;
	w->j.training.zero_stage = b->zero;
}

/*
 * Below vpp: one unit, walked here unless a shared walk (struct split)
 * gave it to another process. The dimensions it sets are put back after
 * it, so that every unit starts from the same values whichever process
 * walked the one before: no rule above or in a unit reads a dimension
 * before its level sets it (spec_job_layout_sink.c rule_keys), but the
 * layout a pruning records (so_far, the nearest miss) holds them all.
 */
static int unit(struct walk *w)
{
	struct split *sp = &w->s->split;
	struct below b;
	uint64_t u;
	int rc;

	if (sp->on) {
		u = sp->unit++;
		if (sp->above || sp->stopped || u < sp->from)
			return 0;
		if (!split_claim(sp, u)) {	/* the range is done */
			sp->stopped = 1;
			return 0;
		}
	}
	below_save(w, &b);
	sp->in_unit = sp->on;
	rc = level_sched_mbs(w);
	sp->in_unit = 0;
	below_restore(w, &b);
	return rc;
}

static int level_vpp(struct walk *w)
{
	int64_t n = nvpp(w, w->l.pp), v;
	int r;

	for (v = 1; v <= n; v++) {
		const struct parallel_spec *bp = &w->s->base->parallelism;

		w->l.vpp = pinned(w->s, PD_VPP) ? bp->vpp : v;
		w->j.parallelism.vpp = w->l.vpp;
		/* the job's own split, for its own stages only */
		w->j.parallelism.pp_layers.n =
			(int64_t)bp->pp_layers.n == w->l.pp * w->l.vpp ?
			bp->pp_layers.n : 0;
		w->j.parallelism.pp_layout =
			bp->pp_layout && pp_layout_stages(bp->pp_layout) ==
			w->l.pp * w->l.vpp ? bp->pp_layout : NULL;
		if ((r = broken(w, RULES_VPP)) >= 0) {
			prune(w, r, below_vpp(&w->li));
			continue;
		}
		if (!even_split(w)) {
			prune(w, PR_LAYER_SPLIT, below_vpp(&w->li));
			continue;
		}
		if (unit(w) != 0)
			return -1;
	}
	return 0;
}

/* Expert parallelism over the stage's tp cp dp GPUs (MoE). */
static int level_ep(struct walk *w)
{
	int64_t etps[MAX_DIV], ne = etp_list(w, w->l.tp, etps), i, k;
	struct parallel_spec *p = &w->j.parallelism;
	int r;

	if (!w->moe)	/* ep 1, the job's etp */
		return level_vpp(w);
	for (i = 0; i < ne; i++)
		for (k = 0; k < w->li.nep; k++) {
			int64_t stage = p->tp * p->cp * p->dp;

			w->l.etp = p->etp = etps[i];
			w->l.ep = p->ep = w->li.ep[k];
			p->edp = stage % (p->etp * p->ep) == 0 ?
				 stage / (p->etp * p->ep) : 0;
			if ((r = broken(w, RULES_EP)) >= 0) {
				prune(w, r, below_ep(w, w->l.pp));
				continue;
			}
			if (level_vpp(w) != 0)
				return -1;
		}
	return 0;
}

static int level_pp(struct walk *w)
{
	int64_t pps[MAX_DIV], n = pp_list(w, w->l.tp, w->l.cp, pps), i;
	const struct job_spec *b = w->s->base;
	int r;

	if (n == 0) {
		prune(w, JR_WORLD, 1);
		return 0;
	}
	for (i = 0; i < n; i++) {
		int64_t tcp = w->l.tp * w->l.cp * pps[i];

		w->l.pp = w->j.parallelism.pp = pps[i];
		w->l.dp = pinned(w->s, PD_DP) ? b->parallelism.dp :
			  (w->world % tcp == 0 ? w->world / tcp : 1);
		w->j.parallelism.dp = w->l.dp;
		if ((r = broken(w, RULES_PP)) >= 0) {
			prune(w, r, below_pp(w, w->l.tp, pps[i]));
			continue;
		}
		if (level_ep(w) != 0)
			return -1;
	}
	return 0;
}

/* Whether the TP group may be searched: inside one node (its GPUs
 * divide the node's), unless asked for or pinned. TP across nodes is
 * valid but runs its per-layer collectives over the scale-out fabric
 * (and the analytical tier, timing each collective alone, misses how
 * they share the NICs with data-parallel and pipeline traffic). */
static int tp_in_node(const struct walk *w)
{
	int64_t gpn = w->s->sys.gpus_per_node;

	return w->s->o->cross_node_tp || pinned(w->s, PD_TP) ||
	       (w->l.tp <= gpn && gpn % w->l.tp == 0);
}

static int level_tp(struct walk *w)
{
	const struct lists *li = &w->li;
	int64_t i, k, tc;
	int r;

	for (i = 0; i < li->ntp; i++)
		for (k = 0; k < li->ncp; k++) {
			uint64_t size;

			w->l.tp = w->j.parallelism.tp = li->tp[i];
			w->l.cp = w->j.parallelism.cp = li->cp[k];
			tc = li->tp[i] * li->cp[k];
			size = below_tc(w, li->tp[i], li->cp[k]);
			w->j.parallelism.pp = 1;
			w->j.parallelism.dp = w->world % tc == 0 ?
					      w->world / tc : 1;
			if ((r = broken(w, RULES_TP | RULES_CP)) >= 0) {
				prune(w, r, size);
				continue;
			}
			if (!tp_in_node(w)) {
				prune(w, PR_TP_NODE, size);
				continue;
			}
			if (level_pp(w) != 0)
				return -1;
		}
	return 0;
}

/* The walk's lists and its job before the first level. */
static void walk_init(struct walk *w, struct search *s)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->world = system_gpus(&s->sys);
	w->layers = s->base->model->num_hidden_layers;
	w->moe = model_is_moe(s->base->model);
	w->hybrid = est_hybrid(s->base->model);
	make_lists(w);
}

void space_count(struct search *s)
{
	struct walk w;
	uint64_t total = 0;
	int64_t i, k;

	walk_init(&w, s);
	for (i = 0; i < w.li.ntp; i++)
		for (k = 0; k < w.li.ncp; k++)
			total += below_tc(&w, w.li.tp[i], w.li.cp[k]);
	s->searched += total;
	s->walkers = 1;
}

static uint64_t pack(uint64_t lo, uint64_t hi)
{
	return lo << 32 | hi;
}

int split_claim(struct split *sp, uint64_t u)
{
	uint64_t cur = atomic_load(sp->slot);

	for (;;) {
		uint64_t lo = cur >> 32, hi = cur & 0xffffffffu;

		if (lo != u || lo >= hi)
			return 0;
		if (atomic_compare_exchange_weak(sp->slot, &cur,
						 pack(lo + 1, hi)))
			return 1;
	}
}

int space_walk(struct search *s)
{
	struct walk w;

	walk_init(&w, s);
	w.j = *s->base;
	w.j.system = &s->sys;
	w.j.parallelism.ep = 1;
	if (w.moe && w.j.parallelism.etp < 1)
		w.j.parallelism.etp = 1;
	w.l.nodes = s->sys.nodes;
	w.l.ep = 1;
	w.l.etp = w.moe ? w.j.parallelism.etp : 0;
	w.j.parallelism.vpp = 1;
	w.j.parallelism.schedule = SCHED_1F1B;
	w.j.training.micro_batch_size = 1;
	return level_tp(&w);
}

/* ---- the analytical tier: best first, by bound ---- */

static int by_score(const void *a, const void *b)
{
	const struct scored *x = a, *y = b;

	if (x->score != y->score)
		return x->score < y->score ? -1 : 1;
	return memcmp(&x->lay, &y->lay, sizeof(x->lay));	/* a total order */
}

/* Insert score v into the sorted best[0..*n-1] of at most k. */
static void best_insert(double *best, size_t *n, size_t k, double v)
{
	size_t i;

	if (*n == k && v >= best[k - 1])
		return;
	i = *n < k ? (*n)++ : k - 1;
	for (; i > 0 && best[i - 1] > v; i--)
		best[i] = best[i - 1];
	best[i] = v;
}

int space_estimate(struct search *s, size_t k)
{
	double *best = mem_alloc((k ? k : 1) * sizeof(*best));
	size_t nbest = 0, i;
	int64_t gpus = system_gpus(&s->sys);

	if (!best) {
		diag_oom(s->d);
		return -1;
	}
	/* by bound: once a bound is no better than the k-th estimate, no
	 * later layout can enter the best k */
	if (s->n > 0)
		qsort(s->v, s->n, sizeof(*s->v), by_score);
	for (i = 0; i < s->n; i++) {
		struct scored *c = &s->v[i];
		struct job_spec j;
		struct est_step es;

		if (k > 0 && nbest == k && c->score >= best[k - 1])
			break;
		plan_layout_job(s->base, &s->sys, &c->lay, &j);
		if (est_step(s->est, &j, &es, s->d) != 0) {
			mem_free(best);
			return -1;
		}
		c->est_s = es.step_s;
		c->est = es;
		c->bounded = 0;
		c->score = plan_score(s->o->objective, es.step_s, c->peak_B, gpus);
		best_insert(best, &nbest, k, c->score);
	}
	s->nest = i;
	/* the estimated first, best first; the bounded after, by bound */
	if (i > 0)
		qsort(s->v, i, sizeof(*s->v), by_score);
	mem_free(best);
	return 0;
}

/* ---- one layout at a time (plan_ctx) ---- */

struct plan_ctx {
	struct search s;
};

struct plan_ctx *plan_ctx_new(const struct job_spec *j,
			      const struct plan_opts *o, int64_t nodes,
			      struct diag *d)
{
	struct plan_ctx *x = mem_calloc(1, sizeof(*x));

	if (!x) {
		diag_oom(d);
		return NULL;
	}
	if (space_init(&x->s, j, o, nodes > 0 ? nodes : j->system->nodes,
		       d) != 0) {
		plan_ctx_free(x);
		return NULL;
	}
	return x;
}

void plan_ctx_free(struct plan_ctx *x)
{
	if (!x)
		return;
	space_release(&x->s);
	mem_free(x);
}

int plan_ctx_estimate(struct plan_ctx *x, const struct plan_layout *l,
		      struct plan_cand *c, int *why, struct diag *d)
{
	struct search *s = &x->s;
	const struct sched_live *live;
	struct plan_layout lay = *l;
	struct job_spec j;
	uint64_t b;
	int r;

	lay.nodes = s->sys.nodes;
	plan_layout_job(s->base, &s->sys, &lay, &j);
	memset(c, 0, sizeof(*c));
	c->lay = lay;
	c->gpus = system_gpus(&s->sys);
	b = job_layout_check(&j, JOB_RULES_ALL, NULL, NULL);
	for (r = 0; b && r < JR_COUNT; r++)
		if (b & JR_BIT(r)) {
			*why = r;
			return 1;
		}
	if ((model_is_moe(j.model) || est_hybrid(j.model)) &&
	    j.training.zero_stage >= 3) {
		*why = PR_UNSUPPORTED;	/* not estimated (plan_space.c) */
		return 1;
	}
	s->d = d;
	if (!(live = lives_of(s, &j)) ||
	    footprint_job_live(&j, s->usable_B, live, &c->mem) != 0) {
		diag_oom(d);
		return -1;
	}
	if (est_step(s->est, &j, &c->est, d) != 0)
		return -1;
	plan_cand_from_estimate(&j, c);
	if (!c->mem.fits) {
		*why = PR_MEMORY;
		return 1;
	}
	return 0;
}

/* ---- setup ---- */

int space_init(struct search *s, const struct job_spec *base,
	       const struct plan_opts *o, int64_t nodes, struct diag *d)
{
	memset(s, 0, sizeof(*s));
	s->base = base;
	s->o = o;
	s->d = d;
	s->sys = *base->system;
	s->sys.nodes = nodes;
	s->usable_B = gpu_usable_memory_B(base->system->gpu) * (1 - o->headroom);
	memo_init(&s->lives, 5 * sizeof(int64_t), sizeof(struct live_set *));
	s->est = est_new(&s->sys, d);
	return s->est ? 0 : -1;
}

void space_release(struct search *s)
{
	struct live_set *ls, *next;
	int64_t r;

	for (ls = s->live_list; ls; ls = next) {
		next = ls->next;
		for (r = 0; ls->live && r < ls->pp; r++)
			sched_live_release(&ls->live[r]);
		mem_free(ls->live);
		mem_free(ls);
	}
	memo_release(&s->lives);
	est_free(s->est);
	mem_free(s->v);
	mem_free(s->split.vunit);
	s->split.vunit = NULL;
	s->split.vcap = 0;
	s->v = NULL;
	s->n = s->cap = 0;
}
