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
	{ 4, "measure_runs and measurements tables, v_measurements view",
	  "CREATE TABLE measure_runs (\n"
	  "  run_id           INTEGER PRIMARY KEY\n"
	  "                   REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  backend          TEXT NOT NULL,\n"
	  "  system           TEXT NOT NULL,\n"
	  "  sets_json        TEXT NOT NULL CHECK (json_valid(sets_json)),\n"
	  "  host             TEXT NOT NULL,\n"
	  "  device           TEXT NOT NULL,\n"
	  "  library          TEXT NOT NULL,\n"
	  "  library_version  TEXT NOT NULL,\n"
	  "  library_path     TEXT NOT NULL,\n"
	  "  runtime          TEXT NOT NULL,\n"
	  "  ranks            INTEGER NOT NULL CHECK (ranks >= 1),\n"
	  "  nodes            INTEGER NOT NULL CHECK (nodes >= 1),\n"
	  "  devices_per_node INTEGER NOT NULL CHECK (devices_per_node >= 1),\n"
	  "  cpus             INTEGER NOT NULL CHECK (cpus >= 0),\n"
	  "  command          TEXT NOT NULL\n"
	  ");\n"
	  "CREATE TABLE measurements (\n"
	  "  run_id      INTEGER NOT NULL\n"
	  "              REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  idx         INTEGER NOT NULL CHECK (idx >= 0),\n"
	  "  op          TEXT NOT NULL,\n"
	  "  type        TEXT NOT NULL,\n"
	  "  size_B      REAL NOT NULL,\n"
	  "  count       REAL NOT NULL,\n"
	  "  ranks       INTEGER NOT NULL CHECK (ranks >= 1),\n"
	  "  root        INTEGER,\n"
	  "  m           INTEGER,\n"
	  "  n           INTEGER,\n"
	  "  k           INTEGER,\n"
	  "  iters       INTEGER NOT NULL CHECK (iters >= 1),\n"
	  "  time_s      REAL NOT NULL,\n"
	  "  time_min_s  REAL NOT NULL,\n"
	  "  time_max_s  REAL NOT NULL,\n"
	  "  algbw_Bps   REAL,\n"
	  "  busbw_Bps   REAL,\n"
	  "  rate        REAL,\n"
	  "  check_result TEXT NOT NULL\n"
	  "              CHECK (check_result IN ('ok', 'wrong', 'skipped')),\n"
	  "  PRIMARY KEY (run_id, idx)\n"
	  ");\n"
	  "CREATE INDEX measurements_op ON measurements(op, ranks, size_B);\n"
	  "CREATE VIEW v_measurements AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.config_hash,\n"
	  "  r.llmsim_version, i.backend, i.system, i.host, i.device,\n"
	  "  i.library, i.library_version, i.runtime, i.nodes,\n"
	  "  i.devices_per_node, m.idx, m.op, m.type, m.ranks, m.size_B,\n"
	  "  m.count, m.m, m.n, m.k, m.iters,\n"
	  "  m.time_s * 1e6 AS time_us, m.time_min_s * 1e6 AS time_min_us,\n"
	  "  m.time_max_s * 1e6 AS time_max_us,\n"
	  "  m.algbw_Bps / 1e9 AS algbw_GBps, m.busbw_Bps / 1e9 AS busbw_GBps,\n"
	  "  m.rate, m.check_result\n"
	  "FROM runs r JOIN measure_runs i ON i.run_id = r.id\n"
	  "  JOIN measurements m ON m.run_id = r.id;\n" },
	{ 5, "validation_results table and v_validation view",
	  "CREATE TABLE validation_results (\n"
	  "  run_id     INTEGER NOT NULL\n"
	  "             REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  idx        INTEGER NOT NULL CHECK (idx >= 0),\n"
	  "  kind       TEXT NOT NULL,\n"
	  "  table_id   TEXT NOT NULL,\n"
	  "  case_id    TEXT NOT NULL,\n"
	  "  unit       TEXT NOT NULL,\n"
	  "  measured   REAL NOT NULL,\n"
	  "  predicted  REAL NOT NULL,\n"
	  "  error      REAL NOT NULL,\n"
	  "  scored     INTEGER NOT NULL CHECK (scored IN (0, 1)),\n"
	  "  in_sample  INTEGER NOT NULL CHECK (in_sample IN (0, 1)),\n"
	  "  lo         REAL,\n"
	  "  hi         REAL,\n"
	  "  PRIMARY KEY (run_id, idx)\n"
	  ");\n"
	  "CREATE INDEX validation_results_case\n"
	  "  ON validation_results(kind, table_id, case_id);\n"
	  "CREATE VIEW v_validation AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.llmsim_version, v.idx,\n"
	  "  v.kind, v.table_id, v.case_id, v.unit, v.measured, v.predicted,\n"
	  "  v.error, abs(v.error) AS abs_error, v.scored, v.in_sample,\n"
	  "  v.lo, v.hi,\n"
	  "  CASE WHEN v.lo IS NULL OR v.hi IS NULL THEN NULL\n"
	  "       ELSE v.measured BETWEEN v.lo AND v.hi END AS inside\n"
	  "FROM runs r JOIN validation_results v ON v.run_id = r.id;\n" },
};

const int store_nmigrations =
	(int)(sizeof(store_migrations) / sizeof(store_migrations[0]));

int store_schema_version(void)
{
	return store_migrations[store_nmigrations - 1].version;
}

