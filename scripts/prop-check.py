#!/usr/bin/env python3
"""Property checks of llmsim over its presets: invariants, not measurements.

Runs `llmsim run` (training and serving) and `llmsim collective` as a user
would, over every model preset (workloads/models) x a representative system
per vendor and generation x dtype x a few layouts, and checks what must hold
whatever the model constants are:

  every run    exit 0, or exit 2 with an 'error:' line naming the constraint
               (never 1, a signal, a timeout); no NaN, inf or negative
               number in the JSON (but the fields that mean 'none' as -1)
  training     mfu <= 1; tflops_per_gpu and hardware_tflops_per_gpu <= the
               GPU's peak for the dtype (peak_tflops_per_gpu); the breakdown
               sums to step_time_s; every stage's memory parts sum to its
               peak; params_per_gpu x tp x pp x ep >= params; the step grows
               with global batch at a fixed layout; a newer GPU of the same
               family on the same system layout (H100 -> H200, B200 -> B300,
               MI300X -> MI325X) is never slower; fp8 is never slower than
               bf16 on a GEMM-bound dense job (MFU >= 0.3 in bf16)
  serving      memory parts sum to the peak; output tokens/s rises (or
               stays) with max_num_seqs, offline, while the KV cache holds the
               batch; TTFT grows with the prompt; H100 -> H200 never slower
  collective   time grows with size; busbw <= the scale-up link bound inside
               a node (x 2 (n-1)/n for an all-reduce where the switch reduces);
               every row holds a whole element per rank and its count is the
               call's as nccl-tests prints it (size / 4 B float, / ranks too
               for all-gather, reduce-scatter and all-to-all); algbw is
               size / time and busbw algbw x nccl-tests' factor (all-reduce
               2(n-1)/n, all-gather, reduce-scatter, all-to-all (n-1)/n,
               others 1)

Usage: scripts/prop-check.py [--llmsim build/llmsim] [--jobs 2] [--quick]
       [--only train|serve|coll|jobs] [-v]
Exit 0 when every invariant holds, 1 when one does not (each printed as
'VIOLATION <check>: <case>: <detail>'), 2 on usage errors.
"""
import argparse
import concurrent.futures as cf
import functools
import json
import math
import os
import subprocess
import sys

TIMEOUT_S = 120
REL = 1e-6  # sums are of printed doubles: relative slack



def result_of(res, n):
    """The JSON of case n of a run_many result, or None (failed, no JSON)."""
    r = res.get(n)
    return r[1] if r and r[1] else None

def job_yaml(d, indent=0):
    """A tiny YAML writer for flat-ish dicts (JSON flow style is YAML)."""
    return "\n".join("%s: %s" % (k, json.dumps(v)) for k, v in d.items()) + "\n"


# Violations whose cause is known and owned elsewhere, written up in
# results/reference/training/README.md "Round 42 (prop42)": (check, case)
# -> why. They print as KNOWN and do not fail the run; an entry that no
# longer fires prints a note to remove it.
KNOWN = {
    # RCCL's own choice, as its sources give it (src/network owns it):
    # tuning_model_5's treeCorrectionFactor for Tree LL reads 100, 60, 100
    # at 64K, 128K, 256K (rccl.yaml select_size_pct [V35]), so RCCL runs
    # Ring LL at 128K between two Tree LL sizes
    ("coll-time-grows-with-size", "coll mi300x-roce allreduce 16"):
        "RCCL's Tree LL correction 60 % at 128K: Ring LL there (rccl.yaml)",
    # gfx950 across nodes: rcclUpdateCollectiveProtocol forces LL / LL128
    # by size per rank (rccl-gfx950.yaml protocol_ranges [G6]); llmsim
    # prices LL128 across nodes at about half Simple's busbw, so the time
    # falls where the range ends (no measured 2-node table but all-reduce)
    ("coll-time-grows-with-size", "coll mi355x-roce allgather 16"):
        "gfx950 forced LL128 to 8 MiB a rank across nodes, Simple beyond",
    ("coll-time-grows-with-size", "coll mi355x-roce reducescatter 16"):
        "gfx950 forced LL to 128 KiB a rank across nodes, LL128 beyond",
    ("coll-time-grows-with-size", "coll mi355x-roce broadcast 16"):
        "gfx950 forced LL128 to 16 MiB a rank across nodes, Simple beyond",
    ("coll-time-grows-with-size", "coll mi355x-roce reduce 16"):
        "gfx950 forced LL128 to 16 MiB a rank across nodes, Simple beyond",
    # vLLM's Triton block-fp8 fused MoE at its measured share of the fp8
    # rate (gpu triton_moe_fp8_block_rate 0.40, measured at 1024-16384
    # tokens, inference/README.md Round 34) applied to a 64-row tile that
    # holds one token: not measured at decode batches (src/models, serving)
    ("fp8-decode-not-slower", "decode minimax-m2 dgx-h100 b1"):
        "triton_moe_fp8_block_rate on a padded 64-row tile at batch 1",
}


