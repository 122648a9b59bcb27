#!/bin/sh
# completion.sh - the bash completion `llmsim help --bash-completion`
# writes (src/cli/cli_doc.c), loaded in bash and asked as bash asks it
# (COMP_WORDS, COMP_CWORD), with the llmsim under test first in PATH:
#   - presets after --system and for run/plan JOB (`config list KIND`
#     prints bare names: the completion used to keep only indented lines
#     and offered none), and for `config show` (`config list`: indented
#     names under "kind:" headings)
#   - validate --kind offers validate's kinds, config --kind the config
#     kinds, `config list|help` the config kinds
#   - collective --op and measure --op their own ops; measure's --m/--n/--k
#   - --objective, --dispatcher
#   - --view: the views of the database --db names on the line (a
#     sweep's own v_sweep_NAME), not results/llmsim.db's
# And `llmsim help WORD`: a command's usage, or for a typo exit 2 with
# "did you mean" (it printed the list and exited 0).
# Quiet on success; one line per failure.
#
# Environment: LLMSIM (the binary; default build/llmsim).
set -u
here=$(cd "$(dirname "$0")" && pwd)
LLMSIM=${LLMSIM:-build/llmsim}
. "$here/lib.sh"
use_checkout_data
command -v bash >/dev/null || { echo "completion: SKIP: no bash"; exit 0; }
mkdir -p "$tmp/bin"
ln -s "$llmsim" "$tmp/bin/llmsim"
"$llmsim" help --bash-completion >"$tmp/comp.bash" ||
	{ echo "FAIL: llmsim help --bash-completion"; exit 1; }
bash -n "$tmp/comp.bash" || bad "the completion does not parse"

# offered WORD...: what the completion offers for the command line WORDs
# (the last one is the word being completed), one a line, sorted.
offered() {
	PATH=$tmp/bin:$PATH bash -c '. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _llmsim
		printf "%s\n" "${COMPREPLY[@]}"' - "$tmp/comp.bash" "$@" | sort
}
# has WORD EXPECTED...: every EXPECTED is offered for llmsim WORD...
has() {
	_line=$1
	shift
	# shellcheck disable=SC2086
	offered llmsim $_line >"$tmp/got"
	for _w in "$@"; do
		grep -qx -- "$_w" "$tmp/got" ||
			bad "'llmsim $_line': '$_w' not offered (got: $(tr '\n' ' ' <"$tmp/got"))"
	done
}
# lacks WORD UNEXPECTED...
lacks() {
	_line=$1
	shift
	# shellcheck disable=SC2086
	offered llmsim $_line >"$tmp/got"
	for _w in "$@"; do
		grep -qx -- "$_w" "$tmp/got" && bad "'llmsim $_line': '$_w' offered"
	done
}

has "collective --system dgx-h1" dgx-h100
has "run llama3.1-405b" llama3.1-405b-16k llama3.1-405b-131k
has "plan deepseek" deepseek-v3-2048
has "config show qwen3-3" qwen3-30b-a3b qwen3-32b
lacks "config show g" "gpu:"
has "validate --kind l" latency
lacks "validate --kind g" gpu
has "config show x --kind e" engine ep_comm
has "config list e" engine ep_comm
has "config help f" fabric framework
has "collective --op d" dispatch
lacks "collective --op g" gemm
has "measure --op g" gemm
has "measure --" --m --n --k --backend
has "plan --objective c" cost
has "collective --dispatcher deep" deepep deepep-ll

# --view with --db: that database's views.
cat >"$tmp/s.yaml" <<YAML
name: compl
base: $root/workloads/jobs/default.yaml
grid: {training.micro_batch_size: [1, 2]}
YAML
"$llmsim" sweep "$tmp/s.yaml" --db "$tmp/c.db" -j 1 >/dev/null 2>&1 || bad "sweep compl"
has "db export --db $tmp/c.db --view v_sw" v_sweep_compl v_sweep_points

"$llmsim" help sweep >"$tmp/out" 2>&1 && grep -q '^usage: llmsim sweep' "$tmp/out" ||
	bad "help sweep: $(head -1 "$tmp/out")"
"$llmsim" help swep >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && [ ! -s "$tmp/out" ] && grep -q "unknown command 'swep' (did you mean 'sweep'?)" "$tmp/err" ||
	bad "help swep: $(cat "$tmp/out" "$tmp/err" | head -2)"
"$llmsim" help --help >"$tmp/out" 2>&1 && grep -q '^usage: llmsim <command>' "$tmp/out" ||
	bad "help --help: $(head -1 "$tmp/out")"
exit $fail
