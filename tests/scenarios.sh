#!/bin/sh
# scenarios.sh - golden step simulations and bad layouts, run through the
# real binary ($LLMSIM).
#
# tests/scenarios/NAME/job.yaml   a job; NAME/expected.json is its
#                                 `llmsim run --json` output. Each is run
#                                 twice: the JSON and the Chrome trace must be
#                                 byte-identical between runs (determinism)
#                                 and the JSON equal to expected.json. When
#                                 NAME/full exists the job is also run with
#                                 --full (every GPU simulated) and must give
#                                 the same step time and breakdown.
#                                 (The "llmsim_version" line is left out
#                                 of the comparison: it names the build.)
# tests/scenarios/bad/NAME.yaml   a job llmsim must refuse with exit 2; its
#                                 first line is "# expect: TEXT", TEXT being
#                                 part of the diagnostic.
#
# LLMSIM_UPDATE_GOLDEN=1 rewrites expected.json from the current binary
# (after a deliberate model change; review the diff).
set -u
here=$(cd "$(dirname "$0")" && pwd)
llmsim=${LLMSIM:?set LLMSIM to the llmsim binary}
case $llmsim in /*) ;; *) llmsim=$(pwd)/$llmsim ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0

bad() {
	echo "FAIL $1: $2"
	fail=1
}

# The step time and breakdown lines of a --json output.
timing() {
	grep -E '"(step_time_s|compute_s|exposed_comm_s|bubble_s|optimizer_s|other_s)"' "$1"
}

golden() {
	dir=$1
	name=$(basename "$dir")
	for i in 1 2; do
		if ! "$llmsim" run "$dir/job.yaml" --json --no-store \
		     --trace "$tmp/$name.$i.trace" > "$tmp/$name.$i.json" \
		     2> "$tmp/$name.$i.err"; then
			bad "$name" "llmsim run failed: $(head -3 "$tmp/$name.$i.err")"
			return
		fi
	done
	cmp -s "$tmp/$name.1.json" "$tmp/$name.2.json" ||
		bad "$name" "two runs printed different JSON"
	cmp -s "$tmp/$name.1.trace" "$tmp/$name.2.trace" ||
		bad "$name" "two runs wrote different traces"
	# Every kind of collective the step ran (name, op and group size of
	# its trace events) is listed in the JSON: none dropped.
	kinds=$(grep -o '"name":"[^"]*","cat":"[^"]*","args":{[^}]*"op":"[^"]*","bytes":[^,]*,"group":[0-9]*' \
		"$tmp/$name.1.trace" | sed 's/"cat".*"op"/"op"/; s/"bytes":[^,]*,//' |
		sort -u | wc -l)
	listed=$(grep -c '"critical_path_s"' "$tmp/$name.1.json")
	[ "$kinds" -eq "$listed" ] ||
		bad "$name" "the trace has $kinds kinds of collective, the JSON lists $listed"
	# The build's version (it names the git revision) is not the model's.
	sed -i '/"llmsim_version":/d' "$tmp/$name.1.json"
	if [ "${LLMSIM_UPDATE_GOLDEN:-0}" = 1 ]; then
		cp "$tmp/$name.1.json" "$dir/expected.json"
		echo "updated $name/expected.json"
	elif ! diff -u "$dir/expected.json" "$tmp/$name.1.json" > "$tmp/$name.diff"; then
		bad "$name" "output differs from expected.json:"
		head -40 "$tmp/$name.diff"
	fi
	[ -e "$dir/full" ] || return
	if ! "$llmsim" run "$dir/job.yaml" --json --no-store --full \
	     > "$tmp/$name.full.json" 2> "$tmp/$name.full.err"; then
		bad "$name" "llmsim run --full failed: $(head -3 "$tmp/$name.full.err")"
		return
	fi
	timing "$tmp/$name.1.json" > "$tmp/$name.sym.t"
	timing "$tmp/$name.full.json" > "$tmp/$name.full.t"
	diff -u "$tmp/$name.sym.t" "$tmp/$name.full.t" > /dev/null ||
		bad "$name" "--full gives another step time: $(diff "$tmp/$name.sym.t" "$tmp/$name.full.t" | head -4)"
}

refused() {
	f=$1
	name=$(basename "$f" .yaml)
	want=$(sed -n '1s/^# expect: //p' "$f")
	[ -n "$want" ] || { bad "$name" "first line must be '# expect: TEXT'"; return; }
	"$llmsim" run "$f" --no-store > /dev/null 2> "$tmp/$name.err"
	rc=$?
	[ $rc -eq 2 ] || bad "$name" "exit status $rc, want 2 ($(head -2 "$tmp/$name.err"))"
	grep -qF -- "$want" "$tmp/$name.err" ||
		bad "$name" "diagnostic lacks '$want': $(head -3 "$tmp/$name.err")"
}

n=0
for dir in "$here"/scenarios/*/; do
	[ -f "$dir/job.yaml" ] || continue
	golden "${dir%/}"
	n=$((n + 1))
done
for f in "$here"/scenarios/bad/*.yaml; do
	[ -f "$f" ] || continue
	refused "$f"
	n=$((n + 1))
done
[ $fail -eq 0 ] && echo "scenarios: $n passed"
exit $fail
