/*
 * measure.h - what `llmsim measure` reads from a backend: the JSON-lines
 * protocol of docs/measure.md (hello, point, error, end) parsed into the
 * store's rows, and the backend process it comes from.
 *
 * Private to the CLI (cli_measure.c, measure_proto.c).
 */
#ifndef LLMSIM_CLI_MEASURE_H
#define LLMSIM_CLI_MEASURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "store/store.h"

struct cJSON;
struct diag;

/* A run's most points: an nccl-tests -i run of 1 MiB steps up to 64 GiB
 * (65536 rows) is one run; the points (about 1.5 KiB each with their
 * JSON) then take ~100 MB. A longer run is refused at its line: split it
 * (rerun nccl-tests over part of the sizes: -b / -e). Was 256, a fixed
 * array, which refused an -i run of 257 rows whole. */
#define MEASURE_MAX_POINTS 65536

/* The most sizes one backend run walks (src/backend/bk_main.c
 * MAX_POINTS): `llmsim measure` refuses a --min / --max / --step-factor
 * of more before the backend starts. */
#define MEASURE_BACKEND_SIZES 256

/* The protocol the backends print (bk_main.c BK_PROTOCOL); version 1 is
 * read too, its points put in version 2's terms (measure_proto.c). */
#define MEASURE_PROTOCOL 2

/* Everything one backend run said. Strings are owned (mem_free'd by
 * measure_release). */
struct measure_log {
	struct store_meas_info info;	/* from the hello line */
	int have_hello;
	int foreign;			/* a hello of another protocol */
	int protocol;			/* the hello's (MEASURE_PROTOCOL
					   before one) */
	struct store_meas_row *pts;	/* [npts], grown (mem_free'd) */
	uint32_t npts, cap;
	int too_many;			/* a point past MEASURE_MAX_POINTS
					 * came (said at its line, once) */
	struct cJSON *points;		/* the point lines, as --json prints */
	int ended;			/* an end line came */
	int err_status;			/* an error line's status (0: none) */
	char *err_msg;			/* its message */
	char *err_reason;		/* its reason */
	double end_points;		/* the end line's count (NaN: none) */
	unsigned lines;			/* lines read (of the whole stream) */
	unsigned first_line;		/* this run's first line */
	unsigned hello_line;		/* the hello's line (0: none) */
	unsigned first_point_line;	/* the first point line's (0: none) */
	unsigned end_line, err_line;	/* the end / error line's (0: none) */
};

void measure_init(struct measure_log *m);
void measure_release(struct measure_log *m);

/* measure_line's answers. */
enum {
	MEASURE_BAD = -1,	/* reported (not JSON, a bad point, ...) */
	MEASURE_TAKEN = 0,	/* hello, end, error, blank, unknown type */
	MEASURE_POINT = 1,	/* a point: m->pts[m->npts - 1] */
	MEASURE_NEXT = 2,	/* the line opens the next run: not taken */
};

/* Take one protocol line. A backend run is a hello line, its points,
 * and an end line or an error line; a hello after any of those, an
 * error line after an end or an error, or a point or end after an end
 * or an error opens the next run (MEASURE_NEXT: m is unchanged). -1
 * reports where: file:line. */
int measure_line(struct measure_log *m, const char *line, const char *where,
		 struct diag *d);

/*
 * A stream of backend runs: a backend's stdout holds one, a file several
 * (backends' outputs concatenated: each hello line opens a run, and an
 * error line after an end is a run that failed before its hello).
 * runs[n - 1] is the run being read; never empty once opened.
 */
struct measure_stream {
	struct measure_log **runs;
	size_t n, cap;
	unsigned lines;			/* lines read */
	/* A converted stream's (measure_nccl_text): line k + 1 came from
	 * line src_line[k] of the file, which messages cite; NULL: the
	 * file's own lines */
	const unsigned *src_line;
	size_t nsrc;
};

/* 0, or -1 out of memory (reported). */
int measure_stream_init(struct measure_stream *s, struct diag *d);
void measure_stream_release(struct measure_stream *s);

/* Take one line into the run being read, opening the next run first
 * when the line belongs to it (*opened = 1; else 0). As measure_line:
 * MEASURE_BAD, MEASURE_TAKEN or MEASURE_POINT (of runs[n - 1]). */
int measure_stream_line(struct measure_stream *s, const char *line,
			const char *where, int *opened, struct diag *d);

/* Points in every run. */
uint32_t measure_stream_points(const struct measure_stream *s);

/* What a finished run lacks or reports, for the store and the user: its
 * error line as "status N (REASON): MESSAGE" in buf ("" when none), and
 * whether it stopped before its end line (the backend killed, the file
 * cut, or an error line). */
int measure_run_incomplete(const struct measure_log *m);
void measure_run_error(const struct measure_log *m, char *buf, size_t len);

/* Printing (measure_print.c): the rccl-tests table as points arrive
 * (header before the first, a line per point, a summary after the
 * last), or all of it as CSV. */
void measure_print_header(FILE *out, const struct measure_log *m,
			  const char *op);
void measure_print_point(FILE *out, const struct store_meas_row *p);
void measure_print_footer(FILE *out, const struct measure_log *m);
void measure_print_csv(FILE *out, const struct measure_log *m, int header);

/* measure_nccl.c: the input in, as protocol lines in *out (a temporary
 * file, rewound; the caller closes it): nccl-tests / rccl-tests text
 * output converted (op: its "Collective test starting" line, else
 * op_opt), anything else as it is. A converted stream's lines' lines
 * in the input into *src_line (mem_alloc'd, the caller frees; *nsrc of
 * them: a hello its header's, a point its row's, an end its run's last
 * row's); NULL and 0 for input passed as it is. 0, or -1 after
 * reporting. */
int measure_nccl_text(FILE *in, const char *where, const char *op_opt,
		      FILE **out, unsigned **src_line, size_t *nsrc,
		      struct diag *d);

#endif
