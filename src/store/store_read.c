/*
 * store_read.c - reading the results database: the reader's read-only
 * open (store_open_readonly), any read-only query with bound text
 * parameters, and every row of a named view (for `llmsim db export` and
 * the report).
 *
 * A query that would write is refused (sqlite3_stmt_readonly), so a
 * reader can never change the database. The one SQL text built here is
 * SELECT * FROM "NAME" for a view, and only with a NAME the database
 * itself lists as a view.
 */
#include "store_impl.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/diag.h"
#include "base/mem.h"

/* Call fn for each row of s; SQLITE_DONE, or the failing code (rows
 * stopped by fn count as done). */
static int each_row(sqlite3_stmt *s, store_row_fn fn, void *ctx)
{
	int n = sqlite3_column_count(s), rc, i;
	const char **names = mem_calloc((size_t)n + 1, sizeof(*names));
	struct store_val *v = mem_calloc((size_t)n + 1, sizeof(*v));

	if (!names || !v) {
		rc = SQLITE_NOMEM;
		goto out;
	}
	for (i = 0; i < n; i++)
		names[i] = sqlite3_column_name(s, i);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		for (i = 0; i < n; i++) {
			memset(&v[i], 0, sizeof(v[i]));
			switch (sqlite3_column_type(s, i)) {
			case SQLITE_INTEGER:
				v[i].type = STORE_INT;
				v[i].i = sqlite3_column_int64(s, i);
				v[i].num = (double)v[i].i;
				break;
			case SQLITE_FLOAT:
				v[i].type = STORE_REAL;
				v[i].num = sqlite3_column_double(s, i);
				break;
			case SQLITE_TEXT:
			case SQLITE_BLOB:
				v[i].type = STORE_TEXT;
				v[i].text = (const char *)sqlite3_column_text(s, i);
				if (!v[i].text) {
					rc = SQLITE_NOMEM;
					goto out;
				}
				break;
			default:
				v[i].type = STORE_NULL;
				break;
			}
		}
		if (fn(ctx, n, names, v) != 0) {
			rc = SQLITE_DONE;
			break;
		}
	}
out:
	mem_free(names);
	mem_free(v);
	return rc;
}

int store_select(struct store *st, const char *sql,
		 const char *const *params, int nparams, store_row_fn fn,
		 void *ctx, struct diag *d)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL), i;

	if (rc == SQLITE_OK && !sqlite3_stmt_readonly(s)) {
		sqlite3_finalize(s);
		diag_error(d, st->path, 0, 0, "refusing a query that would "
			   "change the results database");
		return -1;
	}
	for (i = 0; rc == SQLITE_OK && i < nparams; i++)
		rc = sqlite3_bind_text(s, i + 1, params[i], -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = each_row(s, fn, ctx);
	if (rc != SQLITE_DONE) {
		store_report(st, d, "reading the results database");
		sqlite3_finalize(s);
		return -1;
	}
	sqlite3_finalize(s);
	return 0;
}

/* ---- views ---------------------------------------------------------- */

struct view_list {
	const char *want;		/* the name asked for */
	int found;
	char list[2048];		/* the views there are, for the message */
	size_t len;
};

static int add_view(void *ctx, int n, const char *const *names,
		    const struct store_val *v)
{
	struct view_list *l = ctx;

	(void)n;
	(void)names;
	if (!v[0].text)
		return 0;
	if (strcmp(v[0].text, l->want) == 0)
		l->found = 1;
	if (l->len < sizeof(l->list))
		l->len += (size_t)snprintf(l->list + l->len,
					   sizeof(l->list) - l->len, "%s%s",
					   l->len ? ", " : "", v[0].text);
	return 0;
}

int store_each_view_row(struct store *st, const char *view, store_row_fn fn,
			void *ctx, struct diag *d)
{
	struct view_list l;
	char *sql;
	size_t n;
	int rc;

	memset(&l, 0, sizeof(l));
	l.want = view;
	if (store_select(st, "SELECT name FROM sqlite_master WHERE type = "
			 "'view' ORDER BY name", NULL, 0, add_view, &l, d) != 0)
		return -1;
	if (!l.found) {
		diag_error(d, st->path, 0, 0, "no view '%s' in the results "
			   "database; its views: %s", view, l.list);
		return -2;
	}
	n = strlen(view) + 32;
	sql = mem_alloc(n);
	if (!sql) {
		diag_oom(d);
		return -1;
	}
	/* view is a view's name as sqlite_master spells it; llmsim's names
	 * and v_sweep_* hold only [A-Za-z0-9_], so the quotes suffice. */
	snprintf(sql, n, "SELECT * FROM \"%s\"", view);
	rc = strchr(view, '"') ? -1 : store_select(st, sql, NULL, 0, fn, ctx, d);
	mem_free(sql);
	return rc;
}

/* ---- the reader's open --------------------------------------------- */

