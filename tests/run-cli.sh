#!/bin/sh
# run-cli.sh - `llmsim run` as a user and a CI gate see it: a job that
# does not fit leads its summary with DOES NOT FIT and, with
# --require-fit, exits 5 (0 without); the --json object carries
# schema_version, llmsim_version and config_hash, the forward/backward
# split that sums to compute_s, exposed communication by dimension that
# sums to exposed_comm_s, and one memory entry per pipeline stage; a job
# can come on standard input.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"
job=$root/workloads/jobs/default.yaml

# Llama 3 8B with micro batch 16 of 8,192 tokens on H100: activations
# far past 80 GB.
big="--set training.micro_batch_size=16 --set training.global_batch_size=256"
"$llmsim" run "$job" --no-store $big >"$tmp/out" 2>&1
[ $? = 0 ] || bad "a job that does not fit should still exit 0 without --require-fit"
head -1 "$tmp/out" | grep -q '^DOES NOT FIT: peak memory' || bad "summary does not lead with DOES NOT FIT: $(head -1 "$tmp/out")"
"$llmsim" run "$job" --no-store $big --require-fit >/dev/null 2>"$tmp/err"
[ $? = 5 ] || bad "--require-fit on a job that does not fit: exit $?, expected 5"
grep -q -- "--require-fit: the job does not fit" "$tmp/err" || bad "no --require-fit message"
"$llmsim" run "$job" --no-store --require-fit >/dev/null 2>&1 || bad "--require-fit on a job that fits: exit $?"

# The JSON: 4 pipeline stages for the 70B preset; sums checked with awk
# (to 1 ns: the parts are sums of integer-ns segments).
"$llmsim" run "$root/workloads/jobs/llama3-70b-h100-64.yaml" --json --no-store \
	>"$tmp/j" 2>/dev/null || bad "run --json"
num() { grep -m1 "\"$1\"" "$tmp/j" | sed 's/.*:[[:space:]]*//; s/,$//'; }
[ "$(num schema_version)" = 2 ] || bad "schema_version $(num schema_version)"
num config_hash | grep -Eq '^"[0-9a-f]{64}"$' || bad "config_hash $(num config_hash)"
num llmsim_version | grep -q '^"0\.' || bad "llmsim_version $(num llmsim_version)"
awk -v f="$(num forward_s)" -v b="$(num backward_s)" -v c="$(num compute_s)" \
	'BEGIN { exit !(f > 0 && b > f && (f + b - c) ^ 2 < 1e-18) }' ||
	bad "forward $(num forward_s) + backward $(num backward_s) != compute $(num compute_s)"
# (other_s also names a breakdown part: take the one of the block)
dim_other=$(sed -n '/"exposed_comm_by_dim"/,/}/p' "$tmp/j" | grep '"other_s"' |
	sed 's/.*:[[:space:]]*//; s/,$//')
awk -v a="$(num tp_s)" -v b="$(num cp_s)" -v c="$(num ep_s)" -v d="$(num pp_s)" \
	-v e="$(num dp_s)" -v o="$dim_other" -v x="$(num exposed_comm_s)" \
	'BEGIN { exit !((a + b + c + d + e + o - x) ^ 2 < 1e-18) }' ||
	bad "exposed by dimension does not sum to exposed_comm_s"
n=$(grep -c '"pipeline_rank"' "$tmp/j")
# memory.pipeline_rank once, and once per stage: 1 + pp 4
[ "$n" = 5 ] || bad "expected 4 pipeline stages in memory.stages, got $((n - 1))"
grep -q '"exposed_comm_by_dim"' "$tmp/j" && grep -q '"phases"' "$tmp/j" ||
	bad "phases or exposed_comm_by_dim missing"
# pipeline: 64 GPUs / (tp 4 pp 4) = dp 4, 128 / (1 x 4) = 32 microbatches;
# interleaved over vpp 5: ideal bubble (p - 1) / (v m + p - 1) = 3 / 163.
# One compute time per stage; the final rank (stage 0: the last backward
# of 1F1B ends there) computes breakdown.compute_s, its stage's entry.
awk -v b="$(num ideal_bubble)" 'BEGIN { exit !((b - 3 / 163) ^ 2 < 1e-18) }' ||
	bad "pipeline.ideal_bubble $(num ideal_bubble), expected 3/163"
grep -m1 '"stage_compute_s"' "$tmp/j" | sed 's/.*\[//; s/\].*//' | tr ',' '\n' |
	grep -E '[0-9]' >"$tmp/sc"
