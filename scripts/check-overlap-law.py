#!/usr/bin/env python3
"""check-overlap-law.py - the persistent-GEMM law (src/gpu/gpu_gemm.c,
gemm_persistent_owned_tiles) against the H200 GEMM chains beside a kernel
holding k SMs (results/reference/device/h200-overlap*-2026-12-04.jsonl),
tiles a CTA from the kernels' tile names and grids
(h200-gemm-kernels-grids-2026-12-04.json). B: llmsim's law, A: the
min(2, 1/(1-S) + c/n) candidate, share: 1/(1-S). Run from the repo root;
prints signed and absolute errors (%) of t_beside / t_alone per set."""
import json, re, math, statistics
grids = json.load(open('results/reference/device/h200-gemm-kernels-grids-2026-12-04.json'))
tile = {}
for g in grids:
    t = re.search(r'_(\d+)x(\d+)_', g['name'])
    tile[(g['m'], g['n'], g['k'])] = (int(t.group(1)), int(t.group(2)), g['grid'][0]*g['grid'][1])
U = 132.0
def B(S, n, c=2):
    if n < 1: return 1/(1-S)
    f = 1/(1-S); return f + min(c, n)/n*max(0, 2-f)
def A(S, n, c=2): return min(2, 1/(1-S) + c/n)
rows = []
for fn in ['results/reference/device/h200-overlap-2026-12-04.jsonl', 'results/reference/device/h200-overlap-heldout-2026-12-04.jsonl']:
    for l in open(fn):
        r = json.loads(l)
        if r.get('type') != 'point': continue
        key = (r['m'], r['n'], r['k'])
        if key not in tile: print('no tile', key); continue
        bm, bn, grid = tile[key]
        # C[M,N]: tile along m x n; which dimension is bm? try both orientations, take the one matching README n
        n1 = math.ceil(r['m']/bm)*math.ceil(r['n']/bn)/grid
        meas = r['gemm_beside_s']/r['gemm_alone_s']
        rows.append((fn.endswith('heldout-2026-12-04.jsonl'), key, r['copy_blocks'], n1, meas))
for held in (False, True):
    for kmax in (24, 66):
        for name, law in (('B', B), ('A', A), ('share', lambda S, n: 1/(1-S))):
            e = [(law(k/U, n)-m)/m*100 for h, key, k, n, m in rows if h == held and k <= kmax]
            print('heldout' if held else 'dev', 'k<=%d' % kmax, name, 'n=%d median %+.1f%% |med| %.1f%% max|e| %.1f%%' % (len(e), statistics.median(e), statistics.median([abs(x) for x in e]), max(abs(x) for x in e)))
for h, key, k, n, m in rows:
    if h and k <= 24 and abs(B(k/U, n)-m)/m > 0.08: print('worst (> 8 %)', key, k, round(n, 2), round(m, 3), round(B(k/U, n), 3))
