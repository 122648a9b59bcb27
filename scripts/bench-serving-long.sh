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
# With a base (another build, e.g. main's), runs it first on the same
# jobs and prints the ratio of the median CPU times, base / this. The
# base runs in its own tree, with that tree's presets and job files (a
# binary reading this tree's files fails once a preset or job gains a
# key it does not know): LLMSIM_BASE_REV, a commit, is exported with git
# archive into a temporary folder and built there; LLMSIM_BASE, a
# binary, runs with the tree above its folder (build/llmsim's). Exits 1
# when a run fails or a target is missed.
#
# Environment: LLMSIM (the binary; default build/llmsim), LLMSIM_BASE,
# LLMSIM_BASE_REV.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
rel=results/reference/inference
long=I-TRTLLMDG-B200-TP1-QWEN3-30B-FP4-1024-32768
short=I-GPUSTACK-H100-TP1-GPTOSS20B-VLLM011-128-4
runs=3
times=$(mktemp)
base_tree=
trap 'rm -f "$times"; [ -z "${LLMSIM_BASE_REV:-}" ] || rm -rf "$base_tree"' EXIT INT TERM

. "$root/scripts/benchlib.sh"
bench_need_time
base=
if [ -n "${LLMSIM_BASE_REV:-}" ]; then
	base_tree=$(mktemp -d)
	if ! git -C "$root" archive "$LLMSIM_BASE_REV" | tar -x -C "$base_tree" ||
	   ! nice make -C "$base_tree" -j2 build/llmsim >"$base_tree/build.log" 2>&1; then
		echo "$me: cannot export and build $LLMSIM_BASE_REV (see $base_tree/build.log)" >&2
		trap - EXIT; rm -f "$times"; exit 1
	fi
	base=$base_tree/build/llmsim
elif [ -n "${LLMSIM_BASE:-}" ]; then
	base=$LLMSIM_BASE
	base_tree=$(cd "$(dirname "$base")/.." && pwd)
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
failed=0
for name in "$long" "$short"; do
	case $name in
	"$long") target=6 ;;
	*) target=1 ;;
	esac
	base_cpu=""
	if [ -n "$base" ]; then
		: > "$times"
		(llmsim=$base; LLMSIM_DATA=$base_tree; export LLMSIM_DATA
		 bench_step "$base_tree/$rel/$name.yaml" $runs "base $name" \
			1000000 "$times") || :
		base_cpu=$(awk '{ print $2 + $3 }' "$times" | sort -g |
			   sed -n "$(( (runs + 1) / 2 ))p")
	fi
	: > "$times"
	bench_step "$root/$rel/$name.yaml" $runs "$name" 120 "$times" ||
		failed=1
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
