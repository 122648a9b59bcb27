#!/bin/sh
# sweep.sh - `llmsim sweep` and `llmsim db` end to end:
#   - expansion counted by hand (tests/sweeps/count.yaml, --list)
#   - bad sweep files and options: exit 2 with file:line:col
#   - invalid points stored with their reason; the summary's axis columns
#   - --no-store: the table, nothing kept
#   - kill -9 mid-sweep: nothing finished is lost, the database is
#     consistent, a re-run completes the rest without duplicates
#   - shards + db merge equal the single run; merging again adds nothing
#   - concurrent writers (several sweeps and runs on one database)
#   - db views / db export (csv, json) and an unknown view
#   - plan: true: the planner at each point, its winner in the sweep's
#     view and the summary, its ranking in v_plans; resume, shards
#   - mpirun -n 2 on localhost equals the single run (when MPI is built)
# Quiet on success; one line per failure.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
case $llmsim in /*) ;; *) llmsim=$PWD/$llmsim ;; esac
cd "$root" || exit 1
. "$root/tests/lib.sh"
q() { sqlite3 -cmd '.timeout 10000' "$@"; }

# ---- expansion ----------------------------------------------------------
# count.yaml: 2 cases x 3 nodes x 2 zip positions = 12 points, cases
# outermost, zip fastest (see the file).
"$llmsim" sweep tests/sweeps/count.yaml --list >"$tmp/list" 2>"$tmp/err" ||
	bad "count.yaml --list: $(cat "$tmp/err")"
n=$(grep -vc '^#\|^point' "$tmp/list")
[ "$n" = 12 ] || bad "count.yaml: $n points, expected 12"
# Axes in dimension order: the cases' keys, then grid, then zip.
head -2 "$tmp/list" | tail -1 | grep -q "^point	system.scale_out	training.seq_len	system.nodes	parallelism.tp	training.micro_batch_size$" ||
	bad "count.yaml: axis columns: $(sed -n 2p "$tmp/list")"
# Point 0: case 0, nodes 1, zip 0 (tp 2, mbs 1); the case leaves seq_len.
grep -q "^0	roce-400g	-	1	2	1$" "$tmp/list" || bad "count.yaml: point 0"
# Point 7 = case 1 (7 / 6), nodes index (7 / 2) % 3 = 0 -> 1, zip 7 % 2 = 1.
grep -q "^7	roce-800g	2048	1	4	2$" "$tmp/list" || bad "count.yaml: point 7"
# Point 11: case 1, nodes 4, zip 1.
grep -q "^11	roce-800g	2048	4	4	2$" "$tmp/list" || bad "count.yaml: point 11"
# Shard 2 of 5 lists points 1, 6, 11.
"$llmsim" sweep tests/sweeps/count.yaml --list --shard 2/5 >"$tmp/list" 2>&1
[ "$(grep -v '^#\|^point' "$tmp/list" | cut -f1 | tr '\n' ' ')" = "1 6 11 " ] ||
	bad "shard 2/5 lists $(grep -v '^#\|^point' "$tmp/list" | cut -f1 | tr '\n' ' ')"

# The shipped examples expand (their comments count the points).
for ex in gpu-generations:7 llama3-70b-nic-fabric:40 moe-scale-up-fabric:12 llama3-best-layout:6; do
	f=workloads/sweeps/${ex%%:*}.yaml
	"$llmsim" sweep "$f" --list >"$tmp/ex" 2>&1 || bad "$f: $(cat "$tmp/ex")"
	head -1 "$tmp/ex" | grep -q ": ${ex##*:} points," || bad "$f: $(head -1 "$tmp/ex")"
done

# ---- bad input: exit 2 with file:line:col ------------------------------
expect2() {	# expect2 "stderr text" ARGS...
	want=$1
	shift
	"$llmsim" sweep "$@" --db "$tmp/never.db" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = 2 ] || bad "sweep $*: exit $rc, expected 2"
	grep -qF -- "$want" "$tmp/err" || bad "sweep $*: stderr lacks '$want': $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && bad "sweep $*: printed on stdout"
	[ -e "$tmp/never.db" ] && bad "sweep $*: created a database"
}
s=tests/sweeps
expect2 "$s/bad-unknown-key.yaml:4:10: error: 'system.nodez': the job has no key 'system.nodez', did you mean 'nodes'?" $s/bad-unknown-key.yaml
expect2 "$s/bad-zip-unequal.yaml:4:19: error: 'parallelism.pp': zip lists must have equal lengths: 2 values here, 3 in 'parallelism.tp' (line 3)" $s/bad-zip-unequal.yaml
expect2 "$s/bad-empty-grid.yaml:2:7: error: 'grid': empty" $s/bad-empty-grid.yaml
expect2 "$s/bad-empty-list.yaml:3:17: error: 'system.nodes': an empty list" $s/bad-empty-list.yaml
expect2 "$s/bad-not-a-list.yaml:3:17: error: 'system.nodes': expected a list of values" $s/bad-not-a-list.yaml
expect2 "$s/bad-twice.yaml:3:3: error: 'parallelism.tp' is swept twice" $s/bad-twice.yaml
expect2 "$s/bad-plan.yaml:2:13: error: 'plan.top': expected a count of layouts from 1 to 1000, got '0'" $s/bad-plan.yaml
expect2 "$s/bad-plan.yaml:2:16: error: 'plan': unknown key 'objectiv' (expected top, objective)" $s/bad-plan.yaml
expect2 "$s/bad-top-key.yaml:2:1: error: 'grids': unknown key in a sweep, did you mean 'grid'?" $s/bad-top-key.yaml
expect2 "$s/bad-no-base.yaml:1:1: error: a sweep needs 'base:'" $s/bad-no-base.yaml
expect2 "$s/bad-below-value.yaml:3:10: error: 'system.nodes.count': 'system.nodes' is a single value" $s/bad-below-value.yaml
expect2 "$s/bad-nothing.yaml:1:1: error: nothing to sweep" $s/bad-nothing.yaml
# A job where the sweep goes: one error that says so (it was one per job
# key and "a sweep needs 'base:'").
expect2 "workloads/jobs/default.yaml:10:1: error: this is a job, not a sweep (it has 'model:' and no base:, grid:, zip: or cases:): run it with 'llmsim run workloads/jobs/default.yaml'" workloads/jobs/default.yaml
[ "$(grep -c error: "$tmp/err")" = 1 ] || bad "sweep JOB.yaml: $(grep -c error: "$tmp/err") errors, expected 1"
expect2 "--shard:1:1: error: '3/2': shard 3 of 2 does not exist" $s/count.yaml --shard 3/2
expect2 "--shard:1:1: error: '0/2': I must be a whole number" $s/count.yaml --shard 0/2
expect2 "--shard:1:3: error: '1/x': N must be" $s/count.yaml --shard 1/x
expect2 "-j: expected a number of workers" $s/count.yaml -j 0
expect2 "no sweep file given" --db "$tmp/x.db"

# ---- a small sweep: invalid points, the table, the views ---------------
cat >"$tmp/small.yaml" <<EOF
name: small
base: $root/workloads/jobs/llama2-7b-mi300x.yaml
grid:
  parallelism.tp: [2, 3, 8]
  training.seq_len: [1024, 2048]
EOF
"$llmsim" sweep "$tmp/small.yaml" -j 2 --db "$tmp/s.db" >"$tmp/out" 2>"$tmp/err" ||
	bad "small sweep: exit $?: $(cat "$tmp/err")"
# tp 3 does not divide 8 GPUs (heads 32 are not divisible by 3 either):
# 2 of the 6 points are invalid, stored with the reason.
grep -q "6 points in .*: 4 ran, 2 invalid, 0 failed, 0 resumed" "$tmp/err" ||
	bad "small sweep totals: $(cat "$tmp/err")"
head -1 "$tmp/out" | grep -q "^point  parallelism.tp  training.seq_len  outcome" ||
	bad "summary header: $(head -1 "$tmp/out")"
n=$(q "$tmp/s.db" "SELECT count(*) FROM v_sweep_small WHERE status = 'invalid' AND reason LIKE '%error:%tp%' AND parallelism_tp = 3")
[ "$n" = 2 ] || bad "v_sweep_small: $n invalid tp=3 rows with a reason, expected 2"
n=$(q "$tmp/s.db" "SELECT count(*) FROM v_sweep_small WHERE status = 'ok' AND step_time_s > 0 AND tp = parallelism_tp AND seq_len = training_seq_len")
[ "$n" = 4 ] || bad "v_sweep_small: $n ok rows whose axes match the run, expected 4"
"$llmsim" db export --view v_sweep_small --db "$tmp/s.db" >"$tmp/csv" ||
	bad "db export csv"
# Records, not lines: a reason spans lines inside its quotes (RFC 4180).
# (sqlite3's .import reads RFC 4180: the header names the columns.)
n=$(sqlite3 :memory: ".import --csv $tmp/csv t" "SELECT count(*) FROM t")
[ "$n" = 6 ] || bad "export csv: $n records, expected 6 under the header"
head -1 "$tmp/csv" | grep -q '^idx,status,reason,parallelism_tp,training_seq_len,run_id,' ||
	bad "export csv header: $(head -1 "$tmp/csv")"
"$llmsim" db export --view v_runs --format json --db "$tmp/s.db" -o "$tmp/json" ||
	bad "db export json"
n=$(sqlite3 :memory: "SELECT count(*) FROM json_each(readfile('$tmp/json')) WHERE json_extract(value, '$.model') = 'llama2-7b'")
[ "$n" = 4 ] || bad "export json: $n v_runs objects of llama2-7b, expected 4"
"$llmsim" db export --view v_nope --db "$tmp/s.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "no view 'v_nope'" "$tmp/err" || bad "unknown view: $(cat "$tmp/err")"
"$llmsim" db views --db "$tmp/s.db" | grep -q '^v_sweep_small: one row per point of sweep small' ||
	bad "db views lists no v_sweep_small"
# Every view the schema creates has its one-line description.
"$llmsim" db views --db "$tmp/s.db" | grep '(not documented)' &&
	bad "db views: a view without a description"
# A serving job is not a training step: its points are invalid with the
# reason (they ran as training steps of the serving model, 0 tokens/s).
cat >"$tmp/serve.yaml" <<EOS
name: serve_points
base: $root/workloads/jobs/serve-llama3-70b-h100.yaml
grid:
  serving.requests: [50, 60]
EOS
"$llmsim" sweep "$tmp/serve.yaml" --db "$tmp/serve.db" >"$tmp/out" 2>"$tmp/err" ||
	bad "serving sweep: $(cat "$tmp/err")"
grep -q "2 points in .*: 0 ran, 2 invalid, 0 failed" "$tmp/err" &&
	[ "$(q "$tmp/serve.db" "SELECT count(*) FROM sweep_points WHERE reason LIKE '%job is phase serving (run it with llmsim run)%'")" = 2 ] ||
	bad "serving sweep: $(cat "$tmp/out" "$tmp/err")"

# The table cuts a reason's first line past 160 characters and says so
# ("...": it cut mid-number before); the database has it whole.
long=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
cat >"$tmp/longreason.yaml" <<EOS
name: long_reason
base: $root/workloads/jobs/default.yaml
cases:
  - {system.preset: $long}
EOS
"$llmsim" sweep "$tmp/longreason.yaml" --db "$tmp/lr.db" >"$tmp/out" 2>"$tmp/err" ||
	bad "long reason sweep: $(cat "$tmp/err")"
r=$(sed -n 's/^0 .* invalid .*  \([^ ].*\)$/\1/p' "$tmp/out")	# after the last 2 spaces
[ ${#r} = 160 ] && case $r in *...) true ;; *) false ;; esac ||
	bad "long reason: the table's reason is ${#r} characters: $r"
whole=$(q "$tmp/lr.db" "SELECT length(reason) FROM sweep_points")
[ "$whole" -gt 160 ] || bad "long reason: stored $whole characters"
# A reason of two-byte characters is cut between characters (the byte
# cut at 157 ended inside an "é" for one of these two presets, whatever
# the length of the path before them: the table was not UTF-8), and the
# columns are padded to characters, not bytes.
long=$(printf '%0120d' 0 | sed 's/0/é/g')
cat >"$tmp/longutf8.yaml" <<EOS
name: long_utf8
base: $root/workloads/jobs/default.yaml
cases:
  - {system.preset: $long}
  - {system.preset: a$long}
EOS
"$llmsim" sweep "$tmp/longutf8.yaml" --db "$tmp/lr.db" >"$tmp/out" 2>"$tmp/err" ||
	bad "long UTF-8 reason sweep: $(cat "$tmp/err")"
iconv -f UTF-8 -t UTF-8 "$tmp/out" >/dev/null 2>&1 ||
	bad "long UTF-8 reason: the table is not UTF-8: $(od -c "$tmp/out" | tail -4)"
w=$(sed -n 's/outcome .*//p' "$tmp/out" | LC_ALL=C.UTF-8 wc -m)
sed -n 's/invalid .*//p' "$tmp/out" | while IFS= read -r l; do
	[ "$(printf '%s\n' "$l" | LC_ALL=C.UTF-8 wc -m)" = "$w" ] || echo x
