#!/bin/sh
# plan-cli.sh - `llmsim plan` end to end: the ranked table, --json and its
# keys, pins, --max-gpus, the database, exit status 2 with the binding
# rule on bad input; then the analytical tier's ranking against the full
# simulation on four jobs, one MoE (tests/tools/plan_rank.c: Spearman's rank
# correlation over the best 20 and 20 more spread over the ranking, the
# fastest simulated layout within the analytical top 20).
set -u
llmsim=${LLMSIM:-build/llmsim}
tools=${LLMSIM_TOOLS:-build/tools}
. "$(dirname "$0")/lib.sh"

status() {	# status WANT DESCRIPTION MESSAGE ARGS...: exit WANT, MESSAGE on stderr
	want=$1 what=$2 msg=$3
	shift 3
	"$llmsim" plan "$@" --no-store >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" != "$want" ] || ! grep -q -- "$msg" "$tmp/err"; then
		echo "FAIL: $what: exit $got, expected $want and '$msg'"
		cat "$tmp/err"; fail=1
	fi
}

job=workloads/jobs/default.yaml

# The table: ranks 1..5 simulated in full, the reason, the pruned counts.
check "table" "$llmsim" plan "$job" --top 5 --no-store
for want in '^ *1  tp' '^ *5  tp' 'beats the runner-up' 'pruned: memory' \
	    'simulated in full'; do
	grep -q -- "$want" "$tmp/out" || { echo "FAIL: table lacks '$want'"; fail=1; }
done
# The pruned groups are separated by "; " (memory's too), none after the last.
grep -q 'pruned: memory [0-9]*; ' "$tmp/out" && ! grep -q 'pruned:.*;$' "$tmp/out" ||
	{ echo "FAIL: pruned line separators: $(grep pruned: "$tmp/out")"; fail=1; }

# --json: the issue's keys, best first.
check "json" "$llmsim" plan "$job" --top 3 --json --no-store
for key in '"candidates"' '"parallelism"' '"training"' '"step_time_s"' \
	   '"tokens_per_s"' '"mfu"' '"peak_bytes_per_gpu"' '"fits"' \
	   '"breakdown"' '"searched"' '"pruned"' '"wall_s"' '"bound"'; do
	grep -q "$key" "$tmp/out" || { echo "FAIL: --json lacks $key"; fail=1; }
done

# Every key of plan --json is in the table of docs/cli-output.md (as run
# --json's: tests/run-cli.sh), backquoted there alone or as a part of a
# dotted name: the default job, --max-gpus (front), an MoE job and
# --pd-ratio (an array). (The page had none of the 114 keys; 35, the
# by_rule names and the analytical counters among them, were on no page.)
pdjob=workloads/jobs/serve-llama3-70b-pd-h100.yaml
for args in "$job --top 3" "$job --top 2 --max-gpus 16" \
	    "tests/scenarios/qwen3-30b-ep8-deepep/job.yaml --top 2" \
	    "$pdjob --pd-ratio"; do
	# shellcheck disable=SC2086 # args are words
	"$llmsim" plan $args --json --no-store >"$tmp/k" 2>/dev/null ||
		{ echo "FAIL: plan $args --json"; fail=1; continue; }
	for k in $(grep -o '"[a-z_0-9]*":' "$tmp/k" | tr -d '":' | sort -u); do
		grep -q "[\`.]$k[\`.]" docs/cli-output.md || {
			echo "FAIL: plan $args --json: key '$k' is not in docs/cli-output.md"
			fail=1
		}
	done
done

# A pin is respected: every row has tp 2.
check "pin" "$llmsim" plan "$job" --top 4 --set parallelism.tp=2 --no-store
if grep '^ *[0-9]  tp' "$tmp/out" | grep -qv '^ *[0-9]  tp 2 '; then
	echo "FAIL: --set parallelism.tp=2 not respected"; cat "$tmp/out"; fail=1
fi

# Context parallelism pinned: every row has cp 2.
check "cp pin" "$llmsim" plan "$job" --top 3 --set parallelism.cp=2 --no-store
if grep '^ *[0-9]  tp' "$tmp/out" | grep -qv ' cp 2 '; then
	echo "FAIL: --set parallelism.cp=2 not respected"; cat "$tmp/out"; fail=1
