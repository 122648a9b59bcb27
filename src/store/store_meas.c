/*
 * store_meas.c - measurements (`llmsim measure`) and validation rows
 * (`llmsim validate`) in the results database: writing them, one
 * transaction per run, and reading measurements back for validate and
 * calibrate. Tables: measure_runs, measurements, validation_results
 * (store_schema.c, docs/results-store.md).
 *
 * Depends on SQLite, diag.h, mem.h.
 */
#include "store.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "store_impl.h"

/* A prepared statement for one call; NULL after reporting. */
static sqlite3_stmt *prepare(struct store *st, const char *sql,
			     struct diag *d)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK) {
		store_report(st, d, "preparing a statement");
		sqlite3_finalize(s);
		return NULL;
	}
	return s;
}

/* NaN (not applicable) as NULL, else the number. */
static int bind_num(sqlite3_stmt *s, int i, double v)
{
	return isnan(v) ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v);
}

static int bind_opt_int(sqlite3_stmt *s, int i, int64_t v, int64_t none)
{
	return v == none ? sqlite3_bind_null(s, i) : sqlite3_bind_int64(s, i, v);
}

/* ---- measurements --------------------------------------------------- */

struct meas_args {
	const struct store_run *run;
	const struct store_meas_info *info;
	const struct store_meas_row *rows;
	uint32_t nrows;
};

static int put_info(struct store *st, int64_t id,
		    const struct store_meas_info *in, struct diag *d)
{
	const char *text[] = {
		in->backend, in->system, in->sets_json, in->host, in->device,
		in->library, in->library_version, in->library_path,
		in->runtime, in->command,
	};
	sqlite3_stmt *s = prepare(st, "INSERT INTO measure_runs(run_id, "
		"backend, system, sets_json, host, device, library, "
		"library_version, library_path, runtime, command, ranks, "
		"nodes, devices_per_node, cpus, complete, backend_error) VALUES "
		"(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
		"?15, ?16, ?17)", d);
	int rc;

	if (!s)
		return -1;
	rc = sqlite3_bind_int64(s, 1, id);
	if (rc == SQLITE_OK)
		rc = store_bind_texts(s, 2, text, 10);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 12, in->ranks);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 13, in->nodes);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 14, in->devices_per_node);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 15, in->cpus);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 16, !in->incomplete);
	if (rc == SQLITE_OK)
		rc = in->error && in->error[0] ?
		     sqlite3_bind_text(s, 17, in->error, -1, SQLITE_STATIC) :
		     sqlite3_bind_null(s, 17);
	rc = store_insert(s, rc);
	if (rc != SQLITE_DONE)
		store_report(st, d, "storing the measurement's setting");
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -1;
}

static int bind_point(sqlite3_stmt *s, int64_t id, uint32_t idx,
		      const struct store_meas_row *r)
{
	const char *text[] = { r->op, r->type, r->check };
	const double t[] = { r->size_B, r->count, r->time_s, r->time_min_s,
			     r->time_max_s };
	int rc = sqlite3_bind_int64(s, 1, id);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s, 2, idx);
	if (rc == SQLITE_OK)
		rc = store_bind_texts(s, 3, text, 3);
	if (rc == SQLITE_OK)
		rc = store_bind_doubles(s, 6, t, 5);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s, 11, r->ranks);
	if (rc == SQLITE_OK)
		rc = bind_opt_int(s, 12, r->root, -1);
	if (rc == SQLITE_OK)
		rc = bind_opt_int(s, 13, r->m, 0);
	if (rc == SQLITE_OK)
		rc = bind_opt_int(s, 14, r->n, 0);
	if (rc == SQLITE_OK)
		rc = bind_opt_int(s, 15, r->k, 0);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 16, r->iters);
	if (rc == SQLITE_OK)
		rc = bind_num(s, 17, r->algbw_Bps);
	if (rc == SQLITE_OK)
		rc = bind_num(s, 18, r->busbw_Bps);
	if (rc == SQLITE_OK)
		rc = bind_num(s, 19, r->rate);
	return rc;
}

