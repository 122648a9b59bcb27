#!/bin/sh
# bench-moe.sh - wall time, CPU time and peak memory of `llmsim run` for
# DeepSeek-V3 on 2,048 H100s (a dgx-h100 system of 256 nodes, DeepEP):
#
#   1. the layout issue 9 names, pp 16, ep 64 (tp 2 + SP, dp 64; workloads/
#      jobs/deepseek-v3-2048-pp16.yaml): the issue's check, under 1 s wall
#      and 1 GiB peak resident set;
#   2. the layout `llmsim plan` ranks first for the same job (tp 4 + SP,
#      pp 2 x vpp 16, ep 64, dp 256, the all-to-all overlap; workloads/
#      jobs/deepseek-v3-2048.yaml), reported against the same targets but
#      not counted (RUNS2 runs, default 3; 0 skips it).
#
# RUNS runs of the first (default 5); prints each, then the medians.
# Exits 1 when a run fails or the first job misses a target.
#
# Environment: LLMSIM (the binary; default build/llmsim), RUNS, RUNS2.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
job=$root/workloads/jobs/deepseek-v3-2048-pp16.yaml
job2=$root/workloads/jobs/deepseek-v3-2048.yaml
runs=${RUNS:-5}
runs2=${RUNS2:-3}
out=$(mktemp)
out2=$(mktemp)
trap 'rm -f "$out" "$out2"' EXIT INT TERM

. "$root/scripts/benchlib.sh"
bench_need_time
status=0
bench_step "$job" "$runs" "deepseek-v3 on 2048 H100s, pp 16 ep 64 (issue 9)" 1 "$out" || status=1
if [ "$runs2" -gt 0 ]; then
	bench_step "$job2" "$runs2" "deepseek-v3 on 2048 H100s, planner layout pp 2 x vpp 16 (not counted)" 1 "$out2" || true
fi
exit $status
