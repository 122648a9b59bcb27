/*
 * schema.c - load a config mapping into its typed struct by walking the
 * kind's schema table.
 *
 * The mapping is walked in document order, so errors come out in the
 * order the user reads the file; then every field no key named gets its
 * default (parsed exactly as if the user had written it; a default that
 * does not parse is a BUG in the table) or is reported as missing when
 * required. The kind's check() runs only when every field of the object
 * loaded, since it may rely on them (a job's check reads its system).
 *
 * Every message has the form
 *   FILE:LINE:COL: error: 'dotted.key': expected WHAT (with an example),
 *   got 'TEXT'
 * with the reason or a hint after it where one helps.
 */
#include "schema.h"

#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cnode.h"
#include "base/diag.h"
#include "base/arena.h"
#include "schema_impl.h"
#include "base/units.h"

/* Past this many errors in one load the rest of the file is skipped: a
 * user fixes the first hundred before reading further, and a hostile
 * file cannot make us print millions of lines. */
#define MAX_ERRORS 100

#define PATH_MAX_LEN 256

struct loader {
	struct arena *a;		/* strings, lists, referenced structs */
	struct diag *d;			/* where errors go */
	unsigned start;			/* d->errors when the load began */
	int report_defaults;		/* schema_check_table: report, not BUG */
};

static int too_many_errors(const struct loader *ld)
{
	return ld->d->oom || ld->d->errors - ld->start >= MAX_ERRORS;
}

