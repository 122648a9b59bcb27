#!/bin/bash
#
# tests/hostile.sh - the binary as a hostile user drives it (issue 8):
# values that would overflow the engine's clock, output streams that fail,
# pipes for files, misleading messages, foreign databases, and MFU at long
# sequences. Each block names the defect it keeps fixed.
#
# Uses $LLMSIM (default build/llmsim) on the shipped presets (configs/,
# workloads/). Prints one line per failure; exits 1 if anything failed.

set -u

root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
case $llmsim in
/*) ;;
*) llmsim=$PWD/$llmsim ;;
esac
cd "$root" || exit 1
unset LLMSIM_DATA

tmp=$(mktemp -d) || exit 1
chmod 755 "$tmp"
trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT
fail=0
job=workloads/jobs/default.yaml

bad() {
	echo "FAIL: $*"
	fail=1
}

# expect WANT-STATUS DESCRIPTION CMD...: run CMD (stdout to $tmp/out,
# stderr to $tmp/err) and check its status, that it did not crash, and
# that stderr holds no sanitizer report.
expect() {
	local want=$1 what=$2 got
	shift 2
	timeout 120 "$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" != "$want" ]; then
		bad "$what: exit status $got, expected $want"
		sed 's/^/    | /' "$tmp/err" | head -5
		return 1
	fi
	if grep -qE 'Sanitizer|runtime error:' "$tmp/err"; then
		bad "$what: sanitizer report"
		sed 's/^/    | /' "$tmp/err" | head -10
		return 1
	fi
	return 0
}

# says DESCRIPTION TEXT: stderr of the last expect contains TEXT.
says() {
	grep -qF -- "$2" "$tmp/err" || {
		bad "$1: stderr lacks: $2"
		sed 's/^/    | /' "$tmp/err" | head -5
	}
}

# ---- 1. rates so small a step would outgrow the engine's clock

# The schema refuses them at the value (exit 2, --set:LINE:COL).
for set in 'system.gpu.hbm.bandwidth=1 B/s' 'system.gpu.hbm.bandwidth=1 kB/s' \
	'system.scale_up.link.lane_rate=1 bit/s' \
	'system.gpu.matrix_peak.bf16=1 MFLOP/s'; do
	key=${set%%=*}
	expect 2 "tiny rate $set" "$llmsim" run $job --no-store --set "$set" &&
		says "tiny rate $set" "--set:1:$((${#key} + 2)): error: '$key': expected"
done
# Within the bounds, a job whose step still outlasts the engine's range
# (2^62 ns, 146 years: Llama 3 8B at 1 GFLOP/s, 2^20-token sequences)
# fails at run time (exit 1) and says so.
expect 1 "step past the engine's range" "$llmsim" run $job --no-store \
	--set 'system.gpu.matrix_peak.bf16=1 GFLOP/s' \
	--set training.seq_len=1048576 &&
	says "step past the engine's range" "longer than the engine represents"
# Serving: 20 Poisson arrivals at 1e-9 requests/s span about
# 20 / 1e-9 = 2e10 s, past the 1e9 s (about 32 years) a drawn arrival
# may have (serve_req.c ARRIVAL_MAX_S, inside the engine's 2^62 ns =
# 4.6e9 s; it was an assertion in units_s_to_ns, exit 134, then exit 1
# at run time); an arrival rate of 1e-15/s puts even the first request
# past it. Bad input: exit 2, naming the key.
for rate in 1e-9 1e-15; do
	expect 2 "serving past the engine's range ($rate/s)" "$llmsim" run \
		workloads/jobs/serve-llama3-70b-h100.yaml --no-store \
		--set serving.arrival_rate=$rate --set serving.requests=20 &&
		says "serving past the engine's range ($rate/s)" \
			"llmsim simulates; raise arrival_rate"
done

# ---- 3. a failed write of the output is an error (exit 1), not success

if [ -w /dev/full ]; then
	for cmd in "run $job --no-store" "run $job --no-store --json" \
		"collective --system dgx-h100 --op allreduce --ranks 8 --csv --no-store" \
		"collective --system dgx-h100 --op allreduce --ranks 8 --json --no-store" \
		"config show $job" "config list" "config help gpu" "--version" \
		"--help" "run --help"; do
		# shellcheck disable=SC2086
		timeout 60 "$llmsim" $cmd >/dev/full 2>"$tmp/err"
		got=$?
		[ "$got" = 1 ] || bad "'$cmd > /dev/full': exit status $got, expected 1"
		grep -q "error: cannot write the output" "$tmp/err" ||
			bad "'$cmd > /dev/full': no message"
	done
fi
# A closed stdout: the output cannot be written (exit 1) and nothing the
# run opens (the database) takes stdout's descriptor.
"$llmsim" run $job --db "$tmp/closed.db" >&- 2>"$tmp/err"
got=$?
[ "$got" = 1 ] || bad "run with stdout closed: exit status $got, expected 1"
grep -q "error: cannot write the output" "$tmp/err" ||
	bad "run with stdout closed: no message"
if [ -s "$tmp/closed.db" ] && command -v sqlite3 >/dev/null; then
	[ "$(sqlite3 "$tmp/closed.db" 'PRAGMA integrity_check')" = ok ] ||
		bad "run with stdout closed: the database is damaged"
fi
# The other output stream, a trace file: a training step, an inference
# step and a serving run each fail when theirs cannot be written, and
# say the same: which file and why (/dev/full: ENOSPC).
if [ -w /dev/full ]; then
	for j in $job workloads/jobs/prefill-llama3-70b-h100.yaml \
		workloads/jobs/serve-llama3-8b-eagle-h100.yaml; do
		expect 1 "run $j --trace /dev/full" "$llmsim" run "$j" \
			--no-store --trace /dev/full &&
			says "run $j --trace /dev/full" \
				"error: cannot write the trace '/dev/full': No space left on device"
	done
fi

# ---- 5. cross-field errors point at the override and name the full key

expect 2 "hbm_usable above capacity" "$llmsim" run $job --no-store \
	--set 'system.gpu.hbm_usable=100 GB' &&
	says "hbm_usable above capacity" "--set:1:23: error: 'system.gpu.hbm_usable': expected at most 'system.gpu.hbm.capacity' (81559 MiB), got 100 GB"
expect 2 "max_clock below matrix_clock" "$llmsim" run $job --no-store \
	--set 'system.gpu.max_clock=1000 MHz' &&
	says "max_clock below matrix_clock" "--set:1:22: error: 'system.gpu.max_clock': expected at least 'system.gpu.matrix_clock' (1830 MHz), got 1000 MHz"
expect 2 "zero HBM bandwidth" "$llmsim" run $job --no-store \
	--set 'system.gpu.hbm.bandwidth=0 GB/s' &&
	says "zero HBM bandwidth" "--set:1:26: error: 'system.gpu.hbm.bandwidth': expected a bandwidth of at least 1 GB/s"

# ---- 7. MFU at most 1 at every sequence length

for s in 4096 32768 131072 1048576; do
	expect 0 "MFU at seq_len $s" "$llmsim" run $job --no-store --json \
		--set parallelism.tp=8 --set training.seq_len=$s \
		--set training.global_batch_size=8 || continue
	num() { grep -o "\"$1\":[[:space:]]*[0-9.e+-]*" "$tmp/out" | head -1 |
		sed 's/.*:[[:space:]]*//'; }
	mfu=$(num mfu) tf=$(num tflops_per_gpu) hfu=$(num hardware_tflops_per_gpu)
	# MFU <= 1, and model FLOPs <= executed FLOPs (recompute none).
	awk -v m="$mfu" -v h="$hfu" -v t="$tf" 'BEGIN {
		exit !(m != "" && m > 0 && m <= 1 && t <= h) }' ||
		bad "seq_len $s: mfu $mfu, model $tf TFLOP/s/GPU, executed $hfu"
