/*
 * calib_file.c - calibration files (configs/calibrated/SYSTEM.yaml):
 * written by `llmsim calibrate`, applied by a system that names them
 * (`calibration: FILE`: its `overlay:` merges onto the system,
 * config.c), read back for error bars (`llmsim run --json`, validate).
 *
 *   system: cpu-host
 *   fitted_on: [measure run 3, measure run 4]
 *   overlay:                      # nested system keys, values with units
 *     scale_up: {link: {sustained: 0.81}}
 *   params:
 *     - {key: scale_up.link.sustained, value: 0.81, stderr: 0.012,
 *        ci95: [0.786, 0.834], start: 0.77}       (SI values)
 *   correlation:
 *     - [1, -0.31]
 *     - [-0.31, 1]
 *   fit: {points: 26, ...}
 */
#include "calib.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/mem.h"
#include "base/units.h"
#include "config/cnode.h"
#include "config/schema.h"
#include "config/config.h"

/* The overlay: keys sorted, each printed under the sections it shares
 * with the previous one. */
static int cmp_key(const void *a, const void *b)
{
	return strcmp((*(const struct calib_param *const *)a)->key,
		      (*(const struct calib_param *const *)b)->key);
}

static void write_overlay(FILE *f, const struct calib_problem *pb)
{
	const struct calib_param **s = mem_alloc((pb->npar + 1) * sizeof(*s));
	const char *prev = "";
	size_t i;

	if (!s)
		return;
	for (i = 0; i < pb->npar; i++)
		s[i] = &pb->par[i];
	qsort(s, pb->npar, sizeof(*s), cmp_key);
	fputs("overlay:\n", f);
	for (i = 0; i < pb->npar; i++) {
		const char *k = s[i]->key, *p = prev, *seg = k, *dot;
		int depth = 0, same = 1;
		char val[64];

		/* Sections of k, opening those not open for prev. */
		while ((dot = strchr(seg, '.'))) {
			size_t len = (size_t)(dot - seg);

			same = same && strncmp(p, seg, len) == 0 && p[len] == '.';
			if (!same)
				fprintf(f, "%*s%.*s:\n", 2 * (depth + 1), "",
					(int)len, seg);
			if (same)
				p += len + 1;
			seg = dot + 1;
			depth++;
		}
		calib_value_exact(s[i], s[i]->value, val, sizeof(val));
		fprintf(f, "%*s%s: %s\n", 2 * (depth + 1), "", seg, val);
		prev = k;
	}
	mem_free(s);
}

/* s in a comment line: a byte YAML reads as a line break or a control
 * character (a newline in a database's path) as '?', so the comment
 * stays one line and the file loads. */
static void comment_text(FILE *f, const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++) {
		if (p[0] == 0xc2 && p[1] == 0x85) {		/* NEL */
			p++;
			fputc('?', f);
		} else if (p[0] == 0xe2 && p[1] == 0x80 &&
			   (p[2] == 0xa8 || p[2] == 0xa9)) {	/* LS, PS */
			p += 2;
			fputc('?', f);
		} else {
			fputc(*p < 0x20 || *p == 0x7f ? '?' : *p, f);
		}
	}
}

