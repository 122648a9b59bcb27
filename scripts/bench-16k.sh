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

. "$root/scripts/benchlib.sh"
bench_need_time
bench_step "$job" "$runs" "llama3.1-405b on 16384 H100s" 2 "$out"
