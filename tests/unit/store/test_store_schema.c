/*
 * test_store_schema.c - what store_put() writes, read back with plain
 * SQL: every value as given, the views' columns and units, all or
 * nothing per result. (Suite `store`, set up in test_store.c.)
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "store/store_schema.h"
#include "store_fixture.h"

/* ---- storing and reading back ----------------------------------------- */

Test(store, put_stores_every_value_as_given)
{
	struct store *st = sf_open_ok(sf_db_path);
	sqlite3 *db;
	sqlite3_stmt *s;
	int i;

	cr_assert_eq(sf_put_ok(st), 1);
	store_close(st);
	db = sf_raw_open(sf_db_path);

	s = sf_query_row(db, "SELECT command, kind, llmsim_version, config_hash, "
		      "config_json, result_json, created_at GLOB "
		      "'[0-9][0-9][0-9][0-9]-[0-1][0-9]-[0-3][0-9]T"
		      "[0-2][0-9]:[0-5][0-9]:[0-6][0-9].[0-9][0-9][0-9]Z' "
		      "FROM runs WHERE id = 1");
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 0), "run");
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 1), "job");
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 2), RUN.version);
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 3), HASH);
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 4),
			 RUN.config_json);
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 5),
			 RUN.result_json);
	/* created_at is UTC ISO 8601 with milliseconds. */
	cr_assert_eq(sqlite3_column_int(s, 6), 1);
	sqlite3_finalize(s);

	/* A double goes through SQLite's REAL unchanged: exact equality. */
	s = sf_query_row(db, "SELECT step_time_s, tokens_per_s, mfu, "
		      "tflops_per_gpu, peak_bytes_per_gpu, fits, compute_s, "
		      "exposed_comm_s, bubble_s, optimizer_s, other_s "
		      "FROM step_results WHERE run_id = 1");
	cr_assert_eq(sqlite3_column_double(s, 0), 10.0);
	cr_assert_eq(sqlite3_column_double(s, 1), 419430.4);
	cr_assert_eq(sqlite3_column_double(s, 2), 0.45);
	cr_assert_eq(sqlite3_column_double(s, 3), 445.05);
	cr_assert_eq(sqlite3_column_double(s, 4), 64424509440.0);
	cr_assert_eq(sqlite3_column_int(s, 5), 1);
	cr_assert_eq(sqlite3_column_double(s, 6), 7.0);
	cr_assert_eq(sqlite3_column_double(s, 7), 1.5);
	cr_assert_eq(sqlite3_column_double(s, 8), 1.0);
	cr_assert_eq(sqlite3_column_double(s, 9), 0.25);
	cr_assert_eq(sqlite3_column_double(s, 10), 0.25);
	sqlite3_finalize(s);

	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM "
			     "collective_results WHERE run_id = 1"), 3);
	for (i = 0; i < 3; i++) {
		char sql[200];
		const struct store_coll_row *r = &ROWS[i];

		snprintf(sql, sizeof(sql), "SELECT size_B, count, type, op, "
			 "ranks, time_s, algbw_Bps, busbw_Bps, algorithm, "
			 "protocol FROM collective_results "
			 "WHERE run_id = 1 AND idx = %d", i);
		s = sf_query_row(db, sql);
		cr_assert_eq(sqlite3_column_double(s, 0), r->size_B);
		cr_assert_eq(sqlite3_column_double(s, 1), r->count);
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 2),
				 "bfloat16");
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 3),
				 "allreduce");
		cr_assert_eq(sqlite3_column_int(s, 4), 8);
		cr_assert_eq(sqlite3_column_double(s, 5), r->time_s);
		cr_assert_eq(sqlite3_column_double(s, 6), r->algbw_Bps);
		cr_assert_eq(sqlite3_column_double(s, 7), r->busbw_Bps);
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 8),
				 r->algorithm);
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 9),
				 r->protocol);
		sqlite3_finalize(s);
	}
	sqlite3_close(db);
	sf_assert_no_leaks();
}

Test(store, put_without_step_or_rows_stores_only_the_run)
{
	struct sf_capture c;
	struct store *st = sf_open_ok(sf_db_path);

	sf_cap_init(&c);
	/* A `config` command result: no step, no collective table. */
	cr_assert_eq(store_put(st, &RUN, NULL, NULL, 0, &c.d), 1);
	cr_assert_eq(c.d.errors, 0);
	sf_cap_release(&c);
	store_close(st);
	sf_assert_counts(sf_db_path, 1, 0, 0);
	sf_assert_no_leaks();
}

