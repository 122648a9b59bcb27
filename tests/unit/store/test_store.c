/*
 * test_store.c - the results database: create, migrate, refuse what it
 * must not touch, report locks and unwritable places, survive allocation
 * failure. (Storing and reading back: test_store_schema.c.)
 *
 * Every test works in its own temporary directory and reads the database
 * back through a separate SQLite connection, the way a dashboard would.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/mem.h"
#include "store_fixture.h"

TestSuite(store, .init = sf_setup, .fini = sf_teardown);

/* The tables and the version as migration 1 created them (frozen: this
 * is what databases written by a version-1 build look like). */
static const char V1_SCHEMA[] =
	"CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE runs ("
	"  id INTEGER PRIMARY KEY,"
	"  created_at TEXT NOT NULL"
	"    DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),"
	"  command TEXT NOT NULL, kind TEXT NOT NULL,"
	"  llmsim_version TEXT NOT NULL,"
	"  config_hash TEXT NOT NULL CONSTRAINT config_hash_is_sha256"
	"    CHECK (length(config_hash) = 64 AND"
	"           config_hash NOT GLOB '*[^0-9a-f]*'),"
	"  config_json TEXT NOT NULL CONSTRAINT config_json_is_json"
	"    CHECK (json_valid(config_json)),"
	"  result_json TEXT CONSTRAINT result_json_is_json"
	"    CHECK (result_json IS NULL OR json_valid(result_json)));"
	"CREATE INDEX runs_config_hash ON runs(config_hash);"
	"CREATE INDEX runs_created_at ON runs(created_at);"
	"INSERT INTO meta VALUES ('schema_version', '1');";

/* The directory sf_db_path lives in. */
static void make_results_dir(void)
{
	char results[96];

	snprintf(results, sizeof(results), "%s/results", sf_dir);
	cr_assert_eq(mkdir(results, 0700), 0);
}

/* A version-1 database at sf_db_path holding one old run. */
static void make_v1(void)
{
	sqlite3 *db;

	make_results_dir();
	db = sf_raw_open(sf_db_path);
	sf_raw_exec(db, V1_SCHEMA);
	sf_raw_exec(db, "INSERT INTO runs(created_at, command, kind, "
		 "llmsim_version, config_hash, config_json, result_json) "
		 "VALUES ('2024-01-02T03:04:05.678Z', 'run', 'job', '0.0.9', "
		 "'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
		 "7852b855', '{\"old\":true}', NULL)");
	sqlite3_close(db);
}

/* ---- creating, reopening, migrating ----------------------------------- */

Test(store, creates_directory_and_schema_then_reopens)
{
	struct store *st;
	char mode[16], version[16];

	/* Migrations 1 (meta, runs), 2 (step_results), 3 (collectives),
	 * 4 (measure_runs, measurements), 5 (validation_results), 6
	 * (serving views), 7 (sweeps; v_runs, v_sweep_points), 8
	 * (plan_candidates, v_plans), 9 (measure_runs.complete and
	 * .backend_error). */
	cr_assert_eq(store_schema_version(), 9);
	/* sf_db_path is sf_dir/results/llmsim.db: results/ does not exist yet. */
	st = sf_open_ok(sf_db_path);
	store_close(st);
	sf_sql_text(sf_db_path, "SELECT value FROM meta WHERE key = "
		 "'schema_version'", version, sizeof(version));
	cr_assert_eq(atoi(version), store_schema_version());
	/* WAL is a property of the file: a new connection sees it. */
	sf_sql_text(sf_db_path, "PRAGMA journal_mode", mode, sizeof(mode));
	cr_assert_str_eq(mode, "wal");
	/* meta, runs, step_results, collective_results, measure_runs,
	 * measurements, validation_results, sweeps, sweep_axes,
	 * sweep_points, plan_candidates; v_step_breakdown, v_collectives,
	 * v_measurements, v_validation, v_serving, v_inference_steps, v_runs,
	 * v_sweep_points, v_plans. */
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM sqlite_master "
			     "WHERE type = 'table'"), 11);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM sqlite_master "
			     "WHERE type = 'view'"), 9);

	/* Reopening changes nothing and the store still works: the first
	 * run gets id 1. */
	st = sf_open_ok(sf_db_path);
	cr_assert_eq(sf_put_ok(st), 1);
	store_close(st);
	sf_sql_text(sf_db_path, "SELECT value FROM meta WHERE key = "
		 "'schema_version'", version, sizeof(version));
	cr_assert_eq(atoi(version), store_schema_version());
	cr_assert_eq(sf_count_rows(sf_db_path, "meta"), 1);
	sf_assert_no_leaks();
}

