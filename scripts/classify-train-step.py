#!/usr/bin/env python3
"""Account for every kernel of a measured training step, class by class,
against llmsim's prediction of the same step.

  scripts/classify-train-step.py MEASURED.json [LLMSIM_TRACE.json]

MEASURED.json is what scripts/measure-train-step-torch.py writes (every GPU
kernel of the profiled steps: name, start, duration). Each kernel gets a
class from its name and, for PyTorch's generic elementwise/copy kernels
whose name does not say what they compute, from the anchor kernel before
it in the step (the GEMM, attention or norm it follows):

  gemm            cuBLAS/cuBLASLt (nvjet_*, sm90_xmma_*, cutlass*, Cijk_*)
  attention       fused attention kernels (cuDNN sdpa, flash), their
                  pre/post passes (dot(dO, O), dQ conversion)
  norm            RMSNorm/LayerNorm forward and backward (+ dgamma pass)
  residual        the residual adds (forward) and the gradient sums of
                  the residual branches (backward)
  qkv_prep        between the QKV GEMM and attention: rotary embedding as
                  eager ops (neg, cat, mul, add), K/V head expansion
                  (repeat_interleave), layout copies; in backward the
                  same in reverse (sum over the expanded heads)
  activation      between the two MLP GEMMs: SwiGLU/GELU and its backward
  attn_out        between attention and the output projection (layout copy)
  cross_entropy   the loss: upcast, (log-)softmax, NLL, gradient, downcast
  embedding       token gather, and its backward (sort, scatter-add)
  optimizer       multi_tensor_apply (fused optimizers), grad zeroing
  memset          cudaMemset (workspace clears)
  idle            time between kernels (launch gaps, host waits)

A MoE step (MEASURED.json from scripts/measure-moe-torch.py, whose `step`
is read; a layer of norm, QKV, q/k norms, attention, output GEMM, norm,
then the routed experts) adds, for the MLP half:

  router          the router GEMM, its fp32 softmax, top-k, renormalise;
                  backward the same in reverse (with its two GEMMs)
  moe_index       the routed ids' sort (CUB radix sort), bincount (two
                  reductions read back to the host, histogram), cumsum,
                  token ids (// k): the grouped GEMM's offsets
  moe_sort        llmsim's row sort by local expert (the script has none)
  moe_permute     index_select of the T k token rows; backward its
                  index_add (zeros, then an atomic scatter-add)
  grouped_gemm    torch._grouped_mm (CUTLASS sm90 grouped kernel, and its
                  prepare_grouped_gemm_data)
  moe_act         silu(g) * u on the halves of fc1's output; backward
  moe_unpermute   the probability multiply, zeros and index_add of the
                  T k rows into T tokens; backward the gather and the
                  probability gradient

The step is the first profiled step; times are per step. With an llmsim
trace (llmsim run JOB --trace FILE) the same classes are summed over the
simulated rank 0's tasks and printed side by side. A calibration aid, not
part of the build.
"""
import json
import re
import sys
from collections import defaultdict

CLASSES = ["gemm", "attention", "norm", "residual", "qkv_prep", "attn_out",
           "activation", "router", "moe_index", "moe_sort", "moe_permute",
           "grouped_gemm", "moe_act", "moe_unpermute", "cross_entropy",
           "embedding", "optimizer", "memset", "other", "idle"]


def fixed_class(name):
    """The class a kernel's name alone decides, or None."""
    n = name
    if re.match(r"(nvjet_|sm90_xmma|sm80_xmma|ampere_|cutlass|Cijk_)", n):
        return "gemm"
    if "sdpa" in n or "flash" in n.lower() or "cudnn::fusion" in n or \
            "fmha" in n:
        return "attention"
    if "layer_norm" in n or "GammaBeta" in n or "rms_norm" in n:
        return "norm"
    if "multi_tensor_apply" in n:
        return "optimizer"
    if "SoftMax" in n or "nll_loss" in n:
        return "cross_entropy"
    if "gather_kernel" in n or "radix_sort" in n or "compute_grad_weight" \
            in n or "sum_and_scatter" in n or "partial_segment" in n or \
            "partials_per_segment" in n or "unique_by_key" in n or \
            "scan::" in n or "arange" in n:
        return "embedding"
    if n.startswith("Memset"):
        return "memset"
    return None


