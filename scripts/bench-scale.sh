#!/bin/sh
# bench-scale.sh - the scale targets of issue 11, timed:
#
#   1. Llama 3.1 405B on 131,072 H100s, symmetric mode
#      (workloads/jobs/llama3.1-405b-131k.yaml): three runs, the median
#      wall time and peak memory (target <= 2 s);
#   2. the 16,384-GPU job with --full (every GPU simulated): one run, wall
#      and CPU time, peak memory and memory per task (targets <= 30 s,
#      <= 4 GiB), its progress lines on stderr as they come;
#   3. the 131k-GPU job with --full under a 24 GiB budget: refused up front
#      (exit 2) with the estimate and the flag that raises the budget.
#
# Wall time on this shared 2-core machine counts other jobs' time slices;
# the CPU time (user + system) is what llmsim itself took. Exits 1 when a
# run fails or a target is missed.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
jobs=$root/workloads/jobs
out=$(mktemp)
err=$(mktemp)
json=$(mktemp)
trap 'rm -f "$out" "$err" "$json"' EXIT INT TERM
fail=0

. "$root/scripts/benchlib.sh"
bench_need_time

# 1. 131k symmetric.
: >"$out"
for i in 1 2 3; do
	if ! /usr/bin/time -f '%e %U %S %M' -o "$out" -a "$llmsim" run \
	     "$jobs/llama3.1-405b-131k.yaml" --json --no-store >/dev/null; then
		echo "bench-scale: the 131k symmetric run failed" >&2
		exit 1
	fi
done
sort -g "$out" | sed -n 2p | awk '{
	printf "llama3.1-405b on 131072 H100s, symmetric: median %.2f s wall ", $1
	printf "(%.2f s CPU; target <= 2 s), %.0f MiB peak\n", $2 + $3, $4 / 1024
	exit ($1 <= 2) ? 0 : 1 }' || fail=1

# 2. 16k --full.
: >"$out"
if ! /usr/bin/time -f '%e %U %S %M' -o "$out" "$llmsim" run \
     "$jobs/llama3.1-405b-16k.yaml" --full --json --no-store \
     >"$json"; then
	echo "bench-scale: the 16k --full run failed" >&2
	exit 1
fi
tasks=$(sed -n 's/^[[:space:]]*"tasks":[[:space:]]*\([0-9]*\).*/\1/p' "$json" | head -n 1)
awk -v tasks="$tasks" '{
	printf "llama3.1-405b on 16384 H100s, --full: %.1f M tasks, %.1f s wall, ", tasks / 1e6, $1
	printf "%.1f s CPU (target <= 30 s), %.2f GiB peak (target <= 4 GiB), ", $2 + $3, $4 / 1048576
	printf "%.1f B per task\n", $4 * 1024 / tasks
	exit ($2 + $3 <= 30 && $4 <= 4194304) ? 0 : 1 }' "$out" || fail=1

# 3. 131k --full within 24 GiB: refused before anything is built.
"$llmsim" run "$jobs/llama3.1-405b-131k.yaml" --full --no-store \
	--max-memory '24 GiB' >/dev/null 2>"$err"
rc=$?
if [ "$rc" = 2 ] && grep -q 'raise it with --max-memory' "$err"; then
	printf 'llama3.1-405b on 131072 H100s, --full under 24 GiB: refused up front:\n  '
	cat "$err"
else
	echo "bench-scale: 131k --full under 24 GiB: exit $rc, expected 2 with the estimate"
	cat "$err"
	fail=1
fi
exit $fail
