#!/usr/bin/env python3
"""Score the engine's launch order (exec.h) on the H200 launch-order data.

results/reference/device/h200-launch-order-2026-12-04.jsonl: a chain of bf16
GEMMs issued first, then a copy holding k SMs launched a fraction into a
running GEMM (scripts/measure-overlap.cu LLMSIM_OVERLAP_ORDER=1). For each
point this replays the chain with its measured alone GEMM times and the copy's
measured length D (first block start to last block end), two ways:

  old   (ovl24): the copy starts at its launch; every GEMM running beside it,
        the one already running included, runs at 1/f (the owned-tiles law)
  new   (ovl25): the copy waits for the running GEMM's end (launch order);
        the GEMMs that start beside it run at 1/f

f = 1/(1-S) + h max(0, 2 - 1/(1-S)), S = k/132, h = min(2, n)/n, n tiles a CTA
(h200-gemm-kernels-grids-2026-12-04.json). Prints the copy's start (measured,
old, new), the chain's end (measured, old, new) and the errors.
Usage: check-launch-order.py [jsonl]
"""
import json
import statistics
import sys

U = 132
TILES = {(8192, 8192, 8192): 12.6, (16384, 8192, 8192): 28.0,
         (4096, 1536, 2048): 2.0}


def law(k, n, c=2.0):
    f = 1 / (1 - k / U)
    return f + min(c, n) / n * max(0.0, 2 - f)


def replay(alone, c0, dur, f, first):
    """Chain end: GEMM j of alone time alone[j] back to back from 0; a copy
    on [c0, c0 + dur) slows the GEMMs (from index `first` on) that run
    beside it to rate 1/f."""
    t, c1 = 0.0, c0 + dur
    for j, w in enumerate(alone):
        left = w
        if j >= first:
            if t < c0:          # alone until the copy starts
                run = min(left, c0 - t)
                t, left = t + run, left - run
            if left > 0 and c0 <= t < c1:
                run = min(left * f, c1 - t)
                t, left = t + run, left - run / f
        t += left
    return t


def main(path):
    errs = {"old": [], "new": []}
    runs = []
    print("shape k frac | copy start: meas old new (us) | chain end: meas "
          "old new (us) | err old new")
    for line in open(path):
        d = json.loads(line)
        if d.get("type") != "order":
            continue
        a, b = d["alone_stamps_us"], d["beside_stamps_us"]
        alone = [a[j + 1] - a[j] for j in range(len(a) - 1)]
        cs, ce = min(d["copy_block_start_us"]), max(d["copy_block_end_us"])
        k, hl = d["copy_blocks"], d["host_launch_us"]
        f = law(k, TILES[(d["m"], d["n"], d["k"])])
        run = max(j for j in range(len(b) - 1) if b[j] <= hl)
        # the launch instant on the alone chain's clock (same GEMM, same
        # fraction into it)
        t_launch = a[run] + (hl - b[run]) / (b[run + 1] - b[run]) * alone[run]
        old = replay(alone, t_launch, ce - cs, f, 0)
        new_start = a[run + 1]
        new = replay(alone, new_start, ce - cs, f, run + 1)
        meas = b[-1]
        eo, en = old / meas - 1, new / meas - 1
        # the GEMM running at the launch: measured ratio, old law's
        fr = (hl - b[run]) / (b[run + 1] - b[run])
        rr = (b[run + 1] - b[run]) / alone[run]
        ro = fr + (1 - fr) * f
        beside = [(b[j + 1] - b[j]) / alone[j] for j in range(len(alone))
                  if b[j] >= cs - 1 and b[j + 1] <= ce + 1]
        runs.append((rr, ro, cs - hl, b[run + 1] - cs,
                     statistics.mean(beside) / f - 1 if beside else None))
        errs["old"].append(eo)
        errs["new"].append(en)
        print("%dx%dx%d k %d %.1f | %.0f %.0f %.0f | %.0f %.0f %.0f | "
              "%+.1f%% %+.1f%%" % (d["m"], d["n"], d["k"], k, d["frac"], cs,
                                   t_launch, new_start, meas, old, new,
                                   100 * eo, 100 * en))
    print("running GEMM: measured / old-law time over alone; copy start "
          "after launch (old: 0) and before the running GEMM's end (new: "
          "0), us; GEMMs wholly beside the copy: mean / law - 1")
    for rr, ro, lag, tail, bes in runs:
        print("  %.2f / %.2f   %6.0f %5.0f   %s" %
              (rr, ro, lag, tail, "-" if bes is None else "%+.1f%%" %
               (100 * bes)))
    bes = [x[4] for x in runs if x[4] is not None]
    print("beside: %d points, median %+.1f%%, max |%.1f|%%" %
          (len(bes), 100 * statistics.median(bes),
           100 * max(abs(x) for x in bes)))
    for w in ("old", "new"):
        e = errs[w]
        print("%s: %d points, chain end error median %+.1f%%, max |%.1f|%%" %
              (w, len(e), 100 * statistics.median(e),
               100 * max(abs(x) for x in e)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else
         "results/reference/device/h200-launch-order-2026-12-04.jsonl")
