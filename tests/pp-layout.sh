#!/bin/sh
# pp-layout.sh - Megatron-Core's pipeline layout strings
# (parallelism.pp_layout, import-megatron --pipeline-model-parallel-layout)
# as Megatron accepts and refuses them
# (megatron/core/transformer/pipeline_parallel_layer_layout.py,
# validate_layer_layout), and the MTP module costed in the stage that
# holds it when it has a stage of its own (Megatron-Bridge's "...|m|L").
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
use_checkout_data
job=$root/workloads/jobs/deepseek-v3-2048-pp16.yaml	# 61 layers, 1 MTP, pp 16

# ---- the MTP module where the layout puts it. DeepSeek-V3, pp 16: 5
# layers, 13 stages of 4, 4; then the MTP module with the loss on stage
# 15 (with) or on stage 14 after its 4 layers, the loss alone on 15
# (alone). The MTP module's body (norms, projection, its layer) moves
# from stage 15 to 14, its output head and loss stay on 15 (Megatron's
# process_mtp_loss on the post-process stage), so stage 14 gains what
# stage 15 loses: alone[14] - with[14] = with[15] - alone[15].
with='Et*5|(t*4|)*13t*4|mL'
alone='Et*5|(t*4|)*13t*4,m|L'
"$llmsim" run "$job" --no-store --json --set "parallelism.pp_layout=$with" \
	>"$tmp/with.json" 2>"$tmp/err" || { echo "FAIL: run $with"; cat "$tmp/err"; fail=1; }
"$llmsim" run "$job" --no-store --json --set "parallelism.pp_layout=$alone" \
	>"$tmp/alone.json" 2>"$tmp/err" || { echo "FAIL: run $alone"; cat "$tmp/err"; fail=1; }
python3 - "$tmp/with.json" "$tmp/alone.json" <<'PY' || fail=1
import json, sys
w, a = (json.load(open(f)) for f in sys.argv[1:3])
cw, ca = w["pipeline"]["stage_compute_s"], a["pipeline"]["stage_compute_s"]
gain, loss = ca[14] - cw[14], cw[15] - ca[15]
ok = True
def bad(msg):
    global ok
    print("FAIL: " + msg)
    ok = False
# The body is a MoE layer and more: above a third of a 4-layer stage.
if not gain > cw[13] / 12:
    bad("MTP stage 14 gained %.3f s, no MTP body" % gain)
if abs(gain - loss) > 0.01 * gain:
    bad("stage 14 gained %.4f s, stage 15 lost %.4f s" % (gain, loss))
if not (ca[14] > ca[13] and ca[15] < cw[15]):
    bad("stage times out of order: %s" % ca[12:])
# Parameters: stage 14 gains the MTP module and the embedding Megatron
# builds on an MTP stage of its own (V h / tp = 129280 x 7168 / 2 =
# 463339520); stage 15 loses the module.
pw = [s["params_per_gpu"] for s in w["memory"]["stages"]]
pa = [s["params_per_gpu"] for s in a["memory"]["stages"]]
if (pa[14] - pw[14]) - (pw[15] - pa[15]) != 129280 * 7168 // 2:
    bad("params: stage 14 %d -> %d, stage 15 %d -> %d" %
        (pw[14], pa[14], pw[15], pa[15]))
sys.exit(0 if ok else 1)
PY