static void errf(struct loader *ld, const struct cnode *at, const char *path,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void errf(struct loader *ld, const struct cnode *at, const char *path,
		 const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (path)
		diag_error(ld->d, at->file, at->line, at->col, "'%s': %s",
			   path, msg);
	else
		diag_error(ld->d, at->file, at->line, at->col, "%s", msg);
}

/* What the user wrote, for "got ...": 'text' (control characters
 * escaped, cut after 60 characters), null, a mapping or a sequence. */
static const char *shown(const struct cnode *v, char *buf, size_t n)
{
	const unsigned char *p;
	size_t k = 0, chars = 0;

	if (v->kind != CNODE_SCALAR)
		return v->kind == CNODE_MAP ? "a mapping" : "a sequence";
	if (cnode_is_null(v))
		return "null";
	buf[k++] = '\'';
	for (p = (const unsigned char *)v->text; *p && k + 12 < n; p++) {
		const char *name;
		size_t off, idx;
		uint32_t c;

		if ((*p & 0xc0) != 0x80 && ++chars > 60) {
			memcpy(buf + k, "...", 3);
			k += 3;
			break;
		}
		/* An invisible character is shown by its code point. */
		if (*p >= 0xc2 && (c = schema_invisible((const char *)p, &name,
							&off, &idx)) &&
		    off == 0) {
			k += (size_t)snprintf(buf + k, n - k, "<U+%04X>", c);
			while ((p[1] & 0xc0) == 0x80)
				p++;
			continue;
		}
		if (*p < 0x20)
			k += (size_t)snprintf(buf + k, n - k, "\\x%02x", *p);
		else
			buf[k++] = (char)*p;
	}
	buf[k++] = '\'';
	buf[k] = '\0';
	return buf;
}

static void join(char *buf, const char *prefix, const char *key)
{
	if (prefix)
		snprintf(buf, PATH_MAX_LEN, "%s.%s", prefix, key);
	else
		snprintf(buf, PATH_MAX_LEN, "%s", key);
}

/* "; it contains U+00A0 (a no-break space) at column 37: ..." when the
 * scalar holds a character its reader cannot see, else "". */
static const char *invisible_note(const struct cnode *v, char *buf,
				  size_t n)
{
	const char *name;
	size_t off, idx;
	uint32_t c;

	if (v->kind != CNODE_SCALAR ||
	    !(c = schema_invisible(v->text, &name, &off, &idx)))
		return "";
	if (!v->quoted && !strchr(v->text, '\n'))
		snprintf(buf, n, "; it contains U+%04X (%s) at column %zu: "
			 "type a plain space, or nothing", c, name,
			 (size_t)v->col + idx);
	else
		snprintf(buf, n, "; it contains U+%04X (%s): type a plain "
			 "space, or nothing", c, name);
	return buf;
}

/* "expected WHAT, got TEXT" plus an optional hint. Returns -1. */
static int type_error(struct loader *ld, const struct schema_field *f,
		      const struct cnode *v, const char *path,
		      const char *hint)
{
	char want[640], got[96], note[160];

	schema_expect_text(f, want, sizeof(want));
	errf(ld, v, path, "expected %s, got %s%s%s", want,
	     shown(v, got, sizeof(got)), hint ? hint : "",
	     invisible_note(v, note, sizeof(note)));
	return -1;
}

static int range_error(struct loader *ld, const struct schema_field *f,
		       const struct cnode *v, const char *path)
{
	char want[192], got[96];

	schema_range_text(f, want, sizeof(want));
	errf(ld, v, path, "expected %s, got %s", want,
	     shown(v, got, sizeof(got)));
	return -1;
}

/* A value made a string (quoted, a block scalar, tagged !!str) that
 * would have been fine plain: the hint names how it was made one. */
static int quoted_error(struct loader *ld, const struct schema_field *f,
			const struct cnode *v, const char *path)
{
	return type_error(ld, f, v, path,
			  v->quoted == CNODE_STR_TAG ?
			  " (tagged !!str, which makes it a string; drop "
			  "the tag)" :
			  v->quoted == CNODE_BLOCK ?
			  " (a block scalar, | or >, which is a string; "
			  "write the value plain after the key)" :
			  " (a quoted string; write it without quotes)");
}

/* -------- loading values by type -------- */

/* What integer and number fields answer alike once rc (enum
 * schema_parse_status) is known: 0 to go on, or -1 after reporting. */
static int number_text(struct loader *ld, const struct schema_field *f,
		       const struct cnode *v, const char *path, int rc)
{
	if (v->quoted)
		return rc == SCHEMA_PARSE_BAD ? type_error(ld, f, v, path, NULL)
					      : quoted_error(ld, f, v, path);
	if (rc == SCHEMA_PARSE_LEADING_ZERO)
		return type_error(ld, f, v, path, " (no leading zeros: YAML "
				  "1.1 reads them as octal)");
	if (rc == SCHEMA_PARSE_BAD)
		return type_error(ld, f, v, path, NULL);
	return 0;
}

static int load_int(struct loader *ld, const struct schema_field *f,
		    const struct cnode *v, const char *path, int64_t *out)
{
	int64_t x = 0;
	int rc;

	if (v->kind != CNODE_SCALAR)
		return type_error(ld, f, v, path, NULL);
	rc = schema_parse_int(v->text, &x);
	if (number_text(ld, f, v, path, rc) != 0)
		return -1;
	if (rc == SCHEMA_PARSE_RANGE || !schema_in_bounds(f, (double)x))
		return range_error(ld, f, v, path);
	*out = x;
	return 0;
}

static int load_num(struct loader *ld, const struct schema_field *f,
		    const struct cnode *v, const char *path, double *out)
{
	double x = 0;
	int rc;

	if (v->kind != CNODE_SCALAR)
		return type_error(ld, f, v, path, NULL);
	if ((f->flags & SF_INF) && (!v->quoted || v->quoted == CNODE_JSON_STR) &&
	    schema_is_inf(v->text)) {
		*out = INFINITY;
		return 0;
	}
	if ((f->flags & SF_BOOLNUM) &&
	    schema_parse_bool(v->text, &rc) == SCHEMA_PARSE_OK) {
		if (v->quoted)
			return quoted_error(ld, f, v, path);
		*out = rc;
		return 0;
	}
	rc = schema_parse_num(v->text, &x);
	if (number_text(ld, f, v, path, rc) != 0)
		return -1;
	if (rc == SCHEMA_PARSE_RANGE)
		return type_error(ld, f, v, path, " (out of range)");
	if ((f->flags & SF_WHOLE) && x != floor(x))
		return type_error(ld, f, v, path, NULL);
	if (!schema_in_bounds(f, x))
		return range_error(ld, f, v, path);
	*out = x;
	return 0;
}

static int load_bool(struct loader *ld, const struct schema_field *f,
		     const struct cnode *v, const char *path, int *out)
{
	int x = 0;

	if (v->kind != CNODE_SCALAR || schema_parse_bool(v->text, &x) != SCHEMA_PARSE_OK)
		return type_error(ld, f, v, path, NULL);
	if (v->quoted)
		return quoted_error(ld, f, v, path);
	*out = x;
	return 0;
}

static int load_enum(struct loader *ld, const struct schema_field *f,
		     const struct cnode *v, const char *path, int *out)
{
	const char *near;
	char hint[96];
	int i, n;

	if (v->kind != CNODE_SCALAR)
		return type_error(ld, f, v, path, NULL);
	i = schema_enum_index(f, v->text);
	if (i >= 0) {
		*out = i;
		return 0;
	}
	for (n = 0; f->values[n]; n++)
		;
	near = schema_closest(v->text, f->values, (size_t)n);
	if (near)
		snprintf(hint, sizeof(hint), "; did you mean '%s'?", near);
	return type_error(ld, f, v, path, near ? hint : NULL);
}

static int load_string(struct loader *ld, const struct schema_field *f,
		       const struct cnode *v, const char *path,
		       const char **out)
{
	if (v->kind != CNODE_SCALAR)
		return type_error(ld, f, v, path, NULL);
	*out = arena_strdup(ld->a, v->text);
	if (!*out) {
		diag_oom(ld->d);
		return -1;
	}
	return 0;
}

/* "80 Gb" is 10 GB: legal, but for a capacity almost surely a typo. */
static void warn_bits(struct loader *ld, const struct cnode *v,
		      const char *path, double x)
{
	size_t n = strlen(v->text);
	char fmt[64];

	while (n > 0 && isspace((unsigned char)v->text[n - 1]))
		n--;
	if (n == 0 || (v->text[n - 1] != 'b' &&
		       (n < 3 || strncmp(v->text + n - 3, "bit", 3) != 0)))
		return;
	units_format(fmt, sizeof(fmt), x, UNIT_BYTES);
	diag_warn(ld->d, v->file, v->line, v->col, "'%s': '%s' is in bits, "
		  "which is %s; write B for bytes", path, v->text, fmt);
}

static int load_quantity(struct loader *ld, const struct schema_field *f,
			 const struct cnode *v, const char *path,
			 double *out)
{
	enum unit_kind kind = (enum unit_kind)schema_unit_kind(f->type);
	const char *why = NULL;
	char want[128], got[96], note[160];
	double x = 0;

	if (v->kind != CNODE_SCALAR)
		return type_error(ld, f, v, path, NULL);
	if (units_parse(v->text, kind, &x, &why) != 0) {
		schema_expect_text(f, want, sizeof(want));
		errf(ld, v, path, "expected %s, got %s: %s%s%s", want,
		     shown(v, got, sizeof(got)), why,
		     strstr(v->text, "Bps") ? "; write 'GB/s' for bytes per "
		     "second or 'Gbit/s' for bits per second" : "",
		     invisible_note(v, note, sizeof(note)));
		return -1;
	}
	if (!schema_in_bounds(f, x))
		return range_error(ld, f, v, path);
	if (f->type == ST_BYTES)
		warn_bits(ld, v, path, x);
	*out = x;
	return 0;
}

static int load_list(struct loader *ld, const struct schema_field *f,
		     const struct cnode *v, const char *path,
		     struct schema_int_list *out)
{
	char item[PATH_MAX_LEN + 24];
	struct schema_field each = *f;	/* an item: an integer, same bounds */
	int64_t *vals = NULL;
	size_t i;
	int rc = 0;

	each.type = f->values ? ST_ENUM : ST_INT;
	each.def = NULL;
	if (v->kind != CNODE_SEQ)
		return type_error(ld, f, v, path, NULL);
	if (v->nitems > 0) {
		vals = arena_alloc(ld->a, v->nitems * sizeof(*vals));
		if (!vals) {
			diag_oom(ld->d);
			return -1;
		}
	}
	for (i = 0; i < v->nitems && !too_many_errors(ld); i++) {
		snprintf(item, sizeof(item), "%s[%zu]", path, i);
		if (f->values) {	/* a list of enum names, kept as indices */
			int choice = -1;

			if (load_enum(ld, &each, v->items[i], item, &choice) != 0)
				rc = -1;
			vals[i] = choice;
		} else if (load_int(ld, &each, v->items[i], item, &vals[i]) != 0) {
			rc = -1;
		}
	}
	out->v = vals;
	out->n = v->nitems;
	out->given = 1;
	return rc;
}

static int load_map(struct loader *ld, const struct schema *s,
		    const struct cnode *map, const char *path, void *obj);

static int load_ref(struct loader *ld, const struct schema_field *f,
		    const struct cnode *v, const char *path,
		    const void **out)
{
	void *p;

	/* Anything but a mapping is a reference config_load could not
	 * resolve; it has said why. */
	if (v->kind != CNODE_MAP)
		return -1;
	p = arena_alloc(ld->a, f->sub->size);
	if (!p) {
		diag_oom(ld->d);
		return -1;
	}
	*out = p;
	return load_map(ld, f->sub, v, path, p);
}

static int null_error(struct loader *ld, const struct schema_field *f,
		      const struct cnode *v, const char *path)
{
	char want[640];

	schema_expect_text(f, want, sizeof(want));
	if (f->def)
		errf(ld, v, path, "expected %s, got null (remove the key to "
		     "use the default '%s')", want, f->def);
	else
		errf(ld, v, path, "expected %s, got null (%s)", want,
		     (f->flags & SF_REQUIRED) ? "the key is required"
		     : "remove the key to leave it unset");
	return -1;
}

/* A scalar where a section with a scalar_key is expected: load it as the
 * mapping {scalar_key: scalar}, located where the scalar is. */
static int load_scalar_section(struct loader *ld,
			       const struct schema_field *f,
			       const struct cnode *v, const char *path,
			       void *slot)
{
	struct cnode *map = arena_alloc(ld->a, 2 * sizeof(*map));
	struct cnode_pair *pair = arena_alloc(ld->a, sizeof(*pair));

	if (!map || !pair) {
		diag_oom(ld->d);
		return -1;
	}
	map[0] = *v;
	map[0].kind = CNODE_MAP;
	map[0].text = NULL;
	map[0].pairs = pair;
	map[0].npairs = 1;
	map[1] = *v;
	map[1].text = f->sub->scalar_key;
	map[1].quoted = 0;
	pair->key = &map[1];
	pair->value = (struct cnode *)v;
	return load_map(ld, f->sub, map, path, slot);
}

static int load_value(struct loader *ld, const struct schema_field *f,
		      const struct cnode *v, const char *path, void *slot)
{
	if (f->type == ST_REF)
		return load_ref(ld, f, v, path, slot);
	if (cnode_is_null(v))
		return null_error(ld, f, v, path);
	switch (f->type) {
	case ST_INT: return load_int(ld, f, v, path, slot);
	case ST_NUM: return load_num(ld, f, v, path, slot);
	case ST_BOOL: return load_bool(ld, f, v, path, slot);
	case ST_STRING: return load_string(ld, f, v, path, slot);
	case ST_ENUM: return load_enum(ld, f, v, path, slot);
	case ST_INT_LIST: return load_list(ld, f, v, path, slot);
	case ST_SECTION:
		if (v->kind == CNODE_SCALAR && f->sub->scalar_key)
			return load_scalar_section(ld, f, v, path, slot);
		if (v->kind != CNODE_MAP)
			return type_error(ld, f, v, path, NULL);
		return load_map(ld, f->sub, v, path, slot);
	default: break;
	}
	if (schema_is_quantity(f->type))
		return load_quantity(ld, f, v, path, slot);
	BUG("schema field of unknown type");
}

/* -------- absent keys and defaults -------- */

static int load_default(struct loader *ld, const struct schema_field *f,
			const char *path, void *slot)
{
	struct cnode tmp, *node = &tmp;
	struct loader quiet_ld = *ld;
	struct diag quiet;
	char msg[PATH_MAX_LEN + 128];
	int rc;

	diag_init(&quiet, NULL);
	quiet_ld.d = &quiet;
	quiet_ld.start = 0;
	if (f->def[0] == '[' || f->def[0] == '{') {
		node = cnode_parse_yaml(ld->a, f->def, strlen(f->def),
					"<default>", &quiet);
	} else {
		memset(&tmp, 0, sizeof(tmp));
		tmp.kind = CNODE_SCALAR;
		tmp.file = "<default>";
		tmp.line = tmp.col = 1;
		tmp.text = f->def;
	}
	rc = node ? load_value(&quiet_ld, f, node, path, slot) : -1;
	if (quiet.oom) {
		diag_oom(ld->d);
		return -1;
	}
	if (rc == 0 && quiet.errors == 0)
		return 0;
	snprintf(msg, sizeof(msg), "the default '%s' of '%s' does not parse "
		 "as its type", f->def, path);
	if (!ld->report_defaults)
		BUG(msg);
	diag_error(ld->d, NULL, 0, 0, "schema: %s", msg);
	return -1;
}

static int load_absent(struct loader *ld, const struct schema_field *f,
		       const struct cnode *map, const char *path, void *slot)
{
	char want[640];
	struct cnode empty;

	if (f->def && f->type == ST_REF) {
		/* config_load resolves a reference's default before this. */
		errf(ld, map, path, "expected a %s mapping, got nothing (the "
		     "default '%s' is a reference config_load resolves)",
		     f->sub->kind, f->def);
		return -1;
	}
	if (f->def)
		return load_default(ld, f, path, slot);
	if (f->flags & SF_REQUIRED) {
		schema_expect_text(f, want, sizeof(want));
		errf(ld, map, path, "expected %s, got nothing (the key is "
		     "required)", want);
		return -1;
	}
	switch (f->type) {
	case ST_BOOL:
	case ST_ENUM:
		*(int *)slot = -1;
		break;
	case ST_SECTION:
		/* Apply the section's own defaults. */
		memset(&empty, 0, sizeof(empty));
		empty.kind = CNODE_MAP;
		empty.file = map->file;
		empty.line = map->line;
		empty.col = map->col;
		return load_map(ld, f->sub, &empty, path, slot);
	default:
		break;	/* zero or NULL, as the caller allocated it */
	}
	return 0;
}

/* -------- keys -------- */

const struct schema_field *schema_field(const struct schema *s,
					const char *key)
{
	size_t i, k;

	for (i = 0; i < s->nfields; i++) {
		const struct schema_field *f = &s->fields[i];

		if (strcmp(f->key, key) == 0)
			return f;
		for (k = 0; f->aliases && f->aliases[k]; k++)
			if (strcmp(f->aliases[k], key) == 0)
				return f;
	}
	return NULL;
}

static int ignored(const struct schema *s, const char *key)
{
	size_t i;

	for (i = 0; s->ignored_keys && s->ignored_keys[i]; i++)
		if (strcmp(s->ignored_keys[i], key) == 0)
			return 1;
	return 0;
}

/* A mapping read from a foreign format (JSON: Hugging Face config.json)
 * into a kind that says it reads one: unknown keys and nulls are what
 * that format writes, not mistakes. */
static int lenient(const struct schema *s, const struct cnode *n)
{
	size_t len = strlen(n->file);

	return s->ignored_keys && len > 5 &&
	       strcmp(n->file + len - 5, ".json") == 0;
}

/* Every key and alias of s, for suggestions (at most cap). */
static size_t all_keys(const struct schema *s, const char **out, size_t cap)
{
	size_t i, k, n = 0;

	for (i = 0; i < s->nfields && n < cap; i++) {
		out[n++] = s->fields[i].key;
		for (k = 0; s->fields[i].aliases && s->fields[i].aliases[k] &&
			    n < cap; k++)
			out[n++] = s->fields[i].aliases[k];
	}
	return n;
}

static void unknown_key(struct loader *ld, const struct schema *s,
			const struct cnode *key, const char *path)
{
	const char *keys[256], *near;
	char list[1024];
	size_t n = all_keys(s, keys, 256), i, k = 0;

	near = schema_closest(key->text, keys, n);
	if (near) {
		errf(ld, key, path, "unknown key, did you mean '%s'?", near);
		return;
	}
	if (strcmp(key->text, "preset") == 0) {
		errf(ld, key, path, "unknown key ('preset: NAME' works only "
		     "where a gpu, fabric, system or model is expected)");
		return;
	}
	errf(ld, key, path, "unknown key");
	list[0] = '\0';
	for (i = 0; i < s->nfields && k < sizeof(list); i++)
		k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%s",
				      i ? ", " : "", s->fields[i].key);
	diag_note(ld->d, key->file, key->line, key->col, "valid keys here: %s",
		  list);
}

