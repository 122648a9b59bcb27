#!/bin/sh
# moe-presets.sh - `llmsim run` simulates every MoE model preset
# (workloads/models with routed experts) on an NVIDIA system (two DGX
# H100, DeepEP) and an AMD one (two MI300X nodes over RoCE, the library's
# all-to-all), EP 8, PP 2, a small batch, through the real binary
# ($LLMSIM). Issue 9: every MoE preset runs on at least one NVIDIA and one
# AMD system. Fits or not, the step must simulate (exit 0).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
use_checkout_data
n=0

for f in "$root"/workloads/models/*.yaml; do
	m=$(basename "$f" .yaml)
	grep -Eq '^(n_routed_experts|num_local_experts|num_experts):' "$f" || continue
	for sys in "dgx-h100 deepep" "mi300x-roce alltoall"; do
		set -- $sys
		cat > "$tmp/job.yaml" <<JOB
name: moe-preset-$m-$1
model: $m
system: {preset: $1, nodes: 2}
framework: megatron-core
training: {seq_len: 4096, global_batch_size: 16, micro_batch_size: 1, recompute: full, zero_stage: 1}
parallelism: {tp: 1, pp: 2, ep: 8}
moe: {dispatcher: $2}
JOB
		n=$((n + 1))
		if ! "$llmsim" run "$tmp/job.yaml" --no-store > "$tmp/out" 2>&1; then
			echo "FAIL: $m on $1 ($2):"
			sed 's/^/    /' "$tmp/out" | head -5
			fail=1
		fi
	done
done
[ $n -ge 10 ] || { echo "FAIL: only $n MoE preset runs (expected >= 10)"; fail=1; }
echo "moe-presets: $n runs, $([ $fail = 0 ] && echo ok || echo FAILED)"
exit $fail
