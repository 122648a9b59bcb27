/*
 * store.c - the results database: open, migrate, store one result per
 * transaction.
 *
 * Schema. The tables and views are created by an append-only list of
 * migrations (store_schema.c); meta.schema_version says how many have
 * run. A database is upgraded in place, one migration per transaction
 * with the version bump inside it, so a failure at any point leaves the
 * database at some complete version and the next open carries on from
 * there. A database with a newer version than this build knows is
 * refused, never written. docs/results-store.md documents every table,
 * column and view.
 *
 * Concurrency. Parallel sweeps open the same file from many processes.
 * WAL mode lets readers (dashboards) run while one process writes; a
 * writer takes the lock up front (BEGIN IMMEDIATE) and others wait up to
 * the busy timeout. Two processes may open an old database at once, so a
 * migration re-reads the version after taking the write lock and skips
 * itself when the other process got there first. Opening an up-to-date
 * database takes no write lock at all.
 *
 * Memory. SQLite's own allocations are routed through mem.h (a
 * SQLITE_CONFIG_MALLOC table installed before SQLite initializes), so the
 * failure-injection tests reach every allocation an open or a put makes.
 * SQLite's allocator is process-wide; it is installed by the first
 * store_open() and stays (if SQLite was already initialized by someone
 * else, SQLite keeps its own allocator and nothing else changes). That
 * first call must not race with another thread using SQLite.
 *
 * Values only ever reach SQL through bound parameters; the SQL text here
 * is constant.
 *
 * Depends on SQLite, diag.h, mem.h.
 */
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "base/diag.h"
#include "base/mem.h"
#include "store_impl.h"
#include "store_schema.h"


/* ---- SQLite's allocations through mem.h ----------------------------- */

/* SQLite asks for the size of a live allocation (xSize), so each one
 * carries it in a header; 16 bytes keep the payload 16-aligned. */
#define HDR_B ((size_t)16)

static void *sq_malloc(int n)
{
	unsigned char *p;

	if (n <= 0)
		return NULL;
	p = mem_alloc(HDR_B + (size_t)n);
	if (!p)
		return NULL;
	memcpy(p, &n, sizeof(n));
	return p + HDR_B;
}

static void sq_free(void *p)
{
	if (p)
		mem_free((unsigned char *)p - HDR_B);
}

static void *sq_realloc(void *p, int n)
{
	unsigned char *q;

	if (!p)
		return sq_malloc(n);
	if (n <= 0)
		return NULL;
	q = mem_realloc((unsigned char *)p - HDR_B, HDR_B + (size_t)n);
	if (!q)
		return NULL;
	memcpy(q, &n, sizeof(n));
	return q + HDR_B;
}

static int sq_size(void *p)
{
	int n = 0;

	if (p)
		memcpy(&n, (unsigned char *)p - HDR_B, sizeof(n));
	return n;
}

static int sq_roundup(int n)
{
	return (n + 7) & ~7;
}

static int sq_init(void *unused)
{
	(void)unused;
	return SQLITE_OK;
}

static void sq_shutdown(void *unused)
{
	(void)unused;
}

/* Install the table unless SQLite is already running (then SQLite
 * refuses with SQLITE_MISUSE and keeps its allocator, which is fine). */
void store_route_allocations(void)
{
	sqlite3_mem_methods m = {
		sq_malloc, sq_free, sq_realloc, sq_size, sq_roundup,
		sq_init, sq_shutdown, NULL
	};

	(void)sqlite3_config(SQLITE_CONFIG_MALLOC, &m);	/* copied */
}

/* ---- diagnostics ---------------------------------------------------- */

/* What a user can do about the error SQLite reported (primary code). */
static const char *hint(const struct store *st)
{
	sqlite3 *db = st->db;

	switch (sqlite3_extended_errcode(db)) {
	case SQLITE_CONSTRAINT_NOTNULL:
		return " (the value is missing, or NaN: SQLite stores a NaN "
		       "as NULL)";
	default:
		break;
	}
	/* sqlite3_errcode gives the extended code (extended result codes
	 * are on): SQLITE_READONLY_DIRECTORY and its kin are READONLY. */
	switch (sqlite3_errcode(db) & 0xff) {
	case SQLITE_NOTADB:	/* read (report, export, merge's inputs) or
				 * written (where results go) */
		return st->reader ? "; give a results database llmsim wrote" :
		       "; llmsim leaves it alone: use --db PATH to store "
		       "results elsewhere";
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return "; another process holds the lock: try again when it "
		       "is done, or use --db PATH";
	case SQLITE_READONLY:
	case SQLITE_PERM:
		return "; check the permissions of the file and its "
		       "directory, or use --db PATH";
	case SQLITE_CANTOPEN:
		return "; check that the directory exists and is writable, "
		       "or use --db PATH";
	case SQLITE_FULL:
		return "; the disk is full";
	default:
		return "";
	}
}

