#!/bin/sh
# trace-format.sh - `llmsim run --trace` writes valid Chrome Trace Event
# Format (what Perfetto loads), checked strictly by tests/tools/
# tracecheck.c: required fields per phase, metadata naming every process
# and thread, complete slices nesting per thread, flows paired and bound
# to slices, counters of numbers. Also checks what the trace must show
# (enclosing pass and layer slices, dependency and critical-path flows, a
# memory counter whose peak is the footprint's activations), that the
# checker rejects each broken fixture in tests/data/traces/, that
# `--trace -` writes the trace to standard output, and that an unwritable
# path is reported.
#
# Environment: LLMSIM (default build/llmsim), LLMSIM_TOOLS (build/tools).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
tools=${LLMSIM_TOOLS:-build/tools}
check=$tools/tracecheck
. "$(dirname "$0")/lib.sh"

[ -x "$check" ] || { echo "FAIL: $check is not built (make tools)"; exit 1; }

# The checker can fail: every broken fixture is refused, the good one passes.
"$check" "$root/tests/data/traces/good.json" >/dev/null 2>&1 || bad "good.json refused"
for f in "$root"/tests/data/traces/bad-*.json; do
	"$check" "$f" >/dev/null 2>&1 && bad "tracecheck accepted $(basename "$f")"
done

# Real traces: a dense 1F1B job with TP overlap, interleaved pipeline with
# DP and FP8, FSDP (ZeRO-3), MoE with expert parallelism (DeepEP
# dispatch and combine).
for j in default llama2-7b-mi300x llama3-8b-fsdp-mi355x qwen3-30b-ep8-deepep; do
	f=$root/workloads/jobs/$j.yaml
	[ -f "$f" ] || f=$root/tests/scenarios/$j/job.yaml
	"$llmsim" run "$f" --no-store --json \
		--trace "$tmp/$j.json" >"$tmp/$j.out" 2>"$tmp/$j.err" ||
		{ bad "$j: llmsim run: $(cat "$tmp/$j.err")"; continue; }
	"$check" "$tmp/$j.json" >/dev/null 2>"$tmp/$j.check" ||
		bad "$j: $(head -5 "$tmp/$j.check")"
	grep -q '"cat":"pass"' "$tmp/$j.json" || bad "$j: no forward/backward slices"
	grep -q '"cat":"layer"' "$tmp/$j.json" || bad "$j: no layer slices"
	grep -q '"ph":"C"' "$tmp/$j.json" || bad "$j: no memory counter"
	grep -q '"cat":"critical_path"' "$tmp/$j.json" ||
		grep -q '"critical":1' "$tmp/$j.json" || bad "$j: no critical path"
	# The counter's activation peak (GB, 6 significant digits: within
	# 1e-5 of its value) is the footprint's
	# activations less the transient of one backward: at most it, and
	# more than nothing.
	peak=$(grep -o '"activations":[0-9.e+-]*' "$tmp/$j.json" | cut -d: -f2 | sort -g | tail -1)
	act=$(sed -n 's/.*"activations_bytes":[^0-9]*\([0-9.e+]*\).*/\1/p' "$tmp/$j.out" | head -1)
	awk -v p="$peak" -v a="$act" 'BEGIN { exit !(p > 0 && p * 1e9 <= a * 1.00001) }' ||
		bad "$j: memory counter peak $peak GB vs activations $act B"
done
grep -q '"cat":"dependency"' "$tmp/default.json" || bad "default: no dependency flows"

# --trace - is the only thing on standard output; the summary goes to stderr.
"$llmsim" run "$root/workloads/jobs/llama3-8b-fsdp-mi355x.yaml" --no-store \
	--trace - >"$tmp/stdout.json" 2>"$tmp/stderr" || bad "--trace -: exit $?"
"$check" "$tmp/stdout.json" >/dev/null 2>&1 || bad "--trace - output is not a valid trace"
grep -q "step time" "$tmp/stderr" || bad "--trace -: no summary on stderr"
"$llmsim" run "$root/workloads/jobs/default.yaml" --no-store --json --trace - \
	>/dev/null 2>"$tmp/err"
[ $? = 2 ] || bad "--json with --trace - accepted"

# An unwritable path says which and why: bad input, exit 2 (a missing
# directory, a directory), for training and inference runs alike.
"$llmsim" run "$root/workloads/jobs/default.yaml" --no-store \
	--trace "$tmp/no/such/dir/t.json" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -qF "error: cannot write the trace '$tmp/no/such/dir/t.json': No such file or directory" "$tmp/err" ||
	bad "unwritable trace path: $(cat "$tmp/err")"
"$llmsim" run "$root/workloads/jobs/decode-llama3-70b-h100-fp8.yaml" --no-store \
	--trace "$tmp" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -qF "error: cannot write the trace '$tmp': Is a directory" "$tmp/err" ||
	bad "inference trace into a directory: $(cat "$tmp/err")"

exit $fail
