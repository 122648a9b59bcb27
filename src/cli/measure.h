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

#define MEASURE_MAX_POINTS 256

/* Everything one backend run said. Strings are owned (mem_free'd by
 * measure_release). */
struct measure_log {
	struct store_meas_info info;	/* from the hello line */
	int have_hello;
	struct store_meas_row pts[MEASURE_MAX_POINTS];
	uint32_t npts;
	struct cJSON *points;		/* the point lines, as --json prints */
	int ended;			/* an end line came */
	int err_status;			/* an error line's status (0: none) */
	char *err_msg;			/* its message */
	unsigned lines;			/* lines read */
	unsigned hello_line;		/* the first hello's line (0: none) */
	unsigned first_point_line;	/* the first point line's (0: none) */
};

void measure_init(struct measure_log *m);
void measure_release(struct measure_log *m);

/* Take one protocol line. 0; 1 when it was a point (the newest is
 * m->pts[m->npts - 1]); -1 after reporting (not JSON, a point with a
 * missing or bad field, too many points) naming where: file:line. */
int measure_line(struct measure_log *m, const char *line, const char *where,
		 struct diag *d);

/* Printing (measure_print.c): the rccl-tests table as points arrive
 * (header before the first, a line per point, a summary after the
 * last), or all of it as CSV. */
void measure_print_header(FILE *out, const struct measure_log *m,
			  const char *op);
void measure_print_point(FILE *out, const struct store_meas_row *p);
void measure_print_footer(FILE *out, const struct measure_log *m);
void measure_print_csv(FILE *out, const struct measure_log *m);

#endif