class Runner:
    def __init__(self, llmsim, jobs, verbose):
        self.llmsim = llmsim
        self.jobs = jobs
        self.verbose = verbose
        self.violations = []
        self.known = set()
        self.runs = 0
        self.counts = {}

    def count(self, check):
        self.counts[check] = self.counts.get(check, 0) + 1

    def violate(self, check, case, detail):
        if (check, case) in KNOWN:
            self.known.add((check, case))
            print("KNOWN %s: %s: %s (%s)" % (check, case, detail, KNOWN[(check, case)]),
                  flush=True)
            return
        self.violations.append((check, case, detail))
        print("VIOLATION %s: %s: %s" % (check, case, detail), flush=True)

    def _exec(self, argv, stdin):
        cmd = ["nice", self.llmsim] + argv
        try:
            p = subprocess.run(cmd, input=stdin, capture_output=True,
                               text=True, timeout=TIMEOUT_S)
            return p.returncode, p.stdout, p.stderr
        except subprocess.TimeoutExpired:
            return "timeout", "", ""
        except OSError as e:
            return "not run", "", str(e)

    def run_many(self, cases):
        """cases: list of (name, argv, stdin). Returns {name: (rc, json|None, err)}."""
        out = {}
        with cf.ThreadPoolExecutor(max_workers=self.jobs) as ex:
            futs = {ex.submit(self._exec, a, s): n for n, a, s in cases}
            for f in cf.as_completed(futs):
                name = futs[f]
                rc, so, se = f.result()
                self.runs += 1
                out[name] = self.check_exit(name, rc, so, se)
        return out

    def check_exit(self, name, rc, so, se):
        if rc == 0:
            try:
                d = json.loads(so)
            except ValueError as e:
                self.violate("json", name, "exit 0 but unparsable JSON (%s)" % e)
                return rc, None, se
            self.check_numbers(name, d)
            if self.verbose:
                print("ok %s" % name, flush=True)
            return rc, d, se
        if rc == 2:
            if "error" not in se:
                self.violate("exit2-message", name, "exit 2 without an error line: %r" % se[:200])
            elif self.verbose:
                print("exit 2 %s: %s" % (name, se.strip().splitlines()[-1][:160]))
            return rc, None, se
        self.violate("exit", name, "exit %s: %s" % (rc, se.strip()[-300:]))
        return rc, None, se

    def check_numbers(self, name, d, path=""):
        if isinstance(d, dict):
            for k, v in d.items():
                self.check_numbers(name, v, path + "." + k)
        elif isinstance(d, list):
            for i, v in enumerate(d):
                self.check_numbers(name, v, "%s[%d]" % (path, i))
        elif isinstance(d, float) or (isinstance(d, int) and not isinstance(d, bool)):
            if isinstance(d, float) and (math.isnan(d) or math.isinf(d)):
                self.violate("finite", name, "%s = %r" % (path, d))
            elif d < 0 and not (d == -1 and path.endswith(("root", "pipeline_rank", ".gpu"))):
                self.violate("nonneg", name, "%s = %r" % (path, d))


def close(a, b, rel=REL, abs_=0.0):
    return abs(a - b) <= rel * max(abs(a), abs(b)) + abs_


# --------------------------------------------------------------- training

# Representative systems: NVIDIA Ampere / Hopper / Blackwell, AMD MI300X /
# MI355X, with the dtypes each GPU has a matrix rate for.
TRAIN_SYSTEMS = {
    "dgx-a100": ["bf16"],
    "dgx-h100": ["bf16", "fp8"],
    "dgx-h200": ["bf16", "fp8"],
    "dgx-b200": ["bf16", "fp8", "mxfp8", "nvfp4"],
    "dgx-b300": ["bf16", "fp8", "mxfp8", "nvfp4"],
    "mi300x-roce": ["bf16", "fp8"],
    "mi325x-roce": ["bf16", "fp8"],
    "mi355x-roce": ["bf16", "fp8", "mxfp8", "mxfp4"],
}
# (older, newer) on the same job: the newer never slower
SAME_FAMILY = [("dgx-h100", "dgx-h200"), ("dgx-b200", "dgx-b300"),
               ("mi300x-roce", "mi325x-roce")]


# --quick: one model of each kind (small dense, large dense, MoE, MLA MoE,
# Mamba hybrid, windowed MXFP4 MoE) on fewer systems
QUICK_MODELS = ["llama3-8b", "llama3-70b", "qwen3-30b-a3b", "deepseek-v2-lite",
                "nemotron-h-8b", "gpt-oss-20b"]
QUICK = False


def model_list(root):
    d = os.path.join(root, "workloads", "models")
    ms = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml"))
    return [m for m in ms if m in QUICK_MODELS] if QUICK else ms


def model_info(root, m):
    """experts, layers from the preset (for the layout), by a light parse."""
    info = {"experts": 0}
    with open(os.path.join(root, "workloads", "models", m + ".yaml")) as f:
        for line in f:
            s = line.split("#")[0].strip()
            if ":" not in s:
                continue
            k, v = [x.strip() for x in s.split(":", 1)]
            if k in ("num_experts", "n_routed_experts", "num_local_experts") and v.isdigit():
                info["experts"] = int(v)
            if k in ("num_hidden_layers",) and v.isdigit():
                info["layers"] = int(v)
    return info


# params (billions) of each preset: only the size class matters (which
# layout fits); measured with the probe in the Round 42 write-up
def size_class(params_b):
    if params_b < 20:
        return "small"
    if params_b < 60:
        return "medium"
    if params_b < 200:
        return "large"
    return "huge"


def train_layout(params_b, experts):
    """(nodes, parallelism) of a layout that fits an 80 GB GPU or close."""
    c = size_class(params_b)
    par = {"sequence_parallel": True}
    if c == "small":
        nodes, par["tp"] = 1, 2
    elif c == "medium":
        nodes, par["tp"], par["pp"] = 2, 4, 2
    elif c == "large":
        nodes, par["tp"], par["pp"] = 4, 8, 4
    else:
        nodes, par["tp"], par["pp"] = 16, 8, 8
    if experts:
        par["ep"] = 8 if experts % 8 == 0 else 1
        par["etp"] = 1
    return nodes, par


