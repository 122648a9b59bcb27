/*
 * store_impl.h - the results store's insides, shared by its files
 * (store.c: open, migrate, runs and step results; store_meas.c:
 * measurements and validation rows; store_plan.c: plans; store_read.c:
 * queries and views; store_sweep.c: sweeps and their points;
 * store_merge.c: merging). Not for other modules.
 *
 * Depends on SQLite, store.h.
 */
#ifndef LLMSIM_STORE_STORE_IMPL_H
#define LLMSIM_STORE_STORE_IMPL_H

#include <stdint.h>

#include <sqlite3.h>

#include "store.h"

struct diag;
struct store_run;
struct store_step;
struct store_coll_row;

struct store {
	sqlite3 *db;
	char *path;			/* as given, for diagnostics */
	int busy_ms;			/* ms to wait for another writer */
	int reader;			/* opened to read (store_connect) */
	sqlite3_stmt *begin;		/* BEGIN IMMEDIATE */
	sqlite3_stmt *commit;
	sqlite3_stmt *rollback;
	sqlite3_stmt *put_run;
	sqlite3_stmt *put_step;
	sqlite3_stmt *put_coll;
};

/* Report SQLite's last error on st->db as "PATH: error: DOING: MESSAGE
 * (OS error, for I/O errors); HINT"; fmt says what we were doing. */
void store_report(struct store *st, struct diag *d, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* What the reader's open (store_read.c) shares with store_open()
 * (store.c): SQLite's allocations through mem.h (before any use);
 * "out of memory" for path; the open of a path or "file:" URI as st's
 * connection; a new store for path (not yet connected);
 * the connection, read-only or read-write and creating; the stored
 * schema version (0: an empty database); the refusal of a newer one.
 * Each int is 0, or -1 after reporting to d. */
void store_route_allocations(void);
void store_report_oom(const char *path, struct diag *d);
int store_open_db(struct store *st, const char *name, int flags,
		  struct diag *d);
struct store *store_new(const char *path, int busy_ms, struct diag *d);
int store_connect(struct store *st, int readonly, struct diag *d);
int store_read_version(struct store *st, struct diag *d, int *version);
int store_refuse_newer(struct store *st, struct diag *d, int version);

/* Step s once and reset it; the step's result code. */
int store_step_once(sqlite3_stmt *s);

/* Bind n texts / doubles from parameter first on. */
int store_bind_texts(sqlite3_stmt *s, int first, const char *const *v, int n);
int store_bind_doubles(sqlite3_stmt *s, int first, const double *v, int n);

/* Step s once its binding returned rc, clear its bindings; SQLITE_DONE
 * on success. */
int store_insert(sqlite3_stmt *s, int rc);

/* Insert the run row inside the open transaction: its id, or -1 after
 * reporting. */
int64_t store_put_run(struct store *st, const struct store_run *run,
		      struct diag *d);

/* Insert a run with its step summary and collective rows inside the
 * open transaction (what store_put() does in its own). The run id, or
 * -1 after reporting. */
int64_t store_put_all(struct store *st, const struct store_run *run,
		      const struct store_step *step,
		      const struct store_coll_row *rows, uint32_t nrows,
		      struct diag *d);

/* Insert a plan's ranking for run id inside the open transaction
 * (store_plan.c). 0, or -1 after reporting. */
int store_put_plan_rows(struct store *st, int64_t id,
			const struct store_plan_row *rows, uint32_t nrows,
			struct diag *d);

/* (Re)create the view of one sweep (store_sweep.c), inside the open
 * transaction. SQLite result code. */
int store_sweep_view(struct store *st, int64_t sweep_id);

/* Run fn inside one transaction (BEGIN IMMEDIATE ... COMMIT, rolled back
 * when fn returns < 0, committed when it returns 0 or more); fn's
 * result, or -1 after reporting. */
int64_t store_tx(struct store *st,
		 int64_t (*fn)(struct store *st, const void *ctx,
			       struct diag *d),
		 const void *ctx, struct diag *d);

#endif
