/*
 * fuzz_measure.c - libFuzzer harness for `llmsim measure --import`'s
 * readers (make fuzz FUZZ_TARGETS=measure).
 *
 * The first byte picks what the rest is:
 *   even  the backends' JSON lines (docs/measure.md), read as a stream of
 *         runs (measure_stream_line), as a backend's stdout or an
 *         imported .jsonl file is
 *   odd   nccl-tests / rccl-tests text, converted (measure_nccl_text, the
 *         op from the file or, for byte 3, --op allreduce) and the
 *         converted lines read as above, messages citing the file's lines
 *
 * Beyond "no crash, no leak, no undefined behaviour": every point a run
 * keeps is one the store can take (op, dtype and a known check; size and
 * count finite and >= 0; 0 < fastest <= median <= slowest, finite; ranks
 * and iters >= 1), a run's --json points are as many as its points, the
 * totals add up, a converted stream's lines cite lines of the file, and
 * from UTF-8 input every text a run keeps is UTF-8.
 * The printers (table, CSV) and the error text run over every run.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/mem.h"
#include "cli/measure.h"
#include "scratch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_run(const struct measure_log *m, FILE *sink)
{
	char err[512];
	uint32_t i;

	FUZZ_CHECK(m->npts <= MEASURE_MAX_POINTS && m->npts <= m->cap,
		   "%u points, room for %u", m->npts, m->cap);
	FUZZ_CHECK(m->points &&
		   cJSON_GetArraySize(m->points) == (int)m->npts,
		   "%d --json points for %u points",
		   m->points ? cJSON_GetArraySize(m->points) : -1, m->npts);
	for (i = 0; i < m->npts; i++) {
		const struct store_meas_row *r = &m->pts[i];

		FUZZ_CHECK(r->op && r->op[0] && r->type && r->type[0] &&
			   r->check, "point %u: no op / dtype / check", i);
		FUZZ_CHECK(!strcmp(r->check, "ok") ||
			   !strcmp(r->check, "wrong") ||
			   !strcmp(r->check, "skipped"),
			   "point %u: check '%s'", i, r->check);
		FUZZ_CHECK(isfinite(r->size_B) && r->size_B >= 0 &&
			   isfinite(r->count) && r->count >= 0,
			   "point %u: size %g, count %g", i, r->size_B,
			   r->count);
		FUZZ_CHECK(r->time_min_s > 0 && r->time_min_s <= r->time_s &&
			   r->time_s <= r->time_max_s &&
			   isfinite(r->time_max_s),
			   "point %u: times %g <= %g <= %g", i, r->time_min_s,
			   r->time_s, r->time_max_s);
		FUZZ_CHECK(r->ranks >= 1 && r->iters >= 1,
			   "point %u: ranks %u, iters %d", i, r->ranks,
			   r->iters);
		FUZZ_CHECK(r->root >= -1 && (r->root < 0 ||
			   (uint32_t)r->root < r->ranks),
			   "point %u: root %d of %u ranks", i, r->root,
			   r->ranks);
	}
	if (m->have_hello && m->npts) {
		measure_print_header(sink, m, NULL);
		for (i = 0; i < m->npts; i++)
			measure_print_point(sink, &m->pts[i]);
		measure_print_footer(sink, m);
	}
	measure_print_csv(sink, m, 1);
	measure_run_error(m, err, sizeof(err));
	(void)measure_run_incomplete(m);
}

/* Whether s[0..n) is UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, at most U+10FFFF). */
static int utf8_ok(const unsigned char *s, size_t n)
{
	size_t i = 0, k, len;
	unsigned long c;

	while (i < n) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		len = s[i] >= 0xF0 ? 4 : s[i] >= 0xE0 ? 3 :
		      s[i] >= 0xC0 ? 2 : 0;
		if (!len || s[i] > 0xF4 || i + len > n)
			return 0;
		c = s[i] & (0x7F >> len);
		for (k = 1; k < len; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return 0;
			c = c << 6 | (s[i + k] & 0x3F);
		}
		if ((len == 2 && c < 0x80) || (len == 3 && c < 0x800) ||
		    (len == 4 && c < 0x10000) || c > 0x10FFFF ||
		    (c >= 0xD800 && c <= 0xDFFF))
			return 0;
		i += len;
	}
	return 1;
}

