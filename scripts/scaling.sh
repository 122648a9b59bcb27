#!/bin/sh
# scaling.sh - what simulating a step costs as the job grows: Llama 3.1
# 405B (TP 8, PP 16, 16 microbatches per pipeline) from 1k to 131k H100s,
# symmetric and --full, and at 1k GPUs --full with more layers or more
# microbatches. One line per run: GPUs, mode, tasks, engine events,
# collective calls (and of those replayed), flows, max-min solves, wall and
# CPU seconds, peak memory, bytes per task. A --full run whose estimate is
# past the memory budget (--max-memory $BUDGET, 8 GiB unless set: this is
# a shared machine) is not run: its line gives the estimate and "refused".
# docs/scaling.md has a run of it and what the numbers say.
#
#   scripts/scaling.sh [--quick]     (--quick: up to 4k GPUs)
#
# Environment: LLMSIM (the binary; default build/llmsim), BUDGET.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
job=$root/workloads/jobs/llama3.1-405b-16k.yaml
quick=0
[ "${1:-}" = --quick ] && quick=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

num() {	# num KEY: the first "KEY": number of $tmp/out
	sed -n "s/^[[:space:]]*\"$1\":[[:space:]]*\([-0-9.eE+]*\).*/\1/p" \
		"$tmp/out" | head -n 1
}

# run LABEL GPUS MODE ARGS...: one line.
run() {
	label=$1 gpus=$2 mode=$3
	shift 3
	full=
	[ "$mode" = full ] && set -- --full --max-memory "${BUDGET:-8 GiB}" "$@"
	if /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$llmsim" run "$job" \
	   --json --no-store "$@" >"$tmp/out" 2>"$tmp/err"; then
		read -r wall user sys rss <"$tmp/time"
		awk -v l="$label" -v g="$gpus" -v m="$mode" -v t="$(num tasks)" \
		    -v e="$(num events)" -v c="$(num collective_calls)" \
		    -v r="$(num collectives_replayed)" -v f="$(num flows)" \
		    -v s="$(num flow_solves)" -v w="$wall" -v u="$user" \
		    -v y="$sys" -v k="$rss" 'BEGIN {
			printf "%-12s %7d %-4s %10.3f M %10.3f M %8.3f M %8.3f M %8d %8d %7.2f %7.2f %9.1f %6.1f\n",
			       l, g, m, t / 1e6, e / 1e6, c / 1e6, r / 1e6, f, s,
			       w, u + y, k / 1024, k * 1024 / t }'
	elif grep -q 'raise it with --max-memory' "$tmp/err"; then
		est=$(sed -n 's/.*needs about \([0-9.]*\) GiB of memory and \([0-9]*\) s (\([0-9.]*\) M tasks.*/\1 GiB, \2 s, \3 M tasks/p' "$tmp/err")
		printf '%-12s %7d %-4s refused before building: about %s\n' \
		       "$label" "$gpus" "$mode" "$est"
	else
		printf '%-12s %7d %-4s FAILED\n' "$label" "$gpus" "$mode"
		sed 's/^/    /' "$tmp/err" | head -5
	fi
}

printf '%-12s %7s %-4s %12s %12s %10s %10s %8s %8s %7s %7s %9s %6s\n' \
       case GPUs mode tasks events calls replayed flows solves wall_s \
       cpu_s peak_MiB B/task
for dp in 8 32 128 512 1024; do
	gpus=$((dp * 128))
	[ $quick = 1 ] && [ $dp -gt 32 ] && continue
	set -- --set system.nodes=$((dp * 16)) --set parallelism.dp=$dp \
	       --set training.global_batch_size=$((dp * 16))
	[ $dp -ge 512 ] && set -- "$@" --set system.scale_out.switch_radix=128
	run gpus "$gpus" sym "$@"
	run gpus "$gpus" full "$@"
done
# At 1k GPUs, --full: twice the microbatches, then half and twice the
# layers (more layers per stage: pp stays 16).
set -- --set system.nodes=128 --set parallelism.dp=8
run m=32 1024 full "$@" --set training.global_batch_size=256
run layers=64 1024 full "$@" --set training.global_batch_size=128 \
	--set model.num_hidden_layers=64
[ $quick = 1 ] ||
	run layers=252 1024 full "$@" --set training.global_batch_size=128 \
		--set model.num_hidden_layers=252
