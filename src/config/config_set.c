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
 * points at "nodez". The value is parsed where it sits, at line N after
 * the key and '=' (cnode_parse_yaml_at), so libyaml's own positions come
 * out in the same coordinates, and each option costs memory in
 * proportion to its own length (padding it with N-1 newlines made n
 * options cost n^2/2 bytes: 20,000 took 9.7 GB).
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

/* Where a setting's text sits: its first character is file:line:col. */
struct set_at {
	const char *file;
	int line, col;
};

/* Each dot-separated segment of text[0..len) is a non-empty key. */
static int check_key(struct diag *d, const char *text, size_t len,
		     const struct set_at *at)
{
	size_t i, start = 0;

	for (i = 0; i <= len; i++) {
		if (i < len && text[i] != '.') {
			if (!key_char(text[i])) {
				diag_error(d, at->file, at->line, at->col + (int)i,
					   "'%.*s': expected a key of letters, digits, "
					   "'_' and '-', got '%c'", (int)len,
					   text, text[i]);
				return -1;
			}
			continue;
		}
		if (i == start) {
			diag_error(d, at->file, at->line, at->col + (int)i,
				   "'%.*s': expected dotted.key=value, got an "
				   "empty key", (int)len, text);
			return -1;
		}
		start = i + 1;
	}
	return 0;
}

static struct cnode *parse_value(struct config_ctx *cx, const char *text,
				 size_t keylen, const struct set_at *at)
{
	const char *v = text + keylen + 1;
	size_t vlen = strlen(v);

	if (vlen == 0) {
		diag_error(cx->diag, at->file, at->line,
			   at->col + (int)keylen + 1, "'%.*s': expected a "
			   "value after '=', got nothing", (int)keylen, text);
		return NULL;
	}
	/* A one-line value sits at line n after the key and '='; one of
	 * several lines is placed on its own lines (line n + k would be
	 * another option). */
	if (memchr(v, '\n', vlen))
		return cnode_parse_yaml_at(cx->arena, v, vlen, at->file, 1, 1,
					   cx->diag);
	return cnode_parse_yaml_at(cx->arena, v, vlen, at->file, at->line,
				   at->col + (int)keylen + 1, cx->diag);
}

/* Wrap value in one mapping per key segment, innermost first. */
static struct cnode *nest(struct config_ctx *cx, const char *text,
			  size_t keylen, const struct set_at *at,
			  struct cnode *value)
{
	size_t end = keylen, start, cap;
	struct cnode *map, *key;

	while (end > 0) {
		for (start = end; start > 0 && text[start - 1] != '.'; start--)
			;
		cap = 0;
		key = cnode_new(cx->arena, CNODE_SCALAR, at->file, at->line,
				at->col + (int)start);
		map = cnode_new(cx->arena, CNODE_MAP, at->file, at->line,
				at->col + (int)start);
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

static struct cnode *set_tree(struct config_ctx *cx, const char *text,
			      const struct set_at *at)
{
	const char *eq = strchr(text, '=');
	struct cnode *value;
	size_t keylen;

	if (!eq) {
		diag_error(cx->diag, at->file, at->line, at->col, "expected "
			   "dotted.key=value, got '%s'", text);
		return NULL;
	}
	keylen = (size_t)(eq - text);
	if (check_key(cx->diag, text, keylen, at) != 0)
		return NULL;
	value = parse_value(cx, text, keylen, at);
	return value ? nest(cx, text, keylen, at, value) : NULL;
}

struct cnode *config_set_tree(struct config_ctx *cx, const char *text,
			      int n)
{
	struct set_at at = { SET_FILE, n, 1 };

	return set_tree(cx, text, &at);
}

struct cnode *config_set_tree_at(struct config_ctx *cx, const char *text,
				 const char *file, int line, int col)
{
	struct set_at at = { file, line, col };

	return set_tree(cx, text, &at);
}
