/*
 * store_merge.c - merge one results database into another (`llmsim db
 * merge`): the shards of a sweep, the ranks of an MPI sweep, or any two
 * databases.
 *
 * The input is first opened as a store (so an older one is upgraded and
 * a foreign or newer one refused with the usual messages), then attached
 * to the output's connection, and everything is copied in one
 * transaction:
 *
 *   runs        a run the output already has (same command, config
 *               hash, llmsim version and result JSON) maps to that run;
 *               any other is inserted, keeping its created_at;
 *   per-run     every other table with a run_id column (step_results,
 *               collective_results, and what later migrations add) is
 *               copied for the inserted runs, run_id mapped;
 *   sweeps      matched by name (their axes must agree), else inserted
 *               with their axes; points are keyed by (sweep, point hash):
 *               a point the output has is kept, except that a point that
 *               ran replaces the same point stored as invalid.
 *
 * Tables the merge does not know how to copy (no run_id column) make it
 * refuse rather than drop rows.
 */
#include "store_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/diag.h"
#include "base/mem.h"

/* Tables the merge handles itself. */
static const char *const own_tables[] = {
	"meta", "runs", "sweeps", "sweep_axes", "sweep_points",
};

static int exec(struct store *st, const char *sql)
{
	return sqlite3_exec(st->db, sql, NULL, NULL, NULL);
}

/* Prepare and bind int64 values ?1.. from vals[0..n-1]. */
static sqlite3_stmt *prep_i(struct store *st, const char *sql,
			    const int64_t *vals, int n)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(st->db, sql, -1, &s, NULL), i;

	for (i = 0; rc == SQLITE_OK && i < n; i++)
		rc = sqlite3_bind_int64(s, i + 1, vals[i]);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

/* Run a statement with int64 parameters to completion. */
static int run_i(struct store *st, const char *sql, const int64_t *vals,
		 int n)
{
	sqlite3_stmt *s = prep_i(st, sql, vals, n);
	int rc;

	if (!s)
		return SQLITE_ERROR;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW)
		;
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- runs ----------------------------------------------------------- */

static int map_runs(struct store *st, struct store_merge_stats *stats)
{
	sqlite3_stmt *s;
	int64_t src;
	int rc;

	rc = exec(st, "CREATE TEMP TABLE merge_runs (src INTEGER PRIMARY KEY, "
		  "dst INTEGER, new INTEGER NOT NULL DEFAULT 0);\n"
		  "INSERT INTO temp.merge_runs(src, dst) SELECT s.id, "
		  "(SELECT m.id FROM main.runs m WHERE m.config_hash = "
		  "s.config_hash AND m.command = s.command AND "
		  "m.llmsim_version = s.llmsim_version AND m.result_json IS "
		  "s.result_json ORDER BY m.id LIMIT 1) FROM src.runs s;");
	if (rc != SQLITE_OK)
		return rc;
	s = prep_i(st, "SELECT src FROM temp.merge_runs WHERE dst IS NULL "
		   "ORDER BY src", NULL, 0);
	if (!s)
		return SQLITE_ERROR;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t v[2];

		src = sqlite3_column_int64(s, 0);
		rc = run_i(st, "INSERT INTO main.runs(created_at, command, kind, "
			   "llmsim_version, config_hash, config_json, "
			   "result_json) SELECT created_at, command, kind, "
			   "llmsim_version, config_hash, config_json, "
			   "result_json FROM src.runs WHERE id = ?1", &src, 1);
		if (rc != SQLITE_OK)
			break;
		v[0] = src;
		v[1] = sqlite3_last_insert_rowid(st->db);
		rc = run_i(st, "UPDATE temp.merge_runs SET dst = ?2, new = 1 "
			   "WHERE src = ?1", v, 2);
		if (rc != SQLITE_OK)
			break;
		stats->runs_added++;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE && rc != SQLITE_OK)
		return rc;
	s = prep_i(st, "SELECT count(*) FROM temp.merge_runs WHERE new = 0",
		   NULL, 0);
	if (!s)
		return SQLITE_ERROR;
	if (sqlite3_step(s) == SQLITE_ROW)
		stats->runs_present += (uint64_t)sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return SQLITE_OK;
}

