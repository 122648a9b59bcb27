/*
 * ep_busy.c - comm-side interference of EP dispatch/combine (ep_busy.h).
 *
 * A dispatch or combine kernel that runs beside a GEMM or attention
 * kernel on its GPU shares the SMs' issue slots and the HBM with it. The
 * measured outcome on H100 (Megatron-Bridge skills/nemo-mbridge-perf-
 * expert-parallel-overlap/SKILL.md @ 067f987, the HybridEP Nsight pair,
 * results/reference/moe/README.md) is that the comm kernels lose the time
 * and the compute kernels do not: the comm kernels grew 2.58 s with 4.18 s
 * of concurrency, compute time unchanged. So while compute runs the call
 * progresses at busy_rate (the executor, src/engine/exec_crate.c) and the
 * compute loses busy_compute_share of the call's SM share (0 on that
 * pair: the compute kernels keep their SMs, the comm kernels take what
 * they leave; 1, the default, is the old model: the kernels hold their
 * SMs and the compute runs on the rest). Training's overlapped calls
 * (train.c) and serving's (infer_inst.c: two-batch overlap) take it
 * alike.
 */
#include "ep_busy.h"

void ep_busy(const struct ep_comm_spec *e, struct coll_desc *c)
{
	if (!e || !(e->busy_rate < 1))
		return;
	c->busy_rate = e->busy_rate;
	c->sm_share *= e->busy_compute_share;
}
