#!/usr/bin/env python3
"""DeepEP V1 intranode dispatch: how full the fullest sender group is.

The kernel (deepseek-ai/DeepEP @ 6ad6896 csrc/kernels/intranode.cu dispatch)
gives each channel (SMs / 2) a fixed contiguous token range
(get_channel_task_range) and each destination rank its own warp group in
the channel's sender block; a GPU's call ends when the fullest group it
sends or receives (another GPU's group sending to it) is done. This draws
uniform top-8 of 64 experts (8 ranks x 8 local experts, the Hybrid-EP
page's B200 setup) for 4096 tokens on each of 8 GPUs and prints, per SM
count, the fullest group of GPU 0 over the mean group (DRAWS draws).
Pure Python, seeded; about a minute.

usage: deepep-channel-imbalance.py [SMS ...]   (default 16 24 28 32 48)
"""
import random
import sys

TOKENS, RANKS, EXPERTS, TOPK, DRAWS = 4096, 8, 64, 8, 4


def draw(channels, rng):
    per = (TOKENS + channels - 1) // channels
    local = EXPERTS // RANKS
    fullest, total, groups = 0, 0, 0
    for g in range(RANKS):
        counts = [[0] * RANKS for _ in range(channels)]
        for t in range(TOKENS):
            hit = {e // local for e in rng.sample(range(EXPERTS), TOPK)}
            for r in hit:
                counts[t // per][r] += 1
        for c in range(channels):
            for r in range(RANKS):
                if g == 0 or r == 0:
                    fullest = max(fullest, counts[c][r])
                total += counts[c][r]
                groups += 1
    return fullest / (total / groups)


def main():
    rng = random.Random(1)
    for sms in [int(a) for a in sys.argv[1:]] or [16, 24, 28, 32, 48]:
        v = [draw(sms // 2, rng) for _ in range(DRAWS)]
        print(f"{sms} SMs: fullest group / mean {sum(v) / len(v):.3f} "
              f"(draws {', '.join(f'{x:.3f}' for x in v)})")


if __name__ == "__main__":
    main()
