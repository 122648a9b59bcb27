#!/bin/sh
# megatron.sh - `llmsim config import-megatron`: the documented mapping is
# the one the binary uses; a Megatron-LM command line of the job in
# workloads/jobs/llama3-70b-h100-64.yaml imports to a job with the same
# step time and memory; Megatron's defaults; bad and incomplete command
# lines exit 2.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
llmsim=${LLMSIM:-build/llmsim}
. "$(dirname "$0")/lib.sh"

# docs/megatron.md holds exactly what --mapping prints.
"$llmsim" config import-megatron --mapping >"$tmp/map" || bad "--mapping failed"
sed -n '/<!-- mapping:begin -->/,/<!-- mapping:end -->/p' "$root/docs/megatron.md" |
	sed '1d;$d' >"$tmp/doc"
cmp -s "$tmp/map" "$tmp/doc" || bad "docs/megatron.md's mapping differs from --mapping (regenerate it)"

# NVIDIA's Llama 3 70B layout (the preset job): the same model, layout and
# settings as Megatron arguments must simulate to the same step and peak.
args="--num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672
 --num-attention-heads 64 --group-query-attention --num-query-groups 8
 --seq-length 8192 --max-position-embeddings 8192 --micro-batch-size 1
 --global-batch-size 128 --tensor-model-parallel-size 4
 --pipeline-model-parallel-size 4 --num-layers-per-virtual-pipeline-stage 4
 --sequence-parallel --tp-comm-overlap --swiglu --normalization RMSNorm
 --position-embedding-type rope --untie-embeddings-and-output-weights
 --padded-vocab-size 128256 --fp8-format hybrid --use-distributed-optimizer
 --disable-bias-linear --attention-dropout 0.0 --hidden-dropout 0.0
 --lr 3e-4 --data-path /data/tokens --some-future-flag"
"$llmsim" config import-megatron "$args" --gpus 64 >"$tmp/job.yaml" 2>"$tmp/err" ||
	bad "import: $(cat "$tmp/err")"
grep -q '^# Ignored (no effect on a step.s time): --lr --data-path$' "$tmp/job.yaml" ||
	bad "ignored arguments not listed: $(grep Ignored "$tmp/job.yaml")"
grep -q '^# Unknown to llmsim, ignored: --some-future-flag$' "$tmp/job.yaml" ||
	bad "unknown argument not listed"
# 80 layers / (pp 4 x 4 layers per virtual stage) = vpp 5, as the preset.
grep -q '^  vpp: 5$' "$tmp/job.yaml" || bad "vpp not derived: $(grep vpp "$tmp/job.yaml")"
key() { grep -E "\"($1)\"" "$2" | head -1; }
"$llmsim" run "$tmp/job.yaml" --json --no-store >"$tmp/a.json" 2>&1 || bad "run imported job"
"$llmsim" run "$root/workloads/jobs/llama3-70b-h100-64.yaml" --json --no-store \
	>"$tmp/b.json" 2>&1 || bad "run preset job"
for k in step_time_s peak_bytes_per_gpu tokens_per_s; do
	[ "$(key $k "$tmp/a.json")" = "$(key $k "$tmp/b.json")" ] ||
		bad "$k: imported $(key $k "$tmp/a.json") vs preset $(key $k "$tmp/b.json")"
done

# The same job with its split as a --pipeline-model-parallel-layout: pp 4
# x 5 virtual stages of 4 layers, the embedding first and the loss last
# (4 + 18 x 4 + 4 = 80 layers, 20 stages): vpp = 20 / 4 = 5 as Megatron
# infers it, and the same step and peak as the preset.
largs=$(echo "$args" | sed 's/--num-layers-per-virtual-pipeline-stage 4/--pipeline-model-parallel-layout Et*4|(t*4|)*18t*4L/')
"$llmsim" config import-megatron "$largs" --gpus 64 >"$tmp/lay.yaml" 2>"$tmp/err" ||
	bad "import a layout: $(cat "$tmp/err")"
grep -q '^  pp_layout: "Et\*4|(t\*4|)\*18t\*4L"$' "$tmp/lay.yaml" &&
	grep -q '^  vpp: 5$' "$tmp/lay.yaml" ||
	bad "layout: $(grep -E 'vpp|pp_layout' "$tmp/lay.yaml")"
