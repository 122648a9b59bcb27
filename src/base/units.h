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
 * one conversion into it.
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
 * smaller prefix), frequency in MHz. The text parses back (units_parse) to
 * the same double. Returns buf.
 */
char *units_format(char *buf, size_t len, double v, enum unit_kind kind);

/* Seconds to engine nanoseconds, rounded to nearest. s must be finite and
 * in [0, 9.2e9] (about 290 years); anything else is a programming error. */
units_ns_t units_s_to_ns(double s);

/* Engine nanoseconds to seconds. */
double units_ns_to_s(units_ns_t ns);

#endif
