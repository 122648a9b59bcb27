/*
 * layout.c - rank arithmetic for the TP x CP x DP x PP grid (see layout.h).
 */
#include "layout.h"

void layout_init(struct layout *l, int64_t tp, int64_t cp, int64_t pp,
		 int64_t dp, int full)
{
	l->tp = tp;
	l->cp = cp;
	l->pp = pp;
	l->dp = dp;
	l->sim_tp = full ? tp : 1;
	l->sim_dp = full ? dp : 1;
	l->nranks = (uint32_t)(pp * l->sim_dp * l->sim_tp);
}

uint32_t layout_gpu(const struct layout *l, int64_t pp_i, int64_t dp_i,
		    int64_t tp_i)
{
	return (uint32_t)(tp_i + l->tp * l->cp * (dp_i + l->dp * pp_i));
}

uint32_t layout_rank(const struct layout *l, int64_t pp_i, int64_t dp_i,
		     int64_t tp_i)
{
	return (uint32_t)(tp_i + l->sim_tp * (dp_i + l->sim_dp * pp_i));
}

void layout_coords(const struct layout *l, uint32_t rank, int64_t *pp_i,
		   int64_t *dp_i, int64_t *tp_i)
{
	int64_t r = rank;

	*tp_i = r % l->sim_tp;
	r /= l->sim_tp;
	*dp_i = r % l->sim_dp;
	*pp_i = r / l->sim_dp;
}

void layout_tp_gpus(const struct layout *l, int64_t pp_i, int64_t dp_i,
		    uint32_t *gpus)
{
	int64_t i;

	for (i = 0; i < l->tp; i++)
		gpus[i] = layout_gpu(l, pp_i, dp_i, i);
}

void layout_dp_gpus(const struct layout *l, int64_t pp_i, int64_t tp_i,
		    uint32_t *gpus)
{
	int64_t i;

	for (i = 0; i < l->dp; i++)
		gpus[i] = layout_gpu(l, pp_i, i, tp_i);
}

uint32_t layout_tp_replicas(const struct layout *l)
{
	return (uint32_t)(l->dp / l->sim_dp);
}

uint32_t layout_dp_replicas(const struct layout *l)
{
	return (uint32_t)(l->tp / l->sim_tp);
}

uint32_t layout_pp_replicas(const struct layout *l)
{
	return (uint32_t)((l->dp / l->sim_dp) * (l->tp / l->sim_tp));
}
