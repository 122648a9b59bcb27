/*
 * cli_db.c - `llmsim db`: the results database for other tools.
 *
 *   llmsim db views [--db PATH]
 *       every view with its columns (the documented interface:
 *       docs/results-store.md), and each sweep's own view
 *   llmsim db export --view NAME [--format csv|json] [--db PATH] [-o FILE]
 *       one view as CSV (RFC 4180, a header row) or JSON (an array of
 *       objects), to standard output or FILE ("-": standard output)
 *   llmsim db merge OUT.db IN.db...
 *       merge databases (sweep shards, MPI ranks) without duplicates
 *
 * Numbers are written so they read back to the same double (%.17g,
 * shortened when %.15g already round-trips); NULL is an empty CSV field
 * and JSON null.
 *
 * views and export open the database read-only (store_open_readonly).
 *
 * Exit status: 0 success; 1 runtime failure (I/O, database); 2 usage or
 * an unknown view.
 */
#include "cli.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/config.h"
#include "store/store.h"

/* The documented views and what one row is. */
static const struct {
	const char *name, *row;
} known_views[] = {
	{ "v_runs", "simulated step: the job's identity (model, system, "
		    "GPUs, layout, dtype, batch, sequence) and its results" },
	{ "v_step_breakdown", "simulated step: its breakdown and fractions" },
	{ "v_sweep_points", "point of any sweep, with its run's columns" },
	{ "v_collectives", "line of a collective's table (rccl-tests "
			   "columns)" },
	{ "v_measurements", "measured point (llmsim measure): where it ran "
			    "and what it timed" },
	{ "v_validation", "validated point (llmsim validate): predicted "
			  "against measured" },
	{ "v_serving", "serving run: the deployment, its load and its "
		       "latency and throughput" },
	{ "v_inference_steps", "prefill or decode step" },
	{ "v_plans", "layout of a plan's ranking (llmsim plan, or a sweep "
		     "point with plan:, by run_id): its rank, layout, step "
		     "time and breakdown, estimate" },
};

/* The database a command reads: --db, else the default, opened
 * read-only (store_open_reader: a missing path is refused, not
 * created; a read-only file works). NULL after reporting, *rc the
 * status: CLI_USAGE when the file given is at fault (missing, not a
 * results database), CLI_FAIL when reading a good one failed. */
static struct store *open_existing(const char *db, struct arena *a,
				   const char *argv0, const char **path,
				   int *rc, struct diag *d)
{
	struct store *st;
	int bad = 0;

	const char *root;

	if (!db) {
		root = config_data_root(a, argv0);
		db = root ? cli_default_db_in(a, root) : NULL;
		if (!db) {
			diag_oom(d);
			*rc = CLI_FAIL;
			return NULL;
		}
	}
	*path = db;
	st = store_open_reader(db, d, &bad);
	if (!st)
		*rc = bad ? CLI_USAGE : CLI_FAIL;
	return st;
}

/* ---- views ---------------------------------------------------------- */

struct col_list {
	FILE *out;
	int n;
	size_t width;			/* of the current line */
};

static int print_col(void *ctx, int n, const char *const *names,
		     const struct store_val *v)
{
	struct col_list *c = ctx;

	(void)n;
	(void)names;
	const char *name = v[0].text ? v[0].text : "?";

	if (c->n++ == 0 || c->width + strlen(name) + 2 > 76) {
		fprintf(c->out, "%s\n    ", c->n > 1 ? "," : "");
		c->width = 4;
	} else {
		fputs(", ", c->out);
		c->width += 2;
	}
	fputs(name, c->out);
	c->width += strlen(name);
	return 0;
}

struct view_ctx {
	struct store *st;
	struct diag *d;
	FILE *out;
	int failed;
};

static int print_view(void *ctx, int n, const char *const *names,
		      const struct store_val *v)
{
	struct view_ctx *vc = ctx;
	struct col_list c = { vc->out, 0, 0 };
	const char *p[1] = { v[0].text };
	const char *row = NULL;
	size_t i;

	(void)n;
	(void)names;
	if (!v[0].text)
		return 0;
	for (i = 0; i < sizeof(known_views) / sizeof(known_views[0]); i++)
		if (strcmp(known_views[i].name, v[0].text) == 0)
			row = known_views[i].row;
	if (!row && v[1].text)
		row = v[1].text;
	if (row)
		fprintf(vc->out, "%s: one row per %s", v[0].text, row);
	else
		fprintf(vc->out, "%s: (not documented)", v[0].text);
	if (store_select(vc->st, "SELECT name FROM pragma_table_info(?1)", p,
			 1, print_col, &c, vc->d) != 0) {
		vc->failed = 1;
		return 1;
	}
	fprintf(vc->out, "\n");
	return 0;
}

