#!/bin/sh
# Predict every held-out job of this folder and print job, measured,
# predicted output tokens/s and the signed error (+ = llmsim faster).
# usage: sh results/heldout/trtllm-perf-overview/run.sh [LLMSIM]
d=$(dirname "$0"); b=${1:-build/llmsim}
tail -n +2 "$d/measured.tsv" | while IFS="$(printf '\t')" read -r n v; do
	p=$("$b" run "$d/$n.yaml" --json --no-store |
	    python3 -c 'import json,sys; print(json.load(sys.stdin)["serving"]["output_tokens_per_s"])')
	python3 -c "print('%-34s %8s %10.0f %+6.1f %%' % ('$n', $v, $p, 100 * ($p / $v - 1)))"
done