def classify_measured(kernels, layers):
    """[(class, dur_us)] for one step of a model of `layers` layers.

    A decoder layer runs norm, QKV GEMM, attention, output GEMM (the
    attention half), norm, two MLP GEMMs (the MLP half); the backward
    runs the halves in reverse, each GEMM as dgrad + wgrad. Norms switch
    halves, so the half and the GEMMs seen in it place a generic kernel.
    """
    out = []
    half = None		# "attn", "mlp", or "head" (final norm, logits)
    gemms = 0		# GEMMs since the half began
    anchor = "start"
    backward = False
    norms = 0		# norms seen in this pass
    for name, ts, dur, _ in kernels:
        c = fixed_class(name)
        if c in ("cross_entropy", "optimizer") and not backward:
            backward = True
            norms = 0
            half = "head"
        if c == "norm" and ("vectorized_layer_norm" in name or
                            "grad_input" in name or "rms_norm" in name):
            # one norm (forward kernel, or backward's first kernel):
            # forward 2L layer norms then the final one; backward the
            # final one first
            k = norms if not backward else 2 * layers - norms
            half = "head" if k >= 2 * layers else \
                ("attn" if k % 2 == 0 else "mlp")
            if backward:	# the norm ends the half below it
                half = "mlp" if k % 2 == 0 else "attn"
                if k == 0:
                    half = "embed"
            norms += 1
            gemms = 0
            anchor = "norm"
        elif c == "gemm":
            gemms += 1
            anchor = "gemm"
        elif c == "attention":
            anchor = "attention"
        if c is None:
            c = generic_class(half, gemms, anchor, backward)
        out.append((c, dur))
    return out


def generic_class(half, gemms, anchor, backward):
    """Class of a PyTorch elementwise/copy/reduce kernel from context."""
    if anchor == "attention":
        return "attn_out" if not backward else "qkv_prep"
    if half == "head":
        return "cross_entropy"		# upcast, fills, downcast
    if anchor == "norm":
        return "residual" if backward else "other"
    if anchor != "gemm":
        return "other"
    if not backward:
        if half is None:
            return "other"
        if half == "attn":
            return "qkv_prep" if gemms == 1 else "residual"
        if gemms == 1:
            return "activation"		# silu(g) * u
        return "residual" if gemms == 2 else "cross_entropy"
    # backward: each linear is dgrad + wgrad
    if half == "mlp" and gemms == 2:
        return "activation"		# SwiGLU backward after fc2
    if half == "attn" and gemms == 2:
        return "attn_out"
    if half is None or gemms > 2:
        return "cross_entropy"		# after the logits GEMMs
    return "other"


def is_grouped(name):
    return "GroupProblemShape" in name or "prepare_grouped_gemm" in name


class MoeLayerState:
    """Where a MoE step's kernel stream is: part ("embed", "attn", "moe",
    "head"), pass, and inside the part the last anchor seen."""

    def __init__(self, layers):
        self.layers = layers
        self.part = "embed"
        self.backward = False
        self.fnorms = 0		# forward norm kernels (4 a layer, then 1)
        self.bnorms = 0		# backward norm input-gradient kernels
        self.sub = None		# inside the MoE part: router, index, ...
        self.grouped = 0	# grouped GEMM kernels in this MoE part
        self.gemms = 0		# dense GEMMs in this part
        self.attn_seen = False

    def enter(self, part, sub=None):
        self.part, self.sub = part, sub
        self.grouped = self.gemms = 0
        self.attn_seen = False


