/*
 * report_coll.c - the collectives section (bus bandwidth against message
 * size, predicted and, where the database holds them, measured) and the
 * validation section (predicted against measured time).
 *
 * Collectives. One plot per (system, op, ranks, type) that `llmsim
 * collective` predicted, the latest run of each, at most
 * REPORT_MAX_COLL_PLOTS; sizes on a log2 axis, busbw in GB/s (10^9 B/s,
 * as rccl-tests print it). Measured points come from v_measurements
 * (same op, ranks and type) when that view exists.
 *
 * Validation. The rows of the latest `llmsim validate` (v_validation),
 * one log-log plot per unit (GB/s, TFLOP/s, TB/s, s): measured on x,
 * predicted on y, the y = x line with bands of +/-10 % and +/-25 %, and
 * the prediction's 95 % interval as a bar where the system is
 * calibrated.
 */
#include "report_impl.h"

#include <math.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"

struct xy {
	double x, y;
	const char *tip;
};

struct xys {
	struct rep *R;
	struct xy *v;
	size_t n, cap;
	int oom;
};

static int add_xy(void *ctx, int n, const char *const *names,
		  const struct store_val *v)
{
	struct xys *s = ctx;
	struct xy *p;

	(void)names;
	if (arena_grow(s->R->a, (void **)&s->v, &s->cap, s->n + 1,
		       sizeof(*s->v)) != 0) {
		s->oom = 1;
		return 1;
	}
	p = &s->v[s->n];
	p->x = v[0].num;
	p->y = v[1].num;
	p->tip = n > 2 && v[2].text ? arena_strdup(s->R->a, v[2].text) : "";
	if (!p->tip) {
		s->oom = 1;
		return 1;
	}
	if (v[0].type != STORE_NULL && v[1].type != STORE_NULL)
		s->n++;
	return 0;
}

/* One (system, op, ranks, type) group to plot. */
struct group {
	const char *system, *op, *type, *ranks;
	int64_t run_id;
};

struct groups {
	struct rep *R;
	struct group *v;
	size_t n, cap;
	int oom;
};

static int add_group(void *ctx, int n, const char *const *names,
		     const struct store_val *v)
{
	struct groups *g = ctx;
	struct group *p;

	(void)n;
	(void)names;
	if (arena_grow(g->R->a, (void **)&g->v, &g->cap, g->n + 1,
		       sizeof(*g->v)) != 0) {
		g->oom = 1;
		return 1;
	}
	p = &g->v[g->n++];
	p->system = rep_text(g->R, &v[0], &g->oom);
	p->op = rep_text(g->R, &v[1], &g->oom);
	p->ranks = rep_text(g->R, &v[2], &g->oom);
	p->type = rep_text(g->R, &v[3], &g->oom);
	p->run_id = v[4].i;
	return g->oom;
}

static void range(const struct xys *s, double *xlo, double *xhi,
		  double *yhi)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		*xlo = fmin(*xlo, s->v[i].x);
		*xhi = fmax(*xhi, s->v[i].x);
		*yhi = fmax(*yhi, s->v[i].y);
	}
}

static void series(struct svg_plot *p, const struct xys *s, const char *color,
		   int line)
{
	double *x = arena_alloc(s->R->a, (s->n + 1) * sizeof(double));
	double *y = arena_alloc(s->R->a, (s->n + 1) * sizeof(double));
	size_t i;

	for (i = 0; i < s->n; i++) {
		svg_marker(p, s->v[i].x, s->v[i].y, color, s->v[i].tip);
		if (x && y) {
			x[i] = s->v[i].x;
			y[i] = s->v[i].y;
		}
	}
	if (line && x && y)
		svg_line(p, x, y, s->n, color, 0);
}

