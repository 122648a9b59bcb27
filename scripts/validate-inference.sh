#!/bin/sh
# validate-inference.sh - predicted vs measured for the inference
# reference cases (results/reference/inference/cases.tsv): output
# throughput of serving runs and single-request latency.
#
# For every case: llmsim run --json --no-store on its job, the metric the
# case names (a dotted path of the JSON, read with the jsonget tool), the
# measured value and the error, signed (predicted / measured - 1) and
# absolute. Cases are "scored" or "shown" (their workload is not known
# well enough to score, the reason in the table). The gates of issue 15:
# the median |error| of the scored throughput cases <= 15 %, every scored
# latency case <= 10 %. A case that fails to run is a failure. Misses are
# listed with the case's note.
#
# Environment: LLMSIM (the binary), LLMSIM_TOOLS (the tools folder, for
# jsonget); THROUGHPUT_MAX and LATENCY_MAX (fractions) replace the gates.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-$root/build/llmsim}
case $llmsim in /*) ;; *) llmsim=$(pwd)/$llmsim ;; esac
tools=${LLMSIM_TOOLS:-$root/build/tools}
case $tools in /*) ;; *) tools=$(pwd)/$tools ;; esac
dir=$root/results/reference/inference
tmax=${THROUGHPUT_MAX:-0.15}
lmax=${LATENCY_MAX:-0.10}
tp=$(mktemp)
lat=$(mktemp)
out=$(mktemp)
trap 'rm -f "$tp" "$lat" "$out"' EXIT INT TERM
failed=0

printf '%-46s %-6s %14s %14s %9s %8s\n' case gate predicted measured error '|error|'
while IFS='	' read -r id job metric measured kind gate note; do
	case $id in '#'*|'') continue ;; esac
	if ! "$llmsim" run "$dir/$job" --json --no-store >"$out" 2>&1; then
		printf '%-46s %-6s %14s %14s %9s\n' "$id" "$gate" FAILED "$measured" -
		sed 's/^/    /' "$out" | head -5
		failed=1
		continue
	fi
	if ! pred=$("$tools/jsonget" "$metric" <"$out" 2>/dev/null); then
		printf '%-46s %-6s %14s %14s %9s\n' "$id" "$gate" FAILED "$measured" -
		echo "    no '$metric' in the output"
		failed=1
		continue
	fi
	err=$(awk -v p="$pred" -v m="$measured" 'BEGIN { printf "%.4f", p / m - 1 }')
	awk -v id="$id" -v g="$gate" -v p="$pred" -v m="$measured" -v e="$err" \
	    'BEGIN { a = e < 0 ? -e : e; printf "%-46s %-6s %14.6g %14.6g %+8.1f%% %7.1f%%\n", id, g, p, m, 100 * e, 100 * a }'
	if [ "$gate" = scored ]; then
		if [ "$kind" = latency ]; then
			printf '%s\t%s\t%s\n' "$err" "$id" "$note" >> "$lat"
		else
			printf '%s\t%s\t%s\n' "$err" "$id" "$note" >> "$tp"
		fi
	fi
done < "$dir/cases.tsv"

gate=0
echo
awk -F '\t' '{ print ($1 < 0 ? -$1 : $1) }' "$tp" | sort -g |
awk -v mx="$tmax" '
	{ s[NR] = $1 }
	END {
		if (NR == 0) { print "throughput: no scored case ran"; exit 1 }
		n = NR
		med = n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
		printf "throughput: %d scored cases, median |error| %.1f %% (target <= %.0f %%), max %.1f %%\n", n, 100 * med, 100 * mx, 100 * s[n]
		exit med > mx
	}' || gate=1
awk -F '\t' -v mx="$lmax" '
	{ a = $1 < 0 ? -$1 : $1; n++; if (a > mx) { miss++; printf "  latency miss: %s %+.1f %% (%s)\n", $2, 100 * $1, $3 } }
	END {
		printf "latency: %d scored cases, %d within %.0f %%\n", n, n - miss, 100 * mx
		exit miss > 0
	}' "$lat" || gate=1
awk -F '\t' -v mx="$tmax" '{ a = $1 < 0 ? -$1 : $1; if (a > mx) printf "  throughput case past %.0f %%: %s %+.1f %% (%s)\n", 100 * mx, $2, 100 * $1, $3 }' "$tp"
[ $failed = 0 ] || gate=1
exit $gate
