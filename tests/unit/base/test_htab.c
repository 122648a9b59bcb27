/*
 * test_htab.c - the byte-keyed memo table (base/htab.h): exact hits,
 * keys that share a slot, keys that differ only in length, growth from
 * min_slots by doubling at half full, starting over at max_slots, and
 * allocation failure at every step leaving the table as it was.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "base/htab.h"
#include "base/mem.h"

/* A value with an odd size (not a multiple of the alignment), so the key
 * after it sits at the rounded-up stride. */
struct val {
	double x;
	char tag[3];
};

static struct val v(double x)
{
	struct val r;

	memset(&r, 0, sizeof(r));
	r.x = x;
	r.tag[0] = 'v';
	return r;
}

/* The hash is FNV-1a over 64-bit words with a fold, then the bytes left:
 *   "" -> the offset basis 14695981039346656037 (no word, no byte);
 *   "a" (0x61) -> (basis ^ 0x61) * 1099511628211 mod 2^64
 *   = 0xaf63dc4c8601ec8c, the published FNV-1a 64 of "a" (the tail loop
 *   is plain FNV-1a). */
Test(htab, hash_is_fnv1a_on_the_tail_bytes)
{
	cr_assert_eq(htab_hash("", 0), 14695981039346656037ULL);
	cr_assert_eq(htab_hash("a", 1), 0xaf63dc4c8601ec8cULL);
	cr_assert_neq(htab_hash("abcdefgh", 8), htab_hash("abcdefgi", 8));
}

Test(htab, a_hit_returns_the_bytes_put_and_a_put_replaces)
{
	struct htab *t = htab_new(sizeof(struct val), 4, 16);
	struct val a = v(1.5), b = v(-2.25);
	const struct val *got;
	uint64_t k = 42;

	cr_assert_not_null(t);
	cr_assert_eq(htab_slots(t), 0);		/* nothing before a put */
	cr_assert_null(htab_get(t, &k, sizeof(k)));
	cr_assert_not_null(htab_put(t, &k, sizeof(k), &a));
	got = htab_get(t, &k, sizeof(k));
	cr_assert_not_null(got);
	cr_assert_eq(memcmp(got, &a, sizeof(a)), 0);
	cr_assert_not_null(htab_put(t, &k, sizeof(k), &b));
	cr_assert_eq(htab_count(t), 1);		/* replaced, not added */
	got = htab_get(t, &k, sizeof(k));
	cr_assert_eq(memcmp(got, &b, sizeof(b)), 0);
	htab_free(t);
}

/* A key and its own prefix: same first bytes, different lengths, two
 * entries. The empty key is a key too. */
Test(htab, keys_differ_by_length)
{
	struct htab *t = htab_new(sizeof(struct val), 8, 8);
	struct val a = v(1), b = v(2), c = v(3);
	const char *key = "abcdefghij";

	cr_assert_not_null(htab_put(t, key, 10, &a));
	cr_assert_not_null(htab_put(t, key, 9, &b));
	cr_assert_not_null(htab_put(t, key, 0, &c));
	cr_assert_eq(htab_count(t), 3);
	cr_assert_eq(((const struct val *)htab_get(t, key, 10))->x, 1);
	cr_assert_eq(((const struct val *)htab_get(t, key, 9))->x, 2);
	cr_assert_eq(((const struct val *)htab_get(t, "", 0))->x, 3);
	cr_assert_null(htab_get(t, key, 8));
	htab_free(t);
}

/*
 * Collisions: among the keys 0, 1, 2, ... (uint64_t) take the first
 * three whose hash has the same low 3 bits as key 0's: in an 8-slot
 * table they all want key 0's slot and probe on. Each is found with its
 * own value; a fourth key of that slot never put is a miss (the probe
 * passes the three and stops at a free slot: 3 entries in 8 slots).
 */
Test(htab, keys_sharing_a_slot_are_kept_apart)
{
	struct htab *t = htab_new(sizeof(struct val), 8, 8);
	uint64_t key[4], k;
	int n = 0, i;

	for (k = 0; n < 4 && k < 100000; k++)
		if (((htab_hash(&k, sizeof(k)) ^
		      htab_hash(&key[0], sizeof(key[0]))) & 7) == 0 ||
		    n == 0)
			key[n++] = k;
	cr_assert_eq(n, 4, "found %d keys of one slot", n);
	for (i = 0; i < 3; i++) {
		struct val x = v(10 + i);

		cr_assert_not_null(htab_put(t, &key[i], sizeof(key[i]), &x));
	}
	cr_assert_eq(htab_slots(t), 8);
	for (i = 0; i < 3; i++) {
		const struct val *got = htab_get(t, &key[i], sizeof(key[i]));

		cr_assert_not_null(got);
		cr_assert_eq(got->x, 10 + i);
	}
	cr_assert_null(htab_get(t, &key[3], sizeof(key[3])));
	htab_free(t);
}

