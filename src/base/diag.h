/*
 * diag.h - diagnostics: user errors reported with where, what, expected, got.
 *
 * A diag collects every error in an input before the caller gives up, so a
 * user sees all problems in a file at once. Messages print as
 *
 *     FILE:LINE:COL: error: MESSAGE
 *
 * (or "llmsim: error: MESSAGE" when there is no location) the moment they
 * are reported. Progress on long work goes the same way (diag_progress). Functions that find user errors report them here and return
 * -1; only main() decides to exit (status 2 for bad input).
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_BASE_DIAG_H
#define LLMSIM_BASE_DIAG_H

#include <stdio.h>

struct diag {
	FILE *out;		/* where messages go; NULL to count only */
	unsigned errors;	/* errors reported so far */
	unsigned warnings;	/* warnings reported so far */
	unsigned oom;		/* errors that were "out of memory" (exit 1,
				 * not 2: the input may be fine) */
};

/* Start with no errors, printing to out (stderr in the CLI). */
void diag_init(struct diag *d, FILE *out);

/* Report an error at file:line:col (file NULL for none; line/col 0 to
 * leave them out). */
void diag_error(struct diag *d, const char *file, int line, int col,
		const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

void diag_warn(struct diag *d, const char *file, int line, int col,
	       const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Report "out of memory" (an error, counted in both errors and oom). The
 * caller unwinds without reporting anything else; main() exits 1. */
void diag_oom(struct diag *d);

/* Progress on long work, printed as "llmsim: MESSAGE" (not an error or a
 * warning; nothing is counted). Library code says what it is doing
 * through this, never by printing: the caller chose d->out. */
void diag_progress(struct diag *d, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* A note attached to the previous error ("did you mean ...", "see ..."). */
void diag_note(struct diag *d, const char *file, int line, int col,
	       const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Programmer errors: print file:line and abort. Never for user input. */
#define BUG(msg) diag_bug(__FILE__, __LINE__, (msg))
void diag_bug(const char *file, int line, const char *msg)
	__attribute__((noreturn));

#endif
