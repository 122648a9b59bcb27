#!/bin/sh
# validate.sh - `llmsim validate` on the reference cases as CI's
# regression check: every kernel set, collective table, training case
# and inference case of results/reference predicted, each table within
# the `regression` gates of results/reference/validate.yaml (a little above what the
# model reaches today), so a change that makes predictions worse fails
# `make test` (MoE dispatch/combine too; the MoE and CP training cases,
# a minute of simulation, are `make validate`'s). Then what validate must
# refuse, and a gate that must fail.
set -u
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"

if ! "$llmsim" validate --kind kernel,collective,training,dispatch,inference,latency \
	--gates regression \
	--quiet --no-store >"$tmp/out" 2>"$tmp/err"; then
	bad "validate --gates regression: exit $?"
	cat "$tmp/out" "$tmp/err"
fi
# The summary: every kind, independent rows apart, the gate verdict.
for k in kernel collective training dispatch inference latency; do
	grep -q "^  $k, independent " "$tmp/out" || bad "summary lacks $k"
done
grep -q '^  overall, independent ' "$tmp/out" || bad "no overall independent line"
grep -q 'in-sample rows' "$tmp/out" || bad "no in-sample count"

# A measured run fitted its GPUs: the MI300X Llama 2 FP8 case (fused
# attention, as Megatron-Core's Transformer Engine spec runs it) must fit
# its 205.8 GB (196288 MiB; llmsim 110.8 GB); with unfused attention llmsim
# puts it at 248.2 GB, exit 5.
"$llmsim" run results/reference/training/T-AMD-MI300X-LLAMA2-7B-8GPU-FP8.yaml \
	--no-store --require-fit >/dev/null 2>&1 ||
	bad "the MI300X Llama 2 FP8 reference job does not fit: exit $?"
"$llmsim" run results/reference/training/T-AMD-MI300X-LLAMA2-7B-8GPU-FP8.yaml \
	--no-store --require-fit --set training.attention=unfused >/dev/null 2>&1
[ $? = 5 ] || bad "unfused attention at micro-batch 4 should not fit 205.8 GB"

# A gate that cannot hold: every collective table within 0.1 %.
"$llmsim" validate --kind collective --tolerance 0.1% --quiet --no-store \
	>"$tmp/out" 2>&1
[ $? = 1 ] && grep -q MISSED "$tmp/out" || bad "--tolerance 0.1%: expected exit 1"

# llmsim validate --kind kernel over $tmp/ref into $tmp/out; its exit
# status in rc (0 or 1 when it ran; 1: a gate missed).
kernel_rows() {
	rc=0
	"$llmsim" validate --kind kernel --reference "$tmp/ref" --no-store \
		>"$tmp/out" 2>&1 || rc=$?
}

status() {	# status WANT WHAT ARGS...
	want=$1 what=$2
	shift 2
	"$llmsim" validate "$@" --no-store >"$tmp/out" 2>"$tmp/err"
	got=$?
	[ "$got" = "$want" ] && grep -q error "$tmp/err" ||
		{ bad "$what: exit $got, expected $want with an error"; cat "$tmp/err"; }
}
status 2 "unknown kind" --kind kernels
# An empty list or item is refused: --kind , ran no table and said "gates
# (targets): every table met them", exit 0.
status 2 "no kind" --kind ,
status 2 "empty kind" --kind kernel,,latency
status 2 "bad tolerance" --kind kernel --tolerance much
# A bare number is refused: 0.15 was read as 0.15 % (plan's --headroom
# reads a bare 0.05 as 5 %).
status 2 "bare tolerance" --kind kernel --tolerance 0.15
status 2 "unknown gate set" --kind kernel --gates nightly
# --set overrides the kernel sets' GPU only: with no kernel kind it was
# taken and ignored (--kind measured --set gemm_efficiency=2, out of its
# bound, scored as without it).
status 2 "--set without kernel sets" --kind measured --set gemm_efficiency=2
grep -q "set applies to the kernel sets" "$tmp/err" ||
	{ bad "--set without kernel sets: not said"; cat "$tmp/err"; }
# A reference folder with a kernel file that lacks its GPU.
mkdir -p "$tmp/ref/kernels" "$tmp/ref/collectives" "$tmp/ref/training"
cp "$(dirname "$0")/../results/reference/validate.yaml" "$tmp/ref/"
printf 'id: K-BROKEN\nkind: gemm\ntiming: stream\nrows: []\n' \
	>"$tmp/ref/kernels/broken.yaml"
status 2 "a broken reference file" --kind kernel --reference "$tmp/ref"
# validate.yaml's gates: a typo'd kind or gate dropped the gate without a
# word (validate passed what it no longer gated); so did a kind given a
# scalar. Each exits 2 at its line:col.
gate_bad() {	# gate_bad WHAT LINE:COL SET-BODY
	printf 'targets:\n%s\n' "$3" >"$tmp/ref/validate.yaml"
	status 2 "$1" --kind latency --reference "$tmp/ref"
	grep -q "validate.yaml:$2: error" "$tmp/err" || bad "$1: no error at validate.yaml:$2"
}
gate_bad "a typo'd kind in a gate set" 2:3 '  latncy: {max_abs: 10%}'
grep -q "did you mean 'latency'" "$tmp/err" || bad "latncy: no did you mean"
gate_bad "a typo'd gate" 2:27 '  latency: {max_abs: 10%, media_abs: 5%}'
gate_bad "a kind's gates as a scalar" 2:12 '  latency: 10%'
cp "$(dirname "$0")/../results/reference/validate.yaml" "$tmp/ref/"
# A collective table marked `gated: false` is shown, not gated: a
# measurement 1000x off passes; `gated` takes true or false only.
printf '%s\n' 'id: C-EXTRA' 'system: dgx-h100' 'op: alltoall' 'ranks: 8' \
	'gated: false' 'rows:' '  - [1073741824, 0, 1000000]' \
	>"$tmp/ref/collectives/extra.yaml"
