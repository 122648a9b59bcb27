#!/usr/bin/env python3
"""aic-nccl-tables.py - llmsim collective tables (results/reference/
collectives/aic-ncclVER-GPU-OP-Ng.yaml, extra, not gated) from
aiconfigurator's nccl-tests collection (round 41, colldata41).

usage: aic-nccl-tables.py GPU TSV OUTDIR     (GPU: a100 b200 b300 gb200 gb300)

TSV is nccl_perf.parquet (ai-dynamo/aiconfigurator, aic-core/src/
aiconfigurator_core/systems/data/DIR/comm/nccl/VER/) written out as
tab-separated text with its header (any parquet reader; columns framework,
version, device, op_name, kernel_source, nccl_dtype, num_gpus, message_size
(elements), latency (ms)). Keeps the fp16 ('half') rows: one table per op
and GPU count, 21 sizes 512 B - 512 MiB; size_B = message_size x 2;
busbw = nccl-tests' factor x size / time. The H100 / H200 tables (round 40,
coll40) came from the same recipe."""
import sys, collections
OPS = {"all_reduce": ("allreduce", "ALLREDUCE", lambda n: 2*(n-1)/n),
       "all_gather": ("allgather", "ALLGATHER", lambda n: (n-1)/n),
       "reduce_scatter": ("reducescatter", "REDUCESCATTER", lambda n: (n-1)/n),
       "alltoall": ("alltoall", "ALLTOALL", lambda n: (n-1)/n)}
# GPU: (data folder, NCCL version, system preset, board note, source note
# (None: the 2.29.2 collection of dec5f4cd2, DEFAULT_SRC))
CFG = {
 "a100": ("a100_sxm", "2.27.3", "dgx-a100",
   "# The board: HGX/DGX A100 (NVLink 3, NVSwitch) taken from the device name;\n"
   "# the system preset (dgx-a100) is assumed [?].\n",
   "# nccl_perf.parquet (provenance: legacy in its collection_meta.yaml; first\n"
   "# added as nccl_perf.txt in e46d9089f 'feat: A100 support (#55)',\n"
   "# 2025-10-13, converted to parquet in f93be4aea; read with hyparquet +\n"
   "# hyparquet-compressors; op_name {op}, nccl_dtype half, num_gpus {n}).\n"
   "# What ran (collector/collect_NCCL.py @ e46d9089f, the same recipe as\n"
   "# today's collector/network/collect_nccl.py): one nccl-tests\n"),
 "b200": ("b200_sxm", "2.29.2", "dgx-b200",
   "# The board: HGX/DGX B200 (NVLink 5, NVLink Switch) taken from the device\n"
   "# name; the system preset (dgx-b200) is assumed [?].\n", None),
 "b300": ("b300_sxm", "2.29.2", "dgx-b300",
   "# The board: HGX/DGX B300 (device 'NVIDIA B300 SXM6 AC'; NVLink 5, NVLink\n"
   "# Switch); the system preset (dgx-b300) is assumed [?].\n", None),
 "gb200": ("gb200", "2.29.2", "gb200-nvl72",
   "# The board: GB200 (NVL72 family; one process, so the GPUs of one compute\n"
   "# tray of 4, reached through the rack's NVLink Switch trays); which rack\n"
   "# (NVL72 or NVL36x2) and whether the fabric was partitioned are not\n"
   "# stated [?]; the system preset (gb200-nvl72, ranks inside one node) is\n"
   "# assumed [?].\n", None),
 "gb300": ("gb300", "2.29.2", "gb300-nvl72",
   "# The board: GB300 (NVL72 family; one process, so the GPUs of one compute\n"
   "# tray of 4, reached through the rack's NVLink Switch trays); which rack\n"
   "# and whether the fabric was partitioned are not stated [?]; the system\n"
   "# preset (gb300-nvl72, ranks inside one node) is assumed [?].\n", None),
}
DEFAULT_SRC = ("# nccl_perf.parquet (provenance: collected; last changed at dec5f4cd2,\n"
   "# 2026-08-03; read with hyparquet + hyparquet-compressors; op_name {op},\n"
   "# nccl_dtype half, num_gpus {n}).\n"
   "# What ran (collector/network/collect_nccl.py, same commit): one nccl-tests\n")
def gen(gpu, tsv, outdir):
    d, ver, system, board, src = CFG[gpu]
    src = src or DEFAULT_SRC
    rows = collections.defaultdict(list)
    dev = None
    for i, line in enumerate(open(tsv)):
        f = line.rstrip("\n").split("\t")
        if i == 0 or f[5] != "half":
            continue
        assert f[1] == ver, (f[1], ver)
        dev = f[2]
        rows[(f[3], int(f[6]))].append((int(f[7]) * 2, float(f[8]) * 1000))
    for (op, n), rs in sorted(rows.items()):
        lop, uop, fac = OPS[op]
        rs.sort()
        assert len(rs) == 21 and len(set(s for s, _ in rs)) == 21
        G = gpu.upper()
        vtag = ver.replace(".", "")
        name = f"aic-nccl{ver}-{gpu}-{lop}-{n}g.yaml"
        hdr = (f"# nccl-tests {op}_perf, NCCL {ver}, fp16, {n} x {dev} of one node, as\n"
               f"# NVIDIA's aiconfigurator collected it: ai-dynamo/aiconfigurator@095f58a51c4c\n"
               f"# aic-core/src/aiconfigurator_core/systems/data/{d}/comm/nccl/{ver}/\n"
               + src.format(op=op, n=n) +
               f"# run per size, `{op}_perf -b S -e S -t {n} -d half -w 40 -a 1 -n 100 -c 0`\n"
               f"# (-n 60 above 16 MiB): one process, {n} threads with a GPU each, no CUDA\n"
               f"# graph; the latency is the out-of-place time column (us) of that row.\n"
               f"# size_B = message_size x 2 B (nccl-tests' size: the whole buffer); busbw =\n"
               f"# time-derived with nccl-tests' factor for the op ({'2 (n - 1) / n' if op == 'all_reduce' else '(n - 1) / n'}).\n"
               f"# One run a size: isolated spikes (a row 2x its neighbours) are kept as\n"
               f"# published. NCCL environment (NVLS, channels) not recorded: defaults [?].\n"
               + board +
               f"# Added round 41 (colldata41): held-out nccl-tests rows, shown, not gated.\n"
               f"# Confidence: medium\n"
               f"id: C-AIC-NCCL{vtag}-{G}-{n}G-{uop}\n"
               f"system: {system}\nop: {lop}\nranks: {n}\ntype: half\nplacement: out-of-place\n"
               f"gated: false\n# size_B, time_us, busbw_GBps\nrows:\n")
        body = "".join(f"  - [{s}, {t:.2f}, {fac(n) * s / t / 1000:.4g}]\n" for s, t in rs)
        open(f"{outdir}/{name}", "w").write(hdr + body)
        print(name, len(rs))
if __name__ == "__main__":
    gen(sys.argv[1], sys.argv[2], sys.argv[3])