def moe_norm(st, name):
    """A norm kernel moves the state: forward each layer runs the norm
    before attention, the q and k norms, the norm before the experts,
    then the final norm; backward the reverse (final, pre-experts, k, q,
    pre-attention)."""
    if not st.backward and "vectorized_layer_norm" in name:
        k = st.fnorms
        st.fnorms += 1
        if k >= 4 * st.layers:
            st.enter("head")
        elif k % 4 == 0:
            st.enter("attn")
        elif k % 4 == 3:
            st.enter("moe", "router")
    elif st.backward and "grad_input" in name:
        k = st.bnorms
        st.bnorms += 1
        if k == 4 * st.layers:
            st.enter("embed")
        elif k % 4 == 0:
            st.enter("moe", "unpermute")
        elif k % 4 == 1:
            st.enter("attn")


def moe_part_class(st, name, fixed):
    """Class of a kernel inside the MoE part (forward: router, index,
    permute, fc1, act, fc2, unpermute, residual; backward the reverse)."""
    if is_grouped(name):
        if "GroupProblemShape" in name:
            st.grouped += 1
        return "grouped_gemm"
    if fixed == "norm":
        return "norm"
    if not st.backward:
        if st.sub == "router" and ("fill_reverse_indices" in name or
                                   "radix_sort" in name):
            st.sub = "index"
        if "vectorized_gather_kernel" in name and st.grouped == 0:
            st.sub = "permute"
            return "moe_permute"
        if st.grouped == 1:
            return "moe_act"
        if st.grouped >= 2:
            if st.sub == "residual":
                return "residual"
            if "indexFuncLargeIndex" in name:
                st.sub = "residual"
            return "moe_unpermute"
        if st.sub == "router":
            return "router"
        return "moe_index"
    # backward: unpermute's gradient, fc2 (dgrad, wgrad), act, fc1, the
    # permute's index_add, the router, the residual's sum
    if st.grouped < 2:
        return "moe_unpermute"
    if st.grouped < 4:
        return "moe_act"
    if st.sub == "unpermute":
        st.sub = "permute"
    if st.sub == "permute":
        if "indexFuncLargeIndex" in name:
            st.sub = "router"
        return "moe_permute"
    if st.sub == "router":
        if fixed == "gemm":
            st.gemms += 1
            if st.gemms == 2:
                st.sub = "residual"
        return "router"
    return "residual"


def classify_moe(kernels, layers):
    """[(class, dur_us)] for one step of scripts/measure-moe-torch.py's
    MoE model of `layers` layers (MoeLayerState says how it walks)."""
    out = []
    st = MoeLayerState(layers)
    for name, ts, dur, _ in kernels:
        fixed = fixed_class(name)
        if fixed in ("cross_entropy", "optimizer") and not st.backward:
            st.backward = True
        if fixed == "norm":
            moe_norm(st, name)
        if fixed == "optimizer":
            st.enter("optimizer")
        if fixed == "memset":
            c = "memset"
        elif st.part == "moe":
            c = moe_part_class(st, name, fixed)
        elif st.part == "attn":
            c = attn_part_class(st, name, fixed)
        elif st.part == "head":
            c = fixed if fixed in ("gemm", "norm") else "cross_entropy"
        elif st.part == "embed":
            c = fixed if fixed in ("norm",) else \
                ("residual" if "CUDAFunctor_add" in name else "embedding")
        else:
            c = fixed or "other"
        out.append((c, dur))
    return out


def attn_part_class(st, name, fixed):
    """The attention half of a layer: forward norm, QKV GEMM, q/k norms,
    rotary and K/V expansion (qkv_prep), attention, output GEMM, the
    residual add; backward the reverse."""
    if fixed in ("gemm", "norm"):
        if fixed == "gemm":
            st.gemms += 1
        return fixed
    if fixed == "attention":
        st.attn_seen = True
        return "attention"
    if not st.backward:
        if st.attn_seen:
            return "residual" if st.gemms >= 2 else "attn_out"
        return "qkv_prep"
    if st.attn_seen:
        return "residual" if "CUDAFunctor_add" in name and st.gemms >= 4 \
            else ("qkv_prep" if st.gemms < 4 else "other")
    return "residual" if "CUDAFunctor_add" in name else "attn_out"


