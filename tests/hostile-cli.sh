#!/bin/bash
# hostile-cli.sh - a new user's first hour, done with hostility (round 5):
# every command's help, interruption of long work, and the edge cases
# that slipped past tests/hostile.sh and tests/bad. Each block names the
# defect it keeps fixed.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"

# ---- an unknown command names the nearest one when one is close, as an
# unknown preset or key does ('runn' only said "unknown command").
"$llmsim" runn default >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "unknown command 'runn' (did you mean 'run'?)" "$tmp/err" ||
	{ echo "FAIL: runn: $(cat "$tmp/err")"; fail=1; }
"$llmsim" xyzzy >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "unknown command 'xyzzy'; run 'llmsim --help'" "$tmp/err" ||
	{ echo "FAIL: xyzzy: $(cat "$tmp/err")"; fail=1; }

# ---- help texts are printed verbatim: no printf escapes left in them
# (run --help said "80 %% of this machine's memory").
for c in run sweep plan collective measure validate calibrate report db \
	config; do
	"$llmsim" "$c" --help >"$tmp/out" 2>&1 ||
		{ echo "FAIL: $c --help exits non-zero"; fail=1; }
	if grep -n '%%\|\\n\|%s\|%d' "$tmp/out"; then
		echo "FAIL: $c --help prints a printf escape"; fail=1
	fi
done

# ---- an interrupted sweep says what it did, stops its workers and
# resumes (it died silently with status 130: no totals, no word on what
# was stored). Ctrl-C reaches the whole process group (set -m: the job
# gets a group of its own, and SIGINT is not ignored in it as it is in
# a background job without job control); a scheduler's or kill's
# SIGTERM only the sweep itself.
here=$(cd "$(dirname "$0")" && pwd)
use_checkout_data
q() { sqlite3 -cmd '.timeout 10000' "$@"; }
cat >"$tmp/long.yaml" <<YAML
name: long
base: $root/workloads/jobs/llama3-70b-h100-64.yaml
grid:
  training.global_batch_size: [128, 256, 384, 512]
  system.gpu.hbm.bandwidth: [3 TB/s, 3.35 TB/s, 4 TB/s, 4.8 TB/s]
