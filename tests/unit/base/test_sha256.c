/*
 * test_sha256.c - SHA-256 against the FIPS 180-4 example vectors (NIST
 * CSRC "Examples with intermediate values", SHA256.pdf, and
 * SHA256LongMessage) and the incremental API against one-shot hashing.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/mem.h"
#include "base/sha256.h"

static void check(const void *data, size_t n, const char *want)
{
	char hex[65];

	sha256_hex(data, n, hex);
	cr_assert_str_eq(hex, want);
}

Test(sha256, empty_message)
{
	/* SHA-256("") per FIPS 180-4 / NIST test vectors. */
	check("", 0, "e3b0c44298fc1c149afbf4c8996fb924"
		     "27ae41e4649b934ca495991b7852b855");
}

Test(sha256, abc)
{
	/* One-block message "abc" (FIPS 180-4 example, B.1). */
	check("abc", 3, "ba7816bf8f01cfea414140de5dae2223"
			"b00361a396177a9cb410ff61f20015ad");
}

Test(sha256, two_blocks)
{
	/* The 448-bit message (B.2): 56 bytes, so the length no longer fits
	 * after the 0x80 pad byte and a second block is needed. */
	const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";

	check(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039"
			    "a33ce45964ff2167f6ecedd419db06c1");
}

Test(sha256, a_million_a)
{
	/* 1,000,000 repetitions of 'a' (B.3 / NIST long message). */
	size_t n = 1000000;
	char *m = mem_alloc(n);

	cr_assert_not_null(m);
	memset(m, 'a', n);
	check(m, n, "cdc76e5c9914fb9281a1c7e284d73e67"
		    "f1809a48a497200e046d39ccc7112cd0");
	mem_free(m);
}

Test(sha256, incremental_equals_one_shot)
{
	/* Feeding the 1,000,000 'a' in runs of 1, 63, 64 and 65 bytes (the
	 * block-boundary cases) gives the same digest as B.3. */
	static const size_t runs[] = {1, 63, 64, 65};
	unsigned char d[SHA256_DIGEST_B], want[SHA256_DIGEST_B] = {
		0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7,
		0xe2, 0x84, 0xd7, 0x3e, 0x67, 0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97,
		0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0,
	};
	char chunk[65];
	size_t r, done;
	struct sha256 c;

	memset(chunk, 'a', sizeof(chunk));
	for (r = 0; r < 4; r++) {
		sha256_init(&c);
		for (done = 0; done < 1000000; done += runs[r])
			sha256_update(&c, chunk, done + runs[r] > 1000000 ?
				      1000000 - done : runs[r]);
		sha256_final(&c, d);
		cr_assert_eq(memcmp(d, want, sizeof(d)), 0, "runs of %zu",
			     runs[r]);
	}
}