static int cmd_views(int argc, char **argv, const char *argv0)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	struct view_ctx vc = { NULL, NULL, stdout, 0 };
	const char *db = NULL, *path;
	struct arena a;
	struct diag d;
	int c, rc = CLI_FAIL;

	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "", longopts, "db")) != -1) {
		if (c != 'd')
			return CLI_USAGE;
		db = optarg;
	}
	if (optind < argc)
		return cli_usage_error("db", "'db views' takes no operand "
				       "('%s')", argv[optind]);
	arena_init(&a);
	diag_init(&d, stderr);
	vc.d = &d;
	vc.st = open_existing(db, &a, argv0, &path, &rc, &d);
	if (vc.st && store_select(vc.st, "SELECT v.name, 'point of sweep ' || "
				  "s.name || ' (its axes are columns)' FROM "
				  "sqlite_master v LEFT JOIN sweeps s ON "
				  "s.view_name = v.name WHERE v.type = 'view' "
				  "ORDER BY s.id IS NOT NULL, v.name", NULL, 0,
				  print_view, &vc, &d) == 0 && !vc.failed)
		rc = CLI_OK;
	store_close(vc.st);
	arena_release(&a);
	return rc;
}

/* ---- export --------------------------------------------------------- */

enum fmt { FMT_CSV, FMT_JSON };

struct export_ctx {
	FILE *out;
	enum fmt fmt;
	unsigned long rows;
};

/* A double as the shortest of %.15g / %.17g that reads back exactly. */
static void put_num(FILE *out, double x)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, sizeof(buf), "%.17g", x);
	fputs(buf, out);
}