Test(store, step_breakdown_view_gives_fractions_of_the_step)
{
	sqlite3 *db;
	sqlite3_stmt *s;
	struct store *st = sf_open_ok(sf_db_path);

	sf_put_ok(st);
	store_close(st);
	db = sf_raw_open(sf_db_path);
	s = sf_query_row(db, "SELECT run_id, config_hash, llmsim_version, "
		      "step_time_s, compute_frac, exposed_comm_frac, "
		      "bubble_frac, optimizer_frac, other_frac, "
		      "compute_frac + exposed_comm_frac + bubble_frac + "
		      "optimizer_frac + other_frac FROM v_step_breakdown");
	cr_assert_eq(sqlite3_column_int(s, 0), 1);
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 1), HASH);
	cr_assert_str_eq((const char *)sqlite3_column_text(s, 2), RUN.version);
	cr_assert_eq(sqlite3_column_double(s, 3), 10.0);
	/* 7/10, 1.5/10, 1/10, 0.25/10, 0.25/10; the parts add up to 1. */
	sf_assert_near(sqlite3_column_double(s, 4), 0.7, "compute_frac");
	sf_assert_near(sqlite3_column_double(s, 5), 0.15, "exposed_comm_frac");
	sf_assert_near(sqlite3_column_double(s, 6), 0.1, "bubble_frac");
	sf_assert_near(sqlite3_column_double(s, 7), 0.025, "optimizer_frac");
	sf_assert_near(sqlite3_column_double(s, 8), 0.025, "other_frac");
	sf_assert_near(sqlite3_column_double(s, 9), 1.0, "sum of fractions");
	sqlite3_finalize(s);
	sqlite3_close(db);
	sf_assert_no_leaks();
}

Test(store, collectives_view_converts_units)
{
	/* time_us = time_s * 1e6; GB/s = B/s / 1e9 (as rccl-tests print):
	 * the rows' derivations are above ROWS. */
	static const double want[3][3] = {
		{ 40.0, 26.2144, 45.8752 },
		{ 200.0, 83.88608, 146.80064 },
		{ 2000.0, 134.217728, 234.881024 },
	};
	sqlite3 *db;
	sqlite3_stmt *s = NULL;
	struct store *st = sf_open_ok(sf_db_path);
	int i;

	sf_put_ok(st);
	store_close(st);
	db = sf_raw_open(sf_db_path);
	cr_assert_eq(sqlite3_prepare_v2(db, "SELECT op, ranks, size_B, "
		     "time_us, algbw_GBps, busbw_GBps, algorithm, protocol "
		     "FROM v_collectives WHERE run_id = 1 ORDER BY size_B",
		     -1, &s, NULL), SQLITE_OK);
	for (i = 0; i < 3; i++) {
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 0),
				 "allreduce");
		cr_assert_eq(sqlite3_column_int(s, 1), 8);
		cr_assert_eq(sqlite3_column_double(s, 2), ROWS[i].size_B);
		sf_assert_near(sqlite3_column_double(s, 3), want[i][0], "time_us");
		sf_assert_near(sqlite3_column_double(s, 4), want[i][1],
			    "algbw_GBps");
		sf_assert_near(sqlite3_column_double(s, 5), want[i][2],
			    "busbw_GBps");
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 6),
				 ROWS[i].algorithm);
		cr_assert_str_eq((const char *)sqlite3_column_text(s, 7),
				 ROWS[i].protocol);
	}
	cr_assert_eq(sqlite3_step(s), SQLITE_DONE);
	sqlite3_finalize(s);
	sqlite3_close(db);
	sf_assert_no_leaks();
}

/* The names, in order, of the columns of view (SELECT *), joined by ','. */
static void view_columns(sqlite3 *db, const char *view, char *out, size_t n)
{
	char sql[64];
	sqlite3_stmt *s = NULL;
	int i;

	snprintf(sql, sizeof(sql), "SELECT * FROM %s", view);
	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	out[0] = '\0';
	for (i = 0; i < sqlite3_column_count(s); i++) {
		strncat(out, i ? "," : "", n - strlen(out) - 1);
		strncat(out, sqlite3_column_name(s, i), n - strlen(out) - 1);
	}
	sqlite3_finalize(s);
}

