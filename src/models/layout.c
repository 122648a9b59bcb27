/*
 * layout.c - rank arithmetic for the TP x CP x DP x PP grid and the
 * ETP x EP x EDP fold of the experts (see layout.h).
 */
#include "layout.h"

#include "base/diag.h"

void layout_init(struct layout *l, int64_t tp, int64_t cp, int64_t pp,
		 int64_t dp, int64_t etp, int64_t ep, int full)
{
	l->tp = tp;
	l->cp = cp;
	l->pp = pp;
	l->dp = dp;
	l->stage = tp * cp * dp;
	l->etp = etp > 0 ? etp : 1;
	l->ep = ep > 0 ? ep : 1;
	if (l->stage % (l->etp * l->ep) != 0)
		BUG("etp * ep does not divide a stage's GPUs (the job checks it)");
	l->edp = l->stage / (l->etp * l->ep);
	l->cp_a2a = 1;
	l->pp_inner = 0;
	l->sim = full ? l->stage : 1;
	l->nranks = (uint32_t)(pp * l->sim);
}

void layout_set_cp_a2a(struct layout *l, int64_t cp_a2a)
{
	if (cp_a2a < 1 || l->cp % cp_a2a != 0)
		BUG("cp_a2a does not divide cp (the job checks it)");
	l->cp_a2a = cp_a2a;
}

void layout_set_pp_inner(struct layout *l)
{
	l->pp_inner = l->tp * l->cp;
}

uint32_t layout_gpu(const struct layout *l, int64_t pp_i, int64_t i)
{
	int64_t m = l->pp_inner;

	if (m > 0)
		return (uint32_t)(i % m + m * (pp_i + l->pp * (i / m)));
	return (uint32_t)(i + l->stage * pp_i);
}

uint32_t layout_rank(const struct layout *l, int64_t pp_i, int64_t i)
{
	return (uint32_t)(i + l->sim * pp_i);
}

void layout_where(const struct layout *l, uint32_t rank, int64_t *pp_i,
		  int64_t *i)
{
	*i = (int64_t)rank % l->sim;
	*pp_i = (int64_t)rank / l->sim;
}

void layout_coord(const struct layout *l, int64_t i, struct layout_coord *c)
{
	c->tp_i = i % l->tp;
	c->cp_i = i / l->tp % l->cp;
	c->dp_i = i / (l->tp * l->cp);
	c->etp_i = i % l->etp;
	c->ep_i = i / l->etp % l->ep;
	c->edp_i = i / (l->etp * l->ep);
}

uint32_t layout_group_size(const struct layout *l, enum layout_group g)
{
	switch (g) {
	case LG_TP: return (uint32_t)l->tp;
	case LG_CP: return (uint32_t)l->cp;
	case LG_DP: return (uint32_t)(l->cp * l->dp);
	case LG_EP: return (uint32_t)l->ep;
	case LG_ETP: return (uint32_t)l->etp;
	case LG_EDP: return (uint32_t)l->edp;
	case LG_CP_A2A: return (uint32_t)l->cp_a2a;
	case LG_CP_RING: return (uint32_t)(l->cp / l->cp_a2a);
	case LG_TPCP: return (uint32_t)(l->tp * l->cp);
	case LG_STAGE: return (uint32_t)l->stage;
	case LG_DP_NOCP: return (uint32_t)l->dp;
	case LG_COUNT: break;
	}
	BUG("unknown layout group");
}

/* First member and stride of the kind-g group holding i. */
static void base_stride(const struct layout *l, enum layout_group g,
			int64_t i, int64_t *base, int64_t *stride)
{
	int64_t span;

	switch (g) {
	case LG_TP: *stride = 1; span = l->tp; break;
	case LG_CP: *stride = l->tp; span = l->tp * l->cp; break;
	case LG_DP: *stride = l->tp; span = l->stage; break;
	case LG_EP: *stride = l->etp; span = l->etp * l->ep; break;
	case LG_ETP: *stride = 1; span = l->etp; break;
	case LG_EDP: *stride = l->etp * l->ep; span = l->stage; break;
	case LG_CP_A2A: *stride = l->tp; span = l->tp * l->cp_a2a; break;
	case LG_CP_RING: *stride = l->tp * l->cp_a2a; span = l->tp * l->cp; break;
	case LG_TPCP: *stride = 1; span = l->tp * l->cp; break;
	case LG_STAGE: *stride = 1; span = l->stage; break;
	case LG_DP_NOCP: *stride = l->tp * l->cp; span = l->stage; break;
	default: BUG("unknown layout group");
	}
	/* the group: the indices in i's span-block with i's residue */
	*base = i / span * span + i % *stride;
}

uint32_t layout_group(const struct layout *l, enum layout_group g,
		      int64_t i, int64_t *out)
{
	uint32_t n = layout_group_size(l, g), k, me = 0;
	int64_t base, stride;

	base_stride(l, g, i, &base, &stride);
	for (k = 0; k < n; k++) {
		out[k] = base + (int64_t)k * stride;
		if (out[k] == i)
			me = k;
	}
	return me;
}

uint32_t layout_replicas(const struct layout *l, enum layout_group g)
{
	if (l->sim == l->stage)
		return 1;
	return (uint32_t)(l->stage / layout_group_size(l, g));
}

uint32_t layout_pp_replicas(const struct layout *l)
{
	return (uint32_t)(l->stage / l->sim);
}
