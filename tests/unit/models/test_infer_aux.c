/*
 * test_infer_aux.c - TensorRT-LLM's shared experts on the aux stream
 * (engine moe_shared_aux_stream; infer_moe.c cutlass_ops, infer_prog.c
 * inst_unit): in a CUDA-graph step they run beside the attention-DP
 * all-gather of the routed tokens, in an eager step after it.
 *
 * Base job: tests/data/serve/q30-h100.yaml with DeepSeek-V2-Lite (64
 * routed experts, 2 shared, top-6, MLA) on 8 H100s with attention DP
 * (tp 1, dp 8, ep 8) under the trtllm preset (CUTLASS MoE, all-gather +
 * reduce-scatter exchange), 64 sequences: 8 a rank, a captured size.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/spec_job.h"
#include "engine/exec.h"
#include "models/infer.h"
#include "run/infer_run.h"

#include "fixture.h"

#define Q30 "tests/data/serve/q30-h100.yaml"

/* The overrides of the base job (into sets, their count returned): the
 * auxiliary stream on or off, a decode step or a 256-token prefill. */
static size_t adp_sets(const char *sets[16], int aux, int prefill)
{
	static const char *const base[] = {
		"model=deepseek-v2-lite", "system.gpus_per_node=8",
		"serving.engine=trtllm", "parallelism.tp=1",
		"parallelism.dp=8", "parallelism.ep=8",
		"parallelism.attention_dp=true", "serving.batch=64",
	};
	size_t n;

	for (n = 0; n < sizeof(base) / sizeof(*base); n++)
		sets[n] = base[n];
	sets[n++] = aux ? "serving.engine.moe_shared_aux_stream=true" :
			  "serving.engine.moe_shared_aux_stream=false";
	if (prefill) {
		sets[n++] = "phase=prefill";
		sets[n++] = "serving.input_len=256";
	}
	return n;
}

/* The MoE layer's ops of a decode step of the base job. */
static void moe_ops(int aux, struct infer_ops *o, struct infer_dims *d)
{
	const char *sets[16];

	fixture_infer_moe_ops(Q30, sets, adp_sets(sets, aux, 0), -1, d, o);
}

static int index_of(const struct infer_ops *o, const char *name)
{
	return fixture_infer_op_index(o, name);
}

/*
 * With the key the shared experts (shared_gate_up, shared_act,
 * shared_down) follow the all-gather (moe_dispatch) and do not wait for
 * it (ep_free), and the routed path's next kernel does; without it they
 * come first (before the router), waited for in turn. The trtllm preset
 * sets it.
 */
Test(infer_aux, shared_experts_follow_the_allgather)
{
	struct infer_ops o;
	struct infer_dims d;
	int disp, up, down, after;

	moe_ops(1, &o, &d);
	cr_assert(d.moe.shared_aux && d.moe.allgather && d.moe.cutlass);
	disp = index_of(&o, "moe_dispatch");
	up = index_of(&o, "shared_gate_up");
	down = index_of(&o, "shared_down");
	cr_assert(disp >= 0 && up > disp && down > up);
	cr_assert(o.op[up].ep_free && o.op[down].ep_free &&
		  o.op[index_of(&o, "shared_act")].ep_free);
	after = down + 1;
	cr_assert_lt(after, o.n);
	cr_assert(!o.op[after].ep_free, "%s", o.op[after].name);
	cr_assert(!o.op[disp].ep_free);
	moe_ops(0, &o, &d);
	cr_assert(!d.moe.shared_aux);
	cr_assert_lt(index_of(&o, "shared_gate_up"), index_of(&o, "router"));
	cr_assert(!o.op[index_of(&o, "shared_gate_up")].ep_free);
}

static void run(int aux, int prefill, struct infer_result *r)
{
	const char *sets[16];
	struct arena a;
	struct diag dg;

	arena_init(&a);
	diag_init(&dg, stderr);
	cr_assert_eq(infer_run(fixture_load_job(&a, Q30, sets,
						adp_sets(sets, aux, prefill)),
			       NULL, r, &dg), 0);
	arena_release(&a);
}

static double coll_time(const struct infer_result *r, const char *name)
{
	double t = 0;
	uint32_t i;

	for (i = 0; i < r->ncolls; i++)
		if (strcmp(r->colls[i].name, name) == 0)
			t += r->colls[i].time_s;
	return t;
}

/*
 * The decode step replays a graph (8 sequences a rank, a captured
 * size): the shared experts run while the all-gather is in flight, so
 * the step is shorter and less of the exchange is exposed. They hide
 * behind the all-gather only, so the step saves less than the
 * all-gathers' summed time (all 26 MoE layers'). The prefill step runs
 * eagerly (a context step): the same kernels in turn, the same time.
 */
Test(infer_aux, graph_steps_overlap_eager_steps_do_not)
{
	struct infer_result on, off;

	run(1, 0, &on);
	run(0, 0, &off);
	cr_assert_eq(on.info.graph, IGRAPH_FULL);
	cr_assert_lt(on.step_s, off.step_s * (1 - 1e-6),
		     "on %.9g s, off %.9g s", on.step_s, off.step_s);
	cr_assert_lt(off.gpu_s - on.gpu_s, coll_time(&on, "moe_dispatch"));
	cr_assert_lt(on.part_s[EXEC_EXPOSED_COMM],
		     off.part_s[EXEC_EXPOSED_COMM]);
	infer_result_release(&on);
	infer_result_release(&off);
	run(1, 1, &on);
	run(0, 1, &off);
	cr_assert_eq(on.info.graph, IGRAPH_NONE);
	cr_assert_float_eq(on.step_s, off.step_s, 1e-12 * off.step_s);
	infer_result_release(&on);
	infer_result_release(&off);
}
