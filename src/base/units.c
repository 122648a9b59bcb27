/*
 * units.c - parse and format quantities with units.
 *
 * A quantity is "<number><space>?<unit>". The number is plain decimal
 * ("1", "1.5", "2e3"); the unit is a prefix followed by a base:
 *
 *   prefixes  k K M G T P E      = 1e3 .. 1e18   (k and K are both 1e3)
 *             Ki Mi Gi Ti Pi Ei  = 2^10 .. 2^60
 *   bytes     B                  = 1 byte
 *             b, bit             = 1/8 byte
 *   bandwidth <bytes unit>/s, or <prefix>bps for bits per second
 *   time      s ms us µs ns      (no prefix table: these are all there is)
 *   rates     FLOP/s or FLOPS with a decimal prefix
 *   frequency Hz with a decimal prefix
 *
 * Formatting picks one canonical unit per kind (see units.h) and prints the
 * shortest decimal text that parses back to the identical double.
 */
#include "units.h"

#include <assert.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prefix {
	const char *text;
	double scale;
};

/* Longest first so "Ki" is tried before "K". */
static const struct prefix binary_prefixes[] = {
	{"Ki", 1024.0},
	{"Mi", 1048576.0},
	{"Gi", 1073741824.0},
	{"Ti", 1099511627776.0},
	{"Pi", 1125899906842624.0},
	{"Ei", 1152921504606846976.0},
};

static const struct prefix decimal_prefixes[] = {
	{"k", 1e3}, {"K", 1e3}, {"M", 1e6}, {"G", 1e9},
	{"T", 1e12}, {"P", 1e15}, {"E", 1e18},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Match an optional prefix at the start of u; returns its length and scale
 * (0 and 1 when there is none). binary: whether Ki..Ei are allowed. */
static size_t match_prefix(const char *u, int binary, double *scale)
{
	size_t i;

	if (binary) {
		for (i = 0; i < COUNT(binary_prefixes); i++) {
			size_t n = strlen(binary_prefixes[i].text);
			if (strncmp(u, binary_prefixes[i].text, n) == 0) {
				*scale = binary_prefixes[i].scale;
				return n;
			}
		}
	}
	for (i = 0; i < COUNT(decimal_prefixes); i++) {
		size_t n = strlen(decimal_prefixes[i].text);
		if (strncmp(u, decimal_prefixes[i].text, n) == 0) {
			*scale = decimal_prefixes[i].scale;
			return n;
		}
	}
	*scale = 1.0;
	return 0;
}

/* "B" -> 1, "b"/"bit" -> 1/8; the base must end the string at *end. */
static int match_data_base(const char *u, const char **end, double *scale)
{
	if (strncmp(u, "bit", 3) == 0) {
		*scale = 0.125;
		*end = u + 3;
		return 0;
	}
	if (*u == 'B') {
		*scale = 1.0;
		*end = u + 1;
		return 0;
	}
	if (*u == 'b') {
		*scale = 0.125;
		*end = u + 1;
		return 0;
	}
	return -1;
}

/* A data quantity with optional prefix: "GiB", "Gbit", "kB". Tries with and
 * without a prefix so "B" and "b" alone work. Returns the remaining text. */
static const char *data_unit(const char *u, double *scale)
{
	double p, b;
	const char *end;
	size_t n = match_prefix(u, 1, &p);

	if (n > 0 && match_data_base(u + n, &end, &b) == 0) {
		*scale = p * b;
		return end;
	}
	if (match_data_base(u, &end, &b) == 0) {
		*scale = b;
		return end;
	}
	return NULL;
}

static int unit_bytes(const char *u, double *scale)
{
	const char *rest = data_unit(u, scale);
	return rest && *rest == '\0' ? 0 : -1;
}

static int unit_bandwidth(const char *u, double *scale)
{
	const char *rest = data_unit(u, scale);
	double p;
	size_t n;

	if (rest && strcmp(rest, "/s") == 0)
		return 0;
	/* "Gbps", "bps": bits per second, decimal prefixes only. */
	n = match_prefix(u, 0, &p);
	if (strcmp(u + n, "bps") == 0) {
		*scale = p / 8.0;
		return 0;
	}
	return -1;
}

/* Time units divide: 600 / 1e9 is the double nearest 600 ns, while
 * 600 * 1e-9 is not (1e-9 has no exact binary form). *scale is set to the
 * negated divisor, which units_parse() recognizes. */
static int unit_time(const char *u, double *scale)
{
	static const struct prefix times[] = {
		{"s", 1.0}, {"ms", 1e3}, {"us", 1e6},
		{"\xc2\xb5s", 1e6},	/* U+00B5 micro sign */
		{"\xce\xbcs", 1e6},	/* U+03BC Greek small mu */
		{"ns", 1e9},
	};
	size_t i;

	for (i = 0; i < COUNT(times); i++) {
		if (strcmp(u, times[i].text) == 0) {
			*scale = -times[i].scale;
			return 0;
		}
	}
	return -1;
}

static int unit_with_decimal_prefix(const char *u, const char *const *bases,
				    double *scale)
{
	double p;
	size_t n = match_prefix(u, 0, &p);
	size_t i;

	for (i = 0; bases[i]; i++) {
		if (strcmp(u + n, bases[i]) == 0) {
			*scale = p;
			return 0;
		}
		/* A base that starts like a prefix ("E..."): try unprefixed. */
		if (n > 0 && strcmp(u, bases[i]) == 0) {
			*scale = 1.0;
			return 0;
		}
	}
	return -1;
}

static int unit_flops(const char *u, double *scale)
{
	static const char *const bases[] = {"FLOP/s", "FLOPS", NULL};
	return unit_with_decimal_prefix(u, bases, scale);
}

static int unit_freq(const char *u, double *scale)
{
	static const char *const bases[] = {"Hz", NULL};
	return unit_with_decimal_prefix(u, bases, scale);
}

/* Scan a plain decimal number: digits, optional fraction, optional
 * exponent. No sign, no hex, no inf/nan. Returns the end or NULL. */
static const char *scan_number(const char *s)
{
	const char *p = s;
	int digits = 0;

	while (isdigit((unsigned char)*p)) {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits++;
		}
	}
	if (digits == 0)
		return NULL;
	if (*p == 'e' || *p == 'E') {
		const char *q = p + 1;
		if (*q == '+' || *q == '-')
			q++;
		if (isdigit((unsigned char)*q)) {
			while (isdigit((unsigned char)*q))
				q++;
			p = q;
		}
	}
	return p;
}