"$llmsim" run "$tmp/lay.yaml" --json --no-store >"$tmp/c.json" 2>&1 || bad "run the layout job"
for k in step_time_s peak_bytes_per_gpu; do
	[ "$(key $k "$tmp/c.json")" = "$(key $k "$tmp/b.json")" ] ||
		bad "$k: layout $(key $k "$tmp/c.json") vs preset $(key $k "$tmp/b.json")"
done
# Megatron's asserts: pp divides the layout's stages (4 stages, pp 3),
# the layout or the layers per virtual stage, not both; not a layout.
lay8="--num-layers 8 --pipeline-model-parallel-layout Et*2|t*2|t*2|t*2L"
"$llmsim" config import-megatron "$lay8 --pipeline-model-parallel-size 3" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "layout has 4 stages, not a multiple of --pipeline-model-parallel-size 3" "$tmp/err" ||
	bad "layout stages: $(cat "$tmp/err")"
"$llmsim" config import-megatron "$lay8 --num-layers-per-virtual-pipeline-stage 2" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "give one of --pipeline-model-parallel-layout and --num-layers-per-virtual-pipeline-stage" "$tmp/err" ||
	bad "layout and vpp layers: $(cat "$tmp/err")"
"$llmsim" config import-megatron "--num-layers 8 --pipeline-model-parallel-layout Ex*2|t*6L" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "pipeline-model-parallel-layout 'Ex\*2|t\*6L': 'x' is not a layer" "$tmp/err" ||
	bad "bad layout: $(cat "$tmp/err")"

# The data-parallel loss and parameter-gather arguments set their
# framework keys (they were 'Unknown to llmsim, ignored': a per-token-loss
# or FP8-parameter run imported as neither), and Megatron's DDP assert
# holds: a per-token loss does not average in the collective (exit 2).
dp8="--num-layers 8 --hidden-size 1024 --num-attention-heads 16
 --seq-length 2048 --max-position-embeddings 2048 --micro-batch-size 1
 --global-batch-size 8 --padded-vocab-size 32000 --fp8-format hybrid"
"$llmsim" config import-megatron "$dp8 --calculate-per-token-loss --fp8-param-gather" \
	--gpus 8 >"$tmp/dp.yaml" 2>"$tmp/err" || bad "import dp flags: $(cat "$tmp/err")"
grep -q '^  per_token_loss: true$' "$tmp/dp.yaml" &&
	grep -q '^  fp8_param_gather: true$' "$tmp/dp.yaml" &&
	! grep -q 'Unknown to llmsim' "$tmp/dp.yaml" ||
	bad "dp flags: $(grep -E 'per_token|fp8_param|Unknown' "$tmp/dp.yaml")"
"$llmsim" config import-megatron "$dp8 --calculate-per-token-loss --ddp-average-in-collective" \
	--gpus 8 >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "'framework.per_token_loss' needs average_in_collective false" "$tmp/err" ||
	bad "per-token loss averaged in the collective: $(cat "$tmp/err")"

# Words after --, Megatron's defaults: GeLU, LayerNorm, tied embeddings,
# fp32, ffn 4 x hidden (4 x 1024 = 4096), and tp x pp GPUs (2 x 4 = 8:
# one node of mi300x-roce); biases on every linear layer (add_bias_linear
# True without --disable-bias-linear), attention and hidden dropout 0.1
# (arguments.py), the fused wgrad accumulation.
"$llmsim" config import-megatron --system mi300x-roce -- --num-layers 8 \
	--hidden-size 1024 --num-attention-heads 16 --seq-length 2048 \
	--max-position-embeddings 2048 --padded-vocab-size 32000 \
	--micro-batch-size 1 --global-batch-size 8 \
	--tensor-model-parallel-size 2 --pipeline-model-parallel-size 4 \
	>"$tmp/small.yaml" 2>"$tmp/err" || bad "import with --: $(cat "$tmp/err")"
for want in "hidden_act: gelu" "norm: layernorm" "tie_word_embeddings: true" \
	"dtype: fp32" "intermediate_size: 4096" "system: {preset: mi300x-roce, nodes: 1}" \
	"attention_bias: true" "o_proj_bias: true" "mlp_bias: true" "dropout: true"; do
	grep -q "$want" "$tmp/small.yaml" || bad "defaults: no '$want'"
done
"$llmsim" run "$tmp/small.yaml" --no-store >/dev/null 2>&1 || bad "the small import does not run"

