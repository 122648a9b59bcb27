/*
 * sweep_point.c - one point of a sweep: its axis values, its override
 * trees, and those values as JSON and as text.
 *
 * Point i's position along dimension d is digit d of i written in the
 * mixed radix (n_0, ..., n_{D-1}) of the dimensions' lengths, the last
 * dimension the least significant: p_{D-1} = i mod n_{D-1}, then i is
 * divided by n_{D-1}, and so on.
 */
#include "sweep.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/diag.h"
#include "base/arena.h"
#include "base/mem.h"
#include "config/cnode.h"
#include "config/cnode_impl.h"

void sweep_point_values(const struct sweep *sw, uint64_t i,
			const struct cnode **vals)
{
	size_t d, k;

	for (k = 0; k < sw->naxes; k++)
		vals[k] = NULL;
	for (d = sw->ndims; d-- > 0;) {
		const struct sweep_dim *dm = &sw->dims[d];
		size_t p = (size_t)(i % dm->n);

		i /= dm->n;
		for (k = 0; k < dm->naxes; k++)
			vals[dm->axis[k]] = dm->val[k * dm->n + p];
	}
}

/* One override before it becomes a tree. */
struct ov {
	const char *key;
	const struct cnode *at;		/* the key in the sweep file */
	const struct cnode *value;
	int depth;
	size_t order;			/* set keys first, then axes */
};