YAML
# interrupt SIGNAL HOW: start the sweep, wait for 2 stored points, send
# SIGNAL (HOW: group or parent), check what it says and leaves.
interrupt() {
	sig=$1 how=$2
	set -m
	"$llmsim" sweep "$tmp/long.yaml" -j 2 --db "$tmp/i.db" \
		>"$tmp/out" 2>"$tmp/err" &
	pid=$!
	set +m
	i=0
	while [ $i -lt 600 ]; do	# up to 60 s for 2 more points
		n=$(q "$tmp/i.db" "SELECT count(*) FROM sweep_points" 2>/dev/null)
		[ "${n:-0}" -ge $(($3 + 2)) ] && break
		sleep 0.1
		i=$((i + 1))
	done
	workers=$(ps -o pid= --ppid $pid 2>/dev/null)
	if [ "$how" = group ]; then kill -$sig -- -$pid; else kill -$sig $pid; fi
	wait $pid
	st=$?
	want=$((128 + $(kill -l $sig)))
	[ $st = $want ] || { echo "FAIL: sweep after $sig: status $st, expected $want"; fail=1; }
	sleep 0.5
	for w in $workers; do
		case $(ps -o stat= -p "$w" 2>/dev/null) in
		''|Z*) ;;
		*) echo "FAIL: worker $w outlived $sig of the sweep"; fail=1; kill -9 "$w" ;;
		esac
	done
	grep -q "sweep long: interrupted by $sig after [0-9]* of 16 points" "$tmp/err" &&
		grep -q "run the same command again to resume" "$tmp/err" ||
		{ echo "FAIL: sweep after $sig does not say so:"; cat "$tmp/err"; fail=1; }
	[ "$(q "$tmp/i.db" "PRAGMA integrity_check")" = ok ] ||
		{ echo "FAIL: integrity_check after $sig"; fail=1; }
	# What it says it stored is what the database holds.
	said=$(sed -n "s/.*interrupted by $sig after \([0-9]*\) of.*/\1/p" "$tmp/err")
	have=$(q "$tmp/i.db" "SELECT count(*) FROM sweep_points")
	[ "$said" = "$have" ] ||
		{ echo "FAIL: after $sig: says $said points, the database has $have"; fail=1; }
}
# SIGINT ignored by this shell (its bit, 2, in /proc's SigIgn mask; as
# when the tests run under nohup or as a script's background job): a
# sweep started here keeps ignoring it by design, so the INT case cannot
# run.
int_ignored() {
	m=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/$$/status 2>/dev/null)
	[ -n "$m" ] || return 1
	d=${m#"${m%?}"}
	[ $((0x$d & 2)) -ne 0 ]
}
# A sweep started with SIGINT ignored keeps ignoring it, its workers
# too: a group INT after the first stored point neither stops the sweep
# nor kills a worker (the workers used to reset it and die while the
# sweep went on, then failed with "worker 1 was killed by signal 2").
# All 4 points are stored and it exits 0.
ignored_int() {
	cat >"$tmp/short.yaml" <<YAML
name: short
base: $root/workloads/jobs/llama3-70b-h100-64.yaml
grid:
  training.global_batch_size: [128, 256, 384, 512]
YAML
	set -m
	(trap '' INT; exec "$llmsim" sweep "$tmp/short.yaml" -j 2 \
		--db "$tmp/ig.db" >"$tmp/out" 2>"$tmp/err") &
	pid=$!
	set +m
	i=0
	while [ $i -lt 600 ]; do
		n=$(q "$tmp/ig.db" "SELECT count(*) FROM sweep_points" 2>/dev/null)
		[ "${n:-0}" -ge 1 ] && break
		sleep 0.1
		i=$((i + 1))
	done
	kill -INT -- -$pid
	wait $pid
	st=$?
	[ $st = 0 ] || { echo "FAIL: sweep ignoring INT: status $st"; cat "$tmp/err"; fail=1; }
	n=$(q "$tmp/ig.db" "SELECT count(*) FROM sweep_points")
	[ "$n" = 4 ] || { echo "FAIL: sweep ignoring INT stored $n of 4 points"; fail=1; }
}
if command -v sqlite3 >/dev/null; then
	ignored_int
	if int_ignored; then
		echo "hostile-cli: SKIPPED the sweep after INT (SIGINT is ignored in this shell)"
		have=0
	else
		interrupt INT group 0
	fi
	interrupt TERM parent "$have"
	"$llmsim" sweep "$tmp/long.yaml" -j 2 --db "$tmp/i.db" >/dev/null 2>"$tmp/err" ||
		{ echo "FAIL: resume after interruption"; cat "$tmp/err"; fail=1; }
	grep -q "16 points.* $have resumed" "$tmp/err" ||
		{ echo "FAIL: resume did not skip the $have stored points"; cat "$tmp/err"; fail=1; }
else
	echo "hostile-cli: SKIPPED the interrupted sweep (no sqlite3)"
fi

# ---- report -o onto something that is not a regular file writes
# through it: it used to write PATH.tmp and rename it over PATH, which
# replaced a FIFO, a symlink or (as root) a device such as /dev/full
# with a regular file, and -o /dev/full said "wrote the report".
here=$(cd "$(dirname "$0")" && pwd)
use_checkout_data
"$llmsim" run "$root/workloads/jobs/default.yaml" --db "$tmp/r.db" \
	>/dev/null 2>&1 || { echo "FAIL: run for the report"; fail=1; }
mkfifo "$tmp/fifo"
timeout 20 cat "$tmp/fifo" >"$tmp/via-fifo" &
cat_pid=$!
timeout 60 "$llmsim" report --db "$tmp/r.db" -o "$tmp/fifo" 2>"$tmp/err" ||
	{ echo "FAIL: report -o FIFO"; cat "$tmp/err"; fail=1; }
