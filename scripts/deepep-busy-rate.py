#!/usr/bin/env python3
"""DeepEP normal kernels beside compute: the busy_rate of configs/ep/deepep.yaml.

Reads DeepSeek's DualPipe training profile (deepseek-ai/profile-data @ 4496024
train.json: PyTorch profiler, one H800 of the DeepSeek-V3 pretraining layout,
EP64, 4096 tokens a micro-batch (the grid of per_token_cast_to_fp8, 4096
blocks), captured 2025-02-25) and, for the DeepEP data kernels on the comm
stream (dispatch in cached mode: the backward's FP8 dispatch; combine, BF16),
how much of each kernel ran while a compute kernel ran on another stream
(coverage). Alone, the same call on the same shape (4096 tokens, hidden 7168,
top-8 of 256, top-4 node groups, EP64, FP8 dispatch, BF16 combine) is DeepEP's
own table of that month (deepseek-ai/DeepEP @ ebfe47e README.md, 2025-02-24,
the kernels of the profile's date; tests/test_internode.py times the whole
call): 46 GB/s dispatch, 45 GB/s combine over the RDMA bytes that
`llmsim collective --system dgx-h800 --set system.nodes=8 --op dispatch
--ranks 64 --groups nodes --topk-groups 4 --dtype fp8_e4m3` counts
(109,877,857 B; combine bfloat16 213,096,451 B).

A call that runs at rate x while covered and at 1 otherwise takes
t_alone = x t_cov + t_uncov, so over all calls
x = (sum t_alone - sum t_uncov) / sum t_cov.

usage: scripts/deepep-busy-rate.py train.json
"""
import json
import sys

DISPATCH_B = 109877857     # llmsim's RDMA bytes, FP8 dispatch (above)
COMBINE_B = 213096451      # BF16 combine
DISPATCH_RATE = 46e9       # DeepEP @ ebfe47e README, EP64 dispatch
COMBINE_RATE = 45e9        # EP64 combine


def merged(spans):
    out = []
    for s, e in sorted(spans):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def main(path):
    ev = json.load(open(path))["traceEvents"]
    kern = [e for e in ev if e.get("cat") == "kernel"]
    comm_tid = {e["tid"] for e in kern if "ep::internode" in e["name"]}
    compute = merged((e["ts"], e["ts"] + e["dur"]) for e in kern
                     if e["tid"] not in comm_tid)
    alone = uncov = cov = 0.0
    n = {"dispatch": 0, "combine": 0}
    for e in kern:
        name = e["name"]
        if "internode::dispatch<" in name and ", true," in name:
            kind, t = "dispatch", DISPATCH_B / DISPATCH_RATE * 1e6
        elif "internode::combine<" in name:
            kind, t = "combine", COMBINE_B / COMBINE_RATE * 1e6
        else:
            continue
        a, b = e["ts"], e["ts"] + e["dur"]
        c = sum(max(0, min(b, y) - max(a, x)) for x, y in compute)
        n[kind] += 1
        alone += t
        cov += c
        uncov += e["dur"] - c
        print(f"{kind:8s} {e['dur'] / 1e3:6.3f} ms, covered {c / e['dur']:.2f},"
              f" alone {t / 1e3:.3f} ms")
    x = (alone - uncov) / cov
    print(f"{n['dispatch']} dispatch + {n['combine']} combine calls: "
          f"alone {alone / 1e3:.2f} ms, covered {cov / 1e3:.2f} ms, "
          f"uncovered {uncov / 1e3:.2f} ms -> busy_rate {x:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
