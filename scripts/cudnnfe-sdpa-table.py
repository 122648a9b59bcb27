#!/usr/bin/env python3
"""cudnnfe-sdpa-table.py - one llmsim kernel table (results/reference/kernels/)
from one CSV of NVIDIA's cudnn-frontend SDPA training benchmark
(benchmark/sdpa_benchmark_training/results/*/*.csv) and one data type.

usage: cudnnfe-sdpa-table.py CSV DTYPE ID GPU MEASURED_ON COMMIT REPO_PATH [SCORED]

DTYPE is the CSV's data_type (bfloat16, fp8, mxfp8). Rows: every successful
case of that data type, forward and the non-deterministic backward (what
Megatron runs by default; the deterministic backward is another kernel
mode, left out). Times are the CSV's (PyTorch profiler device kernel time,
ms); TFLOP/s are recomputed from them with llmsim's pair count (forward
2 (d_qk + d_v) per visible pair, backward 2 (3 d_qk + 2 d_v); causal
s (s + 1) / 2 pairs, a window w: sum of min(p + 1, w)). Two CSV layouts:
one row per pass (profile_pass fwd/bwd, time_ms) or one row for both
(profile_pass both, fwd_time_ms and bwd_time_ms). SCORED "false" marks
every row shown, not scored. Prints YAML rows on stdout (the header
comment is written by hand)."""
import csv
import sys

LLMSIM_DT = {"bfloat16": "bf16", "fp8": "fp8", "mxfp8": "mxfp8"}


def pairs(s, causal, w):
    if not causal:
        return s * s
    if w and w > 0:
        return sum(min(p + 1, w) for p in range(s))
    return s * (s + 1) // 2


def main():
    path, dt, ident, gpu, measured_on, commit, repo_path = sys.argv[1:8]
    scored = len(sys.argv) < 9 or sys.argv[8] != "false"
    cases = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["data_type"] != dt or r["success"] != "True":
                continue
            key = (r["attn_mask"], int(r["batch_size"]), int(r["q_seqlen"]),
                   int(r["num_q_heads"]), int(r["num_kv_heads"]),
                   int(r["head_dim_qk"]), int(r["head_dim_vo"]),
                   int(float(r["sliding_window_size"] or 0)))
            c = cases.setdefault(key, {})
            if r["profile_pass"] == "both":
                c["fwd"] = float(r["fwd_time_ms"])
                c["bwd"] = float(r["bwd_time_ms"])
            elif r["profile_pass"] == "fwd":
                c["fwd"] = float(r["time_ms"])
            elif r["deterministic_bwd"] == "False":
                c["bwd"] = float(r["time_ms"])
    print(f"""id: {ident}
title: "cuDNN SDPA forward and non-deterministic backward, {dt}, NVIDIA {gpu.upper()} (cudnn-frontend benchmark, {repo_path.split('/')[-1]})"
source:
  repo: "NVIDIA/cudnn-frontend"
  commit: "{commit}"
  file: "{repo_path}"
confidence: high
measured_on: "{measured_on}"
gpu: {gpu}
timing: single
launch_overhead: 0 us
min_time: 0.1 ms
kind: attention
dtype: {LLMSIM_DT[dt]}
rows:""")
    for key in sorted(cases, key=lambda k: (k[0], k[5], k[2])):
        mask, b, s, hq, hkv, dqk, dv, w = key
        c = cases[key]
        if not c:
            continue
        causal = mask != "no_mask"
        p = pairs(s, causal, w)
        ff = b * hq * p * 2 * (dqk + dv)
        fb = b * hq * p * 2 * (3 * dqk + 2 * dv)
        kind = ("swa%d" % w) if causal and w else ("causal" if causal else "full")
        fields = [f"label: {dqk}-{dv}/{hq}-{hkv}/{kind}/s{s}", "backend: cudnn",
                  f"batch: {b}", f"heads_q: {hq}", f"heads_kv: {hkv}",
                  f"seq: {s}", f"head_dim: {dqk}"]
        if dv != dqk:
            fields.append(f"head_dim_v: {dv}")
        fields.append(f"causal: {'true' if causal else 'false'}")
        if causal and w:
            fields.append(f"window: {w}")
        for ps, fl in (("fwd", ff), ("bwd", fb)):
            if ps not in c:	# qwen35: forward only
                continue
            t = c[ps] * 1e-3
            fields.append(f"{ps}_s: {t:.6g}")
            fields.append(f"{ps}_tflops: {fl / t / 1e12:.1f}")
        if not scored:
            fields.append("scored: false")
        print("  - {" + ", ".join(fields) + "}")


if __name__ == "__main__":
    main()
