/*
 * schema_print.c - a resolved struct back out through its schema table:
 * as YAML with units (`llmsim config show`), as canonical JSON in SI units
 * (the results store and config_hash), and the help for a kind.
 *
 * The YAML loads back as the same kind into an identical struct: every
 * quantity is printed with units_format (which round-trips exactly), every
 * number with the fewest digits that read back to the same double, enums
 * by name, strings quoted whenever a plain scalar could read differently.
 * Fields an absent key would leave unset are left out (schema_omitted),
 * in both YAML and JSON, so equal configs print and hash equal.
 */
#include <cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/mem.h"
#include "schema_impl.h"
#include "base/units.h"

/* The shortest %g text that reads back (strtod) as exactly v. */
static void format_double(char *buf, size_t n, double v)
{
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(buf, n, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Words a plain YAML scalar would read as something other than a
 * string. */
static int reserved(const char *s)
{
	static const char *const words[] = {
		"true", "false", "null", "yes", "no", "on", "off", "y", "n",
	};
	size_t i;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasecmp(s, words[i]) == 0)
			return 1;
	return 0;
}

static int plain_safe(const char *s)
{
	const char *p;

	if (!isalpha((unsigned char)s[0]) && s[0] != '_')
		return 0;
	for (p = s; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_.-/+", *p))
			return 0;
	return !reserved(s);
}

/* YAML reads NEL, LS and PS as line breaks even inside quotes, and a
 * BOM is not content: escape them. Returns the UTF-8 length escaped, or
 * 0 when p does not start one of them. */
static size_t special_char(FILE *out, const unsigned char *p)
{
	if (p[0] == 0xc2 && p[1] == 0x85) {
		fputs("\\N", out);
		return 2;
	}
	if (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9)) {
		fputs(p[2] == 0xa8 ? "\\L" : "\\P", out);
		return 3;
	}
	if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf) {
		fputs("\\uFEFF", out);
		return 3;
	}
	return 0;
}