def first_step(kernels, steps):
    """Kernels of the first of `steps` profiled steps (equal split by
    the optimizer's last kernel)."""
    ks = sorted(kernels, key=lambda k: k[1])
    if steps <= 1:
        return ks
    ends = [i for i, k in enumerate(ks) if "multi_tensor_apply" in k[0]
            and (i + 1 == len(ks) or "multi_tensor_apply" not in ks[i + 1][0])]
    cut = ends[0] + 1 if ends else len(ks) // steps
    return ks[:cut]


LLMSIM_CLASS = [
    (r"^expert_fc\d(_dgrad|_wgrad)?$", "grouped_gemm"),
    (r"^router", "router"),
    (r"^(permute_index|permute_probs|permute_map|permute_mask|permute_sel)",
     "moe_index"),
    (r"^expert_(un)?sort", "moe_sort"),
    (r"^permute(_bwd)?$", "moe_permute"),
    (r"^unpermute", "moe_unpermute"),
    (r"^expert_act", "moe_act"),
    (r"^(qkv|proj|fc1|fc2|logits)(_dgrad|_wgrad)?$", "gemm"),
    (r"^(scores|attn_v)", "gemm"),
    (r"^attn(_bwd)?$", "attention"),
    (r"norm", "norm"),
    (r"^(add1|add2|residual)", "residual"),
    (r"^rope|^qkv_layout|^kv_expand", "qkv_prep"),
    (r"^attn_out", "attn_out"),
    (r"^act", "activation"),
    (r"cross_entropy", "cross_entropy"),
    (r"^embed", "embedding"),
    (r"optimizer", "optimizer"),
]


def llmsim_classes(path):
    with open(path) as f:
        d = json.load(f)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    tot = defaultdict(float)
    pid0 = None
    end = 0.0
    for e in ev:
        if e.get("ph") != "X":
            continue
        if pid0 is None:
            pid0 = e["pid"]
        if e["pid"] != pid0 or e.get("cat") not in ("compute", "optimizer"):
            continue
        name = re.sub(r"^recompute ", "", e["name"])
        c = "other"
        for pat, cls in LLMSIM_CLASS:
            if re.search(pat, name):
                c = cls
                break
        tot[c] += e["dur"]
        end = max(end, e["ts"] + e["dur"])
    busy = sum(tot.values())
    tot["idle"] = max(0.0, end - busy)
    return tot, end


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        m = json.load(f)
    if "step" in m and "kernels" not in m:
        m = m["step"]		# measure-moe-torch.py's file
    ks = first_step(m["kernels"], m.get("profiled_steps", 1))
    meas = defaultdict(float)
    classify = classify_moe if m.get("experts") else classify_measured
    for c, dur in classify(ks, m.get("layers", 0)):
        meas[c] += dur
    span = ks[-1][1] + ks[-1][2] - ks[0][1]
    meas["idle"] = span - sum(meas.values())
    pred, pred_span = ({}, 0.0)
    if len(sys.argv) > 2:
        pred, pred_span = llmsim_classes(sys.argv[2])
    print("%-14s %10s %10s %9s" % ("class", "measured", "llmsim", "error"))
    for c in CLASSES:
        a, b = meas.get(c, 0.0), pred.get(c, 0.0)
        if a == 0 and b == 0:
            continue
        err = "%+8.1f%%" % (100 * (b / a - 1)) if a > 0 and pred else "-"
        print("%-14s %7.2f ms %7.2f ms %9s" % (c, a / 1e3, b / 1e3, err))
    print("%-14s %7.2f ms %7.2f ms" % ("step (span)", span / 1e3,
                                      pred_span / 1e3))
    if "step_s_median" in m:
        print("measured step (median of the timed steps): %.2f ms"
              % (1e3 * m["step_s_median"]))


if __name__ == "__main__":
    main()