/* A key of a foreign format (config.json) that is neither modeled nor
 * known to be irrelevant: real files carry many keys, so it is a
 * warning, with the modeled key it may be a typo of. */
static void foreign_key(struct diag *d, const struct schema *s,
			const struct cnode *key, const char *path)
{
	const char *keys[256], *near;
	size_t n = all_keys(s, keys, 256);

	near = schema_closest(key->text, keys, n);
	if (near)
		diag_warn(d, key->file, key->line, key->col, "'%s': key not "
			  "modeled by llmsim and ignored; did you mean '%s'?",
			  path, near);
	else
		diag_warn(d, key->file, key->line, key->col, "'%s': key not "
			  "modeled by llmsim and not known to be irrelevant; "
			  "ignored", path);
}

void schema_warn_foreign(struct diag *d, const struct schema *s,
			 const struct cnode *key)
{
	if (!schema_field(s, key->text) && !ignored(s, key->text))
		foreign_key(d, s, key, key->text);
}

/* `fitted_on: {KEY: [CASE, ...]}`: provenance of fitted fields (see
 * schema.h). 0, or -1 after reporting. */
static int check_fitted_on(struct loader *ld, const struct schema *s,
			   const struct cnode *v, const char *path)
{
	char got[96];
	size_t i, j;
	int rc = 0;

	if (v->kind != CNODE_MAP) {
		errf(ld, v, path, "expected a mapping of fitted keys to the "
		     "case ids they were fitted on, such as '{sync: "
		     "[C-MI300X-1N8G-ALLREDUCE]}', got %s",
		     shown(v, got, sizeof(got)));
		return -1;
	}
	for (i = 0; i < v->npairs; i++) {
		const struct cnode *k = v->pairs[i].key, *ids = v->pairs[i].value;

		if (!schema_field(s, k->text)) {
			errf(ld, k, path, "'%s' is not a key of this mapping: "
			     "fitted_on names fields beside it", k->text);
			rc = -1;
			continue;
		}
		if (ids->kind != CNODE_SEQ || ids->nitems == 0) {
			errf(ld, ids, path, "'%s': expected a list of case ids, "
			     "got %s", k->text, shown(ids, got, sizeof(got)));
			rc = -1;
			continue;
		}
		for (j = 0; j < ids->nitems; j++)
			if (ids->items[j]->kind != CNODE_SCALAR ||
			    cnode_is_null(ids->items[j])) {
				errf(ld, ids->items[j], path, "'%s': expected "
				     "a case id, got %s", k->text,
				     shown(ids->items[j], got, sizeof(got)));
				rc = -1;
			}
	}
	return rc;
}