/* k when x is exactly 10^k for k in 0..18, else -1. */
static int exact_pow10(double x)
{
	double p = 1.0;
	int k;

	for (k = 0; k <= 18; k++, p *= 10.0)
		if (x == p)
			return k;
	return -1;
}

/*
 * The number num[0..len) times scale (negative: divided by -scale),
 * rounded once. "4.35" times 1e12 is 4349999999999.9995 when multiplied
 * in doubles, but 4.35e12 exactly when strtod reads "4.35e12"; so when
 * the scale is a power of ten (possibly over 8, for bits) the exponent
 * goes into the text. Binary prefixes multiply by powers of two, which
 * is exact.
 */
static double scale_number(const char *num, size_t len, double scale)
{
	char buf[96];
	const char *e = NULL;
	size_t i, mant = len;
	int k = exact_pow10(scale < 0 ? -scale : scale), eighths = 0;
	long exp = 0;

	if (k < 0 && scale > 0 && (k = exact_pow10(scale * 8.0)) >= 0)
		eighths = 1;
	for (i = 0; i < len; i++)
		if (num[i] == 'e' || num[i] == 'E')
			e = num + i;
	if (e) {
		mant = (size_t)(e - num);
		exp = strtol(e + 1, NULL, 10);
	}
	if (k < 0 || mant > 64 || exp > 400 || exp < -400) {
		double v = strtod(num, NULL);
		return scale < 0 ? v / -scale : v * scale;
	}
	snprintf(buf, sizeof(buf), "%.*se%ld", (int)mant, num,
		 exp + (scale < 0 ? -k : k));
	return strtod(buf, NULL) / (eighths ? 8.0 : 1.0);
}

