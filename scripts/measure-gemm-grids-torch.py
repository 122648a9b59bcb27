#!/usr/bin/env python3
"""The cuBLAS kernel torch.matmul picks for each bf16 shape, with its
grid, block, registers and shared memory (torch.profiler): which GEMMs
run persistent, one CTA (cluster) per SM. A calibration aid for llmsim
(scripts/measure-overlap.cu times the same shapes beside a kernel that
holds SMs), not part of the build; needs a CUDA GPU.

Usage: python3 scripts/measure-gemm-grids-torch.py OUT.json
"""
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

SHAPES = [  # m, n, k: C[m, n] = A[m, k] B[k, n]
    (4096, 1536, 2048), (8192, 8192, 8192), (1024, 1536, 2048),
    (2048, 1536, 2048), (8192, 1536, 2048), (16384, 1536, 2048),
    (2048, 2048, 2048), (4096, 4096, 4096), (16384, 8192, 8192),
    # measure-overlap.cu's held-out shapes
    (3072, 1536, 2048), (6144, 1536, 2048), (12288, 1536, 2048),
    (24576, 1536, 2048), (3072, 3072, 3072), (6144, 6144, 6144),
    (12288, 12288, 12288), (4096, 7168, 2048), (4096, 2048, 7168),
]
TRACE = "/tmp/llmsim-gemm-grids.json"


def kernels_of(m, n, k):
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    torch.matmul(a, b)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.matmul(a, b)
        torch.cuda.synchronize()
    prof.export_chrome_trace(TRACE)
    with open(TRACE) as fh:
        events = json.load(fh)["traceEvents"]
    return [{"m": m, "n": n, "k": k, "name": e["name"][:160],
             "grid": e["args"].get("grid"), "block": e["args"].get("block"),
             "dur_us": e["dur"],
             "regs": e["args"].get("registers per thread"),
             "smem": e["args"].get("shared memory")}
            for e in events if e.get("cat") == "kernel"]


def main():
    rows = []
    for m, n, k in SHAPES:
        for row in kernels_of(m, n, k):
            rows.append(row)
            print(row, flush=True)
    with open(sys.argv[1], "w") as fh:
        json.dump(rows, fh)


if __name__ == "__main__":
    main()