"$llmsim" validate --kind collective --reference "$tmp/ref" --no-store \
	>"$tmp/out" 2>&1 || bad "a table with gated: false: exit $?"
grep -q 'extra (not gated)' "$tmp/out" || bad "gated: false not shown as extra"
sed 's/gated: false/gated: maybe/' "$tmp/ref/collectives/extra.yaml" \
	>"$tmp/ref/collectives/bad.yaml"
rm "$tmp/ref/collectives/extra.yaml"
status 2 "gated: maybe" --kind collective --reference "$tmp/ref"
rm "$tmp/ref/collectives/bad.yaml"
# Every number of a collective row whole (size) or finite, at its
# line:col: a mapping in a row crashed (atof of no text), '12x' read 12.
printf '%s\n' 'id: C-BAD' 'system: dgx-h100' 'op: alltoall' 'ranks: 8' 'rows:' \
	'  - [{size: 1}, 0, 12]' >"$tmp/ref/collectives/bad.yaml"
status 2 "a mapping in a collective row" --kind collective --reference "$tmp/ref"
grep -q 'bad.yaml:6:6: error' "$tmp/err" || bad "a mapping in a row: no line:col"
sed 's/\[{size: 1}, 0, 12\]/[1073741824, 0, 12x]/' "$tmp/ref/collectives/bad.yaml" \
	>"$tmp/ref/collectives/bad2.yaml"
rm "$tmp/ref/collectives/bad.yaml"
status 2 "busbw '12x'" --kind collective --reference "$tmp/ref"
rm "$tmp/ref/collectives/bad2.yaml"
# A collective table's keys: an unknown one (a typo: engine_kernel_max_b
# scored the engine's rows), a nodes list (ran on the preset's nodes) and
# an unknown op or algorithm are errors at their line:col.
coll_bad() {	# coll_bad WHAT LINE:COL KEY: VALUE
	printf '%s\n' 'id: C-BAD' 'system: dgx-h100' 'op: allreduce' 'ranks: 8' \
		"$3" 'rows:' '  - [1073741824, 0, 100]' >"$tmp/ref/collectives/bad.yaml"
	status 2 "$1" --kind collective --reference "$tmp/ref"
	grep -q "bad.yaml:$2: error" "$tmp/err" || bad "$1: no error at bad.yaml:$2"
	rm "$tmp/ref/collectives/bad.yaml"
}
coll_bad "a typo'd table key" 5:1 'engine_kernel_max_b: 1048576'
grep -q "did you mean 'engine_kernel_max_B'" "$tmp/err" ||
	bad "a typo'd table key: no did you mean"
coll_bad "nodes as a list" 5:8 'nodes: [2]'
coll_bad "engine_kernel_max_B -5" 5:22 'engine_kernel_max_B: -5'
coll_bad "engine_kernel_max_B 4.5" 5:22 'engine_kernel_max_B: 4.5'
coll_bad "engine_kernel_max_B as a list" 5:22 'engine_kernel_max_B: [1]'
coll_bad "nodes 0" 5:8 'nodes: 0'
coll_bad "algorithm rign" 5:12 'algorithm: rign'
coll_bad "gated: yes" 5:8 'gated: yes'
# The release a table ran and the algorithms it switched off (round 43):
# an unknown preset, a path, a release of another library, an unknown or
# repeated algorithm are errors at the value.
coll_bad "collectives nccl-2.99" 5:14 'collectives: nccl-2.99'
coll_bad "collectives as a path" 5:14 'collectives: ../nccl'
coll_bad "disabled_algorithms nvlss" 5:23 'disabled_algorithms: [nvlss]'
coll_bad "disabled_algorithms twice" 5:29 'disabled_algorithms: [nvls, nvls]'
coll_bad "disabled_algorithms a word" 5:22 'disabled_algorithms: nvls'
# type and placement are shown, not read, and are nccl-tests' own names
# ('bf16' and 'inplace' were accepted without a word).
coll_bad "type bf16" 5:7 'type: bf16'
grep -q "expected one of int8, .*bfloat16, fp8_e4m3, fp8_e5m2 (what the benchmark printed; not read), got 'bf16'" "$tmp/err" ||
	bad "type bf16: no list of the names"
coll_bad "placement inplace" 5:12 'placement: inplace'
printf '%s\n' 'id: C-BAD' 'system: dgx-h100' 'op: allreduse' 'ranks: 8' \
	'rows:' '  - [1073741824, 0, 100]' >"$tmp/ref/collectives/bad.yaml"
