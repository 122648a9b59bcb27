#!/bin/sh
# calibrate-p2p.sh - fitting a GPU generation's p2p channel send rate
# (gpu p2p_channel_send, src/network/pipe.c "p2p") from nccl-tests output,
# the way round 44 fitted the shipped values (configs/gpus/h100.yaml):
#
#  1. Truth: dgx-b200 with p2p_channel_send = 17 GB/s and p2p_launch =
#     12.5 us (the preset has 21.10 and 9.28). `llmsim collective`
#     predicts a 2-rank all-to-all from 1 KiB to 512 MiB; each time is scaled by a deterministic +-3 % (an LCG in
#     awk) and printed as nccl-tests prints it (its "#  Rank" lines, then
#     size count type redop root and the out-of-place and in-place time
#     algbw busbw #wrong).
#  2. scripts/coll-table-jsonl.py --nccl-tests reads it into measure
#     lines; `llmsim measure --import` stores them; `llmsim calibrate
#     --params gpu.p2p_channel_send,gpu.p2p_launch` recovers each truth
#     inside its 95 % interval, and each preset value lies outside it.
#  3. A reference table (results/reference/collectives/) converts to as
#     many points as it has rows of at least --min-bytes.
#  4. Bad input: output that is not nccl-tests' (exit 2), an op without
#     a busbw factor (exit 2); a GPU without the key (A100) fits from a
#     start its system file gives.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"
conv="$(dirname "$0")/../scripts/coll-table-jsonl.py"
command -v python3 >/dev/null 2>&1 || { echo "SKIPPED: no python3"; exit 0; }

# 1. The truth as nccl-tests output.
"$llmsim" collective --system dgx-b200 --set 'gpu.p2p_channel_send=17 GB/s' \
	--set 'gpu.p2p_launch=12.5 us' --op alltoall --ranks 2 --min 1K --max 512M --csv --no-store \
	>"$tmp/truth.csv" || bad "collective (the truth)"
awk 'BEGIN { FS = ","; seed = 12345
	print "# nThread 1 nGpus 2 minBytes 1024 maxBytes 536870912 step: 2(factor)"
	print "#  Rank  0 Group  0 Pid  101 on node-a device  0 [0x18] NVIDIA B200"
	print "#  Rank  1 Group  0 Pid  101 on node-a device  1 [0x2a] NVIDIA B200"
	print "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong" }
NR > 1 {
	seed = (seed * 1103515245 + 12345) % 2147483648
	t = $4 * (1 + 0.06 * (seed / 2147483648 - 0.5))
	printf "%12d  %12d  %8s  %6s  %6d  %7.2f  %6.2f  %6.2f  %5s  %7.2f  %6.2f  %6.2f  %5s\n",
		$1, $2, "float", "none", -1, t, $1 / t / 1e3, $1 / t / 2e3, "N/A",
		t, $1 / t / 1e3, $1 / t / 2e3, "N/A" }' "$tmp/truth.csv" >"$tmp/nt.txt"

# 2. Import and fit.
python3 "$conv" --nccl-tests alltoall "$tmp/nt.txt" >"$tmp/nt.jsonl" ||
	bad "coll-table-jsonl.py --nccl-tests: exit $?"
n=$(grep -c '"type": "point"' "$tmp/nt.jsonl")
[ "$n" = "$(($(wc -l <"$tmp/truth.csv") - 1))" ] ||
	bad "coll-table-jsonl.py: $n points of $(($(wc -l <"$tmp/truth.csv") - 1)) rows"
grep -q '"ranks": 2, "nodes": 1, "devices_per_node": 2' "$tmp/nt.jsonl" ||
	bad "coll-table-jsonl.py: the hello's layout is not 2 ranks on 1 node"
"$llmsim" measure --import "$tmp/nt.jsonl" --system dgx-b200 --db "$tmp/p.db" \
	>/dev/null 2>&1 || bad "measure --import"
if "$llmsim" calibrate --db "$tmp/p.db" \
	--params gpu.p2p_channel_send,gpu.p2p_launch -o "$tmp/p.yaml" >"$tmp/out" 2>&1; then
	for kv in p2p_channel_send:17e9:21.10e9 p2p_launch:12.5e-6:9.28e-6; do
		key=${kv%%:*} rest=${kv#*:} want=${rest%%:*} preset=${rest#*:}
		line=$(grep "key: gpu.$key," "$tmp/p.yaml")
		echo "$line" | sed 's/.*ci95: \[\([^,]*\), \([^]]*\)\].*/\1 \2/' |
			awk -v w="$want" -v p="$preset" \
			'{ exit !(w >= $1 && w <= $2 && !(p >= $1 && p <= $2)) }' ||
			bad "$key: truth $want outside the interval or the preset $preset inside ($line)"
	done
else
	bad "calibrate: exit $?"; cat "$tmp/out"
fi

# 3. A reference table: the rows of at least 128 KiB (4 ranks' Simple).
tab="$(dirname "$0")/../results/reference/collectives/aic-nccl2.29.2-b200-alltoall-4g.yaml"
python3 "$conv" "$tab" --min-bytes 131072 >"$tmp/t.jsonl" || bad "table: exit $?"
want=$(awk '/^  - \[/ { gsub(/[][,]/, " "); if ($2 >= 131072) n++ } END { print n }' "$tab")
[ "$(grep -c '"type": "point"' "$tmp/t.jsonl")" = "$want" ] ||
	bad "table: not its $want rows of at least 128 KiB"
grep -q '"host": "C-AIC-NCCL2292-B200-4G-ALLTOALL"' "$tmp/t.jsonl" ||
	bad "table: the hello does not name the table"

# 4. Bad input.
printf 'hello\n' >"$tmp/junk.txt"
python3 "$conv" --nccl-tests alltoall "$tmp/junk.txt" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'not nccl-tests output' "$tmp/err" ||
	bad "junk as nccl-tests output: not exit 2 with a reason"
python3 "$conv" --nccl-tests broadcast "$tmp/nt.txt" >/dev/null 2>&1
[ $? = 2 ] || bad "an op the converter has no busbw factor for: not exit 2"
# A GPU without the key (A100) fits from a start value its system file
# gives (the B200 points on it: only that the fit runs and moves).
"$llmsim" measure --import "$tmp/nt.jsonl" --system dgx-a100 --db "$tmp/a.db" \
	>/dev/null 2>&1 || bad "measure --import on dgx-a100"
printf 'preset: dgx-a100\ngpu:\n  p2p_channel_send: 9 GB/s\n' >"$tmp/a100.yaml"
"$llmsim" calibrate --db "$tmp/a.db" --system "$tmp/a100.yaml" \
	--params gpu.p2p_channel_send -o "$tmp/a.yaml" >"$tmp/out" 2>&1 ||
	{ bad "calibrate from a start value: exit $?"; cat "$tmp/out"; }
grep -q 'start: 9000000000}' "$tmp/a.yaml" ||
	bad "calibrate from a start value: not started at 9 GB/s"
exit $fail
