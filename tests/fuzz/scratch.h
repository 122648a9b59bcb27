/*
 * scratch.h - the config fuzz harnesses' scratch directory: the files an
 * input is written to so the loader reads it as a user's file would be.
 * One directory per process under /tmp, made on first use, emptied and
 * removed at exit. A failure here is the harness's, not the input's: it
 * says why and aborts.
 */
#ifndef LLMSIM_TESTS_FUZZ_SCRATCH_H
#define LLMSIM_TESTS_FUZZ_SCRATCH_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* The path of name (a plain file name) in the scratch directory; valid
 * until the next call. */
const char *fuzz_scratch(const char *name);

/* Write n bytes of data to path, replacing it. */
void fuzz_put(const char *path, const void *data, size_t n);

/* A harness's own check: on failure, what failed (printf-style) and
 * abort(), so libFuzzer keeps the input and replay names it. */
#define FUZZ_CHECK(c, ...)                                                  \
	do {                                                                \
		if (!(c)) {                                                 \
			fprintf(stderr, "%s: ", __FILE__);                  \
			fprintf(stderr, __VA_ARGS__);                       \
			fputc('\n', stderr);                                \
			abort();                                            \
		}                                                           \
	} while (0)

#endif
