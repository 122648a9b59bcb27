/*
 * valid_report.c - the tables of a validation: building them, which
 * cases were fitted on (fitted_on: in configs/), their statistics, the
 * gates, and printing.
 *
 * Statistics over a table's scored rows: the median signed error (the
 * bias), the median, 90th percentile (nearest rank) and largest |error|;
 * for collectives also the median |error| at sizes of 64 MB and more.
 * The summary adds the tables up per kind and overall; overall, errors
 * are put on one footing, speed (+ = llmsim faster than measured): a
 * time's error e becomes 1 / (1 + e) - 1.
 */
#include "valid.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/config.h"
#include "config/schema.h"
#include "config/spec_job.h"

#define LARGE_B 64e6
#define LARGEST_B 8589934592.0

const char *const valid_kind_names[VK_COUNT + 1] = {
	"kernel", "collective", "training", "moe", "cp", "dispatch",
	"measured", "inference", "latency", NULL,
};

struct valid_table *valid_table_add(struct valid_set *set,
				    enum valid_kind kind, struct diag *d)
{
	struct valid_table *t;

	if (set->n == set->cap) {
		size_t cap = set->cap ? 2 * set->cap : 16;
		struct valid_table *more = mem_realloc(set->t, cap * sizeof(*t));

		if (!more) {
			diag_oom(d);
			return NULL;
		}
		set->t = more;
		set->cap = cap;
	}
	t = &set->t[set->n++];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->gated = 1;
	t->unit = "";
	return t;
}

struct valid_row *valid_row_add(struct valid_table *t, struct diag *d)
{
	struct valid_row *r;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 32;
		struct valid_row *more = mem_realloc(t->rows, cap * sizeof(*r));

		if (!more) {
			diag_oom(d);
			return NULL;
		}
		t->rows = more;
		t->cap = cap;
	}
	r = &t->rows[t->n++];
	memset(r, 0, sizeof(*r));
	r->lo = r->hi = NAN;
	r->scored = 1;
	return r;
}

int valid_parse_number(const char *text, double lo, int whole, double *out)
{
	char *end;
	double x;

	if (!text)
		return 0;
	x = strtod(text, &end);
	if (end == text || end[strspn(end, " \t\r\n")] != '\0' ||
	    !isfinite(x) || !(x >= lo) || (whole && x != floor(x)))
		return 0;
	*out = x;
	return 1;
}

int valid_check_keys(const struct cnode *map, const char *const *keys,
		     const char *what, struct diag *d)
{
	size_t i, n = 0;
	int rc = 0;

	if (!map || map->kind != CNODE_MAP)
		return 0;
	while (keys[n])
		n++;
	for (i = 0; i < map->npairs; i++) {
		const struct cnode *k = map->pairs[i].key;
		const char *near;

		if (schema_name_index(keys, k->text) >= 0)
			continue;
		near = schema_closest(k->text, keys, n);
		cnode_error(d, k, "'%s': unknown key in a %s%s%s%s", k->text,
			    what, near ? "; did you mean '" : "",
			    near ? near : "", near ? "'?" : "");
		rc = -1;
	}
	return rc;
}

int valid_get_bool(const struct cnode *map, const char *key, int def,
		   struct diag *d)
{
	const struct cnode *n = cnode_get(map, key);

	if (!n)
		return def;
	if (n->kind == CNODE_SCALAR && strcmp(n->text, "true") == 0)
		return 1;
	if (n->kind == CNODE_SCALAR && strcmp(n->text, "false") == 0)
		return 0;
	if (n->kind == CNODE_SCALAR)
		cnode_error(d, n, "'%s': expected true or false, got '%s'",
			    key, n->text);
	else
		cnode_error(d, n, "'%s': expected true or false, got a %s",
			    key, n->kind == CNODE_MAP ? "mapping" : "list");
	return -1;
}

void *valid_case_room(void *p, int *capp, int n, size_t elem,
		      struct diag *d)
{
	int ncap;
	void *g;

	if (n < *capp)
		return p;
	ncap = *capp ? 2 * *capp : 64;
	if (!(g = mem_realloc(p, (size_t)ncap * elem))) {
		diag_oom(d);
		return NULL;
	}
	*capp = ncap;
	return g;
}

int valid_parse_measured(const char *text, double *out)
{
	double x;

	if (!valid_parse_number(text, 0, 0, &x) || !(x > 0))
		return 0;
	*out = x;
	return 1;
}

void valid_row_failed(struct valid_row *v, const char *id, const char *why)
{
	v->scored = 0;
	v->failed = 1;
	snprintf(v->note, sizeof(v->note), "FAILED");
	fprintf(stderr, "llmsim: validate: %s did not run: %s\n", id, why);
}

