#!/usr/bin/env python3
"""Block-scaled against per-tensor FP8 GEMMs on one NVIDIA GPU.

A calibration aid for llmsim (`fp8_block_gemm_rate` in configs/gpus/), not
part of the build: it needs a CUDA GPU and PyTorch (torch._scaled_mm, whose
cuBLASLt path takes DeepSeek-style block scales on Hopper: 1x128 blocks of
the activations, 128x128 blocks of the weights; 1x128 x 1x128 for a weight
gradient). For each shape C[M, N] = A[M, K] B[K, N] (e4m3 in, bf16 out):

  - `tensor`: one fp32 scale per operand;
  - `block`: A scaled per 1x128 block (scale shape M x K/128), B per
    128x128 block (K/128 x N/128);
  - `vec`: both operands per 1x128 block along K (B's scale K/128 x N);
  - `bf16`: the same GEMM in bf16 (torch.matmul), for reference.

Each layout's scale tensors are tried in the orders PyTorch has accepted
(row or column major); the one that ran is recorded, and every refusal is
kept in the output (`errors`). The result of each block GEMM is checked
against the bf16 product of the dequantized operands (relative Frobenius
error), so a silently unscaled path would show. Time: mean of back-to-back
calls after warm-up (CUDA events), and the same captured in a CUDA graph
(`*_graph_s`). Shapes: squares, the GEMMs of Transformer Engine's GEMM
profiling example (hidden 4096, ffn 16384, 15,872 tokens: the figures
llmsim's fp8_block_gemm_rate is derived from), and DeepSeek-V3 expert and
dense shapes.

Usage: python3 scripts/measure-fp8-block-gemm-torch.py OUT.json
"""
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torchmeasure import bench, graph_bench, smi  # noqa: E402

DEV = torch.device("cuda")
E4 = torch.float8_e4m3fn
BF = torch.bfloat16
SHAPES = [  # label, M, N, K
    ("square/4096", 4096, 4096, 4096),
    ("square/8192", 8192, 8192, 8192),
    ("te5b/fc1/fprop", 15872, 16384, 4096),
    ("te5b/fc2/fprop", 15872, 4096, 16384),
    ("te5b/fc1/dgrad", 15872, 4096, 16384),
    ("te5b/fc1/wgrad", 4096, 16384, 15872),
    ("dsv3/expert-fc1/m4096", 4096, 4096, 7168),
    ("dsv3/expert-fc2/m4096", 4096, 7168, 2048),
    ("dsv3/expert-fc1/m1024", 1024, 4096, 7168),
    ("dsv3/dense-fc1/m8192", 8192, 36864, 7168),
]


