/*
 * split.c - layer counts per virtual stage.
 *
 * L layers over S virtual stages, the framework's way (framework.pp_split)
 * when the job gives no pp_layers. The first stage also holds the
 * embedding, the last the final norm, LM head, loss and MTP modules.
 *
 * megatron. When S divides L every stage gets L/S layers, the embedding
 * and the head riding on top of the first and last (Megatron-Core's
 * default). When S divides U = L + 2, the embedding and the LM head with
 * its loss count as one layer each (account_for_embedding_in_pipeline_
 * split, account_for_loss_in_pipeline_split): U/S units a stage, so the
 * first and last stages hold one layer less. For Llama 3.1 405B (L = 126)
 * on pp 16: 7 layers on the first and last stages and 8 on the 14 others
 * (the split Meta describes in the Llama 3 paper, sec. 3.3.2). Otherwise
 * Megatron-Core has no split of its own (transformer_config.py refuses
 * both) and its users give a pipeline_model_parallel_layout: the
 * Megatron-Bridge recipes of the 61-layer models put c = ceil(L/S)
 * layers on every stage and take the surplus d = c S - L off the last
 * stage (down to none: it still holds the loss and the MTP modules),
 * then off the first (recipes/deepseek/h100/deepseek_v3.py
 * _get_deepseek_v3_pipeline_layout and recipes/kimi/h100/kimi_k2.py:
 * pp 16 "E t*4 | (t*4 |)*14 t L" = 4 4 ... 4 1; pp 8: 8 ... 8 5; pp 4:
 * 16 16 16 13; the 32-chunk perf layout "Et|(tt|)*30mL" = 1 2 ... 2 0).
 * Where the two end stages cannot give up d (d > 2c), the U units are
 * spread instead: floor(U/S) each, the U mod S extra to stages 1, 2, ...,
 * S-2 first, then to the last and the first, each end stage holding one
 * layer less than its units.
 *
 * front. floor(L/S) layers a stage, the first L mod S stages one more,
 * the embedding and the head on top (NeMo AutoModel's pipelining,
 * functional.py generate_hf_model_fqn_per_model_part).
 */
#include "split.h"

#include "config/pp_layout.h"
#include "config/spec_job.h"

/* The U = L + 2 units spread with the remainder to the middle stages. */
static void split_units(int64_t layers, int64_t stages, int64_t *out)
{
	int64_t units = layers + 2, base = units / stages, rem = units % stages;
	int64_t i;

	for (i = 0; i < stages; i++)
		out[i] = base;
	for (i = 1; i < stages - 1 && rem > 0; i++, rem--)
		out[i]++;
	if (rem > 0) {
		out[stages - 1]++;
		rem--;
	}
	if (rem > 0)
		out[0]++;
	out[0]--;
	out[stages - 1]--;
}

void split_even(int64_t layers, int64_t stages, int64_t *out)
{
	int64_t c = (layers + stages - 1) / stages, d = c * stages - layers;
	int64_t i;

	if (layers % stages == 0 || stages == 1) {
		for (i = 0; i < stages; i++)
			out[i] = layers / stages;
		return;
	}
	if ((layers + 2) % stages == 0 || d > 2 * c) {
		split_units(layers, stages, out);
		return;
	}
	for (i = 0; i < stages; i++)
		out[i] = c;
	if (d <= c) {
		out[stages - 1] -= d;
		return;
	}
	out[stages - 1] = 0;
	out[0] -= d - c;
}

void split_front(int64_t layers, int64_t stages, int64_t *out)
{
	int64_t i;

	for (i = 0; i < stages; i++)
		out[i] = layers / stages + (i < layers % stages);
}

void split_layers(const struct job_spec *j, int64_t *out)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t stages = p->pp * p->vpp;
	size_t i;

	if (p->pp_layers.n == (size_t)stages) {
		for (i = 0; i < p->pp_layers.n; i++)
			out[i] = p->pp_layers.v[i];
		return;
	}
	if (p->pp_layout) {
		struct pp_layout l;
		char why[160];

		/* job_layout_check has accepted it: stages pp*vpp, its t the
		 * model's layers */
		if (pp_layout_parse(p->pp_layout, &l, out, stages, why,
				    sizeof(why)) == 0 && l.stages == stages)
			return;
	}
	if (j->framework && j->framework->pp_split == PP_SPLIT_FRONT)
		split_front(j->model->num_hidden_layers, stages, out);
	else
		split_even(j->model->num_hidden_layers, stages, out);
}

int64_t split_mtp_stage(const struct job_spec *j)
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t stages = p->pp * p->vpp;
	struct pp_layout l;
	char why[160];

	if (p->pp_layout && pp_layout_parse(p->pp_layout, &l, NULL, 0, why,
					    sizeof(why)) == 0 &&
	    l.stages == stages && l.mtp_stage >= 0)
		return l.mtp_stage;
	return stages - 1;
}

int64_t split_first_layer(const int64_t *split, int64_t vs)
{
	int64_t i, first = 0;

	for (i = 0; i < vs; i++)
		first += split[i];
	return first;
}