Test(store, views_have_their_documented_columns)
{
	/* docs/results-store.md lists these; dashboards read them by
	 * name, so a change here is a change of the stable interface. */
	char got[2048];
	sqlite3 *db;

	store_close(sf_open_ok(sf_db_path));
	db = sf_raw_open(sf_db_path);
	view_columns(db, "v_step_breakdown", got, sizeof(got));
	cr_assert_str_eq(got, "run_id,created_at,command,config_hash,"
			 "llmsim_version,step_time_s,tokens_per_s,mfu,"
			 "tflops_per_gpu,peak_bytes_per_gpu,fits,compute_s,"
			 "exposed_comm_s,bubble_s,optimizer_s,other_s,"
			 "compute_frac,exposed_comm_frac,bubble_frac,"
			 "optimizer_frac,other_frac");
	/* Migration 4 appended system, gpu, nodes, redop and root. */
	view_columns(db, "v_collectives", got, sizeof(got));
	cr_assert_str_eq(got, "run_id,created_at,config_hash,llmsim_version,"
			 "idx,op,type,ranks,size_B,count,time_us,algbw_GBps,"
			 "busbw_GBps,algorithm,protocol,system,gpu,nodes,redop,"
			 "root");
	/* v_runs and v_sweep_points are checked against the documentation
	 * by tests/store-views.sh. */
	sqlite3_close(db);
	sf_assert_no_leaks();
}

Test(store, deleting_a_run_deletes_its_results)
{
	sqlite3 *db;
	struct store *st = sf_open_ok(sf_db_path);

	sf_put_ok(st);
	sf_put_ok(st);
	store_close(st);
	db = sf_raw_open(sf_db_path);
	sf_raw_exec(db, "PRAGMA foreign_keys = ON");
	sf_raw_exec(db, "DELETE FROM runs WHERE id = 1");
	sqlite3_close(db);
	/* Run 2 and its 1 step row and 3 collective rows remain. */
	sf_assert_counts(sf_db_path, 1, 1, 3);
	sf_assert_no_leaks();
}

/* ---- all or nothing --------------------------------------------------- */

Test(store, failed_row_rolls_back_the_whole_result)
{
	struct store_coll_row rows[3];
	struct store *st = sf_open_ok(sf_db_path);

	/* The second row has no op: its insert fails on NOT NULL after the
	 * run, the step and the first row went in. */
	memcpy(rows, ROWS, sizeof(rows));
	rows[1].op = NULL;
	sf_expect_put_fails(st, &RUN, &STEP, rows, 3, "collective row 2 of 3",
			 "NOT NULL constraint failed: collective_results.op",
			 NULL);
	sf_assert_counts(sf_db_path, 0, 0, 0);
	/* The store is usable afterwards; nothing was committed, so the
	 * next run is id 1 again. */
	cr_assert_eq(sf_put_ok(st), 1);
	store_close(st);
	sf_assert_no_leaks();
}

Test(store, refuses_nan_and_bad_config_hash)
{
	struct store_step step = STEP;
	struct store_run run = RUN;
	struct store *st = sf_open_ok(sf_db_path);

	step.mfu = NAN;
	sf_expect_put_fails(st, &RUN, &step, ROWS, 3, "step_results.mfu", "NaN",
			 NULL);
	/* A hash must be 64 lowercase hex digits (SHA-256). */
	run.config_hash = "E3B0C442";
	sf_expect_put_fails(st, &run, NULL, NULL, 0, "config_hash_is_sha256",
			 NULL);
	run = RUN;
	run.config_json = "{not json";
	sf_expect_put_fails(st, &run, NULL, NULL, 0, "config_json_is_json",
			 NULL);
	store_close(st);
	sf_assert_counts(sf_db_path, 0, 0, 0);
	sf_assert_no_leaks();
}

Test(store, run_columns_for_sweep_views_are_v_runs)
{
	/* Each sweep's view is built at run time from store_run_cols; its
	 * names must be v_runs' columns in order, or the sweep views would
	 * drift from the documented v_runs. */
	char got[2048], want[2048] = "";
	sqlite3 *db;
	size_t i;

	store_close(sf_open_ok(sf_db_path));
	db = sf_raw_open(sf_db_path);
	view_columns(db, "v_runs", got, sizeof(got));
	for (i = 0; i < store_nrun_cols; i++) {
		strncat(want, i ? "," : "", sizeof(want) - strlen(want) - 1);
		strncat(want, store_run_cols[i].name,
			sizeof(want) - strlen(want) - 1);
	}
	cr_assert_str_eq(got, want);
	sqlite3_close(db);
	sf_assert_no_leaks();
}