# --recompute-modules takes the words up to the next argument (Megatron's
# nargs '*'): a list of llmsim's module names, the next argument read on.
"$llmsim" config import-megatron --gpus 8 -- --num-layers 8 --hidden-size 1024 \
	--num-attention-heads 16 --seq-length 2048 --padded-vocab-size 32000 \
	--max-position-embeddings 2048 --global-batch-size 8 --recompute-granularity selective \
	--recompute-modules core_attn mlp --tensor-model-parallel-size 2 \
	>"$tmp/rc.yaml" 2>"$tmp/err" || bad "import --recompute-modules: $(cat "$tmp/err")"
grep -q '^  recompute_modules: \[core_attn, mlp\]$' "$tmp/rc.yaml" &&
	grep -q '^  tp: 2$' "$tmp/rc.yaml" ||
	bad "recompute modules: $(grep -E 'recompute|tp:' "$tmp/rc.yaml")"
# A long list (32 x shared_experts, 15 characters each: past the 512-byte
# list buffer before duplicates were dropped) imports as the one name.
"$llmsim" config import-megatron --gpus 8 -- --num-layers 8 --hidden-size 1024 \
	--num-attention-heads 16 --seq-length 2048 --padded-vocab-size 32000 \
	--max-position-embeddings 2048 --global-batch-size 8 --recompute-granularity selective \
	--recompute-modules $(printf 'shared_experts %.0s' $(seq 32)) core_attn shared_experts --bf16 \
	>"$tmp/rcl.yaml" 2>"$tmp/err" || bad "import a long --recompute-modules: $(cat "$tmp/err")"
grep -q '^  recompute_modules: \[shared_experts, core_attn\]$' "$tmp/rcl.yaml" ||
	bad "long recompute modules: $(grep recompute "$tmp/rcl.yaml")"
# --recompute-modules with no names is the empty list (Megatron: only
# None means [core_attn]): recompute nothing, and it survives a replay.
"$llmsim" config import-megatron --gpus 8 -- --num-layers 8 --hidden-size 1024 \
	--num-attention-heads 16 --seq-length 2048 --padded-vocab-size 32000 \
	--max-position-embeddings 2048 --global-batch-size 8 --recompute-granularity selective \
	--recompute-modules --tensor-model-parallel-size 2 \
	>"$tmp/rce.yaml" 2>"$tmp/err" || bad "import an empty --recompute-modules: $(cat "$tmp/err")"
grep -q '^  recompute_modules: \[\]$' "$tmp/rce.yaml" ||
	bad "empty recompute modules: $(grep recompute "$tmp/rce.yaml")"
"$llmsim" config show "$tmp/rce.yaml" 2>"$tmp/err" | grep -q '^  recompute_modules: \[\]$' ||
	bad "config show drops the empty recompute_modules: $(cat "$tmp/err")"
"$llmsim" config import-megatron "--num-layers 2 --recompute-modules core_attn mlpx" \
	>/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "does not know the value 'mlpx'" "$tmp/err" ||
	bad "bad module: $(cat "$tmp/err")"

# The arguments llmsim models since the importer was written: no
# gradient-accumulation fusion, dropout 0 (both), no linear biases.
"$llmsim" config import-megatron --gpus 8 -- --num-layers 8 --hidden-size 1024 \
	--num-attention-heads 16 --seq-length 2048 --padded-vocab-size 32000 \
	--max-position-embeddings 2048 --global-batch-size 8 --bf16 \
	--no-gradient-accumulation-fusion --attention-dropout 0 \
	--hidden-dropout=0.0 --disable-bias-linear \
	>"$tmp/nf.yaml" 2>"$tmp/err" || bad "import the modeled flags: $(cat "$tmp/err")"
for want in "gradient_accumulation_fusion: false" "dropout: false" \
	"attention_bias: false" "mlp_bias: false"; do
	grep -q "^  $want$" "$tmp/nf.yaml" || bad "modeled flags: no '$want'"
done
grep -q 'Ignored.*\(dropout\|fusion\|bias-linear\)' "$tmp/nf.yaml" &&
	bad "modeled flags listed as ignored: $(grep Ignored "$tmp/nf.yaml")"
# One dropout left at Megatron's 0.1 keeps the dropout layers; --add-qkv-bias
# puts q/k/v's bias back, not linear_proj's (attention.py: linear_proj
# bias=add_bias_linear; it was charged with the q/k/v one).
"$llmsim" config import-megatron --gpus 8 -- --num-layers 8 --hidden-size 1024 \
	--num-attention-heads 16 --seq-length 2048 --padded-vocab-size 32000 \
	--max-position-embeddings 2048 --global-batch-size 8 --attention-dropout 0 \
	--disable-bias-linear --add-qkv-bias >"$tmp/hd.yaml" 2>"$tmp/err" ||
	bad "import one dropout: $(cat "$tmp/err")"
