/*
 * test_units.c - the unit parser and formatter against worked values.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "base/units.h"

static double parse_ok(const char *text, enum unit_kind kind)
{
	double v = -1;
	const char *why = NULL;
	int rc = units_parse(text, kind, &v, &why);

	cr_assert_eq(rc, 0, "'%s' should parse, got: %s", text, why);
	return v;
}

static const char *parse_err(const char *text, enum unit_kind kind)
{
	double v = -1;
	const char *why = NULL;

	cr_assert_eq(units_parse(text, kind, &v, &why), -1,
		     "'%s' should be rejected", text);
	cr_assert_not_null(why);
	return why;
}

Test(units, decimal_and_binary_sizes_differ)
{
	/* G = 1e9, Gi = 2^30: 80 GB = 8e10 B, 64 GiB = 64 * 1073741824 B. */
	cr_assert_eq(parse_ok("80 GB", UNIT_BYTES), 80e9);
	cr_assert_eq(parse_ok("64 GiB", UNIT_BYTES), 68719476736.0);
	/* 1 KiB = 1024 B; 1 kB = 1 KB = 1000 B. */
	cr_assert_eq(parse_ok("1 KiB", UNIT_BYTES), 1024.0);
	cr_assert_eq(parse_ok("1 kB", UNIT_BYTES), 1000.0);
	cr_assert_eq(parse_ok("1 KB", UNIT_BYTES), 1000.0);
	/* 256 MB Infinity Cache = 2.56e8 B. */
	cr_assert_eq(parse_ok("256MB", UNIT_BYTES), 256e6);
}

Test(units, bits_and_bytes_differ)
{
	/* 8 Gbit = 8e9 bits = 1e9 B. */
	cr_assert_eq(parse_ok("8 Gbit", UNIT_BYTES), 1e9);
	cr_assert_eq(parse_ok("8 Gb", UNIT_BYTES), 1e9);
	/* 400 Gbit/s NIC = 400e9 / 8 = 50e9 B/s. */
	cr_assert_eq(parse_ok("400 Gbit/s", UNIT_BANDWIDTH), 50e9);
	cr_assert_eq(parse_ok("400 Gb/s", UNIT_BANDWIDTH), 50e9);
	cr_assert_eq(parse_ok("400 Gbps", UNIT_BANDWIDTH), 50e9);
	/* 450 GB/s NVLink4 per direction = 4.5e11 B/s. */
	cr_assert_eq(parse_ok("450 GB/s", UNIT_BANDWIDTH), 450e9);
	/* 1 GiB/s = 1073741824 B/s, about 7.4% more than 1 GB/s. */
	cr_assert_eq(parse_ok("1 GiB/s", UNIT_BANDWIDTH), 1073741824.0);
	/* "GBps" is ambiguous (bits or bytes?) and rejected. */
	parse_err("400 GBps", UNIT_BANDWIDTH);
}

Test(units, times)
{
	/* 1.5 us = 1.5e-6 s; 600 ns = 6e-7 s; the micro sign works too. */
	cr_assert_float_eq(parse_ok("1.5 us", UNIT_TIME), 1.5e-6, 1e-21);
	cr_assert_float_eq(parse_ok("600 ns", UNIT_TIME), 600e-9, 1e-21);
	cr_assert_float_eq(parse_ok("2 \xc2\xb5s", UNIT_TIME), 2e-6, 1e-21);
	cr_assert_float_eq(parse_ok("17 ms", UNIT_TIME), 17e-3, 1e-18);
	cr_assert_eq(parse_ok("3 s", UNIT_TIME), 3.0);
}

Test(units, rates_and_frequencies)
{
	/* H100 BF16 dense 989 TFLOP/s = 9.89e14 FLOP/s. */
	cr_assert_eq(parse_ok("989 TFLOP/s", UNIT_FLOPS), 989e12);
	cr_assert_eq(parse_ok("2.5 PFLOP/s", UNIT_FLOPS), 2.5e15);
	cr_assert_eq(parse_ok("989 TFLOPS", UNIT_FLOPS), 989e12);
	/* MI300X peak engine clock 2100 MHz = 2.1e9 Hz. */
	cr_assert_eq(parse_ok("2100 MHz", UNIT_FREQ), 2.1e9);
	cr_assert_eq(parse_ok("1.98 GHz", UNIT_FREQ), 1.98e9);
}

Test(units, bare_numbers_and_garbage_rejected)
{
	cr_assert_str_eq(parse_err("400", UNIT_BANDWIDTH), "missing unit");
	parse_err("", UNIT_BYTES);
	parse_err("GB", UNIT_BYTES);
	parse_err("-5 GB", UNIT_BYTES);
	parse_err("0x10 GB", UNIT_BYTES);
	parse_err("inf GB", UNIT_BYTES);
	parse_err("nan s", UNIT_TIME);
	parse_err("1e400 GB", UNIT_BYTES);
	parse_err("5 GB/s", UNIT_BYTES);	/* a bandwidth is not a size */
	parse_err("5 GB", UNIT_BANDWIDTH);
	parse_err("5 mB", UNIT_BYTES);	/* milli-bytes mean nothing */
	parse_err("5 min", UNIT_TIME);
}

