/*
 * test_exec_pipe.c - step programs on the engine: pipelines (GPipe and
 * 1F1B bubbles), compute slowed by the SM share of overlapped
 * collectives, and the Chrome trace (moved from test_exec.c, which kept
 * streams, dependencies, collectives and failures).
 *
 * Collectives are timed by exec_mock.h's backend: a collective takes
 * alpha + bytes / beta, scheduled with sim_after. Times below are in us;
 * the engine works in integer ns, so every expectation is exact.
 */
#include <criterion/criterion.h>
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "base/mem.h"
#include "exec_mock.h"

/* ---- pipelines ---- */

/*
 * A pipeline of p stages (rank s = stage s), m microbatches, forward tf
 * and backward tb us per stage. Stream 0 computes; activations and
 * gradients move by send/recv collectives of 0 bytes (zero time with an
 * alpha = 0 mock). The pair s -> s + 1 uses stream 1 + s % 2 forward and
 * 3 + s % 2 backward, so a rank's sends and receives never queue behind
 * each other. order[s] lists stage s's compute as +i + 1 (forward of i)
 * or -(i + 1) (backward of i).
 */
struct pipe {
	uint32_t p, m;
	task_id f[8][16], b[8][16];	/* [stage][microbatch] */
};

static void pipe_compute(struct prog *pr, struct pipe *pp, uint32_t s,
			 const int *order, double tf, double tb)
{
	uint32_t k;

	for (k = 0; k < 2 * pp->m; k++) {
		int o = order[k];

		if (o > 0)
			pp->f[s][o - 1] = ex_task(pr, s, 0, tf, "fwd",
					       TASK_COMPUTE);
		else
			pp->b[s][-o - 1] = ex_task(pr, s, 0, tb, "bwd",
						TASK_COMPUTE);
	}
}

static void pipe_p2p(struct prog *pr, struct pipe *pp)
{
	uint32_t s, i;

	for (i = 0; i < pp->m; i++) {
		for (s = 0; s + 1 < pp->p; s++) {
			uint32_t fw[2] = { s, s + 1 }, bw[2] = { s + 1, s };
			task_id x = ex_coll(pr, COLL_SENDRECV, fw, 2, 1 + s % 2, 0,
					 "send_act");
			task_id y = ex_coll(pr, COLL_SENDRECV, bw, 2, 3 + s % 2, 0,
					 "send_grad");

			/* member x on stage s sends F(s,i) to x + 1 on s + 1 */
			prog_dep(pr, pp->f[s][i], x);
			prog_dep(pr, x + 1, pp->f[s + 1][i]);
			prog_dep(pr, pp->b[s + 1][i], y);
			prog_dep(pr, y + 1, pp->b[s][i]);
		}
		for (s = 0; s < pp->p; s++)
			prog_dep(pr, pp->f[s][i], pp->b[s][i]);
	}
}

/* order for stage s: GPipe = all forwards, then all backwards. */
static void gpipe_order(uint32_t m, int *order)
{
	uint32_t i;

	for (i = 0; i < m; i++) {
		order[i] = (int)i + 1;
		order[m + i] = -(int)i - 1;
	}
}

/* 1F1B for stage s of p: w = min(p - 1 - s, m) warm-up forwards, then
 * alternate one forward, one backward, then the remaining backwards. */
static void one_f_one_b_order(uint32_t p, uint32_t m, uint32_t s, int *order)
{
	uint32_t w = p - 1 - s < m ? p - 1 - s : m, k = 0, f = 0, b = 0;

	while (f < w)
		order[k++] = (int)++f;
	while (f < m) {
		order[k++] = (int)++f;
		order[k++] = -(int)++b;
	}
	while (b < m)
		order[k++] = -(int)++b;
}

static struct prog *build_pipe(struct pipe *pp, uint32_t p, uint32_t m,
			       int one_f_one_b, double tf, double tb)
{
	struct prog *pr = prog_new(p, 5);
	int order[32];
	uint32_t s;

	cr_assert_leq(p, 8);
	cr_assert_leq(m, 16);
	pp->p = p;
	pp->m = m;
	prog_name_stream(pr, 0, "compute");
	for (s = 0; s < p; s++) {
		if (one_f_one_b)
			one_f_one_b_order(p, m, s, order);
		else
			gpipe_order(m, order);
		pipe_compute(pr, pp, s, order, tf, tb);
	}
	pipe_p2p(pr, pp);
	return pr;
}