grep -q "^  dropout: true$" "$tmp/hd.yaml" && grep -q "^  attention_bias: true$" "$tmp/hd.yaml" &&
	grep -q "^  o_proj_bias: false$" "$tmp/hd.yaml" && grep -q "^  mlp_bias: false$" "$tmp/hd.yaml" ||
	bad "hidden dropout default / qkv bias: $(grep -E 'dropout|bias' "$tmp/hd.yaml")"
"$llmsim" config import-megatron "--num-layers 2 --attention-dropout lots" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "attention-dropout: expected a probability from 0 to 1, got 'lots'" "$tmp/err" ||
	bad "bad dropout: $(cat "$tmp/err")"

# An MoE import: Megatron's moe_permute_fusion is off unless the flag is
# given (TransformerConfig @ d7288711ba), where llmsim's key defaults on.
margs="--num-layers 4 --hidden-size 1024 --num-attention-heads 16
 --num-experts 8 --moe-router-topk 2 --moe-ffn-hidden-size 512
 --seq-length 2048 --micro-batch-size 1 --global-batch-size 8
 --padded-vocab-size 32000 --bf16"
"$llmsim" config import-megatron "$margs" --gpus 8 >"$tmp/moe.yaml" 2>"$tmp/err" &&
	grep -q '^  permute_fusion: false$' "$tmp/moe.yaml" ||
	bad "MoE import without --moe-permute-fusion: $(cat "$tmp/err")"
"$llmsim" config import-megatron "$margs --moe-permute-fusion" --gpus 8 \
	>"$tmp/moe.yaml" 2>"$tmp/err" &&
	grep -q '^  permute_fusion: true$' "$tmp/moe.yaml" ||
	bad "MoE import with --moe-permute-fusion: $(cat "$tmp/err")"
# Megatron's MoE defaults where llmsim's differ (TransformerConfig @
# 2a75ac12c): the allgather dispatcher, the router in the parameters'
# dtype (bf16 here); and the MoE arguments: flex with its backend, the EP
# overlap with delayed wgrad, the router's fp32, the expert TP size.
"$llmsim" config import-megatron "$margs --expert-model-parallel-size 4" --gpus 8 \
	>"$tmp/md.yaml" 2>"$tmp/err" || bad "MoE defaults: $(cat "$tmp/err")"
grep -q '^  dispatcher: allgather$' "$tmp/md.yaml" && grep -q '^  router_dtype: bf16$' "$tmp/md.yaml" ||
	bad "MoE defaults: $(sed -n '/^moe:/,$p' "$tmp/md.yaml")"
"$llmsim" config import-megatron "$margs --expert-model-parallel-size 4 --expert-tensor-parallel-size 1
 --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend hybridep --moe-router-dtype fp32
 --overlap-moe-expert-parallel-comm --delay-wgrad-compute --moe-shared-expert-overlap" --gpus 8 \
	>"$tmp/mf.yaml" 2>"$tmp/err" || bad "MoE flags: $(cat "$tmp/err")"
for want in "etp: 1" "dispatcher: hybridep" "router_dtype: fp32" "a2a_overlap: true" \
	"delay_wgrad: true" "shared_expert_overlap: true"; do
	grep -q "^  $want$" "$tmp/mf.yaml" || bad "MoE flags: no '$want'"
done
! grep -q 'Unknown to llmsim' "$tmp/mf.yaml" || bad "MoE flags: $(grep Unknown "$tmp/mf.yaml")"
"$llmsim" run "$tmp/mf.yaml" --no-store >/dev/null 2>&1 || bad "the MoE flags' import does not run"
"$llmsim" config import-megatron "$margs --moe-token-dispatcher-type flex" --gpus 8 \
	2>/dev/null | grep -q '^  dispatcher: deepep$' || bad "flex's default backend is not deepep"
# --moe-router-topk left out is Megatron's moe_router_topk 2
# (TransformerConfig @ d98e8a64dd), not an incomplete job; given, it stands.
nok=$(printf '%s' "$margs" | sed 's/--moe-router-topk 2 //')
"$llmsim" config import-megatron "$nok" --gpus 8 >"$tmp/tk.yaml" 2>"$tmp/err" &&
	grep -q '^  num_experts_per_tok: 2$' "$tmp/tk.yaml" || bad "topk default: $(cat "$tmp/err")"
