/*
 * infer_inst.c - one costed op of an inference step as a task of a step
 * program (infer_prog.h): a kernel on the rank's compute stream, a
 * collective on its group's stream (tp, or ep for the experts' dispatch
 * and combine on the job's moe.dispatcher path), and the empty program
 * with the instance's streams. A leaf of infer_prog.c (the whole step,
 * one unit) and infer_tbo.c (two-batch overlap), which both build on it.
 */
#include "infer_prog.h"

#include "config/spec_job.h"
#include "ep.h"
#include "ep_busy.h"

static const char *const stream_names[IST_COUNT] = {
	"compute", "tp", "pp", "host", "ep",
};

struct prog *infer_prog_empty(const struct infer_ctx *x)
{
	struct prog *p = prog_new((uint32_t)x->pp, IST_COUNT);
	uint32_t s;

	if (!p)
		return NULL;
	for (s = 0; s < IST_COUNT; s++)
		prog_name_stream(p, s, stream_names[s]);
	return p;
}

/* The collective of op on stage s: its group's GPUs and the path. */
static struct coll_desc coll_of(const struct infer_ctx *x,
				const struct infer_step_units *su,
				const struct infer_cost_op *op, int64_t s,
				struct coll_path *path, uint32_t *stream)
{
	int64_t g = x->tp * x->adp;
	struct coll_desc c = {
		.op = op->coll, .bytes = op->bytes, .gpus = x->gpus + s * g,
		.ngpus = (uint32_t)x->tp, .algo = -1, .proto = -1,
		.replicas = (uint32_t)x->adp, .sm_share = 0,
	};

	*stream = IST_TP;
	if (op->kind == IOP_ETP) {
		c.ngpus = (uint32_t)x->dims.moe.etp;
		c.replicas = (uint32_t)x->dims.moe.ep;
	} else if (op->kind == IOP_EP) {
		c.gpus = x->ep_gpus + s * (int64_t)x->dims.moe.ep;
		c.ngpus = (uint32_t)x->dims.moe.ep;
		c.replicas = (uint32_t)x->dims.moe.etp;
		c.a2a_B = op->a2a_B;
		c.sm_share = x->ep_sm_share;
		/* the dispatcher's kernels slow down beside compute on
		 * their GPUs (busy_rate) and the compute keeps or loses
		 * their SMs (busy_compute_share): the one rule training's
		 * overlapped dispatch and combine follow (train.c coll_of,
		 * ep_busy.c) */
		ep_busy(x->job->moe.dispatcher, &c);
		/* the sized all-gather / reduce-scatter (engine
		 * adp_moe_sized) is one ncclBroadcast / ncclReduce per rank
		 * in one NCCL group, rooted at each rank in turn
		 * (TensorRT-LLM thop/allgatherOp.cpp, reducescatterOp.cpp) */
		if (op->coll == COLL_BROADCAST || op->coll == COLL_REDUCE)
			c.group = c.ngpus;
		c.path = ep_coll_path(x->job->moe.dispatcher,
				      su ? su->route.node_share : 1,
				      op->ep_row_B, op->ep_kind, 0, path,
				      &c.algo);
		/* hierarchical inside one node is the plain all-to-all
		 * (train.c coll_of, ep.c ep_call_time) */
		if (c.path || !ep_spans_nodes(c.gpus, c.ngpus,
					      x->job->system->gpus_per_node))
			c.algo = -1;
		*stream = IST_EP;
	}
	return c;
}

task_id infer_prog_op(struct prog *p, const struct infer_ctx *x,
		      const struct infer_step_units *su,
		      const struct infer_cost_op *op, uint32_t rank, int64_t s,
		      int32_t layer, int32_t mb)
{
	struct task_info info = {op->name, TASK_COMPUTE, layer, mb,
				 TASK_PHASE_NONE};
	struct coll_path path;
	uint32_t stream;
	struct coll_desc c;

	if (op->kind == IOP_KERNEL)
		return prog_task(p, rank, IST_COMPUTE, op->time_s, &info);
	c = coll_of(x, su, op, s, &path, &stream);
	info.cat = TASK_COMM;
	return prog_coll(p, &rank, 1, stream, &c, &info);
}