def train_case(model, system, dtype, nodes, par, gbs, seq=4096, extra=None):
    job = {"model": model, "system": system,
           "training": {"seq_len": seq, "global_batch_size": gbs, "dtype": dtype,
                        "zero_stage": 1, "recompute": "selective"},
           "parallelism": par}
    if extra:
        for k, v in extra.items():
            job[k].update(v)
    return ["run", "-", "--set", "system.nodes=%d" % nodes, "--json", "--no-store"], job_yaml(job)


def check_train_result(R, name, d, par):
    if d is None:
        return
    st = d["step_time_s"]
    R.count("mfu<=1")
    if d["mfu"] > 1:
        R.violate("mfu<=1", name, "mfu %.3f" % d["mfu"])
    peak = d.get("peak_tflops_per_gpu", 0)
    for k in ("tflops_per_gpu", "hardware_tflops_per_gpu"):
        R.count("flops<=peak")
        if peak and d.get(k, 0) > peak * (1 + 1e-9):
            R.violate("flops<=peak", name, "%s %.1f > peak %.1f TFLOP/s" % (k, d[k], peak))
    b = d["breakdown"]
    s = sum(b.values())
    R.count("breakdown-sum")
    if not close(s, st, 1e-6, 2e-9):
        R.violate("breakdown-sum", name, "parts %.9f s != step %.9f s" % (s, st))
    R.count("tokens-rate")
    if not close(d["tokens_per_s"], d["tokens_per_step"] / st, 1e-6):
        R.violate("tokens-rate", name, "tokens_per_s %.3f != %d tokens / %.9f s" %
                  (d["tokens_per_s"], d["tokens_per_step"], st))
    R.count("mfu-consistent")
    if peak and not close(d["mfu"] * peak, d["tflops_per_gpu"], 1e-6):
        R.violate("mfu-consistent", name, "mfu %.6f x peak %.1f != %.3f TFLOP/s" %
                  (d["mfu"], peak, d["tflops_per_gpu"]))
    R.count("tflops-consistent")
    if not close(d["model_flops_per_step"] / st / d["gpus"] / 1e12, d["tflops_per_gpu"], 1e-6):
        R.violate("tflops-consistent", name, "model FLOP %.4g / %.6f s / %d GPUs != %.3f TFLOP/s" %
                  (d["model_flops_per_step"], st, d["gpus"], d["tflops_per_gpu"]))
    h = d.get("host")
    if h:
        R.count("host-critical-in-other")
        if h["critical_s"] > b["other_s"] * (1 + 1e-6) + 1e-9:
            R.violate("host-critical-in-other", name, "host critical %.6f s > other %.6f s" %
                      (h["critical_s"], b["other_s"]))
    R.count("bubble-needs-pp")
    if par.get("pp", 1) == 1 and b["bubble_s"] > 0:
        R.violate("bubble-needs-pp", name, "pp 1 with bubble %.6f s" % b["bubble_s"])
    ed = d.get("exposed_comm_by_dim")
    if ed:
        R.count("exposed-by-dim-sum")
        if not close(sum(ed.values()), b["exposed_comm_s"], 1e-6, 2e-9):
            R.violate("exposed-by-dim-sum", name, "by dimension %.9f s != exposed %.9f s" %
                      (sum(ed.values()), b["exposed_comm_s"]))
    mem = d["memory"]
    parts = ("weights_bytes", "gradients_bytes", "optimizer_bytes",
             "activations_bytes", "workspace_bytes")
    for stg in [mem] + mem.get("stages", []):
        ssum = sum(stg.get(p, 0) for p in parts)
        R.count("memory-sum")
        if not close(ssum, stg["peak_bytes_per_gpu"], 1e-9, 2):
            R.violate("memory-sum", name, "stage %s parts %d B != peak %d B" %
                      (stg.get("pipeline_rank"), ssum, stg["peak_bytes_per_gpu"]))
        R.count("memory-fits")
        if stg.get("fits") != (stg["peak_bytes_per_gpu"] <= mem["usable_bytes"]):
            R.violate("memory-fits", name, "stage %s fits=%s peak %d usable %d" %
                      (stg.get("pipeline_rank"), stg.get("fits"),
                       stg["peak_bytes_per_gpu"], mem["usable_bytes"]))
    shard = par.get("tp", 1) * par.get("pp", 1) * par.get("ep", 1)
    ppg = max([stg.get("params_per_gpu", 0) for stg in mem.get("stages", [])] + [mem.get("params_per_gpu", 0)])
    R.count("params-shard")
    if ppg * shard < d["params"] * 0.999:
        R.violate("params-shard", name, "params_per_gpu %d x tp*pp*ep %d < params %d" %
                  (ppg, shard, d["params"]))
    # ZeRO 3 shards the weights a GPU keeps over its dp x cp peers (the
    # largest shard: every GPU of its stage), params_per_gpu counts them whole
    held = mem["params_per_gpu"]
    if par.get("zero_stage", 1) >= 3:
        held /= d["gpus"] / (par.get("tp", 1) * par.get("pp", 1))
    R.count("weights>=params")
    if mem["weights_bytes"] < held * 1.0 - 1:
        R.violate("weights>=params", name, "weights %d B < params_per_gpu %d" %
                  (mem["weights_bytes"], mem["params_per_gpu"]))


