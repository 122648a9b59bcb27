/*
 * utf8.c - see utf8.h.
 */
#include "utf8.h"

/* A continuation byte (10xxxxxx): not where a character starts. */
static int cont(char c)
{
	return ((unsigned char)c & 0xC0) == 0x80;
}

size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0, i;

	for (i = 0; i < len; i++)
		n += i == 0 || !cont(s[i]);
	return n;
}

size_t utf8_prefix(const char *s, size_t len, size_t n)
{
	size_t i = 0, k;

	for (k = 0; k < n && i < len; k++)
		for (i++; i < len && cont(s[i]); i++)
			;
	return i;
}

size_t utf8_fit(const char *s, size_t len, size_t max)
{
	size_t i;

	if (len <= max)
		return len;
	/* back from max to the start of the character it would cut */
	for (i = max; i > 0 && cont(s[i]); i--)
		;
	return i;
}
