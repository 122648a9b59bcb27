#!/bin/sh
# hostile-input.sh - input files written with hostility (round 20): lines
# longer than a reader's buffer, empty tab-separated fields, more rows or
# settings than a fixed table holds. Each block names the defect it keeps
# fixed.
set -u
llmsim=${LLMSIM:-build/llmsim}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
use_checkout_data

# expect STATUS DESCRIPTION COMMAND...: the command exits STATUS (stdout
# and stderr in $tmp/out and $tmp/err).
expect() {
	want=$1 what=$2
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" = "$want" ] ||
		{ bad "$what: exit $got, expected $want"; head -5 "$tmp/err"; }
}

# ---- a serving trace row longer than the reader's 4 KiB buffer is one
# row (it was cut in two: 'the row ends after input_len' at the row and
# at the next line, which was numbered one too many).
zeros=$(printf '%05000d' 128)
printf 'arrival_s,input_len,output_len\n0,128,16\n0,%s,16\n0.1,64,8\n' \
	"$zeros" >"$tmp/long.csv"
printf 'model: llama3-8b\nsystem: {preset: dgx-h100, gpus_per_node: 1}\nphase: serving\nserving: {engine: vllm, trace: long.csv}\n' \
	>"$tmp/long.yaml"
expect 0 "trace: a 5000-character row" "$llmsim" run "$tmp/long.yaml" \
	--no-store --json
grep -q '"requests":[[:space:]]*3,' "$tmp/out" || bad "trace: a long row: not 3 requests"
printf '0,%s,16\n0,64,x\n' "$zeros" >"$tmp/long2.csv"
sed 's#long.csv#long2.csv#' "$tmp/long.yaml" >"$tmp/long2.yaml"
expect 2 "trace: a bad row after a long one" "$llmsim" run "$tmp/long2.yaml" \
	--no-store
grep -q "long2.csv:2:6: error: 'output_len'" "$tmp/err" ||
	{ bad "trace: the row after a long one is not line 2"; cat "$tmp/err"; }

# A NUL byte ends a row's text early: refused at its column (the rest of
# the row was dropped without a word); a folder named as the trace says
# it cannot be read (it said the trace has no request rows).
printf '0,128,16\0,99\n0,64,8\n' >"$tmp/nul.csv"
sed 's#long.csv#nul.csv#' "$tmp/long.yaml" >"$tmp/nul.yaml"
expect 2 "trace: a NUL byte" "$llmsim" run "$tmp/nul.yaml" --no-store
grep -q "nul.csv:1:9: error: a NUL byte" "$tmp/err" ||
	{ bad "trace: a NUL byte not refused"; cat "$tmp/err"; }
mkdir "$tmp/dir.csv"
sed 's#long.csv#dir.csv#' "$tmp/long.yaml" >"$tmp/dir.yaml"
expect 2 "trace: a folder" "$llmsim" run "$tmp/dir.yaml" --no-store
grep -q "cannot read '.*dir.csv': Is a directory" "$tmp/err" ||
	{ bad "trace: a folder: no 'Is a directory'"; cat "$tmp/err"; }

# ---- validate's dispatch cases (results/reference/ep/*.tsv).
ref=$tmp/ref
mkdir -p "$ref/ep"
cp "$root/results/reference/validate.yaml" "$ref/"
line=$(grep -v '^#' "$root/results/reference/ep/cases.tsv" | head -1)
vd() { expect "$1" "$2" "$llmsim" validate --kind dispatch --reference "$ref" \
	--no-store; }
# An empty field is named at its column (strtok merged the two tabs, so
# every later column shifted and the line got the generic message at 1).
printf '%s\n' "$line" | sed 's/\t24\t/\t\t/' >"$ref/ep/cases.tsv"
vd 2 "dispatch: an empty sms field"
grep -q "cases.tsv:1:58: error: 'sms': an empty field" "$tmp/err" ||
	{ bad "dispatch: an empty field not named"; cat "$tmp/err"; }
# Every dispatcher setting is applied (past the eighth they were dropped
# without a word: zzz, the ninth, was never seen).
s=',sms=24,sms=24,sms=24,sms=24,sms=24,sms=24,sms=24,sms=24,zzz=9'
printf '%s\n' "$line" | sed "s/\tdeepep\t/\tdeepep$s\t/" >"$ref/ep/cases.tsv"
vd 1 "dispatch: nine dispatcher settings"
grep -q "'zzz': unknown key" "$tmp/err" ||
	{ bad "dispatch: the ninth dispatcher setting was dropped"; cat "$tmp/err"; }
