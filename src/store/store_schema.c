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

/* The columns after run_id that v_runs and v_sweep_points (migration 7)
 * share, as one string literal. Spliced into the SQL by literal
 * concatenation, so the migration text is what it was when it shipped. */
#define RUN_COLS_AFTER_ID \
	"  r.created_at,\n" \
	"  r.command,\n" \
	"  r.config_hash,\n" \
	"  r.llmsim_version,\n" \
	"  json_extract(r.config_json, '$.name') AS job,\n" \
	"  json_extract(r.config_json, '$.model.name') AS model,\n" \
	"  json_extract(r.config_json, '$.system.name') AS system,\n" \
	"  json_extract(r.config_json, '$.system.gpu.name') AS gpu,\n" \
	"  json_extract(r.result_json, '$.gpus') AS gpus,\n" \
	"  json_extract(r.config_json, '$.system.nodes') AS nodes,\n" \
	"  json_extract(r.config_json, '$.system.gpus_per_node') AS gpus_per_node,\n" \
	"  json_extract(r.config_json, '$.system.scale_up.name') AS scale_up,\n" \
	"  json_extract(r.config_json, '$.system.scale_out.name') AS scale_out,\n" \
	"  json_extract(r.config_json, '$.framework.name') AS framework,\n" \
	"  json_extract(r.config_json, '$.parallelism.tp') AS tp,\n" \
	"  json_extract(r.config_json, '$.parallelism.pp') AS pp,\n" \
	"  json_extract(r.config_json, '$.parallelism.vpp') AS vpp,\n" \
	"  json_extract(r.config_json, '$.parallelism.cp') AS cp,\n" \
	"  json_extract(r.config_json, '$.parallelism.ep') AS ep,\n" \
	"  json_extract(r.config_json, '$.parallelism.dp') AS dp,\n" \
	"  json_extract(r.config_json, '$.parallelism.sequence_parallel') AS sequence_parallel,\n" \
	"  json_extract(r.config_json, '$.training.zero_stage') AS zero_stage,\n" \
	"  json_extract(r.config_json, '$.training.dtype') AS dtype,\n" \
	"  json_extract(r.config_json, '$.training.seq_len') AS seq_len,\n" \
	"  json_extract(r.config_json, '$.training.global_batch_size') AS global_batch_size,\n" \
	"  json_extract(r.config_json, '$.training.micro_batch_size') AS micro_batch_size,\n" \
	"  json_extract(r.config_json, '$.training.recompute') AS recompute,\n" \
	"  s.step_time_s,\n" \
	"  s.tokens_per_s,\n" \
	"  s.tokens_per_s / json_extract(r.result_json, '$.gpus') AS tokens_per_s_per_gpu,\n" \
	"  s.mfu,\n" \
	"  s.tflops_per_gpu,\n" \
	"  s.compute_s,\n" \
	"  s.exposed_comm_s,\n" \
	"  s.bubble_s,\n" \
	"  s.optimizer_s,\n" \
	"  s.other_s,\n" \
	"  s.peak_bytes_per_gpu,\n" \
	"  json_extract(r.result_json, '$.memory.usable_bytes') AS usable_bytes_per_gpu,\n" \
	"  s.fits,\n" \
	"  json_extract(r.result_json, '$.memory.weights_bytes') AS weights_bytes,\n" \
	"  json_extract(r.result_json, '$.memory.gradients_bytes') AS gradients_bytes,\n" \
	"  json_extract(r.result_json, '$.memory.optimizer_bytes') AS optimizer_bytes,\n" \
	"  json_extract(r.result_json, '$.memory.activations_bytes') AS activations_bytes,\n" \
	"  json_extract(r.result_json, '$.memory.workspace_bytes') AS workspace_bytes,\n" \
	"  json_extract(r.result_json, '$.phases.forward_s') AS forward_s,\n" \
	"  json_extract(r.result_json, '$.phases.backward_s') AS backward_s,\n" \
	"  json_extract(r.result_json, '$.exposed_comm_by_dim.tp_s') AS exposed_tp_s,\n" \
	"  json_extract(r.result_json, '$.exposed_comm_by_dim.cp_s') AS exposed_cp_s,\n" \
	"  json_extract(r.result_json, '$.exposed_comm_by_dim.ep_s') AS exposed_ep_s,\n" \
	"  json_extract(r.result_json, '$.exposed_comm_by_dim.pp_s') AS exposed_pp_s,\n" \
	"  json_extract(r.result_json, '$.exposed_comm_by_dim.dp_s') AS exposed_dp_s\n"

