/*
 * test_svg.c - the report's plot toolkit: nice ticks, scales to pixels,
 * escaping, and a plot written byte for byte.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/svg.h"

TestSuite(svg);

Test(svg, linear_ticks_are_nice)
{
	struct svg_axis a = { .scale = SVG_LINEAR };

	/* [0, 7.3] with zero: span/5 = 1.46, a power of ten 1 times 1.46
	 * rounds to 1 (< 1.5): step 1, range widened to [0, 8]. */
	svg_axis_fit(&a, 0.3, 7.3, 1);
	cr_assert_float_eq(a.lo, 0, 1e-12);
	cr_assert_float_eq(a.hi, 8, 1e-12);
	cr_assert_eq(a.nticks, 9);
	/* [12, 87]: span/5 = 15, m = 10, f = 1.5 -> 2: step 20, [0, 100]. */
	svg_axis_fit(&a, 12, 87, 0);
	cr_assert_float_eq(a.lo, 0, 1e-12);
	cr_assert_float_eq(a.hi, 100, 1e-12);
	cr_assert_eq(a.nticks, 6);
	cr_assert_float_eq(a.ticks[1], 20, 1e-12);
}

Test(svg, log_ticks)
{
	struct svg_axis a = { .scale = SVG_LOG2 };

	/* 1 KiB .. 1 GiB: 2^10 .. 2^30, 20 octaves > 12: every second
	 * power, 2^10, 2^12, ..., 2^30 = 11 ticks. */
	svg_axis_fit(&a, 1024, 1073741824, 0);
	cr_assert_float_eq(a.lo, 1024, 1e-9);
	cr_assert_float_eq(a.hi, 1073741824, 1e-3);
	cr_assert_eq(a.nticks, 11);
	a.scale = SVG_LOG10;
	/* 3 .. 70: decades 1 .. 100 (under 2.5 decades: 1, 2, 5 of each),
	 * 1 2 5 10 20 50 100 = 7 ticks. */
	svg_axis_fit(&a, 3, 70, 0);
	cr_assert_float_eq(a.lo, 1, 1e-12);
	cr_assert_float_eq(a.hi, 100, 1e-9);
	cr_assert_eq(a.nticks, 7);
}

Test(svg, scale_to_pixels)
{
	struct svg_plot p;

	svg_plot_init(&p, stdout, 500, 300);
	/* data area x: [70, 480], y: [34, 252] (margins 70, 20, 34, 48) */
	svg_axis_fit(&p.x, 0, 10, 1);
	svg_axis_fit(&p.y, 0, 10, 1);
	cr_assert_float_eq(svg_x(&p, 0), 70, 1e-9);
	cr_assert_float_eq(svg_x(&p, 10), 480, 1e-9);
	cr_assert_float_eq(svg_x(&p, 5), 275, 1e-9);
	/* y grows upwards: 0 at the bottom (252), 10 at the top (34) */
	cr_assert_float_eq(svg_y(&p, 0), 252, 1e-9);
	cr_assert_float_eq(svg_y(&p, 10), 34, 1e-9);
}

Test(svg, tick_labels)
{
	struct svg_axis a = { .scale = SVG_LINEAR, .fmt = SVG_FMT_NUM };
	char buf[32];

	cr_assert_str_eq(svg_tick_label(&a, 5000, buf, sizeof(buf)), "5000");
	cr_assert_str_eq(svg_tick_label(&a, 20000, buf, sizeof(buf)), "20k");
	cr_assert_str_eq(svg_tick_label(&a, 1.5e6, buf, sizeof(buf)), "1.5M");
	cr_assert_str_eq(svg_tick_label(&a, 0.25, buf, sizeof(buf)), "0.25");
	a.fmt = SVG_FMT_BYTES2;
	cr_assert_str_eq(svg_tick_label(&a, 33554432, buf, sizeof(buf)),
			 "32 MiB");
}

Test(svg, a_plot_byte_for_byte)
{
	static const char *names[] = { "a&b" };
	static const char *colors[] = { "#0072b2" };
	struct svg_plot p;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	svg_plot_init(&p, f, 200, 100);
	p.x.label = "x (s)";
	p.y.label = "y <B>";
	svg_axis_fit(&p.x, 0, 1, 1);
	svg_axis_fit(&p.y, 0, 1, 1);
	svg_open(&p, "id1", "T");
	svg_frame(&p);
	svg_marker(&p, 0.5, 0.5, "#0072b2", "p \"1\"");
	svg_legend(&p, names, colors, 1);
	svg_close(&p, NULL);
	fclose(f);
	/* x 0.5 -> 70 + 0.5 * (200 - 90) = 125; y 0.5 -> 52 - 0.5 * 18 = 43 */
	cr_assert(strstr(buf, "<circle class=\"pt\" cx=\"125.0\" cy=\"43.0\" r=\"4\" "
			 "fill=\"#0072b2\"><title>p &quot;1&quot;</title></circle>"),
		  "%s", buf);
	cr_assert(strstr(buf, ">y &lt;B&gt;</text>"));
	cr_assert(strstr(buf, "<span><i style=\"background:#0072b2\"></i>a&amp;b"
			 "</span>"));
	cr_assert_eq(p.marks, 1);
	free(buf);
}