/* ---- tables that hang off runs -------------------------------------- */

static int is_own(const char *t)
{
	size_t i;

	for (i = 0; i < sizeof(own_tables) / sizeof(own_tables[0]); i++)
		if (strcmp(t, own_tables[i]) == 0)
			return 1;
	return strncmp(t, "sqlite_", 7) == 0;
}

/* "a, b, run_id" of table t's columns that both databases have (as
 * text in cols; sel the same with run_id mapped and a lone INTEGER
 * PRIMARY KEY left to the output). SQLite code; *has_run says whether
 * t has a run_id column. */
static int columns(struct store *st, const char *t, char *cols, char *sel,
		   size_t len, int *has_run)
{
	sqlite3_stmt *s = NULL;
	size_t a = 0, b = 0;
	int rc = sqlite3_prepare_v2(st->db, "SELECT s.name, s.pk, s.type, "
		"(SELECT count(*) FROM pragma_table_info(?1, 'src') WHERE pk) "
		"FROM pragma_table_info(?1, 'src') s JOIN pragma_table_info(?1, "
		"'main') m ON m.name = s.name ORDER BY s.cid", -1, &s, NULL);

	*has_run = 0;
	cols[0] = sel[0] = '\0';
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 1, t, -1, SQLITE_STATIC);
	while (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 0);

		rc = SQLITE_OK;
		const char *type = (const char *)sqlite3_column_text(s, 2);
		int rowid_pk = sqlite3_column_int(s, 1) == 1 &&
			       sqlite3_column_int(s, 3) == 1 && type &&
			       strcmp(type, "INTEGER") == 0;

		if (!name || strchr(name, '"')) {
			rc = SQLITE_CORRUPT;
			break;
		}
		if (rowid_pk && strcmp(name, "run_id") != 0)
			continue;	/* a new rowid in the output */
		if (strcmp(name, "run_id") == 0)
			*has_run = 1;
		a += (size_t)snprintf(cols + a, len > a ? len - a : 0, "%s\"%s\"",
				      a ? ", " : "", name);
		b += (size_t)snprintf(sel + b, len > b ? len - b : 0,
				      strcmp(name, "run_id") == 0 ? "%sm.dst" :
				      "%st.\"%s\"", b ? ", " : "", name);
	}
	sqlite3_finalize(s);
	if (a >= len || b >= len)
		return SQLITE_TOOBIG;
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

static int copy_table(struct store *st, const char *t, struct diag *d)
{
	char cols[4096], sel[4096], sql[9000];
	int has_run, rc = columns(st, t, cols, sel, sizeof(cols), &has_run);

	if (rc != SQLITE_OK)
		return rc;
	if (!has_run) {
		diag_error(d, st->path, 0, 0, "cannot merge table '%s': it has "
			   "no run_id column, so llmsim does not know which rows "
			   "belong together", t);
		return SQLITE_ABORT;
	}
	snprintf(sql, sizeof(sql), "INSERT INTO main.\"%s\"(%s) SELECT %s FROM "
		 "src.\"%s\" t JOIN temp.merge_runs m ON m.src = t.run_id "
		 "WHERE m.new = 1", t, cols, sel, t);
	return exec(st, sql);
}

