/*
 * footprint_model.c - the parameters of a layer, of the multi-token-
 * prediction module and of the whole model (all of it, a token's active
 * share, the routed experts), counted from the layer kinds of layer.c
 * (split out of footprint.c, whose header states the memory terms these
 * counts feed).
 */
#include "footprint.h"

#include "config/spec_job.h"
#include "config/spec_model.h"

struct layer_kind footprint_kind_of(const struct job_spec *j, int64_t i)
{
	int lin = model_layer_linear(j->model, i);
	struct layer_kind k = { model_layer_moe(j->model, i),
				lin ? 0 : (double)model_layer_window(j->model, i),
				lin ? 0 : (double)model_layer_chunk(j->model, i),
				lin, model_layer_block(j->model, i),
				model_layer_nope(j->model, i) };

	return k;
}

void footprint_layer_params(const struct job_spec *j,
			    const struct layer_dims *d, int64_t layer,
			    double *dense, double *experts)
{
	const struct model_spec *m = j->model;
	struct layer_kind k = footprint_kind_of(j, layer);

	layer_kind_params(d, &k, layer_bias_of(m), model_norm_tensors(m) == 2,
			  dense, experts);
}

void footprint_mtp_params(const struct job_spec *j,
			  const struct layer_dims *d, double *dense,
			  double *experts)
{
	const struct model_spec *m = j->model;
	double h = d->hidden, a, b;
	struct layer_kind k[MODEL_MTP_BLOCKS];
	int n = layer_mtp_kinds(m, k), i;

	/* its layers (layer_mtp_kinds), two norms, the 2h x h projection */
	*dense = *experts = 0;
	for (i = 0; i < n; i++) {
		layer_kind_params(d, &k[i], layer_bias_of(m),
				  model_norm_tensors(m) == 2, &a, &b);
		*dense += a;
		*experts += b;
	}
	*dense += 2 * h * model_norm_tensors(m) + 2 * h * h;
}

/* Parameters of the whole model, or (active) those a token computes
 * with: its top-k of the routed experts, no MTP module. */
static double model_params(const struct job_spec *j, int active)
{
	struct layer_dims d;
	double sum = 0, dense, experts;
	int64_t i;

	layer_dims_from_job(j, &d);
	for (i = 0; i < j->model->num_hidden_layers; i++) {
		footprint_layer_params(j, &d, i, &dense, &experts);
		if (active)
			sum += dense + (experts > 0 ? experts * d.moe.topk /
					d.moe.experts : 0);
		else
			sum += dense + experts;
	}
	if (!active && model_is_moe(j->model) && j->moe.mtp_layers > 0) {
		footprint_mtp_params(j, &d, &dense, &experts);
		sum += (double)job_mtp_modules(j) * (dense + experts);
	}
	return sum + footprint_unit_params(j, &d, UNIT_EMBED, 1) +
	       footprint_unit_params(j, &d, UNIT_HEAD, 1);
}

double footprint_active_params(const struct job_spec *j)
{
	return model_params(j, 1);
}

double footprint_model_params(const struct job_spec *j)
{
	return model_params(j, 0);
}

double footprint_expert_params(const struct job_spec *j)
{
	struct layer_dims d;
	double sum = 0, dense, experts;
	int64_t i;

	layer_dims_from_job(j, &d);
	for (i = 0; i < j->model->num_hidden_layers; i++) {
		footprint_layer_params(j, &d, i, &dense, &experts);
		sum += experts;
	}
	return sum;
}