# A bad dispatcher setting is named at its place in the line (it was
# "--set:2:5", the place of a --set option nobody gave).
printf '%s\n' "$line" | sed "s/\tdeepep\t/\tdeepep,sms=24,sms=abc\t/" \
	>"$tmp/ep.tsv"
cp "$tmp/ep.tsv" "$ref/ep/cases.tsv"
col=$(awk -F'\t' '{ c = 6; for (i = 1; i <= 5; i++) c += length($i)
	print c + length("deepep,sms=24,sms=") }' "$tmp/ep.tsv")
vd 1 "dispatch: a bad dispatcher setting"
grep -q "cases.tsv:1:$col: error: 'sms': expected an integer" "$tmp/err" ||
	{ bad "dispatch: a bad setting not at column $col"; cat "$tmp/err"; }
# A line longer than the reader's 2 KiB buffer is one line (its rest was
# read as a second, malformed line).
src=$(printf '%03000d' 0)
printf '%s %s\n' "$line" "$src" >"$ref/ep/cases.tsv"
vd 0 "dispatch: a 3000-character source"

# ---- validate's training and inference cases: a file holds any number
# of cases. The readers held 256 and refused a longer file (before that,
# dropped the rest without a word); 300 cases are 300 rows, the last one
# included (each fails to run here: none.yaml does not exist).
mkdir -p "$ref/training" "$ref/inference"
i=0
while [ $i -lt 300 ]; do
	printf 'T-%d\tnone.yaml\t1\tsource\n' $i
	i=$((i + 1))
done >"$ref/training/cases.tsv"
expect 1 "training: 300 cases (none runs: no scored row, gate missed)" \
	timeout 60 "$llmsim" validate --kind training --reference "$ref" --no-store
grep -q "^  T-299 .* FAILED" "$tmp/out" ||
	{ bad "training: the 300th case is not a row"; tail -3 "$tmp/out"; }
i=0
while [ $i -lt 300 ]; do
	printf 'I-%d\tnone.yaml\tserving.duration_s\t1\tlatency\tshown\tnote\n' $i
	i=$((i + 1))
done >"$ref/inference/cases.tsv"
expect 1 "inference: 300 latency cases (none runs)" timeout 60 "$llmsim" \
	validate --kind latency --reference "$ref" --no-store
grep -q "^  I-299 " "$tmp/out" ||
	{ bad "inference: the 300th case is not a row"; tail -3 "$tmp/out"; }

# ---- config import-megatron "ARGS" splits the string as a shell does
# (a double-quoted \" ended the quote, so '--num-layers 64' inside a
# quoted --data-path became an argument; an escaped blank split a word;
# an unterminated quote swallowed the rest without a word).
B='--num-layers 32 --hidden-size 4096 --num-attention-heads 32 --seq-length 4096 --max-position-embeddings 4096 --micro-batch-size 1 --global-batch-size 8 --vocab-size 32000'
im() { expect "$1" "$2" "$llmsim" config import-megatron "$3" --gpus 8; }
im 0 "import-megatron: \\\" in double quotes" "$B --data-path \"x\\\"y --num-layers 64\""
grep -q 'num_hidden_layers: 32' "$tmp/out" ||
	{ bad "import-megatron: a quoted word's --num-layers was read"; grep layers "$tmp/out"; }
im 0 "import-megatron: an escaped blank" "$B --data-path a\\ b"
grep -q 'Unknown to llmsim' "$tmp/out" &&
	bad "import-megatron: an escaped blank split the word"
im 2 "import-megatron: an unterminated quote" "$B --data-path 'x --num-layers 64"
grep -q "unterminated ' quote" "$tmp/err" ||
	{ bad "import-megatron: an unterminated quote not named"; cat "$tmp/err"; }
im 0 "import-megatron: a pasted script's continuation lines" "$B \\
	--num-layers 48"
grep -q 'num_hidden_layers: 48' "$tmp/out" ||
	bad "import-megatron: a continuation line lost"
# More than 256 unknown flags: the rest are counted, not dropped.
X=$(i=0; while [ $i -lt 260 ]; do printf ' --zz%d' $i; i=$((i + 1)); done)
im 0 "import-megatron: 260 unknown flags" "$B$X"
grep -q 'Unknown to llmsim, ignored:.* --zz255 (and 4 more)$' "$tmp/out" ||
	{ bad "import-megatron: flags past 256 dropped"; grep Unknown "$tmp/out" | tail -c 100; }