# ---- accepted as Megatron accepts: its own example (pp 16 x vp 2: the
# MTP module alone in stage 30, chunk 1 of rank 14; the loss alone in
# 31), a count of 0, a separator under "*n" (Megatron unrolls any
# character: "|*1" is "|").
for case in "2|Ettt|(tt|)*29,m|L" "1|Et*5|(t*4|)*13t*4t*0,m|L" \
	"2|Ettt|(tt|)*28,tt|*1m|L"; do
	vpp=${case%%|*} lay=${case#*|}
	"$llmsim" config show "$job" --set parallelism.vpp=$vpp \
		--set "parallelism.pp_layout=$lay" >/dev/null 2>"$tmp/err" ||
		{ echo "FAIL: refused $lay (vpp $vpp): $(cat "$tmp/err")"; fail=1; }
done

# ---- refused as Megatron refuses, exit 2 at the value, the rule named.
# refuse VPP MTP LAYOUT TEXT
refuse() {
	"$llmsim" config show "$job" --set parallelism.vpp=$1 \
		--set moe.mtp_layers=$2 --set "parallelism.pp_layout=$3" \
		>/dev/null 2>"$tmp/err"
	st=$?
	[ $st = 2 ] && grep -qF -- "--set:3:23: error: layout: pp_layout" "$tmp/err" &&
		grep -qF -- "$4" "$tmp/err" ||
		{ echo "FAIL: $3 (vpp $1, mtp $2): exit $st: $(cat "$tmp/err")"; fail=1; }
}
refuse 1 1 'Et*5|(t*4|)*13t*3m|tL' "Megatron's rule: decoder layers must be placed before MTP layers"
refuse 1 2 'Et*5|(t*4|)*13t*4m|mL' "Megatron's rule: all of the MTP layers must be in the same one virtual pipeline stage"
# vp 2: stage 15 is chunk 0 of rank 15, the MTP must be in a last chunk
# (stages 16-31); then 15 empty stages and the loss.
refuse 2 1 'Et*3|(t*4|)*14t*2,m|(|)*15L' "stage 15, chunk 0 of 2 of rank 15; Megatron's rule: the MTP is always in the last virtual pipeline stage of its rank"
refuse 1 2 'Et*5|(t*4|)*13t*4,m|L' "has 1 MTP modules m but moe.mtp_layers is 2; Megatron's rule"
refuse 1 1 'tEt*4|(t*4|)*13t*4,m|L' "Megatron's rule: the first layer must be embedding"
refuse 1 1 'Et*5|(t*4|)*13t*4,m|LL' "Megatron's rule: the last layer must be loss"
# Megatron runs a stage with nothing in it as a copy; llmsim says so.
refuse 1 1 'Et*5|(t*4|)*12t*8||mL' "stage 14 holds nothing"

# ---- import-megatron: Megatron-Bridge's DeepSeek-V3 layout with its
# MTP module (--mtp-num-layers, which it did not map: the import was
# refused whatever the layout).
args="--num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432
--num-attention-heads 128 --padded-vocab-size 129280 --num-experts 256
--moe-router-topk 8 --moe-ffn-hidden-size 2048 --seq-length 4096
--micro-batch-size 1 --global-batch-size 16384 --tensor-model-parallel-size 2
--pipeline-model-parallel-size 16 --expert-model-parallel-size 64
--sequence-parallel --bf16 --pipeline-model-parallel-layout Ettt|(tt|)*29,m|L"
"$llmsim" config import-megatron "$args --mtp-num-layers 1" --gpus 2048 \
	>"$tmp/imp.yaml" 2>"$tmp/err" &&
	grep -q '^  vpp: 2$' "$tmp/imp.yaml" && grep -q '^  mtp_layers: 1$' "$tmp/imp.yaml" ||
	{ echo "FAIL: import the Bridge layout: $(cat "$tmp/err")"; fail=1; }
"$llmsim" config import-megatron "$args" --gpus 2048 >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "but moe.mtp_layers is 0; Megatron's rule" "$tmp/err" ||
	{ echo "FAIL: import without --mtp-num-layers: $(head -2 "$tmp/err")"; fail=1; }
# ---- as many virtual stages as layers + 2 where the end stages may hold
# only the embedding and the loss: Megatron-Core's account_for_embedding/
# loss_in_pipeline_split (framework pp_split megatron; Megatron-Bridge's
# Llama 3.1 405B recipe: 126 layers on pp 16 x vp 8 = 128). Llama 3 8B,
# 32 layers: pp 2 x vpp 17 = 34 runs; 2 x 18 = 36 is refused; the front
# split (one layer at least a stage) refuses 34 too.
job8=$root/workloads/jobs/default.yaml
set8="--set training.global_batch_size=16 --set parallelism.tp=1 --set parallelism.pp=2 --set parallelism.tp_comm_overlap=false --set parallelism.sequence_parallel=false"
"$llmsim" run "$job8" --no-store --json $set8 --set parallelism.vpp=17 \
	>"$tmp/l34.json" 2>"$tmp/err" || { echo "FAIL: pp 2 x vpp 17 on 32 layers: $(head -2 "$tmp/err")"; fail=1; }
"$llmsim" run "$job8" --no-store $set8 --set parallelism.vpp=18 >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "exceeds the model's 32 layers plus the embedding and the loss" "$tmp/err" ||
	{ echo "FAIL: pp 2 x vpp 18 on 32 layers: $(head -2 "$tmp/err")"; fail=1; }
"$llmsim" run "$job8" --no-store $set8 --set parallelism.vpp=17 \
	--set framework.pp_split=front >/dev/null 2>"$tmp/err"
[ $? = 2 ] && grep -q "exceeds the model's 32 layers$" "$tmp/err" ||
	{ echo "FAIL: front split, 34 stages: $(head -2 "$tmp/err")"; fail=1; }
exit $fail
