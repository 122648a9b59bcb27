/*
 * store_sweep.c - sweeps in the results database: the sweep's row and
 * axes, its points (each with its run in one transaction), and its view.
 *
 * A sweep's view, v_sweep_NAME, has the point's index, status and
 * reason, one column per axis (the value the point gives it, from
 * axes_json: a number, or text), then the columns of v_runs, except any
 * whose name an axis column already has (store_run_cols: the latest
 * v_runs; a sweep run or a merge recreates the view). The view's SQL names the sweep by its integer
 * id and axes by keys the store checks to be [A-Za-z0-9_.-] (columns
 * [A-Za-z0-9_]): no text from outside reaches it unchecked.
 */
#include "store_impl.h"
#include "store_schema.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"

/* Prepare sql, bind each "%" directive of types ("i" int64, "t" text). */
static sqlite3_stmt *prep(struct store *st, const char *sql,
			  const char *types, ...)
{
	sqlite3_stmt *s = NULL;
	va_list ap;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL), k;

	va_start(ap, types);
	for (k = 0; rc == SQLITE_OK && types[k]; k++) {
		if (types[k] == 'i')
			rc = sqlite3_bind_int64(s, k + 1, va_arg(ap, int64_t));
		else
			rc = sqlite3_bind_text(s, k + 1, va_arg(ap, const char *),
					       -1, SQLITE_TRANSIENT);
	}
	va_end(ap);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

/* Step a prepared statement once and finalize it: SQLITE_ROW (with the
 * first column's integer in *out when out), SQLITE_DONE or an error. */
static int step1(sqlite3_stmt *s, int64_t *out)
{
	int rc;

	if (!s)
		return SQLITE_ERROR;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW && out)
		*out = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return rc;
}

static int ident_ok(const char *s, const char *extra)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' ||
		      strchr(extra, *s)))
			return 0;
	return 1;
}

/* ---- the view ------------------------------------------------------- */

struct sql_buf {
	char *s;
	size_t len, cap;
	int oom;
};