[ -e "$tmp/fifo" ] && exec 3<>"$tmp/fifo"	# a reader that never came: unblock cat
wait $cat_pid
exec 3>&- 2>/dev/null
[ -p "$tmp/fifo" ] || { echo "FAIL: report -o FIFO replaced the FIFO"; fail=1; }
grep -q '</html>' "$tmp/via-fifo" ||
	{ echo "FAIL: report -o FIFO: nothing came through it"; fail=1; }
[ -e "$tmp/fifo.tmp" ] && { echo "FAIL: report -o FIFO left fifo.tmp"; fail=1; }
: >"$tmp/real.html"
ln -s real.html "$tmp/link.html"
"$llmsim" report --db "$tmp/r.db" -o "$tmp/link.html" 2>"$tmp/err" ||
	{ echo "FAIL: report -o symlink"; cat "$tmp/err"; fail=1; }
[ -L "$tmp/link.html" ] || { echo "FAIL: report -o symlink replaced the link"; fail=1; }
grep -q '</html>' "$tmp/real.html" ||
	{ echo "FAIL: report -o symlink: the file it names is not the report"; fail=1; }

# ---- measure --import: a directory says so (it said "expected a hello
# line and at least one point"); a bad line is quoted without its
# newline (the quote closed on the next line).
"$llmsim" measure --import "$tmp" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "$tmp: error: cannot read: Is a directory" "$tmp/err" ||
	{ echo "FAIL: measure --import DIR:"; cat "$tmp/err"; fail=1; }
