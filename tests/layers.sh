#!/bin/sh
#
# tests/layers.sh - the layer rule of docs/architecture.md holds for src/
# (scripts/check-layers.sh over the includes and the built objects next
# to $LLMSIM), and the check fails on each kind of violation planted in a
# throwaway copy of the tree (never in the tree itself):
#   - an upward include (engine includes cli/cli.h)
#   - a sideways include (gpu includes network/net.h)
#   - a relative include ("../base/diag.h")
#   - a call upward with no include at all (an engine object calling
#     cli_main through its own extern declaration)
#   - two files calling each other (a file cycle)
#   - a folder the table does not list
#   - a header guard that does not name the header's path
# Prints one line per failure; exits 1 if anything failed.

set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
case $llmsim in /*) ;; *) llmsim=$PWD/$llmsim ;; esac
objects=$(dirname "$llmsim")/obj/src
check=$root/scripts/check-layers.sh
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

bad() {
	echo "FAIL layers: $*"
	fail=1
}

# The tree as it is: no violation.
if ! "$check" --root "$root" --objects "$objects" > "$tmp/out" 2>&1; then
	bad "src/ breaks the layer rule:"
	cat "$tmp/out"
fi

# A fresh copy of src/, docs/ and the objects in $tmp/t.
fresh() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t/obj"
	cp -R "$root/src" "$root/docs" "$tmp/t/" &&
	cp -R "$objects/." "$tmp/t/obj/"
}

# expect_fail WHAT TEXT [--objects]: the check on the copy fails, naming TEXT.
expect_fail() {
	what=$1
	text=$2
	shift 2
	if "$check" --root "$tmp/t" "$@" > "$tmp/out" 2>&1; then
		bad "$what: the check passed"
	elif ! grep -qF -- "$text" "$tmp/out"; then
		bad "$what: the check failed without '$text':"
		cat "$tmp/out"
	fi
}

fresh || exit 1
echo '#include "cli/cli.h"' >> "$tmp/t/src/engine/sim.c"
expect_fail "upward include" "src/engine/sim.c:"
expect_fail "upward include" "engine may not include cli/cli.h"

fresh
echo '#include "network/net.h"' >> "$tmp/t/src/gpu/gpu.h"
expect_fail "sideways include" "gpu may not include network/net.h"

fresh
echo '#include "../base/diag.h"' >> "$tmp/t/src/models/layer.c"
expect_fail "relative include" "not a relative path"

# No include, only an extern declaration: the objects show the call.
fresh
cat > "$tmp/t/src/engine/planted.c" <<'C'
int cli_main(int argc, char **argv);
int planted(void);
int planted(void) { return cli_main(0, 0); }
C
"$cc" -c "$tmp/t/src/engine/planted.c" -o "$tmp/t/obj/engine/planted.o" ||
	bad "could not compile the planted file"
if ! "$check" --root "$tmp/t" > "$tmp/out" 2>&1; then
	bad "a call with no include failed the include-only check:"
	cat "$tmp/out"
fi
expect_fail "upward call" "src/engine/planted.c uses cli_main of src/cli/cli.c: engine may not use cli" \
	--objects "$tmp/t/obj"

fresh
printf 'int ping(int n);\nint pong(int n);\nint ping(int n) { return n ? pong(n - 1) : 0; }\n' \
	> "$tmp/t/src/base/ping.c"
printf 'int ping(int n);\nint pong(int n);\nint pong(int n) { return n ? ping(n - 1) : 1; }\n' \
	> "$tmp/t/src/base/pong.c"
"$cc" -c "$tmp/t/src/base/ping.c" -o "$tmp/t/obj/base/ping.o" &&
"$cc" -c "$tmp/t/src/base/pong.c" -o "$tmp/t/obj/base/pong.o" ||
	bad "could not compile the planted files"
expect_fail "file cycle" "src/base/ping.c -> src/base/pong.c" --objects "$tmp/t/obj"

fresh
sed 's/LLMSIM_NETWORK_PLAN_H/LLMSIM_PLAN_H/' "$root/src/network/plan.h" \
	> "$tmp/t/src/network/plan.h"
expect_fail "header guard" "include guard LLMSIM_PLAN_H, expected LLMSIM_NETWORK_PLAN_H"

fresh
mkdir "$tmp/t/src/extra"
echo 'int extra(void);' > "$tmp/t/src/extra/extra.h"
expect_fail "unknown folder" "src/extra/: not a layer of the table"

exit $fail
