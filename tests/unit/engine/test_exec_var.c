/*
 * test_exec_var.c - step programs on the engine, continued: allocation
 * failure, the engine's horizon, and variability (the synchronization
 * tax: a collective waits for its expected slowest member). The mock
 * backend and helpers are exec_mock.h's.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/exec.h"
#include "base/mem.h"
#include "exec_mock.h"

/* ---- allocation failure ---- */

/* A small program touching every allocation path: interned names, infos,
 * collectives with a2a arrays, edges, a run and its path. */
static struct prog *build_small(void)
{
	struct prog *p = prog_new(3, 2);
	uint32_t ranks[3] = { 0, 1, 2 };
	double a2a[9] = { 0 };
	struct coll_desc c = { .op = COLL_ALLTOALL, .bytes = 1e6, .gpus = ranks,
			       .ngpus = 3, .a2a_B = a2a, .algo = -1,
			       .proto = -1 };
	struct task_info in = { NULL, TASK_COMM, 0, 0, TASK_PHASE_NONE };
	task_id w[3], x;
	uint32_t i;

	if (!p)
		return NULL;
	prog_name_stream(p, 1, "comm");
	in.name = prog_intern(p, "a2a");
	if (!in.name)
		in.name = "a2a";
	for (i = 0; i < 3; i++)
		w[i] = ex_task(p, i, 0, i + 1, "work", TASK_COMPUTE);
	x = prog_coll(p, ranks, 3, 1, &c, &in);
	for (i = 0; i < 3 && x != TASK_NONE; i++) {
		prog_dep(p, w[i], x + i);
		prog_dep(p, x + i, ex_task(p, i, 0, 1, "after", TASK_COMPUTE));
	}
	return p;
}

Test(exec, allocation_failure_sweep)
{
	long n, calls = 0;

	/* Fail the n-th allocation for n = 0, 1, ...: every run either
	 * gives the right step or says "out of memory"; nothing leaks
	 * (make check). Rank 2 works 3 us, the all-to-all takes
	 * 1e6 B / 1e12 B/s = 1 us, then 1 us: step 5 us. */
	for (n = 0;; n++) {
		struct mock m = ex_mock_new(0, 1e12);
		struct exec_result r;
		struct prog *p;
		const char *why = NULL;
		int rc = -1;

		mem_fail_after(n);
		p = build_small();
		m.sim = p ? sim_new() : NULL;
		if (m.sim)
			rc = exec_run(p, m.sim, &ex_mock_ops, &m, &r, &why);
		calls = mem_fail_after(-1);
		if (rc == 0)
			cr_assert_eq(ex_ns(r.step_s), 5000);
		else if (m.sim)
			cr_assert_str_eq(why, "out of memory");
		sim_free(m.sim);
		prog_free(p);
		if (calls <= n) {
			cr_assert_eq(rc, 0, "no failure injected: %s", why);
			break;
		}
	}
	/* Building and running take more than a handful of allocations. */
	cr_assert_gt(n, 10);
}

/* ---- the engine's horizon ---- */

static void why_has(const char *why, const char *text)
{
	cr_assert(strstr(why, text) != NULL, "'%s' lacks '%s'", why, text);
}

Test(exec, a_task_past_the_horizon_fails_the_run)
{
	/* Issue 8: a kernel of 1e10 s (1 B/s HBM) aborted the process in
	 * units_s_to_ns. A task longer than UNITS_NS_MAX (2^62 ns, 146
	 * years) now fails the run with a reason. */
	struct prog *p = prog_new(1, 1);
	struct mock m = ex_mock_new(0, 1e12);

	ex_task(p, 0, 0, 1e10 / US, "forever", TASK_COMPUTE);
	why_has(ex_run_fail(p, &m), "longer than the engine represents");
	prog_free(p);
}

Test(exec, a_step_that_adds_up_past_the_horizon_fails_the_run)
{
	/* Each task fits (3e9 s, 95 years) but the stream of two ends at
	 * 6e9 s, past 2^62 ns = 4.61e9 s: the run fails, not the clock. */
	struct prog *p = prog_new(1, 2);
	struct mock m = ex_mock_new(0, 1e12);

	ex_task(p, 0, 0, 3e9 / US, "long", TASK_COMPUTE);
	ex_task(p, 0, 0, 3e9 / US, "longer", TASK_COMPUTE);
	ex_task(p, 0, 1, 1, "short", TASK_COMPUTE);
	why_has(ex_run_fail(p, &m), "longer than the engine represents");
	prog_free(p);
}

/* ---- variability: the synchronization tax ---- */