done | grep -q x && bad "long UTF-8 reason: the columns are not aligned: $(cat "$tmp/out")"

# Re-running resumes everything that ran, retries the invalid points, and
# stores nothing twice.
"$llmsim" sweep "$tmp/small.yaml" -j 2 --db "$tmp/s.db" >/dev/null 2>"$tmp/err"
grep -q ": 0 ran, 2 invalid, 0 failed, 4 resumed" "$tmp/err" || bad "re-run: $(cat "$tmp/err")"
[ "$(q "$tmp/s.db" "SELECT count(*) FROM sweep_points")" = 6 ] || bad "re-run duplicated points"
[ "$(q "$tmp/s.db" "SELECT count(*) FROM runs")" = 4 ] || bad "re-run duplicated runs"
# Same name, other axes: refused (bad input).
sed 's/training.seq_len/training.micro_batch_size/; s/\[1024, 2048\]/[1, 2]/' \
	"$tmp/small.yaml" >"$tmp/other.yaml"
"$llmsim" sweep "$tmp/other.yaml" --db "$tmp/s.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "already has a sweep 'small' over other axes" "$tmp/err" ||
	bad "other axes under the same name: $(cat "$tmp/err")"

# --no-store: the same table, nothing kept. The points go to a database
# in a fresh folder under $TMPDIR, removed at the end (the folder is left
# empty); the totals say "not stored"; --db and --shard have nothing to
# write to (2).
mkdir "$tmp/t"
TMPDIR=$tmp/t "$llmsim" sweep "$tmp/small.yaml" -j 2 --no-store >"$tmp/out" 2>"$tmp/err" ||
	bad "--no-store: exit $?: $(cat "$tmp/err")"
