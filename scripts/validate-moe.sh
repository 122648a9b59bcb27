#!/bin/sh
# validate-moe.sh - predicted vs measured step time of the MoE training
# reference cases (results/reference/moe/cases.tsv: Megatron-Bridge,
# NeMo AutoModel and AMD Primus runs of DeepSeek-V3, Qwen3, gpt-oss and
# Mixtral on H100, B200, GB200 and MI325X). Gates of issue 9: median
# |error| <= 12 %, none beyond 25 % (no gate on the signed median). Same mechanics and environment as
# validate-training.sh.
here=$(cd "$(dirname "$0")" && pwd)
CASES=results/reference/moe MEDIAN_MAX=${MEDIAN_MAX:-0.12} \
	BIAS_MAX=${BIAS_MAX:-1} CASE_MAX=${CASE_MAX:-0.25} \
	exec sh "$here/validate-training.sh"