Test(exec, expected_maximum_of_normals)
{
	/* E[max] of n standard normals: 0 for one; 1/sqrt(pi) = 0.5642 for
	 * two; 1.0294 for four; 1.4236 for eight (Harter's 1961 tables).
	 * Var[max]: 1 for one; 1 - 1/pi = 0.6817 for two; 0.3729 for eight. */
	cr_assert_float_eq(exec_emax(1), 0, 1e-12);
	cr_assert_float_eq(exec_emax(2), 1 / sqrt(M_PI), 1e-6);
	cr_assert_float_eq(exec_emax(4), 1.029375, 1e-5);
	cr_assert_float_eq(exec_emax(8), 1.423600, 1e-5);
	cr_assert_float_eq(exec_vmax(1), 1, 1e-12);
	cr_assert_float_eq(exec_vmax(2), 1 - 1 / M_PI, 1e-6);
	cr_assert_float_eq(exec_vmax(8), 0.372900, 1e-4);
	/* The maximum grows with the group, slowly (about sqrt(2 ln n)). */
	cr_assert_gt(exec_emax(1024), 3.0);
	cr_assert_lt(exec_emax(1024), 3.3);
}

/* Two ranks compute `us` each (microbatch 0), then all-reduce; then one
 * more op (microbatch 1) each; jitter as given. */
static struct exec_result two_ranks(double op_sigma, double gpu_sigma,
				    double us)
{
	static const uint32_t ranks[2] = {0, 1};
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(10 * US, 1e12);
	struct exec_jitter j = { op_sigma, gpu_sigma };
	struct task_info in = { "f", TASK_COMPUTE, 0, 0, TASK_PHASE_NONE };
	struct exec_result r;
	task_id a0, a1, c, b0, b1;

	a0 = prog_task(p, 0, 0, us * US, &in);
	a1 = prog_task(p, 1, 0, us * US, &in);
	c = ex_coll(p, COLL_ALLREDUCE, ranks, 2, 1, 0, "ar");
	in.microbatch = 1;
	b0 = prog_task(p, 0, 0, us * US, &in);
	b1 = prog_task(p, 1, 0, us * US, &in);
	cr_assert_eq(prog_dep(p, a0, c), 0);
	cr_assert_eq(prog_dep(p, a1, c + 1), 0);
	cr_assert_eq(prog_dep(p, c, b0), 0);
	cr_assert_eq(prog_dep(p, c + 1, b1), 0);
	prog_set_jitter(p, &j);
	r = ex_run(p, &m);
	prog_free(p);
	return r;
}

Test(exec, rendezvous_waits_for_the_expected_slowest)
{
	struct exec_result r;

	/* No variability: 1000 + 10 + 1000 us, no spread. */
	r = two_ranks(0, 0, 1000);
	cr_assert_eq(ex_ns(r.step_s), ex_ns(2010 * US));
	cr_assert_eq(r.step_sd_s, 0);
	/* Op jitter 1 %: each rank's first op is 1000 (1 + 0.01 Z); the
	 * all-reduce waits for the later, E[max of 2] = 0.5642 x 10 us =
	 * 5.642 us more: 2015.642 us (a gap on the path: other). */
	r = two_ranks(0.01, 0, 1000);
	cr_assert_eq(ex_ns(r.step_s), ex_ns((2010 + 10 / sqrt(M_PI)) * US));
	cr_assert_eq(ex_ns(r.part_s[EXEC_OTHER]), ex_ns(10 / sqrt(M_PI) * US));
	ex_assert_parts_sum(&r);
	/* Spread of the final rank: the first op's 10 us deviation became
	 * the maximum's, Var = v(2) 10^2 = 68.17 us^2; the second op adds
	 * 10^2: sd = sqrt(168.17) = 12.968 us. */
	cr_assert_float_eq(r.step_sd_s, sqrt((1 - 1 / M_PI) * 100 + 100) * US,
			   1e-9, "sd %.6g us", r.step_sd_s / US);
	/* A persistent spread of 0.5 % adds 5 us of sd to the wait (to the
	 * mean only): 0.5642 x sqrt(10^2 + 5^2) = 6.308 us. */
	r = two_ranks(0.01, 0.005, 1000);
	cr_assert_eq(ex_ns(r.step_s), ex_ns((2010 + sqrt(125 / M_PI)) * US));
}

