/*
 * store_schema.c - the results database's tables and views, as the
 * migrations that create them. docs/results-store.md documents every
 * column with its unit; keep the two in step.
 *
 * Migrations, oldest first. Never edit one that has shipped: a database
 * created by an older build has already run it. Add a new one instead
 * (tables, columns, indexes; a view is changed by DROP VIEW + CREATE VIEW
 * keeping every existing column's name, meaning and unit).
 *
 * NaN binds as NULL in SQLite, so the NOT NULL on every number refuses a
 * NaN instead of storing a hole. created_at is filled by SQLite: UTC,
 * ISO 8601 with milliseconds, so text order is time order.
 *
 * Depends on nothing (store.c runs these).
 */
#include "store.h"
#include "store_schema.h"

const struct store_migration store_migrations[] = {
	{ 1, "meta and runs tables",
	  "CREATE TABLE meta (\n"
	  "  key   TEXT PRIMARY KEY,\n"
	  "  value TEXT NOT NULL\n"
	  ");\n"
	  "CREATE TABLE runs (\n"
	  "  id             INTEGER PRIMARY KEY,\n"
	  "  created_at     TEXT NOT NULL\n"
	  "                 DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n"
	  "  command        TEXT NOT NULL,\n"
	  "  kind           TEXT NOT NULL,\n"
	  "  llmsim_version TEXT NOT NULL,\n"
	  "  config_hash    TEXT NOT NULL CONSTRAINT config_hash_is_sha256\n"
	  "                 CHECK (length(config_hash) = 64 AND\n"
	  "                        config_hash NOT GLOB '*[^0-9a-f]*'),\n"
	  "  config_json    TEXT NOT NULL CONSTRAINT config_json_is_json\n"
	  "                 CHECK (json_valid(config_json)),\n"
	  "  result_json    TEXT CONSTRAINT result_json_is_json\n"
	  "                 CHECK (result_json IS NULL OR"
	  " json_valid(result_json))\n"
	  ");\n"
	  "CREATE INDEX runs_config_hash ON runs(config_hash);\n"
	  "CREATE INDEX runs_created_at ON runs(created_at);\n" },
	{ 2, "step_results table and v_step_breakdown view",
	  "CREATE TABLE step_results (\n"
	  "  run_id             INTEGER PRIMARY KEY\n"
	  "                     REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  step_time_s        REAL NOT NULL,\n"
	  "  tokens_per_s       REAL NOT NULL,\n"
	  "  mfu                REAL NOT NULL,\n"
	  "  tflops_per_gpu     REAL NOT NULL,\n"
	  "  peak_bytes_per_gpu REAL NOT NULL,\n"
	  "  fits               INTEGER NOT NULL CHECK (fits IN (0, 1)),\n"
	  "  compute_s          REAL NOT NULL,\n"
	  "  exposed_comm_s     REAL NOT NULL,\n"
	  "  bubble_s           REAL NOT NULL,\n"
	  "  optimizer_s        REAL NOT NULL,\n"
	  "  other_s            REAL NOT NULL\n"
	  ");\n"
	  "CREATE VIEW v_step_breakdown AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.command, r.config_hash,\n"
	  "  r.llmsim_version,\n"
	  "  s.step_time_s, s.tokens_per_s, s.mfu, s.tflops_per_gpu,\n"
	  "  s.peak_bytes_per_gpu, s.fits,\n"
	  "  s.compute_s, s.exposed_comm_s, s.bubble_s, s.optimizer_s,\n"
	  "  s.other_s,\n"
	  "  s.compute_s / s.step_time_s AS compute_frac,\n"
	  "  s.exposed_comm_s / s.step_time_s AS exposed_comm_frac,\n"
	  "  s.bubble_s / s.step_time_s AS bubble_frac,\n"
	  "  s.optimizer_s / s.step_time_s AS optimizer_frac,\n"
	  "  s.other_s / s.step_time_s AS other_frac\n"
	  "FROM runs r JOIN step_results s ON s.run_id = r.id;\n" },
	{ 3, "collective_results table and v_collectives view",
	  "CREATE TABLE collective_results (\n"
	  "  run_id    INTEGER NOT NULL\n"
	  "            REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  idx       INTEGER NOT NULL CHECK (idx >= 0),\n"
	  "  size_B    REAL NOT NULL,\n"
	  "  count     REAL NOT NULL,\n"
	  "  type      TEXT NOT NULL,\n"
	  "  op        TEXT NOT NULL,\n"
	  "  ranks     INTEGER NOT NULL CHECK (ranks >= 1),\n"
	  "  time_s    REAL NOT NULL,\n"
	  "  algbw_Bps REAL NOT NULL,\n"
	  "  busbw_Bps REAL NOT NULL,\n"
	  "  algorithm TEXT,\n"
	  "  protocol  TEXT,\n"
	  "  PRIMARY KEY (run_id, idx)\n"
	  ");\n"
	  "CREATE INDEX collective_results_op\n"
	  "  ON collective_results(op, ranks, size_B);\n"
	  "CREATE VIEW v_collectives AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.config_hash,\n"
	  "  r.llmsim_version, c.idx, c.op, c.type, c.ranks, c.size_B,\n"
	  "  c.count, c.time_s * 1e6 AS time_us,\n"
	  "  c.algbw_Bps / 1e9 AS algbw_GBps,\n"
	  "  c.busbw_Bps / 1e9 AS busbw_GBps,\n"
	  "  c.algorithm, c.protocol\n"
	  "FROM runs r JOIN collective_results c ON c.run_id = r.id;\n" },
};

const int store_nmigrations =
	(int)(sizeof(store_migrations) / sizeof(store_migrations[0]));

int store_schema_version(void)
{
	return store_migrations[store_nmigrations - 1].version;
}