grep -q "6 points in .*: 4 ran, 2 invalid, 0 failed, 0 resumed, 0 duplicate; not stored (--no-store)$" \
	"$tmp/err" || bad "--no-store totals: $(cat "$tmp/err")"
[ "$(grep -c '  ran  ' "$tmp/out")" = 4 ] || bad "--no-store table: $(cat "$tmp/out")"
[ -z "$(ls -A "$tmp/t")" ] || bad "--no-store left $(ls -A "$tmp/t")"
for o in "--db $tmp/x.db" "--shard 1/2"; do
	"$llmsim" sweep "$tmp/small.yaml" --no-store $o >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q -- "--no-store keeps no database" "$tmp/err" ||
		bad "--no-store $o: $(cat "$tmp/err")"
done
[ ! -e "$tmp/x.db" ] || bad "--no-store --db made a database"

# ---- kill -9 mid-sweep, then resume -----------------------------------
long_sweep "$tmp/long.yaml"	# 160 points
"$llmsim" sweep "$tmp/long.yaml" -j 2 --db "$tmp/k.db" >/dev/null 2>&1 &
pid=$!
i=0
while [ $i -lt 600 ]; do	# up to 60 s for the first 5 points
	n=$(q "$tmp/k.db" "SELECT count(*) FROM sweep_points" 2>/dev/null || echo 0)
	[ "${n:-0}" -ge 5 ] && break
	sleep 0.1
	i=$((i + 1))
