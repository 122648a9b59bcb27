/*
 * valid_infer.c - predicted against measured inference: the cases of
 * results/reference/inference/cases.tsv (gated) and extra-cases.tsv
 * (published runs outside the reference set: shown, counted in
 * their own tables, never gated), one job file each (serving runs, or
 * prefill/decode steps).
 *
 * Each line: id, job (in the same folder), the `run --json` path of the
 * metric compared (serving.output_tokens_per_s, serving.duration_s, ...),
 * the measured value, kind (throughput: a rate, + = llmsim faster;
 * latency: a time, + = llmsim slower), gate (scored or shown), a note,
 * and optionally why the case misses. Throughput cases make the
 * "inference" table, latency cases the "latency" table, of each file;
 * those of cases.tsv are gated by their kind in validate.yaml (issue 15:
 * output-throughput median |error| <= 15 %, every single-request latency
 * within 10 %). A case that fails to run is a row with no prediction:
 * reported, and (in cases.tsv) the gate misses.
 *
 * The cases of a file run in `jobs` worker processes (valid_pool.c;
 * as the training cases: case i in worker i mod jobs), each sending
 * "i value" lines (%.17g: the very double) back over a pipe.
 *
 * (Was scripts/validate-inference.sh.)
 */
#include "valid.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/config.h"
#include "config/spec_job.h"
#include "run/infer_run.h"
#include "serve/serve.h"

struct icase {
	char id[96];
	char job[512];			/* path */
	char metric[96];		/* dotted JSON path */
	double measured;
	int latency;			/* kind latency (a time) */
	int scored;			/* gate scored */
	char note[64];
	char why[512];			/* why it misses (optional) */
	double predicted;		/* NaN until run */
	char err[200];			/* why it failed to run */
};

/* Field k (0-based) of a tab-separated line, copied into buf. */
static int field(const char *line, int k, char *buf, size_t len)
{
	const char *p = line, *e;
	int i;

	for (i = 0; i < k; i++) {
		p = strchr(p, '\t');
		if (!p)
			return 0;
		p++;
	}
	e = p + strcspn(p, "\t\r\n");
	snprintf(buf, len, "%.*s", (int)(e - p), p);
	return e > p;
}

/* Read file name (cases.tsv, extra-cases.tsv) of dir into *cp (grown as
 * needed, *capp entries; the caller frees it); the count, or -1 after
 * reporting. */
static int read_cases(const char *dir, const char *name,
		      struct icase **cp, int *capp, struct diag *d)
{
	char path[1024], *line = NULL, kind[32], gate[32], meas[64], job[256];
	size_t cap = 0;
	struct icase *c;
	FILE *f;
	int n = 0, ln = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!(f = fopen(path, "r")))
		return 0;	/* an absent file has no cases */
	/* getline: a line of any length is one line (a fixed fgets buffer
	 * read a long line's rest as a second, malformed line) */
	while (getline(&line, &cap, f) > 0) {
		struct icase *x;

		ln++;
		if (line[0] == '#' || line[strspn(line, " \t\r\n")] == '\0')
			continue;
		if (!(c = valid_case_room(*cp, capp, n, sizeof(*c), d))) {
			n = -1;
			break;
		}
		*cp = c;
		x = &c[n];
		memset(x, 0, sizeof(*x));
		if (!field(line, 0, x->id, sizeof(x->id)) ||
		    !field(line, 1, job, sizeof(job)) ||
		    !field(line, 2, x->metric, sizeof(x->metric)) ||
		    !field(line, 3, meas, sizeof(meas)) ||
		    !field(line, 4, kind, sizeof(kind)) ||
		    !field(line, 5, gate, sizeof(gate)) ||
		    !valid_parse_measured(meas, &x->measured) ||
		    (strcmp(kind, "throughput") && strcmp(kind, "latency")) ||
		    (strcmp(gate, "scored") && strcmp(gate, "shown"))) {
			diag_error(d, path, ln, 1, "expected 'id<TAB>job<TAB>"
				   "metric<TAB>measured<TAB>throughput|latency"
				   "<TAB>scored|shown<TAB>note[<TAB>why]'");
			n = -1;
			break;
		}
		snprintf(x->job, sizeof(x->job), "%s/%s", dir, job);
		field(line, 6, x->note, sizeof(x->note));
		field(line, 7, x->why, sizeof(x->why));
		x->latency = strcmp(kind, "latency") == 0;
		x->scored = strcmp(gate, "scored") == 0;
		x->predicted = NAN;
		n++;
	}
	free(line);	/* getline's, from malloc */
	fclose(f);
	return n;
}

/* The number at dotted path p of o, or NaN. */
static double json_path(const cJSON *o, const char *p)
{
	char key[96];
	const char *dot;

	while (o && *p) {
		dot = strchr(p, '.');
		snprintf(key, sizeof(key), "%.*s",
			 (int)(dot ? dot - p : (ptrdiff_t)strlen(p)), p);
		o = cJSON_GetObjectItemCaseSensitive(o, key);
		p = dot ? dot + 1 : p + strlen(p);
	}
	return o && cJSON_IsNumber(o) ? o->valuedouble : NAN;
}