/* What the serving views v_serving and v_inference_steps (migration 6)
 * share: the SELECT and the run, model, system and layout columns they
 * open with; the memory columns they close with and the runs they read
 * (each adds its phase test). Spliced like RUN_COLS_AFTER_ID. */
#define SERVING_SELECT \
	"SELECT\n" \
	"  r.id AS run_id, r.created_at, r.config_hash, r.llmsim_version,\n" \
	"  json_extract(r.config_json, '$.name') AS job,\n" \
	"  json_extract(r.config_json, '$.model.name') AS model,\n" \
	"  json_extract(r.config_json, '$.system.name') AS system,\n" \
	"  json_extract(r.config_json, '$.system.gpu.name') AS gpu,\n" \
	"  json_extract(r.result_json, '$.gpus') AS gpus,\n" \
	"  json_extract(r.config_json, '$.serving.engine.name') AS engine,\n" \
	"  json_extract(r.config_json, '$.parallelism.tp') AS tp,\n" \
	"  json_extract(r.config_json, '$.parallelism.pp') AS pp,\n" \
	"  json_extract(r.config_json, '$.parallelism.ep') AS ep,\n" \
	"  json_extract(r.config_json, '$.parallelism.dp') AS dp,\n" \
	"  json_extract(r.config_json, '$.serving.dtype') AS dtype,\n" \
	"  json_extract(r.config_json, '$.serving.kv_dtype') AS kv_dtype,\n"

