/*
 * schema_check.c - where a kind's cross-field check reports: at the value
 * the user wrote, under the key's full path.
 *
 * A check() sees the merged mapping of its object: a preset's keys with
 * the user's overrides (a --set option, a job file's inline mapping)
 * merged in, each value node keeping the file it came from. When two
 * keys conflict, the one that came from another file than the mapping is
 * the one the user just changed, so that is where the error points.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cnode.h"
#include "base/diag.h"
#include "schema.h"

/* The value of dotted key under map, or NULL. */
static const struct cnode *find(const struct cnode *map, const char *key)
{
	char seg[128];
	const char *dot;
	size_t n;

	while (map && map->kind == CNODE_MAP) {
		dot = strchr(key, '.');
		n = dot ? (size_t)(dot - key) : strlen(key);
		if (n >= sizeof(seg))
			return NULL;
		memcpy(seg, key, n);
		seg[n] = '\0';
		map = cnode_get(map, seg);
		if (!dot)
			return map;
		key = dot + 1;
	}
	return NULL;
}

int schema_check_blame(const struct schema_at *at, const char *const *keys,
		       int n)
{
	int i, first = -1;

	for (i = 0; at->map && i < n; i++) {
		const struct cnode *v = find(at->map, keys[i]);

		if (!v)
			continue;
		if (first < 0)
			first = i;
		if (v->file && at->map->file &&
		    strcmp(v->file, at->map->file) != 0)
			return i;
	}
	return first < 0 ? 0 : first;
}

const char *schema_check_path(const struct schema_at *at, const char *key,
			      char *buf, size_t len)
{
	if (at->path && key)
		snprintf(buf, len, "%s.%s", at->path, key);
	else
		snprintf(buf, len, "%s", key ? key : at->path ? at->path : "");
	return buf;
}

void schema_check_error(struct diag *d, const struct schema_at *at,
			const char *key, const char *fmt, ...)
{
	const struct cnode *v = key && at->map ? find(at->map, key) : NULL;
	const struct cnode *where = v ? v : at->map;
	char msg[1024], path[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	schema_check_path(at, key, path, sizeof(path));
	if (!where) {
		diag_error(d, NULL, 0, 0, "'%s': %s", path, msg);
		return;
	}
	if (path[0])
		diag_error(d, where->file, where->line, where->col, "'%s': %s",
			   path, msg);
	else
		diag_error(d, where->file, where->line, where->col, "%s", msg);
}