/* The run's --json (NULL after reporting). */
static cJSON *predict(const struct job_spec *j, struct diag *d)
{
	cJSON *o = NULL;

	if (j->phase == PHASE_SERVING) {
		struct serve_result *r = mem_calloc(1, sizeof(*r));

		if (r && serve_run(j, NULL, r, d) == 0)
			o = serve_to_json(j, r);
		if (r)
			serve_result_release(r);
		mem_free(r);
	} else {
		struct infer_result *r = mem_calloc(1, sizeof(*r));

		if (r && infer_run(j, NULL, r, d) == 0)
			o = infer_to_json(j, r);
		if (r)
			infer_result_release(r);
		mem_free(r);
	}
	return o;
}

/* Run case x: its metric, or NaN with x->err. */
static void run_case(struct icase *x, const char *data_root)
{
	struct arena a;
	struct diag d;
	struct config_ctx cx;
	struct job_spec *j;
	FILE *err = tmpfile();
	cJSON *o = NULL;

	arena_init(&a);
	diag_init(&d, err ? err : stderr);
	cx = (struct config_ctx){ &a, &d, data_root };
	if ((j = valid_load_job(&cx, x->job)))
		o = predict(j, &d);
	x->predicted = o ? json_path(o, x->metric) : NAN;
	snprintf(x->err, sizeof(x->err), o ? "no number at '%s'" : "failed",
		 x->metric);
	if (!o && err)
		valid_first_error(err, x->err, sizeof(x->err));
	cJSON_Delete(o);
	if (err)
		fclose(err);
	arena_release(&a);
}

/* The cases of one file as valid_pool_run sees them. */
struct ipool {
	struct icase *c;
	const char *data_root;
	int throughput, latency;	/* the kinds asked for */
};

/* Whether case i runs (its kind is asked for). */
static int ipool_wanted(void *ctx, int i)
{
	const struct ipool *q = ctx;

	return q->c[i].latency ? q->latency : q->throughput;
}

static void ipool_run(void *ctx, int i)
{
	const struct ipool *q = ctx;

	run_case(&q->c[i], q->data_root);
}

static void ipool_slot(void *ctx, int i, struct valid_slot *s)
{
	const struct ipool *q = ctx;

	s->value = &q->c[i].predicted;
	s->why = q->c[i].err;
	s->why_len = sizeof(q->c[i].err);
}

/* The wanted cases of c[0..n), in jobs processes (valid_pool_run). */
static int run_all(struct icase *c, int n, int jobs, int throughput,
		   int latency, const char *data_root, const char *file,
		   struct diag *d)
{
	struct ipool q = { c, data_root, throughput, latency };
	char what[128];
	struct valid_pool p = { what, n, &q, ipool_wanted, ipool_run,
				ipool_slot };

	snprintf(what, sizeof(what), "inference/%s", file);
	return valid_pool_run(&p, jobs, d);
}

/* The table of kind k (latency or not) from the cases of file name
 * (gated: cases.tsv). */
static int add_table(struct valid_set *set, struct config_ctx *cx,
		     struct icase *c, int n, int latency, const char *name,
		     int gated)
{
	struct valid_table *t = NULL;
	int i;

	for (i = 0; i < n; i++) {
		struct valid_row *v;

		if (c[i].latency != latency)
			continue;
		if (!t) {
			t = valid_table_add(set, latency ? VK_LATENCY :
					    VK_INFERENCE, cx->diag);
			if (!t)
				return -1;
			snprintf(t->id, sizeof(t->id), "inference/%s", name);
			snprintf(t->title, sizeof(t->title), "%s of the "
				 "inference %s", latency ?
				 "single-request latency (s)" :
				 "serving throughput", gated ?
				 "reference cases" : "extra (not gated) cases");
			t->unit = latency ? "s" : "tok/s";
			t->is_time = latency;
			t->gated = gated;
		}
		if (!(v = valid_row_add(t, cx->diag)))
			return -1;
		snprintf(v->label, sizeof(v->label), "%s", c[i].id);
		v->measured = c[i].measured;
		v->predicted = c[i].predicted;
		v->error = v->predicted / v->measured - 1;
		v->scored = c[i].scored;
		v->in_sample = valid_is_fitted(set, c[i].id);
		snprintf(v->note, sizeof(v->note), "%s%.55s",
			 c[i].scored ? "" : "(shown) ", c[i].note);
		if (c[i].why[0] &&
		    !(v->why = arena_strdup(cx->arena, c[i].why))) {
			diag_oom(cx->diag);
			return -1;
		}
		if (isnan(v->predicted))
			valid_row_failed(v, c[i].id, c[i].err);
	}
	return 0;
}

int valid_inference(struct valid_set *set, struct config_ctx *cx,
		    const char *dir, int jobs, int throughput, int latency)
{
	static const char *const files[2] = {"cases.tsv", "extra-cases.tsv"};
	struct icase *c = NULL;
	int cap = 0, f, n, rc = 0;

	for (f = 0; f < 2 && rc == 0; f++) {
		n = read_cases(dir, files[f], &c, &cap, cx->diag);
		if (n < 0 || (n > 0 && run_all(c, n, jobs, throughput, latency,
						cx->data_root, files[f],
						cx->diag) != 0))
			rc = -1;
		if (rc == 0 && throughput &&
		    add_table(set, cx, c, n, 0, files[f], f == 0) != 0)
			rc = -1;
		if (rc == 0 && latency &&
		    add_table(set, cx, c, n, 1, files[f], f == 0) != 0)
			rc = -1;
	}
	mem_free(c);
	return rc;
}