def training(R, root, quick):
    models = model_list(root)
    # first pass: params of each model (tp 8 on 16 DGX H100, any fit)
    probe = []
    for m in models:
        argv, y = train_case(m, "dgx-h100", "bf16", 16, {"tp": 8, "sequence_parallel": True}, 256)
        probe.append((m, argv, y))
    pr = R.run_many(probe)
    cases, meta = [], {}
    for m in models:
        rc, d, _ = pr[m]
        if d is None:
            continue
        info = model_info(root, m)
        nodes, par = train_layout(d["params"] / 1e9, info["experts"])
        gbs = 32 * nodes
        systems = TRAIN_SYSTEMS if not quick else {
            "dgx-h100": ["bf16", "fp8"], "dgx-h200": ["bf16", "fp8"],
            "dgx-b200": ["bf16", "nvfp4"], "dgx-b300": ["bf16", "nvfp4"],
            "mi300x-roce": ["bf16"], "mi325x-roce": ["bf16"]}
        for sysn, dts in systems.items():
            for dt in dts:
                n = "train %s %s %s" % (m, sysn, dt)
                argv, y = train_case(m, sysn, dt, nodes, par, gbs)
                cases.append((n, argv, y)); meta[n] = par
        # global batch x2 at the same layout (H100 bf16)
        n = "train %s dgx-h100 bf16 gbs2x" % m
        argv, y = train_case(m, "dgx-h100", "bf16", nodes, par, 2 * gbs)
        cases.append((n, argv, y)); meta[n] = par
        # layouts: pp x2 (when the layers allow), cp 2
        p2 = dict(par); p2["pp"] = par.get("pp", 1) * 2
        n = "train %s dgx-h100 bf16 pp%d" % (m, p2["pp"])
        argv, y = train_case(m, "dgx-h100", "bf16", nodes * 2, p2, gbs)
        cases.append((n, argv, y)); meta[n] = p2
        # recompute and ZeRO stages at the base layout (H100 bf16)
        for rc_ in ("none", "full"):
            n = "train %s dgx-h100 bf16 recompute-%s" % (m, rc_)
            argv, y = train_case(m, "dgx-h100", "bf16", nodes, par, gbs,
                                 extra={"training": {"recompute": rc_}})
            cases.append((n, argv, y)); meta[n] = par
        for z in (0, 2, 3):
            n = "train %s dgx-h100 bf16 zero%d" % (m, z)
            argv, y = train_case(m, "dgx-h100", "bf16", nodes, par, gbs,
                                 extra={"training": {"zero_stage": z}})
            cases.append((n, argv, y)); meta[n] = dict(par, zero_stage=z)
        c2 = dict(par); c2["cp"] = 2
        n = "train %s dgx-h100 bf16 cp2" % m
        argv, y = train_case(m, "dgx-h100", "bf16", nodes * 2, c2, gbs)
        cases.append((n, argv, y)); meta[n] = c2
    res = R.run_many(cases)
    for n, (rc, d, _) in res.items():
        check_train_result(R, n, d, meta[n])

    def st(n):
        r = res.get(n)
        return r[1]["step_time_s"] if r and r[1] else None

    for m in models:
        if m not in pr or pr[m][1] is None:
            continue
        a, b = st("train %s dgx-h100 bf16" % m), st("train %s dgx-h100 bf16 gbs2x" % m)
        if a is not None and b is not None:
            R.count("step-grows-with-batch")
        if a is not None and b is not None and b <= a:
            R.violate("step-grows-with-batch", "train %s dgx-h100 bf16" % m,
                      "gbs x2 step %.4f s <= %.4f s" % (b, a))
        # recompute: none <= selective <= full in time, the reverse in
        # activations; ZeRO stage z+1 never holds more model state
        base = "train %s dgx-h100 bf16" % m
        seq = [res.get("%s recompute-none" % base), res.get(base),
               res.get("%s recompute-full" % base)]
        seq = [r[1] if r else None for r in seq]
        for (na, a), (nb, b) in zip(zip(("none", "selective", "full"), seq),
                                    list(zip(("none", "selective", "full"), seq))[1:]):
            if a is None or b is None:
                continue
            R.count("recompute-not-faster")
            if b["step_time_s"] < a["step_time_s"] * (1 - 1e-6):
                R.violate("recompute-not-faster", base, "%s %.4f s < %s %.4f s" %
                          (nb, b["step_time_s"], na, a["step_time_s"]))
            R.count("recompute-keeps-less")
            if b["memory"]["activations_bytes"] > a["memory"]["activations_bytes"] * (1 + 1e-9):
                R.violate("recompute-keeps-less", base, "%s %d B > %s %d B activations" %
                          (nb, b["memory"]["activations_bytes"], na, a["memory"]["activations_bytes"]))
        zs = [res.get("%s zero0" % base), res.get(base), res.get("%s zero2" % base),
              res.get("%s zero3" % base)]
        prevz = None
        for z, r in enumerate(zs):
            d = r[1] if r else None
            if d is None:
                continue
            mem = d["memory"]
            state = mem["weights_bytes"] + mem["gradients_bytes"] + mem["optimizer_bytes"]
            R.count("zero-shards-state")
            if prevz and state > prevz[1] * (1 + 1e-9):
                R.violate("zero-shards-state", base, "zero %d model state %d B > zero %d %d B" %
                          (z, state, prevz[0], prevz[1]))
            prevz = (z, state)
        for old, new in SAME_FAMILY:
            for dt in TRAIN_SYSTEMS.get(old, []):
                a, b = st("train %s %s %s" % (m, old, dt)), st("train %s %s %s" % (m, new, dt))
                if a is not None and b is not None:
                    R.count("newer-gpu-not-slower")
                if a is not None and b is not None and b > a * 1.001:
                    R.violate("newer-gpu-not-slower", "train %s %s" % (m, dt),
                              "%s %.4f s > %s %.4f s (%+.2f %%)" % (new, b, old, a, 100 * (b / a - 1)))
        for sysn in ("dgx-h100", "dgx-b200", "mi300x-roce", "mi355x-roce"):
            r16 = res.get("train %s %s bf16" % (m, sysn))
            a, b = st("train %s %s bf16" % (m, sysn)), st("train %s %s fp8" % (m, sysn))
            if a is None or b is None or model_info(root, m)["experts"]:
                continue
            if r16[1]["mfu"] >= 0.3:
                R.count("fp8-not-slower-gemm-bound")
            if r16[1]["mfu"] >= 0.3 and b > a * 1.001:
                R.violate("fp8-not-slower-gemm-bound", "train %s %s" % (m, sysn),
                          "fp8 %.4f s > bf16 %.4f s (%+.2f %%, bf16 mfu %.2f)" %
                          (b, a, 100 * (b / a - 1), r16[1]["mfu"]))
    return res