static int64_t put_measure(struct store *st, const void *ctx, struct diag *d)
{
	const struct meas_args *a = ctx;
	int64_t id = store_put_run(st, a->run, d);
	sqlite3_stmt *s;
	uint32_t i;
	int rc = SQLITE_DONE;

	if (id < 0 || put_info(st, id, a->info, d) != 0)
		return -1;
	s = prepare(st, "INSERT INTO measurements(run_id, idx, op, type, "
		    "check_result, size_B, count, time_s, time_min_s, "
		    "time_max_s, ranks, root, m, n, k, iters, algbw_Bps, "
		    "busbw_Bps, rate) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
		    "?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)", d);
	if (!s)
		return -1;
	for (i = 0; i < a->nrows && rc == SQLITE_DONE; i++)
		rc = store_insert(s, bind_point(s, id, i, &a->rows[i]));
	if (rc != SQLITE_DONE)
		store_report(st, d, "storing measured point %u of %u", i,
			     a->nrows);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? id : -1;
}

int64_t store_put_measure(struct store *st, const struct store_run *run,
			  const struct store_meas_info *info,
			  const struct store_meas_row *rows, uint32_t nrows,
			  struct diag *d)
{
	struct meas_args a = { run, info, rows, nrows };

	return store_tx(st, put_measure, &a, d);
}

int64_t store_find_measure(struct store *st, const struct store_run *run,
			   const struct store_meas_info *in, struct diag *d)
{
	const char *text[] = {
		run->result_json, in->host, in->device, in->library_path,
		in->runtime, run->config_hash, in->system, in->sets_json,
	};
	sqlite3_stmt *s = prepare(st, "SELECT min(r.id) FROM runs r JOIN "
		"measure_runs i ON i.run_id = r.id WHERE r.command = 'measure' "
		"AND r.result_json = ?1 AND i.host = ?2 AND i.device = ?3 AND "
		"i.library_path = ?4 AND i.runtime = ?5 AND r.config_hash = ?6 "
		"AND i.system = ?7 AND i.sets_json = ?8", d);
	int64_t id = -1;
	int rc;

	if (!s)
		return -1;
	rc = store_bind_texts(s, 1, text, 8);
	if (rc == SQLITE_OK && (rc = sqlite3_step(s)) == SQLITE_ROW)
		id = sqlite3_column_int64(s, 0);	/* NULL: 0 */
	else
		store_report(st, d, "looking for the same measurement");
	sqlite3_finalize(s);
	return id;
}

/* ---- validation ----------------------------------------------------- */

struct valid_args {
	const struct store_run *run;
	const struct store_valid_row *rows;
	uint32_t nrows;
};

static int bind_valid(sqlite3_stmt *s, int64_t id, uint32_t idx,
		      const struct store_valid_row *r)
{
	const char *text[] = { r->kind, r->table_id, r->case_id, r->unit };
	const double v[] = { r->measured, r->predicted, r->error };
	int rc = sqlite3_bind_int64(s, 1, id);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s, 2, idx);
	if (rc == SQLITE_OK)
		rc = store_bind_texts(s, 3, text, 4);
	if (rc == SQLITE_OK)
		rc = store_bind_doubles(s, 7, v, 3);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 10, r->scored);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 11, r->in_sample);
	if (rc == SQLITE_OK)
		rc = bind_num(s, 12, r->lo);
	if (rc == SQLITE_OK)
		rc = bind_num(s, 13, r->hi);
	return rc;
}

static int64_t put_validation(struct store *st, const void *ctx,
			      struct diag *d)
{
	const struct valid_args *a = ctx;
	int64_t id = store_put_run(st, a->run, d);
	sqlite3_stmt *s;
	uint32_t i;
	int rc = SQLITE_DONE;