int units_parse(const char *text, enum unit_kind kind, double *out,
		const char **why)
{
	static const char *const unknown[UNIT_KIND_COUNT] = {
		"unknown size unit (use B, kB, MB, GB, KiB, MiB, GiB, bit, Gbit, ...)",
		"unknown bandwidth unit (use B/s, GB/s, GiB/s, Gbit/s, Gbps, ...)",
		"unknown time unit (use s, ms, us, ns)",
		"unknown rate unit (use FLOP/s with a prefix: GFLOP/s, TFLOP/s, PFLOP/s)",
		"unknown frequency unit (use Hz, kHz, MHz, GHz)",
	};
	const char *p = text, *num, *num_end;
	char unit[32];
	size_t ulen;
	double v, scale = 1.0;
	int rc;

	assert(kind < UNIT_KIND_COUNT);
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '-') {
		*why = "must not be negative";
		return -1;
	}
	if (*p == '+')
		p++;
	num_end = scan_number(p);
	if (!num_end) {
		*why = "not a number followed by a unit";
		return -1;
	}
	num = p;
	p = num_end;
	while (isspace((unsigned char)*p))
		p++;
	ulen = strlen(p);
	while (ulen > 0 && isspace((unsigned char)p[ulen - 1]))
		ulen--;
	if (ulen == 0) {
		*why = "missing unit";
		return -1;
	}
	if (ulen >= sizeof(unit)) {
		*why = unknown[kind];
		return -1;
	}
	memcpy(unit, p, ulen);
	unit[ulen] = '\0';

	switch (kind) {
	case UNIT_BYTES: rc = unit_bytes(unit, &scale); break;
	case UNIT_BANDWIDTH: rc = unit_bandwidth(unit, &scale); break;
	case UNIT_TIME: rc = unit_time(unit, &scale); break;
	case UNIT_FLOPS: rc = unit_flops(unit, &scale); break;
	case UNIT_FREQ: rc = unit_freq(unit, &scale); break;
	default: rc = -1; break;
	}
	if (rc != 0) {
		*why = unknown[kind];
		return -1;
	}
	v = scale_number(num, (size_t)(num_end - num), scale);
	if (!isfinite(v) || v > 1e30) {
		*why = "out of range";
		return -1;
	}
	*out = v;
	return 0;
}

int units_parse_test_size(const char *text, double *out_B, const char **why)
{
	const char *p = text, *end;
	double v, scale = 1.0;

	if (*p == '-') {
		*why = "must not be negative";
		return -1;
	}
	end = scan_number(p);
	if (!end) {
		*why = "not a size such as 1K, 64M or 8G";
		return -1;
	}
	v = strtod(p, NULL);
	switch (*end) {
	case '\0': break;
	case 'K': case 'k': scale = 1024.0; end++; break;
	case 'M': case 'm': scale = 1048576.0; end++; break;
	case 'G': case 'g': scale = 1073741824.0; end++; break;
	case 'T': case 't': scale = 1099511627776.0; end++; break;
	default: end = NULL; break;
	}
	if (!end || *end != '\0') {
		*why = "not a size such as 1K, 64M or 8G";
		return -1;
	}
	v *= scale;
	if (!isfinite(v) || v > 1e18) {
		*why = "out of range";
		return -1;
	}
	*out_B = floor(v);
	return 0;
}

const char *units_example(enum unit_kind kind)
{
	static const char *const ex[UNIT_KIND_COUNT] = {
		"80 GB", "450 GB/s", "1.5 us", "989 TFLOP/s", "2100 MHz",
	};
	assert(kind < UNIT_KIND_COUNT);
	return ex[kind];
}

const char *units_kind_phrase(enum unit_kind kind)
{
	static const char *const ph[UNIT_KIND_COUNT] = {
		"a size", "a bandwidth", "a time", "a FLOP rate", "a frequency",
	};
	assert(kind < UNIT_KIND_COUNT);
	return ph[kind];
}

/*
 * Shortest round trip. The fewest significant digits that read back
 * (strtod, one correct rounding) as exactly v > 0: at most 17 for any
 * double. dig gets them without a point or trailing zeros and *e10 the
 * exponent of the first: v = d1.d2d3... x 10^e10.
 */