[ "$(wc -l <"$tmp/sc")" = 4 ] || bad "pipeline.stage_compute_s: $(wc -l <"$tmp/sc") entries, expected 4"
awk -v c="$(num compute_s)" -v s0="$(head -1 "$tmp/sc")" \
	'BEGIN { exit !(c > 0 && (c - s0) ^ 2 < 1e-12) }' ||
	bad "stage 0 compute $(head -1 "$tmp/sc") != breakdown.compute_s $(num compute_s)"

# The text summary's pipeline section says what the breakdown's bubble is:
# the same time, the final stage (0, as above), the equal-stage part
# 3 / 163 of the step and what unequal stages add. (A user read
# "pipeline bubble 14.7 %" beside "bubble with equal stages 1.8 %" as two
# answers to one question.) Both parts in seconds sum to the bubble.
"$llmsim" run "$root/workloads/jobs/llama3-70b-h100-64.yaml" --no-store >"$tmp/t" 2>/dev/null ||
	bad "run (text)"
bub=$(sed -n 's/^    pipeline bubble  *\([0-9.]* m*s\) .*/\1/p' "$tmp/t")
grep -q "^    bubble $bub ([0-9.]* % of the step): stage 0, which finished last, idle while other stages computed$" \
	"$tmp/t" || bad "pipeline section: no bubble line matching the breakdown's $bub: $(grep -A4 '^  pipeline' "$tmp/t")"
secs() { awk '{ v = $1; if ($2 == "ms") v /= 1000; print v }'; }
ideal=$(sed -n "s/^      \([0-9.]* m*s\) of it the schedule's if stages took equal time (1.8 % of the step.*/\1/p" "$tmp/t" | secs)
more=$(sed -n 's/^      \([0-9.]* m*s\) beyond that: stages take unequal time.*/\1/p' "$tmp/t" | secs)
awk -v b="$(echo "$bub" | secs)" -v i="$ideal" -v m="$more" -v s="$(num step_time_s)" \
	'BEGIN { exit !(i != "" && m != "" && (i - s * 3 / 163) ^ 2 < 1e-6 && (i + m - b) ^ 2 < 1e-6) }' ||
	bad "pipeline section: equal-stage part '$ideal' s (step x 3/163) + '$more' s != bubble $bub"

# Standard input, with its place in messages.
"$llmsim" run - --no-store <"$job" >/dev/null 2>&1 || bad "run - (a job on stdin)"
printf 'model: llama3-8b\nsystem: dgx-h100\n' | "$llmsim" run - --no-store \
	>/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q '^<stdin>:' "$tmp/err" || bad "bad job on stdin: $(cat "$tmp/err")"
# Dtype spellings both ways.
"$llmsim" run "$job" --no-store --json --set training.dtype=bfloat16 | grep -v llmsim_version >"$tmp/a"
"$llmsim" run "$job" --no-store --json --set training.dtype=bf16 | grep -v llmsim_version >"$tmp/b"
cmp -s "$tmp/a" "$tmp/b" || bad "training.dtype bfloat16 and bf16 differ"

# getopt_long on every command: --opt=value, unambiguous prefixes, options
# after operands, unknown options and stray operands are usage errors.
"$llmsim" run --no-sto "$job" --json=x >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "json" "$tmp/err" || bad "run --json=x: $(cat "$tmp/err")"
"$llmsim" run "$job" --no-sto >/dev/null 2>&1 || bad "run JOB --no-sto (prefix)"
for cmd in measure validate calibrate; do
	"$llmsim" $cmd --bogus >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q "unknown option '--bogus'" "$tmp/err" ||
		bad "$cmd --bogus: $(cat "$tmp/err")"
done
"$llmsim" validate --kind=kernel --qui --no-sto >/dev/null 2>&1 ||
	bad "validate --kind=kernel --qui --no-sto"
"$llmsim" validate stray >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "unexpected argument 'stray'" "$tmp/err" ||
	bad "validate stray: $(cat "$tmp/err")"
"$llmsim" collective --m 4 >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "ambiguous option '--m'" "$tmp/err" ||
	bad "collective --m: $(cat "$tmp/err")"
"$llmsim" measure --backend= --op allreduce >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "'--backend' needs a value" "$tmp/err" ||
	bad "measure --backend=: $(cat "$tmp/err")"
# recompute_modules outside recompute selective are ignored (Megatron-Core
# reads them only then), so a planner's or a sweep's recompute full on a
# job that names modules replays: DeepSeek-V3 MB2511 ([mla_up_proj]).
"$llmsim" run "$root/results/reference/moe/T-MB2511-GB200-DSV3-FP8MX.yaml" \
	--set training.recompute=full --no-store >/dev/null 2>"$tmp/err" ||
	bad "recompute full with recompute_modules: $(cat "$tmp/err")"
