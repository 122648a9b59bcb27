/*
 * store_fixture.c - what the store's tests share; see store_fixture.h.
 */
#define _XOPEN_SOURCE 700	/* nftw() */

#include <criterion/criterion.h>
#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_fixture.h"

#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

char sf_dir[64];
char sf_db_path[128];

void sf_setup(void)
{
	/* tmpfs where there is one: the allocation sweeps open thousands
	 * of databases, and a disk's fsyncs would double their time. */
	strcpy(sf_dir, access("/dev/shm", W_OK) == 0 ?
	       "/dev/shm/llmsim-store-XXXXXX" : "/tmp/llmsim-store-XXXXXX");
	cr_assert_not_null(mkdtemp(sf_dir));
	snprintf(sf_db_path, sizeof(sf_db_path), "%s/results/llmsim.db", sf_dir);
}

static int remove_entry(const char *path, const struct stat *sb, int flag,
			struct FTW *ftw)
{
	(void)sb, (void)ftw;
	if (flag == FTW_DP)
		chmod(path, 0700);	/* a test may have made it read-only */
	return remove(path);
}

/* LeakSanitizer's report at exit does not fail a Criterion test (the
 * worker has already said "pass"), and neither does an assertion in a
 * .fini, so under `make check` every test body ends with this. */
void sf_assert_no_leaks(void)
{
#ifdef __SANITIZE_ADDRESS__
	cr_assert_eq(__lsan_do_recoverable_leak_check(), 0,
		     "memory leaked: LeakSanitizer's report is above");
#endif
}

void sf_teardown(void)
{
	chmod(sf_dir, 0700);
	nftw(sf_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- diagnostics captured in memory --------------------------------- */

void sf_cap_init(struct sf_capture *c)
{
	c->buf = NULL;
	c->f = open_memstream(&c->buf, &c->len);
	cr_assert_not_null(c->f);
	diag_init(&c->d, c->f);
}

const char *sf_cap_text(struct sf_capture *c)
{
	fflush(c->f);
	return c->buf ? c->buf : "";
}

void sf_cap_release(struct sf_capture *c)
{
	fclose(c->f);
	free(c->buf);
}

void sf_assert_says(struct sf_capture *c, const char *what)
{
	cr_assert_not_null(strstr(sf_cap_text(c), what),
			   "diagnostic should mention '%s', got: %s", what,
			   sf_cap_text(c));
}

/* Check c holds exactly one error, naming path and saying each phrase of
 * the NULL-terminated list ap; then release c. */
static void expect_error(struct sf_capture *c, const char *path, va_list ap)
{
	const char *phrase;

	cr_assert_eq(c->d.errors, 1, "want one error, got: %s", sf_cap_text(c));
	sf_assert_says(c, path);
	while ((phrase = va_arg(ap, const char *)))
		sf_assert_says(c, phrase);
	sf_cap_release(c);
}

/* Opening path must fail with one error naming path and saying each
 * phrase (a NULL-terminated list). */
void sf_expect_open_fails(const char *path, ...)
{
	struct sf_capture c;
	va_list ap;

	sf_cap_init(&c);
	cr_assert_null(store_open_timeout(path, 0, &c.d),
		       "opening %s should fail", path);
	va_start(ap, path);
	expect_error(&c, path, ap);
	va_end(ap);
}

/* ---- plain SQL, as a dashboard reads ---------------------------------- */

sqlite3 *sf_raw_open(const char *path)
{
	sqlite3 *db = NULL;

	cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
				     SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
	return db;
}

void sf_raw_exec(sqlite3 *db, const char *sql)
{
	char *err = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &err);

	cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, err ? err : "");
	sqlite3_free(err);
}

/* One row of sql on path; the statement is left on its row. */
sqlite3_stmt *sf_query_row(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *s = NULL;

	cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK,
		     "%s: %s", sql, sqlite3_errmsg(db));
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s: no row", sql);
	return s;
}

