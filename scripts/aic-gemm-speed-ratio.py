#!/usr/bin/env python3
"""aic-gemm-speed-ratio.py - median speed of one GPU over another on the
shapes two aiconfigurator GEMM collections share, by the reference GPU's
call time.

usage: aic-gemm-speed-ratio.py GPU_TSV REF_TSV GEMM_DTYPE

GPU_TSV and REF_TSV are gemm_perf.parquet files (ai-dynamo/aiconfigurator,
aic-core/src/aiconfigurator_core/systems/data/GPU/gemm/trtllm/VER/) written
out as tab-separated text with their header (any parquet reader; columns
gemm_dtype, m, n, k, latency in ms). Shapes with m, n, k >= 1024 are kept
and binned by REF's latency a call (< 0.1, < 1, < 10, >= 10 ms); each bin
prints its shape count and the median of REF latency / GPU latency. The
collector (collector/helper.py benchmark_with_power) replays each GEMM
from a CUDA graph 3 times to warm up and 6 times timed, so the >= 10 ms
bin runs >= 90 ms back to back: past a power limiter's ~0.1 s window (the
sustained clock), where the short bins are burst-clock and launch-bound."""
import csv
import statistics
import sys

BINS = ((0.1, "< 0.1 ms"), (1.0, "< 1 ms"), (10.0, "< 10 ms"),
        (float("inf"), ">= 10 ms"))


def load(path, gt):
    t = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f, delimiter="\t"):
            if r["gemm_dtype"] == gt:
                t[(int(r["m"]), int(r["n"]), int(r["k"]))] = float(r["latency"])
    return t


def main():
    gpu_path, ref_path, gt = sys.argv[1:4]
    gpu, ref = load(gpu_path, gt), load(ref_path, gt)
    bins = [[] for _ in BINS]
    for shape, t in ref.items():
        if shape in gpu and min(shape) >= 1024:
            i = next(i for i, (top, _) in enumerate(BINS) if t < top)
            bins[i].append(t / gpu[shape])
    for (_, name), r in zip(BINS, bins):
        if r:
            print("%-9s %5d shapes  median speed %.3f" %
                  (name, len(r), statistics.median(r)))


if __name__ == "__main__":
    main()
