/*
 * test_block_graph.c - a kernel in a CUDA-graph scope the training job
 * captures (training.cuda_graphs) costs the GPU's replayed-node
 * kernel_launch_graph, not the eager kernel_launch (block.c block_cost,
 * as infer_cost does for serving graphs).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "fixture.h"
#include "models/block.h"
#include "models/layer.h"
#include "models/layer_impl.h"

static double op_time(const struct layer_ops *o, const struct gpu_spec *g,
		      unsigned captured)
{
	static struct block b;
	struct block_dtypes dt = { DTYPE_BF16, DTYPE_BF16, 1, captured, 0 };

	cr_assert_eq(block_cost(&b, o, g, &dt, NULL), 0);
	cr_assert_eq(b.n, 1);
	return b.op[0].time_s;
}

Test(block, captured_scope_pays_graph_node_launch)
{
	struct fixture f;
	struct layer_ops o;
	struct layer_op *op;
	double eager, graph, other;

	/* One small bf16 GEMM (256 x 256 x 256) in the attention scope,
	 * one kernel, no split-K. Eager it pays kernel_launch 5 us; replayed
	 * from the captured attention graph kernel_launch_graph 1 us: the
	 * body is the same, so the difference is 5 - 1 = 4 us. Capturing
	 * only the MLP scope leaves the attention op eager. */
	fixture_gpt(&f, 1, 1024, 16, 128, 2048, 1, 8, 1, 1, 1);
	f.gpu.kernel_launch_s = 5e-6;
	f.gpu.kernel_launch_graph_s = 1e-6;
	f.gpu.gemm_split_k_kernels = 1;
	memset(&o, 0, sizeof(o));
	op = lop_gemm(&o, "qkv", PASS_FWD, 256, 256, 256, 0);
	op->scope = SCOPE_ATTN;
	eager = op_time(&o, &f.gpu, 0);
	graph = op_time(&o, &f.gpu, 1u << SCOPE_ATTN);
	other = op_time(&o, &f.gpu, 1u << SCOPE_MLP);
	cr_assert_float_eq(eager - graph, 4e-6, 1e-12,
			   "eager %g s, graph %g s", eager, graph);
	cr_assert_float_eq(other, eager, 1e-15);
}
