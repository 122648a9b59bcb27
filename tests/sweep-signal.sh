#!/bin/sh
# sweep-signal.sh - Ctrl-C (SIGINT) and SIGTERM stop a sweep as
# docs/sweeps.md says (src/sweep/sweep_run.c):
#   - it dies of the signal (status 130 / 143 in a shell),
#   - it prints the table (points not reached say "not run"), the totals
#     "K of N points in" and "interrupted by INT after K of N points;
#     every finished point is stored in DB",
#   - K is what the database holds (stored points are whole), and
#   - the same command again resumes: K resumed, the rest ran, N stored,
#     and says nothing of other builds; once 3 stored runs say another
#     llmsim computed them, a resume says so (their numbers are kept:
#     a point is keyed by its resolved job, not by the build).
# -j 2 with SIGINT, -j 1 with SIGTERM. A shell starts a background job
# with SIGINT ignored (and the sweep keeps an ignored SIGINT ignored, as
# nohup wants): the INT case runs under `env --default-signal=INT`
# (coreutils 8.31+) and is skipped, loudly, without it.
# Quiet on success; one line per failure.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
here=$(cd "$(dirname "$0")" && pwd)
LLMSIM=${LLMSIM:-build/llmsim}
. "$here/lib.sh"
use_checkout_data
q() { sqlite3 -cmd '.timeout 10000' "$@"; }

long_sweep "$tmp/long.yaml"	# 160 points

# stop SIG STATUS JOBS PREFIX...: start the sweep (under PREFIX), send SIG
# once 5 points are stored, check what it says and stores, then resume.
stop() {
	sig=$1 status=$2 jobs=$3
	shift 3
	db=$tmp/$sig.db
	"$@" "$llmsim" sweep "$tmp/long.yaml" -j "$jobs" --db "$db" \
		>"$tmp/out" 2>"$tmp/err" &
	pid=$!
	wait_until 600 $pid sh -c "[ \"\$(sqlite3 -cmd '.timeout 10000' \
		'$db' 'SELECT count(*) FROM sweep_points' 2>/dev/null || echo 0)\" \
		-ge 5 ]" || { bad "$sig: no 5 points stored in 60 s"; }
	kill -"$sig" $pid 2>/dev/null
	wait $pid 2>/dev/null
	rc=$?
	[ $rc = "$status" ] || bad "$sig -j $jobs: status $rc, expected $status: $(tail -2 "$tmp/err")"
	k=$(q "$db" "SELECT count(*) FROM sweep_points")
	[ "$k" -ge 5 ] && [ "$k" -lt 160 ] ||
		bad "$sig -j $jobs: $k of 160 points stored (expected some, not all)"
	grep -q "^sweep long: interrupted by $sig after $k of 160 points; every finished point is stored in $db: run the same command again to resume$" "$tmp/err" ||
		bad "$sig -j $jobs: no 'interrupted by $sig after $k of 160' line: $(tail -1 "$tmp/err")"
	grep -q "^sweep long: $k of 160 points in .*: $k ran, 0 invalid, 0 failed, 0 resumed" "$tmp/err" ||
		bad "$sig -j $jobs: totals: $(grep '^sweep long: [0-9]' "$tmp/err")"
	[ "$(grep -c ' ran  ' "$tmp/out")" = "$k" ] ||
		bad "$sig -j $jobs: the table has $(grep -c ' ran  ' "$tmp/out") ran points, the database $k"
	[ "$(grep -c ' not run ' "$tmp/out")" = $((160 - k)) ] ||
		bad "$sig -j $jobs: the table has $(grep -c ' not run ' "$tmp/out") points not run, expected $((160 - k))"
	[ "$(q "$db" "SELECT count(*) FROM sweep_points p LEFT JOIN step_results s ON s.run_id = p.run_id WHERE p.status = 'ok' AND s.run_id IS NULL")" = 0 ] ||
		bad "$sig: a stored point without its step"
	"$llmsim" sweep "$tmp/long.yaml" -j 2 --db "$db" >/dev/null 2>"$tmp/err" ||
		bad "$sig: resume: $(tail -1 "$tmp/err")"
	grep -q "^sweep long: 160 points in .*: $((160 - k)) ran, 0 invalid, 0 failed, $k resumed" "$tmp/err" ||
		bad "$sig: resume: $(tail -1 "$tmp/err")"
	[ "$(q "$db" "SELECT count(*) FROM sweep_points")" = 160 ] ||
		bad "$sig: after resume: $(q "$db" "SELECT count(*) FROM sweep_points") of 160 points"
	grep -q "another llmsim" "$tmp/err" &&
		bad "$sig: resume with one build: $(grep 'another llmsim' "$tmp/err")"
}

stop TERM 143 1
if env --default-signal=INT true 2>/dev/null; then
	stop INT 130 2 env --default-signal=INT
else
	echo "sweep-signal: SKIP the SIGINT case: env has no --default-signal"
fi

# A resume over points another build computed says so.
q "$tmp/TERM.db" "UPDATE runs SET llmsim_version = '0.0.1+old' WHERE id IN (SELECT run_id FROM sweep_points ORDER BY idx LIMIT 3)"
"$llmsim" sweep "$tmp/long.yaml" -j 2 --db "$tmp/TERM.db" >/dev/null 2>"$tmp/err" ||
	bad "resume over another build: $(tail -1 "$tmp/err")"
version=$("$llmsim" --version | cut -d' ' -f2)
grep -q "^sweep long: 3 of these points were simulated by another llmsim (0.0.1+old; this is $version) and kept as stored" "$tmp/err" ||
	bad "resume over another build: $(cat "$tmp/err")"
exit $fail
