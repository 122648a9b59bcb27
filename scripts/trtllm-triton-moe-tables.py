#!/usr/bin/env python3
"""llmsim's TritonFusedMoE module (TensorRT-LLM, gpt-oss MXFP4 experts on Hopper) against
aiconfigurator's TensorRT-LLM 1.2.0rc5 module tables, at the tables' clock.

usage: python3 scripts/trtllm-triton-moe-tables.py [LLMSIM] [EP_TSV]
  LLMSIM  default build/llmsim
  EP_TSV  default results/reference/kernels/aic-hopper-trtllm-1.2.0rc5-moe-triton-mxfp4-ep.tsv
          (gpu, moe_ep, tokens, latency_ms; its ep 1 rows are aic-h100-trtllm-1.2.0rc5-moe-triton-mxfp4.tsv's)
Set ENGINE_EXTRA to append engine keys (", key: value, ...") for a what-if.

Each row runs a decode step of gpt-oss-120b (E 128) at tp = ep = moe_ep with `tokens` sequences (128 cached),
CUDA graphs, the DG jobs' Triton engine line (mxfp4_moe_kernel triton_trtllm, tiles 16-128 x 128, pick
cover), at system.gpu.sustained_matrix_clock 1776 MHz (the collector's burst clock, configs/gpus/h100.yaml
fitted_clock), and sums the module's ops (router GEMM, top-k, align, both grouped GEMMs, act, sum) over the
layers / layers. Prints llmsim / measured per row and by GPU and ep (16-4096 tokens; >= 6144 tokens, where
weight_only_moe_efficiency triton_trtllm was solved at ep 1): median and rms of the log ratio.
(round 52, trt52; results/reference/inference/README.md "Round 52 (trt52)")
"""
import json, math, os, statistics, subprocess, sys, tempfile

L = sys.argv[1] if len(sys.argv) > 1 else 'build/llmsim'
TAB = sys.argv[2] if len(sys.argv) > 2 else \
    'results/reference/kernels/aic-hopper-trtllm-1.2.0rc5-moe-triton-mxfp4-ep.tsv'
EXTRA = os.environ.get('ENGINE_EXTRA', '')
MODULE = {'router', 'router_topk', 'moe_align', 'expert_gate_up', 'expert_act', 'expert_down', 'moe_sum'}
JOB = """name: triton-moe-table
model: gpt-oss-120b
system: {{preset: dgx-{gpu}, gpus_per_node: {ep}}}
phase: decode
parallelism: {{tp: {ep}, ep: {ep}}}
serving:
  engine: {{preset: trtllm, cuda_graph_max: 65536, moe_kernels: generic, mxfp4_moe_kernel: triton_trtllm, weight_only_moe_tile_m: [16, 32, 64, 128], weight_only_moe_tile_n: 128, weight_only_moe_tile_pick: cover{extra}}}
  dtype: mxfp4
  kv_dtype: bf16
  batch: {tokens}
  context_len: 128
"""


def module_ms(tmp, gpu, ep, tokens):
    job, trace = os.path.join(tmp, 'job.yaml'), os.path.join(tmp, 'trace.json')
    with open(job, 'w') as f:
        f.write(JOB.format(gpu=gpu, ep=ep, tokens=tokens, extra=EXTRA))
    subprocess.run([L, 'run', job, '--no-store', '--set', 'system.gpu.sustained_matrix_clock=1776 MHz',
                    '--trace', trace], check=True, stdout=subprocess.DEVNULL)
    with open(trace) as f:
        d = json.load(f)
    tot, layers = 0.0, 0
    for e in d['traceEvents'] if isinstance(d, dict) else d:
        if e.get('ph') != 'X' or e.get('pid') != 0 or e.get('tid') != 0:
            continue
        name = e['name'].split('[')[0].split(' ')[0]
        tot += e['dur'] if name in MODULE else 0
        layers += name == 'expert_down'
    return tot / layers / 1e3


def main():
    rows, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        for line in open(TAB):
            if line.startswith('#') or not line.strip():
                continue
            f = line.split()
            gpu, ep, tokens, lat = f[0], int(f[1]), int(f[2]), float(f[3])
            if (gpu, ep, tokens) in seen:
                continue
            seen.add((gpu, ep, tokens))
            ms = module_ms(tmp, gpu, ep, tokens)
            rows.append((gpu, ep, tokens, lat, ms))
            print(f'{gpu} ep {ep} tokens {tokens:6d} measured {lat:8.4f} ms llmsim {ms:8.4f} ms '
                  f'ratio {ms / lat:.3f}', flush=True)

    def stat(label, sel):
        v = [r[4] / r[3] for r in rows if sel(r)]
        if v:
            rms = math.sqrt(sum(math.log(x) ** 2 for x in v) / len(v))
            print(f'{label}: n {len(v)} median {statistics.median(v):.3f} rms log {rms:.3f}')
    for gpu in sorted({r[0] for r in rows}):
        for ep in sorted({r[1] for r in rows}):
            stat(f'{gpu} ep {ep} 16-4096', lambda r: r[:2] == (gpu, ep) and 16 <= r[2] <= 4096)
            stat(f'{gpu} ep {ep} >=6144', lambda r: r[:2] == (gpu, ep) and r[2] >= 6144)
    stat('all >= 16 tokens', lambda r: r[2] >= 16)


if __name__ == '__main__':
    main()