status 2 "op allreduse" --kind collective --reference "$tmp/ref"
grep -q "bad.yaml:3:5: error: 'op'" "$tmp/err" || bad "op allreduse: no error at 3:5"
rm "$tmp/ref/collectives/bad.yaml"
# The dispatch cases' numeric columns and dtype: atof read '4096x' tokens
# as 4096 and any unknown dtype ran as BF16.
mkdir -p "$tmp/ref/ep"
line=$(grep -v '^#' "$(dirname "$0")/../results/reference/ep/cases.tsv" | head -1)
printf '%s\n' "$line" | sed 's/\t4096\t/\t4096x\t/' >"$tmp/ref/ep/cases.tsv"
status 2 "dispatch tokens '4096x'" --kind dispatch --reference "$tmp/ref"
grep -q "cases.tsv:1:[0-9]*: error: 'tokens'" "$tmp/err" || bad "tokens '4096x': no line:col"
printf '%s\n' "$line" | sed 's/\tbfloat16\t/\tfp4\t/; s/\tfp8_e4m3\t/\tfp4\t/' \
	>"$tmp/ref/ep/cases.tsv"
status 2 "dispatch dtype 'fp4'" --kind dispatch --reference "$tmp/ref"
rm -r "$tmp/ref/ep"
# An attention row may carry one pass (the FlashAttention-3 paper's H100
# causal rows: forward only), not none.
rm "$tmp/ref/kernels/broken.yaml"
printf '%s\n' 'id: K-ONE-PASS' 'gpu: h100' 'kind: attention' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {label: fwd-only, backend: flash, batch: 1, heads_q: 16, heads_kv: 16, seq: 16384, head_dim: 128, causal: true, fwd_s: 3.2821e-03, fwd_tflops: 335}' \
	>"$tmp/ref/kernels/one.yaml"
"$llmsim" validate --kind kernel --reference "$tmp/ref" --no-store \
	>"$tmp/out" 2>&1 || bad "a forward-only attention row: exit $?"
grep -q 'fwd-only flash fwd' "$tmp/out" && ! grep -q 'fwd-only flash bwd' "$tmp/out" ||
	bad "a forward-only attention row: expected one forward line"
# Optional head_dim_v (MLA's V) and window. The same measured time with V
# 128 instead of QK's 192: forward FLOPs per pair 2 (192 + 128) = 640
# against 2 (192 + 192) = 768. On MI300X (no exp term, no padding) the
# modeled times go as the FLOPs in the compute-bound limit (16K tokens,
# no mask), so the predicted rate (measured rate x measured time /
# modeled time) of the 128 row is 768 / 640 = 1.2x the 192 row's, the
# per-unit loads keeping it a little under. On H100 the forward computes
# V at 192 (h100.yaml attention.fwd_pads_v): the same modeled time, 1.0x.
printf '%s\n' 'id: K-DV' 'gpu: mi300x' 'kind: attention' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {label: dv192, backend: cudnn, batch: 1, heads_q: 16, heads_kv: 16, seq: 16384, head_dim: 192, causal: false, fwd_s: 0.01, fwd_tflops: 500}' \
	'  - {label: dv128, backend: cudnn, batch: 1, heads_q: 16, heads_kv: 16, seq: 16384, head_dim: 192, head_dim_v: 128, causal: false, fwd_s: 0.01, fwd_tflops: 500}' \
	>"$tmp/ref/kernels/dv.yaml"
sed 's/K-DV/K-DV-PAD/; s/gpu: mi300x/gpu: h100/; s/dv1/pad1/' \
	"$tmp/ref/kernels/dv.yaml" >"$tmp/ref/kernels/dvpad.yaml"