done
workers=$(ps -o pid= --ppid $pid 2>/dev/null)
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
sleep 0.5
for w in $workers; do	# gone, or a zombie waiting for init to reap it
	case $(ps -o stat= -p "$w" 2>/dev/null) in
	''|Z*) ;;
	*) bad "worker $w outlived kill -9 of the sweep"; kill -9 "$w" ;;
	esac
done
[ "$(q "$tmp/k.db" "PRAGMA integrity_check")" = ok ] || bad "integrity_check after kill -9"
k=$(q "$tmp/k.db" "SELECT count(*) FROM sweep_points")
[ "$k" -ge 5 ] && [ "$k" -lt 160 ] || bad "kill -9: $k of 160 points stored (expected some, not all)"
# Every stored point is whole: an ok point has its run and step row.
[ "$(q "$tmp/k.db" "SELECT count(*) FROM sweep_points p LEFT JOIN step_results s ON s.run_id = p.run_id WHERE p.status = 'ok' AND s.run_id IS NULL")" = 0 ] ||
	bad "kill -9 left a point without its step"
[ "$(q "$tmp/k.db" "SELECT count(*) FROM runs WHERE id NOT IN (SELECT run_id FROM sweep_points WHERE run_id IS NOT NULL)")" = 0 ] ||
	bad "kill -9 left a run without its point"
