#!/bin/sh
# nccl-import.sh - `llmsim measure --import` of nccl-tests' own text output
# (src/cli/measure_nccl.c), and calibrating from it:
#
#  1. nccl-tests 2.17's layout (tests/measure/nccl-tests-allgather-8xh100.txt:
#     "Collective test starting", Rank lines, redop / root columns): op,
#     ranks, per-rank count, iterations, check, library versions as the
#     output says them; stored.
#  2. An older layout (no test name, no redop / root, -c 0, 2 hosts x 2
#     GPUs): refused without --op (2); with --op 2 nodes x 2, check
#     "skipped", NCCL's version from its INFO line.
#  3. Two runs in one file: two runs stored.
#  4. `llmsim calibrate` from the imported all-gather (the GPU's ring LL
#     floor from NCCL's line, --start): converges, the fitted launch and
#     step inside the values the table implies (3-7 us, 0.4-1.5 us).
#  4a. Calibrating a key the GPU leaves unset without --start: 2, the hint.
#  4b. A count-0 row (nccl-tests prints sizes below 16 B a rank so, at
#     the launch's time): stored as printed, but validate does not score
#     it and calibrate does not fit it (the library moves nothing).
#  5. Bad input (2, the line named): a row whose time is not a number (or
#     "inf"), a test llmsim does not predict, --op gemm; a test name after
#     its run's header names that run only (the next run without one
#     still needs --op); a row whose size / count is not a whole number
#     up to 2^53 or whose type is too long; an error of the converted
#     stream at the file's line.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"
dir=$(dirname "$0")/measure
ag=$dir/nccl-tests-allgather-8xh100.txt
old=$dir/nccl-tests-old-2x2xa100.txt

# 1.
"$llmsim" measure --import "$ag" --system dgx-h100 --no-store --json >"$tmp/ag.json" 2>"$tmp/err" ||
	{ bad "import nccl-tests 2.17 text: exit $?"; cat "$tmp/err"; }
tr -d ' \t\n' <"$tmp/ag.json" >"$tmp/ag.flat"
for want in '"op":"allgather","dtype":"float","bytes":1024,"count":32,"ranks":8,"iters":20,"time_us":10.4' \
	'"bytes":65536,"count":2048' '"check":"ok"'; do
	grep -q "$want" "$tmp/ag.flat" || bad "nccl-tests 2.17 text: no $want"
done
[ "$(grep -o '"type":"point"' "$tmp/ag.flat" | wc -l)" = 7 ] || bad "nccl-tests 2.17 text: not 7 points"
"$llmsim" measure --import "$ag" --system dgx-h100 --no-store >"$tmp/out" 2>&1
grep -q 'allgather, 8 ranks (1 node x 8), nccl-tests backend' "$tmp/out" &&
	grep -q 'NCCL 2.29.2, nccl-tests 2.17.1; NVIDIA H100 80GB HBM3 on node-a' "$tmp/out" ||
	{ bad "nccl-tests 2.17 text: header"; cat "$tmp/out"; }
"$llmsim" measure --import "$ag" --system dgx-h100 --db "$tmp/ag.db" >/dev/null 2>&1 ||
	bad "nccl-tests 2.17 text: not stored"

# 2.
"$llmsim" measure --import "$old" --no-store >"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q 'give it with --op' "$tmp/err" ||
	{ bad "old layout without --op: not refused"; cat "$tmp/err"; }
"$llmsim" measure --import "$old" --op reducescatter --system dgx-a100 --no-store \
	>"$tmp/out" 2>"$tmp/err" || { bad "old layout with --op: exit $?"; cat "$tmp/err"; }
grep -q 'reducescatter, 4 ranks (2 nodes x 2)' "$tmp/out" &&
	grep -q 'NCCL 2.18.5+cuda12.2' "$tmp/out" && grep -q 'skipped' "$tmp/out" &&
	grep -q '20.30' "$tmp/out" || { bad "old layout: table"; cat "$tmp/out"; }

# 3.
cat "$ag" "$ag" >"$tmp/two.txt"
sed -i '1,/concluded/s/10.40/10.50/' "$tmp/two.txt"	# not the same run twice
"$llmsim" measure --import "$tmp/two.txt" --system dgx-h100 --db "$tmp/two.db" >/dev/null 2>"$tmp/err" ||
	{ bad "two runs: exit $?"; cat "$tmp/err"; }
grep -q 'stored as run 2' "$tmp/err" || { bad "two runs: not two"; cat "$tmp/err"; }

# 4.
if "$llmsim" calibrate --db "$tmp/ag.db" --params gpu.collective_launch,gpu.collective_ll_step \
	--start gpu.collective_launch=6.6us --start gpu.collective_ll_step=0.6us \
	--folds 0 -o "$tmp/cal.yaml" >"$tmp/out" 2>&1; then
	sed -n 's/.*key: gpu.collective_launch, value: \([^,]*\),.*/\1/p' "$tmp/cal.yaml" |
		awk '{ exit !($1 > 3e-6 && $1 < 7e-6) }' || { bad "calibrate: launch"; cat "$tmp/cal.yaml"; }
	sed -n 's/.*key: gpu.collective_ll_step, value: \([^,]*\),.*/\1/p' "$tmp/cal.yaml" |
		awk '{ exit !($1 > 0.4e-6 && $1 < 1.5e-6) }' || { bad "calibrate: step"; cat "$tmp/cal.yaml"; }
