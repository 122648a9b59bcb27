/*
 * svg.h - plots as inline SVG, written by hand: axes with ticks, grid
 * and a label that names the unit; markers, lines, bands, bar segments,
 * heat-map cells; legends.
 *
 * Why by hand: the report must open with no network and build with no
 * download, and its output is then plain text that tests can compare
 * byte for byte. The plots a report needs are few (scatter, lines,
 * stacked bars, heat maps), and each is a page of arithmetic.
 *
 * Conventions. A plot is a <figure class="plot"> holding one <svg>. Every
 * data mark (a marker, a bar segment, a heat cell) has class "pt" and a
 * <title> that is its tooltip, so a page can check that every plot shows
 * data. Output is deterministic: numbers are printed with fixed
 * precision, nothing depends on time or addresses.
 *
 * Scales map data to pixels: linear, log10, log2 (message sizes), or
 * categories (positions 0..n-1, one band each).
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_REPORT_SVG_H
#define LLMSIM_REPORT_SVG_H

#include <stddef.h>
#include <stdio.h>

enum svg_scale {
	SVG_LINEAR,
	SVG_LOG10,
	SVG_LOG2,
	SVG_CATEGORY
};

/* How tick labels print a value. */
enum svg_fmt {
	SVG_FMT_NUM,		/* 0.5, 12, 1.5e+06 */
	SVG_FMT_BYTES2		/* 1 KiB, 32 MiB (binary prefixes) */
};

#define SVG_MAX_TICKS 24

struct svg_axis {
	enum svg_scale scale;
	enum svg_fmt fmt;
	double lo, hi;			/* range shown, in data units */
	const char *label;		/* with its unit: "step time (ms)" */
	const char *const *cats;	/* SVG_CATEGORY: [ncats] names */
	size_t ncats;
	double ticks[SVG_MAX_TICKS];	/* tick values (svg_axis_ticks) */
	size_t nticks;
};

struct svg_plot {
	FILE *out;
	int w, h;			/* px, the whole svg */
	int ml, mr, mt, mb;		/* px, margins around the data area */
	struct svg_axis x, y;
	size_t marks;			/* data marks drawn so far */
	const char *const *legend_names;	/* svg_legend's, until svg_close */
	const char *const *legend_colors;
	size_t nlegend;
};

/* The colour-blind-safe palette (Okabe and Ito), cycled. */
const char *svg_color(size_t i);

/* A colour for t in [0, 1] on a perceptually ordered ramp (viridis-like,
 * dark blue to yellow) for heat maps; "#rrggbb" in buf (8 bytes). */
const char *svg_ramp(double t, char buf[8]);

/* Set up a plot of w x h px writing to out, both axes linear. */
void svg_plot_init(struct svg_plot *p, FILE *out, int w, int h);

/*
 * Set axis a to show [lo, hi] (data units) rounded out to nice tick
 * values, and compute its ticks. Linear: ticks at 1, 2 or 5 times a
 * power of ten, about 5 of them; with zero set the range includes 0.
 * Log10: every decade (with 2 and 5 when the range spans under two
 * decades). Log2: powers of two, every second or fourth one past 12.
 * A degenerate range (lo == hi) is widened around the value. Category
 * axes ignore lo and hi (they show -0.5 .. ncats-0.5).
 */
void svg_axis_fit(struct svg_axis *a, double lo, double hi, int zero);

/* Pixel position of data value v on the plot's x or y axis. */
double svg_x(const struct svg_plot *p, double v);
double svg_y(const struct svg_plot *p, double v);

/* Tick label text of v on axis a into buf. */
const char *svg_tick_label(const struct svg_axis *a, double v, char *buf,
			   size_t len);

/* <figure> with a caption and the opening <svg>; id names the figure. */
void svg_open(struct svg_plot *p, const char *id, const char *title);

/* The data area's grid, ticks, tick labels and axis labels. */
void svg_frame(struct svg_plot *p);

/* A round marker (a data mark) at data (x, y). */
void svg_marker(struct svg_plot *p, double x, double y, const char *color,
		const char *tooltip);

/* A polyline through n points (not data marks: markers show the data). */
void svg_line(struct svg_plot *p, const double *x, const double *y,
	      size_t n, const char *color, int dashed);

/* A filled band between ylo and yhi over the n x values. */
void svg_band(struct svg_plot *p, const double *x, const double *ylo,
	      const double *yhi, size_t n, const char *color, double opacity);

/* A horizontal bar segment (a data mark) in category row `row` of the y
 * axis, from x0 to x1. */
void svg_hbar(struct svg_plot *p, size_t row, double x0, double x1,
	      const char *color, const char *tooltip);

/* A short vertical tick across category row `row` at x (a capacity
 * marker), with a text label. */
void svg_row_marker(struct svg_plot *p, size_t row, double x,
		    const char *color, const char *label);

/* A heat-map cell (a data mark) at category column cx, row cy, with a
 * text value drawn in it. */
void svg_cell(struct svg_plot *p, size_t cx, size_t cy, const char *fill,
	      const char *text, const char *tooltip);

/* A legend of n entries (the arrays must live until svg_close, which
 * writes it as HTML under the plot, where it wraps). */
void svg_legend(struct svg_plot *p, const char *const *names,
		const char *const *colors, size_t n);

/* Close the svg; note (may be NULL) goes under it as a caption line. */
void svg_close(struct svg_plot *p, const char *note);

/* Write s with &, <, >, " escaped. */
void svg_escape(FILE *out, const char *s);

#endif