static void put(struct sql_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct sql_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0,
		      fmt, ap);
	va_end(ap);
	if (n < 0 || b->len + (size_t)n + 1 > b->cap) {
		size_t cap = (b->len + (size_t)n + 1) * 2;
		char *s = mem_realloc(b->s, cap);

		if (n < 0 || !s) {
			b->oom = 1;
			return;
		}
		b->s = s;
		b->cap = cap;
		va_start(ap, fmt);
		vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/* Append ", json_extract(...) AS col" for each axis; the axis columns
 * joined with spaces around into *cols (for the collision test). */
static int axis_columns(struct store *st, int64_t id, struct sql_buf *b,
			struct sql_buf *cols)
{
	sqlite3_stmt *s = prep(st, "SELECT key, column_name FROM sweep_axes "
			       "WHERE sweep_id = ?1 ORDER BY pos", "i", id);
	int rc;

	if (!s)
		return SQLITE_ERROR;
	put(cols, " ");
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(s, 0);
		const char *col = (const char *)sqlite3_column_text(s, 1);

		if (!key || !col || !ident_ok(key, ".-") || !ident_ok(col, "")) {
			rc = SQLITE_CORRUPT;
			break;
		}
		put(b, ",\n  json_extract(p.axes_json, '$.\"%s\"') AS \"%s\"",
		    key, col);
		put(cols, "%s ", col);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Append the columns of v_runs that no axis column has. */
static void run_columns(struct sql_buf *b, const struct sql_buf *cols)
{
	char pat[160];
	size_t i;

	for (i = 0; i < store_nrun_cols; i++) {
		snprintf(pat, sizeof(pat), " %s ", store_run_cols[i].name);
		if (!cols->s || !strstr(cols->s, pat))
			put(b, ",\n  %s AS %s", store_run_cols[i].expr,
			    store_run_cols[i].name);
	}
}

int store_sweep_view(struct store *st, int64_t id)
{
	struct sql_buf b = { NULL, 0, 0, 0 }, cols = b;
	sqlite3_stmt *s = prep(st, "SELECT view_name FROM sweeps WHERE id = ?1",
			       "i", id);
	char view[200];
	int rc;

	if (!s)
		return SQLITE_ERROR;
	rc = sqlite3_step(s);
	snprintf(view, sizeof(view), "%s", rc == SQLITE_ROW &&
		 sqlite3_column_text(s, 0) ?
		 (const char *)sqlite3_column_text(s, 0) : "");
	sqlite3_finalize(s);
	if (!ident_ok(view, ""))
		return SQLITE_CORRUPT;
	put(&b, "DROP VIEW IF EXISTS \"%s\";\nCREATE VIEW \"%s\" AS\nSELECT "
	    "p.idx, p.status, p.reason", view, view);
	rc = axis_columns(st, id, &b, &cols);
	run_columns(&b, &cols);
	/* Joined to the tables, not to v_runs: SQLite cannot flatten a join
	 * view on the right of a LEFT JOIN, and would build all of v_runs
	 * for every lookup. */
	put(&b, "\nFROM sweep_points p\n  LEFT JOIN runs r ON r.id = p.run_id\n"
	    "  LEFT JOIN step_results s ON s.run_id = p.run_id\n"
	    "WHERE p.sweep_id = %lld\nORDER BY p.idx;\n", (long long)id);
	if (rc == SQLITE_OK)
		rc = b.oom ? SQLITE_NOMEM :
			sqlite3_exec(st->db, b.s, NULL, NULL, NULL);
	mem_free(b.s);
	mem_free(cols.s);
	return rc;
}

/* ---- the sweep ------------------------------------------------------ */

/* "v_sweep_" and the name with every other character than [A-Za-z0-9_]
 * as '_'. */
static void view_name(const char *name, char *out, size_t len)
{
	size_t i, n = (size_t)snprintf(out, len, "v_sweep_%s", name);

	for (i = 8; i < n && i < len; i++)
		if (!ident_ok((char[]){ out[i], '\0' }, ""))
			out[i] = '_';
}

/* The existing sweep's axes must be sw's. 0, -2 (reported), -1. */
static int same_axes(struct store *st, int64_t id,
		     const struct store_sweep *sw, struct diag *d)
{
	sqlite3_stmt *s = prep(st, "SELECT key FROM sweep_axes WHERE "
			       "sweep_id = ?1 ORDER BY pos", "i", id);
	char had[1024] = "";
	size_t k = 0, len = 0;
	int rc, same = 1;

	if (!s)
		return -1;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(s, 0);

		if (!key || k >= sw->naxes || strcmp(key, sw->axis_keys[k]))
			same = 0;
		if (key && len < sizeof(had))
			len += (size_t)snprintf(had + len, sizeof(had) - len,
						"%s%s", k ? ", " : "", key);
		k++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return -1;
	if (same && k == sw->naxes)
		return 0;
	diag_error(d, st->path, 0, 0, "the database already has a sweep "
		   "'%s' over other axes (%s); give this sweep another name: "
		   "(name: in the file) or use --db PATH", sw->name, had);
	return -2;
}

static int add_axes(struct store *st, int64_t id, const struct store_sweep *sw)
{
	size_t k;

	for (k = 0; k < sw->naxes; k++)
		if (!ident_ok(sw->axis_keys[k], ".-") ||
		    !ident_ok(sw->axis_columns[k], "") ||
		    step1(prep(st, "INSERT INTO sweep_axes(sweep_id, pos, key, "
			       "column_name, kind) VALUES (?1, ?2, ?3, ?4, ?5)",
			       "iittt", id, (int64_t)k, sw->axis_keys[k],
			       sw->axis_columns[k], sw->axis_kinds[k]),
			  NULL) != SQLITE_DONE)
			return -1;
	return 0;
}

/* Find or create; inside the transaction. The id, -2 or -1. */
static int64_t find_or_add(struct store *st, const struct store_sweep *sw,
			   struct diag *d)
{
	char view[200], np[32];
	int64_t id = 0;
	int rc;

	snprintf(np, sizeof(np), "%llu", (unsigned long long)sw->npoints);
	rc = step1(prep(st, "SELECT id FROM sweeps WHERE name = ?1", "t",
			sw->name), &id);
	if (rc == SQLITE_ROW) {
		rc = same_axes(st, id, sw, d);
		if (rc != 0)
			return rc;
		rc = step1(prep(st, "UPDATE sweeps SET file = ?2, base = ?3, "
				"npoints = ?4, llmsim_version = ?5 WHERE id = ?1",
				"ittit", id, sw->file, sw->base,
				(int64_t)sw->npoints, sw->version), NULL);
		return rc == SQLITE_DONE ? id : -1;
	}
	if (rc != SQLITE_DONE)
		return -1;
	view_name(sw->name, view, sizeof(view));
	rc = step1(prep(st, "SELECT 1 FROM sweeps WHERE view_name = ?1", "t",
			view), NULL);
	if (rc == SQLITE_ROW) {
		diag_error(d, st->path, 0, 0, "sweep '%s' would share the view "
			   "'%s' with another sweep; give it another name",
			   sw->name, view);
		return -2;
	}
	rc = step1(prep(st, "INSERT INTO sweeps(name, view_name, file, base, "
			"npoints, llmsim_version) VALUES (?1, ?2, ?3, ?4, ?5, "
			"?6)", "ttttit", sw->name, view, sw->file, sw->base,
			(int64_t)sw->npoints, sw->version), NULL);
	if (rc != SQLITE_DONE)
		return -1;
	id = sqlite3_last_insert_rowid(st->db);
	return add_axes(st, id, sw) == 0 ? id : -1;
}

/* Inside the transaction: find or add, and the view. The id; -2 or -1
 * after reporting. */
static int64_t begin_tx(struct store *st, const void *ctx, struct diag *d)
{
	const struct store_sweep *sw = ctx;
	int64_t id = find_or_add(st, sw, d);

	if (id > 0 && store_sweep_view(st, id) != SQLITE_OK)
		id = -1;
	if (id == -1)
		store_report(st, d, "recording sweep '%s'", sw->name);
	return id;
}

int64_t store_sweep_begin(struct store *st, const struct store_sweep *sw,
			  struct diag *d)
{
	return store_tx(st, begin_tx, sw, d);
}

/* ---- points --------------------------------------------------------- */

int store_point_done(struct store *st, int64_t sweep_id, const char *hash,
		     struct diag *d)
{
	int rc = step1(prep(st, "SELECT 1 FROM sweep_points WHERE sweep_id = "
			    "?1 AND point_hash = ?2 AND status = 'ok'", "it",
			    sweep_id, hash), NULL);

	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	store_report(st, d, "looking up a sweep point");
	return -1;
}

/* Inside the transaction: the point's row. SQLite result code. */
static int put_point(struct store *st, const struct store_point *p,
		     int64_t run_id)
{
	sqlite3_stmt *s;
	int rc;

	rc = step1(prep(st, "DELETE FROM sweep_points WHERE sweep_id = ?1 AND "
			"status = 'invalid' AND (axes_json = ?2 OR "
			"point_hash = ?3)", "itt", p->sweep_id, p->axes_json,
			p->hash), NULL);
	if (rc != SQLITE_DONE)
		return rc;
	s = prep(st, "INSERT INTO sweep_points(sweep_id, point_hash, idx, "
		 "status, reason, run_id, axes_json) VALUES (?1, ?2, ?3, ?4, "
		 "?5, ?6, ?7)", "itit", p->sweep_id, p->hash, (int64_t)p->idx,
		 p->status == STORE_POINT_OK ? "ok" : "invalid");
	if (!s)
		return SQLITE_ERROR;
	rc = p->reason ? sqlite3_bind_text(s, 5, p->reason, -1, SQLITE_STATIC)
		       : sqlite3_bind_null(s, 5);
	if (rc == SQLITE_OK)
		rc = run_id > 0 ? sqlite3_bind_int64(s, 6, run_id)
				: sqlite3_bind_null(s, 6);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 7, p->axes_json, -1, SQLITE_STATIC);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(s);
		return rc;
	}
	return step1(s, NULL);
}