/* Report SQLite's last error on st->db (store_impl.h). */
void store_report(struct store *st, struct diag *d, const char *fmt, ...)
{
	char doing[160];
	char os[96] = "";
	int code = sqlite3_errcode(st->db) & 0xff;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(doing, sizeof(doing), fmt, ap);
	va_end(ap);
	/* Only for I/O errors: after a failed open, SQLite's errno is that
	 * of its read-only retry, which misleads. */
	if (code == SQLITE_IOERR && sqlite3_system_errno(st->db))
		snprintf(os, sizeof(os), " (%s)",
			 strerror(sqlite3_system_errno(st->db)));
	diag_error(d, st->path, 0, 0, "%s: %s%s%s", doing,
		   sqlite3_errmsg(st->db), os, hint(st));
}

void store_report_oom(const char *path, struct diag *d)
{
	diag_error(d, path, 0, 0,
		   "out of memory opening the results database");
}

/* Open name (a path, or a "file:" URI with SQLITE_OPEN_URI in flags)
 * as st's connection, with extended result codes. 0, or -1 after
 * reporting against st->path. */
int store_open_db(struct store *st, const char *name, int flags,
		  struct diag *d)
{
	int rc = sqlite3_open_v2(name, &st->db, flags, NULL);

	if (!st->db) {
		store_report_oom(st->path, d);
		return -1;
	}
	if (rc != SQLITE_OK) {
		store_report(st, d, "opening the results database");
		return -1;
	}
	sqlite3_extended_result_codes(st->db, 1);
	return 0;
}

/* ---- small helpers -------------------------------------------------- */

/* Step s once and reset it; the step's result code. On an error the
 * message stays on the connection for store_report(). */
int store_step_once(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	return rc;
}

/* Copy column 0 of s's current row as text into out. Integers are
 * formatted here and text is read as stored, so nothing is converted
 * (a conversion could allocate, and fail). */
static void copy_column(sqlite3_stmt *s, char *out, size_t size)
{
	const unsigned char *text;

	switch (sqlite3_column_type(s, 0)) {
	case SQLITE_INTEGER:
		snprintf(out, size, "%lld",
			 (long long)sqlite3_column_int64(s, 0));
		break;
	case SQLITE_TEXT:
		text = sqlite3_column_text(s, 0);
		snprintf(out, size, "%s", text ? (const char *)text : "");
		break;
	default:
		snprintf(out, size, "%s", "");
		break;
	}
}

/* Run constant sql; with out, copy the first column of its first row
 * (an empty string when there is none). */
static int run_sql(sqlite3 *db, const char *sql, char *out, size_t size)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);

	if (out)
		out[0] = '\0';
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(s);
	if (out && rc == SQLITE_ROW)
		copy_column(s, out, size);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		rc = SQLITE_OK;
	sqlite3_finalize(s);
	return rc;
}

/* Create every missing directory above the file at path (its dirname,
 * like mkdir -p). */
static int make_parent_dirs(const char *path, struct diag *d)
{
	const char *slash = strrchr(path, '/');
	char *dir, *p;
	int rc = -1;

	if (!slash || slash == path)
		return 0;
	dir = mem_strdup(path);
	if (!dir) {
		store_report_oom(path, d);
		return -1;
	}
	dir[slash - path] = '\0';
	for (p = dir + 1;; p++) {
		char c = *p;

		if (c != '/' && c != '\0')
			continue;
		*p = '\0';
		if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
			diag_error(d, path, 0, 0,
				   "cannot create directory '%s' for the "
				   "results database: %s; use --db PATH",
				   dir, strerror(errno));
			goto out;
		}
		*p = c;
		if (!c)
			break;
	}
	rc = 0;
out:
	mem_free(dir);
	return rc;
}

/* ---- open ----------------------------------------------------------- */

/* A path ending in .yaml, .yml or .json names a config, not a database:
 * `--db job.yaml` (the arguments swapped) made job.yaml a database when
 * it was missing or empty. -1 after reporting, before anything is
 * created. */
