#!/usr/bin/env python3
"""Measure Mixture-of-Experts kernels and a MoE training step on one GPU.

A calibration aid for llmsim, not part of the build: it needs a CUDA GPU
and PyTorch (>= 2.8 for torch._grouped_mm, the CUTLASS sm90 grouped GEMM
that torchtitan's MoE uses). It writes one JSON file with

  - `grouped`: the expert GEMMs of a MoE layer (fc1 = gate and up fused,
    fc2 = down; forward, data gradient, weight gradient) at the shapes
    that expert parallelism gives each rank of DeepSeek-V3, Qwen3-30B-A3B,
    Qwen3-235B-A22B, gpt-oss-120b and Mixtral-8x7B with 4,096 tokens a
    rank: G local experts of m rows each (uniform routing: m = T k ep / E),
    and one skewed draw. Two ways: one torch._grouped_mm call
    (`grouped_mm`) and a loop of one cuBLAS torch.matmul per expert on one
    stream (`loop`). Time = mean of back-to-back calls (CUDA events around
    `iters` calls after `warmup`): what a stream of such calls sustains.
    FLOPs = 2 M N K summed over the groups.
  - `streams`: what L per-expert GEMM kernels cost beyond one kernel
    (one stream, and 4 streams as Transformer Engine's GroupedLinear),
    at Qwen3-30B-A3B's expert shapes, L 4-32 experts of 32-2048 rows.
  - `glue`: the memory-bound kernels around the experts in eager PyTorch
    (router softmax + top-k, the sort of the routed tokens, permute gather,
    weighted unpermute scatter-add, SwiGLU), with their bytes.
  - `step`: a whole training step of a Qwen3-30B-A3B-shaped model cut to
    LAYERS layers (all 128 experts on the one GPU, bf16, AdamW fused,
    one micro-batch of 1 x 4096 tokens): median step time of 10 after 3
    warm-ups, every GPU kernel of 2 profiled steps (torch.profiler), and
    the routed token count of every expert of every layer in the last
    step (the load imbalance the random router gave).

Usage: python3 scripts/measure-moe-torch.py OUT.json [LAYERS]
       (LLMSIM_SECTIONS=streams,glue runs only the sections named)

Status: written 2026-12-04 and not yet run on hardware (that session's
device loan was refused); every section is guarded, so a failure in one
is recorded in the output (`<section>_error`, `fallbacks`) and the others
still run. Nothing in results/ comes from it yet.
"""
import json
import os
import sys
import time
import traceback

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchmeasure import (Stack, bench, graph_bench,  # noqa: E402
                          profile_kernels, rope, rope_tables, smi,
                          timed_steps)

DEV = torch.device("cuda")
BF = torch.bfloat16
T_RANK = 4096
SMI_FIELDS = "clocks.sm,clocks.mem,power.draw,temperature.gpu"

# name, hidden, expert ffn, experts, top-k (the models' config.json).
MODELS = {
    "qwen3-30b-a3b": (2048, 768, 128, 8),
    "qwen3-235b-a22b": (4096, 1536, 128, 8),
    "deepseek-v3": (7168, 2048, 256, 8),
    "gpt-oss-120b": (2880, 2880, 128, 4),
    "mixtral-8x7b": (4096, 14336, 8, 2),
}
# (model, ep): G = E / ep local experts, m = T_RANK k ep / E rows each.
LAYOUTS = [("qwen3-30b-a3b", 1), ("qwen3-30b-a3b", 4), ("qwen3-30b-a3b", 8),
           ("qwen3-30b-a3b", 16), ("qwen3-235b-a22b", 8),
           ("qwen3-235b-a22b", 32), ("deepseek-v3", 8), ("deepseek-v3", 64),
           ("gpt-oss-120b", 8), ("mixtral-8x7b", 1), ("mixtral-8x7b", 8)]


def offs_of(counts):
    ends, s = [], 0
    for c in counts:
        s += c
        ends.append(s)
    return torch.tensor(ends, dtype=torch.int32, device=DEV)