# ---------------------------------------------------------------- serving

SERVE_SYSTEMS = {"dgx-h100": ["bf16", "fp8"], "dgx-h200": ["bf16", "fp8"],
                 "dgx-b200": ["bf16", "nvfp4"], "mi300x-roce": ["bf16", "fp8"]}


def serve_case(model, system, dtype, nodes, tp, pp, ep, inlen=1024, outlen=128,
               requests=64, max_seqs=0, engine="vllm"):
    par = {"tp": tp}
    if pp > 1:
        par["pp"] = pp
    if ep > 1:
        par["ep"] = ep
    srv = {"engine": engine if not system.startswith("mi") else "vllm-rocm",
           "dtype": dtype, "kv_dtype": "bf16", "requests": requests,
           "input_len": inlen, "output_len": outlen, "seed": 1}
    if max_seqs:
        srv["max_num_seqs"] = max_seqs
    job = {"model": model, "system": system, "phase": "serving",
           "parallelism": par, "serving": srv}
    return ["run", "-", "--set", "system.nodes=%d" % nodes, "--json", "--no-store"], job_yaml(job)


def serve_layout(params_b, experts):
    c = size_class(params_b)
    ep = 8 if experts and experts % 8 == 0 else 1
    if c in ("small", "medium"):
        return 1, 8 if c == "medium" else 2, 1, (ep if c == "medium" else 1)
    if c == "large":
        return 1, 8, 1, ep
    return 4, 8, 4, ep


def check_serve_result(R, name, d):
    if d is None:
        return
    mem = d["memory"]
    parts = ("weights_bytes", "kv_cache_bytes", "activations_bytes", "workspace_bytes")
    ssum = sum(mem.get(p, 0) for p in parts)
    R.count("memory-sum")
    if not close(ssum, mem["peak_bytes_per_gpu"], 1e-9, 2):
        R.violate("memory-sum", name, "parts %d B != peak %d B" % (ssum, mem["peak_bytes_per_gpu"]))
    R.count("weights-bytes-per-param")
    bpp = mem["weights_bytes"] / mem["params_per_gpu"] if mem["params_per_gpu"] else 0
    if not 0.25 < bpp <= 2 * (1 + 1e-3):
        R.violate("weights-bytes-per-param", name, "weights %d B for %d params: %.3f B each" %
                  (mem["weights_bytes"], mem["params_per_gpu"], bpp))
    s = d["serving"]
    R.count("serving-completed")
    if s["completed"] > s["requests"]:
        R.violate("serving-completed", name, "%d completed of %d" % (s["completed"], s["requests"]))
    dur = s["duration_s"]
    R.count("serving-rate")
    if dur > 0 and not close(s["output_tokens_per_s"], s["output_tokens"] / dur, 1e-6):
        R.violate("serving-rate", name, "output_tokens_per_s %.3f != %d / %.6f" %
                  (s["output_tokens_per_s"], s["output_tokens"], dur))
    for k in ("ttft_s", "tpot_s", "e2e_s", "queue_s"):
        q = s.get(k)
        R.count("percentiles")
        if q and not (q["p50"] <= q["p90"] * (1 + 1e-12) <= q["p99"] * (1 + 2e-12)):
            R.violate("percentiles", name, "%s p50 %g p90 %g p99 %g" % (k, q["p50"], q["p90"], q["p99"]))
    R.count("kv-occupancy<=1")
    if s.get("kv_peak_occupancy", 0) > 1 + 1e-9:
        R.violate("kv-occupancy<=1", name, "kv_peak_occupancy %.4f" % s["kv_peak_occupancy"])