static int refuse_config_name(const char *path, struct diag *d)
{
	static const char *const ext[] = {".yaml", ".yml", ".json"};
	const char *dot = strrchr(path, '.');
	size_t i;

	if (!dot || strchr(dot, '/'))
		return 0;
	for (i = 0; i < sizeof(ext) / sizeof(ext[0]); i++)
		if (strcasecmp(dot, ext[i]) == 0) {
			diag_error(d, path, 0, 0, "a %s file is a config, not "
				   "a results database; --db takes the "
				   "database's path (such as results/llmsim.db)",
				   ext[i]);
			return -1;
		}
	return 0;
}

/* Open (creating if missing) the file once ourselves: for a location it
 * cannot write, SQLite says only "unable to open database file", and its
 * errno is that of a read-only retry, not the reason. An empty file is a
 * new database to SQLite; nothing is truncated. */
static int probe_writable(const char *path, struct diag *d)
{
	int fd;

	if (strcmp(path, ":memory:") == 0)
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;

		diag_error(d, path, 0, 0,
			   "cannot open the results database for writing: "
			   "%s; %suse --db PATH", strerror(e),
			   e == EACCES || e == EPERM || e == EROFS ?
			   "check the permissions of the file and its "
			   "directory, or " : "");
		return -1;
	}
	close(fd);
	return 0;
}

/* Switch into WAL mode (a no-op when the file is in it already). The
 * switch needs the file to itself for a moment, and SQLite answers BUSY
 * at once rather than wait while this connection holds a read lock (to
 * avoid a deadlock). The processes of a parallel sweep all open a new
 * database together, so wait here, in steps, up to the lock timeout. */
static int set_wal(struct store *st, char *mode, size_t size)
{
	int waited_ms = 0, rc;

	for (;;) {
		rc = run_sql(st->db, "PRAGMA journal_mode = WAL", mode, size);
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= st->busy_ms)
			return rc;
		sqlite3_sleep(5);
		waited_ms += 5;
	}
}

/* The open flags of a connection. A reader of a file it may write opens
 * it read-write and sets query_only (store_connect): the last connection
 * to a WAL database checkpoints and deletes the -wal and -shm files when
 * it closes, which a read-only connection cannot do, so every db views,
 * db export or report left both behind (SQLite wal.html, "Persistence of
 * WAL mode"). A file it may not write is opened read-only; a new file is
 * never created for a reader. */
static int open_flags(const struct store *st, int readonly)
{
	if (!readonly)
		return SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	if (strcmp(st->path, ":memory:") != 0 && access(st->path, W_OK) == 0)
		return SQLITE_OPEN_READWRITE;
	return SQLITE_OPEN_READONLY;
}

/* Open the file and set the connection up: foreign keys, lock wait (and
 * for a reader, no write). The journal mode comes later (set_journal),
 * once the file is known to be ours: a foreign database is refused
 * untouched. */
int store_connect(struct store *st, int readonly, struct diag *d)
{
	st->reader = readonly;
	if (store_open_db(st, st->path, open_flags(st, readonly), d) != 0)
		return -1;
	sqlite3_busy_timeout(st->db, st->busy_ms);
	if (!readonly && sqlite3_db_readonly(st->db, "main") == 1) {
		diag_error(d, st->path, 0, 0,
			   "the results database is read-only; check its "
			   "permissions, or use --db PATH");
		return -1;
	}
	if (run_sql(st->db, "PRAGMA foreign_keys = ON", NULL, 0) ||
	    (readonly && run_sql(st->db, "PRAGMA query_only = ON", NULL, 0))) {
		store_report(st, d, "opening the results database");
		return -1;
	}
	return 0;
}

/* WAL and synchronous=NORMAL (with WAL: a crash loses no committed
 * result; a power loss may lose the last ones, never corrupts). */
static int set_journal(struct store *st, struct diag *d)
{
	char mode[16];

	if (set_wal(st, mode, sizeof(mode))) {
		store_report(st, d, "opening the results database");
		return -1;
	}
	/* Filesystems without shared memory cannot do WAL; an in-memory
	 * database has no journal file. Both still work, one writer at a
	 * time. */
	if (strcmp(mode, "wal") != 0 && strcmp(mode, "memory") != 0)
		diag_warn(d, st->path, 0, 0,
			  "WAL mode unavailable (journal mode '%s'): readers "
			  "will wait for writers", mode);
	if (run_sql(st->db, "PRAGMA synchronous = NORMAL", NULL, 0)) {
		store_report(st, d, "opening the results database");
		return -1;
	}
	return 0;
}

