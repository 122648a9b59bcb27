/*
 * test_utf8.c - counting and cutting UTF-8 by characters (base/utf8.c).
 * "é" is 2 bytes (C3 A9), "€" 3 (E2 82 AC), "𝄞" 4 (F0 9D 84 9E).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "base/utf8.h"

#define E2 "\xc3\xa9"
#define EURO "\xe2\x82\xac"
#define CLEF "\xf0\x9d\x84\x9e"

/* "aé€𝄞" is 1 + 2 + 3 + 4 = 10 bytes, 4 characters; "" none. A stray
 * continuation byte (A9 alone) first counts as one; after "a" it is
 * part of a's character (no decoding). */
Test(utf8, characters_are_lead_bytes)
{
	static const char s[] = "a" E2 EURO CLEF;

	cr_assert_eq(utf8_chars(s, strlen(s)), 4);
	cr_assert_eq(utf8_chars("", 0), 0);
	cr_assert_eq(utf8_chars("\xa9", 1), 1);
	cr_assert_eq(utf8_chars("a\xa9", 2), 1);
	/* len counts, not the NUL: the first 3 bytes "aé" are 2 */
	cr_assert_eq(utf8_chars(s, 3), 2);
}

/* The first n characters of "aé€𝄞": 0 -> 0 bytes, 1 -> 1, 2 -> 3
 * (1 + 2), 3 -> 6, 4 and more -> all 10; a byte cut at 2 or 4 would end
 * inside "é" or "€". Within len only: 3 characters of the first 5 bytes
 * ("aé" and 2 bytes of "€") stop at 5. */
Test(utf8, a_prefix_ends_between_characters)
{
	static const char s[] = "a" E2 EURO CLEF;
	size_t len = strlen(s);

	cr_assert_eq(utf8_prefix(s, len, 0), 0);
	cr_assert_eq(utf8_prefix(s, len, 1), 1);
	cr_assert_eq(utf8_prefix(s, len, 2), 3);
	cr_assert_eq(utf8_prefix(s, len, 3), 6);
	cr_assert_eq(utf8_prefix(s, len, 4), 10);
	cr_assert_eq(utf8_prefix(s, len, 99), 10);
	cr_assert_eq(utf8_prefix(s, 5, 3), 5);
}

/* The whole characters of "aé€𝄞" (10 bytes) within max bytes: 10 or
 * more -> all 10; 9, 8, 7, 6 -> 6 ("aé€", the clef would be cut); 5,
 * 4 -> 3 ("aé"); 2, 1 -> 1; 0 -> 0. */
Test(utf8, a_fit_keeps_whole_characters)
{
	static const char s[] = "a" E2 EURO CLEF;
	static const size_t want[11] = { 0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10 };
	size_t len = strlen(s), m;

	for (m = 0; m <= 10; m++)
		cr_assert_eq(utf8_fit(s, len, m), want[m], "max %zu", m);
	cr_assert_eq(utf8_fit(s, len, 64), 10);
}