static int text_ok(const char *s)
{
	return !s || utf8_ok((const unsigned char *)s, strlen(s));
}

/* UTF-8 in, UTF-8 stored: every text of every run (the converter cuts
 * names to its buffers; a cut inside a character was not UTF-8). */
static void check_text(const struct measure_log *m)
{
	const struct store_meas_info *i = &m->info;
	uint32_t k;

	FUZZ_CHECK(text_ok(i->backend) && text_ok(i->host) &&
		   text_ok(i->device) && text_ok(i->library) &&
		   text_ok(i->library_version) && text_ok(i->library_path) &&
		   text_ok(i->runtime), "a hello's text is not UTF-8: "
		   "device '%s', host '%s'", i->device ? i->device : "",
		   i->host ? i->host : "");
	for (k = 0; k < m->npts; k++)
		FUZZ_CHECK(text_ok(m->pts[k].op) && text_ok(m->pts[k].type),
			   "point %u: op or dtype not UTF-8", k);
}

/* Every line of f into s. The count of lines. */
static unsigned read_stream(FILE *f, struct measure_stream *s,
			    struct diag *d)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned n = 0;
	int opened;

	while (getline(&line, &cap, f) > 0) {
		(void)measure_stream_line(s, line, "in", &opened, d);
		n++;
	}
	free(line);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct measure_stream s;
	struct diag d;
	FILE *in, *conv = NULL, *sink;
	unsigned *src_line = NULL, lines = 0, file_lines = 1;
	uint32_t total = 0;
	size_t nsrc = 0, i;

	if (size < 2)
		return 0;
	diag_init(&d, NULL);
	sink = fopen("/dev/null", "w");
	FUZZ_CHECK(sink, "cannot open /dev/null");
	in = fmemopen((void *)(data + 1), size - 1, "r");
	FUZZ_CHECK(in, "fmemopen failed");
	for (i = 1; i < size; i++)
		file_lines += data[i] == '\n';
	if (measure_stream_init(&s, &d) != 0) {
		fclose(in);
		fclose(sink);
		return 0;
	}
	if (data[0] % 2 == 0) {
		lines = read_stream(in, &s, &d);
	} else if (measure_nccl_text(in, "in", data[0] % 4 == 3 ?
				     "allreduce" : NULL, &conv, &src_line,
				     &nsrc, &d) == 0) {
		for (i = 0; i < nsrc; i++)
			FUZZ_CHECK(src_line[i] <= file_lines,
				   "converted line %zu cites line %u of a "
				   "file of %u", i + 1, src_line[i],
				   file_lines);
		s.src_line = src_line;
		s.nsrc = nsrc;
		lines = read_stream(conv, &s, &d);
		s.src_line = NULL;
		s.nsrc = 0;
		fclose(conv);
	}
	fclose(in);
	FUZZ_CHECK(s.lines == lines, "%u lines read, the stream says %u", lines,
		   s.lines);
	FUZZ_CHECK(s.n >= 1, "no run");
	for (i = 0; i < s.n; i++) {
		check_run(s.runs[i], sink);
		if (utf8_ok(data + 1, size - 1))
			check_text(s.runs[i]);
		total += s.runs[i]->npts;
	}
	FUZZ_CHECK(measure_stream_points(&s) == total,
		   "%u points, %u in the runs", measure_stream_points(&s),
		   total);
	measure_stream_release(&s);
	mem_free(src_line);
	fclose(sink);
	return 0;
}
