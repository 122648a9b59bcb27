#!/bin/sh
# validate-cp.sh - predicted vs measured step time of the context-parallel
# training reference cases (results/reference/cp/cases.tsv: NeMo's
# long-sequence Llama 2 7B and Llama 3 8B runs on H100 and B200 at 32K to
# 1M tokens, NeMo AutoModel Llama 3.1 70B with cp 2). Issue 9 asks CP cases
# to be as good as their dense peers, so the gates are the dense ones
# (validate-training.sh's defaults: median |error|, signed median and
# largest |error|). Same mechanics and environment as
# validate-training.sh.
here=$(cd "$(dirname "$0")" && pwd)
CASES=results/reference/cp exec sh "$here/validate-training.sh"
