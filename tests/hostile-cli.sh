#!/bin/sh
# hostile-cli.sh - a new user's first hour, done with hostility (round 5):
# every command's help, interruption of long work, and the edge cases
# that slipped past tests/hostile.sh and tests/bad. Each block names the
# defect it keeps fixed.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"

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

exit $fail
