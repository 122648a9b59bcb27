/*
 * train_host.c - the host thread of each rank: the CPU that issues the
 * rank's kernels and collectives one after the other, and waits where the
 * framework synchronizes with the device.
 *
 * Model. A PyTorch training loop runs one host thread per GPU (the Python
 * main thread, and during backward the autograd engine's device thread,
 * which the main thread waits for). It issues the step's GPU work in
 * program order; issuing op i costs it h_i of CPU time, and op i cannot
 * start on the GPU before it is issued:
 *
 *     issue_i = max(issue_{i-1}, w_i) + h_i
 *     start_i >= issue_i                 (and its GPU dependencies)
 *
 * where w_i is 0, or, when the host waits for the device before issuing
 * op i (a device-to-host copy it needs, an event or device synchronize),
 * the end of the awaited GPU work plus the time to resume (sync). The
 * host is a stream of its own (TRAIN_ST_HOST, category other): op i's
 * host task of duration h_i (plus sync) runs after the previous one, the
 * GPU task waits for it, and a waiting host task also waits for the GPU
 * task it syncs on. So the host runs ahead of the GPU while it issues
 * faster than the GPU executes (the host cost hides), and the GPU idles
 * behind it where it does not (small kernels: a host-bound layer) or
 * right after a sync (the GPU's queue is empty until the host has issued
 * again). On the critical path that time is "other" (exec_path.c).
 *
 * h_i by how the op is issued (layer.h enum host_call; the framework's
 * host costs on the reference CPU, struct host_spec, times the system's
 * host_dispatch_scale):
 *
 *     PyTorch op        n op             (backward: n backward_op)
 *     module call       module           (backward: backward_module)
 *     inside a call     kernel
 *     collective        collective
 *   + kernel per further kernel the call launches from C++
 *
 * An op whose call has its own measured host time (block_op
 * host_call_s: an EP dispatcher's dispatch call, moe.c) costs that in
 * place of its kind's. And a per-expert loop of cuBLASLt GEMMs
 * (block_op host_gemm: Transformer Engine's multi_stream_cublas_gemm)
 * costs gemm, not kernel,
 * for each of its GEMMs (itself when inside a call, and each further):
 * every call builds the GEMM's descriptors and asks the heuristic; and
 * event per cudaEventRecord the call makes (block_op host_events: the
 * loop's stream joins). Such a call also costs expert_item per local
 * expert (block_op host_items: Transformer Engine GroupedLinear's per-
 * expert Python and its C++ tensor wrappers, once a pass), and its
 * backward param_hook per expert weight (block_op host_hooks: each
 * weight's AccumulateGrad node and Megatron DDP's post-hook, which runs
 * Python only when the GEMM accumulated into main_grad).
 *
 * An op in a CUDA-graph scope the job captures (training.cuda_graphs)
 * costs nothing but the first op of each run of captured ops, whatever
 * their scopes, which costs one graph replay (graph): Megatron-Core's
 * Transformer Engine graphs capture a layer's captured scopes as one
 * callable (transformer_layer.py _te_cuda_graph_capture runs
 * _forward_attention when attn is captured and then _forward_mlp's
 * captured part, moe_router / moe_preprocess / moe / mlp, in one capture;
 * _te_cuda_graph_replay replays it once a microbatch, NVIDIA/Megatron-LM
 * @ d98e8a64dd), and the callable's backward is one backward graph
 * (make_graphed_callables' autograd.Function, Transformer Engine
 * pytorch/graph.py). A captured op never waits: a host sync
 * cannot be captured (cudaStreamSynchronize during stream capture fails,
 * cudaErrorStreamCaptureUnsupported), so the software runs such a scope
 * with static sizes. Megatron-Core refuses a "moe" graph unless the MoE
 * drops and pads (transformer_config.py __post_init__ @ d7288711ba: "moe
 * cuda graph is only supported with drop-padding MoE"), and a full-
 * iteration graph's Hybrid-EP dispatch takes the static budget of
 * moe_expert_rank_capacity_factor, whose dispatch has no CPU sync
 * ("else: num_permuted_tokens stays None; HybridEP sizes buffers
 * dynamically (CPU sync in dispatch)", token_dispatcher.py
 * _HybridEPManager.setup_metadata, NVIDIA/Megatron-LM @ d98e8a64dd). So
 * an op in a captured scope drops its wait (train_host_cost).
 *
 * Syncs: an MoE dispatch with dropless sizes (moe.c), and with the
 * framework's p2p_sync a device synchronize before
 * every action of a non-interleaved pipeline, after the batched send and
 * receive around it (Megatron-Core p2p_communication.py _communicate:
 * torch.cuda.synchronize() when batch_p2p_comm and batch_p2p_sync; the
 * sync waits for the rank's previous action and for those transfers,
 * train_pp.c).
 *
 * Not issued by this host model: pipeline transfers, data-parallel
 * reductions and the optimizer step (launched from hooks and the
 * optimizer; their host cost is not counted).
 */
