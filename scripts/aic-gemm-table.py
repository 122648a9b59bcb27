#!/usr/bin/env python3
"""aic-gemm-table.py - YAML rows of one llmsim GEMM table (results/reference/
kernels/, kind gemm) from aiconfigurator's TensorRT-LLM GEMM collection.

usage: aic-gemm-table.py TSV GEMM_DTYPE SCORED N:K... > rows.yaml

TSV is gemm_perf.parquet (ai-dynamo/aiconfigurator, aic-core/src/
aiconfigurator_core/systems/data/GPU/gemm/trtllm/VER/) written out as
tab-separated text with its header (any parquet reader; columns gemm_dtype,
m, n, k, latency in ms). GEMM_DTYPE is the parquet's gemm_dtype (nvfp4, fp8,
fp8_static, bfloat16); N:K the weight shapes to keep; rows at m = 1, 16,
64, 128, 256, 512, 1024, 2048, 4096, 8192, sorted by (n, k, m); SCORED
"false" marks every row shown, not scored. tflops = 2 m n k / time."""
import csv
import sys

MS = {1, 16, 64, 128, 256, 512, 1024, 2048, 4096, 8192}


def main():
    path, gt, scored = sys.argv[1:4]
    shapes = {tuple(int(x) for x in s.split(":")) for s in sys.argv[4:]}
    tail = ", scored: false" if scored == "false" else ""
    rows = []
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
            if r["gemm_dtype"] == gt and (n, k) in shapes and m in MS:
                rows.append((n, k, m, float(r["latency"]) * 1e-3))
    rows.sort()
    for n, k, m, s in rows:
        print("  - {m: %d, n: %d, k: %d, s: %.4e, tflops: %.2f%s}" %
              (m, n, k, s, 2.0 * m * n * k / s / 1e12, tail))


if __name__ == "__main__":
    main()