/* A collective over ranks that holds share of each member's compute. */
static task_id coll_sm(struct prog *p, const uint32_t *ranks, uint32_t n,
		       uint32_t stream, double bytes, double share)
{
	struct coll_desc c = { .op = COLL_ALLREDUCE, .bytes = bytes,
			       .gpus = ranks, .ngpus = n, .algo = -1,
			       .proto = -1, .sm_share = share };
	struct task_info in = ex_info("ar", TASK_COMM);

	return prog_coll(p, ranks, n, stream, &c, &in);
}

Test(exec, overlapped_comm_slows_compute_by_its_share)
{
	struct prog *p = prog_new(1, 2);
	/* 4e6 B at 1e12 B/s: a 4 us all-reduce holding half the GPU. */
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r;
	uint32_t rank0 = 0;
	task_id f = ex_task(p, 0, 0, 10, "f", TASK_COMPUTE);
	task_id g = ex_task(p, 0, 0, 3, "g", TASK_COMPUTE);
	task_id ar = coll_sm(p, &rank0, 1, 1, 4e6, 0.5);

	r = ex_run(p, &m);
	/* f starts with ar at 0: for 4 us it runs at 1 - 0.5, doing 2 us
	 * of its 10; the other 8 run at full speed after ar ends: f ends at
	 * 4 + 8 = 12 us. g follows at full speed: [12, 15). */
	cr_assert_eq(ex_ns(exec_task_end_s(p, ar)), 4000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, f)), 12000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, g)), 12000);
	cr_assert_eq(ex_ns(r.step_s), 15000);
	/* The stretch is compute time: 12 + 3 = 15, nothing exposed. */
	cr_assert_eq(ex_ns(r.part_s[EXEC_COMPUTE]), 15000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 0);
	prog_free(p);
}

/* |ns(s) - want| <= 1: a rate that is not a binary fraction rounds
 * its end by up to a ns. */
static void assert_ns_near(double s, long long want)
{
	long long got = ex_ns(s);

	cr_assert(got >= want - 1 && got <= want + 1, "got %lld ns, want %lld",
		  got, want);
}

/* Run p (no latency, 1 TB/s): collective ar starts at start_ns without
 * waiting for a persistent GEMM (sm_wait 0), and task t ends at end_ns,
 * within tol_ns (1: a rate that is not a binary fraction rounds its end
 * by up to a ns; 0: exactly). Frees p. */
static void assert_starts_unwaited(struct prog *p, task_id ar,
				   long long start_ns, task_id t,
				   long long end_ns, long long tol_ns)
{
	struct mock m = ex_mock_new(0, 1e12);
	long long got;

	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_start_s(p, ar)), start_ns);
	cr_assert_eq(ex_ns(exec_task_sm_wait_s(p, ar)), 0);
	got = ex_ns(exec_task_end_s(p, t));
	cr_assert(got >= end_ns - tol_ns && got <= end_ns + tol_ns,
		  "got %lld ns, want %lld", got, end_ns);
	prog_free(p);
}

Test(exec, persistent_gemm_beside_held_units_runs_its_owned_tiles_late)
{
	struct prog *p = prog_new(1, 4);
	struct mock m = ex_mock_new(0, 1e12);
	struct task_info fi = ex_info("gemm_few_tiles", TASK_COMPUTE);
	struct task_info gi = ex_info("gemm_many_tiles", TASK_COMPUTE);
	uint32_t rank0 = 0;
	/* The all-reduce first (the lowest id starts first at 0): the GEMMs
	 * are launched beside a resident collective (launch order). */
	task_id ar = coll_sm(p, &rank0, 1, 3, 4e6, 0.25);
	task_id plain = ex_task(p, 0, 0, 10, "plain", TASK_COMPUTE);
	task_id few = prog_task_owned(p, 0, 1, 10 * US, &fi, 1.0);
	task_id many = prog_task_owned(p, 0, 2, 10 * US, &gi, 0.5);

	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, ar)), 4000);
	/* A 4 us all-reduce holds S = 0.25 of the GPU; three 10 us compute
	 * tasks run beside it.
	 * plain (owned 0): rate 1 - S = 0.75, 3 us done by 4 us, 7 left at
	 * full speed: ends at 11 us (the law before).
	 * few (owned h = 1: every tile owned, n <= c): f = 1/(1-S) +
	 * 1 x (2 - 1/(1-S)) = 2, rate 0.5: 2 us done, ends at 4 + 8 = 12 us.
	 * many (h = 0.5): f = 4/3 + 0.5 (2 - 4/3) = 5/3, rate 0.6: 2.4 us
	 * done, ends at 4 + 7.6 = 11.6 us. */
	cr_assert_eq(ex_ns(exec_task_end_s(p, plain)), 11000);
	assert_ns_near(exec_task_end_s(p, few), 12000);
	assert_ns_near(exec_task_end_s(p, many), 11600);
	prog_free(p);
}