# ---- a calibration file's error-bar data: an infinite standard error or
# a correlation that is not symmetric with a unit diagonal is refused (an
# infinite standard error gave a zero-width interval, and an asymmetric
# correlation a variance that calib_sigma clamps to 0: both a certainty
# the fit never gave).
cal() {	# cal STDERR ROW1 ROW2
	printf '%s\n' 'system: dgx-h100' 'overlay:' \
		'  scale_up: {link: {sustained: 0.81}}' 'params:' \
		"  - {key: scale_up.link.sustained, value: 0.81, stderr: $1, start: 0.77}" \
		'  - {key: scale_out.link.sustained, value: 0.8, stderr: 0.05, start: 0.77}' \
		'correlation:' "  - $2" "  - $3" 'fit: {points: 26}' >"$tmp/cal.yaml"
	expect "$4" "calibration: stderr $1, correlation $2 $3" "$llmsim" run \
		default --no-store --json --set "system.calibration=$tmp/cal.yaml"
}
cal 0.01 '[1, 0.5]' '[0.5, 1]' 0
grep -q '"step_time_interval_s"' "$tmp/out" || bad "calibration: no interval"
cal inf '[1, 0.5]' '[0.5, 1]' 2
grep -q "cal.yaml:5:5: error: params: expected a value and a finite standard error >= 0" "$tmp/err" ||
	{ bad "calibration: an infinite stderr not named"; cat "$tmp/err"; }
cal 0.01 '[1, -1]' '[1, 1]' 2
grep -q "cal.yaml:9:6: error: correlation: expected a symmetric matrix" "$tmp/err" ||
	{ bad "calibration: an asymmetric correlation not named"; cat "$tmp/err"; }
cal 0.01 '[0.5, 0]' '[0, 1]' 2
grep -q "cal.yaml:8:6: error: correlation: expected 1 on the diagonal" "$tmp/err" ||
	{ bad "calibration: a diagonal of 0.5 not named"; cat "$tmp/err"; }
cal 0.01 '[1, nan]' '[nan, 1]' 0
# A standard error whose square is no double (1e300), or one so wide the
# band's e^(1.96 sd / f) overflows (1e150): said, not a band of [0, null].
cal 1e300 '[1, 0.5]' '[0.5, 1]' 2
grep -q "cal.yaml:5:5: error: params: .* (and a finite variance, its square)" "$tmp/err" ||
	{ bad "calibration: a stderr of 1e300 not named"; cat "$tmp/err"; }
cal 1e150 '[1, 0.5]' '[0.5, 1]' 2
grep -q "cal.yaml: error: its standard errors give prediction 1 .* a 95% band without bound" "$tmp/err" ||
	{ bad "calibration: a band without bound not named"; cat "$tmp/err"; }

# ---- a measure run stored with more than 62 --set overrides is predicted
# with all of them (valid_run_sets kept 62 and dropped the rest without a
# word: the last set, sustained 0.3, was not applied), and a stored set
# that is not a string is refused (it was skipped).
printf '%s\n' '{"type":"hello","protocol":1,"backend":"mpi","host":"h","device":"d","library":"l","library_version":"v","library_path":"","runtime":"","ranks":2,"nodes":1,"devices_per_node":2,"iters":1,"warmup":0}' \
	'{"type":"point","op":"sendrecv","dtype":"float","bytes":1048576,"count":262144,"ranks":2,"iters":1,"time_us":100,"time_min_us":100,"time_max_us":100,"algbw_GBps":10.48,"busbw_GBps":10.48,"check":"ok","wrong":0}' \
	>"$tmp/pts.jsonl"
many=
i=0
while [ $i -lt 63 ]; do
	many="$many --set scale_up.link.sustained=0.55"
	i=$((i + 1))
done
for s in "" "$many"; do
	# shellcheck disable=SC2086 # $s is a list of words
	"$llmsim" measure --import "$tmp/pts.jsonl" --system cpu-host \
		--db "$tmp/sets.db" $s --set scale_up.link.sustained=0.3 \
		>/dev/null 2>&1 || bad "measure --import with $s"
done
expect 1 "validate: a run of 64 sets" "$llmsim" validate --kind measured \
	--db "$tmp/sets.db" --no-store