"$llmsim" sweep "$tmp/long.yaml" -j 2 --db "$tmp/k.db" >/dev/null 2>"$tmp/err" ||
	bad "resume after kill -9: $(cat "$tmp/err")"
resumed=$(sed -n 's/.* \([0-9]*\) resumed.*/\1/p' "$tmp/err")
[ "$resumed" -ge 1 ] || bad "resume skipped nothing: $(cat "$tmp/err")"
[ "$(q "$tmp/k.db" "SELECT count(*) FROM sweep_points")" = 160 ] ||
	bad "after resume: $(q "$tmp/k.db" "SELECT count(*) FROM sweep_points") of 160 points"
[ "$(q "$tmp/k.db" "SELECT count(*) FROM runs")" = "$(q "$tmp/k.db" "SELECT count(*) FROM sweep_points WHERE status = 'ok'")" ] ||
	bad "after resume: runs and ok points differ (duplicates?)"

# ---- shards + merge = one run ------------------------------------------
# What must agree: every point's index, status, reason, axes, config hash
# and results (not run ids or times).
cols="idx, status, reason, axes_json, point_hash, config_hash, step_time_s, tokens_per_s, mfu, peak_bytes_per_gpu, fits, compute_s, exposed_comm_s, bubble_s"
dump() { q "$1" "SELECT $cols FROM v_sweep_points WHERE sweep = '$2' ORDER BY idx"; }
"$llmsim" sweep tests/sweeps/count.yaml -j 2 --db "$tmp/one.db" >/dev/null 2>&1 ||
	bad "count.yaml single run"
for i in 1 2 3; do
	"$llmsim" sweep tests/sweeps/count.yaml -j 1 --shard $i/3 \
		--db "$tmp/shard$i.db" >/dev/null 2>&1 || bad "shard $i/3"
done
"$llmsim" db merge "$tmp/merged.db" "$tmp/shard1.db" "$tmp/shard2.db" \
	"$tmp/shard3.db" 2>"$tmp/err" || bad "db merge: $(cat "$tmp/err")"
dump "$tmp/one.db" count >"$tmp/a"
dump "$tmp/merged.db" count >"$tmp/b"
[ "$(wc -l <"$tmp/a")" = 12 ] || bad "single run has $(wc -l <"$tmp/a") points"
cmp -s "$tmp/a" "$tmp/b" || bad "3 shards merged differ from the single run"
"$llmsim" db merge "$tmp/merged.db" "$tmp/shard2.db" 2>"$tmp/err" || bad "merging again"
grep -q "0 runs added" "$tmp/err" || bad "merging a shard again added runs: $(cat "$tmp/err")"
grep -q "merged 1 database into" "$tmp/err" || bad "one input is not 'merged 1 database': $(cat "$tmp/err")"
[ "$(q "$tmp/merged.db" "SELECT count(*) FROM runs")" = "$(q "$tmp/one.db" "SELECT count(*) FROM runs")" ] ||
	bad "merged database has another number of runs than the single one"
q "$tmp/merged.db" "SELECT count(*) FROM v_sweep_count" >/dev/null 2>&1 ||
	bad "merge did not create v_sweep_count"

# ---- concurrent writers -------------------------------------------------
# Three sweeps (2 workers each) and two runs write one database at once:
# every row arrives, nothing is locked out.
for name in c1 c2 c3; do
	sed "s/^name: count/name: $name/" tests/sweeps/count.yaml >"$tmp/$name.yaml"
	sed -i "s|\.\./\.\./workloads|$root/workloads|" "$tmp/$name.yaml"
