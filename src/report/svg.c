/*
 * svg.c - the plot toolkit of svg.h.
 *
 * Scales. With t(v) = v (linear), log10 v or log2 v, and the data area
 * [ml, w - mr] x [mt, h - mb] in pixels,
 *     x_px = ml + (t(v) - t(lo)) / (t(hi) - t(lo)) * (w - ml - mr)
 *     y_px = (h - mb) - (t(v) - t(lo)) / (t(hi) - t(lo)) * (h - mt - mb)
 * (y grows upwards). A category axis of n names puts position k at the
 * centre of band k of n equal bands: x from the left, y from the top.
 *
 * Nice linear ticks (Heckbert's "nice numbers"): the step is the
 * power of ten m at or under span/5 times the first of 1, 2, 5, 10 that
 * is at least (span/5)/m, rounded as (< 1.5 -> 1, < 3 -> 2, < 7 -> 5,
 * else 10); the range is widened to whole steps.
 */
#include "svg.h"

#include <math.h>
#include <string.h>

#include "base/utf8.h"

static const char *const palette[] = {
	"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00",
	"#f0e442", "#000000",
};

const char *svg_color(size_t i)
{
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

/* Stops of a viridis-like ramp (sampled at 0, 1/4, ..., 1). */
static const unsigned char ramp[5][3] = {
	{ 68, 1, 84 }, { 59, 82, 139 }, { 33, 145, 140 }, { 94, 201, 98 },
	{ 253, 231, 37 },
};

const char *svg_ramp(double t, char buf[8])
{
	double f;
	int k, c[3], i;

	if (!(t >= 0))
		t = 0;
	if (t > 1)
		t = 1;
	k = t >= 1 ? 3 : (int)(t * 4);
	f = t * 4 - k;
	for (i = 0; i < 3; i++)
		c[i] = (int)lround(ramp[k][i] + f * (ramp[k + 1][i] - ramp[k][i]));
	snprintf(buf, 8, "#%02x%02x%02x", c[0], c[1], c[2]);
	return buf;
}

void svg_plot_init(struct svg_plot *p, FILE *out, int w, int h)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->w = w;
	p->h = h;
	p->ml = 70;
	p->mr = 20;
	p->mt = 34;
	p->mb = 48;
	p->x.lo = p->y.lo = 0;
	p->x.hi = p->y.hi = 1;
}

/* ---- ticks ---------------------------------------------------------- */

static double nice_step(double span)
{
	double raw = span / 5, m = pow(10, floor(log10(raw))), f = raw / m;

	if (f < 1.5)
		return m;
	if (f < 3)
		return 2 * m;
	if (f < 7)
		return 5 * m;
	return 10 * m;
}

static void fit_linear(struct svg_axis *a, double lo, double hi, int zero)
{
	double step, v;

	if (zero && lo > 0)
		lo = 0;
	if (zero && hi < 0)
		hi = 0;
	if (hi <= lo) {
		double pad = lo != 0 ? fabs(lo) * 0.1 : 1;

		lo -= zero && lo == 0 ? 0 : pad;
		hi += pad;
	}
	step = nice_step(hi - lo);
	a->lo = floor(lo / step + 1e-9) * step;
	a->hi = ceil(hi / step - 1e-9) * step;
	a->nticks = 0;
	for (v = a->lo; v <= a->hi + step * 1e-6 && a->nticks < SVG_MAX_TICKS;
	     v += step)
		a->ticks[a->nticks++] = fabs(v) < step * 1e-9 ? 0 : v;
}

static void fit_log10(struct svg_axis *a, double lo, double hi)
{
	static const double sub[] = { 1, 2, 5 };
	double e, dec;
	size_t i;
	int fine;

	if (!(hi > 0))
		hi = 1;
	if (!(lo > 0) || lo > hi)
		lo = hi / 1e3;
	a->lo = pow(10, floor(log10(lo) + 1e-9));
	a->hi = pow(10, ceil(log10(hi) - 1e-9));
	if (a->hi <= a->lo)
		a->hi = a->lo * 10;
	fine = log10(a->hi / a->lo) < 2.5;
	a->nticks = 0;
	for (e = log10(a->lo); e <= log10(a->hi) + 1e-9; e += 1) {
		dec = pow(10, e);
		for (i = 0; i < (fine ? 3u : 1u) && a->nticks < SVG_MAX_TICKS;
		     i++)
			if (dec * sub[i] <= a->hi * (1 + 1e-9))
				a->ticks[a->nticks++] = dec * sub[i];
	}
}

