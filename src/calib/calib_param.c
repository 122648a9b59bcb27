/*
 * calib_param.c - a system's fittable parameters: finding a dotted key
 * in the schema (through sections and references), its bounds and the
 * value a loaded system holds, enumerating them all, and writing a value
 * back as --set or YAML text with its unit.
 */
#include "calib.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/arena.h"
#include "base/mem.h"
#include "base/units.h"
#include "config/schema.h"
#include "config/spec_system.h"

static int unit_of(int type)
{
	switch (type) {
	case ST_BYTES: return UNIT_BYTES;
	case ST_BANDWIDTH: return UNIT_BANDWIDTH;
	case ST_TIME: return UNIT_TIME;
	case ST_FLOPS: return UNIT_FLOPS;
	case ST_FREQ: return UNIT_FREQ;
	default: return -1;
	}
}

static void bounds(const struct schema_field *f, struct calib_param *p)
{
	p->type = f->type;
	p->lo = f->min;
	p->hi = f->max > f->min ? f->max : INFINITY;
}

/* The object a section or reference field leads to. */
static const void *descend(const struct schema_field *f, const void *obj)
{
	const char *at = (const char *)obj + f->offset;

	return f->type == ST_REF ? *(const void *const *)at : at;
}

static int lookup(const struct schema *s, const void *obj, const char *key,
		  struct calib_param *p, char *why, size_t len)
{
	const char *dot = strchr(key, '.');
	char name[128];
	const struct schema_field *f;

	snprintf(name, sizeof(name), "%.*s", dot ? (int)(dot - key) :
		 (int)strlen(key), key);
	f = schema_field(s, name);
	if (!f) {
		snprintf(why, len, "no key '%s' in %s", name, s->kind);
		return -1;
	}
	if (dot) {
		if (f->type != ST_SECTION && f->type != ST_REF) {
			snprintf(why, len, "'%s' is a value, not a section", name);
			return -1;
		}
		return lookup(f->sub, obj ? descend(f, obj) : NULL, dot + 1, p,
			      why, len);
	}
	if (!(f->flags & SF_FIT)) {
		snprintf(why, len, "'%s' is not fittable (llmsim config help "
			 "lists the fittable keys)", name);
		return -1;
	}
	bounds(f, p);
	if (obj)
		p->start = p->value = *(const double *)((const char *)obj +
							f->offset);
	return 0;
}

int calib_param_find(const struct system_spec *sys, const char *key,
		     struct calib_param *p, char *why, size_t len)
{
	memset(p, 0, sizeof(*p));
	p->key = key;
	return lookup(&system_schema, sys, key, p, why, len);
}

int calib_param_kind(struct calib_param *p, char *why, size_t len)
{
	return lookup(&system_schema, NULL, p->key, p, why, len);
}

struct walk {
	struct arena *a;
	struct calib_param *v;
	size_t n, cap;
	int failed;
};

static void add(struct walk *w, const char *key, const struct schema_field *f,
		const void *obj)
{
	struct calib_param *p;

	if (w->n == w->cap && arena_grow(w->a, (void **)&w->v, &w->cap,
					 w->n + 1, sizeof(*w->v)) != 0) {
		w->failed = 1;
		return;
	}
	p = &w->v[w->n++];
	memset(p, 0, sizeof(*p));
	p->key = arena_strdup(w->a, key);
	bounds(f, p);
	p->start = p->value = *(const double *)((const char *)obj + f->offset);
	w->failed |= !p->key;
}

static void enumerate(struct walk *w, const struct schema *s, const void *obj,
		      const char *prefix)
{
	char key[256];
	size_t i;

	for (i = 0; obj && i < s->nfields && !w->failed; i++) {
		const struct schema_field *f = &s->fields[i];

		snprintf(key, sizeof(key), "%s%s%s", prefix, prefix[0] ? "." : "",
			 f->key);
		if (f->type == ST_SECTION || f->type == ST_REF)
			enumerate(w, f->sub, descend(f, obj), key);
		else if (f->flags & SF_FIT)
			add(w, key, f, obj);
	}
}

long calib_param_all(const struct system_spec *sys, struct arena *a,
		     struct calib_param **out)
{
	struct walk w = { a, NULL, 0, 0, 0 };

	enumerate(&w, &system_schema, sys, "");
	*out = w.v;
	return w.failed ? -1 : (long)w.n;
}

void calib_value_text(const struct calib_param *p, double v, char *buf,
		      size_t len)
{
	static const struct { double scale; const char *unit; } t[] = {
		{1e-9, "ns"}, {1e-6, "us"}, {1e-3, "ms"}, {1, "s"},
	};
	static const char *const si[] = {"B", "B/s", "s", "FLOP/s", "Hz"};
	int u = unit_of(p->type), i;

	if (u < 0) {
		snprintf(buf, len, "%.6g", v);
	} else if (u == UNIT_TIME) {
		for (i = 3; i > 0 && fabs(v) < t[i].scale; i--)
			;
		snprintf(buf, len, "%.6g %s", v / t[i].scale, t[i].unit);
	} else {
		snprintf(buf, len, "%.6g %s", v, si[u]);
	}
}

void calib_value_exact(const struct calib_param *p, double v, char *buf,
		       size_t len)
{
	static const char *const si[] = {"B", "B/s", "s", "FLOP/s", "Hz"};
	char num[32];
	int u = unit_of(p->type);

	if (u < 0)
		units_format_number(buf, len, v);
	else if (v > 0.0 && isfinite(v))
		units_format(buf, len, v, (enum unit_kind)u);
	else	/* units_format reads positive values only */
		snprintf(buf, len, "%s %s", units_format_number(num,
			 sizeof(num), v), si[u]);
}

void calib_set_text(const struct calib_param *p, double v, const char *prefix,
		    char *buf, size_t len)
{
	static const char *const si[] = {"B", "B/s", "s", "FLOP/s", "Hz"};
	int u = unit_of(p->type);

	/* Full precision: a finite difference must see the step it made. */
	if (u < 0)
		snprintf(buf, len, "%s%s=%.17g", prefix, p->key, v);
	else
		snprintf(buf, len, "%s%s=%.17g %s", prefix, p->key, v, si[u]);
}