static void shortest_digits(double v, char dig[20], int *e10)
{
	char text[40], *p, *q;
	int prec;

	/* prec + 1 significant digits; 17 always read back exactly. */
	for (prec = 0; prec < 16; prec++) {
		snprintf(text, sizeof(text), "%.*e", prec, v);
		if (strtod(text, NULL) == v)
			break;
	}
	if (prec == 16)
		snprintf(text, sizeof(text), "%.16e", v);
	/* "d.ddde+XX" -> digits and exponent. */
	q = dig;
	for (p = text; *p && *p != 'e'; p++)
		if (isdigit((unsigned char)*p))
			*q++ = *p;
	*q = '\0';
	while (q > dig + 1 && q[-1] == '0')
		*--q = '\0';
	*e10 = (int)strtol(p + 1, NULL, 10);
}

/*
 * The digits dig (first at 10^x) as a plain decimal when -5 <= x < 17,
 * else as d.ddd e+XX; both forms parse with scan_number.
 */
static void render_digits(char *buf, size_t len, const char *dig, int x)
{
	size_t n = strlen(dig), k = 0;
	char out[64];
	int i;

	if (x < -5 || x >= 17) {
		snprintf(buf, len, "%c%s%se%+d", dig[0], n > 1 ? "." : "",
			 dig + 1, x);
		return;
	}
	if (x < 0) {
		out[k++] = '0';
		out[k++] = '.';
		for (i = -1; i > x; i--)
			out[k++] = '0';
		memcpy(out + k, dig, n);
		k += n;
	} else {
		for (i = 0; i <= x; i++)
			out[k++] = (size_t)i < n ? dig[i] : '0';
		if (n > (size_t)x + 1) {
			out[k++] = '.';
			memcpy(out + k, dig + x + 1, n - (size_t)x - 1);
			k += n - (size_t)x - 1;
		}
	}
	out[k] = '\0';
	snprintf(buf, len, "%s", out);
}

/* k when scale is the prefix 10^k of a formatted unit, else 99 (a binary
 * prefix). */
static int pow10_of(double scale)
{
	static const struct { double scale; int k; } tens[] = {
		{1e-9, -9}, {1e-6, -6}, {1e-3, -3}, {1.0, 0}, {1e3, 3},
		{1e6, 6}, {1e9, 9}, {1e12, 12}, {1e15, 15}, {1e18, 18},
	};
	size_t i;

	for (i = 0; i < COUNT(tens); i++)
		if (scale == tens[i].scale)
			return tens[i].k;
	return 99;
}

/*
 * Print v in units of scale with the fewest digits that parse back to v
 * exactly. A decimal prefix (scale 10^k) moves the decimal point of v's
 * own shortest digits by k, so the text is exactly what units_parse
 * reads with one rounding (scale_number); a binary prefix divides
 * exactly (format_bytes uses it only for exact multiples).
 */
static void format_scaled(char *buf, size_t len, double v, double scale,
			  const char *unit)
{
	char dig[20], num[64];
	int e10, k = pow10_of(scale);

	if (k == 99) {
		v /= scale;
		k = 0;
	}
	shortest_digits(v, dig, &e10);
	render_digits(num, sizeof(num), dig, e10 - k);
	snprintf(buf, len, "%s %s", num, unit);
}

static int is_multiple(double v, double unit)
{
	double q = v / unit;
	return v >= unit && q == floor(q) && q < 1e15;
}

