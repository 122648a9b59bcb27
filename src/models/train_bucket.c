/*
 * train_bucket.c - data parallelism's gradient buckets from the job alone:
 * the bucket size a pipeline rank uses, the units a stage's chunk groups
 * into buckets (backward order, the MTP modules with the head) and the
 * bytes a bucket's parameter all-gather moves (split out of train_dp.c,
 * whose header states the bucketing rules; the planner's estimate uses
 * the same functions).
 */
#include <math.h>

#include "footprint.h"
#include "split.h"
#include "train_impl.h"

double train_bucket_size(const struct job_spec *j, int64_t pp_rank)
{
	const struct framework_spec *fw = j->framework;
	double size = (double)fw->bucket_params;
	double dp = (double)j->parallelism.dp;

	if (fw->later_stages_one_bucket && pp_rank > 0)
		return INFINITY;
	if ((double)fw->bucket_params_per_dp * dp > size)
		size = (double)fw->bucket_params_per_dp * dp;
	return size;
}

int64_t train_buckets(const struct job_spec *j, const struct layer_dims *d,
		      const int64_t *split, int64_t vs, double size, int experts,
		      int64_t *last, double *params, double *layer_params)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t stages = p->pp * p->vpp, u, n = 0;
	int has_embed = vs == 0, has_head = vs == stages - 1;
	int64_t units = split[vs] + has_embed + has_head;
	int64_t first = split_first_layer(split, vs);
	/* the modules holding weights (one for repeated passes) */
	int64_t mtp = model_is_moe(j->model) ? job_mtp_modules(j) : 0;
	/* pp = 1: the one rank holds the embedding with the head */
	int both = p->pp == 1;
	double acc = 0, lacc = 0, dense, ex, md, me;
	int layer;
	double ep = (double)(p->ep * (p->etp > 0 ? p->etp : 1));

	for (u = 0; u < units; u++) {	/* backward order: head first */
		ex = 0;
		layer = 0;
		if (has_head && u == 0) {
			/* the MTP modules, after the head, with it */
			dense = footprint_unit_params(j, d, UNIT_HEAD, both);
			if (mtp > 0) {
				footprint_mtp_params(j, d, &md, &me);
				dense += (double)mtp * md;
				ex = (double)mtp * me;
			}
		} else if (has_embed && u == units - 1) {
			dense = footprint_unit_params(j, d, UNIT_EMBED, both);
		} else {
			footprint_layer_params(j, d, first + split[vs] - 1 -
					       (u - has_head), &dense, &ex);
			layer = 1;
		}
		acc += experts ? ex / ep : dense / d->tp;
		if (layer)
			lacc += experts ? ex / ep : dense / d->tp;
		if (acc > 0 && (acc >= size || u == units - 1)) {
			if (last)
				last[n] = u;
			if (params)
				params[n] = acc;
			if (layer_params)
				layer_params[n] = lacc;
			n++;
			acc = 0;
			lacc = 0;
		}
	}
	return n;
}

double train_gather_bytes(const struct job_spec *j, const struct layer_dims *d,
			  double params, double layer_params)
{
	if (!j->framework->fp8_param_gather || j->training.dtype != DTYPE_FP8)
		return params * d->act_B;
	return (params - layer_params) * d->act_B +
	       layer_params * dtype_bytes(DTYPE_FP8);
}
