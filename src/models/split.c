/*
 * split.c - layer counts per virtual stage.
 *
 * L layers over S virtual stages. When S divides L every stage gets L/S
 * layers, the embedding and the head riding on top of the first and last
 * (Megatron's default). Otherwise llmsim splits U = L + 2 units, the
 * embedding and the LM head with its loss counting as one layer each:
 * every stage gets floor(U/S) units, the U mod S extra units go to stages
 * 1, 2, ..., S-2 first, then to the last and the first; the first and last
 * stages then hold one layer less than their units. For Llama 3.1 405B
 * (L = 126) on pp 16: U = 128, 8 units each, so 7 layers on the first and
 * last stages and 8 on the 14 others (the split Meta describes in the
 * Llama 3 paper, sec. 3.3.2).
 */
#include "split.h"

#include "config/spec_job.h"

void split_even(int64_t layers, int64_t stages, int64_t *out)
{
	int64_t units = layers + 2, base = units / stages, rem = units % stages;
	int64_t i;

	if (layers % stages == 0 || stages == 1) {
		for (i = 0; i < stages; i++)
			out[i] = layers / stages;
		return;
	}
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
	split_even(j->model->num_hidden_layers, stages, out);
}

int64_t split_first_layer(const int64_t *split, int64_t vs)
{
	int64_t i, first = 0;

	for (i = 0; i < vs; i++)
		first += split[i];
	return first;
}