	if (id < 0)
		return -1;
	s = prepare(st, "INSERT INTO validation_results(run_id, idx, kind, "
		    "table_id, case_id, unit, measured, predicted, error, "
		    "scored, in_sample, lo, hi) VALUES (?1, ?2, ?3, ?4, ?5, "
		    "?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)", d);
	if (!s)
		return -1;
	for (i = 0; i < a->nrows && rc == SQLITE_DONE; i++)
		rc = store_insert(s, bind_valid(s, id, i, &a->rows[i]));
	if (rc != SQLITE_DONE)
		store_report(st, d, "storing validation row %u of %u", i,
			     a->nrows);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? id : -1;
}

int64_t store_put_validation(struct store *st, const struct store_run *run,
			     const struct store_valid_row *rows, uint32_t nrows,
			     struct diag *d)
{
	struct valid_args a = { run, rows, nrows };

	return store_tx(st, put_validation, &a, d);
}

/* ---- reading measurements back -------------------------------------- */

static const char *col_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

static double col_num(sqlite3_stmt *s, int i)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? NAN
						     : sqlite3_column_double(s, i);
}

static int64_t col_int(sqlite3_stmt *s, int i, int64_t none)
{
	return sqlite3_column_type(s, i) == SQLITE_NULL ? none
						     : sqlite3_column_int64(s, i);
}

static void free_rows(struct store_meas_row *rows, uint32_t n)
{
	uint32_t i;

	for (i = 0; rows && i < n; i++) {
		mem_free((char *)rows[i].op);
		mem_free((char *)rows[i].type);
		mem_free((char *)rows[i].check);
	}
	mem_free(rows);
}

int store_meas_from_v1(struct store_meas_row *r)
{
	double p = r->ranks;

	if (!strcmp(r->op, "allgather") || !strcmp(r->op, "reducescatter") ||
	    !strcmp(r->op, "alltoall")) {
		r->count /= p;
		return 1;
	}
	if (strcmp(r->op, "alltoallv") != 0)
		return 0;
	r->size_B /= p;
	r->count /= p * p;
	r->algbw_Bps /= p;
	r->busbw_Bps /= p;
	return 1;
}

/* One point from the row s is on, in the current terms (a database a
 * reader did not migrate: store_meas_from_v1 before schema 10); -1 when
 * out of memory. */
static int read_point(const struct store *st, sqlite3_stmt *s,
		      struct store_meas_row *r)
{
	r->op = mem_strdup(col_text(s, 0));
	r->type = mem_strdup(col_text(s, 1));
	r->check = mem_strdup(col_text(s, 2));
	r->size_B = col_num(s, 3);
	r->count = col_num(s, 4);
	r->ranks = (uint32_t)col_int(s, 5, 1);
	r->root = (int)col_int(s, 6, -1);
	r->m = col_int(s, 7, 0);
	r->n = col_int(s, 8, 0);
	r->k = col_int(s, 9, 0);
	r->iters = (int)col_int(s, 10, 1);
	r->time_s = col_num(s, 11);
	r->time_min_s = col_num(s, 12);
	r->time_max_s = col_num(s, 13);
	r->algbw_Bps = col_num(s, 14);
	r->busbw_Bps = col_num(s, 15);
	r->rate = col_num(s, 16);
	if (!r->op || !r->type || !r->check)
		return -1;
	if (st->version < 10)
		store_meas_from_v1(r);
	return 0;
}

/* Every point of run id into *out (mem_alloc'd); the count, or -1. */
static int64_t read_points(struct store *st, sqlite3_stmt *s, int64_t id,
			   struct store_meas_row **out, struct diag *d)
{
	struct store_meas_row *rows = NULL, *more;
	uint32_t n = 0, cap = 0;
	int rc;

	sqlite3_bind_int64(s, 1, id);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			more = mem_realloc(rows, cap * sizeof(*rows));
			if (!more)
				goto oom;
			rows = more;
		}
		memset(&rows[n], 0, sizeof(rows[n]));
		if (read_point(st, s, &rows[n++]) != 0)
			goto oom;
	}
	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		store_report(st, d, "reading the points of run %lld",
			     (long long)id);
		free_rows(rows, n);
		return -1;
	}
	*out = rows;
	return n;