void schema_print_string(FILE *out, const char *s)
{
	const unsigned char *p;
	size_t n;

	if (plain_safe(s)) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (p = (const unsigned char *)s; *p; p++) {
		if ((n = special_char(out, p)) > 0)
			p += n - 1;
		else if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", out);
		else if (*p == '\t')
			fputs("\\t", out);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

/* A list of integers, or of enum names when values is not NULL. */
static void print_list(FILE *out, const struct schema_int_list *l,
		       const char *const *values)
{
	size_t i;

	fputc('[', out);
	for (i = 0; i < l->n; i++)
		if (values)
			fprintf(out, "%s%s", i ? ", " : "", values[l->v[i]]);
		else
			fprintf(out, "%s%lld", i ? ", " : "", (long long)l->v[i]);
	fputc(']', out);
}

static int prints_anything(const struct schema *s, const void *obj)
{
	size_t i;

	for (i = 0; i < s->nfields; i++)
		if (!schema_omitted(&s->fields[i],
				    (const char *)obj + s->fields[i].offset))
			return 1;
	return 0;
}

/* A nested mapping after "key:": on the following lines, or {}. */
static void print_nested(FILE *out, const struct schema *s, const void *obj,
			 int indent)
{
	if (!prints_anything(s, obj)) {
		fputs(" {}\n", out);
		return;
	}
	fputc('\n', out);
	schema_print_yaml(out, s, obj, indent + 2);
}

static void print_field(FILE *out, const struct schema_field *f,
			const void *slot, int indent)
{
	char buf[64];
	int choice;

	fprintf(out, "%*s%s:", indent, "", f->key);
	switch (f->type) {
	case ST_INT:
		fprintf(out, " %lld\n", (long long)*(const int64_t *)slot);
		return;
	case ST_NUM:
		if (isinf(*(const double *)slot)) {
			fprintf(out, " inf\n");
			return;
		}
		format_double(buf, sizeof(buf), *(const double *)slot);
		fprintf(out, " %s\n", buf);
		return;
	case ST_BOOL:
		fprintf(out, " %s\n", *(const int *)slot ? "true" : "false");
		return;
	case ST_ENUM:
		choice = *(const int *)slot;
		fprintf(out, " %s\n", choice >= 0 ? f->values[choice] : "null");
		return;
	case ST_STRING:
		fputc(' ', out);
		schema_print_string(out, *(const char *const *)slot ?
					 *(const char *const *)slot : "");
		fputc('\n', out);
		return;
	case ST_INT_LIST:
		fputc(' ', out);
		print_list(out, slot, f->values);
		fputc('\n', out);
		return;
	case ST_SECTION:
		print_nested(out, f->sub, slot, indent);
		return;
	case ST_REF:
		print_nested(out, f->sub, *(const void *const *)slot, indent);
		return;
	default:
		units_format(buf, sizeof(buf), *(const double *)slot,
			     (enum unit_kind)schema_unit_kind(f->type));
		fprintf(out, " %s\n", buf);
		return;
	}
}

void schema_print_yaml(FILE *out, const struct schema *s, const void *obj,
		       int indent)
{
	size_t i;

	for (i = 0; i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];
		const void *slot = (const char *)obj + f->offset;

		if (!schema_omitted(f, slot))
			print_field(out, f, slot, indent);
	}
}

/* -------- JSON -------- */

static cJSON *list_json(const struct schema_int_list *l,
			const char *const *values)
{
	cJSON *arr = cJSON_CreateArray(), *item;
	size_t i;

	for (i = 0; arr && i < l->n; i++) {
		item = values ? cJSON_CreateString(values[l->v[i]]) :
		       cJSON_CreateNumber((double)l->v[i]);
		if (!item || !cJSON_AddItemToArray(arr, item)) {
			cJSON_Delete(item);
			cJSON_Delete(arr);
			return NULL;
		}
	}
	return arr;
}

static cJSON *to_json(const struct schema *s, const void *obj, int units);

/* One field; units: quantities as strings with their unit. */
static cJSON *field_json(const struct schema_field *f, const void *slot,
			 int units)
{
	char buf[64];
	int choice;

	switch (f->type) {
	case ST_INT:
		return cJSON_CreateNumber((double)*(const int64_t *)slot);
	case ST_BOOL:
		return cJSON_CreateBool(*(const int *)slot);
	case ST_ENUM:
		choice = *(const int *)slot;
		return choice >= 0 ? cJSON_CreateString(f->values[choice])
				   : cJSON_CreateNull();
	case ST_STRING:
		return *(const char *const *)slot ?
		       cJSON_CreateString(*(const char *const *)slot) :
		       cJSON_CreateNull();
	case ST_INT_LIST:
		return list_json(slot, f->values);
	case ST_SECTION:
		return to_json(f->sub, slot, units);
	case ST_REF:
		return to_json(f->sub, *(const void *const *)slot, units);
	default:	/* ST_NUM and quantities: SI doubles */
		if (isinf(*(const double *)slot))	/* SF_INF */
			return cJSON_CreateString("inf");
		if (units && f->type != ST_NUM)
			return cJSON_CreateString(units_format(buf, sizeof(buf),
				*(const double *)slot,
				(enum unit_kind)schema_unit_kind(f->type)));
		return cJSON_CreateNumber(*(const double *)slot);
	}
}

static cJSON *to_json(const struct schema *s, const void *obj, int units)
{
	cJSON_Hooks hooks = {mem_alloc, mem_free};
	cJSON *o, *v;
	size_t i;

	cJSON_InitHooks(&hooks);	/* failure injection reaches cJSON */
	o = cJSON_CreateObject();
	for (i = 0; o && i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];
		const void *slot = (const char *)obj + f->offset;

		if (schema_omitted(f, slot))
			continue;
		v = field_json(f, slot, units);
		if (!v || !cJSON_AddItemToObject(o, f->key, v)) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

struct cJSON *schema_to_json(const struct schema *s, const void *obj)
{
	return to_json(s, obj, 0);
}

struct cJSON *schema_to_json_units(const struct schema *s, const void *obj)
{
	return to_json(s, obj, 1);
}

/* -------- help -------- */

static const char *type_name(const struct schema_field *f)
{
	static const char *const names[ST_TYPE_COUNT] = {
		"integer", "number", "true|false", "string", "choice", "size",
		"bandwidth", "time", "FLOP rate", "frequency",
		"list of integers", "section", "reference",
	};
	return names[f->type];
}

/* "required", "default 8", "optional" and the bounds or values. */
static void help_terms(const struct schema_field *f, char *buf, size_t n)
{
	char what[640];
	size_t k;

	if (f->flags & SF_REQUIRED)
		k = (size_t)snprintf(buf, n, "required");
	else if (f->def)
		k = (size_t)snprintf(buf, n, "default %s", f->def);
	else
		k = (size_t)snprintf(buf, n, "optional");
	if (k >= n)
		return;
	if (f->type == ST_ENUM || f->type == ST_REF) {
		schema_expect_text(f, what, sizeof(what));
		snprintf(buf + k, n - k, "; %s", what);
	} else if ((f->type == ST_INT || f->type == ST_NUM ||
		    schema_is_quantity(f->type)) &&
		   (f->min != 0 || f->max != 0 || (f->flags & SF_MIN_EXCL))) {
		schema_range_text(f, what, sizeof(what));
		snprintf(buf + k, n - k, "; %s", what);
	} else if (schema_is_quantity(f->type)) {
		schema_expect_text(f, what, sizeof(what));
		snprintf(buf + k, n - k, "; %s", what);
	}
	k = strlen(buf);
	if ((f->flags & SF_FIT) && k < n)
		snprintf(buf + k, n - k, "; fittable (llmsim calibrate)");
}

static void help_fields(FILE *out, const struct schema *s, const char *pre)
{
	char key[256], terms[768];
	size_t i, k;

	for (i = 0; i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];

		snprintf(key, sizeof(key), "%s%s", pre, f->key);
		help_terms(f, terms, sizeof(terms));
		fprintf(out, "  %-28s %s (%s)\n", key, type_name(f), terms);
		if (f->help)
			fprintf(out, "  %-28s   %s\n", "", f->help);
		for (k = 0; f->aliases && f->aliases[k]; k++)
			fprintf(out, "  %-28s   also accepted as '%s'\n", "",
				f->aliases[k]);
		if (f->type == ST_SECTION) {
			snprintf(key, sizeof(key), "%s%s.", pre, f->key);
			help_fields(out, f->sub, key);
		}
	}
}

void schema_print_help(FILE *out, const struct schema *s)
{
	size_t i;

	fprintf(out, "%s: %s\n", s->kind, s->help);
	for (i = 0; s->preset_dirs && s->preset_dirs[i]; i++)
		fprintf(out, "presets: %s/NAME.yaml\n", s->preset_dirs[i]);
	fputs("\nkeys:\n", out);
	help_fields(out, s, "");
	if (s->ignored_keys && s->ignored_keys[0]) {
		fputs("\naccepted and ignored (they do not change performance):\n"
		      " ", out);
		for (i = 0; s->ignored_keys[i]; i++)
			fprintf(out, " %s", s->ignored_keys[i]);
		fputc('\n', out);
	}
	fputs("\nQuantities carry units: sizes 80 GB or 64 GiB (G = 1e9, "
	      "Gi = 2^30),\nbandwidths 450 GB/s or 400 Gbit/s (bits and bytes "
	      "differ), times 1.5 us,\nrates 989 TFLOP/s, frequencies 2100 MHz."
	      "\n", out);
}
