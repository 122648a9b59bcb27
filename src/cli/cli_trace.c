/*
 * cli_trace.c - what every `run` (training, inference and serving alike)
 * and `plan` write besides their own summary: the --trace stream, opened
 * and finished with one message for every write error that names the
 * file and the reason, and the result's JSON text.
 */
#include "cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"

/* Whether fopen's errno blames the path given (a missing or non-
 * directory component, a directory, no permission, a read-only file
 * system, too long or looping): the user's input, not a failure. */
static int path_errno(int e)
{
	return e == ENOENT || e == ENOTDIR || e == EISDIR || e == EACCES ||
	       e == EPERM || e == EROFS || e == ENAMETOOLONG || e == ELOOP;
}

FILE *cli_trace_open(const char *path, int *rc, struct diag *d)
{
	FILE *f;
	int e;

	*rc = CLI_OK;
	if (strcmp(path, "-") == 0)
		return stdout;
	f = fopen(path, "w");
	if (!f) {
		e = errno;
		diag_error(d, NULL, 0, 0, "cannot write the trace '%s': %s; "
			   "give --trace a writable path, or - for standard "
			   "output", path, strerror(e));
		*rc = path_errno(e) ? CLI_USAGE : CLI_FAIL;
	}
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

int cli_trace_finish(FILE *f, const char *path, int rc, struct diag *d)
{
	if (f && cli_trace_close(f, path, d) != CLI_OK && rc == 0)
		rc = -1;
	return rc == 0 ? CLI_OK : rc == -2 ? CLI_USAGE : CLI_FAIL;
}

int cli_json_text(struct cJSON *obj, int print, char **json, struct diag *d)
{
	*json = obj ? cJSON_Print(obj) : NULL;
	cJSON_Delete(obj);
	if (!*json) {
		diag_oom(d);
		return CLI_FAIL;
	}
	if (print)
		printf("%s\n", *json);
	return CLI_OK;
}
