#!/usr/bin/env python3
"""Measure the kernels a transformer training step is made of, on one GPU.

A calibration aid for llmsim's GPU model (src/gpu), not part of the build:
it needs a CUDA (or ROCm) GPU and PyTorch. It times, with CUDA events
(median of N after warm-up):

  - GEMMs: square sizes and the forward/backward shapes of Llama-3 8B/70B,
    GPT-3 175B and Llama-2 7B layers under common tensor-parallel degrees,
    in bf16 and (where supported) fp8 e4m3 via torch._scaled_mm; the
    wgrad shapes also as an fp32-accumulating GEMM (bf16 operands added
    into an fp32 buffer, Megatron's gradient accumulation fusion);
  - fused attention forward and backward (flash and cuDNN SDPA backends),
    causal, for shapes of the same models;
  - memory-bound kernels: device copy, RMSNorm, SwiGLU, softmax
    cross-entropy over a large vocabulary.

It prints JSON (one object) to stdout or to the file given as argv[1].
Usage: python3 scripts/measure-kernels-torch.py [OUT.json]
"""
import json
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

DEV = torch.device("cuda")


def bench(fn, iters=20, warmup=5):
    """Median seconds of fn() over iters timed runs after warmup."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return times[len(times) // 2]


def gemm_cases():
    """(label, M, N, K): C[M,N] = A[M,K] B[K,N]."""
    cases = []
    for n in (1024, 2048, 4096, 8192, 16384):
        cases.append(("square", n, n, n))
    # Transformer layers: T tokens per micro-batch on one GPU.
    layers = [
        # name, hidden, ffn (per matrix), q heads, kv heads, head_dim, gated
        ("llama3-8b", 4096, 14336, 32, 8, 128, True),
        ("llama3-70b", 8192, 28672, 64, 8, 128, True),
        ("gpt3-175b", 12288, 49152, 96, 96, 128, False),
        ("llama2-7b", 4096, 11008, 32, 32, 128, True),
    ]
    for name, h, ffn, hq, hkv, d, gated in layers:
        for tp, tokens in ((1, 8192), (4, 8192), (8, 2048), (8, 8192)):
            if name in ("llama3-8b", "llama2-7b") and tp > 1:
                continue
            if name in ("llama3-70b", "gpt3-175b") and tp == 1:
                continue
            qkv = (hq + 2 * hkv) * d // tp
            up = (2 if gated else 1) * ffn // tp
            tag = f"{name}/tp{tp}/T{tokens}"
            for op, n, k in (("qkv", qkv, h), ("proj", h, hq * d // tp),
                             ("fc1", up, h), ("fc2", h, ffn // tp)):
                cases.append((f"{tag}/{op}/fwd", tokens, n, k))
                # dgrad: dX[T,K] = dY[T,N] W[N,K]; wgrad: dW[K,N] = X^T dY.
                cases.append((f"{tag}/{op}/dgrad", tokens, k, n))
                cases.append((f"{tag}/{op}/wgrad", k, n, tokens))
    return cases


def time_gemm_bf16(m, n, k):
    a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
    return bench(lambda: torch.matmul(a, b))


def time_gemm_fp8(m, n, k):
    a = torch.randn(m, k, device=DEV).to(torch.float8_e4m3fn)
    # _scaled_mm wants the second operand column-major.
    b = torch.randn(n, k, device=DEV).to(torch.float8_e4m3fn).t()
    one = torch.ones((), device=DEV, dtype=torch.float32)
    return bench(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one,
                                          out_dtype=torch.bfloat16))


def time_gemm_bf16_accum_fp32(m, n, k):
    """A wgrad GEMM as Megatron runs it with gradient accumulation fusion:
    bf16 operands, the fp32 main_grad read and written in the epilogue
    (C = D, beta 1). torch.addmm's out_dtype (PyTorch >= 2.8 docs) gives
    the cuBLASLt call with an fp32 C/D; compare with time_gemm_bf16 of the
    same shape to see how much of the 8 M N bytes the epilogue exposes."""
    a = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(k, n, device=DEV, dtype=torch.bfloat16)
    c = torch.zeros(m, n, device=DEV, dtype=torch.float32)
    return bench(lambda: torch.addmm(c, a, b, out_dtype=torch.float32,
                                     out=c))


def measure_gemms(out):
    rows = []
    fp8_ok = True
    accum_ok = True
    for label, m, n, k in gemm_cases():
        row = {"label": label, "M": m, "N": n, "K": k}
        flop = 2.0 * m * n * k
        t = time_gemm_bf16(m, n, k)
        row["bf16_s"] = t
        row["bf16_TFLOPs"] = flop / t / 1e12
        if fp8_ok:
            try:
                t = time_gemm_fp8(m, n, k)
                row["fp8_s"] = t
                row["fp8_TFLOPs"] = flop / t / 1e12
            except Exception as e:  # noqa: BLE001 - record why and go on
                out["fp8_error"] = repr(e)
                fp8_ok = False
        if accum_ok and label.endswith("/wgrad"):
            try:
                t = time_gemm_bf16_accum_fp32(m, n, k)
                row["bf16_accum_fp32_s"] = t
                row["bf16_accum_fp32_TFLOPs"] = flop / t / 1e12
            except Exception as e:  # noqa: BLE001 - record why and go on
                out["accum_error"] = repr(e)
                accum_ok = False
        rows.append(row)
        torch.cuda.empty_cache()
    out["gemm"] = rows


def attn_flops(b, hq, s, d, causal):
    """Forward FLOPs: QK^T and PV, 2*b*h*s*s*d each; causal halves."""
    f = 4.0 * b * hq * s * s * d
    return f / 2 if causal else f


def measure_attention(out):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    shapes = [
        # label, batch, q heads, kv heads, seq, head_dim
        ("llama3-8b/s8192", 1, 32, 8, 8192, 128),
        ("llama3-70b/tp8/s8192", 1, 8, 1, 8192, 128),
        ("gpt3-175b/tp8/s2048", 1, 12, 12, 2048, 128),
        ("llama2-7b/s4096", 1, 32, 32, 4096, 128),
        ("llama2-7b/s4096/b4", 4, 32, 32, 4096, 128),
    ]
    rows = []
    for label, b, hq, hkv, s, d in shapes:
        for name, backend in (("flash", SDPBackend.FLASH_ATTENTION),
                              ("cudnn", SDPBackend.CUDNN_ATTENTION)):
            q = torch.randn(b, hq, s, d, device=DEV, dtype=torch.bfloat16,
                            requires_grad=True)
            k = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16,
                            requires_grad=True)
            v = torch.randn(b, hkv, s, d, device=DEV, dtype=torch.bfloat16,
                            requires_grad=True)
            if hkv != hq:
                # Expand KV heads so every backend accepts the call; the
                # kernel cost per query head is the same.
                rep = hq // hkv
                k2 = k.detach().repeat_interleave(rep, 1).requires_grad_()
                v2 = v.detach().repeat_interleave(rep, 1).requires_grad_()
            else:
                k2, v2 = k, v
            row = {"label": label, "backend": name, "batch": b, "heads_q": hq,
                   "heads_kv": hkv, "seq": s, "head_dim": d, "causal": True}
            try:
                with sdpa_kernel(backend):
                    fwd = lambda: F.scaled_dot_product_attention(  # noqa: E731
                        q, k2, v2, is_causal=True)
                    o = fwd()
                    g = torch.randn_like(o)
                    t_f = bench(fwd)
                    t_fb = bench(lambda: torch.autograd.grad(
                        fwd(), (q, k2, v2), g))
                row["fwd_s"] = t_f
                row["bwd_s"] = t_fb - t_f
                fl = attn_flops(b, hq, s, d, True)
                row["fwd_TFLOPs"] = fl / t_f / 1e12
                row["bwd_TFLOPs"] = 2.5 * fl / (t_fb - t_f) / 1e12
            except Exception as e:  # noqa: BLE001
                row["error"] = repr(e)
            rows.append(row)
            torch.cuda.empty_cache()
    out["attention"] = rows


def measure_memory(out):
    rows = []
    n = 1 << 30  # 1 Gi elements of bf16 = 2 GiB
    x = torch.empty(n, device=DEV, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    t = bench(lambda: y.copy_(x))
    rows.append({"label": "copy 2 GiB bf16", "bytes": 2 * 2 * n, "s": t,
                 "TBps": 4 * n / t / 1e12})
    del x, y
    for tokens, h in ((8192, 4096), (8192, 8192), (2048, 12288)):
        x = torch.randn(tokens, h, device=DEV, dtype=torch.bfloat16)
        w = torch.ones(h, device=DEV, dtype=torch.bfloat16)
        t = bench(lambda: F.rms_norm(x, (h,), w))
        rows.append({"label": f"rmsnorm T{tokens} h{h}",
                     "bytes": 2 * 2 * tokens * h, "s": t,
                     "TBps": 4 * tokens * h / t / 1e12})
        g = torch.randn(tokens, 4 * h, device=DEV, dtype=torch.bfloat16)
        u = torch.randn_like(g)
        t = bench(lambda: F.silu(g) * u)
        rows.append({"label": f"swiglu T{tokens} f{4 * h}",
                     "bytes": 3 * 2 * tokens * 4 * h, "s": t,
                     "TBps": 6 * tokens * 4 * h / t / 1e12})
    for tokens, vocab in ((8192, 128256), (4096, 32000)):
        logits = torch.randn(tokens, vocab, device=DEV, dtype=torch.bfloat16)
        target = torch.randint(0, vocab, (tokens,), device=DEV)
        t = bench(lambda: F.cross_entropy(logits.float(), target))
        rows.append({"label": f"cross_entropy T{tokens} V{vocab} (bf16->fp32)",
                     "bytes": (2 + 4 + 4) * tokens * vocab, "s": t,
                     "TBps": 10 * tokens * vocab / t / 1e12})
    out["memory"] = rows


def launch_overhead(out):
    x = torch.zeros(1, device=DEV)
    t = bench(lambda: x.add_(1), iters=200, warmup=50)
    out["small_kernel_s"] = t


def main():
    out = {"device": torch.cuda.get_device_name(0),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "date": time.strftime("%Y-%m-%d"),
           "sm_count": torch.cuda.get_device_properties(0).multi_processor_count}
    t0 = time.time()
    launch_overhead(out)
    measure_memory(out)
    measure_gemms(out)
    measure_attention(out)
    try:
        out["nvidia_smi_after"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu",
             "--format=csv"], capture_output=True, text=True, timeout=20).stdout
    except Exception as e:  # noqa: BLE001
        out["nvidia_smi_after"] = repr(e)
    out["wall_s"] = time.time() - t0
    text = json.dumps(out, indent=1)
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)
    print(text if len(sys.argv) <= 1 else f"wrote {sys.argv[1]} in {out['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