"$llmsim" config import-megatron "$nok --moe-router-topk 6" --gpus 8 2>/dev/null |
	grep -q '^  num_experts_per_tok: 6$' || bad "--moe-router-topk 6 not kept"
# Without --moe-grouped-gemm Megatron loops over its local experts
# (SequentialMLP), which llmsim does not simulate: a warning, none with it.
grep -q 'no --moe-grouped-gemm' "$tmp/tk.yaml" "$tmp/err" || bad "no SequentialMLP warning"
"$llmsim" config import-megatron "$margs --moe-grouped-gemm" --gpus 8 2>&1 >/dev/null |
	grep -q 'moe-grouped-gemm' && bad "SequentialMLP warning with --moe-grouped-gemm"
# --moe-use-legacy-grouped-gemm is read only inside `if moe_grouped_gemm:`
# (moe_module_specs.py): alone it still means SequentialMLP, a warning
# that says so; with --moe-grouped-gemm no warning.
"$llmsim" config import-megatron "$margs --moe-use-legacy-grouped-gemm" --gpus 8 2>&1 >/dev/null |
	grep -q 'legacy-grouped-gemm alone has no effect' || bad "legacy grouped gemm alone: no warning"
"$llmsim" config import-megatron "$margs --moe-grouped-gemm --moe-use-legacy-grouped-gemm" --gpus 8 2>&1 >/dev/null |
	grep -q 'moe-grouped-gemm' && bad "SequentialMLP warning with both grouped gemm flags"
"$llmsim" config import-megatron "$margs --moe-token-dispatcher-type nccl" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "does not know the value 'nccl'" "$tmp/err" || bad "bad dispatcher: $(cat "$tmp/err")"
# A job's step time in seconds (llmsim run --json).
step() {
	"$llmsim" run "$1" --json --no-store 2>/dev/null |
		sed -n 's/.*"step_time_s":[[:space:]]*\([0-9.eE+-]*\).*/\1/p' | head -1
}
# --moe-layer-freq (arguments.py moe_freq_type): N is model.moe_layer_freq;
# a list pattern (DeepSeek-V3's "([0]*3+[1]*58)") gives model.moe_layers,
# its length the layer count (Megatron asserts it); a count on either side
# of '*', groups repeated. 4 layers: [0]*1+[1]*3 -> MoE layers 1 2 3;
# 2*([0]+[1]) -> 1 3. Dense layers make a shorter step than all-MoE.
"$llmsim" config import-megatron "$margs --moe-layer-freq ([0]*1+[1]*3)" --gpus 8 \
	>"$tmp/lf.yaml" 2>"$tmp/err" || bad "moe-layer-freq pattern: $(cat "$tmp/err")"
grep -q '^  moe_layers: \[1, 2, 3\]$' "$tmp/lf.yaml" || bad "pattern: $(grep moe_layers "$tmp/lf.yaml")"
"$llmsim" config import-megatron "$margs --moe-layer-freq 2*([0]+[1])" --gpus 8 2>/dev/null |
	grep -q '^  moe_layers: \[1, 3\]$' || bad "pattern with a leading count"
"$llmsim" config import-megatron "$margs --moe-layer-freq 2" --gpus 8 2>/dev/null |
	grep -q '^  moe_layer_freq: 2$' || bad "--moe-layer-freq N"
"$llmsim" config import-megatron "$margs" --gpus 8 >"$tmp/la.yaml" 2>/dev/null
sa=$(step "$tmp/la.yaml"); sl=$(step "$tmp/lf.yaml")
awk -v a="$sa" -v l="$sl" 'BEGIN { exit !(l + 0 > 0 && l + 0 < a + 0) }' ||
	bad "one dense layer of 4: step $sl, all MoE $sa"
for f in '([0]*1+[1]*4)/the pattern has 5 layers, --num-layers 4' \
	'([]*4)/the pattern has no layers' '[2]*4/a list item is not 0 or 1' \
	'([0]+[1]*3/expected .)' 'x/expected a whole number from 1 or a list pattern' \
	"$(printf '%.0s(' $(seq 100))[1]/parentheses nested deeper than 64"; do
	"$llmsim" config import-megatron "$margs --moe-layer-freq ${f%%/*}" >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q "${f#*/}" "$tmp/err" || bad "bad pattern ${f%%/*}: $(cat "$tmp/err")"
