/*
 * report_sweep.c - one section per sweep: step time and throughput per
 * GPU along the swept axes, a heat map over two axes, the breakdown of
 * each point, and the points that did not run with their reason.
 *
 * Curves. The x axis is the numeric axis with the most distinct values
 * (a log2 scale when its values span 8x or more), else the axis with
 * the most values as categories. Every combination of the other axes'
 * values is one series, in order of first appearance, at most
 * REPORT_MAX_SERIES of them (the page says when some are left out).
 * A series is known by all its values, however long (the legend shows
 * them shortened); an axis whose value follows from x's (x's partner in
 * a zip group: system.nodes beside parallelism.dp) is not a series'
 * value, or each of its points would be a series of its own.
 *
 * Heat map. Over the x axis and the other axis with the most values
 * that does not follow x's (none: no heat map);
 * a cell is the fastest step among the points with those two values
 * (any values of the remaining axes: the tooltip names the point).
 * Brighter is faster, on a log scale between the fastest and slowest
 * cell. A cell whose points all failed is grey.
 */
#include "report_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "base/utf8.h"

/* Longest legend entry (characters; the series itself is whole). */
#define REPORT_LEGEND_CHARS 120

struct val {
	const char *text;		/* as shown */
	double x;			/* its number, when numeric */
	int numeric;
};

struct point {
	int64_t idx;
	int ok;
	const char *status, *reason;
	struct val *v;			/* [naxes] */
	struct rep_run run;		/* when ok */
	const char *series;		/* its curves' series (curves()) */
	int drawn;			/* its series is drawn */
};

/* Distinct values of one axis, sorted when all are numbers. */
struct axis {
	const char *key;
	struct val *vals;
	size_t n, cap;
	int numeric;			/* every value is a number */
};

struct sweep_data {
	struct rep *R;
	const char *name;
	struct axis *ax;
	size_t nax, axcap;
	struct point *pt;
	size_t npt, ptcap;
	unsigned char *follows;		/* [nax]: the axis follows x's value */
	int oom;
};

/* ---- reading -------------------------------------------------------- */

static int add_axis(void *ctx, int n, const char *const *names,
		    const struct store_val *v)
{
	struct sweep_data *s = ctx;

	(void)n;
	(void)names;
	if (arena_grow(s->R->a, (void **)&s->ax, &s->axcap, s->nax + 1,
		       sizeof(*s->ax)) != 0 ||
	    !(s->ax[s->nax].key = arena_strdup(s->R->a, v[0].text ? v[0].text
							       : "?"))) {
		s->oom = 1;
		return 1;
	}
	s->ax[s->nax].numeric = 1;
	s->nax++;
	return 0;
}

static int read_val(struct rep *R, const cJSON *j, struct val *out)
{
	char *t;

	memset(out, 0, sizeof(*out));
	if (!j || cJSON_IsNull(j)) {
		out->text = "(base)";
		return 0;
	}
	if (cJSON_IsNumber(j)) {
		out->numeric = 1;
		out->x = j->valuedouble;
		out->text = arena_printf(R->a, "%.6g", j->valuedouble);
	} else if (cJSON_IsString(j)) {
		out->text = arena_strdup(R->a, j->valuestring);
	} else if (cJSON_IsBool(j)) {
		out->text = cJSON_IsTrue(j) ? "true" : "false";
	} else {
		t = cJSON_PrintUnformatted(j);
		out->text = t ? arena_strdup(R->a, t) : NULL;
		cJSON_free(t);
	}
	return out->text ? 0 : -1;
}

static int add_point(void *ctx, int n, const char *const *names,
		     const struct store_val *v)
{
	struct sweep_data *s = ctx;
	struct point *p;
	cJSON *axes;
	size_t k;
	int rc = 0;

	(void)names;
	if (arena_grow(s->R->a, (void **)&s->pt, &s->ptcap, s->npt + 1,
		       sizeof(*s->pt)) != 0)
		goto oom;
	p = &s->pt[s->npt];
	memset(p, 0, sizeof(*p));
	p->idx = v[0].i;
	p->status = arena_strdup(s->R->a, v[1].text ? v[1].text : "?");
	p->reason = v[2].text ? arena_strdup(s->R->a, v[2].text) : NULL;
	p->ok = p->status && strcmp(p->status, "ok") == 0;
	p->v = arena_alloc(s->R->a, (s->nax + 1) * sizeof(*p->v));
	axes = cJSON_Parse(v[3].text ? v[3].text : "{}");
	if (!p->status || !p->v || !axes) {
		cJSON_Delete(axes);
		goto oom;
	}
	for (k = 0; k < s->nax && rc == 0; k++)
		rc = read_val(s->R, cJSON_GetObjectItemCaseSensitive(axes,
					s->ax[k].key), &p->v[k]);
	cJSON_Delete(axes);
	if (rc != 0 || (p->ok && rep_run_read(s->R, n - 4, v + 4, &p->run)))
		goto oom;
	s->npt++;
	return 0;
oom:
	s->oom = 1;
	return 1;
}