Test(exec, overlapped_collectives_do_not_realign)
{
	static const uint32_t ranks[2] = {0, 1};
	struct prog *p = prog_new(2, 2);
	struct mock m = ex_mock_new(1 * US, 1e12);
	struct exec_jitter j = { 0.01, 0 };
	struct task_info in = { "f", TASK_COMPUTE, 0, 0, TASK_PHASE_NONE };
	struct exec_result r;
	task_id a[2][4], c[3];
	int i, k;

	/* Each rank computes four ops of 1000 us (microbatches 0..3); after
	 * the first three a bucket is all-reduced beside the compute (no
	 * compute waits for it); the last all-reduce waits for the fourth.
	 * The slow rank stays late through the overlapped buckets: the last
	 * rendezvous waits for the maximum of the whole lateness,
	 * 0.5642 x 10 us x sqrt(4) = 11.28 us, not 0.5642 x 10 us. */
	for (k = 0; k < 4; k++)
		for (i = 0; i < 2; i++) {
			in.microbatch = k;
			a[i][k] = prog_task(p, (uint32_t)i, 0, 1000 * US, &in);
		}
	for (k = 0; k < 3; k++) {
		c[k] = ex_coll(p, COLL_ALLREDUCE, ranks, 2, 1, 0, "bucket");
		for (i = 0; i < 2; i++)
			cr_assert_eq(prog_dep(p, a[i][k == 2 ? 3 : k],
					      c[k] + (uint32_t)i), 0);
	}
	prog_set_jitter(p, &j);
	r = ex_run(p, &m);
	/* The last bucket arrives at 4000 us, waits 2 x 5.642 us, runs 1 us. */
	cr_assert_eq(ex_ns(r.step_s), ex_ns((4000 + 20 / sqrt(M_PI) + 1) * US));
	prog_free(p);
}

Test(exec, a_backed_up_chain_pays_the_lateness_once)
{
	static const uint32_t ranks[4] = {0, 1, 2, 3};
	struct prog *p = prog_new(4, 2);
	struct mock m = ex_mock_new(2500 * US, 1e12);
	struct exec_jitter j = { 0.01, 0 };
	struct task_info in = { "f", TASK_COMPUTE, 0, 0, TASK_PHASE_NONE };
	struct exec_result r;
	task_id a[4][80], c[3];
	double e4 = exec_emax(4), tail;
	int i, k;

	/* Four ranks compute one op of 80 tasks of 100 us (microbatch 0,
	 * 8000 us). Buckets of gradients are ready after tasks 10, 20 and 30
	 * (1000, 2000, 3000 us) and reduce-scattered back to back on one
	 * stream, 2500 us each (comm-bound: the stream backs up). No compute
	 * waits for them.
	 *
	 * A rank's lateness at time t of its op is 0.01 t (sd); bucket b's
	 * members leave their compute at t_b + L_i(t_b), the collective
	 * starts at max(end of the previous one, t_b + max_i L_i(t_b)):
	 * E[max_i L_i(t_b)] = e(4) 0.01 t_b, e(4) = 1.029375.
	 *   bucket 1: 1000 + 10.29 us, ends 3510.29 us;
	 *   bucket 2: ready by 2020.59 us, the stream is free at 3510.29:
	 *             starts then (the lateness is already absorbed), ends
	 *             6010.29 us;
	 *   bucket 3: ready by 3030.88 us, starts 6010.29, ends 8510.29 us.
	 * The step ends with the last bucket: 8510.29 us; the lateness is
	 * paid once, not per bucket. (Counting it from each rank's latest
	 * compute when the stream frees would add about e(4) 0.01 t - 0.1 ms
	 * per bucket again: 35.9 - 10.3 = 25.7 us at bucket 2.) */
	for (k = 0; k < 80; k++)
		for (i = 0; i < 4; i++)
			a[i][k] = prog_task(p, (uint32_t)i, 0, 100 * US, &in);
	for (k = 0; k < 3; k++) {
		c[k] = ex_coll(p, COLL_REDUCESCATTER, ranks, 4, 1, 0, "bucket");
		for (i = 0; i < 4; i++)
			cr_assert_eq(prog_dep(p, a[i][10 * k + 9],
					      c[k] + (uint32_t)i), 0);
	}
	prog_set_jitter(p, &j);
	r = ex_run(p, &m);
	tail = 1000 + e4 * 10 + 3 * 2500;
	cr_assert_float_eq(r.step_s, tail * US, 2e-9, "step %.4f us, want %.4f",
			   r.step_s / US, tail);
	/* On the path: the compute (8000 us), then the chain's tail past it,
	 * exposed: 8510.29 - 8000 = 510.29 us (the first bucket's wait for
	 * its slowest rank lies under the compute). */
	cr_assert_float_eq(r.part_s[EXEC_COMPUTE], 8000 * US, 1e-12);
	cr_assert_float_eq(r.part_s[EXEC_EXPOSED_COMM], (tail - 8000) * US,
			   2e-9);
	ex_assert_parts_sum(&r);
	prog_free(p);
}