static char *format_bytes(char *buf, size_t len, double v)
{
	static const struct prefix dec[] = {
		{"EB", 1e18}, {"PB", 1e15}, {"TB", 1e12}, {"GB", 1e9},
		{"MB", 1e6}, {"kB", 1e3},
	};
	static const struct prefix bin[] = {
		{"EiB", 1152921504606846976.0}, {"PiB", 1125899906842624.0},
		{"TiB", 1099511627776.0}, {"GiB", 1073741824.0},
		{"MiB", 1048576.0}, {"KiB", 1024.0},
	};
	size_t i;

	/* An exact binary multiple that is not also a decimal one was almost
	 * certainly written in binary units: keep it that way. */
	for (i = 0; i < COUNT(bin); i++) {
		if (is_multiple(v, bin[i].scale) && !is_multiple(v, dec[i].scale)) {
			format_scaled(buf, len, v, bin[i].scale, bin[i].text);
			return buf;
		}
	}
	for (i = 0; i < COUNT(dec); i++) {
		if (v >= dec[i].scale) {
			format_scaled(buf, len, v, dec[i].scale, dec[i].text);
			return buf;
		}
	}
	format_scaled(buf, len, v, 1.0, "B");
	return buf;
}

static char *format_decimal(char *buf, size_t len, double v,
			    const struct prefix *units, size_t n)
{
	size_t i;

	for (i = 0; i + 1 < n; i++) {
		if (v >= units[i].scale)
			break;
	}
	format_scaled(buf, len, v, units[i].scale, units[i].text);
	return buf;
}

char *units_format(char *buf, size_t len, double v, enum unit_kind kind)
{
	static const struct prefix bw[] = {
		{"TB/s", 1e12}, {"GB/s", 1e9}, {"MB/s", 1e6}, {"kB/s", 1e3},
		{"B/s", 1.0},
	};
	static const struct prefix tm[] = {
		{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9},
	};
	static const struct prefix fl[] = {
		{"TFLOP/s", 1e12}, {"GFLOP/s", 1e9}, {"MFLOP/s", 1e6},
		{"FLOP/s", 1.0},
	};
	static const struct prefix fr[] = {
		{"MHz", 1e6}, {"kHz", 1e3}, {"Hz", 1.0},
	};

	assert(kind < UNIT_KIND_COUNT);
	if (v == 0.0) {
		static const char *const zero[UNIT_KIND_COUNT] = {
			"0 B", "0 GB/s", "0 s", "0 TFLOP/s", "0 MHz",
		};
		snprintf(buf, len, "%s", zero[kind]);
		return buf;
	}
	switch (kind) {
	case UNIT_BYTES: return format_bytes(buf, len, v);
	case UNIT_BANDWIDTH:
		/* GB/s is how every vendor and library quotes links. */
		if (v >= 1e9 && v < 1e15)
			return format_decimal(buf, len, v, bw + 1, 1);
		return format_decimal(buf, len, v, bw, COUNT(bw));
	case UNIT_TIME: return format_decimal(buf, len, v, tm, COUNT(tm));
	case UNIT_FLOPS: return format_decimal(buf, len, v, fl, COUNT(fl));
	case UNIT_FREQ: return format_decimal(buf, len, v, fr, COUNT(fr));
	default: break;
	}
	return buf;
}

char *units_format_number(char *buf, size_t len, double v)
{
	char dig[20], num[64];
	int e10;

	if (!isfinite(v) || v == 0.0) {
		snprintf(buf, len, "%.17g", v == 0.0 ? 0.0 : v);
		return buf;
	}
	shortest_digits(fabs(v), dig, &e10);
	render_digits(num, sizeof(num), dig, e10);
	snprintf(buf, len, "%s%s", v < 0 ? "-" : "", num);
	return buf;
}

units_ns_t units_s_to_ns(double s)
{
	assert(isfinite(s) && s >= 0.0 && s * 1e9 <= (double)UNITS_NS_MAX);
	return (units_ns_t)llround(s * 1e9);
}

units_ns_t units_s_to_ns_sat(double s)
{
	assert(!(s < 0.0));
	if (!(s * 1e9 <= (double)UNITS_NS_MAX))	/* NaN too */
		return UNITS_NS_MAX + 1;
	return (units_ns_t)llround(s * 1e9);
}

int units_ns_add(units_ns_t now, units_ns_t dt, units_ns_t *t)
{
	assert(now >= 0 && now <= UNITS_NS_MAX && dt >= 0);
	if (dt > UNITS_NS_MAX - now)
		return -1;
	*t = now + dt;
	return 0;
}

double units_ns_to_s(units_ns_t ns)
{
	return (double)ns * 1e-9;
}