/* Parse the stored version strictly: a positive decimal integer. */
static int parse_version(const char *text, int *version)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || *end || v < 1 || v > 1000000)
		return -1;
	*version = (int)v;
	return 0;
}

/* Whose database this is, from its schema: "ours" (it has a meta
 * table), "foreign" (other tables only) or "empty". */
static const char WHOSE_SQL[] =
	"SELECT CASE"
	" WHEN EXISTS (SELECT 1 FROM sqlite_master"
	"             WHERE type = 'table' AND name = 'meta') THEN 'ours'"
	" WHEN EXISTS (SELECT 1 FROM sqlite_master) THEN 'foreign'"
	" ELSE 'empty' END";

/* The stored schema version: 0 for an empty database; -1 after
 * reporting a database that is not ours, unreadable or inconsistent. */
int store_read_version(struct store *st, struct diag *d, int *version)
{
	char whose[16], text[32];

	if (run_sql(st->db, WHOSE_SQL, whose, sizeof(whose))) {
		store_report(st, d, "reading the schema version");
		return -1;
	}
	if (strcmp(whose, "empty") == 0) {
		*version = 0;
		return 0;
	}
	if (strcmp(whose, "ours") != 0) {
		diag_error(d, st->path, 0, 0,
			   "an SQLite database but not an llmsim results "
			   "database (no meta table); use --db PATH");
		return -1;
	}
	if (run_sql(st->db, "SELECT value FROM meta "
		    "WHERE key = 'schema_version'", text, sizeof(text))) {
		store_report(st, d, "reading the schema version");
		return -1;
	}
	if (parse_version(text, version) < 0) {
		diag_error(d, st->path, 0, 0,
			   "meta.schema_version is '%s', expected a positive "
			   "integer; the database is damaged", text);
		return -1;
	}
	return 0;
}

int store_refuse_newer(struct store *st, struct diag *d, int version)
{
	diag_error(d, st->path, 0, 0,
		   "the results database has schema version %d; this llmsim "
		   "knows up to %d: upgrade llmsim or use --db PATH",
		   version, store_schema_version());
	return -1;
}

/* Record the version; inside the migration's transaction. */
static int set_version(sqlite3 *db, int version)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db,
		"INSERT OR REPLACE INTO meta(key, value) "
		"VALUES ('schema_version', ?1)", -1, &s, NULL);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 1, version);
	if (rc == SQLITE_OK)
		rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/* Apply one migration in its own transaction, unless another process
 * applied it since we read the version. */
static int apply(struct store *st, const struct store_migration *m,
		 struct diag *d)
{
	int version, rc = -1;

	if (run_sql(st->db, "BEGIN IMMEDIATE", NULL, 0)) {
		store_report(st, d, "migrating to schema version %d (%s)",
		       m->version, m->what);
		return -1;
	}
	if (store_read_version(st, d, &version) < 0)
		goto out;
	if (version > store_schema_version()) {
		store_refuse_newer(st, d, version);
		goto out;
	}
	if (version < m->version &&
	    (sqlite3_exec(st->db, m->sql, NULL, NULL, NULL) != SQLITE_OK ||
	     set_version(st->db, m->version) != SQLITE_OK)) {
		store_report(st, d, "migrating to schema version %d (%s)",
		       m->version, m->what);
		goto out;
	}
	if (run_sql(st->db, "COMMIT", NULL, 0)) {
		store_report(st, d, "committing schema version %d", m->version);
		goto out;
	}
	rc = 0;
out:
	if (rc < 0 && !sqlite3_get_autocommit(st->db))
		(void)run_sql(st->db, "ROLLBACK", NULL, 0);
	return rc;
}

static int migrate(struct store *st, struct diag *d)
{
	int version, i;

	if (store_read_version(st, d, &version) < 0)
		return -1;
	if (version > store_schema_version())
		return store_refuse_newer(st, d, version);
	for (i = 0; i < store_nmigrations; i++)
		if (store_migrations[i].version > version &&
		    apply(st, &store_migrations[i], d) < 0)
			return -1;
	return 0;
}

