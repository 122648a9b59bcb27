/*
 * train_queue.c - the hardware queues the collective library's streams
 * share, and where an expert-parallel stream task sits in issue order.
 *
 * Each communicator (process group) runs its collectives on a stream of
 * its own (PyTorch ProcessGroupNCCL takes one from the stream pool per
 * communicator). A stream is not a hardware queue: HIP multiplexes its
 * streams onto at most GPU_MAX_HW_QUEUES hardware queues per priority
 * level (ROCm/clr rocclr/device/rocm/rocdevice.cpp Device::acquireQueue
 * and getQueueFromPool: a new queue while the priority's pool holds fewer
 * than GPU_MAX_HW_QUEUES, then the least-used one, ties to the pool's
 * first), and every kernel packet carries the AQL barrier bit
 * (rocvirtual.cpp dispatchPacketHeader_), so a queue runs its packets in
 * the order they were issued, whichever stream issued them. PyTorch on
 * ROCm creates a pool stream when it is first used ("Note [HIP Lazy
 * Streams]", c10/cuda/CUDAStream.cpp), and TORCH_NCCL_HIGH_PRIORITY=1
 * takes the communicators' streams from the high-priority pool, which
 * PyTorch's compute stream does not use: the i-th stream of that pool
 * created sits on queue i mod q (the least-used queue, the pool in
 * creation order [?: the pool is a map keyed by the queue's address]).
 * Transformer Engine's GEMM streams do use it: GroupedLinear runs its
 * GEMMs through multi_stream_cublas_gemm, expert i on compute stream
 * i % S (even one local expert: on ROCm nvte_multi_tensor_gemm takes
 * that path for one GEMM; ROCm/TransformerEngine common/gemm/
 * cublaslt_gemm.cu), and creates its S = 4 streams together at the
 * first call with priority -1 (common/util/multi_stream.cpp; earlier
 * cublaslt_gemm.cu init_streams_and_events, ROCm/TransformerEngine @
 * ac80527), a high-priority stream on HIP (ROCm/clr hip_stream.cpp
 * hipStreamCreateWithPriority: priority <= Priority::High, -1, is
 * High). The S streams take S places in the order below, at the first
 * MoE layer's first expert GEMM, and the experts' GEMMs (stream 0 [?:
 * with more local experts, stream i % S]) run in issue order with the
 * communicators that share their queue (framework
 * elementwise.grouped_gemm_streams is S; 0, one grouped kernel on the
 * compute stream, takes none). training.comm_hw_queues is q; 0 leaves every stream its own
 * queue (CUDA with CUDA_DEVICE_MAX_CONNECTIONS at least the streams: the
 * Megatron-Bridge recipes set 8 or 32 where tp = cp = 1).
 *
 * First use, in Megatron-Core's order (NVIDIA/Megatron-LM 5a676b36 as
 * AMD Primus e16b27b pins it): the world group (initialize.py's
 * barriers); in the first MoE layer's forward, the token counts'
 * all-gather on tp_ep (token_dispatcher.py preprocess), the
 * all-to-all on ep and Transformer Engine's GEMM streams; with
 * loss_dp_allreduce, the data-parallel group
 * (without CP) in the first loss (Primus pre_trainer.py loss_func); the
 * dense gradients' group (dp x cp; a separate group even at cp 1,
 * parallel_state.py DATA_PARALLEL_GROUP_WITH_CP) for the first bucket of
 * the backward (the output layer's); then the expert data-parallel
 * group. Modeled: the expert-parallel stream (dispatch and combine; the
 * counts ride on it although tp_ep is its own communicator [?]) with the
 * gradient reductions and all-gathers of either kind, the two kinds
 * with each other, and the experts' GEMMs with either kind; other
 * communicators sharing a queue (tensor, context, pipeline parallel; the
 * counts and the loss's all-reduce with the GEMMs) are not.
 */
#include "train_impl.h"

#include "base/diag.h"

#include <stdlib.h>
#include <string.h>

enum comm_use { CU_WORLD, CU_EP_COUNTS, CU_EP, CU_GEMM, CU_DP, CU_DP_CP, CU_EDP,
		CU_N };

/* The hardware queue of each communicator the job uses (-1: unused or no
 * sharing) into q[CU_N]; returns the queue count (0: no sharing). */