def quant_blocks(x, rows, cols):
    """x [R, C] float -> (e4m3 values, fp32 scales [R/rows, C/cols]) with
    each rows x cols block scaled to e4m3's max 448."""
    r, c = x.shape
    xb = x.view(r // rows, rows, c // cols, cols)
    amax = xb.abs().amax(dim=(1, 3)).clamp(min=1e-12)
    scale = amax / 448.0
    q = (xb / scale[:, None, :, None]).to(E4).view(r, c)
    return q, scale.float()


def dequant(q, scale, rows, cols):
    r, c = q.shape
    return (q.float().view(r // rows, rows, c // cols, cols) *
            scale[:, None, :, None]).view(r, c)


def try_orders(fn, variants, errors, tag):
    """The first scale variant fn accepts: (name, callable) or None."""
    for name, args in variants:
        try:
            fn(*args)
            return name, (lambda a=args: fn(*a))
        except Exception as ex:  # noqa: BLE001
            errors.append("%s %s: %s" % (tag, name, repr(ex)[:200]))
    return None, None


def one_shape(label, m, n, k):
    row = {"label": label, "M": m, "N": n, "K": k, "flop": 2.0 * m * n * k,
           "errors": []}
    a = torch.randn(m, k, device=DEV)
    bt = torch.randn(n, k, device=DEV)          # B^T, [N, K]
    ab, bb = a.to(BF), bt.to(BF).t()
    row["bf16_s"] = bench(lambda: torch.matmul(ab, bb))
    one = torch.ones((), device=DEV)
    a8, b8t = a.to(E4), bt.to(E4)
    b8 = b8t.t()                                # column major [K, N]

    def tensor_mm():
        return torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                out_dtype=BF)
    row["tensor_s"] = bench(tensor_mm)
    row["tensor_graph_s"] = graph_bench(tensor_mm)

    qa, sa = quant_blocks(a, 1, 128)            # [M, K/128]
    qb2, sb2 = quant_blocks(bt, 128, 128)       # [N/128, K/128] of B^T
    qbv, sbv = quant_blocks(bt, 1, 128)         # [N, K/128] of B^T
    ref2 = dequant(qa, sa, 1, 128) @ dequant(qb2, sb2, 128, 128).t()
    refv = dequant(qa, sa, 1, 128) @ dequant(qbv, sbv, 1, 128).t()

    def mm(sa_, sb_, qb):
        return torch._scaled_mm(qa, qb.t(), scale_a=sa_, scale_b=sb_,
                                out_dtype=BF)
    col = lambda s: s.t().contiguous().t()  # noqa: E731
    for tag, qb, sb, ref in (("block", qb2, sb2, ref2),
                             ("vec", qbv, sbv, refv)):
        variants = [
            ("a colmajor, b^T", (col(sa), sb.t(), qb)),
            ("a colmajor, b^T colmajor", (col(sa), col(sb.t()), qb)),
            ("a rowmajor, b^T", (sa.contiguous(), sb.t(), qb)),
            ("a colmajor, b", (col(sa), sb, qb)),
            ("a rowmajor, b rowmajor", (sa.contiguous(), sb.contiguous(),
                                        qb)),
        ]
        name, fn = try_orders(mm, variants, row["errors"], tag)
        if fn is None:
            continue
        out = fn().float()
        row[tag + "_layout"] = name
        row[tag + "_rel_err"] = float((out - ref).norm() / ref.norm())
        row[tag + "_s"] = bench(fn)
        row[tag + "_graph_s"] = graph_bench(fn)
    for key in ("bf16", "tensor", "block", "vec"):
        if key + "_s" in row:
            row[key + "_TFLOPs"] = row["flop"] / row[key + "_s"] / 1e12
    if "block_graph_s" in row:
        row["block_over_tensor"] = row["tensor_graph_s"] / row["block_graph_s"]
    if "vec_graph_s" in row:
        row["vec_over_tensor"] = row["tensor_graph_s"] / row["vec_graph_s"]
    print("%-24s bf16 %4.0f  tensor %4.0f  block %s  vec %s TFLOP/s" % (
        label, row["bf16_TFLOPs"], row["tensor_TFLOPs"],
        "%4.0f (x%.3f, err %.3g)" % (row["block_TFLOPs"],
                                     row["block_over_tensor"],
                                     row["block_rel_err"])
        if "block_TFLOPs" in row else "-",
        "%4.0f (x%.3f)" % (row["vec_TFLOPs"], row["vec_over_tensor"])
        if "vec_TFLOPs" in row else "-"), flush=True)
    return row


def main():
    path = sys.argv[1]
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "cuda": torch.version.cuda, "date": time.strftime("%Y-%m-%d"),
           "smi_before": smi("clocks.sm,power.draw,temperature.gpu"),
           "rows": []}
    for label, m, n, k in SHAPES:
        try:
            res["rows"].append(one_shape(label, m, n, k))
        except Exception as ex:  # noqa: BLE001
            res["rows"].append({"label": label, "error": repr(ex)[:500]})
            print(label, repr(ex)[:300], flush=True)
        torch.cuda.empty_cache()
        with open(path, "w") as fh:
            json.dump(res, fh)
    res["smi_after"] = smi("clocks.sm,power.draw,temperature.gpu")
    with open(path, "w") as fh:
        json.dump(res, fh)


if __name__ == "__main__":
    main()