done

# ---- 9. messages that say what is wrong

expect 2 "collective --min 0" "$llmsim" collective --system dgx-h100 \
	--op allreduce --ranks 8 --min 0 --no-store &&
	says "collective --min 0" "--min (-b): expected a size of at least 1 byte, got '0'"
if grep -q 'step-factor' "$tmp/err"; then
	bad "collective --min 0 still blames the step factor"
fi

# A pipe given as /dev/stdin is read like a file. (Process substitution
# makes stdin a pipe without running expect in a subshell of a pipeline,
# where its verdict would be lost.)
if expect 0 "config show /dev/stdin" "$llmsim" config show /dev/stdin \
	--kind gpu < <(printf 'name: piped\npreset: h100\n'); then
	grep -q '^name: piped' "$tmp/out" ||
		bad "config show /dev/stdin: did not read the pipe"
fi
expect 0 "run /dev/stdin" "$llmsim" run /dev/stdin --no-store < <(printf \
	'name: piped\nmodel: llama3-8b\nsystem: dgx-h100\nframework: megatron-core\ntraining: {seq_len: 2048, global_batch_size: 8}\nparallelism: {tp: 8}\n')

# A no-break space inside a quantity is shown, not hidden.
printf 'preset: h100\nhbm: {capacity: 80 GB, bandwidth: 12\302\240GB/s}\n' \
	>"$tmp/nbsp.yaml"
