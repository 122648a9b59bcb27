/*
 * valid_pool.c - the cases of one reference file predicted in worker
 * processes (valid_pool_run, valid.h), shared by the training and the
 * inference tables: worker w of jobs forks, predicts its wanted cases w,
 * w + jobs, ... and writes "INDEX VALUE" (%.17g: the parent reads back
 * the very double) or "INDEX ! WHY" lines into one pipe; the parent
 * reads them into the cases and says how far it is every PROGRESS_S.
 * A worker killed or out of memory leaves its remaining cases NaN with
 * "its worker process ended without a result".
 */
#include "valid.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/diag.h"
#include "base/proc.h"

/* Seconds between progress lines: a file of cases takes a minute or
 * more on two cores, which said nothing until its table. */
#define PROGRESS_S 10.0

/* At most this many workers (a validation machine's cores, at most). */
#define POOL_MAX_JOBS 16

struct progress {
	const struct valid_pool *p;
	double t0, last;		/* s, monotonic */
};

static void progress(struct progress *pr, int done, int n, struct diag *d)
{
	double t = clock_mono_s();

	if (t - pr->t0 < PROGRESS_S || t - pr->last < PROGRESS_S || done == n)
		return;
	pr->last = t;
	diag_progress(d, "validate: %d of %d cases of %s predicted (%.0f s)",
		      done, n, pr->p->file, t - pr->t0);
}

static int wanted(const struct valid_pool *p, int i)
{
	return !p->wanted || p->wanted(p->ctx, i);
}

/* Worker w of jobs: the wanted cases w, w + jobs, ... into fd. */
static void worker(const struct valid_pool *p, int w, int jobs, int fd)
{
	FILE *out = fdopen(fd, "w");
	int i;

	for (i = w; out && i < p->n; i += jobs) {
		struct valid_slot s;

		if (!wanted(p, i))
			continue;
		p->run(p->ctx, i);
		p->slot(p->ctx, i, &s);
		if (isnan(*s.value))
			fprintf(out, "%d ! %s\n", i, s.why);
		else
			fprintf(out, "%d %.17g\n", i, *s.value);
		fflush(out);
	}
	_exit(out ? 0 : 1);
}

/* A worker's line into its case. */
static void take_line(const struct valid_pool *p, char *line)
{
	struct valid_slot s;
	char *rest;
	long i = strtol(line, &rest, 10);

	if (rest == line || i < 0 || i >= p->n)
		return;
	p->slot(p->ctx, (int)i, &s);
	rest += strspn(rest, " ");
	if (rest[0] == '!') {
		snprintf(s.why, s.why_len, "%s", rest + 2);
		s.why[strcspn(s.why, "\n")] = '\0';
	} else {
		*s.value = strtod(rest, NULL);
	}
}

int valid_pool_run(const struct valid_pool *p, int jobs, struct diag *d)
{
	pid_t pid[POOL_MAX_JOBS], parent = getpid();
	char line[512];
	int fds[2], w, i, started = 0, got = 0, todo = 0;
	struct progress pr = { p, clock_mono_s(), 0 };
	FILE *in;

	for (i = 0; i < p->n; i++) {
		struct valid_slot s;

		p->slot(p->ctx, i, &s);
		*s.value = NAN;
		snprintf(s.why, s.why_len, "its worker process ended without "
			 "a result");
		todo += wanted(p, i);
	}
	if (jobs <= 1 || todo <= 1) {
		for (i = 0; i < p->n; i++)
			if (wanted(p, i)) {
				p->run(p->ctx, i);
				progress(&pr, ++got, todo, d);
			}
		return 0;
	}
	if (jobs > POOL_MAX_JOBS)
		jobs = POOL_MAX_JOBS;
	if (pipe(fds) != 0) {
		diag_error(d, NULL, 0, 0, "pipe: %s", strerror(errno));
		return -1;
	}
	fflush(NULL);
	for (w = 0; w < jobs && w < p->n; w++) {
		if ((pid[w] = fork()) == 0) {
			/* a SIGTERM to validate ends its workers too (they
			 * ran on to their next write) */
			if (proc_die_with_parent(parent) != 0)
				_exit(1);
			close(fds[0]);
			worker(p, w, jobs, fds[1]);
		}
		started += pid[w] > 0;
	}
	close(fds[1]);
	in = fdopen(fds[0], "r");
	while (in && fgets(line, sizeof(line), in)) {
		take_line(p, line);
		progress(&pr, ++got, todo, d);
	}
	if (in)
		fclose(in);
	else
		close(fds[0]);
	for (w = 0; w < jobs && w < p->n; w++)
		if (pid[w] > 0)
			waitpid(pid[w], NULL, 0);
	if (!started)
		diag_error(d, NULL, 0, 0, "validate: no worker process "
			   "started: %s", strerror(errno));
	return started ? 0 : -1;
}
