/*
 * test_infer_memo.c - the step model's memos (infer.h infer_cost_memo,
 * infer_run.c's unit and step memos): a hit gives the very numbers a
 * miss computes, and each distinct kernel, unit or step is computed
 * once.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "config/spec_job.h"
#include "run/infer_run.h"

#include "fixture.h"

#define Q30 "tests/data/serve/q30-h100.yaml"

/* A decode group of n sequences at context ctx. */
static void decode(struct infer_batch *b, double n, double ctx)
{
	memset(b, 0, sizeof(*b));
	cr_assert_eq(infer_batch_add(b, n, 1, ctx, 0, 1), 0);
}

static void cost(struct infer_stepper *st, const struct infer_batch *b,
		 struct infer_step_cost *c)
{
	struct diag d;

	diag_init(&d, stderr);
	cr_assert_eq(infer_stepper_cost(st, b, c, &d), 0);
}

static int same(const struct infer_step_cost *a,
		const struct infer_step_cost *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/*
 * Qwen3-30B-A3B on one H100 (tests/data/serve/q30-h100.yaml, TensorRT-
 * LLM): every one of its 48 layers is MoE with full attention, so the
 * stepper has one layer kind; TensorRT-LLM copies no block table
 * (engine block_table_copy 0: no input unit). A step is then 3 units:
 * the layer, the embedding and the head.
 *   step 1 (32 decodes at 512): 3 units run, no hit anywhere;
 *   step 2, the same batch: the step memo answers (step hits 1), no
 *     unit or kernel is looked up;
 *   step 3 (32 decodes at 1024): a new batch; the layer's attention
 *     reads twice the KV, a new unit key: run (runs 4); embedding and
 *     head see the same 32 tokens: unit hits 2. Its non-attention
 *     kernels have step 1's shapes: every lookup hits, so the kernel
 *     misses stay at step 1's m1 and the hits grow by step 1's lookups
 *     (h1 + m1);
 *   step 4, step 1's batch again: step hits 2, nothing else moves.
 */
Test(infer_memo, steps_units_and_kernels_are_computed_once)
{
	const char *sets[] = {"serving.batch=32"};
	struct arena a;
	struct job_spec *j;
	struct infer_stepper st;
	struct infer_batch b512, b1024;
	struct infer_step_cost c1, c2, c3, c4;
	struct diag d;
	uint64_t h1, m1, h3, m3;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, Q30, sets, 1);
	cr_assert_eq(infer_stepper_init(&st, j, &d), 0);
	cr_assert_eq(st.ctx.nkinds, 1);
	decode(&b512, 32, 512);
	decode(&b1024, 32, 1024);

	cost(&st, &b512, &c1);
	cr_assert_eq(st.unit_runs, 3);
	cr_assert_eq(st.unit_hits, 0);
	cr_assert_eq(st.step_hits, 0);
	infer_cost_memo_stats(st.ctx.memo, &h1, &m1);
	cr_assert_gt(m1, 0);

	cost(&st, &b512, &c2);
	cr_assert_eq(st.step_hits, 1);
	cr_assert_eq(st.unit_runs, 3);
	cr_assert_eq(st.unit_hits, 0);
	cr_assert_eq(st.steps, 2);
	cr_assert(same(&c1, &c2));

	cost(&st, &b1024, &c3);
	cr_assert_eq(st.step_hits, 1);
	cr_assert_eq(st.unit_runs, 4);
	cr_assert_eq(st.unit_hits, 2);
	infer_cost_memo_stats(st.ctx.memo, &h3, &m3);
	cr_assert_eq(m3, m1);
	cr_assert_eq(h3, 2 * h1 + m1);
	cr_assert_gt(c3.latency_s, c1.latency_s);	/* twice the KV */

	cost(&st, &b512, &c4);
	cr_assert_eq(st.step_hits, 2);
	cr_assert_eq(st.unit_runs, 4);
	cr_assert_eq(st.unit_hits, 2);
	cr_assert_eq(st.steps, 4);
	cr_assert(same(&c1, &c4));
	infer_stepper_release(&st);
	arena_release(&a);
}