HAVE_GMM = hasattr(torch, "_grouped_mm")


FALLBACKS = {}


def _note(key, ex):
    FALLBACKS.setdefault(key, repr(ex)[:300])


def _grouped(a, b, offs, tag, fallback):
    """torch._grouped_mm(a, b, offs); a layout the kernel refuses is
    retried contiguous, then run as fallback(a, b, counts) (each refusal
    recorded in FALLBACKS, which the output carries)."""
    try:
        return torch._grouped_mm(a, b, offs=offs)
    except RuntimeError as ex:
        _note("%s %s" % (tag, tuple(b.stride() if tag == "gmm" else
                                   a.stride()),), ex)
    try:
        return torch._grouped_mm(a.contiguous(), b.contiguous(), offs=offs)
    except RuntimeError as ex:
        _note(tag + " contiguous", ex)
    return fallback(a, b, counts_of(offs))


def gmm(a, b, offs):
    """2d x 3d: a [M, K] rows grouped by offs, b [G, K, N] -> [M, N]."""
    return _grouped(a, b, offs, "gmm", loop_mm)


def gmm_k(a, b, offs):
    """2d x 2d grouped along K: a [M, Ktot], b [Ktot, N] -> [G, M, N]."""
    return _grouped(a, b, offs, "gmm_k", loop_mm_k)


def counts_of(offs):
    ends = offs.tolist()
    return [e - s for s, e in zip([0] + ends[:-1], ends)]


def loop_mm(a, b, counts):
    outs, s = [], 0
    for g, c in enumerate(counts):
        outs.append(torch.matmul(a[s:s + c], b[g]))
        s += c
    return torch.cat(outs)


def loop_mm_k(a, b, counts):
    outs, s = [], 0
    for c in counts:
        outs.append(torch.matmul(a[:, s:s + c], b[s:s + c]))
        s += c
    return torch.stack(outs)


def skewed_counts(total, experts, groups, seed):
    """A routing draw with a realistic imbalance: expert popularity from a
    log-normal (sigma 0.5), tokens drawn multinomially; the first `groups`
    experts (one EP rank's) are kept, so their sum is not total/ep."""
    g = torch.Generator().manual_seed(seed)
    p = torch.exp(0.5 * torch.randn(experts, generator=g))
    p = p / p.sum()
    draw = torch.multinomial(p, total, replacement=True, generator=g)
    cnt = torch.bincount(draw, minlength=experts).tolist()
    return cnt[:groups]


