#!/bin/sh
# measure-import.sh - `llmsim measure --import` on the first real CUDA
# backend output (one H200, 2026-12-04; copies in tests/measure/ of
# results/reference/device/h200-backend-cuda-*.jsonl). Before: a file of
# several backend runs was stored as ONE run and its summary averaged
# different ops ("Avg bus bandwidth    : 1841.07", no unit: all-reduce
# to broadcast and copy, 97 points); a stream cut off without its end
# line was stored as whole without a word; the backend's error lines
# were dropped.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"
fx=$(dirname "$0")/measure
imp() {	# imp NAME DB: import the fixture NAME into DB (stdout, stderr kept)
	"$llmsim" measure --import "$fx/h200-backend-cuda-$1-2026-12-04.jsonl" \
		--system dgx-h200 --db "$2" >"$tmp/out" 2>"$tmp/err"
}
q() { sqlite3 "$1" "$2" 2>&1; }

# 1. The collectives: 114 lines, 7 runs of 13 points (all-reduce ...
#    reduce), a send/recv that refused one GPU before its hello (line
#    106: an error line, no run), a copy run of 6: 8 runs, 97 points.
imp coll-1gpu "$tmp/c.db" || { bad "coll-1gpu: exit $?"; cat "$tmp/err"; }
[ "$(q "$tmp/c.db" 'SELECT count(*) FROM measure_runs')" = 8 ] ||
	bad "coll-1gpu: $(q "$tmp/c.db" 'SELECT count(*) FROM measure_runs') runs stored, expected 8"
[ "$(q "$tmp/c.db" 'SELECT count(*) FROM measurements')" = 97 ] ||
	bad "coll-1gpu: expected 97 points"
[ "$(q "$tmp/c.db" "SELECT count(DISTINCT run_id) || ' ' || min(op) FROM v_measurements WHERE op = 'broadcast'")" = "1 broadcast" ] ||
	bad "coll-1gpu: broadcast not a run of its own"
[ "$(q "$tmp/c.db" 'SELECT count(*) FROM measure_runs WHERE complete = 1 AND backend_error IS NULL')" = 8 ] ||
	bad "coll-1gpu: every run ended with its end line"
grep -q "coll-1gpu-2026-12-04.jsonl:106: warning: a backend run that stopped before its hello line, measuring nothing: status 2 (bad_input): sendrecv needs at least 2 GPUs" "$tmp/err" ||
	{ bad "coll-1gpu: the send/recv error line not reported"; cat "$tmp/err"; }
# A summary a run, in its unit: all-reduce busbw over its 13 sizes
# (0.00136 + 0.00548 + ... + 1530.77 + 1928.42) / 13 = 379.645 GB/s;
# broadcast 10446 GB/s (in place on one GPU: 1.3 us at any size); the
# copy's traffic (329.3 + ... + 4178.0) / 6 = 2762.06 GB/s.
[ "$(grep -c '^# Avg' "$tmp/out")" = 8 ] || bad "coll-1gpu: expected 8 summaries"
grep -q '^# Avg bus bandwidth    : 379.645 GB/s$' "$tmp/out" ||
	{ bad "coll-1gpu: all-reduce summary"; grep Avg "$tmp/out"; }
grep -q '^# Avg traffic          : 2762.06 GB/s$' "$tmp/out" ||
	bad "coll-1gpu: copy summary"
grep -q '1841' "$tmp/out" && bad "coll-1gpu: the average over every op is back"

# 2. The copy stream the device call's limit cut at 4 GiB: 12 points,
#    no end line: stored, marked incomplete, said.
imp copy "$tmp/p.db" || { bad "copy: exit $?"; cat "$tmp/err"; }
[ "$(q "$tmp/p.db" 'SELECT count(*) || complete FROM v_measurements GROUP BY run_id')" = 120 ] ||
	bad "copy: expected 12 points, complete 0: $(q "$tmp/p.db" 'SELECT count(*), complete FROM v_measurements GROUP BY run_id')"
grep -q "copy-2026-12-04.jsonl:13: warning: the run of line 1 stops after 12 points with no end line" "$tmp/err" ||
	{ bad "copy: the cut stream not said"; cat "$tmp/err"; }

# Predicted (validate --kind measured): the cut run's table says so; a
# collective of one rank moves nothing in llmsim (0 s: "inf GB/s", an
# infinite error before) and is shown, not scored.
"$llmsim" validate --kind measured --db "$tmp/p.db" --no-store >"$tmp/val" 2>&1 ||
	{ bad "validate copy: exit $?"; cat "$tmp/val"; }