/*
 * With and without the memos, a sequence of steps (decodes at growing
 * contexts, a prompt step, a mixed one, repeats) costs bit for bit the
 * same, on a dense model (Llama 3 70B, TP 8: collectives in every unit)
 * and an MoE one.
 */
static void memo_changes_nothing(const char *path, const char *const *sets,
				 size_t n)
{
	struct arena a;
	struct job_spec *j;
	struct infer_stepper on, off;
	struct infer_batch b[6];
	struct infer_step_cost c_on, c_off;
	struct diag d;
	int i, round;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, path, sets, n);
	cr_assert_eq(infer_stepper_init(&on, j, &d), 0);
	cr_assert_eq(infer_stepper_init(&off, j, &d), 0);
	infer_stepper_no_memo(&off);
	decode(&b[0], 64, 700);
	decode(&b[1], 64, 701);
	decode(&b[2], 63, 702.5);
	memset(&b[3], 0, sizeof(b[3]));
	cr_assert_eq(infer_batch_add(&b[3], 2, 1024, 0, 1, 1), 0);
	b[4] = b[2];
	cr_assert_eq(infer_batch_add(&b[4], 1, 300, 200, 1, 0), 0);
	decode(&b[5], 1, 4096);
	for (round = 0; round < 2; round++)
		for (i = 0; i < 6; i++) {
			cost(&on, &b[i], &c_on);
			cost(&off, &b[i], &c_off);
			cr_assert(same(&c_on, &c_off), "%s batch %d round %d: "
				  "%.17g s with the memos, %.17g without",
				  path, i, round, c_on.latency_s,
				  c_off.latency_s);
		}
	cr_assert_gt(on.unit_hits, 0);
	cr_assert_eq(off.unit_hits, 0);
	infer_stepper_release(&on);
	infer_stepper_release(&off);
	arena_release(&a);
}

Test(infer_memo, the_memos_change_no_number)
{
	const char *q30[] = {"serving.batch=64"};
	const char *l70[] = {"phase=decode", "serving.batch=64",
			     "serving.context_len=700"};

	memo_changes_nothing(Q30, q30, 1);
	memo_changes_nothing("tests/data/serve/l70-h100-tp8.yaml", l70, 3);
}

/* inst_unit's dependency graph depends on the step's launch mode (the
 * aux stream beside the main one under a full graph) and on each op's
 * ep_free, so the unit memo must not give a graph step's unit and an
 * eager step's unit of the very same ops one time, nor two units that
 * differ only in ep_free. */
Test(infer_memo, unit_key_holds_the_launch_mode_and_ep_free)
{
	struct arena a;
	struct job_spec *j;
	struct infer_stepper st;
	struct infer_step_units graph, eager;
	struct infer_unit u, v;
	struct diag d;

	arena_init(&a);
	diag_init(&d, stderr);
	j = fixture_load_job(&a, Q30, NULL, 0);
	cr_assert_eq(infer_stepper_init(&st, j, &d), 0);
	memset(&graph, 0, sizeof(graph));
	memset(&eager, 0, sizeof(eager));
	memset(&u, 0, sizeof(u));
	graph.graph = IGRAPH_FULL;
	eager.graph = IGRAPH_NONE;
	u.n = 1;
	u.op[0].name = "moe";
	u.op[0].time_s = 10e-6;
	v = u;
	cr_assert_eq(infer_unit_keys_equal(&st.ctx, &graph, &u, &graph, &v, 0),
		     1);
	cr_assert_eq(infer_unit_keys_equal(&st.ctx, &graph, &u, &eager, &v, 0),
		     0);
	v.op[0].ep_free = 1;
	cr_assert_eq(infer_unit_keys_equal(&st.ctx, &graph, &u, &graph, &v, 0),
		     0);
	infer_stepper_release(&st);
	arena_release(&a);
}