printf 'garbage line\n' >"$tmp/imp.txt"
"$llmsim" measure --import "$tmp/imp.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "imp.txt:1: error: not a protocol line (a JSON object with a \"type\"): 'garbage line'$" "$tmp/err" ||
	{ echo "FAIL: measure --import garbage:"; cat "$tmp/err"; fail=1; }

# ---- measure --import without a hello line names a line (it said
# "FILE: error: expected a hello line and at least one point", no line,
# after printing the points under a header of "0 ranks (0 nodes x 0)").
pt='{"type":"point","op":"allreduce","dtype":"float","bytes":1048576,"count":262144,"ranks":2,"iters":20,"time_us":104.3,"time_min_us":103.6,"time_max_us":121.0,"algbw_GBps":10.05,"busbw_GBps":10.05,"check":"ok","wrong":0}'
printf '\n%s\n' "$pt" >"$tmp/nohello.jsonl"
"$llmsim" measure --import "$tmp/nohello.jsonl" --no-store >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "nohello.jsonl:2: error: a point with no hello line before it" "$tmp/err" &&
	! grep -q "0 ranks" "$tmp/out" ||
	{ echo "FAIL: measure --import without hello:"; cat "$tmp/out" "$tmp/err"; fail=1; }
: >"$tmp/empty.jsonl"
"$llmsim" measure --import "$tmp/empty.jsonl" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "empty.jsonl:1: error: expected a hello line, then points (docs/measure.md), got an empty file" "$tmp/err" ||
	{ echo "FAIL: measure --import empty:"; cat "$tmp/err"; fail=1; }
printf '%s\n' '{"type":"hello","protocol":1,"backend":"mpi","host":"vm","device":"cpu","library":"x","library_version":"1","library_path":"","runtime":"r","ranks":2,"nodes":1,"devices_per_node":2,"cpus":2,"iters":20,"warmup":5}' '{"type":"end","points":0}' >"$tmp/nopoint.jsonl"
"$llmsim" measure --import "$tmp/nopoint.jsonl" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "nopoint.jsonl:2: error: no point after the hello line (line 1)" "$tmp/err" ||
	{ echo "FAIL: measure --import hello only:"; cat "$tmp/err"; fail=1; }

# ---- a long serving run says what it does (300,000 requests ran 17 s
# without a word; the schema allows 1e8, hours): a line at the start
# past 50,000 requests, then one every 2 s of wall time.
"$llmsim" run "$root/workloads/jobs/serve-llama3-70b-h100.yaml" --no-store \
	--set serving.requests=60000 >"$tmp/out" 2>"$tmp/err" ||
	{ echo "FAIL: serving 60000 requests"; cat "$tmp/err"; fail=1; }
grep -q '^llmsim: serving: simulating 60000 requests on 1 instance' "$tmp/err" ||
	{ echo "FAIL: serving 60000 requests: no progress line"; cat "$tmp/err"; fail=1; }
"$llmsim" run "$root/workloads/jobs/serve-llama3-70b-h100.yaml" --no-store \
	--set serving.requests=1000 >"$tmp/out" 2>"$tmp/err"
[ -s "$tmp/err" ] && { echo "FAIL: serving 1000 requests is not quiet"; cat "$tmp/err"; fail=1; }

# ---- plan --pd-ratio --gpus N must fit the system and one instance
# (--gpus 3 with tp-8 instances, or 32 on a 16-GPU system, printed rows
# of 0 r/s and exited 0).
pd=$root/workloads/jobs/serve-llama3-70b-pd-h100.yaml
"$llmsim" plan "$pd" --no-store --pd-ratio --gpus 3 >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--gpus 3: fewer than the 8 GPUs of the smallest instance" "$tmp/err" ||
	{ echo "FAIL: --pd-ratio --gpus 3:"; cat "$tmp/out" "$tmp/err"; fail=1; }
"$llmsim" plan "$pd" --no-store --pd-ratio --gpus 32 >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--gpus 32: the system has 16 GPUs (2 nodes x 8); add --set system.nodes=4" "$tmp/err" ||
	{ echo "FAIL: --pd-ratio --gpus 32:"; cat "$tmp/out" "$tmp/err"; fail=1; }

# ---- plan --pd-ratio where the job's own (colocated) layout does not
# fit: it printed a row "colocated x0  0 GPUs  0 r/s". tp-8 colocated
# instances in 4 GPUs: none; tp-2 pools over scale-up: P1:D1 (2 + 2 = 4
# GPUs) is the only split (P2 leaves no GPU for a decode instance).
small="--no-store --pd-ratio --gpus 4 --set serving.requests=50
	--set serving.disaggregated.prefill.tp=2
	--set serving.disaggregated.decode.tp=2"
# shellcheck disable=SC2086
"$llmsim" plan "$pd" $small --set serving.disaggregated.transfer=scale_up \
	>"$tmp/out" 2>"$tmp/err"
[ $? = 0 ] && ! grep -q colocated "$tmp/out" &&
	[ "$(grep -c ' r/s ' "$tmp/out")" = 1 ] && grep -q '^P1:D1  *4 ' "$tmp/out" &&
	grep -q "note: colocated: an instance of the job's layout (tp x pp = 8 GPUs) does not fit in the 4 GPUs" "$tmp/err" ||
	{ echo "FAIL: --pd-ratio, colocated too large:"; cat "$tmp/out" "$tmp/err"; fail=1; }
# Over scale-out the prefill instance takes a whole node (8 GPUs, +2 for
# decode = 10 > 4): no deployment at all, exit 2.
# shellcheck disable=SC2086
"$llmsim" plan "$pd" $small >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "error: no deployment fits in the 4 GPUs: a colocated instance needs 8, one prefill and one decode instance 10" "$tmp/err" ||
	{ echo "FAIL: --pd-ratio, nothing fits:"; cat "$tmp/out" "$tmp/err"; fail=1; }

# ---- a lognormal or exponential length of mean 0 is refused: the
# lognormal's parameters were -inf and inf, every draw NaN, and NaN
# became a 1-token prompt below the job's own min (16): 8.5 input tokens
# a request on average, a silent wrong number.
for dist in lognormal exponential; do
	"$llmsim" run "$root/workloads/jobs/serve-llama3-70b-h100.yaml" --no-store \
		--set serving.input_len.dist=$dist --set serving.input_len.mean=0 \
		>"$tmp/out" 2>"$tmp/err"
	[ $? = 2 ] && grep -q "an\? $dist length needs mean > 0" "$tmp/err" ||
		{ echo "FAIL: $dist mean 0:"; cat "$tmp/err"; fail=1; }
done

# ---- round 8: messages that mislead.
# A bare name is a preset; one that is a folder or file here said only
# "no job preset 'NAME'": now a note says what is here and how to give it.
mkdir "$tmp/here" "$tmp/here/jobs"
(cd "$tmp/here" && "$llmsim" run jobs --no-store) >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "note: 'jobs' in this folder is a directory, not a config file; a bare name is a preset: give a config file as a path (./jobs)" "$tmp/err" ||
	{ echo "FAIL: run DIR by bare name:"; cat "$tmp/err"; fail=1; }
# --ranks past its bound said "expected a whole number of GPUs" of a
# whole number: the bound (2^22 = 4194304) is named.
"$llmsim" collective --system dgx-h100 --op allreduce --ranks 99999999 \
	--no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--ranks: expected a whole number of GPUs from 1 to 4194304, got '99999999'" "$tmp/err" ||
	{ echo "FAIL: collective --ranks 99999999:"; cat "$tmp/err"; fail=1; }
# An empty argument string ended import-megatron's options: --gpus 8
# became a Megatron argument and the error asked for --gpus.
"$llmsim" config import-megatron "" --gpus 8 >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "import-megatron needs the Megatron-LM arguments" "$tmp/err" ||
	{ echo "FAIL: import-megatron '':"; cat "$tmp/err"; fail=1; }
# A folder as an input of db merge said "cannot open the results
# database for writing".
"$llmsim" db merge "$tmp/m.db" "$tmp/here" >/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "here: error: a directory, not a results database to merge" "$tmp/err" ||
	{ echo "FAIL: db merge DIR:"; cat "$tmp/err"; fail=1; }
# An input that is not a database (or is empty) left a new, empty OUT.db
# behind: every input is checked before OUT is created.
echo "a: 1" >"$tmp/notdb.txt"
: >"$tmp/empty.db"
for in in notdb.txt empty.db; do
	"$llmsim" db merge "$tmp/new-out.db" "$tmp/$in" >/dev/null 2>"$tmp/err"
	[ $? = 1 ] && grep -q "nothing is merged" "$tmp/err" && [ ! -e "$tmp/new-out.db" ] ||
		{ echo "FAIL: db merge OUT $in:"; cat "$tmp/err"; ls "$tmp"; fail=1; }
done
# --db naming a config (the arguments swapped) made it a database when
# the file was missing or empty.
: >"$tmp/swapped.yaml"
"$llmsim" run "$root/workloads/jobs/default.yaml" --db "$tmp/swapped.yaml" \
	>/dev/null 2>"$tmp/err"
[ $? = 1 ] && grep -q "a .yaml file is a config, not a results database" "$tmp/err" &&
	[ ! -s "$tmp/swapped.yaml" ] ||
	{ echo "FAIL: --db FILE.yaml:"; cat "$tmp/err"; fail=1; }
# sweep - said "-: error: cannot read: No such file or directory" (run
# and plan read '-' as standard input).
"$llmsim" sweep - --db "$tmp/m.db" </dev/null >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "a sweep is read from a file, not standard input ('-')" "$tmp/err" ||
	{ echo "FAIL: sweep -:"; cat "$tmp/err"; fail=1; }
# moe.mtp_layers on a dense model ran without the MTP module, its cost
# dropped without a word (train.c costs MTP for MoE models only).
"$llmsim" run "$root/workloads/jobs/default.yaml" --no-store \
	--set moe.mtp_layers=1 >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q -- "--set:1:16: error: layout: mtp_layers 1 on a dense model" "$tmp/err" ||
	{ echo "FAIL: mtp_layers on a dense model:"; cat "$tmp/err"; fail=1; }
# calibrate reads its measurements: a missing --db was created (an
# empty, migrated database) before "no measurements to fit"; now bad
# input naming the file (exit 2).
"$llmsim" calibrate --db "$tmp/none.db" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "none.db: error: no results database here" "$tmp/err" &&
	[ ! -e "$tmp/none.db" ] ||
	{ echo "FAIL: calibrate --db missing:"; cat "$tmp/err"; ls "$tmp"; fail=1; }

exit $fail
