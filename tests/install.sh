#!/bin/sh
# install.sh - `make install PREFIX=...` gives a working llmsim that finds
# its presets in PREFIX/share/llmsim from any directory, with its man page
# (man -l renders it) and bash completion; `make uninstall` removes every
# file it installed. Uses the build of $LLMSIM (BUILD = its directory).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
case $llmsim in /*) ;; *) llmsim=$PWD/$llmsim ;; esac
build=$(dirname "$llmsim")
. "$(dirname "$0")/lib.sh"
prefix=$tmp/prefix

make -s -C "$root" BUILD="$build" PREFIX="$prefix" install >"$tmp/log" 2>&1 ||
	{ cat "$tmp/log"; echo "FAIL: make install"; exit 1; }
for f in bin/llmsim share/llmsim/configs/gpus/h100.yaml \
	share/llmsim/workloads/jobs/default.yaml share/man/man1/llmsim.1 \
	share/bash-completion/completions/llmsim share/doc/llmsim/sweeps.md; do
	[ -e "$prefix/$f" ] || bad "not installed: $f"
done

# Run from elsewhere: presets by name, results in ./results/llmsim.db.
mkdir -p "$tmp/work"
(cd "$tmp/work" && env -u LLMSIM_DATA "$prefix/bin/llmsim" run default >/dev/null 2>"$tmp/err") ||
	bad "installed llmsim run default: $(cat "$tmp/err")"
[ -s "$tmp/work/results/llmsim.db" ] || bad "no results/llmsim.db in the working directory"
[ -e "$prefix/share/llmsim/results" ] && bad "wrote results into the installed data"
(cd "$tmp/work" && env -u LLMSIM_DATA "$prefix/bin/llmsim" config list system) |
	grep -q dgx-h100 || bad "installed llmsim does not list the system presets"
(cd "$tmp/work" && env -u LLMSIM_DATA "$prefix/bin/llmsim" sweep \
	"$prefix/share/llmsim/workloads/sweeps/gpu-generations.yaml" --list) >/dev/null 2>&1 ||
	bad "installed example sweep does not expand"

# The man page renders and has every command; the completion loads and
# completes a command and an option.
if command -v groff >/dev/null 2>&1; then
	groff -man -Tascii -P-c -P-b -P-u "$prefix/share/man/man1/llmsim.1" >"$tmp/man.txt" 2>"$tmp/err" ||
		bad "groff: $(cat "$tmp/err")"
	for c in run sweep collective report db config; do
		grep -q "^   $c" "$tmp/man.txt" || bad "man page has no section for $c"
	done
	grep -q "hidden_size" "$tmp/man.txt" || bad "man page lacks the config keys"
fi
if command -v bash >/dev/null 2>&1; then
	out=$(bash -c ". '$prefix/share/bash-completion/completions/llmsim'
		COMP_WORDS=(llmsim sw); COMP_CWORD=1; _llmsim; echo \${COMPREPLY[@]}
		COMP_WORDS=(llmsim run --req); COMP_CWORD=2; _llmsim; echo \${COMPREPLY[@]}" 2>&1)
	echo "$out" | grep -q '^sweep$' || bad "completion of 'sw': $out"
	echo "$out" | grep -q '^--require-fit$' || bad "completion of 'run --req': $out"
fi

make -s -C "$root" BUILD="$build" PREFIX="$prefix" uninstall >"$tmp/log" 2>&1 ||
	bad "make uninstall: $(cat "$tmp/log")"
left=$(find "$prefix" -type f | head -5)
[ -z "$left" ] || bad "left after uninstall: $left"
exit $fail