Test(store, migrates_a_version_1_database_keeping_its_rows)
{
	struct store *st;
	char text[64];

	make_v1();
	st = sf_open_ok(sf_db_path);
	sf_sql_text(sf_db_path, "SELECT value FROM meta WHERE key = "
		 "'schema_version'", text, sizeof(text));
	cr_assert_eq(atoi(text), store_schema_version());
	/* The old run is untouched. */
	cr_assert_eq(sf_count_rows(sf_db_path, "runs"), 1);
	sf_sql_text(sf_db_path, "SELECT created_at || ' ' || llmsim_version || ' ' "
		 "|| config_json FROM runs WHERE id = 1", text, sizeof(text));
	cr_assert_str_eq(text, "2024-01-02T03:04:05.678Z 0.0.9 {\"old\":true}");
	/* The new tables exist and take a result: old max id 1 -> new id 2. */
	cr_assert_eq(sf_put_ok(st), 2);
	store_close(st);
	/* Two runs; only the new one has a step row and 3 collective rows. */
	sf_assert_counts(sf_db_path, 2, 1, 3);
	/* The old run has no step row, so the view shows only the new one. */
	cr_assert_eq(sf_count_rows(sf_db_path, "v_step_breakdown"), 1);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT run_id FROM v_step_breakdown"),
		     2);
	sf_assert_no_leaks();
}

Test(store, refuses_a_newer_schema_version)
{
	char want[96], version[16];
	sqlite3 *db;
	int newer = store_schema_version() + 4;

	make_v1();
	db = sf_raw_open(sf_db_path);
	snprintf(want, sizeof(want), "UPDATE meta SET value = '%d'", newer);
	sf_raw_exec(db, want);
	sqlite3_close(db);

	snprintf(want, sizeof(want), "schema version %d; this llmsim knows "
		 "up to %d: upgrade llmsim or use --db", newer,
		 store_schema_version());
	sf_expect_open_fails(sf_db_path, want, NULL);
	/* Nothing was written: still the newer version, no new tables. */
	sf_sql_text(sf_db_path, "SELECT value FROM meta", version, sizeof(version));
	cr_assert_eq(atoi(version), newer);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM sqlite_master "
			     "WHERE name = 'step_results'"), 0);
	sf_assert_no_leaks();
}

Test(store, refuses_a_damaged_schema_version)
{
	sqlite3 *db;

	make_v1();
	db = sf_raw_open(sf_db_path);
	sf_raw_exec(db, "UPDATE meta SET value = '2x'");
	sqlite3_close(db);
	sf_expect_open_fails(sf_db_path, "meta.schema_version is '2x', expected "
			  "a positive integer", NULL);
	sf_assert_no_leaks();
}

/* A reader (report, db views/export, db merge's inputs) of a file that is
 * not a database is told to give one llmsim wrote, not "use --db PATH to
 * store results elsewhere": it stores nothing (the writer's hint). */
