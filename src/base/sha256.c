/*
 * sha256.c - SHA-256 as FIPS 180-4 specifies it (section 6.2).
 *
 * Each 64-byte block is expanded into 64 message words W[t] and mixed
 * into the eight state words with the round constants K[t] (the first 32
 * bits of the fractional parts of the cube roots of the first 64 primes);
 * the initial state is the same for the square roots of the first 8
 * primes. The message is padded with 0x80, zeros, and its length in bits
 * as a big-endian 64-bit number, to a multiple of 64 bytes.
 */
#include "sha256.h"

#include <string.h>

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static void store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

static void compress(uint32_t h[8], const unsigned char *block)
{
	uint32_t w[64], s[8], t1, t2;
	int t;

	for (t = 0; t < 16; t++)
		w[t] = load_be32(block + 4 * t);
	for (t = 16; t < 64; t++) {
		uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^
			      (w[t - 15] >> 3);
		uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^
			      (w[t - 2] >> 10);
		w[t] = w[t - 16] + s0 + w[t - 7] + s1;
	}
	memcpy(s, h, sizeof(s));
	for (t = 0; t < 64; t++) {
		t1 = s[7] + (rotr(s[4], 6) ^ rotr(s[4], 11) ^ rotr(s[4], 25)) +
		     ((s[4] & s[5]) ^ (~s[4] & s[6])) + K[t] + w[t];
		t2 = (rotr(s[0], 2) ^ rotr(s[0], 13) ^ rotr(s[0], 22)) +
		     ((s[0] & s[1]) ^ (s[0] & s[2]) ^ (s[1] & s[2]));
		memmove(s + 1, s, 7 * sizeof(s[0]));
		s[4] += t1;
		s[0] = t1 + t2;
	}
	for (t = 0; t < 8; t++)
		h[t] += s[t];
}

void sha256_init(struct sha256 *c)
{
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(c->h, h0, sizeof(h0));
	c->len_B = 0;
	c->nblock = 0;
}

void sha256_update(struct sha256 *c, const void *data, size_t n)
{
	const unsigned char *p = data;

	c->len_B += n;
	while (n > 0) {
		size_t take = 64 - c->nblock;

		if (take > n)
			take = n;
		memcpy(c->block + c->nblock, p, take);
		c->nblock += take;
		p += take;
		n -= take;
		if (c->nblock == 64) {
			compress(c->h, c->block);
			c->nblock = 0;
		}
	}
}

void sha256_final(struct sha256 *c, unsigned char digest[SHA256_DIGEST_B])
{
	uint64_t bits = c->len_B * 8;
	int i;

	c->block[c->nblock++] = 0x80;
	if (c->nblock > 56) {
		memset(c->block + c->nblock, 0, 64 - c->nblock);
		compress(c->h, c->block);
		c->nblock = 0;
	}
	memset(c->block + c->nblock, 0, 56 - c->nblock);
	for (i = 0; i < 8; i++)
		c->block[56 + i] = (unsigned char)(bits >> (56 - 8 * i));
	compress(c->h, c->block);
	for (i = 0; i < 8; i++)
		store_be32(digest + 4 * i, c->h[i]);
}

void sha256_hex(const void *data, size_t n, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char d[SHA256_DIGEST_B];
	struct sha256 c;
	int i;

	sha256_init(&c);
	sha256_update(&c, data, n);
	sha256_final(&c, d);
	for (i = 0; i < SHA256_DIGEST_B; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[64] = '\0';
}