int calib_file_write(const char *path, const struct calib_problem *pb,
		     const struct calib_result *res, const char *db,
		     const char *const *runs, size_t nruns,
		     const char *version, struct diag *d)
{
	FILE *f = fopen(path, "w");
	size_t i, j, k = pb->npar;

	if (!f) {
		diag_error(d, path, 0, 0, "cannot write: %s", strerror(errno));
		return -1;
	}
	fprintf(f, "# Written by `llmsim calibrate` (llmsim %s) from %zu "
		"measured points\n# of ", version, pb->npts);
	for (i = 0; i < nruns; i++) {
		fputs(i ? ", " : "", f);
		comment_text(f, runs[i]);
	}
	fputs(" (", f);
	comment_text(f, db);
	fputs("). A system applies it with\n#   calibration: ", f);
	comment_text(f, path);
	fputs("\n# (its overlay merges onto the system; its covariance gives "
	      "predictions\n# error bars). Values in SI units; intervals are "
	      "95%.\n", f);
	/* each a YAML string that reads back as itself (a database path
	 * with ", " or "]" in it ended the flow list there: the file did
	 * not load) */
	fputs("system: ", f);
	schema_print_string(f, pb->system);
	fputs("\nfitted_on: [", f);
	for (i = 0; i < nruns; i++) {
		fputs(i ? ", " : "", f);
		schema_print_string(f, runs[i]);
	}
	fputs("]\n", f);
	/* The points' scatter about the fit (ln ratio, per dof): what a
	 * prediction interval for one more measurement adds. */
	fprintf(f, "residual_sigma_ln: %.6g\n", res->dof ? res->rms_after *
		sqrt((double)pb->npts / (double)res->dof) : 0.0);
	write_overlay(f, pb);
	fputs("params:\n", f);
	for (i = 0; i < k; i++) {
		const struct calib_param *p = &pb->par[i];

		char v[32], e[32], lo[32], hi[32], st[32];

		/* SI numbers that read back (strtod) bit for bit. */
		fprintf(f, "  - {key: %s, value: %s, stderr: %s, ci95: "
			"[%s, %s], start: %s}\n", p->key,
			units_format_number(v, sizeof(v), p->value),
			units_format_number(e, sizeof(e), p->stderr_),
			units_format_number(lo, sizeof(lo), p->ci_lo),
			units_format_number(hi, sizeof(hi), p->ci_hi),
			units_format_number(st, sizeof(st), p->start));
	}
	fputs("correlation:\n", f);
	for (i = 0; i < k; i++) {
		fputs("  - [", f);
		for (j = 0; j < k; j++)
			fprintf(f, "%s%.6f", j ? ", " : "", res->corr[i * k + j]);
		fputs("]\n", f);
	}
	fprintf(f, "fit: {points: %zu, dof: %zu, iterations: %d, "
		"rms_ln_before: %.6g, rms_ln_after: %.6g, "
		"median_abs_error_before: %.6g, median_abs_error_after: %.6g",
		pb->npts, res->dof, res->iters, res->rms_before, res->rms_after,
		res->med_before, res->med_after);
	if (res->folds)
		fprintf(f, ", cv_folds: %d, cv_median_abs_error: %.6g, "
			"cv_median_abs_error_before: %.6g", res->folds,
			res->cv_med, res->cv_med_before);
	fputs("}\n", f);
	if (fclose(f) != 0) {
		diag_error(d, path, 0, 0, "cannot write: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- reading back --------------------------------------------------- */

/* How far two printings of one correlation may differ: the writer's
 * %.6f rounds each to 5e-7. */
#define CORR_TEXT_TOL 1e-6

static double num(const struct cnode *m, const char *key)
{
	const struct cnode *v = cnode_get(m, key);
	char *end;
	double x;

	if (!v || v->kind != CNODE_SCALAR)
		return NAN;
	x = strtod(v->text, &end);
	return end != v->text && *end == '\0' ? x : NAN;
}

static int bad(struct diag *d, const struct cnode *n, const char *what)
{
	diag_error(d, n->file, n->line, n->col, "%s", what);
	return -1;
}

static int read_params(struct config_ctx *cx, const struct cnode *ps,
		       struct calib_file *f)
{
	size_t i, j;

	f->npar = ps->nitems;
	f->par = arena_alloc(cx->arena, (f->npar + 1) * sizeof(*f->par));
	if (!f->par) {
		diag_oom(cx->diag);
		return -1;
	}
	for (i = 0; i < f->npar; i++) {
		const struct cnode *m = ps->items[i], *k = cnode_get(m, "key");
		struct calib_param *p = &f->par[i];

		memset(p, 0, sizeof(*p));
		if (!k || k->kind != CNODE_SCALAR)
			return bad(cx->diag, m, "params: expected {key, value, "
				   "stderr, ...}");
		p->key = k->text;
		/* one parameter a key (llmsim calibrate before round 47
		 * wrote a key given twice twice, its overlay the unfitted
		 * copy's start) */
		for (j = 0; j < i; j++)
			if (strcmp(f->par[j].key, p->key) == 0)
				return bad(cx->diag, k, "params: a key given "
					   "twice (refit it, naming it once)");
		p->value = num(m, "value");
		p->stderr_ = num(m, "stderr");
		p->start = num(m, "start");
		/* an infinite one gave a zero-width band (calib_band), and
		 * one whose square (the variance, Sigma's diagonal) is not a
		 * double (1e300) a band of [0, inf] */
		if (!isfinite(p->value) || !(p->stderr_ >= 0) ||
		    !isfinite(p->stderr_ * p->stderr_))
			return bad(cx->diag, m, "params: expected a value and a "
				   "finite standard error >= 0 (and a finite "
				   "variance, its square)");
		{
			char why[256];
			double v = p->value, e = p->stderr_, st = p->start;

			if (calib_param_kind(p, why, sizeof(why)) != 0)
				return bad(cx->diag, k, why);
			p->value = v;
			p->stderr_ = e;
			p->start = st;
		}
	}
	return 0;
}

/* Same as the writer prints them (%.6f of one symmetric covariance), or
 * both undefined (nan). */
static int same_corr(double a, double b)
{
	return (isnan(a) && isnan(b)) || fabs(a - b) <= CORR_TEXT_TOL;
}

/* A correlation matrix is symmetric with 1 on its diagonal (nan where a
 * parameter was not determined): any other gives calib_sigma a variance
 * g^T Sigma g that may be negative, which it clamps to a zero-width band.
 * 0, or -1 after reporting at the element. */
static int check_corr(struct config_ctx *cx, const struct cnode *c,
		      const struct calib_file *f)
{
	size_t k = f->npar, i, j;

	for (i = 0; i < k; i++)
		for (j = 0; j <= i; j++) {
			const struct cnode *v = c->items[i]->items[j];
			double x = f->corr[i * k + j];

			if (i == j && !isnan(x) && !same_corr(x, 1))
				return bad(cx->diag, v, "correlation: expected "
					   "1 on the diagonal (or nan: a "
					   "parameter not determined)");
			if (i != j && !same_corr(x, f->corr[j * k + i]))
				return bad(cx->diag, v, "correlation: expected "
					   "a symmetric matrix: row i, column j "
					   "equal to row j, column i");
		}
	return 0;
}

static int read_corr(struct config_ctx *cx, const struct cnode *c,
		     struct calib_file *f)
{
	size_t k = f->npar, i, j;

	f->corr = arena_alloc(cx->arena, (k * k + 1) * sizeof(double));
	if (!f->corr) {
		diag_oom(cx->diag);
		return -1;
	}
	for (i = 0; i < k; i++)
		for (j = 0; j < k; j++)
			f->corr[i * k + j] = i == j;
	if (!c)
		return 0;
	if (c->kind != CNODE_SEQ || c->nitems != k)
		return bad(cx->diag, c, "correlation: expected one row per "
			   "parameter");
	for (i = 0; i < k; i++) {
		const struct cnode *row = c->items[i];

		if (row->kind != CNODE_SEQ || row->nitems != k)
			return bad(cx->diag, row, "correlation: expected one "
				   "number per parameter");
		for (j = 0; j < k; j++) {
			/* atof took a mapping's missing text (a crash) and
			 * 'x' as 0; nan stays (the writer prints an
			 * undefined correlation so) */
			const struct cnode *v = row->items[j];
			char *end = NULL;
			double x = v->kind == CNODE_SCALAR ?
				   strtod(v->text, &end) : NAN;

			if (!end || end == v->text || *end != '\0' ||
			    x < -1 || x > 1)
				return bad(cx->diag, v, "correlation: expected "
					   "a number from -1 to 1");
			f->corr[i * k + j] = x;
		}
	}
	return check_corr(cx, c, f);
}

static int read_fitted(struct config_ctx *cx, const struct cnode *v,
		       struct calib_file *f)
{
	size_t i;

	if (!v || v->kind != CNODE_SEQ)
		return 0;
	f->fitted_on = arena_alloc(cx->arena, (v->nitems + 1) *
				   sizeof(*f->fitted_on));
	if (!f->fitted_on) {
		diag_oom(cx->diag);
		return -1;
	}
	for (i = 0; i < v->nitems; i++)
		if (v->items[i]->kind == CNODE_SCALAR)
			f->fitted_on[f->nfitted++] = v->items[i]->text;
	return 0;
}

int calib_file_load(struct config_ctx *cx, const char *path,
		    struct calib_file *f)
{
	const struct cnode *doc = cnode_load_yaml(cx->arena, path, cx->diag);
	const struct cnode *ps, *sys;

	memset(f, 0, sizeof(*f));
	f->path = path;
	if (!doc)
		return -1;
	ps = cnode_get(doc, "params");
	sys = cnode_get(doc, "system");
	f->system = sys && sys->kind == CNODE_SCALAR ? sys->text : "";
	f->residual_ln = num(doc, "residual_sigma_ln");
	if (!(f->residual_ln >= 0))
		f->residual_ln = 0;
	if (!ps || ps->kind != CNODE_SEQ)
		return bad(cx->diag, doc, "expected 'params:' (a file `llmsim "
			   "calibrate` writes)");
	if (read_fitted(cx, cnode_get(doc, "fitted_on"), f) != 0)
		return -1;
	if (read_params(cx, ps, f) != 0)
		return -1;
	return read_corr(cx, cnode_get(doc, "correlation"), f);
}

double calib_sigma(const struct calib_file *f, const double *g)
{
	double v = 0;
	size_t i, j, k = f->npar;

	for (i = 0; i < k; i++)
		for (j = 0; j < k; j++)
			v += g[i] * g[j] * f->par[i].stderr_ * f->par[j].stderr_ *
			     f->corr[i * k + j];
	return sqrt(v > 0 ? v : 0);
}

/* "a.b" and "a.b.c": one a dotted prefix of the other (or equal). */
static int key_nests(const char *a, size_t na, const char *b)
{
	size_t nb = strlen(b), n = na < nb ? na : nb;

	return strncmp(a, b, n) == 0 &&
	       (na == nb || (na < nb ? b[na] : a[nb]) == '.');
}

const struct calib_param *calib_file_set_names(const struct calib_file *f,
					       const char *prefix,
					       const char *set)
{
	const char *eq = strchr(set, '='), *k = set;
	size_t pl = strlen(prefix), n, i;

	if (!eq)
		return NULL;
	while (*k == ' ' || *k == '\t')
		k++;
	if (pl && strncmp(k, prefix, pl) == 0)
		k += pl;
	else if (pl)
		return NULL;	/* not under the system */
	n = (size_t)(eq - k);
	while (n && (k[n - 1] == ' ' || k[n - 1] == '\t'))
		n--;
	for (i = 0; n && i < f->npar; i++)
		if (key_nests(k, n, f->par[i].key))
			return &f->par[i];
	return NULL;
}