void valid_first_error(FILE *err, char *buf, size_t len)
{
	char line[512];

	rewind(err);
	while (fgets(line, sizeof(line), err))
		if (strstr(line, "error:")) {
			snprintf(buf, len, "%.199s", line);
			break;
		}
	buf[strcspn(buf, "\n")] = '\0';
}

struct job_spec *valid_load_job(struct config_ctx *cx, const char *path)
{
	struct job_spec *j = arena_alloc(cx->arena, sizeof(*j));

	if (!j)
		return NULL;
	memset(j, 0, sizeof(*j));
	return config_load(cx, &job_schema, path, NULL, 0, j) == 0 ? j : NULL;
}

void valid_set_release(struct valid_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		mem_free(set->t[i].rows);
	mem_free(set->t);
	set->t = NULL;
	set->n = set->cap = 0;
}

/* ---- fitted_on ------------------------------------------------------ */

int valid_is_fitted(const struct valid_set *set, const char *id)
{
	size_t i;

	for (i = 0; i < set->nfitted; i++)
		if (strcmp(set->fitted[i], id) == 0)
			return 1;
	return 0;
}

static int add_fitted(struct valid_set *set, struct arena *a, const char *id)
{
	if (valid_is_fitted(set, id))
		return 0;
	if (set->nfitted == set->fitted_cap &&
	    arena_grow(a, (void **)&set->fitted, &set->fitted_cap,
		       set->nfitted + 1, sizeof(*set->fitted)) != 0)
		return -1;
	set->fitted[set->nfitted++] = id;
	return 0;
}

/* Every fitted_on under node. */
static int walk(struct valid_set *set, struct arena *a, const struct cnode *n)
{
	size_t i, j;

	if (n->kind == CNODE_SEQ) {
		for (i = 0; i < n->nitems; i++)
			if (walk(set, a, n->items[i]) != 0)
				return -1;
		return 0;
	}
	if (n->kind != CNODE_MAP)
		return 0;
	for (i = 0; i < n->npairs; i++) {
		const struct cnode *v = n->pairs[i].value;

		if (strcmp(n->pairs[i].key->text, "fitted_on") != 0) {
			if (walk(set, a, v) != 0)
				return -1;
			continue;
		}
		if (v->kind == CNODE_SEQ) {	/* a calibration file's list */
			for (j = 0; j < v->nitems; j++)
				if (v->items[j]->kind == CNODE_SCALAR &&
				    add_fitted(set, a, v->items[j]->text))
					return -1;
			continue;
		}
		for (j = 0; v->kind == CNODE_MAP && j < v->npairs; j++) {
			const struct cnode *ids = v->pairs[j].value;
			size_t k;

			for (k = 0; ids->kind == CNODE_SEQ && k < ids->nitems; k++)
				if (ids->items[k]->kind == CNODE_SCALAR &&
				    add_fitted(set, a, ids->items[k]->text))
					return -1;
		}
	}
	return 0;
}

int valid_load_fitted_file(struct valid_set *set, struct config_ctx *cx,
			   const char *path)
{
	const struct cnode *root = cnode_load_yaml(cx->arena, path, cx->diag);

	if (!root)
		return -1;
	if (walk(set, cx->arena, root) != 0) {
		diag_oom(cx->diag);
		return -1;
	}
	return 0;
}

static int load_dir(struct valid_set *set, struct config_ctx *cx,
		    const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	int rc = 0;

	if (!dp)
		return 0;
	while (rc == 0 && (e = readdir(dp))) {
		size_t len = strlen(e->d_name);
		char *p;
		struct stat st;

		if (e->d_name[0] == '.')
			continue;
		if (!(p = arena_printf(cx->arena, "%s/%s", dir, e->d_name))) {
			diag_oom(cx->diag);
			rc = -1;
		} else if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
			rc = load_dir(set, cx, p);
		} else if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
			rc = valid_load_fitted_file(set, cx, p);
		}
	}
	closedir(dp);
	return rc;
}

int valid_load_fitted(struct valid_set *set, struct config_ctx *cx)
{
	char *dir = arena_printf(cx->arena, "%s/configs", cx->data_root);

	set->fitted = NULL;
	set->nfitted = set->fitted_cap = 0;
	if (!dir) {
		diag_oom(cx->diag);
		return -1;
	}
	return load_dir(set, cx, dir);
}

/* ---- statistics ----------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	if (n == 0)
		return NAN;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Statistics of n errors (fractions) in e (reordered). */
