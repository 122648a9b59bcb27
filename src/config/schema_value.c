/*
 * schema_value.c - the values a schema field holds: parsing scalars,
 * bounds, describing what a field expects, "did you mean", and whether a
 * value is what an absent key would give (for printing).
 *
 * Integers are decimal only (no hex, no octal, no '_' separators, no
 * leading zeros, which YAML 1.1 reads as octal) and must fit in 64 bits;
 * numbers follow YAML 1.2's core-schema floats without inf and nan.
 */
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "schema_impl.h"
#include "base/units.h"

/* ---- characters a user cannot see ---- */

static const struct {
	uint32_t cp;
	const char *name;
} invisible[] = {
	{0x00a0, "a no-break space"}, {0x00ad, "a soft hyphen"},
	{0x2002, "an en space"}, {0x2003, "an em space"},
	{0x2007, "a figure space"}, {0x2008, "a punctuation space"},
	{0x2009, "a thin space"}, {0x200a, "a hair space"},
	{0x200b, "a zero-width space"}, {0x200c, "a zero-width non-joiner"},
	{0x200d, "a zero-width joiner"}, {0x2060, "a word joiner"},
	{0x202f, "a narrow no-break space"}, {0x205f, "a medium space"},
	{0x3000, "an ideographic space"}, {0xfeff, "a zero-width no-break space"},
};

/* The code point of the UTF-8 sequence at p (checked UTF-8: cnode.c) and
 * its length in *len. */
static uint32_t decode(const unsigned char *p, size_t *len)
{
	if (p[0] < 0x80) {
		*len = 1;
		return p[0];
	}
	if ((p[0] & 0xe0) == 0xc0 && p[1]) {
		*len = 2;
		return (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3fu);
	}
	if ((p[0] & 0xf0) == 0xe0 && p[1] && p[2]) {
		*len = 3;
		return (uint32_t)(p[0] & 0x0f) << 12 |
		       (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3fu);
	}
	*len = 1;	/* 4-byte sequences: none is invisible */
	return 0xfffd;
}

uint32_t schema_invisible(const char *text, const char **name, size_t *off,
			  size_t *index)
{
	const unsigned char *p = (const unsigned char *)text;
	size_t i = 0, n = 0, len, k;

	while (p[i]) {
		uint32_t c = decode(p + i, &len);

		for (k = 0; c >= 0xa0 && k < sizeof(invisible) /
					     sizeof(invisible[0]); k++)
			if (invisible[k].cp == c) {
				*name = invisible[k].name;
				*off = i;
				*index = n;
				return c;
			}
		i += len;
		n++;
	}
	return 0;
}

int schema_parse_int(const char *s, int64_t *out)
{
	const char *p = s;
	uint64_t v = 0, lim;
	int neg = 0, over = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	if (!isdigit((unsigned char)*p))
		return SCHEMA_PARSE_BAD;
	for (s = p; isdigit((unsigned char)*p); p++) {
		unsigned dig = (unsigned)(*p - '0');
		if (v > (UINT64_MAX - dig) / 10)
			over = 1;
		else
			v = v * 10 + dig;
	}
	if (*p)
		return SCHEMA_PARSE_BAD;
	if (s[0] == '0' && p - s > 1)
		return SCHEMA_PARSE_LEADING_ZERO;
	lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	if (over || v > lim)
		return SCHEMA_PARSE_RANGE;
	if (neg)
		*out = v == lim ? INT64_MIN : -(int64_t)v;
	else
		*out = (int64_t)v;
	return SCHEMA_PARSE_OK;
}

/* YAML 1.2 core-schema decimal floats: -1, 0.5, .5, 2e3, 1.5E-3. No
 * hex, no inf/nan, no leading '+'. */
