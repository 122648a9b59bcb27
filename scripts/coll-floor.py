#!/usr/bin/env python3
"""coll-floor.py - the small-size floor of NCCL's ring LL collectives inside
one node, per GPU generation, as the held-out nccl-tests tables read it
(results/reference/collectives/aic-ncclVER-GPU-OP-Ng.yaml; round 42, floor42).

usage: coll-floor.py [REFDIR]        (default results/reference/collectives)

For each all-gather / reduce-scatter / all-reduce table: its small-size time t
(the middle two of the 512 B - 4 KiB rows, averaged: one-off spikes drop out)
and the ring's step count n (p - 1 for all-gather and reduce-scatter, 2 (p - 1)
for all-reduce: NCCL's ring LL at these sizes). Per GPU: the least-squares line
t = base + n x step over its tables, separately for AG/RS and AR (the two agree
when the floor is one fixed cost plus one cost a ring step), and NCCL's tuner
line (nccl.yaml ring LL: base 6.6 + 0.6 us a step, every generation) for
comparison. A description of held-out data: reading it is allowed, tuning a
constant on it is not (docs: results/reference/collectives/README.md,
"Round 42 (floor42)")."""
import glob, os, re, sys

STEPS = {"allgather": lambda p: p - 1, "reducescatter": lambda p: p - 1,
         "allreduce": lambda p: 2 * (p - 1)}
TUNER = (6.6, 0.6)          # configs/collectives/nccl.yaml ring base / hop, LL


def small_time(path):
    rows = {}
    for line in open(path):
        m = re.match(r"\s*-\s*\[(\d+),\s*([\d.]+)", line)
        if m:
            rows[int(m.group(1))] = float(m.group(2))
    ts = sorted(rows[s] for s in (512, 1024, 2048, 4096) if s in rows)
    if len(ts) < 4:
        return None
    return (ts[1] + ts[2]) / 2


def fit(pts):
    k = len(pts)
    sx = sum(n for n, _ in pts)
    sy = sum(t for _, t in pts)
    sxx = sum(n * n for n, _ in pts)
    sxy = sum(n * t for n, t in pts)
    den = k * sxx - sx * sx
    if k < 2 or den == 0:
        return None
    b = (k * sxy - sx * sy) / den
    return (sy - b * sx) / k, b


def main():
    ref = sys.argv[1] if len(sys.argv) > 1 else "results/reference/collectives"
    pat = re.compile(r"aic-nccl([\d.]+)-(\w+?)-(allgather|reducescatter|"
                     r"allreduce)-(\d+)g\.yaml$")
    gpus = {}
    print("%-34s %3s %7s %7s" % ("table", "n", "t_us", "tuner"))
    for path in sorted(glob.glob(os.path.join(ref, "aic-nccl*.yaml"))):
        m = pat.search(os.path.basename(path))
        if not m:
            continue
        ver, gpu, op, p = m.group(1), m.group(2), m.group(3), int(m.group(4))
        t = small_time(path)
        if t is None:
            continue
        n = STEPS[op](p)
        gpus.setdefault((gpu, ver), []).append((op, n, t))
        print("%-34s %3d %7.2f %7.2f" % (os.path.basename(path)[4:-5], n, t,
                                        TUNER[0] + n * TUNER[1]))
    print("\n%-6s %-7s %-5s %5s %6s %6s" % ("gpu", "nccl", "ops", "base",
                                             "step", "maxres"))
    for (gpu, ver), rows in sorted(gpus.items()):
        for name, keep in (("all", lambda o: True),
                           ("ag/rs", lambda o: o != "allreduce"),
                           ("ar", lambda o: o == "allreduce")):
            pts = [(n, t) for o, n, t in rows if keep(o)]
            f = fit(pts)
            if not f:
                continue
            res = max(abs(t - f[0] - f[1] * n) for n, t in pts)
            print("%-6s %-7s %-5s %5.2f %6.3f %6.2f" % (gpu, ver, name, f[0],
                                                      f[1], res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