static void stats_of(double *e, size_t n, struct valid_stats *s)
{
	double *a = n ? mem_alloc(n * sizeof(*a)) : NULL;
	size_t i;

	s->n = n;
	s->median = median(e, n);
	s->median_abs = s->p90_abs = s->max_abs = NAN;
	if (!a)
		return;
	for (i = 0; i < n; i++)
		a[i] = fabs(e[i]);
	s->median_abs = median(a, n);	/* sorts a */
	s->p90_abs = a[(size_t)ceil(0.9 * (double)n) - 1];
	s->max_abs = a[n - 1];
	mem_free(a);
}

static int counts(const struct valid_row *r, int indep)
{
	return r->scored && !r->failed && !(indep && r->in_sample);
}

void valid_stats(const struct valid_table *t, int indep,
		 struct valid_stats *out)
{
	double *e = t->n ? mem_alloc(2 * t->n * sizeof(*e)) : NULL, *big;
	size_t i, n = 0, nb = 0;

	memset(out, 0, sizeof(*out));
	out->median = out->median_abs = out->p90_abs = out->max_abs = NAN;
	out->median_abs_large = NAN;
	if (!e)
		return;
	big = e + t->n;
	for (i = 0; i < t->n; i++) {
		const struct valid_row *r = &t->rows[i];

		if (!counts(r, indep))
			continue;
		e[n++] = r->error;
		if (r->size_B >= LARGE_B && r->size_B <= LARGEST_B)
			big[nb++] = fabs(r->error);
		if (!isnan(r->lo)) {
			out->nwith_interval++;
			out->ninside += r->measured >= r->lo &&
					r->measured <= r->hi;
		}
	}
	stats_of(e, n, out);
	out->nlarge = nb;
	out->median_abs_large = median(big, nb);
	mem_free(e);
}

/* ---- printing ------------------------------------------------------- */

static void print_stats(FILE *out, const char *what,
			const struct valid_stats *s, int large)
{
	if (s->n == 0) {
		fprintf(out, "  %s: no scored rows\n", what);
		return;
	}
	fprintf(out, "  %s: %zu scored, error median %+.1f%%, |error| median "
		"%.1f%%, p90 %.1f%%, max %.1f%%", what, s->n, 100 * s->median,
		100 * s->median_abs, 100 * s->p90_abs, 100 * s->max_abs);
	if (large && s->nlarge)
		fprintf(out, "; >= 64 MB: %zu, |error| median %.1f%%",
			s->nlarge, 100 * s->median_abs_large);
	fputc('\n', out);
	if (s->nwith_interval)
		fprintf(out, "  %zu of %zu measured values inside the predicted "
			"95%% interval\n", s->ninside, s->nwith_interval);
}

/* One gate: its text into buf; 1 when missed. */
static int gate(char *buf, size_t len, const char *what, double got,
		double limit, int abs_of)
{
	int miss = (abs_of ? fabs(got) : got) > limit;

	if (isnan(limit) || isnan(got))
		return 0;
	snprintf(buf + strlen(buf), len - strlen(buf), "%s%s %.1f%% (<= "
		 "%.0f%%): %s", buf[0] ? "; " : "", what, 100 * got,
		 100 * limit, miss ? "MISSED" : "ok");
	return miss;
}

static int gates(FILE *out, const struct valid_table *t,
		 const struct valid_stats *s, const struct valid_gate *g)
{
	char buf[512] = "";
	size_t i;
	int miss = 0;

	if (!t->gated || !g)
		return 0;
	for (i = 0; i < t->n; i++)
		if (t->rows[i].failed) {
			fprintf(out, "  gates: %s did not run: MISSED\n",
				t->rows[i].label);
			return 1;
		}
	miss |= gate(buf, sizeof(buf), "|error| median", s->median_abs,
		     g->median_abs, 0);
	if (t->kind == VK_COLLECTIVE || t->kind == VK_MEASURED)
		miss |= gate(buf, sizeof(buf), "at >= 64 MB",
			     s->median_abs_large, g->median_abs_large, 0);
	miss |= gate(buf, sizeof(buf), "|error median|", s->median,
		     g->bias_abs, 1);
	miss |= gate(buf, sizeof(buf), "max |error|", s->max_abs, g->max_abs,
		     0);
	if (buf[0])
		fprintf(out, "  gates: %s\n", buf);
	return miss;
}