int schema_parse_num(const char *s, double *out)
{
	const char *p = s;
	int digits = 0;

	if (*p == '-')
		p++;
	for (; isdigit((unsigned char)*p); p++)
		digits++;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			digits++;
	if (digits == 0)
		return SCHEMA_PARSE_BAD;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return SCHEMA_PARSE_BAD;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return SCHEMA_PARSE_BAD;
	*out = strtod(s, NULL);
	return isfinite(*out) ? SCHEMA_PARSE_OK : SCHEMA_PARSE_RANGE;
}

int schema_is_inf(const char *s)
{
	if (*s == '.')
		s++;
	return strcasecmp(s, "inf") == 0;
}

int schema_parse_bool(const char *s, int *out)
{
	static const char *const t[] = {"true", "True", "TRUE"};
	static const char *const f[] = {"false", "False", "FALSE"};
	size_t i;

	for (i = 0; i < 3; i++) {
		if (strcmp(s, t[i]) == 0)
			return *out = 1, SCHEMA_PARSE_OK;
		if (strcmp(s, f[i]) == 0)
			return *out = 0, SCHEMA_PARSE_OK;
	}
	return SCHEMA_PARSE_BAD;
}

/* The index of s among f's values only (no aliases), or -1. */
static int schema_enum_index_plain(const struct schema_field *f,
				   const char *s)
{
	int i;

	for (i = 0; f->values[i]; i++)
		if (strcmp(f->values[i], s) == 0)
			return i;
	return -1;
}

int schema_enum_index(const struct schema_field *f, const char *s)
{
	int i;

	for (i = 0; f->values[i]; i++)
		if (strcmp(f->values[i], s) == 0)
			return i;
	for (i = 0; f->value_aliases && f->value_aliases[i]; i += 2)
		if (strcmp(f->value_aliases[i], s) == 0)
			return schema_enum_index_plain(f, f->value_aliases[i + 1]);
	return -1;
}

int schema_is_quantity(enum schema_type t)
{
	return t >= ST_BYTES && t <= ST_FREQ;
}

int schema_unit_kind(enum schema_type t)
{
	return (int)t - (int)ST_BYTES + (int)UNIT_BYTES;
}

static int has_lower(const struct schema_field *f)
{
	return f->min != 0 || f->max != 0 || (f->flags & SF_MIN_EXCL);
}

static int has_upper(const struct schema_field *f)
{
	return has_lower(f) && f->max > f->min;
}

int schema_in_bounds(const struct schema_field *f, double v)
{
	if ((f->flags & SF_ZERO_OFF) && v == 0)
		return 1;
	if (has_lower(f) && ((f->flags & SF_MIN_EXCL) ? v <= f->min
						       : v < f->min))
		return 0;
	return !has_upper(f) || v <= f->max;
}

static void bound_text(const struct schema_field *f, double v, char *buf,
		       size_t n)
{
	if (schema_is_quantity(f->type))
		units_format(buf, n, v,
			     (enum unit_kind)schema_unit_kind(f->type));
	else if (f->type == ST_INT)
		snprintf(buf, n, "%.0f", v);
	else
		snprintf(buf, n, "%g", v);
}

static const char *type_phrase(const struct schema_field *f)
{
	switch (f->type) {
	case ST_INT: return "an integer";
	case ST_NUM: return f->flags & SF_WHOLE ? "a whole number" :
			    f->flags & SF_BOOLNUM ? "true, false or a number" :
			    "a number";
	default: break;
	}
	return units_kind_phrase((enum unit_kind)schema_unit_kind(f->type));
}