oom:
	sqlite3_reset(s);
	free_rows(rows, n);
	diag_oom(d);
	return -1;
}

/* The run s is on, its points read, to fn. */
static int visit(struct store *st, sqlite3_stmt *runs, sqlite3_stmt *pts,
		 int (*fn)(void *, const struct store_meas_run *), void *ctx,
		 struct diag *d)
{
	struct store_meas_run r;
	struct store_meas_row *rows = NULL;
	int64_t n;
	int rc;

	memset(&r, 0, sizeof(r));
	r.id = sqlite3_column_int64(runs, 0);
	r.created_at = col_text(runs, 1);
	r.config_json = col_text(runs, 2);
	r.info.backend = col_text(runs, 3);
	r.info.system = col_text(runs, 4);
	r.info.sets_json = col_text(runs, 5);
	r.info.host = col_text(runs, 6);
	r.info.device = col_text(runs, 7);
	r.info.library = col_text(runs, 8);
	r.info.library_version = col_text(runs, 9);
	r.info.library_path = col_text(runs, 10);
	r.info.runtime = col_text(runs, 11);
	r.info.command = col_text(runs, 12);
	r.info.ranks = (int)sqlite3_column_int(runs, 13);
	r.info.nodes = (int)sqlite3_column_int(runs, 14);
	r.info.devices_per_node = (int)sqlite3_column_int(runs, 15);
	r.info.cpus = (int)sqlite3_column_int(runs, 16);
	r.info.incomplete = sqlite3_column_type(runs, 17) != SQLITE_NULL &&
			    sqlite3_column_int(runs, 17) == 0;
	r.info.error = col_text(runs, 18);
	if ((n = read_points(st, pts, r.id, &rows, d)) < 0)
		return -1;
	r.rows = rows;
	r.nrows = (uint32_t)n;
	rc = fn(ctx, &r);
	free_rows(rows, r.nrows);
	return rc;
}

int64_t store_each_measure(struct store *st, int64_t id,
			   int (*fn)(void *ctx, const struct store_meas_run *r),
			   void *ctx, struct diag *d)
{
	sqlite3_stmt *runs = prepare(st, "SELECT r.id, r.created_at, "
		"r.config_json, i.backend, i.system, i.sets_json, i.host, "
		"i.device, i.library, i.library_version, i.library_path, "
		"i.runtime, i.command, i.ranks, i.nodes, i.devices_per_node, "
		"i.cpus, i.complete, i.backend_error "
		"FROM runs r JOIN measure_runs i ON i.run_id = r.id "
		"WHERE ?1 <= 0 OR r.id = ?1 ORDER BY r.id", d);
	sqlite3_stmt *pts = runs ? prepare(st, "SELECT op, type, "
		"check_result, size_B, count, ranks, root, m, n, k, iters, "
		"time_s, time_min_s, time_max_s, algbw_Bps, busbw_Bps, rate "
		"FROM measurements WHERE run_id = ?1 ORDER BY idx", d) : NULL;
	int64_t seen = 0, rc = 0;
	int step = SQLITE_DONE;

	if (!pts) {
		sqlite3_finalize(runs);
		return -1;
	}
	sqlite3_bind_int64(runs, 1, id);
	while (rc == 0 && (step = sqlite3_step(runs)) == SQLITE_ROW) {
		seen++;
		rc = visit(st, runs, pts, fn, ctx, d);
	}
	if (rc == 0 && step != SQLITE_DONE) {
		store_report(st, d, "reading the measurements");
		rc = -1;
	}
	if (rc == 0 && id > 0 && seen == 0) {
		diag_error(d, st->path, 0, 0, "run %lld is not a measure run "
			   "(llmsim measure stores those)", (long long)id);
		rc = -1;
	}
	sqlite3_finalize(pts);
	sqlite3_finalize(runs);
	return rc ? rc : seen;
}