static void fit_log2(struct svg_axis *a, double lo, double hi)
{
	double e0, e1, e;
	int stride;

	if (!(hi > 0))
		hi = 1;
	if (!(lo > 0) || lo > hi)
		lo = hi / 1024;
	e0 = floor(log2(lo) + 1e-9);
	e1 = ceil(log2(hi) - 1e-9);
	if (e1 <= e0)
		e1 = e0 + 1;
	a->lo = pow(2, e0);
	a->hi = pow(2, e1);
	stride = e1 - e0 <= 12 ? 1 : e1 - e0 <= 24 ? 2 : 4;
	a->nticks = 0;
	for (e = e0; e <= e1 && a->nticks < SVG_MAX_TICKS; e += stride)
		a->ticks[a->nticks++] = pow(2, e);
}

void svg_axis_fit(struct svg_axis *a, double lo, double hi, int zero)
{
	size_t i;

	switch (a->scale) {
	case SVG_LINEAR:
		fit_linear(a, lo, hi, zero);
		break;
	case SVG_LOG10:
		fit_log10(a, lo, hi);
		break;
	case SVG_LOG2:
		fit_log2(a, lo, hi);
		break;
	case SVG_CATEGORY:
		a->lo = -0.5;
		a->hi = (double)a->ncats - 0.5;
		a->nticks = 0;
		for (i = 0; i < a->ncats && i < SVG_MAX_TICKS; i++)
			a->ticks[a->nticks++] = (double)i;
		break;
	}
}

/* ---- positions ------------------------------------------------------ */

static double tr(const struct svg_axis *a, double v)
{
	if (a->scale == SVG_LOG10)
		return log10(v > 0 ? v : a->lo);
	if (a->scale == SVG_LOG2)
		return log2(v > 0 ? v : a->lo);
	return v;
}

/* Position of v along axis a as a fraction of its length. */
static double frac(const struct svg_axis *a, double v)
{
	double lo = tr(a, a->lo), hi = tr(a, a->hi);

	return hi > lo ? (tr(a, v) - lo) / (hi - lo) : 0.5;
}

double svg_x(const struct svg_plot *p, double v)
{
	return p->ml + frac(&p->x, v) * (p->w - p->ml - p->mr);
}

double svg_y(const struct svg_plot *p, double v)
{
	if (p->y.scale == SVG_CATEGORY)	/* row 0 at the top */
		return p->mt + frac(&p->y, v) * (p->h - p->mt - p->mb);
	return (p->h - p->mb) - frac(&p->y, v) * (p->h - p->mt - p->mb);
}

/* ---- text ----------------------------------------------------------- */

void svg_escape(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		default: fputc(*s, out); break;
		}
	}
}

/* v with k/M/G/T from 10^4 on ("20k", "1.5M"), plainly below ("5000",
 * "0.25"). */
static void fmt_num(double v, char *buf, size_t len)
{
	static const char *const sfx[] = { "", "k", "M", "G", "T", "P" };
	double a = fabs(v);
	int i = 0;

	if (a < 1e4) {
		snprintf(buf, len, "%.4g", v);
		return;
	}
	while (a >= 999.5 && i < 5) {
		a /= 1e3;
		v /= 1e3;
		i++;
	}
	snprintf(buf, len, "%.3g%s", v, sfx[i]);
}

