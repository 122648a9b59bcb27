#!/usr/bin/env python3
"""Host (CPU) time of the per-expert Python around a grouped expert call.

A calibration aid for llmsim's host model (src/models/train_host.c,
workloads/frameworks/megatron-core.yaml `host:`), not part of the build;
needs a CUDA GPU and PyTorch. It writes JSON lines to stdout.

What it times, host seconds per call (median of TRIES batches of BATCH
calls; the GPU work is a few tiny kernels, so the launch queue never
fills and nothing waits for the device inside a batch):

  - `ref_linear`: torch.nn.Linear forward, bf16, 8192 x 2048 -> 2048, the
    call llmsim's `op` (13.48 us on the DGX H100's Xeon 8480C,
    NVIDIA/TransformerEngine issue #2053) is taken from: the sandbox-to-
    reference scale.
  - `empty_launch`: torch.cuda._sleep(0), one kernel launched from Python.
  - `grouped_fwd` at L experts: a torch.autograd.Function shaped as an
    expert GroupedLinear call (one weight parameter per expert, passed as
    *weights): the input split into L views, per-expert lists, one output
    allocation, ONE kernel standing for the C++ GEMM loop (whose host cost
    is measured elsewhere: results/reference/device/h200-gemm-host-*),
    save_for_backward of 3 L tensors and L per-expert closures on ctx.
    The per-expert slope of this is the Python an expert adds to a call.
  - `grouped_bwd` at L experts: backward of the same call: restore the
    saved tensors, call the L closures, split the gradient, one kernel,
    return a cached dummy weight gradient (.detach()) per expert, which
    the autograd engine hands to each weight's AccumulateGrad node.
  - `grouped_bwd_hooked`: the same with a Python hook on every weight's
    AccumulateGrad node that does what a data-parallel wrapper's
    post-accumulate hook does when the GEMM already accumulated into a
    main gradient buffer: a dict lookup by parameter, two attribute
    checks, param.grad = None, one method call that returns at once
    (not the last microbatch).

Usage: python3 scripts/measure-host-expert-torch.py > OUT.jsonl
Runs in about 30 s.
"""
import json
import statistics
import time

import torch

DEV = torch.device("cuda")
BATCH = 100
TRIES = 7
EXPERTS = (1, 4, 16, 32)