static int coll_plot(struct rep *R, const struct group *g, int measured)
{
	static const char *names[] = { "predicted (llmsim)", "measured" };
	static const char *colors[2];
	const char *p[] = { g->system, g->op, g->ranks, g->type };
	char rid[32], title[256];
	const char *rp[] = { rid };
	struct xys pred = { R, NULL, 0, 0, 0 }, meas = pred;
	double xlo = INFINITY, xhi = 0, yhi = 0;
	struct svg_plot pl;

	colors[0] = svg_color(0);
	colors[1] = svg_color(5);
	snprintf(rid, sizeof(rid), "%lld", (long long)g->run_id);
	if (rep_select(R, "SELECT size_B, busbw_GBps, printf('%s %d ranks, "
		       "%s: %.0f B, %.4g us, busbw %.4g GB/s (%s, %s)', op, "
		       "ranks, type, size_B, time_us, busbw_GBps, "
		       "coalesce(algorithm, '?'), coalesce(protocol, '?')) "
		       "FROM v_collectives WHERE run_id = ?1 ORDER BY idx",
		       rp, 1, add_xy, &pred) != 0)
		return -1;
	if (measured && rep_select(R, "SELECT size_B, busbw_GBps, printf("
			       "'measured %s %d ranks: %.0f B, %.4g us, busbw "
			       "%.4g GB/s', op, ranks, size_B, time_us, "
			       "busbw_GBps) FROM v_measurements WHERE "
			       "system = ?1 AND op = ?2 AND ranks = CAST(?3 AS "
			       "INTEGER) AND "
			       "type = ?4 ORDER BY size_B", p, 4, add_xy,
			       &meas) != 0)
		return -1;
	if (pred.oom || meas.oom) {
		diag_oom(R->d);
		return -1;
	}
	range(&pred, &xlo, &xhi, &yhi);
	range(&meas, &xlo, &xhi, &yhi);
	if (pred.n == 0)
		return 0;
	svg_plot_init(&pl, R->out, 980, 340);
	pl.x.scale = SVG_LOG2;
	pl.x.fmt = SVG_FMT_BYTES2;
	pl.x.label = "message size (B, binary prefixes)";
	pl.y.label = "bus bandwidth (GB/s, 10^9 B/s)";
	svg_axis_fit(&pl.x, xlo, xhi, 0);
	svg_axis_fit(&pl.y, 0, yhi, 1);
	snprintf(title, sizeof(title), "%s on %s: %s ranks, %s", g->op,
		 g->system, g->ranks, g->type);
	svg_open(&pl, rep_fig_id(R, "coll"), title);
	svg_frame(&pl);
	series(&pl, &pred, colors[0], 1);
	series(&pl, &meas, colors[1], 1);
	svg_legend(&pl, names, colors, meas.n ? 2 : 1);
	svg_close(&pl, meas.n ? NULL : "No measurement of this collective in "
		  "the database.");
	R->plots++;
	return 0;
}

int rep_collectives(struct rep *R)
{
	static char sql[512];
	struct groups g = { R, NULL, 0, 0, 0 };
	int measured = rep_has(R, "v_measurements");
	size_t i;

	rep_heading(R, "Collectives", "Bus bandwidth against message size "
		    "(`llmsim collective`), with measurements where the "
		    "database has them.");
	snprintf(sql, sizeof(sql), "SELECT system, op, ranks, type, "
		 "max(run_id) FROM v_collectives GROUP BY system, op, ranks, "
		 "type ORDER BY max(run_id) DESC LIMIT %d",
		 REPORT_MAX_COLL_PLOTS);
	if (rep_select(R, sql, NULL, 0, add_group, &g) != 0)
		return -1;
	if (g.oom) {
		diag_oom(R->d);
		return -1;
	}
	if (g.n == 0)
		fprintf(R->out, "<p class=\"empty\">No collective results in "
			"this database.</p>\n");
	for (i = g.n; i-- > 0;)
		if (coll_plot(R, &g.v[i], measured) != 0)
			return -1;
	return 0;
}

/* ---- predicted against measured -------------------------------------- */

/* One validated point (a row of v_validation). */
struct vpt {
	const char *unit, *kind, *tip;
	double measured, predicted, lo, hi;	/* in unit; lo/hi NaN: none */
};

struct vpts {
	struct rep *R;
	struct vpt *v;
	size_t n, cap;
	int oom;
};

static int add_vpt(void *ctx, int n, const char *const *names,
		   const struct store_val *v)
{
	struct vpts *s = ctx;
	struct vpt *p;

	(void)names;
	if (n < 7 || v[1].type == STORE_NULL || v[2].type == STORE_NULL ||
	    !(v[1].num > 0) || !(v[2].num > 0))
		return 0;	/* a log plot shows positive values only */
	if (arena_grow(s->R->a, (void **)&s->v, &s->cap, s->n + 1,
		       sizeof(*s->v)) != 0) {
		s->oom = 1;
		return 1;
	}
	p = &s->v[s->n];
	p->unit = arena_strdup(s->R->a, v[0].text ? v[0].text : "?");
	p->measured = v[1].num;
	p->predicted = v[2].num;
	p->tip = arena_strdup(s->R->a, v[3].text ? v[3].text : "");
	p->kind = arena_strdup(s->R->a, v[4].text ? v[4].text : "?");
	p->lo = v[5].type == STORE_NULL ? NAN : v[5].num;
	p->hi = v[6].type == STORE_NULL ? NAN : v[6].num;
	if (!p->unit || !p->tip || !p->kind) {
		s->oom = 1;
		return 1;
	}
	s->n++;
	return 0;
}

/* The validation kinds in a fixed order, for colours. */
static const char *const vkinds[] = {
	"kernel", "collective", "training", "measured",
};
#define NVKINDS (sizeof(vkinds) / sizeof(vkinds[0]))

static size_t vkind(const char *k)
{
	size_t i;

	for (i = 0; i < NVKINDS; i++)
		if (strcmp(vkinds[i], k) == 0)
			return i;
	return NVKINDS;
}

