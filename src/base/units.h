/*
 * units.h - quantities with units: parsing, formatting, engine time.
 *
 * Every configured quantity that has a dimension is written with its unit
 * ("80 GB", "64 GiB", "450 GB/s", "400 Gbit/s", "1.5 us", "989 TFLOP/s",
 * "2100 MHz") and held in C as a double in SI base units:
 *
 *   UNIT_BYTES      bytes                (_B)
 *   UNIT_BANDWIDTH  bytes per second     (_Bps)
 *   UNIT_TIME       seconds              (_s)
 *   UNIT_FLOPS      FLOP per second      (_flops)
 *   UNIT_FREQ       hertz                (_hz)
 *
 * Decimal and binary prefixes are distinct (G = 1e9, Gi = 2^30) and so are
 * bits and bytes ("b"/"bit" vs "B"); "400 Gbit/s" is 50e9 B/s. A bare number
 * where a unit is required is an error.
 *
 * Engine time is integer nanoseconds (units_ns_t); units_s_to_ns() is the
 * one conversion into it. The engine represents times up to UNITS_NS_MAX
 * (2^62 ns, about 146 years): a longer step is a runtime failure that
 * units_s_to_ns_sat() and units_ns_add() let callers detect, never a
 * wrapped clock.
 *
 * Depends on libc only.
 */
#ifndef LLMSIM_BASE_UNITS_H
#define LLMSIM_BASE_UNITS_H

#include <stddef.h>
#include <stdint.h>

enum unit_kind {
	UNIT_BYTES,
	UNIT_BANDWIDTH,
	UNIT_TIME,
	UNIT_FLOPS,
	UNIT_FREQ,
	UNIT_KIND_COUNT
};

/* Engine time: integer nanoseconds since the start of the simulation. */
typedef int64_t units_ns_t;

/*
 * Parse "<number> <unit>" (space optional) as a quantity of the given kind.
 * On success stores the SI value in *out and returns 0. On failure returns
 * -1 and points *why at a static phrase such as "missing unit" or "unknown
 * unit 'GBs'"; the caller adds where and an example (units_example()).
 * Negative, non-finite and hexadecimal numbers are rejected.
 */
int units_parse(const char *text, enum unit_kind kind, double *out,
		const char **why);

/* Parse a size the way rccl-tests/nccl-tests take it: plain bytes or a
 * K/M/G/T suffix meaning 2^10/2^20/2^30/2^40 ("8G" is 8 GiB). */
int units_parse_test_size(const char *text, double *out_B, const char **why);

/* An example of a valid value of this kind, for diagnostics ("450 GB/s"). */
const char *units_example(enum unit_kind kind);

/* What the kind is called in messages ("a bandwidth"). */
const char *units_kind_phrase(enum unit_kind kind);

/*
 * Format an SI value with a readable prefix: bytes in decimal units unless
 * the value is an exact binary multiple ("80 GiB", "1.5 GB"), bandwidth in
 * decimal B/s, time in ns/us/ms/s by magnitude, rates in TFLOP/s (or a
 * smaller prefix), frequency in MHz. The number has the fewest significant
 * digits that parse back (units_parse) to the identical double (at most
 * 17: "13.411031718699088 us"). len >= 48 holds any value. Returns buf.
 */
char *units_format(char *buf, size_t len, double v, enum unit_kind kind);

/*
 * A unit-less number (a fraction, a ratio, an SI value written without
 * its unit) with the fewest significant digits that strtod reads back as
 * the identical double: "0.81", "1.5e+20", "-0.1234567891234". A value
 * that is not finite prints as %.17g does. len >= 32 holds any value.
 * Returns buf.
 */
char *units_format_number(char *buf, size_t len, double v);

/* The latest engine time, ns: 2^62 (146 years). Half of int64_t's range,
 * so a time and a duration up to it add without overflow. */
#define UNITS_NS_MAX ((units_ns_t)1 << 62)

/* Seconds to engine nanoseconds, rounded to nearest. s must be finite and
 * in [0, UNITS_NS_MAX ns]; anything else is a programming error. */
units_ns_t units_s_to_ns(double s);

/* units_s_to_ns for durations that may not fit: s past UNITS_NS_MAX, or
 * infinite or NaN, gives UNITS_NS_MAX + 1, which units_ns_add refuses.
 * A negative s is still a programming error. */
units_ns_t units_s_to_ns_sat(double s);

/* *t = now + dt and 0 when that is at most UNITS_NS_MAX; else -1 and *t
 * untouched (the step is longer than the engine represents). now in
 * [0, UNITS_NS_MAX], dt >= 0. */
int units_ns_add(units_ns_t now, units_ns_t dt, units_ns_t *t);

/* Engine nanoseconds to seconds. */
double units_ns_to_s(units_ns_t ns);

#endif