Test(store, a_reader_of_a_file_that_is_not_a_database_is_not_told_to_store)
{
	struct sf_capture c;
	FILE *f;

	make_results_dir();
	f = fopen(sf_db_path, "w");
	cr_assert_not_null(f);
	fputs("a: 1\nthis is a config named llmsim.db by mistake\n", f);
	fclose(f);
	sf_cap_init(&c);
	cr_assert_null(store_open_readonly(sf_db_path, &c.d));
	cr_assert_eq(c.d.errors, 1, "want one error, got: %s", sf_cap_text(&c));
	sf_assert_says(&c, "file is not a database");
	sf_assert_says(&c, "give a results database llmsim wrote");
	cr_assert_null(strstr(sf_cap_text(&c), "store results elsewhere"),
		       "a reader's hint: %s", sf_cap_text(&c));
	sf_cap_release(&c);
	sf_assert_no_leaks();
}

Test(store, refuses_a_file_that_is_not_a_database)
{
	static const char text[] =
		"size_B,time_us\n1048576,40\n16777216,200\n"
		"this is a CSV file that someone named llmsim.db by mistake\n";
	char back[sizeof(text) + 16];
	FILE *f;
	size_t n;

	make_results_dir();
	f = fopen(sf_db_path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);

	sf_expect_open_fails(sf_db_path, "file is not a database", "use --db PATH",
			  NULL);
	/* The user's file is left exactly as it was. */
	f = fopen(sf_db_path, "r");
	n = fread(back, 1, sizeof(back), f);
	fclose(f);
	cr_assert_eq(n, strlen(text));
	cr_assert_eq(memcmp(back, text, n), 0);
	sf_assert_no_leaks();
}

Test(store, refuses_another_programs_database)
{
	sqlite3 *db;

	make_results_dir();
	db = sf_raw_open(sf_db_path);
	sf_raw_exec(db, "CREATE TABLE users (name TEXT)");
	sqlite3_close(db);
	sf_expect_open_fails(sf_db_path, "not an llmsim results database", NULL);
	/* Left alone: still one table, no meta. */
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT count(*) FROM sqlite_master"),
		     1);
	sf_assert_no_leaks();
}

Test(store, reports_a_directory_it_cannot_create)
{
	char file[96], path[160];
	FILE *f;

	/* sf_dir/file is a regular file, so sf_dir/file/results cannot be made
	 * (whoever runs the test, root included). */
	snprintf(file, sizeof(file), "%s/file", sf_dir);
	f = fopen(file, "w");
	cr_assert_not_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/results/llmsim.db", file);
	sf_expect_open_fails(path, "cannot create directory", "Not a directory",
			  NULL);
	sf_assert_no_leaks();
}

Test(store, reports_a_directory_given_as_the_database)
{

	sf_expect_open_fails(sf_dir, "Is a directory", NULL);
	sf_assert_no_leaks();
}

Test(store, reports_a_directory_it_cannot_write)
{
	char ro[96], path[160];

	/* Root writes anywhere on an ordinary filesystem; sysfs refuses
	 * even root a new file. Others get a directory made read-only. */
	if (geteuid() == 0) {
		struct stat sb;

		if (stat("/sys/kernel", &sb) < 0) {
			sf_teardown();	/* a skip does not run .fini */
			cr_skip_test("running as root without /sys");
		}
		snprintf(path, sizeof(path), "/sys/llmsim.db");
	} else {
		snprintf(ro, sizeof(ro), "%s/ro", sf_dir);
		cr_assert_eq(mkdir(ro, 0500), 0);
		snprintf(path, sizeof(path), "%s/llmsim.db", ro);
	}
	sf_expect_open_fails(path, "cannot open the results database for "
			  "writing: Permission denied", NULL);
	sf_assert_no_leaks();
}

Test(store, reports_a_read_only_database_file)
{

	if (geteuid() == 0) {
		sf_teardown();	/* a skip does not run .fini */
		cr_skip_test("root can write a read-only file");
	}
	store_close(sf_open_ok(sf_db_path));
	cr_assert_eq(chmod(sf_db_path, 0400), 0);
	sf_expect_open_fails(sf_db_path, "Permission denied", NULL);
	sf_assert_no_leaks();
}