static int64_t queues(const struct job_spec *j, int64_t q[CU_N])
{
	const struct parallel_spec *p = &j->parallelism;
	int64_t n = j->training.comm_hw_queues, i = 0;
	int moe = model_is_moe(j->model) && p->ep > 1;
	/* streams each use creates: one, but TE's GEMM streams all at once */
	int64_t streams[CU_N];
	int used[CU_N];
	int c;

	for (c = 0; c < CU_N; c++)
		streams[c] = 1;
	streams[CU_GEMM] = j->framework->elementwise.grouped_gemm_streams;
	used[CU_WORLD] = 1;
	used[CU_EP_COUNTS] = moe;
	used[CU_EP] = moe;
	used[CU_GEMM] = moe && streams[CU_GEMM] > 0;
	used[CU_DP] = j->framework->loss_dp_allreduce;
	used[CU_DP_CP] = p->dp * p->cp > 1;
	used[CU_EDP] = moe && p->edp > 1;
	for (c = 0; c < CU_N; c++) {
		q[c] = n > 0 && used[c] ? i % n : -1;
		if (n > 0 && used[c])
			i += streams[c];
	}
	return n;
}

int train_queue_with_ep(const struct job_spec *j, int experts)
{
	int64_t q[CU_N];

	if (queues(j, q) == 0 || q[CU_EP] < 0)
		return 0;
	return q[experts ? CU_EDP : CU_DP_CP] == q[CU_EP];
}

int train_queue_with_gemm(const struct job_spec *j, int experts)
{
	int64_t q[CU_N];

	if (queues(j, q) == 0 || q[CU_GEMM] < 0)
		return 0;
	return q[experts ? CU_EDP : CU_DP_CP] == q[CU_GEMM];
}

int train_queue_dp_edp(const struct job_spec *j)
{
	int64_t q[CU_N];

	if (queues(j, q) == 0 || q[CU_DP_CP] < 0)
		return 0;
	return q[CU_DP_CP] == q[CU_EDP];
}

/*
 * One connection (CUDA_DEVICE_MAX_CONNECTIONS=1). A CUDA context feeds
 * each GPU through that many hardware work queues ("connections"; CUDA
 * Programming Guide, Environment Variables: 1 to 32, default 8); streams
 * are spread over them. With one, every stream's kernels share one
 * queue, and "setting CUDA_DEVICE_MAX_CONNECTIONS=1 forces the kernels to
 * be scheduled in the order they are called" (Megatron-LM megatron/core/
 * tensor_parallel/layers.py, linear_with_grad_accumulation_and_async_
 * allreduce's docstring): a kernel at the queue's head starts once its
 * own stream's work and the events it waits for are done, and nothing
 * launched after it starts before it has (Kepler GK110 whitepaper, Hyper-
 * Q: with Fermi's one hardware queue, a dependent kernel "blocks all
 * subsequent kernels", the false dependencies more queues remove). Unlike
 * ROCm's barrier bit (above) a started kernel does not hold the queue:
 * an NCCL kernel running still overlaps the compute launched after it.
 *
 * Modelled for the collectives launched beside the layers' kernels, the
 * data-parallel gradient reductions (from the backward hooks, right after
 * the bucket's last unit) and the parameter all-gathers (from the forward
 * pre-hook of the unit that issues them, train_dp.c): a zero-time launch
 * task on the collective's stream just before it ends when the collective
 * can start (its stream's previous collective done, its inputs done),
 * and the first tasks of the unit launched next wait for it. So a
 * reduction queued behind a longer one stalls the backward until it
 * starts, not until it ends; the all-gather one bucket ahead starts no
 * earlier than the unit that launches it. [?] Not modelled: the in-layer
 * streams (tp, cp, ep: their next op mostly waits for them anyway),
 * pipeline transfers, FSDP.
 *
 * Where it applies: framework device_max_connections 1, or -1 for the
 * launcher's rule (Megatron-Bridge scripts/performance/utils/overrides.py
 * @ 067f987: 32 for the DeepEP / Hybrid-EP dispatchers, else 8, and 1
 * where tp > 1 or cp > 1 without moe_a2a_overlap, on GPUs before
 * Blackwell; Megatron-LM arguments.py asks for 1 with tp or cp > 1 on
 * compute capability < 10). CUDA only: HIP has no such variable.
 */