grep -q '^== measure run 1: copy, 1 rank (1 x 1), cuda backend, no library on vm .*; INCOMPLETE (the stream stopped before its end line)$' "$tmp/val" ||
	{ bad "validate: the cut run's title"; head -1 "$tmp/val"; }
"$llmsim" validate --kind measured --db "$tmp/c.db" --run 1 --no-store >"$tmp/val" 2>&1
[ "$(grep -c '(1 rank: nothing to move, not predicted)$' "$tmp/val")" = 13 ] ||
	{ bad "validate: one-rank all-reduce rows"; head -5 "$tmp/val"; }

# 3. The GEMMs of two calls: 6 runs (5, 1, 1, 1, 1, 4 points).
imp gemm "$tmp/g.db" || { bad "gemm: exit $?"; cat "$tmp/err"; }
[ "$(q "$tmp/g.db" 'SELECT group_concat(n) FROM (SELECT count(*) AS n FROM measurements GROUP BY run_id ORDER BY run_id)')" = "5,1,1,1,1,4" ] ||
	bad "gemm: runs $(q "$tmp/g.db" 'SELECT run_id, count(*) FROM measurements GROUP BY run_id')"
[ -s "$tmp/err" ] && grep -q warning "$tmp/err" && { bad "gemm: a warning"; cat "$tmp/err"; }
# The table names the library when the backend gave no version (it
# printed "# , CUDA 13.0 (driver 13.0)").
grep -q '^# cuBLAS, CUDA 13.0 (driver 13.0); NVIDIA H200 (sm90) x 1 on vm$' "$tmp/out" ||
	{ bad "gemm: the table's library line"; sed -n 2p "$tmp/out"; }
# Imported again: the same points from the same device for the same
# system are not stored twice (validate counted them twice); for another
# system they are (its predictions differ).
imp gemm "$tmp/g.db" || { bad "gemm again: exit $?"; cat "$tmp/err"; }
[ "$(q "$tmp/g.db" 'SELECT count(*) FROM measure_runs')" = 6 ] ||
	bad "gemm imported twice: $(q "$tmp/g.db" 'SELECT count(*) FROM measure_runs') runs"
[ "$(grep -c 'not stored again: run [1-6] in .* holds the same points' "$tmp/err")" = 6 ] ||
	{ bad "gemm again: not said"; cat "$tmp/err"; }
"$llmsim" measure --import "$fx/h200-backend-cuda-gemm-2026-12-04.jsonl" \
	--system dgx-h100 --db "$tmp/g.db" >/dev/null 2>&1 || bad "gemm on dgx-h100: exit $?"
[ "$(q "$tmp/g.db" 'SELECT count(*) FROM measure_runs')" = 12 ] ||
	bad "gemm for another system not stored"

# 4. The unfixed all-reduce: 18 points, the last wrong, then the error
#    line: stored incomplete with the error, reported.
imp allreduce-unfixed "$tmp/u.db" || { bad "unfixed: exit $?"; cat "$tmp/err"; }
[ "$(q "$tmp/u.db" "SELECT count(*) || ' ' || sum(check_result = 'wrong') FROM v_measurements WHERE complete = 0 AND backend_error = 'status 1 (failed): allreduce of 1048576 B: 85 elements wrong'")" = "18 1" ] ||
	bad "unfixed: $(q "$tmp/u.db" 'SELECT complete, backend_error FROM measure_runs')"
grep -q "unfixed-2026-12-04.jsonl:20: warning: the backend stopped at an error after 18 points" "$tmp/err" ||
	{ bad "unfixed: the error line not reported"; cat "$tmp/err"; }

# 5. Refused whole (exit 2, nothing stored): an end line whose count is
#    not its run's (a point line lost: the first run's 5 squares, the
#    2048^3 line dropped), a point after an end with no hello.
grep -v '"m":2048,"n":2048' "$fx/h200-backend-cuda-gemm-2026-12-04.jsonl" >"$tmp/lost.jsonl"
"$llmsim" measure --import "$tmp/lost.jsonl" --db "$tmp/l.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "lost.jsonl:6: error: the end line counts 5 points, the run of line 1 has 4" "$tmp/err" ||
	{ bad "a lost point line not refused"; cat "$tmp/err"; }
[ -e "$tmp/l.db" ] && bad "a file with a lost line was stored"
{ head -3 "$fx/h200-backend-cuda-gemm-2026-12-04.jsonl"; echo '{"type":"end","points":2}';
  sed -n 2p "$fx/h200-backend-cuda-gemm-2026-12-04.jsonl"; } >"$tmp/after.jsonl"
"$llmsim" measure --import "$tmp/after.jsonl" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "after.jsonl:5: error: a point with no hello line before it" "$tmp/err" ||
	{ bad "a point after the end line not refused"; cat "$tmp/err"; }
