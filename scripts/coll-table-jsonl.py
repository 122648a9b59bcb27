#!/usr/bin/env python3
"""A reference collective table (results/reference/collectives/*.yaml: id,
system, op, ranks, type, rows [size_B, time_us, busbw_GBps]) as the lines of
`llmsim measure`'s protocol (docs/measure.md), so that `llmsim measure
--import` stores it and `llmsim calibrate` fits to it:

    scripts/coll-table-jsonl.py TABLE.yaml [--min-bytes B] > T.jsonl
    llmsim measure --import T.jsonl --system SYSTEM --db DB

One run per table: the hello names the table's id as its host (so a run
says which table it is) and its ranks on one node; a point per row, its
time the table's (one time a size: min = max = median); busbw and algbw
with nccl-tests' factors. --min-bytes drops rows below B (whole buffer).
Needs PyYAML."""
import json, sys
import yaml

FACTOR = {'allreduce': lambda p: 2 * (p - 1) / p, 'allgather': lambda p: (p - 1) / p,
          'reducescatter': lambda p: (p - 1) / p, 'alltoall': lambda p: (p - 1) / p}
SIZE = {'half': 2, 'bfloat16': 2, 'float': 4, 'double': 8, 'int8': 1, 'uint8': 1,
        'int32': 4, 'uint32': 4, 'int64': 8, 'uint64': 8}


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != '--min-bytes'):
        sys.exit('usage: coll-table-jsonl.py TABLE.yaml [--min-bytes B]')
    t = yaml.safe_load(open(argv[1]))
    lo = int(argv[3]) if len(argv) == 4 else 0
    op, p, dt = t['op'], int(t['ranks']), t.get('type', 'half')
    if op not in FACTOR or dt not in SIZE or int(t.get('nodes', 1)) != 1:
        sys.exit(f"{argv[1]}: op {op}, type {dt}, nodes {t.get('nodes', 1)}: "
                 "one node of allreduce/allgather/reducescatter/alltoall only")
    pts = [r for r in t['rows'] if int(r[0]) >= lo]
    out = [{'type': 'hello', 'protocol': 1, 'backend': 'cuda', 'host': t['id'],
            'device': f"{t['system']} x {p}", 'library': 'NCCL',
            'library_version': '', 'library_path': argv[1], 'runtime': '',
            'ranks': p, 'nodes': 1, 'devices_per_node': p, 'cpus': 1,
            'iters': 1, 'warmup': 0}]
    for size, us, _ in pts:
        size, us = int(size), float(us)
        alg = size / us / 1e3
        out.append({'type': 'point', 'op': op, 'dtype': dt, 'bytes': size,
                    'count': size // SIZE[dt], 'ranks': p, 'iters': 1,
                    'time_us': us, 'time_min_us': us, 'time_max_us': us,
                    'algbw_GBps': alg, 'busbw_GBps': alg * FACTOR[op](p),
                    'check': 'ok', 'wrong': 0})
    out.append({'type': 'end', 'points': len(pts)})
    for o in out:
        print(json.dumps(o))


if __name__ == '__main__':
    main(sys.argv)
