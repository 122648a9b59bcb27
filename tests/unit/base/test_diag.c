/*
 * test_diag.c - progress goes where the caller's diag prints, is counted
 * as neither an error nor a warning, and is silent without an output.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/diag.h"

Test(diag, progress_prints_to_the_diag_output_uncounted)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct diag d;

	cr_assert_not_null(f);
	diag_init(&d, f);
	diag_progress(&d, "simulating %u tasks on %u ranks...", 3u, 2u);
	fflush(f);
	cr_assert_str_eq(buf, "llmsim: simulating 3 tasks on 2 ranks...\n");
	cr_assert_eq(d.errors, 0);
	cr_assert_eq(d.warnings, 0);
	fclose(f);
	free(buf);
}

Test(diag, progress_without_an_output_is_silent)
{
	struct diag d;

	diag_init(&d, NULL);
	diag_progress(&d, "simulating %u tasks...", 1u);
	cr_assert_eq(d.errors, 0);
}