def host_time(fn, batch=BATCH, tries=TRIES):
    """Median host seconds per fn() call over tries batches."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    t = []
    for _ in range(tries):
        a = time.perf_counter()
        for _ in range(batch):
            fn()
        t.append((time.perf_counter() - a) / batch)
        torch.cuda.synchronize()
    return statistics.median(t), min(t), max(t)


def emit(**kw):
    print(json.dumps(kw), flush=True)


_dummy = {}


def dummy_grad(shape, dtype):
    key = (*shape, dtype)
    if key not in _dummy:
        _dummy[key] = torch.empty(shape, dtype=dtype, device=DEV)
    return _dummy[key].detach()


class Grouped(torch.autograd.Function):
    @staticmethod
    def forward(ctx, inp, splits, *weights):
        n = len(splits)
        views = torch.split(inp, splits)
        ws = [w if w.dtype == inp.dtype else w.to(inp.dtype) for w in weights]
        out = torch.empty((inp.shape[0], ws[0].shape[0]), dtype=inp.dtype,
                          device=inp.device)
        torch.cuda._sleep(0)  # the C++ GEMM loop, one launch here
        ctx.save_for_backward(*views, *ws, *weights)
        ctx.funcs = [lambda j=i: weights[j].main_grad for i in range(n)]
        ctx.splits = splits
        ctx.n = n
        return out

    @staticmethod
    def backward(ctx, grad):
        saved = ctx.saved_tensors
        n = ctx.n
        weights = saved[2 * n:3 * n]
        mains = [f() for f in ctx.funcs]
        gviews = torch.split(grad.contiguous(), ctx.splits)
        dgrad = torch.empty((grad.shape[0], weights[0].shape[1]),
                            dtype=grad.dtype, device=grad.device)
        torch.cuda._sleep(0)  # the C++ dgrad and wgrad loops
        out = []
        for w, m in zip(weights, mains):
            w.grad_added_to_main_grad = True
            out.append(dummy_grad(list(m.shape), w.dtype))
        del gviews
        return (dgrad, None, *out)


class Bucket:
    def __init__(self):
        self.last = False

    def ready(self, p):
        if self.last:
            raise RuntimeError("not timed")


def make(n, hooked):
    ws = []
    for _ in range(n):
        w = torch.nn.Parameter(torch.empty(64, 64, device=DEV,
                                           dtype=torch.bfloat16))
        w.main_grad = torch.zeros(64, 64, device=DEV)
        w.grad_added_to_main_grad = False
        ws.append(w)
    keep = []
    if hooked:
        table = {w: Bucket() for w in ws}
        for w in ws:
            def hook(*unused, p=w):
                if p in table:
                    if p.grad is not None and not p.grad_added_to_main_grad:
                        p.main_grad.add_(p.grad)
                    p.grad = None
                    table[p].ready(p)
            acc = w.expand_as(w).grad_fn.next_functions[0][0]
            acc.register_hook(hook)
            keep.append(acc)
    return ws, keep


def main():
    emit(type="hello", torch=torch.__version__, gpu=torch.cuda.get_device_name(),
         batch=BATCH, tries=TRIES)
    lin = torch.nn.Linear(2048, 2048, bias=False, device=DEV,
                          dtype=torch.bfloat16)
    x = torch.randn(8192, 2048, device=DEV, dtype=torch.bfloat16,
                    requires_grad=True)

    def ref():
        lin(x)
    m, lo, hi = host_time(ref, batch=50)
    emit(type="point", how="ref_linear", host_s_median=m, host_s_min=lo,
         host_s_max=hi)
    m, lo, hi = host_time(lambda: torch.cuda._sleep(0))
    emit(type="point", how="empty_launch", host_s_median=m, host_s_min=lo,
         host_s_max=hi)
    for hooked in (False, True):
        for n in EXPERTS:
            try:
                one(n, hooked)
            except Exception as e:  # keep the other points
                emit(type="error", experts=n, hooked=hooked, what=repr(e))
    emit(type="end")


def one(n, hooked):
    ws, keep = make(n, hooked)
    rows = 64 * n
    inp = torch.randn(rows, 64, device=DEV, dtype=torch.bfloat16,
                      requires_grad=True)
    splits = [64] * n
    g = torch.ones(rows, 64, device=DEV, dtype=torch.bfloat16)
    if not hooked:
        m, lo, hi = host_time(lambda: Grouped.apply(inp, splits, *ws))
        emit(type="point", how="grouped_fwd", experts=n,
             host_s_median=m, host_s_min=lo, host_s_max=hi)
    outs = []

    def fwd():
        outs.append(Grouped.apply(inp, splits, *ws))

    def bwd():
        outs.pop().backward(g)
        for w in ws:
            w.grad = None
    # backward timed alone: a batch of forwards first, untimed
    t = []
    for k in range(TRIES + 2):
        for _ in range(BATCH):
            fwd()
        torch.cuda.synchronize()
        a = time.perf_counter()
        for _ in range(BATCH):
            bwd()
        if k >= 2:
            t.append((time.perf_counter() - a) / BATCH)
        torch.cuda.synchronize()
    emit(type="point",
         how="grouped_bwd_hooked" if hooked else "grouped_bwd",
         experts=n, host_s_median=statistics.median(t),
         host_s_min=min(t), host_s_max=max(t))
    if not hooked:
        def reset():
            for w in ws:
                w.grad = None
        m, lo, hi = host_time(reset)
        emit(type="point", how="grad_reset_loop", experts=n,
             host_s_median=m, host_s_min=lo, host_s_max=hi)
    del keep


if __name__ == "__main__":
    main()
