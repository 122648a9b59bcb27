#!/bin/sh
# bench-serving.sh - wall time of a 10,000-request serving simulation of
# Llama 3 70B on 8 GPUs (workloads/jobs/serve-llama3-70b-h100.yaml:
# DGX H100, TP 8, vLLM, Poisson arrivals at 20 requests/s), the target of
# issue 15: under 2 s.
#
# Five runs; prints each with the engine steps simulated, then the median
# wall time and peak resident set. Exits 1 when a run fails or the median
# misses the target.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
job=$root/workloads/jobs/serve-llama3-70b-h100.yaml
runs=5
times=$(mktemp)
json=$(mktemp)
trap 'rm -f "$times" "$json"' EXIT INT TERM

. "$root/scripts/benchlib.sh"
bench_need_time
i=0
while [ $i -lt $runs ]; do
	if ! /usr/bin/time -f '%e %M' -o "$times" -a \
	     "$llmsim" run "$job" --json --no-store > "$json"; then
		echo "bench-serving: llmsim run failed" >&2
		exit 1
	fi
	i=$((i + 1))
done
steps=$(sed -n 's/^[[:space:]]*"steps":[[:space:]]*\([0-9.e+]*\).*/\1/p' "$json" | head -1)
reqs=$(sed -n 's/^[[:space:]]*"completed":[[:space:]]*\([0-9.e+]*\).*/\1/p' "$json" | head -1)
awk '{ printf "run %d: %.2f s wall, %.1f MiB peak RSS\n", NR, $1, $2 / 1024 }' "$times"
med=$(awk '{ print $1 }' "$times" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
rss=$(awk '{ print $2 }' "$times" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
awk -v w="$med" -v r="$rss" -v s="$steps" -v q="$reqs" 'BEGIN {
	printf "serving llama3-70b on 8 H100s: %d requests, %d engine steps; ", q, s
	printf "median %.2f s wall (target < 2 s), %.1f MiB peak RSS\n", w, r / 1024
	exit (w < 2 && q == 10000) ? 0 : 1
}'