done
# --moe-layer-freq alone decides the MoE layers (Megatron reads only it):
# over a preset whose rules differ (llama4-maverick: decoder_sparse_step
# 2, MoE where (i + 1) % 2 == 0) N = 2 means i % 2 == 0, layers 0 2 ...
# 46; with the preset's step kept the two rules meet nowhere, a dense
# model (no moe_dispatch op). The last --moe-layer-freq wins.
mv="--num-layers 48 --seq-length 4096 --micro-batch-size 1 --global-batch-size 64
 --bf16 --expert-model-parallel-size 8 --pipeline-model-parallel-size 4"
"$llmsim" config import-megatron "$mv --moe-layer-freq 2" --model llama4-maverick \
	--gpus 64 >"$tmp/mv.yaml" 2>"$tmp/err" || bad "maverick freq 2: $(cat "$tmp/err")"
for want in 'moe_layer_freq: 2' 'moe_layers: \[\]' 'first_k_dense_replace: 0' \
	'decoder_sparse_step: 1' 'mlp_only_layers: \[\]'; do
	grep -q "^  $want$" "$tmp/mv.yaml" || bad "maverick freq 2: no '$want'"
done
"$llmsim" run "$tmp/mv.yaml" --json --no-store 2>/dev/null | grep -q '"moe_dispatch"' ||
	bad "maverick with --moe-layer-freq 2 has no MoE layer"
"$llmsim" config import-megatron "$margs --moe-layer-freq ([0]*1+[1]*3) --moe-layer-freq 2" \
	--gpus 8 >"$tmp/l2.yaml" 2>/dev/null
grep -q '^  moe_layers: \[\]$' "$tmp/l2.yaml" && grep -q '^  moe_layer_freq: 2$' "$tmp/l2.yaml" ||
	bad "list then N: $(grep moe_layer "$tmp/l2.yaml")"
"$llmsim" config import-megatron "$margs --moe-layer-freq 2 --moe-layer-freq [0,1,1,1,]" \
	--gpus 8 >"$tmp/l2.yaml" 2>"$tmp/err"
grep -q '^  moe_layers: \[1, 2, 3\]$' "$tmp/l2.yaml" && grep -q '^  moe_layer_freq: 1$' "$tmp/l2.yaml" ||
	bad "N then list (trailing comma): $(grep moe_layer "$tmp/l2.yaml") $(cat "$tmp/err")"
# Dense layers only ([0]*4): first_k_dense_replace 4 = the pattern's
# length, loaded as the dense model it is, with the model's note.
"$llmsim" config import-megatron "$margs --moe-layer-freq [0]*4" --gpus 8 \
	>"$tmp/l0.yaml" 2>"$tmp/err" || bad "all-dense pattern: $(cat "$tmp/err")"
grep -q '^  first_k_dense_replace: 4$' "$tmp/l0.yaml" || bad "all-dense: $(grep first_k "$tmp/l0.yaml")"
"$llmsim" run "$tmp/l0.yaml" --no-store >/dev/null 2>"$tmp/err"
grep -q 'simulated as a dense model' "$tmp/err" || bad "all-dense: no note: $(cat "$tmp/err")"
# An empty group repeated 15000 times over 999999 copies (1.5e10 empty
# copies before the early return, minutes of CPU): parsed at once.
hostile="[]$(printf '%.0s*999999' $(seq 15000))+[1]*4"
timeout 10 "$llmsim" config import-megatron "$margs --moe-layer-freq $hostile" --gpus 8 \
	>/dev/null 2>&1 || bad "an empty group repeated: slow or refused"
# fp64 routers are valid Megatron, not an llmsim dtype: a clear refusal.
"$llmsim" config import-megatron "$margs --moe-router-dtype fp64" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q 'no fp64' "$tmp/err" || bad "fp64 router: $(cat "$tmp/err")"
# Token dropping: the capacity factor (a number) and the padding to it.
"$llmsim" config import-megatron "$margs --expert-model-parallel-size 4 --moe-token-dispatcher-type alltoall
 --moe-expert-capacity-factor 1.25 --moe-pad-expert-input-to-capacity" --gpus 8 \
	>"$tmp/mc.yaml" 2>"$tmp/err" || bad "capacity: $(cat "$tmp/err")"
grep -q '^  capacity_factor: 1.25$' "$tmp/mc.yaml" && grep -q '^  pad_to_capacity: true$' "$tmp/mc.yaml" ||
	bad "capacity: $(sed -n '/^moe:/,$p' "$tmp/mc.yaml")"