#define SERVING_MEMORY_FROM_RUNS \
	"  json_extract(r.result_json, '$.memory.kv_capacity_tokens') AS kv_capacity_tokens,\n" \
	"  json_extract(r.result_json, '$.memory.kv_capacity_sequences') AS kv_capacity_sequences,\n" \
	"  json_extract(r.result_json, '$.memory.peak_bytes_per_gpu') AS peak_bytes_per_gpu,\n" \
	"  json_extract(r.result_json, '$.memory.fits') AS fits\n" \
	"FROM runs r\n" \
	"WHERE r.command = 'run' AND\n"

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
	{ 6, "views v_serving and v_inference_steps (serving runs and "
	  "prefill/decode steps, from the stored JSON)",
	  "CREATE VIEW v_serving AS\n"
	  SERVING_SELECT
	  "  json_extract(r.config_json, '$.serving.requests') AS requests,\n"
	  "  json_extract(r.config_json, '$.serving.arrival_rate') AS arrival_rate,\n"
	  "  json_extract(r.config_json, '$.serving.input_len.mean') AS input_len_mean,\n"
	  "  json_extract(r.config_json, '$.serving.output_len.mean') AS output_len_mean,\n"
	  "  json_extract(r.config_json, '$.serving.speculative.method') AS speculative,\n"
	  "  json_extract(r.config_json, '$.serving.disaggregated.enabled') AS disaggregated,\n"
	  "  json_extract(r.result_json, '$.serving.completed') AS completed,\n"
	  "  json_extract(r.result_json, '$.serving.duration_s') AS duration_s,\n"
	  "  json_extract(r.result_json, '$.serving.output_tokens_per_s') AS output_tokens_per_s,\n"
	  "  json_extract(r.result_json, '$.serving.output_tokens_per_s') /\n"
	  "    json_extract(r.result_json, '$.gpus') AS output_tokens_per_s_per_gpu,\n"
	  "  json_extract(r.result_json, '$.serving.input_tokens_per_s') AS input_tokens_per_s,\n"
	  "  json_extract(r.result_json, '$.serving.requests_per_s') AS requests_per_s,\n"
	  "  json_extract(r.result_json, '$.serving.ttft_s.mean') AS ttft_mean_s,\n"
	  "  json_extract(r.result_json, '$.serving.ttft_s.p50') AS ttft_p50_s,\n"
	  "  json_extract(r.result_json, '$.serving.ttft_s.p90') AS ttft_p90_s,\n"
	  "  json_extract(r.result_json, '$.serving.ttft_s.p99') AS ttft_p99_s,\n"
	  "  json_extract(r.result_json, '$.serving.tpot_s.mean') AS tpot_mean_s,\n"
	  "  json_extract(r.result_json, '$.serving.tpot_s.p50') AS tpot_p50_s,\n"
	  "  json_extract(r.result_json, '$.serving.tpot_s.p90') AS tpot_p90_s,\n"
	  "  json_extract(r.result_json, '$.serving.tpot_s.p99') AS tpot_p99_s,\n"
	  "  json_extract(r.result_json, '$.serving.e2e_s.mean') AS e2e_mean_s,\n"
	  "  json_extract(r.result_json, '$.serving.e2e_s.p50') AS e2e_p50_s,\n"
	  "  json_extract(r.result_json, '$.serving.e2e_s.p90') AS e2e_p90_s,\n"
	  "  json_extract(r.result_json, '$.serving.e2e_s.p99') AS e2e_p99_s,\n"
	  "  json_extract(r.result_json, '$.serving.steps') AS steps,\n"
	  "  json_extract(r.result_json, '$.serving.mean_step_s') AS mean_step_s,\n"
	  "  json_extract(r.result_json, '$.serving.mean_batch') AS mean_batch,\n"
	  "  json_extract(r.result_json, '$.serving.preemptions') AS preemptions,\n"
	  "  json_extract(r.result_json, '$.serving.kv_peak_occupancy') AS kv_peak_occupancy,\n"
	  "  json_extract(r.result_json, '$.serving.kv_mean_occupancy') AS kv_mean_occupancy,\n"
	  "  json_extract(r.result_json, '$.serving.spec_tokens_per_step') AS spec_tokens_per_step,\n"
	  "  json_extract(r.result_json, '$.serving.kv_transfer_mean_s') AS kv_transfer_mean_s,\n"
	  SERVING_MEMORY_FROM_RUNS
	  "  json_extract(r.config_json, '$.phase') = 'serving';\n"
	  "CREATE VIEW v_inference_steps AS\n"
	  SERVING_SELECT
	  "  json_extract(r.config_json, '$.phase') AS phase,\n"
	  "  json_extract(r.config_json, '$.serving.batch') AS batch,\n"
	  "  json_extract(r.config_json, '$.serving.input_len.mean') AS input_len,\n"
	  "  json_extract(r.config_json, '$.serving.context_len') AS context_len,\n"
	  "  json_extract(r.result_json, '$.step_time_s') AS step_time_s,\n"
	  "  json_extract(r.result_json, '$.inference.gpu_time_s') AS gpu_time_s,\n"
	  "  json_extract(r.result_json, '$.inference.host_time_s') AS host_time_s,\n"
	  "  json_extract(r.result_json, '$.tokens_per_s') AS tokens_per_s,\n"
	  "  json_extract(r.result_json, '$.inference.hbm_floor_s') AS hbm_floor_s,\n"
	  "  json_extract(r.result_json, '$.inference.cuda_graph') AS cuda_graph,\n"
	  "  json_extract(r.result_json, '$.mfu') AS mfu,\n"
	  "  json_extract(r.result_json, '$.breakdown.compute_s') AS compute_s,\n"
	  "  json_extract(r.result_json, '$.breakdown.exposed_comm_s') AS exposed_comm_s,\n"
	  "  json_extract(r.result_json, '$.breakdown.other_s') AS other_s,\n"
	  SERVING_MEMORY_FROM_RUNS
	  "  json_extract(r.config_json, '$.phase') IN ('prefill', 'decode');\n" },
	{ 7, "sweeps, sweep_axes, sweep_points; views v_runs, v_sweep_points; "
	  "v_collectives with the system",
	  "CREATE TABLE sweeps (\n"
	  "  id             INTEGER PRIMARY KEY,\n"
	  "  name           TEXT NOT NULL UNIQUE,\n"
	  "  view_name      TEXT NOT NULL UNIQUE,\n"
	  "  created_at     TEXT NOT NULL\n"
	  "                 DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n"
	  "  file           TEXT NOT NULL,\n"
	  "  base           TEXT NOT NULL,\n"
	  "  npoints        INTEGER NOT NULL CHECK (npoints >= 1),\n"
	  "  llmsim_version TEXT NOT NULL\n"
	  ");\n"
	  "CREATE TABLE sweep_axes (\n"
	  "  sweep_id    INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,\n"
	  "  pos         INTEGER NOT NULL CHECK (pos >= 0),\n"
	  "  key         TEXT NOT NULL,\n"
	  "  column_name TEXT NOT NULL,\n"
	  "  kind        TEXT NOT NULL CHECK (kind IN ('cases', 'grid', 'zip')),\n"
	  "  PRIMARY KEY (sweep_id, pos)\n"
	  ");\n"
	  "CREATE TABLE sweep_points (\n"
	  "  sweep_id   INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,\n"
	  "  point_hash TEXT NOT NULL CONSTRAINT point_hash_is_sha256\n"
	  "             CHECK (length(point_hash) = 64 AND\n"
	  "                    point_hash NOT GLOB '*[^0-9a-f]*'),\n"
	  "  idx        INTEGER NOT NULL CHECK (idx >= 0),\n"
	  "  status     TEXT NOT NULL CHECK (status IN ('ok', 'invalid')),\n"
	  "  reason     TEXT,\n"
	  "  run_id     INTEGER REFERENCES runs(id) ON DELETE CASCADE,\n"
	  "  axes_json  TEXT NOT NULL CONSTRAINT axes_json_is_json\n"
	  "             CHECK (json_valid(axes_json)),\n"
	  "  stored_at  TEXT NOT NULL\n"
	  "             DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),\n"
	  "  PRIMARY KEY (sweep_id, point_hash),\n"
	  "  CONSTRAINT ok_has_run CHECK ((status = 'ok') = (run_id IS NOT NULL)),\n"
	  "  CONSTRAINT invalid_has_reason CHECK (status = 'ok' OR reason IS NOT NULL)\n"
	  ");\n"
	  "CREATE INDEX sweep_points_run ON sweep_points(run_id);\n"
	  "CREATE VIEW v_runs AS\n"
	  "SELECT\n"
	  "  r.id AS run_id,\n"
	  RUN_COLS_AFTER_ID
	  "FROM runs r JOIN step_results s ON s.run_id = r.id;\n"
	  "CREATE VIEW v_sweep_points AS\n"
	  "SELECT w.name AS sweep, p.sweep_id, p.idx, p.status, p.reason,\n"
	  "  p.axes_json, p.point_hash, p.stored_at,\n"
	  "  p.run_id,\n"
	  RUN_COLS_AFTER_ID
	  "FROM sweep_points p JOIN sweeps w ON w.id = p.sweep_id\n"
	  "  LEFT JOIN runs r ON r.id = p.run_id\n"
	  "  LEFT JOIN step_results s ON s.run_id = p.run_id;\n"
	  "DROP VIEW v_collectives;\n"
	  "CREATE VIEW v_collectives AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.config_hash,\n"
	  "  r.llmsim_version, c.idx, c.op, c.type, c.ranks, c.size_B,\n"
	  "  c.count, c.time_s * 1e6 AS time_us,\n"
	  "  c.algbw_Bps / 1e9 AS algbw_GBps,\n"
	  "  c.busbw_Bps / 1e9 AS busbw_GBps,\n"
	  "  c.algorithm, c.protocol,\n"
	  "  coalesce(json_extract(r.config_json, '$.system.name'),\n"
	  "           json_extract(r.config_json, '$.name')) AS system,\n"
	  "  coalesce(json_extract(r.config_json, '$.system.gpu.name'),\n"
	  "           json_extract(r.config_json, '$.gpu.name')) AS gpu,\n"
	  "  coalesce(json_extract(r.config_json, '$.system.nodes'),\n"
	  "           json_extract(r.config_json, '$.nodes')) AS nodes,\n"
	  "  json_extract(r.config_json, '$.collective.redop') AS redop,\n"
	  "  json_extract(r.config_json, '$.collective.root') AS root\n"
	  "FROM runs r JOIN collective_results c ON c.run_id = r.id;\n" },
	{ 8, "plan_candidates table and v_plans view",
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
	{ 9, "measure_runs.complete and .backend_error; v_measurements "
	  "gains them",
	  "ALTER TABLE measure_runs ADD COLUMN complete INTEGER\n"
	  "  CHECK (complete IN (0, 1));\n"
	  "ALTER TABLE measure_runs ADD COLUMN backend_error TEXT;\n"
	  "DROP VIEW v_measurements;\n"
	  "CREATE VIEW v_measurements AS\n"
	  "SELECT r.id AS run_id, r.created_at, r.config_hash,\n"
	  "  r.llmsim_version, i.backend, i.system, i.host, i.device,\n"
	  "  i.library, i.library_version, i.runtime, i.nodes,\n"
	  "  i.devices_per_node, m.idx, m.op, m.type, m.ranks, m.size_B,\n"
	  "  m.count, m.m, m.n, m.k, m.iters,\n"
	  "  m.time_s * 1e6 AS time_us, m.time_min_s * 1e6 AS time_min_us,\n"
	  "  m.time_max_s * 1e6 AS time_max_us,\n"
	  "  m.algbw_Bps / 1e9 AS algbw_GBps, m.busbw_Bps / 1e9 AS busbw_GBps,\n"
	  "  m.rate, m.check_result, i.complete, i.backend_error\n"
	  "FROM runs r JOIN measure_runs i ON i.run_id = r.id\n"
	  "  JOIN measurements m ON m.run_id = r.id;\n" },
	/* The backends' protocol 2 (bk_main.c BK_PROTOCOL) prints what
	 * nccl-tests and rccl-tests print: a split op's count per rank,
	 * an all-to-all-v of the size each rank sends. Rows stored before
	 * were protocol 1's (measure_proto.c from_protocol1 reads such
	 * files the same way): the count was the buffer's elements, and an
	 * all-to-all-v sent size / ranks from each rank in all. */
	{ 10, "measurements.count per rank for all-gather, reduce-scatter "
	  "and the all-to-alls; an all-to-all-v's size_B what each rank "
	  "sends",
	  "UPDATE measurements SET count = count / ranks\n"
	  "  WHERE op IN ('allgather', 'reducescatter', 'alltoall');\n"
	  "UPDATE measurements SET size_B = size_B / ranks,\n"
	  "  count = count / ranks / ranks, algbw_Bps = algbw_Bps / ranks,\n"
	  "  busbw_Bps = busbw_Bps / ranks\n"
	  "  WHERE op = 'alltoallv';\n" },
};

