#!/bin/sh
# report-sweep.sh - the curves of `llmsim report` for a sweep (src/report/
# report_sweep.c): one series per combination of the other axes' values,
# however long their labels, and none per value of an axis that follows x.
#   - longkeys: x = training.global_batch_size (3 values, the most); the
#     other axes micro_batch_size x sequence_parallel x seq_len make
#     2 x 2 x 2 = 8 series. Their labels agree on the first 57 characters
#     ("training.micro_batch_size=1, parallelism.sequence_parall"), where
#     the legend used to cut them and merge them into 2 series (each
#     curve then zigzagged through 4 points at every x).
#   - zipx: x = system.nodes (zip with parallelism.dp: 1/4, 2/8, 4/16);
#     dp follows x, so the series are micro_batch_size's 2 values, 3
#     points each (they used to be 6 series of one point, no line).
#   - more: x = training.seq_len (4 values); global_batch_size x
#     micro_batch_size = 3 x 3 = 9 combinations, 8 drawn: the note says
#     1 more combination (it used to count points: 4).
#   - zipx's heat map is over nodes and micro_batch_size, not nodes and
#     dp (a zip partner: a diagonal of 3 cells).
# And the jobs section with a decode job beside a training job: the
# decode row says what its step is, and its memory bar has the KV cache
# pool (the rest of its peak: 64.5 GB of 75.9 here) that the five parts
# v_runs has leave out (the bar used to stop at 11.4 GB); the training
# row's parts are its peak (no such segment).
# Quiet on success; one line per failure.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
here=$(cd "$(dirname "$0")" && pwd)
LLMSIM=${LLMSIM:-build/llmsim}
. "$here/lib.sh"
use_checkout_data
job=$root/workloads/jobs/default.yaml	# Llama 3 8B, 8 H100s, tp 2, dp 4

cat >"$tmp/longkeys.yaml" <<YAML
name: longkeys
base: $job
set: {parallelism.tp_comm_overlap: false}
grid:
  training.global_batch_size: [64, 128, 256]
  training.micro_batch_size: [1, 2]
  parallelism.sequence_parallel: [false, true]
  training.seq_len: [2048, 4096]
YAML
cat >"$tmp/zipx.yaml" <<YAML
name: zipx
base: $job
grid:
  training.micro_batch_size: [1, 2]
zip:
  system.nodes: [1, 2, 4]
  parallelism.dp: [4, 8, 16]
YAML
cat >"$tmp/more.yaml" <<YAML
name: more
base: $job
grid:
  training.global_batch_size: [64, 128, 256]
  training.micro_batch_size: [1, 2, 4]
  training.seq_len: [1024, 2048, 4096, 8192]
YAML
for s in longkeys zipx more; do
	"$llmsim" sweep "$tmp/$s.yaml" --db "$tmp/r.db" -j 2 >/dev/null \
		2>"$tmp/err" || bad "sweep $s: $(tail -1 "$tmp/err")"
done
"$llmsim" report --db "$tmp/r.db" -o "$tmp/r.html" 2>"$tmp/err" ||
	bad "report: $(cat "$tmp/err")"

"$llmsim" run "$job" --db "$tmp/r.db" >/dev/null 2>&1 || bad "run default"
"$llmsim" run decode-llama3-70b-h100-fp8 --db "$tmp/r.db" >/dev/null 2>&1 ||
	bad "run decode-llama3-70b-h100-fp8"
"$llmsim" report --db "$tmp/r.db" -o "$tmp/r.html" 2>"$tmp/err" ||
	bad "report: $(cat "$tmp/err")"

# section NAME: the page's lines from "<h3>Sweep NAME" to the next sweep.
section() {
	awk -v h="<h3>Sweep $1</h3>" '$0 == h { on = 1; next }
		on && /^<h3>Sweep / { on = 0 } on' "$tmp/r.html"
}
# legend NAME: the entries of the sweep's first legend (step time), one a
# line.
legend() {
	section "$1" | grep -m1 '^<div class="legend">' |
		sed 's/<span><i[^>]*><\/i>/\n/g; s/<[^>]*>//g' | sed '/^$/d'
}

