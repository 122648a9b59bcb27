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
 * Validation. Every row of v_validation: predicted time against measured
 * time on log-log axes with the y = x line; the band is the tolerance the
 * rows were validated with (the widest one, when they differ), so points
 * outside it are the failures.
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
	double tol;			/* validation: widest tolerance, fraction */
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
	if (n > 3 && v[3].type != STORE_NULL)
		s->tol = fmax(s->tol, v[3].num);
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

static const char *dup(struct rep *R, const struct store_val *v, int *oom)
{
	const char *s;

	if (v->type == STORE_TEXT)
		s = arena_strdup(R->a, v->text);
	else if (v->type == STORE_INT)
		s = arena_printf(R->a, "%lld", (long long)v->i);
	else
		s = arena_strdup(R->a, "");
	if (!s)
		*oom = 1;
	return s ? s : "";
}

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
	p->system = dup(g->R, &v[0], &g->oom);
	p->op = dup(g->R, &v[1], &g->oom);
	p->ranks = dup(g->R, &v[2], &g->oom);
	p->type = dup(g->R, &v[3], &g->oom);
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
	struct xys pred = { R, NULL, 0, 0, 0, 0 }, meas = pred;
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

int rep_validation(struct rep *R)
{
	static const char *names[] = { "point", "y = x", "tolerance band" };
	static const char *colors[3];
	struct xys s = { R, NULL, 0, 0, 0, 0 };
	double lo = INFINITY, hi = 0, yhi = 0, xs[2], ylo[2], yup[2];
	struct svg_plot p;
	char note[160];
	size_t i;

	rep_heading(R, "Predicted against measured", "Every validated point "
		    "(`llmsim validate`): time predicted against time "
		    "measured.");
	if (!rep_has(R, "v_validation")) {
		fprintf(R->out, "<p class=\"empty\">No validation results in "
			"this database.</p>\n");
		return 0;
	}
	if (rep_select(R, "SELECT measured_s, predicted_s, printf('%s: "
		       "measured %.4g s, predicted %.4g s (%+.1f %%)', "
		       "coalesce(name, '?'), measured_s, predicted_s, "
		       "error_pct), tolerance FROM v_validation", NULL, 0,
		       add_xy, &s) != 0)
		return -1;
	if (s.oom) {
		diag_oom(R->d);
		return -1;
	}
	if (s.n == 0) {
		fprintf(R->out, "<p class=\"empty\">No validation results in "
			"this database.</p>\n");
		return 0;
	}
	for (i = 0; i < s.n; i++) {
		lo = fmin(lo, fmin(s.v[i].x, s.v[i].y));
		hi = fmax(hi, fmax(s.v[i].x, s.v[i].y));
	}
	(void)yhi;
	svg_plot_init(&p, R->out, 640, 560);
	p.x.scale = p.y.scale = SVG_LOG10;
	p.x.label = "measured time (s)";
	p.y.label = "predicted time (s)";
	svg_axis_fit(&p.x, lo, hi, 0);
	p.y.lo = p.x.lo;
	svg_axis_fit(&p.y, lo, hi, 0);
	svg_open(&p, rep_fig_id(R, "validation"), "Predicted against measured "
		 "time");
	svg_frame(&p);
	xs[0] = p.x.lo;
	xs[1] = p.x.hi;
	ylo[0] = xs[0] * (1 - s.tol);
	ylo[1] = xs[1] * (1 - s.tol);
	yup[0] = xs[0] * (1 + s.tol);
	yup[1] = xs[1] * (1 + s.tol);
	colors[0] = svg_color(0);
	colors[1] = "#666666";
	colors[2] = "#9ecae1";
	svg_band(&p, xs, ylo, yup, 2, colors[2], 0.45);
	svg_line(&p, xs, xs, 2, colors[1], 1);
	for (i = 0; i < s.n; i++)
		svg_marker(&p, s.v[i].x, s.v[i].y, colors[0], s.v[i].tip);
	svg_legend(&p, names, colors, 3);
	snprintf(note, sizeof(note), "Band: +/- %.0f %% (the tolerance of the "
		 "validation). Points above the line are over-predicted.",
		 100 * s.tol);
	svg_close(&p, note);
	R->plots++;
	return 0;
}
