#!/bin/sh
# presets.sh - every shipped config loads: `llmsim config show` on each
# preset of every kind (configs/, workloads/) and on every reference job
# (results/reference/training, moe, cp), through the real binary ($LLMSIM). The
# printed YAML must load back as the same kind (a file written with units
# is read back to the same values; schema tests check equality), and the
# printed JSON (--json) must load back and print identically.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
use_checkout_data
n=0

check() {	# check KIND FILE
	n=$((n + 1))
	if ! "$llmsim" config show "$2" --kind "$1" > "$tmp/out.yaml" 2> "$tmp/err"; then
		echo "FAIL: config show $2 (kind $1):"
		sed 's/^/    /' "$tmp/err" | head -5
		fail=1
		return
	fi
	if ! "$llmsim" config show "$tmp/out.yaml" --kind "$1" > /dev/null 2> "$tmp/err"; then
		echo "FAIL: the resolved $2 does not load back:"
		sed 's/^/    /' "$tmp/err" | head -5
		fail=1
	fi
	# --json too: quantities with their units, "inf" a string; it loads
	# back (as the kind given) and prints the same.
	if ! "$llmsim" config show "$2" --kind "$1" --json > "$tmp/out.json" 2> "$tmp/err" ||
	   ! "$llmsim" config show "$tmp/out.json" --kind "$1" --json > "$tmp/back.json" 2>> "$tmp/err" ||
	   ! cmp -s "$tmp/out.json" "$tmp/back.json"; then
		echo "FAIL: the resolved $2 as JSON does not load back the same:"
		sed 's/^/    /' "$tmp/err" | head -5
		fail=1
	fi
}

for f in "$root"/configs/gpus/*.yaml; do check gpu "$f"; done
for f in "$root"/configs/links/*.yaml; do check link "$f"; done
for f in "$root"/configs/fabrics/*.yaml; do check fabric "$f"; done
for f in "$root"/configs/collectives/*.yaml; do check collectives "$f"; done
for f in "$root"/configs/systems/*.yaml; do check system "$f"; done
for f in "$root"/workloads/models/*.yaml; do check model "$f"; done
for f in "$root"/workloads/frameworks/*.yaml; do check framework "$f"; done
for f in "$root"/configs/ep/*.yaml; do check ep_comm "$f"; done
for f in "$root"/workloads/jobs/*.yaml "$root"/results/reference/training/*.yaml \
	 "$root"/results/reference/moe/*.yaml "$root"/results/reference/cp/*.yaml; do
	check job "$f"
done
# The frameworks that run Megatron-Core's optimizer (MixedPrecisionOptimizer
# / DistributedOptimizer) step it with the same passes: megatron-bridge
# had none (one fused update) because it and optimizer_step were written
# on parallel branches.
opt_step() {	# the resolved optimizer_step section of framework $1
	"$llmsim" config show "$1" --kind framework |
		sed -n '/^optimizer_step:/,/^[^ ]/p' | sed '$d'
}
opt_step megatron-core > "$tmp/opt-core"
[ -s "$tmp/opt-core" ] || { echo "FAIL: megatron-core has no optimizer_step"; fail=1; }
for fw in megatron-bridge primus-megatron nemo-launcher-24 nemo-25; do
	opt_step "$fw" > "$tmp/opt-fw"
	cmp -s "$tmp/opt-core" "$tmp/opt-fw" ||
		{ echo "FAIL: $fw's optimizer_step differs from megatron-core's:"
		  diff "$tmp/opt-core" "$tmp/opt-fw" | sed 's/^/    /'; fail=1; }
done
# Listing every kind must work too.
if ! "$llmsim" config list > /dev/null 2> "$tmp/err"; then
	echo "FAIL: config list"; fail=1
fi
# `config --help` names every kind `config list` has (it named 5 of 10).
"$llmsim" config --help >"$tmp/help" 2>&1
for k in $("$llmsim" config list | sed -n 's/^\([a-z_]*\):$/\1/p'); do
	tr '\n' ' ' <"$tmp/help" | grep -q "KIND is [a-z_, ]*\b$k\b" ||
		{ echo "FAIL: config --help does not name the kind $k"; fail=1; }
done
echo "presets: $n configs shown and reloaded, $([ $fail = 0 ] && echo ok || echo FAILED)"
exit $fail