/* "file:" URI of path, for sqlite3_open_v2(SQLITE_OPEN_URI): '%', '?'
 * and '#' escaped. NULL when out of memory. */
static char *file_uri(const char *path, const char *query)
{
	size_t n = strlen(path), i, o = 0;
	char *u = mem_alloc(3 * n + strlen(query) + 8);

	if (!u)
		return NULL;
	memcpy(u, "file:", 5);
	o = 5;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)path[i];

		if (c == '%' || c == '?' || c == '#') {
			o += (size_t)sprintf(u + o, "%%%02X", c);
			continue;
		}
		u[o++] = (char)c;
	}
	strcpy(u + o, query);
	return u;
}

/* A WAL database read by a connection that can create neither its -shm
 * nor -wal file (a read-only directory) fails at its first read with
 * SQLITE_CANTOPEN or SQLITE_READONLY (it cannot set the -shm up). With no -wal file beside it no writer is at work and
 * every commit is in the file itself, so it is reopened immutable (no
 * locks, no -shm). 0, or -1 after reporting. */
static int open_immutable_if_needed(struct store *st, struct diag *d)
{
	int rc = sqlite3_exec(st->db, "SELECT count(*) FROM sqlite_master",
			      NULL, NULL, NULL);
	char *wal, *uri;
	struct stat sb;
	int have_wal;

	if (((rc & 0xff) != SQLITE_CANTOPEN && (rc & 0xff) != SQLITE_READONLY) ||
	    strcmp(st->path, ":memory:") == 0)
		return 0;	/* store_read_version reports any other error */
	wal = mem_alloc(strlen(st->path) + 5);
	if (!wal) {
		store_report_oom(st->path, d);
		return -1;
	}
	sprintf(wal, "%s-wal", st->path);
	have_wal = stat(wal, &sb) == 0;
	mem_free(wal);
	if (have_wal)
		return 0;
	if (!(uri = file_uri(st->path, "?immutable=1"))) {
		store_report_oom(st->path, d);
		return -1;
	}
	sqlite3_close(st->db);
	st->db = NULL;
	rc = store_open_db(st, uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, d);
	mem_free(uri);
	return rc;
}

/* A reader's open: SQLITE_OPEN_READONLY, so nothing is created,
 * migrated or switched to WAL, and a read-only file works. Opening a
 * WAL database needs its -shm file; in a directory the reader cannot
 * write, with no -wal file (so no writer is at work), the file is
 * opened immutable instead. */
struct store *store_open_readonly(const char *path, struct diag *d)
{
	return store_open_reader(path, d, NULL);
}

/* Whether store_read_version's refusal was about the file: SQLite said
 * it is no database (SQLITE_NOTADB), or every query ran and the content
 * was refused (no meta table, a damaged version: the last code is not
 * an error). An I/O, lock or memory error is a failure to read. */
static int version_refused_input(const struct store *st)
{
	int ec = st->db ? sqlite3_errcode(st->db) : SQLITE_NOMEM;

	return ec == SQLITE_NOTADB || ec == SQLITE_OK || ec == SQLITE_ROW ||
	       ec == SQLITE_DONE;
}

struct store *store_open_reader(const char *path, struct diag *d,
				int *bad_input)
{
	struct store *st;
	int version, input = 1;
	struct stat sb;

	assert(path);
	store_route_allocations();
	st = NULL;
	if (strcmp(path, ":memory:") != 0 && stat(path, &sb) != 0) {
		diag_error(d, path, 0, 0, "no results database here (%s); "
			   "give one with --db PATH", strerror(errno));
		goto refused;
	}
	if (strcmp(path, ":memory:") != 0 && !S_ISREG(sb.st_mode)) {
		diag_error(d, path, 0, 0, "%s, not a results database; give "
			   "the database file with --db PATH",
			   S_ISDIR(sb.st_mode) ? "a directory" :
			   "not a regular file");
		goto refused;
	}
	input = 0;
	if (!(st = store_new(path, STORE_BUSY_TIMEOUT_MS, d)) ||
	    store_connect(st, 1, d) < 0 || open_immutable_if_needed(st, d) < 0)
		goto refused;
	if (store_read_version(st, d, &version) < 0) {
		input = !d->oom && version_refused_input(st);
		goto refused;
	}
	input = 1;
	if (version > store_schema_version()) {
		store_refuse_newer(st, d, version);
		goto refused;
	}
	if (version == 0) {
		diag_error(d, path, 0, 0, "empty, not a results database: "
			   "nothing is stored in it yet");
		goto refused;
	}
	st->version = version;
	if (version < store_schema_version())
		diag_note(d, path, 0, 0, "schema version %d, older than this "
			  "llmsim's %d: the views added since are missing "
			  "until a command stores into it", version,
			  store_schema_version());
	if (bad_input)
		*bad_input = 0;
	return st;
refused:
	if (bad_input)
		*bad_input = input;
	store_close(st);
	return NULL;
}