def serving(R, root, quick, params):
    models = model_list(root)
    cases = []
    for m in models:
        if m not in params:
            continue
        nodes, tp, pp, ep = serve_layout(params[m], params["_experts"][m])
        systems = SERVE_SYSTEMS if not quick else {"dgx-h100": ["bf16", "fp8"],
                                                   "dgx-h200": ["bf16", "fp8"]}
        for sysn, dts in systems.items():
            for dt in dts:
                argv, y = serve_case(m, sysn, dt, nodes, tp, pp, ep)
                cases.append(("serve %s %s %s" % (m, sysn, dt), argv, y))
        for inlen in (512, 1536):
            argv, y = serve_case(m, "dgx-h100", "bf16", nodes, tp, pp, ep, inlen=inlen, requests=1)
            cases.append(("serve %s dgx-h100 bf16 single in%d" % (m, inlen), argv, y))
        for ms in (8, 32, 128):
            argv, y = serve_case(m, "dgx-h100", "bf16", nodes, tp, pp, ep, requests=256, max_seqs=ms)
            cases.append(("serve %s dgx-h100 bf16 seqs%d" % (m, ms), argv, y))
    res = R.run_many(cases)
    for n, (rc, d, _) in res.items():
        check_serve_result(R, n, d)

    get = functools.partial(result_of, res)

    for m in models:
        a, b = get("serve %s dgx-h100 bf16 single in512" % m), get("serve %s dgx-h100 bf16 single in1536" % m)
        if a and b:
            R.count("ttft-grows-with-input")
        if a and b and b["serving"]["ttft_s"]["mean"] < a["serving"]["ttft_s"]["mean"]:
            R.violate("ttft-grows-with-input", "serve %s dgx-h100 bf16" % m,
                      "ttft in 1536 %.4f s < in 512 %.4f s" % (b["serving"]["ttft_s"]["mean"],
                                                              a["serving"]["ttft_s"]["mean"]))
        prev = None
        for ms in (8, 32, 128):
            d = get("serve %s dgx-h100 bf16 seqs%d" % (m, ms))
            if d is None:
                prev = None
                continue
            s = d["serving"]
            fits = s["preemptions"] == 0 and ms <= s["kv_capacity_sequences"]
            if prev and fits:
                R.count("throughput-rises-with-batch")
            if prev and fits and s["output_tokens_per_s"] < prev[1] * 0.999:
                R.violate("throughput-rises-with-batch", "serve %s dgx-h100 bf16" % m,
                          "max_num_seqs %d: %.1f tok/s < max_num_seqs %d: %.1f tok/s" %
                          (ms, s["output_tokens_per_s"], prev[0], prev[1]))
            prev = (ms, s["output_tokens_per_s"]) if fits else None
        a, b = get("serve %s dgx-h100 bf16" % m), get("serve %s dgx-h100 fp8" % m)
        if a and b:
            R.count("fp8-weights-not-larger")
            if b["memory"]["weights_bytes"] > a["memory"]["weights_bytes"] * (1 + 1e-9):
                R.violate("fp8-weights-not-larger", "serve %s dgx-h100" % m,
                          "fp8 weights %d B > bf16 %d B" % (b["memory"]["weights_bytes"],
                                                           a["memory"]["weights_bytes"]))
        for dt in ("bf16", "fp8"):
            a, b = get("serve %s dgx-h100 %s" % (m, dt)), get("serve %s dgx-h200 %s" % (m, dt))
            if a and b:
                R.count("newer-gpu-not-slower")
            if a and b and b["serving"]["duration_s"] > a["serving"]["duration_s"] * 1.001:
                R.violate("newer-gpu-not-slower", "serve %s %s" % (m, dt),
                          "dgx-h200 %.4f s > dgx-h100 %.4f s" % (b["serving"]["duration_s"],
                                                                 a["serving"]["duration_s"]))
    return res


# ------------------------------------------------------------ job presets

