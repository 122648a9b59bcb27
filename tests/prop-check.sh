#!/bin/sh
# prop-check.sh - invariants over a slice of the preset space, through the
# real binary ($LLMSIM): scripts/prop-check.py --quick (six models of
# every kind x NVIDIA Hopper / Blackwell and AMD MI300X systems x dtypes,
# training, serving, prefill, decode and collectives; what it checks is
# in the script's header). Exit 0, or 1 with each VIOLATION line.
# Skips (saying so) without python3.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
use_checkout_data
if ! command -v python3 > /dev/null; then
	echo "SKIPPED: prop-check.sh needs python3"
	exit 0
fi
if ! python3 "$root/scripts/prop-check.py" --quick --llmsim "$llmsim" \
	> "$tmp/out" 2>&1; then
	grep -v '^KNOWN' "$tmp/out"
	bad "scripts/prop-check.py --quick: an invariant does not hold"
fi
exit $fail
