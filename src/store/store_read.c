/*
 * store_read.c - reading the results database: any read-only query with
 * bound text parameters, and every row of a named view (for `llmsim db
 * export` and the report).
 *
 * A query that would write is refused (sqlite3_stmt_readonly), so a
 * reader can never change the database. The one SQL text built here is
 * SELECT * FROM "NAME" for a view, and only with a NAME the database
 * itself lists as a view.
 */
#include "store_impl.h"

#include <string.h>

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
