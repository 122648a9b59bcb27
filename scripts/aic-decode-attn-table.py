#!/usr/bin/env python3
"""aic-decode-attn-table.py - YAML rows of one llmsim decode-attention table
(results/reference/kernels/, kind decode_attention) from aiconfigurator's
TensorRT-LLM generation-attention collection.

usage: aic-decode-attn-table.py TSV KV_DTYPE SCORED HEADS... > rows.yaml

TSV is generation_attention_perf.parquet (ai-dynamo/aiconfigurator,
aic-core/src/aiconfigurator_core/systems/data/GPU/attention/trtllm/VER/)
written out as tab-separated text with its header (any parquet reader;
the columns are the parquet's: batch_size, isl, num_heads,
num_key_value_heads, head_dim, window_size, beam_width, attn_dtype,
kv_cache_dtype, step, latency). The collector (collector/trtllm/
collect_attn.py) times TrtllmAttention.forward for `batch_size` sequences
of one new token each over `step` cached tokens (it writes isl 1 and
step = the cached length) in a CUDA graph (collector/helper.py
benchmark_with_power), latency in ms. KV_DTYPE is the kv_cache_dtype
(fp8 or bfloat16); SCORED "false" marks every row shown, not scored;
HEADS are q/kv pairs such as 64/8. Rows: head dim 128, no window, beam 1,
every (batch, step) of those heads, sorted."""
import csv
import sys


def main():
    path, kv_dtype, scored = sys.argv[1], sys.argv[2], sys.argv[3]
    heads = [tuple(int(x) for x in h.split("/")) for h in sys.argv[4:]]
    tail = ", scored: false" if scored == "false" else ""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            hq, hkv = int(r["num_heads"]), int(r["num_key_value_heads"])
            if ((hq, hkv) not in heads or int(r["head_dim"]) != 128 or
                    int(r["window_size"]) != 0 or int(r["beam_width"]) != 1
                    or r["kv_cache_dtype"] != kv_dtype or int(r["isl"]) != 1):
                continue
            rows.append((hq, hkv, int(r["batch_size"]), int(r["step"]),
                         float(r["latency"]) * 1e-3))
    rows.sort()
    for hq, hkv, b, step, s in rows:
        print("  - {batch: %d, heads_q: %d, heads_kv: %d, head_dim: 128, "
              "cached: %d, s: %.4e%s}" % (b, hq, hkv, step, s, tail))


if __name__ == "__main__":
    main()
