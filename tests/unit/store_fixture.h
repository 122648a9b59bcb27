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

#include "diag.h"
#include "store.h"

extern char dir[64];		/* this test's temporary directory */
extern char db_path[128];	/* dir/results/llmsim.db (no results/ yet) */

/* The suite's .init and .fini: make and remove dir. */
void setup(void);
void teardown(void);

/* Under `make check`, fail the test if anything leaked so far; every
 * test body ends with it (see store_fixture.c for why). */
void assert_no_leaks(void);

struct capture {
	struct diag d;		/* report here */
	FILE *f;		/* d's output, in memory */
	char *buf;		/* what was printed */
	size_t len;		/* B */
};

void cap_init(struct capture *c);
const char *cap_text(struct capture *c);
void cap_release(struct capture *c);
void assert_says(struct capture *c, const char *what);

/* Opening path (no lock wait), or storing into st, must fail with one
 * error that names the path and says each phrase (NULL-terminated). */
void expect_open_fails(const char *path, ...);
void expect_put_fails(struct store *st, const struct store_run *run,
		      const struct store_step *step,
		      const struct store_coll_row *rows, uint32_t n, ...);

/* Open, store (RUN, STEP, ROWS) and return what must succeed. */
struct store *open_ok(const char *path);
int64_t put_ok(struct store *st);

/* A separate connection, as a dashboard has. */
sqlite3 *raw_open(const char *path);
void raw_exec(sqlite3 *db, const char *sql);
/* sql's first row; the statement stays on it (finalize it). */
sqlite3_stmt *query_row(sqlite3 *db, const char *sql);
int64_t sql_int(const char *path, const char *sql);
void sql_text(const char *path, const char *sql, char *out, size_t n);
int64_t count_rows(const char *path, const char *table);
/* The rows in runs, step_results and collective_results. */
void assert_counts(const char *path, int64_t runs, int64_t steps,
		   int64_t rows);
/* Remove the database and its -wal and -shm files. */
void remove_db(const char *path);

/* |got - want| <= 1e-12 |want|. */
void assert_near(double got, double want, const char *what);

/* The stored result: a run, its 10 s step and 3 all-reduce rows. */
extern const char HASH[];
extern const struct store_run RUN;
extern const struct store_step STEP;
extern const struct store_coll_row ROWS[3];

#endif
