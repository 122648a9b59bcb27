/*
 * valid_train.c - predicted against measured step times of the training
 * reference cases: results/reference/training/cases.tsv (a gated table)
 * and extra-cases.tsv (measurements outside the reference set,
 * e.g. llmsim's own: shown, not gated). Each line: id, job file (in the
 * same folder), measured step time in seconds, where the number comes
 * from. error = predicted / measured - 1 of the step time.
 *
 * Each case is one full step simulation (`llmsim run` without storing),
 * some of them tens of seconds, so with jobs > 1 they run in that many
 * worker processes (valid_pool.c: fork; a worker sends "INDEX STEP_S" or
 * "INDEX ! WHY" lines back through a pipe). A case that fails to run is a
 * table row with no prediction and an error: reported, and the validation
 * fails.
 *
 * (Was scripts/validate-training.sh.)
 */
#include "valid.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "run/step.h"

struct tcase {
	char id[96];
	char job[512];			/* path */
	double measured_s;		/* s */
	double predicted_s;		/* s; NaN until run */
	char why[200];			/* why it failed */
};

/* Read a cases file into *cp (grown as needed, *capp entries; the
 * caller frees it); the count, or -1 after reporting. */
static int read_cases(const char *dir, const char *name,
		      struct tcase **cp, int *capp, struct diag *d)
{
	char path[1024], *line = NULL;
	size_t cap = 0;
	struct tcase *c;
	FILE *f;
	int n = 0, ln = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return 0;	/* an absent file has no cases */
	/* getline: a line of any length is one line (a fixed fgets buffer
	 * read a long line's rest as a second, malformed line) */
	while (getline(&line, &cap, f) > 0) {
		char *id, *job, *meas, *save = NULL;
		double measured = 0;

		ln++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (!(c = valid_case_room(*cp, capp, n, sizeof(*c), d))) {
			n = -1;
			break;
		}
		*cp = c;
		id = strtok_r(line, "\t\n", &save);
		job = strtok_r(NULL, "\t\n", &save);
		meas = strtok_r(NULL, "\t\n", &save);
		if (!id || !job || !valid_parse_measured(meas, &measured)) {
			diag_error(d, path, ln, 1, "expected 'id<TAB>job<TAB>"
				   "measured_step_s<TAB>source'");
			n = -1;
			break;
		}
		memset(&c[n], 0, sizeof(c[n]));
		snprintf(c[n].id, sizeof(c[n].id), "%s", id);
		snprintf(c[n].job, sizeof(c[n].job), "%s/%s", dir, job);
		c[n].measured_s = measured;
		c[n].predicted_s = NAN;
		n++;
	}
	free(line);	/* getline's, from malloc */
	fclose(f);
	return n;
}

/* Simulate one case: its step time, or NaN with why. */
static double run_case(struct tcase *c, const char *data_root)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	struct job_spec *j;
	struct step_result r;
	FILE *err = tmpfile();
	double t = NAN;

	arena_init(&a);
	diag_init(&d, err ? err : stderr);
	cx = (struct config_ctx){ &a, &d, data_root };
	memset(&r, 0, sizeof(r));
	j = valid_load_job(&cx, c->job);
	if (j && step_run(j, 0, NULL, NULL, &r, &d) == 0)
		t = r.step_s;
	step_result_release(&r);
	snprintf(c->why, sizeof(c->why), "failed");
	if (isnan(t) && err)
		valid_first_error(err, c->why, sizeof(c->why));
	if (err)
		fclose(err);
	arena_release(&a);
	return t;
}

/* The cases of one file as valid_pool_run sees them. */
struct tpool {
	struct tcase *c;
	const char *data_root;
};

static void tpool_run(void *ctx, int i)
{
	const struct tpool *q = ctx;

	q->c[i].predicted_s = run_case(&q->c[i], q->data_root);
}

static void tpool_slot(void *ctx, int i, struct valid_slot *s)
{
	const struct tpool *q = ctx;

	s->value = &q->c[i].predicted_s;
	s->why = q->c[i].why;
	s->why_len = sizeof(q->c[i].why);
}

/* Every case's prediction, in jobs processes (valid_pool_run). */
static int run_all(struct tcase *c, int n, int jobs, const char *data_root,
		   const char *file, struct diag *d)
{
	struct tpool q = { c, data_root };
	struct valid_pool p = { file, n, &q, NULL, tpool_run, tpool_slot };

	return valid_pool_run(&p, jobs, d);
}

static int add_table(struct valid_set *set, struct tcase *c, int n,
		     const char *name, int gated, enum valid_kind kind,
		     struct diag *d)
{
	struct valid_table *t = valid_table_add(set, kind, d);
	int i;

	if (!t)
		return -1;
	if (kind == VK_TRAINING)
		snprintf(t->id, sizeof(t->id), "%s", name);
	else
		snprintf(t->id, sizeof(t->id), "%s/%s", valid_kind_names[kind],
			 name);
	snprintf(t->title, sizeof(t->title), "step time of %s cases (%s)",
		 gated ? "the reference" : "extra (not gated)", name);
	t->unit = "s";
	t->is_time = 1;
	t->gated = gated;
	for (i = 0; i < n; i++) {
		struct valid_row *v = valid_row_add(t, d);

		if (!v)
			return -1;
		snprintf(v->label, sizeof(v->label), "%s", c[i].id);
		v->measured = c[i].measured_s;
		v->predicted = c[i].predicted_s;
		v->error = v->predicted / v->measured - 1;
		v->in_sample = valid_is_fitted(set, c[i].id);
		if (isnan(v->predicted))
			valid_row_failed(v, c[i].id, c[i].why[0] ? c[i].why :
					 "its worker process ended without a "
					 "result");
	}
	return 0;
}

int valid_training(struct valid_set *set, struct config_ctx *cx,
		   const char *dir, int jobs, enum valid_kind kind)
{
	static const char *const files[2] = {"cases.tsv", "extra-cases.tsv"};
	struct tcase *c = NULL;
	int cap = 0, f, n, rc = 0;

	for (f = 0; f < 2 && rc == 0; f++) {
		n = read_cases(dir, files[f], &c, &cap, cx->diag);
		if (n < 0 || run_all(c, n, jobs, cx->data_root, files[f],
				     cx->diag) != 0)
			rc = -1;
		else if (n > 0 && add_table(set, c, n, files[f], f == 0, kind,
					    cx->diag) != 0)
			rc = -1;
	}
	mem_free(c);
	return rc;
}