static void roundtrip(double v, enum unit_kind kind, const char *want)
{
	char buf[64];
	double back = -1;
	const char *why;

	units_format(buf, sizeof(buf), v, kind);
	if (want)
		cr_assert_str_eq(buf, want);
	cr_assert_eq(units_parse(buf, kind, &back, &why), 0, "%s", buf);
	cr_assert_eq(back, v, "'%s' parsed back to %.17g, not %.17g", buf, back, v);
}

Test(units, format_round_trips)
{
	roundtrip(80e9, UNIT_BYTES, "80 GB");
	roundtrip(68719476736.0, UNIT_BYTES, "64 GiB");
	roundtrip(4096, UNIT_BYTES, "4 KiB");
	roundtrip(64, UNIT_BYTES, "64 B");
	roundtrip(50e9, UNIT_BANDWIDTH, "50 GB/s");
	roundtrip(1073741824.0, UNIT_BANDWIDTH, NULL);
	roundtrip(1.5e-6, UNIT_TIME, "1.5 us");
	roundtrip(600e-9, UNIT_TIME, "600 ns");
	roundtrip(989.4e12, UNIT_FLOPS, "989.4 TFLOP/s");
	roundtrip(2.1e9, UNIT_FREQ, "2100 MHz");
	roundtrip(1.0 / 3.0, UNIT_TIME, NULL);
	roundtrip(0, UNIT_TIME, "0 s");
}

Test(units, test_sizes_are_binary)
{
	double v;
	const char *why;

	/* rccl-tests: -e 8G is 8 * 2^30 = 8589934592 B. */
	cr_assert_eq(units_parse_test_size("8G", &v, &why), 0);
	cr_assert_eq(v, 8589934592.0);
	cr_assert_eq(units_parse_test_size("1K", &v, &why), 0);
	cr_assert_eq(v, 1024.0);
	cr_assert_eq(units_parse_test_size("1048576", &v, &why), 0);
	cr_assert_eq(v, 1048576.0);
	cr_assert_eq(units_parse_test_size("8X", &v, &why), -1);
	cr_assert_eq(units_parse_test_size("-1", &v, &why), -1);
}

Test(units, engine_time_conversion)
{
	/* 1.5 us -> 1500 ns; 0.4 ns rounds to 0, 0.5 ns to 1 (away from 0). */
	cr_assert_eq(units_s_to_ns(1.5e-6), 1500);
	cr_assert_eq(units_s_to_ns(0.4e-9), 0);
	cr_assert_eq(units_s_to_ns(0.5e-9), 1);
	cr_assert_eq(units_s_to_ns(90.0), 90000000000LL);
	cr_assert_float_eq(units_ns_to_s(1500), 1.5e-6, 1e-21);
}

Test(units, decimal_prefixes_round_once)
{
	/* "4.35 TB/s" is the double nearest 4.35e12 (C reads the literal
	 * 4.35e12 with one rounding); 4.35 * 1e12 in doubles would be
	 * 4349999999999.9995, one rounding too many. Likewise 1.1 us is the
	 * double nearest 1.1e-6, and 12.5 Gbit/s = 12.5e9 / 8 B/s. */
	cr_assert_eq(parse_ok("4.35 TB/s", UNIT_BANDWIDTH), 4.35e12);
	cr_assert_eq(parse_ok("1.1 us", UNIT_TIME), 1.1e-6);
	cr_assert_eq(parse_ok("0.1 GB", UNIT_BYTES), 1e8);
	cr_assert_eq(parse_ok("12.5 Gbit/s", UNIT_BANDWIDTH), 12.5e9 / 8);
	cr_assert_eq(parse_ok("989e12 FLOP/s", UNIT_FLOPS), 989e12);
	cr_assert_eq(parse_ok("1.5 GiB", UNIT_BYTES), 1.5 * 1073741824.0);
}

Test(units, format_parses_back_for_every_hundredth)
{
	/* x.yz TB/s, x.yz us, x.yz GB and x.yz GHz for x.yz = 0.01 .. 20.00:
	 * each formats to text that parses back to the identical double
	 * (units.h's promise; it failed for 4.35 TB/s before prefixes were
	 * applied with one rounding). */
	static const char *const units[] = {"TB/s", "us", "GB", "GHz"};
	static const enum unit_kind kinds[] = {UNIT_BANDWIDTH, UNIT_TIME,
					       UNIT_BYTES, UNIT_FREQ};
	char text[64], back[64];
	double v, w;
	const char *why;
	int i, k;

	for (k = 0; k < 4; k++)
		for (i = 1; i <= 2000; i++) {
			snprintf(text, sizeof(text), "%d.%02d %s", i / 100,
				 i % 100, units[k]);
			v = parse_ok(text, kinds[k]);
			units_format(back, sizeof(back), v, kinds[k]);
			cr_assert_eq(units_parse(back, kinds[k], &w, &why), 0);
			cr_assert_eq(w, v, "%s -> %s", text, back);
		}
}
