#!/bin/sh
# KV capacity of every held-out job of this folder against TensorRT-LLM's:
# job, measured, llmsim, and how many GiB of memory outside the KV pool
# llmsim lacks (+) or has too much (-): a range where the measurement is a
# count of sequences of max_seq_len = ISL + OSL + 1000 (+1 for the overlap
# loop's extra token, in 32-token blocks).
# usage: sh results/heldout/trtllm-kv-capacity/run.sh [LLMSIM]
d=$(dirname "$0"); b=${1:-build/llmsim}
tail -n +2 "$d/measured.tsv" | while IFS="$(printf '\t')" read -r n v u; do
	"$b" run "$d/$n.yaml" --json --no-store | python3 -c '
import json, math, sys
n, v, u = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = json.load(sys.stdin); m = d["memory"]; s = d["job"]["serving"] if "serving" in d["job"] else {}
tok, kb, g = m["kv_capacity_tokens"], m["kv_bytes_per_token"], 1 << 30
f = 0.8
if u == "tokens":
    print("%-34s %8d tok  llmsim %8d tok  short %+.2f GiB" % (n, v, tok, (tok - v) * kb / f / g))
else:
    isl, osl = (int(x) for x in n.split("-")[-2:])
    seq = math.ceil((isl + osl + 1001) / 32) * 32
    lo, hi = (tok - (v + 1) * seq) * kb / f / g, (tok - v * seq) * kb / f / g
    print("%-34s %8d seq  llmsim %8d seq  short %+.2f..%+.2f GiB" % (n, v, tok // seq, lo, hi))
' "$n" "$v" "$u"
done