/* "an integer from 1 to 1024", "a bandwidth greater than 0 B/s". */
void schema_range_text(const struct schema_field *f, char *buf, size_t n)
{
	char lo[48], hi[48];
	int excl = (f->flags & SF_MIN_EXCL) != 0;
	size_t k = 0;

	bound_text(f, f->min, lo, sizeof(lo));
	bound_text(f, f->max, hi, sizeof(hi));
	if ((f->flags & SF_ZERO_OFF) && n > 0) {
		char zero[48];

		/* a quantity's 0 with its unit: a bare 0 is "missing unit"
		 * (units_parse), which the text asked for */
		bound_text(f, 0, zero, sizeof(zero));
		k = (size_t)snprintf(buf, n, "%s (none) or ", zero);
		if (k >= n)
			return;
		buf += k;
		n -= k;
	}
	if (!has_lower(f))
		snprintf(buf, n, "%s that fits in 64 bits", type_phrase(f));
	else if (has_upper(f))
		snprintf(buf, n, excl ? "%s greater than %s and at most %s"
				      : "%s from %s to %s",
			 type_phrase(f), lo, hi);
	else
		snprintf(buf, n, excl ? "%s greater than %s" : "%s of at least %s",
			 type_phrase(f), lo);
}

/* An integer or number that satisfies the bounds, for "such as". */
static void number_example(const struct schema_field *f, char *buf,
			   size_t n)
{
	double x = f->type == ST_INT || (f->flags & SF_WHOLE) ? 8 : 0.5;

	if (f->def && (isdigit((unsigned char)f->def[0]) || f->def[0] == '-')) {
		snprintf(buf, n, "%s", f->def);
		return;
	}
	if (has_lower(f) && !schema_in_bounds(f, x))
		x = f->min + ((f->flags & SF_MIN_EXCL) ? 1 : 0);
	if (has_upper(f) && x > f->max)
		x = f->max;
	bound_text(f, x, buf, n);
}

static void enum_list(const struct schema_field *f, char *buf, size_t n)
{
	size_t k = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; f->values[i] && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "",
				      f->values[i]);
}

/* What a field expects, with an example: "an integer such as 8". */
void schema_expect_text(const struct schema_field *f, char *buf, size_t n)
{
	char ex[64], list[512];

	switch (f->type) {
	case ST_INT:
	case ST_NUM:
		number_example(f, ex, sizeof(ex));
		snprintf(buf, n, "%s such as %s", type_phrase(f), ex);
		break;
	case ST_BOOL: snprintf(buf, n, "true or false"); break;
	case ST_STRING: snprintf(buf, n, "a string"); break;
	case ST_ENUM:
		enum_list(f, list, sizeof(list));
		snprintf(buf, n, "one of %s", list);
		break;
	case ST_INT_LIST:
		if (f->values) {
			enum_list(f, list, sizeof(list));
			snprintf(buf, n, "a list of %s", list);
		} else {
			snprintf(buf, n, "a list of integers such as [1, 2, 4]");
		}
		break;
	case ST_SECTION:
		snprintf(buf, n, "a mapping (%s)", f->sub->help);
		break;
	case ST_REF:
		snprintf(buf, n, "a %s preset name, a path or a mapping",
			 f->sub->kind);
		break;
	default:
		snprintf(buf, n, "%s such as '%s'", type_phrase(f),
			 units_example((enum unit_kind)
				       schema_unit_kind(f->type)));
		break;
	}
}

/* -------- did you mean -------- */

#define DIST_MAX_LEN 64

static int fold(int c)
{
	return tolower((unsigned char)c);
}

static int min3(int a, int b, int c)
{
	int m = a < b ? a : b;
	return m < c ? m : c;
}

/* Optimal string alignment distance (Levenshtein plus adjacent
 * transpositions), ignoring case; INT_MAX for very long words. */
static int distance(const char *a, const char *b)
{
	int row[3][DIST_MAX_LEN + 1];
	size_t n = strlen(a), m = strlen(b), i, j;

	if (n > DIST_MAX_LEN || m > DIST_MAX_LEN)
		return INT_MAX;
	for (j = 0; j <= m; j++)
		row[0][j] = (int)j;
	for (i = 1; i <= n; i++) {
		int *cur = row[i % 3], *prev = row[(i - 1) % 3];
		int *prev2 = row[(i + 1) % 3];	/* (i - 2) % 3 */

		cur[0] = (int)i;
		for (j = 1; j <= m; j++) {
			int cost = fold(a[i - 1]) != fold(b[j - 1]);

			cur[j] = min3(prev[j] + 1, cur[j - 1] + 1,
				      prev[j - 1] + cost);
			if (i > 1 && j > 1 && fold(a[i - 1]) == fold(b[j - 2]) &&
			    fold(a[i - 2]) == fold(b[j - 1]) &&
			    prev2[j - 2] + 1 < cur[j])
				cur[j] = prev2[j - 2] + 1;
		}
	}
	return row[n % 3][m];
}