int valid_print_table(FILE *out, const struct valid_table *t,
		      const struct valid_gate *g)
{
	struct valid_stats all, ind;
	size_t i, nin = 0;

	for (i = 0; i < t->n; i++)
		nin += t->rows[i].in_sample != 0;
	fprintf(out, "== %s: %s%s\n", t->id, t->title,
		nin == t->n && nin ? "  [in-sample: fitted on]" : "");
	fprintf(out, "  %-56s %11s %11s %-8s %8s\n", "case", "measured",
		"predicted", "unit", "error");
	for (i = 0; i < t->n; i++) {
		const struct valid_row *r = &t->rows[i];

		fprintf(out, "  %-56s %11.4g %11.4g %-8s ", r->label,
			r->measured, r->predicted, t->unit);
		if (isfinite(r->error))
			fprintf(out, "%+7.1f%%", 100 * r->error);
		else
			fprintf(out, "%8s", "-");
		if (!isnan(r->lo))
			fprintf(out, "  [%.4g, %.4g]", r->lo, r->hi);
		fprintf(out, "  %s%s\n", r->in_sample && nin < t->n ?
			"(in-sample) " : "", r->note);
		if (r->why)
			fprintf(out, "      why: %s\n", r->why);
	}
	valid_stats(t, 0, &all);
	print_stats(out, "all rows", &all, t->kind == VK_COLLECTIVE ||
		    t->kind == VK_MEASURED);
	if (nin && nin < t->n) {
		valid_stats(t, 1, &ind);
		print_stats(out, "independent rows", &ind, 0);
	}
	i = (size_t)gates(out, t, &all, g);
	fputc('\n', out);
	return (int)i;
}

/* Errors of the scored rows of the tables of kind k (all kinds: k < 0)
 * into e, on the speed footing when speed; count. */
static size_t gather(const struct valid_set *set, int k, int indep,
		     int speed, double *e)
{
	size_t i, j, n = 0;

	for (i = 0; i < set->n; i++) {
		const struct valid_table *t = &set->t[i];

		if (k >= 0 && (int)t->kind != k)
			continue;
		for (j = 0; j < t->n; j++) {
			const struct valid_row *r = &t->rows[j];

			if (!counts(r, indep))
				continue;
			e[n++] = speed && t->is_time ? 1 / (1 + r->error) - 1
						     : r->error;
		}
	}
	return n;
}

static void summary_line(FILE *out, const char *what, double *e, size_t n)
{
	struct valid_stats s;

	stats_of(e, n, &s);
	if (n == 0) {
		fprintf(out, "  %-24s %6s\n", what, "0");
		return;
	}
	fprintf(out, "  %-24s %6zu %+8.1f%% %8.1f%% %7.1f%% %7.1f%%\n", what,
		n, 100 * s.median, 100 * s.median_abs, 100 * s.p90_abs,
		100 * s.max_abs);
}

void valid_print_summary(FILE *out, const struct valid_set *set)
{
	size_t i, j, rows = 0, in = 0, nint = 0, ninside = 0;
	double *e;
	int k;

	for (i = 0; i < set->n; i++)
		for (j = 0; j < set->t[i].n; j++) {
			const struct valid_row *r = &set->t[i].rows[j];

			rows += r->scored != 0;
			in += r->in_sample && r->scored;
			if (r->scored && !isnan(r->lo)) {
				nint++;
				ninside += r->measured >= r->lo &&
					   r->measured <= r->hi;
			}
		}
	if (!(e = mem_alloc((rows + 1) * sizeof(*e))))
		return;
	fprintf(out, "== summary: error = predicted / measured - 1 (kernel, "
		"collective, measured, inference: of a rate, + = llmsim "
		"faster; training, latency: of a time, + = llmsim slower)\n");
	fprintf(out, "  %-24s %6s %9s %9s %8s %8s\n", "rows", "n", "median",
		"|median|", "p90", "max");
	for (k = 0; k < VK_COUNT; k++) {
		char what[40];

		if (!gather(set, k, 0, 0, e))
			continue;
		snprintf(what, sizeof(what), "%s", valid_kind_names[k]);
		summary_line(out, what, e, gather(set, k, 0, 0, e));
		snprintf(what, sizeof(what), "%s, independent",
			 valid_kind_names[k]);
		summary_line(out, what, e, gather(set, k, 1, 0, e));
	}
	summary_line(out, "overall (as speed)", e, gather(set, -1, 0, 1, e));
	summary_line(out, "overall, independent", e, gather(set, -1, 1, 1, e));
	fprintf(out, "  overall: errors as speed (+ = llmsim faster than "
		"measured); the headline is the independent line\n");
	fprintf(out, "  in-sample rows (their case was fitted on; not "
		"validation): %zu of %zu scored\n", in, rows);
	if (nint)
		fprintf(out, "  %zu of %zu measured values inside the predicted "
			"95%% interval (%.0f%%)\n", ninside, nint,
			100.0 * (double)ninside / (double)nint);
	mem_free(e);
}
