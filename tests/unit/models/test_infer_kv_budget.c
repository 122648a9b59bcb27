/*
 * test_infer_kv_budget.c - vLLM V1's KV budget (engine memory_rule
 * snapshot, graph_pool; src/models/infer_mem.c kv_by_rule).
 *
 * vLLM's worker takes its first memory snapshot after the CUDA context
 * exists and captures the CUDA graphs after the KV cache is allocated
 * (v1/worker/gpu_worker.py at ROCm/vllm @ 6663000a :174-177, :240-258,
 * :314): KV = f C - weights - torch peak - non-torch growth, with neither
 * the context (C - C_u) nor the graph pool in it.
 *
 * The job is tests/data/serve/gptoss120b-a100.yaml (gpt-oss-120b on one
 * A100 80 GB under the vllm preset): C = 81920 MiB, C_u = 80896 MiB
 * (configs/gpus/a100-80g.yaml: 1024 MiB of context), f = 0.9, workspace
 * X = graph_pool G = 1 GiB (workloads/engines/vllm.yaml), TP 1 so no
 * communication buffers (infer_mem_comm_B = 0).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "run/infer_run.h"

#include "fixture.h"

#define OSS "tests/data/serve/gptoss120b-a100.yaml"
#define MIB 1048576.0

static void run_oss(const char *const *extra, size_t n, struct infer_result *r)
{
	const char *base[] = { "phase=decode", "serving.batch=1",
			       "serving.context_len=4000" };

	fixture_infer_run(OSS, base, sizeof(base) / sizeof(base[0]), extra, n,
			  r);
}

Test(infer, vllm_kv_budget_leaves_context_and_graphs_out)
{
	const char *total[] = { "serving.engine.memory_rule=total",
				"serving.engine.graph_pool=0 GiB" };
	struct infer_result snap, all;

	run_oss(NULL, 0, &snap);
	run_oss(total, 2, &all);
	/* snapshot: KV = 0.9 x 81920 MiB - M - A - (X - G), X = G = 1 GiB */
	fixture_assert_close(snap.mem.kv_cache_B,
			     0.9 * 81920 * MIB - snap.mem.weights_B -
			     snap.mem.activations_B);
	/* the workspace is still held (reported, and in the peak) */
	fixture_assert_close(snap.mem.workspace_B, 1024 * MIB);
	fixture_assert_close(snap.mem.peak_B, 0.9 * 81920 * MIB + 1024 * MIB);
	/* total: the context 81920 - 80896 = 1024 MiB and the 1024 MiB
	 * workspace come out of the budget too: 2048 MiB less KV */
	fixture_assert_close(all.mem.kv_cache_B,
			     snap.mem.kv_cache_B - 2048 * MIB);
	/* pages of 16 tokens x 18 layers x 2048 B (hybrid groups) */
	fixture_assert_close(snap.mem.kv_pages,
			     floor(snap.mem.kv_cache_B / (16.0 * 18 * 2048)));
	cr_assert_gt(snap.mem.kv_pages, all.mem.kv_pages);
}

static int load_rc(const char *set1, const char *set2)
{
	const char *sets[] = { set1, set2 };
	struct arena a;
	struct diag d;
	struct config_ctx cx = {&a, &d, "."};
	struct job_spec *j;
	int rc;

	arena_init(&a);
	diag_init(&d, stderr);
	j = arena_alloc(&a, sizeof(*j));
	cr_assert_not_null(j);
	memset(j, 0, sizeof(*j));
	rc = config_load(&cx, &job_schema, OSS, sets, 2, j);
	arena_release(&a);
	return rc;
}

Test(infer, vllm_graph_pool_bounds_are_checked)
{
	/* the pool is part of the workspace: 2 GiB of a 1 GiB workspace */
	cr_assert_neq(load_rc("serving.engine.graph_pool=2 GiB",
			      "serving.engine.workspace=1 GiB"), 0);
	/* read only by memory_rule snapshot */
	cr_assert_neq(load_rc("serving.engine.memory_rule=total",
			      "serving.engine.graph_pool=1 GiB"), 0);
	/* the preset's own values load */
	cr_assert_eq(load_rc("serving.engine.graph_pool=1 GiB",
			     "serving.engine.workspace=1 GiB"), 0);
}
