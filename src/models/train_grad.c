/*
 * train_grad.c - the work on a gradient bucket before its reduction.
 *
 * Megatron-Core's DDP starts a bucket group's reduction in start_grad_sync
 * (megatron/core/distributed/param_and_grad_buffer.py, NVIDIA/Megatron-LM
 * @ d7288711ba and @ 5a676b36): with overlap_grad_reduce from the
 * gradient hook of the group's last parameter in the last microbatch's
 * backward (register_grad_ready), else from finish_grad_sync after the
 * whole backward. Before the collective it
 *
 *   - with check_for_nan_in_grad (framework grad_nan_check), per bucket
 *     (check_grads): grad_norm = grad_data.norm(p=2), a kernel reading
 *     the bucket's P G bytes, then rerun_state_machine.validate_result
 *     twice, rejection_func torch.isnan and torch.isinf: under
 *     --rerun-mode disabled (the default) each evaluates
 *     `if rejection_func(result)`, the truth of a CUDA tensor, a copy to
 *     the host the host waits for (rerun_state_machine.py
 *     validate_result). So the host issues the norm and isnan, waits for
 *     the GPU to reach them, issues isinf, waits again: the GPU's queue
 *     is empty after the first wait and idles until the host has issued
 *     again (train_host.c).
 *   - scales the bucket, grad_data *= gradient_scaling_factor, when the
 *     factor is not 1 (a read and a write of P G bytes): without
 *     average_in_collective 1/(dp cp) for both kinds; with it 1 for the
 *     dense buckets and edp/(dp cp) for the routed experts'; with
 *     calculate_per_token_loss (framework per_token_loss) 1 for both, the
 *     token count's scaling left to finalize_model_grads (train_opt.c)
 *     (distributed_data_parallel.py @ d98e8a64dd).
 *
 * Modelled per bucket and simulated GPU: on the host thread (when the
 * framework has a host model) a task of 2 op (norm, isnan issued), the
 * norm on the compute stream after the bucket's last unit, a host task
 * of op + 2 sync (isinf issued between the two waits) that waits for the
 * norm, then a host task of op and the scaling kernel; the reduction
 * waits for the last of them. The two 0-dim kernels (isnan, isinf) and
 * the collective's own issue are not counted [?: microseconds].
 */
#include "base/arena.h"
#include "gpu/gpu.h"
#include "train_impl.h"

double train_grad_scale(const struct job_spec *j, int experts)
{
	const struct parallel_spec *p = &j->parallelism;
	double dpcp = (double)(p->dp * p->cp);
	double edp = (double)(p->edp > 0 ? p->edp : 1);

	if (j->framework->per_token_loss)
		return 1.0;
	if (!j->framework->average_in_collective)
		return 1.0 / dpcp;
	return experts ? edp / dpcp : 1.0;
}

double train_grad_tasks(const struct train *t, int experts)
{
	int check = t->job->framework->grad_nan_check;
	int scale = train_grad_scale(t->job, experts) != 1.0;

	if (t->job->training.zero_stage >= 3)
		return 0;
	return check * (1 + 2 * t->host_on) + scale * (1 + t->host_on);
}

/* A host task of dur_s on rank r after its last one, tagged as tag. */
static task_id host_step(struct train *t, uint32_t r, double dur_s,
			 const char *name, const struct task_info *tag)
{
	struct task_info info = *tag;
	task_id h;

	info.name = name;
	info.cat = TASK_OTHER;
	h = prog_task(t->prog, r, TRAIN_ST_HOST, dur_s, &info);

	if (h != TASK_NONE && train_dep(t, t->host_last[r], h) != 0)
		return TASK_NONE;
	if (h != TASK_NONE)
		t->host_last[r] = h;
	return h;
}

/* A kernel of dur_s on rank r's compute stream after *in, issued by a
 * host task of issue_s; *in becomes it. Tagged with the backward's
 * microbatch (tag): it extends that pass (exec_jitter.c's ops). */
static int kernel(struct train *t, uint32_t r, double dur_s, double issue_s,
		  const char *name, const struct task_info *tag, task_id *in)
{
	struct task_info info = *tag;
	task_id g;

	info.name = name;
	info.cat = TASK_COMPUTE;
	g = prog_task(t->prog, r, TRAIN_ST_COMPUTE, dur_s, &info);
	if (g == TASK_NONE || train_dep(t, *in, g) != 0)
		return -1;
	if (t->host_on) {
		task_id h = host_step(t, r, issue_s, "issue, grad bucket",
				      tag);

		if (h == TASK_NONE || train_dep(t, h, g) != 0)
			return -1;
	}
	*in = g;
	return 0;
}

/* The work on bucket b on the stage's n simulated ranks. */
static int prep(struct train *t, struct bucket *b, uint32_t n, task_id *in,
		const struct task_info *tag)
{
	const struct framework_spec *fw = t->job->framework;
	const struct host_spec *h = &fw->host;
	const struct gpu_spec *g = t->job->system->gpu;
	double bytes = b->params * t->dims.grad_B;
	double op = h->op_s * t->host_scale, sync = h->sync_s * t->host_scale;
	int check = fw->grad_nan_check;
	int scale = train_grad_scale(t->job, b->experts) != 1.0;
	double norm_s = gpu_memory_op(g, bytes, 0, 2 * b->params, bytes).time_s;
	double scale_s = gpu_memory_op(g, bytes, bytes, b->params,
				       bytes).time_s;
	uint32_t k;

	if (!b->ready) {
		b->ready = arena_alloc(&t->arena, n * sizeof(*b->ready));
		if (!b->ready)
			return -1;
	}
	for (k = 0; k < n; k++) {
		uint32_t r = t->stage_ranks[k];
		task_id w = TASK_NONE;	/* the host's second wait */

		if (check) {
			if (kernel(t, r, norm_s, 2 * op, "grad_nan_check",
				   tag, &in[k]) != 0)
				return -1;
			if (t->host_on) {
				w = host_step(t, r, op + 2 * sync,
					      "sync, grad nan check", tag);
				if (w == TASK_NONE ||
				    train_dep(t, in[k], w) != 0)
					return -1;
			}
		}
		if (scale && kernel(t, r, scale_s, op, "grad_prescale", tag,
				    &in[k]) != 0)
			return -1;
		/* the host issues the reduction after its waits (the
		 * scaling kernel's host task follows them) */
		b->ready[k] = !scale && w != TASK_NONE ? w : in[k];
	}
	return 0;
}

int train_grad_prep(struct train *t, int64_t s, uint32_t n, int64_t a,
		    int64_t u, task_id *in)
{
	struct stage_plan *sp = &t->stage[s];
	int overlap = t->job->framework->overlap_grad_reduce;
	struct task_info tag = { .layer = -1,
				 .microbatch = (int32_t)sp->acts[a].mb,
				 .phase = sp->acts[a].bwd ? TASK_PHASE_BWD :
							    TASK_PHASE_FWD };
	int64_t i;

	if (!sp->buckets || t->job->training.zero_stage >= 3 ||
	    (!t->job->framework->grad_nan_check &&
	     train_grad_scale(t->job, 0) == 1.0 &&
	     train_grad_scale(t->job, 1) == 1.0))
		return 0;
	if (overlap ? u < 0 : (u >= 0 || a != sp->nacts - 1))
		return 0;
	for (i = 0; i < sp->nbuckets; i++) {
		struct bucket *b = &sp->buckets[i];

		if (overlap && (b->bact != a || b->u1 != u))
			continue;
		if (prep(t, b, n, in, &tag) != 0)
			return -1;
	}
	return 0;
}
