#!/bin/sh
# budget.sh - `llmsim run` estimates a step's cost before building it and
# refuses (exit 2) one past its memory or trace budget, naming the
# estimate and the flag that raises the budget; a step within it runs.
# Every refusal here is decided before anything is built, so each case
# takes milliseconds however large the job.
set -u
llmsim=${LLMSIM:-build/llmsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

# refused DESCRIPTION PATTERN ARGS...: exit 2 within 10 s, the error
# matching PATTERN (grep -E).
refused() {
	what=$1 pat=$2
	shift 2
	start=$(date +%s)
	"$llmsim" run "$@" --no-store >"$tmp/out" 2>"$tmp/err"
	got=$? took=$(( $(date +%s) - start ))
	if [ "$got" != 2 ] || ! grep -Eq -e "$pat" "$tmp/err" || [ "$took" -gt 10 ]; then
		echo "FAIL: $what: exit $got after $took s, expected 2 and /$pat/"
		cat "$tmp/err"
		fail=1
	fi
}

# A billion sequences on one DGX: 7.8e11 tasks (each kernel and
# collective with its host issue task), more than a program holds.
refused "gbs 1e9" 'M tasks .*more than the .* a step program holds' \
	workloads/jobs/default.yaml --set training.global_batch_size=1000000000
# A million: 7.5e8 tasks (half on the GPU's streams, as many host issue
# tasks; 8.1e8 before the ring exchange's local first GEMM piece, 7.8e8
# before qkv_split), about 30.9 GiB (36 B a task, 64 B a call); past a
# 4 GiB budget.
refused "gbs 1e6 over 4 GiB" \
	'about 3[0-9]\.[0-9] GiB .* more than the 4\.0 GiB budget; raise it with --max-memory' \
	workloads/jobs/default.yaml --set training.global_batch_size=1000000 \
	--max-memory '4 GiB'
# Llama 3.1 405B on 131,072 H100 with --full: 1.74e9 tasks (8.7e8 and
# their host issue tasks; Megatron-Core's query reshape copy and dq/dk/dv
# cat, framework qkv_split, two ops a layer more), ~60.5 GiB, over 24 GiB;
# the message says what the symmetric mode needs instead.
refused "131k --full over 24 GiB" \
	'about 6[0-9]\.[0-9] GiB.*131072 simulated ranks.*24\.0 GiB budget; raise it with --max-memory; without --full' \
	workloads/jobs/llama3.1-405b-16k.yaml --full --set system.nodes=16384 \
	--set parallelism.dp=1024 --set training.global_batch_size=16384 \
	--set system.scale_out.switch_radix=128 --max-memory '24 GiB'
# The 16k-GPU --full trace: 2.13e8 tasks x 170 B = 36.2 GB, past 2 GB.
refused "16k --full --trace" \
	'trace would be about 3[0-9]\.[0-9] GB .*2\.0 GB budget; raise it with --max-trace' \
	workloads/jobs/llama3.1-405b-16k.yaml --full --trace "$tmp/t.json"
[ -e "$tmp/t.json" ] && { echo "FAIL: a refused trace was created"; fail=1; }
# A slow GPU makes its peers unlike: the symmetric mode cannot show it.
refused "straggler without --full" 'straggler: GPU 3 computes 1\.3 times slower.*run with --full' \
	workloads/jobs/default.yaml --set straggler.gpu=3 \
	--set straggler.compute_scale=1.3
refused "a budget without a unit" "--max-memory '12': expected a size" \
	workloads/jobs/default.yaml --max-memory 12
# 0 parses as a size but is no budget: the error says it must be above 0
refused "a zero budget" "--max-memory '0 GB': expected a size above 0 .*: a budget must be more than 0 B" \
	workloads/jobs/default.yaml --max-memory '0 GB'
refused "a zero trace budget" "--max-trace '0 B': expected a size above 0" \
	workloads/jobs/default.yaml --max-trace '0 B'
# A serving run holds every request (160 B of state, 4 latency samples
# and 2 queue slots of 8 B: 208 B, serve_memory_B): 1e8 requests need
# about 2.08e10 B = 20.8 GB, past 4 GiB (4.295 GB). Serving ignored the
# flag and allocated ~24 GB.
refused "serving 1e8 requests over 4 GiB" \
	'simulating these 100000000 requests needs about 2[0-9]\.[0-9]* GB of memory \([0-9]+ B a request\), more than the 4\.295 GB budget; raise it with --max-memory' \
	workloads/jobs/serve-llama3-70b-h100.yaml \
	--set serving.requests=100000000 --max-memory '4 GiB'

# Within the budget: the same 1e4-sequence step runs (7.5 M tasks with
# the host's and qkv_split's, about 0.3 GiB; 8.1 M before the ring-
# exchange overlap's first GEMM piece took the local shard: 2500
# microbatches x 32 layers x 4 all-gathers (qkv, fc1, proj and fc2 dgrad)
# with their host issue tasks fewer, 0.64 M) and says what it simulates
# on stderr.
if ! "$llmsim" run workloads/jobs/default.yaml --no-store --json \
	--set training.global_batch_size=10000 --max-memory '1 GiB' \
	>"$tmp/out" 2>"$tmp/err"; then
	echo "FAIL: gbs 1e4 within 1 GiB did not run"; cat "$tmp/err"; fail=1
fi
grep -q 'simulating 7\.[0-9] M tasks on 1 ranks' "$tmp/err" ||
	{ echo "FAIL: no progress line"; cat "$tmp/err"; fail=1; }
grep -q '"step_time_s"' "$tmp/out" || { echo "FAIL: no result"; fail=1; }

# 1,000 requests (about 0.2 MB) within 1 MiB: the serving run runs.
"$llmsim" run workloads/jobs/serve-llama3-70b-h100.yaml --no-store \
	--set serving.requests=1000 --max-memory '1 MiB' >"$tmp/out" 2>"$tmp/err" ||
	{ echo "FAIL: 1000 requests within 1 MiB did not run"; cat "$tmp/err"; fail=1; }

# A serving trace (serve_trace_estimate): the 300 requests of the unit
# tests' Llama 3 8B job take at least 843 engine steps (the longest
# request's, one after the other) of about 325 B of events each (a step
# and two counters): 274 kB at the fewest, past a 100 kB budget; refused
# before the run.
refused "serving trace over 100 kB" \
	'the trace of these 300 requests would be at least 27[0-9] kB \(843 engine steps at the fewest, 3[0-9][0-9] B each; .* if no two requests shared a step\), more than the 100 kB budget; raise it with --max-trace' \
	tests/data/serve/l8-h100-tp1.yaml --trace "$tmp/trace.json" \
	--max-trace '100 kB'
# DeepSeek-V3's 400 requests: at least 809 steps (265 kB), 2974 when run
# (960 kB); under 500 kB the run starts and stops once its trace passes
# the budget, exit 2, the file holding what was written.
refused "serving trace stopped at 500 kB" \
	'the trace passed the 500 kB budget after [0-9]+ engine steps .* raise the budget with --max-trace' \
	workloads/jobs/serve-deepseek-v3-h200.yaml --trace "$tmp/trace.json" \
	--max-trace '500 kB'
size=$(wc -c <"$tmp/trace.json")
[ "$size" -gt 500000 ] && [ "$size" -lt 501000 ] ||
	{ echo "FAIL: the stopped trace is $size B, expected just past 500 kB"; fail=1; }

[ $fail = 0 ] && echo "budget: ok"
exit $fail