done
pids=
for name in c1 c2 c3; do
	"$llmsim" sweep "$tmp/$name.yaml" -j 2 --db "$tmp/c.db" >/dev/null 2>"$tmp/$name.err" &
	pids="$pids $!"
done
for j in default llama2-7b-mi300x; do
	"$llmsim" run "workloads/jobs/$j.yaml" --db "$tmp/c.db" >/dev/null 2>"$tmp/$j.err" &
	pids="$pids $!"
done
for p in $pids; do wait $p || bad "a concurrent writer failed: $(cat "$tmp"/*.err)"; done
[ "$(q "$tmp/c.db" "SELECT count(*) FROM sweep_points")" = 36 ] ||
	bad "concurrent sweeps stored $(q "$tmp/c.db" "SELECT count(*) FROM sweep_points") of 36 points"
# 3 sweeps x 12 points, all ok, plus 2 runs.
[ "$(q "$tmp/c.db" "SELECT count(*) FROM runs")" = 38 ] ||
	bad "concurrent writers: $(q "$tmp/c.db" "SELECT count(*) FROM runs") runs, expected 38"
[ "$(q "$tmp/c.db" "PRAGMA integrity_check")" = ok ] || bad "integrity_check after concurrent writers"

# ---- plan: true -----------------------------------------------------------
# tests/sweeps/plan.yaml: 3 points on one DGX H100 (see the file): 2 plan
# (3 layouts each simulated in full: 2 x 3 = 6 plan_candidates rows), 1
# invalid (no layout of Llama 3 70B fits in 8 x 80 GB).
"$llmsim" sweep tests/sweeps/plan.yaml -j 2 --db "$tmp/p.db" >"$tmp/out" 2>"$tmp/err" ||
	bad "plan sweep: exit $?: $(cat "$tmp/err")"
grep -q "3 points in .*: 2 ran, 1 invalid, 0 failed, 0 resumed" "$tmp/err" ||
	bad "plan sweep totals: $(cat "$tmp/err")"
head -1 "$tmp/out" | grep -q "^point  training.seq_len  model  *outcome  layout (plan)  *step time" ||
	bad "plan sweep summary header: $(head -1 "$tmp/out")"
grep -q "^2 .*invalid .*no layout fits in memory" "$tmp/out" ||
	bad "plan sweep: point 2 not invalid with the planner's reason: $(cat "$tmp/out")"
[ "$(q "$tmp/p.db" "SELECT count(*) FROM plan_candidates")" = 6 ] ||
	bad "plan sweep: $(q "$tmp/p.db" "SELECT count(*) FROM plan_candidates") plan rows, expected 6"
# Point 1 is the base job: its winner is the one `llmsim plan` finds.
"$llmsim" plan workloads/jobs/default.yaml --top 3 --json --no-store >"$tmp/plan.json" 2>/dev/null ||
	bad "llmsim plan default.yaml"
want=$(sqlite3 :memory: "SELECT json_extract(j, '$.candidates[0].parallelism.tp') || ' ' || json_extract(j, '$.candidates[0].parallelism.dp') || ' ' || json_extract(j, '$.candidates[0].training.micro_batch_size') || ' ' || json_extract(j, '$.candidates[0].training.zero_stage') || ' ' || json_extract(j, '$.candidates[0].step_time_s') FROM (SELECT readfile('$tmp/plan.json') AS j)")
got=$(q "$tmp/p.db" "SELECT tp || ' ' || dp || ' ' || micro_batch_size || ' ' || zero_stage || ' ' || step_time_s FROM v_sweep_plan WHERE idx = 1")
[ -n "$want" ] && [ "$got" = "$want" ] ||
	bad "plan sweep point 1: winner '$got' (tp dp mbs zero step), llmsim plan: '$want'"
