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

. "$root/scripts/benchlib.sh"
bench_need_time
bench_step "$job" "$runs" "deepseek-v3 on 2048 H100s" 1 "$out"