struct point_args {
	const struct store_point *p;
	const struct store_run *run;
	const struct store_step *step;
	const struct store_plan_row *plan;
	uint32_t nplan;
	int *dup;
};

/* Inside the transaction: the run (a point that ran and is new) and the
 * point. The run id, 0, or -1 after reporting. */
static int64_t point_tx(struct store *st, const void *ctx, struct diag *d)
{
	const struct point_args *a = ctx;
	const struct store_point *p = a->p;
	int64_t id = 0;
	int rc;

	if (p->status == STORE_POINT_OK) {
		rc = step1(prep(st, "SELECT 1 FROM sweep_points WHERE sweep_id "
				"= ?1 AND point_hash = ?2 AND status = 'ok'",
				"it", p->sweep_id, p->hash), NULL);
		if (rc == SQLITE_ROW) {
			*a->dup = 1;
			return 0;
		}
		if (rc != SQLITE_DONE) {
			store_report(st, d, "looking up a sweep point");
			return -1;
		}
		id = store_put_all(st, a->run, a->step, NULL, 0, d);
		if (id < 0 || (a->plan && store_put_plan_rows(st, id, a->plan,
							       a->nplan, d) != 0))
			return -1;
	}
	if (put_point(st, p, id) != SQLITE_DONE) {
		store_report(st, d, "storing sweep point %llu",
			     (unsigned long long)p->idx);
		return -1;
	}
	return id;
}

int64_t store_put_point(struct store *st, const struct store_point *p,
			const struct store_run *run,
			const struct store_step *step, int *dup,
			struct diag *d)
{
	struct point_args a = { p, run, step, NULL, 0, dup };

	*dup = 0;
	return store_tx(st, point_tx, &a, d);
}

int64_t store_put_plan_point(struct store *st, const struct store_point *p,
			     const struct store_run *run,
			     const struct store_step *step,
			     const struct store_plan_row *rows, uint32_t nrows,
			     int *dup, struct diag *d)
{
	struct point_args a = { p, run, step, rows, nrows, dup };

	*dup = 0;
	return store_tx(st, point_tx, &a, d);
}
