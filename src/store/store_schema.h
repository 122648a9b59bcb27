/*
 * store_schema.h - the results database's schema as a list of migrations
 * (private to the store module: store.c and store_schema.c).
 *
 * Depends on nothing.
 */
#ifndef LLMSIM_STORE_STORE_SCHEMA_H
#define LLMSIM_STORE_STORE_SCHEMA_H

#include <stddef.h>

struct store_migration {
	int version;			/* schema_version after it runs */
	const char *what;		/* what it adds, for diagnostics */
	const char *sql;		/* constant DDL, several statements */
};

/* Oldest first; versions 1, 2, ... store_schema_version(). */
extern const struct store_migration store_migrations[];
extern const int store_nmigrations;

/* A column of v_runs: its name and its expression over runs r and
 * step_results s joined to sweep_points p (see store_schema.c). */
struct store_run_col {
	const char *name;
	const char *expr;
};

extern const struct store_run_col store_run_cols[];
extern const size_t store_nrun_cols;

#endif