#include "train_impl.h"

#include <stdio.h>

static double scale_of(const struct job_spec *j)
{
	return j->system->host_dispatch_scale > 0 ?
	       j->system->host_dispatch_scale : 1;
}

int train_host_on(const struct job_spec *j)
{
	const struct host_spec *h = &j->framework->host;

	/* any per-call cost: a framework that gives only some kinds (the
	 * backward ones, the per-expert ones) still pays them */
	return h->op_s > 0 || h->module_s > 0 || h->bwd_op_s > 0 ||
	       h->bwd_module_s > 0 || h->kernel_s > 0 || h->gemm_s > 0 ||
	       h->event_s > 0 || h->expert_item_s > 0 ||
	       h->param_hook_s > 0 || h->collective_s > 0 || h->graph_s > 0 ||
	       h->sync_s > 0;
}

double train_host_op_s(const struct job_spec *j, const struct block *b, int i)
{
	const struct host_spec *h = &j->framework->host;
	const struct block_op *op = &b->op[i];
	double n = op->host_n ? op->host_n : 1, c, scale = scale_of(j);
	double k = op->host_gemm && h->gemm_s > 0 ? h->gemm_s : h->kernel_s;

	if (layer_job_captures(j, op->scope))
		return i > 0 && layer_job_captures(j, b->op[i - 1].scope) ?
		       0 : h->graph_s * scale;
	switch (op->host) {
	case HOST_OP:
		c = n * (op->bwd ? h->bwd_op_s : h->op_s);
		break;
	case HOST_MODULE:
		c = op->bwd ? h->bwd_module_s : h->module_s;
		break;
	case HOST_COLL:
		c = h->collective_s;
		break;
	default:
		c = k;
	}
	if (op->host_call_s > 0)	/* the dispatcher's measured call */
		c = op->host_call_s;
	return (c + op->host_kernels * k + op->host_events * h->event_s +
		op->host_items * h->expert_item_s +
		op->host_hooks * h->param_hook_s) * scale;
}

int train_host_init(struct train *t)
{
	const struct host_spec *h = &t->job->framework->host;

	t->host_on = train_host_on(t->job);
	t->host_scale = scale_of(t->job);
	return t->host_on && h->p2p_sync && t->pp >= 2 && t->v == 1 &&
	       !t->a2a_overlap;
}

