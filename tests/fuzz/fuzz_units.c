/*
 * fuzz_units.c - libFuzzer harness for the unit parser and formatter
 * (make fuzz).
 *
 * The first byte picks the kind (bytes, bandwidth, time, FLOP rate,
 * frequency) and the form of the rest:
 *   even  text: whatever units_parse accepts must format (units_format)
 *         to text that parses back to the identical double, and that
 *         text must format to itself (parse -> format -> parse identity);
 *   odd   a double from the next 8 bytes: any finite positive value up to
 *         the parser's 1e30 must format to text that parses back to it
 *         (the mutator rarely writes 17-digit numbers as text; it flips
 *         bits of a double freely).
 * Either way the text also goes through the rccl-tests size parser and
 * the saturating engine-time conversion, which must not crash.
 *
 * A difference aborts, so libFuzzer keeps the input.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* v formats to text that reads back as v, and that text is a fixed
 * point of format(parse(.)). */
static void check_round_trip(double v, enum unit_kind kind)
{
	char text[64], again[64];
	double back;
	const char *why;

	units_format(text, sizeof(text), v, kind);
	if (units_parse(text, kind, &back, &why) != 0 || back != v) {
		fprintf(stderr, "%.17g (kind %d) formats as '%s', which %s "
			"%.17g\n", v, (int)kind, text, why ? why : "reads as",
			back);
		abort();
	}
	units_format(again, sizeof(again), back, kind);
	if (strcmp(text, again) != 0) {
		fprintf(stderr, "'%s' formats back as '%s'\n", text, again);
		abort();
	}
	(void)units_s_to_ns_sat(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum unit_kind kind;
	char text[256];
	double v, w;
	const char *why;

	if (size < 1)
		return 0;
	kind = (enum unit_kind)((data[0] >> 1) % UNIT_KIND_COUNT);
	if (data[0] & 1) {
		if (size < 9)
			return 0;
		memcpy(&v, data + 1, sizeof(v));
		if (isfinite(v) && v > 0 && v <= 1e30)
			check_round_trip(v, kind);
		return 0;
	}
	if (size - 1 >= sizeof(text))
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (units_parse(text, kind, &v, &why) == 0)
		check_round_trip(v, kind);
	(void)units_parse_test_size(text, &w, &why);
	return 0;
}
