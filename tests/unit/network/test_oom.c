/*
 * test_oom.c - every allocation of the fabric model may fail: building a
 * system's network, timing a collective, running collectives on an
 * engine. Fail the n-th allocation for n = 0, 1, 2, ... until a run
 * needs no more; each must end cleanly (no crash; make check's leak
 * checker sees every byte freed).
 */
#include <criterion/criterion.h>

#include "base/diag.h"
#include "fixtures.h"
#include "base/mem.h"
#include "network/net.h"

static const uint32_t gpus[16] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
};

/* Time two collectives standalone; 0 when everything succeeded. */
static int standalone(const struct system_spec *s)
{
	struct diag d;
	struct net *n;
	struct coll_desc ar = { COLL_ALLREDUCE, 1e8, gpus, 16, NULL, -1, -1, 4, 0, NULL, 0, 0, 0 };
	struct coll_desc a2a = { COLL_ALLTOALL, 1e8, gpus, 16, NULL, -1, -1, 1, 0, NULL, 0, 0, 0 };
	struct net_coll_result out;
	int rc = -1;

	diag_init(&d, NULL);
	n = net_new(s, NULL, &d);
	if (!n)
		return -1;
	if (net_collective_time(n, &ar, &out, &d) == 0 &&
	    net_collective_time(n, &a2a, &out, &d) == 0)
		rc = 0;
	net_free(n);
	return rc;
}

static void mark(void *token)
{
	(*(int *)token)++;
}

/* Two collectives on an engine; 0 when all went through. */
static int stepped(const struct system_spec *s)
{
	struct diag d;
	struct sim *sim = sim_new();
	struct net *n;
	struct coll_desc ar = { COLL_ALLREDUCE, 1e8, gpus, 16, NULL, -1, -1, 1, 0, NULL, 0, 0, 0 };
	int done = 0, rc = -1;

	diag_init(&d, NULL);
	if (!sim)
		return -1;
	n = net_new(s, sim, &d);
	if (n) {
		net_comm_ops.start(n, &ar, mark, &done);
		net_comm_ops.start(n, &ar, mark, &done);
		if (sim_run(sim) == 0 && !net_failed(n) && done == 2)
			rc = 0;
		net_free(n);
	}
	sim_free(sim);
	return rc;
}

static void sweep(int (*run)(const struct system_spec *), const char *what)
{
	struct fx f;
	long n;

	fx_mesh(&f, 2);
	for (n = 0; n < 100000; n++) {
		int rc;

		mem_fail_after(n);
		rc = run(&f.sys);
		mem_fail_after(-1);
		if (rc == 0)
			return;
	}
	cr_assert_fail("%s never succeeded", what);
}

Test(net_oom, standalone_timing_survives_every_failure)
{
	sweep(standalone, "standalone timing");
}

Test(net_oom, engine_runs_survive_every_failure)
{
	sweep(stepped, "engine run");
}
