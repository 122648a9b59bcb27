/*
 * test_exec.c - step programs on the engine: streams, dependencies,
 * rendezvous, overlap, deadlocks (pipelines, SM shares and the trace:
 * test_exec_pipe.c; allocation failure, the horizon and variability:
 * test_exec_var.c).
 *
 * Collectives are timed by exec_mock.h's backend: a collective takes
 * alpha + bytes / beta, scheduled with sim_after. Times below are in us;
 * the engine works in integer ns, so every expectation is exact.
 */
#include <criterion/criterion.h>
#include <cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "base/mem.h"
#include "exec_mock.h"

/* ---- streams and dependencies ---- */

Test(exec, stream_runs_tasks_in_order_one_at_a_time)
{
	struct prog *p = prog_new(1, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id a = ex_task(p, 0, 0, 1, "a", TASK_COMPUTE);
	task_id b = ex_task(p, 0, 0, 2, "b", TASK_COMPUTE);
	task_id c = ex_task(p, 0, 0, 3, "c", TASK_COMPUTE);

	r = ex_run(p, &m);
	/* a [0,1), b [1,3), c [3,6): step 1 + 2 + 3 = 6 us, all compute. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, a)), 0);
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 1000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, c)), 3000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, c)), 6000);
	/* exec_task_dur_s is end - start, the same double: b's 2 us, c's 3. */
	cr_assert_eq(exec_task_dur_s(p, b),
		     exec_task_end_s(p, b) - exec_task_start_s(p, b));
	cr_assert_eq(ex_ns(exec_task_dur_s(p, b)), 2000);
	cr_assert_eq(ex_ns(exec_task_dur_s(p, c)), 3000);
	cr_assert_eq(ex_ns(r.step_s), 6000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 6000);
	cr_assert_eq(r.final_rank, 0);
	/* Three tasks of non-zero length: three engine events. */
	cr_assert_eq(r.events, 3);
	prog_free(p);
}

Test(exec, streams_of_a_rank_run_concurrently)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id a = ex_task(p, 0, 0, 5, "a", TASK_COMPUTE);
	task_id b = ex_task(p, 0, 1, 3, "b", TASK_OTHER);

	r = ex_run(p, &m);
	/* Both start at 0; step = max(5, 3) = 5 us, ending with a. b is
	 * off the path. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 0);
	cr_assert_eq(ex_ns(r.step_s), 5000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 5000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_OTHER]), 0);
	cr_assert(exec_task_critical(p, a));
	cr_assert_not(exec_task_critical(p, b));
	prog_free(p);
}

Test(exec, dependency_across_streams)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id a = ex_task(p, 0, 0, 2, "a", TASK_COMPUTE);
	task_id c = ex_task(p, 0, 0, 1, "c", TASK_COMPUTE);
	task_id b = ex_task(p, 0, 1, 3, "b", TASK_COMM);

	cr_assert_eq(prog_dep(p, a, b), 0);
	r = ex_run(p, &m);
	/* a [0,2); b waits for a: [2,5); c follows a on its stream: [2,3).
	 * Step 5 us, path a -> b. During b [2,5) the rank computed c for
	 * 1 us: compute 2 + 1 = 3 us, exposed comm 3 - 1 = 2 us. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 2000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, c)), 2000);
	cr_assert_eq(ex_ns(r.step_s), 5000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 3000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 2000);
	ex_assert_parts_sum(&r);
	prog_free(p);
}

Test(exec, dependency_across_ranks_is_bubble)
{
	struct prog *p = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id a = ex_task(p, 0, 0, 4, "a", TASK_COMPUTE);
	task_id b = ex_task(p, 1, 0, 1, "b", TASK_COMPUTE);

	prog_dep(p, a, b);
	r = ex_run(p, &m);
	/* b [4,5) on rank 1, which waited 4 us for rank 0: compute 1 us,
	 * bubble 4 us. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 4000);
	cr_assert_eq(r.final_rank, 1);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 1000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_BUBBLE]), 4000);
	ex_assert_parts_sum(&r);
	prog_free(p);
}

Test(exec, zero_length_tasks_and_empty_programs)
{
	struct prog *p = prog_new(1, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;

	r = ex_run(p, &m);
	/* Nothing to do: a 0 s step. */
	cr_assert_eq(r.step_s, 0);
	ex_task(p, 0, 0, 0, "z", TASK_OTHER);
	ex_task(p, 0, 0, 2, "a", TASK_COMPUTE);
	ex_task(p, 0, 0, 0, "z", TASK_OTHER);
	r = ex_run(p, &m);
	/* 0 + 2 + 0 us; zero-length tasks need no engine event. */
	cr_assert_eq(ex_ns(r.step_s), 2000);
	cr_assert_eq(r.events, 1);
	prog_free(p);
}