/*
 * Growth, min 4 and max 16 slots, at most half full: a put that would
 * make n + 1 entries with 2 (n + 1) > slots first doubles them.
 *   put 1: 4 slots (the first); puts 2: 2 x 2 = 4 <= 4, stays;
 *   put 3: 6 > 4 -> 8 slots; puts 4: 8 <= 8;
 *   put 5: 10 > 8 -> 16; puts 6-8: up to 16 <= 16;
 *   put 9: 18 > 16 at max_slots -> the table starts over: 1 entry, 16
 *     slots, keys 1-8 forgotten, key 9 kept.
 */
Test(htab, grows_by_doubling_then_starts_over_at_the_cap)
{
	static const size_t slots_after[] = {4, 4, 8, 8, 16, 16, 16, 16};
	struct htab *t = htab_new(sizeof(struct val), 4, 16);
	uint32_t k;

	for (k = 1; k <= 8; k++) {
		struct val x = v(k);

		cr_assert_not_null(htab_put(t, &k, sizeof(k), &x));
		cr_assert_eq(htab_slots(t), slots_after[k - 1],
			     "after put %u: %zu slots", k, htab_slots(t));
		cr_assert_eq(htab_count(t), k);
	}
	for (k = 1; k <= 8; k++) {	/* every one survived the rehashes */
		const struct val *got = htab_get(t, &k, sizeof(k));

		cr_assert_not_null(got);
		cr_assert_eq(got->x, k);
	}
	k = 9;
	{
		struct val x = v(9);

		cr_assert_not_null(htab_put(t, &k, sizeof(k), &x));
	}
	cr_assert_eq(htab_count(t), 1);
	cr_assert_eq(htab_slots(t), 16);
	cr_assert_not_null(htab_get(t, &k, sizeof(k)));
	for (k = 1; k <= 8; k++)
		cr_assert_null(htab_get(t, &k, sizeof(k)));
	htab_clear(t);
	cr_assert_eq(htab_count(t), 0);
	htab_free(t);
}

/*
 * Out of memory at each allocation of a put: the table is as it was.
 * With 2 entries in 4 slots a third put allocates its entry, then the
 * 8 new slots: fail the first (n = 0) or the second (n = 1) and the put
 * returns NULL, 2 entries stay in 4 slots, both still found, the third
 * absent (the entry block allocated before the slots failed is freed
 * there); with n = 2 it succeeds.
 */
Test(htab, out_of_memory_leaves_the_table_as_it_was)
{
	long n;

	for (n = 0; n <= 2; n++) {
		struct htab *t = htab_new(sizeof(struct val), 4, 16);
		struct val x = v(0);
		uint32_t k;
		void *r;

		for (k = 0; k < 2; k++)
			cr_assert_not_null(htab_put(t, &k, sizeof(k), &x));
		mem_fail_after(n);
		k = 2;
		r = htab_put(t, &k, sizeof(k), &x);
		mem_fail_after(-1);
		if (n < 2) {
			cr_assert_null(r, "fail after %ld: put succeeded", n);
			cr_assert_eq(htab_count(t), 2);
			cr_assert_eq(htab_slots(t), 4);
			cr_assert_null(htab_get(t, &k, sizeof(k)));
		} else {
			cr_assert_not_null(r);
			cr_assert_eq(htab_count(t), 3);
			cr_assert_eq(htab_slots(t), 8);
		}
		for (k = 0; k < 2; k++)
			cr_assert_not_null(htab_get(t, &k, sizeof(k)));
		htab_free(t);
	}
}

/* htab_next visits every stored value once: 100 keys 0..99 of value
 * x = key, summed over the walk = 0 + 1 + ... + 99 = 4950, 100 visits;
 * an empty table (no slots yet) gives none. */
Test(htab, next_visits_every_value_once)
{
	struct htab *m = htab_new(sizeof(struct val), 2, 1024);
	struct val x, *got;
	size_t i = 0, seen = 0;
	double sum = 0;
	int k;

	cr_assert_not_null(m);
	cr_assert_null(htab_next(m, &i));
	for (k = 0; k < 100; k++) {
		x = v(k);
		cr_assert_not_null(htab_put(m, &k, sizeof(k), &x));
	}
	i = 0;
	while ((got = htab_next(m, &i))) {
		sum += got->x;
		seen++;
	}
	cr_assert_eq(seen, 100);
	cr_assert_float_eq(sum, 4950, 1e-12);
	htab_free(m);
}