/* The first pass: every key in document order. seen[i] is the key that
 * set field i. Returns 0 or -1 (some error). */
static int load_pairs(struct loader *ld, const struct schema *s,
		      const struct cnode *map, const char *path, void *obj,
		      const struct cnode **seen)
{
	char sub[PATH_MAX_LEN];
	int rc = 0;
	size_t i;

	for (i = 0; i < map->npairs && !too_many_errors(ld); i++) {
		const struct cnode *k = map->pairs[i].key;
		const struct cnode *v = map->pairs[i].value;
		const struct schema_field *f = schema_field(s, k->text);
		size_t fi;

		join(sub, path, k->text);
		if (!f && strcmp(k->text, "fitted_on") == 0) {
			if (check_fitted_on(ld, s, v, sub) != 0)
				rc = -1;
			continue;
		}
		if (!f) {
			if (ignored(s, k->text))
				continue;
			if (lenient(s, k)) {
				foreign_key(ld->d, s, k, sub);
				continue;
			}
			unknown_key(ld, s, k, sub);
			rc = -1;
			continue;
		}
		fi = (size_t)(f - s->fields);
		if (seen[fi]) {
			errf(ld, k, sub, "sets '%s' again (given as '%s' at "
			     "line %d); give it once", f->key, seen[fi]->text,
			     seen[fi]->line);
			rc = -1;
			continue;
		}
		/* null: Hugging Face's way to say absent, except of a key
		 * the model needs, reported at the null (not at 1:1 as
		 * missing, where the file's mapping starts) */
		if (cnode_is_null(v) && lenient(s, v) &&
		    !((f->flags & SF_REQUIRED) && !f->def))
			continue;
		seen[fi] = k;
		if (load_value(ld, f, v, sub, (char *)obj + f->offset) != 0)
			rc = -1;
	}
	return rc;
}