"$llmsim" run "$tmp/mc.yaml" --no-store >/dev/null 2>&1 || bad "the capacity import does not run"
"$llmsim" config import-megatron "$margs --moe-expert-capacity-factor lots" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "moe-expert-capacity-factor: expected a number above 0 and at most 1000, got 'lots'" "$tmp/err" ||
	bad "bad capacity factor: $(cat "$tmp/err")"
# --fp8-format's fp8 GEMMs stand whether --bf16 comes before or after it
# (after it, the import read bf16).
"$llmsim" config import-megatron "$margs --fp8-format hybrid" --gpus 8 2>/dev/null |
	grep -q '^  dtype: fp8$' || bad "--bf16 --fp8-format: not fp8"
"$llmsim" config import-megatron "$(echo "$margs" | sed 's/--bf16//') --fp8-format hybrid --bf16" \
	--gpus 8 >"$tmp/f8.yaml" 2>/dev/null
grep -q '^  dtype: fp8$' "$tmp/f8.yaml" && grep -q '^  router_dtype: bf16$' "$tmp/f8.yaml" ||
	bad "--fp8-format --bf16: $(grep dtype "$tmp/f8.yaml")"

# The experts' activation flags (they were 'Unknown to llmsim, ignored'):
# --use-transformer-engine-op-fuser turns off the second kernel of the
# weighted GLU's backward (framework glu_probs_grad_kernel, true in the
# megatron-core preset), --no-bias-swiglu-fusion runs the gated activation
# eagerly; both go into the framework's elementwise mapping. The op fuser's
# step is shorter than the preset's (one kernel less a layer-microbatch),
# the eager activation's longer (two kernels forward, four backward).
gargs="$margs --swiglu --disable-bias-linear"
"$llmsim" config import-megatron "$gargs" --gpus 8 >"$tmp/g0.yaml" 2>"$tmp/err" ||
	bad "gated MoE import: $(cat "$tmp/err")"
"$llmsim" config import-megatron "$gargs --use-transformer-engine-op-fuser --no-bias-swiglu-fusion" \
	--gpus 8 >"$tmp/g2.yaml" 2>"$tmp/err" || bad "import the activation flags: $(cat "$tmp/err")"
sed -n '/^framework:$/,/^training:$/p' "$tmp/g2.yaml" | tr '\n' '|' |
	grep -q '^framework:|  preset: megatron-core|  elementwise:|    glu_probs_grad_kernel: false|    eager_activation: true|training:|$' &&
	! grep -q 'Unknown to llmsim' "$tmp/g2.yaml" ||
	bad "activation flags: $(sed -n '/^framework:/,/^training:/p' "$tmp/g2.yaml")"
"$llmsim" config import-megatron "$gargs --use-transformer-engine-op-fuser" --gpus 8 \
	>"$tmp/gf.yaml" 2>"$tmp/err" || bad "import the op fuser: $(cat "$tmp/err")"
"$llmsim" config import-megatron "$gargs --no-bias-swiglu-fusion" --gpus 8 \
	>"$tmp/ge.yaml" 2>"$tmp/err" || bad "import the eager activation: $(cat "$tmp/err")"
s0=$(step "$tmp/g0.yaml"); sf=$(step "$tmp/gf.yaml"); se=$(step "$tmp/ge.yaml")
awk -v a="$s0" -v f="$sf" -v e="$se" 'BEGIN { exit !(a + 0 > 0 && f + 0 < a + 0 && e + 0 > a + 0) }' ||
	bad "activation flags' steps: preset $s0, op fuser $sf, eager $se"

# Megatron's derived sizes (training/arguments.py validate_args,
# training/tokenizer/tokenizer.py _vocab_size_with_padding): --swiglu
# without --ffn-hidden-size is int((4 x 1024 x 2 / 3) / 64) x 64 = 2688
# (it imported 4 x 1024 = 4096); --vocab-size 50257 at tp 2 is padded to
# a multiple of 128 x 2 = 256: 50432; with --make-vocab-size-divisible-by
# 64 at tp 1, 50304; 128256 (a multiple of 128) stays, + 1 under
# NullTokenizer is 128384; --padded-vocab-size wins whatever the order.
vargs="--num-layers 4 --hidden-size 1024 --num-attention-heads 16
 --seq-length 2048 --micro-batch-size 1 --global-batch-size 8 --bf16"