else
	bad "calibrate from nccl-tests text: exit $?"; cat "$tmp/out"
fi

# 4a. a fitted key the GPU leaves unset (H100 has no p2p_launch: absent =
# NCCL's base) needs a start: 2 naming --start, not 1 from the fit's --set
"$llmsim" calibrate --db "$tmp/ag.db" --params gpu.p2p_launch --folds 0 \
	-o "$tmp/none.yaml" >"$tmp/out" 2>&1
[ $? = 2 ] && grep -q 'give the fit a start with --start gpu.p2p_launch=VALUE' "$tmp/out" ||
	{ bad "calibrate an unset key: not refused with a hint"; cat "$tmp/out"; }

# 4b.
sed 's/^        1024            32     float    none      -1    10.40    0.10    0.09      0    10.21    0.10    0.09      0/           0             0     float    none      -1     0.20    0.00    0.00      0     0.20    0.00    0.00      0/' "$ag" >"$tmp/zero.txt"
grep -q '^           0             0' "$tmp/zero.txt" || bad "could not write the count-0 row"
"$llmsim" measure --import "$tmp/zero.txt" --system dgx-h100 --db "$tmp/zero.db" >/dev/null 2>&1 ||
	bad "count-0 row: not stored"
"$llmsim" validate --db "$tmp/zero.db" --kind measured --no-store >"$tmp/out" 2>&1
grep -q 'count 0: nothing moved, not scored' "$tmp/out" ||
	{ bad "count-0 row: scored by validate"; cat "$tmp/out"; }
"$llmsim" calibrate --db "$tmp/zero.db" --params gpu.collective_launch \
	--start gpu.collective_launch=6.6us --folds 0 -o "$tmp/zcal.yaml" >"$tmp/out" 2>&1
grep -q 'points: 6\b\|6 points' "$tmp/out" "$tmp/zcal.yaml" ||
	{ bad "count-0 row: fitted by calibrate"; grep -i point "$tmp/out" "$tmp/zcal.yaml" | head -5; }

# 5.
sed 's/^\(        2048  *64  *float  *none  *-1 \)   10.75/\1    fast /' "$ag" >"$tmp/badrow.txt"
grep -q ' fast ' "$tmp/badrow.txt" || bad "could not write the bad row"
"$llmsim" measure --import "$tmp/badrow.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'badrow.txt:20: error: an nccl-tests row' "$tmp/err" ||
	{ bad "a bad row: not refused at its line"; cat "$tmp/err"; }
sed 's/^\(        2048  *64  *float  *none  *-1 \)   10.75/\1     inf /' "$ag" >"$tmp/inf.txt"
grep -q ' inf ' "$tmp/inf.txt" || bad "could not write the inf row"
"$llmsim" measure --import "$tmp/inf.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'inf.txt:20: error: an nccl-tests row' "$tmp/err" ||
	{ bad "an inf time: not refused at its line"; cat "$tmp/err"; }
{ sed '3a # Collective test starting: all_gather_perf' "$old"; cat "$old"; } >"$tmp/late.txt"
"$llmsim" measure --import "$tmp/late.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'give it with --op' "$tmp/err" ||
	{ bad "a late test name: carried to the next run"; cat "$tmp/err"; }
# A row that does not read whole was skipped without a word (a count that
# is not a whole number), stored with a size of LONG_MAX (10^24 B: strtol
# saturates) or its type cut to 23 characters: refused at its line.
for r in 's/^\(        4096 *\)128 /\1 -5 /' 's/^        4096 /409600000000000000000000 /' \
	's/^\(        4096 *128 *\)float /\1ffffffffffffffffffffffffffffff /'; do
	sed "$r" "$ag" >"$tmp/row.txt"
	cmp -s "$ag" "$tmp/row.txt" && bad "could not write the row ($r)"
	"$llmsim" measure --import "$tmp/row.txt" --no-store >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q 'row.txt:21: error: an nccl-tests row whose size, count' "$tmp/err" ||
		{ bad "a row that does not read ($r): not refused at its line"; cat "$tmp/err"; }
done
# A run grows past the 256 points of before (a run of 257 rows was
# refused whole): 257 rows are one run of 257. An error of the converted
# stream cites the file's line, not the stream's: a run of 65540 rows (4
# more than a run holds) is refused at the 65537th row's line, 18 +
# 65537, once (each row past the most said it again: 65281 lines for
# this -i run of 65536 + 257).
rows() {
	{ sed -n 1,18p "$ag"
	  awk -v n="$1" 'BEGIN { for (i = 1; i <= n; i++) printf "%12d %13d     float    none      -1    10.40    0.10    0.09      0    10.21    0.10    0.09      0\n", i * 1024, i * 32 }'
	} >"$tmp/many.txt"
}
rows 257
"$llmsim" measure --import "$tmp/many.txt" --no-store --json >"$tmp/out" 2>"$tmp/err" &&
	[ "$(grep -c '"type":.*"point"' "$tmp/out")" = 257 ] ||
	{ bad "a run of 257 rows: not 257 points"; head -c 600 "$tmp/err"; }
