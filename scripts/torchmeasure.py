"""Timing helpers shared by llmsim's PyTorch measurement scripts
(measure-train-step-torch.py, measure-moe-torch.py,
measure-fp8-block-gemm-torch.py): CUDA-event and CUDA-graph timing,
the profiler's kernel list, nvidia-smi's clocks, and the rotary tables the
decoder-shaped models use, and their shared stack. Imported, not run; needs a CUDA GPU."""
import json
import subprocess

import torch
import torch.nn.functional as F
from torch import nn

DEV = torch.device("cuda")


class Stack(nn.Module):
    """A decoder stack: embedding, `layers` blocks from make_layer() (each
    called as layer(x, cos, sin)), the final RMSNorm and the vocabulary
    head, untied."""

    def __init__(self, make_layer, layers, vocab, hidden):
        super().__init__()
        self.hidden = hidden
        self.emb = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList([make_layer() for _ in range(layers)])
        self.norm = nn.Parameter(torch.ones(hidden))
        self.head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, tok, cos, sin):
        x = self.emb(tok)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.head(F.rms_norm(x, (self.hidden,), self.norm))


def bench(fn, iters=20, warmup=5):
    """Mean seconds of fn() over iters back-to-back calls after warmup
    (CUDA events around the whole run: what a stream of calls sustains)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    a = torch.cuda.Event(enable_timing=True)
    b = torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(iters):
        fn()
    b.record()
    torch.cuda.synchronize()
    return a.elapsed_time(b) / 1e3 / iters


GRAPH_REPS = 10


def graph_bench(fn):
    """GPU seconds of one fn() with the host out of the way: GRAPH_REPS
    calls captured in one CUDA graph (side streams forked from and joined
    to the capture stream are captured as branches), the graph replayed
    back to back, the mean divided by GRAPH_REPS. Kernel nodes of a graph
    start ~1 us apart, not a stream launch apart."""
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(st)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(GRAPH_REPS):
            fn()
    s = bench(g.replay, iters=10, warmup=2) / GRAPH_REPS
    del g
    return s


def timed_steps(step, n):
    """Seconds of each of n calls of step(), sorted (events around each)."""
    times = []
    for _ in range(n):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        step()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    return sorted(times)


def profile_kernels(step, n, path):
    """Every GPU kernel, copy and memset of n calls of step() as
    [name, start us, duration us, category], in start order."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU,
                             ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    with open(path) as fh:
        trace = json.load(fh)
    kernels = []
    for e in trace.get("traceEvents", []):
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") \
                and "dur" in e:
            kernels.append([e["name"][:160], round(float(e["ts"]), 3),
                            round(float(e["dur"]), 3), e.get("cat")])
    kernels.sort(key=lambda k: k[1])
    return kernels


def smi(fields="clocks.sm,power.draw,temperature.gpu"):
    try:
        return subprocess.run(
            ["nvidia-smi", "--query-gpu=" + fields, "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001
        return repr(e)


def rope_tables(seq, d, theta):
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=DEV).float() / d))
    ang = torch.outer(torch.arange(seq, device=DEV).float(), inv)
    cos = torch.cat([ang.cos(), ang.cos()], -1).to(torch.bfloat16)
    sin = torch.cat([ang.sin(), ang.sin()], -1).to(torch.bfloat16)
    return cos[None, :, None, :], sin[None, :, None, :]


def rope(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat([-x2, x1], dim=-1) * sin
