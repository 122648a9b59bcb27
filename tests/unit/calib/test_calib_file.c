/*
 * test_calib_file.c - a calibration file holds its fitted values bit for
 * bit: the overlay (values with units, read by units_parse) and the
 * params list (SI numbers, read by strtod) give back the identical
 * doubles `llmsim calibrate` fitted; its run names and system load
 * back as written, whatever their characters.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/arena.h"
#include "base/diag.h"
#include "base/units.h"
#include "calib/calib.h"
#include "config/config.h"
#include "config/schema.h"

/* The text after "needle" in s, up to the first of stop (a copy). */
static char *after(const char *s, const char *needle, const char *stop,
		   char *buf, size_t len)
{
	const char *p = strstr(s, needle);
	size_t n;

	cr_assert_not_null(p, "'%s' not in the file:\n%s", needle, s);
	p += strlen(needle);
	n = strcspn(p, stop);
	cr_assert_lt(n, len);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

Test(calib_file, fitted_values_read_back_exactly)
{
	/*
	 * 0.1234567891234 has 13 significant digits: %.6g wrote "0.123457"
	 * and %.9g "0.123456789", both 1e-7..1e-10 away from the fit. The
	 * time 13.411031718699088 us needs all 17 ("%.6g us" gave
	 * "13.411 us"). A unit-less value must come back through strtod,
	 * a time through units_parse, each == the double written.
	 */
	struct calib_param par[2] = {
		{ .key = "scale_up.link.sustained", .type = ST_NUM, .lo = 0,
		  .hi = 1, .start = 0.77, .value = 0.1234567891234,
		  .stderr_ = 0.0123456789012, .ci_lo = 0.1000000000001,
		  .ci_hi = 0.1469135782467 },
		{ .key = "scale_up.link.latency", .type = ST_TIME, .lo = 0,
		  .hi = INFINITY, .start = 1e-6,
		  .value = 0.000013411031718699088098, .stderr_ = 1.1e-7,
		  .ci_lo = 1.3e-5, .ci_hi = 1.4e-5 },
	};
	double corr[4] = { 1, 0, 0, 1 };
	struct calib_problem pb = { .system = "cpu-host", .npts = 4,
				    .par = par, .npar = 2 };
	struct calib_result res = { .corr = corr, .dof = 2 };
	struct diag d;
	static const char *const runs[] = { "measure run 1 in db" };
	char path[] = "/tmp/llmsim-calib-XXXXXX", text[4096], v[64];
	const char *why = NULL;
	double got;
	size_t n;
	FILE *f;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	diag_init(&d, stderr);
	cr_assert_eq(calib_file_write(path, &pb, &res, "db", runs, 1, "test",
				      &d), 0);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	unlink(path);

	/* The overlay. */
	after(text, "\n      sustained: ", "\n", v, sizeof(v));
	cr_assert_eq(strtod(v, NULL), par[0].value, "overlay wrote '%s'", v);
	after(text, "\n      latency: ", "\n", v, sizeof(v));
	cr_assert_eq(units_parse(v, UNIT_TIME, &got, &why), 0, "%s", why);
	cr_assert_eq(got, par[1].value, "overlay wrote '%s'", v);

	/* The params list, SI numbers. */
	after(text, "key: scale_up.link.sustained, value: ", ",", v, sizeof(v));
	cr_assert_eq(strtod(v, NULL), par[0].value, "params wrote '%s'", v);
	after(text, "key: scale_up.link.latency, value: ", ",", v, sizeof(v));
	cr_assert_eq(strtod(v, NULL), par[1].value, "params wrote '%s'", v);
	after(text, "key: scale_up.link.sustained, value: 0.1234567891234, "
	      "stderr: ", ",", v, sizeof(v));
	cr_assert_eq(strtod(v, NULL), par[0].stderr_, "stderr '%s'", v);
	after(text, "ci95: [", ",", v, sizeof(v));
	cr_assert_eq(strtod(v, NULL), par[0].ci_lo, "ci95 low '%s'", v);
}

Test(calib_file, number_text_is_shortest_and_exact)
{
	/* Shortest digits: 0.1 is "0.1" (not 0.10000000000000001); 1/3
	 * needs 16 ("0.3333333333333333"); the sign and exponent forms
	 * (render_digits: below 1e-5 and from 1e17 as d.ddde+XX). */
	static const double vals[] = { 0.1, 1.0 / 3.0, -0.1234567891234,
				       1.5e20, 1.2345e-7, 0.0, 5e-324,
				       1.7976931348623157e308 };
	char buf[32];
	size_t i;

	cr_assert_str_eq(units_format_number(buf, sizeof(buf), 0.1), "0.1");
	cr_assert_str_eq(units_format_number(buf, sizeof(buf), 1.0 / 3.0),
			 "0.3333333333333333");
	cr_assert_str_eq(units_format_number(buf, sizeof(buf), -2.5), "-2.5");
	cr_assert_str_eq(units_format_number(buf, sizeof(buf), 1.5e20),
			 "1.5e+20");
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		units_format_number(buf, sizeof(buf), vals[i]);
		cr_assert_eq(strtod(buf, NULL), vals[i], "'%s'", buf);
	}
}