expect 2 "no-break space" "$llmsim" config show "$tmp/nbsp.yaml" --kind gpu &&
	says "no-break space" "got '12<U+00A0>GB/s'" &&
	says "no-break space" "U+00A0 (a no-break space) at column 37"

# A database in a directory it cannot write to: the error says what to
# do. As root the permission bits do not bind, so run as nobody.
mkdir "$tmp/ro"
runas=()
if [ "$(id -u)" = 0 ]; then
	if command -v setpriv >/dev/null; then
		runas=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	else
		runas=(skip)
	fi
fi
# nobody must be able to run the binary and read the presets: a checkout
# under a private folder (mktemp -d, a home of mode 700) is not, so give
# it a world-readable copy of the binary and the data beside it.
ro_llmsim=$llmsim
ro_root=$root
if [ "${runas[0]:-}" != skip ] &&
	! "${runas[@]}" test -x "$llmsim" -a -r "$root/$job" 2>/dev/null; then
	mkdir -p "$tmp/tree/build"
	cp "$llmsim" "$tmp/tree/build/llmsim" &&
		cp -R "$root/configs" "$root/workloads" "$tmp/tree/" &&
		chmod -R a+rX "$tmp/tree" ||
		bad "could not copy the binary for the read-only case"
	ro_llmsim=$tmp/tree/build/llmsim
	ro_root=$tmp/tree
fi
if [ "${runas[0]:-}" != skip ]; then
	"$ro_llmsim" run "$job" --db "$tmp/ro/r.db" >/dev/null 2>&1 ||
		bad "could not create the database for the read-only case"
	rm -f "$tmp/ro/r.db-wal" "$tmp/ro/r.db-shm"
	chmod 666 "$tmp/ro/r.db"
	chmod 555 "$tmp/ro"
	# In a subshell for the cd: its failure is counted here.
	if (cd "$ro_root" &&
		expect 1 "database in a read-only directory" "${runas[@]}" \
			"$ro_llmsim" run "$job" --db "$tmp/ro/r.db"); then
		says "database in a read-only directory" "check the permissions of the file and its directory, or use --db PATH"
	else
		fail=1
	fi
	# A reader needs no write access: db export of that database, its
	# folder read-only, reads it (immutable: no -wal beside it, so no
	# writer is at work) and leaves nothing behind; it failed with
	# "attempt to write a readonly database".
	if expect 0 "db export in a read-only directory" "${runas[@]}" \
		"$ro_llmsim" db export --view v_runs --db "$tmp/ro/r.db"; then
		[ "$(wc -l <"$tmp/out")" = 2 ] ||
			bad "db export in a read-only directory: $(wc -l <"$tmp/out") lines, expected the header and 1 run"
		[ ! -e "$tmp/ro/r.db-wal" ] && [ ! -e "$tmp/ro/r.db-shm" ] ||
			bad "db export in a read-only directory left a -wal or -shm file"
	fi
	chmod 755 "$tmp/ro"
else
	echo "hostile: no setpriv to drop root; read-only directory case not run"
fi

# ---- 10. a foreign SQLite file is refused and left as it was

if command -v sqlite3 >/dev/null; then
	sqlite3 "$tmp/foreign.db" 'CREATE TABLE t(x); INSERT INTO t VALUES (1);'
	before=$(cksum <"$tmp/foreign.db")
	expect 1 "foreign database" "$llmsim" run $job --db "$tmp/foreign.db" &&
		says "foreign database" "not an llmsim results database"
	[ "$(sqlite3 "$tmp/foreign.db" 'PRAGMA journal_mode')" = delete ] ||
		bad "foreign database: switched to WAL mode"
	[ "$(cksum <"$tmp/foreign.db")" = "$before" ] ||
		bad "foreign database: its bytes changed"
fi

exit $fail
