#!/usr/bin/env python3
"""torch._grouped_mm (CUTLASS's sm90 grouped GEMM, a persistent kernel
with a static tile scheduler) beside a kernel that holds k SMs, against a
dense cuBLAS GEMM (nvjet, persistent with a shared tile queue) of the
same total shape: how much each slows (measure-overlap.cu did the dense
chains alone, results/reference/device/README.md 2026-12-04). The holder
is scripts/hold-sms.cu's cubin, launched first on its own stream through
the driver API (ctypes); the GEMM chain is issued after it (an event
orders them), as in measure-overlap.cu. Each shape's kernel name and
grid come from torch.profiler. A calibration aid for llmsim, not part of
the build; needs an NVIDIA GPU and PyTorch >= 2.8.

Usage: python3 scripts/measure-grouped-overlap-torch.py HOLD.cubin OUT.json
"""
import ctypes
import json
import sys

import torch
from torch.profiler import ProfilerActivity, profile

DEV = torch.device("cuda")
BF = torch.bfloat16
SLICE_B = 64 << 20
KS = [8, 20, 32]
# (label, groups, rows a group, K, N): Qwen3-30B-A3B expert shapes
# (hidden 2048, moe ffn 768: fc1 K 2048 N 1536, fc2 K 768 N 2048),
# Qwen3-235B's fc1 (4096 -> 3072), DeepSeek-V3's fc1 (7168 -> 4096).
SHAPES = [("q30 fc1", 8, 128, 2048, 1536), ("q30 fc1", 8, 512, 2048, 1536),
          ("q30 fc1", 8, 2048, 2048, 1536), ("q30 fc2", 8, 512, 768, 2048),
          ("q30 fc1", 16, 256, 2048, 1536), ("q30 fc1", 32, 128, 2048, 1536),
          ("q235 fc1", 4, 1024, 4096, 3072), ("dsv3 fc1", 4, 1024, 7168, 4096),
          ("dsv3 fc1", 8, 4096, 7168, 4096)]

cu = ctypes.CDLL("libcuda.so.1")
cu.cuModuleLoad.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
cu.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.c_void_p, ctypes.c_char_p]
cu.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
    ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p]


def ck(r, what):
    if r != 0:
        raise RuntimeError("%s: CUresult %d" % (what, r))


class Holder:
    def __init__(self, cubin):
        torch.zeros(1, device=DEV)      # the primary context, current
        self.mod = ctypes.c_void_p()
        ck(cu.cuModuleLoad(ctypes.byref(self.mod), cubin.encode()),
           "cuModuleLoad")
        self.fn = ctypes.c_void_p()
        ck(cu.cuModuleGetFunction(ctypes.byref(self.fn), self.mod,
                                  b"hold_sms"), "cuModuleGetFunction")
        n = max(KS) * SLICE_B // 2
        self.src = torch.ones(n, device=DEV, dtype=torch.int16)
        self.dst = torch.empty(n, device=DEV, dtype=torch.int16)

    def launch(self, k, reps, stream):
        a = ctypes.c_void_p(self.src.data_ptr())
        b = ctypes.c_void_p(self.dst.data_ptr())
        r = ctypes.c_int(reps)
        params = (ctypes.c_void_p * 3)(
            ctypes.cast(ctypes.byref(a), ctypes.c_void_p),
            ctypes.cast(ctypes.byref(b), ctypes.c_void_p),
            ctypes.cast(ctypes.byref(r), ctypes.c_void_p))
        ck(cu.cuLaunchKernel(self.fn, k, 1, 1, 1024, 1, 1, 0,
                             ctypes.c_void_p(stream.cuda_stream), params,
                             None), "cuLaunchKernel")


def span(a, b):
    b.synchronize()
    return a.elapsed_time(b) / 1e3


def chain_alone(fn, count, sg):
    with torch.cuda.stream(sg):
        for _ in range(count):
            fn()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record(sg)
        for _ in range(count):
            fn()
        b.record(sg)
    return span(a, b)


def point(hold, fn, count, k, sg, sc):
    alone = chain_alone(fn, count, sg)
    e0 = torch.cuda.Event(enable_timing=True)
    e1 = torch.cuda.Event(enable_timing=True)
    e0.record(sc)
    hold.launch(k, 1, sc)
    e1.record(sc)
    tca = span(e0, e1)
    reps = int(2 * alone / tca) + 1
    for _ in range(2):                  # the second is kept
        e0.record(sc)
        hold.launch(k, reps, sc)
        e1.record(sc)
        sg.wait_event(e0)
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        with torch.cuda.stream(sg):
            a.record(sg)
            for _ in range(count):
                fn()
            b.record(sg)
        tg, tc = span(a, b), span(e0, e1)
        torch.cuda.synchronize()
    return {"copy_blocks": k, "gemm_alone_s": alone, "gemm_beside_s": tg,
            "ratio": tg / alone, "copy_rep_alone_s": tca, "copy_reps": reps,
            "copy_beside_s": tc}


def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    path = "/tmp/llmsim-grouped-overlap.json"
    prof.export_chrome_trace(path)
    with open(path) as fh:
        ev = json.load(fh)["traceEvents"]
    return [{"name": e["name"][:160], "grid": e["args"].get("grid"),
             "block": e["args"].get("block"), "dur_us": e["dur"],
             "regs": e["args"].get("registers per thread"),
             "smem": e["args"].get("shared memory")}
            for e in ev if e.get("cat") == "kernel"]


def main():
    hold = Holder(sys.argv[1])
    sg = torch.cuda.Stream()
    sc = torch.cuda.Stream()
    out = {"device": torch.cuda.get_device_name(),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "sms": torch.cuda.get_device_properties(0).multi_processor_count,
           "rows": []}
    for label, g, m, kk, n in SHAPES:
        mt = g * m
        x = torch.randn(mt, kk, device=DEV, dtype=BF)
        w = torch.randn(g, kk, n, device=DEV, dtype=BF)
        offs = torch.arange(1, g + 1, device=DEV, dtype=torch.int32) * m
        wd = w[0].contiguous()
        for meth, fn in (("grouped_mm",
                          lambda: torch._grouped_mm(x, w, offs=offs)),
                         ("dense", lambda: torch.matmul(x, wd))):
            row = {"shape": label, "groups": g, "m_per_group": m, "K": kk,
                   "N": n, "method": meth}
            try:
                fn()
                torch.cuda.synchronize()
                one = chain_alone(fn, 3, sg) / 3
                count = max(4, min(400, int(3e-3 / one) + 1))
                row["count"] = count
                row["kernels"] = kernels(fn)
                row["points"] = [point(hold, fn, count, k, sg, sc)
                                 for k in KS]
            except Exception as ex:     # noqa: BLE001
                row["error"] = repr(ex)[:300]
            out["rows"].append(row)
            print(json.dumps({key: row.get(key) for key in
                              ("shape", "groups", "m_per_group", "method",
                               "error")}),
                  [round(p["ratio"], 3) for p in row.get("points", [])],
                  flush=True)
    with open(sys.argv[2], "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
