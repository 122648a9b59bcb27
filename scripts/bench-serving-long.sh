#!/bin/sh
# bench-serving-long.sh - wall and CPU time of the longest serving
# simulations in the case files (round 32, servefast32):
#   - TensorRT-LLM Qwen3-30B-A3B FP4 on one B200, 1000 requests of 1024 in
#     / 32768 out (results/reference/inference/I-TRTLLMDG-B200-TP1-QWEN3-
#     30B-FP4-1024-32768.yaml: ~360,000 engine steps, most of them decode
#     steps of one shape at a growing context), target under 6 s of CPU
#     time (11.3 s before the step model's memos, round 32);
#   - vLLM gpt-oss-20b on one H100, 1000 prompts of 128 in / 4 out at
#     once (I-GPUSTACK-H100-TP1-GPTOSS20B-VLLM011-128-4.yaml), target
#     under 1 s of CPU time.
# Three runs each; prints each run, the medians (wall, CPU, peak RSS)
# and the machine's load average. The targets are on CPU time (user +
# system): on the shared 2-core machine wall time grows with the load,
# CPU time does not (bench_step's wall target is a loose 120 s here).
# With LLMSIM_BASE set (another build, e.g. main's), runs it first on
# the same jobs and prints the ratio of the median CPU times, base /
# this. Exits 1 when a run fails or a target is missed.
#
# Environment: LLMSIM (the binary; default build/llmsim), LLMSIM_BASE.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
this=$llmsim
dir=$root/results/reference/inference
long=$dir/I-TRTLLMDG-B200-TP1-QWEN3-30B-FP4-1024-32768.yaml
short=$dir/I-GPUSTACK-H100-TP1-GPTOSS20B-VLLM011-128-4.yaml
runs=3
times=$(mktemp)
trap 'rm -f "$times"' EXIT INT TERM

. "$root/scripts/benchlib.sh"
bench_need_time
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
failed=0
for job in "$long" "$short"; do
	name=$(basename "$job" .yaml)
	case $job in
	"$long") target=6 ;;
	*) target=1 ;;
	esac
	base_cpu=""
	if [ -n "${LLMSIM_BASE:-}" ]; then
		llmsim=$LLMSIM_BASE
		: > "$times"
		bench_step "$job" $runs "base $name" 1000000 "$times" || :
		base_cpu=$med_cpu
		llmsim=$this
	fi
	: > "$times"
	bench_step "$job" $runs "$name" 120 "$times" || failed=1
	awk -v c="$med_cpu" -v t="$target" -v b="$base_cpu" 'BEGIN {
		printf "median CPU %.2f s (target < %g s)", c, t
		if (b != "" && c > 0)
			printf ", base / this %.2f", b / c
		printf "\n"
		exit c < t ? 0 : 1
	}' || failed=1
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
exit $failed
