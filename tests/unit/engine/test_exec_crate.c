/*
 * test_exec_crate.c - comm-side interference (src/engine/exec_crate.c): a
 * collective with busy_rate x progresses at x while compute runs on a
 * member rank and runs out the work it lost after the backend is done.
 *
 * Collectives are timed by exec_mock.h's backend (alpha + bytes / beta,
 * here alpha 0 and 1e12 B/s: 1e6 B a us). Times in us; the engine works
 * in integer ns, so every expectation is exact.
 */
#include <criterion/criterion.h>

#include "engine/exec.h"
#include "engine/exec_impl.h"
#include "exec_mock.h"

/* An all-to-all over ranks on stream, us long at full speed, progressing
 * at busy while compute runs on a member, holding share of the compute. */
static task_id coll_busy(struct prog *p, const uint32_t *ranks, uint32_t n,
			 uint32_t stream, double us, double busy, double share)
{
	struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = us * 1e6,
			       .gpus = ranks, .ngpus = n, .algo = -1,
			       .proto = -1, .sm_share = share,
			       .busy_rate = busy };
	struct task_info in = ex_info("a2a", TASK_COMM);

	return prog_coll(p, ranks, n, stream, &c, &in);
}

Test(exec_crate, compute_beside_a_call_stretches_it_by_the_work_it_lost)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t rank0 = 0;
	task_id host = ex_task(p, 0, 0, 2, "host", TASK_OTHER);
	task_id gemm = ex_task(p, 0, 0, 4, "gemm", TASK_COMPUTE);
	task_id a2a = coll_busy(p, &rank0, 1, 1, 10, 0.5, 0);
	struct exec_result r;

	/* The call's 10 us of work start at 0; the GEMM runs [2, 6) beside
	 * it (the host task is not compute): 4 us at rate 0.5 lose 2 us.
	 * The backend is done at 10 us with 8 us of work done; nothing
	 * computes then, so the 2 us left end the call at 12 us. The GEMM
	 * keeps full speed (share 0). */
	r = ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, host)), 2000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, gemm)), 6000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, a2a)), 12000);
	cr_assert_eq(ex_ns(r.step_s), 12000);
	prog_free(p);
}

Test(exec_crate, work_left_runs_at_the_rate_of_the_moment)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t rank0 = 0;
	task_id gemm, a2a;

	ex_task(p, 0, 0, 2, "host", TASK_OTHER);
	gemm = ex_task(p, 0, 0, 10, "gemm", TASK_COMPUTE);
	a2a = coll_busy(p, &rank0, 1, 1, 10, 0.5, 0);
	/* GEMM [2, 12): by the backend's 10 us the call lost 8 x 0.5 = 4 us.
	 * From 10 to 12 it still runs at 0.5 (1 us done, 3 left), then at
	 * full speed: ends at 15 us. */
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, gemm)), 12000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, a2a)), 15000);
	prog_free(p);
}

Test(exec_crate, without_compute_beside_it_nothing_changes)
{
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t rank0 = 0;
	task_id gemm = ex_task(p, 0, 0, 3, "gemm", TASK_COMPUTE);
	task_id a2a;

	/* The call waits for the GEMM (a dependency): [3, 13), alone. */
	a2a = coll_busy(p, &rank0, 1, 1, 10, 0.5, 0);
	prog_dep(p, gemm, a2a);
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_start_s(p, a2a)), 3000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, a2a)), 13000);
	prog_free(p);
}

Test(exec_crate, compute_on_any_member_slows_the_whole_call)
{
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(0, 1e12);
	uint32_t both[2] = { 0, 1 };
	task_id peer = ex_task(p, 1, 0, 4, "gemm", TASK_COMPUTE);
	task_id a2a = coll_busy(p, both, 2, 1, 10, 0.25, 0.5);

	/* Only rank 1 computes. Its GEMM also loses the call's share 0.5
	 * (the compute-side model): 4 us of work at 0.5 take [0, 8). The
	 * call runs at 0.25 beside it: 8 x 0.75 = 6 us lost by the
	 * backend's 10 us, run out at full speed: ends at 16 us on both
	 * ranks. */
	ex_run(p, &m);
	cr_assert_eq(ex_ns(exec_task_end_s(p, peer)), 8000);
	cr_assert_eq(ex_ns(exec_task_end_s(p, a2a)), 16000);
	prog_free(p);
}