/* The 95% band in ln f: f = 2 s with sd = 2/1.96 s gives z = 1.96 sd / f
 * = 1, so [2/e, 2e] = [0.7358, 5.4366] s. sd = 1e3 f: z = 1960, e^z is
 * no double (> e^709.78): refused, not [0, inf]. */
Test(calib_file, interval_is_in_ln_and_bounded)
{
	double lo, hi;

	cr_assert_eq(calib_interval(2, 2 / 1.96, &lo, &hi), 0);
	cr_assert_float_eq(lo, 2 / M_E, 1e-12);
	cr_assert_float_eq(hi, 2 * M_E, 1e-12);
	cr_assert_eq(calib_interval(2, 2e3, &lo, &hi), -1);
	cr_assert_eq(calib_interval(2, INFINITY, &lo, &hi), -1);
}

Test(calib_file, a_set_names_the_parameter_it_replaces)
{
	/*
	 * A --set replaces a fitted value when its key is the parameter's,
	 * a mapping above it ("scale_up.link={sustained: 0.5}") or a key
	 * inside it; a sibling ("scale_up.link.latency"), a key that only
	 * begins with the same letters ("scale_up.link.sustained_x",
	 * "scale_up.lin") or one outside the prefix ("system." for a job)
	 * does not. Spaces around the key are the parser's, not the key's.
	 */
	struct calib_param par[2] = {
		{ .key = "scale_up.link.sustained", .value = 0.79 },
		{ .key = "collectives.algorithms.p2p.hop_scale_up.ll" },
	};
	struct calib_file f = { .par = par, .npar = 2 };

	cr_assert_eq(calib_file_set_names(&f, "", "scale_up.link.sustained=0.5"),
		     &par[0]);
	cr_assert_eq(calib_file_set_names(&f, "", " scale_up.link.sustained "
					  "= 0.5"), &par[0]);
	cr_assert_eq(calib_file_set_names(&f, "", "scale_up.link={sustained: "
					  "0.5}"), &par[0]);
	cr_assert_eq(calib_file_set_names(&f, "", "scale_up={link: {}}"),
		     &par[0]);
	cr_assert_eq(calib_file_set_names(&f, "", "collectives.algorithms.p2p"
					  ".hop_scale_up.ll.x=1"), &par[1]);
	cr_assert_null(calib_file_set_names(&f, "", "scale_up.link.latency=1 us"));
	cr_assert_null(calib_file_set_names(&f, "", "scale_up.link.sustained_x=1"));
	cr_assert_null(calib_file_set_names(&f, "", "scale_up.lin=1"));
	cr_assert_null(calib_file_set_names(&f, "", "scale_up.link.sustained"));
	cr_assert_null(calib_file_set_names(&f, "", "=0.5"));
	cr_assert_eq(calib_file_set_names(&f, "system.", "system.scale_up.link"
					  ".sustained=0.5"), &par[0]);
	cr_assert_null(calib_file_set_names(&f, "system.", "scale_up.link"
					    ".sustained=0.5"));
	cr_assert_null(calib_file_set_names(&f, "system.", "model.scale_up"
					    ".link.sustained=0.5"));
}