/* The columns of v_runs as expressions over runs r and step_results s
 * (run_id from sweep_points p), for the views the store builds at run
 * time (each sweep's v_sweep_NAME). They must stay the columns of the
 * latest v_runs, in order: test_store_schema.c checks it. */
const struct store_run_col store_run_cols[] = {
	{ "run_id", "p.run_id" },
	{ "created_at", "r.created_at" },
	{ "command", "r.command" },
	{ "config_hash", "r.config_hash" },
	{ "llmsim_version", "r.llmsim_version" },
	{ "job", "json_extract(r.config_json, '$.name')" },
	{ "model", "json_extract(r.config_json, '$.model.name')" },
	{ "system", "json_extract(r.config_json, '$.system.name')" },
	{ "gpu", "json_extract(r.config_json, '$.system.gpu.name')" },
	{ "gpus", "json_extract(r.result_json, '$.gpus')" },
	{ "nodes", "json_extract(r.config_json, '$.system.nodes')" },
	{ "gpus_per_node", "json_extract(r.config_json, '$.system.gpus_per_node')" },
	{ "scale_up", "json_extract(r.config_json, '$.system.scale_up.name')" },
	{ "scale_out", "json_extract(r.config_json, '$.system.scale_out.name')" },
	{ "framework", "json_extract(r.config_json, '$.framework.name')" },
	{ "tp", "json_extract(r.config_json, '$.parallelism.tp')" },
	{ "pp", "json_extract(r.config_json, '$.parallelism.pp')" },
	{ "vpp", "json_extract(r.config_json, '$.parallelism.vpp')" },
	{ "cp", "json_extract(r.config_json, '$.parallelism.cp')" },
	{ "ep", "json_extract(r.config_json, '$.parallelism.ep')" },
	{ "dp", "json_extract(r.config_json, '$.parallelism.dp')" },
	{ "sequence_parallel", "json_extract(r.config_json, '$.parallelism.sequence_parallel')" },
	{ "zero_stage", "json_extract(r.config_json, '$.training.zero_stage')" },
	{ "dtype", "json_extract(r.config_json, '$.training.dtype')" },
	{ "seq_len", "json_extract(r.config_json, '$.training.seq_len')" },
	{ "global_batch_size", "json_extract(r.config_json, '$.training.global_batch_size')" },
	{ "micro_batch_size", "json_extract(r.config_json, '$.training.micro_batch_size')" },
	{ "recompute", "json_extract(r.config_json, '$.training.recompute')" },
	{ "step_time_s", "s.step_time_s" },
	{ "tokens_per_s", "s.tokens_per_s" },
	{ "tokens_per_s_per_gpu", "s.tokens_per_s / json_extract(r.result_json, '$.gpus')" },
	{ "mfu", "s.mfu" },
	{ "tflops_per_gpu", "s.tflops_per_gpu" },
	{ "compute_s", "s.compute_s" },
	{ "exposed_comm_s", "s.exposed_comm_s" },
	{ "bubble_s", "s.bubble_s" },
	{ "optimizer_s", "s.optimizer_s" },
	{ "other_s", "s.other_s" },
	{ "peak_bytes_per_gpu", "s.peak_bytes_per_gpu" },
	{ "usable_bytes_per_gpu", "json_extract(r.result_json, '$.memory.usable_bytes')" },
	{ "fits", "s.fits" },
	{ "weights_bytes", "json_extract(r.result_json, '$.memory.weights_bytes')" },
	{ "gradients_bytes", "json_extract(r.result_json, '$.memory.gradients_bytes')" },
	{ "optimizer_bytes", "json_extract(r.result_json, '$.memory.optimizer_bytes')" },
	{ "activations_bytes", "json_extract(r.result_json, '$.memory.activations_bytes')" },
	{ "workspace_bytes", "json_extract(r.result_json, '$.memory.workspace_bytes')" },
	{ "forward_s", "json_extract(r.result_json, '$.phases.forward_s')" },
	{ "backward_s", "json_extract(r.result_json, '$.phases.backward_s')" },
	{ "exposed_tp_s", "json_extract(r.result_json, '$.exposed_comm_by_dim.tp_s')" },
	{ "exposed_cp_s", "json_extract(r.result_json, '$.exposed_comm_by_dim.cp_s')" },
	{ "exposed_ep_s", "json_extract(r.result_json, '$.exposed_comm_by_dim.ep_s')" },
	{ "exposed_pp_s", "json_extract(r.result_json, '$.exposed_comm_by_dim.pp_s')" },
	{ "exposed_dp_s", "json_extract(r.result_json, '$.exposed_comm_by_dim.dp_s')" },
};

const size_t store_nrun_cols =
	sizeof(store_run_cols) / sizeof(store_run_cols[0]);

const int store_nmigrations =
	(int)(sizeof(store_migrations) / sizeof(store_migrations[0]));

int store_schema_version(void)
{
	return store_migrations[store_nmigrations - 1].version;
}