Test(exec, reserve_is_a_hint)
{
	struct prog *p = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id a, b, c, d;

	/* Room for 3 tasks (6 edges) and no calls: exactly that. */
	prog_reserve(p, 3, 0);
	cr_assert_eq(p->cap, 3);
	cr_assert_eq(p->capedges, 6);
	cr_assert_eq(p->capcolls, 0);
	/* Hints that cannot be met, or make no room, change nothing: past
	 * PROG_MAX_TASKS, negative, NaN, smaller than what is there. */
	prog_reserve(p, 1e10, 1e10);
	prog_reserve(p, -1, NAN);
	prog_reserve(p, NAN, -5);
	prog_reserve(p, 2, 0);
	cr_assert_eq(p->cap, 3);
	cr_assert_eq(p->capedges, 6);
	a = ex_task(p, 0, 0, 1, "a", TASK_COMPUTE);
	b = ex_task(p, 1, 0, 2, "b", TASK_COMPUTE);
	c = ex_task(p, 0, 0, 4, "c", TASK_COMPUTE);
	cr_assert_eq(p->cap, 3, "3 tasks fit the 3 reserved");
	/* A fourth grows the array as without a reservation: doubled. */
	d = ex_task(p, 1, 0, 1, "d", TASK_COMPUTE);
	cr_assert_eq(p->cap, 6);
	prog_dep(p, a, b);
	prog_dep(p, c, d);
	r = ex_run(p, &m);
	/* a [0,1), c [1,5) on rank 0; b [1,3) after a, d [5,6) after c on
	 * rank 1: the same times as without the hint. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 1000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, d)), 5000);
	cr_assert_eq(ex_ns(r.step_s), 6000);
	prog_free(p);
}

/* Three tasks reserved (6 edges of 8 bytes = 48 bytes = 3 states of
 * 16): a on rank 0, b then c on rank 1, both after a. */
static void reserved_three(struct prog *p, task_id *b, task_id *c)
{
	task_id a;

	prog_reserve(p, 3, 0);
	a = ex_task(p, 0, 0, 1, "a", TASK_COMPUTE);
	*b = ex_task(p, 1, 0, 2, "b", TASK_COMPUTE);
	*c = ex_task(p, 1, 0, 4, "c", TASK_COMPUTE);
	prog_dep(p, a, *b);
	prog_dep(p, a, *c);
}

/* The run's task states go in the edge array the build used (its pages
 * already touched), cleared; when it is too small they are a block of
 * their own. Either way the times are the same. */
Test(exec, states_reuse_the_edge_array)
{
	struct prog *p = prog_new(2, 1), *q = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id b, c, d;
	void *edges;

	reserved_three(p, &b, &c);
	edges = p->edge;
	r = ex_run(p, &m);
	cr_assert_eq((void *)p->state, edges);
	/* a [0,1); b [1,3) after a; c [3,7) after a and b (its stream):
	 * the pending counts started from 0 in the written edge array. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 1000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, c)), 3000);
	cr_assert_eq(ex_ns(r.step_s), 7000);
	cr_assert_null(p->spare);
	/* A fourth task: 64 bytes of states, more than the 48: not there. */
	reserved_three(q, &b, &c);
	d = ex_task(q, 0, 0, 1, "d", TASK_COMPUTE);
	edges = q->edge;
	r = ex_run(q, &m);
	cr_assert_neq((void *)q->state, edges);
	cr_assert_eq(ex_ns(exec_task_start_s(q, c)), 3000);
	cr_assert_eq(ex_ns(exec_task_start_s(q, d)), 1000);
	cr_assert_eq(ex_ns(r.step_s), 7000);
	prog_free(p);
	prog_free(q);
}

Test(exec, program_grows_after_a_run)
{
	struct prog *p = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id a = ex_task(p, 0, 0, 1, "a", TASK_COMPUTE);
	task_id b = ex_task(p, 1, 0, 2, "b", TASK_COMPUTE);
	task_id c;

	prog_dep(p, a, b);
	r = ex_run(p, &m);
	/* a [0,1), b [1,3). */
	cr_assert_eq(ex_ns(r.step_s), 3000);
	c = ex_task(p, 0, 0, 4, "c", TASK_COMPUTE);
	prog_dep(p, b, c);
	r = ex_run(p, &m);
	/* c waits for b (3) and for a on its stream (1): [3,7). The old edge
	 * a -> b still holds. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, b)), 1000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, c)), 3000);
	cr_assert_eq(ex_ns(r.step_s), 7000);
	prog_free(p);
}

Test(exec, starts_at_the_current_engine_time)
{
	struct prog *p = prog_new(1, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	const char *why;
	task_id a = ex_task(p, 0, 0, 2, "a", TASK_COMPUTE);

	m.sim = sim_new();
	/* Advance the engine to 1 us first: results are relative to the
	 * start of the run, which ends at 1 + 2 = 3 us engine time. */
	sim_at(m.sim, 1000, ex_noop, NULL);
	cr_assert_eq(sim_step(m.sim), 1);
	cr_assert_eq(exec_run(p, m.sim, &ex_mock_ops, &m, &r, &why), 0);
	cr_assert_eq(ex_ns(exec_task_start_s(p, a)), 0);
	cr_assert_eq(ex_ns(r.step_s), 2000);
	cr_assert_eq(sim_now(m.sim), 3000);
	sim_free(m.sim);
	prog_free(p);
}

/* ---- collectives ---- */

Test(exec, collective_waits_for_its_last_member)
{
	struct prog *p = prog_new(3, 2);
	/* alpha 1 us + 1e6 B / 1e12 B/s = 1 us: 2 us a collective. */
	struct mock m = ex_mock_new(1 * US, 1e12);
	struct exec_result r;
	uint32_t ranks[3] = { 0, 1, 2 };
	task_id w[3], ar;
	uint32_t i;

	for (i = 0; i < 3; i++)
		w[i] = ex_task(p, i, 0, i + 1, "work", TASK_COMPUTE);
	ar = ex_coll(p, COLL_ALLREDUCE, ranks, 3, 1, 1e6, "ar");
	for (i = 0; i < 3; i++)
		prog_dep(p, w[i], ar + i);
	r = ex_run(p, &m);
	/* Rank i works i + 1 us; the last member arrives at 3 us, so the
	 * all-reduce runs [3,5) on every rank. */
	cr_assert_eq(m.started, 1);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(ex_ns(exec_task_start_s(p, ar + i)), 3000);
		cr_assert_eq(ex_ns(exec_task_end_s(p, ar + i)), 5000);
		cr_assert_eq(exec_task_rank(p, ar + i), i);
		cr_assert_eq(exec_task_coll(p, ar + i)->op, COLL_ALLREDUCE);
	}
	/* All members end at 5 us; the lowest id (rank 0's) is last. Its
	 * cause is rank 2's work [0,3), during which rank 0 computed [0,1):
	 * compute 1, bubble 2, exposed comm 2 us; step 5 us. */
	cr_assert_eq(r.final_rank, 0);
	cr_assert_eq(ex_ns(r.step_s), 5000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 1000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_BUBBLE]), 2000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 2000);
	cr_assert(exec_task_critical(p, w[2]));
	cr_assert_not(exec_task_critical(p, w[0]));
	prog_free(p);
}

