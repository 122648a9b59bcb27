/*
 * store_impl.h - what the store's files share: the connection and its
 * statements (store.c), error reporting and small SQL helpers, for the
 * readers (store_read.c), sweeps (store_sweep.c) and merging
 * (store_merge.c). Private to src/store; not a contract.
 *
 * Depends on SQLite, store.h.
 */
#ifndef LLMSIM_STORE_STORE_IMPL_H
#define LLMSIM_STORE_STORE_IMPL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct diag;

struct store {
	sqlite3 *db;
	char *path;			/* as given, for diagnostics */
	int busy_ms;			/* ms to wait for another writer */
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

/* Step s once and reset it; the step's result code. */
int store_step_once(sqlite3_stmt *s);

/* Run constant sql; with out, copy the first column of its first row
 * (an empty string when there is none). An SQLite result code. */
int store_run_sql(sqlite3 *db, const char *sql, char *out, size_t size);

/* Insert a run with its step summary and collective rows inside the
 * open transaction. The run id, or -1 after reporting. */
int64_t store_put_all(struct store *st, const struct store_run *run,
		      const struct store_step *step,
		      const struct store_coll_row *rows, uint32_t nrows,
		      struct diag *d);

/* Begin an immediate transaction (after dropping one a failed rollback
 * left open); 0, or -1 after reporting "starting to DOING". */
int store_tx_begin(struct store *st, const char *doing, struct diag *d);

/* Commit (0) or, on failure, report and roll back (-1). */
int store_tx_commit(struct store *st, const char *doing, struct diag *d);

/* Roll back when a transaction is open. */
void store_tx_rollback(struct store *st);

/* (Re)create the view of one sweep (store_sweep.c), inside the open
 * transaction. SQLite result code. */
int store_sweep_view(struct store *st, int64_t sweep_id);

#endif
