/*
 * sweep_file.c - read and check a sweep file (format and rules in
 * sweep.h) into a struct sweep: its base, fixed overrides, axes and
 * dimensions.
 *
 * Every check reports at the node it concerns and loading carries on, so
 * a user sees every mistake in the file at once; sweep_load() fails at
 * the end when anything was reported.
 */
#include "sweep.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/schema.h"
#include "plan/plan.h"

static const char *const top_keys[] = {
	"name", "description", "base", "set", "grid", "zip", "cases", "plan",
};
#define NTOP (sizeof(top_keys) / sizeof(top_keys[0]))

struct loader {
	struct arena *a;
	struct diag *d;
	const struct schema *job;
	struct sweep *sw;
	size_t axes_cap, dims_cap, set_cap;
};

static void errf(struct loader *ld, const struct cnode *at, int coloff,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void errf(struct loader *ld, const struct cnode *at, int coloff,
		 const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag_error(ld->d, at->file, at->line, at->col + coloff, "%s", msg);
}

static const char *kind_name(const struct cnode *n)
{
	if (n->kind == CNODE_MAP)
		return "a mapping";
	if (n->kind == CNODE_SEQ)
		return "a list";
	return cnode_is_null(n) ? "nothing" : "a single value";
}

/* ---- dotted keys ---------------------------------------------------- */

/* Column of byte off of key node k (exact when the key is written on
 * one line, as keys are). */
static int key_col(const struct cnode *k, size_t off)
{
	return (k->quoted ? 1 : 0) + (int)off;
}

/* The "did you mean" for seg among the keys of s, or NULL. */
static const char *closest_key(const struct schema *s, const char *seg)
{
	const char *cand[160];
	size_t i, n = 0;

	for (i = 0; i < s->nfields && n < 160; i++)
		cand[n++] = s->fields[i].key;
	return schema_closest(seg, cand, n);
}

/* Segments of letters, digits, '_' and '-' joined by dots. 0 or -1
 * after reporting. */
static int check_syntax(struct loader *ld, const struct cnode *k)
{
	const char *t = k->text;
	size_t i, start = 0;

	for (i = 0;; i++) {
		if (t[i] == '.' || t[i] == '\0') {
			if (i == start) {
				errf(ld, k, key_col(k, i), "'%s': expected a dotted "
				     "key such as 'system.nodes'", t);
				return -1;
			}
			if (t[i] == '\0')
				return 0;
			start = i + 1;
		} else if (!isalnum((unsigned char)t[i]) && t[i] != '_' &&
			   t[i] != '-') {
			errf(ld, k, key_col(k, i), "'%s': expected a dotted key "
			     "of letters, digits, '_' and '-', got '%c'", t, t[i]);
			return -1;
		}
	}
}

/*
 * Check that dotted key k names a field of the job: each segment but
 * the last a section or a reference, whose keys hold the next one (the
 * last segment under a reference may be `preset`). 0 or -1 after
 * reporting at the segment that is wrong.
 */
static int check_key(struct loader *ld, const struct cnode *k)
{
	const struct schema *s = ld->job;
	const struct schema_field *f = NULL;
	const char *t = k->text, *dot, *near;
	char seg[128];
	size_t off = 0, len;

	if (check_syntax(ld, k) != 0)
		return -1;
	for (;;) {
		dot = strchr(t + off, '.');
		len = dot ? (size_t)(dot - (t + off)) : strlen(t + off);
		snprintf(seg, sizeof(seg), "%.*s", (int)len, t + off);
		if (f && f->type == ST_REF && !dot && strcmp(seg, "preset") == 0)
			return 0;
		f = schema_field(s, seg);
		if (!f) {
			near = closest_key(s, seg);
			errf(ld, k, key_col(k, off), "'%s': the job has no key "
			     "'%.*s%s'%s%s%s", t, (int)(off + len), t,
			     "", near ? ", did you mean '" : "",
			     near ? near : "", near ? "'?" : "");
			return -1;
		}
		if (!dot)
			return 0;
		if (f->type != ST_SECTION && f->type != ST_REF) {
			errf(ld, k, key_col(k, off), "'%s': '%.*s' is a single "
			     "value with no keys below it", t, (int)(off + len), t);
			return -1;
		}
		s = f->sub;
		off += len + 1;
	}
}

static int depth_of(const char *key)
{
	int n = 0;

	for (; *key; key++)
		n += *key == '.';
	return n;
}

/* "system.scale-out.x" -> "system_scale_out_x" (in the arena). */
static const char *column_of(struct arena *a, const char *key)
{
	char *c = arena_strdup(a, key), *p;

	for (p = c; p && *p; p++)
		if (*p == '.' || *p == '-')
			*p = '_';
	return c;
}

/* ---- axes and dimensions -------------------------------------------- */

/* The new dimension of kind k with n positions and room for naxes axes;
 * NULL when out of memory (reported). */
static struct sweep_dim *add_dim(struct loader *ld, enum sweep_dim_kind k,
				 size_t n, size_t naxes)
{
	struct sweep *sw = ld->sw;
	struct sweep_dim *dm;

	if (arena_grow(ld->a, (void **)&sw->dims, &ld->dims_cap, sw->ndims + 1,
		       sizeof(*sw->dims)) != 0)
		goto oom;
	dm = &sw->dims[sw->ndims];
	memset(dm, 0, sizeof(*dm));
	dm->kind = k;
	dm->n = n;
	dm->axis = arena_alloc(ld->a, (naxes ? naxes : 1) * sizeof(*dm->axis));
	dm->val = arena_alloc(ld->a, (naxes ? naxes : 1) * (n ? n : 1) *
			      sizeof(*dm->val));
	if (!dm->axis || !dm->val)
		goto oom;
	sw->ndims++;
	return dm;
oom:
	diag_oom(ld->d);
	return NULL;
}

/* The axis for key node k set by dimension dim: found (when dim already
 * has it) or added. -1 after reporting a key that is bad, already swept
 * by another dimension, or whose column another key has; -2 when out of
 * memory. */
static long axis_for(struct loader *ld, const struct cnode *k, size_t dim)
{
	struct sweep *sw = ld->sw;
	struct sweep_axis *ax;
	const char *col;
	size_t i;

	for (i = 0; i < sw->naxes; i++) {
		ax = &sw->axes[i];
		if (strcmp(ax->key, k->text) == 0 && ax->dim == dim)
			return (long)i;
		if (strcmp(ax->key, k->text) == 0) {
			errf(ld, k, 0, "'%s' is swept twice; it is already an "
			     "axis at line %d", k->text, ax->at->line);
			return -1;
		}
	}
	if (check_key(ld, k) != 0)
		return -1;
	col = column_of(ld->a, k->text);
	if (!col)
		goto oom;
	for (i = 0; i < sw->naxes; i++)
		if (strcmp(sw->axes[i].column, col) == 0) {
			errf(ld, k, 0, "'%s' and '%s' (line %d) would both be "
			     "column '%s'", k->text, sw->axes[i].key,
			     sw->axes[i].at->line, col);
			return -1;
		}
	if (arena_grow(ld->a, (void **)&sw->axes, &ld->axes_cap, sw->naxes + 1,
		       sizeof(*sw->axes)) != 0)
		goto oom;
	ax = &sw->axes[sw->naxes];
	*ax = (struct sweep_axis){ k->text, col, k, depth_of(k->text), dim };
	return (long)sw->naxes++;
oom:
	diag_oom(ld->d);
	return -2;
}

/* A list of values for an axis: a non-empty sequence. 0 or -1. */
static int check_list(struct loader *ld, const struct cnode *k,
		      const struct cnode *v, const char *where)
{
	if (v->kind != CNODE_SEQ) {
		errf(ld, v, 0, "'%s': expected a list of values in %s, such as "
		     "[8, 16, 32], got %s", k->text, where, kind_name(v));
		return -1;
	}
	if (v->nitems == 0) {
		errf(ld, v, 0, "'%s': an empty list of values in %s: the "
		     "sweep would have no points", k->text, where);
		return -1;
	}
	return 0;
}

/* A non-empty mapping for section key (grid, zip, set). 0 or -1. */
static int check_map(struct loader *ld, const struct cnode *key,
		     const struct cnode *v, const char *example)
{
	if (v->kind != CNODE_MAP) {
		errf(ld, v, 0, "'%s': expected a mapping of dotted keys to %s, "
		     "got %s", key->text, example, kind_name(v));
		return -1;
	}
	if (v->npairs == 0) {
		errf(ld, v, 0, "'%s': empty: it gives no %s", key->text,
		     strcmp(key->text, "set") == 0 ? "override" : "axis, so "
		     "the sweep would have no points");
		return -1;
	}
	return 0;
}

/* grid: one dimension per key. */
static int load_grid(struct loader *ld, const struct cnode *key,
		     const struct cnode *grid)
{
	size_t i, p;
	int rc = 0;

	if (check_map(ld, key, grid, "lists ({system.nodes: [8, 16]})") != 0)
		return -1;
	for (i = 0; i < grid->npairs; i++) {
		const struct cnode *k = grid->pairs[i].key;
		const struct cnode *v = grid->pairs[i].value;
		struct sweep_dim *dm;
		long ax;

		if (check_list(ld, k, v, "grid") != 0) {
			rc = -1;
			continue;
		}
		ax = axis_for(ld, k, ld->sw->ndims);
		if (ax == -2 || !(dm = add_dim(ld, SWEEP_GRID, v->nitems, 1)))
			return -1;
		if (ax < 0) {
			ld->sw->ndims--;	/* reported; drop the dimension */
			rc = -1;
			continue;
		}
		dm->naxes = 1;
		dm->axis[0] = (size_t)ax;
		for (p = 0; p < v->nitems; p++)
			dm->val[p] = v->items[p];
	}
	return rc;
}

/* One zip group: lists of equal length, one dimension. */
static int load_zip_group(struct loader *ld, const struct cnode *key,
			  const struct cnode *g)
{
	const struct cnode *first = NULL;
	struct sweep_dim *dm;
	size_t i, p;
	int rc = 0;

	if (check_map(ld, key, g, "lists of equal length") != 0)
		return -1;
	for (i = 0; i < g->npairs; i++) {
		const struct cnode *k = g->pairs[i].key, *v = g->pairs[i].value;

		if (check_list(ld, k, v, "zip") != 0) {
			rc = -1;
		} else if (!first) {
			first = g->pairs[i].key;
		} else if (v->nitems != cnode_get(g, first->text)->nitems) {
			errf(ld, v, 0, "'%s': zip lists must have equal lengths: "
			     "%zu values here, %zu in '%s' (line %d)", k->text,
			     v->nitems, cnode_get(g, first->text)->nitems,
			     first->text, first->line);
			rc = -1;
		}
	}
	if (rc != 0)
		return -1;
	dm = add_dim(ld, SWEEP_ZIP, cnode_get(g, first->text)->nitems,
		     g->npairs);
	if (!dm)
		return -1;
	for (i = 0; i < g->npairs; i++) {
		long ax = axis_for(ld, g->pairs[i].key, ld->sw->ndims - 1);

		if (ax == -2)
			return -1;
		if (ax < 0) {
			rc = -1;
			continue;
		}
		dm->axis[dm->naxes] = (size_t)ax;
		for (p = 0; p < dm->n; p++)
			dm->val[dm->naxes * dm->n + p] = g->pairs[i].value->items[p];
		dm->naxes++;
	}
	return rc;
}

/* zip: one group (a mapping) or several (a list of mappings). */
static int load_zip(struct loader *ld, const struct cnode *key,
		    const struct cnode *zip)
{
	size_t i;
	int rc = 0;

	if (zip->kind != CNODE_SEQ)
		return load_zip_group(ld, key, zip);
	if (zip->nitems == 0) {
		errf(ld, zip, 0, "'zip': an empty list of groups: the sweep "
		     "would have no points");
		return -1;
	}
	for (i = 0; i < zip->nitems; i++)
		if (load_zip_group(ld, key, zip->items[i]) != 0)
			rc = -1;
	return rc;
}

/* cases: one dimension; its axes are every key any case sets. */
static int load_cases(struct loader *ld, const struct cnode *cases)
{
	struct sweep_dim *dm;
	size_t c, i, k, dim = ld->sw->ndims, first = ld->sw->naxes, naxes;
	int rc = 0;

	if (cases->kind != CNODE_SEQ || cases->nitems == 0) {
		errf(ld, cases, 0, "'cases': expected a non-empty list of "
		     "mappings ({system.nodes: 16, parallelism.tp: 8}), got %s",
		     cases->kind == CNODE_SEQ ? "an empty list" :
		     kind_name(cases));
		return -1;
	}
	for (c = 0; c < cases->nitems; c++) {
		const struct cnode *m = cases->items[c];

		if (m->kind != CNODE_MAP) {
			errf(ld, m, 0, "'cases': expected a mapping of dotted keys "
			     "to values, got %s", kind_name(m));
			rc = -1;
			continue;
		}
		for (i = 0; i < m->npairs; i++) {
			long ax = axis_for(ld, m->pairs[i].key, dim);

			if (ax == -2)
				return -1;
			if (ax < 0)
				rc = -1;
		}
	}
	if (rc != 0)
		return -1;
	naxes = ld->sw->naxes - first;
	dm = add_dim(ld, SWEEP_CASES, cases->nitems, naxes);
	if (!dm)
		return -1;
	dm->naxes = naxes;
	for (k = 0; k < naxes; k++) {
		dm->axis[k] = first + k;
		for (c = 0; c < cases->nitems; c++)
			dm->val[k * dm->n + c] =
				cnode_get(cases->items[c], ld->sw->axes[first + k].key);
	}
	return 0;
}

/* set: fixed overrides. */
static int load_set(struct loader *ld, const struct cnode *key,
		    const struct cnode *set)
{
	struct sweep *sw = ld->sw;
	size_t i;
	int rc = 0;

	if (check_map(ld, key, set, "values ({training.seq_len: 4096})") != 0)
		return -1;
	for (i = 0; i < set->npairs; i++) {
		const struct cnode *k = set->pairs[i].key;

		if (check_key(ld, k) != 0) {
			rc = -1;
			continue;
		}
		if (arena_grow(ld->a, (void **)&sw->set, &ld->set_cap,
			       sw->nset + 1, sizeof(*sw->set)) != 0) {
			diag_oom(ld->d);
			return -1;
		}
		sw->set[sw->nset++] = (struct sweep_set){
			k->text, k, set->pairs[i].value, depth_of(k->text) };
	}
	return rc;
}

/* ---- the top level -------------------------------------------------- */

/* The character at p as it reads in a message: a UTF-8 sequence whole
 * (its first byte alone printed '\xc3' for 'é'), a control character
 * as \xNN. */
static void char_text(const char *p, char out[8])
{
	unsigned char c = (unsigned char)*p;
	size_t n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1, k;

	for (k = 1; k < n && ((unsigned char)p[k] & 0xc0) == 0x80; k++)
		;
	if (k == n && (n > 1 || isprint(c)))
		snprintf(out, 8, "%.*s", (int)n, p);
	else
		snprintf(out, 8, "\\x%02x", c);
}

static int load_name(struct loader *ld, const struct cnode *v)
{
	const char *p;

	if (v->kind != CNODE_SCALAR || cnode_is_null(v) || !v->text[0]) {
		errf(ld, v, 0, "'name': expected a name such as 'nic-x-fabric', "
		     "got %s", v->kind == CNODE_SCALAR && !cnode_is_null(v) ?
		     "an empty name" : kind_name(v));
		return -1;
	}
	for (p = v->text; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-.+", *p)) {
			char c[8];

			char_text(p, c);
			/* every byte before p is ASCII: its offset is its
			 * column, after the opening quote when quoted */
			errf(ld, v, (int)(p - v->text) + (v->quoted ==
							  CNODE_QUOTED),
			     "'name': expected letters, digits, '_', '-', '.' "
			     "and '+', got '%s'", c);
			return -1;
		}
	ld->sw->name = v->text;
	return 0;
}

/* One key of a `plan:` mapping: top (layouts simulated in full, 1 to
 * 1000, as `llmsim plan --top`) or objective (as --objective). */
static int load_plan_key(struct loader *ld, const struct cnode_pair *p)
{
	const struct cnode *v = p->value;
	const char *k = p->key->text;
	char *end;
	long long n;
	int i;

	if (strcmp(k, "top") == 0) {
		n = v->kind == CNODE_SCALAR ? strtoll(v->text, &end, 10) : 0;
		if (v->kind != CNODE_SCALAR || end == v->text || *end ||
		    n < 1 || n > 1000) {
			errf(ld, v, 0, "'plan.top': expected a count of layouts "
			     "from 1 to 1000, got '%s'",
			     v->kind == CNODE_SCALAR ? v->text : kind_name(v));
			return -1;
		}
		ld->sw->plan_top = (int)n;
		return 0;
	}
	if (strcmp(k, "objective") == 0) {
		for (i = 0; v->kind == CNODE_SCALAR && plan_objective_names[i]; i++)
			if (strcmp(v->text, plan_objective_names[i]) == 0) {
				ld->sw->plan_objective = i;
				return 0;
			}
		errf(ld, v, 0, "'plan.objective': expected throughput, memory "
		     "or cost, got '%s'",
		     v->kind == CNODE_SCALAR ? v->text : kind_name(v));
		return -1;
	}
	errf(ld, p->key, 0, "'plan': unknown key '%s' (expected top, "
	     "objective)", k);
	return -1;
}

/* `plan: true|false`, or a mapping {top: K, objective: O} (the planner
 * on, with those options). */
static int load_plan(struct loader *ld, const struct cnode *v)
{
	size_t i;
	int rc = 0;

	ld->sw->plan_objective = -1;
	if (v->kind == CNODE_SCALAR && !v->quoted &&
	    (strcmp(v->text, "true") == 0 || strcmp(v->text, "false") == 0)) {
		ld->sw->plan = strcmp(v->text, "true") == 0;
		ld->sw->plan_at = v;
		return 0;
	}
	if (v->kind == CNODE_MAP) {
		ld->sw->plan = 1;
		ld->sw->plan_at = v;
		for (i = 0; i < v->npairs; i++)
			rc |= load_plan_key(ld, &v->pairs[i]);
		return rc;
	}
	errf(ld, v, 0, "'plan': expected true, false or a mapping "
	     "{top: K, objective: O}, got '%s'",
	     v->kind == CNODE_SCALAR ? v->text : kind_name(v));
	return -1;
}

static int load_base(struct loader *ld, const struct cnode *v)
{
	if ((v->kind == CNODE_SCALAR && !cnode_is_null(v)) ||
	    v->kind == CNODE_MAP) {
		ld->sw->base = v;
		return 0;
	}
	errf(ld, v, 0, "'base': expected a job (a preset name, a path or a "
	     "mapping), got %s", kind_name(v));
	return -1;
}

static int unknown_top(struct loader *ld, const struct cnode *k)
{
	const char *near = schema_closest(k->text, top_keys, NTOP);

	if (near)
		errf(ld, k, 0, "'%s': unknown key in a sweep, did you mean "
		     "'%s'?", k->text, near);
	else
		errf(ld, k, 0, "'%s': unknown key in a sweep (valid: name, "
		     "description, base, set, grid, zip, cases, plan)", k->text);
	return -1;
}

/* The file's stem, "nic-x-fabric" for ".../nic-x-fabric.yaml". */
static const char *stem(struct arena *a, const char *path)
{
	const char *base = strrchr(path, '/'), *dot;

	base = base ? base + 1 : path;
	dot = strrchr(base, '.');
	if (!dot || dot == base)
		return arena_strdup(a, base);
	return arena_strndup(a, base, (size_t)(dot - base));
}

/* The pair of root with key `key`, or NULL. */
static const struct cnode_pair *pair_of(const struct cnode *root,
					const char *key)
{
	size_t i;

	for (i = 0; i < root->npairs; i++)
		if (strcmp(root->pairs[i].key->text, key) == 0)
			return &root->pairs[i];
	return NULL;
}

/* Each known top-level key, the dimensions in their order: cases, grid,
 * zip. (Duplicate keys were reported by the YAML loader.) */
static int load_top(struct loader *ld, const struct cnode *root)
{
	const struct cnode_pair *p;
	size_t i, t;
	int rc = 0;

	for (i = 0; i < root->npairs; i++) {
		for (t = 0; t < NTOP; t++)
			if (strcmp(root->pairs[i].key->text, top_keys[t]) == 0)
				break;
		if (t == NTOP)
			rc |= unknown_top(ld, root->pairs[i].key);
	}
	if ((p = pair_of(root, "name")))
		rc |= load_name(ld, p->value);
	if ((p = pair_of(root, "base"))) {
		rc |= load_base(ld, p->value);
	} else {
		errf(ld, root, 0, "a sweep needs 'base:', the job it varies "
		     "(a preset name, a path or a mapping)");
		rc = -1;
	}
	if ((p = pair_of(root, "plan")))
		rc |= load_plan(ld, p->value);
	if ((p = pair_of(root, "set")))
		rc |= load_set(ld, p->key, p->value);
	if ((p = pair_of(root, "cases")) && !ld->d->oom)
		rc |= load_cases(ld, p->value);
	if ((p = pair_of(root, "grid")) && !ld->d->oom)
		rc |= load_grid(ld, p->key, p->value);
	if ((p = pair_of(root, "zip")) && !ld->d->oom)
		rc |= load_zip(ld, p->key, p->value);
	return rc;
}

/* The number of points; -1 after reporting none or too many. */
static int count_points(struct loader *ld, const struct cnode *root)
{
	struct sweep *sw = ld->sw;
	uint64_t n = 1;
	size_t i;

	if (sw->ndims == 0) {
		errf(ld, root, 0, "nothing to sweep: give 'grid', 'zip' or "
		     "'cases'");
		return -1;
	}
	for (i = 0; i < sw->ndims; i++) {
		if (n > SWEEP_MAX_POINTS / sw->dims[i].n) {
			errf(ld, root, 0, "the sweep has more than %llu points; "
			     "split it", (unsigned long long)SWEEP_MAX_POINTS);
			return -1;
		}
		n *= sw->dims[i].n;
	}
	sw->npoints = n;
	return 0;
}

int sweep_load(struct arena *a, const char *path, const struct schema *job,
	       struct sweep *out, struct diag *d)
{
	struct loader ld = { a, d, job, out, 0, 0, 0 };
	unsigned before = d->errors;
	struct cnode *root;

	memset(out, 0, sizeof(*out));
	out->plan_objective = -1;
	root = cnode_load_yaml(a, path, d);
	if (!root)
		return -1;
	if (root->kind != CNODE_MAP) {
		errf(&ld, root, 0, "expected a sweep (a mapping with base: and "
		     "grid:, zip: or cases:), got %s", kind_name(root));
		return -1;
	}
	/* A job given where a sweep goes (`llmsim sweep JOB.yaml`): one
	 * error that says so, not one per job key and a missing base. */
	if (!pair_of(root, "base") && !pair_of(root, "grid") &&
	    !pair_of(root, "zip") && !pair_of(root, "cases") &&
	    (pair_of(root, "model") || pair_of(root, "system"))) {
		errf(&ld, root, 0, "this is a job, not a sweep (it has '%s:' "
		     "and no base:, grid:, zip: or cases:): run it with "
		     "'llmsim run %s', or sweep it from a sweep file whose "
		     "base: names it (docs/sweeps.md)",
		     pair_of(root, "model") ? "model" : "system", path);
		return -1;
	}
	out->file = root->file;
	out->name = stem(a, path);
	if (!out->name) {
		diag_oom(d);
		return -1;
	}
	if (load_top(&ld, root) != 0 || d->errors != before)
		return -1;
	return count_points(&ld, root);
}