/* n ranks compute 2 us each, all-reduce (1 us), then rank n / 2 computes
 * 10 us more. Returns the program; w[] gets the first tasks. */
static struct prog *tie_program(uint32_t n, task_id *w, task_id *ar)
{
	struct prog *p = prog_new(n, 2);
	uint32_t ranks[16], i;

	for (i = 0; i < n; i++) {
		ranks[i] = i;
		w[i] = ex_task(p, i, 0, 2, "work", TASK_COMPUTE);
	}
	*ar = ex_coll(p, COLL_ALLREDUCE, ranks, n, 1, 1e6, "ar");
	for (i = 0; i < n; i++)
		prog_dep(p, w[i], *ar + i);
	prog_dep(p, *ar + n / 2, ex_task(p, n / 2, 0, 10, "tail", TASK_COMPUTE));
	return p;
}

Test(exec, collective_cause_prefers_the_members_rank)
{
	/* 3 members (candidates scanned) and 12 (candidates sorted). */
	uint32_t sizes[2] = { 3, 12 }, k, i;

	for (k = 0; k < 2; k++) {
		uint32_t n = sizes[k];
		task_id w[16], ar;
		struct prog *p = tie_program(n, w, &ar);
		/* 1e6 B / 1e12 B/s = 1 us. */
		struct mock m = ex_mock_new(0, 1e12);
		struct exec_result r = ex_run(p, &m);

		/* Every member arrives at 2 us: a tie. The path from the tail
		 * on rank n / 2 goes through that rank's own work: compute
		 * 2 + 10 = 12 us, exposed comm 1 us, step 13 us. */
		cr_assert_eq(r.final_rank, n / 2);
		cr_assert_eq(ex_ns(r.step_s), 13000);
		cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 12000);
		cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 1000);
		for (i = 0; i < n; i++)
			cr_assert_eq(exec_task_critical(p, w[i]), i == n / 2,
				     "n %u, rank %u", n, i);
		cr_assert(exec_task_critical(p, ar + n / 2));
		prog_free(p);
	}
}

