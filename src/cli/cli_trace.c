/*
 * cli_trace.c - the --trace stream of `run` (training, inference and
 * serving alike): opening it and finishing it, with one message for
 * every write error that names the file and the reason.
 */
#include "cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

FILE *cli_trace_open(const char *path, struct diag *d)
{
	FILE *f;

	if (strcmp(path, "-") == 0)
		return stdout;
	f = fopen(path, "w");
	if (!f)
		diag_error(d, NULL, 0, 0, "cannot write the trace '%s': %s; "
			   "give --trace a writable path, or - for standard "
			   "output", path, strerror(errno));
	return f;
}

int cli_trace_close(FILE *f, const char *path, struct diag *d)
{
	/* errno still says why a write the run made failed */
	int e = ferror(f) ? errno : 0, bad = e != 0 || ferror(f);

	if (fflush(f) != 0) {
		bad = 1;
		e = errno;
	}
	if (f != stdout && fclose(f) != 0) {
		bad = 1;
		e = errno;
	}
	if (!bad)
		return CLI_OK;
	if (!e)
		e = EIO;
	if (f == stdout)
		diag_error(d, NULL, 0, 0, "cannot write the trace to standard "
			   "output: %s", strerror(e));
	else
		diag_error(d, NULL, 0, 0, "cannot write the trace '%s': %s",
			   path, strerror(e));
	return CLI_FAIL;
}
