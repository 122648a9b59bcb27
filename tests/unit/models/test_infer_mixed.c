/*
 * test_infer_mixed.c - a step with prompt and decode tokens under vLLM V1
 * on FlashAttention 2 (engine mixed_attn_block_m, mixed_attn_unpacked_cc;
 * src/models/infer.c mixed_rows): one varlen flash kernel for every
 * token, the decode tokens' query heads unpacked. The job is
 * tests/data/serve/l8-h100-tp1.yaml (Llama 3 8B, TP 1: 32 query heads,
 * 8 KV heads of 128) moved to one A100 where the rule applies.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "config/spec_job.h"
#include "models/infer.h"

#include "fixture.h"

#define L8 "tests/data/serve/l8-h100-tp1.yaml"

static const char *const A100[] = {"system=dgx-a100",
				   "system.gpus_per_node=1"};

static double rows_of(const char *const *extra, size_t n)
{
	struct infer_dims d;

	fixture_infer_dims(L8, A100, 2, extra, n, &d);
	return d.mixed_rows;
}

Test(infer, mixed_rows_only_where_vllm_runs_fa2)
{
	const char *h100[] = {"system=dgx-h100"};
	const char *b200[] = {"system=dgx-b200"};
	const char *sglang[] = {"serving.engine=sglang"};
	const char *v0[] = {"serving.engine=vllm-v0"};

	/* A100 (sm80) under vllm.yaml: mixed_attn_block_m 64 */
	cr_assert_float_eq(rows_of(NULL, 0), 64, 1e-12);
	/* 9.0 runs FlashAttention 3, 10.0 FlashInfer: not in the list */
	cr_assert_float_eq(rows_of(h100, 1), 0, 1e-12);
	cr_assert_float_eq(rows_of(b200, 1), 0, 1e-12);
	/* engines without the key (V0 calls a decode kernel of its own) */
	cr_assert_float_eq(rows_of(sglang, 1), 0, 1e-12);
	cr_assert_float_eq(rows_of(v0, 1), 0, 1e-12);
}

/*
 * The attention ops of one layer for a 1024-token prompt (no cache) and
 * 50 decoding sequences with 4000 cached tokens (4001 keys with the new
 * one). On the A100: one kernel, bytes (gpu.h gpu_attention_mixed):
 *
 *   prompt  Q, O, LSE  1024 x 32 x (256 x 2 + 4)      =    16,908,288 B
 *           keys once  1024 x 8 x 256 x 2             =     4,194,304 B
 *   decode  Q, O, LSE  50 x 32 x (256 x 2 + 4)        =       825,600 B
 *           keys per query head 50 x 4001 x 32 x 512  = 3,277,619,200 B
 *   sum                                               = 3,299,547,392 B
 *
 * On the H100 two kernels, the decode one reading each KV head's keys
 * once: 50 x 4001 x 8 x 512 B = 819,404,800 B of key bytes, a quarter.
 */
static void layer_attention(const char *const *extra, size_t n, int *ops,
			    double *bytes)
{
	struct arena a;
	struct job_spec *j;
	struct infer_dims d;
	struct infer_batch b = {0};
	struct infer_ops *o;
	struct infer_unit *u;
	int i;

	arena_init(&a);
	j = fixture_load_job2(&a, L8, A100, 2, extra, n);
	infer_dims_from_job(j, j->system->gpu, &d);
	b.n = 2;
	b.g[0] = (struct infer_seqs){1, 1024, 0, 1, 1, 0, 0};
	b.g[1] = (struct infer_seqs){50, 1, 4000, 0, 1, 0, 0};
	o = arena_alloc(&a, sizeof(*o));
	u = arena_alloc(&a, sizeof(*u));
	memset(o, 0, sizeof(*o));
	infer_layer_ops(&d, &b, NULL, NULL, o);
	infer_cost(o, &d, &b, NULL, j->system->gpu, IGRAPH_NONE, u);
	*ops = 0;
	*bytes = 0;
	for (i = 0; i < o->n; i++)
		if (o->op[i].attention && (o->op[i].kern == IK_ATTN_PREFILL ||
					   o->op[i].kern == IK_ATTN_DECODE)) {
			(*ops)++;
			*bytes += u->op[i].bytes;
		}
	arena_release(&a);
}

Test(infer, mixed_step_runs_decode_rows_in_the_prompt_kernel)
{
	const char *h100[] = {"system=dgx-h100"};
	int ops;
	double bytes;

	layer_attention(NULL, 0, &ops, &bytes);
	cr_assert_eq(ops, 1);
	cr_assert_float_eq(bytes, 3299547392.0, 1.0, "%.0f", bytes);
	layer_attention(h100, 1, &ops, &bytes);
	cr_assert_eq(ops, 2);
	/* the prompt's 21,102,592 B, the decode kernel's keys 819,404,800
	 * B, its Q / O / LSE and split partials: well under the A100's */
	cr_assert_gt(bytes, 21102592.0 + 819404800.0);
	cr_assert_lt(bytes, 1.1 * (21102592.0 + 819404800.0 + 825600.0),
		     "%.0f", bytes);
}
