#!/bin/sh
# bench-moe.sh - wall time and peak memory of `llmsim run` for DeepSeek-V3
# on 2,048 H100s (TP 4, PP 2 x VPP 16, EP 64, DP 256, DeepEP; workloads/
# jobs/deepseek-v3-2048.yaml, a dgx-h100 system of 256 nodes).
#
# Five runs; prints each, then the median wall time and the median peak
# resident set, against the targets of issue 9 (under 1 s, under 1 GiB).
# Exits 1 when the run fails or a target is missed.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
job=$root/workloads/jobs/deepseek-v3-2048.yaml
runs=${RUNS:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT INT TERM

if [ ! -x /usr/bin/time ]; then
	echo "bench-moe: /usr/bin/time is needed (Debian package 'time')" >&2
	exit 1
fi
i=0
while [ $i -lt $runs ]; do
	if ! /usr/bin/time -f '%e %M' -o "$out" -a \
	     "$llmsim" run "$job" --json --no-store \
	     > /dev/null; then
		echo "bench-moe: llmsim run failed" >&2
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
	printf "deepseek-v3 on 2048 H100s: median %.2f s wall (target < 1 s), ", w
	printf "median %.1f MiB peak RSS (target < 1024 MiB)\n", r / 1024
	exit (w < 1 && r < 1048576) ? 0 : 1
}'