rows 65540
"$llmsim" measure --import "$tmp/many.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'many.txt:65555: error: more than 65536 points in one run' "$tmp/err" &&
	[ "$(wc -l <"$tmp/err")" = 1 ] ||
	{ bad "a run past its most: not refused once at the file's line"; head -c 600 "$tmp/err"; }
# A device name past its 127 bytes is cut between characters: 70 "é"
# (140 bytes) were cut at byte 127, inside one, and the header printed
# and stored was not UTF-8.
long=$(printf '%070d' 0 | sed 's/0/é/g')
sed "s/\] NVIDIA H100 80GB HBM3/] $long/" "$ag" >"$tmp/utf8.txt"
"$llmsim" measure --import "$tmp/utf8.txt" --no-store >"$tmp/out" 2>"$tmp/err" ||
	{ bad "a UTF-8 device name: not imported"; cat "$tmp/err"; }
iconv -f UTF-8 -t UTF-8 "$tmp/out" >/dev/null 2>&1 ||
	bad "a UTF-8 device name: the table is not UTF-8"
grep -q "; $(printf '%063d' 0 | sed 's/0/é/g') on node-a" "$tmp/out" ||
	bad "a UTF-8 device name: not its first 63 characters: $(sed -n 2p "$tmp/out")"
# So is a Rank line past 511 bytes: its host name ("a" and 300 "é") was
# cut inside a character at byte 511. (The hosts of one Rank line: the
# other lines are dropped, one rank.) rccl-tests' version line names it.
sed -e "s/on    node-a device/on    a$(printf '%0300d' 0 | sed 's/0/é/g') device/" \
	-e '8,14d' -e 's/^# nccl-tests version/# rccl-tests version/' "$ag" >"$tmp/host.txt"
"$llmsim" measure --import "$tmp/host.txt" --no-store >"$tmp/out" 2>"$tmp/err" ||
	{ bad "a UTF-8 host name: not imported"; cat "$tmp/err"; }
iconv -f UTF-8 -t UTF-8 "$tmp/out" >/dev/null 2>&1 ||
	bad "a UTF-8 host name: the table is not UTF-8"
grep -q "rccl-tests 2.17.1;" "$tmp/out" ||
	bad "rccl-tests version line: $(sed -n 2p "$tmp/out" | head -c 100)"
# 8 ranks over 3 hosts (6, 1, 1): stored as 3 nodes x 3 with a warning
# (it was 3 nodes x 8, which validate laid out as one node of 8).
sed -e 's/on    node-a device  3/on    node-b device  3/' \
	-e 's/on    node-a device  5/on    node-c device  5/' "$ag" >"$tmp/uneven.txt"
"$llmsim" measure --import "$tmp/uneven.txt" --no-store --json >"$tmp/out" 2>"$tmp/err"
grep -q 'uneven.txt:4: warning: 8 ranks over 3 hosts, not as many on each: stored as 3 nodes x 3' "$tmp/err" ||
	{ bad "8 ranks over 3 hosts: no warning"; cat "$tmp/err"; }
"$llmsim" measure --import "$tmp/uneven.txt" --db "$tmp/uneven.db" >"$tmp/out" 2>&1
"$llmsim" validate --kind measured --db "$tmp/uneven.db" --system dgx-h100 --no-store >"$tmp/out" 2>&1
grep -q '8 ranks (3 x 3)' "$tmp/out" || { bad "8 ranks over 3 hosts: not 3 x 3"; head -3 "$tmp/out"; }
# 4097 hosts: past the 4096 the converter counts (nodes were stored as
# 4096, silently): refused at the header.
{ sed -n 1,6p "$ag"
  awk 'BEGIN { for (i = 0; i < 4097; i++) printf "#  Rank %4d Group  0 Pid 1 on h%d device  0 [0000:18:00] NVIDIA H100 80GB HBM3\n", i, i }'
  sed -n '15,$p' "$ag"
} >"$tmp/hosts.txt"
"$llmsim" measure --import "$tmp/hosts.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'hosts.txt:4: error: this nccl-tests run names more than 4096 hosts' "$tmp/err" ||
	{ bad "4097 hosts: not refused"; cat "$tmp/err"; }
sed 's/all_gather_perf/hypercube_perf/' "$ag" >"$tmp/hyper.txt"
"$llmsim" measure --import "$tmp/hyper.txt" --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'does not predict: hypercube_perf' "$tmp/err" ||
	{ bad "an unknown test: not refused"; cat "$tmp/err"; }
"$llmsim" measure --import "$old" --op gemm --no-store >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'nccl-tests runs collectives' "$tmp/err" ||
	{ bad "--op gemm: not refused"; cat "$tmp/err"; }
exit $fail
