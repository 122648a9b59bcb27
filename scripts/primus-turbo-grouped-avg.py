#!/usr/bin/env python3
"""llmsim's mean GEMM rate over Primus-Turbo's benchmark sets on a GPU.

AMD's Primus-Turbo 2026 Q1 summary (AMD-AGI/Primus-Turbo @ 3dfcad97,
agent_docs/report.pdf and agent_docs/mi300x-vs-mi355x-baseline.md) gives
only averages: the arithmetic mean of forward and of backward TFLOP/s
over a fixed set of shapes (benchmark/ops/config.py @ bb6de63b, the
bench_grouped_gemm_te.py / bench_gemm_te.py harness: backward time =
time(fwd + bwd) - time(fwd), 2 x the forward FLOPs). This script builds
the same sets, asks llmsim for every GEMM (`llmsim validate --kind kernel
--reference` on a scratch folder), and prints llmsim's means the same
way, so that a published mean can be compared with llmsim's.

  grouped: 10 MoE models x ep 32/16/8 (B = experts / ep local experts
           where it divides) x M = 512..16384 rows an expert x gate-up
           (N 2f, K h) and down (N h, K f): 288 cases, balanced groups,
           one hipBLASLt GEMM per expert on 4 streams (TE GroupedLinear)
  dense:   7 dense models x micro-batch 1/2/4 x qkv, proj, fc1, fc2
           (M = seq x mbs): 84 cases, TE Linear

Per case: forward = (m, n, k); backward = dgrad (m, k, n) + wgrad (n, k,
m; group_dim k for the grouped set) plus the harness's gradient
accumulations (x.grad and the weights' .grad: read 2, write 1, bf16, at
the GPU's streaming rate) and, with --host A,B, a floor of A + B x groups
us a forward call (A + 2 B x groups a backward): the eager harness's
Python and launches. --bwd-eff E divides the backward GEMMs' time by E
(the GPU's expert_bwd_efficiency), --solve MEAN finds the E that gives
that backward mean.

usage: scripts/primus-turbo-grouped-avg.py [--gpu mi355x] [--set grouped|dense]
         [--host 36,10] [--bwd-eff 1] [--solve 501.1] [--llmsim build/llmsim]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

MOE = {  # name: (routed experts, moe ffn, hidden), config.py @ bb6de63b
    "DeepSeek-V3": (256, 2048, 7168), "DeepSeek-V2": (160, 1536, 5120),
    "DeepSeek-V2-Lite": (64, 1408, 2048), "Grok-2": (8, 16384, 8192),
    "Qwen3-30B-A3B": (128, 2048, 2048), "Qwen3-235B-A22B": (128, 4096, 4096),
    "Mixtral-8x7B": (8, 14336, 4096), "Mixtral-8x22B": (8, 16384, 6144),
    "Kimi-K2": (384, 2048, 7168), "MoE-1T": (224, 1920, 8192),
}
DENSE = {  # name: (seq, hidden, ffn, q heads, kv heads, head dim)
    "Llama-2-7B": (4096, 4096, 11008, 32, 32, 128),
    "Llama-2-70B": (4096, 8192, 28672, 64, 8, 128),
    "Llama-3.1-8B": (8192, 4096, 14336, 32, 8, 128),
    "Llama-3.1-405B": (8192, 16384, 53248, 128, 8, 128),
    "Qwen2.5-7B": (8192, 3584, 18944, 28, 4, 128),
    "Qwen2.5-72B": (8192, 8192, 29568, 64, 8, 128),
    "Mistral-7B": (4096, 4096, 14336, 32, 8, 128),
}
HBM_RATE = {"mi355x": 8.0e12 * 0.73, "mi300x": 5.3e12 * 0.73}  # B/s [configs/gpus]


def cases(which):
    """(groups, rows per group M, N, K) per case."""
    out = []
    if which == "grouped":
        for e, f, h in MOE.values():
            for ep in (32, 16, 8):
                if e % ep:
                    continue
                for m in (512, 1024, 2048, 4096, 8192, 16384):
                    for n, k in ((2 * f, h), (h, f)):
                        out.append((e // ep, m, n, k))
    else:
        for s, h, f, qh, kvh, hd in DENSE.values():
            for mbs in (1, 2, 4):
                for n, k in (((qh + 2 * kvh) * hd, h), (h, h), (2 * f, h), (h, f)):
                    out.append((0, s * mbs, n, k))
    return out


def row(g, m, n, k, gd="m"):
    if not g:
        return "  - {m: %d, n: %d, k: %d, tflops: 1000}" % (m, n, k)
    return ("  - {m: %d, n: %d, k: %d, groups: %d, group_dim: %s, streams: 4, "
            "tflops: 1000}" % (m, n, k, g, gd))


def predict(llmsim, gpu, cs):
    """llmsim's forward, dgrad and wgrad rates (TFLOP/s) per case."""
    tmp = tempfile.mkdtemp()
    try:
        os.mkdir(os.path.join(tmp, "kernels"))
        shutil.copy("results/reference/validate.yaml", tmp)
        lines = ["id: K-SCRATCH", 'title: "scratch"',
                 "source: {repo: x, commit: x, file: x}", "confidence: low",
                 'measured_on: "scratch"', "gpu: " + gpu, "kind: gemm",
                 "dtype: bf16", "timing: stream", "min_time: 1 us", "rows:"]
        for g, m, n, k in cs:
            b = max(g, 1)
            lines += [row(g, b * m, n, k), row(g, b * m, k, n),
                      row(g, n, k, b * m, "k")]
        with open(os.path.join(tmp, "kernels", "scratch.yaml"), "w") as fh:
            fh.write("\n".join(lines) + "\n")
        p = subprocess.run([llmsim, "validate", "--kind", "kernel",
                            "--reference", tmp, "--no-store"],
                           capture_output=True, text=True, check=False)
        rates = [float(l.split()[-3]) for l in p.stdout.splitlines()
                 if "TFLOP/s" in l and l.rstrip().endswith("%")]
        if len(rates) != 3 * len(cs):
            sys.exit("llmsim gave %d rates for %d GEMMs:\n%s" %
                     (len(rates), 3 * len(cs), p.stdout[-2000:] + p.stderr))
        return [rates[3 * i:3 * i + 3] for i in range(len(cs))]
    finally:
        shutil.rmtree(tmp)


