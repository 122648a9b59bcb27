#!/bin/sh
# DeepEP's intranode kernels at more ranks than the public launcher builds:
# ptxas's register and spill report per (kernel, ranks, threads a block).
#
# Why: the GB200 DeepEP table of the Hybrid-EP page (DeepEP @ 6ad6896
# docs/README_Hybrid-EP.md; results/reference/ep/extra-cases.tsv
# DEEPEP-V1-GB200-*) has the combine at 24 ranks at a third to a half of its
# 16-rank rate (126 / 164 / 207 GB/s at 16 / 24 / 32 SMs vs 278 / 378 / 443)
# while the dispatch at 24 ranks keeps the 16-rank rate (325 / 450 / 503 vs
# 329 / 442 / 521). The 24-rank build is NVIDIA's modified intranode kernel
# (DeepEP issue #579: "We modified DeepEP so that its intranode communication
# can support NVL72", "Currently not public"); the public kernels' structure
# requires the rank count to divide the block's warps (768 threads: 24 and
# 12 ranks; 16 and 32 need 512 threads: DeepEP commit 180016d, 2026-01-15,
# "mnnvl: normal mode supports mnnvl"). This script instantiates the public
# kernels (csrc/kernels/intranode.cu at 6ad6896, the page's commit) at those
# shapes and prints what ptxas reports: with __launch_bounds__(768, 1) a
# thread gets at most 80 registers, and the combine receiver keeps one int4
# a source rank (recv_value_int4[kNumRanks], 4 x kNumRanks registers) live
# across its reduction.
#
# Result (CUDA 13.0, sm_100a; round 49): combine 2 / 4 / 8 ranks at 768
# threads: 80 registers, 80-84 B spill stores; 24 ranks at 768: 80
# registers, 396 B spill stores / 476 B spill loads, 1248 B stack; 16 ranks
# at 512: 128 registers, no spill. Dispatch at 12 / 24 ranks (768) and 16
# (512): no spill (8 ranks: 64 B). The second pass sizes the receiver's
# recv_value_int4 by the top-k (8: a token has at most 8 source ranks)
# instead of kNumRanks: the 24-rank combine's spill goes to 0 B, so it is
# that array, read once per source row and 16 B of hidden in the
# reduction loop. A spill in the combine's reduction at 24 ranks and none
# in the dispatch matches the table's pattern; how much time it costs is
# not derivable from ptxas (not modelled; the rows stay a known miss).
#
# usage: scripts/deepep-intranode-spills.sh DEEPEP_GIT_DIR [ARCH]
#   DEEPEP_GIT_DIR: a git clone of deepseek-ai/DeepEP holding 6ad6896
#   ARCH: nvcc -arch (default sm_100a, GB200)
set -eu
repo=${1:?usage: $0 DEEPEP_GIT_DIR [ARCH]}
arch=${2:-sm_100a}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git -C "$repo" archive 6ad6896 csrc/kernels | tar -x -C "$tmp"
cat > "$tmp/inst.cu" <<'EOF'
#include "csrc/kernels/intranode.cu"
namespace deep_ep { namespace intranode {
#define COMB(R, T) template __global__ void combine<nv_bfloat16, R, T, 4096>( \
	nv_bfloat16 *, float *, const nv_bfloat16 *, const float *, \
	const nv_bfloat16 *, const nv_bfloat16 *, const int *, const int *, \
	const int *, int *, int, int, int, int, void **, int, int, int);
#define DISP(R, T) template __global__ void dispatch<R, T, 8192>(int4 *, \
	float *, int *, int64_t *, float *, int *, int *, const int4 *, \
	const float *, const int64_t *, const float *, const bool *, \
	const int *, int, int, int, int, int, int, int, int, void **, int, \
	int, int);
COMB(16, 512)
COMB(24, 768)
DISP(12, 768)
DISP(16, 512)
DISP(24, 768)
}}
EOF
# DISABLE_NVSHMEM: the intranode kernels need no NVSHMEM headers.
report() {
nvcc -std=c++17 --expt-relaxed-constexpr -DDISABLE_NVSHMEM -arch="$arch" \
	-I "$tmp/csrc/kernels" -c "$tmp/inst.cu" -o "$tmp/inst.o" \
	-Xptxas -v 2>&1 |
	awk '/Compiling entry/ { n = $0; sub(/.*intranode[0-9]*/, "", n);
			       sub(/EEEv.*/, "", n) }
	     /spill/ { s = $0; sub(/^ */, "", s) }
	     /Used/ && n ~ /^(combine|dispatch)/ { print n ": " $5 " registers, " s }'
}
echo "public kernels:"
report
echo "combine's recv_value_int4 sized by the top-k (8), not kNumRanks:"
sed -i 's/int4 recv_value_int4\[kNumRanks\]/int4 recv_value_int4[8]/' \
	"$tmp/csrc/kernels/intranode.cu"
report | grep '^combine'