static int by_x(const void *a, const void *b)
{
	const struct val *x = a, *y = b;

	return x->x < y->x ? -1 : x->x > y->x;
}

/* Index of value v among axis a's distinct values, or -1. */
static long val_index(const struct axis *a, const struct val *v)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (strcmp(a->vals[i].text, v->text) == 0)
			return (long)i;
	return -1;
}

/* Collect each axis's distinct values. 0 or -1 (OOM). */
static int distinct(struct sweep_data *s)
{
	size_t k, i;

	for (k = 0; k < s->nax; k++) {
		struct axis *a = &s->ax[k];

		for (i = 0; i < s->npt; i++) {
			if (val_index(a, &s->pt[i].v[k]) >= 0)
				continue;
			if (arena_grow(s->R->a, (void **)&a->vals, &a->cap,
				       a->n + 1, sizeof(*a->vals)) != 0)
				return -1;
			a->vals[a->n++] = s->pt[i].v[k];
			a->numeric &= s->pt[i].v[k].numeric;
		}
		if (a->numeric)
			qsort(a->vals, a->n, sizeof(*a->vals), by_x);
	}
	return 0;
}

/* ---- curves --------------------------------------------------------- */

/* The axis along x (see the file comment). */
static size_t pick_x(const struct sweep_data *s)
{
	size_t k, best = 0;
	int num = 0;

	for (k = 0; k < s->nax; k++) {
		int kn = s->ax[k].numeric && s->ax[k].n >= 2;

		if ((kn && !num) || (kn == num && s->ax[k].n > s->ax[best].n)) {
			best = k;
			num = kn;
		}
	}
	return best;
}

/* The values of point p on the axes other than xk (every axis for xk =
 * (size_t)-1) that take more than one value in the sweep (the others
 * say nothing) and do not follow xk's value: "key=value, ...", whole
 * (a series' identity); NULL when out of memory. */
static const char *series_of(struct sweep_data *s, const struct point *p,
			     size_t xk)
{
	const char *out = "";
	size_t k;

	for (k = 0; k < s->nax && out; k++)
		if (k != xk && s->ax[k].n > 1 &&
		    !(xk != (size_t)-1 && s->follows && s->follows[k]))
			out = arena_printf(s->R->a, "%s%s%s=%s", out,
					   *out ? ", " : "", s->ax[k].key,
					   p->v[k].text);
	return out && !*out ? "all points" : out;
}

/* Every varying axis's value of point p, for a tooltip or a table. */
static const char *values_of(struct sweep_data *s, const struct point *p)
{
	const char *v = series_of(s, p, (size_t)-1);

	return v ? v : "?";
}

/* Label text shortened to at most max characters (a legend entry, a
 * bar's label); text itself when that fails (out of memory). */
static const char *shorten(struct sweep_data *s, const char *text,
			   size_t max)
{
	size_t len = text ? strlen(text) : 0;
	const char *t;

	if (!text || max < 4 || utf8_chars(text, len) <= max)
		return text;
	/* the first max - 3 characters, cut between them (a cut by bytes
	 * could end inside one: the legend was not UTF-8) */
	t = arena_printf(s->R->a, "%.*s...", (int)utf8_prefix(text, len,
							      max - 3), text);
	return t ? t : text;
}

/* s->follows[k] = 1 when every two ok points with the same value on
 * axis xk have the same value on axis k (k != xk): a zip partner of
 * xk, or an axis of cases that set it with xk. 0 or -1 (OOM). */