Test(exec, worked_example_of_the_critical_path_rule)
{
	/* The example at the top of src/engine/exec_path.c. */
	struct prog *p = prog_new(2, 2);
	/* 2e6 B / 1e12 B/s = 2 us for the transfer. */
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t pair[2] = { 0, 1 };
	struct exec_result r;
	task_id f0 = ex_task(p, 0, 0, 3, "F0", TASK_COMPUTE);
	task_id g = ex_task(p, 1, 0, 1, "G", TASK_COMPUTE);
	task_id h = ex_task(p, 1, 0, 1, "H", TASK_COMPUTE);
	task_id f1 = ex_task(p, 1, 0, 4, "F1", TASK_COMPUTE);
	task_id s = ex_coll(p, COLL_SENDRECV, pair, 2, 1, 2e6, "S");

	prog_dep(p, f0, s);
	prog_dep(p, f0, h);	/* puts H at [3,4) */
	prog_dep(p, s + 1, f1);
	r = ex_run(p, &m);
	/* F0 [0,3), S [3,5), G [0,1), H [3,4), F1 [5,9): step 9 us on
	 * rank 1. Path F0 -> S1 -> F1; rank 1 computed G, H and F1 for
	 * 1 + 1 + 4 = 6 us; F0's 3 us less G's 1 is bubble 2 us; S's 2 us
	 * less H's 1 is exposed comm 1 us. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, h)), 3000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, f1)), 5000);
	cr_assert_eq(r.final_rank, 1);
	cr_assert_eq(ex_ns(r.step_s), 9000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 6000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_BUBBLE]), 2000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 1000);
	cr_assert(exec_task_critical(p, f0));
	cr_assert(exec_task_critical(p, s + 1));
	cr_assert(exec_task_critical(p, f1));
	cr_assert_not(exec_task_critical(p, g));
	cr_assert_not(exec_task_critical(p, h));
	cr_assert_not(exec_task_critical(p, s));
	prog_free(p);
}

Test(exec, coll_overlap_is_the_first_members_own_ranks_compute)
{
	/* Rank 0 computes A [0,4) then B [4,5) on stream 0; on stream 1
	 * three collectives of 2e6 B at 1e12 B/s = 2 us each: C over
	 * {0, 1}, D over {1, 0} (first member on rank 1), E over {0, 1}
	 * after A. C [0,2), D [2,4), E [4,6). Rank 1 computes nothing. */
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t fwd[2] = { 0, 1 }, rev[2] = { 1, 0 };
	double ovl[3] = { -1, -1, -1 };
	task_id a = ex_task(p, 0, 0, 4, "A", TASK_COMPUTE);
	task_id e;

	ex_task(p, 0, 0, 1, "B", TASK_COMPUTE);
	ex_coll(p, COLL_ALLREDUCE, fwd, 2, 1, 2e6, "C");
	ex_coll(p, COLL_ALLREDUCE, rev, 2, 1, 2e6, "D");
	e = ex_coll(p, COLL_ALLREDUCE, fwd, 2, 1, 2e6, "E");
	prog_dep(p, a, e);
	ex_run(p, &m);
	cr_assert_eq(prog_colls(p), 3);
	cr_assert_eq(exec_coll_overlap(p, ovl), 0);
	/* C: A covers all of [0,2): 2 us. D: its first member's rank 1
	 * computed nothing in [2,4), though rank 0 ran A: 0. E [4,6):
	 * B [4,5) on rank 0: 1 us. */
	cr_assert_eq(ex_ns(ovl[0]), 2000);
	cr_assert_eq(ex_ns(ovl[1]), 0);
	cr_assert_eq(ex_ns(ovl[2]), 1000);
	prog_free(p);
}

