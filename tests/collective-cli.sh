#!/bin/sh
# collective-cli.sh - `llmsim collective` end to end: the rccl-tests
# table, --csv, --json, the database, and exit status 2 on bad input.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"

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
# The footer's average carries its unit after the number, as rccl-tests
# prints it otherwise.
grep -q '^# Avg bus bandwidth    : [0-9.e+-]* GB/s$' "$tmp/out" ||
	{ echo "FAIL: footer: $(grep Avg "$tmp/out")"; fail=1; }

# Sizes not given are rccl-tests' 32M (-b and -e); one bound alone keeps
# the other's default, or takes the given value where the default would
# put them out of order: -b 64M is the one size 67108864 B (it was
# refused as "larger than --max" though no --max was given), -e 1K the
# one size 1024 B, -b 16M runs 16M and 32M.
for c in ":33554432" "-b 64M:67108864" "-e 1K:1024" "-b 16M:16777216 33554432"; do
	a=${c%%:*} want=${c#*:}
	check "sizes '$a'" "$llmsim" collective --system dgx-h100 --op allreduce \
		--ranks 8 $a --no-store
	got=$(grep -v '^#' "$tmp/out" | awk '{ print $1 }' | tr '\n' ' ' | sed 's/ $//')
	[ "$got" = "$want" ] || { echo "FAIL: sizes '$a': '$got', expected '$want'"; fail=1; }
done
# One GPU: nothing crosses a link; refused (it printed 0.00 us for an
# all-reduce, inf GB/s and a NaN busbw for a dispatch).
for op in allreduce broadcast sendrecv dispatch; do
	status 2 "$op on one GPU" --system dgx-h100 --op $op --ranks 1
	grep -q -- "--ranks 1: $op needs at least 2 GPUs" "$tmp/err" ||
		{ echo "FAIL: $op on one GPU: message"; cat "$tmp/err"; fail=1; }
done
status 2 "sizes out of order" --system dgx-h100 --op allreduce --ranks 8 -b 4K -e 1K
grep -q -- "--min (4096 B) is larger than --max (1024 B)" "$tmp/err" ||
	{ echo "FAIL: sizes out of order: message"; cat "$tmp/err"; fail=1; }

# Two nodes through --set, CSV.
check "csv" "$llmsim" collective --system dgx-h100 --set system.nodes=2 \
	--op allgather --ranks 16 --min 1M --max 1M --csv --no-store
head -1 "$tmp/out" | grep -q '^size_B,count,type,time_us,algbw_GBps,busbw_GBps,algorithm,protocol,redop,root$' ||
	{ echo "FAIL: csv header"; fail=1; }
[ "$(wc -l <"$tmp/out")" = 2 ] || { echo "FAIL: csv rows"; fail=1; }

# JSON: an object naming what ran (schema version, llmsim version, config
# hash, op, system, ranks), around one row per size with the contract's keys.
check "json" "$llmsim" collective --system dgx-h100 --op sendrecv --ranks 2 \
	--min 8 --max 64 --step-factor 8 --json --no-store
for k in schema_version llmsim_version config_hash op system ranks rows \
	size_B count type redop root time_us algbw_GBps busbw_GBps algorithm \
	protocol; do
	grep -q "\"$k\"" "$tmp/out" || { echo "FAIL: json key $k"; fail=1; }
done
head -1 "$tmp/out" | grep -q '^{$' || { echo "FAIL: json is not an object"; fail=1; }

# rccl-tests' short options: -b 1K -e 8K -f 2 -g 8 -d bf16 is the same
# table as the long options, with redop sum and root -1 columns, and the
# out-of-place and in-place sets.
check "short options" "$llmsim" collective --system mi300x-roce --op allreduce \
	-g 8 -b 1K -e 8K -f 2 -d bf16 --no-store
grep -q 'out-of-place' "$tmp/out" && grep -q 'in-place' "$tmp/out" ||
	{ echo "FAIL: no out-of-place / in-place columns"; fail=1; }
row=$(grep -v '^#' "$tmp/out" | head -1)
set -- $row
[ "$1 $3 $4 $5" = "1024 bfloat16 sum -1" ] ||
	{ echo "FAIL: short options row '$row'"; fail=1; }
# 1 KiB of bfloat16 is 512 elements.
[ "$2" = 512 ] || { echo "FAIL: count $2, expected 512"; fail=1; }
set --

# The count column is the call's own, as nccl-tests / rccl-tests print it
# (args->nbytes / wordSize, paramcount): per rank where the buffer is split
# over the ranks. All-gather of 4 KiB of float over 8 ranks: 4096 / 4 / 8
# = 128 (it printed 1024, the whole buffer's count).
check "count per rank" "$llmsim" collective --system dgx-h100 --op allgather \
	--ranks 8 --min 4K --max 4K --no-store
set -- $(grep -v '^#' "$tmp/out")
[ "$1 $2" = "4096 128" ] || { echo "FAIL: allgather count '$1 $2', expected '4096 128'"; fail=1; }
set --

# Sizes with nothing per rank are left out with a warning: the testers
# call the library with count 0, which NCCL discards without a launch
# (enqueue.cc taskAppend); they were priced at the base latency
# (all-gather 8 ranks, float: 1..16 B printed as size 0 at 10.8 us).
# dgx-h100 runs NCCL, so the sizes are nccl-tests' (16 B a rank,
# all_gather.cu `(count/nranks) & ~(16/eltSize - 1)`): the first row is
# 128 B (8 x 16 B), count 4; 1..256 B is 9 sizes, 7 left out. With
# --tester elements (one element a rank) the first is 32 B, count 1.
check "no count-0 rows" "$llmsim" collective --system dgx-h100 --op allgather \
	--ranks 8 --min 1 --max 256 --no-store
got=$(grep -v '^#' "$tmp/out" | awk '{ print $1 ":" $2 }' | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "128:4 256:8" ] || { echo "FAIL: sizes from --min 1: '$got'"; fail=1; }
grep -q "warning: 7 sizes below 128 B left out: allgather over 8 ranks moves a multiple of it (16 B per rank, as nccl-tests runs it)" "$tmp/err" ||
	{ echo "FAIL: no warning for the left-out sizes"; cat "$tmp/err"; fail=1; }
check "one element a rank" "$llmsim" collective --system dgx-h100 --op allgather \
	--ranks 8 --min 1 --max 256 --no-store --tester elements
got=$(grep -v '^#' "$tmp/out" | awk '{ print $1 ":" $2 }' | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "32:1 64:2 128:4 256:8" ] || { echo "FAIL: sizes from --min 1, --tester elements: '$got'"; fail=1; }
grep -q "warning: 5 sizes below 32 B left out: .*(a whole float element per rank)" "$tmp/err" ||
	{ echo "FAIL: no warning for the left-out sizes (elements)"; cat "$tmp/err"; fail=1; }
status 2 "no whole element" --system dgx-h100 --op allgather --ranks 8 --min 1 --max 16 --tester elements
grep -q -- "--max (16 B) holds less than a whole float element per rank" "$tmp/err" ||
	{ echo "FAIL: message for --max 16"; cat "$tmp/err"; fail=1; }
# --max holds 256 elements, but the step factor leaps from --min (1 B,
# below one 4 B element of the 8 x 4 = 32 B granule) past it: the error
# names --min and the factor, not --max
status 2 "a step past --max" --system dgx-h100 --op allreduce --ranks 8 --min 1 --max 1K --step-factor 1e9
grep -q -- "no size from --min (1 B) by --step-factor 1e+09 up to --max (1024 B) holds a whole float element: allreduce over 8 ranks moves a multiple of 4 B" "$tmp/err" ||
	{ echo "FAIL: message for a step past --max"; cat "$tmp/err"; fail=1; }
# A row is the library's own test suite's row (--tester, default by the
# system's library). 1 MiB of bf16 all-gather over 6 ranks = 524288
# elements, 87381 a rank: nccl-tests v2.19.6 87381 & ~7 = 87376 (1048512
# B); rccl-tests @ ae3e635 87381 / 4 x 4 = 87380 (1048560 B); whole
# elements 87381 (1048572 B).
for c in "dgx-h100::1048512:87376" "mi300x-roce::1048560:87380" \
	"dgx-h100:--tester rccl-tests:1048560:87380" \
	"mi300x-roce:--tester elements:1048572:87381"; do
	sys=${c%%:*}; r=${c#*:}; t=${r%%:*}; want=${r#*:}
	# shellcheck disable=SC2086
	check "tester $sys $t" "$llmsim" collective --system "$sys" --op allgather \
		--ranks 6 --min 1M --max 1M --dtype bf16 --no-store $t
	got=$(grep -v '^#' "$tmp/out" | awk '{ print $1 ":" $2 }')
	[ "$got" = "$want" ] || { echo "FAIL: $sys $t: '$got', expected '$want'"; fail=1; }
done
status 2 "bad tester" --system dgx-h100 --op allgather --ranks 8 --tester nccl
grep -q -- "--tester: expected one of elements, nccl-tests, rccl-tests; got 'nccl'" "$tmp/err" ||
	{ echo "FAIL: message for --tester nccl"; cat "$tmp/err"; fail=1; }
# --group G splits a size over G operations (size / G bytes each): whole
# elements per operation. 4 broadcasts of float: 16 B is one element each
# (count 1); 4 and 8 B were timed as quarter and half elements.
check "group granule" "$llmsim" collective --system dgx-h100 --op broadcast \
	--group 4 --ranks 8 --min 4 --max 32 --no-store
got=$(grep -v '^#' "$tmp/out" | awk '{ print $1 ":" $2 }' | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "16:1 32:2" ] || { echo "FAIL: group sizes: '$got', expected '16:1 32:2'"; fail=1; }

# dtype spellings both ways give the same prediction.
"$llmsim" collective --system mi300x-roce --op allreduce --ranks 8 --min 1M \
	--max 1M --dtype bfloat16 --csv --no-store >"$tmp/a" 2>&1
"$llmsim" collective --system mi300x-roce --op allreduce --ranks 8 --min 1M \
	--max 1M --dtype bf16 --csv --no-store >"$tmp/b" 2>&1
cmp -s "$tmp/a" "$tmp/b" || { echo "FAIL: bf16 and bfloat16 differ"; fail=1; }

# The stored config names the collective: two ops on one system have two
# config hashes (docs/results-store.md promises equal hash = same input).
"$llmsim" collective --system mi300x-roce --op allreduce --ranks 8 --min 1M \
	--max 1M --db "$tmp/h.db" >/dev/null 2>&1
"$llmsim" collective --system mi300x-roce --op allgather --ranks 8 --min 1M \
	--max 1M --db "$tmp/h.db" >/dev/null 2>&1
"$llmsim" collective --system mi300x-roce --op allgather --ranks 4 --min 1M \
	--max 1M --db "$tmp/h.db" >/dev/null 2>&1
n=$(sqlite3 "$tmp/h.db" "SELECT count(DISTINCT config_hash) FROM runs")
[ "$n" = 3 ] || { echo "FAIL: $n distinct config hashes for 3 collectives"; fail=1; }
n=$(sqlite3 "$tmp/h.db" "SELECT count(*) FROM v_collectives WHERE system = 'mi300x-roce' AND redop IS NOT NULL")
[ "$n" = 3 ] || { echo "FAIL: v_collectives system/redop ($n rows)"; fail=1; }

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
status 2 "bad redop" --system dgx-h100 --op allreduce --ranks 8 -o summ
status 2 "root past the ranks" --system dgx-h100 --op broadcast --ranks 8 -r 8
# A rank or count past a long: (long)1e20 wrapped to LONG_MIN, which the
# range checks let through: --root ran and printed root
# -9223372036854775808, --group ran as one operation (exit 0 both).
status 2 "root past a long" --system dgx-h100 --op broadcast --ranks 8 \
	-r 99999999999999999999
status 2 "group past a long" --system dgx-h100 --op broadcast --ranks 8 \
	--group 99999999999999999999
status 2 "group past the ranks" --system dgx-h100 --op reduce --ranks 8 --group 9
status 2 "group 0" --system dgx-h100 --op broadcast --ranks 8 --group 0
status 2 "group on all-reduce" --system dgx-h100 --op allreduce --ranks 8 --group 2
status 2 "unknown short option" --system dgx-h100 --op allreduce --ranks 8 -q
status 2 "-b without a value" --system dgx-h100 --op allreduce --ranks 8 -b

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
# --gate round_robin (framework.balanced_gate's fixed gate): token t takes
# experts 6t .. 6t+5 mod 256; 8 ranks hold L = 32 each. Starts run over
# the even experts, 16 per block of 32; the 6 experts cross into the next
# GPU for starts 28 and 30 of each block: 1 + 2/16 = 1.125 GPUs a token.
# The random gate's k = 6 distinct experts reach 8 (1 - C(224,6)/C(256,6))
# = 8 (1 - 0.44500) = 4.440 GPUs.
check "dispatch round-robin gate" "$llmsim" collective --system dgx-h100 \
	--op dispatch --ranks 8 --topk 6 --gate round_robin --tokens 128 --json --no-store
grep -q '"ranks_hit":[[:space:]]*1.125,' "$tmp/out" ||
	{ echo "FAIL: round-robin gate: ranks_hit"; grep ranks_hit "$tmp/out"; fail=1; }
check "dispatch random gate" "$llmsim" collective --system dgx-h100 \
	--op dispatch --ranks 8 --topk 6 --gate random --tokens 128 --json --no-store
grep -q '"ranks_hit":[[:space:]]*4.440' "$tmp/out" ||
	{ echo "FAIL: random gate: ranks_hit"; grep ranks_hit "$tmp/out"; fail=1; }
status 2 "dispatch: unknown gate" --system dgx-h100 --op dispatch --ranks 8 \
	--gate rr
status 2 "dispatch: round-robin gate with groups" --system dgx-h100 \
	--op dispatch --ranks 8 --gate round_robin --groups nodes --topk-groups 1
status 2 "gate on allreduce" --system dgx-h100 --op allreduce --ranks 8 \
	--gate round_robin
status 2 "dispatch: experts not a multiple of ranks" --system dgx-h100 \
	--op dispatch --ranks 6 --experts 256
status 2 "dispatch: topk above experts" --system dgx-h100 --op dispatch \
	--ranks 8 --experts 8 --topk 16
status 2 "dispatch: bad tokens" --system dgx-h100 --op dispatch --ranks 8 \
	--tokens 12,x
# An empty list or a trailing comma is refused: --tokens '' ran the default
# 4096 tokens, exit 0.
status 2 "dispatch: empty tokens" --system dgx-h100 --op dispatch --ranks 8 \
	--tokens ''
status 2 "dispatch: tokens with a trailing comma" --system dgx-h100 \
	--op dispatch --ranks 8 --tokens 128,
status 2 "dispatch: unknown dispatcher" --system dgx-h100 --op dispatch \
	--ranks 8 --dispatcher deepepp
# DeepEP V1's normal kernels reach 8 GPUs of one NVLink domain
# (deepep.yaml scale_up_max_ranks); Hybrid-EP any.
status 2 "dispatch: deepep over 16 GPUs of an NVL72" --system gb200-nvl72 \
	--op dispatch --ranks 16 --experts 128
grep -q "spans at most 8 GPUs of one NVLink domain" "$tmp/err" ||
	{ echo "FAIL: deepep domain reach: $(cat "$tmp/err")"; fail=1; }
status 0 "dispatch: deepep over 8 GPUs of an NVL72" --system gb200-nvl72 \
	--op dispatch --ranks 8 --experts 64
# The dispatcher's settings after commas, as validate's dispatch cases
# write them (config_load_named): DeepEP built to reach 24 GPUs (the
# GB200 rows of results/reference/ep) runs over 16; a bad setting is
# refused at its value's column in the option's text.
status 0 "dispatch: deepep reaching 24 GPUs over 16 of an NVL72" \
	--system gb200-nvl72 --op dispatch --ranks 16 --experts 128 \
	--dispatcher deepep,scale_up_max_ranks=24
status 2 "dispatch: a bad dispatcher setting" --system dgx-h100 \
	--op dispatch --ranks 8 --dispatcher deepep,,sm_rate=fast
grep -q -- "--dispatcher:1:17: error: 'sm_rate'" "$tmp/err" ||
	{ echo "FAIL: dispatcher setting: message"; cat "$tmp/err"; fail=1; }
status 0 "dispatch: hybridep over 36 GPUs of an NVL72" --system gb200-nvl72 \
	--op dispatch --ranks 36 --experts 288 --dispatcher hybridep
status 2 "dispatch options on allreduce" --system dgx-h100 --op allreduce \
	--ranks 8 --tokens 128
status 2 "dispatch: topk-groups without groups" --system dgx-h100 \
	--op dispatch --ranks 8 --topk-groups 2
status 2 "dispatch: int8 rows" --system dgx-h100 --op dispatch --ranks 8 \
	--dtype int8
# Group-limited routing held to the model's n_group/topk_group rules (it
# ran --groups 3 of 256 experts with --topk-groups 5 as ungrouped routing
# and printed "top-5 of the groups"), and k within the groups' experts.
status 2 "dispatch: groups not dividing experts" --system dgx-h100 \
	--op dispatch --ranks 8 --groups 3 --topk-groups 1
status 2 "dispatch: topk-groups above groups" --system dgx-h100 \
	--op dispatch --ranks 8 --groups 8 --topk-groups 9
status 2 "dispatch: topk above the groups' experts" --system dgx-h100 \
	--op dispatch --ranks 8 --groups 64 --topk-groups 1
check "dispatch: DeepSeek-V3 groups" "$llmsim" collective --system dgx-h100 \
	--op dispatch --ranks 8 --groups 8 --topk-groups 4 --no-store

# A dispatcher that cannot run there is refused as a training job's
# layout check refuses it (JR_EP_VENDOR): DeepEP is NVIDIA's (NVSHMEM,
# sm90 PTX). An SM count past the GPU's (H100: 132 SMs) is refused
# rather than silently capped.
status 2 "dispatch: deepep on an AMD GPU" --system mi300x-roce \
	--op dispatch --ranks 8 --dispatcher deepep
grep -q "dispatcher 'deepep' runs on nvidia GPUs only" "$tmp/err" ||
	{ echo "FAIL: deepep on AMD: message"; cat "$tmp/err"; fail=1; }
status 0 "dispatch: alltoall on an AMD GPU" --system mi300x-roce \
	--op dispatch --ranks 8 --dispatcher alltoall
status 2 "dispatch: more SMs than the GPU has" --system dgx-h100 \
	--op dispatch --ranks 8 --sms 1000
grep -q -- "--sms 1000: the GPU (h100) has 132 SMs" "$tmp/err" ||
	{ echo "FAIL: --sms 1000: message"; cat "$tmp/err"; fail=1; }
status 0 "dispatch: every SM of the GPU" --system dgx-h100 \
	--op dispatch --ranks 8 --sms 132

exit $fail