static int mark_followers(struct sweep_data *s, size_t xk)
{
	long *seen = arena_alloc(s->R->a, (s->ax[xk].n + 1) * sizeof(*seen));
	size_t k, i;

	s->follows = arena_alloc(s->R->a, (s->nax + 1) * sizeof(*s->follows));
	if (!seen || !s->follows)
		return -1;
	for (k = 0; k < s->nax; k++) {
		s->follows[k] = k != xk;
		for (i = 0; i < s->ax[xk].n; i++)
			seen[i] = -1;
		for (i = 0; i < s->npt && s->follows[k]; i++) {
			const struct point *p = &s->pt[i];
			long cx = val_index(&s->ax[xk], &p->v[xk]);
			long cv = val_index(&s->ax[k], &p->v[k]);

			if (!p->ok || cx < 0)
				continue;
			if (seen[cx] == -1)
				seen[cx] = cv;
			else if (seen[cx] != cv)
				s->follows[k] = 0;
		}
	}
	return 0;
}

/* x position of point p on the curve plot. */
static double xpos(const struct sweep_data *s, size_t xk,
		   const struct point *p)
{
	if (s->ax[xk].numeric)
		return p->v[xk].x;
	return (double)val_index(&s->ax[xk], &p->v[xk]);
}

static void x_axis(const struct sweep_data *s, size_t xk,
		   struct svg_axis *x)
{
	const struct axis *a = &s->ax[xk];
	const char **cats;
	size_t i;

	x->label = a->key;
	if (a->numeric) {
		double lo = a->vals[0].x, hi = a->vals[a->n - 1].x;

		x->scale = lo > 0 && hi / lo >= 8 ? SVG_LOG2 : SVG_LINEAR;
		svg_axis_fit(x, lo, hi, 0);
		return;
	}
	cats = arena_alloc(s->R->a, (a->n + 1) * sizeof(*cats));
	for (i = 0; cats && i < a->n; i++)
		cats[i] = a->vals[i].text;
	x->scale = SVG_CATEGORY;
	x->cats = cats;
	x->ncats = cats ? a->n : 0;
	svg_axis_fit(x, 0, 0, 0);
}

/* y of point p: 0 step time (s), 1 throughput per GPU (tokens/s). */
static double metric(const struct point *p, int which)
{
	return which == 0 ? p->run.step_s : p->run.tokens_per_s_per_gpu;
}

