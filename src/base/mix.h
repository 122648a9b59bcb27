/*
 * mix.h - the finalizer of a 64-bit hash: murmur3's fmix64, which makes
 * every output bit depend on every input bit, so the low bits that pick
 * a hash-table slot are as good as the high ones.
 */
#ifndef LLMSIM_BASE_MIX_H
#define LLMSIM_BASE_MIX_H

#include <stdint.h>

static inline uint64_t mix_fmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

#endif
