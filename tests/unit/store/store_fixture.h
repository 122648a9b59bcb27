/*
 * store_fixture.h - what the store's tests share (test_store.c,
 * test_store_schema.c): a temporary directory per test, diagnostics
 * captured in memory, plain-SQL reads the way a dashboard reads, and the
 * result they store (its numbers are derived in store_fixture.c).
 *
 * Depends on Criterion, SQLite, diag.h, store.h.
 */
#ifndef LLMSIM_TEST_STORE_FIXTURE_H
#define LLMSIM_TEST_STORE_FIXTURE_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "base/diag.h"
#include "store/store.h"

extern char sf_dir[64];		/* this test's temporary directory */
extern char sf_db_path[128];	/* sf_dir/results/llmsim.db (no results/ yet) */

/* The suite's .init and .fini: make and remove sf_dir. */
void sf_setup(void);
void sf_teardown(void);

/* Under `make check`, fail the test if anything leaked so far; every
 * test body ends with it (see store_fixture.c for why). */
void sf_assert_no_leaks(void);

struct sf_capture {
	struct diag d;		/* report here */
	FILE *f;		/* d's output, in memory */
	char *buf;		/* what was printed */
	size_t len;		/* B */
};

void sf_cap_init(struct sf_capture *c);
const char *sf_cap_text(struct sf_capture *c);
void sf_cap_release(struct sf_capture *c);
void sf_assert_says(struct sf_capture *c, const char *what);

/* Opening path (no lock wait), or storing into st, must fail with one
 * error that names the path and says each phrase (NULL-terminated). */
void sf_expect_open_fails(const char *path, ...);
void sf_expect_put_fails(struct store *st, const struct store_run *run,
		      const struct store_step *step,
		      const struct store_coll_row *rows, uint32_t n, ...);

/* Open, store (RUN, STEP, ROWS) and return what must succeed. */
struct store *sf_open_ok(const char *path);
int64_t sf_put_ok(struct store *st);

/* A separate connection, as a dashboard has. */
sqlite3 *sf_raw_open(const char *path);
void sf_raw_exec(sqlite3 *db, const char *sql);
/* sql's first row; the statement stays on it (finalize it). */
sqlite3_stmt *sf_query_row(sqlite3 *db, const char *sql);
int64_t sf_sql_int(const char *path, const char *sql);
void sf_sql_text(const char *path, const char *sql, char *out, size_t n);
int64_t sf_count_rows(const char *path, const char *table);
/* The rows in runs, step_results and collective_results. */
void sf_assert_counts(const char *path, int64_t runs, int64_t steps,
		   int64_t rows);
/* Remove the database and its -wal and -shm files. */
void sf_remove_db(const char *path);

/* |got - want| <= 1e-12 |want|. */
void sf_assert_near(double got, double want, const char *what);

/* The stored result: a run, its 10 s step and 3 all-reduce rows. */
extern const char HASH[];
extern const struct store_run RUN;
extern const struct store_step STEP;
extern const struct store_coll_row ROWS[3];

#endif
