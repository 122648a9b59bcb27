#!/usr/bin/env python3
"""Collective timings as the lines of `llmsim measure`'s protocol
(docs/measure.md), so that `llmsim measure --import` stores them and
`llmsim calibrate` fits named parameters to them:

    scripts/coll-table-jsonl.py TABLE.yaml [--min-bytes B] [--max-bytes B] > T.jsonl
    scripts/coll-table-jsonl.py --nccl-tests OP OUT.txt [--min-bytes B] [--max-bytes B] > T.jsonl
    llmsim measure --import T.jsonl --system SYSTEM --db DB
    llmsim calibrate --db DB --run N[,N] --params gpu.KEY

TABLE.yaml: a reference collective table (results/reference/collectives/:
id, system, op, ranks, type, rows [size_B, time_us, busbw_GBps]); the
hello names the table's id as its host. OUT.txt: what one nccl-tests or
rccl-tests binary printed (OP: allreduce, allgather, reducescatter or
alltoall, which the output does not say): its "#  Rank" lines give the
ranks, their hosts the nodes, the device of rank 0 the device; a row's
time is the out-of-place column (the 8th field from the end: out-of-place
time algbw busbw #wrong, then in-place's four). One run a file; one time
a size (min = max = median); busbw and algbw from the time with nccl-tests'
factors. --min-bytes drops rows below B, --max-bytes rows above B (0:
none) (nccl-tests' size, the whole buffer). Exit 2 on input it cannot read. Needs PyYAML for tables."""
import json
import re
import sys

FACTOR = {'allreduce': lambda p: 2 * (p - 1) / p, 'allgather': lambda p: (p - 1) / p,
          'reducescatter': lambda p: (p - 1) / p, 'alltoall': lambda p: (p - 1) / p}
SIZE = {'half': 2, 'bfloat16': 2, 'float': 4, 'double': 8, 'int8': 1, 'uint8': 1,
        'int32': 4, 'uint32': 4, 'int64': 8, 'uint64': 8}
# nccl-tests' type names (src/common.cu test_typenames) -> the protocol's
NT_TYPE = {'half': 'half', 'bfloat16': 'bfloat16', 'float': 'float', 'double': 'double',
           'int8': 'int8', 'uint8': 'uint8', 'int32': 'int32', 'uint32': 'uint32',
           'int64': 'int64', 'uint64': 'uint64', 'int': 'int32'}


def fail(msg):
    sys.stderr.write(f'coll-table-jsonl.py: {msg}\n')
    sys.exit(2)


def table(path):
    import yaml
    try:
        t = yaml.safe_load(open(path))
        op, p, dt = t['op'], int(t['ranks']), t.get('type', 'half')
        rows = [(int(r[0]), float(r[1])) for r in t['rows']]
    except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, IndexError) as e:
        fail(f'{path}: not a collective table ({e})')
    if int(t.get('nodes', 1)) != 1:
        fail(f'{path}: {t.get("nodes")} nodes: one node only')
    hello = {'host': t['id'], 'device': f"{t['system']} x {p}", 'ranks': p, 'nodes': 1,
             'devices_per_node': p}
    return op, dt, hello, rows


def nccl_tests(op, path):
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        fail(f'{path}: {e}')
    hosts, device, rows, dt = [], '', [], None
    for ln in lines:
        m = re.match(r'#\s+Rank\s+\d+\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^]]*\]\s*(.*)', ln)
        if m:
            hosts.append(m.group(1))
            device = device or m.group(2).strip()
            continue
        if ln.startswith('#') or not ln.strip():
            continue
        f = ln.split()
        if len(f) < 11 or not f[0].isdigit() or not f[1].isdigit():
            continue
        try:
            size, us = int(f[0]), float(f[-8])
        except ValueError:
            fail(f'{path}: a row whose out-of-place time is not a number: {ln.strip()}')
        if f[2] not in NT_TYPE:
            fail(f'{path}: type {f[2]} unknown')
        dt = NT_TYPE[f[2]]
        if us > 0 and size > 0:
            rows.append((size, us))
    if not hosts or not rows:
        fail(f'{path}: no "#  Rank" lines or no rows: not nccl-tests output')
    p, nodes = len(hosts), len(set(hosts))
    if p % nodes:
        fail(f'{path}: {p} ranks over {nodes} hosts: not the same number a node')
    hello = {'host': hosts[0], 'device': f'{device} x {p}', 'ranks': p, 'nodes': nodes,
             'devices_per_node': p // nodes}
    return op, dt, hello, rows


def bytes_opt(args, name):
    """Take NAME B out of ARGS: B, or 0 without it."""
    if name not in args:
        return 0
    i = args.index(name)
    try:
        v = int(args[i + 1])
    except (IndexError, ValueError):
        fail(f'{name}: expected a whole number of bytes')
    del args[i:i + 2]
    return v


def main(argv):
    args = list(argv[1:])
    lo, hi = bytes_opt(args, '--min-bytes'), bytes_opt(args, '--max-bytes')
    if len(args) == 3 and args[0] == '--nccl-tests':
        op, dt, hello, rows = nccl_tests(args[1], args[2])
        src = args[2]
    elif len(args) == 1 and not args[0].startswith('-'):
        op, dt, hello, rows = table(args[0])
        src = args[0]
    else:
        fail('usage: coll-table-jsonl.py TABLE.yaml | --nccl-tests OP OUT.txt '
             '[--min-bytes B] [--max-bytes B]')
    if op not in FACTOR:
        fail(f'op {op}: allreduce, allgather, reducescatter or alltoall')
    if dt not in SIZE:
        fail(f'type {dt} unknown')
    p = hello['ranks']
    rows = [r for r in rows if r[0] >= lo and not (hi and r[0] > hi)]
    if not rows:
        fail(f'{src}: no row of {lo} B or more' + (f' and {hi} B or less' if hi else ''))
    out = [dict({'type': 'hello', 'protocol': 1, 'backend': 'cuda', 'library': 'NCCL',
                 'library_version': '', 'library_path': src, 'runtime': '', 'cpus': 1,
                 'iters': 1, 'warmup': 0}, **hello)]
    for size, us in rows:
        alg = size / us / 1e3
        out.append({'type': 'point', 'op': op, 'dtype': dt, 'bytes': size,
                    'count': size // SIZE[dt], 'ranks': p, 'iters': 1,
                    'time_us': us, 'time_min_us': us, 'time_max_us': us,
                    'algbw_GBps': alg, 'busbw_GBps': alg * FACTOR[op](p),
                    'check': 'ok', 'wrong': 0})
    out.append({'type': 'end', 'points': len(rows)})
    for o in out:
        print(json.dumps(o))


if __name__ == '__main__':
    main(sys.argv)