# Another program's JSON lines (scripts/measure-expert-gemms.cu: a hello
# and points of its own) gave an error a line (105); one now, naming the
# protocol.
cp "$fx/h200-expert-gemms-head-2026-12-04.jsonl" "$tmp/other.jsonl"	# its first 5 lines
"$llmsim" measure --import "$tmp/other.jsonl" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && [ "$(grep -c error "$tmp/err")" = 1 ] &&
	grep -q "other.jsonl:1: error: hello: no 'protocol'; this llmsim reads protocols 1 and 2" "$tmp/err" ||
	{ bad "a foreign stream"; cat "$tmp/err"; }
# A GEMM point of m -5 (or 1e30, past int64) was stored, and `validate
# --kind measured` stopped on a BUG in the GPU model: refused at import
# (exit 2, the constraint named); a database that holds one already is
# bad input to validate, not a crash.
sed -n 1,2p "$fx/h200-backend-cuda-gemm-2026-12-04.jsonl" |
	sed 's/"m":1024/"m":-5/' >"$tmp/neg.jsonl"
"$llmsim" measure --import "$tmp/neg.jsonl" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "neg.jsonl:2: error: point: missing or bad 'm': expected a whole number from 1 to 2^53" "$tmp/err" ||
	{ bad "a GEMM of m -5 not refused"; cat "$tmp/err"; }
cp "$tmp/g.db" "$tmp/neg.db"
q "$tmp/neg.db" "UPDATE measurements SET m = -5 WHERE run_id = 1 AND idx = 0" >/dev/null
"$llmsim" validate --kind measured --db "$tmp/neg.db" --run 1 --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "error: gemm -5 x 1024 x 1024: expected m, n and k from 1 to 2^53" "$tmp/err" ||
	{ bad "validate of a stored GEMM of m -5: exit $?"; cat "$tmp/err"; }
# Protocol 1 (before round 44) printed a split op's count as the
# buffer's elements and ran an all-to-all-v of size S with S / ranks
# sent from each rank; protocol 2 prints nccl-tests' per-rank count and
# sends S from each rank (bk_main.c BK_PROTOCOL). The same measurement
# in both (4 ranks, 100 us: protocol 1 "16 MiB", 4 MiB each rank sent;
# protocol 2 4 MiB) reads as the same points (all-to-all-v 4194304 B,
# count 4194304 / 4 / 4 = 262144, busbw 125.829 / 4 = 31.45725 GB/s;
# all-gather 16 MiB, count 4194304 / 4 = 1048576): the second run is
# the first's points, not stored again.
h='"backend":"cuda","host":"h","device":"d","library":"NCCL","library_version":"2.26","library_path":"","runtime":"r","ranks":4,"nodes":1,"devices_per_node":4,"cpus":2,"iters":5,"warmup":1'
pt() { # pt OP BYTES COUNT ALGBW BUSBW
	printf '{"type":"point","op":"%s","dtype":"float","bytes":%s,"count":%s,"ranks":4,"iters":5,"time_us":100,"time_min_us":90,"time_max_us":110,"algbw_GBps":%s,"busbw_GBps":%s,"check":"ok","wrong":0}\n' "$@"
}
{
	echo "{\"type\":\"hello\",\"protocol\":1,$h}"
	pt alltoallv 16777216 4194304 167.772 125.829
	pt allgather 16777216 4194304 167.772 125.829
	echo '{"type":"end","points":2}'
	echo "{\"type\":\"hello\",\"protocol\":2,$h}"
	pt alltoallv 4194304 262144 41.943 31.45725
	pt allgather 16777216 1048576 167.772 125.829
	echo '{"type":"end","points":2}'
} >"$tmp/v12.jsonl"
"$llmsim" measure --import "$tmp/v12.jsonl" --system dgx-h200 --db "$tmp/v12.db" >/dev/null 2>"$tmp/err" ||
	{ bad "protocol 1 and 2 import: exit $?"; cat "$tmp/err"; }
[ "$(q "$tmp/v12.db" "SELECT group_concat(op || ' ' || size_B || ' ' || count || ' ' || busbw_Bps, ', ') FROM measurements")" = "alltoallv 4194304.0 262144.0 31457250000.0, allgather 16777216.0 1048576.0 125829000000.0" ] ||
	{ bad "protocol 1 rows"; q "$tmp/v12.db" "SELECT * FROM measurements"; }
grep -q "not stored again: run 1 in .*v12.db holds the same points" "$tmp/err" ||
	{ bad "protocol 2's run not the same points as protocol 1's"; cat "$tmp/err"; }
exit $fail