Test(exec, persistent_gemm_law_is_the_share_law_from_half_the_units)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	struct task_info fi = ex_info("gemm", TASK_COMPUTE);
	uint32_t rank0 = 0;
	task_id f;

	/* S = 0.5: 1/(1-S) = 2 already, max(0, 2 - 2) = 0: rate 0.5 as the
	 * share law, whatever h: 2 us of 10 done by 4 us, ends at 12 us
	 * (the collective first: resident when the GEMM is launched). */
	coll_sm(p, &rank0, 1, 1, 4e6, 0.5);
	f = prog_task_owned(p, 0, 0, 10 * US, &fi, 1.0);
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, f)), 12000);
	prog_free(p);
}

Test(exec, persistent_gemm_launched_on_the_margin_keeps_the_share_law)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	struct task_info fi = ex_info("gemm", TASK_COMPUTE);
	struct task_info ci = ex_info("rs", TASK_COMM);
	uint32_t rank0 = 0;
	struct coll_desc c = { .op = COLL_ALLREDUCE, .bytes = 4e6,
			       .gpus = &rank0, .ngpus = 1, .algo = -1,
			       .proto = -1, .sm_share = 0.25, .sm_margin = 1 };
	task_id f = prog_task_owned(p, 0, 0, 10 * US, &fi, 1.0);

	/* A 4 us collective holding S = 0.25 whose beside-GEMMs were
	 * launched on the other units (sm_margin): every CTA starts, the
	 * share law: rate 0.75, 3 us done by 4 us, ends at 11 us (12 us
	 * without the margin, the test above). */
	prog_coll(p, &rank0, 1, 1, &c, &ci);
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, f)), 11000);
	prog_free(p);
}

Test(exec, owned_slowdown_is_the_law_of_exec_h)
{
	/* f = 1/(1-S) + h max(0, 2 - 1/(1-S)):
	 * S 0: 1 whatever h; S 0.25, h 0: 4/3 (the share law); h 1: 4/3 +
	 * 2/3 = 2; h 0.5: 4/3 + 1/3 = 5/3; S 0.5: 2 + 0 = 2; S 0.75: 4
	 * (past two rounds: the share law); S 1: no progress, +inf. */
	cr_assert_float_eq(exec_owned_slowdown(0, 1), 1, 1e-15);
	cr_assert_float_eq(exec_owned_slowdown(0.25, 0), 4.0 / 3, 1e-15);
	cr_assert_float_eq(exec_owned_slowdown(0.25, 1), 2, 1e-15);
	cr_assert_float_eq(exec_owned_slowdown(0.25, 0.5), 5.0 / 3, 1e-15);
	cr_assert_float_eq(exec_owned_slowdown(0.5, 1), 2, 1e-15);
	cr_assert_float_eq(exec_owned_slowdown(0.75, 1), 4, 1e-15);
	cr_assert(isinf(exec_owned_slowdown(1, 1)));
}

