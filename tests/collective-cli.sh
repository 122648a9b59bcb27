#!/bin/sh
# collective-cli.sh - `llmsim collective` end to end: the rccl-tests
# table, --csv, --json, the database, and exit status 2 on bad input.
set -u
llmsim=${LLMSIM:-build/llmsim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

check() {	# check DESCRIPTION COMMAND...: the command must succeed
	what=$1
	shift
	if ! "$@" >"$tmp/out" 2>"$tmp/err"; then
		echo "FAIL: $what"; cat "$tmp/err"; fail=1
	fi
}

status() {	# status WANT DESCRIPTION ARGS...: exit status WANT, a message
	want=$1 what=$2
	shift 2
	"$llmsim" collective "$@" --no-store >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" != "$want" ] || { [ "$want" = 2 ] && ! grep -q error "$tmp/err"; }; then
		echo "FAIL: $what: exit $got, expected $want"; cat "$tmp/err"; fail=1
	fi
}

# The table: 1K..8K is four rows (x2), with rccl-tests' columns.
check "table" "$llmsim" collective --system mi300x-roce --op allreduce \
	--ranks 8 --min 1K --max 8K --no-store
rows=$(grep -vc '^#' "$tmp/out")
[ "$rows" = 4 ] || { echo "FAIL: table has $rows rows, expected 4"; fail=1; }
grep -q 'busbw' "$tmp/out" || { echo "FAIL: table header"; fail=1; }

# Two nodes through --set, CSV.
check "csv" "$llmsim" collective --system dgx-h100 --set system.nodes=2 \
	--op allgather --ranks 16 --min 1M --max 1M --csv --no-store
head -1 "$tmp/out" | grep -q '^size_B,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol$' ||
	{ echo "FAIL: csv header"; fail=1; }
[ "$(wc -l <"$tmp/out")" = 2 ] || { echo "FAIL: csv rows"; fail=1; }

# JSON: one object per size with the contract's keys.
check "json" "$llmsim" collective --system dgx-h100 --op sendrecv --ranks 2 \
	--min 8 --max 64 --step-factor 8 --json --no-store
for k in size_B count type time_us algbw_GBps busbw_GBps algorithm protocol; do
	grep -q "\"$k\"" "$tmp/out" || { echo "FAIL: json key $k"; fail=1; }
done

# Same input, same bytes.
"$llmsim" collective --system mi300x-roce --op alltoall --ranks 8 --min 1K \
	--max 1M --json --no-store >"$tmp/a" 2>&1
"$llmsim" collective --system mi300x-roce --op alltoall --ranks 8 --min 1K \
	--max 1M --json --no-store >"$tmp/b" 2>&1
cmp -s "$tmp/a" "$tmp/b" || { echo "FAIL: output not deterministic"; fail=1; }

# Stored: the database exists afterwards.
check "store" "$llmsim" collective --system mi300x-roce --op allreduce \
	--ranks 8 --min 1M --max 1M --db "$tmp/r.db"
[ -s "$tmp/r.db" ] || { echo "FAIL: no database written"; fail=1; }

# Bad input: exit 2 with a diagnostic.
status 2 "unknown op" --system mi300x-roce --op allreduced --ranks 8
status 2 "too many ranks" --system mi300x-roce --op allreduce --ranks 16
status 2 "bad size" --system mi300x-roce --op allreduce --ranks 8 --min 1X
status 2 "min above max" --system mi300x-roce --op allreduce --ranks 8 --min 8G --max 1K
status 2 "unknown system" --system no-such-system --op allreduce --ranks 8
status 2 "unknown algorithm" --system dgx-h100 --op allreduce --ranks 8 --algo rings
status 2 "algorithm that does not apply" --system mi300x-roce --op allreduce --ranks 8 --algo nvls
status 2 "bad dtype" --system dgx-h100 --op allreduce --ranks 8 --dtype floaty
status 2 "missing op" --system dgx-h100 --ranks 8
status 2 "bad set" --system dgx-h100 --set system.nodez=2 --op allreduce --ranks 8
status 0 "forced ring" --system dgx-h100 --op allreduce --ranks 8 --algo ring --proto ll128

# dispatch / combine: one row per token count, DeepEP's logical size; the
# GPU-initiated path is named in the table; deeper checks of the numbers
# are llmsim validate --kind dispatch's.
check "dispatch" "$llmsim" collective --system dgx-h800 --set nodes=2 \
	--op dispatch --ranks 16 --tokens 128,4096 --dtype fp8_e4m3 \
	--groups nodes --topk-groups 2 --no-store
[ "$(grep -vc '^#' "$tmp/out")" = 2 ] || { echo "FAIL: dispatch rows"; fail=1; }
grep -q 'deepep' "$tmp/out" || { echo "FAIL: dispatch path"; fail=1; }
check "combine json" "$llmsim" collective --system dgx-h100 --op combine \
	--ranks 8 --dispatcher deepep-ll --tokens 128 --json --no-store
for k in tokens ranks_hit nodes_hit send_B node_share; do
	grep -q "\"$k\"" "$tmp/out" || { echo "FAIL: combine json key $k"; fail=1; }
done
status 2 "dispatch: experts not a multiple of ranks" --system dgx-h100 \
	--op dispatch --ranks 6 --experts 256
status 2 "dispatch: topk above experts" --system dgx-h100 --op dispatch \
	--ranks 8 --experts 8 --topk 16
status 2 "dispatch: bad tokens" --system dgx-h100 --op dispatch --ranks 8 \
	--tokens 12,x
status 2 "dispatch: unknown dispatcher" --system dgx-h100 --op dispatch \
	--ranks 8 --dispatcher deepepp
status 2 "dispatch options on allreduce" --system dgx-h100 --op allreduce \
	--ranks 8 --tokens 128
status 2 "dispatch: topk-groups without groups" --system dgx-h100 \
	--op dispatch --ranks 8 --topk-groups 2
status 2 "dispatch: int8 rows" --system dgx-h100 --op dispatch --ranks 8 \
	--dtype int8

exit $fail