Test(exec, collective_descriptor_is_copied)
{
	struct prog *p = prog_new(2, 1);
	uint32_t ranks[2] = { 0, 1 };
	uint32_t gpus[2] = { 8, 9 };
	double a2a[4] = { 0, 1, 2, 0 };
	struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = 3, .gpus = gpus,
			       .ngpus = 2, .a2a_B = a2a, .algo = -1,
			       .proto = -1, .replicas = 4 };
	struct task_info in = ex_info("a2a", TASK_COMM);
	task_id t = prog_coll(p, ranks, 2, 0, &c, &in);
	const struct coll_desc *got;

	/* The caller's arrays may change or die after prog_coll. */
	gpus[0] = 99;
	a2a[1] = 99;
	got = exec_task_coll(p, t + 1);
	cr_assert_eq(got->gpus[0], 8);
	cr_assert_eq(got->gpus[1], 9);
	cr_assert_eq(got->a2a_B[1], 1);
	cr_assert_eq(got->a2a_B[2], 2);
	cr_assert_eq(got->replicas, 4);
	/* A plain task belongs to no collective. */
	cr_assert_null(exec_task_coll(p, ex_task(p, 0, 0, 1, "x", TASK_OTHER)));
	prog_free(p);
}

Test(exec, equal_matrices_are_stored_once)
{
	struct prog *p = prog_new(2, 1);
	uint32_t ranks[2] = { 0, 1 }, gpus[2] = { 8, 9 };
	double m1[4] = { 0, 1, 2, 0 }, m2[4] = { 0, 1, 2, 0 };
	double m3[4] = { 0, 1, 3, 0 };
	struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = 3, .gpus = gpus,
			       .ngpus = 2, .a2a_B = m1, .algo = -1,
			       .proto = -1, .replicas = 1 };
	struct task_info in = ex_info("a2a", TASK_COMM);
	task_id a, b, d;

	/* An uneven all-to-all issued per layer and microbatch: equal
	 * matrices in other buffers share the program's one copy (and so
	 * one descriptor), a matrix differing in one peer's size does not. */
	a = prog_coll(p, ranks, 2, 0, &c, &in);
	c.a2a_B = m2;
	b = prog_coll(p, ranks, 2, 0, &c, &in);
	c.a2a_B = m3;
	d = prog_coll(p, ranks, 2, 0, &c, &in);
	cr_assert_eq(exec_task_coll(p, a)->a2a_B, exec_task_coll(p, b)->a2a_B);
	cr_assert_eq(exec_task_coll(p, a), exec_task_coll(p, b));
	cr_assert_neq(exec_task_coll(p, a)->a2a_B, exec_task_coll(p, d)->a2a_B);
	cr_assert_eq(exec_task_coll(p, d)->a2a_B[2], 3);
	cr_assert_eq(exec_task_coll(p, a)->a2a_B[2], 2);
	prog_free(p);
}

Test(exec, equal_collectives_share_a_descriptor_not_an_id)
{
	struct prog *p = prog_new(2, 1);
	static const uint32_t ranks[2] = { 0, 1 };
	task_id a, b, c;

	/* Two calls of the same all-reduce, then one of another size: the
	 * first two share one stored descriptor, every call has its own id,
	 * and the ids of one call's members agree. */
	a = ex_coll(p, COLL_ALLREDUCE, ranks, 2, 0, 1e6, "ar");
	b = ex_coll(p, COLL_ALLREDUCE, ranks, 2, 0, 1e6, "ar");
	c = ex_coll(p, COLL_ALLREDUCE, ranks, 2, 0, 2e6, "ar");
	cr_assert_eq(exec_task_coll(p, a), exec_task_coll(p, b));
	cr_assert_neq(exec_task_coll(p, a), exec_task_coll(p, c));
	cr_assert_eq(exec_task_coll(p, c)->bytes, 2e6);
	cr_assert_eq(exec_task_coll_id(p, a), exec_task_coll_id(p, a + 1));
	cr_assert_neq(exec_task_coll_id(p, a + 1), exec_task_coll_id(p, b));
	cr_assert_neq(exec_task_coll_id(p, b), exec_task_coll_id(p, c));
	cr_assert_eq(exec_task_coll_id(p, ex_task(p, 0, 0, 1, "x", TASK_OTHER)),
		     UINT32_MAX);
	prog_free(p);
}