static void csv_text(FILE *out, const char *s)
{
	size_t n = strlen(s);

	if (!strpbrk(s, ",\"\r\n") && (n == 0 || (s[0] != ' ' &&
						  s[n - 1] != ' '))) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void json_text(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", out);
		else if (ch == '\t')
			fputs("\\t", out);
		else if (ch == '\r')
			fputs("\\r", out);
		else if (ch < 0x20)
			fprintf(out, "\\u%04x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void put_val(struct export_ctx *e, const struct store_val *v)
{
	switch (v->type) {
	case STORE_INT:
		fprintf(e->out, "%lld", (long long)v->i);
		break;
	case STORE_REAL:
		put_num(e->out, v->num);
		break;
	case STORE_TEXT:
		if (e->fmt == FMT_CSV)
			csv_text(e->out, v->text);
		else
			json_text(e->out, v->text);
		break;
	default:
		if (e->fmt == FMT_JSON)
			fputs("null", e->out);
		break;
	}
}

static int export_row(void *ctx, int n, const char *const *names,
		      const struct store_val *v)
{
	struct export_ctx *e = ctx;
	int i;

	if (e->fmt == FMT_CSV && e->rows == 0) {
		for (i = 0; i < n; i++) {
			if (i)
				fputc(',', e->out);
			csv_text(e->out, names[i]);
		}
		fputs("\r\n", e->out);
	}
	if (e->fmt == FMT_JSON)
		fputs(e->rows ? ",\n{" : "[\n{", e->out);
	for (i = 0; i < n; i++) {
		if (e->fmt == FMT_JSON) {
			fputs(i ? ", " : "", e->out);
			json_text(e->out, names[i]);
			fputs(": ", e->out);
		} else if (i) {
			fputc(',', e->out);
		}
		put_val(e, &v[i]);
	}
	fputs(e->fmt == FMT_JSON ? "}" : "\r\n", e->out);
	e->rows++;
	return 0;
}

static int parse_format(const char *v, enum fmt *f)
{
	if (strcmp(v, "csv") == 0)
		*f = FMT_CSV;
	else if (strcmp(v, "json") == 0)
		*f = FMT_JSON;
	else
		return cli_usage_error("db", "--format: expected csv or json, "
				       "got '%s'", v);
	return CLI_OK;
}

/* Close out (unless stdout) and check that everything was written. */
static int finish(FILE *out, const char *name, struct diag *d)
{
	int bad = fflush(out) != 0 || ferror(out);

	if (out != stdout && fclose(out) != 0)
		bad = 1;
	if (bad) {
		diag_error(d, name, 0, 0, "cannot write the export: %s",
			   strerror(errno));
		return CLI_FAIL;
	}
	return CLI_OK;
}

static int cmd_export(int argc, char **argv, const char *argv0)
{
	static const struct option longopts[] = {
		{ "db", required_argument, NULL, 'd' },
		{ "view", required_argument, NULL, 'v' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	struct export_ctx e = { stdout, FMT_CSV, 0 };
	const char *db = NULL, *view = NULL, *outname = "-", *path;
	struct store *st = NULL;
	struct arena a;
	struct diag d;
	int c, rc;

	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "o:", longopts, "db")) != -1) {
		if (c == 'd')
			db = optarg;
		else if (c == 'v')
			view = optarg;
		else if (c == 'o')
			outname = optarg;
		else if (c != 'f' || parse_format(optarg, &e.fmt) != CLI_OK)
			return CLI_USAGE;
	}
	if (!view)
		return cli_usage_error("db", "%s", "'db export' needs --view "
				       "NAME ('llmsim db views' lists them)");
	if (optind < argc)
		return cli_usage_error("db", "'db export' takes no operand "
				       "('%s')", argv[optind]);
	arena_init(&a);
	diag_init(&d, stderr);
	rc = CLI_FAIL;
	st = open_existing(db, &a, argv0, &path, &rc, &d);
	if (!st)
		goto out;
	if (strcmp(outname, "-") != 0 && !(e.out = fopen(outname, "w"))) {
		diag_error(&d, outname, 0, 0, "cannot write the export: %s",
			   strerror(errno));
		goto out;
	}
	rc = store_each_view_row(st, view, export_row, &e, &d);
	if (e.fmt == FMT_JSON)
		fputs(e.rows ? "\n]\n" : "[]\n", e.out);
	if (finish(e.out, outname, &d) != CLI_OK)
		rc = -1;
	rc = rc == 0 ? CLI_OK : rc == -2 ? CLI_USAGE : CLI_FAIL;
out:
	store_close(st);
	arena_release(&a);
	return rc;
}

/* ---- merge ---------------------------------------------------------- */

static int cmd_merge(int argc, char **argv)
{
	static const struct option longopts[] = { { NULL, 0, NULL, 0 } };
	struct store_merge_stats s = { 0, 0, 0, 0 };
	struct store *out;
	struct diag d;
	int c, i;

	cli_getopt_reset();
	while ((c = cli_getopt(argc, argv, "", longopts, "db")) != -1)
		return CLI_USAGE;
	if (argc - optind < 2)
		return cli_usage_error("db", "%s", "'db merge' needs OUT.db and "
				       "at least one IN.db");
	diag_init(&d, stderr);
	for (i = optind + 1; i < argc; i++)
		if (strcmp(argv[i], argv[optind]) == 0)
			return cli_usage_error("db", "'%s' is both the output "
					       "and an input", argv[i]);
	/* Every input a results database before OUT is opened: a missing,
	 * empty or foreign input left a new, empty OUT.db behind. */
	for (i = optind + 1; i < argc; i++)
		if (store_merge_check(argv[i], &d) != 0) {
			fprintf(stderr, "llmsim: nothing is merged\n");
			return CLI_FAIL;
		}
	out = store_open(argv[optind], &d);
	if (!out)
		return CLI_FAIL;
	for (i = optind + 1; i < argc; i++) {
		if (store_merge(out, argv[i], &s, &d) != 0) {
			store_close(out);
			fprintf(stderr, "llmsim: %s is not merged (the inputs "
				"before it are)\n", argv[i]);
			return CLI_FAIL;
		}
	}
	store_close(out);
	fprintf(stderr, "llmsim: merged %d database%s into %s: %llu runs added "
		"(%llu already there), %llu sweep points added (%llu already "
		"there)\n", argc - optind - 1, argc - optind - 1 == 1 ? "" : "s",
		argv[optind],
		(unsigned long long)s.runs_added,
		(unsigned long long)s.runs_present,
		(unsigned long long)s.points_added,
		(unsigned long long)s.points_present);
	return CLI_OK;
}

int cli_db(int argc, char **argv, const char *argv0)
{
	if (argc < 2)
		return cli_usage_error("db", "%s", "expected views, export or "
				       "merge");
	if (strcmp(argv[1], "views") == 0)
		return cmd_views(argc - 1, argv + 1, argv0);
	if (strcmp(argv[1], "export") == 0)
		return cmd_export(argc - 1, argv + 1, argv0);
	if (strcmp(argv[1], "merge") == 0)
		return cmd_merge(argc - 1, argv + 1);
	return cli_usage_error("db", "unknown subcommand '%s'; expected views, "
			       "export or merge", argv[1]);
}