int train_one_connection(const struct job_spec *j)
{
	const struct gpu_spec *g = j->system->gpu;
	const struct parallel_spec *p = &j->parallelism;
	int64_t c = j->framework->device_max_connections;
	long cc;

	if (!g || g->vendor != GPU_NVIDIA)
		return 0;
	if (c != -1)
		return c == 1;
	cc = g->arch && strncmp(g->arch, "sm", 2) == 0 ?
	     strtol(g->arch + 2, NULL, 10) : 0;
	return cc > 0 && cc < 100 && (p->tp > 1 || p->cp > 1) &&
	       !j->moe.a2a_overlap;
}

task_id train_launch_marks(struct train *t, uint32_t n, uint32_t stream,
			   const char *name)
{
	struct task_info info = { .name = name, .cat = TASK_OTHER,
				  .layer = -1, .microbatch = -1 };
	task_id first = TASK_NONE, id;
	uint32_t k;

	for (k = 0; k < n; k++) {
		id = prog_task(t->prog, t->ranks[k], stream, 0, &info);
		if (id == TASK_NONE)
			return TASK_NONE;
		if (k == 0)
			first = id;
		else if (id != first + k)
			BUG("launch marks: task ids not consecutive");
	}
	return first;
}

int train_launch_gate(struct train *t, int64_t s, uint32_t r, int64_t a,
		      int64_t u, task_id mark)
{
	const struct stage_plan *sp = &t->stage[s];
	int64_t n;
	uint32_t f;

	for (; a < sp->nacts; a++, u = 0) {
		n = train_units(t, train_vs(t, s, sp->acts[a].chunk));
		for (; u < n; u++) {
			const struct unit_rec *rec = train_unit(t, r, a, u);

			if (rec->nfirst == 0)
				continue;
			for (f = 0; f < rec->nfirst; f++)
				if (train_dep(t, mark, rec->first[f]) != 0)
					return -1;
			return 0;
		}
	}
	return 0;
}

/* A unit's first or last task on one stream: the expert-parallel one
 * (gemm 0) or Transformer Engine's GEMM stream (gemm 1). */
static task_id rec_first(const struct unit_rec *rec, int gemm)
{
	return gemm ? rec->xg_first : rec->ep_first;
}

static task_id rec_last(const struct unit_rec *rec, int gemm)
{
	return gemm ? rec->xg_last : rec->ep_last;
}

static task_id stream_from(const struct train *t, int64_t s, uint32_t r,
			   int64_t a, int64_t u, int gemm)
{
	const struct stage_plan *sp = &t->stage[s];
	int64_t n;

	for (; a < sp->nacts; a++, u = 0) {
		n = train_units(t, train_vs(t, s, sp->acts[a].chunk));
		for (; u < n; u++) {
			task_id f = rec_first(train_unit(t, r, a, u), gemm);

			if (f != TASK_NONE)
				return f;
		}
	}
	return TASK_NONE;
}

static task_id stream_before(const struct train *t, int64_t s, uint32_t r,
			     int64_t a, int64_t u, int gemm)
{
	const struct stage_plan *sp = &t->stage[s];

	for (; a >= 0; a--) {
		if (u < 0)
			u = train_units(t, train_vs(t, s, sp->acts[a].chunk));
		for (u--; u >= 0; u--) {
			task_id l = rec_last(train_unit(t, r, a, u), gemm);

			if (l != TASK_NONE)
				return l;
		}
	}
	return TASK_NONE;
}

task_id train_ep_from(const struct train *t, int64_t s, uint32_t r,
		      int64_t a, int64_t u)
{
	return stream_from(t, s, r, a, u, 0);
}

task_id train_ep_before(const struct train *t, int64_t s, uint32_t r,
			int64_t a, int64_t u)
{
	return stream_before(t, s, r, a, u, 0);
}

task_id train_xg_from(const struct train *t, int64_t s, uint32_t r,
		      int64_t a, int64_t u)
{
	return stream_from(t, s, r, a, u, 1);
}

task_id train_xg_before(const struct train *t, int64_t s, uint32_t r,
			int64_t a, int64_t u)
{
	return stream_before(t, s, r, a, u, 1);
}
