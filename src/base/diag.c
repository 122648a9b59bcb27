/*
 * diag.c - print and count diagnostics; print progress.
 */
#include "diag.h"

#include <stdarg.h>
#include <stdlib.h>

void diag_init(struct diag *d, FILE *out)
{
	d->out = out;
	d->errors = 0;
	d->warnings = 0;
	d->oom = 0;
}

static void emit(struct diag *d, const char *level, const char *file,
		 int line, int col, const char *fmt, va_list ap)
{
	if (!d->out)
		return;
	if (file && line > 0 && col > 0)
		fprintf(d->out, "%s:%d:%d: %s: ", file, line, col, level);
	else if (file && line > 0)
		fprintf(d->out, "%s:%d: %s: ", file, line, level);
	else if (file)
		fprintf(d->out, "%s: %s: ", file, level);
	else
		fprintf(d->out, "llmsim: %s: ", level);
	vfprintf(d->out, fmt, ap);
	fputc('\n', d->out);
}

void diag_error(struct diag *d, const char *file, int line, int col,
		const char *fmt, ...)
{
	va_list ap;

	d->errors++;
	va_start(ap, fmt);
	emit(d, "error", file, line, col, fmt, ap);
	va_end(ap);
}

void diag_oom(struct diag *d)
{
	d->oom++;
	diag_error(d, NULL, 0, 0, "out of memory");
}

void diag_warn(struct diag *d, const char *file, int line, int col,
	       const char *fmt, ...)
{
	va_list ap;

	d->warnings++;
	va_start(ap, fmt);
	emit(d, "warning", file, line, col, fmt, ap);
	va_end(ap);
}

void diag_note(struct diag *d, const char *file, int line, int col,
	       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	emit(d, "note", file, line, col, fmt, ap);
	va_end(ap);
}

void diag_progress(struct diag *d, const char *fmt, ...)
{
	va_list ap;

	if (!d->out)
		return;
	fputs("llmsim: ", d->out);
	va_start(ap, fmt);
	vfprintf(d->out, fmt, ap);
	va_end(ap);
	fputc('\n', d->out);
}

void diag_bug(const char *file, int line, const char *msg)
{
	fprintf(stderr, "llmsim: BUG at %s:%d: %s\n", file, line, msg);
	abort();
}
