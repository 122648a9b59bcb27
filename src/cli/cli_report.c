/*
 * cli_report.c - `llmsim report [--db PATH] [-o FILE]`: the results
 * database as one self-contained HTML page of plots (report.h), by
 * default report.html next to the default database; "-o -"
 * writes it to standard output.
 *
 * The page is written to FILE.tmp and renamed over FILE when complete,
 * so a reader never sees half a report.
 *
 * Exit status: 0 success; 1 runtime failure (database, write); 2 usage.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "report/report.h"
#include "store/store.h"

static int parse(int argc, char **argv, const char **db, const char **out)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "o:", longopts, "report")) != -1) {
		if (c == 'd')
			*db = optarg;
		else if (c == 'o')
			*out = optarg;
		else
			return CLI_USAGE;
	}
	if (optind < argc)
		return cli_usage_error("report", "unexpected operand '%s'",
				       argv[optind]);
	return CLI_OK;
}

/* Where the report goes: through path.tmp renamed over path when path
 * is a regular file or absent (a reader never sees half a report);
 * straight into anything else, so that a FIFO, a symlink, a device
 * (/dev/stdout, /dev/full) stays what it is. NULL: stdout. */
static const char *tmp_name(const char *path, struct arena *a)
{
	struct stat sb;

	if (strcmp(path, "-") == 0)
		return NULL;
	if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
		return path;
	return arena_printf(a, "%s.tmp", path);
}

/* Write the report of st to path ("-": stdout). */
static int write_to(struct store *st, const char *db, const char *path,
		    struct arena *a, struct diag *d)
{
	const char *tmp = tmp_name(path, a);
	FILE *out = tmp ? fopen(tmp, "w") : stdout;
	int rc;

	if (tmp == path)	/* written in place: nothing to rename */
		tmp = NULL;
	if (!out) {
		diag_error(d, path, 0, 0, "cannot write the report: %s",
			   strerror(errno));
		return CLI_FAIL;
	}
	rc = report_write(st, db, cli_version(), out, d) == 0 ? CLI_OK
							      : CLI_FAIL;
	if (fflush(out) != 0 || ferror(out))
		rc = CLI_FAIL;
	if (out != stdout && fclose(out) != 0)
		rc = CLI_FAIL;
	if (rc == CLI_OK && tmp && rename(tmp, path) != 0)
		rc = CLI_FAIL;
	if (rc != CLI_OK && !d->errors)
		diag_error(d, path, 0, 0, "cannot write the report: %s",
			   strerror(errno));
	if (rc != CLI_OK && tmp)
		(void)remove(tmp);
	if (rc == CLI_OK && strcmp(path, "-") != 0)
		fprintf(stderr, "llmsim: wrote the report of %s to %s\n", db,
			path);
	return rc;
}

int cli_report(int argc, char **argv, const char *argv0)
{
	const char *db = NULL, *out = NULL, *root;
	struct store *st = NULL;
	struct arena a;
	struct diag d;
	int rc = parse(argc, argv, &db, &out), bad = 0;

	if (rc != CLI_OK)
		return rc;
	arena_init(&a);
	diag_init(&d, stderr);
	rc = CLI_FAIL;
	root = config_data_root(&a, argv0);
	if (!out) {	/* next to the default database */
		const char *def = root ? cli_default_db_in(&a, root) : NULL;
		const char *slash = def ? strrchr(def, '/') : NULL;

		out = def ? arena_printf(&a, "%.*sreport.html",
					 slash ? (int)(slash - def) + 1 : 0, def)
			  : NULL;
	}
	if (!db)
		db = root ? cli_default_db_in(&a, root) : NULL;
	if (!db || !out) {
		diag_oom(&d);
		goto done;
	}
	/* a reader: nothing is created, migrated or switched to WAL, and
	 * a read-only file works (store_open_reader); a file that is no
	 * results database is bad input */
	st = store_open_reader(db, &d, &bad);
	if (st)
		rc = write_to(st, db, out, &a, &d);
	else if (bad)
		rc = CLI_USAGE;
done:
	store_close(st);
	arena_release(&a);
	return rc;
}