Test(exec, collective_ready_beside_a_persistent_gemm_waits_for_its_end)
{
	struct prog *p = prog_new(1, 3);
	struct mock m = ex_mock_new(0, 1e12);
	struct task_info gi = ex_info("gemm", TASK_COMPUTE);
	uint32_t rank0 = 0;
	task_id g1 = prog_task_owned(p, 0, 0, 10 * US, &gi, 1.0);
	task_id g2 = prog_task_owned(p, 0, 0, 10 * US, &gi, 1.0);
	task_id x = ex_task(p, 0, 2, 1, "x", TASK_OTHER);
	task_id ar = coll_sm(p, &rank0, 1, 1, 4e6, 0.25);
	struct exec_result r;

	prog_dep(p, x, ar);
	r = ex_run(p, &m);
	/* g1 (10 us, every tile owned) is launched at 0; the 4 us all-
	 * reduce holding S = 0.25 is ready at 1 us (after x) but g1's CTAs
	 * hold every SM: it starts when g1 ends, at 10 us (waited 9 us),
	 * ends at 14.
	 * g1 ran alone: [0, 10). g2 starts at 10 beside it: f = 2, rate
	 * 0.5, 2 us done by 14, 8 left at full speed: ends at 22 us.
	 * (Before launch order: g1 slowed from 0, 2 us by 4, ends at 12;
	 * the all-reduce [0, 4); g2 [12, 22).) */
	cr_assert_eq(ex_ns(exec_task_end_s(p, g1)), 10000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, ar)), 10000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, ar)), 14000);
	cr_assert_eq(ex_ns(exec_task_sm_wait_s(p, ar)), 9000);
	cr_assert_eq(ex_ns(exec_task_sm_wait_s(p, g1)), 0);
	assert_ns_near(exec_task_end_s(p, g2), 22000);
	assert_ns_near(r.step_s, 22000);
	prog_free(p);
}

Test(exec, collective_ready_with_a_persistent_gemm_launch_goes_first)
{
	struct prog *p = prog_new(1, 2);
	struct task_info gi = ex_info("gemm", TASK_COMPUTE);
	uint32_t rank0 = 0;
	task_id g = prog_task_owned(p, 0, 0, 10 * US, &gi, 1.0);
	task_id ar = coll_sm(p, &rank0, 1, 1, 4e6, 0.25);

	/* Both ready at 0 (the GEMM released first): neither was resident
	 * before the other, the all-reduce's blocks take their SMs and the
	 * GEMM starts beside it: no wait, f = 2 while it runs [0, 4): 2 us
	 * of 10 done, 8 left: ends at 12 us. */
	assert_starts_unwaited(p, ar, 0, g, 12000, 1);
}

Test(exec, member_there_before_the_gemm_does_not_wait_for_it)
{
	struct prog *p = prog_new(2, 2);
	struct task_info gi = ex_info("gemm", TASK_COMPUTE);
	uint32_t ranks[2] = { 0, 1 };
	task_id g = prog_task_owned(p, 0, 0, 10 * US, &gi, 1.0);
	task_id z = ex_task(p, 1, 1, 5, "z", TASK_OTHER);
	task_id ar = coll_sm(p, ranks, 2, 1, 4e6, 0.25);

	/* Rank 0's member arrives at 0, the instant g is launched (its
	 * kernel is there as g starts); rank 1's at 5 us, after z. At the
	 * rendezvous g runs, but it did not start before rank 0's member
	 * arrived: no wait, the all-reduce runs [5, 9). g: 5 us alone, then
	 * f = 2 (S 0.25, h 1) for 4 us: 2 us done, 3 left: ends at 12 us. */
	(void)z;
	assert_starts_unwaited(p, ar, 5000, g, 12000, 1);
}

Test(exec, collective_beside_plain_compute_starts_at_once)
{
	struct prog *p = prog_new(1, 2);
	uint32_t rank0 = 0;
	task_id f = ex_task(p, 0, 0, 10, "f", TASK_COMPUTE);
	task_id ar = coll_sm(p, &rank0, 1, 1, 4e6, 0.25);

	/* f is not a persistent GEMM (owned 0): the all-reduce starts at 0
	 * beside it; f at 0.75 for 4 us (3 us done), 7 left: ends at 11. */
	assert_starts_unwaited(p, ar, 0, f, 11000, 0);
}