/* The statements store_put() uses, kept for the store's life. */
static int prepare_all(struct store *st, struct diag *d)
{
	const struct {
		sqlite3_stmt **s;
		const char *sql;
	} stmts[] = {
		{ &st->begin, "BEGIN IMMEDIATE" },
		{ &st->commit, "COMMIT" },
		{ &st->rollback, "ROLLBACK" },
		{ &st->put_run,
		  "INSERT INTO runs(command, kind, llmsim_version, "
		  "config_hash, config_json, result_json) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6)" },
		{ &st->put_step,
		  "INSERT INTO step_results(run_id, fits, step_time_s, "
		  "tokens_per_s, mfu, tflops_per_gpu, peak_bytes_per_gpu, "
		  "compute_s, exposed_comm_s, bubble_s, optimizer_s, "
		  "other_s) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
		  "?7, ?8, ?9, ?10, ?11, ?12)" },
		{ &st->put_coll,
		  "INSERT INTO collective_results(run_id, idx, ranks, type, "
		  "op, algorithm, protocol, size_B, count, time_s, "
		  "algbw_Bps, busbw_Bps) "
		  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
		  "?7, ?8, ?9, ?10, ?11, ?12)" },
	};
	size_t i;

	for (i = 0; i < sizeof(stmts) / sizeof(stmts[0]); i++) {
		if (sqlite3_prepare_v3(st->db, stmts[i].sql, -1,
				       SQLITE_PREPARE_PERSISTENT, stmts[i].s,
				       NULL) != SQLITE_OK) {
			store_report(st, d, "preparing the results statements");
			return -1;
		}
	}
	return 0;
}

struct store *store_open(const char *path, struct diag *d)
{
	return store_open_timeout(path, STORE_BUSY_TIMEOUT_MS, d);
}

struct store *store_new(const char *path, int busy_ms, struct diag *d)
{
	struct store *st = mem_calloc(1, sizeof(*st));

	if (st)
		st->path = mem_strdup(path);
	if (!st || !st->path) {
		store_report_oom(path, d);
		mem_free(st);
		return NULL;
	}
	st->busy_ms = busy_ms;
	return st;
}

struct store *store_open_timeout(const char *path, int busy_ms,
				 struct diag *d)
{
	struct store *st;
	int version;

	assert(path && busy_ms >= 0);
	store_route_allocations();
	if (refuse_config_name(path, d) < 0 || make_parent_dirs(path, d) < 0 ||
	    probe_writable(path, d) < 0)
		return NULL;
	if (!(st = store_new(path, busy_ms, d)))
		return NULL;
	if (store_connect(st, 0, d) < 0 || store_read_version(st, d, &version) < 0 ||
	    set_journal(st, d) < 0 || migrate(st, d) < 0 ||
	    prepare_all(st, d) < 0) {
		store_close(st);
		return NULL;
	}
	return st;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	sqlite3_finalize(st->begin);
	sqlite3_finalize(st->commit);
	sqlite3_finalize(st->rollback);
	sqlite3_finalize(st->put_run);
	sqlite3_finalize(st->put_step);
	sqlite3_finalize(st->put_coll);
	/* Every statement is finalized, so close cannot be busy; an open
	 * transaction (a failed rollback) is rolled back here. */
	if (sqlite3_close(st->db) != SQLITE_OK)
		BUG("sqlite3_close with statements still open");
	mem_free(st->path);
	mem_free(st);
}

/* ---- put ------------------------------------------------------------ */

int store_bind_texts(sqlite3_stmt *s, int first, const char *const *v,
		      int n)
{
	int rc = SQLITE_OK, i;

	for (i = 0; i < n && rc == SQLITE_OK; i++)
		rc = sqlite3_bind_text(s, first + i, v[i], -1, SQLITE_STATIC);
	return rc;
}

int store_bind_doubles(sqlite3_stmt *s, int first, const double *v, int n)
{
	int rc = SQLITE_OK, i;

	for (i = 0; i < n && rc == SQLITE_OK; i++)
		rc = sqlite3_bind_double(s, first + i, v[i]);
	return rc;
}

/* Step s once its binding returned rc; SQLITE_DONE on success. The
 * bindings are cleared so no pointer into the caller's strings stays
 * behind. */
int store_insert(sqlite3_stmt *s, int rc)
{
	if (rc == SQLITE_OK)
		rc = store_step_once(s);
	else
		sqlite3_reset(s);
	sqlite3_clear_bindings(s);
	return rc;
}