[ "$(grep -c 'sendrecv 1048576 B .* 2.674 GB/s' "$tmp/out")" = 2 ] ||
	{ bad "validate: the 64th set of a run was dropped"; grep sendrecv "$tmp/out"; }
sqlite3 "$tmp/sets.db" "UPDATE measure_runs SET sets_json = '[1]'" 2>/dev/null ||
	bad "sqlite3: no update"
expect 2 "validate: a stored set not a string" "$llmsim" validate \
	--kind measured --db "$tmp/sets.db" --no-store
grep -q "measure run 1: sets_json: set 1 is not a string" "$tmp/err" ||
	{ bad "validate: a stored set not a string not named"; cat "$tmp/err"; }

# ---- sweep messages: a non-ASCII name names its character whole (it
# quoted one byte, '\xc3'), at its column inside the quotes; an empty
# name is called empty (it was "a single value"); --shard with N past
# the bound names the bound (it said "at least 1").
sw() {	# sw NAME-LINE
	printf '%s\nbase: %s\ngrid:\n  training.seq_len: [2048, 4096]\n' "$1" \
		"$root/workloads/jobs/llama2-7b-mi300x.yaml" >"$tmp/sw.yaml"
}
sw "name: \"caf$(printf '\303\251') run\""
expect 2 "sweep: a non-ASCII name" "$llmsim" sweep "$tmp/sw.yaml" --list
grep -q "sw.yaml:1:11: error: 'name': .*got '$(printf '\303\251')'" "$tmp/err" ||
	{ bad "sweep: a non-ASCII name's character"; cat "$tmp/err"; }
sw "name: ''"
expect 2 "sweep: an empty name" "$llmsim" sweep "$tmp/sw.yaml" --list
grep -q "sw.yaml:1:7: error: 'name': .*got an empty name" "$tmp/err" ||
	{ bad "sweep: an empty name"; cat "$tmp/err"; }
sw "name: ok"
expect 2 "sweep: --shard 1/99999999999" "$llmsim" sweep "$tmp/sw.yaml" \
	--list --shard 1/99999999999
grep -q "N must be a whole number from 1 to 1000000" "$tmp/err" ||
	{ bad "sweep: --shard N too big"; cat "$tmp/err"; }

# ---- run's budgets below a tenth of their unit are printed in units
# that show them ("about 0.0 GB ... more than the 0.0 GB budget").
expect 2 "run: --max-trace 1B" "$llmsim" run default --no-store \
	--max-trace 1B --trace "$tmp/t.json"
grep -q "the trace would be about [0-9.]* MB (.*more than the 1 B budget" "$tmp/err" ||
	{ bad "run: a 1 B trace budget"; cat "$tmp/err"; }
expect 2 "run: --max-memory 1KiB" "$llmsim" run default --no-store \
	--max-memory 1KiB
grep -q "needs about [0-9.]* MB of memory .*more than the 1 KiB budget" "$tmp/err" ||
	{ bad "run: a 1 KiB memory budget"; cat "$tmp/err"; }

# ---- validate --jobs reads every character (atoi took '2x' as 2).
expect 2 "validate: --jobs 2x" "$llmsim" validate --kind kernel --jobs 2x \
	--no-store
grep -q -- "--jobs: expected 1 to 16, got '2x'" "$tmp/err" ||
	{ bad "validate: --jobs 2x accepted"; cat "$tmp/err"; }

# ---- measure: a backend's bad point line (time_us -5) is not counted:
# it was stored half-read with zeros, failed the store's CHECK, and took
# the run's good points with it (0 stored). Its line is named. The same
# file imported is refused whole; a point whose fastest, median and
# slowest times are out of order (9, 5, 1 us) is refused.
hello='{"type":"hello","protocol":1,"backend":"mpi","host":"h","device":"d","library":"l","library_version":"v","library_path":"","runtime":"","ranks":2,"nodes":1,"devices_per_node":2,"iters":1,"warmup":0}'
pt() {	# pt BYTES TIME MIN MAX
	printf '{"type":"point","op":"sendrecv","dtype":"float","bytes":%s,"count":1,"ranks":2,"iters":1,"time_us":%s,"time_min_us":%s,"time_max_us":%s,"algbw_GBps":1,"busbw_GBps":1,"check":"ok","wrong":0}\n' "$@"
}
mkdir -p "$tmp/bk"
{ echo "$hello"; pt 1048576 5 4 6; pt 2097152 -5 1 1; echo '{"type":"end"}'; } \
	>"$tmp/bk/lines"