static int copy_run_tables(struct store *st, struct diag *d)
{
	sqlite3_stmt *s = prep_i(st, "SELECT name FROM src.sqlite_master WHERE "
				 "type = 'table' ORDER BY name", NULL, 0);
	char t[256];
	int rc;

	if (!s)
		return SQLITE_ERROR;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(s, 0);

		if (!name || is_own(name) || strchr(name, '"'))
			continue;
		snprintf(t, sizeof(t), "%s", name);
		rc = copy_table(st, t, d);
		if (rc != SQLITE_OK)
			break;
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- sweeps --------------------------------------------------------- */

/* Axes of sweep id in schema db ("main" or "src") as "k1\nk2\n". */
static int axes_text(struct store *st, const char *db, int64_t id,
		     char *out, size_t len)
{
	char sql[160];
	sqlite3_stmt *s;
	size_t at = 0;
	int rc;

	snprintf(sql, sizeof(sql), "SELECT key FROM %s.sweep_axes WHERE "
		 "sweep_id = ?1 ORDER BY pos", db);
	s = prep_i(st, sql, &id, 1);
	if (!s)
		return SQLITE_ERROR;
	out[0] = '\0';
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && at < len)
		at += (size_t)snprintf(out + at, len - at, "%s\n",
				       (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? SQLITE_OK : SQLITE_TOOBIG;
}

/* The output's sweep for the input's sweep src_id: matched by name or
 * inserted. SQLite code; *dst its id. */
static int map_sweep(struct store *st, int64_t src_id, int64_t *dst,
		     struct diag *d)
{
	char a[4096], b[4096], name[256];
	sqlite3_stmt *s = prep_i(st, "SELECT m.id, s.name FROM src.sweeps s "
				 "LEFT JOIN main.sweeps m ON m.name = s.name "
				 "WHERE s.id = ?1", &src_id, 1);
	int64_t v[2] = { src_id, 0 };
	int rc, found;

	if (!s || sqlite3_step(s) != SQLITE_ROW) {
		sqlite3_finalize(s);
		return SQLITE_ERROR;
	}
	found = sqlite3_column_type(s, 0) != SQLITE_NULL;
	*dst = sqlite3_column_int64(s, 0);
	snprintf(name, sizeof(name), "%s",
		 (const char *)sqlite3_column_text(s, 1));
	sqlite3_finalize(s);
	if (found) {
		rc = axes_text(st, "src", src_id, b, sizeof(b));
		if (rc == SQLITE_OK) {
			rc = axes_text(st, "main", *dst, a, sizeof(a));
			if (rc == SQLITE_OK && strcmp(a, b) != 0) {
				diag_error(d, st->path, 0, 0, "sweep '%s' has "
					   "other axes here than in the database "
					   "merged in; not merged", name);
				return SQLITE_ABORT;
			}
		}
		v[1] = *dst;
		return rc != SQLITE_OK ? rc : run_i(st, "UPDATE main.sweeps SET "
			"npoints = max(npoints, (SELECT npoints FROM src.sweeps "
			"WHERE id = ?1)) WHERE id = ?2", v, 2);
	}
	rc = run_i(st, "INSERT INTO main.sweeps(name, view_name, created_at, "
		   "file, base, npoints, llmsim_version) SELECT name, view_name, "
		   "created_at, file, base, npoints, llmsim_version FROM "
		   "src.sweeps WHERE id = ?1", &src_id, 1);
	if (rc != SQLITE_OK)
		return rc;
	*dst = v[1] = sqlite3_last_insert_rowid(st->db);
	return run_i(st, "INSERT INTO main.sweep_axes(sweep_id, pos, key, "
		     "column_name, kind) SELECT ?2, pos, key, column_name, kind "
		     "FROM src.sweep_axes WHERE sweep_id = ?1", v, 2);
}

static int copy_points(struct store *st, int64_t src, int64_t dst,
		       struct store_merge_stats *stats)
{
	int64_t v[2] = { src, dst };
	int rc, before, added;

	rc = run_i(st, "DELETE FROM main.sweep_points WHERE sweep_id = ?2 AND "
		   "status = 'invalid' AND axes_json IN (SELECT axes_json FROM "
		   "src.sweep_points WHERE sweep_id = ?1 AND status = 'ok')",
		   v, 2);
	if (rc != SQLITE_OK)
		return rc;
	before = sqlite3_total_changes(st->db);
	rc = run_i(st, "INSERT INTO main.sweep_points(sweep_id, point_hash, idx, "
		   "status, reason, run_id, axes_json, stored_at) SELECT ?2, "
		   "p.point_hash, p.idx, p.status, p.reason, m.dst, p.axes_json, "
		   "p.stored_at FROM src.sweep_points p LEFT JOIN "
		   "temp.merge_runs m ON m.src = p.run_id WHERE p.sweep_id = ?1 "
		   "AND NOT EXISTS (SELECT 1 FROM main.sweep_points q WHERE "
		   "q.sweep_id = ?2 AND (q.point_hash = p.point_hash OR "
		   "(q.status = 'ok' AND p.status = 'invalid' AND q.axes_json = "
		   "p.axes_json))) ORDER BY p.idx", v, 2);
	if (rc != SQLITE_OK)
		return rc;
	added = sqlite3_total_changes(st->db) - before;
	stats->points_added += (uint64_t)added;
	return SQLITE_OK;
}

static int merge_sweeps(struct store *st, struct store_merge_stats *stats,
			struct diag *d)
{
	sqlite3_stmt *s = prep_i(st, "SELECT id, (SELECT count(*) FROM "
				 "src.sweep_points p WHERE p.sweep_id = w.id) "
				 "FROM src.sweeps w ORDER BY id", NULL, 0);
	int64_t src, dst, total;
	uint64_t was;
	int rc;

	if (!s)
		return SQLITE_ERROR;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		src = sqlite3_column_int64(s, 0);
		total = sqlite3_column_int64(s, 1);
		rc = map_sweep(st, src, &dst, d);
		was = stats->points_added;
		if (rc == SQLITE_OK)
			rc = copy_points(st, src, dst, stats);
		if (rc == SQLITE_OK)
			rc = store_sweep_view(st, dst);
		if (rc != SQLITE_OK)
			break;
		stats->points_present += (uint64_t)total -
					 (stats->points_added - was);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* ---- the entry point ------------------------------------------------ */

/* The input is a regular file; 0, or -1 after reporting. */
static int input_file(const char *in_path, struct diag *d)
{
	struct stat sb;

	if (stat(in_path, &sb) != 0) {
		diag_error(d, in_path, 0, 0, "cannot read the database to merge: "
			   "%s", strerror(errno));
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {	/* not "cannot open for writing" */
		diag_error(d, in_path, 0, 0, "%s, not a results database to "
			   "merge", S_ISDIR(sb.st_mode) ? "a directory" :
			   "not a regular file");
		return -1;
	}
	return 0;
}

int store_merge_check(const char *in_path, struct diag *d)
{
	struct store *in;

	if (input_file(in_path, d) != 0 ||
	    !(in = store_open_readonly(in_path, d)))
		return -1;
	store_close(in);
	return 0;
}

/* Open the input as a store (upgrading it, refusing what is not ours),
 * then attach it. 0 or -1 after reporting. */
static int attach(struct store *st, const char *in_path, struct diag *d)
{
	struct store *in;
	sqlite3_stmt *s = NULL;
	int rc;

	if (input_file(in_path, d) != 0)
		return -1;
	in = store_open(in_path, d);
	if (!in)
		return -1;
	store_close(in);
	rc = sqlite3_prepare_v2(st->db, "ATTACH DATABASE ?1 AS src", -1, &s,
				NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(s, 1, in_path, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE) {
		store_report(st, d, "attaching '%s' to merge it", in_path);
		return -1;
	}
	return 0;
}

struct merge_args {
	const char *in_path;
	struct store_merge_stats *s;
};

/* Inside the transaction: everything. 0, or -1 after reporting. */
static int64_t merge_tx(struct store *st, const void *ctx, struct diag *d)
{
	const struct merge_args *a = ctx;
	int rc = map_runs(st, a->s);

	if (rc == SQLITE_OK)
		rc = copy_run_tables(st, d);
	if (rc == SQLITE_OK)
		rc = merge_sweeps(st, a->s, d);
	if (rc == SQLITE_OK)
		rc = exec(st, "DROP TABLE temp.merge_runs");
	if (rc == SQLITE_OK)
		return 0;
	if (rc != SQLITE_ABORT)	/* ABORT: reported already */
		store_report(st, d, "merging '%s'", a->in_path);
	return -1;
}

int store_merge(struct store *st, const char *in_path,
		struct store_merge_stats *stats, struct diag *d)
{
	struct store_merge_stats s = { 0, 0, 0, 0 };
	struct merge_args a = { in_path, &s };
	int64_t rc;

	if (attach(st, in_path, d) != 0)
		return -1;
	rc = store_tx(st, merge_tx, &a, d);
	(void)exec(st, "DROP TABLE IF EXISTS temp.merge_runs");
	(void)exec(st, "DETACH DATABASE src");
	if (rc < 0)
		return -1;
	stats->runs_added += s.runs_added;
	stats->runs_present += s.runs_present;
	stats->points_added += s.points_added;
	stats->points_present += s.points_present;
	return 0;
}