static int put_run(struct store *st, const struct store_run *run)
{
	const char *text[] = {
		run->command, run->kind, run->version, run->config_hash,
		run->config_json, run->result_json
	};

	return store_insert(st->put_run, store_bind_texts(st->put_run, 1, text, 6));
}

static int put_step(struct store *st, int64_t id, const struct store_step *p)
{
	const double v[] = {
		p->step_time_s, p->tokens_per_s, p->mfu, p->tflops_per_gpu,
		p->peak_bytes_per_gpu, p->compute_s, p->exposed_comm_s,
		p->bubble_s, p->optimizer_s, p->other_s
	};
	sqlite3_stmt *s = st->put_step;
	int rc = sqlite3_bind_int64(s, 1, id);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int(s, 2, p->fits);
	if (rc == SQLITE_OK)
		rc = store_bind_doubles(s, 3, v, 10);
	return store_insert(s, rc);
}

static int put_coll(struct store *st, int64_t id, uint32_t idx,
		    const struct store_coll_row *r)
{
	const char *text[] = { r->type, r->op, r->algorithm, r->protocol };
	const double v[] = {
		r->size_B, r->count, r->time_s, r->algbw_Bps, r->busbw_Bps
	};
	sqlite3_stmt *s = st->put_coll;
	int rc = sqlite3_bind_int64(s, 1, id);

	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s, 2, idx);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_int64(s, 3, r->ranks);
	if (rc == SQLITE_OK)
		rc = store_bind_texts(s, 4, text, 4);
	if (rc == SQLITE_OK)
		rc = store_bind_doubles(s, 8, v, 5);
	return store_insert(s, rc);
}

int64_t store_put_run(struct store *st, const struct store_run *run,
		      struct diag *d)
{
	if (put_run(st, run) != SQLITE_DONE) {
		store_report(st, d, "storing the run");
		return -1;
	}
	return sqlite3_last_insert_rowid(st->db);
}

struct put_args {
	const struct store_run *run;
	const struct store_step *step;
	const struct store_coll_row *rows;
	uint32_t nrows;
};

/* Everything of one result, inside the open transaction; -1 after
 * reporting. */
static int64_t put_all(struct store *st, const void *ctx, struct diag *d)
{
	const struct put_args *a = ctx;
	int64_t id = store_put_run(st, a->run, d);
	uint32_t i;

	if (id < 0)
		return -1;
	if (a->step && put_step(st, id, a->step) != SQLITE_DONE) {
		store_report(st, d, "storing the step result");
		return -1;
	}
	for (i = 0; i < a->nrows; i++) {
		if (put_coll(st, id, i, &a->rows[i]) != SQLITE_DONE) {
			store_report(st, d, "storing collective row %u of %u",
				     i + 1, a->nrows);
			return -1;
		}
	}
	return id;
}

int64_t store_put_all(struct store *st, const struct store_run *run,
		      const struct store_step *step,
		      const struct store_coll_row *rows, uint32_t nrows,
		      struct diag *d)
{
	struct put_args a = { run, step, rows, nrows };

	return put_all(st, &a, d);
}

int64_t store_tx(struct store *st,
		 int64_t (*fn)(struct store *st, const void *ctx,
			       struct diag *d),
		 const void *ctx, struct diag *d)
{
	int64_t id;

	/* A rollback that failed (out of memory) left a transaction open;
	 * nothing of it was committed, so drop it now. */
	if (!sqlite3_get_autocommit(st->db))
		(void)store_step_once(st->rollback);
	if (store_step_once(st->begin) != SQLITE_DONE) {
		store_report(st, d, "starting to store a result");
		return -1;
	}
	id = fn(st, ctx, d);
	if (id >= 0 && store_step_once(st->commit) != SQLITE_DONE) {
		if (id > 0)
			store_report(st, d, "committing run %lld", (long long)id);
		else
			store_report(st, d, "committing the result");
		id = -1;
	}
	if (id < 0 && !sqlite3_get_autocommit(st->db))
		(void)store_step_once(st->rollback);
	return id;
}

int64_t store_put(struct store *st, const struct store_run *run,
		  const struct store_step *step,
		  const struct store_coll_row *rows, uint32_t nrows,
		  struct diag *d)
{
	struct put_args a = { run, step, rows, nrows };

	assert(st && run && (rows || nrows == 0));
	return store_tx(st, put_all, &a, d);
}