def job_presets(R, root, quick):
    """Every shipped job (workloads/jobs) as it is, through the checks of
    its phase (serving runs cut to 500 requests). --quick: the fast ones."""
    slow = ("deepseek-v3-2048", "llama3.1-405b-131k", "serve-llama3-70b-pd")
    d = os.path.join(root, "workloads", "jobs")
    jobs = sorted(f[:-5] for f in os.listdir(d) if f.endswith(".yaml"))
    if quick:
        jobs = [j for j in jobs if not j.startswith(slow)]
    cases, meta = [], {}
    for j in jobs:
        path = os.path.join(d, j + ".yaml")
        p = subprocess.run([R.llmsim, "config", "show", path, "--json"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            R.violate("exit", "preset %s" % j, "config show exit %d: %s" % (p.returncode, p.stderr[-200:]))
            continue
        cfg = json.loads(p.stdout)
        par = dict(cfg.get("parallelism", {}))
        par["zero_stage"] = (cfg.get("training") or {}).get("zero_stage", 0)
        meta["preset " + j] = (cfg.get("phase", "training"), par)
        argv = ["run", path, "--json", "--no-store"]
        if cfg.get("phase") == "serving":
            argv += ["--set", "serving.requests=500"]
        cases.append(("preset " + j, argv, None))
    res = R.run_many(cases)
    for n, (rc, dd, _) in res.items():
        phase, par = meta[n]
        if phase == "training":
            check_train_result(R, n, dd, par)
        elif phase == "serving":
            check_serve_result(R, n, dd)
        else:
            check_phase_result(R, n, dd)
    return res


# --------------------------------------------------------- prefill, decode

def phase_case(model, system, dtype, nodes, tp, pp, ep, phase, batch, length):
    par = {"tp": tp}
    if pp > 1:
        par["pp"] = pp
    if ep > 1:
        par["ep"] = ep
    srv = {"engine": "vllm" if not system.startswith("mi") else "vllm-rocm",
           "dtype": dtype, "batch": batch}
    if phase == "decode":
        srv["context_len"] = length
    else:
        srv["input_len"] = length
    job = {"model": model, "system": system, "phase": phase,
           "parallelism": par, "serving": srv}
    return ["run", "-", "--set", "system.nodes=%d" % nodes, "--json", "--no-store"], job_yaml(job)


def check_phase_result(R, name, d):
    if d is None:
        return
    st = d["step_time_s"]
    R.count("breakdown-sum")
    if not close(sum(d["breakdown"].values()), st, 1e-6, 2e-9):
        R.violate("breakdown-sum", name, "parts %.9f s != step %.9f s" %
                  (sum(d["breakdown"].values()), st))
    mem = d["memory"]
    ssum = sum(mem.get(p, 0) for p in ("weights_bytes", "kv_cache_bytes",
                                        "activations_bytes", "workspace_bytes"))
    R.count("memory-sum")
    if not close(ssum, mem["peak_bytes_per_gpu"], 1e-9, 2):
        R.violate("memory-sum", name, "parts %d B != peak %d B" % (ssum, mem["peak_bytes_per_gpu"]))
    R.count("mfu<=1")
    if d["mfu"] > 1:
        R.violate("mfu<=1", name, "mfu %.3f" % d["mfu"])


def phases(R, root, quick, params):
    cases = []
    models = [m for m in model_list(root) if m in params]
    for m in models:
        nodes, tp, pp, ep = serve_layout(params[m], params["_experts"][m])
        for dt in ("bf16", "fp8"):
            for b in (1, 16, 128):
                argv, y = phase_case(m, "dgx-h100", dt, nodes, tp, pp, ep, "decode", b, 1024)
                cases.append(("decode %s dgx-h100 %s b%d ctx1024" % (m, dt, b), argv, y))
        argv, y = phase_case(m, "dgx-h100", "bf16", nodes, tp, pp, ep, "decode", 16, 1536)
        cases.append(("decode %s dgx-h100 bf16 b16 ctx1536" % m, argv, y))
        for L in (256, 1536):
            argv, y = phase_case(m, "dgx-h100", "bf16", nodes, tp, pp, ep, "prefill", 1, L)
            cases.append(("prefill %s dgx-h100 bf16 b1 in%d" % (m, L), argv, y))
    res = R.run_many(cases)
    for n, (rc, d, _) in res.items():
        check_phase_result(R, n, d)

    get = functools.partial(result_of, res)

    for m in models:
        for dt in ("bf16", "fp8"):
            prev = None
            for b in (1, 16, 128):
                d = get("decode %s dgx-h100 %s b%d ctx1024" % (m, dt, b))
                if d is None or not d["memory"]["fits"]:
                    prev = None
                    continue
                if prev:
                    R.count("decode-rate-rises-with-batch")
                    if d["tokens_per_s"] < prev[1] * 0.999:
                        R.violate("decode-rate-rises-with-batch", "decode %s dgx-h100 %s" % (m, dt),
                                  "batch %d %.1f tok/s < batch %d %.1f tok/s" %
                                  (b, d["tokens_per_s"], prev[0], prev[1]))
                    R.count("decode-step-grows-with-batch")
                    if d["step_time_s"] < prev[2] * (1 - 1e-6):
                        R.violate("decode-step-grows-with-batch", "decode %s dgx-h100 %s" % (m, dt),
                                  "batch %d %.6f s < batch %d %.6f s" %
                                  (b, d["step_time_s"], prev[0], prev[2]))
                prev = (b, d["tokens_per_s"], d["step_time_s"])
        a, b = get("decode %s dgx-h100 bf16 b16 ctx1024" % m), get("decode %s dgx-h100 bf16 b16 ctx1536" % m)
        if a and b:
            R.count("decode-step-grows-with-context")
            if b["step_time_s"] < a["step_time_s"] * (1 - 1e-6):
                R.violate("decode-step-grows-with-context", "decode %s dgx-h100 bf16 b16" % m,
                          "context 1536 %.6f s < 1024 %.6f s" % (b["step_time_s"], a["step_time_s"]))
        a, b = get("prefill %s dgx-h100 bf16 b1 in256" % m), get("prefill %s dgx-h100 bf16 b1 in1536" % m)
        if a and b:
            R.count("prefill-grows-with-input")
            if b["step_time_s"] < a["step_time_s"]:
                R.violate("prefill-grows-with-input", "prefill %s dgx-h100 bf16" % m,
                          "1536 tokens %.6f s < 256 tokens %.6f s" % (b["step_time_s"], a["step_time_s"]))
        for b_ in (1, 16, 128):
            a, b = get("decode %s dgx-h100 bf16 b%d ctx1024" % (m, b_)), get("decode %s dgx-h100 fp8 b%d ctx1024" % (m, b_))
            if a and b:
                R.count("fp8-decode-not-slower")
                if b["step_time_s"] > a["step_time_s"] * 1.02:
                    R.violate("fp8-decode-not-slower", "decode %s dgx-h100 b%d" % (m, b_),
                              "fp8 %.6f s > bf16 %.6f s (%+.1f %%)" % (b["step_time_s"], a["step_time_s"],
                                                                       100 * (b["step_time_s"] / a["step_time_s"] - 1)))
    return res


# ------------------------------------------------------------- collective

COLL_SYSTEMS = ["dgx-a100", "dgx-h100", "dgx-h200", "dgx-b200", "gb200-nvl72",
                "mi300x-roce", "mi355x-roce", "h100-roce"]
COLL_OPS = ["allreduce", "allgather", "reducescatter", "alltoall", "broadcast",
            "reduce", "sendrecv"]


def link_bound(root, llmsim, system):
    """Scale-up bytes/s one GPU may send: lane rate x lanes x line code x links."""
    p = subprocess.run([llmsim, "config", "show", system, "--json"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return None
    d = json.loads(p.stdout)
    su = d["scale_up"]

    def rate(s):
        v, u = s.split()
        return float(v) * {"GB/s": 1e9, "Gb/s": 1.25e8, "TB/s": 1e12, "MB/s": 1e6}[u]
    ep = rate(su.get("endpoint_bandwidth", "0 GB/s"))
    if ep > 0:
        return ep, d["gpus_per_node"], su.get("in_switch_reduction", False)
    lk = su["link"]
    bw = rate(lk["lane_rate"]) * lk["lanes"] * lk.get("line_code", 1) * su["links_per_endpoint"]
    return bw, d["gpus_per_node"], su.get("in_switch_reduction", False)


def collective(R, root, quick):
    cases = []
    systems = COLL_SYSTEMS if not quick else ["dgx-h100", "dgx-b200", "mi300x-roce"]
    for sysn in systems:
        for op in COLL_OPS:
            for ranks, nodes in ((2, 1), (8, 1), (16, 2)):
                if sysn == "gb200-nvl72" and nodes > 1:
                    ranks = 72 + 8  # two racks
                    nodes = 2
                argv = ["collective", "--system", sysn, "--op", op, "--ranks", str(ranks),
                        "--min", "1K", "--max", "8G", "--json", "--no-store"]
                if nodes > 1:
                    argv += ["--set", "nodes=%d" % nodes]
                cases.append(("coll %s %s %d" % (sysn, op, ranks), argv, None))
    res = R.run_many(cases)
    bounds = {s: link_bound(root, R.llmsim, s) for s in systems}
    for s, b in bounds.items():
        if b is None:
            R.violate("exit", "config show %s" % s, "does not load")
    for n, (rc, d, _) in res.items():
        if d is None:
            continue
        _, sysn, op, ranks = n.split()
        ranks = int(ranks)
        if bounds[sysn] is None:
            continue
        bw, gpn, isr = bounds[sysn]
        prev = None
        split = op in ("allgather", "reducescatter", "alltoall")
        for row in d["rows"]:
            t = row["time_us"]
            R.count("coll-count")
            want = row["size_B"] / 4 / (ranks if split else 1)
            if not row["size_B"] > 0 or row["count"] != want or want != int(want):
                R.violate("coll-count", n, "%d B count %s, expected %s" %
                          (row["size_B"], row["count"], want))
            R.count("coll-bw-factors")
            f = {"allreduce": 2 * (ranks - 1) / ranks}.get(
                op, (ranks - 1) / ranks if split else 1)
            alg = row["size_B"] / (t * 1e-6) / 1e9 if t > 0 else float("nan")
            if not (abs(row["algbw_GBps"] - alg) <= 1e-9 * alg and
                    abs(row["busbw_GBps"] - alg * f) <= 1e-9 * alg * f):
                R.violate("coll-bw-factors", n, "%d B %.6g us: algbw %s busbw %s, "
                          "expected %.9g and %.9g" % (row["size_B"], t, row["algbw_GBps"],
                                                      row["busbw_GBps"], alg, alg * f))
            R.count("coll-time-grows-with-size")
            if prev is not None and t < prev[1] * (1 - 1e-9):
                R.violate("coll-time-grows-with-size", n, "%d B %.3f us < %d B %.3f us" %
                          (row["size_B"], t, prev[0], prev[1]))
            prev = (row["size_B"], t)
            if ranks <= gpn:
                lim = bw * (2 * (ranks - 1) / ranks if op == "allreduce" and isr else 1)
                if op in ("broadcast", "reduce", "sendrecv"):
                    lim = bw
                R.count("busbw<=link")
                if row["busbw_GBps"] * 1e9 > lim * 1.0001:
                    R.violate("busbw<=link", n, "%d B busbw %.1f GB/s > bound %.1f GB/s (%s/%s)" %
                              (row["size_B"], row["busbw_GBps"], lim / 1e9,
                               row.get("algorithm"), row.get("protocol")))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--llmsim", default="build/llmsim")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="fewer systems and layouts (CI)")
    ap.add_argument("--only", choices=["train", "serve", "coll", "jobs"])
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if not os.access(a.llmsim, os.X_OK):
        print("prop-check: error: %s is not an executable (make first)" % a.llmsim, file=sys.stderr)
        return 2
    global QUICK
    QUICK = a.quick
    R = Runner(a.llmsim, a.jobs, a.verbose)
    params = {"_experts": {}}
    if a.only in (None, "train", "serve"):
        res = training(R, root, a.quick) if a.only != "serve" else {}
        if a.only == "serve":
            for m in model_list(root):
                argv, y = train_case(m, "dgx-h100", "bf16", 16, {"tp": 8, "sequence_parallel": True}, 256)
                rc, so, se = R._exec(argv, y)
                if rc == 0:
                    params[m] = json.loads(so)["params"] / 1e9
        else:
            for n, (rc, d, _) in res.items():
                if d and n.endswith(" dgx-h100 bf16"):
                    params[n.split()[1]] = d["params"] / 1e9
        for m in list(params):
            if m != "_experts":
                params["_experts"][m] = model_info(root, m)["experts"]
    if a.only in (None, "serve"):
        serving(R, root, a.quick, params)
        phases(R, root, a.quick, params)
    if a.only in (None, "coll"):
        collective(R, root, a.quick)
    if a.only in (None, "jobs"):
        job_presets(R, root, a.quick)
    if a.only is None and not a.quick:
        for k in sorted(set(KNOWN) - R.known):
            print("note: KNOWN %s: %s no longer fires: remove it" % k)
    if a.verbose:
        for k in sorted(R.counts):
            print("checked %-28s %d" % (k, R.counts[k]))
    print("prop-check: %d runs, %d checks, %d violations, %d known" %
          (R.runs, sum(R.counts.values()), len(R.violations), len(R.known)))
    return 1 if R.violations else 0


if __name__ == "__main__":
    sys.exit(main())
