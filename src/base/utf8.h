/*
 * utf8.h - counting and cutting UTF-8 text by characters, so a label or
 * a table cell shortened to fit ends between characters: a cut by bytes
 * could end inside one (the rest of its bytes gone), which left the
 * sweep table and a report's SVG labels not UTF-8.
 *
 * A character is a lead byte and the continuation bytes (10xxxxxx) after
 * it; a stray continuation byte at the start counts as one. No decoding,
 * no validation (the config loader checks its text is UTF-8).
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_BASE_UTF8_H
#define LLMSIM_BASE_UTF8_H

#include <stddef.h>

/* The characters of s[0..len). */
size_t utf8_chars(const char *s, size_t len);

/* The bytes of the first n characters of s[0..len) (len when it has at
 * most n): where a cut to n characters ends. */
size_t utf8_prefix(const char *s, size_t len, size_t n);

/* The bytes of the longest prefix of whole characters of s[0..len) that
 * fits in max bytes (len when all of it does): where a cut to a buffer
 * of max + 1 bytes (its NUL) ends. */
size_t utf8_fit(const char *s, size_t len, size_t max);

#endif