Test(exec, collective_waits_only_for_gemms_started_before_it)
{
	struct prog *p = prog_new(1, 4);
	struct mock m = ex_mock_new(0, 1e12);
	struct task_info gi = ex_info("gemm", TASK_COMPUTE);
	uint32_t rank0 = 0;
	task_id g1 = prog_task_owned(p, 0, 0, 10 * US, &gi, 1.0);
	task_id x = ex_task(p, 0, 1, 1, "x", TASK_OTHER);
	task_id ar = coll_sm(p, &rank0, 1, 1, 4e6, 0.25);
	task_id y = ex_task(p, 0, 2, 2, "y", TASK_OTHER);
	task_id g3 = prog_task_owned(p, 0, 2, 20 * US, &gi, 1.0);

	/* g1 (stream 0, persistent) runs [0, 10); the all-reduce is ready
	 * at 1 us (after x) and waits for g1, launched before it; g3 on a
	 * third stream is launched at 2 us, after the all-reduce's kernel
	 * (exec.h: a GEMM launched after the member's arrival started beside
	 * it), so the all-reduce starts when g1 ends, at 10 us (waited 9
	 * us), not when g3 does. */
	(void)x;
	(void)y;
	(void)g3;
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, g1)), 10000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, ar)), 10000,
		     "started at %lld ns", ex_ns(exec_task_start_s(p, ar)));
	cr_assert_eq(ex_ns(exec_task_sm_wait_s(p, ar)), 9000);
	prog_free(p);
}

Test(exec, collective_waits_for_the_last_member_gemm)
{
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(0, 1e12);
	struct task_info gi = ex_info("gemm", TASK_COMPUTE);
	uint32_t ranks[2] = { 0, 1 };
	task_id a0 = prog_task_owned(p, 0, 0, 10 * US, &gi, 1.0);
	task_id a1 = prog_task_owned(p, 1, 0, 6 * US, &gi, 1.0);
	task_id b1 = prog_task_owned(p, 1, 0, 10 * US, &gi, 1.0);
	task_id x = ex_task(p, 0, 1, 1, "x", TASK_OTHER);
	task_id y = ex_task(p, 1, 1, 1, "y", TASK_OTHER);
	task_id ar = coll_sm(p, ranks, 2, 1, 4e6, 0.25);
	struct exec_result r;

	(void)x;
	(void)y;
	r = ex_run(p, &m);
	/* The all-reduce over ranks 0 and 1 is ready at 1 us (x and y
	 * before its members on their streams: both arrive while the GEMMs
	 * launched at 0 run); rank 0 runs a
	 * 10 us persistent GEMM, rank 1 a 6 us one: it starts when the later
	 * ends, at 10 us, and ends at 14 (both members). On rank 1, b1
	 * starts at 6 alone (4 us done by 10), then beside the all-reduce
	 * at f = 2, rate 0.5: 2 us done by 14, 4 left: ends at 18 us. The
	 * members' cause is a0, the GEMM they waited for last. */
	cr_assert_eq(ex_ns(exec_task_end_s(p, a1)), 6000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, ar)), 10000);
	cr_assert_eq(ex_ns(exec_task_start_s(p, ar + 1)), 10000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, ar)), 14000);
	cr_assert_eq(p->state[ar + 1].cause, a0);
	assert_ns_near(exec_task_end_s(p, b1), 18000);
	assert_ns_near(r.step_s, 18000);
	prog_free(p);
}

Test(exec, concurrent_shares_add_up_to_a_stall)
{
	struct prog *p = prog_new(1, 3);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t rank0 = 0;
	task_id f = ex_task(p, 0, 0, 10, "f", TASK_COMPUTE);
	task_id a, b;

	/* Two 2 us collectives at once, shares 0.6 + 0.6 = 1.2: they hold
	 * every compute unit, so f makes no progress for 2 us, then runs its
	 * 10 us at full speed: ends at 12 us. */
	a = coll_sm(p, &rank0, 1, 1, 2e6, 0.6);
	b = coll_sm(p, &rank0, 1, 2, 2e6, 0.6);
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, a)), 2000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, b)), 2000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, f)), 12000);
	prog_free(p);
}

Test(exec, comm_and_other_tasks_are_not_slowed)
{
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t both[2] = { 0, 1 };
	task_id other = ex_task(p, 0, 0, 5, "host", TASK_OTHER);
	task_id peer = ex_task(p, 1, 0, 5, "peer", TASK_COMPUTE);

	/* A 6 us all-reduce of both ranks holding half of each GPU: the
	 * OTHER task on rank 0 is not slowed and ends at 5 us; the compute
	 * task on rank 1 runs at 0.5 until the collective ends at 6 us
	 * (3 us of its 5 done), then 2 us at full speed: ends at 8 us. */
	coll_sm(p, both, 2, 1, 6e6, 0.5);
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, other)), 5000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, peer)), 8000);
	prog_free(p);
}