printf '#!/bin/sh\ncat "%s"\n' "$tmp/bk/lines" >"$tmp/bk/llmsim-backend-mpi"
chmod +x "$tmp/bk/llmsim-backend-mpi"
expect 1 "measure: a backend's bad point" env LLMSIM_BACKEND_DIR="$tmp/bk" \
	"$llmsim" measure --backend mpi --op sendrecv --ranks 2 --min 1M \
	--max 2M --launcher env --db "$tmp/bk.db"
grep -q "llmsim-backend-mpi:3: error: point: missing or bad 'time_us'" "$tmp/err" ||
	{ bad "measure: the bad point's line not named"; cat "$tmp/err"; }
[ "$(sqlite3 "$tmp/bk.db" 'SELECT count(*) FROM measurements' 2>&1)" = 1 ] ||
	bad "measure: the good point of a run with a bad one was lost"
expect 2 "measure --import: a bad point" "$llmsim" measure --import \
	"$tmp/bk/lines" --system cpu-host --db "$tmp/bk2.db"
[ -e "$tmp/bk2.db" ] && bad "measure --import: a file with a bad point was stored"
{ echo "$hello"; pt 1048576 5 9 1; } >"$tmp/bk/order"
expect 2 "measure --import: times out of order" "$llmsim" measure --import \
	"$tmp/bk/order" --system cpu-host --db "$tmp/bk3.db"
grep -q "order:2: error: point: expected time_min_us <= time_us <= time_max_us, got 9, 5, 1" "$tmp/err" ||
	{ bad "measure: times out of order accepted"; cat "$tmp/err"; }

# ---- a SIGTERM to validate ends its training workers too (they ran on,
# reparented, to their next write). A worker that is gone, or a zombie
# this container's init does not reap, has ended.
"$llmsim" validate --kind training --jobs 2 --no-store >"$tmp/vout" 2>"$tmp/verr" &
vpid=$!
# Each case file gets its own pool of workers, so between two files there
# are none for a moment: poll (up to 60 s on a loaded machine) rather than
# look once after a fixed sleep, which caught such a gap in CI.
has_workers() { kids=$(ps -o pid= --ppid $vpid 2>/dev/null); [ -n "$kids" ]; }
sleep 1
wait_until 590 $vpid has_workers || bad "validate --jobs 2: no workers within 60 s"
kill -TERM $vpid
wait $vpid 2>/dev/null
vst=$?
sleep 1
# ... and says so, once, from validate itself (it died without a word):
# exit 143 = 128 + SIGTERM, no table on stdout
n=$(grep -c 'llmsim validate: interrupted while running the training cases; nothing was printed or stored' "$tmp/verr")
[ "$vst" = 143 ] && [ "$n" = 1 ] && [ ! -s "$tmp/vout" ] ||
	bad "validate after SIGTERM: exit $vst, $n interrupted lines"
# each worker gone within 30 s (a killed process ends when it is next
# scheduled)
for k in $kids; do
	wait_until 300 '' ended "$k" || {
		bad "validate: worker $k outlived a SIGTERM to its parent"
		kill "$k" 2>/dev/null; }
done

# ---- a kind's tables print (flushed) as it finishes: interrupted in the
# training cases, the kernel tables (~1 s) are on stdout, the summary not
"$llmsim" validate --kind kernel,training --jobs 2 --no-store >"$tmp/vout" 2>"$tmp/verr" &
vpid=$!
# the kernel kind's tables are flushed as it ends (~1 s here; poll up to
# 60 s on a loaded machine), then the training cases run for seconds more
wait_until 600 $vpid grep -q '^== .*: gemm on h100' "$tmp/vout"
sleep 0.5
kill -TERM $vpid
wait $vpid 2>/dev/null
vst=$?
n=$(grep -c 'llmsim validate: interrupted while running the training cases; the tables of the kinds before it are printed (no summary); nothing was stored' "$tmp/verr")
[ "$vst" = 143 ] && [ "$n" = 1 ] && grep -q '^== .*: gemm on h100' "$tmp/vout" &&
	! grep -q '^== summary' "$tmp/vout" && ! grep -q '^== cases.tsv' "$tmp/vout" ||
	bad "validate --kind kernel,training after SIGTERM: exit $vst, $n interrupted lines, $(grep -c '^== ' "$tmp/vout") tables"

exit $fail
