#!/bin/sh
# bench-16k.sh - wall time and peak memory of `llmsim run` for Llama 3.1
# 405B on 16,384 H100s (TP 8, PP 16, DP 128; workloads/jobs/
# llama3.1-405b-16k.yaml, a dgx-h100 system of 2048 nodes).
#
# Five runs; prints each, then the median wall time and the median peak
# resident set, against the targets of issue 3 (under 2 s, under 1 GiB).
# Exits 1 when the run fails or a target is missed.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
job=$root/workloads/jobs/llama3.1-405b-16k.yaml
runs=5
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM

if [ ! -x /usr/bin/time ]; then
	echo "bench-16k: /usr/bin/time is needed (Debian package 'time')" >&2
	exit 1
fi
i=0
while [ $i -lt $runs ]; do
	if ! /usr/bin/time -f '%e %M' -o "$out" -a \
	     "$llmsim" run "$job" --json --no-store \
	     > /dev/null; then
		echo "bench-16k: llmsim run failed" >&2
		exit 1
	fi
	i=$((i + 1))
done
awk -v runs=$runs '
	{ wall[NR] = $1; rss[NR] = $2 }
	END {
		for (i = 1; i <= NR; i++)
			printf "run %d: %.2f s wall, %.1f MiB peak RSS\n", i, wall[i], rss[i] / 1024
	}' "$out"
med_wall=$(awk '{ print $1 }' "$out" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
med_rss=$(awk '{ print $2 }' "$out" | sort -g | sed -n "$(( (runs + 1) / 2 ))p")
awk -v w="$med_wall" -v r="$med_rss" 'BEGIN {
	printf "llama3.1-405b on 16384 H100s: median %.2f s wall (target < 2 s), ", w
	printf "median %.1f MiB peak RSS (target < 1024 MiB)\n", r / 1024
	exit (w < 2 && r < 1048576) ? 0 : 1
}'