Test(exec, names_are_shared_and_infos_read_back)
{
	struct prog *p = prog_new(2, 1);
	char buf[16];
	const char *a, *b;
	struct task_info in, ix, iy;
	task_id x, y, t[6];
	int i;

	strcpy(buf, "qkv_fwd");
	a = prog_intern(p, buf);
	strcpy(buf, "other");
	b = prog_intern(p, "qkv_fwd");
	cr_assert_eq(a, b, "one copy per distinct string");
	cr_assert_str_eq(a, "qkv_fwd");
	x = ex_task(p, 0, 0, 1, a, TASK_COMPUTE);
	y = ex_task(p, 1, 0, 1, a, TASK_COMPUTE);
	exec_task_info(p, x, &ix);
	exec_task_info(p, y, &iy);
	cr_assert_eq(ix.name, iy.name);
	cr_assert_eq(iy.cat, TASK_COMPUTE);
	cr_assert_eq(iy.layer, -1);
	cr_assert_eq(iy.microbatch, -1);
	/* Layers and microbatches are stored as runs of equal pairs: tasks
	 * alternating between two pairs, and runs of one, read back as
	 * added. */
	for (i = 0; i < 6; i++) {
		in = (struct task_info){ "gemm", TASK_COMPUTE, i / 2 % 2, 7 + i,
					(i % 3) ? TASK_PHASE_FWD : TASK_PHASE_BWD };
		t[i] = prog_task(p, (uint32_t)i % 2, 0, 1e-6, &in);
	}
	for (i = 0; i < 6; i++) {
		exec_task_info(p, t[i], &in);
		cr_assert_str_eq(in.name, "gemm");
		cr_assert_eq(in.layer, i / 2 % 2);
		cr_assert_eq(in.microbatch, 7 + i);
		/* The phase is kept with the pair (i % 3: 0 for tasks 0 and
		 * 3, the backward ones). */
		cr_assert_eq(in.phase, (i % 3) ? TASK_PHASE_FWD : TASK_PHASE_BWD);
	}
	exec_task_info(p, y, &iy);
	cr_assert_eq(iy.layer, -1, "an earlier run is unchanged");
	prog_free(p);
}

Test(exec, overlap_exposes_only_the_uncovered_comm)
{
	struct prog *p = prog_new(1, 2);
	/* A 6e6 B all-reduce at 1e12 B/s, no latency: 6 us. */
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	uint32_t rank0 = 0;
	task_id f1 = ex_task(p, 0, 0, 4, "f1", TASK_COMPUTE);
	task_id f2 = ex_task(p, 0, 0, 4, "f2", TASK_COMPUTE);
	task_id opt = ex_task(p, 0, 0, 1, "opt", TASK_OPTIMIZER);
	task_id ar = ex_coll(p, COLL_ALLREDUCE, &rank0, 1, 1, 6e6, "ar");

	prog_dep(p, f1, ar);
	prog_dep(p, ar, opt);
	r = ex_run(p, &m);
	/* f1 [0,4), f2 [4,8), ar [4,10) beside f2, opt [10,11).
	 * step = 4 + max(4, 6) + 1 = 11 us. Path f1 -> ar -> opt; f2
	 * covers 4 of ar's 6 us: compute 4 + 4 = 8, exposed comm
	 * 6 - 4 = 2, optimizer 1; 8 + 2 + 1 = 11. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, opt)), 10000);
	cr_assert_eq(ex_ns(r.step_s), 11000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 8000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 2000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_OPTIMIZER]), 1000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_BUBBLE]), 0);
	cr_assert(exec_task_critical(p, ar));
	cr_assert_not(exec_task_critical(p, f2));
	prog_free(p);
}

Test(exec, hidden_comm_is_not_exposed)
{
	struct prog *p = prog_new(1, 2);
	/* 3e6 B at 1e12 B/s: 3 us. */
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	uint32_t rank0 = 0;
	task_id f1 = ex_task(p, 0, 0, 4, "f1", TASK_COMPUTE);
	task_id opt, ar;

	ex_task(p, 0, 0, 4, "f2", TASK_COMPUTE);
	opt = ex_task(p, 0, 0, 1, "opt", TASK_OPTIMIZER);
	ar = ex_coll(p, COLL_ALLREDUCE, &rank0, 1, 1, 3e6, "ar");
	prog_dep(p, f1, ar);
	prog_dep(p, ar, opt);
	r = ex_run(p, &m);
	/* ar [4,7) ends inside f2 [4,8): step 4 + 4 + 1 = 9 us, compute 8,
	 * optimizer 1, nothing exposed. */
	cr_assert_eq(ex_ns(r.step_s), 9000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 8000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 0);
	cr_assert_eq(ex_ns(r.part_s[EXEC_OPTIMIZER]), 1000);
	prog_free(p);
}