Test(store, reports_a_locked_database_on_put)
{
	struct sf_capture c;
	struct store *st;
	sqlite3 *other;

	sf_cap_init(&c);
	st = store_open_timeout(sf_db_path, 0, &c.d);
	cr_assert_not_null(st, "%s", sf_cap_text(&c));
	/* Another writer holds the write lock and we do not wait. */
	other = sf_raw_open(sf_db_path);
	sf_raw_exec(other, "BEGIN IMMEDIATE");
	sf_cap_release(&c);
	sf_expect_put_fails(st, &RUN, &STEP, ROWS, 3, "database is locked",
			 "another process holds the lock", NULL);
	/* Once the other writer is done the same store goes on. */
	sf_raw_exec(other, "ROLLBACK");
	sqlite3_close(other);
	cr_assert_eq(sf_put_ok(st), 1);
	store_close(st);
	sf_assert_no_leaks();
}

Test(store, reports_a_locked_database_on_open)
{
	sqlite3 *other;

	/* A version-1 file still in rollback-journal mode, exclusively
	 * locked: it can be neither read nor migrated. */
	make_v1();
	other = sf_raw_open(sf_db_path);
	sf_raw_exec(other, "BEGIN EXCLUSIVE");
	/* No wait: the lock is reported at once. */
	sf_expect_open_fails(sf_db_path, "database is locked", NULL);
	sf_raw_exec(other, "COMMIT");
	sqlite3_close(other);
	/* Unlocked, it migrates. */
	store_close(sf_open_ok(sf_db_path));
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT value FROM meta"),
		     store_schema_version());
	sf_assert_no_leaks();
}

Test(store, two_stores_share_one_database)
{
	/* Parallel sweeps: two writers on one file take turns. */
	struct store *a = sf_open_ok(sf_db_path);
	struct store *b = sf_open_ok(sf_db_path);

	/* Ids follow the order of the commits: a, b, a -> 1, 2, 3. */
	cr_assert_eq(sf_put_ok(a), 1);
	cr_assert_eq(sf_put_ok(b), 2);
	cr_assert_eq(sf_put_ok(a), 3);
	store_close(a);
	store_close(b);
	/* 3 runs, each with 1 step row and 3 collective rows. */
	sf_assert_counts(sf_db_path, 3, 3, 9);
	sf_assert_no_leaks();
}

/* A child process: open sf_db_path and store n results; exit status 0 if
 * every one went in. */
static void writer(int n)
{
	struct diag d;
	struct store *st;
	int i, ok = 0;

	diag_init(&d, stderr);
	st = store_open(sf_db_path, &d);
	for (i = 0; st && i < n; i++)
		ok += store_put(st, &RUN, &STEP, ROWS, 3, &d) > 0;
	store_close(st);
	_exit(ok == n ? 0 : 1);
}

Test(store, parallel_processes_create_and_fill_one_database)
{
	/* 4 processes start on a database that does not exist yet, so they
	 * race to create and migrate it, then each stores 10 results. */
	enum { NPROC = 4, NPUT = 10 };
	pid_t pid[NPROC];
	int i, status;

	for (i = 0; i < NPROC; i++) {
		pid[i] = fork();
		cr_assert_geq(pid[i], 0);
		if (pid[i] == 0)
			writer(NPUT);
	}
	for (i = 0; i < NPROC; i++) {
		cr_assert_eq(waitpid(pid[i], &status, 0), pid[i]);
		cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			  "writer %d failed (its diagnostics are above)", i);
	}
	/* 4 x 10 = 40 runs, 40 step rows, 40 x 3 = 120 collective rows;
	 * the migrations ran once: one version row. */
	sf_assert_counts(sf_db_path, 40, 40, 120);
	cr_assert_eq(sf_count_rows(sf_db_path, "meta"), 1);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT value FROM meta"),
		     store_schema_version());
	sf_assert_no_leaks();
}

