/*
 * train_offload.c - activation offloading (training.cpu_offload_layers):
 * Megatron-Core's cpu_offloading wraps each transformer layer in
 * Transformer Engine's offload context (megatron/core/transformer/
 * transformer_block.py, get_cpu_offload_context; NVIDIA/Megatron-LM @
 * d98e8a64), whose default schedule is DefaultOffloadSynchronizer
 * (NVIDIA/TransformerEngine @ d0067d0d transformer_engine/pytorch/
 * cpu_offload.py, the offloading refactor of PR #1762; docs/features/
 * other_optimizations/cpu_offloading). Of L layers the first N are
 * offloaded, K = L - N sets stay on the GPU at most:
 *   - layer i's saved tensors are copied to pinned host memory on the
 *     offload stream once its forward has made them (the copy waits for
 *     the events recorded as they are saved; llmsim starts it at the
 *     layer's end);
 *   - before the forward of layer i + K the compute stream waits for
 *     that copy (release_activation_forward_gpu_memory: layer i's GPU
 *     copy is freed);
 *   - layer i's reload starts before the backward of layer i + K - 1,
 *     after what the compute stream issued before it, the backward of
 *     layer i + K (start_reload: offload_stream.wait_stream(current));
 *   - layer i's backward waits for its reload (tensor_pop waits for
 *     each tensor's reload event).
 * Copies run on the GPU's copy engines, not its SMs, at the system's
 * host_d2h / host_h2d rates, one after another on the one stream. Not
 * modelled: the copies' HBM traffic beside the kernels (Transformer
 * Engine's docs: unlikely to affect compute-bound GEMMs, memory-bound
 * ops may notice) and the host's per-tensor bookkeeping.
 *
 * Memory: footprint.c keeps K layers' sets of a stage (pp 1).
 */
#include "base/diag.h"
#include "footprint.h"
#include "train_impl.h"

int train_offload_setup(struct train *t)
{
	const struct job_spec *j = t->job;
	int64_t layers = j->model->num_hidden_layers;
	size_t n;
	int k;

	t->offload = j->training.cpu_offload_layers;
	if (t->offload <= 0 || t->pp != 1)
		return t->offload = 0, 0;
	t->offload_keep = layers - t->offload;
	for (k = 0; k < TRAIN_KINDS; k++)
		if (t->lf[k])
			t->offload_B[k] = footprint_kind_act_B(&t->dims,
				&t->kinds[k],
				(enum layer_recompute)j->training.recompute);
	n = (size_t)t->lay.sim * (size_t)layers;
	t->off_copy = arena_alloc(&t->arena, n * sizeof(*t->off_copy));
	t->off_bwd = arena_alloc(&t->arena, n * sizeof(*t->off_bwd));
	if (!t->off_copy || !t->off_bwd)
		return -1;
	for (; n > 0; n--)
		t->off_copy[n - 1] = t->off_bwd[n - 1] = TASK_NONE;
	return 0;
}

/* The copy of layer `layer`'s set on simulated GPU k of stage s (rank r):
 * a task on the offload stream after `after` (TASK_NONE: none). */
static task_id copy_task(struct train *t, uint32_t r, int64_t layer,
			 int bwd, int32_t mb, task_id after)
{
	const struct job_spec *j = t->job;
	double rate = bwd ? j->system->host_h2d_Bps : j->system->host_d2h_Bps;
	double bytes = t->offload_B[train_layer_kind(t, layer)];
	struct task_info info = {
		.name = bwd ? "offload_reload_h2d" : "offload_d2h",
		.cat = TASK_COMM, .layer = (int32_t)layer, .microbatch = mb,
		.phase = bwd ? TASK_PHASE_BWD : TASK_PHASE_FWD,
	};
	task_id id = prog_task(t->prog, r, TRAIN_ST_OFFLOAD, bytes / rate,
			       &info);

	if (id == TASK_NONE || train_dep(t, after, id) != 0)
		return TASK_NONE;
	return id;
}

/* Every task of unit u's record on rank r waiting for its input waits
 * for `before` too. */
static int gate_unit(struct train *t, uint32_t r, int64_t a, int64_t u,
		     task_id before)
{
	const struct unit_rec *rec = train_unit(t, r, a, u);
	uint32_t i;

	for (i = 0; i < rec->nfirst; i++)
		if (train_dep(t, before, rec->first[i]) != 0)
			return -1;
	return 0;
}

int train_offload_unit(struct train *t, int64_t s, uint32_t n, int64_t a,
		       int64_t u)
{
	struct sched_action act;
	int64_t layers, i, k_keep = t->offload_keep;
	int32_t layer;
	uint32_t k;

	if (t->offload <= 0)
		return 0;
	act = t->stage[s].acts[a];
	train_unit_block(t, train_vs(t, s, act.chunk), act.bwd, u, &layer);
	if (layer < 0)
		return 0;
	layers = t->job->model->num_hidden_layers;
	i = layer;
	for (k = 0; k < n; k++) {
		uint32_t r = t->stage_ranks[k];
		task_id *copy = t->off_copy + (size_t)k * (size_t)layers;
		task_id *end = t->off_bwd + (size_t)k * (size_t)layers;
		const struct unit_rec *rec = train_unit(t, r, a, u);

		if (!act.bwd) {
			/* the set of layer i - K leaves before layer i */
			if (i >= k_keep && i - k_keep < t->offload &&
			    gate_unit(t, r, a, u, copy[i - k_keep]) != 0)
				return -1;
			if (i < t->offload &&
			    (copy[i] = copy_task(t, r, i, 0,
						 (int32_t)act.mb,
						 rec->last)) == TASK_NONE)
				return -1;
			continue;
		}
		end[i] = rec->last;
		if (i >= t->offload)
			continue;
		/* the reload after the backward of layer i + K; layer i's
		 * backward waits for it (its tasks are built: gated now) */
		copy[i] = copy_task(t, r, i, 1, (int32_t)act.mb,
				    end[i + k_keep]);
		if (copy[i] == TASK_NONE || gate_unit(t, r, a, u, copy[i]) != 0)
			return -1;
	}
	return 0;
}
