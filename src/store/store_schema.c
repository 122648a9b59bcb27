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
	{ 4, "plan_candidates table and v_plans view",
	  "CREATE TABLE plan_candidates (\n"
	  "  run_id             INTEGER NOT NULL\n"
	  "                     REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  rank               INTEGER NOT NULL CHECK (rank >= 1),\n"
	  "  gpus               INTEGER NOT NULL CHECK (gpus >= 1),\n"
	  "  nodes              INTEGER NOT NULL CHECK (nodes >= 1),\n"
	  "  tp                 INTEGER NOT NULL,\n"
	  "  pp                 INTEGER NOT NULL,\n"
	  "  vpp                INTEGER NOT NULL,\n"
	  "  cp                 INTEGER NOT NULL,\n"
	  "  ep                 INTEGER NOT NULL,\n"
	  "  etp                INTEGER NOT NULL,\n"
	  "  dp                 INTEGER NOT NULL,\n"
	  "  micro_batch_size   INTEGER NOT NULL,\n"
	  "  recompute          TEXT NOT NULL,\n"
	  "  zero_stage         INTEGER NOT NULL,\n"
	  "  sequence_parallel  INTEGER NOT NULL"
	  " CHECK (sequence_parallel IN (0, 1)),\n"
	  "  schedule           TEXT NOT NULL,\n"
	  "  tp_comm_overlap    INTEGER NOT NULL"
	  " CHECK (tp_comm_overlap IN (0, 1)),\n"
	  "  simulated          INTEGER NOT NULL CHECK (simulated IN (0, 1)),\n"
	  "  on_front           INTEGER NOT NULL CHECK (on_front IN (0, 1)),\n"
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
	  "  other_s            REAL NOT NULL,\n"
	  "  bound              TEXT NOT NULL,\n"
	  "  est_step_time_s    REAL NOT NULL,\n"
	  "  est_rank           INTEGER NOT NULL,\n"
	  "  PRIMARY KEY (run_id, rank)\n"
	  ");\n"
	  "CREATE VIEW v_plans AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.config_hash,\n"
	  "  r.llmsim_version,\n"
	  "  json_extract(r.config_json, '$.name') AS job,\n"
	  "  json_extract(r.config_json, '$.model.name') AS model,\n"
	  "  json_extract(r.config_json, '$.system.name') AS system,\n"
	  "  json_extract(r.result_json, '$.objective') AS objective,\n"
	  "  c.rank, c.gpus, c.nodes, c.tp, c.pp, c.vpp, c.cp, c.ep, c.etp,\n"
	  "  c.dp, c.micro_batch_size, c.recompute, c.zero_stage,\n"
	  "  c.sequence_parallel, c.schedule, c.tp_comm_overlap,\n"
	  "  c.simulated, c.on_front, c.step_time_s, c.tokens_per_s, c.mfu,\n"
	  "  c.tflops_per_gpu, c.peak_bytes_per_gpu, c.fits, c.compute_s,\n"
	  "  c.exposed_comm_s, c.bubble_s, c.optimizer_s, c.other_s, c.bound,\n"
	  "  c.est_step_time_s, c.est_rank\n"
	  "FROM runs r JOIN plan_candidates c ON c.run_id = r.id;\n" },
};

const int store_nmigrations =
	(int)(sizeof(store_migrations) / sizeof(store_migrations[0]));

int store_schema_version(void)
{
	return store_migrations[store_nmigrations - 1].version;
}