int train_host_setup(struct train *t)
{
	uint32_t r;
	int64_t pp_i, i, a;
	int p2p = train_host_init(t);

	if (!t->host_on)
		return 0;
	t->host_last = arena_alloc(&t->arena, t->lay.nranks *
				   sizeof(*t->host_last));
	if (!t->host_last)
		return -1;
	for (r = 0; r < t->lay.nranks; r++)
		t->host_last[r] = TASK_NONE;
	if (!p2p)
		return 0;
	t->p2p_host = arena_alloc(&t->arena, t->lay.nranks *
				  sizeof(*t->p2p_host));
	if (!t->p2p_host)
		return -1;
	for (r = 0; r < t->lay.nranks; r++) {
		layout_where(&t->lay, r, &pp_i, &i);
		t->p2p_host[r] = arena_alloc(&t->arena, (size_t)
			t->stage[pp_i].nacts * sizeof(**t->p2p_host));
		if (!t->p2p_host[r])
			return -1;
		for (a = 0; a < t->stage[pp_i].nacts; a++)
			t->p2p_host[r][a] = TASK_NONE;
	}
	return 0;
}

int train_host_cost(const struct train *t, struct block *b)
{
	char buf[96];
	int i;

	if (!t->host_on)
		return 0;
	for (i = 0; i < b->n; i++) {
		struct block_op *op = &b->op[i];

		if (layer_job_captures(t->job, op->scope))
			op->host_wait = LAYER_NONE;	/* no sync in a graph */
		op->host_s = train_host_op_s(t->job, b, i);
		snprintf(buf, sizeof(buf), "%s %s", op->host_wait != LAYER_NONE ?
			 "sync, issue" : "issue", op->name);
		op->host_name = prog_intern(t->prog, buf);
		if (!op->host_name)
			return -1;
	}
	return 0;
}

/* A host task of dur_s on rank r after its last one; NONE when out of
 * memory. */
static task_id host_task(struct train *t, uint32_t r, double dur_s,
			 const struct task_info *info)
{
	task_id h = prog_task(t->prog, r, TRAIN_ST_HOST, dur_s, info);

	if (h != TASK_NONE)
		t->host_last[r] = h;
	return h;
}

int train_host_issue(struct train *t, const struct block *b, int i,
		     uint32_t n, const task_id *ids,
		     const struct task_info *tmpl)
{
	const struct block_op *op = &b->op[i];
	double sync_s = t->job->framework->host.sync_s * t->host_scale;
	struct task_info info = *tmpl;
	uint32_t k;

	if (!t->host_on)
		return 0;
	info.name = op->host_name;
	info.cat = TASK_OTHER;
	for (k = 0; k < n; k++) {
		uint32_t r = t->stage_ranks[k];
		task_id h = t->host_last[r];

		if (op->host_s > 0 || op->host_wait != LAYER_NONE) {
			int wait = op->host_wait != LAYER_NONE;

			h = host_task(t, r, op->host_s + (wait ? sync_s : 0),
				      &info);
			if (h == TASK_NONE || (wait && train_dep(t,
			    ids[op->host_wait * (int)n + (int)k], h) != 0))
				return -1;
		}
		if (train_dep(t, h, ids[i * (int)n + (int)k]) != 0)
			return -1;
	}
	return 0;
}

int train_host_p2p(struct train *t, int64_t s, uint32_t n, int64_t a)
{
	struct task_info info = { .name = "sync, p2p", .cat = TASK_OTHER,
				  .layer = -1 };
	double sync_s = t->job->framework->host.sync_s * t->host_scale;
	uint32_t k;

	if (!t->p2p_host || a == 0)
		return 0;
	info.microbatch = (int32_t)t->stage[s].acts[a].mb;
	for (k = 0; k < n; k++) {
		uint32_t r = t->stage_ranks[k];
		task_id h = host_task(t, r, sync_s, &info);

		if (h == TASK_NONE ||
		    train_dep(t, train_action_end(t, r, a - 1), h) != 0)
			return -1;
		t->p2p_host[r][a] = h;
	}
	return 0;
}

task_id train_p2p_sync(const struct train *t, uint32_t r, int64_t a)
{
	int64_t pp_i, i;

	if (!t->p2p_host)
		return TASK_NONE;
	layout_where(&t->lay, r, &pp_i, &i);
	return a >= 0 && a < t->stage[pp_i].nacts ? t->p2p_host[r][a] :
	       TASK_NONE;
}