fi

# seq_len 4095 is odd: sequence parallelism cannot split it over tp 2, 4
# or 8 (sp_seq), so no ranked layout has sp (8 of the top 20 do at 8192).
# The winner and the runner-up differ in recompute only; their pipeline
# bubbles differ by rounding (3.19e-10 us), which the explanation said
# was an offset.
check "odd seq_len" "$llmsim" plan "$job" --analytical-only \
	--set training.seq_len=4095 --no-store
grep -q '^ *[0-9]*  tp .* sp ' "$tmp/out" &&
	{ echo "FAIL: seq_len 4095 ranked a layout with sp"; cat "$tmp/out"; fail=1; }
grep -q 'offset by [0-9.]*e-' "$tmp/out" &&
	{ echo "FAIL: an offset of rounding noise:"; tail -1 "$tmp/out"; fail=1; }
grep -q 'beats the runner-up' "$tmp/out" || { echo "FAIL: no explanation"; fail=1; }

# An MoE job: expert parallelism searched, a pinned ep respected.
check "moe ep pin" "$llmsim" plan tests/scenarios/qwen3-30b-ep8-deepep/job.yaml \
	--top 3 --set parallelism.ep=8 --no-store
if grep '^ *[0-9]  tp' "$tmp/out" | grep -qv ' ep 8 '; then
	echo "FAIL: --set parallelism.ep=8 not respected"; cat "$tmp/out"; fail=1
fi

# --max-gpus: a Pareto front over node counts.
check "max-gpus" "$llmsim" plan "$job" --top 6 --max-gpus 32 --no-store
grep -q 'Pareto front' "$tmp/out" || { echo "FAIL: no Pareto front"; fail=1; }
# Not a whole number of nodes: the search reaches whole nodes (12 on 8-GPU
# nodes: 8) and says so; it said "up to 12 GPUs".
check "max-gpus 12" "$llmsim" plan "$job" --top 2 --max-gpus 12 --json --no-store
tr -d ' \t\n' <"$tmp/out" | grep -q '"max_gpus":12,"max_gpus_searched":8,' ||
	{ echo "FAIL: --max-gpus 12 --json: no max_gpus_searched 8"; fail=1; }
check "max-gpus 12 text" "$llmsim" plan "$job" --top 2 --max-gpus 12 --no-store
grep -q '(up to 8 GPUs: --max-gpus 12 in whole nodes of 8, ' "$tmp/out" ||
	{ echo "FAIL: --max-gpus 12 said '$(sed -n 1p "$tmp/out")'"; fail=1; }

# Stored with its job.
check "store" "$llmsim" plan "$job" --top 2 --db "$tmp/p.db"
grep -q 'stored as run' "$tmp/err" || { echo "FAIL: not stored"; fail=1; }
# ... and `llmsim report` shows it (a plan-only database read "No `llmsim
# run` results" and nothing else): the Plans section, its 12 layouts of
# which the table shows the best 10 (REPORT_PLAN_ROWS) and says 2 more,
# rank 1 as `plan` printed it, and one breakdown plot (all 12 simulated).
"$llmsim" plan "$job" --top 12 --db "$tmp/p12.db" >"$tmp/plan12" 2>/dev/null &&
	"$llmsim" report --db "$tmp/p12.db" -o "$tmp/p12.html" 2>"$tmp/err" ||
	{ echo "FAIL: plan + report"; cat "$tmp/err"; fail=1; }
best=$(sed -n 's/^ *1  \(tp [0-9]* pp [0-9]*\) .*/\1/p' "$tmp/plan12")
rows=$(grep -c '^<tr><td>[0-9]*</td><td>8</td>' "$tmp/p12.html")
grep -q '<h2>Plans</h2>' "$tmp/p12.html" &&
	grep -q '12 layouts ranked, 12 simulated in full' "$tmp/p12.html" &&
	[ "$rows" = 10 ] && grep -q '2 more in v_plans' "$tmp/p12.html" &&
	[ -n "$best" ] && grep -q "^<tr><td>1</td><td>8</td><td>$best " "$tmp/p12.html" &&
	[ "$(grep -c '<figure class="plot"' "$tmp/p12.html")" = 1 ] ||
	{ echo "FAIL: report of a plan: $rows rows, best '$best'"; fail=1; }