imported() {	# imported KEY WANT ARGS...: the import's KEY is WANT
	k=$1 want=$2
	shift 2
	got=$("$llmsim" config import-megatron --gpus 8 "$vargs $*" 2>"$tmp/err" |
		sed -n "s/^  $k: //p")
	[ "$got" = "$want" ] || bad "import of '$*': $k '$got', expected $want $(head -2 "$tmp/err")"
}
# --num-query-groups defaults to 1: --group-query-attention alone is one KV
# head (it imported 16, one a query head); without the flag the groups are
# ignored (the key absent: one a query head)
imported num_key_value_heads 1 --group-query-attention --padded-vocab-size 32000
imported num_key_value_heads 4 --group-query-attention --num-query-groups 4 --padded-vocab-size 32000
imported num_key_value_heads "" --num-query-groups 4 --padded-vocab-size 32000
imported intermediate_size 2688 --swiglu --padded-vocab-size 32000
imported intermediate_size 4096 --padded-vocab-size 32000
imported intermediate_size 3000 --swiglu --ffn-hidden-size 3000 --padded-vocab-size 32000
imported vocab_size 50432 --vocab-size 50257 --tensor-model-parallel-size 2
imported vocab_size 50304 --vocab-size 50257 --make-vocab-size-divisible-by 64
imported vocab_size 128256 --vocab-size 128256
imported vocab_size 128384 --vocab-size 128256 --tokenizer-type NullTokenizer
imported vocab_size 50304 --padded-vocab-size 50304 --vocab-size 50257 --tensor-model-parallel-size 2
"$llmsim" config import-megatron --gpus 8 "$vargs --vocab-size 50257 --make-vocab-size-divisible-by 0" \
	>/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "make-vocab-size-divisible-by: expected at least 1" "$tmp/err" ||
	bad "--make-vocab-size-divisible-by 0: $(cat "$tmp/err")"

# A --name with a blank, before the command line: it was taken for the
# command line (a word with a blank), and the command line for the name
# (exit 2, "hidden_size ... required"); one with " #" printed bare lost
# the rest as a comment. Also --nam (getopt_long's prefix).
for o in --name --nam; do
	"$llmsim" config import-megatron --gpus 8 $o "run #2 of 3" "$vargs --padded-vocab-size 32000" \
		>"$tmp/named.yaml" 2>"$tmp/err" || bad "$o 'run #2 of 3': exit $? $(head -2 "$tmp/err")"
	"$llmsim" config show "$tmp/named.yaml" 2>/dev/null | grep -q '^name: "run #2 of 3"$' ||
		bad "$o 'run #2 of 3': the name did not load whole"
done

# Incomplete (no --hidden-size) and bad values: exit 2 with a message.
"$llmsim" config import-megatron "--num-layers 8 --num-attention-heads 16" --gpus 8 \
	>"$tmp/out" 2>"$tmp/err"
[ $? = 2 ] && grep -q "hidden_size" "$tmp/err" && [ ! -s "$tmp/out" ] ||
	bad "incomplete import: $(head -3 "$tmp/err")"
"$llmsim" config import-megatron "--num-layers eighty" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "num-layers: expected a whole number" "$tmp/err" ||
	bad "bad value: $(cat "$tmp/err")"
"$llmsim" config import-megatron "--normalization FancyNorm --num-layers 2" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "does not know the value 'FancyNorm'" "$tmp/err" ||
	bad "bad choice: $(cat "$tmp/err")"
# A parallel size of 0 exited 2 without a word; a value past 12 digits
# was saturated by atol ("9223372036854775807 GPUs"); the layers per
# virtual stage must divide a stage's layers (Megatron's arguments.py
# assert; 0 and 16 / 5 were taken as no interleaving and vpp 3).
"$llmsim" config import-megatron "--tensor-model-parallel-size 0 --num-layers 2" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "tp x pp x cp = 0 GPUs" "$tmp/err" ||
	bad "tp 0: $(cat "$tmp/err")"
"$llmsim" config import-megatron "--tensor-model-parallel-size 99999999999999999999" >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "expected a whole number of at most 12 digits" "$tmp/err" ||
	bad "tp past 12 digits: $(cat "$tmp/err")"
for v in 0 5; do
	"$llmsim" config import-megatron "--num-layers 32 --pipeline-model-parallel-size 2 --num-layers-per-virtual-pipeline-stage $v" \
		--gpus 8 >/dev/null 2>"$tmp/err"
	[ $? = 2 ] && grep -q "stage $v does not divide the 16 layers of a pipeline stage" "$tmp/err" ||
		bad "vpp layers $v: $(cat "$tmp/err")"
done
exit $fail
