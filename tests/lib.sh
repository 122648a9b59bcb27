# tests/lib.sh - what the test scripts that drive the binary share;
# sourced (. "$(dirname "$0")/lib.sh"), never run itself: it is not
# executable, and make test runs only the executable tests/*.sh.
#
# After it: tmp, a fresh folder removed when the script ends; fail=0,
# which a failed check sets to 1; check.

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

check() {	# check DESCRIPTION COMMAND...: the command must succeed
	what=$1
	shift
	if ! "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: $what"; cat "$tmp/err"; fail=1
	fi
}
