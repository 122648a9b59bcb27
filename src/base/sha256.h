/*
 * sha256.h - SHA-256 (FIPS 180-4), for hashing resolved configs.
 *
 * Incremental: init, update with any number of byte runs, final. Results
 * store rows carry the hash of their resolved config (config_hash), so
 * equal configs can be found however they were written.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_BASE_SHA256_H
#define LLMSIM_BASE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_DIGEST_B 32

struct sha256 {
	uint32_t h[8];			/* chaining state */
	uint64_t len_B;			/* bytes hashed so far */
	unsigned char block[64];	/* partial block */
	size_t nblock;			/* bytes in block */
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t n);
/* The digest of everything given to update; c must be re-initialized
 * before reuse. */
void sha256_final(struct sha256 *c, unsigned char digest[SHA256_DIGEST_B]);

/* One call: the digest of data[0..n-1] as 64 lowercase hex digits and a
 * terminating NUL. */
void sha256_hex(const void *data, size_t n, char hex[65]);

#endif