static void fmt_bytes2(double v, char *buf, size_t len)
{
	static const char *const sfx[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int i = 0;

	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(buf, len, "%.3g %s", v, sfx[i]);
}

const char *svg_tick_label(const struct svg_axis *a, double v, char *buf,
			   size_t len)
{
	size_t k;

	if (a->scale == SVG_CATEGORY) {
		const char *c;

		k = (size_t)lround(v);
		c = k < a->ncats ? a->cats[k] : "";
		/* cut to the buffer between characters (a byte cut could end
		 * inside one: the SVG was not UTF-8) */
		snprintf(buf, len, "%.*s", (int)utf8_fit(c, strlen(c),
							 len ? len - 1 : 0), c);
	} else if (a->fmt == SVG_FMT_BYTES2) {
		fmt_bytes2(v, buf, len);
	} else {
		fmt_num(v, buf, len);
	}
	return buf;
}

/* ---- drawing -------------------------------------------------------- */

void svg_open(struct svg_plot *p, const char *id, const char *title)
{
	fprintf(p->out, "<figure class=\"plot\" id=\"");
	svg_escape(p->out, id);
	fprintf(p->out, "\">\n<figcaption>");
	svg_escape(p->out, title);
	fprintf(p->out, "</figcaption>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
		"width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" "
		"aria-label=\"", p->w, p->h, p->w, p->h);
	svg_escape(p->out, title);
	fprintf(p->out, "\">\n");
}

static void frame_x(struct svg_plot *p)
{
	char lab[256];	/* a row label: 52 characters of up to 4 bytes */
	double y0 = p->h - p->mb, x;
	size_t i;

	for (i = 0; i < p->x.nticks; i++) {
		x = svg_x(p, p->x.ticks[i]);
		if (p->x.scale != SVG_CATEGORY)
			fprintf(p->out, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" "
				"x2=\"%.1f\" y2=\"%.1f\"/>\n", x, p->mt, x, y0);
		fprintf(p->out, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\">", x, y0 + 15);
		svg_escape(p->out, svg_tick_label(&p->x, p->x.ticks[i], lab,
						  sizeof(lab)));
		fprintf(p->out, "</text>\n");
	}
	fprintf(p->out, "<text class=\"label\" x=\"%.1f\" y=\"%d\" "
		"text-anchor=\"middle\">", p->ml + (p->w - p->ml - p->mr) / 2.0,
		p->h - 10);
	svg_escape(p->out, p->x.label);
	fprintf(p->out, "</text>\n");
}

static void frame_y(struct svg_plot *p)
{
	char lab[256];	/* a row label: 52 characters of up to 4 bytes */
	double y, ym = p->mt + (p->h - p->mt - p->mb) / 2.0;
	size_t i;

	for (i = 0; i < p->y.nticks; i++) {
		y = svg_y(p, p->y.ticks[i]);
		if (p->y.scale != SVG_CATEGORY)
			fprintf(p->out, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" "
				"x2=\"%d\" y2=\"%.1f\"/>\n", p->ml, y,
				p->w - p->mr, y);
		fprintf(p->out, "<text class=\"tick\" x=\"%d\" y=\"%.1f\" "
			"text-anchor=\"end\">", p->ml - 6, y + 4);
		svg_escape(p->out, svg_tick_label(&p->y, p->y.ticks[i], lab,
						  sizeof(lab)));
		fprintf(p->out, "</text>\n");
	}
	fprintf(p->out, "<text class=\"label\" x=\"14\" y=\"%.1f\" "
		"text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">",
		ym, ym);
	svg_escape(p->out, p->y.label);
	fprintf(p->out, "</text>\n");
}

void svg_frame(struct svg_plot *p)
{
	frame_x(p);
	frame_y(p);
	fprintf(p->out, "<rect class=\"area\" x=\"%d\" y=\"%d\" width=\"%d\" "
		"height=\"%d\"/>\n", p->ml, p->mt, p->w - p->ml - p->mr,
		p->h - p->mt - p->mb);
}

static void title(struct svg_plot *p, const char *tooltip)
{
	fprintf(p->out, "<title>");
	svg_escape(p->out, tooltip);
	fprintf(p->out, "</title>");
}

void svg_marker(struct svg_plot *p, double x, double y, const char *color,
		const char *tooltip)
{
	fprintf(p->out, "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
		"fill=\"%s\">", svg_x(p, x), svg_y(p, y), color);
	title(p, tooltip);
	fprintf(p->out, "</circle>\n");
	p->marks++;
}

void svg_line(struct svg_plot *p, const double *x, const double *y,
	      size_t n, const char *color, int dashed)
{
	size_t i;

	if (n < 2)
		return;
	fprintf(p->out, "<polyline class=\"line\" stroke=\"%s\"%s points=\"",
		color, dashed ? " stroke-dasharray=\"5 4\"" : "");
	for (i = 0; i < n; i++)
		fprintf(p->out, "%s%.1f,%.1f", i ? " " : "", svg_x(p, x[i]),
			svg_y(p, y[i]));
	fprintf(p->out, "\"/>\n");
}

void svg_band(struct svg_plot *p, const double *x, const double *ylo,
	      const double *yhi, size_t n, const char *color, double opacity)
{
	size_t i;

	if (n < 2)
		return;
	fprintf(p->out, "<polygon class=\"band\" fill=\"%s\" fill-opacity="
		"\"%.2f\" points=\"", color, opacity);
	for (i = 0; i < n; i++)
		fprintf(p->out, "%.1f,%.1f ", svg_x(p, x[i]), svg_y(p, yhi[i]));
	for (i = n; i-- > 0;)
		fprintf(p->out, "%.1f,%.1f%s", svg_x(p, x[i]), svg_y(p, ylo[i]),
			i ? " " : "");
	fprintf(p->out, "\"/>\n");
}

/* Height of one category row's bar, px. */
static double row_h(const struct svg_plot *p)
{
	double band = (p->h - p->mt - p->mb) / (double)(p->y.ncats ? p->y.ncats : 1);

	return band * 0.7;
}

void svg_hbar(struct svg_plot *p, size_t row, double x0, double x1,
	      const char *color, const char *tooltip)
{
	double h = row_h(p), y = svg_y(p, (double)row) - h / 2;
	double a = svg_x(p, x0), b = svg_x(p, x1);

	fprintf(p->out, "<rect class=\"pt\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"%.1f\" fill=\"%s\">", a, y, b > a ? b - a : 0, h,
		color);
	title(p, tooltip);
	fprintf(p->out, "</rect>\n");
	p->marks++;
}

void svg_row_marker(struct svg_plot *p, size_t row, double x,
		    const char *color, const char *label)
{
	double h = row_h(p), y = svg_y(p, (double)row), px = svg_x(p, x);

	fprintf(p->out, "<line class=\"cap\" stroke=\"%s\" x1=\"%.1f\" y1=\"%.1f\" "
		"x2=\"%.1f\" y2=\"%.1f\"/>\n", color, px, y - h / 2 - 3, px,
		y + h / 2 + 3);
	if (label) {
		fprintf(p->out, "<text class=\"note\" x=\"%.1f\" y=\"%.1f\">",
			px + 4, y + 4);
		svg_escape(p->out, label);
		fprintf(p->out, "</text>\n");
	}
}

void svg_cell(struct svg_plot *p, size_t cx, size_t cy, const char *fill,
	      const char *text, const char *tooltip)
{
	double w = (p->w - p->ml - p->mr) / (double)(p->x.ncats ? p->x.ncats : 1);
	double h = (p->h - p->mt - p->mb) / (double)(p->y.ncats ? p->y.ncats : 1);
	double x = svg_x(p, (double)cx) - w / 2, y = svg_y(p, (double)cy) - h / 2;
	int light = fill[0] == '#' && fill[1] >= 'a';	/* yellow end */

	fprintf(p->out, "<rect class=\"pt\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		"height=\"%.1f\" fill=\"%s\">", x + 1, y + 1, w - 2, h - 2, fill);
	title(p, tooltip);
	fprintf(p->out, "</rect>\n");
	if (text) {
		fprintf(p->out, "<text class=\"cell%s\" x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\">", light ? " dark" : "", x + w / 2,
			y + h / 2 + 4);
		svg_escape(p->out, text);
		fprintf(p->out, "</text>\n");
	}
	p->marks++;
}

void svg_legend(struct svg_plot *p, const char *const *names,
		const char *const *colors, size_t n)
{
	p->legend_names = names;
	p->legend_colors = colors;
	p->nlegend = n;
}

/* The legend as HTML under the svg (it wraps as the page narrows). */
static void legend(struct svg_plot *p)
{
	size_t i;

	if (p->nlegend == 0)
		return;
	fprintf(p->out, "<div class=\"legend\">");
	for (i = 0; i < p->nlegend; i++) {
		fprintf(p->out, "<span><i style=\"background:%s\"></i>",
			p->legend_colors[i]);
		svg_escape(p->out, p->legend_names[i]);
		fprintf(p->out, "</span>");
	}
	fprintf(p->out, "</div>\n");
}

void svg_close(struct svg_plot *p, const char *note)
{
	fprintf(p->out, "</svg>\n");
	legend(p);
	if (note) {
		fprintf(p->out, "<p class=\"note\">");
		svg_escape(p->out, note);
		fprintf(p->out, "</p>\n");
	}
	fprintf(p->out, "</figure>\n");
}
