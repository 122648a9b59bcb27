#!/bin/bash
#
# tests/bad-inputs.sh - run `llmsim config show` on every case of the
# bad-input corpus (tests/bad/EXPECT) and check, for each: the exit status,
# that it is below 128 (no crash, no signal), that stderr holds no
# sanitizer report, that stderr contains each expected line (with its
# file:line:col), and that a failed run printed nothing on stdout. Every
# file in tests/bad/ must be named by some case.
#
# Uses $LLMSIM (default build/llmsim) with LLMSIM_DATA=tests/data, the
# fixture presets. Prints one line per failure and a one-line summary;
# exits 1 if anything failed.

set -u

root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
case $llmsim in
/*) ;;
*) llmsim=$PWD/$llmsim ;;
esac
cd "$root" || exit 1
export LLMSIM_DATA=tests/data

if [ ! -x "$llmsim" ]; then
	echo "bad-inputs: no llmsim binary at $llmsim" >&2
	exit 1
fi

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

cases=0
failed=0	# cases that failed
problems=0	# checks that failed
files=0

fail() {
	echo "FAIL [$label]: $*"
	problems=$((problems + 1))
}

# Run the case held in file, kind, arg, args, status, stderrs.
run_case() {
	local target=$arg got i before=$problems
	local -a cmd

	[ -n "$file" ] && target=tests/bad/$file
	label="${file:-$arg}${args:+ $args}"
	cases=$((cases + 1))
	cmd=("$llmsim" config show "$target")
	[ -n "$kind" ] && cmd+=(--kind "$kind")
	if [ -n "$args" ]; then
		eval "set -- $args"
		cmd+=("$@")
	fi
	timeout 60 "${cmd[@]}" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ge 128 ] || [ "$got" -eq 124 ]; then
		fail "crashed or hung: exit status $got"
		failed=$((failed + 1))
		sed 's/^/    | /' "$tmp/err" | head -20
		return
	fi
	if grep -qE 'Sanitizer|runtime error:' "$tmp/err"; then
		fail "sanitizer report:"
		failed=$((failed + 1))
		sed 's/^/    | /' "$tmp/err" | head -20
		return
	fi
	[ "$got" = "$status" ] || fail "exit status $got, expected $status"
	if [ "$status" != 0 ] && [ -s "$tmp/out" ]; then
		fail "printed to stdout although it failed"
	fi
	for ((i = 0; i < ${#stderrs[@]}; i++)); do
		grep -qF -- "${stderrs[i]}" "$tmp/err" ||
			fail "stderr lacks: ${stderrs[i]}"
	done
	if [ "$problems" -gt "$before" ]; then
		failed=$((failed + 1))
		sed 's/^/    | /' "$tmp/err" | head -20
	fi
}

reset_case() {
	file= kind= arg= args= status=
	stderrs=()
}

reset_case
while IFS= read -r line || [ -n "$line" ]; do
	case $line in
	'#'*) continue ;;
	'')
		[ -n "$file$arg" ] && run_case
		reset_case
		continue
		;;
	esac
	key=${line%%:*}
	value=${line#*:}
	value=${value# }
	case $key in
	file) file=$value ;;
	arg) arg=$value ;;
	kind) kind=$value ;;
	args) args=$value ;;
	status) status=$value ;;
	stderr) stderrs+=("$value") ;;
	uses) ;;
	*) echo "bad-inputs: tests/bad/EXPECT: unknown field '$key'" >&2
	   exit 1 ;;
	esac
done <tests/bad/EXPECT
[ -n "$file$arg" ] && run_case

# Every corpus file is named by a case (as file: or uses:).
for f in tests/bad/*; do
	name=${f#tests/bad/}
	case $name in EXPECT|README.md) continue ;; esac
	files=$((files + 1))
	if ! grep -qE "^(file: |uses: .*)$name( |\$)" tests/bad/EXPECT; then
		label=$name
		fail "no case in tests/bad/EXPECT names this file"
		failed=$((failed + 1))
	fi
done

echo "bad-inputs: $cases cases over $files files: $((cases - failed)) passed, $failed failed"
[ "$problems" -eq 0 ]
