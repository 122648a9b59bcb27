/*
 * config_set.c - a `--set dotted.key=value` option as an override tree.
 *
 * "system.gpu.hbm.capacity=96 GB" becomes
 *     {system: {gpu: {hbm: {capacity: 96 GB}}}}
 * which config_load deep-merges onto the resolved config, so the schema
 * checks the key path and the value exactly as if they were in the file.
 * The value is YAML ("parallelism={tp: 8, pp: 2}" works).
 *
 * Nodes are placed in the pseudo-file "--set": line N is the N-th --set
 * option and the column counts characters of its argument, so
 *     --set:1:8: error: 'system.nodez': unknown key, did you mean 'nodes'?
 * points at "nodez". The value is parsed with N-1 newlines and as many
 * spaces as the key and '=' take in front of it, so libyaml's own
 * positions come out in the same coordinates.
 */
#include <ctype.h>
#include <string.h>

#include "config_impl.h"
#include "cnode_impl.h"
#include "base/diag.h"
#include "base/arena.h"

#define SET_FILE "--set"

static int key_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-';
}

/* Each dot-separated segment of text[0..len) is a non-empty key. */
static int check_key(struct diag *d, const char *text, size_t len, int n)
{
	size_t i, start = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != '.') {
			if (!key_char(text[i])) {
				diag_error(d, SET_FILE, n, (int)i + 1, "'%.*s': "
					   "expected a key of letters, digits, "
					   "'_' and '-', got '%c'", (int)len,
					   text, text[i]);
				return -1;
			}
			continue;
		}
		if (i == start) {
			diag_error(d, SET_FILE, n, (int)i + 1, "'%.*s': "
				   "expected dotted.key=value, got an empty "
				   "key", (int)len, text);
			return -1;
		}
		start = i + 1;
	}
	return 0;
}

static struct cnode *parse_value(struct config_ctx *cx, const char *text,
				 size_t keylen, int n)
{
	const char *v = text + keylen + 1;
	size_t vlen = strlen(v), pad_lines = 0, pad_cols = 0, len;
	char *buf;

	if (vlen == 0) {
		diag_error(cx->diag, SET_FILE, n, (int)keylen + 2, "'%.*s': "
			   "expected a value after '=', got nothing",
			   (int)keylen, text);
		return NULL;
	}
	if (!memchr(v, '\n', vlen)) {
		pad_lines = (size_t)n - 1;
		pad_cols = keylen + 1;
	}
	len = pad_lines + pad_cols + vlen;
	buf = arena_alloc(cx->arena, len + 1);
	if (!buf) {
		diag_oom(cx->diag);
		return NULL;
	}
	memset(buf, '\n', pad_lines);
	memset(buf + pad_lines, ' ', pad_cols);
	memcpy(buf + pad_lines + pad_cols, v, vlen);
	return cnode_parse_yaml(cx->arena, buf, len, SET_FILE, cx->diag);
}

/* Wrap value in one mapping per key segment, innermost first. */
static struct cnode *nest(struct config_ctx *cx, const char *text,
			  size_t keylen, int n, struct cnode *value)
{
	size_t end = keylen, start, cap;
	struct cnode *map, *key;

	while (end > 0) {
		for (start = end; start > 0 && text[start - 1] != '.'; start--)
			;
		cap = 0;
		key = cnode_new(cx->arena, CNODE_SCALAR, SET_FILE, n,
				(int)start + 1);
		map = cnode_new(cx->arena, CNODE_MAP, SET_FILE, n,
				(int)start + 1);
		if (!key || !map ||
		    !(key->text = arena_strndup(cx->arena, text + start,
						end - start)) ||
		    cnode_map_add(cx->arena, map, &cap, key, value) != 0) {
			diag_oom(cx->diag);
			return NULL;
		}
		value = map;
		end = start > 0 ? start - 1 : 0;
	}
	return value;
}

struct cnode *config_set_tree(struct config_ctx *cx, const char *text,
			      int n)
{
	const char *eq = strchr(text, '=');
	struct cnode *value;
	size_t keylen;

	if (!eq) {
		diag_error(cx->diag, SET_FILE, n, 1, "expected dotted.key="
			   "value, got '%s'", text);
		return NULL;
	}
	keylen = (size_t)(eq - text);
	if (check_key(cx->diag, text, keylen, n) != 0)
		return NULL;
	value = parse_value(cx, text, keylen, n);
	return value ? nest(cx, text, keylen, n, value) : NULL;
}