/* What GPipe and 1F1B share on p = 4 stages, m = 8 microbatches, tf =
 * 2 us, tb = 4 us (each test derives it for its schedule): stage 0
 * finishes last, step (m + p - 1)(tf + tb) = 66 us, compute m (tf + tb)
 * = 48 us, bubble (p - 1)(tf + tb) = 18 us. */
static void assert_gpipe_bubble_4x8(const struct exec_result *r)
{
	cr_assert_eq(r->final_rank, 0);
	cr_assert_eq(ex_ns(r->step_s), 66000);
	cr_assert_eq(ex_ns(r->part_s[EXEC_COMPUTE]), 48000);
	cr_assert_eq(ex_ns(r->part_s[EXEC_BUBBLE]), 18000);
}

Test(exec, gpipe_bubble)
{
	struct pipe pp;
	/* p = 4 stages, m = 8 microbatches, tf = 2 us, tb = 4 us. */
	struct prog *p = build_pipe(&pp, 4, 8, 0, 2, 4);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r = ex_run(p, &m);

	/* GPipe: the last forward ends at (m + p - 1) tf, the backwards
	 * drain in (m + p - 1) tb: step = (8 + 4 - 1)(2 + 4) = 66 us.
	 * Stage 0 finishes last and computes m (tf + tb) = 48 us; it waits
	 * (p - 1)(tf + tb) = 18 us: bubble fraction 18 / 66 = (p - 1) /
	 * (m + p - 1) = 3 / 11. Transfers take no time: no exposed comm. */
	assert_gpipe_bubble_4x8(&r);
	cr_assert_eq(ex_ns(r.part_s[EXEC_EXPOSED_COMM]), 0);
	cr_assert_float_eq(r.part_s[EXEC_BUBBLE] / r.step_s, 3.0 / 11.0,
			   1e-12);
	ex_assert_parts_sum(&r);
	/* The last forward of the last stage ends at (m + p - 1) tf = 22. */
	cr_assert_eq(ex_ns(exec_task_end_s(p, pp.f[3][7])), 22000);
	/* 2 (p - 1) m = 48 transfers. */
	cr_assert_eq(m.started, 48);
	prog_free(p);
}

Test(exec, gpipe_bubble_shrinks_with_more_microbatches)
{
	struct pipe pp;
	/* p = 8, m = 16, tf = tb = 1 us: step (16 + 7)(2) = 46 us, bubble
	 * 7 * 2 = 14 us = 7 / 23 of the step. */
	struct prog *p = build_pipe(&pp, 8, 16, 0, 1, 1);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r = ex_run(p, &m);

	cr_assert_eq(ex_ns(r.step_s), 46000);
	cr_assert_eq(ex_ns(r.part_s[EXEC_BUBBLE]), 14000);
	cr_assert_float_eq(r.part_s[EXEC_BUBBLE] / r.step_s, 7.0 / 23.0,
			   1e-12);
	prog_free(p);
}

Test(exec, one_f_one_b_has_the_gpipe_bubble)
{
	struct pipe pp;
	/* p = 4, m = 8, tf = 2 us, tb = 4 us. */
	struct prog *p = build_pipe(&pp, 4, 8, 1, 2, 4);
	struct mock m = ex_mock_new(0, 1e12);
	struct exec_result r = ex_run(p, &m);

	/* 1F1B reorders the work but not the bubble: stage 0 still waits
	 * (p - 1) tf for its first gradient path to fill and (p - 1) tb to
	 * drain, so step = (m + p - 1)(tf + tb) = 66 us, bubble 18 us,
	 * compute m (tf + tb) = 48 us. */
	assert_gpipe_bubble_4x8(&r);
	/* Stage 3 (last) runs F(3,0) at [3 tf, 4 tf) = [6,8) and its
	 * backward right after: [8,12). */
	cr_assert_eq(ex_ns(exec_task_start_s(p, pp.b[3][0])), 8000);
	/* The first gradient reaches stage 0 after F(0..3, 0), p tf = 8 us,
	 * and B(3..1, 0), (p - 1) tb = 12 us: B(0,0) starts at 20 us. */
	cr_assert_eq(ex_ns(exec_task_start_s(p, pp.b[0][0])), 20000);
	prog_free(p);
}

/* ---- trace ---- */