static int load_map(struct loader *ld, const struct schema *s,
		    const struct cnode *map, const char *path, void *obj)
{
	const struct cnode **seen;
	char sub[PATH_MAX_LEN], got[96];
	int rc;
	size_t i;

	if (map->kind != CNODE_MAP) {
		errf(ld, map, path, "expected a mapping (%s), got %s", s->help,
		     shown(map, got, sizeof(got)));
		return -1;
	}
	seen = arena_alloc(ld->a, (s->nfields + 1) * sizeof(*seen));
	if (!seen) {
		diag_oom(ld->d);
		return -1;
	}
	rc = load_pairs(ld, s, map, path, obj, seen);
	for (i = 0; i < s->nfields && !too_many_errors(ld); i++) {
		if (seen[i])
			continue;
		join(sub, path, s->fields[i].key);
		if (load_absent(ld, &s->fields[i], map, sub,
				(char *)obj + s->fields[i].offset) != 0)
			rc = -1;
	}
	if (too_many_errors(ld))
		return -1;
	if (rc == 0 && s->check && s->check(obj, &(struct schema_at){ map, path }, ld->d) != 0)
		rc = -1;
	return rc;
}

int schema_load(const struct schema *s, const struct cnode *map,
		struct arena *a, struct diag *d, void *obj)
{
	struct loader ld = {a, d, d->errors, 0};
	int rc = load_map(&ld, s, map, NULL, obj);