# a plan of the same job for another objective, estimates only: a second
# plan shown (the latest of each job and objective), its 3 layouts
# "estimate", no plot added (a plot without marks fails the page's check)
"$llmsim" plan "$job" --objective memory --analytical-only --top 3 \
	--db "$tmp/p12.db" >/dev/null 2>&1 &&
	"$llmsim" report --db "$tmp/p12.db" -o "$tmp/p12.html" 2>"$tmp/err" ||
	{ echo "FAIL: plan + report, memory"; cat "$tmp/err"; fail=1; }
[ "$(grep -c '^<h3>llama3-8b-dgx-h100</h3>' "$tmp/p12.html")" = 2 ] &&
	grep -q 'objective memory: 3 layouts ranked, 0 simulated' "$tmp/p12.html" &&
	[ "$(grep -c '<td>estimate</td>' "$tmp/p12.html")" = 3 ] &&
	[ "$(grep -c '<figure class="plot"' "$tmp/p12.html")" = 1 ] ||
	{ echo "FAIL: report of two plans of one job"; fail=1; }

# Bad input: exit 2 naming the rule, and by how much memory.
status 2 "impossible pin" 'tp 3 does not divide num_attention_heads 32' \
	"$job" --set parallelism.tp=3
status 2 "impossible cp" 'cp 3 does not divide seq_len 8192' \
	"$job" --set parallelism.cp=3
status 2 "model too big" 'no layout fits in memory: the smallest peak is' \
	"$job" --set model=llama3.1-405b
grep -q 'GB more than the' "$tmp/err" || { echo "FAIL: by how much"; fail=1; }
status 2 "bad objective" 'expected throughput, memory or cost' "$job" \
	--objective speed
moe=tests/scenarios/qwen3-30b-ep8-deepep/job.yaml
status 2 "moe zero 3" 'ZeRO 3 on an MoE model' "$moe" \
	--set training.zero_stage=3
status 2 "serving job" 'searches the prefill:decode splits' \
	workloads/jobs/serve-llama3-70b-pd-h100.yaml
status 2 "--gpus alone" '--gpus goes with --pd-ratio' "$job" --gpus 8
# plan loads its job through run's warnings (not its errors): a training
# key on the serving job warns at its --set, the exit status stays the
# refusal's 2.
status 2 "serving job, training key" \
	"--set:1:10: warning: 'training.dtype': key not read by a serving job" \
	workloads/jobs/serve-llama3-70b-pd-h100.yaml --set training.dtype=fp8

# Megatron-Core refuses full recompute with the all-to-all overlap
# (overlap_moe_expert_parallel_comm): with recompute pinned full, the
# a2a_overlap job ranks only ep 1 layouts (ep 2 ranked first before the
# rule), the rule's prunes counted; with ep pinned too, exit 2 naming it.
check "a2a full recompute" "$llmsim" plan "$moe" --top 5 --analytical-only \
	--set training.recompute=full --no-store
if ! grep -q '^ *1  tp' "$tmp/out" ||
   grep '^ *[0-9]  tp' "$tmp/out" | grep -q ' ep [0-9]'; then
	echo "FAIL: a layout with ep > 1 and full recompute ranked"
	cat "$tmp/out"; fail=1
fi
grep -q 'a2a_overlap_recompute [1-9]' "$tmp/out" ||
	{ echo "FAIL: a2a_overlap_recompute prunes not counted"; fail=1; }
status 2 "a2a full recompute, ep pinned" \
	"disable full recomputation when enabling overlap_moe_expert_parallel_comm" \
	"$moe" --set training.recompute=full --set parallelism.ep=8

# SIGTERM (or Ctrl-C's SIGINT) mid-plan: one line saying so, from the
# planner and none from its forked workers, then death by the signal
# (143 = 128 + 15). The 1000 full runs take ~30 s of CPU, the signal
# comes after 1 s. (A background job of a script ignores SIGINT, so the
# test sends SIGTERM, which takes the same handler.)
"$llmsim" plan "$job" --top 1000 --jobs 2 --no-store >"$tmp/out" 2>"$tmp/err" &
pid=$!
sleep 1
kill -TERM $pid
wait $pid 2>/dev/null	# not the shell's "Terminated"
got=$?
n=$(grep -c 'llmsim plan: interrupted before the search finished' "$tmp/err")
[ "$got" = 143 ] && [ "$n" = 1 ] && [ ! -s "$tmp/out" ] ||
	{ echo "FAIL: SIGTERM mid-plan: exit $got, $n interrupted lines"; cat "$tmp/err"; fail=1; }

