#!/bin/sh
# validate-ep.sh - predicted vs measured MoE dispatch and combine
# bandwidth (results/reference/ep/cases.tsv: DeepEP's published V1 tables
# on H800, normal and low-latency kernels, and DeepEP's intranode rows on
# B200 from the Hybrid-EP page, at the published sizes).
#
# For every case: llmsim collective --op dispatch|combine with the case's
# system, ranks, dispatcher, SMs, tokens, hidden, top-k, experts and
# group-limited routing, --json --no-store; the predicted algbw (DeepEP's
# logical "bottleneck bandwidth", cli_collective.c) beside the measured
# one, and the error. Exits 1 when any case is off by more than 15 %
# (issue 9: DeepEP within 15 % at published sizes) or the median |error|
# exceeds 10 %, or a case fails to run.
#
# Environment: LLMSIM (default build/llmsim); MEDIAN_MAX and CASE_MAX
# (fractions) replace the gates; CASES replaces results/reference/ep.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
case $llmsim in /*) ;; *) llmsim=$(pwd)/$llmsim ;; esac
dir=$root/${CASES:-results/reference/ep}
median_max=${MEDIAN_MAX:-0.10}
case_max=${CASE_MAX:-0.15}
errs=$(mktemp)
extra=$(mktemp)
trap 'rm -f "$errs" "$extra"' EXIT INT TERM
failed=0

# run_cases TSV ERRS: one line per case of TSV, its error appended to
# ERRS; a case that fails to run sets failed=1.
run_cases() {
	tsv=$1
	sink=$2
	printf '%-36s %10s %10s %9s %10s %10s\n' case "pred GB/s" "meas GB/s" error \
		"pred us" "meas us"
	while IFS='	' read -r id sys nodes ranks op disp sms tokens hidden topk \
		experts groups tg dtype meas_gbps meas_us src; do
		case $id in '#'*|'') continue ;; esac
		set -- --system "$sys" --set "nodes=$nodes" --op "$op" \
			--ranks "$ranks" --dispatcher "$disp" --tokens "$tokens" \
			--hidden "$hidden" --topk "$topk" --experts "$experts" \
			--dtype "$dtype" --json --no-store
		[ "$sms" != 0 ] && set -- "$@" --sms "$sms"
		[ "$groups" != 0 ] && set -- "$@" --groups "$groups" \
			--topk-groups "$tg"
		if ! out=$("$llmsim" collective "$@" 2>&1); then
			printf '%-36s %10s\n' "$id" FAILED
			printf '%s\n' "$out" | sed 's/^/    /' | head -5
			failed=1
			continue
		fi
		gbps=$(printf '%s\n' "$out" |
		       sed -n 's/^[[:space:]]*"algbw_GBps":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' |
		       head -n 1)
		us=$(printf '%s\n' "$out" |
		     sed -n 's/^[[:space:]]*"time_us":[[:space:]]*\([-0-9.eE+]*\).*/\1/p' |
		     head -n 1)
		if [ -z "$gbps" ]; then
			printf '%-36s %10s\n' "$id" FAILED
			failed=1
			continue
		fi
		err=$(awk -v p="$gbps" -v m="$meas_gbps" 'BEGIN { printf "%.4f", p / m - 1 }')
		printf '%s\n' "$err" >> "$sink"
		awk -v id="$id" -v p="$gbps" -v m="$meas_gbps" -v e="$err" -v u="$us" \
		    -v mu="$meas_us" 'BEGIN {
			printf "%-36s %10.1f %10.1f %+8.1f %% %10.1f %10s\n",
			       id, p, m, 100 * e, u, mu }'
	done < "$tsv"
}

run_cases "$dir/cases.tsv" "$errs"

awk '{ print ($1 < 0 ? -$1 : $1), $1 }' "$errs" | sort -g |
awk -v mmax="$median_max" -v cmax="$case_max" -v failed="$failed" \
    -v signed="$(sort -g "$errs" | awk '{ s[NR] = $1 } END {
	if (NR) print (NR % 2) ? s[(NR + 1) / 2] : (s[NR / 2] + s[NR / 2 + 1]) / 2 }')" '
	{ e[NR] = $1 }
	END {
		if (NR == 0) { print "no cases"; exit 1 }
		m = (NR % 2) ? e[(NR + 1) / 2] : (e[NR / 2] + e[NR / 2 + 1]) / 2
		printf "cases %d, signed median %+.1f %%, median |error| %.1f %% " \
		       "(target <= %.0f %%), max |error| %.1f %% (target <= %.0f %%)\n",
		       NR, 100 * signed, 100 * m, 100 * mmax, 100 * e[NR], 100 * cmax
		exit (failed || m > mmax || e[NR] > cmax) ? 1 : 0
	}'
rc=$?
if [ -f "$dir/extra-cases.tsv" ]; then
	echo
	echo "extra cases (not in the gate)"
	run_cases "$dir/extra-cases.tsv" "$extra"
fi
exit $rc