int schema_name_index(const char *const *names, const char *name)
{
	int i;

	for (i = 0; names[i]; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return -1;
}

const char *schema_closest(const char *word, const char *const *cand,
			   size_t n)
{
	size_t len = strlen(word), i;
	int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
	int best = INT_MAX;
	const char *pick = NULL;

	for (i = 0; i < n; i++) {
		int dist = distance(word, cand[i]);

		if (dist < best) {
			best = dist;
			pick = cand[i];
		}
	}
	return best <= limit ? pick : NULL;
}

/* -------- absent values -------- */

int schema_is_optional(const struct schema_field *f)
{
	return !f->def && !(f->flags & SF_REQUIRED);
}

/* The double an absent key gives a ST_NUM or quantity field; -1 when the
 * default does not parse (never equal to a loaded value). */
static double default_double(const struct schema_field *f)
{
	const char *why;
	double x = 0;

	if (!f->def)
		return 0;
	if (f->type == ST_NUM && (f->flags & SF_INF) && schema_is_inf(f->def))
		return INFINITY;
	if (f->type == ST_NUM)
		return schema_parse_num(f->def, &x) == SCHEMA_PARSE_OK ? x : -1;
	return units_parse(f->def, (enum unit_kind)schema_unit_kind(f->type),
			   &x, &why) == 0 ? x : -1;
}

static int int_at_default(const struct schema_field *f, const void *slot)
{
	int64_t x = 0;

	if (f->def && schema_parse_int(f->def, &x) != SCHEMA_PARSE_OK)
		return 0;
	return *(const int64_t *)slot == x;
}

static int choice_at_default(const struct schema_field *f, const void *slot)
{
	int x = -1;

	if (f->def && f->type == ST_BOOL &&
	    schema_parse_bool(f->def, &x) != SCHEMA_PARSE_OK)
		return 0;
	if (f->def && f->type == ST_ENUM)
		x = schema_enum_index(f, f->def);
	return *(const int *)slot == x;
}

static int section_at_default(const struct schema *s, const void *obj)
{
	size_t i;

	for (i = 0; i < s->nfields; i++)
		if (!schema_at_default(&s->fields[i],
				       (const char *)obj + s->fields[i].offset))
			return 0;
	return 1;
}

int schema_at_default(const struct schema_field *f, const void *slot)
{
	const char *str;

	switch (f->type) {
	case ST_INT: return int_at_default(f, slot);
	case ST_BOOL:
	case ST_ENUM: return choice_at_default(f, slot);
	case ST_STRING:
		str = *(const char *const *)slot;
		return f->def ? str && strcmp(str, f->def) == 0 : !str;
	case ST_INT_LIST:
		/* an optional list given as [] is printed (it may differ from
		 * its absence: training.recompute_modules) */
		return !f->def && ((const struct schema_int_list *)slot)->n == 0 &&
		       !((const struct schema_int_list *)slot)->given;
	case ST_SECTION: return section_at_default(f->sub, slot);
	case ST_REF: return *(const void *const *)slot == NULL;
	default: break;
	}
	return *(const double *)slot == default_double(f);
}

int schema_omitted(const struct schema_field *f, const void *slot)
{
	if (f->type == ST_SECTION)
		return (f->flags & SF_OPTIONAL) && schema_at_default(f, slot);
	return schema_is_optional(f) && schema_at_default(f, slot);
}