# (The made-up measured rates miss the gate: exit 1 is expected.)
kernel_rows
[ "$rc" -le 1 ] || bad "head_dim_v rows: exit $rc"
r=$(awk '/dv192 cudnn fwd/ {a = $(NF-2)} /dv128 cudnn fwd/ {b = $(NF-2)}
	END {if (a > 0) printf "%.3f", b / a}' "$tmp/out")
awk -v r="$r" 'BEGIN {exit !(r >= 1.18 && r <= 1.2)}' ||
	bad "head_dim_v 128 against 192: predicted rate ratio $r, expected 1.18-1.2"
r=$(awk '/pad192 cudnn fwd/ {a = $(NF-2)} /pad128 cudnn fwd/ {b = $(NF-2)}
	END {if (a > 0) printf "%.3f", b / a}' "$tmp/out")
[ "$r" = 1.000 ] ||
	bad "head_dim_v 128 against 192, V padded: predicted rate ratio $r, expected 1.000"
rm "$tmp/ref/kernels/dvpad.yaml"
printf '%s\n' '  - {label: badwin, backend: cudnn, batch: 1, heads_q: 16, heads_kv: 16, seq: 4096, head_dim: 64, window: -1, causal: true, fwd_s: 0.001, fwd_tflops: 100}' \
	>>"$tmp/ref/kernels/dv.yaml"
status 2 "an attention row with a negative window" --kind kernel --reference "$tmp/ref"
rm "$tmp/ref/kernels/dv.yaml"
printf '%s\n' '  - {label: none, backend: flash, batch: 1, heads_q: 16, heads_kv: 16, seq: 512, head_dim: 128, causal: true}' \
	>>"$tmp/ref/kernels/one.yaml"
status 2 "an attention row without a pass" --kind kernel --reference "$tmp/ref"
rm "$tmp/ref/kernels/one.yaml"
# An attention row's backend is one of vendor, cudnn, flash, ck_tile (a
# typo ran at the vendor rates without a word), and ck_tile (Composable
# Kernel's) names an AMD GPU's kernel: both exit 2 at the value, row 7
# column 28.
printf '%s\n' 'id: K-BACKEND' 'gpu: h100' 'kind: attention' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {label: typo, backend: ck-tile, batch: 1, heads_q: 16, heads_kv: 16, seq: 4096, head_dim: 128, causal: true, fwd_s: 0.001, fwd_tflops: 100}' \
	>"$tmp/ref/kernels/bk.yaml"
status 2 "an attention row with an unknown backend" --kind kernel --reference "$tmp/ref"
grep -q "bk.yaml:7:28: error: 'backend': expected one of vendor, cudnn, flash, ck_tile, got 'ck-tile'" "$tmp/err" ||
	bad "an unknown backend: no error at bk.yaml:7:28"
sed -i 's/ck-tile/ck_tile/' "$tmp/ref/kernels/bk.yaml"
status 2 "an attention row with backend ck_tile on h100" --kind kernel --reference "$tmp/ref"
grep -q "bk.yaml:7:28: error: 'backend': ck_tile is Composable Kernel's, which runs on AMD GPUs only" "$tmp/err" ||
	bad "backend ck_tile on h100: no error at bk.yaml:7:28"
rm "$tmp/ref/kernels/bk.yaml"
# A kernel file's and a row's keys are its kind's (a typo'd key was read
# as absent: 'weigths: cold' priced B warm, 'scord: false' scored the
# row, 'scored: flase' too), at their line:col.
kern_bad() {	# kern_bad WHAT LINE:COL TOP-KEY ROW
	printf '%s\n' 'id: K-KEYS' 'gpu: h100' 'kind: gemm' 'dtype: bf16' \
		'timing: stream' "$3" 'rows:' "$4" >"$tmp/ref/kernels/keys.yaml"
	status 2 "$1" --kind kernel --reference "$tmp/ref"
	grep -q "keys.yaml:$2: error" "$tmp/err" || bad "$1: no error at keys.yaml:$2"
	rm "$tmp/ref/kernels/keys.yaml"
}
row='  - {m: 4096, n: 4096, k: 4096, tflops: 600'
kern_bad "a typo'd file key" 6:1 'weigths: cold' "$row}"
grep -q "did you mean 'weights'" "$tmp/err" || bad "weigths: no did you mean"
kern_bad "a typo'd row key" 8:46 'notes: x' "$row, scord: false}"
kern_bad "scored: flase" 8:54 'notes: x' "$row, scored: flase}"
kern_bad "a decode key in a gemm file" 6:11 'kv_dtype: fp8' "$row}"
kern_bad "an attention key in a gemm row" 8:46 'notes: x' "$row, causal: true}"
# A memory row's tbps is its bytes / s as written (here 2 MiB in 1.38752
# us = 1.5114 TB/s: 1.511 passes, 1.611 is a typo at 7:66, as is 0).
mem_row() {	# mem_row TBPS
	printf '%s\n' 'id: K-MEM' 'gpu: h200' 'kind: memory' 'timing: graph' \
		'launch_overhead: 1.4 us' 'rows:' \
		"  - {label: \"copy 1 MiB\", bytes: 2097152, s: 1.387520e-06, tbps: $1}" \
		>"$tmp/ref/kernels/mem.yaml"
}
mem_row 1.511
kernel_rows
[ "$rc" -le 1 ] || bad "a memory row whose tbps is bytes / s: exit $rc"
for v in 1.611 0; do
	mem_row $v
	status 2 "a memory row with tbps $v" --kind kernel --reference "$tmp/ref"
	grep -q "mem.yaml:7:66: error: 'tbps'" "$tmp/err" ||
		bad "tbps $v: no error at mem.yaml:7:66"
done
rm "$tmp/ref/kernels/mem.yaml"
# Hopper fp8 accumulation modes (kernel file key fp8_accumulation): the
# same 16384^3 fp8 GEMM on h100 priced fast (fp8_fast_accum_efficiency
# 0.906) and split (gemm_efficiency_dtype fp8 0.858). 128 x 256 tiles:
# 8192 tiles, 63 waves of 132, each t_c = 2 x 128 x 256 x 16384 /
# (1978.9e12 x 1485/1830 x eff / 132) = 102.9 us split, 97.4 us fast,
# plus the same ~3.6 us of t_0 and epilogue a wave: rate ratio
# 106.5 / 101.0 = 1.054, under 0.906 / 0.858 = 1.056: 1.050-1.056.
printf '%s\n' 'id: K-FAST' 'gpu: h100' 'kind: gemm' 'dtype: fp8' \
	'timing: stream' 'fp8_accumulation: fast' 'rows:' \
	'  - {label: fa16k, m: 16384, n: 16384, k: 16384, tflops: 1300}' \
	>"$tmp/ref/kernels/fast.yaml"
sed 's/K-FAST/K-SPLIT/; s/fp8_accumulation: fast/fp8_accumulation: split/; s/fa16k/sp16k/' \
	"$tmp/ref/kernels/fast.yaml" >"$tmp/ref/kernels/split.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "fp8 accumulation rows: exit $rc"
r=$(awk '/ sp16k 16384/ {a = $(NF-2)} / fa16k 16384/ {b = $(NF-2)}
	END {if (a > 0) printf "%.4f", b / a}' "$tmp/out")
awk -v r="$r" 'BEGIN {exit !(r >= 1.050 && r <= 1.056)}' ||
	bad "fp8 fast against split accumulation: predicted rate ratio $r, expected 1.050-1.056"
rm "$tmp/ref/kernels/split.yaml"
# fp8_accumulation takes fast or split, on an fp8 GEMM file only.
sed -i 's/fp8_accumulation: fast/fp8_accumulation: slow/' "$tmp/ref/kernels/fast.yaml"
status 2 "fp8_accumulation: slow" --kind kernel --reference "$tmp/ref"
grep -q "'fp8_accumulation': expected fast or split" "$tmp/err" ||
	bad "fp8_accumulation: slow: no error naming the key"
sed -i 's/fp8_accumulation: slow/fp8_accumulation: fast/; s/dtype: fp8/dtype: bf16/' \
	"$tmp/ref/kernels/fast.yaml"
status 2 "fp8_accumulation on a bf16 file" --kind kernel --reference "$tmp/ref"
grep -q "'fp8_accumulation': only for kind gemm, dtype fp8" "$tmp/err" ||
	bad "fp8_accumulation on a bf16 file: no error naming the key"
rm "$tmp/ref/kernels/fast.yaml"
# Cold weights (kernel file key weights: cold, a benchmark that flushes L2
# before each call): 64 x 4096 x 7168 fp8 on h100. Its B, 4096 x 7168 x
# 1 B = 29.4 MB (with A 0.5 MB and C 0.6 MB), fits h100's 50 MB L2, so a
# warm file serves it from L2; a cold one reads B from HBM at no more
# than 3.35 TB/s: t >= 29.36e6 / 3.35e12 = 8.76 us, a rate of at most
# 2 x 64 x 4096 x 7168 / 8.76 us = 429 TFLOP/s, where the warm row reads
# above it (no launch in either time: launch_overhead 0, as a profiler's
# kernel time).
printf '%s\n' 'id: K-WARM' 'gpu: h100' 'kind: gemm' 'dtype: fp8' \
	'timing: single' 'launch_overhead: 0 us' 'rows:' \
	'  - {label: wa64, m: 64, n: 4096, k: 7168, tflops: 300}' \
	>"$tmp/ref/kernels/warm.yaml"
sed 's/K-WARM/K-COLD/; s/timing: single/timing: single\nweights: cold/; s/wa64/co64/' \
	"$tmp/ref/kernels/warm.yaml" >"$tmp/ref/kernels/cold.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "cold weights rows: exit $rc"
awk '/ wa64 64 x/ {w = $(NF-2)} / co64 64 x/ {c = $(NF-2)}
	END {exit !(c > 0 && c <= 429 && w > 429)}' "$tmp/out" ||
	bad "weights: cold: expected the cold row at or under 429 TFLOP/s and the warm one above"
rm "$tmp/ref/kernels/warm.yaml"
# weights takes cold or warm, on a GEMM file only.
sed -i 's/weights: cold/weights: hot/' "$tmp/ref/kernels/cold.yaml"
status 2 "weights: hot" --kind kernel --reference "$tmp/ref"
grep -q "'weights': expected cold or warm" "$tmp/err" ||
	bad "weights: hot: no error naming the key"
sed -i 's/weights: hot/weights: cold/; s/kind: gemm/kind: stream/' \
	"$tmp/ref/kernels/cold.yaml"
status 2 "weights on a stream file" --kind kernel --reference "$tmp/ref"
grep -q "'weights': only for kind gemm" "$tmp/err" ||
	bad "weights on a stream file: no error naming the key"
rm "$tmp/ref/kernels/cold.yaml"
# The calls' power regime (gemm file keys power_before, warmup_calls,
# timed_calls; src/calib/valid_power.c): bf16 8192^3 on h200. Without
# them the row is priced at sustained_matrix_clock (1485 MHz); one timed
# call after an idle spell runs at burst_matrix_clock (1776 MHz): its
# mainloop MMAs scale by 1776 / 1485 = 1.196, its epilogue stores do
# not, so the rate ratio is under 1.196 and, the MMAs of k 8192 ruling,
# above 1.18. 1000 warm-ups (each >= 1.3 ms, past the 79.1 ms hold after
# ~60) leave every timed call sustained: the same rate as no keys.
printf '%s\n' 'id: K-SUST' 'gpu: h200' 'kind: gemm' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {label: su8k, m: 8192, n: 8192, k: 8192, tflops: 700}' \
	>"$tmp/ref/kernels/sust.yaml"
sed 's/K-SUST/K-BURST/; s/timing: stream/timing: stream\npower_before: idle\nwarmup_calls: 0\ntimed_calls: 1/; s/su8k/bu8k/' \
	"$tmp/ref/kernels/sust.yaml" >"$tmp/ref/kernels/burst.yaml"
sed 's/K-SUST/K-LONG/; s/timing: stream/timing: stream\npower_before: idle\nwarmup_calls: 1000\ntimed_calls: 10/; s/su8k/lo8k/' \
	"$tmp/ref/kernels/sust.yaml" >"$tmp/ref/kernels/long.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "power regime rows: exit $rc"
awk '/ su8k 8192/ {s = $(NF-2)} / bu8k 8192/ {b = $(NF-2)} / lo8k 8192/ {l = $(NF-2)}
	END {exit !(s > 0 && b / s > 1.18 && b / s < 1.196 && l == s)}' "$tmp/out" ||
	bad "power_before: idle: expected the burst row 1.18-1.196x the sustained one, the long row equal to it"
rm "$tmp/ref/kernels/sust.yaml" "$tmp/ref/kernels/long.yaml"
mv "$tmp/ref/kernels/burst.yaml" "$tmp/burst.src"
# power_before takes idle, with both counts, on a gemm file of a GPU with
# the power model; the counts and a row's timed_calls only with it.
for c in 's/power_before: idle/power_before: hot/|expected idle' \
	's/warmup_calls: 0/warmup_calls: -1/|whole number of calls' \
	's/timed_calls: 1/timed_calls: 0/|whole number of calls' \
	'/warmup_calls/d|expected warmup_calls and timed_calls' \
	'/power_before/d|only with power_before' \
	's/gpu: h200/gpu: a100-80g/|has no power model' \
	's/kind: gemm/kind: memory/|only for kind gemm' \
	's/bu8k,/bu8k, timed_calls: 2.5,/|whole number of calls'; do
	sed "${c%%|*}" "$tmp/burst.src" >"$tmp/ref/kernels/bad.yaml"
	status 2 "power keys: ${c%%|*}" --kind kernel --reference "$tmp/ref"
	grep -q "bad.yaml.*${c#*|}" "$tmp/err" ||
		bad "power keys ${c%%|*}: no error '${c#*|}'"
done
# a row's timed_calls in a file without the regime
sed '/power_before/d; /warmup_calls/d; /timed_calls: 1/d; s/bu8k,/bu8k, timed_calls: 2,/' \
	"$tmp/burst.src" >"$tmp/ref/kernels/bad.yaml"
status 2 "a row's timed_calls without power_before" --kind kernel --reference "$tmp/ref"
grep -q "bad.yaml.*'timed_calls': only in a file with power_before" "$tmp/err" ||
	bad "a row's timed_calls without power_before: no error"
rm "$tmp/ref/kernels/bad.yaml" "$tmp/burst.src"
# The kernel's accumulator stages (gemm file key accumulator_stages;
# src/calib/valid_power.c): mxfp8 8192 x 8192 x 4096 on b200. With one
# stage a wave costs t_0 + max(t_c, t_m) + t_e, with two max(t_c, t_m +
# t_e) and the last t_e once; max(a, b) + c >= max(a, b + c), so for any
# tile one stage is at least t_0 = 1 us a wave dearer, less the last
# epilogue (148 x 128 x 256 x 2 B = 9.7 MB, at most 1.4 us at B200's HBM
# rate and more above it in L2). Every tile list entry covers at most
# 128 x 256 outputs: at least ceil(64 x 32 / 148) = 14 waves, so the
# one-stage time exceeds the two-stage one by >= 14 - 1.4 = 12.6 us (t =
# 2 m n k / rate; launch_overhead 0). An explicit 1 is the GPU's own.
printf '%s\n' 'id: K-ST1' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: single' 'launch_overhead: 0 us' 'rows:' \
	'  - {label: st1, m: 8192, n: 8192, k: 4096, tflops: 3000}' \
	>"$tmp/ref/kernels/st1.yaml"
sed 's/K-ST1/K-STX/; s/timing: single/timing: single\naccumulator_stages: 1/; s/st1,/stx,/' \
	"$tmp/ref/kernels/st1.yaml" >"$tmp/ref/kernels/stx.yaml"
sed 's/K-ST1/K-ST2/; s/timing: single/timing: single\naccumulator_stages: 2/; s/st1,/st2,/' \
	"$tmp/ref/kernels/st1.yaml" >"$tmp/ref/kernels/st2.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "accumulator stage rows: exit $rc"
awk '/ st1 8192/ {a = $(NF-2)} / stx 8192/ {x = $(NF-2)} / st2 8192/ {b = $(NF-2)}
	END {f = 2 * 8192 * 8192 * 4096 / 1e12
	     exit !(a > 0 && b > 0 && x == a && (f / a - f / b) * 1e6 >= 12.6)}' "$tmp/out" ||
	bad "accumulator_stages: expected 2 at least 12.6 us faster than 1, an explicit 1 as none"
rm "$tmp/ref/kernels/st1.yaml" "$tmp/ref/kernels/stx.yaml"
mv "$tmp/ref/kernels/st2.yaml" "$tmp/st2.src"
for c in 's/accumulator_stages: 2/accumulator_stages: 3/|expected 1 or 2' \
	's/accumulator_stages: 2/accumulator_stages: 1.5/|expected 1 or 2' \
	's/accumulator_stages: 2/accumulator_stages: two/|expected 1 or 2' \
	's/kind: gemm/kind: memory/|only for kind gemm'; do
	sed "${c%%|*}" "$tmp/st2.src" >"$tmp/ref/kernels/bad.yaml"
	status 2 "accumulator_stages: ${c%%|*}" --kind kernel --reference "$tmp/ref"
	grep -q "bad.yaml.*${c#*|}" "$tmp/err" ||
		bad "accumulator_stages ${c%%|*}: no error '${c#*|}'"
done
rm "$tmp/ref/kernels/bad.yaml" "$tmp/st2.src"
# Grouped GEMM rows (groups: G, group_dim m or k; m or k the total). 8
# groups of 16384 x 4096 x 4096 against one 131072 x 4096 x 4096 on
# B200 (mxfp8): with 128 x 256 tiles both are 16384 tiles, 110.7 waves
# of 148, each tile t_c = 2 x 128 x 256 x 4096 / (4500e12 x 0.685 / 148)
# = 12.9 us of MMAs. Loads per wave: the dense GEMM's 148-tile block is
# 17 x 9 tiles, (17 x 128 + 9 x 256) x 4096 B = 18.3 MB; the grouped
# one's (131072 x 4096 + 8 x 4096 x 4096) B / 110.7 waves = 6.1 MB; at
# B200's 7.7 TB/s HBM 2.4 and 0.8 us, both under t_c: compute-bound with
# the same waves, t_0 and epilogue, so the predicted rates agree: ratio
# 0.97-1.03.
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {label: dense, m: 131072, n: 4096, k: 4096, tflops: 3000}' \
	'  - {label: grp, m: 131072, n: 4096, k: 4096, groups: 8, group_dim: m, tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "grouped rows: exit $rc"
r=$(awk '/ dense 131072/ {a = $(NF-2)} / grp 131072 .* grouped/ {b = $(NF-2)}
	END {if (a > 0) printf "%.3f", b / a}' "$tmp/out")
awk -v r="$r" 'BEGIN {exit !(r >= 0.97 && r <= 1.03)}' ||
	bad "8 equal groups against one GEMM: predicted rate ratio $r, expected 0.97-1.03"
# The same groups as kernels on streams (streams: S, TE's multi-stream
# cuBLAS): 8 kernels on 4 streams add B200's (2 - 1) x t_launch + 7 x
# t_k (gpu_grouped_kernels_s) to the pooled time: slower than the one
# grouped kernel by 1 x 5 + 7 x 3.2 = 27.4 us at most, against 2 x
# 131072 x 4096 x 4096 = 4.4 TFLOP at ~3000 TFLOP/s = 1.47 ms: rate
# ratio 1.47 / 1.497 = 0.982 or above, under 1.
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {label: grp, m: 131072, n: 4096, k: 4096, groups: 8, group_dim: m, tflops: 3000}' \
	'  - {label: str, m: 131072, n: 4096, k: 4096, groups: 8, group_dim: m, streams: 4, tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "grouped rows on streams: exit $rc"
r=$(awk '/ grp 131072 .* grouped/ {a = $(NF-2)}
	/ str 131072 .* grouped on streams/ {b = $(NF-2)}
	END {if (a > 0) printf "%.4f", b / a}' "$tmp/out")
awk -v r="$r" 'BEGIN {exit !(r > 0.97 && r < 1)}' ||
	bad "8 groups on 4 streams against one grouped kernel: rate ratio $r, expected in (0.97, 1)"
# A malformed streams is reported at its value, naming the range (row 7,
# column 69), and streams without groups as such.
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {m: 131072, n: 4096, k: 4096, groups: 8, group_dim: m, streams: 0, tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
status 2 "a grouped row with streams 0" --kind kernel --reference "$tmp/ref"
grep -q "grp.yaml:7:69: error: 'streams': expected a whole number of streams from 1 to 64, got '0'" "$tmp/err" ||
	bad "streams 0: no error at grp.yaml:7:69"
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {m: 131072, n: 4096, k: 4096, streams: 4, tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
status 2 "streams without groups" --kind kernel --reference "$tmp/ref"
grep -q "grp.yaml:7:44: error: 'streams': only on a grouped row (groups: G)" "$tmp/err" ||
	bad "streams without groups: no error at grp.yaml:7:44"
for g in 'groups: 0' 'groups: 2.5' 'groups: 300' 'groups: 8, group_dim: n' \
	'groups: [8]' 'group_dim: k' 'groups: 8, group_dim: [m]' \
	'streams: 4' 'groups: 8, streams: 0' 'groups: 8, streams: 2.5' \
	'groups: 8, streams: 65' 'groups: 8, streams: [4]'; do
	printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
		'timing: stream' 'rows:' \
		"  - {m: 131072, n: 4096, k: 4096, $g, tflops: 3000}" \
		>"$tmp/ref/kernels/grp.yaml"
	status 2 "a grouped row with $g" --kind kernel --reference "$tmp/ref"
done
# Per-group counts (counts: one a group, summing to the row's m or k: a
# routing draw). Equal counts are the equal groups: the same prediction.
# Weight gradients grouped along k with 7 groups of 2340/2341 and the
# last of 7 x 16384 = 114688 (k = 131072 in all): the tiles run in group
# order and the last wave waits for the longest k (gpu_grouped.c), so
# the skewed row predicts a lower rate than equal groups of 16384 (on
# b200: 2731 against 2899 TFLOP/s, 0.942).
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {label: eq, m: 4096, n: 4096, k: 131072, groups: 8, group_dim: k, tflops: 3000}' \
	'  - {label: cnt, m: 4096, n: 4096, k: 131072, groups: 8, group_dim: k, counts: [16384, 16384, 16384, 16384, 16384, 16384, 16384, 16384], tflops: 3000}' \
	'  - {label: skew, m: 4096, n: 4096, k: 131072, groups: 8, group_dim: k, counts: [2340, 2340, 2340, 2341, 2341, 2341, 2341, 114688], tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "grouped rows with counts: exit $rc"
r=$(awk '/ eq 4096 .* grouped/ {a = $(NF-2)} / cnt 4096 .* grouped/ {b = $(NF-2)}
	/ skew 4096 .* grouped/ {c = $(NF-2)}
	END {if (a > 0) printf "%.4f %.4f", b / a, c / a}' "$tmp/out")
awk -v r="$r" 'BEGIN {split(r, x, " "); exit !(x[1] == 1 && x[2] < 0.97)}' ||
	bad "counts: equal / none and skewed / equal rate ratios $r, expected 1 and < 0.97"
# Malformed counts are reported at the list, naming what is expected.
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {m: 1024, n: 4096, k: 4096, groups: 2, group_dim: m, counts: [512, 511], tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
status 2 "counts that miss the row's m" --kind kernel --reference "$tmp/ref"
grep -q "grp.yaml:7:66: error: 'counts': expected a list of 2 whole numbers >= 0 (one a group) summing to the row's m, 1024" "$tmp/err" ||
	bad "counts summing to 1023: no error at grp.yaml:7:66"
printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
	'timing: stream' 'rows:' \
	'  - {m: 1024, n: 4096, k: 4096, counts: [512, 512], tflops: 3000}' \
	>"$tmp/ref/kernels/grp.yaml"
status 2 "counts without groups" --kind kernel --reference "$tmp/ref"
grep -q "grp.yaml:7:41: error: 'counts': only on a grouped row (groups: G)" "$tmp/err" ||
	bad "counts without groups: no error at grp.yaml:7:41"
for c in '[512]' '[512, 512, 0]' '[512.5, 511.5]' '[-1, 1025]' '1024' \
	'[512, x]' '[[512], 512]'; do
	printf '%s\n' 'id: K-GROUPED' 'gpu: b200' 'kind: gemm' 'dtype: mxfp8' \
		'timing: stream' 'rows:' \
		"  - {m: 1024, n: 4096, k: 4096, groups: 2, group_dim: m, counts: $c, tflops: 3000}" \
		>"$tmp/ref/kernels/grp.yaml"
	status 2 "a grouped row with counts: $c" --kind kernel --reference "$tmp/ref"
	grep -q "'counts': expected a list of 2 whole numbers" "$tmp/err" ||
		bad "counts: $c: not reported as such"
done
# A row of several GEMMs (shapes: [[m, n, k], ...], the summed time s):
# predicted as the sum of its GEMMs' times, so its rate is the summed
# FLOPs over the sum of the single rows' times. Two GEMMs on b200 bf16,
# 8192 x 8192 x 4096 (0.550 TFLOP) and 8192 x 4096 x 8192 (0.550):
# 1.100 TFLOP / (t_a + t_b), t = flop / predicted rate of each single row.
rm -f "$tmp/ref/kernels/grp.yaml"
printf '%s\n' 'id: K-SHAPES' 'gpu: b200' 'kind: gemm' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {label: a, m: 8192, n: 8192, k: 4096, tflops: 1000}' \
	'  - {label: b, m: 8192, n: 4096, k: 8192, tflops: 1000}' \
	'  - {label: ab, shapes: [[8192, 8192, 4096], [8192, 4096, 8192]], s: 1.1e-3}' \
	>"$tmp/ref/kernels/shp.yaml"
kernel_rows
[ "$rc" -le 1 ] || bad "a shapes row: exit $rc"
r=$(awk '/^  a 8192 x 8192 x 4096 / {a = $(NF-2)} /^  b 8192 x 4096 x 8192 / {b = $(NF-2)}
	/^  ab 2 GEMMs, 1.1 TFLOP / {m = $(NF-3); c = $(NF-2)}
	END {f = 2 * 8192 * 8192 * 4096 / 1e12
	     if (a > 0 && b > 0) printf "%.4f %.1f", c / (2 * f / (f / a + f / b)), m}' "$tmp/out")
awk -v r="$r" 'BEGIN {split(r, x, " ")
	exit !(x[1] > 0.999 && x[1] < 1.001 && x[2] == 999.6)}' ||
	bad "shapes row: predicted / summed single rows and measured rate '$r', expected 1 (4 digits printed) and 999.6 (1.0995 TFLOP in 1.1 ms)"
# Malformed shapes are reported at the list; a shapes row takes s, not
# m, n, k or tflops.
for c in '[]' '[[8192, 8192]]' '[[8192, 8192, 0]]' '[[8192, 8192, 40.5]]' \
	'[8192, 8192, 4096]' '[[8192, 8192, x]]' '8192'; do
	printf '%s\n' 'id: K-SHAPES' 'gpu: b200' 'kind: gemm' 'dtype: bf16' \
		'timing: stream' 'rows:' \
		"  - {shapes: $c, s: 1.0e-3}" >"$tmp/ref/kernels/shp.yaml"
	status 2 "a row with shapes: $c" --kind kernel --reference "$tmp/ref"
	grep -q "shp.yaml:7:14: error: 'shapes': expected a list of \[m, n, k\] triples of whole numbers >= 1" "$tmp/err" ||
		bad "shapes: $c: not reported at shp.yaml:7:14"
done
printf '%s\n' 'id: K-SHAPES' 'gpu: b200' 'kind: gemm' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {shapes: [[8192, 8192, 4096]], tflops: 1000}' >"$tmp/ref/kernels/shp.yaml"
status 2 "a shapes row with tflops" --kind kernel --reference "$tmp/ref"
grep -q "'shapes': a row of several GEMMs takes its summed time s" "$tmp/err" ||
	bad "shapes with tflops: not reported"
printf '%s\n' 'id: K-SHAPES' 'gpu: b200' 'kind: gemm' 'dtype: bf16' \
	'timing: stream' 'rows:' \
	'  - {shapes: [[8192, 8192, 4096]]}' >"$tmp/ref/kernels/shp.yaml"
status 2 "a shapes row without s" --kind kernel --reference "$tmp/ref"
rm -f "$tmp/ref/kernels/shp.yaml"
exit $fail