static int by_depth(const void *pa, const void *pb)
{
	const struct ov *a = pa, *b = pb;

	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* {seg1: {seg2: ... value}} for dotted key o->key, each key node placed
 * at its segment in the sweep file. NULL when out of memory. */
static struct cnode *nest(struct arena *a, const struct ov *o)
{
	const struct cnode *at = o->at;
	const char *t = o->key;
	struct cnode *v = (struct cnode *)o->value, *map, *key;
	size_t end = strlen(t), start, cap;

	while (end > 0) {
		int col;

		for (start = end; start > 0 && t[start - 1] != '.'; start--)
			;
		col = at->col + (at->quoted ? 1 : 0) + (int)start;
		key = cnode_new(a, CNODE_SCALAR, at->file, at->line, col);
		map = cnode_new(a, CNODE_MAP, at->file, at->line, col);
		cap = 0;
		if (!key || !map ||
		    !(key->text = arena_strndup(a, t + start, end - start)) ||
		    cnode_map_add(a, map, &cap, key, v) != 0)
			return NULL;
		v = map;
		end = start > 0 ? start - 1 : 0;
	}
	return v;
}

int sweep_point_overrides(struct arena *a, const struct sweep *sw,
			  uint64_t i, struct cnode ***out, size_t *n,
			  struct diag *d)
{
	size_t total = sw->nset + sw->naxes, k, m = 0;
	const struct cnode **vals = arena_alloc(a, (sw->naxes + 1) *
						sizeof(*vals));
	struct ov *ov = arena_alloc(a, (total + 1) * sizeof(*ov));
	struct cnode **trees = arena_alloc(a, (total + 1) * sizeof(*trees));

	if (!vals || !ov || !trees)
		goto oom;
	sweep_point_values(sw, i, vals);
	for (k = 0; k < sw->nset; k++, m++)
		ov[m] = (struct ov){ sw->set[k].key, sw->set[k].at,
				     sw->set[k].value, sw->set[k].depth, m };
	for (k = 0; k < sw->naxes; k++)
		if (vals[k])
			ov[m] = (struct ov){ sw->axes[k].key, sw->axes[k].at,
					     vals[k], sw->axes[k].depth, m }, m++;
	qsort(ov, m, sizeof(*ov), by_depth);
	for (k = 0; k < m; k++)
		if (!(trees[k] = nest(a, &ov[k])))
			goto oom;
	*out = trees;
	*n = m;
	return 0;
oom:
	diag_oom(d);
	return -1;
}

/* ---- values as JSON and text ---------------------------------------- */

/* 1 when t is a plain decimal number (what a dashboard should plot as
 * one): strtod takes all of it and it is finite. */
static int plain_number(const char *t, double *x)
{
	char *end;

	if (!t[0] || strchr(t, 'x') || strchr(t, 'X'))
		return 0;	/* hex: YAML's, not a quantity */
	errno = 0;
	*x = strtod(t, &end);
	return *end == '\0' && errno == 0 && isfinite(*x);
}

static struct cJSON *value_json(const struct cnode *v)
{
	struct cJSON *o;
	double x;
	size_t i;

	if (v->kind == CNODE_SCALAR) {
		if (!v->quoted && cnode_is_null(v))
			return cJSON_CreateNull();
		if (!v->quoted && (strcmp(v->text, "true") == 0 ||
				   strcmp(v->text, "false") == 0))
			return cJSON_CreateBool(v->text[0] == 't');
		if (!v->quoted && plain_number(v->text, &x))
			return cJSON_CreateNumber(x);
		return cJSON_CreateString(v->text);
	}
	o = v->kind == CNODE_MAP ? cJSON_CreateObject() : cJSON_CreateArray();
	for (i = 0; o && i < (v->kind == CNODE_MAP ? v->npairs : v->nitems);
	     i++) {
		struct cJSON *c = value_json(v->kind == CNODE_MAP ?
					     v->pairs[i].value : v->items[i]);
		int ok = c && (v->kind == CNODE_MAP ?
			       cJSON_AddItemToObject(o, v->pairs[i].key->text, c) :
			       cJSON_AddItemToArray(o, c));

		if (!ok) {
			cJSON_Delete(c);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

struct cJSON *sweep_point_json(const struct sweep *sw, uint64_t i)
{
	const struct cnode **vals = mem_calloc(sw->naxes + 1, sizeof(*vals));
	struct cJSON *o = vals ? cJSON_CreateObject() : NULL;
	size_t k;

	if (o)
		sweep_point_values(sw, i, vals);
	for (k = 0; o && k < sw->naxes; k++) {
		struct cJSON *c;

		if (!vals[k])
			continue;
		c = value_json(vals[k]);
		if (!c || !cJSON_AddItemToObject(o, sw->axes[k].key, c)) {
			cJSON_Delete(c);
			cJSON_Delete(o);
			o = NULL;
		}
	}
	mem_free(vals);
	return o;
}

/* Append the flow-style text of v to buf (size len) at *at, truncating
 * with "..." past the end. */
static void put_text(char *buf, size_t len, size_t *at, const struct cnode *v)
{
	size_t i, n;

#define PUT(s) do { \
		size_t l_ = strlen(s); \
		if (l_ > len - *at) \
			l_ = len - *at; \
		memcpy(buf + *at, s, l_); \
		*at += l_; \
	} while (0)
	if (*at >= len)
		return;
	if (v->kind == CNODE_SCALAR) {
		PUT(v->text);
		return;
	}
	PUT(v->kind == CNODE_MAP ? "{" : "[");
	n = v->kind == CNODE_MAP ? v->npairs : v->nitems;
	for (i = 0; i < n && *at < len; i++) {
		if (i)
			PUT(", ");
		if (v->kind == CNODE_MAP) {
			PUT(v->pairs[i].key->text);
			PUT(": ");
			put_text(buf, len, at, v->pairs[i].value);
		} else {
			put_text(buf, len, at, v->items[i]);
		}
	}
	PUT(v->kind == CNODE_MAP ? "}" : "]");
#undef PUT
}

const char *sweep_value_text(struct arena *a, const struct cnode *v)
{
	char buf[200];
	size_t at = 0;

	if (!v)
		return "-";
	if (v->kind == CNODE_SCALAR)
		return v->text;
	put_text(buf, sizeof(buf) - 4, &at, v);
	if (at >= sizeof(buf) - 4)
		memcpy(buf + sizeof(buf) - 4, "...", 4);
	else
		buf[at] = '\0';
	return arena_strdup(a, buf);
}