/* The two bands around y = x: +/-10 % and +/-25 %. */
static void bands(struct svg_plot *p)
{
	static const double tol[] = { 0.25, 0.10 };
	double xs[2] = { p->x.lo, p->x.hi }, lo[2], hi[2];
	size_t i, k;

	for (i = 0; i < 2; i++) {
		for (k = 0; k < 2; k++) {
			lo[k] = xs[k] * (1 - tol[i]);
			hi[k] = xs[k] * (1 + tol[i]);
		}
		svg_band(p, xs, lo, hi, 2, "#9ecae1", i ? 0.45 : 0.25);
	}
	svg_line(p, xs, xs, 2, "#666666", 1);
}

/* One log-log plot of the points of one unit. */
static void unit_plot(struct rep *R, const struct vpts *s, const char *unit)
{
	static const char *names[NVKINDS + 2];
	static const char *colors[NVKINDS + 2];
	char xl[64], yl[64], title[128];
	double lo = INFINITY, hi = 0, ys[2], xs[2];
	size_t i, n = 0, used[NVKINDS + 1] = { 0 };
	struct svg_plot p;

	for (i = 0; i < s->n; i++) {
		if (strcmp(s->v[i].unit, unit) != 0)
			continue;
		lo = fmin(lo, fmin(s->v[i].measured, s->v[i].predicted));
		hi = fmax(hi, fmax(s->v[i].measured, s->v[i].predicted));
		used[vkind(s->v[i].kind)] = 1;
	}
	svg_plot_init(&p, R->out, 640, 560);
	p.x.scale = p.y.scale = SVG_LOG10;
	snprintf(xl, sizeof(xl), "measured (%s)", unit);
	snprintf(yl, sizeof(yl), "predicted (%s)", unit);
	p.x.label = xl;
	p.y.label = yl;
	svg_axis_fit(&p.x, lo, hi, 0);
	svg_axis_fit(&p.y, lo, hi, 0);
	snprintf(title, sizeof(title), "Predicted against measured (%s)", unit);
	svg_open(&p, rep_fig_id(R, "validation"), title);
	svg_frame(&p);
	bands(&p);
	for (i = 0; i < s->n; i++) {
		const struct vpt *v = &s->v[i];

		if (strcmp(v->unit, unit) != 0)
			continue;
		if (isfinite(v->lo) && isfinite(v->hi) && v->lo > 0) {
			xs[0] = xs[1] = v->measured;
			ys[0] = v->lo;
			ys[1] = v->hi;
			svg_line(&p, xs, ys, 2, svg_color(vkind(v->kind)), 0);
		}
		svg_marker(&p, v->measured, v->predicted,
			   svg_color(vkind(v->kind)), v->tip);
	}
	for (i = 0; i <= NVKINDS; i++)
		if (used[i]) {
			names[n] = i < NVKINDS ? vkinds[i] : "other";
			colors[n++] = svg_color(i);
		}
	names[n] = "y = x, bands +/-10 % and +/-25 %";
	colors[n++] = "#9ecae1";
	svg_legend(&p, names, colors, n);
	svg_close(&p, "The latest `llmsim validate`: each point a validated row; "
		  "a vertical bar is the prediction's 95 % interval when the "
		  "system is calibrated. Above the line llmsim predicts more "
		  "(a longer time, or a higher rate) than was measured.");
	R->plots++;
}

int rep_validation(struct rep *R)
{
	struct vpts s = { R, NULL, 0, 0, 0 };
	const char *units[16];
	size_t i, k, nu = 0;

	rep_heading(R, "Predicted against measured", "Every validated point "
		    "of the latest `llmsim validate`, one plot per unit.");
	if (!rep_has(R, "v_validation")) {
		fprintf(R->out, "<p class=\"empty\">No validation results in "
			"this database.</p>\n");
		return 0;
	}
	if (rep_select(R, "SELECT unit, measured, predicted, kind || ' ' || "
		       "table_id || ' ' || case_id || printf(': measured %.4g, "
		       "predicted %.4g %s (%+.1f %%)', measured, predicted, unit, "
		       "100 * error), kind, lo, hi FROM v_validation WHERE run_id "
		       "= (SELECT max(run_id) FROM v_validation) ORDER BY idx",
		       NULL, 0, add_vpt, &s) != 0)
		return -1;
	if (s.oom) {
		diag_oom(R->d);
		return -1;
	}
	for (i = 0; i < s.n; i++) {
		for (k = 0; k < nu && strcmp(units[k], s.v[i].unit); k++)
			;
		if (k == nu && nu < 16)
			units[nu++] = s.v[i].unit;
	}
	if (nu == 0)
		fprintf(R->out, "<p class=\"empty\">No validation results in "
			"this database.</p>\n");
	for (k = 0; k < nu; k++)
		unit_plot(R, &s, units[k]);
	return 0;
}