Test(store, works_in_memory)
{
	struct store *st = sf_open_ok(":memory:");

	/* First run of a new database: id 1. */
	cr_assert_eq(sf_put_ok(st), 1);
	store_close(st);
	sf_assert_no_leaks();
}

/* ---- allocation failure ------------------------------------------------ */

/*
 * Fail the n-th allocation (and every later one) for n = 0, 1, 2, ...
 * until the call succeeds. store.c itself allocates twice in an open
 * (the store and its path) and not at all in a put; SQLite's allocations
 * are routed through mem.h, so a sweep that needs more than a handful of
 * steps shows failures reached SQLite too.
 */
Test(store, open_fails_cleanly_at_every_allocation)
{
	struct store *st = NULL;
	long n, calls = 0;

	for (n = 0; n < 100000 && !st; n++) {
		struct sf_capture c;

		sf_remove_db(sf_db_path);
		sf_cap_init(&c);
		mem_fail_after(n);
		st = store_open(sf_db_path, &c.d);
		calls = mem_fail_after(-1);
		if (!st) {
			cr_assert_eq(c.d.errors, 1, "n=%ld: %s", n,
				     sf_cap_text(&c));
			sf_assert_says(&c, sf_db_path);
			/* Whatever the failure left, the next open finishes
			 * the job: migrations are all or nothing. */
			store_close(sf_open_ok(sf_db_path));
		}
		sf_cap_release(&c);
	}
	cr_assert_not_null(st);
	cr_assert_gt(n, 10, "only %ld allocations: SQLite's are not routed "
		     "through mem.h", n);
	cr_log_info("store_open: %ld allocations, each failed once", calls);
	store_close(st);
	cr_assert_eq(sf_sql_int(sf_db_path, "SELECT value FROM meta"),
		     store_schema_version());
	sf_assert_no_leaks();
}

Test(store, put_fails_cleanly_at_every_allocation)
{
	struct store *st = sf_open_ok(sf_db_path);
	int64_t id = -1;
	long n;

	for (n = 0; n < 100000 && id < 0; n++) {
		struct sf_capture c;

		sf_cap_init(&c);
		mem_fail_after(n);
		id = store_put(st, &RUN, &STEP, ROWS, 3, &c.d);
		mem_fail_after(-1);
		if (id < 0) {
			cr_assert_eq(c.d.errors, 1, "n=%ld: %s", n,
				     sf_cap_text(&c));
			sf_assert_says(&c, sf_db_path);
			/* Nothing of the failed result is visible. */
			sf_assert_counts(sf_db_path, 0, 0, 0);
		}
		sf_cap_release(&c);
	}
	cr_assert_gt(n, 1, "store_put made no allocation SQLite could fail");
	/* The first complete result: id 1, one step row, three rows. */
	cr_assert_eq(id, 1);
	store_close(st);
	sf_assert_counts(sf_db_path, 1, 1, 3);
	sf_assert_no_leaks();
}

/* ---- the reader's open (db views, db export) ------------------------ */

static int first_int(void *ctx, int n, const char *const *names,
		     const struct store_val *v)
{
	(void)n;
	(void)names;
	*(int64_t *)ctx = v[0].i;
	return 0;
}

/* A reader's open fails with one error naming path and saying what. */
static void expect_readonly_fails(const char *path, const char *what)
{
	struct sf_capture c;

	sf_cap_init(&c);
	cr_assert_null(store_open_readonly(path, &c.d));
	cr_assert_eq(c.d.errors, 1u, "%s", sf_cap_text(&c));
	sf_assert_says(&c, path);
	sf_assert_says(&c, what);
	sf_cap_release(&c);
}