# longkeys: the 8 combinations, whole and distinct.
n=$(legend longkeys | sort -u | wc -l)
[ "$n" = 8 ] || bad "longkeys: $n series in the legend, expected 8"
legend longkeys | grep -q '\.\.\.$' && bad "longkeys: a legend entry is cut"
legend longkeys | grep -qx 'training.micro_batch_size=2, parallelism.sequence_parallel=true, training.seq_len=4096' ||
	bad "longkeys: no series mbs 2, sp true, seq 4096: $(legend longkeys | tr '\n' '|')"
# 24 markers in the step-time plot: every point once.
m=$(section longkeys | sed -n '/sweep-step/,/<\/svg>/p' | grep -o '<circle' | wc -l)
[ "$m" = 24 ] || bad "longkeys: $m markers in the step-time plot, expected 24"

# zipx: dp follows nodes; 2 series.
[ "$(legend zipx | tr '\n' '|')" = "training.micro_batch_size=1|training.micro_batch_size=2|" ] ||
	bad "zipx: legend $(legend zipx | tr '\n' '|'), expected the 2 micro-batch sizes"

# more: 9 combinations, 8 drawn, 1 more (not 4 points).
n=$(legend more | wc -l)
[ "$n" = 8 ] || bad "more: $n series drawn, expected 8"
section more | grep -q '<p class="note">1 more combinations of the other axes are not drawn' ||
	bad "more: note $(section more | grep -o 'note">[0-9]* more combinations')"
section zipx | grep -q 'zipx: fastest step time over system.nodes and training.micro_batch_size<' ||
	bad "zipx: heat map $(section zipx | grep -o 'zipx: fastest step time over [^<]*')"

# The jobs section: the decode row's KV cache, as v_runs' numbers give it.
db=$tmp/r.db
kv=$(sqlite3 "$db" "SELECT printf('%.4g', (peak_bytes_per_gpu - weights_bytes - activations_bytes - workspace_bytes - coalesce(gradients_bytes, 0) - coalesce(optimizer_bytes, 0)) / 1e9) FROM v_runs WHERE job = 'decode-llama3-70b-h100-fp8'")
grep -q "<title>decode-llama3-70b-h100-fp8 (decode step): 8 x h100, tp 8 pp 1 dp 1$" "$tmp/r.html" ||
	bad "jobs: no decode row labelled '(decode step)'"
grep -q "^KV cache (the rest of the peak): $kv GB (peak " "$tmp/r.html" ||
	bad "jobs: no KV cache segment of $kv GB for the decode job"
[ "$(grep -c '^KV cache (the rest of the peak)' "$tmp/r.html")" = 1 ] ||
	bad "jobs: $(grep -c '^KV cache (the rest of the peak)' "$tmp/r.html") KV cache segments, expected 1 (the training job has none)"

# Row labels past 52 characters are cut between characters: of the
# two names of two-byte characters below, one was cut inside an "é" by
# the byte cut at 49, and the page was not UTF-8.
long=$(printf '%030d' 0 | sed 's/0/é/g')
for n in "$long" "a$long"; do
	"$llmsim" run "$job" --set "name=$n" --db "$tmp/u.db" >/dev/null 2>&1 ||
		bad "run named $n"
done
"$llmsim" report --db "$tmp/u.db" -o "$tmp/u.html" 2>"$tmp/err" ||
	bad "report of UTF-8 names: $(cat "$tmp/err")"
iconv -f UTF-8 -t UTF-8 "$tmp/u.html" >/dev/null 2>&1 ||
	bad "report of UTF-8 names: the page is not UTF-8"
# "a", 30 "é" and ": 8 x h100, tp 2 pp 1 dp 4" are 58 characters: the
# first 49 and "..."
grep -q ">a$long: 8 x h100, tp 2 p\.\.\.<" "$tmp/u.html" ||
	bad "report of UTF-8 names: no row label cut to 49 characters and ..."
exit $fail