	if (!d->oom && d->errors - ld.start >= MAX_ERRORS)
		diag_note(d, map->file, 0, 0, "too many errors; stopped "
			  "after %d", MAX_ERRORS);
	return rc;
}

/* -------- checking a table -------- */

static void table_error(struct diag *d, const struct schema *s,
			const struct schema_field *f, const char *what)
{
	diag_error(d, NULL, 0, 0, "schema %s: '%s': %s", s->kind,
		   f && f->key ? f->key : "?", what);
}

/* Bytes a field of this type occupies in its struct. */
static size_t storage_size(const struct schema_field *f)
{
	switch (f->type) {
	case ST_INT: return sizeof(int64_t);
	case ST_BOOL:
	case ST_ENUM: return sizeof(int);
	case ST_STRING: return sizeof(const char *);
	case ST_REF: return sizeof(const void *);
	case ST_INT_LIST: return sizeof(struct schema_int_list);
	case ST_SECTION: return f->sub ? f->sub->size : 0;
	default: return sizeof(double);
	}
}

static void check_names(const struct schema *s, struct diag *d)
{
	const char *names[512];
	size_t n = all_keys(s, names, 512), i, j;

	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				table_error(d, s, schema_field(s, names[i]),
					    "key or alias listed twice");
}

static void check_field(struct loader *ld, const struct schema *s,
			const struct schema_field *f, void *tmp)
{
	struct diag *d = ld->d;

	if (!f->key || !f->key[0] || f->type >= ST_TYPE_COUNT)
		table_error(d, s, f, "no key, or an unknown type");
	else if (f->type == ST_ENUM && (!f->values || !f->values[0]))
		table_error(d, s, f, "an enum without values");
	else if ((f->type == ST_SECTION || f->type == ST_REF) && !f->sub)
		table_error(d, s, f, "a section or reference without 'sub'");
	else if (f->offset + storage_size(f) > s->size)
		table_error(d, s, f, "offset past the end of the struct");
	else if ((f->flags & SF_REQUIRED) &&
		 (f->def || (f->flags & SF_OPTIONAL)))
		table_error(d, s, f, "required, yet with a default or "
			    "SF_OPTIONAL");
	else if (f->max != 0 && f->max < f->min)
		table_error(d, s, f, "max below min");
	else if ((f->flags & SF_ZERO_OFF) && !(f->min > 0))
		table_error(d, s, f, "SF_ZERO_OFF without a positive min");
	else if (f->def && f->type == ST_SECTION && !f->sub->scalar_key)
		table_error(d, s, f, "a default for a section without a "
			    "scalar_key");
	else if (f->def && f->type == ST_REF && !f->def[0])
		table_error(d, s, f, "an empty default for a reference");
	else if (f->def && f->type != ST_REF)
		load_default(ld, f, f->key, (char *)tmp + f->offset);
	else if (f->type == ST_SECTION)
		schema_check_table(f->sub, d);
}

int schema_check_table(const struct schema *s, struct diag *d)
{
	struct arena a;
	struct loader ld = {&a, d, d->errors, 1};
	unsigned before = d->errors;
	void *tmp;
	size_t i;

	arena_init(&a);
	tmp = arena_alloc(&a, s->size);
	if (!tmp) {
		diag_oom(d);
		return -1;
	}
	check_names(s, d);
	for (i = 0; i < s->nfields; i++)
		check_field(&ld, s, &s->fields[i], tmp);
	arena_release(&a);
	return d->errors == before ? 0 : -1;
}