Test(store, reader_does_not_create_a_missing_database)
{
	struct stat sb;
	char results[96];

	/* store_open would make results/ and a new database in it. */
	expect_readonly_fails(sf_db_path, "no results database here");
	snprintf(results, sizeof(results), "%s/results", sf_dir);
	cr_assert_neq(stat(results, &sb), 0, "results/ was created");
	cr_assert_neq(stat(sf_db_path, &sb), 0, "the database was created");
	sf_assert_no_leaks();
}

Test(store, reader_leaves_an_empty_file_empty)
{
	struct stat sb;
	FILE *f;

	/* store_open takes an empty file for a new database and writes
	 * the schema (some 100 kB) into it; a reader must not. */
	make_results_dir();
	f = fopen(sf_db_path, "w");
	cr_assert_not_null(f);
	fclose(f);
	expect_readonly_fails(sf_db_path, "empty, not a results database");
	cr_assert_eq(stat(sf_db_path, &sb), 0);
	cr_assert_eq(sb.st_size, 0, "the empty file grew to %lld B",
		     (long long)sb.st_size);
	expect_readonly_fails(sf_dir, "a directory, not a results database");
	sf_assert_no_leaks();
}

Test(store, reader_reads_a_read_only_file_and_changes_no_byte)
{
	struct sf_capture c;
	struct store *st;
	int64_t n = -1;
	char before[4096], after[4096];
	FILE *f;
	size_t got;

	st = sf_open_ok(sf_db_path);
	cr_assert_eq(sf_put_ok(st), 1);
	store_close(st);	/* checkpoints: every commit in the file */
	cr_assert_eq(chmod(sf_db_path, 0400), 0);
	f = fopen(sf_db_path, "rb");
	cr_assert_not_null(f);
	got = fread(before, 1, sizeof(before), f);	/* the header page */
	fclose(f);
	sf_cap_init(&c);
	st = store_open_readonly(sf_db_path, &c.d);
	cr_assert_not_null(st, "%s", sf_cap_text(&c));
	cr_assert_eq(c.d.errors + c.d.warnings, 0u, "%s", sf_cap_text(&c));
	/* The one run sf_put_ok stored, through the documented view. */
	cr_assert_eq(store_select(st, "SELECT count(*) FROM v_runs", NULL, 0,
				  first_int, &n, &c.d), 0, "%s",
		     sf_cap_text(&c));
	cr_assert_eq(n, 1);
	store_close(st);
	sf_cap_release(&c);
	f = fopen(sf_db_path, "rb");
	cr_assert_not_null(f);
	cr_assert_eq(fread(after, 1, sizeof(after), f), got);
	fclose(f);
	/* The header holds the file change counter: a write bumps it. */
	cr_assert_eq(memcmp(before, after, got), 0, "the header changed");
	sf_assert_no_leaks();
}

Test(store, reader_reads_an_old_schema_without_migrating_it)
{
	struct sf_capture c;
	struct store *st;
	int64_t n = -1;
	char version[16];

	make_v1();
	sf_cap_init(&c);
	st = store_open_readonly(sf_db_path, &c.d);
	cr_assert_not_null(st, "%s", sf_cap_text(&c));
	/* A note, not an error: the old runs table reads as it is. */
	cr_assert_eq(c.d.errors, 0, "%s", sf_cap_text(&c));
	sf_assert_says(&c, "schema version 1, older than this llmsim's 9");
	cr_assert_eq(store_select(st, "SELECT count(*) FROM runs", NULL, 0,
				  first_int, &n, &c.d), 0, "%s",
		     sf_cap_text(&c));
	cr_assert_eq(n, 1);
	store_close(st);
	sf_cap_release(&c);
	sf_sql_text(sf_db_path, "SELECT value FROM meta WHERE key = "
		    "'schema_version'", version, sizeof(version));
	cr_assert_str_eq(version, "1", "the reader migrated the database");
	sf_assert_no_leaks();
}
