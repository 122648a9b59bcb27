/*
 * test_cli_config.c - `llmsim config` in-process: exit statuses, and an
 * allocation-failure sweep through the whole command (load, print JSON).
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "../config/config_testutil.h"
#include "base/mem.h"

static void quiet(void)
{
	setenv("LLMSIM_DATA", "tests/data", 1);
	cr_redirect_stdout();
	cr_redirect_stderr();
}

TestSuite(cli_config, .init = quiet);

static int run(int argc, const char **argv)
{
	return cli_config(argc, (char **)argv, "build/llmsim");
}

Test(cli_config, exit_statuses)
{
	static const char *show[] = {"config", "show", "test-job"};
	static const char *bad[] = {"config", "show", "tests/bad/empty.yaml"};
	static const char *opt[] = {"config", "show", "test-job", "--nope"};
	static const char *kind[] = {"config", "help", "gpux"};
	static const char *list[] = {"config", "list", "gpu"};

	cr_assert_eq(run(3, show), CLI_OK);
	cr_assert_eq(run(3, bad), CLI_USAGE);
	cr_assert_eq(run(4, opt), CLI_USAGE);
	cr_assert_eq(run(3, kind), CLI_USAGE);
	cr_assert_eq(run(3, list), CLI_OK);
}

/* Fail allocation n = 0, 1, 2, ... inside the command: each failure is
 * exit status 1 (a runtime failure, not bad input) with nothing leaked,
 * until the command succeeds. */
Test(cli_config, out_of_memory_is_exit_1)
{
	static const char *argv[] = {"config", "show", "test-job-nested",
				     "--set", "system.nodes=2", "--json"};
	long n;
	int rc;

	for (n = 0;; n++) {
		mem_fail_after(n);
		rc = run(6, argv);
		mem_fail_after(-1);
		if (rc == CLI_OK)
			break;
		cr_assert_eq(rc, CLI_FAIL, "n = %ld: exit status %d", n, rc);
		cr_assert(n < 100000, "the sweep did not converge");
	}
	cr_assert_gt(n, 50);
	assert_no_leaks();
}