/*
 * A host-thread task (category other, its own stream) on the path counts
 * only where the final rank was not computing: that part is other_s and
 * other_by_stream_s of its stream (the step's host.critical_s); its whole
 * duration was reported before while the summary said it was in other_s.
 * One rank: f0 [0,3) on the compute stream, the host's h [0,5) on stream
 * 1, f1 [5,7) after h. Step 7 us; path h -> f1 (h ready at 0: no cause);
 * compute f0 3 + f1 2 = 5, h's segment [0,5) less f0's 3 = 2 us other,
 * all of it on stream 1.
 */
Test(exec, other_on_the_path_by_stream_is_its_uncovered_part)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	task_id h, f1;

	ex_task(p, 0, 0, 3, "f0", TASK_COMPUTE);
	h = ex_task(p, 0, 1, 5, "issue", TASK_OTHER);
	f1 = ex_task(p, 0, 0, 2, "f1", TASK_COMPUTE);
	prog_dep(p, h, f1);
	r = ex_run(p, &m);
	cr_assert_eq(ex_ns(r.step_s), 7000);
	cr_assert(exec_task_critical(p, h));
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 5000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_OTHER]), 2000);
	cr_assert_eq(ex_ns(r.other_by_stream_s[1]), 2000);
	cr_assert_eq(ex_ns(r.other_by_stream_s[0]), 0);
	prog_free(p);
}

/* ---- failures ---- */

Test(exec, dependency_cycle_is_reported)
{
	struct prog *p = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	task_id a = ex_task(p, 0, 0, 1, "a", TASK_COMPUTE);
	task_id b = ex_task(p, 1, 0, 1, "b", TASK_COMPUTE);
	const char *why;

	prog_dep(p, a, b);
	prog_dep(p, b, a);
	why = ex_run_fail(p, &m);
	cr_assert(strstr(why, "cycle"), "got: %s", why);
	cr_assert(strstr(why, "'a'"), "got: %s", why);
	prog_free(p);
}

Test(exec, unreachable_rendezvous_is_reported)
{
	struct prog *p = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t ranks[2] = { 0, 1 };
	task_id x = ex_coll(p, COLL_ALLREDUCE, ranks, 2, 0, 8, "x");
	task_id y = ex_coll(p, COLL_ALLGATHER, ranks, 2, 0, 8, "y");
	const char *why;

	/* Rank 1 must finish y before x, but its stream has x before y:
	 * rank 0 reaches x, rank 1 never does. */
	prog_dep(p, y + 1, x + 1);
	why = ex_run_fail(p, &m);
	cr_assert(strstr(why, "1 of 2 members reached collective 'x'"),
		  "got: %s", why);
	cr_assert(strstr(why, "rank 1"), "got: %s", why);
	cr_assert_eq(m.started, 0);
	prog_free(p);
}

Test(exec, backend_that_never_completes_is_reported)
{
	struct prog *p = prog_new(2, 1);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t ranks[2] = { 0, 1 };
	const char *why;

	ex_coll(p, COLL_ALLREDUCE, ranks, 2, 0, 8, "x");
	m.never_done = 1;
	why = ex_run_fail(p, &m);
	cr_assert(strstr(why, "never completed"), "got: %s", why);
	prog_free(p);
}

Test(exec, bad_rank_is_a_bug, .signal = SIGABRT)
{
	struct prog *p = prog_new(2, 1);

	ex_task(p, 2, 0, 1, "a", TASK_COMPUTE);
}