Test(calib_file, odd_run_names_and_system_load_back)
{
	/*
	 * The fitted_on items name the database's real path, which may hold
	 * any byte but NUL. Written bare into a flow list, "a, b]/x.db"
	 * ended the list at its ']' (and split it at its ", "): the file did
	 * not load ("did not find expected key"), so the system that names
	 * it failed. A newline ended the comment line that repeats it. Each
	 * item and the system now read back as exactly what was written.
	 */
	static const char *const runs[] = {
		"measure run 1 in /tmp/a, b]/x.db",
		"measure run 2 in /tmp/\"q\" #x: {y}\n\\z.db",
		"measure run 3 in /tmp/plain.db",
	};
	struct calib_param par = { .key = "scale_up.link.sustained",
				   .type = ST_NUM, .lo = 0, .hi = 1,
				   .start = 0.77, .value = 0.5,
				   .stderr_ = 0.01, .ci_lo = 0.48,
				   .ci_hi = 0.52 };
	double corr[1] = { 1 };
	struct calib_problem pb = { .system = "my sys: x.yaml", .npts = 4,
				    .par = &par, .npar = 1 };
	struct calib_result res = { .corr = corr, .dof = 3 };
	struct arena a;
	struct diag d;
	struct config_ctx cx = { &a, &d, NULL };
	struct calib_file f;
	char path[] = "/tmp/llmsim-calib-XXXXXX";
	const char *db = "/tmp/a, b]\n/x.db";
	int fd = mkstemp(path);
	size_t i;

	cr_assert_geq(fd, 0);
	close(fd);
	arena_init(&a);
	diag_init(&d, stderr);
	cr_assert_eq(calib_file_write(path, &pb, &res, db, runs, 3, "test",
				      &d), 0);
	cr_assert_eq(calib_file_load(&cx, path, &f), 0);
	unlink(path);
	cr_assert_str_eq(f.system, pb.system);
	cr_assert_eq(f.nfitted, 3);
	for (i = 0; i < 3; i++)
		cr_assert_str_eq(f.fitted_on[i], runs[i], "item %zu", i);
	cr_assert_eq(f.npar, 1);
	cr_assert_eq(f.par[0].value, 0.5);
	arena_release(&a);
}

Test(calib_file, a_key_given_twice_is_refused)
{
	/*
	 * `calibrate --params K,K` wrote K twice: the fit moved one copy,
	 * the other kept its start, and the overlay (the first) applied the
	 * start. Such a file (written before the CLI refused it) is refused
	 * at the second key, so a system that names it fails instead of
	 * running with the unfitted value and the fitted one's band.
	 */
	struct calib_param par[2] = {
		{ .key = "scale_up.link.sustained", .type = ST_NUM, .lo = 0,
		  .hi = 1, .start = 0.77, .value = 0.77, .stderr_ = 0,
		  .ci_lo = 0.77, .ci_hi = 0.77 },
		{ .key = "scale_up.link.sustained", .type = ST_NUM, .lo = 0,
		  .hi = 1, .start = 0.77, .value = 0.548, .stderr_ = 0.0026,
		  .ci_lo = 0.542, .ci_hi = 0.553 },
	};
	double corr[4] = { 1, 0, 0, 1 };
	struct calib_problem pb = { .system = "cpu-host", .npts = 17,
				    .par = par, .npar = 2 };
	struct calib_result res = { .corr = corr, .dof = 15 };
	static const char *const runs[] = { "measure run 1 in db" };
	struct arena a;
	struct diag d;
	struct config_ctx cx = { &a, &d, NULL };
	struct calib_file f;
	char path[] = "/tmp/llmsim-calib-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	close(fd);
	arena_init(&a);
	diag_init(&d, NULL);
	cr_assert_eq(calib_file_write(path, &pb, &res, "db", runs, 1, "test",
				      &d), 0);
	cr_assert_eq(calib_file_load(&cx, path, &f), -1);
	unlink(path);
	cr_assert_eq(d.errors, 1);
	/* one key: loads */
	pb.npar = 1;
	cr_assert_eq(calib_file_write(path, &pb, &res, "db", runs, 1, "test",
				      &d), 0);
	cr_assert_eq(calib_file_load(&cx, path, &f), 0);
	unlink(path);
	arena_release(&a);
}