# ZeRO 3 with moe.a2a_overlap (Megatron-FSDP runs the 1F1B all-to-all
# overlap): the step runs, where the FSDP all-gathers once deadlocked
# against the paired actions (train_dp.c fsdp_stage).
"$llmsim" run "$root/results/reference/moe/T-MB2602-H100-QWEN3-30B.yaml" \
	--set training.zero_stage=3 --no-store >/dev/null 2>"$tmp/err" ||
	bad "zero 3 with a2a_overlap: $(cat "$tmp/err")"
# The power model (gpu_power.c; h200 only): the 4-layer Llama step mixes
# GEMMs with HBM-bound eager kernels, so its matrix clock lies between
# the sustained 1485 and the burst 1776 MHz (1616 MHz when written), and
# the summary says so; an H100 (no model) stays at 1485 MHz.
"$llmsim" run "$root/results/reference/training/T-LLMSIM-H200-LLAMA3-8B-4L.yaml" \
	--json --no-store >"$tmp/j" 2>/dev/null || bad "run H200 4L --json"
clk=$(num matrix_clock_mhz)
awk -v c="$clk" 'BEGIN { exit !(c > 1485 && c < 1776) }' ||
	bad "H200 4L matrix clock $clk MHz, expected between 1485 and 1776"
"$llmsim" run "$root/results/reference/training/T-LLMSIM-H200-LLAMA3-8B-4L.yaml" \
	--no-store 2>/dev/null | grep -q "matrix clock   1[56][0-9][0-9] MHz under the power limit" ||
	bad "H200 4L summary has no matrix clock line"
"$llmsim" run "$root/results/reference/training/T-LLMSIM-H200-LLAMA3-8B-4L.yaml" \
	--set system.gpu=h100 --json --no-store >"$tmp/j" 2>/dev/null ||
	bad "run H100 4L --json"
[ "$(num matrix_clock_mhz)" = 1485 ] ||
	bad "H100 matrix clock $(num matrix_clock_mhz), expected 1485"
# The same H200 step on two GPUs (dp 2: a gradient all-reduce) has
# collectives, whose power the model does not know: sustained 1485 MHz,
# and the summary says why.
"$llmsim" run "$root/results/reference/training/T-LLMSIM-H200-LLAMA3-8B-4L.yaml" \
	--set system.gpus_per_node=2 --set parallelism.dp=2 \
	--set training.global_batch_size=2 --json --no-store >"$tmp/j" 2>/dev/null ||
	bad "run H200 4L dp 2 --json"
[ "$(num matrix_clock_mhz)" = 1485 ] ||
	bad "H200 dp 2 matrix clock $(num matrix_clock_mhz), expected 1485"
"$llmsim" run "$root/results/reference/training/T-LLMSIM-H200-LLAMA3-8B-4L.yaml" \
	--set system.gpus_per_node=2 --set parallelism.dp=2 \
	--set training.global_batch_size=2 --no-store 2>/dev/null |
	grep -q "matrix clock   1485 MHz, back to back (the power model runs steps without collectives only)" ||
	bad "H200 dp 2 summary does not say why the clock is sustained"
# Every key of run --json is documented (docs/cli-output.md for training
# steps, docs/serving.md for serving and step jobs; the README says the
# page documents every field): a training MoE job with pipeline, host
# model and DeepEP, a CP job, a serving run, a disaggregated one and a
# decode step. (13 training and 6 serving keys were undocumented.)
for j in deepseek-v3-2048-pp16 llama3.1-405b-131k serve-llama3-70b-h100 \
	 serve-llama3-70b-pd-h100 decode-llama3-70b-h100-fp8; do
	"$llmsim" run "$root/workloads/jobs/$j.yaml" --json --no-store \
		--set serving.requests=20 >"$tmp/k" 2>/dev/null ||
		"$llmsim" run "$root/workloads/jobs/$j.yaml" --json --no-store \
			>"$tmp/k" 2>/dev/null || { bad "run $j --json"; continue; }
	for k in $(grep -o '"[a-z_0-9]*":' "$tmp/k" | tr -d '":' | sort -u); do
		grep -q "\b$k\b" "$root/docs/cli-output.md" "$root/docs/serving.md" ||
			bad "run $j --json: key '$k' is in no docs page"
	done
done
exit $fail