static char *trace_of(struct prog *p, size_t *len,
		      void (*label)(uint32_t, char *, size_t, void *))
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	cr_assert_not_null(f);
	cr_assert_eq(exec_write_trace(p, f, label, NULL, NULL), 0);
	fclose(f);
	return buf;
}

static void stage_label(uint32_t rank, char *buf, size_t len, void *arg)
{
	(void)arg;
	snprintf(buf, len, "pp%u \"x\"", rank);
}

Test(exec, trace_is_chrome_json)
{
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t ranks[2] = { 0, 1 };
	struct task_info in = { "qkv_fwd", TASK_COMPUTE, 3, 1, TASK_PHASE_FWD };
	size_t len;
	char *txt;
	cJSON *root, *ev, *e;
	int nx = 0;

	prog_name_stream(p, 0, "compute");
	prog_name_stream(p, 1, "comm");
	prog_task(p, 0, 0, 1.5e-6 + 1e-9, &in);
	ex_coll(p, COLL_ALLREDUCE, ranks, 2, 1, 2e6, "tp_ar");
	ex_run(p, &m);
	txt = trace_of(p, &len, stage_label);
	root = cJSON_Parse(txt);
	cr_assert_not_null(root, "not JSON:\n%s", txt);
	ev = cJSON_GetObjectItem(root, "traceEvents");
	cr_assert(cJSON_IsArray(ev));
	cJSON_ArrayForEach(e, ev) {
		const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;

		if (strcmp(ph, "X") == 0)
			nx++;
	}
	/* One complete event per task: 1 + 2 all-reduce members; and around
	 * qkv_fwd (phase forward, microbatch 1, layer 3) its pass and layer
	 * slices, spanning exactly it: 5. */
	cr_assert_eq(nx, 5);
	cr_assert(strstr(txt, "\"ts\":0.000,\"dur\":1.501,\"name\":"
			      "\"forward mb 1\",\"cat\":\"pass\""), "%s", txt);
	cr_assert(strstr(txt, "\"ts\":0.000,\"dur\":1.501,\"name\":"
			      "\"layer 3\",\"cat\":\"layer\""), "%s", txt);
	/* 1.501 us keeps its last ns; the 2e6 B all-reduce takes 2 us. */
	cr_assert(strstr(txt, "\"ts\":0.000,\"dur\":1.501,"
			      "\"name\":\"qkv_fwd\""), "%s", txt);
	cr_assert(strstr(txt, "\"layer\":3,\"microbatch\":1"));
	cr_assert(strstr(txt, "\"op\":\"allreduce\",\"bytes\":2000000,"
			      "\"group\":2"));
	cr_assert(strstr(txt, "\"name\":\"pp1 \\\"x\\\"\""), "%s", txt);
	cr_assert(strstr(txt, "\"thread_name\",\"args\":{\"name\":\"comm\"}"));
	cJSON_Delete(root);
	free(txt);
	prog_free(p);
}

Test(exec, trace_write_error_is_reported)
{
	struct prog *p = prog_new(1, 1);
	struct mock m = ex_mock_new(0, 1e12);
	FILE *full = fopen("/dev/full", "w");

	cr_assert_not_null(full);
	ex_task(p, 0, 0, 1, "a", TASK_COMPUTE);
	ex_run(p, &m);
	/* Every write to /dev/full fails with ENOSPC. */
	cr_assert_eq(exec_write_trace(p, full, NULL, NULL, NULL), -1);
	fclose(full);
	prog_free(p);
}

Test(exec, same_program_same_trace_bytes)
{
	struct pipe pp1, pp2;
	struct prog *a = build_pipe(&pp1, 4, 8, 1, 2, 3);
	struct prog *b = build_pipe(&pp2, 4, 8, 1, 2, 3);
	struct mock m = ex_mock_new(1 * US, 1e12);
	struct exec_result ra = ex_run(a, &m), rb;
	size_t la, lb;
	char *ta, *tb;

	m.started = 0;
	rb = ex_run(b, &m);
	ta = trace_of(a, &la, NULL);
	tb = trace_of(b, &lb, NULL);
	cr_assert_eq(la, lb);
	cr_assert_eq(memcmp(ta, tb, la), 0);
	cr_assert_eq(ra.events, rb.events);
	cr_assert_eq(memcmp(ra.part_s, rb.part_s, sizeof(ra.part_s)), 0);
	free(ta);
	free(tb);
	prog_free(a);
	prog_free(b);
}