int64_t sf_sql_int(const char *path, const char *sql)
{
	sqlite3 *db = sf_raw_open(path);
	sqlite3_stmt *s = sf_query_row(db, sql);
	int64_t v = sqlite3_column_int64(s, 0);

	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

void sf_sql_text(const char *path, const char *sql, char *out, size_t n)
{
	sqlite3 *db = sf_raw_open(path);
	sqlite3_stmt *s = sf_query_row(db, sql);
	const unsigned char *t = sqlite3_column_text(s, 0);

	snprintf(out, n, "%s", t ? (const char *)t : "(null)");
	sqlite3_finalize(s);
	sqlite3_close(db);
}

void sf_assert_near(double got, double want, const char *what)
{
	cr_assert(fabs(got - want) <= 1e-12 * fabs(want),
		  "%s: got %.17g, want %.17g", what, got, want);
}

int64_t sf_count_rows(const char *path, const char *table)
{
	char sql[96];

	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	return sf_sql_int(path, sql);
}

void sf_remove_db(const char *path)
{
	char side[160];

	unlink(path);
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
}

/* ---- what the tests store --------------------------------------------- */

/* SHA-256 of the empty string: any 64 lowercase hex digits will do. */
const char HASH[] =
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const struct store_run RUN = {
	.command = "run",
	.kind = "job",
	.config_json = "{\"model\":\"llama3-8b\",\"nodes\":128}",
	.config_hash = HASH,
	.result_json = "{\"step_time_s\":10}",
	.version = "0.1.0+test",
};

/*
 * A 10 s step: compute 7 + exposed comm 1.5 + bubble 1 + optimizer 0.25 +
 * other 0.25 = 10 s. 1024 sequences of 4096 tokens in 10 s ->
 * 4194304 / 10 = 419430.4 tokens/s. MFU 0.45 of a 989 TFLOP/s peak ->
 * 445.05 TFLOP/s per GPU. Peak memory 60 GiB = 60 * 2^30 = 64424509440 B.
 */
const struct store_step STEP = {
	.step_time_s = 10.0,
	.tokens_per_s = 419430.4,
	.mfu = 0.45,
	.tflops_per_gpu = 445.05,
	.peak_bytes_per_gpu = 64424509440.0,
	.fits = 1,
	.compute_s = 7.0,
	.exposed_comm_s = 1.5,
	.bubble_s = 1.0,
	.optimizer_s = 0.25,
	.other_s = 0.25,
};

/*
 * Three bf16 all-reduces on 8 ranks (2 B per element, so count = size/2);
 * algbw = size / time; busbw = algbw * 2(p-1)/p = algbw * 14/8 = 1.75x.
 *   1 MiB   = 1048576 B   in 40 us:  26.2144 GB/s, bus 45.8752 GB/s
 *   16 MiB  = 16777216 B  in 200 us: 83.88608 GB/s, bus 146.80064 GB/s
 *   256 MiB = 268435456 B in 2 ms:   134.217728 GB/s, bus 234.881024 GB/s
 */
const struct store_coll_row ROWS[3] = {
	{ 1048576.0, 524288.0, "bfloat16", "allreduce", 8, 40e-6,
	  26.2144e9, 45.8752e9, "tree", "ll" },
	{ 16777216.0, 8388608.0, "bfloat16", "allreduce", 8, 200e-6,
	  83.88608e9, 146.80064e9, "ring", "ll128" },
	{ 268435456.0, 134217728.0, "bfloat16", "allreduce", 8, 2e-3,
	  134.217728e9, 234.881024e9, "ring", "simple" },
};

struct store *sf_open_ok(const char *path)
{
	struct sf_capture c;
	struct store *st;

	sf_cap_init(&c);
	st = store_open(path, &c.d);
	cr_assert_not_null(st, "store_open(%s): %s", path, sf_cap_text(&c));
	cr_assert_eq(c.d.errors, 0);
	sf_cap_release(&c);
	return st;
}

int64_t sf_put_ok(struct store *st)
{
	struct sf_capture c;
	int64_t id;

	sf_cap_init(&c);
	id = store_put(st, &RUN, &STEP, ROWS, 3, &c.d);
	cr_assert_gt(id, 0, "store_put: %s", sf_cap_text(&c));
	sf_cap_release(&c);
	return id;
}

/* store_put() of RUN with step and rows must fail with one error naming
 * sf_db_path and saying each phrase (a NULL-terminated list). */
void sf_expect_put_fails(struct store *st, const struct store_run *run,
			     const struct store_step *step,
			     const struct store_coll_row *rows, uint32_t n,
			     ...)
{
	struct sf_capture c;
	va_list ap;

	sf_cap_init(&c);
	cr_assert_eq(store_put(st, run, step, rows, n, &c.d), -1);
	va_start(ap, n);
	expect_error(&c, sf_db_path, ap);
	va_end(ap);
}

void sf_assert_counts(const char *path, int64_t runs, int64_t steps,
		   int64_t rows)
{
	cr_assert_eq(sf_count_rows(path, "runs"), runs);
	cr_assert_eq(sf_count_rows(path, "step_results"), steps);
	cr_assert_eq(sf_count_rows(path, "collective_results"), rows);
}
