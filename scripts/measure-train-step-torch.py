#!/usr/bin/env python3
"""Measure a real training step on one GPU, kernel by kernel.

A calibration aid for llmsim, not part of the build: it needs a CUDA GPU
and PyTorch. It trains a Llama-3-8B-shaped decoder with fewer layers
(plain PyTorch: cuDNN/flash SDPA attention, F.rms_norm, SwiGLU, rotary in
torch ops, AdamW fused) on one GPU and reports

  - the step time (CUDA events, median of N steps after warm-up);
  - from a torch.profiler trace of a few steps: every GPU kernel's name,
    start and duration, so the time can be split into GEMMs, attention,
    other kernels and GPU idle gaps;
  - the same GEMM shapes timed in isolation right afterwards, so in-step
    and isolated kernel rates can be compared under the same conditions.

Usage: python3 scripts/measure-train-step-torch.py OUT.json [LAYERS]
"""
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchmeasure import (Stack, bench, profile_kernels, rope,  # noqa: E402
                          rope_tables, smi, timed_steps)

DEV = torch.device("cuda")
H, FFN, NH, NKV, D, VOCAB, SEQ, MBS = 4096, 14336, 32, 8, 128, 128256, 8192, 1


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1 = nn.Parameter(torch.ones(H))
        self.n2 = nn.Parameter(torch.ones(H))
        self.qkv = nn.Linear(H, (NH + 2 * NKV) * D, bias=False)
        self.o = nn.Linear(NH * D, H, bias=False)
        self.fc1 = nn.Linear(H, 2 * FFN, bias=False)
        self.fc2 = nn.Linear(FFN, H, bias=False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        y = F.rms_norm(x, (H,), self.n1)
        q, k, v = self.qkv(y).view(b, s, NH + 2 * NKV, D).split([NH, NKV, NKV], 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        rep = NH // NKV
        q = q.transpose(1, 2)
        k = k.transpose(1, 2).repeat_interleave(rep, 1)
        v = v.transpose(1, 2).repeat_interleave(rep, 1)
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION, SDPBackend.FLASH_ATTENTION]):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, NH * D))
        y = F.rms_norm(x, (H,), self.n2)
        g, u = self.fc1(y).chunk(2, dim=-1)
        return x + self.fc2(F.silu(g) * u)


def isolated_gemms():
    t = MBS * SEQ
    shapes = []
    for op, n, k in (("qkv", (NH + 2 * NKV) * D, H), ("proj", H, NH * D),
                     ("fc1", 2 * FFN, H), ("fc2", H, FFN), ("head", VOCAB, H)):
        shapes += [(op + "/fwd", t, n, k), (op + "/dgrad", t, k, n),
                   (op + "/wgrad", k, n, t)]
    rows = []
    for label, m, n, k in shapes:
        a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        b = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
        s = bench(lambda: torch.matmul(a, b))
        rows.append({"label": label, "M": m, "N": n, "K": k, "s": s,
                     "TFLOPs": 2.0 * m * n * k / s / 1e12})
        del a, b
    return rows


def main():
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    out = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d"), "layers": layers, "hidden": H,
           "ffn": FFN, "heads": NH, "kv_heads": NKV, "head_dim": D,
           "vocab": VOCAB, "seq": SEQ, "mbs": MBS, "dtype": "bf16 params",
           "optimizer": "AdamW(fused=True) on bf16 parameters"}
    torch.manual_seed(0)
    model = Stack(Layer, layers, VOCAB, H).to(DEV, torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    out["params"] = sum(p.numel() for p in model.parameters())
    cos, sin = rope_tables(SEQ, D, 500000.0)
    tok = torch.randint(0, VOCAB, (MBS, SEQ), device=DEV)
    tgt = torch.randint(0, VOCAB, (MBS, SEQ), device=DEV)

    def step():
        logits = model(tok, cos, sin)
        loss = F.cross_entropy(logits.view(-1, VOCAB).float(), tgt.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = timed_steps(step, 10)
    out["step_s_sorted"] = times
    out["step_s_median"] = times[len(times) // 2]
    out["smi_after_steps"] = smi()
    out["kernels"] = profile_kernels(step, 2, "/tmp/llmsim-train-trace.json")
    out["profiled_steps"] = 2
    del opt, model
    torch.cuda.empty_cache()
    out["isolated_gemm"] = isolated_gemms()
    out["smi_after_gemms"] = smi()
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)
    print("step median %.4f s; %d kernels profiled; params %d"
          % (out["step_s_median"], len(out["kernels"]), out["params"]))


if __name__ == "__main__":
    main()