static int cmp_dbl2(const void *a, const void *b)
{
	const double *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* One series' line and markers. */
static void draw_series(struct sweep_data *s, struct svg_plot *p, size_t xk,
			const char *series, int which, double per,
			const char *color)
{
	double *xy = arena_alloc(s->R->a, (s->npt + 1) * 2 * sizeof(double));
	double *xs = arena_alloc(s->R->a, (s->npt + 1) * sizeof(double));
	double *ys = arena_alloc(s->R->a, (s->npt + 1) * sizeof(double));
	char tip[512], t[32];
	size_t i, m = 0;

	if (!xy || !xs || !ys)
		return;
	for (i = 0; i < s->npt; i++) {
		struct point *pt = &s->pt[i];

		if (!pt->ok || strcmp(pt->series, series) != 0)
			continue;
		xy[2 * m] = xpos(s, xk, pt);
		xy[2 * m + 1] = metric(pt, which) * per;
		m++;
		snprintf(tip, sizeof(tip), "point %lld: %s\nstep %s, "
			 "%.4g tokens/s per GPU", (long long)pt->idx,
			 values_of(s, pt), rep_time(pt->run.step_s, t, sizeof(t)),
			 pt->run.tokens_per_s_per_gpu);
		svg_marker(p, xpos(s, xk, pt), metric(pt, which) * per, color,
			   tip);
	}
	qsort(xy, m, 2 * sizeof(double), cmp_dbl2);
	for (i = 0; i < m; i++) {
		xs[i] = xy[2 * i];
		ys[i] = xy[2 * i + 1];
	}
	svg_line(p, xs, ys, m, color, 0);
}

static void curve(struct sweep_data *s, size_t xk, int which,
		  const char **series, const char **labels, size_t nser,
		  const char **colors)
{
	struct svg_plot p;
	double lo = INFINITY, hi = 0, per = 1;
	char yl[96], title[256];
	size_t i;

	for (i = 0; i < s->npt; i++)
		if (s->pt[i].ok && s->pt[i].drawn) {
			lo = fmin(lo, metric(&s->pt[i], which));
			hi = fmax(hi, metric(&s->pt[i], which));
		}
	if (!(hi > 0))
		return;
	if (which == 0)
		snprintf(yl, sizeof(yl), "step time (%s)", rep_time_unit(hi, &per));
	else
		snprintf(yl, sizeof(yl), "throughput per GPU (tokens/s)");
	snprintf(title, sizeof(title), "%s: %s along %s", s->name,
		 which == 0 ? "step time" : "throughput per GPU", s->ax[xk].key);
	svg_plot_init(&p, s->R->out, 980, 360);
	x_axis(s, xk, &p.x);
	p.y.label = yl;
	svg_axis_fit(&p.y, 0, hi * per, 1);
	svg_open(&p, rep_fig_id(s->R, which == 0 ? "sweep-step" : "sweep-tput"),
		 title);
	svg_frame(&p);
	for (i = 0; i < nser; i++)
		draw_series(s, &p, xk, series[i], which, per, colors[i]);
	svg_legend(&p, labels, colors, nser);
	svg_close(&p, NULL);
	s->R->plots++;
}

/* Both curves; series are the other axes' value combinations. */
static int curves(struct sweep_data *s, size_t xk)
{
	const char **series = arena_alloc(s->R->a, (REPORT_MAX_SERIES + 1) *
					  sizeof(*series));
	const char **labels = arena_alloc(s->R->a, (REPORT_MAX_SERIES + 1) *
					  sizeof(*labels));
	const char **colors = arena_alloc(s->R->a, (REPORT_MAX_SERIES + 1) *
					  sizeof(*colors));
	const char **more = NULL;	/* the combinations not drawn */
	size_t i, j, n = 0, nmore = 0, morecap = 0;

	if (!series || !labels || !colors || mark_followers(s, xk) != 0)
		return -1;
	for (i = 0; i < s->npt; i++) {
		struct point *pt = &s->pt[i];

		if (!pt->ok)
			continue;
		if (!(pt->series = series_of(s, pt, xk)))
			return -1;
		for (j = 0; j < n && strcmp(series[j], pt->series) != 0; j++)
			;
		pt->drawn = j < n || n < REPORT_MAX_SERIES;
		if (j < n)
			continue;
		if (n == REPORT_MAX_SERIES) {	/* counted once each */
			for (j = 0; j < nmore && strcmp(more[j], pt->series);
			     j++)
				;
			if (j == nmore &&
			    (arena_grow(s->R->a, (void **)&more, &morecap,
					nmore + 1, sizeof(*more)) != 0))
				return -1;
			if (j == nmore)
				more[nmore++] = pt->series;
			continue;
		}
		colors[n] = svg_color(n);
		labels[n] = shorten(s, pt->series, REPORT_LEGEND_CHARS);
		series[n++] = pt->series;
	}
	if (n == 0)
		return 0;
	curve(s, xk, 0, series, labels, n, colors);
	curve(s, xk, 1, series, labels, n, colors);
	if (nmore)
		fprintf(s->R->out, "<p class=\"note\">%zu more combinations of "
			"the other axes are not drawn (at most %d series); the "
			"view v_sweep_points has them all.</p>\n", nmore,
			REPORT_MAX_SERIES);
	return 0;
}

/* ---- heat map ------------------------------------------------------- */

static const char **cat_names(struct rep *R, const struct axis *a)
{
	const char **c = arena_alloc(R->a, (a->n + 1) * sizeof(*c));
	size_t i;

	for (i = 0; c && i < a->n; i++)
		c[i] = a->vals[i].text;
	return c;
}

/* For each cell, the index of its fastest ok point (-1: none; -2: only
 * points that did not run). */
static long *best_cells(struct sweep_data *s, size_t xk, size_t yk)
{
	size_t nx = s->ax[xk].n, ny = s->ax[yk].n, i;
	long *best = arena_alloc(s->R->a, (nx * ny + 1) * sizeof(*best));

	for (i = 0; best && i < nx * ny; i++)
		best[i] = -1;
	for (i = 0; best && i < s->npt; i++) {
		const struct point *p = &s->pt[i];
		long cx = val_index(&s->ax[xk], &p->v[xk]);
		long cy = val_index(&s->ax[yk], &p->v[yk]);
		long *c = &best[(size_t)cy * nx + (size_t)cx];

		if (!p->ok) {
			if (*c == -1)
				*c = -2;
		} else if (*c < 0 || p->run.step_s < s->pt[*c].run.step_s) {
			*c = (long)i;
		}
	}
	return best;
}

static void heat(struct sweep_data *s, size_t xk, size_t yk)
{
	size_t nx = s->ax[xk].n, ny = s->ax[yk].n, i;
	long *best = best_cells(s, xk, yk);
	double lo = INFINITY, hi = 0, t;
	char tip[512], txt[32], col[8], title[256];
	struct svg_plot p;

	if (!best)
		return;
	for (i = 0; i < nx * ny; i++)
		if (best[i] >= 0) {
			lo = fmin(lo, s->pt[best[i]].run.step_s);
			hi = fmax(hi, s->pt[best[i]].run.step_s);
		}
	if (!(hi > 0))
		return;
	svg_plot_init(&p, s->R->out, 980, 80 + 30 * (int)ny);
	p.ml = 160;
	p.mt = 12;
	p.x.scale = p.y.scale = SVG_CATEGORY;
	p.x.cats = cat_names(s->R, &s->ax[xk]);
	p.y.cats = cat_names(s->R, &s->ax[yk]);
	p.x.ncats = p.x.cats ? nx : 0;
	p.y.ncats = p.y.cats ? ny : 0;
	p.x.label = s->ax[xk].key;
	p.y.label = s->ax[yk].key;
	svg_axis_fit(&p.x, 0, 0, 0);
	svg_axis_fit(&p.y, 0, 0, 0);
	snprintf(title, sizeof(title), "%s: fastest step time over %s and %s",
		 s->name, s->ax[xk].key, s->ax[yk].key);
	svg_open(&p, rep_fig_id(s->R, "sweep-heat"), title);
	svg_frame(&p);
	for (i = 0; i < nx * ny; i++) {
		const struct point *pt = best[i] >= 0 ? &s->pt[best[i]] : NULL;

		if (best[i] == -1)
			continue;
		if (!pt) {
			snprintf(tip, sizeof(tip), "%s=%s, %s=%s: no point ran "
				 "(invalid or failed)", s->ax[xk].key,
				 s->ax[xk].vals[i % nx].text, s->ax[yk].key,
				 s->ax[yk].vals[i / nx].text);
			svg_cell(&p, i % nx, i / nx, "#cccccc", "n/a", tip);
			continue;
		}
		t = hi > lo ? (log(hi) - log(pt->run.step_s)) /
			      (log(hi) - log(lo)) : 1;
		snprintf(tip, sizeof(tip), "point %lld: %s\nstep %s",
			 (long long)pt->idx, values_of(s, pt),
			 rep_time(pt->run.step_s, txt, sizeof(txt)));
		svg_cell(&p, i % nx, i / nx, svg_ramp(t, col),
			 rep_time(pt->run.step_s, txt, sizeof(txt)), tip);
	}
	svg_close(&p, "Brighter is faster (log scale from the slowest to the "
		  "fastest cell); grey: no point of the cell ran.");
	s->R->plots++;
}

/* ---- breakdown and failures ----------------------------------------- */

static int point_breakdown(struct sweep_data *s)
{
	struct rep_run *runs = arena_alloc(s->R->a, (s->npt + 1) *
					   sizeof(*runs));
	size_t i, n = 0;
	char title[256];

	if (!runs)
		return -1;
	for (i = 0; i < s->npt; i++) {
		if (!s->pt[i].ok)
			continue;
		runs[n] = s->pt[i].run;
		runs[n].label = arena_printf(s->R->a, "#%lld %s",
					     (long long)s->pt[i].idx,
					     shorten(s, values_of(s, &s->pt[i]),
						     60));
		if (!runs[n++].label)
			return -1;
	}
	if (n == 0 || n > REPORT_MAX_BARS)
		return 0;
	snprintf(title, sizeof(title), "%s: step time breakdown per point",
		 s->name);
	rep_breakdown_plot(s->R, runs, n, title);
	snprintf(title, sizeof(title), "%s: memory per GPU per point", s->name);
	rep_memory_plot(s->R, runs, n, title);
	return 0;
}

static void failures(struct sweep_data *s)
{
	size_t i, shown = 0, bad = 0;

	for (i = 0; i < s->npt; i++)
		bad += !s->pt[i].ok;
	if (bad == 0)
		return;
	fprintf(s->R->out, "<h3>Points that did not run (%zu)</h3>\n<table>"
		"<tr><th>point</th><th>values</th><th>status</th><th>reason"
		"</th></tr>\n", bad);
	for (i = 0; i < s->npt && shown < 20; i++) {
		if (s->pt[i].ok)
			continue;
		fprintf(s->R->out, "<tr><td>%lld</td><td>", (long long)s->pt[i].idx);
		svg_escape(s->R->out, values_of(s, &s->pt[i]));
		fprintf(s->R->out, "</td><td>");
		svg_escape(s->R->out, s->pt[i].status);
		fprintf(s->R->out, "</td><td><pre>");
		svg_escape(s->R->out, s->pt[i].reason ? s->pt[i].reason : "");
		fprintf(s->R->out, "</pre></td></tr>\n");
		shown++;
	}
	fprintf(s->R->out, "</table>\n");
	if (shown < bad)
		fprintf(s->R->out, "<p class=\"note\">%zu more in v_sweep_points."
			"</p>\n", bad - shown);
}

/* ---- one sweep, all sweeps ------------------------------------------ */

static int one_sweep(struct rep *R, const char *name)
{
	static char sql[1024];
	struct sweep_data s;
	const char *p[] = { name };
	size_t xk, yk, k, ok = 0, i;
	char para[256];

	memset(&s, 0, sizeof(s));
	s.R = R;
	s.name = name;
	if (rep_select(R, "SELECT key FROM sweep_axes WHERE sweep_id = "
		       "(SELECT id FROM sweeps WHERE name = ?1) ORDER BY pos",
		       p, 1, add_axis, &s) != 0)
		return -1;
	snprintf(sql, sizeof(sql), "SELECT idx, status, reason, axes_json, %s "
		 "FROM v_sweep_points WHERE sweep = ?1 ORDER BY idx",
		 REP_RUN_COLS);
	if (!s.oom && rep_select(R, sql, p, 1, add_point, &s) != 0)
		return -1;
	if (s.oom || distinct(&s) != 0) {
		diag_oom(R->d);
		return -1;
	}
	for (i = 0; i < s.npt; i++)
		ok += s.pt[i].ok ? 1u : 0u;
	snprintf(para, sizeof(para), "%zu points stored, %zu ran, %zu did not; "
		 "%zu axes.", s.npt, ok, s.npt - ok, s.nax);
	fprintf(R->out, "<h3>Sweep ");
	svg_escape(R->out, name);
	fprintf(R->out, "</h3>\n<p>");
	svg_escape(R->out, para);
	fprintf(R->out, "</p>\n");
	if (s.nax == 0 || s.npt == 0)
		return 0;
	xk = pick_x(&s);
	if (curves(&s, xk) != 0)
		goto oom;
	/* y: the other axis with the most values, not one that follows x
	 * (a zip partner would fill the diagonal only) */
	for (yk = xk, k = 0; k < s.nax; k++)
		if (k != xk && s.ax[k].n > 1 && !(s.follows && s.follows[k]) &&
		    (yk == xk || s.ax[k].n > s.ax[yk].n))
			yk = k;
	if (yk != xk)
		heat(&s, xk, yk);
	if (point_breakdown(&s) != 0)
		goto oom;
	failures(&s);
	return 0;
oom:
	diag_oom(R->d);
	return -1;
}

struct names {
	struct rep *R;
	const char **v;
	size_t n, cap;
	int oom;
};

static int add_name(void *ctx, int n, const char *const *cols,
		    const struct store_val *v)
{
	struct names *s = ctx;

	(void)n;
	(void)cols;
	if (arena_grow(s->R->a, (void **)&s->v, &s->cap, s->n + 1,
		       sizeof(*s->v)) != 0 ||
	    !(s->v[s->n] = arena_strdup(s->R->a, v[0].text ? v[0].text : ""))) {
		s->oom = 1;
		return 1;
	}
	s->n++;
	return 0;
}

int rep_sweeps(struct rep *R)
{
	struct names s = { R, NULL, 0, 0, 0 };
	size_t i;

	rep_heading(R, "Sweeps", "Each sweep's points along its axes "
		    "(`llmsim sweep`).");
	if (rep_select(R, "SELECT name FROM sweeps ORDER BY id", NULL, 0,
		       add_name, &s) != 0)
		return -1;
	if (s.oom) {
		diag_oom(R->d);
		return -1;
	}
	if (s.n == 0)
		fprintf(R->out, "<p class=\"empty\">No sweeps in this database."
			"</p>\n");
	for (i = 0; i < s.n; i++)
		if (one_sweep(R, s.v[i]) != 0)
			return -1;
	return 0;
}