# Each planned point's row in the sweep's view is its plan's rank 1 in
# v_plans (same layout, same step time: the winner run again in full).
n=$(q "$tmp/p.db" "SELECT count(*) FROM v_sweep_plan s JOIN v_plans v ON v.run_id = s.run_id AND v.rank = 1 WHERE s.status = 'ok' AND s.tp = v.tp AND s.pp = v.pp AND s.dp = v.dp AND s.micro_batch_size = v.micro_batch_size AND s.zero_stage = v.zero_stage AND s.step_time_s = v.step_time_s AND v.objective = 'throughput'")
[ "$n" = 2 ] || bad "plan sweep: $n of 2 points whose view row is their plan's winner"
# An axis on a searched dimension pins it: the winner at each tp has that
# tp (2 points, both plan).
cat >"$tmp/pin.yaml" <<EOF
name: pin
base: $root/workloads/jobs/default.yaml
plan: {top: 2}
grid:
  parallelism.tp: [1, 4]
EOF
"$llmsim" sweep "$tmp/pin.yaml" -j 2 --db "$tmp/p.db" >/dev/null 2>"$tmp/err" ||
	bad "pinned plan sweep: $(cat "$tmp/err")"
n=$(q "$tmp/p.db" "SELECT count(*) FROM v_sweep_pin WHERE status = 'ok' AND tp = parallelism_tp")
[ "$n" = 2 ] || bad "pinned plan sweep: $n of 2 winners have the swept tp"
# Resume: the planned points are done; the invalid one is tried again.
"$llmsim" sweep tests/sweeps/plan.yaml -j 2 --db "$tmp/p.db" >/dev/null 2>"$tmp/err"
grep -q ": 0 ran, 1 invalid, 0 failed, 2 resumed" "$tmp/err" || bad "plan re-run: $(cat "$tmp/err")"
# 6 plan rows of sweep plan + 2 points x top 2 of sweep pin = 10.
[ "$(q "$tmp/p.db" "SELECT count(*) FROM plan_candidates")" = 10 ] || bad "plan re-run stored plans twice"
# Two shards merged equal the single run, plans included.
for i in 1 2; do
	"$llmsim" sweep tests/sweeps/plan.yaml -j 1 --shard $i/2 \
		--db "$tmp/ps$i.db" >/dev/null 2>&1 || bad "plan shard $i/2"
done
"$llmsim" db merge "$tmp/pm.db" "$tmp/ps1.db" "$tmp/ps2.db" 2>"$tmp/err" ||
	bad "plan db merge: $(cat "$tmp/err")"
pdump() { q "$1" "SELECT p.idx, p.status, p.point_hash, v.rank, v.tp, v.pp, v.dp, v.micro_batch_size, v.step_time_s FROM sweep_points p JOIN sweeps w ON w.id = p.sweep_id LEFT JOIN v_plans v ON v.run_id = p.run_id WHERE w.name = 'plan' ORDER BY p.idx, v.rank"; }
pdump "$tmp/p.db" >"$tmp/pa"
pdump "$tmp/pm.db" >"$tmp/pb"
[ "$(wc -l <"$tmp/pa")" = 7 ] || bad "plan dump: $(wc -l <"$tmp/pa") rows, expected 3 + 3 + 1"
cmp -s "$tmp/pa" "$tmp/pb" || bad "plan shards merged differ from the single run"

# ---- MPI ------------------------------------------------------------------
if command -v mpirun >/dev/null 2>&1 && ldd "$llmsim" 2>/dev/null | grep -q libmpi; then
	# Open MPI refuses root unless told; ASan builds: MPI_Init's own
	# allocations are not ours to judge.
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	ASAN_OPTIONS=${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}detect_leaks=0 \
		timeout 300 mpirun --oversubscribe -n 2 "$llmsim" sweep \
		tests/sweeps/count.yaml -j 1 --db "$tmp/mpi.db" >"$tmp/mpi.out" 2>&1 ||
		bad "mpirun -n 2 sweep: $(tail -5 "$tmp/mpi.out")"
	dump "$tmp/mpi.db" count >"$tmp/m"
	cmp -s "$tmp/a" "$tmp/m" || bad "the 2-rank MPI sweep differs from the single run"
	ls "$tmp"/mpi.db.rank-* >/dev/null 2>&1 && bad "rank databases left behind after the merge"
	grep -q "merged 2 ranks into" "$tmp/mpi.out" || bad "no merge message from rank 0"
else
	echo "sweep.sh: ***** SKIPPED the MPI sweep: no mpirun, or llmsim built without MPI (install openmpi-bin libopenmpi-dev: scripts/install-deps.sh) *****" >&2
fi

exit $fail