# The workers: a SIGTERM to plan ends them too (PR_SET_PDEATHSIG; a
# worker gone or a zombie this container's init does not reap has
# ended), and a worker killed on its own (kill, the OOM killer) is named
# with its signal (plan exited 1 without a word).
# kids_of PID N: its live (not zombie) children once there are N of them,
# waiting up to 120 s (the workers are forked one after the other: a
# listing taken between the two forks held one, and the case below then
# read the second worker's pid as empty); fewer after that (kids empty
# when none).
live_kids() {	# live_kids PID N: sets kids and n; succeeds at >= N
	kids=$(ps -o pid=,stat= --ppid "$1" 2>/dev/null |
	       awk '$2 !~ /^Z/ { print $1 }')
	n=$(echo $kids | wc -w)
	[ "$n" -ge "$2" ]
}
kids_of() {
	wait_until 1200 "$1" live_kids "$1" "$2"
}
"$llmsim" plan "$job" --top 1000 --jobs 2 --no-store >"$tmp/out" 2>"$tmp/err" &
pid=$!
kids_of $pid 1
[ -n "$kids" ] || { echo "FAIL: plan --jobs 2: no workers after 120 s"; fail=1; }
kill -TERM $pid
wait $pid 2>/dev/null
# each worker gone within 30 s (a killed process ends when it is next
# scheduled: 1 s was a guess under load); one still running then has
# outlived its parent
for k in $kids; do
	wait_until 300 '' ended "$k" ||
		{ echo "FAIL: plan: worker $k outlived a SIGTERM to its parent"
		  fail=1; kill "$k" 2>/dev/null; }
done
"$llmsim" plan "$job" --top 100 --jobs 2 --no-store >"$tmp/out" 2>"$tmp/err" &
pid=$!
# the full tier's workers, not the analytical walk's (plan_split.c forks
# those first and reaps them before the full tier starts): wait for the
# line that starts the full tier (up to 300 s, not 30: under load the
# walk's time grows with it), then for both workers to be listed
wait_until 3000 $pid grep -q 'simulating the best' "$tmp/err"
kids_of $pid 2
k1= k2=
[ "$n" = 2 ] && { k1=$(echo $kids | cut -d' ' -f1); k2=$(echo $kids | cut -d' ' -f2); }
[ -n "$k2" ] || { echo "FAIL: plan --jobs 2: not 2 full-run workers ($kids)"; fail=1; }
# one worker killed: the other is stopped at once (not run to its end:
# the parent polls every 250 ms, a layout's run takes longer) and only the
# first is reported as killed
[ -n "$k2" ] && kill -TERM "$k1"
wait $pid 2>/dev/null
got=$?
[ "$got" = 1 ] && [ ! -s "$tmp/out" ] &&
	grep -q "error: plan: a full-run worker (pid $k1) was killed by signal 15" "$tmp/err" &&
	grep -q "error: plan: stopped the other 1 full-run worker: the full tier cannot complete" "$tmp/err" &&
	! grep -q "signal 15.*pid $k2\|pid $k2.*signal" "$tmp/err" &&
	grep -q "error: plan: [0-9]* of 100 full runs came back" "$tmp/err" ||
	{ echo "FAIL: plan with a worker killed: exit $got"; cat "$tmp/err"; fail=1; }

# The analytical tier ranks like the full simulation.
printf '%-34s %6s %8s %4s %7s %7s %9s %9s %8s\n' job GPUs ranked n rho \
	rho_top20 fastest med_err max_err
for j in workloads/jobs/default.yaml workloads/jobs/llama2-7b-mi300x.yaml \
	 workloads/jobs/llama3-8b-fsdp-mi355x.yaml "$moe"; do
	"$tools/plan_rank" "$j" 2>"$tmp/err" || { cat "$tmp/err"; fail=1; }
done
[ $fail = 0 ] && echo "plan-cli: ok"
exit $fail