def means(cs, rates, hbm, host, eff):
    fw, bw = [], []
    a, b = host
    for (g, m, n, k), (rf, rd, rw) in zip(cs, rates):
        gg = max(g, 1)
        fl = 2.0 * gg * m * n * k
        tf = fl / rf / 1e12
        tb = (fl / rd / 1e12 + fl / rw / 1e12) / eff
        tb += 3 * 2 * (gg * n * k + gg * m * k) / hbm
        tf = max(tf, (a + b * gg) * 1e-6)
        tb = max(tb, (a + 2 * b * gg) * 1e-6)
        fw.append(fl / tf / 1e12)
        bw.append(2 * fl / tb / 1e12)
    return statistics.mean(fw), statistics.mean(bw)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gpu", default="mi355x", choices=sorted(HBM_RATE))
    ap.add_argument("--set", default="grouped", choices=("grouped", "dense"))
    ap.add_argument("--host", default="36,10")
    ap.add_argument("--bwd-eff", type=float, default=1.0)
    ap.add_argument("--solve", type=float)
    ap.add_argument("--llmsim", default="build/llmsim")
    o = ap.parse_args()
    host = tuple(float(x) for x in o.host.split(","))
    cs = cases(o.set)
    rates = predict(o.llmsim, o.gpu, cs)
    hbm = HBM_RATE[o.gpu]
    f, b = means(cs, rates, hbm, host, o.bwd_eff)
    print("%s set, %d cases on %s: llmsim mean forward %.1f, backward %.1f "
          "TFLOP/s (host floor %g + %g us x groups, backward efficiency %g)"
          % (o.set, len(cs), o.gpu, f, b, host[0], host[1], o.bwd_eff))
    if o.solve:
        lo, hi = 0.01, 2.0
        for _ in range(60):
            mid = (lo + hi) / 2
            if means(cs, rates, hbm, host, mid)[1] > o.solve:
                hi = mid
            else:
                lo = mid
        print("backward efficiency for a mean of %g: %.3f" % (o.solve, mid))


if __name__ == "__main__":
    main()