def grouped_rows():
    rows = []
    cases = []
    for name, ep in LAYOUTS:
        h, f, e, k = MODELS[name]
        g = e // ep
        m = T_RANK * k * ep // e
        cases.append((name, ep, "uniform", [m] * g))
    h, f, e, k = MODELS["qwen3-30b-a3b"]
    cases.append(("qwen3-30b-a3b", 8, "skewed lognormal0.5 seed1",
                  skewed_counts(T_RANK * k * 8, e, e // 8, 1)))
    for name, ep, routing, counts in cases:
        h, f, e, k = MODELS[name]
        g = len(counts)
        mtot = sum(counts)
        offs = offs_of(counts)
        x = torch.randn(mtot, h, device=DEV, dtype=BF)
        act = torch.randn(mtot, f, device=DEV, dtype=BF)
        dy1 = torch.randn(mtot, 2 * f, device=DEV, dtype=BF)
        dy2 = torch.randn(mtot, h, device=DEV, dtype=BF)
        w1 = torch.randn(g, h, 2 * f, device=DEV, dtype=BF)
        w2 = torch.randn(g, f, h, device=DEV, dtype=BF)
        w1t = w1.transpose(-2, -1)
        w2t = w2.transpose(-2, -1)
        def rgm(p, q, o):  # the kernel itself: no fallback in a timing
            return torch._grouped_mm(p, q, offs=o)
        ops = [  # label, M N K (per total), grouped fn, loop fn
            ("fc1/fwd", mtot, 2 * f, h, lambda: rgm(x, w1, offs),
             lambda: loop_mm(x, w1, counts)),
            ("fc2/fwd", mtot, h, f, lambda: rgm(act, w2, offs),
             lambda: loop_mm(act, w2, counts)),
            ("fc1/dgrad", mtot, h, 2 * f, lambda: rgm(dy1, w1t, offs),
             lambda: loop_mm(dy1, w1t, counts)),
            ("fc2/dgrad", mtot, f, h, lambda: rgm(dy2, w2t, offs),
             lambda: loop_mm(dy2, w2t, counts)),
            ("fc1/wgrad", h, 2 * f, mtot, lambda: rgm(x.t(), dy1, offs),
             lambda: loop_mm_k(x.t(), dy1, counts)),
            ("fc2/wgrad", f, h, mtot, lambda: rgm(act.t(), dy2, offs),
             lambda: loop_mm_k(act.t(), dy2, counts)),
        ]
        for label, mm, nn_, kk, fg, fl in ops:
            flop = 2.0 * mm * nn_ * kk
            row = {"model": name, "ep": ep, "routing": routing, "op": label,
                   "groups": g, "counts": counts if routing != "uniform"
                   else None, "m_per_group": counts[0]
                   if routing == "uniform" else None,
                   "M": mm, "N": nn_, "K": kk, "flop": flop}
            for meth, fn in (("grouped_mm", fg), ("loop", fl)):
                if meth == "grouped_mm" and not HAVE_GMM:
                    row[meth + "_error"] = "torch._grouped_mm missing"
                    continue
                try:
                    s = bench(fn, iters=20 if g < 64 else 10)
                    row[meth + "_s"] = s
                    row[meth + "_TFLOPs"] = flop / s / 1e12
                except Exception as ex:  # noqa: BLE001
                    row[meth + "_error"] = repr(ex)[:300]
            rows.append(row)
            print("grouped %-16s ep%-3d %-9s %-10s g%-3d %s" % (
                name, ep, routing[:9], label, g,
                " ".join("%s %.0f" % (mth, row[mth + "_TFLOPs"])
                         for mth in ("grouped_mm", "loop")
                         if mth + "_TFLOPs" in row)), flush=True)
        # FP8 rowwise grouped forward (DeepSeek-style per-token/per-channel
        # scales), when this PyTorch has it.
        if hasattr(torch, "_scaled_grouped_mm") and routing == "uniform":
            try:
                xa = x.to(torch.float8_e4m3fn)
                wb = torch.randn(g, 2 * f, h, device=DEV, dtype=BF).to(
                    torch.float8_e4m3fn).transpose(-2, -1)
                sa = torch.ones(mtot, device=DEV, dtype=torch.float32)
                sb = torch.ones(g, 2 * f, device=DEV, dtype=torch.float32)
                s = bench(lambda: torch._scaled_grouped_mm(
                    xa, wb, sa, sb, offs=offs, out_dtype=BF), iters=20)
                flop = 2.0 * mtot * 2 * f * h
                rows.append({"model": name, "ep": ep, "routing": routing,
                             "op": "fc1/fwd fp8-rowwise", "groups": g,
                             "m_per_group": counts[0], "M": mtot,
                             "N": 2 * f, "K": h, "flop": flop,
                             "grouped_mm_s": s,
                             "grouped_mm_TFLOPs": flop / s / 1e12})
                print("grouped %-16s ep%-3d fp8 fc1/fwd %.0f" % (
                    name, ep, flop / s / 1e12), flush=True)
                del xa, wb, sa, sb
            except Exception as ex:  # noqa: BLE001
                rows.append({"model": name, "ep": ep, "op":
                             "fc1/fwd fp8-rowwise", "error": repr(ex)[:300]})
        del x, act, dy1, dy2, w1, w2, w1t, w2t
        torch.cuda.empty_cache()
    return rows


# ---- per-expert kernels on S streams (Transformer Engine's path) ---------
STREAM_GRID_L = (4, 8, 16, 32)
STREAM_GRID_M = (32, 128, 512, 2048)


def stream_rows():
    """What L per-expert GEMM kernels cost beyond one, at Qwen3-30B-A3B's
    expert shapes (fc1 forward: K 2048, N 1536; fc2 forward: K 768, N 2048),
    L local experts of m rows each. Methods: `single` (one expert's GEMM
    alone), `merged` (one GEMM of L m rows: the same FLOPs in one kernel),
    `loop1` (L torch.matmul kernels on one stream, outputs written in place),
    `loop4` (round-robin on 4 side streams joined by events, as Transformer
    Engine's GroupedLinear does with its 4 compute streams) and `grouped_mm`
    (one torch._grouped_mm). Mean of back-to-back calls, as `grouped`
    (`<method>_s`: with Python issuing each kernel, ~25 us a call on the
    2026-12-04 H200, host-bound below ~50 us), and the same captured in a
    CUDA graph (`<method>_graph_s`, graph_bench: the GPU's own time)."""
    rows = []
    side = [torch.cuda.Stream() for _ in range(4)]
    for k_dim, n_dim, label in ((2048, 1536, "fc1/fwd"),
                                (768, 2048, "fc2/fwd")):
        for L in STREAM_GRID_L:
            for m in STREAM_GRID_M:
                a = torch.randn(L * m, k_dim, device=DEV, dtype=BF)
                w = torch.randn(L, k_dim, n_dim, device=DEV, dtype=BF)
                wm = w[0]
                out = torch.empty(L * m, n_dim, device=DEV, dtype=BF)
                offs = offs_of([m] * L)
                parts = [(a[g * m:(g + 1) * m], w[g],
                          out[g * m:(g + 1) * m]) for g in range(L)]

                def loop1():
                    for x_, w_, o_ in parts:
                        torch.matmul(x_, w_, out=o_)

                def loop4():
                    main = torch.cuda.current_stream()
                    ev = main.record_event()
                    for st in side:
                        st.wait_event(ev)
                    for g, (x_, w_, o_) in enumerate(parts):
                        with torch.cuda.stream(side[g % 4]):
                            torch.matmul(x_, w_, out=o_)
                    for st in side:
                        main.wait_event(st.record_event())

                meths = [("single", lambda: torch.matmul(a[:m], wm)),
                         ("merged", lambda: torch.matmul(a, wm)),
                         ("loop1", loop1), ("loop4", loop4)]
                if HAVE_GMM:
                    meths.append(("grouped_mm", lambda: torch._grouped_mm(
                        a, w, offs=offs)))
                row = {"op": label, "groups": L, "m_per_group": m,
                       "K": k_dim, "N": n_dim,
                       "flop": 2.0 * L * m * k_dim * n_dim}
                for meth, fn in meths:
                    try:
                        row[meth + "_s"] = bench(fn, iters=30)
                    except Exception as ex:  # noqa: BLE001
                        row[meth + "_error"] = repr(ex)[:300]
                    try:
                        row[meth + "_graph_s"] = graph_bench(fn)
                    except Exception as ex:  # noqa: BLE001
                        row[meth + "_graph_error"] = repr(ex)[:300]
                rows.append(row)
                print("streams %s L%-3d m%-5d %s" % (label, L, m, " ".join(
                    "%s %.1f/%.1fus" % (mt, row.get(mt + "_s", 0) * 1e6,
                                        row.get(mt + "_graph_s", 0) * 1e6)
                    for mt, _ in meths)), flush=True)
                del a, w, out, parts
    torch.cuda.empty_cache()
    return rows


def glue_rows():
    h, f, e, k = MODELS["qwen3-30b-a3b"]
    t = T_RANK
    rows = []
    logits = torch.randn(t, e, device=DEV, dtype=torch.float32)
    x = torch.randn(t, h, device=DEV, dtype=BF)
    idx = torch.randint(0, e, (t * k,), device=DEV)
    src = torch.randint(0, t, (t * k,), device=DEV)
    xp = torch.randn(t * k, h, device=DEV, dtype=BF)
    prob = torch.rand(t * k, 1, device=DEV, dtype=BF)
    gu = torch.randn(t * k, 2 * f, device=DEV, dtype=BF)

    def topk():
        p = torch.softmax(logits, -1)
        v, i = torch.topk(p, k, -1)
        return v / v.sum(-1, keepdim=True), i

    def unpermute():
        out = torch.zeros(t, h, device=DEV, dtype=BF)
        out.index_add_(0, src, xp * prob)
        return out

    def swiglu():
        a, b = gu.chunk(2, -1)
        return F.silu(a) * b

    items = [
        ("router softmax+topk T%d E%d k%d fp32" % (t, e, k),
         t * e * 4 + t * k * 12, topk),
        ("sort routed ids T*k %d" % (t * k), t * k * 8 * 2,
         lambda: torch.sort(idx, stable=True)),
        ("permute gather T*k %d x h %d bf16" % (t * k, h),
         t * k * h * 2 * 2, lambda: x.index_select(0, src)),
        ("unpermute weighted index_add T*k %d x h %d bf16" % (t * k, h),
         t * k * h * 2 * 3 + t * h * 2 * 2, unpermute),
        ("swiglu T*k %d x f %d bf16" % (t * k, f),
         t * k * f * 2 * 3, swiglu),
    ]
    for label, nbytes, fn in items:
        try:
            s = bench(fn)
            rows.append({"label": label, "bytes": nbytes, "s": s,
                         "TBps": nbytes / s / 1e12})
            print("glue %-50s %.1f us" % (label, s * 1e6), flush=True)
        except Exception as ex:  # noqa: BLE001
            rows.append({"label": label, "error": repr(ex)[:300]})
    return rows


# ---- the training step: Qwen3-30B-A3B shape ------------------------------
QH, QNH, QNKV, QD, QF, QE, QK, QV, SEQ = 2048, 32, 4, 128, 768, 128, 8, \
    151936, 4096


class GroupedLinear(torch.autograd.Function):
    """y = x W_g for the rows of group g (offs); the backward as two grouped
    GEMMs (data gradient against W^T, weight gradient grouped along K)."""

    @staticmethod
    def forward(ctx, x, w, offs):
        ctx.save_for_backward(x, w, offs)
        return gmm(x, w, offs)

    @staticmethod
    def backward(ctx, dy):
        x, w, offs = ctx.saved_tensors
        dy = dy.contiguous()
        dx = gmm(dy, w.transpose(-2, -1), offs)
        dw = gmm_k(x.t(), dy, offs)
        return dx, dw, None


class MoELayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.n1 = nn.Parameter(torch.ones(QH))
        self.n2 = nn.Parameter(torch.ones(QH))
        self.qn = nn.Parameter(torch.ones(QD))
        self.kn = nn.Parameter(torch.ones(QD))
        self.qkv = nn.Linear(QH, (QNH + 2 * QNKV) * QD, bias=False)
        self.o = nn.Linear(QNH * QD, QH, bias=False)
        self.router = nn.Linear(QH, QE, bias=False)
        self.w1 = nn.Parameter(torch.randn(QE, QH, 2 * QF) * 0.02)
        self.w2 = nn.Parameter(torch.randn(QE, QF, QH) * 0.02)
        self.last_counts = None

    def experts(self, y):
        t = y.shape[0]
        logits = self.router(y).float()
        p = torch.softmax(logits, -1)
        v, i = torch.topk(p, QK, -1)
        v = (v / v.sum(-1, keepdim=True)).to(BF)
        flat = i.reshape(-1)
        order = torch.sort(flat, stable=True).indices
        counts = torch.bincount(flat, minlength=QE)
        offs = torch.cumsum(counts, 0).to(torch.int32)
        tok = order // QK
        xp = y.index_select(0, tok)
        gu = GroupedLinear.apply(xp, self.w1, offs)
        a, b = gu.chunk(2, -1)
        hdn = GroupedLinear.apply((F.silu(a) * b).contiguous(), self.w2, offs)
        hdn = hdn * v.reshape(-1, 1).index_select(0, order)
        out = torch.zeros(t, QH, device=DEV, dtype=hdn.dtype)
        self.last_counts = counts
        return out.index_add(0, tok, hdn)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        y = F.rms_norm(x, (QH,), self.n1)
        q, k, v = self.qkv(y).view(b, s, QNH + 2 * QNKV, QD).split(
            [QNH, QNKV, QNKV], 2)
        q = F.rms_norm(q, (QD,), self.qn)
        k = F.rms_norm(k, (QD,), self.kn)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        rep = QNH // QNKV
        q = q.transpose(1, 2)
        k = k.transpose(1, 2).repeat_interleave(rep, 1)
        v = v.transpose(1, 2).repeat_interleave(rep, 1)
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel([SDPBackend.CUDNN_ATTENTION,
                          SDPBackend.FLASH_ATTENTION]):
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, QNH * QD))
        y = F.rms_norm(x, (QH,), self.n2)
        return x + self.experts(y.view(b * s, QH)).view(b, s, QH)


def step_case(layers):
    out = {"model": "qwen3-30b-a3b shape", "layers": layers, "hidden": QH,
           "heads": QNH, "kv_heads": QNKV, "head_dim": QD,
           "moe_ffn": QF, "experts": QE, "top_k": QK, "vocab": QV,
           "seq": SEQ, "mbs": 1, "ep": 1, "dtype": "bf16 params",
           "router": "bf16 GEMM, fp32 softmax + top-k, normalised top-k",
           "experts_impl": "torch._grouped_mm (fwd, dgrad, wgrad)",
           "optimizer": "AdamW(fused=True) on bf16 parameters",
           "aux_loss": "none"}
    torch.manual_seed(0)
    model = Stack(MoELayer, layers, QV, QH).to(DEV, BF)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    out["params"] = sum(p.numel() for p in model.parameters())
    cos, sin = rope_tables(SEQ, QD, 1000000.0)
    tok = torch.randint(0, QV, (1, SEQ), device=DEV)
    tgt = torch.randint(0, QV, (1, SEQ), device=DEV)

    def step():
        logits = model(tok, cos, sin)
        loss = F.cross_entropy(logits.view(-1, QV).float(), tgt.view(-1))
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = timed_steps(step, 10)
    out["step_s_sorted"] = times
    out["step_s_median"] = times[len(times) // 2]
    out["smi_after_steps"] = smi(SMI_FIELDS)
    out["expert_counts"] = [lay.last_counts.tolist() for lay in model.layers]
    out["kernels"] = profile_kernels(step, 2, "/tmp/llmsim-moe-trace.json")
    out["profiled_steps"] = 2
    print("step median %.4f s over %d layers, %d kernels" % (
        out["step_s_median"], layers, len(out["kernels"])), flush=True)
    return out


def main():
    path = sys.argv[1]
    layers = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cuda": torch.version.cuda, "date": time.strftime("%Y-%m-%d"),
           "sm_count": torch.cuda.get_device_properties(0).multi_processor_count,
           "tokens_per_rank": T_RANK, "have_grouped_mm": HAVE_GMM,
           "smi_before": smi(SMI_FIELDS)}

    def save():
        with open(path, "w") as fh:
            json.dump(res, fh)

    only = os.environ.get("LLMSIM_SECTIONS")
    for key, fn in (("grouped", grouped_rows), ("streams", stream_rows),
                    ("glue", glue_rows),
                    ("step", lambda: step_case(layers))):
        if only and key not in only.split(","):
            continue
        t0 = time.time()
        try:
            res[key] = fn()
        except Exception:  # noqa: BLE001
            res[key + "_error"] = traceback.format_exc()[-2000:]
            print(res[key + "_error"], flush=True)
        res[key + "_wall_s"] = time.time() - t0
        res["fallbacks"] = FALLBACKS
        res["smi_after_" + key] = smi(SMI_FIELDS)
        torch.cuda.empty_cache()
        save()


if __name__ == "__main__":
    main()
