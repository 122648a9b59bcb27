/*
 * test_infer_graph.c - the captured size a decode step is padded to
 * (src/models/infer_prog.c infer_graph_for): the engine's rule of
 * powers of two up to cuda_graph_pad, or its list cuda_graph_sizes
 * (TensorRT-LLM's cuda_graph_config batch_sizes, cut at the engine's
 * largest step as _filter_cuda_graph_batch_sizes cuts it). Jobs are
 * tests/data/serve's Qwen3-30B over the shipped trtllm preset, varied by
 * --set style overrides.
 */
#include <criterion/criterion.h>
#include <stdio.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/spec_job.h"
#include "models/infer.h"
#include "models/infer_prog.h"

#include "fixture.h"

#define Q30 "tests/data/serve/q30-h100.yaml"

/* The perf-overview's llm_options.yml batch_sizes. */
#define DOC_SIZES "serving.engine.cuda_graph_sizes=[1, 2, 4, 8, 16, 32, " \
		  "64, 128, 256, 384, 512, 1024, 2048, 4096, 8192]"

/* The rule as the perf-overview jobs had it before the list: powers of
 * two up to 8192. */
#define POW2 "serving.engine.cuda_graph_pad=8192"

/* The tokens a decode-only step of n sequences runs as, and its graph,
 * under the engine with the given sizes (a list or a pad), its largest
 * captured size gmax (a list's last) and max_seqs sequences a step at
 * most. */
static double padded_gmax(const char *sizes, int gmax, double max_seqs,
			  double n, enum infer_graph *graph)
{
	char seqs[64], max[64];
	const char *sets[] = {"phase=serving", "serving.requests=10",
			      "serving.input_len=128", "serving.output_len=128",
			      max, "serving.max_num_batched_tokens=8192", seqs,
			      sizes};
	struct arena a;
	struct diag d;
	struct infer_ctx x;
	struct infer_batch b = {0}, p;
	struct job_spec *j;
	double t;

	snprintf(seqs, sizeof(seqs), "serving.max_num_seqs=%g", max_seqs);
	snprintf(max, sizeof(max), "serving.engine.cuda_graph_max=%d", gmax);
	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, Q30, sets, sizeof(sets) / sizeof(sets[0]));
	cr_assert_eq(infer_ctx_init(&x, j, &d), 0);
	cr_assert_eq(x.max_seqs, (int64_t)max_seqs);
	b.n = 1;
	b.g[0] = (struct infer_seqs){n, 1, 1000, 0, 1, 0, 0};
	*graph = infer_graph_for(&x, &b, &p);
	t = infer_batch_tokens(&p);
	infer_ctx_release(&x);
	arena_release(&a);
	return t;
}

/* padded_gmax with the perf-overview's largest captured size, 8192. */
static double padded_tokens(const char *sizes, double max_seqs, double n,
			    enum infer_graph *graph)
{
	return padded_gmax(sizes, 8192, max_seqs, n, graph);
}

/*
 * With the list and 2048 sequences a step (every listed size up to 1024
 * kept, 2048 too): 200 -> 256, 257 -> 384 (the rule of powers of two,
 * cuda_graph_pad 8192, gives 512), 385 -> 512, 384 stays 384. With 300
 * sequences a step the list keeps 1 ... 256, then 384 > 300 is cut to 300
 * and ends it: 257 -> 300 (the rule: 512, past the engine's largest
 * step).
 */
Test(infer_graph, trtllm_pads_to_the_listed_sizes)
{
	enum infer_graph g;

	cr_assert_float_eq(padded_tokens(DOC_SIZES, 2048, 200, &g), 256, 1e-9);
	cr_assert_eq(g, IGRAPH_FULL);
	cr_assert_float_eq(padded_tokens(DOC_SIZES, 2048, 257, &g), 384, 1e-9);
	cr_assert_float_eq(padded_tokens(POW2, 2048, 257, &g), 512, 1e-9);
	cr_assert_float_eq(padded_tokens(DOC_SIZES, 2048, 385, &g), 512, 1e-9);
	cr_assert_float_eq(padded_tokens(DOC_SIZES, 2048, 384, &g), 384, 1e-9);
	cr_assert_float_eq(padded_tokens(DOC_SIZES, 300, 257, &g), 300, 1e-9);
	cr_assert_eq(g, IGRAPH_FULL);
	cr_assert_float_eq(padded_tokens(POW2, 300, 257, &g), 512, 1e-9);
}

/*
 * Past the list's last size the step runs eagerly and unpadded
 * (_round_up_batch_size returns 0): sizes [1, 2, 4, 256] (cuda_graph_max
 * 256, the list's last), 2048 sequences a step, 257 sequences -> no
 * graph, 257 tokens.
 */
Test(infer_graph, past_the_list_runs_eagerly)
{
	enum infer_graph g;

	cr_assert_float_eq(padded_gmax("serving.engine.cuda_graph_sizes="
				       "[1, 2, 4, 256]", 256, 2048, 257, &g),
			   257, 1e-9);
	cr_assert_eq(g, IGRAPH_NONE);
}
